#!/usr/bin/env node
// A new user's first command: `git clone` the repository's HEAD into a
// temporary directory (so no node_modules, no pkg/, nothing uncommitted)
// and run `npm run demo` there as CI would (CI=true, no colour). It passes
// when the command exits 0 having installed the dev dependencies and built
// pkg/ by itself, and the demo printed its `DEMO-RESULT` line with `ok:
// true` (tests/demo/run.mjs checks the demo's scenarios in detail; this
// checks that a clone gets that far on its own). The clone is removed after.
//
// Two caches keep it to minutes, neither part of what a user clones: npm's
// own cache (--prefer-offline: the locked tarballs are not fetched again),
// and Cargo's build directory: CARGO_TARGET_DIR is target/fresh-clone in
// this checkout (ignored by git like all of target/), reused from run to
// run. Not target/ itself: the build's wasm and wasm-bindgen output there
// are single files that a build of this checkout, running at the same
// time from other sources, would overwrite or read half-written.
//
// Usage: node tests/fresh/run.mjs
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { firstLine, report, runProcess, runStage } from '../stage.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MIN = 60_000;

/** This process's npm_* variables (set when it runs under `npm test`), unset for the clone's own npm. */
const npmVariablesUnset = () => Object.fromEntries(Object.keys(process.env).filter((k) => /^npm_/i.test(k)).map((k) => [k, undefined]));

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retry-wasm-fresh-'));
  const clone = path.join(tmp, 'retry-wasm');
  const results = [];
  try {
    const cloned = await runProcess('git', ['clone', '--quiet', ROOT, clone], { timeout: 2 * MIN });
    const leftovers = ['node_modules', 'pkg', 'target'].filter((d) => fs.existsSync(path.join(clone, d)));
    results.push({
      label: 'git clone HEAD',
      ok: cloned.code === 0 && leftovers.length === 0,
      ms: cloned.wallMs,
      detail: cloned.code !== 0 ? `exit ${cloned.code}\n${cloned.out}` : leftovers.length ? `the clone has ${leftovers.join(', ')}` : 'no node_modules, no pkg/',
    });
    if (!results[0].ok) return report('fresh', results);

    const demo = await runProcess(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'demo'], {
      cwd: clone,
      timeout: 18 * MIN,
      env: {
        ...npmVariablesUnset(),
        CI: 'true',
        NO_COLOR: '1',
        FORCE_COLOR: '0',
        CARGO_TERM_COLOR: 'never',
        NO_UPDATE_NOTIFIER: '1',
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1',
        npm_config_prefer_offline: 'true',
        CARGO_TARGET_DIR: path.join(ROOT, 'target', 'fresh-clone'),
      },
    });
    const line = firstLine(demo.out, 'DEMO-RESULT ');
    let result = null;
    try {
      result = line ? JSON.parse(line.slice('DEMO-RESULT '.length)) : null;
    } catch {}
    const problems = [
      demo.code !== 0 && `exit ${demo.code}${demo.killed ? ' (killed: timed out)' : ''}`,
      !demo.out.includes('[deps] installing') && 'it did not install the dev dependencies',
      !fs.existsSync(path.join(clone, 'pkg', 'engine.cjs')) && 'it did not build pkg/',
      !line && 'no DEMO-RESULT line',
      line && result?.ok !== true && `DEMO-RESULT is not ok: ${line.slice(0, 300)}`,
    ].filter(Boolean);
    results.push({
      label: 'npm run demo',
      ok: problems.length === 0,
      ms: demo.wallMs,
      detail: problems.length
        ? `${problems.join('; ')}\n${demo.out.split('\n').slice(-40).join('\n')}`
        : `exit 0; installed, built, ${result.scenarios?.length ?? 0} scenarios ok`,
    });
    return report('fresh', results);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

runStage(main);
