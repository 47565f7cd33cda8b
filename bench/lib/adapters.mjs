// One adapter per library (and per API variant where a library has two).
//
// A policy is { attempts, waitMs, failures }: `attempts` counts every attempt
// including the first, `waitMs` is a constant delay between attempts (no
// jitter, no growth), `failures` is how many attempts of each call fail (only
// the direct baseline looks at it). Each adapter translates it into the library's own option names, so
// every library does the same number of attempts with the same waits.
//
//   wrap(fn, policy) -> () => Promise   a reusable wrapper; the per-call cases
//                                       call it sequentially, many times
//   flow(fn, policy) -> Promise         starts one independent flow now; the
//                                       load case starts 10,000 of them at once
//
// `zeroWaitTimer`: the library arms a setTimeout even for a 0 ms wait (Node
// clamps it to >= 1 ms), so its fail-once figure measures the timer, not the
// library. Checked against the installed sources:
//   cockatiel 3.2.1      RetryPolicy.execute always awaits delay(duration) -> setTimeout
//   exponential-backoff  Delay.apply() -> setTimeout(resolve, jitteredDelay), also for 0
//   async-retry 1.3.3    retry's RetryOperation.retry always calls setTimeout(fn, timeout)
//   p-retry 7.1.1        sleeps only `if (finalDelay > 0)`
//   @tanstack/pacer      sleeps only `if (wait > 0)`

import { asyncRetry as pacerAsyncRetry, AsyncRetryer as PacerAsyncRetryer } from '@tanstack/pacer';
import pRetry from 'p-retry';
import { retry as cockatielRetry, handleAll, ConstantBackoff } from 'cockatiel';
import { backOff } from 'exponential-backoff';
import asyncRetryLib from 'async-retry';

function pacerLikeOptions({ attempts, waitMs }) {
  return { maxAttempts: attempts, backoff: 'fixed', baseWait: waitMs, jitter: 0 };
}

/** The five peers, each with the same shape. */
export function peerAdapters() {
  return [
    {
      id: 'cockatiel',
      label: 'cockatiel',
      kind: 'peer',
      zeroWaitTimer: true,
      // cockatiel's maxAttempts counts retries, not attempts.
      policy: ({ attempts, waitMs }) =>
        cockatielRetry(handleAll, { maxAttempts: attempts - 1, backoff: new ConstantBackoff(waitMs) }),
      wrap(fn, p) {
        const policy = this.policy(p);
        return () => policy.execute(fn);
      },
      flowFactory(p) {
        const policy = this.policy(p); // one policy serves any number of flows
        return (fn) => policy.execute(fn);
      },
    },
    {
      id: 'async-retry',
      label: 'async-retry',
      kind: 'peer',
      zeroWaitTimer: true,
      opts: ({ attempts, waitMs }) => ({ retries: attempts - 1, minTimeout: waitMs, maxTimeout: waitMs, factor: 1, randomize: false }),
      wrap(fn, p) {
        const opts = this.opts(p);
        return () => asyncRetryLib(fn, opts); // fn(bail, n) ignores its arguments
      },
      flowFactory(p) {
        const opts = this.opts(p);
        return (fn) => asyncRetryLib(fn, opts);
      },
    },
    {
      id: 'exponential-backoff',
      label: 'exponential-backoff',
      kind: 'peer',
      zeroWaitTimer: true,
      opts: ({ attempts, waitMs }) => ({ numOfAttempts: attempts, startingDelay: waitMs, timeMultiple: 1, jitter: 'none' }),
      wrap(fn, p) {
        const opts = this.opts(p);
        return () => backOff(fn, opts);
      },
      flowFactory(p) {
        const opts = this.opts(p);
        return (fn) => backOff(fn, opts);
      },
    },
    {
      id: 'p-retry',
      label: 'p-retry',
      kind: 'peer',
      zeroWaitTimer: false,
      opts: ({ attempts, waitMs }) => ({ retries: attempts - 1, minTimeout: waitMs, maxTimeout: waitMs, factor: 1, randomize: false }),
      wrap(fn, p) {
        const opts = this.opts(p);
        return () => pRetry(fn, opts); // fn(attemptNumber) ignores its argument
      },
      flowFactory(p) {
        const opts = this.opts(p);
        return (fn) => pRetry(fn, opts);
      },
    },
    {
      id: 'pacer',
      label: '@tanstack/pacer asyncRetry',
      kind: 'peer',
      pacerRef: true,
      zeroWaitTimer: false,
      wrap(fn, p) {
        return pacerAsyncRetry(fn, pacerLikeOptions(p));
      },
      // asyncRetry is bound to ONE retryer: overlapping calls abort each
      // other ('new-execution'), so concurrent flows need one retryer each.
      flowFactory(p) {
        const opts = pacerLikeOptions(p);
        return (fn) => new PacerAsyncRetryer(fn, opts).execute();
      },
    },
    {
      id: 'pacer-retryer',
      label: '@tanstack/pacer AsyncRetryer',
      kind: 'peer',
      pacerRef: true,
      zeroWaitTimer: false,
      perCallOnly: true, // same flow as 'pacer' under load
      wrap(fn, p) {
        const retryer = new PacerAsyncRetryer(fn, pacerLikeOptions(p));
        return () => retryer.execute(); // called as a method, as users do
      },
    },
  ];
}

/** retry-wasm's two API variants, given its module namespace. */
export function retryWasmAdapters(mod) {
  const { asyncRetry, AsyncRetryer } = mod;
  return [
    {
      id: 'retry-wasm',
      label: 'retry-wasm asyncRetry',
      kind: 'retry-wasm',
      vsPacer: 'pacer',
      zeroWaitTimer: false, // measured, not assumed: see the fail-once note
      wrap(fn, p) {
        return asyncRetry(fn, pacerLikeOptions(p));
      },
      flowFactory(p) {
        const opts = pacerLikeOptions(p);
        return (fn) => new AsyncRetryer(fn, opts).execute();
      },
    },
    {
      id: 'retry-wasm-retryer',
      label: 'retry-wasm AsyncRetryer',
      kind: 'retry-wasm',
      vsPacer: 'pacer-retryer',
      zeroWaitTimer: false,
      perCallOnly: true,
      wrap(fn, p) {
        const retryer = new AsyncRetryer(fn, pacerLikeOptions(p));
        return () => retryer.execute(); // called as a method, as users do
      },
    },
  ];
}

/** Direct-call baselines: no library at all. */
export function baselineAdapters() {
  const direct = {
    id: 'direct',
    label: 'direct call (baseline)',
    kind: 'baseline',
    zeroWaitTimer: false,
    perCallOnly: true,
    // A hand-written retry loop with no waits: for the success path it is
    // just `await fn()`; for fail-once it is fn, catch, fn.
    wrap(fn, { attempts, failures = 0 }) {
      if (failures === 0) return fn;
      return async () => {
        for (let i = 1; ; i++) {
          try {
            return await fn();
          } catch (e) {
            if (i >= attempts) throw e;
          }
        }
      };
    },
  };
  const clockFloor = {
    id: 'clock-floor',
    label: 'direct + 2 Date.now() (floor)',
    kind: 'baseline',
    zeroWaitTimer: false,
    perCallOnly: true,
    // The least any library keeping pacer's state can cost: the direct call
    // plus the two clock reads that lastExecutionTime and totalExecutionTime
    // need (retry-wasm reads exactly these two per call).
    wrap(fn, policy) {
      const call = direct.wrap(fn, policy);
      return async () => {
        const started = Date.now();
        const value = await call();
        return Date.now() >= started ? value : undefined;
      };
    },
  };
  const settleFloor = {
    id: 'settle-floor',
    label: 'settlable promise + 2 Date.now() (floor)',
    kind: 'baseline',
    zeroWaitTimer: false,
    perCallOnly: true,
    // The least a library meeting SPEC §1 rules 8 and 11 can cost: its
    // promise must be able to settle before the function's does (abort(), a
    // new execution, the total deadline, which holds even when the function
    // never settles), so it cannot be an async wrapper's own promise or the
    // function's `then`. This is only that promise, settled from one pair of
    // reusable handlers, and the two clock reads: no state, no flow record,
    // no engine, and one flow at a time (enough for a sequential loop).
    wrap(fn, policy) {
      const call = direct.wrap(fn, policy);
      let resolve = null;
      let reject = null;
      let started = 0;
      const keep = (res, rej) => {
        resolve = res;
        reject = rej;
      };
      const ok = (value) => resolve(Date.now() >= started ? value : undefined);
      const fail = (error) => reject(error);
      return () => {
        const promise = new Promise(keep);
        started = Date.now();
        call().then(ok, fail);
        return promise;
      };
    },
  };
  return [direct, clockFloor, settleFloor];
}
