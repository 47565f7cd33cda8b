//! The retry state machine: inputs in, effects out.
//!
//! Sans-IO in the way `quinn-proto` is: every input carries `now` in ms, the
//! machine never reads a clock, never sleeps and never calls user code. It
//! queues [`Effect`]s that the host pops one at a time with
//! [`Machine::next_effect`]. Because the host pops an effect before carrying
//! it out, a callback that re-enters (abort, execute, setOptions) only adds
//! inputs; the machine drops whatever the ended flow still had queued.
//!
//! Every flow has a generation number; late settlements, answers and timers
//! of an older flow or attempt are ignored.
//!
//! This file holds the machine's shape, its inputs and its queue; the rest
//! is split by concern:
//! - [`flow`]: a flow from `execute()` to its end (success, final failure,
//!   abort, deadline);
//! - [`attempts`]: starting attempts and their deadlines, and a hedged
//!   flow's set of running attempts (SPEC §2c);
//! - [`waits`]: the decision after a failed attempt (what the option
//!   functions say, the budget) and the wait it leads to.

mod attempts;
mod flow;
mod waits;

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;

use super::budget::Budgets;
use super::effect::{AbortReason, Effect, Outcome, Provided, Timer, TIMERS};
use super::options::{Cb, Flag, Num, Policy, Throw};
use super::random::Rng;
use super::state::{State, Status};
use attempts::Hedged;
use waits::Gather;

/// What an active flow is doing. In a hedged flow, `Attempt` means that no
/// decision is being taken (its attempts are in [`Hedged`]), and a
/// decision goes through `Gathering` and `Deciding` while they run.
#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// The function's promise for `attempt` is pending.
    Attempt,
    /// A failed attempt waits for values from option functions.
    /// Boxed: most flows never fail, and every retryer stays small (under
    /// load every pending flow is a retryer of its own).
    Gathering(Box<Gather>),
    /// The retry is decided; its callbacks are queued.
    Deciding,
    /// The backoff timer runs.
    Waiting,
    /// The wait is over, and the host's hook decides whether the next
    /// attempt goes (see [`Effect::Gate`]).
    Gating,
}

/// One `execute()` from start to decision.
#[derive(Clone, Debug, PartialEq)]
struct Flow {
    gen: u32,
    started: f64,
    /// The attempt running (or, during a wait, the one that failed); in a
    /// hedged flow, the most recently started.
    attempt: u32,
    phase: Phase,
    deadline: f64,
    /// The last decorrelated delay; negative before the first (an
    /// `Option<f64>` would make every retryer 8 bytes larger).
    prev_delay: f64,
    listening: bool,
    /// The failure last decided about was a circuit breaker's refusal: a
    /// give-up now reports `'circuit-open'` (SPEC §2e rule 3).
    refused: bool,
    /// Started inside another retryer's running attempt and passing
    /// through: one attempt, its failure handed straight back.
    passthrough: bool,
    /// Retryers started inside this flow's attempts must pass through (an
    /// enclosing flow, or this retryer, has `innerRetries: false`).
    forbids_inner: bool,
    /// A hedged flow's running attempts and schedule; `None` for a flow
    /// that makes one attempt at a time (one pointer, in what was padding
    /// on wasm32).
    hedge: Option<Box<Hedged>>,
}

// A flow without hedging pays nothing for it: on wasm32 the pointer fits
// in the padding the flow already had.
#[cfg(target_arch = "wasm32")]
const _: () = assert!(core::mem::size_of::<Flow>() <= 48);

/// A queued item: an effect for the host, or a step the machine takes
/// itself when the host reaches it (so state changes land between the
/// callbacks they belong between).
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Out(Effect),
    /// After the retry callbacks: wait, retry at once, or time out.
    Continue {
        gen: u32,
        attempt: u32,
        delay: f64,
        decided_at: f64,
    },
    /// After `onError` of a final failure: the flow is no longer executing.
    Finalize {
        gen: u32,
    },
    /// The execution-timeout error now is the last error.
    MarkError {
        gen: u32,
    },
    /// The waiting decisions of a hedged flow go on (at `at`); `decided`:
    /// after the callbacks of a decision that started nothing, which ends
    /// it.
    Resume {
        gen: u32,
        at: f64,
        decided: bool,
    },
    /// A hedge delay of 0: the attempt after `after` starts now, once
    /// `after` ran its synchronous part.
    StartNext {
        gen: u32,
        after: u32,
        at: f64,
    },
}

impl Step {
    fn gen(&self) -> Option<u32> {
        match self {
            Step::Out(e) => e.gen(),
            Step::Continue { gen, .. }
            | Step::Finalize { gen }
            | Step::MarkError { gen }
            | Step::Resume { gen, .. }
            | Step::StartNext { gen, .. } => Some(*gen),
        }
    }

    /// Steps that only make sense while their flow goes on; an abort drops
    /// them. Clean-up (clearing timers, unlistening, cancelling a losing
    /// attempt) and settling stay.
    fn is_progress(&self) -> bool {
        match self {
            Step::Out(e) => matches!(
                e,
                Effect::Invoke { .. }
                    | Effect::StartTimer { .. }
                    | Effect::Call { .. }
                    | Effect::Backoff { .. }
                    | Effect::Hedge { .. }
                    | Effect::Eval { .. }
                    | Effect::Gate { .. }
                    | Effect::Listen { .. }
                    | Effect::AbortAttempt { .. }
                    | Effect::TimeOut { .. }
            ),
            Step::Continue { .. }
            | Step::MarkError { .. }
            | Step::Resume { .. }
            | Step::StartNext { .. } => true,
            Step::Finalize { .. } => false,
        }
    }
}

/// A pending `execute()` whose `enabled` function is being evaluated.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PendingStart {
    gen: u32,
    now: f64,
    outside_aborted: bool,
    inside: Option<bool>,
    hedges: bool,
}

/// What a retryer keeps between flows: the policy, the state and the
/// jitter generator. Everything a flow needs beyond it is in [`Busy`],
/// allocated when the retryer starts something and freed when it is idle
/// again, so a retryer at rest (and every retryer waiting for the host's
/// finalizer) takes only this.
#[derive(Clone, Debug)]
struct Core {
    state: State,
    rng: Rng,
    /// Shared by the machines made with one policy (`Machine::new` with an
    /// `Rc`): retryers built from the same options hold it once.
    policy: Rc<Policy>,
    last_gen: u32,
    last_started: u32,
    listeners: bool,
    /// Someone observes flows (the host's tracing channels have
    /// subscribers): every wait, give-up and abort is told, whether or
    /// not its callback is set.
    traced: bool,
    enabled_hint: bool,
}

/// What a retryer holds while something is under way: the active flow,
/// a start waiting for `enabled`, queued steps and armed timers.
#[derive(Clone, Debug, Default)]
struct Busy {
    flow: Option<Flow>,
    /// Boxed: only a dynamic `enabled` ever sets it, and every busy
    /// retryer is 20 bytes smaller for it.
    pending_start: Option<Box<PendingStart>>,
    /// The step to take first, before `front` and `queue`. A flow without
    /// callbacks or subscribers never has more than one step waiting, so it
    /// never allocates either vector.
    head: Option<Step>,
    /// Steps to take after `head`, the next one LAST (a stack, so popping is
    /// cheap and no ring-buffer code is linked into the wasm build).
    queue: Vec<Step>,
    /// While a popped step is being expanded: what it queues after `head`,
    /// in order, to go before everything in `queue`.
    front: Vec<Step>,
    expanding: bool,
    /// The flow each timer was started for, valid where its bit in
    /// `armed_bits` is set; cleared once it fired or a clear was queued, so
    /// a timer that fires in between is ignored.
    armed: [u32; 3],
    armed_bits: u8,
}

impl Busy {
    /// Nothing under way: no flow, no start waiting for `enabled`, no step
    /// queued and no timer armed.
    fn is_idle(&self) -> bool {
        self.flow.is_none()
            && self.pending_start.is_none()
            && self.head.is_none()
            && self.queue.is_empty()
            && self.armed_bits == 0
    }
}

/// The retry state machine of one retryer.
#[derive(Clone, Debug)]
pub struct Machine {
    core: Core,
    /// `None` while idle.
    busy: Option<Box<Busy>>,
}

/// A machine while an input is taken: its core and its busy part, borrowed
/// apart so a step can read the policy while it changes the flow.
struct Work<'a> {
    c: &'a mut Core,
    b: &'a mut Busy,
}

impl Machine {
    /// A machine with `policy` (already validated; a `Policy` or a shared
    /// `Rc<Policy>`). `entropy` seeds the jitter generator unless the policy
    /// has a `seed`.
    pub fn new(policy: impl Into<Rc<Policy>>, entropy: u64) -> Machine {
        let policy = policy.into();
        let rng = match policy.seed {
            Some(seed) => Rng::from_f64(seed),
            None => Rng::new(entropy),
        };
        let init = policy.initial();
        let state = State {
            execution_count: init.execution_count.unwrap_or(0.0),
            last_execution_time: init.last_execution_time.unwrap_or(0.0),
            total_execution_time: init.total_execution_time.unwrap_or(0.0),
            has_last_result: init.has_last_result,
            has_last_error: init.has_last_error,
            ..State::default()
        };
        let enabled_hint = policy.enabled != Flag::Static(false);
        Machine {
            core: Core {
                state,
                rng,
                policy,
                last_gen: 0,
                last_started: 0,
                listeners: false,
                traced: false,
                enabled_hint,
            },
            busy: None,
        }
    }

    /// The current policy.
    pub fn policy(&self) -> &Policy {
        &self.core.policy
    }

    /// The current policy, shared: for another machine with the same one.
    pub fn shared_policy(&self) -> Rc<Policy> {
        Rc::clone(&self.core.policy)
    }

    /// The numeric state.
    pub fn state(&self) -> &State {
        &self.core.state
    }

    /// `status`, from the state and what is known of `enabled`.
    pub fn status(&self) -> Status {
        self.core.state.status(self.core.enabled_hint)
    }

    /// Whether a flow is active (started and not yet decided).
    pub fn is_active(&self) -> bool {
        self.flow().is_some()
    }

    /// Whether nothing is under way: no flow, no start waiting for
    /// `enabled`, no effect queued and no timer armed. A host needs none of
    /// its flow resources (timers, listeners, promise reactions) then.
    pub fn is_idle(&self) -> bool {
        self.busy.as_deref().is_none_or(Busy::is_idle)
    }

    /// Whether retryers started inside the active flow's attempts must pass
    /// through (see [`Machine::execute_within`]).
    pub fn forbids_inner(&self) -> bool {
        self.flow().is_some_and(|f| f.forbids_inner)
    }

    /// The generation of the newest `execute()`.
    pub fn last_gen(&self) -> u32 {
        self.core.last_gen
    }

    /// Whether effects are waiting to be popped.
    pub fn has_effects(&self) -> bool {
        self.busy
            .as_deref()
            .is_some_and(|b| b.head.is_some() || !b.queue.is_empty())
    }

    /// The active flow, if any.
    fn flow(&self) -> Option<&Flow> {
        self.busy.as_deref()?.flow.as_ref()
    }

    /// Replaces the policy (`setOptions`, already validated). Does not touch
    /// a running flow; dynamic values are read at the next decision. A new
    /// `seed` restarts the jitter sequence.
    pub fn set_policy(&mut self, policy: impl Into<Rc<Policy>>) {
        self.work(|w| w.set_policy(policy))
    }

    /// What the host learnt of a dynamic `enabled` outside a flow.
    pub fn set_enabled_hint(&mut self, enabled: bool) {
        self.work(|w| w.set_enabled_hint(enabled))
    }

    /// Whether anyone subscribed to state changes.
    pub fn set_listeners(&mut self, any: bool) {
        self.core.listeners = any;
    }

    /// Whether someone observes this retryer's flows (the host's tracing
    /// channels have subscribers): then every wait ([`Effect::Backoff`]),
    /// give-up and abort ([`Effect::Call`] of `onGiveUp` and `onAbort`) is
    /// emitted, whether or not its callback is set.
    pub fn set_traced(&mut self, traced: bool) {
        self.core.traced = traced;
    }

    /// `reset()`: the default state; an active flow goes on.
    pub fn reset(&mut self) {
        self.work(|w| w.reset())
    }

    /// The next effect to carry out, if any. A step the machine takes on
    /// the way may start a hedged attempt, which asks the budget.
    pub fn next_effect(&mut self, budgets: &mut dyn Budgets) -> Option<Effect> {
        // Idle: nothing queued, and no busy part to make for finding that.
        self.busy.as_ref()?;
        self.work(|w| w.next_effect(budgets))
    }

    /// `execute()` outside any retryer's attempt: returns the generation of
    /// the new flow.
    pub fn execute(&mut self, now: f64, outside_aborted: bool) -> u32 {
        self.work(|w| w.execute_within(now, outside_aborted, None, true))
    }

    /// `execute()` of a flow started inside another retryer's running
    /// attempt when `inside` is `Some(forbids)` (`forbids`: that flow makes
    /// every retryer inside it pass through). Such a flow passes through
    /// when it `forbids` or this retryer's `nested` is `'passthrough'`: it
    /// makes one attempt and hands its failure straight back (`onGiveUp`
    /// reason `'nested'`, always a rejection), so one layer owns retries.
    /// `hedges`: whether this flow's attempts may overlap when the policy
    /// has `hedge` (a flow passing through never hedges).
    pub fn execute_within(
        &mut self,
        now: f64,
        outside_aborted: bool,
        inside: Option<bool>,
        hedges: bool,
    ) -> u32 {
        self.work(|w| w.execute_within(now, outside_aborted, inside, hedges))
    }

    /// The attempt `attempt` of flow `gen` rejected (or threw). `abort_error`
    /// says the error's name is `AbortError`: a cancellation, not a failure.
    pub fn attempt_err(
        &mut self,
        gen: u32,
        attempt: u32,
        abort_error: bool,
        now: f64,
        budgets: &mut dyn Budgets,
    ) {
        self.work(|w| w.attempt_err(gen, attempt, abort_error, None, now, budgets))
    }

    /// The attempt `attempt` of flow `gen` was refused by a circuit
    /// breaker, which may let one through in `retry_after` ms (`Infinity`:
    /// not before a reset). A failed attempt that called nothing: the
    /// budget is not asked, the hint replaces the backoff and the user's
    /// `retryAfter`, and a give-up reports `'circuit-open'` (SPEC §2e
    /// rules 2 and 3).
    pub fn attempt_refused(
        &mut self,
        gen: u32,
        attempt: u32,
        retry_after: f64,
        now: f64,
        budgets: &mut dyn Budgets,
    ) {
        self.work(|w| w.attempt_refused(gen, attempt, retry_after, now, budgets))
    }

    /// The attempt `attempt` of flow `gen` fulfilled.
    pub fn attempt_ok(&mut self, gen: u32, attempt: u32, now: f64, budgets: &mut dyn Budgets) {
        self.work(|w| w.attempt_ok(gen, attempt, now, budgets))
    }

    /// A timer fired.
    pub fn timer_fired(&mut self, timer: Timer, now: f64, budgets: &mut dyn Budgets) {
        self.work(|w| w.timer_fired(timer, now, budgets))
    }

    /// `abort()` (reason `Manual`) or the outside signal fired (`Signal`).
    /// Without an active flow nothing happens.
    pub fn abort(&mut self, reason: AbortReason) {
        self.work(|w| w.abort(reason))
    }

    /// A callback or listener of flow `gen` threw. An active flow ends at
    /// once; a decided one keeps its course but rejects with what was thrown.
    pub fn callback_threw(&mut self, gen: u32) {
        self.work(|w| w.callback_threw(gen))
    }

    /// The answer to an [`Effect::Eval`] of flow `gen`.
    pub fn provide(&mut self, gen: u32, value: Provided, now: f64, budgets: &mut dyn Budgets) {
        self.work(|w| w.provide(gen, value, now, budgets))
    }

    /// The answer, at `now`, to the [`Effect::Gate`] before attempt
    /// `attempt` of flow `gen`: `Bool(true)` (or anything but the two
    /// below) sends it, `Bool(false)` stops the flow there, with the last
    /// failure as its final one (`onGiveUp` reason `'not-retryable'`), and
    /// `Threw` ends it with what the hook threw. A late answer (the flow
    /// ended meanwhile) changes nothing.
    pub fn answer_gate(&mut self, gen: u32, attempt: u32, answer: Provided, now: f64) {
        self.work(|w| w.answer_gate(gen, attempt, answer, now))
    }

    // ----- helpers -----

    /// Whether attempt `attempt` of flow `gen` is running now: its
    /// settlement would be taken, where any other is ignored.
    pub fn is_running(&self, gen: u32, attempt: u32) -> bool {
        self.flow()
            .is_some_and(|f| f.gen == gen && f.is_running(attempt))
    }

    /// Runs `f` with the busy part in place (made if the machine was
    /// idle), and frees that part again once nothing is under way.
    fn work<T>(&mut self, f: impl FnOnce(&mut Work<'_>) -> T) -> T {
        let mut busy = self.busy.take().unwrap_or_default();
        let out = f(&mut Work {
            c: &mut self.core,
            b: &mut busy,
        });
        if !busy.is_idle() {
            self.busy = Some(busy);
        }
        out
    }
}

impl Flow {
    /// Whether `attempt` of this flow is running: the one attempt (not
    /// waiting or deciding), or one of a hedged flow's running ones.
    #[inline]
    fn is_running(&self, attempt: u32) -> bool {
        match &self.hedge {
            None => self.attempt == attempt && matches!(self.phase, Phase::Attempt),
            Some(h) => h.is_running(attempt),
        }
    }
}

impl Work<'_> {
    /// Replaces the policy (`setOptions`, already validated). Does not touch
    /// a running flow; dynamic values are read at the next decision. A new
    /// `seed` restarts the jitter sequence.
    fn set_policy(&mut self, policy: impl Into<Rc<Policy>>) {
        let policy = policy.into();
        if policy.seed.is_some() && policy.seed != self.c.policy.seed {
            self.c.rng = Rng::from_f64(policy.seed.unwrap_or(0.0));
        }
        let hint = match policy.enabled {
            Flag::Static(b) => b,
            Flag::Dynamic => self.c.enabled_hint,
        };
        self.c.policy = policy;
        self.set_enabled_hint(hint);
    }

    /// What the host learnt of a dynamic `enabled` outside a flow.
    fn set_enabled_hint(&mut self, enabled: bool) {
        if self.c.enabled_hint != enabled {
            self.c.enabled_hint = enabled;
            self.touch();
        }
    }

    /// `reset()`: the default state; an active flow goes on.
    fn reset(&mut self) {
        let version = self.c.state.version;
        self.c.state = State {
            version,
            ..State::default()
        };
        self.touch();
    }

    /// The next effect to carry out, if any.
    fn next_effect(&mut self, budgets: &mut dyn Budgets) -> Option<Effect> {
        while let Some(step) = self.b.head.take().or_else(|| self.b.queue.pop()) {
            if let Step::Out(effect) = step {
                if let Effect::StartTimer { gen, timer, .. } = effect {
                    self.set_armed(timer, Some(gen));
                }
                return Some(effect);
            }
            // A step the machine takes itself: what it queues goes before
            // everything that was queued after it.
            self.b.expanding = true;
            match step {
                Step::Continue {
                    gen,
                    attempt,
                    delay,
                    decided_at,
                } => self.continue_after_callbacks(gen, attempt, delay, decided_at),
                // Only while no newer flow started (the active flow, if any,
                // is always the last one started).
                Step::Finalize { gen } => {
                    if gen == self.c.last_started
                        && self.b.flow.is_none()
                        && self.c.state.is_executing
                    {
                        self.c.state.is_executing = false;
                        self.touch();
                    }
                }
                Step::MarkError { gen } => {
                    if gen == self.c.last_started {
                        self.c.state.has_last_error = true;
                        self.touch();
                    }
                }
                Step::Resume { gen, at, decided } => self.resume(gen, at, decided, budgets),
                Step::StartNext { gen, after, at } => self.start_next(gen, after, at, budgets),
                Step::Out(_) => {}
            }
            self.flush_front();
        }
        None
    }

    // ----- helpers -----

    /// Whether attempt `attempt` of flow `gen` is running now: its
    /// settlement would be taken, where any other is ignored.
    fn is_running(&self, gen: u32, attempt: u32) -> bool {
        matches!(&self.b.flow, Some(f) if f.gen == gen && f.is_running(attempt))
    }

    /// The flow `gen`, when it is the active one.
    fn flow_of(&mut self, gen: u32) -> Option<&mut Flow> {
        self.b.flow.as_mut().filter(|f| f.gen == gen)
    }

    // `get` rather than indexing: no bounds-check panic path, which would
    // drag integer formatting into the wasm build.
    fn armed_for(&self, timer: Timer) -> Option<u32> {
        let bit = 1u8 << (timer as u8);
        if self.b.armed_bits & bit == 0 {
            return None;
        }
        self.b.armed.get(timer as usize).copied()
    }

    fn set_armed(&mut self, timer: Timer, gen: Option<u32>) {
        let bit = 1u8 << (timer as u8);
        match (gen, self.b.armed.get_mut(timer as usize)) {
            (Some(g), Some(slot)) => {
                *slot = g;
                self.b.armed_bits |= bit;
            }
            _ => self.b.armed_bits &= !bit,
        }
    }

    // Inlined: at most call sites the callback is not set, and the check
    // is cheaper than the call.
    #[inline(always)]
    fn call(&mut self, gen: u32, cb: Cb, arg: u32) {
        if self.c.policy.has(cb) || (self.c.traced && matches!(cb, Cb::GiveUp | Cb::Abort)) {
            self.emit(Effect::Call { gen, cb, arg });
        }
    }

    fn clear_timer(&mut self, timer: Timer) {
        if self.armed_for(timer).is_some() {
            self.set_armed(timer, None);
            self.emit(Effect::ClearTimer { timer });
        }
    }

    fn clear_timers(&mut self) {
        // Most flows never arm a timer: one check instead of three.
        if self.b.armed_bits == 0 {
            return;
        }
        for t in TIMERS {
            self.clear_timer(t);
        }
    }

    fn unlisten(&mut self, flow: &Flow) {
        if flow.listening {
            self.emit(Effect::Unlisten { gen: flow.gen });
        }
    }

    /// Drops what flow `gen` queued to go on (it ends). Returns the
    /// attempt of a `TimeOut` dropped, whose signal the end must abort.
    fn drop_queued(&mut self, gen: u32) -> Option<u32> {
        let timed_out = self
            .b
            .head
            .iter()
            .chain(self.b.queue.iter())
            .chain(self.b.front.iter())
            .find_map(|s| match *s {
                Step::Out(Effect::TimeOut { gen: g, attempt }) if g == gen => Some(attempt),
                _ => None,
            });
        self.purge(false, &|s| s.gen() == Some(gen) && s.is_progress());
        timed_out
    }

    /// Flow `gen` ends while a step is being expanded: what the step
    /// queues goes before what was queued after it, so whatever the flow
    /// still had queued to go on would come after its `Finish`; it is
    /// dropped. (A host that drains before each input never has any.)
    fn drop_behind(&mut self, gen: u32) {
        if self.b.expanding {
            self.purge(true, &|s| s.gen() == Some(gen) && s.is_progress());
        }
    }

    /// Drops the queued steps `drop` picks: only those queued after the
    /// step being expanded with `behind`, else all. Returns whether any
    /// was. (One function, not a `retain` per caller: each would be its
    /// own copy in the module.)
    #[inline(never)]
    fn purge(&mut self, behind: bool, drop: &dyn Fn(&Step) -> bool) -> bool {
        let before = self.b.queue.len() + self.b.front.len() + usize::from(self.b.head.is_some());
        if !behind {
            if self.b.head.as_ref().is_some_and(drop) {
                self.b.head = None;
            }
            self.b.front.retain(|s| !drop(s));
        }
        self.b.queue.retain(|s| !drop(s));
        before != self.b.queue.len() + self.b.front.len() + usize::from(self.b.head.is_some())
    }

    fn touch(&mut self) {
        self.c.state.version = self.c.state.version.wrapping_add(1);
        if self.c.listeners {
            self.emit(Effect::StateChanged);
        }
    }

    fn emit(&mut self, effect: Effect) {
        self.push(Step::Out(effect));
    }

    /// Queues a step. While a popped step is being expanded, new steps go
    /// before everything that was queued after it.
    #[inline(never)]
    fn push(&mut self, step: Step) {
        // The step popped for expanding came from `head` or, with `head`
        // empty, from `queue`: either way `head` is free then, and the
        // first step it queues goes before everything else.
        if self.b.head.is_none()
            && (self.b.expanding || self.b.queue.is_empty())
            && self.b.front.is_empty()
        {
            self.b.head = Some(step);
        } else if self.b.expanding {
            self.b.front.push(step);
        } else {
            self.b.queue.insert(0, step);
        }
    }

    fn flush_front(&mut self) {
        self.b.expanding = false;
        for step in self.b.front.drain(..).rev() {
            self.b.queue.push(step);
        }
    }
}

/// Total attempts allowed: `maxAttempts`, or with `intervals` one more than
/// there are intervals (or fewer, when `maxAttempts` was given too).
fn effective_max_attempts(policy: &Policy, dynamic: Option<f64>) -> f64 {
    let m = match policy.max_attempts {
        Num::Static(v) => v,
        Num::Dynamic => dynamic.unwrap_or(1.0),
    };
    match policy.intervals.as_ref() {
        Some(list) if policy.max_attempts_set => m.min(list.len() as f64 + 1.0),
        Some(list) => list.len() as f64 + 1.0,
        None => m,
    }
}

/// How a flow ends after `Finish` is queued: the outcome of a final failure
/// under `throwOnError` (a flow passing through always rejects).
fn failure_outcome(policy: &Policy, nested: bool) -> Outcome {
    match policy.throw_mode() {
        _ if nested => Outcome::Reject,
        Throw::Last | Throw::Always => Outcome::Reject,
        Throw::Never => Outcome::Undefined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::budget::NoBudgets;

    fn machine(policy: Policy) -> Machine {
        Machine::new(policy, 7)
    }

    fn drain(m: &mut Machine) -> Vec<Effect> {
        core::iter::from_fn(|| m.next_effect(&mut NoBudgets)).collect()
    }

    #[test]
    fn a_machine_at_rest_is_its_core_and_one_pointer() {
        let pointer = core::mem::size_of::<usize>();
        let core = core::mem::size_of::<Core>();
        assert!(core::mem::size_of::<Machine>() <= core + pointer.max(8));
        assert!(machine(Policy::default()).busy.is_none());
    }

    #[test]
    fn the_busy_part_is_freed_when_a_flow_ends() {
        let mut m = machine(Policy::default());
        let gen = m.execute(0.0, false);
        assert!(m.busy.is_some());
        drain(&mut m);
        m.attempt_ok(gen, 1, 5.0, &mut NoBudgets);
        assert!(m.busy.is_some(), "the Finish is still queued");
        drain(&mut m);
        assert!(m.busy.is_none());

        // A failure, a wait, a retry, a success.
        let gen = m.execute(10.0, false);
        drain(&mut m);
        m.attempt_err(gen, 1, false, 11.0, &mut NoBudgets);
        let effects = drain(&mut m);
        assert!(effects.iter().any(|e| matches!(
            e,
            Effect::StartTimer {
                timer: Timer::Wait,
                ..
            }
        )));
        assert!(m.busy.is_some(), "a wait is armed");
        m.timer_fired(Timer::Wait, 1011.0, &mut NoBudgets);
        drain(&mut m);
        m.attempt_ok(gen, 2, 1012.0, &mut NoBudgets);
        drain(&mut m);
        assert!(m.busy.is_none());

        // An abort while idle makes nothing.
        m.abort(AbortReason::Manual);
        assert!(m.busy.is_none() && m.next_effect(&mut NoBudgets).is_none());
    }
}
