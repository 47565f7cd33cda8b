// The doorway every entry goes through (index.js for browsers and bundlers,
// node.cjs for Node's require and import, workerd.js for Cloudflare): given
// the engine's WebAssembly module, or its bytes, `open` instantiates it
// synchronously and binds the retryer's methods as @tanstack/pacer's are;
// the public API is what this module exports besides `open` and
// `loadError`. The entries differ only in how they obtain the module.
// Nothing here schedules or decides anything. (The API is exported, not
// returned by `open`, so that a bundle leaves out what an app does not
// import: an object holding every export would keep them all.)
import { initSync, AsyncRetryer, RetryBudget, retryFetch as engineFetch, _wire, _settled, _fetched, _timer, _signal, _resolver, _rethrow } from '../pkg/retry_wasm.js';

export { AsyncRetryer, RetryBudget, parseRetryAfter, useDiagnosticsChannel } from '../pkg/retry_wasm.js';

// The methods bound on first read; `true`: the Rust side also takes the
// retryer's own object as first argument (a method only receives its
// pointer). When the engine's signatures change, this line changes.
const BOUND = { execute: true, setOptions: true, getAbortSignal: false, abort: true, reset: true };

/** The runtime, for error messages: "Node 20.20.2", "Deno/2.9.6", "Bun/1.4.4", a browser's user agent, "Cloudflare-Workers". */
function host() {
  const agent = globalThis.navigator?.userAgent;
  const node = globalThis.process?.versions?.node;
  // Node 21+ has a navigator too, whose userAgent ("Node.js/22") drops the
  // version; Deno, Bun and workerd also set process.versions.node, so their
  // own userAgent comes first.
  if (node && (!agent || agent.startsWith('Node.js/'))) return `Node ${node}`;
  return agent || 'this JavaScript runtime';
}

/** The Error every entry throws when the engine cannot be loaded: names the runtime and what is missing. */
export function loadError(what, cause) {
  const message = `retry-wasm cannot load in ${host()}: ${what}`;
  return cause === undefined ? new Error(message) : new Error(`${message}: ${cause?.message ?? cause}`, { cause });
}

/** Throws the load error when the host has no WebAssembly (before anything else that may need it). */
export function needWebAssembly() {
  if (typeof WebAssembly !== 'object' || typeof WebAssembly.Instance !== 'function') {
    throw loadError('globalThis.WebAssembly is missing, and the retry engine is a WebAssembly module');
  }
}

const own = (target, name, value, writable) =>
  Object.defineProperty(target, name, { value, writable, enumerable: true, configurable: true });

const freed = (what) => new Error(`retry-wasm: this ${what} was freed (free() or Symbol.dispose); create a new one`);

/**
 * `free()` and `[Symbol.dispose]()` of the class named `what` may be
 * called again (they then do nothing), and every other method and getter
 * of its prototype, used on a freed object, throws an Error that says so
 * (wasm-bindgen's own is "null pointer passed to rust"). wasm-bindgen's
 * `free` sets the object's `__wbg_ptr` to 0: the check is that one read.
 * `onFree(object)` runs after a first `free()`.
 */
function guardFree(cls, what, onFree) {
  const proto = cls.prototype;
  for (const name of Object.getOwnPropertyNames(proto)) {
    if (name === 'constructor' || name === 'free' || name.startsWith('__')) continue;
    const d = Object.getOwnPropertyDescriptor(proto, name);
    const key = typeof d.value === 'function' ? 'value' : 'get';
    const inner = d[key];
    if (typeof inner !== 'function') continue;
    d[key] = function () {
      if (this.__wbg_ptr === 0) throw freed(what);
      return inner.apply(this, arguments);
    };
    Object.defineProperty(proto, name, d);
  }
  const release = proto.free;
  proto.free = {
    free() {
      if (this.__wbg_ptr === 0) return;
      release.call(this);
      onFree?.(this);
    },
  }.free;
  if (typeof Symbol.dispose === 'symbol') proto[Symbol.dispose] = proto.free;
}

/** Instantiates `module` (a WebAssembly.Module or the module's bytes) and binds the methods; once per realm. */
export function open(module) {
  needWebAssembly();
  try {
    initSync({ module });
  } catch (e) {
    // A page's policy refuses to compile WebAssembly from bytes unless its
    // script-src allows 'wasm-unsafe-eval'; browsers word it as 'unsafe-eval'.
    const csp = /content.security.policy|\bCSP\b/i.test(String(e?.message ?? e));
    throw loadError(`its WebAssembly module failed to instantiate${csp ? " (the page's Content-Security-Policy must allow 'wasm-unsafe-eval' in script-src)" : ''}`, e);
  }
  // The functions the engine binds as promise reactions, timer callbacks
  // and listeners, handed over once.
  _wire(_settled, _fetched, _timer, _signal, _resolver, _rethrow);
  // A freed retryer's options are gone with it; reading them says so.
  const optionsGone = { get: () => { throw freed('AsyncRetryer'); }, enumerable: true, configurable: true };
  guardFree(AsyncRetryer, 'AsyncRetryer', (retryer) => Object.defineProperty(retryer, 'options', optionsGone));
  guardFree(RetryBudget, 'RetryBudget');
  // Pacer's methods are bound (`const { execute, abort } = retryer`
  // works). Each is bound on first read to the retryer
  // (and, per BOUND, with the retryer as first argument); the bound
  // function then stays on the retryer as an own property. `store` is made
  // on first read the same way, and kept.
  for (const [name, withSelf] of Object.entries(BOUND)) {
    const unbound = AsyncRetryer.prototype[`_${name}`];
    Object.defineProperty(AsyncRetryer.prototype, name, {
      get() {
        return own(this, name, withSelf ? unbound.bind(this, this) : unbound.bind(this), true)[name];
      },
      set(value) {
        own(this, name, value, true);
      },
      configurable: true,
    });
  }
  // The classes keep their names where a build step renamed them (the
  // CommonJS entry is minified).
  for (const [name, cls] of [['AsyncRetryer', AsyncRetryer], ['RetryBudget', RetryBudget]]) {
    Object.defineProperty(cls, 'name', { value: name, configurable: true });
  }
  Object.defineProperty(AsyncRetryer.prototype, 'store', {
    get() {
      return own(this, 'store', this._store(this), false).store;
    },
    configurable: true,
  });
}

/** Wraps `fn` in one retryer and returns its bound `execute`: overlapping calls share that retryer, so a new call aborts the previous flow. */
export function asyncRetry(fn, initialOptions) {
  return new AsyncRetryer(fn, initialOptions).execute;
}

/** Returns `options` unchanged, typed, for sharing between retryers. */
export function asyncRetryerOptions(options) {
  return options;
}

/**
 * `fetch` with retries: the engine's call function (options are read and
 * checked here, so bad ones throw synchronously), inside a function that
 * looks and fails like `fetch`: named `fetch`, `length` 1, and a rejection
 * whose stack is retaken where the caller awaits it, so it names the
 * caller's async functions (an error made inside the engine or undici has
 * none of them), as Node's own `fetch` does.
 */
export function retryFetch(options) {
  const call = engineFetch(options);
  // A method keeps its name through minifiers, which drop a function
  // expression's.
  return {
    async fetch(input, init = undefined) {
      try {
        return await call(input, init);
      } catch (error) {
        if (error !== null && typeof error === 'object') {
          try {
            Error.captureStackTrace?.(error);
          } catch {
            // A frozen error keeps the stack it has.
          }
        }
        throw error;
      }
    },
  }.fetch;
}
