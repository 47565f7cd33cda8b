// Helpers shared by the suites: draining microtasks, advancing fake time,
// and watching a promise without awaiting it.
import { vi } from 'vitest'

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
