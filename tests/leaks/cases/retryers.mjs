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
//   node --expose-gc retryers.mjs crowd       first a crowd: references dropped
//                                             and no gc() in the loop, only an
//                                             event-loop turn every 1,000 (an
//                                             app doing I/O), so only the host's
//                                             own collections free them. Until
//                                             the host finalizes a dead retryer
//                                             its engine memory stays taken, and
//                                             how many wait at once is the
//                                             host's choice (V8 collects less
//                                             often as it runs, so a second
//                                             crowd can peak higher). The case
//                                             checks what the engine controls:
//                                             the host freed them along the way,
//                                             every one is freed once collected,
//                                             and the memory comes back: 200,000
//                                             more with a gc() every BATCH start
//                                             from the crowd's mark and stay
//                                             within LIMIT of it.
import { AsyncRetryer } from 'retry-wasm';
import { MB, check, describe, dispose, fmtDelta, heldSlots, memoryChange, report, settle, snapshot, turn, wasmBytes } from './lib.mjs';

const variant = process.argv[2];
check(['dispose', 'finalizer', 'crowd'].includes(variant), `usage: retryers.mjs dispose|finalizer|crowd (got ${variant})`);
const N = Number(process.env.LEAKS_RETRYERS ?? 200_000);
const WARMUP = variant === 'crowd' ? N : 20_000;
const BATCH = 2_000;
const CROWD_TURN = 1_000;
const LIMIT = 2 * MB;
// Crowd retryers the host has finalized, counted by a registry of the
// test's own (it runs its callbacks in the same collections as the
// engine's).
let finalized = 0;
const watch = new FinalizationRegistry(() => finalized++);

const fn = async (i) => i;

/**
 * Runs `count` retryers, none held past its iteration. `crowd`: each is
 * watched, no gc(), and it returns the most that waited for the finalizer
 * at once.
 */
async function run(count, offset, crowd = false) {
  let peak = 0;
  for (let i = 0; i < count; i++) {
    const r = new AsyncRetryer(fn, { maxExecutionTime: 60_000 });
    if (crowd) watch.register(r, undefined);
    const v = await r.execute(offset + i);
    if (v !== offset + i) throw new Error(`retryer ${offset + i} resolved ${JSON.stringify(v)}`);
    if (variant === 'dispose') r[dispose]();
    if (crowd) {
      if ((i + 1) % CROWD_TURN === 0) {
        await turn();
        peak = Math.max(peak, i + 1 - finalized);
      }
    } else if ((i + 1) % BATCH === 0) {
      if (variant !== 'dispose') globalThis.gc();
      await turn();
    }
  }
  return peak;
}

const name = `200k short-lived retryers (${{ dispose: 'Symbol.dispose', finalizer: 'finalizer only', crowd: 'after a crowd with no gc in the loop' }[variant]})`;
const t0 = performance.now();
const base = wasmBytes();
const peak = await run(WARMUP, 0, variant === 'crowd');
await settle();
const unfinalized = variant === 'crowd' ? WARMUP - finalized : 0;
const start = snapshot();
const slotsBefore = heldSlots();
console.log(describe(`after ${WARMUP.toLocaleString('en-US')} ${variant === 'crowd' ? 'crowd' : 'warm-up'} retryers`, start));
console.log(`  engine value table: ${slotsBefore} slots`);
if (variant === 'crowd') {
  const per = peak > 0 ? `, ${Math.round((start.wasm - base) / peak)} B of wasm memory each` : '';
  console.log(`  crowd: at most ${peak.toLocaleString('en-US')} waited for the finalizer at once${per}; ${unfinalized} after the final gc`);
}

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
// crowd: the host freed retryers during the crowd (fewer than half waited at
// once), a collection freed all of them (a few may still wait for their
// callback task), and the memory they held was reused.
const crowdOk = variant !== 'crowd' || (peak <= WARMUP / 2 && unfinalized <= 8);
const ok = delta <= LIMIT && slotsOk && crowdOk;
report(
  name,
  ok,
  {
    retryers: N,
    ...change,
    heldSlotsBefore: slotsBefore,
    heldSlotsAfter: slotsAfter,
    ...(variant === 'crowd' ? { crowdPeak: peak, crowdUnfinalized: unfinalized } : {}),
    secs: Number(secs.toFixed(1)),
  },
  `${fmtDelta(delta)} over ${N.toLocaleString('en-US')} retryers (limit +${LIMIT / MB} MB${variant === 'crowd' ? `; crowd peak ${peak.toLocaleString('en-US')} unfinalized (limit ${(WARMUP / 2).toLocaleString('en-US')}), ${unfinalized} after gc (limit 8)` : ''}); heap ${fmtDelta(change.heapDelta)}, wasm ${start.wasm} -> ${end.wasm} B; engine value table ${slotsBefore} -> ${slotsAfter} slots; ${secs.toFixed(1)} s`,
);
