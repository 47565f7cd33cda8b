// Idle retryers are parked when many are alive: their engine slot is freed
// and rebuilt on their next call. Parking must not be observable: state,
// options, subscribers and the jitter sequence carry over.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { AsyncRetryer, asyncRetry } from 'retry-wasm'
import { advance, flush, track } from './helpers.js'

// Read only: the installed package's engine, to count the slots it holds.
const engineModule = new URL('./front/engine.js', import.meta.resolve('retry-wasm'))
const { engine } = await import(engineModule.href)

/** Engine slots in use (handles with state cells). */
function slotsInUse() {
  let live = 0
  for (let h = 1, empty = 0; empty < 5000; h++) {
    if (engine.cells(h) !== 0) {
      live++
      empty = 0
    } else {
      empty++
    }
  }
  return live
}

const COUNT = 1200

/** `n` retryers that each ran one flow and went idle (parkable). */
async function idleCrowd(n) {
  const crowd = []
  for (let i = 0; i < n; i++) {
    crowd.push(new AsyncRetryer(async () => i))
    await crowd[i].execute()
  }
  return crowd
}

/** `n` retryers each in a flow that never settles: queued, never parkable. */
function busyCrowd(n) {
  return Array.from({ length: n }, () => {
    const r = new AsyncRetryer(() => new Promise(() => {}))
    r.execute()
    return r
  })
}

afterEach(() => {
  vi.useRealTimers()
})

describe('parking idle retryers', () => {
  it('holds engine slots for about 512 idle retryers, and every parked one goes on where it stopped', async () => {
    const retryers = []
    for (let i = 0; i < COUNT; i++) {
      retryers.push(new AsyncRetryer(async (x) => x + i, {
        backoff: 'fixed',
        baseWait: 0,
        initialState: { executionCount: i },
        key: `r${i}`,
      }))
      expect(await retryers[i].execute(1)).toBe(1 + i)
    }
    // All still referenced, so no finalizer freed any: parking did.
    const held = slotsInUse()
    expect(held).toBeLessThanOrEqual(520)
    expect(held).toBeGreaterThan(0)

    for (let i = 0; i < COUNT; i++) {
      const r = retryers[i]
      const before = r.store.state
      expect(before.executionCount).toBe(i + 1)
      expect(before.lastResult).toBe(1 + i)
      expect(before.status).toBe('idle')
      expect(r.getAbortSignal()).toBe(null)
      expect(await r.execute(2)).toBe(2 + i)
      const after = r.store.state
      expect(after.executionCount).toBe(i + 2)
      expect(after.lastResult).toBe(2 + i)
      expect(after.lastExecutionTime).toBeGreaterThanOrEqual(before.lastExecutionTime)
      expect(r.key).toBe(`r${i}`)
    }
    expect(slotsInUse()).toBeLessThanOrEqual(520)
  })

  it('keeps options, subscribers and setOptions across parking', async () => {
    vi.useFakeTimers()
    const onSuccess = vi.fn()
    const onRetry = vi.fn()
    let calls = 0
    const fn = vi.fn(async () => {
      calls++
      if (calls % 2 === 1) throw new Error('odd')
      return calls
    })
    const r = new AsyncRetryer(fn, { maxAttempts: 2, backoff: 'fixed', baseWait: 50, onSuccess, onRetry })
    const seen = []
    const unsubscribe = r.store.subscribe((s) => seen.push(s.executionCount))

    const crowd = []
    const park = async () => crowd.push(await idleCrowd(700))
    await park()

    const t1 = track(r.execute())
    await advance(50)
    expect(t1.value).toBe(2)
    await park()

    // Parked now (r went idle while crowded and 700 more came after it).
    expect(r.store.state.executionCount).toBe(1)
    const t2 = track(r.execute())
    await flush()
    expect(onRetry).toHaveBeenCalledTimes(2)
    await advance(49)
    expect(t2.settled).toBe(false)
    await advance(1)
    expect(t2.value).toBe(4)
    expect(onSuccess).toHaveBeenCalledTimes(2)
    expect(seen.at(-1)).toBe(2)

    await park()
    r.setOptions({ maxAttempts: 1 })
    expect(r.options.baseWait).toBe(50)
    await expect(r.execute()).rejects.toThrow('odd')
    expect(fn).toHaveBeenCalledTimes(5)
    expect(r.store.state.lastError).toBeInstanceOf(Error)
    unsubscribe()
  })

  it('continues a seeded jitter sequence across parking', async () => {
    vi.useFakeTimers()
    /** Runs one flow and returns how long it waited in all (ms). */
    const waited = async (r) => {
      const t = track(r.execute())
      let ms = 0
      while (!t.settled) {
        await advance(1)
        ms++
      }
      return ms
    }
    const failTwice = () => {
      let n = 0
      return async () => {
        if (n++ % 3 < 2) throw new Error('x')
        return 'ok'
      }
    }
    const crowd = []
    const crowdOut = async () => crowd.push(await idleCrowd(700))
    const opts = { maxAttempts: 3, baseWait: 200, jitter: 1, seed: 42 }
    await crowdOut()
    const parked = new AsyncRetryer(failTwice(), opts)
    const first = await waited(parked)
    await crowdOut()
    expect(slotsInUse()).toBeLessThanOrEqual(520)
    const second = await waited(parked)

    // The same seed, never parked between its two flows.
    const fresh = new AsyncRetryer(failTwice(), opts)
    expect([first, second]).toEqual([await waited(fresh), await waited(fresh)])
    // The sequence went on rather than restarting from the seed.
    expect(second).not.toBe(first)
  })
})

describe('retryers built from the same options object', () => {
  it('see every change made to the object between constructions', async () => {
    const opts = { maxAttempts: 1, baseWait: 0, throwOnError: false }
    let calls = 0
    const failing = async () => { calls++; throw new Error('no') }
    const a = new AsyncRetryer(failing, opts)
    opts.maxAttempts = 2
    const b = new AsyncRetryer(failing, opts)
    const onError = () => {}
    opts.onError = onError
    const c = new AsyncRetryer(failing, opts)
    expect(a.options.maxAttempts).toBe(1)
    expect(b.options.maxAttempts).toBe(2)
    expect(b.options.onError).toBe(undefined)
    expect(c.options.onError).toBe(onError)
    await a.execute()
    expect(calls).toBe(1)
    await b.execute()
    expect(calls).toBe(3)
    opts.maxAttempts = 3
    await new AsyncRetryer(failing, opts).execute()
    expect(calls).toBe(6)
  })

  it('do not share setOptions, and a parked one comes back with its own options', async () => {
    const opts = { maxAttempts: 2, baseWait: 0, throwOnError: false }
    let n = 0
    const failing = async () => { n++; throw new Error('no') }
    const a = new AsyncRetryer(failing, opts)
    const b = new AsyncRetryer(failing, opts)
    a.setOptions({ maxAttempts: 3 })
    expect(b.options.maxAttempts).toBe(2)
    await b.execute()
    expect(n).toBe(2)
    // Park `a` (it is idle) under a crowd, then run it: 3 attempts.
    await idleCrowd(1200)
    expect(slotsInUse()).toBeLessThanOrEqual(520)
    n = 0
    await a.execute()
    expect(n).toBe(3)
    n = 0
    await b.execute()
    expect(n).toBe(2)
  })

  it('read getters once per construction, and take what they return each time', async () => {
    let reads = 0
    const opts = { get maxAttempts() { reads++; return reads } }
    const r1 = new AsyncRetryer(async () => 1, opts)
    const r2 = new AsyncRetryer(async () => 1, opts)
    expect(reads).toBe(2)
    expect(r1.options.maxAttempts).toBe(1)
    expect(r2.options.maxAttempts).toBe(2)
  })
})

describe('parking from inside user code', () => {
  it('a retryer whose own callbacks, subscriber and result crowd the engine finishes right, and goes on', async () => {
    vi.useFakeTimers()
    const crowd = [await idleCrowd(700)]
    // Each of these builds and runs idle retryers while r's effects are
    // being carried out: whatever r holds then may be parked under it.
    const build = async () => crowd.push(await idleCrowd(100))
    let calls = 0
    const r = new AsyncRetryer(async () => {
      calls++
      if (calls % 2 === 1) throw new Error('odd')
      // A thenable result: its `then` is read (user code) while r settles.
      return {
        get then() {
          build()
          return undefined
        },
        n: calls,
      }
    }, { backoff: 'fixed', baseWait: 10, onRetry: build, onSuccess: build, onSettled: build })
    const seen = []
    r.store.subscribe((s) => {
      seen.push(s.executionCount)
      build()
    })
    for (let round = 1; round <= 3; round++) {
      const t = track(r.execute())
      await flush()
      await advance(10)
      await flush()
      expect(t.status).toBe('fulfilled')
      expect(t.value.n).toBe(round * 2)
      const state = r.store.state
      expect(state.executionCount).toBe(round)
      expect(state.status).toBe('idle')
      expect(state.isExecuting).toBe(false)
      expect(state.lastResult.n).toBe(round * 2)
      expect(seen.at(-1)).toBe(round)
    }
    expect(calls).toBe(6)
    expect(slotsInUse()).toBeLessThanOrEqual(520)
  })
})

describe('disposed retryers', () => {
  it('run again after Symbol.dispose even while crowded (the freed slot may still be queued)', async () => {
    const dispose = Symbol.dispose ?? Symbol.for('Symbol.dispose')
    // Busy retryers: queued when built, never parkable, so the queue is
    // walked all the way to the disposed one.
    const busy = busyCrowd(700)
    const r = new AsyncRetryer(async (x) => x * 3)
    expect(await r.execute(1)).toBe(3)
    r[dispose]()
    const again = track(r.execute(2))
    await flush()
    expect(again.value).toBe(6)
    expect(await r.execute(3)).toBe(9)
    r[dispose]()
    r[dispose]()
    expect(await r.execute(4)).toBe(12)
    for (const b of busy) b.abort()
  })

  it('read like a new retryer after Symbol.dispose, and start from there', async () => {
    const dispose = Symbol.dispose ?? Symbol.for('Symbol.dispose')
    const r = new AsyncRetryer(async () => 'x')
    expect(await r.execute()).toBe('x')
    expect(r.store.state.executionCount).toBe(1)
    r[dispose]()
    expect(r.store.state).toMatchObject({
      currentAttempt: 0,
      executionCount: 0,
      isExecuting: false,
      lastExecutionTime: 0,
      status: 'idle',
      totalExecutionTime: 0,
    })
    expect(r.getAbortSignal()).toBe(null)
    expect(await r.execute()).toBe('x')
    expect(r.store.state.executionCount).toBe(1)
  })

  it('an enabled function that builds retryers cannot hand its retryer\'s slot to them', async () => {
    const busy = busyCrowd(700)
    const a = new AsyncRetryer(async () => 'a')
    await a.execute()
    let b = null
    a.setOptions({
      enabled: () => {
        b ??= new AsyncRetryer(async () => 'b')
        return false
      },
    })
    expect(a.store.state.status).toBe('disabled')
    expect(b.store.state.status).toBe('idle')
    expect(await b.execute()).toBe('b')
    expect(await a.execute()).toBe(undefined)
    for (const r of busy) r.abort()
  })
})

describe('parking asyncRetry retryers that read no clock', () => {
  it('brought back, they still read no clock on success and retry on time', async () => {
    vi.useFakeTimers()
    const fns = []
    for (let i = 0; i < COUNT; i++) {
      let n = 0
      // Calls 1 and 4 fail, the others succeed.
      fns.push(asyncRetry(async () => (++n % 3 === 1 ? Promise.reject(new Error('once')) : i), { baseWait: 5 }))
    }
    // Round 1: fail, wait 5 ms, succeed; idle retryers beyond 512 get parked.
    const first = fns.map((f) => track(f()))
    await advance(5)
    expect(first.every((t, i) => t.value === i)).toBe(true)
    expect(slotsInUse()).toBeLessThan(COUNT)
    // Round 2: parked ones brought back, one success each, no clock read.
    const now = vi.spyOn(Date, 'now')
    const second = fns.map((f) => track(f()))
    await flush()
    expect(second.every((t, i) => t.value === i)).toBe(true)
    expect(now).not.toHaveBeenCalled()
    now.mockRestore()
    // Round 3: a failure still waits exactly baseWait.
    const third = fns.map((f) => track(f()))
    await advance(4)
    expect(third.some((t) => t.settled)).toBe(false)
    await advance(1)
    expect(third.every((t, i) => t.value === i)).toBe(true)
  })
})
