// SPEC §2 delay schedules: intervals, multiplier, backoff 'decorrelated',
// backoff as a function, and jitter 'full'.
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer } from 'retry-wasm'
import { flush, advance, track, measureDelays, expectNextAttemptAt, useFakeClock } from './helpers.js'

useFakeClock(Date.UTC(2030, 0, 1, 12, 0, 0))

// --------------------------------------------------------------- intervals

describe('intervals', () => {
  it('explicit delays; attempts = length + 1', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const onGiveUp = vi.fn()
    const onLastError = vi.fn()
    const r = new AsyncRetryer(fn, { intervals: [100, 300, 50], onGiveUp, onLastError, throwOnError: false })
    const t = track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 100)
    await expectNextAttemptAt(fn, 2, 300)
    await expectNextAttemptAt(fn, 3, 50)
    await flush()
    expect(t.settled).toBe(true)
    expect(fn).toHaveBeenCalledTimes(4)
    expect(onLastError).toHaveBeenCalledTimes(1)
    expect(onGiveUp).toHaveBeenCalledWith(expect.any(Error), 'attempts-exhausted', r)
    await advance(10_000)
    expect(fn).toHaveBeenCalledTimes(4)
  })

  it('an empty list means a single attempt', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { intervals: [], throwOnError: false })
    const t = track(r.execute())
    await flush()
    expect(t.settled).toBe(true)
    expect(fn).toHaveBeenCalledTimes(1)
  })

  it('win over backoff and baseWait', async () => {
    // contract-silent: explicit delays take precedence over the schedule options
    const { delays } = await measureDelays({ intervals: [7, 11], backoff: 'linear', baseWait: 5000 })
    expect(delays).toEqual([7, 11])
  })

  it('a zero interval proceeds without waiting', async () => {
    const fn = vi.fn().mockRejectedValueOnce(new Error('x')).mockResolvedValueOnce('ok')
    const r = new AsyncRetryer(fn, { intervals: [0] })
    const t = track(r.execute())
    await flush()
    expect(t.value).toBe('ok')
  })
})

// -------------------------------------------------------------- multiplier

describe('multiplier', () => {
  it('sets the growth factor of exponential backoff', async () => {
    const { delays } = await measureDelays({ backoff: 'exponential', baseWait: 100, multiplier: 3, maxAttempts: 4 })
    expect(delays).toEqual([100, 300, 900])
  })

  it('is capped by maxWait', async () => {
    const { delays } = await measureDelays({ baseWait: 100, multiplier: 1.5, maxWait: 200, maxAttempts: 5 })
    expect(delays).toEqual([100, 150, 200, 200])
  })

  it('defaults to 2', async () => {
    const { delays } = await measureDelays({ baseWait: 10, maxAttempts: 4 })
    expect(delays).toEqual([10, 20, 40])
  })

  it('validation: negative or NaN multiplier', () => {
    // contract-silent: a growth factor must be a finite non-negative number
    expect(() => new AsyncRetryer(async () => 1, { multiplier: -1 })).toThrow(RangeError)
    expect(() => new AsyncRetryer(async () => 1, { multiplier: NaN })).toThrow(RangeError)
    expect(() => new AsyncRetryer(async () => 1, { multiplier: '2' })).toThrow(TypeError)
  })
})

// ------------------------------------------------- decorrelated / function

describe("backoff: 'decorrelated'", () => {
  it('each delay is between baseWait and min(maxWait, 3 x previous)', async () => {
    const base = 100
    const cap = 5000
    const { delays } = await measureDelays({ backoff: 'decorrelated', baseWait: base, maxWait: cap, maxAttempts: 60 })
    expect(delays).toHaveLength(59)
    let prev = base
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(base - 1)
      expect(d).toBeLessThanOrEqual(Math.min(cap, 3 * prev) + 1)
      prev = d
    }
    expect(new Set(delays).size).toBeGreaterThan(10)
    // over a long run the cap is reached at some point
    expect(Math.max(...delays)).toBeGreaterThan(cap / 2)
  })

  it('never exceeds maxWait', async () => {
    const { delays } = await measureDelays({ backoff: 'decorrelated', baseWait: 50, maxWait: 120, maxAttempts: 40 })
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(49)
      expect(d).toBeLessThanOrEqual(121)
    }
  })
})

describe('backoff as a function', () => {
  it('(attempt, retryer) => ms gives the schedule', async () => {
    const backoff = vi.fn((attempt) => attempt * 7)
    const { delays, r } = await measureDelays({ backoff, maxAttempts: 4 })
    expect(delays).toEqual([7, 14, 21])
    expect(backoff.mock.calls.map((c) => c[0])).toEqual([1, 2, 3])
    for (const c of backoff.mock.calls) expect(c[1]).toBe(r)
  })

  it('returning garbage ends the flow with a RangeError', async () => {
    // contract-silent: a custom schedule is a dynamic option (SPEC §3)
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { backoff: () => NaN, throwOnError: false })
    const t = track(r.execute())
    await flush()
    await advance(100)
    expect(t.status).toBe('rejected')
    expect(t.reason).toBeInstanceOf(RangeError)
    expect(vi.getTimerCount()).toBe(0)
  })
})

describe("jitter: 'full'", () => {
  it('delay is uniform in [0, nominal]', async () => {
    const { delays } = await measureDelays({ backoff: 'fixed', baseWait: 1000, jitter: 'full', maxAttempts: 81 })
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(0)
      expect(d).toBeLessThanOrEqual(1000)
    }
    expect(delays.some((d) => d < 400)).toBe(true)
    expect(delays.some((d) => d > 600)).toBe(true)
    const mean = delays.reduce((a, b) => a + b, 0) / delays.length
    expect(mean).toBeGreaterThan(300)
    expect(mean).toBeLessThan(700)
  })

  it("applies after maxWait: never above maxWait", async () => {
    const { delays } = await measureDelays({ baseWait: 100, maxWait: 300, jitter: 'full', maxAttempts: 30 })
    for (const d of delays) expect(d).toBeLessThanOrEqual(300)
  })

  it("validation: other strings are rejected", () => {
    expect(() => new AsyncRetryer(async () => 1, { jitter: 'half' })).toThrow(/jitter/)
  })
})
