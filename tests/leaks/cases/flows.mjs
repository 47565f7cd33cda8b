// Leak test 4: the engine's memory per concurrent flow. 10,000 flows start
// at once, one retryer each from one options object (as the bench's load
// case does); each flow fails twice, waiting 1 ms, then succeeds. The wasm
// memory the engine grows by, divided by the flows, must stay within
// PER_FLOW while the first attempts are in flight and while every flow
// waits for its retry timer: a retryer's slot is 192 B (its state read in
// place, no mirror beside it; the effect payloads in one shared window),
// its policy is shared, and a flow with no callbacks queues no steps
// outside the slot. (Before those, the same flows took 269, 384, 512 and
// 640 B.) Wasm memory grows in 64 KiB pages, so the figure is exact to ~7 B
// per flow.
import { AsyncRetryer } from 'retry-wasm';
import { check, report, settle, wasmBytes } from './lib.mjs';

const FLOWS = Number(process.env.LEAKS_FLOWS ?? 10_000);
const PER_FLOW = 240;
const TRANSIENT = new Error('transient (leak test)');
const options = { maxAttempts: 3, backoff: 'fixed', baseWait: 1 };

function start(count) {
  const failures = new Int32Array(count);
  const promises = new Array(count);
  for (let i = 0; i < count; i++) {
    const fn = async () => {
      if (failures[i]++ < 2) throw TRANSIENT;
      return i;
    };
    promises[i] = new AsyncRetryer(fn, options).execute();
  }
  return { promises, failures };
}

async function finish({ promises, failures }) {
  const results = await Promise.all(promises);
  results.forEach((v, i) => check(v === i && failures[i] === 3, `flow ${i} resolved ${v} after ${failures[i]} attempts`));
}

// A small warm-up: the engine's first pages, the template slot.
await finish(start(100));
await settle();
const before = wasmBytes();
check(!Number.isNaN(before), 'the engine memory cannot be read');

const run = start(FLOWS);
const started = (wasmBytes() - before) / FLOWS;
// Microtask turns only: every first attempt fails, no timer can fire yet.
for (let i = 0; i < 64; i++) await null;
const waiting = (wasmBytes() - before) / FLOWS;
await finish(run);

const figures = { flows: FLOWS, started, waiting, perFlowLimit: PER_FLOW };
const ok = started <= PER_FLOW && waiting <= PER_FLOW;
console.log(`  engine memory per flow: started ${started.toFixed(0)} B, waiting ${waiting.toFixed(0)} B (limit ${PER_FLOW} B)`);
report(
  `engine memory per concurrent flow (${FLOWS.toLocaleString('en-US')} flows)`,
  ok,
  figures,
  `started ${started.toFixed(0)} B, waiting ${waiting.toFixed(0)} B per flow (limit ${PER_FLOW} B)`,
);
