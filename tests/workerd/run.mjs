#!/usr/bin/env node
// The package in Cloudflare's real runtime: fixtures/worker.js imports
// 'retry-wasm' by name and is bundled as Cloudflare's tooling bundles it
// (esbuild, conditions workerd, worker, browser; every .wasm import kept out
// of the bundle as its own module), then served by the workerd binary of
// the npm `workerd` package (`workerd serve config.capnp`, a socket on
// 127.0.0.1 at a free port). One request runs the worker's checks inside
// its fetch handler; the runner checks every value of the JSON it answers.
// A second worker, given a .wasm that does not link, must fail at load with
// the package's own Error, and so must the default (browser) entry, bundled
// without the workerd condition. The workerd process is always killed.
//   node tests/workerd/run.mjs
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, syncDir, INSTALLED, PACKAGE_NAME, ROOT } from '../../scripts/consumer.mjs';
import { report, runStage } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const WORKERD = path.join(ROOT, 'node_modules', '.bin', 'workerd');
const READY_MS = 30_000;
const REQUEST_MS = 30_000;

/** Bundles worker.js into `out/`: the .wasm modules it imports are copied beside it. Returns their names. */
async function bundle(dir, out, conditions = ['workerd', 'worker', 'browser']) {
  const esbuild = await import('esbuild');
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  const wasm = [];
  // As wrangler does: a .wasm import stays an import, of a module that the
  // config lists as `wasm` (workerd compiles it when it loads the config).
  const wasmModules = {
    name: 'wasm-modules',
    setup(build) {
      build.onResolve({ filter: /\.wasm(\?module)?$/ }, (args) => {
        const file = path.resolve(args.resolveDir, args.path.replace(/\?module$/, ''));
        const name = path.basename(file);
        fs.copyFileSync(file, path.join(out, name));
        wasm.push({ name, from: file });
        return { path: `./${name}`, external: true };
      });
    },
  };
  const result = await build(esbuild, dir, out, wasmModules, conditions);
  return { wasm, inputs: Object.keys(result.metafile.inputs), warnings: result.warnings.map((w) => w.text) };
}

function build(esbuild, dir, out, plugin, conditions) {
  return esbuild.build({
    absWorkingDir: dir,
    entryPoints: [path.join(dir, 'worker.js')],
    outfile: path.join(out, 'worker.js'),
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions,
    mainFields: ['browser', 'module', 'main'],
    plugins: [plugin],
    metafile: true,
    logLevel: 'silent',
  });
}

function config(port, wasm) {
  const modules = [
    '(name = "worker.js", esModule = embed "worker.js")',
    ...wasm.map((w) => `(name = ${JSON.stringify(w.name)}, wasm = embed ${JSON.stringify(w.name)})`),
  ];
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [(name = "main", worker = .worker)],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [
    ${modules.join(',\n    ')},
  ],
  compatibilityDate = "2026-01-01",
);
`;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts workerd on `out/config.capnp`, runs `body(url, logs)`, and always kills it. */
async function serve(out, body) {
  const port = await freePort();
  fs.writeFileSync(path.join(out, 'config.capnp'), config(port, JSON.parse(fs.readFileSync(path.join(out, 'wasm.json'), 'utf8'))));
  const child = spawn(WORKERD, ['serve', 'config.capnp', '--verbose'], { cwd: out, env: { ...process.env, PWD: out }, stdio: ['ignore', 'pipe', 'pipe'] });
  let logs = '';
  let exited = null;
  child.stdout.on('data', (d) => (logs += d));
  child.stderr.on('data', (d) => (logs += d));
  const gone = new Promise((resolve) => child.on('close', (code, signal) => resolve((exited = { code, signal }))));
  child.on('error', (e) => (logs += `\n${e.message}`));
  try {
    return await body(`http://127.0.0.1:${port}/`, () => logs, () => exited, port);
  } finally {
    if (!exited) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await gone;
      clearTimeout(timer);
    }
  }
}

/** Polls until workerd accepts a connection on `port` (or exits). */
async function ready(port, exited) {
  const until = performance.now() + READY_MS;
  while (performance.now() < until) {
    if (exited()) return false;
    const ok = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** The values the worker must answer (fixtures/worker.js). */
function expected(body) {
  return {
    asyncRetry: { result: 42, calls: 3 },
    asyncRetryer: {
      value: { doubled: 42 },
      attempts: 2,
      signals: [true, true],
      status: 'idle',
      executionCount: 1,
      currentAttempt: 0,
      isExecuting: false,
      after: null,
    },
    retryFetch: {
      status: 200,
      body: { ok: true, attempt: 3 },
      sent: [1, 2, 3].map(() => ({ url: 'https://backend.example/items', hasSignal: true })),
      // 10 tokens, two failed attempts (-2), one success (+0.1).
      tokens: body?.retryFetch?.tokens > 8.09 && body?.retryFetch?.tokens < 8.11 ? body.retryFetch.tokens : 8.1,
    },
    timeout: {
      rejected: 'TimeoutError',
      message: 'retry-wasm: attempt exceeded maxExecutionTime (20 ms)',
      waited: true,
      events: ['onExecutionTimeout', 'onAbort:execution-timeout', 'onGiveUp:execution-timeout:TimeoutError'],
      lastError: 'TimeoutError',
    },
    parseRetryAfter: 120000,
    userAgent: 'Cloudflare-Workers',
  };
}

async function worksCase(out) {
  return serve(out, async (url, logs, exited, port) => {
    if (!(await ready(port, exited))) return { ok: false, detail: `workerd did not start: ${JSON.stringify(exited())}\n${logs()}` };
    const t0 = performance.now();
    const response = await fetch(url, { signal: AbortSignal.timeout(REQUEST_MS) });
    const text = await response.text();
    const ms = performance.now() - t0;
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return { ok: false, detail: `HTTP ${response.status}, not JSON: ${text}\n${logs()}` };
    }
    const want = expected(body);
    const wrong = Object.keys({ ...want, ...body }).filter((k) => !isDeepStrictEqual(body[k], want[k]));
    if (response.status !== 200 || wrong.length) {
      return {
        ok: false,
        detail: `HTTP ${response.status}; wrong: ${wrong.map((k) => `${k}: got ${JSON.stringify(body[k])}, want ${JSON.stringify(want[k])}`).join('; ')}\n${logs()}`,
      };
    }
    return { ok: true, detail: `one request, ${ms.toFixed(0)} ms: ${text}` };
  });
}

/** Serves `out` and passes when workerd's log has `message` (the worker failed at load with it). */
function failsAtLoad(out, message) {
  return serve(out, async (url, logs, exited, port) => {
    let status = 'no response';
    if (await ready(port, exited)) {
      status = await fetch(url, { signal: AbortSignal.timeout(REQUEST_MS) }).then(
        (r) => `HTTP ${r.status}`,
        (e) => e.message,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
    const line = logs().split('\n').find((l) => l.includes(message));
    return line
      ? { ok: true, detail: `${status}; workerd: ${line.trim().slice(0, 400)}` }
      : { ok: false, detail: `no "${message}" (${status}; workerd ${JSON.stringify(exited())})\n${logs()}` };
  });
}

async function brokenCase(out) {
  // A module that compiles and does not link: it imports a function the
  // glue does not provide (see tests/cjs/run.mjs), from the import module
  // the shipped module names.
  const shipped = new WebAssembly.Module(fs.readFileSync(path.join(INSTALLED, 'pkg/full/retry_wasm.wasm')));
  const glue = Buffer.from(WebAssembly.Module.imports(shipped)[0].module);
  const entry = Buffer.concat([Buffer.from([glue.length]), glue, Buffer.from([7]), Buffer.from('missing'), Buffer.from([0, 0])]);
  const wasm = Buffer.concat([
    Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x02, entry.length + 1, 0x01]),
    entry,
  ]);
  for (const w of JSON.parse(fs.readFileSync(path.join(out, 'wasm.json'), 'utf8'))) fs.writeFileSync(path.join(out, w.name), wasm);
  return failsAtLoad(out, 'retry-wasm cannot load in Cloudflare-Workers: its WebAssembly module failed to instantiate: WebAssembly.Instance(): Import #0');
}

/** Without the workerd condition the bundle takes the default entry, which cannot load there: why the condition exists. */
async function defaultEntryCase(dir) {
  const out = path.join(dir, 'dist-default');
  const b = await bundle(dir, out, ['worker', 'browser']);
  fs.writeFileSync(path.join(out, 'wasm.json'), JSON.stringify(b.wasm));
  return failsAtLoad(out, 'retry-wasm cannot load in Cloudflare-Workers: inflating the embedded module with DecompressionStream failed: Disallowed operation called within global scope');
}

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(path.join(HERE, 'fixtures'), path.join(consumer, 'workerd'));
  const results = [];
  const out = path.join(dir, 'dist');
  const b = await bundle(dir, out);
  fs.writeFileSync(path.join(out, 'wasm.json'), JSON.stringify(b.wasm));
  const entry = b.inputs.find((i) => i.includes(`node_modules/${PACKAGE_NAME}/`) && i.endsWith('/js/workerd-fetch.js'));
  const embedded = b.inputs.filter((i) => /wasm-bytes|engine\.cjs/.test(i));
  if (!entry || b.wasm.length !== 1 || embedded.length || b.warnings.length) {
    results.push({
      label: 'bundle',
      ok: false,
      detail: `entry ${entry ?? 'not js/workerd-fetch.js'}; wasm modules ${JSON.stringify(b.wasm)}; embedded bytes ${embedded.join(', ') || 'none'}; ${b.warnings.join('; ')}`,
    });
  } else {
    const size = fs.statSync(path.join(out, 'worker.js')).size;
    results.push({ label: 'bundle', ok: true, detail: `${path.relative(consumer, path.resolve(dir, entry))} + ${b.wasm.map((w) => path.relative(consumer, w.from)).join()} as a wasm module; worker.js ${(size / 1024).toFixed(1)} KiB` });
    const version = await new Promise((resolve) => {
      const c = spawn(WORKERD, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
      let v = '';
      c.stdout.on('data', (d) => (v += d));
      c.on('close', () => resolve(v.trim()));
      c.on('error', () => resolve('(workerd missing)'));
    });
    results.push({ label: `workerd (${version})`, ...(await worksCase(out)) });
    results.push({ label: 'workerd, a .wasm that does not link', ...(await brokenCase(out)) });
    results.push({ label: 'workerd, the default entry', ...(await defaultEntryCase(dir)) });
  }

  return report('workerd', results, { width: 36 });
}

runStage(main);
