// Types of `retry-wasm/fetch`: the whole API of `retry-wasm` (index.d.ts)
// and `retryFetch`, which only this entry exports.
import type { AsyncRetryer, AsyncRetryerOptions, CircuitBreaker } from './index.js';

export * from './index.js';

/**
 * Options of `retryFetch`: every `AsyncRetryer` option but `throwOnError`,
 * and the HTTP ones.
 */
export interface RetryFetchOptions extends Omit<AsyncRetryerOptions<typeof fetch>, 'throwOnError' | 'hedge'> {
  /**
   * Hedged attempts, for `GET`, `HEAD` and `OPTIONS` calls with no body or
   * one that replays (not a stream), whose method `methods` allows: attempt
   * n+1 is sent this many ms after attempt n while the earlier ones keep
   * running, until one succeeds or `maxAttempts` have been sent; the first
   * response that is not a failing status wins, and every other attempt's
   * signal aborts and its body is cancelled. Other calls of the function
   * (writes, one-shot bodies) retry as usual, and with `beforeRetry` set no
   * call hedges. A function is asked after each start.
   * @default undefined (one attempt at a time)
   */
  hedge?: number | ((attempt: number, retryer: AsyncRetryer<typeof fetch>) => number);
  /**
   * A circuit breaker shared by many calls and retryers, with one circuit
   * per origin (`new URL(url).origin` of the request), so a dead host does
   * not stop calls to the others. Every attempt asks for a permit before it
   * is sent. A response whose status is not in `statusCodes` (a `404`
   * too) is a success; a status in `statusCodes`, retried or not, and a
   * network error are failures; an attempt the caller aborts or a hedge
   * beat records nothing. After a refusal the next attempt waits the
   * circuit's `retryAfter`, within `maxRetryAfter`; a call whose last
   * attempt was refused rejects with the `CircuitOpenError`.
   * @default undefined (no breaker)
   */
  breaker?: CircuitBreaker;
  /** Methods sent again; POST and PATCH also when the request has an `Idempotency-Key` header. @default ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'] */
  methods?: readonly string[];
  /** Statuses that make an attempt fail (then retried, or returned when retries run out). @default [408, 429, 500, 502, 503, 504] */
  statusCodes?: readonly number[];
  /** Statuses whose server hint sets the wait: `Retry-After` (delta-seconds or HTTP-date), else `RateLimit-Reset` (delta-seconds), else `X-RateLimit-Reset` (seconds, or a Unix time above 10^9). @default [413, 429, 503] */
  afterStatusCodes?: readonly number[];
  /** The longest wait a server hint may ask for, in ms; the total deadline still holds. @default Infinity */
  maxRetryAfter?: number;
  /**
   * Runs after each wait, just before attempt `attempt` (2, 3, ...) is sent,
   * with a fresh `Request` for it whose headers are writable. Return nothing
   * to send it as it now is, another `Request` to send that, or `false` to
   * stop (the previous outcome is the result, `onGiveUp(…, 'not-retryable')`);
   * a promise of one of these is awaited within `maxTotalExecutionTime`. A
   * hook that throws or rejects ends the call with that error.
   */
  beforeRetry?: (
    request: Request,
    info: BeforeRetryInfo,
  ) => void | Request | false | Promise<void | Request | false>;
  /** The `fetch` wrapped. @default globalThis.fetch, looked up per call */
  fetch?: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;
}

/** What `beforeRetry` is told about the attempt that failed before the wait. */
export interface BeforeRetryInfo {
  /** The attempt about to be sent (2, 3, ...). */
  attempt: number;
  /** The failing response (its body still readable), or `undefined` after a network error. */
  response: Response | undefined;
  /** What the last attempt failed with: an `HTTPError` for a failing response, `fetch`'s `TypeError` for the network. */
  error: unknown;
}

/** The error a failing response stands for in callbacks, `shouldRetry` and `retryAfter`. */
export interface HTTPError extends Error {
  /** Always `'HTTPError'`. */
  name: 'HTTPError';
  /** The response's status. */
  status: number;
  /** The response itself (its body is cancelled if the request is retried). */
  response: Response;
}

/**
 * `fetch` with retries, with `fetch`'s own signature: resolves a `Response`
 * (the last one when retries run out on a retryable status), rejects as
 * `fetch` does (a network `TypeError`, the caller's abort reason), or with
 * a `CircuitOpenError` when the `breaker` refused the last attempt. Each call
 * is its own flow. Defaults: `maxAttempts: 3`, `baseWait: 300`, `jitter: 'full'`.
 */
export declare function retryFetch(
  options?: RetryFetchOptions,
): (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

