// Helpers shared by the suites: draining microtasks, advancing fake time,
// watching a promise without awaiting it, and running flows to their end.
import { afterEach, beforeEach, expect, vi } from 'vitest'
import { AsyncRetryer } from 'retry-wasm'

/** Lets queued promise reactions run (several hops deep). */
export async function flush(rounds = 50) {
  for (let i = 0; i < rounds; i++) await Promise.resolve()
}

/** Advances fake time by `ms`, running timers and the reactions they cause. */
export async function advance(ms) {
  await vi.advanceTimersByTimeAsync(ms)
  await flush()
}

/** A promise and the functions that settle it. */
export function deferred() {
  let resolve, reject
  const promise = new Promise((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Records how `promise` settles (and how often), readable at any moment. */
export function track(promise) {
  const t = { settled: false, status: 'pending', value: undefined, reason: undefined, count: 0 }
  promise.then(
    (v) => { t.count++; t.settled = true; t.status = 'fulfilled'; t.value = v },
    (e) => { t.count++; t.settled = true; t.status = 'rejected'; t.reason = e },
  )
  return t
}

/**
 * A plain retry that fails once then succeeds (fake timers on), proving the
 * module still works after whatever a test threw at it.
 */
export async function sanityRetry() {
  const fn = vi.fn().mockRejectedValueOnce(new Error('once')).mockResolvedValueOnce('fine')
  const onRetry = vi.fn()
  const r = new AsyncRetryer(fn, { baseWait: 10, onRetry })
  const t = track(r.execute('x'))
  await advance(10)
  expect(t.status).toBe('fulfilled')
  expect(t.value).toBe('fine')
  expect(fn).toHaveBeenCalledTimes(2)
  expect(onRetry).toHaveBeenCalledTimes(1)
  return { fn, retryer: r }
}

/** Fake timers, the clock starting at `now`, around every test of the calling file. */
export function useFakeClock(now) {
  beforeEach(() => {
    vi.useFakeTimers({ now })
  })
  afterEach(() => {
    vi.clearAllTimers()
    vi.useRealTimers()
  })
}

/** Checks that the next attempt of `fn` starts exactly `delay` ms from now, not 1 ms early. */
export async function expectNextAttemptAt(fn, callsBefore, delay) {
  if (delay > 0) {
    await advance(delay - 1)
    expect(fn).toHaveBeenCalledTimes(callsBefore)
  }
  await advance(1)
  expect(fn).toHaveBeenCalledTimes(callsBefore + 1)
}

/** Runs fake timers until the flow `t` (from `track`) settles, at most `limit` of them. */
export async function runToEnd(t, limit = 2000) {
  await flush()
  for (let i = 0; i < limit && !t.settled; i++) {
    await vi.advanceTimersToNextTimerAsync()
    await flush()
  }
  expect(t.settled).toBe(true)
}

/** Delays between the starts of consecutive attempts of a flow that always fails. */
export async function measureDelays(options) {
  const starts = []
  const fn = vi.fn(() => {
    starts.push(Date.now())
    return Promise.reject(new Error('fail ' + starts.length))
  })
  const r = new AsyncRetryer(fn, { throwOnError: false, ...options })
  const t = track(r.execute())
  await runToEnd(t)
  const delays = []
  for (let i = 1; i < starts.length; i++) delays.push(starts[i] - starts[i - 1])
  return { delays, fn, r, t }
}

/** Records the lifecycle callbacks: `cb` to spread into the options, `log` of `[name, ...args]`. */
export function recorder() {
  const log = []
  const cb = {
    onRetry: (attempt, error) => log.push(['onRetry', attempt, error]),
    onError: (error) => log.push(['onError', error]),
    onLastError: (error) => log.push(['onLastError', error]),
    onSuccess: (result) => log.push(['onSuccess', result]),
    onSettled: () => log.push(['onSettled']),
    onAbort: (reason) => log.push(['onAbort', reason]),
    onGiveUp: (error, reason) => log.push(['onGiveUp', error, reason]),
    onExecutionTimeout: () => log.push(['onExecutionTimeout']),
    onTotalExecutionTimeout: () => log.push(['onTotalExecutionTimeout']),
  }
  return { log, cb, names: () => log.map((e) => e[0]) }
}

/** `store.state` of a new retryer (SPEC §1 State). */
export const DEFAULT_STATE = Object.freeze({
  currentAttempt: 0,
  executionCount: 0,
  isExecuting: false,
  lastError: undefined,
  lastExecutionTime: 0,
  lastResult: undefined,
  status: 'idle',
  totalExecutionTime: 0,
})
