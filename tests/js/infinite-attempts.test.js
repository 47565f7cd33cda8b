// SPEC §2 maxAttempts: Infinity with a finite maxTotalExecutionTime:
// retrying until the deadline, the first success, and setOptions.
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer } from 'retry-wasm'
import { flush, advance, track, recorder, runToEnd, useFakeClock } from './helpers.js'

useFakeClock(Date.UTC(2030, 0, 1, 12, 0, 0))

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
