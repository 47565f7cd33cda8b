//! A retryer's engine: its machine, what it holds while busy, and the pump
//! that carries out the machine's effects.
//!
//! Every input (execute, a settled attempt, a timer, an abort, an answer)
//! goes into the machine under a short borrow, then [`Engine::pump`] pops
//! effects one at a time and carries each out with no borrow held. A
//! callback that re-enters (`abort()`, `execute()`, `setOptions()`) only
//! feeds the machine; the pump already running drains what it queued.
//!
//! Who holds a retryer: its JavaScript object always (through the exported
//! class), and the live table of this file while it is busy, from the
//! moment it starts something until its machine is idle again. Then the
//! busy period's [`Run`] and everything JavaScript in it is dropped, and
//! only the machine's numbers and policy stay with the object.
//!
//! The files below are layered: each uses only those above it.

// The machine and its budget, behind short borrows.
mod decider;
// How JavaScript wakes a retryer: the module's handlers, bound to numbers.
mod wakeups;
// A host timer and a signal listener, each cleared when dropped.
mod guards;
// lastResult, lastError, the snapshot and subscribers, on the object.
mod observers;
// The fetches of a retryFetch call (the build with `retryFetch`).
#[cfg(feature = "fetch")]
mod fetch_call;
// What an attempt is: a function call, or a fetch.
mod attempt;
// What an observed flow publishes on the tracing channels.
mod traced;
// One execute() call's JavaScript objects.
mod execution;
// Calling the user's code.
mod user_code;
// What a busy retryer holds.
mod run;
// Carrying out effects.
mod effects;

use alloc::rc::{Rc, Weak};
use core::cell::{Cell, RefCell};

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use super::circuit::Circuits;
use super::errors;
use super::nesting::{self, Running};
use super::props;
use super::tracing;
use crate::core::budget::NoBudgets;
use crate::core::effect::{AbortReason, Timer};
use crate::core::options::{Flag, Policy};
use crate::core::slots::{Address, Slots};
use decider::{Decider, Input};
use execution::Execution;
use run::Run;
use traced::Traced;

pub use attempt::Kind;
pub use decider::SharedBudget;
#[cfg(feature = "fetch")]
pub use fetch_call::{cancel_stream, FetchCall};

/// Set in the attempt number a promise's reactions are bound with when
/// that promise is the `beforeRetry` hook's answer before that attempt,
/// not the attempt itself (attempts never number 2^31).
pub const GATE: u32 = 1 << 31;

thread_local! {
    /// Busy retryers, where the handlers find them.
    static LIVE: RefCell<Slots<Rc<Engine>>> = const { RefCell::new(Slots::new()) };
}

/// The busy retryer at `slot` with `key`, if it is still there.
fn find(slot: u32, key: u32) -> Option<Rc<Engine>> {
    LIVE.with(|t| t.try_borrow().ok()?.get(Address { slot, key }).cloned())
}

/// One retryer's engine.
pub struct Engine {
    decider: Decider,
    /// While busy: its JavaScript side.
    run: Cell<Option<Rc<Run>>>,
    /// The state version of the snapshot kept on the retryer's object.
    shown: Cell<u32>,
}

impl Running for Engine {
    fn is_running(&self, gen: u32, attempt: u32) -> bool {
        self.decider
            .read(|m| m.is_running(gen, attempt))
            .unwrap_or(false)
    }
}

impl Engine {
    /// A retryer with a validated `policy`, `budget` and `breaker`.
    pub fn new(
        policy: Rc<Policy>,
        budget: Option<SharedBudget>,
        breaker: Option<Rc<Circuits>>,
    ) -> Engine {
        Engine {
            decider: Decider::new(policy, super::entropy::next_seed(), budget, breaker),
            run: Cell::new(None),
            shown: Cell::new(0),
        }
    }

    /// The busy period's JavaScript side, if busy.
    fn current_run(&self) -> Option<Rc<Run>> {
        let run = self.run.take();
        self.run.set(run.clone());
        run
    }

    /// The busy period's JavaScript side, begun (and the retryer put in
    /// the live table) if it was idle.
    fn run(self: &Rc<Self>, me: &JsValue) -> Result<Rc<Run>, JsValue> {
        if let Some(run) = self.current_run() {
            return Ok(run);
        }
        let at = LIVE
            .with(|t| t.try_borrow_mut().ok()?.insert(Rc::clone(self)))
            .ok_or_else(|| errors::internal("live table"))?;
        let weak: Weak<Engine> = Rc::downgrade(self);
        let runner: Weak<dyn Running> = weak;
        let run = Rc::new(Run::new(at, me.clone(), runner));
        self.run.set(Some(Rc::clone(&run)));
        Ok(run)
    }

    // ----- inputs -----

    /// `execute(...args)` of the retryer whose object is `me`, with
    /// attempts of `kind`: a promise for the new flow.
    pub fn execute(self: &Rc<Self>, me: &JsValue, args: Array, kind: Kind) -> Promise {
        let Some((promise, resolve)) = wakeups::promise() else {
            return Promise::reject(&errors::internal("promise"));
        };
        let aborted = self.signal_aborted(me, &kind);
        let inside = if nesting::enabled() {
            nesting::current()
        } else {
            None
        };
        // Observed flows publish on the tracing channels, beginning now.
        let traced = tracing::observed_now().then(|| Traced::begin(me, &args, kind.request()));
        let returned = traced.as_ref().map(Traced::flow);
        let observed = traced.is_some();
        let now = js_sys::Date::now();
        let hedges = kind.hedges();
        let started = self
            .decider
            .with(|m| {
                m.set_traced(observed);
                m.execute_within(now, aborted, inside, hedges)
            })
            .map_err(JsValue::from)
            .and_then(|gen| {
                let run = self.run(me)?;
                let exec = Execution::new(gen, args, kind, resolve.clone(), traced);
                run.add(exec)
                    .ok_or_else(|| errors::internal("executions in use"))
            });
        match started {
            Ok(()) => self.pump(me),
            Err(e) => {
                resolve
                    .call1(&JsValue::UNDEFINED, &Promise::reject(&e))
                    .ok();
                self.break_down(&e);
            }
        }
        if let Some(flow) = returned {
            Traced::returned(&flow);
        }
        promise
    }

    /// Whether the outside signal (when the policy has one) is aborted.
    fn signal_aborted(&self, me: &JsValue, kind: &Kind) -> bool {
        if !self.decider.read(|m| m.policy().signal).unwrap_or(false) {
            return false;
        }
        kind.outside_signal(me)
            .and_then(|s| props::get(&s, "aborted").ok())
            .is_some_and(|a| a.is_truthy())
    }

    /// Attempt `attempt` of flow `gen` settled with `value` (or, with
    /// [`GATE`] set in `attempt`, the `beforeRetry` gate before it).
    fn settled(self: &Rc<Self>, gen: u32, attempt: u32, fulfilled: bool, value: JsValue) {
        let Some(run) = self.current_run() else {
            return;
        };
        let taken = if attempt & GATE != 0 {
            run.settle_gate(&self.decider, gen, attempt & !GATE, fulfilled, &value)
        } else {
            run.settle_attempt(&self.decider, gen, attempt, fulfilled, value)
        };
        match taken {
            Ok(()) => self.pump(&run.me),
            Err(e) => self.break_down(&e.into()),
        }
    }

    /// A host timer of kind `timer` fired.
    fn timer_fired(self: &Rc<Self>, timer: Timer) {
        let Some(run) = self.current_run() else {
            return;
        };
        run.timers.fired(timer);
        match self.decider.feed(Input::Timer(timer), js_sys::Date::now()) {
            Ok(()) => self.pump(&run.me),
            Err(e) => self.break_down(&e.into()),
        }
    }

    /// The outside signal of flow `gen` fired.
    fn outside_abort(self: &Rc<Self>, gen: u32) {
        let Some(run) = self.current_run() else {
            return;
        };
        let aborted = self.decider.with(|m| {
            if m.is_active() && m.last_gen() == gen {
                m.abort(AbortReason::Signal);
            }
        });
        match aborted {
            Ok(()) => self.pump(&run.me),
            Err(e) => self.break_down(&e.into()),
        }
    }

    /// `abort(reason)` of the retryer whose object is `me`.
    pub fn abort(self: &Rc<Self>, me: &JsValue, reason: AbortReason) -> Result<(), JsValue> {
        self.decider.with(|m| m.abort(reason))?;
        self.pump(me);
        Ok(())
    }

    /// `reset()`.
    pub fn reset(self: &Rc<Self>, me: &JsValue) -> Result<(), JsValue> {
        observers::forget_results(me);
        self.decider.with(|m| m.reset())?;
        self.pump(me);
        Ok(())
    }

    /// A copy of the current policy, for `setOptions` to change.
    pub fn policy(&self) -> Result<Policy, JsValue> {
        Ok(self.decider.policy()?)
    }

    /// `setOptions`: the new policy and, when given, budget and breaker,
    /// already validated.
    pub fn set_policy(
        self: &Rc<Self>,
        me: &JsValue,
        policy: Policy,
        budget: Option<Option<SharedBudget>>,
        breaker: Option<Option<Rc<Circuits>>>,
    ) -> Result<(), JsValue> {
        self.decider.set_policy(shared(policy), budget, breaker)?;
        self.hint_enabled(me);
        self.pump(me);
        Ok(())
    }

    /// Asks a dynamic `enabled` for the `status` shown outside a flow.
    pub fn hint_enabled(self: &Rc<Self>, me: &JsValue) {
        let dynamic = self.decider.read(|m| m.policy().enabled == Flag::Dynamic);
        if !matches!(dynamic, Ok(true)) {
            return;
        }
        if let Some(enabled) = user_code::enabled_now(me) {
            if self.decider.with(|m| m.set_enabled_hint(enabled)).is_ok() {
                self.pump(me);
            }
        }
    }

    /// `getAbortSignal()`: the running attempt's signal, or `None` without
    /// an active flow.
    pub fn abort_signal(&self) -> Option<AbortSignal> {
        let (gen, attempt) = self
            .decider
            .read(|m| {
                m.is_active()
                    .then(|| (m.last_gen(), m.state().current_attempt))
            })
            .ok()??;
        self.current_run()?.find(gen)?.signal(attempt)
    }

    /// `store.state` of the retryer whose object is `me`.
    pub fn state(&self, me: &JsValue) -> Result<JsValue, JsValue> {
        let (state, status) = self.decider.read(|m| (m.state().clone(), m.status()))?;
        Ok(observers::state(me, &state, status, &self.shown))
    }

    /// `store.subscribe(listener)` of the retryer whose object is `me`.
    pub fn subscribe(&self, me: &JsValue, listener: JsValue) -> Result<Function, JsValue> {
        let unsubscribe = observers::subscribe(me, listener)?;
        self.decider.with(|m| m.set_listeners(true))?;
        Ok(unsubscribe)
    }

    /// The state a retryer starts with (`initialState`'s `lastResult` and
    /// `lastError`, when given).
    pub fn set_initial(me: &JsValue, result: Option<JsValue>, error: Option<JsValue>) {
        if let Some(r) = result {
            observers::keep_result(me, &r);
        }
        if let Some(e) = error {
            observers::keep_error(me, &e);
        }
    }

    /// Ends whatever is under way (`free()` / `Symbol.dispose`).
    pub fn dispose(self: &Rc<Self>) {
        if let Some(run) = self.current_run() {
            let _ = self.abort(&run.me, AbortReason::Manual);
        }
    }

    // ----- the pump -----

    /// Carries out queued effects until none is left, then, if the machine
    /// is idle, ends the busy period. Inside a pump (a callback re-entered),
    /// returns at once: the running pump drains.
    fn pump(self: &Rc<Self>, me: &JsValue) {
        if self.current_run().is_some_and(|run| run.pumping.get()) {
            return;
        }
        let mut pumping: Option<Rc<Run>> = None;
        let drained = loop {
            let effect = match self.decider.next_effect() {
                Ok(Some(effect)) => effect,
                Ok(None) => break Ok(()),
                Err(e) => break Err(JsValue::from(e)),
            };
            let run = match &pumping {
                Some(run) => Rc::clone(run),
                None => match self.run(me) {
                    Ok(run) => {
                        run.pumping.set(true);
                        pumping = Some(Rc::clone(&run));
                        run
                    }
                    Err(e) => break Err(e),
                },
            };
            if let Err(e) = run.carry(&self.decider, &self.shown, effect) {
                break Err(e);
            }
        };
        if let Some(run) = pumping {
            run.pumping.set(false);
        }
        match drained {
            Err(e) => self.break_down(&e),
            Ok(()) if self.decider.read(|m| m.is_idle()).unwrap_or(false) => self.end_run(),
            Ok(()) => {}
        }
    }

    /// The machine is idle: the busy period ends, and the live table lets
    /// go of the retryer.
    fn end_run(&self) {
        if let Some(run) = self.run.take() {
            let held = LIVE.with(|t| t.try_borrow_mut().ok()?.remove(run.at));
            // The caller still holds the engine: this drop frees nothing
            // that is running. The run's timers and listener, if any were
            // left, are cleared as it drops.
            drop(held);
            drop(run);
        }
    }

    /// An internal error (a bug): every execution rejects with `error`, the
    /// machine's flow is ended without carrying out its effects, and the
    /// busy period ends, so nothing hangs and nothing is left held.
    fn break_down(&self, error: &JsValue) {
        let _ = self.decider.with(|m| {
            m.abort(AbortReason::Manual);
            while m.next_effect(&mut NoBudgets).is_some() {}
        });
        if let Some(run) = self.current_run() {
            run.fail_all(error);
        }
        self.end_run();
    }
}

thread_local! {
    /// The policy the last retryer was built with.
    static LAST_POLICY: RefCell<Option<Rc<Policy>>> = const { RefCell::new(None) };
}

/// `policy`, shared with the last retryer built when both are equal: code
/// that makes a retryer per call from the same options (a retryer per
/// request, `asyncRetry(fn, options)()` per request) then keeps one policy
/// instead of one each.
pub fn shared(policy: Policy) -> Rc<Policy> {
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

// ----- the handlers JavaScript calls back (see `wakeups`) -----

/// An attempt's promise settled: `fulfilled` (1) with its value, or
/// rejected (0) with its reason.
#[wasm_bindgen(js_name = _settled, skip_typescript)]
pub fn on_settled(slot: u32, key: u32, gen: u32, attempt: u32, fulfilled: u32, value: JsValue) {
    if let Some(engine) = find(slot, key) {
        engine.settled(gen, attempt, fulfilled != 0, value);
    }
}

/// Attempt `attempt` of `retryFetch` flow `gen` got `got` from its fetch:
/// the response, or a rejected promise of the error a failing one stands
/// for.
#[cfg(feature = "fetch")]
#[wasm_bindgen(js_name = _fetched, skip_typescript)]
pub fn on_fetched(slot: u32, key: u32, gen: u32, attempt: u32, got: JsValue) -> JsValue {
    let found = find(slot, key).and_then(|engine| {
        let execution = engine.current_run()?.find(gen)?;
        Some((engine.is_running(gen, attempt), execution))
    });
    match found.as_ref().map(|(running, e)| (*running, &e.kind)) {
        Some((running, Kind::Fetch(call))) => call.fetched(running, got),
        // The flow is over: nobody takes this response.
        _ => {
            fetch_call::discard(&got);
            got
        }
    }
}

/// A host timer fired (`kind`: a `Timer` code).
#[wasm_bindgen(js_name = _timer, skip_typescript)]
pub fn on_timer(slot: u32, key: u32, kind: u32) {
    if let (Some(engine), Some(timer)) = (find(slot, key), Timer::from_code(kind)) {
        engine.timer_fired(timer);
    }
}

/// The outside signal of flow `gen` aborted.
#[wasm_bindgen(js_name = _signal, skip_typescript)]
pub fn on_signal(slot: u32, key: u32, gen: u32) {
    if let Some(engine) = find(slot, key) {
        engine.outside_abort(gen);
    }
}

/// The shared promise executor: keeps the `resolve` it is handed.
#[wasm_bindgen(js_name = _resolver, skip_typescript)]
pub fn on_resolver(resolve: JsValue) {
    wakeups::resolver(resolve);
}

/// Throws `error`, from a microtask: the host reports it as uncaught.
#[wasm_bindgen(js_name = _rethrow, skip_typescript)]
pub fn on_rethrow(error: JsValue) {
    wasm_bindgen::throw_val(error);
}
