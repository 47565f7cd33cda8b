//! `RetryBudget`: the core's shared token bucket as a JavaScript class.

use alloc::rc::Rc;
use core::cell::RefCell;

use wasm_bindgen::prelude::*;

use super::errors;
use super::input;
use super::shared;
use crate::core::budget::Budget;

/// A retry budget shared by any number of retryers (gRPC retry throttling,
/// Envoy retry budgets): each failed attempt costs 1 token, each success
/// refunds `tokenRatio`, and retries happen only while more than
/// `maxTokens / 2` tokens remain. When a backend is down, every retryer
/// drains the same pool, so retries stop together instead of multiplying
/// the load on it.
#[wasm_bindgen]
pub struct RetryBudget {
    budget: Rc<RefCell<Budget>>,
}

#[wasm_bindgen]
impl RetryBudget {
    /// `new RetryBudget({ maxTokens, tokenRatio })`: `maxTokens` (default
    /// 10) and `tokenRatio` (default 0.1), both finite numbers above 0. The
    /// budget starts full.
    #[wasm_bindgen(constructor)]
    pub fn construct(options: JsValue) -> Result<JsValue, JsValue> {
        let budget = Rc::new(RefCell::new(input::budget(&options)?));
        let object: JsValue = RetryBudget {
            budget: Rc::clone(&budget),
        }
        .into();
        shared::remember(&object, budget).ok_or_else(|| errors::internal("budget table"))?;
        Ok(object)
    }

    /// Tokens left now, from 0 to `maxTokens`.
    #[wasm_bindgen(getter)]
    pub fn tokens(&self) -> f64 {
        self.budget.try_borrow().map_or(f64::NAN, |b| b.tokens())
    }

    /// The bucket size (default 10).
    #[wasm_bindgen(getter, js_name = maxTokens)]
    pub fn max_tokens(&self) -> f64 {
        self.budget
            .try_borrow()
            .map_or(f64::NAN, |b| b.max_tokens())
    }

    /// Tokens refunded per success (default 0.1).
    #[wasm_bindgen(getter, js_name = tokenRatio)]
    pub fn token_ratio(&self) -> f64 {
        self.budget
            .try_borrow()
            .map_or(f64::NAN, |b| b.token_ratio())
    }
}
