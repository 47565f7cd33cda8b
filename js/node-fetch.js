// `import 'retry-wasm/fetch'` in Node, Deno and Bun: the one engine
// (pkg/engine.cjs, through js/require-fetch.cjs), shared with `require`.
import engine from './require-fetch.cjs';

export const { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, CircuitBreaker, CircuitOpenError, parseRetryAfter, retryFetch, useDiagnosticsChannel } = engine;
