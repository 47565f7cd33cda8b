// Fuzz input decoding and the checks of the fuzz targets.
//
// This file is `include!`d by fuzz/fuzz_targets/options.rs,
// fuzz/fuzz_targets/machine.rs, fuzz/fuzz_targets/breaker.rs and
// tests/fuzz_regressions.rs, so the fuzzer and the native regression
// tests decode bytes the same way: a byte string found by `cargo fuzz`
// replays unchanged under `cargo test` on stable.
// It depends on nothing but `retry_wasm` and std.
//
// `run_options(bytes)`, `run_machine(bytes)` and `run_breaker(bytes)`
// panic when a rule breaks; anything else they do is a pass. The rules
// (the breaker target's are at `run_breaker`):
//
// options: no panic; `Opt::from_id` knows exactly the ids of `ALL_OPTS`; a refused
//   value leaves the policy bit for bit unchanged and its error names the
//   option (and the entry or field); `undefined` is never refused and
//   restores the default; setting a value twice equals setting it once;
//   an accepted value is in range (no NaN, no -0, no negative delay, no
//   non-integer maxAttempts ...); `finish()` changes nothing and refuses
//   only Infinity attempts with intervals or without a total deadline.
// machine: no panic; at most one `Finish` per generation and no effect of
//   a generation after its `Finish` or before it started; attempts of a
//   flow invoked as 1, 2, 3 ... and never past a static finite
//   maxAttempts (or intervals + 1), hedged or not; every timer finite, in
//   [0, 2^31-1]; `onAbort`/`onGiveUp` reasons in range; `onHedge` of an
//   attempt after the first, with at least one earlier one running; no
//   `Listen` twice; budget tokens within [0, maxTokens]; at most 10,000
//   effects from one input; after a wind-down (answer every question,
//   abort) every execute() has settled. While every input is one a real
//   host could send, also: no `StartTimer` over a live timer; no attempt
//   outlives its flow (each invoked attempt is settled, timed out,
//   cancelled or aborted before its flow's `Finish`); and with no flow
//   active nothing is left behind (no live timer, no signal listener,
//   not isExecuting). Hedged flows come from policies with `hedge` (a
//   staged option like any other); bit 4 of an `execute()` outside any
//   attempt says the host does not let that flow hedge.

use std::collections::{BTreeMap, BTreeSet};

use retry_wasm::core::backoff::{Jitter, MAX_TIMER_MS};
use retry_wasm::core::breaker::{
    Breaker, CircuitState, Permit, Settings, Transition, Why, MIN_HALF_OPEN_HINT,
};
use retry_wasm::core::budget::Budget;
use retry_wasm::core::effect::{AbortReason, Effect, Eval, GiveUp, Provided, Timer};
use retry_wasm::core::machine::Machine;
use retry_wasm::core::options::{
    Cb, ErrorKind, Expect, Flag, InitialState, Num, Opt, OptionError, Policy, Raw, ALL_OPTS,
};

/// Most effects one input may queue. More means the machine loops.
pub const MAX_EFFECTS_PER_INPUT: usize = 10_000;

/// Numbers that sit on the edges of the validation rules.
pub const SPECIAL_F64: [f64; 40] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    3.0,
    5.0,
    10.0,
    100.0,
    1000.0,
    0.5,
    1.5,
    0.1,
    1.0 - f64::EPSILON / 2.0,
    1.0 + f64::EPSILON,
    f64::NAN,
    -f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MAX,
    -f64::MAX,
    f64::MIN_POSITIVE,
    -f64::MIN_POSITIVE,
    5e-324,
    -5e-324,
    1e308,
    1e-308,
    2_147_483_647.0,
    2_147_483_648.0,
    4_294_967_295.0,
    4_294_967_296.0,
    9_007_199_254_740_991.0,
    9_007_199_254_740_992.0,
    9_007_199_254_740_993.0,
    1e21,
    -1e21,
    0.000_1,
    30.0,
    7.0,
    1.0e-7,
];

/// Strings the options look for, near misses, and odd ones.
pub const STRINGS: [&str; 16] = [
    "exponential",
    "linear",
    "fixed",
    "decorrelated",
    "full",
    "last",
    "",
    "Exponential",
    "full ",
    " last",
    "\u{0}",
    "fixed\u{0}",
    "\u{130}",
    "LINEAR",
    "true",
    "decorrelate",
];

/// A cursor over fuzz bytes. Past the end every read is 0.
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    pub fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = self.pos.saturating_add(n).min(self.data.len());
        self.pos = self.pos.saturating_add(n);
        &self.data[start..end]
    }

    pub fn u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        for x in b.iter_mut() {
            *x = self.byte();
        }
        u32::from_le_bytes(b)
    }

    pub fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        for x in b.iter_mut() {
            *x = self.byte();
        }
        u64::from_le_bytes(b)
    }

    /// A number: mostly an edge value or a small integer, sometimes any
    /// bit pattern (every NaN payload, subnormal, huge and tiny value).
    pub fn f64(&mut self) -> f64 {
        let tag = self.byte();
        match tag % 8 {
            0..=3 => SPECIAL_F64[usize::from(self.byte()) % SPECIAL_F64.len()],
            4 | 5 => f64::from(self.byte()),
            6 => f64::from(self.u32()) / 8.0 - 1000.0,
            _ => f64::from_bits(self.u64()),
        }
    }

    /// A string: a known one, or raw bytes when they are UTF-8.
    pub fn str(&mut self) -> &'a str {
        let tag = self.byte();
        if tag & 0x80 == 0 {
            return STRINGS[usize::from(tag) % STRINGS.len()];
        }
        let len = usize::from(tag & 0x1f);
        std::str::from_utf8(self.bytes(len)).unwrap_or("\u{fffd}")
    }

    /// A JavaScript value as the host would classify it.
    pub fn raw(&mut self) -> Raw<'a> {
        match self.byte() % 14 {
            0 => Raw::Undefined,
            1 => Raw::Null,
            2 => Raw::Bool(self.bool()),
            3..=5 => Raw::Number(self.f64()),
            6 | 7 => Raw::Str(self.str()),
            8 | 9 => Raw::Function,
            10 => Raw::Array(match self.byte() {
                b @ 0..=250 => u32::from(b % 8),
                _ => self.u32(),
            }),
            11 => Raw::Object,
            12 => match self.byte() % 3 {
                0 => Raw::Budget(self.u32()),
                _ => Raw::Budget(u32::from(self.byte() % 4)),
            },
            // Bit 0 picks a signal as it always did, so older inputs
            // decode alike; bit 1 of the rest, a CircuitBreaker.
            _ => match self.byte() {
                b if b & 1 == 1 => Raw::Signal,
                b if b & 2 == 2 => Raw::Breaker,
                _ => Raw::Other,
            },
        }
    }

    /// An option by number (`Opt::from_id`): mostly a known one, sometimes
    /// any u32.
    pub fn opt_id(&mut self) -> u32 {
        match self.byte() {
            b @ 0..=239 => u32::from(b) % ALL_OPTS.len() as u32,
            _ => self.u32(),
        }
    }
}

/// One step of building a policy, as the wasm layer stages `setOptions`.
#[derive(Clone, Copy, Debug)]
pub enum OptOp<'a> {
    Set(u32, Raw<'a>),
    Push(u32, Raw<'a>),
    Initial(u32, Raw<'a>),
    Finish,
}

pub fn opt_op<'a>(inp: &mut Input<'a>) -> OptOp<'a> {
    match inp.byte() % 10 {
        0..=5 => OptOp::Set(inp.opt_id(), inp.raw()),
        6 | 7 => {
            let index = match inp.byte() {
                b @ 0..=250 => u32::from(b % 16),
                _ => inp.u32(),
            };
            OptOp::Push(index, inp.raw())
        }
        8 => {
            let field = match inp.byte() {
                b @ 0..=250 => u32::from(b % 7),
                _ => inp.u32(),
            };
            OptOp::Initial(field, inp.raw())
        }
        _ => OptOp::Finish,
    }
}

fn same_f64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same_num(a: Num, b: Num) -> bool {
    match (a, b) {
        (Num::Static(x), Num::Static(y)) => same_f64(x, y),
        (x, y) => x == y,
    }
}

fn same_hedge(a: Option<Num>, b: Option<Num>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => same_num(x, y),
        (x, y) => x.is_none() && y.is_none(),
    }
}

fn same_opt_f64(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => same_f64(x, y),
        (x, y) => x.is_none() && y.is_none(),
    }
}

/// Equal down to the bits (NaN equals NaN, -0 differs from 0).
pub fn same_policy(a: &Policy, b: &Policy) -> bool {
    let jitter = match (a.jitter, b.jitter) {
        (Some(Jitter::Proportional(x)), Some(Jitter::Proportional(y))) => same_f64(x, y),
        (x, y) => x == y,
    };
    let intervals = match (&a.intervals, &b.intervals) {
        (Some(x), Some(y)) => x.len() == y.len() && x.iter().zip(y).all(|(&p, &q)| same_f64(p, q)),
        (x, y) => x.is_none() && y.is_none(),
    };
    // Names every field: a new one breaks the build until it is compared.
    let Policy {
        max_attempts: _,
        max_attempts_set: _,
        backoff: _,
        base_wait: _,
        max_wait: _,
        jitter: _,
        max_execution_time: _,
        max_total_execution_time: _,
        throw_on_error: _,
        enabled: _,
        callbacks: _,
        should_retry: _,
        retry_after: _,
        before_retry: _,
        intervals: _,
        multiplier: _,
        signal: _,
        budget: _,
        seed: _,
        retry_on_execution_timeout: _,
        nested: _,
        inner_retries: _,
        hedge: _,
        breaker: _,
        initial_state: _,
    } = a;
    let (i, j) = (a.initial(), b.initial());
    same_num(a.max_attempts, b.max_attempts)
        && a.max_attempts_set == b.max_attempts_set
        && a.backoff == b.backoff
        && same_num(a.base_wait, b.base_wait)
        && same_num(a.max_wait, b.max_wait)
        && jitter
        && same_f64(a.max_execution_time, b.max_execution_time)
        && same_f64(a.max_total_execution_time, b.max_total_execution_time)
        && a.throw_on_error == b.throw_on_error
        && a.enabled == b.enabled
        && a.callbacks == b.callbacks
        && a.should_retry == b.should_retry
        && a.before_retry == b.before_retry
        && a.retry_after == b.retry_after
        && intervals
        && same_f64(a.multiplier, b.multiplier)
        && a.signal == b.signal
        && a.budget == b.budget
        && same_opt_f64(a.seed, b.seed)
        && a.retry_on_execution_timeout == b.retry_on_execution_timeout
        && a.nested == b.nested
        && a.inner_retries == b.inner_retries
        && same_hedge(a.hedge, b.hedge)
        && a.breaker == b.breaker
        && same_opt_f64(i.execution_count, j.execution_count)
        && same_opt_f64(i.last_execution_time, j.last_execution_time)
        && same_opt_f64(i.total_execution_time, j.total_execution_time)
        && i.has_last_result == j.has_last_result
        && i.has_last_error == j.has_last_error
}

fn non_negative(v: f64) -> bool {
    v >= 0.0 && v.is_sign_positive()
}

fn finite_non_negative(v: f64) -> bool {
    v.is_finite() && non_negative(v)
}

/// Every value an accepted option may leave in a policy. `finished`: the
/// cross-option rules of `finish()` hold too.
pub fn assert_policy_valid(p: &Policy, finished: bool) {
    if let Num::Static(v) = p.max_attempts {
        assert!(
            v == f64::INFINITY || (v.is_finite() && v >= 1.0 && v.floor() == v),
            "maxAttempts {v:?} accepted"
        );
    }
    if let Num::Static(v) = p.base_wait {
        assert!(finite_non_negative(v), "baseWait {v:?} accepted");
    }
    if let Num::Static(v) = p.max_wait {
        assert!(non_negative(v), "maxWait {v:?} accepted");
    }
    if let Some(Jitter::Proportional(f)) = p.jitter {
        assert!(f > 0.0 && f <= 1.0, "jitter {f:?} accepted");
    }
    assert!(
        non_negative(p.max_execution_time),
        "maxExecutionTime {:?} accepted",
        p.max_execution_time
    );
    assert!(
        non_negative(p.max_total_execution_time),
        "maxTotalExecutionTime {:?} accepted",
        p.max_total_execution_time
    );
    assert!(
        p.multiplier.is_finite() && p.multiplier > 0.0,
        "multiplier {:?} accepted",
        p.multiplier
    );
    if let Some(s) = p.seed {
        assert!(s.is_finite(), "seed {s:?} accepted");
    }
    if let Some(Num::Static(v)) = p.hedge {
        assert!(non_negative(v), "hedge {v:?} accepted");
    }
    if let Some(list) = &p.intervals {
        for &v in list {
            assert!(non_negative(v), "interval {v:?} accepted");
        }
    }
    let i = p.initial();
    for v in [
        i.execution_count,
        i.last_execution_time,
        i.total_execution_time,
    ]
    .into_iter()
    .flatten()
    {
        assert!(finite_non_negative(v), "initialState number {v:?} accepted");
    }
    assert!(
        p.callbacks < 1 << (Cb::Hedge as u32 + 1),
        "callback bits {:#x}",
        p.callbacks
    );
    if finished && p.max_attempts == Num::Static(f64::INFINITY) {
        assert!(p.hedge.is_none(), "Infinity attempts with hedge finished");
        assert!(
            p.intervals.is_none(),
            "Infinity attempts with intervals finished"
        );
        assert!(
            p.max_total_execution_time.is_finite(),
            "Infinity attempts without a total deadline finished"
        );
    }
}

/// `set(opt, undefined)` put the option back to its default.
fn assert_default(p: &Policy, opt: Opt) {
    let d = Policy::default();
    let ok = match opt {
        Opt::MaxAttempts => p.max_attempts == d.max_attempts && !p.max_attempts_set,
        Opt::Backoff => p.backoff == d.backoff,
        Opt::BaseWait => p.base_wait == d.base_wait,
        Opt::MaxWait => p.max_wait == d.max_wait,
        Opt::Jitter => p.jitter.is_none(),
        Opt::MaxExecutionTime => p.max_execution_time == d.max_execution_time,
        Opt::MaxTotalExecutionTime => p.max_total_execution_time == d.max_total_execution_time,
        Opt::ThrowOnError => p.throw_on_error.is_none(),
        Opt::Enabled => p.enabled == Flag::Static(true),
        Opt::InitialState => p.initial() == InitialState::default(),
        Opt::Key => true,
        Opt::ShouldRetry => !p.should_retry,
        Opt::RetryAfter => !p.retry_after,
        Opt::Intervals => p.intervals.is_none(),
        Opt::Multiplier => p.multiplier == d.multiplier,
        Opt::Signal => !p.signal,
        Opt::Budget => p.budget.is_none(),
        Opt::Seed => p.seed.is_none(),
        Opt::RetryOnExecutionTimeout => !p.retry_on_execution_timeout,
        Opt::Nested => p.nested == d.nested,
        Opt::InnerRetries => p.inner_retries,
        Opt::Hedge => p.hedge.is_none(),
        Opt::Breaker => !p.breaker,
        cb => match cb.callback() {
            Some(c) => !p.has(c),
            None => false,
        },
    };
    assert!(ok, "{opt:?} = undefined did not restore the default: {p:?}");
}

/// A refused entry of a list or record option (`intervals[index]`,
/// `initialState` field `index`) left the policy as it was and names that
/// option and entry.
fn assert_entry_refused(
    p: &Policy,
    before: &Policy,
    e: OptionError,
    opt: Opt,
    index: u32,
    raw: Raw<'_>,
) {
    assert!(
        same_policy(p, before),
        "refused {opt:?} entry {index} = {raw:?} changed the policy"
    );
    assert_eq!(e.opt, opt);
    assert_eq!(e.index, index);
}

/// Applies one op to `p` and checks it. Returns whether it was accepted.
pub fn apply_checked(p: &mut Policy, op: OptOp<'_>) -> bool {
    let before = p.clone();
    match op {
        OptOp::Set(id, raw) => {
            let opt = Opt::from_id(id);
            assert_eq!(
                opt.is_some(),
                (id as usize) < ALL_OPTS.len(),
                "from_id({id})"
            );
            let Some(opt) = opt else {
                return false;
            };
            assert_eq!(opt as u32, id, "from_id({id}) gave {opt:?}");
            match p.set(opt, raw) {
                Ok(()) => {
                    assert_policy_valid(p, false);
                    if raw == Raw::Undefined {
                        assert_default(p, opt);
                    }
                    let once = p.clone();
                    let again = p.set(opt, raw);
                    assert!(again.is_ok(), "{opt:?} = {raw:?} accepted once only");
                    assert!(same_policy(p, &once), "{opt:?} = {raw:?} not idempotent");
                    true
                }
                Err(e) => {
                    assert!(
                        same_policy(p, &before),
                        "refused {opt:?} = {raw:?} changed the policy:\n{before:?}\n{p:?}"
                    );
                    assert_eq!(e.opt, opt, "error for {opt:?} names another option");
                    assert_ne!(raw, Raw::Undefined, "{opt:?} refused undefined");
                    if e.kind == ErrorKind::Range {
                        assert!(
                            matches!(raw, Raw::Number(_) | Raw::Str(_)),
                            "RangeError for a {raw:?}"
                        );
                    }
                    false
                }
            }
        }
        OptOp::Push(index, raw) => {
            let len = p.intervals.as_ref().map(Vec::len);
            match p.push_interval(index, raw) {
                Ok(()) => {
                    let list = p.intervals.as_ref().expect("push without a list");
                    assert_eq!(Some(list.len()), len.map(|n| n + 1));
                    assert_policy_valid(p, false);
                    true
                }
                Err(e) => {
                    assert_entry_refused(p, &before, e, Opt::Intervals, index, raw);
                    false
                }
            }
        }
        OptOp::Initial(field, raw) => match p.set_initial(field, raw) {
            Ok(()) => {
                assert_policy_valid(p, false);
                true
            }
            Err(e) => {
                assert_entry_refused(p, &before, e, Opt::InitialState, field, raw);
                false
            }
        },
        OptOp::Finish => {
            let r = p.finish();
            assert!(same_policy(p, &before), "finish() changed the policy");
            match r {
                Ok(()) => assert_policy_valid(p, true),
                Err(e) => {
                    assert_eq!(e.kind, ErrorKind::Range);
                    assert!(
                        matches!(
                            e.expect,
                            Expect::IntervalsWithInfinity
                                | Expect::InfinityNeedsTotalDeadline
                                | Expect::FiniteWithHedge
                        ),
                        "finish() refused with {e:?}"
                    );
                    assert_eq!(p.max_attempts, Num::Static(f64::INFINITY));
                }
            }
            r.is_ok()
        }
    }
}

/// What one options run did (for the seed tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptionsRun {
    pub accepted: u32,
    pub refused: u32,
    pub committed: u32,
}

/// Target 1: arbitrary option values through `set`, `push_interval`,
/// `set_initial` and `finish`, staged and committed as `setOptions` does.
pub fn run_options(data: &[u8]) -> OptionsRun {
    let mut run = OptionsRun::default();
    let mut inp = Input::new(data);
    let mut committed = Policy::default();
    let mut staged = committed.clone();
    let mut clean = true;
    while !inp.is_empty() {
        let op = opt_op(&mut inp);
        let ok = apply_checked(&mut staged, op);
        if ok {
            run.accepted += 1;
        } else {
            run.refused += 1;
        }
        if let OptOp::Finish = op {
            if ok && clean {
                run.committed += 1;
                committed = staged.clone();
                assert_policy_valid(&committed, true);
            }
            staged = committed.clone();
            clean = true;
        } else if !ok {
            clean = false;
        }
    }
    run
}

// ----- target 2: the machine -----

/// Attempts a policy can ever invoke, when that is fixed by the policy.
fn static_bound(p: &Policy) -> Option<f64> {
    match (&p.intervals, p.max_attempts) {
        (Some(list), Num::Static(v)) if p.max_attempts_set => Some(v.min(list.len() as f64 + 1.0)),
        (Some(list), _) => Some(list.len() as f64 + 1.0),
        (None, Num::Static(v)) if v.is_finite() => Some(v),
        _ => None,
    }
}

/// A policy staged from fuzz bytes over `base`, committed only when every
/// value was accepted and `finish()` passed (as `setOptions` does).
fn staged_policy(inp: &mut Input<'_>, base: &Policy) -> Option<Policy> {
    let mut p = base.clone();
    let n = inp.byte() % 12;
    let mut ok = true;
    for _ in 0..n {
        let op = match opt_op(inp) {
            OptOp::Finish => continue,
            op => op,
        };
        ok &= apply_checked(&mut p, op);
    }
    if ok && p.finish().is_ok() {
        assert_policy_valid(&p, true);
        // A hedge of 0 starts every attempt at once, from one input: with
        // billions of attempts that is work, not a runaway, and no host
        // would ask it. Hedged policies keep to HEDGE_BOUND attempts.
        let fans_out = p.hedge.is_some() && static_bound(&p).is_some_and(|b| b > HEDGE_BOUND);
        (!fans_out).then_some(p)
    } else {
        None
    }
}

/// Most attempts a hedged policy of the machine target allows (and the
/// most its function answers for a dynamic `maxAttempts`).
const HEDGE_BOUND: f64 = 1000.0;

/// What one machine run did, summed over its machines (for the seed
/// tests, and to see what the fuzzer reaches).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineRun {
    pub machines: u32,
    pub budgets: u32,
    pub inputs: u32,
    pub invokes: u32,
    pub highest_attempt: u32,
    pub finishes: u32,
    pub timers: u32,
    pub calls: u32,
    pub evals: u32,
    /// `onHedge` effects: attempts started while others ran.
    pub hedges: u32,
    /// Losing attempts cancelled.
    pub cancels: u32,
    /// Every input was one a real host could send, so the leak checks ran.
    pub realistic: bool,
}

/// One machine and what its fake host knows.
struct Sim {
    run: MachineRun,
    m: Machine,
    /// Highest attempt any policy this machine had can reach; `None` when
    /// one of them had no fixed bound.
    bound: Option<f64>,
    /// Generations whose `Finish` was popped.
    finished: BTreeSet<u32>,
    /// Last invoked attempt per generation.
    invoked: BTreeMap<u32, u32>,
    /// Invoked attempts whose promise has not settled.
    open_attempts: Vec<(u32, u32)>,
    /// Invoked attempts the machine still owns: not taken back by a
    /// settlement it accepted, nor let go with an `AbortAttempt`,
    /// `CancelAttempt` or `TimeOut`.
    owned: BTreeSet<(u32, u32)>,
    /// Popped `Eval`s not answered yet.
    open_evals: Vec<(u32, Eval)>,
    /// Popped `Gate`s (generation, attempt) not answered yet.
    open_gates: Vec<(u32, u32)>,
    /// Live host timers, by kind: the generation that started each.
    wheel: [Option<u32>; 3],
    /// Generations listening to the outside signal.
    listening: BTreeSet<u32>,
    /// Every input so far is one a real host could send (no settlement
    /// of an attempt that was never invoked, no answer nobody asked for).
    realistic: bool,
    /// Its host asks a circuit breaker before each attempt: a flow may
    /// give up with 'circuit-open'.
    breaker: bool,
}

impl Sim {
    fn new(policy: Policy, entropy: u64) -> Sim {
        let bound = static_bound(&policy);
        Sim {
            m: Machine::new(policy, entropy),
            run: MachineRun::default(),
            bound,
            finished: BTreeSet::new(),
            invoked: BTreeMap::new(),
            open_attempts: Vec::new(),
            owned: BTreeSet::new(),
            open_evals: Vec::new(),
            open_gates: Vec::new(),
            wheel: [None; 3],
            listening: BTreeSet::new(),
            realistic: true,
            breaker: false,
        }
    }

    /// A generation that exists and has not finished: an input naming it
    /// that a host would not send may steer the machine.
    fn live_gen(&self, gen: u32) -> bool {
        gen != 0 && gen <= self.m.last_gen() && !self.finished.contains(&gen)
    }

    fn set_policy(&mut self, p: Policy) {
        self.bound = match (self.bound, static_bound(&p)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        self.m.set_policy(p);
    }

    /// Pops one effect and checks it against the host contract.
    fn pop(&mut self, budgets: &mut Vec<Budget>) -> Option<Effect> {
        let e = self.m.next_effect(budgets)?;
        if let Some(g) = e.gen() {
            assert!(
                !self.finished.contains(&g),
                "{e:?} after the Finish of gen {g}"
            );
            assert!(
                g != 0 && g <= self.m.last_gen(),
                "{e:?} for a generation that was never started"
            );
        }
        match e {
            Effect::Finish { gen, .. } => {
                self.run.finishes += 1;
                self.finished.insert(gen);
                self.open_attempts.retain(|&(g, _)| g != gen);
                if self.realistic {
                    let left: Vec<_> = self.owned.iter().filter(|(g, _)| *g == gen).collect();
                    assert!(
                        left.is_empty(),
                        "gen {gen} finished, attempts {left:?} live"
                    );
                }
                self.owned.retain(|&(g, _)| g != gen);
            }
            Effect::Invoke { gen, attempt } => {
                let prev = self.invoked.insert(gen, attempt).unwrap_or(0);
                assert_eq!(
                    attempt,
                    prev + 1,
                    "gen {gen} invoked attempt {attempt} after attempt {prev}"
                );
                if let Some(max) = self.bound {
                    assert!(
                        f64::from(attempt) <= max,
                        "attempt {attempt} invoked with maxAttempts {max}"
                    );
                }
                self.run.invokes += 1;
                self.run.highest_attempt = self.run.highest_attempt.max(attempt);
                self.open_attempts.push((gen, attempt));
                self.owned.insert((gen, attempt));
            }
            Effect::AbortAttempt { gen, attempt, .. } | Effect::TimeOut { gen, attempt } => {
                self.owned.remove(&(gen, attempt));
            }
            Effect::CancelAttempt { gen, attempt } => {
                self.run.cancels += 1;
                self.owned.remove(&(gen, attempt));
            }
            Effect::Hedge {
                attempt, running, ..
            } => {
                assert!(
                    attempt >= 2 && running >= 1 && running < attempt,
                    "onHedge of attempt {attempt} with {running} running"
                );
                self.run.hedges += 1;
                self.run.calls += 1;
            }
            Effect::StartTimer { gen, timer, ms } => {
                assert!(
                    ms.is_finite() && (0.0..=MAX_TIMER_MS).contains(&ms),
                    "{timer:?} timer of {ms:?} ms"
                );
                if self.realistic {
                    assert!(
                        self.wheel[timer as usize].is_none(),
                        "StartTimer {timer:?} for gen {gen} while one is live: {:?}",
                        self.wheel
                    );
                }
                self.run.timers += 1;
                self.wheel[timer as usize] = Some(gen);
            }
            Effect::ClearTimer { timer } => self.wheel[timer as usize] = None,
            Effect::Listen { gen } => {
                assert!(self.listening.insert(gen), "Listen twice for gen {gen}");
            }
            Effect::Unlisten { gen } => {
                self.listening.remove(&gen);
            }
            Effect::Eval { gen, what, .. } => {
                self.run.evals += 1;
                self.open_evals.push((gen, what));
            }
            Effect::Call { cb, arg, .. } => {
                self.run.calls += 1;
                match cb {
                    Cb::Abort => assert!(arg <= AbortReason::Signal as u32, "onAbort({arg})"),
                    Cb::GiveUp => {
                        let last = if self.breaker {
                            GiveUp::CircuitOpen
                        } else {
                            GiveUp::Nested
                        };
                        assert!(arg <= last as u32, "onGiveUp({arg})");
                    }
                    _ => {}
                }
            }
            Effect::Backoff { delay, elapsed, .. } => {
                assert!(
                    delay.is_finite() && (0.0..=MAX_TIMER_MS).contains(&delay),
                    "backoff of {delay:?} ms"
                );
                assert!(elapsed >= 0.0, "backoff {elapsed:?} ms after the start");
                self.run.calls += 1;
            }
            Effect::Gate { gen, attempt } => {
                self.run.evals += 1;
                self.open_gates.push((gen, attempt));
            }
            Effect::StateChanged => {}
        }
        Some(e)
    }

    /// Pops everything; more than [`MAX_EFFECTS_PER_INPUT`] is a runaway.
    fn drain(&mut self, budgets: &mut Vec<Budget>) {
        for _ in 0..MAX_EFFECTS_PER_INPUT {
            if self.pop(budgets).is_none() {
                self.check_idle();
                return;
            }
        }
        panic!("runaway: over {MAX_EFFECTS_PER_INPUT} effects from one input");
    }

    /// With nothing queued and no flow active, nothing may be left behind.
    fn check_idle(&self) {
        if !self.realistic || self.m.is_active() {
            return;
        }
        assert!(
            !self.m.state().is_executing,
            "no flow, yet isExecuting: {:?}",
            self.m.state()
        );
        assert_eq!(
            self.wheel, [None; 3],
            "no flow, yet timers live (kinds Wait, Attempt, Total)"
        );
        assert!(
            self.listening.is_empty(),
            "no flow, yet listening for gens {:?}",
            self.listening
        );
    }
}

/// Inputs of both machine targets, each decoded from the bytes as it
/// always was (older inputs replay alike).
impl Sim {
    /// `execute()`: op 1 starts the flow inside another retryer's attempt,
    /// bit 4 saying whether that one forbids inner retries; op 0 outside
    /// any, bit 4 saying the host does not let it hedge.
    fn execute(&mut self, inp: &mut Input<'_>, op: u8, now: f64) {
        let before = self.m.last_gen();
        let inside = (op & 15 == 1).then_some(op & 16 != 0);
        let hedges = inside.is_some() || op & 16 == 0;
        let gen = self.m.execute_within(now, inp.byte() < 16, inside, hedges);
        assert_eq!(gen, before.wrapping_add(1), "execute() returned gen {gen}");
    }

    /// The attempt a settlement names: an invoked one, or (a selector of
    /// 224 or more) any, which may be stray. It is no longer open, and no
    /// longer owned when the machine will take its outcome.
    fn settle_target(&mut self, inp: &mut Input<'_>) -> Option<(u32, u32)> {
        let sel = inp.byte();
        let target = if sel < 224 {
            if self.open_attempts.is_empty() {
                None
            } else {
                Some(
                    self.open_attempts
                        .remove(usize::from(sel) % self.open_attempts.len()),
                )
            }
        } else {
            let gen = self.m.last_gen().wrapping_sub(u32::from(sel % 3));
            let attempt = match inp.byte() {
                b @ 0..=250 => u32::from(b % 6),
                _ => inp.u32(),
            };
            if let Some(k) = self.open_attempts.iter().position(|&x| x == (gen, attempt)) {
                self.open_attempts.remove(k);
            } else if self.live_gen(gen) {
                self.realistic = false;
            }
            Some((gen, attempt))
        };
        if let Some((gen, attempt)) = target {
            if self.m.is_running(gen, attempt) {
                self.owned.remove(&(gen, attempt));
            }
        }
        target
    }

    /// A timer fires: a live one, or (a report no host makes) any.
    fn fire(&mut self, inp: &mut Input<'_>, now: f64, budgets: &mut Vec<Budget>) {
        let sel = inp.byte();
        let live: Vec<Timer> = [Timer::Wait, Timer::Attempt, Timer::Total]
            .into_iter()
            .filter(|&t| self.wheel[t as usize].is_some())
            .collect();
        let timer = if sel < 224 && !live.is_empty() {
            live[usize::from(sel) % live.len()]
        } else {
            // A timer that is not live never fires in a host; the
            // machine must ignore such a report anyway.
            [Timer::Wait, Timer::Attempt, Timer::Total][usize::from(sel % 3)]
        };
        self.wheel[timer as usize] = None;
        self.m.timer_fired(timer, now, budgets);
    }

    fn abort(&mut self, inp: &mut Input<'_>) {
        let reason = match inp.byte() % 5 {
            0 => AbortReason::Manual,
            1 => AbortReason::NewExecution,
            2 => AbortReason::ExecutionTimeout,
            3 => AbortReason::TotalTimeout,
            _ => AbortReason::Signal,
        };
        self.m.abort(reason);
    }

    /// An answer: to a question popped, or (a selector of 224 or more) to
    /// any generation, which may be stray.
    fn answer(&mut self, inp: &mut Input<'_>, now: f64, budgets: &mut Vec<Budget>) {
        let sel = inp.byte();
        let target = if sel < 224 {
            if self.open_evals.is_empty() {
                None
            } else {
                let (gen, what) = self
                    .open_evals
                    .remove(usize::from(sel) % self.open_evals.len());
                Some((gen, Some(what)))
            }
        } else {
            let gen = match inp.byte() {
                b @ 0..=250 => self.m.last_gen().wrapping_sub(u32::from(b % 3)),
                _ => inp.u32(),
            };
            if let Some(k) = self.open_evals.iter().position(|&(g, _)| g == gen) {
                self.open_evals.remove(k);
            } else if self.live_gen(gen) {
                self.realistic = false;
            }
            Some((gen, None))
        };
        if let Some((gen, what)) = target {
            let mut value = provided(inp, what);
            let count = matches!(what, None | Some(Eval::MaxAttempts));
            if let Provided::Number(v) = value {
                if count && self.m.policy().hedge.is_some() && v > HEDGE_BOUND {
                    value = Provided::Number(HEDGE_BOUND);
                }
            }
            self.m.provide(gen, value, now, budgets);
        }
    }

    fn threw(&mut self, inp: &mut Input<'_>) {
        let gen = self.m.last_gen().wrapping_sub(u32::from(inp.byte() % 3));
        self.m.callback_threw(gen);
    }

    /// As `which` (0 to 3) says: subscribers come or go, a beforeRetry
    /// hook decides (or a stray answer), or the host learns of `enabled`.
    fn host_input(&mut self, which: u8, inp: &mut Input<'_>, now: f64) {
        match which {
            0 => self.m.set_listeners(inp.bool()),
            3 => {
                let sel = inp.byte();
                let (gen, attempt) = if sel < 224 && !self.open_gates.is_empty() {
                    self.open_gates
                        .remove(usize::from(sel) % self.open_gates.len())
                } else {
                    let gen = self.m.last_gen().wrapping_sub(u32::from(sel % 3));
                    (gen, u32::from(inp.byte() % 6))
                };
                let answer = match inp.byte() % 4 {
                    0 => Provided::Bool(false),
                    1 => Provided::Threw,
                    2 => Provided::Nothing,
                    _ => Provided::Bool(true),
                };
                self.m.answer_gate(gen, attempt, answer, now);
            }
            _ => self.m.set_enabled_hint(inp.bool()),
        }
    }
}

/// The clock moves: mostly forward, sometimes to any value at all.
fn next_clock(inp: &mut Input<'_>, now: f64) -> f64 {
    match inp.byte() % 4 {
        0 | 1 => now + f64::from(inp.byte()),
        2 => now + f64::from(inp.u32()),
        _ => inp.f64(),
    }
}

/// A value an option function might return. `what`: the question, when
/// the host answers one it was asked (then the answer is mostly sensible).
fn provided(inp: &mut Input<'_>, what: Option<Eval>) -> Provided {
    let tag = inp.byte();
    if let (Some(what), 0..=191) = (what, tag) {
        return match what {
            Eval::Enabled | Eval::ShouldRetry => Provided::Bool(tag % 8 != 0),
            Eval::MaxAttempts => Provided::Number(f64::from(1 + tag % 8)),
            Eval::RetryAfter if tag % 4 == 0 => Provided::Nothing,
            _ => Provided::Number(f64::from(tag % 4) * 7.0),
        };
    }
    match tag % 8 {
        0 => Provided::Nothing,
        1 | 2 => Provided::Bool(inp.bool()),
        3..=5 => Provided::Number(inp.f64()),
        6 => Provided::Other,
        _ => Provided::Threw,
    }
}

fn check_budgets(budgets: &[Budget]) {
    for b in budgets {
        let t = b.tokens();
        assert!(
            t >= 0.0 && t <= b.max_tokens(),
            "budget tokens {t} outside [0, {}]",
            b.max_tokens()
        );
    }
}

/// Target 2: several machines sharing budgets, arbitrary inputs, effects
/// popped in arbitrary amounts in between.
///
/// Each input is `[machine, op, args..]`. The op byte's low 4 bits pick the
/// input; its high bits pick what the host pops afterwards: usually
/// everything (as the pump does after each input), sometimes only a few
/// effects (a callback re-entering the machine while the rest is still
/// queued). Settlements, answers and timer fires name what the host
/// was really asked for, except when a selector byte of 224 or more asks
/// for a stray value (then the run is no longer "realistic" and the leak
/// checks, which assume a real host, are skipped).
pub fn run_machine(data: &[u8]) -> MachineRun {
    let mut inp = Input::new(data);
    let mut budgets: Vec<Budget> = Vec::new();
    for _ in 0..inp.byte() % 4 {
        let (max, ratio) = (inp.f64(), inp.f64());
        if let Ok(b) = Budget::new(max, ratio) {
            budgets.push(b);
        }
    }
    let mut sims: Vec<Sim> = Vec::new();
    for _ in 0..1 + inp.byte() % 3 {
        let mut policy = staged_policy(&mut inp, &Policy::default()).unwrap_or_default();
        let entropy = inp.u64();
        // Half the machines have a beforeRetry hook (a host flag, not an
        // option: taken from bytes already read, so older seeds replay).
        policy.before_retry = entropy & 1 == 1;
        sims.push(Sim::new(policy, entropy));
    }
    let mut now = 0.0f64;
    let mut inputs = 0;

    while !inp.is_empty() {
        inputs += 1;
        let i = usize::from(inp.byte()) % sims.len();
        let s = &mut sims[i];
        let op = inp.byte();
        match op & 15 {
            0 | 1 => s.execute(&mut inp, op, now),
            kind @ (2..=4) => {
                if let Some((gen, attempt)) = s.settle_target(&mut inp) {
                    if kind == 2 {
                        s.m.attempt_ok(gen, attempt, now, &mut budgets);
                    } else {
                        let abort_error = inp.byte() < 24;
                        s.m.attempt_err(gen, attempt, abort_error, now, &mut budgets);
                    }
                }
            }
            5 | 6 => s.fire(&mut inp, now, &mut budgets),
            7 => s.abort(&mut inp),
            8 | 9 => s.answer(&mut inp, now, &mut budgets),
            10 => s.threw(&mut inp),
            11 => s.m.reset(),
            12 => {
                if let Some(p) = staged_policy(&mut inp, s.m.policy()) {
                    s.set_policy(p);
                }
            }
            13 => s.host_input(inp.byte() % 4, &mut inp, now),
            _ => now = next_clock(&mut inp, now),
        }
        if op >> 4 < 12 {
            s.drain(&mut budgets);
        } else {
            for _ in 0..op >> 4 & 3 {
                if s.pop(&mut budgets).is_none() {
                    break;
                }
            }
        }
        check_budgets(&budgets);
    }

    // Wind down as a host would: answer every question, abort whatever
    // still runs, and pop everything. Every execute() must then have
    // settled exactly once.
    for s in sims.iter_mut() {
        for _ in 0..64 {
            s.drain(&mut budgets);
            if s.open_evals.is_empty() && s.open_gates.is_empty() && !s.m.is_active() {
                break;
            }
            for (gen, _) in std::mem::take(&mut s.open_evals) {
                s.m.provide(gen, Provided::Threw, now, &mut budgets);
            }
            for (gen, attempt) in std::mem::take(&mut s.open_gates) {
                s.m.answer_gate(gen, attempt, Provided::Threw, now);
            }
            s.m.abort(AbortReason::Manual);
        }
        s.drain(&mut budgets);
        assert!(!s.m.is_active(), "a flow survived abort()");
        for gen in 1..=s.m.last_gen() {
            assert!(
                s.finished.contains(&gen),
                "execute() of gen {gen} never settled"
            );
        }
    }
    check_budgets(&budgets);
    let mut total = MachineRun {
        machines: sims.len() as u32,
        budgets: budgets.len() as u32,
        inputs,
        realistic: true,
        ..MachineRun::default()
    };
    for s in &sims {
        let r = s.run;
        total.invokes += r.invokes;
        total.highest_attempt = total.highest_attempt.max(r.highest_attempt);
        total.finishes += r.finishes;
        total.timers += r.timers;
        total.calls += r.calls;
        total.evals += r.evals;
        total.hedges += r.hedges;
        total.cancels += r.cancels;
        total.realistic &= s.realistic;
    }
    total
}

// ----- target 3: retryers sharing a circuit breaker -----

/// The circuits of the breaker target: most retryers share the first.
const BREAKER_KEYS: [&str; 3] = ["", "https://a.example", "https://b.example"];

/// The answers the breaker target's host gives a `breakDuration` function,
/// in turn (0 among them: a probe is let through at once).
const BREAK_ANSWERS: [f64; 5] = [0.0, 1.0, 30.0, 700.0, 5000.0];

/// What one breaker run did, summed over its retryers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BreakerRun {
    pub machines: u32,
    pub inputs: u32,
    pub invokes: u32,
    /// Attempts the breaker let through (their function was called).
    pub permitted: u32,
    /// Attempts it refused (nothing was called).
    pub refused: u32,
    /// Permits granted by a half-open circuit.
    pub probes: u32,
    pub transitions: u32,
    /// Flows that gave up with 'circuit-open'.
    pub circuit_open: u32,
    pub finishes: u32,
    /// Every input was one a real host could send, so the leak checks ran.
    pub realistic: bool,
}

/// A permit held by a running attempt, with what the host knows of it.
#[derive(Clone, Debug)]
struct Held {
    permit: Permit,
    key: &'static str,
    /// A half-open circuit's probe, by id.
    probe: Option<u64>,
    /// The circuit's epoch (as the host counts it) when it was given.
    epoch: u64,
}

/// What the host knows of one circuit.
#[derive(Debug, Default)]
struct Track {
    /// Probes of the current half-open period not recorded or released
    /// yet (any transition ends the period: the breaker no longer counts
    /// the probes given before it).
    out: BTreeSet<u64>,
    /// Probes of the current period that succeeded.
    passed: u32,
    /// The break the circuit last opened for.
    break_ms: f64,
    /// Bumped by every change that makes older permits stale.
    epoch: u64,
}

/// The breaker, shared by every retryer, and its host's bookkeeping.
struct Circuits {
    b: Breaker,
    half_open_calls: usize,
    dynamic: bool,
    next_answer: usize,
    tracks: BTreeMap<&'static str, Track>,
    /// Every opening, `(circuit, epoch)`: a late answer to an older one
    /// must change nothing.
    openings: Vec<(u32, u32)>,
    next_probe: u64,
    /// The clock never went back nor left the finite numbers, so the
    /// hints can be checked.
    sane_clock: bool,
    run: BreakerRun,
}

/// One retryer's side of the breaker: its key, the permits its running
/// attempts hold, the attempts refused.
struct Tap {
    key: &'static str,
    permits: BTreeMap<(u32, u32), Held>,
    /// Refused attempts the machine took as failures.
    refused: BTreeSet<(u32, u32)>,
    /// Its host asks `closed_permit` first, as the engine does, and the
    /// clock only when the circuit is not closed.
    closed_first: bool,
}

/// Breaker settings from fuzz bytes: mostly values in range, sometimes any
/// number; settings `check` refuses are replaced by the defaults.
fn breaker_settings(inp: &mut Input<'_>) -> Settings {
    let tag = inp.byte();
    let mut s = Settings {
        dynamic_break: tag & 2 != 0,
        ..Settings::default()
    };
    if tag & 1 == 0 {
        return s;
    }
    let mut pick = |table: &[f64]| {
        let b = inp.byte();
        if b < 240 {
            table[usize::from(b) % table.len()]
        } else {
            inp.f64()
        }
    };
    s.failure_ratio = pick(&[0.5, 1.0, 0.2, 0.07]);
    s.minimum_throughput = pick(&[1.0, 2.0, 3.0, 10.0]);
    s.sampling_duration = pick(&[1000.0, 30_000.0, 100.0, 1.0]);
    s.consecutive_failures = pick(&[0.0, 1.0, 2.0, 5.0]);
    s.break_duration = pick(&[0.0, 1.0, 50.0, 5000.0]);
    s.half_open_calls = pick(&[1.0, 2.0, 3.0]);
    match s.check() {
        Ok(()) => s,
        Err(_) => Settings {
            dynamic_break: s.dynamic_break,
            ..Settings::default()
        },
    }
}

impl Circuits {
    /// A transition of `key`'s circuit: the half-open period (if any) is
    /// over; an opening gets its break, a dynamic one answered at once.
    fn transition(&mut self, key: &'static str, t: Option<Transition>) {
        let Some(t) = t else {
            return;
        };
        self.run.transitions += 1;
        assert_eq!(self.b.key(t.circuit), key, "{t:?} names another circuit");
        let dynamic = self.dynamic;
        let track = self.tracks.entry(key).or_default();
        track.out.clear();
        track.passed = 0;
        if t.why != Why::BreakEnded {
            track.epoch += 1;
        }
        if t.to == CircuitState::Open {
            track.break_ms = t.break_duration;
            self.openings.push((t.circuit, t.epoch));
            if dynamic {
                let ms = BREAK_ANSWERS[self.next_answer % BREAK_ANSWERS.len()];
                self.next_answer += 1;
                self.b.set_break(t.circuit, t.epoch, ms);
                track.break_ms = ms;
            }
        }
    }

    /// The attempt holding `held` ended at `now`: recorded (`Some(ok)`)
    /// or its permit given back (`None`).
    fn give_back(&mut self, held: Held, outcome: Option<bool>, now: f64) {
        let track = self.tracks.entry(held.key).or_default();
        let stale = held.epoch != track.epoch;
        let current = held.probe.is_some_and(|id| track.out.remove(&id));
        match outcome {
            Some(ok) => {
                let t = self.b.record(held.permit, ok, now);
                if stale {
                    assert_eq!(
                        t, None,
                        "a permit from before the last change moved the circuit"
                    );
                }
                if current && ok && t.is_none() {
                    track.passed += 1;
                }
                self.transition(held.key, t);
            }
            None => self.b.release(held.permit),
        }
    }

    /// Attempt `attempt` of flow `gen` asks for a permit at `now`.
    fn ask(&mut self, tap: &mut Tap, gen: u32, attempt: u32, now: f64) -> Result<(), f64> {
        let key = tap.key;
        let before = self.b.state(key, now);
        let closed = if tap.closed_first {
            self.b.closed_permit(key)
        } else {
            None
        };
        let (answer, t) = match closed {
            Some(p) => {
                assert_eq!(before, CircuitState::Closed, "a permit without the clock");
                (Ok(p), None)
            }
            None => self.b.permit(key, now),
        };
        self.transition(key, t);
        let hoc = self.half_open_calls;
        let sane = self.sane_clock;
        let track = self.tracks.entry(key).or_default();
        match answer {
            Ok(permit) => {
                self.run.permitted += 1;
                // A probe leaves the circuit half-open (the end of a break
                // is taken up to CLOCK_SLACK ms early, so the state read
                // before may still say open).
                let after = self.b.state(key, now);
                let probe = (after == CircuitState::HalfOpen).then(|| {
                    self.next_probe += 1;
                    self.next_probe
                });
                if let Some(id) = probe {
                    self.run.probes += 1;
                    track.out.insert(id);
                    assert!(
                        track.out.len() + track.passed as usize <= hoc,
                        "{} probes out and {} passed, halfOpenCalls {hoc}",
                        track.out.len(),
                        track.passed
                    );
                }
                let held = Held {
                    permit,
                    key,
                    probe,
                    epoch: track.epoch,
                };
                tap.permits.insert((gen, attempt), held);
                Ok(())
            }
            Err(ms) => {
                self.run.refused += 1;
                match before {
                    CircuitState::Isolated => assert_eq!(ms, f64::INFINITY, "isolated"),
                    CircuitState::HalfOpen => {
                        // Refused only with every probe taken.
                        assert_eq!(
                            track.out.len() + track.passed as usize,
                            hoc,
                            "half-open refused with {} probes out, {} passed",
                            track.out.len(),
                            track.passed
                        );
                        assert_eq!(ms, track.break_ms.max(MIN_HALF_OPEN_HINT));
                    }
                    CircuitState::Open if sane => assert!(ms > 0.0 && ms.is_finite(), "{ms}"),
                    CircuitState::Open => {}
                    CircuitState::Closed => panic!("a closed circuit refused"),
                }
                Err(ms)
            }
        }
    }

    /// Pops one effect of `s` and carries it out against the breaker.
    fn pop(
        &mut self,
        s: &mut Sim,
        tap: &mut Tap,
        now: f64,
        budgets: &mut Vec<Budget>,
    ) -> Option<Effect> {
        let e = s.pop(budgets)?;
        match e {
            Effect::Invoke { gen, attempt } => {
                self.run.invokes += 1;
                if let Err(ms) = self.ask(tap, gen, attempt, now) {
                    // Nothing was called: nothing to settle, nothing the
                    // machine owns. (An `Invoke` popped late, once its
                    // flow moved on without it, may be refused too: the
                    // machine ignores that refusal, and may still cancel
                    // or time out the attempt it let go of.)
                    s.open_attempts.retain(|&a| a != (gen, attempt));
                    s.owned.remove(&(gen, attempt));
                    if s.m.is_running(gen, attempt) {
                        tap.refused.insert((gen, attempt));
                    }
                    s.m.attempt_refused(gen, attempt, ms, now, budgets);
                    assert!(!s.m.is_running(gen, attempt), "a refused attempt runs");
                }
            }
            Effect::TimeOut { gen, attempt } | Effect::CancelAttempt { gen, attempt } => {
                assert!(
                    !tap.refused.contains(&(gen, attempt)),
                    "{e:?} of a refused attempt"
                );
                if let Some(held) = tap.permits.remove(&(gen, attempt)) {
                    let timed_out = matches!(e, Effect::TimeOut { .. });
                    self.give_back(held, timed_out.then_some(false), now);
                }
            }
            Effect::AbortAttempt { gen, attempt, .. } => {
                if let Some(held) = tap.permits.remove(&(gen, attempt)) {
                    self.give_back(held, None, now);
                }
            }
            Effect::Call {
                gen,
                cb: Cb::GiveUp,
                arg,
            } if arg == GiveUp::CircuitOpen as u32 => {
                self.run.circuit_open += 1;
                assert!(
                    tap.refused.iter().any(|&(g, _)| g == gen),
                    "gen {gen} gave up with 'circuit-open' without a refusal"
                );
            }
            Effect::Finish { gen, .. } if s.realistic => {
                let left: Vec<_> = tap.permits.keys().filter(|(g, _)| *g == gen).collect();
                assert!(
                    left.is_empty(),
                    "gen {gen} finished holding permits {left:?}"
                );
            }
            _ => {}
        }
        Some(e)
    }

    /// Pops everything; more than [`MAX_EFFECTS_PER_INPUT`] is a runaway.
    fn drain(&mut self, s: &mut Sim, tap: &mut Tap, now: f64, budgets: &mut Vec<Budget>) {
        for _ in 0..MAX_EFFECTS_PER_INPUT {
            if self.pop(s, tap, now, budgets).is_none() {
                s.check_idle();
                return;
            }
        }
        panic!("runaway: over {MAX_EFFECTS_PER_INPUT} effects from one input");
    }
}

/// Target 3: retryers sharing a circuit breaker (and budgets), driven as
/// the engine drives them: at each `Invoke` the host asks for a permit and
/// calls nothing without one, feeding the refusal back at once; a settled
/// attempt's outcome is recorded, a `TimeOut` is a failure, an
/// `AbortAttempt` or `CancelAttempt` gives the permit back.
///
/// The header: the breaker settings (a tag byte whose bit 0 says six
/// values follow and bit 1 that `breakDuration` is a function: see
/// `breaker_settings`), up to 2 budgets, then 1 to 4 retryers, each a
/// staged policy and its entropy as in the machine target; the entropy
/// also picks the retryer's key (bits 1-2) and whether its host asks
/// `closed_permit` first (bit 3). Inputs are the machine target's, with
/// three of its own: op 10 isolates a circuit, op 11 resets one (a
/// retryer's callback throwing and its `reset()` are left to the machine
/// target), and op 13 with its argument at 1 or 2 (mod 4) reads every
/// circuit (`state`, `look`) or answers an older opening's
/// `breakDuration` late.
///
/// The rules, besides the machine target's: no panic; a half-open circuit
/// never has more than halfOpenCalls probes out (nor granted in all), and
/// refuses only when they are; a refusal's hint is Infinity when isolated,
/// the break (at least 1 ms) when half-open, and positive when open;
/// a refused attempt is never timed out nor cancelled; the outcome of a
/// permit from before the circuit last changed changes nothing, and so
/// does a late `breakDuration` answer; 'circuit-open' only for a flow with
/// a refusal; when every flow finished, every permit was given back, and
/// a half-open circuit still has each probe not yet passed to give.
pub fn run_breaker(data: &[u8]) -> BreakerRun {
    let mut inp = Input::new(data);
    let settings = breaker_settings(&mut inp);
    let mut budgets: Vec<Budget> = Vec::new();
    for _ in 0..inp.byte() % 3 {
        let (max, ratio) = (inp.f64(), inp.f64());
        if let Ok(b) = Budget::new(max, ratio) {
            budgets.push(b);
        }
    }
    let mut sims: Vec<Sim> = Vec::new();
    let mut taps: Vec<Tap> = Vec::new();
    for _ in 0..1 + inp.byte() % 4 {
        let mut policy = staged_policy(&mut inp, &Policy::default()).unwrap_or_default();
        let entropy = inp.u64();
        policy.before_retry = entropy & 1 == 1;
        policy.breaker = true;
        let mut sim = Sim::new(policy, entropy);
        sim.breaker = true;
        sims.push(sim);
        // Half the retryers on the shared circuit.
        let key = match entropy >> 1 & 3 {
            0 | 1 => BREAKER_KEYS[0],
            k => BREAKER_KEYS[k as usize - 1],
        };
        taps.push(Tap {
            key,
            permits: BTreeMap::new(),
            refused: BTreeSet::new(),
            closed_first: entropy >> 3 & 1 == 1,
        });
    }
    let mut c = Circuits {
        half_open_calls: settings.half_open_calls as usize,
        dynamic: settings.dynamic_break,
        b: Breaker::new(settings),
        next_answer: 0,
        tracks: BTreeMap::new(),
        openings: Vec::new(),
        next_probe: 0,
        sane_clock: true,
        run: BreakerRun::default(),
    };
    let mut now = 0.0f64;
    let mut inputs = 0;

    while !inp.is_empty() {
        inputs += 1;
        let i = usize::from(inp.byte()) % sims.len();
        let (s, tap) = (&mut sims[i], &mut taps[i]);
        let op = inp.byte();
        match op & 15 {
            0 | 1 => s.execute(&mut inp, op, now),
            kind @ (2..=4) => {
                if let Some((gen, attempt)) = s.settle_target(&mut inp) {
                    let abort_error = kind != 2 && inp.byte() < 24;
                    if let Some(held) = tap.permits.remove(&(gen, attempt)) {
                        let outcome = (!abort_error).then_some(kind == 2);
                        c.give_back(held, outcome, now);
                    }
                    if kind == 2 {
                        s.m.attempt_ok(gen, attempt, now, &mut budgets);
                    } else {
                        s.m.attempt_err(gen, attempt, abort_error, now, &mut budgets);
                    }
                }
            }
            5 | 6 => s.fire(&mut inp, now, &mut budgets),
            7 => s.abort(&mut inp),
            8 | 9 => s.answer(&mut inp, now, &mut budgets),
            10 => {
                let key = BREAKER_KEYS[usize::from(inp.byte()) % BREAKER_KEYS.len()];
                let t = c.b.isolate(key, now);
                c.transition(key, t);
            }
            11 => {
                let key = BREAKER_KEYS[usize::from(inp.byte()) % BREAKER_KEYS.len()];
                let t = c.b.reset(key, now);
                let was_closed = t.is_none();
                c.transition(key, t);
                if was_closed {
                    // Closed already: its permits are stale all the same.
                    let track = c.tracks.entry(key).or_default();
                    track.epoch += 1;
                }
            }
            12 => {
                // Staged over the policy in force: the hook and the
                // breaker stay.
                if let Some(p) = staged_policy(&mut inp, s.m.policy()) {
                    s.set_policy(p);
                }
            }
            13 => match inp.byte() % 4 {
                1 if c.sane_clock => {
                    for k in 0..c.b.len() as u32 {
                        let (state, calls, failures, retry_after) =
                            c.b.look(k, now).expect("a circuit listed");
                        assert_eq!(state, c.b.state(c.b.key(k), now), "look and state differ");
                        assert!(failures <= calls, "{failures} failures of {calls} calls");
                        assert_eq!(
                            retry_after == f64::INFINITY,
                            state == CircuitState::Isolated,
                            "retryAfter {retry_after} when {state:?}"
                        );
                    }
                }
                2 => {
                    // A late answer to an older opening: nothing changes.
                    let k = usize::from(inp.byte());
                    let latest: BTreeMap<u32, u32> = c.openings.iter().copied().collect();
                    let stale: Vec<(u32, u32)> = c
                        .openings
                        .iter()
                        .copied()
                        .filter(|&(circuit, epoch)| latest.get(&circuit) != Some(&epoch))
                        .collect();
                    if let Some(&(circuit, epoch)) = stale.get(k % stale.len().max(1)) {
                        let before = format!("{:?}", c.b);
                        c.b.set_break(circuit, epoch, BREAK_ANSWERS[k % BREAK_ANSWERS.len()]);
                        assert_eq!(
                            format!("{:?}", c.b),
                            before,
                            "a late answer changed the breaker"
                        );
                    }
                }
                1 => {}
                which => s.host_input(which, &mut inp, now),
            },
            _ => {
                let next = next_clock(&mut inp, now);
                if !(next.is_finite() && next >= now) {
                    c.sane_clock = false;
                }
                now = next;
            }
        }
        if op >> 4 < 12 {
            c.drain(s, tap, now, &mut budgets);
        } else {
            for _ in 0..op >> 4 & 3 {
                if c.pop(s, tap, now, &mut budgets).is_none() {
                    break;
                }
            }
        }
        check_budgets(&budgets);
    }

    // Wind down as a host would, then every flow has settled, and (for a
    // host that only sent what a real one could) every permit is back.
    for (s, tap) in sims.iter_mut().zip(taps.iter_mut()) {
        for _ in 0..64 {
            c.drain(s, tap, now, &mut budgets);
            if s.open_evals.is_empty() && s.open_gates.is_empty() && !s.m.is_active() {
                break;
            }
            for (gen, _) in std::mem::take(&mut s.open_evals) {
                s.m.provide(gen, Provided::Threw, now, &mut budgets);
            }
            for (gen, attempt) in std::mem::take(&mut s.open_gates) {
                s.m.answer_gate(gen, attempt, Provided::Threw, now);
            }
            s.m.abort(AbortReason::Manual);
        }
        c.drain(s, tap, now, &mut budgets);
        assert!(!s.m.is_active(), "a flow survived abort()");
        for gen in 1..=s.m.last_gen() {
            assert!(
                s.finished.contains(&gen),
                "execute() of gen {gen} never settled"
            );
        }
    }
    let realistic = sims.iter().all(|s| s.realistic);
    if realistic {
        for tap in &taps {
            assert!(
                tap.permits.is_empty(),
                "permits never given back: {:?}",
                tap.permits
            );
        }
        // No probe is still counted as running.
        let hoc = c.half_open_calls;
        for (&key, track) in &c.tracks {
            if c.b.state(key, now) != CircuitState::HalfOpen {
                continue;
            }
            let mut b = c.b.clone();
            let (first, t) = b.permit(key, now);
            let expected = if t.is_some() {
                hoc
            } else {
                hoc - track.passed as usize
            };
            let mut granted = usize::from(first.is_ok());
            for _ in 0..hoc {
                granted += usize::from(b.permit(key, now).0.is_ok());
            }
            assert_eq!(
                granted, expected,
                "circuit {key:?} has {granted} probes to give"
            );
        }
    }
    check_budgets(&budgets);
    BreakerRun {
        machines: sims.len() as u32,
        inputs,
        finishes: sims.iter().map(|s| s.run.finishes).sum(),
        realistic,
        ..c.run
    }
}
