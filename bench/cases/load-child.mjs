// Load case, one library per process:
//   node --expose-gc bench/cases/load-child.mjs <adapterId> [--flows=N] [--runs=N]
//
// FLOWS concurrent flows are started synchronously; each flow's function fails
// twice and then succeeds, with 1 ms constant waits (no jitter), i.e. 3
// attempts. Prints one JSON line: { id, wallMs: [...], heapStart,
// heapWaiting } (heap figures in bytes per pending flow) or { id, error }.
//
// Wall time: from just before the first flow is started to the moment all
// flows have settled (Promise.all), with a minor gc before (not during) each
// run; one full-size warm-up run first.
//
// Heap per pending flow: the flows' functions and the array that will hold
// the promises are allocated first and are part of the baseline; then gc(),
// baseline = heapUsed + external (external holds ArrayBuffers and WebAssembly
// memory, so wasm linear memory growth counts too); start all flows; gc();
// read again:
//   heapStart   right after the synchronous start loop (first attempt in flight)
//   heapWaiting after draining the microtask queue (64 turns, no macrotask, so
//               no 1 ms timer can fire yet): the first attempt has failed and
//               every flow is waiting for its retry timer
// Both divided by FLOWS. The heap run comes first in the process, after only a
// small warm-up (1% of the flows), because WebAssembly memory grows but never
// shrinks: a later run would reuse pages grown earlier and hide the wasm cost.
// Hence one heap sample per process; the parent runs each library's process
// more than once.

import { childSetup } from '../lib/child.mjs';
import { summarize } from '../lib/stats.mjs';

const { id, opt, emit, adapters } = await childSetup();
const FLOWS = opt('flows', 10_000);
const RUNS = opt('runs', 4);
const POLICY = { attempts: 3, waitMs: 1, failures: 2 };
const FAILURES = 2;
const TRANSIENT = new Error('transient failure (bench)');

const adapter = adapters.find((a) => a.id === id);
if (!adapter || !adapter.flowFactory) {
  emit({ id, error: `unknown load adapter ${id}` });
  process.exit(1);
}
const startFlow = adapter.flowFactory(POLICY);

function makeFns(count = FLOWS) {
  const fns = new Array(count);
  const counters = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    fns[i] = async () => {
      if (counters[i]++ < FAILURES) throw TRANSIENT;
      return i;
    };
  }
  return { fns, counters };
}

async function verify(promises, counters) {
  const results = await Promise.all(promises);
  for (let i = 0; i < promises.length; i++) {
    if (results[i] !== i) throw new Error(`flow ${i} resolved ${String(results[i])} instead of ${i}`);
    if (counters[i] !== FAILURES + 1) throw new Error(`flow ${i} made ${counters[i]} attempts instead of ${FAILURES + 1}`);
  }
}

const mem = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};

async function timedRun(count = FLOWS) {
  const { fns, counters } = makeFns(count);
  const promises = new Array(count).fill(undefined);
  gc({ type: 'minor' }); // not a full gc(): that flushes code and slows the run down
  const t0 = performance.now();
  for (let i = 0; i < count; i++) promises[i] = startFlow(fns[i]);
  await Promise.all(promises);
  const t1 = performance.now();
  await verify(promises, counters);
  return t1 - t0;
}

async function heapRun() {
  const { fns, counters } = makeFns();
  const promises = new Array(FLOWS).fill(undefined);
  gc();
  gc();
  const base = mem();
  for (let i = 0; i < FLOWS; i++) promises[i] = startFlow(fns[i]);
  gc();
  const start = mem();
  for (let i = 0; i < 64; i++) await null;
  gc();
  const waiting = mem();
  await verify(promises, counters);
  return { start: (start - base) / FLOWS, waiting: (waiting - base) / FLOWS };
}

try {
  await timedRun(Math.max(10, Math.ceil(FLOWS / 100))); // small warm-up
  const heap = await heapRun();
  await timedRun(); // full-size warm-up
  const wallMs = [];
  for (let r = 0; r < RUNS; r++) wallMs.push(await timedRun());
  emit({ id, flows: FLOWS, wallMs, heapStart: heap.start, heapWaiting: heap.waiting, summary: { wallMs: summarize(wallMs) } });
} catch (e) {
  emit({ id, error: String((e && e.stack) || e) });
  process.exit(1);
}
