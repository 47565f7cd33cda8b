//! A retryer's engine room: its machine, and the JavaScript objects its
//! flows use, and the pump that carries out the machine's effects.
//!
//! Every input (execute, a settled attempt, a timer, an abort, an answer)
//! goes into the machine under a short borrow, then [`Inner::pump`] pops
//! effects one at a time and carries each out with no borrow held. A
//! callback that re-enters (`abort()`, `execute()`, `setOptions()`) only
//! feeds the machine; the pump already running drains what it queued.

use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use js_sys::{Array, Function, Promise};
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortSignal;

use super::errors;
use super::fetch::FetchCall;
use super::flow::{peek, Flow};
use super::js::{self, Holder};
use super::live;
use super::nesting;
use super::values::{self, function};
use crate::core::budget::{Budget, Budgets};
use crate::core::effect::{AbortReason, Effect, Eval, GiveUp, Outcome, Provided, Timer, TIMERS};
use crate::core::machine::Machine;
use crate::core::options::{Cb, Flag, Opt, Policy};

/// Lends a retryer's budget to the machine for one input.
struct Lent<'a>(Option<&'a mut Budget>);

impl Budgets for Lent<'_> {
    fn budget(&mut self, _id: u32) -> Option<&mut Budget> {
        self.0.as_deref_mut()
    }
}

/// An input that may draw on the budget (see [`Inner::feed`]).
enum Input {
    Ok {
        gen: u32,
        attempt: u32,
    },
    Err {
        gen: u32,
        attempt: u32,
        cancelled: bool,
    },
    Timer(Timer),
    Provide {
        gen: u32,
        value: Provided,
    },
}

/// `retryer.store.state`, as serde-wasm-bindgen writes it out: a plain
/// object with exactly the eight fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateView {
    current_attempt: u32,
    execution_count: f64,
    is_executing: bool,
    #[serde(with = "serde_wasm_bindgen::preserve")]
    last_error: JsValue,
    last_execution_time: f64,
    #[serde(with = "serde_wasm_bindgen::preserve")]
    last_result: JsValue,
    status: &'static str,
    total_execution_time: f64,
}

/// What `onBackoff` receives about a wait, written out by serde-wasm-bindgen.
#[derive(Serialize)]
struct BackoffInfo {
    /// ms the wait lasts.
    delay: f64,
    /// The attempt that failed.
    attempt: u32,
    /// What it failed with, as it was.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    error: JsValue,
    /// ms since `execute()`.
    elapsed: f64,
}

/// One retryer, shared by its JavaScript object, its store and (while
/// something is under way) the table of live retryers.
pub struct Inner {
    /// Module-unique: a handler bound to another retryer's slot finds a
    /// different id and does nothing.
    pub id: u32,
    /// Where this retryer is in the live table, while it is there.
    slot: Cell<Option<u32>>,
    machine: RefCell<Machine>,
    budget: RefCell<Option<Rc<RefCell<Budget>>>>,
    pumping: Cell<bool>,
    /// Unfinished flows, oldest first (the newest is the active one).
    flows: RefCell<Vec<Rc<Flow>>>,
    /// Host timer ids by kind (`undefined` when not armed).
    timers: [Cell<JsValue>; 3],
    /// The outside signal and the listener on it.
    listening: Cell<Option<(AbortSignal, Function)>>,
    last_result: Cell<JsValue>,
    last_error: Cell<JsValue>,
    /// The last state snapshot and the state version it shows.
    snapshot: Cell<Option<(u32, JsValue)>>,
    /// Store listeners, by subscription token.
    subscribers: RefCell<Vec<(u32, JsValue)>>,
    next_token: Cell<u32>,
    /// For a `retryFetch` call: its request, whose attempts are fetches.
    fetch: Option<Rc<FetchCall>>,
}

impl Inner {
    /// A retryer with a validated `policy`.
    pub fn new(policy: Policy, budget: Option<Rc<RefCell<Budget>>>) -> Inner {
        Inner::with(shared(policy), budget, None)
    }

    /// The retryer of one `retryFetch` call, with the policy of its
    /// `retryFetch` function.
    pub fn for_fetch(
        policy: Rc<Policy>,
        budget: Option<Rc<RefCell<Budget>>>,
        call: FetchCall,
    ) -> Inner {
        Inner::with(policy, budget, Some(Rc::new(call)))
    }

    fn with(
        policy: Rc<Policy>,
        budget: Option<Rc<RefCell<Budget>>>,
        fetch: Option<Rc<FetchCall>>,
    ) -> Inner {
        Inner {
            id: live::next_id(),
            slot: Cell::new(None),
            machine: RefCell::new(Machine::new(policy, super::entropy::next_seed())),
            budget: RefCell::new(budget),
            pumping: Cell::new(false),
            flows: RefCell::new(Vec::new()),
            timers: Default::default(),
            listening: Cell::new(None),
            last_result: Cell::new(JsValue::UNDEFINED),
            last_error: Cell::new(JsValue::UNDEFINED),
            snapshot: Cell::new(None),
            subscribers: RefCell::new(Vec::new()),
            next_token: Cell::new(0),
            fetch,
        }
    }

    /// Runs `f` on the machine; `None` only if the machine is borrowed,
    /// which no path allows.
    pub fn machine<T>(&self, f: impl FnOnce(&mut Machine) -> T) -> Option<T> {
        let mut m = self.machine.try_borrow_mut().ok()?;
        Some(f(&mut m))
    }

    /// Feeds the machine an input that may draw on the budget, which is
    /// lent for the call.
    #[inline(never)]
    fn feed(&self, input: Input) {
        let budget = self.budget.try_borrow().ok().and_then(|b| b.clone());
        let mut lent = budget.as_ref().and_then(|b| b.try_borrow_mut().ok());
        let b = &mut Lent(lent.as_deref_mut());
        let Ok(mut m) = self.machine.try_borrow_mut() else {
            return;
        };
        let now = js_sys::Date::now();
        match input {
            Input::Ok { gen, attempt } => m.attempt_ok(gen, attempt, now, b),
            Input::Err {
                gen,
                attempt,
                cancelled,
            } => m.attempt_err(gen, attempt, cancelled, now, b),
            Input::Timer(t) => m.timer_fired(t, now, b),
            Input::Provide { gen, value } => m.provide(gen, value, now, b),
        }
    }

    /// Replaces the policy and, when given, the budget (`setOptions`).
    pub fn set_policy(&self, policy: Policy, budget: Option<Option<Rc<RefCell<Budget>>>>) {
        if let Some(b) = budget {
            if let Ok(mut held) = self.budget.try_borrow_mut() {
                *held = b;
            }
        }
        self.machine(|m| m.set_policy(shared(policy)));
    }

    /// A copy of the current policy.
    pub fn policy(&self) -> Policy {
        self.machine(|m| m.policy().clone()).unwrap_or_default()
    }

    /// Sets the state's `lastResult` and `lastError` values (initial state).
    pub fn set_last(&self, result: Option<JsValue>, error: Option<JsValue>) {
        if let Some(r) = result {
            self.last_result.set(r);
        }
        if let Some(e) = error {
            self.last_error.set(e);
        }
    }

    // ----- inputs -----

    /// `execute(...args)` of the retryer whose object is `this`: a promise
    /// for the new flow.
    pub fn execute(self: &Rc<Self>, this: JsValue, args: Array) -> Promise {
        let (promise, resolve) = live::promise();
        let Some(resolve) = resolve else {
            return promise;
        };
        let aborted = self.signal_aborted(&this);
        let inside = if nesting::enabled() {
            nesting::current()
        } else {
            None
        };
        let now = js_sys::Date::now();
        let Some(gen) = self.machine(|m| m.execute_within(now, aborted, inside)) else {
            return promise;
        };
        let no_args = args.length() == 0;
        if let Ok(mut flows) = self.flows.try_borrow_mut() {
            flows.push(Rc::new(Flow::new(gen, this, args, no_args, resolve)));
        }
        self.pump();
        promise
    }

    /// Whether the outside `signal` (when the policy has one) is aborted.
    fn signal_aborted(&self, this: &JsValue) -> bool {
        if !self.machine(|m| m.policy().signal).unwrap_or(false) {
            return false;
        }
        self.outside_signal(this)
            .and_then(|s| values::get(&s, "aborted").ok())
            .is_some_and(|a| a.is_truthy())
    }

    /// The outside `signal` option: an `AbortSignal`, or an object shaped
    /// like one, used through its methods.
    fn outside_signal(&self, this: &JsValue) -> Option<AbortSignal> {
        if let Some(call) = &self.fetch {
            return call.signal();
        }
        let options = values::get(this, "options").ok()?;
        let signal = values::get(&options, "signal").ok()?;
        values::is_signal(&signal).then(|| signal.unchecked_into())
    }

    /// Attempt `attempt` of flow `gen` settled with `value`.
    pub fn settled(self: &Rc<Self>, gen: u32, attempt: u32, fulfilled: bool, value: JsValue) {
        if !self
            .machine(|m| m.is_running(gen, attempt))
            .unwrap_or(false)
        {
            return;
        }
        let Some(flow) = self.flow(gen) else {
            return;
        };
        let cancelled = !fulfilled && values::is_abort_error(&value);
        // Recorded before any effect runs: callbacks read them.
        if fulfilled {
            self.last_result.set(value.clone());
        } else if !cancelled {
            self.last_error.set(value.clone());
        }
        flow.value.set(value);
        self.feed(if fulfilled {
            Input::Ok { gen, attempt }
        } else {
            Input::Err {
                gen,
                attempt,
                cancelled,
            }
        });
        self.pump();
    }

    /// A host timer of kind `timer` fired.
    pub fn timer_fired(self: &Rc<Self>, timer: Timer) {
        if let Some(t) = self.timers.get(timer as usize) {
            t.set(JsValue::UNDEFINED);
        }
        self.feed(Input::Timer(timer));
        self.pump();
    }

    /// The outside signal of flow `gen` fired.
    pub fn outside_abort(self: &Rc<Self>, gen: u32) {
        self.machine(|m| {
            if m.is_active() && m.last_gen() == gen {
                m.abort(AbortReason::Signal);
            }
        });
        self.pump();
    }

    /// `abort()`.
    pub fn abort(self: &Rc<Self>) {
        self.machine(|m| m.abort(AbortReason::Manual));
        self.pump();
    }

    /// `reset()`.
    pub fn reset(self: &Rc<Self>) {
        self.last_result.set(JsValue::UNDEFINED);
        self.last_error.set(JsValue::UNDEFINED);
        self.machine(|m| m.reset());
        self.pump();
    }

    /// Asks a dynamic `enabled` for the `status` shown outside a flow.
    pub fn hint_enabled(self: &Rc<Self>, this: &JsValue) {
        if !self
            .machine(|m| m.policy().enabled == Flag::Dynamic)
            .unwrap_or(false)
        {
            return;
        }
        let Some((_, f)) = self.option_fn(this, Opt::Enabled) else {
            return;
        };
        // Nobody can receive an error now: the next execute() asks again
        // and rejects with what it throws.
        if let Ok(v) = f.call1(&JsValue::UNDEFINED, this) {
            let enabled = v.is_truthy();
            self.machine(|m| m.set_enabled_hint(enabled));
            self.pump();
        }
    }

    /// `getAbortSignal()`: the running attempt's signal, or `None` without
    /// an active flow.
    pub fn abort_signal(&self) -> Option<AbortSignal> {
        let (gen, attempt) = self.machine(|m| {
            m.is_active()
                .then(|| (m.last_gen(), m.state().current_attempt))
        })??;
        self.flow(gen)?.signal(attempt)
    }

    // ----- the store -----

    /// `store.state`: the same object while nothing changed.
    pub fn state(&self) -> JsValue {
        let Some((version, view)) = self.machine(|m: &mut Machine| {
            let s = m.state();
            let view = StateView {
                current_attempt: s.current_attempt,
                execution_count: s.execution_count,
                is_executing: s.is_executing,
                last_error: JsValue::UNDEFINED,
                last_execution_time: s.last_execution_time,
                last_result: JsValue::UNDEFINED,
                status: m.status().name(),
                total_execution_time: s.total_execution_time,
            };
            let flags = (s.has_last_result, s.has_last_error);
            (s.version, (view, flags))
        }) else {
            return JsValue::UNDEFINED;
        };
        if let Some((v, snap)) = self.snapshot.take() {
            if v == version {
                let copy = snap.clone();
                self.snapshot.set(Some((v, snap)));
                return copy;
            }
        }
        let (mut view, (has_result, has_error)) = view;
        if has_result {
            view.last_result = peek(&self.last_result);
        }
        if has_error {
            view.last_error = peek(&self.last_error);
        }
        let snap = serde_wasm_bindgen::to_value(&view).unwrap_or(JsValue::UNDEFINED);
        self.snapshot.set(Some((version, snap.clone())));
        snap
    }

    /// Adds a store listener; returns its token.
    pub fn subscribe(&self, listener: JsValue) -> u32 {
        let token = self.next_token.get().wrapping_add(1);
        self.next_token.set(token);
        if let Ok(mut subs) = self.subscribers.try_borrow_mut() {
            subs.push((token, listener));
        }
        self.machine(|m| m.set_listeners(true));
        token
    }

    /// Removes the store listener with `token`.
    pub fn unsubscribe(&self, token: u32) {
        let none_left = match self.subscribers.try_borrow_mut() {
            Ok(mut subs) => {
                subs.retain(|(t, _)| *t != token);
                subs.is_empty()
            }
            Err(_) => false,
        };
        if none_left {
            self.machine(|m| m.set_listeners(false));
        }
    }

    // ----- the pump -----

    /// Carries out queued effects until none is left. Inside a pump (a
    /// callback re-entered), returns at once: the running pump drains.
    pub fn pump(self: &Rc<Self>) {
        if self.pumping.replace(true) {
            return;
        }
        while let Some(Some(effect)) = self.machine(|m| m.next_effect()) {
            self.carry(effect);
        }
        self.pumping.set(false);
        if self.machine(|m| m.is_idle()).unwrap_or(false) {
            if let Some(slot) = self.slot.take() {
                live::release(slot);
            }
        }
    }

    /// This retryer's slot in the live table, taking one if needed.
    fn slot(self: &Rc<Self>) -> u32 {
        if let Some(s) = self.slot.get() {
            return s;
        }
        let s = live::hold(self).unwrap_or(u32::MAX);
        self.slot.set(Some(s));
        s
    }

    fn carry(self: &Rc<Self>, effect: Effect) {
        match effect {
            Effect::Invoke { gen, attempt } => self.invoke(gen, attempt),
            Effect::StartTimer { timer, ms, .. } => {
                if let (Timer::Wait, Some(call)) = (timer, &self.fetch) {
                    // Retrying: nobody will read this response.
                    call.release();
                }
                self.clear_timer(timer);
                let slot = self.slot();
                let id = live::start_timer(slot, self.id, timer, ms);
                if let Some(t) = self.timers.get(timer as usize) {
                    t.set(id);
                }
            }
            Effect::ClearTimer { timer } => self.clear_timer(timer),
            Effect::AbortAttempt { gen, reason } => self.abort_attempt(gen, reason),
            Effect::Call { gen, cb, arg } => self.call(gen, cb, arg),
            Effect::Backoff {
                gen,
                attempt,
                delay,
                elapsed,
            } => self.backoff(gen, attempt, delay, elapsed),
            Effect::Eval { gen, what, attempt } => self.eval(gen, what, attempt),
            Effect::Listen { gen } => self.listen(gen),
            Effect::Unlisten { .. } => {
                if let Some((signal, listener)) = self.listening.take() {
                    let _ = signal.remove_event_listener_with_callback("abort", &listener);
                }
            }
            Effect::StateChanged => self.notify(),
            Effect::Finish { gen, outcome } => self.finish(gen, outcome),
        }
    }

    fn invoke(self: &Rc<Self>, gen: u32, attempt: u32) {
        let Some(flow) = self.flow(gen) else {
            return;
        };
        flow.keep_controller_of(attempt);
        if let Some(call) = &self.fetch {
            // The last failing response is let go of before the next try.
            call.release();
            let promise = call.attempt(flow.signal(attempt));
            let (ok, err) = live::reactions(self.slot(), self.id, gen, attempt);
            if let Err(e) = promise.unchecked_ref::<js::Thenable>().then(&ok, &err) {
                self.settled(gen, attempt, false, e);
            }
            return;
        }
        let holder: &Holder = flow.this.unchecked_ref();
        let called = if nesting::enabled() {
            // As the current attempt, for the retryers it starts.
            let forbids = self.machine(|m| m.forbids_inner()).unwrap_or(false);
            let f = values::get(&flow.this, "fn").unwrap_or(JsValue::UNDEFINED);
            let (token, called) =
                nesting::call_in(self, gen, attempt, forbids, &f, &flow.this, &flow.args);
            nesting::forget(flow.token.replace(token));
            called
        } else if flow.no_args {
            holder.call_fn0()
        } else {
            holder.call_fn(&flow.args)
        };
        // A value, a thenable or a throw all become a promise; a promise (as
        // an async function returns) is used as it is.
        let promise = match called {
            Ok(v) if v.has_type::<Promise>() => v.unchecked_into(),
            Ok(v) => js::promise_resolve(&v).unwrap_or_else(|e| Promise::reject(&e)),
            Err(e) => Promise::reject(&e),
        };
        let (ok, err) = live::reactions(self.slot(), self.id, gen, attempt);
        if let Err(e) = promise.unchecked_ref::<js::Thenable>().then(&ok, &err) {
            self.settled(gen, attempt, false, e);
        }
    }

    fn clear_timer(&self, timer: Timer) {
        if let Some(t) = self.timers.get(timer as usize) {
            let id = t.take();
            if !id.is_undefined() {
                js::clear_timeout(&id);
            }
        }
    }

    fn abort_attempt(&self, gen: u32, reason: AbortReason) {
        let Some(flow) = self.flow(gen) else {
            return;
        };
        if let Some(call) = &self.fetch {
            call.aborted(reason);
        }
        if reason == AbortReason::ExecutionTimeout {
            let limit = self
                .machine(|m| m.policy().max_execution_time)
                .unwrap_or(f64::INFINITY);
            let error = errors::timeout_error(limit);
            flow.value.set(error.clone());
            self.last_error.set(error.clone());
            flow.abort_signal(&error);
        } else if flow.has_controller() {
            flow.abort_signal(&errors::abort_error(reason.name()));
        }
    }

    fn call(&self, gen: u32, cb: Cb, arg: u32) {
        let Some(flow) = self.flow(gen) else {
            return;
        };
        let this = &flow.this;
        let Some((options, f)) = self.option_fn(this, cb.opt()) else {
            return;
        };
        let o = &options;
        let result = match cb {
            Cb::Retry => f.call3(o, &arg.into(), &flow.value(), this),
            Cb::Error => f.call3(o, &flow.value(), &flow.args, this),
            Cb::LastError => f.call2(o, &flow.value(), this),
            Cb::Success => f.call3(o, &flow.value(), &flow.args, this),
            Cb::Settled => f.call2(o, &flow.args, this),
            Cb::Abort => {
                let reason = AbortReason::from_code(arg).unwrap_or(AbortReason::Manual);
                f.call2(o, &values::key_of(reason.name()), this)
            }
            Cb::ExecutionTimeout | Cb::TotalExecutionTimeout => f.call1(o, this),
            Cb::GiveUp => {
                let reason = GiveUp::from_code(arg).unwrap_or(GiveUp::AttemptsExhausted);
                f.call3(o, &flow.value(), &values::key_of(reason.name()), this)
            }
            // Reported as its own effect, with the wait (`backoff`).
            Cb::Backoff => return,
        };
        if let Err(e) = result {
            flow.threw(e);
            self.machine(|m| m.callback_threw(gen));
        }
    }

    /// `onBackoff({ delay, attempt, error, elapsed }, retryer)`.
    fn backoff(&self, gen: u32, attempt: u32, delay: f64, elapsed: f64) {
        let Some(flow) = self.flow(gen) else {
            return;
        };
        let Some((options, f)) = self.option_fn(&flow.this, Opt::OnBackoff) else {
            return;
        };
        let info = BackoffInfo {
            delay,
            attempt,
            error: flow.value(),
            elapsed,
        };
        let info = serde_wasm_bindgen::to_value(&info).unwrap_or(JsValue::UNDEFINED);
        if let Err(e) = f.call2(&options, &info, &flow.this) {
            flow.threw(e);
            self.machine(|m| m.callback_threw(gen));
        }
    }

    /// The function an option holds now (`retryer.options[opt]`), if any,
    /// with the options object it is called on.
    fn option_fn(&self, this: &JsValue, opt: Opt) -> Option<(JsValue, Function)> {
        let options = values::get(this, "options").ok()?;
        let f = values::get(&options, opt.name()).ok().and_then(function)?;
        Some((options, f))
    }

    fn eval(&self, gen: u32, what: Eval, attempt: u32) {
        let Some(flow) = self.flow(gen) else {
            return;
        };
        let this = &flow.this;
        let answer =
            match values::get(this, "options").and_then(|o| values::get(&o, what.opt().name())) {
                // retryFetch asks for these itself: no function, no answer.
                Ok(value) if self.fetch.is_some() && value.is_undefined() => Ok(value),
                Ok(value) => match function(value.clone()) {
                    // A value put in place of the function is taken as it is,
                    // as pacer's `parseFunctionOrValue` does.
                    None => Ok(value),
                    Some(f) => {
                        let u = &JsValue::UNDEFINED;
                        match what {
                            Eval::ShouldRetry | Eval::RetryAfter => {
                                f.call3(u, &flow.value(), &attempt.into(), this)
                            }
                            Eval::Backoff => f.call2(u, &attempt.into(), this),
                            _ => f.call1(u, this),
                        }
                    }
                },
                Err(e) => Err(e),
            };
        let provided = match answer {
            Ok(v) => {
                let truthy = matches!(what, Eval::Enabled | Eval::ShouldRetry);
                let mut p = values::provided(&v, truthy);
                if let Some(call) = &self.fetch {
                    p = fetch_answer(call, what, &flow.value(), &v, p);
                }
                flow.invalid.set(v);
                p
            }
            Err(e) => {
                flow.threw(e);
                Provided::Threw
            }
        };
        self.feed(Input::Provide {
            gen,
            value: provided,
        });
    }

    fn listen(self: &Rc<Self>, gen: u32) {
        let Some(flow) = self.flow(gen) else {
            return;
        };
        let Some(signal) = self.outside_signal(&flow.this) else {
            return;
        };
        let listener = live::signal_listener(self.slot(), self.id, gen);
        if signal
            .add_event_listener_with_callback("abort", &listener)
            .is_ok()
        {
            self.listening.set(Some((signal, listener)));
        }
    }

    fn notify(&self) {
        // A copy: a listener may subscribe or unsubscribe while called.
        let subs = match self.subscribers.try_borrow() {
            Ok(s) => s.clone(),
            Err(_) => return,
        };
        if subs.is_empty() {
            return;
        }
        let state = self.state();
        for (_, listener) in subs.iter() {
            let called = match listener.dyn_ref::<Function>() {
                Some(f) => f.call1(&JsValue::UNDEFINED, &state),
                None => values::get(listener, "next").and_then(|next| match function(next) {
                    Some(next) => next.call1(listener, &state),
                    None => Ok(JsValue::UNDEFINED),
                }),
            };
            if let Err(e) = called {
                live::report(&e);
            }
        }
    }

    fn finish(&self, gen: u32, outcome: Outcome) {
        // Out of the list first: nothing of a settled flow stays reachable,
        // and resolving with a thenable reads its `then` (user code).
        let Some(flow) = self.take_flow(gen) else {
            return;
        };
        nesting::forget(flow.token.take());
        let Some(resolve) = flow.resolve.take() else {
            return;
        };
        let rejected = |e: &JsValue| JsValue::from(Promise::reject(e));
        if let Some(call) = &self.fetch {
            let value = match outcome {
                Outcome::Invalid(opt) => errors::dynamic_error(opt, &flow.invalid.take()),
                Outcome::Thrown => flow.thrown.take().unwrap_or(JsValue::UNDEFINED),
                _ => flow.value.take(),
            };
            let settled = call.settle(outcome, value).unwrap_or_else(|e| rejected(&e));
            resolve
                .unchecked_ref::<js::Resolve>()
                .call(&JsValue::UNDEFINED, &settled);
            return;
        }
        let settle_with = match outcome {
            Outcome::Result => flow.value.take(),
            Outcome::Undefined => JsValue::UNDEFINED,
            Outcome::Reject => rejected(&flow.value.take()),
            Outcome::Invalid(opt) => rejected(&errors::dynamic_error(opt, &flow.invalid.take())),
            Outcome::Thrown => rejected(&flow.thrown.take().unwrap_or(JsValue::UNDEFINED)),
        };
        // A resolve function never throws: no `catch` needed.
        resolve
            .unchecked_ref::<js::Resolve>()
            .call(&JsValue::UNDEFINED, &settle_with);
    }

    fn flow(&self, gen: u32) -> Option<Rc<Flow>> {
        let flows = self.flows.try_borrow().ok()?;
        flows.iter().rev().find(|f| f.gen == gen).cloned()
    }

    fn take_flow(&self, gen: u32) -> Option<Rc<Flow>> {
        let mut flows = self.flows.try_borrow_mut().ok()?;
        let i = flows.iter().rposition(|f| f.gen == gen)?;
        Some(flows.remove(i))
    }

    /// Ends whatever is under way (`free()` / `Symbol.dispose`).
    pub fn dispose(self: &Rc<Self>) {
        self.abort();
        for t in TIMERS {
            self.clear_timer(t);
        }
    }
}

thread_local! {
    /// The policy the last retryer was built with.
    static LAST_POLICY: RefCell<Option<Rc<Policy>>> = const { RefCell::new(None) };
}

/// `policy`, shared with the last retryer built when both are equal: code
/// that makes a retryer per call from the same options (a retryer per
/// flow under load, `asyncRetry(fn, options)()` per request) then keeps
/// one policy instead of one each (170 of the 520 B a retryer takes in wasm
/// memory, measured with 20,000 retryers).
fn shared(policy: Policy) -> Rc<Policy> {
    LAST_POLICY.with(|last| {
        let Ok(mut last) = last.try_borrow_mut() else {
            return Rc::new(policy);
        };
        match last.as_ref() {
            Some(p) if **p == policy => Rc::clone(p),
            _ => {
                let p = Rc::new(policy);
                *last = Some(Rc::clone(&p));
                p
            }
        }
    })
}

/// A `retryFetch` flow's answer to `shouldRetry` or `retryAfter`: the
/// request's own rules after what the user's function (if any) said.
fn fetch_answer(
    call: &FetchCall,
    what: Eval,
    error: &JsValue,
    given: &JsValue,
    p: Provided,
) -> Provided {
    match (what, p) {
        (_, Provided::Threw) => p,
        (Eval::ShouldRetry, _) => {
            let user = (!given.is_undefined()).then(|| given.is_truthy());
            Provided::Bool(call.should_retry(error, user))
        }
        (Eval::RetryAfter, Provided::Number(_) | Provided::Nothing) => {
            let user = given.as_f64();
            call.retry_after(error, user)
                .map_or(Provided::Nothing, Provided::Number)
        }
        _ => p,
    }
}

/// The options object `retryer.options` shows, read from a retryer object.
pub fn options_view(this: &JsValue) -> Option<JsValue> {
    values::get(this, "options").ok()
}
