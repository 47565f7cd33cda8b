// retry-wasm for browsers, workers and bundlers (the "default" export
// condition): the lean engine, built without retryFetch, so a page pays
// only for what `retry-wasm` exports (retryFetch is in js/fetch.js). The
// module is embedded deflated, inflated with the standard
// DecompressionStream by a top-level await, and opened before anything is
// exported, so importing is all a user does. Types are in index.d.ts.
import base64 from '../pkg/lean/wasm-bytes.js';
import * as glue from './lean-engine.js';
import { inflate, loadError, needWebAssembly, open } from './doorway.js';

needWebAssembly();
const bytes = await inflate(base64).catch((e) => {
  throw loadError('inflating the embedded module with DecompressionStream failed', e);
});

export const { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, CircuitBreaker, CircuitOpenError, parseRetryAfter, useDiagnosticsChannel } = open(glue, bytes);
