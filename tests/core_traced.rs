//! SPEC §2d in the core: a retryer someone observes (the host's tracing
//! channels have subscribers) is told of every wait, give-up and abort,
//! whether or not its callbacks are set, so the host can publish them; a
//! retryer nobody observes is told nothing more than its callbacks need.

mod common;

use common::*;

#[test]
fn an_observed_flow_reports_waits_give_ups_and_aborts_without_callbacks() {
    let mut h = Host::new(policy(&[(Opt::MaxAttempts, Raw::Number(2.0))]));
    h.m.set_traced(true);
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    let effects = h.drain();
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Backoff { attempt: 1, .. })),
        "{effects:?}"
    );
    h.advance(1000.0);
    h.err(g, 2);
    let effects = h.drain();
    assert!(
        effects.contains(&give_up(g, GiveUp::AttemptsExhausted)),
        "{effects:?}"
    );

    let g = h.execute();
    h.drain();
    h.abort();
    let effects = h.drain();
    assert!(
        effects.contains(&on_abort(g, AbortReason::Manual)),
        "{effects:?}"
    );
}

#[test]
fn an_unobserved_flow_without_callbacks_reports_none_of_them() {
    let mut h = Host::new(policy(&[(Opt::MaxAttempts, Raw::Number(2.0))]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    let effects = h.drain();
    assert!(!effects.iter().any(|e| matches!(e, Effect::Backoff { .. })));
    h.advance(1000.0);
    h.err(g, 2);
    assert!(!h.drain().iter().any(|e| matches!(e, Effect::Call { .. })));
}
