// Classifying JavaScript values for the engine, and showing them in messages.
import { TAG } from './wire.js';

/** Budget ids by RetryBudget instance (set by budget.js). */
export const BUDGET_IDS = new WeakMap();

function isSignal(v) {
  return (
    (typeof AbortSignal === 'function' && v instanceof AbortSignal) ||
    (typeof v.aborted === 'boolean' && typeof v.addEventListener === 'function' && typeof v.removeEventListener === 'function')
  );
}

/**
 * The tag (and number) the engine understands for `v`. Strings are sent
 * separately. Never throws, whatever `v` is.
 */
export function classify(v) {
  switch (typeof v) {
    case 'undefined': return [TAG.UNDEFINED, 0];
    case 'boolean': return [TAG.BOOL, v ? 1 : 0];
    case 'number': return [TAG.NUMBER, v];
    case 'function': return [TAG.FUNCTION, 0];
    case 'object': {
      if (v === null) return [TAG.NULL, 0];
      if (Array.isArray(v)) return [TAG.ARRAY, v.length];
      const id = BUDGET_IDS.get(v);
      if (id !== undefined) return [TAG.BUDGET, id];
      try {
        if (isSignal(v)) return [TAG.SIGNAL, 0];
      } catch {
        // A hostile getter: treat as a plain object.
      }
      return [TAG.OBJECT, 0];
    }
    default: return [TAG.OTHER, 0];
  }
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
