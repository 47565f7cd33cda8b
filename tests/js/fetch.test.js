// retryFetch (SPEC §2b) against a real HTTP server on 127.0.0.1, with
// Node's own fetch: retryable statuses and network errors, which methods
// and bodies may be sent again, Retry-After and its limits, the caller's
// abort, and response bodies let go of when retried.
import { createHash } from 'node:crypto'
import http from 'node:http'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { RetryBudget, parseRetryAfter, retryFetch } from 'retry-wasm/fetch'

/** Requests the server saw, by key: method, body hash, headers. */
let seen = new Map()
/** 503 responses whose body was still being sent (never read or cancelled). */
let open503 = 0
let server
let base

const hash = (buf) => createHash('sha256').update(buf).digest('hex')
/** What a body's bytes hash to, as the server records them. */
const hashOf = (text) => hash(Buffer.from(text))

function record(key, req, body) {
  const list = seen.get(key) ?? []
  list.push({ method: req.method, hash: hash(body), length: body.length, key: req.headers['idempotency-key'], type: req.headers['content-type'] })
  seen.set(key, list)
  return list.length
}

// Routes: /<behaviour>/<key>?...; each key counts its own requests.
function handle(req, res, body) {
  const url = new URL(req.url, 'http://x')
  const [, route, key = 'none'] = url.pathname.split('/')
  const n = record(key, req, body)
  const q = (name, dflt) => url.searchParams.get(name) ?? dflt
  switch (route) {
    case 'fail': {
      // Fails the first `times` requests with `status`, then answers 200.
      const times = Number(q('times', '2'))
      if (n <= times) {
        const headers = {}
        if (url.searchParams.has('after')) headers['retry-after'] = q('after')
        if (url.searchParams.has('rl')) headers['ratelimit-reset'] = q('rl')
        // xrl=N: an X-RateLimit-Reset N seconds ahead, as a Unix time.
        if (url.searchParams.has('xrl')) headers['x-ratelimit-reset'] = String(Math.ceil(Date.now() / 1000) + Number(q('xrl')))
        res.writeHead(Number(q('status', '503')), headers)
        res.end(`failure ${n}`)
        return
      }
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(`ok ${n}`)
      return
    }
    case 'drop': {
      // Cuts the connection the first `times` times: a network error.
      if (n <= Number(q('times', '2'))) {
        req.socket.destroy()
        return
      }
      res.end(`ok ${n}`)
      return
    }
    case 'slow': {
      const delay = Number(q('delay', '200'))
      const timer = setTimeout(() => res.end(`slow ${n}`), n <= Number(q('times', '1')) ? delay : 0)
      res.on('close', () => clearTimeout(timer))
      return
    }
    case 'stream': {
      // 20 chunks over about a second.
      res.writeHead(200, { 'content-type': 'text/plain' })
      let i = 0
      const timer = setInterval(() => {
        res.write(`chunk ${i} `)
        if (++i === 20) {
          clearInterval(timer)
          res.end()
        }
      }, 50)
      res.on('close', () => clearInterval(timer))
      return
    }
    case 'big': {
      // A 503 with a body far larger than the socket buffers, written with
      // backpressure: it completes only if the client reads or cancels it.
      if (n % 2 === 1) {
        open503++
        res.writeHead(503)
        const chunk = Buffer.alloc(64 * 1024, 120)
        let left = 32
        const pump = () => {
          while (left > 0) {
            left--
            if (!res.write(chunk)) {
              res.once('drain', pump)
              return
            }
          }
          res.end()
        }
        res.on('close', () => { open503-- })
        pump()
        return
      }
      res.end('ok')
      return
    }
    default:
      res.writeHead(404)
      res.end('no such route')
  }
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const parts = []
    req.on('data', (c) => parts.push(c))
    req.on('end', () => handle(req, res, Buffer.concat(parts)))
  })
  server.keepAliveTimeout = 1000
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${server.address().port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

beforeEach(() => {
  seen = new Map()
})

let unique = 0
const key = (name) => `${name}-${++unique}`
const count = (k) => seen.get(k)?.length ?? 0
const quick = (options = {}) => retryFetch({ baseWait: 1, jitter: 0, ...options })

describe('retryable statuses and network errors', () => {
  it('a GET failing twice with 503 is retried and resolves the 200', async () => {
    const k = key('get')
    const r = await quick()(`${base}/fail/${k}?times=2`)
    expect(r.status).toBe(200)
    expect(await r.text()).toBe('ok 3')
    expect(count(k)).toBe(3)
  })

  it('when retries run out on a retryable status, the last Response is returned', async () => {
    const k = key('out')
    const r = await quick({ maxAttempts: 4 })(`${base}/fail/${k}?times=99&status=502`)
    expect(r).toBeInstanceOf(Response)
    expect(r.status).toBe(502)
    expect(await r.text()).toBe('failure 4')
    expect(count(k)).toBe(4)
  })

  it('a status that is not retryable is returned at once', async () => {
    const k = key('404')
    const r = await quick()(`${base}/fail/${k}?times=99&status=404`)
    expect(r.status).toBe(404)
    expect(count(k)).toBe(1)
  })

  it('statusCodes decides which statuses fail an attempt', async () => {
    const k = key('codes')
    const r = await quick({ statusCodes: [418] })(`${base}/fail/${k}?times=1&status=418`)
    expect(r.status).toBe(200)
    expect(count(k)).toBe(2)
    const k2 = key('codes')
    const r2 = await quick({ statusCodes: [418] })(`${base}/fail/${k2}?times=1&status=503`)
    expect(r2.status).toBe(503)
    expect(count(k2)).toBe(1)
  })

  it('a network error (a dropped connection) is a failed attempt', async () => {
    const k = key('drop')
    const r = await quick()(`${base}/drop/${k}?times=2`)
    expect(await r.text()).toBe('ok 3')
    expect(count(k)).toBe(3)
  })

  it('network errors to the end reject with fetch\'s TypeError', async () => {
    const k = key('dropall')
    const errors = []
    const p = quick({ onError: (e) => errors.push(e) })(`${base}/drop/${k}?times=99`)
    await expect(p).rejects.toBeInstanceOf(TypeError)
    expect(count(k)).toBe(3)
    expect(errors.every((e) => e instanceof TypeError)).toBe(true)
  })

  it('callbacks see an HTTPError with the status and the response', async () => {
    const k = key('cb')
    const seenErrors = []
    const reasons = []
    const r = await quick({
      onRetry: (attempt, error) => seenErrors.push([attempt, error.name, error.status, error.response instanceof Response]),
      onGiveUp: (error, reason) => reasons.push(reason),
    })(`${base}/fail/${k}?times=99&status=503`)
    expect(r.status).toBe(503)
    expect(seenErrors).toEqual([[1, 'HTTPError', 503, true], [2, 'HTTPError', 503, true]])
    expect(reasons).toEqual(['attempts-exhausted'])
  })

  it('shouldRetry can refuse a retry; the response is returned', async () => {
    const k = key('should')
    const r = await quick({ shouldRetry: (error) => error.status !== 503 })(`${base}/fail/${k}?times=99&status=503`)
    expect(r.status).toBe(503)
    expect(count(k)).toBe(1)
  })

  it('a shared RetryBudget stops retries across calls', async () => {
    const budget = new RetryBudget({ maxTokens: 4, tokenRatio: 0.1 })
    const f = quick({ budget })
    const reasons = []
    const g = quick({ budget, onGiveUp: (e, reason) => reasons.push(reason) })
    const k = key('budget')
    await f(`${base}/fail/${k}?times=99`)
    const k2 = key('budget')
    const r = await g(`${base}/fail/${k2}?times=99`)
    expect(r.status).toBe(503)
    // 4 tokens: the first call spends 3 (2 left after its last try costs one
    // more than the half), the second gives up after its first attempt.
    expect(count(k2)).toBe(1)
    expect(reasons).toEqual(['budget-exhausted'])
  })
})

describe('what may be sent again', () => {
  it('a POST without an Idempotency-Key is sent once, its 503 returned', async () => {
    const k = key('post')
    const r = await quick()(`${base}/fail/${k}?times=2`, { method: 'POST', body: 'x' })
    expect(r.status).toBe(503)
    expect(count(k)).toBe(1)
  })

  it('a POST or PATCH with an Idempotency-Key is retried', async () => {
    for (const method of ['POST', 'PATCH', 'post']) {
      const k = key('idem')
      const r = await quick()(`${base}/fail/${k}?times=2`, { method, body: 'x', headers: { 'Idempotency-Key': 'abc' } })
      expect(r.status).toBe(200)
      expect(count(k)).toBe(3)
      expect(seen.get(k).every((s) => s.key === 'abc')).toBe(true)
    }
  })

  it('the key may come on a Request, and methods overrides the list', async () => {
    const k = key('req-key')
    const request = new Request(`${base}/fail/${k}?times=1`, { method: 'POST', body: 'y', headers: { 'Idempotency-Key': 'r' } })
    expect((await quick()(request)).status).toBe(200)
    expect(count(k)).toBe(2)
    const k2 = key('methods')
    expect((await quick({ methods: ['post'] })(`${base}/fail/${k2}?times=1`, { method: 'POST' })).status).toBe(200)
    expect(count(k2)).toBe(2)
    const k3 = key('methods')
    expect((await quick({ methods: ['POST'] })(`${base}/fail/${k3}?times=1`)).status).toBe(503)
    expect(count(k3)).toBe(1)
  })

  it('every replayable body arrives intact on every attempt', async () => {
    const bytes = new Uint8Array(50_000).map((_, i) => (i * 31) % 251)
    const form = new FormData()
    form.append('field', 'value')
    form.append('file', new Blob([bytes.slice(0, 1000)]), 'file.bin')
    const bodies = {
      string: JSON.stringify({ hello: 'world', n: [1, 2, 3] }),
      bytes,
      arrayBuffer: bytes.buffer.slice(0),
      view: new DataView(bytes.buffer, 10, 1000),
      blob: new Blob([bytes]),
      params: new URLSearchParams({ a: '1', b: 'two' }),
      form,
    }
    for (const [name, body] of Object.entries(bodies)) {
      const k = key(`body-${name}`)
      const r = await quick()(`${base}/fail/${k}?times=2`, { method: 'PUT', body })
      expect(r.status, name).toBe(200)
      const attempts = seen.get(k)
      expect(attempts, name).toHaveLength(3)
      expect(attempts[0].length, name).toBeGreaterThan(0)
      // FormData boundaries differ per encoding; its length does not.
      if (name === 'form') expect(new Set(attempts.map((a) => a.length)).size).toBe(1)
      else expect(new Set(attempts.map((a) => a.hash)).size, name).toBe(1)
    }
  })

  it('a Request input is cloned per attempt, its body intact', async () => {
    const k = key('request')
    const request = new Request(`${base}/fail/${k}?times=2`, { method: 'PUT', body: 'the same body' })
    const r = await quick()(request)
    expect(r.status).toBe(200)
    const attempts = seen.get(k)
    expect(attempts.map((a) => a.hash)).toEqual(Array(3).fill(hash(Buffer.from('the same body'))))
    expect(request.bodyUsed).toBe(false)
  })

  it('a ReadableStream body gets one attempt only', async () => {
    const k = key('stream')
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('streamed'))
        controller.close()
      },
    })
    const r = await quick()(`${base}/fail/${k}?times=2`, { method: 'PUT', body, duplex: 'half' })
    expect(r.status).toBe(503)
    expect(count(k)).toBe(1)
  })
})

describe('Retry-After', () => {
  it('delta-seconds on a 503 sets the wait', async () => {
    const k = key('after')
    const t0 = performance.now()
    const r = await quick({ baseWait: 5_000 })(`${base}/fail/${k}?times=1&after=1`)
    const took = performance.now() - t0
    expect(r.status).toBe(200)
    expect(took).toBeGreaterThanOrEqual(990)
    expect(took).toBeLessThan(2_500)
  })

  it('an HTTP-date sets the wait too', async () => {
    const k = key('date')
    const at = new Date(Date.now() + 2_000).toUTCString()
    const t0 = performance.now()
    const r = await quick({ baseWait: 5_000 })(`${base}/fail/${k}?times=1&after=${encodeURIComponent(at)}`)
    const took = performance.now() - t0
    expect(r.status).toBe(200)
    // Second resolution: between 1 and 2 s from now.
    expect(took).toBeGreaterThanOrEqual(900)
    expect(took).toBeLessThan(2_600)
  })

  it('maxRetryAfter clamps a long hint', async () => {
    const k = key('clamp')
    const t0 = performance.now()
    const r = await quick({ maxRetryAfter: 300 })(`${base}/fail/${k}?times=1&after=3600`)
    const took = performance.now() - t0
    expect(r.status).toBe(200)
    expect(count(k)).toBe(2)
    // The clamped hint is still waited (baseWait is 1 ms).
    expect(took).toBeGreaterThanOrEqual(295)
    expect(took).toBeLessThan(1_000)
  })

  it('a hint past the total deadline ends the flow at once with that response', async () => {
    const k = key('deadline')
    const t0 = performance.now()
    const r = await quick({ maxTotalExecutionTime: 2_000 })(`${base}/fail/${k}?times=1&after=3600`)
    expect(r.status).toBe(503)
    expect(r.headers.get('retry-after')).toBe('3600')
    expect(parseRetryAfter(r)).toBe(3_600_000)
    expect(count(k)).toBe(1)
    expect(performance.now() - t0).toBeLessThan(1_000)
  })

  it('only afterStatusCodes follow the hint', async () => {
    const k = key('afterstatus')
    const t0 = performance.now()
    const r = await quick({ afterStatusCodes: [429] })(`${base}/fail/${k}?times=1&after=3600`)
    expect(r.status).toBe(200)
    expect(performance.now() - t0).toBeLessThan(1_000)
  })
})

describe('the caller\'s abort and deadlines', () => {
  it('an abort during the wait rejects at once with the signal\'s reason; nothing more is sent', async () => {
    const k = key('abort-wait')
    const controller = new AbortController()
    const reason = new Error('caller gave up')
    const p = quick({ baseWait: 5_000 })(`${base}/fail/${k}?times=99`, { signal: controller.signal })
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(count(k)).toBe(1)
    const t0 = performance.now()
    controller.abort(reason)
    await expect(p).rejects.toBe(reason)
    expect(performance.now() - t0).toBeLessThan(100)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(count(k)).toBe(1)
  })

  it('an already aborted signal rejects without a request', async () => {
    const k = key('abort-before')
    const p = quick()(`${base}/fail/${k}`, { signal: AbortSignal.abort() })
    await expect(p).rejects.toMatchObject({ name: 'AbortError' })
    expect(count(k)).toBe(0)
  })

  it('an abort during a request rejects with the reason', async () => {
    const k = key('abort-request')
    const controller = new AbortController()
    const p = quick()(`${base}/slow/${k}?delay=2000`, { signal: controller.signal })
    setTimeout(() => controller.abort(new Error('stop')), 50)
    await expect(p).rejects.toThrow('stop')
    expect(count(k)).toBe(1)
  })

  it('the signal option and the caller\'s both abort', async () => {
    const a = new AbortController()
    const f = quick({ baseWait: 5_000, signal: a.signal })
    const p = f(`${base}/fail/${key('opt-signal')}?times=99`, { signal: new AbortController().signal })
    setTimeout(() => a.abort(new Error('from options')), 50)
    await expect(p).rejects.toThrow('from options')
    // The caller's, while the option's stays live: at once, in the wait.
    const b = new AbortController()
    const g = quick({ baseWait: 5_000, signal: new AbortController().signal })
    const t0 = performance.now()
    const q = g(`${base}/fail/${key('call-signal')}?times=99`, { signal: b.signal })
    setTimeout(() => b.abort(new Error('from the call')), 50)
    await expect(q).rejects.toThrow('from the call')
    expect(performance.now() - t0).toBeLessThan(1_000)
  })

  it('a per-try timeout with retryOnExecutionTimeout retries a slow attempt', async () => {
    const k = key('per-try')
    const r = await quick({ maxExecutionTime: 100, retryOnExecutionTimeout: true })(`${base}/slow/${k}?delay=2000&times=1`)
    expect(await r.text()).toBe('slow 2')
    expect(count(k)).toBe(2)
  })

  it('without it, the per-try timeout rejects with a TimeoutError', async () => {
    const k = key('per-try-off')
    const p = quick({ maxExecutionTime: 100 })(`${base}/slow/${k}?delay=2000&times=1`)
    await expect(p).rejects.toMatchObject({ name: 'TimeoutError' })
    expect(count(k)).toBe(1)
  })

  it('calls never abort each other', async () => {
    const f = quick({ baseWait: 20 })
    const keys = Array.from({ length: 5 }, () => key('parallel'))
    const responses = await Promise.all(keys.map((k) => f(`${base}/fail/${k}?times=1`)))
    expect(responses.map((r) => r.status)).toEqual(Array(5).fill(200))
    expect(keys.map(count)).toEqual(Array(5).fill(2))
  })
})

describe('response bodies and the fetch option', () => {
  it('1,000 retried requests leave no response body open', async () => {
    open503 = 0
    const f = quick({ baseWait: 0 })
    let ok = 0
    for (let batch = 0; batch < 100; batch++) {
      const rs = await Promise.all(Array.from({ length: 10 }, () => f(`${base}/big/${key('big')}`)))
      for (const r of rs) if ((await r.text()) === 'ok') ok++
    }
    expect(ok).toBe(1_000)
    // The cancelled 503 bodies' connections close shortly after.
    for (let i = 0; i < 50 && open503 > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(open503).toBe(0)
  }, 60_000)

  it('the fetch option is the fetch used', async () => {
    const calls = []
    const f = quick({ fetch: (input, init) => { calls.push(init.signal instanceof AbortSignal); return fetch(input, init) } })
    const k = key('custom')
    expect((await f(`${base}/fail/${k}?times=1`)).status).toBe(200)
    expect(calls).toEqual([true, true])
  })

  it('a fetch that throws synchronously is a failed attempt', async () => {
    let n = 0
    const f = quick({ fetch: () => { if (++n < 3) throw new TypeError('offline'); return Promise.resolve(new Response('later')) } })
    expect(await (await f('http://unused.invalid/')).text()).toBe('later')
    expect(n).toBe(3)
  })
})

describe('one-shot bodies: exactly one attempt, its outcome as fetch gives it', () => {
  async function * generator () { yield 'one ' ; yield 'shot' }
  const kinds = {
    'async generator': () => generator(),
    'Node Readable': () => Readable.from(['one ', 'shot']),
    ReadableStream: () => new ReadableStream({
      start (c) { c.enqueue(new TextEncoder().encode('one shot')); c.close() },
    }),
  }
  for (const [name, make] of Object.entries(kinds)) {
    it(`${name}: a 503 is returned, never a second request with an empty body`, async () => {
      const k = key('oneshot')
      const errors = []
      const r = await quick({ onError: (e) => errors.push(e.status) })(`${base}/fail/${k}?times=2`, { method: 'PUT', body: make(), duplex: 'half' })
      expect(r.status).toBe(503)
      expect(await r.text()).toBe('failure 1')
      expect(seen.get(k).map((a) => a.hash)).toEqual([hashOf('one shot')])
      expect(errors).toEqual([503])
    })
  }

  it('a network error on a one-shot body rejects with fetch\'s TypeError after one attempt', async () => {
    const k = key('oneshot-drop')
    const p = quick()(`${base}/drop/${k}?times=2`, { method: 'PUT', body: generator(), duplex: 'half' })
    await expect(p).rejects.toBeInstanceOf(TypeError)
    expect(count(k)).toBe(1)
  })
})

describe('a failing response is a failed attempt, retried or not', () => {
  it('a POST without a key that gets a 503: onError, the budget charged, onGiveUp not-retryable, the Response returned', async () => {
    const budget = new RetryBudget({ maxTokens: 10 })
    const events = []
    const f = quick({
      budget,
      onError: (e) => events.push(`error ${e.status}`),
      onSuccess: () => events.push('success'),
      onGiveUp: (e, reason) => events.push(reason),
    })
    for (let i = 0; i < 3; i++) {
      const k = key('post-fail')
      const r = await f(`${base}/fail/${k}?times=1`, { method: 'POST', body: 'x' })
      expect(r.status).toBe(503)
      expect(await r.text()).toBe('failure 1')
      expect(count(k)).toBe(1)
    }
    expect(events).toEqual(Array(3).fill(['error 503', 'not-retryable']).flat())
    expect(budget.tokens).toBe(7)
  })
})

describe('the caller\'s signal, as fetch has it', () => {
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

  it('a Request\'s own signal aborts a wait at once, and nothing more is sent', async () => {
    const k = key('req-signal-wait')
    const controller = new AbortController()
    const reason = new Error('left the page')
    const p = quick({ baseWait: 5_000 })(new Request(`${base}/fail/${k}?times=99&after=1`, { signal: controller.signal }))
    await pause(100)
    const t0 = performance.now()
    controller.abort(reason)
    await expect(p).rejects.toBe(reason)
    expect(performance.now() - t0).toBeLessThan(100)
    await pause(1_100)
    expect(count(k)).toBe(1)
  })

  it('a Request\'s own signal aborts a request in flight', async () => {
    const k = key('req-signal-request')
    const controller = new AbortController()
    const p = quick()(new Request(`${base}/slow/${k}?delay=1000`, { signal: controller.signal }))
    setTimeout(() => controller.abort(), 50)
    const t0 = performance.now()
    await expect(p).rejects.toMatchObject({ name: 'AbortError' })
    expect(performance.now() - t0).toBeLessThan(500)
    expect(count(k)).toBe(1)
  })

  it('already aborted, in any position: rejects with the reason and sends nothing', async () => {
    const k = key('aborted-before')
    const reasons = ['a string', new Error('an error'), undefined]
    for (const reason of reasons) {
      const signal = reason === undefined ? AbortSignal.abort() : AbortSignal.abort(reason)
      const expected = signal.reason
      await expect(quick()(`${base}/fail/${k}`, { signal })).rejects.toBe(expected)
      await expect(quick()(new Request(`${base}/fail/${k}`, { signal }))).rejects.toBe(expected)
    }
    const timeout = AbortSignal.timeout(1)
    await pause(20)
    await expect(quick()(`${base}/fail/${k}`, { signal: timeout })).rejects.toMatchObject({ name: 'TimeoutError' })
    expect(count(k)).toBe(0)
  })

  it('already aborted with a stream body: the stream is cancelled, as fetch does', async () => {
    const cancelled = []
    const body = new ReadableStream({ cancel (reason) { cancelled.push(reason) } })
    const reason = new Error('never mind')
    await expect(quick()(`${base}/fail/${key('aborted-stream')}`, { method: 'PUT', body, duplex: 'half', signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    await pause(10)
    expect(cancelled).toEqual([reason])
  })

  it('init.signal: null overrides an aborted Request\'s own', async () => {
    const k = key('null-signal')
    const r = await quick()(new Request(`${base}/fail/${k}?times=0`, { signal: AbortSignal.abort() }), { signal: null })
    expect(r.status).toBe(200)
    expect(count(k)).toBe(1)
  })

  it('a signal that is no AbortSignal is fetch\'s TypeError, and nothing is sent', async () => {
    const k = key('bad-signal')
    for (const signal of [{}, '', 5]) {
      const mine = await quick()(`${base}/fail/${k}`, { signal }).catch((e) => e)
      const theirs = await fetch(`${base}/fail/${k}-plain`, { signal }).catch((e) => e)
      expect(mine).toBeInstanceOf(TypeError)
      expect(mine.message).toBe(theirs.message)
    }
    expect(count(k)).toBe(0)
  })

  it('after the response arrived, the caller\'s abort errors its body for as long as it is read, as fetch\'s', async () => {
    const outcomes = []
    for (const send of [fetch, quick()]) {
      const controller = new AbortController()
      const r = await send(`${base}/stream/${key('body-abort')}`, { signal: controller.signal })
      expect(r.status).toBe(200)
      const t0 = performance.now()
      controller.abort(new Error('not interested any more'))
      const error = await r.text().then(() => 'read to the end', (e) => e)
      expect(performance.now() - t0).toBeLessThan(200)
      outcomes.push([error?.name, error?.message])
    }
    expect(outcomes[1]).toEqual(outcomes[0])
    expect(outcomes[1][0]).toMatch(/Error$/)
  })

  it('once the body was read, a later abort changes nothing', async () => {
    const controller = new AbortController()
    const r = await quick()(`${base}/fail/${key('read-then-abort')}?times=0`, { signal: controller.signal })
    expect(await r.text()).toBe('ok 1')
    controller.abort()
    expect(r.bodyUsed).toBe(true)
  })
})

describe('what the caller got wrong is not retried', () => {
  const used = async () => {
    const r = new Request(`${base}/fail/${key('used')}`, { method: 'POST', body: 'read already' })
    await r.text()
    return [r]
  }
  const cases = {
    'an invalid URL': () => ['http://exa mple.invalid/'],
    'a bad method': () => [`${base}/fail/${key('m')}`, { method: 'BAD METHOD' }],
    'a forbidden header value': () => [`${base}/fail/${key('h')}`, { headers: { 'x-bad': 'a\nb' } }],
    'a used body': used,
    'a stream body without duplex': () => [`${base}/fail/${key('s')}`, { method: 'PUT', body: new ReadableStream() }],
    'a GET with a body': () => [`${base}/fail/${key('g')}`, { body: 'x' }],
  }
  // The key a call's URL names on the test server (none for a URL elsewhere).
  const keyOf = ([input]) => {
    const url = String(input instanceof Request ? input.url : input)
    return url.startsWith(`${base}/`) ? new URL(url).pathname.split('/')[2] : undefined
  }
  for (const [name, args] of Object.entries(cases)) {
    it(`${name}: rejects at once with fetch's own TypeError, and nothing reaches the server`, async () => {
      const errors = []
      const input = await args()
      const k = keyOf(input)
      const t0 = performance.now()
      const mine = await quick({ baseWait: 300, onError: () => errors.push(1) })(...input).catch((e) => e)
      const took = performance.now() - t0
      const theirs = await fetch(...(await args())).catch((e) => e)
      expect(mine).toBeInstanceOf(TypeError)
      expect(mine.message).toBe(theirs.message)
      expect(took).toBeLessThan(150)
      expect(errors.length).toBeLessThanOrEqual(1)
      // Time for a request sent before the rejection to reach the local
      // server and be counted.
      await new Promise((resolve) => setTimeout(resolve, 50))
      if (name !== 'an invalid URL') expect(k).toBeTruthy()
      expect(count(k), `requests for ${k}`).toBe(0)
    })
  }
})

describe('beforeRetry', () => {
  it('refreshes a token after a 401 the caller made retryable', async () => {
    const k = key('token')
    const hooks = []
    let token = 'old'
    const f = quick({
      statusCodes: [401],
      async beforeRetry (request, { attempt, response, error }) {
        hooks.push([attempt, response.status, error.name, await response.text()])
        token = 'fresh'
        request.headers.set('authorization', `Bearer ${token}`)
      },
    })
    const r = await f(`${base}/fail/${k}?times=1&status=401`, { headers: { authorization: `Bearer ${token}` } })
    expect(r.status).toBe(200)
    expect(hooks).toEqual([[2, 401, 'HTTPError', 'failure 1']])
    expect(count(k)).toBe(2)
  })

  it('runs after the wait, once per retry, with a fresh Request each time', async () => {
    const k = key('hook-each')
    const requests = []
    const r = await quick({ maxAttempts: 4, beforeRetry: (request, { attempt }) => { requests.push([attempt, request.url, request.bodyUsed]) } })(`${base}/fail/${k}?times=3`, { method: 'PUT', body: 'same' })
    expect(r.status).toBe(200)
    expect(requests.map(([a]) => a)).toEqual([2, 3, 4])
    expect(new Set(requests.map(([, u]) => u)).size).toBe(1)
    expect(seen.get(k).map((a) => a.hash)).toEqual(Array(4).fill(hashOf('same')))
  })

  it('false stops: the previous response is the result, onGiveUp not-retryable', async () => {
    const k = key('hook-stop')
    const reasons = []
    const r = await quick({ beforeRetry: async () => false, onGiveUp: (e, reason) => reasons.push(reason) })(`${base}/fail/${k}?times=5`)
    expect(r.status).toBe(503)
    expect(await r.text()).toBe('failure 1')
    expect(reasons).toEqual(['not-retryable'])
    expect(count(k)).toBe(1)
  })

  it('false after a network error rejects with that error', async () => {
    const k = key('hook-stop-net')
    await expect(quick({ beforeRetry: () => false })(`${base}/drop/${k}?times=5`)).rejects.toBeInstanceOf(TypeError)
    expect(count(k)).toBe(1)
  })

  it('another Request is sent instead', async () => {
    const k = key('hook-other')
    const k2 = key('hook-other')
    const r = await quick({ beforeRetry: () => new Request(`${base}/fail/${k2}?times=0`) })(`${base}/fail/${k}?times=5`)
    expect(r.status).toBe(200)
    expect([count(k), count(k2)]).toEqual([1, 1])
  })

  it('a hook that throws or rejects ends the call with that error', async () => {
    const boom = new Error('hook failed')
    await expect(quick({ beforeRetry: () => { throw boom } })(`${base}/fail/${key('hook-throw')}?times=5`)).rejects.toBe(boom)
    await expect(quick({ beforeRetry: () => Promise.reject(boom) })(`${base}/fail/${key('hook-reject')}?times=5`)).rejects.toBe(boom)
  })

  it('is awaited within the total deadline', async () => {
    const k = key('hook-slow')
    const t0 = performance.now()
    const r = await quick({ maxTotalExecutionTime: 300, beforeRetry: () => new Promise(() => {}) })(`${base}/fail/${k}?times=5`)
    expect(r.status).toBe(503)
    expect(performance.now() - t0).toBeLessThan(1_000)
    expect(count(k)).toBe(1)
  })

  it('other init fields reach the wrapped fetch on every attempt, a hook\'s Request included', async () => {
    const inits = []
    const dispatcher = { marker: true }
    let n = 0
    const f = quick({
      fetch: (input, init) => {
        inits.push([input instanceof Request, init.dispatcher, init.next, init.signal instanceof AbortSignal])
        return Promise.resolve(++n < 3 ? new Response('busy', { status: 503 }) : new Response('ok'))
      },
      beforeRetry: () => {},
    })
    const r = await f('http://unused.invalid/', { dispatcher, next: { revalidate: 1 } })
    expect(await r.text()).toBe('ok')
    expect(inits).toEqual([
      [false, dispatcher, { revalidate: 1 }, true],
      [true, dispatcher, { revalidate: 1 }, true],
      [true, dispatcher, { revalidate: 1 }, true],
    ])
  })
})

describe('rate-limit headers when Retry-After is absent', () => {
  it('RateLimit-Reset sets the wait', async () => {
    const k = key('rl')
    const t0 = performance.now()
    const r = await quick({ baseWait: 5_000 })(`${base}/fail/${k}?times=1&status=429&rl=1`)
    const took = performance.now() - t0
    expect(r.status).toBe(200)
    expect(took).toBeGreaterThanOrEqual(990)
    expect(took).toBeLessThan(2_500)
  })

  it('X-RateLimit-Reset as a Unix time sets the wait, clamped by maxRetryAfter', async () => {
    const k = key('xrl')
    const t0 = performance.now()
    const r = await quick({ baseWait: 5_000 })(`${base}/fail/${k}?times=1&status=429&xrl=1`)
    const took = performance.now() - t0
    expect(r.status).toBe(200)
    // The reset is the next whole second plus one: 1 to 2 s after the 429.
    expect(took).toBeGreaterThanOrEqual(990)
    expect(took).toBeLessThan(2_500)
    const k2 = key('xrl-clamp')
    const t1 = performance.now()
    const r2 = await quick({ baseWait: 5_000, maxRetryAfter: 200 })(`${base}/fail/${k2}?times=1&status=429&xrl=3600`)
    const took2 = performance.now() - t1
    expect(r2.status).toBe(200)
    expect(took2).toBeGreaterThanOrEqual(195)
    expect(took2).toBeLessThan(700)
  })
})

describe('bad options throw at retryFetch() time, naming the option', () => {
  const cases = [
    [{ throwOnError: true }, TypeError, 'throwOnError'],
    [{ timeout: 5 }, TypeError, 'timeout'],
    [{ statusCodes: [503, 700] }, RangeError, 'statusCodes[1]'],
    [{ statusCodes: [503.5] }, RangeError, 'statusCodes[0]'],
    [{ statusCodes: ['503'] }, TypeError, 'statusCodes[0]'],
    [{ statusCodes: 503 }, TypeError, 'statusCodes'],
    [{ afterStatusCodes: [99] }, RangeError, 'afterStatusCodes[0]'],
    [{ methods: ['GE T'] }, RangeError, 'methods[0]'],
    [{ methods: ['GET\r\nX: y'] }, RangeError, 'methods[0]'],
    [{ methods: [7] }, TypeError, 'methods[0]'],
    [{ methods: 'GET' }, TypeError, 'methods'],
    [{ maxRetryAfter: -1 }, RangeError, 'maxRetryAfter'],
    [{ maxRetryAfter: NaN }, RangeError, 'maxRetryAfter'],
    [{ maxRetryAfter: '5' }, TypeError, 'maxRetryAfter'],
    [{ fetch: 'fetch' }, TypeError, 'fetch'],
    [{ beforeRetry: {} }, TypeError, 'beforeRetry'],
    [{ maxAttempts: 0 }, RangeError, 'maxAttempts'],
    [{ jitter: 2 }, RangeError, 'jitter'],
    [{ onRetry: 5 }, TypeError, 'onRetry'],
  ]
  for (const [options, Type, name] of cases) {
    it(`${JSON.stringify(options, (k, v) => (typeof v === 'number' && Number.isNaN(v) ? 'NaN' : v))}`, () => {
      let error
      try {
        retryFetch(options)
      } catch (e) {
        error = e
      }
      expect(error).toBeInstanceOf(Type)
      expect(error.message).toContain(name)
    })
  }

  it('nothing is sent for a refused configuration, and the module still works', async () => {
    expect(() => retryFetch(null)).toThrow(TypeError)
    const k = key('after-bad')
    expect((await quick()(`${base}/fail/${k}?times=1`)).status).toBe(200)
  })
})
