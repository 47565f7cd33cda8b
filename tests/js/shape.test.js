// The shape SPEC §0 "Who decides, who acts" names: the Rust class itself
// calls the wrapped function, arms and clears the host's timers, makes the
// attempt's AbortController and seeds its jitter from the host's randomness. Each of
// those calls is watched here, and its stack must run through the
// WebAssembly module (V8 names wasm frames `wasm://wasm/...`), not through
// hand-written JavaScript alone.
import { afterEach, describe, expect, it, vi } from 'vitest'
import { AsyncRetryer, asyncRetry } from 'retry-wasm'

const fromWasm = (stack) => /wasm:\/\/wasm\//.test(stack)

/** Wraps `obj[name]` so that every call records its stack. */
function watch(obj, name) {
  const stacks = []
  const original = obj[name]
  obj[name] = function (...args) {
    stacks.push(new Error('watched').stack)
    return Reflect.apply(original, this, args)
  }
  return { stacks, restore: () => { obj[name] = original } }
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe('the engine calls the host itself', () => {
  it('crypto.getRandomValues, once, for the first retryer made', () => {
    // This file's module instance has made no retryer yet.
    const random = watch(globalThis.crypto, 'getRandomValues')
    try {
      const r = new AsyncRetryer(async () => 1)
      new AsyncRetryer(async () => 2, { jitter: 0.5 })
      expect(r).toBeInstanceOf(AsyncRetryer)
    } finally {
      random.restore()
    }
    expect(random.stacks).toHaveLength(1)
    expect(fromWasm(random.stacks[0])).toBe(true)
  })

  it('the wrapped function, setTimeout, clearTimeout and AbortController', async () => {
    const set = watch(globalThis, 'setTimeout')
    const clear = watch(globalThis, 'clearTimeout')
    const Original = globalThis.AbortController
    const made = []
    globalThis.AbortController = class extends Original {
      constructor() {
        super()
        made.push(new Error('watched').stack)
      }
    }
    const fnStacks = []
    let calls = 0
    try {
      const r = new AsyncRetryer(async function () {
        fnStacks.push(new Error('watched').stack)
        r.getAbortSignal()
        if (++calls === 1) throw new Error('once')
        return 'done'
      }, { baseWait: 5, maxExecutionTime: 1000 })
      expect(await r.execute()).toBe('done')
    } finally {
      set.restore()
      clear.restore()
      globalThis.AbortController = Original
    }
    expect(calls).toBe(2)
    for (const stacks of [fnStacks, set.stacks, clear.stacks, made]) {
      expect(stacks.length).toBeGreaterThan(0)
      for (const stack of stacks) expect(fromWasm(stack)).toBe(true)
    }
    // Two attempt deadlines and one wait armed; the second deadline cleared
    // by the success (the first by the failure).
    expect(set.stacks).toHaveLength(3)
    expect(clear.stacks).toHaveLength(2)
    // One controller per attempt that asked for its signal.
    expect(made).toHaveLength(2)
  })

  it('asyncRetry calls through the same engine', async () => {
    const stacks = []
    const f = asyncRetry(async () => {
      stacks.push(new Error('watched').stack)
      return 1
    })
    expect(await f()).toBe(1)
    expect(fromWasm(stacks[0])).toBe(true)
  })
})
