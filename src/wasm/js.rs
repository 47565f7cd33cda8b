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

// Four helpers in JavaScript (wasm-bindgen's `inline_js`, shipped beside
// the glue in pkg/snippets/), each doing in one call from wasm what would
// otherwise take several: on a successful execute(), four crossings fewer
// (about 8 % of its time, measured paired on the 2-core dev machine,
// 2026-12-02), and a snapshot (or `onHedge`'s and `onBackoff`'s argument)
// built as an object literal.

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

export function backoffInfo(delay, attempt, error, elapsed) {
  return { delay, attempt, error, elapsed };
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

    /// What `onBackoff` receives: `{ delay, attempt, error, elapsed }`, the
    /// error as it was (one call where serde-wasm-bindgen made one per
    /// field, and 1.3 KB less download: serde's string cache and code).
    #[wasm_bindgen(js_name = backoffInfo)]
    pub fn backoff_info(delay: f64, attempt: u32, error: &JsValue, elapsed: f64) -> JsValue;

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
