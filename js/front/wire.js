// The numeric wire format shared with src/wasm/codec.rs. Keep the two in step.

/** Option names by wire id (src/core/options.rs `Opt`). */
export const OPTION_NAMES = [
  'maxAttempts', 'backoff', 'baseWait', 'maxWait', 'jitter', 'maxExecutionTime',
  'maxTotalExecutionTime', 'throwOnError', 'enabled', 'initialState', 'key',
  'onRetry', 'onError', 'onLastError', 'onSuccess', 'onSettled', 'onAbort',
  'onExecutionTimeout', 'onTotalExecutionTimeout', 'shouldRetry', 'onGiveUp',
  'retryAfter', 'intervals', 'multiplier', 'signal', 'budget', 'seed',
  'retryOnExecutionTimeout',
];

/** Wire id by option name, with no prototype so `toString` is no option. */
export const OPTION_IDS = Object.assign(
  Object.create(null),
  Object.fromEntries(OPTION_NAMES.map((name, id) => [name, id])),
);

export const OPT = {
  MAX_ATTEMPTS: 0, BACKOFF: 1, BASE_WAIT: 2, MAX_WAIT: 3, JITTER: 4,
  MAX_EXECUTION_TIME: 5, MAX_TOTAL_EXECUTION_TIME: 6, THROW_ON_ERROR: 7,
  ENABLED: 8, INITIAL_STATE: 9, INTERVALS: 22, MULTIPLIER: 23,
};

/** Value tags (codec.rs `tag`). */
export const TAG = {
  UNDEFINED: 0, NULL: 1, BOOL: 2, NUMBER: 3, STRING: 4, FUNCTION: 5, ARRAY: 6,
  OBJECT: 7, BUDGET: 8, SIGNAL: 9, OTHER: 10, THREW: 11,
};

/** State cell indices (codec.rs `cell`). */
export const CELL = {
  VERSION: 0, ATTEMPT: 1, EXECUTING: 2, STATUS: 3, COUNT: 4, LAST_TIME: 5,
  TOTAL_TIME: 6, HAS_RESULT: 7, HAS_ERROR: 8, ACTIVE: 9, LAST_GEN: 10,
  VALUE: 11, ARG: 12, GEN: 13,
};

/** Effect kinds: the low four bits of an effect code. */
export const FX = {
  INVOKE: 1, START_TIMER: 2, CLEAR_TIMER: 3, ABORT_ATTEMPT: 4, CALL: 5, EVAL: 6,
  LISTEN: 7, UNLISTEN: 8, STATE_CHANGED: 9, FINISH: 10,
};
/** Set in an effect code when more effects are queued behind it. */
export const MORE = 256;

export const CB = {
  RETRY: 0, ERROR: 1, LAST_ERROR: 2, SUCCESS: 3, SETTLED: 4, ABORT: 5,
  EXECUTION_TIMEOUT: 6, TOTAL_EXECUTION_TIMEOUT: 7, GIVE_UP: 8,
};

export const EVAL = {
  ENABLED: 0, SHOULD_RETRY: 1, MAX_ATTEMPTS: 2, BASE_WAIT: 3, MAX_WAIT: 4,
  RETRY_AFTER: 5, BACKOFF: 6,
};

export const OUTCOME = { RESULT: 0, UNDEFINED: 1, REJECT: 2, INVALID: 3, THROWN: 4 };

export const ABORT_REASONS = ['manual', 'new-execution', 'execution-timeout', 'total-timeout', 'signal'];
export const ABORT_EXECUTION_TIMEOUT = 2;
export const GIVE_UP_REASONS = ['attempts-exhausted', 'not-retryable', 'execution-timeout', 'budget-exhausted'];
export const STATUSES = ['idle', 'executing', 'retrying', 'disabled'];

/** What each `Expect` code (options.rs) asks for, as words. */
export const EXPECTS = [
  'a known option',
  'a function',
  'a positive integer or Infinity',
  'paired with a finite maxTotalExecutionTime when it is Infinity',
  'a number of milliseconds >= 0',
  'a finite number of milliseconds >= 0',
  "a number from 0 to 1, or 'full'",
  "'exponential', 'linear', 'fixed', 'decorrelated' or a function",
  "true, false or 'last'",
  'a boolean or a function',
  'a boolean',
  'a string',
  'an object',
  'an array of delays in milliseconds >= 0',
  'left out when maxAttempts is Infinity',
  'a finite number > 0',
  'a finite number',
  'a RetryBudget',
  'an AbortSignal',
  'a number or a function',
];

/** Persistable `initialState` fields by wire id (options.rs `set_initial`). */
export const INITIAL_FIELDS = ['executionCount', 'lastExecutionTime', 'totalExecutionTime', 'lastResult', 'lastError'];
