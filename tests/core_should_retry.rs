//! SPEC §2 `shouldRetry` and `onGiveUp` in the core: a `false` answer gives
//! up as not retryable, a `true` one retries and is asked again at every
//! failed attempt, falsy and throwing answers, and a timed-out attempt that
//! counts as failed is asked about too.

mod common;

use common::*;

#[test]
fn should_retry_false_gives_up_not_retryable() {
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::ShouldRetry, Raw::Function),
        (Opt::ThrowOnError, Raw::Str("last")),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::ShouldRetry, 1)]);
    h.provide(g, Provided::Bool(false));
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::NotRetryable),
            call(g, Cb::Settled),
            fin(g, Outcome::Reject),
        ]
    );
    assert!(!h.state().is_executing);
    assert_eq!(h.state().current_attempt, 1);
    h.assert_quiet();
}

#[test]
fn should_retry_true_retries_and_is_asked_for_every_failed_attempt() {
    let mut h = Host::new(policy_all_cbs(&[(Opt::ShouldRetry, Raw::Function)]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::ShouldRetry, 1)]);
    h.provide(g, Provided::Bool(true));
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            wait(g, 1000.0)
        ]
    );
    h.advance(1000.0);
    h.err(g, 2);
    assert_eq!(h.drain(), vec![eval(g, Eval::ShouldRetry, 2)]);
    h.provide(g, Provided::Bool(true));
    h.drain();
    h.advance(2000.0);
    h.err(g, 3);
    assert_eq!(h.drain(), vec![eval(g, Eval::ShouldRetry, 3)]);
    h.provide(g, Provided::Bool(true));
    let out = h.drain();
    assert!(out.contains(&give_up(g, GiveUp::AttemptsExhausted)));
    h.assert_quiet();
}

#[test]
fn should_retry_falsy_or_throwing_answers() {
    // The host sends truthiness as a Bool; anything else is not `true`.
    for v in [Provided::Nothing, Provided::Other, Provided::Number(1.0)] {
        let mut h = Host::new(policy(&[
            (Opt::ShouldRetry, Raw::Function),
            (Opt::OnGiveUp, Raw::Function),
        ]));
        let g = h.execute();
        h.drain();
        h.err(g, 1);
        h.drain();
        h.provide(g, v);
        assert_eq!(
            h.drain(),
            vec![give_up(g, GiveUp::NotRetryable), fin(g, Outcome::Reject)],
            "{v:?}"
        );
    }
    // shouldRetry throws: the flow rejects with what it threw, no callbacks.
    let mut h = Host::new(policy_all_cbs(&[(Opt::ShouldRetry, Raw::Function)]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Threw);
    assert_eq!(h.drain(), vec![fin(g, Outcome::Thrown)]);
    h.assert_quiet();
}

#[test]
fn should_retry_is_asked_for_a_timed_out_attempt_when_it_counts_as_failed() {
    let mut h = Host::new(policy(&[
        (Opt::ShouldRetry, Raw::Function),
        (Opt::OnGiveUp, Raw::Function),
        (Opt::MaxExecutionTime, Raw::Number(100.0)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
    ]));
    let g = h.execute();
    h.drain();
    let out = h.advance(100.0);
    assert_eq!(out, vec![time_out(g, 1), eval(g, Eval::ShouldRetry, 1)]);
    h.provide(g, Provided::Bool(false));
    assert_eq!(
        h.drain(),
        vec![give_up(g, GiveUp::NotRetryable), fin(g, Outcome::Reject)]
    );
    h.assert_quiet();
}
