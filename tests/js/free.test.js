// free() and [Symbol.dispose](): either may be called again (nothing
// happens), and a freed retryer or budget, used again, throws an Error
// that says it was freed, never wasm-bindgen's "null pointer passed to
// rust".
import { describe, it, expect, vi } from 'vitest'
import { AsyncRetryer, RetryBudget } from 'retry-wasm'
import { flush, track } from './helpers.js'

const FREED_RETRYER = /^retry-wasm: this AsyncRetryer was freed \(free\(\) or Symbol\.dispose\); create a new one$/
const FREED_BUDGET = /^retry-wasm: this RetryBudget was freed \(free\(\) or Symbol\.dispose\); create a new one$/

/** Asserts that `use` throws the plain Error `pattern` describes. */
function expectFreed(use, pattern) {
  let thrown
  try {
    use()
  } catch (e) {
    thrown = e
  }
  expect(thrown, 'it did not throw').toBeInstanceOf(Error)
  expect(thrown.constructor).toBe(Error)
  expect(thrown.message).toMatch(pattern)
}

describe('AsyncRetryer after free()', () => {
  it('free() and [Symbol.dispose]() can each be called again', () => {
    const a = new AsyncRetryer(async () => 1)
    a.free()
    expect(() => a.free()).not.toThrow()
    expect(() => a[Symbol.dispose]()).not.toThrow()
    const b = new AsyncRetryer(async () => 1)
    b[Symbol.dispose]()
    expect(() => b[Symbol.dispose]()).not.toThrow()
    expect(() => b.free()).not.toThrow()
    expect(a[Symbol.dispose]).toBe(a.free)
    expect(a.free.name).toBe('free')
  })

  it('every method, store read and options read says the retryer was freed', () => {
    const r = new AsyncRetryer(async (x) => x, { maxAttempts: 2 })
    // Taken before free(): bound methods and the store keep the retryer.
    const { execute, abort, reset, setOptions, getAbortSignal, store } = r
    const { get, subscribe } = store
    r.free()
    const uses = {
      'execute()': () => r.execute(1),
      'abort()': () => r.abort(),
      'abort(reason)': () => r.abort('manual'),
      'reset()': () => r.reset(),
      'setOptions()': () => r.setOptions({ maxAttempts: 3 }),
      'getAbortSignal()': () => r.getAbortSignal(),
      'store.state': () => r.store.state,
      'store.get()': () => r.store.get(),
      'store.subscribe()': () => r.store.subscribe(() => {}),
      options: () => r.options,
      'options.maxAttempts': () => r.options.maxAttempts,
      'execute taken before': () => execute(1),
      'abort taken before': () => abort(),
      'reset taken before': () => reset(),
      'setOptions taken before': () => setOptions({}),
      'getAbortSignal taken before': () => getAbortSignal(),
      'store taken before: state': () => store.state,
      'store taken before: get()': () => get(),
      'store taken before: subscribe()': () => subscribe(() => {}),
    }
    for (const [name, use] of Object.entries(uses)) {
      try {
        expectFreed(use, FREED_RETRYER)
      } catch (e) {
        e.message = `${name}: ${e.message}`
        throw e
      }
    }
  })

  it('a store never read before free() says so too', () => {
    const r = new AsyncRetryer(async () => 1)
    r[Symbol.dispose]()
    expectFreed(() => r.store, FREED_RETRYER)
  })

  it('freeing during a wait aborts the flow (resolves undefined); the freed retryer then says so', async () => {
    const fn = vi.fn(async () => {
      throw new Error('down')
    })
    const onAbort = vi.fn()
    const r = new AsyncRetryer(fn, { baseWait: 10_000, onAbort })
    const t = track(r.execute())
    await flush()
    expect(fn).toHaveBeenCalledTimes(1)
    r.free()
    await flush()
    expect(t).toMatchObject({ status: 'fulfilled', value: undefined, count: 1 })
    expect(onAbort).toHaveBeenCalledTimes(1)
    expect(onAbort.mock.calls[0][0]).toBe('manual')
    expect(() => r.free()).not.toThrow()
    expectFreed(() => r.execute(), FREED_RETRYER)
    expect(fn).toHaveBeenCalledTimes(1)
  })

  it('a live retryer is untouched: methods work, free() after use works once', async () => {
    const r = new AsyncRetryer(async (x) => x * 2)
    await expect(r.execute(21)).resolves.toBe(42)
    expect(r.store.state.executionCount).toBe(1)
    expect(r.options.maxAttempts).toBe(3)
    r.free()
    expectFreed(() => r.store.state, FREED_RETRYER)
  })
})

describe('RetryBudget after free()', () => {
  it('free() and [Symbol.dispose]() can be called again; its fields say it was freed', () => {
    const b = new RetryBudget({ maxTokens: 4 })
    expect(b.tokens).toBe(4)
    b.free()
    expect(() => b.free()).not.toThrow()
    expect(() => b[Symbol.dispose]()).not.toThrow()
    expectFreed(() => b.tokens, FREED_BUDGET)
    expectFreed(() => b.maxTokens, FREED_BUDGET)
    expectFreed(() => b.tokenRatio, FREED_BUDGET)
  })

  it('a retryer given the budget before it was freed keeps using it', async () => {
    const b = new RetryBudget({ maxTokens: 4, tokenRatio: 2 })
    const fail = new Error('down')
    const fn = vi.fn(() => Promise.reject(fail))
    const giveUps = []
    const r = new AsyncRetryer(fn, { budget: b, maxAttempts: 5, baseWait: 1, backoff: 'fixed', onGiveUp: (e, reason) => giveUps.push(reason) })
    b[Symbol.dispose]()
    // Each failure draws a token from the freed budget: 4 -> 3 retries
    // (3 > 4/2), 3 -> 2 stops, long before maxAttempts.
    await expect(r.execute()).rejects.toBe(fail)
    expect(fn).toHaveBeenCalledTimes(2)
    expect(giveUps).toEqual(['budget-exhausted'])
    // A success adds tokenRatio back: 2 -> 4, so the next flow retries once again.
    fn.mockImplementationOnce(() => Promise.resolve('ok'))
    await expect(r.execute()).resolves.toBe('ok')
    fn.mockClear()
    await expect(r.execute()).rejects.toBe(fail)
    expect(fn).toHaveBeenCalledTimes(2)
    expect(giveUps).toEqual(['budget-exhausted', 'budget-exhausted'])
  })
})
