//! Reading JavaScript values: property access (`obj[key]`, with the key
//! strings made once), telling signals and cancellations apart, and
//! showing any value in a message.

use alloc::string::String;

use core::cell::RefCell;

use js_sys::{Function, JsString, JSON};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortSignal;

use super::js;

/// An `AbortSignal`, or an object shaped like one (a signal of another
/// realm, or of a polyfill): a boolean `aborted` and the two listener
/// methods. Throwing getters make it no signal.
pub fn is_signal(value: &JsValue) -> bool {
    if value.has_type::<AbortSignal>() {
        return true;
    }
    let is_fn = |name| get(value, name).is_ok_and(|v| v.is_function());
    get(value, "aborted").is_ok_and(|a| a.as_bool().is_some())
        && is_fn("addEventListener")
        && is_fn("removeEventListener")
}

/// Whether `value`, an object of one of this module's classes, was freed
/// (`free()` or `Symbol.dispose`): wasm-bindgen then sets its pointer to 0,
/// the same field the doorway reads.
pub fn freed(value: &JsValue) -> bool {
    get(value, "__wbg_ptr").is_ok_and(|p| p.as_f64() == Some(0.0))
}

/// `value.constructor.name`, read with its traps caught.
pub fn class_name(value: &JsValue) -> Option<String> {
    let constructor = get(value, "constructor").ok()?;
    get(&constructor, "name").ok()?.as_string()
}

/// An array's length, read with its traps caught.
pub fn length_of(array: &JsValue) -> Option<u32> {
    let n = get(array, "length").ok()?.as_f64()?;
    (n >= 0.0 && n <= f64::from(u32::MAX)).then_some(n as u32)
}

/// `target[key]`, for an object target (`undefined` otherwise); a getter
/// or trap that throws gives `Err`.
pub fn get(target: &JsValue, key: &'static str) -> Result<JsValue, JsValue> {
    get_key(target, &key_of(key))
}

/// `target[key]` with a key already in JavaScript.
pub fn get_key(target: &JsValue, key: &JsValue) -> Result<JsValue, JsValue> {
    if !target.is_object() && !target.is_function() {
        return Ok(JsValue::UNDEFINED);
    }
    target.unchecked_ref::<js::Bag>().get(key)
}

/// `target[key] = value`.
pub fn set(target: &JsValue, key: &'static str, value: &JsValue) -> Result<(), JsValue> {
    set_key(target, &key_of(key), value)
}

/// `target[key] = value` with a key already in JavaScript.
pub fn set_key(target: &JsValue, key: &JsValue, value: &JsValue) -> Result<(), JsValue> {
    target.unchecked_ref::<js::Bag>().set(key, value)
}

thread_local! {
    /// JavaScript strings of the property names this layer uses, made once:
    /// passing a Rust string to JavaScript copies and decodes it each time.
    static KEYS: RefCell<Vec<(usize, JsValue)>> = const { RefCell::new(Vec::new()) };
}

/// `key` as a JavaScript string, made once per name. The names are the
/// library's own (`&'static str`), a few dozen: found by address.
pub fn key_of(key: &'static str) -> JsValue {
    let address = key.as_ptr() as usize;
    KEYS.with(|keys| {
        let Ok(mut keys) = keys.try_borrow_mut() else {
            return JsValue::from_str(key);
        };
        if let Some((_, k)) = keys.iter().find(|(a, _)| *a == address) {
            return k.clone();
        }
        let made = JsValue::from_str(key);
        keys.push((address, made.clone()));
        made
    })
}

/// Whether a thrown or rejected value is a cancellation: an object whose
/// `name` is `'AbortError'` (a throwing getter makes it an ordinary error).
pub fn is_abort_error(value: &JsValue) -> bool {
    value.is_object()
        && get(value, "name")
            .ok()
            .and_then(|n| n.as_string())
            .is_some_and(|n| n == "AbortError")
}

/// A short, safe rendering of any value for an error message: strings
/// quoted (and cut at 60 characters), numbers as JavaScript writes them,
/// functions by name, objects by kind.
#[cold]
#[inline(never)]
pub fn show(value: &JsValue) -> String {
    if let Some(s) = value.dyn_ref::<JsString>() {
        let cut = if s.length() > 60 {
            s.slice(0, 57).concat(&JsValue::from_str("..."))
        } else {
            s.clone()
        };
        return JSON::stringify(&cut).map_or_else(|_| String::from("a string"), String::from);
    }
    if value
        .as_f64()
        .is_some_and(|n| n == 0.0 && n.is_sign_negative())
    {
        return String::from("-0");
    }
    if value.is_function() {
        return match get(value, "name").ok().and_then(|n| n.as_string()) {
            Some(n) if !n.is_empty() => ["a function (", &n, ")"].concat(),
            _ => String::from("a function"),
        };
    }
    if !value.is_object() {
        // undefined, null, booleans, numbers, bigints and symbols.
        let shown = js::string_of(value).unwrap_or_default();
        return if value.is_bigint() {
            shown + "n"
        } else {
            shown
        };
    }
    match js::is_array(value) {
        Ok(true) => {
            let n = js::string_of(&get(value, "length").unwrap_or_default()).unwrap_or_default();
            return ["an array of length ", &n].concat();
        }
        Ok(false) => {}
        Err(_) => return String::from("an unprintable value"),
    }
    match js::to_string_tag(value).ok().and_then(|t| t.as_string()) {
        Some(tag) => {
            let kind = tag
                .strip_prefix("[object ")
                .and_then(|t| t.strip_suffix(']'))
                .unwrap_or(&tag);
            ["an object (", kind, ")"].concat()
        }
        None => String::from("an unprintable value"),
    }
}

/// `value` as a function, if it is one.
pub fn function(value: JsValue) -> Option<Function> {
    value.dyn_into::<Function>().ok()
}
