// How a row of the differential table is run and judged: the same call made
// once through plain `fetch` and once through `retryFetch`, each side with
// inputs of its own (bodies, Requests and signals are consumed), and two
// descriptions compared key by key: what the server received, and what the
// caller saw.
import { bytesView, describeReceived } from './server.mjs';

export const FAST_MS = 50;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

/** An error or any other rejection value, as far as a caller can tell it apart. */
export function describeError(e, made = {}) {
  const is = identities(e, made);
  if (e === null || (typeof e !== 'object' && typeof e !== 'function')) {
    return { typeof: typeof e, value: typeof e === 'string' ? e : String(e), ...(is.length ? { is } : {}) };
  }
  const out = {
    ctor: e.constructor?.name,
    name: e.name,
    message: e.message,
  };
  if (e instanceof DOMException) out.domExceptionCode = e.code;
  else if (e.code !== undefined) out.code = e.code;
  if ('cause' in e) out.cause = describeCause(e.cause);
  if (is.length) out.is = is;
  return out;
}

function describeCause(c) {
  if (c === null || (typeof c !== 'object' && typeof c !== 'function')) return { typeof: typeof c, value: String(c) };
  const out = { ctor: c.constructor?.name, name: c.name, message: c.message };
  if (c.code !== undefined) out.code = c.code;
  return out;
}

/** Which of the row's signals' reasons (or named values) the value is, by identity. */
function identities(e, made) {
  const is = [];
  for (const [k, s] of Object.entries(made.signals ?? {})) {
    if (s && s.aborted && s.reason === e) is.push(`${k}.reason`);
  }
  for (const [k, v] of Object.entries(made.values ?? {})) if (v === e) is.push(k);
  return is;
}

/** A Response's head: everything but the body's content. */
export function describeHead(res) {
  // A Response of another class (undici's npm one) is tagged so too.
  if (Object.prototype.toString.call(res) !== '[object Response]') return { notAResponse: Object.prototype.toString.call(res) };
  return {
    ctor: res.constructor.name,
    type: res.type,
    status: res.status,
    statusText: res.statusText,
    ok: res.ok,
    redirected: res.redirected,
    url: res.url,
    headers: [...res.headers],
    setCookie: res.headers.getSetCookie(),
    body: res.body === null ? null : res.body instanceof ReadableStream ? 'ReadableStream' : typeof res.body,
    bodyUsed: res.bodyUsed,
  };
}

/** The head, then the whole body read (bytes shown as text when printable). */
export async function describeResponse(res, made) {
  const head = describeHead(res);
  if (head.notAResponse) return head;
  try {
    head.bodyContent = bytesView(Buffer.from(await res.arrayBuffer()));
  } catch (e) {
    head.bodyError = describeError(e, made);
  }
  return head;
}

/**
 * Calls f(...args) as a caller of `fetch` would and describes the outcome:
 * how the call returned (a Promise, or a synchronous throw), then the
 * response (head + body) or the rejection. `_ms` (not compared) is the time
 * until the promise settled.
 */
export async function callAndDescribe(f, made) {
  const t0 = now();
  let p;
  try {
    p = f(...made.args);
  } catch (e) {
    return { returned: 'a synchronous throw', error: describeError(e, made), _ms: now() - t0 };
  }
  const returned = p instanceof Promise ? 'a Promise' : `not a Promise: ${Object.prototype.toString.call(p)}`;
  try {
    const res = await p;
    const ms = now() - t0;
    return { returned, response: await describeResponse(res, made), _ms: ms };
  } catch (e) {
    return { returned, rejection: describeError(e, made), _ms: now() - t0 };
  }
}

export const fastClass = (ms) => (ms < FAST_MS ? `under ${FAST_MS} ms` : `${FAST_MS} ms or more`);

/** Strips the `_`-prefixed keys (raw figures shown but not compared). */
function comparable(v) {
  if (Array.isArray(v)) return v.map(comparable);
  if (v && typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) if (!k.startsWith('_')) o[k] = comparable(x);
    return o;
  }
  return v;
}

/** Paths where a and b differ (deep, on the comparable parts), with both values. */
export function diff(a, b, path = '') {
  a = comparable(a);
  b = comparable(b);
  const out = [];
  const walk = (x, y, p) => {
    if (x === y) return;
    const bothObj = x && y && typeof x === 'object' && typeof y === 'object' && Array.isArray(x) === Array.isArray(y);
    if (!bothObj) {
      if (JSON.stringify(x) !== JSON.stringify(y) || typeof x !== typeof y) out.push({ path: p || '(root)', fetch: x, retryFetch: y });
      return;
    }
    const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
    for (const k of keys) walk(x[k], y[k], Array.isArray(x) ? `${p}[${k}]` : p ? `${p}.${k}` : k);
  };
  walk(a, b, path);
  return out;
}

/**
 * Waits until the server has no request open and none has arrived for
 * `quietMs` (so a late attempt, e.g. one sent after an abort, is seen).
 */
export async function settle(server, quietMs = 20, maxMs = 5_000) {
  const t0 = now();
  let seen = server.log.length;
  for (;;) {
    await sleep(quietMs);
    if (server.open === 0 && server.log.length === seen) return true;
    seen = server.log.length;
    if (now() - t0 > maxMs) return false;
  }
}

/**
 * Runs one row on both sides in turn and judges it. A row:
 *   name, group
 *   make(ctx) -> { args, signals?, values?, cleanup?(), ... }   per side
 *   act?(f, made, ctx) -> outcome                               default callAndDescribe
 *   extra?(made, outcome) -> object   compared too (after extraDelay ms)
 *   timing?(outcome) -> object        timing classes the SPEC demands, compared
 *   fetchOf?(made) -> the fetch to wrap (default globalThis.fetch)
 *   rfOptions?(made, wrapped) -> options for retryFetch (default { fetch: wrapped })
 *   quiet?  ms of silence that ends a side
 *   exception? { reason, differs: [path prefixes], check(a, b) -> problems[] }
 * `mutant` (the harness controls) replaces retryFetch on the second side by
 * a deliberately wrong wrapper of the fetch.
 */
export async function runRow(row, { server, retryFetch, sharedRf, mutant }) {
  const sides = {};
  const stray = server.log.splice(0);
  for (const side of ['fetch', 'retryFetch']) {
    server.reset();
    const ctx = { server, url: server.url, origin: server.origin, side };
    let outcome;
    let made;
    try {
      made = await row.make(ctx);
      const wrapped = row.fetchOf ? row.fetchOf(made) : globalThis.fetch;
      let f;
      if (side === 'fetch') f = wrapped;
      else if (mutant) f = mutant(wrapped);
      else if (row.rfOptions || row.fetchOf) f = retryFetch(...(row.rfOptions ? [row.rfOptions(made, wrapped)].filter((o) => o !== undefined) : [{ fetch: wrapped }]));
      else f = sharedRf;
      outcome = await (row.act ?? callAndDescribe)(f, made, ctx);
      if (row.timing) outcome.timing = row.timing(outcome);
      if (row.extra) {
        if (row.extraDelay) await sleep(row.extraDelay);
        outcome.extra = await row.extra(made, outcome);
      }
    } catch (e) {
      outcome = { harnessError: String(e?.stack ?? e) };
    }
    const settled = await settle(server, row.quiet ?? 20);
    const received = server.log.splice(0).map(describeReceived);
    try {
      await made?.cleanup?.();
    } catch (e) {
      outcome.cleanupError = String(e?.stack ?? e);
    }
    sides[side] = { outcome, received, ...(settled ? {} : { unsettled: 'requests still open after 5 s' }) };
  }
  const differences = diff(sides.fetch, sides.retryFetch);
  const problems = [];
  for (const s of ['fetch', 'retryFetch']) if (sides[s].outcome.harnessError) problems.push(`harness error on the ${s} side: ${sides[s].outcome.harnessError}`);
  let verdict;
  if (row.exception) {
    const allowed = row.exception.differs;
    const unexplained = differences.filter((d) => !allowed.some((p) => d.path === p || d.path.startsWith(`${p}.`) || d.path.startsWith(`${p}[`)));
    const checkProblems = row.exception.check(sides.fetch, sides.retryFetch);
    problems.push(...checkProblems);
    verdict = unexplained.length === 0 && problems.length === 0 ? 'exception' : 'fail';
    return { row, sides, differences: unexplained, problems, verdict, stray };
  }
  verdict = differences.length === 0 && problems.length === 0 ? 'pass' : 'fail';
  const timingOnly = verdict === 'fail' && problems.length === 0 && differences.every((d) => d.path.startsWith('outcome.timing'));
  return { row, sides, differences, problems, verdict, stray, timingOnly };
}
