// retry-wasm: retries with backoff, deadlines, Retry-After, retry budgets and
// AbortSignal, decided by a Rust engine compiled to WebAssembly.
import { AsyncRetryer } from './front/retryer.js';

export { AsyncRetryer } from './front/retryer.js';
export { RetryBudget } from './front/budget.js';
export { parseRetryAfter } from './front/retry-after.js';

/**
 * Wraps `fn` in a retryer and returns its bound `execute`: overlapping calls
 * share one retryer, so a new call aborts the previous flow.
 */
export function asyncRetry(fn, initialOptions) {
  return new AsyncRetryer(fn, initialOptions).execute;
}

/** Returns `options` unchanged, typed, for sharing between retryers. */
export function asyncRetryerOptions(options) {
  return options;
}
