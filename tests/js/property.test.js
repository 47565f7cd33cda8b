// Property tests (issue 6): random programs over several retryers with fake
// timers. Programs call execute / abort / setOptions / reset (also with bad
// input), advance time, and every callback may re-enter the retryer. The
// wrapped functions resolve, reject, throw synchronously, return plain values
// or thenables, never settle, settle late or cancel with an AbortError.
//
// Checked for every run: no method throws unexpectedly; every execute()
// promise settles, exactly once; every rejection is a value the function
// produced or a TimeoutError; no unhandled rejection or uncaught error; no
// "recursive use of an object" / wasm trap anywhere; state invariants hold
// after each step; after draining, no flow is active, no signal is handed out
// and no timer is left; the module works normally afterwards.
import { getEventListeners } from 'node:events'
import { describe, it, expect, vi, beforeAll, afterAll, beforeEach, afterEach } from 'vitest'
import fc from 'fast-check'
import { AsyncRetryer, RetryBudget } from 'retry-wasm'

const NUM_RUNS = Number(process.env.RETRY_WASM_FC_RUNS || 200)
const realSetImmediate = globalThis.setImmediate

const hostErrors = []
const onUnhandled = (e) => hostErrors.push(['unhandledRejection', e])
const onUncaught = (e) => hostErrors.push(['uncaughtException', e])
beforeAll(() => {
  process.on('unhandledRejection', onUnhandled)
  process.on('uncaughtException', onUncaught)
})
afterAll(() => {
  process.removeListener('unhandledRejection', onUnhandled)
  process.removeListener('uncaughtException', onUncaught)
})
beforeEach(() => {
  vi.useFakeTimers({ now: Date.UTC(2030, 0, 1) })
})
afterEach(() => {
  vi.clearAllTimers()
  vi.useRealTimers()
})

async function flush(rounds = 30) {
  for (let i = 0; i < rounds; i++) await Promise.resolve()
}
const turnEventLoop = () => new Promise((r) => realSetImmediate(r))

const FIELDS = ['currentAttempt', 'executionCount', 'isExecuting', 'lastError', 'lastExecutionTime', 'lastResult', 'status', 'totalExecutionTime'].sort()
const POISON = /recursive use|unreachable|RuntimeError|panicked|already borrowed|null pointer|memory access out of bounds/i

function describeError(e) {
  try {
    return e instanceof Error ? `${e.name}: ${e.message}` : JSON.stringify(e)
  } catch {
    return String(e)
  }
}

// ------------------------------------------------------------- arbitraries

const FN_KINDS = ['resolve', 'plain', 'reject', 'rejectPlain', 'throw', 'throwString', 'thenable', 'thenableReject', 'never', 'abortError', 'lateResolve', 'lateReject']
// The '...Other' reactions act on the next retryer: one retryer's pump then
// runs inside another's callback.
const REACTIONS = ['none', 'none', 'none', 'abort', 'execute', 'setOptions', 'reset', 'read', 'executeOther', 'abortOther']
const CALLBACKS = ['onRetry', 'onError', 'onLastError', 'onSuccess', 'onSettled', 'onAbort', 'onExecutionTimeout', 'onTotalExecutionTimeout']
const EXTRA_CALLBACKS = ['onGiveUp']

const baseOptionsArb = fc.record(
  {
    maxAttempts: fc.integer({ min: 1, max: 4 }),
    baseWait: fc.constantFrom(0, 1, 7, 30),
    maxWait: fc.constantFrom(Infinity, 0, 10, 50),
    backoff: fc.constantFrom('exponential', 'linear', 'fixed'),
    jitter: fc.constantFrom(0, 0.5, 1),
    maxExecutionTime: fc.constantFrom(Infinity, 5, 20),
    maxTotalExecutionTime: fc.constantFrom(Infinity, 25, 80),
    throwOnError: fc.constantFrom('last', true, false, undefined),
    enabled: fc.constantFrom(true, true, true, false),
  },
  { requiredKeys: [] },
)

const extraOptionsArb = fc.record(
  {
    shouldRetryMode: fc.constantFrom('always', 'never', 'odd'),
    retryAfterMode: fc.constantFrom('none', 'undefined', 'small', 'zero'),
    seed: fc.integer({ min: 0, max: 1000 }),
    intervals: fc.array(fc.constantFrom(0, 1, 5, 20), { maxLength: 3 }),
    multiplier: fc.constantFrom(1, 1.5, 3),
    backoff: fc.constantFrom('decorrelated', 'function', 'exponential'),
    jitter: fc.constantFrom('full', 0.3),
    retryOnExecutionTimeout: fc.boolean(),
    useBudget: fc.boolean(),
    useSignal: fc.boolean(),
    infinite: fc.boolean(),
  },
  { requiredKeys: [] },
)

const validSetOptionsArb = fc.record(
  {
    maxAttempts: fc.integer({ min: 1, max: 4 }),
    baseWait: fc.constantFrom(0, 3, 20),
    backoff: fc.constantFrom('exponential', 'linear', 'fixed'),
    jitter: fc.constantFrom(0, 0.2),
    maxExecutionTime: fc.constantFrom(Infinity, 8),
    maxTotalExecutionTime: fc.constantFrom(Infinity, 40),
    throwOnError: fc.constantFrom('last', false, undefined),
    enabled: fc.boolean(),
    onRetry: fc.constantFrom(undefined),
  },
  { requiredKeys: [] },
)

const BAD_SET_OPTIONS = [
  { maxAttempts: 0 },
  { maxAttempts: 1.5 },
  { maxAttempts: 'x' },
  { jitter: 2 },
  { baseWait: -1 },
  { maxWait: NaN },
  { maxExecutionTime: -3 },
  { maxAttempt: 2 },
  { timeout: 10 },
  { onRetry: 5 },
  { onSuccess: 'no' },
]

function commandArb(nRetryers) {
  const r = fc.nat({ max: nRetryers - 1 })
  return fc.oneof(
    { weight: 5, arbitrary: fc.record({ op: fc.constant('execute'), r, arg: fc.integer({ min: 0, max: 9 }) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('abort'), r }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('setOptions'), r, opts: validSetOptionsArb }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('badSetOptions'), r, which: fc.nat({ max: BAD_SET_OPTIONS.length - 1 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('reset'), r }) },
    { weight: 4, arbitrary: fc.record({ op: fc.constant('advance'), ms: fc.integer({ min: 0, max: 60 }) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('flush') }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('abortSignal') }) },
  )
}

function retryerSpecArb(withExtras) {
  return fc.record({
    options: baseOptionsArb,
    extras: withExtras ? extraOptionsArb : fc.constant(null),
    plan: fc.array(fc.constantFrom(...FN_KINDS), { minLength: 1, maxLength: 8 }),
    reactions: fc.record(Object.fromEntries([...CALLBACKS, ...EXTRA_CALLBACKS].map((c) => [c, fc.constantFrom(...REACTIONS)]))),
  })
}

function programArb(withExtras) {
  return fc.integer({ min: 1, max: 3 }).chain((n) =>
    fc.record({
      retryers: fc.array(retryerSpecArb(withExtras), { minLength: n, maxLength: n }),
      commands: fc.array(commandArb(n), { minLength: 3, maxLength: 60, size: 'medium' }),
    }),
  )
}

// --------------------------------------------------------------- the model

const stats = { runs: 0, commands: 0, executes: 0, fnCalls: 0, reentrant: 0, settledFulfilled: 0, settledRejected: 0, badInputs: 0 }

async function runProgram(program, withExtras) {
  vi.clearAllTimers()
  hostErrors.length = 0
  stats.runs++
  const ctx = {
    phase: 'run',
    tracked: [],
    problems: [],
    reentrantLeft: 8,
    ownTimers: 0,
    producedErrors: new Set(),
  }
  const problem = (msg) => ctx.problems.push(msg)
  let controller = new AbortController()
  const signals = [controller.signal]
  const budget = withExtras ? new RetryBudget({ maxTokens: 5, tokenRatio: 0.5 }) : null

  const retryers = []
  const track = (p, where, idx) => {
    if (!p || typeof p.then !== 'function') {
      problem(`execute() did not return a promise (${where})`)
      return
    }
    const t = { count: 0, status: 'pending', value: undefined, reason: undefined, where, idx }
    ctx.tracked.push(t)
    stats.executes++
    p.then(
      (v) => { t.count++; t.status = 'fulfilled'; t.value = v },
      (e) => { t.count++; t.status = 'rejected'; t.reason = e },
    )
  }
  const safely = (what, f) => {
    try {
      return f()
    } catch (e) {
      problem(`${what} threw ${describeError(e)}`)
      return undefined
    }
  }

  const react = (idx, cbName) => {
    if (ctx.phase !== 'run') return
    const spec = program.retryers[idx]
    const action = spec.reactions[cbName]
    const r = retryers[idx]
    if (!r || action === 'none') return
    if (action === 'read') {
      const s = r.store.state
      if (Object.keys(s).sort().join() !== FIELDS.join()) problem('state shape inside callback')
      r.getAbortSignal()
      return
    }
    if (ctx.reentrantLeft <= 0) return
    ctx.reentrantLeft--
    stats.reentrant++
    if (action === 'abort') safely(`${cbName}->abort`, () => r.abort())
    else if (action === 'execute') safely(`${cbName}->execute`, () => track(r.execute('re'), `${cbName}->execute`, idx))
    else if (action === 'executeOther') {
      const j = (idx + 1) % retryers.length
      safely(`${cbName}->execute ${j}`, () => track(retryers[j].execute('other'), `${cbName}->execute ${j}`, j))
    }
    else if (action === 'abortOther') safely(`${cbName}->abort other`, () => retryers[(idx + 1) % retryers.length].abort())
    else if (action === 'setOptions') {
      const x = spec.extras
      const opts = x && !x.infinite && x.intervals !== undefined ? { baseWait: 2 } : { baseWait: 2, maxAttempts: 2 }
      safely(`${cbName}->setOptions`, () => r.setOptions(opts))
    }
    else if (action === 'reset') safely(`${cbName}->reset`, () => r.reset())
  }

  // our own timers, counted so that the library's can be told apart
  const ownTimer = (f, ms) => {
    ctx.ownTimers++
    setTimeout(() => { ctx.ownTimers--; f() }, ms)
  }
  const makeFn = (idx, plan) => {
    let i = 0
    return (...args) => {
      stats.fnCalls++
      const kind = plan[i++ % plan.length]
      const mkErr = (label) => {
        const e = i % 2 ? new Error(`${label} ${idx}`) : { label, idx }
        ctx.producedErrors.add(e)
        return e
      }
      switch (kind) {
        case 'resolve': return Promise.resolve({ ok: idx, args })
        case 'plain': return { ok: idx, args }
        case 'reject': return Promise.reject(mkErr('reject'))
        case 'rejectPlain': { const v = `s${idx}`; ctx.producedErrors.add(v); return Promise.reject(v) }
        case 'throw': throw mkErr('throw')
        case 'throwString': { const v = `t${idx}`; ctx.producedErrors.add(v); throw v }
        case 'thenable': return { then: (res) => res({ ok: idx, args }) }
        case 'thenableReject': { const e = mkErr('thenable'); return { then: (_res, rej) => rej(e) } }
        case 'never': return new Promise(() => {})
        case 'abortError': return Promise.reject(new DOMException('cancelled', 'AbortError'))
        case 'lateResolve': return new Promise((res) => ownTimer(() => res({ ok: idx, args }), 15))
        case 'lateReject': { const e = mkErr('late'); return new Promise((_res, rej) => ownTimer(() => rej(e), 15)) }
        default: throw new Error('unknown kind')
      }
    }
  }

  // create the retryers
  program.retryers.forEach((spec, idx) => {
    const opts = { ...spec.options }
    for (const cb of CALLBACKS) opts[cb] = () => react(idx, cb)
    const x = spec.extras
    if (x) {
      opts.onGiveUp = () => react(idx, 'onGiveUp')
      if (x.shouldRetryMode === 'never') opts.shouldRetry = () => false
      if (x.shouldRetryMode === 'odd') opts.shouldRetry = (_e, attempt) => attempt % 2 === 1
      if (x.shouldRetryMode === 'always') opts.shouldRetry = () => true
      if (x.retryAfterMode === 'undefined') opts.retryAfter = () => undefined
      if (x.retryAfterMode === 'small') opts.retryAfter = (_e, attempt) => attempt * 3
      if (x.retryAfterMode === 'zero') opts.retryAfter = () => 0
      if (x.seed !== undefined) opts.seed = x.seed
      if (x.backoff === 'function') opts.backoff = (attempt) => attempt * 2
      else if (x.backoff !== undefined) opts.backoff = x.backoff
      if (x.multiplier !== undefined) opts.multiplier = x.multiplier
      if (x.jitter !== undefined) opts.jitter = x.jitter
      if (x.retryOnExecutionTimeout !== undefined) opts.retryOnExecutionTimeout = x.retryOnExecutionTimeout
      if (x.useBudget) opts.budget = budget
      if (x.useSignal) opts.signal = controller.signal
      if (x.infinite) {
        // Infinity attempts end at the deadline; with zero delays and fake
        // time that never advances, that deadline would never come
        opts.maxAttempts = Infinity
        opts.maxTotalExecutionTime = 60
        opts.baseWait = 5
        delete opts.maxWait
        if (x.retryAfterMode === 'zero') delete opts.retryAfter
      } else if (x.intervals !== undefined) {
        opts.intervals = x.intervals
        delete opts.maxAttempts
      }
    }
    let r
    try {
      r = new AsyncRetryer(makeFn(idx, spec.plan), opts)
    } catch (e) {
      problem(`constructor threw ${describeError(e)} for ${JSON.stringify(Object.keys(opts))}`)
    }
    retryers.push(r)
  })
  if (ctx.problems.length) return ctx

  const checkInvariants = (where) => {
    for (const r of retryers) {
      const s = r.store.state
      if (Object.keys(s).sort().join() !== FIELDS.join()) problem(`${where}: state fields ${Object.keys(s)}`)
      if (!['idle', 'disabled', 'executing', 'retrying'].includes(s.status)) problem(`${where}: status ${s.status}`)
      if ((s.status === 'executing' || s.status === 'retrying') && !s.isExecuting) problem(`${where}: ${s.status} but not executing`)
      if (!s.isExecuting && s.status !== 'idle' && s.status !== 'disabled') problem(`${where}: not executing but ${s.status}`)
      if (!Number.isInteger(s.currentAttempt) || s.currentAttempt < 0) problem(`${where}: currentAttempt ${s.currentAttempt}`)
      if (!Number.isInteger(s.executionCount) || s.executionCount < 0) problem(`${where}: executionCount ${s.executionCount}`)
      if (s.status === 'executing' && s.currentAttempt !== 1) problem(`${where}: executing with attempt ${s.currentAttempt}`)
      if (s.status === 'retrying' && s.currentAttempt < 2) problem(`${where}: retrying with attempt ${s.currentAttempt}`)
      if (r.store.state !== s) problem(`${where}: state identity unstable`)
    }
    if (budget) {
      const tokens = typeof budget.tokens === 'function' ? budget.tokens() : budget.tokens
      if (typeof tokens === 'number' && (tokens < 0 || tokens > 5)) problem(`${where}: budget tokens ${tokens}`)
    }
  }

  for (const [k, cmd] of program.commands.entries()) {
    stats.commands++
    const r = retryers[cmd.r ?? 0]
    const where = `#${k} ${cmd.op}`
    switch (cmd.op) {
      case 'execute':
        safely(where, () => track(r.execute(cmd.arg), where, cmd.r ?? 0))
        break
      case 'abort':
        safely(where, () => r.abort())
        break
      case 'setOptions': {
        const opts = { ...cmd.opts }
        const x = program.retryers[cmd.r].extras
        // keep the combination valid: Infinity attempts need a finite deadline,
        // intervals fix the number of attempts themselves
        if (x?.infinite && !('maxAttempts' in opts)) {
          delete opts.maxTotalExecutionTime
          if (opts.baseWait === 0) delete opts.baseWait
        }
        if (x && !x.infinite && x.intervals !== undefined) delete opts.maxAttempts
        safely(where, () => r.setOptions(opts))
        break
      }
      case 'badSetOptions': {
        stats.badInputs++
        const before = r.options
        const beforeCopy = { ...before }
        const state = r.store.state
        let threw = null
        try {
          r.setOptions(BAD_SET_OPTIONS[cmd.which])
        } catch (e) {
          threw = e
        }
        if (!(threw instanceof TypeError || threw instanceof RangeError)) {
          problem(`${where}: ${JSON.stringify(BAD_SET_OPTIONS[cmd.which])} gave ${threw ? describeError(threw) : 'no error'}`)
        }
        for (const key of Object.keys(beforeCopy)) {
          if (!Object.is(r.options[key], beforeCopy[key])) problem(`${where}: option ${key} changed by a failed setOptions`)
        }
        if (r.store.state !== state) problem(`${where}: state changed by a failed setOptions`)
        break
      }
      case 'reset':
        safely(where, () => r.reset())
        break
      case 'advance':
        try {
          await vi.advanceTimersByTimeAsync(cmd.ms)
        } catch (e) {
          problem(`${where}: a timer threw ${describeError(e)}`)
        }
        await flush()
        break
      case 'flush':
        await flush()
        break
      case 'abortSignal':
        controller.abort()
        controller = new AbortController()
        signals.push(controller.signal)
        for (const [idx, spec] of program.retryers.entries()) {
          if (spec.extras?.useSignal) safely(`${where} swap`, () => retryers[idx].setOptions({ signal: controller.signal }))
        }
        break
    }
    checkInvariants(where)
    // A new retryer after every step, among hundreds alive: the engine's
    // table of live retryers and its allocator are busy around the program's.
    if (crowd !== null) crowd.push(new AsyncRetryer(async () => 0))
  }

  // drain: no more re-entrancy, abort everything, run every timer
  ctx.phase = 'drain'
  // rule 12: once every flow is aborted, none of the library's timers remain
  for (const r of retryers) safely('drain abort', () => r.abort())
  await flush()
  if (vi.getTimerCount() !== ctx.ownTimers) problem(`${vi.getTimerCount() - ctx.ownTimers} library timers left right after abort()`)
  for (let round = 0; round < 3; round++) {
    for (const r of retryers) safely('drain abort', () => r.abort())
    try {
      await vi.runAllTimersAsync()
    } catch (e) {
      problem(`drain: timers threw ${describeError(e)}`)
    }
    await flush()
  }
  await turnEventLoop()
  await turnEventLoop()

  for (const t of ctx.tracked) {
    if (t.count !== 1) problem(`promise from ${t.where} settled ${t.count} times`)
    if (t.status === 'fulfilled') {
      stats.settledFulfilled++
      if (t.value !== undefined && !(t.value && typeof t.value === 'object' && t.value.ok === t.idx)) {
        problem(`promise from ${t.where} (retryer ${t.idx}) fulfilled with ${describeError(t.value)}`)
      }
    }
    if (t.status === 'rejected') {
      stats.settledRejected++
      const e = t.reason
      const fromFn = ctx.producedErrors.has(e)
      const timeout = e instanceof Error && e.name === 'TimeoutError'
      if (!fromFn && !timeout) problem(`promise from ${t.where} rejected with ${describeError(e)}`)
    }
  }
  for (const [i, r] of retryers.entries()) {
    const s = r.store.state
    if (s.isExecuting) problem(`retryer ${i} still executing after drain`)
    if (r.getAbortSignal() !== null) problem(`retryer ${i} still hands out a signal after drain`)
  }
  if (vi.getTimerCount() !== 0) problem(`${vi.getTimerCount()} timers left after drain`)
  for (const s of signals) {
    const n = getEventListeners(s, 'abort').length
    if (n !== 0) problem(`${n} abort listeners left on an outside signal`)
  }
  for (const [kind, e] of hostErrors) problem(`${kind}: ${describeError(e)}`)
  for (const msg of ctx.problems) if (POISON.test(msg)) ctx.problems.unshift(`POISONED: ${msg}`)
  return ctx
}

async function sanityRetry() {
  const fn = vi.fn().mockRejectedValueOnce(new Error('once')).mockResolvedValueOnce('fine')
  const r = new AsyncRetryer(fn, { baseWait: 10 })
  const p = r.execute()
  await vi.advanceTimersByTimeAsync(10)
  expect(await p).toBe('fine')
  expect(fn).toHaveBeenCalledTimes(2)
}

/** Idle retryers kept alive around the program's (see the third run). */
let crowd = null

function report(label, before) {
  const d = Object.fromEntries(Object.entries(stats).map(([k, v]) => [k, v - before[k]]))
  // printed so the numbers can go into the README's Reliability section
  console.log(`[property] ${label}: ${JSON.stringify(d)}`)
}

/** NUM_RUNS random programs; every invariant must hold in each. */
async function checkPrograms(label, withExtras) {
  const before = { ...stats }
  await fc.assert(
    fc.asyncProperty(programArb(withExtras), async (program) => {
      const ctx = await runProgram(program, withExtras)
      if (ctx.problems.length) throw new Error(ctx.problems.slice(0, 8).join('\n'))
    }),
    { numRuns: NUM_RUNS, includeErrorInReport: true },
  )
  report(label, before)
  await sanityRetry()
}

describe('random programs (fast-check)', () => {
  it(`§1 API: ${NUM_RUNS} random programs keep every invariant`, async () => {
    await checkPrograms('§1', false)
  }, 120_000)

  it(`§1 + §2 options: ${NUM_RUNS} random programs keep every invariant`, async () => {
    await checkPrograms('§1+§2', true)
  }, 120_000)

  it(`§1 + §2 options, among 600 live retryers and a new one per step: ${NUM_RUNS} random programs keep every invariant`, async () => {
    crowd = Array.from({ length: 600 }, () => new AsyncRetryer(async () => 0))
    try {
      await checkPrograms('§1+§2 crowded', true)
    } finally {
      crowd = null
    }
  }, 120_000)

  it('hostile option values at construction: a TypeError / RangeError or success, never a trap', async () => {
    const weird = [undefined, null, 0, -0, 1, -1, 0.5, NaN, Infinity, -Infinity, 2 ** 53, 1e308, '', '1', 'x', true, false,
      Symbol('s'), 10n, {}, [], [1, -1], () => { throw new Error('dyn throws') }, () => NaN, () => 'x', new Date(0)]
    const names = ['maxAttempts', 'backoff', 'baseWait', 'maxWait', 'jitter', 'maxExecutionTime', 'maxTotalExecutionTime',
      'throwOnError', 'enabled', 'initialState', 'key', ...CALLBACKS, 'shouldRetry', 'onGiveUp', 'retryAfter', 'intervals',
      'multiplier', 'signal', 'budget', 'seed', 'retryOnExecutionTimeout']
    const callbackLike = new Set([...CALLBACKS, 'onGiveUp', 'shouldRetry', 'retryAfter'])
    let cases = 0
    for (const name of names) {
      for (const value of weird) {
        // a callback that throws is covered in flow.test.js (it may surface as
        // the host's uncaught error, which would end this run)
        if (callbackLike.has(name) && typeof value === 'function' && value.length === 0 && String(value).includes('throw')) continue
        cases++
        let r
        try {
          r = new AsyncRetryer(() => Promise.reject(new Error('x')), { baseWait: 1, maxAttempts: 2, throwOnError: false, [name]: value })
        } catch (e) {
          const label = `${name}=${String(typeof value === 'symbol' ? 'Symbol' : value)}`
          // contract-silent: a dynamic option evaluated at construction may let its own error through
          const ownError = e?.message === 'dyn throws'
          expect(e instanceof TypeError || e instanceof RangeError || ownError, `${label}: ${describeError(e)}`).toBe(true)
          expect(POISON.test(String(e?.message)), label).toBe(false)
          continue
        }
        // accepted: a flow must still settle and leave nothing behind
        let p
        try {
          p = r.execute()
        } catch (e) {
          // contract-silent: a dynamic option throwing inside execute() may surface synchronously
          p = Promise.reject(e)
        }
        const settled = p.then(() => 'ok', (e) => e)
        await vi.advanceTimersByTimeAsync(10_000)
        r.abort()
        await flush()
        const out = await Promise.race([settled, Promise.resolve('pending')])
        expect(out, `${name} flow wedged`).not.toBe('pending')
        if (out !== 'ok') expect(POISON.test(String(out?.message)), `${name}: ${describeError(out)}`).toBe(false)
        expect(r.store.state.isExecuting).toBe(false)
      }
    }
    console.log(`[property] hostile construction values: ${cases} cases`)
    await sanityRetry()
  }, 60_000)
})
