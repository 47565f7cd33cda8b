//! Which JavaScript objects are this module's `RetryBudget`s.
//!
//! A budget passed in options is recognised by identity: a `WeakMap` from
//! the budget's JavaScript object to its index in a table of weak
//! references, so a plain object that looks like a budget is refused and a
//! budget nobody holds any more is collected. Retryers hold the bucket
//! itself (`Rc<RefCell<Budget>>`).

use alloc::rc::{Rc, Weak};
use alloc::vec::Vec;
use core::cell::RefCell;

use js_sys::{Object, WeakMap};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::budget::Budget;

thread_local! {
    static BY_OBJECT: WeakMap = WeakMap::new();
    static TABLE: RefCell<Vec<Weak<RefCell<Budget>>>> = const { RefCell::new(Vec::new()) };
}

/// Records that `object` is the JavaScript side of `budget`. `None` only
/// if the table is in use, which no path allows.
pub fn remember(object: &JsValue, budget: &Rc<RefCell<Budget>>) -> Option<()> {
    let index = TABLE.with(|t| {
        let mut t = t.try_borrow_mut().ok()?;
        let weak = Rc::downgrade(budget);
        // The index of a budget that is gone is reused.
        match t.iter().position(|w| w.strong_count() == 0) {
            Some(i) => {
                *t.get_mut(i)? = weak;
                u32::try_from(i).ok()
            }
            None => {
                t.push(weak);
                u32::try_from(t.len() - 1).ok()
            }
        }
    })?;
    BY_OBJECT.with(|m| m.set(object.unchecked_ref::<Object>(), &JsValue::from(index)));
    Some(())
}

/// The index of `value`'s budget, if `value` is a `RetryBudget` of this
/// module.
pub fn id_of(value: &JsValue) -> Option<u32> {
    let index = BY_OBJECT.with(|m| m.get(value.unchecked_ref::<Object>()));
    index.as_f64().map(|i| i as u32)
}

/// The budget of a `budget` option value (`None` for `undefined`).
pub fn of(value: &JsValue) -> Option<Rc<RefCell<Budget>>> {
    let index = id_of(value)?;
    TABLE.with(|t| t.try_borrow().ok()?.get(index as usize)?.upgrade())
}
