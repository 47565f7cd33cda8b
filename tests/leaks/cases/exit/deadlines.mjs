// A success and a failure (throwOnError false), both with 1-hour deadlines:
// once they settle, no timer of theirs may keep the process alive.
import { AsyncRetryer } from 'retry-wasm';
import { HOUR, expect, settled } from './common.mjs';

const t0 = performance.now();
const deadlines = { maxExecutionTime: HOUR, maxTotalExecutionTime: HOUR };

const ok = new AsyncRetryer(async (x) => x * 2, deadlines);
expect((await ok.execute(21)) === 42, 'success path did not resolve 42');

let calls = 0;
const failing = new AsyncRetryer(
  async () => {
    calls++;
    throw new Error('always');
  },
  { ...deadlines, throwOnError: false, maxAttempts: 3, baseWait: 5 },
);
expect((await failing.execute()) === undefined && calls === 3, `failure path: ${calls} calls`);

// The same, through asyncRetry, and a success after one real wait.
let n = 0;
const flaky = (await import('retry-wasm')).asyncRetry(async () => (n++ === 0 ? Promise.reject(new Error('once')) : 'ok'), {
  ...deadlines,
  baseWait: 5,
});
expect((await flaky()) === 'ok', 'retry-then-success path');

await settled(t0, 'success, failure (throwOnError false) and retry-then-success with 1 h deadlines');
