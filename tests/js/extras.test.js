// SPEC §2, one block per row: shouldRetry, onGiveUp, retryAfter,
// parseRetryAfter, intervals, multiplier, decorrelated and custom backoff,
// jitter 'full', Infinity attempts with a deadline, outside signal,
// RetryBudget, seed, retryOnExecutionTimeout.
import { describe, it, expect, vi, beforeEach, afterEach } from 'vitest'
import { AsyncRetryer, asyncRetry, RetryBudget, parseRetryAfter } from 'retry-wasm'
import { flush, advance, track } from './helpers.js'

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0)

beforeEach(() => {
  vi.useFakeTimers({ now: T0 })
})
afterEach(() => {
  vi.clearAllTimers()
  vi.useRealTimers()
})

async function expectNextAttemptAt(fn, callsBefore, delay) {
  if (delay > 0) {
    await advance(delay - 1)
    expect(fn).toHaveBeenCalledTimes(callsBefore)
  }
  await advance(1)
  expect(fn).toHaveBeenCalledTimes(callsBefore + 1)
}
async function runToEnd(t, limit = 2000) {
  await flush()
  for (let i = 0; i < limit && !t.settled; i++) {
    await vi.advanceTimersToNextTimerAsync()
    await flush()
  }
  expect(t.settled).toBe(true)
}
// Delays between the starts of consecutive attempts of a flow that always fails.
async function measureDelays(options) {
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
function recorder() {
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
function abortListenerCount(signal) {
  const events = typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule('node:events') : null
  if (events?.getEventListeners) return events.getEventListeners(signal, 'abort').length
  return null
}

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

// -------------------------------------------------------------- retryAfter

describe('retryAfter', () => {
  it('a hint in ms replaces the computed delay', async () => {
    const err = Object.assign(new Error('429'), { retryAfterMs: 250 })
    const fn = vi.fn().mockRejectedValueOnce(err).mockResolvedValueOnce('ok')
    const retryAfter = vi.fn((e) => e.retryAfterMs)
    const r = new AsyncRetryer(fn, { retryAfter, baseWait: 1000 })
    const t = track(r.execute())
    await flush()
    expect(retryAfter).toHaveBeenCalledWith(err, 1, r)
    await expectNextAttemptAt(fn, 1, 250)
    expect(t.value).toBe('ok')
  })

  it('a longer hint than the backoff is honoured too', async () => {
    const fn = vi.fn().mockRejectedValueOnce(new Error('503')).mockResolvedValueOnce('ok')
    const r = new AsyncRetryer(fn, { retryAfter: () => 5000, baseWait: 10 })
    const t = track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 5000)
    expect(t.value).toBe('ok')
  })

  it('undefined means no hint: the computed delay is used', async () => {
    // contract-silent: a hint of undefined falls back to the schedule
    const fn = vi.fn().mockRejectedValueOnce(new Error('x')).mockResolvedValueOnce('ok')
    const r = new AsyncRetryer(fn, { retryAfter: () => undefined, baseWait: 300 })
    const t = track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 300)
    expect(t.value).toBe('ok')
  })

  it('a hint of 0 retries without waiting', async () => {
    const fn = vi.fn().mockRejectedValueOnce(new Error('x')).mockResolvedValueOnce('ok')
    const r = new AsyncRetryer(fn, { retryAfter: () => 0, baseWait: 300 })
    const t = track(r.execute())
    await flush()
    expect(t.value).toBe('ok')
  })

  it('is still bounded by the total deadline: a hint past it is not slept', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('429')))
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb, retryAfter: () => 10_000, maxTotalExecutionTime: 2000, throwOnError: 'last' })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(rec.names()).toContain('onTotalExecutionTimeout')
    expect(rec.log).toContainEqual(['onAbort', 'total-timeout'])
    expect(fn).toHaveBeenCalledTimes(1)
    expect(vi.getTimerCount()).toBe(0)
    await advance(20_000)
    expect(fn).toHaveBeenCalledTimes(1)
  })

  it('works with parseRetryAfter on a Response', async () => {
    const res429 = new Response(null, { status: 429, headers: { 'Retry-After': '2' } })
    const fn = vi.fn()
      .mockRejectedValueOnce(Object.assign(new Error('429'), { response: res429 }))
      .mockResolvedValueOnce('ok')
    const r = new AsyncRetryer(fn, { retryAfter: (e) => parseRetryAfter(e.response), baseWait: 10 })
    const t = track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 2000)
    expect(t.value).toBe('ok')
  })

  it('a hint that is not a valid delay ends the flow with a RangeError', async () => {
    // contract-silent: retryAfter is a dynamic option; garbage is a RangeError (SPEC §3)
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { retryAfter: () => -5, throwOnError: false })
    const t = track(r.execute())
    await flush()
    await advance(10_000)
    expect(t.status).toBe('rejected')
    expect(t.reason).toBeInstanceOf(RangeError)
  })
})

// --------------------------------------------------------- parseRetryAfter

describe('parseRetryAfter', () => {
  it('delta-seconds', () => {
    expect(parseRetryAfter('120')).toBe(120_000)
    expect(parseRetryAfter('0')).toBe(0)
    expect(parseRetryAfter('1')).toBe(1000)
  })

  it('HTTP-date relative to a given now', () => {
    const now = Date.parse('Wed, 21 Oct 2015 07:27:00 GMT')
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', now)).toBe(60_000)
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:27:30 GMT', now)).toBe(30_000)
  })

  it('HTTP-date relative to Date.now() by default', () => {
    const future = new Date(T0 + 45_000).toUTCString()
    expect(parseRetryAfter(future)).toBe(45_000)
  })

  it('an HTTP-date in the past is not a positive delay', () => {
    // contract-silent: 0 (retry now) or undefined are both acceptable
    const now = Date.parse('Wed, 21 Oct 2015 07:27:00 GMT')
    expect([0, undefined]).toContain(parseRetryAfter('Wed, 21 Oct 2015 07:26:00 GMT', now))
  })

  it('from Headers', () => {
    expect(parseRetryAfter(new Headers({ 'Retry-After': '3' }))).toBe(3000)
    expect(parseRetryAfter(new Headers({ 'retry-after': '7' }))).toBe(7000)
    expect(parseRetryAfter(new Headers())).toBeUndefined()
    const now = Date.parse('Sun, 06 Nov 1994 08:49:37 GMT')
    expect(parseRetryAfter(new Headers({ 'Retry-After': 'Sun, 06 Nov 1994 08:49:47 GMT' }), now)).toBe(10_000)
  })

  it('from a Response', () => {
    expect(parseRetryAfter(new Response(null, { status: 503, headers: { 'Retry-After': '5' } }))).toBe(5000)
    expect(parseRetryAfter(new Response('x', { status: 200 }))).toBeUndefined()
  })

  it('invalid or negative gives undefined', () => {
    for (const bad of ['-5', 'soon', '', '  ', '1e3', 'NaN', 'Infinity', 'Wed, 99 Foo 2015 99:99:99 GMT']) {
      expect(parseRetryAfter(bad), JSON.stringify(bad)).toBeUndefined()
    }
  })

  it('fractional seconds are not delta-seconds', () => {
    // contract-silent: RFC 9110 delta-seconds is 1*DIGIT
    expect(parseRetryAfter('1.5')).toBeUndefined()
  })

  it('missing input gives undefined; other types give undefined or a TypeError', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined()
    expect(parseRetryAfter(null)).toBeUndefined()
    // contract-silent: undocumented input types may be rejected with a TypeError
    for (const bad of [{}, [], true, Symbol('s'), 10n]) {
      let out
      let error
      try {
        out = parseRetryAfter(bad)
      } catch (e) {
        error = e
      }
      if (error) expect(error).toBeInstanceOf(TypeError)
      else expect(out).toBeUndefined()
    }
  })
})

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

// ---------------------------------------------------- maxAttempts Infinity

describe('maxAttempts: Infinity with a finite maxTotalExecutionTime', () => {
  it('keeps retrying until the deadline, then ends with a total timeout', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const rec = recorder()
    const r = new AsyncRetryer(fn, {
      ...rec.cb, maxAttempts: Infinity, maxTotalExecutionTime: 1050, backoff: 'fixed', baseWait: 100, throwOnError: 'last',
    })
    const t = track(r.execute())
    await flush()
    await advance(1000)
    // attempts at 0, 100, ..., 1000; the next wait would cross 1050
    expect(fn).toHaveBeenCalledTimes(11)
    await advance(50)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(rec.names()).toContain('onTotalExecutionTimeout')
    expect(rec.log).toContainEqual(['onAbort', 'total-timeout'])
    expect(vi.getTimerCount()).toBe(0)
    await advance(10_000)
    expect(fn).toHaveBeenCalledTimes(11)
  })

  it('resolves on the first success', async () => {
    let n = 0
    const r = new AsyncRetryer(() => (++n < 20 ? Promise.reject(new Error('x')) : Promise.resolve(n)), {
      maxAttempts: Infinity, maxTotalExecutionTime: 60_000, baseWait: 1, backoff: 'fixed',
    })
    const t = track(r.execute())
    await runToEnd(t)
    expect(t.value).toBe(20)
  })

  it('is accepted through setOptions when the deadline is finite', () => {
    const r = new AsyncRetryer(async () => 1, { maxTotalExecutionTime: 1000 })
    expect(() => r.setOptions({ maxAttempts: Infinity })).not.toThrow()
    expect(r.options.maxAttempts).toBe(Infinity)
  })
})

// ------------------------------------------------------------------ signal

describe('signal (an outside AbortSignal)', () => {
  it('already aborted: resolves undefined without calling the function', async () => {
    const ac = new AbortController()
    ac.abort()
    const fn = vi.fn(async () => 1)
    const r = new AsyncRetryer(fn, { signal: ac.signal, throwOnError: true })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(fn).not.toHaveBeenCalled()
    expect(r.store.state.isExecuting).toBe(false)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('aborted during a wait: onAbort(signal), resolves undefined, timer cleared', async () => {
    const ac = new AbortController()
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb, signal: ac.signal, baseWait: 1000, throwOnError: 'last' })
    const t = track(r.execute())
    await flush()
    expect(r.store.state.status).toBe('retrying')
    ac.abort()
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(rec.log).toContainEqual(['onAbort', 'signal'])
    expect(rec.log.filter((e) => e[0] === 'onAbort')).toHaveLength(1)
    expect(vi.getTimerCount()).toBe(0)
    await advance(10_000)
    expect(fn).toHaveBeenCalledTimes(1)
    expect(r.store.state.isExecuting).toBe(false)
  })

  it("aborted during an attempt: the attempt's signal aborts too", async () => {
    const ac = new AbortController()
    let inner
    let r
    const onAbort = vi.fn()
    r = new AsyncRetryer(() => { inner = r.getAbortSignal(); return new Promise(() => {}) }, { signal: ac.signal, onAbort })
    const t = track(r.execute())
    await flush()
    expect(inner.aborted).toBe(false)
    ac.abort()
    expect(inner.aborted).toBe(true)
    await flush()
    expect(t.value).toBeUndefined()
    expect(onAbort).toHaveBeenCalledWith('signal', r)
  })

  it('its listener is removed when each flow settles', async () => {
    const ac = new AbortController()
    const add = vi.spyOn(ac.signal, 'addEventListener')
    const remove = vi.spyOn(ac.signal, 'removeEventListener')
    const onAbort = vi.fn()
    let n = 0
    const r = new AsyncRetryer(() => {
      n++
      if (n % 3 === 0) return Promise.reject(new Error('x'))
      if (n % 5 === 0) return new Promise(() => {})
      return Promise.resolve(n)
    }, { signal: ac.signal, onAbort, baseWait: 1, maxAttempts: 2, throwOnError: false, maxExecutionTime: 50 })
    for (let i = 0; i < 100; i++) {
      const t = track(r.execute())
      if (i % 7 === 0) { track(r.execute()) } // new-execution
      if (i % 11 === 0) r.abort()
      await runToEnd(t)
      await flush()
    }
    const count = abortListenerCount(ac.signal)
    if (count !== null) expect(count).toBe(0)
    else expect(add.mock.calls.length).toBe(remove.mock.calls.length)
    const before = onAbort.mock.calls.length
    ac.abort()
    await flush()
    expect(onAbort.mock.calls.length).toBe(before)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('one long-lived signal serves many retryers', async () => {
    const ac = new AbortController()
    const rs = Array.from({ length: 50 }, (_, i) => new AsyncRetryer(async () => i, { signal: ac.signal }))
    const out = await Promise.all(rs.map((r) => r.execute()))
    expect(out).toEqual(rs.map((_, i) => i))
    const count = abortListenerCount(ac.signal)
    if (count !== null) expect(count).toBe(0)
  })

  it('validation: not an AbortSignal', () => {
    // contract-silent
    expect(() => new AsyncRetryer(async () => 1, { signal: {} })).toThrow(TypeError)
    expect(() => new AsyncRetryer(async () => 1, { signal: 'x' })).toThrow(TypeError)
  })
})

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
})

// -------------------------------------------------------------------- seed

describe('seed', () => {
  async function delaysFor(options) {
    return (await measureDelays({ maxAttempts: 25, ...options })).delays
  }

  it('the same seed gives the same jitter sequence', async () => {
    const opts = { backoff: 'fixed', baseWait: 1000, jitter: 0.5, seed: 42 }
    const a = await delaysFor(opts)
    const b = await delaysFor(opts)
    expect(a).toEqual(b)
    expect(new Set(a).size).toBeGreaterThan(3)
  })

  it('different seeds give different sequences', async () => {
    const a = await delaysFor({ backoff: 'fixed', baseWait: 1000, jitter: 0.5, seed: 1 })
    const b = await delaysFor({ backoff: 'fixed', baseWait: 1000, jitter: 0.5, seed: 2 })
    expect(a).not.toEqual(b)
  })

  it("reproducible with jitter: 'full' and with decorrelated backoff", async () => {
    const full = { backoff: 'exponential', baseWait: 10, maxWait: 1000, jitter: 'full', seed: 7 }
    expect(await delaysFor(full)).toEqual(await delaysFor(full))
    const dec = { backoff: 'decorrelated', baseWait: 10, maxWait: 1000, seed: 7 }
    expect(await delaysFor(dec)).toEqual(await delaysFor(dec))
  })

  it('without a seed, two retryers do not share one sequence', async () => {
    const a = await delaysFor({ backoff: 'fixed', baseWait: 1000, jitter: 0.5 })
    const b = await delaysFor({ backoff: 'fixed', baseWait: 1000, jitter: 0.5 })
    expect(a).not.toEqual(b)
  })

  it('validation: not a number', () => {
    // contract-silent
    expect(() => new AsyncRetryer(async () => 1, { seed: 'abc' })).toThrow(TypeError)
  })
})

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
