// The source of pkg/index.cjs, the CommonJS entry for Node (its `require`
// and, through node.js, its `import`), Deno, Bun and Jest: no top-level
// await, so `require('retry-wasm')` works. The build bundles this file, the
// doorway and the ESM glue wasm-bindgen generated into one CommonJS file
// with esbuild (scripts/build.mjs), the embedded bytes included, so the
// entry reads no file at run time. It inflates them with node:zlib and
// instantiates them synchronously. `module.exports` is the API object
// itself (no `__esModule` marker), so every loader sees the same thing.
// Built-in modules come from process.getBuiltinModule where the host has it
// (Node 20.16+, Deno, Bun): an ESM bundle of this file (esbuild
// --platform=node --format=esm) has no working `require`.
const { Buffer } = globalThis.process?.getBuiltinModule?.('node:buffer') ?? require('node:buffer');
const { inflateRawSync } = globalThis.process?.getBuiltinModule?.('node:zlib') ?? require('node:zlib');
const { default: base64 } = require('../pkg/wasm-bytes.js');
const { open, loadError, needWebAssembly, ...api } = require('./doorway.js');

let bytes;
try {
  bytes = inflateRawSync(Buffer.from(base64, 'base64'));
} catch (e) {
  throw loadError('the embedded module could not be inflated with node:zlib', e);
}
open(bytes);
module.exports = api;
