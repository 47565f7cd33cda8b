// The cases, each run for every SDK (ADAPTERS) in two modes: with
// retryFetch as the SDK's fetch (the test), and with plain globalThis.fetch
// (the control: the same SDK call, the same server script, and what plain
// fetch does with it — one request, the first answer — so a case that fails
// only with retryFetch is the library's doing, not the test's).
//
// A case calls t.na(reason) when the SDK cannot express it (or plain fetch
// has nothing to compare), and checks with t.check / t.eq; see suite.mjs.
import { sha256 } from './server.mjs';
import { makeBody } from './adapters.mjs';

const failure = (status = 503, headers) => ({
  status,
  headers,
  json: { error: { message: `flaky ${status}`, type: 'server_error' }, message: `flaky ${status}` },
});
const FAIL = failure(503);

/** A 64 KiB payload in 4 chunks, the same bytes on every run. */
const CHUNKS = Array.from({ length: 4 }, (_, k) => Uint8Array.from({ length: 16 * 1024 }, (_, i) => (i * 31 + k * 7 + (i >> 8)) & 255));
const PAYLOAD = Buffer.concat(CHUNKS.map((c) => Buffer.from(c)));
const PAYLOAD_SHA = sha256(PAYLOAD);

/** Header names that belong to the connection, not to the request. */
const CONNECTION = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'upgrade', 'proxy-connection', 'trailer']);

/** undici's multipart boundary differs per serialisation (SPEC §2b allows it). */
const unboundary = (s) => s.replace(/formdata-undici-0\d+/g, 'formdata-undici-0BOUNDARY');

function requestHeaders(rec, { multipart = false } = {}) {
  const out = {};
  for (const [k, v] of Object.entries(rec.headers)) {
    if (CONNECTION.has(k)) continue;
    if (multipart && k === 'content-length') continue; // boundaries may differ in length
    out[k] = multipart ? unboundary(v) : v;
  }
  return out;
}

const bodyHash = (rec, { multipart = false } = {}) =>
  multipart ? sha256(Buffer.from(unboundary(rec.body.toString('latin1')), 'latin1')) : rec.sha256;

/** Differences between two header objects, as text ('' when equal). */
function headerDiff(a, b) {
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return names
    .filter((n) => a[n] !== b[n])
    .map((n) => `${n}: ${JSON.stringify(a[n])} vs ${JSON.stringify(b[n])}`)
    .join('; ');
}

/** Attempts 1 and `n` carry the same headers (connection-level ones aside) and the same body. */
function sameAttempts(t, route, n, what, opts) {
  const reqs = route.requests;
  if (reqs.length < n) return;
  const d = headerDiff(requestHeaders(reqs[0], opts), requestHeaders(reqs[n - 1], opts));
  t.check(d === '', `${what}: headers of attempts 1 and ${n} differ: ${d}`);
  t.eq(bodyHash(reqs[n - 1], opts), bodyHash(reqs[0], opts), `${what}: body sha256 of attempt ${n} vs attempt 1`);
  t.eq(reqs[n - 1].method, reqs[0].method, `${what}: method of attempt ${n}`);
  t.eq(reqs[n - 1].path, reqs[0].path, `${what}: path of attempt ${n}`);
}

/** The caller aborts (`how`: 'wait' | 'request') or the SDK's timeout fires during a request. */
async function abortCase(t, how) {
  const sdk = t.sdk;
  const SLOW = 1000;
  const steps = how === 'wait' ? [FAIL] : [{ ...FAIL, delay: SLOW }, sdk.get.ok];
  const route = t.route(steps);
  // A long wait for the 'wait' case, so that the abort lands inside it.
  const fetch = t.fetch(how === 'wait' ? { baseWait: 1000 } : {});
  const timeout = how === 'timeout' ? 300 : undefined;
  const client = t.client(route, fetch, { timeout });
  const ac = new AbortController();
  const t0 = performance.now();
  const pending = t.settle(sdk.get.call(client, { signal: how === 'timeout' ? undefined : ac.signal, timeout: sdk.clientTimeout ? undefined : timeout }));
  let abortedAt;
  if (how === 'wait') {
    await t.waitFor(() => route.requests[0]?.answered != null, 3000, 'the first 503 to be answered');
    await t.sleep(100);
    abortedAt = performance.now();
    ac.abort();
  } else if (how === 'request') {
    await t.waitFor(() => route.requests[0]?.bodyEnd != null, 3000, 'the request to reach the server');
    await t.sleep(100);
    abortedAt = performance.now();
    ac.abort();
  } else {
    abortedAt = t0 + timeout;
  }
  const r = await pending;
  const settledAt = performance.now();
  t.note(`settled ${Math.round(settledAt - abortedAt)} ms after the ${how === 'timeout' ? 'timeout' : 'abort'}`);
  const kind = how === 'timeout' ? sdk.timeout.kind : 'abort';
  t.outcome(r, kind);
  if (how === 'timeout') {
    t.check(settledAt - t0 >= timeout - 20, `settled ${Math.round(settledAt - t0)} ms after the call, before its ${timeout} ms timeout`);
  }
  t.check(settledAt - abortedAt < 400, `settled ${Math.round(settledAt - abortedAt)} ms after the ${how === 'timeout' ? 'timeout' : 'abort'} (promptly: < 400 ms)`);
  if (how !== 'wait') {
    // The request in flight is cancelled on the wire, as fetch does.
    const inFlight = route.requests[0];
    await t.waitFor(() => inFlight?.closed != null, 500, 'the aborted request\'s connection to close').catch(() => {});
    t.check(
      inFlight?.closedEarly === true && inFlight.closed - abortedAt < 400,
      `the request in flight was not cancelled on the wire (server: ${inFlight?.closedEarly ? `closed ${Math.round(inFlight.closed - abortedAt)} ms after the abort` : inFlight?.answered ? 'answered it' : 'still open'})`,
    );
  }
  // Nothing is sent after the abort: watch past the moment a retry would have gone.
  const first = route.requests[0];
  const quietUntil = !first ? performance.now() + 400 : how === 'wait' ? first.answered + 1000 + 400 : first.arrived + SLOW + 400;
  await t.sleep(Math.max(0, quietUntil - performance.now()));
  t.requests(route, 1);
  t.check(t.calls.success === 0, `onSuccess ran ${t.calls.success} time(s) after an abort`);
}

/** A body of `kind` sent with an Idempotency-Key, meeting 503, 503, 200. */
async function bodyCase(t, kind) {
  const sdk = t.sdk;
  const upload = kind === 'formdata';
  if (upload && !sdk.upload) t.na('no multipart upload in this SDK');
  if (!upload && !sdk.raw?.kinds.includes(kind)) t.na('no way to send such a body');
  const replays = !t.plain && (upload || sdk.raw.replays(kind));
  const route = t.route([FAIL, FAIL, upload ? sdk.upload.ok : sdk.post.ok]);
  const client = t.client(route);
  const key = `key-${route.prefix.slice(1)}`;
  const o = { headers: { 'Idempotency-Key': key } };
  const r = await t.settle(upload ? sdk.upload.call(client, PAYLOAD, o) : sdk.raw.call(client, makeBody(kind, CHUNKS), o));
  const reqs = route.requests;
  const multipart = upload;
  for (const [i, rec] of reqs.entries()) {
    t.eq(rec.headers['idempotency-key'], key, `attempt ${i + 1}: Idempotency-Key`);
    if (upload) t.check(rec.body.includes(PAYLOAD), `attempt ${i + 1}: the file's bytes are not in the multipart body (${rec.length} bytes)`);
    else t.eq(rec.sha256, PAYLOAD_SHA, `attempt ${i + 1}: body sha256 (${rec.length} bytes of ${PAYLOAD.length})`);
  }
  if (upload) t.check(/^multipart\/form-data; boundary=/.test(reqs[0]?.headers['content-type'] ?? ''), `content-type ${reqs[0]?.headers['content-type']}`);
  if (replays) {
    t.outcome(r, 'ok');
    t.requests(route, 3);
    sameAttempts(t, route, 3, kind, { multipart });
    t.callbacks({ error: 2, success: 1, giveUp: [] });
  } else {
    // One-shot: one attempt, and the SDK sees the server's real answer.
    t.outcome(r, 'status', 503);
    t.requests(route, 1);
    t.callbacks({ error: 1, success: 0, giveUp: ['not-retryable'] });
  }
  t.note(`${reqs.length} request(s), ${reqs.map((q) => q.length).join('/')} bytes${upload ? '' : `, sha256 ${PAYLOAD_SHA.slice(0, 12)}`}; ${replays ? 'replayed' : 'one-shot'}`);
}

export const CASES = [
  {
    id: 'get',
    title: 'a GET-like call meets 503, 503, 200: it succeeds after 3 requests',
    async run(t) {
      const route = t.route([FAIL, FAIL, t.sdk.get.ok]);
      const r = await t.settle(t.sdk.get.call(t.client(route), {}));
      if (t.plain) {
        t.outcome(r, 'status', 503);
        t.requests(route, 1);
        return;
      }
      t.outcome(r, 'ok');
      t.check(t.sdk.get.check(r.value), `the SDK returned ${JSON.stringify(r.value)?.slice(0, 120)}`);
      t.requests(route, 3);
      t.eq(route.requests.map((q) => q.method).join(), 'GET,GET,GET', 'methods');
      t.callbacks({ error: 2, success: 1, giveUp: [] });
    },
  },
  {
    id: 'retry-after',
    title: 'Retry-After: 1 on a 503 (429 for anthropic, ky) sets the wait: the next attempt ≥ 1000 ms after the answer',
    async run(t) {
      const status = ['anthropic', 'ky'].includes(t.sdk.name) ? 429 : 503;
      const route = t.route([failure(status, { 'retry-after': '1' }), t.sdk.get.ok]);
      const r = await t.settle(t.sdk.get.call(t.client(route), {}));
      if (t.plain) {
        t.outcome(r, 'status', status);
        t.requests(route, 1);
        return;
      }
      t.outcome(r, 'ok');
      t.requests(route, 2);
      const [a, b] = route.requests;
      if (a && b) {
        const gap = b.arrived - a.answered;
        t.note(`${status} + Retry-After: 1, next attempt ${Math.round(gap)} ms later`);
        t.check(gap >= 990, `the next attempt came ${Math.round(gap)} ms after the ${status} (Retry-After: 1 → ≥ 1000 ms)`);
        t.check(gap < 2500, `the next attempt came ${Math.round(gap)} ms after the ${status} (expected about 1000 ms)`);
      }
    },
  },
  {
    id: 'ratelimit-reset',
    title: 'GitHub\'s X-RateLimit-Reset (a Unix time) on a 429 without Retry-After sets the wait',
    async run(t) {
      if (t.sdk.name !== 'octokit') t.na('a GitHub header');
      let dueAt; // when the reset falls, on performance.now()'s clock
      const route = t.route([
        {
          ...failure(429),
          headersAt: () => {
            const reset = Math.floor(Date.now() / 1000) + 2;
            dueAt = performance.now() + (reset * 1000 - Date.now());
            return { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) };
          },
        },
        t.sdk.get.ok,
      ]);
      const r = await t.settle(t.sdk.get.call(t.client(route), {}));
      if (t.plain) {
        t.outcome(r, 'status', 429);
        t.requests(route, 1);
        return;
      }
      t.outcome(r, 'ok');
      t.requests(route, 2);
      const [a, b] = route.requests;
      if (a && b) {
        t.note(`next attempt ${Math.round(b.arrived - a.answered)} ms after the 429, the reset ${Math.round(dueAt - a.answered)} ms after it`);
        t.check(b.arrived >= dueAt - 50, `the next attempt came ${Math.round(dueAt - b.arrived)} ms before X-RateLimit-Reset`);
        t.check(b.arrived - dueAt < 1500, `the next attempt came ${Math.round(b.arrived - dueAt)} ms after X-RateLimit-Reset`);
      }
    },
  },
  {
    id: 'exhausted',
    title: 'a GET-like call meets 503 three times: the SDK sees the last 503 (its body intact) after 3 requests',
    async run(t) {
      const route = t.route([FAIL]);
      const r = await t.settle(t.sdk.get.call(t.client(route), {}));
      t.outcome(r, 'status', 503);
      t.requests(route, t.plain ? 1 : 3);
      t.callbacks({ error: 3, success: 0, giveUp: ['attempts-exhausted'] });
    },
  },
  {
    id: 'network',
    title: 'a GET-like call meets two dropped connections, then 200: it succeeds after 3 requests',
    async run(t) {
      const route = t.route([{ drop: true }, { drop: true }, t.sdk.get.ok]);
      const r = await t.settle(t.sdk.get.call(t.client(route), {}));
      if (t.plain) {
        t.outcome(r, 'network');
        t.requests(route, 1);
        return;
      }
      t.outcome(r, 'ok');
      t.requests(route, 3);
      t.callbacks({ error: 2, success: 1, giveUp: [] });
    },
  },
  {
    id: 'post-no-key',
    title: 'a POST without Idempotency-Key meets a 503: one request, the SDK sees the 503',
    async run(t) {
      const route = t.route([FAIL, t.sdk.post.ok]);
      const r = await t.settle(t.sdk.post.call(t.client(route), { headers: t.sdk.noKey }));
      t.outcome(r, 'status', 503);
      t.requests(route, 1);
      t.eq(route.requests[0]?.method, 'POST', 'method');
      t.eq(route.requests[0]?.headers['idempotency-key'], undefined, 'Idempotency-Key header');
      if (!t.plain) t.callbacks({ error: 1, success: 0, giveUp: ['not-retryable'] });
    },
  },
  {
    id: 'post-key',
    title: 'the same POST with an Idempotency-Key meets 503, 503, 200: retried to success, the same key and body each time',
    async run(t) {
      const route = t.route([FAIL, FAIL, t.sdk.post.ok]);
      const key = `key-${route.prefix.slice(1)}`;
      const r = await t.settle(t.sdk.post.call(t.client(route), { headers: { 'Idempotency-Key': key } }));
      for (const [i, q] of route.requests.entries()) t.eq(q.headers['idempotency-key'], key, `attempt ${i + 1}: Idempotency-Key`);
      if (t.plain) {
        t.outcome(r, 'status', 503);
        t.requests(route, 1);
        return;
      }
      t.outcome(r, 'ok');
      t.check(t.sdk.post.check(r.value), `the SDK returned ${JSON.stringify(r.value)?.slice(0, 120)}`);
      t.requests(route, 3);
      sameAttempts(t, route, 3, 'POST');
      t.callbacks({ error: 2, success: 1, giveUp: [] });
    },
  },
  {
    id: 'sdk-key',
    title: 'a POST carrying an Idempotency-Key the SDK adds by itself, if it adds one, is retried with the same key',
    async run(t) {
      const route = t.route([FAIL, FAIL, t.sdk.post.ok]);
      const r = await t.settle(t.sdk.post.call(t.client(route), {}));
      const keys = route.requests.map((q) => q.headers['idempotency-key']);
      if (keys[0] === undefined) {
        // Then it is a POST without a key: one request, the SDK sees the 503.
        t.outcome(r, 'status', 503);
        t.requests(route, 1);
        if (!t.failures.length) t.na(`sends no Idempotency-Key of its own (${route.requests[0]?.method} ${route.requests[0]?.path})`);
        return;
      }
      t.note(`the SDK's own Idempotency-Key: ${keys[0]}`);
      t.check(keys.every((k) => k === keys[0]), `the key changed between attempts: ${keys.join(', ')}`);
      if (t.plain) {
        t.outcome(r, 'status', 503);
        t.requests(route, 1);
        return;
      }
      t.outcome(r, 'ok');
      t.requests(route, 3);
    },
  },
  {
    id: 'headers',
    title: 'identical headers (connection-level aside) and body on attempts 1 and 3, for a GET and a POST',
    async run(t) {
      if (t.plain) t.na('plain fetch makes one attempt');
      const get = t.route([FAIL, FAIL, t.sdk.get.ok]);
      t.outcome(await t.settle(t.sdk.get.call(t.client(get), {})), 'ok', undefined, 'GET');
      t.requests(get, 3, 'GET');
      sameAttempts(t, get, 3, 'GET');
      const post = t.route([FAIL, FAIL, t.sdk.post.ok]);
      t.outcome(await t.settle(t.sdk.post.call(t.client(post), { headers: { 'Idempotency-Key': 'same-key' } })), 'ok', undefined, 'POST');
      t.requests(post, 3, 'POST');
      sameAttempts(t, post, 3, 'POST');
      const names = (rec) => Object.keys(requestHeaders(rec)).sort().join(' ');
      if (get.requests[0]) t.note(`GET: ${names(get.requests[0])} | POST: ${post.requests[0] ? names(post.requests[0]) : '-'}`);
    },
  },
  {
    id: 'like-fetch',
    title: 'with nothing failing, the server sees the same requests through retryFetch as through plain fetch',
    async run(t) {
      if (t.plain) t.na('this is the comparison with plain fetch');
      for (const [what, op, o] of [
        ['GET', t.sdk.get, {}],
        ['POST', t.sdk.post, { headers: { 'Idempotency-Key': 'same-key' } }],
      ]) {
        const viaPlain = t.route([op.ok]);
        const viaRetry = t.route([op.ok]);
        const a = await t.settle(op.call(t.client(viaPlain, globalThis.fetch), o));
        const b = await t.settle(op.call(t.client(viaRetry), o));
        t.outcome(a, 'ok', undefined, `${what} via plain fetch`);
        t.outcome(b, 'ok', undefined, `${what} via retryFetch`);
        t.requests(viaRetry, 1, what);
        const [p, q] = [viaPlain.requests[0], viaRetry.requests[0]];
        if (!p || !q) continue;
        const d = headerDiff(requestHeaders(p), requestHeaders(q));
        t.check(d === '', `${what}: headers differ (plain fetch vs retryFetch): ${d}`);
        t.eq(q.sha256, p.sha256, `${what}: body sha256 (retryFetch vs plain fetch)`);
        t.eq(q.method, p.method, `${what}: method`);
        t.eq(q.path, p.path, `${what}: path`);
      }
    },
  },
  {
    id: 'abort-before',
    title: 'the SDK\'s abort signal is already aborted: the call rejects at once with the SDK\'s abort error, nothing is sent',
    async run(t) {
      const route = t.route([t.sdk.get.ok]);
      const client = t.client(route);
      const t0 = performance.now();
      const r = await t.settle(t.sdk.get.call(client, { signal: AbortSignal.abort() }));
      const ms = performance.now() - t0;
      t.outcome(r, 'abort');
      t.check(ms < 200, `settled ${Math.round(ms)} ms after the call (at once: < 200 ms)`);
      await t.sleep(100);
      t.requests(route, 0);
      t.check(t.calls.success === 0, `onSuccess ran ${t.calls.success} time(s)`);
    },
  },
  {
    id: 'abort-wait',
    title: 'the SDK\'s abort signal fires during the wait after a 503: the call rejects at once with the SDK\'s abort error, nothing more is sent',
    async run(t) {
      if (t.plain) t.na('plain fetch never waits');
      await abortCase(t, 'wait');
    },
  },
  {
    id: 'abort-request',
    title: 'the SDK\'s abort signal fires during a slow request: the call rejects at once with the SDK\'s abort error, the request is cancelled, nothing more is sent',
    async run(t) {
      await abortCase(t, 'request');
    },
  },
  {
    id: 'timeout',
    title: 'the SDK\'s own timeout (300 ms) fires during a slow request: the call rejects at once with the SDK\'s timeout error, the request is cancelled, nothing more is sent',
    async run(t) {
      if (!t.sdk.timeout) t.na('the SDK has no timeout option');
      await abortCase(t, 'timeout');
    },
  },
  {
    id: 'abort-body',
    title: 'a streamed answer (server-sent events) is being read when the SDK\'s abort signal fires: reading ends at once, the connection is cancelled',
    async run(t) {
      const sdk = t.sdk;
      if (!sdk.sse) t.na('no streamed answers in this SDK');
      const route = t.route([sdk.sse.ok]);
      const ac = new AbortController();
      const opened = await t.settle(sdk.sse.open(t.client(route), { signal: ac.signal }));
      t.outcome(opened, 'ok', undefined, 'opening the stream');
      if (opened.kind !== 'ok') return;
      const events = opened.value;
      for (let i = 0; i < 2; i++) {
        const e = await t.settle(events.next());
        t.outcome(e, 'ok', undefined, `event ${i + 1}`);
        t.check(e.kind !== 'ok' || e.value?.done === false, `event ${i + 1}: the stream ended early`);
      }
      const abortedAt = performance.now();
      ac.abort();
      const r = await t.settle(events.next());
      const settledAt = performance.now();
      t.note(`settled ${Math.round(settledAt - abortedAt)} ms after the abort`);
      if (sdk.sse.afterAbort === 'end') {
        t.outcome(r, 'ok', undefined, 'the next read');
        t.check(r.kind !== 'ok' || r.value?.done === true || r.value === undefined, `the next read gave ${JSON.stringify(r.value)}, not the end of the stream`);
      } else {
        t.outcome(r, 'abort', undefined, 'the next read');
      }
      t.check(settledAt - abortedAt < 400, `the next read settled ${Math.round(settledAt - abortedAt)} ms after the abort (promptly: < 400 ms)`);
      const first = route.requests[0];
      await t.waitFor(() => first?.closed != null, 500, 'the connection to close').catch(() => {});
      t.check(first?.closedEarly === true && first.closed - abortedAt < 400, `the streamed answer was not cancelled on the wire (server: ${first?.closed ? `closed ${Math.round(first.closed - abortedAt)} ms after the abort` : 'still open'})`);
      t.requests(route, 1);
    },
  },
  { id: 'formdata', title: 'a multipart upload (FormData with a File) meets 503, 503, 200', run: (t) => bodyCase(t, 'formdata') },
  { id: 'bytes', title: 'a Uint8Array body meets 503, 503, 200', run: (t) => bodyCase(t, 'bytes') },
  { id: 'stream', title: 'a ReadableStream body meets 503, 503, 200', run: (t) => bodyCase(t, 'stream') },
  { id: 'node-readable', title: 'a Node Readable body meets 503, 503, 200', run: (t) => bodyCase(t, 'node-readable') },
  { id: 'async-gen', title: 'an async generator body meets 503, 503, 200', run: (t) => bodyCase(t, 'async-gen') },
];
