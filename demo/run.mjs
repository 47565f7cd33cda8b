// `npm run demo`: retry-wasm wrapping fetch against a deliberately flaky
// HTTP server on 127.0.0.1.
//
// Each scenario wraps one GET in an AsyncRetryer, passes the retryer's
// per-attempt AbortSignal (getAbortSignal()) down to fetch, and prints a live
// timeline from the retryer's callbacks. Then the same server is called
// through retryFetch, the package's fetch with retries (Retry-After, POST with
// and without Idempotency-Key, a body resent intact, a caller abort), and
// with hedged attempts against a slow tail (both latency distributions). Then
// twenty clients hammer a dead backend, first each on its own, then sharing
// one RetryBudget. Then 300 calls meet a backend that dies and comes back,
// through retryFetch with a RetryBudget only and with a CircuitBreaker beside
// it: the requests that reached it, the calls that failed, and when the
// probe closed the circuit. The run ends with a summary table and one machine-readable
// line:
//
//   DEMO-RESULT {"ok":true,...}
//
// which tests/demo/run.mjs checks. Exit code 0 when every scenario reached
// its expected outcome and nothing (socket, timer, server) was left behind.

import { createHash, randomUUID } from 'node:crypto';
import net from 'node:net';
import { startFlakyServer, startOutageBackend } from './server.mjs';
import { c, println, Timeline, table, sparkline, ms, visibleLength } from './timeline.mjs';

const demoStart = performance.now();

// If anything ever keeps the process alive past its work, say so and leave.
// (unref: this timer alone never keeps the process running.)
setTimeout(() => {
  println(c.red(`demo: still running after 50 s; active resources: ${process.getActiveResourcesInfo().join(', ')}`));
  process.exit(1);
}, 50_000).unref();

// ── the library ─────────────────────────────────────────────────────────────

let lib;
try {
  lib = await import('retry-wasm/fetch');
} catch (error) {
  console.error(c.red('Could not import retry-wasm. Build it first: `npm run build` (`npm run demo` builds when needed).'));
  console.error(String(error?.stack ?? error));
  println(`DEMO-RESULT ${JSON.stringify({ ok: false, error: `import failed: ${error?.message ?? error}` })}`);
  process.exit(1);
}
const { AsyncRetryer, CircuitBreaker, CircuitOpenError, RetryBudget, parseRetryAfter, retryFetch } = lib;

// ── fetch, HTTP errors and the retry policy ─────────────────────────────────

/** A non-2xx response, thrown by the wrapped function. Keeps the Response so
 *  `retryAfter` can read its Retry-After header. */
class HttpError extends Error {
  constructor(response, body) {
    super(`HTTP ${response.status} ${response.statusText}`);
    this.name = 'HttpError';
    this.status = response.status;
    this.response = response;
    this.body = body;
  }
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/** shouldRetry: network failures, timeouts, 408/425/429/5xx; never other 4xx. */
function isRetryable(error) {
  if (error instanceof HttpError) return RETRYABLE_STATUS.has(error.status);
  return true; // connection reset / refused / TimeoutError
}

/** retryAfter: the server's Retry-After on 429 and 503, in ms (or undefined). */
function retryAfterHint(error) {
  if (error instanceof HttpError && (error.status === 429 || error.status === 503)) {
    return parseRetryAfter(error.response);
  }
  return undefined;
}

function describeError(error) {
  // retryFetch's HTTPError carries the same `status` and `response`.
  if (error instanceof HttpError || error?.name === 'HTTPError') {
    const ra = error.response.headers.get('retry-after');
    return `${error.message}${ra !== null ? `, Retry-After: ${c.magenta(ra)}` : ''}`;
  }
  if (error?.name === 'TimeoutError') return `TimeoutError: ${error.message}`;
  const cause = error?.cause;
  const code = cause?.code ?? error?.code;
  if (code === 'ECONNREFUSED') return `connection refused (ECONNREFUSED)`;
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') {
    return `connection reset by the server (${code}${cause?.message ? `: ${cause.message}` : ''})`;
  }
  return `${error?.name ?? 'Error'}: ${error?.message ?? String(error)}${cause ? ` (${cause.message ?? cause})` : ''}`;
}

function explainBackoff(o, attempt) {
  const base = o.baseWait ?? 1000;
  const kind = o.backoff ?? 'exponential';
  let formula;
  let nominal;
  if (kind === 'linear') [formula, nominal] = [`${base}·${attempt}`, base * attempt];
  else if (kind === 'fixed') [formula, nominal] = [`${base}`, base];
  else [formula, nominal] = [`${base}·2^${attempt - 1}`, base * 2 ** (attempt - 1)];
  let text = `${kind} backoff ${formula} = ${nominal} ms`;
  if (o.maxWait !== undefined && nominal > o.maxWait) text += `, capped at maxWait ${o.maxWait} ms`;
  if (o.jitter === 'full') text += ', full jitter: a random wait from 0 to that';
  else if (o.jitter) text += `, jitter ±${Math.round(o.jitter * 100)}%${o.seed !== undefined ? ` (seed ${o.seed})` : ''}`;
  return text;
}

const until = async (cond, timeout = 1000) => {
  const end = performance.now() + timeout;
  while (!cond() && performance.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
};

// ── scenarios ───────────────────────────────────────────────────────────────

/** A port nothing listens on: bind a free port, then close it. */
async function closedPort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

function scenarios(server, deadPort) {
  const key = (id) => `key=${id}`;
  const cancelled = (id) =>
    server.stats.log.filter((e) => e.key === id && e.outcome === 'cancelled by client').length;
  return [
    {
      id: 'flaky',
      title: 'Flaky endpoint: HTTP 500 twice, then 200',
      url: `${server.url}/flaky?fails=2&${key('flaky')}`,
      options: { maxAttempts: 4, backoff: 'exponential', baseWait: 100, jitter: 0.2, seed: 7 },
      expect: { outcome: 'success', attempts: 3 },
      checks: (r) => [['server saw 3 requests', server.hits('flaky') === 3]],
    },
    {
      id: 'retry-after-seconds',
      title: '503 Service Unavailable with Retry-After: 1 (delta-seconds), then 200',
      url: `${server.url}/unavailable?fails=1&after=1&${key('retry-after-seconds')}`,
      options: { maxAttempts: 3, baseWait: 50, seed: 7 },
      expect: { outcome: 'success', attempts: 2 },
      checks: (r) => [
        [
          `waited ≥ 1 s as the server asked, not the 50 ms backoff (waited ${ms(r.waits[0]?.ms ?? 0)})`,
          (r.waits[0]?.ms ?? 0) >= 950,
        ],
      ],
    },
    {
      id: 'rate-limited',
      title: '429 Too Many Requests with Retry-After: 0, then 200',
      url: `${server.url}/rate-limited?fails=1&after=0&form=seconds&${key('rate-limited')}`,
      options: { maxAttempts: 3, baseWait: 400, seed: 7 },
      expect: { outcome: 'success', attempts: 2 },
      checks: (r) => [
        [`retried at once as told, not after the 400 ms backoff (waited ${ms(r.waits[0]?.ms ?? 0)})`, (r.waits[0]?.ms ?? 1e9) < 200],
      ],
    },
    {
      id: 'retry-after-date',
      title: '429 with Retry-After as an HTTP-date 2 minutes away, under a 3 s total deadline',
      url: `${server.url}/rate-limited?form=date&after=120&${key('retry-after-date')}`,
      options: { maxAttempts: 5, baseWait: 100, maxTotalExecutionTime: 3000, seed: 7 },
      expect: { outcome: 'abort:total-timeout', attempts: 1 },
      checks: (r) => [[`ended at once instead of sleeping 2 minutes (${ms(r.elapsed)})`, r.elapsed < 1000]],
    },
    {
      id: 'reset',
      title: 'Connection reset: the server destroys the socket once, then 200',
      url: `${server.url}/reset?fails=1&${key('reset')}`,
      options: { maxAttempts: 3, baseWait: 100, jitter: 0.2, seed: 7 },
      expect: { outcome: 'success', attempts: 2 },
    },
    {
      id: 'slow-deadline',
      title: 'Slow response (800 ms) against a 250 ms per-attempt deadline (TanStack semantics)',
      url: `${server.url}/slow?ms=800&${key('slow-deadline')}`,
      options: { maxAttempts: 3, baseWait: 100, maxExecutionTime: 250, seed: 7 },
      expect: { outcome: 'give-up:execution-timeout', attempts: 1 },
      checks: async (r) => [
        [`did not wait for the slow response (${ms(r.elapsed)})`, r.elapsed < 700],
        ['fetch was really aborted: the server saw the client hang up', await until(() => cancelled('slow-deadline') === 1)],
      ],
    },
    {
      id: 'slow-per-try',
      title: 'Slow twice, then fast: a per-try timeout with retryOnExecutionTimeout',
      url: `${server.url}/slow?fails=2&ms=800&${key('slow-per-try')}`,
      options: {
        maxAttempts: 4, baseWait: 50, jitter: 0.2, seed: 7,
        maxExecutionTime: 250, retryOnExecutionTimeout: true,
      },
      expect: { outcome: 'success', attempts: 3 },
      checks: async () => [
        ['both slow requests were cancelled by the client', await until(() => cancelled('slow-per-try') === 2)],
      ],
    },
    {
      id: 'hang',
      title: 'A hang: the server never answers',
      url: `${server.url}/hang?${key('hang')}`,
      options: {
        maxAttempts: 3, baseWait: 50, seed: 7,
        maxExecutionTime: 300, retryOnExecutionTimeout: true,
      },
      // With retryOnExecutionTimeout each timeout is an ordinary failed
      // attempt, so the third one exhausts the attempts.
      expect: { outcome: 'give-up:attempts-exhausted', attempts: 3 },
      checks: async () => [
        ['all 3 hung requests were cancelled through getAbortSignal()', await until(() => cancelled('hang') === 3)],
      ],
    },
    {
      id: 'not-found',
      title: '404 Not Found: nothing a retry can fix (shouldRetry says no)',
      url: `${server.url}/notfound?${key('not-found')}`,
      options: { maxAttempts: 4, baseWait: 100, seed: 7 },
      expect: { outcome: 'give-up:not-retryable', attempts: 1 },
    },
    {
      id: 'refused',
      title: 'Backend down: connection refused on every attempt',
      url: `http://127.0.0.1:${deadPort}/anything`,
      options: { maxAttempts: 4, baseWait: 50, jitter: 0.2, seed: 7 },
      expect: { outcome: 'give-up:attempts-exhausted', attempts: 4 },
    },
    {
      id: 'cancel',
      title: "The caller gives up: an outside AbortSignal fires during a 1 s backoff",
      url: `${server.url}/flaky?${key('cancel')}`,
      options: { maxAttempts: 5, baseWait: 1000, seed: 7 },
      cancelAfter: 300,
      expect: { outcome: 'abort:signal', attempts: 1 },
      checks: (r) => [[`stopped when the caller aborted, not after the backoff (${ms(r.elapsed)})`, r.elapsed < 800]],
    },
  ];
}

function policySummary(url, o) {
  const parts = [`GET ${new URL(url).pathname}${new URL(url).search.replace(/[?&]key=[^&]*/, '').replace(/^&/, '?')}`];
  parts.push(`maxAttempts ${o.maxAttempts}`);
  parts.push(`${o.backoff ?? 'exponential'} ${o.baseWait} ms`);
  if (o.jitter) parts.push(`jitter ${o.jitter}`);
  if (o.maxExecutionTime) parts.push(`maxExecutionTime ${o.maxExecutionTime} ms`);
  if (o.retryOnExecutionTimeout) parts.push('retryOnExecutionTimeout');
  if (o.maxTotalExecutionTime) parts.push(`maxTotalExecutionTime ${o.maxTotalExecutionTime} ms`);
  return parts.join(' · ');
}

async function runScenario(sc) {
  const tl = new Timeline(sc.title, policySummary(sc.url, sc.options));
  const rec = {
    id: sc.id, title: sc.title, expect: sc.expect, attempts: 0, outcome: 'unsettled',
    detail: '', elapsed: 0, waits: tl.waits, signals: 0, checks: [],
  };
  let giveUp = null;
  let abort = null;
  let success = null;

  const controller = sc.cancelAfter ? new AbortController() : null;

  const retryer = new AsyncRetryer(
    async () => {
      const signal = retryer.getAbortSignal();
      const n = retryer.store.state.currentAttempt;
      rec.attempts++;
      if (signal instanceof AbortSignal) rec.signals++;
      tl.attemptStart(n);
      const t = performance.now();
      const response = await fetch(sc.url, { signal });
      const body = await response.text();
      if (!response.ok) throw new HttpError(response, body);
      return { status: response.status, body, took: performance.now() - t };
    },
    {
      ...sc.options,
      ...(controller ? { signal: controller.signal } : {}),
      throwOnError: false,
      shouldRetry: (error) => isRetryable(error),
      retryAfter: (error) => retryAfterHint(error),
      onError: (error) => tl.attemptResult(tl.current, `${c.red('✗')} ${describeError(error)}`),
      onExecutionTimeout: (r) =>
        tl.attemptResult(
          tl.current,
          `${c.red('⏱')} no answer within ${r.options.maxExecutionTime} ms (maxExecutionTime): its signal aborts, fetch is cancelled`,
        ),
      onRetry: (attempt, error) => {
        const hint = retryAfterHint(error);
        if (hint !== undefined) {
          const raw = error.response.headers.get('retry-after');
          tl.waitStart(`Retry-After ${c.magenta(JSON.stringify(raw))} → ${ms(hint)} (the server's hint replaces the backoff)`);
        } else {
          tl.waitStart(explainBackoff(sc.options, attempt));
        }
      },
      onSuccess: (result) => {
        success = result;
        tl.attemptResult(tl.current, `${c.green('✓')} HTTP ${result.status} ${c.dim(result.body)}`);
      },
      onAbort: (reason, r) => {
        abort = reason;
        const total = r.options.maxTotalExecutionTime;
        const why = {
          'total-timeout': `the ${total} ms total deadline (maxTotalExecutionTime) ${tl.elapsed() < total ? 'would be crossed by the next wait, so it is not slept' : 'has passed'}`,
          signal: "the caller's AbortSignal fired; the pending wait is cancelled",
          'execution-timeout': 'the attempt ran past maxExecutionTime; without retryOnExecutionTimeout that ends the flow',
          manual: 'abort() was called',
          'new-execution': 'a new execute() replaced this flow',
        }[reason] ?? '';
        if (!tl.interruptWait(c.yellow(reason === 'total-timeout' ? 'not slept' : 'interrupted'))) tl.closeLine();
        tl.note(`${c.yellow('⊘ aborted')} (${reason}): ${why}`);
      },
      onGiveUp: (error, reason) => {
        giveUp = { reason, error };
      },
    },
  );

  let cancelTimer;
  if (controller) {
    cancelTimer = setTimeout(() => {
      tl.interruptWait(c.yellow('interrupted'));
      tl.note(`${c.yellow('✋')} the caller aborts its AbortController`);
      controller.abort();
    }, sc.cancelAfter);
  }

  // A guard so that a flow that never settles cannot stall the demo.
  let guard;
  const t0 = performance.now();
  try {
    await Promise.race([
      retryer.execute(),
      new Promise((_, reject) => {
        guard = setTimeout(() => reject(new Error('the flow did not settle within 15 s')), 15_000);
      }),
    ]);
  } catch (error) {
    rec.detail = `threw: ${error?.message ?? error}`;
    retryer.abort();
  } finally {
    clearTimeout(guard);
    clearTimeout(cancelTimer);
  }
  rec.elapsed = performance.now() - t0;

  if (success) rec.outcome = 'success';
  else if (giveUp) rec.outcome = `give-up:${giveUp.reason}`;
  else if (abort) rec.outcome = `abort:${abort}`;

  const attemptsWord = (n) => `${n} attempt${n === 1 ? '' : 's'}`;
  if (success) {
    tl.end(`${c.green('success')} on attempt ${rec.attempts} in ${ms(rec.elapsed)}`);
  } else if (giveUp) {
    tl.end(`${c.red('gave up')} (${giveUp.reason}) after ${attemptsWord(rec.attempts)}, ${ms(rec.elapsed)}; final error: ${describeError(giveUp.error)}`);
  } else if (abort) {
    tl.end(`${c.yellow('aborted')} (${abort}) after ${attemptsWord(rec.attempts)}, ${ms(rec.elapsed)}; execute() resolved undefined`);
  } else {
    tl.end(c.red(`did not settle as expected ${rec.detail}`));
  }

  rec.checks = [
    [`outcome ${sc.expect.outcome}`, rec.outcome === sc.expect.outcome],
    [`${attemptsWord(sc.expect.attempts)}`, rec.attempts === sc.expect.attempts],
    ['every attempt got an AbortSignal from getAbortSignal()', rec.signals === rec.attempts],
    ['the retryer is idle afterwards', retryer.store.state.isExecuting === false],
    ...((await sc.checks?.(rec)) ?? []),
  ];
  for (const [name, ok] of rec.checks.slice(4)) {
    println(`    ${ok ? c.green('✓') : c.red('✗')} ${c.dim(name)}`);
  }
  rec.ok = rec.checks.every(([, ok]) => ok);
  return rec;
}

// ── retryFetch ──────────────────────────────────────────────────────────────

// retryFetch's own defaults, so the wait explanations match what it does.
const FETCH_DEFAULTS = { maxAttempts: 3, baseWait: 300, jitter: 'full' };
// Its default afterStatusCodes: only these statuses' Retry-After sets the wait.
const AFTER_STATUS = new Set([413, 429, 503]);

/** Bytes that are not all alike, so a lost or reordered chunk changes the hash. */
function testBytes(length) {
  const bytes = new Uint8Array(length);
  let x = 0x2545f491;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const abbrev = (hex) => `${hex.slice(0, 12)}…`;

function fetchScenarios(server) {
  const key = (id) => `key=${id}`;
  const seen = (id) => server.stats.log.filter((e) => e.key === id);
  const seenStatuses = (id) => seen(id).map((e) => e.outcome).join(' ');
  const idempotencyKey = randomUUID();
  const body = testBytes(100_000);
  const bodyHash = sha256(body);
  return [
    {
      id: 'fetch-retry-after',
      title: 'retryFetch: 503 with Retry-After: 1, then 200',
      url: `${server.url}/unavailable?fails=1&after=1&${key('fetch-retry-after')}`,
      options: { baseWait: 50 },
      expect: { outcome: 'resolved:200', attempts: 2 },
      checks: (r) => [
        [`waited ≥ 1 s as the server asked, not the ≤ 50 ms backoff (waited ${ms(r.waits[0]?.ms ?? 0)})`, (r.waits[0]?.ms ?? 0) >= 950],
        [`the server saw 2 requests: 503, then 200 (saw: ${seenStatuses('fetch-retry-after')})`, seenStatuses('fetch-retry-after') === '503 200'],
      ],
      seen: () => ({ requests: server.hits('fetch-retry-after'), statuses: seen('fetch-retry-after').map((e) => Number(e.outcome)) }),
    },
    {
      id: 'fetch-post-no-key',
      title: 'retryFetch: a POST without Idempotency-Key meets a 503',
      url: `${server.url}/orders?fails=2&${key('fetch-post-no-key')}`,
      init: () => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ item: 'book', qty: 1 }) }),
      options: { baseWait: 100 },
      // Sending it again could place the order twice, so the 503 goes back
      // to the caller exactly as fetch would have returned it.
      handedBack: 'handed back as it is, a POST without Idempotency-Key is never sent twice',
      expect: { outcome: 'resolved:503', attempts: 1 },
      checks: (r) => [
        [`the server received the POST once (${server.hits('fetch-post-no-key')})`, server.hits('fetch-post-no-key') === 1],
        ['the caller got the 503 Response itself, nothing thrown', r.status === 503],
        [`it counted as a failed attempt that may not be retried (onError ${r.failed}×, gave up: ${r.giveUp})`, r.failed === 1 && r.giveUp === 'not-retryable'],
      ],
      seen: () => ({ requests: server.hits('fetch-post-no-key'), statuses: seen('fetch-post-no-key').map((e) => Number(e.outcome)) }),
    },
    {
      id: 'fetch-post-idempotent',
      title: 'retryFetch: the same POST with an Idempotency-Key, retried until it lands',
      url: `${server.url}/orders?fails=2&${key('fetch-post-idempotent')}`,
      init: () => ({
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Idempotency-Key': idempotencyKey },
        body: JSON.stringify({ item: 'book', qty: 1 }),
      }),
      options: { baseWait: 100 },
      expect: { outcome: 'resolved:201', attempts: 3 },
      checks: (r) => {
        const keys = seen('fetch-post-idempotent').map((e) => e.idempotencyKey);
        return [
          [`the server saw 503, 503, 201 (saw: ${seenStatuses('fetch-post-idempotent')})`, seenStatuses('fetch-post-idempotent') === '503 503 201'],
          ['every attempt carried the same Idempotency-Key', keys.length === 3 && keys.every((k) => k === idempotencyKey)],
          [`the server's answer counts 3 requests received (${r.json?.requestsReceived})`, r.json?.requestsReceived === 3],
        ];
      },
      seen: () => ({
        requests: server.hits('fetch-post-idempotent'),
        statuses: seen('fetch-post-idempotent').map((e) => Number(e.outcome)),
        sameIdempotencyKey: seen('fetch-post-idempotent').every((e) => e.idempotencyKey === idempotencyKey),
      }),
    },
    {
      id: 'fetch-body-intact',
      title: 'retryFetch: a 100 000-byte PUT body, failed twice, must arrive intact on the third attempt',
      url: `${server.url}/hash?fails=2&${key('fetch-body-intact')}`,
      init: () => ({ method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body }),
      options: { baseWait: 100 },
      expect: { outcome: 'resolved:200', attempts: 3 },
      // The hashes shown are the ones the server put in its final answer.
      report: (r) => {
        println(`    ${c.dim('sent          ')} sha256 ${c.cyan(abbrev(bodyHash))} ${c.dim(`(${body.length} bytes)`)}`);
        for (const e of r.json?.received ?? []) {
          const same = e.sha256 === bodyHash && e.bytes === body.length;
          const status = seen('fetch-body-intact').find((l) => l.n === e.n)?.outcome;
          println(
            `    ${c.dim(`server got #${e.n}`)}  sha256 ${same ? c.green(abbrev(e.sha256)) : c.red(abbrev(e.sha256))} ${c.dim(`(${e.bytes} bytes) → ${status}`)}`,
          );
        }
      },
      checks: (r) => {
        const got = seen('fetch-body-intact');
        const answered = r.json?.received ?? [];
        return [
          [`the server saw 500, 500, 200 (saw: ${seenStatuses('fetch-body-intact')})`, seenStatuses('fetch-body-intact') === '500 500 200'],
          ['every attempt delivered the same 100 000 bytes (sha256 matches)', got.length === 3 && got.every((e) => e.sha256 === bodyHash && e.bytes === body.length)],
          ["the server's answer lists those 3 hashes", answered.length === 3 && answered.every((e) => e.sha256 === bodyHash)],
        ];
      },
      seen: () => ({
        requests: server.hits('fetch-body-intact'),
        statuses: seen('fetch-body-intact').map((e) => Number(e.outcome)),
        sent: bodyHash,
        received: seen('fetch-body-intact').map((e) => e.sha256),
      }),
    },
    {
      id: 'fetch-caller-abort',
      title: "retryFetch: the caller aborts with its own reason during a 700 ms wait",
      url: `${server.url}/flaky?status=503&${key('fetch-caller-abort')}`,
      options: { maxAttempts: 5, backoff: 'fixed', baseWait: 700, jitter: 0 },
      abortAfter: 250,
      expect: { outcome: 'rejected:caller-reason', attempts: 1 },
      checks: async (r) => {
        // Past the moment attempt 2 would have been sent.
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, 850 - r.elapsed)));
        return [
          [`rejected at once: ${ms(r.rejectedAfterAbort ?? Infinity)} after the abort`, (r.rejectedAfterAbort ?? Infinity) < 50],
          [`no request reached the server after the abort (${server.hits('fetch-caller-abort')} in all)`, server.hits('fetch-caller-abort') === 1],
        ];
      },
      seen: () => ({ requests: server.hits('fetch-caller-abort'), statuses: seen('fetch-caller-abort').map((e) => Number(e.outcome)) }),
    },
  ];
}

function fetchPolicySummary(sc, init) {
  const url = new URL(sc.url);
  const query = url.search.replace(/[?&]key=[^&]*/, '').replace(/^&/, '?');
  const o = { ...FETCH_DEFAULTS, ...sc.options };
  const parts = [`retryFetch · ${init?.method ?? 'GET'} ${url.pathname}${query}`];
  const idem = init?.headers?.['Idempotency-Key'];
  if (idem) parts.push(`Idempotency-Key: ${idem.slice(0, 8)}…`);
  else if (init?.method === 'POST') parts.push('no Idempotency-Key');
  parts.push(`maxAttempts ${o.maxAttempts}`);
  parts.push(`${o.backoff ?? 'exponential'} ${o.baseWait} ms`);
  parts.push(o.jitter === 'full' ? 'full jitter' : `jitter ${o.jitter}`);
  return parts.join(' · ');
}

async function runFetchScenario(sc) {
  const init = sc.init?.() ?? {};
  const tl = new Timeline(sc.title, fetchPolicySummary(sc, init));
  const rec = {
    id: sc.id, title: sc.title, expect: sc.expect, attempts: 0, outcome: 'unsettled',
    detail: '', elapsed: 0, waits: tl.waits, signals: 0, failed: 0, checks: [],
  };
  const retryers = new Set();
  let giveUp = null;
  const o = { ...FETCH_DEFAULTS, ...sc.options };

  const controller = sc.abortAfter ? new AbortController() : null;
  const reason = new DOMException('the user navigated away', 'AbortError');
  let abortedAt;

  const fetchWithRetry = retryFetch({
    ...sc.options,
    // The wrapped fetch is where each attempt begins, so the timeline opens
    // its line here and sees the per-attempt signal retryFetch passes down.
    fetch: (input, attemptInit) => {
      rec.attempts++;
      if (attemptInit?.signal instanceof AbortSignal) rec.signals++;
      tl.attemptStart(rec.attempts);
      return fetch(input, attemptInit);
    },
    onError: (error, _args, retryer) => {
      retryers.add(retryer);
      rec.failed++;
      tl.attemptResult(tl.current, `${c.red('✗')} ${describeError(error)}`);
    },
    onRetry: (attempt, error, retryer) => {
      retryers.add(retryer);
      const hint = AFTER_STATUS.has(error?.status) ? parseRetryAfter(error.response) : undefined;
      if (hint !== undefined) {
        const raw = error.response.headers.get('retry-after');
        tl.waitStart(`Retry-After ${c.magenta(JSON.stringify(raw))} → ${ms(hint)} (the server's hint replaces the backoff)`);
      } else {
        tl.waitStart(explainBackoff(o, attempt));
      }
    },
    onSuccess: (response, _args, retryer) => {
      retryers.add(retryer);
      // Not every response here is a 2xx: one the request may not be retried
      // for ends the flow as a result too.
      const text = `HTTP ${response.status} ${response.statusText}`;
      tl.attemptResult(
        tl.current,
        response.ok ? `${c.green('✓')} ${text}` : `${c.yellow('→')} ${text}: ${sc.handedBack ?? 'not a failed attempt'}`,
      );
    },
    onSettled: (_args, retryer) => retryers.add(retryer),
    onAbort: (why, retryer) => {
      retryers.add(retryer);
      if (!tl.interruptWait(c.yellow('interrupted'))) tl.closeLine();
      tl.note(`${c.yellow('⊘ aborted')} (${why}): the pending wait is cancelled; no attempt ${rec.attempts + 1} is sent`);
    },
    onGiveUp: (error, why, retryer) => {
      retryers.add(retryer);
      giveUp = { reason: why, error };
      rec.giveUp = why;
      if (why === 'not-retryable' && sc.handedBack) tl.note(`${c.yellow('→')} ${sc.handedBack}`);
    },
  });

  let abortTimer;
  if (controller) {
    init.signal = controller.signal;
    abortTimer = setTimeout(() => {
      tl.interruptWait(c.yellow('interrupted'));
      tl.note(`${c.yellow('✋')} the caller calls controller.abort(reason)`);
      abortedAt = performance.now();
      controller.abort(reason);
    }, sc.abortAfter);
  }

  let guard;
  let stuck = false;
  const t0 = performance.now();
  try {
    const response = await Promise.race([
      fetchWithRetry(sc.url, init),
      new Promise((_, reject) => {
        guard = setTimeout(() => {
          stuck = true;
          reject(new Error('the call did not settle within 15 s'));
        }, 15_000);
      }),
    ]);
    rec.elapsed = performance.now() - t0;
    rec.status = response.status;
    rec.outcome = `resolved:${response.status}`;
    // Read to the end, as a caller would, so its connection is let go.
    const text = await response.text();
    try {
      rec.json = JSON.parse(text);
    } catch {}
    const shown = text.length > 90 ? `${text.slice(0, 90)}…` : text;
    tl.end(
      `${response.ok ? c.green('resolved') : c.yellow('resolved')} HTTP ${response.status} after ${rec.attempts} attempt${rec.attempts === 1 ? '' : 's'}, ${ms(rec.elapsed)} ${c.dim(shown)}`,
    );
  } catch (error) {
    rec.elapsed = performance.now() - t0;
    if (abortedAt !== undefined) rec.rejectedAfterAbort = performance.now() - abortedAt;
    // The guard fired: stop the call, or its timers would outlive the demo.
    if (stuck) for (const r of retryers) r.abort();
    rec.outcome = error === reason ? 'rejected:caller-reason' : `rejected:${error?.name ?? 'Error'}`;
    rec.detail = `${error?.name}: ${error?.message}`;
    tl.end(
      error === reason
        ? `${c.yellow('rejected')} with the caller's own reason (${error.name}: ${error.message}), ${ms(rec.rejectedAfterAbort)} after the abort`
        : `${c.red('rejected')} ${describeError(error)}${giveUp ? ` (gave up: ${giveUp.reason})` : ''}`,
    );
  } finally {
    clearTimeout(guard);
    clearTimeout(abortTimer);
  }

  const [retryer] = retryers;
  sc.report?.(rec);
  rec.checks = [
    [`outcome ${sc.expect.outcome}`, rec.outcome === sc.expect.outcome],
    [`${sc.expect.attempts} attempt${sc.expect.attempts === 1 ? '' : 's'}`, rec.attempts === sc.expect.attempts],
    ['every attempt got an AbortSignal from retryFetch', rec.signals === rec.attempts],
    [
      "callbacks got the call's own AsyncRetryer, idle afterwards",
      retryers.size === 1 && retryer instanceof AsyncRetryer && retryer.store.state.isExecuting === false,
    ],
    ...((await sc.checks?.(rec)) ?? []),
  ];
  for (const [name, ok] of rec.checks.slice(4)) {
    println(`    ${ok ? c.green('✓') : c.red('✗')} ${c.dim(name)}`);
  }
  rec.seen = sc.seen?.();
  rec.ok = rec.checks.every(([, ok]) => ok);
  return rec;
}

// ── hedged attempts: a slow tail ────────────────────────────────────────────

const TAIL_REQUESTS = 200;

/** The nearest-rank percentile `p` (0..1) of sorted `s`. */
const percentile = (s, p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];

/** Sends TAIL_REQUESTS sequential GETs through `call` to `/tail` under `key`. */
async function tailRun(server, call, key) {
  const latencies = [];
  let bad = 0;
  for (let i = 0; i < TAIL_REQUESTS; i++) {
    const t0 = performance.now();
    const r = await call(`${server.url}/tail?key=${key}&every=20&ms=800&fast=5`);
    await r.text();
    latencies.push(performance.now() - t0);
    if (r.status !== 200) bad++;
  }
  const s = [...latencies].sort((a, b) => a - b);
  const log = server.stats.log.filter((e) => e.key === key);
  return {
    latencies,
    bad,
    p50: percentile(s, 0.5),
    p99: percentile(s, 0.99),
    p999: percentile(s, 0.999),
    max: s[s.length - 1],
    requests: log.length,
    slow: log.filter((e) => e.slow).length,
    cancelled: log.filter((e) => e.outcome === 'cancelled by client').length,
  };
}

const TAIL_BUCKETS = [10, 20, 50, 100, 200, 500, 1000, Infinity];

/** Prints a latency histogram, one row per bucket. */
function printDistribution(latencies, colour) {
  let from = 0;
  for (const to of TAIL_BUCKETS) {
    const n = latencies.filter((x) => x >= from && x < to).length;
    const label = to === Infinity ? `≥ ${from} ms` : `${from}–${to} ms`;
    const bar = n ? colour('█'.repeat(Math.max(1, Math.round((n / latencies.length) * 50)))) : '';
    println(`    ${label.padStart(12)} ${String(n).padStart(4)} ${bar}`);
    from = to;
  }
}

async function hedgeScenario(server) {
  println();
  println(`${c.bold(c.cyan('▶'))} ${c.bold(`Hedged attempts: ${TAIL_REQUESTS} sequential GETs to a server with a slow tail`)}`);
  println(c.dim('  /tail answers in ~5 ms, except every 20th request, which takes 800 ms. The two runs go side by side.'));
  const started = performance.now();
  let hedges = 0;
  const [plain, hedged] = await Promise.all([
    tailRun(server, retryFetch({ maxAttempts: 3 }), 'tail-plain'),
    tailRun(server, retryFetch({ maxAttempts: 3, hedge: 40, onHedge: () => hedges++ }), 'tail-hedged'),
  ]);
  const elapsed = performance.now() - started;
  for (const [title, r, colour] of [
    ['retryFetch({ maxAttempts: 3 })', plain, c.red],
    ['retryFetch({ maxAttempts: 3, hedge: 40 })', hedged, c.green],
  ]) {
    println();
    println(`  ${c.bold(title)}`);
    printDistribution(r.latencies, colour);
    println(
      `    p50 ${c.bold(ms(r.p50))} · p99 ${c.bold(ms(r.p99))} · p99.9 ${c.bold(ms(r.p999))} · ` +
        `${r.requests} requests for ${TAIL_REQUESTS} calls (${(r.requests / TAIL_REQUESTS).toFixed(3)} per call)`,
    );
  }
  println();
  println(
    `  ${c.bold('⇒')} a second attempt 40 ms into a slow one took p99 from ${c.red(ms(plain.p99))} to ${c.green(ms(hedged.p99))}` +
      ` for ${c.bold(`${(((hedged.requests - TAIL_REQUESTS) / TAIL_REQUESTS) * 100).toFixed(1)}%`)} more requests;` +
      ` the ${hedged.cancelled} losing requests were cancelled (the server saw their connections close).`,
  );
  const perCall = hedged.requests / TAIL_REQUESTS;
  const checks = [
    ['every call answered 200', plain.bad === 0 && hedged.bad === 0],
    ['without hedge, p99 is the slow tail (≥ 700 ms)', plain.p99 >= 700],
    ['with hedge, p99 under 100 ms', hedged.p99 < 100],
    ['with hedge, at most 1.10 requests per call', perCall <= 1.1],
    ['without hedge, one request per call', plain.requests === TAIL_REQUESTS],
    ['one hedge per slow answer, each loser cancelled', hedges === hedged.slow && hedged.cancelled === hedges && hedged.requests === TAIL_REQUESTS + hedges],
  ];
  return {
    id: 'fetch-hedge',
    title: 'retryFetch with hedge: a slow tail',
    attempts: hedged.requests,
    outcome: `p99 ${Math.round(plain.p99)} → ${Math.round(hedged.p99)} ms`,
    expectText: 'p99 < 100 ms, ≤ 1.10 req/call',
    elapsed,
    checks,
    ok: checks.every(([, ok]) => ok),
    seen: {
      calls: TAIL_REQUESTS,
      plain: { p50: plain.p50, p99: plain.p99, p999: plain.p999, requests: plain.requests, slow: plain.slow },
      hedged: { p50: hedged.p50, p99: hedged.p99, p999: hedged.p999, requests: hedged.requests, slow: hedged.slow, hedges, cancelled: hedged.cancelled },
    },
  };
}

// ── the retry storm ─────────────────────────────────────────────────────────

async function storm(server, { clients, budget }) {
  const id = budget ? 'storm-budget' : 'storm-free';
  const url = `${server.url}/down?key=${id}`;
  const perClient = [];
  const started = Date.now();
  const retryers = Array.from({ length: clients }, (_, i) => {
    const me = { glyphs: '', reason: '' };
    perClient.push(me);
    const retryer = new AsyncRetryer(
      async () => {
        const response = await fetch(url, { signal: retryer.getAbortSignal() });
        const body = await response.text();
        if (!response.ok) throw new HttpError(response, body);
        return body;
      },
      {
        maxAttempts: 5,
        baseWait: 20,
        jitter: 0.5,
        seed: 100 + i, // each client its own jitter sequence
        throwOnError: false,
        ...(budget ? { budget } : {}),
        shouldRetry: (error) => isRetryable(error),
        onError: () => {
          me.glyphs += '✗';
        },
        onGiveUp: (_error, reason) => {
          me.reason = reason;
        },
      },
    );
    return retryer;
  });
  await Promise.all(retryers.map((r) => r.execute()));
  const ended = Date.now();

  const requests = server.hits(id);
  const times = server.stats.log.filter((e) => e.key === id).map((e) => e.t);
  const short = { 'attempts-exhausted': 'exhausted', 'budget-exhausted': c.yellow('budget') };
  const cells = perClient.map(
    (p, i) => `c${String(i + 1).padStart(2, '0')} ${c.red(p.glyphs.padEnd(5))} ${short[p.reason] ?? p.reason}`,
  );
  const pad = (s) => s + ' '.repeat(Math.max(0, 22 - visibleLength(s)));
  for (let i = 0; i < cells.length; i += 4) println(`    ${cells.slice(i, i + 4).map(pad).join('  ').trimEnd()}`);
  println(`    requests over time (20 ms per column): ${c.cyan(sparkline(times, 20, started, Math.max(ended, started + 400)))}`);
  println(`    ${c.bold(String(requests))} requests reached the dead backend in ${ms(ended - started)}`);
  const reasons = {};
  for (const p of perClient) reasons[p.reason] = (reasons[p.reason] ?? 0) + 1;
  return { requests, reasons, elapsed: ended - started };
}

// ── the circuit breaker ─────────────────────────────────────────────────────

// One schedule for both runs: the backend answers for 400 ms, fails every
// request for 1.2 s, then answers again; a call starts every 8 ms.
const OUTAGE = { calls: 300, every: 8, downAt: 400, downFor: 1200 };
// Scaled down from the defaults (a 30 s window, a 5 s break) so the whole
// outage, its trips and probes fit in a few seconds.
const BREAKER_OPTIONS = { failureRatio: 0.5, minimumThroughput: 10, samplingDuration: 1000, breakDuration: 250 };
const OUTAGE_FETCH = { maxAttempts: 3, baseWait: 50 };
const COLUMN_MS = 50;

/**
 * OUTAGE.calls calls through one retryFetch (a call every OUTAGE.every ms,
 * each not waiting for the others) against a backend of its own; with
 * `withBreaker`, a CircuitBreaker beside the RetryBudget.
 */
async function outageRun(withBreaker) {
  const backend = await startOutageBackend({ downAt: OUTAGE.downAt, downFor: OUTAGE.downFor });
  const changes = [];
  let t0 = 0;
  const breaker = withBreaker
    ? new CircuitBreaker({
        ...BREAKER_OPTIONS,
        onStateChange: (change) => changes.push({ t: performance.now() - t0, ...change }),
      })
    : undefined;
  const budget = new RetryBudget({ maxTokens: 10, tokenRatio: 0.1 });
  const reasons = {};
  const call = retryFetch({
    ...OUTAGE_FETCH,
    budget,
    ...(breaker ? { breaker } : {}),
    onGiveUp: (_error, reason) => {
      reasons[reason] = (reasons[reason] ?? 0) + 1;
    },
  });
  t0 = backend.start();
  const calls = await Promise.all(
    Array.from({ length: OUTAGE.calls }, async (_, i) => {
      // Started on a fixed schedule, whatever the earlier calls are doing.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, t0 + i * OUTAGE.every - performance.now())));
      const start = performance.now() - t0;
      try {
        const response = await call(`${backend.url}/items/${i}`);
        await response.text();
        return { start, end: performance.now() - t0, outcome: response.ok ? 'ok' : String(response.status) };
      } catch (error) {
        return { start, end: performance.now() - t0, outcome: error instanceof CircuitOpenError ? 'circuit-open' : error?.name ?? 'Error' };
      }
    }),
  );
  await backend.close();
  const snapshot = breaker?.snapshot();
  breaker?.free();
  budget.free();
  return { backend, calls, changes, reasons, snapshot };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};

function outageFigures(run) {
  const { backend, calls, changes } = run;
  const failed = calls.filter((x) => x.outcome !== 'ok');
  const fast = calls.filter((x) => x.outcome === 'circuit-open');
  const firstOk = Math.min(...calls.filter((x) => x.outcome === 'ok' && x.end >= backend.upAt).map((x) => x.end));
  const closed = changes.find((x) => x.to === 'closed' && x.reason === 'probe-succeeded' && x.t >= backend.upAt);
  return {
    requests: backend.log.length,
    duringOutage: backend.log.filter((e) => e.status === 503).length,
    succeeded: calls.length - failed.length,
    failed: failed.length,
    failedFast: fast.length,
    failedFastMedianMs: fast.length ? median(fast.map((x) => x.end - x.start)) : null,
    failedSlowMedianMs: failed.length > fast.length ? median(failed.filter((x) => x.outcome !== 'circuit-open').map((x) => x.end - x.start)) : null,
    firstOkAfterRecoveryMs: Number.isFinite(firstOk) ? firstOk - backend.upAt : null,
    trips: changes.filter((x) => x.reason === 'tripped').length,
    probesFailed: changes.filter((x) => x.reason === 'probe-failed').length,
    firstTripMs: changes.find((x) => x.reason === 'tripped')?.t ?? null,
    closedAtMs: closed?.t ?? null,
    lastFailedStart: failed.length ? Math.max(...failed.map((x) => x.start)) : null,
    endState: run.snapshot ? Object.values(run.snapshot)[0]?.state : null,
    keys: run.snapshot ? Object.keys(run.snapshot) : [],
    giveUps: run.reasons,
  };
}

/** One character per COLUMN_MS: the circuit's state over the run (▒ a column where it was half-open). */
function circuitStrip(changes, columns) {
  let state = 'closed';
  let k = 0;
  let out = '';
  for (let col = 0; col < columns; col++) {
    const end = (col + 1) * COLUMN_MS;
    let halfOpen = state === 'half-open';
    while (k < changes.length && changes[k].t < end) {
      state = changes[k].to;
      if (state === 'half-open') halfOpen = true;
      k++;
    }
    out += halfOpen ? c.yellow('▒') : state === 'open' ? c.red('█') : c.green('─');
  }
  return out;
}

async function breakerScenario() {
  println();
  println(`${c.bold(c.cyan('▶'))} ${c.bold(`Circuit breaker: ${OUTAGE.calls} calls against a backend that dies, then comes back`)}`);
  println(
    c.dim(
      `  The backend answers 200, fails every request with a 503 from +${OUTAGE.downAt} ms to +${OUTAGE.downAt + OUTAGE.downFor} ms, then answers again;` +
        ` a call starts every ${OUTAGE.every} ms. Two runs side by side, each with its own backend:`,
    ),
  );
  println(c.dim(`  retryFetch({ maxAttempts: 3, baseWait: 50, budget })            a RetryBudget({ maxTokens: 10, tokenRatio: 0.1 }) only`));
  println(c.dim(`  retryFetch({ maxAttempts: 3, baseWait: 50, budget, breaker })   the same, and new CircuitBreaker({ ${Object.entries(BREAKER_OPTIONS).map(([k, v]) => `${k}: ${v}`).join(', ')} })`));
  const started = performance.now();
  const [plain, guarded] = await Promise.all([outageRun(false), outageRun(true)]);
  const elapsed = performance.now() - started;
  const a = outageFigures(plain);
  const b = outageFigures(guarded);
  const { downAt, upAt } = guarded.backend;

  // The circuit's transitions as onStateChange reported them.
  println();
  println(`  ${c.bold('onStateChange')} ${c.dim('(ms after the first call)')}`);
  for (const x of guarded.changes) {
    const why =
      x.reason === 'tripped'
        ? `${x.failures} of ${x.calls} attempts in the window failed; open for ${x.breakDuration} ms`
        : x.reason === 'probe-failed'
          ? `the probe met the dead backend; open again for ${x.breakDuration} ms`
          : x.reason === 'break-ended'
            ? 'the break is over: the attempt that asked is the probe'
            : x.reason === 'probe-succeeded'
              ? c.green(`the probe got a 200: ${Math.round(x.t - upAt)} ms after the backend recovered at +${upAt} ms`)
              : '';
    println(`    ${c.dim(`+${String(Math.round(x.t)).padStart(5)} ms`)}  ${x.from.padEnd(9)} → ${x.to.padEnd(9)} ${c.dim(x.reason.padEnd(15))} ${why}`);
  }

  // Both runs on one time axis.
  const to = Math.max(...plain.calls.map((x) => x.end), ...guarded.calls.map((x) => x.end), upAt + 200);
  const columns = Math.ceil(to / COLUMN_MS);
  const backendStrip = Array.from({ length: columns }, (_, col) => {
    const mid = (col + 0.5) * COLUMN_MS;
    return mid >= downAt && mid < upAt ? c.red('█') : c.green('─');
  }).join('');
  const requestsOf = (run) => sparkline(run.backend.log.map((e) => e.t), COLUMN_MS, 0, columns * COLUMN_MS);
  println();
  println(`  ${c.bold('over time')} ${c.dim(`(${COLUMN_MS} ms per column)`)}`);
  println(`    ${'backend'.padEnd(22)} ${backendStrip}  ${c.dim('█ down')}`);
  println(`    ${'requests, budget only'.padEnd(22)} ${c.cyan(requestsOf(plain))}`);
  println(`    ${'requests, + breaker'.padEnd(22)} ${c.cyan(requestsOf(guarded))}`);
  println(`    ${'circuit'.padEnd(22)} ${circuitStrip(guarded.changes, columns)}  ${c.dim('─ closed, █ open, ▒ half-open (a probe)')}`);

  println();
  table(
    ['', 'requests reached the backend', 'during the outage', 'calls failed', 'of them CircuitOpenError', 'first 200 after recovery'],
    [
      ['budget only', String(a.requests), String(a.duringOutage), `${a.failed} of ${OUTAGE.calls}`, '0', a.firstOkAfterRecoveryMs === null ? '—' : `+${Math.round(a.firstOkAfterRecoveryMs)} ms`],
      ['budget + breaker', String(b.requests), String(b.duringOutage), `${b.failed} of ${OUTAGE.calls}`, String(b.failedFast), b.firstOkAfterRecoveryMs === null ? '—' : `+${Math.round(b.firstOkAfterRecoveryMs)} ms`],
    ],
  );
  const reasonsText = (r) => Object.entries(r).map(([k, v]) => `${k} ×${v}`).join(', ') || 'none';
  println(c.dim(`  onGiveUp reasons: budget only ${reasonsText(a.giveUps)}; budget + breaker ${reasonsText(b.giveUps)}`));
  println();
  println(
    `  ${c.bold('⇒')} with the breaker the dead backend got ${c.green(b.duringOutage)} requests instead of ${c.red(a.duringOutage)}` +
      ` (${b.requests} in all instead of ${a.requests}); ${b.failedFast} calls were refused without a request` +
      ` (CircuitOpenError after a median ${Math.round(b.failedFastMedianMs ?? 0)} ms: each waited for the probe's turn, as its retryAfter said, and found the circuit still open).` +
      ` The probe closed the circuit at +${Math.round(b.closedAtMs ?? NaN)} ms, ${Math.round((b.closedAtMs ?? NaN) - upAt)} ms after the backend came back;` +
      ` the budget alone noticed at once, but paid for it with a request from every call during the outage.`,
  );

  const seen = { calls: OUTAGE.calls, downAt, upAt, breakDuration: BREAKER_OPTIONS.breakDuration, budgetOnly: a, breaker: b, changes: guarded.changes.map(({ t, from, to: next, reason }) => ({ t: Math.round(t), from, to: next, reason })) };
  const plainChecks = [
    ['every call sent at least its first request', a.requests >= OUTAGE.calls],
    ['no CircuitOpenError without a breaker', a.failedFast === 0],
    ['calls failed during the outage, none after it', a.failed > 0 && (a.lastFailedStart ?? 0) < upAt],
  ];
  const breakerChecks = [
    [`fewer requests reached the backend than with the budget only (${b.requests} < ${a.requests})`, b.requests < a.requests],
    [`fewer during the outage, under half (${b.duringOutage} < ${a.duringOutage} / 2)`, b.duringOutage < a.duringOutage / 2],
    ['the circuit tripped after the backend died', b.trips >= 1 && (b.firstTripMs ?? -1) >= downAt],
    ['calls failed fast with CircuitOpenError', b.failedFast > 0],
    [`a probe closed the circuit after the backend recovered (+${Math.round(b.closedAtMs ?? NaN)} ms ≥ +${upAt} ms)`, b.closedAtMs !== null && b.closedAtMs >= upAt],
    // A probe may go 250 ms after each opening, so a closed circuit is
    // expected within ~260 ms of the recovery; the bound leaves room for a
    // loaded machine whose timers fire late.
    [`closed soon after the recovery (${Math.round((b.closedAtMs ?? NaN) - upAt)} ms; at most 1500)`, b.closedAtMs !== null && b.closedAtMs - upAt <= 1500],
    ['the circuit ends closed, keyed by the backend\'s origin', b.endState === 'closed' && b.keys.length === 1 && b.keys[0] === guarded.backend.origin],
    ['every call started after the circuit closed succeeded', guarded.calls.filter((x) => x.start >= (b.closedAtMs ?? Infinity)).every((x) => x.outcome === 'ok')],
  ];
  for (const [name, ok] of [...plainChecks, ...breakerChecks]) println(`    ${ok ? c.green('✓') : c.red('✗')} ${c.dim(name)}`);
  return [
    {
      id: 'breaker-budget-only',
      title: 'Dead-then-recovering backend, RetryBudget only',
      attempts: a.requests,
      outcome: `${a.succeeded} ok, ${a.failed} failed`,
      expectText: `≥ ${OUTAGE.calls} requests`,
      elapsed,
      checks: plainChecks,
      ok: plainChecks.every(([, ok]) => ok),
    },
    {
      id: 'breaker-circuit',
      title: 'Dead-then-recovering backend, RetryBudget + CircuitBreaker',
      attempts: b.requests,
      outcome: `${b.succeeded} ok, ${b.failed} failed (${b.failedFast} circuit-open)`,
      expectText: 'fewer requests, closed after recovery',
      elapsed,
      checks: breakerChecks,
      ok: breakerChecks.every(([, ok]) => ok),
      seen,
    },
  ];
}

// ── main ────────────────────────────────────────────────────────────────────

const server = await startFlakyServer();
const deadPort = await closedPort();

println(c.bold('retry-wasm demo: fetch against a deliberately flaky server'));
println(`  server   ${server.url}  ${c.dim('(embedded; nothing outside 127.0.0.1 is contacted)')}`);
println('  library  retry-wasm (Rust compiled to WebAssembly)');
println(c.dim('  Every attempt passes retryer.getAbortSignal() to fetch; timeouts and aborts cancel the request itself.'));

const results = [];
let fatal = null;
try {
  // Node loads its fetch implementation lazily on first use; do that here so
  // the first attempt's timing below is not the cost of loading undici.
  await (await fetch(`${server.url}/ok?key=warm-up`)).text();
  for (const sc of scenarios(server, deadPort)) results.push(await runScenario(sc));

  println();
  println(`${c.bold(c.cyan('■'))} ${c.bold('retryFetch(options): the same server through a fetch that retries')}`);
  println(c.dim("  It has fetch's signature and contract: resolves a Response (the last one when retries run out), rejects as fetch does."));
  for (const sc of fetchScenarios(server)) results.push(await runFetchScenario(sc));
  results.push(await hedgeScenario(server));

  println();
  println(`${c.bold(c.cyan('▶'))} ${c.bold('Retry storm: 20 clients against a backend that is down (always 503)')}`);
  println(c.dim('  Each client: maxAttempts 5, exponential 20 ms, jitter 0.5. ✗ = one request that failed.'));
  println();
  println(`  ${c.bold('Without a budget')} ${c.dim('(every client retries on its own)')}`);
  const free = await storm(server, { clients: 20, budget: undefined });
  const budget = new RetryBudget({ maxTokens: 10, tokenRatio: 0.1 });
  println();
  println(`  ${c.bold('With one shared RetryBudget({ maxTokens: 10, tokenRatio: 0.1 })')}`);
  println(c.dim('  Each failure costs a token, each success earns 0.1; retries stop once tokens fall to half (5).'));
  const limited = await storm(server, { clients: 20, budget });
  const tokens = typeof budget.tokens === 'number' ? budget.tokens : undefined;
  if (tokens !== undefined) println(`    budget tokens left: ${tokens}`);
  println();
  println(
    `  ${c.bold('⇒')} without a budget the dead backend took ${c.red(free.requests)} requests; with a shared budget only ${c.green(limited.requests)}` +
      ` ${c.dim(`(${Math.round((100 * limited.requests) / free.requests)}%): every client still tried once, but retries stopped early`)}`,
  );
  results.push({
    id: 'storm-no-budget',
    title: 'Retry storm, 20 clients, no budget',
    attempts: free.requests,
    outcome: `give-up:${Object.keys(free.reasons).join('+')} ×${Object.values(free.reasons).reduce((a, b) => a + b, 0)}`,
    expectText: '100 requests (20 × 5)',
    elapsed: free.elapsed,
    checks: [['20 × 5 = 100 requests', free.requests === 100], ['all gave up: attempts-exhausted', free.reasons['attempts-exhausted'] === 20]],
  });
  results.push({
    id: 'storm-budget',
    title: 'Retry storm, 20 clients, shared RetryBudget',
    attempts: limited.requests,
    outcome: Object.entries(limited.reasons).map(([k, v]) => `give-up:${k} ×${v}`).join(', '),
    expectText: '< 50 requests, budget-exhausted',
    elapsed: limited.elapsed,
    checks: [
      ['fewer than half the requests of the storm without a budget', limited.requests < free.requests / 2],
      ['every client still made its first request', limited.requests >= 20],
      ['clients gave up with budget-exhausted', (limited.reasons['budget-exhausted'] ?? 0) > 0],
    ],
  });
  for (const r of results.slice(-2)) r.ok = r.checks.every(([, ok]) => ok);

  results.push(...(await breakerScenario()));
} catch (error) {
  fatal = error;
  println(c.red(`demo failed: ${error?.stack ?? error}`));
} finally {
  await server.close();
}

// ── summary ─────────────────────────────────────────────────────────────────

println();
println(c.bold('Summary'));
table(
  ['scenario', 'attempts', 'outcome', 'expected', 'time', 'ok?'],
  results.map((r) => [
    r.id,
    String(r.attempts),
    r.outcome,
    r.expectText ?? `${r.expect.outcome} (${r.expect.attempts})`,
    ms(r.elapsed),
    r.ok ? c.green('✓') : c.red(`✗ ${r.checks.filter(([, ok]) => !ok).map(([n]) => n).join('; ')}`),
  ]),
);

// Nothing of ours may remain: let closed sockets finish, then look.
await new Promise((r) => setTimeout(r, 20));
const leftovers = process
  .getActiveResourcesInfo()
  .filter((t) => !['TTYWrap', 'PipeWrap', 'FSReqCallback', 'FileHandle'].includes(t));
// The watchdog above is unref'd and so not listed; anything else is a leak.
const passed = results.filter((r) => r.ok).length;
const elapsedMs = Math.round(performance.now() - demoStart);
const ok = !fatal && passed === results.length && results.length === 21 && leftovers.length === 0;
println();
println(
  `${ok ? c.green('✓') : c.red('✗')} ${passed}/${results.length} scenarios reached their expected outcome` +
    ` · server closed · ${leftovers.length ? c.red(`left behind: ${leftovers.join(', ')}`) : 'no sockets or timers left behind'} · ${(elapsedMs / 1000).toFixed(1)} s`,
);
println(
  `DEMO-RESULT ${JSON.stringify({
    ok,
    port: server.port,
    elapsedMs,
    leftovers,
    error: fatal ? String(fatal?.message ?? fatal) : undefined,
    scenarios: results.map((r) => ({
      id: r.id,
      ok: r.ok,
      attempts: r.attempts,
      outcome: r.outcome,
      expected: r.expect ?? r.expectText,
      failedChecks: r.checks.filter(([, ok]) => !ok).map(([n]) => n),
      seen: r.seen,
    })),
  })}`,
);
process.exitCode = ok ? 0 : 1;
