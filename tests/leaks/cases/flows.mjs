// Leak test 4: the engine's memory per concurrent flow. 10,000 flows start
// at once, one retryer each from one options object (as the bench's load
// case does); each flow fails twice, waiting 1 ms, then succeeds. The wasm
// memory the engine grows by, divided by the flows, must stay within
// PER_FLOW while the first attempts are in flight and while every flow
// waits for its retry timer: the retryer (its machine, policy and the
// handles of its JavaScript objects) and the flow's record. Wasm memory
// grows in 64 KiB pages, so the figure is exact to ~7 B per flow.
import { AsyncRetryer } from 'retry-wasm';
import { check, report, settle, wasmBytes } from './lib.mjs';

const FLOWS = Number(process.env.LEAKS_FLOWS ?? 10_000);
const PER_FLOW = 768;
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

// A small warm-up: the engine's first pages.
await finish(start(100));
await settle();
const before = wasmBytes();

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
