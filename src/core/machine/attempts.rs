//! Starting attempts and their deadlines; and a hedged flow's running
//! attempts (SPEC §2c).
//!
//! A flow makes one attempt at a time unless it hedges. A hedged flow
//! keeps the set of attempts running now, each with its start and its
//! deadline, when the next attempt is due, and the failures waiting for
//! their decision (one is taken at a time). The three host timers keep
//! their meaning: `Wait` starts the next attempt (at its hedge time, or
//! when a `retryAfter` hint ends, which replaces it), `Attempt` is the
//! earliest deadline among the running attempts, `Total` the flow's.
//! Both are armed lazily: only when what they wait for comes earlier than
//! what they are armed for; one that fires early (its attempt ended, or
//! the next start moved later) arms itself again. Effects name the attempt
//! they apply to; an attempt that loses is cancelled
//! ([`Effect::CancelAttempt`]) and runs no callback.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::waits::{plans_with_functions, Gather};
use super::{effective_max_attempts, Flow, Phase, Step, Work};
use crate::core::backoff;
use crate::core::budget::Budgets;
use crate::core::effect::{AbortReason, Effect, GiveUp, Timer};
use crate::core::options::{Cb, Num};

/// One running attempt of a hedged flow.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Running {
    attempt: u32,
    started: f64,
    deadline: f64,
}

/// What a hedged flow holds beyond a flow with one attempt at a time.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Hedged {
    /// Running attempts, oldest first.
    running: Vec<Running>,
    /// Failed attempts waiting for their decision, oldest first, and
    /// whether each timed out (its signal is aborted when its decision is
    /// taken).
    failed: Vec<(u32, bool)>,
    /// Failed attempts a circuit breaker refused, with the ms until it may
    /// let one through (SPEC §2e), until their decision takes them.
    refusals: Vec<(u32, f64)>,
    /// When the next attempt is due (infinite: none is).
    pub(super) next_due: f64,
    /// `next_due` is the end of a `retryAfter` hint: the next attempt is
    /// granted, and starts then, not before and not at a hedge time.
    pub(super) hint: bool,
    /// What the `Wait` and `Attempt` timers are armed for (infinite: not
    /// armed).
    wait_armed: f64,
    deadline_armed: f64,
    /// Why no further attempt starts (the budget refused one).
    pub(super) stop: Option<GiveUp>,
    /// The latest value of a dynamic `maxAttempts`.
    pub(super) max_attempts: Option<f64>,
}

impl Hedged {
    pub(super) fn new() -> Box<Hedged> {
        Box::new(Hedged {
            running: Vec::new(),
            failed: Vec::new(),
            refusals: Vec::new(),
            next_due: f64::INFINITY,
            hint: false,
            wait_armed: f64::INFINITY,
            deadline_armed: f64::INFINITY,
            stop: None,
            max_attempts: None,
        })
    }

    /// Whether attempt `attempt` runs (its outcome would be taken).
    pub(super) fn is_running(&self, attempt: u32) -> bool {
        self.running.iter().any(|r| r.attempt == attempt)
    }

    /// When attempt `attempt` started, if it runs.
    pub(super) fn started_at(&self, attempt: u32) -> Option<f64> {
        self.running
            .iter()
            .find(|r| r.attempt == attempt)
            .map(|r| r.started)
    }

    /// Whether a hedge time may start the next attempt: no hint holds it
    /// back and the budget never refused.
    pub(super) fn plans_spacing(&self) -> bool {
        !self.hint && self.stop.is_none()
    }

    /// Whether nothing could follow a failure decided now: no attempt
    /// runs, no failure waits for its decision, no granted start waits.
    pub(super) fn is_spent(&self) -> bool {
        self.running.is_empty() && self.failed.is_empty() && !self.hint
    }
}

impl Work<'_> {
    /// Starts attempt `attempt` of the active flow at `now`.
    pub(super) fn begin_attempt(&mut self, attempt: u32, now: f64) {
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        if flow.hedge.is_some() {
            self.begin_hedged(attempt, now);
            return;
        }
        flow.attempt = attempt;
        flow.phase = Phase::Attempt;
        flow.refused = false;
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

    /// The running attempt of a flow that does not hedge ran past
    /// `maxExecutionTime`.
    pub(super) fn execution_timeout(&mut self, gen: u32, now: f64, budgets: &mut dyn Budgets) {
        let attempt = self.b.flow.as_ref().map_or(0, |f| f.attempt);
        self.call(gen, Cb::ExecutionTimeout, 0);
        self.emit(Effect::TimeOut { gen, attempt });
        self.push(Step::MarkError { gen });
        if self.c.policy.retry_on_execution_timeout {
            if let Some(flow) = self.b.flow.as_mut() {
                flow.phase = Gather::phase(attempt, false);
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

    /// `flow` ends: its attempts that still run (and a hedged flow's
    /// timed-out ones waiting for their decision) are let go. With a
    /// `reason`, each is aborted ([`Effect::AbortAttempt`]); without, each
    /// loses ([`Effect::CancelAttempt`], a hedged flow's only). `also` is
    /// the winner, left alone, when losing; when aborting, an attempt whose
    /// `TimeOut` the end dropped from the queue (a callback before it ended
    /// the flow), aborted too. With `always`, a flow that does not hedge
    /// names its attempt even when it does not run (the last one, before a
    /// wait): the host learns the flow was aborted.
    #[inline(never)]
    pub(super) fn release(
        &mut self,
        flow: &Flow,
        reason: Option<AbortReason>,
        always: bool,
        also: Option<u32>,
    ) {
        let gen = flow.gen;
        let emit = |w: &mut Self, attempt: u32| match reason {
            Some(reason) => w.emit(Effect::AbortAttempt {
                gen,
                attempt,
                reason,
            }),
            None if Some(attempt) != also => w.emit(Effect::CancelAttempt { gen, attempt }),
            None => {}
        };
        let Some(h) = &flow.hedge else {
            let runs = matches!(flow.phase, Phase::Attempt);
            if reason.is_some() && (always || runs || also.is_some()) {
                emit(self, flow.attempt);
            }
            return;
        };
        self.drop_timer_starts(gen);
        let mut none = true;
        for r in &h.running {
            none = false;
            emit(self, r.attempt);
        }
        for &(attempt, timed_out) in &h.failed {
            if timed_out {
                none = false;
                emit(self, attempt);
            }
        }
        match (reason, also) {
            (Some(_), Some(attempt)) => emit(self, attempt),
            (Some(_), None) if none && always => emit(self, flow.attempt),
            _ => {}
        }
    }

    // ----- a hedged flow -----

    /// Attempt `attempt` of the active hedged flow settled: it no longer
    /// runs. `false` for a flow that does not hedge.
    pub(super) fn hedged_attempt_over(&mut self, attempt: u32) -> bool {
        let Some(h) = self.b.flow.as_mut().and_then(|f| f.hedge.as_deref_mut()) else {
            return false;
        };
        h.running.retain(|r| r.attempt != attempt);
        true
    }

    /// Attempt `attempt` of the active hedged flow failed: its decision
    /// waits for its turn.
    #[inline(never)]
    pub(super) fn hedged_failure(
        &mut self,
        attempt: u32,
        refused: Option<f64>,
        now: f64,
        budgets: &mut dyn Budgets,
    ) {
        if let Some(h) = self.b.flow.as_mut().and_then(|f| f.hedge.as_deref_mut()) {
            h.failed.push((attempt, false));
            if let Some(ms) = refused {
                h.refusals.push((attempt, ms));
            }
        }
        self.next_failure(now, budgets);
    }

    /// A timer of the active hedged flow fired: `Wait` (the next attempt
    /// may be due) or `Attempt` (attempts may have run past their
    /// deadline, each a failure).
    #[inline(never)]
    pub(super) fn hedge_timer(&mut self, timer: Timer, now: f64, budgets: &mut dyn Budgets) {
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let (newest, idle) = (flow.attempt, matches!(flow.phase, Phase::Attempt));
        let Some(h) = flow.hedge.as_deref_mut() else {
            return;
        };
        if timer == Timer::Attempt {
            let due = core::mem::replace(&mut h.deadline_armed, f64::INFINITY);
            let failed = &mut h.failed;
            h.running.retain(|r| {
                let over = r.deadline <= due;
                if over {
                    failed.push((r.attempt, true));
                }
                !over
            });
            self.sync_timers(now);
            self.next_failure(now, budgets);
            return;
        }
        let armed = core::mem::replace(&mut h.wait_armed, f64::INFINITY);
        let hint = h.hint;
        if h.next_due > armed || !idle {
            // Early (the start moved later), or a decision is under way
            // (it arms the timer again when done).
            self.sync_timers(now);
        } else if hint {
            self.begin_attempt(newest.saturating_add(1), now);
        } else {
            self.spacing_due(newest, now, budgets);
        }
    }

    /// [`Step::Resume`]: the failures of flow `gen` waiting for a decision
    /// go on (after the one whose callbacks ran, when `decided`).
    #[inline(never)]
    pub(super) fn resume(&mut self, gen: u32, at: f64, decided: bool, budgets: &mut dyn Budgets) {
        let Some(flow) = self.flow_of(gen) else {
            return;
        };
        if decided && matches!(flow.phase, Phase::Deciding) {
            flow.phase = Phase::Attempt;
        }
        self.sync_timers(at);
        self.next_failure(at, budgets);
    }

    /// [`Step::StartNext`]: a hedge delay of 0 after attempt `after`.
    #[inline(never)]
    pub(super) fn start_next(&mut self, gen: u32, after: u32, at: f64, budgets: &mut dyn Budgets) {
        let Some(flow) = self.flow_of(gen) else {
            return;
        };
        if matches!(flow.phase, Phase::Attempt) {
            self.spacing_due(after, at, budgets);
        } else if let Some(h) = flow.hedge.as_deref_mut() {
            // A decision is under way: due when it is done.
            h.next_due = h.next_due.min(at);
        }
    }

    /// After the retry callbacks of failed attempt `attempt` of hedged flow
    /// `gen`: the next attempt starts now, or when a hint's `delay` (from
    /// `decided_at`) ends; a hint already waiting is never cut short.
    #[inline(never)]
    pub(super) fn continue_hedged(&mut self, gen: u32, attempt: u32, delay: f64, decided_at: f64) {
        let Some(flow) = self.flow_of(gen) else {
            return;
        };
        flow.phase = Phase::Attempt;
        let (newest, deadline) = (flow.attempt, flow.deadline);
        let elapsed = (decided_at - flow.started).max(0.0);
        let Some(h) = flow.hedge.as_deref_mut() else {
            return;
        };
        let mut due = decided_at + delay;
        if h.hint {
            due = due.max(h.next_due);
        }
        if due >= deadline && h.running.is_empty() {
            self.total_timeout();
            return;
        }
        let wait = (due - decided_at).max(0.0);
        if due >= deadline {
            // Nothing may start before the deadline: the running attempts
            // go on alone.
            h.hint = false;
            h.next_due = f64::INFINITY;
        } else if wait > 0.0 {
            h.hint = true;
            h.next_due = due;
        }
        self.backoff_effect(gen, attempt, wait, elapsed);
        if wait <= 0.0 && due < deadline {
            self.begin_attempt(newest.saturating_add(1), decided_at);
        }
        self.push(Step::Resume {
            gen,
            at: decided_at,
            decided: false,
        });
    }

    /// After attempt `after` started (at `now` or earlier), the next one is
    /// due in `ms`: now (after the synchronous part of `after`), at a timer,
    /// or, for an infinite delay, only after a failure.
    pub(super) fn schedule_next(&mut self, gen: u32, after: u32, ms: f64, now: f64) {
        if ms <= 0.0 {
            self.push(Step::StartNext {
                gen,
                after,
                at: now,
            });
        } else if let Some(h) = self.b.flow.as_mut().and_then(|f| f.hedge.as_deref_mut()) {
            h.next_due = now + ms;
        }
    }

    /// Starts attempt `attempt` of the active hedged flow at `now`, while
    /// the earlier ones go on, and plans the next one.
    #[inline(never)]
    fn begin_hedged(&mut self, attempt: u32, now: f64) {
        let policy = &*self.c.policy;
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let gen = flow.gen;
        let elapsed = (now - flow.started).max(0.0);
        let Some(h) = flow.hedge.as_deref_mut() else {
            return;
        };
        let running = h.running.len() as u32;
        flow.attempt = attempt;
        h.hint = false;
        h.next_due = f64::INFINITY;
        h.running.push(Running {
            attempt,
            started: now,
            deadline: now + policy.max_execution_time,
        });
        // When the next one starts, when no function has to say.
        let asks = policy.hedge.is_some() && h.stop.is_none() && plans_with_functions(policy);
        let mut delay = f64::INFINITY;
        if let (Some(Num::Static(d)), None, false) = (policy.hedge, h.stop, asks) {
            if f64::from(attempt) < effective_max_attempts(policy, None) {
                delay = d;
            }
        }
        self.c.state.current_attempt = attempt;
        self.c.state.is_executing = true;
        self.touch();
        if running > 0 && self.c.policy.has(Cb::Hedge) {
            self.emit(Effect::Hedge {
                gen,
                attempt,
                running,
                elapsed,
            });
        }
        // The timers first: a host settles an attempt only after its
        // Invoke, so none can be left queued behind a settled flow. A
        // delay of 0 starts the next attempt after this one's Invoke.
        if delay > 0.0 {
            self.schedule_next(gen, attempt, delay, now);
        }
        self.sync_timers(now);
        self.emit(Effect::Invoke { gen, attempt });
        if delay <= 0.0 {
            self.schedule_next(gen, attempt, delay, now);
        }
        if asks {
            if let Some(flow) = self.b.flow.as_mut() {
                flow.phase = Gather::phase(attempt, true);
            }
            self.gather_start(now);
        }
    }

    /// The attempt after `after` is due at a hedge time: it starts if it is
    /// still the next one, `maxAttempts` allows it and the budget does.
    fn spacing_due(&mut self, after: u32, now: f64, budgets: &mut dyn Budgets) {
        let policy = &*self.c.policy;
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let Some(h) = flow.hedge.as_deref_mut() else {
            return;
        };
        let max = effective_max_attempts(policy, h.max_attempts);
        if flow.attempt != after
            || !h.plans_spacing()
            || policy.hedge.is_none()
            || f64::from(after) >= max
        {
            return;
        }
        if let Some(b) = policy.budget.and_then(|id| budgets.budget(id)) {
            if !b.allows_retry() {
                h.stop = Some(GiveUp::BudgetExhausted);
                return;
            }
        }
        self.begin_hedged(after.saturating_add(1), now);
    }

    /// Takes the oldest failure of the active hedged flow waiting for its
    /// decision, unless a decision is under way.
    fn next_failure(&mut self, now: f64, budgets: &mut dyn Budgets) {
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let gen = flow.gen;
        let idle = matches!(flow.phase, Phase::Attempt);
        let Some(h) = flow.hedge.as_deref_mut() else {
            return;
        };
        let Some(&(attempt, timed_out)) = h.failed.first().filter(|_| idle) else {
            return;
        };
        // Not `Vec::remove`: its panic message would link the integer
        // formatting into the module (kilobytes).
        h.failed.rotate_left(1);
        h.failed.pop();
        flow.phase = Gather::phase(attempt, false);
        let refusal = h.refusals.iter().position(|r| r.0 == attempt);
        if let (Some(i), Phase::Gathering(g)) = (refusal, &mut flow.phase) {
            g.refuse(h.refusals.swap_remove(i).1);
        }
        if timed_out {
            self.call(gen, Cb::ExecutionTimeout, 0);
            self.emit(Effect::TimeOut { gen, attempt });
            self.push(Step::MarkError { gen });
        }
        self.gather(now, budgets);
    }

    /// Arms the `Attempt` timer for the earliest deadline of the active
    /// hedged flow's running attempts, and the `Wait` for its next start,
    /// when either is earlier than what the timer is armed for.
    #[inline(never)]
    fn sync_timers(&mut self, now: f64) {
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let gen = flow.gen;
        let Some(h) = flow.hedge.as_deref_mut() else {
            return;
        };
        let deadline = h
            .running
            .iter()
            .fold(f64::INFINITY, |m, r| m.min(r.deadline));
        let due = h.next_due;
        let arm_deadline = deadline < h.deadline_armed;
        let arm_wait = due < h.wait_armed;
        if arm_deadline {
            h.deadline_armed = deadline;
        }
        if arm_wait {
            h.wait_armed = due;
        }
        if arm_deadline {
            self.rearm(gen, Timer::Attempt, deadline - now);
        }
        if arm_wait {
            self.rearm(gen, Timer::Wait, due - now);
        }
    }

    /// Starts `timer` of flow `gen` for `ms`, in place of the one armed or
    /// queued.
    fn rearm(&mut self, gen: u32, timer: Timer, ms: f64) {
        self.purge(false, &|s| {
            matches!(*s, Step::Out(Effect::StartTimer { gen: g, timer: t, .. }) if g == gen && t == timer)
        });
        self.clear_timer(timer);
        self.emit(Effect::StartTimer {
            gen,
            timer,
            ms: backoff::clamp_delay(ms),
        });
    }

    /// Drops the queued timer starts of hedged flow `gen`, which ends: a
    /// start a function's answer queued can still be behind it.
    fn drop_timer_starts(&mut self, gen: u32) {
        self.purge(
            false,
            &|s| matches!(*s, Step::Out(Effect::StartTimer { gen: g, .. }) if g == gen),
        );
    }
}
