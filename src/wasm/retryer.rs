//! The exported `AsyncRetryer` class.
//!
//! `new AsyncRetryer(fn, options)` returns an object made here. What pacer keeps as public fields lives on that object
//! as own properties, read when needed: `fn` (the function being retried),
//! `key`, and `options` (the merged options, defaults included). Keeping
//! them there, and not in Rust, matters: a function or callback that closes
//! over its retryer then forms a cycle the garbage collector can see.
//!
//! The methods are bound, as pacer's are (`const { execute } = retryer`,
//! `onClick={retryer.abort}`): the entry (`js/index.js`) gives the class
//! accessors that bind each method of this file on first read, with the
//! retryer's own object as the `me` of those that need it, and keep the
//! bound function on the retryer.

use alloc::rc::Rc;

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;

use super::errors;
use super::options;
use super::pump::{self, Inner};
use super::store::RetryerStore;
use super::values::{self, show};
use crate::core::options::Policy;

/// Retries an async function with backoff, deadlines and cancellation; a
/// drop-in for `@tanstack/pacer`'s `AsyncRetryer` (same options, callbacks,
/// state and store). Options and their defaults are in the README and
/// `index.d.ts`.
#[wasm_bindgen]
pub struct AsyncRetryer {
    inner: Rc<Inner>,
}

impl AsyncRetryer {
    /// The JavaScript object of a retryer made here (`retryFetch` makes one
    /// per call).
    pub fn wrap(inner: Rc<Inner>) -> JsValue {
        AsyncRetryer { inner }.into()
    }
}

impl Drop for AsyncRetryer {
    /// `free()` and `Symbol.dispose` end an active flow (`onAbort('manual')`)
    /// and clear its timers; a retryer the collector finalizes has none.
    fn drop(&mut self) {
        self.inner.dispose();
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
        let given = options::read(&initial_options)?;
        let mut policy = Policy::default();
        let extras = options::apply(&mut policy, &given)?;
        let view = options::view(None, &given, &policy)?;
        if policy.tracks_nesting() {
            super::nesting::enable();
        }
        let inner = Rc::new(Inner::new(policy, extras.budget.flatten()));
        inner.set_last(extras.last_result, extras.last_error);
        let me: JsValue = AsyncRetryer {
            inner: Rc::clone(&inner),
        }
        .into();
        values::set(&me, "fn", &fn_)?;
        values::set(&me, "key", &extras.key.unwrap_or(JsValue::UNDEFINED))?;
        values::set(&me, "options", &view)?;
        inner.hint_enabled(&me);
        Ok(me)
    }

    /// The state store of the retryer whose object is `me`: `state`,
    /// `get()` and `subscribe(listener)`. The entry makes it when `store` is
    /// first read and keeps it on the retryer.
    #[wasm_bindgen(js_name = _store, skip_typescript)]
    pub fn store(&self) -> Result<JsValue, JsValue> {
        RetryerStore::make(Rc::clone(&self.inner))
    }

    /// `execute(...args)`, bound by the entry to the retryer with its own
    /// object as `me` (a method only learns its `this` pointer, and flows
    /// need the object: callbacks receive it, `fn` is called on it).
    #[wasm_bindgen(js_name = _execute, variadic, skip_typescript)]
    pub fn execute_unbound(&self, me: JsValue, args: Array) -> Promise {
        self.inner.execute(me, args)
    }

    /// `setOptions(newOptions)`, bound as `execute` is.
    #[wasm_bindgen(js_name = _setOptions, skip_typescript)]
    pub fn set_options(&self, me: JsValue, new_options: JsValue) -> Result<(), JsValue> {
        let given = options::read(&new_options)?;
        let mut policy = self.inner.policy();
        let extras = options::apply(&mut policy, &given)?;
        let base = pump::options_view(&me).unwrap_or(JsValue::UNDEFINED);
        let view = options::view(Some(&base), &given, &policy)?;
        // Nothing above changed anything; from here on the options apply.
        if policy.tracks_nesting() {
            super::nesting::enable();
        }
        self.inner.set_policy(policy, extras.budget);
        values::set(&me, "options", &view)?;
        if let Some(key) = extras.key {
            values::set(&me, "key", &key)?;
        }
        self.inner.hint_enabled(&me);
        self.inner.pump();
        Ok(())
    }

    /// `getAbortSignal()`.
    #[wasm_bindgen(js_name = _getAbortSignal, skip_typescript)]
    pub fn get_abort_signal(&self) -> JsValue {
        self.inner
            .abort_signal()
            .map_or(JsValue::NULL, JsValue::from)
    }

    /// `abort()`.
    #[wasm_bindgen(js_name = _abort, skip_typescript)]
    pub fn abort_unbound(&self) {
        self.inner.abort();
    }

    /// `reset()`.
    #[wasm_bindgen(js_name = _reset, skip_typescript)]
    pub fn reset_unbound(&self) {
        self.inner.reset();
    }
}
