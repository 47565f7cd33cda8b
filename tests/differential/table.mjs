// The differential table (SPEC §2b, "A drop-in fetch"): every row makes the
// same call through `globalThis.fetch` and through
// `retryFetch({ fetch: globalThis.fetch })`, against one local server, and
// the two must agree on what the server received (method, path + query,
// every header, body bytes; multipart compared field by field) and on what
// the caller saw (how the call returned; status, statusText, headers, body,
// `redirected`, `url`, `type`; or the rejection's constructor, name,
// message and cause, and for aborts the identity of the rejection value
// with the signal's reason), plus the timing class where §2b asks for one
// ("at once", "as fast as fetch does": under 50 ms on both sides).
//
// The only rows allowed to differ are the EXCEPTIONS (bottom of the table),
// each with its reason, where the difference is the point (a retry); even
// there every key not named must agree, and the difference must be exactly
// the one described.
//
// Run from a copy under .consumer/ (tests/differential/run.mjs does that),
// so `retry-wasm` is the packed package. Prints one line per row, the
// exceptions, and `differential: N rows, N passed, N failed, N exceptions`;
// exits 1 on any unexplained difference. Leaves nothing open: the process
// ends by itself.
//
//   node table.mjs [--only <substring>] [--verbose]
import { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import { Agent, Request as UndiciRequest, fetch as undiciFetch } from 'undici';
import { retryFetch } from 'retry-wasm/fetch';
import { callAndDescribe, describeError, describeHead, describeResponse, fastClass, runRow, sleep, FAST_MS } from './harness.mjs';
import { startServer, describeReceived, FIXED_BODY, STREAM_CHUNKS, STREAM_GAP_MS } from './server.mjs';

const argv = process.argv.slice(2);
const onlyAt = argv.indexOf('--only');
const only = onlyAt >= 0 ? argv[onlyAt + 1] : null;
const verbose = argv.includes('--verbose');

const enc = new TextEncoder();
const bytes = (s) => enc.encode(s);

// ---------------------------------------------------------------- bodies

/** A ReadableStream of the given strings as bytes; records cancel(reason). */
function streamOf(parts, made) {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < parts.length) c.enqueue(bytes(parts[i++]));
      else c.close();
    },
    cancel(reason) {
      if (made) made.cancel = { called: true, reason };
    },
  });
}

async function* generatorOf(parts) {
  for (const p of parts) {
    await null;
    yield bytes(p);
  }
}

const readableOf = (parts) => Readable.from(parts.map((p) => Buffer.from(p)));

function formData() {
  const fd = new FormData();
  fd.append('text', 'plain value é');
  fd.append('text', 'second value');
  fd.append('file', new File(['file content\r\nline 2'], 'notes.txt', { type: 'text/plain' }));
  fd.append('blob', new Blob([new Uint8Array([0, 1, 2, 255])], { type: 'application/octet-stream' }));
  return fd;
}

function bigBytes() {
  const b = new Uint8Array(1 << 20);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7 + 3) & 0xff;
  return b;
}

// ---------------------------------------------------------------- row helpers

/** A plain row: the call fetch(url(path), init) with init built fresh per side. */
const call = (path, init) => (ctx) => ({ args: init === undefined ? [ctx.url(path)] : [ctx.url(path), typeof init === 'function' ? init(ctx) : init] });

/** A row whose init carries a signal; `signals` names it for the identity check. */
function withSignal(path, initFn, abortFn) {
  return (ctx) => {
    const ac = new AbortController();
    abortFn?.(ac);
    return { ac, args: [ctx.url(path), { ...initFn?.(ctx), signal: ac.signal }], signals: { 'init.signal': ac.signal } };
  };
}

const fast = { timing: (o) => ({ settled: fastClass(o._ms) }) };

/** Input mistakes: fetch's own TypeError, at once, nothing sent. */
const mistake = (name, make) => ({ group: 'input mistake', name, make, ...fast });

/**
 * Calls f, waits until the server has the request (the `arrivals`-th one:
 * 2 to abort after a redirect was followed), aborts, describes the
 * rejection and how long after the abort it came.
 */
function abortDuringRequest(abort, { arrivals = 1 } = {}) {
  return async (f, made, ctx) => {
    const arrived = (async () => {
      for (let i = 0; i < arrivals; i++) await ctx.server.arrived();
    })();
    const t0 = performance.now();
    let settledAt = null;
    const p = f(...made.args);
    const settled = p.then(
      (res) => ({ response: describeHead(res), res }),
      (e) => ({ rejection: describeError(e, made) }),
    ).finally(() => (settledAt = performance.now()));
    const first = await Promise.race([arrived.then(() => 'arrived'), settled.then(() => 'settled'), sleep(3_000).then(() => 'timeout')]);
    if (first !== 'arrived') {
      const r = await Promise.race([settled, sleep(1)]);
      return { beforeAbort: first === 'timeout' ? 'the request never reached the server within 3 s' : 'settled before the request reached the server', early: r && { ...r, res: undefined } };
    }
    const abortAt = performance.now();
    abort(made);
    const out = await Promise.race([settled, sleep(3_000).then(() => ({ pending: 'still pending 3 s after the abort' }))]);
    if (out.res) out.res.body?.cancel().catch(() => {});
    delete out.res;
    const ms = settledAt === null ? Infinity : settledAt - abortAt;
    return { ...out, timing: { afterAbort: ms < FAST_MS ? `settled under ${FAST_MS} ms after the abort` : `settled ${FAST_MS} ms or more after the abort` }, _msAfterAbort: ms, _ms: performance.now() - t0 };
  };
}

/**
 * The response arrives, then the signal aborts while the body is being
 * read: the body must error at once, as fetch's does, and keep erroring.
 * mode 'text': res.text() after the abort; 'reader': two chunks read, the
 * abort, then two more reads. (Node 20's fetch itself rejects a text()
 * started after the abort with a fresh AbortError DOMException, "The
 * operation was aborted.", not the reason, while reads through a reader
 * reject with the reason itself; the rows hold retryFetch to exactly that.)
 */
function abortWhileReading(mode, abort) {
  return async (f, made) => {
    const t0 = performance.now();
    const res = await f(...made.args);
    const head = describeHead(res);
    const out = { head, _msToResponse: performance.now() - t0 };
    if (mode === 'text') {
      abort(made);
      const a = performance.now();
      try {
        const text = await res.text();
        out.text = { resolved: `${text.length} chars` };
      } catch (e) {
        out.text = { rejected: describeError(e, made) };
      }
      const ms = performance.now() - a;
      out._msAfterAbort = ms;
      out.timing = { bodySettled: ms < FAST_MS ? `under ${FAST_MS} ms after the abort` : `${FAST_MS} ms or more after the abort` };
      return out;
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let got = '';
    while (!got.includes('chunk 1\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      got += dec.decode(value, { stream: true });
    }
    out.beforeAbort = got;
    abort(made);
    const a = performance.now();
    const reads = [];
    for (let i = 0; i < 2; i++) {
      try {
        const { done, value } = await reader.read();
        reads.push({ done, value: value ? dec.decode(value) : undefined });
        if (done) break;
      } catch (e) {
        reads.push({ rejected: describeError(e, made) });
      }
    }
    const ms = performance.now() - a;
    out.readsAfterAbort = reads;
    out._msAfterAbort = ms;
    out.timing = { readsSettled: ms < FAST_MS ? `under ${FAST_MS} ms after the abort` : `${FAST_MS} ms or more after the abort` };
    reader.cancel().catch(() => {});
    return out;
  };
}

/**
 * The undici Agent class the probe uses: the npm package's (undici 6) where
 * Node's fetch speaks its handler API (Node 20 to 24: undici 6 and 7); on
 * Node 26 (undici 8) fetch hands a dispatcher undici 7's handler API, which
 * undici 6's Agent refuses ("invalid onError method", plain fetch's call
 * too), so there it is the class of the Agent Node's fetch itself installs
 * as its global dispatcher.
 */
async function fetchAgentClass() {
  if (Number(process.versions.undici?.split('.')[0]) < 8) return Agent;
  await fetch('data:,');
  const own = globalThis[Symbol.for('undici.globalDispatcher.2')];
  if (typeof own?.compose !== 'function') throw new Error(`no undici Agent for Node ${process.version}'s fetch (undici ${process.versions.undici})`);
  return own.constructor;
}
const ProbeAgent = await fetchAgentClass();

/** An undici Agent composed with an interceptor that counts dispatches and adds a header. */
function dispatcherProbe(made) {
  made.dispatches = 0;
  const agent = new ProbeAgent({ keepAliveTimeout: 1_000 }).compose((dispatch) => (opts, handler) => {
    made.dispatches++;
    const h = opts.headers;
    let headers;
    if (Array.isArray(h)) headers = [...h, 'x-via-dispatcher', 'interceptor'];
    else if (h && typeof h[Symbol.iterator] === 'function' && typeof h !== 'string') headers = [...h, ['x-via-dispatcher', 'interceptor']];
    else headers = { ...h, 'x-via-dispatcher': 'interceptor' };
    return dispatch({ ...opts, headers }, handler);
  });
  made.agent = agent;
  made.cleanup = () => agent.close();
  return agent;
}

/** A fetch that records the init each call got, then calls globalThis.fetch. */
const recordingFetch = (made) => {
  made.inits = [];
  return function fetch(input, init) {
    made.inits.push(init);
    return globalThis.fetch(input, init);
  };
};

// ---------------------------------------------------------------- the table

const ROWS = [
  // ---- the function itself
  {
    group: 'function',
    name: "retryFetch(o) is named 'fetch', length 1, like fetch",
    make: () => ({}),
    act: async (f) => ({ typeof: typeof f, name: f.name, length: f.length, nameDescriptor: Object.getOwnPropertyDescriptor(f, 'name') && { ...Object.getOwnPropertyDescriptor(f, 'name'), value: undefined } }),
  },
  {
    group: 'function',
    name: "retryFetch() with no options is named 'fetch', length 1",
    make: () => ({}),
    rfOptions: () => undefined,
    act: async (f) => ({ typeof: typeof f, name: f.name, length: f.length }),
  },
  {
    group: 'function',
    name: 'called as a method of another object (an SDK keeping it in a field)',
    make: (ctx) => ({ args: [ctx.url('/echo?as=method')] }),
    act: (f, made) => callAndDescribe((...a) => ({ fetch: f }).fetch(...a), made),
  },
  {
    group: 'function',
    name: 'called with an explicit undefined init',
    make: (ctx) => ({ args: [ctx.url('/echo'), undefined] }),
  },

  // ---- input forms
  { group: 'input', name: 'string URL', make: call('/echo?x=1&y=two') },
  { group: 'input', name: 'string URL with non-ASCII path, spaces and a fragment', make: call('/echo/ünï cödé?q=a b&r=ü#frag') },
  { group: 'input', name: 'URL object', make: (ctx) => ({ args: [new URL(ctx.url('/echo?from=url#hash'))] }) },
  { group: 'input', name: 'URL object with init', make: (ctx) => ({ args: [new URL(ctx.url('/echo')), { method: 'POST', body: 'via URL' }] }) },
  { group: 'input', name: 'Request (GET)', make: (ctx) => ({ args: [new Request(ctx.url('/echo?from=request'))] }) },
  { group: 'input', name: 'Request (POST with a string body and headers)', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'POST', body: 'request body', headers: { 'x-req': 'yes' } })] }) },
  { group: 'input', name: 'Request built from another Request', make: (ctx) => ({ args: [new Request(new Request(ctx.url('/echo'), { method: 'PUT', body: 'inner', headers: { 'x-inner': '1' } }))] }) },
  { group: 'input', name: 'Request with an empty init {}', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'POST', body: 'kept' }), {}] }) },
  { group: 'input', name: 'object with toString() returning the URL', make: (ctx) => ({ args: [{ toString: () => ctx.url('/echo?from=object') }] }) },
  { group: 'input', name: 'object with toString() and an init', make: (ctx) => ({ args: [{ toString: () => ctx.url('/echo') }, { method: 'PATCH', body: 'obj' }] }) },
  { group: 'input', name: 'data: URL (no server)', make: () => ({ args: ['data:text/plain;charset=utf-8,hello%20data'] }) },

  // ---- init overriding a Request's fields, as new Request(input, init)
  { group: 'init over Request', name: 'method', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'PUT', body: 'carried' }), { method: 'POST' }] }) },
  { group: 'init over Request', name: 'headers (replace the Request\u2019s, not merged)', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { headers: { 'x-a': 'from request', 'x-shared': 'request' } }), { headers: { 'x-b': 'from init', 'x-shared': 'init' } }] }) },
  { group: 'init over Request', name: 'body', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'POST', body: 'original' }), { body: 'replaced by init' }] }) },
  { group: 'init over Request', name: 'body (a stream in init over a string Request)', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'POST', body: 'original' }), { body: streamOf(['streamed ', 'instead']), duplex: 'half' }] }) },
  {
    group: 'init over Request',
    name: 'signal: a live init.signal over the Request\u2019s aborted one',
    make: (ctx) => {
      const dead = new AbortController();
      dead.abort(new Error('request signal'));
      const live = new AbortController();
      return { args: [new Request(ctx.url('/echo'), { signal: dead.signal }), { signal: live.signal }], signals: { 'request.signal': dead.signal } };
    },
  },
  {
    group: 'init over Request',
    name: 'signal: an aborted init.signal over the Request\u2019s live one',
    make: (ctx) => {
      const live = new AbortController();
      const dead = new AbortController();
      dead.abort(new Error('init signal'));
      return { args: [new Request(ctx.url('/echo'), { signal: live.signal }), { signal: dead.signal }], signals: { 'init.signal': dead.signal } };
    },
    ...fast,
  },
  { group: 'init over Request', name: "redirect: init 'follow' over the Request's 'manual'", make: (ctx) => ({ args: [new Request(ctx.url('/redirect?code=302&to=/echo%3Fr%3D1'), { redirect: 'manual' }), { redirect: 'follow' }] }) },
  { group: 'init over Request', name: "redirect: init 'manual' over the Request's default", make: (ctx) => ({ args: [new Request(ctx.url('/redirect?code=302&to=/echo')), { redirect: 'manual' }] }) },
  { group: 'init over Request', name: 'cache: init no-store over the Request (adds Pragma, Cache-Control)', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { headers: { 'x-a': '1' } }), { cache: 'no-store' }] }) },
  { group: 'init over Request', name: 'several fields at once (method, headers, body, redirect, mode)', make: (ctx) => ({ args: [new Request(ctx.url('/redirect?code=307&to=/echo'), { method: 'PUT', body: 'x', redirect: 'error' }), { method: 'POST', headers: [['x-many', '1']], body: new Blob(['many']), redirect: 'follow', mode: 'same-origin' }] }) },

  // ---- headers
  { group: 'headers', name: 'object with mixed-case names', make: call('/echo', { headers: { 'X-Mixed-Case': 'Value', authorization: 'Bearer token', accept: 'application/json' } }) },
  { group: 'headers', name: 'array of pairs with a repeated name', make: call('/echo', { headers: [['x-dup', 'a'], ['X-Dup', 'b'], ['x-other', 'c']] }) },
  { group: 'headers', name: 'Headers instance', make: call('/echo', () => ({ headers: new Headers({ 'x-from-headers': '1', 'content-language': 'en' }) })) },
  { group: 'headers', name: 'overriding user-agent, accept-encoding, accept-language', make: call('/echo', { headers: { 'user-agent': 'diff/1.0', 'accept-encoding': 'identity', 'accept-language': 'fr' } }) },
  { group: 'headers', name: 'cookie and content-type on a string body', make: call('/echo', { method: 'POST', headers: { cookie: 'a=1; b=2', 'content-type': 'application/json' }, body: '{"k":1}' }) },
  { group: 'headers', name: 'value with surrounding whitespace (trimmed by fetch)', make: call('/echo', { headers: { 'x-space': '  padded \t' } }) },
  { group: 'headers', name: 'Idempotency-Key on a POST', make: call('/echo', { method: 'POST', headers: { 'idempotency-key': 'k-1' }, body: 'once' }) },

  // ---- methods
  { group: 'method', name: 'HEAD', make: call('/echo', { method: 'HEAD' }) },
  { group: 'method', name: 'OPTIONS', make: call('/echo', { method: 'OPTIONS' }) },
  { group: 'method', name: 'DELETE with a body', make: call('/echo', { method: 'DELETE', body: 'gone' }) },
  { group: 'method', name: "'post' (normalised to POST)", make: call('/echo', { method: 'post', body: 'lower' }) },
  { group: 'method', name: "'patch' (not normalised, sent as is)", make: call('/echo', { method: 'patch', body: 'lower patch' }) },
  { group: 'method', name: 'extension method PROPFIND with a body', make: call('/echo', { method: 'PROPFIND', body: '<propfind/>' }) },

  // ---- body kinds (POST /echo)
  { group: 'body', name: 'none (POST without a body)', make: call('/echo', { method: 'POST' }) },
  { group: 'body', name: 'string', make: call('/echo', { method: 'POST', body: 'héllo wörld' }) },
  { group: 'body', name: 'empty string', make: call('/echo', { method: 'POST', body: '' }) },
  { group: 'body', name: 'ArrayBuffer', make: call('/echo', () => ({ method: 'POST', body: bytes('array buffer body').buffer })) },
  { group: 'body', name: 'Uint8Array (a view with an offset)', make: call('/echo', () => ({ method: 'POST', body: new Uint8Array(bytes('xxUINT8 VIEWyy').buffer, 2, 10) })) },
  { group: 'body', name: 'DataView (with an offset)', make: call('/echo', () => ({ method: 'POST', body: new DataView(bytes('--data view body--').buffer, 2, 14) })) },
  { group: 'body', name: 'Int16Array', make: call('/echo', () => ({ method: 'POST', body: new Int16Array([1, -2, 300, -32768]) })) },
  { group: 'body', name: '1 MiB Uint8Array', make: call('/echo', () => ({ method: 'POST', body: bigBytes() })) },
  { group: 'body', name: 'Blob with a type', make: call('/echo', () => ({ method: 'POST', body: new Blob(['blob ', bytes('body')], { type: 'application/x-blob' }) })) },
  { group: 'body', name: 'Blob without a type', make: call('/echo', () => ({ method: 'POST', body: new Blob(['untyped blob']) })) },
  { group: 'body', name: 'File', make: call('/echo', () => ({ method: 'PUT', body: new File(['file body'], 'a.txt', { type: 'text/plain' }) })) },
  { group: 'body', name: 'URLSearchParams', make: call('/echo', () => ({ method: 'POST', body: new URLSearchParams({ a: '1', b: 'two words', c: 'é&=' }) })) },
  { group: 'body', name: 'FormData (text, File, Blob fields)', make: call('/echo', () => ({ method: 'POST', body: formData() })) },
  { group: 'body', name: "ReadableStream with duplex: 'half'", make: call('/echo', () => ({ method: 'POST', body: streamOf(['stream ', 'of ', 'chunks']), duplex: 'half' })) },
  { group: 'body', name: 'async generator with duplex', make: call('/echo', () => ({ method: 'POST', body: generatorOf(['gen-', 'erated ', 'body']), duplex: 'half' })) },
  { group: 'body', name: 'Node Readable with duplex', make: call('/echo', () => ({ method: 'PUT', body: readableOf(['node ', 'readable']), duplex: 'half' })) },
  { group: 'body', name: 'Request input with a ReadableStream body', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'POST', body: streamOf(['request ', 'stream']), duplex: 'half' })] }) },
  { group: 'body', name: 'Request input with a FormData body', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'POST', body: formData() })] }) },
  { group: 'body', name: 'Request input with a URLSearchParams body and a content-type', make: (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'POST', body: new URLSearchParams('q=1'), headers: { 'content-type': 'text/x-custom' } })] }) },

  // ---- responses (nothing retryable)
  { group: 'response', name: '404 with a reason phrase', make: call('/status?code=404&text=Not%20Here') },
  { group: 'response', name: '418 with a custom reason phrase', make: call('/status?code=418&text=Short%20And%20Stout') },
  { group: 'response', name: '501 (not in statusCodes)', make: call('/status?code=501') },
  { group: 'response', name: '400 to a POST', make: call('/status?code=400', { method: 'POST', body: 'bad' }) },
  { group: 'response', name: 'two Set-Cookie fields, a repeated field', make: call('/cookies') },
  { group: 'response', name: 'gzip-encoded body', make: call('/gzip') },
  { group: 'response', name: '204 without a body', make: call('/empty') },
  { group: 'response', name: '1 MiB body', make: call('/big') },
  {
    group: 'response',
    name: 'streaming body (20 chunks over ~1 s): resolves at the head, body read to the end',
    make: (ctx) => ({ args: [ctx.url('/stream')] }),
    act: async (f, made) => {
      const t0 = performance.now();
      const res = await f(...made.args);
      const atHead = performance.now() - t0;
      const head = describeHead(res);
      const text = await res.text();
      const atEnd = performance.now() - t0;
      const span = STREAM_CHUNKS * STREAM_GAP_MS;
      return {
        head,
        text,
        timing: { resolved: atHead < span / 2 ? 'before half the body was sent' : 'late', bodyEnded: atEnd >= span * 0.8 ? 'after the last chunk' : 'too early' },
        _atHead: atHead,
        _atEnd: atEnd,
      };
    },
  },
  { group: 'response', name: 'slow head (300 ms)', make: call('/slow?ms=300') },

  // ---- redirects
  { group: 'redirect', name: '301 GET, followed', make: call('/redirect?code=301&to=/echo%3Fafter%3D301') },
  { group: 'redirect', name: '301 POST: followed as GET without the body', make: call('/redirect?code=301&to=/echo', { method: 'POST', body: 'dropped' }) },
  { group: 'redirect', name: '302 POST: followed as GET without the body', make: call('/redirect?code=302&to=/echo', { method: 'POST', body: 'dropped', headers: { 'content-type': 'text/x-dropped' } }) },
  { group: 'redirect', name: '303 PUT with a Blob: followed as GET', make: call('/redirect?code=303&to=/echo', () => ({ method: 'PUT', body: new Blob(['dropped']) })) },
  { group: 'redirect', name: '307 POST string: method and body kept', make: call('/redirect?code=307&to=/echo', { method: 'POST', body: 'kept through 307' }) },
  { group: 'redirect', name: '308 POST URLSearchParams: method and body kept', make: call('/redirect?code=308&to=/echo', () => ({ method: 'POST', body: new URLSearchParams('kept=308') })) },
  { group: 'redirect', name: '307 POST FormData: body kept', make: call('/redirect?code=307&to=/echo', () => ({ method: 'POST', body: formData() })) },
  { group: 'redirect', name: '307 POST ReadableStream: fetch cannot resend, rejects', make: call('/redirect?code=307&to=/echo', () => ({ method: 'POST', body: streamOf(['one ', 'shot']), duplex: 'half' })) },
  { group: 'redirect', name: '303 POST ReadableStream: followed as GET', make: call('/redirect?code=303&to=/echo', () => ({ method: 'POST', body: streamOf(['one ', 'shot']), duplex: 'half' })) },
  { group: 'redirect', name: 'chain 302 -> 307 -> /echo', make: call(`/redirect?code=302&to=${encodeURIComponent('/redirect?code=307&to=/echo%3Fchain%3D1')}`) },
  { group: 'redirect', name: "redirect: 'manual' on a 301", make: call('/redirect?code=301&to=/echo', { redirect: 'manual' }) },
  { group: 'redirect', name: "redirect: 'manual' on a 307 POST", make: call('/redirect?code=307&to=/echo', { method: 'POST', body: 'manual', redirect: 'manual' }) },
  { group: 'redirect', name: "redirect: 'error' without a redirect", make: call('/echo', { redirect: 'error' }) },
  {
    group: 'redirect',
    name: 'a Request with a (live) signal through a redirect',
    make: (ctx) => {
      const ac = new AbortController();
      return { ac, args: [new Request(ctx.url('/redirect?code=302&to=/echo%3Fsig%3D1'), { signal: ac.signal, headers: { 'x-through': 'redirect' } })], signals: { 'request.signal': ac.signal } };
    },
  },
  { group: 'redirect', name: "a Request with its own redirect: 'manual'", make: (ctx) => ({ args: [new Request(ctx.url('/redirect?code=308&to=/echo'), { redirect: 'manual' })] }) },

  // ---- signals
  { group: 'signal', name: 'init.signal already aborted (default reason)', make: withSignal('/echo', null, (ac) => ac.abort()), ...fast },
  { group: 'signal', name: 'init.signal already aborted with a string reason', make: withSignal('/echo', null, (ac) => ac.abort('stopped by caller')), ...fast },
  { group: 'signal', name: 'init.signal already aborted with an Error reason', make: withSignal('/echo', null, (ac) => ac.abort(new RangeError('custom reason'))), ...fast },
  {
    group: 'signal',
    name: 'init.signal = AbortSignal.abort() (static, already aborted)',
    make: (ctx) => {
      const s = AbortSignal.abort();
      return { args: [ctx.url('/echo'), { signal: s }], signals: { 'init.signal': s } };
    },
    ...fast,
  },
  {
    group: 'signal',
    name: 'init.signal = AbortSignal.timeout(1) after it fired (TimeoutError)',
    make: async (ctx) => {
      const s = AbortSignal.timeout(1);
      await sleep(15);
      return { args: [ctx.url('/echo'), { signal: s }], signals: { 'init.signal': s } };
    },
    ...fast,
  },
  {
    group: 'signal',
    name: 'the Request\u2019s own signal already aborted (no init)',
    make: (ctx) => {
      const ac = new AbortController();
      ac.abort(new Error('request aborted'));
      return { args: [new Request(ctx.url('/echo'), { signal: ac.signal })], signals: { 'request.signal': ac.signal } };
    },
    ...fast,
  },
  {
    group: 'signal',
    name: 'the Request\u2019s own signal already aborted, init without a signal',
    make: (ctx) => {
      const ac = new AbortController();
      ac.abort();
      return { args: [new Request(ctx.url('/echo'), { signal: ac.signal }), { headers: { 'x-init': '1' } }], signals: { 'request.signal': ac.signal } };
    },
    ...fast,
  },
  {
    group: 'signal',
    name: 'init.signal: undefined over a Request\u2019s aborted signal (still aborted)',
    make: (ctx) => {
      const ac = new AbortController();
      ac.abort('request reason');
      return { args: [new Request(ctx.url('/echo'), { signal: ac.signal }), { signal: undefined }], signals: { 'request.signal': ac.signal } };
    },
    ...fast,
  },
  {
    group: 'signal',
    name: 'init.signal: null over a Request\u2019s aborted signal (no signal: sent)',
    make: (ctx) => {
      const ac = new AbortController();
      ac.abort('request reason');
      return { args: [new Request(ctx.url('/echo?null=1'), { signal: ac.signal }), { signal: null }], signals: { 'request.signal': ac.signal } };
    },
  },
  { group: 'signal', name: 'init.signal: {} (not an AbortSignal) -> TypeError', make: call('/echo', { signal: {} }), ...fast },
  { group: 'signal', name: "init.signal: '' (not an AbortSignal) -> TypeError", make: call('/echo', { signal: '' }), ...fast },
  { group: 'signal', name: 'init.signal: an EventTarget (not an AbortSignal) -> TypeError', make: call('/echo', () => ({ signal: new EventTarget() })), ...fast },
  {
    group: 'signal',
    name: 'aborted during the request (slow route), Error reason',
    make: withSignal('/slow?ms=2000'),
    act: abortDuringRequest((made) => made.ac.abort(new Error('caller gave up'))),
    quiet: 400,
  },
  {
    group: 'signal',
    name: 'aborted during the request (slow route), default reason',
    make: withSignal('/slow?ms=2000'),
    act: abortDuringRequest((made) => made.ac.abort()),
    quiet: 400,
  },
  {
    group: 'signal',
    name: 'the Request\u2019s own signal aborted during the request',
    make: (ctx) => {
      const ac = new AbortController();
      return { ac, args: [new Request(ctx.url('/slow?ms=2000'), { signal: ac.signal })], signals: { 'request.signal': ac.signal } };
    },
    act: abortDuringRequest((made) => made.ac.abort('request signal fired')),
    quiet: 400,
  },
  {
    group: 'signal',
    name: 'aborted during a streamed upload (slow route, stream body)',
    make: withSignal('/slow?ms=2000', () => ({ method: 'POST', body: streamOf(['up', 'load']), duplex: 'half' })),
    act: abortDuringRequest((made) => made.ac.abort(new Error('upload aborted'))),
    quiet: 400,
  },
  {
    group: 'signal',
    name: 'aborted after the response, while the body is read: text() rejects at once as fetch\u2019s does (default reason)',
    make: withSignal('/stream'),
    act: abortWhileReading('text', (made) => made.ac.abort()),
    quiet: 400,
  },
  {
    group: 'signal',
    name: 'aborted after the response, while the body is read: text() rejects at once as fetch\u2019s does (Error reason)',
    make: withSignal('/stream'),
    act: abortWhileReading('text', (made) => made.ac.abort(new Error('stop reading'))),
    quiet: 400,
  },
  {
    group: 'signal',
    name: 'aborted mid-body with a reader: later reads reject with the reason',
    make: withSignal('/stream'),
    act: abortWhileReading('reader', (made) => made.ac.abort('mid-body')),
    quiet: 400,
  },
  {
    group: 'signal',
    name: 'the Request\u2019s own signal aborted while the body is read',
    make: (ctx) => {
      const ac = new AbortController();
      return { ac, args: [new Request(ctx.url('/stream'), { signal: ac.signal })], signals: { 'request.signal': ac.signal } };
    },
    act: abortWhileReading('text', (made) => made.ac.abort(new Error('request signal mid-body'))),
    quiet: 400,
  },
  {
    group: 'signal',
    name: 'aborted after the body was read to the end: nothing changes',
    make: withSignal('/echo'),
    act: async (f, made) => {
      const res = await f(...made.args);
      const out = await describeResponse(res, made);
      made.ac.abort(new Error('too late'));
      await sleep(5);
      return { response: out, bodyUsedAfter: res.bodyUsed };
    },
  },
  {
    group: 'signal',
    name: 'already-aborted signal with a ReadableStream body: rejects, the stream is cancelled',
    make: (ctx) => {
      const ac = new AbortController();
      const reason = new Error('aborted before sending');
      ac.abort(reason);
      const made = { ac, signals: { 'init.signal': ac.signal } };
      made.args = [ctx.url('/echo'), { method: 'POST', body: streamOf(['never ', 'sent'], made), duplex: 'half', signal: ac.signal }];
      return made;
    },
    extraDelay: 20,
    extra: (made) => ({ cancelCalled: made.cancel?.called ?? false, cancelReason: made.cancel ? describeError(made.cancel.reason, made) : null }),
    ...fast,
  },
  {
    group: 'signal',
    name: 'live signal, request completes: nothing aborted',
    make: withSignal('/echo?live=1', () => ({ method: 'POST', body: 'with a live signal' })),
  },

  // ---- input mistakes: fetch's own TypeError, at once, nothing sent
  mistake('invalid URL', () => ({ args: ['not a url'] })),
  mistake('relative URL (no base in Node)', () => ({ args: ['/echo'] })),
  mistake('no arguments', () => ({ args: [] })),
  mistake('undefined input', () => ({ args: [undefined] })),
  mistake('object without a string form', (ctx) => ({ args: [{ href: ctx.url('/echo') }] })),
  mistake('URL with credentials', (ctx) => ({ args: [ctx.url('/echo').replace('http://', 'http://user:pw@')] })),
  mistake("bad method 'BAD METHOD'", (ctx) => ({ args: [ctx.url('/echo'), { method: 'BAD METHOD' }] })),
  mistake("forbidden method 'TRACE'", (ctx) => ({ args: [ctx.url('/echo'), { method: 'TRACE' }] })),
  mistake("forbidden header value 'a\\nb'", (ctx) => ({ args: [ctx.url('/echo'), { headers: { 'x-bad': 'a\nb' } }] })),
  mistake('invalid header name', (ctx) => ({ args: [ctx.url('/echo'), { headers: [['bad name', 'v']] }] })),
  mistake('a Request whose body was already read', async (ctx) => {
    const req = new Request(ctx.url('/echo'), { method: 'POST', body: 'read already' });
    await req.text();
    return { args: [req] };
  }),
  mistake('a Request whose body stream is locked', (ctx) => {
    const req = new Request(ctx.url('/echo'), { method: 'POST', body: 'locked' });
    req.body.getReader();
    return { args: [req] };
  }),
  mistake('ReadableStream body without duplex', (ctx) => ({ args: [ctx.url('/echo'), { method: 'POST', body: streamOf(['no duplex']) }] })),
  mistake('async generator body without duplex', (ctx) => ({ args: [ctx.url('/echo'), { method: 'POST', body: generatorOf(['no duplex']) }] })),
  mistake('GET with a body', (ctx) => ({ args: [ctx.url('/echo'), { body: 'get body' }] })),
  mistake('HEAD with a body', (ctx) => ({ args: [ctx.url('/echo'), { method: 'HEAD', body: 'head body' }] })),
  mistake('a POST Request with init method GET (body left over)', (ctx) => ({ args: [new Request(ctx.url('/echo'), { method: 'POST', body: 'x' }), { method: 'GET' }] })),
  mistake("mode: 'navigate'", (ctx) => ({ args: [ctx.url('/echo'), { mode: 'navigate' }] })),
  mistake("cache: 'only-if-cached' outside same-origin mode", (ctx) => ({ args: [ctx.url('/echo'), { cache: 'only-if-cached' }] })),
  mistake("referrerPolicy: 'bogus'", (ctx) => ({ args: [ctx.url('/echo'), { referrerPolicy: 'bogus' }] })),
  mistake("duplex: 'full'", (ctx) => ({ args: [ctx.url('/echo'), { method: 'POST', body: streamOf(['x']), duplex: 'full' }] })),
  mistake('window: {} (not null)', (ctx) => ({ args: [ctx.url('/echo'), { window: {} }] })),

  // ---- undici's dispatcher
  {
    group: 'dispatcher',
    name: "an undici Agent with an interceptor (adds x-via-dispatcher, counts dispatches)",
    make: (ctx) => {
      const made = {};
      made.args = [ctx.url('/echo?dispatcher=1'), { dispatcher: dispatcherProbe(made) }];
      return made;
    },
    extra: (made) => ({ dispatches: made.dispatches }),
  },
  {
    group: 'dispatcher',
    name: 'dispatcher with a POST body and a redirect',
    make: (ctx) => {
      const made = {};
      made.args = [ctx.url('/redirect?code=307&to=/echo'), { method: 'POST', body: 'via dispatcher', dispatcher: dispatcherProbe(made) }];
      return made;
    },
    extra: (made) => ({ dispatches: made.dispatches }),
  },

  // ---- other init fields, passed through
  { group: 'init field', name: 'keepalive: true', make: call('/echo', { method: 'POST', body: 'keepalive', keepalive: true }) },
  { group: 'init field', name: "priority: 'high'", make: call('/echo', { priority: 'high' }) },
  { group: 'init field', name: "cache: 'no-store' (Pragma, Cache-Control added)", make: call('/echo', { cache: 'no-store' }) },
  { group: 'init field', name: "cache: 'no-cache' (Cache-Control: max-age=0 added)", make: call('/echo', { cache: 'no-cache' }) },
  { group: 'init field', name: "cache: 'reload'", make: call('/echo', { cache: 'reload' }) },
  { group: 'init field', name: "credentials: 'omit'", make: call('/echo', { credentials: 'omit' }) },
  { group: 'init field', name: "credentials: 'include'", make: call('/echo', { credentials: 'include' }) },
  { group: 'init field', name: "mode: 'no-cors' (Sec-Fetch-Mode follows)", make: call('/echo', { mode: 'no-cors' }) },
  { group: 'init field', name: "mode: 'same-origin'", make: call('/echo', { mode: 'same-origin' }) },
  { group: 'init field', name: 'referrer (a Referer is sent)', make: call('/echo', (ctx) => ({ referrer: ctx.url('/from-here') })) },
  { group: 'init field', name: "referrerPolicy: 'no-referrer' with a referrer", make: call('/echo', (ctx) => ({ referrer: ctx.url('/from-here'), referrerPolicy: 'no-referrer' })) },
  { group: 'init field', name: "referrerPolicy: 'origin' with a referrer", make: call('/echo', (ctx) => ({ referrer: ctx.url('/from-here?q=1'), referrerPolicy: 'origin' })) },
  { group: 'init field', name: 'integrity matching the body', make: call('/fixed', { integrity: `sha256-${createHash('sha256').update(FIXED_BODY).digest('base64')}` }) },
  {
    group: 'init field',
    name: 'unknown field next: { revalidate: 1 } reaches the wrapped fetch untouched',
    make: (ctx) => {
      const next = { revalidate: 1 };
      return { next, args: [ctx.url('/echo'), { next }] };
    },
    fetchOf: recordingFetch,
    extra: (made) => ({ wrappedCalls: made.inits.length, nextUntouched: made.inits.map((i) => i?.next === made.next) }),
  },
  {
    group: 'init field',
    name: 'unknown field cf: {...} with a POST body reaches the wrapped fetch untouched',
    make: (ctx) => {
      const cf = { cacheTtl: 5, cacheEverything: true };
      return { cf, args: [ctx.url('/echo'), { method: 'POST', body: 'cf', cf }] };
    },
    fetchOf: recordingFetch,
    extra: (made) => ({ wrappedCalls: made.inits.length, cfUntouched: made.inits.map((i) => i?.cf === made.cf) }),
  },
  {
    group: 'init field',
    name: 'every field at once',
    make: (ctx) => ({
      args: [
        ctx.url('/echo'),
        { method: 'PUT', body: 'all', headers: { 'x-all': '1' }, keepalive: true, priority: 'low', cache: 'no-cache', credentials: 'same-origin', mode: 'cors', redirect: 'follow', referrer: '', referrerPolicy: 'no-referrer', integrity: '', next: { tags: ['a'] } },
      ],
    }),
  },

  // ---- a retryable status where §2b forbids another attempt: fetch's outcome exactly
  { group: 'not retried', name: '503 to a POST without Idempotency-Key', make: call('/flaky', { method: 'POST', body: 'not idempotent' }) },
  { group: 'not retried', name: '503 to a PUT with a ReadableStream body (one-shot)', make: call('/flaky', () => ({ method: 'PUT', body: streamOf(['one', '-shot']), duplex: 'half' })) },
  { group: 'not retried', name: '503 to a PUT with a Node Readable body (one-shot)', make: call('/flaky', () => ({ method: 'PUT', body: readableOf(['one', '-shot']), duplex: 'half' })) },
  { group: 'not retried', name: '503 to a PUT with an async generator body (one-shot)', make: call('/flaky', () => ({ method: 'PUT', body: generatorOf(['one', '-shot']), duplex: 'half' })) },

  // ---- a Request of another class: undici's npm Request, with undici's npm fetch
  {
    group: 'another Request class',
    name: "undici's Request: GET with headers",
    make: (ctx) => ({ args: [new UndiciRequest(ctx.url('/echo?undici=1'), { headers: { 'x-token': 'abc', accept: 'application/json' } })] }),
    fetchOf: () => undiciFetch,
  },
  {
    group: 'another Request class',
    name: "undici's Request: PUT with a text body and headers",
    make: (ctx) => ({ args: [new UndiciRequest(ctx.url('/echo?undici=put'), { method: 'PUT', body: 'undici body', headers: { 'content-type': 'text/plain', 'x-token': 'put' } })] }),
    fetchOf: () => undiciFetch,
  },
  {
    group: 'another Request class',
    name: "undici's Request, init overriding its method and headers",
    make: (ctx) => ({ args: [new UndiciRequest(ctx.url('/echo?undici=init')), { method: 'DELETE', headers: { 'x-over': '1' } }] }),
    fetchOf: () => undiciFetch,
  },
  {
    group: 'another Request class',
    name: "undici's Request, its signal aborted before the call",
    make: (ctx) => {
      const ac = new AbortController();
      ac.abort(new Error('aborted before'));
      return { args: [new UndiciRequest(ctx.url('/echo'), { signal: ac.signal })], signals: { 'request.signal': ac.signal } };
    },
    fetchOf: () => undiciFetch,
    ...fast,
  },
  {
    group: 'another Request class',
    name: "undici's Request, its signal aborted during the request",
    make: (ctx) => {
      const ac = new AbortController();
      return { ac, args: [new UndiciRequest(ctx.url('/slow?ms=2000'), { signal: ac.signal })], signals: { 'request.signal': ac.signal } };
    },
    fetchOf: () => undiciFetch,
    act: abortDuringRequest((made) => made.ac.abort(new Error('undici request aborted'))),
    quiet: 400,
  },
  {
    group: 'another Request class',
    name: "undici's Request, its signal aborted after a redirect was followed",
    make: (ctx) => {
      const ac = new AbortController();
      return { ac, args: [new UndiciRequest(ctx.url('/redirect?code=302&to=/slow?ms=2000'), { signal: ac.signal })], signals: { 'request.signal': ac.signal } };
    },
    fetchOf: () => undiciFetch,
    act: abortDuringRequest((made) => made.ac.abort(new Error('aborted across the redirect')), { arrivals: 2 }),
    quiet: 400,
  },
  {
    group: 'another Request class',
    name: "undici's Request, its signal aborted while the body is read",
    make: (ctx) => {
      const ac = new AbortController();
      return { ac, args: [new UndiciRequest(ctx.url('/stream'), { signal: ac.signal })], signals: { 'request.signal': ac.signal } };
    },
    fetchOf: () => undiciFetch,
    act: abortWhileReading('reader', (made) => made.ac.abort('undici mid-body')),
    quiet: 400,
  },

  // ---- EXCEPTIONS: the difference is the point
  {
    group: 'exception',
    name: '503 then 200 (GET)',
    make: call('/flaky?e=1'),
    exception: {
      reason: 'a retryable status (503) with nothing failing on the request: fetch returns the 503; retryFetch sends the same request again and returns the 200 (§2b statusCodes)',
      differs: ['outcome.response', 'received'],
      check: (a, b) => retriedCheck(a, b, { fetchStatus: 503, finalStatus: 200, attempts: 2 }),
    },
  },
  {
    group: 'exception',
    name: '503 then 200 (PUT Blob body, through a dispatcher: every attempt passes it)',
    make: (ctx) => {
      const made = {};
      made.args = [ctx.url('/flaky?e=2'), { method: 'PUT', body: new Blob(['same bytes each attempt']), dispatcher: dispatcherProbe(made) }];
      return made;
    },
    extra: (made) => ({ dispatches: made.dispatches }),
    exception: {
      reason: 'as above, with a replayable body and an undici dispatcher: the second attempt carries the same bytes and goes through the same dispatcher (2 dispatches to 1)',
      differs: ['outcome.response', 'received', 'outcome.extra.dispatches'],
      check: (a, b) => [...retriedCheck(a, b, { fetchStatus: 503, finalStatus: 200, attempts: 2 }), ...(a.outcome.extra?.dispatches === 1 && b.outcome.extra?.dispatches === 2 ? [] : [`dispatches: fetch ${a.outcome.extra?.dispatches}, retryFetch ${b.outcome.extra?.dispatches} (want 1 and 2)`])],
    },
  },
  {
    group: 'exception',
    name: "503 then 200 (undici's Request, PUT with a text body, through undici's fetch)",
    make: (ctx) => ({ args: [new UndiciRequest(ctx.url('/flaky?e=3'), { method: 'PUT', body: 'same bytes', headers: { 'x-token': 'undici' } })] }),
    fetchOf: () => undiciFetch,
    exception: {
      reason: "as the first: undici's own Request is recognised as a Request, so its method, headers and body go again, cloned, through undici's fetch",
      differs: ['outcome.response', 'received'],
      check: (a, b) => retriedCheck(a, b, { fetchStatus: 503, finalStatus: 200, attempts: 2 }),
    },
  },
  {
    group: 'exception',
    name: "redirect: 'error' meeting a redirect",
    make: call('/redirect?code=302&to=/echo', { redirect: 'error' }),
    exception: {
      reason: "fetch rejects with its network TypeError ('fetch failed', cause 'unexpected redirect') after sending the request; §2b counts a network TypeError as a failed attempt, so retryFetch sends it maxAttempts (3) times and then rejects with the same TypeError",
      differs: ['received'],
      check: (a, b) => retriedCheck(a, b, { attempts: 3 }),
    },
  },
  {
    group: 'exception',
    name: 'integrity metadata that does not match the body',
    make: call('/fixed', { integrity: 'sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' }),
    exception: {
      reason: "fetch rejects with its network TypeError ('fetch failed', cause 'integrity mismatch') after the response; §2b counts a network TypeError as a failed attempt, so retryFetch sends the request 3 times, then rejects with the same TypeError",
      differs: ['received'],
      check: (a, b) => retriedCheck(a, b, { attempts: 3 }),
    },
  },
];

/**
 * An exception row's expected difference: fetch sent one request, retryFetch
 * sent `attempts` requests each identical to fetch's, and (when given) fetch
 * got `fetchStatus` while retryFetch got `finalStatus`, the response heads
 * otherwise alike.
 */
function retriedCheck(a, b, { fetchStatus, finalStatus, attempts }) {
  const problems = [];
  const same = (x, y) => JSON.stringify(x) === JSON.stringify(y);
  if (a.received.length !== 1) problems.push(`fetch side: ${a.received.length} requests, want 1`);
  if (b.received.length !== attempts) problems.push(`retryFetch side: ${b.received.length} requests, want ${attempts}`);
  for (const [i, r] of b.received.entries()) if (a.received[0] && !same(r, a.received[0])) problems.push(`retryFetch request ${i + 1} differs from fetch's request: ${JSON.stringify(r)}`);
  if (fetchStatus !== undefined) {
    if (a.outcome.response?.status !== fetchStatus) problems.push(`fetch side status ${a.outcome.response?.status}, want ${fetchStatus}`);
    if (b.outcome.response?.status !== finalStatus) problems.push(`retryFetch side status ${b.outcome.response?.status}, want ${finalStatus}`);
    const strip = (r) => r && { ...r, status: 0, statusText: '', ok: 0, headers: r.headers?.filter(([k]) => k !== 'content-length'), bodyContent: '' };
    if (!same(strip(a.outcome.response), strip(b.outcome.response))) problems.push('the two responses differ beyond status, statusText, ok, content-length and body');
  }
  return problems;
}

// ---------------------------------------------------------------- controls
//
// The harness must not be blind: deliberately wrong wrappers of fetch, put
// where retryFetch goes, must make each of the named rows differ. A control
// that is not caught fails the stage (the comparison has gone vacuous).

const CONTROLS = [
  {
    mutant: 'adds a request header',
    wrap: (fetch) => (input, init) => fetch(input, { ...init, headers: { ...init?.headers, 'x-extra': '1' } }),
    rows: ['input: string URL', 'body: string'],
  },
  {
    mutant: 'ignores the caller\u2019s signal',
    wrap: (fetch) => (input, init) => fetch(input, { ...init, signal: undefined }),
    rows: ['signal: init.signal already aborted (default reason)', 'signal: aborted during the request (slow route), Error reason', 'signal: aborted after the response, while the body is read: text() rejects at once as fetch\u2019s does (default reason)'],
  },
  {
    mutant: 'hands back a buffered copy of the response',
    wrap: (fetch) => async (input, init) => {
      const res = await fetch(input, init);
      return new Response(await res.arrayBuffer(), res);
    },
    rows: ['response: streaming body (20 chunks over ~1 s): resolves at the head, body read to the end', 'redirect: 301 GET, followed'],
  },
  {
    mutant: 'rejects an input mistake only after 100 ms',
    wrap: (fetch) => async (input, init) => {
      try {
        return await fetch(input, init);
      } catch (e) {
        await sleep(100);
        throw e;
      }
    },
    rows: ['input mistake: invalid URL'],
  },
  {
    mutant: 'wraps the rejection in a new TypeError',
    wrap: (fetch) => (input, init) =>
      fetch(input, init).catch((e) => {
        throw new TypeError(e?.message);
      }),
    rows: ['input mistake: invalid URL', 'signal: init.signal already aborted with an Error reason'],
  },
  {
    mutant: 'drops the init fields it does not know',
    wrap: (fetch) => (input, init) => {
      const { dispatcher, next, cf, ...rest } = init ?? {};
      return fetch(input, rest);
    },
    rows: ['dispatcher: an undici Agent with an interceptor (adds x-via-dispatcher, counts dispatches)', 'init field: unknown field next: { revalidate: 1 } reaches the wrapped fetch untouched'],
  },
  {
    mutant: 'reads a stream body into a string first',
    wrap: (fetch) => async (input, init) => (init?.body instanceof ReadableStream ? fetch(input, { ...init, body: await new Response(init.body).text() }) : fetch(input, init)),
    rows: ["body: ReadableStream with duplex: 'half'"],
  },
  {
    mutant: 'is a bound fetch',
    wrap: (fetch) => fetch.bind(null),
    rows: ["function: retryFetch(o) is named 'fetch', length 1, like fetch"],
  },
  {
    mutant: 'builds a Request from input and init (losing init-only fields)',
    wrap: (fetch) => (input, init) => fetch(new Request(input, init)),
    rows: ['init field: unknown field cf: {...} with a POST body reaches the wrapped fetch untouched', 'init field: unknown field next: { revalidate: 1 } reaches the wrapped fetch untouched'],
  },
];

// ---------------------------------------------------------------- run

function show(v) {
  return JSON.stringify(v, (k, x) => (typeof x === 'string' && x.length > 300 ? `${x.slice(0, 300)}…` : x));
}

async function main() {
  const server = await startServer();
  const sharedRf = retryFetch({ fetch: globalThis.fetch });
  // Warm up both sides (the first call of each compiles code paths), not recorded.
  for (const f of [globalThis.fetch, sharedRf]) await (await f(server.url('/echo?warm=1'))).text();
  await sleep(20);
  server.log.splice(0);

  const rows = ROWS.filter((r) => !only || `${r.group}: ${r.name}`.includes(only));
  const results = [];
  const t0 = performance.now();
  for (const row of rows) {
    let r = await runRow(row, { server, retryFetch, sharedRf });
    // A difference in timing class alone is run again (up to twice) before
    // it counts: a busy machine can stall either side once; a library that
    // is slow where fetch is fast is slow every time.
    for (let again = 0; r.timingOnly && again < 2; again++) {
      console.log(`      (timing class differed: ${r.differences.map((d) => `${d.path} ${show(d.fetch)} / ${show(d.retryFetch)}`).join('; ')}; running the row again)`);
      r = await runRow(row, { server, retryFetch, sharedRf });
    }
    results.push(r);
    const tag = { pass: 'PASS', fail: 'FAIL', exception: 'EXCP' }[r.verdict];
    const ms = (x) => (typeof x?.outcome?._ms === 'number' ? `${x.outcome._ms.toFixed(0)}` : '-');
    console.log(`${tag}  ${`${row.group}: ${row.name}`.padEnd(100)} ${ms(r.sides.fetch).padStart(5)}/${ms(r.sides.retryFetch).padStart(5)} ms`);
    if (r.stray.length) console.log(`      stray requests before this row (late attempts of the previous one?): ${show(r.stray.map(describeReceived))}`);
    if (r.verdict === 'fail') {
      for (const p of r.problems) console.log(`      ${p}`);
      for (const d of r.differences.slice(0, 12)) console.log(`      ${d.path}:\n        fetch      ${show(d.fetch)}\n        retryFetch ${show(d.retryFetch)}`);
      if (r.differences.length > 12) console.log(`      … ${r.differences.length - 12} more differences`);
    }
    if (verbose) console.log(`      fetch:      ${show(r.sides.fetch)}\n      retryFetch: ${show(r.sides.retryFetch)}`);
  }

  // The controls: each mutant must be caught on each of its rows.
  const controls = [];
  if (!only) {
    console.log('\nharness controls (a deliberately wrong fetch wrapper in retryFetch\u2019s place must differ):');
    for (const c of CONTROLS) {
      for (const name of c.rows) {
        const row = ROWS.find((r) => `${r.group}: ${r.name}` === name);
        if (!row) {
          controls.push({ caught: false, line: `${c.mutant}: no row named ${name}` });
          continue;
        }
        const r = await runRow(row, { server, retryFetch, sharedRf, mutant: c.wrap });
        const caught = r.verdict === 'fail';
        const first = r.differences[0] ?? { path: r.problems[0] ?? '' };
        controls.push({ caught, line: `${caught ? 'caught' : 'MISSED'}  ${c.mutant} — ${name}${caught ? ` (at ${first.path})` : ''}` });
        console.log(`  ${controls.at(-1).line}`);
      }
    }
  }
  const missed = controls.filter((c) => !c.caught);

  const strayAtEnd = (await sleep(50), server.log.splice(0));
  await server.close();

  const passed = results.filter((r) => r.verdict === 'pass').length;
  const failed = results.filter((r) => r.verdict === 'fail');
  const exceptions = results.filter((r) => r.verdict === 'exception');
  const strays = results.filter((r) => r.stray.length).length + (strayAtEnd.length ? 1 : 0);
  console.log('\nexceptions (rows that differ on purpose, each checked for exactly that difference):');
  for (const row of rows.filter((r) => r.exception)) {
    const r = results.find((x) => x.row === row);
    console.log(`  ${r.verdict === 'exception' ? 'as described' : 'NOT as described'}  ${row.name}\n      ${row.exception.reason}`);
  }
  if (strayAtEnd.length) console.log(`stray requests after the last row: ${show(strayAtEnd.map(describeReceived))}`);
  if (failed.length) {
    console.log('\nrows that differ:');
    for (const r of failed) console.log(`  ${r.row.group}: ${r.row.name}`);
  }
  if (missed.length) console.log(`\nharness controls MISSED (the comparison no longer sees these faults):\n${missed.map((c) => `  ${c.line}`).join('\n')}`);
  const controlNote = controls.length ? `, controls ${controls.length - missed.length}/${controls.length} caught` : '';
  console.log(`\ndifferential: ${results.length} rows, ${passed} passed, ${failed.length} failed, ${exceptions.length} exceptions${strays ? `, ${strays} with stray requests` : ''}${controlNote} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  process.exitCode = failed.length || strays || missed.length || results.length === 0 ? 1 : 0;
}

main().catch((e) => {
  console.error(e?.stack ?? e);
  process.exitCode = 1;
});
