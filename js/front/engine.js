// Loads the embedded wasm engine once per module (top-level await: no init
// call for users, no file to locate for runtimes or bundlers). The module
// imports nothing and exports plain functions over numbers, so there is no
// generated glue: the front calls the exports directly.
import base64 from '../../pkg/wasm-bytes.js';
import {
  CELL_ATTEMPT, CELL_COUNT, CELL_FLAGS, CELL_VERSION, STATE_ATTEMPT, STATE_COUNT, STATE_VERSION,
} from './wire.js';

/** base64 -> bytes -> inflated wasm (the build deflates it). */
async function decode(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

const { instance } = await WebAssembly.instantiate(await decode(base64), {});
const exports = instance.exports;
const memory = exports.memory;
let view = new Float64Array(memory.buffer);
let words32 = new Uint32Array(memory.buffer);

/**
 * Linear memory as a Float64Array (the window, the f64 state fields).
 * Growing memory detaches the old buffer (its length drops to 0), so
 * re-view then.
 */
export function cells() {
  if (view.length === 0) view = new Float64Array(memory.buffer);
  return view;
}

/** Linear memory as a Uint32Array (the u32 state fields, the flags word). */
export function words() {
  if (words32.length === 0) words32 = new Uint32Array(memory.buffer);
  return words32;
}

const STATE_AT = exports.state_at();
/** Where a slot's flags word is, in words, from its state (see `stateCell`). */
const FLAGS_FROM_STATE = (exports.flags_at() - STATE_AT) / 4;

/**
 * Index (in `cells()`) of retryer `h`'s state, read in place (codec.rs
 * `state_at`): its three f64 fields at 0-2, in `words()` its attempt and
 * version at twice the index + 6 and + 7.
 */
export function stateIndex(h) {
  return (exports.cells(h) + STATE_AT) / 8;
}

/** State cell `k` (wire.js CELL_*) of the slot whose state is at index `s`. */
export function stateCell(s, k) {
  switch (k) {
    case CELL_VERSION: return words()[s * 2 + STATE_VERSION];
    case CELL_ATTEMPT: return words()[s * 2 + STATE_ATTEMPT];
    case CELL_FLAGS: return words()[s * 2 + FLAGS_FROM_STATE];
    // COUNT, LAST_TIME, TOTAL_TIME: the state's three f64s, in this order.
    default: return cells()[s + STATE_COUNT + k - CELL_COUNT];
  }
}

/** Index (in `cells()`) of the window all retryers share; it never moves. */
export const WIN = exports.window() / 8;

// Every retryer's jitter generator is seeded from these 64 bits.
const seed = crypto.getRandomValues(new Uint32Array(2));
exports.seed(seed[0], seed[1]);

const encoder = new TextEncoder();

/**
 * The engine's exports, plus `opt_str(id, text)`: the text goes through the
 * engine's small string buffer, cut to its size (no option takes a name
 * that long, so a cut string is still refused).
 */
export const engine = {
  ...exports,
  opt_str(id, text) {
    const buffer = new Uint8Array(memory.buffer, exports.scratch_ptr(), exports.scratch_len());
    return exports.opt_str(id, encoder.encodeInto(text, buffer).written);
  },
};
