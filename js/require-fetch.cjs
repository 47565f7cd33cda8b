// `require('retry-wasm/fetch')` in Node, Deno, Bun and Jest: the one engine
// (pkg/engine.cjs), its whole API; js/node-fetch.js imports it too. Held in
// a variable first: Node's ESM `import` of a CommonJS file scans it for
// export names and follows a `module.exports = require(...)` into the
// 20 KB engine, which took about 10 ms of the import (Node 20.20.2, the
// 2-core dev machine, 2026-12-06); this file is scanned instead.
const engine = require('../pkg/engine.cjs');

module.exports = engine;
