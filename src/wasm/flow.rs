//! One `execute()` call's JavaScript objects, from the call until its
//! promise settles.
//!
//! Fields are `Cell`s: a value is taken out, used, and put back, so no
//! borrow exists to be held while JavaScript runs.

use core::cell::Cell;

use js_sys::{Array, Function};
use wasm_bindgen::JsValue;
use web_sys::{AbortController, AbortSignal};

/// A flow's JavaScript side.
pub struct Flow {
    /// The machine's generation number of this flow.
    pub gen: u32,
    /// The retryer's JavaScript object, held while the flow lives: callbacks
    /// receive it, the function is called on it, and a flow whose caller
    /// dropped the retryer still finishes.
    pub this: JsValue,
    /// `execute`'s arguments, the same array for every attempt and callback.
    pub args: Array,
    /// Whether `args` is empty (a spread call costs more than a plain one).
    pub no_args: bool,
    /// The caller's `resolve`; `None` once settled. A rejection goes through
    /// it as a rejected promise, so `reject` is not kept.
    pub resolve: Cell<Option<Function>>,
    /// The latest outcome the machine took: the result after a success, the
    /// error after a failure.
    pub value: Cell<JsValue>,
    /// What the first throwing callback or option function threw.
    pub thrown: Cell<Option<JsValue>>,
    /// The last value an option function returned, for the `RangeError`
    /// when the machine refuses it.
    pub invalid: Cell<JsValue>,
    /// The running attempt's controller and its attempt number, made when
    /// `getAbortSignal()` first asks during that attempt.
    pub controller: Cell<Option<(u32, AbortController)>>,
    /// The token of the last attempt's context, while attempts are tracked
    /// for nesting (0: none).
    pub token: Cell<u32>,
}

impl Flow {
    pub fn new(gen: u32, this: JsValue, args: Array, no_args: bool, resolve: Function) -> Flow {
        Flow {
            gen,
            this,
            args,
            no_args,
            resolve: Cell::new(Some(resolve)),
            value: Cell::new(JsValue::UNDEFINED),
            thrown: Cell::new(None),
            invalid: Cell::new(JsValue::UNDEFINED),
            controller: Cell::new(None),
            token: Cell::new(0),
        }
    }

    /// A copy of the latest outcome (the flow keeps its own).
    pub fn value(&self) -> JsValue {
        peek(&self.value)
    }

    /// Records what a callback or option function threw, unless something
    /// threw first.
    pub fn threw(&self, error: JsValue) {
        let first = self.thrown.take();
        self.thrown.set(Some(first.unwrap_or(error)));
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

/// A copy of a cell's value, leaving it in place.
pub fn peek(cell: &Cell<JsValue>) -> JsValue {
    let v = cell.take();
    let copy = v.clone();
    cell.set(v);
    copy
}
