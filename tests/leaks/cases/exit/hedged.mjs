// A chaos run of hedged flows (SPEC §2c rule 11): 400 flows with random
// hedge times (0, a few ms, 1 hour, a function), attempts that resolve,
// reject, never settle, throw synchronously or reject with an AbortError,
// retryAfter hints, 1-hour or short deadlines, and abort(), a new
// execution or the outside signal at random moments. Every flow must
// settle, no attempt's signal may be left unaborted while its attempt
// never settles, and once they have, no timer remains: the process exits.
import { AsyncRetryer } from 'retry-wasm';
import { HOUR, expect, settled } from './common.mjs';

const t0 = performance.now();
const FLOWS = 400;
let seed = 0x2c9;
/** A number in [0, n), from a fixed sequence (the run is reproducible). */
const rand = (n) => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return (seed >>> 16) % n;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const never = [];

async function flow(i) {
  const ac = new AbortController();
  const kinds = [];
  let r;
  const attempt = async () => {
    const signal = r.getAbortSignal();
    const kind = rand(6);
    kinds.push(kind);
    if (kind === 0) throw new Error('sync');
    await sleep(rand(6));
    if (kind === 1) return 'ok';
    if (kind === 2) throw Object.assign(new Error('busy'), { hint: rand(2) ? rand(5) : HOUR });
    if (kind === 3) throw new DOMException('stop', 'AbortError');
    // Never settles: its signal must abort when the flow ends.
    never.push(signal);
    return new Promise(() => {});
  };
  const hedges = [0, 1, 3, HOUR, (n) => n * 2];
  const short = rand(2) === 0;
  r = new AsyncRetryer(attempt, {
    hedge: hedges[rand(hedges.length)],
    maxAttempts: 1 + rand(4),
    maxExecutionTime: rand(3) === 0 ? 4 : HOUR,
    maxTotalExecutionTime: short ? 20 : HOUR,
    retryAfter: rand(2) ? (e) => e?.hint : undefined,
    signal: ac.signal,
    throwOnError: false,
    onHedge: () => {},
  });
  const p = r.execute(i);
  const action = rand(4);
  const second = [];
  if (!short || action !== 3) {
    // A flow with 1-hour deadlines is always ended by something.
    await sleep(rand(8));
    if (action === 0 || !short) r.abort();
    else if (action === 1) second.push(r.execute(i));
    else if (action === 2) ac.abort();
  }
  await p;
  await Promise.all(second);
  if (second.length) r.abort();
  return kinds.length;
}

const counts = await Promise.all(Array.from({ length: FLOWS }, (_, i) => flow(i)));
const attempts = counts.reduce((a, b) => a + b, 0);
const left = never.filter((s) => s && !s.aborted).length;
expect(left === 0, `${left} attempts that never settle kept an unaborted signal`);
// The losers' own sleeps (user code) end within a few ms; then no timer
// may remain, not even a short one.
await sleep(30);
const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
expect(timers === 0, `${timers} timers left after every flow settled`);
await settled(t0, `${FLOWS} hedged flows, ${attempts} attempts, ${never.length} of them never settling, every one aborted`);
