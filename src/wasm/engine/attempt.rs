//! What an attempt is, by kind: the one seam between an `AsyncRetryer`,
//! whose attempts call its function, and a `retryFetch` call, whose
//! attempts are fetches that also answer `shouldRetry` and `retryAfter`
//! and map the flow's end onto `fetch`'s contract. Everything else about a
//! flow is the same for both.

#[cfg(feature = "fetch")]
use alloc::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortSignal;

#[cfg(feature = "fetch")]
use super::super::fetch_js;
use super::super::props;
use super::super::tracing::Channels;
#[cfg(feature = "fetch")]
use super::fetch_call::FetchCall;
use crate::core::effect::{AbortReason, Eval, Outcome, Provided};
use crate::core::slots::Address;

/// The attempts of one flow.
pub enum Kind {
    /// `me.fn(...args)`, `no_args` when `args` is empty (a spread call
    /// costs more than a plain one).
    Function { no_args: bool },
    /// The fetches of one `retryFetch` call (the build with `retryFetch`).
    #[cfg(feature = "fetch")]
    Fetch(Rc<FetchCall>),
}

impl Kind {
    /// Whether the attempts of a flow may overlap when its policy has
    /// `hedge` (SPEC §2c): a function's always; a fetch's when the core
    /// said so of its request (§2c rule 10, `core::http::HttpPolicy::hedges`).
    pub fn hedges(&self) -> bool {
        match self {
            Kind::Function { .. } => true,
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => call.hedges,
        }
    }

    /// The key of the circuit its attempts ask (SPEC §2e): a fetch's
    /// origin, `''` for a function.
    pub fn circuit_key(&self) -> &str {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => &call.origin,
            Kind::Function { .. } => "",
        }
    }

    /// The wait a circuit's refusal asks for (`ms`, `Infinity` while
    /// isolated), as a server hint: a fetch's within `maxRetryAfter`.
    pub fn circuit_hint(&self, ms: f64) -> f64 {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) if ms.is_finite() => ms.min(call.http.max_retry_after),
            _ => ms,
        }
    }

    /// Whether a function is called with no arguments.
    pub fn no_args(&self) -> bool {
        matches!(self, Kind::Function { no_args: true })
    }

    /// The outside signal: the `signal` option of the retryer whose object
    /// is `me` (an `AbortSignal`, or an object shaped like one), or for a
    /// fetch, the caller's `init.signal` and the option as one.
    pub fn outside_signal(&self, me: &JsValue) -> Option<AbortSignal> {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => call.signal.clone(),
            Kind::Function { .. } => {
                let options = props::get(me, "options").ok()?;
                let signal = props::get(&options, "signal").ok()?;
                props::is_signal(&signal).then(|| signal.unchecked_into())
            }
        }
    }

    /// What a `retryFetch` call's traces carry as `request`: the input as
    /// given.
    pub fn request(&self) -> Option<&JsValue> {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => Some(&call.input),
            Kind::Function { .. } => None,
        }
    }

    /// What an attempt's trace carries as `response`: the `Response` a
    /// `retryFetch` attempt got, failing or not.
    pub fn response(&self, fulfilled: bool, value: &JsValue) -> Option<JsValue> {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(_) if fulfilled => Some(value.clone()),
            #[cfg(feature = "fetch")]
            Kind::Fetch(_) if value.is_object() => props::get(value, "response")
                .ok()
                .filter(|r| fetch_js::as_response(r).is_some()),
            _ => {
                let _ = (fulfilled, value);
                None
            }
        }
    }

    /// A wait starts: the failing response will not be returned (unless
    /// a `beforeRetry` hook, which is handed it after the wait, stops the
    /// call: then it is, and it is let go of when the next attempt starts).
    pub fn before_wait(&self) {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) if call.before_retry.is_none() => call.release(),
            _ => {}
        }
    }

    /// The `beforeRetry` gate before attempt `attempt`, after a failure
    /// with `error`: a promise of the hook's answer, or `None` to go on at
    /// once.
    pub fn gate(&self, attempt: u32, error: &JsValue) -> Option<Promise> {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => call.gate(attempt, error),
            Kind::Function { .. } => {
                let _ = (attempt, error);
                None
            }
        }
    }

    /// The gate's promise settled with `value`: the machine's answer.
    pub fn gated(&self, fulfilled: bool, value: &JsValue) -> Provided {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => call.gated(fulfilled, value),
            Kind::Function { .. } => {
                let _ = (fulfilled, value);
                Provided::Bool(true)
            }
        }
    }

    /// The engine took `value`, the outcome of a running attempt (a fetch
    /// lets go of the responses it no longer needs).
    pub fn took(&self, value: &JsValue) {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => call.took(value),
            Kind::Function { .. } => {
                let _ = value;
            }
        }
    }

    /// The flow is aborted with `reason`.
    pub fn aborted(&self, reason: AbortReason) {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => call.aborted.set(Some(reason)),
            Kind::Function { .. } => {
                let _ = reason;
            }
        }
    }

    /// A fetch attempt with the attempt's `signal`, whose response is
    /// looked at by the `_fetched` handler bound to `(at, gen, attempt)`:
    /// the retryer's address, the flow and the attempt; `None` for a
    /// function (the engine calls it, in its async context).
    pub fn fetch(
        &self,
        signal: impl FnOnce() -> Option<AbortSignal>,
        (at, gen, attempt): (Address, u32, u32),
        traced: Option<(&Channels, &JsValue)>,
    ) -> Option<Promise> {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => {
                let classify = super::wakeups::fetched(at, gen, attempt);
                Some(call.attempt(signal(), classify, traced))
            }
            Kind::Function { .. } => {
                let _ = (signal, at, gen, attempt, traced);
                None
            }
        }
    }

    /// The answer to `what` after the option's function (if any) gave
    /// `given` (classified as `p`), for the flow's last `error`. A
    /// `retryFetch` call asks for `shouldRetry` and `retryAfter` whether
    /// or not the user gave one, and answers with its request's rules.
    pub fn answer(&self, what: Eval, error: &JsValue, given: &JsValue, p: Provided) -> Provided {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => call.answer(what, error, given, p),
            Kind::Function { .. } => {
                let _ = (what, error, given);
                p
            }
        }
    }

    /// What the caller's promise settles with for a flow that ended with
    /// `outcome` and `value` (its result, or what it rejects with): `Ok`
    /// to resolve, `Err` to reject.
    pub fn settle(&self, outcome: Outcome, value: JsValue) -> Result<JsValue, JsValue> {
        match self {
            #[cfg(feature = "fetch")]
            Kind::Fetch(call) => call.settle(outcome, value),
            Kind::Function { .. } => match outcome {
                Outcome::Result => Ok(value),
                Outcome::Undefined => Ok(JsValue::UNDEFINED),
                Outcome::Reject | Outcome::Invalid(_) | Outcome::Thrown => Err(value),
            },
        }
    }
}
