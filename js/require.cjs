// `require('retry-wasm')` in Node, Deno, Bun and Jest: the one engine
// (pkg/engine.cjs), without retryFetch, which is `retry-wasm/fetch`'s.
const { retryFetch, ...api } = require('../pkg/engine.cjs');

module.exports = api;
