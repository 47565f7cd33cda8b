// Leak test: one CircuitBreaker behind retryFetch, in a server that calls
// a new origin with every request (webhooks, say), for as long as it runs
// (SPEC §2e, docs/SPEC.md's third choice: past 64 keys an idle circuit
// gives its place). 40,000 calls, each to an origin never called before,
// keep memory flat (JS heap + wasm memory within LIMIT of the figure after
// warm-up) and the breaker at no more than 64 circuits plus those that
// are not idle yet.
//
// Origins end every way a permit can: most answer 200; by origin number,
// a 503 then a 200 (a retry), 503 twice (the circuit trips: two failures
// in a row), a network error twice (trips too), and the caller's abort
// during the attempt (the permit goes back). The clock moves 4 s per call
// (the breaker reads Date.now(), replaced here), so a circuit is idle 30 s
// (the default window) after its last call, or a window after its 5 s
// break: at most 9 are not, and one more to count the calls by. The loop
// collects every GC_EVERY calls: what it measures is the breaker, not how
// many dead calls wait for their finalizers.
import { CircuitBreaker, retryFetch } from 'retry-wasm/fetch';
import { MB, check, fmtDelta, report, settle, steady } from './lib.mjs';

const N = Number(process.env.LEAKS_ORIGINS ?? 40_000);
const WARMUP = 10_000;
const CHECKPOINTS = 4;
// A CI run, collecting every 5,000 calls, read the JS heap 1.0-2.1 MB up
// from one reading to the next on Node 22, 24 and 26 (0.1-0.3 MB here
// with every 1,000), whatever the count; a breaker that kept its circuits
// would add about 760 B of wasm memory per origin, 29 MB over the run.
const LIMIT = 4 * MB;
const STEP = 4_000;
const MOST = 64 + Math.ceil((30_000 + 5_000) / STEP) + 1;
const GC_EVERY = 1_000;

let clock = Date.now();
Date.now = () => clock;

/** How origin `n` answers. */
const kindOf = (n) => (n % 16 === 15 ? 'abort' : ['ok', 'once', 'down', 'offline'][n % 4]);
/** Requests each origin has seen, for the call in progress. */
const seen = new Map();
async function fetch(input, init) {
  const url = new URL(input);
  const n = (seen.get(url.origin) ?? 0) + 1;
  seen.set(url.origin, n);
  const kind = kindOf(Number(url.hostname.split('-')[1].split('.')[0]));
  if (kind === 'abort') {
    return new Promise((_, reject) => init.signal.addEventListener('abort', () => reject(init.signal.reason), { once: true }));
  }
  if (kind === 'offline') throw new TypeError('fetch failed');
  const fail = kind === 'down' || (kind === 'once' && n === 1);
  return new Response(fail ? 'busy' : 'ok', { status: fail ? 503 : 200 });
}

const breaker = new CircuitBreaker({ consecutiveFailures: 2 });
const call = retryFetch({ breaker, fetch, baseWait: 0, maxAttempts: 2 });
let most = 0;

/** One call to origin `n`, checked against how it answers. */
async function one(n) {
  const url = `https://origin-${n}.test/hook`;
  const kind = kindOf(n);
  const caller = new AbortController();
  const pending = call(url, { signal: caller.signal });
  if (kind === 'abort') queueMicrotask(() => caller.abort());
  const outcome = await pending.then(
    async (res) => `${res.status}:${await res.text()}`,
    (e) => e.name,
  );
  seen.delete(new URL(url).origin);
  const expected = { ok: '200:ok', once: '200:ok', down: '503:busy', offline: 'TypeError', abort: 'AbortError' }[kind];
  if (outcome !== expected) throw new Error(`origin ${n} (${kind}): ${outcome}, expected ${expected}`);
}

async function run(count, offset) {
  for (let i = 0; i < count; i++) {
    clock += STEP;
    await one(offset + i);
    if ((offset + i) % 100 === 0) most = Math.max(most, Object.keys(breaker.snapshot()).length);
    if ((i + 1) % GC_EVERY === 0) await settle(1);
  }
}

const name = `${N.toLocaleString('en-US')} origins through one CircuitBreaker (retryFetch)`;
const m = await steady(run, { warmup: WARMUP, total: N, parts: CHECKPOINTS, unit: 'calls', more: () => `; circuits ${Object.keys(breaker.snapshot()).length}` });

const keys = Object.keys(breaker.snapshot());
check(keys.includes(`https://origin-${WARMUP + N - 1}.test`), 'the last origin has no circuit');
const { delta } = m.change;
const ok = delta <= LIMIT && m.slotsKept && most <= MOST;
report(
  name,
  ok,
  { calls: N, ...m.figures, mostCircuits: most },
  `${fmtDelta(delta)} over ${N.toLocaleString('en-US')} calls, each to a new origin (limit +${LIMIT / MB} MB); at most ${most} circuits (limit ${MOST}); ${m.tail}`,
);
