// retry-wasm: retries with backoff, deadlines, Retry-After, retry budgets and
// AbortSignal, decided by a Rust engine compiled to WebAssembly.
export { AsyncRetryer, asyncRetry } from './front/retryer.js';
export { RetryBudget } from './front/budget.js';
export { parseRetryAfter } from './front/retry-after.js';

/** Returns `options` unchanged, typed, for sharing between retryers. */
export function asyncRetryerOptions(options) {
  return options;
}
