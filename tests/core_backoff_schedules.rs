//! The delays between attempts: `intervals`, `multiplier`, a custom
//! `backoff` function, `backoff: 'decorrelated'` over long runs, and
//! `jitter: 'full'`.

mod common;

use common::*;

fn delays_of(p: Policy) -> (Vec<f64>, usize) {
    let mut h = Host::new(p);
    h.execute();
    h.drain();
    let d = h.fail_until_end(100_000);
    h.assert_quiet();
    (d, h.invoked.len())
}

#[test]
fn intervals_give_explicit_delays_and_attempts() {
    let p = with_intervals(policy(&[]), &[100.0, 250.0, 50.0]);
    assert_eq!(delays_of(p), (vec![100.0, 250.0, 50.0], 4));
    let p = with_intervals(
        policy(&[(Opt::MaxAttempts, Raw::Number(2.0))]),
        &[100.0, 250.0, 50.0],
    );
    assert_eq!(delays_of(p), (vec![100.0], 2));
    let p = with_intervals(
        policy(&[(Opt::MaxAttempts, Raw::Number(10.0))]),
        &[100.0, 250.0],
    );
    assert_eq!(delays_of(p), (vec![100.0, 250.0], 3));
    let p = with_intervals(policy(&[]), &[]);
    assert_eq!(delays_of(p), (vec![], 1));
    let p = with_intervals(
        policy(&[
            (Opt::Backoff, Raw::Str("linear")),
            (Opt::BaseWait, Raw::Number(9.0)),
        ]),
        &[0.0, 30.0],
    );
    assert_eq!(delays_of(p), (vec![0.0, 30.0], 3));
}

#[test]
fn multiplier_sets_exponential_growth() {
    let p = policy(&[
        (Opt::Multiplier, Raw::Number(3.0)),
        (Opt::MaxAttempts, Raw::Number(4.0)),
    ]);
    assert_eq!(delays_of(p).0, vec![1000.0, 3000.0, 9000.0]);
    let p = policy(&[
        (Opt::Multiplier, Raw::Number(1.5)),
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::MaxAttempts, Raw::Number(4.0)),
    ]);
    assert_eq!(delays_of(p).0, vec![100.0, 150.0, 225.0]);
    // Only exponential backoff uses it.
    let p = policy(&[
        (Opt::Multiplier, Raw::Number(3.0)),
        (Opt::Backoff, Raw::Str("linear")),
        (Opt::BaseWait, Raw::Number(100.0)),
    ]);
    assert_eq!(delays_of(p).0, vec![100.0, 200.0]);
}

#[test]
fn custom_backoff_asks_for_each_delay() {
    let mut h = Host::new(policy(&[
        (Opt::Backoff, Raw::Function),
        (Opt::MaxAttempts, Raw::Number(4.0)),
        (Opt::MaxWait, Raw::Number(1000.0)),
    ]));
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    assert_eq!(h.drain(), vec![eval(g, Eval::Backoff, 1)]);
    h.provide(g, Provided::Number(123.0));
    assert_eq!(h.drain(), vec![wait(g, 123.0)]);
    h.advance(123.0);
    h.err(g, 2);
    assert_eq!(h.drain(), vec![eval(g, Eval::Backoff, 2)]);
    h.provide(g, Provided::Number(0.0));
    assert_eq!(h.drain(), vec![inv(g, 3)]);
    h.err(g, 3);
    assert_eq!(h.drain(), vec![eval(g, Eval::Backoff, 3)]);
    // maxWait caps the nominal delay.
    h.provide(g, Provided::Number(5000.0));
    assert_eq!(h.drain(), vec![wait(g, 1000.0)]);
}

#[test]
fn decorrelated_stays_between_base_and_three_times_the_previous_over_long_runs() {
    for seed in [1.0, 2.0, 99.0, 12345.0] {
        let (base, cap) = (100.0, 5000.0);
        let (d, attempts) = delays_of(policy(&[
            (Opt::Backoff, Raw::Str("decorrelated")),
            (Opt::BaseWait, Raw::Number(base)),
            (Opt::MaxWait, Raw::Number(cap)),
            (Opt::MaxAttempts, Raw::Number(500.0)),
            (Opt::Seed, Raw::Number(seed)),
        ]));
        assert_eq!(attempts, 500);
        assert_eq!(d.len(), 499);
        let mut prev = base;
        let mut rng = Rng::from_f64(seed);
        let mut hit_cap = 0;
        for (i, &x) in d.iter().enumerate() {
            let hi = cap.min((3.0 * prev).max(base));
            assert!(
                x >= base && x <= hi,
                "seed {seed} #{i}: {x} not in [{base}, {hi}] (prev {prev})"
            );
            assert_eq!(x, backoff::decorrelated(prev, base, cap, rng.unit()));
            hit_cap += usize::from(x == cap);
            prev = x;
        }
        assert!(hit_cap > 0, "long runs reach maxWait");
        let distinct: std::collections::BTreeSet<u64> = d.iter().map(|x| x.to_bits()).collect();
        assert!(distinct.len() > 100, "decorrelated delays spread");
    }
    // maxWait below baseWait: every delay is maxWait.
    let (d, _) = delays_of(policy(&[
        (Opt::Backoff, Raw::Str("decorrelated")),
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::MaxWait, Raw::Number(40.0)),
        (Opt::MaxAttempts, Raw::Number(20.0)),
    ]));
    assert!(d.iter().all(|&x| x == 40.0));
}

#[test]
fn full_jitter_is_uniform_between_zero_and_the_nominal_delay() {
    for seed in [0.0, 5.0, 77.0] {
        let (d, _) = delays_of(policy(&[
            (Opt::Jitter, Raw::Str("full")),
            (Opt::Backoff, Raw::Str("fixed")),
            (Opt::BaseWait, Raw::Number(1000.0)),
            (Opt::MaxAttempts, Raw::Number(400.0)),
            (Opt::Seed, Raw::Number(seed)),
        ]));
        let mut rng = Rng::from_f64(seed);
        for &x in &d {
            assert!((0.0..=1000.0).contains(&x), "{x}");
            assert_eq!(x, backoff::jitter(1000.0, Jitter::Full, rng.unit()));
        }
        assert!(d.iter().any(|&x| x < 100.0) && d.iter().any(|&x| x > 900.0));
    }
    // Full jitter of a capped exponential delay stays within the cap.
    let (d, _) = delays_of(policy(&[
        (Opt::Jitter, Raw::Str("full")),
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::MaxWait, Raw::Number(700.0)),
        (Opt::MaxAttempts, Raw::Number(50.0)),
        (Opt::Seed, Raw::Number(1.0)),
    ]));
    for (i, &x) in d.iter().enumerate() {
        let c = (100.0 * 2f64.powi(i as i32)).min(700.0);
        assert!(x >= 0.0 && x <= c, "#{i}: {x} > {c}");
    }
}
