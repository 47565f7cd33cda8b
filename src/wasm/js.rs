//! The host's JavaScript, as wasm-bindgen imports js-sys and web-sys do not
//! already give in the form needed: calls that can run user code are
//! `catch` imports (an exception then comes back as an `Err` instead of
//! unwinding through Rust frames, which would leave borrows and the pump
//! stuck), and numbers go over the boundary as numbers.
//!
//! Globals (`setTimeout`, `clearTimeout`, `Date.now`) are referenced by the
//! generated glue at each call, so fake timers installed after the module
//! loaded (vitest, jest, sinon) drive it.

use js_sys::{Array, Function, Object, Promise};

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// A retryer's own JavaScript object, seen structurally: calling `fn` on
    /// it is `@tanstack/pacer`'s `this.fn(...args)`.
    pub type Holder;

    /// `holder.fn()`.
    #[wasm_bindgen(method, catch, js_name = fn)]
    pub fn call_fn0(this: &Holder) -> Result<JsValue, JsValue>;

    /// `holder.fn(...args)`.
    #[wasm_bindgen(method, catch, variadic, js_name = fn)]
    pub fn call_fn(this: &Holder, args: &Array) -> Result<JsValue, JsValue>;

    /// `setTimeout(handler, ms, slot, key, kind)`: the extra arguments reach
    /// the handler, so one shared handler serves every timer.
    #[wasm_bindgen(js_name = setTimeout)]
    pub fn set_timeout(handler: &Function, ms: f64, slot: u32, key: u32, kind: u32) -> JsValue;

    /// `clearTimeout(id)` (a number in browsers, an object in Node).
    #[wasm_bindgen(js_name = clearTimeout)]
    pub fn clear_timeout(id: &JsValue);

    /// `Object.keys(value)`: a Proxy's trap may throw.
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    pub fn object_keys(value: &JsValue) -> Result<Array, JsValue>;

    /// `Object.assign(target, source)`: a getter of `source` may throw.
    #[wasm_bindgen(catch, js_namespace = Object, js_name = assign)]
    pub fn object_assign(target: &Object, source: &JsValue) -> Result<Object, JsValue>;

    /// `Array.isArray(value)`: throws for a revoked Proxy.
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    pub fn is_array(value: &JsValue) -> Result<bool, JsValue>;

    /// The global `Request` class, for its constructor.
    #[wasm_bindgen(js_name = Request)]
    pub type RequestClass;

    /// `new Request(input, init)` (see [`new_request`]).
    #[wasm_bindgen(catch, constructor, js_class = "Request")]
    fn new(input: &JsValue, init: &JsValue) -> Result<RequestClass, JsValue>;

    /// `Promise.resolve(value)`: reads `value.constructor` of a promise.
    #[wasm_bindgen(catch, js_namespace = Promise, js_name = resolve)]
    pub fn promise_resolve(value: &JsValue) -> Result<Promise, JsValue>;

    /// Any object, for plain property access: `obj[key]` and
    /// `obj[key] = value` compile to the engine's fast property paths, where
    /// `Reflect.get`/`Reflect.set` take its generic one (several times
    /// slower in V8: building a retryer's options spent a fifth of its time
    /// in `Reflect.set`).
    pub type Bag;

    /// `obj[key]`; a getter or Proxy trap may throw.
    #[wasm_bindgen(method, catch, indexing_getter)]
    pub fn get(this: &Bag, key: &JsValue) -> Result<JsValue, JsValue>;

    /// `obj[key] = value`; a setter or Proxy trap may throw.
    #[wasm_bindgen(method, catch, indexing_setter)]
    pub fn set(this: &Bag, key: &JsValue, value: &JsValue) -> Result<(), JsValue>;

    /// A retryer's own object, for what it keeps between flows under the
    /// module's symbols (`lastResult`, `lastError`, the snapshot). The
    /// object is the module's own and the keys are its symbols, so no
    /// getter, setter or trap can run: unlike [`Bag`]'s, these accesses
    /// need no `catch` wrapper.
    pub type Kept;

    /// `me[key]` (the retryer's object is the module's own: no trap).
    #[wasm_bindgen(method, indexing_getter)]
    pub fn get(this: &Kept, key: &JsValue) -> JsValue;

    /// `me[key] = value`.
    #[wasm_bindgen(method, indexing_setter)]
    pub fn set(this: &Kept, key: &JsValue, value: &JsValue);

    /// A native promise, for its `then`.
    pub type Thenable;

    /// `promise.then(ok)`: the promise of what `ok` returns (a native
    /// promise's `then`, which does not throw).
    #[wasm_bindgen(method, js_name = then)]
    pub fn map(this: &Thenable, ok: &Function) -> Promise;

    /// The global `Promise` class, for its constructor.
    #[wasm_bindgen(js_name = Promise)]
    pub type PromiseClass;

    /// `new Promise(executor)`: the executor runs at once.
    #[wasm_bindgen(constructor, js_class = "Promise")]
    pub fn new(executor: &Function) -> PromiseClass;

    /// A promise's `resolve` function.
    pub type Resolve;

    /// `resolve.call(undefined, value)`: resolve functions never throw.
    #[wasm_bindgen(method)]
    pub fn call(this: &Resolve, context: &JsValue, value: &JsValue);

    /// One of the module's shared handlers, to be bound to numbers.
    pub type Handler;

    /// `f.bind(null, slot, key, gen)`: one flow's outside-signal listener.
    #[wasm_bindgen(method, js_name = bind)]
    pub fn bind_flow(this: &Handler, context: &JsValue, slot: u32, key: u32, gen: u32) -> Function;

    /// `f.bind(context, arg)`.
    #[wasm_bindgen(method, js_name = bind)]
    pub fn bind_value(this: &Handler, context: &JsValue, arg: &JsValue) -> Function;

    /// `f.bind(context, a, b, c, d)`.
    #[wasm_bindgen(method, js_name = bind)]
    pub fn bind_values(
        this: &Handler,
        context: &JsValue,
        a: &JsValue,
        b: &JsValue,
        c: &JsValue,
        d: &JsValue,
    ) -> Function;

    /// `Symbol(description)`: a key no other code can name.
    #[wasm_bindgen(js_name = Symbol)]
    pub fn symbol(description: &str) -> JsValue;

    /// `Object.prototype.toString.call(value)`, for error messages.
    #[wasm_bindgen(catch, js_namespace = ["Object", "prototype", "toString"], js_name = call)]
    pub fn to_string_tag(value: &JsValue) -> Result<JsValue, JsValue>;

    /// `String(value)`, for error messages: JavaScript's own number format.
    #[wasm_bindgen(catch, js_name = String)]
    pub fn string_of(value: &JsValue) -> Result<String, JsValue>;

    /// `globalThis.reportError`, where the host has it (not Node 20).
    #[wasm_bindgen(thread_local_v2, js_namespace = globalThis, js_name = reportError)]
    pub static REPORT_ERROR: JsValue;

    /// `queueMicrotask(callback)`.
    #[wasm_bindgen(js_name = queueMicrotask)]
    pub fn queue_microtask(callback: &Function);
}

/// `new Request(input, init)`: what `fetch` does first with its arguments,
/// so it refuses exactly what `fetch` refuses, with the same `TypeError`.
/// A `Request` input of another class (undici's, node-fetch's, a
/// polyfill's, another realm's) is built again by its own class, as the
/// `fetch` it belongs to would.
pub fn new_request(input: &JsValue, init: &JsValue) -> Result<web_sys::Request, JsValue> {
    if input.has_type::<web_sys::Request>() || !is_request(input, 0) {
        RequestClass::new(input, init).map(JsCast::unchecked_into)
    } else {
        new_like(input, init)
    }
}

/// A `Request` of this realm's class, or of any other: the request itself
/// typed as one (its fields and `clone()` are read structurally), or
/// `None` for any other input (a string, a `URL`, an object with a
/// string form).
pub fn as_request(input: &JsValue) -> Option<web_sys::Request> {
    if let Some(r) = input.dyn_ref::<web_sys::Request>() {
        return Some(<web_sys::Request as Clone>::clone(r));
    }
    is_request(input, 0).then(|| input.clone().unchecked_into())
}

/// A `Response` of this realm's class, or of any other (what undici's,
/// node-fetch's or a polyfill's `fetch` resolves with), typed as one (its
/// fields are read structurally); `None` for anything else.
pub fn as_response(value: &JsValue) -> Option<web_sys::Response> {
    if let Some(r) = value.dyn_ref::<web_sys::Response>() {
        return Some(<web_sys::Response as Clone>::clone(r));
    }
    is_response(value, 0).then(|| value.clone().unchecked_into())
}

/// A signal of this realm that follows `value`, when `value` is one of
/// another realm or implementation; `value` itself when it is this
/// realm's; `None` when it is no signal. `AbortSignal.any` and the host's
/// `fetch` take only their own realm's signals.
pub fn own_signal(value: &JsValue) -> Option<web_sys::AbortSignal> {
    if let Some(s) = value.dyn_ref::<web_sys::AbortSignal>() {
        return Some(s.clone());
    }
    super::props::is_signal(value).then(|| tie(value, 0))
}

/// `AbortSignal.any([a, b])`, keeping `a` alive while the result lives
/// when `a` was tied to another realm's signal ([`own_signal`]).
pub fn both(a: &web_sys::AbortSignal, b: &web_sys::AbortSignal) -> web_sys::AbortSignal {
    both_of(a, b, 0)
}

// The few lines through which a `Request` or an `AbortSignal` that is not
// this realm's global class's is used as one: recognised by what it is
// (its tag, or its shape), never by `instanceof`. (The unused `_`
// arguments: an import whose arguments and result are all plain values
// would be linked to the snippet module itself, and the build wants every
// import to go through the glue.)
#[wasm_bindgen(inline_js = r#"
export function isRequest(value, _) {
  if (value === null || typeof value !== 'object') return false;
  try {
    if (Object.prototype.toString.call(value) === '[object Request]') return true;
    return typeof value.url === 'string' && typeof value.method === 'string'
      && typeof value.clone === 'function' && value.headers !== null && typeof value.headers === 'object';
  } catch {
    return false;
  }
}

export function isResponse(value, _) {
  if (value === null || typeof value !== 'object') return false;
  try {
    if (Object.prototype.toString.call(value) === '[object Response]') return true;
    return typeof value.status === 'number' && typeof value.clone === 'function'
      && value.headers !== null && typeof value.headers === 'object' && 'body' in value;
  } catch {
    return false;
  }
}

export function newLike(request, init) {
  const Class = request.constructor;
  return new Class(request, init);
}

// A tied signal lives as long as whoever holds it (the call, then the
// signals made from it with `both`, which fetch keeps for the response's
// body); when it is collected, its listener leaves the source.
const untie = new FinalizationRegistry(({ source, listener }) => {
  try {
    source.removeEventListener('abort', listener);
  } catch {}
});
const tied = new WeakSet();
const keep = new WeakMap();

export function tie(source, _) {
  const controller = new AbortController();
  const signal = controller.signal;
  let aborted;
  try {
    aborted = source.aborted;
  } catch {}
  if (aborted) {
    controller.abort(source.reason);
    return signal;
  }
  const ref = new WeakRef(controller);
  const listener = () => ref.deref()?.abort(source.reason);
  try {
    source.addEventListener('abort', listener, { once: true });
  } catch {
    return signal;
  }
  tied.add(signal);
  keep.set(signal, controller);
  untie.register(signal, { source, listener });
  return signal;
}

export function both(a, b, _) {
  const signal = AbortSignal.any([a, b]);
  if (tied.has(a)) keep.set(signal, a);
  return signal;
}
"#)]
extern "C" {
    /// Whether `value` is a `Request` of any class: tagged `Request`, or
    /// shaped like one (string `url` and `method`, `headers`, `clone()`).
    #[wasm_bindgen(js_name = isRequest)]
    fn is_request(value: &JsValue, unused: u32) -> bool;

    /// Whether `value` is a `Response` of any class: tagged `Response`, or
    /// shaped like one (number `status`, `headers`, `body`, `clone()`).
    #[wasm_bindgen(js_name = isResponse)]
    fn is_response(value: &JsValue, unused: u32) -> bool;

    /// `new request.constructor(request, init)`.
    #[wasm_bindgen(catch, js_name = newLike)]
    fn new_like(request: &JsValue, init: &JsValue) -> Result<web_sys::Request, JsValue>;

    /// A signal of this realm that aborts, with the same reason, when
    /// `source` (shaped like a signal) does.
    fn tie(source: &JsValue, unused: u32) -> web_sys::AbortSignal;

    /// `AbortSignal.any([a, b])`, which keeps `a` alive when `a` was tied.
    #[wasm_bindgen(js_name = both)]
    fn both_of(
        a: &web_sys::AbortSignal,
        b: &web_sys::AbortSignal,
        unused: u32,
    ) -> web_sys::AbortSignal;
}

// Three helpers in JavaScript (wasm-bindgen's `inline_js`, shipped beside
// the glue in pkg/snippets/), each doing in one call from wasm what would
// otherwise take several: on a successful execute(), four crossings fewer
// (about 8 % of its time, measured paired on the 2-core dev machine,
// 2026-12-02), and a snapshot (or `onHedge`'s argument) built as an
// object literal.

#[wasm_bindgen(inline_js = r#"
export function attach(value, handler, slot, key, gen, attempt) {
  try {
    const promise = value instanceof Promise ? value : Promise.resolve(value);
    promise.then(
      (v) => handler(slot, key, gen, attempt, 1, v),
      (e) => handler(slot, key, gen, attempt, 0, e),
    );
  } catch (e) {
    handler(slot, key, gen, attempt, 0, e);
  }
}

export function hedgeInfo(attempt, elapsed, running) {
  return { attempt, elapsed, running };
}

export function stateObject(currentAttempt, executionCount, isExecuting, lastError,
  lastExecutionTime, lastResult, status, totalExecutionTime) {
  return { currentAttempt, executionCount, isExecuting, lastError,
    lastExecutionTime, lastResult, status, totalExecutionTime };
}
"#)]
extern "C" {
    /// Hands what attempt `attempt` of flow `gen` of the retryer at
    /// (`slot`, `key`) returned to `handler` (the `_settled` handler) once
    /// it settles: a promise as it is (its own `then`, as a `Promise`
    /// subclass has it), any other value through `Promise.resolve`; a
    /// `then` that throws is a rejection, handed over at once.
    pub fn attach(value: &JsValue, handler: &JsValue, slot: u32, key: u32, gen: u32, attempt: u32);

    /// What `onHedge` receives: a plain object.
    #[wasm_bindgen(js_name = hedgeInfo)]
    pub fn hedge_info(attempt: u32, elapsed: f64, running: f64) -> JsValue;

    /// `retryer.store.state`: a plain object with exactly the eight fields.
    #[wasm_bindgen(js_name = stateObject)]
    #[allow(clippy::too_many_arguments)]
    pub fn state_object(
        current_attempt: u32,
        execution_count: f64,
        is_executing: bool,
        last_error: &JsValue,
        last_execution_time: f64,
        last_result: &JsValue,
        status: &JsValue,
        total_execution_time: f64,
    ) -> JsValue;
}
