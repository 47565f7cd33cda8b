//! Option validation in the core (SPEC §3 and the §2 options): every bad
//! value is a TypeError or RangeError naming the option, good values pass,
//! cross-option rules, `intervals` entries, `initialState` fields, unknown
//! option ids, `undefined` meaning not set, a refused value changing
//! nothing, and budget settings.

mod common;

use common::*;

fn refused(opt: Opt, raw: Raw<'_>) -> Option<(ErrorKind, Opt, Expect)> {
    try_policy(&[(opt, raw)])
        .err()
        .map(|e| (e.kind, e.opt, e.expect))
}

#[test]
fn every_bad_value_is_a_type_or_range_error_naming_the_option() {
    use ErrorKind::{Range as R, Type as T};
    use Expect as X;
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let n = Raw::Number;
    let cases: Vec<(Opt, Raw<'static>, ErrorKind, Expect)> = vec![
        (Opt::MaxAttempts, n(0.0), R, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(-1.0), R, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(2.5), R, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(nan), R, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(-inf), R, X::PositiveIntegerOrInfinity),
        (
            Opt::MaxAttempts,
            Raw::Str("3"),
            T,
            X::PositiveIntegerOrInfinity,
        ),
        (Opt::MaxAttempts, Raw::Null, T, X::PositiveIntegerOrInfinity),
        (Opt::MaxAttempts, n(inf), R, X::InfinityNeedsTotalDeadline),
        (Opt::BaseWait, n(-1.0), R, X::FiniteNonNegativeNumber),
        (Opt::BaseWait, n(nan), R, X::FiniteNonNegativeNumber),
        (Opt::BaseWait, n(inf), R, X::FiniteNonNegativeNumber),
        (Opt::BaseWait, Raw::Str("1s"), T, X::NumberOrFunction),
        (Opt::MaxWait, n(-1.0), R, X::NonNegativeNumber),
        (Opt::MaxWait, n(nan), R, X::NonNegativeNumber),
        (Opt::MaxWait, Raw::Bool(true), T, X::NumberOrFunction),
        (Opt::MaxExecutionTime, n(-1.0), R, X::NonNegativeNumber),
        (Opt::MaxExecutionTime, n(nan), R, X::NonNegativeNumber),
        (
            Opt::MaxExecutionTime,
            Raw::Function,
            T,
            X::NonNegativeNumber,
        ),
        (Opt::MaxTotalExecutionTime, n(-0.5), R, X::NonNegativeNumber),
        (Opt::MaxTotalExecutionTime, n(nan), R, X::NonNegativeNumber),
        (
            Opt::MaxTotalExecutionTime,
            Raw::Str("1"),
            T,
            X::NonNegativeNumber,
        ),
        (Opt::Jitter, n(-0.1), R, X::FractionOrFull),
        (Opt::Jitter, n(1.01), R, X::FractionOrFull),
        (Opt::Jitter, n(nan), R, X::FractionOrFull),
        (Opt::Jitter, Raw::Str("half"), R, X::FractionOrFull),
        (Opt::Jitter, Raw::Bool(true), T, X::FractionOrFull),
        (Opt::Backoff, Raw::Str("exp"), R, X::BackoffName),
        (Opt::Backoff, n(2.0), T, X::BackoffName),
        (
            Opt::ThrowOnError,
            Raw::Str("first"),
            R,
            X::ThrowOnErrorValue,
        ),
        (Opt::ThrowOnError, n(1.0), T, X::ThrowOnErrorValue),
        (Opt::Enabled, Raw::Str("yes"), T, X::BooleanOrFunction),
        (Opt::Enabled, n(1.0), T, X::BooleanOrFunction),
        (Opt::InitialState, n(1.0), T, X::Object),
        (Opt::InitialState, Raw::Null, T, X::Object),
        (Opt::Key, n(1.0), T, X::String),
        (Opt::ShouldRetry, Raw::Bool(true), T, X::Function),
        (Opt::ShouldRetry, Raw::Object, T, X::Function),
        (Opt::RetryAfter, n(1000.0), T, X::Function),
        (Opt::Intervals, Raw::Object, T, X::ArrayOfDelays),
        (Opt::Intervals, n(100.0), T, X::ArrayOfDelays),
        (Opt::Multiplier, n(0.0), R, X::PositiveFiniteNumber),
        (Opt::Multiplier, n(-2.0), R, X::PositiveFiniteNumber),
        (Opt::Multiplier, n(nan), R, X::PositiveFiniteNumber),
        (Opt::Multiplier, n(inf), R, X::PositiveFiniteNumber),
        (Opt::Multiplier, Raw::Str("2"), T, X::PositiveFiniteNumber),
        (Opt::Signal, Raw::Object, T, X::AbortSignal),
        (Opt::Signal, Raw::Bool(true), T, X::AbortSignal),
        (Opt::Budget, Raw::Object, T, X::RetryBudget),
        (Opt::Budget, n(0.0), T, X::RetryBudget),
        (Opt::Seed, n(nan), R, X::FiniteNumber),
        (Opt::Seed, n(inf), R, X::FiniteNumber),
        (Opt::Seed, Raw::Str("1"), T, X::FiniteNumber),
        (Opt::RetryOnExecutionTimeout, n(1.0), T, X::Boolean),
        (Opt::Hedge, n(-1.0), R, X::NonNegativeNumber),
        (Opt::Hedge, n(nan), R, X::NonNegativeNumber),
        (Opt::Hedge, n(-inf), R, X::NonNegativeNumber),
        (Opt::Hedge, Raw::Str("50"), T, X::NumberOrFunction),
        (Opt::Hedge, Raw::Bool(true), T, X::NumberOrFunction),
        (Opt::Hedge, Raw::Null, T, X::NumberOrFunction),
    ];
    for (opt, raw, kind, expect) in cases {
        let want = match expect {
            X::InfinityNeedsTotalDeadline => Some((kind, Opt::MaxAttempts, expect)),
            _ => Some((kind, opt, expect)),
        };
        assert_eq!(refused(opt, raw), want, "{opt:?} = {raw:?}");
    }
    // Every callback must be a function.
    for opt in callback_opts() {
        for raw in [
            Raw::Str("f"),
            Raw::Null,
            Raw::Object,
            n(1.0),
            Raw::Bool(true),
        ] {
            assert_eq!(
                refused(opt, raw),
                Some((T, opt, X::Function)),
                "{opt:?} = {raw:?}"
            );
        }
    }
    // Symbols, BigInts and the like are refused by every option.
    for opt in ALL_OPTS {
        let e = Policy::default().set(opt, Raw::Other).unwrap_err();
        assert_eq!((e.kind, e.opt), (T, opt), "{opt:?}");
    }
}

#[test]
fn good_values_are_accepted() {
    let n = Raw::Number;
    let ok: Vec<(Opt, Raw<'static>)> = vec![
        (Opt::MaxAttempts, n(1.0)),
        (Opt::MaxAttempts, Raw::Function),
        (Opt::BaseWait, n(0.0)),
        (Opt::BaseWait, n(-0.0)),
        (Opt::BaseWait, Raw::Function),
        (Opt::MaxWait, n(f64::INFINITY)),
        (Opt::MaxWait, n(0.0)),
        (Opt::MaxExecutionTime, n(0.0)),
        (Opt::MaxExecutionTime, n(f64::INFINITY)),
        (Opt::MaxTotalExecutionTime, n(f64::INFINITY)),
        (Opt::Jitter, n(0.0)),
        (Opt::Jitter, n(1.0)),
        (Opt::Jitter, Raw::Str("full")),
        (Opt::Backoff, Raw::Str("exponential")),
        (Opt::Backoff, Raw::Str("linear")),
        (Opt::Backoff, Raw::Str("fixed")),
        (Opt::Backoff, Raw::Str("decorrelated")),
        (Opt::Backoff, Raw::Function),
        (Opt::ThrowOnError, Raw::Bool(true)),
        (Opt::ThrowOnError, Raw::Bool(false)),
        (Opt::ThrowOnError, Raw::Str("last")),
        (Opt::Enabled, Raw::Bool(false)),
        (Opt::Enabled, Raw::Function),
        (Opt::InitialState, Raw::Object),
        (Opt::Key, Raw::Str("k")),
        (Opt::ShouldRetry, Raw::Function),
        (Opt::RetryAfter, Raw::Function),
        (Opt::Intervals, Raw::Array(0)),
        (Opt::Multiplier, n(0.5)),
        (Opt::Signal, Raw::Signal),
        (Opt::Budget, Raw::Budget(0)),
        (Opt::Seed, n(-3.25)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
        (Opt::Hedge, n(0.0)),
        (Opt::Hedge, n(50.0)),
        (Opt::Hedge, n(f64::INFINITY)),
        (Opt::Hedge, Raw::Function),
        (Opt::OnHedge, Raw::Function),
    ];
    for (opt, raw) in ok {
        assert!(try_policy(&[(opt, raw)]).is_ok(), "{opt:?} = {raw:?}");
    }
}

#[test]
fn cross_option_rules() {
    let inf = Raw::Number(f64::INFINITY);
    // Infinity attempts need a finite total deadline, in either order.
    assert!(try_policy(&[
        (Opt::MaxAttempts, inf),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0))
    ])
    .is_ok());
    assert!(try_policy(&[
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
        (Opt::MaxAttempts, inf)
    ])
    .is_ok());
    // Intervals with Infinity attempts.
    let mut p = policy(&[
        (Opt::MaxAttempts, inf),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
    ]);
    p.set(Opt::Intervals, Raw::Array(1)).unwrap();
    p.push_interval(0, Raw::Number(10.0)).unwrap();
    let e = p.finish().unwrap_err();
    assert_eq!(
        (e.kind, e.opt, e.expect),
        (
            ErrorKind::Range,
            Opt::Intervals,
            Expect::IntervalsWithInfinity
        )
    );
    // Taking the total deadline away later is refused as well.
    let mut p = policy(&[
        (Opt::MaxAttempts, inf),
        (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
    ]);
    p.set(Opt::MaxTotalExecutionTime, Raw::Undefined).unwrap();
    assert_eq!(
        p.finish().unwrap_err().expect,
        Expect::InfinityNeedsTotalDeadline
    );
    // SPEC §2c rule 1: with `hedge`, maxAttempts must be finite, whatever
    // the total deadline, in either order; a dynamic one is checked when
    // it answers.
    for opts in [
        [
            (Opt::Hedge, Raw::Number(50.0)),
            (Opt::MaxAttempts, inf),
            (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
        ],
        [
            (Opt::MaxTotalExecutionTime, Raw::Number(1000.0)),
            (Opt::MaxAttempts, inf),
            (Opt::Hedge, Raw::Function),
        ],
    ] {
        let e = try_policy(&opts).unwrap_err();
        assert_eq!(
            (e.kind, e.opt, e.expect),
            (ErrorKind::Range, Opt::MaxAttempts, Expect::FiniteWithHedge)
        );
    }
    assert!(try_policy(&[
        (Opt::Hedge, Raw::Number(50.0)),
        (Opt::MaxAttempts, Raw::Function)
    ])
    .is_ok());
    let mut p = policy(&[(Opt::Hedge, Raw::Number(50.0))]);
    p.set(Opt::MaxAttempts, inf).unwrap();
    p.set(Opt::MaxTotalExecutionTime, Raw::Number(1000.0))
        .unwrap();
    assert_eq!(p.finish().unwrap_err().expect, Expect::FiniteWithHedge);
    p.set(Opt::Hedge, Raw::Undefined).unwrap();
    assert!(
        p.finish().is_ok(),
        "without hedge, Infinity is allowed again"
    );
}

#[test]
fn interval_entries_are_checked_one_by_one() {
    let mut p = Policy::default();
    p.set(Opt::Intervals, Raw::Array(4)).unwrap();
    p.push_interval(0, Raw::Number(10.0)).unwrap();
    p.push_interval(1, Raw::Number(0.0)).unwrap();
    for (raw, kind) in [
        (Raw::Number(-1.0), ErrorKind::Range),
        (Raw::Number(f64::NAN), ErrorKind::Range),
        (Raw::Number(f64::NEG_INFINITY), ErrorKind::Range),
        (Raw::Str("5"), ErrorKind::Type),
        (Raw::Null, ErrorKind::Type),
        (Raw::Undefined, ErrorKind::Type),
    ] {
        let e = p.clone().push_interval(2, raw).unwrap_err();
        assert_eq!(
            (e.kind, e.opt, e.expect, e.index),
            (kind, Opt::Intervals, Expect::ArrayOfDelays, 2),
            "{raw:?}"
        );
    }
    // An entry without an `intervals` array being staged.
    assert_eq!(
        Policy::default()
            .push_interval(0, Raw::Number(1.0))
            .unwrap_err()
            .kind,
        ErrorKind::Type
    );
}

#[test]
fn initial_state_fields_are_checked() {
    let mut p = policy(&[(Opt::InitialState, Raw::Object)]);
    for field in 0..3 {
        for (raw, kind) in [
            (Raw::Number(-1.0), ErrorKind::Range),
            (Raw::Number(f64::NAN), ErrorKind::Range),
            (Raw::Number(f64::INFINITY), ErrorKind::Range),
            (Raw::Str("1"), ErrorKind::Type),
        ] {
            let e = p.set_initial(field, raw).unwrap_err();
            assert_eq!((e.kind, e.opt, e.index), (kind, Opt::InitialState, field));
        }
        assert!(p.set_initial(field, Raw::Number(0.0)).is_ok());
        assert!(p.set_initial(field, Raw::Undefined).is_ok());
    }
}

#[test]
fn unknown_option_ids_are_refused() {
    assert_eq!(Opt::from_id(ALL_OPTS.len() as u32), None);
    assert_eq!(Opt::from_id(u32::MAX), None);
    for (i, o) in ALL_OPTS.iter().enumerate() {
        assert_eq!(Opt::from_id(i as u32), Some(*o));
    }
}

#[test]
fn undefined_means_not_set() {
    let n = Raw::Number;
    let non_default: Vec<(Opt, Raw<'static>)> = vec![
        (Opt::MaxAttempts, n(7.0)),
        (Opt::Backoff, Raw::Str("linear")),
        (Opt::BaseWait, n(5.0)),
        (Opt::MaxWait, n(5.0)),
        (Opt::Jitter, n(0.3)),
        (Opt::MaxExecutionTime, n(5.0)),
        (Opt::MaxTotalExecutionTime, n(5.0)),
        (Opt::ThrowOnError, Raw::Bool(true)),
        (Opt::Enabled, Raw::Bool(false)),
        (Opt::InitialState, Raw::Object),
        (Opt::Key, Raw::Str("k")),
        (Opt::OnRetry, Raw::Function),
        (Opt::OnError, Raw::Function),
        (Opt::OnLastError, Raw::Function),
        (Opt::OnSuccess, Raw::Function),
        (Opt::OnSettled, Raw::Function),
        (Opt::OnAbort, Raw::Function),
        (Opt::OnExecutionTimeout, Raw::Function),
        (Opt::OnTotalExecutionTimeout, Raw::Function),
        (Opt::ShouldRetry, Raw::Function),
        (Opt::OnGiveUp, Raw::Function),
        (Opt::RetryAfter, Raw::Function),
        (Opt::Intervals, Raw::Array(0)),
        (Opt::Multiplier, n(3.0)),
        (Opt::Signal, Raw::Signal),
        (Opt::Budget, Raw::Budget(1)),
        (Opt::Seed, n(1.0)),
        (Opt::RetryOnExecutionTimeout, Raw::Bool(true)),
        (Opt::Nested, Raw::Str("passthrough")),
        (Opt::InnerRetries, Raw::Bool(false)),
        (Opt::OnBackoff, Raw::Function),
        (Opt::Hedge, n(50.0)),
        (Opt::OnHedge, Raw::Function),
        (Opt::Breaker, Raw::Breaker),
    ];
    assert_eq!(non_default.len(), ALL_OPTS.len());
    for (opt, raw) in non_default {
        let mut p = Policy::default();
        p.set(opt, raw).unwrap();
        if opt == Opt::InitialState {
            p.set_initial(0, n(3.0)).unwrap();
        }
        if !matches!(opt, Opt::Key | Opt::InitialState) {
            assert_ne!(p, Policy::default(), "{opt:?} changed nothing");
        }
        p.set(opt, Raw::Undefined).unwrap();
        assert_eq!(p, Policy::default(), "{opt:?} = undefined is the default");
    }
}

#[test]
fn a_refused_value_changes_nothing() {
    // SPEC §3: "A failed setOptions changes nothing." The wasm layer stages
    // a copy and drops it on error, so this was never visible from
    // JavaScript. Regression (fixed in 9b43000): with intervals [10, 20, 30,
    // 40, 50] (6 attempts), set(MaxAttempts, Number(0)) returned Err but had
    // already set max_attempts_set, which would have cut the attempts to
    // min(3, 6) = 3 had the policy been used.
    let n = Raw::Number;
    let bad: Vec<(Opt, Raw<'static>)> = vec![
        (Opt::MaxAttempts, n(0.0)),
        (Opt::MaxAttempts, Raw::Str("x")),
        (Opt::BaseWait, n(-1.0)),
        (Opt::MaxWait, n(f64::NAN)),
        (Opt::Jitter, n(2.0)),
        (Opt::Backoff, Raw::Str("nope")),
        (Opt::Multiplier, n(0.0)),
        (Opt::Seed, n(f64::NAN)),
        (Opt::OnRetry, Raw::Null),
        (Opt::Enabled, n(1.0)),
    ];
    let base = with_intervals(policy(&[]), &[10.0, 20.0, 30.0, 40.0, 50.0]);
    for (opt, raw) in bad {
        let mut p = base.clone();
        assert!(p.set(opt, raw).is_err());
        assert_eq!(p, base, "{opt:?} = {raw:?} changed the policy");
    }
}

#[test]
fn budget_settings_are_checked() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(Budget::new(bad, 0.1), Err(BudgetError::MaxTokens), "{bad}");
    }
    for bad in [0.0, -0.1, f64::NAN, f64::INFINITY] {
        assert_eq!(
            Budget::new(10.0, bad),
            Err(BudgetError::TokenRatio),
            "{bad}"
        );
    }
    let b = Budget::new(0.5, 2.0).unwrap();
    assert_eq!(b.tokens(), 0.5, "starts full");
    assert_eq!(b.max_tokens(), 0.5);
    assert_eq!(b.token_ratio(), 2.0);
}
