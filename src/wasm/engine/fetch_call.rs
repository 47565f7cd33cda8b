//! The attempts of one `retryFetch` call: each a `fetch` of the call's
//! request, with the attempt's signal.
//!
//! What retries is the core's (`core::http` and the machine); this file
//! makes each attempt's request, turns a retryable response into a failed
//! attempt, answers `shouldRetry` and `retryAfter` for it, lets go of the
//! responses it will not return, and maps the flow's end onto `fetch`'s
//! contract: a `Response` (the last one when retries run out on a
//! retryable status), or a rejection with what `fetch` would reject with.

use alloc::rc::Rc;
use core::cell::{Cell, RefCell};

use js_sys::{Function, Object, Promise};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{spawn_local, JsFuture};
use web_sys::{AbortSignal, Request, Response};

use super::super::errors;
use super::super::js;
use super::super::props;
use crate::core::effect::{AbortReason, Outcome};
use crate::core::http::HttpPolicy;

/// One call's request and what its flow learnt.
pub struct FetchCall {
    pub http: Rc<HttpPolicy>,
    pub fetch: Function,
    pub input: JsValue,
    pub init: JsValue,
    /// The input, when it is a `Request` (cloned per attempt).
    pub request: Option<Request>,
    /// Whether the request may be sent more than once.
    pub retries: bool,
    /// The caller's `init.signal` and the `signal` option, as one.
    pub signal: Option<AbortSignal>,
    /// The last response that failed its attempt, and the error that
    /// stands for it.
    pub held: RefCell<Option<(JsValue, Response)>>,
    /// Why the flow was aborted, if it was.
    pub aborted: Cell<Option<AbortReason>>,
}

impl FetchCall {
    /// One attempt: a fetch with the attempt's `signal`, whose response
    /// `classify` (which calls [`FetchCall::fetched`]) turns into the
    /// attempt's outcome. Promise reactions, not a Rust future: a future's
    /// executor schedules itself with `queueMicrotask`, which fake timers
    /// (Jest's by default) replace, and each response would wait for the
    /// next tick of the fake clock.
    pub fn attempt(&self, signal: Option<AbortSignal>, classify: Option<Function>) -> Promise {
        // The last failing response is let go of before the next try.
        self.release();
        let Some(classify) = classify else {
            return Promise::reject(&errors::internal("fetch reaction"));
        };
        let sent = self
            .request_for(signal.as_ref())
            .and_then(|(input, init)| self.fetch.call2(&JsValue::UNDEFINED, &input, &init))
            .and_then(|sent| js::promise_resolve(&sent));
        match sent {
            Ok(sent) => sent.unchecked_ref::<js::Thenable>().map(&classify),
            Err(e) => Promise::reject(&e),
        }
    }

    /// What an attempt's fetch resolved with: the response, or, for a
    /// failing status when the request may be sent again, a rejected
    /// promise of an `HTTPError` (its `response` and `status` on it).
    pub fn fetched(&self, got: JsValue) -> JsValue {
        let Some(response) = got.dyn_ref::<Response>() else {
            return got;
        };
        if !(self.retries && self.http.fails(response.status())) {
            return got;
        }
        let error = match http_error(response) {
            Ok(error) => error,
            Err(e) => return Promise::reject(&e).into(),
        };
        // The previous one was released when this attempt began.
        if let Ok(mut held) = self.held.try_borrow_mut() {
            *held = Some((error.clone(), <Response as Clone>::clone(response)));
        }
        Promise::reject(&error).into()
    }

    /// This attempt's `(input, init)`: the `Request` cloned, the caller's
    /// init copied with the attempt's signal (a replayable body goes as it
    /// is: fetch reads its own copy each time).
    fn request_for(&self, signal: Option<&AbortSignal>) -> Result<(JsValue, JsValue), JsValue> {
        let input = match self.request.as_ref() {
            Some(r) => Request::clone(r)?.into(),
            None => self.input.clone(),
        };
        let init = Object::new();
        if self.init.is_object() {
            js::object_assign(&init, &self.init)?;
        }
        if let Some(s) = signal {
            props::set(&init, "signal", s)?;
        }
        Ok((input, init.into()))
    }

    /// Lets go of the last failing response: its body is cancelled (its
    /// connection freed), unless it is the one to return.
    pub fn release(&self) {
        if let Some(response) = self.take_held() {
            cancel_body(&response);
        }
    }

    /// Whether `error` is the held response's error.
    fn holds(&self, error: &JsValue) -> bool {
        self.held
            .try_borrow()
            .ok()
            .is_some_and(|h| h.as_ref().is_some_and(|(e, _)| Object::is(e, error)))
    }

    fn take_held(&self) -> Option<Response> {
        self.held.try_borrow_mut().ok()?.take().map(|(_, r)| r)
    }

    /// A copy of the held response, outside the borrow.
    fn held_response(&self) -> Option<Response> {
        let held = self.held.try_borrow().ok()?;
        held.as_ref().map(|(_, r)| <Response as Clone>::clone(r))
    }

    /// `shouldRetry`, after the user's function (if any) answered `user`:
    /// only a request that may be sent again, and only for a failing
    /// response, a network error (`fetch`'s `TypeError`) or an attempt that
    /// timed out (with `retryOnExecutionTimeout`).
    pub fn should_retry(&self, error: &JsValue, user: Option<bool>) -> bool {
        let timed_out = props::get(error, "name")
            .ok()
            .and_then(|n| n.as_string())
            .is_some_and(|n| n == "TimeoutError");
        let kind = self.holds(error) || error.has_type::<js_sys::TypeError>() || timed_out;
        self.retries && kind && user.unwrap_or(true)
    }

    /// `retryAfter`, after the user's function: its number if it gave one,
    /// else the held response's `Retry-After` under the HTTP policy.
    pub fn retry_after(&self, error: &JsValue, user: Option<f64>) -> Option<f64> {
        if user.is_some() {
            return user;
        }
        if !self.holds(error) {
            return None;
        }
        let response = self.held_response()?;
        // Read with no borrow held: a user's Response may run code here.
        let header = response.headers().get("retry-after").ok().flatten();
        self.http
            .hint(response.status(), header.as_deref(), js_sys::Date::now())
    }

    /// What the caller's promise settles with, for a flow that ended with
    /// `outcome` and `value` (its result or final error).
    pub fn settle(&self, outcome: Outcome, value: JsValue) -> Result<JsValue, JsValue> {
        let settled = match outcome {
            Outcome::Result => Ok(value),
            // Retries ran out on a failing response: that response.
            Outcome::Reject if self.holds(&value) => {
                return self.take_held().map(JsValue::from).ok_or(value);
            }
            Outcome::Reject => Err(value),
            Outcome::Undefined => match self.aborted.get() {
                Some(AbortReason::Signal) => Err(self
                    .signal
                    .as_ref()
                    .map_or(JsValue::UNDEFINED, AbortSignal::reason)),
                // The deadline cut the wait after a failing response.
                Some(AbortReason::TotalTimeout) if self.held_response().is_some() => {
                    return self.take_held().map(JsValue::from).ok_or(value);
                }
                Some(AbortReason::TotalTimeout) => Err(errors::dom_exception(
                    "retry-wasm: maxTotalExecutionTime exceeded",
                    "TimeoutError",
                )),
                Some(reason) => Err(errors::abort_error(reason.name())),
                // Cancelled (an AbortError thrown), or not enabled.
                None if props::is_abort_error(&value) => Err(value),
                None => Err(errors::dom_exception(
                    "retry-wasm: retryFetch is not enabled",
                    "AbortError",
                )),
            },
            Outcome::Invalid(_) | Outcome::Thrown => Err(value),
        };
        self.release();
        settled
    }
}

/// The error a failing response stands for in callbacks and `shouldRetry`:
/// an `Error` named `HTTPError`, with the `response` and its `status`.
fn http_error(response: &Response) -> Result<JsValue, JsValue> {
    let status = js::string_of(&response.status().into()).unwrap_or_default();
    let text = response.status_text();
    let message = if text.is_empty() {
        ["HTTP ", &status].concat()
    } else {
        ["HTTP ", &status, " ", &text].concat()
    };
    let error: JsValue = js_sys::Error::new(&message).into();
    props::set(&error, "name", &props::key_of("HTTPError"))?;
    props::set(&error, "status", &response.status().into())?;
    props::set(&error, "response", response)?;
    Ok(error)
}

/// Cancels a response body nobody will read, so its connection is freed.
/// The promise `cancel()` returns is taken at once (so its rejection, a
/// body already locked or gone, is no unhandled one, even where fake timers
/// hold back the task below) and awaited by a task of its own.
fn cancel_body(response: &Response) {
    if response.body_used() {
        return;
    }
    if let Some(body) = response.body() {
        let cancelled = JsFuture::from(body.cancel());
        spawn_local(async move {
            let _ = cancelled.await;
        });
    }
}
