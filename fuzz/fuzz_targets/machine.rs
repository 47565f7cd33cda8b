//! Several machines sharing budgets, driven by arbitrary inputs with
//! effects popped in arbitrary amounts in between: no panic, at most one
//! `Finish` per generation and nothing after it, attempts within a static
//! `maxAttempts`, bounded work per input. The decoding and the checks live
//! in `fuzz/decode.rs`, shared with `tests/fuzz_regressions.rs`.

#![no_main]
// Each target uses a part of the shared file.
#![allow(dead_code)]

use libfuzzer_sys::fuzz_target;

include!("../decode.rs");

fuzz_target!(|data: &[u8]| {
    let _ = run_machine(data);
});
