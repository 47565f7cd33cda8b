//! SPEC §2e, the circuit breaker, in the core: `Breaker` rule by rule on a
//! fake clock (the window and its buckets, the two ways to trip, the break,
//! half-open probes, stale outcomes, isolate and reset, what `state()` and
//! `look()` read, the circuits kept past `KEPT_CIRCUITS` keys, a dynamic
//! `breakDuration`, the bounds of every setting),
//! then a `Machine` and a `Breaker` driven together the way the host drives
//! them: a permit asked at each `Invoke`, an outcome recorded when the
//! attempt settles or times out, the permit given back when the attempt is
//! cancelled, and a refusal fed back as `attempt_refused`.

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use common::*;
use retry_wasm::core::breaker::{
    Breaker, CircuitState, Permit, SettingError, Settings, Transition, Why, CLOCK_SLACK,
    KEPT_CIRCUITS, SETTINGS,
};

use CircuitState::{Closed, HalfOpen, Isolated, Open};

const INF: f64 = f64::INFINITY;

/// A breaker with the default settings changed by `f` (checked first: a
/// test never runs on settings the host would refuse).
fn breaker(f: impl FnOnce(&mut Settings)) -> Breaker {
    let mut s = Settings::default();
    f(&mut s);
    assert_eq!(s.check(), Ok(()), "{s:?}");
    Breaker::new(s)
}

/// A permit for `key` at `now` that changes no state.
fn grant(b: &mut Breaker, key: &str, now: f64) -> Permit {
    let (r, t) = b.permit(key, now);
    assert_eq!(t, None, "a permit at {now} changed the circuit");
    r.unwrap_or_else(|ms| panic!("refused at {now} ({ms} ms)"))
}

/// The first probe after the break: granted, with the `'break-ended'`
/// transition.
fn first_probe(b: &mut Breaker, key: &str, now: f64) -> Permit {
    let (r, t) = b.permit(key, now);
    let t = t.expect("no 'break-ended'");
    assert_eq!((t.from, t.to, t.why), (Open, HalfOpen, Why::BreakEnded));
    r.expect("the attempt that ended the break is refused")
}

/// A refusal at `now`, and its hint.
fn refused(b: &mut Breaker, key: &str, now: f64) -> f64 {
    let (r, t) = b.permit(key, now);
    assert_eq!(t, None);
    match r {
        Ok(p) => panic!("granted {p:?} at {now}"),
        Err(ms) => ms,
    }
}

/// Records one attempt for `key` that started and ended at `now`.
fn one(b: &mut Breaker, key: &str, ok: bool, now: f64) -> Option<Transition> {
    let p = grant(b, key, now);
    b.record(p, ok, now)
}

/// What a transition says, its epoch aside: `(from, to, why, failures,
/// calls, halfOpenAttempts, breakDuration)`.
type Shape = (CircuitState, CircuitState, Why, u32, u32, u32, f64);

fn shape(t: Transition) -> Shape {
    (
        t.from,
        t.to,
        t.why,
        t.failures,
        t.calls,
        t.half_open_attempts,
        t.break_duration,
    )
}

/// `(calls, failures)` in circuit 0's window at `now`.
fn window(b: &Breaker, now: f64) -> (u32, u32) {
    let (_, calls, failures, _) = b.look(0, now).expect("circuit 0");
    (calls, failures)
}

/// Trips on every failure (one failure in a row).
fn trips_at_once(s: &mut Settings) {
    s.consecutive_failures = 1.0;
}

// ----- rule 5: closed to open -----

#[test]
fn the_ratio_trips_only_with_minimum_throughput_calls_in_the_window() {
    let mut b = breaker(|s| s.minimum_throughput = 4.0);
    // Three calls, all failed: a ratio of 1, but fewer than 4 calls.
    for t in [1.0, 2.0, 3.0] {
        assert_eq!(one(&mut b, "", false, t), None);
    }
    assert_eq!(b.state("", 3.0), Closed);
    // A success is the fourth call: a success never trips.
    assert_eq!(one(&mut b, "", true, 4.0), None);
    assert_eq!(window(&b, 4.0), (4, 3));
    let t = one(&mut b, "", false, 5.0).expect("4 failures of 5 calls");
    assert_eq!(
        shape(t),
        (Closed, Open, Why::Tripped, 4, 5, 0, 5000.0),
        "{t:?}"
    );
    assert_eq!(b.state("", 5.0), Open);

    // Under the ratio it stays closed, and trips as failures reach it
    // (failures / calls >= failureRatio, so at exactly 0.5).
    let mut b = breaker(|s| s.minimum_throughput = 4.0);
    for (t, ok) in [(1.0, true), (2.0, true), (3.0, true), (4.0, false)] {
        assert_eq!(one(&mut b, "", ok, t), None);
    }
    assert_eq!(one(&mut b, "", false, 5.0), None, "2 of 5");
    let t = one(&mut b, "", false, 6.0).expect("3 of 6 is the ratio");
    assert_eq!((t.failures, t.calls, t.why), (3, 6, Why::Tripped));
}

#[test]
fn the_ratio_is_compared_as_failures_divided_by_calls() {
    // SPEC §2e: "failures ÷ calls is at least failureRatio". With
    // failureRatio 0.07, 7 failures in 100 calls is exactly the ratio
    // (7 / 100 and 0.07 are the same double), while 0.07 × 100 is
    // 7.000000000000001: comparing failures with ratio × calls would
    // leave the circuit closed.
    for (ratio, calls, failures) in [(0.07, 100u32, 7u32), (0.28, 25, 7), (0.14, 50, 7)] {
        let mut b = breaker(|s| {
            s.failure_ratio = ratio;
            s.minimum_throughput = f64::from(calls);
        });
        for i in 0..calls - failures {
            assert_eq!(one(&mut b, "", true, f64::from(i)), None);
        }
        let mut last = None;
        for i in 0..failures {
            assert_eq!(last, None, "tripped before the ratio");
            last = one(&mut b, "", false, 1000.0 + f64::from(i));
        }
        let t = last.unwrap_or_else(|| panic!("{failures} of {calls} did not trip at {ratio}"));
        assert_eq!((t.failures, t.calls), (failures, calls));
    }
}

#[test]
fn consecutive_failures_trip_whatever_the_ratio() {
    let mut b = breaker(|s| {
        s.consecutive_failures = 3.0;
        s.minimum_throughput = 100.0;
    });
    // A success breaks the run.
    for (t, ok) in [
        (1.0, false),
        (2.0, false),
        (3.0, true),
        (4.0, false),
        (5.0, false),
    ] {
        assert_eq!(one(&mut b, "", ok, t), None, "at {t}");
    }
    let t = one(&mut b, "", false, 6.0).expect("3 failures in a row");
    assert_eq!(shape(t), (Closed, Open, Why::Tripped, 5, 6, 0, 5000.0));

    // Not set: only the ratio trips, and 50 calls are under 100.
    let mut b = breaker(|s| s.minimum_throughput = 100.0);
    for i in 0..50 {
        assert_eq!(one(&mut b, "", false, f64::from(i)), None);
    }
    assert_eq!(b.state("", 50.0), Closed);
}

#[test]
fn the_window_is_ten_buckets_and_old_ones_are_dropped() {
    // samplingDuration 1000: buckets of 100 ms; an attempt counts in the
    // bucket of the time it ended.
    let settings = |s: &mut Settings| {
        s.sampling_duration = 1000.0;
        s.minimum_throughput = 3.0;
    };
    let mut b = breaker(settings);
    assert_eq!(one(&mut b, "", false, 0.0), None);
    assert_eq!(one(&mut b, "", false, 50.0), None);
    assert_eq!(window(&b, 999.0), (2, 2));
    // At 1000 ms the bucket of [0, 100) is out of the window.
    assert_eq!(window(&b, 1000.0), (0, 0));
    // A third failure at 1000: the first two no longer count, so 1 call,
    // under minimumThroughput. (Its bucket is the one [0, 100) had.)
    assert_eq!(one(&mut b, "", false, 1000.0), None);
    assert_eq!(window(&b, 1000.0), (1, 1));
    assert_eq!(one(&mut b, "", true, 1150.0), None);
    assert_eq!(window(&b, 1150.0), (2, 1));
    // [1000, 1100) leaves at 2000, [1100, 1200) at 2100.
    assert_eq!(window(&b, 1999.0), (2, 1));
    assert_eq!(window(&b, 2000.0), (1, 0));
    assert_eq!(window(&b, 2099.0), (1, 0));
    assert_eq!(window(&b, 2100.0), (0, 0));
    assert_eq!(b.state("", 2100.0), Closed);

    // The same three failures within one window trip.
    let mut b = breaker(settings);
    for t in [0.0, 50.0] {
        assert_eq!(one(&mut b, "", false, t), None);
    }
    let t = one(&mut b, "", false, 999.0).expect("3 failures within 1000 ms");
    assert_eq!((t.failures, t.calls), (3, 3));
}

// ----- rule 1: permits, the break, half-open -----

#[test]
fn an_open_circuit_refuses_for_break_duration_then_the_asking_attempt_is_a_probe() {
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.break_duration = 2000.0;
    });
    let t = one(&mut b, "", false, 100.0).expect("tripped");
    assert_eq!(t.break_duration, 2000.0);
    // The hint is the ms until a probe may go.
    assert_eq!(refused(&mut b, "", 100.0), 2000.0);
    assert_eq!(refused(&mut b, "", 1100.0), 1000.0);
    let last = 2100.0 - CLOCK_SLACK - 1.0;
    assert_eq!(refused(&mut b, "", last), 2100.0 - last);
    assert_eq!(b.state("", 2099.0), Open);
    // The break is over (or within CLOCK_SLACK of it: a host timer set
    // for the hint may fire that much before the clock reaches it): the
    // next attempt that asks turns it half-open and is its probe.
    let (r, t) = b.permit("", 2100.0 - CLOCK_SLACK);
    assert!(r.is_ok());
    let t = t.expect("break-ended");
    assert_eq!(shape(t), (Open, HalfOpen, Why::BreakEnded, 1, 1, 0, 0.0));
    assert_eq!(b.state("", 2100.0), HalfOpen);

    // Exactly at the end, without the slack.
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.break_duration = 2000.0;
    });
    one(&mut b, "", false, 100.0).expect("tripped");
    assert!(b.permit("", 2100.0).1.is_some());
}

#[test]
fn state_reads_half_open_after_the_break_without_taking_the_probe() {
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.break_duration = 1000.0;
    });
    one(&mut b, "", false, 0.0).expect("tripped");
    assert_eq!(b.state("", 999.0), Open);
    assert_eq!(b.look(0, 999.0), Some((Open, 1, 1, 1.0)));
    for _ in 0..3 {
        assert_eq!(b.state("", 1000.0), HalfOpen);
        assert_eq!(b.look(0, 1000.0), Some((HalfOpen, 1, 1, 0.0)));
    }
    // Reading took nothing: the first attempt that asks is still the one
    // that ends the break, and it gets the only probe.
    let probe = first_probe(&mut b, "", 1500.0);
    assert_eq!(refused(&mut b, "", 1500.0), 1000.0);
    assert!(b.record(probe, true, 1600.0).is_some());
    assert_eq!(b.state("", 1600.0), Closed);
    // A key never seen is closed, and reading it makes no circuit.
    assert_eq!(b.state("elsewhere", 0.0), Closed);
    assert_eq!(b.len(), 1);
}

#[test]
fn every_half_open_probe_must_succeed_to_close() {
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.break_duration = 1000.0;
        s.half_open_calls = 2.0;
    });
    one(&mut b, "", false, 0.0).expect("tripped");
    let a = first_probe(&mut b, "", 1000.0);
    let c = grant(&mut b, "", 1000.0);
    // Two probes out: a third attempt is refused with the break duration.
    assert_eq!(refused(&mut b, "", 1001.0), 1000.0);
    // The first succeeds: half-open still, and it counts toward the two
    // ("in all"): a third probe is still refused while the second runs.
    assert_eq!(b.record(a, true, 1002.0), None);
    assert_eq!(b.state("", 1002.0), HalfOpen);
    assert_eq!(refused(&mut b, "", 1003.0), 1000.0);
    // The second succeeds too: closed, with an empty window.
    let t = b.record(c, true, 1004.0).expect("probe-succeeded");
    assert_eq!(
        (t.from, t.to, t.why),
        (HalfOpen, Closed, Why::ProbeSucceeded)
    );
    assert_eq!((t.half_open_attempts, t.break_duration), (0, 0.0));
    assert_eq!(window(&b, 1004.0), (0, 0));
    assert_eq!(b.look(0, 1004.0), Some((Closed, 0, 0, 0.0)));
    grant(&mut b, "", 1005.0);
}

#[test]
fn a_released_probe_gives_its_permit_back() {
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.break_duration = 1000.0;
    });
    one(&mut b, "", false, 0.0).expect("tripped");
    let a = first_probe(&mut b, "", 1000.0);
    assert_eq!(refused(&mut b, "", 1000.0), 1000.0);
    // The probe's attempt was cancelled: its permit goes back.
    b.release(a);
    let c = grant(&mut b, "", 1010.0);
    assert_eq!(refused(&mut b, "", 1010.0), 1000.0);
    let t = b.record(c, true, 1020.0).expect("probe-succeeded");
    assert_eq!(t.why, Why::ProbeSucceeded);
    let p = grant(&mut b, "", 1030.0);
    b.release(p);
    assert_eq!(b.state("", 1030.0), Closed);
    // A released closed-circuit permit records nothing in the window.
    assert_eq!(window(&b, 1030.0), (0, 0));
}

#[test]
fn a_failed_probe_reopens_with_one_more_half_open_attempt() {
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.break_duration = 1000.0;
        s.half_open_calls = 2.0;
    });
    let t = one(&mut b, "", false, 0.0).expect("tripped");
    assert_eq!(t.half_open_attempts, 0);
    let a = first_probe(&mut b, "", 1000.0);
    let c = grant(&mut b, "", 1000.0);
    let t = b.record(a, false, 1100.0).expect("probe-failed");
    assert_eq!(
        shape(t),
        (HalfOpen, Open, Why::ProbeFailed, 1, 1, 1, 1000.0)
    );
    // Open again for a whole break from the failure.
    assert_eq!(refused(&mut b, "", 1100.0), 1000.0);
    assert_eq!(b.state("", 2099.0), Open);
    // The other probe of that half-open period settles late: nothing.
    assert_eq!(b.record(c, true, 1200.0), None);
    assert_eq!(b.state("", 1200.0), Open);
    // Again: a second failed probe in a row.
    let a = first_probe(&mut b, "", 2100.0);
    let t = b.record(a, false, 2200.0).expect("probe-failed");
    assert_eq!(t.half_open_attempts, 2);
    // Then both probes succeed: closed, and the count starts over.
    let a = first_probe(&mut b, "", 3200.0);
    let c = grant(&mut b, "", 3200.0);
    assert_eq!(b.record(a, true, 3300.0), None);
    assert!(b.record(c, true, 3300.0).is_some());
    let t = one(&mut b, "", false, 3400.0).expect("tripped");
    assert_eq!(shape(t), (Closed, Open, Why::Tripped, 1, 1, 0, 1000.0));
}

#[test]
fn outcomes_of_permits_from_before_the_last_opening_change_nothing() {
    let mut b = breaker(|s| {
        s.minimum_throughput = 2.0;
        s.break_duration = 1000.0;
        s.half_open_calls = 2.0;
    });
    let old = grant(&mut b, "", 0.0);
    assert_eq!(one(&mut b, "", false, 0.0), None);
    one(&mut b, "", false, 1.0).expect("tripped");
    assert_eq!(window(&b, 1.0), (2, 2));
    // A permit from before the opening: its outcome arrives while open.
    // (Stale permits are cloned to be ended again and again, as no host
    // does: none of it may count.)
    assert_eq!(b.record(old.clone(), false, 10.0), None);
    assert_eq!(b.record(old.clone(), true, 10.0), None);
    assert_eq!(window(&b, 10.0), (2, 2));
    assert_eq!(b.state("", 10.0), Open);
    // ... while half-open: it is no probe, and takes no probe's place.
    let a = first_probe(&mut b, "", 1001.0);
    assert_eq!(b.record(old.clone(), true, 1002.0), None);
    b.release(old.clone());
    let c = grant(&mut b, "", 1003.0);
    assert_eq!(refused(&mut b, "", 1003.0), 1000.0);
    // A probe fails: the circuit opens again; the other probe is from
    // before that opening.
    assert!(b.record(a, false, 1004.0).is_some());
    b.release(c.clone());
    assert_eq!(b.record(c.clone(), false, 1005.0), None);
    // The next half-open period has its own two probes, whatever the
    // stale permits do.
    let a = first_probe(&mut b, "", 2004.0);
    let d = grant(&mut b, "", 2004.0);
    b.release(c.clone());
    assert_eq!(refused(&mut b, "", 2004.0), 1000.0);
    assert_eq!(b.record(a, true, 2005.0), None);
    assert!(b.record(d, true, 2006.0).is_some());
    // ... and after the circuit closed, with an empty window.
    assert_eq!(b.record(old.clone(), false, 2007.0), None);
    assert_eq!(b.record(c.clone(), false, 2007.0), None);
    assert_eq!(window(&b, 2007.0), (0, 0));
    assert_eq!(b.state("", 2007.0), Closed);
}

#[test]
fn a_closed_circuit_gives_a_permit_without_the_clock() {
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.break_duration = 100.0;
    });
    // A key never seen: no answer without the clock; the attempt that
    // asks with it makes the circuit.
    assert_eq!(b.closed_permit("k"), None);
    assert_eq!(b.len(), 0);
    let first = grant(&mut b, "k", 5.0);
    assert_eq!(b.len(), 1);
    assert_eq!(b.record(first, true, 6.0), None);
    // Then a closed circuit answers, and its permit counts as any.
    let p = b.closed_permit("k").expect("closed");
    let t = b.record(p, false, 10.0).expect("tripped");
    assert_eq!(t.why, Why::Tripped);
    // Any other state: no answer without the clock.
    assert_eq!(b.closed_permit("k"), None);
    assert_eq!(refused(&mut b, "k", 50.0), 60.0);
    // Past the break: still none (the circuit is half-open only for the
    // attempt that asks with the clock).
    assert_eq!(b.closed_permit("k"), None);
    let probe = first_probe(&mut b, "k", 110.0);
    assert_eq!(b.closed_permit("k"), None);
    assert!(b.record(probe, true, 120.0).is_some());
    let p = b.closed_permit("k").expect("closed again");
    assert_eq!(b.record(p, true, 130.0), None);
    b.isolate("k", 140.0);
    assert_eq!(b.closed_permit("k"), None);
}

// ----- isolate, reset, keys -----

#[test]
fn isolate_holds_the_circuit_open_until_reset() {
    let mut b = breaker(|s| s.minimum_throughput = 1.0);
    let before = grant(&mut b, "k", 0.0);
    let t = b.isolate("k", 10.0).expect("isolated");
    assert_eq!(shape(t), (Closed, Isolated, Why::Isolated, 0, 0, 0, 0.0));
    assert_eq!(b.isolate("k", 11.0), None, "isolated already");
    assert_eq!(refused(&mut b, "k", 12.0), INF);
    assert_eq!(refused(&mut b, "k", 1e12), INF);
    assert_eq!(b.state("k", 1e12), Isolated);
    assert_eq!(b.look(0, 1e12), Some((Isolated, 0, 0, INF)));
    // An attempt permitted before changes nothing.
    assert_eq!(b.record(before.clone(), false, 20.0), None);
    assert_eq!(window(&b, 20.0), (0, 0));
    let t = b.reset("k", 30.0).expect("reset");
    assert_eq!((t.from, t.to, t.why), (Isolated, Closed, Why::Reset));
    assert_eq!(b.record(before, false, 31.0), None);
    assert_eq!(b.state("k", 31.0), Closed);
    grant(&mut b, "k", 32.0);

    // Isolating an open circuit; a key never seen gets a circuit.
    let mut b = breaker(trips_at_once);
    one(&mut b, "", false, 0.0).expect("tripped");
    assert_eq!(b.isolate("", 1.0).map(|t| t.from), Some(Open));
    let t = b.isolate("new", 1.0).expect("isolated");
    assert_eq!((t.from, t.circuit), (Closed, 1));
    assert_eq!(b.key(1), "new");
    assert_eq!(b.len(), 2);
    // The break ending does not end an isolation.
    assert_eq!(refused(&mut b, "", 1e9), INF);
}

#[test]
fn reset_closes_and_empties_the_window() {
    let mut b = breaker(|s| {
        s.minimum_throughput = 3.0;
        s.break_duration = 1000.0;
    });
    assert_eq!(one(&mut b, "", false, 0.0), None);
    assert_eq!(one(&mut b, "", false, 1.0), None);
    // Closed already: no transition, but the window is emptied.
    assert_eq!(b.reset("", 2.0), None);
    assert_eq!(window(&b, 2.0), (0, 0));
    assert_eq!(one(&mut b, "", false, 3.0), None, "1 call, not 3");
    assert_eq!(one(&mut b, "", false, 4.0), None);
    one(&mut b, "", false, 5.0).expect("tripped");
    // Open: closed again at once, permits granted.
    let t = b.reset("", 6.0).expect("reset");
    assert_eq!((t.from, t.to, t.why), (Open, Closed, Why::Reset));
    assert_eq!((t.half_open_attempts, t.break_duration), (0, 0.0));
    assert_eq!(window(&b, 6.0), (0, 0));
    grant(&mut b, "", 6.0);
    // Half-open (read as such once the break is over) with a probe out.
    for t in [7.0, 8.0, 9.0] {
        one(&mut b, "", false, t);
    }
    assert_eq!(b.state("", 1009.0), HalfOpen);
    assert_eq!(b.reset("", 1009.0).map(|t| t.from), Some(HalfOpen));
    for t in [1010.0, 1011.0, 1012.0] {
        one(&mut b, "", false, t);
    }
    let probe = first_probe(&mut b, "", 2012.0);
    assert_eq!(b.reset("", 2013.0).map(|t| t.from), Some(HalfOpen));
    // The probe's late outcome belongs to before the reset.
    assert_eq!(b.record(probe, false, 2014.0), None);
    assert_eq!(window(&b, 2014.0), (0, 0));
}

#[test]
fn every_key_has_its_own_circuit() {
    let mut b = breaker(trips_at_once);
    let t = one(&mut b, "https://a.example", false, 0.0).expect("tripped");
    assert_eq!(b.key(t.circuit), "https://a.example");
    refused(&mut b, "https://a.example", 1.0);
    grant(&mut b, "https://b.example", 1.0);
    grant(&mut b, "", 1.0);
    assert_eq!(b.len(), 3);
    assert_eq!(b.state("https://b.example", 1.0), Closed);
    assert_eq!(b.key(99), "");
    assert_eq!(b.look(99, 0.0), None);
    assert!(breaker(|_| {}).is_empty());
}

#[test]
fn look_gives_what_snapshot_lists() {
    let mut b = breaker(|s| {
        s.minimum_throughput = 4.0;
        s.break_duration = 3000.0;
    });
    assert_eq!(b.look(0, 0.0), None, "no circuit yet");
    one(&mut b, "", true, 0.0);
    one(&mut b, "", false, 1.0);
    assert_eq!(b.look(0, 2.0), Some((Closed, 2, 1, 0.0)));
    one(&mut b, "", false, 2.0);
    one(&mut b, "", false, 10.0).expect("tripped");
    // Open: ms until a probe may go.
    assert_eq!(b.look(0, 10.0), Some((Open, 4, 3, 3000.0)));
    assert_eq!(b.look(0, 2500.0), Some((Open, 4, 3, 510.0)));
    // Half-open, read or taken: 0.
    assert_eq!(b.look(0, 3010.0), Some((HalfOpen, 4, 3, 0.0)));
    let _probe = first_probe(&mut b, "", 3010.0);
    assert_eq!(b.look(0, 3011.0), Some((HalfOpen, 4, 3, 0.0)));
    b.isolate("", 3012.0);
    assert_eq!(b.look(0, 3012.0), Some((Isolated, 4, 3, INF)));
}

// ----- circuits kept: an idle one gives its place to a new key -----

/// The keys the breaker holds, in place order (what `snapshot()` lists).
fn keys(b: &Breaker) -> Vec<String> {
    (0..b.len() as u32).map(|i| b.key(i).to_string()).collect()
}

/// `n` keys `k0`.. with one success each at `now`.
fn seen(b: &mut Breaker, n: usize, now: f64) {
    for k in 0..n {
        assert_eq!(one(b, &format!("k{k}"), true, now), None);
    }
}

#[test]
fn below_kept_circuits_every_key_seen_stays() {
    let mut b = breaker(|_| {});
    seen(&mut b, KEPT_CIRCUITS - 1, 0.0);
    // Long after, every window empty: a new key still gets a place of its own.
    assert_eq!(one(&mut b, "new", true, 1e9), None);
    assert_eq!(b.len(), KEPT_CIRCUITS);
    assert_eq!(keys(&b)[0], "k0");
}

#[test]
fn past_kept_circuits_a_new_key_takes_an_idle_place() {
    let mut b = breaker(|_| {});
    seen(&mut b, KEPT_CIRCUITS, 0.0);
    // Every window holds a call: no place is idle, the breaker grows.
    assert_eq!(one(&mut b, "busy", true, 100.0), None);
    assert_eq!(b.len(), KEPT_CIRCUITS + 1);
    // Past the window (30 s), k0's place is idle: the new key takes it.
    let p = grant(&mut b, "late", 40_000.0);
    assert_eq!(b.len(), KEPT_CIRCUITS + 1);
    assert_eq!(keys(&b)[0], "late");
    assert_eq!(
        b.state("k0", 40_000.0),
        Closed,
        "a key given up reads as never seen"
    );
    assert_eq!(b.record(p, false, 40_001.0), None);
    assert_eq!(
        window(&b, 40_001.0),
        (1, 1),
        "the new key's window starts empty"
    );
    // A thousand more keys, one at a time, each idle once its call is
    // recorded: the breaker never holds more than it did.
    for k in 0..1_000 {
        let now = 100_000.0 + f64::from(k) * 40_000.0;
        assert_eq!(one(&mut b, &format!("origin-{k}"), true, now), None);
    }
    assert_eq!(b.len(), KEPT_CIRCUITS + 1);
}

#[test]
fn a_circuit_in_use_keeps_its_place() {
    let mut b = breaker(|s| {
        s.consecutive_failures = 2.0;
        s.break_duration = 1000.0;
    });
    seen(&mut b, KEPT_CIRCUITS, 0.0);
    // k0: an attempt running. k1: open, its break ending at 1,002. k2: one
    // failure in a row. k3: isolated. Every call is out of the window
    // (30 s) by 30,500.
    let running = grant(&mut b, "k0", 1.0);
    assert_eq!(one(&mut b, "k1", false, 1.0), None);
    assert!(one(&mut b, "k1", false, 2.0).is_some());
    assert_eq!(one(&mut b, "k2", false, 3.0), None);
    assert!(b.isolate("k3", 4.0).is_some());
    // At 30,500, 61 new keys take the places of k2 and k4..k63; the next
    // one grows the breaker. k1's break ended less than a window ago.
    for k in 0..(KEPT_CIRCUITS - 4 + 2) {
        assert_eq!(one(&mut b, &format!("new{k}"), true, 30_500.0), None);
    }
    assert_eq!(b.len(), KEPT_CIRCUITS + 1);
    let held = keys(&b);
    assert_eq!(&held[..4], ["k0", "k1", "new0", "k3"]);
    assert_eq!(b.state("k1", 30_500.0), HalfOpen);
    // k2's failure streak went with its place: one failure no longer trips
    // it (it reads as a key never seen).
    assert_eq!(one(&mut b, "k2", false, 30_501.0), None);
    assert_eq!(b.state("k2", 30_501.0), Closed);
    // A window after k1's break ended (1,002 + 30,000), a new key takes
    // its place; the running attempt and the isolated circuit keep theirs.
    assert_eq!(one(&mut b, "late", true, 31_002.0), None);
    assert_eq!(&keys(&b)[..4], ["k0", "late", "new0", "k3"]);
    assert_eq!(b.state("k3", 31_002.0), Isolated);
    // The running attempt's outcome lands in its own circuit.
    assert_eq!(b.record(running, false, 31_003.0), None);
    assert_eq!(b.look(0, 31_003.0).map(|l| (l.1, l.2)), Some((1, 1)));
}

#[test]
fn a_permit_of_a_key_given_up_counts_for_nothing_in_its_place() {
    let mut b = breaker(trips_at_once);
    seen(&mut b, KEPT_CIRCUITS, 0.0);
    // A permit of k0, recorded, then (as no host does) recorded again
    // after its place went to another key.
    let p = grant(&mut b, "k0", 1.0);
    assert_eq!(b.record(p.clone(), true, 1.0), None);
    let _ = grant(&mut b, "other", 40_000.0);
    assert_eq!(keys(&b)[0], "other");
    assert_eq!(
        b.record(p, false, 40_001.0),
        None,
        "a failure that trips at once"
    );
    assert_eq!(b.state("other", 40_001.0), Closed);
}

// ----- a dynamic breakDuration -----

#[test]
fn set_break_sets_the_break_of_the_opening_it_answers() {
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.dynamic_break = true;
    });
    let t1 = one(&mut b, "", false, 100.0).expect("tripped");
    // Until the host answers, the placeholder (the default) holds.
    assert_eq!(t1.break_duration, 5000.0);
    assert_eq!(refused(&mut b, "", 100.0), 5000.0);
    b.set_break(t1.circuit, t1.epoch, 300.0);
    // The break is counted from the opening.
    assert_eq!(refused(&mut b, "", 250.0), 150.0);
    let probe = first_probe(&mut b, "", 400.0);
    // Half-open with its probe out: the hint is the break as answered.
    assert_eq!(refused(&mut b, "", 400.0), 300.0);
    // An answer for that opening, arriving once half-open: nothing.
    b.set_break(t1.circuit, t1.epoch, 10_000.0);
    assert_eq!(refused(&mut b, "", 401.0), 300.0);
    let t2 = b.record(probe, false, 500.0).expect("probe-failed");
    assert_ne!(t2.epoch, t1.epoch);
    assert_eq!(t2.half_open_attempts, 1);
    // A late answer to the first opening is stale: the placeholder holds.
    b.set_break(t1.circuit, t1.epoch, 10.0);
    assert_eq!(refused(&mut b, "", 520.0), 4980.0);
    b.set_break(t2.circuit, t2.epoch, 50.0);
    assert_eq!(refused(&mut b, "", 520.0), 30.0);
    first_probe(&mut b, "", 550.0);
    // An unknown circuit, or a reset one: ignored.
    b.set_break(7, t2.epoch, 1.0);
    b.reset("", 600.0);
    b.set_break(t2.circuit, t2.epoch, 1.0);
    assert_eq!(b.state("", 600.0), Closed);
    grant(&mut b, "", 601.0);
}

// ----- settings -----

#[test]
fn settings_check_every_bound() {
    assert_eq!(Settings::default().check(), Ok(()));
    let d = Settings::default();
    assert_eq!(
        (
            d.failure_ratio,
            d.minimum_throughput,
            d.sampling_duration,
            d.consecutive_failures,
            d.break_duration,
            d.dynamic_break,
            d.half_open_calls
        ),
        (0.5, 10.0, 30_000.0, 0.0, 5000.0, false, 1.0)
    );
    type Field = fn(&mut Settings) -> &mut f64;
    let nan = f64::NAN;
    let max = f64::from(u32::MAX);
    let cases: [(Field, SettingError, &[f64], &[f64]); 6] = [
        (
            |s| &mut s.failure_ratio,
            SettingError::FailureRatio,
            &[1.0, 0.5, 1e-9, f64::MIN_POSITIVE],
            &[0.0, -0.0, -0.5, 1.0 + f64::EPSILON, 2.0, nan, INF, -INF],
        ),
        (
            |s| &mut s.minimum_throughput,
            SettingError::MinimumThroughput,
            &[1.0, 2.0, 10.0, max],
            &[0.0, -1.0, 0.5, 1.5, max + 1.0, nan, INF],
        ),
        (
            |s| &mut s.sampling_duration,
            SettingError::SamplingDuration,
            &[1.0, 0.5, 30_000.0, 1e12],
            &[0.0, -0.0, -1.0, nan, INF, -INF],
        ),
        (
            // 0 stands for "not set".
            |s| &mut s.consecutive_failures,
            SettingError::ConsecutiveFailures,
            &[0.0, 1.0, 3.0, max],
            &[0.5, -1.0, 2.5, max + 1.0, nan, INF],
        ),
        (
            |s| &mut s.break_duration,
            SettingError::BreakDuration,
            &[0.0, 0.5, 5000.0, 1e12],
            &[-1.0, -0.001, nan, INF, -INF],
        ),
        (
            |s| &mut s.half_open_calls,
            SettingError::HalfOpenCalls,
            &[1.0, 2.0, max],
            &[0.0, -1.0, 1.5, max + 1.0, nan, INF],
        ),
    ];
    for (field, err, good, bad) in cases {
        for &v in good {
            let mut s = Settings::default();
            *field(&mut s) = v;
            assert_eq!(s.check(), Ok(()), "{} = {v} refused", err.name());
        }
        for &v in bad {
            let mut s = Settings::default();
            *field(&mut s) = v;
            assert_eq!(s.check(), Err(err), "{} = {v} accepted", err.name());
        }
    }
    // The first bad setting, in the order of the table, is named.
    let s = Settings {
        failure_ratio: 0.0,
        half_open_calls: 0.0,
        ..Settings::default()
    };
    assert_eq!(s.check(), Err(SettingError::FailureRatio));
    let s = Settings {
        break_duration: -1.0,
        half_open_calls: 0.0,
        ..Settings::default()
    };
    assert_eq!(s.check(), Err(SettingError::BreakDuration));
    // Names and what each must be, as the host's errors quote them.
    let names: Vec<_> = [
        SettingError::FailureRatio,
        SettingError::MinimumThroughput,
        SettingError::SamplingDuration,
        SettingError::ConsecutiveFailures,
        SettingError::BreakDuration,
        SettingError::HalfOpenCalls,
    ]
    .iter()
    .map(|e| (e.name(), e.expected()))
    .collect();
    assert_eq!(
        names,
        [
            ("failureRatio", "a number > 0 and <= 1"),
            ("minimumThroughput", "an integer >= 1"),
            ("samplingDuration", "a finite number > 0"),
            ("consecutiveFailures", "an integer >= 1"),
            ("breakDuration", "a finite number >= 0 or a function"),
            ("halfOpenCalls", "an integer >= 1"),
        ]
    );
}

#[test]
fn settings_set_stages_each_option_and_a_given_zero_is_no_unset() {
    // The host stages the options it was given with `set`, in SETTINGS
    // order, then checks them.
    assert_eq!(
        SETTINGS,
        [
            SettingError::FailureRatio,
            SettingError::MinimumThroughput,
            SettingError::SamplingDuration,
            SettingError::ConsecutiveFailures,
            SettingError::BreakDuration,
            SettingError::HalfOpenCalls,
        ]
    );
    let mut s = Settings::default();
    for (which, v) in SETTINGS
        .into_iter()
        .zip([0.25, 4.0, 1000.0, 2.0, 700.0, 3.0])
    {
        s.set(which, v);
    }
    assert_eq!(s.check(), Ok(()));
    assert_eq!(
        (
            s.failure_ratio,
            s.minimum_throughput,
            s.sampling_duration,
            s.consecutive_failures,
            s.break_duration,
            s.half_open_calls
        ),
        (0.25, 4.0, 1000.0, 2.0, 700.0, 3.0)
    );
    // `consecutiveFailures: 0` is given, not left out: an integer >= 1 is
    // wanted (0 in the settings means "not set").
    let mut s = Settings::default();
    s.set(SettingError::ConsecutiveFailures, 0.0);
    assert_eq!(s.check(), Err(SettingError::ConsecutiveFailures));
    s.set(SettingError::ConsecutiveFailures, -0.0);
    assert_eq!(s.check(), Err(SettingError::ConsecutiveFailures));
    // 0 is a valid break.
    let mut s = Settings::default();
    s.set(SettingError::BreakDuration, 0.0);
    assert_eq!(s.check(), Ok(()));
}

#[test]
fn states_and_reasons_have_their_javascript_names() {
    let states: Vec<_> = [Closed, Open, HalfOpen, Isolated]
        .iter()
        .map(|s| s.name())
        .collect();
    assert_eq!(states, ["closed", "open", "half-open", "isolated"]);
    let whys: Vec<_> = [
        Why::Tripped,
        Why::BreakEnded,
        Why::ProbeFailed,
        Why::ProbeSucceeded,
        Why::Isolated,
        Why::Reset,
    ]
    .iter()
    .map(|w| w.name())
    .collect();
    assert_eq!(
        whys,
        [
            "tripped",
            "break-ended",
            "probe-failed",
            "probe-succeeded",
            "isolated",
            "reset"
        ]
    );
    assert_eq!(GiveUp::CircuitOpen.name(), "circuit-open");
    assert_eq!(
        GiveUp::from_code(GiveUp::CircuitOpen as u32),
        Some(GiveUp::CircuitOpen)
    );
}

// ----- a machine and a breaker, as the host drives them -----

/// A breaker shared by retryers, and every transition it made.
struct Shared {
    breaker: Breaker,
    transitions: Vec<Transition>,
}

type SharedBreaker = Rc<RefCell<Shared>>;

fn shared(b: Breaker) -> SharedBreaker {
    Rc::new(RefCell::new(Shared {
        breaker: b,
        transitions: Vec::new(),
    }))
}

/// A fake host (`common::Host`) whose retryer has a `breaker`: at each
/// `Invoke` it asks for a permit and calls the function only with one;
/// a refusal goes back to the machine at once. Settling an attempt records
/// its outcome, a `TimeOut` records a failure, and an `AbortAttempt` or
/// `CancelAttempt` gives the permit back.
struct Rig {
    h: Host,
    b: SharedBreaker,
    key: &'static str,
    /// Permits held by attempts that run.
    permits: BTreeMap<(u32, u32), Permit>,
    /// Attempts whose function was called.
    called: Vec<(u32, u32)>,
    /// Refused attempts and their hints.
    refused: Vec<(u32, u32, f64)>,
}

impl Rig {
    fn new(p: Policy, b: &SharedBreaker) -> Rig {
        Rig::with_budgets(p, b, Rc::new(RefCell::new(Vec::new())))
    }

    fn with_budgets(p: Policy, b: &SharedBreaker, budgets: Rc<RefCell<Vec<Budget>>>) -> Rig {
        assert!(p.breaker, "the policy has no breaker");
        Rig {
            h: Host::with_budgets(p, budgets),
            b: Rc::clone(b),
            key: "",
            permits: BTreeMap::new(),
            called: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Pops everything, carrying effects out as the host does.
    fn pump(&mut self) -> Vec<Effect> {
        let mut out = Vec::new();
        while let Some(e) = self.h.pop() {
            out.push(e);
            let now = self.h.now;
            let mut s = self.b.borrow_mut();
            let Shared {
                breaker,
                transitions,
            } = &mut *s;
            match e {
                Effect::Invoke { gen, attempt } => {
                    let (r, t) = breaker.permit(self.key, now);
                    transitions.extend(t);
                    match r {
                        Ok(p) => {
                            self.permits.insert((gen, attempt), p);
                            self.called.push((gen, attempt));
                        }
                        Err(ms) => {
                            drop(s);
                            self.refused.push((gen, attempt, ms));
                            let mut b = self.h.budgets.borrow_mut();
                            self.h.m.attempt_refused(gen, attempt, ms, now, &mut *b);
                        }
                    }
                }
                Effect::TimeOut { gen, attempt } => {
                    if let Some(p) = self.permits.remove(&(gen, attempt)) {
                        transitions.extend(breaker.record(p, false, now));
                    }
                }
                Effect::AbortAttempt { gen, attempt, .. }
                | Effect::CancelAttempt { gen, attempt } => {
                    if let Some(p) = self.permits.remove(&(gen, attempt)) {
                        breaker.release(p);
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn execute(&mut self) -> u32 {
        self.h.execute()
    }

    fn settle(&mut self, gen: u32, attempt: u32, ok: bool) {
        if let Some(p) = self.permits.remove(&(gen, attempt)) {
            let mut s = self.b.borrow_mut();
            let t = s.breaker.record(p, ok, self.h.now);
            s.transitions.extend(t);
        }
        if ok {
            self.h.ok(gen, attempt);
        } else {
            self.h.err(gen, attempt);
        }
    }

    fn ok(&mut self, gen: u32, attempt: u32) {
        self.settle(gen, attempt, true);
    }

    fn err(&mut self, gen: u32, attempt: u32) {
        self.settle(gen, attempt, false);
    }

    /// The attempt rejected with an `AbortError`: a cancellation.
    fn abort_error(&mut self, gen: u32, attempt: u32) {
        if let Some(p) = self.permits.remove(&(gen, attempt)) {
            self.b.borrow_mut().breaker.release(p);
        }
        self.h.abort_error(gen, attempt);
    }

    /// Moves the clock on by `ms`, firing due timers in order and pumping
    /// after each.
    fn advance(&mut self, ms: f64) -> Vec<Effect> {
        let until = self.h.now + ms;
        let mut out = self.pump();
        while let Some(l) = self.h.next_due(until) {
            self.h.wheel.retain(|x| x.timer != l.timer);
            self.h.now = self.h.now.max(l.due);
            self.h.fire(l.timer);
            out.extend(self.pump());
        }
        self.h.now = until;
        out
    }

    fn state(&self) -> CircuitState {
        self.b.borrow().breaker.state(self.key, self.h.now)
    }

    /// The `onGiveUp` reasons popped so far.
    fn give_ups(&self) -> Vec<GiveUp> {
        self.h
            .log
            .iter()
            .filter_map(|e| match *e {
                Effect::Call {
                    cb: Cb::GiveUp,
                    arg,
                    ..
                } => GiveUp::from_code(arg),
                _ => None,
            })
            .collect()
    }

    /// Whether the machine asked for the value of `what`.
    fn asked(&self, what: Eval) -> bool {
        self.h
            .log
            .iter()
            .any(|e| matches!(*e, Effect::Eval { what: w, .. } if w == what))
    }
}

/// `opts` plus `breaker` and `onGiveUp`.
fn with_breaker(opts: &[(Opt, Raw<'_>)]) -> Policy {
    let mut all = vec![(Opt::Breaker, Raw::Breaker), (Opt::OnGiveUp, Raw::Function)];
    all.extend_from_slice(opts);
    policy(&all)
}

/// `opts` plus `breaker` and every lifecycle callback.
fn with_breaker_all(opts: &[(Opt, Raw<'_>)]) -> Policy {
    let mut all = vec![(Opt::Breaker, Raw::Breaker)];
    all.extend_from_slice(opts);
    policy_all_cbs(&all)
}

/// A breaker tripped at 0 ms by one failure, open for `ms`.
fn open_for(ms: f64, f: impl FnOnce(&mut Settings)) -> SharedBreaker {
    let mut b = breaker(|s| {
        trips_at_once(s);
        s.break_duration = ms;
        f(s);
    });
    one(&mut b, "", false, 0.0).expect("tripped");
    shared(b)
}

#[test]
fn a_refused_attempt_calls_nothing_and_costs_the_budget_nothing() {
    let budgets = Rc::new(RefCell::new(vec![Budget::new(10.0, 0.1).unwrap()]));
    let b = open_for(1000.0, |_| {});
    let mut r = Rig::with_budgets(
        with_breaker(&[
            (Opt::Budget, Raw::Budget(0)),
            (Opt::MaxAttempts, Raw::Number(3.0)),
            (Opt::BaseWait, Raw::Number(10.0)),
        ]),
        &b,
        Rc::clone(&budgets),
    );
    let g = r.execute();
    // Refused: the hint is the rest of the break, and the wait is that.
    assert_eq!(quiet(&r.pump()), vec![inv(g, 1), wait(g, 1000.0)]);
    assert_eq!(r.refused, vec![(g, 1, 1000.0)]);
    assert!(r.called.is_empty());
    assert!(!r.h.m.is_running(g, 1), "a refused attempt runs");
    assert_eq!(budgets.borrow()[0].tokens(), 10.0);
    assert!(r.h.state().has_last_error, "a refusal is a failed attempt");
    assert_eq!(r.h.state().current_attempt, 2);
    // The break is over: attempt 2 is the probe; it fails, and that one
    // costs a token.
    assert_eq!(quiet(&r.advance(1000.0)), vec![inv(g, 2)]);
    assert_eq!(r.called, vec![(g, 2)]);
    assert_eq!(r.state(), HalfOpen);
    r.err(g, 2);
    // An ordinary failure: the backoff (10 ms × 2).
    assert_eq!(quiet(&r.pump()), vec![wait(g, 20.0)]);
    assert_eq!(budgets.borrow()[0].tokens(), 9.0);
    assert_eq!(r.state(), Open);
    // Attempt 3 is refused again, no attempt is left: 'circuit-open'.
    assert_eq!(
        quiet(&r.advance(20.0)),
        vec![
            inv(g, 3),
            give_up(g, GiveUp::CircuitOpen),
            fin(g, Outcome::Reject)
        ]
    );
    assert_eq!(r.refused.len(), 2);
    assert_eq!(r.refused[1], (g, 3, 980.0));
    assert_eq!(budgets.borrow()[0].tokens(), 9.0);
    assert_eq!(r.called, vec![(g, 2)]);
    r.h.assert_quiet();
}

#[test]
fn the_wait_after_a_refusal_is_the_hint_not_the_backoff_nor_retry_after() {
    let b = open_for(700.0, |_| {});
    let mut r = Rig::new(
        with_breaker(&[
            (Opt::RetryAfter, Raw::Function),
            (Opt::BaseWait, Raw::Number(10.0)),
            (Opt::Jitter, Raw::Str("full")),
            (Opt::OnBackoff, Raw::Function),
        ]),
        &b,
    );
    let g = r.execute();
    // No Eval of the user's retryAfter: the refusal's hint is the wait.
    assert_eq!(
        quiet(&r.pump()),
        vec![
            inv(g, 1),
            Effect::Backoff {
                gen: g,
                attempt: 1,
                delay: 700.0,
                elapsed: 0.0
            },
            wait(g, 700.0),
        ]
    );
    assert!(!r.asked(Eval::RetryAfter));
    // The probe fails like any attempt: now the user's retryAfter is
    // asked, and without a hint the (jittered) backoff applies.
    r.advance(700.0);
    assert_eq!(r.called, vec![(g, 2)]);
    r.err(g, 2);
    assert_eq!(quiet(&r.pump()), vec![eval(g, Eval::RetryAfter, 2)]);
    r.h.provide(g, Provided::Nothing);
    let out = r.pump();
    let d = waits(&out);
    assert_eq!(d.len(), 1);
    assert!((0.0..=20.0).contains(&d[0]), "{d:?}");

    // Delay functions (a custom backoff, a dynamic baseWait or maxWait)
    // are not asked: the hint is the wait, and a function that throws
    // could otherwise end a flow over a delay it would not use.
    for delay_fn in [Opt::Backoff, Opt::BaseWait, Opt::MaxWait] {
        let b = open_for(300.0, |_| {});
        let mut r = Rig::new(
            with_breaker(&[(delay_fn, Raw::Function), (Opt::RetryAfter, Raw::Function)]),
            &b,
        );
        let g = r.execute();
        assert_eq!(
            quiet(&r.pump()),
            vec![inv(g, 1), wait(g, 300.0)],
            "{delay_fn:?}"
        );
        assert!(!r.h.log.iter().any(|e| matches!(e, Effect::Eval { .. })));
    }

    // Intervals, too, give way to the hint.
    let b = open_for(300.0, |_| {});
    let mut r = Rig::new(with_intervals(with_breaker(&[]), &[1.0, 2.0]), &b);
    let g = r.execute();
    assert_eq!(quiet(&r.pump()), vec![inv(g, 1), wait(g, 300.0)]);
}

#[test]
fn give_up_with_circuit_open_when_no_attempt_is_left() {
    let b = open_for(100.0, |_| {});
    let mut r = Rig::new(
        with_breaker_all(&[(Opt::MaxAttempts, Raw::Number(2.0))]),
        &b,
    );
    let g = r.execute();
    assert_eq!(
        quiet(&r.pump()),
        vec![
            inv(g, 1),
            call(g, Cb::Error),
            retry(g, 1),
            call(g, Cb::Settled),
            wait(g, 100.0),
        ]
    );
    // Another retryer takes the only probe as the break ends.
    r.h.now = 100.0;
    let probe = first_probe(&mut b.borrow_mut().breaker, "", 100.0);
    // Attempt 2 is refused with the break as its hint; no attempt is left.
    assert_eq!(
        quiet(&r.advance(0.0)),
        vec![
            inv(g, 2),
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::CircuitOpen),
            call(g, Cb::Settled),
            // onError is set: throwOnError defaults to false.
            fin(g, Outcome::Undefined),
        ]
    );
    assert_eq!(r.refused, vec![(g, 1, 100.0), (g, 2, 100.0)]);
    assert!(r.called.is_empty());
    r.h.assert_quiet();
    assert!(b.borrow_mut().breaker.record(probe, true, 150.0).is_some());

    // maxAttempts 1 and throwOnError false: given up at once, resolved.
    let b = open_for(100.0, |_| {});
    let mut r = Rig::new(
        with_breaker(&[
            (Opt::MaxAttempts, Raw::Number(1.0)),
            (Opt::ThrowOnError, Raw::Bool(false)),
        ]),
        &b,
    );
    let g = r.execute();
    assert_eq!(
        quiet(&r.pump()),
        vec![
            inv(g, 1),
            give_up(g, GiveUp::CircuitOpen),
            fin(g, Outcome::Undefined)
        ]
    );
}

#[test]
fn give_up_with_circuit_open_when_the_hint_crosses_the_total_deadline() {
    // The hint would end after maxTotalExecutionTime: no wait, no total
    // timeout, a give-up at once.
    let b = open_for(5000.0, |_| {});
    let mut r = Rig::new(
        with_breaker(&[(Opt::MaxTotalExecutionTime, Raw::Number(1000.0))]),
        &b,
    );
    let g = r.execute();
    assert_eq!(
        quiet(&r.pump()),
        vec![
            start(g, Timer::Total, 1000.0),
            inv(g, 1),
            clear(Timer::Total),
            give_up(g, GiveUp::CircuitOpen),
            fin(g, Outcome::Reject),
        ]
    );
    r.h.assert_quiet();

    // Ending exactly at the deadline crosses it; a millisecond before, the
    // flow waits.
    for (deadline, waits_for) in [(1000.0, None), (1001.0, Some(1000.0))] {
        let b = open_for(1000.0, |_| {});
        let mut r = Rig::new(
            with_breaker(&[(Opt::MaxTotalExecutionTime, Raw::Number(deadline))]),
            &b,
        );
        let g = r.execute();
        let out = r.pump();
        match waits_for {
            Some(ms) => assert_eq!(waits(&out), vec![ms]),
            None => assert_eq!(r.give_ups(), vec![GiveUp::CircuitOpen], "{out:?}"),
        }
        if waits_for.is_some() {
            // The probe goes at the end of the wait, inside the deadline.
            r.advance(1000.0);
            assert_eq!(r.called, vec![(g, 2)]);
        }
    }
}

#[test]
fn give_up_with_circuit_open_when_the_circuit_is_isolated() {
    let mut bk = breaker(|_| {});
    bk.isolate("", 0.0);
    let b = shared(bk);
    let mut r = Rig::new(with_breaker(&[(Opt::MaxAttempts, Raw::Number(10.0))]), &b);
    let g = r.execute();
    assert_eq!(
        quiet(&r.pump()),
        vec![
            inv(g, 1),
            give_up(g, GiveUp::CircuitOpen),
            fin(g, Outcome::Reject)
        ]
    );
    assert_eq!(r.refused, vec![(g, 1, INF)]);
    r.h.assert_quiet();

    // With Infinity attempts (and a total deadline) too.
    let mut r = Rig::new(
        with_breaker(&[
            (Opt::MaxAttempts, Raw::Number(INF)),
            (Opt::MaxTotalExecutionTime, Raw::Number(60_000.0)),
        ]),
        &b,
    );
    let g = r.execute();
    r.pump();
    assert_eq!(r.give_ups(), vec![GiveUp::CircuitOpen]);
    assert_eq!(r.h.finished.get(&g), Some(&Outcome::Reject));
}

#[test]
fn should_retry_sees_a_refusal_and_refusing_it_still_reports_circuit_open() {
    let b = open_for(100.0, |_| {});
    let mut r = Rig::new(with_breaker(&[(Opt::ShouldRetry, Raw::Function)]), &b);
    let g = r.execute();
    assert_eq!(
        quiet(&r.pump()),
        vec![inv(g, 1), eval(g, Eval::ShouldRetry, 1)]
    );
    r.h.provide(g, Provided::Bool(false));
    assert_eq!(
        quiet(&r.pump()),
        vec![give_up(g, GiveUp::CircuitOpen), fin(g, Outcome::Reject)]
    );

    // Allowed: the hint is slept.
    let b = open_for(100.0, |_| {});
    let mut r = Rig::new(with_breaker(&[(Opt::ShouldRetry, Raw::Function)]), &b);
    let g = r.execute();
    r.pump();
    r.h.provide(g, Provided::Bool(true));
    assert_eq!(quiet(&r.pump()), vec![wait(g, 100.0)]);
}

#[test]
fn a_dynamic_max_attempts_is_asked_about_a_refusal() {
    let b = open_for(100.0, |_| {});
    let mut r = Rig::new(with_breaker(&[(Opt::MaxAttempts, Raw::Function)]), &b);
    let g = r.execute();
    assert_eq!(
        quiet(&r.pump()),
        vec![inv(g, 1), eval(g, Eval::MaxAttempts, 1)]
    );
    r.h.provide(g, Provided::Number(1.0));
    assert_eq!(
        quiet(&r.pump()),
        vec![give_up(g, GiveUp::CircuitOpen), fin(g, Outcome::Reject)]
    );
}

#[test]
fn a_flow_passing_through_keeps_nested() {
    let b = open_for(100.0, |_| {});
    let mut r = Rig::new(with_breaker(&[(Opt::ThrowOnError, Raw::Bool(false))]), &b);
    // Inside an attempt of a retryer that forbids inner retries.
    let g = r.h.m.execute_within(0.0, false, Some(true), true);
    assert_eq!(
        quiet(&r.pump()),
        vec![
            inv(g, 1),
            give_up(g, GiveUp::Nested),
            fin(g, Outcome::Reject)
        ]
    );
    assert!(r.called.is_empty());
}

#[test]
fn a_later_failure_reports_its_own_reason() {
    // Attempt 1 refused, attempt 2 (the probe) fails: attempts-exhausted.
    let b = open_for(100.0, |_| {});
    let mut r = Rig::new(with_breaker(&[(Opt::MaxAttempts, Raw::Number(2.0))]), &b);
    let g = r.execute();
    r.pump();
    r.advance(100.0);
    assert_eq!(r.called, vec![(g, 2)]);
    r.err(g, 2);
    assert_eq!(
        quiet(&r.pump()),
        vec![
            give_up(g, GiveUp::AttemptsExhausted),
            fin(g, Outcome::Reject)
        ]
    );
    assert_eq!(r.state(), Open, "the failed probe reopened the circuit");

    // Attempt 2 runs past maxExecutionTime: execution-timeout, and the
    // timeout is the probe's failure.
    let b = open_for(100.0, |_| {});
    let mut r = Rig::new(
        with_breaker(&[(Opt::MaxExecutionTime, Raw::Number(50.0))]),
        &b,
    );
    let g = r.execute();
    r.pump();
    r.advance(100.0);
    assert_eq!(r.called, vec![(g, 2)]);
    r.advance(50.0);
    assert_eq!(r.give_ups(), vec![GiveUp::ExecutionTimeout]);
    assert_eq!(r.state(), Open);
    assert!(r.permits.is_empty());
    let t = b.borrow().transitions.clone();
    assert_eq!(
        t.iter().map(|t| t.why).collect::<Vec<_>>(),
        [Why::BreakEnded, Why::ProbeFailed]
    );

    // Attempt 2 is refused, attempt 3 fails with the budget empty:
    // budget-exhausted, not circuit-open.
    let budgets = Rc::new(RefCell::new(vec![Budget::new(2.0, 0.1).unwrap()]));
    let b = open_for(100.0, |s| s.half_open_calls = 1.0);
    let mut r = Rig::with_budgets(
        with_breaker(&[
            (Opt::Budget, Raw::Budget(0)),
            (Opt::MaxAttempts, Raw::Number(5.0)),
        ]),
        &b,
        budgets,
    );
    let g = r.execute();
    r.pump();
    r.h.now = 100.0;
    let other = first_probe(&mut b.borrow_mut().breaker, "", 100.0);
    r.advance(0.0);
    assert_eq!(r.refused.len(), 2, "the probe is taken");
    b.borrow_mut().breaker.release(other);
    r.advance(100.0);
    assert_eq!(r.called, vec![(g, 3)]);
    r.err(g, 3);
    r.pump();
    assert_eq!(r.give_ups(), vec![GiveUp::BudgetExhausted]);
}

#[test]
fn a_stop_after_a_refused_attempt_reports_circuit_open() {
    // The last failure is a refusal; the host's beforeRetry hook stops the
    // flow at the end of the wait: the final error is the refusal.
    let b = open_for(100.0, |_| {});
    let mut p = with_breaker(&[]);
    p.before_retry = true;
    let mut r = Rig::new(p, &b);
    let g = r.execute();
    r.pump();
    assert_eq!(
        quiet(&r.advance(100.0)),
        vec![Effect::Gate { gen: g, attempt: 2 }]
    );
    r.h.answer_gate(g, 2, Provided::Bool(false));
    assert_eq!(
        quiet(&r.pump()),
        vec![give_up(g, GiveUp::CircuitOpen), fin(g, Outcome::Reject)]
    );
    // The probe was never asked for: the circuit still has it.
    assert!(r.called.is_empty());
    first_probe(&mut b.borrow_mut().breaker, "", 100.0);
}

#[test]
fn timeouts_are_recorded_and_aborts_give_the_probe_back() {
    // A timed-out attempt is a failure for the circuit: it trips, the next
    // attempt is refused, the one after is the probe.
    let b = shared(breaker(|s| {
        trips_at_once(s);
        s.break_duration = 1000.0;
    }));
    let mut r = Rig::new(
        with_breaker(&[
            (Opt::MaxExecutionTime, Raw::Number(50.0)),
            (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
            (Opt::BaseWait, Raw::Number(10.0)),
            (Opt::MaxAttempts, Raw::Number(4.0)),
        ]),
        &b,
    );
    let g = r.execute();
    r.pump();
    r.advance(50.0);
    assert_eq!(r.state(), Open);
    // Attempt 2, at 60 ms, is refused: 990 ms of break left.
    r.advance(10.0);
    assert_eq!(r.refused, vec![(g, 2, 990.0)]);
    assert_eq!(waits(&r.h.log), vec![10.0, 990.0]);
    r.advance(990.0);
    assert_eq!(r.called, vec![(g, 1), (g, 3)]);
    assert_eq!(r.state(), HalfOpen);
    // The probe's flow is aborted: its permit goes back, and another
    // retryer gets the probe.
    r.h.abort();
    let out = r.pump();
    assert!(
        out.contains(&abort_att(g, 3, AbortReason::Manual)),
        "{out:?}"
    );
    assert!(r.permits.is_empty());
    let mut other = Rig::new(with_breaker(&[]), &b);
    other.h.now = r.h.now;
    let g2 = other.execute();
    other.pump();
    assert_eq!(other.called, vec![(g2, 1)]);
    // A new execution cancels it in turn.
    let g3 = other.execute();
    other.pump();
    assert_eq!(other.called, vec![(g2, 1), (g3, 1)], "the probe came back");
    // An AbortError is a cancellation too.
    other.abort_error(g3, 1);
    other.pump();
    assert!(other.permits.is_empty());
    let g4 = other.execute();
    other.pump();
    other.ok(g4, 1);
    other.pump();
    assert_eq!(other.state(), Closed);
}

#[test]
fn refusals_of_an_ended_flow_do_not_reach_the_next() {
    // A refusal, then abort() during its wait; the next flow fails
    // normally and asks the user's retryAfter.
    let b = open_for(500.0, |_| {});
    let mut r = Rig::new(with_breaker(&[(Opt::RetryAfter, Raw::Function)]), &b);
    let g = r.execute();
    r.pump();
    r.h.abort();
    r.pump();
    r.advance(500.0);
    let g2 = r.execute();
    r.pump();
    assert_eq!(r.called, vec![(g2, 1)]);
    r.err(g2, 1);
    assert_eq!(quiet(&r.pump()), vec![eval(g2, Eval::RetryAfter, 1)]);
    assert_ne!(g, g2);
}

// ----- hedged flows -----

fn hedged(ms: f64, max: f64, opts: &[(Opt, Raw<'_>)]) -> Policy {
    let mut all = vec![
        (Opt::Hedge, Raw::Number(ms)),
        (Opt::MaxAttempts, Raw::Number(max)),
    ];
    all.extend_from_slice(opts);
    with_breaker_all(&all)
}

#[test]
fn a_hedged_refusal_with_no_attempt_left_waits_for_the_running_ones() {
    // Attempt 1 is the half-open circuit's only probe; attempt 2, at its
    // hedge time, is refused, and it was the last: the flow waits for 1.
    let b = open_for(1000.0, |_| {});
    let mut r = Rig::new(hedged(50.0, 2.0, &[]), &b);
    r.h.now = 1000.0;
    let g = r.execute();
    r.pump();
    assert_eq!(r.called, vec![(g, 1)]);
    let out = quiet(&r.advance(50.0));
    assert_eq!(
        out,
        vec![
            Effect::Hedge {
                gen: g,
                attempt: 2,
                running: 1,
                elapsed: 50.0
            },
            inv(g, 2),
            call(g, Cb::Error),
            call(g, Cb::Settled),
        ]
    );
    assert_eq!(r.refused, vec![(g, 2, 1000.0)]);
    assert!(r.h.m.is_active());
    assert!(r.give_ups().is_empty());
    // Attempt 1 succeeds: the flow succeeds, and the circuit closes.
    r.ok(g, 1);
    assert_eq!(
        quiet(&r.pump()),
        vec![
            call(g, Cb::Success),
            call(g, Cb::Settled),
            fin(g, Outcome::Result)
        ]
    );
    assert_eq!(r.state(), Closed);
    r.h.assert_quiet();

    // The same, but attempt 1 fails last: its own reason.
    let b = open_for(1000.0, |_| {});
    let mut r = Rig::new(hedged(50.0, 2.0, &[]), &b);
    r.h.now = 1000.0;
    let g = r.execute();
    r.pump();
    r.advance(50.0);
    r.err(g, 1);
    r.pump();
    assert_eq!(r.give_ups(), vec![GiveUp::AttemptsExhausted]);
    assert!(r.permits.is_empty());
    r.h.assert_quiet();
}

#[test]
fn a_hedged_refusal_of_an_isolated_circuit_waits_for_the_running_ones() {
    let b = shared(breaker(|_| {}));
    let mut r = Rig::new(hedged(50.0, 2.0, &[]), &b);
    let g = r.execute();
    r.pump();
    b.borrow_mut().breaker.isolate("", 10.0);
    // Attempt 2 is refused with Infinity, but attempt 1 still runs.
    r.advance(50.0);
    assert_eq!(r.refused, vec![(g, 2, INF)]);
    assert!(r.give_ups().is_empty());
    assert!(r.h.m.is_running(g, 1));
    r.advance(10_000.0);
    assert!(r.h.m.is_running(g, 1));
    // Attempt 1 fails last: its own reason.
    r.err(g, 1);
    r.pump();
    assert_eq!(r.give_ups(), vec![GiveUp::AttemptsExhausted]);
    assert!(r.h.finished.contains_key(&g));
    assert!(r.permits.is_empty());
    r.h.assert_quiet();
}

#[test]
fn a_hedged_flow_with_nothing_running_gives_up_on_a_refusal_at_once() {
    let mut bk = breaker(|_| {});
    bk.isolate("", 0.0);
    let b = shared(bk);
    let mut r = Rig::new(hedged(50.0, 3.0, &[]), &b);
    let g = r.execute();
    let out = quiet(&r.pump());
    assert_eq!(
        out,
        vec![
            wait(g, 50.0),
            inv(g, 1),
            clear(Timer::Wait),
            call(g, Cb::Error),
            call(g, Cb::LastError),
            give_up(g, GiveUp::CircuitOpen),
            call(g, Cb::Settled),
            fin(g, Outcome::Undefined),
        ]
    );
    r.h.assert_quiet();
}

#[test]
fn a_hedged_refusal_holds_the_next_attempt_until_its_hint_ends() {
    // A half-open circuit whose probe is attempt 1: attempt 2 is refused
    // with the break (400 ms) as its hint, and attempt 3 starts when the
    // hint ends, not at its hedge time.
    let b = open_for(400.0, |_| {});
    let mut r = Rig::new(hedged(50.0, 3.0, &[]), &b);
    r.h.now = 400.0;
    let g = r.execute();
    r.pump();
    r.advance(50.0);
    assert_eq!(r.refused, vec![(g, 2, 400.0)]);
    // Nothing starts at 500, the hedge time.
    r.advance(100.0);
    assert_eq!(r.h.invoked.len(), 2);
    r.advance(299.0);
    assert_eq!(r.h.invoked.len(), 2);
    r.advance(1.0);
    assert_eq!(r.h.invoked.len(), 3, "{:?}", r.h.log);
    // Still refused: attempt 1 holds the probe. It was the last attempt:
    // the flow waits for attempt 1.
    assert_eq!(r.refused.len(), 2);
    r.ok(g, 1);
    r.pump();
    assert_eq!(r.h.finished.get(&g), Some(&Outcome::Result));
    assert!(r.permits.is_empty());
}

#[test]
fn a_hedged_winner_releases_the_losers_probes() {
    // halfOpenCalls 2: attempts 1 and 2 are both probes; 2 wins, 1 is
    // cancelled and gives its permit back, so the circuit needs one more
    // probe to close.
    let b = open_for(100.0, |s| s.half_open_calls = 2.0);
    let mut r = Rig::new(hedged(10.0, 2.0, &[]), &b);
    r.h.now = 100.0;
    let g = r.execute();
    r.pump();
    r.advance(10.0);
    assert_eq!(r.called, vec![(g, 1), (g, 2)]);
    r.ok(g, 2);
    let out = r.pump();
    assert!(out.contains(&cancel(g, 1)), "{out:?}");
    assert_eq!(r.state(), HalfOpen);
    let mut other = Rig::new(with_breaker(&[]), &b);
    other.h.now = r.h.now;
    let g2 = other.execute();
    other.pump();
    other.ok(g2, 1);
    other.pump();
    assert_eq!(other.state(), Closed);
}

#[test]
fn a_hedged_refusal_that_should_retry_refuses_ends_the_flow_at_once() {
    // SPEC §2c rule 3: a failure shouldRetry refuses ends the flow at once
    // and the running attempts are aborted; §2e rule 3: its reason is
    // 'circuit-open', since the final error is the refusal.
    let b = open_for(1000.0, |_| {});
    let mut r = Rig::new(hedged(50.0, 3.0, &[(Opt::ShouldRetry, Raw::Function)]), &b);
    r.h.now = 1000.0;
    let g = r.execute();
    r.pump();
    r.advance(50.0);
    assert_eq!(r.refused, vec![(g, 2, 1000.0)]);
    r.h.provide(g, Provided::Bool(false));
    let out = quiet(&r.pump());
    assert!(out.contains(&cancel(g, 1)), "attempt 1 still runs: {out:?}");
    assert_eq!(r.give_ups(), vec![GiveUp::CircuitOpen]);
    assert!(r.h.finished.contains_key(&g));
}

#[test]
fn a_hedged_circuit_open_verdict_starts_no_further_attempt() {
    // SPEC §2e rule 3: a refusal with an Infinity hint gives up at once,
    // after the running attempts (as a budget that refused: §2c rule 5).
    // Attempt 3 must not start at its hedge time: were the circuit reset
    // meanwhile, it would call the function of a flow that gave up.
    let b = shared(breaker(|_| {}));
    let mut r = Rig::new(hedged(50.0, 3.0, &[]), &b);
    let g = r.execute();
    r.pump();
    b.borrow_mut().breaker.isolate("", 10.0);
    r.advance(50.0);
    assert_eq!(r.refused, vec![(g, 2, INF)]);
    b.borrow_mut().breaker.reset("", 60.0);
    r.advance(10_000.0);
    assert_eq!(r.h.invoked, vec![(g, 1), (g, 2)], "attempt 3 started");
}

#[test]
fn a_hedged_refusal_during_a_start_decision_is_kept() {
    // With `maxAttempts` a function, a hedged flow asks it after each
    // start (when the next attempt starts). Attempt 1 is refused before
    // that answer comes: its refusal must reach the decision about attempt
    // 1's failure, not be taken by the start's decision (then the failure
    // would be decided as an ordinary one: the budget would pay for it,
    // and the flow would go on to attempt 2 instead of giving up with
    // 'circuit-open' on an Infinity hint).
    let budgets = Rc::new(RefCell::new(vec![Budget::new(10.0, 0.1).unwrap()]));
    let mut bk = breaker(|_| {});
    bk.isolate("", 0.0);
    let b = shared(bk);
    let mut r = Rig::with_budgets(
        with_breaker(&[
            (Opt::Hedge, Raw::Number(50.0)),
            (Opt::MaxAttempts, Raw::Function),
            (Opt::Budget, Raw::Budget(0)),
        ]),
        &b,
        Rc::clone(&budgets),
    );
    let g = r.execute();
    assert_eq!(
        quiet(&r.pump()),
        vec![inv(g, 1), eval(g, Eval::MaxAttempts, 1)]
    );
    assert_eq!(r.refused, vec![(g, 1, INF)]);
    // The start's question, then the failure's.
    r.h.provide(g, Provided::Number(3.0));
    r.pump();
    if r.h.m.is_active() {
        r.h.provide(g, Provided::Number(3.0));
        r.pump();
    }
    assert_eq!(
        budgets.borrow()[0].tokens(),
        10.0,
        "the refusal was paid for"
    );
    assert_eq!(r.h.invoked, vec![(g, 1)]);
    assert_eq!(r.give_ups(), vec![GiveUp::CircuitOpen]);
}

#[test]
fn a_zero_break_still_makes_a_refused_flow_wait() {
    // breakDuration 0: the circuit lets a probe through as soon as it is
    // asked, and refuses the others while the probe runs. Their hint is
    // not 0: a flow with Infinity attempts would ask again in the same
    // tick, be refused again, and never end.
    let b = open_for(0.0, |_| {});
    first_probe(&mut b.borrow_mut().breaker, "", 0.0);
    let hint = refused(&mut b.borrow_mut().breaker, "", 0.0);
    assert!(hint > 0.0, "a hint of {hint} ms");
    let mut r = Rig::new(
        with_breaker(&[
            (Opt::MaxAttempts, Raw::Number(INF)),
            (Opt::MaxTotalExecutionTime, Raw::Number(100.0)),
        ]),
        &b,
    );
    let g = r.execute();
    assert_eq!(
        quiet(&r.pump()),
        vec![start(g, Timer::Total, 100.0), inv(g, 1), wait(g, hint)]
    );
    // Asking again at every hint until the deadline: then 'circuit-open'.
    r.advance(100.0);
    assert!(r.refused.len() > 1);
    assert_eq!(r.give_ups(), vec![GiveUp::CircuitOpen]);
    r.h.assert_quiet();
}
