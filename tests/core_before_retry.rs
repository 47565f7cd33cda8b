//! SPEC §2b `beforeRetry` in the core: after each wait a host hook decides
//! whether the next attempt goes ([`Effect::Gate`]). It may take its time
//! (a promise) within the total deadline; `false` stops the flow with the
//! last failure as the final one (`'not-retryable'`, no second `onError`
//! or `onSettled` for the attempt that already had them); a throw ends it
//! with what was thrown; a late answer changes nothing.

mod common;

use common::*;

fn gated(opts: &[(Opt, Raw<'_>)]) -> Policy {
    let mut p = policy_all_cbs(opts);
    p.before_retry = true;
    p
}

fn gate(gen: u32, attempt: u32) -> Effect {
    Effect::Gate { gen, attempt }
}

/// A flow of a gated policy whose attempt 1 failed and whose wait (the
/// default 1 s) ended: the gate before attempt 2 is open.
fn at_the_gate(opts: &[(Opt, Raw<'_>)]) -> (Host, u32) {
    let mut h = Host::new(gated(opts));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    assert_eq!(h.advance(1000.0), vec![gate(g, 2)]);
    (h, g)
}

#[test]
fn each_wait_ends_at_the_gate_and_the_attempt_goes_when_it_says_so() {
    let mut h = Host::new(gated(&[]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            wait(g, 1000.0)
        ]
    );
    assert_eq!(h.advance(1000.0), vec![gate(g, 2)]);
    assert_eq!(h.state().current_attempt, 2);
    assert!(h.state().is_executing);
    // The hook takes its time: nothing goes meanwhile.
    h.now += 250.0;
    h.answer_gate(g, 2, Provided::Bool(true));
    assert_eq!(h.drain(), vec![inv(g, 2)]);
    h.ok(g, 2);
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::Success),
            call(g, Cb::Settled),
            fin(g, Outcome::Result)
        ]
    );
    h.assert_quiet();
}

#[test]
fn a_retry_at_once_is_gated_too() {
    let mut h = Host::new(gated(&[(Opt::BaseWait, Raw::Number(0.0))]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    let effects = h.drain();
    assert_eq!(effects.last(), Some(&gate(g, 2)));
    assert!(!h.invoked.contains(&(g, 2)));
    h.answer_gate(g, 2, Provided::Nothing);
    assert_eq!(h.drain(), vec![inv(g, 2)]);
}

#[test]
fn false_stops_with_the_last_failure_and_no_second_on_error() {
    let (mut h, g) = at_the_gate(&[(Opt::ThrowOnError, Raw::Str("last"))]);
    h.answer_gate(g, 2, Provided::Bool(false));
    assert_eq!(
        h.drain(),
        vec![
            call(g, Cb::LastError),
            give_up(g, GiveUp::NotRetryable),
            fin(g, Outcome::Reject),
        ]
    );
    assert!(!h.state().is_executing);
    assert!(!h.invoked.contains(&(g, 2)));
    h.assert_quiet();
}

#[test]
fn a_throwing_hook_ends_the_flow_with_what_it_threw() {
    let (mut h, g) = at_the_gate(&[]);
    h.answer_gate(g, 2, Provided::Threw);
    assert_eq!(h.drain(), vec![fin(g, Outcome::Thrown)]);
    assert!(!h.state().is_executing);
    h.assert_quiet();
}

#[test]
fn the_total_deadline_holds_while_the_hook_decides() {
    let mut h = Host::new(gated(&[
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    assert_eq!(h.advance(100.0), vec![gate(g, 2)]);
    // The hook never answers: the total deadline ends the flow.
    let effects = h.advance(900.0);
    assert!(effects.contains(&on_abort(g, AbortReason::TotalTimeout)));
    assert_eq!(effects.last(), Some(&fin(g, Outcome::Undefined)));
    // Its late answer is ignored.
    h.answer_gate(g, 2, Provided::Bool(true));
    assert_eq!(h.drain(), vec![]);
    h.assert_quiet();
}

#[test]
fn abort_while_gating_and_stale_answers() {
    let (mut h, g) = at_the_gate(&[]);
    // An answer for another attempt or flow is no answer.
    h.answer_gate(g, 3, Provided::Bool(true));
    h.answer_gate(g.wrapping_add(1), 2, Provided::Bool(true));
    assert_eq!(h.drain(), vec![]);
    h.abort();
    let effects = h.drain();
    assert!(effects.contains(&on_abort(g, AbortReason::Manual)));
    assert_eq!(effects.last(), Some(&fin(g, Outcome::Undefined)));
    h.answer_gate(g, 2, Provided::Bool(true));
    assert_eq!(h.drain(), vec![]);
    h.assert_quiet();
}

#[test]
fn without_the_hook_nothing_is_gated() {
    let mut h = Host::new(policy_all_cbs(&[]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    assert_eq!(h.advance(1000.0), vec![inv(g, 2)]);
}
