// Memory-retention case orchestrator: one process per library
// (bench/cases/memory-child.mjs). By default retry-wasm (the target: each
// delta within 2 MB) and cockatiel as a reference that the method reads ~0
// for a library that retains nothing.

import { fileURLToPath } from 'node:url';
import { runNodeChild } from '../lib/child.mjs';

const CHILD = fileURLToPath(new URL('./memory-child.mjs', import.meta.url));
export const MEMORY_TARGET_BYTES = 2 * 1024 * 1024;
export const MEMORY_IDS = ['retry-wasm', 'cockatiel'];

export async function runMemoryCase({ ids = MEMORY_IDS, executions = 1_000_000, retryers = 200_000, log = () => {} } = {}) {
  const results = {};
  const errors = {};
  for (const id of ids) {
    const r = await runNodeChild(CHILD, [id, `--executions=${executions}`, `--retryers=${retryers}`], id);
    if (r.error) {
      errors[id] = r.error;
      log(`  ! memory ${id}: ${r.error.split('\n')[0]}`);
      continue;
    }
    results[id] = { executions: r.executions, retryers: r.retryers };
    const red = (x) => (x.reduced ? ` (REDUCED from ${x.requested}: too slow)` : '');
    log(`  memory ${id}: ${r.executions.n} executions${red(r.executions)} ${r.executions.deltaBytes} B (${r.executions.ms} ms), ` +
      `${r.retryers.n} retryers${red(r.retryers)} ${r.retryers.deltaBytes} B (${r.retryers.ms} ms)`);
  }
  return { results, errors, executions, retryers, targetBytes: MEMORY_TARGET_BYTES };
}
