// Host timers on real timers: every wait is one host timer armed from the
// engine, cleared when its flow ends, so nothing keeps the process alive.
// The other suites run on fake timers.
import { describe, it, expect, vi, afterEach } from 'vitest'
import { AsyncRetryer } from 'retry-wasm'
import { flush, track } from './helpers.js'

const hostTimeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A function that rejects `failures` times, then resolves `value`. */
function failing(failures, value) {
  let calls = 0
  const fn = vi.fn(async () => {
    if (calls++ < failures) throw new Error(`failure ${calls}`)
    return value
  })
  return fn
}

/**
 * Three retryers whose functions fail once and then return 'a', 'b', 'c',
 * 30 ms waits, all started at once, so their timers are due together.
 */
function threeDueTogether() {
  const fns = [failing(1, 'a'), failing(1, 'b'), failing(1, 'c')]
  const retryers = fns.map((fn) => new AsyncRetryer(fn, { backoff: 'fixed', baseWait: 30, jitter: 0 }))
  const ts = retryers.map((r) => track(r.execute()))
  return { fns, retryers, ts }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('host timers (real timers)', () => {
  it('each waiting flow holds one host timer, and none is left after', async () => {
    const before = hostTimeouts()
    const flows = Array.from({ length: 200 }, (_, i) =>
      new AsyncRetryer(failing(1, i), { backoff: 'fixed', baseWait: 200, jitter: 0 }).execute())
    await flush()
    expect(hostTimeouts() - before).toBe(200)
    expect(await Promise.all(flows)).toEqual(Array.from({ length: 200 }, (_, i) => i))
    expect(hostTimeouts()).toBeLessThanOrEqual(before)
  })

  it('aborting one waiting flow leaves the others due at the same time to retry', async () => {
    const before = hostTimeouts()
    const { fns, retryers, ts } = threeDueTogether()
    await flush()
    expect(fns.map((fn) => fn.mock.calls.length)).toEqual([1, 1, 1])
    retryers[1].abort()
    await flush()
    expect(ts[1].status).toBe('fulfilled')
    expect(ts[1].value).toBe(undefined)
    await sleep(60)
    await flush()
    expect(ts.map((t) => t.value)).toEqual(['a', undefined, 'c'])
    expect(fns.map((fn) => fn.mock.calls.length)).toEqual([2, 1, 2])
    expect(hostTimeouts()).toBeLessThanOrEqual(before)
  })

  it('a retryer disposed while it waits is not called again; the others are', async () => {
    const before = hostTimeouts()
    const { fns, retryers, ts } = threeDueTogether()
    await flush()
    retryers[0][Symbol.dispose]()
    // Freed: wasm-bindgen refuses any further use of it.
    expect(() => retryers[0].execute()).toThrow()
    await sleep(60)
    await flush()
    expect(ts[0].value).toBe(undefined)
    expect(ts.slice(1).map((t) => t.value)).toEqual(['b', 'c'])
    expect(fns.map((fn) => fn.mock.calls.length)).toEqual([1, 2, 2])
    expect(hostTimeouts()).toBeLessThanOrEqual(before)
  })

  it('a flow aborted and started again while another waits retries once per wait', async () => {
    const fns = [failing(2, 'a'), failing(1, 'b')]
    const retryers = fns.map((fn) => new AsyncRetryer(fn, { backoff: 'fixed', baseWait: 30, jitter: 0 }))
    const first = track(retryers[0].execute())
    const other = track(retryers[1].execute())
    await flush()
    retryers[0].abort()
    // A new flow on the same retryer: its attempt 1 (the function's 2nd
    // call) fails too and arms a wait due with the other one's.
    const again = track(retryers[0].execute())
    await flush()
    await sleep(60)
    await flush()
    expect(first.value).toBe(undefined)
    expect(again.value).toBe('a')
    expect(other.value).toBe('b')
    expect(fns.map((fn) => fn.mock.calls.length)).toEqual([3, 2])
  })

  it('clears every host timer once every waiting flow has been aborted', async () => {
    const before = hostTimeouts()
    const retryers = Array.from({ length: 20 }, () =>
      new AsyncRetryer(failing(5, 'never'), { backoff: 'fixed', baseWait: 60_000, jitter: 0 }))
    const ts = retryers.map((r) => track(r.execute()))
    await flush()
    expect(hostTimeouts()).toBeGreaterThan(before)
    for (const r of retryers) r.abort()
    await flush()
    expect(ts.every((t) => t.status === 'fulfilled')).toBe(true)
    // Nothing of the aborted flows is left to keep the process alive.
    expect(hostTimeouts()).toBeLessThanOrEqual(before)
  })

  it('retries with no wait, many flows at once, all finish', async () => {
    const fns = Array.from({ length: 50 }, (_, i) => failing(3, i))
    const flows = fns.map((fn) => new AsyncRetryer(fn, { maxAttempts: 4, backoff: 'fixed', baseWait: 0, jitter: 0 }).execute())
    expect(await Promise.all(flows)).toEqual(fns.map((_, i) => i))
    expect(fns.every((fn) => fn.mock.calls.length === 4)).toBe(true)
  })

  it('a retry never fires before its wait is over', async () => {
    const starts = []
    const fn = vi.fn(async () => {
      starts.push(performance.now())
      if (starts.length < 3) throw new Error('again')
      return 'done'
    })
    const r = new AsyncRetryer(fn, { backoff: 'fixed', baseWait: 25, jitter: 0 })
    expect(await r.execute()).toBe('done')
    // Host timers may round to the millisecond; none comes early by more.
    expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(24)
    expect(starts[2] - starts[1]).toBeGreaterThanOrEqual(24)
  })
})

describe('fake timers get a host timer each', () => {
  it('a flow started after vi.clearAllTimers() rewound the fake clock still retries', async () => {
    vi.useFakeTimers({ now: 1_000 })
    const first = failing(5, 'first')
    track(new AsyncRetryer(first, { backoff: 'fixed', baseWait: 100, jitter: 0 }).execute())
    await flush()
    // Drops the first flow's timer and rewinds the fake clock to its start.
    vi.clearAllTimers()
    const second = failing(1, 'second')
    const t = track(new AsyncRetryer(second, { backoff: 'fixed', baseWait: 100, jitter: 0 }).execute())
    await flush()
    expect(second).toHaveBeenCalledTimes(1)
    await vi.advanceTimersByTimeAsync(100)
    await flush()
    expect(second).toHaveBeenCalledTimes(2)
    expect(t.value).toBe('second')
  })

  it('three waiting flows, three fake timers', async () => {
    vi.useFakeTimers({ now: 5_000 })
    const fns = [failing(1, 1), failing(1, 2), failing(1, 3)]
    const ts = fns.map((fn) => track(new AsyncRetryer(fn, { backoff: 'fixed', baseWait: 100, jitter: 0 }).execute()))
    await flush()
    expect(vi.getTimerCount()).toBe(3)
    await vi.advanceTimersByTimeAsync(100)
    await flush()
    expect(ts.map((t) => t.value)).toEqual([1, 2, 3])
    expect(vi.getTimerCount()).toBe(0)
  })
})
