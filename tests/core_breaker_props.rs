//! Property tests of the circuit breaker (SPEC §2e) with the retry
//! machine: several retryers share one `Breaker` (and one budget), with
//! random policies, breaker settings, inputs and timings. The fake host
//! drives them as the engine does: a permit asked at each `Invoke`
//! (`closed_permit` first, then `permit` with the clock; the function is
//! called only with one), a refusal fed back at once with
//! `attempt_refused`, an outcome recorded when an attempt settles or times
//! out, the permit given back when the machine aborts or cancels it.
//!
//! What must hold, checked on every popped effect and after a wind-down:
//! - (a) a half-open circuit never has more than `halfOpenCalls` probes
//!   out at once, nor grants more than that in all (a released probe's
//!   permit goes back); and it refuses only when that many are taken;
//! - (b) every permit is given back (recorded or released) by the time its
//!   flow finishes, whatever ends it; once every flow settled, a half-open
//!   circuit still has every probe not yet passed to give;
//! - (c) no flow waits past its total deadline for a circuit: the wait
//!   after a refused attempt (and every wait of a flow that does not
//!   hedge) ends before the deadline, an `Infinity` hint never waits, and
//!   a hint that would cross the deadline ends the flow with a give-up,
//!   not with a total timeout;
//! - (d) a refused attempt never reaches the function: `Invoke`s =
//!   permitted + refused, a refused attempt is not running, and no
//!   `TimeOut` or `CancelAttempt` ever names one;
//! - and the give-up reason: `'circuit-open'` exactly when the final error
//!   is a refusal (for a flow that does not hedge: its last attempt was
//!   refused), never for a flow without a refusal, always for one whose
//!   every attempt was refused; a flow passing through keeps `'nested'`.
//!
//! Then, without machines, one breaker shared by up to 90 keys against a
//! breaker per key: past `KEPT_CIRCUITS` keys an idle circuit gives its
//! place up, and nothing else may differ (see that section).
//!
//! Case counts are fixed here so `cargo test` stays fast; PROPTEST_CASES=N
//! overrides them for a deep run.

mod common;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use common::*;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;
use retry_wasm::core::breaker::{
    Breaker, CircuitState, Permit, Settings, Transition, Why, MIN_HALF_OPEN_HINT,
};

const SHARED_CASES: u32 = 384;
const PROBE_CASES: u32 = 256;

/// More effects than this from one input means the machines loop.
const RUNAWAY: usize = 200_000;

// ----- random breakers and retryers -----

#[derive(Clone, Debug)]
struct BreakerSpec {
    ratio: u8,
    minimum: u8,
    sampling: u8,
    consecutive: u8,
    break_ms: u8,
    half_open_calls: u8,
    /// `breakDuration` is a function; these are its answers, in turn (0
    /// among them: a circuit that lets a probe through at once).
    dynamic: Option<Vec<u16>>,
}

fn arb_breaker() -> impl Strategy<Value = BreakerSpec> {
    (
        0u8..3,
        1u8..6,
        0u8..3,
        0u8..4,
        0u8..4,
        1u8..4,
        proptest::option::weighted(0.3, proptest::collection::vec(0u16..3000, 1..4)),
    )
        .prop_map(
            |(ratio, minimum, sampling, consecutive, break_ms, half_open_calls, dynamic)| {
                BreakerSpec {
                    ratio,
                    minimum,
                    sampling,
                    consecutive,
                    break_ms,
                    half_open_calls,
                    dynamic,
                }
            },
        )
}

impl BreakerSpec {
    fn settings(&self) -> Settings {
        let s = Settings {
            failure_ratio: [0.2, 0.5, 1.0][usize::from(self.ratio)],
            minimum_throughput: f64::from(self.minimum),
            sampling_duration: [500.0, 5000.0, 30_000.0][usize::from(self.sampling)],
            consecutive_failures: f64::from(self.consecutive),
            break_duration: [0.0, 50.0, 300.0, 2000.0][usize::from(self.break_ms)],
            dynamic_break: self.dynamic.is_some(),
            half_open_calls: f64::from(self.half_open_calls),
        };
        s.check().expect("generated settings are valid");
        s
    }
}

#[derive(Clone, Debug)]
struct RetryerSpec {
    /// 0..=4: 1 to 5; 5: a function; 6: Infinity (with a total deadline).
    max_attempts: u8,
    base_wait: u16,
    total: Option<u16>,
    exec: Option<u16>,
    retry_on_timeout: bool,
    hedge: Option<u16>,
    should_retry: bool,
    retry_after: bool,
    budget: bool,
    callbacks: bool,
    /// Which circuit: `''` or another key.
    key: bool,
}

fn arb_retryer() -> impl Strategy<Value = RetryerSpec> {
    (
        (
            0u8..7,
            0u16..400,
            proptest::option::weighted(0.5, 50u16..5000),
            proptest::option::weighted(0.3, 10u16..600),
            any::<bool>(),
            proptest::option::weighted(0.3, 0u16..200),
        ),
        (
            proptest::bool::weighted(0.2),
            proptest::bool::weighted(0.3),
            proptest::bool::weighted(0.3),
            any::<bool>(),
            proptest::bool::weighted(0.3),
        ),
    )
        .prop_map(|(a, b)| RetryerSpec {
            max_attempts: a.0,
            base_wait: a.1,
            total: a.2,
            exec: a.3,
            retry_on_timeout: a.4,
            hedge: a.5,
            should_retry: b.0,
            retry_after: b.1,
            budget: b.2,
            callbacks: b.3,
            key: b.4,
        })
}

impl RetryerSpec {
    fn build(&self) -> Policy {
        let n = |v: u16| Raw::Number(f64::from(v));
        let mut opts: Vec<(Opt, Raw<'_>)> = vec![
            (Opt::Breaker, Raw::Breaker),
            (Opt::BaseWait, n(self.base_wait)),
            (
                Opt::RetryOnExecutionTimeout,
                Raw::Bool(self.retry_on_timeout),
            ),
        ];
        let mut max_attempts = match self.max_attempts {
            v @ 0..=4 => Raw::Number(f64::from(v) + 1.0),
            5 => Raw::Function,
            _ => Raw::Number(f64::INFINITY),
        };
        let mut total = self.total;
        if let Some(h) = self.hedge {
            opts.push((Opt::Hedge, n(h)));
            // SPEC §2c rule 1: finite with hedge.
            if self.max_attempts == 6 {
                max_attempts = Raw::Number(4.0);
            }
        } else if self.max_attempts == 6 && total.is_none() {
            total = Some(3000);
        }
        opts.push((Opt::MaxAttempts, max_attempts));
        if let Some(t) = total {
            opts.push((Opt::MaxTotalExecutionTime, n(t)));
        }
        if let Some(e) = self.exec {
            opts.push((Opt::MaxExecutionTime, n(e)));
        }
        if self.should_retry {
            opts.push((Opt::ShouldRetry, Raw::Function));
        }
        if self.retry_after {
            opts.push((Opt::RetryAfter, Raw::Function));
        }
        if self.budget {
            opts.push((Opt::Budget, Raw::Budget(0)));
        }
        if self.callbacks {
            policy_all_cbs(&opts)
        } else {
            policy(&opts)
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// `execute()`, outside any attempt or (`nested`) inside one that
    /// forbids inner retries.
    Execute {
        m: Index,
        nested: bool,
    },
    /// An invoked attempt settles: 0 ok, 1 a failure, 2 an AbortError.
    Settle {
        m: Index,
        pick: Index,
        how: u8,
    },
    Advance {
        ms: u32,
    },
    Abort {
        m: Index,
    },
    /// The oldest question of a retryer is answered.
    Answer {
        m: Index,
        value: u16,
    },
    Isolate {
        key: bool,
    },
    Reset {
        key: bool,
    },
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<Index>(), proptest::bool::weighted(0.1))
            .prop_map(|(m, nested)| Op::Execute { m, nested }),
        10 => (any::<Index>(), any::<Index>(), 0u8..10).prop_map(|(m, pick, h)| Op::Settle {
            m,
            pick,
            how: match h {
                0..=3 => 0,
                4..=8 => 1,
                _ => 2,
            }
        }),
        8 => prop_oneof![0u32..60, 0u32..600, 0u32..5000].prop_map(|ms| Op::Advance { ms }),
        1 => any::<Index>().prop_map(|m| Op::Abort { m }),
        4 => (any::<Index>(), any::<u16>()).prop_map(|(m, value)| Op::Answer { m, value }),
        1 => any::<bool>().prop_map(|key| Op::Isolate { key }),
        1 => any::<bool>().prop_map(|key| Op::Reset { key }),
    ]
}

// ----- the fake host -----

fn key_of(other: bool) -> &'static str {
    if other {
        "https://b.example"
    } else {
        ""
    }
}

/// What the host knows of one circuit's current half-open period (any
/// transition ends it; the breaker then no longer counts its probes).
#[derive(Debug, Default)]
struct Circuit {
    /// Probes of this period not yet recorded or released, by id.
    out: BTreeSet<u64>,
    /// Probes of this period that succeeded.
    passed: u32,
    /// The break the circuit last opened for.
    break_ms: f64,
    /// Bumped with every change that makes older permits stale (every
    /// transition but `'break-ended'`, and a reset).
    epoch: u64,
}

/// A permit an attempt holds, with what the host knows of it.
#[derive(Clone, Debug)]
struct Held {
    permit: Permit,
    key: &'static str,
    /// `Some(id)` for a probe.
    probe: Option<u64>,
    epoch: u64,
}

/// One retryer and its host.
struct Retryer {
    h: Host,
    key: &'static str,
    hedges: bool,
    total: f64,
    permits: BTreeMap<(u32, u32), Held>,
    called: BTreeSet<(u32, u32)>,
    refused: BTreeMap<(u32, u32), f64>,
    invokes: u32,
    /// Attempts called and not settled by the host yet.
    in_flight: Vec<(u32, u32)>,
    started: BTreeMap<u32, f64>,
    nested: BTreeSet<u32>,
    last_invoked: BTreeMap<u32, u32>,
    /// Questions popped and not answered yet.
    questions: Vec<(u32, Eval)>,
    give_ups: Vec<(u32, GiveUp)>,
}

/// Everything the properties count.
#[derive(Debug, Default)]
struct Tally {
    refusals: u32,
    probes: u32,
    transitions: u32,
    circuit_open: u32,
}

struct World {
    now: f64,
    b: Breaker,
    settings: Settings,
    answers: Vec<f64>,
    next_answer: usize,
    circuits: BTreeMap<&'static str, Circuit>,
    rs: Vec<Retryer>,
    next_probe: u64,
    tally: Tally,
    /// The retryer whose `Total` timer is firing, if one is.
    total_firing: Option<usize>,
}

impl World {
    fn new(bs: &BreakerSpec, specs: &[RetryerSpec]) -> World {
        let settings = bs.settings();
        let budgets = Rc::new(RefCell::new(vec![Budget::new(5.0, 0.5).unwrap()]));
        let rs = specs
            .iter()
            .map(|s| {
                let mut h = Host::with_budgets(s.build(), Rc::clone(&budgets));
                // Every wait is told (as to a tracing subscriber), so each
                // one can be checked against the deadline.
                h.m.set_traced(true);
                Retryer {
                    key: key_of(s.key),
                    hedges: h.m.policy().hedge.is_some(),
                    total: h.m.policy().max_total_execution_time,
                    h,
                    permits: BTreeMap::new(),
                    called: BTreeSet::new(),
                    refused: BTreeMap::new(),
                    invokes: 0,
                    in_flight: Vec::new(),
                    started: BTreeMap::new(),
                    nested: BTreeSet::new(),
                    last_invoked: BTreeMap::new(),
                    questions: Vec::new(),
                    give_ups: Vec::new(),
                }
            })
            .collect();
        World {
            now: 0.0,
            b: Breaker::new(settings.clone()),
            answers: bs.dynamic.iter().flatten().map(|&v| f64::from(v)).collect(),
            settings,
            next_answer: 0,
            circuits: BTreeMap::new(),
            rs,
            next_probe: 0,
            tally: Tally::default(),
            total_firing: None,
        }
    }

    fn half_open_calls(&self) -> usize {
        self.settings.half_open_calls as usize
    }

    /// A transition of `key`'s circuit: its half-open period (if any) is
    /// over, and an opening gets its break (a dynamic one answered now).
    fn transition(&mut self, key: &'static str, t: Option<Transition>) {
        let Some(t) = t else {
            return;
        };
        self.tally.transitions += 1;
        assert_eq!(self.b.key(t.circuit), key, "{t:?}");
        let c = self.circuits.entry(key).or_default();
        c.out.clear();
        c.passed = 0;
        if t.why != Why::BreakEnded {
            c.epoch += 1;
        }
        if t.to == CircuitState::Open {
            c.break_ms = t.break_duration;
            if !self.answers.is_empty() {
                let ms = self.answers[self.next_answer % self.answers.len()];
                self.next_answer += 1;
                self.b.set_break(t.circuit, t.epoch, ms);
                c.break_ms = ms;
            }
        }
    }

    /// The attempt holding `held` ended: recorded (`Some(ok)`) or its
    /// permit given back (`None`).
    fn give_back(&mut self, held: Held, outcome: Option<bool>) {
        let c = self.circuits.entry(held.key).or_default();
        let stale = held.epoch != c.epoch;
        let current = held.probe.is_some_and(|id| c.out.remove(&id));
        match outcome {
            Some(ok) => {
                let t = self.b.record(held.permit, ok, self.now);
                if stale {
                    // SPEC §2e rule 6: from before the last opening.
                    assert_eq!(t, None, "a stale permit changed the circuit");
                }
                if current && ok && t.is_none() {
                    if let Some(c) = self.circuits.get_mut(held.key) {
                        c.passed += 1;
                    }
                }
                self.transition(held.key, t);
            }
            None => self.b.release(held.permit),
        }
    }

    /// Pops everything retryer `i` queued, carrying it out.
    fn pump(&mut self, i: usize) {
        for _ in 0..RUNAWAY {
            let Some(e) = self.rs[i].h.pop() else {
                return;
            };
            self.carry_out(i, e);
        }
        panic!("runaway: over {RUNAWAY} effects from one input");
    }

    fn carry_out(&mut self, i: usize, e: Effect) {
        let now = self.now;
        let hoc = self.half_open_calls();
        let key = self.rs[i].key;
        match e {
            Effect::Invoke { gen, attempt } => {
                let r = &mut self.rs[i];
                r.invokes += 1;
                r.last_invoked.insert(gen, attempt);
                let before = self.b.state(key, now);
                // As the engine asks: a closed circuit's permit first (no
                // clock needed), then, for any other state, at `now`.
                let (answer, t) = match self.b.closed_permit(key) {
                    Some(p) => {
                        assert_eq!(before, CircuitState::Closed);
                        (Ok(p), None)
                    }
                    None => self.b.permit(key, now),
                };
                self.transition(key, t);
                let c = self.circuits.entry(key).or_default();
                match answer {
                    Ok(permit) => {
                        // A probe leaves the circuit half-open (the end of
                        // a break is taken up to CLOCK_SLACK ms early, so
                        // the state read before may still say open).
                        let after = self.b.state(key, now);
                        let probe = (after == CircuitState::HalfOpen).then(|| {
                            self.next_probe += 1;
                            self.next_probe
                        });
                        if let Some(id) = probe {
                            self.tally.probes += 1;
                            c.out.insert(id);
                            // (a) never more than halfOpenCalls out, nor
                            // granted in all (a passed one stays counted).
                            assert!(
                                c.out.len() + c.passed as usize <= hoc,
                                "{} probes out and {} passed, halfOpenCalls {hoc}",
                                c.out.len(),
                                c.passed
                            );
                        }
                        let held = Held {
                            permit,
                            key,
                            probe,
                            epoch: c.epoch,
                        };
                        let r = &mut self.rs[i];
                        r.permits.insert((gen, attempt), held);
                        r.called.insert((gen, attempt));
                        r.in_flight.push((gen, attempt));
                    }
                    Err(ms) => {
                        self.tally.refusals += 1;
                        match before {
                            CircuitState::Isolated => assert_eq!(ms, f64::INFINITY),
                            CircuitState::Open => assert!(ms > 0.0 && ms.is_finite(), "{ms}"),
                            CircuitState::HalfOpen => {
                                // (a)/(b) a half-open circuit refuses only
                                // with every probe taken, and hints its break.
                                assert_eq!(
                                    c.out.len() + c.passed as usize,
                                    hoc,
                                    "refused with {} probes out and {} passed",
                                    c.out.len(),
                                    c.passed
                                );
                                assert_eq!(ms, c.break_ms.max(MIN_HALF_OPEN_HINT));
                            }
                            CircuitState::Closed => panic!("a closed circuit refused"),
                        }
                        let r = &mut self.rs[i];
                        r.refused.insert((gen, attempt), ms);
                        let mut budgets = r.h.budgets.borrow_mut();
                        r.h.m.attempt_refused(gen, attempt, ms, now, &mut *budgets);
                        drop(budgets);
                        // (d) a refused attempt is not running: nothing
                        // waits for its outcome.
                        assert!(!r.h.m.is_running(gen, attempt));
                    }
                }
            }
            Effect::TimeOut { gen, attempt } | Effect::CancelAttempt { gen, attempt } => {
                let r = &mut self.rs[i];
                assert!(
                    !r.refused.contains_key(&(gen, attempt)),
                    "{e:?} names a refused attempt"
                );
                if let Some(held) = r.permits.remove(&(gen, attempt)) {
                    let timed_out = matches!(e, Effect::TimeOut { .. });
                    self.give_back(held, timed_out.then_some(false));
                }
            }
            Effect::AbortAttempt { gen, attempt, .. } => {
                if let Some(held) = self.rs[i].permits.remove(&(gen, attempt)) {
                    self.give_back(held, None);
                }
            }
            Effect::Backoff {
                gen,
                attempt,
                delay,
                elapsed,
            } => {
                let r = &self.rs[i];
                if let Some(&hint) = r.refused.get(&(gen, attempt)) {
                    // (c) an Infinity hint never waits; a finite one ends
                    // before the deadline and replaces the backoff.
                    assert!(hint.is_finite(), "a wait after an Infinity hint");
                    if !r.hedges {
                        assert_eq!(delay, hint.min(MAX_TIMER_MS), "the wait is not the hint");
                    }
                    if r.total.is_finite() {
                        assert!(
                            elapsed + delay < r.total,
                            "gen {gen} waits {delay} ms after {elapsed} ms for a circuit, \
                             past its {} ms deadline",
                            r.total
                        );
                    }
                }
            }
            Effect::StartTimer {
                gen,
                timer: Timer::Wait,
                ms,
            } => {
                let r = &self.rs[i];
                let hedged = r.hedges && !r.nested.contains(&gen);
                if !hedged && r.total.is_finite() {
                    let deadline = r.started[&gen] + r.total;
                    assert!(now + ms < deadline, "a wait ends past the deadline");
                }
            }
            Effect::Eval { gen, what, .. } => self.rs[i].questions.push((gen, what)),
            Effect::Call {
                gen,
                cb: Cb::Abort,
                arg,
            } if arg == AbortReason::TotalTimeout as u32 && self.total_firing != Some(i) => {
                // (c) the deadline ended the flow before its timer fired: a
                // wait would have crossed it. After a refusal that is a
                // give-up ('circuit-open'), not a total timeout.
                let r = &self.rs[i];
                let hedged = r.hedges && !r.nested.contains(&gen);
                if let (false, Some(&last)) = (hedged, r.last_invoked.get(&gen)) {
                    assert!(
                        !r.refused.contains_key(&(gen, last)),
                        "gen {gen} timed out on a refusal's hint instead of giving up"
                    );
                }
            }
            Effect::Call {
                gen,
                cb: Cb::GiveUp,
                arg,
            } => {
                let reason = GiveUp::from_code(arg).expect("a known reason");
                let r = &mut self.rs[i];
                r.give_ups.push((gen, reason));
                if reason == GiveUp::CircuitOpen {
                    self.tally.circuit_open += 1;
                }
                let refusals = r.refused.keys().filter(|(g, _)| *g == gen).count();
                let calls = r.called.iter().filter(|(g, _)| *g == gen).count();
                if r.nested.contains(&gen) {
                    // A flow passing through hands a refusal back as
                    // 'nested' (its own timeout keeps its own reason).
                    assert_ne!(reason, GiveUp::CircuitOpen, "a flow passing through");
                    if r.refused.contains_key(&(gen, 1)) {
                        assert_eq!(reason, GiveUp::Nested, "a refusal passing through");
                    }
                } else if !r.hedges {
                    // The final error is the last attempt's.
                    let last = r.last_invoked[&gen];
                    let refused = r.refused.contains_key(&(gen, last));
                    assert_eq!(
                        reason == GiveUp::CircuitOpen,
                        refused,
                        "gen {gen} gave up for {reason:?}; attempt {last} refused: {refused}"
                    );
                } else {
                    if refusals == 0 {
                        assert_ne!(reason, GiveUp::CircuitOpen, "no refusal");
                    }
                    if calls == 0 {
                        assert_eq!(reason, GiveUp::CircuitOpen, "every attempt refused");
                    }
                }
            }
            Effect::Finish { gen, .. } => {
                let r = &mut self.rs[i];
                // (b) whatever ended the flow, its attempts gave their
                // permits back.
                let left: Vec<_> = r.permits.keys().filter(|(g, _)| *g == gen).collect();
                assert!(left.is_empty(), "gen {gen} finished holding {left:?}");
                r.in_flight.retain(|&(g, _)| g != gen);
                r.questions.retain(|&(g, _)| g != gen);
            }
            _ => {}
        }
    }

    fn sync_clock(&mut self) {
        for r in &mut self.rs {
            r.h.now = self.now;
        }
    }

    /// Moves the shared clock on, firing every retryer's due timers in
    /// order, each followed by that retryer's effects.
    fn advance(&mut self, ms: f64) {
        let until = self.now + ms;
        loop {
            let next = self
                .rs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.h.next_due(until).map(|l| (i, l)))
                .min_by(|a, b| a.1.due.total_cmp(&b.1.due));
            let Some((i, l)) = next else {
                break;
            };
            self.now = self.now.max(l.due);
            self.sync_clock();
            let h = &mut self.rs[i].h;
            h.wheel.retain(|x| x.timer != l.timer);
            h.fire(l.timer);
            self.total_firing = (l.timer == Timer::Total).then_some(i);
            self.pump(i);
            self.total_firing = None;
        }
        self.now = until;
        self.sync_clock();
    }

    fn answer(&mut self, i: usize, gen: u32, what: Eval, value: u16) {
        let v = match what {
            Eval::Enabled => Provided::Bool(true),
            Eval::ShouldRetry => Provided::Bool(value % 4 != 0),
            Eval::MaxAttempts => Provided::Number(f64::from(1 + value % 4)),
            Eval::RetryAfter if value % 3 == 0 => Provided::Nothing,
            _ => Provided::Number(f64::from(value % 500)),
        };
        self.rs[i].h.provide(gen, v);
        self.pump(i);
    }

    fn apply(&mut self, op: &Op) {
        let n = self.rs.len();
        match *op {
            Op::Execute { m, nested } => {
                let i = m.index(n);
                let r = &mut self.rs[i];
                let inside = nested.then_some(true);
                let gen = r.h.m.execute_within(self.now, false, inside, true);
                r.started.insert(gen, self.now);
                if nested {
                    r.nested.insert(gen);
                }
                self.pump(i);
            }
            Op::Settle { m, pick, how } => {
                let i = m.index(n);
                let r = &mut self.rs[i];
                if r.in_flight.is_empty() {
                    return;
                }
                let (gen, attempt) = r.in_flight.remove(pick.index(r.in_flight.len()));
                let held = r.permits.remove(&(gen, attempt));
                if let Some(held) = held {
                    self.give_back(held, (how < 2).then_some(how == 0));
                }
                let h = &mut self.rs[i].h;
                match how {
                    0 => h.ok(gen, attempt),
                    1 => h.err(gen, attempt),
                    _ => h.abort_error(gen, attempt),
                }
                self.pump(i);
            }
            Op::Advance { ms } => self.advance(f64::from(ms)),
            Op::Abort { m } => {
                let i = m.index(n);
                self.rs[i].h.abort();
                self.pump(i);
            }
            Op::Answer { m, value } => {
                let i = m.index(n);
                if self.rs[i].questions.is_empty() {
                    return;
                }
                let (gen, what) = self.rs[i].questions.remove(0);
                self.answer(i, gen, what, value);
            }
            Op::Isolate { key } => {
                let key = key_of(key);
                let t = self.b.isolate(key, self.now);
                self.transition(key, t);
            }
            Op::Reset { key } => {
                let key = key_of(key);
                let t = self.b.reset(key, self.now);
                let closed = t.is_none();
                self.transition(key, t);
                if closed {
                    // Closed already: its permits are stale all the same.
                    let c = self.circuits.entry(key).or_default();
                    c.epoch += 1;
                    c.out.clear();
                    c.passed = 0;
                }
            }
        }
    }

    /// Ends every flow as a host would (answers, then `abort()`), then
    /// checks what must be true once they all settled.
    fn wind_down(&mut self) {
        for i in 0..self.rs.len() {
            for _ in 0..64 {
                if !self.rs[i].h.m.is_active() {
                    break;
                }
                while !self.rs[i].questions.is_empty() {
                    let (gen, what) = self.rs[i].questions.remove(0);
                    self.answer(i, gen, what, 1);
                }
                self.rs[i].h.abort();
                self.pump(i);
            }
            let r = &self.rs[i];
            assert!(!r.h.m.is_active(), "a flow survived abort()");
            for gen in 1..=r.h.m.last_gen() {
                assert!(r.h.finished.contains_key(&gen), "gen {gen} never settled");
            }
            // (b) every permit given back.
            assert!(r.permits.is_empty(), "permits held: {:?}", r.permits);
            // (d) the function was called only with a permit.
            assert_eq!(
                r.invokes as usize,
                r.called.len() + r.refused.len(),
                "Invokes are not permitted + refused"
            );
            assert!(r.called.iter().all(|a| !r.refused.contains_key(a)));
        }
        // (b) no probe is still counted as running: a half-open circuit
        // gives every probe not passed yet, one after another.
        let hoc = self.half_open_calls();
        for (&key, c) in &self.circuits {
            if self.b.state(key, self.now) != CircuitState::HalfOpen {
                continue;
            }
            let mut b = self.b.clone();
            let (first, t) = b.permit(key, self.now);
            let expected = if t.is_some() {
                hoc
            } else {
                hoc - c.passed as usize
            };
            let mut granted = usize::from(first.is_ok());
            for _ in 0..hoc {
                granted += usize::from(b.permit(key, self.now).0.is_ok());
            }
            assert_eq!(
                granted, expected,
                "circuit {key:?}: {granted} probes left to give, {expected} expected"
            );
        }
    }
}

fn run(bs: &BreakerSpec, specs: &[RetryerSpec], ops: &[Op]) -> Tally {
    let mut w = World::new(bs, specs);
    for op in ops {
        w.apply(op);
    }
    w.wind_down();
    w.tally
}

proptest! {
    #![proptest_config(proptest_config(SHARED_CASES))]

    /// Two to four retryers share a breaker and a budget, with random
    /// policies (hedged ones among them), inputs and timings.
    #[test]
    fn retryers_sharing_a_breaker_keep_its_rules(
        bs in arb_breaker(),
        specs in proptest::collection::vec(arb_retryer(), 2..5),
        ops in proptest::collection::vec(arb_op(), 1..100),
    ) {
        run(&bs, &specs, &ops);
    }
}

proptest! {
    #![proptest_config(proptest_config(PROBE_CASES))]

    /// The same with circuits that trip on one failure and short breaks, so
    /// most runs spend their time half-open, with several probes allowed
    /// and flows ending every way while probes are out.
    #[test]
    fn half_open_probes_are_counted_and_given_back(
        bs in arb_breaker().prop_map(|mut b| {
            b.consecutive = 1;
            b.break_ms = b.break_ms.min(2);
            b.half_open_calls = b.half_open_calls.max(2);
            b
        }),
        specs in proptest::collection::vec(arb_retryer(), 2..5),
        ops in proptest::collection::vec(arb_op(), 1..100),
    ) {
        run(&bs, &specs, &ops);
    }
}

/// The generators reach what the properties are about: refusals, probes,
/// transitions and 'circuit-open' give-ups, over a fixed set of runs.
#[test]
fn the_runs_reach_refusals_and_probes() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = (
        arb_breaker().prop_map(|mut b| {
            b.consecutive = 1;
            b
        }),
        proptest::collection::vec(arb_retryer(), 2..5),
        proptest::collection::vec(arb_op(), 40..100),
    );
    let mut total = Tally::default();
    for _ in 0..64 {
        let (bs, specs, ops) = strategy.new_tree(&mut runner).unwrap().current();
        let t = run(&bs, &specs, &ops);
        total.refusals += t.refusals;
        total.probes += t.probes;
        total.transitions += t.transitions;
        total.circuit_open += t.circuit_open;
    }
    println!("{total:?}");
    assert!(total.refusals > 100, "{total:?}");
    assert!(total.probes > 50, "{total:?}");
    assert!(total.transitions > 100, "{total:?}");
    assert!(total.circuit_open > 10, "{total:?}");
}

// ----- many keys: each behaves as if it had a breaker of its own -----
//
// Past `KEPT_CIRCUITS` keys, a new key takes the place of an idle circuit.
// Every answer of a breaker shared by up to 90 keys (permits, refusals and
// their hints, transitions, `state()`) must be the answer a breaker
// holding that key alone gives, until the shared one gives the key's place
// up; that may happen only to a circuit with no permit out, nothing in its
// window, not isolated, and not in a break that ended less than a window
// ago. From then on the key answers as a key never seen.

/// One step over many keys.
#[derive(Clone, Debug)]
enum KeyOp {
    /// After `dt` ms, an attempt for key `k` asks (`closed_permit` first).
    Ask { k: u8, dt: u16 },
    /// After `dt` ms, a held permit ends: recorded (`Some(ok)`) or given
    /// back.
    End {
        which: Index,
        outcome: Option<bool>,
        dt: u16,
    },
    /// `isolate(k)`, or `reset(k)`.
    Force { k: u8, reset: bool },
}

fn arb_key_op() -> impl Strategy<Value = KeyOp> {
    prop_oneof![
        6 => (0u8..90, 0u16..2_000).prop_map(|(k, dt)| KeyOp::Ask { k, dt }),
        5 => (any::<Index>(), proptest::option::of(any::<bool>()), 0u16..2_000)
            .prop_map(|(which, outcome, dt)| KeyOp::End { which, outcome, dt }),
        1 => (0u8..90, any::<bool>()).prop_map(|(k, reset)| KeyOp::Force { k, reset }),
    ]
}

fn origin(k: u8) -> String {
    format!("https://origin-{k}.test")
}

/// As the engine asks: `closed_permit` first, then `permit` with the clock.
fn ask(b: &mut Breaker, key: &str, now: f64) -> (Result<Permit, f64>, Option<Transition>) {
    match b.closed_permit(key) {
        Some(p) => (Ok(p), None),
        None => b.permit(key, now),
    }
}

/// A transition as a user sees it: which place and epoch aside.
fn seen(t: Option<Transition>) -> Option<Transition> {
    t.map(|t| Transition {
        circuit: 0,
        epoch: 0,
        ..t
    })
}

/// What a run over many keys went through.
#[derive(Debug, Default)]
struct KeyTally {
    /// Keys seen.
    keys: usize,
    /// The most circuits the shared breaker held.
    most: usize,
    /// Places given up, and of those, circuits that had tripped.
    forgotten: usize,
    forgotten_open: usize,
}

/// Runs `ops` on a shared breaker and on one breaker per key.
fn run_keys(bs: &BreakerSpec, ops: &[KeyOp]) -> KeyTally {
    let settings = bs.settings();
    let mut shared = Breaker::new(settings.clone());
    let mut own: BTreeMap<u8, Breaker> = BTreeMap::new();
    let mut held: Vec<(u8, Permit, Permit)> = Vec::new();
    let mut now = 0.0;
    let mut tally = KeyTally::default();
    for op in ops {
        match *op {
            KeyOp::Ask { k, dt } => {
                now += f64::from(dt);
                let key = origin(k);
                let alone = own
                    .entry(k)
                    .or_insert_with(|| Breaker::new(settings.clone()));
                let (a, ta) = ask(&mut shared, &key, now);
                let (b, tb) = ask(alone, &key, now);
                assert_eq!(seen(ta), seen(tb), "{key} at {now}");
                match (a, b) {
                    (Ok(pa), Ok(pb)) => held.push((k, pa, pb)),
                    (Err(x), Err(y)) => assert_eq!(x, y, "{key}'s hint at {now}"),
                    (a, b) => panic!("{key} at {now}: shared {a:?}, alone {b:?}"),
                }
            }
            KeyOp::End { which, outcome, dt } => {
                if held.is_empty() {
                    continue;
                }
                now += f64::from(dt);
                let (k, pa, pb) = held.swap_remove(which.index(held.len()));
                let alone = own.get_mut(&k).expect("a held permit's key");
                match outcome {
                    Some(ok) => assert_eq!(
                        seen(shared.record(pa, ok, now)),
                        seen(alone.record(pb, ok, now)),
                        "{} recorded {ok} at {now}",
                        origin(k)
                    ),
                    None => {
                        shared.release(pa);
                        alone.release(pb);
                    }
                }
            }
            KeyOp::Force { k, reset } => {
                let key = origin(k);
                let alone = own
                    .entry(k)
                    .or_insert_with(|| Breaker::new(settings.clone()));
                let (ta, tb) = if reset {
                    (shared.reset(&key, now), alone.reset(&key, now))
                } else {
                    (shared.isolate(&key, now), alone.isolate(&key, now))
                };
                assert_eq!(seen(ta), seen(tb), "{key} forced at {now}");
            }
        }
        let kept: BTreeSet<String> = (0..shared.len() as u32)
            .map(|i| shared.key(i).to_string())
            .collect();
        let sampling = settings.sampling_duration;
        for (&k, alone) in own.iter_mut() {
            let key = origin(k);
            // Kept, or given up already (a fresh breaker has no circuit).
            let Some((state, calls, _, _)) = alone.look(0, now).filter(|_| !kept.contains(&key))
            else {
                continue;
            };
            assert!(
                held.iter().all(|h| h.0 != k),
                "{key} given up with a permit out"
            );
            assert_eq!(calls, 0, "{key} given up with calls in its window");
            assert_ne!(state, CircuitState::Isolated, "{key} given up isolated");
            assert_ne!(
                alone.state(&key, now - sampling),
                CircuitState::Open,
                "{key} given up less than a window after its break"
            );
            *alone = Breaker::new(settings.clone());
            tally.forgotten += 1;
            if state != CircuitState::Closed {
                tally.forgotten_open += 1;
            }
        }
        for (&k, alone) in &own {
            let key = origin(k);
            assert_eq!(
                shared.state(&key, now),
                alone.state(&key, now),
                "{key} at {now}"
            );
        }
        tally.most = tally.most.max(shared.len());
    }
    tally.keys = own.len();
    tally
}

/// Static breaks only: a `breakDuration` function's answers are the host's.
fn arb_static_breaker() -> impl Strategy<Value = BreakerSpec> {
    arb_breaker().prop_map(|mut b| {
        b.dynamic = None;
        b
    })
}

proptest! {
    #![proptest_config(proptest_config(SHARED_CASES))]

    /// Up to 90 keys through one breaker, as `retryFetch` over many
    /// origins: each key reads as if it had a breaker of its own.
    #[test]
    fn a_key_of_a_shared_breaker_behaves_as_one_alone(
        bs in arb_static_breaker(),
        ops in proptest::collection::vec(arb_key_op(), 1..400),
    ) {
        run_keys(&bs, &ops);
    }
}

/// The generator reaches what that property is about: more keys than the
/// breaker keeps, with idle places taken by new keys, tripped circuits'
/// places among them.
#[test]
fn the_key_runs_reach_idle_places() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[11; 32]),
    );
    let strategy = (
        arb_static_breaker(),
        proptest::collection::vec(arb_key_op(), 300..400),
    );
    let (mut reused, mut forgotten_open) = (0, 0);
    for _ in 0..32 {
        let (bs, ops) = strategy.new_tree(&mut runner).unwrap().current();
        let t = run_keys(&bs, &ops);
        assert!(t.keys > t.most || t.forgotten == 0, "{t:?}");
        if t.forgotten > 0 {
            reused += 1;
        }
        forgotten_open += t.forgotten_open;
    }
    println!("{reused} runs gave places up, {forgotten_open} of tripped circuits");
    assert!(
        reused >= 16,
        "{reused} of 32 runs gave a place to a new key"
    );
    assert!(
        forgotten_open >= 10,
        "{forgotten_open} tripped circuits gave their place"
    );
}
