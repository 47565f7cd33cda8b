//! `RetryBudget`: the core's shared token bucket as a JavaScript class.
//!
//! Retryers hold the bucket itself (`Rc<RefCell<Budget>>`); a budget passed
//! in options is recognised by identity, through a `WeakMap` from the
//! budget's JavaScript object to its index in a table of weak references,
//! so a plain object that looks like a budget is refused and a budget that
//! nobody holds any more is collected.

use alloc::rc::{Rc, Weak};
use alloc::vec::Vec;
use core::cell::RefCell;

use js_sys::{Object, WeakMap};
use wasm_bindgen::prelude::*;

use super::errors;
use super::js;
use super::values::{self, show};
use crate::core::budget::{Budget, BudgetError, DEFAULT_MAX_TOKENS, DEFAULT_TOKEN_RATIO};

thread_local! {
    static BY_OBJECT: WeakMap = WeakMap::new();
    static TABLE: RefCell<Vec<Weak<RefCell<Budget>>>> = const { RefCell::new(Vec::new()) };
}

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
        let (max, ratio) = read(&options)?;
        let budget = Budget::new(max, ratio).map_err(|e| {
            let (name, value) = match e {
                BudgetError::MaxTokens => ("maxTokens", max),
                BudgetError::TokenRatio => ("tokenRatio", ratio),
            };
            errors::range_error(&must_be(name, &JsValue::from_f64(value)))
        })?;
        let budget = Rc::new(RefCell::new(budget));
        let index = remember(&budget);
        let object: JsValue = RetryBudget { budget }.into();
        BY_OBJECT.with(|m| m.set(object.unchecked_ref::<Object>(), &JsValue::from(index)));
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

/// `maxTokens` and `tokenRatio` from a `RetryBudget`'s options, read once.
fn read(options: &JsValue) -> Result<(f64, f64), JsValue> {
    let (mut max, mut ratio) = (DEFAULT_MAX_TOKENS, DEFAULT_TOKEN_RATIO);
    if options.is_undefined() {
        return Ok((max, ratio));
    }
    if !options.is_object() || options.is_function() {
        return Err(errors::type_error(
            &[
                "RetryBudget options must be an object; got ",
                &show(options),
            ]
            .concat(),
        ));
    }
    let keys =
        js::object_keys(options).map_err(|e| errors::unreadable("the RetryBudget options", &e))?;
    for key in keys.iter() {
        let name = key.as_string().unwrap_or_default();
        let slot = match name.as_str() {
            "maxTokens" => &mut max,
            "tokenRatio" => &mut ratio,
            _ => {
                return Err(errors::type_error(
                    &["unknown RetryBudget option '", &name, "'"].concat(),
                ))
            }
        };
        let value = values::get_key(options, &key)
            .map_err(|e| errors::unreadable(&["RetryBudget option '", &name, "'"].concat(), &e))?;
        if value.is_undefined() {
            continue;
        }
        *slot = value
            .as_f64()
            .ok_or_else(|| errors::type_error(&must_be(&name, &value)))?;
    }
    Ok((max, ratio))
}

fn must_be(name: &str, value: &JsValue) -> alloc::string::String {
    [
        "RetryBudget option '",
        name,
        "' must be a finite number > 0; got ",
        &show(value),
    ]
    .concat()
}

/// Stores a weak reference to `budget`, reusing the index of one that is
/// gone; returns the index.
fn remember(budget: &Rc<RefCell<Budget>>) -> u32 {
    TABLE.with(|t| {
        let Ok(mut t) = t.try_borrow_mut() else {
            return u32::MAX;
        };
        let weak = Rc::downgrade(budget);
        match t.iter().position(|w| w.strong_count() == 0) {
            Some(i) => {
                if let Some(place) = t.get_mut(i) {
                    *place = weak;
                }
                i as u32
            }
            None => {
                t.push(weak);
                (t.len() - 1) as u32
            }
        }
    })
}

/// The index of `value`'s budget, if `value` is a `RetryBudget` of this
/// module.
pub fn id_of(value: &JsValue) -> Option<u32> {
    let index = BY_OBJECT.with(|m| m.get(value.unchecked_ref::<Object>()));
    index.as_f64().map(|i| i as u32)
}

/// The budget of a `budget` option value (`None` for `undefined`).
pub fn of(value: &JsValue) -> Option<Rc<RefCell<Budget>>> {
    let index = id_of(value)?;
    TABLE.with(|t| t.try_borrow().ok()?.get(index as usize)?.upgrade())
}
