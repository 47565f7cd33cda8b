#!/usr/bin/env node
// The consumer project: the package exactly as users get it.
//
// ensureConsumer() builds the wasm (if needed), runs `npm pack` into
// .consumer/, and installs that tarball into .consumer/node_modules so that
// `import 'retry-wasm'` from any file under .consumer/ resolves to the packed
// package — never to the source tree. Test suites (tests/js, tests/types,
// tests/runtimes, tests/bundlers) copy their fixtures under .consumer/ and run
// there, with their tools (vitest, tsc, esbuild, vite) found by Node walking
// up to the repository's own node_modules.
//
// Fast when nothing changed: npm pack is deterministic, so an unchanged
// tarball hash skips the install.
//
// CLI: `node scripts/consumer.mjs [--rebuild]` prints the consumer directory
// on stdout (all progress goes to stderr).

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CONSUMER = path.join(ROOT, '.consumer');
export const PACKAGE_NAME = 'retry-wasm';
export const INSTALLED = path.join(CONSUMER, 'node_modules', PACKAGE_NAME);

const HASH_FILE = path.join(CONSUMER, '.tarball-sha256');
const CONSUMER_PACKAGE_JSON = {
  name: 'retry-wasm-consumer',
  private: true,
  type: 'module',
};

const log = (msg) => process.stderr.write(`[consumer] ${msg}\n`);

/** Runs a command; its stdout goes to our stderr so the CLI's stdout stays clean. */
function run(cmd, args, { cwd = ROOT, env } = {}) {
  const r = spawnSync(cmd, args, {
    cwd,
    stdio: ['ignore', process.stderr, process.stderr],
    env: { ...process.env, ...env },
  });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited with ${r.status ?? r.signal}`);
  }
}

function sha256(file) {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Replaces `dest` with a copy of `src` (a directory); optional filter on paths. */
export function syncDir(src, dest, { filter } = {}) {
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.cpSync(src, dest, { recursive: true, filter: filter ?? (() => true) });
  return dest;
}

/** True when .consumer/ holds an installed package from an earlier ensureConsumer(). */
function installedLooksValid() {
  const pj = readJson(path.join(CONSUMER, 'package.json'));
  return (
    pj?.name === CONSUMER_PACKAGE_JSON.name &&
    readJson(path.join(INSTALLED, 'package.json'))?.name === PACKAGE_NAME &&
    fs.existsSync(HASH_FILE)
  );
}

/**
 * Builds, packs and installs the package into .consumer/. Returns the
 * consumer directory.
 *
 * - rebuild: run the full build (not --if-needed) and reinstall even when the
 *   tarball did not change.
 *
 * When the environment variable RETRY_WASM_CONSUMER_FRESH=1 is set (scripts/
 * test.mjs sets it for the stages after its consumer stage) and an install is
 * present, this returns at once.
 */
export async function ensureConsumer({ rebuild = false } = {}) {
  if (!rebuild && process.env.RETRY_WASM_CONSUMER_FRESH === '1' && installedLooksValid()) {
    return CONSUMER;
  }

  // 1. Build the wasm and its glue.
  const build = path.join(ROOT, 'scripts', 'build.mjs');
  if (!fs.existsSync(build)) {
    throw new Error(`scripts/build.mjs not found: cannot build ${PACKAGE_NAME}`);
  }
  log(rebuild ? 'building (full)' : 'building (--if-needed)');
  run(process.execPath, rebuild ? [build] : [build, '--if-needed']);

  // 2. Pack into .consumer/ (the only tarball there afterwards).
  fs.mkdirSync(CONSUMER, { recursive: true });
  for (const f of fs.readdirSync(CONSUMER)) {
    if (f.endsWith('.tgz')) fs.rmSync(path.join(CONSUMER, f));
  }
  log('npm pack');
  run('npm', ['pack', '--silent', '--pack-destination', CONSUMER]);
  const tarballs = fs.readdirSync(CONSUMER).filter((f) => f.endsWith('.tgz'));
  if (tarballs.length !== 1) {
    throw new Error(`expected one tarball in ${CONSUMER} after npm pack, found: ${tarballs.join(', ') || 'none'}`);
  }
  const tarball = tarballs[0];
  const hash = sha256(path.join(CONSUMER, tarball));

  // 3. Install it, unless the very same tarball is installed already.
  if (!rebuild && installedLooksValid() && fs.readFileSync(HASH_FILE, 'utf8').trim() === hash) {
    log(`unchanged (${tarball} sha256 ${hash.slice(0, 12)}), install skipped`);
  } else {
    log(`installing ${tarball} (sha256 ${hash.slice(0, 12)})`);
    fs.rmSync(HASH_FILE, { force: true });
    fs.rmSync(path.join(CONSUMER, 'node_modules'), { recursive: true, force: true });
    fs.rmSync(path.join(CONSUMER, 'package-lock.json'), { force: true });
    fs.writeFileSync(
      path.join(CONSUMER, 'package.json'),
      JSON.stringify(CONSUMER_PACKAGE_JSON, null, 2) + '\n',
    );
    // The package has no dependencies, so this touches no network.
    run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', `./${tarball}`], {
      cwd: CONSUMER,
    });
    fs.writeFileSync(HASH_FILE, hash + '\n');
  }

  // 4. Prove that the bare name resolves to the installed copy.
  const resolved = createRequire(path.join(CONSUMER, 'probe.js')).resolve(`${PACKAGE_NAME}/package.json`);
  if (!resolved.startsWith(INSTALLED + path.sep)) {
    throw new Error(`'${PACKAGE_NAME}' resolves to ${resolved}, not into ${INSTALLED}`);
  }
  return CONSUMER;
}

/**
 * The installed package's entry file of `subpath` ('.', './fetch') for the
 * given export conditions, as a path relative to the package root (e.g.
 * "js/index.js"). Used where a bare
 * specifier has to be mapped by hand (browser import maps, workers).
 */
export function installedEntry(conditions = ['browser', 'import', 'default'], subpath = '.') {
  const pj = readJson(path.join(INSTALLED, 'package.json'));
  if (!pj) throw new Error(`${PACKAGE_NAME} is not installed in ${CONSUMER}`);
  const pick = (target) => {
    if (typeof target === 'string') return target;
    if (Array.isArray(target)) {
      for (const t of target) {
        const r = pick(t);
        if (r) return r;
      }
      return undefined;
    }
    if (target && typeof target === 'object') {
      for (const [cond, t] of Object.entries(target)) {
        if (cond.startsWith('.')) continue;
        if (conditions.includes(cond)) {
          const r = pick(t);
          if (r) return r;
        }
      }
    }
    return undefined;
  };
  let exp = pj.exports;
  if (exp && typeof exp === 'object' && !Array.isArray(exp) && Object.keys(exp).some((k) => k.startsWith('.'))) {
    exp = exp[subpath];
  }
  const entry = pick(exp) ?? pj.module ?? pj.main ?? 'index.js';
  return entry.replace(/^\.\//, '');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const dir = await ensureConsumer({ rebuild: process.argv.includes('--rebuild') });
    process.stdout.write(dir + '\n');
  } catch (e) {
    process.stderr.write(`[consumer] FAILED: ${e.message}\n`);
    process.exit(1);
  }
}
