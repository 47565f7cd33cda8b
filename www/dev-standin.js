// TEMPORARY development stand-in for retry-wasm (served only with RETRY_WASM_STANDIN=1).
// A small JavaScript AsyncRetryer following SPEC.md closely enough to build the
// playground before the wasm package exists. Delete once pkg/ is built.

export const __standin = true;

const DEFAULTS = {
  maxAttempts: 3,
  backoff: 'exponential',
  baseWait: 1000,
  maxWait: Infinity,
  jitter: 0,
  maxExecutionTime: Infinity,
  maxTotalExecutionTime: Infinity,
  throwOnError: 'last',
  enabled: true,
};
const CALLBACKS = [
  'onRetry', 'onError', 'onLastError', 'onSuccess', 'onSettled', 'onAbort',
  'onExecutionTimeout', 'onTotalExecutionTimeout', 'onGiveUp', 'shouldRetry', 'retryAfter',
];
const KNOWN = new Set([
  ...Object.keys(DEFAULTS), ...CALLBACKS, 'initialState', 'key', 'seed', 'multiplier',
  'intervals', 'signal', 'budget', 'retryOnExecutionTimeout',
]);

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
const moduleRandom = mulberry32((Math.random() * 2 ** 32) >>> 0);

function validate(o) {
  for (const [k, v] of Object.entries(o)) {
    if (!KNOWN.has(k)) throw new TypeError(`unknown option ${k}`);
    if (v === undefined) continue;
    if (CALLBACKS.includes(k) && typeof v !== 'function') throw new TypeError(`${k} must be a function, got ${typeof v}`);
    if (['baseWait', 'maxWait', 'maxExecutionTime', 'maxTotalExecutionTime'].includes(k) && typeof v === 'number' && !(v >= 0)) {
      throw new RangeError(`${k} must be >= 0, got ${v}`);
    }
    if (k === 'maxAttempts' && typeof v === 'number' && !(v === Infinity || (Number.isInteger(v) && v >= 1))) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${v}`);
    }
    if (k === 'jitter' && v !== 'full' && !(typeof v === 'number' && v >= 0 && v <= 1)) {
      throw new RangeError(`jitter must be in [0, 1] or 'full', got ${v}`);
    }
    if (k === 'backoff' && typeof v !== 'function' && !['exponential', 'linear', 'fixed', 'decorrelated'].includes(v)) {
      throw new RangeError(`backoff must be exponential, linear, fixed or decorrelated, got ${v}`);
    }
  }
}

const DEFAULT_STATE = {
  currentAttempt: 0,
  executionCount: 0,
  isExecuting: false,
  lastError: undefined,
  lastExecutionTime: 0,
  lastResult: undefined,
  status: 'idle',
  totalExecutionTime: 0,
};

export class AsyncRetryer {
  #fn;
  #state;
  #listeners = new Set();
  #flow = null;
  #random;
  #raw;

  constructor(fn, options = {}) {
    if (typeof fn !== 'function') throw new TypeError(`fn must be a function, got ${typeof fn}`);
    validate(options);
    this.#fn = fn;
    this.#raw = { ...options };
    this.#merge();
    this.#random = options.seed !== undefined ? mulberry32(options.seed) : moduleRandom;
    const init = options.initialState ?? {};
    const persist = {};
    for (const k of ['executionCount', 'lastExecutionTime', 'totalExecutionTime', 'lastResult', 'lastError']) {
      if (k in init) persist[k] = init[k];
    }
    this.#state = this.#derive({ ...DEFAULT_STATE, ...persist });
    const self = this;
    this.store = {
      get state() {
        return self.#state;
      },
      subscribe(listener) {
        const l = typeof listener === 'function' ? listener : () => listener.next(self.#state);
        self.#listeners.add(l);
        const unsub = () => self.#listeners.delete(l);
        unsub.unsubscribe = unsub;
        return unsub;
      },
    };
  }

  #merge() {
    const defined = Object.fromEntries(Object.entries(this.#raw).filter(([, v]) => v !== undefined));
    this.options = { ...DEFAULTS, ...defined };
    if (defined.throwOnError === undefined) this.options.throwOnError = defined.onError ? false : 'last';
  }

  #opt(name) {
    const v = this.options[name];
    return typeof v === 'function' && name !== 'backoff' ? v(this) : v;
  }

  #derive(s) {
    const enabled = this.#opt('enabled') !== false;
    const status = !enabled ? 'disabled' : !s.isExecuting ? 'idle' : s.currentAttempt <= 1 && !s.waiting ? 'executing' : 'retrying';
    const { waiting, ...rest } = s;
    return { ...rest, status };
  }

  #set(patch, waiting = false) {
    this.#state = this.#derive({ ...this.#state, ...patch, waiting });
    for (const l of [...this.#listeners]) l();
  }

  setOptions(partial) {
    validate(partial);
    this.#raw = { ...this.#raw, ...partial };
    this.#merge();
    this.#set({}, this.#flow?.waiting);
  }

  getAbortSignal() {
    return this.#flow?.controller?.signal ?? null;
  }

  reset() {
    this.#set({ ...DEFAULT_STATE }, this.#flow?.waiting);
  }

  abort() {
    const flow = this.#flow;
    if (!flow) return;
    flow.controller?.abort(new DOMException('The operation was aborted.', 'AbortError'));
    this.#end(flow);
    this.options.onAbort?.('manual', this);
    flow.resolve(undefined);
  }

  #end(flow) {
    for (const t of flow.timers) clearTimeout(t);
    flow.timers.clear();
    if (this.#flow === flow) this.#flow = null;
    flow.done = true;
    this.#set({ isExecuting: false });
  }

  execute(...args) {
    if (this.#opt('enabled') === false) return Promise.resolve(undefined);
    if (this.#flow) {
      const old = this.#flow;
      old.controller?.abort(new DOMException('The operation was aborted.', 'AbortError'));
      this.#end(old);
      this.options.onAbort?.('new-execution', this);
      old.resolve(undefined);
    }
    return new Promise((resolve, reject) => {
      const flow = { resolve, reject, args, timers: new Set(), start: Date.now(), prevDelay: 0, done: false };
      this.#flow = flow;
      this.#set({ isExecuting: true, lastError: undefined, currentAttempt: 1 });
      const total = this.#opt('maxTotalExecutionTime');
      if (Number.isFinite(total)) this.#timer(flow, total, () => this.#totalTimeout(flow));
      this.#attempt(flow, 1);
    });
  }

  #timer(flow, ms, fn) {
    const t = setTimeout(() => {
      flow.timers.delete(t);
      if (!flow.done) fn();
    }, Math.min(ms, 2 ** 31 - 1));
    flow.timers.add(t);
    return t;
  }

  #attempt(flow, n) {
    flow.attempt = n;
    flow.waiting = false;
    flow.controller = new AbortController();
    this.#set({ currentAttempt: n, isExecuting: true });
    const per = this.#opt('maxExecutionTime');
    const tag = {};
    flow.tag = tag;
    if (Number.isFinite(per)) {
      flow.execTimer = this.#timer(flow, per, () => this.#execTimeout(flow, tag));
    }
    let p;
    try {
      p = this.#fn(...flow.args);
    } catch (e) {
      p = Promise.reject(e);
    }
    Promise.resolve(p).then(
      (v) => flow.tag === tag && !flow.done && this.#ok(flow, v),
      (e) => flow.tag === tag && !flow.done && this.#fail(flow, e),
    );
  }

  #ok(flow, v) {
    this.#end(flow);
    const now = Date.now();
    this.#set({
      currentAttempt: 0,
      executionCount: this.#state.executionCount + 1,
      lastResult: v,
      lastExecutionTime: now,
      totalExecutionTime: now - flow.start,
    });
    this.options.onSuccess?.(v, flow.args, this);
    this.options.onSettled?.(flow.args, this);
    flow.resolve(v);
  }

  #fail(flow, e, timeout = false) {
    if (flow.execTimer) clearTimeout(flow.execTimer), flow.timers.delete(flow.execTimer);
    flow.tag = null;
    if (!timeout && e && e.name === 'AbortError') {
      this.#end(flow);
      flow.resolve(undefined);
      return;
    }
    const o = this.options;
    const n = flow.attempt;
    this.#set({ lastError: e });
    o.onError?.(e, flow.args, this);
    let reason = null;
    if (n >= this.#opt('maxAttempts')) reason = 'attempts-exhausted';
    else if (o.shouldRetry && o.shouldRetry(e, n, this) === false) reason = 'not-retryable';
    if (reason) return this.#giveUp(flow, e, reason);
    o.onRetry?.(n, e, this);
    o.onSettled?.(flow.args, this);
    if (flow.done) return;
    const delay = this.#delay(flow, n);
    const total = this.#opt('maxTotalExecutionTime');
    if (Number.isFinite(total) && Date.now() + delay > flow.start + total) return this.#totalTimeout(flow);
    flow.waiting = true;
    this.#set({ currentAttempt: n + 1 }, true);
    this.#timer(flow, delay, () => this.#attempt(flow, n + 1));
  }

  #giveUp(flow, e, reason) {
    this.#end(flow);
    this.options.onLastError?.(e, this);
    this.options.onGiveUp?.(e, reason, this);
    this.options.onSettled?.(flow.args, this);
    const t = this.options.throwOnError;
    if (t === 'last' || t === true) flow.reject(e);
    else flow.resolve(undefined);
  }

  #delay(flow, n) {
    const b = this.#opt('baseWait');
    const max = this.#opt('maxWait');
    const backoff = this.options.backoff;
    if (typeof backoff === 'function') return backoff(n, this);
    if (backoff === 'decorrelated') {
      const prev = flow.prevDelay || b;
      const d = Math.min(max, b + this.#random() * (3 * prev - b));
      flow.prevDelay = d;
      return Math.floor(d);
    }
    const m = this.options.multiplier ?? 2;
    const raw = backoff === 'linear' ? b * n : backoff === 'fixed' ? b : b * m ** (n - 1);
    const nominal = Math.min(raw, max);
    const j = this.#opt('jitter');
    if (j === 'full') return Math.floor(this.#random() * nominal);
    if (!j) return nominal;
    const r = this.#random() * 2 - 1;
    return Math.max(0, nominal + Math.floor(nominal * j * r));
  }

  #execTimeout(flow, tag) {
    if (flow.tag !== tag) return;
    this.options.onExecutionTimeout?.(this);
    const err = new DOMException(`attempt ${flow.attempt} exceeded maxExecutionTime`, 'TimeoutError');
    flow.controller.abort(err);
    if (this.options.retryOnExecutionTimeout) return this.#fail(flow, err, true);
    flow.tag = null;
    this.options.onAbort?.('execution-timeout', this);
    this.#set({ lastError: err });
    this.options.onError?.(err, flow.args, this);
    this.#giveUp(flow, err, 'execution-timeout');
  }

  #totalTimeout(flow) {
    this.options.onTotalExecutionTimeout?.(this);
    flow.controller?.abort(new DOMException('maxTotalExecutionTime exceeded', 'TimeoutError'));
    this.#end(flow);
    this.options.onAbort?.('total-timeout', this);
    flow.resolve(undefined);
  }
}

export function asyncRetry(fn, options) {
  const r = new AsyncRetryer(fn, options);
  return (...args) => r.execute(...args);
}

export const asyncRetryerOptions = (o) => o;
