// Flows that end by cancellation, each with 1-hour deadlines configured and a
// 1-hour wait or a function that never settles: abort() mid-wait, the
// outside signal mid-wait, a 'new-execution', an execution timeout, a total
// timeout, and an AbortError rejection. Once they end, no timer remains.
import { AsyncRetryer } from 'retry-wasm';
import { HOUR, expect, settled } from './common.mjs';

const t0 = performance.now();
const never = () => new Promise(() => {});
const base = { maxExecutionTime: HOUR, maxTotalExecutionTime: HOUR, baseWait: HOUR, throwOnError: false };
const failing = async () => {
  throw new Error('x');
};
const waitThen = (r, action) => {
  r.setOptions({ onRetry: () => setTimeout(action, 5) });
};
const ends = [];

// abort() during a 1-hour wait.
const manual = new AsyncRetryer(failing, base);
waitThen(manual, () => manual.abort());
expect((await manual.execute()) === undefined, 'manual abort');
ends.push('manual abort mid-wait');

// The outside signal during a 1-hour wait.
const ac = new AbortController();
const bySignal = new AsyncRetryer(failing, { ...base, signal: ac.signal });
waitThen(bySignal, () => ac.abort());
expect((await bySignal.execute()) === undefined, 'signal abort');
ends.push('signal abort mid-wait');

// A new execution replaces a flow that never settles.
let first = true;
const renewed = new AsyncRetryer(() => (first ? ((first = false), never()) : 'second'), base);
const p1 = renewed.execute();
const p2 = renewed.execute();
expect((await p1) === undefined && (await p2) === 'second', 'new-execution');
ends.push('new-execution');

// Execution timeout (the function never settles), total deadline 1 hour.
const execTimeout = new AsyncRetryer(never, { ...base, maxExecutionTime: 10 });
expect((await execTimeout.execute()) === undefined, 'execution timeout');
ends.push('execution timeout');

// Total timeout while the function never settles.
const totalTimeout = new AsyncRetryer(never, { ...base, maxTotalExecutionTime: 10 });
expect((await totalTimeout.execute()) === undefined, 'total timeout');
ends.push('total timeout');

// Total timeout because a 1-hour wait would cross a 50 ms deadline.
const crossing = new AsyncRetryer(failing, { ...base, maxTotalExecutionTime: 50 });
expect((await crossing.execute()) === undefined, 'wait crossing the deadline');
ends.push('wait crossing the total deadline');

// The function rejects with an AbortError.
const cancelled = new AsyncRetryer(async () => {
  throw Object.assign(new Error('cancelled'), { name: 'AbortError' });
}, base);
expect((await cancelled.execute()) === undefined, 'AbortError rejection');
ends.push('AbortError rejection');

await settled(t0, ends.join(', '));
