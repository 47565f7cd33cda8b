// The doorway every entry goes through: given the glue wasm-bindgen made
// for one build of the engine (the lean one, or the full one with
// retryFetch) and that build's WebAssembly module (compiled, or its
// bytes), `open` instantiates it synchronously, binds the retryer's
// methods as @tanstack/pacer's are, and returns the API of that module.
// The entries differ only in which build and how they obtain its module
// (js/index.js and js/fetch.js for browsers and bundlers, js/node.cjs for
// Node, Deno and Bun, js/workerd-fetch.js for Cloudflare). Nothing here
// schedules or decides anything.

// The methods bound on first read; `true`: the Rust side also takes the
// retryer's own object as first argument (a method only receives its
// pointer). When the engine's signatures change, this line changes.
const BOUND = { execute: true, setOptions: true, getAbortSignal: false, abort: true, reset: true };

/**
 * Where the engines of one realm meet (a page that bundles both entries
 * loads both builds): each opened engine's `useDiagnosticsChannel`, and the
 * channels retry-wasm/otel installs where the host has none, so every
 * engine publishes on the same ones whichever was loaded first.
 */
const MEETING = Symbol.for('retry-wasm.engines');

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

/** The module's bytes: base64, then inflated (the build deflates them). */
export async function inflate(text) {
  const raw = atob(text);
  const deflated = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) deflated[i] = raw.charCodeAt(i);
  const stream = new Blob([deflated]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * Instantiates `module` (a WebAssembly.Module or the module's bytes) with
 * `glue`, the generated glue of the same build, binds the methods, and
 * returns that engine's API; with the full build, `retryFetch` too, made by
 * `fetchOf` (js/retry-fetch.js, which only the full build's entries load).
 * Once per build and realm.
 */
export function open(glue, module, fetchOf) {
  const { initSync, AsyncRetryer, RetryBudget, CircuitBreaker } = glue;
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
  glue._wire(glue._settled, glue._timer, glue._signal, glue._resolver, glue._rethrow, glue._fetched);
  // A freed retryer's options are gone with it; reading them says so.
  const optionsGone = { get: () => { throw freed('AsyncRetryer'); }, enumerable: true, configurable: true };
  guardFree(AsyncRetryer, 'AsyncRetryer', (retryer) => Object.defineProperty(retryer, 'options', optionsGone));
  guardFree(RetryBudget, 'RetryBudget');
  guardFree(CircuitBreaker, 'CircuitBreaker');
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
  for (const [name, cls] of [['AsyncRetryer', AsyncRetryer], ['RetryBudget', RetryBudget], ['CircuitBreaker', CircuitBreaker]]) {
    Object.defineProperty(cls, 'name', { value: name, configurable: true });
  }
  Object.defineProperty(AsyncRetryer.prototype, 'store', {
    get() {
      return own(this, 'store', this._store(this), false).store;
    },
    configurable: true,
  });
  const meeting = (globalThis[MEETING] ??= { engines: [], channels: undefined });
  meeting.engines.push(glue.useDiagnosticsChannel);
  if (meeting.channels) glue.useDiagnosticsChannel(meeting.channels);
  const api = {
    /** Wraps `fn` in one retryer and returns its bound `execute`: overlapping calls share that retryer, so a new call aborts the previous flow. */
    asyncRetry: (fn, initialOptions) => new AsyncRetryer(fn, initialOptions).execute,
    AsyncRetryer,
    /** Returns `options` unchanged, typed, for sharing between retryers. */
    asyncRetryerOptions: (options) => options,
    RetryBudget,
    CircuitBreaker,
    CircuitOpenError: glue.circuitOpenError(),
    parseRetryAfter: glue.parseRetryAfter,
    useDiagnosticsChannel: glue.useDiagnosticsChannel,
  };
  if (fetchOf) api.retryFetch = fetchOf(glue.retryFetch);
  return api;
}
