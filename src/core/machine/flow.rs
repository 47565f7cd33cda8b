//! A flow from `execute()` to its end: starting it (with the plain path
//! most calls take), taking its attempts' outcomes, and every way it ends
//! (success, final failure, abort, the total deadline, a throwing
//! callback).

use alloc::boxed::Box;

use super::attempts::Hedged;
use super::{failure_outcome, Flow, PendingStart, Phase, Step, Work};
use crate::core::backoff;
use crate::core::budget::Budgets;
use crate::core::effect::{AbortReason, Effect, Eval, GiveUp, Outcome, Timer};
use crate::core::options::{Cb, Flag, Nested};

impl Work<'_> {
    /// `execute()` of a flow started inside another retryer's running
    /// attempt when `inside` is `Some(forbids)`, or outside any when
    /// `None` (see [`super::Machine::execute_within`]).
    pub(super) fn execute_within(
        &mut self,
        now: f64,
        outside_aborted: bool,
        inside: Option<bool>,
        hedges: bool,
    ) -> u32 {
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
            Flag::Static(true) => self.start(gen, now, outside_aborted, inside, hedges),
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
                    hedges,
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

    /// The attempt `attempt` of flow `gen` fulfilled: the flow succeeds
    /// (in a hedged flow, the first success wins and the others lose).
    pub(super) fn attempt_ok(
        &mut self,
        gen: u32,
        attempt: u32,
        now: f64,
        budgets: &mut dyn Budgets,
    ) {
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
        self.drop_behind(gen);
        self.clear_timers();
        self.release(&flow, None, false, Some(attempt));
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
    /// `refused`: a circuit breaker refused it, and may let one through in
    /// that many ms.
    pub(super) fn attempt_err(
        &mut self,
        gen: u32,
        attempt: u32,
        abort_error: bool,
        refused: Option<f64>,
        now: f64,
        budgets: &mut dyn Budgets,
    ) {
        if !self.is_running(gen, attempt) {
            return;
        }
        let hedged = self.hedged_attempt_over(attempt);
        if !hedged {
            self.clear_timer(Timer::Attempt);
        }
        if abort_error {
            let Some(flow) = self.b.flow.take() else {
                return;
            };
            self.drop_behind(gen);
            self.clear_timers();
            self.release(&flow, None, false, Some(attempt));
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
        if hedged {
            self.hedged_failure(attempt, refused, now, budgets);
            return;
        }
        if let Some(flow) = self.b.flow.as_mut() {
            flow.phase = super::Gather::phase(flow.attempt, false);
            if let (Some(ms), Phase::Gathering(g)) = (refused, &mut flow.phase) {
                g.refuse(ms);
            }
        }
        self.gather(now, budgets);
    }

    /// See [`super::Machine::attempt_refused`].
    pub(super) fn attempt_refused(
        &mut self,
        gen: u32,
        attempt: u32,
        retry_after: f64,
        now: f64,
        budgets: &mut dyn Budgets,
    ) {
        self.attempt_err(gen, attempt, false, Some(retry_after), now, budgets);
    }

    /// A timer fired.
    pub(super) fn timer_fired(&mut self, timer: Timer, now: f64, budgets: &mut dyn Budgets) {
        let current = self.b.flow.as_ref().map(|f| f.gen);
        if current.is_none() || self.armed_for(timer) != current {
            return;
        }
        self.set_armed(timer, None);
        let Some(flow) = self.b.flow.as_ref() else {
            return;
        };
        let (gen, attempt) = (flow.gen, flow.attempt);
        if flow.hedge.is_some() {
            match timer {
                Timer::Total => self.total_timeout(),
                t => self.hedge_timer(t, now, budgets),
            }
            return;
        }
        let waiting = matches!(flow.phase, Phase::Waiting);
        let attempting = matches!(flow.phase, Phase::Attempt);
        match timer {
            Timer::Wait if waiting => self.next_attempt(attempt.saturating_add(1), now),
            Timer::Attempt if attempting => self.execution_timeout(gen, now, budgets),
            Timer::Total => self.total_timeout(),
            _ => {}
        }
    }

    /// `abort()` (reason `Manual`) or the outside signal fired (`Signal`).
    /// Without an active flow nothing happens.
    pub(super) fn abort(&mut self, reason: AbortReason) {
        if let Some(flow) = self.b.flow.take() {
            self.abort_flow(flow, reason);
        }
    }

    /// A callback or listener of flow `gen` threw. An active flow ends at
    /// once; a decided one keeps its course but rejects with what was thrown.
    pub(super) fn callback_threw(&mut self, gen: u32) {
        if self.b.flow.as_ref().map(|f| f.gen) == Some(gen) {
            if let Some(flow) = self.b.flow.take() {
                let timed_out = self.drop_queued(gen);
                self.end_quietly(&flow, Outcome::Thrown, timed_out);
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

    // ----- starting -----

    /// Whether `execute()` can only start a first attempt and queue nothing
    /// else: no flow to abort, no start pending, `enabled` statically true,
    /// no signal to listen to, no deadline to arm, no hedge to schedule,
    /// nobody subscribed, and nothing queued. Most calls are this case;
    /// `start_plainly` takes it without the general steps, to the same
    /// state and the same effect.
    fn starts_plainly(&self) -> bool {
        let p = &*self.c.policy;
        self.b.flow.is_none()
            && self.b.pending_start.is_none()
            && self.nothing_queued()
            && p.enabled == Flag::Static(true)
            && !p.signal
            && !p.max_total_execution_time.is_finite()
            && !p.max_execution_time.is_finite()
            && p.hedge.is_none()
    }

    /// Whether a success of `flow` queues nothing but its `Finish`: no budget
    /// to credit, no timer to clear, no signal to stop listening to, no
    /// other attempt to cancel, no `onSuccess`/`onSettled`, nobody
    /// subscribed, and nothing queued.
    fn ends_plainly(&self, flow: &Flow) -> bool {
        let p = &*self.c.policy;
        p.budget.is_none()
            && self.b.armed_bits == 0
            && !flow.listening
            && flow.hedge.is_none()
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
            refused: false,
            passthrough,
            forbids_inner,
            hedge: None,
        });
    }

    /// Nobody subscribed, and nothing queued or being expanded: what both
    /// plain paths need of the machine besides the policy.
    fn nothing_queued(&self) -> bool {
        !self.c.listeners && !self.b.expanding && self.b.head.is_none() && self.b.queue.is_empty()
    }

    /// Starts flow `gen` (a start that `enabled` allowed).
    pub(super) fn start(
        &mut self,
        gen: u32,
        now: f64,
        outside_aborted: bool,
        inside: Option<bool>,
        hedges: bool,
    ) {
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
        if let Some(flow) = self.b.flow.as_mut() {
            if hedges && !flow.passthrough && self.c.policy.hedge.is_some() {
                flow.hedge = Some(Hedged::new());
            }
        }
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
        self.begin_attempt(1, now);
    }

    // ----- ending -----

    pub(super) fn total_timeout(&mut self) {
        if let Some(flow) = self.b.flow.take() {
            self.abort_flow(flow, AbortReason::TotalTimeout);
        }
    }

    /// Ends `flow` for `reason` (`onTotalExecutionTimeout` first, for the
    /// total deadline).
    pub(super) fn abort_flow(&mut self, flow: Flow, reason: AbortReason) {
        let gen = flow.gen;
        let timed_out = self.drop_queued(gen);
        if reason == AbortReason::TotalTimeout {
            self.call(gen, Cb::TotalExecutionTimeout, 0);
        }
        self.release(&flow, Some(reason), true, timed_out);
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
    /// callback or option function); a running attempt is aborted, and
    /// `timed_out`, one whose `TimeOut` was dropped from the queue.
    pub(super) fn end_quietly(&mut self, flow: &Flow, outcome: Outcome, timed_out: Option<u32>) {
        self.drop_behind(flow.gen);
        self.release(flow, Some(AbortReason::Manual), false, timed_out);
        self.clear_timers();
        self.unlisten(flow);
        self.c.state.is_executing = false;
        self.touch();
        self.emit(Effect::Finish {
            gen: flow.gen,
            outcome,
        });
    }

    /// The final failure of a flow that was already taken out of
    /// `self.b.flow`. In a hedged flow, attempts still running lose.
    pub(super) fn give_up(&mut self, flow: &Flow, reason: GiveUp) {
        self.conclude(flow, reason, true);
    }

    /// Ends `flow` (already taken out of `self.b.flow`) in failure for
    /// `reason`, with its last error as the final one. `attempt_failed`:
    /// an attempt failed just now, and `onError` and `onSettled` belong to
    /// it; otherwise they ran with the attempt that failed before the
    /// wait (a `beforeRetry` hook stopped the flow).
    pub(super) fn conclude(&mut self, flow: &Flow, reason: GiveUp, attempt_failed: bool) {
        let gen = flow.gen;
        // Whatever ended it, a flow whose final error is a refusal gave
        // up because the circuit is open (SPEC §2e rule 3).
        let reason = match reason {
            GiveUp::Nested => reason,
            _ if flow.refused => GiveUp::CircuitOpen,
            _ => reason,
        };
        self.drop_behind(gen);
        self.clear_timers();
        self.release(flow, None, false, None);
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
        let outcome = failure_outcome(&self.c.policy, reason == GiveUp::Nested);
        self.emit(Effect::Finish { gen, outcome });
    }
}
