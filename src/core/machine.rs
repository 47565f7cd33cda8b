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

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;

use super::backoff::{self, Backoff, Jitter};
use super::budget::Budgets;
use super::effect::{AbortReason, Effect, Eval, GiveUp, Outcome, Provided, Timer, TIMERS};
use super::options::{check_max_attempts, Cb, Flag, Nested, Num, Policy, Throw};
use super::random::Rng;
use super::state::{State, Status};

/// What an active flow is doing.
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

/// Values collected for the decision after a failed attempt.
#[derive(Clone, Debug, PartialEq)]
struct Gather {
    awaiting: Option<Eval>,
    should_retry: Option<bool>,
    max_attempts: Option<f64>,
    decided: Option<Option<GiveUp>>,
    base_wait: Option<f64>,
    max_wait: Option<f64>,
    retry_after: Option<Option<f64>>,
    custom: Option<f64>,
}

impl Gather {
    fn new() -> Gather {
        Gather {
            awaiting: None,
            should_retry: None,
            max_attempts: None,
            decided: None,
            base_wait: None,
            max_wait: None,
            retry_after: None,
            custom: None,
        }
    }
}

/// One `execute()` from start to decision.
#[derive(Clone, Debug, PartialEq)]
struct Flow {
    gen: u32,
    started: f64,
    attempt: u32,
    phase: Phase,
    deadline: f64,
    /// The last decorrelated delay; negative before the first (an
    /// `Option<f64>` would make every retryer 8 bytes larger).
    prev_delay: f64,
    listening: bool,
    /// Started inside another retryer's running attempt and passing
    /// through: one attempt, its failure handed straight back.
    passthrough: bool,
    /// Retryers started inside this flow's attempts must pass through (an
    /// enclosing flow, or this retryer, has `innerRetries: false`).
    forbids_inner: bool,
}

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
}

impl Step {
    fn gen(&self) -> Option<u32> {
        match self {
            Step::Out(e) => e.gen(),
            Step::Continue { gen, .. } | Step::Finalize { gen } | Step::MarkError { gen } => {
                Some(*gen)
            }
        }
    }

    /// Steps that only make sense while their flow goes on; an abort drops
    /// them. Clean-up (clearing timers, unlistening) and settling stay.
    fn is_progress(&self) -> bool {
        match self {
            Step::Out(e) => matches!(
                e,
                Effect::Invoke { .. }
                    | Effect::StartTimer { .. }
                    | Effect::Call { .. }
                    | Effect::Backoff { .. }
                    | Effect::Eval { .. }
                    | Effect::Gate { .. }
                    | Effect::Listen { .. }
                    | Effect::AbortAttempt { .. }
                    | Effect::TimeOut { .. }
            ),
            Step::Continue { .. } | Step::MarkError { .. } => true,
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

    /// The next effect to carry out, if any.
    pub fn next_effect(&mut self) -> Option<Effect> {
        // Idle: nothing queued, and no busy part to make for finding that.
        self.busy.as_ref()?;
        self.work(|w| w.next_effect())
    }

    /// `execute()` outside any retryer's attempt: returns the generation of
    /// the new flow.
    pub fn execute(&mut self, now: f64, outside_aborted: bool) -> u32 {
        self.work(|w| w.execute(now, outside_aborted))
    }

    /// `execute()` of a flow started inside another retryer's running
    /// attempt when `inside` is `Some(forbids)` (`forbids`: that flow makes
    /// every retryer inside it pass through). Such a flow passes through
    /// when it `forbids` or this retryer's `nested` is `'passthrough'`: it
    /// makes one attempt and hands its failure straight back (`onGiveUp`
    /// reason `'nested'`, always a rejection), so one layer owns retries.
    pub fn execute_within(&mut self, now: f64, outside_aborted: bool, inside: Option<bool>) -> u32 {
        self.work(|w| w.execute_within(now, outside_aborted, inside))
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
        self.work(|w| w.attempt_err(gen, attempt, abort_error, now, budgets))
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

    /// The answer to the [`Effect::Gate`] before attempt `attempt` of flow
    /// `gen`: `Bool(true)` (or anything but the two below) sends it,
    /// `Bool(false)` stops the flow there, with the last failure as its
    /// final one (`onGiveUp` reason `'not-retryable'`), and `Threw` ends it
    /// with what the hook threw. A late answer (the flow ended meanwhile)
    /// changes nothing.
    pub fn answer_gate(&mut self, gen: u32, attempt: u32, answer: Provided) {
        self.work(|w| w.answer_gate(gen, attempt, answer))
    }

    // ----- helpers -----

    /// Whether attempt `attempt` of flow `gen` is the one running now: its
    /// settlement would be taken, where any other is ignored.
    pub fn is_running(&self, gen: u32, attempt: u32) -> bool {
        matches!(self.flow(), Some(f) if f.gen == gen && f.attempt == attempt && matches!(f.phase, Phase::Attempt))
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
    fn next_effect(&mut self) -> Option<Effect> {
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
                Step::Out(_) => {}
            }
            self.flush_front();
        }
        None
    }

    /// `execute()` outside any retryer's attempt: returns the generation of
    /// the new flow.
    fn execute(&mut self, now: f64, outside_aborted: bool) -> u32 {
        self.execute_within(now, outside_aborted, None)
    }

    /// `execute()` of a flow started inside another retryer's running
    /// attempt when `inside` is `Some(forbids)` (`forbids`: that flow makes
    /// every retryer inside it pass through). Such a flow passes through
    /// when it `forbids` or this retryer's `nested` is `'passthrough'`: it
    /// makes one attempt and hands its failure straight back (`onGiveUp`
    /// reason `'nested'`, always a rejection), so one layer owns retries.
    fn execute_within(&mut self, now: f64, outside_aborted: bool, inside: Option<bool>) -> u32 {
        self.c.last_gen = self.c.last_gen.wrapping_add(1);
        let gen = self.c.last_gen;
        if !outside_aborted && self.starts_plainly() {
            self.start_plainly(gen, now, inside);
            return gen;
        }
        if let Some(old) = self.b.pending_start.take() {
            self.emit(Effect::Finish {
                gen: old.gen,
                outcome: Outcome::Undefined,
            });
        }
        match self.c.policy.enabled {
            Flag::Static(true) => self.start(gen, now, outside_aborted, inside),
            Flag::Static(false) => self.emit(Effect::Finish {
                gen,
                outcome: Outcome::Undefined,
            }),
            Flag::Dynamic => {
                self.b.pending_start = Some(Box::new(PendingStart {
                    gen,
                    now,
                    outside_aborted,
                    inside,
                }));
                self.emit(Effect::Eval {
                    gen,
                    what: Eval::Enabled,
                    attempt: 0,
                });
            }
        }
        gen
    }

    /// The attempt `attempt` of flow `gen` fulfilled.
    fn attempt_ok(&mut self, gen: u32, attempt: u32, now: f64, budgets: &mut dyn Budgets) {
        if !self.is_running(gen, attempt) {
            return;
        }
        let Some(flow) = self.b.flow.take() else {
            return;
        };
        let s = &mut self.c.state;
        s.execution_count += 1.0;
        s.is_executing = false;
        s.last_execution_time = now;
        s.total_execution_time = (now - flow.started).max(0.0);
        s.current_attempt = 0;
        s.has_last_result = true;
        if self.ends_plainly(&flow) {
            // What the general steps below come to in this case.
            self.c.state.version = self.c.state.version.wrapping_add(1);
            self.b.head = Some(Step::Out(Effect::Finish {
                gen,
                outcome: Outcome::Result,
            }));
            return;
        }
        if let Some(b) = self.c.policy.budget.and_then(|id| budgets.budget(id)) {
            b.record_success();
        }
        self.clear_timers();
        self.unlisten(&flow);
        self.touch();
        self.call(gen, Cb::Success, 0);
        self.call(gen, Cb::Settled, 0);
        self.emit(Effect::Finish {
            gen,
            outcome: Outcome::Result,
        });
    }

    /// The attempt `attempt` of flow `gen` rejected (or threw). `abort_error`
    /// says the error's name is `AbortError`: a cancellation, not a failure.
    fn attempt_err(
        &mut self,
        gen: u32,
        attempt: u32,
        abort_error: bool,
        now: f64,
        budgets: &mut dyn Budgets,
    ) {
        if !self.is_running(gen, attempt) {
            return;
        }
        self.clear_timer(Timer::Attempt);
        if abort_error {
            let Some(flow) = self.b.flow.take() else {
                return;
            };
            self.clear_timers();
            self.unlisten(&flow);
            self.c.state.is_executing = false;
            self.touch();
            self.call(gen, Cb::Settled, 0);
            self.emit(Effect::Finish {
                gen,
                outcome: Outcome::Undefined,
            });
            return;
        }
        self.c.state.has_last_error = true;
        self.touch();
        if let Some(flow) = self.b.flow.as_mut() {
            flow.phase = Phase::Gathering(Box::new(Gather::new()));
        }
        self.gather(now, budgets);
    }

    /// A timer fired.
    fn timer_fired(&mut self, timer: Timer, now: f64, budgets: &mut dyn Budgets) {
        let current = self.b.flow.as_ref().map(|f| f.gen);
        if current.is_none() || self.armed_for(timer) != current {
            return;
        }
        self.set_armed(timer, None);
        let Some(flow) = self.b.flow.as_ref() else {
            return;
        };
        let (gen, attempt) = (flow.gen, flow.attempt);
        let waiting = matches!(flow.phase, Phase::Waiting);
        let attempting = matches!(flow.phase, Phase::Attempt);
        match timer {
            Timer::Wait if waiting => self.next_attempt(attempt.saturating_add(1)),
            Timer::Attempt if attempting => self.execution_timeout(gen, now, budgets),
            Timer::Total => self.total_timeout(),
            _ => {}
        }
    }

    /// `abort()` (reason `Manual`) or the outside signal fired (`Signal`).
    /// Without an active flow nothing happens.
    fn abort(&mut self, reason: AbortReason) {
        if let Some(flow) = self.b.flow.take() {
            self.abort_flow(flow, reason);
        }
    }

    /// A callback or listener of flow `gen` threw. An active flow ends at
    /// once; a decided one keeps its course but rejects with what was thrown.
    fn callback_threw(&mut self, gen: u32) {
        if self.b.flow.as_ref().map(|f| f.gen) == Some(gen) {
            if let Some(flow) = self.b.flow.take() {
                self.drop_queued(gen);
                if matches!(flow.phase, Phase::Attempt) {
                    self.emit(Effect::AbortAttempt {
                        gen,
                        reason: AbortReason::Manual,
                    });
                }
                self.end_quietly(&flow, Outcome::Thrown);
            }
            return;
        }
        for step in self.b.head.iter_mut().chain(self.b.queue.iter_mut()) {
            if let Step::Out(Effect::Finish { gen: g, outcome }) = step {
                if *g == gen {
                    *outcome = Outcome::Thrown;
                }
            }
        }
    }

    /// The answer to an [`Effect::Eval`] of flow `gen`.
    fn provide(&mut self, gen: u32, value: Provided, now: f64, budgets: &mut dyn Budgets) {
        if let Some(pending) = self.b.pending_start.as_deref().copied() {
            if pending.gen == gen {
                self.b.pending_start = None;
                match value {
                    Provided::Threw => self.emit(Effect::Finish {
                        gen,
                        outcome: Outcome::Thrown,
                    }),
                    v => {
                        let enabled = matches!(v, Provided::Bool(true));
                        self.set_enabled_hint(enabled);
                        if enabled {
                            self.start(gen, pending.now, pending.outside_aborted, pending.inside);
                        } else {
                            self.emit(Effect::Finish {
                                gen,
                                outcome: Outcome::Undefined,
                            });
                        }
                    }
                }
                return;
            }
        }
        let total_finite = self.c.policy.max_total_execution_time.is_finite();
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        if flow.gen != gen {
            return;
        }
        let Phase::Gathering(g) = &mut flow.phase else {
            return;
        };
        let Some(what) = g.awaiting.take() else {
            return;
        };
        let accepted: Result<(), ()> = match (what, value) {
            (_, Provided::Threw) => Err(()),
            (Eval::ShouldRetry, v) => {
                g.should_retry = Some(matches!(v, Provided::Bool(true)));
                Ok(())
            }
            (Eval::MaxAttempts, Provided::Number(v)) => match check_max_attempts(v) {
                Ok(v) if v.is_finite() || total_finite => {
                    g.max_attempts = Some(v);
                    Ok(())
                }
                _ => Err(()),
            },
            (Eval::BaseWait, Provided::Number(v)) if v.is_finite() && v >= 0.0 => {
                g.base_wait = Some(v);
                Ok(())
            }
            (Eval::MaxWait, Provided::Number(v)) if v >= 0.0 => {
                g.max_wait = Some(v);
                Ok(())
            }
            (Eval::RetryAfter, Provided::Nothing) => {
                g.retry_after = Some(None);
                Ok(())
            }
            (Eval::RetryAfter, Provided::Number(v)) if v.is_finite() && v >= 0.0 => {
                g.retry_after = Some(Some(v));
                Ok(())
            }
            (Eval::Backoff, Provided::Number(v)) if v.is_finite() && v >= 0.0 => {
                g.custom = Some(v);
                Ok(())
            }
            _ => Err(()),
        };
        if accepted.is_err() {
            let outcome = if value == Provided::Threw {
                Outcome::Thrown
            } else {
                Outcome::Invalid(what.opt())
            };
            if let Some(flow) = self.b.flow.take() {
                self.end_quietly(&flow, outcome);
            }
            return;
        }
        self.gather(now, budgets);
    }

    /// The answer to the [`Effect::Gate`] before attempt `attempt` of flow
    /// `gen` (see [`Machine::answer_gate`]).
    fn answer_gate(&mut self, gen: u32, attempt: u32, answer: Provided) {
        let Some(flow) = self.b.flow.as_ref() else {
            return;
        };
        let gating = matches!(flow.phase, Phase::Gating);
        if flow.gen != gen || flow.attempt.saturating_add(1) != attempt || !gating {
            return;
        }
        match answer {
            Provided::Bool(false) => {
                if let Some(flow) = self.b.flow.take() {
                    self.conclude(&flow, GiveUp::NotRetryable, false);
                }
            }
            Provided::Threw => {
                if let Some(flow) = self.b.flow.take() {
                    self.end_quietly(&flow, Outcome::Thrown);
                }
            }
            _ => self.begin_attempt(attempt),
        }
    }

    // ----- flow steps -----

    /// Whether `execute()` can only start a first attempt and queue nothing
    /// else: no flow to abort, no start pending, `enabled` statically true,
    /// no signal to listen to, no deadline to arm, nobody subscribed, and
    /// nothing queued. Most calls are this case; `start_plainly` takes it
    /// without the general steps, to the same state and the same effect.
    fn starts_plainly(&self) -> bool {
        let p = &*self.c.policy;
        self.b.flow.is_none()
            && self.b.pending_start.is_none()
            && self.nothing_queued()
            && p.enabled == Flag::Static(true)
            && !p.signal
            && !p.max_total_execution_time.is_finite()
            && !p.max_execution_time.is_finite()
    }

    /// Whether a success of `flow` queues nothing but its `Finish`: no budget
    /// to credit, no timer to clear, no signal to stop listening to, no
    /// `onSuccess`/`onSettled`, nobody subscribed, and nothing queued.
    fn ends_plainly(&self, flow: &Flow) -> bool {
        let p = &*self.c.policy;
        p.budget.is_none()
            && self.b.armed_bits == 0
            && !flow.listening
            && self.nothing_queued()
            && !p.has(Cb::Success)
            && !p.has(Cb::Settled)
    }

    /// `start` and `begin_attempt(1)` when `starts_plainly`.
    fn start_plainly(&mut self, gen: u32, now: f64, inside: Option<bool>) {
        self.open_flow(gen, now, inside);
        self.c.state.version = self.c.state.version.wrapping_add(1);
        self.b.head = Some(Step::Out(Effect::Invoke { gen, attempt: 1 }));
    }

    /// Flow `gen`, started at `now`, becomes the active one, at attempt 1.
    /// Inlined: the plain start is a hot path.
    #[inline(always)]
    fn open_flow(&mut self, gen: u32, now: f64, inside: Option<bool>) {
        self.c.last_started = gen;
        let p = &*self.c.policy;
        let passthrough = inside.is_some_and(|forbids| forbids || p.nested == Nested::Passthrough);
        let forbids_inner = inside.unwrap_or(false) || !p.inner_retries;
        let s = &mut self.c.state;
        s.is_executing = true;
        s.current_attempt = 1;
        s.has_last_error = false;
        self.b.flow = Some(Flow {
            gen,
            started: now,
            attempt: 1,
            phase: Phase::Attempt,
            deadline: now + self.c.policy.max_total_execution_time,
            prev_delay: -1.0,
            listening: self.c.policy.signal,
            passthrough,
            forbids_inner,
        });
    }

    /// Nobody subscribed, and nothing queued or being expanded: what both
    /// plain paths need of the machine besides the policy.
    fn nothing_queued(&self) -> bool {
        !self.c.listeners && !self.b.expanding && self.b.head.is_none() && self.b.queue.is_empty()
    }

    fn start(&mut self, gen: u32, now: f64, outside_aborted: bool, inside: Option<bool>) {
        if let Some(old) = self.b.flow.take() {
            self.abort_flow(old, AbortReason::NewExecution);
        }
        if outside_aborted {
            self.call(gen, Cb::Abort, AbortReason::Signal as u32);
            self.emit(Effect::Finish {
                gen,
                outcome: Outcome::Undefined,
            });
            return;
        }
        self.open_flow(gen, now, inside);
        let total = self.c.policy.max_total_execution_time;
        if self.c.policy.signal {
            self.emit(Effect::Listen { gen });
        }
        if total.is_finite() {
            if total <= 0.0 {
                self.touch();
                self.total_timeout();
                return;
            }
            self.emit(Effect::StartTimer {
                gen,
                timer: Timer::Total,
                ms: backoff::clamp_delay(total),
            });
        }
        self.begin_attempt(1);
    }

    /// Attempt `attempt` after a failed one: at once, or, when a host hook
    /// decides whether retries go (`before_retry`), once it said so.
    fn next_attempt(&mut self, attempt: u32) {
        if !self.c.policy.before_retry {
            self.begin_attempt(attempt);
            return;
        }
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        flow.phase = Phase::Gating;
        flow.attempt = attempt.saturating_sub(1);
        let gen = flow.gen;
        if self.c.state.current_attempt != attempt {
            self.c.state.current_attempt = attempt;
            self.touch();
        }
        self.emit(Effect::Gate { gen, attempt });
    }

    fn begin_attempt(&mut self, attempt: u32) {
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        flow.attempt = attempt;
        flow.phase = Phase::Attempt;
        let gen = flow.gen;
        self.c.state.current_attempt = attempt;
        self.c.state.is_executing = true;
        self.touch();
        let limit = self.c.policy.max_execution_time;
        if limit.is_finite() {
            self.emit(Effect::StartTimer {
                gen,
                timer: Timer::Attempt,
                ms: backoff::clamp_delay(limit),
            });
        }
        self.emit(Effect::Invoke { gen, attempt });
    }

    fn execution_timeout(&mut self, gen: u32, now: f64, budgets: &mut dyn Budgets) {
        self.call(gen, Cb::ExecutionTimeout, 0);
        self.emit(Effect::TimeOut { gen });
        self.push(Step::MarkError { gen });
        if self.c.policy.retry_on_execution_timeout {
            if let Some(flow) = self.b.flow.as_mut() {
                flow.phase = Phase::Gathering(Box::new(Gather::new()));
            }
            self.gather(now, budgets);
            return;
        }
        if let Some(b) = self.c.policy.budget.and_then(|id| budgets.budget(id)) {
            b.record_failure();
        }
        if let Some(flow) = self.b.flow.take() {
            self.call(gen, Cb::Abort, AbortReason::ExecutionTimeout as u32);
            self.give_up(&flow, GiveUp::ExecutionTimeout);
        }
    }

    fn total_timeout(&mut self) {
        let Some(flow) = self.b.flow.take() else {
            return;
        };
        let gen = flow.gen;
        self.drop_queued(gen);
        self.call(gen, Cb::TotalExecutionTimeout, 0);
        self.emit(Effect::AbortAttempt {
            gen,
            reason: AbortReason::TotalTimeout,
        });
        self.clear_timers();
        self.unlisten(&flow);
        self.c.state.is_executing = false;
        self.touch();
        self.call(gen, Cb::Abort, AbortReason::TotalTimeout as u32);
        self.emit(Effect::Finish {
            gen,
            outcome: Outcome::Undefined,
        });
    }

    fn abort_flow(&mut self, flow: Flow, reason: AbortReason) {
        let gen = flow.gen;
        self.drop_queued(gen);
        self.emit(Effect::AbortAttempt { gen, reason });
        self.clear_timers();
        self.unlisten(&flow);
        self.c.state.is_executing = false;
        self.touch();
        self.call(gen, Cb::Abort, reason as u32);
        self.emit(Effect::Finish {
            gen,
            outcome: Outcome::Undefined,
        });
    }

    /// Ends a flow without callbacks (invalid dynamic value, a throwing
    /// callback or option function).
    fn end_quietly(&mut self, flow: &Flow, outcome: Outcome) {
        self.clear_timers();
        self.unlisten(flow);
        self.c.state.is_executing = false;
        self.touch();
        self.emit(Effect::Finish {
            gen: flow.gen,
            outcome,
        });
    }

    /// The final failure of a flow that was already taken out of `self.b.flow`.
    fn give_up(&mut self, flow: &Flow, reason: GiveUp) {
        self.conclude(flow, reason, true);
    }

    /// Ends `flow` (already taken out of `self.b.flow`) in failure for
    /// `reason`, with its last error as the final one. `attempt_failed`:
    /// an attempt failed just now, and `onError` and `onSettled` belong to
    /// it; otherwise they ran with the attempt that failed before the
    /// wait (a `beforeRetry` hook stopped the flow).
    fn conclude(&mut self, flow: &Flow, reason: GiveUp, attempt_failed: bool) {
        let gen = flow.gen;
        self.clear_timers();
        self.unlisten(flow);
        if attempt_failed {
            self.call(gen, Cb::Error, 0);
        }
        self.push(Step::Finalize { gen });
        self.call(gen, Cb::LastError, 0);
        self.call(gen, Cb::GiveUp, reason as u32);
        if attempt_failed {
            self.call(gen, Cb::Settled, 0);
        }
        // A flow passing through hands its failure back whatever
        // throwOnError says: resolving `undefined` would read as a success.
        let outcome = match self.c.policy.throw_mode() {
            _ if reason == GiveUp::Nested => Outcome::Reject,
            Throw::Last | Throw::Always => Outcome::Reject,
            Throw::Never => Outcome::Undefined,
        };
        self.emit(Effect::Finish { gen, outcome });
    }

    /// Collects what the decision after a failed attempt needs, asking for
    /// one function value at a time, then decides.
    fn gather(&mut self, now: f64, budgets: &mut dyn Budgets) {
        let policy = &self.c.policy;
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let gen = flow.gen;
        let attempt = flow.attempt;
        let Phase::Gathering(g) = &mut flow.phase else {
            return;
        };
        let ask = |g: &mut Gather, what: Eval| {
            g.awaiting = Some(what);
            Step::Out(Effect::Eval { gen, what, attempt })
        };
        if flow.passthrough && g.decided.is_none() {
            // The enclosing flow owns the retry, and counts the failure
            // against any budget it shares.
            g.decided = Some(Some(GiveUp::Nested));
        }
        if policy.should_retry && g.decided.is_none() && g.should_retry.is_none() {
            let step = ask(g, Eval::ShouldRetry);
            self.push(step);
            return;
        }
        let should = g.should_retry.unwrap_or(true);
        if should
            && g.decided.is_none()
            && policy.max_attempts == Num::Dynamic
            && g.max_attempts.is_none()
        {
            let step = ask(g, Eval::MaxAttempts);
            self.push(step);
            return;
        }
        if g.decided.is_none() {
            let max = effective_max_attempts(policy, g.max_attempts);
            let budget = policy.budget.and_then(|id| budgets.budget(id));
            let mut verdict = if !should {
                Some(GiveUp::NotRetryable)
            } else if f64::from(attempt) >= max {
                Some(GiveUp::AttemptsExhausted)
            } else {
                None
            };
            if let Some(b) = budget {
                b.record_failure();
                if verdict.is_none() && !b.allows_retry() {
                    verdict = Some(GiveUp::BudgetExhausted);
                }
            }
            g.decided = Some(verdict);
        }
        if let Some(Some(reason)) = g.decided {
            // With retryOnExecutionTimeout a timed-out attempt is an ordinary
            // failed attempt, so a timed-out last one exhausts the attempts.
            if let Some(flow) = self.b.flow.take() {
                self.give_up(&flow, reason);
            }
            return;
        }
        let uses_base = policy.intervals.is_none() && policy.backoff != Backoff::Custom;
        let base_dynamic = policy.base_wait == Num::Dynamic;
        if uses_base && base_dynamic && g.base_wait.is_none() {
            let step = ask(g, Eval::BaseWait);
            self.push(step);
            return;
        }
        if policy.max_wait == Num::Dynamic && g.max_wait.is_none() {
            let step = ask(g, Eval::MaxWait);
            self.push(step);
            return;
        }
        if policy.retry_after && g.retry_after.is_none() {
            let step = ask(g, Eval::RetryAfter);
            self.push(step);
            return;
        }
        if policy.intervals.is_none() && policy.backoff == Backoff::Custom && g.custom.is_none() {
            let step = ask(g, Eval::Backoff);
            self.push(step);
            return;
        }
        let inputs = DelayInputs {
            attempt,
            base: match policy.base_wait {
                Num::Static(v) => v,
                Num::Dynamic => g.base_wait.unwrap_or(0.0),
            },
            max_wait: match policy.max_wait {
                Num::Static(v) => v,
                Num::Dynamic => g.max_wait.unwrap_or(f64::INFINITY),
            },
            retry_after: g.retry_after.flatten(),
            custom: g.custom.unwrap_or(0.0),
        };
        flow.phase = Phase::Deciding;
        let delay = self.delay(inputs);
        self.call(gen, Cb::Error, 0);
        self.call(gen, Cb::Retry, attempt);
        self.call(gen, Cb::Settled, 0);
        self.push(Step::Continue {
            gen,
            attempt,
            delay,
            decided_at: now,
        });
    }

    fn delay(&mut self, d: DelayInputs) -> f64 {
        if let Some(hint) = d.retry_after {
            return backoff::clamp_delay(hint);
        }
        let policy = &self.c.policy;
        let nominal = if let Some(list) = policy.intervals.as_ref() {
            let i = (d.attempt.max(1) - 1) as usize;
            list.get(i).or(list.last()).copied().unwrap_or(0.0)
        } else {
            match policy.backoff {
                Backoff::Custom => d.custom,
                Backoff::Decorrelated => {
                    let prev = self
                        .b
                        .flow
                        .as_ref()
                        .map(|f| f.prev_delay)
                        .filter(|prev| *prev >= 0.0)
                        .unwrap_or(d.base);
                    let next = backoff::decorrelated(prev, d.base, d.max_wait, self.c.rng.unit());
                    if let Some(flow) = self.b.flow.as_mut() {
                        flow.prev_delay = next;
                    }
                    return backoff::clamp_delay(next);
                }
                kind => backoff::nominal(kind, d.attempt, d.base, policy.multiplier),
            }
        };
        let capped = backoff::cap(nominal, d.max_wait);
        let jittered = match policy.jitter {
            Some(how @ Jitter::Full) => backoff::jitter(capped, how, self.c.rng.unit()),
            Some(how @ Jitter::Proportional(_)) if capped > 0.0 => {
                backoff::jitter(capped, how, self.c.rng.unit())
            }
            _ => capped,
        };
        backoff::clamp_delay(jittered)
    }

    fn continue_after_callbacks(&mut self, gen: u32, attempt: u32, delay: f64, decided_at: f64) {
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        if flow.gen != gen || !matches!(flow.phase, Phase::Deciding) {
            return;
        }
        if decided_at + delay >= flow.deadline {
            self.total_timeout();
            return;
        }
        let elapsed = (decided_at - flow.started).max(0.0);
        if self.c.policy.has(Cb::Backoff) || self.c.traced {
            self.emit(Effect::Backoff {
                gen,
                attempt,
                delay,
                elapsed,
            });
        }
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        if delay <= 0.0 {
            self.next_attempt(attempt.saturating_add(1));
            return;
        }
        flow.phase = Phase::Waiting;
        flow.attempt = attempt;
        self.c.state.current_attempt = attempt.saturating_add(1);
        self.touch();
        self.emit(Effect::StartTimer {
            gen,
            timer: Timer::Wait,
            ms: delay,
        });
    }

    // ----- helpers -----

    /// Whether attempt `attempt` of flow `gen` is the one running now: its
    /// settlement would be taken, where any other is ignored.
    fn is_running(&self, gen: u32, attempt: u32) -> bool {
        matches!(&self.b.flow, Some(f) if f.gen == gen && f.attempt == attempt && matches!(f.phase, Phase::Attempt))
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

    fn drop_queued(&mut self, gen: u32) {
        if matches!(&self.b.head, Some(s) if s.gen() == Some(gen) && s.is_progress()) {
            self.b.head = None;
        }
        self.b
            .queue
            .retain(|s| !(s.gen() == Some(gen) && s.is_progress()));
        self.b
            .front
            .retain(|s| !(s.gen() == Some(gen) && s.is_progress()));
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

/// Inputs of one delay computation.
struct DelayInputs {
    attempt: u32,
    base: f64,
    max_wait: f64,
    retry_after: Option<f64>,
    custom: f64,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::budget::NoBudgets;

    fn machine(policy: Policy) -> Machine {
        Machine::new(policy, 7)
    }

    fn drain(m: &mut Machine) -> Vec<Effect> {
        core::iter::from_fn(|| m.next_effect()).collect()
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
        assert!(m.busy.is_none() && m.next_effect().is_none());
    }
}
