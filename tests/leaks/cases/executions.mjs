// Leak test 1: 1,000,000 sequential executions on one retryer keep memory
// flat (JS heap + wasm memory within LIMIT of the figure after warm-up), and
// the engine's table of JavaScript values does not grow.
//
//   node --expose-gc executions.mjs success     every attempt succeeds
//   node --expose-gc executions.mjs fail-once   each flow fails once (a fresh
//                                               rejected object), baseWait 0,
//                                               then succeeds
import { AsyncRetryer } from 'retry-wasm';
import { MB, check, fmtDelta, report, steady } from './lib.mjs';

const variant = process.argv[2];
check(variant === 'success' || variant === 'fail-once', `usage: executions.mjs success|fail-once (got ${variant})`);
const N = Number(process.env.LEAKS_EXECUTIONS ?? 1_000_000);
const WARMUP = 50_000;
const CHECKPOINTS = 4;
const LIMIT = 2 * MB;

let calls = 0;
const fn = variant === 'success'
  ? async (i) => i
  : (i) => (calls++ % 2 === 0 ? Promise.reject({ failed: i }) : Promise.resolve(i));
const retryer = new AsyncRetryer(fn, variant === 'success' ? {} : { baseWait: 0, maxAttempts: 2 });

async function run(count, offset) {
  for (let i = 0; i < count; i++) {
    const v = await retryer.execute(offset + i);
    if (v !== offset + i) throw new Error(`execution ${offset + i} resolved ${JSON.stringify(v)}`);
  }
}

const name = `1M executions, one retryer (${variant})`;
const m = await steady(run, { warmup: WARMUP, total: N, parts: CHECKPOINTS, unit: 'executions' });

const state = retryer.store.state;
check(state.executionCount === WARMUP + N, `executionCount ${state.executionCount}, expected ${WARMUP + N}`);
check(state.isExecuting === false, 'the retryer still shows a flow');
if (variant === 'fail-once') check(calls === 2 * (WARMUP + N), `fn called ${calls} times, expected ${2 * (WARMUP + N)}`);

const { delta } = m.change;
const ok = delta <= LIMIT && m.slotsKept;
report(
  name,
  ok,
  { executions: N, ...m.figures },
  `${fmtDelta(delta)} over ${N.toLocaleString('en-US')} executions (limit +${LIMIT / MB} MB); ${m.tail}`,
);
