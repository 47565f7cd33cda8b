//! The host's fetch objects, as `retryFetch` meets them (the build with
//! `retryFetch` only): `new Request` as `fetch` would build it, and a
//! `Request`, a `Response` or an `AbortSignal` of another class or realm
//! (undici's npm classes, node-fetch's, a polyfill's, an iframe's or a `vm`
//! context's) recognised by what it is, never by `instanceof` this realm's
//! class.

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// The global `Request` class, for its constructor.
    #[wasm_bindgen(js_name = Request)]
    type RequestClass;

    /// `new Request(input, init)` (see [`new_request`]).
    #[wasm_bindgen(catch, constructor, js_class = "Request")]
    fn new(input: &JsValue, init: &JsValue) -> Result<RequestClass, JsValue>;
}

/// `new Request(input, init)`: what `fetch` does first with its arguments,
/// so it refuses exactly what `fetch` refuses, with the same `TypeError`.
/// A `Request` input of another class (undici's, node-fetch's, a
/// polyfill's, another realm's) is built again by its own class, as the
/// `fetch` it belongs to would.
pub fn new_request(input: &JsValue, init: &JsValue) -> Result<web_sys::Request, JsValue> {
    if input.has_type::<web_sys::Request>() || !is_request(input, 0) {
        RequestClass::new(input, init).map(JsCast::unchecked_into)
    } else {
        new_like(input, init)
    }
}

/// A `Request` of this realm's class, or of any other: the request itself
/// typed as one (its fields and `clone()` are read structurally), or
/// `None` for any other input (a string, a `URL`, an object with a
/// string form).
pub fn as_request(input: &JsValue) -> Option<web_sys::Request> {
    if let Some(r) = input.dyn_ref::<web_sys::Request>() {
        return Some(<web_sys::Request as Clone>::clone(r));
    }
    is_request(input, 0).then(|| input.clone().unchecked_into())
}

/// A `Response` of this realm's class, or of any other (what undici's,
/// node-fetch's or a polyfill's `fetch` resolves with), typed as one (its
/// fields are read structurally); `None` for anything else.
pub fn as_response(value: &JsValue) -> Option<web_sys::Response> {
    if let Some(r) = value.dyn_ref::<web_sys::Response>() {
        return Some(<web_sys::Response as Clone>::clone(r));
    }
    is_response(value, 0).then(|| value.clone().unchecked_into())
}

/// A signal of this realm that follows `value`, when `value` is one of
/// another realm or implementation; `value` itself when it is this
/// realm's; `None` when it is no signal. The host's `fetch` takes only its
/// own realm's signals.
pub fn own_signal(value: &JsValue) -> Option<web_sys::AbortSignal> {
    if let Some(s) = value.dyn_ref::<web_sys::AbortSignal>() {
        return Some(s.clone());
    }
    super::props::is_signal(value).then(|| tie(value, 0))
}

/// A signal that aborts, with its reason, when `a` or `b` does (what
/// `AbortSignal.any([a, b])` makes, without its leak on Node 20 and 22:
/// see the snippet); `a` and `b` live while it does.
pub fn both(a: &web_sys::AbortSignal, b: &web_sys::AbortSignal) -> web_sys::AbortSignal {
    both_of(a, b, 0)
}

// The few lines through which a `Request` or an `AbortSignal` that is not
// this realm's global class's is used as one: recognised by what it is
// (its tag, or its shape), never by `instanceof`. (The unused `_`
// arguments: an import whose arguments and result are all plain values
// would be linked to the snippet module itself, and the build wants every
// import to go through the glue.)
#[wasm_bindgen(inline_js = r#"
export function isRequest(value, _) {
  if (value === null || typeof value !== 'object') return false;
  try {
    if (Object.prototype.toString.call(value) === '[object Request]') return true;
    return typeof value.url === 'string' && typeof value.method === 'string'
      && typeof value.clone === 'function' && value.headers !== null && typeof value.headers === 'object';
  } catch {
    return false;
  }
}

export function isResponse(value, _) {
  if (value === null || typeof value !== 'object') return false;
  try {
    if (Object.prototype.toString.call(value) === '[object Response]') return true;
    return typeof value.status === 'number' && typeof value.clone === 'function'
      && value.headers !== null && typeof value.headers === 'object' && 'body' in value;
  } catch {
    return false;
  }
}

export function newLike(request, init) {
  const Class = request.constructor;
  return new Class(request, init);
}

// A signal made here follows its sources, and lives as long as whoever
// holds it (the call; fetch, which keeps the attempt's signal for the
// response's body). A source has one listener while signals follow it,
// which aborts them: they are held weakly, in a set per source, and leave
// it when they abort or are collected (the last one out takes the
// listener away), so a long-lived caller's signal keeps none of them and
// gathers no listeners: a listener per signal made each call slower the
// more were waiting for the collector (a median call 1.5-1.7x one with
// AbortSignal.any, on a loaded machine, 2026-12-07). Not
// `AbortSignal.any`: on Node 20 and 22, a signal it makes from a
// long-lived one, once fetch listens on it, stays alive as long as that
// one does (2.3-2.7 KB per signal listened on, Node 20.20.2 and 22.23.5;
// none on 24).
const followers = new WeakMap();
const unfollow = ({ sources, ref }) => {
  for (const source of sources) {
    const set = followers.get(source);
    if (!set?.delete(ref) || set.size > 0) continue;
    followers.delete(source);
    try {
      source.removeEventListener('abort', set.listener);
    } catch {}
  }
};
const untie = new FinalizationRegistry(unfollow);
const keep = new WeakMap();

function follow(sources) {
  const controller = new AbortController();
  const signal = controller.signal;
  for (const source of sources) {
    let aborted;
    try {
      aborted = source.aborted;
    } catch {}
    if (aborted) {
      controller.abort(source.reason);
      return signal;
    }
  }
  // Nothing here holds the signal: the sets reach its controller weakly,
  // and `held` stands for it in the registry.
  const ref = new WeakRef(controller);
  const held = { sources, ref };
  for (const source of sources) {
    let set = followers.get(source);
    if (!set) {
      const all = new Set();
      all.listener = () => {
        followers.delete(source);
        for (const r of all) r.deref()?.abort(source.reason);
      };
      try {
        source.addEventListener('abort', all.listener, { once: true });
      } catch {
        continue;
      }
      followers.set(source, (set = all));
    }
    set.add(ref);
  }
  signal.addEventListener('abort', () => {
    unfollow(held);
    untie.unregister(held);
  }, { once: true });
  keep.set(signal, [controller, sources]);
  untie.register(signal, held, held);
  return signal;
}

export function tie(source, _) {
  return follow([source]);
}

export function both(a, b, _) {
  return follow([a, b]);
}
"#)]
extern "C" {
    /// Whether `value` is a `Request` of any class: tagged `Request`, or
    /// shaped like one (string `url` and `method`, `headers`, `clone()`).
    #[wasm_bindgen(js_name = isRequest)]
    fn is_request(value: &JsValue, unused: u32) -> bool;

    /// Whether `value` is a `Response` of any class: tagged `Response`, or
    /// shaped like one (number `status`, `headers`, `body`, `clone()`).
    #[wasm_bindgen(js_name = isResponse)]
    fn is_response(value: &JsValue, unused: u32) -> bool;

    /// `new request.constructor(request, init)`.
    #[wasm_bindgen(catch, js_name = newLike)]
    fn new_like(request: &JsValue, init: &JsValue) -> Result<web_sys::Request, JsValue>;

    /// A signal of this realm that aborts, with the same reason, when
    /// `source` (shaped like a signal) does.
    fn tie(source: &JsValue, unused: u32) -> web_sys::AbortSignal;

    /// A signal that follows `a` and `b`.
    #[wasm_bindgen(js_name = both)]
    fn both_of(
        a: &web_sys::AbortSignal,
        b: &web_sys::AbortSignal,
        unused: u32,
    ) -> web_sys::AbortSignal;
}
