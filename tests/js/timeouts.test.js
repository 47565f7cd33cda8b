// SPEC §2 retryOnExecutionTimeout: a timed-out attempt as an ordinary
// failed one, every attempt timing out, the total deadline, and asyncRetry
// taking the §2 options.
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer, asyncRetry } from 'retry-wasm'
import { flush, advance, track, recorder, runToEnd, expectNextAttemptAt, useFakeClock } from './helpers.js'

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0)

useFakeClock(T0)

// ------------------------------------------------- retryOnExecutionTimeout

describe('retryOnExecutionTimeout', () => {
  it('a timed-out attempt is an ordinary failed attempt, then a fresh signal', async () => {
    const signals = []
    let r
    const fn = vi.fn(() => {
      signals.push(r.getAbortSignal())
      return fn.mock.calls.length === 1 ? new Promise(() => {}) : Promise.resolve('second')
    })
    const rec = recorder()
    r = new AsyncRetryer(fn, { ...rec.cb, maxExecutionTime: 100, baseWait: 50, retryOnExecutionTimeout: true, throwOnError: 'last' })
    const t = track(r.execute())
    await advance(99)
    expect(rec.log).toEqual([])
    await advance(1)
    const names = rec.names()
    expect(names).not.toContain('onAbort')
    expect(names).not.toContain('onLastError')
    expect(names).not.toContain('onGiveUp')
    const errEntry = rec.log.find((e) => e[0] === 'onError')
    expect(errEntry[1].name).toBe('TimeoutError')
    expect(rec.log).toContainEqual(['onRetry', 1, errEntry[1]])
    // contract-silent: onExecutionTimeout still reports the timeout, first
    expect(names).toEqual(['onExecutionTimeout', 'onError', 'onRetry', 'onSettled'])
    expect(signals[0].aborted).toBe(true)
    expect(signals[0].reason?.name).toBe('TimeoutError')
    expect(r.store.state.status).toBe('retrying')
    expect(r.store.state.lastError).toBe(errEntry[1])
    await expectNextAttemptAt(fn, 1, 50)
    await flush()
    expect(signals[1]).not.toBe(signals[0])
    expect(signals[1].aborted).toBe(false)
    expect(t.value).toBe('second')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('when every attempt times out the flow rejects with a TimeoutError', async () => {
    const fn = vi.fn(() => new Promise(() => {}))
    const r = new AsyncRetryer(fn, { maxExecutionTime: 10, baseWait: 5, maxAttempts: 3, retryOnExecutionTimeout: true })
    const t = track(r.execute())
    await runToEnd(t)
    expect(fn).toHaveBeenCalledTimes(3)
    expect(t.status).toBe('rejected')
    expect(t.reason.name).toBe('TimeoutError')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('counts against the total deadline too', async () => {
    const fn = vi.fn(() => new Promise(() => {}))
    const onTotal = vi.fn()
    const r = new AsyncRetryer(fn, {
      maxExecutionTime: 100, baseWait: 10, backoff: 'fixed', maxAttempts: 100,
      maxTotalExecutionTime: 250, retryOnExecutionTimeout: true, onTotalExecutionTimeout: onTotal,
    })
    const t = track(r.execute())
    await runToEnd(t)
    expect(t.value).toBeUndefined()
    expect(onTotal).toHaveBeenCalledTimes(1)
    expect(fn.mock.calls.length).toBeLessThanOrEqual(3)
    expect(Date.now() - T0).toBeLessThanOrEqual(250)
  })

  it('asyncRetry accepts the §2 options too', async () => {
    const run = asyncRetry(
      vi.fn().mockRejectedValueOnce(new Error('x')).mockResolvedValueOnce('y'),
      { intervals: [3], shouldRetry: () => true, seed: 1, retryOnExecutionTimeout: true },
    )
    const t = track(run())
    await advance(3)
    expect(t.value).toBe('y')
  })
})
