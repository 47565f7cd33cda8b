// The numeric wire format shared with src/wasm/codec.rs. Keep the two in step.
// Plain constants, not objects: a bundler inlines them as numbers. Nothing
// here may run code at load time (a table built by a call, say): esbuild
// then keeps every constant as a variable, ~0.2 KB more gzipped.

/** Option names by wire id (src/core/options.rs `Opt`). */
export const OPTION_NAMES = [
  'maxAttempts', 'backoff', 'baseWait', 'maxWait', 'jitter', 'maxExecutionTime',
  'maxTotalExecutionTime', 'throwOnError', 'enabled', 'initialState', 'key',
  'onRetry', 'onError', 'onLastError', 'onSuccess', 'onSettled', 'onAbort',
  'onExecutionTimeout', 'onTotalExecutionTimeout', 'shouldRetry', 'onGiveUp',
  'retryAfter', 'intervals', 'multiplier', 'signal', 'budget', 'seed',
  'retryOnExecutionTimeout',
];

export const OPT_MAX_ATTEMPTS = 0;
export const OPT_BACKOFF = 1;
export const OPT_BASE_WAIT = 2;
export const OPT_MAX_WAIT = 3;
export const OPT_JITTER = 4;
export const OPT_MAX_EXECUTION_TIME = 5;
export const OPT_MAX_TOTAL_EXECUTION_TIME = 6;
export const OPT_THROW_ON_ERROR = 7;
export const OPT_ENABLED = 8;
export const OPT_INITIAL_STATE = 9;
export const OPT_INTERVALS = 22;
export const OPT_MULTIPLIER = 23;

/** Value tags (codec.rs `tag`). */
export const TAG_UNDEFINED = 0;
export const TAG_NULL = 1;
export const TAG_BOOL = 2;
export const TAG_NUMBER = 3;
export const TAG_STRING = 4;
export const TAG_FUNCTION = 5;
export const TAG_ARRAY = 6;
export const TAG_OBJECT = 7;
export const TAG_BUDGET = 8;
export const TAG_SIGNAL = 9;
export const TAG_OTHER = 10;
export const TAG_THREW = 11;

/**
 * A retryer's state, cell by cell, as `stateCell` reads it from linear
 * memory and as a parked retryer keeps it (in this order).
 */
export const CELL_VERSION = 0;
export const CELL_ATTEMPT = 1;
export const CELL_COUNT = 2;
export const CELL_LAST_TIME = 3;
export const CELL_TOTAL_TIME = 4;
export const CELL_FLAGS = 5;

/**
 * Where the state fields are (codec.rs `state_at`): f64 indices from the
 * state (count, last time, total time: 0-2, in CELL_* order)...
 */
export const STATE_COUNT = 0;
/** ...and u32 indices from twice its f64 index. */
export const STATE_ATTEMPT = 6;
export const STATE_VERSION = 7;

/** Bits of the flags word (codec.rs `flag`); the status is `flags >>> 4`. */
export const FLAG_EXECUTING = 1;
export const FLAG_HAS_RESULT = 2;
export const FLAG_HAS_ERROR = 4;
export const FLAG_ACTIVE = 8;

/**
 * Cells of the window all retryers share (codec.rs `window`), read right
 * after the call that wrote them. A parked retryer keeps WIN_LAST_GEN and
 * every cell after it; its state cells (CELL_*) start at WIN_STATE.
 */
export const WIN_VALUE = 0;
export const WIN_ARG = 1;
export const WIN_GEN = 2;
export const WIN_LAST_GEN = 3;
export const WIN_STATE = 7;
export const WIN_PARKED_LEN = 10;
/** Where a parked copy (WIN_LAST_GEN onwards) holds the state cells. */
export const OWN_STATE = WIN_STATE - WIN_LAST_GEN;

/** Effect kinds: the low four bits of an effect code. */
export const FX_INVOKE = 1;
export const FX_START_TIMER = 2;
export const FX_CLEAR_TIMER = 3;
export const FX_ABORT_ATTEMPT = 4;
export const FX_CALL = 5;
export const FX_EVAL = 6;
export const FX_LISTEN = 7;
export const FX_UNLISTEN = 8;
export const FX_STATE_CHANGED = 9;
export const FX_FINISH = 10;
/** Set in an effect code when more effects are queued behind it. */
export const MORE = 256;

export const CB_RETRY = 0;
export const CB_ERROR = 1;
export const CB_LAST_ERROR = 2;
export const CB_SUCCESS = 3;
export const CB_SETTLED = 4;
export const CB_ABORT = 5;
export const CB_EXECUTION_TIMEOUT = 6;
export const CB_TOTAL_EXECUTION_TIMEOUT = 7;
export const CB_GIVE_UP = 8;

export const EVAL_ENABLED = 0;
export const EVAL_SHOULD_RETRY = 1;
export const EVAL_MAX_ATTEMPTS = 2;
export const EVAL_BASE_WAIT = 3;
export const EVAL_MAX_WAIT = 4;
export const EVAL_RETRY_AFTER = 5;
export const EVAL_BACKOFF = 6;

export const OUTCOME_RESULT = 0;
export const OUTCOME_UNDEFINED = 1;
export const OUTCOME_REJECT = 2;
export const OUTCOME_INVALID = 3;
export const OUTCOME_THROWN = 4;

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
