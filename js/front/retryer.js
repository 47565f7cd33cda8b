// AsyncRetryer: carries values between promises, timers, signals and the
// engine. Every decision (what happens next, when, and with which state) is
// the engine's; this file only carries out the effects it returns.
import { cells, engine as w, stateCell, stateIndex, WIN } from './engine.js';
import { abortError, dynamicError, optionError, reportLater, timeoutError } from './errors.js';
import { BUSY, DIRTY, KEPT, PARK_ABOVE, PUMPING, QUEUED, UNTIMED, VACANT } from './slots.js';
import { arm, disarm, FIRE } from './timers.js';
import { classify, numberOf, show, tagOf } from './values.js';
import {
  ABORT_EXECUTION_TIMEOUT, ABORT_REASONS, CB_ABORT, CB_ERROR, CB_EXECUTION_TIMEOUT, CB_GIVE_UP,
  CB_LAST_ERROR, CB_RETRY, CB_SETTLED, CB_SUCCESS, CB_TOTAL_EXECUTION_TIMEOUT, CELL_ATTEMPT,
  CELL_COUNT, CELL_FLAGS, CELL_LAST_TIME, CELL_TOTAL_TIME, CELL_VERSION, EVAL_BACKOFF,
  EVAL_BASE_WAIT, EVAL_ENABLED, EVAL_MAX_ATTEMPTS, EVAL_MAX_WAIT, EVAL_RETRY_AFTER,
  EVAL_SHOULD_RETRY, FLAG_ACTIVE, FLAG_EXECUTING, FLAG_HAS_ERROR, FLAG_HAS_RESULT,
  FX_ABORT_ATTEMPT, FX_CALL, FX_CLEAR_TIMER, FX_EVAL, FX_FINISH, FX_INVOKE, FX_LISTEN,
  FX_START_TIMER, FX_STATE_CHANGED, FX_UNLISTEN, GIVE_UP_REASONS, INITIAL_FIELDS, MORE,
  OPTION_NAMES, OPT_BASE_WAIT, OPT_INITIAL_STATE, OPT_INTERVALS, OPT_JITTER,
  OPT_MAX_ATTEMPTS, OPT_MAX_EXECUTION_TIME, OPT_MAX_TOTAL_EXECUTION_TIME, OPT_MAX_WAIT,
  OUTCOME_INVALID, OUTCOME_REJECT, OUTCOME_RESULT, OUTCOME_THROWN, OUTCOME_UNDEFINED, OWN_STATE,
  STATUSES,
  TAG_ARRAY, TAG_OBJECT, TAG_THREW, TAG_UNDEFINED, WIN_ARG, WIN_GEN, WIN_LAST_GEN,
  WIN_PARKED_LEN,
  WIN_VALUE,
} from './wire.js';

/** Wire id by option name, with no prototype so `toString` is no option. */
const OPTION_IDS = Object.assign(
  Object.create(null),
  Object.fromEntries(OPTION_NAMES.map((name, id) => [name, id])),
);

/** Defaults as `retryer.options` shows them; the numbers come from the engine. */
const DEFAULTS = Object.freeze({
  backoff: 'exponential',
  baseWait: w.default_of(OPT_BASE_WAIT),
  enabled: true,
  jitter: w.default_of(OPT_JITTER),
  maxAttempts: w.default_of(OPT_MAX_ATTEMPTS),
  maxExecutionTime: w.default_of(OPT_MAX_EXECUTION_TIME),
  maxTotalExecutionTime: w.default_of(OPT_MAX_TOTAL_EXECUTION_TIME),
  maxWait: w.default_of(OPT_MAX_WAIT),
  throwOnError: 'last',
});

// Engine memory: a retryer holds an engine slot (192 B of linear memory,
// which never shrinks) from construction on, under one handle for its whole
// life. Above PARK_ABOVE attached retryers, idle ones are parked: their
// state is copied out (a small JS array the store reads from) and the slot
// is freed, the handle kept vacant; the next execute() rebuilds the slot
// from the options and that copy, under the same handle. So many
// short-lived retryers cost engine memory for about PARK_ABOVE of them at a
// time, instead of for every one the garbage collector has not finalized
// yet. Everything here is by handle (a number), so nothing queued for
// parking keeps a retryer or its functions alive, and the finalizer needs
// no record per retryer.

/** Handles holding a slot now. */
let attached = 0;
/** Handles of retryers that went idle while crowded, oldest first. */
let idle = [];
let idleHead = 0;
/** What parked retryers keep (what `park` copied), by handle. */
const parkedState = new Map();

/** Per handle: BUSY, QUEUED, VACANT, KEPT (slots.js). */
let marks = new Uint8Array(1024);

/** Makes room in `marks` for handle `h`. */
function mark(h) {
  if (h >= marks.length) {
    const grown = new Uint8Array(Math.max(h + 1, marks.length * 2));
    grown.set(marks);
    marks = grown;
  }
}

/** A new handle `h` holds a slot now (made, or given back to a parked retryer). */
function attachedNow(h) {
  mark(h);
  // KEPT too: the number may have been a template's.
  marks[h] &= ~(VACANT | KEPT);
  attached++;
}

/** Frees handle `h`'s slot and keeps the handle (parked or disposed). */
function vacate(h) {
  w.destroy(h, 1);
  marks[h] |= VACANT;
  attached--;
}

/** Parks handle `h` if the engine says its retryer is idle. */
function park(h) {
  if ((marks[h] & (BUSY | VACANT | KEPT)) !== 0 || !w.park(h, 0)) return false;
  // What the engine wrote into the window for parking, state included (at
  // OWN_STATE). A plain array: one allocation, where a typed array takes
  // three.
  const F = cells();
  const own = new Array(WIN_PARKED_LEN);
  for (let i = 0; i < WIN_PARKED_LEN; i++) own[i] = F[WIN + WIN_LAST_GEN + i];
  parkedState.set(h, own);
  vacate(h);
  return true;
}

/** Queues handle `h`, whose retryer went idle, to be parked when crowded. */
function idleNow(h) {
  if (attached > PARK_ABOVE && (marks[h] & QUEUED) === 0) {
    marks[h] |= QUEUED;
    idle.push(h);
  }
}

/** Parks one queued idle retryer when too many are attached. */
function relieve() {
  while (attached > PARK_ABOVE && idleHead < idle.length) {
    const h = idle[idleHead];
    idle[idleHead++] = 0;
    marks[h] &= ~QUEUED;
    if (park(h)) break;
  }
  if (idleHead > 1024 && idleHead * 2 > idle.length) {
    idle = idle.slice(idleHead);
    idleHead = 0;
  }
}

// The finalizer gives the handle back: whatever the engine still holds for
// it (a slot, or nothing when parked or disposed) and what parking kept.
// Every supported runtime has FinalizationRegistry.
const registry = new FinalizationRegistry((h) => {
  if ((marks[h] & VACANT) === 0) attached--;
  marks[h] = 0;
  parkedState.delete(h);
  w.destroy(h, 0);
});

const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

function isAbortError(e) {
  try {
    return e !== null && typeof e === 'object' && e.name === 'AbortError';
  } catch {
    return false;
  }
}

/**
 * Reads `opts` once (a getter or Proxy trap may run user code, and must run
 * only once): its own keys, and their values in the same order. Anything
 * that throws while reading becomes a TypeError naming what could not be
 * read.
 */
function readEntries(opts) {
  if (opts === undefined) return [[], []];
  if (opts === null || typeof opts !== 'object') {
    throw new TypeError(`retry-wasm: options must be an object; got ${show(opts)}`);
  }
  let keys;
  try {
    keys = Object.keys(opts);
  } catch (e) {
    throw new TypeError(`retry-wasm: the options object could not be read: ${show(e)}`);
  }
  const values = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    try {
      values[i] = opts[keys[i]];
    } catch (e) {
      throw new TypeError(`retry-wasm: option '${keys[i]}' could not be read: ${show(e)}`);
    }
  }
  return [keys, values];
}

/** The entries as a plain object (see readEntries). */
function snapshotOf([keys, values]) {
  // No prototype: an own '__proto__' key stays a key (and is refused).
  const snapshot = Object.create(null);
  for (let i = 0; i < keys.length; i++) snapshot[keys[i]] = values[i];
  return snapshot;
}

/**
 * Stages one option's value; returns 0 or the engine's error code. Pushes
 * the engine calls made onto `calls` as triples (see `stageCall`), so that a
 * parked retryer's policy can be rebuilt without reading user values again.
 */
function stageOption(id, value, calls) {
  const tag = tagOf(value);
  let code = typeof value === 'string'
    ? stageCall(calls, id, -1, value)
    : stageCall(calls, id, tag, numberOf(value, tag));
  if (!code && id === OPT_INTERVALS && tag === TAG_ARRAY) {
    const n = value.length;
    for (let i = 0; i < n && !code; i++) code = stageCall(calls, -1 - i, ...classify(value[i]));
  }
  if (!code && id === OPT_INITIAL_STATE && tag === TAG_OBJECT) {
    for (let f = 0; f < INITIAL_FIELDS.length && !code; f++) {
      const field = value[INITIAL_FIELDS[f]];
      // lastResult / lastError may be any value: only presence matters.
      code = f >= 3 ? w.initial(f, field === undefined ? TAG_UNDEFINED : TAG_OBJECT, 0) : w.initial(f, ...classify(field));
    }
  }
  return code;
}

/**
 * One replayable staging call, as a triple `a, t, n`: entry `-1 - a` of
 * `intervals` when `a` < 0, else option `a` with string `n` when `t` is -1,
 * else option `a` with tag `t` and number `n`. Made, and pushed onto `calls`
 * when given, by both first staging and `replay`. Returns the engine's code.
 */
function stageCall(calls, a, t, n) {
  calls?.push(a, t, n);
  if (a < 0) return w.interval(-1 - a, t, n);
  return t === -1 ? w.opt_str(a, n) : w.opt(a, t, n);
}

/**
 * Stages every option of the snapshot `opts` on the engine (a copy of
 * retryer `h`'s policy, or the defaults when `h` is 0) and commits them.
 * Throws the engine's verdict as a TypeError or RangeError; a failed call
 * changes nothing. Returns the handle. On success, `record` (option id ->
 * engine calls) gets the calls of every option but `initialState`.
 */
function applyOptions(h, opts, record) {
  const made = {};
  w.stage(h);
  try {
    for (const key of Object.keys(opts)) {
      const id = OPTION_IDS[key];
      const value = opts[key];
      let code;
      try {
        const calls = [];
        code = id === undefined ? 1 : stageOption(id, value, calls);
        if (id !== OPT_INITIAL_STATE) made[id] = calls;
      } catch (e) {
        // An array or object option whose entries threw while being read.
        throw new TypeError(`retry-wasm: option '${key}' could not be read: ${show(e)}`);
      }
      if (code) throw optionError(code, key, value);
    }
  } catch (e) {
    w.unstage();
    throw e;
  }
  const r = w.commit(h);
  if (r >>> 31) {
    const code = r & 0x7fffffff;
    const name = OPTION_NAMES[(code >>> 2) & 0x3f];
    throw optionError(code, name, opts[name]);
  }
  Object.assign(record, made);
  return r;
}

/** A new engine slot with the policy `record` describes. */
function spawn(record) {
  return template === null || template.given[RECORD] !== record ? replay(record) : w.share(template.h);
}

/** Builds a new engine slot from the calls `applyOptions` recorded. */
function replay(record) {
  w.stage(0);
  for (const calls of Object.values(record)) {
    for (let k = 0; k < calls.length; k += 3) stageCall(null, calls[k], calls[k + 1], calls[k + 2]);
  }
  const r = w.commit(0);
  // Options that passed once pass again; a failure here is a bug.
  if (r >>> 31) throw new TypeError('retry-wasm: could not rebuild a parked retryer');
  return r;
}

/**
 * The options snapshot the last retryer was built from, with its policy kept
 * in a template engine slot: a retryer built from the same options object
 * holding the same values shares that policy (one call) instead of
 * staging and checking every option again, and shares the merged options
 * with the replay record on them (neither is ever changed in place). Only
 * snapshots of primitives and functions qualify: their classification
 * cannot change.
 */
let template = null;

function sameSnapshot(t, opts, [keys, values]) {
  if (t === null || t.opts !== opts || keys.length !== t.keys.length) return false;
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] !== t.keys[i] || !Object.is(values[i], t.values[i])) return false;
  }
  return true;
}

function remember(opts, [keys, values], merged, h) {
  if (!values.every((v) => v === null || (typeof v !== 'object' && typeof v !== 'symbol'))) return;
  const copy = w.share(h);
  // The queue may still hold this number from a retryer that died: a
  // template slot must never be parked.
  mark(copy);
  marks[copy] = KEPT;
  if (template !== null) w.destroy(template.h, 0);
  template = { opts, keys, values, given: merged, h: copy };
}

/**
 * Key of the replay record (see `replay`) on a retryer's merged options:
 * the two always change together, and one field fewer in every retryer
 * is 8 B less for each pending flow. A symbol, so `retryer.options` (built
 * from the string keys) never shows it.
 */
const RECORD = Symbol('retry-wasm record');

/** Merges given options over `base` the way `retryer.options` shows them. */
function mergeOptions(base, opts) {
  const merged = { ...base };
  for (const key of Object.keys(opts)) {
    const value = opts[key];
    if (value === undefined) {
      if (key in DEFAULTS) merged[key] = DEFAULTS[key];
      else delete merged[key];
    } else {
      merged[key] = value;
    }
  }
  return merged;
}

const NO_SUBSCRIBERS = Object.freeze([]);

// Module-private keys through which a retryer's store reaches it.
const READ_STATE = Symbol('retry-wasm state');
const SUBSCRIBE = Symbol('retry-wasm subscribe');

/** `retryer.store`: the state snapshot and its subscription. */
class RetryerStore {
  #retryer;

  constructor(retryer) {
    this.#retryer = retryer;
  }

  /** A plain object: a new one after every change, the same while nothing changed. */
  get state() {
    return this.#retryer[READ_STATE]();
  }

  /** Calls `listener` (a function or `{ next }`) after each change; returns an unsubscribe function. */
  subscribe(listener) {
    return this.#retryer[SUBSCRIBE](listener);
  }
}

/** The retryer fields few retryers ever set (AsyncRetryer `#more`). */
class Rare {
  constructor() {
    /** The merged options view (`retryer.options`), built when first read. */
    this.options = null;
    this.store = null;
    /** Unfinished flows older than the newest, by generation. */
    this.older = null;
    /** The armed attempt and total deadline timers. */
    this.deadlines = [null, null];
    /** The outside signal's listener, and the signal it listens to. */
    this.onSignal = null;
    this.listened = null;
    /** Replaced, never changed in place, so all can start with one. */
    this.subscribers = NO_SUBSCRIBERS;
    /** The last state snapshot and the state version it shows. */
    this.snap = null;
    this.snapVersion = -1;
    // The bound methods but `execute`, made when first read.
    this.setOptions = null;
    this.getAbortSignal = null;
    this.abort = null;
    this.reset = null;
  }
}

/** One `execute()` call: its arguments, its promise, and its values. */
class Flow {
  constructor(args) {
    this.gen = 0;
    /** The arguments of the call; null for none (see argsOut). */
    this.args = args;
    /**
     * The promise's `resolve`; null once the flow is done. Its `reject` is
     * not kept (see rejectThrough).
     */
    this.resolve = null;
    /**
     * The latest outcome the engine took: the result after a success, the
     * error after a failure (one field: a flow never needs both, as nothing
     * reads an error once a success is taken).
     */
    this.value = undefined;
    /** A FlowExtra, made when first needed: most flows never need it. */
    this.extra = null;
  }

  get more() {
    return (this.extra ??= new FlowExtra());
  }

  /** Whether the flow has settled its promise. */
  done() {
    return this.resolve === null;
  }

  /** The arguments as callbacks get them: one array per flow, made when first asked for. */
  argsOut() {
    return (this.args ??= []);
  }
}

/** What few flows need: errors of user code, and the attempt's AbortController. */
class FlowExtra {
  constructor() {
    /** `{ error }` from the first callback or dynamic option that threw. */
    this.thrown = undefined;
    /** The last dynamic option value, for the error when it is refused. */
    this.invalid = undefined;
    /** The running attempt's controller (see getAbortSignal), and its attempt. */
    this.ctrl = null;
    this.ctrlAttempt = 0;
  }
}

// A shared executor instead of a closure per call: `new Promise` runs it
// synchronously, so the flow being created is always the one in `capturing`.
let capturing = null;
function capture(resolve) {
  capturing.resolve = resolve;
  capturing = null;
}

/**
 * Rejects a flow's promise with `error` through its `resolve`: the promise
 * adopts a rejected one, two microtasks later than a `reject` call would
 * settle it. Not keeping `reject` lets the collector take that function
 * and its field from every pending flow (63-76 B of heap per flow in the
 * bench's load case); a flow rejects at most once, at its end.
 */
function rejectThrough(resolve, error) {
  resolve(Promise.reject(error));
}

/**
 * An arrow function's source text (V8, SpiderMonkey and JavaScriptCore
 * give the exact text): such a function has no `this` of its own, so it
 * cannot reach the retryer that calls it. Any other text (a plain or async
 * function, a method, a bound or native function) fails the test, which
 * only ever errs towards reading the clock.
 */
const ARROW = /^(async\s*)?([\w$]+|\([^)]*\))\s*=>/;
const sourceOf = Function.prototype.toString;

/** Set by `asyncRetry` for the one constructor call it makes. */
let unheld = false;

/**
 * Wraps `fn` in a retryer and returns its bound `execute`: overlapping calls
 * share one retryer, so a new call aborts the previous flow.
 *
 * Nobody else holds that retryer. If `fn` is an arrow function (its `this`
 * is not the retryer) and the engine finds that no option hands the
 * retryer to user code and no total deadline is measured
 * (`Policy::times_only_state`), the state's two time fields can never be
 * read: its flows then start and succeed without the two clock reads, in
 * Node most of the cost of a success.
 */
export function asyncRetry(fn, initialOptions) {
  unheld = true;
  return new AsyncRetryer(fn, initialOptions).execute;
}

/**
 * Retries an async function with backoff, deadlines and cancellation; a
 * drop-in for `@tanstack/pacer`'s AsyncRetryer. See the README for every
 * option and its default.
 */
export class AsyncRetryer {
  /** The engine handle, the retryer's for its whole life (see PARK_ABOVE). */
  #h;

  /**
   * Where this retryer's state is: its index in linear memory (engine.js
   * `stateIndex`, a call), or -1 without a slot.
   */
  #at() {
    const h = this.#h;
    return (marks[h] & VACANT) === 0 ? stateIndex(h) : -1;
  }

  /**
   * State cell `k` (CELL_*) at `at` (see #at, asked once by a caller that
   * reads several): from linear memory, or the parked copy.
   */
  #cell(k, at) {
    if (at >= 0) return stateCell(at, k);
    // Parked: the copy parking kept. Disposed: nothing kept, so the state
    // of a new retryer (its next execute() starts from that).
    return parkedState.get(this.#h)?.[OWN_STATE + k] ?? 0;
  }

  /** Gives a parked (or disposed) retryer an engine slot again. */
  #attach() {
    const h = this.#h;
    if ((marks[h] & VACANT) === 0) return;
    // Make room first: while this handle is vacant parking cannot pick it,
    // and once attached it is about to be used.
    relieve();
    w.reuse(h);
    try {
      // Options that passed once pass again: the slot lands on `h`.
      if (spawn(this.#given[RECORD]) !== h) throw new TypeError('retry-wasm: could not rebuild a parked retryer');
    } finally {
      w.reuse(0);
    }
    const own = parkedState.get(h);
    if (own !== undefined) {
      const F = cells();
      for (let i = 0; i < WIN_PARKED_LEN; i++) F[WIN + WIN_LAST_GEN + i] = own[i];
      w.park(h, 1);
      parkedState.delete(h);
    }
    attachedNow(h);
  }

  /** The options given, merged; the replay record under RECORD. */
  #given;
  /**
   * 0, or PUMPING while effects are being carried out, DIRTY once an input
   * made inside that queued more (one field: every field costs each
   * pending flow 8 B).
   */
  #pump = 0;
  /** The newest flow's record; older unfinished ones wait in `rare.older`. */
  #flow = null;
  /** The bucket of the armed wait timer (timers.js); the deadlines' are in `rare`. */
  #wait = null;
  #lastResult = undefined;
  #lastError = undefined;
  /**
   * What most retryers never need, in one record made on first use (see
   * Rare): under load every concurrent flow is a retryer, and each field
   * here costs every one of them 8 bytes.
   */
  #more = null;

  #rare() {
    return (this.#more ??= new Rare());
  }

  /** The bucket of the armed timer of kind `t` (wait, attempt, total), or null. */
  #timer(t) {
    return t === 0 ? this.#wait : (this.#more?.deadlines[t - 1] ?? null);
  }

  /** Clears the timer of kind `t`, if armed: once, however often called. */
  #clearTimer(t) {
    const bucket = this.#timer(t);
    if (bucket !== null) {
      this.#setTimer(t, null);
      disarm(bucket);
    }
  }

  #setTimer(t, timer) {
    if (t === 0) this.#wait = timer;
    else this.#rare().deadlines[t - 1] = timer;
  }

  constructor(fn, initialOptions = {}) {
    // Taken before anything can throw: only asyncRetry's own call sees it.
    const alone = unheld;
    unheld = false;
    if (typeof fn !== 'function') {
      throw new TypeError(`retry-wasm: 'fn' must be a function to retry; got ${show(fn)}`);
    }
    /** The function being retried. */
    this.fn = fn;
    const entries = readEntries(initialOptions);
    let h;
    // On the template path no snapshot object is built at all.
    let given = null;
    if (sameSnapshot(template, initialOptions, entries)) {
      h = spawn(template.given[RECORD]);
      this.#given = template.given;
      /** The `key` option, an identifier. */
      this.key = template.given.key;
    } else {
      given = snapshotOf(entries);
      const record = {};
      h = applyOptions(0, given, record);
      // A plain copy: the prototype-less snapshot is a slower, larger dictionary.
      this.#given = mergeOptions({}, given);
      this.#given[RECORD] = record;
      remember(initialOptions, entries, this.#given, h);
      this.key = given.key;
    }
    this.#h = h;
    attachedNow(h);
    // The handle as held value (a number: no record per retryer), and no
    // unregister token (registering with one costs about twice as much): a
    // disposed retryer keeps its handle, vacant, until the finalizer runs.
    registry.register(this, h);
    const init = given?.initialState;
    if (init !== null && typeof init === 'object') {
      // Read (and validated) once already; a getter that threw never gets here.
      this.#lastResult = init.lastResult;
      this.#lastError = init.lastError;
    }
    this.#hint();
    if (alone && ARROW.test(sourceOf.call(fn)) && w.untimed(h)) marks[h] |= UNTIMED;
    relieve();
    idleNow(h);
  }

  /**
   * The state store: `state` (8 fields) and `subscribe(listener)`. Made
   * when first read: a retryer used only through `execute` never needs it.
   */
  get store() {
    const rare = this.#rare();
    return (rare.store ??= new RetryerStore(this));
  }

  /** The merged options, defaults included (built when first read). */
  get options() {
    const rare = this.#rare();
    return (rare.options ??= this.#view());
  }

  set options(value) {
    this.#rare().options = value;
  }

  // The methods are bound, as pacer's are (`const { execute } = retryer`
  // works), but each bound function is made when first read: a retryer used
  // only through `execute` carries one function, not five. A setter keeps
  // them assignable, as pacer's own properties are. `execute` has a field of
  // its own and is a bound method (48 B, no context, where an arrow closure
  // and its context take ~110 B); the four others are kept in `rare`.
  #executeFn = null;

  /** Merges and validates new options; an active flow goes on with them. */
  get setOptions() {
    return (this.#rare().setOptions ??= (newOptions) => this.#setOptions(newOptions));
  }

  set setOptions(f) {
    this.#rare().setOptions = f;
  }

  /**
   * Runs the function with retries. Resolves its result, or `undefined`
   * when disabled, aborted or (with throwOnError false) failed.
   */
  get execute() {
    return (this.#executeFn ??= this.#execute.bind(this));
  }

  set execute(f) {
    this.#executeFn = f;
  }

  /**
   * The AbortSignal of the running attempt (pass it to `fetch`); `null` when
   * no flow is active.
   */
  get getAbortSignal() {
    return (this.#rare().getAbortSignal ??= () => this.#abortSignal());
  }

  set getAbortSignal(f) {
    this.#rare().getAbortSignal = f;
  }

  /** Aborts the active flow (`onAbort('manual')`); without one, does nothing. */
  get abort() {
    return (this.#rare().abort ??= () => this.#abort());
  }

  set abort(f) {
    this.#rare().abort = f;
  }

  /** Restores the default state; an active flow goes on. */
  get reset() {
    return (this.#rare().reset ??= () => this.#reset());
  }

  set reset(f) {
    this.#rare().reset = f;
  }

  #setOptions(newOptions) {
    const next = snapshotOf(readEntries(newOptions));
    this.#attach();
    // A new record: the old one may be shared with other retryers.
    const record = { ...this.#given[RECORD] };
    applyOptions(this.#h, next, record);
    const merged = mergeOptions(this.#given, next);
    merged[RECORD] = record;
    this.#given = merged;
    if ('key' in next) this.key = next.key;
    if (this.#more !== null) this.#more.options = null;
    this.#hint();
    if (this.#pump === 0) this.#input(w.next(this.#h));
  }

  /** `execute`'s body, bound to the retryer when first read. */
  #execute(...args) {
    if ((marks[this.#h] & VACANT) !== 0) {
      try {
        this.#attach();
      } catch (error) {
        return Promise.reject(error);
      }
    }
    // No arguments (how most retried functions are called): keep none, and
    // let the empty array the call made be collected young (32 B less for
    // every pending flow); a callback that asks gets one (Flow#argsOut).
    const flow = new Flow(args.length === 0 ? null : args);
    capturing = flow;
    const promise = new Promise(capture);
    const prev = this.#flow;
    if (prev !== null && !prev.done()) (this.#rare().older ??= new Map()).set(prev.gen, prev);
    const signal = this.#given.signal;
    // Numbers, not booleans, into the engine: V8 converts those fastest.
    const e = w.execute(this.#h, marks[this.#h] & UNTIMED ? 0 : Date.now(), signal != null && signal.aborted === true ? 1 : 0, this.#pump === 0 ? 1 : 0);
    // `>>> 0`: a small integer, not a double, so that no field or context
    // holding it is boxed (16 B each per flow).
    flow.gen = cells()[WIN + WIN_LAST_GEN] >>> 0;
    this.#flow = flow;
    // The common case, a lone first attempt: run it without the drain loop.
    if (e === FX_INVOKE && this.#pump === 0) {
      this.#pump = PUMPING;
      let dirty;
      try {
        this.#invoke(flow);
      } finally {
        dirty = this.#pump === DIRTY;
        this.#pump = 0;
      }
      if (dirty) this.#input(w.next(this.#h));
    } else {
      this.#input(e);
    }
    return promise;
  }

  #abortSignal() {
    const flow = this.#flow;
    const at = this.#at();
    if ((this.#cell(CELL_FLAGS, at) & FLAG_ACTIVE) === 0 || flow === null) return null;
    const attempt = this.#cell(CELL_ATTEMPT, at);
    const x = flow.more;
    if (x.ctrl === null || x.ctrlAttempt !== attempt) {
      x.ctrl = new AbortController();
      x.ctrlAttempt = attempt;
    }
    return x.ctrl.signal;
  }

  #abort() {
    this.#input(w.cancel(this.#h, false, this.#pump === 0));
  }

  #reset() {
    this.#attach();
    this.#lastResult = undefined;
    this.#lastError = undefined;
    this.#input(w.reset(this.#h, this.#pump === 0));
  }

  /** Aborts any active flow and frees the engine's memory for this retryer. */
  [disposeSymbol]() {
    const h = this.#h;
    parkedState.delete(h);
    if ((marks[h] & VACANT) !== 0) return;
    this.#abort();
    for (let t = 0; t < 3; t++) this.#clearTimer(t);
    vacate(h);
  }

  #view() {
    const o = mergeOptions(DEFAULTS, this.#given);
    if (this.#given.throwOnError === undefined && typeof this.#given.onError === 'function') o.throwOnError = false;
    return o;
  }

  /** Tells the engine what a dynamic `enabled` says, for `status`. */
  #hint() {
    const enabled = this.#given.enabled;
    if (typeof enabled === 'function') {
      // Busy while user code runs: the engine is idle, so what that code
      // does could park this retryer before the answer lands. (Everywhere
      // else user code runs, a flow is active or an effect queued, and the
      // engine refuses to park.)
      const h = this.#h;
      const busy = marks[h] & BUSY;
      marks[h] |= BUSY;
      try {
        w.hint(h, !!enabled(this));
      } catch {
        // Nobody can receive this error now; the next execute() asks
        // `enabled` again and rejects with what it throws.
      } finally {
        if (!busy) marks[h] &= ~BUSY;
      }
    }
  }

  [READ_STATE]() {
    return this.#state();
  }

  [SUBSCRIBE](listener) {
    return this.#subscribe(listener);
  }

  #state() {
    const at = this.#at();
    const version = this.#cell(CELL_VERSION, at);
    const rare = this.#rare();
    if (version !== rare.snapVersion || rare.snap === null) {
      rare.snapVersion = version;
      const flags = this.#cell(CELL_FLAGS, at);
      rare.snap = {
        currentAttempt: this.#cell(CELL_ATTEMPT, at),
        executionCount: this.#cell(CELL_COUNT, at),
        isExecuting: (flags & FLAG_EXECUTING) !== 0,
        lastError: (flags & FLAG_HAS_ERROR) !== 0 ? this.#lastError : undefined,
        lastExecutionTime: this.#cell(CELL_LAST_TIME, at),
        lastResult: (flags & FLAG_HAS_RESULT) !== 0 ? this.#lastResult : undefined,
        status: STATUSES[flags >>> 4],
        totalExecutionTime: this.#cell(CELL_TOTAL_TIME, at),
      };
    }
    return rare.snap;
  }

  #subscribe(listener) {
    const call = typeof listener === 'function'
      ? listener
      : listener !== null && typeof listener === 'object' && typeof listener.next === 'function'
        ? (state) => listener.next(state)
        : null;
    if (call === null) throw new TypeError('retry-wasm: subscribe needs a function or an observer with next()');
    const entry = { call };
    const rare = this.#rare();
    rare.subscribers = [...rare.subscribers, entry];
    this.#attach();
    w.listeners(this.#h, true);
    const unsubscribe = () => {
      rare.subscribers = rare.subscribers.filter((s) => s !== entry);
      if (rare.subscribers.length === 0) {
        this.#attach();
        w.listeners(this.#h, false);
      }
    };
    unsubscribe.unsubscribe = unsubscribe;
    return unsubscribe;
  }

  #flowOf(gen) {
    const flow = this.#flow;
    if (flow !== null && flow.gen === gen) return flow;
    return this.#more?.older?.get(gen) ?? null;
  }

  /**
   * Feeds the result of an input call. Outside a drain, `e` is the first
   * effect and this drains the queue; inside one (a callback re-entered),
   * the outer drain picks the new effects up.
   */
  #input(e) {
    if (this.#pump !== 0) {
      if (e !== 0) this.#pump = DIRTY;
      return;
    }
    if (e === 0) return;
    this.#pump = PUMPING;
    try {
      for (;;) {
        this.#run(e);
        if ((e & MORE) === 0 && this.#pump !== DIRTY) break;
        this.#pump = PUMPING;
        e = w.next(this.#h);
        if (e === 0) break;
      }
    } finally {
      this.#pump = 0;
    }
  }

  #settled(gen, attempt, fulfilled, value) {
    const flow = this.#flowOf(gen);
    if (flow === null || flow.done()) return;
    // A flow that is not done belongs to an attached retryer.
    const h = this.#h;
    const pop = this.#pump === 0 ? 1 : 0;
    // Outside a pump the engine has nothing queued, so an effect back means
    // it took this settlement (a stale attempt's yields none). Inside one
    // its state version tells: a promise reaction never runs there, but a
    // Promise subclass whose `then` calls back at once settles from within
    // #invoke.
    const at = pop ? -1 : stateIndex(h);
    const before = pop ? 0 : stateCell(at, CELL_VERSION);
    const cancelled = !fulfilled && isAbortError(value);
    const e = fulfilled
      ? w.ok(h, gen, attempt, marks[h] & UNTIMED ? 0 : Date.now(), pop)
      : w.err(h, gen, attempt, cancelled ? 1 : 0, Date.now(), pop);
    if (pop ? e !== 0 : stateCell(at, CELL_VERSION) !== before) {
      // Accepted: the engine moved on. Record the value before any effect runs.
      flow.value = value;
      if (fulfilled) this.#lastResult = value;
      else if (!cancelled) this.#lastError = value;
    }
    // The common case, a lone success: settle without the drain loop.
    if (e === (FX_FINISH | (OUTCOME_RESULT << 4)) && pop) {
      this.#finish(OUTCOME_RESULT, gen, 0);
      return;
    }
    this.#input(e);
  }

  #callbackThrew(gen, error) {
    const flow = this.#flowOf(gen);
    if (flow === null || flow.done()) {
      reportLater(error);
      return;
    }
    flow.more.thrown ??= { error };
    this.#input(w.threw(this.#h, gen, this.#pump === 0));
  }

  #run(e) {
    const kind = e & 15;
    const sub = (e >>> 4) & 15;
    // Effects run only on attached retryers; their payload is in the window.
    const F = cells();
    switch (kind) {
      case FX_INVOKE: {
        const flow = this.#flowOf(F[WIN + WIN_GEN]);
        if (flow !== null) this.#invoke(flow);
        return;
      }
      case FX_START_TIMER:
        this.#clearTimer(sub);
        this.#setTimer(sub, arm(this, sub, F[WIN + WIN_VALUE]));
        return;
      case FX_CLEAR_TIMER:
        this.#clearTimer(sub);
        return;
      case FX_ABORT_ATTEMPT: {
        const flow = this.#flowOf(F[WIN + WIN_GEN]);
        if (flow === null) return;
        let reason;
        if (sub === ABORT_EXECUTION_TIMEOUT) {
          reason = timeoutError(this.options.maxExecutionTime);
          flow.value = reason;
          this.#lastError = reason;
        } else {
          reason = abortError(ABORT_REASONS[sub]);
        }
        const ctrl = flow.extra?.ctrl;
        if (ctrl != null && !ctrl.signal.aborted) ctrl.abort(reason);
        return;
      }
      case FX_CALL:
        this.#call(sub, F[WIN + WIN_GEN], F[WIN + WIN_ARG]);
        return;
      case FX_EVAL:
        this.#eval(sub, F[WIN + WIN_GEN], F[WIN + WIN_VALUE]);
        return;
      case FX_LISTEN: {
        const signal = this.options.signal;
        if (signal != null) {
          const rare = this.#rare();
          rare.onSignal ??= () => this.#input(w.cancel(this.#h, true, this.#pump === 0));
          signal.addEventListener('abort', rare.onSignal);
          rare.listened = signal;
        }
        return;
      }
      case FX_UNLISTEN: {
        const rare = this.#more;
        if (rare !== null && rare.listened !== null) {
          rare.listened.removeEventListener('abort', rare.onSignal);
          rare.listened = null;
        }
        return;
      }
      case FX_STATE_CHANGED: {
        const state = this.#state();
        for (const s of this.#more?.subscribers ?? NO_SUBSCRIBERS) {
          try {
            s.call(state);
          } catch (error) {
            reportLater(error);
          }
        }
        return;
      }
      case FX_FINISH:
        this.#finish(sub, F[WIN + WIN_GEN], F[WIN + WIN_ARG]);
        return;
      default:
    }
  }

  /** A timer of kind `t` armed in `bucket` fired (see timers.js). */
  [FIRE](t, bucket) {
    if (this.#timer(t) !== bucket) return; // cleared, or armed anew since
    this.#setTimer(t, null);
    this.#input(w.timer(this.#h, t, Date.now(), this.#pump === 0));
  }

  /** Calls the function for the attempt the engine just named. */
  #invoke(flow) {
    const gen = flow.gen;
    // The call that popped this Invoke (execute or a drain step) has just
    // written its attempt into the window; no user code ran since.
    const attempt = cells()[WIN + WIN_VALUE] >>> 0;
    const x = flow.extra;
    if (x !== null && x.ctrlAttempt !== attempt) x.ctrl = null;
    let p;
    try {
      // A spread call costs ~25 ns more than a plain one, even with no
      // arguments, which is how most retried functions are called.
      const args = flow.args;
      p = args === null ? this.fn() : this.fn(...args);
    } catch (error) {
      p = Promise.reject(error);
    }
    if (!(p instanceof Promise)) p = Promise.resolve(p);
    p.then(
      (v) => this.#settled(gen, attempt, true, v),
      (err) => this.#settled(gen, attempt, false, err),
    );
  }

  #call(cb, gen, arg) {
    const flow = this.#flowOf(gen);
    if (flow === null) return;
    const o = this.options;
    try {
      switch (cb) {
        case CB_RETRY: o.onRetry?.(arg, flow.value, this); break;
        case CB_ERROR: o.onError?.(flow.value, flow.argsOut(), this); break;
        case CB_LAST_ERROR: o.onLastError?.(flow.value, this); break;
        case CB_SUCCESS: o.onSuccess?.(flow.value, flow.argsOut(), this); break;
        case CB_SETTLED: o.onSettled?.(flow.argsOut(), this); break;
        case CB_ABORT: o.onAbort?.(ABORT_REASONS[arg], this); break;
        case CB_EXECUTION_TIMEOUT: o.onExecutionTimeout?.(this); break;
        case CB_TOTAL_EXECUTION_TIMEOUT: o.onTotalExecutionTimeout?.(this); break;
        case CB_GIVE_UP: o.onGiveUp?.(flow.value, GIVE_UP_REASONS[arg], this); break;
        default:
      }
    } catch (error) {
      this.#callbackThrew(gen, error);
    }
  }

  #eval(what, gen, attempt) {
    const flow = what === EVAL_ENABLED ? null : this.#flowOf(gen);
    const o = this.options;
    let tag;
    let num = 0;
    let value;
    try {
      switch (what) {
        case EVAL_ENABLED: value = !!o.enabled(this); break;
        case EVAL_SHOULD_RETRY: value = !!o.shouldRetry(flow?.value, attempt, this); break;
        case EVAL_MAX_ATTEMPTS: value = o.maxAttempts(this); break;
        case EVAL_BASE_WAIT: value = o.baseWait(this); break;
        case EVAL_MAX_WAIT: value = o.maxWait(this); break;
        case EVAL_RETRY_AFTER: value = o.retryAfter(flow?.value, attempt, this); break;
        case EVAL_BACKOFF: value = o.backoff(attempt, this); break;
        default: value = undefined;
      }
      [tag, num] = classify(value);
      if (flow !== null) flow.more.invalid = value;
    } catch (error) {
      tag = TAG_THREW;
      if (flow !== null) flow.more.thrown ??= { error };
      else if (what === EVAL_ENABLED) {
        const pending = this.#flowOf(gen);
        if (pending !== null) pending.more.thrown ??= { error };
      }
    }
    this.#input(w.provide(this.#h, gen, tag, num, Date.now(), this.#pump === 0));
  }

  #finish(outcome, gen, arg) {
    const flow = this.#flowOf(gen);
    if (flow === null || flow.done()) return;
    const { resolve } = flow;
    flow.resolve = null;
    // Nothing of a settled flow stays reachable from the retryer. Before
    // resolving: reading a result's `then` may run user code.
    if (this.#flow === flow) this.#flow = null;
    else this.#more?.older?.delete(gen);
    switch (outcome) {
      case OUTCOME_RESULT: resolve(flow.value); break;
      case OUTCOME_UNDEFINED: resolve(undefined); break;
      case OUTCOME_REJECT: rejectThrough(resolve, flow.value); break;
      case OUTCOME_INVALID: rejectThrough(resolve, dynamicError(arg, flow.extra?.invalid)); break;
      case OUTCOME_THROWN: rejectThrough(resolve, flow.extra?.thrown?.error); break;
      default: resolve(undefined);
    }
    idleNow(this.#h);
  }
}

