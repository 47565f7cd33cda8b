//! Carrying out the machine's effects for a busy retryer, one at a time,
//! with no borrow held while JavaScript runs; and the one input that
//! carrying out an effect can give straight back (an attempt whose
//! promise refuses `then`).
//!
//! An effect of a flow whose execution has settled meanwhile (a callback
//! re-entered and ended it) finds no execution and does nothing.

use core::cell::Cell;

use js_sys::Promise;
use wasm_bindgen::JsValue;

use super::super::circuit;
use super::super::errors;
use super::super::nesting;
use super::super::props;
use super::decider::{Decider, InUse, Input};
use super::execution::Execution;
use super::guards::Listener;
use super::observers;
use super::run::Run;
use super::user_code::{self, Nesting};
use super::wakeups;
use crate::core::effect::{AbortReason, Effect, GiveUp, Outcome, Provided, Timer};
use crate::core::options::Cb;

impl From<InUse> for JsValue {
    fn from(_: InUse) -> JsValue {
        errors::internal("engine state in use")
    }
}

/// Why a hedged flow's losing attempt is aborted (its `AbortError`'s
/// message).
const LOST: &str = "another attempt settled the flow";

fn missing(what: &str) -> JsValue {
    errors::internal(what)
}

impl Run {
    /// Carries out `effect`; `Err` only for an internal error, which ends
    /// every execution of the retryer.
    pub fn carry(&self, d: &Decider, shown: &Cell<u32>, effect: Effect) -> Result<(), JsValue> {
        let me = &self.me;
        match effect {
            Effect::Invoke { gen, attempt } => {
                let Some(exec) = self.find(gen) else {
                    return Ok(());
                };
                exec.begin(attempt, &|a| {
                    d.read(|m| m.is_running(gen, a)).unwrap_or(false)
                });
                if d.has_breaker() && !self.permitted(d, &exec, gen, attempt)? {
                    return Ok(());
                }
                // An observed flow calls inside the attempt channel's
                // stores, and publishes the attempt's end once it returns.
                let traced = exec.trace.as_ref().map(|t| t.attempt(attempt));
                let traced = traced.as_ref().map(|(trace, context)| (*trace, context));
                let fetched =
                    exec.kind
                        .fetch(|| exec.signal(attempt), (self.at, gen, attempt), traced);
                let promise: JsValue = match fetched {
                    Some(p) => p.into(),
                    None => {
                        let nested = if nesting::enabled() {
                            let forbids = d.read(|m| m.forbids_inner())?;
                            let runner = self.runner.clone();
                            Some(Nesting { runner, forbids })
                        } else {
                            None
                        };
                        user_code::attempt(me, &exec, attempt, nested, traced)
                    }
                };
                if wakeups::attach(&promise, self.at, gen, attempt).is_none() {
                    return Err(missing("promise reactions"));
                }
            }
            Effect::StartTimer { gen, timer, ms } => {
                if timer == Timer::Wait {
                    if let Some(exec) = self.find(gen) {
                        exec.kind.before_wait();
                    }
                }
                let id = wakeups::timeout(self.at, timer, ms).ok_or_else(|| missing("timer"))?;
                self.timers.set(timer, id);
            }
            Effect::ClearTimer { timer } => self.timers.clear(timer),
            // The flow ends: every signal it handed out aborts (the first
            // of a hedged flow's aborts finds them all).
            Effect::AbortAttempt { gen, reason, .. } => {
                if let Some(exec) = self.find(gen) {
                    exec.end_permits(None, None, &JsValue::UNDEFINED, 0.0);
                    exec.kind.aborted(reason);
                    if let Some(t) = exec.trace.as_deref() {
                        t.ended(None, &errors::abort_error(reason.name()), true);
                    }
                    exec.abort_signal(None, &|| errors::abort_error(reason.name()));
                }
            }
            Effect::TimeOut { gen, attempt } => {
                if let Some(exec) = self.find(gen) {
                    exec.kind.aborted(AbortReason::ExecutionTimeout);
                    let limit = d.read(|m| m.policy().max_execution_time)?;
                    let error = errors::timeout_error(limit);
                    exec.set_value(error.clone());
                    observers::keep_error(me, &error);
                    if let Some(t) = exec.trace.as_deref() {
                        t.ended(Some(attempt), &error, false);
                    }
                    // A timed-out attempt is a failure for the circuit.
                    exec.end_permits(Some(attempt), Some(false), &error, js_sys::Date::now());
                    exec.abort_signal(Some(attempt), &|| error.clone());
                }
            }
            Effect::CancelAttempt { gen, attempt } => {
                if let Some(exec) = self.find(gen) {
                    exec.end_permits(Some(attempt), None, &JsValue::UNDEFINED, 0.0);
                    if let Some(t) = exec.trace.as_deref() {
                        t.ended(Some(attempt), &errors::abort_error(LOST), true);
                    }
                    exec.abort_signal(Some(attempt), &|| errors::abort_error(LOST));
                }
            }
            Effect::Call { gen, cb, arg } => {
                if let Some(exec) = self.find(gen) {
                    if let Some(t) = exec.trace.as_deref() {
                        match cb {
                            Cb::GiveUp => {
                                t.because(GiveUp::from_code(arg).map_or("", GiveUp::name))
                            }
                            Cb::Abort => {
                                t.because(AbortReason::from_code(arg).map_or("", AbortReason::name))
                            }
                            _ => {}
                        }
                    }
                    if user_code::callback(me, &exec, cb, arg).is_err() {
                        d.with(|m| m.callback_threw(gen))?;
                    }
                }
            }
            Effect::Backoff {
                gen,
                attempt,
                delay,
                elapsed,
            } => {
                if let Some(exec) = self.find(gen) {
                    if let Some(t) = exec.trace.as_deref() {
                        t.backoff(attempt, delay, &exec.value(), elapsed);
                    }
                }
                self.notify(d, gen, Cb::Backoff, attempt, delay, elapsed)?
            }
            Effect::Hedge {
                gen,
                attempt,
                running,
                elapsed,
            } => self.notify(d, gen, Cb::Hedge, attempt, f64::from(running), elapsed)?,
            Effect::Eval { gen, what, attempt } => {
                if let Some(exec) = self.find(gen) {
                    let value = user_code::evaluate(me, &exec, what, attempt);
                    d.feed(Input::Provide { gen, value }, js_sys::Date::now())?;
                }
            }
            Effect::Gate { gen, attempt } => {
                let gate = self
                    .find(gen)
                    .and_then(|exec| exec.kind.gate(attempt, &exec.value()));
                match gate {
                    Some(answer) => {
                        let bound = attempt | super::GATE;
                        if wakeups::attach(&answer, self.at, gen, bound).is_none() {
                            return Err(missing("gate reactions"));
                        }
                    }
                    None => d.with(|m| {
                        m.answer_gate(gen, attempt, Provided::Bool(true), js_sys::Date::now())
                    })?,
                }
            }
            Effect::Listen { gen } => {
                let signal = self.find(gen).and_then(|e| e.kind.outside_signal(me));
                if let Some(signal) = signal {
                    let listener =
                        wakeups::abort_listener(self.at, gen).ok_or_else(|| missing("listener"))?;
                    if let Some(l) = Listener::add(signal, listener) {
                        self.listen(l);
                    }
                }
            }
            Effect::Unlisten { .. } => self.unlisten(),
            Effect::StateChanged => {
                let (state, status) = d.read(|m| (m.state().clone(), m.status()))?;
                let snapshot = observers::state(me, &state, status, shown);
                if !observers::notify(me, &snapshot) {
                    d.with(|m| m.set_listeners(false))?;
                }
            }
            Effect::Finish { gen, outcome } => {
                // Out of the list first: nothing of a settled flow stays
                // reachable, and resolving with a thenable reads its `then`
                // (user code).
                if let Some(exec) = self.take(gen) {
                    exec.forget_tokens();
                    exec.end_permits(None, None, &JsValue::UNDEFINED, 0.0);
                    let value = match outcome {
                        Outcome::Invalid(opt) => errors::dynamic_error(opt, &exec.invalid.take()),
                        Outcome::Thrown => exec.take_thrown(),
                        _ => exec.take_value(),
                    };
                    let settled = exec.kind.settle(outcome, value);
                    if let Some(t) = exec.trace.as_deref() {
                        t.finish(&settled, || errors::abort_error("the flow ended"));
                    }
                    exec.resolve(&settled.unwrap_or_else(|e| Promise::reject(&e).into()));
                }
            }
        }
        Ok(())
    }

    /// Attempt `attempt` of flow `gen` asks the circuit breaker for a
    /// permit (SPEC §2e rule 1): whether it goes on. A refused attempt is
    /// settled at once; a change the permit made is told, and a listener
    /// may have ended the flow meanwhile.
    #[inline(never)]
    fn permitted(
        &self,
        d: &Decider,
        exec: &Execution,
        gen: u32,
        attempt: u32,
    ) -> Result<bool, JsValue> {
        let Some(circuits) = d.breaker() else {
            return Ok(true);
        };
        let told = match circuits.permit(exec.kind.circuit_key()) {
            Ok((permit, told)) => {
                if let Some(p) = permit {
                    exec.hold(attempt, p, circuits);
                }
                told
            }
            Err(ms) => {
                self.refuse(d, exec, gen, attempt, ms)?;
                return Ok(false);
            }
        };
        // A listener told of a change may have ended the flow.
        if !told || d.read(|m| m.is_running(gen, attempt))? {
            return Ok(true);
        }
        exec.end_permits(Some(attempt), None, &JsValue::UNDEFINED, 0.0);
        Ok(false)
    }

    /// Attempt `attempt` of flow `gen` was refused by the circuit breaker,
    /// which may let one through in `ms`: a failed attempt that called
    /// nothing, its error a `CircuitOpenError` (SPEC §2e rules 2 and 3).
    fn refuse(
        &self,
        d: &Decider,
        exec: &Execution,
        gen: u32,
        attempt: u32,
        ms: f64,
    ) -> Result<(), JsValue> {
        let error = circuit::open_error(exec.kind.circuit_key(), ms);
        observers::keep_error(&self.me, &error);
        if let Some(t) = exec.trace.as_deref() {
            t.refused(attempt, &error);
        }
        exec.kind.took(&error);
        exec.set_value(error);
        let hint = exec.kind.circuit_hint(ms);
        let input = Input::Refused {
            gen,
            attempt,
            retry_after: hint,
        };
        d.feed(input, js_sys::Date::now())?;
        Ok(())
    }

    /// `onBackoff` or `onHedge` of flow `gen` (see `user_code::notify`).
    fn notify(
        &self,
        d: &Decider,
        gen: u32,
        cb: Cb,
        attempt: u32,
        n: f64,
        elapsed: f64,
    ) -> Result<(), JsValue> {
        if let Some(exec) = self.find(gen) {
            if user_code::notify(&self.me, &exec, cb, attempt, n, elapsed).is_err() {
                d.with(|m| m.callback_threw(gen))?;
            }
        }
        Ok(())
    }

    /// Attempt `attempt` of flow `gen` settled with `value`: recorded as the
    /// flow's outcome (and `lastResult` or `lastError`) before the machine
    /// takes it, since its callbacks read them.
    pub fn settle_attempt(
        &self,
        d: &Decider,
        gen: u32,
        attempt: u32,
        fulfilled: bool,
        value: JsValue,
    ) -> Result<(), InUse> {
        if !d.read(|m| m.is_running(gen, attempt))? {
            return Ok(());
        }
        let Some(exec) = self.find(gen) else {
            return Ok(());
        };
        let cancelled = !fulfilled && props::is_abort_error(&value);
        if fulfilled {
            observers::keep_result(&self.me, &value);
        } else if !cancelled {
            observers::keep_error(&self.me, &value);
        }
        if let Some(t) = exec.trace.as_deref() {
            t.settled(
                attempt,
                fulfilled,
                &value,
                exec.kind.response(fulfilled, &value),
            );
        }
        // What the attempt came to, for its circuit (SPEC §2e rule 4).
        let now = js_sys::Date::now();
        let outcome = (!cancelled).then_some(fulfilled);
        exec.end_permits(Some(attempt), outcome, &value, now);
        exec.kind.took(&value);
        exec.set_value(value);
        let input = if fulfilled {
            Input::Ok { gen, attempt }
        } else {
            Input::Err {
                gen,
                attempt,
                cancelled,
            }
        };
        d.feed(input, now)
    }

    /// The `beforeRetry` hook before attempt `attempt` of flow `gen`
    /// settled with `value`: the machine takes its answer (a rejection is
    /// the flow's throw).
    pub fn settle_gate(
        &self,
        d: &Decider,
        gen: u32,
        attempt: u32,
        fulfilled: bool,
        value: &JsValue,
    ) -> Result<(), InUse> {
        let Some(exec) = self.find(gen) else {
            return Ok(());
        };
        let answer = exec.kind.gated(fulfilled, value);
        if answer == Provided::Threw {
            exec.threw(value.clone());
        }
        d.with(|m| m.answer_gate(gen, attempt, answer, js_sys::Date::now()))
    }

    /// Ends every execution with `error` (an internal error): the caller
    /// of each sees it instead of a promise that never settles.
    pub fn fail_all(&self, error: &JsValue) {
        let rejected: JsValue = Promise::reject(error).into();
        for exec in self.take_all() {
            exec.forget_tokens();
            exec.end_permits(None, None, &JsValue::UNDEFINED, 0.0);
            exec.resolve(&rejected);
        }
    }
}
