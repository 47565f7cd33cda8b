//! The attempts of one `retryFetch` call: each a `fetch` of the call's
//! request, with the attempt's signal.
//!
//! What retries is the core's (`core::http` and the machine); this file
//! makes each attempt's request, turns a retryable response into a failed
//! attempt, answers `shouldRetry` and `retryAfter` for it, lets go of the
//! responses it will not return, and maps the flow's end onto `fetch`'s
//! contract: a `Response` (the last one when retries run out on a
//! retryable status), or a rejection with what `fetch` would reject with.
//!
//! A call that hedges (`core::http::HttpPolicy::hedges`) has several
//! attempts running, so several responses can be in hand at once: each is
//! held, by what it stands for, until the flow no longer needs it, and
//! every one the call does not return has its body cancelled (its
//! connection freed) by the time the call settles. A response that comes
//! for an attempt that no longer runs (a lost hedge, one past its
//! deadline, a flow that ended) is cancelled as it comes.

use alloc::rc::Rc;
use core::cell::{Cell, RefCell};

use js_sys::{Array, Function, Object, Promise, Reflect};
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{spawn_local, JsFuture};
use web_sys::{AbortSignal, ReadableStream, Request, Response};

use super::super::errors;
use super::super::fetch_js;
use super::super::js;
use super::super::props;
use super::super::tracing::{self, Channels};
use crate::core::effect::{AbortReason, Eval, Outcome, Provided};
use crate::core::http::{Failure, Hints, HttpPolicy};

/// The fields of `fetch`'s `init` that `new Request` reads: a `Request`
/// made by `beforeRetry` carries them, so they are not sent over it again.
/// Every other field (`duplex`, undici's `dispatcher`, a framework's `next`
/// or `cf`) still reaches the wrapped `fetch`.
const REQUEST_FIELDS: [&str; 14] = [
    "method",
    "headers",
    "body",
    "referrer",
    "referrerPolicy",
    "mode",
    "credentials",
    "cache",
    "redirect",
    "integrity",
    "keepalive",
    "signal",
    "window",
    "priority",
];

/// What `beforeRetry` receives beside the request, written out by
/// serde-wasm-bindgen.
#[derive(Serialize)]
struct GateInfo {
    /// The attempt about to be sent (2, 3, ...).
    attempt: u32,
    /// The failing response, or `undefined` after a network error.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    response: JsValue,
    /// What the last attempt failed with, as it was.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    error: JsValue,
}

/// A response of a running attempt, held until the flow no longer needs it.
pub struct Held {
    /// What it stands for: the `HTTPError` of a failing response; `None`
    /// for a hedged call's response that succeeded (until the flow settles,
    /// since another attempt's may win first).
    error: Option<JsValue>,
    response: Response,
    /// The engine took its attempt's outcome ([`FetchCall::took`]).
    taken: bool,
}

/// What becomes of a held response (see [`FetchCall::sift`]).
enum Fate {
    Keep,
    Go,
    Take,
}

/// One call's request and what its flow learnt.
pub struct FetchCall {
    /// The request's origin: its circuit's key when the function has a
    /// breaker (SPEC §2e), else empty.
    pub origin: alloc::string::String,
    pub http: Rc<HttpPolicy>,
    pub fetch: Function,
    pub input: JsValue,
    pub init: JsValue,
    /// The input, when it is a `Request` (cloned per attempt).
    pub request: Option<Request>,
    /// Whether the request may be sent more than once.
    pub retries: bool,
    /// Whether its attempts may overlap when the function has `hedge`.
    pub hedges: bool,
    /// The caller's signal: `init.signal`, else the `Request`'s own. Each
    /// attempt's signal follows it for as long as `fetch` keeps that signal
    /// (a returned response's body included, as `fetch`'s does).
    pub caller: Option<AbortSignal>,
    /// The caller's signal and the `signal` option, as one: what the flow
    /// listens to.
    pub signal: Option<AbortSignal>,
    /// The `beforeRetry` hook.
    pub before_retry: Option<Function>,
    /// The request `beforeRetry` settled on for the next attempt.
    pub next: RefCell<Option<Request>>,
    /// The responses of running attempts the flow may still need: those
    /// that failed, until a later outcome replaces them or the next try
    /// starts, and a hedged call's successes, until it settles.
    pub held: RefCell<Vec<Held>>,
    /// Why the flow was aborted, if it was.
    pub aborted: Cell<Option<AbortReason>>,
}

impl FetchCall {
    /// Attempt `attempt`: a fetch with the attempt's `signal`, whose
    /// response `classify` (which calls [`FetchCall::fetched`]) turns into
    /// the attempt's outcome. Promise reactions, not a Rust future: a
    /// future's executor schedules itself with `queueMicrotask`, which fake
    /// timers (Jest's by default) replace, and each response would wait for
    /// the next tick of the fake clock.
    pub fn attempt(
        &self,
        signal: Option<AbortSignal>,
        classify: Option<Function>,
        traced: Option<(&Channels, &JsValue)>,
    ) -> Promise {
        // The last failing response is let go of before the next try.
        self.release();
        let Some(classify) = classify else {
            return Promise::reject(&errors::internal("fetch reaction"));
        };
        let sent = self
            .request_for(signal)
            .and_then(|(input, init)| match traced {
                // fetch(input, init) inside the attempt channel's stores.
                Some((trace, context)) => {
                    tracing::put(context, "request", &input);
                    let args = Array::of2(&input, &init);
                    trace.call(context, &self.fetch, &JsValue::UNDEFINED, &args)
                }
                None => self.fetch.call2(&JsValue::UNDEFINED, &input, &init),
            })
            .and_then(|sent| js::promise_resolve(&sent));
        match sent {
            Ok(sent) => sent.unchecked_ref::<js::Thenable>().map(&classify),
            Err(e) => Promise::reject(&e),
        }
    }

    /// What an attempt's fetch resolved with: the response, or, for a
    /// failing status, a rejected promise of an `HTTPError` (its `response`
    /// and `status` on it): a failed attempt whether or not another may
    /// follow, so the budget and the callbacks count it. A response for an
    /// attempt that no longer `running` is nobody's: its body is cancelled.
    pub fn fetched(&self, running: bool, got: JsValue) -> JsValue {
        let Some(response) = fetch_js::as_response(&got) else {
            return got;
        };
        let response = &response;
        if !running {
            cancel_body(response);
            return got;
        }
        let failing = self.http.fails(response.status());
        if !failing && !self.hedges {
            return got;
        }
        let error = if failing {
            match http_error(response) {
                Ok(error) => Some(error),
                Err(e) => return Promise::reject(&e).into(),
            }
        } else {
            None
        };
        if let Ok(mut held) = self.held.try_borrow_mut() {
            held.push(Held {
                error: error.clone(),
                response: <Response as Clone>::clone(response),
                taken: false,
            });
        }
        match error {
            Some(error) => Promise::reject(&error).into(),
            None => got,
        }
    }

    /// The engine took the outcome `value` of a running attempt: the
    /// response it stands for is marked taken, and the failing responses
    /// of outcomes taken before are let go of (only the latest failure can
    /// be the call's answer). Responses whose attempt's outcome is still to
    /// come stay: a hedged call can have several in hand.
    pub fn took(&self, value: &JsValue) {
        self.sift(&mut |h| {
            if h.error.as_ref().is_some_and(|e| Object::is(e, value)) {
                h.taken = true;
                Fate::Keep
            } else if h.taken {
                Fate::Go
            } else {
                Fate::Keep
            }
        });
    }

    /// This attempt's `(input, init)`: the request `beforeRetry` settled
    /// on, or the `Request` input cloned, or the input as it is, with the
    /// caller's init copied and the attempt's signal. A replayable body
    /// goes as it is: fetch reads its own copy each time.
    fn request_for(&self, signal: Option<AbortSignal>) -> Result<(JsValue, JsValue), JsValue> {
        // Tied to the caller's: fetch keeps this signal for the response's
        // body, and so the caller's abort still reaches that body, for as
        // long as it is read and no longer.
        let signal = match (signal, self.caller.as_ref()) {
            (Some(own), Some(caller)) => Some(fetch_js::both(caller, &own)),
            (own, caller) => own.or_else(|| caller.cloned()),
        };
        let init = Object::new();
        if self.init.is_object() {
            js::object_assign(&init, &self.init)?;
        }
        let input = match self.next.take() {
            Some(made) => {
                for field in REQUEST_FIELDS {
                    Reflect::delete_property(&init, &props::key_of(field))?;
                }
                made.into()
            }
            None => self.fresh_input(),
        };
        if let Some(s) = signal {
            props::set(&init, "signal", &s)?;
        }
        Ok((input, init.into()))
    }

    /// The input for one more request: the `Request` cloned (one whose
    /// body cannot be cloned, read or locked, as it is, for `fetch` to
    /// refuse with its own error), or the input itself.
    fn fresh_input(&self) -> JsValue {
        match self.request.as_ref() {
            Some(r) => Request::clone(r).map_or_else(|_| r.into(), JsValue::from),
            None => self.input.clone(),
        }
    }

    /// Whether `fetch` refuses this call's input itself (an invalid URL,
    /// a bad method, a forbidden header value, a used body): asked only
    /// when an attempt rejected with a `TypeError`, to tell the caller's
    /// mistake from the network's.
    fn refused(&self) -> bool {
        fetch_js::new_request(&self.fresh_input(), &self.init).is_err()
    }

    /// The `beforeRetry` gate before attempt `attempt`, after a failure
    /// with `error`: the hook's answer, as a promise, called with a fresh
    /// `Request` for that attempt (its headers writable) and `{ attempt,
    /// response, error }`; `None` without a hook.
    pub fn gate(&self, attempt: u32, error: &JsValue) -> Option<Promise> {
        let hook = self.before_retry.as_ref()?;
        let asked = fetch_js::new_request(&self.fresh_input(), &self.init).and_then(|request| {
            let response = self
                .response_for(error)
                .map_or(JsValue::UNDEFINED, JsValue::from);
            let info = GateInfo {
                attempt,
                response,
                error: error.clone(),
            };
            let info = serde_wasm_bindgen::to_value(&info).unwrap_or(JsValue::UNDEFINED);
            let answer = hook.call2(&JsValue::UNDEFINED, &request, &info)?;
            if let Ok(mut next) = self.next.try_borrow_mut() {
                *next = Some(request);
            }
            js::promise_resolve(&answer)
        });
        Some(asked.unwrap_or_else(|e| Promise::reject(&e)))
    }

    /// What the hook's promise settled with, as the machine takes it:
    /// `false` stops, a `Request` is sent instead of the one it was given,
    /// anything else sends that one; a rejection ends the call with it.
    pub fn gated(&self, fulfilled: bool, value: &JsValue) -> Provided {
        if !fulfilled {
            self.next.take();
            return Provided::Threw;
        }
        if value.as_bool() == Some(false) {
            self.next.take();
            return Provided::Bool(false);
        }
        if let Some(made) = fetch_js::as_request(value) {
            if let Ok(mut next) = self.next.try_borrow_mut() {
                *next = Some(made);
            }
        }
        Provided::Bool(true)
    }

    /// Lets go of the failing responses whose outcome was taken (the next
    /// try starts, or a wait with no `beforeRetry` to hand them to): their
    /// bodies are cancelled, their connections freed.
    pub fn release(&self) {
        self.sift(&mut |h| if h.taken { Fate::Go } else { Fate::Keep });
    }

    /// Goes through the held responses with no borrow held (a `Response`
    /// subclass's `body` getter is user code): each is kept, let go of
    /// (its body cancelled), or taken out and returned (the last so named).
    fn sift(&self, fate: &mut dyn FnMut(&mut Held) -> Fate) -> Option<Response> {
        let list = match self.held.try_borrow_mut() {
            Ok(mut held) if !held.is_empty() => core::mem::take(&mut *held),
            _ => return None,
        };
        let mut kept = Vec::new();
        let mut taken = None;
        for mut h in list {
            match fate(&mut h) {
                Fate::Keep => kept.push(h),
                Fate::Go => cancel_body(&h.response),
                Fate::Take => taken = Some(h.response),
            }
        }
        if let Ok(mut held) = self.held.try_borrow_mut() {
            kept.append(&mut held);
            *held = kept;
        }
        taken
    }

    /// A copy of the held response `error` stands for.
    fn response_for(&self, error: &JsValue) -> Option<Response> {
        let held = self.held.try_borrow().ok()?;
        held.iter()
            .find(|h| h.error.as_ref().is_some_and(|e| Object::is(e, error)))
            .map(|h| <Response as Clone>::clone(&h.response))
    }

    /// Takes out the held response `error` stands for, or with `None` the
    /// failing one whose outcome was taken (there is one at most: taking
    /// an outcome lets go of those taken before).
    fn take_held(&self, error: Option<&JsValue>) -> Option<Response> {
        self.sift(&mut |h| {
            let it = match (error, h.error.as_ref()) {
                (Some(error), Some(e)) => Object::is(e, error),
                (None, Some(_)) => h.taken,
                _ => false,
            };
            if it {
                Fate::Take
            } else {
                Fate::Keep
            }
        })
    }

    /// What an attempt failed with, for the core's rule of what retries.
    fn failure(&self, error: &JsValue) -> Failure {
        if self.response_for(error).is_some() {
            return Failure::Status;
        }
        let name = props::get(error, "name").ok().and_then(|n| n.as_string());
        if name.as_deref() == Some("TimeoutError") {
            Failure::TimedOut
        } else if name.as_deref() == Some("CircuitOpenError") {
            Failure::CircuitOpen
        } else if !error.has_type::<js_sys::TypeError>() && name.as_deref() != Some("TypeError") {
            // (By name too: a fetch of another realm rejects with that
            // realm's TypeError.)
            Failure::Other
        } else if self.refused() {
            Failure::Refused
        } else {
            Failure::Network
        }
    }

    /// The answer to `what` after the option's function (if any) gave
    /// `given` (classified as `p`), for the flow's last `error`: a call
    /// asks for `shouldRetry` and `retryAfter` whether or not the user
    /// gave one, and answers with its request's rules.
    pub fn answer(&self, what: Eval, error: &JsValue, given: &JsValue, p: Provided) -> Provided {
        match (what, p) {
            (_, Provided::Threw) => p,
            (Eval::ShouldRetry, _) => {
                let user = (!given.is_undefined()).then(|| given.is_truthy());
                Provided::Bool(self.should_retry(error, user))
            }
            (Eval::RetryAfter, Provided::Number(_) | Provided::Nothing) => self
                .retry_after(error, given.as_f64())
                .map_or(Provided::Nothing, Provided::Number),
            _ => p,
        }
    }

    /// `shouldRetry`, after the user's function (if any) answered `user`:
    /// the core's rule for this request and what it failed with
    /// (`core::http::Failure::retryable`), and then the user's answer.
    pub fn should_retry(&self, error: &JsValue, user: Option<bool>) -> bool {
        self.failure(error).retryable(self.retries) && user.unwrap_or(true)
    }

    /// `retryAfter`, after the user's function: its number if it gave one,
    /// else what the held response's headers ask for under the HTTP policy.
    pub fn retry_after(&self, error: &JsValue, user: Option<f64>) -> Option<f64> {
        if user.is_some() {
            return user;
        }
        let response = self.response_for(error)?;
        // Read with no borrow held: a user's Response may run code here.
        let headers = response.headers();
        let get = |name| headers.get(name).ok().flatten();
        let (retry_after, reset, x_reset) = (
            get("retry-after"),
            get("ratelimit-reset"),
            get("x-ratelimit-reset"),
        );
        let hints = Hints {
            retry_after: retry_after.as_deref(),
            ratelimit_reset: reset.as_deref(),
            x_ratelimit_reset: x_reset.as_deref(),
        };
        self.http
            .hint(response.status(), hints, js_sys::Date::now())
    }

    /// What the caller's promise settles with, for a flow that ended with
    /// `outcome` and `value` (its result or final error).
    pub fn settle(&self, outcome: Outcome, value: JsValue) -> Result<JsValue, JsValue> {
        let settled = match outcome {
            Outcome::Result => Ok(value),
            // The flow ended on a failing response: that response.
            Outcome::Reject => self.take_held(Some(&value)).map(JsValue::from).ok_or(value),
            // The caller's signal or the `signal` option: its reason, as
            // fetch rejects.
            Outcome::Undefined if self.signal.as_ref().is_some_and(AbortSignal::aborted) => {
                Err(self.signal.as_ref().map_or(value, AbortSignal::reason))
            }
            Outcome::Undefined => match self.aborted.get() {
                // The deadline cut the wait after a failing response: that
                // response.
                Some(AbortReason::TotalTimeout) => {
                    self.take_held(None).map(JsValue::from).ok_or_else(|| {
                        errors::dom_exception(
                            "retry-wasm: maxTotalExecutionTime exceeded",
                            "TimeoutError",
                        )
                    })
                }
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
        // Every other response in hand is let go of: the failing ones, and
        // a hedged call's losers whose outcome never came to be taken.
        let kept = settled.as_ref().ok();
        self.sift(&mut |h| match kept {
            Some(k) if Object::is(h.response.as_ref(), k) => Fate::Keep,
            _ => Fate::Go,
        });
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

/// A response (or anything else) that came for a flow that is over: a
/// response's body is cancelled, since nobody will read it.
pub fn discard(got: &JsValue) {
    if let Some(response) = fetch_js::as_response(got) {
        cancel_body(&response);
    }
}

/// Cancels a response body nobody will read, so its connection is freed.
fn cancel_body(response: &Response) {
    if response.body_used() {
        return;
    }
    if let Some(body) = response.body() {
        cancel_stream(&body, &JsValue::UNDEFINED);
    }
}

/// Cancels `stream` with `reason`. The promise `cancel()` returns is taken
/// at once (so its rejection, a stream already locked or gone, is no
/// unhandled one, even where fake timers hold back the task below) and
/// awaited by a task of its own.
pub fn cancel_stream(stream: &ReadableStream, reason: &JsValue) {
    let cancelled = JsFuture::from(stream.cancel_with_reason(reason));
    spawn_local(async move {
        let _ = cancelled.await;
    });
}
