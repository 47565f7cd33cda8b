//! Owned JavaScript resources of a busy retryer, each cleared when its
//! guard is dropped (the gloo-timers model): a host timer, and a listener
//! on the outside signal. Dropping one runs a host function
//! (`clearTimeout`, `removeEventListener`), so a guard is only ever dropped
//! after it was taken out of its cell, never under a borrow.

use core::cell::Cell;

use js_sys::Function;
use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

use super::super::js;
use crate::core::effect::Timer;

/// A host timer; dropping it clears it, unless it fired.
pub struct Timeout {
    /// `undefined` once it fired (a number in browsers, an object in Node).
    id: JsValue,
}

impl Timeout {
    pub fn new(id: JsValue) -> Timeout {
        Timeout { id }
    }

    /// A timer that fired needs no clearing.
    pub fn fired(mut self) {
        self.id = JsValue::UNDEFINED;
    }
}

impl Drop for Timeout {
    fn drop(&mut self) {
        if !self.id.is_undefined() {
            js::clear_timeout(&self.id);
        }
    }
}

/// The three timers a flow may hold, by kind; starting one replaces (and
/// so clears) the one before it.
#[derive(Default)]
pub struct Timers([Cell<Option<Timeout>>; 3]);

impl Timers {
    /// Keeps `timeout` as the `timer`, clearing the one it replaces.
    pub fn set(&self, timer: Timer, timeout: Timeout) {
        if let Some(cell) = self.0.get(timer as usize) {
            drop(cell.replace(Some(timeout)));
        }
    }

    /// Clears the `timer`, if it runs.
    pub fn clear(&self, timer: Timer) {
        if let Some(cell) = self.0.get(timer as usize) {
            drop(cell.take());
        }
    }

    /// The `timer` fired: forgotten without clearing.
    pub fn fired(&self, timer: Timer) {
        if let Some(t) = self.0.get(timer as usize).and_then(Cell::take) {
            t.fired();
        }
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
