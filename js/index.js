// retry-wasm: retries with backoff, deadlines, Retry-After, retry budgets and
// AbortSignal, decided and carried out by a Rust engine compiled to
// WebAssembly. This file is the doorway: it instantiates the embedded module
// before anything is exported (so importing is all a user does), binds the
// retryer's methods as @tanstack/pacer's are, and re-exports what
// wasm-bindgen generated. Types are in index.d.ts.
import { initSync, AsyncRetryer, RetryBudget, parseRetryAfter, retryFetch } from '../pkg/retry_wasm.js';
import base64 from '../pkg/wasm-bytes.js';

/** The module's bytes: base64, then inflated (the build deflates them). */
async function bytesOf(text) {
  const raw = atob(text);
  const deflated = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) deflated[i] = raw.charCodeAt(i);
  const stream = new Blob([deflated]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

initSync({ module: await bytesOf(base64) });

// Pacer's methods are bound (`const { execute, abort } = retryer` works).
// Each is bound on first read, to the retryer and, where the Rust side
// needs the retryer's own object (a method only receives its pointer), with
// that object as first argument; the bound function then stays on the
// retryer as an own property. `store` is made on first read the same way,
// and kept.
const own = (target, name, value, writable) =>
  Object.defineProperty(target, name, { value, writable, enumerable: true, configurable: true });
for (const [name, withSelf] of [['execute', true], ['setOptions', true], ['getAbortSignal', false], ['abort', true], ['reset', true]]) {
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
Object.defineProperty(AsyncRetryer.prototype, 'store', {
  get() {
    return own(this, 'store', this._store(this), false).store;
  },
  configurable: true,
});

export { AsyncRetryer, RetryBudget, parseRetryAfter, retryFetch };

/** Wraps `fn` in one retryer and returns its bound `execute`: overlapping calls share that retryer, so a new call aborts the previous flow. */
export function asyncRetry(fn, initialOptions) {
  return new AsyncRetryer(fn, initialOptions).execute;
}

/** Returns `options` unchanged, typed, for sharing between retryers. */
export function asyncRetryerOptions(options) {
  return options;
}
