//! The only code that touches JavaScript: number-in, number-out exports over
//! a slab of machines and budgets.
//!
//! The exports are plain C-ABI functions over `i32`/`f64` (booleans as 0/1),
//! with no wasm-bindgen glue: the module imports nothing, so JavaScript
//! instantiates it with an empty import object and calls the exports
//! directly. Nothing here calls into JavaScript, so no borrow is ever held
//! while user code runs and a re-entrant call from a callback cannot hit a
//! borrowed cell. Each machine
//! mirrors its state into a small `f64` array the front end reads straight
//! from linear memory, so reading `store.state` costs no boundary crossing.
//! Every export answers bad handles and impossible states with a neutral
//! value instead of panicking: a trap would poison the instance for every
//! retryer on the page.

mod codec;
mod heap;
mod world;

/// O(1) size-class allocator (see `heap.rs`).
#[global_allocator]
static ALLOC: heap::SizeClasses = heap::SizeClasses::new();

/// A panic is a bug (no input can cause one); trap at once without pulling
/// in any formatting code.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

use crate::core::effect::{AbortReason, TIMERS};
use crate::core::options::{Opt, Raw};
use codec::{option_error, raw};
use world::{with_world, Slot};

/// Starts staging options on a copy of retryer `h`'s policy (`h` = 0: the
/// defaults), for a constructor or `setOptions` call.
#[no_mangle]
pub extern "C" fn stage(h: u32) {
    with_world((), |w| w.stage(h));
}

/// Stages one option value (`tag`/`num` classify it, see `codec::raw`).
/// Returns 0, or an encoded `TypeError`/`RangeError`.
#[no_mangle]
pub extern "C" fn opt(id: u32, tag: u32, num: f64) -> u32 {
    stage_value(id, raw(tag, num, None))
}

/// Stages a string option value.
#[no_mangle]
pub extern "C" fn opt_str(id: u32, len: u32) -> u32 {
    // The front end wrote at most `SCRATCH` bytes of UTF-8: a longer string
    // arrives cut short, and is still longer than every name an option takes.
    // Every name an option takes is ASCII, so anything else only has to stay
    // refused: an ASCII check instead of full UTF-8 validation (smaller code).
    let text = match world::scratch().get(..len as usize) {
        // SAFETY: all bytes are ASCII, hence valid UTF-8.
        Some(b) if b.is_ascii() => unsafe { core::str::from_utf8_unchecked(b) },
        _ => "\u{fffd}",
    };
    stage_value(id, Raw::Str(text))
}

/// Byte offset of the buffer string option values are written to, and its
/// size: `scratch_ptr()` and `scratch_len()`.
#[no_mangle]
pub extern "C" fn scratch_ptr() -> u32 {
    world::scratch().as_ptr() as u32
}

/// Size in bytes of the string buffer (see `scratch_ptr`).
#[no_mangle]
pub extern "C" fn scratch_len() -> u32 {
    world::SCRATCH as u32
}

/// Seeds the generator every retryer's jitter seed is drawn from; the front
/// end calls it once, with 64 bits from `crypto.getRandomValues`.
#[no_mangle]
pub extern "C" fn seed(hi: u32, lo: u32) {
    with_world((), |w| w.seed((u64::from(hi) << 32) | u64::from(lo)));
}

fn stage_value(id: u32, value: Raw<'_>) -> u32 {
    with_world(0, |w| match (Opt::from_id(id), w.staging.as_mut()) {
        (Some(o), Some(p)) => p.set(o, value).err().map_or(0, option_error),
        _ => codec::UNKNOWN_OPTION,
    })
}

/// Stages entry `i` of `intervals`.
#[no_mangle]
pub extern "C" fn interval(i: u32, tag: u32, num: f64) -> u32 {
    with_world(0, |w| match w.staging.as_mut() {
        Some(p) => p
            .push_interval(i, raw(tag, num, None))
            .err()
            .map_or(0, option_error),
        None => codec::UNKNOWN_OPTION,
    })
}

/// Stages one persistable field of `initialState`.
#[no_mangle]
pub extern "C" fn initial(field: u32, tag: u32, num: f64) -> u32 {
    with_world(0, |w| match w.staging.as_mut() {
        Some(p) => p
            .set_initial(field, raw(tag, num, None))
            .err()
            .map_or(0, option_error),
        None => codec::UNKNOWN_OPTION,
    })
}

/// Checks the staged options as a whole and, when they pass, applies them:
/// to retryer `h`, or (`h` = 0) to a new retryer. Returns the handle (or `h`)
/// in the low bits with 0 in bit 31, or an encoded error with bit 31 set.
#[no_mangle]
pub extern "C" fn commit(h: u32) -> u32 {
    with_world(codec::COMMIT_FAILED, |w| w.commit(h))
}

/// A new retryer with retryer `h`'s policy, shared rather than copied (a
/// retryer built from the same options as `h`). Returns its handle, or 0
/// for a bad handle.
#[no_mangle]
pub extern "C" fn share(h: u32) -> u32 {
    with_world(0, |w| w.share(h))
}

/// Drops the staged options (a failed constructor or `setOptions`).
#[no_mangle]
pub extern "C" fn unstage() {
    with_world((), |w| w.staging = None);
}

/// Frees retryer `h`'s slot. `keep` = 1 (parking, dispose): the handle
/// stays the retryer's, vacant, until its finalizer calls this with 0;
/// `keep` = 0: the handle may be handed out again.
#[no_mangle]
pub extern "C" fn destroy(h: u32, keep: u32) {
    with_world((), |w| w.destroy(h, keep != 0));
}

/// The next slot made (`share`, `commit(0)`) goes to vacant handle `h`, a
/// parked or disposed retryer's, instead of a new one; 0 undoes this.
#[no_mangle]
pub extern "C" fn reuse(h: u32) {
    with_world((), |w| w.reuse = h.checked_sub(1));
}

/// Byte offset of retryer `h`'s slot in linear memory (8-aligned): its
/// state is at `state_at()` from there, its flags word at `flags_at()`.
#[no_mangle]
pub extern "C" fn cells(h: u32) -> u32 {
    with_world(0, |w| w.slot(h).map_or(0, Slot::address))
}

/// Whether retryer `h`'s policy lets its flows start and succeed without
/// the clock, for a retryer nobody else holds (`Policy::times_only_state`);
/// 0 for a bad handle.
#[no_mangle]
pub extern "C" fn untimed(h: u32) -> u32 {
    with_world(0, |w| {
        w.slot(h)
            .map_or(0, |s| u32::from(s.machine.policy().times_only_state()))
    })
}

/// Byte offset of the state in a slot (see `codec::state_at` for its fields).
#[no_mangle]
pub extern "C" fn state_at() -> u32 {
    world::STATE_AT as u32
}

/// Byte offset of the flags word in a slot (see `codec::flag`).
#[no_mangle]
pub extern "C" fn flags_at() -> u32 {
    world::FLAGS_AT as u32
}

/// Byte offset of the window: the cells all retryers share for what the
/// front end reads right after a call (see `codec::window`).
#[no_mangle]
pub extern "C" fn window() -> u32 {
    with_world(0, |w| w.window.as_ptr() as u32)
}

/// `execute()`. With `pop`, returns the first effect; else whether any is
/// queued (the caller is already draining).
#[no_mangle]
pub extern "C" fn execute(h: u32, now: f64, outside_aborted: u32, pop: u32) -> u32 {
    input(h, pop, |s, _| {
        s.machine.execute(now, outside_aborted != 0);
    })
}

/// Attempt `attempt` of flow `gen` fulfilled.
#[no_mangle]
pub extern "C" fn ok(h: u32, gen: u32, attempt: u32, now: f64, pop: u32) -> u32 {
    input(h, pop, |s, b| s.machine.attempt_ok(gen, attempt, now, b))
}

/// Attempt `attempt` of flow `gen` rejected or threw.
#[no_mangle]
pub extern "C" fn err(h: u32, gen: u32, attempt: u32, abort_error: u32, now: f64, pop: u32) -> u32 {
    input(h, pop, |s, b| {
        s.machine
            .attempt_err(gen, attempt, abort_error != 0, now, b)
    })
}

/// Timer `t` (0 wait, 1 attempt deadline, 2 total deadline) fired.
#[no_mangle]
pub extern "C" fn timer(h: u32, t: u32, now: f64, pop: u32) -> u32 {
    match TIMERS.get(t as usize) {
        Some(&which) => input(h, pop, |s, b| s.machine.timer_fired(which, now, b)),
        None => 0,
    }
}

/// `abort()` (`by_signal` false) or the outside signal fired (true).
#[no_mangle]
pub extern "C" fn cancel(h: u32, by_signal: u32, pop: u32) -> u32 {
    let reason = if by_signal != 0 {
        AbortReason::Signal
    } else {
        AbortReason::Manual
    };
    input(h, pop, |s, _| s.machine.abort(reason))
}

/// The answer of an option function for flow `gen`.
#[no_mangle]
pub extern "C" fn provide(h: u32, gen: u32, tag: u32, num: f64, now: f64, pop: u32) -> u32 {
    input(h, pop, |s, b| {
        s.machine.provide(gen, codec::provided(tag, num), now, b)
    })
}

/// A callback of flow `gen` threw.
#[no_mangle]
pub extern "C" fn threw(h: u32, gen: u32, pop: u32) -> u32 {
    input(h, pop, |s, _| s.machine.callback_threw(gen))
}

/// `reset()`.
#[no_mangle]
pub extern "C" fn reset(h: u32, pop: u32) -> u32 {
    input(h, pop, |s, _| s.machine.reset())
}

/// Parking, `back` = 0: when retryer `h`'s machine is idle, writes
/// everything it needs to go on into the window (see
/// `codec::write_parked`) and returns 1; the front end copies it and may
/// then `destroy` it. Returns 0 while busy. `back` = 1: rebuilds retryer
/// `h` (just created with the same options) from such a window, copied
/// back; returns 1. Returns 0 for a bad handle.
#[no_mangle]
pub extern "C" fn park(h: u32, back: u32) -> u32 {
    with_world(0, |w| {
        let (Some(s), _, win) = w.split(h) else {
            return 0;
        };
        if back != 0 {
            s.machine.resume(&codec::read_parked(win));
        } else if let Some(p) = s.machine.park() {
            s.refresh(win);
            codec::write_parked(&p, s.flags, win);
            return 1;
        } else {
            return 0;
        }
        s.refresh(win);
        1
    })
}

/// Pops the next effect (0 when none).
#[no_mangle]
pub extern "C" fn next(h: u32) -> u32 {
    with_world(0, |w| match w.split(h) {
        (Some(s), _, win) => s.pop(win),
        (None, ..) => 0,
    })
}

/// Whether retryer `h` has state subscribers.
#[no_mangle]
pub extern "C" fn listeners(h: u32, any: u32) {
    with_world((), |w| {
        if let Some(s) = w.slot_mut(h) {
            s.machine.set_listeners(any != 0);
        }
    });
}

/// What a dynamic `enabled` returned outside a flow.
#[no_mangle]
pub extern "C" fn hint(h: u32, enabled: u32) {
    let _ = input(h, 0, |s, _| s.machine.set_enabled_hint(enabled != 0));
}

/// Creates a retry budget. Returns its id (>= 0), or a negative code: -1/-2
/// `maxTokens` of the wrong type/range, -3/-4 the same for `tokenRatio`.
#[no_mangle]
pub extern "C" fn budget_new(max_tag: u32, max_tokens: f64, ratio_tag: u32, ratio: f64) -> f64 {
    with_world(-1.0, |w| {
        w.budget_new(max_tag, max_tokens, ratio_tag, ratio)
    })
}

/// Tokens left in budget `id` (NaN for an unknown id).
#[no_mangle]
pub extern "C" fn budget_tokens(id: u32) -> f64 {
    with_world(f64::NAN, |w| w.budgets.tokens(id))
}

/// Frees budget `id`.
#[no_mangle]
pub extern "C" fn budget_free(id: u32) {
    with_world((), |w| w.budgets.free(id));
}

/// Numeric defaults by option wire id, so the front end shows the ones the
/// core uses (NaN for options without a numeric default).
#[no_mangle]
pub extern "C" fn default_of(id: u32) -> f64 {
    codec::default_of(id)
}

fn input(h: u32, pop: u32, f: impl FnOnce(&mut Slot, &mut world::BudgetSlab)) -> u32 {
    with_world(0, |w| {
        let (slot, budgets, win) = w.split(h);
        let Some(slot) = slot else {
            return 0;
        };
        f(slot, budgets);
        if pop != 0 {
            slot.pop(win)
        } else {
            slot.refresh(win);
            u32::from(slot.machine.has_effects())
        }
    })
}
