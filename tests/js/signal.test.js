// SPEC §2 signal (an outside AbortSignal): aborted before, during a wait
// and during an attempt, and no listener left on it after each flow.
import { getEventListeners } from 'node:events'
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer } from 'retry-wasm'
import { flush, advance, track, recorder, runToEnd, useFakeClock } from './helpers.js'

useFakeClock(Date.UTC(2030, 0, 1, 12, 0, 0))

const abortListenerCount = (signal) => getEventListeners(signal, 'abort').length

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
    expect(abortListenerCount(ac.signal)).toBe(0)
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
    expect(abortListenerCount(ac.signal)).toBe(0)
  })

  it('validation: not an AbortSignal', () => {
    // contract-silent
    expect(() => new AsyncRetryer(async () => 1, { signal: {} })).toThrow(TypeError)
    expect(() => new AsyncRetryer(async () => 1, { signal: 'x' })).toThrow(TypeError)
  })
})
