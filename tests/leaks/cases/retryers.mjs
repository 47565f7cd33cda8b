// Leak test 2: 200,000 short-lived retryers, each executing once, leave
// memory within LIMIT of where it started, and the engine holds no retryer
// of theirs afterwards.
//
//   node --expose-gc retryers.mjs dispose     freed by retryer[Symbol.dispose]()
//   node --expose-gc retryers.mjs finalizer   references dropped; freed by the
//                                             FinalizationRegistry (gc() and an
//                                             event-loop turn every BATCH)
//   node --expose-gc retryers.mjs crowd       references dropped, and no gc()
//                                             in the loop, only an event-loop
//                                             turn every 1,000 (an app doing
//                                             I/O): idle retryers are parked,
//                                             so the engine never holds more
//                                             than PEAK_LIMIT at a time
import { AsyncRetryer } from 'retry-wasm';
import { MB, check, describe, dispose, fmtDelta, liveHandles, memoryChange, report, settle, snapshot, turn } from './lib.mjs';

const variant = process.argv[2];
check(['dispose', 'finalizer', 'crowd'].includes(variant), `usage: retryers.mjs dispose|finalizer|crowd (got ${variant})`);
const N = Number(process.env.LEAKS_RETRYERS ?? 200_000);
const WARMUP = 20_000;
const BATCH = variant === 'crowd' ? 1_000 : 2_000;
// The front parks idle retryers above 512 attached ones; a batch adds at
// most one busy retryer at a time on top.
const PEAK_LIMIT = 1_024;
const LIMIT = 2 * MB;

const fn = async (i) => i;
let peakLive = 0;

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
      if (variant !== 'dispose') peakLive = Math.max(peakLive, liveHandles());
      if (variant === 'finalizer') globalThis.gc();
      await turn();
    }
  }
}

const name = `200k short-lived retryers (${{ dispose: 'Symbol.dispose', finalizer: 'finalizer only', crowd: 'no gc in the loop' }[variant]})`;
const t0 = performance.now();
const liveAtStart = liveHandles();
await run(WARMUP, 0);
await settle();
const start = snapshot();
const liveBefore = liveHandles();
console.log(describe(`after ${WARMUP.toLocaleString('en-US')} warm-up retryers`, start));
console.log(`  engine retryers alive: ${liveBefore} (before warm-up: ${liveAtStart})`);
peakLive = 0;

await run(N, WARMUP);
await settle(10);
const end = snapshot();
const liveAfter = liveHandles({ limit: WARMUP + N + 1_000 });
const secs = (performance.now() - t0) / 1000;
console.log(describe(`after ${N.toLocaleString('en-US')} more retryers, final gc`, end));
console.log(`  engine retryers alive: ${liveAfter}${variant !== 'dispose' ? `; most alive at a batch boundary: ${peakLive}` : ''}`);

const change = memoryChange(start, end);
const { delta } = change;
const leftover = liveAfter - liveBefore;
const ok = delta <= LIMIT && !(leftover > 0) && !(variant === 'crowd' && !(peakLive <= PEAK_LIMIT));
report(
  name,
  ok,
  {
    retryers: N,
    ...change,
    engineRetryersBefore: liveBefore,
    engineRetryersAfter: liveAfter,
    ...(variant !== 'dispose' ? { peakEngineRetryers: peakLive } : {}),
    secs: Number(secs.toFixed(1)),
  },
  `${fmtDelta(delta)} over ${N.toLocaleString('en-US')} retryers (limit +${LIMIT / MB} MB); heap ${fmtDelta(change.heapDelta)}, wasm ${start.wasm} -> ${end.wasm} B; engine retryers alive ${liveBefore} -> ${liveAfter}${variant === 'crowd' ? `, at most ${peakLive} in the loop (limit ${PEAK_LIMIT})` : ''}; ${secs.toFixed(1)} s`,
);
