// Turning the engine's error codes into TypeError / RangeError messages that
// name the option and the value.
import {
  EXPECTS, INITIAL_FIELDS, OPTION_NAMES, OPT_INITIAL_STATE, OPT_INTERVALS,
} from './wire.js';
import { show } from './values.js';

/**
 * The error for engine code `code` (`1 | kind << 1 | opt << 2 | expect << 8
 * | index << 14`, kind 1 for a RangeError) of option `name` given `value`.
 */
export function optionError(code, name, value) {
  const opt = (code >>> 2) & 0x3f;
  const expect = (code >>> 8) & 0x3f;
  const index = code >>> 14;
  if (expect === 0) {
    return new TypeError(`retry-wasm: unknown option '${name}' (got ${show(value)})`);
  }
  let label = OPTION_NAMES[opt] ?? name;
  let shown = value;
  try {
    // Name the entry; a hostile array or object (a revoked Proxy) may
    // throw here, and then the option alone is named.
    if (opt === OPT_INTERVALS && Array.isArray(value)) {
      shown = value[index];
      label = `intervals[${index}]`;
    } else if (opt === OPT_INITIAL_STATE && value !== null && typeof value === 'object' && index < INITIAL_FIELDS.length) {
      shown = value[INITIAL_FIELDS[index]];
      label = `initialState.${INITIAL_FIELDS[index]}`;
    }
  } catch {
    shown = value;
  }
  const Ctor = code & 2 ? RangeError : TypeError;
  return new Ctor(`retry-wasm: option '${label}' must be ${EXPECTS[expect]}; got ${show(shown)}`);
}

/** The RangeError that ends a flow whose option function answered badly. */
export function dynamicError(opt, value) {
  const name = OPTION_NAMES[opt] ?? 'option';
  return new RangeError(`retry-wasm: the function given as '${name}' returned an invalid value: ${show(value)}`);
}

// Both are DOMExceptions, as `AbortSignal.timeout()` and `AbortSignal.abort()`
// give; every supported runtime has the global.

/** The TimeoutError an attempt's signal aborts with. */
export function timeoutError(ms) {
  return new DOMException(`retry-wasm: attempt exceeded maxExecutionTime (${ms} ms)`, 'TimeoutError');
}

/** The reason an attempt's signal aborts with on abort, new execution or total timeout. */
export function abortError(reason) {
  return new DOMException(`retry-wasm: aborted (${reason})`, 'AbortError');
}

/** Reports an error no promise can carry (a throwing store listener). */
export function reportLater(error) {
  if (typeof globalThis.reportError === 'function') {
    globalThis.reportError(error);
  } else {
    queueMicrotask(() => {
      throw error;
    });
  }
}
