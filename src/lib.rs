//! The engine of the `retry-wasm` npm package.
//!
//! [`core`] is a sans-IO retry state machine in plain Rust: it takes inputs
//! (execute, attempt settled, timer fired, abort, a value from an option
//! function) stamped with the host's `now`, and returns effects (invoke the
//! function, start or clear a timer, run a callback, settle the promise).
//! The `wasm` module, compiled only for `wasm32`, exposes it to JavaScript
//! as a handful of number-in, number-out functions; the hand-written ESM
//! front in `js/` carries values between promises and the machine.

// The wasm build is no_std: std's panic hook and formatting machinery would
// triple the download, and nothing here needs them. Native builds (tests)
// keep std.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

pub mod core;

#[cfg(target_arch = "wasm32")]
mod wasm;
