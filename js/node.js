// `import 'retry-wasm'` in Node, Deno and Bun: the one engine, without
// retryFetch, which is `retry-wasm/fetch`'s.
export { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, CircuitBreaker, CircuitOpenError, parseRetryAfter, useDiagnosticsChannel } from './node-fetch.js';
