//! Option values of every kind through `Policy::set`, `push_interval`,
//! `set_initial` and `finish`: no panic, a refused value leaves no trace,
//! an accepted one leaves only valid values. The decoding and the checks
//! live in `fuzz/decode.rs`, shared with `tests/fuzz_regressions.rs`.

#![no_main]
// Each target uses a part of the shared file.
#![allow(dead_code)]

use libfuzzer_sys::fuzz_target;

include!("../decode.rs");

fuzz_target!(|data: &[u8]| {
    let _ = run_options(data);
});
