#!/usr/bin/env node
// `npm test`: every check of the project, in stages, in order. Stops at the
// first failing stage. Ends with one summary line per stage and the plain
// line `N passed, N failed[, N skipped]` (counting stages).
//
//   node scripts/test.mjs                 all stages
//   node scripts/test.mjs --only js       one stage (or a comma list: --only types,runtimes)
//   node scripts/test.mjs --list          the stage names
//   node scripts/test.mjs --lines 20,26   the Node lines for the stages that run
//                                          on every line (all of them by default;
//                                          see scripts/node-lines.mjs)
//
// Outside CI, a stage whose file does not exist yet, or whose runner left
// checks out (exit 77: no Chromium), shows as SKIP and is not counted as
// passed; under CI (tests/stage.mjs isCI) either is a failure.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureNode, HOST_LINE, parseLines, runOnLines } from './node-lines.mjs';
import { ensureDependencies } from './deps.mjs';
import { isCI, SKIP_EXIT } from '../tests/stage.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CONSUMER = path.join(ROOT, '.consumer');
const exists = (p) => fs.existsSync(path.join(ROOT, p));
const MIN = 60_000;

class Skip extends Error {}
class Fail extends Error {}

/** Runs a command with inherited output; throws Fail on a non-zero exit. */
function sh(cmd, args, { cwd = ROOT, env, timeout = 20 * MIN } = {}) {
  const shown = [cmd, ...args].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ');
  console.log(`$ ${shown}${cwd !== ROOT ? `   (in ${path.relative(ROOT, cwd) || '.'})` : ''}`);
  const r = spawnSync(cmd, args, {
    cwd,
    stdio: 'inherit',
    env: { ...process.env, ...env },
    timeout,
    killSignal: 'SIGKILL',
  });
  if (r.error?.code === 'ETIMEDOUT') throw new Fail(`${shown}: timed out after ${timeout / MIN} min`);
  if (r.error) throw new Fail(`${shown}: ${r.error.message}`);
  if (r.status === SKIP_EXIT && !isCI()) throw new Skip(`${shown}: skipped checks (exit ${SKIP_EXIT}; its output says which)`);
  if (r.status !== 0) throw new Fail(`${shown}: exit ${r.status ?? r.signal}`);
}

// The Node binary of the line the current stage runs on (scripts/node-lines.mjs).
let lineNode = process.execPath;
const node = (script, args = [], opts) => sh(lineNode, [path.join(ROOT, script), ...args], opts);

function requireFile(file, what) {
  if (exists(file)) return;
  if (isCI()) throw new Fail(`${file} is missing (${what}); required under CI`);
  throw new Skip(`${file} not present yet (${what})`);
}

const STAGES = [
  {
    name: 'spec',
    title: 'every "SPEC §…" citation in the tracked files resolves to docs/SPEC.md',
    run() {
      requireFile('scripts/spec-refs.mjs', 'the citation checker');
      node('scripts/spec-refs.mjs', ['--self-test'], { timeout: MIN });
      node('scripts/spec-refs.mjs', [], { timeout: MIN });
    },
  },
  {
    name: 'rust',
    title: 'cargo fmt, clippy (native + wasm32), cargo test',
    run() {
      requireFile('Cargo.toml', 'the Rust crate');
      const installed = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' });
      if (installed.status === 0 && !installed.stdout.split('\n').includes('wasm32-unknown-unknown')) {
        sh('rustup', ['target', 'add', 'wasm32-unknown-unknown']);
      }
      sh('cargo', ['fmt', '--check']);
      sh('cargo', ['clippy', '--all-targets', '--', '-D', 'warnings'], { timeout: 30 * MIN });
      // Both builds (SPEC §0 "Entries and builds"): the lean one, and the full one with retryFetch.
      sh('cargo', ['clippy', '--lib', '--target', 'wasm32-unknown-unknown', '--', '-D', 'warnings'], { timeout: 30 * MIN });
      sh('cargo', ['clippy', '--lib', '--target', 'wasm32-unknown-unknown', '--features', 'fetch', '--', '-D', 'warnings'], { timeout: 30 * MIN });
      sh('cargo', ['test'], { timeout: 30 * MIN });
    },
  },
  {
    name: 'build',
    title: 'node scripts/build.mjs (Rust -> wasm -> pkg/)',
    run() {
      requireFile('scripts/build.mjs', 'the wasm build');
      node('scripts/build.mjs', [], { timeout: 30 * MIN });
    },
  },
  {
    name: 'consumer',
    title: 'npm pack + install into .consumer/ (the package as users get it)',
    run() {
      requireFile('scripts/build.mjs', 'the wasm build');
      node('scripts/consumer.mjs');
      // Later stages may reuse this install instead of packing again.
      process.env.RETRY_WASM_CONSUMER_FRESH = '1';
    },
  },
  {
    name: 'js',
    lines: true,
    title: 'vitest: tests/js/ against the installed package',
    run() {
      requireFile('tests/js', 'the JS suite');
      requireFile('scripts/build.mjs', 'the wasm build');
      node('scripts/consumer.mjs');
      process.env.RETRY_WASM_CONSUMER_FRESH = '1';
      const dest = path.join(CONSUMER, 'tests');
      fs.rmSync(dest, { recursive: true, force: true });
      fs.cpSync(path.join(ROOT, 'tests', 'js'), dest, { recursive: true });
      const vitest = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
      const config = fs.existsSync(path.join(dest, 'vitest.config.mjs')) ? ['--config', 'vitest.config.mjs'] : [];
      sh(lineNode, [vitest, 'run', ...config], { cwd: dest });
    },
  },
  {
    name: 'sdk',
    lines: true,
    title: 'retryFetch as the custom fetch of real SDKs (openai, Anthropic, Octokit, postgrest-js, ky) against a local flaky server',
    run() {
      requireFile('tests/sdk/run.mjs', 'the SDK tests');
      node('tests/sdk/run.mjs', [], { timeout: 10 * MIN });
    },
  },
  {
    name: 'differential',
    lines: true,
    title: 'retryFetch({ fetch }) against plain fetch, input by input, on one local server',
    run() {
      requireFile('tests/differential/run.mjs', 'the differential fetch tests');
      node('tests/differential/run.mjs', [], { timeout: 10 * MIN });
    },
  },
  {
    name: 'otel',
    lines: true,
    title: 'tracing channels and retry-wasm/otel under the real OpenTelemetry SDK and its undici instrumentation, on a local server',
    run() {
      requireFile('tests/otel/run.mjs', 'the OpenTelemetry tests');
      node('tests/otel/run.mjs', [], { timeout: 10 * MIN });
    },
  },
  {
    name: 'v8-abort',
    lines: true,
    title: "the V8 abort of the README's Node 20 note, reproduced: where it aborts (20, 22), where it does not (24, 26), and the README's ways around it",
    run() {
      requireFile('tests/v8-abort/run.mjs', 'the V8 abort reproduction');
      node('tests/v8-abort/run.mjs', [], { timeout: 5 * MIN });
    },
  },
  {
    name: 'leaks',
    lines: true,
    title: 'node --expose-gc: memory, signal listeners and timers left by flows (tests/leaks/)',
    run() {
      requireFile('tests/leaks/run.mjs', 'the leak tests');
      requireFile('scripts/build.mjs', 'the wasm build');
      node('tests/leaks/run.mjs', [], { timeout: 5 * MIN });
    },
  },
  {
    name: 'types',
    title: 'tsc --noEmit (strict) against the installed package',
    run() {
      requireFile('scripts/build.mjs', 'the wasm build');
      node('tests/types/run.mjs');
    },
  },
  {
    name: 'runtimes',
    lines: true,
    title: 'smoke test in Node, worker_threads, Deno, Bun, Chromium page + worker (other Node lines: Node and worker_threads)',
    run({ host }) {
      requireFile('scripts/build.mjs', 'the wasm build');
      // Other lines: the Node cases only (the browsers, Deno and Bun do not change with the line).
      node('tests/runtimes/run.mjs', host ? [] : ['--only', 'node,node-worker']);
    },
  },
  {
    name: 'bundlers',
    title: 'esbuild (browser, node) and Vite (lib, app) bundles run in Node: each entry, and both in one app (two engines: a RetryBudget crossing them is a TypeError)',
    run() {
      requireFile('scripts/build.mjs', 'the wasm build');
      node('tests/bundlers/run.mjs');
    },
  },
  {
    name: 'cjs',
    lines: true,
    title: 'CommonJS: require in Node main + worker_threads, import/require one instance, esbuild cjs, Jest 30 default mode, load failures',
    run() {
      requireFile('scripts/build.mjs', 'the wasm build');
      node('tests/cjs/run.mjs', [], { timeout: 10 * MIN });
    },
  },
  {
    name: 'workerd',
    title: 'Cloudflare workerd (the real binary): a worker bundled as wrangler does, one request',
    run() {
      requireFile('scripts/build.mjs', 'the wasm build');
      node('tests/workerd/run.mjs', [], { timeout: 5 * MIN });
    },
  },
  {
    name: 'size',
    title: 'node bench/size.mjs --check',
    run() {
      requireFile('bench/size.mjs', 'the size budget');
      node('bench/size.mjs', ['--check']);
    },
  },
  {
    name: 'browser',
    title: 'node tests/browser/www.mjs',
    run() {
      requireFile('tests/browser/www.mjs', 'the playground page test');
      node('tests/browser/www.mjs');
    },
  },
  {
    name: 'demo',
    title: 'node tests/demo/run.mjs',
    run() {
      requireFile('tests/demo/run.mjs', 'the demo test');
      node('tests/demo/run.mjs');
    },
  },
  {
    name: 'fresh',
    title: 'a clone with no node_modules and no pkg/ runs `npm run demo` to exit 0',
    run() {
      requireFile('tests/fresh/run.mjs', 'the fresh-clone test');
      node('tests/fresh/run.mjs', [], { timeout: 20 * MIN });
    },
  },
];

function parseArgs(argv) {
  const i = argv.indexOf('--only');
  if (argv.includes('--list')) {
    for (const s of STAGES) console.log(`${s.name.padEnd(10)} ${s.title}`);
    process.exit(0);
  }
  if (i < 0) return STAGES;
  const names = (argv[i + 1] ?? '').split(',').filter(Boolean);
  const unknown = names.filter((n) => !STAGES.some((s) => s.name === n));
  if (!names.length || unknown.length) {
    console.error(`--only needs stage names from: ${STAGES.map((s) => s.name).join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`);
    process.exit(2);
  }
  return STAGES.filter((s) => names.includes(s.name));
}

const selected = parseArgs(process.argv.slice(2));
let lines;
try {
  lines = parseLines(process.argv.slice(2));
} catch (e) {
  console.error(e.message);
  process.exit(2);
}
try {
  ensureDependencies();
  for (const line of selected.some((s) => s.lines) ? lines : []) ensureNode(line);
} catch (e) {
  console.error(`[deps] ${e.message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const results = [];
const bar = '═'.repeat(78);
let stopped = false;

for (const [i, stage] of selected.entries()) {
  if (stopped) {
    results.push({ stage, status: 'not run', secs: 0 });
    continue;
  }
  console.log(`\n${bar}\n▶ stage ${i + 1}/${selected.length}: ${stage.name} — ${stage.title}\n${bar}`);
  const t0 = performance.now();
  let status = 'passed';
  let note = '';
  try {
    note = runOnLines(stage, lines, (e) => e instanceof Skip, (bin) => (lineNode = bin));
  } catch (e) {
    if (e instanceof Skip) {
      status = 'skipped';
      note = e.message;
      console.log(`SKIP ${stage.name}: ${note}`);
    } else {
      status = 'failed';
      note = e instanceof Fail ? e.message : String(e?.stack ?? e);
      console.log(`FAIL ${stage.name}: ${note}`);
      stopped = true;
    }
  }
  results.push({ stage, status, note, secs: (performance.now() - t0) / 1000 });
}

const count = (s) => results.filter((r) => r.status === s).length;
console.log(`\n${bar}\nsummary\n${bar}`);
for (const r of results) {
  const tag = { passed: 'PASS', failed: 'FAIL', skipped: 'SKIP', 'not run': '----' }[r.status];
  console.log(`${tag}  ${r.stage.name.padEnd(10)} ${r.secs.toFixed(1).padStart(7)}s  ${r.note ?? ''}`.trimEnd());
}
const skipped = count('skipped');
const notRun = count('not run');
if (notRun) console.log(`(${notRun} stage(s) not run after the failure)`);
console.log(`${count('passed')} passed, ${count('failed')} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(count('failed') ? 1 : 0);
