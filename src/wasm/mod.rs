//! The only Rust that touches JavaScript, on wasm-bindgen.
//!
//! [`retryer`] is the exported `AsyncRetryer` class; [`pump`] owns a
//! retryer's JavaScript objects (the caller's promise, timers, the attempt's
//! `AbortController`, the outside signal's listener) and carries out the
//! effects the core's machine returns. [`live`] holds the few functions all
//! retryers share (promise reactions, the timer callback, the signal
//! listener) and the table through which they find their retryer.
//!
//! Two rules keep this layer safe:
//! - no `RefCell` borrow is held while JavaScript runs: a callback that
//!   calls `abort()` or `execute()` re-enters, queues input, and the outer
//!   pump drains it;
//! - nothing here holds a user's function or the retryer's own JavaScript
//!   object when no flow needs it (the wrapped function and the options live
//!   on that object, read when needed), so a callback that closes over its
//!   retryer forms a cycle the garbage collector can see and collect.
//!
//! A panic here would trap and poison the instance for every retryer on the
//! page, so nothing unwraps: every borrow is a `try_borrow`, every call that
//! can run user code is a `catch` import.

mod budget;
mod entropy;
mod errors;
mod fetch;
mod flow;
mod js;
mod live;
mod nesting;
mod options;
mod pump;
mod retry_after;
mod retryer;
mod store;
mod values;

// talc instead of std's dlmalloc: 10 KB smaller a module (3.8 KB gzipped),
// measured on this build. Safe: wasm32-unknown-unknown here is one thread,
// and talc owns linear memory growth.
#[global_allocator]
static ALLOCATOR: talc::TalckWasm = unsafe { talc::TalckWasm::new_global() };
