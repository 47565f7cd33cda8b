// Retries across layers (SPEC §2: nested, innerRetries) and onBackoff.
// Three layers of retryers over one function that always fails hit it
// 3 × 3 × 3 = 27 times; one layer owning retries brings that to 3. Only a
// flow started inside a *running* attempt is nested. Real timers: the
// async context is what is tested, and fake timers replace the functions
// it follows.
import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AsyncRetryer, asyncRetry, retryFetch } from 'retry-wasm/fetch'

const quick = { maxAttempts: 3, backoff: 'fixed', baseWait: 1 }
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Three layers over a function that always fails; how often it ran. */
async function threeLayers({ outer = {}, middle = {}, inner = {} } = {}) {
  let calls = 0
  const l3 = asyncRetry(async () => {
    calls++
    throw new Error('down')
  }, { ...quick, ...inner })
  const l2 = asyncRetry(async () => {
    await sleep(0)
    return l3()
  }, { ...quick, ...middle })
  const l1 = asyncRetry(async () => l2(), { ...quick, ...outer })
  await expect(l1()).rejects.toThrow('down')
  return calls
}

/**
 * A retryer of three attempts over a function that always throws 'x',
 * passing through when nested; `calls()` says how often the function ran.
 */
function failingPassthrough() {
  let calls = 0
  const inner = asyncRetry(async () => {
    calls++
    throw new Error('x')
  }, { ...quick, nested: 'passthrough' })
  return { inner, calls: () => calls }
}

describe('retries across layers', () => {
  it('three layers of three attempts: 27 calls by default', async () => {
    expect(await threeLayers()).toBe(27)
  })

  it('innerRetries: false on the outermost: 3 calls, whatever the inner ones say', async () => {
    expect(await threeLayers({ outer: { innerRetries: false } })).toBe(3)
    expect(await threeLayers({ outer: { innerRetries: false }, inner: { nested: 'retry' } })).toBe(3)
  })

  it("nested: 'passthrough' on the inner ones: 3 calls", async () => {
    const passthrough = { nested: 'passthrough' }
    expect(await threeLayers({ middle: passthrough, inner: passthrough })).toBe(3)
  })

  it("a passing-through flow hands its failure back: onGiveUp('nested'), no onRetry, no wait", async () => {
    const events = []
    let innerRetryer
    const outer = new AsyncRetryer(async () => {
      innerRetryer = new AsyncRetryer(async () => {
        throw new Error('inner down')
      }, {
        ...quick,
        baseWait: 10_000,
        nested: 'passthrough',
        // Resolving undefined would read as a success: it rejects anyway.
        throwOnError: false,
        onRetry: () => events.push('inner onRetry'),
        onBackoff: () => events.push('inner onBackoff'),
        onGiveUp: (error, reason) => events.push(`inner gave up: ${reason}`),
      })
      return innerRetryer.execute()
    }, { ...quick, onGiveUp: (error, reason) => events.push(`outer gave up: ${reason} (${error.message})`) })
    const t0 = performance.now()
    await expect(outer.execute()).rejects.toThrow('inner down')
    expect(performance.now() - t0).toBeLessThan(1_000)
    expect(events).toEqual([
      'inner gave up: nested',
      'inner gave up: nested',
      'inner gave up: nested',
      'outer gave up: attempts-exhausted (inner down)',
    ])
  })

  it('what the outer attempt starts before its first await is nested too', async () => {
    const { inner, calls } = failingPassthrough()
    // No await before the inner call: the synchronous part of the attempt.
    const outer = asyncRetry(() => inner(), quick)
    await expect(outer()).rejects.toThrow('x')
    expect(calls()).toBe(3)
  })

  it('a flow started from a timer outside any attempt retries as always', async () => {
    const { inner, calls } = failingPassthrough()
    const done = new Promise((resolve) => setTimeout(() => resolve(inner().catch((e) => e)), 1))
    expect((await done).message).toBe('x')
    expect(calls()).toBe(3)
  })

  it('a flow started by a timer an attempt scheduled, firing after that attempt settled, is not nested', async () => {
    const { inner, calls } = failingPassthrough()
    let later
    const scheduled = new Promise((resolve) => { later = resolve })
    const outer = asyncRetry(async () => {
      // The timer carries the attempt's async context, but fires after the
      // attempt succeeded.
      setTimeout(() => later(inner().catch((e) => e)), 30)
      return 'outer done'
    }, { ...quick, innerRetries: false })
    expect(await outer()).toBe('outer done')
    expect((await scheduled).message).toBe('x')
    expect(calls()).toBe(3)
  })

  it('two unrelated concurrent outer flows both retry as always', async () => {
    let a = 0
    let b = 0
    const owner = asyncRetry(async () => {
      a++
      await sleep(5)
      throw new Error('a')
    }, { ...quick, innerRetries: false })
    const other = asyncRetry(async () => {
      b++
      await sleep(1)
      throw new Error('b')
    }, quick)
    const results = await Promise.allSettled([owner(), other()])
    expect(results.map((r) => r.reason.message)).toEqual(['a', 'b'])
    expect([a, b]).toEqual([3, 3])
  })

  it('a nested flow that succeeds resolves its result, and the outer one retries the rest', async () => {
    let n = 0
    const inner = asyncRetry(async () => {
      n++
      if (n < 3) throw new Error('flaky')
      return 'ok'
    }, quick)
    const outer = asyncRetry(async () => inner(), { ...quick, innerRetries: false })
    expect(await outer()).toBe('ok')
    // Each inner flow made one attempt; the outer owned the three.
    expect(n).toBe(3)
  })

  it('retryFetch inside an attempt of an innerRetries: false retryer passes through', async () => {
    let requests = 0
    const server = http.createServer((req, res) => {
      requests++
      res.writeHead(503)
      res.end('down')
    })
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${server.address().port}/`
    try {
      const request = retryFetch({ baseWait: 1, jitter: 0 })
      const reasons = []
      const outer = asyncRetry(async () => {
        const r = await request(url)
        if (!r.ok) throw new Error(`HTTP ${r.status}`)
        return r
      }, { ...quick, innerRetries: false, onGiveUp: (e, reason) => reasons.push(reason) })
      await expect(outer()).rejects.toThrow('HTTP 503')
      expect(requests).toBe(3)
      expect(reasons).toEqual(['attempts-exhausted'])
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('onBackoff', () => {
  /** The onBackoff calls of one failing flow of `options`. */
  async function backoffs(options, attempts = 3) {
    const seen = []
    let retryer = null
    let failures = 0
    retryer = new AsyncRetryer(async () => {
      failures++
      throw new Error(`fail ${failures}`)
    }, {
      maxAttempts: attempts,
      ...options,
      onBackoff: (info, r) => seen.push({ ...info, error: info.error.message, same: r === retryer }),
    })
    await expect(retryer.execute()).rejects.toThrow()
    return seen
  }
  const shape = (seen) => seen.map(({ delay, attempt, error, same }) => ({ delay, attempt, error, same }))

  it('exponential: each wait, the attempt that failed, its error, the retryer', async () => {
    const seen = await backoffs({ baseWait: 4 }, 4)
    expect(shape(seen)).toEqual([
      { delay: 4, attempt: 1, error: 'fail 1', same: true },
      { delay: 8, attempt: 2, error: 'fail 2', same: true },
      { delay: 16, attempt: 3, error: 'fail 3', same: true },
    ])
    // elapsed: ms since execute(), growing by at least each wait.
    expect(seen[0].elapsed).toBeGreaterThanOrEqual(0)
    expect(seen[1].elapsed - seen[0].elapsed).toBeGreaterThanOrEqual(4 - 1)
    expect(seen[2].elapsed - seen[1].elapsed).toBeGreaterThanOrEqual(8 - 1)
    expect(Object.keys(seen[0]).sort()).toEqual(['attempt', 'delay', 'elapsed', 'error', 'same'])
  })

  it('seeded jitter: the delays reported are reproducible and within the jitter', async () => {
    const options = { baseWait: 20, jitter: 0.5, seed: 7 }
    const a = await backoffs(options, 4)
    const b = await backoffs(options, 4)
    expect(a.map((x) => x.delay)).toEqual(b.map((x) => x.delay))
    a.forEach(({ delay }, i) => {
      const nominal = 20 * 2 ** i
      expect(delay).toBeGreaterThanOrEqual(nominal * 0.5)
      expect(delay).toBeLessThanOrEqual(nominal * 1.5)
    })
    expect(new Set(a.map((x) => x.delay / 2 ** a.indexOf(x))).size).toBeGreaterThan(1)
  })

  it('intervals, a 0 ms entry included', async () => {
    const seen = await backoffs({ intervals: [3, 0, 5] }, 4)
    expect(shape(seen).map((s) => [s.delay, s.attempt])).toEqual([[3, 1], [0, 2], [5, 3]])
  })

  it('a retryAfter hint replaces the computed delay', async () => {
    const seen = await backoffs({ baseWait: 1_000, retryAfter: (error, attempt) => attempt * 6 })
    expect(shape(seen).map((s) => s.delay)).toEqual([6, 12])
  })

  it('retryFetch waits, Retry-After included', async () => {
    let n = 0
    const server = http.createServer((req, res) => {
      n++
      if (n === 1) {
        res.writeHead(503, { 'retry-after': '0' })
        res.end()
      } else if (n === 2) {
        res.writeHead(500)
        res.end()
      } else {
        res.end('ok')
      }
    })
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const seen = []
      const f = retryFetch({ baseWait: 9, jitter: 0, backoff: 'fixed', onBackoff: (info) => seen.push([info.delay, info.attempt, info.error.status]) })
      const r = await f(`http://127.0.0.1:${server.address().port}/`)
      expect(await r.text()).toBe('ok')
      expect(seen).toEqual([[0, 1, 503], [9, 2, 500]])
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('not called for a wait the total deadline cuts', async () => {
    const seen = []
    const aborts = []
    const r = new AsyncRetryer(async () => {
      throw new Error('x')
    }, {
      baseWait: 5_000,
      maxTotalExecutionTime: 1_000,
      onBackoff: (info) => seen.push(info),
      onAbort: (reason) => aborts.push(reason),
    })
    const t0 = performance.now()
    expect(await r.execute()).toBeUndefined()
    expect(performance.now() - t0).toBeLessThan(500)
    expect(seen).toEqual([])
    expect(aborts).toEqual(['total-timeout'])
  })

  it('a throwing onBackoff ends the flow with what it threw', async () => {
    let calls = 0
    const boom = new Error('from onBackoff')
    const r = new AsyncRetryer(async () => {
      calls++
      throw new Error('x')
    }, { ...quick, onBackoff: () => { throw boom } })
    await expect(r.execute()).rejects.toBe(boom)
    expect(calls).toBe(1)
    expect(r.store.state.isExecuting).toBe(false)
  })
})

describe('bad input', () => {
  const cases = [
    [{ nested: 'outer' }, 'nested', '"outer"'],
    [{ nested: true }, 'nested', 'true'],
    [{ innerRetries: 'false' }, 'innerRetries', '"false"'],
    [{ innerRetries: 0 }, 'innerRetries', '0'],
    [{ onBackoff: 'log' }, 'onBackoff', '"log"'],
  ]
  for (const [options, name, shown] of cases) {
    it(`${JSON.stringify(options)}: a TypeError naming ${name} and ${shown}`, () => {
      let error
      try {
        new AsyncRetryer(async () => 1, options)
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(TypeError)
      expect(error.message).toContain(name)
      expect(error.message).toContain(shown)
      const r = new AsyncRetryer(async () => 1)
      expect(() => r.setOptions(options)).toThrow(TypeError)
    })
  }

  it('options show the defaults and the values given', () => {
    const r = new AsyncRetryer(async () => 1, { nested: 'passthrough', innerRetries: false })
    expect(r.options.nested).toBe('passthrough')
    expect(r.options.innerRetries).toBe(false)
    r.setOptions({ nested: undefined })
    expect('nested' in r.options).toBe(false)
  })
})
