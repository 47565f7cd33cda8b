// Load case orchestrator: spawns ONE node process per library
// (bench/cases/load-child.mjs, with --expose-gc), one at a time, so libraries
// never share a heap, a JIT or an event loop. The whole set is run `passes`
// times, in reversed order on every other pass, and the samples of all passes
// are pooled before taking medians.

import { fileURLToPath } from 'node:url';
import { summarize } from '../lib/stats.mjs';
import { runNodeChild } from '../lib/child.mjs';

const CHILD = fileURLToPath(new URL('./load-child.mjs', import.meta.url));

export const LOAD_IDS = ['retry-wasm', 'cockatiel', 'async-retry', 'exponential-backoff', 'p-retry', 'pacer'];

function runChild(id, { flows, runs }) {
  return runNodeChild(CHILD, [id, `--flows=${flows}`, `--runs=${runs}`], id);
}

/**
 * Returns { results: { [id]: { wallMs: summary, heapStart: summary,
 * heapWaiting: summary } }, errors: { [id]: message }, flows }.
 */
export async function runLoadCase({ ids = LOAD_IDS, flows = 10_000, runs = 4, passes = 2, log = () => {} } = {}) {
  const pooled = {};
  const errors = {};
  for (let pass = 0; pass < passes; pass++) {
    const order = pass % 2 === 0 ? ids : [...ids].reverse();
    for (const id of order) {
      if (errors[id]) continue;
      const r = await runChild(id, { flows, runs });
      if (r.error) {
        errors[id] = r.error;
        log(`  ! load ${id}: ${r.error.split('\n')[0]}`);
        continue;
      }
      const p = (pooled[id] ??= { wallMs: [], heapStart: [], heapWaiting: [] });
      p.wallMs.push(...r.wallMs);
      p.heapStart.push(r.heapStart);
      p.heapWaiting.push(r.heapWaiting);
      log(`  load ${id} pass ${pass + 1}: wall ${summarize(r.wallMs).median.toFixed(0)} ms, ` +
        `heap ${Math.round(r.heapStart)} / ${Math.round(r.heapWaiting)} B per flow`);
    }
  }
  const results = {};
  for (const [id, p] of Object.entries(pooled)) {
    results[id] = {
      wallMs: summarize(p.wallMs),
      heapStart: summarize(p.heapStart),
      heapWaiting: summarize(p.heapWaiting),
    };
  }
  return { results, errors, flows };
}
