//! SPEC §2 `retryAfter` in the core: a hint replaces the computed delay, 0
//! retries at once, a huge one is clamped to the longest timer, and one past
//! the remaining total deadline is a total timeout at once.

mod common;

use common::*;

#[test]
fn retry_after_replaces_the_computed_delay() {
    let mut h = Host::new(policy(&[
        (Opt::RetryAfter, Raw::Function),
        (Opt::MaxWait, Raw::Number(2000.0)),
        (Opt::Jitter, Raw::Number(0.5)),
        (Opt::Seed, Raw::Number(3.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::RetryAfter, 1)]);
    h.provide(g, Provided::Number(5000.0));
    assert_eq!(h.drain(), vec![wait(g, 5000.0)]);
    h.advance(5000.0);
    // No hint: the computed (jittered) delay.
    h.err(g, 2);
    h.drain();
    h.provide(g, Provided::Nothing);
    let d = waits(&h.drain());
    // Checked against SPEC §2, not against `backoff::jitter`: the nominal
    // delay capped at maxWait (2000 ms) plus floor(2000 * 0.5 * r) with r in
    // [-1, 1] drawn from the seeded generator, so within [1000, 3000].
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        (1000.0..=3000.0).contains(&d[0]),
        "{d:?} outside 2000 ms ± 50%"
    );
    let r = 2.0 * Rng::from_f64(3.0).unit() - 1.0;
    assert_eq!(d[0], 2000.0 + (2000.0 * 0.5 * r).floor(), "r = {r}");
}

#[test]
fn retry_after_zero_retries_at_once_and_huge_is_clamped() {
    let mut h = Host::new(policy(&[(Opt::RetryAfter, Raw::Function)]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(0.0));
    assert_eq!(h.drain(), vec![inv(g, 2)]);
    h.err(g, 2);
    h.drain();
    h.provide(g, Provided::Number(1e15));
    assert_eq!(h.drain(), vec![wait(g, MAX_TIMER_MS)]);
}

#[test]
fn retry_after_past_the_remaining_deadline_is_a_total_timeout_at_once() {
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::RetryAfter, Raw::Function),
        (Opt::MaxTotalExecutionTime, Raw::Number(10_000.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.now = 2000.0;
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(9000.0));
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            call(g, Cb::TotalExecutionTimeout),
            abort_att(g, 1, AbortReason::TotalTimeout),
            clear(Timer::Total),
            on_abort(g, AbortReason::TotalTimeout),
            fin(g, Outcome::Undefined),
        ]
    );
    assert_eq!(h.now, 2000.0);
    h.assert_quiet();

    // A hint that fits is slept.
    let mut h = Host::new(policy(&[
        (Opt::RetryAfter, Raw::Function),
        (Opt::MaxTotalExecutionTime, Raw::Number(10_000.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.now = 2000.0;
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(7999.0));
    assert_eq!(h.drain(), vec![wait(g, 7999.0)]);
}
