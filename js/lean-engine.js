// What the doorway takes of the lean build's glue, by name. Importing the
// glue's whole namespace would keep its async loader (`__wbg_init`, which
// no entry uses) in every bundle: 463 B of the gzipped download (2-core
// dev machine, 2026-12-06).
export { initSync, AsyncRetryer, RetryBudget, CircuitBreaker, circuitOpenError, parseRetryAfter, useDiagnosticsChannel, _wire, _settled, _timer, _signal, _resolver, _rethrow } from '../pkg/lean/retry_wasm.js';
