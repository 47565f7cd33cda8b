//! The engine of the `retry-wasm` npm package.
//!
//! [`core`] is a sans-IO retry state machine in plain Rust: it takes inputs
//! (execute, attempt settled, timer fired, abort, a value from an option
//! function) stamped with the host's `now`, and returns effects (invoke the
//! function, start or clear a timer, run a callback, settle the promise).
//! It never touches JavaScript and is tested natively.
//!
//! The `wasm` module, compiled only for `wasm32`, is the exported
//! `AsyncRetryer` class and its companions, on wasm-bindgen: it calls the
//! wrapped function and the callbacks, drives `setTimeout`, creates and
//! aborts the `AbortController`s and settles the caller's promise, carrying
//! out the effects the core returns.

extern crate alloc;

pub mod core;

// The wasm build's global allocator (natively, only its tests).
#[cfg(any(target_arch = "wasm32", test))]
mod heap;

#[cfg(target_arch = "wasm32")]
mod wasm;
