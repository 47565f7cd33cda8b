// Trace case, one subscriber setup per process:
//   node --expose-gc bench/cases/trace-child.mjs <setup> [--samples=N] [--sample-ms=N]
//                                                [--warmup-ms=N] [--warmup-calls=N]
//
// <setup> is one of TRACE_SETUPS (trace.mjs): it is installed once, before
// anything runs, and stays for the life of the process, as in an app. Then
// the success path of retry-wasm, `asyncRetry(async () => 42, {
// maxAttempts: 3, backoff: 'fixed', baseWait: 0 })` awaited n times per
// sample as in the success case (its own compiled timing loop), after a
// warm-up of at least warmup-ms and warmup-calls (the subscribed paths take
// tens of thousands of calls to reach their speed: the SDK setup's first
// thousand calls ran at 6-10× its figure) and a calibration to ~sample-ms
// per sample; before each sample one
// macrotask turn (as an app doing I/O would have; objects kept for a
// WeakRef are released then) and a minor gc. Prints one JSON line: { id,
// samples: [ns per call...], callsPerSample } or { id, error }.

import dc from 'node:diagnostics_channel';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { emit, opt } from '../lib/child-io.mjs';
import { loadRetryWasm } from '../lib/retry-wasm.mjs';

const args = process.argv.slice(2);
const id = args.find((a) => !a.startsWith('--'));
const fail = (error) => {
  emit({ id, error });
  process.exit(0);
};
if (typeof globalThis.gc !== 'function') fail('run with --expose-gc');

const SAMPLES = opt('samples', 10);
const SAMPLE_MS = opt('sample-ms', 20);
const WARMUP_MS = opt('warmup-ms', 300);
const WARMUP_CALLS = opt('warmup-calls', 50_000);
const RESULT = 42;
const EVENTS = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];

const rw = await loadRetryWasm();
if (!rw.mod) fail(`retry-wasm not available: ${rw.error}`);

const execute = dc.tracingChannel('retry-wasm:execute');
const attempt = dc.tracingChannel('retry-wasm:attempt');
const backoff = dc.channel('retry-wasm:backoff');
const listened = () => execute.hasSubscribers || attempt.hasSubscribers || backoff.hasSubscribers;

/** `retry-wasm/otel` next to the measured entry (from inside the package its own name resolves through its exports), and OpenTelemetry. */
async function loadOtel() {
  try {
    const otel = await import(pathToFileURL(createRequire(rw.path).resolve('retry-wasm/otel')).href);
    const api = await import('@opentelemetry/api');
    const sdk = await import('@opentelemetry/sdk-trace-base');
    return { otel, api, sdk };
  } catch (e) {
    fail(`skipped: retry-wasm/otel or OpenTelemetry did not import: ${String((e && e.message) || e).split('\n')[0]}`);
  }
}

// ---------------------------------------------------------------- the setup
const ended = { spans: null };
if (id === 'channels') {
  const noop = () => {};
  const handlers = Object.fromEntries(EVENTS.map((e) => [e, noop]));
  execute.subscribe(handlers);
  attempt.subscribe(handlers);
  backoff.subscribe(noop);
} else if (id === 'otel-noop') {
  const { otel, api } = await loadOtel();
  otel.instrumentRetries({ tracerProvider: new api.ProxyTracerProvider() });
} else if (id === 'otel-sdk') {
  const { otel, sdk } = await loadOtel();
  ended.spans = 0;
  const counter = {
    onStart() {},
    onEnd() {
      ended.spans++;
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  otel.instrumentRetries({ tracerProvider: new sdk.BasicTracerProvider({ spanProcessors: [counter] }) });
} else if (id !== 'off') {
  fail(`unknown setup ${id}`);
}
if ((id !== 'off') !== listened()) fail(id === 'off' ? 'the channels have subscribers' : 'the setup subscribed to nothing');

// ---------------------------------------------------------------- the loop
const counter = { attempts: 0 };
const call = rw.mod.asyncRetry(
  async () => {
    counter.attempts++;
    return RESULT;
  },
  { maxAttempts: 3, backoff: 'fixed', baseWait: 0 },
);
const AsyncFunction = (async () => {}).constructor;
const loop = new AsyncFunction('call', 'n', `
  let r;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) r = await call();
  const t1 = process.hrtime.bigint();
  return [Number(t1 - t0), r];
`);

/** One timed run of n calls, checked: the result, one attempt per call, and (the SDK setup) a flow span and an attempt span per call. */
async function sample(n) {
  await new Promise((ok) => setImmediate(ok));
  globalThis.gc({ type: 'minor' });
  counter.attempts = 0;
  const spans0 = ended.spans;
  const [ns, r] = await loop(call, n);
  if (r !== RESULT) throw new Error(`returned ${String(r)} instead of ${RESULT}`);
  if (counter.attempts !== n) throw new Error(`made ${counter.attempts / n} attempts per call instead of 1`);
  if (spans0 !== null && ended.spans - spans0 !== 2 * n) throw new Error(`recorded ${(ended.spans - spans0) / n} spans per call instead of 2`);
  return ns;
}

try {
  await sample(1);
  let n = 16;
  let nsPerCall = 0;
  let calls = 0;
  const until = performance.now() + WARMUP_MS;
  for (;;) {
    const ns = await sample(n);
    calls += n;
    nsPerCall = ns / n;
    if (performance.now() >= until && calls >= WARMUP_CALLS) break;
    if (ns < 20e6) n *= 2;
  }
  const callsPerSample = Math.max(16, Math.min(1e6, Math.round((SAMPLE_MS * 1e6) / nsPerCall)));
  const samples = [];
  for (let i = 0; i < SAMPLES; i++) samples.push((await sample(callsPerSample)) / callsPerSample);
  emit({ id, samples, callsPerSample });
} catch (e) {
  fail(String((e && e.message) || e));
}
