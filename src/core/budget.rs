//! The shared retry budget (gRPC retry throttling, Envoy retry budgets).
//!
//! Many retryers share one budget. Every failed attempt costs one token,
//! every success refunds `token_ratio`; retries are allowed only while more
//! than half of `max_tokens` remain. When a backend is down every client
//! drains the same pool, so retries stop together instead of multiplying the
//! load on the service that is already failing.

use alloc::vec::Vec;

/// Default `maxTokens` of a `RetryBudget`.
pub const DEFAULT_MAX_TOKENS: f64 = 10.0;
/// Default `tokenRatio` of a `RetryBudget`.
pub const DEFAULT_TOKEN_RATIO: f64 = 0.1;

/// Why a budget configuration was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetError {
    /// `maxTokens` is not a finite number above 0.
    MaxTokens,
    /// `tokenRatio` is not a finite number above 0.
    TokenRatio,
}

/// A token bucket shared by retryers. Starts full.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    max_tokens: f64,
    token_ratio: f64,
    tokens: f64,
}

impl Budget {
    /// A full budget, or the reason its settings are out of range.
    pub fn new(max_tokens: f64, token_ratio: f64) -> Result<Budget, BudgetError> {
        if !(max_tokens.is_finite() && max_tokens > 0.0) {
            return Err(BudgetError::MaxTokens);
        }
        if !(token_ratio.is_finite() && token_ratio > 0.0) {
            return Err(BudgetError::TokenRatio);
        }
        Ok(Budget {
            max_tokens,
            token_ratio,
            tokens: max_tokens,
        })
    }

    /// Tokens left now, between 0 and `max_tokens`.
    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    /// The configured maximum.
    pub fn max_tokens(&self) -> f64 {
        self.max_tokens
    }

    /// The configured refund per success.
    pub fn token_ratio(&self) -> f64 {
        self.token_ratio
    }

    /// A failed attempt: costs one token, never below zero.
    pub fn record_failure(&mut self) {
        self.tokens = (self.tokens - 1.0).max(0.0);
    }

    /// A successful attempt: refunds `token_ratio`, never above the maximum.
    pub fn record_success(&mut self) {
        self.tokens = (self.tokens + self.token_ratio).min(self.max_tokens);
    }

    /// Whether a retry may be made now.
    pub fn allows_retry(&self) -> bool {
        self.tokens > self.max_tokens / 2.0
    }
}

/// Where a machine finds the budgets it refers to by id. The wasm layer
/// lends a retryer's own budget for each input; tests use a plain vector.
pub trait Budgets {
    /// The budget with this id, if it still exists.
    fn budget(&mut self, id: u32) -> Option<&mut Budget>;
}

impl Budgets for Vec<Budget> {
    fn budget(&mut self, id: u32) -> Option<&mut Budget> {
        self.get_mut(id as usize)
    }
}

/// No budgets at all (retryers without the `budget` option).
pub struct NoBudgets;

impl Budgets for NoBudgets {
    fn budget(&mut self, _id: u32) -> Option<&mut Budget> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_settings() {
        assert_eq!(Budget::new(0.0, 0.1), Err(BudgetError::MaxTokens));
        assert_eq!(Budget::new(-1.0, 0.1), Err(BudgetError::MaxTokens));
        assert_eq!(Budget::new(f64::NAN, 0.1), Err(BudgetError::MaxTokens));
        assert_eq!(Budget::new(f64::INFINITY, 0.1), Err(BudgetError::MaxTokens));
        assert_eq!(Budget::new(10.0, 0.0), Err(BudgetError::TokenRatio));
        assert_eq!(Budget::new(10.0, f64::NAN), Err(BudgetError::TokenRatio));
        assert!(Budget::new(10.0, 0.1).is_ok());
    }

    #[test]
    fn throttles_below_half_and_recovers() {
        let mut b = Budget::new(10.0, 0.5).unwrap();
        assert!(b.allows_retry());
        for _ in 0..5 {
            b.record_failure();
        }
        // 5 tokens left: not more than half.
        assert_eq!(b.tokens(), 5.0);
        assert!(!b.allows_retry());
        b.record_success();
        assert!(b.allows_retry());
        for _ in 0..100 {
            b.record_failure();
        }
        assert_eq!(b.tokens(), 0.0);
        for _ in 0..100 {
            b.record_success();
        }
        assert_eq!(b.tokens(), 10.0);
    }
}
