// Coalesced timers: one host timer per due millisecond, however many
// retryers wait for it. Flows that fail together retry together (10,000
// flows failing at once all wait the same 1 ms), and a host timer each would
// cost every one of them a Node `Timeout` (~150 B with its fields) plus a
// callback closure and its context; an entry here is two array slots.
import { reportLater } from './errors.js';

/** How a bucket calls a timer's owner when it fires: `owner[FIRE](kind, bucket)`. */
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

/**
 * Timers due in one millisecond, behind one host timer: `entries` holds
 * owner, kind, owner, kind, ...
 */
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

/**
 * Arms a timer of `kind` for `owner`, due in `delay` ms; returns its
 * bucket, which the owner keeps to know the timer by (and to `disarm` it).
 * A shared timer is due at the next whole millisecond (never early), so
 * timers armed for the same millisecond share one.
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
  bucket.entries.push(owner, kind);
  bucket.live++;
  return bucket;
}

/**
 * Clears one timer the owner armed in `bucket` (and forgets it). Its entry
 * stays until the bucket fires, when the owner ignores it; a bucket with
 * no live timer left is cleared at once.
 */
export function disarm(bucket) {
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
  for (let i = 0; i < entries.length; i += 2) {
    try {
      // The owner fires the timer only if it still has it in this bucket.
      entries[i][FIRE](entries[i + 1], bucket);
    } catch (error) {
      // The retryer catches what user code throws; this is a last guard so
      // that one failure cannot strand the other timers of the bucket.
      reportLater(error);
    }
  }
}
