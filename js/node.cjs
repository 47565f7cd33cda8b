// The source of pkg/index.cjs, the CommonJS entry for Node (its `require`
// and, through node.js, its `import`), Deno, Bun and Jest: no top-level
// await, so `require('retry-wasm')` works. The build bundles this file, the
// doorway and the ESM glue wasm-bindgen generated into one CommonJS file
// with esbuild (scripts/build.mjs); the module itself is in
// pkg/wasm-raw.cjs beside it, as base64 of its bytes, not deflated: a
// Node-side package pays no download, and decoding it with Buffer is all
// the entry does before instantiating it synchronously (loading node:zlib
// to inflate it took longer than compiling the module). `module.exports` is
// the API object itself (no `__esModule` marker), so every loader sees the
// same thing. Buffer comes from process.getBuiltinModule where the host
// has it (Node 20.16+, Deno, Bun): an ESM bundle of this file (esbuild
// --platform=node --format=esm) has no working `require`.
const { Buffer } = globalThis.process?.getBuiltinModule?.('node:buffer') ?? require('node:buffer');
const base64 = require('../pkg/wasm-raw.cjs');
const { open, inflate, loadError, needWebAssembly, ...api } = require('./doorway.js');

open(Buffer.from(base64, 'base64'));
module.exports = api;
