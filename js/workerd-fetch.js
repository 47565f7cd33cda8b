// `retry-wasm/fetch` on Cloudflare Workers (the `workerd` export
// condition), and the one engine `retry-wasm` there re-exports
// (js/workerd.js). workerd compiles no WebAssembly from bytes at run time;
// its bundlers hand a .wasm import over as a compiled WebAssembly.Module,
// which the doorway instantiates synchronously. Nothing else runs at
// global scope: no timer, random value or I/O (the engine seeds its jitter
// on first use).
import module from '../pkg/full/retry_wasm.wasm';
import * as glue from './full-engine.js';
import { open } from './doorway.js';
import { fetchOf } from './retry-fetch.js';

export const { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, CircuitBreaker, CircuitOpenError, parseRetryAfter, retryFetch, useDiagnosticsChannel } = open(glue, module, fetchOf);
