#!/usr/bin/env node
// What a closed circuit breaker costs a success, in one process: asyncRetry
// and AsyncRetryer.execute with and without a `breaker` (a CircuitBreaker
// whose circuit stays closed), paired round by round as bench/builds.mjs
// pairs two builds (interleaved rounds, rotated order, a minor gc before
// each sample; see cases/per-call.mjs).
//
//   node --expose-gc bench/breaker-cost.mjs [package] [--rounds N]
//
// `package`: a folder holding an unpacked `npm pack` of retry-wasm (default:
// the one installed in .consumer/). The figure is the time with a breaker
// over the time without: the median over rounds of the per-round ratio.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runPerCallCase } from './cases/per-call.mjs';
import { quantile, table, fmtInt } from './lib/stats.mjs';

const args = process.argv.slice(2);
const at = args.indexOf('--rounds');
const rounds = at >= 0 ? Number(args[at + 1]) : 30;
const here = path.dirname(fileURLToPath(import.meta.url));
const dir = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--rounds') ?? path.join(here, '../.consumer/node_modules/retry-wasm');
const root = path.resolve(dir);
const { asyncRetry, AsyncRetryer, CircuitBreaker } = createRequire(path.join(root, 'package.json'))(root);

const options = (p) => ({ maxAttempts: p.attempts, baseWait: p.waitMs, jitter: 0 });
const breaker = new CircuitBreaker();
const adapters = [false, true].flatMap((withBreaker) => {
  const extra = withBreaker ? { breaker } : {};
  const tag = withBreaker ? 'breaker' : 'plain';
  return [
    { id: `asyncRetry:${tag}`, label: `asyncRetry ${tag}`, kind: 'retry-wasm', wrap: (fn, p) => asyncRetry(fn, { ...options(p), ...extra }) },
    {
      id: `execute:${tag}`,
      label: `AsyncRetryer.execute ${tag}`,
      kind: 'retry-wasm',
      perCallOnly: true,
      wrap: (fn, p) => {
        const r = new AsyncRetryer(fn, { ...options(p), ...extra });
        return () => r.execute();
      },
    },
  ];
});

const { results, errors } = await runPerCallCase('success', adapters, { rounds, log: console.error });
if (Object.keys(errors).length) {
  console.error(errors);
  process.exit(1);
}
const rows = [];
for (const through of ['asyncRetry', 'execute']) {
  const a = results[`${through}:plain`];
  const b = results[`${through}:breaker`];
  const ratios = a.samples.map((s, i) => b.samples[i] / s).sort((x, y) => x - y);
  rows.push([through, fmtInt(a.median), fmtInt(b.median), quantile(ratios, 0.5).toFixed(3), `${quantile(ratios, 0.25).toFixed(3)}-${quantile(ratios, 0.75).toFixed(3)}`]);
}
console.log(`${root}\nNode ${process.versions.node}, ${rounds} rounds, state after: ${breaker.state()}\n`);
console.log(table(['through', 'no breaker ns', 'closed breaker ns', 'ratio (median of rounds)', 'p25-p75'], rows));
