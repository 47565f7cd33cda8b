//! What a flow that someone observes publishes on the tracing channels
//! (`super::super::tracing`): its own trace, and one per attempt.
//!
//! Made when `execute()` finds a subscriber, held by the flow's
//! execution, and gone with it: the context objects are the flow's, like
//! its arguments. An attempt's trace ends when the engine is done with the
//! attempt (it settled, timed out, lost or was aborted), at most once, and
//! before the flow's own.

use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use js_sys::Array;
use wasm_bindgen::JsValue;

use super::super::props;
use super::super::tracing::{self, Channels, Traces};

/// An observed flow's contexts.
pub struct Traced {
    /// The retryer's object and its `key`, for every context.
    retryer: JsValue,
    key: JsValue,
    args: Array,
    /// The flow's context.
    flow: JsValue,
    /// The contexts of attempts not yet ended, by attempt.
    open: RefCell<Vec<(u32, JsValue)>>,
    /// Attempts started.
    started: Cell<u32>,
    /// The give-up or abort reason, once the machine said one.
    reason: Cell<Option<&'static str>>,
}

impl Traced {
    /// The trace of a flow of the retryer whose object is `me`, begun
    /// (`start` published) with `{ retryer, key, args }`, and `request` for
    /// a `retryFetch` call.
    pub fn begin(me: &JsValue, args: &Array, request: Option<&JsValue>) -> Traced {
        let key = props::get(me, "key").unwrap_or(JsValue::UNDEFINED);
        let request = request.cloned().unwrap_or(JsValue::UNDEFINED);
        let flow = tracing::flow(me, &key, args, &request);
        Channels.begin(Traces::Execute, &flow);
        Traced {
            retryer: me.clone(),
            key,
            args: args.clone(),
            flow,
            open: RefCell::new(Vec::new()),
            started: Cell::new(0),
            reason: Cell::new(None),
        }
    }

    /// The flow's context, for [`Traced::returned`].
    pub fn flow(&self) -> JsValue {
        self.flow.clone()
    }

    /// `end` of the flow's trace: `execute()` returns.
    pub fn returned(flow: &JsValue) {
        Channels.end(Traces::Execute, flow);
    }

    /// The channels and the context of attempt `attempt`, which starts
    /// now: `{ retryer, key, attempt, hedged, args }`, `hedged` when an
    /// earlier attempt is still running.
    pub fn attempt(&self, attempt: u32) -> (&'static Channels, JsValue) {
        let hedged = self.open.try_borrow().is_ok_and(|o| !o.is_empty());
        let context =
            tracing::attempt_context(&self.retryer, &self.key, attempt, hedged, &self.args);
        if let Ok(mut open) = self.open.try_borrow_mut() {
            open.push((attempt, context.clone()));
        }
        self.started.set(self.started.get().max(attempt));
        (&Channels, context)
    }

    /// Attempt `attempt` settled with `value` (`response`: what a
    /// `retryFetch` attempt got back).
    pub fn settled(
        &self,
        attempt: u32,
        fulfilled: bool,
        value: &JsValue,
        response: Option<JsValue>,
    ) {
        let Some(context) = self.take(Some(attempt)).pop() else {
            return;
        };
        if let Some(r) = response {
            tracing::put(&context, "response", &r);
        }
        tracing::put(&context, if fulfilled { "result" } else { "error" }, value);
        Channels.settle(Traces::Attempt, &context, !fulfilled);
    }

    /// Attempt `attempt` starts and is refused at once by the circuit
    /// breaker with `error`: its trace begins and ends without a call.
    pub fn refused(&self, attempt: u32, error: &JsValue) {
        let (channels, context) = self.attempt(attempt);
        channels.begin(Traces::Attempt, &context);
        channels.end(Traces::Attempt, &context);
        self.settled(attempt, false, error, None);
    }

    /// The engine ended attempt `attempt` (every open one when `None`)
    /// with `error`: it timed out, or, when `aborted`, it was cut short.
    pub fn ended(&self, attempt: Option<u32>, error: &JsValue, aborted: bool) {
        for context in self.take(attempt) {
            tracing::put(&context, "error", error);
            if aborted {
                tracing::put(&context, "aborted", &true.into());
            }
            Channels.settle(Traces::Attempt, &context, true);
        }
    }

    /// The machine said why the flow did not succeed.
    pub fn because(&self, reason: &'static str) {
        if self.reason.get().is_none() {
            self.reason.set(Some(reason));
        }
    }

    /// The flow settles with `settled` (its result, or what it rejects
    /// with): attempts still open end as aborted, then the flow's trace
    /// ends with `attempts`, `result` or `error`, and `reason`.
    pub fn finish(&self, settled: &Result<JsValue, JsValue>, aborted: impl FnOnce() -> JsValue) {
        if self.open.try_borrow().is_ok_and(|o| !o.is_empty()) {
            self.ended(None, &aborted(), true);
        }
        let flow = &self.flow;
        tracing::put(flow, "attempts", &self.started.get().into());
        match settled {
            Ok(v) => tracing::put(flow, "result", v),
            Err(e) => tracing::put(flow, "error", e),
        }
        if let Some(r) = self.reason.get() {
            tracing::put(flow, "reason", &props::key_of(r));
        }
        Channels.settle(Traces::Execute, flow, settled.is_err());
    }

    /// A wait of `delay` ms starts after attempt `attempt` failed with
    /// `error`, `elapsed` ms into the flow.
    pub fn backoff(&self, attempt: u32, delay: f64, error: &JsValue, elapsed: f64) {
        let (me, key) = (&self.retryer, &self.key);
        Channels.backoff(me, key, attempt, delay, error, elapsed);
    }

    /// The open contexts of `attempt` (all when `None`), taken out.
    fn take(&self, attempt: Option<u32>) -> Vec<JsValue> {
        let Ok(mut open) = self.open.try_borrow_mut() else {
            return Vec::new();
        };
        let mut taken = Vec::new();
        open.retain(|(a, c)| {
            let hit = attempt.is_none_or(|want| want == *a);
            if hit {
                taken.push(c.clone());
            }
            !hit
        });
        taken
    }
}
