//! The eight observable state fields and the status rule.
//!
//! `lastResult` and `lastError` are JavaScript values the core never sees;
//! it keeps only whether each is present, and the wasm layer, which holds
//! the values, pairs them with these flags.

/// `status` of a retryer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Idle = 0,
    Executing = 1,
    Retrying = 2,
    Disabled = 3,
}

impl Status {
    /// The status as `store.state.status` shows it.
    pub const fn name(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Executing => "executing",
            Status::Retrying => "retrying",
            Status::Disabled => "disabled",
        }
    }
}

/// The numeric part of `retryer.store.state`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct State {
    /// Successful `execute()` calls.
    pub execution_count: f64,
    /// Timestamp (ms) of the most recent success.
    pub last_execution_time: f64,
    /// ms from `execute()` to the most recent success.
    pub total_execution_time: f64,
    /// The attempt running now, or during a wait the one about to run.
    pub current_attempt: u32,
    /// Bumped on every change, so readers can keep one snapshot object while
    /// nothing changed.
    pub version: u32,
    /// A flow is active (attempts and waits).
    pub is_executing: bool,
    /// `lastResult` holds a value.
    pub has_last_result: bool,
    /// `lastError` holds a value.
    pub has_last_error: bool,
}

impl State {
    /// The status rule: disabled when not enabled; `executing` while attempt 1
    /// is active; `retrying` while a later attempt or a wait is; else idle.
    pub fn status(&self, enabled: bool) -> Status {
        if !enabled {
            Status::Disabled
        } else if self.is_executing && self.current_attempt <= 1 {
            Status::Executing
        } else if self.is_executing {
            Status::Retrying
        } else {
            Status::Idle
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_rule() {
        let mut s = State::default();
        assert_eq!(s.status(true), Status::Idle);
        assert_eq!(s.status(false), Status::Disabled);
        s.is_executing = true;
        s.current_attempt = 1;
        assert_eq!(s.status(true), Status::Executing);
        s.current_attempt = 2;
        assert_eq!(s.status(true), Status::Retrying);
        assert_eq!(s.status(false), Status::Disabled);
    }
}
