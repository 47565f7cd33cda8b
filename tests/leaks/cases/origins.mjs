// Leak test: one CircuitBreaker behind retryFetch, in a server that calls
// a new origin with every request (webhooks, say), for as long as it runs
// (SPEC §2e, docs/SPEC.md's third choice: past 64 keys an idle circuit
// gives its place). 100,000 calls, each to an origin never called before,
// keep memory flat (JS heap + wasm memory within LIMIT of the figure after
// warm-up) and the breaker at no more than 64 circuits plus those whose
// window still holds a call.
//
// The fetch answers 200 at once, and the clock moves 4 s per call (the
// breaker reads Date.now(), replaced here), so an origin's circuit is idle
// 30 s (the default window) after its call: at most 8 are not. The loop
// collects every GC_EVERY calls: what it measures is the breaker, not how
// many dead calls wait for their finalizers.
import { CircuitBreaker, retryFetch } from 'retry-wasm/fetch';
import { MB, check, describe, fmtDelta, heldSlots, inSteps, memoryChange, report, settle, snapshot } from './lib.mjs';

const N = Number(process.env.LEAKS_ORIGINS ?? 100_000);
const WARMUP = 20_000;
const CHECKPOINTS = 4;
const LIMIT = 2 * MB;
const STEP = 4_000;
const MOST = 64 + Math.ceil(30_000 / STEP);
const GC_EVERY = 5_000;

let clock = Date.now();
Date.now = () => clock;

const breaker = new CircuitBreaker();
const call = retryFetch({ breaker, fetch: async () => new Response('ok') });
let most = 0;

async function run(count, offset) {
  for (let i = 0; i < count; i++) {
    clock += STEP;
    const res = await call(`https://origin-${offset + i}.test/hook`);
    if (res.status !== 200) throw new Error(`call ${offset + i}: ${res.status}`);
    await res.arrayBuffer();
    if ((offset + i) % 1_000 === 0) most = Math.max(most, Object.keys(breaker.snapshot()).length);
    if ((i + 1) % GC_EVERY === 0) await settle(1);
  }
}

const name = `${N.toLocaleString('en-US')} origins through one CircuitBreaker (retryFetch)`;
const t0 = performance.now();
await run(WARMUP, 0);
await settle();
const start = snapshot();
const slotsBefore = heldSlots();
console.log(describe(`after ${WARMUP.toLocaleString('en-US')} warm-up calls`, start));

const trend = await inSteps(run, { total: N, offset: WARMUP, start, parts: CHECKPOINTS, more: () => `; circuits ${Object.keys(breaker.snapshot()).length}` });
await settle();
const end = snapshot();
const secs = (performance.now() - t0) / 1000;
console.log(describe(`after ${N.toLocaleString('en-US')} more calls`, end));

const keys = Object.keys(breaker.snapshot());
check(keys.includes(`https://origin-${WARMUP + N - 1}.test`), 'the last origin has no circuit');
const change = memoryChange(start, end);
const { delta } = change;
const slotsAfter = heldSlots();
const ok = delta <= LIMIT && slotsAfter === slotsBefore && most <= MOST;
report(
  name,
  ok,
  { calls: N, ...change, trend, mostCircuits: most, heldSlotsBefore: slotsBefore, heldSlotsAfter: slotsAfter, secs: Number(secs.toFixed(1)) },
  `${fmtDelta(delta)} over ${N.toLocaleString('en-US')} calls, each to a new origin (limit +${LIMIT / MB} MB); at most ${most} circuits (limit ${MOST}); heap ${fmtDelta(change.heapDelta)}, wasm ${start.wasm} -> ${end.wasm} B; engine value table ${slotsBefore} -> ${slotsAfter} slots; ${secs.toFixed(1)} s`,
);
