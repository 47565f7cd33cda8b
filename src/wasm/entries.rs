//! Reading an options object once (`AsyncRetryer`'s, `retryFetch`'s and
//! `RetryBudget`'s alike): its own enumerable keys, then each value, in
//! order, so a getter or Proxy trap runs once and what it throws becomes a
//! `TypeError` naming the entry.

use alloc::string::String;

use wasm_bindgen::JsValue;

use super::errors;
use super::js;
use super::props;

/// Reads an options object once, handing each own enumerable entry to
/// `take` in order (a getter or Proxy trap runs once). `undefined` has no
/// entries; anything else that is not an object, or a read that throws, is
/// a `TypeError`; `what` names the object in it.
pub fn read(
    options: &JsValue,
    what: &str,
    mut take: impl FnMut(String, JsValue) -> Result<(), JsValue>,
) -> Result<(), JsValue> {
    if options.is_undefined() {
        return Ok(());
    }
    if !options.is_object() || options.is_function() {
        return Err(errors::type_error(
            &[what, " must be an object; got ", &props::show(options)].concat(),
        ));
    }
    let keys =
        js::object_keys(options).map_err(|e| errors::unreadable("the options object", &e))?;
    for key in keys.iter() {
        let name: String = key.as_string().unwrap_or_default();
        let value = props::get_key(options, &key)
            .map_err(|e| errors::unreadable(&["option '", &name, "'"].concat(), &e))?;
        take(name, value)?;
    }
    Ok(())
}
