#!/usr/bin/env node
// Download-size report, per entry (SPEC §0 "Entries and builds").
//
//   node bench/size.mjs            report each entry of retry-wasm and the five peers
//   node bench/size.mjs --check    also exit non-zero when an entry's gzipped
//                                  download exceeds its ceiling; used by npm test
//   node bench/size.mjs --json     print the figures as one JSON line
//
// Method, as the README's size row: esbuild bundles a one-line module that
// re-exports what an app imports (for `retry-wasm`: `export { asyncRetry,
// AsyncRetryer } from 'retry-wasm'`), resolved by the package's export
// conditions as a browser bundle resolves it (--bundle --minify
// --format=esm --platform=browser: the "default" entries js/index.js and
// js/fetch.js), and every output file is measured raw, gzip -9 and brotli
// 11. retry-wasm's bundle embeds its wasm (deflated, base64), so it is the
// whole download; it is broken down into the JS glue, the base64 text and
// the wasm it inflates to. What `retryFetch` costs is the difference
// between the two builds.
//
// Exports measureSizes() and formatSizes() for npm run bench.

import { build } from 'esbuild';
import { gzipSync, brotliCompressSync, inflateRawSync, constants as zc } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { resolveRetryWasm, REPO_ROOT } from './lib/retry-wasm.mjs';
import { table, fmtBytes } from './lib/stats.mjs';

/**
 * The entries measured, each with its ceiling: npm test fails when an
 * entry's gzipped download grows past it, so the next feature shows what
 * it costs and raises it on purpose. `target`: what the project aims at.
 */
export const ENTRIES = [
  {
    id: 'retry-wasm',
    specifier: 'retry-wasm',
    entry: 'export { asyncRetry, AsyncRetryer } from "retry-wasm";',
    // 48,052 B before the circuit breaker (SPEC §2e), 54,920 B with it
    // (2026-12-06, 2-core AMD EPYC, Node 20.20.2): +6,868 B, more than the
    // +3 KiB that feature was allowed. 55,137 B once an idle circuit gives
    // its place to a new key past 64 (2026-12-07): +217 B.
    ceiling: 55_296,
    target: 47 * 1024,
  },
  {
    id: 'retry-wasm/fetch',
    specifier: 'retry-wasm/fetch',
    entry: 'export { asyncRetry, AsyncRetryer, RetryBudget, retryFetch } from "retry-wasm/fetch";',
    // 64,593 B before the circuit breaker, 72,280 B with it: +7,687 B;
    // 72,567 B with idle circuits giving their place: +287 B; 72,671 B
    // with a caller's signal followed without AbortSignal.any: +104 B.
    ceiling: 72_704,
    target: 61 * 1024,
  },
];

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

const add = (a, b) => ({ raw: a.raw + b.raw, gzip: a.gzip + b.gzip, brotli: a.brotli + b.brotli });

/** Every output file of the bundle of `contents`: its sizes added up, and the JavaScript. */
async function bundle(contents, resolveDir) {
  const r = await build({
    stdin: { contents, resolveDir, sourcefile: 'size-entry.js', loader: 'js' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    loader: { '.wasm': 'file' },
    outdir: path.join(REPO_ROOT, '.size-out-unused'),
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  let js = Buffer.alloc(0);
  let total = { raw: 0, gzip: 0, brotli: 0 };
  for (const f of r.outputFiles) {
    const bytes = Buffer.from(f.contents);
    if (f.path.endsWith('.js')) js = Buffer.concat([js, bytes]);
    total = add(total, compressedSizes(bytes));
  }
  return { js, total };
}

/** The embedded module: the longest base64 run that inflates to a wasm. */
function embeddedWasm(js) {
  const text = js.toString('latin1');
  for (const m of text.matchAll(/[A-Za-z0-9+/]{1024,}={0,2}/g)) {
    try {
      const wasm = inflateRawSync(Buffer.from(m[0], 'base64'));
      if (wasm.subarray(0, 4).equals(Buffer.from([0, 0x61, 0x73, 0x6d]))) return { text: m[0], at: m.index, wasm };
    } catch {
      // Not a deflate stream.
    }
  }
  return null;
}

/** One entry of retry-wasm, bundled as a browser app bundles it. */
async function measureEntry(e) {
  const r = resolveRetryWasm(e.specifier);
  if (r.error) return { ...e, available: false, error: r.error };
  try {
    const contents = r.dir ? e.entry : e.entry.replace(JSON.stringify(e.specifier), JSON.stringify(r.path));
    const { js, total } = await bundle(contents, r.dir ?? path.dirname(r.path));
    const found = embeddedWasm(js);
    const parts = found && {
      glue: compressedSizes(Buffer.concat([js.subarray(0, found.at), js.subarray(found.at + found.text.length)])),
      base64: compressedSizes(Buffer.from(found.text, 'latin1')),
      wasm: compressedSizes(found.wasm),
    };
    return { ...e, available: true, from: r.from, total, parts };
  } catch (err) {
    return { ...e, available: false, error: `esbuild: ${String(err?.message ?? err).split('\n')[0]}` };
  }
}

/**
 * Measures every entry and (unless peers: false) the peers. Returns
 * { entries: [{ id, entry, ceiling, target, available, total: {raw,gzip,brotli}, parts }], peers }.
 */
export async function measureSizes({ peers = true } = {}) {
  const out = { entries: [], peers: {} };
  for (const e of ENTRIES) out.entries.push(await measureEntry(e));
  if (peers) {
    for (const p of PEERS) {
      try {
        const { total } = await bundle(p.entry, REPO_ROOT);
        out.peers[p.id] = { label: p.label ?? p.id, total };
      } catch (e) {
        out.peers[p.id] = { label: p.label ?? p.id, error: String(e?.message ?? e).split('\n')[0] };
      }
    }
  }
  return out;
}

/** The size table as text. */
export function formatSizes(s) {
  const rows = [];
  const sizes = (label, v) => rows.push([label, fmtBytes(v.raw), fmtBytes(v.gzip), fmtBytes(v.brotli)]);
  for (const e of s.entries) {
    if (!e.available) {
      rows.push([`${e.entry} (not measured: ${e.error})`, '—', '—', '—']);
      continue;
    }
    sizes(e.entry, e.total);
    if (e.parts) {
      sizes('  JS glue alone (bundle minus base64)', e.parts.glue);
      sizes('  base64 text of the deflated wasm', e.parts.base64);
      sizes('  the wasm it inflates to', e.parts.wasm);
    }
  }
  const [lean, full] = s.entries;
  if (lean?.available && full?.available) {
    rows.push(['what retryFetch adds (full minus lean)', fmtBytes(full.total.raw - lean.total.raw), fmtBytes(full.total.gzip - lean.total.gzip), fmtBytes(full.total.brotli - lean.total.brotli)]);
  }
  for (const p of Object.values(s.peers)) {
    if (p.error) rows.push([`${p.label} (error: ${p.error})`, '—', '—', '—']);
    else sizes(p.label, p.total);
  }
  let text = table(['bundle (esbuild --platform=browser, minified, esm)', 'raw B', 'gzip B', 'brotli B'], rows, 'lrrr');
  for (const e of s.entries.filter((x) => x.available)) {
    text += `\n${e.id}: ${e.total.gzip} B gzipped; ceiling ${e.ceiling} B (${e.total.gzip <= e.ceiling ? 'within' : 'OVER'}), target ${e.target} B (${e.total.gzip <= e.target ? 'met' : 'not met'})`;
  }
  return text;
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const sizes = await measureSizes({ peers: !check || args.includes('--peers') });
  console.log(args.includes('--json') ? JSON.stringify(sizes) : formatSizes(sizes));
  if (check) {
    const problems = sizes.entries.flatMap((e) =>
      !e.available ? [`${e.id} could not be bundled: ${e.error}`] : e.total.gzip > e.ceiling ? [`${e.id}: ${e.total.gzip} B gzipped, over its ceiling of ${e.ceiling} B`] : [],
    );
    if (problems.length) {
      console.error(`size check FAILED: ${problems.join('; ')}`);
      process.exit(1);
    }
    console.log(`size check passed: ${sizes.entries.map((e) => `${e.id} ${e.total.gzip} B <= ${e.ceiling} B`).join(', ')}`);
  }
}
