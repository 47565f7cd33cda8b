// Hedged attempts (SPEC §2c) for AsyncRetryer and asyncRetry, rule by rule:
// which attempt won, which signals aborted and with what, which callbacks
// ran and in what order, the state fields, and that nothing outlives the
// flow. Fake timers, except where the host's async context is what is
// tested (rule 9).
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer, asyncRetry, RetryBudget } from 'retry-wasm'
import { flush, advance, track, deferred, recorder, runToEnd, useFakeClock } from './helpers.js'

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0)

useFakeClock(T0)

/**
 * A function whose every call returns a promise the test settles:
 * `calls[n - 1]` is attempt n's, with the args, the attempt's signal (as
 * `getAbortSignal()` gave it during the call) and its start time.
 */
function controlled(getRetryer) {
  const calls = []
  const fn = vi.fn((...args) => {
    const d = deferred()
    const signal = getRetryer()?.getAbortSignal() ?? null
    calls.push({ ...d, args, signal, at: Date.now() - T0 })
    return d.promise
  })
  return { fn, calls }
}

/** A recorder that also logs onHedge and onBackoff. */
function hedgeRecorder() {
  const rec = recorder()
  rec.cb.onHedge = (info, retryer) => rec.log.push(['onHedge', { ...info }, retryer])
  rec.cb.onBackoff = (info) => rec.log.push(['onBackoff', info.delay, info.attempt])
  return rec
}

const reasonOf = (signal) => signal.aborted && { name: signal.reason?.name, message: signal.reason?.message }

// ------------------------------------------------------------------ rule 1

describe('rule 1: maxAttempts counts every attempt, and must be finite', () => {
  it('attempts start at their hedge times until maxAttempts have started', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 50, maxAttempts: 3, baseWait: 1e6 })
    const t = track(r.execute('a', 1))
    await flush()
    expect(calls.map((c) => c.at)).toEqual([0])
    await advance(49)
    expect(fn).toHaveBeenCalledTimes(1)
    await advance(1)
    expect(calls.map((c) => c.at)).toEqual([0, 50])
    await advance(50)
    expect(calls.map((c) => c.at)).toEqual([0, 50, 100])
    // The backoff options are not used: no more attempts, whatever the time.
    await advance(10_000)
    expect(fn).toHaveBeenCalledTimes(3)
    expect(calls.every((c) => c.args.length === 2 && c.args[0] === 'a')).toBe(true)
    expect(rec.log.filter((e) => e[0] === 'onHedge').map((e) => e[1])).toEqual([
      { attempt: 2, elapsed: 50, running: 1 },
      { attempt: 3, elapsed: 100, running: 2 },
    ])
    expect(rec.log.find((e) => e[0] === 'onHedge')[2]).toBe(r)
    calls[2].resolve('third')
    await flush()
    expect(t.value).toBe('third')
  })

  it('Infinity with hedge is a RangeError naming maxAttempts, at construction and in setOptions', () => {
    const f = async () => 1
    expect(() => new AsyncRetryer(f, { hedge: 10, maxAttempts: Infinity, maxTotalExecutionTime: 1000 }))
      .toThrow(RangeError)
    try {
      new AsyncRetryer(f, { maxAttempts: Infinity, maxTotalExecutionTime: 1000, hedge: () => 10 })
    } catch (e) {
      expect(e.message).toContain("'maxAttempts'")
      expect(e.message).toContain('hedge')
      expect(e.message).toContain('Infinity')
    }
    const r = new AsyncRetryer(f, { maxAttempts: Infinity, maxTotalExecutionTime: 1000 })
    expect(() => r.setOptions({ hedge: 10 })).toThrow(RangeError)
    expect(r.options.hedge).toBeUndefined()
    r.setOptions({ hedge: 10, maxAttempts: 4 })
    expect(r.options.hedge).toBe(10)
  })

  it('bad hedge values: a TypeError or RangeError naming hedge and the value', () => {
    const f = async () => 1
    for (const [hedge, type, shown] of [[-1, RangeError, '-1'], [NaN, RangeError, 'NaN'], ['50', TypeError, '50'], [null, TypeError, 'null'], [true, TypeError, 'true']]) {
      let error
      try {
        new AsyncRetryer(f, { hedge })
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(type)
      expect(error.message).toContain("'hedge'")
      expect(error.message).toContain(shown)
    }
    expect(() => new AsyncRetryer(f, { onHedge: 'log' })).toThrow(TypeError)
    for (const hedge of [0, 10, Infinity, () => 5, undefined]) {
      expect(() => new AsyncRetryer(f, { hedge })).not.toThrow()
    }
  })

  it('a dynamic maxAttempts answering Infinity ends the flow with a RangeError', async () => {
    const fn = vi.fn(() => new Promise(() => {}))
    const r = new AsyncRetryer(fn, { hedge: 10, maxAttempts: () => Infinity, maxTotalExecutionTime: 1000, throwOnError: false })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('rejected')
    expect(t.reason).toBeInstanceOf(RangeError)
    expect(t.reason.message).toContain('maxAttempts')
    expect(vi.getTimerCount()).toBe(0)
  })
})

// ------------------------------------------------------------------ rule 2

describe('rule 2: the first success wins', () => {
  it('the others abort with an AbortError, run no callback, and their late outcomes are ignored', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 20, maxAttempts: 3 })
    const t = track(r.execute())
    await advance(40)
    expect(fn).toHaveBeenCalledTimes(3)
    rec.log.length = 0
    calls[1].resolve('second')
    await flush()
    expect(t.value).toBe('second')
    expect(rec.names()).toEqual(['onSuccess', 'onSettled'])
    expect(calls[1].signal.aborted).toBe(false)
    for (const i of [0, 2]) {
      expect(reasonOf(calls[i].signal)).toEqual({
        name: 'AbortError',
        message: 'retry-wasm: aborted (another attempt settled the flow)',
      })
    }
    // Late outcomes of the losers change nothing.
    calls[0].resolve('first')
    calls[2].reject(new Error('late'))
    await flush()
    expect(rec.names()).toEqual(['onSuccess', 'onSettled'])
    expect(r.store.state).toMatchObject({ lastResult: 'second', lastError: undefined, executionCount: 1, currentAttempt: 0, isExecuting: false, status: 'idle' })
    expect(r.store.state.totalExecutionTime).toBe(40)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a hedge of 0 starts every attempt at once, in execute()', () => {
    let r
    const { fn, calls } = controlled(() => r)
    r = new AsyncRetryer(fn, { hedge: 0, maxAttempts: 3 })
    r.execute('x')
    expect(fn).toHaveBeenCalledTimes(3)
    expect(new Set(calls.map((c) => c.signal)).size).toBe(3)
    expect(vi.getTimerCount()).toBe(0)
    r.abort()
  })

  it('asyncRetry hedges too', async () => {
    let n = 0
    const run = asyncRetry(() => {
      n++
      return n === 1 ? new Promise(() => {}) : Promise.resolve('fast')
    }, { hedge: 25, maxAttempts: 2 })
    const t = track(run())
    await advance(25)
    expect(t.value).toBe('fast')
    expect(n).toBe(2)
    expect(vi.getTimerCount()).toBe(0)
  })
})

// ------------------------------------------------------------------ rule 3

describe('rule 3: a failure shouldRetry refuses ends everything', () => {
  it("rejects with that error, 'not-retryable', the others aborted", async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    const fatal = new Error('fatal')
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 20, maxAttempts: 3, throwOnError: true, shouldRetry: (e) => e !== fatal })
    const t = track(r.execute())
    await advance(20)
    rec.log.length = 0
    calls[1].reject(fatal)
    await flush()
    expect(t.status).toBe('rejected')
    expect(t.reason).toBe(fatal)
    expect(rec.log).toEqual([
      ['onError', fatal],
      ['onLastError', fatal],
      ['onGiveUp', fatal, 'not-retryable'],
      ['onSettled'],
    ])
    expect(reasonOf(calls[0].signal).name).toBe('AbortError')
    expect(calls[1].signal.aborted).toBe(false)
    await advance(1000)
    expect(fn).toHaveBeenCalledTimes(2)
    expect(vi.getTimerCount()).toBe(0)
  })
})

// ------------------------------------------------------------------ rule 4

describe('rule 4: other failures start the next attempt at once', () => {
  it('with no earlier attempt running: a plain retry, then the hedge time of the new attempt', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 100, maxAttempts: 4 })
    track(r.execute())
    await advance(10)
    const e1 = new Error('one')
    calls[0].reject(e1)
    await flush()
    expect(calls.map((c) => c.at)).toEqual([0, 10])
    expect(rec.log).toEqual([['onError', e1], ['onRetry', 1, e1], ['onSettled'], ['onBackoff', 0, 1]])
    // Attempt 3 at attempt 2's hedge time: 110.
    await advance(99)
    expect(fn).toHaveBeenCalledTimes(2)
    await advance(1)
    expect(calls.map((c) => c.at)).toEqual([0, 10, 110])
    expect(rec.log.at(-1)).toEqual(['onHedge', { attempt: 3, elapsed: 110, running: 1 }, r])
    r.abort()
  })

  it('while others run: onHedge reports them', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 50, maxAttempts: 3 })
    track(r.execute())
    await advance(60)
    calls[0].reject(new Error('one'))
    await flush()
    expect(calls.map((c) => c.at)).toEqual([0, 50, 60])
    expect(rec.log.at(-1)).toEqual(['onHedge', { attempt: 3, elapsed: 60, running: 1 }, r])
    r.abort()
  })

  it('a retryAfter hint holds the next attempt until it ends: not at a hedge time, not after another failure', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 100, maxAttempts: 4, retryAfter: (e) => e.hint })
    track(r.execute())
    await advance(120) // attempt 2 at 100
    calls[0].reject(Object.assign(new Error('busy'), { hint: 300 }))
    await flush()
    expect(rec.log.at(-1)).toEqual(['onBackoff', 300, 1])
    await advance(100) // attempt 2's hedge time
    expect(fn).toHaveBeenCalledTimes(2)
    calls[1].reject(new Error('no hint'))
    await flush()
    expect(fn).toHaveBeenCalledTimes(2)
    await advance(199)
    expect(fn).toHaveBeenCalledTimes(2)
    await advance(1)
    expect(calls.map((c) => c.at)).toEqual([0, 100, 420])
    r.abort()
  })

  it('with no attempt left: waits for the running ones, and fails with the last failure', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 10, maxAttempts: 3, throwOnError: 'last' })
    const t = track(r.execute())
    await advance(20)
    rec.log.length = 0
    const [e1, e2, e3] = [new Error('1'), new Error('2'), new Error('3')]
    calls[0].reject(e1)
    await flush()
    calls[2].reject(e3)
    await flush()
    expect(t.settled).toBe(false)
    expect(r.store.state).toMatchObject({ isExecuting: true, currentAttempt: 3, lastError: e3, status: 'retrying' })
    calls[1].reject(e2)
    await flush()
    expect(t.reason).toBe(e2)
    expect(rec.log).toEqual([
      ['onError', e1], ['onSettled'],
      ['onError', e3], ['onSettled'],
      ['onError', e2], ['onLastError', e2], ['onGiveUp', e2, 'attempts-exhausted'], ['onSettled'],
    ])
    expect(r.store.state).toMatchObject({ isExecuting: false, currentAttempt: 3, lastError: e2, status: 'idle' })
    expect(vi.getTimerCount()).toBe(0)
  })
})

// ------------------------------------------------------------------ rule 5

describe('rule 5: each attempt after the first asks the budget', () => {
  it('a budget that refuses stops the hedges; the flow gives up with budget-exhausted', async () => {
    const budget = new RetryBudget({ maxTokens: 4, tokenRatio: 0.1 })
    // Two failures elsewhere leave 2 tokens: no more than half.
    const drain = new AsyncRetryer(async () => { throw new Error('x') }, { budget, maxAttempts: 1, throwOnError: false })
    await drain.execute()
    await drain.execute()
    expect(budget.tokens).toBe(2)
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 10, maxAttempts: 3, budget, throwOnError: false })
    const t = track(r.execute())
    await advance(1000)
    expect(fn).toHaveBeenCalledTimes(1)
    const e = new Error('down')
    calls[0].reject(e)
    await flush()
    expect(t.value).toBeUndefined()
    expect(rec.log).toContainEqual(['onGiveUp', e, 'budget-exhausted'])
    expect(budget.tokens).toBe(1)
  })
})

// ------------------------------------------------------------------ rule 6

describe('rule 6: deadlines', () => {
  it('maxExecutionTime is per attempt: a timed-out attempt is a failure and the flow goes on', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 50, maxAttempts: 3, maxExecutionTime: 120 })
    const t = track(r.execute())
    await advance(100)
    rec.log.length = 0
    await advance(20)
    expect(rec.names()).toEqual(['onExecutionTimeout', 'onError', 'onSettled'])
    expect(rec.names()).not.toContain('onAbort')
    expect(reasonOf(calls[0].signal).name).toBe('TimeoutError')
    expect(calls[1].signal.aborted).toBe(false)
    expect(r.store.state.lastError?.name).toBe('TimeoutError')
    calls[2].resolve('third')
    await flush()
    expect(t.value).toBe('third')
    expect(reasonOf(calls[1].signal).name).toBe('AbortError')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('the total deadline aborts every running attempt', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 50, maxAttempts: 3, maxTotalExecutionTime: 130 })
    const t = track(r.execute())
    await advance(130)
    expect(t.settled).toBe(true)
    expect(t.value).toBeUndefined()
    expect(calls.map((c) => reasonOf(c.signal).message)).toEqual(Array(3).fill('retry-wasm: aborted (total-timeout)'))
    expect(rec.names().slice(-2)).toEqual(['onTotalExecutionTimeout', 'onAbort'])
    expect(vi.getTimerCount()).toBe(0)
  })

  for (const [how, reason] of [['abort()', 'manual'], ['a new execution', 'new-execution'], ['the signal option', 'signal']]) {
    it(`${how} aborts every running attempt`, async () => {
      const outside = new AbortController()
      let r
      const { fn, calls } = controlled(() => r)
      const rec = hedgeRecorder()
      r = new AsyncRetryer(fn, { ...rec.cb, hedge: 30, maxAttempts: 3, signal: outside.signal })
      const t = track(r.execute())
      await advance(30)
      if (how === 'abort()') r.abort()
      else if (how === 'a new execution') r.execute()
      else outside.abort()
      await flush()
      expect(t.settled).toBe(true)
      expect(t.value).toBeUndefined()
      expect(rec.log).toContainEqual(['onAbort', reason])
      expect(calls.slice(0, 2).map((c) => reasonOf(c.signal))).toEqual(Array(2).fill({ name: 'AbortError', message: `retry-wasm: aborted (${reason})` }))
      if (how === 'a new execution') {
        expect(fn).toHaveBeenCalledTimes(3)
        expect(calls[2].signal.aborted).toBe(false)
        r.abort()
      }
      expect(vi.getTimerCount()).toBe(0)
    })
  }
})

// ------------------------------------------------------------------ rule 7

describe('rule 7: getAbortSignal()', () => {
  it("during attempt n's synchronous part returns n's signal; at other times the newest's", async () => {
    let r
    const { fn, calls } = controlled(() => r)
    r = new AsyncRetryer(fn, { hedge: 0, maxAttempts: 3 })
    expect(r.getAbortSignal()).toBeNull()
    track(r.execute())
    const signals = calls.map((c) => c.signal)
    expect(new Set(signals).size).toBe(3)
    expect(r.getAbortSignal()).toBe(signals[2])
    calls[2].reject(new Error('three'))
    await flush()
    // Attempt 3 failed: the most recently started is still 3.
    expect(r.getAbortSignal()).toBe(signals[2])
    calls[0].resolve('one')
    await flush()
    expect(signals[0].aborted).toBe(false)
    expect(signals[1].aborted).toBe(true)
    expect(r.getAbortSignal()).toBeNull()
  })
})

// ------------------------------------------------------------------ rule 8

describe('rule 8: state', () => {
  it('currentAttempt is the most recently started; status is retrying from attempt 2', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const seen = []
    r = new AsyncRetryer(fn, { hedge: 50, maxAttempts: 3 })
    r.store.subscribe((s) => seen.push(`${s.status}:${s.currentAttempt}:${s.isExecuting}`))
    track(r.execute())
    await flush()
    expect(r.store.state).toMatchObject({ status: 'executing', currentAttempt: 1, isExecuting: true })
    await advance(50)
    expect(r.store.state).toMatchObject({ status: 'retrying', currentAttempt: 2 })
    calls[0].reject(new Error('1')) // starts attempt 3
    await flush()
    expect(r.store.state).toMatchObject({ status: 'retrying', currentAttempt: 3 })
    calls[1].resolve('ok')
    await flush()
    expect(r.store.state).toMatchObject({ status: 'idle', currentAttempt: 0, isExecuting: false, lastResult: 'ok', executionCount: 1 })
    expect(seen).toContain('retrying:3:true')
    expect(seen.at(-1)).toBe('idle:0:false')
    expect(Object.keys(r.store.state).sort()).toEqual(['currentAttempt', 'executionCount', 'isExecuting', 'lastError', 'lastExecutionTime', 'lastResult', 'status', 'totalExecutionTime'])
  })
})

// ------------------------------------------------------------------ rule 9

describe('rule 9: nesting and cancellation', () => {
  it('an AbortError the flow did not cause cancels it; the others abort', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 20, maxAttempts: 3 })
    const t = track(r.execute())
    await advance(20)
    rec.log.length = 0
    calls[1].reject(new DOMException('stop', 'AbortError'))
    await flush()
    expect(t.value).toBeUndefined()
    expect(rec.names()).toEqual(['onSettled'])
    expect(reasonOf(calls[0].signal).name).toBe('AbortError')
    expect(r.store.state.isExecuting).toBe(false)
    // The rejection of the attempt retry-wasm aborted is ignored.
    calls[0].reject(calls[0].signal.reason)
    await flush()
    expect(rec.names()).toEqual(['onSettled'])
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a retryer passing through never hedges', async () => {
    vi.useRealTimers()
    try {
      let inner = 0
      const innerRun = asyncRetry(() => {
        inner++
        return new Promise((_, reject) => setTimeout(() => reject(new Error('inner')), 30))
      }, { hedge: 1, maxAttempts: 3, nested: 'passthrough' })
      const outer = asyncRetry(() => innerRun(), { maxAttempts: 1 })
      await expect(outer()).rejects.toThrow('inner')
      expect(inner).toBe(1)
    } finally {
      vi.useFakeTimers({ now: T0 })
    }
  })

  it('each hedged attempt is its own context: what it starts after its first await is nested in it', async () => {
    vi.useRealTimers()
    try {
      const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
      let inner = 0
      const innerRun = asyncRetry(async () => {
        inner++
        throw new Error('inner')
      }, { maxAttempts: 3, backoff: 'fixed', baseWait: 1 })
      let attempt = 0
      // Attempt 1 starts its inner flow after attempt 2 started: it is
      // still inside attempt 1, which forbids inner retries.
      const outer = asyncRetry(async () => {
        const mine = ++attempt
        await sleep(mine === 1 ? 40 : 5)
        return innerRun()
      }, { hedge: 10, maxAttempts: 2, innerRetries: false, throwOnError: true })
      await expect(outer()).rejects.toThrow('inner')
      expect(attempt).toBe(2)
      expect(inner).toBe(2)
    } finally {
      vi.useFakeTimers({ now: T0 })
    }
  })
})

// ------------------------------------------------------------- the rest

describe('a dynamic hedge, callbacks and setOptions', () => {
  it('hedge(attempt, retryer) is asked after each start', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const hedge = vi.fn((attempt) => [0, 30, 70][attempt] ?? Infinity)
    r = new AsyncRetryer(fn, { hedge, maxAttempts: 5 })
    track(r.execute())
    await advance(200)
    expect(calls.map((c) => c.at)).toEqual([0, 30, 100])
    expect(hedge.mock.calls).toEqual([[1, r], [2, r], [3, r]])
    r.abort()
  })

  it('a hedge function that returns a bad value ends the flow with a RangeError, its attempts aborted', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    r = new AsyncRetryer(fn, { hedge: () => -5, maxAttempts: 3, throwOnError: false })
    const t = track(r.execute())
    await flush()
    expect(t.reason).toBeInstanceOf(RangeError)
    expect(t.reason.message).toContain('hedge')
    expect(reasonOf(calls[0].signal).name).toBe('AbortError')
  })

  it('an onHedge that throws ends the flow with what it threw, every attempt aborted', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    const boom = new Error('boom')
    r = new AsyncRetryer(fn, { hedge: 10, maxAttempts: 3, onHedge: () => { throw boom } })
    const t = track(r.execute())
    await advance(10)
    expect(t.reason).toBe(boom)
    expect(fn).toHaveBeenCalledTimes(1)
    expect(reasonOf(calls[0].signal).name).toBe('AbortError')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('onHedge may abort the flow', async () => {
    let r
    const { fn } = controlled(() => r)
    const rec = hedgeRecorder()
    r = new AsyncRetryer(fn, { ...rec.cb, hedge: 10, maxAttempts: 3, onHedge: () => r.abort() })
    const t = track(r.execute())
    await advance(10)
    expect(t.value).toBeUndefined()
    expect(rec.log).toContainEqual(['onAbort', 'manual'])
    expect(vi.getTimerCount()).toBe(0)
  })

  it('setOptions({ hedge: undefined }) during a flow stops the timed starts; a failure still starts the next', async () => {
    let r
    const { fn, calls } = controlled(() => r)
    r = new AsyncRetryer(fn, { hedge: 20, maxAttempts: 3 })
    const t = track(r.execute())
    await flush()
    r.setOptions({ hedge: undefined })
    await advance(100)
    expect(fn).toHaveBeenCalledTimes(1)
    calls[0].reject(new Error('1'))
    await flush()
    expect(fn).toHaveBeenCalledTimes(2)
    calls[1].resolve(2)
    await flush()
    expect(t.value).toBe(2)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('options show hedge and onHedge as given', () => {
    const onHedge = () => {}
    const r = new AsyncRetryer(async () => 1, { hedge: 50, onHedge })
    expect(r.options.hedge).toBe(50)
    expect(r.options.onHedge).toBe(onHedge)
    r.setOptions({ hedge: undefined })
    expect('hedge' in r.options).toBe(false)
  })
})

// ----------------------------------------------------------------- rule 11

describe('rule 11: nothing outlives the flow', () => {
  it('every ending leaves no timer and no listener on the outside signal', async () => {
    const outside = new AbortController()
    const added = []
    const removed = []
    const add = outside.signal.addEventListener.bind(outside.signal)
    const remove = outside.signal.removeEventListener.bind(outside.signal)
    outside.signal.addEventListener = (type, l, o) => { added.push(l); add(type, l, o) }
    outside.signal.removeEventListener = (type, l, o) => { removed.push(l); remove(type, l, o) }
    for (const end of ['success', 'failure', 'timeout', 'abort']) {
      const { fn, calls } = controlled(() => null)
      const r = new AsyncRetryer(fn, { hedge: 10, maxAttempts: 3, signal: outside.signal, maxExecutionTime: 25, throwOnError: false })
      const t = track(r.execute())
      await advance(20)
      if (end === 'success') calls[1].resolve(1)
      else if (end === 'failure') calls.forEach((c) => c.reject(new Error('x')))
      else if (end === 'abort') r.abort()
      await runToEnd(t)
      expect(vi.getTimerCount()).toBe(0)
    }
    expect(removed.length).toBe(added.length)
    expect(added.length).toBe(4)
  })
})
