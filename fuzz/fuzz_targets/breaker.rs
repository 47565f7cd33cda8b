//! Retryers sharing a circuit breaker (and budgets), driven as the engine
//! drives them, with arbitrary inputs and effects popped in arbitrary
//! amounts: no panic, at most one `Finish` per generation, never more
//! probes out than `halfOpenCalls`, every permit given back once every
//! flow finished. The decoding and the checks live in `fuzz/decode.rs`,
//! shared with `tests/fuzz_regressions.rs`.

#![no_main]
// Each target uses a part of the shared file.
#![allow(dead_code)]

use libfuzzer_sys::fuzz_target;

include!("../decode.rs");

fuzz_target!(|data: &[u8]| {
    let _ = run_breaker(data);
});
