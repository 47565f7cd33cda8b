//! The circuit breaker (SPEC §2e): one circuit per key, each deciding on
//! the host's clock whether an attempt may go, and what its outcome does.
//!
//! Nothing here owns a timer. A circuit changes state only when an attempt
//! asks for a permit ([`Breaker::permit`]), when a permitted attempt ends
//! ([`Breaker::record`], [`Breaker::release`]) or when the host calls
//! [`Breaker::isolate`] or [`Breaker::reset`]; an open circuit whose break
//! has ended is only *read* as half-open until an attempt asks.
//!
//! Every permit carries the circuit's epoch, which moves on each time the
//! circuit opens, closes after its probes or is reset, so the outcome of an
//! attempt permitted before changes nothing, whenever it arrives (§2e rule 6).

use alloc::string::String;
use alloc::vec::Vec;

/// Default `failureRatio`.
pub const DEFAULT_FAILURE_RATIO: f64 = 0.5;
/// Default `minimumThroughput`.
pub const DEFAULT_MINIMUM_THROUGHPUT: f64 = 10.0;
/// Default `samplingDuration`, ms.
pub const DEFAULT_SAMPLING_DURATION: f64 = 30_000.0;
/// Default `breakDuration`, ms.
pub const DEFAULT_BREAK_DURATION: f64 = 5_000.0;
/// Default `halfOpenCalls`.
pub const DEFAULT_HALF_OPEN_CALLS: f64 = 1.0;
/// The window is this many buckets of `samplingDuration / BUCKETS` ms.
pub const BUCKETS: usize = 10;
/// An attempt that asks this close to the end of a break (ms) counts as
/// after it: a host timer set for the refusal's `retryAfter` can fire up to
/// a millisecond before the wall clock reaches the time it was set for
/// (Node's timers run on a monotonic clock), and that attempt would be
/// refused again, 1 ms early.
pub const CLOCK_SLACK: f64 = 1.0;
/// The least hint, ms, of a half-open circuit whose probes are all out
/// (otherwise its break duration).
pub const MIN_HALF_OPEN_HINT: f64 = 1.0;
/// How many circuits a breaker holds before a new key takes the place of
/// an idle one: no attempt running, nothing in its window, and closed or
/// quiet for a whole window since its last break ended (not isolated). A
/// breaker behind `retryFetch` in a server that calls unbounded origins
/// (webhooks, say) would otherwise keep a circuit for every origin it ever
/// called, the dead ones too, and look each attempt's key up among them
/// all. An idle circuit reads as a key never seen but for a failure streak
/// (`consecutiveFailures`) or a break that ended long ago, forgotten with
/// it.
pub const KEPT_CIRCUITS: usize = 64;

/// A circuit's state, as `state()` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CircuitState {
    Closed = 0,
    Open = 1,
    HalfOpen = 2,
    Isolated = 3,
}

impl CircuitState {
    /// The name JavaScript sees.
    pub const fn name(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half-open",
            CircuitState::Isolated => "isolated",
        }
    }
}

/// Why a circuit changed state (`onStateChange`'s `reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Why {
    Tripped = 0,
    BreakEnded = 1,
    ProbeFailed = 2,
    ProbeSucceeded = 3,
    Isolated = 4,
    Reset = 5,
}

impl Why {
    /// The name JavaScript sees.
    pub const fn name(self) -> &'static str {
        match self {
            Why::Tripped => "tripped",
            Why::BreakEnded => "break-ended",
            Why::ProbeFailed => "probe-failed",
            Why::ProbeSucceeded => "probe-succeeded",
            Why::Isolated => "isolated",
            Why::Reset => "reset",
        }
    }
}

/// A breaker's settings, validated by [`Settings::check`].
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `failureRatio` (0 < r <= 1, default 0.5).
    pub failure_ratio: f64,
    /// `minimumThroughput` (an integer >= 1, default 10).
    pub minimum_throughput: f64,
    /// `samplingDuration`, ms (finite, > 0, default 30,000).
    pub sampling_duration: f64,
    /// `consecutiveFailures` (an integer >= 1), or 0 when not set.
    pub consecutive_failures: f64,
    /// `breakDuration`, ms (finite, >= 0, default 5,000); when the option
    /// is a function, what an opening uses until the host set its answer.
    pub break_duration: f64,
    /// `breakDuration` is a function the host asks at each opening.
    pub dynamic_break: bool,
    /// `halfOpenCalls` (an integer >= 1, default 1).
    pub half_open_calls: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            failure_ratio: DEFAULT_FAILURE_RATIO,
            minimum_throughput: DEFAULT_MINIMUM_THROUGHPUT,
            sampling_duration: DEFAULT_SAMPLING_DURATION,
            consecutive_failures: 0.0,
            break_duration: DEFAULT_BREAK_DURATION,
            dynamic_break: false,
            half_open_calls: DEFAULT_HALF_OPEN_CALLS,
        }
    }
}

/// The option a value was refused for, and whether it was the wrong kind
/// of number (`Range`) rather than no number at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingError {
    FailureRatio,
    MinimumThroughput,
    SamplingDuration,
    ConsecutiveFailures,
    BreakDuration,
    HalfOpenCalls,
}

/// The numeric options, in the order [`Settings::set`] takes them.
pub const SETTINGS: [SettingError; 6] = [
    SettingError::FailureRatio,
    SettingError::MinimumThroughput,
    SettingError::SamplingDuration,
    SettingError::ConsecutiveFailures,
    SettingError::BreakDuration,
    SettingError::HalfOpenCalls,
];

impl SettingError {
    /// The option's name.
    pub const fn name(self) -> &'static str {
        match self {
            SettingError::FailureRatio => "failureRatio",
            SettingError::MinimumThroughput => "minimumThroughput",
            SettingError::SamplingDuration => "samplingDuration",
            SettingError::ConsecutiveFailures => "consecutiveFailures",
            SettingError::BreakDuration => "breakDuration",
            SettingError::HalfOpenCalls => "halfOpenCalls",
        }
    }

    /// What the option must be.
    pub const fn expected(self) -> &'static str {
        match self {
            SettingError::FailureRatio => "a number > 0 and <= 1",
            SettingError::SamplingDuration => "a finite number > 0",
            SettingError::BreakDuration => "a finite number >= 0 or a function",
            _ => "an integer >= 1",
        }
    }
}

fn count(v: f64) -> bool {
    v >= 1.0 && v <= u32::MAX as f64 && libm::floor(v) == v
}

impl Settings {
    /// Sets option `which` to `v` (checked later, by [`Settings::check`]).
    pub fn set(&mut self, which: SettingError, v: f64) {
        let slot = match which {
            SettingError::FailureRatio => &mut self.failure_ratio,
            SettingError::MinimumThroughput => &mut self.minimum_throughput,
            SettingError::SamplingDuration => &mut self.sampling_duration,
            SettingError::ConsecutiveFailures => &mut self.consecutive_failures,
            SettingError::BreakDuration => &mut self.break_duration,
            SettingError::HalfOpenCalls => &mut self.half_open_calls,
        };
        // 0 is how `consecutive_failures` says "not set": a 0 given must
        // still be refused.
        *slot = if which == SettingError::ConsecutiveFailures && v == 0.0 {
            f64::NAN
        } else {
            v
        };
    }

    /// The first setting out of range, if any.
    pub fn check(&self) -> Result<(), SettingError> {
        let s = self;
        if !(s.failure_ratio > 0.0 && s.failure_ratio <= 1.0) {
            return Err(SettingError::FailureRatio);
        }
        if !count(s.minimum_throughput) {
            return Err(SettingError::MinimumThroughput);
        }
        if !(s.sampling_duration.is_finite() && s.sampling_duration > 0.0) {
            return Err(SettingError::SamplingDuration);
        }
        if s.consecutive_failures != 0.0 && !count(s.consecutive_failures) {
            return Err(SettingError::ConsecutiveFailures);
        }
        if !(s.break_duration.is_finite() && s.break_duration >= 0.0) {
            return Err(SettingError::BreakDuration);
        }
        if !count(s.half_open_calls) {
            return Err(SettingError::HalfOpenCalls);
        }
        Ok(())
    }
}

/// What an attempt holds while it runs: which circuit let it go, when,
/// and whether it is one of a half-open circuit's probes. Not `Copy`:
/// [`Breaker::record`] and [`Breaker::release`] take it, so each permit
/// ends once (a circuit counts the permits out to know when a new key may
/// take its place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permit {
    circuit: u32,
    epoch: u32,
    probe: bool,
}

/// A state change, for the host to publish (`onStateChange`, the
/// `retry-wasm:breaker` channel, the metric).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transition {
    /// The circuit, as [`Breaker::key`] names it.
    pub circuit: u32,
    pub from: CircuitState,
    pub to: CircuitState,
    pub why: Why,
    /// The window as it was when the circuit changed.
    pub failures: u32,
    pub calls: u32,
    /// How many probes failed in a row before this opening (0 the first
    /// time): `breakDuration`'s `halfOpenAttempts`.
    pub half_open_attempts: u32,
    /// The break the circuit opened for, ms (0 unless it opened).
    pub break_duration: f64,
    /// The epoch the circuit moved to: [`Breaker::set_break`] takes it, so
    /// a late answer for an older opening changes nothing.
    pub epoch: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Bucket {
    /// Which `samplingDuration / 10` slice of time it counts (whole
    /// slices since the epoch: integer arithmetic, no `fmod` in the module).
    slice: u64,
    calls: u32,
    failures: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Closed,
    /// Refuses until `until`; then the next attempt that asks is a probe.
    Open {
        until: f64,
    },
    /// `running` probes out, `passed` succeeded.
    HalfOpen {
        running: u32,
        passed: u32,
    },
    Isolated,
}

impl Phase {
    /// The state as it is, before the clock is looked at.
    fn state(self) -> CircuitState {
        match self {
            Phase::Closed => CircuitState::Closed,
            Phase::Open { .. } => CircuitState::Open,
            Phase::HalfOpen { .. } => CircuitState::HalfOpen,
            Phase::Isolated => CircuitState::Isolated,
        }
    }
}

#[derive(Clone, Debug)]
struct Circuit {
    key: String,
    phase: Phase,
    buckets: [Bucket; BUCKETS],
    in_a_row: u32,
    half_open_attempts: u32,
    epoch: u32,
    break_ms: f64,
    opened_at: f64,
    /// Permits given and not yet recorded or released, of any epoch: a
    /// circuit with one out keeps its place.
    out: u32,
}

impl Circuit {
    fn new(key: &str) -> Circuit {
        Circuit {
            key: String::from(key),
            phase: Phase::Closed,
            buckets: [Bucket::default(); BUCKETS],
            in_a_row: 0,
            half_open_attempts: 0,
            epoch: 0,
            break_ms: 0.0,
            opened_at: 0.0,
            out: 0,
        }
    }

    /// Whether a new key may take its place at `now` (in window slice
    /// `slice`, of a window of `sampling` ms): no attempt holds a permit
    /// from it, nothing is in its window, and it is closed, or open or
    /// half-open with its last break ended a whole window ago.
    fn idle(&self, slice: u64, now: f64, sampling: f64) -> bool {
        let quiet = match self.phase {
            Phase::Closed => true,
            Phase::Open { .. } | Phase::HalfOpen { .. } => {
                now >= self.opened_at + self.break_ms + sampling
            }
            Phase::Isolated => false,
        };
        quiet && self.out == 0 && self.window(slice) == (0, 0)
    }

    /// The state as `state()` reports it at `now`: an open circuit whose
    /// break has ended reads half-open.
    fn state(&self, now: f64) -> CircuitState {
        match self.phase {
            Phase::Open { until } if now >= until => CircuitState::HalfOpen,
            p => p.state(),
        }
    }

    /// Calls and failures in the window that ends in `slice`.
    fn window(&self, slice: u64) -> (u32, u32) {
        let (mut calls, mut failures) = (0u32, 0u32);
        for b in &self.buckets {
            if slice.wrapping_sub(b.slice) < BUCKETS as u64 {
                calls = calls.saturating_add(b.calls);
                failures = failures.saturating_add(b.failures);
            }
        }
        (calls, failures)
    }
}

/// The circuits of one `CircuitBreaker`.
#[derive(Clone, Debug)]
pub struct Breaker {
    settings: Settings,
    circuits: Vec<Circuit>,
}

impl Breaker {
    /// A breaker with validated `settings` and no circuit yet.
    pub fn new(settings: Settings) -> Breaker {
        Breaker {
            settings,
            circuits: Vec::new(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The window slice `now` falls in.
    fn slice(&self, now: f64) -> u64 {
        // `as` saturates: a clock before 1970 counts in slice 0.
        (now / (self.settings.sampling_duration / BUCKETS as f64)) as u64
    }

    /// The index of the circuit for `key`, if it has one.
    fn find(&self, key: &str) -> Option<usize> {
        self.circuits.iter().position(|c| c.key == key)
    }

    /// The index of the circuit for `key`, made when first asked for at
    /// `now`: past [`KEPT_CIRCUITS`], in the place of an idle circuit if
    /// there is one.
    fn index(&mut self, key: &str, now: f64) -> usize {
        if let Some(i) = self.find(key) {
            return i;
        }
        let mut fresh = Circuit::new(key);
        if self.circuits.len() >= KEPT_CIRCUITS {
            let (slice, sampling) = (self.slice(now), self.settings.sampling_duration);
            let idle = |c: &Circuit| c.idle(slice, now, sampling);
            if let Some(i) = self.circuits.iter().position(idle) {
                if let Some(c) = self.circuits.get_mut(i) {
                    // A new epoch: should a permit of the old key ever come
                    // back, it counts for nothing here.
                    fresh.epoch = c.epoch.wrapping_add(1);
                    *c = fresh;
                }
                return i;
            }
        }
        self.circuits.push(fresh);
        self.circuits.len() - 1
    }

    /// How many circuits (keys) it holds.
    pub fn len(&self) -> usize {
        self.circuits.len()
    }

    /// Whether it holds no circuit yet.
    pub fn is_empty(&self) -> bool {
        self.circuits.is_empty()
    }

    /// The key of circuit `i` (the `circuit` of a [`Transition`]).
    pub fn key(&self, i: u32) -> &str {
        self.circuits.get(i as usize).map_or("", |c| c.key.as_str())
    }

    /// `state(key)` at `now`, without taking a probe.
    pub fn state(&self, key: &str, now: f64) -> CircuitState {
        let c = self.find(key).and_then(|i| self.circuits.get(i));
        c.map_or(CircuitState::Closed, |c| c.state(now))
    }

    /// Circuit `i` at `now`: its state, calls and failures in the window,
    /// and ms until it may let a probe through (`Infinity` isolated, 0
    /// unless open) — what `snapshot()` lists per key.
    pub fn look(&self, i: u32, now: f64) -> Option<(CircuitState, u32, u32, f64)> {
        let c = self.circuits.get(i as usize)?;
        let (calls, failures) = c.window(self.slice(now));
        let retry_after = match c.phase {
            Phase::Open { until } => (until - now).max(0.0),
            Phase::Isolated => f64::INFINITY,
            _ => 0.0,
        };
        Some((c.state(now), calls, failures, retry_after))
    }

    /// A permit for an attempt for `key`, when it has a circuit and that
    /// circuit is closed: the one answer that needs no clock, so a host
    /// asks this first and reads its clock only otherwise
    /// ([`Breaker::permit`], which makes the circuit of a new key).
    pub fn closed_permit(&mut self, key: &str) -> Option<Permit> {
        let i = self.find(key)?;
        let c = self.circuits.get_mut(i)?;
        if c.phase != Phase::Closed {
            return None;
        }
        c.out += 1;
        Some(Permit {
            circuit: i as u32,
            epoch: c.epoch,
            probe: false,
        })
    }

    /// An attempt for `key` asks to go at `now` (§2e rule 1): a permit, or
    /// the ms until the circuit may let one through (`Infinity` while
    /// isolated). An open circuit whose break has ended turns half-open,
    /// and this attempt is its first probe: that transition comes back too.
    pub fn permit(&mut self, key: &str, now: f64) -> (Result<Permit, f64>, Option<Transition>) {
        let i = self.index(key, now);
        let mut change = None;
        let ended = |until: f64| now + CLOCK_SLACK >= until;
        if matches!(self.circuits.get(i).map(|c| c.phase), Some(Phase::Open { until }) if ended(until))
        {
            change = Some(self.change(i, Why::BreakEnded, now));
        }
        let probes = self.settings.half_open_calls;
        let Some(c) = self.circuits.get_mut(i) else {
            return (Err(f64::INFINITY), change);
        };
        let out = match &mut c.phase {
            Phase::Closed => Ok(false),
            Phase::HalfOpen { running, passed } if f64::from(*running + *passed) < probes => {
                *running += 1;
                Ok(true)
            }
            // Refused until a probe ends, which is never within the same
            // tick: a hint of 0 (`breakDuration` 0) would have the flow ask
            // again at once and be refused again, without end when
            // `maxAttempts` is Infinity.
            Phase::HalfOpen { .. } => Err(c.break_ms.max(MIN_HALF_OPEN_HINT)),
            Phase::Open { until } => Err(*until - now),
            Phase::Isolated => Err(f64::INFINITY),
        };
        let permit = out.map(|probe| {
            c.out += 1;
            Permit {
                circuit: i as u32,
                epoch: c.epoch,
                probe,
            }
        });
        (permit, change)
    }

    /// The attempt holding `permit` ended at `now`, a success when `ok`
    /// (§2e rules 4-6). A failure may open the circuit (`'tripped'` or
    /// `'probe-failed'`), the last probe's success closes it.
    pub fn record(&mut self, permit: Permit, ok: bool, now: f64) -> Option<Transition> {
        let slice = self.slice(now);
        let s = &self.settings;
        let c = self.circuits.get_mut(permit.circuit as usize)?;
        c.out = c.out.saturating_sub(1);
        if c.epoch != permit.epoch {
            return None;
        }
        let why = match (&mut c.phase, permit.probe) {
            (Phase::Closed, false) => {
                let b = c.buckets.get_mut((slice % BUCKETS as u64) as usize)?;
                if b.slice != slice {
                    *b = Bucket {
                        slice,
                        ..Bucket::default()
                    };
                }
                b.calls = b.calls.saturating_add(1);
                if ok {
                    c.in_a_row = 0;
                    return None;
                }
                b.failures = b.failures.saturating_add(1);
                c.in_a_row = c.in_a_row.saturating_add(1);
                let (calls, failures) = c.window(slice);
                let by_ratio = f64::from(calls) >= s.minimum_throughput
                    // failures / calls, as SPEC §2e words it and as
                    // JavaScript computes it: `ratio * calls` can round
                    // above a whole count (0.07 * 100 is 7.000000000000001,
                    // and 7 failures in 100 calls would not trip at 0.07).
                    // `calls` is at least minimumThroughput >= 1 here.
                    && f64::from(failures) / f64::from(calls) >= s.failure_ratio;
                let by_run = s.consecutive_failures >= 1.0
                    && f64::from(c.in_a_row) >= s.consecutive_failures;
                if !(by_ratio || by_run) {
                    return None;
                }
                Why::Tripped
            }
            (Phase::HalfOpen { .. }, true) if !ok => {
                c.half_open_attempts = c.half_open_attempts.saturating_add(1);
                Why::ProbeFailed
            }
            (Phase::HalfOpen { running, passed }, true) => {
                *running = running.saturating_sub(1);
                *passed += 1;
                if f64::from(*passed) < s.half_open_calls {
                    return None;
                }
                Why::ProbeSucceeded
            }
            _ => return None,
        };
        Some(self.change(permit.circuit as usize, why, now))
    }

    /// The attempt holding `permit` ended without an outcome for the
    /// circuit (cancelled, or a hedged attempt that lost): a probe's
    /// permit goes back to the half-open circuit.
    pub fn release(&mut self, permit: Permit) {
        if let Some(c) = self.circuits.get_mut(permit.circuit as usize) {
            c.out = c.out.saturating_sub(1);
            if let (Phase::HalfOpen { running, .. }, true) =
                (&mut c.phase, permit.probe && c.epoch == permit.epoch)
            {
                *running = running.saturating_sub(1);
            }
        }
    }

    /// `isolate(key)`: held open until `reset(key)`. `None` when it was
    /// isolated already.
    pub fn isolate(&mut self, key: &str, now: f64) -> Option<Transition> {
        let i = self.index(key, now);
        let isolated = self.circuits.get(i)?.phase == Phase::Isolated;
        (!isolated).then(|| self.change(i, Why::Isolated, now))
    }

    /// `reset(key)`: closed, with an empty window. `None` when it was
    /// closed already (its window is emptied all the same).
    pub fn reset(&mut self, key: &str, now: f64) -> Option<Transition> {
        let i = self.index(key, now);
        let closed = self.circuits.get(i)?.phase == Phase::Closed;
        let t = self.change(i, Why::Reset, now);
        (!closed).then_some(t)
    }

    /// The host's answer to a dynamic `breakDuration` for the opening at
    /// `epoch` of circuit `circuit`: the break ends `ms` after it opened.
    pub fn set_break(&mut self, circuit: u32, epoch: u32, ms: f64) {
        if let Some(c) = self.circuits.get_mut(circuit as usize) {
            if let (Phase::Open { until }, true) = (&mut c.phase, c.epoch == epoch) {
                c.break_ms = ms;
                *until = c.opened_at + ms;
            }
        }
    }

    /// Circuit `i` changes for `why` at `now`; what changed, to tell.
    /// Every change but the end of a break starts a new epoch: the
    /// permits given before it count for nothing (§2e rule 6).
    fn change(&mut self, i: usize, why: Why, now: f64) -> Transition {
        let ms = self.settings.break_duration;
        let slice = self.slice(now);
        let Some(c) = self.circuits.get_mut(i) else {
            return Transition {
                circuit: i as u32,
                from: CircuitState::Closed,
                to: CircuitState::Closed,
                why,
                failures: 0,
                calls: 0,
                half_open_attempts: 0,
                break_duration: 0.0,
                epoch: 0,
            };
        };
        // As `state()` reads it: an open circuit whose break has ended is
        // half-open to whoever isolates or resets it (only the end of the
        // break itself goes from 'open').
        let from = match why {
            Why::BreakEnded => c.phase.state(),
            _ => c.state(now),
        };
        let (calls, failures) = c.window(slice);
        c.phase = match why {
            Why::Tripped | Why::ProbeFailed => {
                c.opened_at = now;
                c.break_ms = ms;
                Phase::Open { until: now + ms }
            }
            Why::BreakEnded => Phase::HalfOpen {
                running: 0,
                passed: 0,
            },
            Why::ProbeSucceeded | Why::Reset => {
                c.half_open_attempts = 0;
                c.in_a_row = 0;
                c.buckets = [Bucket::default(); BUCKETS];
                Phase::Closed
            }
            Why::Isolated => Phase::Isolated,
        };
        if why != Why::BreakEnded {
            c.epoch = c.epoch.wrapping_add(1);
        }
        let to = c.phase.state();
        Transition {
            circuit: i as u32,
            from,
            to,
            why,
            failures,
            calls,
            half_open_attempts: c.half_open_attempts,
            break_duration: if to == CircuitState::Open { ms } else { 0.0 },
            epoch: c.epoch,
        }
    }
}
