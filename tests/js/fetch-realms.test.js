// retryFetch with a `Request` that is not the global class (SPEC §2b "A
// drop-in fetch"): undici's npm `Request` handed to undici's own `fetch`,
// and a `Request` made in a `vm` context (another realm: its own Object,
// Function and classes) handed to that realm's `fetch`. Each must keep its
// method, URL, headers, body and signal exactly as the global one does:
// the server receives the same request on every attempt, and the caller's
// abort (before the call, during a wait, during a request, after the
// response, across a redirect) ends the call with its reason.
import http from 'node:http'
import vm from 'node:vm'
import { Request as UndiciRequest, fetch as undiciFetch } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { retryFetch } from 'retry-wasm/fetch'

let server
let base
/** Requests the server saw, by key: method, url, body, the x-token header. */
const seen = new Map()
const count = (k) => seen.get(k)?.length ?? 0

function handle(req, res, body) {
  const url = new URL(req.url, 'http://x')
  const [, route, key = 'none'] = url.pathname.split('/')
  const list = seen.get(key) ?? []
  list.push({ method: req.method, path: url.pathname, body: body.toString(), token: req.headers['x-token'] ?? null, type: req.headers['content-type'] ?? null })
  seen.set(key, list)
  const n = list.length
  switch (route) {
    case 'fail': {
      // 503 for the first `times` requests (Retry-After: `after` s), then 200.
      if (n <= Number(url.searchParams.get('times') ?? '1')) {
        const headers = url.searchParams.has('after') ? { 'retry-after': url.searchParams.get('after') } : {}
        res.writeHead(503, headers)
        res.end(`busy ${n}`)
        return
      }
      res.end(`ok ${n}`)
      return
    }
    case 'slow': {
      const timer = setTimeout(() => res.end(`slow ${n}`), 2_000)
      res.on('close', () => clearTimeout(timer))
      return
    }
    case 'redirect':
      res.writeHead(302, { location: `/slow/${key}` })
      res.end()
      return
    case 'stream': {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('first ')
      const timer = setInterval(() => res.write('more '), 20)
      res.on('close', () => clearInterval(timer))
      return
    }
    default:
      res.writeHead(404)
      res.end()
  }
}

/**
 * A realm of its own (`vm.createContext`) with a small fetch API written
 * in it: AbortController and AbortSignal, Headers, Request (tagged
 * `Request`, cloned by `clone()`) and a fetch that sends through the host's.
 * Its objects are instances of that realm's classes only.
 */
function makeRealm() {
  const context = vm.createContext({ hostFetch: globalThis.fetch, HostAbortController: AbortController })
  vm.runInContext(
    `
    class RealmSignal {
      constructor() { this.aborted = false; this.reason = undefined; this.listeners = []; }
      addEventListener(type, fn) { if (type === 'abort') this.listeners.push(fn); }
      removeEventListener(type, fn) { this.listeners = this.listeners.filter((f) => f !== fn); }
      get listenerCount() { return this.listeners.length; }
    }
    class AbortController {
      constructor() { this.signal = new RealmSignal(); }
      abort(reason = new Error('aborted in the realm')) {
        const s = this.signal;
        if (s.aborted) return;
        s.aborted = true;
        s.reason = reason;
        for (const fn of [...s.listeners]) fn({ type: 'abort' });
      }
    }
    class Headers {
      constructor(init) {
        this.map = new Map();
        const pairs = init == null ? [] : typeof init[Symbol.iterator] === 'function' ? init : Object.entries(init);
        for (const [k, v] of pairs) this.map.set(String(k).toLowerCase(), String(v));
      }
      has(k) { return this.map.has(String(k).toLowerCase()); }
      get(k) { return this.map.get(String(k).toLowerCase()) ?? null; }
      set(k, v) { this.map.set(String(k).toLowerCase(), String(v)); }
      [Symbol.iterator]() { return this.map.entries(); }
    }
    class Request {
      constructor(input, init = {}) {
        const from = input instanceof Request ? input : null;
        this.url = from ? from.url : String(input);
        this.method = (init.method ?? (from ? from.method : 'GET')).toUpperCase();
        this.headers = new Headers(init.headers ?? (from ? from.headers : undefined));
        this.body = init.body !== undefined ? init.body : from ? from.body : null;
        this.signal = init.signal ?? (from ? from.signal : new AbortController().signal);
        this.redirect = init.redirect ?? (from ? from.redirect : 'follow');
      }
      clone() { return new Request(this); }
      get [Symbol.toStringTag]() { return 'Request'; }
    }
    async function fetch(input, init) {
      const request = new Request(input, init);
      const signal = request.signal;
      if (signal.aborted) throw signal.reason;
      // As fetch does, the signal stays tied to the response's body.
      const controller = new HostAbortController();
      signal.addEventListener('abort', () => controller.abort(signal.reason));
      return hostFetch(request.url, { method: request.method, headers: [...request.headers], body: request.body, signal: controller.signal, redirect: request.redirect });
    }
    globalThis.api = { AbortController, Headers, Request, fetch };
    `,
    context,
  )
  return context.api
}

const realm = makeRealm()

/** The two kinds of Request under test, each with its own fetch and AbortController. */
const KINDS = [
  { name: "undici's npm Request", Request: UndiciRequest, fetch: undiciFetch, AbortController },
  { name: 'a Request of a vm realm', Request: realm.Request, fetch: realm.fetch, AbortController: realm.AbortController },
]

let unique = 0
const key = (name) => `${name}-${++unique}`

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

it('the Requests under test are not the global class', () => {
  for (const kind of KINDS) {
    const r = new kind.Request(`${base}/none`)
    expect(r instanceof Request).toBe(false)
    expect(r.signal instanceof AbortSignal).toBe(kind.Request === UndiciRequest)
  }
  expect(Object.getPrototypeOf(Object.getPrototypeOf(new realm.Request(base)))).not.toBe(Object.prototype)
})

describe.each(KINDS)('$name', (kind) => {
  const rf = (options = {}) => retryFetch({ fetch: kind.fetch, baseWait: 1, jitter: 0, ...options })

  it('keeps method, headers and body on every attempt (PUT, 503 then 200)', async () => {
    const k = key('put')
    const request = new kind.Request(`${base}/fail/${k}`, { method: 'PUT', body: 'the same bytes', headers: { 'x-token': 't1', 'content-type': 'text/plain' } })
    const res = await rf()(request)
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('ok 2')
    const wanted = { method: 'PUT', path: `/fail/${k}`, body: 'the same bytes', token: 't1', type: 'text/plain' }
    expect(seen.get(k)).toEqual([wanted, wanted])
  })

  it('a POST without an Idempotency-Key is sent once (its method is read)', async () => {
    const k = key('post')
    const res = await rf()(new kind.Request(`${base}/fail/${k}`, { method: 'POST', body: 'once' }))
    expect(res.status).toBe(503)
    await res.text()
    expect(count(k)).toBe(1)
  })

  it('a POST with an Idempotency-Key is retried (its headers are read)', async () => {
    const k = key('post-key')
    const res = await rf()(new kind.Request(`${base}/fail/${k}`, { method: 'POST', body: 'twice', headers: { 'idempotency-key': 'abc' } }))
    expect(res.status).toBe(200)
    await res.text()
    expect(seen.get(k).map((r) => r.body)).toEqual(['twice', 'twice'])
  })

  it('aborted before the call: rejects with its reason, sends nothing', async () => {
    const k = key('before')
    const controller = new kind.AbortController()
    const reason = new Error('before')
    controller.abort(reason)
    await expect(rf()(new kind.Request(`${base}/fail/${k}`, { signal: controller.signal }))).rejects.toBe(reason)
    expect(count(k)).toBe(0)
  })

  it('aborted during a wait: rejects at once with its reason, nothing more is sent', async () => {
    const k = key('wait')
    const controller = new kind.AbortController()
    const reason = new Error('during the wait')
    const call = rf({ baseWait: 10_000 })(new kind.Request(`${base}/fail/${k}?times=5`, { signal: controller.signal }))
    while (count(k) < 1) await new Promise((r) => setTimeout(r, 5))
    await new Promise((r) => setTimeout(r, 30))
    const t0 = performance.now()
    controller.abort(reason)
    await expect(call).rejects.toBe(reason)
    expect(performance.now() - t0).toBeLessThan(500)
    await new Promise((r) => setTimeout(r, 50))
    expect(count(k)).toBe(1)
  })

  it('aborted during a request: rejects with its reason', async () => {
    const k = key('during')
    const controller = new kind.AbortController()
    const reason = new Error('during the request')
    const call = rf()(new kind.Request(`${base}/slow/${k}`, { signal: controller.signal }))
    while (count(k) < 1) await new Promise((r) => setTimeout(r, 5))
    const t0 = performance.now()
    controller.abort(reason)
    await expect(call).rejects.toBe(reason)
    expect(performance.now() - t0).toBeLessThan(1_000)
    await new Promise((r) => setTimeout(r, 50))
    expect(count(k)).toBe(1)
  })

  it('aborted after the response: its body errors', async () => {
    const k = key('after')
    const controller = new kind.AbortController()
    const reason = new Error('after the response')
    const res = await rf()(new kind.Request(`${base}/stream/${k}`, { signal: controller.signal }))
    expect(res.status).toBe(200)
    const reader = res.body.getReader()
    await reader.read()
    controller.abort(reason)
    const t0 = performance.now()
    let error
    try {
      for (;;) {
        const { done } = await reader.read()
        if (done) break
      }
    } catch (e) {
      error = e
    }
    expect(error).toBeDefined()
    expect(performance.now() - t0).toBeLessThan(1_000)
  })

  it('aborted across a redirect: rejects with its reason', async () => {
    const k = key('redirect')
    const controller = new kind.AbortController()
    const reason = new Error('across the redirect')
    const call = rf()(new kind.Request(`${base}/redirect/${k}`, { signal: controller.signal }))
    while (count(k) < 2) await new Promise((r) => setTimeout(r, 5))
    controller.abort(reason)
    await expect(call).rejects.toBe(reason)
    expect(seen.get(k).map((r) => r.path)).toEqual([`/redirect/${k}`, `/slow/${k}`])
  })
})

it('init.signal of another realm is the caller signal (a string input)', async () => {
  const k = key('init-signal')
  const controller = new realm.AbortController()
  const reason = new Error('init.signal')
  const call = retryFetch({ baseWait: 1 })(`${base}/slow/${k}`, { signal: controller.signal })
  while (count(k) < 1) await new Promise((r) => setTimeout(r, 5))
  controller.abort(reason)
  await expect(call).rejects.toBe(reason)
})

it('the signal option of another realm aborts the call', async () => {
  const k = key('option-signal')
  const controller = new realm.AbortController()
  const reason = new Error('option')
  const call = retryFetch({ baseWait: 1, signal: controller.signal })(`${base}/slow/${k}`)
  while (count(k) < 1) await new Promise((r) => setTimeout(r, 5))
  controller.abort(reason)
  await expect(call).rejects.toBe(reason)
})
