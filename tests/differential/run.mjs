#!/usr/bin/env node
// The differential stage (issue 28, SPEC §2b "A drop-in fetch"): the table
// in table.mjs run against the packed package. Copies tests/differential/
// into .consumer/differential/ so `import 'retry-wasm'` resolves to the
// tarball installed there (and `undici` to the repository's dev
// dependency), runs it in its own Node process, and fails when a row
// differs without a documented reason, when the table does not finish, or
// when the process does not exit by itself soon after its last line
// (something it opened was left open).
//
//   node tests/differential/run.mjs [--only <substring>] [--verbose]
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir } from '../../scripts/consumer.mjs';
import { runProcess, runStage } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TIMEOUT_MS = 180_000;
const EXIT_LIMIT_MS = 2_000;
const MARKER = '\ndifferential: ';

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(HERE, path.join(consumer, 'differential'), { filter: (p) => path.basename(p) !== 'run.mjs' });
  const r = await runProcess(process.execPath, ['table.mjs', ...process.argv.slice(2)], { cwd: dir, marker: MARKER, timeout: TIMEOUT_MS });
  process.stdout.write(r.out.endsWith('\n') ? r.out : `${r.out}\n`);
  const problems = [];
  if (r.killed) problems.push(`the table did not finish within ${TIMEOUT_MS / 1000} s`);
  else if (r.code !== 0) problems.push(`the table exited with ${r.code}`);
  if (!r.out.includes(MARKER)) problems.push('no summary line');
  else if (!(r.lingerMs <= EXIT_LIMIT_MS)) problems.push(`the process lived ${Math.round(r.lingerMs)} ms after its summary (limit ${EXIT_LIMIT_MS} ms): something was left open`);
  const wall = `${(r.wallMs / 1000).toFixed(1)} s, exited ${Number.isFinite(r.lingerMs) ? Math.round(r.lingerMs) : '?'} ms after its summary`;
  if (problems.length) {
    console.log(`differential stage FAILED (${wall}): ${problems.join('; ')}`);
    return false;
  }
  console.log(`differential stage passed (${wall})`);
  return true;
}

runStage(main);
