//! A fake host for the sans-IO machine: it pops effects into a log, keeps a
//! fake clock and a fake timer wheel (one live timer per kind, as the wasm
//! layer keeps one timer per kind), owns the budgets, and can run
//! "callbacks" that re-enter the machine while the rest of a flow's effects
//! are still queued.
//!
//! Every popped effect is checked against the host contract on the way:
//! no effect of a generation after its `Finish`, at most one `Finish` per
//! generation, no `StartTimer` of a kind that is still live (a timer would
//! leak), every delay finite and within `[0, 2^31-1]`.

#![allow(dead_code, unused_imports)]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

pub use retry_wasm::core::backoff::{self, Backoff, Jitter, MAX_TIMER_MS};
pub use retry_wasm::core::budget::{Budget, BudgetError, Budgets};
pub use retry_wasm::core::effect::{
    AbortReason, Effect, Eval, GiveUp, Outcome, Provided, Timer, TIMERS,
};
pub use retry_wasm::core::machine::Machine;
pub use retry_wasm::core::options::{
    Cb, ErrorKind, Expect, Flag, Num, Opt, OptionError, Policy, Raw, Throw, ALL_OPTS,
};
pub use retry_wasm::core::random::Rng;
pub use retry_wasm::core::state::{State, Status};

/// Entropy for machines without a `seed` (tests that care set one).
pub const ENTROPY: u64 = 0x1234_5678;

/// The lifecycle callback options, in `ALL_OPTS` order.
pub fn callback_opts() -> Vec<Opt> {
    ALL_OPTS
        .iter()
        .copied()
        .filter(|o| o.callback().is_some())
        .collect()
}

/// A validated policy from option values, as `new AsyncRetryer(fn, opts)`
/// would stage them: each `set`, then the cross-option `finish`.
pub fn try_policy(opts: &[(Opt, Raw<'_>)]) -> Result<Policy, OptionError> {
    let mut p = Policy::default();
    for &(opt, raw) in opts {
        p.set(opt, raw)?;
    }
    p.finish()?;
    Ok(p)
}

/// Like [`try_policy`], panicking on a refused option.
pub fn policy(opts: &[(Opt, Raw<'_>)]) -> Policy {
    try_policy(opts).unwrap_or_else(|e| panic!("policy {opts:?} refused: {e:?}"))
}

/// A policy with every lifecycle callback of SPEC §1 and `onGiveUp` set,
/// plus `opts`. `onBackoff` is left out: the exact effect sequences these
/// policies are checked against predate it, and its own tests set it.
pub fn policy_all_cbs(opts: &[(Opt, Raw<'_>)]) -> Policy {
    let mut all: Vec<(Opt, Raw<'_>)> = callback_opts()
        .into_iter()
        .filter(|o| *o != Opt::OnBackoff)
        .map(|o| (o, Raw::Function))
        .collect();
    all.extend_from_slice(opts);
    policy(&all)
}

/// A policy with `intervals` set to `list`.
pub fn with_intervals(mut p: Policy, list: &[f64]) -> Policy {
    p.set(Opt::Intervals, Raw::Array(list.len() as u32))
        .unwrap();
    for (i, &v) in list.iter().enumerate() {
        p.push_interval(i as u32, Raw::Number(v)).unwrap();
    }
    p.finish().unwrap();
    p
}

/// The generation an effect belongs to, if any.
pub fn effect_gen(e: &Effect) -> Option<u32> {
    e.gen()
}

// ----- effect shorthands for exact expectations -----

pub fn inv(gen: u32, attempt: u32) -> Effect {
    Effect::Invoke { gen, attempt }
}
pub fn call(gen: u32, cb: Cb) -> Effect {
    Effect::Call { gen, cb, arg: 0 }
}
pub fn retry(gen: u32, attempt: u32) -> Effect {
    Effect::Call {
        gen,
        cb: Cb::Retry,
        arg: attempt,
    }
}
pub fn on_abort(gen: u32, reason: AbortReason) -> Effect {
    Effect::Call {
        gen,
        cb: Cb::Abort,
        arg: reason as u32,
    }
}
pub fn give_up(gen: u32, reason: GiveUp) -> Effect {
    Effect::Call {
        gen,
        cb: Cb::GiveUp,
        arg: reason as u32,
    }
}
pub fn fin(gen: u32, outcome: Outcome) -> Effect {
    Effect::Finish { gen, outcome }
}
pub fn start(gen: u32, timer: Timer, ms: f64) -> Effect {
    Effect::StartTimer { gen, timer, ms }
}
pub fn wait(gen: u32, ms: f64) -> Effect {
    start(gen, Timer::Wait, ms)
}
pub fn clear(timer: Timer) -> Effect {
    Effect::ClearTimer { timer }
}
pub fn abort_att(gen: u32, attempt: u32, reason: AbortReason) -> Effect {
    Effect::AbortAttempt {
        gen,
        attempt,
        reason,
    }
}
pub fn time_out(gen: u32, attempt: u32) -> Effect {
    Effect::TimeOut { gen, attempt }
}
pub fn cancel(gen: u32, attempt: u32) -> Effect {
    Effect::CancelAttempt { gen, attempt }
}
pub fn eval(gen: u32, what: Eval, attempt: u32) -> Effect {
    Effect::Eval { gen, what, attempt }
}
pub const SC: Effect = Effect::StateChanged;

/// Only the callbacks of a list of effects, as `(cb, arg)`.
pub fn cbs(effects: &[Effect]) -> Vec<(Cb, u32)> {
    effects
        .iter()
        .filter_map(|e| match *e {
            Effect::Call { cb, arg, .. } => Some((cb, arg)),
            _ => None,
        })
        .collect()
}

/// The delays of the `Wait` timers in a list of effects.
pub fn waits(effects: &[Effect]) -> Vec<f64> {
    effects
        .iter()
        .filter_map(|e| match *e {
            Effect::StartTimer {
                timer: Timer::Wait,
                ms,
                ..
            } => Some(ms),
            _ => None,
        })
        .collect()
}

/// The list without `StateChanged` (for expectations that do not care).
pub fn quiet(effects: &[Effect]) -> Vec<Effect> {
    effects
        .iter()
        .copied()
        .filter(|e| *e != Effect::StateChanged)
        .collect()
}

/// A timer the host is running.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Live {
    pub timer: Timer,
    pub due: f64,
    pub gen: u32,
}

type Reaction = Box<dyn FnMut(&mut Host)>;

/// The fake host.
pub struct Host {
    pub m: Machine,
    pub now: f64,
    pub budgets: Rc<RefCell<Vec<Budget>>>,
    /// Every effect popped so far.
    pub log: Vec<Effect>,
    /// Live timers, at most one per kind.
    pub wheel: Vec<Live>,
    /// Invoked attempts `(gen, attempt)` in order.
    pub invoked: Vec<(u32, u32)>,
    /// How each generation settled.
    pub finished: BTreeMap<u32, Outcome>,
    /// Generations whose outside signal is listened to.
    pub listening: BTreeSet<u32>,
    /// Timers that fired: `(timer, gen that started it, when)`.
    pub fired: Vec<(Timer, u32, f64)>,
    /// `StateChanged` effects popped.
    pub state_changes: u32,
    /// One-shot reactions to callbacks, run when the `Call` is popped.
    reactions: Vec<(Cb, Reaction)>,
}

impl Host {
    pub fn new(policy: Policy) -> Host {
        Host::with_budgets(policy, Rc::new(RefCell::new(Vec::new())))
    }

    /// A host whose machine shares `budgets` with other hosts.
    pub fn with_budgets(policy: Policy, budgets: Rc<RefCell<Vec<Budget>>>) -> Host {
        Host {
            m: Machine::new(policy, ENTROPY),
            now: 0.0,
            budgets,
            log: Vec::new(),
            wheel: Vec::new(),
            invoked: Vec::new(),
            finished: BTreeMap::new(),
            listening: BTreeSet::new(),
            fired: Vec::new(),
            state_changes: 0,
            reactions: Vec::new(),
        }
    }

    /// Turns on `StateChanged` effects (someone subscribed).
    pub fn subscribed(mut self) -> Host {
        self.m.set_listeners(true);
        self
    }

    pub fn state(&self) -> &State {
        self.m.state()
    }

    pub fn status(&self) -> Status {
        self.m.status()
    }

    pub fn version(&self) -> u32 {
        self.m.state().version
    }

    /// The most recently invoked attempt.
    pub fn current(&self) -> (u32, u32) {
        *self.invoked.last().expect("nothing invoked yet")
    }

    /// Runs `f` once, when the next `Call` of `cb` is popped by `drain`.
    pub fn on(&mut self, cb: Cb, f: impl FnMut(&mut Host) + 'static) {
        self.reactions.push((cb, Box::new(f)));
    }

    // ----- popping -----

    /// Pops one effect, carries it out on the fake host, and checks it.
    pub fn pop(&mut self) -> Option<Effect> {
        let e = {
            let mut b = self.budgets.borrow_mut();
            self.m.next_effect(&mut *b)?
        };
        if let Some(g) = effect_gen(&e) {
            assert!(
                !self.finished.contains_key(&g),
                "effect {e:?} after the Finish of gen {g}; log: {:?}",
                self.log
            );
        }
        match e {
            Effect::Finish { gen, outcome } => {
                self.finished.insert(gen, outcome);
            }
            Effect::StartTimer { gen, timer, ms } => {
                assert!(
                    ms.is_finite() && (0.0..=MAX_TIMER_MS).contains(&ms),
                    "timer {timer:?} of {ms} ms"
                );
                assert!(
                    !self.wheel.iter().any(|l| l.timer == timer),
                    "StartTimer {timer:?} while one is live (leak); wheel {:?}; log {:?}",
                    self.wheel,
                    self.log
                );
                // As in Node, a 0 ms timer fires 1 ms later: the clock moves
                // on even when a flow keeps starting 0 ms timers.
                self.wheel.push(Live {
                    timer,
                    due: self.now + ms.max(1.0),
                    gen,
                });
            }
            Effect::ClearTimer { timer } => self.wheel.retain(|l| l.timer != timer),
            Effect::Listen { gen } => {
                assert!(self.listening.insert(gen), "Listen twice for gen {gen}");
            }
            Effect::Unlisten { gen } => {
                self.listening.remove(&gen);
            }
            Effect::Invoke { gen, attempt } => self.invoked.push((gen, attempt)),
            Effect::StateChanged => self.state_changes += 1,
            Effect::Backoff { delay, elapsed, .. } => {
                assert!(
                    delay.is_finite() && (0.0..=MAX_TIMER_MS).contains(&delay),
                    "backoff of {delay} ms"
                );
                assert!(elapsed >= 0.0, "backoff {elapsed} ms after the start");
            }
            Effect::AbortAttempt { .. }
            | Effect::TimeOut { .. }
            | Effect::CancelAttempt { .. }
            | Effect::Hedge { .. }
            | Effect::Call { .. }
            | Effect::Eval { .. }
            | Effect::Gate { .. } => {}
        }
        self.log.push(e);
        Some(e)
    }

    /// Pops everything, running one-shot reactions as their callbacks come
    /// up (they may feed inputs, which queue more effects). Returns what was
    /// popped by this call.
    pub fn drain(&mut self) -> Vec<Effect> {
        let mut out = Vec::new();
        while let Some(e) = self.pop() {
            out.push(e);
            assert!(
                out.len() < 1_000_000,
                "runaway: the machine never stops emitting"
            );
            let called = match e {
                Effect::Call { cb, .. } => Some(cb),
                Effect::Backoff { .. } => Some(Cb::Backoff),
                Effect::Hedge { .. } => Some(Cb::Hedge),
                _ => None,
            };
            if let Some(cb) = called {
                if let Some(i) = self.reactions.iter().position(|(c, _)| *c == cb) {
                    let (_, mut f) = self.reactions.remove(i);
                    f(self);
                }
            }
        }
        out
    }

    /// Pops at most `n` effects (no reactions).
    pub fn pop_n(&mut self, n: usize) -> Vec<Effect> {
        let mut out = Vec::new();
        for _ in 0..n {
            match self.pop() {
                Some(e) => out.push(e),
                None => break,
            }
        }
        out
    }

    // ----- inputs (they only queue effects; call `drain`) -----

    pub fn execute(&mut self) -> u32 {
        self.m.execute(self.now, false)
    }

    pub fn execute_aborted(&mut self) -> u32 {
        self.m.execute(self.now, true)
    }

    pub fn ok(&mut self, gen: u32, attempt: u32) {
        let mut b = self.budgets.borrow_mut();
        self.m.attempt_ok(gen, attempt, self.now, &mut *b);
    }

    pub fn err(&mut self, gen: u32, attempt: u32) {
        let mut b = self.budgets.borrow_mut();
        self.m.attempt_err(gen, attempt, false, self.now, &mut *b);
    }

    pub fn abort_error(&mut self, gen: u32, attempt: u32) {
        let mut b = self.budgets.borrow_mut();
        self.m.attempt_err(gen, attempt, true, self.now, &mut *b);
    }

    /// Settles the most recently invoked attempt with success.
    pub fn ok_current(&mut self) {
        let (g, a) = self.current();
        self.ok(g, a);
    }

    /// Settles the most recently invoked attempt with a failure.
    pub fn err_current(&mut self) {
        let (g, a) = self.current();
        self.err(g, a);
    }

    pub fn abort(&mut self) {
        self.m.abort(AbortReason::Manual);
    }

    pub fn signal(&mut self) {
        self.m.abort(AbortReason::Signal);
    }

    pub fn provide(&mut self, gen: u32, value: Provided) {
        let mut b = self.budgets.borrow_mut();
        self.m.provide(gen, value, self.now, &mut *b);
    }

    pub fn answer_gate(&mut self, gen: u32, attempt: u32, answer: Provided) {
        self.m.answer_gate(gen, attempt, answer, self.now);
    }

    pub fn threw(&mut self, gen: u32) {
        self.m.callback_threw(gen);
    }

    pub fn reset(&mut self) {
        self.m.reset();
    }

    pub fn set_policy(&mut self, p: Policy) {
        self.m.set_policy(p);
    }

    /// Reports `timer` as fired without the wheel (a stray or late report).
    pub fn fire(&mut self, timer: Timer) {
        let mut b = self.budgets.borrow_mut();
        self.m.timer_fired(timer, self.now, &mut *b);
    }

    /// The earliest live timer due at or before `until`.
    pub fn next_due(&self, until: f64) -> Option<Live> {
        self.wheel
            .iter()
            .copied()
            .filter(|l| l.due <= until)
            .min_by(|a, b| {
                a.due
                    .total_cmp(&b.due)
                    .then((a.timer as u8).cmp(&(b.timer as u8)))
            })
    }

    /// Moves the clock forward by `ms`, firing due timers in order and
    /// draining after each one, as a JavaScript event loop would. Returns
    /// every effect popped.
    pub fn advance(&mut self, ms: f64) -> Vec<Effect> {
        let until = self.now + ms;
        let mut out = self.drain();
        while let Some(l) = self.next_due(until) {
            self.wheel.retain(|x| x.timer != l.timer);
            self.now = self.now.max(l.due);
            self.fired.push((l.timer, l.gen, self.now));
            self.fire(l.timer);
            out.extend(self.drain());
        }
        self.now = until;
        out
    }

    /// Fires the earliest due timer (if any by `ms` from now) without
    /// draining anything first or after. Returns the timer that fired.
    pub fn fire_next_raw(&mut self, ms: f64) -> Option<Live> {
        let until = self.now + ms;
        let l = self.next_due(until)?;
        self.wheel.retain(|x| x.timer != l.timer);
        self.now = self.now.max(l.due);
        self.fired.push((l.timer, l.gen, self.now));
        self.fire(l.timer);
        Some(l)
    }

    /// Nothing queued, no flow, no live timer, no listener.
    pub fn assert_quiet(&self) {
        assert!(!self.m.has_effects(), "effects still queued");
        assert!(!self.m.is_active(), "a flow is still active");
        assert!(self.wheel.is_empty(), "timers left armed: {:?}", self.wheel);
        assert!(
            self.listening.is_empty(),
            "signal listeners left: {:?}",
            self.listening
        );
    }

    /// Runs attempts that all fail until the flow ends, returning the
    /// delays slept. Panics after `limit` attempts.
    pub fn fail_until_end(&mut self, limit: usize) -> Vec<f64> {
        let gen = self.current().0;
        let mut delays = Vec::new();
        for _ in 0..limit {
            if self.finished.contains_key(&gen) {
                return delays;
            }
            self.err_current();
            let out = self.drain();
            if let Some(&d) = waits(&out).first() {
                delays.push(d);
                self.advance(d);
            } else if out.iter().any(|e| matches!(e, Effect::Invoke { .. })) {
                // A zero delay: the next attempt started without a timer.
                delays.push(0.0);
            }
        }
        assert!(self.finished.contains_key(&gen), "flow did not end");
        delays
    }
}

/// The proptest configuration of a property suite: `cases`, unless
/// PROPTEST_CASES asks for a longer (or shorter) run; no failure files; a
/// failure shrinks for at most 30 s, then reports what it has.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        max_shrink_time: 30_000,
        ..proptest::test_runner::Config::default()
    }
}
