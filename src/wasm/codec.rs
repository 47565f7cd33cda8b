//! The numeric wire format between the exports and the ESM front:
//! value tags, effect codes, error codes and where the state is read. The
//! front end's `js/front/wire.js` mirrors these numbers.

use crate::core::effect::{Effect, Outcome, Provided};
use crate::core::machine::{Machine, Parked};
use crate::core::options::{self, Expect, OptionError, Raw};
use crate::core::state::State;

/// Value tags the front end uses to classify JavaScript values.
pub mod tag {
    pub const UNDEFINED: u32 = 0;
    pub const NULL: u32 = 1;
    pub const BOOL: u32 = 2;
    pub const NUMBER: u32 = 3;
    pub const FUNCTION: u32 = 5;
    pub const ARRAY: u32 = 6;
    pub const OBJECT: u32 = 7;
    pub const BUDGET: u32 = 8;
    pub const SIGNAL: u32 = 9;
    /// For `provide`: the option function threw.
    pub const THREW: u32 = 11;
}

/// Byte offsets of the state fields a front end reads in place, from the
/// start of a retryer's `State` (`repr(C)`; checked below).
pub mod state_at {
    pub const COUNT: usize = 0;
    pub const LAST_TIME: usize = 8;
    pub const TOTAL_TIME: usize = 16;
    pub const ATTEMPT: usize = 24;
    pub const VERSION: usize = 28;
}

const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(State, execution_count) == state_at::COUNT);
    assert!(offset_of!(State, last_execution_time) == state_at::LAST_TIME);
    assert!(offset_of!(State, total_execution_time) == state_at::TOTAL_TIME);
    assert!(offset_of!(State, current_attempt) == state_at::ATTEMPT);
    assert!(offset_of!(State, version) == state_at::VERSION);
};

/// Bits of a retryer's flags word (what the front end cannot read from
/// the state itself); the status takes bits 4 and 5.
pub mod flag {
    pub const EXECUTING: u32 = 1;
    pub const HAS_RESULT: u32 = 2;
    pub const HAS_ERROR: u32 = 4;
    pub const ACTIVE: u32 = 8;
    pub const STATUS_SHIFT: u32 = 4;
}

/// Cells of the one window all retryers share, by index. They hold what
/// the front end reads right after the call that wrote them, before any
/// user code can run and make another call.
pub mod window {
    /// Payload of the effect just popped: attempt number or delay in ms.
    pub const VALUE: usize = 0;
    /// Second payload: callback argument or option id.
    pub const ARG: usize = 1;
    /// Generation of the flow the popped effect belongs to.
    pub const GEN: usize = 2;
    /// Generation of the newest `execute()` of the retryer just called.
    /// This cell and all after it are what a parked retryer keeps.
    pub const LAST_GEN: usize = 3;
    /// A machine being parked or resumed: its jitter generator's state,
    /// high and low 32 bits, and its flags (1 = has subscribers, 2 =
    /// enabled hint).
    pub const RNG_HI: usize = 4;
    pub const RNG_LO: usize = 5;
    pub const PARKED: usize = 6;
    /// A machine being parked or resumed: its state (version, attempt,
    /// execution count, last and total execution time, flags word).
    pub const VERSION: usize = 7;
    pub const ATTEMPT: usize = 8;
    pub const COUNT: usize = 9;
    pub const LAST_TIME: usize = 10;
    pub const TOTAL_TIME: usize = 11;
    pub const FLAGS: usize = 12;
}

/// Number of cells in the shared window.
pub const WINDOW_LEN: usize = 13;

/// The shared window's cells.
pub type Window = [f64; WINDOW_LEN];

/// Error code for "no such option" (also a misuse of the staging calls).
pub const UNKNOWN_OPTION: u32 = encode_error(0, 0, Expect::UnknownOption as u32, 0);

/// Returned by `commit` when there was nothing staged.
pub const COMMIT_FAILED: u32 = 1 << 31 | UNKNOWN_OPTION;

/// Packs an option error: bit 0 set, bit 1 the kind (1 = RangeError),
/// bits 2..8 the option id, bits 8..14 what was expected, bits 14.. the
/// entry index.
pub const fn encode_error(kind: u32, opt: u32, expect: u32, index: u32) -> u32 {
    1 | (kind & 1) << 1 | (opt & 0x3f) << 2 | (expect & 0x3f) << 8 | (index & 0xffff) << 14
}

/// Encodes a refused option.
pub fn option_error(e: OptionError) -> u32 {
    encode_error(e.kind as u32, e.opt as u32, e.expect as u32, e.index)
}

/// Turns a tag and number from JavaScript into a [`Raw`] value.
pub fn raw<'a>(tag: u32, num: f64, s: Option<&'a str>) -> Raw<'a> {
    match tag {
        tag::UNDEFINED => Raw::Undefined,
        tag::NULL => Raw::Null,
        tag::BOOL => Raw::Bool(num != 0.0),
        tag::NUMBER => Raw::Number(num),
        4 => s.map_or(Raw::Other, Raw::Str),
        tag::FUNCTION => Raw::Function,
        tag::ARRAY if num >= 0.0 && num <= u32::MAX as f64 => Raw::Array(num as u32),
        tag::OBJECT => Raw::Object,
        tag::BUDGET if num >= 0.0 && num <= u32::MAX as f64 => Raw::Budget(num as u32),
        tag::SIGNAL => Raw::Signal,
        _ => Raw::Other,
    }
}

/// Turns the classified return value of an option function into [`Provided`].
pub fn provided(tag: u32, num: f64) -> Provided {
    match tag {
        tag::UNDEFINED | tag::NULL => Provided::Nothing,
        tag::BOOL => Provided::Bool(num != 0.0),
        tag::NUMBER => Provided::Number(num),
        tag::THREW => Provided::Threw,
        _ => Provided::Other,
    }
}

/// Encodes an effect as `kind | sub << 4 | more << 8` and writes its
/// payload into the window.
pub fn encode(effect: Effect, more: bool, win: &mut Window) -> u32 {
    let (kind, sub, gen, value, arg) = match effect {
        Effect::Invoke { gen, attempt } => (1, 0, gen, f64::from(attempt), 0.0),
        Effect::StartTimer { gen, timer, ms } => (2, timer as u32, gen, ms, 0.0),
        Effect::ClearTimer { timer } => (3, timer as u32, 0, 0.0, 0.0),
        Effect::AbortAttempt { gen, reason } => (4, reason as u32, gen, 0.0, 0.0),
        Effect::Call { gen, cb, arg } => (5, cb as u32, gen, 0.0, f64::from(arg)),
        Effect::Eval { gen, what, attempt } => (6, what as u32, gen, f64::from(attempt), 0.0),
        Effect::Listen { gen } => (7, 0, gen, 0.0, 0.0),
        Effect::Unlisten { gen } => (8, 0, gen, 0.0, 0.0),
        Effect::StateChanged => (9, 0, 0, 0.0, 0.0),
        Effect::Finish { gen, outcome } => {
            let (code, opt) = match outcome {
                Outcome::Result => (0, 0.0),
                Outcome::Undefined => (1, 0.0),
                Outcome::Reject => (2, 0.0),
                Outcome::Invalid(o) => (3, f64::from(o as u8)),
                Outcome::Thrown => (4, 0.0),
            };
            (10, code, gen, 0.0, opt)
        }
    };
    win[window::VALUE] = value;
    win[window::ARG] = arg;
    win[window::GEN] = f64::from(gen);
    kind | sub << 4 | u32::from(more) << 8
}

/// The flags word of machine `m`: what its state does not hold as a field
/// of its own (see `flag`).
pub fn flags_of(m: &Machine) -> u32 {
    let s = m.state();
    let bit = |on: bool, b: u32| if on { b } else { 0 };
    bit(s.is_executing, flag::EXECUTING)
        | bit(s.has_last_result, flag::HAS_RESULT)
        | bit(s.has_last_error, flag::HAS_ERROR)
        | bit(m.is_active(), flag::ACTIVE)
        | (m.status() as u32) << flag::STATUS_SHIFT
}

/// Writes what a parked machine keeps into the window: `parked`, and the
/// state and flags the front end shows while it is parked.
pub fn write_parked(p: &Parked, flags: u32, win: &mut Window) {
    let s = &p.state;
    win[window::RNG_HI] = f64::from((p.rng >> 32) as u32);
    win[window::RNG_LO] = f64::from(p.rng as u32);
    win[window::PARKED] = f64::from(u8::from(p.listeners) | u8::from(p.enabled_hint) << 1);
    win[window::VERSION] = f64::from(s.version);
    win[window::ATTEMPT] = f64::from(s.current_attempt);
    win[window::COUNT] = s.execution_count;
    win[window::LAST_TIME] = s.last_execution_time;
    win[window::TOTAL_TIME] = s.total_execution_time;
    win[window::FLAGS] = f64::from(flags);
}

/// Reads back what `write_parked` wrote (and the front end copied back).
pub fn read_parked(win: &Window) -> Parked {
    let flags = win[window::FLAGS] as u32;
    let parked = win[window::PARKED] as u32;
    Parked {
        state: State {
            current_attempt: 0,
            is_executing: false,
            execution_count: win[window::COUNT],
            last_execution_time: win[window::LAST_TIME],
            total_execution_time: win[window::TOTAL_TIME],
            has_last_result: flags & flag::HAS_RESULT != 0,
            has_last_error: flags & flag::HAS_ERROR != 0,
            version: win[window::VERSION] as u32,
        },
        last_gen: win[window::LAST_GEN] as u32,
        rng: u64::from(win[window::RNG_HI] as u32) << 32 | u64::from(win[window::RNG_LO] as u32),
        listeners: parked & 1 != 0,
        enabled_hint: parked & 2 != 0,
    }
}

/// Numeric defaults by option wire id (NaN where there is none).
pub fn default_of(id: u32) -> f64 {
    use crate::core::options::Opt;
    match options::Opt::from_id(id) {
        Some(Opt::MaxAttempts) => options::DEFAULT_MAX_ATTEMPTS,
        Some(Opt::BaseWait) => options::DEFAULT_BASE_WAIT,
        Some(Opt::MaxWait) => options::DEFAULT_MAX_WAIT,
        Some(Opt::Jitter) => options::DEFAULT_JITTER,
        Some(Opt::MaxExecutionTime) => options::DEFAULT_MAX_EXECUTION_TIME,
        Some(Opt::MaxTotalExecutionTime) => options::DEFAULT_MAX_TOTAL_EXECUTION_TIME,
        Some(Opt::Multiplier) => options::DEFAULT_MULTIPLIER,
        _ => f64::NAN,
    }
}
