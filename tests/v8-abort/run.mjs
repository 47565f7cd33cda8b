#!/usr/bin/env node
// The v8-abort stage: what repro.mjs does on the Node line this runner runs
// under, checked against what the README says of that line. Copies
// repro.mjs into .consumer/v8-abort/ so `retry-wasm` resolves to the packed
// package, then runs each of its modes in its own process:
//
//   on a line where V8 aborts (20, 22): late-store and late-run die by a
//   signal with V8's "unreachable code" from
//   Deoptimizer::DoComputeBuiltinContinuation; the same late-store with
//   --no-turbo-inline-js-wasm-calls, and the README's two ways around it
//   (startup: one AsyncLocalStorage.run() before the first retried call;
//   early: the store bound before it), exit 0 with every call right;
//
//   on a line where it does not (24, 26): every mode exits 0 with every
//   call right.
//
// A line whose outcome changes (a Node 22 release with a fixed V8) fails
// here, so the README is corrected with it.
//
//   node tests/v8-abort/run.mjs [--repeat N]   (each case N times, default 1)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir } from '../../scripts/consumer.mjs';
import { firstLine, report, runProcess, runStage } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Per line: whether V8 aborts (measured 2026-12-06 on 20.20.2, 22.23.5, 24.22.3, 26.10.0). */
const ABORTS = { 20: true, 22: true, 24: false, 26: false };

const line = process.versions.node.split('.')[0];
const repeatArg = process.argv.indexOf('--repeat');
const REPEAT = repeatArg > 0 ? Math.max(1, Number(process.argv[repeatArg + 1]) || 1) : 1;

/** The process's end as the stage shows it. */
const ending = (r) => (typeof r.code === 'string' ? `killed by ${r.code}` : `exit ${r.code}`);

function expectAbort(r) {
  const out = r.out;
  if (typeof r.code !== 'string') return `expected V8 to abort (a signal), got ${ending(r)}${r.code === 0 ? ` (${firstLine(out, 'REPRO')})` : ''}`;
  if (!out.includes('unreachable code') || !out.includes('DoComputeBuiltinContinuation')) return `${ending(r)} without V8's "unreachable code" in DoComputeBuiltinContinuation`;
  return '';
}

function expectPass(r) {
  if (r.code === 0 && firstLine(r.out, 'REPRO ')) return '';
  return `expected exit 0 and a REPRO line, got ${ending(r)}`;
}

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(HERE, path.join(consumer, 'v8-abort'), { filter: (p) => path.basename(p) !== 'run.mjs' });
  const aborts = ABORTS[line];
  const cases = [
    ['late-store', [], aborts],
    ['late-run', [], aborts],
    ['startup', [], false],
    ['early', [], false],
  ];
  if (aborts) cases.push(['late-store', ['--no-turbo-inline-js-wasm-calls'], false]);

  const results = [];
  for (const [mode, flags, abort] of cases) {
    for (let i = 0; i < REPEAT; i++) {
      const label = [...flags, mode].join(' ');
      // No core file from the expected abort (SIGTRAP dumps core by default).
      const r = await runProcess('/bin/sh', ['-c', 'ulimit -c 0; exec "$@"', 'sh', process.execPath, ...flags, 'repro.mjs', mode], { cwd: dir });
      if (aborts === undefined) {
        results.push({ label, ok: true, skipped: true, ms: r.wallMs, detail: `no expectation for Node ${line}: ${ending(r)}` });
        continue;
      }
      const problem = abort ? expectAbort(r) : expectPass(r);
      const detail = problem ? `${problem}\n${r.out.trim().split('\n').slice(0, 20).join('\n')}` : abort ? `${ending(r)}: V8 "unreachable code" as expected on Node ${line}` : firstLine(r.out, 'REPRO ');
      results.push({ label, ok: !problem, ms: r.wallMs, detail });
    }
  }
  console.log(`Node ${process.version} (V8 ${process.versions.v8}): V8 ${aborts ? 'aborts' : aborts === false ? 'does not abort' : 'is not known to abort'} here`);
  return report('v8-abort', results, { width: 44 });
}

runStage(main);
