//! `CircuitBreaker` and `CircuitOpenError` (SPEC §2e): the core's circuits
//! as a JavaScript class, shared like `RetryBudget`.

use alloc::rc::Rc;
use alloc::string::String;

use wasm_bindgen::prelude::*;

use super::circuit::{self, Circuits};
use super::errors;
use super::input;
use super::props::{self, show};
use super::shared;

/// A circuit breaker shared by any number of retryers and `retryFetch`
/// functions (the `breaker` option): one circuit per key (`retryFetch`
/// keys by the request's origin, everything else by `''`). A circuit that
/// sees too many failures opens and refuses attempts, without calling
/// anything, for `breakDuration`; then one probe finds out whether the
/// backend is back. It owns no timer.
#[wasm_bindgen]
pub struct CircuitBreaker {
    circuits: Rc<Circuits>,
}

/// The key of a method's `key` argument: `''` when left out.
fn key_of(method: &str, key: &JsValue) -> Result<String, JsValue> {
    if key.is_undefined() {
        return Ok(String::new());
    }
    key.as_string().ok_or_else(|| {
        errors::type_error(
            &[
                "CircuitBreaker.",
                method,
                "(key): key must be a string; got ",
                &show(key),
            ]
            .concat(),
        )
    })
}

#[wasm_bindgen]
impl CircuitBreaker {
    /// `new CircuitBreaker({ failureRatio, minimumThroughput,
    /// samplingDuration, consecutiveFailures, breakDuration, halfOpenCalls,
    /// onStateChange })`. Defaults: `failureRatio` 0.5, `minimumThroughput`
    /// 10, `samplingDuration` 30,000 ms, `consecutiveFailures` not set,
    /// `breakDuration` 5,000 ms (or a function of the opening),
    /// `halfOpenCalls` 1.
    #[wasm_bindgen(constructor)]
    pub fn construct(options: JsValue) -> Result<JsValue, JsValue> {
        let circuits = Rc::new(input::breaker(&options)?);
        let object: JsValue = CircuitBreaker {
            circuits: Rc::clone(&circuits),
        }
        .into();
        circuits.know(&object);
        shared::remember(&object, circuits).ok_or_else(|| errors::internal("breaker table"))?;
        Ok(object)
    }

    /// The circuit for `key` (default `''`) now: `'closed'`, `'open'`,
    /// `'half-open'` or `'isolated'`. An open circuit whose break has
    /// ended reads `'half-open'`; no probe is taken.
    pub fn state(&self, key: JsValue) -> Result<JsValue, JsValue> {
        Ok(props::key_of(self.circuits.state(&key_of("state", &key)?)))
    }

    /// Holds the circuit for `key` (default `''`) open until `reset(key)`.
    pub fn isolate(&self, key: JsValue) -> Result<(), JsValue> {
        self.circuits.force(&key_of("isolate", &key)?, false);
        Ok(())
    }

    /// Closes the circuit for `key` (default `''`) and empties its window.
    pub fn reset(&self, key: JsValue) -> Result<(), JsValue> {
        self.circuits.force(&key_of("reset", &key)?, true);
        Ok(())
    }

    /// Every key seen, with `{ state, calls, failures, failureRatio,
    /// retryAfter }` now (`retryAfter`: ms until an open circuit lets a
    /// probe through, `Infinity` isolated, else 0).
    pub fn snapshot(&self) -> js_sys::Object {
        self.circuits.snapshot()
    }
}

/// The `CircuitOpenError` class: what an attempt a circuit refused fails
/// with (`name` `'CircuitOpenError'`, `key`, `retryAfter`). One per realm.
#[wasm_bindgen(js_name = circuitOpenError)]
pub fn circuit_open_error() -> JsValue {
    circuit::open_error_class()
}
