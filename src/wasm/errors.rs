//! Every error users see, in SPEC's words: a `TypeError` for a wrong type, a
//! `RangeError` for a value out of range, each naming the option (of a
//! retryer, `retryFetch` or `RetryBudget`) and the value; the
//! `DOMException`s an attempt's signal aborts with; and the internal error
//! that surfaces instead of a hang if the engine ever finds its own state
//! in use.

use alloc::string::String;

use wasm_bindgen::JsValue;
use web_sys::DomException;

use super::props::{self, show};
use crate::core::options::{ErrorKind, Expect, Opt, OptionError, INITIAL_FIELDS};

/// A `TypeError` with `message` after the library's prefix.
#[cold]
#[inline(never)]
pub fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(&["retry-wasm: ", message].concat()).into()
}

/// A `RangeError` with `message` after the library's prefix.
#[cold]
#[inline(never)]
pub fn range_error(message: &str) -> JsValue {
    js_sys::RangeError::new(&["retry-wasm: ", message].concat()).into()
}

/// The error for a refused option `opt` given `value` (for `intervals` and
/// `initialState`, the entry the core names is shown instead).
#[cold]
#[inline(never)]
pub fn option_error(e: OptionError, value: &JsValue) -> JsValue {
    for (opt, class) in [
        (Opt::Budget, "RetryBudget"),
        (Opt::Breaker, "CircuitBreaker"),
    ] {
        if e.opt == opt && props::class_name(value).as_deref() == Some(class) {
            // One of this module's that was freed is no longer known as
            // one; only an object that never was is another engine's.
            if props::freed(value) {
                return freed_option(e.opt.name(), class);
            }
            return other_engine(e.opt.name(), class);
        }
    }
    let mut label = String::from(e.opt.name());
    let mut shown = value.clone();
    if e.opt == Opt::Intervals && e.expect == Expect::ArrayOfDelays {
        if let Ok(entry) = js_sys::Reflect::get_u32(value, e.index) {
            let index = super::js::string_of(&e.index.into()).unwrap_or_default();
            label = ["intervals[", &index, "]"].concat();
            shown = entry;
        }
    } else if e.opt == Opt::InitialState {
        if let Some(field) = INITIAL_FIELDS.get(e.index as usize) {
            if let Ok(entry) = props::get(value, field) {
                label = ["initialState.", field].concat();
                shown = entry;
            }
        }
    }
    must_be(Owner::Retryer, &label, e.expect.words(), &shown, e.kind)
}

/// Whose options an option belongs to, for the start of a message.
#[derive(Clone, Copy)]
pub enum Owner {
    /// `AsyncRetryer`, `asyncRetry` and `retryFetch` (whose extra options
    /// are told apart by their names).
    Retryer,
    /// `new RetryBudget(options)`.
    Budget,
    /// `new CircuitBreaker(options)`.
    Breaker,
}

impl Owner {
    fn prefix(self) -> &'static str {
        match self {
            Owner::Retryer => "option '",
            Owner::Budget => "RetryBudget option '",
            Owner::Breaker => "CircuitBreaker option '",
        }
    }
}

/// "option 'label' must be words; got value", as a `TypeError` or a
/// `RangeError` (`kind`).
#[cold]
#[inline(never)]
pub fn must_be(
    owner: Owner,
    label: &str,
    words: &str,
    value: &JsValue,
    kind: ErrorKind,
) -> JsValue {
    let message = [
        owner.prefix(),
        label,
        "' must be ",
        words,
        "; got ",
        &show(value),
    ]
    .concat();
    match kind {
        ErrorKind::Type => type_error(&message),
        ErrorKind::Range => range_error(&message),
    }
}

/// The error for a shared object (`class`: a `RetryBudget`) given as
/// option `label` after it was freed: it would share nothing any more.
#[cold]
#[inline(never)]
pub fn freed_option(label: &str, class: &str) -> JsValue {
    type_error(
        &[
            "option '",
            label,
            "' is a ",
            class,
            " that was freed (free() or Symbol.dispose); create a new one",
        ]
        .concat(),
    )
}

/// This engine, and the other one a page may load beside it (SPEC §0
/// "Entries and builds").
#[cfg(feature = "fetch")]
const ENGINES: [&str; 2] = [
    "'retry-wasm/fetch' (the full one)",
    "'retry-wasm' (the lean one)",
];
#[cfg(not(feature = "fetch"))]
const ENGINES: [&str; 2] = [
    "'retry-wasm' (the lean one)",
    "'retry-wasm/fetch' (the full one)",
];

/// The error for a shared object (`class`) of another engine given as
/// option `label`: a browser bundle that imports both entries loads both
/// engines, and neither knows the other's objects.
#[cold]
#[inline(never)]
pub fn other_engine(label: &str, class: &str) -> JsValue {
    let [this, other] = ENGINES;
    type_error(
        &[
            "option '",
            label,
            "' is a ",
            class,
            " of another retry-wasm engine: this one is ",
            this,
            ", and a page that bundles both 'retry-wasm' and 'retry-wasm/fetch' also loads ",
            other,
            "; their objects do not cross. Import every name from 'retry-wasm/fetch' where retryFetch is used",
        ]
        .concat(),
    )
}

/// The error for an option name the library does not know.
#[cold]
#[inline(never)]
pub fn unknown_option(owner: Owner, name: &str, value: &JsValue) -> JsValue {
    type_error(
        &[
            "unknown ",
            owner.prefix(),
            name,
            "' (got ",
            &show(value),
            ")",
        ]
        .concat(),
    )
}

/// `abort(reason)` with a reason pacer does not have; nothing changed.
#[cold]
#[inline(never)]
pub fn abort_reason(reason: &JsValue) -> JsValue {
    type_error(
        &[
            "abort(reason) takes 'manual', 'execution-timeout', 'total-timeout' or 'new-execution'; got ",
            &show(reason),
        ]
        .concat(),
    )
}

/// What surfaces, instead of a hang, if the engine finds its own state in
/// use where no path allows it (a bug of the library: please report it).
#[cold]
#[inline(never)]
pub fn internal(what: &str) -> JsValue {
    js_sys::Error::new(&["retry-wasm: internal error (", what, "); please report it"].concat())
        .into()
}

/// An options object (or one of its values) that could not be read.
#[cold]
#[inline(never)]
pub fn unreadable(what: &str, thrown: &JsValue) -> JsValue {
    type_error(&[what, " could not be read: ", &show(thrown)].concat())
}

/// The `RangeError` that ends a flow whose option function answered badly.
#[cold]
#[inline(never)]
pub fn dynamic_error(opt: Opt, value: &JsValue) -> JsValue {
    range_error(
        &[
            "the function given as '",
            opt.name(),
            "' returned an invalid value: ",
            &show(value),
        ]
        .concat(),
    )
}

/// The `TimeoutError` an attempt's signal aborts with, which also becomes
/// the flow's error.
#[cold]
#[inline(never)]
pub fn timeout_error(ms: f64) -> JsValue {
    // JavaScript formats the number: Rust's float formatting would add
    // kilobytes to the download for this one message.
    let ms = super::js::string_of(&JsValue::from_f64(ms)).unwrap_or_default();
    dom_exception(
        &[
            "retry-wasm: attempt exceeded maxExecutionTime (",
            &ms,
            " ms)",
        ]
        .concat(),
        "TimeoutError",
    )
}

/// The `AbortError` an attempt's signal aborts with on `abort()`, a new
/// execution or the total deadline.
#[cold]
#[inline(never)]
pub fn abort_error(reason: &str) -> JsValue {
    dom_exception(
        &["retry-wasm: aborted (", reason, ")"].concat(),
        "AbortError",
    )
}

/// A `DOMException` with `message` and `name`.
#[cold]
#[inline(never)]
pub fn dom_exception(message: &str, name: &str) -> JsValue {
    match DomException::new_with_message_and_name(message, name) {
        Ok(e) => e.into(),
        Err(e) => e,
    }
}
