// Leak test 2: 200,000 short-lived retryers, each executing once, leave
// memory (JS heap + wasm memory) within LIMIT of where it started, and the
// engine's table of JavaScript values does not grow with them: the engine
// keeps no value of an idle retryer but a weak reference, and nothing of a
// freed one.
//
//   node --expose-gc retryers.mjs dispose     freed by retryer[Symbol.dispose]()
//   node --expose-gc retryers.mjs finalizer   references dropped; freed by the
//                                             FinalizationRegistry (gc() and an
//                                             event-loop turn every BATCH)
//   node --expose-gc retryers.mjs crowd       references dropped, and no gc()
//                                             in the loop, only an event-loop
//                                             turn every 1,000 (an app doing
//                                             I/O): the host's own collections
//                                             free them. Until the host finalizes
//                                             a dead retryer its engine memory
//                                             stays taken, so the warm-up is
//                                             N retryers too: the second N
//                                             must reuse that memory, not add.
import { AsyncRetryer } from 'retry-wasm';
import { MB, check, describe, dispose, fmtDelta, heldSlots, memoryChange, report, settle, snapshot, turn } from './lib.mjs';

const variant = process.argv[2];
check(['dispose', 'finalizer', 'crowd'].includes(variant), `usage: retryers.mjs dispose|finalizer|crowd (got ${variant})`);
const N = Number(process.env.LEAKS_RETRYERS ?? 200_000);
const WARMUP = variant === 'crowd' ? N : 20_000;
const BATCH = variant === 'crowd' ? 1_000 : 2_000;
const LIMIT = 2 * MB;

const fn = async (i) => i;

async function run(count, offset) {
  for (let i = 0; i < count; i++) {
    if (variant === 'dispose') {
      const r = new AsyncRetryer(fn, { maxExecutionTime: 60_000 });
      const v = await r.execute(offset + i);
      if (v !== offset + i) throw new Error(`retryer ${offset + i} resolved ${JSON.stringify(v)}`);
      r[dispose]();
    } else {
      // No reference survives this block.
      const v = await new AsyncRetryer(fn, { maxExecutionTime: 60_000 }).execute(offset + i);
      if (v !== offset + i) throw new Error(`retryer ${offset + i} resolved ${JSON.stringify(v)}`);
    }
    if ((i + 1) % BATCH === 0) {
      if (variant === 'finalizer') globalThis.gc();
      await turn();
    }
  }
}

const name = `200k short-lived retryers (${{ dispose: 'Symbol.dispose', finalizer: 'finalizer only', crowd: 'no gc in the loop' }[variant]})`;
const t0 = performance.now();
await run(WARMUP, 0);
await settle();
const start = snapshot();
const slotsBefore = heldSlots();
console.log(describe(`after ${WARMUP.toLocaleString('en-US')} warm-up retryers`, start));
console.log(`  engine value table: ${slotsBefore} slots`);

await run(N, WARMUP);
await settle(10);
const end = snapshot();
const slotsAfter = heldSlots();
const secs = (performance.now() - t0) / 1000;
console.log(describe(`after ${N.toLocaleString('en-US')} more retryers, final gc`, end));
console.log(`  engine value table: ${slotsAfter} slots`);

const change = memoryChange(start, end);
const { delta } = change;
// Growth by a few hundred slots is noise from when finalizers happen to
// run; a leak of one value per retryer would be 200,000.
const slotsOk = slotsAfter - slotsBefore <= 1_024;
// crowd: the engine memory of retryers the host has not finalized yet is a
// high-water mark set by when the host collects, different each round; the
// second round must reuse it (a leak would add as much again), and the JS
// heap must come back.
const wasmGrowth = end.wasm - start.wasm;
const ok = variant === 'crowd'
  ? change.heapDelta <= LIMIT && wasmGrowth <= start.wasm / 4 && slotsOk
  : delta <= LIMIT && slotsOk;
report(
  name,
  ok,
  {
    retryers: N,
    ...change,
    heldSlotsBefore: slotsBefore,
    heldSlotsAfter: slotsAfter,
    secs: Number(secs.toFixed(1)),
  },
  `${fmtDelta(delta)} over ${N.toLocaleString('en-US')} retryers (limit +${LIMIT / MB} MB${variant === 'crowd' ? ' of heap, wasm growth <= 1/4 of the warm-up high-water mark' : ''}); heap ${fmtDelta(change.heapDelta)}, wasm ${start.wasm} -> ${end.wasm} B; engine value table ${slotsBefore} -> ${slotsAfter} slots; ${secs.toFixed(1)} s`,
);
