#!/usr/bin/env node
// Runs the same smoke test (fixtures/check.mjs) against the installed package
// in every runtime SPEC §0 names: Node main thread, Node worker_threads, Deno
// (main and a module Worker), Bun, and headless Chromium (a page with an import map, and a module Web
// Worker). The retryFetch part of that test fetches from test endpoints
// (endpoints.mjs): a server of their own for the processes (its URL in
// $RETRY_WASM_TEST_URL), the page's own server for Chromium.
// Usage: node tests/runtimes/run.mjs [--only node,deno,...]
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsumer, installedEntry, syncDir, ROOT, PACKAGE_NAME } from '../../scripts/consumer.mjs';
import { CHROMIUM, chromiumAvailable, launchChromium, serveStatic, skipBanner } from './chromium.mjs';
import { serveEndpoints, testEndpoints } from './endpoints.mjs';
import { firstLine, isCI, report, runProcess, runStage, SKIPPED, TIMEOUT_MS } from '../stage.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.join(ROOT, 'node_modules', '.bin');
const LINGER_LIMIT_MS = 3_000;

const onlyArg = process.argv.indexOf('--only');
const only = onlyArg > 0 ? new Set(process.argv[onlyArg + 1].split(',')) : null;

async function processRuntime(label, cmd, args, cwd, env = {}) {
  const t0 = performance.now();
  const marker = `SMOKE OK ${label}`;
  const { code, out, lingerMs } = await runProcess(cmd, args, { cwd, env, marker });
  let ok = code === 0 && out.includes(marker);
  let detail = ok ? firstLine(out, 'SMOKE OK') : `exit ${code}\n${out.trim()}`;
  // SPEC §1 rule 12: once the flow has settled nothing keeps the process alive.
  if (ok && lingerMs > LINGER_LIMIT_MS) {
    ok = false;
    detail = `the process stayed alive ${Math.round(lingerMs)} ms after the smoke test finished (limit ${LINGER_LIMIT_MS} ms): a timer or handle is left behind\n${detail}`;
  }
  // The smoke script reports where 'retry-wasm' resolved: it must be the packed copy.
  if (ok && !detail.includes(`/.consumer/node_modules/${PACKAGE_NAME}/`)) {
    ok = false;
    detail = `'${PACKAGE_NAME}' did not resolve into .consumer/node_modules: ${detail}`;
  }
  if (ok && !detail.includes('"retryFetch":{')) {
    ok = false;
    detail = `the retryFetch check did not run (no test endpoint URL?): ${detail}`;
  }
  return { label, ok, ms: performance.now() - t0, detail };
}

async function chromiumRuntimes(consumer) {
  const t0 = performance.now();
  const at = (subpath) => `/node_modules/${PACKAGE_NAME}/${installedEntry(['browser', 'import', 'default'], subpath)}`;
  const importMap = JSON.stringify({ imports: { [PACKAGE_NAME]: at('.'), [`${PACKAGE_NAME}/fetch`]: at('./fetch') } });
  const server = await serveStatic(consumer, {
    routes: testEndpoints(),
    transform: (urlPath, body) =>
      urlPath === '/runtimes/browser.html' ? body.toString('utf8').replace('__IMPORT_MAP__', importMap) : undefined,
  });
  const browser = await launchChromium();
  const logs = [];
  try {
    const page = await browser.newPage();
    page.on('console', (m) => logs.push(`console.${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
    page.on('requestfailed', (r) => logs.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
    page.on('response', (r) => r.status() >= 400 && logs.push(`HTTP ${r.status()}: ${r.url()}`));
    await page.goto(`${server.url}/runtimes/browser.html`);
    let out;
    try {
      out = await (await page.waitForFunction(() => window.__smoke, null, { timeout: TIMEOUT_MS })).jsonValue();
    } catch (e) {
      out = { pageError: `no result: ${e.message}`, workerError: 'no result' };
    }
    const ms = performance.now() - t0;
    const version = browser.version();
    const extra = logs.length ? `\n${logs.join('\n')}` : '';
    const report = (label, result, error) =>
      result?.retryFetch
        ? { label, ok: true, ms, detail: `Chromium ${version} ${JSON.stringify(result)}` }
        : { label, ok: false, ms, detail: result ? `the retryFetch check did not run: ${JSON.stringify(result)}` : `${error}${extra}` };
    return [report('chromium-page', out.page, out.pageError), report('chromium-worker', out.worker, out.workerError)];
  } finally {
    await browser.close();
    await server.close();
  }
}

// The node, node-worker, deno, deno-worker and bun processes, in parallel
// (2 cores; the browser comes after); `env` carries the test endpoints' URL.
function processRuntimes(dir, smoke, consumer, want, env) {
  const jobs = [];
  if (want('node')) jobs.push(processRuntime('node', process.execPath, [smoke, 'node'], consumer, env));
  if (want('node-worker')) jobs.push(processRuntime('node-worker', process.execPath, [path.join(dir, 'node-worker.mjs')], consumer, env));
  const denoEnv = {
    ...env,
    DENO_NO_UPDATE_CHECK: '1',
    DENO_NO_PROMPT: '1',
    DENO_DIR: path.join(consumer, '.deno-cache'),
    NO_COLOR: '1',
  };
  if (want('deno')) jobs.push(processRuntime('deno', path.join(BIN, 'deno'), ['run', '-A', smoke, 'deno'], consumer, denoEnv));
  if (want('deno-worker'))
    jobs.push(processRuntime('deno-worker', path.join(BIN, 'deno'), ['run', '-A', path.join(dir, 'deno-worker.mjs')], consumer, denoEnv));
  if (want('bun')) jobs.push(processRuntime('bun', path.join(BIN, 'bun'), [smoke, 'bun'], consumer, { ...env, NO_COLOR: '1' }));
  return Promise.all(jobs);
}

async function main() {
  const consumer = await ensureConsumer();
  const dir = syncDir(path.join(HERE, 'fixtures'), path.join(consumer, 'runtimes'));
  const smoke = path.join(dir, 'smoke.mjs');
  const want = (name) => !only || only.has(name) || (name.startsWith('chromium') && only.has('chromium'));

  const endpoints = await serveEndpoints();
  const results = [];
  try {
    results.push(...(await processRuntimes(dir, smoke, consumer, want, { RETRY_WASM_TEST_URL: endpoints.url })));
  } finally {
    await endpoints.close();
  }

  if (want('chromium-page') || want('chromium-worker')) {
    if (chromiumAvailable()) {
      try {
        results.push(...(await chromiumRuntimes(consumer)).filter((r) => want(r.label)));
      } catch (e) {
        results.push({ label: 'chromium', ok: false, ms: 0, detail: String(e?.stack ?? e) });
      }
    } else if (isCI()) {
      results.push({ label: 'chromium', ok: false, ms: 0, detail: `CI=true but ${CHROMIUM} is missing` });
    } else {
      skipBanner('Chromium page + module worker smoke tests');
      results.push({ label: 'chromium', ok: true, skipped: true, ms: 0, detail: 'SKIPPED: no chromium' });
    }
  }

  const ok = report('runtimes', results, { width: 16, cut: Infinity });
  // Chromium left out: the stage is a SKIP, not a PASS (a failure under CI).
  return ok && results.some((r) => r.skipped) ? SKIPPED : ok;
}

runStage(main);
