//! Property tests of the machine (issue 6): arbitrary sequences of inputs,
//! with effects popped between them in random amounts, must keep the
//! machine's invariants.
//!
//! Case counts (fixed here, so `cargo test` stays fast; PROPTEST_CASES=N
//! overrides them for a deep run, PROPTEST_RNG_SEED replays a run):
//! - `chaos_keeps_the_invariants`: 512 cases of up to 80 inputs each;
//! - `old_timers_never_act_on_a_new_flow`: 256 cases of up to 80 inputs,
//!   timers firing while effects are still queued;
//! - `the_plain_paths_equal_the_general_steps`: 512 cases of up to 60
//!   inputs, half of them with the policies the plain paths serve;
//! - `delays_stay_within_their_bounds`: 256 cases of up to 60 inputs;
//! - `budget_shared_by_two_machines_stays_in_range`: 256 cases of up to
//!   120 inputs;
//! - `hedged_flows_follow_the_rules`: 512 cases of up to 60 inputs.
//!
//! A quarter of the random policies hedge (SPEC §2c); the invariants are
//! checked for them as for every flow, and the fake host also follows
//! which attempts the machine owns: none is left running when its flow
//! finishes, and an active flow always has something to move it (an
//! attempt, a timer or a question).
//!
//! CHAOS_STATS=1 (with `-- --nocapture`) prints one `STAT` line per popped
//! effect of the chaos runs, to see what the generated inputs reach.
//!
//! The fake host (`common::Host`) checks on every popped effect: at most
//! one `Finish` per generation, no effect of a generation after its
//! `Finish`, no `StartTimer` of a kind that is still live, every timer
//! delay finite and within [0, 2^31-1].

mod common;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use common::*;
use proptest::prelude::*;
use proptest::sample::Index;

const CHAOS_CASES: u32 = 512;
const DELAY_CASES: u32 = 256;
const BUDGET_CASES: u32 = 256;
const RAW_TIMER_CASES: u32 = 256;
const HEDGE_CASES: u32 = 512;

// ----- random valid policies -----

/// The knobs of a random policy, kept small so shrunk cases read well.
#[derive(Clone, Debug)]
struct Spec {
    max_attempts: u8,
    backoff: u8,
    base: (u8, u32),
    max_wait: (u8, u32),
    jitter: (u8, u32),
    exec: (u8, u32),
    total: (u8, u32),
    throw: u8,
    enabled: u8,
    callbacks: u16,
    should_retry: bool,
    retry_after: bool,
    intervals: Option<Vec<u32>>,
    multiplier: u8,
    signal: bool,
    budget: bool,
    seed: Option<i32>,
    retry_on_timeout: bool,
    /// `hedge`: mostly unset; a small static delay, 0, Infinity or a
    /// function.
    hedge: (u8, u32),
}

fn arb_spec() -> impl Strategy<Value = Spec> {
    (
        (
            0u8..12,
            0u8..10,
            (0u8..8, 0u32..3000),
            (0u8..8, 0u32..5000),
            (0u8..4, 0u32..=100),
            (0u8..6, 1u32..3000),
        ),
        (
            (0u8..8, 100u32..20_000),
            0u8..4,
            0u8..10,
            any::<u16>(),
            proptest::bool::weighted(0.2),
            proptest::bool::weighted(0.2),
        ),
        (
            proptest::option::weighted(0.2, proptest::collection::vec(0u32..3000, 0..4)),
            1u8..8,
            any::<bool>(),
            any::<bool>(),
            proptest::option::of(-1000i32..1000),
            any::<bool>(),
            (0u8..12, 0u32..300),
        ),
    )
        .prop_map(|(a, b, c)| Spec {
            max_attempts: a.0,
            backoff: a.1,
            base: a.2,
            max_wait: a.3,
            jitter: a.4,
            exec: a.5,
            total: b.0,
            throw: b.1,
            enabled: b.2,
            callbacks: b.3,
            should_retry: b.4,
            retry_after: b.5,
            intervals: c.0,
            multiplier: c.1,
            signal: c.2,
            budget: c.3,
            seed: c.4,
            retry_on_timeout: c.5,
            hedge: c.6,
        })
}

impl Spec {
    fn build(&self) -> Policy {
        let n = Raw::Number;
        let mut p = Policy::default();
        let mut set = |opt: Opt, raw: Raw<'_>| {
            p.set(opt, raw)
                .unwrap_or_else(|e| panic!("{opt:?} {raw:?}: {e:?}"))
        };
        set(
            Opt::MaxAttempts,
            match self.max_attempts {
                v @ 0..=4 => n(f64::from(v) + 1.0),
                5 => Raw::Function,
                6 => n(f64::INFINITY),
                _ => Raw::Undefined,
            },
        );
        set(
            Opt::Backoff,
            match self.backoff {
                4 => Raw::Function,
                1 | 7 => Raw::Str("linear"),
                2 | 8 => Raw::Str("fixed"),
                3 | 9 => Raw::Str("decorrelated"),
                _ => Raw::Str("exponential"),
            },
        );
        set(
            Opt::BaseWait,
            match self.base.0 {
                0 => n(0.0),
                1 => Raw::Function,
                _ => n(f64::from(self.base.1)),
            },
        );
        set(
            Opt::MaxWait,
            match self.max_wait.0 {
                1 => Raw::Function,
                2 | 6 | 7 => n(f64::from(self.max_wait.1)),
                3 => n(0.0),
                _ => Raw::Undefined,
            },
        );
        set(
            Opt::Jitter,
            match self.jitter.0 {
                0 => Raw::Undefined,
                1 => Raw::Str("full"),
                _ => n(f64::from(self.jitter.1) / 100.0),
            },
        );
        set(
            Opt::MaxExecutionTime,
            match self.exec.0 {
                0..=3 => Raw::Undefined,
                4 => n(f64::from(self.exec.1)),
                _ => n(0.0),
            },
        );
        set(
            Opt::MaxTotalExecutionTime,
            match self.total.0 {
                0..=4 => Raw::Undefined,
                5 | 6 => n(f64::from(self.total.1)),
                _ => n(0.0),
            },
        );
        set(
            Opt::ThrowOnError,
            match self.throw {
                0 => Raw::Undefined,
                1 => Raw::Str("last"),
                2 => Raw::Bool(true),
                _ => Raw::Bool(false),
            },
        );
        set(
            Opt::Enabled,
            match self.enabled {
                0 => Raw::Bool(false),
                1 => Raw::Function,
                _ => Raw::Bool(true),
            },
        );
        for (i, opt) in callback_opts().iter().enumerate() {
            if self.callbacks & (1 << i) != 0 {
                set(*opt, Raw::Function);
            }
        }
        if self.should_retry {
            set(Opt::ShouldRetry, Raw::Function);
        }
        if self.retry_after {
            set(Opt::RetryAfter, Raw::Function);
        }
        set(Opt::Multiplier, n(f64::from(self.multiplier) / 2.0));
        if self.signal {
            set(Opt::Signal, Raw::Signal);
        }
        if self.budget {
            set(Opt::Budget, Raw::Budget(0));
        }
        if let Some(s) = self.seed {
            set(Opt::Seed, n(f64::from(s)));
        }
        set(
            Opt::RetryOnExecutionTimeout,
            Raw::Bool(self.retry_on_timeout),
        );
        set(
            Opt::Hedge,
            match self.hedge.0 {
                6 | 7 | 11 => n(f64::from(self.hedge.1)),
                8 => n(0.0),
                9 => Raw::Function,
                10 => n(f64::INFINITY),
                _ => Raw::Undefined,
            },
        );
        if p.hedge.is_some() && p.max_attempts == Num::Static(f64::INFINITY) {
            // SPEC §2c rule 1: finite with hedge.
            p.set(Opt::MaxAttempts, n(4.0)).unwrap();
        }
        let infinite = p.max_attempts == Num::Static(f64::INFINITY);
        if let Some(list) = self.intervals.as_ref().filter(|_| !infinite) {
            p.set(Opt::Intervals, Raw::Array(list.len() as u32))
                .unwrap();
            for (i, &v) in list.iter().enumerate() {
                p.push_interval(i as u32, n(f64::from(v))).unwrap();
            }
        }
        if infinite && !p.max_total_execution_time.is_finite() {
            p.set(Opt::MaxTotalExecutionTime, n(5000.0)).unwrap();
        }
        p.finish().expect("generated policies are valid");
        p
    }

    fn forced_enabled(mut self) -> Spec {
        self.enabled = 9;
        self
    }

    /// One attempt at a time: no `hedge`.
    fn unhedged(mut self) -> Spec {
        self.hedge.0 = 0;
        self
    }

    /// The policies the machine's plain paths serve: enabled, no
    /// callbacks, no signal, no budget, no deadline.
    fn plain(mut self) -> Spec {
        self.enabled = 9;
        self.callbacks = 0;
        self.signal = false;
        self.budget = false;
        self.exec.0 = 0;
        self.total.0 = 0;
        self.hedge.0 = 0;
        if self.max_attempts == 6 {
            self.max_attempts = 2;
        }
        self
    }
}

/// The most attempts a policy allows (answers of a dynamic `maxAttempts`
/// are added separately).
fn attempt_limit(p: &Policy) -> f64 {
    let m = match p.max_attempts {
        Num::Static(v) => v,
        Num::Dynamic => 1.0,
    };
    match &p.intervals {
        Some(list) if p.max_attempts_set => m.min(list.len() as f64 + 1.0),
        Some(list) => list.len() as f64 + 1.0,
        None => m,
    }
}

fn arb_provided() -> impl Strategy<Value = Provided> {
    prop_oneof![
        1 => Just(Provided::Nothing),
        2 => any::<bool>().prop_map(Provided::Bool),
        4 => (0u32..6).prop_map(|v| Provided::Number(f64::from(v))),
        3 => (0u32..5000).prop_map(|v| Provided::Number(f64::from(v))),
        1 => prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(-1.0),
            Just(1.5),
            Just(1e300)
        ]
        .prop_map(Provided::Number),
        1 => Just(Provided::Other),
        1 => Just(Provided::Threw),
    ]
}

// ----- the chaos property -----

#[derive(Clone, Debug)]
enum Op {
    Execute {
        outside_aborted: bool,
    },
    /// Settle an invoked attempt: 0 ok, 1 error, 2 AbortError.
    Settle {
        pick: Index,
        how: u8,
    },
    /// Settle an attempt that is surely not running (old gen, finished
    /// gen, attempt never invoked, gen never created).
    SettleStale {
        pick: Index,
        attempt_off: u32,
        how: u8,
    },
    Advance {
        ms: u32,
    },
    /// Report a timer the host is not running.
    StrayTimer {
        which: u8,
    },
    Abort {
        signal: bool,
    },
    SetPolicy(Spec),
    /// Answer the newest `Eval` (or an old gen when `right` is false).
    Provide {
        right: bool,
        value: Provided,
    },
    /// A callback of the newest gen (or of an old one) threw.
    Threw {
        newest: bool,
    },
    Reset,
    Pop {
        n: u8,
    },
    Drain,
    /// Pop up to and including the next `skip + 1` callbacks, then act from
    /// inside the last one (a re-entrant callback): 0 abort, 1 execute,
    /// 2 execute with an aborted signal, 3 the callback throws, 4 reset,
    /// 5 the outside signal aborts.
    Reenter {
        skip: u8,
        action: u8,
    },
    /// A well-behaved host moves the newest flow on: drain (answering every
    /// question with a valid value), settle the newest attempt (ok or
    /// error), drain, let the next timer fire, drain.
    Progress {
        ok: bool,
    },
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0u8..6).prop_map(|x| Op::Execute { outside_aborted: x == 0 }),
        10 => (any::<Index>(), 0u8..8).prop_map(|(pick, h)| Op::Settle {
            pick,
            how: match h {
                0..=2 => 0,
                3..=6 => 1,
                _ => 2,
            }
        }),
        2 => (any::<Index>(), 0u32..4, 0u8..3).prop_map(|(pick, attempt_off, how)| {
            Op::SettleStale { pick, attempt_off, how }
        }),
        5 => prop_oneof![0u32..50, 0u32..3000, 0u32..30_000].prop_map(|ms| Op::Advance { ms }),
        1 => (0u8..3).prop_map(|which| Op::StrayTimer { which }),
        2 => (0u8..4).prop_map(|x| Op::Abort { signal: x == 0 }),
        1 => arb_spec().prop_map(Op::SetPolicy),
        4 => (0u8..5, arb_provided()).prop_map(|(r, value)| Op::Provide { right: r != 0, value }),
        1 => any::<bool>().prop_map(|newest| Op::Threw { newest }),
        1 => Just(Op::Reset),
        4 => (1u8..6).prop_map(|n| Op::Pop { n }),
        3 => Just(Op::Drain),
        4 => (0u8..3, 0u8..6).prop_map(|(skip, action)| Op::Reenter { skip, action }),
        6 => (0u8..4).prop_map(|x| Op::Progress { ok: x == 0 }),
    ]
}

/// A snapshot of everything the machine holds (it derives `Debug`), to
/// prove an input changed nothing.
fn snapshot(h: &Host) -> String {
    format!("{:?} {:?}", h.m, h.budgets.borrow())
}

/// Applies `f` and asserts it changed nothing at all.
fn assert_noop(h: &mut Host, what: &str, f: impl FnOnce(&mut Host)) {
    let before = snapshot(h);
    f(h);
    assert_eq!(snapshot(h), before, "{what} was not a no-op");
}

/// What the driver knows beyond the fake host.
#[derive(Default)]
struct Track {
    /// Log entries already looked at.
    seen: usize,
    /// Per gen: the most attempts any policy in force (or any answer)
    /// allowed while it was open.
    limit: BTreeMap<u32, f64>,
    /// Per gen: the last attempt invoked.
    last_attempt: BTreeMap<u32, u32>,
    /// Invoked attempts not settled by the driver yet.
    in_flight: Vec<(u32, u32)>,
    /// The newest Eval popped: (gen, what).
    last_eval: Option<(u32, Eval)>,
    /// Gens asked whether they are enabled.
    asked_enabled: BTreeSet<u32>,
    /// Attempts the machine still owns: invoked, and neither taken back
    /// by a settlement it accepted nor let go with an `AbortAttempt`,
    /// `CancelAttempt` or `TimeOut`. None may be left when its flow
    /// finishes: no attempt outlives its flow (SPEC §1 rule 12, §2c rule
    /// 11).
    owned: BTreeSet<(u32, u32)>,
    /// Questions popped and not answered yet, by gen.
    pending_evals: BTreeMap<u32, Eval>,
}

impl Track {
    /// Looks at newly popped effects.
    fn scan(&mut self, h: &Host) {
        for e in &h.log[self.seen..] {
            match *e {
                Effect::Invoke { gen, attempt } => {
                    let prev = self.last_attempt.insert(gen, attempt).unwrap_or(0);
                    assert_eq!(attempt, prev + 1, "attempts of gen {gen} out of order");
                    let limit = self.limit.get(&gen).copied().unwrap_or(0.0);
                    assert!(
                        f64::from(attempt) <= limit,
                        "gen {gen} invoked attempt {attempt}, limit {limit}"
                    );
                    self.in_flight.push((gen, attempt));
                    self.owned.insert((gen, attempt));
                }
                Effect::AbortAttempt { gen, attempt, .. }
                | Effect::CancelAttempt { gen, attempt }
                | Effect::TimeOut { gen, attempt } => {
                    self.owned.remove(&(gen, attempt));
                }
                Effect::Hedge {
                    attempt, running, ..
                } => {
                    assert!(
                        running >= 1 && running < attempt,
                        "onHedge of attempt {attempt} with {running} running"
                    );
                }
                Effect::Eval { gen, what, .. } => {
                    self.last_eval = Some((gen, what));
                    self.pending_evals.insert(gen, what);
                    if what == Eval::Enabled {
                        self.asked_enabled.insert(gen);
                    }
                }
                Effect::Finish { gen, .. } => {
                    self.in_flight.retain(|&(g, _)| g != gen);
                    let left: Vec<_> = self.owned.iter().filter(|(g, _)| *g == gen).collect();
                    assert!(
                        left.is_empty(),
                        "gen {gen} finished, attempts {left:?} live; log {:?}",
                        h.log
                    );
                    self.pending_evals.remove(&gen);
                }
                _ => {}
            }
        }
        self.seen = h.log.len();
    }

    /// Settles attempt `a` of gen `g` (0 ok, 1 error, else AbortError); an
    /// outcome the machine takes gives the attempt back.
    fn settle(&mut self, h: &mut Host, g: u32, a: u32, how: u8) {
        self.scan(h);
        if h.m.is_running(g, a) {
            self.owned.remove(&(g, a));
        }
        match how {
            0 => h.ok(g, a),
            1 => h.err(g, a),
            _ => h.abort_error(g, a),
        }
    }

    fn open_gens(&self, h: &Host) -> Vec<u32> {
        self.limit
            .keys()
            .copied()
            .filter(|g| !h.finished.contains_key(g))
            .collect()
    }
}

/// Pops everything, answering each question with a valid value at once.
fn drain_answering(h: &mut Host, t: &mut Track) {
    let answer = |t: &mut Track, gen: u32, what: Eval| {
        if let Some(l) = t.limit.get_mut(&gen) {
            *l = l.max(4.0);
        }
        match what {
            Eval::Enabled | Eval::ShouldRetry => Provided::Bool(true),
            Eval::MaxAttempts => Provided::Number(4.0),
            Eval::BaseWait => Provided::Number(50.0),
            Eval::MaxWait => Provided::Number(400.0),
            Eval::RetryAfter => Provided::Nothing,
            Eval::Backoff => Provided::Number(30.0),
            Eval::Hedge => Provided::Number(40.0),
        }
    };
    // Questions popped earlier and left unanswered are answered first.
    t.scan(h);
    for (g, what) in std::mem::take(&mut t.pending_evals) {
        let v = answer(t, g, what);
        h.provide(g, v);
    }
    while let Some(e) = h.pop() {
        if let Effect::Eval { gen, what, .. } = e {
            let v = answer(t, gen, what);
            h.provide(gen, v);
        }
    }
    t.scan(h);
    t.pending_evals.clear();
}

/// Checks that hold whenever nothing is queued.
fn check_drained(h: &Host, t: &Track, listeners: bool) {
    if h.m.has_effects() {
        return;
    }
    let asked = t.pending_evals.keys().any(|g| !h.finished.contains_key(g));
    if h.m.is_active() && !asked {
        // Something will move an active flow: an attempt it still owns, a
        // timer, or a question it waits an answer for.
        let owns = t.owned.iter().any(|(g, _)| !h.finished.contains_key(g));
        assert!(
            owns || !h.wheel.is_empty(),
            "an active flow is stuck: no attempt, no timer, no question"
        );
    }
    for l in &h.wheel {
        assert!(
            !h.finished.contains_key(&l.gen),
            "timer {l:?} left running after gen {} finished",
            l.gen
        );
    }
    for g in &h.listening {
        assert!(
            !h.finished.contains_key(g),
            "signal listener of finished gen {g}"
        );
    }
    if !h.m.is_active() {
        assert!(h.wheel.is_empty(), "no flow, yet timers run: {:?}", h.wheel);
        assert!(h.listening.is_empty());
        // SPEC §1 State: `isExecuting` means a flow is active.
        assert!(!h.m.state().is_executing, "isExecuting with no active flow");
        assert!(matches!(h.m.status(), Status::Idle | Status::Disabled));
    }
    if listeners {
        assert_eq!(h.m.state().version, h.state_changes, "unannounced change");
    }
}

fn check_budget(h: &Host) {
    for b in h.budgets.borrow().iter() {
        let t = b.tokens();
        assert!(
            (0.0..=b.max_tokens()).contains(&t),
            "budget tokens {t} outside [0, {}]",
            b.max_tokens()
        );
    }
}

/// A host for `spec` with one budget (id 0) and, with `listeners`, a
/// subscriber.
fn host_for(spec: &Spec, listeners: bool) -> Host {
    let budgets = Rc::new(RefCell::new(vec![Budget::new(6.0, 0.5).unwrap()]));
    let mut h = Host::with_budgets(spec.build(), budgets);
    h.m.set_listeners(listeners);
    h
}

/// Runs `ops` against a machine with policy `spec`. With `raw_timers`, due
/// timers fire while effects are still queued (a host that does not drain
/// before its event loop runs); otherwise the host drains first, as the
/// JavaScript pump does.
fn run_chaos(spec: &Spec, listeners: bool, ops: &[Op], raw_timers: bool) -> Host {
    let mut h = host_for(spec, listeners);
    let mut t = Track::default();
    for op in ops {
        match op {
            Op::Execute { outside_aborted } => {
                let gen = h.m.execute(h.now, *outside_aborted);
                t.limit.insert(gen, attempt_limit(h.m.policy()));
            }
            Op::Settle { pick, how } => {
                if !t.in_flight.is_empty() {
                    let i = pick.index(t.in_flight.len());
                    let (g, a) = t.in_flight.remove(i);
                    t.settle(&mut h, g, a, *how);
                }
            }
            Op::SettleStale {
                pick,
                attempt_off,
                how,
            } => {
                // Surely not running: a finished gen, an attempt older than
                // the newest one invoked, attempt 0 or u32::MAX (never
                // invoked), or a gen that does not exist yet. (An attempt
                // whose Invoke is still queued is not stale: a host cannot
                // settle it, so it is not tried.)
                let finished: Vec<u32> = h.finished.keys().copied().collect();
                let newest = t.last_attempt.iter().last().map(|(&g, &a)| (g, a));
                let (g, a) = match (attempt_off, newest) {
                    (0, _) if !finished.is_empty() => (finished[pick.index(finished.len())], 1),
                    (1, Some((g, a))) if a > 1 => (g, 1 + pick.index(a as usize - 1) as u32),
                    (2, Some((g, _))) => (g, 0),
                    (3, Some((g, _))) => (g, u32::MAX),
                    _ => (h.m.last_gen() + 1, 1),
                };
                let how = *how;
                if h.m.is_running(g, a) {
                    // A hedged flow's earlier attempt may still run.
                    continue;
                }
                assert_noop(&mut h, "a stale settlement", |h| match how {
                    0 => h.ok(g, a),
                    1 => h.err(g, a),
                    _ => h.abort_error(g, a),
                });
            }
            Op::Advance { ms } => {
                let until = h.now + f64::from(*ms);
                if raw_timers {
                    while let Some(next) = h.next_due(until) {
                        if next.gen != h.m.last_gen() {
                            // A timer of a flow that is no longer the newest.
                            let mut probe = h.m.clone();
                            let mut b = h.budgets.borrow().clone();
                            let before = format!("{probe:?}");
                            probe.timer_fired(next.timer, next.due.max(h.now), &mut b);
                            assert_eq!(
                                format!("{probe:?}"),
                                before,
                                "timer {next:?} of an old flow acted on gen {}",
                                h.m.last_gen()
                            );
                        }
                        h.fire_next_raw(until - h.now);
                        t.scan(&h);
                    }
                    h.now = until;
                } else {
                    h.advance(f64::from(*ms));
                }
            }
            Op::StrayTimer { which } => {
                let timer = TIMERS[usize::from(*which) % 3];
                if !h.wheel.iter().any(|l| l.timer == timer) {
                    assert_noop(&mut h, "a stray timer", |h| h.fire(timer));
                }
            }
            Op::Abort { signal } => {
                let reason = if *signal {
                    AbortReason::Signal
                } else {
                    AbortReason::Manual
                };
                if !h.m.is_active() {
                    assert_noop(&mut h, "abort without a flow", |h| h.m.abort(reason));
                } else {
                    h.m.abort(reason);
                    assert!(!h.m.is_active());
                }
                assert_noop(&mut h, "a second abort", |h| h.m.abort(reason));
            }
            Op::SetPolicy(spec) => {
                // With raw timers, every execute must start a flow, so that
                // the newest gen is the running one.
                let p = if raw_timers {
                    spec.clone().forced_enabled().build()
                } else {
                    spec.build()
                };
                let l = attempt_limit(&p);
                for g in t.open_gens(&h) {
                    let e = t.limit.entry(g).or_insert(0.0);
                    *e = e.max(l);
                }
                h.set_policy(p);
            }
            Op::Provide { right, value } => {
                if *right {
                    let g = t.last_eval.map_or(h.m.last_gen(), |(g, _)| g);
                    if let Provided::Number(v) = value {
                        if let Some(e) = t.limit.get_mut(&g) {
                            *e = e.max(*v);
                        }
                    }
                    h.provide(g, *value);
                    t.pending_evals.remove(&g);
                } else if let Some(&g) = h.finished.keys().next() {
                    let value = *value;
                    assert_noop(&mut h, "an answer for a finished gen", |h| {
                        h.provide(g, value)
                    });
                }
            }
            Op::Threw { newest } => {
                if *newest {
                    h.threw(h.m.last_gen());
                } else if let Some(&g) = h.finished.keys().next() {
                    assert_noop(&mut h, "a throw of a finished gen", |h| h.threw(g));
                }
            }
            Op::Reset => h.reset(),
            Op::Pop { n } => {
                h.pop_n(usize::from(*n));
            }
            Op::Drain => {
                h.drain();
            }
            Op::Progress { ok } => {
                drain_answering(&mut h, &mut t);
                if let Some(&(g, a)) = t.in_flight.last() {
                    t.in_flight.pop();
                    t.settle(&mut h, g, a, if *ok { 0 } else { 1 });
                    drain_answering(&mut h, &mut t);
                }
                let next = h.wheel.iter().map(|l| l.due).min_by(f64::total_cmp);
                if let Some(due) = next {
                    let ms = (due - h.now).max(0.0);
                    if raw_timers {
                        h.fire_next_raw(ms);
                    } else {
                        h.advance(ms);
                    }
                    drain_answering(&mut h, &mut t);
                }
            }
            Op::Reenter { skip, action } => {
                let mut calls = 0;
                let mut last_call_gen = None;
                while calls <= *skip {
                    match h.pop() {
                        Some(Effect::Call { gen, .. }) => {
                            calls += 1;
                            last_call_gen = Some(gen);
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
                t.scan(&h);
                if let Some(g) = last_call_gen {
                    match action {
                        0 => h.abort(),
                        1 | 2 => {
                            let gen = h.m.execute(h.now, *action == 2);
                            t.limit.insert(gen, attempt_limit(h.m.policy()));
                        }
                        3 => h.threw(g),
                        4 => h.reset(),
                        _ => h.signal(),
                    }
                }
            }
        }
        t.scan(&h);
        check_budget(&h);
        check_drained(&h, &t, listeners);
    }

    // Every started gen ends after abort + draining. An `enabled` question
    // still pending is answered first (the host always answers at once).
    for _ in 0..3 {
        h.drain();
        t.scan(&h);
        let unanswered: Vec<u32> = t
            .asked_enabled
            .iter()
            .copied()
            .filter(|g| !h.finished.contains_key(g))
            .collect();
        for g in unanswered {
            h.provide(g, Provided::Bool(false));
        }
        h.abort();
        h.drain();
        t.scan(&h);
        check_drained(&h, &t, listeners);
    }
    for g in 1..=h.m.last_gen() {
        assert!(h.finished.contains_key(&g), "gen {g} never finished");
    }
    h.assert_quiet();
    check_budget(&h);
    if std::env::var("CHAOS_STATS").is_ok() {
        for e in &h.log {
            let k = match e {
                Effect::Finish { outcome, .. } => format!("finish {outcome:?}"),
                Effect::Invoke { attempt, .. } => format!("invoke {}", attempt.min(&5)),
                Effect::Call { cb, arg, .. } => format!("call {cb:?} {arg}"),
                Effect::Eval { what, .. } => format!("eval {what:?}"),
                Effect::StartTimer { timer, .. } => format!("start {timer:?}"),
                Effect::AbortAttempt { reason, .. } => format!("abortatt {reason:?}"),
                Effect::TimeOut { .. } => "timeout".into(),
                other => format!("{:?}", std::mem::discriminant(other)),
            };
            eprintln!("STAT {k}");
        }
    }
    h
}

proptest! {
    #![proptest_config(proptest_config(CHAOS_CASES))]

    /// Arbitrary inputs, effects popped in random amounts in between.
    #[test]
    fn chaos_keeps_the_invariants(
        spec in arb_spec(),
        listeners in any::<bool>(),
        ops in proptest::collection::vec(arb_op(), 1..80),
    ) {
        run_chaos(&spec, listeners, &ops, false);
    }
}

/// Drives a machine with `ops`, each followed by a drain that answers every
/// question: 0 `execute()`, 1 the newest attempt succeeds, 2 it fails, 3
/// `ms` pass (firing due timers).
fn run_drained(spec: &Spec, listeners: bool, ops: &[(u8, u16)]) -> Host {
    let mut h = host_for(spec, listeners);
    let mut t = Track::default();
    for &(kind, ms) in ops {
        match kind {
            0 => {
                let gen = h.execute();
                t.limit.insert(gen, attempt_limit(h.m.policy()));
            }
            1 | 2 if !h.invoked.is_empty() => {
                let (g, a) = h.current();
                t.settle(&mut h, g, a, kind - 1);
            }
            _ => {
                h.advance(f64::from(ms));
            }
        }
        drain_answering(&mut h, &mut t);
    }
    h
}

proptest! {
    #![proptest_config(proptest_config(CHAOS_CASES))]

    /// The machine's plain paths (`starts_plainly`, `ends_plainly`) come to
    /// exactly what its general steps do. A subscriber turns the plain
    /// paths off and adds only `StateChanged` effects, so with and without
    /// one every other effect, the state and the generations must agree.
    #[test]
    fn the_plain_paths_equal_the_general_steps(
        spec in prop_oneof![arb_spec(), arb_spec().prop_map(Spec::plain)],
        ops in proptest::collection::vec((0u8..4, 0u16..3000), 1..60),
    ) {
        let plain = run_drained(&spec, false, &ops);
        let general = run_drained(&spec, true, &ops);
        prop_assert_eq!(quiet(&plain.log), quiet(&general.log));
        prop_assert_eq!(plain.m.state(), general.m.state());
        prop_assert_eq!(plain.m.last_gen(), general.m.last_gen());
    }
}

proptest! {
    #![proptest_config(proptest_config(RAW_TIMER_CASES))]

    /// Timers fire while effects are still queued (a host whose event loop
    /// runs before it drained, e.g. fake timers advanced from inside the
    /// function): a timer of a flow that is no longer the newest must not
    /// act on the newest one, and every invariant above still holds.
    /// Regression: before 9b43000 an old flow's Total/Attempt timer that
    /// fired before its queued ClearTimer was popped ended the next flow.
    #[test]
    fn old_timers_never_act_on_a_new_flow(
        spec in arb_spec(),
        ops in proptest::collection::vec(arb_op(), 1..80),
    ) {
        run_chaos(&spec.forced_enabled(), false, &ops, true);
    }
}

// ----- delays against an independent model -----

#[derive(Clone, Debug)]
enum DOp {
    Execute,
    Fail,
    TimeoutFail,
    Succeed,
    Advance(u32),
    Abort,
}

fn arb_dop() -> impl Strategy<Value = DOp> {
    prop_oneof![
        1 => Just(DOp::Execute),
        8 => Just(DOp::Fail),
        1 => Just(DOp::TimeoutFail),
        1 => Just(DOp::Succeed),
        5 => (0u32..20_000).prop_map(DOp::Advance),
        1 => Just(DOp::Abort),
    ]
}

/// Answers of one decision.
#[derive(Clone, Copy, Debug, Default)]
struct Answers {
    base: Option<f64>,
    max_wait: Option<f64>,
    retry_after: Option<Option<f64>>,
    custom: Option<f64>,
}

/// The allowed `[lo, hi]` delay after failed attempt `n`, computed from the
/// contract, not from the machine's code.
fn bounds(p: &Policy, n: u32, a: Answers, prev: Option<f64>) -> (f64, f64) {
    let clamp = |x: f64| x.clamp(0.0, MAX_TIMER_MS);
    if let Some(Some(hint)) = a.retry_after {
        return (clamp(hint), clamp(hint));
    }
    let base = match p.base_wait {
        Num::Static(v) => v,
        Num::Dynamic => a.base.unwrap_or(0.0),
    };
    let max_wait = match p.max_wait {
        Num::Static(v) => v,
        Num::Dynamic => a.max_wait.unwrap_or(f64::INFINITY),
    };
    let nominal = if let Some(list) = &p.intervals {
        list.get(n as usize - 1)
            .or(list.last())
            .copied()
            .unwrap_or(0.0)
    } else {
        match p.backoff {
            Backoff::Exponential => {
                if base == 0.0 {
                    0.0
                } else {
                    base * p.multiplier.powi(n as i32 - 1)
                }
            }
            Backoff::Linear => base * f64::from(n),
            Backoff::Fixed => base,
            Backoff::Custom => a.custom.unwrap_or(0.0),
            Backoff::Decorrelated => {
                let prev = prev.unwrap_or(base);
                let high = (3.0 * prev).max(base);
                return (clamp(base.min(max_wait)), clamp(high.min(max_wait)));
            }
        }
    };
    let c = nominal.min(max_wait);
    match p.jitter {
        None => (clamp(c), clamp(c)),
        Some(Jitter::Proportional(j)) => (
            clamp((c + (-c * j).floor()).max(0.0)),
            clamp(c + (c * j).floor()),
        ),
        Some(Jitter::Full) => (0.0, clamp(c.floor())),
    }
}

/// Drives one machine, answering every question as it comes up and checking
/// every delay.
struct DelayModel {
    p: Policy,
    answers: Vec<Provided>,
    next_answer: usize,
    given: BTreeMap<(u32, u32), Answers>,
    started: BTreeMap<u32, f64>,
    prev_decor: BTreeMap<u32, f64>,
    waited: BTreeSet<u32>,
}

impl DelayModel {
    fn uses_decorrelated(&self, a: Answers) -> bool {
        self.p.backoff == Backoff::Decorrelated
            && self.p.intervals.is_none()
            && !matches!(a.retry_after, Some(Some(_)))
    }

    /// Pops everything (the host drains before its event loop runs).
    fn pump(&mut self, h: &mut Host) -> Result<(), TestCaseError> {
        while let Some(e) = h.pop() {
            match e {
                Effect::Eval { gen, what, attempt } => {
                    let v = self.answers[self.next_answer % self.answers.len()];
                    self.next_answer += 1;
                    let v = match what {
                        Eval::ShouldRetry => Provided::Bool(!matches!(v, Provided::Bool(false))),
                        _ => v,
                    };
                    let slot = self.given.entry((gen, attempt)).or_default();
                    match (what, v) {
                        (Eval::BaseWait, Provided::Number(x)) => slot.base = Some(x),
                        (Eval::MaxWait, Provided::Number(x)) => slot.max_wait = Some(x),
                        (Eval::RetryAfter, Provided::Number(x)) => slot.retry_after = Some(Some(x)),
                        (Eval::RetryAfter, Provided::Nothing) => slot.retry_after = Some(None),
                        (Eval::Backoff, Provided::Number(x)) => slot.custom = Some(x),
                        _ => {}
                    }
                    h.provide(gen, v);
                }
                Effect::StartTimer {
                    gen,
                    timer: Timer::Wait,
                    ms,
                } => {
                    let n = h
                        .invoked
                        .iter()
                        .rev()
                        .find(|x| x.0 == gen)
                        .map_or(0, |x| x.1);
                    let a = self.given.get(&(gen, n)).copied().unwrap_or_default();
                    let (lo, hi) = bounds(&self.p, n, a, self.prev_decor.get(&gen).copied());
                    prop_assert!(
                        ms >= lo && ms <= hi,
                        "gen {} attempt {}: wait {} not in [{}, {}] ({:?})",
                        gen,
                        n,
                        ms,
                        lo,
                        hi,
                        a
                    );
                    let deadline = self.started[&gen] + self.p.max_total_execution_time;
                    prop_assert!(
                        h.now + ms < deadline,
                        "a wait of {} ms at {} crosses the deadline {}",
                        ms,
                        h.now,
                        deadline
                    );
                    if self.uses_decorrelated(a) {
                        self.prev_decor.insert(gen, ms);
                    }
                    self.waited.insert(gen);
                }
                // A retry without a timer: the delay was 0 (the guard also
                // forgets the wait that led to a timed retry).
                Effect::Invoke { gen, attempt } if attempt > 1 && !self.waited.remove(&gen) => {
                    let n = attempt - 1;
                    let a = self.given.get(&(gen, n)).copied().unwrap_or_default();
                    let (lo, hi) = bounds(&self.p, n, a, self.prev_decor.get(&gen).copied());
                    prop_assert!(
                        lo <= 0.0 && hi >= 0.0,
                        "gen {} attempt {}: zero delay not in [{}, {}]",
                        gen,
                        n,
                        lo,
                        hi
                    );
                    if self.uses_decorrelated(a) {
                        self.prev_decor.insert(gen, 0.0);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Moves the clock, firing due timers one by one and pumping after each.
    fn advance(&mut self, h: &mut Host, ms: f64) -> Result<(), TestCaseError> {
        let until = h.now + ms;
        self.pump(h)?;
        while h.fire_next_raw(until - h.now).is_some() {
            self.pump(h)?;
        }
        h.now = until;
        Ok(())
    }
}

proptest! {
    #![proptest_config(proptest_config(DELAY_CASES))]

    /// Every wait (and every zero-delay retry) lies within the bounds of
    /// the contract for its attempt, its policy and the values the option
    /// functions answered; no wait crosses the total deadline.
    #[test]
    fn delays_stay_within_their_bounds(
        spec in arb_spec(),
        answers in proptest::collection::vec(arb_provided(), 1..16),
        ops in proptest::collection::vec(arb_dop(), 1..60),
    ) {
        let p = spec.forced_enabled().unhedged().build();
        let budgets = Rc::new(RefCell::new(vec![Budget::new(50.0, 1.0).unwrap()]));
        let mut h = Host::with_budgets(p.clone(), budgets);
        let mut d = DelayModel {
            p,
            answers,
            next_answer: 0,
            given: BTreeMap::new(),
            started: BTreeMap::new(),
            prev_decor: BTreeMap::new(),
            waited: BTreeSet::new(),
        };
        for op in &ops {
            match op {
                DOp::Execute => {
                    let g = h.execute();
                    d.started.insert(g, h.now);
                }
                DOp::Fail | DOp::Succeed => {
                    if let Some(&(g, a)) = h.invoked.last() {
                        if matches!(op, DOp::Fail) {
                            h.err(g, a);
                        } else {
                            h.ok(g, a);
                        }
                    }
                }
                DOp::TimeoutFail => {
                    let due = h.wheel.iter().find(|l| l.timer == Timer::Attempt).map(|l| l.due);
                    if let Some(due) = due {
                        let ms = (due - h.now).max(0.0);
                        d.advance(&mut h, ms)?;
                    }
                }
                DOp::Advance(ms) => d.advance(&mut h, f64::from(*ms))?,
                DOp::Abort => h.abort(),
            }
            d.pump(&mut h)?;
        }
        h.abort();
        d.pump(&mut h)?;
        h.assert_quiet();
    }
}

// ----- a budget shared by two machines -----

proptest! {
    #![proptest_config(proptest_config(BUDGET_CASES))]

    /// Two retryers sharing one budget, with interleaved flows: the tokens
    /// never leave [0, max]; a retry is only made while more than half the
    /// tokens are left after the failure that led to it.
    #[test]
    fn budget_shared_by_two_machines_stays_in_range(
        max_tokens in 1u32..20,
        ratio in 1u32..20,
        ops in proptest::collection::vec((any::<bool>(), 0u8..6), 1..120),
    ) {
        let max = f64::from(max_tokens);
        let budgets = Rc::new(RefCell::new(vec![
            Budget::new(max, f64::from(ratio) / 10.0).unwrap(),
        ]));
        let p = policy(&[
            (Opt::Budget, Raw::Budget(0)),
            (Opt::MaxAttempts, Raw::Number(4.0)),
            (Opt::BaseWait, Raw::Number(0.0)),
            (Opt::OnGiveUp, Raw::Function),
        ]);
        let mut hosts = [
            Host::with_budgets(p.clone(), budgets.clone()),
            Host::with_budgets(p, budgets.clone()),
        ];
        for (which, what) in ops {
            let h = &mut hosts[usize::from(which)];
            let before = budgets.borrow()[0].tokens();
            let busy = h.m.is_active();
            match what {
                0 => {
                    h.execute();
                }
                1 | 2 if busy => {
                    h.err_current();
                    let out = h.drain();
                    let after = budgets.borrow()[0].tokens();
                    prop_assert_eq!(after, (before - 1.0).max(0.0));
                    if out.iter().any(|e| matches!(e, Effect::Invoke { .. })) {
                        prop_assert!(after > max / 2.0, "retried with {} of {} tokens", after, max);
                    }
                    if out.contains(&give_up(h.current().0, GiveUp::BudgetExhausted)) {
                        prop_assert!(after <= max / 2.0);
                    }
                }
                3 if busy => {
                    h.ok_current();
                    h.drain();
                    let after = budgets.borrow()[0].tokens();
                    prop_assert_eq!(after, (before + f64::from(ratio) / 10.0).min(max));
                }
                4 => h.abort(),
                _ => {}
            }
            h.drain();
            let tokens = budgets.borrow()[0].tokens();
            prop_assert!((0.0..=max).contains(&tokens));
        }
    }
}

// ----- hedged flows against a model of SPEC §2c -----

#[derive(Clone, Debug)]
enum HOp {
    Execute,
    /// Settle a running attempt of the newest flow: ok, or a failure.
    Settle {
        pick: Index,
        ok: bool,
    },
    Advance(u32),
    Abort,
}

fn arb_hop() -> impl Strategy<Value = HOp> {
    prop_oneof![
        1 => Just(HOp::Execute),
        6 => (any::<Index>(), proptest::bool::weighted(0.25))
            .prop_map(|(pick, ok)| HOp::Settle { pick, ok }),
        6 => prop_oneof![0u32..5, 0u32..200, 0u32..2000].prop_map(HOp::Advance),
        1 => Just(HOp::Abort),
    ]
}

/// What the model of `hedged_flows_follow_the_rules` knows of the newest
/// flow.
#[derive(Default)]
struct HModel {
    hedge: f64,
    max: u32,
    gen: u32,
    /// Start time of each attempt.
    starts: BTreeMap<u32, f64>,
    /// Attempts running, as the model sees them.
    live: BTreeSet<u32>,
    /// Times at which an attempt failed or timed out (a start may follow).
    failed_at: Vec<f64>,
    /// The attempt whose success was just reported.
    won: Option<u32>,
}

impl HModel {
    /// Checks the effects popped since `seen`, all at `h.now`.
    fn scan(&mut self, h: &Host, seen: usize) -> Result<(), TestCaseError> {
        let now = h.now;
        for &e in &h.log[seen..] {
            match e {
                Effect::Invoke { gen, attempt } => {
                    prop_assert_eq!(gen, self.gen);
                    prop_assert!(attempt <= self.max, "attempt {} of {}", attempt, self.max);
                    if attempt > 1 {
                        let prev = self.starts[&(attempt - 1)];
                        let spaced = now == prev + self.hedge;
                        let after_failure = self.failed_at.contains(&now);
                        prop_assert!(
                            spaced || after_failure,
                            "attempt {} at {}: attempt {} started at {}, hedge {}, failures at {:?}",
                            attempt,
                            now,
                            attempt - 1,
                            prev,
                            self.hedge,
                            self.failed_at
                        );
                    }
                    self.starts.insert(attempt, now);
                    self.live.insert(attempt);
                }
                Effect::TimeOut { gen, attempt } => {
                    prop_assert_eq!(gen, self.gen);
                    prop_assert!(self.live.remove(&attempt));
                    self.failed_at.push(now);
                }
                Effect::CancelAttempt { gen, attempt }
                | Effect::AbortAttempt { gen, attempt, .. }
                    if gen == self.gen =>
                {
                    prop_assert!(Some(attempt) != self.won, "the winner cancelled");
                    self.live.remove(&attempt);
                }
                Effect::Finish { gen, outcome } if gen == self.gen => {
                    prop_assert!(
                        self.live.is_empty(),
                        "gen {} ended, {:?} running",
                        gen,
                        self.live
                    );
                    if self.won.is_some() {
                        prop_assert_eq!(outcome, Outcome::Result);
                    } else {
                        prop_assert_ne!(outcome, Outcome::Result);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Checks what holds between inputs.
    fn check(&self, h: &Host) -> Result<(), TestCaseError> {
        if self.gen == 0 {
            return Ok(());
        }
        if let Some(a) = self.won {
            prop_assert_eq!(
                h.finished.get(&self.gen),
                Some(&Outcome::Result),
                "attempt {} won",
                a
            );
        }
        if !h.finished.contains_key(&self.gen) {
            let newest = self.starts.keys().last().copied().unwrap_or(0);
            prop_assert!(newest >= 1);
            if newest < self.max {
                // Never late: the next hedge time has not passed.
                prop_assert!(
                    h.now < self.starts[&newest] + self.hedge,
                    "at {} attempt {} (started {}) should have been followed",
                    h.now,
                    newest,
                    self.starts[&newest]
                );
            }
            // Something runs, or something can still start.
            prop_assert!(!self.live.is_empty() || newest < self.max);
            prop_assert!(h.state().is_executing);
            prop_assert_eq!(h.state().current_attempt, newest);
        } else {
            prop_assert!(self.live.is_empty());
            prop_assert!(h.wheel.is_empty(), "timers left: {:?}", h.wheel);
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(proptest_config(HEDGE_CASES))]

    /// Random interleavings of hedge times, successes, failures, attempt
    /// deadlines and aborts, checked against the rules: attempt n+1 starts
    /// at attempt n's hedge time or at once after a failure, never past
    /// `maxAttempts`, never late; the first success wins and every other
    /// running attempt is cancelled; a flow fails only when nothing runs
    /// and nothing can start; one outcome per flow; nothing left behind.
    #[test]
    fn hedged_flows_follow_the_rules(
        hedge in 1u32..300,
        max in 1u32..6,
        exec in proptest::option::weighted(0.3, 50u32..1000),
        ops in proptest::collection::vec(arb_hop(), 1..60),
    ) {
        let mut opts = vec![
            (Opt::Hedge, Raw::Number(f64::from(hedge))),
            (Opt::MaxAttempts, Raw::Number(f64::from(max))),
            (Opt::ThrowOnError, Raw::Bool(true)),
        ];
        if let Some(ms) = exec {
            opts.push((Opt::MaxExecutionTime, Raw::Number(f64::from(ms))));
        }
        let mut h = Host::new(policy(&opts));
        let mut m = HModel {
            hedge: f64::from(hedge),
            max,
            ..HModel::default()
        };
        for op in &ops {
            m.won = None;
            let seen = h.log.len();
            match op {
                HOp::Execute => {
                    m.gen = h.execute();
                    m.starts.clear();
                    m.live.clear();
                    m.failed_at.clear();
                }
                HOp::Settle { pick, ok } => {
                    if m.live.is_empty() {
                        continue;
                    }
                    let v: Vec<u32> = m.live.iter().copied().collect();
                    let a = v[pick.index(v.len())];
                    prop_assert!(h.m.is_running(m.gen, a));
                    m.live.remove(&a);
                    if *ok {
                        m.won = Some(a);
                        h.ok(m.gen, a);
                    } else {
                        m.failed_at.push(h.now);
                        h.err(m.gen, a);
                    }
                }
                HOp::Advance(ms) => {
                    // One timer at a time, each at its own time.
                    let until = h.now + f64::from(*ms);
                    loop {
                        let seen = h.log.len();
                        if h.fire_next_raw(until - h.now).is_none() {
                            break;
                        }
                        h.drain();
                        m.scan(&h, seen)?;
                    }
                    h.now = until;
                }
                HOp::Abort => h.abort(),
            }
            if !matches!(op, HOp::Advance(_)) {
                h.drain();
                m.scan(&h, seen)?;
            }
            m.check(&h)?;
        }
        h.abort();
        h.drain();
        h.assert_quiet();
        for g in 1..=h.m.last_gen() {
            prop_assert!(h.finished.contains_key(&g));
        }
    }
}
