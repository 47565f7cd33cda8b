// Breaker case, the client process:
//   node bench/cases/breaker-child.mjs --port=N [--runs=N]
//
// The server runs in the parent (bench/cases/breaker.mjs) on
// 127.0.0.1:<port>. For each run, each configuration of BREAKER_CONFIGS in
// turn (the order rotated by one each run) gets a new function (a new
// breaker, a new budget), starts its schedule on the server (/__start/<id>)
// (its backend recovering at upAtOf(run), the same for every configuration
// of a run) and sends OUTAGE.calls GETs to /o/<id>, one started every OUTAGE.everyMs
// whatever the earlier ones are doing. Every call's outcome is kept: a 200
// read to the end, a failure (the last 503, or an error), or a failure
// without a request (the breaker refused its last attempt:
// CircuitOpenError, BrokenCircuitError).
//
// Prints one JSON line: { samples: { [id]: [{ requests, duringOutage,
// succeeded, failed, failedFast, recoverMs, serverRecoverMs, opened, wallMs
// }] }, errors: { [id]: message } }, { skipped: why } or { error }.

import { circuitBreaker, ExponentialBackoff, handleAll, noJitterGenerator, retry, SamplingBreaker, wrap, BrokenCircuitError } from 'cockatiel';
import { control as controlRequest } from '../lib/listen.mjs';
import { emit, opt } from '../lib/child-io.mjs';
import { loadRetryWasm } from '../lib/retry-wasm.mjs';
import { BREAKER_CONFIGS, OUTAGE, POLICY, upAtOf } from './breaker.mjs';

const PORT = opt('port', 0);
const RUNS = opt('runs', 5);
const BASE = `http://127.0.0.1:${PORT}`;
const control = (path) => controlRequest(BASE, path);

const rw = await loadRetryWasm('retry-wasm/fetch');
if (!rw.mod) {
  emit({ error: `retry-wasm not available: ${rw.error}` });
  process.exit(0);
}
// A package built before the breaker: nothing to compare, not a failure.
if (typeof rw.mod.CircuitBreaker !== 'function') {
  emit({ skipped: `the retry-wasm at ${rw.path} has no CircuitBreaker` });
  process.exit(0);
}
const { retryFetch, CircuitBreaker, CircuitOpenError, RetryBudget } = rw.mod;

// retryFetch's default statusCodes: the responses both sides count as failures.
const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);

/** A failing response as an error, so cockatiel's policies see a failure. */
class HttpStatusError extends Error {
  constructor(status) {
    super(`HTTP ${status}`);
    this.status = status;
  }
}

/**
 * A new caller for configuration `id`: { call(url) -> Promise<'ok' |
 * 'failed' | 'fast'>, opened() -> times the circuit opened, free() }.
 */
function makeCaller(id) {
  let opened = 0;
  if (id === 'cockatiel') {
    const breaker = circuitBreaker(handleAll, {
      halfOpenAfter: POLICY.breakMs,
      // minimumRps × duration: at least POLICY.minimumThroughput calls in the window.
      breaker: new SamplingBreaker({ threshold: POLICY.failureRatio, duration: POLICY.samplingMs, minimumRps: POLICY.minimumThroughput / (POLICY.samplingMs / 1000) }),
    });
    breaker.onBreak(() => opened++);
    // maxAttempts counts retries in cockatiel.
    const policy = wrap(
      retry(handleAll, { maxAttempts: POLICY.attempts - 1, backoff: new ExponentialBackoff({ initialDelay: POLICY.baseWaitMs, maxDelay: 30_000, generator: noJitterGenerator }) }),
      breaker,
    );
    const call = async (url) => {
      try {
        await policy.execute(async ({ signal }) => {
          const r = await fetch(url, { signal });
          if (RETRY_STATUS.has(r.status)) {
            await r.body?.cancel();
            throw new HttpStatusError(r.status);
          }
          await r.text();
          return r.status;
        });
        return 'ok';
      } catch (error) {
        return error instanceof BrokenCircuitError ? 'fast' : 'failed';
      }
    };
    return { call, opened: () => opened, free() {} };
  }
  const breaker =
    id === 'rw-none'
      ? undefined
      : new CircuitBreaker({
          failureRatio: POLICY.failureRatio,
          minimumThroughput: POLICY.minimumThroughput,
          samplingDuration: POLICY.samplingMs,
          breakDuration: POLICY.breakMs,
          onStateChange: ({ to }) => {
            if (to === 'open') opened++;
          },
        });
  const budget = id === 'rw-breaker-budget' ? new RetryBudget({ maxTokens: 10, tokenRatio: 0.1 }) : undefined;
  const f = retryFetch({
    maxAttempts: POLICY.attempts,
    backoff: 'exponential',
    baseWait: POLICY.baseWaitMs,
    jitter: 0,
    ...(breaker ? { breaker } : {}),
    ...(budget ? { budget } : {}),
  });
  const call = async (url) => {
    try {
      const r = await f(url);
      await r.text();
      return r.ok ? 'ok' : 'failed';
    } catch (error) {
      return error instanceof CircuitOpenError ? 'fast' : 'failed';
    }
  };
  return {
    call,
    opened: () => opened,
    free() {
      breaker?.free();
      budget?.free();
    },
  };
}

/** One configuration's run: the figures of its calls and of its server counters. */
async function measure(id, upAtMs) {
  const caller = makeCaller(id);
  const url = `${BASE}/o/${id}`;
  const sent = performance.now();
  await control(`/__start/${id}?up=${upAtMs}`);
  // The server's clock started when it received the request: about halfway.
  const t0 = (sent + performance.now()) / 2;
  const calls = await Promise.all(
    Array.from({ length: OUTAGE.calls }, async (_, i) => {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, t0 + i * OUTAGE.everyMs - performance.now())));
      const start = performance.now() - t0;
      const outcome = await caller.call(url);
      return { start, end: performance.now() - t0, outcome };
    }),
  );
  const wallMs = Math.max(...calls.map((c) => c.end));
  caller.free();
  let server = await control(`/__count/${id}`);
  for (let i = 0; i < 50 && server.open > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    server = await control(`/__count/${id}`);
  }
  const firstOk = Math.min(...calls.filter((c) => c.outcome === 'ok' && c.end >= upAtMs).map((c) => c.end));
  const figures = {
    requests: server.requests,
    duringOutage: server.failed,
    succeeded: calls.filter((c) => c.outcome === 'ok').length,
    failed: calls.filter((c) => c.outcome !== 'ok').length,
    failedFast: calls.filter((c) => c.outcome === 'fast').length,
    upAtMs,
    recoverMs: Number.isFinite(firstOk) ? firstOk - upAtMs : null,
    serverRecoverMs: server.firstOkAfterUpMs,
    opened: caller.opened(),
    wallMs,
  };
  // Half a second after the recovery every circuit here has had its probe
  // (breaks are 250 ms), so a call started then that fails is a misbehaviour.
  const late = calls.filter((c) => c.start >= upAtMs + 500 && c.outcome !== 'ok');
  const problems = [];
  if (late.length) problems.push(`${late.length} calls started 500 ms or more after the recovery failed`);
  if (server.open > 0) problems.push(`${server.open} responses still open on the server after the run`);
  if (figures.recoverMs === null) problems.push('no call succeeded after the recovery');
  return { figures, error: problems.length ? problems.join('; ') : undefined };
}

try {
  // One call through each function first, so no run pays for loading
  // undici or compiling the paths it takes.
  for (const { id } of BREAKER_CONFIGS) {
    const caller = makeCaller(id);
    await control(`/__start/${id}`);
    await caller.call(`${BASE}/o/${id}`);
    caller.free();
  }
  const samples = Object.fromEntries(BREAKER_CONFIGS.map((c) => [c.id, []]));
  const errors = {};
  for (let r = 0; r < RUNS; r++) {
    const k = r % BREAKER_CONFIGS.length;
    for (const { id } of [...BREAKER_CONFIGS.slice(k), ...BREAKER_CONFIGS.slice(0, k)]) {
      const { figures, error } = await measure(id, upAtOf(r));
      samples[id].push(figures);
      if (error) errors[id] = `run ${r + 1}: ${error}`;
    }
  }
  emit({ samples, errors });
} catch (e) {
  emit({ error: String(e?.stack ?? e) });
}
