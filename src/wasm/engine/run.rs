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
    /// Unsettled executions, oldest first (the newest is the active one):
    /// nearly always one, so a list is made only for a second.
    first: RefCell<Option<Rc<Execution>>>,
    more: RefCell<Vec<Rc<Execution>>>,
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
            first: RefCell::new(None),
            more: RefCell::new(Vec::new()),
            timers: Timers::default(),
            listener: Cell::new(None),
            pumping: Cell::new(false),
        }
    }

    /// Adds a new execution (the newest).
    pub fn add(&self, execution: Execution) -> Option<()> {
        let execution = Rc::new(execution);
        let mut first = self.first.try_borrow_mut().ok()?;
        let mut more = self.more.try_borrow_mut().ok()?;
        match first.as_ref() {
            None if more.is_empty() => *first = Some(execution),
            _ => more.push(execution),
        }
        Some(())
    }

    /// The execution of flow `gen`. Not inlined: every effect looks its
    /// execution up, and a copy at each would cost the download ~1 KB.
    #[inline(never)]
    pub fn find(&self, gen: u32) -> Option<Rc<Execution>> {
        let first = self.first.try_borrow().ok()?;
        if let Some(e) = first.as_ref().filter(|e| e.gen == gen) {
            return Some(Rc::clone(e));
        }
        let more = self.more.try_borrow().ok()?;
        more.iter().rev().find(|e| e.gen == gen).cloned()
    }

    /// Takes the execution of flow `gen` out: it settles now.
    pub fn take(&self, gen: u32) -> Option<Rc<Execution>> {
        let mut first = self.first.try_borrow_mut().ok()?;
        if first.as_ref().is_some_and(|e| e.gen == gen) {
            return first.take();
        }
        let mut more = self.more.try_borrow_mut().ok()?;
        let i = more.iter().rposition(|e| e.gen == gen)?;
        Some(more.remove(i))
    }

    /// Takes every execution out, oldest first.
    pub fn take_all(&self) -> Vec<Rc<Execution>> {
        let mut all = Vec::new();
        if let Ok(mut first) = self.first.try_borrow_mut() {
            all.extend(first.take());
        }
        if let Ok(mut more) = self.more.try_borrow_mut() {
            all.append(&mut more);
        }
        all
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
