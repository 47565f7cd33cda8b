//! SPEC §1 flow rules 1–14 as the sans-IO machine expresses them: the exact
//! effect order of every path, the state after each step, delays, re-entrant
//! inputs and stale inputs. Driven by the fake host in `common` (fake clock,
//! fake timer wheel, seeded jitter).

mod common;

use common::*;

fn clears(effects: &[Effect]) -> Vec<Timer> {
    let mut out: Vec<Timer> = effects
        .iter()
        .filter_map(|e| match *e {
            Effect::ClearTimer { timer } => Some(timer),
            _ => None,
        })
        .collect();
    out.dedup();
    out
}

fn no_clears(effects: &[Effect]) -> Vec<Effect> {
    effects
        .iter()
        .copied()
        .filter(|e| !matches!(e, Effect::ClearTimer { .. }))
        .collect()
}

/// With a subscriber from the start, every version bump is announced.
fn assert_versions_announced(h: &Host) {
    assert!(!h.m.has_effects());
    assert_eq!(
        h.version(),
        h.state_changes,
        "a version bump without StateChanged"
    );
}

// ----- rule 1: execute, enabled -----

#[test]
fn execute_invokes_attempt_one_at_once() {
    let mut h = Host::new(policy(&[])).subscribed();
    assert_eq!(h.status(), Status::Idle);
    let g = h.execute();
    assert_eq!(g, 1);
    assert_eq!(h.drain(), vec![SC, inv(1, 1)]);
    let s = h.state().clone();
    assert!(s.is_executing);
    assert_eq!(s.current_attempt, 1);
    assert!(!s.has_last_error);
    assert_eq!(h.status(), Status::Executing);
    assert_eq!(s.version, 1);
    assert!(h.wheel.is_empty(), "no deadline configured, no timer");
}

#[test]
fn disabled_resolves_undefined_and_calls_nothing() {
    let mut h = Host::new(policy_all_cbs(&[(Opt::Enabled, Raw::Bool(false))])).subscribed();
    assert_eq!(h.status(), Status::Disabled);
    let g = h.execute();
    assert_eq!(h.drain(), vec![fin(g, Outcome::Undefined)]);
    assert_eq!(h.version(), 0, "nothing changed");
    assert!(!h.state().is_executing);
    assert_eq!(h.status(), Status::Disabled);
    h.assert_quiet();
}

#[test]
fn dynamic_enabled_is_evaluated_per_execute() {
    let mut h = Host::new(policy(&[(Opt::Enabled, Raw::Function)])).subscribed();
    let g = h.execute();
    assert_eq!(h.drain(), vec![eval(g, Eval::Enabled, 0)]);
    h.provide(g, Provided::Bool(false));
    assert_eq!(h.drain(), vec![SC, fin(g, Outcome::Undefined)]);
    assert_eq!(h.status(), Status::Disabled);
    let g2 = h.execute();
    assert_eq!(h.drain(), vec![eval(g2, Eval::Enabled, 0)]);
    h.provide(g2, Provided::Bool(true));
    assert_eq!(h.drain(), vec![SC, SC, inv(g2, 1)]);
    assert_eq!(h.status(), Status::Executing);
    h.ok(g2, 1);
    h.drain();
    h.assert_quiet();
    // An `enabled` function that throws rejects with what it threw.
    let g3 = h.execute();
    h.drain();
    h.provide(g3, Provided::Threw);
    assert_eq!(h.drain(), vec![fin(g3, Outcome::Thrown)]);
    assert_versions_announced(&h);
}

// ----- rule 2: a new execution aborts the active flow -----

#[test]
fn new_execution_aborts_the_running_attempt() {
    let mut h = Host::new(policy_all_cbs(&[(
        Opt::MaxExecutionTime,
        Raw::Number(5000.0),
    )]))
    .subscribed();
    let g1 = h.execute();
    assert_eq!(
        h.drain(),
        vec![SC, start(g1, Timer::Attempt, 5000.0), inv(g1, 1)]
    );
    h.now = 10.0;
    let g2 = h.execute();
    assert_eq!(g2, 2);
    assert_eq!(
        h.drain(),
        vec![
            abort_att(g1, 1, AbortReason::NewExecution),
            clear(Timer::Attempt),
            SC,
            on_abort(g1, AbortReason::NewExecution),
            fin(g1, Outcome::Undefined),
            SC,
            start(g2, Timer::Attempt, 5000.0),
            inv(g2, 1),
        ]
    );
    // The old attempt settling later changes nothing.
    let v = h.version();
    h.ok(g1, 1);
    h.err(g1, 1);
    assert!(!h.m.has_effects());
    assert_eq!(h.version(), v);
    h.ok(g2, 1);
    assert_eq!(
        h.drain(),
        vec![
            clear(Timer::Attempt),
            SC,
            call(g2, Cb::Success),
            call(g2, Cb::Settled),
            fin(g2, Outcome::Result)
        ]
    );
    assert_eq!(h.state().execution_count, 1.0);
    h.assert_quiet();
    assert_versions_announced(&h);
}

#[test]
fn new_execution_during_a_wait_clears_the_wait() {
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    let g1 = h.execute();
    h.drain();
    h.err(g1, 1);
    h.drain();
    assert_eq!(h.wheel.len(), 1);
    let g2 = h.execute();
    assert_eq!(
        h.drain(),
        vec![
            abort_att(g1, 1, AbortReason::NewExecution),
            clear(Timer::Wait),
            SC,
            on_abort(g1, AbortReason::NewExecution),
            fin(g1, Outcome::Undefined),
            SC,
            inv(g2, 1),
        ]
    );
    assert!(h.wheel.is_empty());
    assert!(
        !h.state().has_last_error,
        "lastError is cleared when a flow starts"
    );
    assert_eq!(h.state().current_attempt, 1);
    assert!(h.advance(10_000.0).is_empty(), "the old wait never fires");
    assert_versions_announced(&h);
}

// ----- rule 3: success -----

#[test]
fn success_updates_state_then_calls_on_success_then_on_settled() {
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    h.now = 100.0;
    let g = h.execute();
    assert_eq!(h.drain(), vec![SC, inv(g, 1)]);
    h.now = 130.0;
    h.ok(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            SC,
            call(g, Cb::Success),
            call(g, Cb::Settled),
            fin(g, Outcome::Result)
        ]
    );
    let s = h.state();
    assert_eq!(s.execution_count, 1.0);
    assert_eq!(s.last_execution_time, 130.0);
    assert_eq!(s.total_execution_time, 30.0);
    assert_eq!(s.current_attempt, 0);
    assert!(s.has_last_result);
    assert!(!s.is_executing);
    assert_eq!(h.status(), Status::Idle);
    h.assert_quiet();
    assert_versions_announced(&h);
}

#[test]
fn success_after_retries_counts_one_execution_and_total_time_includes_waits() {
    let mut h = Host::new(policy(&[(Opt::BaseWait, Raw::Number(100.0))])).subscribed();
    h.now = 1000.0;
    let g = h.execute();
    h.drain();
    h.now = 1010.0;
    h.err(g, 1);
    h.advance(100.0); // attempt 2 at 1110
    h.now = 1150.0;
    h.err(g, 2);
    h.advance(200.0); // attempt 3 at 1350
    assert_eq!(h.current(), (g, 3));
    h.now = 1400.0;
    h.ok(g, 3);
    h.drain();
    let s = h.state();
    assert_eq!(s.execution_count, 1.0);
    assert_eq!(s.total_execution_time, 400.0);
    assert_eq!(s.last_execution_time, 1400.0);
    assert_eq!(s.current_attempt, 0);
    assert!(
        s.has_last_error,
        "lastError keeps the most recent failure after a later success"
    );
    h.assert_quiet();
    assert_versions_announced(&h);
}

// ----- rule 4: failed attempt with attempts left -----

#[test]
fn retry_path_order_state_and_exact_delay() {
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    let g = h.execute();
    assert_eq!(h.drain(), vec![SC, inv(g, 1)]);
    h.now = 10.0;
    h.err(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            SC,
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            SC,
            wait(g, 1000.0),
        ]
    );
    let s = h.state();
    assert!(s.is_executing);
    assert!(s.has_last_error);
    assert_eq!(
        s.current_attempt, 2,
        "during a wait: the attempt about to run"
    );
    assert_eq!(h.status(), Status::Retrying);
    assert!(h.advance(999.0).is_empty());
    assert_eq!(h.advance(1.0), vec![SC, inv(g, 2)]);
    assert_eq!(h.now, 1010.0);
    assert_eq!(h.status(), Status::Retrying);
    h.err(g, 2);
    assert_eq!(
        h.drain(),
        vec![
            SC,
            call(g, Cb::Error),
            retry(g, 2),
            call(g, Cb::Settled),
            SC,
            wait(g, 2000.0),
        ]
    );
    assert_eq!(h.advance(2000.0), vec![SC, inv(g, 3)]);
    assert_eq!(h.state().current_attempt, 3);
    assert_versions_announced(&h);
}

#[test]
fn status_is_executing_while_attempt_one_is_being_decided() {
    let mut h = Host::new(policy_all_cbs(&[]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    // Pop onError: the failed attempt 1 is still the current one.
    assert_eq!(h.pop(), Some(call(g, Cb::Error)));
    assert_eq!(h.status(), Status::Executing);
    h.drain();
    assert_eq!(h.status(), Status::Retrying);
}

// ----- rule 5: the last failed attempt -----

#[test]
fn last_failure_order_and_state() {
    let mut h = Host::new(policy_all_cbs(&[(Opt::BaseWait, Raw::Number(10.0))])).subscribed();
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.advance(10.0);
    h.err(g, 2);
    h.advance(20.0);
    assert_eq!(h.current(), (g, 3));
    h.err(g, 3);
    assert_eq!(
        h.drain(),
        vec![
            SC,
            call(g, Cb::Error),
            SC,
            call(g, Cb::LastError),
            give_up(g, GiveUp::AttemptsExhausted),
            call(g, Cb::Settled),
            fin(g, Outcome::Undefined), // onError is set: throwOnError defaults to false
        ]
    );
    let s = h.state();
    assert!(!s.is_executing);
    assert_eq!(s.current_attempt, 3, "keeps its last value after failure");
    assert!(s.has_last_error);
    assert_eq!(s.execution_count, 0.0);
    assert_eq!(h.status(), Status::Idle);
    h.assert_quiet();
    assert_versions_announced(&h);
}

#[test]
fn last_failure_outcome_follows_throw_on_error() {
    let cases: Vec<(Vec<(Opt, Raw<'static>)>, Outcome)> = vec![
        (vec![], Outcome::Reject),
        (vec![(Opt::ThrowOnError, Raw::Str("last"))], Outcome::Reject),
        (vec![(Opt::ThrowOnError, Raw::Bool(true))], Outcome::Reject),
        (
            vec![(Opt::ThrowOnError, Raw::Bool(false))],
            Outcome::Undefined,
        ),
        (vec![(Opt::OnError, Raw::Function)], Outcome::Undefined),
        (
            vec![
                (Opt::OnError, Raw::Function),
                (Opt::ThrowOnError, Raw::Str("last")),
            ],
            Outcome::Reject,
        ),
        (
            vec![
                (Opt::OnError, Raw::Function),
                (Opt::ThrowOnError, Raw::Bool(true)),
            ],
            Outcome::Reject,
        ),
    ];
    for (mut opts, want) in cases {
        opts.push((Opt::MaxAttempts, Raw::Number(1.0)));
        let mut h = Host::new(policy(&opts));
        let g = h.execute();
        h.drain();
        h.err(g, 1);
        let out = h.drain();
        assert_eq!(out.last(), Some(&fin(g, want)), "{opts:?}");
        assert!(!out.iter().any(|e| matches!(e, Effect::StartTimer { .. })));
        h.assert_quiet();
    }
}

#[test]
fn one_attempt_success_and_failure_have_no_timer() {
    let mut h = Host::new(policy(&[(Opt::MaxAttempts, Raw::Number(1.0))]));
    let g = h.execute();
    assert_eq!(h.drain(), vec![inv(g, 1)]);
    h.err(g, 1);
    assert_eq!(h.drain(), vec![fin(g, Outcome::Reject)]);
    h.assert_quiet();
}

// ----- rule 7: AbortError is cancellation -----

#[test]
fn abort_error_ends_the_flow_without_on_error_or_on_abort() {
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::MaxExecutionTime, Raw::Number(5000.0)),
        (Opt::MaxTotalExecutionTime, Raw::Number(60_000.0)),
    ]))
    .subscribed();
    let g = h.execute();
    assert_eq!(
        h.drain(),
        vec![
            start(g, Timer::Total, 60_000.0),
            SC,
            start(g, Timer::Attempt, 5000.0),
            inv(g, 1)
        ]
    );
    h.err(g, 1);
    h.drain();
    h.advance(1000.0);
    assert_eq!(h.current(), (g, 2));
    let v = h.version();
    h.abort_error(g, 2);
    let out = h.drain();
    assert_eq!(
        no_clears(&out),
        vec![SC, call(g, Cb::Settled), fin(g, Outcome::Undefined)]
    );
    assert_eq!(clears(&out), vec![Timer::Attempt, Timer::Total]);
    assert!(h.version() > v);
    let s = h.state();
    assert!(!s.is_executing);
    assert_eq!(h.status(), Status::Idle);
    assert_eq!(s.execution_count, 0.0);
    h.assert_quiet();
    assert!(h.advance(100_000.0).is_empty());
    assert_versions_announced(&h);
}

#[test]
fn abort_error_on_the_first_attempt_with_throw_on() {
    let mut h = Host::new(policy(&[(Opt::ThrowOnError, Raw::Bool(true))]));
    let g = h.execute();
    h.drain();
    h.abort_error(g, 1);
    assert_eq!(h.drain(), vec![fin(g, Outcome::Undefined)]);
    assert!(!h.state().has_last_error, "a cancellation is not a failure");
    h.assert_quiet();
}

// ----- rule 8: abort() -----

#[test]
fn abort_during_an_attempt() {
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::MaxExecutionTime, Raw::Number(3000.0)),
        (Opt::MaxTotalExecutionTime, Raw::Number(10_000.0)),
    ]))
    .subscribed();
    let g = h.execute();
    h.drain();
    h.now = 50.0;
    h.abort();
    assert_eq!(
        h.drain(),
        vec![
            abort_att(g, 1, AbortReason::Manual),
            clear(Timer::Attempt),
            clear(Timer::Total),
            SC,
            on_abort(g, AbortReason::Manual),
            fin(g, Outcome::Undefined),
        ]
    );
    let s = h.state().clone();
    assert!(!s.is_executing);
    assert_eq!(s.current_attempt, 1, "keeps its last value after abort");
    assert_eq!(h.status(), Status::Idle);
    // The aborted attempt settling later is ignored.
    h.ok(g, 1);
    h.err(g, 1);
    assert!(!h.m.has_effects());
    assert_eq!(h.state(), &s);
    // A second abort does nothing.
    h.abort();
    assert!(!h.m.has_effects());
    assert_eq!(h.state(), &s);
    h.assert_quiet();
    assert!(h.advance(100_000.0).is_empty());
    assert_versions_announced(&h);
}

#[test]
fn abort_during_a_wait_clears_the_wait() {
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.advance(500.0);
    h.abort();
    assert_eq!(
        h.drain(),
        vec![
            abort_att(g, 1, AbortReason::Manual),
            clear(Timer::Wait),
            SC,
            on_abort(g, AbortReason::Manual),
            fin(g, Outcome::Undefined),
        ]
    );
    assert_eq!(h.state().current_attempt, 2);
    assert!(h.advance(10_000.0).is_empty(), "the wait never fires");
    assert!(h.fired.is_empty());
    h.assert_quiet();
    assert_versions_announced(&h);
}

#[test]
fn abort_without_a_flow_does_nothing() {
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    h.abort();
    h.signal();
    assert!(!h.m.has_effects());
    assert_eq!(h.version(), 0);
    let g = h.execute();
    h.drain();
    h.ok(g, 1);
    h.drain();
    let v = h.version();
    h.abort();
    assert!(!h.m.has_effects());
    assert_eq!(h.version(), v);
}

// ----- rule 10: execution timeout -----

#[test]
fn execution_timeout_ends_the_flow_as_a_failure() {
    for (throw, outcome) in [(true, Outcome::Reject), (false, Outcome::Undefined)] {
        let mut h = Host::new(policy_all_cbs(&[
            (Opt::MaxExecutionTime, Raw::Number(500.0)),
            (Opt::ThrowOnError, Raw::Bool(throw)),
        ]))
        .subscribed();
        let g = h.execute();
        assert_eq!(
            h.drain(),
            vec![SC, start(g, Timer::Attempt, 500.0), inv(g, 1)]
        );
        assert!(h.advance(499.0).is_empty());
        assert_eq!(
            h.advance(1.0),
            vec![
                call(g, Cb::ExecutionTimeout),
                time_out(g, 1),
                SC,
                on_abort(g, AbortReason::ExecutionTimeout),
                call(g, Cb::Error),
                SC,
                call(g, Cb::LastError),
                give_up(g, GiveUp::ExecutionTimeout),
                call(g, Cb::Settled),
                fin(g, outcome),
            ]
        );
        let s = h.state().clone();
        assert!(s.has_last_error, "the TimeoutError is the last error");
        assert!(!s.is_executing);
        assert_eq!(s.current_attempt, 1);
        // Whatever the timed-out function does later is ignored.
        h.ok(g, 1);
        h.err(g, 1);
        assert!(!h.m.has_effects());
        assert_eq!(h.state(), &s);
        h.assert_quiet();
        assert_versions_announced(&h);
    }
}

#[test]
fn execution_timeout_with_retry_on_execution_timeout_retries() {
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::MaxExecutionTime, Raw::Number(500.0)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
    ]))
    .subscribed();
    let g = h.execute();
    h.drain();
    assert_eq!(
        h.advance(500.0),
        vec![
            call(g, Cb::ExecutionTimeout),
            time_out(g, 1),
            SC,
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            SC,
            wait(g, 1000.0),
        ]
    );
    assert_eq!(
        h.advance(1000.0),
        vec![SC, start(g, Timer::Attempt, 500.0), inv(g, 2)]
    );
    // The first attempt settling late is ignored.
    let v = h.version();
    h.ok(g, 1);
    assert!(!h.m.has_effects());
    assert_eq!(h.version(), v);
    // Attempt 2 times out, attempt 3 too: each is an ordinary failed
    // attempt, so the last one exhausts the attempts, with no onAbort.
    let out = h.advance(500.0 + 2000.0);
    assert_eq!(waits(&out), vec![2000.0]);
    assert_eq!(h.current(), (g, 3));
    assert_eq!(
        h.advance(500.0),
        vec![
            call(g, Cb::ExecutionTimeout),
            time_out(g, 3),
            SC,
            call(g, Cb::Error),
            SC,
            call(g, Cb::LastError),
            give_up(g, GiveUp::AttemptsExhausted),
            call(g, Cb::Settled),
            fin(g, Outcome::Undefined),
        ]
    );
    assert!(!cbs(&h.log).iter().any(|(cb, _)| *cb == Cb::Abort));
    h.assert_quiet();
    assert_versions_announced(&h);
}

#[test]
fn an_attempt_that_fails_in_time_clears_its_deadline() {
    let mut h = Host::new(policy(&[(Opt::MaxExecutionTime, Raw::Number(500.0))]));
    let g = h.execute();
    h.drain();
    h.now = 100.0;
    h.err(g, 1);
    assert_eq!(h.drain(), vec![clear(Timer::Attempt), wait(g, 1000.0)]);
    assert_eq!(h.wheel.len(), 1);
    assert_eq!(
        h.advance(1000.0),
        vec![start(g, Timer::Attempt, 500.0), inv(g, 2)]
    );
    h.now += 10.0;
    h.ok(g, 2);
    h.drain();
    h.assert_quiet();
}

// ----- rule 11: total timeout -----

#[test]
fn total_timeout_during_an_attempt_that_never_settles() {
    for throw in [true, false] {
        let mut h = Host::new(policy_all_cbs(&[
            (Opt::MaxTotalExecutionTime, Raw::Number(1500.0)),
            (Opt::ThrowOnError, Raw::Bool(throw)),
        ]))
        .subscribed();
        let g = h.execute();
        assert_eq!(
            h.drain(),
            vec![start(g, Timer::Total, 1500.0), SC, inv(g, 1)]
        );
        h.now = 100.0;
        h.err(g, 1);
        assert_eq!(waits(&h.drain()), vec![1000.0]);
        h.advance(1000.0);
        assert_eq!(h.current(), (g, 2));
        assert!(h.advance(399.0).is_empty());
        assert_eq!(
            h.advance(1.0),
            vec![
                call(g, Cb::TotalExecutionTimeout),
                abort_att(g, 2, AbortReason::TotalTimeout),
                SC,
                on_abort(g, AbortReason::TotalTimeout),
                fin(g, Outcome::Undefined),
            ]
        );
        assert_eq!(h.now, 1500.0);
        let s = h.state().clone();
        assert!(!s.is_executing);
        assert_eq!(s.current_attempt, 2);
        h.ok(g, 2);
        assert!(!h.m.has_effects());
        h.assert_quiet();
        assert_versions_announced(&h);
    }
}

#[test]
fn a_wait_crossing_the_deadline_clears_the_attempt_deadline_too() {
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::MaxTotalExecutionTime, Raw::Number(1500.0)),
        (Opt::MaxExecutionTime, Raw::Number(300.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.now = 200.0;
    h.err(g, 1);
    h.drain(); // wait 1000 until 1200
    h.advance(1000.0); // attempt 2 at 1200, deadline at 1500
    h.now = 1250.0;
    h.err(g, 2); // a 2000 ms wait would end after the deadline
    let out = h.drain();
    assert_eq!(
        no_clears(&out),
        vec![
            call(g, Cb::Error),
            retry(g, 2),
            call(g, Cb::Settled),
            call(g, Cb::TotalExecutionTimeout),
            abort_att(g, 2, AbortReason::TotalTimeout),
            on_abort(g, AbortReason::TotalTimeout),
            fin(g, Outcome::Undefined),
        ]
    );
    assert_eq!(h.now, 1250.0, "at once, not at the deadline");
    assert!(waits(&out).is_empty(), "the wait is not slept");
    h.assert_quiet();
}

#[test]
fn a_wait_ending_after_the_deadline_is_a_total_timeout_at_once() {
    let mut h = Host::new(policy_all_cbs(&[(
        Opt::MaxTotalExecutionTime,
        Raw::Number(2500.0),
    )]))
    .subscribed();
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    h.advance(1000.0);
    h.err(g, 2);
    assert_eq!(
        h.drain(),
        vec![
            SC,
            call(g, Cb::Error),
            retry(g, 2),
            call(g, Cb::Settled),
            call(g, Cb::TotalExecutionTimeout),
            abort_att(g, 2, AbortReason::TotalTimeout),
            clear(Timer::Total),
            SC,
            on_abort(g, AbortReason::TotalTimeout),
            fin(g, Outcome::Undefined),
        ]
    );
    assert_eq!(h.now, 1000.0);
    h.assert_quiet();
    assert_versions_announced(&h);
}

#[test]
fn a_wait_ending_before_the_deadline_is_slept() {
    let mut h = Host::new(policy(&[(Opt::MaxTotalExecutionTime, Raw::Number(2001.0))]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![wait(g, 1000.0)]);
    h.advance(1000.0);
    h.ok(g, 2);
    assert_eq!(
        h.drain(),
        vec![clear(Timer::Total), fin(g, Outcome::Result)]
    );
    h.assert_quiet();
}

#[test]
fn zero_total_deadline_times_out_before_any_attempt() {
    let mut h = Host::new(policy_all_cbs(&[(
        Opt::MaxTotalExecutionTime,
        Raw::Number(0.0),
    )]));
    let g = h.execute();
    let out = h.drain();
    assert!(!out.iter().any(|e| matches!(e, Effect::Invoke { .. })));
    assert_eq!(
        cbs(&out),
        vec![
            (Cb::TotalExecutionTimeout, 0),
            (Cb::Abort, AbortReason::TotalTimeout as u32)
        ]
    );
    assert_eq!(out.last(), Some(&fin(g, Outcome::Undefined)));
    assert!(!h.state().is_executing);
    h.assert_quiet();
}

// ----- zero delay -----

#[test]
fn zero_delay_retries_without_a_timer() {
    let mut h = Host::new(policy(&[(Opt::BaseWait, Raw::Number(0.0))])).subscribed();
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![SC, SC, inv(g, 2)]);
    h.err(g, 2);
    assert_eq!(h.drain(), vec![SC, SC, inv(g, 3)]);
    assert!(h.wheel.is_empty());
    h.ok(g, 3);
    h.drain();
    h.assert_quiet();
    assert_versions_announced(&h);

    let mut h = Host::new(policy(&[(Opt::MaxWait, Raw::Number(0.0))]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![inv(g, 2)]);
}

// ----- rule 12: nothing remains after a flow -----

#[test]
fn no_timer_or_listener_remains_after_any_ending() {
    type End = fn(&mut Host, u32);
    // (name, needs a running attempt, total deadline, ending)
    let endings: Vec<(&str, bool, f64, End)> = vec![
        ("success", true, 9000.0, |h, g| h.ok(g, h.current().1)),
        ("abort error", true, 9000.0, |h, g| {
            h.abort_error(g, h.current().1)
        }),
        ("abort", false, 9000.0, |h, _| h.abort()),
        ("signal", false, 9000.0, |h, _| h.signal()),
        ("new execution then success", false, 9000.0, |h, _| {
            let g2 = h.execute();
            h.drain();
            h.ok(g2, 1);
        }),
        ("execution timeout", true, 9000.0, |h, _| {
            h.advance(400.0);
        }),
        ("total timeout", false, 350.0, |h, _| {
            h.advance(350.0);
        }),
        ("exhausted", true, 9000.0, |h, _| {
            h.fail_until_end(10);
        }),
        ("callback threw", false, 9000.0, |h, g| h.threw(g)),
    ];
    for (name, needs_attempt, total, end) in endings {
        for during_wait in [false, true] {
            let mut h = Host::new(policy_all_cbs(&[
                (Opt::MaxExecutionTime, Raw::Number(400.0)),
                (Opt::MaxTotalExecutionTime, Raw::Number(total)),
                (Opt::Signal, Raw::Signal),
                (Opt::BaseWait, Raw::Number(100.0)),
            ]));
            let g = h.execute();
            assert_eq!(h.drain()[0], Effect::Listen { gen: g });
            if during_wait {
                h.err(g, 1);
                assert_eq!(waits(&h.drain()), vec![100.0], "{name}");
                if needs_attempt {
                    h.advance(100.0);
                    assert_eq!(h.current(), (g, 2));
                }
            }
            end(&mut h, g);
            h.drain();
            assert!(
                h.finished.contains_key(&g),
                "{name}: gen {g} never finished"
            );
            h.assert_quiet();
            let fired_before = h.fired.len();
            assert!(
                h.advance(1_000_000.0).is_empty(),
                "{name}: something fired after the flow ended"
            );
            assert_eq!(h.fired.len(), fired_before, "{name}");
            assert!(
                h.log.contains(&Effect::Unlisten { gen: g }),
                "{name}: the outside signal is no longer listened to"
            );
        }
    }
}

// ----- rule 13: options change between decisions -----

#[test]
fn set_policy_is_read_at_the_next_decision_without_restarting() {
    let mut h = Host::new(policy(&[(Opt::MaxAttempts, Raw::Number(5.0))])).subscribed();
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(waits(&h.drain()), vec![1000.0]);
    let v = h.version();
    h.set_policy(policy(&[
        (Opt::MaxAttempts, Raw::Number(2.0)),
        (Opt::BaseWait, Raw::Number(10.0)),
    ]));
    assert!(!h.m.has_effects(), "setOptions does not restart a flow");
    assert_eq!(h.version(), v);
    assert!(h.m.is_active());
    h.advance(1000.0);
    h.err(g, 2);
    assert_eq!(h.drain(), vec![SC, SC, fin(g, Outcome::Reject)]);

    // baseWait is also read at the next decision.
    let g = h.execute();
    h.drain();
    h.set_policy(policy(&[(Opt::BaseWait, Raw::Number(25.0))]));
    h.err(g, 1);
    assert_eq!(waits(&h.drain()), vec![25.0]);
    assert_versions_announced(&h);
}

#[test]
fn disabling_shows_disabled_at_once_and_the_flow_goes_on() {
    let mut h = Host::new(policy(&[])).subscribed();
    let g = h.execute();
    h.drain();
    let v = h.version();
    h.set_policy(policy(&[(Opt::Enabled, Raw::Bool(false))]));
    assert_eq!(h.status(), Status::Disabled);
    assert_eq!(h.version(), v + 1);
    assert_eq!(h.drain(), vec![SC]);
    assert!(h.m.is_active());
    h.ok(g, 1);
    assert_eq!(h.drain(), vec![SC, fin(g, Outcome::Result)]);
    assert_eq!(h.status(), Status::Disabled);
    let g2 = h.execute();
    assert_eq!(h.drain(), vec![fin(g2, Outcome::Undefined)]);
    h.set_policy(policy(&[]));
    assert_eq!(h.status(), Status::Idle);
    assert_eq!(h.drain(), vec![SC]);
    assert_versions_announced(&h);
}

// ----- state -----

#[test]
fn initial_state_persists_only_persistable_fields() {
    let mut p = policy(&[(Opt::InitialState, Raw::Object)]);
    p.set_initial(0, Raw::Number(7.0)).unwrap();
    p.set_initial(1, Raw::Number(123.0)).unwrap();
    p.set_initial(2, Raw::Number(45.0)).unwrap();
    p.set_initial(3, Raw::Str("r")).unwrap();
    p.set_initial(4, Raw::Null).unwrap();
    // Fields that cannot persist are not even sent; unknown ids are ignored.
    p.set_initial(99, Raw::Number(1.0)).unwrap();
    let h = Host::new(p);
    let s = h.state();
    assert_eq!(s.execution_count, 7.0);
    assert_eq!(s.last_execution_time, 123.0);
    assert_eq!(s.total_execution_time, 45.0);
    assert!(s.has_last_result && s.has_last_error);
    assert!(!s.is_executing);
    assert_eq!(s.current_attempt, 0);
    assert_eq!(h.status(), Status::Idle);
}

#[test]
fn reset_restores_defaults_without_stopping_the_flow() {
    let mut h = Host::new(policy(&[])).subscribed();
    let g = h.execute();
    h.drain();
    h.ok(g, 1);
    h.drain();
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    let v = h.version();
    h.reset();
    assert_eq!(h.version(), v + 1);
    assert_eq!(h.drain(), vec![SC]);
    let s = h.state();
    assert_eq!(s.execution_count, 0.0);
    assert_eq!(s.current_attempt, 0);
    assert!(!s.has_last_result && !s.has_last_error);
    // The flow goes on: the wait fires and attempt 2 runs.
    assert!(h.m.is_active());
    assert_eq!(h.advance(1000.0), vec![SC, inv(g, 2)]);
    assert_eq!(h.state().current_attempt, 2);
    h.ok(g, 2);
    h.drain();
    assert_eq!(h.state().execution_count, 1.0);
    assert_versions_announced(&h);
}

#[test]
fn version_only_moves_when_state_changes() {
    let mut h = Host::new(policy(&[(Opt::BaseWait, Raw::Number(0.0))]));
    assert_eq!(h.version(), 0);
    let g = h.execute();
    assert_eq!(h.version(), 1);
    h.drain();
    assert_eq!(h.version(), 1, "popping alone changes nothing");
    h.ok(g, 99);
    h.err(g + 1, 1);
    h.provide(g, Provided::Number(1.0));
    h.fire(Timer::Wait);
    h.fire(Timer::Total);
    assert_eq!(h.version(), 1, "stale inputs change nothing");
    h.err(g, 1);
    h.drain();
    assert_eq!(h.version(), 3, "one bump for lastError, one for attempt 2");
}

// ----- delays -----

fn delays_of(opts: &[(Opt, Raw<'_>)]) -> Vec<f64> {
    let mut h = Host::new(policy(opts));
    h.execute();
    h.drain();
    let d = h.fail_until_end(10_000);
    h.assert_quiet();
    d
}

#[test]
fn exponential_linear_fixed_with_max_wait() {
    assert_eq!(
        delays_of(&[(Opt::MaxAttempts, Raw::Number(6.0))]),
        vec![1000.0, 2000.0, 4000.0, 8000.0, 16000.0]
    );
    assert_eq!(
        delays_of(&[
            (Opt::MaxAttempts, Raw::Number(6.0)),
            (Opt::MaxWait, Raw::Number(3000.0))
        ]),
        vec![1000.0, 2000.0, 3000.0, 3000.0, 3000.0]
    );
    assert_eq!(
        delays_of(&[
            (Opt::MaxAttempts, Raw::Number(6.0)),
            (Opt::Backoff, Raw::Str("linear")),
            (Opt::BaseWait, Raw::Number(500.0)),
            (Opt::MaxWait, Raw::Number(1800.0)),
        ]),
        vec![500.0, 1000.0, 1500.0, 1800.0, 1800.0]
    );
    assert_eq!(
        delays_of(&[
            (Opt::MaxAttempts, Raw::Number(5.0)),
            (Opt::Backoff, Raw::Str("fixed")),
            (Opt::BaseWait, Raw::Number(700.0)),
        ]),
        vec![700.0; 4]
    );
    assert_eq!(
        delays_of(&[
            (Opt::MaxAttempts, Raw::Number(3.0)),
            (Opt::Backoff, Raw::Str("fixed")),
            (Opt::BaseWait, Raw::Number(700.0)),
            (Opt::MaxWait, Raw::Number(300.0)),
        ]),
        vec![300.0; 2]
    );
}

#[test]
fn delays_above_the_timer_limit_are_clamped() {
    let d = delays_of(&[
        (Opt::MaxAttempts, Raw::Number(4.0)),
        (Opt::BaseWait, Raw::Number(1e12)),
    ]);
    assert_eq!(d, vec![MAX_TIMER_MS; 3]);
    let d = delays_of(&[
        (Opt::MaxAttempts, Raw::Number(40.0)),
        (Opt::BaseWait, Raw::Number(1.0)),
    ]);
    assert_eq!(d.len(), 39);
    assert_eq!(d[30], 2f64.powi(30));
    assert_eq!(d[31], MAX_TIMER_MS, "2^31 is clamped, never wrapped");
    assert!(d[31..].iter().all(|&x| x == MAX_TIMER_MS));
}

#[test]
fn proportional_jitter_is_seeded_and_within_bounds() {
    for seed in [0.0, 1.0, 42.0, -7.5, 1e9] {
        for (kind, j) in [("exponential", 0.5), ("linear", 0.25), ("fixed", 1.0)] {
            let opts = [
                (Opt::MaxAttempts, Raw::Number(30.0)),
                (Opt::Backoff, Raw::Str(kind)),
                (Opt::BaseWait, Raw::Number(300.0)),
                (Opt::MaxWait, Raw::Number(5000.0)),
                (Opt::Jitter, Raw::Number(j)),
                (Opt::Seed, Raw::Number(seed)),
            ];
            let got = delays_of(&opts);
            let b = match kind {
                "exponential" => Backoff::Exponential,
                "linear" => Backoff::Linear,
                _ => Backoff::Fixed,
            };
            let mut rng = Rng::from_f64(seed);
            let mut above_cap = false;
            for (i, &d) in got.iter().enumerate() {
                let n = i as u32 + 1;
                let c = backoff::nominal(b, n, 300.0, 2.0).min(5000.0);
                let lo = (c + (-c * j).floor()).max(0.0);
                let hi = c + (c * j).floor();
                assert!(d >= lo && d <= hi, "{kind} n={n} d={d} not in [{lo}, {hi}]");
                assert_eq!(d, d.floor(), "whole milliseconds");
                // Exactly what the seeded generator gives.
                let want = backoff::jitter(c, Jitter::Proportional(j), rng.unit());
                assert_eq!(d, want, "{kind} seed {seed} n={n}");
                above_cap |= d > 5000.0;
            }
            if kind == "exponential" && j == 0.5 {
                assert!(
                    above_cap,
                    "jitter may exceed maxWait slightly (seed {seed})"
                );
            }
        }
    }
}

// ----- rule 14: re-entrant inputs -----

#[test]
fn abort_from_on_error_drops_the_rest_of_the_retry() {
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.pop(), Some(SC));
    assert_eq!(h.pop(), Some(call(g, Cb::Error)));
    // onError calls abort() while onRetry, onSettled and the wait are queued.
    h.abort();
    assert_eq!(
        h.drain(),
        vec![
            abort_att(g, 1, AbortReason::Manual),
            SC,
            on_abort(g, AbortReason::Manual),
            fin(g, Outcome::Undefined),
        ]
    );
    assert!(!h.state().is_executing);
    h.assert_quiet();
    assert!(h.advance(100_000.0).is_empty());
    assert_versions_announced(&h);
}

#[test]
fn abort_from_on_retry_and_on_settled_stops_before_the_wait() {
    for cb in [Cb::Retry, Cb::Settled] {
        let mut h = Host::new(policy_all_cbs(&[]));
        let g = h.execute();
        h.drain();
        h.on(cb, |h| h.abort());
        h.err(g, 1);
        let out = h.drain();
        assert!(waits(&out).is_empty(), "{cb:?}: {out:?}");
        assert_eq!(out.last(), Some(&fin(g, Outcome::Undefined)));
        assert_eq!(
            cbs(&out).last(),
            Some(&(Cb::Abort, AbortReason::Manual as u32))
        );
        h.assert_quiet();
    }
}

#[test]
fn execute_from_on_retry_starts_a_new_flow() {
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    let g = h.execute();
    h.drain();
    h.on(Cb::Retry, |h| {
        h.execute();
    });
    h.err(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            SC,
            call(g, Cb::Error),
            retry(g, 1),
            abort_att(g, 1, AbortReason::NewExecution),
            SC,
            on_abort(g, AbortReason::NewExecution),
            fin(g, Outcome::Undefined),
            SC,
            inv(2, 1),
        ]
    );
    assert!(h.wheel.is_empty());
    assert!(!h.state().has_last_error);
    assert_eq!(h.state().current_attempt, 1);
    assert_versions_announced(&h);
}

#[test]
fn execute_from_on_error_of_the_last_failure_keeps_the_new_flow_executing() {
    for cb in [Cb::Error, Cb::LastError, Cb::GiveUp, Cb::Settled] {
        let mut h = Host::new(policy_all_cbs(&[(Opt::MaxAttempts, Raw::Number(1.0))]));
        let g = h.execute();
        h.drain();
        h.on(cb, |h| {
            h.execute();
        });
        h.err(g, 1);
        let out = h.drain();
        assert_eq!(h.finished.get(&g), Some(&Outcome::Undefined), "{cb:?}");
        assert!(out.contains(&inv(2, 1)), "{cb:?}");
        let s = h.state();
        assert!(s.is_executing, "{cb:?}: the new flow is executing");
        assert!(h.m.is_active());
        assert_eq!(h.status(), Status::Executing);
        h.ok(2, 1);
        h.drain();
        assert!(!h.state().is_executing);
        h.assert_quiet();
    }
}

#[test]
fn abort_from_callbacks_of_a_decided_flow_does_nothing() {
    // onSuccess, onLastError, onSettled of a success: the flow is settled.
    for cb in [Cb::Success, Cb::Settled] {
        let mut h = Host::new(policy_all_cbs(&[]));
        let g = h.execute();
        h.drain();
        h.on(cb, |h| h.abort());
        h.ok(g, 1);
        let out = h.drain();
        assert_eq!(out.last(), Some(&fin(g, Outcome::Result)));
        assert!(!cbs(&out).iter().any(|(c, _)| *c == Cb::Abort));
    }
    for cb in [Cb::Error, Cb::LastError, Cb::GiveUp, Cb::Settled] {
        let mut h = Host::new(policy_all_cbs(&[(Opt::MaxAttempts, Raw::Number(1.0))]));
        let g = h.execute();
        h.drain();
        h.on(cb, |h| h.abort());
        h.err(g, 1);
        let out = h.drain();
        assert_eq!(out.last(), Some(&fin(g, Outcome::Undefined)), "{cb:?}");
        assert!(!cbs(&out).iter().any(|(c, _)| *c == Cb::Abort));
        assert!(!h.state().is_executing);
        h.assert_quiet();
    }
}

#[test]
fn callbacks_that_throw_end_the_flow_or_reject_its_promise() {
    // onRetry throws while the flow is still going: it ends at once.
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    let g = h.execute();
    h.drain();
    h.on(Cb::Retry, move |h| h.threw(g));
    h.err(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            SC,
            call(g, Cb::Error),
            retry(g, 1),
            SC,
            fin(g, Outcome::Thrown)
        ]
    );
    assert!(!h.state().is_executing);
    h.assert_quiet();

    // onSuccess throws: the settled flow rejects with what was thrown.
    let mut h = Host::new(policy_all_cbs(&[]));
    let g = h.execute();
    h.drain();
    h.on(Cb::Success, move |h| h.threw(g));
    h.ok(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Success),
            call(g, Cb::Settled),
            fin(g, Outcome::Thrown)
        ]
    );
    h.assert_quiet();

    // onAbort('new-execution') throws: the old flow rejects, the new goes on.
    let mut h = Host::new(policy_all_cbs(&[]));
    let g1 = h.execute();
    h.drain();
    h.on(Cb::Abort, move |h| h.threw(g1));
    let g2 = h.execute();
    h.drain();
    assert_eq!(h.finished.get(&g1), Some(&Outcome::Thrown));
    assert!(h.m.is_active());
    h.ok(g2, 1);
    h.drain();
    assert_eq!(h.finished.get(&g2), Some(&Outcome::Result));

    // A function (attempt) that is running when a listener throws is
    // aborted.
    let mut h = Host::new(policy(&[(Opt::MaxExecutionTime, Raw::Number(100.0))]));
    let g = h.execute();
    h.drain();
    h.threw(g);
    let out = h.drain();
    assert_eq!(
        out,
        vec![
            abort_att(g, 1, AbortReason::Manual),
            clear(Timer::Attempt),
            fin(g, Outcome::Thrown)
        ]
    );
    h.assert_quiet();
}

#[test]
fn reset_and_set_policy_from_callbacks() {
    let mut h = Host::new(policy_all_cbs(&[])).subscribed();
    let g = h.execute();
    h.drain();
    h.on(Cb::Error, |h| h.reset());
    h.on(Cb::Retry, |h| {
        h.set_policy(policy_all_cbs(&[(Opt::MaxAttempts, Raw::Number(2.0))]))
    });
    h.err(g, 1);
    let out = h.drain();
    assert_eq!(waits(&out), vec![1000.0]);
    assert_eq!(h.state().current_attempt, 2);
    assert!(h.m.is_active(), "reset does not stop the flow");
    h.advance(1000.0);
    assert!(h.state().is_executing);
    h.err(g, 2);
    h.drain();
    assert_eq!(h.finished.get(&g), Some(&Outcome::Undefined));
    h.assert_quiet();
    assert_versions_announced(&h);
}

#[test]
fn abort_during_an_execution_timeout_with_retries_on() {
    let mut h = Host::new(policy_all_cbs(&[
        (Opt::MaxExecutionTime, Raw::Number(50.0)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
    ]));
    let g = h.execute();
    h.drain();
    h.on(Cb::ExecutionTimeout, |h| h.abort());
    let out = h.advance(50.0);
    assert_eq!(
        out,
        vec![
            call(g, Cb::ExecutionTimeout),
            abort_att(g, 1, AbortReason::Manual),
            on_abort(g, AbortReason::Manual),
            fin(g, Outcome::Undefined),
        ]
    );
    h.assert_quiet();
}

#[test]
fn execute_with_aborted_signal_from_on_error_of_last_failure_leaves_no_executing_state() {
    // SPEC §1 State: `isExecuting` means "a flow is active". Regression
    // (fixed in 9b43000): maxAttempts 1, onError set; execute;
    // attempt_err(1, 1); pop Call Error; execute(outside_aborted = true);
    // drain. The old flow's queued Finalize step was skipped (last_started
    // had moved on) and the new flow never started, so nothing cleared
    // is_executing.
    let mut h = Host::new(policy(&[
        (Opt::MaxAttempts, Raw::Number(1.0)),
        (Opt::OnError, Raw::Function),
        (Opt::Signal, Raw::Signal),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.pop(), Some(Effect::Unlisten { gen: g }));
    assert_eq!(h.pop(), Some(call(g, Cb::Error)));
    let g2 = h.execute_aborted();
    h.drain();
    assert!(h.finished.contains_key(&g) && h.finished.contains_key(&g2));
    h.assert_quiet();
    assert!(!h.state().is_executing, "no flow is active");
    assert_eq!(h.status(), Status::Idle);
}

// ----- stale inputs -----

#[test]
fn stale_settlements_answers_and_timers_are_no_ops() {
    let mut h = Host::new(policy(&[
        (Opt::MaxAttempts, Raw::Function),
        (Opt::MaxExecutionTime, Raw::Number(5000.0)),
        (Opt::MaxTotalExecutionTime, Raw::Number(50_000.0)),
    ]))
    .subscribed();
    let g1 = h.execute();
    h.drain();
    h.abort();
    h.drain();
    let g2 = h.execute();
    h.drain();
    h.err(g2, 1);
    assert_eq!(
        h.drain(),
        vec![clear(Timer::Attempt), SC, eval(g2, Eval::MaxAttempts, 1)]
    );
    let snapshot = (h.state().clone(), h.wheel.clone());
    // Old generation, wrong attempt, future attempt.
    h.ok(g1, 1);
    h.err(g1, 1);
    h.abort_error(g1, 1);
    h.ok(g2, 1); // already failed
    h.ok(g2, 2);
    h.err(g2, 7);
    h.ok(g2 + 5, 1);
    // An answer for the old flow.
    h.provide(g1, Provided::Number(9.0));
    // Timers that are not running.
    h.fire(Timer::Wait);
    h.fire(Timer::Attempt);
    assert!(!h.m.has_effects(), "stale inputs queued effects");
    assert_eq!((h.state().clone(), h.wheel.clone()), snapshot);
    // The real answer still works.
    h.provide(g2, Provided::Number(3.0));
    assert_eq!(h.drain(), vec![SC, wait(g2, 1000.0)]);
    // Settling the old attempt during the wait is still ignored.
    h.ok(g2, 1);
    assert!(!h.m.has_effects());
    // A second answer to an Eval that was already answered is ignored.
    h.provide(g2, Provided::Number(1.0));
    assert!(!h.m.has_effects());
    h.advance(1000.0);
    h.ok(g2, 2);
    h.drain();
    h.assert_quiet();
    // After the flow: nothing reacts.
    let v = h.version();
    for t in TIMERS {
        h.fire(t);
    }
    h.ok(g2, 2);
    h.provide(g2, Provided::Bool(true));
    h.threw(g1);
    assert!(!h.m.has_effects());
    assert_eq!(h.version(), v);
    assert_versions_announced(&h);
}

#[test]
fn a_timer_reported_again_after_it_fired_is_ignored() {
    // A duplicate or late report of a timer that already fired (or was
    // cleared) must not touch the flow that runs now.
    let mut h = Host::new(policy(&[
        (Opt::MaxTotalExecutionTime, Raw::Number(5000.0)),
        (Opt::MaxExecutionTime, Raw::Number(400.0)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
    ]));
    let g1 = h.execute();
    h.drain();
    h.ok(g1, 1);
    h.drain();
    let g2 = h.execute();
    h.drain();
    h.err(g2, 1);
    h.drain();
    h.advance(1000.0);
    assert_eq!(h.current(), (g2, 2));
    let v = h.version();
    h.fire(Timer::Wait);
    assert!(!h.m.has_effects());
    assert_eq!(h.version(), v);
    // Attempt 2 times out; the wait for attempt 3 runs; a second report of
    // the attempt deadline is ignored.
    h.advance(400.0);
    assert!(h.version() > v);
    let v = h.version();
    h.fire(Timer::Attempt);
    assert!(!h.m.has_effects());
    assert_eq!(h.version(), v);
    h.advance(2000.0);
    assert_eq!(h.current(), (g2, 3));
    h.ok(g2, 3);
    h.drain();
    h.assert_quiet();
    // After the flow, no kind of timer reacts.
    for t in TIMERS {
        h.fire(t);
    }
    assert!(!h.m.has_effects());
}

#[test]
fn old_total_timer_firing_before_its_clear_is_popped_does_not_end_the_new_flow() {
    // Timers carry no generation. Regression (fixed in 9b43000, where the
    // armed flags learnt their flow): maxTotalExecutionTime 1000; execute
    // (gen 1) and drain; at t=999 call abort() and execute() (gen 2)
    // without draining (e.g. from inside the function, synchronously); the
    // host's gen-1 Total timer fires before ClearTimer(Total) is popped.
    // Gen 2 was ended by a total timeout 0 ms into its own 1000 ms
    // deadline. SPEC §1 rule 12, and the README's architecture notes: a late
    // timer of an older flow is a no-op.
    let mut h = Host::new(policy(&[(Opt::MaxTotalExecutionTime, Raw::Number(1000.0))]));
    let g1 = h.execute();
    h.drain();
    h.now = 999.0;
    h.abort();
    let g2 = h.execute();
    // The old timer is still on the wheel and due: it fires now.
    let fired = h.fire_next_raw(1.0).expect("old total timer");
    assert_eq!(fired.gen, g1);
    h.drain();
    assert_eq!(h.finished.get(&g1), Some(&Outcome::Undefined));
    assert!(
        !h.finished.contains_key(&g2),
        "gen 2 was ended by gen 1's total timer"
    );
    assert!(h.m.is_active());
}
