// The entry for Cloudflare Workers (the `workerd` export condition). workerd
// compiles no WebAssembly from bytes at run time; its bundlers hand a .wasm
// import over as a compiled WebAssembly.Module, which the doorway
// instantiates synchronously. Nothing else runs at global scope: no timer,
// random value or I/O (the engine seeds its jitter on first use).
import module from '../pkg/retry_wasm.wasm';
import { open } from './doorway.js';

open(module);

export { asyncRetry, AsyncRetryer, asyncRetryerOptions, RetryBudget, parseRetryAfter, retryFetch, useDiagnosticsChannel } from './doorway.js';
