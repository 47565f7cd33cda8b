// Browser test of the www playground: serves the page, drives it in Debian's
// chromium through playwright-core, and saves a screenshot.
//
//   node tests/browser/www.mjs
//
// Without /usr/bin/chromium it skips (exit 77, which `npm test` shows as
// SKIP) unless under CI (tests/stage.mjs isCI), where that is a failure.
// It tests the built package (pkg/): run `npm run build` first (npm test does).

import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isCI, SKIP_EXIT } from '../stage.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, '.artifacts');
const SCREENSHOT = join(ARTIFACTS, 'www.png');

let passed = 0;
let failed = 0;
function check(name, ok, detail = '') {
  if (ok) {
    passed++;
    console.log(`  ok    ${name}`);
  } else {
    failed++;
    console.log(`  FAIL  ${name}${detail ? `: ${detail}` : ''}`);
  }
  return ok;
}
/** Set a control's value the way a user would (ranges cannot be `fill`ed). */
function setValue(tab, selector, value) {
  return tab.$eval(
    selector,
    (el, v) => {
      el.value = v;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    },
    value,
  );
}
function finish() {
  console.log(`\nwww: ${passed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

if (!existsSync(CHROMIUM)) {
  if (isCI()) {
    check(`chromium at ${CHROMIUM}`, false, 'missing under CI (install Debian chromium)');
    finish();
    process.exit(1);
  }
  console.log(`\n*** SKIP tests/browser/www.mjs: no chromium at ${CHROMIUM} (apt-get install chromium); the playground was NOT tested ***\n`);
  process.exit(SKIP_EXIT);
}
if (!existsSync(join(ROOT, 'pkg', 'full', 'wasm-bytes.js'))) {
  check('package built (pkg/full/wasm-bytes.js)', false, 'run `npm run build` first');
  finish();
  process.exit(1);
}

const { chromium } = await import('playwright-core');
const { startServer } = await import(join(ROOT, 'www', 'serve.mjs'));

const server = await startServer({ port: 0 });
let browser;
const problems = [];
try {
  console.log(`www playground at ${server.url}`);

  // --- the server itself
  const get = (path) => fetch(new URL(path, server.url));
  const entry = await get('/retry-wasm/js/index.js');
  check('server: package entry served as text/javascript', entry.ok && /^text\/javascript/.test(entry.headers.get('content-type') ?? ''), `${entry.status} ${entry.headers.get('content-type')}`);
  const page = await get('/');
  const html = await page.text();
  check('server: index.html has an import map for retry-wasm', page.ok && /"retry-wasm"\s*:/.test(html));
  const escapes = await Promise.all(
    ['/retry-wasm/package.json', '/retry-wasm/js/../package.json', '/retry-wasm/%2e%2e/package.json', '/retry-wasm/src/lib.rs', '/serve.mjs', '/..%2fpackage.json'].map((p) => get(p).then((r) => r.status)),
  );
  check('server: nothing outside www/, js/ and pkg/ is served', escapes.every((st) => st === 404), escapes.join(','));
  const vendor = await Promise.all(['/vendor/opentelemetry-api.js', '/vendor/opentelemetry-sdk-trace-base.js'].map(get));
  check('server: the OpenTelemetry packages of the spans panel are bundled under /vendor/ as JavaScript', vendor.every((r) => r.ok && /^text\/javascript/.test(r.headers.get('content-type') ?? '')), vendor.map((r) => `${r.status} ${r.headers.get('content-type')}`).join(', '));
  const vendorOther = await Promise.all(['/vendor/esbuild.js', '/vendor/../package.json', '/vendor/%2e%2e/package.json', '/vendor/'].map((p) => get(p).then((r) => r.status)));
  check('server: /vendor/ serves only its bundles', vendorOther.every((st) => st === 404), vendorOther.join(','));
  const wasm = await get('/retry-wasm/pkg/full/retry_wasm.wasm');
  if (wasm.status !== 404) check('server: .wasm served as application/wasm', wasm.headers.get('content-type') === 'application/wasm', wasm.headers.get('content-type'));

  // --- the page in chromium
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const tab = await context.newPage();
  tab.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console.error: ${msg.text()}`);
  });
  tab.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  tab.on('requestfailed', (req) => problems.push(`request failed: ${req.url()} ${req.failure()?.errorText ?? ''}`));
  tab.on('response', (res) => {
    if (res.status() >= 400) problems.push(`HTTP ${res.status()} for ${res.url()}`);
  });

  await tab.goto(server.url, { waitUntil: 'load' });
  const ready = await tab
    .waitForSelector('body[data-ready="true"]', { timeout: 20_000 })
    .then(() => true, () => false);
  check('page loads retry-wasm and becomes ready', ready, problems.join('; '));
  const engine = await tab.textContent('[data-testid="engine"]');
  check(`engine badge (${engine.trim()})`, /WebAssembly/.test(engine), engine);

  // The thundering-herd view: two histograms, and jitter lowers the peak.
  const bars = await tab.evaluate(() => ({
    plain: document.querySelectorAll('[data-testid="histogram-plain"] rect.bar').length,
    jitter: document.querySelectorAll('[data-testid="histogram-jitter"] rect.bar').length,
  }));
  check('herd: histogram without jitter is drawn', bars.plain > 0, JSON.stringify(bars));
  check('herd: histogram with jitter is drawn, with more distinct bars', bars.jitter > bars.plain, JSON.stringify(bars));
  const peaks = await tab.$$eval('.herd-charts .peak', (els) => els.map((e) => Number(e.textContent.match(/peak ([\d,]+)/)[1].replace(/,/g, ''))));
  check('herd: jitter lowers the peak request rate', peaks.length === 2 && peaks[1] < peaks[0], JSON.stringify(peaks));
  const herdNote = await tab.textContent('[data-testid="herd-note"]');
  check('herd: computed by the library in a worker', /computed by retry-wasm itself/.test(herdNote), herdNote);

  // Abort: a run whose attempt hangs, aborted from the page.
  await setValue(tab, '#failureRate', '0');
  await setValue(tab, '#hang', '1');
  await tab.click('[data-testid="run"]');
  await tab.waitForSelector('[data-testid="timeline"] li.tl-row', { timeout: 10_000 });
  await tab.waitForFunction(() => document.querySelector('[data-testid="state"] [data-field="isExecuting"]')?.textContent === 'true', null, { timeout: 5_000 });
  await tab.click('[data-testid="abort"]');
  const aborted = await tab
    .waitForFunction(() => /aborted/.test(document.querySelector('[data-testid="run-status"]')?.textContent ?? ''), null, { timeout: 5_000 })
    .then(() => true, () => false);
  check('abort button aborts the flow', aborted, await tab.textContent('[data-testid="run-status"]'));
  const abortedRow = await tab.textContent('[data-testid="timeline"] li.tl-row');
  check('aborted attempt row says so', /attempt 1 — aborted/.test(abortedRow), abortedRow);
  const idle = await tab.textContent('[data-field="isExecuting"]');
  check('state panel: isExecuting false after abort', idle === 'false', idle);

  // A full run with seed 55, which replays fail, fail, hang, ok (with
  // these rates and the page's maxAttempts 5, maxExecutionTime 1000 ms).
  await setValue(tab, '#hang', '0.1');
  await setValue(tab, '#failureRate', '0.6');
  const seedField = await tab.isEnabled('#seed');
  check('the seed field is enabled (the build takes `seed`)', seedField);
  if (seedField) await tab.fill('#seed', '55');
  const countBefore = Number(await tab.textContent('[data-field="executionCount"]'));
  // The status line is redrawn on the next animation frame: until then it
  // still shows the aborted run as done, so wait for this run by its number.
  const runNumber = () => Number(/run #(\d+)/.exec(document.querySelector('[data-testid="run-status"]')?.textContent ?? '')?.[1] ?? 0);
  const before = await tab.evaluate(runNumber);
  await tab.click('[data-testid="run"]');
  const rows = await tab
    .waitForFunction(() => [...document.querySelectorAll('[data-testid="timeline"] li.tl-row')].some((li) => /attempt \d+/.test(li.textContent)), null, { timeout: 10_000 })
    .then(() => true, () => false);
  check('timeline shows rows "attempt N ..."', rows);
  // True once a run numbered above `n` is done; false after 30 s.
  const doneAfter = (n) =>
    tab
      .waitForFunction((n) => {
        const status = document.querySelector('[data-testid="run-status"]');
        return status?.dataset.state === 'done' && Number(/run #(\d+)/.exec(status.textContent)?.[1] ?? 0) > n;
      }, n, { timeout: 30_000 })
      .then(() => true, () => false);
  const finished = await doneAfter(before);
  check('the run finishes', finished, await tab.textContent('[data-testid="run-status"]'));
  const rowTexts = await tab.$$eval('[data-testid="timeline"] li.tl-row', (els) => els.map((e) => e.textContent));
  check('every row reads "attempt N — ..."', rowTexts.length > 0 && rowTexts.every((t, i) => t.startsWith(`attempt ${i + 1} — `)), JSON.stringify(rowTexts));
  const seeded = [/^attempt 1 — failed after /, /^attempt 2 — failed after /, /^attempt 3 — timed out after .*\(maxExecutionTime\)/, /^attempt 4 — succeeded after /];
  check('seed 55: the rows are fail, fail, hang (timed out), ok', rowTexts.length === 4 && seeded.every((re, i) => re.test(rowTexts[i])), JSON.stringify(rowTexts));
  check('each retried attempt shows its wait', rowTexts.length === 4 && rowTexts.slice(0, 3).every((t) => /wait/.test(t)), JSON.stringify(rowTexts));
  const chart = await tab.evaluate(() => {
    const svg = document.querySelector('[data-testid="timeline"] svg');
    if (!svg) return null;
    const box = svg.getBoundingClientRect();
    return {
      width: box.width,
      height: box.height,
      bars: svg.querySelectorAll('rect[class^="fill-"]').length,
    };
  });
  check('timeline SVG chart has attempt bars', chart && chart.width > 300 && chart.height > 40 && chart.bars >= rowTexts.length, JSON.stringify(chart));
  const state = await tab.$$eval('[data-testid="state"] dt', (els) => els.map((e) => e.textContent));
  const FIELDS = ['status', 'currentAttempt', 'isExecuting', 'executionCount', 'lastError', 'lastResult', 'lastExecutionTime', 'totalExecutionTime'];
  check('state panel shows the eight state fields', FIELDS.every((f) => state.includes(f)) && state.length === 8, JSON.stringify(state));
  const status = await tab.textContent('[data-field="status"]');
  check('state panel: status is idle after the run', status.trim() === 'idle', status);
  const runStatus = await tab.textContent('[data-testid="run-status"]');
  check('seed 55: the run succeeded on attempt 4', /succeeded on attempt 4 /.test(runStatus), runStatus);
  const count = await tab.textContent('[data-field="executionCount"]');
  check('state panel: executionCount counted the success', Number(count) === countBefore + 1, `${countBefore} before, ${count} after`);

  // The same seed again: the run replays the same four rows, and the new
  // retryer starts from the state the last one left (initialState), so the
  // count grows from there. The page's earlier runs were aborted and count
  // nothing, so only a second success shows that the count is carried.
  const beforeAgain = await tab.evaluate(runNumber);
  await tab.click('[data-testid="run"]');
  const again = await doneAfter(beforeAgain);
  const againRows = await tab.$$eval('[data-testid="timeline"] li.tl-row', (els) => els.map((e) => e.textContent));
  check('seed 55 again: the run finishes with the same four rows', again && againRows.length === 4 && seeded.every((re, i) => re.test(againRows[i])), JSON.stringify(againRows));
  const countAgain = await tab.textContent('[data-field="executionCount"]');
  check('state panel: executionCount carries over to the next run', Number(countAgain) === countBefore + 2, `${countBefore} before the first, ${countAgain} after the second`);

  // The layers panel: an app retryer over an SDK retryer over one backend,
  // run with innerRetries on (left) and off on the app's retryer (right).
  const layers = await tab.evaluate(() => {
    const box = document.querySelector('[data-testid="layers"]');
    if (!box) return null;
    const rect = (sel) => box.querySelector(sel)?.getBoundingClientRect().toJSON();
    return {
      visible: box.getBoundingClientRect().height > 100,
      left: document.querySelector('[data-testid="layers-left"] figcaption')?.textContent,
      right: document.querySelector('[data-testid="layers-right"] figcaption')?.textContent,
      hint: box.querySelector('.hint')?.textContent ?? '',
      run: !document.querySelector('[data-testid="layers-run"]')?.disabled,
      boxes: [rect('[data-testid="layers-left"]'), rect('[data-testid="layers-right"]')],
    };
  });
  check('layers: panel renders with both sides', layers?.visible && /innerRetries: true/.test(layers.left) && /innerRetries: false/.test(layers.right), JSON.stringify(layers));
  check('layers: the two sides sit side by side', layers && layers.boxes[0] && layers.boxes[1] && layers.boxes[0].right <= layers.boxes[1].left && Math.abs(layers.boxes[0].top - layers.boxes[1].top) < 1, JSON.stringify(layers?.boxes));
  check('layers: the panel says browsers only cover what runs before the first await', /before (any|its first) await/.test(layers?.hint ?? ''), layers?.hint);
  check('layers: Run both is enabled', layers?.run);
  const layersRun = async () => {
    const prev = await tab.$eval('[data-testid="layers"]', (el) => Number(el.dataset.run ?? 0));
    await tab.click('[data-testid="layers-run"]');
    const done = await tab
      .waitForFunction((n) => {
        const box = document.querySelector('[data-testid="layers"]');
        return Number(box.dataset.run ?? 0) > n && [...box.querySelectorAll('.layer-side')].every((f) => f.dataset.state === 'done') && !document.querySelector('[data-testid="layers-run"]').disabled;
      }, prev, { timeout: 30_000 })
      .then(() => true, () => false);
    return {
      done,
      ...(await tab.evaluate(() => {
        const side = (k) => ({
          calls: Number(document.querySelector(`[data-testid="layers-calls-${k}"]`).textContent),
          outer: document.querySelectorAll(`[data-testid="layers-rows-${k}"] > li.ly-outer`).length,
          inner: document.querySelectorAll(`[data-testid="layers-rows-${k}"] li.ly-inner`).length,
          innerGiveUps: [...document.querySelectorAll(`[data-testid="layers-rows-${k}"] li.ly-outer li.ly-giveup`)].map((li) => li.dataset.reason),
          innerText: [...document.querySelectorAll(`[data-testid="layers-rows-${k}"] li.ly-outer li.ly-giveup`)].map((li) => li.textContent).join(' | '),
          appGiveUp: document.querySelector(`[data-testid="layers-rows-${k}"] > li.ly-giveup.final`)?.dataset.reason ?? null,
          outcome: document.querySelector(`[data-testid="layers-outcome-${k}"]`).textContent,
        });
        return { left: side('left'), right: side('right'), note: document.querySelector('[data-testid="layers-note"]').textContent };
      })),
    };
  };
  // A backend that never fails: one call on each side.
  await setValue(tab, '#lyFail', '0');
  const healthy = await layersRun();
  check('layers: a healthy backend gets one call on each side', healthy.done && healthy.left.calls === 1 && healthy.right.calls === 1 && /resolved/.test(healthy.left.outcome) && /resolved/.test(healthy.right.outcome), JSON.stringify(healthy));
  // An always-failing backend, 3 × 3: 9 calls on the left, 3 on the right.
  await setValue(tab, '#lyFail', '1');
  await tab.fill('#lyInnerAttempts', '3');
  await tab.fill('#lyOuterAttempts', '3');
  const down = await layersRun();
  check('layers: the always-failing run finishes on both sides', down.done, JSON.stringify(down));
  check('layers: innerRetries on, the backend gets 3 × 3 = 9 calls', down.left.calls === 9 && down.left.outer === 3 && down.left.inner === 9, JSON.stringify(down.left));
  check('layers: innerRetries false on the app, the backend gets 3 calls', down.right.calls === 3 && down.right.outer === 3 && down.right.inner === 3, JSON.stringify(down.right));
  check("layers: the SDK gives up with 'nested' on the right, every time", down.right.innerGiveUps.length === 3 && down.right.innerGiveUps.every((r) => r === 'nested') && /onGiveUp\('nested'\)/.test(down.right.innerText), JSON.stringify(down.right.innerGiveUps));
  check("layers: the SDK's own retries run out on the left (attempts-exhausted, never 'nested')", down.left.innerGiveUps.length === 3 && down.left.innerGiveUps.every((r) => r === 'attempts-exhausted'), JSON.stringify(down.left.innerGiveUps));
  check('layers: the app gives up on both sides and execute() rejects', down.left.appGiveUp === 'attempts-exhausted' && down.right.appGiveUp === 'attempts-exhausted' && /rejected/.test(down.left.outcome) && /rejected/.test(down.right.outcome), JSON.stringify([down.left.outcome, down.right.outcome]));
  check('layers: the note compares 9 and 3 requests', /9 requests/.test(down.note) && /3 requests/.test(down.note), down.note);
  const spill = await tab.evaluate(() =>
    [...document.querySelectorAll('[data-testid="layers"] .layer-side, [data-testid="layers"] .layer-side *, [data-testid="layers"] .layers-controls')]
      .filter((el) => !(el instanceof SVGElement) || el.tagName === 'svg')
      .filter((el) => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible' || (el.getBoundingClientRect().right > el.closest('.layer-side, .layers-controls').getBoundingClientRect().right + 1))
      .map((el) => `${el.tagName.toLowerCase()}.${el.getAttribute('class') ?? ''}`),
  );
  check('layers: nothing in the panel overflows its column', spill.length === 0, JSON.stringify(spill));

  // The spans panel: one retried call under a real OpenTelemetry tracer
  // provider (sdk-trace-base, in-memory exporter) through retry-wasm/otel.
  const spansReady = await tab
    .waitForSelector('[data-testid="spans"][data-ready="true"]', { timeout: 20_000 })
    .then(() => true, () => false);
  check('spans: OpenTelemetry and retry-wasm/otel load in the page, Run traced is enabled', spansReady && (await tab.isEnabled('[data-testid="spans-run"]')), await tab.textContent('[data-testid="spans-note"]'));
  const spansRun = async ({ fails, attempts }) => {
    await tab.fill('#spFails', String(fails));
    await tab.fill('#spAttempts', String(attempts));
    await tab.fill('#spWait', '40');
    await tab.fill('#spLatency', '30');
    const prev = await tab.$eval('[data-testid="spans"]', (el) => Number(el.dataset.run ?? 0));
    await tab.click('[data-testid="spans-run"]');
    const done = await tab
      .waitForFunction((n) => {
        const box = document.querySelector('[data-testid="spans"]');
        return Number(box.dataset.run ?? 0) > n && box.dataset.state === 'done';
      }, prev, { timeout: 20_000 })
      .then(() => true, () => false);
    return {
      done,
      ...(await tab.evaluate(() => {
        const rows = [...document.querySelectorAll('[data-testid="spans-rows"] > li')].map((li) => ({
          kind: li.dataset.kind,
          name: li.dataset.name,
          id: li.dataset.spanId ?? null,
          parent: li.dataset.parentId || null,
          status: li.dataset.status ?? null,
          attributes: li.dataset.attributes ? JSON.parse(li.dataset.attributes) : null,
          events: li.dataset.events ? JSON.parse(li.dataset.events) : null,
          ms: li.dataset.durationMs ? Number(li.dataset.durationMs) : null,
          bar: li.querySelector('.sp-bar')?.getBoundingClientRect().width ?? 0,
          text: li.textContent,
        }));
        return { rows, note: document.querySelector('[data-testid="spans-note"]').textContent };
      })),
    };
  };
  const traced = await spansRun({ fails: 2, attempts: 3 });
  const spans = traced.rows.filter((r) => r.kind !== 'event');
  const flowSpans = spans.filter((r) => r.kind === 'flow');
  const flowSpan = flowSpans[0];
  const attemptSpans = spans.filter((r) => r.kind === 'attempt');
  const caller = spans.find((r) => r.kind === 'caller');
  const brief = (rows) => JSON.stringify(rows.map(({ kind, name, status, parent, attributes }) => ({ kind, name, status, parent, attributes })));
  check('spans: the traced run finishes and its spans are rendered', traced.done && spans.length > 0 && spans.every((r) => r.bar > 0), traced.note);
  check("spans: one flow span, 'retry load-orders', a child of the caller's span", flowSpans.length === 1 && flowSpan.name === 'retry load-orders' && caller && flowSpan.parent === caller.id, brief(flowSpans));
  check('spans: three attempt spans, retry attempt 1..3, children of the flow span with retry.attempt = n', attemptSpans.length === 3 && attemptSpans.every((a, i) => a.name === `retry attempt ${i + 1}` && a.parent === flowSpan?.id && a.attributes['retry.attempt'] === i + 1 && a.attributes['retry.hedged'] === false), brief(attemptSpans));
  check('spans: the two failed attempts have ERROR status, error.type 503 and an exception event; the third does not', attemptSpans.length === 3 && attemptSpans.slice(0, 2).every((a) => a.status === 'ERROR' && a.attributes['error.type'] === '503' && a.events.includes('exception') && /HTTP 503 Service Unavailable/.test(a.text)) && attemptSpans[2].status !== 'ERROR' && !('error.type' in attemptSpans[2].attributes), brief(attemptSpans));
  check('spans: the flow span has retry.attempts=3, no retry.reason, no error, and a retry.backoff event per wait', flowSpan && flowSpan.attributes['retry.attempts'] === 3 && !('retry.reason' in flowSpan.attributes) && flowSpan.status !== 'ERROR' && flowSpan.events.filter((e) => e === 'retry.backoff').length === 2, brief(flowSpans));
  const requestParents = spans.filter((r) => r.kind === 'request').map((r) => r.parent);
  check("spans: each attempt's own GET, started before its first await, is that attempt's child", requestParents.length === 3 && attemptSpans.every((a) => requestParents.filter((p) => p === a.id).length === 1), JSON.stringify(requestParents));
  check('spans: durations shown, and the flow lasts at least its attempts', flowSpan && attemptSpans.every((a) => a.ms > 0) && flowSpan.ms >= attemptSpans.reduce((t, a) => t + a.ms, 0), JSON.stringify(spans.map((r) => [r.name, r.ms])));
  check('spans: the note counts one flow span and three attempt spans, two of them ERROR', /1 flow span/.test(traced.note) && /3 attempt spans \(2 ERROR\)/.test(traced.note) && /resolved/.test(traced.note), traced.note);
  const exhausted = await spansRun({ fails: 3, attempts: 3 });
  const exFlow = exhausted.rows.filter((r) => r.kind === 'flow');
  const exAttempts = exhausted.rows.filter((r) => r.kind === 'attempt');
  check("spans: a call that gives up: the flow span is ERROR with retry.reason 'attempts-exhausted', its three attempts ERROR", exhausted.done && exFlow.length === 1 && exFlow[0].status === 'ERROR' && exFlow[0].attributes['retry.reason'] === 'attempts-exhausted' && exFlow[0].attributes['retry.attempts'] === 3 && exAttempts.length === 3 && exAttempts.every((a) => a.status === 'ERROR') && /rejected/.test(exhausted.note), brief([...exFlow, ...exAttempts]));

  // The hedge panel: two retryFetch functions against the page's simulated
  // backend with a slow tail (a short run: 100 calls each, every 20th
  // request 300 ms): both distributions drawn, hedged calls on the timeline.
  const hedgeBox = await tab.evaluate(() => {
    const box = document.querySelector('[data-testid="hedge"]');
    const r = box?.getBoundingClientRect();
    return { visible: !!r && r.width > 0 && r.height > 0, ready: box?.dataset.ready === 'true', run: !document.querySelector('[data-testid="hedge-run"]')?.disabled, code: document.getElementById('hg-code')?.textContent };
  });
  check('hedge: panel renders, its Run button enabled', hedgeBox.visible && hedgeBox.ready && hedgeBox.run && /hedge: 40/.test(hedgeBox.code ?? ''), JSON.stringify(hedgeBox));
  await setValue(tab, '#hgRequests', '100');
  await setValue(tab, '#hgSlow', '300');
  await tab.click('[data-testid="hedge-run"]');
  const hedgeDone = await tab
    .waitForFunction(() => document.querySelector('[data-testid="hedge"]').dataset.state === 'done', null, { timeout: 30_000 })
    .then(() => true, () => false);
  const hedgeView = await tab.evaluate(() => {
    const stats = (k) => ({ ...document.querySelector(`[data-testid="hedge-stats-${k}"]`).dataset });
    return {
      state: document.querySelector('[data-testid="hedge"]').dataset.state,
      bars: { plain: document.querySelectorAll('#hg-hist-plain rect.bar').length, hedged: document.querySelectorAll('#hg-hist-hedged rect.bar').length },
      labels: [...document.querySelectorAll('#hg-hist-plain .pct-label, #hg-hist-hedged .pct-label')].map((t) => t.textContent),
      plain: stats('plain'),
      hedged: stats('hedged'),
      rows: [...document.querySelectorAll('[data-testid="hedge-timeline"] g.hg-row')].map((g) => [...g.querySelectorAll('rect')].map((r) => r.dataset.outcome)),
      note: document.querySelector('[data-testid="hedge-note"]').textContent,
    };
  });
  check('hedge: the run finishes and both distributions are drawn', hedgeDone && hedgeView.bars.plain > 0 && hedgeView.bars.hedged > 0 && hedgeView.labels.includes('p99'), JSON.stringify(hedgeView));
  check(`hedge: p99 ${hedgeView.plain.p99} ms without, ${hedgeView.hedged.p99} ms with hedge (under 100)`, Number(hedgeView.plain.p99) >= 250 && Number(hedgeView.hedged.p99) < 100, JSON.stringify(hedgeView));
  check(`hedge: ${hedgeView.plain.perCall} and ${hedgeView.hedged.perCall} requests per call (at most 1.10 with hedge)`, Number(hedgeView.plain.perCall) === 1 && Number(hedgeView.hedged.perCall) > 1 && Number(hedgeView.hedged.perCall) <= 1.1, JSON.stringify(hedgeView));
  check('hedge: the timeline shows hedged calls, each with a loser aborted and one winner', hedgeView.rows.length >= 1 && hedgeView.rows.every((r) => r.length >= 2 && r.filter((o) => o === 'won').length === 1 && r.includes('aborted')), JSON.stringify(hedgeView.rows));
  check('hedge: the note sums it up', /p99/.test(hedgeView.note) && /onHedge call/.test(hedgeView.note), hedgeView.note);

  // The breaker panel: calls through a retryFetch with a CircuitBreaker to
  // the page's simulated backend, which fails from 300 to 1300 ms, beside
  // the same calls without a breaker; a short run (a call every 20 ms for
  // 2.5 s, a 250 ms break).
  const breakerBox = await tab.evaluate(() => {
    const box = document.querySelector('[data-testid="breaker"]');
    const r = box?.getBoundingClientRect();
    return { visible: !!r && r.width > 0 && r.height > 0, ready: box?.dataset.ready === 'true', run: !document.querySelector('[data-testid="breaker-run"]')?.disabled, code: document.getElementById('bk-code')?.textContent };
  });
  check('breaker: panel renders, its Run button enabled', breakerBox.visible && breakerBox.ready && breakerBox.run && /new CircuitBreaker\(/.test(breakerBox.code ?? ''), JSON.stringify(breakerBox));
  await setValue(tab, '#bkEvery', '20');
  await setValue(tab, '#bkLength', '2500');
  await setValue(tab, '#bkDownAt', '300');
  await setValue(tab, '#bkDownFor', '1000');
  await setValue(tab, '#bkBreak', '250');
  await tab.click('[data-testid="breaker-run"]');
  const breakerDone = await tab
    .waitForFunction(() => document.querySelector('[data-testid="breaker"]').dataset.state === 'done', null, { timeout: 30_000 })
    .then(() => true, () => false);
  const breakerView = await tab.evaluate(() => {
    const box = document.querySelector('[data-testid="breaker"]');
    const rects = [...box.querySelectorAll('[data-testid="breaker-chart"] rect[data-state]')].filter((r) => r.getBoundingClientRect().width > 0);
    return {
      state: box.dataset.state,
      drawn: [...new Set(rects.map((r) => r.dataset.state))],
      health: [...new Set([...box.querySelectorAll('[data-testid="breaker-chart"] rect[data-health]')].map((r) => r.dataset.health))],
      sentBars: box.querySelectorAll('[data-testid="breaker-chart"] rect.sent').length,
      refusedBars: box.querySelectorAll('[data-testid="breaker-chart"] rect.refused').length,
      stats: { ...document.querySelector('[data-testid="breaker-stats"]').dataset },
      changes: [...document.querySelectorAll('[data-testid="breaker-changes"] li')].map((li) => `${li.dataset.reason}>${li.dataset.to}`),
      note: document.querySelector('[data-testid="breaker-note"]').textContent,
    };
  });
  check('breaker: the run finishes and draws the backend going down and up', breakerDone && breakerView.health.includes('down') && breakerView.health.includes('up'), JSON.stringify(breakerView));
  check(`breaker: the circuit strip shows it closed and open (${breakerView.drawn.join(', ')})`, breakerView.drawn.includes('closed') && breakerView.drawn.includes('open'), JSON.stringify(breakerView));
  check(
    `breaker: ${breakerView.stats.refused} attempts refused, ${breakerView.stats.sent} sent (${breakerView.stats.plainSent} without a breaker)`,
    Number(breakerView.stats.refused) > 0 && breakerView.refusedBars > 0 && breakerView.sentBars > 0 && Number(breakerView.stats.sent) < Number(breakerView.stats.plainSent),
    JSON.stringify(breakerView),
  );
  check(
    'breaker: the circuit tripped, and a probe closed it again after the backend recovered',
    breakerView.changes[0] === 'tripped>open' && breakerView.changes.at(-1) === 'probe-succeeded>closed' && breakerView.stats.closedAfter !== '' && Number(breakerView.stats.closedAfter) >= 0,
    JSON.stringify(breakerView.changes),
  );
  check('breaker: the note sums it up', /refused/.test(breakerView.note) && /closed the circuit/.test(breakerView.note), breakerView.note);

  // Layout at 1280x900: nothing wider than the viewport.
  const overflow = await tab.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  check('no horizontal overflow at 1280x900', overflow <= 0, `${overflow}px`);

  await tab.waitForTimeout(800); // let the state panel's change highlight fade
  mkdirSync(ARTIFACTS, { recursive: true });
  await tab.screenshot({ path: SCREENSHOT, fullPage: true });
  check(`screenshot saved to ${SCREENSHOT}`, existsSync(SCREENSHOT));

  check('no console errors, page errors or failed requests', problems.length === 0, problems.join('; '));

  // Content-Security-Policy: the engine is compiled from bytes, which a
  // policy allows with 'wasm-unsafe-eval' (the README says what to add).
  // A page of the same origin (served by the route below) imports the
  // browser entry with only an external module script, as `script-src
  // 'self'` requires, and reports what happened.
  for (const [policy, expect] of [
    ["script-src 'self' 'wasm-unsafe-eval'", /^ok 42$/],
    [
      "script-src 'self'",
      /^error Error: retry-wasm cannot load in .*: its WebAssembly module failed to instantiate \(the page's Content-Security-Policy must allow 'wasm-unsafe-eval' in script-src\): /,
    ],
  ]) {
    const cspTab = await context.newPage();
    await cspTab.route('**/csp/**', (route) => {
      const script = route.request().url().endsWith('.js');
      route.fulfill({
        status: 200,
        contentType: script ? 'text/javascript' : 'text/html',
        headers: script ? {} : { 'content-security-policy': policy },
        body: script
          ? `import('/retry-wasm/js/index.js')
               .then(({ AsyncRetryer }) => new AsyncRetryer(async () => 42).execute())
               .then((v) => 'ok ' + v, (e) => 'error ' + e.constructor.name + ': ' + e.message)
               .then((r) => { document.body.dataset.result = r; });`
          : '<!doctype html><title>csp</title><body><script type="module" src="/csp/probe.js"></script></body>',
      });
    });
    await cspTab.goto(new URL('/csp/page.html', server.url).href);
    const result = await cspTab
      .waitForSelector('body[data-result]', { state: 'attached', timeout: 10_000 })
      .then(() => cspTab.$eval('body', (b) => b.dataset.result), () => 'no result');
    check(`CSP ${policy}: ${expect.source.startsWith('^ok') ? 'loads and runs' : 'a clear load error'}`, expect.test(result), result);
    await cspTab.close();
  }
  await context.close();
} catch (err) {
  check('test ran to the end', false, err && err.stack);
} finally {
  await browser?.close().catch(() => {});
  await server.close();
}
finish();
