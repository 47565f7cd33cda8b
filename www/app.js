// retry-wasm playground: plain JS + SVG, no framework.
//
// The retry decisions (attempts, delays, jitter, deadlines, state) all come from
// the library; this file only draws what the retryer reports through its store
// and callbacks, and plays a simulated flaky function.

const $ = (id) => document.getElementById(id);
const SVG_NS = 'http://www.w3.org/2000/svg';

/** Create an SVG element with attributes and optional text. */
function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

const fmtMs = (ms) => {
  if (!Number.isFinite(ms)) return '∞';
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms)} ms`;
};
const fmtAxis = (ms, step) => (step >= 1000 || ms >= 1000 ? `${+(ms / 1000).toFixed(3)}s` : `${+ms.toFixed(1)}ms`);
const pct = (x) => `${Math.round(x * 100)}%`;

function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** A small seeded PRNG (mulberry32) for the simulated function, so a seed replays the same run. */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------
// Loading the library

let lib;
try {
  lib = await import('retry-wasm/fetch');
} catch (err) {
  const box = $('load-error');
  box.hidden = false;
  box.textContent = `Could not load retry-wasm (${err && err.message}). Build it with "npm run build", then reload.`;
  $('engine').textContent = 'not loaded';
  throw err;
}
const { AsyncRetryer } = lib;
const MODULE_URL = import.meta.resolve('retry-wasm/fetch');
$('engine').textContent = 'engine: Rust → WebAssembly';
$('engine').classList.add('wasm');

/** Does this build accept these options? (SPEC §2 features land separately.) */
function accepts(opts) {
  try {
    new AsyncRetryer(async () => {}, opts);
    return true;
  } catch {
    return false;
  }
}
const FEATURES = {
  seed: accepts({ seed: 1 }),
  decorrelated: accepts({ backoff: 'decorrelated' }),
  fullJitter: accepts({ jitter: 'full' }),
  retryOnExecutionTimeout: accepts({ retryOnExecutionTimeout: true }),
  onGiveUp: accepts({ onGiveUp: () => {} }),
  layers: accepts({ innerRetries: false, nested: 'passthrough', onBackoff: () => {}, onGiveUp: () => {} }),
};
function markUnsupported(el, what) {
  el.disabled = true;
  if ('checked' in el && el.type === 'checkbox') el.checked = false;
  const label = el.closest('label') ?? el;
  label.classList.add('unsupported');
  label.title = `${what} is not in this build of retry-wasm yet`;
}
if (!FEATURES.seed) markUnsupported($('seed'), 'seed');
if (!FEATURES.fullJitter) markUnsupported($('jitterFull'), "jitter: 'full'");
if (!FEATURES.retryOnExecutionTimeout) markUnsupported($('retryOnExecutionTimeout'), 'retryOnExecutionTimeout');
if (!FEATURES.decorrelated) {
  const opt = $('backoff').querySelector('option[value=decorrelated]');
  opt.disabled = true;
  opt.textContent += ' (not in this build)';
}
if (!FEATURES.fullJitter) $('herdJitter').querySelector('option[value=full]').disabled = true;

// ---------------------------------------------------------------------------
// Reading the controls

const num = (id) => {
  const v = $(id).value.trim();
  return v === '' ? undefined : Number(v);
};
const numOrInf = (id) => {
  const v = $(id).value.trim();
  return v === '' ? Infinity : Number(v);
};

/** The retry options chosen in the form (without callbacks). */
function readPolicy() {
  const p = {
    maxAttempts: num('maxAttempts'),
    backoff: $('backoff').value,
    baseWait: num('baseWait'),
    maxWait: numOrInf('maxWait'),
    jitter: $('jitterFull').checked ? 'full' : Number($('jitter').value),
    maxExecutionTime: numOrInf('maxExecutionTime'),
    maxTotalExecutionTime: numOrInf('maxTotalExecutionTime'),
  };
  if (FEATURES.seed && num('seed') !== undefined) p.seed = num('seed');
  if (FEATURES.retryOnExecutionTimeout && $('retryOnExecutionTimeout').checked) p.retryOnExecutionTimeout = true;
  for (const k of Object.keys(p)) if (p[k] === undefined) delete p[k];
  return p;
}
function readFlaky() {
  return {
    failureRate: Number($('failureRate').value),
    latency: Number($('latency').value),
    hang: Number($('hang').value),
  };
}

function syncOutputs() {
  const full = $('jitterFull').checked;
  $('jitter').disabled = full;
  $('jitterOut').textContent = full ? 'full' : `±${pct(Number($('jitter').value))}`;
  $('failureRateOut').textContent = pct(Number($('failureRate').value));
  $('latencyOut').textContent = `${$('latency').value} ms`;
  $('hangOut').textContent = pct(Number($('hang').value));
  renderCode();
}

/** Appends text to `code`, in a span of class `cls` when given (highlighting). */
function writer(code) {
  return (text, cls) => {
    if (!cls) return code.append(text);
    const span = document.createElement('span');
    span.className = cls;
    span.textContent = text;
    code.append(span);
  };
}

function renderCode() {
  const p = readPolicy();
  const code = $('code');
  code.textContent = '';
  const add = writer(code);
  add('new ', 'k');
  add('AsyncRetryer(flaky, {\n');
  for (const [k, v] of Object.entries(p)) {
    add(`  ${k}: `);
    if (typeof v === 'string') add(`'${v}'`, 's');
    else if (typeof v === 'number') add(Number.isFinite(v) ? String(v) : 'Infinity', 'n');
    else add(String(v), 'k');
    add(',\n');
  }
  add('  onRetry, onError, onAbort, …', 'c');
  add('\n})');
}

// ---------------------------------------------------------------------------
// Waits: what the policy says about the delay after failed attempt n
// (SPEC §1 "Delays"; used only to label the timeline: the library decides).

function planWait(p, n) {
  const b = p.baseWait ?? 1000;
  const max = p.maxWait ?? Infinity;
  const backoff = p.backoff ?? 'exponential';
  if (backoff === 'decorrelated') return { exact: null, why: 'decorrelated jitter' };
  const raw = backoff === 'linear' ? b * n : backoff === 'fixed' ? b : b * 2 ** (n - 1);
  const nominal = Math.min(raw, max);
  const capped = raw > max ? ', capped by maxWait' : '';
  const j = p.jitter ?? 0;
  if (j === 'full') return { exact: null, nominal, why: `full jitter in [0, ${fmtMs(nominal)}]${capped}` };
  if (!j) return { exact: nominal, nominal, why: `${backoff} backoff${capped}` };
  return { exact: null, nominal, why: `backoff ${fmtMs(nominal)} ±${pct(j)} jitter${capped}` };
}

// ---------------------------------------------------------------------------
// A run: one retryer, one execute(), its attempts as the callbacks report them

let retryer = null;
let unsubscribe = null;
let run = null;
let runCounter = 0;
let storeUpdates = 0;

const ERRORS = ['HTTP 503 Service Unavailable', 'HTTP 502 Bad Gateway', 'ECONNRESET', 'HTTP 500 Internal Server Error'];
const isTimeout = (e) => e != null && e.name === 'TimeoutError';
const errText = (e) => {
  if (e == null) return String(e);
  if (isTimeout(e)) return 'TimeoutError';
  if (typeof e === 'object' && 'message' in e) return e.name && e.name !== 'Error' ? `${e.name}: ${e.message}` : e.message;
  return String(e);
};

function lastAttempt(r) {
  return r.attempts[r.attempts.length - 1];
}

/** The simulated flaky function. It honours the retryer's abort signal like fetch does. */
function makeFlaky(r, cfg, rand) {
  return function flaky() {
    const signal = r.retryer.getAbortSignal();
    const t = r.now();
    const prev = lastAttempt(r);
    if (prev && prev.waitStart != null && prev.waitEnd == null) prev.waitEnd = t;
    const a = { n: r.attempts.length + 1, start: t, end: null, outcome: 'running' };
    r.attempts.push(a);
    // Always draw four numbers, so a seed replays the same sequence of outcomes.
    const [u1, u2, u3, u4] = [rand(), rand(), rand(), rand()];
    const hang = u1 < cfg.hang;
    const fail = u2 < cfg.failureRate;
    const latency = Math.round(cfg.latency * (0.6 + 0.8 * u3));
    const message = ERRORS[Math.floor(u4 * ERRORS.length)];
    a.plan = hang ? 'hang' : fail ? 'fail' : 'ok';
    invalidate();
    return new Promise((resolve, reject) => {
      let timer;
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason ?? new DOMException('The operation was aborted.', 'AbortError'));
      };
      if (signal) {
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
      }
      if (hang) return; // never settles on its own
      timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        if (fail) reject(new Error(message));
        else resolve({ status: 200, attempt: a.n, latency });
      }, latency);
    });
  };
}

function callbacksFor(r) {
  const now = () => r.now();
  const cb = {
    onError(error) {
      const a = lastAttempt(r);
      if (!a) return;
      if (a.end == null) a.end = now();
      a.outcome = isTimeout(error) ? 'timeout' : 'failed';
      a.error = errText(error);
      invalidate();
    },
    onRetry(attempt) {
      const a = r.attempts[attempt - 1] ?? lastAttempt(r);
      if (!a) return;
      a.waitStart = now();
      a.wait = planWait(r.policy, attempt);
      invalidate();
    },
    onSuccess() {
      const a = lastAttempt(r);
      if (a) {
        if (a.end == null) a.end = now();
        a.outcome = 'ok';
      }
      invalidate();
    },
    onLastError() {
      r.failed = true;
      invalidate();
    },
    onAbort(reason) {
      r.abortReason = reason;
      const a = lastAttempt(r);
      if (a) {
        if (a.end == null) {
          a.end = now();
          a.outcome = reason === 'execution-timeout' ? 'timeout' : 'aborted';
          a.cut = reason;
        } else if (a.waitStart != null && a.waitEnd == null) {
          a.waitEnd = now();
          a.waitCut = reason;
        }
      }
      invalidate();
    },
    onExecutionTimeout() {
      const a = lastAttempt(r);
      if (a && a.end == null) {
        a.end = now();
        a.outcome = 'timeout';
      }
      invalidate();
    },
    onTotalExecutionTimeout() {
      r.totalTimeout = true;
      invalidate();
    },
  };
  if (FEATURES.onGiveUp) {
    cb.onGiveUp = (error, reason) => {
      r.giveUp = reason;
      invalidate();
    };
  }
  return cb;
}

/** State that may persist from one retryer to the next (SPEC §1 "State": initialState). */
function carriedState() {
  if (!retryer) return undefined;
  const { executionCount, lastExecutionTime, totalExecutionTime, lastResult, lastError } = retryer.store.state;
  return { executionCount, lastExecutionTime, totalExecutionTime, lastResult, lastError };
}

function showFormError(err) {
  const box = $('form-error');
  if (!err) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  box.textContent = `${err.name}: ${err.message}`;
}

async function startRun() {
  showFormError(null);
  const policy = readPolicy();
  const flaky = readFlaky();
  const id = runCounter + 1;
  const t0 = performance.now();
  const r = {
    id,
    policy,
    attempts: [],
    t0,
    now: () => performance.now() - t0,
    done: false,
    endAt: null,
  };
  const rand = policy.seed !== undefined ? mulberry32(policy.seed ^ 0x5bd1e995) : Math.random;
  let next;
  try {
    const initialState = carriedState();
    next = new AsyncRetryer(makeFlaky(r, flaky, rand), {
      ...policy,
      ...callbacksFor(r),
      ...(initialState ? { initialState } : {}),
      key: `playground-run-${id}`,
    });
  } catch (err) {
    showFormError(err);
    return;
  }
  // A new retryer per run (so each callback set belongs to one run and a seed replays
  // from its start); the persistent counters carry over through initialState.
  if (retryer && retryer.store.state.isExecuting) {
    if (run) run.superseded = true;
    retryer.abort();
  }
  runCounter = id;
  r.retryer = next;
  unsubscribe?.();
  retryer = next;
  run = r;
  unsubscribe = retryer.store.subscribe(() => renderState(retryer.store.state));
  renderState(retryer.store.state);
  invalidate();

  let result;
  let thrown;
  let threw = false;
  try {
    result = await retryer.execute(`request #${id}`);
  } catch (err) {
    threw = true;
    thrown = err;
  }
  r.done = true;
  r.endAt = r.now();
  r.result = result;
  if (threw) {
    r.failed = true;
    r.finalError = thrown;
  }
  if (retryer === next) $('abort').disabled = true;
  invalidate();
}

function summary(r) {
  if (!r) return { text: 'press Run to start a flow', state: 'none' };
  const took = fmtMs(r.done ? r.endAt : r.now());
  const n = r.attempts.length;
  if (!r.done) return { text: `run #${r.id} · attempt ${n || 1} · ${took}`, state: 'running' };
  const ok = r.attempts.find((a) => a.outcome === 'ok');
  let text;
  if (ok) text = `succeeded on attempt ${ok.n} after ${took}`;
  else if (r.superseded) text = `aborted by a new run after ${took}`;
  else if (r.abortReason === 'manual') text = `aborted after ${took}`;
  else if (r.totalTimeout || r.abortReason === 'total-timeout') text = `total deadline reached after ${took}`;
  else if (r.failed) text = `failed after ${n} attempt${n === 1 ? '' : 's'} (${giveUpText(r)}), ${took}`;
  else text = `ended after ${took}`;
  return { text: `run #${r.id} · ${text}`, state: 'done' };
}

function giveUpText(r) {
  if (r.giveUp) return r.giveUp;
  const a = lastAttempt(r);
  if (a && a.outcome === 'timeout') return 'execution-timeout';
  return 'attempts-exhausted';
}

// ---------------------------------------------------------------------------
// State panel

const STATE_FIELDS = [
  'status', 'currentAttempt', 'isExecuting', 'executionCount',
  'lastError', 'lastResult', 'lastExecutionTime', 'totalExecutionTime',
];
const stateCells = {};
const lastShown = {};
for (const f of STATE_FIELDS) {
  const box = document.createElement('div');
  const dt = document.createElement('dt');
  dt.textContent = f;
  const dd = document.createElement('dd');
  dd.dataset.field = f;
  box.append(dt, dd);
  $('state').append(box);
  stateCells[f] = { box, dd };
}

function showValue(field, v) {
  const dd = stateCells[field].dd;
  dd.textContent = '';
  dd.title = '';
  if (field === 'status') {
    const pill = document.createElement('span');
    pill.className = `pill ${v}`;
    pill.textContent = String(v);
    dd.append(pill);
    return String(v);
  }
  let text;
  let dim = false;
  if (v === undefined) {
    text = 'undefined';
    dim = true;
  } else if (field === 'lastError') {
    text = errText(v);
  } else if (field === 'lastResult') {
    text = typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  } else if (field === 'lastExecutionTime') {
    if (v === 0) {
      text = '0';
      dim = true;
    } else {
      const d = new Date(v);
      text = `${d.toLocaleTimeString('en-GB')}.${String(d.getMilliseconds()).padStart(3, '0')}`;
      dd.title = String(v);
    }
  } else if (field === 'totalExecutionTime') {
    text = `${Math.round(v)} ms`;
  } else {
    text = String(v);
  }
  dd.textContent = text;
  if (!dd.title) dd.title = text;
  if (dim) dd.classList.add('dim');
  else dd.classList.remove('dim');
  return text;
}

function renderState(state) {
  storeUpdates++;
  for (const f of STATE_FIELDS) {
    const shown = showValue(f, state[f]);
    if (lastShown[f] !== undefined && lastShown[f] !== shown) {
      const box = stateCells[f].box;
      box.classList.add('flash');
      requestAnimationFrame(() => requestAnimationFrame(() => box.classList.remove('flash')));
    }
    lastShown[f] = shown;
  }
  $('store-note').innerHTML = `live through <code>store.subscribe</code> · ${storeUpdates} update${storeUpdates === 1 ? '' : 's'}`;
  $('abort').disabled = !state.isExecuting;
}

// ---------------------------------------------------------------------------
// Timeline

let frame = 0;
function invalidate() {
  if (!frame) frame = requestAnimationFrame(tick);
}
function tick() {
  frame = 0;
  renderTimeline();
  if (run && !run.done) invalidate(); // keep the running bars growing
}

function rowText(a, r) {
  const t = r.now();
  const dur = (a.end ?? (r.done ? r.endAt : t)) - a.start;
  let s = `attempt ${a.n} — `;
  switch (a.outcome) {
    case 'running':
      s += r.done ? `abandoned after ${fmtMs(dur)}` : `running… ${fmtMs(dur)}${a.plan === 'hang' ? ' (hanging)' : ''}`;
      break;
    case 'ok':
      s += `succeeded after ${fmtMs(dur)}`;
      break;
    case 'failed':
      s += `failed after ${fmtMs(dur)} (${a.error})`;
      break;
    case 'timeout':
      s += `timed out after ${fmtMs(dur)} (maxExecutionTime)`;
      break;
    case 'aborted':
      s += `aborted after ${fmtMs(dur)} (${r.superseded ? 'new run' : a.cut})`;
      break;
    default:
      s += a.outcome;
  }
  if (a.waitStart != null) {
    const w = a.wait ?? { exact: null, why: 'backoff' };
    if (a.waitEnd == null && !r.done) {
      s += `, waiting ${w.exact != null ? fmtMs(w.exact) : '…'} (${w.why})`;
    } else if (a.waitCut === 'total-timeout' && (a.waitEnd ?? r.endAt) - a.waitStart < 5) {
      s += ', no wait (it would end past maxTotalExecutionTime)';
    } else if (a.waitCut) {
      const reason = a.waitCut === 'manual' && r.superseded ? 'new run' : a.waitCut;
      s += `, wait cut short after ${fmtMs((a.waitEnd ?? r.endAt) - a.waitStart)} (${reason})`;
    } else if (a.waitEnd == null) {
      s += `, no wait (${r.totalTimeout ? 'the wait would cross the total deadline' : 'flow ended'})`;
    } else {
      s += `, waited ${fmtMs(w.exact ?? a.waitEnd - a.waitStart)} (${w.why})`;
    }
  }
  return s;
}

function finalRowText(r) {
  if (!r.done) return null;
  const a = lastAttempt(r);
  if (!a || a.outcome === 'ok') return null;
  if (r.superseded) return 'flow aborted: a new run started';
  if (r.abortReason === 'manual') return 'flow aborted: abort() was called';
  if (r.totalTimeout || r.abortReason === 'total-timeout') {
    return a.waitStart != null && (a.waitCut === 'total-timeout' || a.waitEnd == null)
      ? 'total deadline: the next wait would end past maxTotalExecutionTime, so the flow stops now'
      : 'total deadline reached (maxTotalExecutionTime)';
  }
  if (r.failed) {
    const why = giveUpText(r);
    const n = r.attempts.length;
    const explain = {
      'attempts-exhausted': `all ${n} attempt${n === 1 ? '' : 's'} failed`,
      'execution-timeout': r.policy.retryOnExecutionTimeout
        ? 'the last attempt timed out and none remain'
        : 'an attempt timed out, which ends the flow unless retryOnExecutionTimeout is set',
      'not-retryable': 'shouldRetry said no',
      'budget-exhausted': 'the retry budget is spent',
    }[why];
    return `gave up (${why})${explain ? `: ${explain}` : ''}`;
  }
  return null;
}

function renderTimeline() {
  const r = run;
  const st = summary(r);
  const status = $('run-status');
  status.textContent = st.text;
  status.dataset.state = st.state;

  const svg = $('tl-chart');
  const rows = $('tl-rows');
  svg.replaceChildren();
  const W = Math.max(svg.clientWidth || 860, 300);
  const maxAttempts = r ? r.policy.maxAttempts ?? 3 : Number($('maxAttempts').value) || 3;
  const lanes = Math.max(Math.min(maxAttempts, 8), r ? r.attempts.length : 0, 1);
  const laneH = 22;
  const top = 22;
  const H = top + lanes * laneH + 6;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.style.height = `${H}px`;
  const defs = s('defs');
  const pat = s('pattern', { id: 'hatch', width: 5, height: 5, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' });
  pat.append(s('rect', { width: 5, height: 5, fill: '#eef1f6' }), s('line', { x1: 0, y1: 0, x2: 0, y2: 5, stroke: '#b8c1d3', 'stroke-width': 1.6 }));
  defs.append(pat);
  svg.append(defs);

  if (!r) {
    rows.replaceChildren();
    svg.append(s('text', { x: W / 2, y: H / 2 + 4, 'text-anchor': 'middle', class: 'empty' }, 'attempts and waits appear here'));
    return;
  }

  const left = 78;
  const right = 12;
  const plotW = W - left - right;
  const now = r.done ? r.endAt : r.now();
  const total = r.policy.maxTotalExecutionTime ?? Infinity;
  let domain = Math.max(now, 400);
  if (Number.isFinite(total) && total <= domain * 1.6) domain = Math.max(domain, total);
  const step = niceStep(domain / 8);
  domain = Math.ceil((domain * 1.02) / step) * step;
  const x = (t) => left + (Math.min(t, domain) / domain) * plotW;

  // grid + axis
  for (let t = 0; t <= domain + 1e-6; t += step) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: top - 4, y2: H - 4, class: 'grid' }));
    const anchor = t === 0 ? 'start' : x(t) > W - right - 20 ? 'end' : 'middle';
    svg.append(s('text', { x: x(t), y: 12, 'text-anchor': anchor, class: 'axis' }, fmtAxis(t, step)));
  }
  // lanes
  for (let i = 0; i < lanes; i++) {
    const y = top + i * laneH;
    const future = i >= r.attempts.length;
    svg.append(s('rect', { x: left, y: y + 3, width: plotW, height: laneH - 6, rx: 3, class: 'lane' }));
    svg.append(s('text', { x: 4, y: y + laneH / 2 + 4, class: `lane-label${future ? ' future' : ''}` }, `attempt ${i + 1}`));
  }
  // bars
  r.attempts.forEach((a, i) => {
    const y = top + i * laneH + 4;
    const h = laneH - 8;
    const end = a.end ?? now;
    const bw = Math.max(x(end) - x(a.start), 2);
    svg.append(s('rect', { x: x(a.start), y, width: bw, height: h, rx: 2, class: `fill-${a.outcome}` }, undefined));
    if (bw > 46) {
      svg.append(s('text', { x: x(a.start) + 5, y: y + h - 4, class: 'bar-label' }, fmtMs(end - a.start)));
    }
    if (a.waitStart != null) {
      const wEnd = a.waitEnd ?? (r.done ? a.waitStart : now);
      const ww = Math.max(x(wEnd) - x(a.waitStart), 1);
      svg.append(s('rect', { x: x(a.waitStart), y: y + 2, width: ww, height: h - 4, rx: 2, class: 'fill-wait' }));
      const label = a.waitCut ? `wait cut (${a.waitCut})` : `wait ${fmtMs(wEnd - a.waitStart)}`;
      const lx = x(a.waitStart) + ww + 5;
      if (ww > 70) svg.append(s('text', { x: x(a.waitStart) + 5, y: y + h - 4, class: 'wait-label' }, label));
      else if (lx < W - 90) svg.append(s('text', { x: lx, y: y + h - 4, class: 'wait-label' }, label));
    }
  });
  // total deadline and now
  if (Number.isFinite(total) && total <= domain) {
    svg.append(s('line', { x1: x(total), x2: x(total), y1: top - 4, y2: H - 2, class: 'deadline' }));
    svg.append(s('text', { x: x(total) - 4, y: H - 8, 'text-anchor': 'end', class: 'deadline-label' }, 'maxTotalExecutionTime'));
  }
  if (!r.done) svg.append(s('line', { x1: x(now), x2: x(now), y1: top - 4, y2: H - 2, class: 'now' }));

  // text rows
  const items = r.attempts.map((a) => {
    const li = document.createElement('li');
    li.className = `tl-row ${a.outcome}`;
    li.dataset.attempt = String(a.n);
    li.textContent = rowText(a, r);
    return li;
  });
  const fin = finalRowText(r);
  if (fin) {
    const li = document.createElement('li');
    li.className = 'final';
    li.textContent = fin;
    items.push(li);
  }
  rows.replaceChildren(...items);
}

// ---------------------------------------------------------------------------
// Thundering herd

/** Retry arrival times (attempts 2..n of every client) from the documented formula. */
function herdByFormula(clients, p) {
  const rand = p.seed !== undefined ? mulberry32(p.seed) : Math.random;
  const times = [];
  const b = p.baseWait ?? 1000;
  const max = p.maxWait ?? Infinity;
  for (let c = 0; c < clients; c++) {
    let t = 0;
    let prev = b;
    for (let n = 1; n < p.maxAttempts; n++) {
      let d;
      if (p.backoff === 'decorrelated') {
        d = Math.floor(Math.min(max, b + rand() * (3 * prev - b)));
        prev = d;
      } else {
        const raw = p.backoff === 'linear' ? b * n : p.backoff === 'fixed' ? b : b * 2 ** (n - 1);
        const nominal = Math.min(raw, max);
        if (p.jitter === 'full') d = Math.floor(rand() * nominal);
        else if (p.jitter) d = Math.max(0, nominal + Math.floor(nominal * p.jitter * (rand() * 2 - 1)));
        else d = nominal;
      }
      t += d;
      times.push(t);
    }
  }
  return times;
}

let worker = null;
let workerSeq = 0;
const pending = new Map();
function herdInWorker(job) {
  if (!worker) {
    worker = new Worker(new URL('./herd-worker.js', import.meta.url), { type: 'module' });
    worker.onmessage = (e) => {
      const p = pending.get(e.data.id);
      if (!p) return;
      pending.delete(e.data.id);
      if (e.data.error) p.reject(new Error(e.data.error));
      else p.resolve(e.data);
    };
    worker.onerror = (e) => {
      e.preventDefault();
      for (const p of pending.values()) p.reject(new Error(e.message || 'worker failed'));
      pending.clear();
      worker?.terminate();
      worker = null;
    };
  }
  const id = ++workerSeq;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, moduleUrl: MODULE_URL, ...job });
    setTimeout(() => {
      if (pending.delete(id)) reject(new Error('herd simulation took too long'));
    }, 10_000);
  });
}

function herdPolicies() {
  const p = readPolicy();
  const maxAttempts = Math.min(Math.max(Math.floor(p.maxAttempts ?? 3), 2), 10);
  const baseWait = p.baseWait ?? 1000;
  const maxWait = p.maxWait ?? Infinity;
  const hj = $('herdJitter').value;
  const jitter = hj === 'full' ? 'full' : Number(hj);
  const plainBackoff = p.backoff === 'decorrelated' ? 'exponential' : p.backoff;
  const plain = { maxAttempts, backoff: plainBackoff, baseWait, maxWait, jitter: 0 };
  const jittered = p.backoff === 'decorrelated' ? { maxAttempts, backoff: 'decorrelated', baseWait, maxWait } : { ...plain, jitter };
  if (p.seed !== undefined) jittered.seed = p.seed;
  return { plain, jittered };
}

let herdToken = 0;
async function updateHerd() {
  const token = ++herdToken;
  const clients = Math.min(Math.max(Math.floor(num('clients') ?? 500), 1), 5000);
  const { plain, jittered } = herdPolicies();
  const t0 = performance.now();
  let plainTimes;
  let jitterTimes;
  let source;
  try {
    const res = await herdInWorker({ clients, policies: [plain, jittered], seedSupported: FEATURES.seed });
    [plainTimes, jitterTimes] = res.times;
    source = `computed by retry-wasm itself: ${clients.toLocaleString('en')} retryers in a Web Worker under a fake clock, ${Math.round(performance.now() - t0)} ms`;
  } catch (err) {
    plainTimes = herdByFormula(clients, plain);
    jitterTimes = herdByFormula(clients, jittered);
    source = `computed from the documented delay formula (worker unavailable: ${err.message})`;
  }
  if (token !== herdToken) return;
  drawHerd(clients, plain, jittered, plainTimes, jitterTimes, source);
}

function binCounts(times, bin, bins) {
  const counts = new Array(bins).fill(0);
  for (const t of times) counts[Math.min(Math.floor(t / bin), bins - 1)]++;
  return counts;
}

function drawHerd(clients, plain, jittered, plainTimes, jitterTimes, source) {
  const maxT = Math.max(1, ...plainTimes, ...jitterTimes);
  const bin = niceStep(maxT / 56);
  const bins = Math.floor(maxT / bin) + 1;
  const a = binCounts(plainTimes, bin, bins);
  const b = binCounts(jitterTimes, bin, bins);
  const peakA = Math.max(...a);
  const peakB = Math.max(...b);
  const yMax = Math.max(peakA, peakB, 1);
  histogram($('hist-plain'), a, { bin, bins, yMax, cls: 'bar-plain', color: 'var(--failed)' });
  histogram($('hist-jitter'), b, { bin, bins, yMax, cls: 'bar-jitter', color: 'var(--accent)' });
  const jLabel = jittered.backoff === 'decorrelated' ? 'decorrelated jitter' : jittered.jitter === 'full' ? 'full jitter' : `±${pct(jittered.jitter)} jitter`;
  $('cap-plain').innerHTML = '';
  $('cap-plain').append(`without jitter (${plain.backoff})`, peakSpan(peakA, bin));
  $('cap-jitter').innerHTML = '';
  $('cap-jitter').append(`with ${jLabel}`, peakSpan(peakB, bin));
  const ratio = peakB > 0 ? peakA / peakB : 0;
  const note = $('herd-note');
  note.textContent = '';
  note.append(
    `${clients.toLocaleString('en')} clients hit an outage at t = 0 and each retries up to ${plain.maxAttempts - 1} times. ` +
      `Without jitter they all come back in the same instant, ${peakA.toLocaleString('en')} requests per ${fmtMs(bin)}; ` +
      `with ${jLabel} the same retries spread out and the peak drops to ${peakB.toLocaleString('en')}` +
      (ratio >= 1.5 ? ` (${ratio.toFixed(ratio >= 10 ? 0 : 1)}× lower), so a recovering server is not knocked over again. ` : '. '),
  );
  const src = document.createElement('span');
  src.className = 'src';
  src.textContent = `Retry times ${source}.`;
  note.append(src);
  const jp = readPolicy();
  $('herd-policy').textContent = `backoff ${jp.backoff}, baseWait ${fmtMs(jp.baseWait ?? 1000)}, maxWait ${fmtMs(jp.maxWait ?? Infinity)}, maxAttempts ${plain.maxAttempts} (from the policy)`;
}

function peakSpan(peak, bin) {
  const span = document.createElement('span');
  span.className = 'peak';
  span.textContent = `peak ${peak.toLocaleString('en')} / ${fmtMs(bin)}`;
  return span;
}

function histogram(svg, counts, { bin, bins, yMax, cls, color }) {
  svg.replaceChildren();
  const W = Math.max(svg.clientWidth || 420, 200);
  const H = 130;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const left = 38;
  const right = 8;
  const top = 10;
  const bottom = 20;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const domain = bins * bin;
  const x = (t) => left + (t / domain) * plotW;
  const y = (c) => top + plotH - (c / yMax) * plotH;
  // y grid
  for (const c of [0, yMax / 2, yMax]) {
    svg.append(s('line', { x1: left, x2: W - right, y1: y(c), y2: y(c), class: 'grid' }));
    svg.append(s('text', { x: left - 5, y: y(c) + 3.5, 'text-anchor': 'end', class: 'axis' }, String(Math.round(c))));
  }
  // x axis ticks
  const tickStep = niceStep(domain / 7);
  for (let t = 0; t <= domain + 1e-6; t += tickStep) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: top + plotH, y2: top + plotH + 4, stroke: '#c0c6d2' }));
    const anchor = t === 0 ? 'start' : x(t) > W - right - 14 ? 'end' : 'middle';
    svg.append(s('text', { x: x(t), y: H - 5, 'text-anchor': anchor, class: 'axis' }, fmtAxis(t, tickStep)));
  }
  // bars
  const bw = plotW / bins;
  counts.forEach((c, i) => {
    if (!c) return;
    const h = Math.max((c / yMax) * plotH, 1);
    const rect = s('rect', { x: left + i * bw + 0.5, y: top + plotH - h, width: Math.max(bw - 1, 1), height: h, class: `bar ${cls}` });
    rect.append(s('title', {}, `${c} request${c === 1 ? '' : 's'} between ${fmtMs(i * bin)} and ${fmtMs((i + 1) * bin)}`));
    svg.append(rect);
  });
  svg.append(s('line', { x1: left, x2: W - right, y1: top + plotH, y2: top + plotH, stroke: '#98a2b3' }));
  // peak marker
  const peak = Math.max(...counts);
  svg.append(s('line', { x1: left, x2: W - right, y1: y(peak), y2: y(peak), class: 'peak-line', stroke: color }));
}

// ---------------------------------------------------------------------------
// Layers: an app retryer over an SDK retryer over one flaky backend, run
// twice at once, with innerRetries on (left) and off on the app's (right).

const LY_ERROR = 'HTTP 503';
const LY_SIDES = ['left', 'right'];
let lyRuns = null; // { left, right } of the last click
let lyFrame = 0;
let lyRunCount = 0;

function readLayers() {
  const int = (id, lo, hi, dflt) => {
    const v = Math.floor(Number($(id).value));
    return Number.isFinite(v) ? Math.min(Math.max(v, lo), hi) : dflt;
  };
  return {
    failureRate: Number($('lyFail').value),
    latency: int('lyLatency', 0, 2000, 60),
    inner: { maxAttempts: int('lyInnerAttempts', 1, 10, 3), baseWait: int('lyInnerWait', 0, 5000, 100) },
    outer: { maxAttempts: int('lyOuterAttempts', 1, 10, 3), baseWait: int('lyOuterWait', 0, 5000, 300) },
  };
}

function syncLayers() {
  const rate = Number($('lyFail').value);
  $('lyFailOut').textContent = rate >= 1 ? 'always' : rate <= 0 ? 'never' : pct(rate);
  const cfg = readLayers();
  for (const side of LY_SIDES) renderLayerCode(side, cfg);
}

function renderLayerCode(side, cfg) {
  const code = $(`ly-code-${side}`);
  code.textContent = '';
  const add = writer(code);
  const opts = (o, extra) => {
    add('  { maxAttempts: ');
    add(String(o.maxAttempts), 'n');
    add(', baseWait: ');
    add(String(o.baseWait), 'n');
    if (extra) {
      add(', innerRetries: ');
      add('false', 'k');
    }
    add(' })');
  };
  add('const', 'k');
  add(' sdk = ');
  add('new', 'k');
  add(' AsyncRetryer(backend,\n');
  opts(cfg.inner, false);
  add('\n');
  add('const', 'k');
  add(' app = ');
  add('new', 'k');
  add(' AsyncRetryer((req) => sdk.execute(req),\n');
  opts(cfg.outer, side === 'right');
}

/** One side: two fresh retryers over a backend that counts its calls. */
function runLayerSide(side, cfg, seed) {
  const t0 = performance.now();
  const r = { side, cfg, calls: 0, outer: [], done: false, now: () => performance.now() - t0 };
  const rand = mulberry32(seed); // the same draws on both sides: call n fails on both or on neither
  const current = () => r.outer[r.outer.length - 1];

  const backend = () => {
    r.calls++;
    const o = current();
    const a = { n: o.inner.length + 1, call: r.calls, start: r.now(), outcome: 'running' };
    const prev = o.inner[o.inner.length - 1];
    if (prev?.wait) prev.wait.end = a.start;
    o.inner.push(a);
    const fails = rand() < cfg.failureRate;
    return new Promise((resolve, reject) => {
      setTimeout(() => {
        a.end = r.now();
        if (fails) {
          a.outcome = 'failed';
          reject(new Error(`${LY_ERROR} Service Unavailable`));
        } else {
          a.outcome = 'ok';
          resolve({ status: 200, call: a.call });
        }
      }, cfg.latency);
    });
  };
  const common = { backoff: 'exponential', jitter: 0 };
  const sdk = new AsyncRetryer(backend, {
    ...common,
    ...cfg.inner,
    key: `layers-sdk-${side}`,
    onRetry: (attempt) => {
      const a = current().inner[attempt - 1];
      if (a) a.onRetry = true;
    },
    onBackoff: ({ delay, attempt }) => {
      const a = current().inner[attempt - 1];
      if (a) a.wait = { start: r.now(), delay };
    },
    onGiveUp: (error, reason) => {
      current().giveUp = reason;
    },
  });
  // The app's function calls the SDK before any await: in a browser, that is
  // what makes the SDK's flow count as started inside the app's attempt.
  const app = new AsyncRetryer(
    (req) => {
      const o = { n: r.outer.length + 1, start: r.now(), inner: [], outcome: 'running' };
      const prev = r.outer[r.outer.length - 1];
      if (prev?.wait) prev.wait.end = o.start;
      r.outer.push(o);
      const p = sdk.execute(req);
      p.then(
        () => {
          o.end = r.now();
          o.outcome = 'ok';
        },
        (err) => {
          o.end = r.now();
          o.outcome = 'failed';
          o.error = err;
        },
      );
      return p;
    },
    {
      ...common,
      ...cfg.outer,
      ...(side === 'right' ? { innerRetries: false } : {}),
      key: `layers-app-${side}`,
      onRetry: (attempt) => {
        const o = r.outer[attempt - 1];
        if (o) o.onRetry = true;
      },
      onBackoff: ({ delay, attempt }) => {
        const o = r.outer[attempt - 1];
        if (o) o.wait = { start: r.now(), delay };
      },
      onGiveUp: (error, reason) => {
        r.giveUp = reason;
      },
    },
  );
  r.promise = app.execute('GET /orders').then(
    (result) => {
      r.result = result;
    },
    (err) => {
      r.failed = true;
      r.error = err;
    },
  ).finally(() => {
    r.done = true;
    r.endAt = r.now();
  });
  return r;
}

async function runLayers() {
  const cfg = readLayers();
  const seed = (Math.random() * 2 ** 32) >>> 0;
  $('lyRun').disabled = true;
  $('ly-note').textContent = 'running both sides at the same time…';
  lyRuns = { id: ++lyRunCount, left: runLayerSide('left', cfg, seed), right: runLayerSide('right', cfg, seed) };
  const runs = lyRuns;
  invalidateLayers();
  await Promise.all([runs.left.promise, runs.right.promise]);
  if (runs !== lyRuns) return;
  $('lyRun').disabled = false;
  invalidateLayers();
}

function invalidateLayers() {
  if (!lyFrame) lyFrame = requestAnimationFrame(tickLayers);
}
function tickLayers() {
  lyFrame = 0;
  renderLayers();
  if (lyRuns && (!lyRuns.left.done || !lyRuns.right.done)) invalidateLayers();
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** "app 3 × SDK 3" when every app attempt ran the SDK the same number of times. */
function layerMath(r) {
  const per = r.outer.map((o) => o.inner.length);
  if (!per.length) return '';
  if (per.every((n) => n === per[0])) return `= app ${per.length} × SDK ${per[0]}`;
  return `= ${per.join(' + ')} (SDK attempts per app attempt)`;
}

function renderLayers() {
  const runs = lyRuns;
  if (!runs) return;
  const domain0 = Math.max(
    ...LY_SIDES.map((k) => (runs[k].done ? runs[k].endAt : runs[k].now())),
    400,
  );
  document.querySelector('[data-testid="layers"]').dataset.run = String(runs.id);
  for (const side of LY_SIDES) {
    const r = runs[side];
    const fig = document.querySelector(`[data-testid="layers-${side}"]`);
    fig.dataset.state = r.done ? 'done' : 'running';
    $(`ly-calls-${side}`).textContent = String(r.calls);
    $(`ly-word-${side}`).textContent = r.calls === 1 ? 'backend call' : 'backend calls';
    $(`ly-math-${side}`).textContent = layerMath(r);
    drawLayerChart($(`ly-chart-${side}`), r, domain0);
    $(`ly-rows-${side}`).replaceChildren(...layerRows(r));
    const out = $(`ly-outcome-${side}`);
    out.className = `ly-outcome${r.done ? (r.failed ? ' failed' : ' ok') : ''}`;
    const took = fmtMs(r.done ? r.endAt : r.now());
    out.textContent = !r.done
      ? `running… ${took}`
      : r.failed
        ? `execute() rejected after ${took}: ${errText(r.error)}`
        : `execute() resolved after ${took} (backend call #${r.result?.call})`;
  }
  const { left, right } = runs;
  const note = $('ly-note');
  if (!left.done || !right.done) return;
  const cfg = left.cfg;
  const nested = right.outer.filter((o) => o.giveUp === 'nested').length;
  if (left.calls === 1 && right.calls === 1 && !left.failed && !right.failed) {
    note.textContent = 'The backend answered the first call, so neither layer retried: 1 request on each side. Raise the failure rate to see the layers multiply.';
    return;
  }
  note.textContent =
    `Same backend, same policies: with the SDK's retries left on, the backend got ${plural(left.calls, 'request')}` +
    (left.calls > right.calls ? ` (retries multiply: up to ${cfg.outer.maxAttempts} × ${cfg.inner.maxAttempts})` : '') +
    `; with innerRetries: false on the app's retryer it got ${plural(right.calls, 'request')}, ` +
    (nested
      ? `because the SDK made one attempt per app attempt and handed each failure straight back (onGiveUp 'nested', ${plural(nested, 'time')}), so only the app retried.`
      : 'as only the app retries.');
}

function layerRows(r) {
  const li = (cls, text) => {
    const el = document.createElement('li');
    el.className = cls;
    const t = document.createElement('span');
    t.textContent = text;
    el.append(t);
    return el;
  };
  /** The callbacks that ran after a failed attempt, as chips. */
  const callbacks = (el, x) => {
    if (!x.wait) return;
    const chips = [...(x.onRetry ? ['onRetry'] : []), `onBackoff ${fmtMs(x.wait.delay)}`];
    for (const c of chips) {
      const chip = document.createElement('span');
      chip.className = 'cb';
      chip.textContent = c;
      el.append(chip);
    }
  };
  const items = [];
  for (const o of r.outer) {
    const what = o.outcome === 'running' ? 'running…' : o.outcome === 'ok' ? 'succeeded' : `failed (${LY_ERROR})`;
    const row = li(`ly-outer ${o.outcome}`, `app attempt ${o.n} — ${what}`);
    callbacks(row, o);
    const sub = document.createElement('ol');
    for (const a of o.inner) {
      const res = a.outcome === 'running' ? 'waiting…' : a.outcome === 'ok' ? '200 OK' : LY_ERROR.replace('HTTP ', '');
      const el = li(`ly-inner ${a.outcome}`, `SDK attempt ${a.n} — call #${a.call}: ${res}`);
      callbacks(el, a);
      sub.append(el);
    }
    if (o.giveUp) {
      const why = o.giveUp === 'nested' ? ': passed straight back' : '';
      const g = li(`ly-giveup${o.giveUp === 'nested' ? ' nested' : ''}`, `SDK onGiveUp('${o.giveUp}')${why}`);
      g.dataset.reason = o.giveUp;
      sub.append(g);
    }
    row.append(sub);
    items.push(row);
  }
  if (r.done && r.giveUp) {
    const g = li('ly-giveup final', `app onGiveUp('${r.giveUp}')`);
    g.dataset.reason = r.giveUp;
    items.push(g);
  }
  return items;
}

function drawLayerChart(svg, r, domain0) {
  svg.replaceChildren();
  const W = Math.max(svg.clientWidth || 420, 240);
  const laneH = 22;
  const top = 20;
  const H = top + 2 * laneH + 4;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const defs = s('defs');
  const pat = s('pattern', { id: `hatch-${r.side}`, width: 5, height: 5, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' });
  pat.append(s('rect', { width: 5, height: 5, fill: '#eef1f6' }), s('line', { x1: 0, y1: 0, x2: 0, y2: 5, stroke: '#b8c1d3', 'stroke-width': 1.6 }));
  defs.append(pat);
  svg.append(defs);
  const left = 38;
  const right = 8;
  const plotW = W - left - right;
  const step = niceStep(domain0 / 5);
  const domain = Math.ceil((domain0 * 1.02) / step) * step;
  const x = (t) => left + (Math.min(t, domain) / domain) * plotW;
  const now = r.done ? r.endAt : r.now();
  for (let t = 0; t <= domain + 1e-6; t += step) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: top - 4, y2: H - 2, class: 'grid' }));
    const anchor = t === 0 ? 'start' : x(t) > W - right - 20 ? 'end' : 'middle';
    svg.append(s('text', { x: x(t), y: 11, 'text-anchor': anchor, class: 'axis' }, fmtAxis(t, step)));
  }
  const lanes = [
    ['app', r.outer],
    ['SDK', r.outer.flatMap((o) => o.inner)],
  ];
  lanes.forEach(([name, attempts], i) => {
    const y = top + i * laneH;
    svg.append(s('rect', { x: left, y: y + 3, width: plotW, height: laneH - 6, rx: 3, class: 'lane' }));
    svg.append(s('text', { x: 2, y: y + laneH / 2 + 4, class: 'lane-label' }, name));
    for (const a of attempts) {
      const end = a.end ?? now;
      const rect = s('rect', { x: x(a.start), y: y + 4, width: Math.max(x(end) - x(a.start), 2), height: laneH - 8, rx: 2, class: `fill-${a.outcome}` });
      rect.append(s('title', {}, `${name} attempt ${a.n}${a.call ? ` (backend call #${a.call})` : ''}: ${a.outcome}`));
      svg.append(rect);
      if (a.wait) {
        const wEnd = a.wait.end ?? (r.done ? a.wait.start : now);
        svg.append(s('rect', { x: x(a.wait.start), y: y + 6, width: Math.max(x(wEnd) - x(a.wait.start), 1), height: laneH - 12, rx: 2, class: 'fill-wait', style: `fill: url(#hatch-${r.side})` }));
      }
    }
  });
  if (!r.done) svg.append(s('line', { x1: x(now), x2: x(now), y1: top - 4, y2: H - 2, class: 'now' }));
}

function initLayers() {
  const box = document.querySelector('[data-testid="layers"]');
  if (!FEATURES.layers) {
    box.classList.add('unsupported');
    $('ly-note').textContent = 'innerRetries and onBackoff are not in this build of retry-wasm yet.';
    return;
  }
  for (const el of box.querySelectorAll('.layers-controls input')) el.addEventListener('input', syncLayers);
  $('lyRun').addEventListener('click', () => runLayers());
  syncLayers();
  for (const side of LY_SIDES) {
    const svg = $(`ly-chart-${side}`);
    const W = Math.max(svg.clientWidth || 420, 240);
    svg.setAttribute('viewBox', `0 0 ${W} 68`);
    svg.replaceChildren(s('text', { x: W / 2, y: 38, 'text-anchor': 'middle', class: 'empty' }, 'app and SDK attempts appear here'));
  }
  $('lyRun').disabled = false;
}

// ---------------------------------------------------------------------------
// Spans: one retried call under a real OpenTelemetry tracer provider, through
// retry-wasm/otel, drawn as the span tree the in-memory exporter received.

const SP_KEY = 'load-orders';
const SP_URL = 'https://shop.example/api/orders';
let sp = null; // { api, provider, exporter, tracer, instrumentRetries, stop } once loaded
let spRunCount = 0;

/**
 * The smallest context manager: the active context follows synchronous
 * code only (like @opentelemetry/sdk-trace-web's StackContextManager).
 */
function spStackContextManager(ROOT_CONTEXT) {
  let active = ROOT_CONTEXT;
  const mgr = {
    active: () => active,
    with(ctx, fn, thisArg, ...args) {
      const prev = active;
      active = ctx ?? ROOT_CONTEXT;
      try {
        return fn.call(thisArg, ...args);
      } finally {
        active = prev;
      }
    },
    bind(ctx, target) {
      if (typeof target !== 'function') return target;
      return function bound(...args) {
        return mgr.with(ctx, () => target.apply(this, args));
      };
    },
    enable: () => mgr,
    disable() {
      active = ROOT_CONTEXT;
      return mgr;
    },
  };
  return mgr;
}

function readSpans() {
  const int = (id, lo, hi, dflt) => {
    const v = Math.floor(Number($(id).value));
    return Number.isFinite(v) ? Math.min(Math.max(v, lo), hi) : dflt;
  };
  return {
    fails: int('spFails', 0, 10, 2),
    maxAttempts: int('spAttempts', 1, 10, 3),
    baseWait: int('spWait', 0, 2000, 100),
    latency: int('spLatency', 0, 2000, 60),
  };
}

function renderSpansCode() {
  const cfg = readSpans();
  const code = $('sp-code');
  code.textContent = '';
  const add = writer(code);
  add('import', 'k');
  add(' { instrumentRetries } ');
  add('from', 'k');
  add(" 'retry-wasm/otel'", 's');
  add(';\n');
  add('const', 'k');
  add(' exporter = ');
  add('new', 'k');
  add(' InMemorySpanExporter();\n');
  add('const', 'k');
  add(' tracerProvider = ');
  add('new', 'k');
  add(' BasicTracerProvider({\n  spanProcessors: [');
  add('new', 'k');
  add(' SimpleSpanProcessor(exporter)],\n});\n');
  add('instrumentRetries({ tracerProvider });\n\n');
  add('const', 'k');
  add(' orders = ');
  add('new', 'k');
  add(' AsyncRetryer(getOrders, {\n  key: ');
  add(`'${SP_KEY}'`, 's');
  add(', maxAttempts: ');
  add(String(cfg.maxAttempts), 'n');
  add(', baseWait: ');
  add(String(cfg.baseWait), 'n');
  add(', jitter: ');
  add('0', 'n');
  add(',\n});\n');
  add(`// getOrders: a GET of ${cfg.latency} ms; the first ${cfg.fails} get a 503`, 'c');
}

async function loadSpans() {
  const [otel, api, sdk] = await Promise.all([import('retry-wasm/otel'), import('@opentelemetry/api'), import('@opentelemetry/sdk-trace-base')]);
  const exporter = new sdk.InMemorySpanExporter();
  const provider = new sdk.BasicTracerProvider({ spanProcessors: [new sdk.SimpleSpanProcessor(exporter)] });
  api.context.setGlobalContextManager(spStackContextManager(api.ROOT_CONTEXT));
  return { api, provider, exporter, tracer: provider.getTracer('playground'), instrumentRetries: otel.instrumentRetries, stop: null };
}

/** The flaky backend of the panel: every call is a simulated GET with its own client span. */
function spGetOrders(cfg, state) {
  const { api, tracer } = sp;
  return function getOrders() {
    const n = ++state.calls;
    // Started before any await: the attempt's span is the active context here.
    const span = tracer.startSpan('GET', {
      kind: api.SpanKind.CLIENT,
      attributes: { 'http.request.method': 'GET', 'url.full': SP_URL },
    });
    return new Promise((resolve, reject) => {
      setTimeout(() => {
        if (n <= cfg.fails) {
          span.setAttributes({ 'http.response.status_code': 503, 'error.type': '503' });
          span.setStatus({ code: api.SpanStatusCode.ERROR });
          span.end();
          const error = Object.assign(new Error('HTTP 503 Service Unavailable'), { name: 'HTTPError', status: 503, response: { status: 503 } });
          reject(error);
        } else {
          span.setAttribute('http.response.status_code', 200);
          span.end();
          resolve({ status: 200, orders: 3, call: n });
        }
      }, cfg.latency);
    });
  };
}

async function runSpans() {
  const cfg = readSpans();
  const box = document.querySelector('[data-testid="spans"]');
  $('spRun').disabled = true;
  box.dataset.state = 'running';
  $('sp-note').textContent = 'running…';
  const id = ++spRunCount;
  try {
    // Once, on the first run: from then on every flow of the page is traced
    // (the other panels' spans land in the exporter too; this one shows its own trace).
    sp.stop ??= sp.instrumentRetries({ tracerProvider: sp.provider });
    sp.exporter.reset();
    const { api, tracer } = sp;
    const state = { calls: 0 };
    const orders = new AsyncRetryer(spGetOrders(cfg, state), {
      key: SP_KEY,
      maxAttempts: cfg.maxAttempts,
      backoff: 'exponential',
      baseWait: cfg.baseWait,
      jitter: 0,
    });
    const caller = tracer.startSpan('checkout');
    const traceId = caller.spanContext().traceId;
    const started = performance.now();
    let outcome;
    try {
      const result = await api.context.with(api.trace.setSpan(api.context.active(), caller), () => orders.execute());
      outcome = { ok: true, text: `execute() resolved ${JSON.stringify(result)}` };
    } catch (err) {
      caller.setStatus({ code: api.SpanStatusCode.ERROR, message: err?.message });
      outcome = { ok: false, text: `execute() rejected: ${errText(err)}` };
    }
    caller.end();
    const took = performance.now() - started;
    const spans = sp.exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    renderSpans(spans, { id, outcome, took });
  } catch (err) {
    $('sp-rows').replaceChildren();
    $('sp-note').textContent = `could not trace the call: ${errText(err)}`;
  } finally {
    box.dataset.run = String(id);
    box.dataset.state = 'done';
    $('spRun').disabled = false;
  }
}

const spMs = (t) => t[0] * 1e3 + t[1] / 1e6; // OpenTelemetry's HrTime, in ms
const spFmt = (ms) => (ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms).toLocaleString('en-US')} ms`);
const spParent = (s) => s.parentSpanContext?.spanId ?? s.parentSpanId;

/** What a span is, for the rows' classes and the test: the call, the flow, an attempt or the function's own request. */
function spKind(s) {
  if (s.instrumentationScope?.name === 'retry-wasm' || s.instrumentationLibrary?.name === 'retry-wasm') {
    return /^retry attempt \d+$/.test(s.name) ? 'attempt' : 'flow';
  }
  return spParent(s) ? 'request' : 'caller';
}

/** `k=v` as the README's span tree prints attributes: strings with spaces quoted, seconds as they come. */
function spAttr(k, v) {
  const text = typeof v === 'string' ? (/[\s"]/.test(v) ? JSON.stringify(v) : v) : Array.isArray(v) ? `[${v.join(',')}]` : String(v);
  return `${k}=${text}`;
}

function renderSpans(spans, { id, outcome, took }) {
  const list = $('sp-rows');
  const byParent = new Map();
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  for (const s of spans) {
    const p = ids.has(spParent(s)) ? spParent(s) : null;
    if (!byParent.has(p)) byParent.set(p, []);
    byParent.get(p).push(s);
  }
  for (const kids of byParent.values()) kids.sort((a, b) => spMs(a.startTime) - spMs(b.startTime));
  const roots = byParent.get(null) ?? [];
  const t0 = Math.min(...spans.map((s) => spMs(s.startTime)));
  const t1 = Math.max(...spans.map((s) => spMs(s.endTime)));
  const span = Math.max(t1 - t0, 1);
  const pctOf = (ms) => `${((Math.min(Math.max(ms - t0, 0), span) / span) * 100).toFixed(3)}%`;
  const rows = [];

  const chips = (el, attrs, skip = []) => {
    for (const [k, v] of Object.entries(attrs ?? {})) {
      if (skip.includes(k)) continue;
      const c = document.createElement('span');
      c.className = 'sp-attr';
      c.textContent = spAttr(k, v);
      el.append(c);
    }
  };
  const walk = (s, depth) => {
    const kind = spKind(s);
    const start = spMs(s.startTime);
    const dur = spMs(s.duration);
    const code = s.status?.code ?? 0;
    const status = code === 2 ? 'ERROR' : code === 1 ? 'OK' : 'UNSET';
    const li = document.createElement('li');
    li.className = `sp-row ${kind}${status === 'ERROR' ? ' error' : ''}`;
    Object.assign(li.dataset, {
      kind,
      name: s.name,
      spanId: s.spanContext().spanId,
      parentId: spParent(s) ?? '',
      status,
      attributes: JSON.stringify(s.attributes ?? {}),
      events: JSON.stringify((s.events ?? []).map((e) => e.name)),
      durationMs: dur.toFixed(3),
    });
    li.style.setProperty('--depth', depth);
    const label = document.createElement('div');
    label.className = 'sp-label';
    const name = document.createElement('b');
    name.className = 'sp-name';
    name.textContent = s.name;
    label.append(name);
    if (status !== 'UNSET') {
      const st = document.createElement('span');
      st.className = `sp-status ${status.toLowerCase()}`;
      st.textContent = status;
      if (s.status.message) st.title = s.status.message;
      label.append(st);
    }
    const attrs = document.createElement('div');
    attrs.className = 'sp-attrs';
    chips(attrs, s.attributes);
    if (s.status?.message) {
      const m = document.createElement('span');
      m.className = 'sp-attr sp-message';
      m.textContent = JSON.stringify(s.status.message);
      attrs.append(m);
    }
    label.append(attrs);
    const track = document.createElement('div');
    track.className = 'sp-track';
    const bar = document.createElement('div');
    bar.className = `sp-bar ${kind}${status === 'ERROR' ? ' error' : ''}`;
    bar.style.left = pctOf(start);
    bar.style.width = `max(2px, ${((dur / span) * 100).toFixed(3)}%)`;
    bar.title = `${s.name}: +${spFmt(start - t0)}, ${spFmt(dur)}`;
    track.append(bar);
    for (const e of s.events ?? []) {
      const mark = document.createElement('i');
      mark.className = `sp-mark${e.name === 'exception' ? ' exception' : ''}`;
      mark.style.left = pctOf(spMs(e.time));
      mark.title = e.name;
      track.append(mark);
    }
    const d = document.createElement('div');
    d.className = 'sp-dur';
    d.textContent = spFmt(dur);
    li.append(label, track, d);
    rows.push(li);
    // The span's events, then its children, in time order (as the README's tree).
    const events = (s.events ?? []).map((e) => ({ at: spMs(e.time), e }));
    const kids = (byParent.get(s.spanContext().spanId) ?? []).map((c) => ({ at: spMs(c.startTime), c }));
    for (const x of [...events, ...kids].sort((a, b) => a.at - b.at)) {
      if (x.c) {
        walk(x.c, depth + 1);
        continue;
      }
      const ev = document.createElement('li');
      ev.className = `sp-row sp-event${x.e.name === 'exception' ? ' exception' : ''}`;
      ev.dataset.kind = 'event';
      ev.dataset.name = x.e.name;
      ev.dataset.parentId = s.spanContext().spanId;
      ev.style.setProperty('--depth', depth + 1);
      const el = document.createElement('div');
      el.className = 'sp-label';
      const n = document.createElement('span');
      n.className = 'sp-name';
      n.textContent = `· ${x.e.name}`;
      const a = document.createElement('div');
      a.className = 'sp-attrs';
      chips(a, x.e.attributes, ['exception.stacktrace']);
      el.append(n, a);
      const at = document.createElement('div');
      at.className = 'sp-dur';
      at.textContent = `+${spFmt(x.at - t0)}`;
      ev.append(el, document.createElement('div'), at);
      rows.push(ev);
    }
  };
  for (const r of roots) walk(r, 0);
  list.replaceChildren(...rows);

  const flows = spans.filter((s) => spKind(s) === 'flow');
  const attempts = spans.filter((s) => spKind(s) === 'attempt');
  const failed = attempts.filter((s) => s.status?.code === 2).length;
  const waits = flows.flatMap((f) => (f.events ?? []).filter((e) => e.name === 'retry.backoff'));
  const flow = flows[0];
  const reason = flow?.attributes?.['retry.reason'];
  $('sp-note').textContent =
    `run #${id}: ${plural(spans.length, 'span')} in one trace, ${plural(flows.length, 'flow span')} ` +
    `(${flow ? `${flow.name}, ${spFmt(spMs(flow.duration))}` : 'none'}) with ${plural(attempts.length, 'attempt span')}` +
    `${failed ? ` (${failed} ERROR)` : ''} and ${plural(waits.length, 'retry.backoff event')}` +
    `${reason ? `; retry.reason=${reason}` : ''}; ${outcome.text} after ${spFmt(took)}.`;
  $('sp-note').className = `herd-note sp-note ${outcome.ok ? 'ok' : 'failed'}`;
}

async function initSpans() {
  const box = document.querySelector('[data-testid="spans"]');
  for (const el of box.querySelectorAll('.sp-controls input')) el.addEventListener('input', renderSpansCode);
  renderSpansCode();
  try {
    sp = await loadSpans();
  } catch (err) {
    box.classList.add('unsupported');
    $('sp-note').textContent = `OpenTelemetry could not load in this page (${errText(err)}); npm run www bundles it from the dev dependencies.`;
    return;
  }
  $('spRun').addEventListener('click', () => runSpans());
  $('spRun').disabled = false;
  box.dataset.ready = 'true';
}

// ---------------------------------------------------------------------------
// Hedged attempts: two retryFetch functions, one with `hedge`, each sending
// its GETs one after another to a simulated backend with a slow tail, side
// by side. The engine decides when a hedge starts and which attempt wins;
// this panel draws both latency distributions and the hedged calls.

const HG_URL = 'https://api.example/items';
const HG_EDGES = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];
let hgRunCount = 0;

function readHedge() {
  const n = (id, dflt) => {
    const v = Number($(id).value);
    return $(id).value !== '' && Number.isFinite(v) && v >= 0 ? v : dflt;
  };
  return {
    requests: Math.max(1, Math.round(n('hgRequests', 200))),
    hedge: n('hgHedge', 40),
    every: Math.max(1, Math.round(n('hgEvery', 20))),
    slowMs: n('hgSlow', 800),
    fastMs: n('hgFast', 5),
  };
}

function renderHedgeCode() {
  const cfg = readHedge();
  $('hg-code').textContent =
    `const plain  = retryFetch({ maxAttempts: 3, fetch: backend })\n` +
    `const hedged = retryFetch({ maxAttempts: 3, hedge: ${cfg.hedge}, onHedge, fetch: backend })\n` +
    `// ${cfg.requests} GETs through each, one after another: await (await f(url)).text()`;
  $('hg-cap-hedged').textContent = `with hedge: ${cfg.hedge}`;
}

/**
 * The simulated backend of one function: a `fetch` that answers a 200 after
 * `fastMs`, or after `slowMs` for every `every`-th request it receives, and
 * stops (rejecting with the signal's reason) when its signal aborts. Every
 * request is logged: { call, attempt, slow, start, end, outcome }.
 */
function hgBackend(cfg, t0) {
  const log = [];
  const perCall = new Map();
  const fetch = (input, init = {}) =>
    new Promise((resolve, reject) => {
      const call = Number(new URL(String(input)).searchParams.get('call'));
      const attempt = (perCall.get(call) ?? 0) + 1;
      perCall.set(call, attempt);
      const slow = (log.length + 1) % cfg.every === 0;
      const entry = { call, attempt, slow, start: performance.now() - t0, end: null, outcome: 'pending' };
      log.push(entry);
      const signal = init.signal;
      let timer = 0;
      const stop = () => {
        clearTimeout(timer);
        entry.end = performance.now() - t0;
        entry.outcome = 'aborted';
        reject(signal.reason);
      };
      if (signal?.aborted) return stop();
      timer = setTimeout(() => {
        signal?.removeEventListener('abort', stop);
        entry.end = performance.now() - t0;
        entry.outcome = 'answered';
        resolve(new Response('{"ok":true}', { status: 200, headers: { 'content-type': 'application/json' } }));
      }, slow ? cfg.slowMs : cfg.fastMs);
      signal?.addEventListener('abort', stop, { once: true });
    });
  return { fetch, log };
}

/** `cfg.requests` sequential GETs through `f`: each call's { call, start, ms, status }. */
async function hgSide(f, cfg, t0, progress) {
  const calls = [];
  for (let i = 1; i <= cfg.requests; i++) {
    const start = performance.now();
    const r = await f(`${HG_URL}?call=${i}`);
    await r.text();
    calls.push({ call: i, start: start - t0, ms: performance.now() - start, status: r.status });
    if (i % 10 === 0) progress(i);
  }
  return calls;
}

/** Nearest-rank percentile `p` (0..1) of sorted `s`. */
const hgPct = (s, p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];

function hgStats(calls, backend) {
  const s = calls.map((c) => c.ms).sort((a, b) => a - b);
  return {
    p50: hgPct(s, 0.5),
    p99: hgPct(s, 0.99),
    p999: hgPct(s, 0.999),
    max: s[s.length - 1],
    requests: backend.log.length,
    perCall: backend.log.length / calls.length,
    failed: calls.filter((c) => c.status !== 200).length,
  };
}

async function runHedge() {
  const cfg = readHedge();
  const id = ++hgRunCount;
  const box = document.querySelector('[data-testid="hedge"]');
  box.dataset.state = 'running';
  $('hgRun').disabled = true;
  const t0 = performance.now();
  const plainBackend = hgBackend(cfg, t0);
  const hedgedBackend = hgBackend(cfg, t0);
  const hedges = [];
  const plainFetch = lib.retryFetch({ maxAttempts: 3, fetch: plainBackend.fetch });
  const hedgedFetch = lib.retryFetch({ maxAttempts: 3, hedge: cfg.hedge, fetch: hedgedBackend.fetch, onHedge: (info) => hedges.push({ ...info }) });
  const done = { plain: 0, hedged: 0 };
  const progress = (side) => (i) => {
    done[side] = i;
    $('hg-note').textContent = `run #${id}: ${done.plain} / ${cfg.requests} calls without hedge, ${done.hedged} / ${cfg.requests} with…`;
  };
  try {
    const [plain, hedged] = await Promise.all([
      hgSide(plainFetch, cfg, t0, progress('plain')),
      hgSide(hedgedFetch, cfg, t0, progress('hedged')),
    ]);
    renderHedge(id, cfg, { calls: plain, backend: plainBackend }, { calls: hedged, backend: hedgedBackend }, hedges);
    box.dataset.state = 'done';
  } catch (err) {
    $('hg-note').textContent = `run #${id} failed: ${errText(err)}`;
    box.dataset.state = 'failed';
  } finally {
    box.dataset.run = String(id);
    $('hgRun').disabled = false;
  }
}

function renderHedge(id, cfg, plain, hedged, hedges) {
  const a = hgStats(plain.calls, plain.backend);
  const b = hgStats(hedged.calls, hedged.backend);
  const top = HG_EDGES.find((e) => e >= Math.max(a.max, b.max, 100)) ?? HG_EDGES[HG_EDGES.length - 1];
  const count = (calls) => {
    const edges = [0, ...HG_EDGES.filter((e) => e < top), top];
    return edges.slice(0, -1).map((lo, i) => ({ lo, hi: edges[i + 1], n: calls.filter((c) => c.ms >= lo && (c.ms < edges[i + 1] || edges[i + 1] === top)).length }));
  };
  const binsA = count(plain.calls);
  const binsB = count(hedged.calls);
  const yMax = Math.max(1, ...binsA.map((x) => x.n), ...binsB.map((x) => x.n));
  hgHistogram($('hg-hist-plain'), binsA, a, { top, yMax, cls: 'bar-plain', color: 'var(--failed)' });
  hgHistogram($('hg-hist-hedged'), binsB, b, { top, yMax, cls: 'bar-jitter', color: 'var(--accent)' });
  for (const [el, st] of [[$('hg-stats-plain'), a], [$('hg-stats-hedged'), b]]) {
    el.textContent = `p50 ${fmtMs(st.p50)} · p99 ${fmtMs(st.p99)} · p99.9 ${fmtMs(st.p999)} · ${st.perCall.toFixed(3)} req/call`;
    Object.assign(el.dataset, { p50: st.p50.toFixed(1), p99: st.p99.toFixed(1), p999: st.p999.toFixed(1), perCall: st.perCall.toFixed(4), requests: String(st.requests) });
  }
  const shown = hgTimeline($('hg-timeline'), cfg, hedged.backend.log);
  const extra = b.requests - cfg.requests;
  $('hg-note').textContent =
    `run #${id}: ${cfg.requests} calls each. Without hedge, p99 ${fmtMs(a.p99)} (the slow tail: every ${cfg.every}th request takes ${fmtMs(cfg.slowMs)}); ` +
    `with hedge: ${cfg.hedge}, p99 ${fmtMs(b.p99)}, for ${extra} more request${extra === 1 ? '' : 's'} (${b.perCall.toFixed(3)} per call, ${plural(hedges.length, 'onHedge call')}). ` +
    `The timeline shows ${shown ? `the first ${plural(shown, 'hedged call')}` : 'no hedged call'}.` +
    (a.failed || b.failed ? ` ${a.failed + b.failed} calls did not answer 200.` : '');
}

/** A latency histogram on a log axis (ms), with the percentiles marked. */
function hgHistogram(svg, bins, st, { top, yMax, cls, color }) {
  svg.replaceChildren();
  const W = Math.max(svg.clientWidth || 420, 200);
  const H = 130;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const left = 38;
  const right = 10;
  const pad = 16;
  const plotW = W - left - right;
  const plotH = H - pad - 20;
  const x = (t) => left + (Math.log10(Math.max(t, 1)) / Math.log10(top)) * plotW;
  const y = (c) => pad + plotH - (c / yMax) * plotH;
  for (const c of [0, yMax / 2, yMax]) {
    svg.append(s('line', { x1: left, x2: W - right, y1: y(c), y2: y(c), class: 'grid' }));
    svg.append(s('text', { x: left - 5, y: y(c) + 3.5, 'text-anchor': 'end', class: 'axis' }, String(Math.round(c))));
  }
  for (const e of HG_EDGES.filter((e) => e <= top)) {
    svg.append(s('line', { x1: x(e), x2: x(e), y1: pad + plotH, y2: pad + plotH + 4, stroke: '#c0c6d2' }));
    const anchor = e === 1 ? 'start' : e === top ? 'end' : 'middle';
    svg.append(s('text', { x: x(e), y: H - 5, 'text-anchor': anchor, class: 'axis' }, e >= 1000 ? `${e / 1000}s` : `${e}ms`));
  }
  for (const { lo, hi, n } of bins) {
    if (!n) continue;
    const h = Math.max((n / yMax) * plotH, 1);
    const x0 = x(lo);
    const rect = s('rect', { x: x0 + 0.5, y: pad + plotH - h, width: Math.max(x(hi) - x0 - 1, 1), height: h, class: `bar ${cls}` });
    rect.append(s('title', {}, `${n} call${n === 1 ? '' : 's'} between ${fmtMs(lo)} and ${fmtMs(hi)}`));
    svg.append(rect);
  }
  svg.append(s('line', { x1: left, x2: W - right, y1: pad + plotH, y2: pad + plotH, stroke: '#98a2b3' }));
  // The percentiles, labelled above the plot (one too close to the last is
  // left unlabelled).
  let lastX = -Infinity;
  for (const [name, v] of [['p50', st.p50], ['p99', st.p99], ['p99.9', st.p999]]) {
    svg.append(s('line', { x1: x(v), x2: x(v), y1: pad - 3, y2: pad + plotH, class: 'pct-line', stroke: color }));
    if (x(v) - lastX < 34) continue;
    lastX = x(v);
    const anchor = x(v) > W - right - 30 ? 'end' : 'start';
    svg.append(s('text', { x: x(v) + (anchor === 'end' ? -3 : 3), y: pad - 5, 'text-anchor': anchor, class: 'pct-label', fill: color }, name));
  }
}

/** The attempts of the first hedged calls (those with more than one), from each call's start; how many rows. */
function hgTimeline(svg, cfg, log) {
  svg.replaceChildren();
  const byCall = new Map();
  for (const e of log) byCall.set(e.call, [...(byCall.get(e.call) ?? []), e]);
  const rows = [...byCall.values()].filter((l) => l.length > 1).slice(0, 8);
  const W = Math.max(svg.clientWidth || 700, 300);
  const rowH = 20;
  const H = rows.length ? 22 + rows.length * rowH : 40;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.style.height = `${H}px`;
  if (!rows.length) {
    svg.append(s('text', { x: W / 2, y: 24, 'text-anchor': 'middle', class: 'empty' }, 'no call hedged (yet)'));
    return 0;
  }
  const left = 70;
  const right = 10;
  const span = Math.max(...rows.flatMap((l) => l.map((e) => (e.end ?? e.start) - l[0].start)), cfg.hedge * 1.5, 1);
  const step = niceStep(span / 6);
  const domain = Math.ceil(span / step) * step;
  const x = (t) => left + (t / domain) * (W - left - right);
  for (let t = 0; t <= domain + 1e-6; t += step) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: 4, y2: H - 16, class: 'grid' }));
    svg.append(s('text', { x: x(t), y: H - 4, 'text-anchor': t === 0 ? 'start' : 'middle', class: 'axis' }, fmtAxis(t, step)));
  }
  rows.forEach((l, i) => {
    const t0 = l[0].start;
    const y = 4 + i * rowH;
    const g = s('g', { class: 'hg-row', 'data-call': String(l[0].call), 'data-attempts': String(l.length) });
    g.append(s('text', { x: left - 6, y: y + 13, 'text-anchor': 'end', class: 'row-label' }, `call ${l[0].call}`));
    const answered = l.filter((e) => e.outcome === 'answered');
    const winner = answered.reduce((w, e) => (w && w.end <= e.end ? w : e), null);
    for (const e of l) {
      const outcome = e === winner ? 'won' : e.outcome === 'aborted' ? 'aborted' : 'lost';
      const x0 = x(e.start - t0);
      const w = Math.max(x((e.end ?? e.start) - t0) - x0, 2);
      const rect = s('rect', { x: x0, y: y + 2, width: w, height: rowH - 5, rx: 2, class: outcome === 'won' ? 'att-won' : 'att-aborted', 'data-outcome': outcome });
      rect.append(s('title', {}, `attempt ${e.attempt}${e.slow ? ' (a slow answer)' : ''}: ${outcome}, ${fmtMs(e.start - t0)} → ${fmtMs((e.end ?? e.start) - t0)}`));
      g.append(rect);
      if (w > 58) g.append(s('text', { x: x0 + 4, y: y + 13, class: 'att-label' }, `#${e.attempt} ${outcome}`));
      if (e.attempt > 1) g.append(s('line', { x1: x0, x2: x0, y1: y, y2: y + rowH - 1, class: 'hedge-mark' }));
    }
    svg.append(g);
  });
  return rows.length;
}

function initHedge() {
  const box = document.querySelector('[data-testid="hedge"]');
  for (const el of box.querySelectorAll('.hg-controls input')) el.addEventListener('input', renderHedgeCode);
  renderHedgeCode();
  hgTimeline($('hg-timeline'), readHedge(), []);
  if (typeof lib.retryFetch !== 'function') {
    box.classList.add('unsupported');
    $('hg-note').textContent = 'This build of retry-wasm has no retryFetch.';
    return;
  }
  $('hgRun').addEventListener('click', () => runHedge());
  $('hgRun').disabled = false;
  box.dataset.ready = 'true';
}

// ---------------------------------------------------------------------------
// Circuit breaker: calls on a fixed schedule through a retryFetch with a
// CircuitBreaker, to a simulated backend that goes down and comes back, and
// the same calls through a retryFetch without one, to a backend of their
// own, side by side. The engine decides every permit, refusal and probe;
// this panel draws the circuit's state as onStateChange reports it, the
// refused attempts as onError sees them, and what each backend received.

const BK_URL = 'https://orders.example/api/orders';
const BK_BUCKET = 100; // ms per bar of the attempts row
const BK_FETCH = { maxAttempts: 3, baseWait: 100 };
let bkRunCount = 0;
let bkRun = null; // the run drawn (the last one started)

function readBreaker() {
  const n = (id, dflt, min, max) => {
    const v = Number($(id).value);
    return $(id).value !== '' && Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : dflt;
  };
  return {
    every: n('bkEvery', 20, 5, 500),
    length: n('bkLength', 4000, 500, 20000),
    downAt: n('bkDownAt', 600, 0, 20000),
    downFor: n('bkDownFor', 1800, 0, 20000),
    breakMs: n('bkBreak', 400, 0, 10000),
    min: Math.round(n('bkMin', 10, 1, 1000)),
  };
}

/** The breaker's options for `cfg`: the defaults but the window, the break and the throughput, scaled to a run of seconds. */
const bkOptions = (cfg) => ({ failureRatio: 0.5, minimumThroughput: cfg.min, samplingDuration: 2000, breakDuration: cfg.breakMs });

function renderBreakerCode() {
  const cfg = readBreaker();
  const o = bkOptions(cfg);
  $('bk-code').textContent =
    `const breaker = new CircuitBreaker({ ${Object.entries(o).map(([k, v]) => `${k}: ${v}`).join(', ')}, onStateChange })\n` +
    `const api   = retryFetch({ maxAttempts: 3, baseWait: 100, breaker, onError, fetch: backend })\n` +
    `const plain = retryFetch({ maxAttempts: 3, baseWait: 100, fetch: otherBackend }) // for comparison\n` +
    `// a call every ${cfg.every} ms for ${cfg.length} ms; each backend fails from ${cfg.downAt} ms to ${cfg.downAt + cfg.downFor} ms`;
}

/**
 * A simulated backend: a `fetch` that answers after 20-40 ms, a 503 when the
 * request arrives while it is down, else a 200, and stops (rejecting with
 * the signal's reason) when its signal aborts. Logs { t, status } per request.
 */
function bkBackend(cfg, t0) {
  const log = [];
  const fetch = (input, init = {}) =>
    new Promise((resolve, reject) => {
      const t = performance.now() - t0;
      const down = t >= cfg.downAt && t < cfg.downAt + cfg.downFor;
      log.push({ t, status: down ? 503 : 200 });
      const signal = init.signal;
      let timer = 0;
      const stop = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      if (signal?.aborted) return stop();
      timer = setTimeout(() => {
        signal?.removeEventListener('abort', stop);
        resolve(new Response(down ? '{"error":"down"}' : '{"ok":true}', { status: down ? 503 : 200, headers: { 'content-type': 'application/json' } }));
      }, 20 + Math.random() * 20);
      signal?.addEventListener('abort', stop, { once: true });
    });
  return { fetch, log };
}

/** Calls `f` once per `cfg.every` ms, each on its own; resolves each call's { start, end, outcome }. */
function bkCalls(f, cfg, t0) {
  const n = Math.max(1, Math.floor(cfg.length / cfg.every));
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, t0 + i * cfg.every - performance.now())));
      const start = performance.now() - t0;
      try {
        const r = await f(`${BK_URL}?call=${i + 1}`);
        await r.text();
        return { start, end: performance.now() - t0, outcome: r.ok ? 'ok' : String(r.status) };
      } catch (err) {
        return { start, end: performance.now() - t0, outcome: err instanceof lib.CircuitOpenError ? 'circuit-open' : err?.name ?? 'Error' };
      }
    }),
  );
}

async function runBreaker() {
  const cfg = readBreaker();
  const id = ++bkRunCount;
  const box = document.querySelector('[data-testid="breaker"]');
  box.dataset.state = 'running';
  $('bkRun').disabled = true;
  const t0 = performance.now();
  const run = (bkRun = { id, cfg, t0, changes: [], refused: [], guarded: bkBackend(cfg, t0), plain: bkBackend(cfg, t0), calls: null, plainCalls: null, done: false });
  const breaker = new lib.CircuitBreaker({
    ...bkOptions(cfg),
    onStateChange: (change) => run.changes.push({ t: performance.now() - t0, ...change }),
  });
  const api = lib.retryFetch({
    ...BK_FETCH,
    breaker,
    fetch: run.guarded.fetch,
    // A refused attempt is a failed attempt whose error is a CircuitOpenError;
    // nothing reached the backend for it.
    onError: (err) => {
      if (err instanceof lib.CircuitOpenError) run.refused.push({ t: performance.now() - t0, retryAfter: err.retryAfter });
    },
  });
  const plain = lib.retryFetch({ ...BK_FETCH, fetch: run.plain.fetch });
  const live = setInterval(() => renderBreaker(run), 100);
  try {
    [run.calls, run.plainCalls] = await Promise.all([bkCalls(api, cfg, t0), bkCalls(plain, cfg, t0)]);
    run.snapshot = breaker.snapshot();
    run.done = true;
    renderBreaker(run);
    box.dataset.state = 'done';
  } catch (err) {
    $('bk-note').textContent = `run #${id} failed: ${errText(err)}`;
    box.dataset.state = 'failed';
  } finally {
    clearInterval(live);
    breaker.free();
    box.dataset.run = String(id);
    $('bkRun').disabled = false;
  }
}

/** The circuit's states over [0, end] from the transitions: [{ state, from, to }]. */
function bkSegments(changes, end) {
  const out = [];
  let state = 'closed';
  let from = 0;
  for (const c of changes) {
    out.push({ state, from, to: c.t });
    state = c.to;
    from = c.t;
  }
  out.push({ state, from, to: Math.max(end, from) });
  return out;
}

function bkFigures(run) {
  const { cfg, changes } = run;
  const upAt = cfg.downAt + cfg.downFor;
  const closed = changes.find((c) => c.reason === 'probe-succeeded' && c.t >= upAt);
  const calls = run.calls ?? [];
  return {
    sent: run.guarded.log.length,
    refused: run.refused.length,
    plainSent: run.plain.log.length,
    opened: changes.filter((c) => c.to === 'open').length,
    probes: changes.filter((c) => c.reason === 'break-ended').length,
    closedAfter: closed ? closed.t - upAt : null,
    ok: calls.filter((c) => c.outcome === 'ok').length,
    failed: calls.filter((c) => c.outcome !== 'ok').length,
    failedFast: calls.filter((c) => c.outcome === 'circuit-open').length,
    plainFailed: (run.plainCalls ?? []).filter((c) => c.outcome !== 'ok').length,
    calls: calls.length,
  };
}

function renderBreaker(run) {
  if (run !== bkRun) return;
  const now = performance.now() - run.t0;
  const end = run.done ? Math.max(run.cfg.length, ...run.calls.map((c) => c.end)) : Math.max(now, run.cfg.length);
  const segments = bkSegments(run.changes, run.done ? end : now);
  bkChart($('bk-chart'), run, segments, end, run.done ? null : now);
  const f = bkFigures(run);
  const stats = $('bk-stats');
  const states = [...new Set(segments.map((s) => s.state))];
  stats.innerHTML =
    `attempts sent <b>${f.sent}</b> · refused <b>${f.refused}</b> (requests saved) · without a breaker: <b>${f.plainSent}</b> sent` +
    ` · circuit opened ${f.opened}× · ${f.closedAfter === null ? (run.done ? 'not closed again' : '…') : `closed again ${fmtMs(f.closedAfter)} after the backend recovered`}`;
  Object.assign(stats.dataset, {
    sent: String(f.sent),
    refused: String(f.refused),
    plainSent: String(f.plainSent),
    opened: String(f.opened),
    states: states.join(','),
    closedAfter: f.closedAfter === null ? '' : f.closedAfter.toFixed(0),
  });
  const list = $('bk-changes');
  list.replaceChildren(
    ...run.changes.map((c) => {
      const li = document.createElement('li');
      li.dataset.to = c.to;
      li.dataset.reason = c.reason;
      const why = c.reason === 'tripped' ? ` (${c.failures} of ${c.calls} failed)` : '';
      li.innerHTML = `+${Math.round(c.t)} ms ${c.from} → <span class="to">${c.to}</span> <span class="why">${c.reason}${why}</span>`;
      return li;
    }),
  );
  if (!run.done) {
    $('bk-note').textContent = `run #${run.id}: ${Math.round(now)} ms…`;
    return;
  }
  const saved = f.plainSent - f.sent;
  $('bk-note').textContent =
    `run #${run.id}: ${f.calls} calls each. With the breaker the backend received ${f.sent} requests and ${f.refused} attempts were refused without one; ` +
    `without it, ${f.plainSent} (${saved >= 0 ? `${saved} more` : `${-saved} fewer`}). ` +
    `With the breaker ${f.failed} calls failed, ${f.failedFast} of them with a CircuitOpenError; without it ${f.plainFailed}. ` +
    (f.closedAfter === null ? 'The circuit did not close again during the run.' : `A probe closed the circuit ${fmtMs(f.closedAfter)} after the backend recovered.`);
}

/** The backend's health, the circuit's states and the attempts per BK_BUCKET ms, on one time axis. */
function bkChart(svg, run, segments, end, now) {
  svg.replaceChildren();
  const W = Math.max(svg.clientWidth || 700, 300);
  const H = 190;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const defs = s('defs');
  const hatch = s('pattern', { id: 'bk-hatch', width: 4, height: 4, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' });
  hatch.append(s('rect', { width: 4, height: 4, fill: '#fff' }), s('line', { x1: 0, y1: 0, x2: 0, y2: 4, stroke: '#98a2b3', 'stroke-width': 2 }));
  defs.append(hatch);
  svg.append(defs);
  const left = 70;
  const right = 10;
  const step = niceStep(end / 8);
  const domain = Math.ceil(end / step) * step || 1;
  const x = (t) => left + (Math.min(Math.max(t, 0), domain) / domain) * (W - left - right);
  const { cfg } = run;
  const upAt = cfg.downAt + cfg.downFor;
  const bars = { top: 62, mid: 120, bottom: 168 };
  for (let t = 0; t <= domain + 1e-6; t += step) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: 4, y2: bars.bottom, class: 'grid' }));
    svg.append(s('text', { x: x(t), y: H - 6, 'text-anchor': t === 0 ? 'start' : 'middle', class: 'axis' }, fmtAxis(t, step)));
  }
  // The backend's health.
  svg.append(s('text', { x: left - 6, y: 17, 'text-anchor': 'end', class: 'row-label' }, 'backend'));
  for (const [from, to, cls] of [[0, cfg.downAt, 'up'], [cfg.downAt, upAt, 'down'], [upAt, domain, 'up']]) {
    if (to > from) svg.append(s('rect', { x: x(from), y: 6, width: Math.max(x(to) - x(from), 0), height: 14, class: cls, 'data-health': cls }));
  }
  // The circuit, as onStateChange reported it; a half-open moment (a probe
  // answering in ~30 ms) is drawn at least 2 px wide so it can be seen. Once
  // the run is over, its last state holds to the end of the axis.
  if (now === null) segments[segments.length - 1].to = domain;
  svg.append(s('text', { x: left - 6, y: 41, 'text-anchor': 'end', class: 'row-label' }, 'circuit'));
  const g = s('g', { class: 'bk-states' });
  for (const seg of segments) {
    const w = Math.max(x(seg.to) - x(seg.from), seg.state === 'half-open' ? 2 : 0);
    const rect = s('rect', { x: x(seg.from), y: 30, width: w, height: 14, class: `st-${seg.state}`, 'data-state': seg.state });
    rect.append(s('title', {}, `${seg.state}: ${fmtMs(seg.from)} → ${fmtMs(seg.to)}`));
    g.append(rect);
  }
  svg.append(g);
  // Attempts per bucket: sent above the line, refused below; the run without
  // a breaker as an outline.
  const buckets = Math.max(1, Math.ceil(domain / BK_BUCKET));
  const count = (times) => {
    const c = new Array(buckets).fill(0);
    for (const t of times) c[Math.min(buckets - 1, Math.floor(t / BK_BUCKET))]++;
    return c;
  };
  const sent = count(run.guarded.log.map((e) => e.t));
  const refused = count(run.refused.map((e) => e.t));
  const plain = count(run.plain.log.map((e) => e.t));
  const yMax = Math.max(1, ...sent, ...refused, ...plain);
  const hUp = bars.mid - bars.top;
  const hDown = bars.bottom - bars.mid;
  svg.append(s('text', { x: left - 6, y: bars.top + 10, 'text-anchor': 'end', class: 'row-label' }, 'sent'));
  svg.append(s('text', { x: left - 6, y: bars.bottom - 2, 'text-anchor': 'end', class: 'row-label' }, 'refused'));
  const bw = Math.max(x(BK_BUCKET) - x(0) - 1, 1);
  for (let i = 0; i < buckets; i++) {
    const x0 = x(i * BK_BUCKET) + 0.5;
    if (sent[i]) {
      const h = (sent[i] / yMax) * hUp;
      const r = s('rect', { x: x0, y: bars.mid - h, width: bw, height: h, class: 'sent' });
      r.append(s('title', {}, `${sent[i]} sent, ${fmtMs(i * BK_BUCKET)}-${fmtMs((i + 1) * BK_BUCKET)}`));
      svg.append(r);
    }
    if (refused[i]) {
      const h = (refused[i] / yMax) * hDown;
      const r = s('rect', { x: x0, y: bars.mid, width: bw, height: h, class: 'refused' });
      r.append(s('title', {}, `${refused[i]} refused, ${fmtMs(i * BK_BUCKET)}-${fmtMs((i + 1) * BK_BUCKET)}`));
      svg.append(r);
    }
  }
  const points = plain.flatMap((n, i) => [[x(i * BK_BUCKET), bars.mid - (n / yMax) * hUp], [x((i + 1) * BK_BUCKET), bars.mid - (n / yMax) * hUp]]);
  svg.append(s('polyline', { points: points.map((p) => p.join(',')).join(' '), class: 'plain' }));
  svg.append(s('line', { x1: left, x2: W - right, y1: bars.mid, y2: bars.mid, stroke: '#98a2b3' }));
  svg.append(s('line', { x1: x(upAt), x2: x(upAt), y1: 4, y2: bars.bottom, class: 'recovered' }));
  if (now !== null) svg.append(s('line', { x1: x(now), x2: x(now), y1: 4, y2: bars.bottom, class: 'now' }));
}

function initBreaker() {
  const box = document.querySelector('[data-testid="breaker"]');
  for (const el of box.querySelectorAll('.bk-controls input')) el.addEventListener('input', renderBreakerCode);
  renderBreakerCode();
  if (typeof lib.retryFetch !== 'function' || typeof lib.CircuitBreaker !== 'function') {
    box.classList.add('unsupported');
    $('bk-note').textContent = 'This build of retry-wasm has no CircuitBreaker.';
    return;
  }
  $('bkRun').addEventListener('click', () => runBreaker());
  $('bkRun').disabled = false;
  box.dataset.ready = 'true';
}

// ---------------------------------------------------------------------------
// Wiring

let herdTimer = 0;
function scheduleHerd() {
  clearTimeout(herdTimer);
  herdTimer = setTimeout(updateHerd, 200);
}

for (const el of document.querySelectorAll('#policy input, #policy select')) {
  el.addEventListener('input', () => {
    syncOutputs();
    if (['maxAttempts', 'backoff', 'baseWait', 'maxWait', 'seed'].includes(el.id)) scheduleHerd();
    if (el.id === 'maxAttempts' && !run) invalidate();
  });
}
$('clients').addEventListener('input', scheduleHerd);
$('herdJitter').addEventListener('input', scheduleHerd);
$('run').addEventListener('click', () => startRun());
$('abort').addEventListener('click', () => retryer?.abort());
addEventListener('resize', () => {
  invalidate();
  invalidateLayers();
  if (bkRun?.done) renderBreaker(bkRun);
  scheduleHerd();
});

syncOutputs();
renderState(new AsyncRetryer(async () => {}).store.state);
storeUpdates = 0;
$('store-note').innerHTML = 'live through <code>store.subscribe</code>';
invalidate();
initLayers();
initSpans(); // loads OpenTelemetry on its own; the panel says when it is ready
initHedge();
initBreaker();
await updateHerd();
$('run').disabled = false;
document.body.dataset.ready = 'true';
