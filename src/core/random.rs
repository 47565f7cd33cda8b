//! A small seeded pseudo-random generator for jitter.
//!
//! Jitter needs speed and reproducibility, not secrecy: SplitMix64 passes
//! BigCrush, is a handful of instructions, and a seed fully determines the
//! sequence, which is what the `seed` option promises.

/// SplitMix64 state. `Rng::new(seed)` always yields the same sequence.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator whose sequence is fixed by `seed`.
    pub const fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// A generator seeded from a JavaScript number (the `seed` option).
    /// Equal numbers give equal sequences; `-0` and `0` are the same seed.
    pub fn from_f64(seed: f64) -> Rng {
        let normalised = if seed == 0.0 { 0.0 } else { seed };
        Rng::new(normalised.to_bits() ^ 0x5851_F42D_4C95_7F2D)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in `[0, 1]`, both ends included, so that the extreme
    /// jitter values the contract allows can actually occur.
    pub fn unit(&mut self) -> f64 {
        // 53 random bits over 2^53 - 1: every value in [0, 1] on a 2^-53 grid.
        (self.next_u64() >> 11) as f64 / ((1u64 << 53) - 1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = Rng::from_f64(42.0);
        let mut b = Rng::from_f64(42.0);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn different_seeds_differ() {
        let mut a = Rng::from_f64(1.0);
        let mut b = Rng::from_f64(2.0);
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn unit_stays_in_range_and_spreads() {
        let mut r = Rng::new(7);
        let (mut lo, mut hi) = (1.0f64, 0.0f64);
        for _ in 0..10_000 {
            let u = r.unit();
            assert!((0.0..=1.0).contains(&u));
            lo = lo.min(u);
            hi = hi.max(u);
        }
        assert!(lo < 0.01 && hi > 0.99);
    }
}
