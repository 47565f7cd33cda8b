//! How JavaScript wakes a retryer: the module's own exported handlers,
//! bound to numbers.
//!
//! The handlers (`_settled`, `_fetched`, `_timer`, `_signal`,
//! `_resolver`, `_rethrow`) are `#[wasm_bindgen]` functions of [`super`],
//! which finds the retryer at an [`Address`] of its live table. The entry
//! hands them over as the glue exports them when it opens the module
//! ([`wire`]). One handler of each kind serves every retryer, bound per use to
//! numbers, where a `Closure` per retryer would cost a JavaScript function,
//! a finalizer registration and a table slot each, and a call through the
//! glue's closure wrapper.

use core::cell::{Cell, RefCell};

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;

use super::super::js::{self, Handler};
use crate::core::effect::Timer;
use crate::core::slots::Address;

/// The module's handlers, as JavaScript functions.
struct Handlers {
    settled: Handler,
    #[cfg(feature = "fetch")]
    fetched: Handler,
    timer: Function,
    signal: Handler,
    resolver: Function,
    rethrow: Handler,
}

thread_local! {
    /// Given once, when the module is opened (see [`super::on_wire`]).
    static HANDLERS: RefCell<Option<Handlers>> = const { RefCell::new(None) };
    /// The `resolve` the shared promise executor was just handed.
    static RESOLVE: Cell<Option<Function>> = const { Cell::new(None) };
}

/// Hands the module its handlers, as its glue exports them: the entry
/// calls this once, when it opens the module. `fetched` (last) is
/// `_fetched`, which only the build with `retryFetch` has.
#[wasm_bindgen(js_name = _wire, skip_typescript)]
pub fn wire(
    settled: Function,
    timer: Function,
    signal: Function,
    resolver: Function,
    rethrow: Function,
    fetched: JsValue,
) {
    #[cfg(not(feature = "fetch"))]
    let _ = fetched;
    let handlers = Handlers {
        settled: settled.unchecked_into(),
        #[cfg(feature = "fetch")]
        fetched: fetched.unchecked_into(),
        timer,
        signal: signal.unchecked_into(),
        resolver,
        rethrow: rethrow.unchecked_into(),
    };
    HANDLERS.with(|h| {
        if let Ok(mut h) = h.try_borrow_mut() {
            *h = Some(handlers);
        }
    });
}

/// Runs `f` on the handlers (it binds them, and runs no user code).
fn with<T>(f: impl FnOnce(&Handlers) -> T) -> Option<T> {
    HANDLERS.with(|h| h.try_borrow().ok()?.as_ref().map(f))
}

/// Attaches attempt `attempt` of flow `gen` of the retryer at `at` to what
/// its function returned.
pub fn attach(value: &JsValue, at: Address, gen: u32, attempt: u32) -> Option<()> {
    with(|h| js::attach(value, &h.settled, at.slot, at.key, gen, attempt))
}

#[cfg(feature = "fetch")]
/// What turns the response of the fetch of attempt `attempt` of flow `gen`
/// of the retryer at `at` into the attempt's outcome.
pub fn fetched(at: Address, gen: u32, attempt: u32) -> Option<Function> {
    let n = |v: u32| JsValue::from(v);
    with(|h| {
        h.fetched.bind_values(
            &JsValue::NULL,
            &n(at.slot),
            &n(at.key),
            &n(gen),
            &n(attempt),
        )
    })
}

/// Starts a host timer for `timer` of the retryer at `at`; its id.
pub fn timeout(at: Address, timer: Timer, ms: f64) -> Option<JsValue> {
    with(|h| js::set_timeout(&h.timer, ms, at.slot, at.key, timer as u32))
}

/// The outside signal's `abort` listener of flow `gen` of the retryer at
/// `at`.
pub fn abort_listener(at: Address, gen: u32) -> Option<Function> {
    with(|h| h.signal.bind_flow(&JsValue::NULL, at.slot, at.key, gen))
}

/// A new pending promise and its `resolve`, from the one shared executor
/// (a rejection goes through `resolve` as a rejected promise).
pub fn promise() -> Option<(Promise, Function)> {
    let promise = with(|h| js::PromiseClass::new(&h.resolver))?;
    let resolve = RESOLVE.with(Cell::take)?;
    Some((promise.unchecked_into(), resolve))
}

/// Keeps the `resolve` a promise executor was handed (see [`promise`]).
pub fn resolver(resolve: JsValue) {
    // The promise constructor's own `resolve`: a function.
    RESOLVE.with(|r| r.set(Some(resolve.unchecked_into())));
}

/// Hands an error no promise can carry (a throwing store listener) to the
/// host: `reportError` where there is one, else an uncaught exception from
/// a microtask.
pub fn report(error: &JsValue) {
    let report = js::REPORT_ERROR.with(JsValue::clone);
    if let Some(f) = report.dyn_ref::<Function>() {
        if f.call1(&JsValue::UNDEFINED, error).is_ok() {
            return;
        }
    }
    with(|h| js::queue_microtask(&h.rethrow.bind_value(&JsValue::NULL, error)));
}
