//! Hedged attempts (SPEC §2c), rule by rule, with the fake clock: the
//! exact effects a hedged flow queues, which attempt wins, which ones are
//! cancelled, which callbacks run and in what order, and that nothing of a
//! flow outlives it.

mod common;

use common::*;

fn on_hedge(gen: u32, attempt: u32, running: u32, elapsed: f64) -> Effect {
    Effect::Hedge {
        gen,
        attempt,
        running,
        elapsed,
    }
}

/// Every lifecycle callback (but `onBackoff`), `onHedge`, `hedge: ms` and
/// `maxAttempts: max`, plus `opts`.
fn hedged(ms: f64, max: f64, opts: &[(Opt, Raw<'_>)]) -> Policy {
    let mut all = vec![
        (Opt::Hedge, Raw::Number(ms)),
        (Opt::MaxAttempts, Raw::Number(max)),
    ];
    all.extend_from_slice(opts);
    policy_all_cbs(&all)
}

/// The attempts of `gen` invoked so far.
fn invoked(h: &Host, gen: u32) -> Vec<u32> {
    h.invoked
        .iter()
        .filter(|(g, _)| *g == gen)
        .map(|&(_, a)| a)
        .collect()
}

fn running(h: &Host, gen: u32) -> Vec<u32> {
    (1..=8).filter(|&a| h.m.is_running(gen, a)).collect()
}

// ----- rules 1 and 2: hedge times, maxAttempts, the first success wins -----

#[test]
fn attempts_start_at_their_hedge_times_until_max_attempts_have_started() {
    let mut h = Host::new(hedged(50.0, 3.0, &[]));
    let g = h.execute();
    // The timer goes first: a host settles an attempt only after its
    // Invoke, so none is left queued behind a flow that ended.
    assert_eq!(h.drain(), vec![wait(g, 50.0), inv(g, 1)]);
    assert!(h.advance(49.0).is_empty());
    assert_eq!(
        h.advance(1.0),
        vec![on_hedge(g, 2, 1, 50.0), wait(g, 50.0), inv(g, 2)]
    );
    assert_eq!(h.state().current_attempt, 2);
    assert_eq!(h.status(), Status::Retrying);
    // The third is the last: no wait follows it.
    assert_eq!(h.advance(50.0), vec![on_hedge(g, 3, 2, 100.0), inv(g, 3)]);
    assert!(h.advance(10_000.0).is_empty());
    assert_eq!(running(&h, g), vec![1, 2, 3]);

    // Attempt 2 answers first: it wins, the others are cancelled and run no
    // callback; onSuccess and onSettled once.
    h.now = 10_200.0;
    h.ok(g, 2);
    assert_eq!(
        h.drain(),
        vec![
            cancel(g, 1),
            cancel(g, 3),
            call(g, Cb::Success),
            call(g, Cb::Settled),
            fin(g, Outcome::Result),
        ]
    );
    let s = h.state().clone();
    assert_eq!((s.current_attempt, s.is_executing), (0, false));
    assert_eq!(s.total_execution_time, 10_200.0);
    assert_eq!(s.execution_count, 1.0);
    // What the losers do later is ignored.
    let v = h.version();
    h.ok(g, 1);
    h.err(g, 3);
    h.abort_error(g, 3);
    assert!(!h.m.has_effects());
    assert_eq!(h.version(), v);
    h.assert_quiet();
}

#[test]
fn a_hedge_of_zero_starts_every_attempt_at_once() {
    let mut h = Host::new(hedged(0.0, 3.0, &[]));
    let g = h.execute();
    assert_eq!(
        h.drain(),
        vec![
            inv(g, 1),
            on_hedge(g, 2, 1, 0.0),
            inv(g, 2),
            on_hedge(g, 3, 2, 0.0),
            inv(g, 3),
        ]
    );
    assert!(h.wheel.is_empty(), "no timer for a hedge of 0");
    h.ok(g, 3);
    assert_eq!(
        quiet(&h.drain())[..2],
        [cancel(g, 1), cancel(g, 2)],
        "the others lose"
    );
    h.assert_quiet();
}

#[test]
fn each_attempt_runs_its_synchronous_part_before_the_next_starts() {
    // With a hedge of 0, attempt n+1 is started by a step the machine takes
    // after Invoke n was popped (and carried out): while attempt n's
    // function runs, attempt n is the newest (SPEC §2c rule 7).
    let mut h = Host::new(policy(&[
        (Opt::Hedge, Raw::Number(0.0)),
        (Opt::MaxAttempts, Raw::Number(3.0)),
    ]));
    let g = h.execute();
    for n in 1..=3 {
        assert_eq!(h.pop(), Some(inv(g, n)));
        assert_eq!(h.state().current_attempt, n);
    }
    assert_eq!(h.pop(), None);
}

#[test]
fn an_infinite_hedge_starts_attempts_only_after_failures() {
    let mut h = Host::new(hedged(f64::INFINITY, 2.0, &[]));
    let g = h.execute();
    assert_eq!(h.drain(), vec![inv(g, 1)]);
    assert!(h.advance(1e9).is_empty());
    h.err(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            inv(g, 2),
        ]
    );
}

#[test]
fn a_dynamic_max_attempts_must_be_finite() {
    let mut h = Host::new(policy(&[
        (Opt::Hedge, Raw::Number(50.0)),
        (Opt::MaxAttempts, Raw::Function),
        (Opt::MaxTotalExecutionTime, Raw::Number(10_000.0)),
    ]));
    let g = h.execute();
    assert_eq!(
        h.drain(),
        vec![
            start(g, Timer::Total, 10_000.0),
            inv(g, 1),
            eval(g, Eval::MaxAttempts, 1)
        ]
    );
    // Infinity is refused with hedge (allowed without, with a total
    // deadline): the flow ends with a RangeError, its attempt aborted.
    h.provide(g, Provided::Number(f64::INFINITY));
    assert_eq!(
        h.drain(),
        vec![
            abort_att(g, 1, AbortReason::Manual),
            clear(Timer::Total),
            fin(g, Outcome::Invalid(Opt::MaxAttempts)),
        ]
    );
    h.assert_quiet();
}

#[test]
fn a_dynamic_max_attempts_is_read_after_each_start() {
    let mut h = Host::new(policy(&[
        (Opt::Hedge, Raw::Number(50.0)),
        (Opt::MaxAttempts, Raw::Function),
    ]));
    let g = h.execute();
    assert_eq!(h.drain(), vec![inv(g, 1), eval(g, Eval::MaxAttempts, 1)]);
    h.provide(g, Provided::Number(2.0));
    assert_eq!(h.drain(), vec![wait(g, 50.0)]);
    assert_eq!(
        h.advance(50.0),
        vec![inv(g, 2), eval(g, Eval::MaxAttempts, 2)]
    );
    h.provide(g, Provided::Number(2.0));
    assert!(h.drain().is_empty(), "two have started: no third");
    assert!(h.advance(1000.0).is_empty());
}

// ----- a dynamic hedge -----

#[test]
fn a_dynamic_hedge_is_asked_after_each_start() {
    let mut h = Host::new(policy(&[
        (Opt::Hedge, Raw::Function),
        (Opt::MaxAttempts, Raw::Number(3.0)),
    ]));
    let g = h.execute();
    assert_eq!(h.drain(), vec![inv(g, 1), eval(g, Eval::Hedge, 1)]);
    // Measured from the start of the attempt, not from the answer.
    h.now = 5.0;
    h.provide(g, Provided::Number(30.0));
    assert_eq!(h.drain(), vec![wait(g, 25.0)]);
    assert_eq!(h.advance(25.0), vec![inv(g, 2), eval(g, Eval::Hedge, 2)]);
    // Infinity: no timed start after attempt 2.
    h.provide(g, Provided::Number(f64::INFINITY));
    assert!(h.drain().is_empty());
    assert!(h.advance(1e9).is_empty());
    assert_eq!(invoked(&h, g), vec![1, 2]);
    // An answer that came too late starts the next one at once.
    let mut h = Host::new(policy(&[
        (Opt::Hedge, Raw::Function),
        (Opt::MaxAttempts, Raw::Number(2.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.now = 80.0;
    h.provide(g, Provided::Number(30.0));
    assert_eq!(h.drain(), vec![inv(g, 2)]);
    assert_eq!(running(&h, g), vec![1, 2]);
}

#[test]
fn an_invalid_or_throwing_hedge_ends_the_flow_and_its_attempts() {
    for (answer, outcome) in [
        (Provided::Number(-1.0), Outcome::Invalid(Opt::Hedge)),
        (Provided::Number(f64::NAN), Outcome::Invalid(Opt::Hedge)),
        (Provided::Nothing, Outcome::Invalid(Opt::Hedge)),
        (Provided::Other, Outcome::Invalid(Opt::Hedge)),
        (Provided::Threw, Outcome::Thrown),
    ] {
        let mut h = Host::new(policy(&[
            (Opt::Hedge, Raw::Function),
            (Opt::MaxAttempts, Raw::Number(3.0)),
        ]));
        let g = h.execute();
        h.drain();
        h.provide(g, Provided::Number(0.0));
        assert_eq!(h.drain(), vec![inv(g, 2), eval(g, Eval::Hedge, 2)]);
        h.provide(g, answer);
        assert_eq!(
            h.drain(),
            vec![
                abort_att(g, 1, AbortReason::Manual),
                abort_att(g, 2, AbortReason::Manual),
                fin(g, outcome),
            ],
            "{answer:?}"
        );
        h.assert_quiet();
    }
}

// ----- rule 3: a failure shouldRetry refuses ends everything -----

#[test]
fn a_failure_should_retry_refuses_ends_the_flow_and_cancels_the_others() {
    let mut h = Host::new(hedged(50.0, 3.0, &[(Opt::ShouldRetry, Raw::Function)]));
    let g = h.execute();
    h.drain();
    h.advance(50.0);
    h.now = 70.0;
    h.err(g, 2);
    assert_eq!(h.drain(), vec![eval(g, Eval::ShouldRetry, 2)]);
    h.provide(g, Provided::Bool(false));
    assert_eq!(
        h.drain(),
        vec![
            clear(Timer::Wait),
            cancel(g, 1),
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::NotRetryable),
            call(g, Cb::Settled),
            fin(g, Outcome::Undefined),
        ]
    );
    h.assert_quiet();
    assert_eq!(h.state().current_attempt, 2);
    assert!(h.state().has_last_error);
}

// ----- rule 4: other failures start the next attempt at once -----

#[test]
fn a_failure_starts_the_next_attempt_at_once_and_its_own_hedge_time_follows() {
    let mut h = Host::new(hedged(100.0, 3.0, &[(Opt::OnBackoff, Raw::Function)]));
    let g = h.execute();
    assert_eq!(h.drain(), vec![wait(g, 100.0), inv(g, 1)]);
    h.now = 10.0;
    h.err(g, 1);
    // No earlier attempt runs: a plain retry, no onHedge.
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            Effect::Backoff {
                gen: g,
                attempt: 1,
                delay: 0.0,
                elapsed: 10.0
            },
            inv(g, 2),
        ]
    );
    // Attempt 3 starts at 110 (attempt 2's hedge time), not 100: the
    // timer armed for 100 finds nothing due and waits on.
    assert_eq!(h.advance(90.0), vec![wait(g, 10.0)]);
    assert!(h.advance(9.0).is_empty());
    assert_eq!(h.advance(1.0), vec![on_hedge(g, 3, 1, 110.0), inv(g, 3)]);
}

#[test]
fn a_failure_while_others_run_starts_the_next_with_on_hedge() {
    let mut h = Host::new(hedged(50.0, 4.0, &[]));
    let g = h.execute();
    h.drain();
    h.advance(50.0);
    h.now = 60.0;
    h.err(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            on_hedge(g, 3, 1, 60.0),
            inv(g, 3),
        ]
    );
    assert_eq!(running(&h, g), vec![2, 3]);
    // Attempt 4 at attempt 3's hedge time (110), not at 100.
    assert_eq!(h.advance(40.0), vec![wait(g, 10.0)]);
    assert_eq!(h.advance(10.0), vec![on_hedge(g, 4, 2, 110.0), inv(g, 4)]);
}

#[test]
fn with_no_attempt_left_the_flow_waits_and_fails_with_the_last_failure() {
    let mut h = Host::new(hedged(50.0, 3.0, &[(Opt::ThrowOnError, Raw::Bool(true))]));
    let g = h.execute();
    h.drain();
    h.advance(100.0);
    assert_eq!(invoked(&h, g), vec![1, 2, 3]);
    // Not the last: onError and onSettled, no onRetry, nothing starts.
    h.err(g, 3);
    assert_eq!(h.drain(), vec![call(g, Cb::Error), call(g, Cb::Settled)]);
    h.err(g, 1);
    assert_eq!(h.drain(), vec![call(g, Cb::Error), call(g, Cb::Settled)]);
    assert!(h.m.is_active());
    assert!(h.state().is_executing);
    // The last of them fails: the flow fails with that failure.
    h.err(g, 2);
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::AttemptsExhausted),
            call(g, Cb::Settled),
            fin(g, Outcome::Reject),
        ]
    );
    assert_eq!(h.state().current_attempt, 3);
    h.assert_quiet();
}

#[test]
fn a_retry_after_hint_holds_the_next_attempt_until_it_ends() {
    let mut h = Host::new(hedged(100.0, 4.0, &[(Opt::RetryAfter, Raw::Function)]));
    let g = h.execute();
    h.drain();
    h.advance(100.0); // attempt 2 at 100; attempt 3's hedge time is 200
    h.now = 120.0;
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::RetryAfter, 1)]);
    h.provide(g, Provided::Number(300.0));
    assert_eq!(
        h.drain(),
        vec![call(g, Cb::Error), retry(g, 1), call(g, Cb::Settled)]
    );
    // Neither at the hedge time (200), where the timer finds the start
    // moved to 420...
    assert_eq!(h.advance(80.0), vec![wait(g, 220.0)]);
    assert!(h.advance(219.0).is_empty());
    // ...nor earlier when another attempt fails without a hint.
    h.err(g, 2);
    h.drain();
    h.provide(g, Provided::Nothing);
    let out = h.drain();
    assert_eq!(
        cbs(&out),
        vec![(Cb::Error, 0), (Cb::Retry, 2), (Cb::Settled, 0)]
    );
    assert!(!out.iter().any(|e| matches!(e, Effect::Invoke { .. })));
    // When the hint ends: attempt 3, then its own hedge time.
    assert_eq!(h.advance(1.0), vec![wait(g, 100.0), inv(g, 3)]);
    assert_eq!(h.now, 420.0);
    assert_eq!(h.advance(100.0), vec![on_hedge(g, 4, 1, 520.0), inv(g, 4)]);
}

#[test]
fn a_later_hint_can_only_push_the_next_start_back() {
    let mut h = Host::new(hedged(1000.0, 4.0, &[(Opt::RetryAfter, Raw::Function)]));
    let g = h.execute();
    h.drain();
    h.now = 1000.0;
    h.advance(0.0); // attempt 2 at 1000
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(500.0)); // until 1500
                                           // Earlier than the hedge time the Wait was armed for (2000).
    assert_eq!(&h.drain()[3..], &[clear(Timer::Wait), wait(g, 500.0)]);
    h.now = 1100.0;
    h.err(g, 2);
    h.drain();
    h.provide(g, Provided::Number(100.0)); // shorter: still 1500
    assert!(waits(&h.drain()).is_empty());
    assert!(h.advance(399.0).is_empty());
    assert_eq!(h.advance(1.0), vec![wait(g, 1000.0), inv(g, 3)]);
}

#[test]
fn a_hint_past_the_total_deadline() {
    // Nothing else runs: the total timeout happens at once.
    let mut h = Host::new(hedged(
        100.0,
        3.0,
        &[
            (Opt::RetryAfter, Raw::Function),
            (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
        ],
    ));
    let g = h.execute();
    h.drain();
    h.now = 10.0;
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(5000.0));
    let out = h.drain();
    assert_eq!(
        &out[3..],
        &[
            call(g, Cb::TotalExecutionTimeout),
            abort_att(g, 1, AbortReason::TotalTimeout),
            clear(Timer::Wait),
            clear(Timer::Total),
            on_abort(g, AbortReason::TotalTimeout),
            fin(g, Outcome::Undefined),
        ]
    );
    assert_eq!(h.now, 10.0);
    h.assert_quiet();

    // Others run: no further attempt starts; they go on until the deadline.
    let mut h = Host::new(hedged(
        100.0,
        3.0,
        &[
            (Opt::RetryAfter, Raw::Function),
            (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
        ],
    ));
    let g = h.execute();
    h.drain();
    h.advance(100.0);
    h.err(g, 1);
    h.drain();
    h.provide(g, Provided::Number(5000.0));
    let out = h.drain();
    assert!(!out.iter().any(|e| matches!(e, Effect::Invoke { .. })));
    // The hedge time finds nothing due.
    assert!(h.advance(100.0).is_empty());
    let out = h.advance(800.0);
    assert_eq!(
        out[..2],
        [
            call(g, Cb::TotalExecutionTimeout),
            abort_att(g, 2, AbortReason::TotalTimeout)
        ]
    );
    assert_eq!(invoked(&h, g), vec![1, 2]);
    h.assert_quiet();
}

// ----- rule 5: the budget -----

#[test]
fn each_attempt_after_the_first_asks_the_budget() {
    // 4 tokens, two spent elsewhere: no more than half left, no hedge.
    let mut h = Host::new(hedged(50.0, 3.0, &[(Opt::Budget, Raw::Budget(0))]));
    h.budgets.borrow_mut().push(Budget::new(4.0, 0.5).unwrap());
    h.budgets.borrow_mut()[0].record_failure();
    h.budgets.borrow_mut()[0].record_failure();
    let g = h.execute();
    h.drain();
    assert!(h.advance(50.0).is_empty(), "the budget refused attempt 2");
    assert!(h.advance(1000.0).is_empty());
    // Attempt 1 goes on; when it fails, the flow gives up for the budget.
    h.err(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::BudgetExhausted),
            call(g, Cb::Settled),
            fin(g, Outcome::Undefined),
        ]
    );
    assert_eq!(h.budgets.borrow()[0].tokens(), 1.0, "the failure cost one");
    h.assert_quiet();
}

#[test]
fn a_budget_that_refuses_after_a_failure_stops_all_further_starts() {
    let mut h = Host::new(hedged(50.0, 4.0, &[(Opt::Budget, Raw::Budget(0))]));
    h.budgets.borrow_mut().push(Budget::new(2.0, 0.5).unwrap());
    let g = h.execute();
    h.drain();
    h.advance(50.0); // 2 tokens > 1: attempt 2 starts
    assert_eq!(invoked(&h, g), vec![1, 2]);
    h.now = 60.0;
    h.err(g, 1); // 1 token left: no retry, and no hedge either
    assert_eq!(h.drain(), vec![call(g, Cb::Error), call(g, Cb::Settled)]);
    // A success elsewhere refunds the budget, but the refusal holds.
    h.budgets.borrow_mut()[0].record_success();
    h.budgets.borrow_mut()[0].record_success();
    assert!(h.advance(1000.0).is_empty());
    h.ok(g, 2);
    let out = h.drain();
    assert_eq!(*out.last().unwrap(), fin(g, Outcome::Result));
    assert_eq!(invoked(&h, g), vec![1, 2]);
    h.assert_quiet();
}

// ----- rule 6: deadlines -----

#[test]
fn a_timed_out_attempt_is_a_failure_and_the_flow_goes_on() {
    let mut h = Host::new(hedged(
        50.0,
        3.0,
        &[(Opt::MaxExecutionTime, Raw::Number(120.0))],
    ));
    let g = h.execute();
    assert_eq!(
        h.drain(),
        vec![start(g, Timer::Attempt, 120.0), wait(g, 50.0), inv(g, 1)]
    );
    h.advance(100.0);
    assert_eq!(invoked(&h, g), vec![1, 2, 3]);
    // Attempt 1's deadline: its signal aborts with a TimeoutError, and the
    // Attempt timer is armed for attempt 2's.
    assert_eq!(
        h.advance(20.0),
        vec![
            start(g, Timer::Attempt, 50.0),
            call(g, Cb::ExecutionTimeout),
            time_out(g, 1),
            call(g, Cb::Error),
            call(g, Cb::Settled),
        ]
    );
    assert!(!cbs(&h.log).iter().any(|(cb, _)| *cb == Cb::Abort));
    assert_eq!(running(&h, g), vec![2, 3]);
    // Attempt 2 fails in time: the timer armed for its deadline finds
    // nothing due, and waits on for attempt 3's.
    h.now = 160.0;
    h.err(g, 2);
    assert_eq!(h.drain(), vec![call(g, Cb::Error), call(g, Cb::Settled)]);
    assert_eq!(h.advance(10.0), vec![start(g, Timer::Attempt, 50.0)]);
    // Attempt 3 times out too: the last one, the flow fails.
    let out = h.advance(50.0);
    assert_eq!(
        out,
        vec![
            call(g, Cb::ExecutionTimeout),
            time_out(g, 3),
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::AttemptsExhausted),
            call(g, Cb::Settled),
            fin(g, Outcome::Undefined),
        ]
    );
    // The timed-out attempt's late success is ignored.
    h.ok(g, 3);
    assert!(h.drain().is_empty());
    h.assert_quiet();
}

#[test]
fn attempts_sharing_a_deadline_time_out_one_after_the_other() {
    let mut h = Host::new(hedged(
        0.0,
        2.0,
        &[
            (Opt::MaxExecutionTime, Raw::Number(100.0)),
            (Opt::ThrowOnError, Raw::Bool(true)),
        ],
    ));
    let g = h.execute();
    h.drain();
    assert_eq!(running(&h, g), vec![1, 2]);
    assert_eq!(
        h.advance(100.0),
        vec![
            call(g, Cb::ExecutionTimeout),
            time_out(g, 1),
            call(g, Cb::Error),
            call(g, Cb::Settled),
            call(g, Cb::ExecutionTimeout),
            time_out(g, 2),
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::AttemptsExhausted),
            call(g, Cb::Settled),
            fin(g, Outcome::Reject),
        ]
    );
    h.assert_quiet();
}

#[test]
fn the_total_deadline_aborts_every_running_attempt() {
    let mut h = Host::new(hedged(
        50.0,
        3.0,
        &[(Opt::MaxTotalExecutionTime, Raw::Number(130.0))],
    ));
    let g = h.execute();
    h.drain();
    h.advance(100.0);
    assert_eq!(
        h.advance(30.0),
        vec![
            call(g, Cb::TotalExecutionTimeout),
            abort_att(g, 1, AbortReason::TotalTimeout),
            abort_att(g, 2, AbortReason::TotalTimeout),
            abort_att(g, 3, AbortReason::TotalTimeout),
            on_abort(g, AbortReason::TotalTimeout),
            fin(g, Outcome::Undefined),
        ]
    );
    h.assert_quiet();
    assert!(!h.state().is_executing);
}

#[test]
fn abort_a_new_execution_and_the_signal_abort_every_running_attempt() {
    for how in 0..3 {
        let mut h = Host::new(hedged(50.0, 3.0, &[(Opt::Signal, Raw::Signal)]));
        let g = h.execute();
        h.drain();
        h.advance(50.0);
        let reason = match how {
            0 => {
                h.abort();
                AbortReason::Manual
            }
            1 => {
                h.execute();
                AbortReason::NewExecution
            }
            _ => {
                h.signal();
                AbortReason::Signal
            }
        };
        let out = h.drain();
        assert_eq!(
            out[..5],
            [
                abort_att(g, 1, reason),
                abort_att(g, 2, reason),
                clear(Timer::Wait),
                Effect::Unlisten { gen: g },
                on_abort(g, reason),
            ]
        );
        assert_eq!(h.finished.get(&g), Some(&Outcome::Undefined));
        // Nothing of the old flow acts on anything.
        h.ok(g, 1);
        h.err(g, 2);
        if how == 1 {
            assert!(h.m.is_active());
            h.abort();
            h.drain();
        }
        assert!(h.drain().is_empty());
        h.assert_quiet();
    }
}

// ----- rule 8: state -----

#[test]
fn the_state_shows_the_most_recently_started_attempt() {
    let mut h = Host::new(hedged(50.0, 3.0, &[])).subscribed();
    let g = h.execute();
    h.drain();
    assert_eq!(h.status(), Status::Executing);
    assert_eq!(h.state().current_attempt, 1);
    h.advance(50.0);
    assert_eq!(h.status(), Status::Retrying);
    assert_eq!(h.state().current_attempt, 2);
    // An earlier attempt failing changes neither.
    h.err(g, 1);
    h.drain();
    assert_eq!(h.state().current_attempt, 3);
    h.err(g, 3);
    h.drain();
    assert_eq!(h.state().current_attempt, 3);
    assert!(h.state().is_executing && h.state().has_last_error);
    h.ok(g, 2);
    h.drain();
    let s = h.state();
    assert_eq!((s.current_attempt, s.is_executing), (0, false));
    assert!(s.has_last_result);
    assert_eq!(h.version(), h.state_changes, "every change announced");
}

// ----- rule 9: nesting and cancellation -----

#[test]
fn a_flow_passing_through_never_hedges() {
    let mut h = Host::new(hedged(10.0, 3.0, &[(Opt::Nested, Raw::Str("passthrough"))]));
    let g = h.m.execute_within(0.0, false, Some(false), true);
    assert_eq!(h.drain(), vec![inv(g, 1)]);
    assert!(h.advance(1000.0).is_empty());
    h.err(g, 1);
    let out = h.drain();
    assert!(out.contains(&give_up(g, GiveUp::Nested)));
    h.assert_quiet();
    // Nor does a flow its host says may not hedge.
    let g = h.m.execute_within(h.now, false, None, false);
    assert_eq!(h.drain(), vec![inv(g, 1)]);
    assert!(h.advance(1000.0).is_empty());
}

#[test]
fn an_abort_error_the_flow_did_not_cause_cancels_the_flow_and_the_others() {
    let mut h = Host::new(hedged(50.0, 3.0, &[]));
    let g = h.execute();
    h.drain();
    h.advance(50.0);
    h.abort_error(g, 2);
    assert_eq!(
        h.drain(),
        vec![
            clear(Timer::Wait),
            cancel(g, 1),
            call(g, Cb::Settled),
            fin(g, Outcome::Undefined),
        ]
    );
    assert!(!h.state().is_executing);
    // The AbortError the cancelled attempt then rejects with is ignored.
    h.abort_error(g, 1);
    assert!(h.drain().is_empty());
    h.assert_quiet();
}

// ----- callbacks that re-enter or throw -----

#[test]
fn on_hedge_that_throws_ends_the_flow() {
    let mut h = Host::new(hedged(50.0, 3.0, &[]));
    let g = h.execute();
    h.drain();
    h.on(Cb::Hedge, move |h| h.threw(g));
    let out = h.advance(50.0);
    assert_eq!(
        out,
        vec![
            on_hedge(g, 2, 1, 50.0),
            abort_att(g, 1, AbortReason::Manual),
            abort_att(g, 2, AbortReason::Manual),
            fin(g, Outcome::Thrown),
        ]
    );
    assert_eq!(invoked(&h, g), vec![1], "attempt 2 is never called");
    h.assert_quiet();
}

#[test]
fn abort_from_on_hedge() {
    let mut h = Host::new(hedged(0.0, 3.0, &[]));
    h.on(Cb::Hedge, |h| h.abort());
    let g = h.execute();
    let out = h.drain();
    assert_eq!(
        out,
        vec![
            inv(g, 1),
            on_hedge(g, 2, 1, 0.0),
            abort_att(g, 1, AbortReason::Manual),
            abort_att(g, 2, AbortReason::Manual),
            on_abort(g, AbortReason::Manual),
            fin(g, Outcome::Undefined),
        ]
    );
    h.assert_quiet();
}

#[test]
fn set_options_without_hedge_stops_the_timed_starts() {
    let mut h = Host::new(hedged(50.0, 3.0, &[]));
    let g = h.execute();
    h.drain();
    h.set_policy(policy(&[(Opt::MaxAttempts, Raw::Number(3.0))]));
    assert!(
        h.advance(50.0).is_empty(),
        "the armed hedge time does nothing"
    );
    // A failure still starts the next attempt at once.
    h.err(g, 1);
    assert_eq!(h.drain(), vec![inv(g, 2)]);
    assert!(h.advance(1000.0).is_empty());
    h.ok(g, 2);
    h.drain();
    h.assert_quiet();
}

#[test]
fn a_flow_without_hedge_is_not_touched() {
    // The same policy without `hedge`: one attempt at a time, backoff
    // waits, AbortAttempt naming the one attempt.
    let mut h = Host::new(policy_all_cbs(&[(Opt::MaxAttempts, Raw::Number(3.0))]));
    let g = h.execute();
    assert_eq!(h.drain(), vec![inv(g, 1)]);
    h.err(g, 1);
    assert_eq!(waits(&h.drain()), vec![1000.0]);
    assert!(!h.m.is_running(g, 1));
    h.abort();
    assert_eq!(h.drain()[0], abort_att(g, 1, AbortReason::Manual));
}

// ----- rule 10: retryFetch hedges only reads -----

#[test]
fn a_fetch_hedges_only_reads_whose_body_replays_and_the_rest_retry_as_usual() {
    use retry_wasm::core::http::{Body, HttpPolicy, RequestKind};
    let http = HttpPolicy::default();
    let request = |method, body| RequestKind {
        method,
        idempotency_key: true,
        body,
    };
    // One function's policy: hedge 40 ms, 3 attempts, a 100 ms backoff.
    let p = hedged(
        40.0,
        3.0,
        &[
            (Opt::BaseWait, Raw::Number(100.0)),
            (Opt::Backoff, Raw::Str("fixed")),
        ],
    );
    for (method, body, hedges) in [
        ("GET", Body::None, true),
        ("head", Body::OfRequest, true),
        ("OPTIONS", Body::Text, true),
        ("GET", Body::Stream, false),
        ("PUT", Body::Text, false),
        ("POST", Body::Text, false),
    ] {
        let kind = request(method, body);
        assert_eq!(http.hedges(kind, false), hedges, "{method} {body:?}");
        let mut h = Host::new(p.clone());
        let g =
            h.m.execute_within(0.0, false, None, http.hedges(kind, false));
        if hedges {
            // The next attempt 40 ms after the first, while it runs.
            assert_eq!(h.drain(), vec![wait(g, 40.0), inv(g, 1)]);
            let out = h.advance(40.0);
            assert_eq!(out, vec![on_hedge(g, 2, 1, 40.0), wait(g, 40.0), inv(g, 2)]);
            assert_eq!(running(&h, g), vec![1, 2]);
            h.ok(g, 2);
            assert!(h.drain().contains(&cancel(g, 1)));
            continue;
        }
        // One attempt at a time: nothing starts while it runs, and a
        // failure waits the backoff (for a request that may not be sent
        // again, the host then answers `shouldRetry` with false).
        assert_eq!(h.drain(), vec![inv(g, 1)]);
        assert!(h.advance(1_000.0).is_empty(), "{method} {body:?}");
        h.err(g, 1);
        let out = h.drain();
        assert_eq!(waits(&out), vec![100.0], "{method} {body:?}");
        assert!(!out.iter().any(|e| matches!(e, Effect::Hedge { .. })));
    }
    // With a `beforeRetry` hook no request hedges.
    assert!(!http.hedges(request("GET", Body::None), true));
}
