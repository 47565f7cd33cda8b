// What the doorway takes of the full build's glue, by name (see
// lean-engine.js): the lean build's names, and retryFetch's.
export { initSync, AsyncRetryer, RetryBudget, CircuitBreaker, circuitOpenError, parseRetryAfter, useDiagnosticsChannel, _wire, _settled, _timer, _signal, _resolver, _rethrow, _fetched, retryFetch } from '../pkg/full/retry_wasm.js';
