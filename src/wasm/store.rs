//! `retryer.store`, shaped as `@tanstack/store` has it: `state`, `get()`
//! returning `state`, and `subscribe(listener)` returning an unsubscribe
//! function; `get` and `subscribe` are bound, so they work passed on
//! detached (`useSyncExternalStore(store.subscribe, store.get)`), and the
//! TanStack Store framework adapters (`useStore(retryer.store, selector)`)
//! take it as it is.

use alloc::rc::{Rc, Weak};

use js_sys::{Function, Object};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;

use super::errors;
use super::pump::Inner;
use super::values;

/// The state of one retryer and its subscription.
#[wasm_bindgen]
pub struct RetryerStore {
    inner: Rc<Inner>,
}

#[wasm_bindgen]
impl RetryerStore {
    /// A plain object with the eight state fields: a new one after every
    /// change, the same one while nothing changed.
    #[wasm_bindgen(getter)]
    pub fn state(&self) -> JsValue {
        self.inner.state()
    }

    /// `state` (bound).
    pub fn get(&self) -> JsValue {
        self.inner.state()
    }

    /// Calls `listener` (a function, or an observer with `next`) after each
    /// change of state; returns a function that unsubscribes it, which also
    /// has an `unsubscribe()` method (bound).
    pub fn subscribe(&self, listener: JsValue) -> Result<Function, JsValue> {
        let observer =
            listener.is_object() && values::get(&listener, "next").is_ok_and(|n| n.is_function());
        if !listener.is_function() && !observer {
            return Err(errors::type_error(
                &[
                    "subscribe needs a function or an observer with next(); got ",
                    &values::show(&listener),
                ]
                .concat(),
            ));
        }
        let token = self.inner.subscribe(listener);
        // Weak: a forgotten unsubscribe function does not keep the retryer.
        let inner: Weak<Inner> = Rc::downgrade(&self.inner);
        let unsubscribe: Function = Closure::<dyn Fn()>::new(move || {
            if let Some(inner) = inner.upgrade() {
                inner.unsubscribe(token);
            }
        })
        .into_js_value()
        .unchecked_into();
        values::set(&unsubscribe, "unsubscribe", &unsubscribe)?;
        Ok(unsubscribe)
    }
}

impl RetryerStore {
    /// A new store object for `inner`, with `get` and `subscribe` bound to
    /// it as own properties.
    pub fn make(inner: Rc<Inner>) -> Result<JsValue, JsValue> {
        let store: JsValue = RetryerStore { inner }.into();
        for name in ["get", "subscribe"] {
            let method: Function = values::get(&store, name)?.dyn_into()?;
            values::set(&store, name, &method.bind0(&store).into())?;
        }
        let _: &Object = store.unchecked_ref();
        Ok(store)
    }
}
