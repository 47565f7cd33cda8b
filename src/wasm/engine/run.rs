//! What a busy retryer holds of JavaScript, from the moment it starts
//! something until it is idle again: its object, its address in the live
//! table, its unsettled executions, its timers and its listener on the
//! outside signal. The engine drops all of it when the machine is idle.

use alloc::rc::{Rc, Weak};
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use wasm_bindgen::JsValue;

use super::super::nesting::Running;
use super::execution::Execution;
use super::guards::{Listener, Timers};
use crate::core::slots::Address;

/// A busy period's JavaScript side.
pub struct Run {
    /// Where the live table holds the retryer (handlers are bound to it).
    pub at: Address,
    /// The retryer's own object: callbacks receive it, its function is
    /// called on it, and a flow whose caller dropped the retryer still
    /// finishes.
    pub me: JsValue,
    /// The retryer, for the attempts it runs to be asked about.
    pub runner: Weak<dyn Running>,
    /// Unsettled executions, oldest first (the newest is the active one).
    executions: RefCell<Vec<Rc<Execution>>>,
    pub timers: Timers,
    listener: Cell<Option<Listener>>,
    /// A pump is carrying out effects (a callback that re-enters only
    /// feeds the machine).
    pub pumping: Cell<bool>,
}

impl Run {
    pub fn new(at: Address, me: JsValue, runner: Weak<dyn Running>) -> Run {
        Run {
            at,
            me,
            runner,
            executions: RefCell::new(Vec::new()),
            timers: Timers::default(),
            listener: Cell::new(None),
            pumping: Cell::new(false),
        }
    }

    /// Adds a new execution (the newest).
    pub fn add(&self, execution: Execution) -> Option<()> {
        self.executions
            .try_borrow_mut()
            .ok()?
            .push(Rc::new(execution));
        Some(())
    }

    /// The execution of flow `gen`.
    pub fn find(&self, gen: u32) -> Option<Rc<Execution>> {
        let executions = self.executions.try_borrow().ok()?;
        executions.iter().rev().find(|e| e.gen == gen).cloned()
    }

    /// Takes the execution of flow `gen` out: it settles now.
    pub fn take(&self, gen: u32) -> Option<Rc<Execution>> {
        let mut executions = self.executions.try_borrow_mut().ok()?;
        let i = executions.iter().rposition(|e| e.gen == gen)?;
        Some(executions.remove(i))
    }

    /// Takes every execution out.
    pub fn take_all(&self) -> Vec<Rc<Execution>> {
        self.executions
            .try_borrow_mut()
            .map(|mut e| core::mem::take(&mut *e))
            .unwrap_or_default()
    }

    /// Keeps `listener`, removing the one it replaces.
    pub fn listen(&self, listener: Listener) {
        drop(self.listener.replace(Some(listener)));
    }

    /// Removes the listener on the outside signal.
    pub fn unlisten(&self) {
        drop(self.listener.take());
    }
}
