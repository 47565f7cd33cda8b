//! Every flow and every attempt on the host's tracing channels (SPEC §2d).
//!
//! Where the host has `node:diagnostics_channel` (Node, Deno, Bun; workerd
//! with `nodejs_compat`), reached with `process.getBuiltinModule` so no
//! `node:` import reaches a browser bundle, or where an entry handed one in
//! (`useDiagnosticsChannel`, what `retry-wasm/otel` does in browsers):
//! - `tracingChannel('retry-wasm:execute')`: one trace per flow;
//! - `tracingChannel('retry-wasm:attempt')`: one trace per attempt, the
//!   attempt's call made inside `start.runStores`, so a store an APM binds
//!   there is the attempt's own context;
//! - `channel('retry-wasm:backoff')`: one message per wait.
//!
//! The module is looked up once; each flow asks whether anyone listens
//! before it builds anything, and a flow nobody observes costs that one
//! question. The context objects belong to the flow's execution and go
//! with it.
//!
//! What is published, and in which order, is decided here and in
//! `engine::traced`; the few lines of JavaScript below only build a
//! context object or publish one in a single call from wasm where
//! wasm-bindgen's property sets would take one crossing per field (about
//! 2.5 KB less download, measured on this build).

use alloc::rc::Rc;
use core::cell::RefCell;

use js_sys::Array;
use wasm_bindgen::prelude::*;

use super::props;

#[wasm_bindgen(inline_js = r#"
export function channels(dc) {
  const execute = dc.tracingChannel('retry-wasm:execute');
  const attempt = dc.tracingChannel('retry-wasm:attempt');
  return [execute, attempt, dc.channel('retry-wasm:backoff')];
}

export function observed(c) {
  return c[0].hasSubscribers || c[1].hasSubscribers || c[2].hasSubscribers;
}

export function flowContext(retryer, key, args, request) {
  return request === undefined ? { retryer, key, args } : { retryer, key, args, request };
}

export function attemptContext(retryer, key, attempt, hedged, args) {
  return { retryer, key, attempt, hedged, args };
}

export function publish(c, which, part, context) {
  c[which][part].publish(context);
}

export function tracedCall(c, context, f, receiver, args) {
  const trace = c[1];
  try {
    return trace.start.runStores(context, f, receiver, ...args);
  } finally {
    trace.end.publish(context);
  }
}

export function settle(c, which, context, failed) {
  const trace = c[which];
  if (failed) trace.error.publish(context);
  trace.asyncStart.publish(context);
  trace.asyncEnd.publish(context);
}

export function backoff(c, retryer, key, attempt, delay, error, elapsed) {
  c[2].publish({ retryer, key, attempt, delay, error, elapsed });
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn channels(dc: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch)]
    fn observed(c: &JsValue) -> Result<bool, JsValue>;
    /// `{ retryer, key, args }`, and `request` when given.
    ///
    /// `catch`: an import whose arguments and result are all plain values
    /// would be linked to the snippet module itself, and the build wants
    /// every import to go through the glue.
    #[wasm_bindgen(catch, js_name = flowContext)]
    fn flow_context(
        retryer: &JsValue,
        key: &JsValue,
        args: &JsValue,
        request: &JsValue,
    ) -> Result<JsValue, JsValue>;
    /// `{ retryer, key, attempt, hedged, args }`.
    #[wasm_bindgen(js_name = attemptContext)]
    pub fn attempt_context(
        retryer: &JsValue,
        key: &JsValue,
        attempt: u32,
        hedged: bool,
        args: &JsValue,
    ) -> JsValue;
    #[wasm_bindgen(catch)]
    fn publish(c: &JsValue, which: u32, part: &str, context: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, js_name = tracedCall)]
    fn traced_call(
        c: &JsValue,
        context: &JsValue,
        f: &JsValue,
        receiver: &JsValue,
        args: &JsValue,
    ) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch)]
    fn settle(c: &JsValue, which: u32, context: &JsValue, failed: bool) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    #[allow(clippy::too_many_arguments)]
    fn backoff(
        c: &JsValue,
        retryer: &JsValue,
        key: &JsValue,
        attempt: u32,
        delay: f64,
        error: &JsValue,
        elapsed: f64,
    ) -> Result<(), JsValue>;
}

/// Which tracing channel.
#[derive(Clone, Copy)]
pub enum Traces {
    Execute = 0,
    Attempt = 1,
}

/// The three channels: `[execute, attempt, backoff]`.
pub struct Channels(JsValue);

thread_local! {
    /// `None` until looked up; `Some(None)`: the host has none.
    static CHANNELS: RefCell<Option<Option<Rc<Channels>>>> = const { RefCell::new(None) };
}

/// Hands the engine a `diagnostics_channel` module where the host has none
/// (browsers): `retry-wasm/otel` does, so its spans see every flow.
#[wasm_bindgen(js_name = useDiagnosticsChannel)]
pub fn use_diagnostics_channel(module: JsValue) -> Result<(), JsValue> {
    let found = channels(&module).map_err(|_| {
        super::errors::type_error(
            "useDiagnosticsChannel needs an object shaped like node:diagnostics_channel",
        )
    })?;
    CHANNELS.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            *c = Some(Some(Rc::new(Channels(found))));
        }
    });
    Ok(())
}

/// The channels, when someone listens on one of them now.
pub fn observed_channels() -> Option<Rc<Channels>> {
    let known = CHANNELS.with(|c| c.try_borrow().ok().and_then(|c| c.clone()));
    let found = match known {
        Some(found) => found?,
        None => {
            // Looked up with no borrow held: the host's code runs.
            let found = host_module()
                .and_then(|dc| channels(&dc).ok())
                .map(|c| Rc::new(Channels(c)));
            CHANNELS.with(|c| {
                if let Ok(mut c) = c.try_borrow_mut() {
                    *c = Some(found.clone());
                }
            });
            found?
        }
    };
    observed(&found.0).unwrap_or(false).then_some(found)
}

/// `process.getBuiltinModule('node:diagnostics_channel')`, where there is one.
fn host_module() -> Option<JsValue> {
    let process = props::get(&js_sys::global(), "process").ok()?;
    let builtin = props::function(props::get(&process, "getBuiltinModule").ok()?)?;
    builtin
        .call1(&process, &props::key_of("node:diagnostics_channel"))
        .ok()
        .filter(JsValue::is_object)
}

// A publish never fails the flow: Node's never throws (a subscriber that
// throws is the host's uncaught error), and what a channel handed in
// throws is not the flow's concern, so it is dropped.
impl Channels {
    /// `start` of `which`'s trace, for a trace whose synchronous half is
    /// not a call (a flow).
    pub fn begin(&self, which: Traces, context: &JsValue) {
        drop(publish(&self.0, which as u32, "start", context));
    }

    /// `end` of a trace begun with [`Channels::begin`].
    pub fn end(&self, which: Traces, context: &JsValue) {
        drop(publish(&self.0, which as u32, "end", context));
    }

    /// The attempt channel's `start`, then `f.apply(receiver, args)` inside
    /// the stores bound to it, then its `end`.
    pub fn call(
        &self,
        context: &JsValue,
        f: &JsValue,
        receiver: &JsValue,
        args: &Array,
    ) -> Result<JsValue, JsValue> {
        traced_call(&self.0, context, f, receiver, args)
    }

    /// The asynchronous half of `which`'s trace: `error` when it failed,
    /// then `asyncStart` and `asyncEnd`.
    pub fn settle(&self, which: Traces, context: &JsValue, failed: bool) {
        drop(settle(&self.0, which as u32, context, failed));
    }

    /// A message on the backoff channel.
    #[allow(clippy::too_many_arguments)]
    pub fn backoff(
        &self,
        retryer: &JsValue,
        key: &JsValue,
        attempt: u32,
        delay: f64,
        error: &JsValue,
        elapsed: f64,
    ) {
        drop(backoff(
            &self.0, retryer, key, attempt, delay, error, elapsed,
        ));
    }
}

/// `{ retryer, key, args }`, and `request` when given.
pub fn flow(retryer: &JsValue, key: &JsValue, args: &JsValue, request: &JsValue) -> JsValue {
    flow_context(retryer, key, args, request).unwrap_or(JsValue::UNDEFINED)
}

/// Sets `name` on a context object (its own object: nothing can throw).
pub fn put(context: &JsValue, name: &'static str, value: &JsValue) {
    let _ = props::set(context, name, value);
}
