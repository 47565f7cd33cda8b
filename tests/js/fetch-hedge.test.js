// Hedged retryFetch calls (SPEC §2c rule 10) against a real HTTP server on
// 127.0.0.1, with Node's own fetch: which attempt won, the losers' signals
// aborted and their connections released (counted on the server side),
// which calls hedge (GET, HEAD and OPTIONS with no body or one that
// replays) and which retry as usual, onHedge's arguments, and the budget
// asked for each extra attempt.
import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AsyncRetryer, RetryBudget, retryFetch } from 'retry-wasm/fetch'

let server
let base
/** Requests the server saw, by key: `{ n, method, closedEarly }`. */
const seen = new Map()
/** Responses begun and not yet closed, whatever their key. */
let open = 0

const list = (text) => (text ? text.split(',').map(Number) : [])
const BIG = Buffer.alloc(64 * 1024, 120)

/** Writes `chunks` of 64 KiB with backpressure, then ends. */
function writeBig(res, chunks) {
  const pump = () => {
    while (chunks > 0) {
      chunks--
      if (!res.write(BIG)) {
        res.once('drain', pump)
        return
      }
    }
    res.end()
  }
  pump()
}

// GET|HEAD|OPTIONS|POST... /r/<key>?slow=1,2&delay=ms&fail=2&big=1
// Request n of a key: a 503 when n is in `fail`; after `delay` ms when n is
// in `slow`; else at once. The body is `attempt n`, followed by 2 MiB when
// `big` is set (a body that completes only if the client reads or cancels
// it).
function handle(req, res) {
  const url = new URL(req.url, 'http://x')
  const [, , key = 'none'] = url.pathname.split('/')
  const mine = seen.get(key) ?? []
  seen.set(key, mine)
  const entry = { n: mine.length + 1, method: req.method, closedEarly: false }
  mine.push(entry)
  open++
  res.on('close', () => {
    open--
    entry.closedEarly = !res.writableFinished
  })
  const q = (name) => url.searchParams.get(name)
  const answer = () => {
    const status = list(q('fail')).includes(entry.n) ? 503 : 200
    res.writeHead(status, { 'content-type': 'text/plain' })
    res.write(`attempt ${entry.n}`)
    if (q('big')) writeBig(res, 32)
    else res.end()
  }
  if (list(q('slow')).includes(entry.n)) {
    const timer = setTimeout(answer, Number(q('delay') ?? 2000))
    res.on('close', () => clearTimeout(timer))
  } else {
    answer()
  }
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => handle(req, res))
  })
  server.keepAliveTimeout = 1000
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${server.address().port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

let unique = 0
const key = (name) => `${name}-${++unique}`
const requests = (k) => seen.get(k) ?? []
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits until the server has no response open (at most ~2 s). */
async function settledServer() {
  for (let i = 0; i < 100 && open > 0; i++) await sleep(20)
  return open
}

/** A `fetch` option that records each attempt's init, then fetches. */
function recording() {
  const inits = []
  const f = (input, init) => {
    inits.push(init)
    return fetch(input, init)
  }
  return { f, inits }
}

describe('a hedged GET', () => {
  it('the hedge answers first and wins; the slow first attempt is aborted and its connection closed', async () => {
    const k = key('win')
    const hedges = []
    const { f, inits } = recording()
    const call = retryFetch({ hedge: 30, maxAttempts: 2, fetch: f, onHedge: (info, retryer) => hedges.push([info, retryer]) })
    const started = performance.now()
    const r = await call(`${base}/r/${k}?slow=1&delay=3000`)
    const took = performance.now() - started
    expect(r.status).toBe(200)
    expect(await r.text()).toBe('attempt 2')
    expect(took).toBeLessThan(1000)
    expect(requests(k).map((e) => e.n)).toEqual([1, 2])
    // onHedge: attempt 2 started while 1 ran, about 30 ms in, with the call's retryer.
    expect(hedges).toHaveLength(1)
    const [info, retryer] = hedges[0]
    expect(Object.keys(info).sort()).toEqual(['attempt', 'elapsed', 'running'])
    expect(info).toMatchObject({ attempt: 2, running: 1 })
    expect(info.elapsed).toBeGreaterThanOrEqual(29)
    expect(info.elapsed).toBeLessThan(500)
    expect(retryer).toBeInstanceOf(AsyncRetryer)
    // The loser's signal aborted with an AbortError; the winner's did not
    // (its body is still being read through it).
    expect(inits).toHaveLength(2)
    expect(inits[0].signal.aborted).toBe(true)
    expect(inits[0].signal.reason).toMatchObject({ name: 'AbortError' })
    expect(inits[1].signal.aborted).toBe(false)
    // On the server: the slow request's connection closed before it answered.
    expect(await settledServer()).toBe(0)
    expect(requests(k)[0].closedEarly).toBe(true)
    expect(requests(k)[1].closedEarly).toBe(false)
  })

  it('with nothing slow, one request is sent and no hedge starts', async () => {
    const k = key('fast')
    let hedged = 0
    const r = await retryFetch({ hedge: 200, maxAttempts: 3, onHedge: () => hedged++ })(`${base}/r/${k}`)
    expect(await r.text()).toBe('attempt 1')
    await sleep(300)
    expect(requests(k)).toHaveLength(1)
    expect(hedged).toBe(0)
  })

  it('attempts start at their hedge times until maxAttempts have started; onHedge for each', async () => {
    const k = key('three')
    const hedges = []
    const r = await retryFetch({ hedge: 40, maxAttempts: 3, onHedge: (info) => hedges.push({ ...info }) })(
      `${base}/r/${k}?slow=1,2&delay=3000`,
    )
    expect(await r.text()).toBe('attempt 3')
    expect(hedges.map(({ attempt, running }) => ({ attempt, running }))).toEqual([
      { attempt: 2, running: 1 },
      { attempt: 3, running: 2 },
    ])
    expect(hedges[0].elapsed).toBeGreaterThanOrEqual(39)
    expect(hedges[1].elapsed).toBeGreaterThanOrEqual(79)
    expect(hedges[1].elapsed).toBeGreaterThan(hedges[0].elapsed)
    expect(await settledServer()).toBe(0)
    expect(requests(k).map((e) => e.closedEarly)).toEqual([true, true, false])
  })

  it('a failing status starts the next attempt at once; the loser is released', async () => {
    const k = key('fail')
    const hedges = []
    const started = performance.now()
    const r = await retryFetch({ hedge: 5_000, maxAttempts: 2, onHedge: (info) => hedges.push(info) })(
      `${base}/r/${k}?fail=1`,
    )
    expect(performance.now() - started).toBeLessThan(1000)
    expect(await r.text()).toBe('attempt 2')
    expect(hedges).toHaveLength(0) // nothing was running when attempt 2 started
    expect(await settledServer()).toBe(0)
  })

  it('two losing responses that both arrived: the one not returned has its body cancelled', async () => {
    const k = key('both')
    // hedge 0: both requests at once, each answering a 2 MiB body.
    const r = await retryFetch({ hedge: 0, maxAttempts: 2 })(`${base}/r/${k}?big=1`)
    expect(r.status).toBe(200)
    const body = await r.text()
    expect(body).toMatch(/^attempt [12]x/)
    expect(body.length).toBe('attempt 1'.length + 32 * 64 * 1024)
    expect(requests(k)).toHaveLength(2)
    expect(await settledServer()).toBe(0)
  })

  it('when every attempt fails, the last failing response is returned whole and the other cancelled', async () => {
    const k = key('all-fail')
    const r = await retryFetch({ hedge: 0, maxAttempts: 2 })(`${base}/r/${k}?big=1&fail=1,2`)
    expect(r.status).toBe(503)
    const body = await r.text()
    expect(body.length).toBe('attempt 1'.length + 32 * 64 * 1024)
    expect(await settledServer()).toBe(0)
  })

  it('through a fetch that ignores its signal, every losing body is still cancelled, early or late', async () => {
    // Only retry-wasm's cancel can end these 2 MiB bodies.
    const deaf = (input, init) => fetch(input, { ...init, signal: undefined })
    const k = key('deaf')
    const r = await retryFetch({ hedge: 0, maxAttempts: 2, fetch: deaf })(`${base}/r/${k}?big=1`)
    expect((await r.text()).length).toBe('attempt 1'.length + 32 * 64 * 1024)
    expect(await settledServer()).toBe(0)
    // The loser answers 300 ms after the call settled.
    const k2 = key('deaf-late')
    const r2 = await retryFetch({ hedge: 30, maxAttempts: 2, fetch: deaf })(`${base}/r/${k2}?big=1&slow=1&delay=300`)
    expect((await r2.text()).startsWith('attempt 2')).toBe(true)
    await sleep(400)
    expect(requests(k2)[0].closedEarly).toBe(false) // it did answer
    expect(await settledServer()).toBe(0)
  })

  it('HEAD and OPTIONS hedge too, as does a Request input', async () => {
    for (const [method, input] of [
      ['HEAD', (k) => `${base}/r/${k}?slow=1&delay=3000`],
      ['OPTIONS', (k) => `${base}/r/${k}?slow=1&delay=3000`],
      ['GET', (k) => new Request(`${base}/r/${k}?slow=1&delay=3000`)],
    ]) {
      const k = key(`m-${method}`)
      const r = await retryFetch({ hedge: 30, maxAttempts: 2 })(input(k), { method })
      expect(r.status).toBe(200)
      expect(requests(k).map((e) => e.method)).toEqual([method, method])
      await r.arrayBuffer()
    }
    expect(await settledServer()).toBe(0)
  })

  it("the caller's abort ends every attempt", async () => {
    const k = key('abort')
    const controller = new AbortController()
    const p = retryFetch({ hedge: 20, maxAttempts: 3 })(`${base}/r/${k}?slow=1,2,3&delay=3000`, { signal: controller.signal })
    await sleep(120)
    expect(requests(k)).toHaveLength(3)
    controller.abort(new Error('stop'))
    await expect(p).rejects.toThrow('stop')
    expect(await settledServer()).toBe(0)
    expect(requests(k).every((e) => e.closedEarly)).toBe(true)
  })
})

describe('calls that do not hedge retry as usual', () => {
  it('a POST is sent once, even with an Idempotency-Key', async () => {
    for (const headers of [{}, { 'idempotency-key': 'abc' }]) {
      const k = key('post')
      let hedged = 0
      const r = await retryFetch({ hedge: 20, maxAttempts: 3, onHedge: () => hedged++ })(`${base}/r/${k}?slow=1&delay=300`, {
        method: 'POST',
        body: 'payload',
        headers,
      })
      expect(await r.text()).toBe('attempt 1')
      expect(requests(k)).toHaveLength(1)
      expect(hedged).toBe(0)
    }
  })

  it('a PUT is retried after a failure, with its backoff, never hedged', async () => {
    const k = key('put')
    const events = []
    const r = await retryFetch({
      hedge: 10,
      maxAttempts: 3,
      baseWait: 50,
      jitter: 0,
      backoff: 'fixed',
      onHedge: () => events.push('hedge'),
      onBackoff: ({ delay }) => events.push(`wait ${delay}`),
    })(`${base}/r/${k}?fail=1&slow=2&delay=200`, { method: 'PUT', body: 'x' })
    expect(await r.text()).toBe('attempt 2')
    expect(events).toEqual(['wait 50'])
    expect(requests(k)).toHaveLength(2)
  })

  it('an OPTIONS with a one-shot stream body is sent once', async () => {
    const k = key('stream')
    let hedged = 0
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('streamed'))
        c.close()
      },
    })
    const r = await retryFetch({ hedge: 20, maxAttempts: 3, onHedge: () => hedged++ })(`${base}/r/${k}?slow=1&delay=300`, {
      method: 'OPTIONS',
      body,
      duplex: 'half',
    })
    expect(await r.text()).toBe('attempt 1')
    expect(requests(k)).toHaveLength(1)
    expect(hedged).toBe(0)
  })

  it('a GET with a one-shot body is not hedged; with a string body it is (through a fetch that takes one)', async () => {
    // fetch refuses a GET with a body, so a `fetch` option that answers:
    // the first call after 300 ms, later ones at once.
    const made = (calls) => async (input, init) => {
      const n = calls.push(init)
      await sleep(n === 1 ? 300 : 0)
      return new Response(`call ${n}`)
    }
    const oneShot = []
    const stream = new ReadableStream({ start: (c) => c.close() })
    let r = await retryFetch({ hedge: 20, maxAttempts: 3, fetch: made(oneShot) })(`${base}/r/x`, { body: stream })
    expect(await r.text()).toBe('call 1')
    expect(oneShot).toHaveLength(1)
    const replays = []
    r = await retryFetch({ hedge: 20, maxAttempts: 3, fetch: made(replays) })(`${base}/r/x`, { body: 'query' })
    expect(await r.text()).toBe('call 2')
    expect(replays.map((init) => init.body)).toEqual(['query', 'query'])
  })

  it('with beforeRetry set, no call hedges (the hook decides each resend)', async () => {
    const k = key('hook')
    let hooked = 0
    const r = await retryFetch({ hedge: 20, maxAttempts: 3, beforeRetry: () => { hooked++ } })(`${base}/r/${k}?slow=1&delay=300`)
    expect(await r.text()).toBe('attempt 1')
    expect(requests(k)).toHaveLength(1)
    expect(hooked).toBe(0)
  })

  it('one function: its GETs hedge, its POSTs do not', async () => {
    const f = retryFetch({ hedge: 30, maxAttempts: 2 })
    const g = key('mixed-get')
    const p = key('mixed-post')
    const [a, b] = await Promise.all([
      f(`${base}/r/${g}?slow=1&delay=3000`),
      f(`${base}/r/${p}?slow=1&delay=300`, { method: 'POST', body: '{}' }),
    ])
    expect(await a.text()).toBe('attempt 2')
    expect(await b.text()).toBe('attempt 1')
    expect(requests(g)).toHaveLength(2)
    expect(requests(p)).toHaveLength(1)
  })
})

describe('the budget', () => {
  it('each extra attempt asks the budget: a refusal starts no more, and the running ones go on', async () => {
    const budget = new RetryBudget({ maxTokens: 4, tokenRatio: 0.1 })
    // One failure: 3 tokens of 4 (retries are allowed above 2).
    const drain = key('drain')
    expect((await retryFetch({ budget, maxAttempts: 1 })(`${base}/r/${drain}?fail=1`)).status).toBe(503)
    expect(budget.tokens).toBe(3)
    // Attempt 2 is allowed (3 > 2) and fails at once: 2 tokens, so
    // attempt 3 is refused, and attempt 1, slow, is the answer.
    const k = key('budget')
    const reasons = []
    const r = await retryFetch({ budget, hedge: 30, maxAttempts: 3, onGiveUp: (e, reason) => reasons.push(reason) })(
      `${base}/r/${k}?slow=1&delay=300&fail=2`,
    )
    expect(await r.text()).toBe('attempt 1')
    expect(requests(k)).toHaveLength(2)
    expect(reasons).toEqual([])
    expect(budget.tokens).toBeCloseTo(2.1)
    // With 2.1 tokens a hedge is allowed again; a lost hedge costs nothing.
    const k2 = key('budget')
    const r2 = await retryFetch({ budget, hedge: 30, maxAttempts: 2 })(`${base}/r/${k2}?slow=1&delay=3000`)
    expect(await r2.text()).toBe('attempt 2')
    expect(budget.tokens).toBeCloseTo(2.2)
    // At the threshold, no hedge starts.
    const k3 = key('budget')
    expect((await retryFetch({ budget, maxAttempts: 1 })(`${base}/r/${k3}?fail=1`)).status).toBe(503)
    expect(budget.tokens).toBeCloseTo(1.2)
    const k4 = key('budget')
    const r4 = await retryFetch({ budget, hedge: 20, maxAttempts: 3 })(`${base}/r/${k4}?slow=1&delay=200`)
    expect(await r4.text()).toBe('attempt 1')
    expect(requests(k4)).toHaveLength(1)
    expect(await settledServer()).toBe(0)
  })
})
