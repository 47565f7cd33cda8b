//! A retryer's machine, the budget it draws on and the circuit breaker it
//! asks, behind the short borrows every input takes.
//!
//! Nothing here calls JavaScript while the machine or the budget is
//! borrowed: the clock (which fake timers replace with user code) is read
//! by the caller before the input goes in. A borrow that fails is an
//! [`InUse`], which the engine turns into an internal error the caller
//! sees; no path allows it.

use alloc::rc::Rc;
use core::cell::{Cell, RefCell};

use super::super::circuit::Circuits;
use crate::core::budget::{Budget, Budgets, NoBudgets};
use crate::core::effect::{Effect, Provided, Timer};
use crate::core::machine::Machine;
use crate::core::options::Policy;

/// The machine or the budget was found borrowed.
#[derive(Debug)]
pub struct InUse;

/// A budget shared by retryers.
pub type SharedBudget = Rc<RefCell<Budget>>;

/// An input that may draw on the budget.
pub enum Input {
    Ok {
        gen: u32,
        attempt: u32,
    },
    Err {
        gen: u32,
        attempt: u32,
        cancelled: bool,
    },
    /// The circuit breaker refused the attempt: it may let one through in
    /// `retry_after` ms.
    Refused {
        gen: u32,
        attempt: u32,
        retry_after: f64,
    },
    Timer(Timer),
    Provide {
        gen: u32,
        value: Provided,
    },
}

/// Lends a retryer's budget to the machine for one input.
struct Lent<'a>(Option<&'a mut Budget>);

impl Budgets for Lent<'_> {
    fn budget(&mut self, _id: u32) -> Option<&mut Budget> {
        self.0.as_deref_mut()
    }
}

/// The machine of one retryer and its budget.
pub struct Decider {
    machine: RefCell<Machine>,
    /// Taken out and put back, never borrowed: a `Cell` is 4 bytes less a
    /// retryer than a `RefCell`.
    budget: Cell<Option<SharedBudget>>,
    /// The `breaker` option's circuits, taken out and put back likewise.
    breaker: Cell<Option<Rc<Circuits>>>,
}

impl Decider {
    /// A machine with `policy` and the jitter seed `seed`.
    pub fn new(
        policy: Rc<Policy>,
        seed: u64,
        budget: Option<SharedBudget>,
        breaker: Option<Rc<Circuits>>,
    ) -> Decider {
        Decider {
            machine: RefCell::new(Machine::new(policy, seed)),
            budget: Cell::new(budget),
            breaker: Cell::new(breaker),
        }
    }

    /// Whether the retryer has a circuit breaker (nothing is cloned).
    pub fn has_breaker(&self) -> bool {
        let breaker = self.breaker.take();
        let has = breaker.is_some();
        self.breaker.set(breaker);
        has
    }

    /// The circuit breaker every attempt asks, if the retryer has one.
    pub fn breaker(&self) -> Option<Rc<Circuits>> {
        let breaker = self.breaker.take();
        self.breaker.set(breaker.clone());
        breaker
    }

    /// Runs `f` on the machine.
    pub fn with<T>(&self, f: impl FnOnce(&mut Machine) -> T) -> Result<T, InUse> {
        let mut m = self.machine.try_borrow_mut().map_err(|_| InUse)?;
        Ok(f(&mut m))
    }

    /// Reads the machine.
    pub fn read<T>(&self, f: impl FnOnce(&Machine) -> T) -> Result<T, InUse> {
        let m = self.machine.try_borrow().map_err(|_| InUse)?;
        Ok(f(&m))
    }

    /// Runs `f` on the machine, lending it the budget.
    fn lending<T>(&self, f: impl FnOnce(&mut Machine, &mut Lent<'_>) -> T) -> Result<T, InUse> {
        let budget = self.budget.take();
        self.budget.set(budget.clone());
        let mut lent = match &budget {
            Some(b) => Some(b.try_borrow_mut().map_err(|_| InUse)?),
            None => None,
        };
        let b = &mut Lent(lent.as_deref_mut());
        self.with(|m| f(m, b))
    }

    /// The next effect to carry out (a step the machine takes on the way
    /// may start a hedged attempt, which asks the budget). Most retryers
    /// have no budget: then nothing is lent, on the path every success
    /// takes.
    pub fn next_effect(&self) -> Result<Option<Effect>, InUse> {
        let budget = self.budget.take();
        let none = budget.is_none();
        self.budget.set(budget);
        if none {
            return self.with(|m| m.next_effect(&mut NoBudgets));
        }
        self.lending(|m, b| m.next_effect(b))
    }

    /// Feeds the machine an input stamped `now`, lending it the budget.
    pub fn feed(&self, input: Input, now: f64) -> Result<(), InUse> {
        self.lending(|m, b| match input {
            Input::Ok { gen, attempt } => m.attempt_ok(gen, attempt, now, b),
            Input::Err {
                gen,
                attempt,
                cancelled,
            } => m.attempt_err(gen, attempt, cancelled, now, b),
            Input::Refused {
                gen,
                attempt,
                retry_after,
            } => m.attempt_refused(gen, attempt, retry_after, now, b),
            Input::Timer(t) => m.timer_fired(t, now, b),
            Input::Provide { gen, value } => m.provide(gen, value, now, b),
        })
    }

    /// A copy of the current policy, for `setOptions` to change.
    pub fn policy(&self) -> Result<Policy, InUse> {
        self.read(|m| m.policy().clone())
    }

    /// Replaces the policy and, when given, the budget and the breaker.
    pub fn set_policy(
        &self,
        policy: Rc<Policy>,
        budget: Option<Option<SharedBudget>>,
        breaker: Option<Option<Rc<Circuits>>>,
    ) -> Result<(), InUse> {
        if let Some(b) = budget {
            drop(self.budget.replace(b));
        }
        if let Some(b) = breaker {
            drop(self.breaker.replace(b));
        }
        self.with(|m| m.set_policy(policy))
    }
}
