#!/usr/bin/env node
// Bundles a consumer entry that imports 'retry-wasm/fetch' by name with
// esbuild (platform browser and node, format esm) and with Vite (library
// mode and app mode), one that imports AsyncRetryer alone from 'retry-wasm'
// (esbuild, Vite lib), and one that imports both entries (two engines in a
// browser bundle: a RetryBudget crossing them is refused), then runs each
// bundle with Node from an empty temporary directory, where no
// node_modules can rescue an import the bundler left behind.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir, PACKAGE_NAME } from '../../scripts/consumer.mjs';
import { report, runStage, TIMEOUT_MS } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Copies `files` (relative to `fromDir`) into a fresh temp dir and runs `main` there with node. */
function runIsolated(label, fromDir, files, main) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retry-wasm-bundle-'));
  try {
    for (const f of files) {
      fs.mkdirSync(path.dirname(path.join(tmp, f)), { recursive: true });
      fs.copyFileSync(path.join(fromDir, f), path.join(tmp, f));
    }
    // Mark the temp dir as ESM so .js output loads as a module.
    fs.writeFileSync(path.join(tmp, 'package.json'), '{"type":"module"}\n');
    const r = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', `globalThis.__BUNDLE_LABEL__ = ${JSON.stringify(label)}; await import(${JSON.stringify('./' + main)});`],
      { cwd: tmp, encoding: 'utf8', timeout: TIMEOUT_MS },
    );
    const out = `${r.stdout}${r.stderr}`.trim();
    return { ok: r.status === 0 && out.includes('SMOKE OK'), detail: out };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function listFiles(dir, base = dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? listFiles(p, base) : [path.relative(base, p)];
  });
}

/** A bare import of the package left in the output would mean it was not bundled. */
function leftoverImport(dir, files) {
  const re = new RegExp(`(?:from|import)\\s*\\(?\\s*["']${PACKAGE_NAME}["']`);
  return files.filter((f) => /\.m?js$/.test(f) && re.test(fs.readFileSync(path.join(dir, f), 'utf8')));
}

async function esbuildCase(dir, platform, entry = 'entry.mjs') {
  const esbuild = await import('esbuild');
  const outdir = path.join(dir, 'dist', `esbuild-${platform}-${path.basename(entry, '.mjs')}`);
  fs.rmSync(outdir, { recursive: true, force: true });
  const result = await esbuild.build({
    absWorkingDir: dir,
    entryPoints: [path.join(dir, entry)],
    bundle: true,
    format: 'esm',
    platform,
    target: 'es2022',
    outfile: path.join(outdir, 'bundle.mjs'),
    logLevel: 'silent',
    metafile: true,
  });
  const warnings = result.warnings.map((w) => `warning: ${w.text}`);
  const inputs = Object.keys(result.metafile.inputs).filter((i) => i.includes(`node_modules/${PACKAGE_NAME}/`));
  return { outdir, files: listFiles(outdir), main: 'bundle.mjs', inputs, warnings };
}

async function viteCase(dir, mode, entry = 'entry.mjs') {
  const { build } = await import('vite');
  const outDir = path.join(dir, 'dist', `vite-${mode}-${path.basename(entry, '.mjs')}`);
  const common = {
    root: dir,
    configFile: false,
    logLevel: 'warn',
    clearScreen: false,
    build: { outDir, emptyOutDir: true, minify: true },
  };
  let main;
  if (mode === 'lib') {
    common.build.lib = { entry: path.join(dir, entry), formats: ['es'], fileName: 'bundle' };
    await build(common);
    main = listFiles(outDir).find((f) => /^bundle\.m?js$/.test(f));
  } else {
    // App mode: index.html -> assets/*.js. No modulepreload polyfill, which
    // touches `document` and so would not run under Node.
    common.build.modulePreload = { polyfill: false };
    await build(common);
    const html = fs.readFileSync(path.join(outDir, 'index.html'), 'utf8');
    main = html.match(/<script[^>]*type="module"[^>]*src="\/?([^"]+)"/)?.[1];
  }
  if (!main) throw new Error(`vite ${mode}: could not find the entry chunk in ${outDir}`);
  return { outdir: outDir, files: listFiles(outDir), main, inputs: [], warnings: [] };
}

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(path.join(HERE, 'fixtures'), path.join(consumer, 'bundlers'));
  fs.copyFileSync(path.join(HERE, '..', 'runtimes', 'fixtures', 'check.mjs'), path.join(dir, 'check.mjs'));

  const cases = [
    ['esbuild-browser', () => esbuildCase(dir, 'browser')],
    ['esbuild-node', () => esbuildCase(dir, 'node')],
    ['vite-lib', () => viteCase(dir, 'lib')],
    ['vite-app', () => viteCase(dir, 'app')],
    // One export imported by name (entry-named.mjs): the entry's own code
    // must survive tree-shaking.
    ['esbuild-browser-named', () => esbuildCase(dir, 'browser', 'entry-named.mjs')],
    ['vite-lib-named', () => viteCase(dir, 'lib', 'entry-named.mjs')],
    // Both entries in one app (entry-both.mjs): two engines in a browser
    // bundle, a budget that crosses them refused; one engine under Node's.
    ['esbuild-browser-both', () => esbuildCase(dir, 'browser', 'entry-both.mjs'), { twoEngines: true }],
    ['vite-lib-both', () => viteCase(dir, 'lib', 'entry-both.mjs'), { twoEngines: true }],
    ['esbuild-node-both', () => esbuildCase(dir, 'node', 'entry-both.mjs'), { twoEngines: false }],
  ];
  const results = [];
  for (const [label, bundle, expect] of cases) {
    const t0 = performance.now();
    let ok = false;
    let detail;
    try {
      const out = await bundle();
      const leftover = leftoverImport(out.outdir, out.files);
      if (leftover.length) {
        detail = `'${PACKAGE_NAME}' still imported by name in ${leftover.join(', ')}: not bundled`;
      } else if (label.startsWith('esbuild') && out.inputs.length === 0) {
        detail = `the bundle read nothing from node_modules/${PACKAGE_NAME}`;
      } else {
        const r = runIsolated(label, out.outdir, out.files, out.main);
        ok = r.ok && (!expect || r.detail.includes(`"twoEngines":${expect.twoEngines}`));
        const size = out.files.reduce((n, f) => n + fs.statSync(path.join(out.outdir, f)).size, 0);
        detail = ok
          ? `${out.files.length} file(s), ${(size / 1024).toFixed(1)} KiB; ${r.detail.split('\n').find((l) => l.startsWith('SMOKE OK'))}`
          : r.detail;
        if (out.warnings.length) detail += `\n${out.warnings.join('\n')}`;
      }
    } catch (e) {
      detail = String(e?.stack ?? e);
    }
    results.push({ label, ok, detail, ms: performance.now() - t0 });
  }
  return report('bundlers', results, { width: 22, cut: Infinity });
}

runStage(main);
