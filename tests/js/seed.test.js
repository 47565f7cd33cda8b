// SPEC §2 seed: the same seed gives the same jitter sequence (also with
// jitter 'full' and decorrelated backoff), different or no seeds do not.
import { describe, it, expect } from 'vitest'
import { AsyncRetryer } from 'retry-wasm'
import { measureDelays, useFakeClock } from './helpers.js'

useFakeClock(Date.UTC(2030, 0, 1, 12, 0, 0))

// -------------------------------------------------------------------- seed

describe('seed', () => {
  async function delaysFor(options) {
    return (await measureDelays({ maxAttempts: 25, ...options })).delays
  }

  it('the same seed gives the same jitter sequence', async () => {
    const opts = { backoff: 'fixed', baseWait: 1000, jitter: 0.5, seed: 42 }
    const a = await delaysFor(opts)
    const b = await delaysFor(opts)
    expect(a).toEqual(b)
    expect(new Set(a).size).toBeGreaterThan(3)
  })

  it('different seeds give different sequences', async () => {
    const a = await delaysFor({ backoff: 'fixed', baseWait: 1000, jitter: 0.5, seed: 1 })
    const b = await delaysFor({ backoff: 'fixed', baseWait: 1000, jitter: 0.5, seed: 2 })
    expect(a).not.toEqual(b)
  })

  it("reproducible with jitter: 'full' and with decorrelated backoff", async () => {
    const full = { backoff: 'exponential', baseWait: 10, maxWait: 1000, jitter: 'full', seed: 7 }
    expect(await delaysFor(full)).toEqual(await delaysFor(full))
    const dec = { backoff: 'decorrelated', baseWait: 10, maxWait: 1000, seed: 7 }
    expect(await delaysFor(dec)).toEqual(await delaysFor(dec))
  })

  it('without a seed, two retryers do not share one sequence', async () => {
    const a = await delaysFor({ backoff: 'fixed', baseWait: 1000, jitter: 0.5 })
    const b = await delaysFor({ backoff: 'fixed', baseWait: 1000, jitter: 0.5 })
    expect(a).not.toEqual(b)
  })

  it('validation: not a number', () => {
    // contract-silent
    expect(() => new AsyncRetryer(async () => 1, { seed: 'abc' })).toThrow(TypeError)
  })
})
