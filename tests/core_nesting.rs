//! Retries across layers in the core: `nested: 'passthrough'` inside and
//! outside another retryer's attempt, an enclosing flow that forbids inner
//! retries, `innerRetries: false`, and the checks of both options.

mod common;

use common::*;

/// A flow of `h` started inside another retryer's running attempt.
fn execute_inside(h: &mut Host, forbids: bool) -> u32 {
    h.m.execute_within(h.now, false, Some(forbids), true)
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
