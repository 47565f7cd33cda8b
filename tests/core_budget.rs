//! A `RetryBudget` in the core: one budget shared by two retryers with
//! overlapping flows, a token per failed attempt only (refunds on success),
//! and a budget that no longer exists.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;

fn shared(max_tokens: f64, ratio: f64) -> Rc<RefCell<Vec<Budget>>> {
    Rc::new(RefCell::new(vec![Budget::new(max_tokens, ratio).unwrap()]))
}

fn tokens(b: &Rc<RefCell<Vec<Budget>>>) -> f64 {
    b.borrow()[0].tokens()
}

#[test]
fn a_budget_shared_by_two_retryers_with_overlapping_flows() {
    let budgets = shared(4.0, 0.5);
    let p = policy(&[
        (Opt::Budget, Raw::Budget(0)),
        (Opt::MaxAttempts, Raw::Number(5.0)),
        (Opt::BaseWait, Raw::Number(100.0)),
        (Opt::OnGiveUp, Raw::Function),
    ]);
    let mut a = Host::with_budgets(p.clone(), budgets.clone());
    let mut b = Host::with_budgets(p, budgets.clone());
    let ga = a.execute();
    a.drain();
    let gb = b.execute();
    b.drain();
    // A fails: 3 tokens left, more than half: retry.
    a.err(ga, 1);
    assert_eq!(a.drain(), vec![wait(ga, 100.0)]);
    assert_eq!(tokens(&budgets), 3.0);
    // B fails while A waits: 2 left, not more than half: give up.
    b.err(gb, 1);
    assert_eq!(
        b.drain(),
        vec![
            give_up(gb, GiveUp::BudgetExhausted),
            fin(gb, Outcome::Reject)
        ]
    );
    assert_eq!(tokens(&budgets), 2.0);
    // A's second attempt fails: 1 left: A gives up too.
    a.advance(100.0);
    a.err(ga, 2);
    assert_eq!(
        a.drain(),
        vec![
            give_up(ga, GiveUp::BudgetExhausted),
            fin(ga, Outcome::Reject)
        ]
    );
    assert_eq!(tokens(&budgets), 1.0);
    a.assert_quiet();
    b.assert_quiet();
    // Successes refund tokenRatio each, never past the maximum.
    for i in 0..20 {
        let h = if i % 2 == 0 { &mut a } else { &mut b };
        let g = h.execute();
        h.drain();
        h.ok(g, 1);
        h.drain();
        let t = tokens(&budgets);
        assert!((0.0..=4.0).contains(&t));
    }
    assert_eq!(tokens(&budgets), 4.0);
    // Retries are allowed again.
    let ga = a.execute();
    a.drain();
    a.err(ga, 1);
    assert_eq!(waits(&a.drain()), vec![100.0]);
}

#[test]
fn budget_costs_one_token_per_failed_attempt_only() {
    let budgets = shared(10.0, 1.0);
    let mut h = Host::with_budgets(
        policy(&[
            (Opt::Budget, Raw::Budget(0)),
            (Opt::MaxAttempts, Raw::Function),
            (Opt::MaxExecutionTime, Raw::Number(100.0)),
            (Opt::BaseWait, Raw::Number(10.0)),
        ]),
        budgets.clone(),
    );
    // A failure is counted once, at the decision, however many values the
    // decision had to ask for.
    let g = h.execute();
    h.drain();
    h.err(g, 1);
    h.drain();
    assert_eq!(tokens(&budgets), 10.0);
    h.provide(g, Provided::Number(9.0));
    h.drain();
    assert_eq!(tokens(&budgets), 9.0);
    h.provide(g, Provided::Number(9.0)); // a stray second answer
    assert_eq!(tokens(&budgets), 9.0);
    // Cancellation and abort cost nothing.
    h.advance(10.0);
    h.abort_error(g, 2);
    h.drain();
    assert_eq!(tokens(&budgets), 9.0);
    let g = h.execute();
    h.drain();
    h.abort();
    h.drain();
    assert_eq!(tokens(&budgets), 9.0);
    // An execution timeout that ends the flow costs one.
    let g2 = h.execute();
    h.drain();
    assert_ne!(g, g2);
    h.advance(100.0);
    assert_eq!(tokens(&budgets), 8.0);
    h.assert_quiet();
    // Success refunds.
    let g = h.execute();
    h.drain();
    h.ok(g, 1);
    h.drain();
    assert_eq!(tokens(&budgets), 9.0);
}

#[test]
fn a_budget_that_no_longer_exists_is_ignored() {
    let mut h = Host::new(policy(&[
        (Opt::Budget, Raw::Budget(7)),
        (Opt::BaseWait, Raw::Number(1.0)),
    ]));
    let g = h.execute();
    h.drain();
    let d = h.fail_until_end(10);
    assert_eq!(d, vec![1.0, 2.0]);
    assert_eq!(h.finished.get(&g), Some(&Outcome::Reject));
}
