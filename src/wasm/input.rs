//! Options in, for `AsyncRetryer`, `retryFetch` and `RetryBudget` alike: an
//! options object is read once by [`entries::read`] (a getter or Proxy trap
//! runs once, and what it throws becomes a `TypeError`); a retryer's values
//! are classified for the core, which validates them, and [`build`] makes
//! the policy and the merged options view (`retryer.options`) together.

use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;

use js_sys::{Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use super::circuit::Circuits;
use super::entries;
use super::errors::{self, Owner};
use super::js;
use super::nesting;
use super::props;
use super::shared;
use crate::core::breaker::{Breaker, SettingError, Settings, SETTINGS};
use crate::core::budget::{Budget, BudgetError, DEFAULT_MAX_TOKENS, DEFAULT_TOKEN_RATIO};
use crate::core::options::{
    self as core_options, ErrorKind, Opt, OptionError, Policy, Raw, Throw, INITIAL_FIELDS,
};

/// One option as given: its name, what the core calls it, and its value.
pub struct Given {
    pub opt: Opt,
    pub value: JsValue,
}

/// What a call's options bring besides the policy.
#[derive(Default)]
pub struct Extras {
    /// `budget` was given: the budget, or `None` when set to `undefined`.
    pub budget: Option<Option<Rc<RefCell<Budget>>>>,
    /// `breaker` was given: the breaker, or `None` when set to `undefined`.
    pub breaker: Option<Option<Rc<Circuits>>>,
    /// `initialState.lastResult` and `.lastError`, when given.
    pub last_result: Option<JsValue>,
    pub last_error: Option<JsValue>,
    /// `key` was given.
    pub key: Option<JsValue>,
}

/// Reads a retryer's `options` once: its own enumerable keys, then each
/// value, in order. `undefined` reads as no options; anything else that is
/// not an object, an unknown name, or a read that throws is a `TypeError`.
pub fn read(options: &JsValue) -> Result<Vec<Given>, JsValue> {
    let mut given = Vec::new();
    entries::read(options, "options", |name, value| {
        let Some(opt) = Opt::from_name(&name) else {
            return Err(errors::unknown_option(Owner::Retryer, &name, &value));
        };
        given.push(Given { opt, value });
        Ok(())
    })?;
    Ok(given)
}

/// A retryer's options, built: the policy, what comes with it, and the
/// view `retryer.options` shows.
pub struct Built {
    pub policy: Policy,
    pub extras: Extras,
    pub view: JsValue,
}

/// Applies `given` over `policy` (a copy of the current one, or the
/// defaults) and `base` (the current view, or none for the defaults), and
/// starts tracking attempts if the new policy asks for it. Nothing is
/// changed when a value is refused: the caller keeps what it had.
pub fn build(
    mut policy: Policy,
    base: Option<&JsValue>,
    given: &[Given],
) -> Result<Built, JsValue> {
    let extras = apply(&mut policy, given)?;
    let view = view(base, given, &policy)?.into();
    if policy.tracks_nesting() {
        nesting::enable();
    }
    Ok(Built {
        policy,
        extras,
        view,
    })
}

/// The entries of a shared object's options (`owner`'s), read once: the
/// value given for each of `names`, `undefined` where none was; any other
/// name is a `TypeError`. One copy of the reading loop for both classes.
#[inline(never)]
fn named(options: &JsValue, owner: Owner, names: &[&str]) -> Result<Vec<JsValue>, JsValue> {
    let mut values: Vec<JsValue> = names.iter().map(|_| JsValue::UNDEFINED).collect();
    let what = match owner {
        Owner::Breaker => "CircuitBreaker options",
        _ => "RetryBudget options",
    };
    entries::read(options, what, |name, value| {
        let slot = names.iter().position(|n| *n == name);
        match slot.and_then(|i| values.get_mut(i)) {
            Some(slot) => *slot = value,
            None => return Err(errors::unknown_option(owner, &name, &value)),
        }
        Ok(())
    })?;
    Ok(values)
}

/// A number option of a shared object, or the `TypeError` naming it.
fn number_of(owner: Owner, name: &str, words: &str, value: &JsValue) -> Result<f64, JsValue> {
    value
        .as_f64()
        .ok_or_else(|| errors::must_be(owner, name, words, value, ErrorKind::Type))
}

/// `maxTokens` and `tokenRatio` of `new RetryBudget(options)`, read once and
/// checked by the core.
pub fn budget(options: &JsValue) -> Result<Budget, JsValue> {
    const NAMES: [&str; 2] = ["maxTokens", "tokenRatio"];
    let given = named(options, Owner::Budget, &NAMES)?;
    let mut n = [DEFAULT_MAX_TOKENS, DEFAULT_TOKEN_RATIO];
    for ((slot, name), value) in n.iter_mut().zip(NAMES).zip(&given) {
        if !value.is_undefined() {
            *slot = number_of(Owner::Budget, name, BUDGET_WORDS, value)?;
        }
    }
    Budget::new(n[0], n[1]).map_err(|e| {
        let i = usize::from(e == BudgetError::TokenRatio);
        let value = given.get(i).cloned().unwrap_or(JsValue::UNDEFINED);
        let name = NAMES.get(i).copied().unwrap_or_default();
        errors::must_be(Owner::Budget, name, BUDGET_WORDS, &value, ErrorKind::Range)
    })
}

const BUDGET_WORDS: &str = "a finite number > 0";

/// `new CircuitBreaker(options)`'s options, read once and checked by the
/// core: the settings, `onStateChange`, and `breakDuration` when it is a
/// function.
pub fn breaker(options: &JsValue) -> Result<Circuits, JsValue> {
    const NAMES: [&str; 7] = [
        "failureRatio",
        "minimumThroughput",
        "samplingDuration",
        "consecutiveFailures",
        "breakDuration",
        "halfOpenCalls",
        "onStateChange",
    ];
    let given = named(options, Owner::Breaker, &NAMES)?;
    let mut settings = Settings::default();
    let mut break_fn = None;
    for (which, value) in SETTINGS.iter().zip(&given) {
        if value.is_undefined() {
        } else if *which == SettingError::BreakDuration && value.is_function() {
            break_fn = Some(value.clone().unchecked_into());
        } else {
            settings.set(
                *which,
                number_of(Owner::Breaker, which.name(), which.expected(), value)?,
            );
        }
    }
    let listener = given.last().cloned().unwrap_or(JsValue::UNDEFINED);
    let listener = match listener.is_undefined() {
        true => None,
        false => Some(listener.dyn_into().map_err(|v| {
            errors::must_be(
                Owner::Breaker,
                "onStateChange",
                "a function",
                &v,
                ErrorKind::Type,
            )
        })?),
    };
    settings.dynamic_break = break_fn.is_some();
    settings.check().map_err(|e| {
        let i = SETTINGS.iter().position(|w| *w == e).unwrap_or(0);
        let value = given.get(i).cloned().unwrap_or(JsValue::UNDEFINED);
        errors::must_be(
            Owner::Breaker,
            e.name(),
            e.expected(),
            &value,
            ErrorKind::Range,
        )
    })?;
    Ok(Circuits::new(Breaker::new(settings), listener, break_fn))
}

/// Applies `given` to `policy` (a copy of the current one, or the
/// defaults), entry by entry, then the cross-option checks. A refused value
/// is an `Err` naming it; the caller keeps its old policy then.
pub fn apply(policy: &mut Policy, given: &[Given]) -> Result<Extras, JsValue> {
    let mut extras = Extras::default();
    for g in given {
        let set = with_raw(&g.value, |raw| policy.set(g.opt, raw));
        set.map_err(|e| errors::option_error(e, &g.value))?;
        match g.opt {
            Opt::Intervals if policy.intervals.is_some() => intervals(policy, &g.value)?,
            Opt::InitialState if g.value.is_object() => {
                initial_state(policy, &g.value, &mut extras)?
            }
            Opt::Budget => {
                if props::freed(&g.value) {
                    return Err(errors::freed_option(g.opt.name(), "RetryBudget"));
                }
                extras.budget = Some(shared::of(&g.value));
            }
            Opt::Breaker => {
                if props::freed(&g.value) {
                    return Err(errors::freed_option(g.opt.name(), "CircuitBreaker"));
                }
                extras.breaker = Some(shared::of(&g.value));
            }
            Opt::Key => extras.key = Some(g.value.clone()),
            _ => {}
        }
    }
    policy.finish().map_err(|e: OptionError| {
        let value = given
            .iter()
            .rev()
            .find(|g| g.opt == e.opt)
            .map_or(JsValue::UNDEFINED, |g| g.value.clone());
        errors::option_error(e, &value)
    })?;
    Ok(extras)
}

fn intervals(policy: &mut Policy, list: &JsValue) -> Result<(), JsValue> {
    let len = props::length_of(list).unwrap_or(0);
    for i in 0..len {
        let entry =
            Reflect::get_u32(list, i).map_err(|e| errors::unreadable("option 'intervals'", &e))?;
        with_raw(&entry, |raw| policy.push_interval(i, raw))
            .map_err(|e| errors::option_error(e, list))?;
    }
    Ok(())
}

fn initial_state(policy: &mut Policy, state: &JsValue, extras: &mut Extras) -> Result<(), JsValue> {
    for (field, name) in INITIAL_FIELDS.iter().enumerate() {
        let value =
            props::get(state, name).map_err(|e| errors::unreadable("option 'initialState'", &e))?;
        // lastResult and lastError may be any value: only presence matters.
        let shown = if field >= 3 && !value.is_undefined() {
            JsValue::NULL
        } else {
            value.clone()
        };
        with_raw(&shown, |raw| policy.set_initial(field as u32, raw))
            .map_err(|e| errors::option_error(e, state))?;
        match field {
            3 => extras.last_result = Some(value),
            4 => extras.last_error = Some(value),
            _ => {}
        }
    }
    Ok(())
}

/// Defaults as `retryer.options` shows them; the numbers are the core's.
fn default_of(opt: Opt) -> Option<JsValue> {
    Some(match opt {
        Opt::Backoff => props::key_of("exponential"),
        Opt::BaseWait => core_options::DEFAULT_BASE_WAIT.into(),
        Opt::Enabled => JsValue::TRUE,
        Opt::Jitter => core_options::DEFAULT_JITTER.into(),
        Opt::MaxAttempts => core_options::DEFAULT_MAX_ATTEMPTS.into(),
        Opt::MaxExecutionTime => core_options::DEFAULT_MAX_EXECUTION_TIME.into(),
        Opt::MaxTotalExecutionTime => core_options::DEFAULT_MAX_TOTAL_EXECUTION_TIME.into(),
        Opt::MaxWait => core_options::DEFAULT_MAX_WAIT.into(),
        Opt::ThrowOnError => props::key_of("last"),
        _ => return None,
    })
}

/// The options with a default, in the order `retryer.options` lists them.
const WITH_DEFAULTS: [Opt; 9] = [
    Opt::Backoff,
    Opt::BaseWait,
    Opt::Enabled,
    Opt::Jitter,
    Opt::MaxAttempts,
    Opt::MaxExecutionTime,
    Opt::MaxTotalExecutionTime,
    Opt::MaxWait,
    Opt::ThrowOnError,
];

thread_local! {
    /// The defaults as `retryer.options` shows them, copied into each new
    /// view in one call.
    static DEFAULTS: JsValue = {
        let defaults = Object::new();
        for opt in WITH_DEFAULTS {
            if let Some(d) = default_of(opt) {
                let _ = props::set(&defaults, opt.name(), &d);
            }
        }
        defaults.into()
    };
}

/// The merged options view: `base` (the previous view, or none for a new
/// retryer, which starts from the defaults) with `given` over it; an option
/// set to `undefined` falls back to its default or disappears. Its
/// `throwOnError` is the one the core applies (`false` when `onError` is
/// given and `throwOnError` is not).
pub fn view(base: Option<&JsValue>, given: &[Given], policy: &Policy) -> Result<Object, JsValue> {
    let view = Object::new();
    let set = |name: &'static str, value: &JsValue| props::set(&view, name, value);
    let base = match base {
        Some(b) => b.clone(),
        None => DEFAULTS.with(JsValue::clone),
    };
    js::object_assign(&view, &base).map_err(|e| errors::unreadable("retryer.options", &e))?;
    for g in given {
        if !g.value.is_undefined() {
            set(g.opt.name(), &g.value)?;
        } else if let Some(d) = default_of(g.opt) {
            set(g.opt.name(), &d)?;
        } else {
            Reflect::delete_property(&view, &props::key_of(g.opt.name()))?;
        }
    }
    let throw = match policy.throw_mode() {
        Throw::Last => props::key_of("last"),
        Throw::Always => JsValue::TRUE,
        Throw::Never => JsValue::FALSE,
    };
    set(Opt::ThrowOnError.name(), &throw)?;
    Ok(view)
}

/// Runs `f` on the core's view of `value`. Never runs user code except a
/// revoked Proxy's traps, whose exceptions are caught.
fn with_raw<T>(value: &JsValue, f: impl FnOnce(Raw<'_>) -> T) -> T {
    if value.is_undefined() {
        return f(Raw::Undefined);
    }
    if value.is_null() {
        return f(Raw::Null);
    }
    if let Some(b) = value.as_bool() {
        return f(Raw::Bool(b));
    }
    if let Some(n) = value.as_f64() {
        return f(Raw::Number(n));
    }
    if let Some(s) = value.as_string() {
        return f(Raw::Str(&s));
    }
    if value.is_function() {
        return f(Raw::Function);
    }
    if !value.is_object() {
        // A symbol or a bigint: no option takes one.
        return f(Raw::Other);
    }
    match js::is_array(value) {
        // An array whose length cannot be read is no array of delays.
        Ok(true) => return f(props::length_of(value).map_or(Raw::Other, Raw::Array)),
        Ok(false) => {}
        Err(_) => return f(Raw::Other),
    }
    // The core only needs to know which class it is: the retryer holds it.
    if let Some(shared) = shared::any(value) {
        if shared.is::<RefCell<Budget>>() {
            return f(Raw::Budget(0));
        }
        if shared.is::<Circuits>() {
            return f(Raw::Breaker);
        }
    }
    if props::is_signal(value) {
        return f(Raw::Signal);
    }
    f(Raw::Object)
}
