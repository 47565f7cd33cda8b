//! Native replays of the fuzz targets (issue 6), on stable, without
//! libFuzzer: `fuzz/decode.rs` holds the byte decoding and every check of
//! the targets, and is included both here and by
//! `fuzz/fuzz_targets/{options,machine,breaker}.rs`, so a byte string the
//! fuzzer reports replays here exactly as it ran there.
//!
//! - hand-picked seeds of each target, with what they must reach;
//! - every crash the fuzzer found, minimised (see the end);
//! - `cargo test --test fuzz_regressions -- --ignored --nocapture`
//!   replays the local corpus under `fuzz/corpus/` (git-ignored, grown by
//!   `npm run fuzz`) and prints what it reached; it fails when there is no
//!   corpus to replay (the breaker target's is replayed when present).

include!("../fuzz/decode.rs");

// ----- options target -----

/// `maxAttempts` refused values, `Infinity` without a total deadline,
/// then with one; `intervals` with `-0`, a `NaN` entry and `Infinity`.
const OPTIONS_EDGES: &[u8] = &[
    0, 0, 3, 0, 15, // maxAttempts = NaN: refused
    9,  // finish: staged values dropped, nothing committed
    0, 0, 3, 0, 17, // maxAttempts = Infinity
    9,  // finish: refused, no total deadline
    0, 0, 3, 0, 17, // maxAttempts = Infinity
    0, 6, 3, 0, 9, // maxTotalExecutionTime = 1000
    9, // finish: committed
    0, 22, 10, 2, // intervals = [.. 2 entries]
    6, 0, 3, 0, 1, // intervals[0] = -0: accepted as 0
    6, 1, 3, 0, 15, // intervals[1] = NaN: refused
    9,  // finish: refused (intervals with Infinity attempts)
];

/// Unknown ids (small and huge), every kind of value for a few options,
/// `initialState` fields, near-miss strings.
const OPTIONS_KINDS: &[u8] = &[
    0, 29, 0, // unknown option 29
    0, 255, 255, 255, 255, 255, 0, // unknown option u32::MAX
    0, 1, 6, 3, // backoff = 'decorrelated'
    0, 1, 6, 7, // backoff = 'Exponential': RangeError
    0, 4, 6, 8, // jitter = 'full ': RangeError
    0, 4, 3, 0, 14, // jitter = 1.0000000000000002: RangeError
    0, 4, 3, 0, 10, // jitter = 0.5
    0, 7, 6, 5, // throwOnError = 'last'
    0, 7, 2, 1, // throwOnError = true
    0, 24, 13, 1, // signal = AbortSignal
    0, 25, 12, 0, 255, 255, 255, 255, // budget = RetryBudget #u32::MAX
    0, 26, 3, 0, 17, // seed = Infinity: RangeError
    0, 23, 3, 0, 1, // multiplier = -0: RangeError
    0, 11, 1, // onRetry = null: TypeError
    0, 11, 8, // onRetry = function
    8, 0, 3, 0, 3, // initialState.executionCount = -1: RangeError
    8, 1, 3, 0, 29, // initialState.lastExecutionTime = 4294967295
    8, 255, 0, 1, 0, 0, 0, // initialState field 256: ignored
    6, 0, 3, 0, 2, // intervals[0] without intervals: TypeError
    9, // finish
    0, 2, 3, 7, 0, 0, 0, 0, 0, 0, 248, 127, // baseWait = a NaN bit pattern
    0, 3, 3, 0, 23, // maxWait = 5e-324
    0, 5, 3, 0, 18, // maxExecutionTime = -Infinity: RangeError
    9,  // finish: nothing committed (one value was refused)
];

#[test]
fn options_seed_edges() {
    let run = run_options(OPTIONS_EDGES);
    assert_eq!(
        run,
        OptionsRun {
            accepted: 7,
            refused: 4,
            committed: 1
        }
    );
}

#[test]
fn options_seed_every_kind() {
    let run = run_options(OPTIONS_KINDS);
    assert_eq!(run.committed, 0, "{run:?}");
    // Options are picked by a byte modulo their count, so adding options
    // moves some picks: 33 options since hedge and onHedge (31 since
    // nested, innerRetries, onBackoff); these seeds happen to pick the same.
    assert_eq!(run.refused, 11, "{run:?}");
    assert_eq!(run.accepted, 13, "{run:?}");
}

#[test]
fn options_tolerate_short_and_empty_input() {
    assert_eq!(run_options(&[]), OptionsRun::default());
    for len in 0..=OPTIONS_KINDS.len() {
        run_options(&OPTIONS_KINDS[..len]);
    }
    // Every single byte, and every pair starting a Set.
    for b in 0..=255u8 {
        run_options(&[b]);
        run_options(&[0, b]);
        run_options(&[0, b, 3]);
    }
}

// ----- machine target -----

/// One budget (10 tokens, ratio 0.1) shared by two machines: m0 with
/// `maxAttempts: 3`, the budget and `onRetry`; m1 with `maxAttempts:
/// Infinity`, a 100 ms total deadline and a 10 ms `baseWait`.
const MACHINE_HEADER: &[u8] = &[
    1, 4, 10, 0, 12, // 1 budget: Budget::new(10, 0.1)
    1,  // 2 machines
    3,  // m0: 3 options
    0, 0, 3, 0, 5, // maxAttempts = 3
    0, 25, 12, 1, 0, // budget = #0
    0, 11, 8, // onRetry = function
    0, 0, 0, 0, 0, 0, 0, 0, // m0 entropy
    3, // m1: 3 options
    0, 6, 3, 0, 8, // maxTotalExecutionTime = 100
    0, 2, 3, 0, 7, // baseWait = 10
    0, 0, 3, 0, 17, // maxAttempts = Infinity
    0, 0, 0, 0, 0, 0, 0, 0, // m1 entropy
];

/// m0 fails three attempts and gives up; m1 retries until its total
/// deadline fires; m0 starts twice more, the second execute() arriving
/// while the first one's effects are half popped. Each input is
/// `[machine, op, args..]`; ops below 0xC0 drain the queue afterwards.
const MACHINE_FLOWS: &[u8] = &[
    0, 0, 100, // m0 execute: Invoke 1
    0, 3, 0, 200, // attempt 1 fails: onRetry, wait
    0, 5, 0, // the wait fires: Invoke 2
    0, 3, 0, 200, // attempt 2 fails
    0, 5, 0, // the wait fires: Invoke 3
    0, 3, 0, 200, // attempt 3 fails: give up, Finish
    1, 0, 100, // m1 execute: total timer, Invoke 1
    1, 3, 0, 200, // attempt 1 fails: wait 10 ms
    1, 5, 0, // the wait fires: Invoke 2
    1, 5, 0, // the total deadline fires: Finish
    0, 0xD0, 100, // m0 execute, pop one effect only
    0, 0, 100, // m0 execute again: 'new-execution'
    0, 15, 3, 0, 15, // now = NaN
    0, 2, 0, // the newest attempt succeeds
];

#[test]
fn machine_seed_flows() {
    let data = [MACHINE_HEADER, MACHINE_FLOWS].concat();
    let run = run_machine(&data);
    assert_eq!(run.machines, 2);
    assert_eq!(run.budgets, 1);
    assert!(run.realistic, "{run:?}");
    assert_eq!(run.highest_attempt, 3, "{run:?}");
    // m0: 3 + 1 + 1 attempts; m1: 2.
    assert_eq!(run.invokes, 7, "{run:?}");
    assert_eq!(run.finishes, 4, "{run:?}");
}

/// Inputs no host would send: settlements and answers for generations and
/// attempts that were never invoked or asked, stray timers, aborts with
/// nothing running, and clocks that are NaN, negative and huge.
const MACHINE_STRAYS: &[u8] = &[
    0, 15, 3, 0, 18, // now = -Infinity
    0, 5, 226, // the attempt timer fires with no flow
    0, 7, 3, // abort('total-timeout') with no flow
    0, 2, 255, 255, 255, 255, 255, 255, // gen 0 attempt u32::MAX ok
    0, 0xC0, 100, // execute, pop nothing
    0, 3, 255, 1, 200, // gen 1 attempt 1 fails before its Invoke is popped
    0, 8, 255, 255, 7, 0, 0, 0, 0, // an answer for gen 7 nobody asked for
    0, 15, 3, 0, 19, // now = f64::MAX
    0, 0, 100, // execute
    0, 10, 0, // a callback of the newest gen throws
    1, 0, 0, // m1 execute with an outside signal already aborted
    1, 13, 0, 1, // m1 listeners on
    1, 11, // m1 reset
];

#[test]
fn machine_seed_strays() {
    let data = [MACHINE_HEADER, MACHINE_STRAYS].concat();
    let run = run_machine(&data);
    assert!(!run.realistic, "{run:?}");
    assert_eq!(run.finishes, 3, "{run:?}");
}

#[test]
fn machine_tolerates_short_and_empty_input() {
    run_machine(&[]);
    let data = [MACHINE_HEADER, MACHINE_FLOWS].concat();
    for len in 0..=data.len() {
        run_machine(&data[..len]);
    }
    for b in 0..=255u8 {
        run_machine(&[b]);
        run_machine(&[0, 0, b]);
    }
}

/// m0 starts inside an attempt that forbids inner retries (op 0x11): one
/// attempt, its failure handed straight back. Then inside one that allows
/// them (op 0x01): m0's own `maxAttempts: 3` applies.
const MACHINE_NESTED: &[u8] = &[
    0, 0x11, 100, // m0 execute inside a forbidding attempt: Invoke 1
    0, 3, 0, 200, // attempt 1 fails: give up ('nested'), Finish
    0, 0x01, 100, // m0 execute inside an allowing attempt: Invoke 1
    0, 3, 0, 200, // attempt 1 fails: onRetry, wait
    0, 5, 0, // the wait fires: Invoke 2
    0, 3, 0, 200, // attempt 2 fails
    0, 5, 0, // the wait fires: Invoke 3
    0, 3, 0, 200, // attempt 3 fails: give up, Finish
];

#[test]
fn machine_seed_nested() {
    let data = [MACHINE_HEADER, MACHINE_NESTED].concat();
    let run = run_machine(&data);
    assert!(run.realistic, "{run:?}");
    assert_eq!(run.invokes, 4, "{run:?}");
    assert_eq!(run.finishes, 2, "{run:?}");
    assert_eq!(run.highest_attempt, 3, "{run:?}");
}

/// One machine with `maxAttempts: 3`, `hedge: 50` and `onHedge`.
const HEDGED_HEADER: &[u8] = &[
    0, // no budget
    0, // 1 machine
    3, // 3 options
    0, 0, 3, 0, 5, // maxAttempts = 3
    0, 31, 3, 4, 50, // hedge = 50
    0, 32, 8, // onHedge = function
    0, 0, 0, 0, 0, 0, 0, 0, // entropy
];

/// A hedged flow: attempts 2 and 3 start at their hedge times while 1
/// runs, attempt 2 wins and the other two are cancelled, their late
/// outcomes ignored; then a flow the host does not let hedge makes one
/// attempt at a time.
const HEDGED_FLOWS: &[u8] = &[
    0, 0, 100, // execute: Invoke 1, Wait 50
    0, 15, 0, 50, // now = 50
    0, 5, 0, // the hedge time: onHedge, Invoke 2, Wait 50
    0, 15, 0, 50, // now = 100
    0, 5, 0, // the hedge time: onHedge, Invoke 3 (the last)
    0, 2, 1, // attempt 2 succeeds: 1 and 3 cancelled, Finish
    0, 0x10, 100, // execute, not hedging: Invoke 1, no Wait
    0, 15, 0, 200, // now = 300
];

#[test]
fn machine_seed_hedged() {
    let data = [HEDGED_HEADER, HEDGED_FLOWS].concat();
    let run = run_machine(&data);
    assert!(run.realistic, "{run:?}");
    assert_eq!(run.hedges, 2, "{run:?}");
    assert_eq!(run.cancels, 2, "{run:?}");
    assert_eq!(run.invokes, 4, "{run:?}");
    assert_eq!(run.highest_attempt, 3, "{run:?}");
    // The second flow ends in the wind-down.
    assert_eq!(run.finishes, 2, "{run:?}");
    assert_eq!(run.timers, 2, "{run:?}");
}

// ----- breaker target -----

/// Breaker settings (one failure trips, open 50 ms, one probe), no budget,
/// two retryers on the circuit `''`: r0 with `maxAttempts: 3`, `baseWait:
/// 10` and `onGiveUp`; r1 with `maxAttempts: 1` and `onGiveUp`.
const BREAKER_HEADER: &[u8] = &[
    1, 1, 0, 1, 1, 2, 0, // failureRatio 1, minimumThroughput 1, samplingDuration 30 s,
    //                      consecutiveFailures 1, breakDuration 50, halfOpenCalls 1
    0, // no budget
    1, // 2 retryers
    3, // r0: 3 options
    0, 0, 3, 0, 5, // maxAttempts = 3
    0, 2, 3, 0, 7, // baseWait = 10
    0, 20, 8, // onGiveUp = function
    0, 0, 0, 0, 0, 0, 0, 0, // r0 entropy: no hook, key ''
    2, // r1: 2 options
    0, 0, 3, 0, 2, // maxAttempts = 1
    0, 20, 8, // onGiveUp = function
    0, 0, 0, 0, 0, 0, 0, 0, // r1 entropy: no hook, key ''
];

/// r0's first attempt fails and trips the circuit; r1 is refused and gives
/// up ('circuit-open'); r0's retry at 10 ms is refused too and waits the
/// 40 ms left; at 50 ms its third attempt is the probe, and succeeds.
const BREAKER_FLOWS: &[u8] = &[
    0, 0, 100, // r0 execute: Invoke 1, permitted
    0, 3, 0, 200, // attempt 1 fails: tripped, wait 10
    1, 0, 100, // r1 execute: Invoke 1, refused: onGiveUp('circuit-open')
    0, 15, 0, 10, // now = 10
    0, 5, 0, // r0's wait ends: Invoke 2, refused, wait 40
    0, 15, 0, 40, // now = 50
    0, 5, 0, // r0's wait ends: Invoke 3, the break is over: the probe
    0, 2, 0, // the probe succeeds: closed, r0 succeeds
];

#[test]
fn breaker_seed_flows() {
    let data = [BREAKER_HEADER, BREAKER_FLOWS].concat();
    let run = run_breaker(&data);
    assert_eq!(
        run,
        BreakerRun {
            machines: 2,
            inputs: 8,
            invokes: 4,
            permitted: 2,
            refused: 2,
            probes: 1,
            transitions: 3,
            circuit_open: 1,
            finishes: 2,
            realistic: true,
        }
    );
}

/// A `breakDuration` function (its answers come from `BREAK_ANSWERS` in
/// turn: 0, then 1 ms) and two probes: r0 hedges (`maxAttempts: 3`,
/// `hedge: 20`), r1 has `maxAttempts: 2` and `baseWait: 10`; both have
/// `onGiveUp`.
const BREAKER_PROBES: &[u8] = &[
    3, 1, 0, 1, 1, 0, 1, // dynamic; failureRatio 1, minimumThroughput 1,
    //                      samplingDuration 30 s, consecutiveFailures 1,
    //                      breakDuration 0 (until answered), halfOpenCalls 2
    0, // no budget
    1, // 2 retryers
    3, // r0: 3 options
    0, 0, 3, 0, 5, // maxAttempts = 3
    0, 31, 3, 4, 20, // hedge = 20
    0, 20, 8, // onGiveUp = function
    0, 0, 0, 0, 0, 0, 0, 0, // r0 entropy
    3, // r1: 3 options
    0, 0, 3, 0, 4, // maxAttempts = 2
    0, 2, 3, 0, 7, // baseWait = 10
    0, 20, 8, // onGiveUp = function
    0, 0, 0, 0, 0, 0, 0, 0, // r1 entropy
    // r0's attempt 1 fails: tripped, its break answered 0; attempt 2
    // starts at once and is the first probe; r1's attempt 1 the second.
    0, 0, 100, // r0 execute: Invoke 1
    0, 3, 0, 200, // attempt 1 fails: tripped; Invoke 2: break-ended, probe
    1, 0, 100, // r1 execute: Invoke 1, the second probe
    0, 15, 0, 20, // now = 20
    // r0's attempt 3, at its hedge time, is refused (both probes out,
    // hint 1 ms) and was its last: r0 waits for attempt 2.
    0, 5, 0, // the hedge time: Invoke 3, refused
    0, 2, 0, // attempt 2 succeeds: one probe passed, r0 succeeds
    1, 3, 0, 200, // r1's probe fails: probe-failed, break answered 1 ms
    0, 13, 2, 0, // a late answer to the first opening: nothing changes
    0, 10, 0, // isolate ''
    1, 15, 0, 10, // now = 30
    1, 5, 0, // r1's wait ends: Invoke 2, refused (Infinity): 'circuit-open'
    0, 11, 0, // reset ''
    0, 13, 1, // every circuit read
];

#[test]
fn breaker_seed_probes() {
    let run = run_breaker(BREAKER_PROBES);
    assert_eq!(
        run,
        BreakerRun {
            machines: 2,
            inputs: 13,
            invokes: 5,
            permitted: 3,
            refused: 2,
            probes: 2,
            transitions: 5,
            circuit_open: 1,
            finishes: 2,
            realistic: true,
        }
    );
}

/// `breakDuration: 0`: r2 holds the only probe, and r0 (`maxAttempts:
/// Infinity` within 100 ms, `onGiveUp`) is refused again and again. Each
/// refusal waits 1 ms: before, its hint was 0 and r0 asked again at once,
/// without end (over 10,000 effects from its execute()).
const BREAKER_ZERO_BREAK: &[u8] = &[
    1, 1, 0, 1, 1, 0, 0, // breakDuration 0, one failure trips, one probe
    0, // no budget
    2, // 3 retryers
    3, // r0: 3 options
    0, 0, 3, 0, 17, // maxAttempts = Infinity
    0, 6, 3, 0, 8, // maxTotalExecutionTime = 100
    0, 20, 8, // onGiveUp = function
    0, 0, 0, 0, 0, 0, 0, 0, // r0 entropy
    0, 0, 0, 0, 0, 0, 0, 0, 0, // r1: defaults
    0, 0, 0, 0, 0, 0, 0, 0, 0, // r2: defaults
    1, 0, 100, // r1 execute: Invoke 1
    1, 3, 0, 200, // it fails: tripped, open for 0 ms
    2, 0, 100, // r2 execute: Invoke 1, break-ended, the probe
    0, 0, 100, // r0 execute: Invoke 1, refused: wait 1 ms
    0, 15, 0, 1, // now = 1
    0, 5, 0, // the wait ends: Invoke 2, refused
    0, 15, 0, 1, // now = 2
    0, 5, 0, // the wait ends: Invoke 3, refused
];

#[test]
fn breaker_seed_zero_break() {
    let run = run_breaker(BREAKER_ZERO_BREAK);
    assert!(run.realistic, "{run:?}");
    assert_eq!((run.machines, run.invokes), (3, 5), "{run:?}");
    assert_eq!(
        (run.permitted, run.refused, run.probes),
        (2, 3, 1),
        "{run:?}"
    );
    assert_eq!(run.transitions, 2, "{run:?}");
    assert_eq!(run.finishes, 3, "{run:?}");
}

#[test]
fn breaker_tolerates_short_and_empty_input() {
    run_breaker(&[]);
    for seed in [
        [BREAKER_HEADER, BREAKER_FLOWS].concat(),
        BREAKER_PROBES.to_vec(),
        BREAKER_ZERO_BREAK.to_vec(),
    ] {
        for len in 0..=seed.len() {
            run_breaker(&seed[..len]);
        }
    }
    for b in 0..=255u8 {
        run_breaker(&[b]);
        run_breaker(&[1, b]);
        run_breaker(&[0, 0, 0, 0, 0, b, 0]);
    }
}

// ----- crashes the fuzzer found -----
//
// Both from the harness, not the library: its bound on callback bits
// had not grown with `onBackoff` (bit 9), so any policy with `onBackoff`
// tripped it within a second of fuzzing.

#[test]
fn options_crash_onbackoff_bit() {
    run_options(&[1, 92, 8, 44]);
}

#[test]
fn machine_crash_onbackoff_bit() {
    run_machine(&[16, 0, 11, 255, 30, 8]);
}

// From the harness too: a policy with `hedge: 0` and `maxAttempts:
// 2^31` starts every attempt at once, from one execute(): legitimate
// work, over the harness's 10,000 effects per input. Hedged policies of
// the machine target now keep to 1,000 attempts (HEDGE_BOUND).

#[test]
fn machine_crash_hedge_fan_out() {
    const CRASH: &[u8] = &[
        38, 0, 0, 0, 0, 0, 0, 0, 40, 255, 255, 255, 64, 229, 42, 0, 0, 0, 18, 64, 148, 131, 42, 0,
        229, 131, 9, 0, 41, 131, 51, 131, 41, 0, 39, 0, 64, 64, 51, 64, 64, 64, 64, 50, 255, 205,
        38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38,
        38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38,
        38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38,
        38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 38, 64, 64, 64, 64, 64, 64,
        64, 64, 0, 0, 45,
    ];
    run_machine(CRASH);
}

// With that fixed, and the machine target also starting flows inside
// attempts, `npm run fuzz -- --seconds 300` ran both targets clean on
// 2026-12-01 (2-core AMD EPYC dev machine): options 2,034,548 executions
// in 301 s, machine 2,577,146 in 301 s. Before `onBackoff` and nesting,
// 600 s each ran clean: options 4,104,907, machine 2,755,474. As a
// check of the harness, seven bugs injected into a copy of src/core (a
// refused maxAttempts leaving a trace, NaN accepted as a deadline, one
// attempt too many, an abort not dropping queued effects, an AbortError
// never settling, a total timeout leaving timers, a give-up leaving the
// signal listener) were each caught in under 60 s.
//
// When `npm run fuzz` reports a crash it prints the reproducer as a byte
// array: minimise it (`cargo +nightly fuzz tmin <target> <file>`), paste
// it here and call `run_options` / `run_machine` on it in a test.

// ----- the local corpus -----

fn replay_dir(target: &str, run: impl Fn(&[u8]) -> String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "{target}: no corpus at {} ({e}); `npm run fuzz` grows it",
            dir.display()
        )
    });
    let mut lines: BTreeMap<String, u32> = BTreeMap::new();
    let mut n = 0;
    for entry in entries.flatten() {
        let data = std::fs::read(entry.path()).expect("corpus file");
        *lines.entry(run(&data)).or_default() += 1;
        n += 1;
    }
    assert!(n > 0, "{target}: {} is empty", dir.display());
    println!("{target}: {n} corpus inputs replayed");
    for (line, count) in lines.iter().rev().take(12) {
        println!("  {count:6} × {line}");
    }
}

#[test]
#[ignore = "replays fuzz/corpus/, which only a machine that ran `npm run fuzz` has; run with -- --ignored"]
fn replay_local_corpus() {
    replay_dir("options", |d| {
        let r = run_options(d);
        format!("committed {}", r.committed.min(3))
    });
    replay_dir("machine", |d| {
        let r = run_machine(d);
        format!(
            "realistic {} highest attempt {} evals>0 {} timers>0 {}",
            r.realistic,
            r.highest_attempt.min(9),
            r.evals > 0,
            r.timers > 0
        )
    });
    // The breaker target is younger: a corpus grown before it has none.
    let breaker = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/breaker");
    if breaker.is_dir() {
        replay_dir("breaker", |d| {
            let r = run_breaker(d);
            format!(
                "realistic {} refused>0 {} probes>0 {} circuit-open>0 {}",
                r.realistic,
                r.refused > 0,
                r.probes > 0,
                r.circuit_open > 0
            )
        });
    }
}
