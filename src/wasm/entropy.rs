//! Seeds for the jitter generators of retryers without a `seed` option.
//!
//! The host's randomness (`crypto.getRandomValues`, through getrandom) is
//! asked once per module, when the first retryer is made; each retryer then
//! draws its own seed from a generator seeded with it. Asking per retryer
//! would cost microseconds each, and jitter needs spread, not secrecy.

use core::cell::RefCell;

use crate::core::random::Rng;

thread_local! {
    static SEEDER: RefCell<Option<Rng>> = const { RefCell::new(None) };
}

/// A seed for one new retryer's jitter generator.
pub fn next_seed() -> u64 {
    SEEDER.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return js_sys::Date::now().to_bits();
        };
        s.get_or_insert_with(|| {
            // Without a usable `crypto` the clock still spreads seeds
            // between page loads; the `seed` option makes them fixed.
            let host = getrandom::u64().unwrap_or_else(|_| js_sys::Date::now().to_bits());
            Rng::new(host)
        })
        .next_u64()
    })
}
