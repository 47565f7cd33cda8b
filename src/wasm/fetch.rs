//! `retryFetch(options?)`: `fetch` with retries, as a function with
//! `fetch`'s own signature.
//!
//! Each call is a flow of its own retryer (calls never abort each other),
//! whose attempts are the fetches of `engine::FetchCall`. This file reads
//! the options once, when `retryFetch` is called, and starts each call.
//! What the calls share is split by kind: the Rust side ([`FetchCalls`]:
//! policies, budget, HTTP rules) and the JavaScript side (the options view,
//! the `fetch` and `signal` options) are both bound into the function it
//! returns, so that function holds them, and nothing in Rust holds the
//! JavaScript side.

use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use js_sys::{Array, ArrayBuffer, Function, Promise};
use wasm_bindgen::prelude::*;
use web_sys::{AbortSignal, Blob, FormData, Headers, ReadableStream, UrlSearchParams};

use super::circuit::{self, Circuits};
use super::engine::{Engine, FetchCall, Kind, SharedBudget};
use super::entries;
use super::errors::{self, Owner};
use super::fetch_js;
use super::input::{self, Given};
use super::js;
use super::props;
use super::retryer::AsyncRetryer;
use crate::core::http::{self, Body, HttpPolicy, RequestKind};
use crate::core::options::{ErrorKind, Opt, Policy, Throw};

/// What every call of one `retryFetch` function shares that is Rust.
#[wasm_bindgen]
pub struct FetchCalls {
    /// The validated policy (with `shouldRetry` and `retryAfter` asked for,
    /// so each call can add its request's answers), without and with a
    /// signal.
    plain: Rc<Policy>,
    signalled: Rc<Policy>,
    budget: Option<SharedBudget>,
    breaker: Option<Rc<Circuits>>,
    http: Rc<HttpPolicy>,
}

#[wasm_bindgen]
impl FetchCalls {
    /// One call of a `retryFetch` function, bound by `retryFetch` to what
    /// its calls share (see [`Shared`]).
    #[wasm_bindgen(js_name = _call, skip_typescript)]
    pub fn call(
        &self,
        view: JsValue,
        fetch: JsValue,
        signal: JsValue,
        before_retry: JsValue,
        input: JsValue,
        init: JsValue,
    ) -> Promise {
        let shared = Shared {
            view,
            fetch,
            signal,
            before_retry,
        };
        self.start(&shared, input, init)
            .unwrap_or_else(|e| Promise::reject(&e))
    }
}

/// The options only `retryFetch` takes.
const OWN: [&str; 6] = [
    "methods",
    "statusCodes",
    "afterStatusCodes",
    "maxRetryAfter",
    "fetch",
    "beforeRetry",
];

/// `fetch` with retries: `retryFetch(options?)` returns a function with
/// `fetch`'s signature, `(input, init?) => Promise<Response>`. Options: every
/// `AsyncRetryer` option but `throwOnError` (defaults `maxAttempts: 3`,
/// `baseWait: 300`, `jitter: 'full'`), plus `methods` (default `GET HEAD
/// OPTIONS PUT DELETE TRACE`; POST and PATCH also with an `Idempotency-Key`
/// header), `statusCodes` (default `408 429 500 502 503 504`),
/// `afterStatusCodes` (default `413 429 503`: their `Retry-After` sets the
/// wait), `maxRetryAfter` (ms, default `Infinity`) and `fetch` (default
/// `globalThis.fetch`, looked up per call), and `beforeRetry(request, {
/// attempt, response, error })`, a hook run after each wait that may change
/// the next attempt's request or stop. With `hedge`, the calls the core
/// lets hedge (reads whose body replays, `core::http::HttpPolicy::hedges`)
/// overlap their attempts; the others retry as usual. Bad options throw
/// here, before any request.
#[wasm_bindgen(js_name = retryFetch)]
pub fn retry_fetch(options: JsValue) -> Result<Function, JsValue> {
    let (calls, js) = configure(&options)?;
    let calls: JsValue = calls.into();
    let call = props::function(props::get(&calls, "_call")?)
        .ok_or_else(|| errors::internal("retryFetch call"))?;
    Ok(call.unchecked_ref::<js::Handler>().bind_values(
        &calls,
        &js.view,
        &js.fetch,
        &js.signal,
        &js.before_retry,
    ))
}

/// What the calls of one `retryFetch` function share that is JavaScript,
/// bound into the function it returns.
struct Shared {
    /// `retryer.options` of each call's retryer.
    view: JsValue,
    /// The `fetch` option; `undefined`: `globalThis.fetch` at each call.
    fetch: JsValue,
    /// The `signal` option, or `undefined`.
    signal: JsValue,
    /// The `beforeRetry` option, or `undefined`.
    before_retry: JsValue,
}

fn configure(options: &JsValue) -> Result<(FetchCalls, Shared), JsValue> {
    let (given, own) = read(options)?;
    let mut http = HttpPolicy::default();
    let mut fetch = JsValue::UNDEFINED;
    let mut before_retry = JsValue::UNDEFINED;
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
                    let words = http::HttpError::MaxRetryAfter.words();
                    let ms = value.as_f64().ok_or_else(|| {
                        errors::must_be(Owner::Retryer, name, words, value, ErrorKind::Type)
                    })?;
                    http.max_retry_after = http::check_max_retry_after(ms).map_err(|e| {
                        errors::must_be(Owner::Retryer, name, e.words(), value, ErrorKind::Range)
                    })?;
                }
            }
            _ => {
                if !value.is_undefined() && !value.is_function() {
                    return Err(errors::must_be(
                        Owner::Retryer,
                        name,
                        "a function",
                        value,
                        ErrorKind::Type,
                    ));
                }
                if *name == "fetch" {
                    fetch = value.clone();
                } else {
                    before_retry = value.clone();
                }
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
        value: props::key_of("full"),
    });
    all.extend(given);
    let input::Built {
        mut policy,
        extras,
        view,
    } = input::build(Policy::default(), None, &all)?;
    // This file answers both for every attempt (`FetchCall::should_retry`,
    // `FetchCall::retry_after`), and a failure always rejects (or returns
    // the last response), as fetch's contract has it.
    policy.should_retry = true;
    policy.retry_after = true;
    policy.before_retry = before_retry.is_function();
    policy.throw_on_error = Some(Throw::Always);
    let signal = props::get(&view, "signal")
        .ok()
        .filter(props::is_signal)
        .unwrap_or(JsValue::UNDEFINED);
    let mut signalled = policy.clone();
    signalled.signal = true;
    policy.signal = false;
    let calls = FetchCalls {
        plain: Rc::new(policy),
        signalled: Rc::new(signalled),
        budget: extras.budget.flatten(),
        breaker: extras.breaker.flatten(),
        http: Rc::new(http),
    };
    Ok((
        calls,
        Shared {
            view,
            fetch,
            signal,
            before_retry,
        },
    ))
}
type Entries = (Vec<Given>, Vec<(&'static str, JsValue)>);

/// The options, read once: retryer options for the core, and this file's.
fn read(options: &JsValue) -> Result<Entries, JsValue> {
    let mut given = Vec::new();
    let mut own = Vec::new();
    entries::read(options, "retryFetch options", |name, value| {
        if let Some(own_name) = OWN.iter().find(|n| **n == name) {
            own.push((*own_name, value));
        } else if name == "throwOnError" {
            return Err(errors::type_error(
                "retryFetch takes no 'throwOnError': it resolves a Response and rejects as fetch does",
            ));
        } else if let Some(opt) = Opt::from_name(&name) {
            given.push(Given { opt, value });
        } else {
            return Err(errors::unknown_option(Owner::Retryer, &name, &value));
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
        return Err(errors::must_be(
            Owner::Retryer,
            name,
            words,
            value,
            ErrorKind::Type,
        ));
    }
    let len = props::length_of(value).unwrap_or(0);
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
                    Owner::Retryer,
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

impl FetchCalls {
    /// One call: a retryer of its own runs the flow. What `fetch` itself
    /// would refuse or settle at once without sending (a `signal` that is
    /// no `AbortSignal`, headers it cannot read, an aborted signal) is
    /// settled here as `fetch` settles it.
    fn start(&self, shared: &Shared, input: JsValue, init: JsValue) -> Result<Promise, JsValue> {
        let fetch: Function = if shared.fetch.is_undefined() {
            props::get(&js_sys::global(), "fetch")?
        } else {
            shared.fetch.clone()
        }
        .dyn_into()
        .map_err(|_| errors::type_error("retryFetch found no fetch function (globalThis.fetch)"))?;
        let init_object = init.is_object();
        let request = fetch_js::as_request(&input);
        let init_get = |name: &'static str| -> Result<JsValue, JsValue> {
            if init_object {
                props::get(&init, name)
            } else {
                Ok(JsValue::UNDEFINED)
            }
        };
        // The caller's signal, as fetch reads it: `init.signal` when given
        // (`null`: none), else the Request's own.
        let given = init_get("signal")?;
        let caller = if given.is_undefined() {
            match request.as_ref() {
                Some(r) => fetch_js::own_signal(&props::get(r, "signal")?),
                None => None,
            }
        } else if given.is_null() {
            None
        } else if let Some(signal) = fetch_js::own_signal(&given) {
            Some(signal)
        } else {
            // Not an AbortSignal: fetch's own TypeError.
            return Ok(once(&fetch, &input, &init));
        };
        if let Some(signal) = caller.as_ref().filter(|s| s.aborted()) {
            return Ok(refuse_aborted(&input, &init, signal));
        }
        let method = match init_get("method")?.as_string() {
            Some(m) => m,
            None => match request.as_ref() {
                Some(r) => props::get(r, "method")?
                    .as_string()
                    .unwrap_or_else(|| String::from("GET")),
                None => String::from("GET"),
            },
        };
        let headers = init_get("headers")?;
        let idempotency_key = if !headers.is_undefined() {
            let read = Headers::new_with_str_sequence_sequence(&headers)
                .and_then(|h| h.has(http::IDEMPOTENCY_KEY));
            match read {
                Ok(has) => has,
                // Headers fetch would refuse: its own TypeError.
                Err(_) => return Ok(once(&fetch, &input, &init)),
            }
        } else {
            match request.as_ref() {
                // Read structurally: any Request's headers have `has`.
                Some(r) => r.headers().has(http::IDEMPOTENCY_KEY)?,
                None => false,
            }
        };
        let body = init_get("body")?;
        let body = if !body.is_undefined() && !body.is_null() {
            body_of(&body)
        } else if request.is_some() {
            Body::OfRequest
        } else {
            Body::None
        };
        let kind = RequestKind {
            method: &method,
            idempotency_key,
            body,
        };
        let retries = self.http.retries(kind);
        let hedges = self.http.hedges(kind, shared.before_retry.is_function());
        let option = fetch_js::own_signal(&shared.signal);
        let signal = match (caller.as_ref(), option) {
            (Some(a), Some(b)) => Some(fetch_js::both(a, &b)),
            (a, b) => a.cloned().or(b),
        };
        let policy = if signal.is_some() {
            Rc::clone(&self.signalled)
        } else {
            Rc::clone(&self.plain)
        };
        // One circuit per origin (SPEC §2e), worked out only for a call
        // whose function has a breaker.
        let origin = match (&self.breaker, &request) {
            (None, _) => String::new(),
            (Some(_), Some(r)) => circuit::origin_of(&r.url().into()),
            (Some(_), None) => circuit::origin_of(&input),
        };
        let call = FetchCall {
            origin,
            http: Rc::clone(&self.http),
            fetch: fetch.clone(),
            input,
            init,
            request,
            retries,
            hedges,
            caller,
            signal,
            before_retry: shared.before_retry.clone().dyn_into().ok(),
            next: RefCell::new(None),
            held: RefCell::new(Vec::new()),
            aborted: Cell::new(None),
        };
        let engine = Rc::new(Engine::new(
            policy,
            self.budget.clone(),
            self.breaker.clone(),
        ));
        let key = props::get(&shared.view, "key")?;
        let me = AsyncRetryer::wrap(Rc::clone(&engine), &fetch, &key, &shared.view)?;
        Ok(engine.execute(&me, Array::new(), Kind::Fetch(Rc::new(call))))
    }
}

/// What a body is, for the core's allow-list of bodies that replay
/// (`core::http::Body::replays`).
fn body_of(body: &JsValue) -> Body {
    if body.is_string() {
        Body::Text
    } else if body.has_type::<ArrayBuffer>() || ArrayBuffer::is_view(body) {
        Body::Bytes
    } else if body.has_type::<Blob>() {
        Body::Blob
    } else if body.has_type::<UrlSearchParams>() {
        Body::SearchParams
    } else if body.has_type::<FormData>() {
        Body::FormData
    } else if body.has_type::<ReadableStream>() {
        Body::Stream
    } else {
        Body::Other
    }
}

/// `fetch(input, init)` once, as it is: for a call `fetch` refuses, so the
/// caller gets `fetch`'s own error.
fn once(fetch: &Function, input: &JsValue, init: &JsValue) -> Promise {
    match fetch
        .call2(&JsValue::UNDEFINED, input, init)
        .and_then(|sent| js::promise_resolve(&sent))
    {
        Ok(p) => p,
        Err(e) => Promise::reject(&e),
    }
}

/// A call whose signal is already aborted, settled as `fetch` settles it
/// without sending anything: an input `fetch` refuses rejects with its
/// `TypeError`, else the call rejects with the signal's reason, and a
/// stream body is cancelled with it.
fn refuse_aborted(input: &JsValue, init: &JsValue, signal: &AbortSignal) -> Promise {
    let reason = signal.reason();
    match fetch_js::new_request(input, init) {
        Err(e) => Promise::reject(&e),
        Ok(request) => {
            if let Some(body) = request.body() {
                super::engine::cancel_stream(&body, &reason);
            }
            Promise::reject(&reason)
        }
    }
}
