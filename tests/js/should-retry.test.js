// SPEC §2 shouldRetry and onGiveUp: a false answer ends the flow with that
// error, the attempt number it is asked with, and every reason onGiveUp
// reports (attempts-exhausted, not-retryable, execution-timeout,
// budget-exhausted), and when it is not called.
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer, RetryBudget } from 'retry-wasm'
import { flush, advance, track, recorder, runToEnd, useFakeClock } from './helpers.js'

useFakeClock(Date.UTC(2030, 0, 1, 12, 0, 0))

// ------------------------------------------------------------- shouldRetry

describe('shouldRetry', () => {
  it('false ends the flow now with that error as the final one', async () => {
    const err = new Error('400 bad request')
    const fn = vi.fn(() => Promise.reject(err))
    const rec = recorder()
    const shouldRetry = vi.fn(() => false)
    const r = new AsyncRetryer(fn, { ...rec.cb, shouldRetry, maxAttempts: 5, throwOnError: 'last' })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('rejected')
    expect(t.reason).toBe(err)
    expect(fn).toHaveBeenCalledTimes(1)
    expect(shouldRetry).toHaveBeenCalledWith(err, 1, r)
    // contract-silent (by analogy with SPEC §1 rule 10): onGiveUp between onLastError and onSettled
    expect(rec.log).toEqual([
      ['onError', err],
      ['onLastError', err],
      ['onGiveUp', err, 'not-retryable'],
      ['onSettled'],
    ])
    expect(r.store.state.isExecuting).toBe(false)
    expect(r.store.state.lastError).toBe(err)
    expect(r.store.state.currentAttempt).toBe(1)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('is asked after each failure with the attempt number; true retries', async () => {
    const errs = [new Error('503 a'), new Error('503 b'), new Error('400')]
    let i = 0
    const fn = vi.fn(() => Promise.reject(errs[i++]))
    const shouldRetry = vi.fn((e) => e.message.startsWith('503'))
    const onGiveUp = vi.fn()
    const r = new AsyncRetryer(fn, { shouldRetry, onGiveUp, maxAttempts: 10, baseWait: 10, backoff: 'fixed', throwOnError: 'last' })
    const t = track(r.execute())
    await advance(10)
    await advance(10)
    expect(t.status).toBe('rejected')
    expect(t.reason).toBe(errs[2])
    expect(fn).toHaveBeenCalledTimes(3)
    expect(shouldRetry.mock.calls.map((c) => [c[0], c[1], c[2]])).toEqual([
      [errs[0], 1, r],
      [errs[1], 2, r],
      [errs[2], 3, r],
    ])
    expect(onGiveUp).toHaveBeenCalledTimes(1)
    expect(onGiveUp).toHaveBeenCalledWith(errs[2], 'not-retryable', r)
  })

  it('is not consulted on success', async () => {
    const shouldRetry = vi.fn(() => true)
    const r = new AsyncRetryer(async () => 'ok', { shouldRetry })
    expect(await r.execute()).toBe('ok')
    expect(shouldRetry).not.toHaveBeenCalled()
  })

  it('false with throwOnError false resolves undefined', async () => {
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { shouldRetry: () => false, throwOnError: false })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
  })

  it('keeps non-Error values as they are', async () => {
    const val = { status: 404 }
    const shouldRetry = vi.fn(() => false)
    const r = new AsyncRetryer(() => Promise.reject(val), { shouldRetry })
    await expect(r.execute()).rejects.toBe(val)
    expect(shouldRetry.mock.calls[0][0]).toBe(val)
  })

  it('validation: not a function', () => {
    expect(() => new AsyncRetryer(async () => 1, { shouldRetry: true })).toThrow(TypeError)
  })
})

// ---------------------------------------------------------------- onGiveUp

describe('onGiveUp reasons', () => {
  it("'attempts-exhausted'", async () => {
    const err = new Error('x')
    const rec = recorder()
    const r = new AsyncRetryer(() => Promise.reject(err), { ...rec.cb, maxAttempts: 2, baseWait: 1, throwOnError: 'last' })
    const t = track(r.execute())
    await advance(1)
    expect(t.reason).toBe(err)
    expect(rec.log.filter((e) => e[0] === 'onGiveUp')).toEqual([['onGiveUp', err, 'attempts-exhausted']])
    // contract-silent (by analogy with SPEC §1 rule 10)
    expect(rec.names().slice(-4)).toEqual(['onError', 'onLastError', 'onGiveUp', 'onSettled'])
  })

  it("'not-retryable'", async () => {
    const onGiveUp = vi.fn()
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { shouldRetry: () => false, onGiveUp, throwOnError: false })
    await r.execute()
    expect(onGiveUp).toHaveBeenCalledWith(expect.any(Error), 'not-retryable', r)
  })

  it("'execution-timeout'", async () => {
    const onGiveUp = vi.fn()
    const r = new AsyncRetryer(() => new Promise(() => {}), { maxExecutionTime: 30, onGiveUp, throwOnError: false })
    const t = track(r.execute())
    await advance(30)
    expect(t.settled).toBe(true)
    expect(onGiveUp).toHaveBeenCalledTimes(1)
    expect(onGiveUp.mock.calls[0][0].name).toBe('TimeoutError')
    expect(onGiveUp.mock.calls[0][1]).toBe('execution-timeout')
    expect(onGiveUp.mock.calls[0][2]).toBe(r)
  })

  it("'budget-exhausted'", async () => {
    const budget = new RetryBudget({ maxTokens: 2, tokenRatio: 0.1 })
    const onGiveUp = vi.fn()
    const err = new Error('down')
    const r = new AsyncRetryer(() => Promise.reject(err), { budget, onGiveUp, maxAttempts: 5, baseWait: 1 })
    const t = track(r.execute())
    await runToEnd(t)
    expect(t.reason).toBe(err)
    expect(onGiveUp).toHaveBeenCalledWith(err, 'budget-exhausted', r)
  })

  it('is not called on success or manual abort', async () => {
    const onGiveUp = vi.fn()
    const r = new AsyncRetryer(async () => 1, { onGiveUp })
    await r.execute()
    const r2 = new AsyncRetryer(() => new Promise(() => {}), { onGiveUp })
    const t = track(r2.execute())
    r2.abort()
    await flush()
    expect(t.settled).toBe(true)
    expect(onGiveUp).not.toHaveBeenCalled()
  })

  it('is not called on a total timeout', async () => {
    // contract-silent: a total timeout is an abort, not one of the give-up reasons
    const onGiveUp = vi.fn()
    const r = new AsyncRetryer(() => new Promise(() => {}), { onGiveUp, maxTotalExecutionTime: 10 })
    const t = track(r.execute())
    await advance(10)
    expect(t.settled).toBe(true)
    expect(onGiveUp).not.toHaveBeenCalled()
  })
})
