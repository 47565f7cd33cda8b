//! The pure retry engine: no JavaScript, no clock, no I/O.
//!
//! Everything that decides anything lives here and is tested natively with a
//! fake clock and fixed random numbers: option validation ([`options`]),
//! delay schedules ([`backoff`]), the jitter generator ([`random`]), the
//! observable state ([`state`]), the shared retry budget ([`budget`]), the circuit breaker ([`breaker`]), the
//! `Retry-After` parser ([`retry_after`]), what `retryFetch` decides about
//! HTTP ([`http`]) and the state machine that ties them together
//! ([`machine`]), which talks to its host only through [`effect`]s. Beside
//! them, [`slots`] is the table through which a host's handlers, called
//! back with numbers, find what they belong to.

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod effect;
pub mod http;
pub mod machine;
pub mod options;
pub mod random;
pub mod retry_after;
pub mod slots;
pub mod state;
