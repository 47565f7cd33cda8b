// Hedge case, the client process:
//   node bench/cases/hedge-child.mjs --port=N [--requests=N] [--warmup=N]
//
// The server runs in the parent (bench/cases/hedge.mjs) on 127.0.0.1:<port>:
// GET /t/<id> answers in FAST_MS, except every SLOW_EVERY-th request of <id>,
// which takes SLOW_MS. For each configuration of HEDGE_CONFIGS, one
// `retryFetch(options)` sends REQUESTS GETs to /t/<id> one after another (the
// next when the previous body has been read), each timed with
// performance.now() from the call to its body. The configurations run side
// by side, at the same time, each on its own server counter, so a burst of
// load elsewhere on the machine hits both; first a warm-up of WARMUP
// requests each, then the counters are reset. After the run every response
// must have been a 200 with TAIL_BODY, and the server must have no response
// open (a losing hedge's connection was released).
//
// Prints one JSON line: { results: { [id]: { latencies: [...], wallMs, hedges,
// server: { requests, slow, closedEarly, open }, error? } } } or { error }.

import { control as controlRequest } from '../lib/listen.mjs';
import { emit, opt } from '../lib/child-io.mjs';
import { loadRetryWasm } from '../lib/retry-wasm.mjs';
import { HEDGE_CONFIGS, TAIL_BODY } from './hedge.mjs';

const PORT = opt('port', 0);
const REQUESTS = opt('requests', 2000);
const WARMUP = opt('warmup', 40);
const BASE = `http://127.0.0.1:${PORT}`;

// Control requests, on a connection of their own (see listen.mjs).
const control = (path) => controlRequest(BASE, path);

const rw = await loadRetryWasm('retry-wasm/fetch');
if (!rw.mod) {
  emit({ error: `retry-wasm not available: ${rw.error}` });
  process.exit(0);
}
const { retryFetch } = rw.mod;

/** Sends `n` sequential GETs through `call`; their latencies in ms. */
async function send(call, id, n) {
  const url = `${BASE}/t/${id}`;
  const latencies = new Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await call(url);
    const body = await r.text();
    latencies[i] = performance.now() - t0;
    if (r.status !== 200 || body !== TAIL_BODY) throw new Error(`${id}: request ${i + 1} got ${r.status} ${body.slice(0, 60)}`);
  }
  return latencies;
}

async function measure({ id, options }) {
  let hedges = 0;
  const call = retryFetch({ ...options, onHedge: options.hedge != null ? () => hedges++ : undefined });
  await send(call, id, WARMUP);
  await control(`/__reset/${id}`);
  hedges = 0;
  const t0 = performance.now();
  const latencies = await send(call, id, REQUESTS);
  const wallMs = performance.now() - t0;
  // A losing hedge's connection is closed by the time its call settled, or
  // within a few ms of it: give the server that long.
  let server = await control(`/__count/${id}`);
  for (let i = 0; i < 50 && server.open > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    server = await control(`/__count/${id}`);
  }
  const error = server.open > 0 ? `${server.open} responses still open on the server after the run` : undefined;
  return { latencies, wallMs, hedges, server, error };
}

try {
  const all = await Promise.all(HEDGE_CONFIGS.map(measure));
  emit({ results: Object.fromEntries(HEDGE_CONFIGS.map((c, i) => [c.id, all[i]])) });
} catch (e) {
  emit({ error: String(e?.stack ?? e) });
}
