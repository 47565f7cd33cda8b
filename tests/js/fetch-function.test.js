// The function retryFetch returns, as a function (SPEC §2b): named `fetch`
// with `length` 1 like `fetch`, options refused synchronously, and a
// rejection whose stack names the caller's async functions, as Node's own
// fetch's does.
import { spawnSync } from 'node:child_process'
import net from 'node:net'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it, expect } from 'vitest'
import { retryFetch } from 'retry-wasm/fetch'

const here = dirname(fileURLToPath(import.meta.url))

/** A port on 127.0.0.1 that nothing listens on (bound, then closed). */
async function closedPort() {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

describe('retryFetch(options) returns a fetch', () => {
  it('named fetch, length 1, not a constructor, like globalThis.fetch', () => {
    const f = retryFetch()
    expect(typeof f).toBe('function')
    expect(f.name).toBe('fetch')
    expect(f.length).toBe(1)
    expect(f.name).toBe(globalThis.fetch.name)
    expect(f.length).toBe(globalThis.fetch.length)
    expect(() => new f('http://127.0.0.1/')).toThrow(TypeError)
  })

  it('bad options throw synchronously from retryFetch(options), naming the option', () => {
    expect(() => retryFetch({ timeout: 1000 })).toThrow(/unknown option 'timeout'/)
    expect(() => retryFetch({ timeout: 1000 })).toThrow(TypeError)
    expect(() => retryFetch({ maxAttempts: 0 })).toThrow(RangeError)
    expect(() => retryFetch({ statusCodes: 'all' })).toThrow(/statusCodes/)
  })

  it("a network error's stack names the async functions awaiting it", async () => {
    const port = await closedPort()
    const f = retryFetch({ maxAttempts: 2, baseWait: 1 })
    async function myCaller() {
      return await f(`http://127.0.0.1:${port}/`)
    }
    async function outerCaller() {
      return await myCaller()
    }
    const error = await outerCaller().then(
      () => null,
      (e) => e,
    )
    expect(error).toBeInstanceOf(TypeError)
    expect(error.message).toBe('fetch failed')
    // Vitest formats stacks itself (no "async" before a frame): the names.
    expect(error.stack).toMatch(/^TypeError: fetch failed\n/)
    expect(error.stack).toMatch(/\bmyCaller\b/)
    expect(error.stack).toMatch(/\bouterCaller\b/)
  })

  it("in plain Node, the stack reads as fetch's: at fetch, then at async <caller>", () => {
    const script = `
      import net from 'node:net'
      import { retryFetch } from 'retry-wasm/fetch'
      const server = net.createServer()
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
      const url = 'http://127.0.0.1:' + server.address().port + '/'
      await new Promise((resolve) => server.close(resolve))
      const f = retryFetch({ maxAttempts: 2, baseWait: 1 })
      async function myCaller(get) { return await get(url) }
      const stacks = []
      for (const get of [f, fetch]) stacks.push(await myCaller(get).then(() => 'resolved', (e) => e.stack))
      console.log(JSON.stringify(stacks))
    `
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: here, encoding: 'utf8', timeout: 20_000 })
    expect(r.status, r.stderr).toBe(0)
    const [ours, plain] = JSON.parse(r.stdout)
    expect(ours).toMatch(/^TypeError: fetch failed\n/)
    expect(ours).toMatch(/\n {4}at async myCaller \(/)
    expect(ours.split('\n')[1]).toMatch(/^ {4}at fetch \(/)
    // The control: Node's own fetch fails the same way. Its stack has
    // frames up to the caller on Node 20 and 22; from Node 24 (undici 7 and 8) it
    // is the message line alone, so only that line is compared.
    expect(plain.split('\n')[0]).toBe('TypeError: fetch failed')
    if (Number(process.versions.node.split('.')[0]) <= 22) expect(plain).toMatch(/\n {4}at async myCaller \(/)
  })

  it('rejects with the very value the wrapped fetch rejected with, frozen or not', async () => {
    const frozen = Object.freeze(new TypeError('frozen network error'))
    const f = retryFetch({ maxAttempts: 1, fetch: async () => Promise.reject(frozen) })
    async function caller() {
      return await f('http://127.0.0.1/')
    }
    await expect(caller()).rejects.toBe(frozen)

    const reason = new DOMException('stop', 'AbortError')
    const controller = new AbortController()
    controller.abort(reason)
    await expect(f('http://127.0.0.1/', { signal: controller.signal })).rejects.toBe(reason)
    await expect(f('http://127.0.0.1/', { signal: controller.signal })).rejects.toBe(reason)
  })

  it('resolves what the wrapped fetch resolves', async () => {
    const response = new Response('hi', { status: 200 })
    const f = retryFetch({ fetch: async () => response })
    await expect(f('http://127.0.0.1/')).resolves.toBe(response)
  })
})
