//! The only Rust that touches JavaScript, on wasm-bindgen.
//!
//! The files are layered in the order below: each uses only files listed
//! above it. At the bottom, the host's JavaScript and the way values are
//! read; in the middle, the [`engine`] that carries out what the core's
//! machine decides; on top, what JavaScript sees: the exported classes and
//! functions.
//!
//! Three rules keep this layer safe:
//! - no `RefCell` borrow is held while JavaScript runs: a callback that
//!   calls `abort()` or `execute()` re-enters, queues input, and the pump
//!   already running drains it;
//! - Rust holds a JavaScript value only while a flow needs it. Between
//!   flows, what a retryer keeps that is JavaScript (its function, options,
//!   `lastResult`, `lastError`, the state snapshot, store subscribers) lives
//!   on the retryer's own object, so the garbage collector sees every cycle
//!   through it: wasm-bindgen's table of values is a GC root, and a value
//!   kept there that reaches the retryer would keep it forever;
//! - nothing panics: a panic would trap and poison the instance for every
//!   retryer on the page. Every borrow is a `try_borrow`, every call that
//!   can run user code is a `catch` import, and what cannot happen is an
//!   internal error the caller sees, never a hang.

// The host's functions, as imported.
mod js;
// Reading and classifying JavaScript values.
mod props;
// Requests, responses and signals of any realm (retryFetch only).
#[cfg(feature = "fetch")]
mod fetch_js;
// Every message users see.
mod errors;
// Reading an options object once.
mod entries;
// Seeds for the jitter generators.
mod entropy;
// The host's tracing channels (`node:diagnostics_channel`).
mod tracing;
// A circuit breaker's circuits, and what it tells of their changes.
mod circuit;
// Which JavaScript objects are this module's budgets and breakers.
mod shared;
// Which attempt a flow starts in (`nested`, `innerRetries`).
mod nesting;
// Options in: read once, validated by the core, shown as `options`.
mod input;
// Carrying out the machine's effects.
mod engine;
// `retryer.store`.
mod store;
// The exported classes and functions.
mod retryer;
// (RetryBudget)
mod budget;
// (CircuitBreaker, CircuitOpenError)
mod breaker;
// (retryFetch: the build with the `fetch` feature)
#[cfg(feature = "fetch")]
mod fetch;
// (parseRetryAfter)
mod retry_after;
