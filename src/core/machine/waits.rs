//! The decision after a failed attempt and the wait it leads to: what the
//! option functions answer (`shouldRetry`, a dynamic `maxAttempts`, the
//! delay's inputs, a `retryAfter` hint), what the budget allows, the delay,
//! and going on after the retry callbacks. A hedged flow takes the same
//! decision without the backoff options, and also decides, after each
//! start, when the next attempt starts (its hedge delay).

use alloc::boxed::Box;

use super::{effective_max_attempts, Flow, Phase, Step, Work};
use crate::core::backoff::{self, Backoff, Jitter};
use crate::core::budget::Budgets;
use crate::core::effect::{Effect, Eval, GiveUp, Outcome, Provided};
use crate::core::options::{check_max_attempts, Cb, Num, Policy};

/// Values collected for a decision: after a failed attempt, or in a
/// hedged flow after a start (`started`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Gather {
    /// The attempt decided about: the one that failed, or the one that
    /// started.
    pub(super) attempt: u32,
    /// A hedged flow's decision after attempt `attempt` started: when the
    /// next one starts.
    pub(super) started: bool,
    awaiting: Option<Eval>,
    should_retry: Option<bool>,
    max_attempts: Option<f64>,
    decided: Option<Option<GiveUp>>,
    base_wait: Option<f64>,
    max_wait: Option<f64>,
    retry_after: Option<Option<f64>>,
    custom: Option<f64>,
    hedge: Option<f64>,
    /// The attempt decided about was refused by a circuit breaker; its
    /// hint is in `retry_after` (SPEC §2e rule 3).
    refused: bool,
}

impl Gather {
    /// The phase of a flow gathering for a decision about `attempt`
    /// (`started`: a hedged flow's, after it started). One function, not a
    /// copy of the allocation at each caller.
    #[inline(never)]
    pub(super) fn phase(attempt: u32, started: bool) -> Phase {
        Phase::Gathering(Box::new(Gather {
            attempt,
            started,
            awaiting: None,
            should_retry: None,
            max_attempts: None,
            decided: None,
            base_wait: None,
            max_wait: None,
            retry_after: None,
            custom: None,
            hedge: None,
            refused: false,
        }))
    }

    /// The attempt decided about was refused by a circuit breaker that
    /// may let one through in `ms` (`Infinity`: not before a reset): its
    /// hint replaces the `retryAfter` function's (SPEC §2e rule 3).
    pub(super) fn refuse(&mut self, ms: f64) {
        self.refused = true;
        self.retry_after = Some(ms.is_finite().then_some(ms));
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

impl Work<'_> {
    /// The answer to an [`Effect::Eval`] of flow `gen`.
    pub(super) fn provide(
        &mut self,
        gen: u32,
        value: Provided,
        now: f64,
        budgets: &mut dyn Budgets,
    ) {
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
                            self.start(
                                gen,
                                pending.now,
                                pending.outside_aborted,
                                pending.inside,
                                pending.hedges,
                            );
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
        // A hedged flow counts every attempt it may start at once: its
        // `maxAttempts` must be finite (SPEC §2c rule 1).
        let infinite_ok = total_finite && flow.hedge.is_none();
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
                Ok(v) if v.is_finite() || infinite_ok => {
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
            // Infinity: no attempt starts by time after this one.
            (Eval::Hedge, Provided::Number(v)) if v >= 0.0 => {
                g.hedge = Some(v);
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
                self.end_quietly(&flow, outcome, None);
            }
            return;
        }
        self.gather(now, budgets);
    }

    /// Collects what the decision about the active flow needs, asking for
    /// one function value at a time, then decides. A hedged flow (SPEC
    /// §2c) takes the same decision without the backoff options: its
    /// attempts are counted from the newest started, a budget that refused
    /// once keeps refusing, and a failure while others run (or while a
    /// granted start waits) ends nothing; the next attempt starts at once,
    /// or when a `retryAfter` hint ends.
    pub(super) fn gather(&mut self, now: f64, budgets: &mut dyn Budgets) {
        let policy = &self.c.policy;
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let (gen, newest, passthrough) = (flow.gen, flow.attempt, flow.passthrough);
        let deadline = flow.deadline;
        let Flow {
            hedge,
            phase,
            refused,
            ..
        } = flow;
        let Phase::Gathering(g) = phase else {
            return;
        };
        if g.started {
            self.gather_start(now);
            return;
        }
        let attempt = g.attempt;
        let mut hedge = hedge.as_deref_mut();
        let hedged = hedge.is_some();
        if passthrough && g.decided.is_none() {
            // The enclosing flow owns the retry, and counts the failure
            // against any budget it shares.
            g.decided = Some(Some(GiveUp::Nested));
        }
        if policy.should_retry && g.decided.is_none() && g.should_retry.is_none() {
            let step = ask(g, gen, Eval::ShouldRetry);
            self.push(step);
            return;
        }
        let should = g.should_retry.unwrap_or(true);
        if should
            && g.decided.is_none()
            && policy.max_attempts == Num::Dynamic
            && g.max_attempts.is_none()
        {
            let step = ask(g, gen, Eval::MaxAttempts);
            self.push(step);
            return;
        }
        if g.decided.is_none() {
            let mut known = g.max_attempts;
            let mut stop = None;
            if let Some(h) = hedge.as_deref_mut() {
                h.max_attempts = known.or(h.max_attempts);
                known = h.max_attempts;
                stop = h.stop;
            }
            let max = effective_max_attempts(policy, known);
            let budget = policy.budget.and_then(|id| budgets.budget(id));
            let mut verdict = if !should {
                Some(GiveUp::NotRetryable)
            } else if f64::from(newest) >= max {
                Some(GiveUp::AttemptsExhausted)
            } else {
                stop
            };
            if g.refused {
                // Nothing was sent: the budget is not asked. With a hint
                // past the deadline (or none before a reset) the flow gives
                // up at once; whatever ends it, `conclude` reports
                // 'circuit-open' for a refusal (`shouldRetry` false still
                // ends a hedged flow at once).
                let wait = g.retry_after.flatten().unwrap_or(f64::INFINITY);
                if verdict.is_none() && now + wait >= deadline {
                    verdict = Some(GiveUp::CircuitOpen);
                }
            } else if let Some(b) = budget {
                b.record_failure();
                if verdict.is_none() && !b.allows_retry() {
                    verdict = Some(GiveUp::BudgetExhausted);
                }
            }
            *refused = g.refused;
            if let Some(h) = hedge.as_deref_mut() {
                if matches!(verdict, Some(GiveUp::BudgetExhausted | GiveUp::CircuitOpen)) {
                    // Once the budget refused, or a refusal gave up, no
                    // attempt starts.
                    h.stop = verdict;
                    if !h.hint {
                        h.next_due = f64::INFINITY;
                    }
                }
            }
            g.decided = Some(verdict);
        }
        if let Some(Some(reason)) = g.decided {
            let goes_on = hedge.is_some_and(|h| !h.is_spent());
            if goes_on && reason != GiveUp::NotRetryable {
                // Others still run (or a granted start waits): this
                // failure is reported, and nothing new starts for it.
                *phase = Phase::Deciding;
                self.call(gen, Cb::Error, 0);
                self.call(gen, Cb::Settled, 0);
                self.push(Step::Resume {
                    gen,
                    at: now,
                    decided: true,
                });
                return;
            }
            // With retryOnExecutionTimeout a timed-out attempt is an ordinary
            // failed attempt, so a timed-out last one exhausts the attempts.
            if let Some(flow) = self.b.flow.take() {
                self.give_up(&flow, reason);
            }
            return;
        }
        // A refusal's hint is its wait: no delay function is asked.
        let backoff = !hedged && policy.intervals.is_none() && !g.refused;
        let uses_base = backoff && policy.backoff != Backoff::Custom;
        if uses_base && policy.base_wait == Num::Dynamic && g.base_wait.is_none() {
            let step = ask(g, gen, Eval::BaseWait);
            self.push(step);
            return;
        }
        if !hedged && !g.refused && policy.max_wait == Num::Dynamic && g.max_wait.is_none() {
            let step = ask(g, gen, Eval::MaxWait);
            self.push(step);
            return;
        }
        if policy.retry_after && g.retry_after.is_none() {
            let step = ask(g, gen, Eval::RetryAfter);
            self.push(step);
            return;
        }
        if backoff && policy.backoff == Backoff::Custom && g.custom.is_none() {
            let step = ask(g, gen, Eval::Backoff);
            self.push(step);
            return;
        }
        let hint = g.retry_after.flatten();
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
            retry_after: hint,
            custom: g.custom.unwrap_or(0.0),
        };
        *phase = Phase::Deciding;
        let delay = if hedged {
            hint.map_or(0.0, backoff::clamp_delay)
        } else {
            self.delay(inputs)
        };
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

    /// A hedged flow's decision after attempt `attempt` started, when a
    /// function gives its hedge delay or `maxAttempts`: when the next
    /// attempt starts (only while it is the newest and a timed start may
    /// follow it).
    #[inline(never)]
    pub(super) fn gather_start(&mut self, now: f64) {
        let policy = &self.c.policy;
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let (gen, newest) = (flow.gen, flow.attempt);
        let Flow { hedge, phase, .. } = flow;
        let (Some(h), Phase::Gathering(g)) = (hedge.as_deref_mut(), &mut *phase) else {
            return;
        };
        let attempt = g.attempt;
        let open = newest == attempt && h.plans_spacing() && policy.hedge.is_some();
        if open && policy.max_attempts == Num::Dynamic && g.max_attempts.is_none() {
            let step = ask(g, gen, Eval::MaxAttempts);
            self.push(step);
            return;
        }
        h.max_attempts = g.max_attempts.or(h.max_attempts);
        let more = open && f64::from(newest) < effective_max_attempts(policy, h.max_attempts);
        let delay = match policy.hedge {
            Some(Num::Static(v)) => Some(v),
            _ => g.hedge,
        };
        if more && delay.is_none() {
            let step = ask(g, gen, Eval::Hedge);
            self.push(step);
            return;
        }
        let since = h.started_at(attempt).unwrap_or(now);
        *phase = Phase::Attempt;
        if let (true, Some(d)) = (more, delay) {
            self.schedule_next(gen, attempt, since + d - now, now);
        }
        self.push(Step::Resume {
            gen,
            at: now,
            decided: false,
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

    /// After the retry callbacks of failed attempt `attempt` of flow
    /// `gen`, decided at `decided_at`: wait `delay` ms (or time out, when
    /// the wait would cross the total deadline), or retry at once.
    pub(super) fn continue_after_callbacks(
        &mut self,
        gen: u32,
        attempt: u32,
        delay: f64,
        decided_at: f64,
    ) {
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        if flow.gen != gen || !matches!(flow.phase, Phase::Deciding) {
            return;
        }
        if flow.hedge.is_some() {
            self.continue_hedged(gen, attempt, delay, decided_at);
            return;
        }
        if decided_at + delay >= flow.deadline {
            self.total_timeout();
            return;
        }
        let elapsed = (decided_at - flow.started).max(0.0);
        self.backoff_effect(gen, attempt, delay, elapsed);
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        if delay <= 0.0 {
            self.next_attempt(attempt.saturating_add(1), decided_at);
            return;
        }
        flow.phase = Phase::Waiting;
        flow.attempt = attempt;
        self.c.state.current_attempt = attempt.saturating_add(1);
        self.touch();
        self.emit(Effect::StartTimer {
            gen,
            timer: super::Timer::Wait,
            ms: delay,
        });
    }

    /// Attempt `attempt` after a failed one, at `now`: at once, or, when a
    /// host hook decides whether retries go (`before_retry`), once it said
    /// so (see [`Effect::Gate`]).
    pub(super) fn next_attempt(&mut self, attempt: u32, now: f64) {
        if !self.c.policy.before_retry {
            self.begin_attempt(attempt, now);
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

    /// The answer to the [`Effect::Gate`] before attempt `attempt` of flow
    /// `gen` (see [`super::Machine::answer_gate`]).
    pub(super) fn answer_gate(&mut self, gen: u32, attempt: u32, answer: Provided, now: f64) {
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
                    self.end_quietly(&flow, Outcome::Thrown, None);
                }
            }
            _ => self.begin_attempt(attempt, now),
        }
    }

    /// `onBackoff`, when it is set.
    pub(super) fn backoff_effect(&mut self, gen: u32, attempt: u32, delay: f64, elapsed: f64) {
        if self.c.policy.has(Cb::Backoff) || self.c.traced {
            self.emit(Effect::Backoff {
                gen,
                attempt,
                delay,
                elapsed,
            });
        }
    }
}

/// Asks for the value of `what` for the decision `g` of flow `gen`.
fn ask(g: &mut Gather, gen: u32, what: Eval) -> Step {
    g.awaiting = Some(what);
    Step::Out(Effect::Eval {
        gen,
        what,
        attempt: g.attempt,
    })
}

/// Whether a hedged flow needs a function's value to plan its next start.
pub(super) fn plans_with_functions(policy: &Policy) -> bool {
    policy.max_attempts == Num::Dynamic || policy.hedge == Some(Num::Dynamic)
}
