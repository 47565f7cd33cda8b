// Coalesced timers: one host timer per due millisecond, however many
// retryers wait for it. Flows that fail together retry together (10,000
// flows failing at once all wait the same 1 ms), and a host timer each would
// cost every one of them a Node `Timeout` (~150 B with its fields) plus a
// callback closure and its context; an entry here is one small record.
import { reportLater } from './errors.js';

/** The method a timer's owner is called through when it fires: `owner[FIRE](kind)`. */
export const FIRE = Symbol('retry-wasm timer');

/** Due millisecond -> the open bucket due then (one that has not fired). */
const open = new Map();

/**
 * The host's own `setTimeout`, as found when this module loaded. Only its
 * timers are shared: fake timers (a test's) can be cleared or rewound behind
 * our back (`vi.clearAllTimers()` also resets the fake clock), and a timer
 * joining a bucket whose host timer is gone would never fire. Under any
 * other `setTimeout`, each timer gets a host timer of its own, with its
 * exact delay, as it would without this module.
 */
const HOST_SET_TIMEOUT = globalThis.setTimeout;

/** Timers due in one millisecond, behind one host timer. */
class Bucket {
  constructor(due, clearTimer) {
    /** The due millisecond, its key in `open`; NaN for an unshared one. */
    this.due = due;
    this.entries = [];
    /** Entries not yet cleared: at 0 the host timer is cleared too. */
    this.live = 0;
    this.handle = undefined;
    /** The `clearTimeout` of the host the timer was set on. */
    this.clearTimer = clearTimer;
  }
}

/** One armed timer; `owner` is dropped when it fires or is cleared. */
class Timer {
  constructor(owner, kind, bucket) {
    this.owner = owner;
    this.kind = kind;
    this.bucket = bucket;
  }
}

/**
 * Arms a timer of `kind` for `owner`, due in `delay` ms, and returns the
 * handle for `disarm`. A shared timer is due at the next whole millisecond
 * (never early), so timers armed for the same millisecond share one.
 */
export function arm(owner, kind, delay) {
  const setTimer = globalThis.setTimeout;
  let bucket;
  if (setTimer === HOST_SET_TIMEOUT) {
    const now = Date.now();
    const due = Math.ceil(now + delay);
    bucket = open.get(due);
    if (bucket === undefined) {
      bucket = new Bucket(due, globalThis.clearTimeout);
      open.set(due, bucket);
      bucket.handle = setTimer(fire, due - now, bucket);
    }
  } else {
    bucket = new Bucket(NaN, globalThis.clearTimeout);
    bucket.handle = setTimer(fire, delay, bucket);
  }
  const timer = new Timer(owner, kind, bucket);
  bucket.entries.push(timer);
  bucket.live++;
  return timer;
}

/** Clears a timer from `arm` (one that fired or was cleared is left alone). */
export function disarm(timer) {
  if (timer.owner === null) return;
  timer.owner = null;
  const bucket = timer.bucket;
  if (--bucket.live === 0) {
    const clearTimer = bucket.clearTimer;
    clearTimer(bucket.handle);
    if (open.get(bucket.due) === bucket) open.delete(bucket.due);
  }
}

function fire(bucket) {
  // Closed first: a timer armed while this one runs goes to a new bucket,
  // even for this same millisecond.
  if (open.get(bucket.due) === bucket) open.delete(bucket.due);
  const entries = bucket.entries;
  for (let i = 0; i < entries.length; i++) {
    const timer = entries[i];
    const owner = timer.owner;
    if (owner === null) continue;
    timer.owner = null;
    bucket.live--;
    try {
      owner[FIRE](timer.kind);
    } catch (error) {
      // The retryer catches what user code throws; this is a last guard so
      // that one failure cannot strand the other timers of the bucket.
      reportLater(error);
    }
  }
}
