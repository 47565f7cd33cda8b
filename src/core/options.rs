//! Raw option values in, a validated [`Policy`] out. Defaults live here and
//! nowhere else.
//!
//! The host (the wasm layer) classifies each JavaScript value it reads into
//! a [`Raw`] (it can see types; the core cannot) and hands it over with the
//! [`Opt`] it names. Every decision about what is acceptable is made here.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::backoff::{Backoff, Jitter};

/// Default `maxAttempts` (total attempts including the first).
pub const DEFAULT_MAX_ATTEMPTS: f64 = 3.0;
/// Default `baseWait` in ms.
pub const DEFAULT_BASE_WAIT: f64 = 1000.0;
/// Default `maxWait` in ms (no cap).
pub const DEFAULT_MAX_WAIT: f64 = f64::INFINITY;
/// Default `jitter` fraction (none).
pub const DEFAULT_JITTER: f64 = 0.0;
/// Default `maxExecutionTime` in ms (no per-attempt deadline).
pub const DEFAULT_MAX_EXECUTION_TIME: f64 = f64::INFINITY;
/// Default `maxTotalExecutionTime` in ms (no overall deadline).
pub const DEFAULT_MAX_TOTAL_EXECUTION_TIME: f64 = f64::INFINITY;
/// Default `multiplier` of exponential backoff.
pub const DEFAULT_MULTIPLIER: f64 = 2.0;

/// The options a retryer takes. The discriminant is the option's index in
/// [`ALL_OPTS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Opt {
    MaxAttempts = 0,
    Backoff,
    BaseWait,
    MaxWait,
    Jitter,
    MaxExecutionTime,
    MaxTotalExecutionTime,
    ThrowOnError,
    Enabled,
    InitialState,
    Key,
    OnRetry,
    OnError,
    OnLastError,
    OnSuccess,
    OnSettled,
    OnAbort,
    OnExecutionTimeout,
    OnTotalExecutionTimeout,
    ShouldRetry,
    OnGiveUp,
    RetryAfter,
    Intervals,
    Multiplier,
    Signal,
    Budget,
    Seed,
    RetryOnExecutionTimeout,
    Nested,
    InnerRetries,
    OnBackoff,
    Hedge,
    OnHedge,
    Breaker,
}

/// Every option, in discriminant order.
pub const ALL_OPTS: [Opt; 34] = [
    Opt::MaxAttempts,
    Opt::Backoff,
    Opt::BaseWait,
    Opt::MaxWait,
    Opt::Jitter,
    Opt::MaxExecutionTime,
    Opt::MaxTotalExecutionTime,
    Opt::ThrowOnError,
    Opt::Enabled,
    Opt::InitialState,
    Opt::Key,
    Opt::OnRetry,
    Opt::OnError,
    Opt::OnLastError,
    Opt::OnSuccess,
    Opt::OnSettled,
    Opt::OnAbort,
    Opt::OnExecutionTimeout,
    Opt::OnTotalExecutionTimeout,
    Opt::ShouldRetry,
    Opt::OnGiveUp,
    Opt::RetryAfter,
    Opt::Intervals,
    Opt::Multiplier,
    Opt::Signal,
    Opt::Budget,
    Opt::Seed,
    Opt::RetryOnExecutionTimeout,
    Opt::Nested,
    Opt::InnerRetries,
    Opt::OnBackoff,
    Opt::Hedge,
    Opt::OnHedge,
    Opt::Breaker,
];

impl Opt {
    /// The option whose discriminant is `id`; `None` for any other number.
    pub fn from_id(id: u32) -> Option<Opt> {
        ALL_OPTS.get(id as usize).copied()
    }

    /// The option with this JavaScript name; `None` means "unknown option"
    /// (which is how `maxAttempt` or `timeout` are caught).
    pub fn from_name(name: &str) -> Option<Opt> {
        ALL_OPTS.iter().copied().find(|o| o.name() == name)
    }

    /// The option's JavaScript name, as users write it.
    pub const fn name(self) -> &'static str {
        match self {
            Opt::MaxAttempts => "maxAttempts",
            Opt::Backoff => "backoff",
            Opt::BaseWait => "baseWait",
            Opt::MaxWait => "maxWait",
            Opt::Jitter => "jitter",
            Opt::MaxExecutionTime => "maxExecutionTime",
            Opt::MaxTotalExecutionTime => "maxTotalExecutionTime",
            Opt::ThrowOnError => "throwOnError",
            Opt::Enabled => "enabled",
            Opt::InitialState => "initialState",
            Opt::Key => "key",
            Opt::OnRetry => "onRetry",
            Opt::OnError => "onError",
            Opt::OnLastError => "onLastError",
            Opt::OnSuccess => "onSuccess",
            Opt::OnSettled => "onSettled",
            Opt::OnAbort => "onAbort",
            Opt::OnExecutionTimeout => "onExecutionTimeout",
            Opt::OnTotalExecutionTimeout => "onTotalExecutionTimeout",
            Opt::ShouldRetry => "shouldRetry",
            Opt::OnGiveUp => "onGiveUp",
            Opt::RetryAfter => "retryAfter",
            Opt::Intervals => "intervals",
            Opt::Multiplier => "multiplier",
            Opt::Signal => "signal",
            Opt::Budget => "budget",
            Opt::Seed => "seed",
            Opt::RetryOnExecutionTimeout => "retryOnExecutionTimeout",
            Opt::Nested => "nested",
            Opt::InnerRetries => "innerRetries",
            Opt::OnBackoff => "onBackoff",
            Opt::Hedge => "hedge",
            Opt::OnHedge => "onHedge",
            Opt::Breaker => "breaker",
        }
    }

    /// The lifecycle callback this option installs, if it is one.
    pub fn callback(self) -> Option<Cb> {
        Some(match self {
            Opt::OnRetry => Cb::Retry,
            Opt::OnError => Cb::Error,
            Opt::OnLastError => Cb::LastError,
            Opt::OnSuccess => Cb::Success,
            Opt::OnSettled => Cb::Settled,
            Opt::OnAbort => Cb::Abort,
            Opt::OnExecutionTimeout => Cb::ExecutionTimeout,
            Opt::OnTotalExecutionTimeout => Cb::TotalExecutionTimeout,
            Opt::OnGiveUp => Cb::GiveUp,
            Opt::OnBackoff => Cb::Backoff,
            Opt::OnHedge => Cb::Hedge,
            _ => return None,
        })
    }
}

/// Lifecycle callbacks. The discriminant is the position of the callback's
/// bit in [`Policy::callbacks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cb {
    Retry = 0,
    Error,
    LastError,
    Success,
    Settled,
    Abort,
    ExecutionTimeout,
    TotalExecutionTimeout,
    GiveUp,
    Backoff,
    Hedge,
}

impl Cb {
    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// The option that installs this callback.
    pub const fn opt(self) -> Opt {
        match self {
            Cb::Retry => Opt::OnRetry,
            Cb::Error => Opt::OnError,
            Cb::LastError => Opt::OnLastError,
            Cb::Success => Opt::OnSuccess,
            Cb::Settled => Opt::OnSettled,
            Cb::Abort => Opt::OnAbort,
            Cb::ExecutionTimeout => Opt::OnExecutionTimeout,
            Cb::TotalExecutionTimeout => Opt::OnTotalExecutionTimeout,
            Cb::GiveUp => Opt::OnGiveUp,
            Cb::Backoff => Opt::OnBackoff,
            Cb::Hedge => Opt::OnHedge,
        }
    }
}

/// A JavaScript value as the host classified it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Raw<'a> {
    /// `undefined`: "not set", the option falls back to its default.
    Undefined,
    Null,
    Bool(bool),
    Number(f64),
    Str(&'a str),
    Function,
    /// An array with this many entries.
    Array(u32),
    /// A plain object (or any object that is none of the special ones).
    Object,
    /// A `RetryBudget` of this module, by id.
    Budget(u32),
    /// A `CircuitBreaker` of this module.
    Breaker,
    /// An `AbortSignal`.
    Signal,
    /// A symbol, a bigint, or anything else no option accepts.
    Other,
}

/// Whether an option was refused for its type or its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Becomes a JavaScript `TypeError`.
    Type = 0,
    /// Becomes a JavaScript `RangeError`.
    Range = 1,
}

/// What the refused value should have been. The wasm layer turns it into a
/// sentence that names the option and the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Expect {
    UnknownOption = 0,
    Function,
    PositiveIntegerOrInfinity,
    InfinityNeedsTotalDeadline,
    NonNegativeNumber,
    FiniteNonNegativeNumber,
    FractionOrFull,
    BackoffName,
    ThrowOnErrorValue,
    BooleanOrFunction,
    Boolean,
    String,
    Object,
    ArrayOfDelays,
    IntervalsWithInfinity,
    PositiveFiniteNumber,
    FiniteNumber,
    RetryBudget,
    CircuitBreaker,
    AbortSignal,
    NumberOrFunction,
    NestedValue,
    FiniteWithHedge,
}

impl Expect {
    /// What the option should have been, as the words of an error message
    /// (`option 'jitter' must be <these words>; got 2`).
    pub const fn words(self) -> &'static str {
        match self {
            Expect::UnknownOption => "a known option",
            Expect::Function => "a function",
            Expect::PositiveIntegerOrInfinity => "a positive integer or Infinity",
            Expect::InfinityNeedsTotalDeadline => {
                "paired with a finite maxTotalExecutionTime when it is Infinity"
            }
            Expect::NonNegativeNumber => "a number of milliseconds >= 0",
            Expect::FiniteNonNegativeNumber => "a finite number of milliseconds >= 0",
            Expect::FractionOrFull => "a number from 0 to 1, or 'full'",
            Expect::BackoffName => "'exponential', 'linear', 'fixed', 'decorrelated' or a function",
            Expect::ThrowOnErrorValue => "true, false or 'last'",
            Expect::BooleanOrFunction => "a boolean or a function",
            Expect::Boolean => "a boolean",
            Expect::String => "a string",
            Expect::Object => "an object",
            Expect::ArrayOfDelays => "an array of delays in milliseconds >= 0",
            Expect::IntervalsWithInfinity => "left out when maxAttempts is Infinity",
            Expect::PositiveFiniteNumber => "a finite number > 0",
            Expect::FiniteNumber => "a finite number",
            Expect::RetryBudget => "a RetryBudget",
            Expect::CircuitBreaker => "a CircuitBreaker",
            Expect::AbortSignal => "an AbortSignal",
            Expect::NumberOrFunction => "a number or a function",
            Expect::NestedValue => "'retry' or 'passthrough'",
            Expect::FiniteWithHedge => "finite when hedge is set",
        }
    }
}

/// The persistable `initialState` fields, by the field id
/// [`Policy::set_initial`] takes.
pub const INITIAL_FIELDS: [&str; 5] = [
    "executionCount",
    "lastExecutionTime",
    "totalExecutionTime",
    "lastResult",
    "lastError",
];

/// A refused option: which one, why, and for `intervals`/`initialState`
/// which entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionError {
    pub kind: ErrorKind,
    pub opt: Opt,
    pub expect: Expect,
    /// Entry index for `intervals`, field id for `initialState`, else 0.
    pub index: u32,
}

impl OptionError {
    fn new(kind: ErrorKind, opt: Opt, expect: Expect) -> OptionError {
        OptionError {
            kind,
            opt,
            expect,
            index: 0,
        }
    }
}

/// A number option that may instead be a function read at each decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Static(f64),
    Dynamic,
}

/// A boolean option that may instead be a function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Flag {
    Static(bool),
    Dynamic,
}

/// What a retryer does when started inside another retryer's running
/// attempt (`nested`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nested {
    /// Retries as always (the default: drop-in behaviour).
    Retry,
    /// Makes one attempt and hands its failure straight back.
    Passthrough,
}

/// `throwOnError` as set by the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Throw {
    Last,
    Always,
    Never,
}

/// The persistable `initialState` fields given.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct InitialState {
    pub execution_count: Option<f64>,
    pub last_execution_time: Option<f64>,
    pub total_execution_time: Option<f64>,
    pub has_last_result: bool,
    pub has_last_error: bool,
}

/// The validated options of one retryer.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// Total attempts including the first (`maxAttempts`, default 3).
    pub max_attempts: Num,
    /// Whether `maxAttempts` was given explicitly (matters with `intervals`).
    pub max_attempts_set: bool,
    /// Delay schedule (`backoff`, default exponential).
    pub backoff: Backoff,
    /// `baseWait` in ms (default 1000).
    pub base_wait: Num,
    /// `maxWait` in ms (default Infinity).
    pub max_wait: Num,
    /// `jitter` (default none).
    pub jitter: Option<Jitter>,
    /// `maxExecutionTime` in ms (default Infinity).
    pub max_execution_time: f64,
    /// `maxTotalExecutionTime` in ms (default Infinity).
    pub max_total_execution_time: f64,
    /// `throwOnError` if given; `None` follows the `onError` rule.
    pub throw_on_error: Option<Throw>,
    /// `enabled` (default true).
    pub enabled: Flag,
    /// Which lifecycle callbacks are set, one bit per [`Cb`].
    pub callbacks: u32,
    /// `shouldRetry` is set.
    pub should_retry: bool,
    /// `retryAfter` is set.
    pub retry_after: bool,
    /// A host hook decides, after each wait, whether the next attempt goes
    /// (`retryFetch`'s `beforeRetry`): see [`Effect::Gate`].
    ///
    /// [`Effect::Gate`]: super::effect::Effect::Gate
    pub before_retry: bool,
    /// `intervals`, explicit delays.
    pub intervals: Option<Vec<f64>>,
    /// `multiplier` of exponential backoff (default 2).
    pub multiplier: f64,
    /// An outside `signal` is set.
    pub signal: bool,
    /// The `budget`, by id.
    pub budget: Option<u32>,
    /// A `breaker` is set (the host holds it).
    pub breaker: bool,
    /// `seed` for reproducible jitter.
    pub seed: Option<f64>,
    /// `retryOnExecutionTimeout` (default false).
    pub retry_on_execution_timeout: bool,
    /// `nested` (default `'retry'`).
    pub nested: Nested,
    /// `innerRetries` (default true): false makes every retryer started
    /// inside this one's attempts pass through.
    pub inner_retries: bool,
    /// `hedge` (default not set): ms from the start of an attempt to the
    /// start of the next one, while the earlier ones keep running (SPEC
    /// §2c); `Dynamic` asks `hedge(attempt, retryer)` after each start.
    pub hedge: Option<Num>,
    /// `initialState`, applied once at construction (see
    /// [`Policy::initial`]). Boxed and `None` when not given: a policy can
    /// be shared by many machines, and the smaller it is the less each
    /// retryer with its own options holds.
    pub initial_state: Option<Box<InitialState>>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            max_attempts: Num::Static(DEFAULT_MAX_ATTEMPTS),
            max_attempts_set: false,
            backoff: Backoff::Exponential,
            base_wait: Num::Static(DEFAULT_BASE_WAIT),
            max_wait: Num::Static(DEFAULT_MAX_WAIT),
            jitter: None,
            max_execution_time: DEFAULT_MAX_EXECUTION_TIME,
            max_total_execution_time: DEFAULT_MAX_TOTAL_EXECUTION_TIME,
            throw_on_error: None,
            enabled: Flag::Static(true),
            callbacks: 0,
            should_retry: false,
            retry_after: false,
            before_retry: false,
            intervals: None,
            multiplier: DEFAULT_MULTIPLIER,
            signal: false,
            budget: None,
            breaker: false,
            seed: None,
            retry_on_execution_timeout: false,
            nested: Nested::Retry,
            inner_retries: true,
            hedge: None,
            initial_state: None,
        }
    }
}

/// Checks a value for `maxAttempts` (static, or returned by its function).
pub fn check_max_attempts(v: f64) -> Result<f64, Expect> {
    if v == f64::INFINITY || (v.is_finite() && v >= 1.0 && libm::floor(v) == v) {
        Ok(v)
    } else {
        Err(Expect::PositiveIntegerOrInfinity)
    }
}

/// Checks a delay or deadline in ms: not NaN, not negative.
pub fn check_non_negative(v: f64) -> Result<f64, Expect> {
    if v >= 0.0 {
        Ok(v + 0.0)
    } else {
        Err(Expect::NonNegativeNumber)
    }
}

/// Checks a base delay: finite and not negative.
pub fn check_finite_non_negative(v: f64) -> Result<f64, Expect> {
    if v.is_finite() && v >= 0.0 {
        Ok(v + 0.0)
    } else {
        Err(Expect::FiniteNonNegativeNumber)
    }
}

impl Policy {
    /// Whether callback `cb` is set.
    pub fn has(&self, cb: Cb) -> bool {
        self.callbacks & cb.bit() != 0
    }

    /// Whether this retryer's flows need to know if they run inside another
    /// retryer's attempt, or to tell the retryers inside theirs: a host
    /// tracks attempts (an async context) only once some retryer asks.
    pub fn tracks_nesting(&self) -> bool {
        self.nested == Nested::Passthrough || !self.inner_retries
    }

    /// The effective `throwOnError`: as given, else `Never` when `onError` is
    /// set, else `Last`.
    pub fn throw_mode(&self) -> Throw {
        match self.throw_on_error {
            Some(t) => t,
            None if self.has(Cb::Error) => Throw::Never,
            None => Throw::Last,
        }
    }

    /// Applies one option value to this (staged) policy.
    pub fn set(&mut self, opt: Opt, raw: Raw<'_>) -> Result<(), OptionError> {
        use ErrorKind::{Range, Type};
        let type_err = |e| OptionError::new(Type, opt, e);
        let range_err = |e| OptionError::new(Range, opt, e);
        if let Some(cb) = opt.callback() {
            match raw {
                Raw::Undefined => self.callbacks &= !cb.bit(),
                Raw::Function => self.callbacks |= cb.bit(),
                _ => return Err(type_err(Expect::Function)),
            }
            return Ok(());
        }

        match opt {
            Opt::MaxAttempts => {
                // Validate first: a refused value must leave no trace.
                let value = match raw {
                    Raw::Undefined => Num::Static(DEFAULT_MAX_ATTEMPTS),
                    Raw::Function => Num::Dynamic,
                    Raw::Number(v) => Num::Static(check_max_attempts(v).map_err(range_err)?),
                    _ => return Err(type_err(Expect::PositiveIntegerOrInfinity)),
                };
                self.max_attempts = value;
                self.max_attempts_set = !matches!(raw, Raw::Undefined);
            }
            // `hedge` takes what `maxWait` takes, and is not set when
            // undefined.
            Opt::BaseWait | Opt::MaxWait | Opt::Hedge => {
                let value = match raw {
                    Raw::Undefined if opt == Opt::BaseWait => Num::Static(DEFAULT_BASE_WAIT),
                    Raw::Undefined => Num::Static(DEFAULT_MAX_WAIT),
                    Raw::Function => Num::Dynamic,
                    Raw::Number(v) if opt == Opt::BaseWait => {
                        Num::Static(check_finite_non_negative(v).map_err(range_err)?)
                    }
                    Raw::Number(v) => Num::Static(check_non_negative(v).map_err(range_err)?),
                    _ => return Err(type_err(Expect::NumberOrFunction)),
                };
                match opt {
                    Opt::BaseWait => self.base_wait = value,
                    Opt::MaxWait => self.max_wait = value,
                    _ => self.hedge = (raw != Raw::Undefined).then_some(value),
                }
            }
            Opt::MaxExecutionTime | Opt::MaxTotalExecutionTime => {
                let value = match raw {
                    Raw::Undefined => f64::INFINITY,
                    Raw::Number(v) => check_non_negative(v).map_err(range_err)?,
                    _ => return Err(type_err(Expect::NonNegativeNumber)),
                };
                if opt == Opt::MaxExecutionTime {
                    self.max_execution_time = value;
                } else {
                    self.max_total_execution_time = value;
                }
            }
            Opt::Backoff => {
                self.backoff = match raw {
                    Raw::Undefined => Backoff::Exponential,
                    Raw::Function => Backoff::Custom,
                    Raw::Str("exponential") => Backoff::Exponential,
                    Raw::Str("linear") => Backoff::Linear,
                    Raw::Str("fixed") => Backoff::Fixed,
                    Raw::Str("decorrelated") => Backoff::Decorrelated,
                    Raw::Str(_) => return Err(range_err(Expect::BackoffName)),
                    _ => return Err(type_err(Expect::BackoffName)),
                };
            }
            Opt::Jitter => {
                self.jitter = match raw {
                    Raw::Undefined => None,
                    Raw::Str("full") => Some(Jitter::Full),
                    Raw::Number(v) if (0.0..=1.0).contains(&v) => {
                        if v == 0.0 {
                            None
                        } else {
                            Some(Jitter::Proportional(v))
                        }
                    }
                    Raw::Number(_) | Raw::Str(_) => return Err(range_err(Expect::FractionOrFull)),
                    _ => return Err(type_err(Expect::FractionOrFull)),
                };
            }
            Opt::ThrowOnError => {
                self.throw_on_error = match raw {
                    Raw::Undefined => None,
                    Raw::Bool(true) => Some(Throw::Always),
                    Raw::Bool(false) => Some(Throw::Never),
                    Raw::Str("last") => Some(Throw::Last),
                    Raw::Str(_) => return Err(range_err(Expect::ThrowOnErrorValue)),
                    _ => return Err(type_err(Expect::ThrowOnErrorValue)),
                };
            }
            Opt::Enabled => {
                self.enabled = match raw {
                    Raw::Undefined => Flag::Static(true),
                    Raw::Bool(b) => Flag::Static(b),
                    Raw::Function => Flag::Dynamic,
                    _ => return Err(type_err(Expect::BooleanOrFunction)),
                };
            }
            Opt::InitialState => match raw {
                Raw::Undefined => self.initial_state = None,
                Raw::Object => {}
                _ => return Err(type_err(Expect::Object)),
            },
            Opt::Key => match raw {
                Raw::Undefined | Raw::Str(_) => {}
                _ => return Err(type_err(Expect::String)),
            },
            Opt::ShouldRetry | Opt::RetryAfter => {
                let on = match raw {
                    Raw::Undefined => false,
                    Raw::Function => true,
                    _ => return Err(type_err(Expect::Function)),
                };
                if opt == Opt::ShouldRetry {
                    self.should_retry = on;
                } else {
                    self.retry_after = on;
                }
            }
            Opt::Intervals => {
                self.intervals = match raw {
                    Raw::Undefined => None,
                    Raw::Array(len) => Some(Vec::with_capacity(len.min(4096) as usize)),
                    _ => return Err(type_err(Expect::ArrayOfDelays)),
                };
            }
            Opt::Multiplier => {
                self.multiplier = match raw {
                    Raw::Undefined => DEFAULT_MULTIPLIER,
                    Raw::Number(v) if v.is_finite() && v > 0.0 => v,
                    Raw::Number(_) => return Err(range_err(Expect::PositiveFiniteNumber)),
                    _ => return Err(type_err(Expect::PositiveFiniteNumber)),
                };
            }
            Opt::Signal => {
                self.signal = match raw {
                    Raw::Undefined => false,
                    Raw::Signal => true,
                    _ => return Err(type_err(Expect::AbortSignal)),
                };
            }
            Opt::Budget => {
                self.budget = match raw {
                    Raw::Undefined => None,
                    Raw::Budget(id) => Some(id),
                    _ => return Err(type_err(Expect::RetryBudget)),
                };
            }
            Opt::Breaker => {
                self.breaker = match raw {
                    Raw::Undefined => false,
                    Raw::Breaker => true,
                    _ => return Err(type_err(Expect::CircuitBreaker)),
                };
            }
            Opt::Seed => {
                self.seed = match raw {
                    Raw::Undefined => None,
                    Raw::Number(v) if v.is_finite() => Some(v),
                    Raw::Number(_) => return Err(range_err(Expect::FiniteNumber)),
                    _ => return Err(type_err(Expect::FiniteNumber)),
                };
            }
            Opt::RetryOnExecutionTimeout | Opt::InnerRetries => {
                let on = match raw {
                    Raw::Undefined => opt == Opt::InnerRetries,
                    Raw::Bool(b) => b,
                    _ => return Err(type_err(Expect::Boolean)),
                };
                if opt == Opt::InnerRetries {
                    self.inner_retries = on;
                } else {
                    self.retry_on_execution_timeout = on;
                }
            }
            Opt::Nested => {
                self.nested = match raw {
                    Raw::Undefined | Raw::Str("retry") => Nested::Retry,
                    Raw::Str("passthrough") => Nested::Passthrough,
                    _ => return Err(type_err(Expect::NestedValue)),
                };
            }
            // Callbacks were handled above.
            _ => {}
        }
        Ok(())
    }

    /// Appends entry `index` of `intervals` (after `set(Intervals, Array)`).
    pub fn push_interval(&mut self, index: u32, raw: Raw<'_>) -> Result<(), OptionError> {
        let err = |kind| OptionError {
            kind,
            opt: Opt::Intervals,
            expect: Expect::ArrayOfDelays,
            index,
        };
        let v = match raw {
            Raw::Number(v) if v >= 0.0 => v + 0.0,
            Raw::Number(_) => return Err(err(ErrorKind::Range)),
            _ => return Err(err(ErrorKind::Type)),
        };
        match self.intervals.as_mut() {
            Some(list) => {
                list.push(v);
                Ok(())
            }
            None => Err(err(ErrorKind::Type)),
        }
    }

    /// Records one field of `initialState`: 0 executionCount,
    /// 1 lastExecutionTime, 2 totalExecutionTime, 3 lastResult, 4 lastError.
    /// Other fields cannot persist; the host does not pass them.
    pub fn set_initial(&mut self, field: u32, raw: Raw<'_>) -> Result<(), OptionError> {
        let err = |kind, expect| OptionError {
            kind,
            opt: Opt::InitialState,
            expect,
            index: field,
        };
        let number = |raw: Raw<'_>| -> Result<Option<f64>, OptionError> {
            match raw {
                Raw::Undefined => Ok(None),
                Raw::Number(v) if v.is_finite() && v >= 0.0 => Ok(Some(v + 0.0)),
                Raw::Number(_) => Err(err(ErrorKind::Range, Expect::FiniteNonNegativeNumber)),
                _ => Err(err(ErrorKind::Type, Expect::FiniteNonNegativeNumber)),
            }
        };
        let s = self.initial_state.get_or_insert_with(Box::default);
        match field {
            0 => s.execution_count = number(raw)?,
            1 => s.last_execution_time = number(raw)?,
            2 => s.total_execution_time = number(raw)?,
            3 => s.has_last_result = !matches!(raw, Raw::Undefined),
            4 => s.has_last_error = !matches!(raw, Raw::Undefined),
            _ => {}
        }
        Ok(())
    }

    /// The `initialState` fields given (all unset by default).
    pub fn initial(&self) -> InitialState {
        self.initial_state.as_deref().copied().unwrap_or_default()
    }

    /// Cross-option checks, run once every option of a call has been set.
    pub fn finish(&self) -> Result<(), OptionError> {
        let infinite = self.max_attempts == Num::Static(f64::INFINITY);
        if infinite && self.hedge.is_some() {
            return Err(OptionError::new(
                ErrorKind::Range,
                Opt::MaxAttempts,
                Expect::FiniteWithHedge,
            ));
        }
        if infinite && self.intervals.is_some() {
            return Err(OptionError::new(
                ErrorKind::Range,
                Opt::Intervals,
                Expect::IntervalsWithInfinity,
            ));
        }
        if infinite && !self.max_total_execution_time.is_finite() {
            return Err(OptionError::new(
                ErrorKind::Range,
                Opt::MaxAttempts,
                Expect::InfinityNeedsTotalDeadline,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(opt: Opt, raw: Raw<'_>) -> Result<Policy, OptionError> {
        let mut p = Policy::default();
        p.set(opt, raw)?;
        p.finish()?;
        Ok(p)
    }

    fn kind_of(r: Result<Policy, OptionError>) -> Option<(ErrorKind, Opt)> {
        r.err().map(|e| (e.kind, e.opt))
    }

    #[test]
    fn defaults() {
        let p = Policy::default();
        assert_eq!(p.max_attempts, Num::Static(3.0));
        assert_eq!(p.base_wait, Num::Static(1000.0));
        assert_eq!(p.max_wait, Num::Static(f64::INFINITY));
        assert_eq!(p.backoff, Backoff::Exponential);
        assert_eq!(p.throw_mode(), Throw::Last);
        assert_eq!(p.enabled, Flag::Static(true));
        assert_eq!(p.multiplier, 2.0);
    }

    #[test]
    fn on_error_flips_the_throw_default() {
        let mut p = Policy::default();
        p.set(Opt::OnError, Raw::Function).unwrap();
        assert_eq!(p.throw_mode(), Throw::Never);
        p.set(Opt::ThrowOnError, Raw::Str("last")).unwrap();
        assert_eq!(p.throw_mode(), Throw::Last);
    }

    #[test]
    fn max_attempts_rules() {
        for bad in [0.0, -1.0, 1.5, f64::NAN, f64::NEG_INFINITY] {
            assert_eq!(
                kind_of(set(Opt::MaxAttempts, Raw::Number(bad))),
                Some((ErrorKind::Range, Opt::MaxAttempts))
            );
        }
        assert_eq!(
            kind_of(set(Opt::MaxAttempts, Raw::Str("3"))),
            Some((ErrorKind::Type, Opt::MaxAttempts))
        );
        assert_eq!(
            kind_of(set(Opt::MaxAttempts, Raw::Number(f64::INFINITY))),
            Some((ErrorKind::Range, Opt::MaxAttempts))
        );
        let mut p = Policy::default();
        p.set(Opt::MaxAttempts, Raw::Number(f64::INFINITY)).unwrap();
        p.set(Opt::MaxTotalExecutionTime, Raw::Number(5000.0))
            .unwrap();
        assert!(p.finish().is_ok());
        p.set(Opt::Intervals, Raw::Array(0)).unwrap();
        assert_eq!(
            p.finish().unwrap_err().expect,
            Expect::IntervalsWithInfinity
        );
    }

    #[test]
    fn waits_and_deadlines() {
        for opt in [
            Opt::BaseWait,
            Opt::MaxWait,
            Opt::MaxExecutionTime,
            Opt::MaxTotalExecutionTime,
        ] {
            for bad in [-1.0, f64::NAN] {
                assert_eq!(
                    kind_of(set(opt, Raw::Number(bad))),
                    Some((ErrorKind::Range, opt))
                );
            }
            assert_eq!(kind_of(set(opt, Raw::Null)), Some((ErrorKind::Type, opt)));
            assert!(set(opt, Raw::Number(0.0)).is_ok());
        }
        assert!(set(Opt::MaxWait, Raw::Number(f64::INFINITY)).is_ok());
        assert!(set(Opt::BaseWait, Raw::Number(f64::INFINITY)).is_err());
    }

    #[test]
    fn jitter_rules() {
        assert!(set(Opt::Jitter, Raw::Number(-0.1)).is_err());
        assert!(set(Opt::Jitter, Raw::Number(1.5)).is_err());
        assert!(set(Opt::Jitter, Raw::Number(f64::NAN)).is_err());
        assert_eq!(
            set(Opt::Jitter, Raw::Str("full")).unwrap().jitter,
            Some(Jitter::Full)
        );
        assert_eq!(
            kind_of(set(Opt::Jitter, Raw::Bool(true))),
            Some((ErrorKind::Type, Opt::Jitter))
        );
    }

    #[test]
    fn callbacks_must_be_functions() {
        for opt in ALL_OPTS.iter().copied().filter(|o| o.callback().is_some()) {
            assert_eq!(
                kind_of(set(opt, Raw::Str("x"))),
                Some((ErrorKind::Type, opt))
            );
            let p = set(opt, Raw::Function).unwrap();
            assert!(p.has(opt.callback().unwrap()));
            let mut q = p.clone();
            q.set(opt, Raw::Undefined).unwrap();
            assert!(!q.has(opt.callback().unwrap()));
        }
    }

    #[test]
    fn intervals_entries() {
        let mut p = Policy::default();
        p.set(Opt::Intervals, Raw::Array(2)).unwrap();
        p.push_interval(0, Raw::Number(10.0)).unwrap();
        assert_eq!(
            p.push_interval(1, Raw::Number(-1.0)).unwrap_err().kind,
            ErrorKind::Range
        );
        assert_eq!(
            p.push_interval(1, Raw::Number(f64::NAN)).unwrap_err().index,
            1
        );
        assert_eq!(
            p.push_interval(1, Raw::Str("1")).unwrap_err().kind,
            ErrorKind::Type
        );
    }

    #[test]
    fn names_round_trip() {
        for o in ALL_OPTS {
            assert_eq!(Opt::from_name(o.name()), Some(o));
        }
        assert_eq!(Opt::from_name("maxAttempt"), None);
        assert_eq!(Opt::from_name("timeout"), None);
        for o in ALL_OPTS.iter().copied().filter(|o| o.callback().is_some()) {
            assert_eq!(o.callback().map(Cb::opt), Some(o));
        }
    }

    #[test]
    fn unknown_ids_are_none() {
        assert_eq!(Opt::from_id(ALL_OPTS.len() as u32), None);
        assert_eq!(Opt::from_id(u32::MAX), None);
        for (i, o) in ALL_OPTS.iter().enumerate() {
            assert_eq!(Opt::from_id(i as u32), Some(*o));
        }
    }
}
