// The otel stage's cases (SPEC §2d), run by run.mjs from a copy under
// .consumer/otel/, so `retry-wasm` and `retry-wasm/otel` are the packed
// package; OpenTelemetry comes from the repository's dev dependencies.
//
// The real SDK, no mock: BasicTracerProvider with a SimpleSpanProcessor
// into an InMemorySpanExporter, AsyncLocalStorageContextManager as the
// global context manager, UndiciInstrumentation on (Node's fetch), and a
// MeterProvider whose reader collects deltas. Against a local node:http
// server (server.mjs):
//
//   channels …     the engine's tracing channels seen directly: nothing
//                  published without a subscriber, the events of each flow
//                  and attempt in order with their context fields, a store
//                  bound on the attempt's start seen by the function before
//                  and after an await
//   retryFetch …   503, 503, 200: one flow span, three attempt spans, each
//                  the parent of undici's HTTP span of its request, resend
//                  counts, statuses, the metrics; prints the span tree
//   AsyncRetryer … the same with a keyed retryer whose function calls fetch
//   hedge …        two attempts at once, each with its span and its HTTP
//                  span, the loser aborted
//   CircuitBreaker …  trip, refusal, failed and successful probes,
//                  isolate, reset: retry.circuit.transitions by the state
//                  entered, the refused attempt's span (error.type
//                  CircuitOpenError), a retryFetch call refused before any
//                  request, a subscriber on retry-wasm:breaker that throws
//   providers, stop …
//
//   node suite.mjs              the host's node:diagnostics_channel
//   node suite.mjs --fallback   as in a browser: process.getBuiltinModule
//                               gives no diagnostics_channel, so the otel
//                               entry installs its own channels in the engine
//
// One line per case (PASS or FAIL), then `otel: N passed, N failed`;
// exits 1 when a case failed. No case is left pending: a feature this
// build lacks is a failure.
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, metrics, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { AggregationTemporality, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startServer } from './server.mjs';

const fallback = process.argv.includes('--fallback');
if (fallback) {
  // A host without diagnostics channels, for retry-wasm: the engine and the
  // otel entry both look the module up this way (undici and its
  // instrumentation keep Node's own).
  const builtin = process.getBuiltinModule;
  process.getBuiltinModule = (id) => (/^(node:)?diagnostics_channel$/.test(id) ? undefined : builtin.call(process, id));
}
// Imported after the patch above.
const { AsyncRetryer, CircuitBreaker, CircuitOpenError, retryFetch } = await import('retry-wasm/fetch');
const { instrumentRetries } = await import('retry-wasm/otel');
const VERSION = JSON.parse(fs.readFileSync(createRequire(import.meta.url).resolve('retry-wasm/package.json'), 'utf8')).version;

const EVENTS = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];
const SCOPE = 'retry-wasm';
const UNDICI = '@opentelemetry/instrumentation-undici';

// ── the SDK ────────────────────────────────────────────────────────────
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
trace.setGlobalTracerProvider(tracerProvider);
class DeltaReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.DELTA });
  }
  async onForceFlush() {}
  async onShutdown() {}
}
const reader = new DeltaReader();
const meterProvider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(meterProvider);
const undici = new UndiciInstrumentation();
undici.setTracerProvider(tracerProvider);
undici.enable();
const testTracer = trace.getTracer('otel-stage');

const server = await startServer();

// ── helpers ────────────────────────────────────────────────────────────
const results = [];
async function test(label, fn) {
  const t0 = performance.now();
  let status = 'pass';
  let detail = '';
  try {
    detail = (await fn()) ?? '';
  } catch (e) {
    status = 'fail';
    detail = e?.stack ?? String(e);
  }
  const ms = performance.now() - t0;
  results.push({ label, status });
  const tag = { pass: 'PASS', fail: 'FAIL' }[status];
  console.log(`${tag.padEnd(8)}${label.padEnd(58)} ${(ms / 1000).toFixed(2)}s  ${status === 'fail' ? '' : detail}`);
  if (status === 'fail') console.log(detail.replace(/^/gm, '        '));
}

const id = (s) => s.spanContext().spanId;
const parentOf = (s) => s.parentSpanContext?.spanId;
const ms = (hr) => hr[0] * 1e3 + hr[1] / 1e6;
const ours = (spans) => spans.filter((s) => s.instrumentationScope.name === SCOPE);
const undiciSpans = (spans) => spans.filter((s) => s.instrumentationScope.name === UNDICI);

async function waitFor(what, check, timeout = 5000) {
  const t0 = performance.now();
  for (;;) {
    const r = check();
    if (r) return r;
    if (performance.now() - t0 > timeout) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** The retry-wasm metrics collected since the last collect, by name. */
async function retryMetrics(from = reader) {
  const { resourceMetrics, errors } = await from.collect();
  assert.deepEqual(errors, [], 'metric collection errors');
  const out = {};
  for (const sm of resourceMetrics.scopeMetrics) {
    if (sm.scope.name !== SCOPE) continue;
    assert.equal(sm.scope.version, VERSION, 'the meter is named retry-wasm with the package version');
    for (const m of sm.metrics) out[m.descriptor.name] = m;
  }
  return out;
}

/** retry.attempts as { outcome: count }, each point's attributes exactly { retry.outcome }. */
function attemptCounts(m) {
  assert.ok(m['retry.attempts'], 'a retry.attempts counter');
  assert.equal(m['retry.attempts'].descriptor.unit, '{attempt}');
  const out = {};
  for (const p of m['retry.attempts'].dataPoints) {
    assert.deepEqual(Object.keys(p.attributes), ['retry.outcome']);
    if (p.value) out[p.attributes['retry.outcome']] = p.value;
  }
  return out;
}

/** retry.duration's points as [{ attributes, count, sum }]. */
function durations(m) {
  assert.ok(m['retry.duration'], 'a retry.duration histogram');
  assert.equal(m['retry.duration'].descriptor.unit, 's');
  return m['retry.duration'].dataPoints.filter((p) => p.value.count).map((p) => ({ attributes: p.attributes, count: p.value.count, sum: p.value.sum }));
}

/** Subscribes to every event of the three channels; `log` gets { ch, ev, ctx, snap } in order. */
function recordChannels() {
  const log = [];
  const handlers = (ch) => Object.fromEntries(EVENTS.map((ev) => [ev, (ctx) => log.push({ ch, ev, ctx, snap: { ...ctx } })]));
  const execute = dc.tracingChannel('retry-wasm:execute');
  const attempt = dc.tracingChannel('retry-wasm:attempt');
  const backoff = dc.channel('retry-wasm:backoff');
  const h = { execute: handlers('execute'), attempt: handlers('attempt') };
  const onBackoff = (m) => log.push({ ch: 'backoff', ev: 'publish', ctx: m, snap: { ...m } });
  execute.subscribe(h.execute);
  attempt.subscribe(h.attempt);
  backoff.subscribe(onBackoff);
  return {
    log,
    stop() {
      execute.unsubscribe(h.execute);
      attempt.unsubscribe(h.attempt);
      backoff.unsubscribe(onBackoff);
    },
    /** The distinct context objects of a channel, in order of first event, each with its events. */
    traces(ch) {
      const m = new Map();
      for (const e of log) if (e.ch === ch) (m.get(e.ctx) ?? m.set(e.ctx, []).get(e.ctx)).push(e);
      return [...m].map(([ctx, events]) => ({ ctx, events, evs: events.map((e) => e.ev), at: (ev) => log.findIndex((e) => e.ctx === ctx && e.ev === ev) }));
    },
  };
}

function noSubscribers() {
  const t = ['retry-wasm:execute', 'retry-wasm:attempt'].map((n) => dc.tracingChannel(n));
  return !t.some((c) => EVENTS.some((e) => c[e].hasSubscribers)) && !['retry-wasm:backoff', 'retry-wasm:breaker'].some((n) => dc.channel(n).hasSubscribers);
}

/**
 * The channel the engine publishes circuit changes on: the host's, or,
 * without one, the channels retry-wasm/otel installed in the engine (kept
 * where the engines of this realm meet, see js/otel.js).
 */
function breakerChannel() {
  if (!fallback) return dc.channel('retry-wasm:breaker');
  const own = globalThis[Symbol.for('retry-wasm.engines')]?.channels;
  assert.ok(own, 'retry-wasm/otel installed its own channels');
  return own.channel('retry-wasm:breaker');
}

/** retry.circuit.transitions as { state: count }, each point's attributes exactly { retry.circuit.state }. */
function transitionCounts(m) {
  const t = m['retry.circuit.transitions'];
  assert.ok(t, 'a retry.circuit.transitions counter');
  assert.equal(t.descriptor.type, 'COUNTER', 'retry.circuit.transitions is a Counter');
  assert.equal(t.descriptor.unit, '{transition}');
  const out = {};
  for (const p of t.dataPoints) {
    assert.deepEqual(Object.keys(p.attributes), ['retry.circuit.state']);
    if (p.value) out[p.attributes['retry.circuit.state']] = p.value;
  }
  return out;
}

/** The `to` of each change, counted: what retry.circuit.transitions must show. */
function countStates(changes) {
  const out = {};
  for (const c of changes) out[c.to] = (out[c.to] ?? 0) + 1;
  return out;
}

/** The span tree under `root`, one line per span or span event, indented, with attributes (undici's: the HTTP ones). */
function spanTree(spans, root) {
  const kids = new Map();
  for (const s of spans) if (parentOf(s)) (kids.get(parentOf(s)) ?? kids.set(parentOf(s), []).get(parentOf(s))).push(s);
  const t0 = ms(root.startTime);
  const show = (v) => (typeof v === 'string' && /[\s"]/.test(v) ? JSON.stringify(v) : String(v));
  const attrs = (a, keys = Object.keys(a)) => keys.filter((k) => a[k] !== undefined).map((k) => `${k}=${show(a[k])}`).join(' ');
  const undiciKeys = ['http.request.method', 'url.full', 'http.response.status_code', 'error.type'];
  const lines = [];
  const walk = (s, lead, rest) => {
    const status = s.status.code === SpanStatusCode.ERROR ? `  ERROR${s.status.message ? ` ${JSON.stringify(s.status.message)}` : ''}` : '';
    const a = attrs(s.attributes, s.instrumentationScope.name === UNDICI ? undiciKeys : undefined);
    const when = `[+${Math.round(ms(s.startTime) - t0)} ms, ${Math.max(0, Math.round(ms(s.endTime) - ms(s.startTime)))} ms]`;
    lines.push(`${lead}${s.name}  ${when}${a ? `  ${a}` : ''}${status}`);
    const items = [
      ...s.events.map((e) => ({ t: ms(e.time), line: `· ${e.name}  ${attrs(e.attributes ?? {}, Object.keys(e.attributes ?? {}).filter((k) => k !== 'exception.stacktrace'))}` })),
      ...(kids.get(id(s)) ?? []).map((c) => ({ t: ms(c.startTime), span: c })),
    ].sort((x, y) => x.t - y.t);
    items.forEach((it, i) => {
      const last = i === items.length - 1;
      if (it.span) walk(it.span, `${rest}${last ? '└─ ' : '├─ '}`, `${rest}${last ? '   ' : '│  '}`);
      else lines.push(`${rest}${last ? '└─ ' : '├─ '}${it.line}`);
    });
  };
  walk(root, '', '');
  return lines.join('\n');
}

/**
 * Checks a flow traced from a caller span: the flow span, its attempt
 * spans and each attempt's undici span. Returns { flow, attempts, http }.
 */
function checkFlowSpans(spans, caller, { name, attempts: n, http = true }) {
  const flows = ours(spans).filter((s) => !s.name.startsWith('retry attempt'));
  assert.equal(flows.length, 1, `one flow span, got ${flows.map((s) => s.name).join(', ')}`);
  const [flow] = flows;
  assert.equal(flow.name, name);
  assert.equal(flow.kind, SpanKind.INTERNAL);
  assert.equal(parentOf(flow), id(caller), 'the flow span is a child of the context active when the flow started');
  assert.equal(flow.instrumentationScope.version, VERSION, 'the tracer is named retry-wasm with the package version');
  assert.equal(flow.attributes['retry.attempts'], n);
  const attempts = ours(spans).filter((s) => s.name.startsWith('retry attempt')).sort((a, b) => a.attributes['retry.attempt'] - b.attributes['retry.attempt']);
  assert.deepEqual(attempts.map((s) => s.name), Array.from({ length: n }, (_, i) => `retry attempt ${i + 1}`));
  for (const [i, a] of attempts.entries()) {
    assert.equal(parentOf(a), id(flow), `attempt ${i + 1}'s parent is the flow span`);
    assert.equal(a.kind, SpanKind.INTERNAL);
    assert.equal(a.attributes['retry.attempt'], i + 1);
    assert.equal(typeof a.attributes['retry.hedged'], 'boolean');
    // (The SDK's end times of two spans ended in the same microsecond may come out reversed.)
    assert.ok(a.ended && ms(a.endTime) <= ms(flow.endTime) + 1, `attempt ${i + 1} ended before its flow`);
  }
  const http_ = [];
  if (http) {
    const all = undiciSpans(spans);
    for (const [i, a] of attempts.entries()) {
      const children = spans.filter((s) => parentOf(s) === id(a));
      assert.equal(children.length, 1, `attempt ${i + 1} has one child span, got ${children.map((s) => `${s.name} (${s.instrumentationScope.name})`).join(', ') || 'none'}`);
      assert.equal(children[0].instrumentationScope.name, UNDICI, `attempt ${i + 1}'s child is undici's HTTP span`);
      assert.equal(children[0].kind, SpanKind.CLIENT);
      http_.push(children[0]);
    }
    assert.equal(all.length, n, `one HTTP span per attempt, got ${all.length}`);
  }
  return { flow, attempts, http: http_ };
}

function checkFailed(span, type) {
  assert.equal(span.status.code, SpanStatusCode.ERROR, `${span.name} has ERROR status`);
  assert.equal(span.attributes['error.type'], type, `${span.name}'s error.type`);
  assert.equal(span.events.filter((e) => e.name === 'exception').length, 1, `${span.name} recorded the exception`);
  assert.equal(span.attributes['retry.aborted'], undefined);
}

function checkSucceeded(span) {
  assert.equal(span.status.code, SpanStatusCode.UNSET, `${span.name} has no ERROR status`);
  assert.equal(span.attributes['error.type'], undefined);
  assert.equal(span.events.filter((e) => e.name === 'exception').length, 0);
  assert.equal(span.attributes['retry.aborted'], undefined);
}

/** Runs `fn` inside a fresh caller span (a root) and ends it; returns [result, callerSpan]. */
async function underCaller(fn) {
  const caller = testTracer.startSpan('caller', {}, ROOT_CONTEXT);
  try {
    return [await context.with(trace.setSpan(ROOT_CONTEXT, caller), fn), caller];
  } finally {
    caller.end();
  }
}

const spansDone = (n) => () => {
  const spans = exporter.getFinishedSpans();
  return undiciSpans(spans).length >= n && spans.some((s) => s.name === 'caller') ? spans : null;
};

// ── the channels, seen directly ────────────────────────────────────────
async function channelCases() {
  await test('channels: no subscriber, nothing published, flows work', async () => {
    assert.ok(noSubscribers(), 'nobody subscribed yet');
    // Count every publish and runStores on the channels, without subscribing.
    const names = ['retry-wasm:execute', 'retry-wasm:attempt'].flatMap((n) => EVENTS.map((e) => `tracing:${n}:${e}`)).concat('retry-wasm:backoff');
    const calls = [];
    const chans = names.map((n) => dc.channel(n));
    for (const c of chans) {
      for (const m of ['publish', 'runStores']) {
        const inner = c[m];
        c[m] = function (...args) {
          calls.push(`${c.name}.${m}`);
          return inner.apply(this, args);
        };
      }
    }
    try {
      let n = 0;
      const r = new AsyncRetryer(async (x) => {
        await sleep(1);
        if (++n === 1) throw new Error('once');
        return x * 2;
      }, { maxAttempts: 3, baseWait: 1 });
      assert.equal(await r.execute(21), 42);
      const res = await retryFetch({ baseWait: 1 })(server.url('/flaky?id=quiet&fail=1'));
      assert.equal(res.status, 200);
      await res.text();
      await assert.rejects(new AsyncRetryer(async () => { throw new TypeError('no'); }, { maxAttempts: 2, baseWait: 1 }).execute(), TypeError);
      assert.deepEqual(calls, [], 'nothing published without a subscriber');
    } finally {
      for (const c of chans) {
        delete c.publish;
        delete c.runStores;
      }
    }
    return 'a retried flow, a retryFetch call and a rejected flow: 0 publish/runStores calls';
  });

  await test('channels: a flow that succeeds on attempt 2, events and fields', async () => {
    const rec = recordChannels();
    const als = new AsyncLocalStorage();
    const attemptStart = dc.tracingChannel('retry-wasm:attempt').start;
    attemptStart.bindStore(als, (ctx) => `attempt ${ctx.attempt}`);
    const thrown = new Error('first attempt fails');
    const inside = [];
    let retryer;
    try {
      retryer = new AsyncRetryer(async (a, b) => {
        const n = inside.length + 1;
        const seen = { n, before: als.getStore() };
        inside.push(seen);
        await sleep(5);
        seen.after = als.getStore();
        if (n === 1) throw thrown;
        return { a, b, n };
      }, { key: 'k', maxAttempts: 3, baseWait: 5 });
      const value = await retryer.execute(1, 'two');
      assert.deepEqual(value, { a: 1, b: 'two', n: 2 });
      rec.stop();

      // The store bound on the attempt's start is the function's context, before and after its await.
      assert.deepEqual(inside, [
        { n: 1, before: 'attempt 1', after: 'attempt 1' },
        { n: 2, before: 'attempt 2', after: 'attempt 2' },
      ]);

      const [flow, ...more] = rec.traces('execute');
      assert.equal(more.length, 0, 'one flow');
      assert.deepEqual(flow.evs, ['start', 'end', 'asyncStart', 'asyncEnd']);
      assert.equal(rec.log[0].ctx, flow.ctx, 'the flow start is the first event');
      const start = flow.events[0].snap;
      assert.equal(start.retryer, retryer);
      assert.equal(start.key, 'k');
      assert.ok(Array.isArray(start.args), 'args is an array');
      assert.deepEqual([...start.args], [1, 'two']);
      assert.equal(start.attempts, undefined, 'attempts is set when the flow settles');
      assert.equal(start.request, undefined, 'no request outside retryFetch');
      const end = flow.events.at(-1).snap;
      assert.equal(end.attempts, 2);
      assert.equal(end.result, value, 'ctx.result is what execute() resolved');
      assert.equal(end.error, undefined);
      assert.equal(end.reason, undefined, 'no reason when it succeeded');

      const attempts = rec.traces('attempt');
      assert.equal(attempts.length, 2, 'two attempts');
      assert.deepEqual(attempts[0].evs, ['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
      assert.deepEqual(attempts[1].evs, ['start', 'end', 'asyncStart', 'asyncEnd']);
      for (const [i, a] of attempts.entries()) {
        const s = a.events[0].snap;
        assert.equal(s.retryer, retryer);
        assert.equal(s.key, 'k');
        assert.equal(s.attempt, i + 1);
        assert.equal(s.hedged, false);
        assert.deepEqual([...s.args], [1, 'two']);
        assert.ok(a.at('asyncEnd') < flow.at('asyncEnd'), `attempt ${i + 1}'s asyncEnd before the flow's`);
        assert.ok(a.at('start') > flow.at('start'));
        assert.notEqual(a.events.at(-1).snap.aborted, true);
      }
      assert.equal(attempts[0].events.find((e) => e.ev === 'error').snap.error, thrown, 'ctx.error is what the attempt threw');
      assert.equal(attempts[1].events.at(-1).snap.result, value, 'ctx.result is what the attempt resolved');
      assert.ok(attempts[0].at('asyncEnd') < attempts[1].at('start'), 'attempt 1 is done before attempt 2 starts');

      const backoffs = rec.log.filter((e) => e.ch === 'backoff');
      assert.equal(backoffs.length, 1, 'one wait');
      const b = backoffs[0].snap;
      assert.equal(b.retryer, retryer);
      assert.equal(b.key, 'k');
      assert.equal(b.attempt, 1);
      assert.equal(b.error, thrown);
      assert.ok(Number.isFinite(b.delay) && b.delay >= 0, `delay ${b.delay}`);
      assert.ok(Number.isFinite(b.elapsed) && b.elapsed >= 0, `elapsed ${b.elapsed}`);
      const at = rec.log.indexOf(backoffs[0]);
      assert.ok(attempts[0].at('error') < at && at < attempts[1].at('start'), 'the wait starts after attempt 1 failed and before attempt 2');
      return `flow ${flow.evs.join(' ')}; attempt 1 ${attempts[0].evs.join(' ')}; backoff; attempt 2 ${attempts[1].evs.join(' ')}; stores seen before and after await`;
    } finally {
      rec.stop();
      attemptStart.unbindStore(als);
    }
  });

  await test('channels: observers that fail never fail the call', async () => {
    // A store whose run and withScope throw, a store only `run` enters
    // (Node 26 enters stores with withScope), and a subscriber that throws
    // (Node reports that as the host's uncaught error), all beside
    // retry-wasm/otel: every call still settles as without them, and each
    // attempt's function runs exactly once.
    const attemptStart = dc.tracingChannel('retry-wasm:attempt').start;
    const throwing = {
      run() {
        throw new Error('a store that throws (run)');
      },
      withScope() {
        throw new Error('a store that throws (withScope)');
      },
    };
    const runOnly = { run: (value, fn) => fn() };
    const boom = new Error('a subscriber that throws');
    const subscriber = () => {
      throw boom;
    };
    const uncaught = [];
    const onUncaught = (e) => uncaught.push(e);
    const warnings = [];
    const onWarning = (w) => {
      if (w.code === 'RETRY_WASM_OBSERVER') warnings.push(w);
    };
    // Registered before the first failing store of this process: the
    // engine says it once.
    process.on('uncaughtException', onUncaught);
    process.on('warning', onWarning);
    const stop = instrumentRetries();
    attemptStart.bindStore(throwing, (ctx) => ctx.attempt);
    attemptStart.bindStore(runOnly, (ctx) => ctx.attempt);
    attemptStart.subscribe(subscriber);
    try {
      let calls = 0;
      const r = new AsyncRetryer(async (x) => {
        calls++;
        await sleep(1);
        if (calls === 1) throw new Error('once');
        return x * 2;
      }, { maxAttempts: 3, baseWait: 1 });
      assert.equal(await r.execute(21), 42);
      assert.equal(calls, 2, 'two attempts, each function called once');
      const thrown = new TypeError('its own error');
      let sync = 0;
      await assert.rejects(
        new AsyncRetryer(() => {
          sync++;
          throw thrown;
        }, { maxAttempts: 2, baseWait: 1 }).execute(),
        (e) => e === thrown,
      );
      assert.equal(sync, 2, 'a function that throws synchronously is called once per attempt');
      const res = await retryFetch({ baseWait: 1 })(server.url('/flaky?id=observers&fail=1'));
      assert.equal(res.status, 200);
      await res.text();
      await sleep(20);
      assert.ok(uncaught.length > 0 && uncaught.every((e) => e === boom), "the subscriber's throw is the host's uncaught error");
      assert.equal(warnings.length, 1, 'the failing store is said once');
      return `3 calls settled as without observers; ${uncaught.length} uncaught subscriber errors; ${warnings.length} warning`;
    } finally {
      attemptStart.unsubscribe(subscriber);
      attemptStart.unbindStore(throwing);
      attemptStart.unbindStore(runOnly);
      stop();
      await sleep(10);
      process.off('uncaughtException', onUncaught);
      process.off('warning', onWarning);
    }
  });

  await test('channels: a flow that rejects (attempts exhausted)', async () => {
    const rec = recordChannels();
    try {
      const errors = [new Error('one'), new Error('two')];
      let i = 0;
      const r = new AsyncRetryer(async () => { throw errors[i++]; }, { maxAttempts: 2, baseWait: 1 });
      await assert.rejects(r.execute('x'), (e) => e === errors[1]);
      rec.stop();
      const [flow] = rec.traces('execute');
      assert.deepEqual(flow.evs, ['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
      const s = flow.events.find((e) => e.ev === 'error').snap;
      assert.equal(s.error, errors[1], 'ctx.error is the rejection');
      assert.equal(s.reason, 'attempts-exhausted');
      assert.equal(s.attempts, 2);
      assert.equal(s.key, undefined);
      const attempts = rec.traces('attempt');
      assert.deepEqual(attempts.map((a) => a.evs.join(' ')), ['start end error asyncStart asyncEnd', 'start end error asyncStart asyncEnd']);
      assert.deepEqual(attempts.map((a) => a.ctx.error), errors);
      return `flow ${flow.evs.join(' ')}, reason ${s.reason}`;
    } finally {
      rec.stop();
    }
  });

  await test('channels: abort() during an attempt', async () => {
    const rec = recordChannels();
    try {
      const r = new AsyncRetryer(async () => {
        const signal = r.getAbortSignal();
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
      }, { maxAttempts: 3 });
      const p = r.execute();
      await sleep(20);
      r.abort();
      assert.equal(await p, undefined);
      await sleep(10);
      rec.stop();
      const [flow] = rec.traces('execute');
      assert.deepEqual(flow.evs, ['start', 'end', 'asyncStart', 'asyncEnd'], 'resolves undefined: no error event');
      assert.equal(flow.ctx.reason, 'manual');
      assert.equal(flow.ctx.attempts, 1);
      const attempts = rec.traces('attempt');
      assert.equal(attempts.length, 1);
      assert.deepEqual(attempts[0].evs, ['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
      assert.equal(attempts[0].events.find((e) => e.ev === 'error').snap.aborted, true, 'ctx.aborted on the aborted attempt');
      assert.ok(attempts[0].at('asyncEnd') < flow.at('asyncEnd'));
      return `attempt ${attempts[0].evs.join(' ')} (aborted), flow reason ${flow.ctx.reason}`;
    } finally {
      rec.stop();
    }
  });

  await test('channels: a retryFetch call (503 then 200)', async () => {
    const rec = recordChannels();
    try {
      const input = new URL(server.url('/flaky?id=ch-fetch&fail=1'));
      const res = await retryFetch({ baseWait: 1, key: 'api' })(input);
      assert.equal(res.status, 200);
      await res.text();
      rec.stop();
      const [flow, ...more] = rec.traces('execute');
      assert.equal(more.length, 0);
      assert.deepEqual(flow.evs, ['start', 'end', 'asyncStart', 'asyncEnd']);
      const start = flow.events[0].snap;
      assert.equal(start.request, input, 'ctx.request is the input as given');
      assert.equal(start.key, 'api');
      assert.ok(start.retryer && typeof start.retryer === 'object', 'a retryer of its own');
      assert.ok(Array.isArray(start.args), 'args is an array');
      assert.equal(flow.ctx.attempts, 2);
      assert.equal(flow.ctx.result, res, 'ctx.result is the Response the call resolved');
      const attempts = rec.traces('attempt');
      assert.deepEqual(attempts.map((a) => a.evs.join(' ')), ['start end error asyncStart asyncEnd', 'start end asyncStart asyncEnd']);
      for (const [i, a] of attempts.entries()) {
        assert.equal(a.ctx.attempt, i + 1);
        assert.equal(a.ctx.retryer, start.retryer);
        assert.ok(a.ctx.request !== undefined, `attempt ${i + 1} has ctx.request`);
        assert.ok(a.ctx.response instanceof Response, `attempt ${i + 1} has ctx.response`);
      }
      assert.equal(attempts[0].ctx.response.status, 503);
      assert.equal(attempts[0].ctx.error?.status, 503, 'the failing response is the attempt error (HTTPError with its status)');
      assert.equal(attempts[1].ctx.response, res);
      assert.equal(attempts[1].ctx.result, res);
      assert.equal(server.count('ch-fetch'), 2);
      return 'request, response, result and error as the contract says';
    } finally {
      rec.stop();
    }
  });
}

// ── OpenTelemetry ──────────────────────────────────────────────────────
let treeShown = '';

async function otelCases() {
  await test('retryFetch 503, 503, 200: spans, HTTP children, metrics', async () => {
    const stop = instrumentRetries();
    try {
      exporter.reset();
      await retryMetrics();
      const api = retryFetch({ baseWait: 10 });
      const target = server.url('/flaky?id=fetch-a&fail=2');
      const [res, caller] = await underCaller(async () => {
        const r = await api(target);
        await r.text();
        return r;
      });
      assert.equal(res.status, 200);
      assert.equal(server.count('fetch-a'), 3);
      const spans = await waitFor('3 undici spans', spansDone(3));
      const { flow, attempts, http } = checkFlowSpans(spans, caller, { name: 'retry', attempts: 3 });
      assert.equal(flow.attributes['retry.reason'], undefined);
      assert.equal(flow.status.code, SpanStatusCode.UNSET);
      assert.deepEqual(attempts.map((a) => a.attributes['http.request.resend_count']), [undefined, 1, 2], 'resend counts absent/1/2');
      assert.deepEqual(attempts.map((a) => a.attributes['retry.hedged']), [false, false, false]);
      checkFailed(attempts[0], '503');
      checkFailed(attempts[1], '503');
      checkSucceeded(attempts[2]);
      assert.deepEqual(http.map((h) => h.attributes['http.response.status_code']), [503, 503, 200], "each attempt's HTTP span is its own request");
      assert.ok(http.every((h) => h.attributes['url.full'] === target));
      const waits = flow.events.filter((e) => e.name === 'retry.backoff');
      assert.deepEqual(waits.map((e) => e.attributes['retry.attempt']), [1, 2], 'a retry.backoff event per wait');

      const m = await retryMetrics();
      assert.deepEqual(attemptCounts(m), { failure: 2, success: 1 });
      const d = durations(m);
      assert.equal(d.length, 1);
      assert.deepEqual(d[0].attributes, { 'retry.outcome': 'success' });
      assert.equal(d[0].count, 1);
      assert.ok(d[0].sum > 0 && d[0].sum < 30, `duration ${d[0].sum} s`);
      treeShown = spanTree(spans, caller);
      return `3 attempts, HTTP spans 503/503/200 under them, retry.attempts {failure: 2, success: 1}, retry.duration ${d[0].sum.toFixed(3)} s`;
    } finally {
      stop();
    }
  });

  await test('AsyncRetryer with a key, its function calls fetch', async () => {
    const stop = instrumentRetries({ tracerProvider, meterProvider });
    try {
      exporter.reset();
      await retryMetrics();
      const target = server.url('/flaky?id=keyed&fail=2');
      const retryer = new AsyncRetryer(async (userId) => {
        const res = await fetch(`${target}&user=${userId}`, { signal: retryer.getAbortSignal() });
        if (!res.ok) {
          await res.arrayBuffer();
          throw Object.assign(new Error(`HTTP ${res.status}`), { status: res.status });
        }
        return res.json();
      }, { key: 'load-user', maxAttempts: 3, baseWait: 10 });
      const [user, caller] = await underCaller(() => retryer.execute(7));
      assert.deepEqual(user, { id: 'keyed', n: 3 });
      const spans = await waitFor('3 undici spans', spansDone(3));
      const { flow, attempts, http } = checkFlowSpans(spans, caller, { name: 'retry load-user', attempts: 3 });
      assert.equal(flow.status.code, SpanStatusCode.UNSET);
      assert.deepEqual(attempts.map((a) => a.attributes['http.request.resend_count']), [undefined, undefined, undefined], 'no resend count outside retryFetch');
      checkFailed(attempts[0], 'Error');
      checkFailed(attempts[1], 'Error');
      checkSucceeded(attempts[2]);
      assert.equal(attempts[0].status.message, 'HTTP 503');
      assert.deepEqual(http.map((h) => h.attributes['http.response.status_code']), [503, 503, 200]);
      const m = await retryMetrics();
      assert.deepEqual(attemptCounts(m), { failure: 2, success: 1 });
      const d = durations(m);
      assert.equal(d.length, 1);
      assert.deepEqual(d[0].attributes, { 'retry.outcome': 'success' });
      return 'span "retry load-user", 3 attempts each the parent of its fetch';
    } finally {
      stop();
    }
  });

  await test('a flow that gives up: retry.reason, ERROR, metrics', async () => {
    const stop = instrumentRetries();
    try {
      exporter.reset();
      await retryMetrics();
      const errors = [new TypeError('one'), new RangeError('two')];
      let i = 0;
      const r = new AsyncRetryer(async () => { throw errors[i++]; }, { key: 'doomed', maxAttempts: 2, baseWait: 1 });
      const [, caller] = await underCaller(() => assert.rejects(r.execute(), (e) => e === errors[1]));
      const spans = exporter.getFinishedSpans();
      const { flow, attempts } = checkFlowSpans(spans, caller, { name: 'retry doomed', attempts: 2, http: false });
      assert.equal(flow.attributes['retry.reason'], 'attempts-exhausted');
      checkFailed(flow, 'RangeError');
      checkFailed(attempts[0], 'TypeError');
      checkFailed(attempts[1], 'RangeError');
      const m = await retryMetrics();
      assert.deepEqual(attemptCounts(m), { failure: 2 });
      const d = durations(m);
      assert.deepEqual(d.map((p) => p.attributes), [{ 'retry.outcome': 'failure', 'retry.reason': 'attempts-exhausted' }]);
      return 'retry.reason attempts-exhausted, ERROR on the flow and both attempts';
    } finally {
      stop();
    }
  });

  await test('abort(): the attempt span aborted, not ERROR', async () => {
    const stop = instrumentRetries();
    try {
      exporter.reset();
      await retryMetrics();
      const r = new AsyncRetryer(async () => {
        const signal = r.getAbortSignal();
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
      }, { maxAttempts: 3 });
      const [value, caller] = await underCaller(async () => {
        const p = r.execute();
        await sleep(20);
        r.abort();
        return p;
      });
      assert.equal(value, undefined);
      const spans = exporter.getFinishedSpans();
      const { flow, attempts } = checkFlowSpans(spans, caller, { name: 'retry', attempts: 1, http: false });
      assert.equal(flow.attributes['retry.reason'], 'manual');
      assert.equal(flow.status.code, SpanStatusCode.UNSET, 'resolved: no ERROR');
      assert.equal(attempts[0].attributes['retry.aborted'], true);
      assert.equal(attempts[0].status.code, SpanStatusCode.UNSET);
      const m = await retryMetrics();
      assert.deepEqual(attemptCounts(m), { aborted: 1 });
      assert.deepEqual(durations(m).map((p) => p.attributes), [{ 'retry.outcome': 'aborted', 'retry.reason': 'manual' }]);
      return 'retry.aborted=true, flow retry.reason=manual, outcome aborted';
    } finally {
      stop();
    }
  });

  await test('hedge: two attempts at once, each with its HTTP span, the loser aborted', async () => {
    let calls = 0;
    let running = 0;
    let overlapped = false;
    const target = (n) => server.url(`/slow?id=hedge&ms=${n === 1 ? 1500 : 0}`);
    const fn = async () => {
      const n = ++calls;
      if (n === 2) overlapped = running === 1;
      running++;
      try {
        const res = await fetch(target(n), { signal: retryer.getAbortSignal() });
        return `${n}:${await res.text()}`;
      } finally {
        running--;
      }
    };
    const retryer = new AsyncRetryer(fn, { hedge: 20, maxAttempts: 2 });
    const stop = instrumentRetries();
    try {
      exporter.reset();
      await retryMetrics();
      const [value, caller] = await underCaller(() => retryer.execute());
      assert.equal(value, '2:slow', 'the hedged attempt wins');
      const spans = await waitFor('2 undici spans', spansDone(2));
      const { flow, attempts, http } = checkFlowSpans(spans, caller, { name: 'retry', attempts: 2 });
      assert.equal(flow.attributes['retry.reason'], undefined);
      assert.deepEqual(attempts.map((a) => a.attributes['retry.hedged']), [false, true]);
      assert.ok(overlapped, 'the two attempts ran at once');
      // A span starts at Date.now(), in whole milliseconds, and ends its
      // monotonic duration later, so one span's start and another's end
      // can be a millisecond out: when the winner's local request took
      // under 1 ms, the loser's span seemed to end before the winner's
      // began (seen once on Node 26). The loser's own duration is exact:
      // it ran past the hedge delay (a timer may fire up to 1 ms early).
      const loser = ms(attempts[0].endTime) - ms(attempts[0].startTime);
      assert.ok(loser >= 19, `the loser's span lasted ${loser.toFixed(1)} ms, not past the 20 ms hedge delay`);
      assert.equal(attempts[0].attributes['retry.aborted'], true, 'the loser is aborted');
      assert.equal(attempts[0].status.code, SpanStatusCode.UNSET, 'an aborted attempt is not ERROR');
      checkSucceeded(attempts[1]);
      assert.notEqual(id(http[0]), id(http[1]));
      assert.equal(http[1].attributes['http.response.status_code'], 200);
      const m = await retryMetrics();
      assert.deepEqual(attemptCounts(m), { aborted: 1, success: 1 });
      assert.deepEqual(durations(m).map((p) => p.attributes), [{ 'retry.outcome': 'success' }]);
      return 'attempt 2 hedged and won, attempt 1 retry.aborted=true, one HTTP span under each';
    } finally {
      stop();
    }
  });

  await test('a retryer started inside an attempt: its flow is that attempt\'s child', async () => {
    const stop = instrumentRetries();
    try {
      exporter.reset();
      await retryMetrics();
      const inner = new AsyncRetryer(async () => {
        const res = await fetch(server.url('/ok?id=inner'));
        return res.text();
      }, { key: 'inner' });
      const outer = new AsyncRetryer(async () => {
        await sleep(1);
        return inner.execute();
      }, { key: 'outer' });
      const [value, caller] = await underCaller(() => outer.execute());
      assert.equal(value, 'ok');
      const spans = await waitFor('1 undici span', spansDone(1));
      const byName = (n) => spans.find((s) => s.name === n);
      assert.equal(parentOf(byName('retry outer')), id(caller));
      const outerAttempt = spans.find((s) => s.name === 'retry attempt 1' && parentOf(s) === id(byName('retry outer')));
      assert.ok(outerAttempt, "the outer flow's attempt span");
      assert.equal(parentOf(byName('retry inner')), id(outerAttempt), 'the inner flow is a child of the outer attempt (after an await)');
      const innerAttempt = spans.find((s) => s.name === 'retry attempt 1' && parentOf(s) === id(byName('retry inner')));
      assert.equal(parentOf(undiciSpans(spans)[0]), id(innerAttempt), "the HTTP span is the inner attempt's child");
      assert.deepEqual(attemptCounts(await retryMetrics()), { success: 2 });
      return 'caller > retry outer > attempt 1 > retry inner > attempt 1 > GET';
    } finally {
      stop();
    }
  });

  await test('CircuitBreaker: trip, refusal, probes, isolate: transitions counted', async () => {
    const stop = instrumentRetries();
    const changes = [];
    const published = [];
    const onPublish = (m) => published.push(m);
    // The host's channel only: in the own-channels run nothing but otel may listen there.
    if (!fallback) dc.channel('retry-wasm:breaker').subscribe(onPublish);
    try {
      exporter.reset();
      await retryMetrics();
      const BREAK = 40;
      const breaker = new CircuitBreaker({ consecutiveFailures: 2, breakDuration: BREAK, onStateChange: (c) => changes.push(c) });
      let calls = 0;
      const reasons = [];
      const down = new AsyncRetryer(async () => {
        calls++;
        throw new Error('down');
      }, { key: 'cb', breaker, maxAttempts: 3, baseWait: 1, onGiveUp: (e, reason) => reasons.push(reason) });
      // Attempts 1 and 2 fail and trip it; attempt 3 is refused; with no attempt left the flow gives up.
      const [, caller] = await underCaller(() => assert.rejects(down.execute(), (e) => e instanceof CircuitOpenError && e.name === 'CircuitOpenError'));
      assert.equal(calls, 2, 'the refused attempt called nothing');
      assert.deepEqual(reasons, ['circuit-open']);
      assert.equal(breaker.state(), 'open');
      const spans = exporter.getFinishedSpans();
      const { flow, attempts } = checkFlowSpans(spans, caller, { name: 'retry cb', attempts: 3, http: false });
      assert.equal(flow.attributes['retry.reason'], 'circuit-open');
      checkFailed(flow, 'CircuitOpenError');
      checkFailed(attempts[0], 'Error');
      checkFailed(attempts[1], 'Error');
      checkFailed(attempts[2], 'CircuitOpenError');
      assert.match(attempts[2].status.message, /circuit .*open/, "the refused attempt's status is the CircuitOpenError's message");
      let m = await retryMetrics();
      assert.deepEqual(transitionCounts(m), { open: 1 });
      assert.deepEqual(attemptCounts(m), { failure: 3 }, 'the refused attempt counted as a failure');
      assert.deepEqual(durations(m).map((p) => p.attributes), [{ 'retry.outcome': 'failure', 'retry.reason': 'circuit-open' }]);

      // The break ends: a probe that fails reopens it, one that succeeds closes it.
      await sleep(BREAK + 10);
      await assert.rejects(new AsyncRetryer(async () => { throw new Error('still down'); }, { breaker, maxAttempts: 1 }).execute(), /still down/);
      assert.equal(breaker.state(), 'open');
      await sleep(BREAK + 10);
      assert.equal(await new AsyncRetryer(async () => 'up', { breaker, maxAttempts: 1 }).execute(), 'up');
      assert.equal(breaker.state(), 'closed');
      breaker.isolate();
      breaker.reset();
      assert.deepEqual(changes.map((c) => `${c.from}>${c.to} ${c.reason}`), [
        'closed>open tripped',
        'open>half-open break-ended',
        'half-open>open probe-failed',
        'open>half-open break-ended',
        'half-open>closed probe-succeeded',
        'closed>isolated isolated',
        'isolated>closed reset',
      ]);
      m = await retryMetrics();
      const counts = transitionCounts(m);
      assert.deepEqual(counts, { 'half-open': 2, open: 1, closed: 2, isolated: 1 });
      assert.deepEqual(transitionCounts(m), countStates(changes.slice(1)), 'one point per change, by the state entered');
      if (!fallback) {
        assert.equal(published.length, changes.length, 'each change published once on retry-wasm:breaker');
        for (const [i, c] of changes.entries()) assert.deepEqual({ ...published[i] }, { ...c }, `change ${i + 1} on the channel is the onStateChange object`);
      }
      breaker.free();
      return `refused attempt error.type CircuitOpenError, flow retry.reason circuit-open; transitions ${JSON.stringify(countStates(changes))}`;
    } finally {
      if (!fallback) dc.channel('retry-wasm:breaker').unsubscribe(onPublish);
      stop();
    }
  });

  await test('CircuitBreaker: a retryFetch call refused before any request', async () => {
    const stop = instrumentRetries();
    try {
      exporter.reset();
      await retryMetrics();
      const breaker = new CircuitBreaker();
      // One circuit per origin: isolating this server's refuses its requests only.
      breaker.isolate(server.base);
      const api = retryFetch({ breaker, baseWait: 1, maxAttempts: 3 });
      const [err, caller] = await underCaller(() => api(server.url('/ok?id=refused')).then(() => null, (e) => e));
      assert.ok(err instanceof CircuitOpenError, `rejected with ${err}`);
      assert.equal(err.key, server.base);
      assert.equal(err.retryAfter, Infinity);
      assert.equal(server.count('refused'), 0, 'no request was sent');
      const spans = exporter.getFinishedSpans();
      assert.equal(undiciSpans(spans).length, 0, 'no HTTP span');
      const { flow, attempts } = checkFlowSpans(spans, caller, { name: 'retry', attempts: 1, http: false });
      assert.equal(flow.attributes['retry.reason'], 'circuit-open');
      checkFailed(flow, 'CircuitOpenError');
      checkFailed(attempts[0], 'CircuitOpenError');
      const m = await retryMetrics();
      assert.deepEqual(transitionCounts(m), { isolated: 1 });
      assert.deepEqual(attemptCounts(m), { failure: 1 });
      breaker.free();
      return 'isolated origin: 1 attempt span, error.type CircuitOpenError, no request, no HTTP span';
    } finally {
      stop();
    }
  });

  await test('CircuitBreaker: a subscriber on retry-wasm:breaker that throws fails nothing', async () => {
    // The host reports a throwing subscriber as its own uncaught error (Node
    // on the next tick; the own channels on a timer): caught here, and
    // nothing of the flow, the breaker or the metric may change for it.
    const boom = new Error('a breaker subscriber that throws');
    const subscriber = () => {
      throw boom;
    };
    const uncaught = [];
    const onUncaught = (e) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    const stop = instrumentRetries();
    const channel = breakerChannel();
    channel.subscribe(subscriber);
    try {
      await retryMetrics();
      const changes = [];
      const breaker = new CircuitBreaker({ consecutiveFailures: 1, breakDuration: 20, onStateChange: (c) => changes.push(c.to) });
      let n = 0;
      // Fails, trips the circuit, is refused (its wait is the break), then probes and succeeds.
      const r = new AsyncRetryer(async () => {
        if (++n === 1) throw new Error('once');
        return 'through';
      }, { breaker, maxAttempts: 4, baseWait: 1 });
      assert.equal(await r.execute(), 'through');
      assert.equal(n, 2, 'the function ran twice: the refused attempt in between called nothing');
      assert.deepEqual(changes, ['open', 'half-open', 'closed']);
      assert.equal(breaker.state(), 'closed');
      assert.deepEqual(transitionCounts(await retryMetrics()), { open: 1, 'half-open': 1, closed: 1 }, 'otel still counted every change');
      await sleep(20);
      assert.ok(uncaught.length === changes.length && uncaught.every((e) => e === boom), `the subscriber's throw is the host's uncaught error, once per change (got ${uncaught.length})`);
      breaker.free();
      return `the flow resolved through trip, refusal and probe; ${uncaught.length} uncaught subscriber errors, 3 transitions counted`;
    } finally {
      channel.unsubscribe(subscriber);
      stop();
      await sleep(10);
      process.off('uncaughtException', onUncaught);
    }
  });

  await test('explicit providers: spans and metrics go there only', async () => {
    const exporter2 = new InMemorySpanExporter();
    const tracerProvider2 = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter2)] });
    const reader2 = new DeltaReader();
    const meterProvider2 = new MeterProvider({ readers: [reader2] });
    const stop = instrumentRetries({ tracerProvider: tracerProvider2, meterProvider: meterProvider2 });
    try {
      exporter.reset();
      await retryMetrics();
      const r = new AsyncRetryer(async () => 'v', { key: 'explicit' });
      assert.equal(await r.execute(), 'v');
      assert.deepEqual(ours(exporter2.getFinishedSpans()).map((s) => s.name).sort(), ['retry attempt 1', 'retry explicit']);
      assert.deepEqual(ours(exporter.getFinishedSpans()), [], 'nothing on the global provider');
      assert.deepEqual(attemptCounts(await retryMetrics(reader2)), { success: 1 });
      const global = await retryMetrics();
      assert.ok(!global['retry.attempts']?.dataPoints.length, 'nothing on the global meter provider');
      return 'the given providers only';
    } finally {
      stop();
      await tracerProvider2.shutdown();
      await meterProvider2.shutdown();
    }
  });

  await test('stop(): unsubscribes, ends what is open, records nothing after', async () => {
    const stop = instrumentRetries();
    exporter.reset();
    await retryMetrics();
    const r = new AsyncRetryer(async () => {
      const res = await fetch(server.url('/slow?id=stop&ms=150'), { signal: r.getAbortSignal() });
      return res.text();
    }, { key: 'stopped' });
    const p = r.execute();
    await sleep(40);
    stop();
    stop();
    assert.ok(noSubscribers(), 'no subscriber and no store left on the channels');
    const open = ours(exporter.getFinishedSpans());
    assert.deepEqual(open.map((s) => s.name).sort(), ['retry attempt 1', 'retry stopped'], 'the running flow and attempt spans ended at stop()');
    assert.equal(open.find((s) => s.name === 'retry attempt 1').attributes['retry.aborted'], true);
    assert.equal(await p, 'slow');
    const r2 = new AsyncRetryer(async () => 'after', { key: 'after' });
    assert.equal(await r2.execute(), 'after');
    await sleep(20);
    assert.equal(ours(exporter.getFinishedSpans()).length, 2, 'nothing recorded after stop()');
    return 'spans of the running flow ended, no subscriber left';
  });

  await test('no subscriber after every stop(): nothing breaks', async () => {
    assert.ok(noSubscribers());
    const res = await retryFetch({ baseWait: 1 })(server.url('/flaky?id=quiet-end&fail=1'));
    assert.equal(res.status, 200);
    await res.text();
    exporter.reset();
    return 'retryFetch retried and resolved';
  });
}

// ── run ────────────────────────────────────────────────────────────────
console.log(`otel stage${fallback ? ' (no host diagnostics_channel: the otel entry installs its own)' : ''}; retry-wasm ${VERSION}, Node ${process.versions.node}`);
if (fallback) {
  // The browser path needs the main entry to export useDiagnosticsChannel.
  await test("own channels: retry-wasm's entry exports useDiagnosticsChannel", async () => {
    assert.equal(typeof (await import('retry-wasm')).useDiagnosticsChannel, 'function', 'for Node: js/node.js');
    return 'a function';
  });
  await otelCases();
  await test('fallback: the host channels were not used', async () => {
    const stop = instrumentRetries();
    try {
      assert.ok(noSubscribers(), "Node's channels have no subscriber: the otel entry subscribed to its own");
    } finally {
      stop();
    }
  });
} else {
  await channelCases();
  await otelCases();
}

undici.disable();
contextManager.disable();
await server.close();
await tracerProvider.shutdown();
await meterProvider.shutdown();

if (treeShown && !fallback) console.log(`\nThe span tree of the retryFetch call meeting 503, 503, 200:\n\n${treeShown}\n`);
const count = (s) => results.filter((r) => r.status === s).length;
console.log(`\notel${fallback ? ' (own channels)' : ''}: ${count('pass')} passed, ${count('fail')} failed`);
process.exitCode = count('fail') ? 1 : 0;
