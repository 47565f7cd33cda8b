//! What the machine asks its host to do, and the small vocabularies those
//! requests use.
//!
//! A few discriminants double as small numbers: `Timer as usize` indexes a
//! retryer's timers and tells a `setTimeout` handler which one fired, and
//! the `arg` of an [`Effect::Call`] for `onAbort` or `onGiveUp` is an
//! [`AbortReason`] or [`GiveUp`] code, so one `u32` carries every
//! callback's argument.

use super::options::{Cb, Opt};

/// The three timers a flow may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Timer {
    /// The backoff wait before the next attempt; in a hedged flow, when the
    /// next attempt starts (its hedge time, or the end of a server hint).
    Wait = 0,
    /// The deadline of the running attempt (`maxExecutionTime`); in a
    /// hedged flow, the earliest deadline among the running attempts.
    Attempt = 1,
    /// The deadline of the whole flow (`maxTotalExecutionTime`).
    Total = 2,
}

/// All timers, each at the index of its discriminant.
pub const TIMERS: [Timer; 3] = [Timer::Wait, Timer::Attempt, Timer::Total];

impl Timer {
    /// The timer whose discriminant is `code` (what a host timer's handler
    /// is told).
    pub fn from_code(code: u32) -> Option<Timer> {
        TIMERS.get(code as usize).copied()
    }
}

/// Why a flow was aborted (the `onAbort` reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AbortReason {
    Manual = 0,
    NewExecution = 1,
    ExecutionTimeout = 2,
    TotalTimeout = 3,
    Signal = 4,
}

impl AbortReason {
    /// The reason as `onAbort` receives it.
    pub const fn name(self) -> &'static str {
        match self {
            AbortReason::Manual => "manual",
            AbortReason::NewExecution => "new-execution",
            AbortReason::ExecutionTimeout => "execution-timeout",
            AbortReason::TotalTimeout => "total-timeout",
            AbortReason::Signal => "signal",
        }
    }

    /// Every reason, each at the index of its discriminant.
    const ALL: [AbortReason; 5] = [
        AbortReason::Manual,
        AbortReason::NewExecution,
        AbortReason::ExecutionTimeout,
        AbortReason::TotalTimeout,
        AbortReason::Signal,
    ];

    /// One of the reasons `abort(reason)` takes, by the name `onAbort`
    /// receives: pacer's four (`'signal'` is the library's own).
    pub fn from_abort_name(name: &str) -> Option<AbortReason> {
        AbortReason::ALL
            .into_iter()
            .take(4)
            .find(|r| r.name() == name)
    }

    /// The reason whose discriminant is `code` (the `arg` of an `onAbort`
    /// call).
    pub fn from_code(code: u32) -> Option<AbortReason> {
        AbortReason::ALL.get(code as usize).copied()
    }
}

/// Why a flow ended in failure (the `onGiveUp` reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum GiveUp {
    AttemptsExhausted = 0,
    NotRetryable = 1,
    ExecutionTimeout = 2,
    BudgetExhausted = 3,
    /// Started inside another retryer's attempt and passing through.
    Nested = 4,
    /// The final error is a circuit breaker's refusal (SPEC §2e rule 3).
    CircuitOpen = 5,
}

impl GiveUp {
    /// The reason as `onGiveUp` receives it.
    pub const fn name(self) -> &'static str {
        match self {
            GiveUp::AttemptsExhausted => "attempts-exhausted",
            GiveUp::NotRetryable => "not-retryable",
            GiveUp::ExecutionTimeout => "execution-timeout",
            GiveUp::BudgetExhausted => "budget-exhausted",
            GiveUp::Nested => "nested",
            GiveUp::CircuitOpen => "circuit-open",
        }
    }

    /// Every reason, each at the index of its discriminant.
    const ALL: [GiveUp; 6] = [
        GiveUp::AttemptsExhausted,
        GiveUp::NotRetryable,
        GiveUp::ExecutionTimeout,
        GiveUp::BudgetExhausted,
        GiveUp::Nested,
        GiveUp::CircuitOpen,
    ];

    /// The reason whose discriminant is `code` (the `arg` of an `onGiveUp`
    /// call).
    pub fn from_code(code: u32) -> Option<GiveUp> {
        GiveUp::ALL.get(code as usize).copied()
    }
}

/// A value only a JavaScript function can provide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Eval {
    /// `enabled(retryer)`.
    Enabled = 0,
    /// `shouldRetry(error, attempt, retryer)`.
    ShouldRetry = 1,
    /// `maxAttempts(retryer)`.
    MaxAttempts = 2,
    /// `baseWait(retryer)`.
    BaseWait = 3,
    /// `maxWait(retryer)`.
    MaxWait = 4,
    /// `retryAfter(error, attempt, retryer)`.
    RetryAfter = 5,
    /// `backoff(attempt, retryer)`.
    Backoff = 6,
    /// `hedge(attempt, retryer)`.
    Hedge = 7,
}

impl Eval {
    /// The option whose function is evaluated.
    pub fn opt(self) -> Opt {
        match self {
            Eval::Enabled => Opt::Enabled,
            Eval::ShouldRetry => Opt::ShouldRetry,
            Eval::MaxAttempts => Opt::MaxAttempts,
            Eval::BaseWait => Opt::BaseWait,
            Eval::MaxWait => Opt::MaxWait,
            Eval::RetryAfter => Opt::RetryAfter,
            Eval::Backoff => Opt::Backoff,
            Eval::Hedge => Opt::Hedge,
        }
    }
}

/// How a flow's `execute()` promise settles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Outcome {
    /// Resolve with the successful result.
    Result = 0,
    /// Resolve with `undefined`.
    Undefined = 1,
    /// Reject with the flow's last error.
    Reject = 2,
    /// Reject with a `RangeError`: the function of this option returned an
    /// invalid value.
    Invalid(Opt) = 3,
    /// Reject with what a callback or option function threw.
    Thrown = 4,
}

/// An answer to an [`Effect::Eval`], as the host classified the value the
/// function returned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Provided {
    /// The function returned `undefined` or `null`.
    Nothing,
    /// The function returned a boolean (or, for truthiness checks, this is
    /// the value's truthiness).
    Bool(bool),
    /// The function returned a number.
    Number(f64),
    /// The function returned something else.
    Other,
    /// The function threw.
    Threw,
}

/// One request from the machine to its host. Every effect that concerns a
/// flow names its generation, so the host can find that flow's values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    /// Call the function for attempt `attempt` of flow `gen`.
    Invoke { gen: u32, attempt: u32 },
    /// Start `timer` for `ms` milliseconds on behalf of flow `gen`.
    StartTimer { gen: u32, timer: Timer, ms: f64 },
    /// Clear `timer` if it is running.
    ClearTimer { timer: Timer },
    /// Flow `gen` is aborted for `reason`: abort the signal of attempt
    /// `attempt` (running, or the last one before a wait) with an
    /// `AbortError` naming `reason`. A hedged flow gets one for each of its
    /// running attempts.
    AbortAttempt {
        gen: u32,
        attempt: u32,
        reason: AbortReason,
    },
    /// Attempt `attempt` ran past `maxExecutionTime`: abort its signal
    /// with a `TimeoutError`, which also becomes the flow's error.
    TimeOut { gen: u32, attempt: u32 },
    /// Attempt `attempt` of a hedged flow lost: another one settled the
    /// flow. Abort its signal with an `AbortError`; whatever it does later
    /// is ignored, and it runs no callback.
    CancelAttempt { gen: u32, attempt: u32 },
    /// Run callback `cb`; `arg` is the attempt for `onRetry`, the
    /// [`AbortReason`] for `onAbort`, the [`GiveUp`] for `onGiveUp`.
    Call { gen: u32, cb: Cb, arg: u32 },
    /// A wait of `delay` ms starts after failed attempt `attempt`, `elapsed`
    /// ms after `execute()` (`onBackoff`; a `delay` of 0 retries at once).
    Backoff {
        gen: u32,
        attempt: u32,
        delay: f64,
        elapsed: f64,
    },
    /// Attempt `attempt` of a hedged flow starts while `running` earlier
    /// ones still run, `elapsed` ms after `execute()` (`onHedge`).
    Hedge {
        gen: u32,
        attempt: u32,
        running: u32,
        elapsed: f64,
    },
    /// Evaluate an option's function and answer with `provide`.
    Eval { gen: u32, what: Eval, attempt: u32 },
    /// The wait before attempt `attempt` is over: ask the host's hook
    /// (`retryFetch`'s `beforeRetry`) whether it goes, and answer with
    /// `answer_gate` whenever the hook has decided (it may take a promise).
    Gate { gen: u32, attempt: u32 },
    /// Start listening to the outside `signal`.
    Listen { gen: u32 },
    /// Stop listening to the outside `signal`.
    Unlisten { gen: u32 },
    /// State changed and someone subscribed: notify listeners.
    StateChanged,
    /// Settle flow `gen`'s promise.
    Finish { gen: u32, outcome: Outcome },
}

impl Effect {
    /// The flow generation this effect belongs to; `None` for the ones that
    /// concern the retryer as a whole (clearing a timer, a state change).
    pub fn gen(&self) -> Option<u32> {
        match *self {
            Effect::Invoke { gen, .. }
            | Effect::StartTimer { gen, .. }
            | Effect::AbortAttempt { gen, .. }
            | Effect::TimeOut { gen, .. }
            | Effect::CancelAttempt { gen, .. }
            | Effect::Call { gen, .. }
            | Effect::Backoff { gen, .. }
            | Effect::Hedge { gen, .. }
            | Effect::Eval { gen, .. }
            | Effect::Gate { gen, .. }
            | Effect::Listen { gen }
            | Effect::Unlisten { gen }
            | Effect::Finish { gen, .. } => Some(gen),
            Effect::ClearTimer { .. } | Effect::StateChanged => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abort_takes_pacer_reasons_by_name() {
        for r in [
            AbortReason::Manual,
            AbortReason::NewExecution,
            AbortReason::ExecutionTimeout,
            AbortReason::TotalTimeout,
        ] {
            assert_eq!(AbortReason::from_abort_name(r.name()), Some(r));
        }
        assert_eq!(AbortReason::from_abort_name("signal"), None);
        assert_eq!(AbortReason::from_abort_name("Manual"), None);
    }

    #[test]
    fn codes_decode_to_their_variant_and_nothing_else() {
        for r in AbortReason::ALL {
            assert_eq!(AbortReason::from_code(r as u32), Some(r));
        }
        for g in GiveUp::ALL {
            assert_eq!(GiveUp::from_code(g as u32), Some(g));
        }
        for t in TIMERS {
            assert_eq!(Timer::from_code(t as u32), Some(t));
        }
        assert_eq!(AbortReason::from_code(5), None);
        assert_eq!(GiveUp::from_code(6), None);
        assert_eq!(Timer::from_code(3), None);
    }
}
