// Per-call cases, run in ONE process with interleaved rounds.
//
// For each library the case builds one reusable wrapper (`adapter.wrap`) and
// awaits it sequentially, n times per sample; a sample's figure is elapsed
// ns / n. Every library is first warmed up (JIT) and calibrated so that a
// sample lasts about `sampleMs`. Then, for `rounds` rounds, every library
// takes one sample, in an order rotated by one each round (round-robin), with
// a minor (young-generation) gc before each sample, so no sample inherits
// another library's garbage. (Not a full gc(): a forced full GC shrinks the
// heap and flushes code, and measurably slows the next sample down, 2-6x for
// some peers.) The reported figure is the median of the rounds; p25/p75 show
// the noise; the raw per-round samples are kept so that ratios can be taken
// per round (paired) as well.
//
// Each library gets its own copy of the timing loop (compiled from source),
// so one library's promise shapes do not pollute the inline caches another
// library is measured through.

import { summarize } from '../lib/stats.mjs';

const AsyncFunction = (async () => {}).constructor;
const LOOP_SRC = `
  let r;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) r = await call();
  const t1 = process.hrtime.bigint();
  return [Number(t1 - t0), r];
`;
const makeLoop = () => new AsyncFunction('call', 'n', LOOP_SRC);

const RESULT = 42;
// One shared, preallocated error: every library rejects with the same object,
// so no case pays for `new Error` (stack capture) inside the timed loop.
// A plain Error, because p-retry does not retry TypeErrors.
const TRANSIENT = new Error('transient failure (bench)');

export const PER_CALL_CASES = {
  success: {
    title: 'success path: ns per successful call',
    policy: { attempts: 3, waitMs: 0, failures: 0 },
    attemptsPerCall: 1,
    makeFn() {
      const counter = { attempts: 0 };
      const fn = async () => {
        counter.attempts++;
        return RESULT;
      };
      return { fn, counter };
    },
  },
  'fail-once': {
    title: 'fail once then succeed, 0 ms wait: ns per call',
    policy: { attempts: 3, waitMs: 0, failures: 1 },
    attemptsPerCall: 2,
    makeFn() {
      const counter = { attempts: 0 };
      // Odd attempts fail, even ones succeed: with exactly two attempts per
      // call, the first attempt of every call fails and the second succeeds.
      const fn = async () => {
        if ((counter.attempts++ & 1) === 0) throw TRANSIENT;
        return RESULT;
      };
      return { fn, counter };
    },
  },
};

function gcNow() {
  if (typeof globalThis.gc === 'function') globalThis.gc({ type: 'minor' });
}

/**
 * Runs one per-call case against `adapters`.
 * Returns { [adapterId]: { median, p25, p75, min, max, n, callsPerSample,
 *           timerBound, attemptsPerCall } } with figures in ns per call,
 * plus { errors: { [adapterId]: message } } for adapters that misbehaved.
 */
export async function runPerCallCase(caseId, adapters, { rounds = 15, sampleMs = 30, warmupMs = 150, log = () => {} } = {}) {
  const def = PER_CALL_CASES[caseId];
  const entries = [];
  const errors = {};

  // Build, verify and calibrate each library.
  for (const adapter of adapters) {
    const { fn, counter } = def.makeFn();
    let call;
    try {
      call = adapter.wrap(fn, def.policy);
      const loop = makeLoop();
      // Correctness first: one call returns RESULT after the expected attempts.
      counter.attempts = 0;
      let timer;
      const hang = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('first call did not settle within 5 s')), 5000);
      });
      const [, r] = await Promise.race([loop(call, 1), hang]).finally(() => clearTimeout(timer));
      if (r !== RESULT) throw new Error(`returned ${String(r)} instead of ${RESULT}`);
      if (counter.attempts !== def.attemptsPerCall) {
        throw new Error(`made ${counter.attempts} attempts per call instead of ${def.attemptsPerCall}`);
      }
      // Warm-up and calibration.
      let n = 16;
      let nsPerCall = 0;
      const until = performance.now() + warmupMs;
      for (;;) {
        counter.attempts = 0;
        const [ns, r2] = await loop(call, n);
        if (r2 !== RESULT) throw new Error(`returned ${String(r2)} during warm-up`);
        if (counter.attempts !== n * def.attemptsPerCall) {
          throw new Error(`made ${counter.attempts / n} attempts per call instead of ${def.attemptsPerCall}`);
        }
        nsPerCall = ns / n;
        if (performance.now() >= until) break;
        if (ns < 20e6) n *= 2;
      }
      const callsPerSample = Math.max(16, Math.min(1e6, Math.round((sampleMs * 1e6) / nsPerCall)));
      entries.push({ adapter, call, loop, counter, callsPerSample, samples: [] });
    } catch (e) {
      errors[adapter.id] = String((e && e.message) || e);
      log(`  ! ${adapter.label}: ${errors[adapter.id]} (skipped)`);
    }
  }

  // Interleaved rounds, rotated order.
  for (let round = 0; round < rounds; round++) {
    for (let j = 0; j < entries.length; j++) {
      const e = entries[(j + round) % entries.length];
      if (e.failed) continue;
      gcNow();
      try {
        const [ns, r] = await e.loop(e.call, e.callsPerSample);
        if (r !== RESULT) throw new Error(`returned ${String(r)} instead of ${RESULT}`);
        e.samples.push(ns / e.callsPerSample);
      } catch (err) {
        e.failed = true;
        errors[e.adapter.id] = String((err && err.message) || err);
        log(`  ! ${e.adapter.label}: ${errors[e.adapter.id]} (dropped)`);
      }
    }
  }

  const out = {};
  for (const e of entries) {
    if (e.failed) continue;
    const s = summarize(e.samples);
    out[e.adapter.id] = {
      ...s,
      samples: e.samples,
      callsPerSample: e.callsPerSample,
      attemptsPerCall: def.attemptsPerCall,
      // A library that arms a timer for a 0 ms wait is held to Node's 1 ms
      // floor; flagged from its source (peers) or from the figure itself.
      timerBound: def.policy.failures > 0 && (e.adapter.zeroWaitTimer || s.median > 500_000),
    };
  }
  return { results: out, errors };
}
