//! The exported `AsyncRetryer` class.
//!
//! `new AsyncRetryer(fn, options)` returns an object made here. What pacer
//! keeps as public fields lives on that object as own properties, read
//! when needed: `fn` (the function being retried), `key`, and `options`
//! (the merged options, defaults included). Keeping them there, and not in
//! Rust, matters: a function or callback that closes over its retryer then
//! forms a cycle the garbage collector can see.
//!
//! The methods are bound, as pacer's are (`const { execute } = retryer`):
//! the entry gives the class accessors that bind each `_method` of this
//! file on first read, with the retryer's own object as their `me` (a
//! method only learns its Rust side, and flows need the object: callbacks
//! receive it, `fn` is called on it, and what a retryer keeps of
//! JavaScript between flows is kept on it), and keep the bound function on
//! the retryer.

use alloc::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;

use super::engine::{self, Engine, Kind};
use super::errors;
use super::input;
use super::props::{self, show};
use super::store;
use crate::core::effect::AbortReason;
use crate::core::options::Policy;

/// Retries an async function with backoff, deadlines and cancellation; a
/// drop-in for `@tanstack/pacer`'s `AsyncRetryer` (same options, callbacks,
/// state and store). Options and their defaults are in the README and
/// `index.d.ts`.
#[wasm_bindgen]
pub struct AsyncRetryer {
    engine: Rc<Engine>,
}

impl AsyncRetryer {
    /// The JavaScript object of a retryer made here (`retryFetch` makes one
    /// per call), with its `fn`, `key` and `options`.
    pub fn wrap(
        engine: Rc<Engine>,
        fn_: &JsValue,
        key: &JsValue,
        options: &JsValue,
    ) -> Result<JsValue, JsValue> {
        let me: JsValue = AsyncRetryer { engine }.into();
        props::set(&me, "fn", fn_)?;
        props::set(&me, "key", key)?;
        props::set(&me, "options", options)?;
        Ok(me)
    }
}

impl Drop for AsyncRetryer {
    /// `free()` and `Symbol.dispose` end an active flow (`onAbort('manual')`)
    /// and clear its timers; a retryer the collector finalizes has none.
    fn drop(&mut self) {
        self.engine.dispose();
    }
}

#[wasm_bindgen]
impl AsyncRetryer {
    /// `new AsyncRetryer(fn, initialOptions?)`. Throws a `TypeError` or
    /// `RangeError` naming the option and the value for bad input.
    #[wasm_bindgen(constructor)]
    pub fn construct(fn_: JsValue, initial_options: JsValue) -> Result<JsValue, JsValue> {
        if !fn_.is_function() {
            return Err(errors::type_error(
                &["'fn' must be a function to retry; got ", &show(&fn_)].concat(),
            ));
        }
        let given = input::read(&initial_options)?;
        let built = input::build(Policy::default(), None, &given)?;
        let extras = built.extras;
        let engine = Rc::new(Engine::new(
            engine::shared(built.policy),
            extras.budget.flatten(),
            extras.breaker.flatten(),
        ));
        let key = extras.key.unwrap_or(JsValue::UNDEFINED);
        let me = AsyncRetryer::wrap(Rc::clone(&engine), &fn_, &key, &built.view)?;
        Engine::set_initial(&me, extras.last_result, extras.last_error);
        engine.hint_enabled(&me);
        Ok(me)
    }

    /// `retryer.store` of the retryer whose object is `me`: `state`,
    /// `get()` and `subscribe(listener)`. The entry makes it when `store` is
    /// first read and keeps it on the retryer.
    #[wasm_bindgen(js_name = _store, skip_typescript)]
    pub fn store(&self, me: JsValue) -> Result<JsValue, JsValue> {
        store::make(&me)
    }

    /// `store.state` (and `store.get()`).
    #[wasm_bindgen(js_name = _state, skip_typescript)]
    pub fn state(&self, me: JsValue) -> Result<JsValue, JsValue> {
        self.engine.state(&me)
    }

    /// `store.subscribe(listener)`.
    #[wasm_bindgen(js_name = _subscribe, skip_typescript)]
    pub fn subscribe(&self, me: JsValue, listener: JsValue) -> Result<Function, JsValue> {
        self.engine.subscribe(&me, listener)
    }

    /// `execute(...args)`.
    #[wasm_bindgen(js_name = _execute, variadic, skip_typescript)]
    pub fn execute(&self, me: JsValue, args: Array) -> Promise {
        let no_args = args.length() == 0;
        self.engine.execute(&me, args, Kind::Function { no_args })
    }

    /// `setOptions(newOptions)`: merged and validated; a refused value
    /// changes nothing.
    #[wasm_bindgen(js_name = _setOptions, skip_typescript)]
    pub fn set_options(&self, me: JsValue, new_options: JsValue) -> Result<(), JsValue> {
        let given = input::read(&new_options)?;
        let base = props::get(&me, "options")?;
        let built = input::build(self.engine.policy()?, Some(&base), &given)?;
        // Nothing above changed anything; from here on the options apply.
        props::set(&me, "options", &built.view)?;
        if let Some(key) = built.extras.key {
            props::set(&me, "key", &key)?;
        }
        self.engine
            .set_policy(&me, built.policy, built.extras.budget, built.extras.breaker)
    }

    /// `getAbortSignal()`.
    #[wasm_bindgen(js_name = _getAbortSignal, skip_typescript)]
    pub fn get_abort_signal(&self) -> JsValue {
        self.engine
            .abort_signal()
            .map_or(JsValue::NULL, JsValue::from)
    }

    /// `abort(reason = 'manual')`: one of pacer's reasons, which `onAbort`
    /// receives; anything else is a `TypeError` and changes nothing.
    #[wasm_bindgen(js_name = _abort, skip_typescript)]
    pub fn abort(&self, me: JsValue, reason: JsValue) -> Result<(), JsValue> {
        let reason = if reason.is_undefined() {
            AbortReason::Manual
        } else {
            reason
                .as_string()
                .and_then(|r| AbortReason::from_abort_name(&r))
                .ok_or_else(|| errors::abort_reason(&reason))?
        };
        self.engine.abort(&me, reason)
    }

    /// `reset()`.
    #[wasm_bindgen(js_name = _reset, skip_typescript)]
    pub fn reset(&self, me: JsValue) -> Result<(), JsValue> {
        self.engine.reset(&me)
    }
}
