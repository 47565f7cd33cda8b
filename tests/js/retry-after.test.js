// SPEC §2 retryAfter and parseRetryAfter: a hint replacing the computed
// delay, bounded by the total deadline, invalid hints; Retry-After values
// as delta-seconds, HTTP-dates, Headers and Responses.
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer, parseRetryAfter } from 'retry-wasm'
import { flush, advance, track, recorder, expectNextAttemptAt, useFakeClock } from './helpers.js'

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0)

useFakeClock(T0)

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
