//! Owned JavaScript resources of a busy retryer, each cleared when its
//! guard is dropped (the gloo-timers model): the flow's host timers, and a
//! listener on the outside signal. Dropping one runs a host function
//! (`clearTimeout`, `removeEventListener`): no guard is dropped under a
//! borrow.

use core::cell::Cell;

use js_sys::Function;
use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

use super::super::js;
use crate::core::effect::Timer;

/// The three host timers a flow may hold, by kind (their ids: a number in
/// browsers, an object in Node; `undefined` when not armed). Starting one
/// replaces, and so clears, the one before it; dropping the set clears
/// every timer still armed.
#[derive(Default)]
pub struct Timers([Cell<JsValue>; 3]);

impl Timers {
    /// Keeps `id` as the `timer`'s, clearing the one it replaces.
    pub fn set(&self, timer: Timer, id: JsValue) {
        if let Some(cell) = self.0.get(timer as usize) {
            clear(cell.replace(id));
        }
    }

    /// Clears the `timer`, if it runs.
    pub fn clear(&self, timer: Timer) {
        if let Some(cell) = self.0.get(timer as usize) {
            clear(cell.take());
        }
    }

    /// The `timer` fired: forgotten without clearing.
    pub fn fired(&self, timer: Timer) {
        if let Some(cell) = self.0.get(timer as usize) {
            drop(cell.take());
        }
    }
}

impl Drop for Timers {
    fn drop(&mut self) {
        for cell in &self.0 {
            clear(cell.take());
        }
    }
}

/// Clears the host timer `id`, unless it is none.
fn clear(id: JsValue) {
    if !id.is_undefined() {
        js::clear_timeout(&id);
    }
}

/// A listener on the outside signal; dropping it removes it.
pub struct Listener {
    signal: AbortSignal,
    listener: Function,
}

impl Listener {
    /// Adds `listener` for `abort` on `signal` (an `AbortSignal` or an
    /// object shaped like one); `None` if the signal refused it.
    pub fn add(signal: AbortSignal, listener: Function) -> Option<Listener> {
        signal
            .add_event_listener_with_callback("abort", &listener)
            .ok()?;
        Some(Listener { signal, listener })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self
            .signal
            .remove_event_listener_with_callback("abort", &self.listener);
    }
}
