// retry-wasm/fetch for browsers, workers and bundlers (the "default" export
// condition): the full engine, retryFetch included, and the whole API from
// it. A page that bundles this and `retry-wasm` as well loads both engines,
// and their shared objects (a RetryBudget) do not cross: import everything
// from here then. Loaded as js/index.js is. Types are in fetch.d.ts.
import base64 from '../pkg/full/wasm-bytes.js';
import * as glue from './full-engine.js';
import { inflate, loadError, needWebAssembly, open } from './doorway.js';
import { fetchOf } from './retry-fetch.js';

needWebAssembly();
const bytes = await inflate(base64).catch((e) => {
  throw loadError('inflating the embedded module with DecompressionStream failed', e);
});

export const { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, CircuitBreaker, CircuitOpenError, parseRetryAfter, retryFetch, useDiagnosticsChannel } = open(glue, bytes, fetchOf);
