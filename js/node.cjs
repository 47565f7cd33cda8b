// The source of pkg/engine.cjs, the one engine of Node, Deno, Bun and Jest:
// the full build (retryFetch included), whichever entry loads it, so every
// entry shares one instance (one AsyncRetryer class, one RetryBudget pool)
// and `import` and `require` see the same objects. `require('retry-wasm')`
// is js/require.cjs, `require('retry-wasm/fetch')` js/require-fetch.cjs,
// and the ESM entries load this file through `createRequire`. No top-level
// await, so `require` works. The build bundles this file, the doorway and
// the ESM glue wasm-bindgen generated into one CommonJS file with esbuild
// (scripts/build.mjs); the module itself is in pkg/full/wasm-raw.cjs
// beside it, as base64 of its bytes, not deflated: a Node-side package pays
// no download, and decoding it with Buffer is all the entry does before
// instantiating it synchronously (loading node:zlib to inflate it took
// longer than compiling the module). `module.exports` is the API object
// itself (no `__esModule` marker), so every loader sees the same thing.
// Buffer comes from process.getBuiltinModule where the host has it (Node
// 20.16+, Deno, Bun): an ESM bundle of this file (esbuild --platform=node
// --format=esm) has no working `require`.
const { Buffer } = globalThis.process?.getBuiltinModule?.('node:buffer') ?? require('node:buffer');
const base64 = require('../pkg/full/wasm-raw.cjs');
const glue = require('./full-engine.js');
const { open } = require('./doorway.js');
const { fetchOf } = require('./retry-fetch.js');

module.exports = open(glue, Buffer.from(base64, 'base64'), fetchOf);
