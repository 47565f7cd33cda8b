// Classifying JavaScript values for the engine, and showing them in messages.
import {
  TAG_ARRAY, TAG_BOOL, TAG_BUDGET, TAG_FUNCTION, TAG_NULL, TAG_NUMBER, TAG_OBJECT, TAG_OTHER,
  TAG_SIGNAL, TAG_UNDEFINED,
} from './wire.js';

/** Budget ids by RetryBudget instance (set by budget.js). */
export const BUDGET_IDS = new WeakMap();

function isSignal(v) {
  return (
    (typeof AbortSignal === 'function' && v instanceof AbortSignal) ||
    (typeof v.aborted === 'boolean' && typeof v.addEventListener === 'function' && typeof v.removeEventListener === 'function')
  );
}

/**
 * The tag the engine understands for `v` (strings are sent separately).
 * Never throws, whatever `v` is. Pair with `numberOf` for the payload.
 */
export function tagOf(v) {
  switch (typeof v) {
    case 'undefined': return TAG_UNDEFINED;
    case 'boolean': return TAG_BOOL;
    case 'number': return TAG_NUMBER;
    case 'function': return TAG_FUNCTION;
    case 'object': {
      if (v === null) return TAG_NULL;
      try {
        // A revoked Proxy throws even from Array.isArray: no option takes one.
        if (Array.isArray(v)) return typeof v.length === 'number' ? TAG_ARRAY : TAG_OTHER;
      } catch {
        return TAG_OTHER;
      }
      if (BUDGET_IDS.has(v)) return TAG_BUDGET;
      try {
        if (isSignal(v)) return TAG_SIGNAL;
      } catch {
        // A hostile getter: treat as a plain object.
      }
      return TAG_OBJECT;
    }
    default: return TAG_OTHER;
  }
}

/** The number that goes with `tagOf(v)`: the value, a length, an id, or 0. */
export function numberOf(v, tag) {
  switch (tag) {
    case TAG_BOOL: return v ? 1 : 0;
    case TAG_NUMBER: return v;
    case TAG_ARRAY: {
      try {
        return v.length;
      } catch {
        return 0;
      }
    }
    case TAG_BUDGET: return BUDGET_IDS.get(v);
    default: return 0;
  }
}

/** `[tagOf(v), numberOf(v)]`, for the few places that are not hot. */
export function classify(v) {
  const tag = tagOf(v);
  return [tag, numberOf(v, tag)];
}

/** A short, safe rendering of any value for an error message. */
export function show(v) {
  try {
    switch (typeof v) {
      case 'string': return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
      case 'number': return Object.is(v, -0) ? '-0' : String(v);
      case 'bigint': return `${v}n`;
      case 'symbol': return v.toString();
      case 'function': return `a function${v.name ? ` (${v.name})` : ''}`;
      case 'undefined': return 'undefined';
      case 'object':
        if (v === null) return 'null';
        if (Array.isArray(v)) return `an array of length ${v.length}`;
        return `an object (${Object.prototype.toString.call(v).slice(8, -1)})`;
      default: return String(v);
    }
  } catch {
    return 'an unprintable value';
  }
}
