// Types of retry-wasm. Generic over the retried function, like
// @tanstack/pacer's AsyncRetryer, so arguments and results flow through.
// They are a drop-in for pacer 0.22's declarations: where pacer declares a
// narrower type than the value really has (an `error` typed `Error` is
// whatever was thrown), pacer's type is kept so pacer code compiles, and the
// doc comment says what the value is.

declare global {
  /**
   * `Symbol.dispose`, declared as TypeScript's `esnext.disposable` library
   * (5.2+) and @types/node declare it, so these declarations compile with an
   * older `lib` too. `using` itself needs that library, or TypeScript 5.2+
   * with `lib` set to `esnext`.
   */
  interface SymbolConstructor {
    readonly dispose: unique symbol;
  }
}

/** Any function returning a value or a promise (pacer's requires a promise). */
export type AnyAsyncFunction = (...args: any[]) => any;

/** Why a flow was aborted: pacer's four reasons, and `'signal'` when the `signal` option aborted it. */
export type AbortReason = 'manual' | 'new-execution' | 'execution-timeout' | 'total-timeout' | 'signal';

/**
 * Why a flow ended in failure. `'circuit-open'`: the final error is a
 * `CircuitOpenError` (the `breaker` refused the last attempt, or the wait
 * it asked for was `Infinity` or would cross `maxTotalExecutionTime`).
 */
export type GiveUpReason = 'attempts-exhausted' | 'not-retryable' | 'execution-timeout' | 'budget-exhausted' | 'nested' | 'circuit-open';

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

/** What `onHedge` is told about an attempt that starts while others run. */
export interface HedgeInfo {
  /** The attempt that starts (2, 3, ...). */
  attempt: number;
  /** ms since `execute()`. */
  elapsed: number;
  /** How many earlier attempts still run (at least 1). */
  running: number;
}

/** `status` of a retryer. */
export type AsyncRetryerStatus = 'disabled' | 'idle' | 'executing' | 'retrying';

/** The eight fields of `retryer.store.state`. */
export interface AsyncRetryerState<TFn extends AnyAsyncFunction> {
  /** The attempt running now, or during a wait the one about to run; 0 after success and reset. @default 0 */
  currentAttempt: number;
  /** Number of successful `execute()` calls (not attempts). @default 0 */
  executionCount: number;
  /** A flow is active (attempts and waits). @default false */
  isExecuting: boolean;
  /**
   * What the most recent failed attempt threw or rejected with; cleared when
   * a flow starts. Typed `Error` as pacer types it, but kept as it was
   * thrown: a thrown string, `null` or plain object is that value.
   * @default undefined
   */
  lastError: Error | undefined;
  /** Timestamp (ms) of the most recent success. @default 0 */
  lastExecutionTime: number;
  /** The most recent successful result. @default undefined */
  lastResult: Awaited<ReturnType<TFn>> | undefined;
  /** `'disabled'`, `'executing'` (attempt 1), `'retrying'` (later attempts and waits) or `'idle'`. @default 'idle' ('disabled' when not enabled) */
  status: AsyncRetryerStatus;
  /** ms from `execute()` to the most recent success. @default 0 */
  totalExecutionTime: number;
}

/**
 * `initialState`: any of the state fields, as pacer's `Partial` state; only
 * those that persist are restored (no flow, timer or attempt is).
 */
export interface AsyncRetryerInitialState<TFn extends AnyAsyncFunction> {
  /** Restored. @default 0 */
  executionCount?: number;
  /** Restored. @default 0 */
  lastExecutionTime?: number;
  /** Restored. @default 0 */
  totalExecutionTime?: number;
  /** Restored. @default undefined */
  lastResult?: Awaited<ReturnType<TFn>> | undefined;
  /** Restored, any value. @default undefined */
  lastError?: unknown;
  /** Accepted and ignored: no attempt is restored. @default 0 */
  currentAttempt?: number;
  /** Accepted and ignored: no flow is restored. @default false */
  isExecuting?: boolean;
  /** Accepted and ignored: the status follows `enabled` and the flow. @default 'idle' */
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
  /** State to start from; only persistable fields are used. @default undefined (the default state) */
  initialState?: AsyncRetryerInitialState<TFn>;
  /** An identifier. @default undefined */
  key?: string;
  /**
   * After a failed attempt when another remains; `attempt` is the one that
   * failed. `error` is typed `Error` as pacer types it, but is exactly what
   * was thrown (it may be a non-Error). @default undefined
   */
  onRetry?: (attempt: number, error: Error, retryer: AsyncRetryer<TFn>) => void;
  /** Every failed attempt; `error` is exactly what was thrown (typed `Error` as in pacer). @default undefined */
  onError?: (error: Error, args: Parameters<TFn>, retryer: AsyncRetryer<TFn>) => void;
  /** Once, when the flow ends in failure; `error` is exactly what was thrown (typed `Error` as in pacer). @default undefined */
  onLastError?: (error: Error, retryer: AsyncRetryer<TFn>) => void;
  /** Once, on success. @default undefined */
  onSuccess?: (result: Awaited<ReturnType<TFn>>, args: Parameters<TFn>, retryer: AsyncRetryer<TFn>) => void;
  /** Once per attempt, as that attempt's last callback. @default undefined */
  onSettled?: (args: Parameters<TFn>, retryer: AsyncRetryer<TFn>) => void;
  /**
   * The flow was aborted. A method, so a handler annotated with pacer's four
   * reasons is accepted; `'signal'` comes only with the `signal` option.
   * @default undefined
   */
  onAbort?(reason: AbortReason, retryer: AsyncRetryer<TFn>): void;
  /** An attempt ran past `maxExecutionTime`. @default undefined */
  onExecutionTimeout?: (retryer: AsyncRetryer<TFn>) => void;
  /** The flow ran past `maxTotalExecutionTime`. @default undefined */
  onTotalExecutionTimeout?: (retryer: AsyncRetryer<TFn>) => void;
  /**
   * Return false to end the flow now with this error as the final one.
   * `error` is what was thrown; a method, so `(error: Error)` or
   * `(error: HTTPError)` annotations are accepted. @default undefined (every error is retried)
   */
  shouldRetry?(error: unknown, attempt: number, retryer: AsyncRetryer<TFn>): boolean;
  /** Why a flow ended in failure; `error` is what was thrown (any annotation accepted). @default undefined */
  onGiveUp?(error: unknown, reason: GiveUpReason, retryer: AsyncRetryer<TFn>): void;
  /**
   * A server hint in ms (e.g. `parseRetryAfter(error.response)`) that
   * replaces the computed delay; `undefined` keeps it. `error` is what was
   * thrown (any annotation accepted). @default undefined
   */
  retryAfter?(error: unknown, attempt: number, retryer: AsyncRetryer<TFn>): number | undefined | null;
  /** Explicit delays in ms; attempts = length + 1. @default undefined (the `backoff` schedule) */
  intervals?: readonly number[];
  /** Growth factor of exponential backoff. @default 2 */
  multiplier?: number;
  /** An outside signal: aborting it aborts the flow (`onAbort('signal')`). @default undefined */
  signal?: AbortSignal;
  /** A budget shared by many retryers against retry storms. @default undefined (no budget) */
  budget?: RetryBudget;
  /**
   * A circuit breaker shared by many retryers, `asyncRetry` functions and
   * `retryFetch` functions. Every attempt (the first, each retry, each
   * hedged one) asks it for a permit before the function is called; these
   * flows use its circuit of key `''`. A refused attempt calls nothing and
   * fails with a `CircuitOpenError`: it counts toward `maxAttempts`, costs
   * no `budget` token, and the next attempt waits its `retryAfter` instead
   * of the backoff (the `retryAfter` option is not asked about it).
   * @default undefined (no breaker)
   */
  breaker?: CircuitBreaker;
  /** Makes the jitter sequence reproducible. @default undefined (seeded once per module from the host's randomness) */
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
  /** A wait of `delay` ms starts after failed attempt `attempt`; after `onRetry`. @default undefined */
  onBackoff?: (info: BackoffInfo, retryer: AsyncRetryer<TFn>) => void;
  /**
   * Hedged attempts: attempt n+1 starts this many ms after attempt n
   * started while the earlier ones keep running (`0`: all at once;
   * `Infinity`: only after a failure), until one succeeds or `maxAttempts`
   * (then finite) have started. The first success wins and the others'
   * signals abort; a failure starts the next attempt at once (or when a
   * `retryAfter` hint ends). A function is asked after each start with
   * the attempt that started. The backoff options are not used.
   * @default undefined (one attempt at a time)
   */
  hedge?: number | ((attempt: number, retryer: AsyncRetryer<TFn>) => number);
  /** Attempt `attempt` starts while `running` earlier ones still run, `elapsed` ms after `execute()`. @default undefined */
  onHedge?: (info: HedgeInfo, retryer: AsyncRetryer<TFn>) => void;
}

/** An observer of state changes, shaped as `@tanstack/store`'s `Observer`. */
export interface StateObserver<TFn extends AnyAsyncFunction> {
  /** Called after each change with the new state; optional in the type, as in `@tanstack/store`, but `subscribe` needs it. @default undefined */
  next?: (state: Readonly<AsyncRetryerState<TFn>>) => void;
  /** Accepted for `@tanstack/store`'s shape; never called (the state cannot fail). @default undefined */
  error?: (err: unknown) => void;
  /** Accepted for `@tanstack/store`'s shape; never called (the state never ends). @default undefined */
  complete?: () => void;
}

/** A listener of state changes, as a function or an observer. */
export type StateListener<TFn extends AnyAsyncFunction> =
  | ((state: Readonly<AsyncRetryerState<TFn>>) => void)
  | StateObserver<TFn>;

/** Unsubscribes; also callable as `.unsubscribe()` (so it is `@tanstack/store`'s `Subscription` too). */
export interface Unsubscribe {
  (): void;
  /** The same function. */
  unsubscribe(): void;
}

/**
 * `retryer.store`: the read side of pacer's `Store` (`state`, `get()`,
 * `subscribe()`), so TanStack Store's framework adapters take it. `get` and
 * `subscribe` are bound: they work passed on detached.
 */
export interface AsyncRetryerStore<TFn extends AnyAsyncFunction> {
  /** A plain object: a new one after every change, the same while nothing changed. */
  readonly state: Readonly<AsyncRetryerState<TFn>>;
  /** Returns `state`. */
  get: () => Readonly<AsyncRetryerState<TFn>>;
  /** Calls `listener` after each change; returns its unsubscribe function. */
  subscribe: (listener: StateListener<TFn>) => Unsubscribe;
}

/**
 * The options `retryer.options` always holds, with their defaults, in every
 * form each takes (pacer's `typeof defaultOptions`). Wider than pacer's
 * where retry-wasm takes more: `jitter` may be `'full'`, `backoff`
 * `'decorrelated'` or a function.
 */
export interface AsyncRetryerDefaults<TFn extends AnyAsyncFunction = AnyAsyncFunction> {
  /** @default 'exponential' */
  backoff: Exclude<AsyncRetryerOptions<TFn>['backoff'], undefined>;
  /** @default 1000 */
  baseWait: Dynamic<number, TFn>;
  /** @default true */
  enabled: Dynamic<boolean, TFn>;
  /** @default 0 */
  jitter: number | 'full';
  /** @default 3 */
  maxAttempts: Dynamic<number, TFn>;
  /** @default Infinity */
  maxExecutionTime: number;
  /** @default Infinity */
  maxTotalExecutionTime: number;
  /** @default Infinity */
  maxWait: Dynamic<number, TFn>;
  /** The one in force: `false` when `onError` is given and `throwOnError` is not. @default 'last' */
  throwOnError: boolean | 'last';
}

/** Retries an async function with backoff, deadlines and cancellation. */
export declare class AsyncRetryer<TFn extends AnyAsyncFunction> {
  constructor(fn: TFn, initialOptions?: AsyncRetryerOptions<TFn>);
  /** The function being retried. */
  fn: TFn;
  /** The `key` option. @default undefined */
  key: string | undefined;
  /** The merged options, defaults included. @default the defaults of `AsyncRetryerDefaults` */
  options: AsyncRetryerOptions<TFn> & AsyncRetryerDefaults<TFn>;
  /** State and subscription. */
  readonly store: AsyncRetryerStore<TFn>;
  /** Merges and validates new options; an active flow goes on with them. */
  setOptions: (newOptions: Partial<AsyncRetryerOptions<TFn>>) => void;
  /** Runs the function with retries; `undefined` when disabled, aborted, or failed with throwOnError false. */
  execute: (...args: Parameters<TFn>) => Promise<Awaited<ReturnType<TFn>> | undefined>;
  /** The AbortSignal of the running attempt; `null` when no flow is active. */
  getAbortSignal: () => AbortSignal | null;
  /**
   * Aborts the active flow and reports `reason` to `onAbort`; without an
   * active flow, does nothing. Takes pacer's reasons; any other is a
   * `TypeError`. @default 'manual'
   */
  abort: (reason?: Exclude<AbortReason, 'signal'>) => void;
  /** Restores the default state; an active flow goes on. */
  reset: () => void;
  /**
   * Aborts an active flow (`onAbort('manual')`, its `execute()` resolves
   * `undefined`) and frees the retryer now rather than at garbage
   * collection. Calling it again does nothing; any other use of the retryer
   * afterwards (its methods, `store`, `options`) throws an `Error` saying it
   * was freed.
   */
  free(): void;
  /** `free()`, so that `using retryer = new AsyncRetryer(...)` frees it at the end of the block. */
  [Symbol.dispose](): void;
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
  /** Tokens left now. @default maxTokens (a new budget is full) */
  readonly tokens: number;
  /** The `maxTokens` option. @default 10 */
  readonly maxTokens: number;
  /** The `tokenRatio` option. @default 0.1 */
  readonly tokenRatio: number;
  /**
   * Frees the budget's own handle now rather than at garbage collection;
   * retryers using it keep it. Calling it again does nothing; reading its
   * fields afterwards throws an `Error` saying it was freed.
   */
  free(): void;
  /** `free()`, so that `using budget = new RetryBudget()` works. */
  [Symbol.dispose](): void;
}

/**
 * A circuit's state. `'half-open'`: its break has ended and probes may go
 * (an open circuit past its break reads `'half-open'` before any probe
 * asked); `'isolated'`: held open by `isolate()` until `reset()`.
 */
export type CircuitState = 'closed' | 'open' | 'half-open' | 'isolated';

/** Why a circuit changed state. */
export type CircuitChangeReason = 'tripped' | 'break-ended' | 'probe-failed' | 'probe-succeeded' | 'isolated' | 'reset';

/**
 * A transition, as `onStateChange` and `channel('retry-wasm:breaker')`
 * receive it. The counts are the circuit's window when it happened.
 */
export interface CircuitChange {
  /** The circuit: `''` for `AsyncRetryer` and `asyncRetry` flows, the request's origin for `retryFetch`. */
  key: string;
  /** The state left. */
  from: CircuitState;
  /** The state entered. */
  to: CircuitState;
  /** What caused it. */
  reason: CircuitChangeReason;
  /** Failed attempts in the window. */
  failures: number;
  /** Attempts recorded in the window. */
  calls: number;
  /** `failures / calls`, 0 when there are no calls. */
  failureRatio: number;
  /** ms the circuit stays open, when it opens. */
  breakDuration: number;
}

/** What a `breakDuration` function is asked with, each time a circuit opens. */
export interface CircuitBreakInfo {
  /** The circuit that opens. */
  key: string;
  /** Failed attempts in its window. */
  failures: number;
  /** Attempts recorded in its window. */
  calls: number;
  /** `failures / calls`, 0 when there are no calls. */
  failureRatio: number;
  /** How many probes in a row have failed: 0 when a closed circuit trips, one more at each failed probe. */
  halfOpenAttempts: number;
  /** What the attempt that opened it failed with, as it was. */
  error: unknown;
}

/** One circuit in `snapshot()`. */
export interface CircuitSnapshot {
  /** Its state now. */
  state: CircuitState;
  /** Attempts recorded in its window. */
  calls: number;
  /** Failed attempts in its window. */
  failures: number;
  /** `failures / calls`, 0 when there are no calls. */
  failureRatio: number;
  /** ms until an open circuit lets a probe through; `Infinity` when isolated, 0 otherwise. */
  retryAfter: number;
}

/** Options of a `CircuitBreaker`; all optional. */
export interface CircuitBreakerOptions {
  /** A closed circuit opens when failures / calls in the window reach this (0 < r <= 1), with at least `minimumThroughput` calls. @default 0.5 */
  failureRatio?: number;
  /** The fewest calls in the window for `failureRatio` to open the circuit; an integer >= 1. @default 10 */
  minimumThroughput?: number;
  /** The window in ms: 10 buckets of `samplingDuration / 10`; an attempt counts in the bucket of the time it ended. @default 30000 */
  samplingDuration?: number;
  /** Also open after this many failed attempts in a row, whatever the ratio; an integer >= 1. @default undefined (not set) */
  consecutiveFailures?: number;
  /**
   * ms an open circuit refuses before it lets a probe through, or a
   * function asked each time it opens. A function that throws or answers a
   * value that is not a finite number >= 0 opens it for 5000 ms.
   * @default 5000
   */
  breakDuration?: number | ((info: CircuitBreakInfo) => number);
  /** How many probes a half-open circuit lets through in all (a cancelled probe's permit goes back); all must succeed to close it. @default 1 */
  halfOpenCalls?: number;
  /** After every transition. What it throws changes nothing. @default undefined */
  onStateChange?: (change: CircuitChange, breaker: CircuitBreaker) => void;
}

/**
 * A circuit breaker shared by retryers (the `breaker` option): one circuit
 * per key, closed, open for a break after too many failures, then
 * half-open while probes find out whether the callee is back. It owns no
 * timer; transitions happen when an attempt asks or ends, on `Date.now()`.
 * Keys are strings; another value is a `TypeError`.
 */
export declare class CircuitBreaker {
  constructor(options?: CircuitBreakerOptions);
  /** The state of circuit `key` now, without taking a probe. @default key '' */
  state(key?: string): CircuitState;
  /** Holds circuit `key` open until `reset(key)`. @default key '' */
  isolate(key?: string): void;
  /** Closes circuit `key` and clears its window. @default key '' */
  reset(key?: string): void;
  /** A plain object from each key seen to its circuit (past 64 keys, a new key takes the place of an idle circuit: nothing running or in its window, closed or its break ended a window ago). */
  snapshot(): Record<string, CircuitSnapshot>;
  /**
   * Frees the breaker's own handle now rather than at garbage collection;
   * retryers using it keep it. Calling it again does nothing; its methods
   * afterwards throw an `Error` saying it was freed, and handing it to a
   * retryer is a `TypeError`.
   */
  free(): void;
  /** `free()`, so that `using breaker = new CircuitBreaker()` works. */
  [Symbol.dispose](): void;
}

/**
 * What an attempt a circuit refused fails with: nothing was called. One
 * class per realm, so `instanceof` holds for refusals of either entry.
 */
export declare class CircuitOpenError extends Error {
  constructor(key?: string, retryAfter?: number);
  /** Always `'CircuitOpenError'`. */
  name: 'CircuitOpenError';
  /** The circuit that refused: `''`, or the request's origin for `retryFetch`. */
  key: string;
  /** ms until the circuit may let a probe through (the break duration while its probes run); `Infinity` when isolated. */
  retryAfter: number;
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

/** ms to wait per a Retry-After value (delta-seconds or HTTP-date) from a string, Headers or Response; `undefined` if absent, invalid or negative. */
export declare function parseRetryAfter(
  value: string | Headers | Response | { headers: Headers } | null | undefined,
  now?: number,
): number | undefined;

/**
 * Hands the engine a `diagnostics_channel` where the host has none
 * (browsers): an object shaped like Node's `node:diagnostics_channel`
 * module, whose `channel(name)` and `tracingChannel(name)` the engine
 * publishes every flow on (`retry-wasm:execute`, `retry-wasm:attempt`,
 * `retry-wasm:backoff`) and every circuit transition on `retry-wasm:breaker`. `retry-wasm/otel` calls it itself; in Node, Deno,
 * Bun and workerd the host's module is used without it.
 */
export declare function useDiagnosticsChannel(dc: {
  channel(name: string): object;
  tracingChannel(name: string): object;
}): void;
