//! Which attempt a flow was started in, for `nested` and `innerRetries`.
//!
//! While a retryer's function runs for an attempt, that attempt is the
//! current one: synchronously (everything the function does before its
//! first `await`, in every host), and through the host's async context
//! where it has one (`AsyncLocalStorage`, reached with
//! `process.getBuiltinModule`, so no import of `node:` modules reaches a
//! browser bundle), which follows promises and timers. A flow started while
//! an attempt is current asks whether that attempt is still running, since
//! an async context outlives it (a timer the attempt scheduled fires after
//! it settled): only then is the flow nested.
//!
//! Nothing of this runs until some retryer asks for it (`nested:
//! 'passthrough'` or `innerRetries: false`): until then a flow starts and
//! calls its function exactly as without it. The tracking holds no
//! JavaScript value of any retryer: an attempt is known by a token and a
//! weak reference to whoever runs it.

use alloc::rc::Weak;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;

use super::props;
use super::tracing::Channels;

#[wasm_bindgen]
extern "C" {
    /// Node's, Deno's and Bun's `AsyncLocalStorage`.
    #[derive(Clone)]
    type AsyncStorage;

    /// `storage.run(token, Reflect.apply, f, this, args)`: `f.apply(this,
    /// args)` with `token` as the async context's value.
    #[wasm_bindgen(method, catch, js_name = run)]
    fn run(
        this: &AsyncStorage,
        token: u32,
        apply: &Function,
        f: &JsValue,
        receiver: &JsValue,
        args: &Array,
    ) -> Result<JsValue, JsValue>;

    /// `storage.getStore()`: the token of the context, or `undefined`.
    #[wasm_bindgen(method, js_name = getStore)]
    fn get_store(this: &AsyncStorage) -> JsValue;
}

/// Whoever runs attempts: asked whether one is still running.
pub trait Running {
    /// Whether attempt `attempt` of flow `gen` is running now.
    fn is_running(&self, gen: u32, attempt: u32) -> bool;
}

/// A running attempt that flows may be started in.
struct Attempt {
    runner: Weak<dyn Running>,
    gen: u32,
    attempt: u32,
    /// Flows started in it pass through.
    forbids: bool,
}

/// The async context, once some retryer asked for nesting.
struct Tracking {
    /// `None` where the host has no async context (browsers).
    storage: Option<(AsyncStorage, Function)>,
    /// The attempts being run or not yet forgotten, by token: few at a
    /// time (one per retryer whose function is running).
    attempts: Vec<(u32, Attempt)>,
    /// Tokens are never reused: an old context must not find a new attempt.
    next: u32,
}

thread_local! {
    static TRACKING: RefCell<Option<Tracking>> = const { RefCell::new(None) };
    /// The attempt whose function is running now (0: none).
    static CURRENT: Cell<u32> = const { Cell::new(0) };
}

/// Starts tracking attempts (once; a retryer's policy asked for it).
pub fn enable() {
    if enabled() {
        return;
    }
    // Made before the tracking is borrowed: this runs the host's code.
    let storage = async_storage();
    TRACKING.with(|t| {
        if let Ok(mut t) = t.try_borrow_mut() {
            if t.is_none() {
                *t = Some(Tracking {
                    storage,
                    attempts: Vec::new(),
                    next: 1,
                });
            }
        }
    });
}

/// Whether attempts are tracked.
pub fn enabled() -> bool {
    TRACKING.with(|t| t.try_borrow().is_ok_and(|t| t.is_some()))
}

/// `new AsyncLocalStorage()` and `Reflect.apply`, where the host has them.
fn async_storage() -> Option<(AsyncStorage, Function)> {
    let global = js_sys::global();
    let process = props::get(&global, "process").ok()?;
    let builtin = props::function(props::get(&process, "getBuiltinModule").ok()?)?;
    let hooks = builtin
        .call1(&process, &props::key_of("node:async_hooks"))
        .ok()?;
    let class = props::function(props::get(&hooks, "AsyncLocalStorage").ok()?)?;
    let storage = js_sys::Reflect::construct(&class, &Array::new()).ok()?;
    let reflect = props::get(&global, "Reflect").ok()?;
    let apply = props::function(props::get(&reflect, "apply").ok()?)?;
    Some((storage.unchecked_into(), apply))
}

/// The host's async context, if attempts are tracked and it has one.
fn storage() -> Option<(AsyncStorage, Function)> {
    TRACKING.with(|t| {
        let t = t.try_borrow().ok()?;
        let (s, apply) = t.as_ref()?.storage.as_ref()?;
        Some((s.clone(), apply.clone()))
    })
}

/// The attempt a flow starting now is nested in: `Some(forbids)` when it
/// is started inside an attempt that is still running.
pub fn current() -> Option<bool> {
    let mut token = CURRENT.with(Cell::get);
    if token == 0 {
        // Asked with no borrow held: the host's code runs.
        token = storage()?.0.get_store().as_f64()? as u32;
    }
    let (runner, gen, attempt, forbids) = TRACKING.with(|t| {
        let t = t.try_borrow().ok()?;
        let (_, a) = t.as_ref()?.attempts.iter().find(|(k, _)| *k == token)?;
        Some((a.runner.clone(), a.gen, a.attempt, a.forbids))
    })?;
    if !runner.upgrade()?.is_running(gen, attempt) {
        forget(token);
        return None;
    }
    Some(forbids)
}

/// Calls `f` on `receiver` with `args` (the function of attempt `attempt`
/// of flow `gen`, run by `runner`) as the current attempt, synchronously
/// and, where the host has one, in an async context. Returns the token, to
/// forget when the attempt is over. `traced`: the call is made inside the
/// attempt channel's stores, as [`Channels::call`] makes it.
#[allow(clippy::too_many_arguments)]
pub fn call_in(
    runner: Weak<dyn Running>,
    gen: u32,
    attempt: u32,
    forbids: bool,
    f: &JsValue,
    receiver: &JsValue,
    args: &Array,
    traced: Option<(&Channels, &JsValue)>,
) -> (u32, Result<JsValue, JsValue>) {
    let token = TRACKING.with(|t| {
        let mut t = t.try_borrow_mut().ok()?;
        let t = t.as_mut()?;
        let token = t.next;
        t.next = t.next.wrapping_add(1).max(1);
        t.attempts.push((
            token,
            Attempt {
                runner,
                gen,
                attempt,
                forbids,
            },
        ));
        Some(token)
    });
    let Some(token) = token else {
        return (0, apply(f, receiver, args, traced));
    };
    let outer = CURRENT.with(|c| c.replace(token));
    // No borrow is held here: the function may start flows of its own.
    let result = match (storage(), traced) {
        (Some((storage, apply)), None) => storage.run(token, &apply, f, receiver, args),
        // storage.run(token, Reflect.apply, f, receiver, args), made inside
        // the attempt channel's stores.
        (Some((storage, apply)), Some((trace, context))) => {
            let run = props::get(&storage, "run").unwrap_or(JsValue::UNDEFINED);
            let inner = Array::of5(&token.into(), &apply, f, receiver, args);
            trace.call(context, &run, &storage, &inner)
        }
        (None, traced) => self::apply(f, receiver, args, traced),
    };
    CURRENT.with(|c| c.set(outer));
    (token, result)
}

/// Drops what is known of an attempt that is over.
#[inline(never)]
pub fn forget(token: u32) {
    if token == 0 {
        return;
    }
    let gone = TRACKING.with(|t| {
        let mut t = t.try_borrow_mut().ok()?;
        let attempts = &mut t.as_mut()?.attempts;
        let i = attempts.iter().position(|(k, _)| *k == token)?;
        Some(attempts.swap_remove(i))
    });
    drop(gone);
}

/// `f.apply(receiver, args)`, for hosts without an async context (inside
/// the attempt channel's stores when `traced`).
fn apply(
    f: &JsValue,
    receiver: &JsValue,
    args: &Array,
    traced: Option<(&Channels, &JsValue)>,
) -> Result<JsValue, JsValue> {
    match (f.dyn_ref::<Function>(), traced) {
        (Some(f), None) => js_sys::Reflect::apply(f, receiver, args),
        (Some(f), Some((trace, context))) => trace.call(context, f, receiver, args),
        (None, _) => Err(super::errors::type_error(
            &["the retryer's fn is not a function; got ", &props::show(f)].concat(),
        )),
    }
}
