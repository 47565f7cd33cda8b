#!/usr/bin/env node
// Side-by-side benchmarks of retry-wasm against @tanstack/pacer, p-retry,
// cockatiel, exponential-backoff and async-retry, of retryFetch against
// ky and got (the http case), and of retryFetch's circuit breaker against
// cockatiel's (the breaker case). See bench/README.md.
//
//   node bench/run.mjs [--quick] [--cases=success,fail-once,trace,load,http,hedge,breaker,memory,import,size]
//                      [--rounds=N] [--sample-ms=N] [--flows=N] [--passes=N]
//                      [--load-runs=N] [--http-requests=N] [--http-runs=N]
//                      [--http-chunk=N] [--trace-rounds=N]
//                      [--hedge-requests=N] [--breaker-runs=N]
//                      [--libs=id,id,...] [--json-out=FILE] [--stub-clock]
//
// Prints tables of medians and ratios, then (last line) one JSON object with
// every figure. Exits 0 even when retry-wasm is not available (its column is
// skipped with a note); exits 1 if a library misbehaves (wrong result or
// wrong number of attempts).

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { baselineAdapters, peerAdapters, retryWasmAdapters } from './lib/adapters.mjs';
import { loadRetryWasm } from './lib/retry-wasm.mjs';
import { fmtInt, fmtNum, fmtRatio, spreadPct, summarize, table } from './lib/stats.mjs';
import { PER_CALL_CASES, runPerCallCase } from './cases/per-call.mjs';
import { LOAD_IDS, runLoadCase } from './cases/load.mjs';
import { MEMORY_IDS, runMemoryCase } from './cases/memory.mjs';
import { HTTP_IDS, HTTP_LABELS, HTTP_PEERS, runHttpCase } from './cases/http.mjs';
import { measureSizes, formatSizes } from './size.mjs';
import { runImportCase } from './cases/import.mjs';
import { TRACE_SETUPS, runTraceCase } from './cases/trace.mjs';
import { HEDGE_CONFIGS, TAIL, runHedgeCase } from './cases/hedge.mjs';
import { BREAKER_CONFIGS, OUTAGE, POLICY as BREAKER_POLICY, runBreakerCase } from './cases/breaker.mjs';
import { REPO_ROOT } from './lib/retry-wasm.mjs';

// gc() before every sample needs --expose-gc: re-run ourselves with it.
if (typeof globalThis.gc !== 'function') {
  const r = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}

const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name, dflt) => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3) : dflt;
};
const quick = flag('quick');
// A diagnostic, not the target's figure: Date.now() returns one constant for
// the whole run, so the success rows show what each library costs without
// the clock reads (retry-wasm makes two per call for its state; cockatiel
// none). Only the success case, whose flows arm no timer.
const stubClock = flag('stub-clock');
const config = {
  cases: opt('cases', stubClock ? 'success' : 'success,fail-once,trace,load,http,hedge,breaker,memory,import,size').split(',').map((s) => s.trim()),
  rounds: Number(opt('rounds', quick ? 6 : 30)),
  sampleMs: Number(opt('sample-ms', quick ? 10 : 20)),
  warmupMs: quick ? 60 : 200,
  flows: Number(opt('flows', quick ? 2000 : 10_000)),
  loadRuns: quick ? 2 : Number(opt('load-runs', 8)),
  passes: Number(opt('passes', quick ? 1 : 2)),
  httpRequests: Number(opt('http-requests', quick ? 300 : 1000)),
  httpRuns: Number(opt('http-runs', quick ? 2 : 8)),
  httpChunk: Number(opt('http-chunk', 100)),
  hedgeRequests: Number(opt('hedge-requests', quick ? 200 : 2000)),
  breakerRuns: Number(opt('breaker-runs', quick ? 1 : 5)),
  memoryExecutions: quick ? 100_000 : 1_000_000,
  memoryRetryers: quick ? 20_000 : 200_000,
  importRounds: Number(opt('import-rounds', quick ? 5 : 20)),
  traceRounds: Number(opt('trace-rounds', quick ? 2 : 6)),
};
const log = (s) => console.log(s);
// A library that leaks a rejected promise must not crash the run: count it,
// report it, and exit 1 at the end.
const unhandled = [];
process.on('unhandledRejection', (reason) => {
  unhandled.push(String((reason && reason.message) || reason));
  if (unhandled.length <= 3) log(`  ! unhandled rejection: ${unhandled[unhandled.length - 1]}`);
});
const realNow = Date.now;
const startedAt = realNow();
if (stubClock) {
  if (config.cases.some((c) => c !== 'success')) {
    console.error('--stub-clock runs the success case only (--cases=success)');
    process.exit(2);
  }
  config.stubClock = true;
  Date.now = () => startedAt;
}

// ---------------------------------------------------------------- setup
const cpu = os.cpus();
const machine = {
  node: process.version,
  v8: process.versions.v8,
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  cpus: cpu.length,
  availableParallelism: os.availableParallelism?.() ?? cpu.length,
  cpuModel: cpu[0]?.model?.trim() ?? 'unknown',
  memGiB: Math.round(os.totalmem() / 2 ** 30),
};
log(`retry-wasm bench — node ${machine.node}, ${machine.availableParallelism} cores (${machine.cpuModel}), ${machine.platform}`);

const rw = await loadRetryWasm();
const retryWasm = rw.mod ? { available: true, from: rw.from } : { available: false, error: rw.error };
if (rw.mod) log(`retry-wasm: imported from ${rw.from}`);
else {
  log(`NOTE: retry-wasm is not available, its columns are skipped.`);
  log(`      (${rw.error})`);
  log(`      Build and pack it first: npm run build (npm run bench does this), or install the tarball into .consumer/.`);
}
log(`config: ${JSON.stringify(config)}`);
if (stubClock) log('NOTE: --stub-clock: Date.now() returns one constant in this run; a diagnostic of the success path without clock reads, not the target\'s figure.');

// --libs=a,b restricts the libraries (ids: direct, retry-wasm, retry-wasm-retryer,
// cockatiel, async-retry, exponential-backoff, p-retry, pacer, pacer-retryer;
// for the http case: retry-wasm, ky, got, and the fetch-loop baseline, kept
// like direct).
const only = opt('libs', null)?.split(',').map((s) => s.trim());
const keep = (a) => !only || only.includes(a.id) || a.id === 'direct';
const peers = peerAdapters().filter(keep);
const rwAdapters = rw.mod ? retryWasmAdapters(rw.mod).filter(keep) : [];
const perCallAdapters = [...baselineAdapters(), ...rwAdapters, ...peers];
const labelOf = Object.fromEntries([...perCallAdapters].map((a) => [a.id, a.label]));
const peerIds = peers.map((a) => a.id);

const report = { bench: 'retry-wasm', date: new Date().toISOString(), machine, config, retryWasm, perCall: {}, trace: null, load: null, http: null, hedge: null, breaker: null, memory: null, import: null, size: null, ratios: {} };
let failed = false;

// ---------------------------------------------------------------- per-call cases
for (const caseId of Object.keys(PER_CALL_CASES)) {
  if (!config.cases.includes(caseId)) continue;
  log(`\n[${caseId}] ${PER_CALL_CASES[caseId].title}: warming up, then ${config.rounds} interleaved rounds...`);
  const t0 = performance.now();
  const { results, errors } = await runPerCallCase(caseId, perCallAdapters, { ...config, log });
  if (Object.keys(errors).length) failed = true;
  report.perCall[caseId] = { unit: 'ns/call', results, errors };
  log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

// ---------------------------------------------------------------- trace case
// retry-wasm only: its success path with and without subscribers on its
// tracing channels, one process per subscriber setup, the setups taking
// turns round by round.
if (config.cases.includes('trace')) {
  if (!rw.mod) log(`\n[trace] skipped: retry-wasm is not available`);
  else if (only && !only.includes('retry-wasm')) log(`\n[trace] skipped: --libs leaves out retry-wasm`);
  else {
    log(`\n[trace] cost of tracing on the success path (asyncRetry of async () => 42): one process per subscriber setup, ${config.traceRounds} rounds...`);
    const t0 = performance.now();
    const trace = await runTraceCase({
      rounds: config.traceRounds,
      samples: quick ? 5 : 10,
      sampleMs: config.sampleMs,
      warmupMs: quick ? 150 : 300,
      warmupCalls: quick ? 20_000 : 50_000,
      log,
    });
    // Without retry-wasm/otel or OpenTelemetry its two setups are skipped, not failed.
    if (Object.keys(trace.errors).length) failed = true;
    report.trace = { unit: 'ns/call', ...trace };
    log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}

// ---------------------------------------------------------------- load case
if (config.cases.includes('load')) {
  const ids = LOAD_IDS.filter((id) => (id !== 'retry-wasm' || rw.mod) && (!only || only.includes(id)));
  log(`\n[load] ${config.flows} concurrent flows, each fails twice then succeeds, 1 ms waits; one process per library, ${config.passes} pass(es)...`);
  const t0 = performance.now();
  const load = await runLoadCase({ ids, flows: config.flows, runs: config.loadRuns, passes: config.passes, log });
  if (Object.keys(load.errors).length) failed = true;
  report.load = load;
  log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

// ---------------------------------------------------------------- http case
if (config.cases.includes('http')) {
  const ids = HTTP_IDS.filter((id) => (id !== 'retry-wasm' || rw.mod) && (!only || only.includes(id) || id === 'fetch-loop'));
  log(`\n[http] ${config.httpRequests.toLocaleString('en-US')} sequential GETs per library to a local server failing every third request (503), 3 attempts, 1 ms waits; ` +
    `one client process, libraries interleaved in chunks of ${config.httpChunk}, ${config.httpRuns} runs...`);
  const t0 = performance.now();
  const httpCase = await runHttpCase({ ids, requests: config.httpRequests, chunk: config.httpChunk, runs: config.httpRuns, log });
  if (Object.keys(httpCase.errors).length) failed = true;
  report.http = httpCase;
  log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

// ---------------------------------------------------------------- hedge case
// retry-wasm only: retryFetch with and without `hedge` against a server with
// a slow tail, latency percentiles and requests sent per call.
if (config.cases.includes('hedge')) {
  if (!rw.mod) log(`\n[hedge] skipped: retry-wasm is not available`);
  else if (only && !only.includes('retry-wasm')) log(`\n[hedge] skipped: --libs leaves out retry-wasm`);
  else {
    log(`\n[hedge] ${config.hedgeRequests.toLocaleString('en-US')} sequential GETs through each of ${HEDGE_CONFIGS.map((c) => c.label).join(' and ')}, side by side, ` +
      `to a local server answering in ${TAIL.fastMs} ms, every ${TAIL.slowEvery}th request in ${TAIL.slowMs} ms...`);
    const t0 = performance.now();
    const hedge = await runHedgeCase({ requests: config.hedgeRequests, log });
    if (Object.keys(hedge.errors).length) failed = true;
    report.hedge = hedge;
    log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}

// ---------------------------------------------------------------- breaker case
// retry-wasm's retryFetch with a CircuitBreaker (alone, and with a
// RetryBudget) and cockatiel's circuit breaker inside its retry policy,
// against a backend that dies and recovers; retryFetch without a breaker
// as the reference.
if (config.cases.includes('breaker')) {
  if (!rw.mod) log(`\n[breaker] skipped: retry-wasm is not available`);
  else if (only && !only.includes('retry-wasm') && !only.includes('cockatiel')) log(`\n[breaker] skipped: --libs leaves out retry-wasm and cockatiel`);
  else {
    log(`\n[breaker] ${OUTAGE.calls} calls, one every ${OUTAGE.everyMs} ms, to a local backend that fails every request (503) from ${OUTAGE.downAtMs} to ${OUTAGE.upAtMs}-${OUTAGE.upAtMs + (OUTAGE.upShifts - 1) * OUTAGE.upShiftMs} ms (by run); ` +
      `${BREAKER_CONFIGS.length} configurations one after another, ${config.breakerRuns} runs...`);
    const t0 = performance.now();
    const breaker = await runBreakerCase({ runs: config.breakerRuns, log });
    if (Object.keys(breaker.errors).length) failed = true;
    report.breaker = breaker;
    log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}

// ---------------------------------------------------------------- memory retention
if (config.cases.includes('memory')) {
  const ids = MEMORY_IDS.filter((id) => (id !== 'retry-wasm' || rw.mod) && (!only || only.includes(id)));
  log(`\n[memory] ${config.memoryExecutions.toLocaleString('en-US')} executions on one retryer, ${config.memoryRetryers.toLocaleString('en-US')} short-lived retryers; one process per library...`);
  const memory = await runMemoryCase({ ids, executions: config.memoryExecutions, retryers: config.memoryRetryers, log });
  if (Object.keys(memory.errors).length) failed = true;
  report.memory = memory;
}

// ---------------------------------------------------------------- import cost
if (config.cases.includes('import') && rw.mod) {
  log(`\n[import] await import() as whole processes: a bare start, retry-wasm, @tanstack/pacer; ${config.importRounds} rounds...`);
  report.import = runImportCase({ cwd: rw.dir ?? REPO_ROOT, rounds: config.importRounds, log });
  if (Object.keys(report.import.errors).length) failed = true;
}

// ---------------------------------------------------------------- size
if (config.cases.includes('size')) {
  report.size = await measureSizes();
}

// ---------------------------------------------------------------- tables
// Paired ratio: median over rounds of a[round] / b[round]. Both were sampled
// in the same round, moments apart, so a burst of load from elsewhere on the
// machine hits both; this is the ratio reported.
function pairedRatio(a, b) {
  if (!a || !b || !a.samples || !b.samples) return null;
  const n = Math.min(a.samples.length, b.samples.length);
  const r = [];
  for (let i = 0; i < n; i++) r.push(a.samples[i] / b.samples[i]);
  return summarize(r).median;
}

// Median over runs of f(a[run], b[run]) (the http case's samples of one run
// are interleaved with each other).
function pairedStat(a, b, f) {
  if (!a || !b) return null;
  const n = Math.min(a.length, b.length);
  const r = [];
  for (let i = 0; i < n; i++) r.push(f(a[i], b[i]));
  return n ? summarize(r).median : null;
}

function fastestPeer(results, metric = (r) => r.median, filter = () => true) {
  let best = null;
  for (const id of peerIds) {
    const r = results[id];
    if (!r || !filter(r)) continue;
    if (!best || metric(r) < metric(results[best])) best = id;
  }
  return best;
}

const perCallCases = Object.keys(report.perCall);
if (perCallCases.length) {
  const headers = ['library'];
  const align = 'l';
  let al = align;
  for (const c of perCallCases) {
    headers.push(`${c} ns/call`, 'IQR', 'vs direct');
    al += 'rrr';
  }
  headers.push('notes');
  al += 'l';
  const rows = [];
  for (const a of perCallAdapters) {
    const row = [a.label];
    const notes = [];
    for (const c of perCallCases) {
      const { results, errors } = report.perCall[c];
      const r = results[a.id];
      const direct = results.direct;
      if (r) {
        row.push(fmtInt(r.median) + (r.timerBound ? ' †' : ''), `${fmtNum(spreadPct(r), 0)}%`, direct ? fmtRatio(pairedRatio(r, direct)) : '—');
      } else {
        row.push('—', '', '');
        if (errors[a.id]) notes.push(`${c}: ${errors[a.id]}`);
      }
    }
    row.push(notes.join('; '));
    rows.push(row);
  }
  if (!rw.mod) rows.splice(1, 0, ['retry-wasm (not available)', ...perCallCases.flatMap(() => ['—', '', '']), 'skipped']);
  log(`\nPer-call cases: median of ${config.rounds} interleaved rounds (IQR = (p75 - p25) / median)`);
  log(table(headers, rows, al));
  if (report.perCall['fail-once']) {
    log(`† arms a timer even for a 0 ms wait (Node clamps it to >= 1 ms): the figure measures that timer,\n  not the library, and is left out of the fastest-peer ratio.`);
  }
}

if (report.trace) {
  const { results, ratios: tr, errors, skipped, rounds } = report.trace;
  const rows = Object.entries(TRACE_SETUPS).map(([id, label]) => {
    const r = results[id];
    if (!r) return [label, '—', '', '', '', '', (errors[id] ?? (skipped[id] ? `skipped: ${skipped[id]}` : '')).split('\n')[0].slice(0, 100)];
    const q = tr[id];
    return [label, fmtInt(r.median), `${fmtNum(spreadPct(r), 0)}%`, q ? fmtRatio(q.vsOff) : '—', q ? `${fmtRatio(q.vsOffP25)}-${fmtRatio(q.vsOffP75)}` : '', q ? fmtInt(q.overNs) : '—', ''];
  });
  log(`\nTrace: retry-wasm asyncRetry, success path, ns per call; one process per setup, medians of ${rounds} rounds; vs no subscriber and over it: paired by round (median, p25-p75)`);
  log(table(['setup', 'ns/call', 'IQR', 'vs no subscriber', 'p25-p75', 'over, ns', 'notes'], rows, 'lrrrrrl'));
  log(`channels: no-op handlers on tracingChannel('retry-wasm:execute'), tracingChannel('retry-wasm:attempt') and channel('retry-wasm:backoff');\n` +
    `SDK tracer: BasicTracerProvider (spans recorded, counted, not exported); no context manager, no meter provider.`);
}

if (report.load) {
  const { results, errors, flows } = report.load;
  const rows = [];
  for (const id of LOAD_IDS) {
    if (only && !only.includes(id)) continue;
    const r = results[id];
    const label = id === 'retry-wasm' ? 'retry-wasm AsyncRetryer per flow' : id === 'pacer' ? '@tanstack/pacer AsyncRetryer per flow' : id;
    if (!r) {
      rows.push([label, '—', '', '', '', '—', '—', errors[id] ? errors[id].split('\n')[0].slice(0, 80) : id === 'retry-wasm' && !rw.mod ? 'not available' : '']);
      continue;
    }
    rows.push([label, fmtInt(r.wallMs.median), `${fmtNum(spreadPct(r.wallMs), 0)}%`, fmtInt(r.wallMs.min), fmtInt(r.wallMs.max), fmtInt(r.heapStart.median), fmtInt(r.heapWaiting.median), '']);
  }
  log(`\nLoad: ${flows.toLocaleString('en-US')} concurrent flows (fail, fail, succeed; 1 ms waits); one process per library; medians`);
  log(table(['library', 'wall ms', 'IQR', 'min', 'max', 'heap B/flow (started)', 'heap B/flow (waiting)', 'notes'], rows, 'lrrrrrrl'));
  log(`heap = (heapUsed + external) after starting all flows, minus the baseline, after gc(); external includes wasm memory.`);
}

if (report.http) {
  const { results, errors, requests } = report.http;
  const base = results['fetch-loop'];
  const rows = [];
  for (const id of HTTP_IDS) {
    if (only && !only.includes(id) && id !== 'fetch-loop') continue;
    const r = results[id];
    if (!r) {
      rows.push([HTTP_LABELS[id], '—', '', '', '', '—', '', '', errors[id] ? errors[id].split('\n')[0].slice(0, 100) : id === 'retry-wasm' && !rw.mod ? 'not available' : '']);
      continue;
    }
    const sr = r.serverRequests;
    const isBase = id === 'fetch-loop';
    // Paired: per run, this library's wall minus the baseline's from the same run.
    const over = base && !isBase ? `${fmtNum((pairedStat(report.http.samples[id].wallMs, report.http.samples['fetch-loop'].wallMs, (a, b) => a - b) / requests) * 1000, 0)} µs` : '';
    const vsBase = base && !isBase ? fmtRatio(pairedStat(report.http.samples[id].wallMs, report.http.samples['fetch-loop'].wallMs, (a, b) => a / b)) : '';
    rows.push([HTTP_LABELS[id], fmtInt(r.wallMs.median), `${fmtNum(spreadPct(r.wallMs), 0)}%`, fmtInt(r.wallMs.min), fmtInt(r.wallMs.max),
      sr.min === sr.max ? fmtInt(sr.min) : `${fmtInt(sr.min)}-${fmtInt(sr.max)}`, vsBase, over, '']);
  }
  log(`\nHTTP: ${requests.toLocaleString('en-US')} sequential GETs per library, the server failing every third request with a 503; 3 attempts, 1 ms waits; ` +
    `libraries interleaved in chunks of ${report.http.chunk}; medians of ${report.http.runs} runs (vs baseline: paired, median over runs)`);
  log(table(['library', 'wall ms', 'IQR', 'min', 'max', 'requests received', 'vs baseline', 'over baseline per GET', 'notes'], rows, 'lrrrrrrrl'));
  log(`each library with figures ended every run with ${requests.toLocaleString('en-US')} 200s read by the caller; "requests received" counts what the server got per run.`);
}

if (report.hedge) {
  const { results, errors, requests, tail } = report.hedge;
  const rows = [];
  for (const c of HEDGE_CONFIGS) {
    const r = results[c.id];
    if (!r) {
      rows.push([c.label, '—', '—', '—', '—', '—', '—', (errors[c.id] ?? errors['retry-wasm'] ?? '').split('\n')[0].slice(0, 100)]);
      continue;
    }
    const l = r.latency;
    rows.push([c.label, fmtNum(l.p50), fmtNum(l.p90), fmtNum(l.p99), fmtNum(l.p999), fmtNum(l.max), fmtNum(r.requestsPerCall, 3),
      `${fmtInt(r.serverRequests)} requests, ${fmtInt(r.hedges)} hedges, ${fmtInt(r.closedEarly)} closed early${errors[c.id] ? `; ${errors[c.id]}` : ''}`]);
  }
  log(`\nHedge: ${requests.toLocaleString('en-US')} sequential GETs through each function, side by side; the server answers in ${tail.fastMs} ms, ` +
    `every ${tail.slowEvery}th request in ${tail.slowMs} ms; latency in ms from the call to the body read`);
  log(table(['retryFetch', 'p50', 'p90', 'p99', 'p99.9', 'max', 'requests/call', 'notes'], rows, 'lrrrrrrl'));
}

if (report.breaker) {
  const { results, errors, runs, skipped } = report.breaker;
  const range = (sum, digits = 0) => (sum && sum.n ? (sum.n > 1 && sum.min !== sum.max ? `${fmtNum(sum.median, digits)} (${fmtNum(sum.min, digits)}-${fmtNum(sum.max, digits)})` : fmtNum(sum.median, digits)) : '—');
  const rows = BREAKER_CONFIGS.map((c) => {
    const r = results[c.id];
    const note = (errors[c.id] ?? errors.breaker ?? (skipped ? `skipped: ${skipped}` : '')).split('\n')[0].slice(0, 100);
    if (!r) return [c.label, '—', '—', '—', '—', '—', '—', '—', note];
    return [c.label, range(r.requests), range(r.duringOutage), range(r.succeeded), range(r.failed), range(r.failedFast), range(r.recoverMs), range(r.opened), note];
  });
  log(`\nBreaker: ${OUTAGE.calls} calls (one every ${OUTAGE.everyMs} ms) per configuration and run; the backend fails every request from ${OUTAGE.downAtMs} ms to its recovery at ${OUTAGE.upAtMs} ms + ${OUTAGE.upShiftMs} ms × (run mod ${OUTAGE.upShifts}); ` +
    `${BREAKER_POLICY.attempts} attempts, exponential backoff from ${BREAKER_POLICY.baseWaitMs} ms, no jitter; circuits open at >= ${BREAKER_POLICY.failureRatio} of >= ${BREAKER_POLICY.minimumThroughput} calls in ${BREAKER_POLICY.samplingMs} ms, for ${BREAKER_POLICY.breakMs} ms; ` +
    `medians of ${runs} runs (min-max)`);
  log(table(['configuration', 'requests sent', 'to the dead backend', 'calls succeeded', 'calls failed', 'failed fast', 'recover ms', 'opened', 'notes'], rows, 'lrrrrrrrl'));
  log(`failed fast: the breaker refused the call's last attempt (CircuitOpenError, BrokenCircuitError), no request sent for it; recover ms: from the backend's recovery to the first call that succeeded after it.`);
}

if (report.memory) {
  const { results, errors, targetBytes } = report.memory;
  const rows = [];
  for (const id of MEMORY_IDS) {
    if (only && !only.includes(id)) continue;
    const r = results[id];
    const label = id === 'retry-wasm' ? 'retry-wasm' : `${id} (reference)`;
    if (!r) {
      rows.push([label, '—', '—', errors[id] ? errors[id].split('\n')[0].slice(0, 80) : id === 'retry-wasm' && !rw.mod ? 'not available' : '']);
      continue;
    }
    const within = (x) => (Math.abs(x) <= targetBytes ? 'within 2 MB' : 'OVER 2 MB');
    const red = (x) => (x.reduced ? ` (n=${x.n.toLocaleString('en-US')})` : '');
    rows.push([label, fmtInt(r.executions.deltaBytes) + red(r.executions), fmtInt(r.retryers.deltaBytes) + red(r.retryers),
      (id === 'retry-wasm' ? `${within(r.executions.deltaBytes)} / ${within(r.retryers.deltaBytes)}` : '') +
      (r.executions.reduced || r.retryers.reduced ? ' (fewer iterations: too slow)' : '')]);
  }
  log(`\nMemory retention: change in heapUsed + external (wasm memory included) after gc, bytes`);
  log(table(['library', `${report.memory.executions.toLocaleString('en-US')} executions`, `${report.memory.retryers.toLocaleString('en-US')} retryers`, 'target'], rows, 'lrrl'));
}

// ---------------------------------------------------------------- ratios
const ratioRows = [];
const ratios = report.ratios;
for (const c of perCallCases) {
  const { results } = report.perCall[c];
  const best = fastestPeer(results, (r) => r.median, (r) => !r.timerBound);
  ratios[c] = { fastestPeer: best, fastestPeerNs: best ? results[best].median : null, variants: {} };
  const floor = results['clock-floor'];
  if (floor && best) ratios[c].clockFloorVsFastestPeer = pairedRatio(floor, results[best]);
  const settle = results['settle-floor'];
  if (settle && best) ratios[c].settleFloorVsFastestPeer = pairedRatio(settle, results[best]);
  for (const a of rwAdapters) {
    const r = results[a.id];
    if (!r) continue;
    const pacer = results[a.vsPacer];
    const v = {
      ns: r.median,
      vsFastestPeer: best ? pairedRatio(r, results[best]) : null,
      vsFastestPeerOfMedians: best ? r.median / results[best].median : null,
      pacerSpeedup: pacer ? pairedRatio(pacer, r) : null,
      timerBound: r.timerBound,
    };
    ratios[c].variants[a.id] = v;
    ratioRows.push([c, a.label, fmtInt(r.median), best ? `${labelOf[best]} (${fmtInt(results[best].median)})` : '—', fmtRatio(v.vsFastestPeer), pacer ? `${labelOf[a.vsPacer]} (${fmtInt(pacer.median)})` : '—', fmtRatio(v.pacerSpeedup)]);
  }
}
if (report.load && report.load.results['retry-wasm']) {
  const { results } = report.load;
  const w = results['retry-wasm'];
  const out = {};
  for (const [metric, label] of [['wallMs', 'load wall ms'], ['heapStart', 'load heap B/flow started'], ['heapWaiting', 'load heap B/flow waiting']]) {
    const best = fastestPeer(results, (r) => r[metric].median);
    const pacer = results.pacer;
    out[metric] = {
      value: w[metric].median,
      bestPeer: best,
      vsBestPeer: best ? w[metric].median / results[best][metric].median : null,
      pacerRatio: pacer ? pacer[metric].median / w[metric].median : null,
    };
    ratioRows.push([label, 'retry-wasm', fmtInt(w[metric].median), best ? `${best} (${fmtInt(results[best][metric].median)})` : '—', fmtRatio(out[metric].vsBestPeer), pacer ? `@tanstack/pacer (${fmtInt(pacer[metric].median)})` : '—', fmtRatio(out[metric].pacerRatio)]);
  }
  ratios.load = out;
}
if (report.http && report.http.results['retry-wasm']) {
  const { results } = report.http;
  const w = results['retry-wasm'];
  let best = null;
  for (const id of HTTP_PEERS) if (results[id] && (!best || results[id].wallMs.median < results[best].wallMs.median)) best = id;
  const base = results['fetch-loop'];
  const S = report.http.samples;
  // Paired like the per-call cases: per run, retry-wasm's wall over the other
  // library's from the same run (interleaved chunk by chunk), then the median.
  const vs = {};
  for (const id of [...HTTP_PEERS, 'fetch-loop']) if (S[id]) vs[id] = pairedStat(S['retry-wasm'].wallMs, S[id].wallMs, (a, b) => a / b);
  ratios.http = {
    wallMs: w.wallMs.median,
    bestPeer: best,
    bestPeerWallMs: best ? results[best].wallMs.median : null,
    vsBestPeer: best ? vs[best] : null,
    vsBestPeerOfMedians: best ? w.wallMs.median / results[best].wallMs.median : null,
    vsPeers: Object.fromEntries(HTTP_PEERS.filter((id) => vs[id] != null).map((id) => [id, vs[id]])),
    vsBaseline: base ? vs['fetch-loop'] : null,
    requestsReceived: w.serverRequests.median,
  };
  ratioRows.push(['http wall ms', 'retry-wasm retryFetch', fmtInt(w.wallMs.median), best ? `${best} (${fmtInt(results[best].wallMs.median)})` : '—', fmtRatio(ratios.http.vsBestPeer), '—', '—']);
}
if (report.size?.retryWasm?.available) {
  const rs = report.size.retryWasm;
  const peerGz = Object.entries(report.size.peers).filter(([, p]) => !p.error);
  const best = peerGz.reduce((b, x) => (!b || x[1].total.gzip < b[1].total.gzip ? x : b), null);
  ratios.size = {
    gzip: rs.total.gzip,
    budget: report.size.budget,
    withinBudget: rs.total.gzip <= report.size.budget,
    goal: report.size.goal,
    withinGoal: report.size.goal ? rs.total.gzip <= report.size.goal : null,
    smallestPeer: best?.[0] ?? null,
    vsSmallestPeer: best ? rs.total.gzip / best[1].total.gzip : null,
  };
  ratioRows.push(['size gzip B', 'retry-wasm', fmtInt(rs.total.gzip), best ? `${best[1].label} (${fmtInt(best[1].total.gzip)})` : '—', fmtRatio(ratios.size.vsSmallestPeer), `ceiling ${report.size.budget}${report.size.goal ? ` / goal ${report.size.goal}` : ''}`,
    `${ratios.size.withinBudget ? 'within' : 'OVER'}${report.size.goal ? ` / ${ratios.size.withinGoal ? 'met' : 'not met'}` : ''}`]);
}

if (report.import?.ratio != null) {
  const im = report.import;
  log(`\nImport: await import() in a new Node process, wall ms from spawn to exit; medians of ${im.rounds} rounds (added = minus the bare start of the same round)`);
  log(table(['process', 'wall ms', 'min', 'max', 'added ms'], [
    ['bare (node:os)', fmtInt(im.results.bare.median), fmtInt(im.results.bare.min), fmtInt(im.results.bare.max), '—'],
    ['retry-wasm', fmtInt(im.results['retry-wasm'].median), fmtInt(im.results['retry-wasm'].min), fmtInt(im.results['retry-wasm'].max), fmtNum(im.added['retry-wasm'].median)],
    ['@tanstack/pacer', fmtInt(im.results.pacer.median), fmtInt(im.results.pacer.min), fmtInt(im.results.pacer.max), fmtNum(im.added.pacer.median)],
  ], 'lrrrr'));
  ratios.import = { addedMs: im.added['retry-wasm'].median, pacerAddedMs: im.added.pacer.median, vsPacer: im.ratio };
  ratioRows.push(['import added ms', 'retry-wasm', fmtNum(im.added['retry-wasm'].median), `@tanstack/pacer (${fmtNum(im.added.pacer.median)})`, fmtRatio(im.ratio), '—', '—']);
}

if (report.size) {
  log(`\nDownload size (import { asyncRetry, AsyncRetryer } or the peer's equivalent; esbuild minified, esm, neutral, es2022)`);
  log(formatSizes(report.size));
}

log(`\nRatios: retry-wasm / fastest (best) peer, < 1.00× means retry-wasm is ahead; last column = @tanstack/pacer / retry-wasm (target >= 20× per call).`);
log(`Per-call ratios are paired: the median over rounds of the two libraries' samples from the same round.`);
if (ratioRows.length) {
  log(table(['case', 'retry-wasm', 'value', 'fastest peer', 'ratio', 'vs @tanstack/pacer', 'pacer ÷ rw'], ratioRows, 'llrlrlr'));
  if (stubClock) log('  (--stub-clock: every Date.now() read below, the floors\' included, returned a constant)');
  for (const c of perCallCases) {
    const f = ratios[c]?.clockFloorVsFastestPeer;
    if (f != null) log(`  ${c}: the floor (direct call + the 2 Date.now() reads pacer's state needs) is ${fmtRatio(f)} the fastest peer here`);
    const g = ratios[c]?.settleFloorVsFastestPeer;
    if (g != null) log(`  ${c}: the settlable floor (a promise that can settle before the function's, plus the 2 reads) is ${fmtRatio(g)} the fastest peer here`);
  }
  if (perCallCases.includes('success')) log('  success: both floors bound both retry-wasm rows (each success reads the clock twice)');
  if (ratios.http) {
    const parts = [...Object.entries(ratios.http.vsPeers).map(([id, x]) => `${fmtRatio(x)} ${id}`), ratios.http.vsBaseline != null ? `${fmtRatio(ratios.http.vsBaseline)} the fetch loop` : null].filter(Boolean);
    log(`  http: paired by run (the libraries take turns chunk by chunk within a run): retry-wasm is ${parts.join(', ')}`);
  }
} else {
  if (!report.trace?.results.off && !report.hedge?.results.hedged && !report.breaker?.results['rw-breaker']) log(`  (no retry-wasm figures: ${rw.mod ? 'retry-wasm not selected or no case selected' : 'retry-wasm not available'})`);
  for (const c of perCallCases) {
    const { results } = report.perCall[c];
    const best = fastestPeer(results, (r) => r.median, (r) => !r.timerBound);
    if (best) log(`  ${c}: fastest peer ${labelOf[best]} ${fmtInt(results[best].median)} ns/call; @tanstack/pacer ${fmtInt(results.pacer?.median)} ns/call`);
  }
}
if (report.trace?.results.off) {
  const { results, ratios: tr } = report.trace;
  ratios.trace = { offNs: results.off.median, ...Object.fromEntries(Object.entries(tr).map(([id, x]) => [id, { ns: results[id].median, vsOff: x.vsOff, overNs: x.overNs }])) };
  const words = { channels: 'no-op channel subscribers', 'otel-noop': 'instrumentRetries and a no-op tracer', 'otel-sdk': "instrumentRetries and the SDK's tracer" };
  const parts = Object.entries(tr).map(([id, x]) => `${fmtRatio(x.vsOff)} (+${fmtInt(x.overNs)} ns) with ${words[id] ?? TRACE_SETUPS[id]}`);
  log(`  trace: a success takes ${fmtInt(results.off.median)} ns with no subscriber; paired, ${parts.join(', ')}`);
}
if (report.hedge?.results.plain && report.hedge.results.hedged) {
  const { plain, hedged } = report.hedge.results;
  ratios.hedge = { p99Plain: plain.latency.p99, p99Hedged: hedged.latency.p99, p999Plain: plain.latency.p999, p999Hedged: hedged.latency.p999, requestsPerCall: hedged.requestsPerCall };
  log(`  hedge: p99 ${fmtNum(plain.latency.p99)} -> ${fmtNum(hedged.latency.p99)} ms, p99.9 ${fmtNum(plain.latency.p999)} -> ${fmtNum(hedged.latency.p999)} ms, ` +
    `for ${fmtNum(hedged.requestsPerCall, 3)} requests per call (targets: p99 under 100 ms, at most 1.10)`);
}
if (report.breaker?.results['rw-breaker'] && report.breaker.results.cockatiel) {
  const { results } = report.breaker;
  const w = results['rw-breaker'];
  const k = results.cockatiel;
  ratios.breaker = {
    requests: w.requests.median, cockatielRequests: k.requests.median,
    failedFast: w.failedFast.median, cockatielFailedFast: k.failedFast.median,
    succeeded: w.succeeded.median, cockatielSucceeded: k.succeeded.median,
    recoverMs: w.recoverMs.median, cockatielRecoverMs: k.recoverMs.median,
  };
  log(`  breaker: retryFetch + CircuitBreaker sent ${fmtInt(w.requests.median)} requests (${fmtInt(w.duringOutage.median)} to the dead backend), ${fmtInt(w.succeeded.median)} calls succeeded, ${fmtInt(w.failedFast.median)} failed fast, recovered in ${fmtInt(w.recoverMs.median)} ms; ` +
    `cockatiel ${fmtInt(k.requests.median)} (${fmtInt(k.duringOutage.median)}), ${fmtInt(k.succeeded.median)}, ${fmtInt(k.failedFast.median)}, ${fmtInt(k.recoverMs.median)} ms (medians)`);
}
if (unhandled.length) {
  failed = true;
  report.unhandledRejections = unhandled.length;
  log(`\n${unhandled.length} unhandled rejection(s) during the per-call cases (first: ${unhandled[0]})`);
}
report.elapsedSeconds = Math.round((realNow() - startedAt) / 100) / 10;
log(`\nelapsed ${report.elapsedSeconds} s${failed ? ' — SOME LIBRARIES MISBEHAVED, see notes above' : ''}`);

// ---------------------------------------------------------------- JSON
const rounded = JSON.stringify(report, (k, v) => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 100) / 100 : v));
const jsonOut = opt('json-out', null);
if (jsonOut) writeFileSync(jsonOut, rounded + '\n');
console.log(rounded);
process.exit(failed ? 1 : 0);
