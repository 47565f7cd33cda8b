//! Which JavaScript objects are this module's shared objects: its
//! `RetryBudget`s and `CircuitBreaker`s.
//!
//! One passed in options is recognised by identity: a `WeakMap` from the
//! object to its index in a table of weak references, so a plain object
//! that looks like one is refused and one nobody holds any more is
//! collected. Retryers hold the Rust side itself (an `Rc`). One map and
//! one table serve both classes (each entry knows its type), so the module
//! holds one copy of this code, not one per class.

use alloc::rc::{Rc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::cell::RefCell;

use js_sys::{Object, WeakMap};
use wasm_bindgen::{JsCast, JsValue};

struct Table {
    by_object: WeakMap,
    entries: RefCell<Vec<Weak<dyn Any>>>,
}

thread_local! {
    static TABLE: Table = Table {
        by_object: WeakMap::new(),
        entries: RefCell::new(Vec::new()),
    };
}

/// Records that `object` is the JavaScript side of `shared`. `None` only
/// if the table is in use, which no path allows.
pub fn remember(object: &JsValue, shared: Rc<dyn Any>) -> Option<()> {
    TABLE.with(|t| {
        let mut entries = t.entries.try_borrow_mut().ok()?;
        let weak = Rc::downgrade(&shared);
        // The index of one that is gone is reused.
        let index = match entries.iter().position(|w| w.strong_count() == 0) {
            Some(i) => {
                *entries.get_mut(i)? = weak;
                i
            }
            None => {
                entries.push(weak);
                entries.len() - 1
            }
        };
        let index = JsValue::from(u32::try_from(index).ok()?);
        t.by_object.set(object.unchecked_ref::<Object>(), &index);
        Some(())
    })
}

/// The shared part of `value`, if `value` is one of this module's objects
/// (`None` for `undefined`).
pub fn any(value: &JsValue) -> Option<Rc<dyn Any>> {
    TABLE.with(|t| {
        let index = t.by_object.get(value.unchecked_ref::<Object>()).as_f64()?;
        t.entries.try_borrow().ok()?.get(index as usize)?.upgrade()
    })
}

/// The shared part of `value`, if `value` is one of this module's objects
/// and its shared part is a `T`.
pub fn of<T: 'static>(value: &JsValue) -> Option<Rc<T>> {
    any(value)?.downcast().ok()
}
