//! The decision after a failed attempt and the wait it leads to: what the
//! option functions answer (`shouldRetry`, a dynamic `maxAttempts`, the
//! delay's inputs, a `retryAfter` hint), what the budget allows, the delay,
//! and going on after the retry callbacks. A hedged flow takes the same
//! decision without the backoff options, and also decides, after each
//! start, when the next attempt starts (its hedge delay).

use alloc::boxed::Box;

use super::{effective_max_attempts, Phase, Step, Work};
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
}

impl Gather {
    pub(super) fn new(attempt: u32) -> Gather {
        Gather {
            attempt,
            started: false,
            awaiting: None,
            should_retry: None,
            max_attempts: None,
            decided: None,
            base_wait: None,
            max_wait: None,
            retry_after: None,
            custom: None,
            hedge: None,
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
    /// one function value at a time, then decides.
    pub(super) fn gather(&mut self, now: f64, budgets: &mut dyn Budgets) {
        let Some(flow) = self.b.flow.as_ref() else {
            return;
        };
        if flow.hedge.is_some() {
            self.gather_hedged(now, budgets);
            return;
        }
        let policy = &self.c.policy;
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let gen = flow.gen;
        let Phase::Gathering(g) = &mut flow.phase else {
            return;
        };
        let attempt = g.attempt;
        if flow.passthrough && g.decided.is_none() {
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
            let step = ask(g, gen, Eval::BaseWait);
            self.push(step);
            return;
        }
        if policy.max_wait == Num::Dynamic && g.max_wait.is_none() {
            let step = ask(g, gen, Eval::MaxWait);
            self.push(step);
            return;
        }
        if policy.retry_after && g.retry_after.is_none() {
            let step = ask(g, gen, Eval::RetryAfter);
            self.push(step);
            return;
        }
        if policy.intervals.is_none() && policy.backoff == Backoff::Custom && g.custom.is_none() {
            let step = ask(g, gen, Eval::Backoff);
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
        self.retry_callbacks(gen, attempt);
        self.push(Step::Continue {
            gen,
            attempt,
            delay,
            decided_at: now,
        });
    }

    /// A hedged flow's decision (SPEC §2c): after a start, when the next
    /// attempt starts; after a failure, whether the flow ends (a refusing
    /// `shouldRetry`, or nothing left to run) or goes on, and whether a
    /// `retryAfter` hint holds the next attempt back. The backoff options
    /// are not used.
    fn gather_hedged(&mut self, now: f64, budgets: &mut dyn Budgets) {
        let policy = &self.c.policy;
        let Some(flow) = self.b.flow.as_mut() else {
            return;
        };
        let (gen, newest) = (flow.gen, flow.attempt);
        let Some(h) = flow.hedge.as_deref_mut() else {
            return;
        };
        let Phase::Gathering(g) = &mut flow.phase else {
            return;
        };
        let attempt = g.attempt;
        let dynamic_max = policy.max_attempts == Num::Dynamic;
        if g.started {
            // Only while it is the newest attempt and a timed start may
            // follow it.
            let open = newest == attempt && h.plans_spacing() && policy.hedge.is_some();
            if open && dynamic_max && g.max_attempts.is_none() {
                let step = ask(g, gen, Eval::MaxAttempts);
                self.push(step);
                return;
            }
            if let Some(m) = g.max_attempts {
                h.max_attempts = Some(m);
            }
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
            flow.phase = Phase::Attempt;
            if let (true, Some(d)) = (more, delay) {
                self.schedule_next(gen, attempt, since + d - now, now);
            }
            self.push(Step::Resume {
                gen,
                at: now,
                decided: false,
            });
            return;
        }
        if policy.should_retry && g.decided.is_none() && g.should_retry.is_none() {
            let step = ask(g, gen, Eval::ShouldRetry);
            self.push(step);
            return;
        }
        let should = g.should_retry.unwrap_or(true);
        if should && g.decided.is_none() && dynamic_max && g.max_attempts.is_none() {
            let step = ask(g, gen, Eval::MaxAttempts);
            self.push(step);
            return;
        }
        if g.decided.is_none() {
            if let Some(m) = g.max_attempts {
                h.max_attempts = Some(m);
            }
            let max = effective_max_attempts(policy, h.max_attempts);
            let mut verdict = if !should {
                Some(GiveUp::NotRetryable)
            } else if f64::from(newest) >= max {
                Some(GiveUp::AttemptsExhausted)
            } else {
                h.stop
            };
            if let Some(b) = policy.budget.and_then(|id| budgets.budget(id)) {
                b.record_failure();
                if verdict.is_none() && !b.allows_retry() {
                    verdict = Some(GiveUp::BudgetExhausted);
                }
            }
            if verdict == Some(GiveUp::BudgetExhausted) {
                // Sticky: once the budget refused, no attempt starts.
                h.stop = verdict;
            }
            g.decided = Some(verdict);
        }
        match g.decided {
            Some(Some(reason)) if reason == GiveUp::NotRetryable || h.is_spent() => {
                if let Some(flow) = self.b.flow.take() {
                    self.give_up(&flow, reason);
                }
            }
            Some(Some(reason)) => {
                // Others still run (or a granted start waits): this failure
                // is reported, and the flow goes on without a new start.
                flow.phase = Phase::Deciding;
                if reason == GiveUp::BudgetExhausted {
                    self.cancel_spacing(gen);
                }
                self.call(gen, Cb::Error, 0);
                self.call(gen, Cb::Settled, 0);
                self.push(Step::Resume {
                    gen,
                    at: now,
                    decided: true,
                });
            }
            _ => {
                if policy.retry_after && g.retry_after.is_none() {
                    let step = ask(g, gen, Eval::RetryAfter);
                    self.push(step);
                    return;
                }
                let delay = g.retry_after.flatten().map_or(0.0, backoff::clamp_delay);
                flow.phase = Phase::Deciding;
                self.retry_callbacks(gen, attempt);
                self.push(Step::Continue {
                    gen,
                    attempt,
                    delay,
                    decided_at: now,
                });
            }
        }
    }

    /// `onError`, `onRetry` and `onSettled` of a failed attempt another
    /// one follows.
    fn retry_callbacks(&mut self, gen: u32, attempt: u32) {
        self.call(gen, Cb::Error, 0);
        self.call(gen, Cb::Retry, attempt);
        self.call(gen, Cb::Settled, 0);
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
            self.begin_attempt(attempt.saturating_add(1), decided_at);
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

    /// `onBackoff`, when it is set.
    pub(super) fn backoff_effect(&mut self, gen: u32, attempt: u32, delay: f64, elapsed: f64) {
        if self.c.policy.has(Cb::Backoff) {
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

/// The decision after a start of a hedged flow, when it needs values
/// only functions give (a dynamic `hedge` or `maxAttempts`).
pub(super) fn start_gather(attempt: u32) -> Box<Gather> {
    let mut g = Gather::new(attempt);
    g.started = true;
    Box::new(g)
}

/// Whether a hedged flow needs a function's value to plan its next start.
pub(super) fn plans_with_functions(policy: &Policy) -> bool {
    policy.max_attempts == Num::Dynamic || policy.hedge == Some(Num::Dynamic)
}
