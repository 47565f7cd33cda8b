// Bad input, SPEC §3: TypeError / RangeError naming the option and the value,
// failed setOptions changes nothing, undefined means "not set", dynamic
// options returning garbage, functions of every shape. After every bad input
// the module must still run a normal retry.
import { describe, it, expect, vi, beforeEach, afterEach } from 'vitest'
import { AsyncRetryer, asyncRetry, asyncRetryerOptions } from 'retry-wasm'
import { flush, advance, track, sanityRetry } from './helpers.js'

beforeEach(() => {
  vi.useFakeTimers({ now: Date.UTC(2030, 0, 1) })
})
afterEach(async () => {
  // after every bad input, the module still works
  await sanityRetry()
  vi.clearAllTimers()
  vi.useRealTimers()
})


const ok = async () => 1

// Expect `thunk` to throw an error of one of `classes` whose message mentions
// every string in `mentions`.
function expectBad(thunk, classes, mentions) {
  let error
  try {
    thunk()
  } catch (e) {
    error = e
  }
  expect(error, 'expected a throw').toBeDefined()
  const list = Array.isArray(classes) ? classes : [classes]
  expect(list.some((C) => error instanceof C), `got ${error?.name}: ${error?.message}`).toBe(true)
  for (const m of mentions) expect(String(error.message)).toContain(m)
  return error
}

const CALLBACKS = [
  'onRetry',
  'onError',
  'onLastError',
  'onSuccess',
  'onSettled',
  'onAbort',
  'onExecutionTimeout',
  'onTotalExecutionTimeout',
  'shouldRetry',
  'onGiveUp',
  'retryAfter',
]

// [label, options, error class(es), strings the message must contain]
const BAD = [
  ['unknown option maxAttempt', { maxAttempt: 3 }, [TypeError, RangeError], ['maxAttempt']],
  ['unknown option timeout', { timeout: 5000 }, [TypeError, RangeError], ['timeout']],
  ['maxAttempts 0', { maxAttempts: 0 }, RangeError, ['maxAttempts', '0']],
  ['maxAttempts 1.5', { maxAttempts: 1.5 }, RangeError, ['maxAttempts', '1.5']],
  ['maxAttempts -1', { maxAttempts: -1 }, RangeError, ['maxAttempts', '-1']],
  ['maxAttempts NaN', { maxAttempts: NaN }, RangeError, ['maxAttempts', 'NaN']],
  ["maxAttempts '3'", { maxAttempts: '3' }, TypeError, ['maxAttempts', '3']],
  ['maxAttempts -Infinity', { maxAttempts: -Infinity }, RangeError, ['maxAttempts', 'Infinity']],
  ['maxAttempts Infinity without a deadline', { maxAttempts: Infinity }, RangeError, ['maxAttempts', 'Infinity']],
  ['maxAttempts Infinity with an infinite deadline', { maxAttempts: Infinity, maxTotalExecutionTime: Infinity }, RangeError, ['Infinity']],
  ['baseWait -1', { baseWait: -1 }, RangeError, ['baseWait', '-1']],
  ['baseWait NaN', { baseWait: NaN }, RangeError, ['baseWait', 'NaN']],
  ["baseWait '100'", { baseWait: '100' }, TypeError, ['baseWait', '100']],
  ['maxWait -1', { maxWait: -1 }, RangeError, ['maxWait', '-1']],
  ['maxWait NaN', { maxWait: NaN }, RangeError, ['maxWait', 'NaN']],
  ['maxExecutionTime -5', { maxExecutionTime: -5 }, RangeError, ['maxExecutionTime', '-5']],
  ['maxExecutionTime NaN', { maxExecutionTime: NaN }, RangeError, ['maxExecutionTime', 'NaN']],
  ['maxTotalExecutionTime -5', { maxTotalExecutionTime: -5 }, RangeError, ['maxTotalExecutionTime', '-5']],
  ['maxTotalExecutionTime NaN', { maxTotalExecutionTime: NaN }, RangeError, ['maxTotalExecutionTime', 'NaN']],
  ['jitter -0.1', { jitter: -0.1 }, RangeError, ['jitter', '-0.1']],
  ['jitter 1.5', { jitter: 1.5 }, RangeError, ['jitter', '1.5']],
  ['jitter NaN', { jitter: NaN }, RangeError, ['jitter', 'NaN']],
  ['intervals with a negative entry', { intervals: [100, -1] }, RangeError, ['intervals', '-1']],
  ['intervals with a NaN entry', { intervals: [100, NaN] }, RangeError, ['intervals', 'NaN']],
  ['intervals with Infinity attempts', { intervals: [100, 200], maxAttempts: Infinity, maxTotalExecutionTime: 10_000 }, [RangeError, TypeError], []],
  // contract-silent: wrong types for the enum-like options
  ["backoff 'quadratic'", { backoff: 'quadratic' }, [TypeError, RangeError], ['backoff', 'quadratic']],
  ["throwOnError 'first'", { throwOnError: 'first' }, [TypeError, RangeError], ['throwOnError', 'first']],
  ["enabled 'yes'", { enabled: 'yes' }, TypeError, ['enabled', 'yes']],
  ['maxAttempts null', { maxAttempts: null }, TypeError, ['maxAttempts', 'null']],
  ...CALLBACKS.map((name) => [`${name} not a function`, { [name]: 123 }, TypeError, [name, '123']]),
  ...CALLBACKS.map((name) => [`${name} a string`, { [name]: 'cb' }, TypeError, [name, 'cb']]),
]

describe('construction validates', () => {
  it('fn not a function is a TypeError naming fn and the value', () => {
    for (const bad of [42, 'nope', null, undefined, {}, [1]]) {
      const e = expectBad(() => new AsyncRetryer(bad), TypeError, [])
      expect(e.message).toMatch(/fn|function/i)
    }
    expectBad(() => new AsyncRetryer(42), TypeError, ['42'])
    expectBad(() => new AsyncRetryer('nope'), TypeError, ['nope'])
  })

  it('asyncRetry validates too', () => {
    expectBad(() => asyncRetry(42), TypeError, ['42'])
    expectBad(() => asyncRetry(ok, { maxAttempt: 2 }), [TypeError, RangeError], ['maxAttempt'])
    expectBad(() => asyncRetry(ok, { jitter: 2 }), RangeError, ['jitter', '2'])
  })

  for (const [label, opts, classes, mentions] of BAD) {
    it(`${label}`, () => {
      expectBad(() => new AsyncRetryer(ok, opts), classes, mentions)
    })
  }

  it('intervals with Infinity attempts names one of the two options', () => {
    const e = expectBad(
      () => new AsyncRetryer(ok, { intervals: [1], maxAttempts: Infinity, maxTotalExecutionTime: 1000 }),
      [RangeError, TypeError],
      [],
    )
    expect(e.message).toMatch(/intervals|maxAttempts/)
  })

  it('valid edge values are accepted', () => {
    const good = [
      { maxAttempts: 1 },
      { maxAttempts: Infinity, maxTotalExecutionTime: 1000 },
      { baseWait: 0, maxWait: 0 },
      { jitter: 0 },
      { jitter: 1 },
      { maxExecutionTime: 0.5 },
      { maxExecutionTime: Infinity, maxTotalExecutionTime: Infinity },
      { intervals: [] },
      { intervals: [0, 0.5, 1e9] },
      { throwOnError: true },
      { throwOnError: false },
      { throwOnError: 'last' },
      { enabled: () => true },
      { key: 'k' },
      { backoff: 'linear' },
      { backoff: 'fixed' },
      { maxAttempts: () => 2, baseWait: () => 1, maxWait: () => 2 },
      {},
    ]
    for (const o of good) expect(() => new AsyncRetryer(ok, o)).not.toThrow()
    expect(() => new AsyncRetryer(ok)).not.toThrow()
  })
})

describe('setOptions validates and a failed call changes nothing', () => {
  for (const [label, opts, classes, mentions] of BAD) {
    it(`${label}`, async () => {
      const onRetry = vi.fn()
      const r = new AsyncRetryer(
        vi.fn().mockRejectedValueOnce(new Error('a')).mockResolvedValue('b'),
        { baseWait: 20, backoff: 'fixed', onRetry, maxAttempts: 2 },
      )
      const options = { ...r.options }
      const state = r.store.state
      expectBad(() => r.setOptions(opts), classes, mentions)
      expect(r.options).toEqual(options)
      for (const k of Object.keys(options)) expect(r.options[k]).toBe(options[k])
      for (const k of Object.keys(opts)) if (!(k in options)) expect(r.options).not.toHaveProperty(k)
      expect(r.store.state).toBe(state)
      // behaviour unchanged: 2 attempts, 20 ms apart, onRetry called
      const t = track(r.execute())
      await advance(19)
      expect(t.settled).toBe(false)
      await advance(1)
      expect(t.value).toBe('b')
      expect(onRetry).toHaveBeenCalledTimes(1)
    })
  }

  it('a mixed valid + invalid setOptions applies nothing', () => {
    const r = new AsyncRetryer(ok)
    expectBad(() => r.setOptions({ baseWait: 5, maxAttempts: 0 }), RangeError, ['maxAttempts'])
    expect(r.options.baseWait).toBe(1000)
    expect(r.options.maxAttempts).toBe(3)
    expectBad(() => r.setOptions({ onSuccess: () => {}, jitter: 9 }), RangeError, ['jitter'])
    expect(r.options.onSuccess).toBeUndefined()
  })

  it('removing the deadline that an Infinity maxAttempts relies on is rejected', () => {
    const r = new AsyncRetryer(ok, { maxAttempts: Infinity, maxTotalExecutionTime: 1000 })
    expectBad(() => r.setOptions({ maxTotalExecutionTime: Infinity }), RangeError, ['Infinity'])
    expect(r.options.maxTotalExecutionTime).toBe(1000)
    expectBad(() => r.setOptions({ maxTotalExecutionTime: undefined }), RangeError, [])
    expect(r.options.maxTotalExecutionTime).toBe(1000)
  })

  it('a failed setOptions during a flow does not disturb the flow', async () => {
    const fn = vi.fn().mockRejectedValueOnce(new Error('a')).mockResolvedValue('b')
    const r = new AsyncRetryer(fn, { baseWait: 50 })
    const t = track(r.execute())
    await flush()
    expectBad(() => r.setOptions({ baseWait: -1 }), RangeError, ['baseWait'])
    expect(r.store.state.status).toBe('retrying')
    await advance(50)
    expect(t.value).toBe('b')
  })

  it('setOptions with a non-object is rejected', () => {
    // contract-silent: the partial options must be an object
    const r = new AsyncRetryer(ok)
    for (const bad of [5, 'x', true]) {
      expect(() => r.setOptions(bad)).toThrow(TypeError)
    }
    expect(r.options.maxAttempts).toBe(3)
  })
})

describe('undefined means "not set"', () => {
  it('in the constructor, every option set to undefined falls back to its default', async () => {
    const r = new AsyncRetryer(vi.fn().mockRejectedValueOnce(new Error('a')).mockResolvedValue('b'), {
      maxAttempts: undefined,
      backoff: undefined,
      baseWait: undefined,
      maxWait: undefined,
      jitter: undefined,
      maxExecutionTime: undefined,
      maxTotalExecutionTime: undefined,
      throwOnError: undefined,
      enabled: undefined,
      onRetry: undefined,
      onError: undefined,
      initialState: undefined,
      key: undefined,
    })
    expect(r.options).toMatchObject({
      maxAttempts: 3,
      backoff: 'exponential',
      baseWait: 1000,
      maxWait: Infinity,
      jitter: 0,
      maxExecutionTime: Infinity,
      maxTotalExecutionTime: Infinity,
      throwOnError: 'last',
      enabled: true,
    })
    const t = track(r.execute())
    await advance(999)
    expect(t.settled).toBe(false)
    await advance(1)
    expect(t.value).toBe('b')
  })

  it('setOptions({ onRetry: undefined }) removes the callback', async () => {
    const onRetry = vi.fn()
    const r = new AsyncRetryer(vi.fn().mockRejectedValueOnce(new Error('a')).mockResolvedValue('b'), { onRetry, baseWait: 1 })
    r.setOptions({ onRetry: undefined })
    const t = track(r.execute())
    await advance(1)
    expect(t.value).toBe('b')
    expect(onRetry).not.toHaveBeenCalled()
  })

  it('setOptions({ baseWait: undefined }) returns to 1000', async () => {
    const fn = vi.fn().mockRejectedValueOnce(new Error('a')).mockResolvedValue('b')
    const r = new AsyncRetryer(fn, { baseWait: 5 })
    r.setOptions({ baseWait: undefined })
    expect(r.options.baseWait).toBe(1000)
    const t = track(r.execute())
    await advance(999)
    expect(fn).toHaveBeenCalledTimes(1)
    await advance(1)
    expect(t.value).toBe('b')
  })

  it('setOptions({ enabled: undefined }) re-enables', () => {
    const r = new AsyncRetryer(ok, { enabled: false })
    r.setOptions({ enabled: undefined })
    expect(r.options.enabled).toBe(true)
    expect(r.store.state.status).toBe('idle')
  })

  it('setOptions({ maxAttempts: undefined }) returns to 3', async () => {
    const fn = vi.fn(() => Promise.reject(new Error('x')))
    const r = new AsyncRetryer(fn, { maxAttempts: 7, baseWait: 1, backoff: 'fixed', throwOnError: false })
    r.setOptions({ maxAttempts: undefined })
    const t = track(r.execute())
    await advance(10)
    expect(t.settled).toBe(true)
    expect(fn).toHaveBeenCalledTimes(3)
  })
})

describe('a dynamic option returning garbage ends the flow with a RangeError', () => {
  const cases = [
    ['maxAttempts', () => -1],
    ['maxAttempts', () => 0],
    ['maxAttempts', () => 2.5],
    ['maxAttempts', () => NaN],
    ['maxAttempts', () => 'many'],
    ['maxAttempts', () => Infinity], // no finite total deadline
    ['baseWait', () => -5],
    ['baseWait', () => NaN],
    ['baseWait', () => 'slow'],
    ['maxWait', () => -1],
    ['maxWait', () => NaN],
  ]
  for (const [name, dyn] of cases) {
    for (const throwOnError of ['last', false]) {
      it(`${name}: ${String(dyn)} (throwOnError ${throwOnError})`, async () => {
        const fn = vi.fn(() => Promise.reject(new Error('plain failure')))
        const onError = vi.fn()
        const r = new AsyncRetryer(fn, { throwOnError, baseWait: 1, onError, [name]: dyn })
        let p
        expect(() => { p = r.execute() }).not.toThrow()
        const t = track(p)
        await flush()
        for (let i = 0; i < 10 && !t.settled; i++) await advance(100)
        expect(t.status).toBe('rejected')
        expect(t.reason).toBeInstanceOf(RangeError)
        expect(t.reason.message).toContain(name)
        expect(r.store.state.isExecuting).toBe(false)
        expect(r.getAbortSignal()).toBeNull()
        await advance(10_000)
        expect(vi.getTimerCount()).toBe(0)
        // the retryer itself is still usable once the option is fixed
        r.setOptions({ [name]: undefined })
        fn.mockImplementation(() => Promise.resolve('ok'))
        expect(await r.execute()).toBe('ok')
      })
    }
  }

  it('with onError given (throwOnError defaults to false) it still rejects', async () => {
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), { onError: () => {}, baseWait: () => -1 })
    const t = track(r.execute())
    await flush()
    await advance(100)
    expect(t.status).toBe('rejected')
    expect(t.reason).toBeInstanceOf(RangeError)
  })

  it('a dynamic option that throws does not wedge the retryer', async () => {
    // contract-silent: the flow settles (rejects) rather than hanging
    const r = new AsyncRetryer(() => Promise.reject(new Error('x')), {
      baseWait: () => { throw new Error('dyn boom') },
      throwOnError: false,
    })
    const t = track(r.execute())
    await flush()
    for (let i = 0; i < 10 && !t.settled; i++) await advance(100)
    expect(t.settled).toBe(true)
    expect(t.status).toBe('rejected')
    expect(r.store.state.isExecuting).toBe(false)
    expect(vi.getTimerCount()).toBe(0)
  })
})

describe('the function may return anything', () => {
  it('a plain value', async () => {
    const r = new AsyncRetryer(() => 'plain')
    expect(await r.execute()).toBe('plain')
    expect(r.store.state.lastResult).toBe('plain')
  })

  it('undefined and null results', async () => {
    const onSuccess = vi.fn()
    const r = new AsyncRetryer(() => undefined, { onSuccess })
    expect(await r.execute()).toBeUndefined()
    expect(onSuccess).toHaveBeenCalledTimes(1)
    const r2 = new AsyncRetryer(() => null)
    expect(await r2.execute()).toBeNull()
    expect(r2.store.state.executionCount).toBe(1)
  })

  it('a thenable that resolves, one that rejects, one whose then throws', async () => {
    const r1 = new AsyncRetryer(() => ({ then(res) { res('t1') } }))
    expect(await r1.execute()).toBe('t1')

    const err = { reason: 'thenable' }
    const r2 = new AsyncRetryer(() => ({ then(_res, rej) { rej(err) } }), { maxAttempts: 2, baseWait: 1 })
    const t2 = track(r2.execute())
    await advance(1)
    expect(t2.status).toBe('rejected')
    expect(t2.reason).toBe(err)

    const boom = new Error('then threw')
    const r3 = new AsyncRetryer(() => ({ then() { throw boom } }), { maxAttempts: 1 })
    const t3 = track(r3.execute())
    await flush()
    expect(t3.status).toBe('rejected')
    expect(t3.reason).toBe(boom)
  })

  it('a synchronous throw behaves like a rejection (and is retried)', async () => {
    const fn = vi.fn()
      .mockImplementationOnce(() => { throw new Error('sync') })
      .mockImplementationOnce(() => 'second')
    const onRetry = vi.fn()
    const r = new AsyncRetryer(fn, { baseWait: 2, onRetry })
    let p
    expect(() => { p = r.execute() }).not.toThrow()
    const t = track(p)
    await advance(2)
    expect(t.value).toBe('second')
    expect(onRetry).toHaveBeenCalledTimes(1)
    expect(onRetry.mock.calls[0][1].message).toBe('sync')
  })

  it('a synchronous throw of a non-Error value on the last attempt', async () => {
    const r = new AsyncRetryer(() => { throw 'str' }, { maxAttempts: 1 })
    const t = track(r.execute())
    await flush()
    expect(t.status).toBe('rejected')
    expect(t.reason).toBe('str')
  })

  it('a promise that resolves to another promise', async () => {
    const r = new AsyncRetryer(() => Promise.resolve(Promise.resolve('nested')))
    expect(await r.execute()).toBe('nested')
  })
})

describe('asyncRetryerOptions', () => {
  it('returns its argument unchanged, usable in a retryer', async () => {
    const shared = { maxAttempts: 2, baseWait: 1 }
    const out = asyncRetryerOptions(shared)
    expect(out).toBe(shared)
    const r = new AsyncRetryer(vi.fn().mockRejectedValueOnce(new Error('a')).mockResolvedValue('z'), { ...out })
    const t = track(r.execute())
    await advance(1)
    expect(t.value).toBe('z')
  })
})
