// Leak test 3: one outside AbortSignal serves 10,000 sequential flows of
// every ending (success, success after a retry, failure after retries, an
// AbortError rejection, a real timer wait, a 'new-execution' abort, execution
// and total timeouts, short-lived retryers from asyncRetry) and the last flow
// is aborted through the signal mid-wait. No listener may stay on the
// signal: after every flow, and at the end. A side case swaps the signal
// with setOptions() mid-flow. Checked with getEventListeners (node:events).
import { getEventListeners } from 'node:events';
import { AsyncRetryer, asyncRetry } from 'retry-wasm';
import { check, report, turn } from './lib.mjs';

const FLOWS = Number(process.env.LEAKS_SIGNAL_FLOWS ?? 10_000);
const ac = new AbortController();
const signal = ac.signal;
const listeners = (s = signal) => getEventListeners(s, 'abort').length;

const never = () => new Promise(() => {});
const abortError = () => Object.assign(new Error('cancelled'), { name: 'AbortError' });

let tries = 0;
/** fn(mode): what one attempt does; `mode` may be a per-flow { mode, n } record. */
function attempt(m) {
  tries++;
  const mode = typeof m === 'string' ? m : m.mode;
  const n = typeof m === 'string' ? 1 : ++m.n;
  switch (mode) {
    case 'ok': return Promise.resolve('ok');
    case 'fail': return Promise.reject({ failed: tries });
    case 'fail-once': return n === 1 ? Promise.reject({ failed: tries }) : Promise.resolve('ok');
    case 'abort-error': return Promise.reject(abortError());
    case 'sync-throw': throw { thrown: tries };
    case 'never': return never();
    default: throw new Error(`unknown mode ${mode}`);
  }
}

const base = { signal, throwOnError: false, maxAttempts: 3, baseWait: 0 };
const main = new AsyncRetryer(attempt, base);
const waiting = new AsyncRetryer(attempt, { ...base, baseWait: 1 });
const execTimeout = new AsyncRetryer(attempt, { ...base, maxExecutionTime: 1 });
const totalTimeout = new AsyncRetryer(attempt, { ...base, maxTotalExecutionTime: 2 });

let maxDuring = 0;
let leftAfter = 0;
let firstLeft = -1;
const endings = {};
const t0 = performance.now();

const EXPECTED = {
  ok: 'ok', 'fail-once': 'ok', 'timer-wait': 'ok', asyncRetry: 'ok', 'new-execution': [undefined, 'ok'],
  fail: undefined, 'abort-error': undefined, 'sync-throw': undefined, 'execution-timeout': undefined, 'total-timeout': undefined,
};

/** Runs one flow; checks its outcome, the listener count during it (sanity) and after. */
async function flow(i, start) {
  const [kind, p] = start();
  // The retryer listens while a flow is active; a 0 here would make the
  // after-check meaningless.
  maxDuring = Math.max(maxDuring, listeners());
  const value = await p;
  check(JSON.stringify(value) === JSON.stringify(EXPECTED[kind]), `flow ${i} (${kind}) resolved ${JSON.stringify(value)}`);
  endings[kind] = (endings[kind] ?? 0) + 1;
  const n = listeners();
  if (n !== 0) {
    leftAfter = Math.max(leftAfter, n);
    if (firstLeft < 0) firstLeft = i;
  }
}

for (let i = 0; i < FLOWS - 1; i++) {
  await flow(i, () => {
    if (i % 1000 === 1) return ['execution-timeout', execTimeout.execute('never')];
    if (i % 1000 === 2) return ['total-timeout', totalTimeout.execute('never')];
    if (i % 500 === 3) {
      // 'new-execution': a second execute() aborts the first flow.
      const first = main.execute('never');
      const second = main.execute('ok');
      return ['new-execution', Promise.all([first, second])];
    }
    if (i % 100 === 4) return ['timer-wait', waiting.execute({ mode: 'fail-once', n: 0 })];
    if (i % 50 === 5) return ['asyncRetry', asyncRetry(attempt, base)({ mode: 'fail-once', n: 0 })];
    const modes = ['ok', 'fail', 'fail-once', 'abort-error', 'sync-throw'];
    const mode = modes[i % modes.length];
    return [mode, main.execute({ mode, n: 0 })];
  });
  if (i % 1000 === 999) await turn();
}

// The last flow: fails once, then is aborted through the signal during its wait.
const aborts = [];
const last = new AsyncRetryer(attempt, {
  ...base,
  baseWait: 60_000,
  onAbort: (reason) => aborts.push(reason),
});
let inWait;
const waitStarted = new Promise((r) => (inWait = r));
const p = last.execute('fail');
last.setOptions({ onRetry: () => setTimeout(inWait, 5) });
await waitStarted;
const duringWait = listeners();
check(last.store.state.isExecuting && last.store.state.status === 'retrying', `last flow is not waiting: ${JSON.stringify(last.store.state)}`);
ac.abort(new Error('outside abort'));
const lastValue = await p;
check(lastValue === undefined, `signal-aborted flow resolved ${JSON.stringify(lastValue)}`);
check(aborts.join() === 'signal', `onAbort reasons for the last flow: [${aborts.join()}], expected [signal]`);
endings['signal-abort-mid-wait'] = 1;
const afterAbort = listeners();
// Already aborted: resolves at once without calling fn, adds nothing.
const triesBefore = tries;
check((await main.execute('ok')) === undefined && tries === triesBefore, 'execute() with an aborted signal called fn or resolved a value');
const afterAbortedStart = listeners();

// Side case: the signal swapped with setOptions() while a flow listens to
// the old one; then a new execution with the new one; then both settle.
const a = new AbortController();
const b = new AbortController();
const swap = new AsyncRetryer(attempt, { ...base, signal: a.signal, baseWait: 5 });
const s1 = swap.execute({ mode: 'fail-once', n: 0 });
swap.setOptions({ signal: b.signal });
const s2 = swap.execute({ mode: 'fail-once', n: 0 });
await Promise.all([s1, s2]);
await swap.execute('fail');
const swapLeft = { a: listeners(a.signal), b: listeners(b.signal) };

const secs = (performance.now() - t0) / 1000;
const final = listeners();
console.log(`flows: ${FLOWS.toLocaleString('en-US')} on one signal; endings ${JSON.stringify(endings)}`);
console.log(`listeners on the signal: at most ${maxDuring} during a flow, ${duringWait} during the last wait, most left after a flow ${leftAfter}${firstLeft >= 0 ? ` (first at flow ${firstLeft})` : ''}, ${afterAbort} after the signal abort, ${afterAbortedStart} after an execute() on the aborted signal, ${final} at the end`);
console.log(`setOptions signal swap: listeners left on old ${swapLeft.a}, on new ${swapLeft.b}`);

const ok = maxDuring >= 1 && duringWait === 1 && leftAfter === 0 && afterAbort === 0 && afterAbortedStart === 0 && final === 0 && swapLeft.a === 0 && swapLeft.b === 0;
report(
  `outside AbortSignal over ${FLOWS.toLocaleString('en-US')} flows`,
  ok,
  { flows: FLOWS, maxDuring, duringWait, leftAfterAnyFlow: leftAfter, firstFlowLeavingOne: firstLeft, afterAbort, final, swapLeft, endings, secs: Number(secs.toFixed(1)) },
  `listeners left: ${final} at the end, at most ${leftAfter} after any flow, ${afterAbort} after the mid-wait abort (${duringWait} during it); swap old/new ${swapLeft.a}/${swapLeft.b}; ${secs.toFixed(1)} s`,
);
