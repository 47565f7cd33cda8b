// The npm dev dependencies, installed when a checkout lacks them. A fresh
// clone has no node_modules: `npm test` (scripts/test.mjs) and every script
// that builds first (`npm run demo`, `www`, `bench`, through
// scripts/build.mjs, which needs esbuild and binaryen's wasm-opt) must work
// there on their own, as the README promises, so they install the locked
// dev dependencies first when node_modules is missing or older than the
// lock file. Imports nothing outside Node, so it runs before anything from
// node_modules is loaded.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TIMEOUT_MS = 20 * 60_000;

/**
 * Runs `npm ci` (or `npm install` without a lock file) in the repository
 * when node_modules is missing or out of date, its output inherited; does
 * nothing otherwise. Throws an Error saying what failed.
 */
export function ensureDependencies() {
  const stamp = path.join(ROOT, 'node_modules', '.package-lock.json');
  const lock = path.join(ROOT, 'package-lock.json');
  const fresh = fs.existsSync(stamp) && (!fs.existsSync(lock) || fs.statSync(stamp).mtimeMs >= fs.statSync(lock).mtimeMs);
  if (fresh) return;
  console.log('\n[deps] installing the npm dev dependencies (node_modules is missing or out of date)');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const args = [fs.existsSync(lock) ? 'ci' : 'install', '--no-audit', '--no-fund'];
  const shown = [npm, ...args].join(' ');
  console.log(`$ ${shown}`);
  const r = spawnSync(npm, args, { cwd: ROOT, stdio: 'inherit', timeout: TIMEOUT_MS, killSignal: 'SIGKILL' });
  if (r.error?.code === 'ETIMEDOUT') throw new Error(`${shown}: timed out after ${TIMEOUT_MS / 60_000} min`);
  if (r.error) throw new Error(`${shown}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${shown}: exit ${r.status ?? r.signal}`);
}
