//! Options given as functions, asked through `Eval` and answered with
//! `provide`: the order they are asked in at each decision, which are not
//! asked when not needed, `maxAttempts` per decision, answers that end the
//! flow with a RangeError, and Infinity answers.

mod common;

use common::*;

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
