//! Delay schedules and jitter, as pure functions of their inputs.
//!
//! Nothing here draws random numbers: callers pass the uniform sample `u` in
//! `[0, 1]`, so every schedule can be tested with fixed values and the
//! machine draws only when a delay is actually computed.

/// The longest delay a host timer accepts (2^31 - 1 ms); longer delays are
/// clamped to it instead of wrapping around to an immediate timeout.
pub const MAX_TIMER_MS: f64 = 2_147_483_647.0;

/// How the nominal delay grows with the number of failed attempts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backoff {
    /// `base * multiplier^(n-1)`.
    Exponential,
    /// `base * n`.
    Linear,
    /// `base`.
    Fixed,
    /// AWS "decorrelated jitter": uniform between `base` and three times the
    /// previous delay, capped by `maxWait`.
    Decorrelated,
    /// A user function returns the nominal delay.
    Custom,
}

/// How randomness is applied to a nominal delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    /// `nominal + floor(nominal * fraction * r)`, r uniform in [-1, 1].
    Proportional(f64),
    /// Uniform in `[0, nominal]` ("full jitter").
    Full,
}

/// Clamps a computed delay into what a timer can sleep: NaN and negatives
/// become 0, anything past [`MAX_TIMER_MS`] becomes that.
pub fn clamp_delay(ms: f64) -> f64 {
    if ms.is_nan() || ms <= 0.0 {
        0.0
    } else if ms > MAX_TIMER_MS {
        MAX_TIMER_MS
    } else {
        ms
    }
}

/// The nominal (pre-jitter, pre-cap) delay after failed attempt `n` (1-based)
/// for the deterministic schedules. `Decorrelated` and `Custom` are computed
/// elsewhere and fall back to `base` here.
pub fn nominal(kind: Backoff, n: u32, base: f64, multiplier: f64) -> f64 {
    if base == 0.0 {
        // 0 * inf would be NaN for very late attempts.
        return 0.0;
    }
    let n = n.max(1);
    match kind {
        Backoff::Exponential => base * power(multiplier, n - 1),
        Backoff::Linear => base * n as f64,
        Backoff::Fixed | Backoff::Decorrelated | Backoff::Custom => base,
    }
}

/// `x^n` by repeated squaring. Past 2^31 ms every delay is clamped anyway,
/// so an overflow to infinity is harmless.
fn power(x: f64, n: u32) -> f64 {
    let (mut result, mut base, mut n) = (1.0, x, n);
    while n > 0 {
        if n & 1 == 1 {
            result *= base;
        }
        base *= base;
        n >>= 1;
    }
    result
}

/// Caps a nominal delay by `max_wait` (which may be infinite).
pub fn cap(nominal: f64, max_wait: f64) -> f64 {
    nominal.min(max_wait)
}

/// Applies jitter to a capped nominal delay with the uniform sample `u` in
/// `[0, 1]`. The result is never negative and may exceed `maxWait` slightly,
/// as the contract allows.
pub fn jitter(capped: f64, how: Jitter, u: f64) -> f64 {
    match how {
        Jitter::Proportional(fraction) => {
            if fraction <= 0.0 || capped <= 0.0 {
                return capped.max(0.0);
            }
            let r = 2.0 * u - 1.0;
            (capped + libm::floor(capped * fraction * r)).max(0.0)
        }
        Jitter::Full => libm::floor(capped * u).max(0.0),
    }
}

/// The next decorrelated-jitter delay: uniform between `base` and
/// `3 * previous` (never below `base`), capped by `max_wait`.
pub fn decorrelated(previous: f64, base: f64, max_wait: f64, u: f64) -> f64 {
    let high = (previous * 3.0).max(base);
    let pick = base + libm::floor((high - base) * u);
    pick.min(max_wait).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nominal_schedules_match_the_contract_table() {
        let e: Vec<f64> = (1..=4)
            .map(|n| nominal(Backoff::Exponential, n, 1000.0, 2.0))
            .collect();
        assert_eq!(e, vec![1000.0, 2000.0, 4000.0, 8000.0]);
        let l: Vec<f64> = (1..=4)
            .map(|n| nominal(Backoff::Linear, n, 1000.0, 2.0))
            .collect();
        assert_eq!(l, vec![1000.0, 2000.0, 3000.0, 4000.0]);
        let f: Vec<f64> = (1..=4)
            .map(|n| nominal(Backoff::Fixed, n, 1000.0, 2.0))
            .collect();
        assert_eq!(f, vec![1000.0; 4]);
    }

    #[test]
    fn multiplier_changes_growth() {
        assert_eq!(nominal(Backoff::Exponential, 3, 100.0, 1.5), 225.0);
    }

    #[test]
    fn huge_attempts_do_not_produce_nan() {
        let d = nominal(Backoff::Exponential, u32::MAX, 1000.0, 2.0);
        assert_eq!(clamp_delay(d), MAX_TIMER_MS);
        assert_eq!(nominal(Backoff::Exponential, u32::MAX, 0.0, 2.0), 0.0);
    }

    #[test]
    fn proportional_jitter_bounds() {
        let how = Jitter::Proportional(0.25);
        assert_eq!(jitter(1000.0, how, 0.0), 750.0);
        assert_eq!(jitter(1000.0, how, 1.0), 1250.0);
        assert_eq!(jitter(1000.0, how, 0.5), 1000.0);
        assert_eq!(jitter(1000.0, Jitter::Proportional(0.0), 0.0), 1000.0);
        assert_eq!(jitter(1000.0, Jitter::Proportional(1.0), 0.0), 0.0);
    }

    #[test]
    fn full_jitter_bounds() {
        assert_eq!(jitter(1000.0, Jitter::Full, 0.0), 0.0);
        assert_eq!(jitter(1000.0, Jitter::Full, 1.0), 1000.0);
    }

    #[test]
    fn decorrelated_stays_between_base_and_cap() {
        assert_eq!(decorrelated(100.0, 100.0, 1e9, 0.0), 100.0);
        assert_eq!(decorrelated(100.0, 100.0, 1e9, 1.0), 300.0);
        assert_eq!(decorrelated(1000.0, 100.0, 500.0, 1.0), 500.0);
    }

    #[test]
    fn clamp_handles_extremes() {
        assert_eq!(clamp_delay(f64::NAN), 0.0);
        assert_eq!(clamp_delay(-5.0), 0.0);
        assert_eq!(clamp_delay(f64::INFINITY), MAX_TIMER_MS);
        assert_eq!(clamp_delay(12.0), 12.0);
    }
}
