// The ESM entry for Node, Deno and Bun: re-exports the CommonJS entry, so
// `import` and `require` share one engine instance (one AsyncRetryer class,
// one RetryBudget pool): no dual-package hazard, and no top-level await.
import api from '../pkg/index.cjs';

export const { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, parseRetryAfter, retryFetch, useDiagnosticsChannel } = api;
