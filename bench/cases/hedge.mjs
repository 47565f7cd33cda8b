// Hedge case orchestrator: a local node:http server with a slow tail in
// this process, and one client process (bench/cases/hedge-child.mjs) that
// sends sequential GETs through `retryFetch` with and without `hedge`, so
// the server's work and its timers are not on the client's thread.
//
// The server, on 127.0.0.1 (an ephemeral port, keep-alive), counts each
// configuration's requests apart (the configuration's id is the last path
// segment; a counter per configuration, reset by the client before the
// timed run): GET /t/<id> answers a 200 with TAIL_BODY after FAST_MS, except
// every SLOW_EVERY-th request of that counter, which answers after SLOW_MS
// (deterministic: the same sequence whatever the client does). A response
// whose client goes away first (an aborted hedge) is counted as closed
// early. /__reset/<id> and /__count/<id> are the client's controls and are
// not counted.

import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { runNodeChild } from '../lib/child.mjs';
import { listenLocal } from '../lib/listen.mjs';

const CHILD = fileURLToPath(new URL('./hedge-child.mjs', import.meta.url));

/** The server's tail: every SLOW_EVERY-th request takes SLOW_MS, the others FAST_MS. */
export const TAIL = { fastMs: 5, slowMs: 800, slowEvery: 20 };
export const TAIL_BODY = '{"ok":true}';

/**
 * The two configurations measured: `retryFetch(options)` of each. The
 * hedged one sends a second attempt 40 ms after the first when the first
 * has not answered (8x the usual answer, 1/20 of the slow one).
 */
export const HEDGE_CONFIGS = [
  { id: 'plain', label: 'retryFetch({ maxAttempts: 3 })', options: { maxAttempts: 3 } },
  { id: 'hedged', label: 'retryFetch({ maxAttempts: 3, hedge: 40 })', options: { maxAttempts: 3, hedge: 40 } },
];

/** Starts the tail server; resolves to { port, close() }. */
export async function startTailServer({ fastMs = TAIL.fastMs, slowMs = TAIL.slowMs, slowEvery = TAIL.slowEvery } = {}) {
  const counts = new Map();
  const of = (id) => {
    let c = counts.get(id);
    if (!c) counts.set(id, (c = { requests: 0, slow: 0, closedEarly: 0, open: 0 }));
    return c;
  };
  const send = (res, status, body) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const slash = req.url.lastIndexOf('/');
    const path = req.url.slice(0, slash);
    const c = of(req.url.slice(slash + 1));
    switch (path) {
      case '/t': {
        const n = ++c.requests;
        const slow = n % slowEvery === 0;
        if (slow) c.slow++;
        c.open++;
        const timer = setTimeout(() => send(res, 200, TAIL_BODY), slow ? slowMs : fastMs);
        res.on('close', () => {
          c.open--;
          if (!res.writableFinished) {
            c.closedEarly++;
            clearTimeout(timer);
          }
        });
        return;
      }
      case '/__reset':
        c.requests = c.slow = c.closedEarly = 0;
        send(res, 200, '{}');
        return;
      case '/__count':
        send(res, 200, JSON.stringify(c));
        return;
      default:
        send(res, 404, '"not found"');
    }
  });
  return listenLocal(server);
}

/** The nearest-rank percentile `p` (0..1) of sorted `s`. */
export function percentile(s, p) {
  if (!s.length) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
}

/** p50, p90, p99, p99.9, max and mean of latencies in ms. */
export function latencySummary(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  return { n: s.length, p50: percentile(s, 0.5), p90: percentile(s, 0.9), p99: percentile(s, 0.99), p999: percentile(s, 0.999), max: s[s.length - 1], mean };
}

/**
 * Returns { requests, tail, configs: [{ id, label, options }], results: {
 * [id]: { latency: summary, serverRequests, requestsPerCall, hedges,
 * closedEarly, openAfter, wallMs } }, samples: { [id]: [ms per call] },
 * errors: { [id]: message } }.
 */
export async function runHedgeCase({ requests = 2000, warmup = 40, log = () => {} } = {}) {
  const server = await startTailServer();
  let out;
  try {
    out = await runNodeChild(CHILD, [`--port=${server.port}`, `--requests=${requests}`, `--warmup=${warmup}`], 'retry-wasm');
  } finally {
    await server.close();
  }
  const errors = {};
  const results = {};
  const samples = {};
  if (out.error) {
    errors['retry-wasm'] = out.error;
    log(`  ! hedge: ${out.error.split('\n')[0]}`);
  }
  for (const [id, r] of Object.entries(out.results ?? {})) {
    samples[id] = r.latencies;
    results[id] = {
      latency: latencySummary(r.latencies),
      serverRequests: r.server.requests,
      requestsPerCall: r.server.requests / r.latencies.length,
      slowAnswers: r.server.slow,
      hedges: r.hedges,
      closedEarly: r.server.closedEarly,
      openAfter: r.server.open,
      wallMs: r.wallMs,
    };
    if (r.error) errors[id] = r.error;
  }
  return { requests, tail: TAIL, configs: HEDGE_CONFIGS, results, samples, errors };
}
