// retryFetch with a CircuitBreaker (SPEC §2e, with §2b and §2c) against two
// real HTTP servers on 127.0.0.1, on different ports and so different
// origins, with Node's own fetch and real timers: one circuit per origin,
// what a response counts as, the caller's abort and hedged losers recording
// nothing, and refused calls never reaching a server. Each server counts the
// requests it sees, so "the breaker let it through" and "the server saw it"
// can be compared.
import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CircuitBreaker, CircuitOpenError, retryFetch } from 'retry-wasm/fetch'

/**
 * One server. Routes, each counting its requests by `key`:
 *   /status/<code>/<key>            answers <code> at once
 *   /hang/<key>                     never answers (until the client goes)
 *   /slow/<key>?slow=1,2&delay=ms   request n answers 200 after `delay` when
 *                                   n is in `slow`, else at once
 */
function makeServer() {
  const s = { seen: new Map(), open: 0 }
  s.count = (key) => s.seen.get(key)?.length ?? 0
  s.server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const url = new URL(req.url, 'http://x')
      const [, route, a, b] = url.pathname.split('/')
      const key = route === 'status' ? b : a
      const mine = s.seen.get(key) ?? []
      s.seen.set(key, mine)
      mine.push({ method: req.method, closedEarly: false })
      const entry = mine.at(-1)
      const n = mine.length
      s.open++
      res.on('close', () => {
        s.open--
        entry.closedEarly = !res.writableFinished
      })
      if (route === 'status') {
        res.writeHead(Number(a), { 'content-type': 'text/plain' })
        res.end(`status ${a}, request ${n}`)
      } else if (route === 'hang') {
        // No answer at all: fetch stays pending until the client gives up.
      } else if (route === 'slow') {
        const slow = (url.searchParams.get('slow') ?? '').split(',').map(Number)
        const answer = () => res.end(`slow ${n}`)
        if (slow.includes(n)) {
          const timer = setTimeout(answer, Number(url.searchParams.get('delay') ?? 2000))
          res.on('close', () => clearTimeout(timer))
        } else answer()
      } else {
        res.writeHead(400)
        res.end('no such route')
      }
    })
  })
  s.server.keepAliveTimeout = 1000
  return s
}

const servers = { a: makeServer(), b: makeServer() }
let A
let B

beforeAll(async () => {
  for (const s of Object.values(servers)) {
    await new Promise((resolve) => s.server.listen(0, '127.0.0.1', resolve))
    s.origin = `http://127.0.0.1:${s.server.address().port}`
  }
  A = servers.a
  B = servers.b
})

afterAll(async () => {
  for (const s of Object.values(servers)) {
    s.server.closeAllConnections()
    await new Promise((resolve) => s.server.close(resolve))
  }
})

let unique = 0
const key = (name) => `${name}-${++unique}`
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits (at most ~3 s) until `cond()` holds; returns whether it did. */
async function until(cond) {
  for (let i = 0; i < 300 && !cond(); i++) await sleep(10)
  return cond()
}

/** A retryFetch with no real waits between attempts, behind `breaker`. */
const behind = (breaker, options = {}) => retryFetch({ breaker, baseWait: 1, jitter: 0, ...options })

/** How a promise settles, as a value to compare: `{ ok, value | error }`. */
const outcome = (p) => p.then((value) => ({ ok: true, value }), (error) => ({ ok: false, error }))

describe('one circuit per origin', () => {
  it('an origin failing with 503 opens its circuit; calls to a healthy origin go on; snapshot() has both origins', async () => {
    const breaker = new CircuitBreaker({ minimumThroughput: 4, failureRatio: 0.5, breakDuration: 60_000 })
    const call = behind(breaker, { maxAttempts: 1 })
    const ka = key('sick')
    const kb = key('healthy')
    // Interleaved: had both origins shared one window, its 4 failures in 8
    // calls (0.5) would open it for the healthy origin too.
    for (let i = 0; i < 4; i++) {
      const ra = await call(`${A.origin}/status/503/${ka}?i=${i}`)
      expect(ra.status).toBe(503)
      await ra.arrayBuffer()
      const rb = await call(`${B.origin}/status/200/${kb}`)
      expect(rb.status).toBe(200)
      await rb.arrayBuffer()
    }
    expect(breaker.state(A.origin)).toBe('open')
    expect(breaker.state(B.origin)).toBe('closed')

    // A refused call: no request; the error names the origin.
    const refused = await outcome(call(`${A.origin}/status/200/${ka}`))
    expect(refused.ok).toBe(false)
    expect(refused.error).toBeInstanceOf(CircuitOpenError)
    expect(refused.error.name).toBe('CircuitOpenError')
    expect(refused.error.key).toBe(A.origin)
    expect(refused.error.retryAfter).toBeGreaterThan(59_000)
    expect(refused.error.retryAfter).toBeLessThanOrEqual(60_000)
    expect(A.count(ka)).toBe(4)

    // The healthy origin: still through, whatever the path, and counted.
    const rb = await call(new Request(`${B.origin}/status/200/${kb}?more=1#frag`))
    expect(rb.status).toBe(200)
    expect(B.count(kb)).toBe(5)

    const snap = breaker.snapshot()
    expect(Object.keys(snap).sort()).toEqual([A.origin, B.origin].sort())
    expect(A.origin).toBe(new URL(`${A.origin}/status/503/${ka}`).origin)
    expect(snap[A.origin]).toMatchObject({ state: 'open', calls: 4, failures: 4, failureRatio: 1 })
    expect(snap[A.origin].retryAfter).toBeGreaterThan(59_000)
    expect(snap[B.origin]).toEqual({ state: 'closed', calls: 5, failures: 0, failureRatio: 0, retryAfter: 0 })
  })

  it('a URL object, a string and a Request of one origin share its circuit; isolate(origin) stops them all, without a request', async () => {
    const breaker = new CircuitBreaker()
    const call = behind(breaker, { maxAttempts: 3 })
    const k = key('isolated')
    breaker.isolate(B.origin)
    for (const input of [`${B.origin}/status/200/${k}`, new URL(`/status/200/${k}`, B.origin), new Request(`${B.origin}/status/200/${k}`)]) {
      const r = await outcome(call(input))
      expect(r.ok).toBe(false)
      expect(r.error).toBeInstanceOf(CircuitOpenError)
      expect(r.error.key).toBe(B.origin)
      expect(r.error.retryAfter).toBe(Infinity)
    }
    expect(B.count(k)).toBe(0)
    // The other origin is not affected.
    expect((await call(`${A.origin}/status/200/${k}`)).status).toBe(200)
    breaker.reset(B.origin)
    expect((await call(`${B.origin}/status/200/${k}`)).status).toBe(200)
    expect(B.count(k)).toBe(1)
  })
})

describe('what a response counts as (rule 4)', () => {
  it('a 404 is a success: many of them leave the circuit closed', async () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 1, minimumThroughput: 1 })
    const call = behind(breaker)
    const k = key('missing')
    for (let i = 0; i < 12; i++) {
      const r = await call(`${A.origin}/status/404/${k}`)
      expect(r.status).toBe(404)
      await r.arrayBuffer()
    }
    expect(breaker.state(A.origin)).toBe('closed')
    expect(breaker.snapshot()[A.origin]).toMatchObject({ calls: 12, failures: 0 })
    expect(A.count(k)).toBe(12)
    // While one status in statusCodes is a failure that trips it at once.
    const r = await behind(breaker, { maxAttempts: 1 })(`${A.origin}/status/503/${k}`)
    expect(r.status).toBe(503)
    expect(breaker.state(A.origin)).toBe('open')
  })

  it('a POST answered 503 is not retried but is recorded as a failure: enough of them open the circuit', async () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 3, breakDuration: 60_000 })
    const call = behind(breaker, { maxAttempts: 5 })
    const k = key('post')
    for (let i = 0; i < 3; i++) {
      const r = await call(`${A.origin}/status/503/${k}`, { method: 'POST', body: 'payload' })
      expect(r.status).toBe(503)
      await r.arrayBuffer()
      // One request per call: a POST is not sent again.
      expect(A.count(k)).toBe(i + 1)
    }
    expect(breaker.state(A.origin)).toBe('open')
    const refused = await outcome(call(`${A.origin}/status/200/${k}`, { method: 'POST', body: 'payload' }))
    expect(refused.error).toBeInstanceOf(CircuitOpenError)
    expect(A.count(k)).toBe(3)
  })

  it('a network error is a failure', async () => {
    // A port nobody listens on: the connection is refused.
    const dead = http.createServer()
    await new Promise((resolve) => dead.listen(0, '127.0.0.1', resolve))
    const origin = `http://127.0.0.1:${dead.address().port}`
    await new Promise((resolve) => dead.close(resolve))
    const breaker = new CircuitBreaker({ consecutiveFailures: 2, breakDuration: 60_000 })
    const r = await outcome(behind(breaker, { maxAttempts: 3 })(`${origin}/x`))
    // Two refused connections trip it; the third attempt is refused by the circuit.
    expect(r.ok).toBe(false)
    expect(r.error).toBeInstanceOf(CircuitOpenError)
    expect(r.error.key).toBe(origin)
    expect(breaker.snapshot()[origin]).toMatchObject({ state: 'open', calls: 2, failures: 2 })
  })
})

describe('refused attempts within a call (rules 2 and 3)', () => {
  it('the server sees exactly the attempts the breaker let through; the wait after a refusal is its retryAfter', async () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 2, breakDuration: 150 })
    const k = key('count')
    const errors = []
    const reasons = []
    const call = behind(breaker, {
      maxAttempts: 4,
      onError: (e) => errors.push(e),
      onGiveUp: (e, reason) => reasons.push(reason),
    })
    const started = performance.now()
    // 1: 503, 2: 503 (trips), 3: refused, wait 150 ms, 4: the probe, 503.
    const r = await call(`${A.origin}/status/503/${k}`)
    const took = performance.now() - started
    expect(r.status).toBe(503)
    await r.arrayBuffer()
    expect(errors.map((e) => e.name)).toEqual(['HTTPError', 'HTTPError', 'CircuitOpenError', 'HTTPError'])
    expect(errors[2].key).toBe(A.origin)
    expect(A.count(k)).toBe(3)
    expect(took).toBeGreaterThanOrEqual(140)
    expect(reasons).toEqual(['attempts-exhausted'])
    expect(breaker.state(A.origin)).toBe('open')
  })

  it('maxRetryAfter caps the wait after a refusal: refused again, the call rejects with the CircuitOpenError', async () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 2, breakDuration: 1000 })
    const k = key('capped')
    const reasons = []
    const call = behind(breaker, { maxAttempts: 4, maxRetryAfter: 20, onGiveUp: (e, reason) => reasons.push(reason) })
    const started = performance.now()
    const r = await outcome(call(`${A.origin}/status/503/${k}`))
    const took = performance.now() - started
    expect(r.ok).toBe(false)
    expect(r.error).toBeInstanceOf(CircuitOpenError)
    expect(r.error.key).toBe(A.origin)
    // Attempts 1 and 2 reached the server; 3 and 4 were refused, 20 ms apart.
    expect(A.count(k)).toBe(2)
    expect(took).toBeGreaterThanOrEqual(15)
    expect(took).toBeLessThan(900)
    expect(reasons).toEqual(['circuit-open'])
  })

  it('a call whose wait would cross maxTotalExecutionTime rejects at once with the CircuitOpenError', async () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 1, breakDuration: 5000 })
    const k = key('deadline')
    const first = await behind(breaker, { maxAttempts: 1 })(`${A.origin}/status/503/${k}`)
    await first.arrayBuffer()
    const reasons = []
    const started = performance.now()
    const r = await outcome(behind(breaker, { maxAttempts: 5, maxTotalExecutionTime: 1000, onGiveUp: (e, reason) => reasons.push(reason) })(`${A.origin}/status/200/${k}`))
    expect(performance.now() - started).toBeLessThan(500)
    expect(r.error).toBeInstanceOf(CircuitOpenError)
    expect(reasons).toEqual(['circuit-open'])
    expect(A.count(k)).toBe(1)
  })
})

describe('attempts that record nothing (rule 4)', () => {
  it("the caller's abort of a running attempt records nothing", async () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 1 })
    const k = key('abort')
    const controller = new AbortController()
    const reason = new Error('caller gave up')
    const p = outcome(behind(breaker)(`${A.origin}/hang/${k}`, { signal: controller.signal }))
    expect(await until(() => A.count(k) === 1)).toBe(true)
    controller.abort(reason)
    const r = await p
    expect(r.ok).toBe(false)
    expect(r.error).toBe(reason)
    expect(breaker.state(A.origin)).toBe('closed')
    expect(breaker.snapshot()[A.origin] ?? { calls: 0, failures: 0 }).toMatchObject({ calls: 0, failures: 0 })
    expect(A.count(k)).toBe(1)
  })

  it("a half-open probe aborted by the caller gives its permit back: the next call becomes the probe", async () => {
    const changes = []
    const breaker = new CircuitBreaker({ consecutiveFailures: 1, breakDuration: 100, onStateChange: (c) => changes.push(c.reason) })
    const k = key('probe-abort')
    const call = behind(breaker, { maxAttempts: 1 })
    await (await call(`${A.origin}/status/503/${k}`)).arrayBuffer()
    expect(breaker.state(A.origin)).toBe('open')
    await sleep(120)
    expect(breaker.state(A.origin)).toBe('half-open')

    const controller = new AbortController()
    const probe = outcome(call(`${A.origin}/hang/${k}`, { signal: controller.signal }))
    expect(await until(() => A.count(k) === 2)).toBe(true)
    // While the probe runs, another call is refused without a request.
    const refused = await outcome(call(`${A.origin}/status/200/${k}`))
    expect(refused.error).toBeInstanceOf(CircuitOpenError)
    expect(refused.error.retryAfter).toBe(100)
    expect(A.count(k)).toBe(2)

    controller.abort()
    const aborted = await probe
    expect(aborted.ok).toBe(false)
    expect(aborted.error?.name).toBe('AbortError')
    expect(breaker.state(A.origin)).toBe('half-open')
    // The permit came back: this call is the probe, reaches the server and closes the circuit.
    const r = await call(`${A.origin}/status/200/${k}`)
    expect(r.status).toBe(200)
    expect(A.count(k)).toBe(3)
    expect(breaker.state(A.origin)).toBe('closed')
    expect(changes).toEqual(['tripped', 'break-ended', 'probe-succeeded'])
  })

  it('a hedged loser records nothing', async () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 1 })
    const k = key('hedge-loser')
    const r = await behind(breaker, { hedge: 30, maxAttempts: 2 })(`${B.origin}/slow/${k}?slow=1&delay=2000`)
    expect(r.status).toBe(200)
    expect(await r.text()).toBe('slow 2')
    // The loser's connection is closed by the client before it answered.
    expect(await until(() => B.open === 0)).toBe(true)
    expect(B.seen.get(k).map((e) => e.closedEarly)).toEqual([true, false])
    expect(breaker.state(B.origin)).toBe('closed')
    expect(breaker.snapshot()[B.origin]).toMatchObject({ calls: 1, failures: 0 })
  })

  it('a hedged attempt asks for its own permit: a half-open circuit with its probe running refuses it, and the server never sees it', async () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 1, breakDuration: 50 })
    const k = key('hedge-probe')
    await (await behind(breaker, { maxAttempts: 1 })(`${B.origin}/status/503/${k}`)).arrayBuffer()
    await sleep(70)
    const errors = []
    const r = await behind(breaker, { hedge: 30, maxAttempts: 2, onError: (e) => errors.push(e) })(`${B.origin}/slow/${k}?slow=2&delay=300`)
    // Request 1 was the 503; request 2 the probe, slow; the hedge was refused.
    expect(r.status).toBe(200)
    expect(await r.text()).toBe('slow 2')
    expect(errors.map((e) => e.name)).toEqual(['CircuitOpenError'])
    expect(errors[0].key).toBe(B.origin)
    expect(B.count(k)).toBe(2)
    expect(breaker.state(B.origin)).toBe('closed')
  })
})
