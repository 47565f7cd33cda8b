// Leak test 7: a retryer nobody references is collected, whatever its flow
// went through (SPEC §1 rule 12). For each kind of flow, 2,000 retryers are
// made, run and dropped, each watched by a FinalizationRegistry made in
// that kind's own function scope (objects made in a top-level loop of a
// module with top-level await were never collected in a probe); after gc
// every one must have been finalized, and JS heap + wasm memory must have
// grown by under LIMIT over the kind.
//
// Kinds: success; a failure retried at 0 ms; a failure waited 1 ms with
// jitter, callbacks and an outside signal; attempts run out (a rejection);
// shouldRetry says no; the outside signal aborts during the wait; an inner
// retryer failing once inside an outer's attempt (both counted); an attempt
// timeout; abort() during the attempt; hedged attempts (a winner and its
// cancelled losers, all failing, a timeout, abort()); asyncRetry
// one-shots; retryFetch calls against a local server (each call's
// retryer, reached through its callbacks); retryFetch calls under one
// caller signal that outlives them all, with a beforeRetry hook, their
// responses never read; callbacks that throw, re-enter (abort,
// execute, setOptions, reset) or keep a reference to their retryer; and
// circuit breakers (SPEC §2e rule 7): retryers sharing one breaker through
// success, failures that trip it, refused attempts, probes held, cancelled,
// failed and passed, and isolate; a breaker whose onStateChange and
// breakDuration close over the breaker itself (what the engine keeps to
// call them must not keep the breaker); and retryFetch calls
// through a breaker that trips on a 503 and closes on the probe's 200. Each
// of those breakers is watched as well: one nobody references is collected.
//
// An Error thrown by the wrapped function matters here: V8 keeps the frames
// it was thrown from, receiver included (the retryer), until its stack is
// read, so a library that keeps the error where the collector cannot see
// the cycle keeps the retryer forever.
import { AsyncRetryer, CircuitBreaker, CircuitOpenError, asyncRetry, retryFetch } from 'retry-wasm/fetch';
import { MB, check, flakyServer, fmtDelta, report, settle, snapshot } from './lib.mjs';

const N = Number(process.env.LEAKS_COLLECTED ?? 2_000);
const LIMIT = 1 * MB;
const WARMUP = 200;
// The measured loop collects every GC_EVERY runs. Without it, what is alive
// at the peak is up to the collector: a CI run on Node 24 held enough dead
// breakers and retryers at once to grow wasm memory by 2.4 MB past the
// warm-up's mark (the same case reads +0 B here, run after run). Memory the
// engine kept would still show: it grows with N, collected or not.
const GC_EVERY = 250;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const HOUR = 3_600_000;
/** The caller's signal of the long-lived-signal kind, never aborted. */
const LONG_LIVED = new AbortController();


/**
 * The kinds: each `run(watch, i)` makes its retryer(s), hands each to
 * `watch`, runs the flow and checks its outcome. Every object handed to
 * `watch` must be collected.
 */
const KINDS = [
  {
    name: 'succeeds',
    async run(watch) {
      const r = watch(new AsyncRetryer(async () => 42));
      check((await r.execute()) === 42, 'success did not resolve 42');
    },
  },
  {
    name: 'fails once, retries at 0 ms and succeeds',
    async run(watch) {
      let k = 0;
      const r = watch(new AsyncRetryer(async () => { if (k++ === 0) throw new Error('once'); return 1; }, { baseWait: 0 }));
      check((await r.execute()) === 1, 'the retry did not succeed');
    },
  },
  {
    name: 'fails once, waits 1 ms with jitter, callbacks and an outside signal',
    async run(watch) {
      let k = 0;
      const ac = new AbortController();
      const seen = [];
      const r = watch(
        new AsyncRetryer(async () => { if (k++ === 0) throw new Error('once'); return 1; }, {
          baseWait: 1,
          jitter: 0.5,
          signal: ac.signal,
          onRetry: (attempt, error, me) => seen.push(me.store.state.status),
          onError: (error) => seen.push(error.message),
          onSuccess: (result, args, me) => seen.push(me.store.state.executionCount),
          onSettled: () => seen.push('settled'),
        }),
      );
      check((await r.execute()) === 1, 'the retry did not succeed');
      check(seen.includes('once') && seen.includes(1), `callbacks saw ${JSON.stringify(seen)}`);
    },
  },
  {
    name: 'runs out of attempts (the promise rejects)',
    async run(watch) {
      const r = watch(new AsyncRetryer(async () => { throw new Error('down'); }, { maxAttempts: 2, baseWait: 0 }));
      const e = await r.execute().then(() => null, (err) => err);
      check(e?.message === 'down', 'the flow did not reject with its error');
    },
  },
  {
    name: 'fails, shouldRetry says no',
    async run(watch) {
      let calls = 0;
      const r = watch(new AsyncRetryer(async () => { calls++; throw new Error('fatal'); }, { baseWait: 0, throwOnError: false, shouldRetry: () => false }));
      check((await r.execute()) === undefined && calls === 1, 'shouldRetry false did not end the flow');
    },
  },
  {
    name: 'an outside signal aborts it during the wait',
    async run(watch) {
      const ac = new AbortController();
      const r = watch(new AsyncRetryer(async () => { throw new Error('down'); }, { baseWait: 60_000, signal: ac.signal }));
      const p = r.execute();
      await sleep(0);
      ac.abort();
      check((await p) === undefined, 'the aborted flow did not resolve undefined');
    },
  },
  {
    name: 'an inner retryer fails once inside an outer attempt',
    async run(watch) {
      let k = 0;
      const inner = watch(new AsyncRetryer(async () => { if (k++ === 0) throw new Error('inner once'); return 'in'; }, { baseWait: 0 }));
      const outer = watch(new AsyncRetryer(async () => `out:${await inner.execute()}`, { baseWait: 0 }));
      check((await outer.execute()) === 'out:in', 'the nested flows did not succeed');
    },
  },
  {
    name: 'times out (maxExecutionTime)',
    async run(watch) {
      const r = watch(new AsyncRetryer(() => new Promise(() => {}), { maxExecutionTime: 1, throwOnError: false }));
      check((await r.execute()) === undefined, 'the timed-out flow did not resolve undefined');
    },
  },
  {
    name: 'abort() during the attempt',
    async run(watch) {
      const r = watch(new AsyncRetryer(() => new Promise(() => {})));
      const p = r.execute();
      r.abort();
      check((await p) === undefined, 'the aborted flow did not resolve undefined');
    },
  },
  {
    name: 'hedged attempts (a later one wins, all fail, one times out, abort())',
    async run(watch, i) {
      const mode = i % 4;
      let k = 0;
      let r;
      r = watch(
        new AsyncRetryer(
          () => {
            const n = ++k;
            // Each attempt takes its own signal and listens on it.
            r.getAbortSignal()?.addEventListener('abort', () => {});
            if (mode === 1) return Promise.reject(new Error(`down ${n}`));
            if (mode === 3 || n === 1) return new Promise(() => {});
            return Promise.resolve(n);
          },
          {
            // Mode 2: attempt 1 times out at 2 ms, before its hedge time,
            // and attempt 2 starts at once.
            hedge: mode === 2 ? 5 : 0,
            maxAttempts: 3,
            maxExecutionTime: mode === 2 ? 2 : undefined,
            throwOnError: false,
            onHedge: (info, me) => me.store.state.currentAttempt,
          },
        ),
      );
      const p = r.execute(i);
      if (mode === 3) r.abort();
      const v = await p;
      check(mode === 0 || mode === 2 ? v === 2 : v === undefined, `hedged mode ${mode} resolved ${v}`);
    },
  },
  {
    name: 'asyncRetry one-shots (the function it returns)',
    async run(watch) {
      let k = 0;
      const f = watch(asyncRetry(async (x) => { if (k++ === 0) throw new Error('once'); return x; }, { baseWait: 0 }));
      check((await f(7)) === 7, 'asyncRetry did not resolve its argument');
    },
  },
  {
    name: 'retryFetch calls (each call, its retryer and the function)',
    // Node's own fetch grows ~2.5 MB over its first couple of thousand
    // requests (measured with plain fetch() to the same server), then
    // stays flat: that is not ours to count.
    warmup: 4_000,
    async run(watch, i, server) {
      let call = null;
      const f = watch(retryFetch({ baseWait: 0, onRetry: (attempt, error, me) => { call = me; } }));
      const response = await f(server.url);
      check(response.status === 200 && (await response.text()) === 'ok', `call ${i} got ${response.status}`);
      check(call !== null, 'the call did not retry');
      watch(call);
    },
  },
  {
    name: 'retryFetch calls under one long-lived caller signal, with beforeRetry, responses left unread',
    warmup: 4_000,
    async run(watch, i, server) {
      let call = null;
      const f = watch(retryFetch({ baseWait: 0, beforeRetry: (request, info) => { call = info; } }));
      // Every attempt's signal follows the caller's: a
      // signal that outlives every call must not keep any of them.
      const response = await f(server.url, { signal: LONG_LIVED.signal });
      check(response.status === 200, `call ${i} got ${response.status}`);
      check(call !== null, 'the call did not retry');
      watch(call.error);
      // Never read: collected with its body all the same.
      watch(response);
    },
  },
  {
    name: 'retryers sharing a CircuitBreaker: success, trip, refusals, probes held/cancelled/failed/passed, isolate',
    // Its warm-up runs no gc, so it brings the engine's memory to a
    // high-water mark (~2 MB) that the measured loop, collected every
    // GC_EVERY runs, stays under.
    warmup: 4_000,
    async run(watch, i) {
      const probes = 1 + (i % 2);
      // Read at every opening: an hour keeps the circuit open (refusals
      // are certain), 0 lets the next attempt be a probe at once.
      let pause = HOUR;
      const changes = [];
      const breaker = watch(
        new CircuitBreaker({ consecutiveFailures: 2, halfOpenCalls: probes, breakDuration: () => pause, onStateChange: (c) => changes.push(c.reason) }),
      );
      const opts = { breaker, baseWait: 0, throwOnError: false };
      const failing = (maxAttempts, more) => watch(new AsyncRetryer(async () => { throw new Error('down'); }, { ...opts, maxAttempts, ...more }));
      check((await watch(new AsyncRetryer(async () => 42, opts)).execute()) === 42, 'a closed circuit did not let the call through');

      // Two failures trip it; the third attempt is refused, no attempt is left.
      let gaveUp;
      check((await failing(3, { onGiveUp: (e, reason) => { gaveUp = reason; } }).execute()) === undefined, 'the tripping flow did not resolve undefined');
      check(gaveUp === 'circuit-open' && breaker.state() === 'open', `tripped: gave up '${gaveUp}', circuit ${breaker.state()}`);
      // A one-shot refused outright: an hour's wait would cross its deadline.
      let called = false;
      const refused = await watch(asyncRetry(async () => { called = true; }, { breaker, maxAttempts: 5, maxTotalExecutionTime: 1_000 }))().then(() => null, (e) => e);
      check(refused instanceof CircuitOpenError && refused.retryAfter > 0 && !called, `the refused one-shot: ${refused}, called ${called}`);

      // Probes: the break is 0 now, so the next attempt is one.
      breaker.reset();
      pause = 0;
      await failing(2).execute();
      check(breaker.state() === 'half-open', `after the second trip: ${breaker.state()}`);
      let open;
      const gate = new Promise((r) => { open = r; });
      const held = Array.from({ length: probes }, () => watch(new AsyncRetryer(async () => { await gate; return 'late'; }, opts)));
      const running = held.map((r) => r.execute());
      // Every probe is out: one more attempt is refused (twice) and gives up.
      let extra = 0;
      check((await watch(new AsyncRetryer(async () => { extra++; }, { ...opts, maxAttempts: 2 })).execute()) === undefined && extra === 0, 'an attempt beyond halfOpenCalls was let through');
      // A cancelled probe gives its permit back; the probe that takes it fails and reopens the circuit.
      held[0].abort();
      await failing(1).execute();
      // The held probes were let through before that opening: their success changes nothing.
      open();
      await Promise.all(running);
      check(breaker.state() === 'half-open', `held probes that ended after a reopening moved the circuit to ${breaker.state()}`);
      const passing = Array.from({ length: probes }, () => watch(new AsyncRetryer(async () => 'up', opts)).execute());
      check((await Promise.all(passing)).every((v) => v === 'up') && breaker.state() === 'closed', `the passing probes left the circuit ${breaker.state()}`);

      // Isolated: refused with an Infinity hint, given up at once.
      breaker.isolate();
      gaveUp = undefined;
      const isolated = watch(new AsyncRetryer(async () => { called = true; }, { ...opts, maxAttempts: 5, onGiveUp: (e, reason) => { gaveUp = e; } }));
      check((await isolated.execute()) === undefined && gaveUp?.retryAfter === Infinity && !called, 'the isolated circuit let the call through');
      breaker.reset();
      const snap = breaker.snapshot();
      check(snap['']?.state === 'closed' && snap[''].calls === 0 && changes.includes('probe-succeeded'), `snapshot ${JSON.stringify(snap)}, changes ${changes}`);
    },
  },
  {
    name: 'a CircuitBreaker whose onStateChange and breakDuration close over it',
    warmup: 2_000,
    async run(watch, i) {
      const seen = [];
      // The functions reach the breaker through their closure, the way
      // user code does, and the listener also through its second argument.
      const breaker = watch(
        new CircuitBreaker({
          consecutiveFailures: 1,
          breakDuration: () => (i % 2 ? breaker.state() && HOUR : HOUR),
          onStateChange: (change, me) => seen.push(`${change.to}:${me === breaker}:${breaker.state(change.key)}`),
        }),
      );
      const r = watch(new AsyncRetryer(async () => { throw new Error('x'); }, { breaker, maxAttempts: 2, baseWait: 0, throwOnError: false }));
      check((await r.execute()) === undefined, 'the failing flow did not resolve undefined');
      breaker.isolate();
      breaker.reset();
      check(seen.join() === 'open:true:open,isolated:true:isolated,closed:true:closed', `the listener saw ${seen}`);
    },
  },
  {
    name: 'retryFetch calls through a CircuitBreaker: a 503 trips it, a refusal waits, the probe 200 closes it',
    warmup: 2_000,
    note: 'attempts refused',
    async run(watch, i, server) {
      // 3 ms: the retry after the 503 comes well inside the break, is
      // refused and waits for it (an attempt within 1 ms of its end counts
      // as after it).
      const breaker = watch(new CircuitBreaker({ consecutiveFailures: 1, breakDuration: 3 }));
      let call = null;
      let refusals = 0;
      const f = watch(
        retryFetch({
          breaker,
          baseWait: 0,
          // Room for a refusal more, should a timer fire early.
          maxAttempts: 6,
          onRetry: (attempt, error, me) => { call = me; },
          onError: (error) => { if (error instanceof CircuitOpenError) refusals++; },
        }),
      );
      const response = await f(server.url);
      check(response.status === 200 && (await response.text()) === 'ok', `call ${i} got ${response.status}`);
      check(call !== null && breaker.state(new URL(server.url).origin) === 'closed', 'the call did not retry, or left its circuit open');
      watch(call);
      if (i % 2) {
        // An isolated origin: refused before any request, rejected at once.
        breaker.isolate(new URL(server.url).origin);
        const e = await f(server.url).then(() => null, (err) => err);
        check(e instanceof CircuitOpenError && e.retryAfter === Infinity, `the isolated origin's call ended with ${e}`);
      }
      return refusals;
    },
  },
  {
    name: 'callbacks that throw, re-enter or keep their retryer',
    async run(watch, i) {
      let k = 0;
      let again = true;
      const kept = [];
      const mode = i % 4;
      const r = watch(
        new AsyncRetryer(async () => { if (k++ === 0) throw new Error('once'); return 'ok'; }, {
          baseWait: 0,
          onRetry: (attempt, error, me) => {
            kept.push(me, error);
            if (mode === 0) throw new Error('onRetry threw');
            if (mode === 1) me.setOptions({ baseWait: 0, onSuccess: () => me.reset() });
          },
          onSuccess: (result, args, me) => {
            if (mode === 2) me.abort();
            if (mode === 3 && again) {
              again = false;
              void me.execute().catch(() => {});
            }
          },
        }),
      );
      // A subscriber that closes over its retryer.
      r.store.subscribe(() => kept.push(r.store.state));
      const outcome = await r.execute().then((v) => v, (e) => e);
      check(mode !== 0 || outcome?.message === 'onRetry threw', 'the throwing callback did not reject the flow');
      if (mode === 3) await sleep(0);
    },
  },
];

/** Runs one kind `N` times; returns its figures. */
async function kind(k, server) {
  let finalized = 0;
  let watched = 0;
  // Made here, in this function's scope, as are the retryers.
  const registry = new FinalizationRegistry(() => finalized++);
  const watch = (object) => {
    registry.register(object, undefined);
    watched++;
    return object;
  };
  await settle();
  const before = snapshot();
  const t0 = performance.now();
  // A kind may return a count of its own (see `note`), summed here.
  let noted = 0;
  for (let i = 0; i < N; i++) {
    noted += (await k.run(watch, i, server)) ?? 0;
    if ((i + 1) % GC_EVERY === 0) await settle(1);
  }
  await settle(10);
  // Finalizers run in tasks of their own after the collection.
  for (let i = 0; i < 20 && finalized < watched; i++) await settle(2);
  const after = snapshot();
  return {
    name: k.name,
    watched,
    finalized,
    delta: after.total - before.total,
    heapDelta: after.heap - before.heap,
    wasmDelta: after.wasm - before.wasm,
    secs: Number(((performance.now() - t0) / 1000).toFixed(2)),
    ...(k.note ? { note: `${k.note}: ${noted}` } : {}),
  };
}

const server = await flakyServer();
const results = [];
try {
  // A warm-up of every kind, so first-use allocations (the engine's pages,
  // Node's fetch and its connection pool) are not counted.
  for (const k of KINDS) for (let i = 0; i < (k.warmup ?? WARMUP); i++) await k.run((o) => o, i, server);
  for (const k of KINDS) {
    const r = await kind(k, server);
    results.push(r);
    const ok = r.finalized === r.watched && r.delta < LIMIT;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${r.name}: ${r.finalized}/${r.watched} collected, ${fmtDelta(r.delta)} (heap ${fmtDelta(r.heapDelta)}, wasm +${r.wasmDelta} B), ${r.secs} s${r.note ? `; ${r.note}` : ''}`);
  }
} finally {
  await server.close();
}
const bad = results.filter((r) => r.finalized !== r.watched || r.delta >= LIMIT);
report(
  `dropped retryers are collected, every kind of flow (${N.toLocaleString('en-US')} each)`,
  bad.length === 0,
  { kinds: results },
  bad.length === 0
    ? `${results.length} kinds, every retryer collected, each within +${LIMIT / MB} MB (largest ${fmtDelta(Math.max(...results.map((r) => r.delta)))})`
    : `not collected or over +${LIMIT / MB} MB: ${bad.map((r) => `${r.name} (${r.finalized}/${r.watched}, ${fmtDelta(r.delta)})`).join('; ')}`,
);
