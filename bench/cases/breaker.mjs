// Breaker case orchestrator: a local node:http backend that dies and
// recovers on a schedule, in this process, and one client process
// (bench/cases/breaker-child.mjs) that sends the same stream of calls
// through retry-wasm's retryFetch with a CircuitBreaker (alone and with a
// RetryBudget beside it), through cockatiel's circuit breaker wrapped in its
// retry policy, and through retryFetch with no breaker as the reference.
//
// The server, on 127.0.0.1 (an ephemeral port, keep-alive), keeps one
// schedule and one set of counters per configuration (the configuration's
// id is the last path segment). GET /__start/<id> starts that
// configuration's clock and clears its counters; from then on GET /o/<id>
// answers a 200 until OUTAGE.downAtMs, a 503 (no Retry-After) until the
// recovery (`?up=<ms>` of /__start, default OUTAGE.upAtMs), and a 200 again
// afterwards, whatever the client does.
// /__count/<id> returns the counters; the two controls are not counted.

import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { runNodeChild } from '../lib/child.mjs';
import { listenLocal } from '../lib/listen.mjs';
import { summarize } from '../lib/stats.mjs';

const CHILD = fileURLToPath(new URL('./breaker-child.mjs', import.meta.url));

/**
 * The schedule every configuration meets: `calls` calls, one started every
 * `everyMs` (each without waiting for the others, as independent requests
 * to a service arrive), against a backend that answers until `downAtMs`,
 * fails every request until `upAtMs` plus the run's shift, and answers
 * again afterwards. The shift (`upShiftMs` times the run's number modulo
 * `upShifts`) moves the recovery across a break's length, run by run, so the
 * time to recover is not one phase of the probes' rhythm repeated: without
 * jitter, a breaker's openings fall at the same moments in every run.
 */
export const OUTAGE = { calls: 550, everyMs: 4, downAtMs: 300, upAtMs: 1300, upShiftMs: 50, upShifts: 5 };

/** When run `r` (0-based) has its backend recover, ms after its start. */
export const upAtOf = (r) => OUTAGE.upAtMs + (r % OUTAGE.upShifts) * OUTAGE.upShiftMs;

/**
 * One policy for every configuration, each in its own option names:
 * 3 attempts in all, exponential backoff from 50 ms (×2), no jitter; a
 * circuit that opens when at least half of at least 10 attempts in the last
 * second failed, stays open 250 ms, then lets one probe through.
 */
export const POLICY = { attempts: 3, baseWaitMs: 50, failureRatio: 0.5, minimumThroughput: 10, samplingMs: 1000, breakMs: 250 };

export const BREAKER_CONFIGS = [
  {
    id: 'rw-none',
    label: 'retry-wasm retryFetch, no breaker (reference)',
    code: "retryFetch({ maxAttempts: 3, backoff: 'exponential', baseWait: 50, jitter: 0 })",
  },
  {
    id: 'rw-breaker',
    label: 'retry-wasm retryFetch + CircuitBreaker',
    code: "retryFetch({ maxAttempts: 3, backoff: 'exponential', baseWait: 50, jitter: 0, breaker: new CircuitBreaker({ failureRatio: 0.5, minimumThroughput: 10, samplingDuration: 1000, breakDuration: 250 }) })",
  },
  {
    id: 'rw-breaker-budget',
    label: 'retry-wasm retryFetch + CircuitBreaker + RetryBudget',
    code: 'the same, and budget: new RetryBudget({ maxTokens: 10, tokenRatio: 0.1 })',
  },
  {
    id: 'cockatiel',
    label: 'cockatiel 3.2.1 wrap(retry, circuitBreaker)',
    code: 'wrap(retry(handleAll, { maxAttempts: 2, backoff: new ExponentialBackoff({ initialDelay: 50, generator: noJitterGenerator }) }), circuitBreaker(handleAll, { halfOpenAfter: 250, breaker: new SamplingBreaker({ threshold: 0.5, duration: 1000, minimumRps: 10 }) }))',
  },
];

/** Starts the outage server; resolves to { port, close() }. */
export async function startOutageServer({ downAtMs = OUTAGE.downAtMs } = {}) {
  const configs = new Map();
  const of = (id) => {
    let c = configs.get(id);
    if (!c) configs.set(id, (c = fresh()));
    return c;
  };
  const fresh = (upAtMs = OUTAGE.upAtMs) => ({ t0: null, upAtMs, requests: 0, failed: 0, ok: 0, firstOkAfterUpMs: null, open: 0 });
  const send = (res, status, body) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const url = new URL(req.url, 'http://x');
    const slash = url.pathname.lastIndexOf('/');
    const path = url.pathname.slice(0, slash);
    const id = url.pathname.slice(slash + 1);
    switch (path) {
      case '/o': {
        const c = of(id);
        const t = c.t0 === null ? 0 : performance.now() - c.t0;
        c.requests++;
        c.open++;
        res.on('close', () => c.open--);
        if (c.t0 !== null && t >= downAtMs && t < c.upAtMs) {
          c.failed++;
          return send(res, 503, '{"error":"backend down"}');
        }
        c.ok++;
        if (c.t0 !== null && t >= c.upAtMs && c.firstOkAfterUpMs === null) c.firstOkAfterUpMs = t - c.upAtMs;
        return send(res, 200, '{"ok":true}');
      }
      case '/__start': {
        const c = fresh(url.searchParams.has('up') ? Number(url.searchParams.get('up')) : undefined);
        configs.set(id, c);
        c.t0 = performance.now();
        return send(res, 200, '{}');
      }
      case '/__count': {
        const { t0, upAtMs, ...counts } = of(id);
        return send(res, 200, JSON.stringify(counts));
      }
      default:
        return send(res, 404, '"not found"');
    }
  });
  return listenLocal(server);
}

/**
 * Runs the client process; returns { outage, policy, configs, runs,
 * results: { [id]: { requests, duringOutage, succeeded, failed,
 * failedFast, recoverMs, serverRecoverMs, opened, wallMs } each summarized
 * over runs }, samples: { [id]: [per run] }, errors: { [id]: message },
 * skipped (why, when the package has no CircuitBreaker) }.
 */
export async function runBreakerCase({ runs = 5, log = () => {} } = {}) {
  const server = await startOutageServer();
  let out;
  try {
    out = await runNodeChild(CHILD, [`--port=${server.port}`, `--runs=${runs}`], 'breaker');
  } finally {
    await server.close();
  }
  if (out.skipped) log(`  breaker: skipped, ${out.skipped}`);
  const errors = { ...(out.errors ?? {}) };
  if (out.error) {
    errors.breaker = out.error;
    log(`  ! breaker: ${out.error.split('\n')[0]}`);
  }
  const results = {};
  const samples = out.samples ?? {};
  for (const [id, list] of Object.entries(samples)) {
    if (!list.length) continue;
    const pick = (k) => summarize(list.map((r) => r[k]).filter((x) => x != null));
    results[id] = Object.fromEntries(
      ['requests', 'duringOutage', 'succeeded', 'failed', 'failedFast', 'recoverMs', 'serverRecoverMs', 'opened', 'wallMs'].map((k) => [k, pick(k)]),
    );
  }
  return { outage: OUTAGE, policy: POLICY, configs: BREAKER_CONFIGS, runs, results, samples, errors, skipped: out.skipped };
}
