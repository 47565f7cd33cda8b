// Flow rules of SPEC §1 (rules 1-14), delays, jitter, timeouts, abort,
// setOptions and re-entrancy, driven by vitest fake timers against the packed
// `retry-wasm` package.
import { describe, it, expect, vi, beforeEach, afterEach } from 'vitest'
import { AsyncRetryer, asyncRetry } from 'retry-wasm'
import { flush, advance, track, deferred, DEFAULT_STATE, expectNextAttemptAt, measureDelays } from './helpers.js'

// ---------------------------------------------------------------- helpers

const T0 = Date.UTC(2030, 0, 1, 0, 0, 0)
// captured before any fake timers are installed
const realSetImmediate = globalThis.setImmediate

beforeEach(() => {
  vi.useFakeTimers({ now: T0 })
})
afterEach(() => {
  vi.clearAllTimers()
  vi.useRealTimers()
})

// Callback recorder: entries are [name, ...args without the retryer].
function recorder(into = []) {
  const log = into
  const seen = []
  const cb = {
    onRetry: (attempt, error, r) => { seen.push(r); log.push(['onRetry', attempt, error]) },
    onError: (error, args, r) => { seen.push(r); log.push(['onError', error, args]) },
    onLastError: (error, r) => { seen.push(r); log.push(['onLastError', error]) },
    onSuccess: (result, args, r) => { seen.push(r); log.push(['onSuccess', result, args]) },
    onSettled: (args, r) => { seen.push(r); log.push(['onSettled', args]) },
    onAbort: (reason, r) => { seen.push(r); log.push(['onAbort', reason]) },
    onExecutionTimeout: (r) => { seen.push(r); log.push(['onExecutionTimeout']) },
    onTotalExecutionTimeout: (r) => { seen.push(r); log.push(['onTotalExecutionTimeout']) },
  }
  return { log, cb, seen, names: () => log.map((e) => e[0]) }
}

// A function that plays a script: 'ok:<v>' resolves, Error/any value rejects.
function script(steps) {
  let i = 0
  return vi.fn(() => {
    const step = steps[Math.min(i, steps.length - 1)]
    i++
    if (step && typeof step === 'object' && 'ok' in step) return Promise.resolve(step.ok)
    if (step && typeof step === 'object' && 'never' in step) return new Promise(() => {})
    return Promise.reject(step && typeof step === 'object' && 'err' in step ? step.err : step)
  })
}

async function sanityRetry() {
  const fn = script([new Error('once'), { ok: 'fine' }])
  const r = new AsyncRetryer(fn, { baseWait: 10 })
  const t = track(r.execute())
  await advance(10)
  expect(t.status).toBe('fulfilled')
  expect(t.value).toBe('fine')
  expect(fn).toHaveBeenCalledTimes(2)
}

// Take over process-level error reporting for the duration of `body` so that
// errors a library reports "as the host's uncaught error" can be observed.
async function captureUncaught(body) {
  const events = ['uncaughtException', 'unhandledRejection']
  const saved = {}
  const caught = []
  const mine = (e) => caught.push(e)
  for (const ev of events) {
    saved[ev] = process.listeners(ev)
    process.removeAllListeners(ev)
    process.on(ev, mine)
  }
  try {
    await body(caught)
    // let a deferred report arrive (macrotask on the real clock)
    await flush()
    await new Promise((r) => realSetImmediate(r))
    await new Promise((r) => realSetImmediate(r))
  } finally {
    for (const ev of events) {
      process.removeListener(ev, mine)
      for (const l of saved[ev]) process.on(ev, l)
    }
  }
  return caught
}

// ------------------------------------------------------------- pacer compat

describe('the methods are bound, as pacer\'s are', () => {
  it('work destructured, keep their identity, and can be replaced', async () => {
    const fn = vi.fn(async (x) => x * 2)
    const r = new AsyncRetryer(fn)
    const { execute, abort, reset, setOptions, getAbortSignal } = r
    for (const name of ['execute', 'abort', 'reset', 'setOptions', 'getAbortSignal']) {
      expect(typeof r[name]).toBe('function')
      expect(r[name]).toBe(r[name])
    }
    expect(getAbortSignal()).toBe(null)
    const p = execute(21)
    expect(getAbortSignal()).toBeInstanceOf(AbortSignal)
    expect(await p).toBe(42)
    setOptions({ enabled: false })
    expect(r.store.state.status).toBe('disabled')
    reset()
    abort()
    expect(r.store.state.executionCount).toBe(0)
    const mine = () => 'replaced'
    r.execute = mine
    expect(r.execute).toBe(mine)
  })

  it('keep one store, made when first read, that sees the flows run before it', async () => {
    const r = new AsyncRetryer(async () => 7)
    expect(await r.execute()).toBe(7)
    const store = r.store
    expect(r.store).toBe(store)
    expect(store.state.executionCount).toBe(1)
    expect(store.state.lastResult).toBe(7)
    expect(store.state.status).toBe('idle')
  })
})

describe('Pacer-compatible timing of the first attempt', () => {
  it('invokes attempt 1 synchronously inside execute()', () => {
    const fn = vi.fn(() => new Promise(() => {}))
    const r = new AsyncRetryer(fn)
    const p = r.execute('a')
    expect(p).toBeInstanceOf(Promise)
    expect(fn).toHaveBeenCalledTimes(1)
    expect(fn).toHaveBeenCalledWith('a')
    expect(r.store.state.status).toBe('executing')
    expect(r.store.state.currentAttempt).toBe(1)
    expect(r.store.state.isExecuting).toBe(true)
    r.abort()
  })

  it("shows 'retrying' within one microtask after attempt 1 rejects", async () => {
    const err = new Error('e1')
    const r = new AsyncRetryer(() => Promise.reject(err), { throwOnError: false })
    const t = track(r.execute())
    await Promise.resolve()
    expect(r.store.state.status).toBe('retrying')
    expect(r.store.state.currentAttempt).toBe(2)
    expect(r.store.state.isExecuting).toBe(true)
    expect(r.store.state.lastError).toBe(err)
    r.abort()
    await flush()
    expect(t.status).toBe('fulfilled')
  })

  it('a zero delay proceeds without setTimeout', async () => {
    const fn = script([new Error('a'), new Error('b'), { ok: 'done' }])
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout')
    const r = new AsyncRetryer(fn, { baseWait: 0 })
    const t = track(r.execute())
    await flush()
    // no timer advanced at all
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBe('done')
    expect(fn).toHaveBeenCalledTimes(3)
    expect(vi.getTimerCount()).toBe(0)
    expect(setTimeoutSpy).not.toHaveBeenCalled()
    setTimeoutSpy.mockRestore()
  })
})

// ------------------------------------------------------------------ rule 1

describe('rule 1: execute passes args; disabled resolves undefined at once', () => {
  it('passes every argument, by identity, to fn and to callbacks', async () => {
    const obj = { id: 7 }
    const fn = vi.fn(async (a, b, c) => `${a}-${b}-${c.id}`)
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb })
    const result = await r.execute('x', 2, obj)
    expect(result).toBe('x-2-7')
    expect(fn.mock.calls[0][2]).toBe(obj)
    expect(rec.log).toEqual([
      ['onSuccess', 'x-2-7', ['x', 2, obj]],
      ['onSettled', ['x', 2, obj]],
    ])
    expect(rec.log[0][2][2]).toBe(obj)
  })

  it('passes the same args to every attempt and to onError', async () => {
    const fn = script([new Error('1'), { ok: 1 }])
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb, baseWait: 5 })
    const t = track(r.execute('k', 9))
    await advance(5)
    expect(t.value).toBe(1)
    expect(fn.mock.calls).toEqual([['k', 9], ['k', 9]])
    expect(rec.log[0]).toEqual(['onError', expect.any(Error), ['k', 9]])
  })

  it('a call without arguments gives its callbacks one empty array, the same each time', async () => {
    const fn = script([new Error('1'), { ok: 1 }])
    const seen = []
    const r = new AsyncRetryer(fn, {
      baseWait: 5,
      onError: (_e, args) => seen.push(args),
      onSuccess: (_v, args) => seen.push(args),
      onSettled: (args) => seen.push(args),
    })
    const t = track(r.execute())
    await advance(5)
    expect(t.value).toBe(1)
    expect(fn.mock.calls).toEqual([[], []])
    expect(seen.length).toBe(4)
    for (const args of seen) expect(args).toBe(seen[0])
    expect(seen[0]).toEqual([])
  })

  it('every callback receives the retryer itself as its last argument', async () => {
    const rec = recorder()
    const r = new AsyncRetryer(script([new Error('x'), { ok: 1 }]), { ...rec.cb, baseWait: 1 })
    const t = track(r.execute())
    await advance(1)
    expect(t.value).toBe(1)
    expect(rec.seen.length).toBe(rec.log.length)
    for (const s of rec.seen) expect(s).toBe(r)
  })

  it('enabled: false resolves undefined at once and calls nothing', async () => {
    const fn = vi.fn(async () => 1)
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb, enabled: false })
    expect(r.store.state.status).toBe('disabled')
    const before = r.store.state
    const t = track(r.execute('a'))
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(fn).not.toHaveBeenCalled()
    expect(rec.log).toEqual([])
    expect(vi.getTimerCount()).toBe(0)
    // nothing changed, so the very same state object
    expect(r.store.state).toBe(before)
    expect(r.store.state.status).toBe('disabled')
    expect(r.store.state.isExecuting).toBe(false)
  })

  it('enabled as a function is read at execute()', async () => {
    let on = false
    const fn = vi.fn(async () => 'v')
    const enabled = vi.fn(() => on)
    const r = new AsyncRetryer(fn, { enabled })
    expect(await r.execute()).toBeUndefined()
    expect(fn).not.toHaveBeenCalled()
    expect(enabled).toHaveBeenCalled()
    expect(enabled.mock.calls.every((c) => c[0] === r)).toBe(true)
    on = true
    expect(await r.execute()).toBe('v')
    expect(fn).toHaveBeenCalledTimes(1)
  })

  it('asyncRetry returns a function that forwards args and results', async () => {
    const run = asyncRetry(async (a, b) => a + b, { maxAttempts: 2 })
    expect(typeof run).toBe('function')
    expect(await run(2, 3)).toBe(5)
    // detached call still works (bound function)
    const detached = run
    expect(await detached(1, 1)).toBe(2)
  })
})

// ------------------------------------------------------------------ rule 2

describe('rule 2: a new execute() aborts the active flow with new-execution', () => {
  it('aborts a flow whose attempt is pending', async () => {
    const first = deferred()
    const signals = []
    let r
    const fn = vi.fn((tag) => {
      signals.push(r.getAbortSignal())
      return tag === 'first' ? first.promise : Promise.resolve('second-result')
    })
    const log = []
    const rec = recorder(log)
    r = new AsyncRetryer(fn, {
      ...rec.cb,
      throwOnError: 'last',
      onAbort: (reason) => {
        log.push(['onAbort', reason])
        log.push(['fn calls at abort', fn.mock.calls.length])
      },
    })
    const t1 = track(r.execute('first'))
    await flush()
    const t2 = track(r.execute('second'))
    await flush()
    expect(t1.status).toBe('fulfilled')
    expect(t1.value).toBeUndefined()
    expect(t2.status).toBe('fulfilled')
    expect(t2.value).toBe('second-result')
    expect(signals[0].aborted).toBe(true)
    expect(signals[1].aborted).toBe(false)
    expect(rec.names()).toEqual(['onAbort', 'fn calls at abort', 'onSuccess', 'onSettled'])
    expect(log[0]).toEqual(['onAbort', 'new-execution'])
    // the old flow was aborted before the new one called fn
    expect(log[1]).toEqual(['fn calls at abort', 1])
    expect(r.store.state.executionCount).toBe(1)
    expect(r.store.state.lastResult).toBe('second-result')

    // the old attempt settling later changes nothing
    const snapshot = r.store.state
    first.resolve('late')
    await flush()
    expect(r.store.state).toBe(snapshot)
    expect(rec.names()).toEqual(['onAbort', 'fn calls at abort', 'onSuccess', 'onSettled'])
  })

  it('aborts a flow that is waiting; its timer never fires', async () => {
    const calls = []
    const fn = vi.fn((tag) => {
      calls.push(tag)
      return tag === 'first' ? Promise.reject(new Error('f')) : new Promise(() => {})
    })
    const rec = recorder()
    const r = new AsyncRetryer(fn, { onAbort: rec.cb.onAbort, baseWait: 100, maxAttempts: 5 })
    const t1 = track(r.execute('first'))
    await flush()
    expect(r.store.state.status).toBe('retrying')
    const t2 = track(r.execute('second'))
    await flush()
    expect(t1.status).toBe('fulfilled')
    expect(t1.value).toBeUndefined()
    await advance(10_000)
    expect(calls).toEqual(['first', 'second'])
    expect(rec.log).toEqual([['onAbort', 'new-execution']])
    r.abort()
    await flush()
    expect(t2.value).toBeUndefined()
  })

  it('asyncRetry: overlapping calls abort the earlier one', async () => {
    const onAbort = vi.fn()
    const run = asyncRetry(
      (ms) => new Promise((res) => setTimeout(() => res(ms), ms)),
      { onAbort },
    )
    const t1 = track(run(100))
    const t2 = track(run(50))
    await flush()
    expect(t1.status).toBe('fulfilled')
    expect(t1.value).toBeUndefined()
    expect(onAbort).toHaveBeenCalledWith('new-execution', expect.anything())
    await advance(100)
    expect(t2.value).toBe(50)
  })

  it('lastError is cleared when a new flow starts', async () => {
    const err = new Error('x')
    const r = new AsyncRetryer(script([err, { never: 1 }]), { maxAttempts: 1, throwOnError: false })
    await r.execute()
    expect(r.store.state.lastError).toBe(err)
    const t = track(r.execute())
    expect(r.store.state.lastError).toBeUndefined()
    r.abort()
    await flush()
    expect(t.value).toBeUndefined()
  })
})

// ------------------------------------------------------------------ rule 3

describe('rule 3: success', () => {
  it('updates state, then onSuccess, then onSettled; resolves the result', async () => {
    const log = []
    let r
    const snap = (name) => log.push([name, { ...r.store.state }])
    r = new AsyncRetryer(async () => ({ data: 1 }), {
      onSuccess: (result, args) => { snap('onSuccess'); log.push(['result', result, args]) },
      onSettled: () => snap('onSettled'),
    })
    vi.setSystemTime(T0 + 5000)
    const p = r.execute('q')
    const result = await p
    expect(result).toEqual({ data: 1 })
    expect(log.map((e) => e[0])).toEqual(['onSuccess', 'result', 'onSettled'])
    const expected = {
      currentAttempt: 0,
      executionCount: 1,
      isExecuting: false,
      lastError: undefined,
      lastExecutionTime: T0 + 5000,
      lastResult: result,
      status: 'idle',
      totalExecutionTime: 0,
    }
    // contract-silent: lastExecutionTime is a Date.now()-style timestamp.
    expect(log[0][1]).toEqual(expected)
    expect(log[1][1]).toBe(result)
    expect(log[1][2]).toEqual(['q'])
    expect(r.store.state).toEqual(expected)
    expect(r.store.state.lastResult).toBe(result)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('records totalExecutionTime from execute() to success, waits included', async () => {
    const fn = script([new Error('1'), new Error('2'), { ok: 'r' }])
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb, throwOnError: 'last', baseWait: 100 })
    const t = track(r.execute())
    await flush()
    await advance(100)
    await advance(200)
    expect(t.value).toBe('r')
    expect(rec.names()).toEqual([
      'onError', 'onRetry', 'onSettled',
      'onError', 'onRetry', 'onSettled',
      'onSuccess', 'onSettled',
    ])
    expect(r.store.state).toEqual({
      currentAttempt: 0,
      executionCount: 1,
      isExecuting: false,
      lastError: rec.log[3][1],
      lastExecutionTime: T0 + 300,
      lastResult: 'r',
      status: 'idle',
      totalExecutionTime: 300,
    })
  })

  it('executionCount counts successful execute() calls, not attempts', async () => {
    const fn = script([new Error('1'), { ok: 1 }])
    const r = new AsyncRetryer(fn, { baseWait: 1 })
    const t = track(r.execute())
    await advance(1)
    expect(t.value).toBe(1)
    expect(r.store.state.executionCount).toBe(1)
    await r.execute()
    expect(r.store.state.executionCount).toBe(2)
    // a failing execute does not count
    const r2 = new AsyncRetryer(() => Promise.reject(new Error('no')), { maxAttempts: 1, throwOnError: false })
    await r2.execute()
    expect(r2.store.state.executionCount).toBe(0)
  })
})

// ------------------------------------------------------------------ rule 4

describe('rule 4: a failed attempt with attempts left', () => {
  it('onError, onRetry, onSettled, then the wait, then the next attempt', async () => {
    const e1 = new Error('e1')
    const fn = script([e1, { never: 1 }])
    const log = []
    const rec = recorder(log)
    const r = new AsyncRetryer(fn, { ...rec.cb, throwOnError: 'last', baseWait: 1000 })
    const t = track(r.execute('arg'))
    await flush()
    expect(rec.log).toEqual([
      ['onError', e1, ['arg']],
      ['onRetry', 1, e1],
      ['onSettled', ['arg']],
    ])
    expect(rec.log[0][1]).toBe(e1)
    expect(rec.log[1][2]).toBe(e1)
    // during the wait
    expect(r.store.state).toEqual({
      ...DEFAULT_STATE,
      currentAttempt: 2,
      isExecuting: true,
      status: 'retrying',
      lastError: e1,
    })
    expect(fn).toHaveBeenCalledTimes(1)
    await expectNextAttemptAt(fn, 1, 1000)
    // attempt 2 running
    expect(r.store.state.status).toBe('retrying')
    expect(r.store.state.currentAttempt).toBe(2)
    expect(r.store.state.isExecuting).toBe(true)
    expect(rec.log.length).toBe(3)
    r.abort()
    await flush()
    expect(t.value).toBeUndefined()
  })

  it('lastError holds the failing error when onError runs', async () => {
    const e1 = new Error('e1')
    let seen
    const r = new AsyncRetryer(script([e1, { ok: 1 }]), {
      baseWait: 1,
      onError: (_e, _a, self) => { seen = self.store.state.lastError },
    })
    const t = track(r.execute())
    await advance(1)
    expect(t.value).toBe(1)
    expect(seen).toBe(e1)
  })
})

// ------------------------------------------------------------------ rule 5

describe('rule 5: the last failed attempt', () => {
  it("onError, onLastError, onSettled; rejects with that error ('last')", async () => {
    const errs = [new Error('1'), new Error('2'), new Error('3')]
    const fn = script(errs)
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb, throwOnError: 'last', baseWait: 10 })
    const t = track(r.execute('z'))
    await flush()
    await advance(10)
    await advance(20)
    expect(fn).toHaveBeenCalledTimes(3)
    expect(t.status).toBe('rejected')
    expect(t.reason).toBe(errs[2])
    expect(rec.log).toEqual([
      ['onError', errs[0], ['z']], ['onRetry', 1, errs[0]], ['onSettled', ['z']],
      ['onError', errs[1], ['z']], ['onRetry', 2, errs[1]], ['onSettled', ['z']],
      ['onError', errs[2], ['z']], ['onLastError', errs[2]], ['onSettled', ['z']],
    ])
    expect(rec.log[7][1]).toBe(errs[2])
    expect(r.store.state).toEqual({
      ...DEFAULT_STATE,
      currentAttempt: 3,
      lastError: errs[2],
    })
    expect(vi.getTimerCount()).toBe(0)
  })

  it('default throwOnError is last: rejects after all attempts', async () => {
    const err = new Error('x')
    const fn = vi.fn(() => Promise.reject(err))
    const r = new AsyncRetryer(fn, { baseWait: 1 })
    expect(r.options.throwOnError).toBe('last')
    const t = track(r.execute())
    await advance(1)
    await advance(2)
    expect(fn).toHaveBeenCalledTimes(3)
    expect(t.status).toBe('rejected')
    expect(t.reason).toBe(err)
  })

  it('throwOnError true also runs every attempt, then rejects with the final error', async () => {
    const errs = [new Error('1'), new Error('2'), new Error('3')]
    const fn = script(errs)
    const r = new AsyncRetryer(fn, { throwOnError: true, baseWait: 1 })
    const t = track(r.execute())
    await advance(1)
    expect(t.settled).toBe(false)
    await advance(2)
    expect(fn).toHaveBeenCalledTimes(3)
    expect(t.status).toBe('rejected')
    expect(t.reason).toBe(errs[2])
  })

  it('throwOnError false resolves undefined after all attempts', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { throwOnError: false, baseWait: 1, maxAttempts: 2 })
    const t = track(r.execute())
    await advance(1)
    expect(fn).toHaveBeenCalledTimes(2)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(r.store.state.currentAttempt).toBe(2)
    expect(r.store.state.isExecuting).toBe(false)
  })

  it('onError given and throwOnError not given: defaults to false', async () => {
    const onError = vi.fn()
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { onError, maxAttempts: 2, baseWait: 1 })
    expect(r.options.throwOnError).toBe(false)
    const t = track(r.execute())
    await advance(1)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(onError).toHaveBeenCalledTimes(2)
  })

  it('onError with throwOnError explicitly undefined still defaults to false', async () => {
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), {
      onError: () => {}, throwOnError: undefined, maxAttempts: 1,
    })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('fulfilled')
  })

  it("onError with throwOnError 'last' or true rejects", async () => {
    for (const throwOnError of ['last', true]) {
      const err = new Error('x')
      const r = new AsyncRetryer(() => Promise.reject(err), { onError: () => {}, throwOnError, maxAttempts: 1 })
      await expect(r.execute()).rejects.toBe(err)
    }
  })

  it('maxAttempts 1: no retry, no onRetry', async () => {
    const err = new Error('only')
    const rec = recorder()
    const r = new AsyncRetryer(() => Promise.reject(err), { ...rec.cb, throwOnError: 'last', maxAttempts: 1 })
    await expect(r.execute()).rejects.toBe(err)
    expect(rec.log).toEqual([['onError', err, []], ['onLastError', err], ['onSettled', []]])
    expect(vi.getTimerCount()).toBe(0)
  })
})

// ------------------------------------------------------------------ rule 6

describe('rule 6: thrown values are kept exactly as they are', () => {
  const values = [
    ['null', null],
    ['a string', 'boom'],
    ['a plain object', { code: 42 }],
    ['a number', 7],
    ['an Error subclass', new (class MyError extends Error {})('mine')],
    ['an array', [1, 2]],
    // Rejected, never adopted: adopting this one would leave the flow pending.
    ['a thenable', { then() {} }],
  ]
  for (const [label, value] of values) {
    for (const mode of ['reject', 'throw']) {
      it(`${label} (${mode}) reaches rejection, lastError and callbacks untouched`, async () => {
        const got = {}
        const fn = vi.fn(() => {
          if (mode === 'throw') throw value
          return Promise.reject(value)
        })
        const r = new AsyncRetryer(fn, {
          maxAttempts: 2,
          baseWait: 1,
          throwOnError: 'last',
          onError: (e) => { (got.onError ||= []).push(e) },
          onRetry: (_a, e) => { got.onRetry = e },
          onLastError: (e) => { got.onLastError = e },
        })
        let p
        expect(() => { p = r.execute() }).not.toThrow()
        const t = track(p)
        await advance(1)
        expect(t.status).toBe('rejected')
        expect(t.reason).toBe(value)
        expect(r.store.state.lastError).toBe(value)
        expect(got.onError).toHaveLength(2)
        expect(got.onError[0]).toBe(value)
        expect(got.onError[1]).toBe(value)
        expect(got.onRetry).toBe(value)
        expect(got.onLastError).toBe(value)
      })
    }
  }

  it('undefined as a rejection value is passed through as undefined', async () => {
    const onLastError = vi.fn()
    const r = new AsyncRetryer(() => Promise.reject(undefined), { maxAttempts: 1, onLastError })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('rejected')
    expect(t.reason).toBeUndefined()
    expect(onLastError).toHaveBeenCalledTimes(1)
    expect(onLastError.mock.calls[0][0]).toBeUndefined()
  })

  it('the rejection is the last attempt\'s value, not the first', async () => {
    const a = { n: 1 }
    const b = { n: 2 }
    const r = new AsyncRetryer(script([a, b]), { maxAttempts: 2, baseWait: 1 })
    const t = track(r.execute())
    await advance(1)
    expect(t.reason).toBe(b)
    expect(r.store.state.lastError).toBe(b)
  })
})

// ------------------------------------------------------------------ rule 7

describe('rule 7: AbortError is cancellation', () => {
  const makers = [
    ['DOMException AbortError', () => new DOMException('stopped', 'AbortError')],
    ['Error renamed AbortError', () => Object.assign(new Error('stopped'), { name: 'AbortError' })],
    ['subclass named AbortError', () => new (class AbortError extends Error { constructor() { super('x'); this.name = 'AbortError' } })()],
  ]
  for (const [label, make] of makers) {
    it(`${label} on attempt 1 ends the flow at once, resolves undefined`, async () => {
      const fn = vi.fn(() => Promise.reject(make()))
      const rec = recorder()
      const r = new AsyncRetryer(fn, { ...rec.cb, throwOnError: true, maxAttempts: 5, baseWait: 10 })
      const t = track(r.execute())
      await flush()
      expect(t.status).toBe('fulfilled')
      expect(t.value).toBeUndefined()
      await advance(10_000)
      expect(fn).toHaveBeenCalledTimes(1)
      const names = rec.names()
      expect(names).not.toContain('onError')
      expect(names).not.toContain('onAbort')
      // contract-silent: cancellation is neither a retry, a failure nor a success
      expect(names).not.toContain('onRetry')
      expect(names).not.toContain('onLastError')
      expect(names).not.toContain('onSuccess')
      expect(r.store.state.isExecuting).toBe(false)
      expect(r.store.state.status).toBe('idle')
      expect(vi.getTimerCount()).toBe(0)
    })
  }

  it('AbortError thrown synchronously on a later attempt ends the flow', async () => {
    let n = 0
    const fn = vi.fn(() => {
      n++
      if (n === 1) return Promise.reject(new Error('first'))
      throw new DOMException('gone', 'AbortError')
    })
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb, throwOnError: 'last', maxAttempts: 4, baseWait: 10 })
    const t = track(r.execute())
    await advance(10)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    await advance(10_000)
    expect(fn).toHaveBeenCalledTimes(2)
    expect(rec.names().filter((n) => n === 'onError')).toHaveLength(1)
    expect(rec.names()).not.toContain('onAbort')
    expect(r.store.state.isExecuting).toBe(false)
    expect(vi.getTimerCount()).toBe(0)
  })
})

// ------------------------------------------------------------------ rule 8

describe('rule 8: abort()', () => {
  it('during an attempt: signal aborts, timers cleared, onAbort(manual), resolves undefined', async () => {
    const d = deferred()
    let signal
    let r
    const log = []
    const rec = recorder(log)
    r = new AsyncRetryer(() => { signal = r.getAbortSignal(); return d.promise }, {
      ...rec.cb,
      throwOnError: 'last',
      maxExecutionTime: 5000,
      maxTotalExecutionTime: 60_000,
      onAbort: (reason) => log.push(['onAbort', reason, signal.aborted]),
    })
    const t = track(r.execute())
    await flush()
    expect(vi.getTimerCount()).toBeGreaterThan(0)
    r.abort()
    expect(signal.aborted).toBe(true)
    expect(log).toEqual([['onAbort', 'manual', true]])
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(vi.getTimerCount()).toBe(0)
    expect(r.store.state).toEqual({ ...DEFAULT_STATE, currentAttempt: 1 })
    expect(r.getAbortSignal()).toBeNull()

    // the aborted attempt finishing later is ignored
    const snapshot = r.store.state
    d.resolve('late')
    await flush()
    await advance(100_000)
    expect(r.store.state).toBe(snapshot)
    expect(log).toEqual([['onAbort', 'manual', true]])
  })

  it('during a wait: the timer is cleared, no further attempt', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const rec = recorder()
    const r = new AsyncRetryer(fn, { ...rec.cb, throwOnError: 'last', baseWait: 1000 })
    const t = track(r.execute())
    await flush()
    expect(r.store.state.status).toBe('retrying')
    await advance(500)
    r.abort()
    expect(vi.getTimerCount()).toBe(0)
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    await advance(100_000)
    expect(fn).toHaveBeenCalledTimes(1)
    expect(rec.names()).toEqual(['onError', 'onRetry', 'onSettled', 'onAbort'])
    expect(rec.log[3]).toEqual(['onAbort', 'manual'])
    // currentAttempt keeps its last value: during the wait it was 2
    expect(r.store.state.currentAttempt).toBe(2)
    expect(r.store.state.isExecuting).toBe(false)
    expect(r.store.state.status).toBe('idle')
  })

  it('with no active flow does nothing and calls nothing', async () => {
    const rec = recorder()
    const r = new AsyncRetryer(async () => 1, { ...rec.cb })
    const s0 = r.store.state
    expect(() => r.abort()).not.toThrow()
    expect(r.store.state).toBe(s0)
    await r.execute()
    rec.log.length = 0
    const s1 = r.store.state
    r.abort()
    r.abort()
    expect(rec.log).toEqual([])
    expect(r.store.state).toBe(s1)
  })

  it('is idempotent within a flow: onAbort runs once', async () => {
    const onAbort = vi.fn()
    const r = new AsyncRetryer(() => new Promise(() => {}), { onAbort })
    const t = track(r.execute())
    r.abort()
    r.abort()
    await flush()
    expect(onAbort).toHaveBeenCalledTimes(1)
    expect(t.value).toBeUndefined()
  })

  it("takes pacer's reasons and reports the one given to onAbort", async () => {
    for (const reason of ['manual', 'execution-timeout', 'total-timeout', 'new-execution']) {
      const seen = []
      let signal
      let r
      r = new AsyncRetryer(() => { signal = r.getAbortSignal(); return new Promise(() => {}) }, {
        onAbort: (why) => seen.push(why),
        onError: () => seen.push('onError'),
      })
      const t = track(r.execute())
      await flush()
      r.abort(reason)
      await flush()
      expect(seen).toEqual([reason])
      expect(t.value).toBeUndefined()
      expect(signal.aborted).toBe(true)
      expect(signal.reason.name).toBe('AbortError')
      // An abort with a timeout's name is still an abort: no error is made.
      expect(r.store.state.lastError).toBeUndefined()
    }
  })

  it('refuses any other reason with a TypeError naming it, and changes nothing', async () => {
    const onAbort = vi.fn()
    const r = new AsyncRetryer(() => new Promise(() => {}), { onAbort })
    const t = track(r.execute())
    await flush()
    const before = r.store.state
    for (const bad of ['signal', 'Manual', 'timeout', 1, null, {}, new Event('click')]) {
      expect(() => r.abort(bad)).toThrow(TypeError)
    }
    expect(() => r.abort('bogus')).toThrow(/got "bogus"/)
    expect(() => r.abort('bogus')).toThrow(/'manual', 'execution-timeout', 'total-timeout' or 'new-execution'/)
    await flush()
    expect(onAbort).not.toHaveBeenCalled()
    expect(r.store.state).toBe(before)
    expect(t.status).toBe('pending')
    r.abort(undefined)
    await flush()
    expect(onAbort).toHaveBeenCalledWith('manual', r)
    expect(t.value).toBeUndefined()
  })

  it('the retryer is usable again after abort()', async () => {
    const fn = vi.fn(async () => 'ok')
    const r = new AsyncRetryer(() => new Promise(() => {}))
    track(r.execute())
    r.abort()
    const r2 = new AsyncRetryer(fn)
    expect(await r2.execute()).toBe('ok')
  })
})

// ------------------------------------------------------------------ rule 9

describe('rule 9: getAbortSignal()', () => {
  it('is null outside a flow and an unaborted AbortSignal inside fn', async () => {
    let inside
    const r = new AsyncRetryer(async () => { inside = r.getAbortSignal(); return 1 })
    expect(r.getAbortSignal()).toBeNull()
    await r.execute()
    expect(inside).toBeInstanceOf(AbortSignal)
    expect(r.getAbortSignal()).toBeNull()
  })

  it('aborts on abort()', async () => {
    const signals = []
    const r = new AsyncRetryer(() => { signals.push(r.getAbortSignal()); return new Promise(() => {}) })
    track(r.execute())
    expect(signals[0].aborted).toBe(false)
    r.abort()
    expect(signals[0].aborted).toBe(true)
  })

  it('aborts on a new execution', async () => {
    const signals = []
    const r = new AsyncRetryer(() => { signals.push(r.getAbortSignal()); return new Promise(() => {}) })
    track(r.execute())
    track(r.execute())
    expect(signals[0].aborted).toBe(true)
    expect(signals[1].aborted).toBe(false)
    r.abort()
    expect(signals[1].aborted).toBe(true)
  })

  it('aborts on an execution timeout (reason TimeoutError) and on a total timeout', async () => {
    const signals = []
    const r = new AsyncRetryer(() => { signals.push(r.getAbortSignal()); return new Promise(() => {}) }, {
      maxExecutionTime: 100, throwOnError: false,
    })
    track(r.execute())
    await advance(100)
    expect(signals[0].aborted).toBe(true)
    expect(signals[0].reason?.name).toBe('TimeoutError')

    const r2 = new AsyncRetryer(() => { signals.push(r2.getAbortSignal()); return new Promise(() => {}) }, {
      maxTotalExecutionTime: 100,
    })
    track(r2.execute())
    await advance(100)
    expect(signals[1].aborted).toBe(true)
    expect(r.getAbortSignal()).toBeNull()
    expect(r2.getAbortSignal()).toBeNull()
  })

  it('an abort listener added by fn runs on abort()', async () => {
    const heard = vi.fn()
    const r = new AsyncRetryer(() => new Promise((_res, rej) => {
      r.getAbortSignal().addEventListener('abort', () => { heard(); rej(new DOMException('a', 'AbortError')) })
    }))
    const t = track(r.execute())
    r.abort()
    await flush()
    expect(heard).toHaveBeenCalledTimes(1)
    expect(t.value).toBeUndefined()
  })
})

// ----------------------------------------------------------------- rule 10

describe('rule 10: execution timeout', () => {
  it('order: onExecutionTimeout, signal aborts with TimeoutError, onAbort, onError, onLastError, onGiveUp, onSettled', async () => {
    const log = []
    let signal
    let r
    const rec = recorder(log)
    r = new AsyncRetryer(() => { signal = r.getAbortSignal(); return new Promise(() => {}) }, {
      ...rec.cb,
      throwOnError: 'last',
      maxAttempts: 3,
      maxExecutionTime: 100,
      onExecutionTimeout: () => log.push(['onExecutionTimeout', signal.aborted]),
      onAbort: (reason) => log.push(['onAbort', reason, signal.aborted]),
      onGiveUp: (error, reason) => log.push(['onGiveUp', error, reason]),
    })
    const t = track(r.execute('a'))
    await advance(99)
    expect(log).toEqual([])
    expect(t.settled).toBe(false)
    await advance(1)
    expect(t.status).toBe('rejected')
    const err = t.reason
    expect(err.name).toBe('TimeoutError')
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBe(err)
    expect(log).toEqual([
      ['onExecutionTimeout', false],
      ['onAbort', 'execution-timeout', true],
      ['onError', err, ['a']],
      ['onLastError', err],
      ['onGiveUp', err, 'execution-timeout'],
      ['onSettled', ['a']],
    ])
    expect(r.store.state).toEqual({ ...DEFAULT_STATE, currentAttempt: 1, lastError: err })
    expect(vi.getTimerCount()).toBe(0)
  })

  it('resolves undefined when throwing is off, still the same callbacks', async () => {
    const rec = recorder()
    const r = new AsyncRetryer(() => new Promise(() => {}), { ...rec.cb, maxExecutionTime: 50 })
    // onError given -> throwOnError false
    const t = track(r.execute())
    await advance(50)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(rec.names()).toEqual(['onExecutionTimeout', 'onAbort', 'onError', 'onLastError', 'onSettled'])
    expect(r.store.state.lastError.name).toBe('TimeoutError')
  })

  it('applies to each attempt: attempt 2 times out at its own deadline', async () => {
    const fn = script([new Error('fast'), { never: 1 }])
    const onExecutionTimeout = vi.fn()
    const r = new AsyncRetryer(fn, { maxExecutionTime: 300, baseWait: 1000, onExecutionTimeout, throwOnError: 'last' })
    const t = track(r.execute())
    await advance(1000)
    expect(fn).toHaveBeenCalledTimes(2)
    await advance(299)
    expect(onExecutionTimeout).not.toHaveBeenCalled()
    await advance(1)
    expect(onExecutionTimeout).toHaveBeenCalledTimes(1)
    expect(t.status).toBe('rejected')
    expect(t.reason.name).toBe('TimeoutError')
    await advance(100_000)
    expect(fn).toHaveBeenCalledTimes(2)
  })

  it('an attempt that settles before the deadline clears the timeout timer', async () => {
    const r = new AsyncRetryer(() => new Promise((res) => setTimeout(() => res('in time'), 40)), { maxExecutionTime: 50 })
    const t = track(r.execute())
    await advance(40)
    expect(t.value).toBe('in time')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('whatever the timed-out function does later is ignored', async () => {
    const d = deferred()
    const rec = recorder()
    const r = new AsyncRetryer(() => d.promise, { ...rec.cb, maxExecutionTime: 10, throwOnError: false })
    const t = track(r.execute())
    await advance(10)
    expect(t.settled).toBe(true)
    const n = rec.log.length
    const snap = r.store.state
    d.resolve('late')
    await flush()
    expect(rec.log.length).toBe(n)
    expect(r.store.state).toBe(snap)
    expect(r.store.state.lastResult).toBeUndefined()
  })
})

// ----------------------------------------------------------------- rule 11

describe('rule 11: total timeout', () => {
  it('fires at the deadline even when fn never settles', async () => {
    const log = []
    let signal
    let r
    const rec = recorder(log)
    r = new AsyncRetryer(() => { signal = r.getAbortSignal(); return new Promise(() => {}) }, {
      ...rec.cb,
      throwOnError: 'last',
      maxTotalExecutionTime: 500,
      onAbort: (reason) => log.push(['onAbort', reason, signal.aborted]),
    })
    const t = track(r.execute())
    await advance(499)
    expect(t.settled).toBe(false)
    expect(log).toEqual([])
    await advance(1)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(signal.aborted).toBe(true)
    const names = rec.names()
    expect(names.indexOf('onTotalExecutionTimeout')).toBeGreaterThanOrEqual(0)
    expect(log.find((e) => e[0] === 'onAbort')).toEqual(['onAbort', 'total-timeout', true])
    expect(names.indexOf('onTotalExecutionTimeout')).toBeLessThan(names.indexOf('onAbort'))
    expect(names).not.toContain('onSuccess')
    expect(names).not.toContain('onRetry')
    // contract-silent: a total timeout is an abort, not a failure
    expect(names).not.toContain('onLastError')
    expect(r.store.state.isExecuting).toBe(false)
    expect(r.store.state.status).toBe('idle')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('a wait that would end after the deadline is not slept', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const onTotal = vi.fn(() => Date.now())
    const onAbort = vi.fn()
    const r = new AsyncRetryer(fn, {
      baseWait: 1000, maxAttempts: 5, maxTotalExecutionTime: 1500, throwOnError: 'last',
      onTotalExecutionTimeout: onTotal, onAbort,
    })
    const t = track(r.execute())
    await flush()
    await advance(1000) // attempt 2 at t=1000, fails; next wait 2000 > deadline
    expect(fn).toHaveBeenCalledTimes(2)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(onTotal).toHaveBeenCalledTimes(1)
    expect(onTotal.mock.results[0].value).toBe(T0 + 1000)
    expect(onAbort).toHaveBeenCalledWith('total-timeout', r)
    expect(vi.getTimerCount()).toBe(0)
    await advance(100_000)
    expect(fn).toHaveBeenCalledTimes(2)
  })

  it('a wait that ends before the deadline is slept normally', async () => {
    const fn = script([new Error('1'), { ok: 'two' }])
    const r = new AsyncRetryer(fn, { baseWait: 1000, maxTotalExecutionTime: 1500 })
    const t = track(r.execute())
    await expectNextAttemptAt(fn, 1, 1000)
    expect(t.value).toBe('two')
    expect(vi.getTimerCount()).toBe(0)
  })

  it("resolves undefined even with throwOnError true", async () => {
    const r = new AsyncRetryer(() => new Promise(() => {}), { maxTotalExecutionTime: 20, throwOnError: true })
    const t = track(r.execute())
    await advance(20)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
  })

  it('the total deadline counts the first attempt too', async () => {
    const fn = vi.fn(() => new Promise((_res, rej) => setTimeout(() => rej(new Error('slow')), 400)))
    const onTotal = vi.fn()
    const r = new AsyncRetryer(fn, { baseWait: 100, maxTotalExecutionTime: 600, onTotalExecutionTimeout: onTotal })
    const t = track(r.execute())
    await advance(400) // attempt 1 fails at 400; wait 100 -> 500 < 600, ok
    await advance(100) // attempt 2 starts at 500
    expect(fn).toHaveBeenCalledTimes(2)
    await advance(99)
    expect(onTotal).not.toHaveBeenCalled()
    await advance(1)
    expect(onTotal).toHaveBeenCalledTimes(1)
    expect(t.value).toBeUndefined()
    await advance(10_000)
    expect(vi.getTimerCount()).toBe(0)
  })
})

// ----------------------------------------------------------------- rule 12

// On a retryer's later flows too, a late settlement of an attempt that is no
// longer current (timed out, or of a superseded flow) must be told apart from
// the current attempt's, by flow and by attempt: a settle path that took the
// newest flow or attempt instead fails here (checked by mutation).
describe('a retryer that runs again: late settlements of stale attempts', () => {
  it('a timed-out attempt that resolves after its retry does not settle the flow', async () => {
    const late = deferred()
    const fn = vi.fn()
      .mockResolvedValueOnce('warm-up')
      .mockReturnValueOnce(late.promise)
      .mockImplementationOnce(() => new Promise((resolve) => setTimeout(() => resolve('retried'), 5)))
    const r = new AsyncRetryer(fn, { maxExecutionTime: 10, baseWait: 5, backoff: 'fixed', retryOnExecutionTimeout: true })
    expect(await r.execute()).toBe('warm-up')
    const t = track(r.execute())
    await advance(15) // attempt 1 times out at 10 ms, attempt 2 starts at 15
    expect(fn).toHaveBeenCalledTimes(3)
    late.resolve('stale')
    await flush()
    expect(t.settled).toBe(false)
    await advance(5)
    expect(t.value).toBe('retried')
    expect(r.store.state.lastResult).toBe('retried')
    expect(r.store.state.executionCount).toBe(2)
  })

  it('an attempt that resolves while a stale one is still pending settles the flow', async () => {
    const stale = deferred()
    const fn = vi.fn()
      .mockResolvedValueOnce('warm-up')
      .mockReturnValueOnce(stale.promise)
      .mockResolvedValueOnce('second')
    const r = new AsyncRetryer(fn, { maxExecutionTime: 10, baseWait: 5, backoff: 'fixed', retryOnExecutionTimeout: true })
    await r.execute()
    const t = track(r.execute())
    await advance(15)
    expect(t.value).toBe('second')
    stale.resolve('stale')
    await flush()
    expect(r.store.state.lastResult).toBe('second')
    // The retryer goes on: its next flow settles as usual.
    fn.mockResolvedValueOnce('third')
    expect(await r.execute()).toBe('third')
  })

  it('a superseded flow\'s attempt that settles late changes nothing of the new flow', async () => {
    const old = deferred()
    const fresh = deferred()
    const fn = vi.fn()
      .mockResolvedValueOnce('warm-up')
      .mockReturnValueOnce(old.promise)
      .mockReturnValueOnce(fresh.promise)
    const r = new AsyncRetryer(fn, { throwOnError: 'last' })
    await r.execute()
    const t1 = track(r.execute())
    await flush()
    const t2 = track(r.execute()) // new-execution: the first one resolves undefined
    await flush()
    expect(t1.value).toBeUndefined()
    old.reject(new Error('late failure'))
    await flush()
    expect(t2.settled).toBe(false)
    expect(r.store.state.lastError).toBeUndefined()
    fresh.resolve('fresh')
    await flush()
    expect(t2.value).toBe('fresh')
    expect(r.store.state.executionCount).toBe(2)
  })
})

describe('rule 12: nothing remains after a flow settles', () => {
  const heavy = { maxExecutionTime: 10_000, maxTotalExecutionTime: 100_000 }

  it('after success', async () => {
    const r = new AsyncRetryer(async () => 1, heavy)
    await r.execute()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('after success following retries', async () => {
    const r = new AsyncRetryer(script([new Error('a'), { ok: 1 }]), { ...heavy, baseWait: 5 })
    const t = track(r.execute())
    await advance(5)
    expect(t.value).toBe(1)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('after failure', async () => {
    const r = new AsyncRetryer(() => Promise.reject(new Error('a')), { ...heavy, baseWait: 5, throwOnError: false })
    const t = track(r.execute())
    await advance(5)
    await advance(10)
    expect(t.settled).toBe(true)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('after AbortError, manual abort and new-execution', async () => {
    const r = new AsyncRetryer(() => Promise.reject(new DOMException('x', 'AbortError')), heavy)
    await r.execute()
    expect(vi.getTimerCount()).toBe(0)
    const r2 = new AsyncRetryer(() => new Promise(() => {}), heavy)
    track(r2.execute())
    track(r2.execute())
    r2.abort()
    await flush()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('no callback runs after settle, however long we wait', async () => {
    const rec = recorder()
    const r = new AsyncRetryer(async () => 1, { ...rec.cb, ...heavy })
    await r.execute()
    const n = rec.log.length
    await advance(1_000_000)
    expect(rec.log.length).toBe(n)
  })
})

// ------------------------------------------------------------------- delays

describe('delays', () => {
  it('exponential: b * 2^(n-1), exact to the millisecond', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { backoff: 'exponential', baseWait: 100, maxAttempts: 5, throwOnError: false })
    const t = track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 100)
    await expectNextAttemptAt(fn, 2, 200)
    await expectNextAttemptAt(fn, 3, 400)
    await expectNextAttemptAt(fn, 4, 800)
    expect(t.settled).toBe(true)
  })

  it('exponential is the default backoff with baseWait 1000', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { throwOnError: false })
    expect(r.options.backoff).toBe('exponential')
    expect(r.options.baseWait).toBe(1000)
    track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 1000)
    await expectNextAttemptAt(fn, 2, 2000)
  })

  it('linear: b * n', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { backoff: 'linear', baseWait: 100, maxAttempts: 4, throwOnError: false })
    track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 100)
    await expectNextAttemptAt(fn, 2, 200)
    await expectNextAttemptAt(fn, 3, 300)
  })

  it('fixed: b every time', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { backoff: 'fixed', baseWait: 150, maxAttempts: 4, throwOnError: false })
    track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 150)
    await expectNextAttemptAt(fn, 2, 150)
    await expectNextAttemptAt(fn, 3, 150)
  })

  it('maxWait caps the nominal delay', async () => {
    const { delays } = await measureDelays({ backoff: 'exponential', baseWait: 100, maxWait: 250, maxAttempts: 6 })
    expect(delays).toEqual([100, 200, 250, 250, 250])
    const lin = await measureDelays({ backoff: 'linear', baseWait: 100, maxWait: 150, maxAttempts: 4 })
    expect(lin.delays).toEqual([100, 150, 150])
  })

  it('maxWait 0 gives zero delays (no timers)', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { maxWait: 0, maxAttempts: 4, throwOnError: false })
    const t = track(r.execute())
    await flush()
    expect(fn).toHaveBeenCalledTimes(4)
    expect(t.settled).toBe(true)
  })

  it('delays above 2^31-1 ms are clamped, never wrapped', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { backoff: 'fixed', baseWait: 3_000_000_000, maxAttempts: 2, throwOnError: false })
    const t = track(r.execute())
    await flush()
    await advance(1000)
    expect(fn).toHaveBeenCalledTimes(1)
    await expectNextAttemptAt(fn, 1, 2 ** 31 - 1 - 1000)
    expect(t.settled).toBe(true)
  })

  it('huge exponential growth is clamped too', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { baseWait: 1e15, maxAttempts: 3, throwOnError: false })
    const t = track(r.execute())
    await flush()
    await advance(5)
    expect(fn).toHaveBeenCalledTimes(1)
    await advance(2 ** 31 - 1 - 5)
    expect(fn).toHaveBeenCalledTimes(2)
    r.abort()
    await flush()
    expect(t.settled).toBe(true)
  })

  it('dynamic baseWait / maxWait / maxAttempts are read per decision, with the retryer', async () => {
    const waits = [100, 300, 50]
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    // the wait after failed attempt n is waits[n - 1], however often it is read
    const baseWait = vi.fn(() => waits[Math.max(0, Math.min(fn.mock.calls.length, 3) - 1)])
    const maxWait = vi.fn(() => 10_000)
    const maxAttempts = vi.fn(() => 4)
    const r = new AsyncRetryer(fn, { backoff: 'fixed', baseWait, maxWait, maxAttempts, throwOnError: false })
    const t = track(r.execute())
    await flush()
    await expectNextAttemptAt(fn, 1, 100)
    await expectNextAttemptAt(fn, 2, 300)
    await expectNextAttemptAt(fn, 3, 50)
    await flush()
    expect(t.settled).toBe(true)
    for (const f of [baseWait, maxWait, maxAttempts]) {
      expect(f).toHaveBeenCalled()
      for (const c of f.mock.calls) expect(c[0]).toBe(r)
    }
  })

  it('a dynamic maxAttempts change takes effect at the next decision', async () => {
    let limit = 5
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const onLastError = vi.fn()
    const r = new AsyncRetryer(fn, { baseWait: 10, backoff: 'fixed', maxAttempts: () => limit, onLastError, throwOnError: false })
    const t = track(r.execute())
    await advance(10)
    expect(fn).toHaveBeenCalledTimes(2)
    limit = 3
    await advance(10)
    expect(fn).toHaveBeenCalledTimes(3)
    expect(t.settled).toBe(true)
    expect(onLastError).toHaveBeenCalledTimes(1)
  })
})

describe('jitter', () => {
  it('stays within nominal ± floor(nominal * j), integer, and varies', async () => {
    const { delays } = await measureDelays({ backoff: 'fixed', baseWait: 1000, jitter: 0.5, maxAttempts: 41 })
    expect(delays).toHaveLength(40)
    for (const d of delays) {
      expect(Number.isInteger(d)).toBe(true)
      expect(d).toBeGreaterThanOrEqual(500)
      expect(d).toBeLessThanOrEqual(1500)
    }
    expect(new Set(delays).size).toBeGreaterThan(5)
  })

  it('is applied after maxWait, so a delay may exceed maxWait slightly', async () => {
    const { delays } = await measureDelays({ baseWait: 100, maxWait: 400, jitter: 0.25, maxAttempts: 41 })
    const nominal = (n) => Math.min(100 * 2 ** (n - 1), 400)
    delays.forEach((d, i) => {
      const nom = nominal(i + 1)
      expect(d).toBeGreaterThanOrEqual(nom - Math.ceil(nom * 0.25))
      expect(d).toBeLessThanOrEqual(nom + Math.floor(nom * 0.25))
    })
    expect(delays.some((d) => d > 400)).toBe(true)
  })

  it('jitter 1 never gives a negative delay', async () => {
    const { delays } = await measureDelays({ backoff: 'fixed', baseWait: 10, jitter: 1, maxAttempts: 61 })
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(0)
      expect(d).toBeLessThanOrEqual(20)
    }
  })

  it('jitter 0 is exact', async () => {
    const { delays } = await measureDelays({ backoff: 'fixed', baseWait: 33, jitter: 0, maxAttempts: 6 })
    expect(delays).toEqual([33, 33, 33, 33, 33])
  })
})

// ----------------------------------------------------------------- rule 13

describe('rule 13: setOptions', () => {
  it('merges into options, defaults included', () => {
    const r = new AsyncRetryer(async () => 1, { baseWait: 5 })
    expect(r.options).toMatchObject({
      maxAttempts: 3,
      backoff: 'exponential',
      baseWait: 5,
      maxWait: Infinity,
      jitter: 0,
      maxExecutionTime: Infinity,
      maxTotalExecutionTime: Infinity,
      throwOnError: 'last',
      enabled: true,
    })
    r.setOptions({ maxAttempts: 7 })
    expect(r.options.maxAttempts).toBe(7)
    expect(r.options.baseWait).toBe(5)
    r.setOptions({ backoff: 'linear' })
    expect(r.options.maxAttempts).toBe(7)
    expect(r.options.backoff).toBe('linear')
  })

  it('does not restart a flow: the pending wait keeps its time, the next decision uses new options', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const onLastError = vi.fn()
    const r = new AsyncRetryer(fn, { backoff: 'fixed', baseWait: 100, maxAttempts: 5, onLastError, throwOnError: false })
    const t = track(r.execute())
    await flush()
    await advance(50)
    r.setOptions({ baseWait: 1000, maxAttempts: 3 })
    expect(fn).toHaveBeenCalledTimes(1)
    await advance(50) // the old wait ends on time
    expect(fn).toHaveBeenCalledTimes(2)
    await expectNextAttemptAt(fn, 2, 1000) // new baseWait
    expect(t.settled).toBe(true) // new maxAttempts: 3 was the last
    expect(onLastError).toHaveBeenCalledTimes(1)
  })

  it("enabled: false shows 'disabled' at once; enabled: true returns to 'idle'", () => {
    const r = new AsyncRetryer(async () => 1)
    expect(r.store.state.status).toBe('idle')
    r.setOptions({ enabled: false })
    expect(r.store.state.status).toBe('disabled')
    r.setOptions({ enabled: true })
    expect(r.store.state.status).toBe('idle')
  })

  it("enabled: false during a flow shows 'disabled' at once", async () => {
    const r = new AsyncRetryer(() => new Promise(() => {}))
    const t = track(r.execute())
    r.setOptions({ enabled: false })
    expect(r.store.state.status).toBe('disabled')
    r.abort()
    await flush()
    expect(t.settled).toBe(true)
    expect(r.store.state.status).toBe('disabled')
  })

  it('a disabled retryer executes again once re-enabled', async () => {
    const fn = vi.fn(async () => 'yes')
    const r = new AsyncRetryer(fn, { enabled: false })
    expect(await r.execute()).toBeUndefined()
    r.setOptions({ enabled: true })
    expect(await r.execute()).toBe('yes')
    expect(fn).toHaveBeenCalledTimes(1)
  })

  it('setOptions({ onRetry: undefined }) removes the callback', async () => {
    const onRetry = vi.fn()
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { onRetry, baseWait: 1, throwOnError: false })
    r.setOptions({ onRetry: undefined })
    const t = track(r.execute())
    await advance(1)
    await advance(2)
    expect(t.settled).toBe(true)
    expect(onRetry).not.toHaveBeenCalled()
  })
})

// ----------------------------------------------------------------- rule 14

describe('rule 14: re-entrant callbacks', () => {
  it('fn calling abort() synchronously during the first attempt', async () => {
    const onAbort = vi.fn()
    const onSuccess = vi.fn()
    let r
    r = new AsyncRetryer(() => { r.abort(); return 'x' }, { onAbort, onSuccess })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(onAbort).toHaveBeenCalledWith('manual', r)
    expect(onSuccess).not.toHaveBeenCalled()
    expect(r.store.state.isExecuting).toBe(false)
    await sanityRetry()
  })

  it('fn calling execute() re-entrantly: the outer flow is aborted by the inner one', async () => {
    let depth = 0
    let r
    const onAbort = vi.fn()
    const inner = []
    r = new AsyncRetryer(async (tag) => {
      if (depth++ === 0) inner.push(track(r.execute('inner')))
      return tag
    }, { onAbort })
    const outer = track(r.execute('outer'))
    await flush()
    expect(outer.status).toBe('fulfilled')
    expect(outer.value).toBeUndefined()
    expect(inner[0].status).toBe('fulfilled')
    expect(inner[0].value).toBe('inner')
    expect(onAbort).toHaveBeenCalledWith('new-execution', r)
    expect(r.store.state.isExecuting).toBe(false)
    expect(r.store.state.lastResult).toBe('inner')
  })

  it('fn calling setOptions and reset and reading state', async () => {
    let r
    r = new AsyncRetryer(async () => {
      r.setOptions({ baseWait: 2 })
      r.reset()
      return r.store.state.status
    })
    const v = await r.execute()
    expect(typeof v).toBe('string')
    expect(r.options.baseWait).toBe(2)
    await sanityRetry()
  })

  it('onRetry calling abort(): flow ends, no wait, no further attempt', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const onAbort = vi.fn()
    const r = new AsyncRetryer(fn, { onRetry: (_a, _e, self) => self.abort(), onAbort, baseWait: 100, maxAttempts: 5 })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(onAbort).toHaveBeenCalledTimes(1)
    expect(onAbort).toHaveBeenCalledWith('manual', r)
    expect(vi.getTimerCount()).toBe(0)
    await advance(10_000)
    expect(fn).toHaveBeenCalledTimes(1)
    expect(r.store.state.isExecuting).toBe(false)
  })

  it('onError calling execute(): the new flow replaces the old one', async () => {
    const calls = []
    let once = true
    const inner = []
    const onAbort = vi.fn()
    const r = new AsyncRetryer(async (tag) => {
      calls.push(tag)
      if (tag === 'outer') throw new Error('outer failed')
      return 'inner ok'
    }, {
      throwOnError: 'last',
      baseWait: 10,
      onAbort,
      onError: (_e, _args, self) => {
        if (once) { once = false; inner.push(track(self.execute('inner'))) }
      },
    })
    const outer = track(r.execute('outer'))
    await flush()
    await advance(10_000)
    expect(outer.status).toBe('fulfilled')
    expect(outer.value).toBeUndefined()
    expect(inner[0].status).toBe('fulfilled')
    expect(inner[0].value).toBe('inner ok')
    expect(calls).toEqual(['outer', 'inner'])
    expect(onAbort).toHaveBeenCalledWith('new-execution', r)
    expect(r.store.state.isExecuting).toBe(false)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('onError calling setOptions({ maxAttempts: 2 }) bounds the flow', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, {
      maxAttempts: 6, baseWait: 1, backoff: 'fixed', throwOnError: false,
      onError: (_e, _a, self) => self.setOptions({ maxAttempts: 2 }),
    })
    const t = track(r.execute())
    await advance(1)
    await advance(100)
    expect(t.settled).toBe(true)
    expect(fn).toHaveBeenCalledTimes(2)
  })

  it('onSuccess calling reset(): state is the default afterwards, the result still resolves', async () => {
    const r = new AsyncRetryer(async () => 'r', { onSuccess: (_res, _a, self) => self.reset() })
    expect(await r.execute()).toBe('r')
    expect(r.store.state).toEqual(DEFAULT_STATE)
  })

  it('onAbort calling execute(): a fresh flow starts and completes', async () => {
    let once = true
    const inner = []
    const fn = vi.fn((tag) => (tag === 'stuck' ? new Promise(() => {}) : Promise.resolve(tag)))
    const r = new AsyncRetryer(fn, {
      onAbort: (reason, self) => {
        if (once) { once = false; inner.push(track(self.execute('again'))) }
      },
    })
    const outer = track(r.execute('stuck'))
    r.abort()
    await flush()
    expect(outer.status).toBe('fulfilled')
    expect(outer.value).toBeUndefined()
    expect(inner[0].status).toBe('fulfilled')
    expect(inner[0].value).toBe('again')
    expect(r.store.state.isExecuting).toBe(false)
  })

  it('onLastError / onSettled calling execute(): both promises settle, nothing wedges', async () => {
    for (const hook of ['onLastError', 'onSettled']) {
      let once = true
      const inner = []
      const fn = vi.fn((tag) => (tag === 'bad' ? Promise.reject(new Error('bad')) : Promise.resolve(tag)))
      const r = new AsyncRetryer(fn, {
        maxAttempts: 1,
        throwOnError: false,
        [hook]: (...a) => {
          const self = a[a.length - 1]
          if (once) { once = false; inner.push(track(self.execute('good'))) }
        },
      })
      const outer = track(r.execute('bad'))
      await flush()
      await advance(100)
      expect(outer.settled).toBe(true)
      expect(inner[0].status).toBe('fulfilled')
      expect(inner[0].value).toBe('good')
      expect(r.store.state.isExecuting).toBe(false)
      expect(vi.getTimerCount()).toBe(0)
    }
  })

  it('a subscriber calling abort() from inside a state change', async () => {
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { baseWait: 100, throwOnError: false })
    const unsub = r.store.subscribe(() => {
      if (r.store.state.status === 'retrying') r.abort()
    })
    const t = track(r.execute())
    await flush()
    await advance(1000)
    expect(t.status).toBe('fulfilled')
    expect(t.value).toBeUndefined()
    expect(r.store.state.isExecuting).toBe(false)
    unsub()
    expect(vi.getTimerCount()).toBe(0)
  })

  describe('a callback that throws does not wedge the retryer', () => {
    const cases = [
      ['onRetry', { onRetry: () => { throw new Error('cb boom') } }, 'fail-then-ok'],
      ['onError', { onError: () => { throw new Error('cb boom') }, throwOnError: 'last' }, 'fail-then-ok'],
      ['onSettled', { onSettled: () => { throw new Error('cb boom') } }, 'fail-then-ok'],
      ['onSuccess', { onSuccess: () => { throw new Error('cb boom') } }, 'ok'],
      ['onLastError', { onLastError: () => { throw new Error('cb boom') }, maxAttempts: 1 }, 'fail'],
      ['onExecutionTimeout', { onExecutionTimeout: () => { throw new Error('cb boom') }, maxExecutionTime: 10 }, 'never'],
      ['onTotalExecutionTimeout', { onTotalExecutionTimeout: () => { throw new Error('cb boom') }, maxTotalExecutionTime: 10 }, 'never'],
    ]
    for (const [name, opts, kind] of cases) {
      it(`${name} throwing`, async () => {
        let n = 0
        const fn = vi.fn(() => {
          n++
          if (kind === 'ok') return Promise.resolve('v')
          if (kind === 'never') return new Promise(() => {})
          if (kind === 'fail') return Promise.reject(new Error('f'))
          return n === 1 ? Promise.reject(new Error('f')) : Promise.resolve('v')
        })
        const r = new AsyncRetryer(fn, { baseWait: 5, ...opts })
        let t
        let syncThrow
        const caught = await captureUncaught(async (caught) => {
          try {
            t = track(r.execute())
          } catch (e) {
            syncThrow = e
          }
          await flush()
          for (let i = 0; i < 5; i++) {
            try { await advance(10) } catch (e) { caught.push(e) }
          }
        })
        expect(syncThrow).toBeUndefined()
        // the promise settled (not wedged)
        expect(t.settled).toBe(true)
        // the callback's error surfaced somewhere: rejection or uncaught
        const surfaced = (t.status === 'rejected' && t.reason?.message === 'cb boom') ||
          caught.some((e) => e?.message === 'cb boom')
        expect(surfaced).toBe(true)
        expect(r.store.state.isExecuting).toBe(false)
        expect(vi.getTimerCount()).toBe(0)
        // the same retryer works again
        r.setOptions({ [name]: undefined })
        fn.mockImplementation(() => Promise.resolve('again'))
        const t2 = track(r.execute())
        await flush()
        expect(t2.status).toBe('fulfilled')
        expect(t2.value).toBe('again')
        await sanityRetry()
      })
    }

    it('onAbort throwing during abort()', async () => {
      const r = new AsyncRetryer(() => new Promise(() => {}), { onAbort: () => { throw new Error('cb boom') } })
      let t
      const caught = await captureUncaught(async (caught) => {
        t = track(r.execute())
        try { r.abort() } catch (e) { caught.push(e) }
        await flush()
      })
      expect(t.settled).toBe(true)
      const surfaced = (t.status === 'rejected' && t.reason?.message === 'cb boom') ||
        caught.some((e) => e?.message === 'cb boom')
      expect(surfaced).toBe(true)
      expect(r.store.state.isExecuting).toBe(false)
      r.setOptions({ onAbort: undefined })
      await sanityRetry()
    })
  })
})

// ------------------------------------------------------------------- misc

describe('functions of every shape', () => {
  it('a plain return value behaves like a resolved promise', async () => {
    const onSuccess = vi.fn()
    const r = new AsyncRetryer(() => 42, { onSuccess })
    expect(await r.execute()).toBe(42)
    expect(onSuccess).toHaveBeenCalledWith(42, [], r)
  })

  it('a thenable is followed', async () => {
    const r = new AsyncRetryer(() => ({ then: (res) => res('thenable') }))
    expect(await r.execute()).toBe('thenable')
  })

  it('a rejecting thenable is retried', async () => {
    let n = 0
    const r = new AsyncRetryer(() => ({ then: (res, rej) => (++n < 2 ? rej(new Error('t')) : res('second')) }), { baseWait: 3 })
    const t = track(r.execute())
    await advance(3)
    expect(t.value).toBe('second')
    expect(n).toBe(2)
  })

  it('a Promise subclass whose then() calls back at once settles inside execute(), as a success or a retry', async () => {
    // The settlement arrives while execute() is still carrying out effects.
    class Eager extends Promise {
      then(ok, fail) { return this.fails ? fail(new Error('eager')) : ok(this.value) }
    }
    const eager = (fails, value) => Object.assign(new Eager(() => {}), { fails, value })
    const onSuccess = vi.fn()
    const r = new AsyncRetryer(() => eager(false, 42), { onSuccess })
    expect(await r.execute()).toBe(42)
    expect(onSuccess).toHaveBeenCalledWith(42, [], r)
    expect(r.store.state).toMatchObject({ executionCount: 1, status: 'idle', lastResult: 42 })
    let n = 0
    const r2 = new AsyncRetryer(() => eager(++n < 2, 'second'), { baseWait: 3 })
    const t = track(r2.execute())
    await advance(3)
    expect(t.value).toBe('second')
    expect(n).toBe(2)
    expect(r2.store.state.executionCount).toBe(1)
  })

  it('a synchronous throw is a failed attempt, not a synchronous exception', async () => {
    let n = 0
    const err = new Error('sync')
    const onError = vi.fn()
    const r = new AsyncRetryer(() => { if (++n < 3) throw err; return 'third' }, { baseWait: 1, onError })
    let p
    expect(() => { p = r.execute() }).not.toThrow()
    const t = track(p)
    await advance(1)
    await advance(2)
    expect(t.value).toBe('third')
    expect(onError).toHaveBeenCalledTimes(2)
    expect(onError.mock.calls[0][0]).toBe(err)
  })
})
