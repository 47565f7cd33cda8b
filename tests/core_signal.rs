//! The outside `signal` in the core: listened to during each flow only (no
//! listener left behind), aborted during a wait or an attempt, and already
//! aborted when a flow starts.

mod common;

use common::*;

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
            abort_att(g, 1, AbortReason::Signal),
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
            abort_att(g, 1, AbortReason::Signal),
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
            abort_att(g1, 1, AbortReason::NewExecution),
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
