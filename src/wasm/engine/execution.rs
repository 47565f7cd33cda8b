//! One `execute()` call's JavaScript objects, from the call until its
//! promise settles.
//!
//! Fields are `Cell`s: a value is taken out, used, and put back, so no
//! borrow exists to be held while JavaScript runs.

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::Cell;

use js_sys::{Array, Function};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{AbortController, AbortSignal};

use super::super::circuit::Circuits;
use super::super::js;
use super::super::nesting;
use super::attempt::Kind;
use super::traced::Traced;
use crate::core::breaker::Permit;

/// What was made for one attempt: its `AbortController`, once its signal
/// was asked for, and the token of its nesting context (0: none).
struct Made {
    attempt: u32,
    controller: Option<AbortController>,
    token: u32,
}

/// A permit an attempt holds, and the breaker it came from (which a
/// `setOptions` may have replaced since: the permit still goes back to it).
struct Held {
    attempt: u32,
    permit: Permit,
    circuits: Rc<Circuits>,
}

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
    /// What was made for the attempts that may still need it: the running
    /// ones (a hedged flow has several), the last one before a wait, or the
    /// next one when `getAbortSignal()` asks during a wait. Empty (and not
    /// allocated) until `getAbortSignal()` asks, a fetch needs a signal or
    /// attempts are tracked for nesting.
    made: Cell<Vec<Made>>,
    /// What it publishes on the tracing channels, when observed. Boxed: a
    /// flow nobody observes is one pointer larger, not a trace larger.
    pub trace: Option<Box<Traced>>,
    /// The circuit breaker's permits of its running attempts (SPEC §2e):
    /// the first in a slot (a flow that does not hedge has one at most),
    /// the others of a hedged flow in a list. Empty, and not allocated,
    /// without a breaker.
    permit: Cell<Option<Held>>,
    more_permits: Cell<Vec<Held>>,
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
            made: Cell::new(Vec::new()),
            trace: trace.map(Box::new),
            permit: Cell::new(None),
            more_permits: Cell::new(Vec::new()),
        }
    }

    /// Attempt `attempt` holds `permit` of `circuits` while it runs.
    pub fn hold(&self, attempt: u32, permit: Permit, circuits: Rc<Circuits>) {
        let held = Held {
            attempt,
            permit,
            circuits,
        };
        match self.permit.take() {
            None => self.permit.set(Some(held)),
            Some(first) => {
                self.permit.set(Some(first));
                let mut more = self.more_permits.take();
                more.push(held);
                self.more_permits.set(more);
            }
        }
    }

    /// Attempt `attempt` (every attempt when `None`) ended at `now`: the
    /// permit it held, if any, is recorded in its circuit as a success or a
    /// failure with `value` (`outcome`), or given back with nothing to
    /// record (`None`: cancelled, lost, or the flow ended). Inlined only as
    /// far as the check a flow without a breaker stops at.
    #[inline(always)]
    pub fn end_permits(
        &self,
        attempt: Option<u32>,
        outcome: Option<bool>,
        value: &JsValue,
        now: f64,
    ) {
        let first = self.permit.take();
        if first.is_none() {
            return;
        }
        self.end_held(first, attempt, outcome, value, now);
    }

    #[inline(never)]
    fn end_held(
        &self,
        first: Option<Held>,
        attempt: Option<u32>,
        outcome: Option<bool>,
        value: &JsValue,
        now: f64,
    ) {
        let hit = |h: &Held| attempt.is_none_or(|want| want == h.attempt);
        let end = |h: Held| match outcome {
            Some(ok) => h.circuits.record(h.permit, ok, value, now),
            None => h.circuits.release(h.permit),
        };
        let more = self.more_permits.take();
        if more.is_empty() {
            // One permit at most: a flow that does not hedge.
            match first {
                Some(h) if hit(&h) => end(h),
                other => self.permit.set(other),
            }
            return;
        }
        // Out of the execution first: recording may tell a listener (user
        // code). The permits left fill the first slot again.
        let (ended, rest): (Vec<Held>, Vec<Held>) = first.into_iter().chain(more).partition(hit);
        let mut rest = rest.into_iter();
        self.permit.set(rest.next());
        self.more_permits.set(rest.collect());
        ended.into_iter().for_each(end);
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

    /// Attempt `attempt` is invoked: what was made for attempts that no
    /// longer run (`running` says which still do) is let go.
    pub fn begin(&self, attempt: u32, running: &dyn Fn(u32) -> bool) {
        let mut made = self.made.take();
        if !made.is_empty() {
            made.retain(|m| {
                let keep = m.attempt == attempt || running(m.attempt);
                if !keep {
                    nesting::forget(m.token);
                }
                keep
            });
        }
        self.made.set(made);
    }

    /// Runs `f` on what was made for attempt `attempt`, making the entry if
    /// needed.
    fn with_made<T>(&self, attempt: u32, f: impl FnOnce(&mut Made) -> T) -> Option<T> {
        let mut made = self.made.take();
        if !made.iter().any(|m| m.attempt == attempt) {
            made.push(Made {
                attempt,
                controller: None,
                token: 0,
            });
        }
        let out = made.iter_mut().find(|m| m.attempt == attempt).map(f);
        self.made.set(made);
        out
    }

    /// The signal of attempt `attempt`, making its controller if needed.
    pub fn signal(&self, attempt: u32) -> Option<AbortSignal> {
        self.with_made(attempt, |m| {
            if m.controller.is_none() {
                m.controller = AbortController::new().ok();
            }
            m.controller.as_ref().map(AbortController::signal)
        })?
    }

    /// Keeps `token` as the nesting context of attempt `attempt`.
    pub fn set_token(&self, attempt: u32, token: u32) {
        let old = self.with_made(attempt, |m| core::mem::replace(&mut m.token, token));
        nesting::forget(old.unwrap_or(0));
    }

    /// Forgets every nesting context of the flow: it settles.
    pub fn forget_tokens(&self) {
        let made = self.made.take();
        for m in &made {
            nesting::forget(m.token);
        }
        self.made.set(made);
    }

    /// Aborts the signal of attempt `attempt` with `reason()`, if anyone
    /// asked for it (its listeners run now); with `None`, every signal the
    /// flow handed out (it ends).
    pub fn abort_signal(&self, attempt: Option<u32>, reason: &dyn Fn() -> JsValue) {
        let mut error: Option<JsValue> = None;
        // One at a time, with the list in place while a listener runs (it
        // may ask for a signal again); at most once per entry, whatever a
        // patched `aborted` getter says.
        let mut left = 1 + self.made_len();
        while left > 0 {
            left -= 1;
            let made = self.made.take();
            let next = made
                .iter()
                .filter(|m| attempt.is_none_or(|a| m.attempt == a))
                .find_map(|m| m.controller.clone().filter(|c| !c.signal().aborted()));
            self.made.set(made);
            let Some(c) = next else {
                return;
            };
            c.abort_with_reason(error.get_or_insert_with(reason));
        }
    }

    /// How many attempts something was made for.
    fn made_len(&self) -> usize {
        let made = self.made.take();
        let n = made.len();
        self.made.set(made);
        n
    }
}
