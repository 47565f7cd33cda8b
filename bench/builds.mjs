#!/usr/bin/env node
// Two builds of retry-wasm side by side, in one process: the paired ratio
// of each per-call case (a success through asyncRetry and through
// AsyncRetryer.execute, and fail-once), round by round, as the per-call
// cases of npm run bench measure them (interleaved rounds, rotated order,
// a minor gc before each sample; see cases/per-call.mjs).
//
//   node --expose-gc bench/builds.mjs <package A> <package B> [--rounds N] [--cases success,fail-once]
//
// A package is a folder holding an unpacked `npm pack` of retry-wasm (its
// package.json at the top); each is loaded through its own `main` (the
// CommonJS entry), so both engines run in this one process. The figure is
// B's time over A's: the median over rounds of the per-round ratio, with
// its quartiles. Run it twice with A and B swapped to see the load order's
// share.
import { createRequire } from 'node:module';
import path from 'node:path';
import { runPerCallCase } from './cases/per-call.mjs';
import { retryWasmAdapters } from './lib/adapters.mjs';
import { quantile, table, fmtInt } from './lib/stats.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const dirs = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
if (dirs.length !== 2) {
  console.error('usage: node --expose-gc bench/builds.mjs <package A> <package B> [--rounds N] [--cases success,fail-once]');
  process.exit(2);
}
const rounds = Number(opt('rounds', 30));
const cases = opt('cases', 'success,fail-once').split(',');

const builds = dirs.map((dir, i) => {
  const root = path.resolve(dir);
  const mod = createRequire(path.join(root, 'package.json'))(root);
  const label = i === 0 ? 'A' : 'B';
  return {
    label,
    root,
    adapters: retryWasmAdapters(mod).map((a) => ({ ...a, id: `${label}:${a.id}`, label: `${label} ${a.label}` })),
  };
});

const rows = [];
for (const c of cases) {
  const adapters = builds.flatMap((b) => b.adapters);
  const { results, errors } = await runPerCallCase(c, adapters, { rounds, log: console.error });
  if (Object.keys(errors).length) console.error(errors);
  for (const kind of ['retry-wasm', 'retry-wasm-retryer']) {
    const a = results[`A:${kind}`];
    const b = results[`B:${kind}`];
    if (!a || !b) continue;
    const ratios = a.samples.map((x, i) => b.samples[i] / x).sort((x, y) => x - y);
    rows.push([c, kind === 'retry-wasm' ? 'asyncRetry' : 'AsyncRetryer.execute', fmtInt(a.median), fmtInt(b.median), quantile(ratios, 0.5).toFixed(3), `${quantile(ratios, 0.25).toFixed(3)}-${quantile(ratios, 0.75).toFixed(3)}`]);
  }
}
console.log(`A = ${builds[0].root}\nB = ${builds[1].root}\nNode ${process.versions.node}, ${rounds} rounds\n`);
console.log(table(['case', 'through', 'A ns', 'B ns', 'B/A (median of rounds)', 'p25-p75'], rows, 'llrrrr'));
