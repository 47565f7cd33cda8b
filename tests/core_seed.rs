//! `seed` in the core: the seed, not the module's entropy, decides the
//! jitter; a new seed restarts the sequence; machines sharing a policy keep
//! their own random state.

mod common;

use std::rc::Rc;

use common::*;

fn jittered(seed: Option<f64>, entropy: u64) -> Vec<f64> {
    let mut opts = vec![
        (Opt::Jitter, Raw::Number(0.5)),
        (Opt::MaxAttempts, Raw::Number(12.0)),
        (Opt::BaseWait, Raw::Number(100.0)),
    ];
    if let Some(s) = seed {
        opts.push((Opt::Seed, Raw::Number(s)));
    }
    let mut h = Host::new(policy(&opts));
    h.m = Machine::new(policy(&opts), entropy);
    h.execute();
    h.drain();
    h.fail_until_end(100)
}

#[test]
fn same_seed_same_delays_different_seeds_differ() {
    let a = jittered(Some(42.0), 1);
    let b = jittered(Some(42.0), 2);
    assert_eq!(a, b, "the seed, not the entropy, decides");
    assert_ne!(a, jittered(Some(43.0), 1));
    assert_eq!(jittered(Some(0.0), 1), jittered(Some(-0.0), 9));
    // Without a seed, the module's entropy decides.
    assert_ne!(jittered(None, 1), jittered(None, 2));
    assert_eq!(jittered(None, 5), jittered(None, 5));
}

#[test]
fn a_new_seed_restarts_the_sequence() {
    let opts = |s: f64| {
        policy(&[
            (Opt::Jitter, Raw::Number(0.5)),
            (Opt::MaxAttempts, Raw::Number(6.0)),
            (Opt::Seed, Raw::Number(s)),
        ])
    };
    let mut h = Host::new(opts(1.0));
    h.execute();
    h.drain();
    let first = h.fail_until_end(100);
    // The same seed again does not restart: the sequence goes on.
    h.set_policy(opts(1.0));
    h.execute();
    h.drain();
    let second = h.fail_until_end(100);
    assert_ne!(first, second);
    // A different seed restarts from that seed.
    h.set_policy(opts(7.0));
    h.execute();
    h.drain();
    let third = h.fail_until_end(100);
    let mut fresh = Host::new(opts(7.0));
    fresh.execute();
    fresh.drain();
    assert_eq!(third, fresh.fail_until_end(100));
}

#[test]
fn machines_sharing_a_policy_go_their_own_ways() {
    let opts = [
        (Opt::Jitter, Raw::Number(0.5)),
        (Opt::MaxAttempts, Raw::Number(6.0)),
        (Opt::Seed, Raw::Number(3.0)),
    ];
    let mut a = Host::new(policy(&opts));
    let mut b = Host::new(policy(&opts));
    b.m = Machine::new(a.m.shared_policy(), 99);
    assert!(Rc::ptr_eq(&a.m.shared_policy(), &b.m.shared_policy()));
    // A new policy for one leaves the other's as it was.
    a.set_policy(policy(&[(Opt::MaxAttempts, Raw::Number(2.0))]));
    assert_eq!(b.m.policy(), &policy(&opts));
    a.execute();
    a.drain();
    b.execute();
    b.drain();
    assert_eq!(a.fail_until_end(100).len(), 1);
    let mut fresh = Host::new(policy(&opts));
    fresh.execute();
    fresh.drain();
    assert_eq!(b.fail_until_end(100), fresh.fail_until_end(100));
}
