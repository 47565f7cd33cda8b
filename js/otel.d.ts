// Types of retry-wasm/otel, the OpenTelemetry adapter. It needs
// @opentelemetry/api (1.x), an optional peer dependency of retry-wasm.
import type { MeterProvider, TracerProvider } from '@opentelemetry/api';

/** Where `instrumentRetries` records; each defaults to OpenTelemetry's global provider. */
export interface InstrumentRetriesOptions {
  /** Makes the `retry` and `retry attempt <n>` spans. @default the global tracer provider (`trace.getTracer`) */
  tracerProvider?: TracerProvider;
  /** Makes the `retry.attempts` and `retry.circuit.transitions` counters and the `retry.duration` histogram. @default the global meter provider (`metrics.getMeter`) */
  meterProvider?: MeterProvider;
}

/**
 * Records every retry flow (each `execute()`, `asyncRetry` call and
 * `retryFetch` call) as OpenTelemetry spans and metrics, from the engine's
 * tracing channels (`retry-wasm:execute`, `retry-wasm:attempt`,
 * `retry-wasm:backoff`, `retry-wasm:breaker`):
 *
 * - a span per flow, `retry <key>` (or `retry`), a child of the context
 *   active when the flow started, with `retry.attempts`, and `retry.reason`
 *   when it did not succeed; ERROR status when it rejected;
 * - a child span per attempt, `retry attempt <n>`, with `retry.attempt`,
 *   `retry.hedged`, and on `retryFetch` attempts after the first
 *   `http.request.resend_count`; active while the function runs, so the
 *   attempt's own I/O (undici's HTTP spans) is its child. A failed attempt
 *   has ERROR status, the exception recorded and `error.type` (an attempt
 *   a circuit breaker refused: `CircuitOpenError`); one the
 *   engine aborted (a losing hedge, an abort, a deadline) has
 *   `retry.aborted: true`;
 * - the counter `retry.attempts` (`{attempt}`, by `retry.outcome`:
 *   `success`, `failure`, `aborted`) and the histogram `retry.duration`
 *   (`s`, per flow, by `retry.outcome` and `retry.reason`);
 * - the counter `retry.circuit.transitions` (`{transition}`), one per change
 *   of a `CircuitBreaker`'s circuit, by `retry.circuit.state`: the state
 *   entered (`open`, `half-open`, `closed`, `isolated`).
 *
 * Where the host has no `node:diagnostics_channel` (browsers), it installs
 * its own channels in the engine. Returns the function that stops it (flows
 * still running then have their spans ended).
 */
export declare function instrumentRetries(options?: InstrumentRetriesOptions): () => void;
