// Loads the embedded wasm engine once per module (top-level await: no init
// call for users, no file to locate for runtimes or bundlers). The module
// imports nothing and exports plain functions over numbers, so there is no
// generated glue: the front calls the exports directly.
import base64 from '../../pkg/wasm-bytes.js';

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

/**
 * The state cells as a Float64Array over linear memory. Growing memory
 * detaches the old buffer (its length drops to 0), so re-view then.
 */
export function cells() {
  if (view.length === 0) view = new Float64Array(memory.buffer);
  return view;
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
