// Reproduces the V8 abort the README describes under "set async context up
// before the first retried call": the process's first
// AsyncLocalStorage.run() happens inside a call the engine makes, after the
// code calling into the engine was optimized.
//
//   node repro.mjs <mode>
//
//   late-store  100,000 awaited `asyncRetry` calls (the warm-up), then a
//               store bound on `retry-wasm:attempt`'s start (an APM that
//               loads late), then 10,000 calls more: the first run() is
//               the engine's `runStores` around the attempt
//   late-run    the same warm-up, then the retried function itself calls
//               run() for the first time
//   startup     the README's advice: one run() at startup, before the
//               first retried call; then as late-store
//   early       the store bound before the first call; then as late-store
//
// On a line where V8 aborts, the process dies by a signal after printing
// "Fatal error ... unreachable code" and a native stack through
// Deoptimizer::DoComputeBuiltinContinuation. Otherwise it prints one line
// `REPRO {json}` (the mode, the calls made, the calls after the store was
// bound whose function saw the store) and exits 0; any wrong result is an
// exception (exit 1).
import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import { asyncRetry } from 'retry-wasm';

const MODES = ['late-store', 'late-run', 'startup', 'early'];
const mode = process.argv[2];
if (!MODES.includes(mode)) throw new Error(`mode must be one of ${MODES.join(', ')}, not ${mode}`);

const ROUNDS = 200;
const PER_ROUND = 500;
const AFTER = 20;

const current = new AsyncLocalStorage();
const bind = () => dc.tracingChannel('retry-wasm:attempt').start.bindStore(current, (ctx) => ({ attempt: ctx.attempt }));
let runInside = false;
let saw = 0;

if (mode === 'startup') new AsyncLocalStorage().run(0, () => {});
if (mode === 'early') bind();

const call = asyncRetry(
  async () => {
    if (runInside) return current.run({ attempt: 1 }, () => (current.getStore()?.attempt === 1 ? (saw++, 42) : 42));
    if (current.getStore()?.attempt === 1) saw++;
    return 42;
  },
  { maxAttempts: 3, backoff: 'fixed', baseWait: 0 },
);

// A function called again and again, so that the engine optimizes it with
// the call into the engine's glue and WebAssembly inlined.
async function loop(n) {
  let sum = 0;
  for (let i = 0; i < n; i++) sum += await call();
  return sum;
}

let calls = 0;
async function rounds(n) {
  for (let k = 0; k < n; k++) {
    const sum = await loop(PER_ROUND);
    if (sum !== 42 * PER_ROUND) throw new Error(`a round of ${PER_ROUND} calls summed to ${sum}`);
    calls += PER_ROUND;
    // Turns of the event loop now and then, so that the optimizing
    // compiler's background thread gets to install its code on a busy machine.
    if (k % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

await rounds(ROUNDS);
const before = saw;
if (mode === 'late-run') runInside = true;
else if (mode !== 'early') bind();
await rounds(AFTER);
const after = saw - before;
if (after !== AFTER * PER_ROUND) throw new Error(`${after} of the ${AFTER * PER_ROUND} calls after the store was bound saw it`);
console.log(`REPRO ${JSON.stringify({ mode, node: process.version, calls, sawStore: after })}`);
