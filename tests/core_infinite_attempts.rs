//! `maxAttempts: Infinity` in the core: the flow ends at the total
//! deadline, also when every attempt times out at once and every wait is
//! 0 ms.

mod common;

use common::*;

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
            abort_att(g, 3, AbortReason::TotalTimeout),
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
