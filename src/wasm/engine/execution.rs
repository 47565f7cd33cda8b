//! One `execute()` call's JavaScript objects, from the call until its
//! promise settles.
//!
//! Fields are `Cell`s: a value is taken out, used, and put back, so no
//! borrow exists to be held while JavaScript runs.

use alloc::boxed::Box;
use core::cell::Cell;

use js_sys::{Array, Function};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{AbortController, AbortSignal};

use super::super::js;
use super::attempt::Kind;
use super::traced::Traced;

/// A flow's JavaScript side.
pub struct Execution {
    /// The machine's generation number of this flow.
    pub gen: u32,
    /// `execute`'s arguments, the same array for every attempt and callback.
    pub args: Array,
    /// What its attempts are.
    pub kind: Kind,
    /// The caller's `resolve`; `None` once settled. A rejection goes through
    /// it as a rejected promise, so `reject` is not kept.
    resolve: Cell<Option<Function>>,
    /// The latest outcome the machine took: the result after a success, the
    /// error after a failure.
    value: Cell<JsValue>,
    /// What the first throwing callback or option function threw.
    thrown: Cell<Option<JsValue>>,
    /// The last value an option function returned, for the `RangeError`
    /// when the machine refuses it.
    pub invalid: Cell<JsValue>,
    /// The running attempt's controller and its attempt number, made when
    /// `getAbortSignal()` first asks during that attempt (or a fetch needs
    /// its signal).
    controller: Cell<Option<(u32, AbortController)>>,
    /// The token of the last attempt's context, while attempts are tracked
    /// for nesting (0: none).
    pub token: Cell<u32>,
    /// What it publishes on the tracing channels, when observed. Boxed: a
    /// flow nobody observes is one pointer larger, not a trace larger.
    pub trace: Option<Box<Traced>>,
}

impl Execution {
    pub fn new(
        gen: u32,
        args: Array,
        kind: Kind,
        resolve: Function,
        trace: Option<Traced>,
    ) -> Execution {
        Execution {
            gen,
            args,
            kind,
            resolve: Cell::new(Some(resolve)),
            value: Cell::new(JsValue::UNDEFINED),
            thrown: Cell::new(None),
            invalid: Cell::new(JsValue::UNDEFINED),
            controller: Cell::new(None),
            token: Cell::new(0),
            trace: trace.map(Box::new),
        }
    }

    /// A copy of the latest outcome (the execution keeps its own).
    pub fn value(&self) -> JsValue {
        let v = self.value.take();
        let copy = v.clone();
        self.value.set(v);
        copy
    }

    /// Records the latest outcome.
    pub fn set_value(&self, value: JsValue) {
        self.value.set(value);
    }

    /// Records what a callback or option function threw, unless something
    /// threw first.
    pub fn threw(&self, error: JsValue) {
        let first = self.thrown.take();
        self.thrown.set(Some(first.unwrap_or(error)));
    }

    /// What the first throwing callback or option function threw.
    pub fn take_thrown(&self) -> JsValue {
        self.thrown.take().unwrap_or(JsValue::UNDEFINED)
    }

    /// The latest outcome, taken out: the flow is over.
    pub fn take_value(&self) -> JsValue {
        self.value.take()
    }

    /// Resolves the caller's promise with `value` (a value, or a rejected
    /// promise), once.
    pub fn resolve(&self, value: &JsValue) {
        if let Some(resolve) = self.resolve.take() {
            // A resolve function never throws: no `catch` needed.
            resolve
                .unchecked_ref::<js::Resolve>()
                .call(&JsValue::UNDEFINED, value);
        }
    }

    /// The signal of attempt `attempt`, making its controller if needed.
    pub fn signal(&self, attempt: u32) -> Option<AbortSignal> {
        let kept = self.controller.take().filter(|(a, _)| *a == attempt);
        let (a, ctrl) = match kept {
            Some(k) => k,
            None => (attempt, AbortController::new().ok()?),
        };
        let signal = ctrl.signal();
        self.controller.set(Some((a, ctrl)));
        Some(signal)
    }

    /// Whether the running attempt's controller was made.
    pub fn has_controller(&self) -> bool {
        let c = self.controller.take();
        let has = c.is_some();
        self.controller.set(c);
        has
    }

    /// Drops the controller of an attempt other than `attempt`.
    pub fn keep_controller_of(&self, attempt: u32) {
        let kept = self.controller.take().filter(|(a, _)| *a == attempt);
        self.controller.set(kept);
    }

    /// Aborts the running attempt's signal with `reason`, if anyone asked
    /// for it (its listeners run now).
    pub fn abort_signal(&self, reason: &JsValue) {
        let Some((a, ctrl)) = self.controller.take() else {
            return;
        };
        let signal = ctrl.signal();
        let pending = !signal.aborted();
        // Put back before aborting: a listener may ask for the signal again.
        self.controller.set(Some((a, ctrl.clone())));
        if pending {
            ctrl.abort_with_reason(reason);
        }
    }
}
