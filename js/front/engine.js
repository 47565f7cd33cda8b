// Loads the embedded wasm engine once per module (top-level await: no init
// call for users, no file to locate for runtimes or bundlers).
import init, * as engine from '../../pkg/retry_wasm.js';
import base64 from '../../pkg/wasm-bytes.js';

/** base64 -> bytes -> inflated wasm (the build deflates it). */
async function decode(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

const exports = await init({ module_or_path: await decode(base64) });
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

export { engine };
