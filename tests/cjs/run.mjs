#!/usr/bin/env node
// CommonJS and load failures, against the installed package (copied into
// .consumer/cjs/):
//   exports          "./async-retryer" has exactly the targets of "."
//   cjs-node         require('retry-wasm') in Node's main thread, then the
//                    smoke test every runtime runs (retryFetch included)
//   cjs-node-worker  the same in worker_threads
//   cjs-dual         import and require (and the subpath) give the very same
//                    exports; a RetryBudget from require drains with
//                    retryers from import
//   esbuild-cjs      require.cjs bundled by esbuild (platform node, format
//                    cjs), run from an empty directory
//   jest             Jest 30 in its default mode, no config and no flags, on
//                    a CommonJS project: fixtures/jest/retry.test.js (fake
//                    timers drive the backoff)
//   no-wasm-*        WebAssembly deleted by a preload: require, import and
//                    the browser entry each throw at import time an Error
//                    naming Node's version and what is missing
//   broken-*         a copy of the package whose embedded module does not
//                    compile, or does not link: the same kind of Error, the
//                    engine's own error as its cause
//   uncaught-*       an option error nobody catches (require, import, the
//                    browser entry): Node prints the source line it was
//                    thrown from, and that line fits a terminal; the whole
//                    stderr stays under 2 KB and names the option
// Usage: node tests/cjs/run.mjs
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { deflateRawSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir, INSTALLED, PACKAGE_NAME, ROOT } from '../../scripts/consumer.mjs';
import { serveEndpoints } from '../runtimes/endpoints.mjs';
import { firstLine, report, runProcess, runStage } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const JEST = path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');

/** Runs node with `args` in `cwd`; resolves { code, out } (stdout and stderr together). */
const node = (args, { cwd, env } = {}) => runProcess(process.execPath, args, { cwd, env });

/** A smoke process: passes when it prints its marker and resolved into the installed package. */
async function smoke(label, args, cwd, env, { resolved = `/.consumer/node_modules/${PACKAGE_NAME}/js/require-fetch.cjs`, fetchRan = true } = {}) {
  const { code, out } = await node(args, { cwd, env });
  const line = firstLine(out, `SMOKE OK ${label}`);
  if (code !== 0 || !line) return { label, ok: false, detail: `exit ${code}\n${out.trim()}` };
  if (resolved && !line.includes(resolved)) return { label, ok: false, detail: `did not resolve to ${resolved}: ${line}` };
  if (fetchRan && !line.includes('"retryFetch":{')) return { label, ok: false, detail: `the retryFetch check did not run: ${line}` };
  return { label, ok: true, detail: line };
}

function exportsCheck() {
  const pj = JSON.parse(fs.readFileSync(path.join(INSTALLED, 'package.json'), 'utf8'));
  const same = isDeepStrictEqual(pj.exports['./async-retryer'], pj.exports['.']);
  return {
    label: 'exports',
    ok: same,
    detail: same ? `"./async-retryer" = "." = ${JSON.stringify(pj.exports['.'])}` : `"./async-retryer" differs from ".": ${JSON.stringify(pj.exports)}`,
  };
}

async function esbuildCjs(dir, env) {
  const esbuild = await import('esbuild');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retry-wasm-cjs-'));
  try {
    const result = await esbuild.build({
      entryPoints: [path.join(dir, 'require.cjs')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      outfile: path.join(tmp, 'bundle.cjs'),
      logLevel: 'silent',
      metafile: true,
    });
    const inputs = Object.keys(result.metafile.inputs).filter((i) => i.includes(`node_modules/${PACKAGE_NAME}/pkg/engine.cjs`));
    if (!inputs.length) return { label: 'esbuild-cjs', ok: false, detail: `the bundle did not read node_modules/${PACKAGE_NAME}/pkg/engine.cjs` };
    if (result.warnings.length) return { label: 'esbuild-cjs', ok: false, detail: result.warnings.map((w) => w.text).join('\n') };
    return await smoke('esbuild-cjs', [path.join(tmp, 'bundle.cjs'), 'esbuild-cjs'], tmp, env, { resolved: null });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function jest(dir) {
  const cwd = path.join(dir, 'jest');
  const expected = (fs.readFileSync(path.join(cwd, 'retry.test.js'), 'utf8').match(/^test\(/gm) ?? []).length;
  // No flags: Jest as a project with no config runs it.
  const { code, out } = await node([JEST], { cwd, env: { CI: 'true', NO_COLOR: '1', FORCE_COLOR: '0' } });
  const summary = firstLine(out.replace(/\u001b\[[0-9;]*m/g, ''), 'Tests:');
  const ok = code === 0 && new RegExp(`^Tests:\\s+${expected} passed, ${expected} total$`).test(summary.trim());
  return { label: 'jest', ok, detail: ok ? `Jest ${jestVersion()}, default mode: ${summary.replace(/\s+/g, ' ')}` : `exit ${code}, expected ${expected} tests\n${out.trim()}` };
}

const jestVersion = () => JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', 'jest', 'package.json'), 'utf8')).version;

/** A load failure: the process fails, with our Error and not a TypeError or ReferenceError from inside the glue. */
async function loadFailure(label, args, cwd, expected) {
  const { code, out } = await node(args, { cwd });
  const line = firstLine(out.trim(), 'LOAD ') || out.split('\n').find((l) => l.includes(expected)) || '';
  const stray = /\b(TypeError|ReferenceError)\b/.exec(line);
  const ok = line.includes(expected) && !stray && (code !== 0 || line.startsWith('LOAD '));
  return { label, ok, detail: ok ? line.trim() : `expected "${expected}", exit ${code}\n${out.trim()}` };
}

// The smallest module that compiles and cannot link: it imports a function
// `missing` from the glue's import module (named as the shipped module
// names it: the build shortens it), which the glue does not provide.
function brokenModules() {
  const shipped = new WebAssembly.Module(fs.readFileSync(path.join(INSTALLED, 'pkg/full/retry_wasm.wasm')));
  const glueModule = Buffer.from(WebAssembly.Module.imports(shipped)[0].module);
  const importEntry = Buffer.concat([Buffer.from([glueModule.length]), glueModule, Buffer.from([7]), Buffer.from('missing'), Buffer.from([0x00, 0x00])]);
  const unlinkable = Buffer.concat([
    Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]), // "\0asm", version 1
    Buffer.from([0x01, 0x04, 0x01, 0x60, 0x00, 0x00]), // type section: () -> ()
    Buffer.from([0x02, importEntry.length + 1, 0x01]), // import section, one entry
    importEntry,
  ]);
  const uncompilable = Buffer.concat([unlinkable.subarray(0, 8), Buffer.from('not a wasm section')]);
  return { unlinkable, uncompilable };
}

/** A copy of the installed package (in a temp project) whose embedded module is `wasm`. */
function brokenCopy(wasm) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retry-wasm-broken-'));
  const copy = path.join(tmp, 'node_modules', PACKAGE_NAME);
  fs.cpSync(INSTALLED, copy, { recursive: true });
  // The browser entry's bytes are deflated; the CommonJS entry's are not.
  for (const [f, b64] of [
    ['pkg/full/wasm-raw.cjs', wasm.toString('base64')],
    ['pkg/lean/wasm-bytes.js', deflateRawSync(wasm).toString('base64')],
  ]) {
    const file = path.join(copy, f);
    const text = fs.readFileSync(file, 'utf8');
    const replaced = text.replace(/"[A-Za-z0-9+/]{1024,}={0,2}"/, JSON.stringify(b64));
    if (replaced === text) throw new Error(`${f}: no embedded module found to replace`);
    fs.writeFileSync(file, replaced);
  }
  return tmp;
}

// What the broken copies are loaded with: the error's class, message and cause.
const REPORT = (load) =>
  `try { ${load}; console.log('LOADED'); } catch (e) { console.log('LOAD', e.constructor.name, JSON.stringify(e.message), 'cause:', e.cause?.constructor?.name); }`;

async function badInput(consumer) {
  const runtime = `Node ${process.versions.node}`;
  const missing = `Error: retry-wasm cannot load in ${runtime}: globalThis.WebAssembly is missing`;
  const preload = ['--import', './cjs/no-wasm.mjs'];
  const results = await Promise.all([
    loadFailure('no-wasm-require', [...preload, '-e', "require('retry-wasm')"], consumer, missing),
    loadFailure('no-wasm-import', [...preload, '--input-type=module', '-e', "await import('retry-wasm')"], consumer, missing),
    loadFailure('no-wasm-browser-entry', [...preload, '--input-type=module', '-e', `await import('./node_modules/${PACKAGE_NAME}/js/index.js')`], consumer, missing),
  ]);
  const { unlinkable, uncompilable } = brokenModules();
  for (const [kind, wasm, cause] of [['compile', uncompilable, 'CompileError'], ['link', unlinkable, 'LinkError']]) {
    const tmp = brokenCopy(wasm);
    try {
      const expected = (msg) => `LOAD Error "retry-wasm cannot load in ${runtime}: its WebAssembly module failed to instantiate: ${msg}`;
      const why = kind === 'compile' ? 'WebAssembly.Module(): ' : 'WebAssembly.Instance(): Import #0 ';
      const tail = ` cause: ${cause}`;
      for (const r of await Promise.all([
        loadFailure(`broken-${kind}-require`, ['-e', REPORT(`require('${PACKAGE_NAME}')`)], tmp, expected(why)),
        loadFailure(`broken-${kind}-browser-entry`, ['--input-type=module', '-e', REPORT(`await import('./node_modules/${PACKAGE_NAME}/js/index.js')`)], tmp, expected(why)),
      ])) {
        if (r.ok && !r.detail.endsWith(tail)) Object.assign(r, { ok: false, detail: `cause is not a ${cause}: ${r.detail}` });
        results.push(r);
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  return results;
}

// An uncaught option error: what Node writes is the line the error was
// thrown from (the minified entry once put 13.6 KB there), a caret line as
// long, the message and the stack.
const UNCAUGHT_MAX_BYTES = 2048;
const UNCAUGHT_MAX_LINE = 240;
const UNCAUGHT_MESSAGE = "TypeError: retry-wasm: unknown option 'timeout' (got 1000)";

async function uncaughtErrors(consumer) {
  const make = "new AsyncRetryer(async () => 1, { timeout: 1000 })";
  const cases = [
    ['uncaught-require', ['-e', `const { AsyncRetryer } = require('retry-wasm'); ${make}`]],
    ['uncaught-import', ['--input-type=module', '-e', `import { AsyncRetryer } from 'retry-wasm'; ${make}`]],
    [
      'uncaught-browser-entry',
      ['--input-type=module', '-e', `const { AsyncRetryer } = await import('./node_modules/${PACKAGE_NAME}/js/index.js'); ${make}`],
    ],
  ];
  return Promise.all(
    cases.map(async ([label, args]) => {
      const { code, out } = await node(args, { cwd: consumer });
      const bytes = Buffer.byteLength(out);
      const longest = Math.max(...out.split('\n').map((l) => l.length));
      const problems = [
        code === 0 && 'it exited 0',
        !out.includes(UNCAUGHT_MESSAGE) && `no "${UNCAUGHT_MESSAGE}"`,
        bytes >= UNCAUGHT_MAX_BYTES && `${bytes} bytes (limit ${UNCAUGHT_MAX_BYTES})`,
        longest > UNCAUGHT_MAX_LINE && `a line of ${longest} characters (limit ${UNCAUGHT_MAX_LINE})`,
      ].filter(Boolean);
      return problems.length
        ? { label, ok: false, detail: `${problems.join('; ')}\n${out.slice(0, 3000)}` }
        : { label, ok: true, detail: `${bytes} bytes on stderr, longest line ${longest}, names the option` };
    }),
  );
}

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(path.join(HERE, 'fixtures'), path.join(consumer, 'cjs'));
  fs.copyFileSync(path.join(HERE, '..', 'runtimes', 'fixtures', 'check.mjs'), path.join(dir, 'check.mjs'));

  const results = [exportsCheck()];
  const endpoints = await serveEndpoints();
  try {
    const env = { RETRY_WASM_TEST_URL: endpoints.url };
    // Two at a time (2 cores).
    results.push(
      ...(await Promise.all([
        smoke('cjs-node', [path.join(dir, 'require.cjs'), 'cjs-node'], dir, env),
        smoke('cjs-node-worker', [path.join(dir, 'require-worker.cjs')], dir, env),
      ])),
    );
    results.push(
      ...(await Promise.all([
        smoke('cjs-dual', [path.join(dir, 'dual.mjs')], dir, env, { resolved: `/.consumer/node_modules/${PACKAGE_NAME}/js/node.js`, fetchRan: false }),
        esbuildCjs(dir, env),
      ])),
    );
  } finally {
    await endpoints.close();
  }
  results.push(await jest(dir));
  results.push(...(await badInput(consumer)));
  results.push(...(await uncaughtErrors(consumer)));

  return report('cjs', results, { width: 28, cut: 400 });
}

runStage(main);
