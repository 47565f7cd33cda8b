// `retry-wasm` on Cloudflare Workers: the one engine of js/workerd-fetch.js,
// without retryFetch.
export { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, CircuitBreaker, CircuitOpenError, parseRetryAfter, useDiagnosticsChannel } from './workerd-fetch.js';
