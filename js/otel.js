// retry-wasm/otel: OpenTelemetry spans and metrics for every retry flow.
//
// The engine publishes each flow and each attempt on tracing channels (the
// host's `node:diagnostics_channel`: Node, Deno, Bun, workerd); this module
// subscribes to them and turns them into spans and metrics through
// @opentelemetry/api, an optional peer dependency that only this entry
// loads. Where the host has no diagnostics channels (browsers), it makes a
// small implementation of them below and hands it to the engine
// (`useDiagnosticsChannel`). No `node:` import: it bundles for browsers.
//
// The attempt's span is made the active context while the function runs
// (a store bound to the attempt's `start` channel, entered with
// `context.with`), so whatever instrumentation sees the attempt's own I/O
// (undici's HTTP spans, a browser fetch instrumentation) parents it there.
// What is kept per flow or attempt is held by WeakMaps keyed by the
// engine's context objects and retryers: it goes with the flow.
//
// Circuit breakers (SPEC §2e) publish each change of a circuit on
// `channel('retry-wasm:breaker')`; each one is a point of the counter
// `retry.circuit.transitions`, by the state entered.
import { context, diag, metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/** The instrumentation scope: the package's name and version (checked against package.json by the otel stage). */
const SCOPE = 'retry-wasm';
const VERSION = '0.1.0';

/** Abort reasons: a flow that ended with one of these was cut short, not failed ('execution-timeout' is a failure, SPEC §1 rule 10). */
const ABORTED = new Set(['manual', 'new-execution', 'total-timeout', 'signal']);

/** The states a circuit enters (SPEC §2e): anything else on the channel is not recorded as a state. */
const CIRCUIT_STATES = new Set(['closed', 'open', 'half-open', 'isolated']);

/** Bucket bounds of `retry.duration` (s): OpenTelemetry's HTTP duration advice, stretched for flows that wait. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 120];

const EVENTS = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];

const now = () => globalThis.performance?.now?.() ?? Date.now();
const isKey = (v) => (typeof v === 'object' && v !== null) || typeof v === 'function';

/**
 * A minimal `diagnostics_channel` for hosts without one: named channels
 * with subscribers and bound stores, and tracing channels made of five of
 * them, as the engine and this module use them.
 */
function makeChannels() {
  // A subscriber's or transform's error is the host's uncaught error, never the publisher's.
  const report = (e) => setTimeout(() => { throw e; });
  const named = new Map();
  const traces = new Map();
  class Channel {
    constructor(name) {
      this.name = name;
      this.subscribers = [];
      this.stores = new Map();
    }
    get hasSubscribers() {
      return this.subscribers.length > 0 || this.stores.size > 0;
    }
    subscribe(fn) {
      this.subscribers = [...this.subscribers, fn];
    }
    unsubscribe(fn) {
      const i = this.subscribers.indexOf(fn);
      if (i >= 0) this.subscribers = this.subscribers.filter((_, j) => j !== i);
      return i >= 0;
    }
    publish(message) {
      for (const fn of this.subscribers) {
        try {
          fn(message, this.name);
        } catch (e) {
          report(e);
        }
      }
    }
    bindStore(store, transform) {
      this.stores.set(store, transform);
    }
    unbindStore(store) {
      return this.stores.delete(store);
    }
    runStores(message, fn, receiver, ...args) {
      let run = () => {
        this.publish(message);
        return fn.apply(receiver, args);
      };
      for (const [store, transform] of this.stores) {
        const next = run;
        run = () => {
          let value;
          try {
            value = transform ? transform(message) : message;
          } catch (e) {
            report(e);
            return next();
          }
          return store.run(value, next);
        };
      }
      return run();
    }
  }
  const channel = (name) => {
    if (!named.has(name)) named.set(name, new Channel(name));
    return named.get(name);
  };
  const tracingChannel = (name) => {
    if (!traces.has(name)) {
      const t = {
        get hasSubscribers() {
          return EVENTS.some((e) => t[e].hasSubscribers);
        },
        subscribe(handlers) {
          for (const e of EVENTS) if (handlers[e]) t[e].subscribe(handlers[e]);
        },
        unsubscribe(handlers) {
          let all = true;
          for (const e of EVENTS) if (handlers[e]) all = t[e].unsubscribe(handlers[e]) && all;
          return all;
        },
      };
      for (const e of EVENTS) t[e] = channel(`tracing:${name}:${e}`);
      traces.set(name, t);
    }
    return traces.get(name);
  };
  return { channel, tracingChannel };
}

let own;

/**
 * The store to bind to the attempt's `start` so that the attempt's span is
 * OpenTelemetry's active context while the function runs, or undefined.
 * On the host's channels: the very `AsyncLocalStorage` the registered
 * context manager reads `context.active()` from (`AsyncLocalStorageContextManager`,
 * what the Node SDK registers), so the host enters it by its own means
 * (`run`, or `withScope` where Node 26 uses it) and nothing imitates one.
 * On this module's own channels (no host channels: browsers), whose
 * `runStores` is ours, the context manager's `with`.
 */
function contextStore(dc) {
  if (dc === own) return { run: (value, fn) => context.with(value, fn) };
  const AsyncLocalStorage = globalThis.process?.getBuiltinModule?.('node:async_hooks')?.AsyncLocalStorage;
  // `_getContextManager` and `_asyncLocalStorage` are the API's and the
  // context manager's own fields: there is no public way to the store.
  // Whatever is found there is used only if it is a real AsyncLocalStorage.
  let als;
  try {
    als = context._getContextManager?.()?._asyncLocalStorage;
  } catch {
    return undefined;
  }
  return typeof AsyncLocalStorage === 'function' && als instanceof AsyncLocalStorage ? als : undefined;
}

/**
 * Where the engines of this realm meet (js/doorway.js makes it): every
 * opened engine's `useDiagnosticsChannel`, and the channels this module
 * installs, which an engine opened later takes too. So this module sees
 * the flows of whichever engine a page loaded (the lean `retry-wasm`, the
 * full `retry-wasm/fetch`, or both) without importing either.
 */
const MEETING = Symbol.for('retry-wasm.engines');

/** The host's `diagnostics_channel`, or (once per realm) ours, handed to every engine. */
function channels() {
  const host = globalThis.process?.getBuiltinModule?.('node:diagnostics_channel');
  if (host && typeof host.tracingChannel === 'function') return host;
  if (!own) {
    own = makeChannels();
    const meeting = (globalThis[MEETING] ??= { engines: [], channels: undefined });
    meeting.channels = own;
    for (const use of meeting.engines) use(own);
  }
  return own;
}

/** `error.type`: the status of a failing HTTP response (as OpenTelemetry's HTTP conventions), an error's name, else `_OTHER`. */
function errorType(error) {
  if (isKey(error)) {
    const status = error.status ?? error.response?.status;
    if (Number.isInteger(status) && status >= 100 && status <= 599 && isKey(error.response)) return String(status);
    const name = typeof error.name === 'string' && error.name ? error.name : error.constructor?.name;
    if (typeof name === 'string' && name && name !== 'Object') return name;
  }
  return '_OTHER';
}

/** ERROR status, the exception event and `error.type`. */
function fail(span, error) {
  const exception = isKey(error) ? error : String(error);
  span.recordException(exception);
  span.setAttribute('error.type', errorType(error));
  const message = isKey(error) && typeof error.message === 'string' ? error.message : typeof error === 'string' ? error : undefined;
  span.setStatus(message ? { code: SpanStatusCode.ERROR, message } : { code: SpanStatusCode.ERROR });
}

/** A subscriber that never throws into the engine's publish (Node reports a subscriber's throw as uncaught). */
const guard = (fn) => (message) => {
  try {
    fn(message);
  } catch (e) {
    diag.error('retry-wasm/otel: a span or metric could not be recorded', e);
  }
};

/**
 * Records every retry flow as a span with a child span per attempt, the
 * `retry.attempts` counter and `retry.duration` histogram, and every
 * circuit breaker transition in the `retry.circuit.transitions` counter;
 * returns the function that stops it. Without providers, OpenTelemetry's
 * global ones.
 */
export function instrumentRetries({ tracerProvider, meterProvider } = {}) {
  const dc = channels();
  const tracer = (tracerProvider ?? trace).getTracer(SCOPE, VERSION);
  // Made when first used: the metrics API has no proxy, so a meter taken
  // before the SDK registers its global provider would record nothing.
  let instruments;
  const instrument = () => {
    if (instruments) return instruments;
    const meter = (meterProvider ?? metrics).getMeter(SCOPE, VERSION);
    return (instruments = {
      attempts: meter.createCounter('retry.attempts', {
        unit: '{attempt}',
        description: 'Attempts made by retry flows, by how each ended (success, failure, aborted)',
      }),
      duration: meter.createHistogram('retry.duration', {
        unit: 's',
        description: 'Duration of retry flows, from the call to its settling, waits included',
        advice: { explicitBucketBoundaries: BUCKETS },
      }),
      transitions: meter.createCounter('retry.circuit.transitions', {
        unit: '{transition}',
        description: 'Transitions of circuit breakers, by the state each circuit entered',
      }),
    });
  };

  /** execute context -> its flow; retryer -> its running flow (the one its attempts belong to); attempt context -> its attempt. */
  const flows = new WeakMap();
  const running = new WeakMap();
  const attempts = new WeakMap();
  /** The flows not settled yet, weakly, so that stop() can end their spans. */
  const open = new Set();
  let prune = 64;

  /** The attempt's span, made on its first event; none for an attempt of a flow not seen from its start. */
  function attemptOf(ctx) {
    let a = attempts.get(ctx);
    if (a) return a;
    const flow = isKey(ctx.retryer) ? running.get(ctx.retryer) : undefined;
    if (!flow) return undefined;
    const parent = flow.context;
    const n = ctx.attempt;
    const attributes = { 'retry.attempt': n, 'retry.hedged': ctx.hedged === true };
    if ((flow.fetch || ctx.request !== undefined) && n > 1) attributes['http.request.resend_count'] = n - 1;
    const span = tracer.startSpan(`retry attempt ${n}`, { kind: SpanKind.INTERNAL, attributes }, parent);
    a = { span, context: trace.setSpan(parent, span), flow, failed: false, error: undefined, aborted: false, done: false };
    attempts.set(ctx, a);
    flow.attempts.add(a);
    return a;
  }

  function endAttempt(a, aborted) {
    if (a.done) return;
    a.done = true;
    a.flow.attempts.delete(a);
    let outcome = 'success';
    if (aborted) {
      a.span.setAttribute('retry.aborted', true);
      outcome = 'aborted';
    } else if (a.failed) {
      fail(a.span, a.error);
      outcome = 'failure';
    }
    a.span.end();
    instrument().attempts.add(1, { 'retry.outcome': outcome });
  }

  function endFlow(flow, ctx) {
    if (flow.done) return;
    flow.done = true;
    open.delete(flow.ref);
    for (const a of [...flow.attempts]) endAttempt(a, true);
    if (!ctx) return flow.span.end();
    const reason = typeof ctx.reason === 'string' ? ctx.reason : undefined;
    const outcome = reason ? (ABORTED.has(reason) ? 'aborted' : 'failure') : flow.failed ? 'failure' : 'success';
    if (typeof ctx.attempts === 'number') flow.span.setAttribute('retry.attempts', ctx.attempts);
    if (reason) flow.span.setAttribute('retry.reason', reason);
    if (flow.failed) fail(flow.span, ctx.error);
    flow.span.end();
    instrument().duration.record((now() - flow.started) / 1000, reason ? { 'retry.outcome': outcome, 'retry.reason': reason } : { 'retry.outcome': outcome });
  }

  const flowHandlers = {
    start: guard((ctx) => {
      // A context manager registered after instrumentRetries() is found here.
      bindContext();
      const parent = context.active();
      const name = typeof ctx.key === 'string' && ctx.key ? `retry ${ctx.key}` : 'retry';
      const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL }, parent);
      const flow = { span, context: trace.setSpan(parent, span), started: now(), fetch: ctx.request !== undefined, attempts: new Set(), failed: false, done: false, ref: undefined };
      flows.set(ctx, flow);
      if (isKey(ctx.retryer)) running.set(ctx.retryer, flow);
      if (typeof WeakRef === 'function') {
        if (open.size >= prune) {
          for (const ref of open) if (!ref.deref()) open.delete(ref);
          prune = Math.max(64, open.size * 2);
        }
        open.add((flow.ref = new WeakRef(flow)));
      }
    }),
    error: guard((ctx) => {
      const flow = flows.get(ctx);
      if (flow) flow.failed = true;
    }),
    asyncEnd: guard((ctx) => {
      const flow = flows.get(ctx);
      if (!flow) return;
      flows.delete(ctx);
      if (isKey(ctx.retryer) && running.get(ctx.retryer) === flow) running.delete(ctx.retryer);
      endFlow(flow, ctx);
    }),
  };

  const attemptHandlers = {
    // The span is made by the store's transform, which runs before `start`
    // is published; this makes it when no store ran (a `start` published alone).
    start: guard(attemptOf),
    error: guard((ctx) => {
      const a = attempts.get(ctx);
      if (!a) return;
      if (ctx.aborted === true) a.aborted = true;
      else {
        a.failed = true;
        a.error = ctx.error;
      }
    }),
    asyncEnd: guard((ctx) => {
      const a = attempts.get(ctx);
      if (!a) return;
      attempts.delete(ctx);
      endAttempt(a, a.aborted || ctx.aborted === true);
    }),
  };

  const onBackoff = guard((m) => {
    const flow = isKey(m.retryer) ? running.get(m.retryer) : undefined;
    flow?.span.addEvent('retry.backoff', { 'retry.attempt': m.attempt, 'retry.delay': m.delay / 1000 });
  });

  // Only the state entered: the circuit's key is an origin or a caller's
  // own string, unbounded, so it stays out of the metric's attributes.
  const onTransition = guard((m) => {
    const state = isKey(m) ? m.to : undefined;
    if (!CIRCUIT_STATES.has(state)) return;
    instrument().transitions.add(1, { 'retry.circuit.state': state });
  });

  // The attempt's span, active while its function runs: the store bound
  // to the attempt's `start` is the one OpenTelemetry's context lives in,
  // entered by the host as it enters any store (see contextStore).
  let store;
  let warned = false;
  const bindContext = () => {
    if (store || stopped) return;
    store = contextStore(dc);
    if (store) attempt.start.bindStore(store, transform);
    else if (!warned) {
      warned = true;
      diag.warn('retry-wasm/otel: the registered context manager keeps no AsyncLocalStorage; attempt spans are recorded, but are not the active context while the function runs');
    }
  };
  const transform = (ctx) => {
    try {
      return attemptOf(ctx)?.context ?? context.active();
    } catch (e) {
      diag.error('retry-wasm/otel: an attempt span could not be started', e);
      return context.active();
    }
  };

  const execute = dc.tracingChannel('retry-wasm:execute');
  const attempt = dc.tracingChannel('retry-wasm:attempt');
  const backoff = dc.channel('retry-wasm:backoff');
  const breaker = dc.channel('retry-wasm:breaker');
  let stopped = false;
  execute.subscribe(flowHandlers);
  attempt.subscribe(attemptHandlers);
  backoff.subscribe(onBackoff);
  breaker.subscribe(onTransition);
  bindContext();

  return function stop() {
    if (stopped) return;
    stopped = true;
    execute.unsubscribe(flowHandlers);
    attempt.unsubscribe(attemptHandlers);
    if (store) attempt.start.unbindStore(store);
    backoff.unsubscribe(onBackoff);
    breaker.unsubscribe(onTransition);
    // Flows still running are no longer seen: their spans end here.
    for (const ref of open) {
      const flow = ref.deref();
      if (flow) endFlow(flow);
    }
    open.clear();
  };
}
