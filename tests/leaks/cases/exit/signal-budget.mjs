// Flows with an outside signal and a shared RetryBudget (and 1-hour
// deadlines): success, give-up on an exhausted budget, and retries. After
// they settle nothing of theirs may keep the process alive.
import { AsyncRetryer, RetryBudget } from 'retry-wasm';
import { HOUR, expect, settled } from './common.mjs';

const t0 = performance.now();
const ac = new AbortController();
const budget = new RetryBudget({ maxTokens: 4, tokenRatio: 0.5 });
const reasons = [];
const opts = {
  signal: ac.signal,
  budget,
  maxExecutionTime: HOUR,
  maxTotalExecutionTime: HOUR,
  baseWait: 5,
  maxAttempts: 5,
  throwOnError: false,
  onGiveUp: (_e, reason) => reasons.push(reason),
};

const ok = new AsyncRetryer(async () => 'ok', opts);
expect((await ok.execute()) === 'ok', 'success path');

const failing = new AsyncRetryer(async () => {
  throw new Error('down');
}, opts);
expect((await failing.execute()) === undefined, 'failure path');
expect((await failing.execute()) === undefined, 'failure path (2)');
expect(reasons.includes('budget-exhausted'), `give-up reasons: [${reasons.join()}], expected a 'budget-exhausted'`);

await settled(t0, `success and failures with an outside signal and a RetryBudget (give-up reasons: ${reasons.join(', ')}; tokens left ${budget.tokens})`);
