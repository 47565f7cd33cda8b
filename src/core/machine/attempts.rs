//! Starting attempts and their deadlines; and a hedged flow's running
//! attempts (SPEC §2c).
//!
//! A flow makes one attempt at a time unless it hedges. A hedged flow
//! keeps the set of attempts running now, each with its start and its
//! deadline, and a queue of decisions that wait their turn (one is taken
//! at a time: a failure, a start whose hedge delay a function gives, a
//! wait that ended). The three host timers keep their meaning: `Wait`
//! starts the next attempt (at its hedge time, or when a `retryAfter`
//! hint ends, which replaces it), `Attempt` is the earliest deadline among
//! the running attempts (armed again as attempts end), `Total` the flow's.
//! Effects name the attempt they apply to; an attempt that loses is
//! cancelled ([`Effect::CancelAttempt`]) and runs no callback.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::waits::{plans_with_functions, start_gather, Gather};
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

/// A decision of a hedged flow waiting for its turn.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Job {
    /// Attempt `attempt` failed, or ran past its deadline (`timed_out`;
    /// its signal is aborted when the decision is taken).
    Failed { attempt: u32, timed_out: bool },
    /// Attempt `attempt` started, and when the next one starts depends on
    /// a function (a dynamic `hedge` or `maxAttempts`).
    Started(u32),
    /// The `Wait` ended: start the attempt after `after`. `granted`: a
    /// failure's decision already allowed it (a hint's wait), so neither
    /// `maxAttempts` nor the budget is asked again.
    Due { granted: bool, after: u32 },
}

/// What a hedged flow holds beyond a flow with one attempt at a time.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Hedged {
    /// Running attempts, oldest first.
    running: Vec<Running>,
    /// Decisions waiting for their turn, oldest first.
    jobs: Vec<Job>,
    /// The deadline the `Attempt` timer is armed for (infinite: none).
    armed_deadline: f64,
    /// When the armed `Wait` ends.
    wait_due: f64,
    /// The armed `Wait` is a hint's: the next attempt is granted, and
    /// starts when it ends, not before and not at a hedge time.
    hint_wait: bool,
    /// Why no further attempt starts (the budget refused one).
    pub(super) stop: Option<GiveUp>,
    /// The latest value of a dynamic `maxAttempts`.
    pub(super) max_attempts: Option<f64>,
}

impl Hedged {
    pub(super) fn new() -> Box<Hedged> {
        Box::new(Hedged {
            running: Vec::new(),
            jobs: Vec::new(),
            armed_deadline: f64::INFINITY,
            wait_due: f64::INFINITY,
            hint_wait: false,
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
        !self.hint_wait && self.stop.is_none()
    }

    /// Whether nothing could follow a failure decided now: no attempt
    /// runs, no failure waits for its decision, no granted start waits.
    pub(super) fn is_spent(&self) -> bool {
        self.running.is_empty()
            && !self.hint_wait
            && !self.jobs.iter().any(|j| matches!(j, Job::Failed { .. }))
    }

    /// The attempts whose signals the flow still owns: the running ones,
    /// and those that timed out and wait for their decision.
    fn live(&self) -> impl Iterator<Item = u32> + '_ {
        let timed_out = self.jobs.iter().filter_map(|j| match *j {
            Job::Failed {
                attempt,
                timed_out: true,
            } => Some(attempt),
            _ => None,
        });
        self.running.iter().map(|r| r.attempt).chain(timed_out)
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
                flow.phase = Phase::Gathering(Box::new(Gather::new(attempt)));
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

    /// Aborts `flow`'s attempts with `reason` (the flow ends): each running
    /// attempt of a hedged flow, or the one attempt of a flow that does not
    /// hedge when it runs. With `always`, one is named even when none runs
    /// (the last one, before a wait): the host learns the flow was aborted.
    /// `timed_out`: an attempt whose `TimeOut` the end dropped from the
    /// queue (a callback before it ended the flow): it is aborted too.
    pub(super) fn abort_attempts(
        &mut self,
        flow: &Flow,
        reason: AbortReason,
        always: bool,
        timed_out: Option<u32>,
    ) {
        let gen = flow.gen;
        let last = match &flow.hedge {
            Some(h) => {
                self.drop_timer_starts(gen);
                let mut none = true;
                for attempt in h.live().chain(timed_out) {
                    none = false;
                    self.emit(Effect::AbortAttempt {
                        gen,
                        attempt,
                        reason,
                    });
                }
                none && always
            }
            None => always || timed_out.is_some() || matches!(flow.phase, Phase::Attempt),
        };
        if last {
            self.emit(Effect::AbortAttempt {
                gen,
                attempt: flow.attempt,
                reason,
            });
        }
    }

    /// The attempts of hedged `flow` other than `winner` lose: their
    /// signals abort, and whatever they do later is ignored.
    pub(super) fn cancel_others(&mut self, flow: &Flow, winner: u32) {
        if let Some(h) = &flow.hedge {
            self.drop_timer_starts(flow.gen);
            for attempt in h.live().filter(|&a| a != winner) {
                self.emit(Effect::CancelAttempt {
                    gen: flow.gen,
                    attempt,
                });
            }
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
    pub(super) fn hedged_failure(&mut self, attempt: u32, now: f64, budgets: &mut dyn Budgets) {
        if let Some(h) = self.b.flow.as_mut().and_then(|f| f.hedge.as_deref_mut()) {
            h.jobs.push(Job::Failed {
                attempt,
                timed_out: false,
            });
        }
        self.rearm_deadline(now);
        self.next_job(now, budgets);
    }

    /// The `Wait` of the active hedged flow ended: the next attempt is due.
    pub(super) fn hedge_due(&mut self, now: f64, budgets: &mut dyn Budgets) {
        if let Some(flow) = self.b.flow.as_mut() {
            let after = flow.attempt;
            if let Some(h) = flow.hedge.as_deref_mut() {
                let granted = h.hint_wait;
                h.jobs.push(Job::Due { granted, after });
            }
        }
        self.next_job(now, budgets);
    }

    /// The `Attempt` timer of the active hedged flow fired: every attempt
    /// whose deadline it was armed for timed out, each a failure.
    pub(super) fn hedge_deadlines(&mut self, now: f64, budgets: &mut dyn Budgets) {
        if let Some(h) = self.b.flow.as_mut().and_then(|f| f.hedge.as_deref_mut()) {
            let due = core::mem::replace(&mut h.armed_deadline, f64::INFINITY);
            let mut i = 0;
            while let Some(r) = h.running.get(i).copied() {
                if r.deadline <= due {
                    h.running.remove(i);
                    h.jobs.push(Job::Failed {
                        attempt: r.attempt,
                        timed_out: true,
                    });
                } else {
                    i += 1;
                }
            }
        }
        self.rearm_deadline(now);
        self.next_job(now, budgets);
    }

    /// [`Step::Resume`]: the waiting decisions of flow `gen` go on, after
    /// the one whose callbacks ran, when `decided`.
    pub(super) fn resume(&mut self, gen: u32, at: f64, decided: bool, budgets: &mut dyn Budgets) {
        let Some(flow) = self.flow_of(gen) else {
            return;
        };
        if decided && matches!(flow.phase, Phase::Deciding) {
            flow.phase = Phase::Attempt;
        }
        self.next_job(at, budgets);
    }

    /// [`Step::StartNext`]: a hedge delay of 0 after attempt `after`.
    pub(super) fn start_next(&mut self, gen: u32, after: u32, at: f64, budgets: &mut dyn Budgets) {
        let Some(flow) = self.flow_of(gen) else {
            return;
        };
        if let Some(h) = flow.hedge.as_deref_mut() {
            h.jobs.push(Job::Due {
                granted: false,
                after,
            });
        }
        self.next_job(at, budgets);
    }

    /// After the retry callbacks of failed attempt `attempt` of hedged flow
    /// `gen`: the next attempt starts now, or when a hint's `delay` (from
    /// `decided_at`) ends; a hint already waiting is never cut short.
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
        if h.hint_wait {
            due = due.max(h.wait_due);
        }
        if due >= deadline && h.running.is_empty() {
            self.total_timeout();
            return;
        }
        let wait = (due - decided_at).max(0.0);
        self.backoff_effect(gen, attempt, wait, elapsed);
        if due >= deadline {
            // Nothing may start before the deadline: the running attempts
            // go on alone.
            self.cancel_wait(gen);
        } else if wait <= 0.0 {
            self.begin_attempt(newest.saturating_add(1), decided_at);
        } else {
            self.arm_wait(gen, due, wait, true);
        }
        self.push(Step::Resume {
            gen,
            at: decided_at,
            decided: false,
        });
    }

    /// No attempt starts at a hedge time any more (the budget refused).
    pub(super) fn cancel_spacing(&mut self, gen: u32) {
        let hint = self
            .b
            .flow
            .as_ref()
            .and_then(|f| f.hedge.as_deref())
            .is_some_and(|h| h.hint_wait);
        if !hint {
            self.cancel_wait(gen);
        }
    }

    /// After attempt `after` started (at `now` or earlier), the next one
    /// starts in `ms`: now (after the synchronous part of `after`), at a
    /// timer, or, for an infinite delay, only after a failure.
    pub(super) fn schedule_next(&mut self, gen: u32, after: u32, ms: f64, now: f64) {
        if ms <= 0.0 {
            self.push(Step::StartNext {
                gen,
                after,
                at: now,
            });
        } else if ms.is_finite() {
            self.arm_wait(gen, now + ms, ms, false);
        }
    }

    /// Starts attempt `attempt` of the active hedged flow at `now`, while
    /// the earlier ones go on.
    fn begin_hedged(&mut self, attempt: u32, now: f64) {
        let limit = self.c.policy.max_execution_time;
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
        h.hint_wait = false;
        h.running.push(Running {
            attempt,
            started: now,
            deadline: now + limit,
        });
        self.c.state.current_attempt = attempt;
        self.c.state.is_executing = true;
        self.touch();
        self.cancel_wait(gen);
        if running > 0 && self.c.policy.has(Cb::Hedge) {
            self.emit(Effect::Hedge {
                gen,
                attempt,
                running,
                elapsed,
            });
        }
        self.rearm_deadline(now);
        self.emit(Effect::Invoke { gen, attempt });
        self.plan_next(gen, attempt, now);
    }

    /// When the attempt after `attempt` (just started) starts.
    fn plan_next(&mut self, gen: u32, attempt: u32, now: f64) {
        let policy = &*self.c.policy;
        let Some(h) = self.b.flow.as_mut().and_then(|f| f.hedge.as_deref_mut()) else {
            return;
        };
        if !h.plans_spacing() {
            return;
        }
        match policy.hedge {
            None => {}
            Some(_) if plans_with_functions(policy) => {
                h.jobs.push(Job::Started(attempt));
                self.push(Step::Resume {
                    gen,
                    at: now,
                    decided: false,
                });
            }
            Some(Num::Static(d)) if f64::from(attempt) < effective_max_attempts(policy, None) => {
                self.schedule_next(gen, attempt, d, now);
            }
            Some(_) => {}
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

    /// Takes the waiting decisions of the active hedged flow in order, one
    /// at a time: each goes on until it asks a function for a value or
    /// queues callbacks, and the next one waits until it is done.
    fn next_job(&mut self, now: f64, budgets: &mut dyn Budgets) {
        loop {
            let Some(flow) = self.b.flow.as_mut() else {
                return;
            };
            let gen = flow.gen;
            let newest = flow.attempt;
            let idle = matches!(flow.phase, Phase::Attempt);
            let Some(h) = flow.hedge.as_deref_mut() else {
                return;
            };
            if !idle || h.jobs.is_empty() {
                return;
            }
            match h.jobs.remove(0) {
                Job::Failed { attempt, timed_out } => {
                    flow.phase = Phase::Gathering(Box::new(Gather::new(attempt)));
                    if timed_out {
                        self.call(gen, Cb::ExecutionTimeout, 0);
                        self.emit(Effect::TimeOut { gen, attempt });
                        self.push(Step::MarkError { gen });
                    }
                    self.gather(now, budgets);
                }
                Job::Started(attempt) => {
                    flow.phase = Phase::Gathering(start_gather(attempt));
                    self.gather(now, budgets);
                }
                Job::Due {
                    granted: true,
                    after,
                } => {
                    if h.hint_wait && after == newest {
                        self.begin_hedged(after.saturating_add(1), now);
                    }
                }
                Job::Due {
                    granted: false,
                    after,
                } => self.spacing_due(after, now, budgets),
            }
        }
    }

    /// Arms the `Attempt` timer for the earliest deadline among the running
    /// attempts of the active hedged flow, if that changed.
    fn rearm_deadline(&mut self, now: f64) {
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let gen = flow.gen;
        let Some(h) = flow.hedge.as_deref_mut() else {
            return;
        };
        let earliest = h
            .running
            .iter()
            .fold(f64::INFINITY, |m, r| m.min(r.deadline));
        if earliest == h.armed_deadline {
            return;
        }
        h.armed_deadline = earliest;
        self.disarm(gen, Timer::Attempt);
        if earliest.is_finite() {
            self.emit(Effect::StartTimer {
                gen,
                timer: Timer::Attempt,
                ms: backoff::clamp_delay(earliest - now),
            });
        }
    }

    /// Arms the `Wait` of hedged flow `gen` to end at `due`, `ms` from now;
    /// `hint`: a hint's wait, which grants the next attempt.
    fn arm_wait(&mut self, gen: u32, due: f64, ms: f64, hint: bool) {
        self.cancel_wait(gen);
        if let Some(h) = self.b.flow.as_mut().and_then(|f| f.hedge.as_deref_mut()) {
            h.hint_wait = hint;
            h.wait_due = due;
        }
        self.emit(Effect::StartTimer {
            gen,
            timer: Timer::Wait,
            ms: backoff::clamp_delay(ms),
        });
    }

    /// Clears the `Wait` of hedged flow `gen`: no start is due from it.
    fn cancel_wait(&mut self, gen: u32) {
        if let Some(h) = self.b.flow.as_mut().and_then(|f| f.hedge.as_deref_mut()) {
            h.hint_wait = false;
            h.wait_due = f64::INFINITY;
            h.jobs.retain(|j| !matches!(j, Job::Due { .. }));
        }
        self.disarm(gen, Timer::Wait);
    }

    /// Clears `timer` of flow `gen`, whether it is armed or its start is
    /// still queued.
    fn disarm(&mut self, gen: u32, timer: Timer) {
        self.drop_starts(|g, t| g == gen && t == timer);
        // A clear of this timer still queued would come after a start that
        // follows now (what a step queues goes first): it is moved here.
        let cleared =
            |s: &Step| matches!(*s, Step::Out(Effect::ClearTimer { timer: t }) if t == timer);
        let queued = self.b.expanding && self.b.queue.iter().any(cleared);
        if queued {
            self.b.queue.retain(|s| !cleared(s));
            self.emit(Effect::ClearTimer { timer });
        } else {
            self.clear_timer(timer);
        }
    }

    /// Drops the queued timer starts of hedged flow `gen`, which ends: its
    /// `Wait` is queued after an `Invoke`, so an attempt can settle (in a
    /// host that has not drained) before it is armed.
    fn drop_timer_starts(&mut self, gen: u32) {
        self.drop_starts(|g, _| g == gen);
    }

    /// Drops the queued `StartTimer`s that `which(gen, timer)` picks.
    fn drop_starts(&mut self, which: impl Fn(u32, Timer) -> bool) {
        let queued = |s: &Step| matches!(*s, Step::Out(Effect::StartTimer { gen, timer, .. }) if which(gen, timer));
        if self.b.head.as_ref().is_some_and(queued) {
            self.b.head = None;
        }
        self.b.queue.retain(|s| !queued(s));
        self.b.front.retain(|s| !queued(s));
    }
}
