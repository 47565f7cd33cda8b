// Memory-retention case, one library per process:
//   node --expose-gc bench/cases/memory-child.mjs <adapterId> [--executions=N] [--retryers=N]
//
// Two scenarios on the success path (attempts 3, no waits):
//   executions  one wrapper (for retry-wasm: one asyncRetry retryer) called
//               sequentially N times (default 1,000,000)
//   retryers    N short-lived wrappers (for retry-wasm: N `new AsyncRetryer`
//               via asyncRetry), each called once and dropped (default 200,000)
// Each scenario: warm up (1% of N), settle, baseline; run; settle; read again.
// "Settle" = gc(), a macrotask turn (so FinalizationRegistry callbacks, which
// free wasm-side objects of collected wrappers, can run), gc() again, a few
// times. Memory = heapUsed + external (external includes WebAssembly memory).
// Prints one JSON line { id, executions: {n, deltaBytes, ...}, retryers: {...} }.
// A scenario projected (from its warm-up) to exceed --time-cap-ms (12 s) runs
// fewer iterations and says so (reduced: true).
// The retry-wasm target (issue 5): each delta within 2 MB (2,097,152 B).

import { childSetup } from '../lib/child.mjs';

const { id, opt, emit, adapters } = await childSetup();
const EXECUTIONS = opt('executions', 1_000_000);
const RETRYERS = opt('retryers', 200_000);
const POLICY = { attempts: 3, waitMs: 0, failures: 0 };

const adapter = adapters.find((a) => a.id === id);
if (!adapter) {
  emit({ id, error: `unknown adapter ${id}` });
  process.exit(1);
}

const fn = async () => 42;
const mem = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};
const turn = () => new Promise((r) => setTimeout(r, 5));
async function settle() {
  for (let i = 0; i < 4; i++) {
    gc();
    await turn();
  }
  gc();
  return mem();
}

// Both loops yield one macrotask turn every YIELD_EVERY iterations, as an app
// doing I/O would: without it, no FinalizationRegistry callback can run during
// the loop, and a library whose wrappers own wasm-side state would be judged
// on a peak that no real program reaches.
const YIELD_EVERY = 1000;
const macrotask = () => new Promise((r) => setImmediate(r));

async function executions(n) {
  const call = adapter.wrap(fn, POLICY);
  for (let i = 0; i < n; i++) {
    if ((await call()) !== 42) throw new Error('wrong result');
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await macrotask();
  }
}

async function retryers(n) {
  for (let i = 0; i < n; i++) {
    if ((await adapter.wrap(fn, POLICY)()) !== 42) throw new Error('wrong result');
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await macrotask();
  }
}

// Keeps the whole bench short: if the warm-up projects a scenario to run
// longer than TIME_CAP_MS, N is reduced (and reported as such).
const TIME_CAP_MS = opt('time-cap-ms', 12_000);

async function scenario(run, requested) {
  const warm = Math.max(100, Math.ceil(requested / 100));
  const w0 = performance.now();
  await run(warm);
  const msPerOp = (performance.now() - w0) / warm;
  const n = Math.min(requested, Math.max(warm, Math.floor(TIME_CAP_MS / msPerOp)));
  const base = await settle();
  const t0 = performance.now();
  await run(n);
  const ms = performance.now() - t0;
  const after = await settle();
  return { n, requested, reduced: n < requested, deltaBytes: after - base, ms: Math.round(ms) };
}

try {
  const e = await scenario(executions, EXECUTIONS);
  const r = await scenario(retryers, RETRYERS);
  emit({ id, executions: e, retryers: r });
} catch (err) {
  emit({ id, error: String((err && err.stack) || err) });
  process.exit(1);
}
