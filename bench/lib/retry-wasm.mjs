// Locates and loads the retry-wasm package by name, the way a consumer would.
//
// Order:
//   1. RETRY_WASM_ENTRY (a file path or URL of an ESM entry): only for
//      exercising the harness itself, e.g. against a shim.
//   2. <repo>/.consumer/node_modules/retry-wasm: the packed tarball installed
//      by the test tooling (what users get).
//   3. The repo root package itself, by package self-reference (package.json
//      is named retry-wasm and exports "." -> ./js/index.js).
// If none can be imported, the harness prints a note and skips the column.

import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CONSUMER_DIR = path.join(REPO_ROOT, '.consumer');

/**
 * Where `retry-wasm` resolves to, without importing it: { path, from, dir }
 * or { error }. `path` is what a CommonJS `require` gets; `dir` (absent for
 * RETRY_WASM_ENTRY) is where a bundler resolving the bare name by its
 * export conditions should start.
 */
export function resolveRetryWasm(specifier = 'retry-wasm') {
  const override = process.env.RETRY_WASM_ENTRY;
  if (override) {
    const p = override.startsWith('file:') ? fileURLToPath(override) : path.resolve(override);
    if (!existsSync(p)) return { error: `RETRY_WASM_ENTRY=${override} does not exist` };
    return { path: p, from: `RETRY_WASM_ENTRY (${p})` };
  }
  const tried = [];
  const consumerPkg = path.join(CONSUMER_DIR, 'node_modules', 'retry-wasm', 'package.json');
  if (existsSync(consumerPkg)) {
    try {
      const req = createRequire(path.join(CONSUMER_DIR, 'noop.js'));
      const resolved = req.resolve(specifier);
      // npm run bench rebuilds the repo's pkg/ but does not repack: say so
      // when the installed package's engine, glue or entry differs from the
      // repo's (by content: a rebuild that changed nothing is not stale).
      let from = 'packed tarball in .consumer/node_modules';
      if (packedDiffers(path.join(CONSUMER_DIR, 'node_modules', 'retry-wasm'))) {
        from += ' (DIFFERS from the repo build: repack to measure the latest)';
      }
      return { path: resolved, from, dir: CONSUMER_DIR };
    } catch (e) {
      tried.push(`.consumer: ${firstLine(e)}`);
    }
  } else {
    tried.push('.consumer/node_modules/retry-wasm not installed');
  }
  try {
    // Package self-reference: resolving from inside the repo finds the root
    // package.json (name "retry-wasm") and follows its "exports".
    const req = createRequire(path.join(REPO_ROOT, 'bench', 'noop.js'));
    const p = req.resolve(specifier);
    if (!existsSync(p)) throw new Error(`${p} does not exist (package not built?)`);
    return { path: p, from: 'repo root package (self-reference)', dir: REPO_ROOT };
  } catch (e) {
    tried.push(`self-reference: ${firstLine(e)}`);
  }
  return { error: tried.join('; ') };
}

/**
 * Imports retry-wasm (`specifier`: 'retry-wasm/fetch' where retryFetch is
 * used; in Node both entries load the one engine). Resolves to { mod, from }
 * or { mod: null, error }.
 * Never throws: the harness skips the retry-wasm column when it is missing.
 */
export async function loadRetryWasm(specifier = 'retry-wasm') {
  const r = resolveRetryWasm(specifier);
  if (r.error) return { mod: null, error: r.error };
  try {
    const ns = await import(pathToFileURL(r.path).href);
    // The path a require() resolves to is the CommonJS entry in Node: its
    // exports are its default (what the package's ESM entry re-exports).
    const mod = typeof ns.asyncRetry === 'function' ? ns : ns.default ?? ns;
    if (typeof mod.asyncRetry !== 'function' || typeof mod.AsyncRetryer !== 'function') {
      return { mod: null, error: `${r.path} does not export asyncRetry and AsyncRetryer` };
    }
    return { mod, from: r.from, path: r.path };
  } catch (e) {
    return { mod: null, error: `importing ${r.path} failed: ${firstLine(e)}` };
  }
}

function firstLine(e) {
  return String((e && e.message) || e).split('\n')[0];
}

/** Whether the package installed at `dir` differs from the repo's pkg/ and js/. */
function packedDiffers(dir) {
  const files = ['pkg/lean/wasm-bytes.js', 'pkg/full/wasm-bytes.js', 'pkg/full/retry_wasm.js', 'pkg/engine.cjs', 'js/index.js', 'js/fetch.js', 'js/doorway.js'];
  const read = (root, f) => (existsSync(path.join(root, f)) ? readFileSync(path.join(root, f)) : null);
  return files.some((f) => {
    const a = read(REPO_ROOT, f);
    const b = read(dir, f);
    return a === null || b === null || !a.equals(b);
  });
}
