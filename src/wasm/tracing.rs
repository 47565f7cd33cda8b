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
//! - `channel('retry-wasm:backoff')`: one message per wait;
//! - `channel('retry-wasm:breaker')`: one message per change of a
//!   circuit breaker's circuit (SPEC §2e).
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

use core::cell::Cell;

use js_sys::Array;
use wasm_bindgen::prelude::*;

use super::props;

#[wasm_bindgen(inline_js = r#"
let channels;

export function useChannels(dc) {
  const execute = dc.tracingChannel('retry-wasm:execute');
  const attempt = dc.tracingChannel('retry-wasm:attempt');
  channels = [execute, attempt, dc.channel('retry-wasm:backoff'), dc.channel('retry-wasm:breaker')];
}

export function observed(lookUp) {
  if (lookUp) {
    try {
      const dc = globalThis.process?.getBuiltinModule?.('node:diagnostics_channel');
      if (dc) useChannels(dc);
    } catch {}
  }
  const c = channels;
  try {
    return c !== undefined && (c[0].hasSubscribers || c[1].hasSubscribers || c[2].hasSubscribers);
  } catch {
    return false;
  }
}

export function breakerObserved(lookUp) {
  if (lookUp) observed(true);
  try {
    return channels !== undefined && channels[3].hasSubscribers;
  } catch {
    return false;
  }
}

export function breakerChanged(info, _) {
  try {
    channels[3].publish(info);
  } catch {}
}

export function flowContext(retryer, key, args, request, _) {
  return request === undefined ? { retryer, key, args } : { retryer, key, args, request };
}

export function attemptContext(retryer, key, attempt, hedged, args) {
  return { retryer, key, attempt, hedged, args };
}

export function publish(which, part, context) {
  channels[which][part].publish(context);
}

let warned;

// An observer's failure (a bound store that throws, or that a newer host
// enters in a way it does not support) is never the call's: it is said
// once, as a warning, and the function runs all the same.
function observerFailed(e) {
  if (warned) return;
  warned = true;
  const text = 'retry-wasm: a store bound to tracing:retry-wasm:attempt:start failed; attempts run without it';
  try {
    const p = globalThis.process;
    if (typeof p?.emitWarning === 'function') p.emitWarning(text, { code: 'RETRY_WASM_OBSERVER', detail: String(e?.stack ?? e) });
    else globalThis.console?.warn?.(text, e);
  } catch {}
}

export function tracedCall(context, f, receiver, args) {
  const trace = channels[1];
  // 0: not called yet, 1: returned, 2: threw. The function's own outcome
  // is kept apart from what the stores around it do.
  let state = 0;
  let value;
  const call = () => {
    try {
      value = f.apply(receiver, args);
      state = 1;
    } catch (e) {
      value = e;
      state = 2;
    }
    return value;
  };
  try {
    trace.start.runStores(context, call);
  } catch (e) {
    observerFailed(e);
  }
  if (state === 0) {
    // The stores failed before the host published `start` (it publishes
    // inside them): publish it here, so subscribers see the attempt.
    try {
      trace.start.publish(context);
    } catch {}
    call();
  }
  try {
    trace.end.publish(context);
  } catch {}
  if (state === 2) throw value;
  return value;
}

export function settle(which, context, failed) {
  const trace = channels[which];
  if (failed) trace.error.publish(context);
  trace.asyncStart.publish(context);
  trace.asyncEnd.publish(context);
}

export function backoff(retryer, key, attempt, delay, error, elapsed) {
  channels[2].publish({ retryer, key, attempt, delay, error, elapsed });
}
"#)]
extern "C" {
    /// Takes the three channels of a `diagnostics_channel` module.
    #[wasm_bindgen(catch, js_name = useChannels)]
    fn use_channels(dc: &JsValue) -> Result<(), JsValue>;
    /// Whether anyone listens on one of the channels (`look_up`: first
    /// find the host's module).
    fn observed(look_up: bool) -> bool;
    /// Whether anyone listens on the breaker channel (`look_up`: first
    /// find the host's module).
    #[wasm_bindgen(js_name = breakerObserved)]
    fn breaker_observed_js(look_up: bool) -> bool;
    /// Publishes a circuit's change on the breaker channel (the number is
    /// unused, as `flowContext`'s).
    #[wasm_bindgen(js_name = breakerChanged)]
    fn breaker_changed_js(info: &JsValue, unused: u32);
    /// `{ retryer, key, args }`, and `request` when given (the last
    /// argument is unused: an import whose arguments and result are all
    /// plain values would be linked to the snippet module itself, and the
    /// build wants every import to go through the glue).
    #[wasm_bindgen(js_name = flowContext)]
    fn flow_context(
        retryer: &JsValue,
        key: &JsValue,
        args: &JsValue,
        request: &JsValue,
        unused: u32,
    ) -> JsValue;
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
    fn publish(which: u32, part: &str, context: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, js_name = tracedCall)]
    fn traced_call(
        context: &JsValue,
        f: &JsValue,
        receiver: &JsValue,
        args: &JsValue,
    ) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch)]
    fn settle(which: u32, context: &JsValue, failed: bool) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn backoff(
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

thread_local! {
    /// Whether the host's module was looked up (once, at the first flow).
    static LOOKED_UP: Cell<bool> = const { Cell::new(false) };
}

/// Hands the engine a `diagnostics_channel` module where the host has none
/// (browsers): `retry-wasm/otel` does, so its spans see every flow.
#[wasm_bindgen(js_name = useDiagnosticsChannel)]
pub fn use_diagnostics_channel(module: JsValue) -> Result<(), JsValue> {
    LOOKED_UP.with(|l| l.set(true));
    use_channels(&module).map_err(|_| {
        super::errors::type_error(
            "useDiagnosticsChannel needs an object shaped like node:diagnostics_channel",
        )
    })
}

/// Whether someone listens on one of the channels now (the host's module
/// is looked up the first time: `process.getBuiltinModule`, so no `node:`
/// import reaches a browser bundle).
pub fn observed_now() -> bool {
    let look_up = !LOOKED_UP.with(|l| l.replace(true));
    observed(look_up)
}

/// Whether anyone listens on `channel('retry-wasm:breaker')` now.
pub fn breaker_observed() -> bool {
    let look_up = !LOOKED_UP.with(|l| l.replace(true));
    breaker_observed_js(look_up)
}

/// Publishes a circuit's change (SPEC §2e rule 8) on the breaker channel.
pub fn breaker_changed(info: &JsValue) {
    breaker_changed_js(info, 0);
}

/// What an observed flow publishes. A publish never fails the flow: Node's
/// never throws (a subscriber that throws is the host's uncaught error),
/// and what a channel handed in throws is not the flow's concern, so it is
/// dropped.
pub struct Channels;

impl Channels {
    /// `start` of `which`'s trace, for a trace whose synchronous half is
    /// not a call (a flow).
    pub fn begin(&self, which: Traces, context: &JsValue) {
        drop(publish(which as u32, "start", context));
    }

    /// `end` of a trace begun with [`Channels::begin`].
    pub fn end(&self, which: Traces, context: &JsValue) {
        drop(publish(which as u32, "end", context));
    }

    /// The attempt channel's `start`, then `f.apply(receiver, args)` inside
    /// the stores bound to it, then its `end`. The result is the
    /// function's own: a store that fails (throws, or cannot be entered
    /// the way the host enters stores) is warned about once and the
    /// function is called without it, never failed for it.
    pub fn call(
        &self,
        context: &JsValue,
        f: &JsValue,
        receiver: &JsValue,
        args: &Array,
    ) -> Result<JsValue, JsValue> {
        traced_call(context, f, receiver, args)
    }

    /// The asynchronous half of `which`'s trace: `error` when it failed,
    /// then `asyncStart` and `asyncEnd`.
    pub fn settle(&self, which: Traces, context: &JsValue, failed: bool) {
        drop(settle(which as u32, context, failed));
    }

    /// A message on the backoff channel.
    pub fn backoff(
        &self,
        retryer: &JsValue,
        key: &JsValue,
        attempt: u32,
        delay: f64,
        error: &JsValue,
        elapsed: f64,
    ) {
        drop(backoff(retryer, key, attempt, delay, error, elapsed));
    }
}

/// `{ retryer, key, args }`, and `request` when given.
pub fn flow(retryer: &JsValue, key: &JsValue, args: &JsValue, request: &JsValue) -> JsValue {
    flow_context(retryer, key, args, request, 0)
}

/// Sets `name` on a context object (its own object: nothing can throw).
pub fn put(context: &JsValue, name: &'static str, value: &JsValue) {
    let _ = props::set(context, name, value);
}
