//! What a retryer keeps between flows that is JavaScript: `lastResult`,
//! `lastError`, the last state snapshot, and the store's subscribers.
//!
//! They are kept on the retryer's own object, under symbols no other code
//! can name, never in Rust: held there they are reachable only through
//! the retryer, so one that refers back to it makes a cycle the garbage
//! collector sees. (An `Error` does: until its `stack` is read, V8 keeps
//! the frames it was thrown from, and the wrapped function runs with the
//! retryer as `this`.)

use core::cell::Cell;

use js_sys::{Array, Function, Map};
use wasm_bindgen::{JsCast, JsValue};

use super::super::errors;
use super::super::js;
use super::super::props;
use super::wakeups;
use crate::core::state::{State, Status};

/// The property keys on a retryer's object.
struct Keys {
    result: JsValue,
    error: JsValue,
    snapshot: JsValue,
    listeners: JsValue,
}

thread_local! {
    static KEYS: Keys = Keys {
        result: js::symbol("retry-wasm lastResult"),
        error: js::symbol("retry-wasm lastError"),
        snapshot: js::symbol("retry-wasm state"),
        listeners: js::symbol("retry-wasm subscribers"),
    };
    /// Subscription tokens, unique in the module.
    static NEXT_TOKEN: Cell<u32> = const { Cell::new(0) };
}

fn get(me: &JsValue, key: impl FnOnce(&Keys) -> &JsValue) -> JsValue {
    KEYS.with(|k| me.unchecked_ref::<js::Kept>().get(key(k)))
}

fn set(me: &JsValue, key: impl FnOnce(&Keys) -> &JsValue, value: &JsValue) {
    KEYS.with(|k| me.unchecked_ref::<js::Kept>().set(key(k), value));
}

/// Records a successful attempt's result as `lastResult`.
pub fn keep_result(me: &JsValue, value: &JsValue) {
    set(me, |k| &k.result, value);
}

/// Records a failed attempt's error as `lastError`.
pub fn keep_error(me: &JsValue, value: &JsValue) {
    set(me, |k| &k.error, value);
}

/// `reset()`: no `lastResult`, no `lastError`.
pub fn forget_results(me: &JsValue) {
    keep_result(me, &JsValue::UNDEFINED);
    keep_error(me, &JsValue::UNDEFINED);
}

/// `store.state` of the retryer whose object is `me`, from its machine's
/// `state` and `status`: the same object while nothing changed (`shown`
/// is the state version the kept snapshot shows).
pub fn state(me: &JsValue, s: &State, status: Status, shown: &Cell<u32>) -> JsValue {
    if shown.get() == s.version {
        let kept = get(me, |k| &k.snapshot);
        if !kept.is_undefined() {
            return kept;
        }
    }
    let pick = |has: bool, key: fn(&Keys) -> &JsValue| {
        if has {
            get(me, key)
        } else {
            JsValue::UNDEFINED
        }
    };
    let snapshot = js::state_object(
        s.current_attempt,
        s.execution_count,
        s.is_executing,
        &pick(s.has_last_error, |k| &k.error),
        s.last_execution_time,
        &pick(s.has_last_result, |k| &k.result),
        &props::key_of(status.name()),
        s.total_execution_time,
    );
    set(me, |k| &k.snapshot, &snapshot);
    shown.set(s.version);
    snapshot
}

/// Adds `listener` (a function, or an observer whose `next` is called) to
/// the subscribers of the retryer whose object is `me`; returns the
/// function that removes it, which also has an `unsubscribe()` method.
pub fn subscribe(me: &JsValue, listener: JsValue) -> Result<Function, JsValue> {
    if !listener.is_object() && !listener.is_function() {
        return Err(errors::type_error(
            &[
                "subscribe needs a function or an observer object; got ",
                &props::show(&listener),
            ]
            .concat(),
        ));
    }
    let mut map = get(me, |k| &k.listeners);
    if map.is_undefined() {
        map = Map::new().into();
        set(me, |k| &k.listeners, &map);
    }
    let map: Map = map.unchecked_into();
    let token = NEXT_TOKEN.with(|n| {
        let t = n.get().wrapping_add(1);
        n.set(t);
        t
    });
    map.set(&token.into(), &listener);
    // `Map.prototype.delete`, bound: a forgotten unsubscribe function
    // holds the subscribers, not the retryer, and needs nothing of Rust.
    let delete = props::function(props::get(&map, "delete")?)
        .ok_or_else(|| errors::internal("Map.prototype.delete"))?;
    let unsubscribe = delete
        .unchecked_ref::<js::Handler>()
        .bind_value(&map, &token.into());
    props::set(&unsubscribe, "unsubscribe", &unsubscribe)?;
    Ok(unsubscribe)
}

/// Calls every subscriber of the retryer whose object is `me` with
/// `state`; one that throws is reported to the host. Returns whether any
/// subscriber is left.
pub fn notify(me: &JsValue, state: &JsValue) -> bool {
    let map = get(me, |k| &k.listeners);
    let Some(map) = map.dyn_ref::<Map>() else {
        return false;
    };
    if map.size() == 0 {
        return false;
    }
    // A copy: a subscriber may subscribe or unsubscribe while called.
    for listener in Array::from(&map.values()).iter() {
        let called = match listener.dyn_ref::<Function>() {
            Some(f) => f.call1(&JsValue::UNDEFINED, state),
            None => props::get(&listener, "next").and_then(|next| match props::function(next) {
                Some(next) => next.call1(&listener, state),
                None => Ok(JsValue::UNDEFINED),
            }),
        };
        if let Err(e) = called {
            wakeups::report(&e);
        }
    }
    true
}
