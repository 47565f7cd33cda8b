// Helpers shared by the suites: draining microtasks, advancing fake time,
// and watching a promise without awaiting it.
import { expect, vi } from 'vitest'
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
