// SPEC §2 RetryBudget: tokens, a budget shared by retryers and by
// overlapping flows, its bounds, first attempts, and its validation.
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer, RetryBudget, retryFetch } from 'retry-wasm/fetch'
import { advance, track, runToEnd, useFakeClock } from './helpers.js'

useFakeClock(Date.UTC(2030, 0, 1, 12, 0, 0))

// contract-silent: the name of the readable token count. `tokens` (a number or
// a getter) is the expected spelling; a few alternatives are accepted.
function tokensOf(budget) {
  for (const k of ['tokens', 'availableTokens', 'currentTokens']) {
    const v = budget[k]
    if (typeof v === 'number') return v
    if (typeof v === 'function') return v.call(budget)
  }
  throw new Error('RetryBudget exposes no readable token count')
}

// ------------------------------------------------------------- RetryBudget

describe('RetryBudget', () => {
  it('starts full and its tokens are readable', () => {
    const b = new RetryBudget({ maxTokens: 10, tokenRatio: 0.1 })
    expect(tokensOf(b)).toBe(10)
  })

  it('shared by two retryers: failures cost 1, retries only while tokens > maxTokens/2', async () => {
    const budget = new RetryBudget({ maxTokens: 4, tokenRatio: 0.5 })
    const errA = new Error('A down')
    const errB = new Error('B down')
    const fnA = vi.fn(() => Promise.reject(errA))
    const fnB = vi.fn(() => Promise.reject(errB))
    const giveUps = []
    const onGiveUp = (e, reason) => giveUps.push([e, reason])
    const A = new AsyncRetryer(fnA, { budget, onGiveUp, maxAttempts: 10, baseWait: 10, backoff: 'fixed' })
    const B = new AsyncRetryer(fnB, { budget, onGiveUp, maxAttempts: 10, baseWait: 10, backoff: 'fixed' })

    // contract-silent on the order; this follows gRPC retry throttling (A6):
    // a failure first costs its token, then retries need tokens > maxTokens/2.
    // A: fail (4 -> 3, 3 > 2: retry), fail (3 -> 2, 2 is not > 2: give up)
    const tA = track(A.execute())
    await runToEnd(tA)
    expect(tA.status).toBe('rejected')
    expect(tA.reason).toBe(errA)
    expect(fnA).toHaveBeenCalledTimes(2)
    expect(tokensOf(budget)).toBeCloseTo(2, 6)

    // B: fail (2 -> 1): no retry at all
    const tB = track(B.execute())
    await runToEnd(tB)
    expect(tB.reason).toBe(errB)
    expect(fnB).toHaveBeenCalledTimes(1)
    expect(tokensOf(budget)).toBeCloseTo(1, 6)
    expect(giveUps).toEqual([[errA, 'budget-exhausted'], [errB, 'budget-exhausted']])

    // a success adds tokenRatio
    fnB.mockImplementation(() => Promise.resolve('up'))
    expect(await B.execute()).toBe('up')
    expect(tokensOf(budget)).toBeCloseTo(1.5, 6)
  })

  it('never goes below 0 nor above maxTokens', async () => {
    const budget = new RetryBudget({ maxTokens: 3, tokenRatio: 1 })
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { budget, maxAttempts: 1, throwOnError: false })
    for (let i = 0; i < 10; i++) await r.execute()
    expect(tokensOf(budget)).toBe(0)
    const ok = new AsyncRetryer(async () => 1, { budget })
    for (let i = 0; i < 10; i++) await ok.execute()
    expect(tokensOf(budget)).toBe(3)
  })

  it('overlapping flows share the budget', async () => {
    const budget = new RetryBudget({ maxTokens: 10, tokenRatio: 0.1 })
    const fns = Array.from({ length: 4 }, () => vi.fn(() => Promise.reject(new Error('x'))))
    const rs = fns.map((fn) => new AsyncRetryer(fn, { budget, maxAttempts: 50, baseWait: 5, backoff: 'fixed', throwOnError: false }))
    const ts = rs.map((r) => track(r.execute()))
    for (let i = 0; i < 100 && !ts.every((t) => t.settled); i++) await advance(5)
    expect(ts.every((t) => t.settled)).toBe(true)
    const attempts = fns.reduce((a, f) => a + f.mock.calls.length, 0)
    // 10 tokens, retries stop once tokens <= 5: at most 6 failures can still
    // be followed by a retry; each flow's final failure costs one more
    expect(attempts).toBeLessThanOrEqual(6 + 4)
    expect(attempts).toBeGreaterThanOrEqual(5)
    expect(tokensOf(budget)).toBeGreaterThanOrEqual(0)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('an exhausted budget does not prevent first attempts', async () => {
    const budget = new RetryBudget({ maxTokens: 2, tokenRatio: 0.1 })
    const bad = new AsyncRetryer(() => Promise.reject(new Error('x')), { budget, maxAttempts: 1, throwOnError: false })
    await bad.execute()
    await bad.execute()
    const fn = vi.fn(async () => 'first try')
    const r = new AsyncRetryer(fn, { budget })
    expect(await r.execute()).toBe('first try')
  })

  it('validation', () => {
    expect(() => new RetryBudget({ maxTokens: 0, tokenRatio: 0.1 })).toThrow(RangeError)
    expect(() => new RetryBudget({ maxTokens: -1, tokenRatio: 0.1 })).toThrow(RangeError)
    expect(() => new RetryBudget({ maxTokens: NaN, tokenRatio: 0.1 })).toThrow(RangeError)
    expect(() => new RetryBudget({ maxTokens: 10, tokenRatio: -0.5 })).toThrow(RangeError)
    expect(() => new RetryBudget({ maxTokens: 10, tokenRatio: NaN })).toThrow(RangeError)
    expect(() => new RetryBudget({ maxTokens: '10', tokenRatio: 0.1 })).toThrow(TypeError)
    const e = (() => { try { new RetryBudget({ maxTokens: 0, tokenRatio: 0.1 }) } catch (x) { return x } })()
    expect(e.message).toContain('maxTokens')
    // contract-silent: `budget` must be a RetryBudget
    expect(() => new AsyncRetryer(async () => 1, { budget: { maxTokens: 3 } })).toThrow(TypeError)
  })

  it('a freed budget given as an option is a TypeError that says it was freed', () => {
    const budget = new RetryBudget({ maxTokens: 4 })
    const held = new AsyncRetryer(async () => 1, { budget })
    budget.free()
    const freed = (e) => e instanceof TypeError && /option 'budget'/.test(e.message) && /freed/.test(e.message)
    expect(() => new AsyncRetryer(async () => 1, { budget })).toThrow(expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(/option 'budget' is a RetryBudget that was freed/) }))
    expect(() => retryFetch({ budget })).toThrow(/option 'budget' is a RetryBudget that was freed/)
    let caught
    try {
      held.setOptions({ budget })
    } catch (e) {
      caught = e
    }
    expect(freed(caught)).toBe(true)
    // A failed setOptions changes nothing: the retryer still runs.
    expect(held.options.budget).toBe(budget)
    const disposed = new RetryBudget()
    disposed[Symbol.dispose]?.()
    if (Symbol.dispose) expect(() => new AsyncRetryer(async () => 1, { budget: disposed })).toThrow(TypeError)
  })
})
