//! `retryFetch(options?)`: `fetch` with retries, as a function with
//! `fetch`'s own signature.
//!
//! Each call is a flow of its own retryer (calls never abort each other),
//! whose attempts are fetches made here instead of calls of a user
//! function. What retries is the core's (`core::http` and the machine);
//! this file reads the request, makes each attempt's request, turns a
//! retryable response into a failed attempt, and maps the flow's end onto
//! `fetch`'s contract: a `Response` (the last one when retries run out on
//! a retryable status), or a rejection with what `fetch` would reject with.

use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use js_sys::{Array, Function, Object, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, spawn_local, JsFuture};
use web_sys::{AbortSignal, Headers, ReadableStream, Request, Response};

use super::errors;
use super::js;
use super::options::{self, Given};
use super::pump::Inner;
use super::retryer::AsyncRetryer;
use super::values;
use crate::core::budget::Budget;
use crate::core::effect::{AbortReason, Outcome};
use crate::core::http::{self, HttpPolicy, RequestKind};
use crate::core::options::{ErrorKind, Opt, Policy, Throw};

/// What every call of one `retryFetch` function shares.
pub struct FetchConfig {
    /// The validated policy (with `shouldRetry` and `retryAfter` asked for,
    /// so this file can add its answers), without and with a signal.
    plain: Rc<Policy>,
    signalled: Rc<Policy>,
    budget: Option<Rc<RefCell<Budget>>>,
    http: HttpPolicy,
    /// `retryer.options` of each call's retryer.
    view: JsValue,
    /// The `fetch` option; `undefined`: `globalThis.fetch` at each call.
    fetch: JsValue,
    /// The `signal` option.
    signal: Option<AbortSignal>,
}

/// One call's request and what its flow learnt.
pub struct FetchCall {
    config: Rc<FetchConfig>,
    fetch: Function,
    input: JsValue,
    init: JsValue,
    /// The input, when it is a `Request` (cloned per attempt).
    request: Option<Request>,
    /// Whether the request may be sent more than once.
    retries: bool,
    /// The caller's `init.signal` and the `signal` option, as one.
    signal: Option<AbortSignal>,
    /// The last response that failed its attempt, and the error that
    /// stands for it.
    held: RefCell<Option<(JsValue, Response)>>,
    /// Why the flow was aborted, if it was.
    aborted: Cell<Option<AbortReason>>,
}

/// The options only `retryFetch` takes.
const OWN: [&str; 5] = [
    "methods",
    "statusCodes",
    "afterStatusCodes",
    "maxRetryAfter",
    "fetch",
];

/// `fetch` with retries: `retryFetch(options?)` returns a function with
/// `fetch`'s signature, `(input, init?) => Promise<Response>`. Options: every
/// `AsyncRetryer` option but `throwOnError` (defaults `maxAttempts: 3`,
/// `baseWait: 300`, `jitter: 'full'`), plus `methods` (default `GET HEAD
/// OPTIONS PUT DELETE TRACE`; POST and PATCH also with an `Idempotency-Key`
/// header), `statusCodes` (default `408 429 500 502 503 504`),
/// `afterStatusCodes` (default `413 429 503`: their `Retry-After` sets the
/// wait), `maxRetryAfter` (ms, default `Infinity`) and `fetch` (default
/// `globalThis.fetch`, looked up per call). Bad options throw here, before
/// any request.
#[wasm_bindgen(js_name = retryFetch)]
pub fn retry_fetch(options: JsValue) -> Result<Function, JsValue> {
    let config = Rc::new(configure(&options)?);
    let call = Closure::<dyn Fn(JsValue, JsValue) -> Promise>::new(move |input, init| {
        start(&config, input, init).unwrap_or_else(|e| Promise::reject(&e))
    });
    Ok(call.into_js_value().unchecked_into())
}

fn configure(options: &JsValue) -> Result<FetchConfig, JsValue> {
    let (given, own) = read(options)?;
    let mut http = HttpPolicy::default();
    let mut fetch = JsValue::UNDEFINED;
    for (name, value) in &own {
        match *name {
            "methods" => {
                http.methods = list(name, value, false, |v| {
                    let m = v.as_string().ok_or(http::HttpError::Method)?;
                    http::check_method(&m)
                })?
            }
            "statusCodes" => http.status_codes = list(name, value, true, status)?,
            "afterStatusCodes" => http.after_status_codes = list(name, value, true, status)?,
            "maxRetryAfter" => {
                if !value.is_undefined() {
                    let ms = value.as_f64().ok_or_else(|| {
                        errors::must_be(
                            name,
                            http::HttpError::MaxRetryAfter.words(),
                            value,
                            ErrorKind::Type,
                        )
                    })?;
                    http.max_retry_after = http::check_max_retry_after(ms)
                        .map_err(|e| errors::must_be(name, e.words(), value, ErrorKind::Range))?;
                }
            }
            _ => {
                if !value.is_undefined() && !value.is_function() {
                    return Err(errors::must_be(name, "a function", value, ErrorKind::Type));
                }
                fetch = value.clone();
            }
        }
    }
    // retryFetch's defaults first, then what was given over them.
    let mut all = Vec::with_capacity(given.len() + 2);
    all.push(Given {
        opt: Opt::BaseWait,
        value: 300.into(),
    });
    all.push(Given {
        opt: Opt::Jitter,
        value: values::key_of("full"),
    });
    all.extend(given);
    let mut policy = Policy::default();
    let extras = options::apply(&mut policy, &all)?;
    let view: JsValue = options::view(None, &all, &policy)?.into();
    if policy.tracks_nesting() {
        super::nesting::enable();
    }
    // This file answers both for every attempt (`FetchCall::should_retry`,
    // `FetchCall::retry_after`), and a failure always rejects (or returns
    // the last response), as fetch's contract has it.
    policy.should_retry = true;
    policy.retry_after = true;
    policy.throw_on_error = Some(Throw::Always);
    let signal = values::get(&view, "signal")
        .ok()
        .filter(values::is_signal)
        .map(JsCast::unchecked_into);
    let mut signalled = policy.clone();
    signalled.signal = true;
    policy.signal = false;
    Ok(FetchConfig {
        plain: Rc::new(policy),
        signalled: Rc::new(signalled),
        budget: extras.budget.flatten(),
        http,
        view,
        fetch,
        signal,
    })
}

type Entries = (Vec<Given>, Vec<(&'static str, JsValue)>);

/// The options, read once: retryer options for the core, and this file's.
fn read(options: &JsValue) -> Result<Entries, JsValue> {
    let mut given = Vec::new();
    let mut own = Vec::new();
    options::read_entries(options, "retryFetch options", |name, value| {
        if let Some(own_name) = OWN.iter().find(|n| **n == name) {
            own.push((*own_name, value));
        } else if name == "throwOnError" {
            return Err(errors::type_error(
                "retryFetch takes no 'throwOnError': it resolves a Response and rejects as fetch does",
            ));
        } else if let Some(opt) = Opt::from_name(&name) {
            given.push(Given { opt, value });
        } else {
            return Err(errors::unknown_option(&name, &value));
        }
        Ok(())
    })?;
    Ok((given, own))
}

fn status(v: &JsValue) -> Result<u16, http::HttpError> {
    http::check_status(v.as_f64().ok_or(http::HttpError::Status)?)
}

/// A list option: an array whose every entry `check` accepts; its entries
/// are `numbers` (status codes) or strings (methods).
fn list<T>(
    name: &'static str,
    value: &JsValue,
    numbers: bool,
    check: impl Fn(&JsValue) -> Result<T, http::HttpError>,
) -> Result<Vec<T>, JsValue> {
    if !js::is_array(value).unwrap_or(false) {
        let words = if name == "methods" {
            "an array of HTTP method names"
        } else {
            "an array of integer status codes from 100 to 599"
        };
        return Err(errors::must_be(name, words, value, ErrorKind::Type));
    }
    let len = values::length_of(value).unwrap_or(0);
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let entry = js_sys::Reflect::get_u32(value, i)
            .map_err(|e| errors::unreadable(&["option '", name, "'"].concat(), &e))?;
        match check(&entry) {
            Ok(v) => out.push(v),
            Err(e) => {
                let index = js::string_of(&i.into()).unwrap_or_default();
                let label = [name, "[", &index, "]"].concat();
                let wrong_type = if numbers {
                    entry.as_f64().is_none()
                } else {
                    entry.as_string().is_none()
                };
                return Err(errors::must_be(
                    &label,
                    e.words(),
                    &entry,
                    kind_of(wrong_type),
                ));
            }
        }
    }
    Ok(out)
}

/// A `TypeError` for a value of the wrong type, else a `RangeError`.
fn kind_of(wrong_type: bool) -> ErrorKind {
    if wrong_type {
        ErrorKind::Type
    } else {
        ErrorKind::Range
    }
}

/// One call: a retryer of its own runs the flow.
fn start(config: &Rc<FetchConfig>, input: JsValue, init: JsValue) -> Result<Promise, JsValue> {
    let fetch: Function = if config.fetch.is_undefined() {
        values::get(&js_sys::global(), "fetch")?
    } else {
        config.fetch.clone()
    }
    .dyn_into()
    .map_err(|_| errors::type_error("retryFetch found no fetch function (globalThis.fetch)"))?;
    let init_object = init.is_object();
    let request = input.dyn_ref::<Request>().cloned();
    let init_get = |name: &'static str| -> Result<JsValue, JsValue> {
        if init_object {
            values::get(&init, name)
        } else {
            Ok(JsValue::UNDEFINED)
        }
    };
    let method = match init_get("method")?.as_string() {
        Some(m) => m,
        None => request
            .as_ref()
            .map_or_else(|| String::from("GET"), Request::method),
    };
    let headers = init_get("headers")?;
    let idempotency_key = if !headers.is_undefined() {
        Headers::new_with_str_sequence_sequence(&headers)?.has(http::IDEMPOTENCY_KEY)?
    } else {
        match request.as_ref() {
            Some(r) => r.headers().has(http::IDEMPOTENCY_KEY)?,
            None => false,
        }
    };
    let replayable_body = !init_get("body")?.has_type::<ReadableStream>();
    let retries = config.http.retries(RequestKind {
        method: &method,
        idempotency_key,
        replayable_body,
    });
    let caller = init_get("signal")?;
    let caller = values::is_signal(&caller).then(|| caller.unchecked_into::<AbortSignal>());
    let signal = match (caller, config.signal.clone()) {
        (Some(a), Some(b)) => Some(AbortSignal::any(&Array::of2(&a, &b))),
        (a, b) => a.or(b),
    };
    let policy = if signal.is_some() {
        Rc::clone(&config.signalled)
    } else {
        Rc::clone(&config.plain)
    };
    let call = FetchCall {
        config: Rc::clone(config),
        fetch: fetch.clone(),
        input,
        init,
        request,
        retries,
        signal,
        held: RefCell::new(None),
        aborted: Cell::new(None),
    };
    let inner = Rc::new(Inner::for_fetch(policy, config.budget.clone(), call));
    let me = AsyncRetryer::wrap(Rc::clone(&inner));
    values::set(&me, "fn", &fetch)?;
    values::set(&me, "key", &values::get(&config.view, "key")?)?;
    values::set(&me, "options", &config.view)?;
    Ok(inner.execute(me, Array::new()))
}

impl FetchCall {
    /// The caller's signal and the `signal` option, as one.
    pub fn signal(&self) -> Option<AbortSignal> {
        self.signal.clone()
    }

    /// One attempt: a fetch with the attempt's `signal`. A response with a
    /// failing status, when the request may be sent again, fails the
    /// attempt with an `HTTPError` (its `response` and `status` on it).
    pub fn attempt(self: &Rc<Self>, signal: Option<AbortSignal>) -> Promise {
        let call = Rc::clone(self);
        future_to_promise(async move {
            let (input, init) = call.request_for(signal.as_ref())?;
            let sent = call.fetch.call2(&JsValue::UNDEFINED, &input, &init)?;
            let got = JsFuture::from(js::promise_resolve(&sent)?).await?;
            let Some(response) = got.dyn_ref::<Response>() else {
                return Ok(got);
            };
            if !(call.retries && call.config.http.fails(response.status())) {
                return Ok(got);
            }
            let error = http_error(response)?;
            // The previous one was released when this attempt began.
            if let Ok(mut held) = call.held.try_borrow_mut() {
                *held = Some((error.clone(), <Response as Clone>::clone(response)));
            }
            Err(error)
        })
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
            values::set(&init, "signal", s)?;
        }
        Ok((input, init.into()))
    }

    /// Lets go of the last failing response: its body is cancelled (its
    /// connection freed), unless it is the one to return.
    pub fn release(&self) {
        let held = self.held.try_borrow_mut().ok().and_then(|mut h| h.take());
        if let Some((_, response)) = held {
            cancel_body(&response);
        }
    }

    /// Records why the flow was aborted.
    pub fn aborted(&self, reason: AbortReason) {
        self.aborted.set(Some(reason));
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

    /// `shouldRetry`, after the user's function (if any) answered `user`:
    /// only a request that may be sent again, and only for a failing
    /// response, a network error (`fetch`'s `TypeError`) or an attempt that
    /// timed out (with `retryOnExecutionTimeout`).
    pub fn should_retry(&self, error: &JsValue, user: Option<bool>) -> bool {
        let timed_out = values::get(error, "name")
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
        let held = self.held.try_borrow().ok()?;
        let (_, response) = held.as_ref()?;
        let header = response.headers().get("retry-after").ok().flatten();
        self.config
            .http
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
                Some(AbortReason::TotalTimeout) if self.held_response() => {
                    return self.take_held().map(JsValue::from).ok_or(value);
                }
                Some(AbortReason::TotalTimeout) => Err(errors::dom_exception(
                    "retry-wasm: maxTotalExecutionTime exceeded",
                    "TimeoutError",
                )),
                Some(reason) => Err(errors::abort_error(reason.name())),
                // Cancelled (an AbortError thrown), or not enabled.
                None if values::is_abort_error(&value) => Err(value),
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

    fn held_response(&self) -> bool {
        self.held.try_borrow().is_ok_and(|h| h.is_some())
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
    values::set(&error, "name", &values::key_of("HTTPError"))?;
    values::set(&error, "status", &response.status().into())?;
    values::set(&error, "response", response)?;
    Ok(error)
}

/// Cancels a response body nobody will read, so its connection is freed;
/// the promise `cancel()` returns is awaited so that its rejection (a body
/// already locked or gone) is no unhandled one.
fn cancel_body(response: &Response) {
    if response.body_used() {
        return;
    }
    if let Some(body) = response.body() {
        let cancelled = body.cancel();
        spawn_local(async move {
            let _ = JsFuture::from(cancelled).await;
        });
    }
}
