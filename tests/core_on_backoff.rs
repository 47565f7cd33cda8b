//! `onBackoff` in the core: each wait reported with its delay and the time
//! elapsed, a seeded jitter reported as the delay the timer gets, and a
//! server hint reported while a wait cut by the deadline is not.

mod common;

use common::*;

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
