// Types of retry-wasm. Generic over the retried function, like
// @tanstack/pacer's AsyncRetryer, so arguments and results flow through.

/** Any function returning a value or a promise. */
export type AnyAsyncFunction = (...args: any[]) => any;

/** Why a flow was aborted. */
export type AbortReason = 'manual' | 'new-execution' | 'execution-timeout' | 'total-timeout' | 'signal';

/** Why a flow ended in failure. */
export type GiveUpReason = 'attempts-exhausted' | 'not-retryable' | 'execution-timeout' | 'budget-exhausted' | 'nested';

/** What `onBackoff` is told about a wait that starts. */
export interface BackoffInfo {
  /** ms the wait lasts (0: the next attempt starts at once). */
  delay: number;
  /** The attempt that failed. */
  attempt: number;
  /** What it failed with, as it was. */
  error: unknown;
  /** ms since `execute()`. */
  elapsed: number;
}

/** `status` of a retryer. */
export type AsyncRetryerStatus = 'disabled' | 'idle' | 'executing' | 'retrying';

/** The eight fields of `retryer.store.state`. */
export interface AsyncRetryerState<TFn extends AnyAsyncFunction> {
  /** The attempt running now, or during a wait the one about to run; 0 after success and reset. */
  currentAttempt: number;
  /** Number of successful `execute()` calls (not attempts). */
  executionCount: number;
  /** A flow is active (attempts and waits). */
  isExecuting: boolean;
  /** What the most recent failed attempt threw or rejected with, as it was. */
  lastError: unknown;
  /** Timestamp (ms) of the most recent success. */
  lastExecutionTime: number;
  /** The most recent successful result. */
  lastResult: Awaited<ReturnType<TFn>> | undefined;
  /** `'disabled'`, `'executing'` (attempt 1), `'retrying'` (later attempts and waits) or `'idle'`. */
  status: AsyncRetryerStatus;
  /** ms from `execute()` to the most recent success. */
  totalExecutionTime: number;
}

/** Fields of `initialState` that persist (no flow, timer or attempt is restored). */
export interface AsyncRetryerInitialState<TFn extends AnyAsyncFunction> {
  executionCount?: number;
  lastExecutionTime?: number;
  totalExecutionTime?: number;
  lastResult?: Awaited<ReturnType<TFn>>;
  lastError?: unknown;
  currentAttempt?: number;
  isExecuting?: boolean;
  status?: AsyncRetryerStatus;
}

/** A value, or a function of the retryer read at each decision. */
export type Dynamic<T, TFn extends AnyAsyncFunction> = T | ((retryer: AsyncRetryer<TFn>) => T);

/** Options of `AsyncRetryer` and `asyncRetry`; all optional. */
export interface AsyncRetryerOptions<TFn extends AnyAsyncFunction> {
  /** Total attempts including the first; a positive integer, or Infinity with a finite `maxTotalExecutionTime`. @default 3 */
  maxAttempts?: Dynamic<number, TFn>;
  /** Delay schedule: `b·m^(n-1)`, `b·n`, `b`, AWS decorrelated jitter, or your own `(attempt, retryer) => ms`. @default 'exponential' */
  backoff?: 'exponential' | 'linear' | 'fixed' | 'decorrelated' | ((attempt: number, retryer: AsyncRetryer<TFn>) => number);
  /** Base delay in ms. @default 1000 */
  baseWait?: Dynamic<number, TFn>;
  /** Cap of the nominal delay before jitter, in ms. @default Infinity */
  maxWait?: Dynamic<number, TFn>;
  /** Fraction 0..1 of random variation around each delay, or `'full'` (uniform in [0, delay]). @default 0 */
  jitter?: number | 'full';
  /** Deadline of one attempt in ms. @default Infinity */
  maxExecutionTime?: number;
  /** Deadline of the whole `execute()`, waits included, in ms. @default Infinity */
  maxTotalExecutionTime?: number;
  /** `'last'`/`true`: reject with the final error; `false`: resolve `undefined`. @default 'last', or false when `onError` is given */
  throwOnError?: boolean | 'last';
  /** When false, `execute()` resolves `undefined` at once and calls nothing. @default true */
  enabled?: Dynamic<boolean, TFn>;
  /** State to start from; only persistable fields are used. */
  initialState?: AsyncRetryerInitialState<TFn>;
  /** An identifier. */
  key?: string;
  /** After a failed attempt when another remains; `attempt` is the one that failed. */
  onRetry?: (attempt: number, error: unknown, retryer: AsyncRetryer<TFn>) => void;
  /** Every failed attempt. */
  onError?: (error: unknown, args: Parameters<TFn>, retryer: AsyncRetryer<TFn>) => void;
  /** Once, when the flow ends in failure. */
  onLastError?: (error: unknown, retryer: AsyncRetryer<TFn>) => void;
  /** Once, on success. */
  onSuccess?: (result: Awaited<ReturnType<TFn>>, args: Parameters<TFn>, retryer: AsyncRetryer<TFn>) => void;
  /** Once per attempt, as that attempt's last callback. */
  onSettled?: (args: Parameters<TFn>, retryer: AsyncRetryer<TFn>) => void;
  /** The flow was aborted. */
  onAbort?: (reason: AbortReason, retryer: AsyncRetryer<TFn>) => void;
  /** An attempt ran past `maxExecutionTime`. */
  onExecutionTimeout?: (retryer: AsyncRetryer<TFn>) => void;
  /** The flow ran past `maxTotalExecutionTime`. */
  onTotalExecutionTimeout?: (retryer: AsyncRetryer<TFn>) => void;
  /** Return false to end the flow now with this error as the final one. */
  shouldRetry?: (error: unknown, attempt: number, retryer: AsyncRetryer<TFn>) => boolean;
  /** Why a flow ended in failure. */
  onGiveUp?: (error: unknown, reason: GiveUpReason, retryer: AsyncRetryer<TFn>) => void;
  /** A server hint in ms (e.g. `parseRetryAfter(error.response)`) that replaces the computed delay; `undefined` keeps it. */
  retryAfter?: (error: unknown, attempt: number, retryer: AsyncRetryer<TFn>) => number | undefined | null;
  /** Explicit delays in ms; attempts = length + 1. */
  intervals?: readonly number[];
  /** Growth factor of exponential backoff. @default 2 */
  multiplier?: number;
  /** An outside signal: aborting it aborts the flow (`onAbort('signal')`). */
  signal?: AbortSignal;
  /** A budget shared by many retryers against retry storms. */
  budget?: RetryBudget;
  /** Makes the jitter sequence reproducible. */
  seed?: number;
  /** A timed-out attempt counts as a failed attempt and the flow retries. @default false */
  retryOnExecutionTimeout?: boolean;
  /**
   * Started inside another retryer's running attempt, `'passthrough'` makes
   * one attempt and hands its failure straight back (no wait, no `onRetry`,
   * `onGiveUp` reason `'nested'`). @default 'retry'
   */
  nested?: 'retry' | 'passthrough';
  /** `false`: every retryer started inside this one's attempts passes through, whatever it says. @default true */
  innerRetries?: boolean;
  /** A wait of `delay` ms starts after failed attempt `attempt`; after `onRetry`. */
  onBackoff?: (info: BackoffInfo, retryer: AsyncRetryer<TFn>) => void;
}

/** A listener of state changes, as a function or an observer. */
export type StateListener<TFn extends AnyAsyncFunction> =
  | ((state: AsyncRetryerState<TFn>) => void)
  | { next: (state: AsyncRetryerState<TFn>) => void };

/** Unsubscribes; also callable as `.unsubscribe()`. */
export interface Unsubscribe {
  (): void;
  unsubscribe(): void;
}

/** `retryer.store`: the state and its subscription. */
export interface AsyncRetryerStore<TFn extends AnyAsyncFunction> {
  /** A plain object: a new one after every change, the same while nothing changed. */
  readonly state: Readonly<AsyncRetryerState<TFn>>;
  subscribe(listener: StateListener<TFn>): Unsubscribe;
}

/** The default values `retryer.options` shows. */
export interface AsyncRetryerDefaults {
  backoff: 'exponential';
  baseWait: number;
  enabled: boolean;
  jitter: number;
  maxAttempts: number;
  maxExecutionTime: number;
  maxTotalExecutionTime: number;
  maxWait: number;
  throwOnError: boolean | 'last';
}

/** Retries an async function with backoff, deadlines and cancellation. */
export declare class AsyncRetryer<TFn extends AnyAsyncFunction> {
  constructor(fn: TFn, initialOptions?: AsyncRetryerOptions<TFn>);
  /** The function being retried. */
  fn: TFn;
  /** The `key` option. */
  key: string | undefined;
  /** The merged options, defaults included. */
  options: AsyncRetryerOptions<TFn> & AsyncRetryerDefaults;
  /** State and subscription. */
  readonly store: AsyncRetryerStore<TFn>;
  /** Merges and validates new options; an active flow goes on with them. */
  setOptions: (newOptions: Partial<AsyncRetryerOptions<TFn>>) => void;
  /** Runs the function with retries; `undefined` when disabled, aborted, or failed with throwOnError false. */
  execute: (...args: Parameters<TFn>) => Promise<Awaited<ReturnType<TFn>> | undefined>;
  /** The AbortSignal of the running attempt; `null` when no flow is active. */
  getAbortSignal: () => AbortSignal | null;
  /** Aborts the active flow; without one, does nothing. */
  abort: () => void;
  /** Restores the default state; an active flow goes on. */
  reset: () => void;
  /**
   * Aborts an active flow and frees the retryer now rather than at garbage
   * collection (also `retryer[Symbol.dispose]()`, so `using` works); any
   * later call on it throws.
   */
  free(): void;
}

/** Options of a `RetryBudget`. */
export interface RetryBudgetOptions {
  /** Bucket size, finite and > 0. @default 10 */
  maxTokens?: number;
  /** Tokens refunded per success, finite and > 0. @default 0.1 */
  tokenRatio?: number;
}

/** A retry budget shared by retryers: failures cost 1 token, successes refund `tokenRatio`, retries only while tokens > maxTokens / 2. */
export declare class RetryBudget {
  constructor(options?: RetryBudgetOptions);
  /** Tokens left now. */
  readonly tokens: number;
  readonly maxTokens: number;
  readonly tokenRatio: number;
  /** Frees the budget's own handle now rather than at garbage collection; retryers using it keep it. */
  free(): void;
}

/** Wraps `fn` in one retryer and returns its bound `execute`. */
export declare function asyncRetry<TFn extends AnyAsyncFunction>(
  fn: TFn,
  initialOptions?: AsyncRetryerOptions<TFn>,
): (...args: Parameters<TFn>) => Promise<Awaited<ReturnType<TFn>> | undefined>;

/** Returns `options` unchanged with its own type, for sharing between retryers. */
export declare function asyncRetryerOptions<
  TFn extends AnyAsyncFunction = AnyAsyncFunction,
  TOptions extends Partial<AsyncRetryerOptions<TFn>> = Partial<AsyncRetryerOptions<TFn>>,
>(options: TOptions): TOptions;

/** Options of `retryFetch`: every `AsyncRetryer` option but `throwOnError`, and the HTTP ones. */
export interface RetryFetchOptions extends Omit<AsyncRetryerOptions<typeof fetch>, 'throwOnError'> {
  /** Methods sent again; POST and PATCH also when the request has an `Idempotency-Key` header. @default ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'] */
  methods?: readonly string[];
  /** Statuses that make an attempt fail (then retried, or returned when retries run out). @default [408, 429, 500, 502, 503, 504] */
  statusCodes?: readonly number[];
  /** Statuses whose `Retry-After` (delta-seconds or HTTP-date) sets the wait. @default [413, 429, 503] */
  afterStatusCodes?: readonly number[];
  /** The longest wait a `Retry-After` may ask for, in ms; the total deadline still holds. @default Infinity */
  maxRetryAfter?: number;
  /** The `fetch` wrapped. @default globalThis.fetch, looked up per call */
  fetch?: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;
}

/** The error a failing response stands for in callbacks, `shouldRetry` and `retryAfter`. */
export interface HTTPError extends Error {
  name: 'HTTPError';
  status: number;
  response: Response;
}

/**
 * `fetch` with retries, with `fetch`'s own signature: resolves a `Response`
 * (the last one when retries run out on a retryable status), rejects as
 * `fetch` does (a network `TypeError`, the caller's abort reason). Each call
 * is its own flow. Defaults: `maxAttempts: 3`, `baseWait: 300`, `jitter: 'full'`.
 */
export declare function retryFetch(
  options?: RetryFetchOptions,
): (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

/** ms to wait per a Retry-After value (delta-seconds or HTTP-date) from a string, Headers or Response; `undefined` if absent, invalid or negative. */
export declare function parseRetryAfter(
  value: string | Headers | Response | { headers: Headers } | null | undefined,
  now?: number,
): number | undefined;
