// Import case: what `await import(name)` adds to a bare Node start, as whole
// processes. Each round starts three processes in turn (the order rotating
// by round), each running `await import(x)` and exiting: x = node:os (the
// bare start), retry-wasm, @tanstack/pacer. A process's figure is its wall
// time from spawn to exit, as a user of a serverless cold start sees it. The
// added time of a package is its process minus the bare one of the same
// round, and the ratio is paired: the median over rounds of retry-wasm's
// added time over pacer's.
//
// Processes run in `cwd`, where 'retry-wasm' resolves to the package the
// bench measures (the packed one in .consumer/, or the repo by
// self-reference) and '@tanstack/pacer' to the dev dependency.

import { spawnSync } from 'node:child_process';
import { summarize } from '../lib/stats.mjs';

export const IMPORT_SPECS = { bare: 'node:os', 'retry-wasm': 'retry-wasm', pacer: '@tanstack/pacer' };

/** Wall ms of one process importing `spec` and exiting. */
function processMs(spec, cwd) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(spec)})`], {
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`import(${spec}) exited ${r.status}: ${String(r.stderr).split('\n')[0]}`);
  return ms;
}

/**
 * Returns { results: { bare, 'retry-wasm', pacer: summary of wall ms },
 * added: { 'retry-wasm', pacer: summary of ms over bare }, ratio (paired
 * median of retry-wasm's added time / pacer's), rounds, errors }.
 */
export function runImportCase({ cwd, rounds = 20, log = () => {} }) {
  const ids = Object.keys(IMPORT_SPECS);
  const wall = Object.fromEntries(ids.map((id) => [id, []]));
  const errors = {};
  // One warm-up round: file caches, not figures.
  try {
    for (const id of ids) processMs(IMPORT_SPECS[id], cwd);
  } catch (e) {
    errors.warmup = e.message;
    log(`  ! import: ${e.message}`);
    return { results: {}, added: {}, ratio: null, rounds: 0, errors };
  }
  for (let round = 0; round < rounds; round++) {
    const order = ids.map((_, i) => ids[(i + round) % ids.length]);
    for (const id of order) wall[id].push(processMs(IMPORT_SPECS[id], cwd));
  }
  const addedOf = (id) => wall[id].map((ms, i) => ms - wall.bare[i]);
  const rw = addedOf('retry-wasm');
  const pacer = addedOf('pacer');
  const ratios = rw.map((ms, i) => ms / pacer[i]).filter(Number.isFinite);
  return {
    results: Object.fromEntries(ids.map((id) => [id, { ...summarize(wall[id]), samples: wall[id] }])),
    added: { 'retry-wasm': summarize(rw), pacer: summarize(pacer) },
    ratio: ratios.length ? summarize(ratios).median : null,
    rounds,
    errors,
  };
}
