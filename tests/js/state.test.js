// retryer.store: the eight-field snapshot, identity rules, subscribe /
// unsubscribe, initialState and reset() (SPEC §1 "State").
import { describe, it, expect, vi, beforeEach, afterEach } from 'vitest'
import { AsyncRetryer, asyncRetry } from 'retry-wasm'
import { flush, advance, track, DEFAULT_STATE } from './helpers.js'

const T0 = Date.UTC(2030, 5, 1)

beforeEach(() => {
  vi.useFakeTimers({ now: T0 })
})
afterEach(() => {
  vi.clearAllTimers()
  vi.useRealTimers()
})

const FIELDS = [
  'currentAttempt',
  'executionCount',
  'isExecuting',
  'lastError',
  'lastExecutionTime',
  'lastResult',
  'status',
  'totalExecutionTime',
]

describe('store.state shape', () => {
  it('is a plain object with exactly the eight fields and their defaults', () => {
    const r = new AsyncRetryer(async () => 1)
    const s = r.store.state
    expect(Object.getPrototypeOf(s)).toBe(Object.prototype)
    expect(Object.keys(s).sort()).toEqual([...FIELDS].sort())
    expect(s).toEqual(DEFAULT_STATE)
  })

  it('keeps exactly eight fields through every phase of a flow', async () => {
    const seen = []
    const r = new AsyncRetryer(
      vi.fn().mockRejectedValueOnce(new Error('a')).mockResolvedValueOnce('b'),
      { baseWait: 10 },
    )
    r.store.subscribe(() => seen.push(r.store.state))
    const t = track(r.execute())
    seen.push(r.store.state)
    await flush()
    seen.push(r.store.state)
    await advance(10)
    expect(t.value).toBe('b')
    seen.push(r.store.state)
    r.reset()
    seen.push(r.store.state)
    for (const s of seen) expect(Object.keys(s).sort()).toEqual([...FIELDS].sort())
  })

  it('status is executing on attempt 1, retrying during waits and later attempts, idle after', async () => {
    const statuses = []
    let r
    const fn = vi.fn(() => {
      statuses.push(['in fn', r.store.state.status, r.store.state.currentAttempt])
      return fn.mock.calls.length < 3 ? Promise.reject(new Error('x')) : Promise.resolve('ok')
    })
    r = new AsyncRetryer(fn, { baseWait: 10 })
    const t = track(r.execute())
    await flush()
    statuses.push(['wait', r.store.state.status, r.store.state.currentAttempt])
    await advance(10)
    statuses.push(['wait', r.store.state.status, r.store.state.currentAttempt])
    await advance(20)
    statuses.push(['after', r.store.state.status, r.store.state.currentAttempt])
    expect(t.value).toBe('ok')
    expect(statuses).toEqual([
      ['in fn', 'executing', 1],
      ['wait', 'retrying', 2],
      ['in fn', 'retrying', 2],
      ['wait', 'retrying', 3],
      ['in fn', 'retrying', 3],
      ['after', 'idle', 0],
    ])
  })
})

describe('store.state identity', () => {
  it('is the same object while nothing changes', async () => {
    const r = new AsyncRetryer(async () => 1)
    const a = r.store.state
    expect(r.store.state).toBe(a)
    expect(r.store.state).toBe(a)
    // reading options / signal / aborting an idle retryer changes nothing
    void r.options
    r.getAbortSignal()
    r.abort()
    expect(r.store.state).toBe(a)
    await advance(1000)
    expect(r.store.state).toBe(a)
  })

  it('is a new object after every change, and stable in between', async () => {
    const r = new AsyncRetryer(() => new Promise(() => {}))
    const s0 = r.store.state
    track(r.execute())
    const s1 = r.store.state
    expect(s1).not.toBe(s0)
    expect(s1.isExecuting).toBe(true)
    expect(r.store.state).toBe(s1)
    await advance(500) // fn pending, nothing changes
    expect(r.store.state).toBe(s1)
    r.abort()
    const s2 = r.store.state
    expect(s2).not.toBe(s1)
    expect(s2.isExecuting).toBe(false)
    expect(r.store.state).toBe(s2)
  })

  it('snapshots are not mutated after the fact', async () => {
    const r = new AsyncRetryer(async () => 'x')
    const before = r.store.state
    const copy = { ...before }
    await r.execute()
    expect(before).toEqual(copy)
    expect(r.store.state).not.toBe(before)
  })

  it('setOptions({ enabled: false }) gives a new object with status disabled', () => {
    const r = new AsyncRetryer(async () => 1)
    const a = r.store.state
    r.setOptions({ enabled: false })
    expect(r.store.state).not.toBe(a)
    expect(r.store.state.status).toBe('disabled')
    const b = r.store.state
    // contract-silent: an option change that does not affect status leaves the snapshot alone
    r.setOptions({ baseWait: 5 })
    expect(r.store.state).toBe(b)
  })
})

describe('store.subscribe', () => {
  it('calls a function listener after each change, with the new state readable', async () => {
    const r = new AsyncRetryer(async () => 'v')
    const observed = []
    const unsub = r.store.subscribe(() => observed.push(r.store.state))
    await r.execute()
    expect(observed.length).toBeGreaterThanOrEqual(1)
    expect(observed[observed.length - 1]).toBe(r.store.state)
    expect(observed[observed.length - 1].lastResult).toBe('v')
    // some observed state was the executing one
    expect(observed.some((s) => s.isExecuting && s.status === 'executing')).toBe(true)
    // contract-silent: a listener is not called without a change
    for (let i = 1; i < observed.length; i++) expect(observed[i]).not.toBe(observed[i - 1])
    unsub()
  })

  it('accepts an observer without next() (as @tanstack/store does) and refuses a non-object', async () => {
    const r = new AsyncRetryer(async () => 1)
    const u = r.store.subscribe({ complete() {} })
    await r.execute()
    u()
    for (const bad of [1, 'x', null, undefined]) expect(() => r.store.subscribe(bad)).toThrow(TypeError)
  })

  it('accepts an observer with next()', async () => {
    const r = new AsyncRetryer(async () => 'v')
    const next = vi.fn(function () { return r.store.state })
    const sub = r.store.subscribe({ next })
    await r.execute()
    expect(next).toHaveBeenCalled()
    const last = next.mock.results[next.mock.results.length - 1].value
    expect(last).toBe(r.store.state)
    sub()
  })

  it('returns an unsubscribe function that also has .unsubscribe()', async () => {
    const r = new AsyncRetryer(async () => 'v')
    const f1 = vi.fn()
    const f2 = vi.fn()
    const u1 = r.store.subscribe(f1)
    const u2 = r.store.subscribe({ next: f2 })
    expect(typeof u1).toBe('function')
    expect(typeof u1.unsubscribe).toBe('function')
    expect(typeof u2).toBe('function')
    expect(typeof u2.unsubscribe).toBe('function')
    await r.execute()
    const n1 = f1.mock.calls.length
    const n2 = f2.mock.calls.length
    expect(n1).toBeGreaterThan(0)
    expect(n2).toBeGreaterThan(0)
    u1()
    u2.unsubscribe()
    await r.execute()
    r.reset()
    r.setOptions({ enabled: false })
    expect(f1).toHaveBeenCalledTimes(n1)
    expect(f2).toHaveBeenCalledTimes(n2)
    // unsubscribing twice is harmless
    expect(() => { u1(); u1.unsubscribe(); u2(); }).not.toThrow()
  })

  it('works as a useSyncExternalStore source (subscribe + stable getSnapshot)', async () => {
    const r = new AsyncRetryer(vi.fn().mockRejectedValueOnce(new Error('e')).mockResolvedValue(3), { baseWait: 5 })
    // emulate React: on each notification, getSnapshot twice must be identical
    let renders = 0
    const getSnapshot = () => r.store.state
    const unsubscribe = r.store.subscribe(() => {
      const a = getSnapshot()
      const b = getSnapshot()
      expect(a).toBe(b)
      renders++
    })
    const t = track(r.execute())
    await advance(5)
    expect(t.value).toBe(3)
    expect(renders).toBeGreaterThan(1)
    unsubscribe()
  })

  it('many listeners each run; removing one does not affect the others', async () => {
    const r = new AsyncRetryer(async () => 1)
    const fs = Array.from({ length: 5 }, () => vi.fn())
    const us = fs.map((f) => r.store.subscribe(f))
    us[2]()
    await r.execute()
    fs.forEach((f, i) => {
      if (i === 2) expect(f).not.toHaveBeenCalled()
      else expect(f).toHaveBeenCalled()
    })
    us.forEach((u) => u())
  })

  it('a listener that unsubscribes itself while being called', async () => {
    const r = new AsyncRetryer(async () => 1)
    const other = vi.fn()
    let calls = 0
    const u = r.store.subscribe(() => { calls++; u() })
    r.store.subscribe(other)
    await r.execute()
    expect(calls).toBe(1)
    expect(other).toHaveBeenCalled()
  })
})

describe('initialState', () => {
  it('merges only the persistable fields', () => {
    const err = new Error('old')
    const r = new AsyncRetryer(async () => 1, {
      initialState: {
        executionCount: 5,
        lastExecutionTime: 123,
        totalExecutionTime: 45,
        lastResult: 'prev',
        lastError: err,
        // not persistable: ignored
        isExecuting: true,
        currentAttempt: 3,
        status: 'retrying',
      },
    })
    expect(r.store.state).toEqual({
      currentAttempt: 0,
      executionCount: 5,
      isExecuting: false,
      lastError: err,
      lastExecutionTime: 123,
      lastResult: 'prev',
      status: 'idle',
      totalExecutionTime: 45,
    })
    expect(r.store.state.lastError).toBe(err)
    expect(Object.keys(r.store.state).sort()).toEqual([...FIELDS].sort())
  })

  it('a partial initialState keeps the other defaults', () => {
    const r = new AsyncRetryer(async () => 1, { initialState: { executionCount: 2 } })
    expect(r.store.state).toEqual({ ...DEFAULT_STATE, executionCount: 2 })
  })

  it('does not restore a flow: no timer, no signal, execute starts from attempt 1', async () => {
    const fn = vi.fn(async () => 'go')
    const r = new AsyncRetryer(fn, { initialState: { isExecuting: true, currentAttempt: 2, executionCount: 1 } })
    expect(vi.getTimerCount()).toBe(0)
    expect(r.getAbortSignal()).toBeNull()
    const seen = []
    r.store.subscribe(() => seen.push(r.store.state.currentAttempt))
    expect(await r.execute()).toBe('go')
    expect(fn).toHaveBeenCalledTimes(1)
    expect(r.store.state.executionCount).toBe(2)
    expect(seen).toContain(1)
    expect(seen).not.toContain(3)
  })

  it('status honours enabled: false even with an initialState status', () => {
    const r = new AsyncRetryer(async () => 1, { enabled: false, initialState: { status: 'idle' } })
    expect(r.store.state.status).toBe('disabled')
  })

  it('a flow clears a restored lastError and counts on from executionCount', async () => {
    const r = new AsyncRetryer(async () => 'n', { initialState: { lastError: new Error('x'), executionCount: 9 } })
    const p = r.execute()
    expect(r.store.state.lastError).toBeUndefined()
    await p
    expect(r.store.state.executionCount).toBe(10)
  })
})

describe('reset()', () => {
  it('restores the default state after success and after failure', async () => {
    const r = new AsyncRetryer(async () => 'ok')
    await r.execute()
    expect(r.store.state.executionCount).toBe(1)
    r.reset()
    expect(r.store.state).toEqual(DEFAULT_STATE)

    const r2 = new AsyncRetryer(() => Promise.reject(new Error('x')), { maxAttempts: 2, baseWait: 1, throwOnError: false })
    const t = track(r2.execute())
    await advance(1)
    expect(t.settled).toBe(true)
    expect(r2.store.state.currentAttempt).toBe(2)
    r2.reset()
    expect(r2.store.state).toEqual(DEFAULT_STATE)
  })

  it('restores the defaults, not the initialState', () => {
    const r = new AsyncRetryer(async () => 1, { initialState: { executionCount: 4, lastResult: 'x' } })
    r.reset()
    expect(r.store.state).toEqual(DEFAULT_STATE)
  })

  it("keeps status 'disabled' when not enabled", () => {
    const r = new AsyncRetryer(async () => 1, { enabled: false })
    r.reset()
    expect(r.store.state).toEqual({ ...DEFAULT_STATE, status: 'disabled' })
  })

  it('notifies subscribers and gives a new object', async () => {
    const r = new AsyncRetryer(async () => 1)
    await r.execute()
    const before = r.store.state
    const f = vi.fn()
    r.store.subscribe(f)
    r.reset()
    expect(r.store.state).not.toBe(before)
    expect(f).toHaveBeenCalled()
  })

  it('does not stop an active flow (during a wait)', async () => {
    const fn = vi.fn().mockRejectedValueOnce(new Error('a')).mockResolvedValueOnce('b')
    const onAbort = vi.fn()
    const r = new AsyncRetryer(fn, { baseWait: 100, onAbort, initialState: { executionCount: 3 } })
    const t = track(r.execute())
    await flush()
    expect(r.store.state.lastError).toBeInstanceOf(Error)
    r.reset()
    expect(r.store.state.executionCount).toBe(0)
    expect(r.store.state.lastError).toBeUndefined()
    expect(r.store.state.lastResult).toBeUndefined()
    expect(vi.getTimerCount()).toBe(1)
    await advance(100)
    expect(fn).toHaveBeenCalledTimes(2)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBe('b')
    expect(onAbort).not.toHaveBeenCalled()
    expect(r.store.state.executionCount).toBe(1)
    expect(r.store.state.lastResult).toBe('b')
    expect(r.store.state.isExecuting).toBe(false)
    expect(r.store.state.currentAttempt).toBe(0)
  })

  it('does not stop an active flow (during an attempt); the signal stays live', async () => {
    let resolve
    let signal
    let r
    r = new AsyncRetryer(() => { signal = r.getAbortSignal(); return new Promise((res) => { resolve = res }) })
    const t = track(r.execute())
    r.reset()
    expect(signal.aborted).toBe(false)
    resolve('done')
    await flush()
    expect(t.value).toBe('done')
    expect(r.store.state.executionCount).toBe(1)
    expect(r.store.state.lastResult).toBe('done')
  })
})

// The two time fields are exact wherever the state can be read from: the
// retryer's holder, `this` inside the function, callbacks, dynamic options.
describe('asyncRetry and the clock', () => {
  const clockReads = () => vi.spyOn(Date, 'now')

  it('such a flow still waits and retries on time', async () => {
    let n = 0
    const f = asyncRetry(async () => {
      if (++n < 3) throw new Error('again')
      return 'done'
    }, { baseWait: 10 })
    const t = track(f())
    await flush()
    expect(n).toBe(1)
    await advance(9)
    expect(n).toBe(1)
    await advance(1)
    expect(n).toBe(2)
    await advance(19)
    expect(n).toBe(2)
    await advance(1)
    expect(t.value).toBe('done')
  })

  it('a total deadline is still measured from the start', async () => {
    let n = 0
    const f = asyncRetry(async () => {
      n++
      throw new Error('down')
    }, { backoff: 'fixed', baseWait: 40, maxAttempts: 10, maxTotalExecutionTime: 100, throwOnError: false })
    const t = track(f())
    await advance(80)
    // Attempts at 0, 40 and 80; the wait after the third would end past
    // the deadline, so the flow ends at once, at 80 ms.
    expect(n).toBe(3)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
  })

  it('a function that can see the retryer as `this` reads exact times', async () => {
    const seen = []
    const functions = [
      async function () { seen.push(this.store.state); vi.advanceTimersByTime(30); return 1 },
      function () { seen.push(this.store.state); vi.advanceTimersByTime(30); return Promise.resolve(1) },
      { async get() { seen.push(this.store.state); vi.advanceTimersByTime(30); return 1 } }.get,
    ]
    for (const fn of functions) {
      seen.length = 0
      const start = Date.now()
      const f = asyncRetry(fn)
      await f()
      vi.advanceTimersByTime(5)
      await f()
      expect(seen[1].lastExecutionTime).toBe(start + 30)
      expect(seen[1].totalExecutionTime).toBe(30)
      expect(seen[1].executionCount).toBe(1)
    }
  })

  it('a bound function reads the clock like any other', async () => {
    const f = asyncRetry((async () => 1).bind(null))
    const now = clockReads()
    await f()
    expect(now).toHaveBeenCalled()
    now.mockRestore()
  })

  it('callbacks and dynamic options hand the retryer out: exact times there', async () => {
    let start = Date.now()
    let got
    const f = asyncRetry(async () => { vi.advanceTimersByTime(20); return 1 }, {
      onSuccess: (result, args, retryer) => { got = retryer.store.state },
    })
    await f()
    expect(got.lastExecutionTime).toBe(start + 20)
    expect(got.totalExecutionTime).toBe(20)

    let held
    start = Date.now()
    const g = asyncRetry(async () => { vi.advanceTimersByTime(15); return 1 }, {
      enabled: (retryer) => { held = retryer; return true },
    })
    await g()
    expect(held.store.state.lastExecutionTime).toBe(start + 15)
    expect(held.store.state.totalExecutionTime).toBe(15)
  })

  it('an AsyncRetryer is held by its caller: its flows read the clock', async () => {
    const r = new AsyncRetryer(async () => { vi.advanceTimersByTime(25); return 1 })
    const start = Date.now()
    await r.execute()
    expect(r.store.state.lastExecutionTime).toBe(start + 25)
    expect(r.store.state.totalExecutionTime).toBe(25)
  })
})
