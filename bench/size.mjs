#!/usr/bin/env node
// Download-size report.
//
//   node bench/size.mjs            report retry-wasm and the five peers
//   node bench/size.mjs --check    also exit non-zero when retry-wasm's gzipped
//                                  total exceeds the enforced budget (SIZE_BUDGET_GZIP); used by npm test
//   node bench/size.mjs --json     print the figures as one JSON line
//
// Method: esbuild bundles a one-line entry that re-exports what an app would
// import (for retry-wasm: `export { asyncRetry, AsyncRetryer } from 'retry-wasm'`,
// resolved by its export conditions: the browser entry js/index.js),
// with bundle, minify, format esm, platform neutral, target es2022, no
// source map; unused code is tree-shaken. The output is measured raw, gzip
// (level 9) and brotli (quality 11) with node:zlib. retry-wasm's JS embeds
// its wasm as base64, so its bundle is the whole download; it is broken down
// into the JS glue, the base64 text and the decoded wasm binary, and the
// .wasm file (pkg/retry_wasm.wasm) is reported separately for reference.
// If the bundle does NOT embed a wasm (no base64 string starting with the
// wasm magic, "AGFzbQ"), the .wasm file is added to the total instead.
//
// Exports measureSizes() and checkSizeBudget() for tests.

import { build } from 'esbuild';
import { gzipSync, brotliCompressSync, inflateRawSync, constants as zc } from 'node:zlib';
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { resolveRetryWasm, REPO_ROOT } from './lib/retry-wasm.mjs';
import { table, fmtBytes } from './lib/stats.mjs';

// npm test fails when the download grows past the enforced ceiling, so it
// cannot creep; the goal is the size the project aims for (36 KiB gzipped,
// wasm and JavaScript together). Raised from 56 KiB on 2026-12-03 by what
// retryFetch's drop-in rules, tracing channels and hedged attempts
// measured (53,339 -> 64,864 B, the 2-core AMD EPYC dev machine): each
// feature's engine code, not a loosened check.
export const SIZE_BUDGET_GZIP = 64 * 1024 + 512;
export const SIZE_GOAL_GZIP = 36 * 1024;
// RETRY_WASM_WASM_FILE overrides the path (only for exercising the harness).
export const WASM_PATH = process.env.RETRY_WASM_WASM_FILE
  ? path.resolve(process.env.RETRY_WASM_WASM_FILE)
  : path.join(REPO_ROOT, 'pkg', 'retry_wasm.wasm');

const PEERS = [
  { id: 'cockatiel', entry: "export { retry, handleAll, ExponentialBackoff } from 'cockatiel';" },
  { id: 'async-retry', entry: "export { default as retry } from 'async-retry';" },
  { id: 'exponential-backoff', entry: "export { backOff } from 'exponential-backoff';" },
  { id: 'p-retry', entry: "export { default as pRetry } from 'p-retry';" },
  { id: 'pacer', label: '@tanstack/pacer', entry: "export { asyncRetry, AsyncRetryer } from '@tanstack/pacer';" },
];

export function compressedSizes(buf) {
  return {
    raw: buf.length,
    gzip: gzipSync(buf, { level: 9 }).length,
    brotli: brotliCompressSync(buf, {
      params: { [zc.BROTLI_PARAM_QUALITY]: 11, [zc.BROTLI_PARAM_SIZE_HINT]: buf.length },
    }).length,
  };
}

async function bundle(contents, resolveDir) {
  const r = await build({
    stdin: { contents, resolveDir, sourcefile: 'size-entry.js', loader: 'js' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    // platform 'neutral' sets no main fields; the CommonJS peers need "main".
    mainFields: ['module', 'main'],
    // A wasm-bindgen "bundler" target would import the .wasm; count it as a file.
    loader: { '.wasm': 'file' },
    outdir: path.join(REPO_ROOT, '.size-out-unused'),
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  let js = Buffer.alloc(0);
  const others = [];
  for (const f of r.outputFiles) {
    if (f.path.endsWith('.js')) js = Buffer.concat([js, Buffer.from(f.contents)]);
    else others.push({ path: f.path, bytes: Buffer.from(f.contents) });
  }
  return { js, others };
}

/**
 * Measures retry-wasm and (unless peers: false) the peers.
 * Returns {
 *   budget,
 *   retryWasm: { available, from?, error?, js: {raw,gzip,brotli}, wasm?: {raw,gzip,brotli},
 *                wasmEmbedded, total: {raw,gzip,brotli} },
 *   peers: { [id]: { js: {raw,gzip,brotli}, total } }
 * }
 */
export async function measureSizes({ peers = true } = {}) {
  const out = { budget: SIZE_BUDGET_GZIP, goal: SIZE_GOAL_GZIP, retryWasm: null, peers: {} };

  const wasmBuf = existsSync(WASM_PATH) ? readFileSync(WASM_PATH) : null;
  const wasm = wasmBuf ? compressedSizes(wasmBuf) : null;

  const r = resolveRetryWasm();
  if (r.error) {
    out.retryWasm = { available: false, error: r.error, wasm };
  } else {
    try {
      // By name where the package is installed, so its export conditions
      // pick the entry (platform neutral: the "default" one, what browser
      // bundles get; "node" and "require" lead to the CommonJS entry).
      const entry = `export { asyncRetry, AsyncRetryer } from ${JSON.stringify(r.dir ? 'retry-wasm' : r.path)};`;
      const { js, others } = await bundle(entry, r.dir ?? path.dirname(r.path));
      const jsSizes = compressedSizes(js);
      // Embedded wasm: a base64 string starting with the wasm magic "\0asm"
      // ("AGFzbQ"). Found in the bundle itself, so the figures describe what
      // ships even when pkg/ has been rebuilt since the tarball was packed.
      // Also a deflate-raw stream in base64 that inflates to a wasm (what
      // the build embeds now).
      const text = js.toString('latin1');
      let b64 = null;
      for (const m of text.matchAll(/AGFzbQ[A-Za-z0-9+/]*={0,2}/g)) {
        if (!b64 || m[0].length > b64.text.length) b64 = { text: m[0], at: m.index, deflated: false };
      }
      if (!b64) {
        for (const m of text.matchAll(/[A-Za-z0-9+/]{1024,}={0,2}/g)) {
          try {
            const inflated = inflateRawSync(Buffer.from(m[0], 'base64'));
            if (inflated.subarray(0, 4).equals(Buffer.from([0, 0x61, 0x73, 0x6d]))) {
              b64 = { text: m[0], at: m.index, deflated: true, wasm: inflated };
              break;
            }
          } catch {
            // Not a deflate stream.
          }
        }
      }
      const wasmEmbedded = !!b64 && b64.text.length >= 64;
      let glue = null;
      let embedded = null;
      let embeddedWasm = null;
      if (wasmEmbedded) {
        // The breakdown: the glue alone, the base64 text alone (what shipping
        // the wasm as text costs), and the decoded wasm binary.
        glue = compressedSizes(Buffer.concat([js.subarray(0, b64.at), js.subarray(b64.at + b64.text.length)]));
        embedded = compressedSizes(Buffer.from(b64.text, 'latin1'));
        embeddedWasm = compressedSizes(b64.deflated ? b64.wasm : Buffer.from(b64.text, 'base64'));
      }
      const total = { ...jsSizes };
      const extra = [...others.map((o) => o.bytes)];
      // Not embedded and not emitted by esbuild: the app fetches pkg's .wasm.
      if (wasmBuf && !wasmEmbedded && !extra.some((b) => b.equals(wasmBuf))) extra.push(wasmBuf);
      for (const b of extra) {
        const s = compressedSizes(b);
        total.raw += s.raw;
        total.gzip += s.gzip;
        total.brotli += s.brotli;
      }
      out.retryWasm = { available: true, from: r.from, js: jsSizes, wasm, wasmEmbedded, glue, embedded, embeddedWasm, total };
    } catch (e) {
      out.retryWasm = { available: false, error: `esbuild: ${String((e && e.message) || e).split('\n')[0]}`, wasm };
    }
  }

  if (peers) {
    for (const p of PEERS) {
      try {
        const { js } = await bundle(p.entry, REPO_ROOT);
        const s = compressedSizes(js);
        out.peers[p.id] = { label: p.label ?? p.id, js: s, total: s };
      } catch (e) {
        out.peers[p.id] = { label: p.label ?? p.id, error: String((e && e.message) || e).split('\n')[0] };
      }
    }
  }
  return out;
}

/** { ok, gzip, budget, message }: ok is false when retry-wasm is missing or over budget. */
export async function checkSizeBudget() {
  const s = await measureSizes({ peers: false });
  const rw = s.retryWasm;
  if (!rw.available) {
    return { ok: false, gzip: null, budget: SIZE_BUDGET_GZIP, message: `size check: retry-wasm could not be bundled: ${rw.error}`, sizes: s };
  }
  const ok = rw.total.gzip <= SIZE_BUDGET_GZIP;
  const message =
    `size check: retry-wasm gzipped total ${rw.total.gzip} B ` +
    `(${ok ? '<=' : 'EXCEEDS'} budget ${SIZE_BUDGET_GZIP} B = ${SIZE_BUDGET_GZIP / 1024} KiB, goal ${SIZE_GOAL_GZIP / 1024} KiB; ` +
    `JS bundle ${rw.js.gzip} B gz${rw.wasmEmbedded ? ', wasm embedded' : ''}` +
    `${rw.wasm ? `; .wasm alone ${rw.wasm.gzip} B gz, ${rw.wasm.raw} B raw` : ''})`;
  return { ok, gzip: rw.total.gzip, budget: SIZE_BUDGET_GZIP, message, sizes: s };
}

/** The size table as text. */
export function formatSizes(s) {
  const rows = [];
  const rw = s.retryWasm;
  if (rw?.available) {
    rows.push(['retry-wasm (JS bundle' + (rw.wasmEmbedded ? ', wasm embedded)' : ')'), fmtBytes(rw.js.raw), fmtBytes(rw.js.gzip), fmtBytes(rw.js.brotli)]);
    if (rw.glue) rows.push(['  JS glue alone (bundle minus base64)', fmtBytes(rw.glue.raw), fmtBytes(rw.glue.gzip), fmtBytes(rw.glue.brotli)]);
    if (rw.embedded) rows.push(['  base64 wasm text alone', fmtBytes(rw.embedded.raw), fmtBytes(rw.embedded.gzip), fmtBytes(rw.embedded.brotli)]);
    if (rw.embeddedWasm) rows.push(['  embedded wasm, as binary', fmtBytes(rw.embeddedWasm.raw), fmtBytes(rw.embeddedWasm.gzip), fmtBytes(rw.embeddedWasm.brotli)]);
    if (rw.wasm) rows.push([rw.wasmEmbedded ? 'pkg/retry_wasm.wasm (repo build, reference)' : 'pkg/retry_wasm.wasm (fetched separately)', fmtBytes(rw.wasm.raw), fmtBytes(rw.wasm.gzip), fmtBytes(rw.wasm.brotli)]);
    if (rw.total.raw !== rw.js.raw) rows.push(['retry-wasm total (JS + wasm)', fmtBytes(rw.total.raw), fmtBytes(rw.total.gzip), fmtBytes(rw.total.brotli)]);
  } else {
    rows.push(['retry-wasm (not available)', '—', '—', '—']);
    if (rw?.wasm) rows.push(['pkg/retry_wasm.wasm alone', fmtBytes(rw.wasm.raw), fmtBytes(rw.wasm.gzip), fmtBytes(rw.wasm.brotli)]);
  }
  for (const p of Object.values(s.peers)) {
    if (p.error) rows.push([`${p.label} (error: ${p.error})`, '—', '—', '—']);
    else rows.push([p.label, fmtBytes(p.js.raw), fmtBytes(p.js.gzip), fmtBytes(p.js.brotli)]);
  }
  let text = table(['bundle (esbuild, minified, esm)', 'raw B', 'gzip B', 'brotli B'], rows, 'lrrr');
  if (rw?.available) {
    text += `\nretry-wasm gzipped total: ${rw.total.gzip} B; enforced ceiling ${s.budget} B (${((rw.total.gzip / s.budget) * 100).toFixed(0)}%)`;
    if (s.goal) text += `, goal ${s.goal} B (${((rw.total.gzip / s.goal) * 100).toFixed(0)}%: ${rw.total.gzip <= s.goal ? 'met' : 'not met'})`;
  } else if (rw) {
    text += `\nretry-wasm not measured: ${rw.error}`;
  }
  return text;
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const json = args.includes('--json');
  const sizes = await measureSizes({ peers: !check || args.includes('--peers') });
  if (json) {
    console.log(JSON.stringify(sizes));
  } else {
    console.log(formatSizes(sizes));
  }
  if (check) {
    const rw = sizes.retryWasm;
    if (!rw.available) {
      console.error(`size check FAILED: retry-wasm could not be bundled: ${rw.error}`);
      process.exit(2);
    }
    const ok = rw.total.gzip <= SIZE_BUDGET_GZIP;
    const msg = `size check ${ok ? 'passed' : 'FAILED'}: retry-wasm gzipped total ${rw.total.gzip} B, budget ${SIZE_BUDGET_GZIP} B`;
    if (ok) console.log(msg);
    else {
      console.error(msg);
      process.exit(1);
    }
  }
}
