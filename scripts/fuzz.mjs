#!/usr/bin/env node
// `npm run fuzz`: runs the cargo-fuzz targets of fuzz/ for a bounded time
// each (issue 6). Separate from `npm test`: it needs the nightly toolchain.
//
//   npm run fuzz                          every target, 60 s each
//   npm run fuzz -- --seconds 300         longer
//   npm run fuzz -- machine               one target
//   npm run fuzz -- --seconds 30 -- -dict=my.dict   extra libFuzzer flags
//
// Prints executions and time per target and one summary line; exits 1 when
// a target crashed (with the reproducer path and how to replay and minimise
// it), 2 when the tooling is missing. The corpus grows in fuzz/corpus/<target>
// and crash files land in fuzz/artifacts/<target> (both git-ignored); the full
// libFuzzer output of the last run is in fuzz/target/fuzz-logs/<target>.log.

import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fuzzDir = join(root, 'fuzz');
const TARGETS = ['options', 'machine', 'breaker'];

function usage(msg) {
  if (msg) console.error(`fuzz: ${msg}`);
  console.error(
    'usage: npm run fuzz -- [--seconds N] [options|machine|breaker ...] [-- libFuzzer flags]',
  );
  process.exit(2);
}

// ----- arguments -----
let seconds = 60;
const targets = [];
const extra = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--') {
    extra.push(...argv.slice(i + 1));
    break;
  } else if (a === '--seconds' || a.startsWith('--seconds=')) {
    const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
    seconds = Number(v);
    if (!Number.isInteger(seconds) || seconds < 1) usage(`--seconds wants a whole number ≥ 1, got ${v}`);
  } else if (a === '--help' || a === '-h') {
    usage();
  } else if (TARGETS.includes(a)) {
    targets.push(a);
  } else {
    usage(`unknown argument ${a}`);
  }
}
if (targets.length === 0) targets.push(...TARGETS);

// ----- tooling -----
function run(cmd, args, opts = {}) {
  return spawnSync(cmd, args, { encoding: 'utf8', ...opts });
}

const nightly = run('cargo', ['+nightly', '--version']);
if (nightly.status !== 0) {
  console.error(
    'fuzz: the nightly Rust toolchain is missing (cargo-fuzz needs it for the sanitizer flags).\n' +
      '      install it with: rustup toolchain install nightly\n' +
      (nightly.stderr || nightly.error?.message || '').trim(),
  );
  process.exit(2);
}
console.log(`fuzz: ${nightly.stdout.trim()}`);

let cf = run('cargo', ['+nightly', 'fuzz', '--version']);
if (cf.status !== 0) {
  console.log('fuzz: cargo-fuzz is missing; installing it (cargo install cargo-fuzz, a few minutes)');
  const inst = spawnSync('cargo', ['install', 'cargo-fuzz'], { stdio: 'inherit' });
  cf = run('cargo', ['+nightly', 'fuzz', '--version']);
  if (inst.status !== 0 || cf.status !== 0) {
    console.error('fuzz: could not install cargo-fuzz; try `cargo install cargo-fuzz` by hand');
    process.exit(2);
  }
}
console.log(`fuzz: ${cf.stdout.trim()}`);

console.log(`fuzz: building ${targets.join(', ')}`);
const build = spawnSync('cargo', ['+nightly', 'fuzz', 'build', ...(targets.length === 1 ? targets : [])], {
  cwd: fuzzDir,
  stdio: 'inherit',
});
if (build.status !== 0) {
  console.error('fuzz: the fuzz targets do not build');
  process.exit(2);
}

// ----- running -----
function fuzzOne(target) {
  // Not under fuzz/artifacts: cargo-fuzz takes the newest file there for
  // the failing input.
  const logDir = join(fuzzDir, 'target', 'fuzz-logs');
  mkdirSync(logDir, { recursive: true });
  const logPath = join(logDir, `${target}.log`);
  const log = createWriteStream(logPath);
  const args = [
    '+nightly', 'fuzz', 'run', target, '--',
    `-max_total_time=${seconds}`,
    // An input that runs this long is a hang (an endless loop in the
    // machine): report it as a crash.
    '-timeout=10',
    '-max_len=4096',
    '-print_final_stats=1',
    ...extra,
  ];
  console.log(`\nfuzz: ${target} for ${seconds} s`);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('cargo', args, { cwd: fuzzDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let partial = '';
    let latest = null;
    const seen = { execs: 0, ranFor: 0, crashPath: null, panic: null };
    let panicNext = false;
    const onLine = (line) => {
      const m = line.match(/^#(\d+)\s.*?cov: (\d+).*?corp: (\S+).*?exec\/s: (\d+)/);
      if (m) {
        latest = m;
        seen.execs = Number(m[1]);
      }
      const units = line.match(/stat::number_of_executed_units:\s*(\d+)/);
      if (units) seen.execs = Number(units[1]);
      const done = line.match(/^Done (\d+) runs in (\d+) second/);
      if (done) [seen.execs, seen.ranFor] = [Number(done[1]), Number(done[2])];
      const unit = line.match(/Test unit written to (\S+)/);
      if (unit && !seen.crashPath) seen.crashPath = unit[1];
      if (panicNext) {
        seen.panic = `${seen.panic}\n${line}`;
        panicNext = false;
      }
      if (!seen.panic && /panicked at /.test(line)) {
        seen.panic = line.trim();
        panicNext = true;
      }
    };
    const onData = (chunk) => {
      log.write(chunk);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop();
      lines.forEach(onLine);
    };
    // A progress line every 30 s (libFuzzer itself goes quiet once the
    // corpus settles); the full output is in the log.
    const progress = setInterval(() => {
      const s = Math.round((Date.now() - started) / 1000);
      const m = latest;
      console.log(
        m
          ? `  ${target}: ${s} s, ≥${m[1]} execs, cov ${m[2]}, corpus ${m[3]}, ${m[4]}/s`
          : `  ${target}: ${s} s`,
      );
    }, 30_000);
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code, signal) => {
      clearInterval(progress);
      onLine(partial);
      log.end();
      const ranFor = seen.ranFor || Math.round((Date.now() - started) / 1000);
      const { execs, crashPath, panic } = seen;
      const ok = code === 0 && !crashPath;
      resolve({ target, ok, code, signal, execs, ranFor, crashPath, panic, logPath });
    });
  });
}

function rustBytes(path) {
  const bytes = readFileSync(path);
  if (bytes.length > 2048) return null;
  const rows = [];
  for (let i = 0; i < bytes.length; i += 16) rows.push(`    ${[...bytes.subarray(i, i + 16)].join(', ')},`);
  return `const CRASH: &[u8] = &[\n${rows.join('\n')}\n];`;
}

const results = [];
for (const t of targets) {
  const r = await fuzzOne(t);
  results.push(r);
  const rate = r.ranFor > 0 ? Math.round(r.execs / r.ranFor) : 0;
  if (r.ok) {
    console.log(`fuzz: ${t}: ${r.execs} executions in ${r.ranFor} s (${rate}/s), no crash`);
    continue;
  }
  console.log(`fuzz: ${t}: CRASH after ${r.execs} executions in ${r.ranFor} s (exit ${r.code ?? r.signal})`);
  if (r.panic) console.log(`  ${r.panic.replace(/\n/g, '\n  ')}`);
  if (r.crashPath && existsSync(r.crashPath)) {
    const rel = relative(fuzzDir, r.crashPath);
    console.log(`  reproducer: ${r.crashPath}`);
    console.log(`  replay:     (cd fuzz && cargo +nightly fuzz run ${t} ${rel})`);
    console.log(`  minimise:   (cd fuzz && cargo +nightly fuzz tmin ${t} ${rel})`);
    const arr = rustBytes(r.crashPath);
    if (arr) {
      console.log(`  as a regression test in tests/fuzz_regressions.rs (run_${t}(CRASH)):`);
      console.log(arr.replace(/^/gm, '    '));
    }
  } else {
    console.log(`  no reproducer written; see ${r.logPath}`);
  }
  console.log(`  full output: ${r.logPath}`);
}

const summary = results
  .map((r) => `${r.target} ${r.execs} execs/${r.ranFor} s${r.ok ? '' : ' CRASH'}`)
  .join(', ');
const crashed = results.filter((r) => !r.ok);
console.log(
  `\nfuzz: ${crashed.length === 0 ? 'PASS' : 'FAIL'}: ${summary}` +
    (crashed.length ? ` (reproducers: ${crashed.map((r) => r.crashPath ?? r.logPath).join(', ')})` : ''),
);
process.exit(crashed.length === 0 ? 0 : 1);
