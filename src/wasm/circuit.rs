//! A circuit breaker's JavaScript side (SPEC §2e): the core's circuits
//! (`core::breaker`), its `breakDuration` function and `onStateChange`,
//! and what each change tells: the listener, `channel('retry-wasm:breaker')`.
//!
//! Every decision is the core's; this file reads the clock, lends the
//! circuits for one call at a time, and tells a change only once the
//! borrow is over, since what it calls is user code that may call the
//! breaker again.

use alloc::string::String;
use core::cell::{Cell, OnceCell, RefCell};

use js_sys::{Function, Object, WeakRef};
use wasm_bindgen::prelude::*;

use super::tracing;
use crate::core::breaker::{Breaker, CircuitState, Permit, Transition, DEFAULT_BREAK_DURATION};

#[wasm_bindgen(inline_js = r#"
const CLASS = Symbol.for('retry-wasm.CircuitOpenError');

function made() {
  return class CircuitOpenError extends Error {
    constructor(key = '', retryAfter = 0) {
      const where = key === '' ? 'the circuit' : `the circuit for ${key}`;
      const when = retryAfter === Infinity ? 'isolated until reset'
        : `open; a probe may go in ${Math.ceil(retryAfter)} ms`;
      super(`retry-wasm: ${where} is ${when}`);
      this.name = 'CircuitOpenError';
      this.key = key;
      this.retryAfter = retryAfter;
    }
  };
}

// One class per realm, whichever engine made it first, so `instanceof`
// holds for a refusal of either build a page loads.
let CircuitOpenError;
try {
  CircuitOpenError = globalThis[CLASS] ??= made();
} catch {
  CircuitOpenError = made();
}

export function openErrorClass(_) {
  return CircuitOpenError;
}

export function refusal(key, retryAfter) {
  return new CircuitOpenError(key, retryAfter);
}

const ratio = (failures, calls) => (calls > 0 ? failures / calls : 0);

export function change(key, from, to, reason, failures, calls, breakDuration) {
  return { key, from, to, reason, failures, calls, failureRatio: ratio(failures, calls), breakDuration };
}

export function look(into, key, state, calls, failures, retryAfter) {
  into[key] = { state, calls, failures, failureRatio: ratio(failures, calls), retryAfter };
}

let warned;

// A breaker's callback that fails is said once, as a warning; the call
// whose attempt made the change goes on.
function failed(what, e) {
  if (warned) return;
  warned = true;
  const text = `retry-wasm: a CircuitBreaker's ${what}`;
  try {
    const p = globalThis.process;
    if (typeof p?.emitWarning === 'function') p.emitWarning(text, { code: 'RETRY_WASM_BREAKER', detail: String(e?.stack ?? e) });
    else globalThis.console?.warn?.(text, e);
  } catch {}
}

// The functions live on the breaker's own object, not in the engine's
// table of values (a GC root): a listener that closes over its breaker
// would keep it alive forever.
export function keep(breaker, listener, breakDuration, _) {
  Object.defineProperties(breaker, {
    _onStateChange: { value: listener },
    _breakDuration: { value: breakDuration },
  });
}

export function tell(info, self, _) {
  const breaker = self.deref();
  if (breaker === undefined) return;
  try {
    breaker._onStateChange(info, breaker);
  } catch (e) {
    failed('onStateChange threw; the circuit changed all the same', e);
  }
}

export function originOf(url) {
  try {
    return new URL(String(url), globalThis.location?.href).origin;
  } catch {
    return '';
  }
}

export function askBreak(self, key, failures, calls, halfOpenAttempts, error) {
  const breaker = self.deref();
  if (breaker === undefined) return -1;
  try {
    const ms = breaker._breakDuration({ key, failures, calls, failureRatio: ratio(failures, calls), halfOpenAttempts, error });
    if (typeof ms === 'number' && ms >= 0 && ms < Infinity) return ms;
    failed(`breakDuration returned ${String(ms)}, not a finite number >= 0; the circuit opens for 5000 ms`);
  } catch (e) {
    failed('breakDuration threw; the circuit opens for 5000 ms', e);
  }
  return -1;
}
"#)]
extern "C" {
    /// The `CircuitOpenError` class of this realm. (Each import here whose
    /// arguments and result are all values wasm-bindgen passes as they are
    /// takes an unused number: else it would be linked to the snippet
    /// module itself, and the build wants every import to go through the
    /// glue.)
    #[wasm_bindgen(js_name = openErrorClass)]
    fn open_error_class_js(unused: u32) -> JsValue;
    /// `new CircuitOpenError(key, retryAfter)`.
    fn refusal(key: &str, retry_after: f64) -> JsValue;
    /// What `onStateChange` and the channel receive.
    #[allow(clippy::too_many_arguments)]
    fn change(
        key: &str,
        from: &str,
        to: &str,
        reason: &str,
        failures: u32,
        calls: u32,
        break_duration: f64,
    ) -> JsValue;
    /// `into[key] = { state, calls, failures, failureRatio, retryAfter }`.
    fn look(into: &Object, key: &str, state: &str, calls: u32, failures: u32, retry_after: f64);
    /// Keeps `onStateChange` and a `breakDuration` function on the
    /// breaker's object.
    fn keep(breaker: &JsValue, listener: &JsValue, break_fn: &JsValue, unused: u32);
    /// `onStateChange(info, breaker)` of the breaker `me` refers to, a
    /// throw warned about once.
    fn tell(info: &JsValue, me: &WeakRef, unused: u32);
    /// `new URL(url, location).origin`, or `''` for no URL.
    #[cfg(feature = "fetch")]
    #[wasm_bindgen(js_name = originOf)]
    fn origin_js(url: &JsValue) -> String;
    /// The `breakDuration` function's answer, or -1 when it threw or gave
    /// no finite number >= 0 (warned about once).
    #[wasm_bindgen(js_name = askBreak)]
    fn ask_break(
        me: &WeakRef,
        key: &str,
        failures: u32,
        calls: u32,
        half_open_attempts: u32,
        error: &JsValue,
    ) -> f64;
}

/// The `CircuitOpenError` class of this realm.
pub fn open_error_class() -> JsValue {
    open_error_class_js(0)
}

/// The error of an attempt the circuit for `key` refused: it may let one
/// through in `retry_after` ms (`Infinity`: isolated).
pub fn open_error(key: &str, retry_after: f64) -> JsValue {
    refusal(key, retry_after)
}

/// The circuit key of a `retryFetch` request for `url`: its origin, as
/// `new URL(url).origin` gives it (against the page's location where there
/// is one).
#[cfg(feature = "fetch")]
pub fn origin_of(url: &JsValue) -> String {
    origin_js(url)
}

/// One `CircuitBreaker`: shared by every retryer and `retryFetch` given it.
pub struct Circuits {
    core: RefCell<Breaker>,
    /// There is an `onStateChange` (kept on the breaker's object).
    listener: bool,
    /// `breakDuration` is a function (kept on the breaker's object).
    break_fn: bool,
    /// The breaker's own object, weakly, where its functions are: weak, or
    /// the breaker would hold itself in wasm-bindgen's table (a GC root)
    /// and never be collected. (While any retryer uses the breaker, its
    /// options hold the object.)
    me: OnceCell<WeakRef>,
    /// The functions, until [`Circuits::know`] puts them on the object.
    functions: Cell<Option<(JsValue, JsValue)>>,
}

impl Circuits {
    /// A breaker with validated settings and its functions.
    pub fn new(core: Breaker, listener: Option<Function>, break_fn: Option<Function>) -> Circuits {
        let (has_listener, has_break) = (listener.is_some(), break_fn.is_some());
        let functions = (has_listener || has_break).then(|| {
            let f = |f: Option<Function>| f.map_or(JsValue::UNDEFINED, JsValue::from);
            (f(listener), f(break_fn))
        });
        Circuits {
            core: RefCell::new(core),
            listener: has_listener,
            break_fn: has_break,
            me: OnceCell::new(),
            functions: Cell::new(functions),
        }
    }

    /// `object` is the breaker's own object: its functions go there.
    pub fn know(&self, object: &JsValue) {
        if let Some((listener, break_fn)) = self.functions.take() {
            keep(object, &listener, &break_fn, 0);
            let _ = self.me.set(WeakRef::new(object.unchecked_ref()));
        }
    }

    /// An attempt for `key` asks to go now (§2e rule 1): `Ok` with its
    /// permit (`None` only if the circuits are in use, which no path
    /// allows: the attempt then goes unrecorded) and whether a change was
    /// told (a listener ran), `Err(ms)` refused. A closed circuit answers
    /// without the clock.
    pub fn permit(&self, key: &str) -> Result<(Option<Permit>, bool), f64> {
        let Ok(mut core) = self.core.try_borrow_mut() else {
            return Ok((None, false));
        };
        if let Some(p) = core.closed_permit(key) {
            return Ok((Some(p), false));
        }
        let (out, change) = core.permit(key, js_sys::Date::now());
        drop(core);
        let told = change.is_some();
        if let Some(t) = change {
            self.changed(t, &JsValue::UNDEFINED);
        }
        out.map(|p| (Some(p), told))
    }

    /// The attempt holding `permit` ended at `now`, a success when `ok`; a
    /// failure's `error` is what a `breakDuration` function is shown.
    pub fn record(&self, permit: Permit, ok: bool, error: &JsValue, now: f64) {
        let change = match self.core.try_borrow_mut() {
            Ok(mut core) => core.record(permit, ok, now),
            Err(_) => None,
        };
        if let Some(t) = change {
            self.changed(t, error);
        }
    }

    /// The attempt holding `permit` ended with nothing to record.
    pub fn release(&self, permit: Permit) {
        if let Ok(mut core) = self.core.try_borrow_mut() {
            core.release(permit);
        }
    }

    /// `isolate(key)` (`reset` when `reset`).
    pub fn force(&self, key: &str, reset: bool) {
        let now = js_sys::Date::now();
        let change = match self.core.try_borrow_mut() {
            Ok(mut core) if reset => core.reset(key, now),
            Ok(mut core) => core.isolate(key, now),
            Err(_) => None,
        };
        if let Some(t) = change {
            self.changed(t, &JsValue::UNDEFINED);
        }
    }

    /// `state(key)` now.
    pub fn state(&self, key: &str) -> &'static str {
        let now = js_sys::Date::now();
        self.core
            .try_borrow()
            .map_or(CircuitState::Closed, |c| c.state(key, now))
            .name()
    }

    /// `snapshot()`: every key the breaker holds (each key seen, up to
    /// `KEPT_CIRCUITS`), with its circuit now.
    pub fn snapshot(&self) -> Object {
        let now = js_sys::Date::now();
        let into = Object::new();
        if let Ok(core) = self.core.try_borrow() {
            for i in 0..core.len() as u32 {
                if let Some((state, calls, failures, retry_after)) = core.look(i, now) {
                    look(
                        &into,
                        core.key(i),
                        state.name(),
                        calls,
                        failures,
                        retry_after,
                    );
                }
            }
        }
        into
    }

    /// Tells change `t` (after asking a `breakDuration` function how long
    /// an opening lasts): `onStateChange`, then the channel.
    fn changed(&self, mut t: Transition, error: &JsValue) {
        let Some(key) = self
            .core
            .try_borrow()
            .ok()
            .map(|c| String::from(c.key(t.circuit)))
        else {
            return;
        };
        if let (CircuitState::Open, true, Some(me)) = (t.to, self.break_fn, self.me.get()) {
            let asked = ask_break(me, &key, t.failures, t.calls, t.half_open_attempts, error);
            let ms = if asked < 0.0 {
                DEFAULT_BREAK_DURATION
            } else {
                asked
            };
            if let Ok(mut core) = self.core.try_borrow_mut() {
                core.set_break(t.circuit, t.epoch, ms);
            }
            t.break_duration = ms;
        }
        let listened = tracing::breaker_observed();
        if !self.listener && !listened {
            return;
        }
        let info = change(
            &key,
            t.from.name(),
            t.to.name(),
            t.why.name(),
            t.failures,
            t.calls,
            t.break_duration,
        );
        if let (true, Some(me)) = (self.listener, self.me.get()) {
            tell(&info, me, 0);
        }
        if listened {
            tracing::breaker_changed(&info);
        }
    }
}
