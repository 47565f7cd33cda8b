// ─────────────────────────────────────────────────────────────────────────────
// DEVELOPMENT STAND-IN — NOT retry-wasm.
//
// A minimal plain-JavaScript imitation of the slice of the retry-wasm API that
// the demo uses, so the demo could be written before the real package was
// built. The demo only loads it when RETRY_WASM_DEMO_STANDIN=1 is set; by
// default it imports 'retry-wasm'. Delete this file once the package builds.
// ─────────────────────────────────────────────────────────────────────────────

export class RetryBudget {
  constructor({ maxTokens = 10, tokenRatio = 0.1 } = {}) {
    this.maxTokens = maxTokens;
    this.tokenRatio = tokenRatio;
    this.tokens = maxTokens;
  }
  _failure() {
    this.tokens = Math.max(0, this.tokens - 1);
    return this.tokens > this.maxTokens / 2;
  }
  _success() {
    this.tokens = Math.min(this.maxTokens, this.tokens + this.tokenRatio);
  }
}

export function parseRetryAfter(value, now = Date.now()) {
  if (value && typeof value === 'object') {
    const headers = typeof value.headers?.get === 'function' ? value.headers : value;
    value = typeof headers.get === 'function' ? headers.get('retry-after') : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t) || t < now) return undefined;
  return t - now;
}

const DEFAULTS = {
  maxAttempts: 3,
  backoff: 'exponential',
  baseWait: 1000,
  maxWait: Infinity,
  jitter: 0,
  maxExecutionTime: Infinity,
  maxTotalExecutionTime: Infinity,
  throwOnError: 'last',
};

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

export class AsyncRetryer {
  constructor(fn, options = {}) {
    this.fn = fn;
    this.options = { ...DEFAULTS, ...options };
    if (options.onError && options.throwOnError === undefined) this.options.throwOnError = false;
    this._rand = mulberry32(options.seed ?? (Math.random() * 2 ** 32));
    this._flow = null;
    this.store = {
      state: {
        currentAttempt: 0, isExecuting: false, status: 'idle', lastError: undefined,
        lastResult: undefined, executionCount: 0, lastExecutionTime: 0, totalExecutionTime: 0,
      },
    };
  }
  _set(patch) { this.store.state = { ...this.store.state, ...patch }; }
  _v(x) { return typeof x === 'function' ? x(this) : x; }
  getAbortSignal() { return this._flow?.controller?.signal ?? null; }
  abort() { if (this._flow) this._abort(this._flow, 'manual'); }

  execute(...args) {
    if (this._flow) this._abort(this._flow, 'new-execution');
    const o = this.options;
    const flow = { start: Date.now(), timers: new Set(), finished: false, args };
    const promise = new Promise((resolve, reject) => Object.assign(flow, { resolve, reject }));
    this._flow = flow;
    this._set({ isExecuting: true, currentAttempt: 0, lastError: undefined });
    if (o.signal) {
      if (o.signal.aborted) { this._finish(flow); flow.resolve(undefined); return promise; }
      flow.onSignal = () => this._abort(flow, 'signal');
      o.signal.addEventListener('abort', flow.onSignal, { once: true });
    }
    if (Number.isFinite(o.maxTotalExecutionTime)) {
      this._timer(flow, () => this._totalTimeout(flow), o.maxTotalExecutionTime);
    }
    this._attempt(flow, 1);
    return promise;
  }

  _timer(flow, f, ms) {
    const t = setTimeout(() => { flow.timers.delete(t); f(); }, ms);
    flow.timers.add(t);
    return t;
  }

  _attempt(flow, n) {
    if (flow.finished) return;
    const o = this.options;
    flow.controller = new AbortController();
    this._set({ currentAttempt: n, status: n === 1 ? 'executing' : 'retrying' });
    const token = (flow.token = {});
    if (Number.isFinite(o.maxExecutionTime)) {
      token.timer = this._timer(flow, () => this._execTimeout(flow, token, n), o.maxExecutionTime);
    }
    let p;
    try { p = Promise.resolve(this.fn(...flow.args)); } catch (e) { p = Promise.reject(e); }
    const live = () => !flow.finished && flow.token === token;
    p.then(
      (v) => { if (live()) { this._clear(flow, token.timer); this._success(flow, v); } },
      (e) => {
        if (!live()) return;
        this._clear(flow, token.timer);
        if (e?.name === 'AbortError') { this._finish(flow); flow.resolve(undefined); return; }
        this._failure(flow, e, n);
      },
    );
  }

  _clear(flow, t) { if (t) { clearTimeout(t); flow.timers.delete(t); } }

  _execTimeout(flow, token, n) {
    if (flow.token !== token || flow.finished) return;
    flow.token = null;
    const o = this.options;
    const err = new DOMException(`attempt ${n} exceeded maxExecutionTime`, 'TimeoutError');
    o.onExecutionTimeout?.(this);
    flow.controller.abort(err);
    if (o.retryOnExecutionTimeout) return this._failure(flow, err, n);
    o.onAbort?.('execution-timeout', this);
    this._failure(flow, err, n, 'execution-timeout');
  }

  _failure(flow, e, n, forced) {
    const o = this.options;
    this._set({ lastError: e });
    const budgetOk = o.budget ? o.budget._failure() : true;
    o.onError?.(e, flow.args, this);
    if (flow.finished) return;
    let reason = forced;
    if (!reason && n >= this._v(o.maxAttempts)) reason = 'attempts-exhausted';
    if (!reason && o.shouldRetry && o.shouldRetry(e, n, this) === false) reason = 'not-retryable';
    if (!reason && !budgetOk) reason = 'budget-exhausted';
    if (reason) {
      o.onLastError?.(e, this);
      o.onGiveUp?.(e, reason, this);
      o.onSettled?.(flow.args, this);
      this._finish(flow);
      if (o.throwOnError === false) flow.resolve(undefined); else flow.reject(e);
      return;
    }
    o.onRetry?.(n, e, this);
    o.onSettled?.(flow.args, this);
    if (flow.finished) return;
    const hint = o.retryAfter?.(e, n, this);
    const delay = hint !== undefined ? hint : this._delay(n);
    if (Date.now() + delay > flow.start + o.maxTotalExecutionTime) return this._totalTimeout(flow);
    this._set({ currentAttempt: n + 1, status: 'retrying' });
    this._timer(flow, () => this._attempt(flow, n + 1), delay);
  }

  _delay(n) {
    const o = this.options;
    const b = this._v(o.baseWait);
    let d = o.backoff === 'linear' ? b * n : o.backoff === 'fixed' ? b : b * 2 ** (n - 1);
    d = Math.min(d, this._v(o.maxWait));
    if (o.jitter === 'full') return Math.floor(d * this._rand());
    if (o.jitter) d = Math.max(0, d + Math.floor(d * o.jitter * (this._rand() * 2 - 1)));
    return d;
  }

  _success(flow, v) {
    const o = this.options;
    o.budget?._success();
    this._finish(flow);
    this._set({
      currentAttempt: 0, lastResult: v, executionCount: this.store.state.executionCount + 1,
      lastExecutionTime: Date.now(), totalExecutionTime: Date.now() - flow.start,
    });
    o.onSuccess?.(v, flow.args, this);
    o.onSettled?.(flow.args, this);
    flow.resolve(v);
  }

  _totalTimeout(flow) {
    if (flow.finished) return;
    this.options.onTotalExecutionTimeout?.(this);
    this._abort(flow, 'total-timeout');
  }

  _abort(flow, reason) {
    if (flow.finished) return;
    flow.controller?.abort(new DOMException(`retry flow aborted: ${reason}`, 'AbortError'));
    this._finish(flow);
    this.options.onAbort?.(reason, this);
    flow.resolve(undefined);
  }

  _finish(flow) {
    flow.finished = true;
    for (const t of flow.timers) clearTimeout(t);
    flow.timers.clear();
    if (flow.onSignal) this.options.signal.removeEventListener('abort', flow.onSignal);
    if (this._flow === flow) this._flow = null;
    this._set({ isExecuting: false, status: 'idle' });
  }
}

export function asyncRetry(fn, options) {
  const r = new AsyncRetryer(fn, options);
  return (...args) => r.execute(...args);
}

export const asyncRetryerOptions = (o) => o;
