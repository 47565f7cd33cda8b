//! The module's one mutable world: every retryer and budget, addressed by
//! small integer handles, behind a single `RefCell` that no export holds
//! while JavaScript runs.

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;

use crate::core::budget::{Budget, Budgets, DEFAULT_MAX_TOKENS, DEFAULT_TOKEN_RATIO};
use crate::core::machine::Machine;
use crate::core::options::Policy;
use crate::core::random::Rng;

use super::codec::{self, tag, window, Window, WINDOW_LEN};

/// The world, created on first use.
struct Global(RefCell<World>);

// SAFETY: wasm32-unknown-unknown without the atomics feature has exactly one
// thread; nothing can observe this cell concurrently.
unsafe impl Sync for Global {}

// Built at compile time: no export pays for a lazy first-use check.
static WORLD: Global = Global(RefCell::new(World::new()));

/// Size of the buffer string option values are passed through.
pub const SCRATCH: usize = 64;

struct Scratch(core::cell::UnsafeCell<[u8; SCRATCH]>);

// SAFETY: one thread (see `Global`).
unsafe impl Sync for Scratch {}

static SCRATCH_BYTES: Scratch = Scratch(core::cell::UnsafeCell::new([0; SCRATCH]));

/// The string buffer. JavaScript writes it only between calls, and the one
/// reader (`opt_str`) copies nothing out of it past its own call.
pub fn scratch() -> &'static [u8; SCRATCH] {
    // SAFETY: single-threaded, and no Rust code writes the buffer, so no
    // `&mut` to it ever exists.
    unsafe { &*SCRATCH_BYTES.0.get() }
}

/// Runs `f` on the world, or returns `fallback` if the world is borrowed
/// (which only a bug could cause; better a no-op than a trap).
pub fn with_world<T>(fallback: T, f: impl FnOnce(&mut World) -> T) -> T {
    match WORLD.0.try_borrow_mut() {
        Ok(mut world) => f(&mut world),
        Err(_) => fallback,
    }
}

// Under load every concurrent flow holds one slot: keep it in the 192 B
// allocator class (`heap.rs`), the next one up is 256 B.
const _: () = assert!(core::mem::size_of::<Slot>() <= 192);

/// Byte offset of the state in a slot.
pub const STATE_AT: usize = core::mem::offset_of!(Slot, machine) + Machine::STATE_OFFSET;

/// Byte offset of the flags word in a slot.
pub const FLAGS_AT: usize = core::mem::offset_of!(Slot, flags);

/// One retryer: its machine, whose state JavaScript reads in place, and the
/// flags word beside it. Boxed, so the address handed to JavaScript never
/// moves.
pub struct Slot {
    pub machine: Machine,
    /// `codec::flags_of(machine)` as of the last call.
    pub flags: u32,
}

impl Slot {
    /// Pops one effect, encodes it into the window, and refreshes the flags
    /// word (see `refresh`).
    pub fn pop(&mut self, win: &mut Window) -> u32 {
        let code = match self.machine.next_effect() {
            Some(e) => {
                let more = self.machine.has_effects();
                codec::encode(e, more, win)
            }
            None => 0,
        };
        self.refresh(win);
        code
    }

    /// Updates the flags word, and the newest generation in the window.
    pub fn refresh(&mut self, win: &mut Window) {
        self.flags = codec::flags_of(&self.machine);
        win[window::LAST_GEN] = f64::from(self.machine.last_gen());
    }

    /// Byte address of the slot: the front end finds the state at
    /// `STATE_AT` and the flags word at `FLAGS_AT` from there.
    pub fn address(&self) -> u32 {
        self as *const Slot as u32
    }
}

/// Budgets by id, with reuse of freed ids.
pub struct BudgetSlab {
    slots: Vec<Option<Budget>>,
    free: Vec<u32>,
}

impl BudgetSlab {
    /// Tokens left in budget `id`, NaN if there is none.
    pub fn tokens(&self, id: u32) -> f64 {
        match self.slots.get(id as usize) {
            Some(Some(b)) => b.tokens(),
            _ => f64::NAN,
        }
    }

    /// Frees budget `id`.
    pub fn free(&mut self, id: u32) {
        if let Some(slot @ Some(_)) = self.slots.get_mut(id as usize) {
            *slot = None;
            self.free.push(id);
        }
    }

    fn insert(&mut self, b: Budget) -> u32 {
        match self.free.pop() {
            Some(id) => {
                if let Some(slot) = self.slots.get_mut(id as usize) {
                    *slot = Some(b);
                }
                id
            }
            None => {
                self.slots.push(Some(b));
                (self.slots.len() - 1) as u32
            }
        }
    }
}

impl Budgets for BudgetSlab {
    fn budget(&mut self, id: u32) -> Option<&mut Budget> {
        self.slots.get_mut(id as usize).and_then(Option::as_mut)
    }
}

/// All retryers and budgets of the module.
pub struct World {
    /// By handle - 1: a retryer's slot, or `None` for a handle that is free
    /// (on `free`) or vacant (a parked or disposed retryer keeps it until
    /// its finalizer releases it).
    machines: Vec<Option<Box<Slot>>>,
    free: Vec<u32>,
    pub budgets: BudgetSlab,
    /// Options being validated for a constructor or `setOptions` call.
    pub staging: Option<Policy>,
    /// Where the next slot made goes (index): a parked or disposed
    /// retryer's vacant handle, so that it keeps one handle for life.
    pub reuse: Option<u32>,
    seeder: Rng,
    /// The cells all retryers share (see `codec::window`); inside the
    /// static world, so its address never moves.
    pub window: Window,
}

impl World {
    const fn new() -> World {
        // Replaced by `seed` with the host's randomness as the module loads;
        // every retryer's jitter generator is then seeded from this one.
        let seed = 0x2545_F491_4F6C_DD1D;
        World {
            machines: Vec::new(),
            free: Vec::new(),
            budgets: BudgetSlab {
                slots: Vec::new(),
                free: Vec::new(),
            },
            staging: None,
            reuse: None,
            seeder: Rng::new(seed),
            window: [0.0; WINDOW_LEN],
        }
    }

    /// Reseeds the generator new retryers draw their jitter seeds from.
    pub fn seed(&mut self, seed: u64) {
        self.seeder = Rng::new(seed);
    }

    /// Handles are index + 1, so 0 is never a valid handle.
    pub fn slot(&self, h: u32) -> Option<&Slot> {
        let i = h.checked_sub(1)? as usize;
        self.machines.get(i).and_then(|s| s.as_deref())
    }

    pub fn slot_mut(&mut self, h: u32) -> Option<&mut Slot> {
        let i = h.checked_sub(1)? as usize;
        self.machines.get_mut(i).and_then(|s| s.as_deref_mut())
    }

    /// A retryer, the budgets and the window, borrowed together.
    pub fn split(&mut self, h: u32) -> (Option<&mut Slot>, &mut BudgetSlab, &mut Window) {
        let slot = match h.checked_sub(1) {
            Some(i) => self
                .machines
                .get_mut(i as usize)
                .and_then(|s| s.as_deref_mut()),
            None => None,
        };
        (slot, &mut self.budgets, &mut self.window)
    }

    pub fn stage(&mut self, h: u32) {
        let base = self
            .slot(h)
            .map(|s| s.machine.policy().clone())
            .unwrap_or_default();
        self.staging = Some(base);
    }

    pub fn commit(&mut self, h: u32) -> u32 {
        let Some(policy) = self.staging.take() else {
            return codec::COMMIT_FAILED;
        };
        if let Err(e) = policy.finish() {
            return 1 << 31 | codec::option_error(e);
        }
        if h != 0 {
            return match self.split(h) {
                (Some(slot), _, win) => {
                    slot.machine.set_policy(policy);
                    slot.refresh(win);
                    h
                }
                (None, ..) => codec::COMMIT_FAILED,
            };
        }
        self.insert(Rc::new(policy))
    }

    /// A new retryer sharing retryer `h`'s policy (which passed `commit`
    /// once already): its handle, or 0 for a bad handle.
    pub fn share(&mut self, h: u32) -> u32 {
        match self.slot(h) {
            Some(s) => {
                let policy = s.machine.shared_policy();
                self.insert(policy)
            }
            None => 0,
        }
    }

    fn insert(&mut self, policy: Rc<Policy>) -> u32 {
        let machine = Machine::new(policy, self.seeder.next_u64());
        let mut slot = Box::new(Slot { machine, flags: 0 });
        slot.refresh(&mut self.window);
        let vacant = |i: &u32| matches!(self.machines.get(*i as usize), Some(None));
        let index = match self.reuse.take().filter(vacant).or_else(|| self.free.pop()) {
            Some(i) => {
                if let Some(place) = self.machines.get_mut(i as usize) {
                    *place = Some(slot);
                }
                i
            }
            None => {
                self.machines.push(Some(slot));
                (self.machines.len() - 1) as u32
            }
        };
        index + 1
    }

    /// Frees retryer `h`'s slot. `keep`: the handle stays its (vacant) until
    /// `destroy(h, false)`; otherwise it may be handed out again. The front
    /// end releases each handle once (its retryer's finalizer).
    pub fn destroy(&mut self, h: u32, keep: bool) {
        let Some(i) = h.checked_sub(1) else {
            return;
        };
        if let Some(place) = self.machines.get_mut(i as usize) {
            *place = None;
            if !keep {
                self.free.push(i);
            }
        }
    }

    pub fn budget_new(&mut self, max_tag: u32, max_tokens: f64, ratio_tag: u32, ratio: f64) -> f64 {
        let max = match max_tag {
            tag::UNDEFINED => DEFAULT_MAX_TOKENS,
            tag::NUMBER => max_tokens,
            _ => return -1.0,
        };
        let ratio = match ratio_tag {
            tag::UNDEFINED => DEFAULT_TOKEN_RATIO,
            tag::NUMBER => ratio,
            _ => return -3.0,
        };
        match Budget::new(max, ratio) {
            Ok(b) => f64::from(self.budgets.insert(b)),
            Err(crate::core::budget::BudgetError::MaxTokens) => -2.0,
            Err(crate::core::budget::BudgetError::TokenRatio) => -4.0,
        }
    }
}
