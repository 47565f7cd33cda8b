//! SPEC §2 (beyond the peers) and §3 (bad input) in the core: shouldRetry,
//! dynamic options through `Eval`/`provide`, retryAfter, intervals,
//! multiplier, decorrelated and custom backoff, full jitter, Infinity
//! attempts, the outside signal, a shared retry budget, seeds, and option
//! validation.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;

fn shared(max_tokens: f64, ratio: f64) -> Rc<RefCell<Vec<Budget>>> {
    Rc::new(RefCell::new(vec![Budget::new(max_tokens, ratio).unwrap()]))
}

fn tokens(b: &Rc<RefCell<Vec<Budget>>>) -> f64 {
    b.borrow()[0].tokens()
}

// ----- shouldRetry / onGiveUp -----

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
    assert_eq!(
        out,
        vec![
            abort_att(g, AbortReason::ExecutionTimeout),
            eval(g, Eval::ShouldRetry, 1)
        ]
    );
    h.provide(g, Provided::Bool(false));
    assert_eq!(
        h.drain(),
        vec![give_up(g, GiveUp::NotRetryable), fin(g, Outcome::Reject)]
    );
    h.assert_quiet();
}

// ----- dynamic options through Eval -----

#[test]
fn dynamic_options_are_asked_in_order_at_each_decision() {
    let mut h = Host::new(policy(&[
        (Opt::ShouldRetry, Raw::Function),
        (Opt::MaxAttempts, Raw::Function),
        (Opt::BaseWait, Raw::Function),
        (Opt::MaxWait, Raw::Function),
        (Opt::RetryAfter, Raw::Function),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::ShouldRetry, 1)]);
    h.provide(g, Provided::Bool(true));
    assert_eq!(h.drain(), vec![eval(g, Eval::MaxAttempts, 1)]);
    h.provide(g, Provided::Number(5.0));
    assert_eq!(h.drain(), vec![eval(g, Eval::BaseWait, 1)]);
    h.provide(g, Provided::Number(300.0));
    assert_eq!(h.drain(), vec![eval(g, Eval::MaxWait, 1)]);
    h.provide(g, Provided::Number(500.0));
    assert_eq!(h.drain(), vec![eval(g, Eval::RetryAfter, 1)]);
    h.provide(g, Provided::Nothing);
    assert_eq!(h.drain(), vec![wait(g, 300.0)]);
    h.advance(300.0);
    // Second decision: 300 * 2 = 600, capped by maxWait 500.
    h.err(g, 2);
    for (what, v) in [
        (Eval::ShouldRetry, Provided::Bool(true)),
        (Eval::MaxAttempts, Provided::Number(5.0)),
        (Eval::BaseWait, Provided::Number(300.0)),
        (Eval::MaxWait, Provided::Number(500.0)),
        (Eval::RetryAfter, Provided::Nothing),
    ] {
        assert_eq!(h.drain(), vec![eval(g, what, 2)]);
        h.provide(g, v);
    }
    assert_eq!(h.drain(), vec![wait(g, 500.0)]);
}

#[test]
fn dynamic_values_are_not_asked_when_not_needed() {
    // shouldRetry false: nothing else is asked.
    let mut h = Host::new(policy(&[
        (Opt::ShouldRetry, Raw::Function),
        (Opt::MaxAttempts, Raw::Function),
        (Opt::BaseWait, Raw::Function),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Bool(false));
    assert_eq!(h.drain(), vec![fin(g, Outcome::Reject)]);

    // Attempts exhausted: no delay values are asked.
    let mut h = Host::new(policy(&[
        (Opt::MaxAttempts, Raw::Function),
        (Opt::BaseWait, Raw::Function),
        (Opt::MaxWait, Raw::Function),
        (Opt::RetryAfter, Raw::Function),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::MaxAttempts, 1)]);
    h.provide(g, Provided::Number(1.0));
    assert_eq!(h.drain(), vec![fin(g, Outcome::Reject)]);

    // intervals: baseWait is not used, so not asked.
    let mut h = Host::new(with_intervals(
        policy(&[(Opt::BaseWait, Raw::Function)]),
        &[70.0, 80.0],
    ));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![wait(g, 70.0)]);
}

#[test]
fn dynamic_max_attempts_counts_per_decision() {
    let mut h = Host::new(policy(&[(Opt::MaxAttempts, Raw::Function)]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(2.0));
    assert_eq!(h.drain(), vec![wait(g, 1000.0)]);
    h.advance(1000.0);
    h.err(g, 2);
    assert_eq!(h.drain(), vec![eval(g, Eval::MaxAttempts, 2)]);
    h.provide(g, Provided::Number(2.0));
    assert_eq!(h.drain(), vec![fin(g, Outcome::Reject)]);
    assert_eq!(h.invoked.len(), 2);
    h.assert_quiet();
}

#[test]
fn invalid_dynamic_answers_end_the_flow_with_a_range_error() {
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let table: Vec<(Opt, Eval, Vec<Provided>)> = vec![
        (
            Opt::MaxAttempts,
            Eval::MaxAttempts,
            vec![
                Provided::Number(0.0),
                Provided::Number(-1.0),
                Provided::Number(1.5),
                Provided::Number(nan),
                Provided::Number(-inf),
                Provided::Number(inf), // no finite total deadline
                Provided::Nothing,
                Provided::Bool(true),
                Provided::Other,
            ],
        ),
        (
            Opt::BaseWait,
            Eval::BaseWait,
            vec![
                Provided::Number(-1.0),
                Provided::Number(nan),
                Provided::Number(inf),
                Provided::Nothing,
                Provided::Bool(true),
                Provided::Other,
            ],
        ),
        (
            Opt::MaxWait,
            Eval::MaxWait,
            vec![
                Provided::Number(-1.0),
                Provided::Number(nan),
                Provided::Nothing,
                Provided::Other,
            ],
        ),
        (
            Opt::RetryAfter,
            Eval::RetryAfter,
            vec![
                Provided::Number(-1.0),
                Provided::Number(nan),
                Provided::Number(inf),
                Provided::Bool(true),
                Provided::Other,
            ],
        ),
        (
            Opt::Backoff,
            Eval::Backoff,
            vec![
                Provided::Number(-1.0),
                Provided::Number(nan),
                Provided::Number(inf),
                Provided::Nothing,
                Provided::Other,
            ],
        ),
    ];
    for (opt, what, answers) in table {
        for v in answers {
            // Every callback set and throwing off: still a rejection.
            let mut h = Host::new(policy_all_cbs(&[
                (opt, Raw::Function),
                (Opt::ThrowOnError, Raw::Bool(false)),
                (Opt::Signal, Raw::Signal),
                (Opt::MaxExecutionTime, Raw::Number(50.0)),
            ]));
            let g = h.execute();
            h.drain();
            h.err(g, 1);
            let out = h.drain();
            assert_eq!(out.last(), Some(&eval(g, what, 1)), "{opt:?}");
            h.provide(g, v);
            let out = h.drain();
            assert_eq!(
                out,
                vec![Effect::Unlisten { gen: g }, fin(g, Outcome::Invalid(opt))],
                "{opt:?} answered {v:?}"
            );
            assert!(!h.state().is_executing);
            h.assert_quiet();
        }
        // A throwing option function rejects with what it threw.
        let mut h = Host::new(policy(&[(opt, Raw::Function)]));
        let g = h.execute();
        h.drain();
        h.err(g, 1);
        h.drain();
        h.provide(g, Provided::Threw);
        assert_eq!(h.drain(), vec![fin(g, Outcome::Thrown)], "{opt:?}");
        h.assert_quiet();
    }
}

#[test]
fn dynamic_infinite_attempts_need_a_finite_total_deadline() {
    let mut h = Host::new(policy(&[
        (Opt::MaxAttempts, Raw::Function),
        (Opt::MaxTotalExecutionTime, Raw::Number(60_000.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(f64::INFINITY));
    assert_eq!(h.drain(), vec![wait(g, 1000.0)]);
}

#[test]
fn dynamic_max_wait_may_be_infinite() {
    let mut h = Host::new(policy(&[(Opt::MaxWait, Raw::Function)]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(f64::INFINITY));
    assert_eq!(h.drain(), vec![wait(g, 1000.0)]);
}

// ----- retryAfter -----

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
    let mut rng = Rng::from_f64(3.0);
    let want = backoff::jitter(2000.0, Jitter::Proportional(0.5), rng.unit());
    assert_eq!(d, vec![want]);
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
            abort_att(g, AbortReason::TotalTimeout),
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

// ----- intervals, multiplier, custom and decorrelated backoff -----

fn delays_of(p: Policy) -> (Vec<f64>, usize) {
    let mut h = Host::new(p);
    h.execute();
    h.drain();
    let d = h.fail_until_end(100_000);
    h.assert_quiet();
    (d, h.invoked.len())
}

#[test]
fn intervals_give_explicit_delays_and_attempts() {
    let p = with_intervals(policy(&[]), &[100.0, 250.0, 50.0]);
    assert_eq!(delays_of(p), (vec![100.0, 250.0, 50.0], 4));
    let p = with_intervals(
        policy(&[(Opt::MaxAttempts, Raw::Number(2.0))]),
        &[100.0, 250.0, 50.0],
    );
    assert_eq!(delays_of(p), (vec![100.0], 2));
    let p = with_intervals(
        policy(&[(Opt::MaxAttempts, Raw::Number(10.0))]),
        &[100.0, 250.0],
    );
    assert_eq!(delays_of(p), (vec![100.0, 250.0], 3));
    let p = with_intervals(policy(&[]), &[]);
    assert_eq!(delays_of(p), (vec![], 1));
    let p = with_intervals(
        policy(&[
            (Opt::Backoff, Raw::Str("linear")),
            (Opt::BaseWait, Raw::Number(9.0)),
        ]),
        &[0.0, 30.0],
    );
    assert_eq!(delays_of(p), (vec![0.0, 30.0], 3));
}

#[test]
fn multiplier_sets_exponential_growth() {
    let p = policy(&[
        (Opt::Multiplier, Raw::Number(3.0)),
        (Opt::MaxAttempts, Raw::Number(4.0)),
    ]);
    assert_eq!(delays_of(p).0, vec![1000.0, 3000.0, 9000.0]);
    let p = policy(&[
        (Opt::Multiplier, Raw::Number(1.5)),
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::MaxAttempts, Raw::Number(4.0)),
    ]);
    assert_eq!(delays_of(p).0, vec![100.0, 150.0, 225.0]);
    // Only exponential backoff uses it.
    let p = policy(&[
        (Opt::Multiplier, Raw::Number(3.0)),
        (Opt::Backoff, Raw::Str("linear")),
        (Opt::BaseWait, Raw::Number(100.0)),
    ]);
    assert_eq!(delays_of(p).0, vec![100.0, 200.0]);
}

#[test]
fn custom_backoff_asks_for_each_delay() {
    let mut h = Host::new(policy(&[
        (Opt::Backoff, Raw::Function),
        (Opt::MaxAttempts, Raw::Number(4.0)),
        (Opt::MaxWait, Raw::Number(1000.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::Backoff, 1)]);
    h.provide(g, Provided::Number(123.0));
    assert_eq!(h.drain(), vec![wait(g, 123.0)]);
    h.advance(123.0);
    h.err(g, 2);
    assert_eq!(h.drain(), vec![eval(g, Eval::Backoff, 2)]);
    h.provide(g, Provided::Number(0.0));
    assert_eq!(h.drain(), vec![inv(g, 3)]);
    h.err(g, 3);
    assert_eq!(h.drain(), vec![eval(g, Eval::Backoff, 3)]);
    // maxWait caps the nominal delay.
    h.provide(g, Provided::Number(5000.0));
    assert_eq!(h.drain(), vec![wait(g, 1000.0)]);
}

#[test]
fn decorrelated_stays_between_base_and_three_times_the_previous_over_long_runs() {
    for seed in [1.0, 2.0, 99.0, 12345.0] {
        let (base, cap) = (100.0, 5000.0);
        let (d, attempts) = delays_of(policy(&[
            (Opt::Backoff, Raw::Str("decorrelated")),
            (Opt::BaseWait, Raw::Number(base)),
            (Opt::MaxWait, Raw::Number(cap)),
            (Opt::MaxAttempts, Raw::Number(500.0)),
            (Opt::Seed, Raw::Number(seed)),
        ]));
        assert_eq!(attempts, 500);
        assert_eq!(d.len(), 499);
        let mut prev = base;
        let mut rng = Rng::from_f64(seed);
        let mut hit_cap = 0;
        for (i, &x) in d.iter().enumerate() {
            let hi = cap.min((3.0 * prev).max(base));
            assert!(
                x >= base && x <= hi,
                "seed {seed} #{i}: {x} not in [{base}, {hi}] (prev {prev})"
            );
            assert_eq!(x, backoff::decorrelated(prev, base, cap, rng.unit()));
            hit_cap += usize::from(x == cap);
            prev = x;
        }
        assert!(hit_cap > 0, "long runs reach maxWait");
        let distinct: std::collections::BTreeSet<u64> = d.iter().map(|x| x.to_bits()).collect();
        assert!(distinct.len() > 100, "decorrelated delays spread");
    }
    // maxWait below baseWait: every delay is maxWait.
    let (d, _) = delays_of(policy(&[
        (Opt::Backoff, Raw::Str("decorrelated")),
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::MaxWait, Raw::Number(40.0)),
        (Opt::MaxAttempts, Raw::Number(20.0)),
    ]));
    assert!(d.iter().all(|&x| x == 40.0));
}

#[test]
fn full_jitter_is_uniform_between_zero_and_the_nominal_delay() {
    for seed in [0.0, 5.0, 77.0] {
        let (d, _) = delays_of(policy(&[
            (Opt::Jitter, Raw::Str("full")),
            (Opt::Backoff, Raw::Str("fixed")),
            (Opt::BaseWait, Raw::Number(1000.0)),
            (Opt::MaxAttempts, Raw::Number(400.0)),
            (Opt::Seed, Raw::Number(seed)),
        ]));
        let mut rng = Rng::from_f64(seed);
        for &x in &d {
            assert!((0.0..=1000.0).contains(&x), "{x}");
            assert_eq!(x, backoff::jitter(1000.0, Jitter::Full, rng.unit()));
        }
        assert!(d.iter().any(|&x| x < 100.0) && d.iter().any(|&x| x > 900.0));
    }
    // Full jitter of a capped exponential delay stays within the cap.
    let (d, _) = delays_of(policy(&[
        (Opt::Jitter, Raw::Str("full")),
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::MaxWait, Raw::Number(700.0)),
        (Opt::MaxAttempts, Raw::Number(50.0)),
        (Opt::Seed, Raw::Number(1.0)),
    ]));
    for (i, &x) in d.iter().enumerate() {
        let c = (100.0 * 2f64.powi(i as i32)).min(700.0);
        assert!(x >= 0.0 && x <= c, "#{i}: {x} > {c}");
    }
}

// ----- maxAttempts: Infinity -----

#[test]
fn infinite_attempts_end_at_the_total_deadline() {
    // Fixed 100 ms waits, attempts fail at once, deadline 1000 ms: attempts
    // at 0, 100, ..., 900; the wait after the one at 900 would reach the
    // deadline, so the flow times out at once.
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::MaxAttempts, Raw::Number(f64::INFINITY)),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
        (Opt::Backoff, Raw::Str("fixed")),
        (Opt::BaseWait, Raw::Number(100.0)),
    ]));
    let g = h.execute();
    h.drain();
    let d = h.fail_until_end(1000);
    assert_eq!(d, vec![100.0; 9]);
    assert_eq!(h.invoked.len(), 10);
    assert_eq!(h.now, 900.0);
    assert_eq!(
        &h.log[h.log.len() - 2..],
        &[
            on_abort(g, AbortReason::TotalTimeout),
            fin(g, Outcome::Undefined)
        ]
    );
    assert!(!cbs(&h.log).iter().any(|(c, _)| *c == Cb::GiveUp));
    h.assert_quiet();

    // An attempt that hangs: the total timer ends it.
    let mut h = Host::new(policy(&[
        (Opt::MaxAttempts, Raw::Number(f64::INFINITY)),
        (Opt::MaxTotalExecutionTime, Raw::Number(5000.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.advance(1000.0);
    h.err(g, 2);
    h.drain();
    h.advance(2000.0);
    assert_eq!(h.current(), (g, 3));
    let out = h.advance(2000.0);
    assert_eq!(
        out,
        vec![
            abort_att(g, AbortReason::TotalTimeout),
            fin(g, Outcome::Undefined)
        ]
    );
    assert_eq!(h.now, 5000.0);
    h.assert_quiet();
}

#[test]
fn a_zero_attempt_deadline_with_retries_on_timeout_ends_at_the_total_deadline() {
    // Every attempt times out at once and every wait is 0 ms: only the
    // clock moving (the fake host, like Node, fires a 0 ms timer 1 ms
    // later) brings the total deadline. Under fake timers that do not move
    // the clock for 0 ms timers this flow would spin forever.
    let mut h = Host::new(policy(&[
        (Opt::MaxAttempts, Raw::Number(f64::INFINITY)),
        (Opt::MaxTotalExecutionTime, Raw::Number(50.0)),
        (Opt::MaxExecutionTime, Raw::Number(0.0)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
        (Opt::BaseWait, Raw::Number(0.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.advance(100.0);
    assert_eq!(h.finished.get(&g), Some(&Outcome::Undefined));
    assert_eq!(h.invoked.len(), 50);
    h.assert_quiet();
}

// ----- outside signal -----

#[test]
fn outside_signal_is_listened_to_during_each_flow_only() {
    let mut h = Host::new(policy(&[
        (Opt::Signal, Raw::Signal),
        (Opt::MaxTotalExecutionTime, Raw::Number(10_000.0)),
    ]))
    .subscribed();
    let g = h.execute();
    assert_eq!(
        h.drain(),
        vec![
            Effect::Listen { gen: g },
            start(g, Timer::Total, 10_000.0),
            SC,
            inv(g, 1)
        ]
    );
    h.ok(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            clear(Timer::Total),
            Effect::Unlisten { gen: g },
            SC,
            fin(g, Outcome::Result)
        ]
    );
    h.assert_quiet();
    // One long-lived signal serves many flows; none leaves a listener.
    for i in 0..100u32 {
        let g = h.execute();
        h.drain();
        match i % 4 {
            0 => h.ok(g, 1),
            1 => h.abort(),
            2 => h.abort_error(g, 1),
            _ => {
                h.err(g, 1);
                h.drain();
                h.signal();
            }
        }
        h.drain();
        h.assert_quiet();
    }
    let listens = h
        .log
        .iter()
        .filter(|e| matches!(e, Effect::Listen { .. }))
        .count();
    let unlistens = h
        .log
        .iter()
        .filter(|e| matches!(e, Effect::Unlisten { .. }))
        .count();
    assert_eq!(listens, 101);
    assert_eq!(unlistens, 101);
}

#[test]
fn outside_signal_aborted_during_a_wait() {
    let mut h = Host::new(policy_all_cbs(&[(Opt::Signal, Raw::Signal)]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.advance(300.0);
    h.signal();
    assert_eq!(
        h.drain(),
        vec![
            abort_att(g, AbortReason::Signal),
            clear(Timer::Wait),
            Effect::Unlisten { gen: g },
            on_abort(g, AbortReason::Signal),
            fin(g, Outcome::Undefined),
        ]
    );
    assert_eq!(h.state().current_attempt, 2);
    h.assert_quiet();
    assert!(h.advance(10_000.0).is_empty());
    // Aborted during an attempt.
    let g = h.execute();
    h.drain();
    h.signal();
    assert_eq!(
        h.drain(),
        vec![
            abort_att(g, AbortReason::Signal),
            Effect::Unlisten { gen: g },
            on_abort(g, AbortReason::Signal),
            fin(g, Outcome::Undefined),
        ]
    );
    h.assert_quiet();
}

#[test]
fn outside_signal_already_aborted_calls_nothing() {
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::Signal, Raw::Signal),
        (Opt::ThrowOnError, Raw::Bool(true)),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
    ]))
    .subscribed();
    let g = h.execute_aborted();
    assert_eq!(
        h.drain(),
        vec![on_abort(g, AbortReason::Signal), fin(g, Outcome::Undefined)]
    );
    assert!(h.invoked.is_empty());
    assert_eq!(h.version(), 0, "no state change");
    assert!(!h.state().is_executing);
    h.assert_quiet();
    // While a flow runs: that flow is aborted as a new execution first.
    let g1 = h.execute();
    h.drain();
    let g2 = h.execute_aborted();
    let out = h.drain();
    assert_eq!(
        out,
        vec![
            abort_att(g1, AbortReason::NewExecution),
            clear(Timer::Total),
            Effect::Unlisten { gen: g1 },
            SC,
            on_abort(g1, AbortReason::NewExecution),
            fin(g1, Outcome::Undefined),
            on_abort(g2, AbortReason::Signal),
            fin(g2, Outcome::Undefined),
        ]
    );
    assert!(!h.state().is_executing);
    h.assert_quiet();
}

// ----- retry budget -----

#[test]
fn a_budget_shared_by_two_retryers_with_overlapping_flows() {
    let budgets = shared(4.0, 0.5);
    let p = policy(&[
        (Opt::Budget, Raw::Budget(0)),
        (Opt::MaxAttempts, Raw::Number(5.0)),
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::OnGiveUp, Raw::Function),
    ]);
    let mut a = Host::with_budgets(p.clone(), budgets.clone());
    let mut b = Host::with_budgets(p, budgets.clone());
    let ga = a.execute();
    a.drain();
    let gb = b.execute();
    b.drain();
    // A fails: 3 tokens left, more than half: retry.
    a.err(ga, 1);
    assert_eq!(a.drain(), vec![wait(ga, 100.0)]);
    assert_eq!(tokens(&budgets), 3.0);
    // B fails while A waits: 2 left, not more than half: give up.
    b.err(gb, 1);
    assert_eq!(
        b.drain(),
        vec![
            give_up(gb, GiveUp::BudgetExhausted),
            fin(gb, Outcome::Reject)
        ]
    );
    assert_eq!(tokens(&budgets), 2.0);
    // A's second attempt fails: 1 left: A gives up too.
    a.advance(100.0);
    a.err(ga, 2);
    assert_eq!(
        a.drain(),
        vec![
            give_up(ga, GiveUp::BudgetExhausted),
            fin(ga, Outcome::Reject)
        ]
    );
    assert_eq!(tokens(&budgets), 1.0);
    a.assert_quiet();
    b.assert_quiet();
    // Successes refund tokenRatio each, never past the maximum.
    for i in 0..20 {
        let h = if i % 2 == 0 { &mut a } else { &mut b };
        let g = h.execute();
        h.drain();
        h.ok(g, 1);
        h.drain();
        let t = tokens(&budgets);
        assert!((0.0..=4.0).contains(&t));
    }
    assert_eq!(tokens(&budgets), 4.0);
    // Retries are allowed again.
    let ga = a.execute();
    a.drain();
    a.err(ga, 1);
    assert_eq!(waits(&a.drain()), vec![100.0]);
}

#[test]
fn budget_costs_one_token_per_failed_attempt_only() {
    let budgets = shared(10.0, 1.0);
    let mut h = Host::with_budgets(
        policy(&[
            (Opt::Budget, Raw::Budget(0)),
            (Opt::MaxAttempts, Raw::Function),
            (Opt::MaxExecutionTime, Raw::Number(100.0)),
            (Opt::BaseWait, Raw::Number(10.0)),
        ]),
        budgets.clone(),
    );
    // A failure is counted once, at the decision, however many values the
    // decision had to ask for.
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    assert_eq!(tokens(&budgets), 10.0);
    h.provide(g, Provided::Number(9.0));
    h.drain();
    assert_eq!(tokens(&budgets), 9.0);
    h.provide(g, Provided::Number(9.0)); // a stray second answer
    assert_eq!(tokens(&budgets), 9.0);
    // Cancellation and abort cost nothing.
    h.advance(10.0);
    h.abort_error(g, 2);
    h.drain();
    assert_eq!(tokens(&budgets), 9.0);
    let g = h.execute();
    h.drain();
    h.abort();
    h.drain();
    assert_eq!(tokens(&budgets), 9.0);
    // An execution timeout that ends the flow costs one.
    let g2 = h.execute();
    h.drain();
    assert_ne!(g, g2);
    h.advance(100.0);
    assert_eq!(tokens(&budgets), 8.0);
    h.assert_quiet();
    // Success refunds.
    let g = h.execute();
    h.drain();
    h.ok(g, 1);
    h.drain();
    assert_eq!(tokens(&budgets), 9.0);
}

#[test]
fn a_budget_that_no_longer_exists_is_ignored() {
    let mut h = Host::new(policy(&[
        (Opt::Budget, Raw::Budget(7)),
        (Opt::BaseWait, Raw::Number(1.0)),
    ]));
    let g = h.execute();
    h.drain();
    let d = h.fail_until_end(10);
    assert_eq!(d, vec![1.0, 2.0]);
    assert_eq!(h.finished.get(&g), Some(&Outcome::Reject));
}

// ----- seed -----

fn jittered(seed: Option<f64>, entropy: u64) -> Vec<f64> {
    let mut opts = vec![
        (Opt::Jitter, Raw::Number(0.5)),
        (Opt::MaxAttempts, Raw::Number(12.0)),
        (Opt::BaseWait, Raw::Number(100.0)),
    ];
    if let Some(s) = seed {
        opts.push((Opt::Seed, Raw::Number(s)));
    }
    let mut h = Host::new(policy(&opts));
    h.m = Machine::new(policy(&opts), entropy);
    h.execute();
    h.drain();
    h.fail_until_end(100)
}

#[test]
fn same_seed_same_delays_different_seeds_differ() {
    let a = jittered(Some(42.0), 1);
    let b = jittered(Some(42.0), 2);
    assert_eq!(a, b, "the seed, not the entropy, decides");
    assert_ne!(a, jittered(Some(43.0), 1));
    assert_eq!(jittered(Some(0.0), 1), jittered(Some(-0.0), 9));
    // Without a seed, the module's entropy decides.
    assert_ne!(jittered(None, 1), jittered(None, 2));
    assert_eq!(jittered(None, 5), jittered(None, 5));
}

#[test]
fn a_new_seed_restarts_the_sequence() {
    let opts = |s: f64| {
        policy(&[
            (Opt::Jitter, Raw::Number(0.5)),
            (Opt::MaxAttempts, Raw::Number(6.0)),
            (Opt::Seed, Raw::Number(s)),
        ])
    };
    let mut h = Host::new(opts(1.0));
    h.execute();
    h.drain();
    let first = h.fail_until_end(100);
    // The same seed again does not restart: the sequence goes on.
    h.set_policy(opts(1.0));
    h.execute();
    h.drain();
    let second = h.fail_until_end(100);
    assert_ne!(first, second);
    // A different seed restarts from that seed.
    h.set_policy(opts(7.0));
    h.execute();
    h.drain();
    let third = h.fail_until_end(100);
    let mut fresh = Host::new(opts(7.0));
    fresh.execute();
    fresh.drain();
    assert_eq!(third, fresh.fail_until_end(100));
}

#[test]
fn machines_sharing_a_policy_go_their_own_ways() {
    let opts = [
        (Opt::Jitter, Raw::Number(0.5)),
        (Opt::MaxAttempts, Raw::Number(6.0)),
        (Opt::Seed, Raw::Number(3.0)),
    ];
    let mut a = Host::new(policy(&opts));
    let mut b = Host::new(policy(&opts));
    b.m = Machine::new(a.m.shared_policy(), 99);
    assert!(Rc::ptr_eq(&a.m.shared_policy(), &b.m.shared_policy()));
    // A new policy for one leaves the other's as it was.
    a.set_policy(policy(&[(Opt::MaxAttempts, Raw::Number(2.0))]));
    assert_eq!(b.m.policy(), &policy(&opts));
    a.execute();
    a.drain();
    b.execute();
    b.drain();
    assert_eq!(a.fail_until_end(100).len(), 1);
    let mut fresh = Host::new(policy(&opts));
    fresh.execute();
    fresh.drain();
    assert_eq!(b.fail_until_end(100), fresh.fail_until_end(100));
}

// ----- options validation (SPEC §3 and the §2 options) -----

fn refused(opt: Opt, raw: Raw<'_>) -> Option<(ErrorKind, Opt, Expect)> {
    try_policy(&[(opt, raw)])
        .err()
        .map(|e| (e.kind, e.opt, e.expect))
}

#[test]
fn every_bad_value_is_a_type_or_range_error_naming_the_option() {
    use ErrorKind::{Range as R, Type as T};
    use Expect as X;
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let n = Raw::Number;
    let cases: Vec<(Opt, Raw<'static>, ErrorKind, Expect)> = vec![
        (Opt::MaxAttempts, n(0.0), R, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(-1.0), R, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(2.5), R, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(nan), R, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(-inf), R, X::PositiveIntegerOrInfinity),
        (
            Opt::MaxAttempts,
            Raw::Str("3"),
            T,
            X::PositiveIntegerOrInfinity,
        ),
        (Opt::MaxAttempts, Raw::Null, T, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(inf), R, X::InfinityNeedsTotalDeadline),
        (Opt::BaseWait, n(-1.0), R, X::FiniteNonNegativeNumber),
        (Opt::BaseWait, n(nan), R, X::FiniteNonNegativeNumber),
        (Opt::BaseWait, n(inf), R, X::FiniteNonNegativeNumber),
        (Opt::BaseWait, Raw::Str("1s"), T, X::NumberOrFunction),
        (Opt::MaxWait, n(-1.0), R, X::NonNegativeNumber),
        (Opt::MaxWait, n(nan), R, X::NonNegativeNumber),
        (Opt::MaxWait, Raw::Bool(true), T, X::NumberOrFunction),
        (Opt::MaxExecutionTime, n(-1.0), R, X::NonNegativeNumber),
        (Opt::MaxExecutionTime, n(nan), R, X::NonNegativeNumber),
        (
            Opt::MaxExecutionTime,
            Raw::Function,
            T,
            X::NonNegativeNumber,
        ),
        (Opt::MaxTotalExecutionTime, n(-0.5), R, X::NonNegativeNumber),
        (Opt::MaxTotalExecutionTime, n(nan), R, X::NonNegativeNumber),
        (
            Opt::MaxTotalExecutionTime,
            Raw::Str("1"),
            T,
            X::NonNegativeNumber,
        ),
        (Opt::Jitter, n(-0.1), R, X::FractionOrFull),
        (Opt::Jitter, n(1.01), R, X::FractionOrFull),
        (Opt::Jitter, n(nan), R, X::FractionOrFull),
        (Opt::Jitter, Raw::Str("half"), R, X::FractionOrFull),
        (Opt::Jitter, Raw::Bool(true), T, X::FractionOrFull),
        (Opt::Backoff, Raw::Str("exp"), R, X::BackoffName),
        (Opt::Backoff, n(2.0), T, X::BackoffName),
        (
            Opt::ThrowOnError,
            Raw::Str("first"),
            R,
            X::ThrowOnErrorValue,
        ),
        (Opt::ThrowOnError, n(1.0), T, X::ThrowOnErrorValue),
        (Opt::Enabled, Raw::Str("yes"), T, X::BooleanOrFunction),
        (Opt::Enabled, n(1.0), T, X::BooleanOrFunction),
        (Opt::InitialState, n(1.0), T, X::Object),
        (Opt::InitialState, Raw::Null, T, X::Object),
        (Opt::Key, n(1.0), T, X::String),
        (Opt::ShouldRetry, Raw::Bool(true), T, X::Function),
        (Opt::ShouldRetry, Raw::Object, T, X::Function),
        (Opt::RetryAfter, n(1000.0), T, X::Function),
        (Opt::Intervals, Raw::Object, T, X::ArrayOfDelays),
        (Opt::Intervals, n(100.0), T, X::ArrayOfDelays),
        (Opt::Multiplier, n(0.0), R, X::PositiveFiniteNumber),
        (Opt::Multiplier, n(-2.0), R, X::PositiveFiniteNumber),
        (Opt::Multiplier, n(nan), R, X::PositiveFiniteNumber),
        (Opt::Multiplier, n(inf), R, X::PositiveFiniteNumber),
        (Opt::Multiplier, Raw::Str("2"), T, X::PositiveFiniteNumber),
        (Opt::Signal, Raw::Object, T, X::AbortSignal),
        (Opt::Signal, Raw::Bool(true), T, X::AbortSignal),
        (Opt::Budget, Raw::Object, T, X::RetryBudget),
        (Opt::Budget, n(0.0), T, X::RetryBudget),
        (Opt::Seed, n(nan), R, X::FiniteNumber),
        (Opt::Seed, n(inf), R, X::FiniteNumber),
        (Opt::Seed, Raw::Str("1"), T, X::FiniteNumber),
        (Opt::RetryOnExecutionTimeout, n(1.0), T, X::Boolean),
    ];
    for (opt, raw, kind, expect) in cases {
        let want = match expect {
            X::InfinityNeedsTotalDeadline => Some((kind, Opt::MaxAttempts, expect)),
            _ => Some((kind, opt, expect)),
        };
        assert_eq!(refused(opt, raw), want, "{opt:?} = {raw:?}");
    }
    // Every callback must be a function.
    for opt in callback_opts() {
        for raw in [
            Raw::Str("f"),
            Raw::Null,
            Raw::Object,
            n(1.0),
            Raw::Bool(true),
        ] {
            assert_eq!(
                refused(opt, raw),
                Some((T, opt, X::Function)),
                "{opt:?} = {raw:?}"
            );
        }
    }
    // Symbols, BigInts and the like are refused by every option.
    for opt in ALL_OPTS {
        let e = Policy::default().set(opt, Raw::Other).unwrap_err();
        assert_eq!((e.kind, e.opt), (T, opt), "{opt:?}");
    }
}

#[test]
fn good_values_are_accepted() {
    let n = Raw::Number;
    let ok: Vec<(Opt, Raw<'static>)> = vec![
        (Opt::MaxAttempts, n(1.0)),
        (Opt::MaxAttempts, Raw::Function),
        (Opt::BaseWait, n(0.0)),
        (Opt::BaseWait, n(-0.0)),
        (Opt::BaseWait, Raw::Function),
        (Opt::MaxWait, n(f64::INFINITY)),
        (Opt::MaxWait, n(0.0)),
        (Opt::MaxExecutionTime, n(0.0)),
        (Opt::MaxExecutionTime, n(f64::INFINITY)),
        (Opt::MaxTotalExecutionTime, n(f64::INFINITY)),
        (Opt::Jitter, n(0.0)),
        (Opt::Jitter, n(1.0)),
        (Opt::Jitter, Raw::Str("full")),
        (Opt::Backoff, Raw::Str("exponential")),
        (Opt::Backoff, Raw::Str("linear")),
        (Opt::Backoff, Raw::Str("fixed")),
        (Opt::Backoff, Raw::Str("decorrelated")),
        (Opt::Backoff, Raw::Function),
        (Opt::ThrowOnError, Raw::Bool(true)),
        (Opt::ThrowOnError, Raw::Bool(false)),
        (Opt::ThrowOnError, Raw::Str("last")),
        (Opt::Enabled, Raw::Bool(false)),
        (Opt::Enabled, Raw::Function),
        (Opt::InitialState, Raw::Object),
        (Opt::Key, Raw::Str("k")),
        (Opt::ShouldRetry, Raw::Function),
        (Opt::RetryAfter, Raw::Function),
        (Opt::Intervals, Raw::Array(0)),
        (Opt::Multiplier, n(0.5)),
        (Opt::Signal, Raw::Signal),
        (Opt::Budget, Raw::Budget(0)),
        (Opt::Seed, n(-3.25)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
    ];
    for (opt, raw) in ok {
        assert!(try_policy(&[(opt, raw)]).is_ok(), "{opt:?} = {raw:?}");
    }
}

#[test]
fn cross_option_rules() {
    let inf = Raw::Number(f64::INFINITY);
    // Infinity attempts need a finite total deadline, in either order.
    assert!(try_policy(&[
        (Opt::MaxAttempts, inf),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0))
    ])
    .is_ok());
    assert!(try_policy(&[
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
        (Opt::MaxAttempts, inf)
    ])
    .is_ok());
    // Intervals with Infinity attempts.
    let mut p = policy(&[
        (Opt::MaxAttempts, inf),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
    ]);
    p.set(Opt::Intervals, Raw::Array(1)).unwrap();
    p.push_interval(0, Raw::Number(10.0)).unwrap();
    let e = p.finish().unwrap_err();
    assert_eq!(
        (e.kind, e.opt, e.expect),
        (
            ErrorKind::Range,
            Opt::Intervals,
            Expect::IntervalsWithInfinity
        )
    );
    // Taking the total deadline away later is refused as well.
    let mut p = policy(&[
        (Opt::MaxAttempts, inf),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
    ]);
    p.set(Opt::MaxTotalExecutionTime, Raw::Undefined).unwrap();
    assert_eq!(
        p.finish().unwrap_err().expect,
        Expect::InfinityNeedsTotalDeadline
    );
}

#[test]
fn interval_entries_are_checked_one_by_one() {
    let mut p = Policy::default();
    p.set(Opt::Intervals, Raw::Array(4)).unwrap();
    p.push_interval(0, Raw::Number(10.0)).unwrap();
    p.push_interval(1, Raw::Number(0.0)).unwrap();
    for (raw, kind) in [
        (Raw::Number(-1.0), ErrorKind::Range),
        (Raw::Number(f64::NAN), ErrorKind::Range),
        (Raw::Number(f64::NEG_INFINITY), ErrorKind::Range),
        (Raw::Str("5"), ErrorKind::Type),
        (Raw::Null, ErrorKind::Type),
        (Raw::Undefined, ErrorKind::Type),
    ] {
        let e = p.clone().push_interval(2, raw).unwrap_err();
        assert_eq!(
            (e.kind, e.opt, e.expect, e.index),
            (kind, Opt::Intervals, Expect::ArrayOfDelays, 2),
            "{raw:?}"
        );
    }
    // An entry without an `intervals` array being staged.
    assert_eq!(
        Policy::default()
            .push_interval(0, Raw::Number(1.0))
            .unwrap_err()
            .kind,
        ErrorKind::Type
    );
}

#[test]
fn initial_state_fields_are_checked() {
    let mut p = policy(&[(Opt::InitialState, Raw::Object)]);
    for field in 0..3 {
        for (raw, kind) in [
            (Raw::Number(-1.0), ErrorKind::Range),
            (Raw::Number(f64::NAN), ErrorKind::Range),
            (Raw::Number(f64::INFINITY), ErrorKind::Range),
            (Raw::Str("1"), ErrorKind::Type),
        ] {
            let e = p.set_initial(field, raw).unwrap_err();
            assert_eq!((e.kind, e.opt, e.index), (kind, Opt::InitialState, field));
        }
        assert!(p.set_initial(field, Raw::Number(0.0)).is_ok());
        assert!(p.set_initial(field, Raw::Undefined).is_ok());
    }
}

#[test]
fn unknown_option_ids_are_refused() {
    assert_eq!(Opt::from_id(ALL_OPTS.len() as u32), None);
    assert_eq!(Opt::from_id(u32::MAX), None);
    for (i, o) in ALL_OPTS.iter().enumerate() {
        assert_eq!(Opt::from_id(i as u32), Some(*o));
    }
}

#[test]
fn undefined_means_not_set() {
    let n = Raw::Number;
    let non_default: Vec<(Opt, Raw<'static>)> = vec![
        (Opt::MaxAttempts, n(7.0)),
        (Opt::Backoff, Raw::Str("linear")),
        (Opt::BaseWait, n(5.0)),
        (Opt::MaxWait, n(5.0)),
        (Opt::Jitter, n(0.3)),
        (Opt::MaxExecutionTime, n(5.0)),
        (Opt::MaxTotalExecutionTime, n(5.0)),
        (Opt::ThrowOnError, Raw::Bool(true)),
        (Opt::Enabled, Raw::Bool(false)),
        (Opt::InitialState, Raw::Object),
        (Opt::Key, Raw::Str("k")),
        (Opt::OnRetry, Raw::Function),
        (Opt::OnError, Raw::Function),
        (Opt::OnLastError, Raw::Function),
        (Opt::OnSuccess, Raw::Function),
        (Opt::OnSettled, Raw::Function),
        (Opt::OnAbort, Raw::Function),
        (Opt::OnExecutionTimeout, Raw::Function),
        (Opt::OnTotalExecutionTimeout, Raw::Function),
        (Opt::ShouldRetry, Raw::Function),
        (Opt::OnGiveUp, Raw::Function),
        (Opt::RetryAfter, Raw::Function),
        (Opt::Intervals, Raw::Array(0)),
        (Opt::Multiplier, n(3.0)),
        (Opt::Signal, Raw::Signal),
        (Opt::Budget, Raw::Budget(1)),
        (Opt::Seed, n(1.0)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
        (Opt::Nested, Raw::Str("passthrough")),
        (Opt::InnerRetries, Raw::Bool(false)),
        (Opt::OnBackoff, Raw::Function),
    ];
    assert_eq!(non_default.len(), ALL_OPTS.len());
    for (opt, raw) in non_default {
        let mut p = Policy::default();
        p.set(opt, raw).unwrap();
        if opt == Opt::InitialState {
            p.set_initial(0, n(3.0)).unwrap();
        }
        if !matches!(opt, Opt::Key | Opt::InitialState) {
            assert_ne!(p, Policy::default(), "{opt:?} changed nothing");
        }
        p.set(opt, Raw::Undefined).unwrap();
        assert_eq!(p, Policy::default(), "{opt:?} = undefined is the default");
    }
}

#[test]
fn a_refused_value_changes_nothing() {
    // SPEC §3: "A failed setOptions changes nothing." The wasm layer stages
    // a copy and drops it on error, so this was never visible from
    // JavaScript. Regression (fixed in 9b43000): with intervals [10, 20, 30,
    // 40, 50] (6 attempts), set(MaxAttempts, Number(0)) returned Err but had
    // already set max_attempts_set, which would have cut the attempts to
    // min(3, 6) = 3 had the policy been used.
    let n = Raw::Number;
    let bad: Vec<(Opt, Raw<'static>)> = vec![
        (Opt::MaxAttempts, n(0.0)),
        (Opt::MaxAttempts, Raw::Str("x")),
        (Opt::BaseWait, n(-1.0)),
        (Opt::MaxWait, n(f64::NAN)),
        (Opt::Jitter, n(2.0)),
        (Opt::Backoff, Raw::Str("nope")),
        (Opt::Multiplier, n(0.0)),
        (Opt::Seed, n(f64::NAN)),
        (Opt::OnRetry, Raw::Null),
        (Opt::Enabled, n(1.0)),
    ];
    let base = with_intervals(policy(&[]), &[10.0, 20.0, 30.0, 40.0, 50.0]);
    for (opt, raw) in bad {
        let mut p = base.clone();
        assert!(p.set(opt, raw).is_err());
        assert_eq!(p, base, "{opt:?} = {raw:?} changed the policy");
    }
}

#[test]
fn budget_settings_are_checked() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(Budget::new(bad, 0.1), Err(BudgetError::MaxTokens), "{bad}");
    }
    for bad in [0.0, -0.1, f64::NAN, f64::INFINITY] {
        assert_eq!(
            Budget::new(10.0, bad),
            Err(BudgetError::TokenRatio),
            "{bad}"
        );
    }
    let b = Budget::new(0.5, 2.0).unwrap();
    assert_eq!(b.tokens(), 0.5, "starts full");
    assert_eq!(b.max_tokens(), 0.5);
    assert_eq!(b.token_ratio(), 2.0);
}

// ----- retries across layers (nested, innerRetries) and onBackoff -----

/// A flow of `h` started inside another retryer's running attempt.
fn execute_inside(h: &mut Host, forbids: bool) -> u32 {
    h.m.execute_within(h.now, false, Some(forbids))
}

#[test]
fn passthrough_inside_an_attempt_makes_one_attempt_and_hands_the_failure_back() {
    let budget = Budget::new(10.0, 0.1).unwrap();
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::Nested, Raw::Str("passthrough")),
        (Opt::ThrowOnError, Raw::Bool(false)),
        (Opt::OnBackoff, Raw::Function),
        (Opt::Budget, Raw::Budget(0)),
    ]));
    h.budgets.borrow_mut().push(budget);
    let g = execute_inside(&mut h, false);
    h.drain();
    h.err(g, 1);
    // No shouldRetry asked, no onRetry, no wait, no onBackoff; a rejection
    // whatever throwOnError says; the budget untouched (the outer flow
    // counts the failure).
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::Nested),
            call(g, Cb::Settled),
            fin(g, Outcome::Reject),
        ]
    );
    assert_eq!(h.budgets.borrow()[0].tokens(), 10.0);
    assert_eq!(h.invoked.len(), 1);
    h.assert_quiet();
}

#[test]
fn passthrough_outside_any_attempt_retries_as_always() {
    let mut h = Host::new(policy(&[(Opt::Nested, Raw::Str("passthrough"))]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(waits(&h.drain()), vec![1000.0]);
}

#[test]
fn an_enclosing_flow_that_forbids_makes_any_retryer_pass_through() {
    // nested: 'retry' (the default) passes through all the same.
    let mut h = Host::new(policy(&[]));
    let g = execute_inside(&mut h, true);
    h.drain();
    assert!(
        h.m.forbids_inner(),
        "what forbids its parent forbids its children"
    );
    h.err(g, 1);
    assert_eq!(h.drain(), vec![fin(g, Outcome::Reject)]);
    // Inside an attempt that does not forbid: retries.
    let mut h = Host::new(policy(&[]));
    let g = execute_inside(&mut h, false);
    h.drain();
    assert!(!h.m.forbids_inner());
    h.err(g, 1);
    assert_eq!(waits(&h.drain()), vec![1000.0]);
}

#[test]
fn inner_retries_false_forbids_the_flows_inside_and_still_retries_itself() {
    let p = policy(&[(Opt::InnerRetries, Raw::Bool(false))]);
    assert!(p.tracks_nesting());
    assert!(policy(&[(Opt::Nested, Raw::Str("passthrough"))]).tracks_nesting());
    assert!(!policy(&[]).tracks_nesting());
    let mut h = Host::new(p);
    let g = h.execute();
    h.drain();
    assert!(h.m.forbids_inner());
    h.err(g, 1);
    assert_eq!(waits(&h.drain()), vec![1000.0]);
    h.advance(1000.0);
    h.ok(g, 2);
    h.drain();
    assert!(!h.m.forbids_inner(), "no active flow, nothing forbidden");
}

#[test]
fn a_passthrough_success_is_a_success() {
    let mut h = Host::new(policy(&[(Opt::Nested, Raw::Str("passthrough"))]));
    let g = execute_inside(&mut h, false);
    h.drain();
    h.ok(g, 1);
    assert_eq!(h.drain(), vec![fin(g, Outcome::Result)]);
    assert_eq!(h.state().execution_count, 1.0);
}

#[test]
fn nested_and_inner_retries_are_checked() {
    for bad in [
        Raw::Str("outer"),
        Raw::Bool(true),
        Raw::Number(1.0),
        Raw::Null,
    ] {
        let e = try_policy(&[(Opt::Nested, bad)]).unwrap_err();
        assert_eq!(
            (e.kind, e.opt, e.expect),
            (ErrorKind::Type, Opt::Nested, Expect::NestedValue)
        );
    }
    for bad in [
        Raw::Str("false"),
        Raw::Number(0.0),
        Raw::Null,
        Raw::Function,
    ] {
        let e = try_policy(&[(Opt::InnerRetries, bad)]).unwrap_err();
        assert_eq!((e.kind, e.opt), (ErrorKind::Type, Opt::InnerRetries));
    }
    let e = try_policy(&[(Opt::OnBackoff, Raw::Str("x"))]).unwrap_err();
    assert_eq!((e.kind, e.opt), (ErrorKind::Type, Opt::OnBackoff));
    let mut p = policy(&[
        (Opt::InnerRetries, Raw::Bool(false)),
        (Opt::Nested, Raw::Str("passthrough")),
    ]);
    p.set(Opt::InnerRetries, Raw::Undefined).unwrap();
    p.set(Opt::Nested, Raw::Undefined).unwrap();
    assert!(!p.tracks_nesting());
}

/// The `Backoff` effects a flow of `p` pops, failing every attempt, with
/// the clock advanced `advance_before_failing` ms before each failure.
fn backoffs(p: Policy, attempts: u32, advance_before_failing: f64) -> Vec<(u32, f64, f64)> {
    let mut h = Host::new(p);
    let g = h.execute();
    h.drain();
    let mut out = Vec::new();
    for attempt in 1..=attempts {
        h.advance(advance_before_failing);
        h.err(g, attempt);
        for e in h.drain() {
            if let Effect::Backoff {
                attempt,
                delay,
                elapsed,
                ..
            } = e
            {
                out.push((attempt, delay, elapsed));
                h.advance(delay);
            }
        }
    }
    out
}

#[test]
fn backoff_reports_each_wait_with_its_delay_and_elapsed_time() {
    let on = (Opt::OnBackoff, Raw::Function);
    let exp = policy(&[
        on,
        (Opt::MaxAttempts, Raw::Number(4.0)),
        (Opt::BaseWait, Raw::Number(100.0)),
    ]);
    assert_eq!(
        backoffs(exp, 4, 10.0),
        vec![(1, 100.0, 10.0), (2, 200.0, 120.0), (3, 400.0, 330.0)]
    );
    let iv = with_intervals(policy(&[on]), &[5.0, 0.0, 7.0]);
    assert_eq!(
        backoffs(iv, 4, 1.0),
        vec![(1, 5.0, 1.0), (2, 0.0, 7.0), (3, 7.0, 8.0)]
    );
}

#[test]
fn backoff_of_a_seeded_jitter_is_the_delay_the_timer_gets() {
    let p = || {
        policy(&[
            (Opt::OnBackoff, Raw::Function),
            (Opt::Jitter, Raw::Number(0.5)),
            (Opt::Seed, Raw::Number(42.0)),
            (Opt::MaxAttempts, Raw::Number(5.0)),
        ])
    };
    let mut h = Host::new(p());
    let g = h.execute();
    h.drain();
    let mut pairs = Vec::new();
    for attempt in 1..5 {
        h.err(g, attempt);
        let effects = h.drain();
        let reported = effects.iter().find_map(|e| match e {
            Effect::Backoff { delay, .. } => Some(*delay),
            _ => None,
        });
        let slept = waits(&effects).first().copied();
        pairs.push((reported, slept));
        h.advance(slept.unwrap_or(0.0));
    }
    assert!(
        pairs.iter().all(|(r, s)| r.is_some() && r == s),
        "{pairs:?}"
    );
    // The same seed, the same sequence.
    assert_eq!(
        backoffs(p(), 4, 0.0)
            .iter()
            .map(|b| b.1)
            .collect::<Vec<_>>(),
        pairs.iter().map(|p| p.0.unwrap()).collect::<Vec<_>>()
    );
}

#[test]
fn backoff_reports_a_server_hint_and_not_a_wait_cut_by_the_deadline() {
    let mut h = Host::new(policy(&[
        (Opt::OnBackoff, Raw::Function),
        (Opt::RetryAfter, Raw::Function),
        (Opt::MaxTotalExecutionTime, Raw::Number(5000.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::RetryAfter, 1)]);
    h.provide(g, Provided::Number(1234.0));
    let effects = h.drain();
    assert!(effects.contains(&Effect::Backoff {
        gen: g,
        attempt: 1,
        delay: 1234.0,
        elapsed: 0.0
    }));
    h.advance(1234.0);
    h.err(g, 2);
    h.drain();
    h.provide(g, Provided::Number(10_000.0));
    // The hint would cross the deadline: a total timeout, no onBackoff.
    let effects = h.drain();
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Backoff { .. })),
        "{effects:?}"
    );
    assert!(effects.contains(&fin(g, Outcome::Undefined)));
}
