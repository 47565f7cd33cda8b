//! `retryer.store`, shaped as `@tanstack/store` has it: `state`, `get()`
//! returning `state`, and `subscribe(listener)` returning an unsubscribe
//! function. `get` and `subscribe` are bound, so they work passed on
//! detached (`useSyncExternalStore(store.subscribe, store.get)`), and the
//! TanStack Store framework adapters (`useStore(retryer.store, selector)`)
//! take it as it is.
//!
//! The store is a plain object of the retryer's own bound methods, so it
//! holds the retryer and nothing in Rust holds it.

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::errors;
use super::js;
use super::props;

/// The store of the retryer whose object is `me`.
pub fn make(me: &JsValue) -> Result<JsValue, JsValue> {
    let bound = |name: &'static str| -> Result<Function, JsValue> {
        let method = props::function(props::get(me, name)?)
            .ok_or_else(|| errors::internal("store method"))?;
        Ok(method.unchecked_ref::<js::Handler>().bind_value(me, me))
    };
    let get = bound("_state")?;
    let store = Object::new();
    let state = Object::new();
    props::set(&state, "get", &get)?;
    props::set(&state, "enumerable", &JsValue::TRUE)?;
    Reflect::define_property(&store, &props::key_of("state"), &state)?;
    props::set(&store, "get", &get)?;
    props::set(&store, "subscribe", &bound("_subscribe")?.into())?;
    Ok(store.into())
}
