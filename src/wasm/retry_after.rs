//! `parseRetryAfter(value, now?)`: the core's `Retry-After` parser, reading
//! the header from a string, a `Headers`, or anything with `headers` (a
//! `Response`).

use wasm_bindgen::prelude::*;

use super::props;
use crate::core::retry_after;

/// Milliseconds to wait according to a `Retry-After` value (delta-seconds
/// or an HTTP-date), from a string, a `Headers` or a `Response`;
/// `undefined` when absent, invalid, or in the past. `now` (ms since the
/// epoch, default `Date.now()`) is what HTTP-dates are measured from.
#[wasm_bindgen(js_name = parseRetryAfter)]
pub fn parse_retry_after(value: JsValue, now: JsValue) -> Option<f64> {
    let text = header_text(&value)?;
    let now = now
        .as_f64()
        .filter(|n| n.is_finite())
        .unwrap_or_else(js_sys::Date::now);
    retry_after::parse(&text, now)
}

/// The `Retry-After` text of a string, a `Headers`, or a `Response`.
pub fn header_text(value: &JsValue) -> Option<String> {
    if let Some(s) = value.as_string() {
        return Some(s);
    }
    if !value.is_object() {
        return None;
    }
    let get = props::get(value, "get").ok()?;
    let headers = if get.is_function() {
        value.clone()
    } else {
        props::get(value, "headers").ok()?
    };
    let get: js_sys::Function = props::function(props::get(&headers, "get").ok()?)?;
    get.call1(&headers, &props::key_of("retry-after"))
        .ok()?
        .as_string()
}
