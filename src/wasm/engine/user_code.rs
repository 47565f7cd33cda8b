//! Calling the user's code: the wrapped function, the callbacks and the
//! option functions of a retryer. Each kind of call has one place here
//! that turns what the code returned or threw into what the engine takes:
//! - the function's return or throw becomes the attempt's promise;
//! - a callback's throw is the flow's first throw (the machine is told);
//! - an option function's throw is `Provided::Threw` (its return is
//!   classified for the core).
//!
//! Everything is read from the retryer's object when called (`fn`, and
//! `options` with the callbacks on it), as pacer reads `this.fn` and
//! `this.options`, so Rust keeps none of it.

use alloc::rc::Weak;

use js_sys::{Function, Promise};
use wasm_bindgen::{JsCast, JsValue};

use super::super::js::{self, Holder};
use super::super::nesting::{self, Running};
use super::super::props;
use super::super::tracing::Channels;
use super::execution::Execution;
use crate::core::effect::{AbortReason, Eval, GiveUp, Provided};
use crate::core::options::{Cb, Opt};

/// Where an attempt is tracked for nesting: who runs it, and whether flows
/// started in it must pass through.
pub struct Nesting {
    pub runner: Weak<dyn Running>,
    pub forbids: bool,
}

/// Attempt `attempt` of `exec`: `me.fn(...args)`, as a promise. A value, a
/// thenable or a throw all become a promise; a promise (as an async
/// function returns) is used as it is. `traced`: the call is made inside
/// the attempt channel's stores (see `tracing::Channels::call`).
pub fn attempt(
    me: &JsValue,
    exec: &Execution,
    attempt: u32,
    nested: Option<Nesting>,
    traced: Option<(&Channels, &JsValue)>,
) -> JsValue {
    let called = match (nested, traced) {
        (Some(n), traced) => {
            // As the current attempt, for the retryers it starts.
            let f = props::get(me, "fn").unwrap_or(JsValue::UNDEFINED);
            let (token, called) = nesting::call_in(
                n.runner, exec.gen, attempt, n.forbids, &f, me, &exec.args, traced,
            );
            exec.set_token(attempt, token);
            called
        }
        (None, Some((trace, context))) => {
            let f = props::get(me, "fn").unwrap_or(JsValue::UNDEFINED);
            trace.call(context, &f, me, &exec.args)
        }
        (None, None) => {
            let holder: &Holder = me.unchecked_ref();
            if exec.kind.no_args() {
                holder.call_fn0()
            } else {
                holder.call_fn(&exec.args)
            }
        }
    };
    match called {
        Ok(v) => v,
        Err(e) => Promise::reject(&e).into(),
    }
}

/// The function an option of the retryer whose object is `me` holds now
/// (`retryer.options[opt]`), if any, with the options object it is called
/// on.
fn option_fn(me: &JsValue, opt: Opt) -> Option<(JsValue, Function)> {
    let options = props::get(me, "options").ok()?;
    let f = props::get(&options, opt.name())
        .ok()
        .and_then(props::function)?;
    Some((options, f))
}

/// Runs callback `cb` (given `arg`: see `Effect::Call`) for `exec`.
/// `Err` if it threw; what it threw is the flow's, if nothing threw before.
pub fn callback(me: &JsValue, exec: &Execution, cb: Cb, arg: u32) -> Result<(), ()> {
    let Some((options, f)) = option_fn(me, cb.opt()) else {
        return Ok(());
    };
    let o = &options;
    let result = match cb {
        Cb::Retry => f.call3(o, &arg.into(), &exec.value(), me),
        Cb::Error => f.call3(o, &exec.value(), &exec.args, me),
        Cb::LastError => f.call2(o, &exec.value(), me),
        Cb::Success => f.call3(o, &exec.value(), &exec.args, me),
        Cb::Settled => f.call2(o, &exec.args, me),
        Cb::Abort => {
            let reason = AbortReason::from_code(arg).unwrap_or(AbortReason::Manual);
            f.call2(o, &props::key_of(reason.name()), me)
        }
        Cb::ExecutionTimeout | Cb::TotalExecutionTimeout => f.call1(o, me),
        Cb::GiveUp => {
            let reason = GiveUp::from_code(arg).unwrap_or(GiveUp::AttemptsExhausted);
            f.call3(o, &exec.value(), &props::key_of(reason.name()), me)
        }
        // Their own effects, with the wait or the start (`backoff` and
        // `hedge` below).
        Cb::Backoff | Cb::Hedge => return Ok(()),
    };
    result.map(drop).map_err(|e| exec.threw(e))
}

/// `onBackoff({ delay, attempt, error, elapsed }, retryer)` (`cb` is
/// `Backoff`, `n` the delay) or `onHedge({ attempt, elapsed, running },
/// retryer)` (`n` the attempts running); `Err` as for [`callback`].
pub fn notify(
    me: &JsValue,
    exec: &Execution,
    cb: Cb,
    attempt: u32,
    n: f64,
    elapsed: f64,
) -> Result<(), ()> {
    let Some((options, f)) = option_fn(me, cb.opt()) else {
        return Ok(());
    };
    let info = if cb == Cb::Backoff {
        js::backoff_info(n, attempt, &exec.value(), elapsed)
    } else {
        js::hedge_info(attempt, elapsed, n)
    };
    f.call2(&options, &info, me)
        .map(drop)
        .map_err(|e| exec.threw(e))
}

/// The value option `what` has now for `exec` at attempt `attempt`: its
/// function's answer (a value put in place of the function is taken as it
/// is, as pacer's `parseFunctionOrValue` does), classified for the core.
pub fn evaluate(me: &JsValue, exec: &Execution, what: Eval, attempt: u32) -> Provided {
    let answer = props::get(me, "options")
        .and_then(|o| props::get(&o, what.opt().name()))
        .and_then(|value| match props::function(value.clone()) {
            Some(f) => {
                let u = &JsValue::UNDEFINED;
                match what {
                    Eval::ShouldRetry | Eval::RetryAfter => {
                        f.call3(u, &exec.value(), &attempt.into(), me)
                    }
                    Eval::Backoff | Eval::Hedge => f.call2(u, &attempt.into(), me),
                    _ => f.call1(u, me),
                }
            }
            None => Ok(value),
        });
    match answer {
        Ok(v) => {
            let truthy = matches!(what, Eval::Enabled | Eval::ShouldRetry);
            let p = exec
                .kind
                .answer(what, &exec.value(), &v, provided(&v, truthy));
            exec.invalid.set(v);
            p
        }
        Err(e) => {
            exec.threw(e);
            Provided::Threw
        }
    }
}

/// A dynamic `enabled`, asked outside a flow for the `status` shown: its
/// truthiness, or `None` if it threw (nobody can receive that error now:
/// the next `execute()` asks again and rejects with what it throws).
pub fn enabled_now(me: &JsValue) -> Option<bool> {
    let (_, f) = option_fn(me, Opt::Enabled)?;
    f.call1(&JsValue::UNDEFINED, me).ok().map(|v| v.is_truthy())
}

/// What an option function returned, as the core takes it; `truthy` for
/// the options whose answer counts only as true or false.
pub fn provided(value: &JsValue, truthy: bool) -> Provided {
    if truthy {
        Provided::Bool(value.is_truthy())
    } else if value.is_undefined() || value.is_null() {
        Provided::Nothing
    } else if let Some(b) = value.as_bool() {
        Provided::Bool(b)
    } else if let Some(n) = value.as_f64() {
        Provided::Number(n)
    } else {
        Provided::Other
    }
}
