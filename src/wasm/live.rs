//! What every retryer shares: the handlers JavaScript calls back (promise
//! reactions, the timer callback, the outside-signal listener), and the
//! table of retryers with something under way, through which a handler
//! finds its retryer.
//!
//! One handler of each kind for the whole module, bound per use to numbers
//! (`slot`, `id`, generation, attempt), instead of `Closure`s per retryer:
//! a `Closure` costs a JavaScript function, a finalizer registration and a
//! table slot, and under load every pending flow is a retryer of its own.
//!
//! A retryer is in the table (held, so it lives) from the moment it starts
//! something until it is idle again; a handler that fires after that, or
//! for a slot another retryer took since, finds nothing or a different `id`
//! and does nothing.

use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use js_sys::Function;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use super::js;
use super::pump::Inner;
use crate::core::effect::Timer;

/// Retryers with something under way, by slot.
struct Table {
    slots: Vec<Option<Rc<Inner>>>,
    free: Vec<u32>,
}

/// The shared handlers.
struct Handlers {
    fulfilled: Closure<dyn Fn(u32, u32, u32, u32, JsValue)>,
    rejected: Closure<dyn Fn(u32, u32, u32, u32, JsValue)>,
    timer: Closure<dyn Fn(u32, u32, u32)>,
    signal: Closure<dyn Fn(u32, u32, u32)>,
    thrower: Closure<dyn Fn(JsValue)>,
    executor: Closure<dyn Fn(Function)>,
}

thread_local! {
    static TABLE: RefCell<Table> = const {
        RefCell::new(Table {
            slots: Vec::new(),
            free: Vec::new(),
        })
    };
    static NEXT_ID: Cell<u32> = const { Cell::new(1) };
    /// The `resolve` the shared executor was just handed.
    static RESOLVE: Cell<Option<Function>> = const { Cell::new(None) };
    static HANDLERS: Handlers = Handlers {
        fulfilled: Closure::new(|slot, id, gen, attempt, value| {
            if let Some(inner) = find(slot, id) {
                inner.settled(gen, attempt, true, value);
            }
        }),
        rejected: Closure::new(|slot, id, gen, attempt, value| {
            if let Some(inner) = find(slot, id) {
                inner.settled(gen, attempt, false, value);
            }
        }),
        timer: Closure::new(|slot, id, kind| {
            let timer = match kind {
                0 => Timer::Wait,
                1 => Timer::Attempt,
                _ => Timer::Total,
            };
            if let Some(inner) = find(slot, id) {
                inner.timer_fired(timer);
            }
        }),
        signal: Closure::new(|slot, id, gen| {
            if let Some(inner) = find(slot, id) {
                inner.outside_abort(gen);
            }
        }),
        // Rethrows from a microtask: the host reports it as uncaught.
        thrower: Closure::new(|error: JsValue| wasm_bindgen::throw_val(error)),
        // `new Promise` runs its executor at once: it hands over `resolve`
        // (a rejection goes through `resolve` as a rejected promise).
        executor: Closure::new(|resolve: Function| RESOLVE.with(|r| r.set(Some(resolve)))),
    };
}

/// A new module-unique retryer id (never 0). Ids wrap after 2^32 retryers;
/// a stale handler would then also need to hit the same slot to misfire.
pub fn next_id() -> u32 {
    NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id.wrapping_add(1).max(1));
        id
    })
}

/// Puts `inner` in the table; returns its slot.
pub fn hold(inner: &Rc<Inner>) -> Option<u32> {
    TABLE.with(|t| {
        let mut t = t.try_borrow_mut().ok()?;
        let held = Some(Rc::clone(inner));
        match t.free.pop() {
            Some(slot) => {
                *t.slots.get_mut(slot as usize)? = held;
                Some(slot)
            }
            None => {
                t.slots.push(held);
                u32::try_from(t.slots.len() - 1).ok()
            }
        }
    })
}

/// Takes the retryer in `slot` out of the table. The caller still holds
/// it, so it is not dropped while one of its methods runs.
pub fn release(slot: u32) {
    let gone = TABLE.with(|t| {
        let mut t = t.try_borrow_mut().ok()?;
        let taken = t.slots.get_mut(slot as usize)?.take();
        if taken.is_some() {
            t.free.push(slot);
        }
        taken
    });
    // Dropped here, after the table's borrow ended.
    drop(gone);
}

/// The retryer in `slot`, if it is still retryer `id`.
fn find(slot: u32, id: u32) -> Option<Rc<Inner>> {
    TABLE.with(|t| {
        let t = t.try_borrow().ok()?;
        t.slots
            .get(slot as usize)?
            .as_ref()
            .filter(|i| i.id == id)
            .cloned()
    })
}

/// The two reactions of one attempt's promise.
pub fn reactions(slot: u32, id: u32, gen: u32, attempt: u32) -> (Function, Function) {
    HANDLERS.with(|h| {
        let bind = |c: &Closure<dyn Fn(u32, u32, u32, u32, JsValue)>| {
            c.as_ref().unchecked_ref::<js::Handler>().bind_attempt(
                &JsValue::NULL,
                slot,
                id,
                gen,
                attempt,
            )
        };
        (bind(&h.fulfilled), bind(&h.rejected))
    })
}

/// Starts a host timer for `timer` of the retryer in `slot`.
pub fn start_timer(slot: u32, id: u32, timer: Timer, ms: f64) -> JsValue {
    HANDLERS.with(|h| js::set_timeout(h.timer.as_ref().unchecked_ref(), ms, slot, id, timer as u32))
}

/// The outside-signal listener of flow `gen` of the retryer in `slot`.
pub fn signal_listener(slot: u32, id: u32, gen: u32) -> Function {
    HANDLERS.with(|h| {
        h.signal
            .as_ref()
            .unchecked_ref::<js::Handler>()
            .bind_flow(&JsValue::NULL, slot, id, gen)
    })
}

/// A new pending promise and its `resolve`, from the one shared executor
/// (a `Promise::new` closure per call would make a JavaScript function and
/// its state per call).
pub fn promise() -> (js_sys::Promise, Option<Function>) {
    let promise = HANDLERS.with(|h| js::PromiseClass::new(h.executor.as_ref().unchecked_ref()));
    (promise.unchecked_into(), RESOLVE.with(Cell::take))
}

/// Hands an error no promise can carry (a throwing store listener) to the
/// host: `reportError` where there is one, else an uncaught exception from
/// a microtask.
pub fn report(error: &JsValue) {
    let report = js::REPORT_ERROR.with(JsValue::clone);
    if let Some(f) = report.dyn_ref::<Function>() {
        if f.call1(&JsValue::UNDEFINED, error).is_ok() {
            return;
        }
    }
    HANDLERS.with(|h| {
        let rethrow = h
            .thrower
            .as_ref()
            .unchecked_ref::<js::Handler>()
            .bind_value(&JsValue::NULL, error);
        js::queue_microtask(&rethrow);
    });
}
