// A chaos run of flows sharing circuit breakers (SPEC §2e rule 7): 400
// flows over three breakers (tripped by consecutive failures, by the ratio
// over a window, with a breakDuration function; 1 to 3 probes), with random
// hedges, attempts that resolve, reject, throw synchronously, reject with an
// AbortError or never settle, retryAfter hints, per-attempt and total
// deadlines, abort(), a new execution or the outside signal at random
// moments, and circuits isolated and reset while flows run. Then, on every
// breaker, probes that never settle are cut off every way a flow can be
// cancelled (abort(), the outside signal, the total deadline, a lost hedge).
//
// Every flow must settle and every attempt that never settles must have its
// signal aborted. No circuit may be left with probes counted as running:
// once its break is over, attempts are let through until it closes (a
// permit a cancelled probe kept would refuse one, and the circuit would
// never close), and after a probe cut off with no other probe done, as many
// attempts at once as it has probes. Then no timer remains and the process
// exits by itself.
import { AsyncRetryer, CircuitBreaker, CircuitOpenError } from 'retry-wasm';
import { HOUR, expect, settled } from './common.mjs';

const t0 = performance.now();
const FLOWS = 400;
let seed = 0x5e7;
/** A number in [0, n), from a fixed sequence (the run is reproducible). */
const rand = (n) => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return (seed >>> 16) % n;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const never = [];
const transitions = new Map();
const count = (change) => transitions.set(change.reason, (transitions.get(change.reason) ?? 0) + 1);

const breakers = [
  { probes: 1, breaker: new CircuitBreaker({ consecutiveFailures: 3, breakDuration: 2, onStateChange: count }) },
  { probes: 3, breaker: new CircuitBreaker({ failureRatio: 0.5, minimumThroughput: 4, samplingDuration: 200, breakDuration: 3, halfOpenCalls: 3, onStateChange: count }) },
  { probes: 2, breaker: new CircuitBreaker({ consecutiveFailures: 2, breakDuration: ({ halfOpenAttempts }) => 1 + (halfOpenAttempts % 4), halfOpenCalls: 2, onStateChange: count }) },
];

/** Attempts that a circuit refused, across the run. */
let refused = 0;
const reasons = new Map();

async function flow(i) {
  // Spread over ~50 ms, so circuits trip, refuse, probe and close while flows come and go.
  await sleep(rand(50));
  const ac = new AbortController();
  const { breaker } = breakers[rand(breakers.length)];
  let calls = 0;
  let r;
  const attempt = async () => {
    calls++;
    const signal = r.getAbortSignal();
    const kind = rand(8);
    if (kind === 0) throw new Error('sync');
    await sleep(rand(4));
    if (kind <= 3) return 'ok';
    if (kind === 4) throw Object.assign(new Error('busy'), { hint: rand(2) ? rand(5) : HOUR });
    if (kind === 5) throw new DOMException('stop', 'AbortError');
    if (kind === 6) throw new Error('down');
    // Never settles: its signal must abort when the flow ends, and its
    // permit go back.
    never.push(signal);
    return new Promise(() => {});
  };
  const hedges = [undefined, 0, 2, HOUR, (n) => n * 2];
  const short = rand(2) === 0;
  r = new AsyncRetryer(attempt, {
    breaker,
    hedge: hedges[rand(hedges.length)],
    maxAttempts: 1 + rand(8),
    baseWait: rand(3),
    maxExecutionTime: rand(3) === 0 ? 4 : HOUR,
    maxTotalExecutionTime: short ? 25 : HOUR,
    retryAfter: rand(2) ? (e) => e?.hint : undefined,
    signal: ac.signal,
    throwOnError: false,
    onError: (e) => {
      if (e instanceof CircuitOpenError) refused++;
    },
    onGiveUp: (e, reason) => reasons.set(reason, (reasons.get(reason) ?? 0) + 1),
    onHedge: () => {},
  });
  const p = r.execute(i);
  // Now and then a circuit is isolated for a few ms while flows run.
  if (rand(40) === 0) {
    breaker.isolate();
    setTimeout(() => breaker.reset(), rand(6));
  }
  const action = rand(4);
  const second = [];
  if (!short || action !== 3) {
    // A flow with 1-hour deadlines is always ended by something.
    await sleep(rand(10));
    if (action === 0 || !short) r.abort();
    else if (action === 1) second.push(r.execute(i));
    else if (action === 2) ac.abort();
  }
  await p;
  await Promise.all(second);
  if (second.length) r.abort();
  return calls;
}

const counts = await Promise.all(Array.from({ length: FLOWS }, (_, i) => flow(i)));
const attempts = counts.reduce((a, b) => a + b, 0);
// The isolations' resets have run by now.
await sleep(10);

/** Waits out the break of `breaker`'s circuit, if it is open. */
async function breakOver(breaker) {
  const s = breaker.snapshot()[''];
  expect(s?.state !== 'isolated', 'a circuit was left isolated after its reset');
  if (s?.state === 'open') await sleep(s.retryAfter + 2);
}

/** One attempt on `breaker`, its function held until `gate` resolves; `through()` says whether it was let through. */
function held(breaker, gate) {
  let through = false;
  const done = new AsyncRetryer(async () => {
    through = true;
    await gate;
    return 'up';
  }, { breaker, maxAttempts: 1, throwOnError: false }).execute();
  return { done, through: () => through };
}

/**
 * `n` attempts at once, each held until all have asked: all must be let
 * through, and when they succeed the circuit must be closed.
 */
async function allLetThrough({ breaker }, n, what) {
  await breakOver(breaker);
  let release;
  const gate = new Promise((r) => { release = r; });
  const flows = Array.from({ length: n }, () => held(breaker, gate));
  // Each permit is asked for in execute(), before it returns.
  const through = flows.filter((f) => f.through()).length;
  release();
  const values = await Promise.all(flows.map((f) => f.done));
  expect(through === n && values.every((v) => v === 'up'), `${what}: ${through} of ${n} attempts at once let through (${values})`);
  expect(breaker.state() === 'closed', `${what}: still ${breaker.state()} after ${n} successful probes`);
}

/**
 * Whatever state the chaos left `breaker`'s circuit in: once its break is
 * over, attempts one after the other are let through, and it closes within
 * `probes` of them. Resolves the state it was found in.
 */
async function closesByProbes({ breaker, probes }) {
  const found = breaker.state();
  await breakOver(breaker);
  for (let n = 0; n < probes && breaker.state() !== 'closed'; n++) {
    const f = held(breaker, undefined);
    const v = await f.done;
    expect(f.through() && v === 'up', `circuit found ${found}: attempt ${n + 1} was refused (${breaker.state()})`);
  }
  expect(breaker.state() === 'closed', `circuit found ${found}: still ${breaker.state()} after ${probes} successful probes`);
  return found;
}

const fail = async () => {
  throw new Error('down');
};

/** Trips `breaker` (failures until it opens) and waits out the break: the next attempt is a probe. */
async function tripped(breaker) {
  for (let n = 0; n < 10 && breaker.state() === 'closed'; n++) {
    await new AsyncRetryer(fail, { breaker, maxAttempts: 1, throwOnError: false }).execute();
  }
  expect(breaker.state() !== 'closed', 'the circuit did not trip');
  await breakOver(breaker);
  expect(breaker.state() === 'half-open', `after the break: ${breaker.state()}`);
}

// What the chaos left: no probe counted as running.
const leftBy = [];
for (const b of breakers) leftBy.push(await closesByProbes(b));

// Then, on each breaker, probes that never settle, each cut off another way.
const cancellations = ['abort()', 'outside signal', 'total deadline', 'new execution', 'lost hedge'];
for (const b of breakers) {
  const { breaker, probes } = b;
  for (const how of cancellations) {
    await tripped(breaker);
    const hanging = async () => {
      never.push(r.getAbortSignal());
      return new Promise(() => {});
    };
    const ac = new AbortController();
    let first = true;
    const fn = how === 'new execution' ? () => (first ? ((first = false), hanging()) : 'second') : how === 'lost hedge' ? () => (first ? ((first = false), hanging()) : 'hedge') : hanging;
    const r = new AsyncRetryer(fn, {
      breaker,
      throwOnError: false,
      signal: ac.signal,
      maxTotalExecutionTime: how === 'total deadline' ? 5 : HOUR,
      // The hedge is a second probe: a circuit with one probe refuses it and
      // the flow waits for the first, which is then aborted.
      hedge: how === 'lost hedge' ? 1 : undefined,
      maxAttempts: 2,
    });
    const p = r.execute();
    await sleep(2);
    if (how === 'abort()') r.abort();
    else if (how === 'outside signal') ac.abort();
    else if (how === 'new execution') expect((await r.execute()) === 'second', 'the new execution did not resolve');
    else if (how === 'lost hedge' && probes === 1) r.abort();
    const v = await p;
    expect(v === undefined || (how === 'lost hedge' && v === 'hedge'), `${how}: resolved ${v}`);
    // A probe that succeeded (the new execution's, the winning hedge's)
    // used up its permit; the cut-off one gave its own back.
    const done = how === 'new execution' || (how === 'lost hedge' && probes > 1) ? 1 : 0;
    if (done === probes) expect(breaker.state() === 'closed', `${how}: ${breaker.state()} after its one probe succeeded`);
    else await allLetThrough(b, probes - done, `${how}, ${probes} probes`);
  }
}

const left = never.filter((s) => s && !s.aborted).length;
expect(left === 0, `${left} attempts that never settle kept an unaborted signal`);
// User code's own sleeps end within a few ms; then no timer may remain.
await sleep(30);
const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
expect(timers === 0, `${timers} timers left after every flow settled`);
const fmt = (m) => [...m].sort().map(([k, v]) => `${k} ${v}`).join(', ');
await settled(
  t0,
  `${FLOWS} flows over ${breakers.length} breakers, ${attempts} attempts called, ${refused} refused, ${never.length} never settling, every one aborted; ` +
    `circuits after the chaos: ${leftBy.join(', ')}, each let all its probes through; probes cut off ${cancellations.length * breakers.length} ways, permits all back; ` +
    `transitions: ${fmt(transitions)}; give-ups: ${fmt(reasons)}`,
);
