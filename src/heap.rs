//! The global allocator of the wasm build: size classes, each a free list,
//! carved from linear memory by a bump pointer.
//!
//! Why not a general allocator: the engine's allocations are few and small
//! and come back in the same sizes (a flow's `Run`, `Execution` and busy
//! machine, a few `Vec`s, message strings), and wasm memory never shrinks,
//! so coalescing buys nothing a long-running process keeps. Measured on
//! the 2-core dev machine (Node 20.20.2, 2026-12-06) against talc, the
//! allocator before it: the module 3.7 KB smaller raw, and a success
//! through `asyncRetry` faster (see the README's performance notes).
//!
//! The classes are 8, 16, 24 and 32 bytes, then four to each doubling
//! (40, 48, 56, 64, 80, 96, ...), so a block wastes under 8 bytes up to
//! 32 and at most a fifth of its size above. Measured (400,000 live
//! retryers, Node 20.20.2, 2026-12-06): a retryer at rest keeps 128 B of
//! wasm memory, as with talc; power-of-two classes kept 256 B, which a
//! host that finalizes late multiplies (the leak stage went over
//! its limit). The finer classes cost 2-3 % of a success's time against
//! power-of-two ones (paired, both load orders) and 144 B of the lean
//! download. A freed block is only ever reused for its own class.
//!
//! A block of a power-of-two class 2^k starts at a multiple of
//! min(2^k, 64 KiB), so it meets any alignment up to its size; the other
//! classes start at a multiple of 8 and serve only layouts aligned to 8 or
//! less (a larger alignment takes the power-of-two class). A free block
//! holds the address of the next free block of its class in its first
//! word. `realloc` within a class keeps the block.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::null_mut;

/// A wasm page, the unit memory grows by.
pub const PAGE: usize = 64 * 1024;
/// The alignment every block has: the free list's link, and all the
/// engine's own types, need no more.
const WORD: usize = 8;
/// The largest block: 2^31 bytes.
const MAX_SHIFT: u32 = 31;
/// 8, 16, 24, 32, then four classes to each doubling up to 2^31.
const CLASSES: usize = 4 + 4 * (MAX_SHIFT as usize - 5);

/// The class of `size` bytes (>= 8) aligned to 8, or [`CLASSES`].
fn class_of(size: usize) -> usize {
    if size <= 4 * WORD {
        return (size - 1) / WORD;
    }
    // 2^k < size <= 2^(k+1): four steps of 2^(k-2) cover that doubling.
    let k = (usize::BITS - 1 - (size - 1).leading_zeros()) as usize;
    if k >= MAX_SHIFT as usize {
        return CLASSES;
    }
    let steps = ((size - 1) >> (k - 2)) + 1; // 5..=8
    4 + 4 * (k - 5) + (steps - 5)
}

/// The size of the blocks of class `index` (< [`CLASSES`]).
fn size_of(index: usize) -> usize {
    if index < 4 {
        return (index + 1) * WORD;
    }
    let (k, steps) = ((index - 4) / 4 + 5, (index - 4) % 4 + 5);
    steps << (k - 2)
}

/// Where the blocks come from: linear memory, or a test's buffer.
pub trait Memory {
    /// Where the heap may start: below it is someone else's.
    fn start(&self) -> usize;
    /// The end of the memory now, in bytes (a multiple of [`PAGE`]).
    fn end(&self) -> usize;
    /// Grows the memory by `pages`; the end before, or `None` when it
    /// cannot grow.
    fn grow(&self, pages: usize) -> Option<usize>;
}

/// The allocator over a [`Memory`].
pub struct Heap<M> {
    memory: M,
    state: UnsafeCell<State>,
}

struct State {
    /// The first free block of each class (0: none).
    free: [usize; CLASSES],
    /// The next address the bump pointer gives, and the end of what it has.
    top: usize,
    end: usize,
}

// One thread: wasm32-unknown-unknown as this crate builds it has no
// threads, and the native tests give each heap to one test.
unsafe impl<M> Sync for Heap<M> {}

impl<M: Memory> Heap<M> {
    /// A heap over `memory`; its first allocation reads where it starts
    /// and ends.
    pub const fn new(memory: M) -> Self {
        Heap {
            memory,
            state: UnsafeCell::new(State {
                free: [0; CLASSES],
                top: 0,
                end: 0,
            }),
        }
    }

    /// The class of a layout: the index of the smallest block that holds
    /// its size and meets its alignment, or [`CLASSES`] above 2^31 bytes.
    /// An index alone, not a pair with the size: it travels in a register,
    /// and only `carve` needs the size.
    // Not inlined: alloc, dealloc and realloc share one copy.
    #[inline(never)]
    fn class(layout: &Layout) -> usize {
        let mut size = layout.size().max(WORD);
        if layout.align() > WORD {
            // Only power-of-two blocks are carved at their own alignment.
            match size.max(layout.align()).checked_next_power_of_two() {
                Some(pow2) => size = pow2,
                None => return CLASSES,
            }
        }
        class_of(size)
    }

    /// A new block of `class` from the bump pointer, growing the memory
    /// as needed; 0 when it cannot. (Rare once a process runs: blocks come
    /// back to their lists.)
    #[cold]
    #[inline(never)]
    fn carve(&self, state: &mut State, class: usize) -> usize {
        let block = size_of(class);
        let align = if block.is_power_of_two() {
            block.min(PAGE)
        } else {
            WORD
        };
        if state.end == 0 {
            state.top = self.memory.start();
            state.end = self.memory.end();
        }
        loop {
            let start = (state.top + align - 1) & !(align - 1);
            match start.checked_add(block) {
                Some(stop) if stop <= state.end => {
                    state.top = stop;
                    return start;
                }
                Some(stop) => {
                    let pages = (stop - state.end).div_ceil(PAGE);
                    let Some(before) = self.memory.grow(pages) else {
                        return 0;
                    };
                    // Memory grown by someone else in between is theirs.
                    if before != state.end {
                        state.top = before;
                    }
                    state.end = before + pages * PAGE;
                }
                None => return 0,
            }
        }
    }
}

// Not inlined: with LTO every allocation site would carry a copy (3.8 KB
// more module, measured).
unsafe impl<M: Memory> GlobalAlloc for Heap<M> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let class = Self::class(&layout);
        if layout.align() > PAGE {
            return null_mut();
        }
        let state = &mut *self.state.get();
        // `get_mut`, not indexing: the index is always in range, but a
        // bounds check would link the panic and number formatting into
        // the module (+1.2 KB raw, +0.6 KB gzipped download, measured).
        let Some(list) = state.free.get_mut(class) else {
            return null_mut();
        };
        if *list != 0 {
            let block = *list;
            *list = *(block as *const usize);
            return block as *mut u8;
        }
        self.carve(state, class) as *mut u8
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let class = Self::class(&layout);
        let state = &mut *self.state.get();
        let Some(list) = state.free.get_mut(class) else {
            return;
        };
        *(ptr as *mut usize) = *list;
        *list = ptr as usize;
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return null_mut();
        };
        if Self::class(&layout) == Self::class(&new_layout) {
            return ptr;
        }
        let new = self.alloc(new_layout);
        if !new.is_null() {
            core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}

/// Linear memory 0 of the wasm module, after the data and the stack.
#[cfg(target_arch = "wasm32")]
pub struct Linear;

#[cfg(target_arch = "wasm32")]
impl Memory for Linear {
    fn start(&self) -> usize {
        // Only the symbol's address is taken, never its value.
        core::ptr::addr_of!(__heap_base) as usize
    }

    fn end(&self) -> usize {
        core::arch::wasm32::memory_size(0) * PAGE
    }

    fn grow(&self, pages: usize) -> Option<usize> {
        let before = core::arch::wasm32::memory_grow(0, pages);
        (before != usize::MAX).then(|| before * PAGE)
    }
}

#[cfg(target_arch = "wasm32")]
extern "C" {
    /// Where the linker put the end of the data and the stack: the heap
    /// may start here.
    static __heap_base: u8;
}

/// The heap of the wasm module, from `__heap_base` on.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static HEAP: Heap<Linear> = Heap::new(Linear);

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    /// A memory of `pages` pages at most, in a buffer of the test's.
    struct Buffer {
        base: usize,
        pages: Cell<usize>,
        max: usize,
    }

    impl Memory for Buffer {
        fn start(&self) -> usize {
            self.base
        }
        fn end(&self) -> usize {
            self.base + self.pages.get() * PAGE
        }
        fn grow(&self, pages: usize) -> Option<usize> {
            let before = self.pages.get();
            (before + pages <= self.max).then(|| {
                self.pages.set(before + pages);
                self.base + before * PAGE
            })
        }
    }

    fn heap(buffer: &mut Vec<u8>, pages: usize) -> Heap<Buffer> {
        buffer.resize((pages + 1) * PAGE, 0);
        let base = (buffer.as_mut_ptr() as usize + PAGE - 1) & !(PAGE - 1);
        let memory = Buffer {
            base,
            pages: Cell::new(0),
            max: pages,
        };
        Heap::new(memory)
    }

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn blocks_are_aligned_to_their_class_and_do_not_overlap() {
        let mut buffer = Vec::new();
        let h = heap(&mut buffer, 8);
        let mut got: Vec<(usize, usize)> = Vec::new();
        for (size, align) in [
            (1, 1),
            (8, 8),
            (24, 8),
            (100, 4),
            (7, 1),
            (4096, 16),
            (33, 32),
            (70_000, 8),
        ] {
            let p = unsafe { h.alloc(layout(size, align)) } as usize;
            assert_ne!(p, 0, "{size}");
            assert_eq!(p % align.max(WORD), 0, "{size} at {p:#x}");
            // A power-of-two class's blocks start at a multiple of their
            // size (up to a page); the others at a multiple of 8.
            let block = size_of(Heap::<Buffer>::class(&layout(size, align)));
            let start = if block.is_power_of_two() {
                block.min(PAGE)
            } else {
                WORD
            };
            assert_eq!(p % start, 0, "{size} ({block} B block) at {p:#x}");
            for &(q, n) in &got {
                assert!(
                    p + size <= q || q + n <= p,
                    "{size} at {p:#x} overlaps {n} at {q:#x}"
                );
            }
            unsafe { core::ptr::write_bytes(p as *mut u8, 0xAB, size) };
            got.push((p, size));
        }
    }

    #[test]
    fn a_freed_block_is_reused_for_its_class_only() {
        let mut buffer = Vec::new();
        let h = heap(&mut buffer, 2);
        unsafe {
            let a = h.alloc(layout(40, 8));
            let b = h.alloc(layout(40, 8));
            h.dealloc(a, layout(40, 8));
            let small = h.alloc(layout(16, 8));
            assert_ne!(small, a, "a 16 B request does not take a 40 B block");
            assert_ne!(h.alloc(layout(48, 8)), a, "nor does a 48 B one");
            assert_eq!(h.alloc(layout(33, 4)), a, "the same class takes it");
            assert_ne!(h.alloc(layout(40, 8)), b);
        }
    }

    #[test]
    fn realloc_keeps_the_block_within_its_class_and_moves_the_bytes_otherwise() {
        let mut buffer = Vec::new();
        let h = heap(&mut buffer, 2);
        unsafe {
            let p = h.alloc(layout(20, 4));
            core::ptr::copy_nonoverlapping(b"0123456789abcdefghij".as_ptr(), p, 20);
            assert_eq!(h.realloc(p, layout(20, 4), 24), p);
            let q = h.realloc(p, layout(24, 4), 200);
            assert_ne!(q, p);
            assert_eq!(core::slice::from_raw_parts(q, 20), b"0123456789abcdefghij");
            assert_eq!(
                h.alloc(layout(24, 4)),
                p,
                "the old block went back to its list"
            );
        }
    }

    #[test]
    fn classes_fit_closely_and_in_order() {
        type H = Heap<Buffer>;
        let mut last = class_of(WORD);
        assert_eq!((last, size_of(last)), (0, 8));
        for size in WORD + 1..=1 << 20 {
            let c = class_of(size);
            let block = size_of(c);
            assert!(block >= size, "{size} in class {c} of {block}");
            if size > 32 {
                assert!(
                    block * 4 <= size * 5,
                    "{size} in {block} wastes over a fifth"
                );
            } else {
                assert!(block - size < WORD, "{size} in {block}");
            }
            if c != last {
                assert_eq!(c, last + 1, "{size}: class {last} then {c}");
                assert_eq!(
                    size,
                    size_of(last) + 1,
                    "a class starts where the last one ended"
                );
                last = c;
            }
        }
        let top = class_of(1 << MAX_SHIFT);
        assert_eq!((top, size_of(top)), (CLASSES - 1, 1 << MAX_SHIFT));
        assert_eq!(class_of((1 << MAX_SHIFT) + 1), CLASSES);
        // A larger alignment takes a power-of-two class.
        assert_eq!(size_of(H::class(&layout(40, 16))), 64);
        assert_eq!(size_of(H::class(&layout(24, 32))), 32);
    }

    #[test]
    fn grows_page_by_page_and_says_so_when_it_cannot() {
        let mut buffer = Vec::new();
        let h = heap(&mut buffer, 3);
        unsafe {
            let a = h.alloc(layout(PAGE, 8));
            let b = h.alloc(layout(PAGE + 1, 8));
            assert_ne!(a, null_mut());
            assert_ne!(b, null_mut());
            assert_eq!(b as usize % PAGE, 0);
            assert_eq!(h.alloc(layout(PAGE, 8)), null_mut(), "3 pages are used up");
            h.dealloc(a, layout(PAGE, 8));
            assert_eq!(h.alloc(layout(PAGE, 8)), a);
            assert_eq!(
                h.alloc(layout(8, 8 * PAGE)),
                null_mut(),
                "no alignment above a page"
            );
        }
    }

    #[test]
    fn many_sizes_allocated_and_freed_keep_their_bytes() {
        let mut buffer = Vec::new();
        let h = heap(&mut buffer, 64);
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..20_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            if live.len() > 200 || (seed & 3 == 0 && !live.is_empty()) {
                let (p, l, fill) = live.swap_remove((seed >> 8) as usize % live.len());
                let bytes = unsafe { core::slice::from_raw_parts(p, l.size()) };
                assert!(
                    bytes.iter().all(|&b| b == fill),
                    "block of {} changed",
                    l.size()
                );
                unsafe { h.dealloc(p, l) };
            } else {
                let l = layout(1 + (seed >> 16) as usize % 3000, 1 << ((seed >> 40) % 5));
                let p = unsafe { h.alloc(l) };
                assert!(!p.is_null());
                let fill = i as u8;
                unsafe { core::ptr::write_bytes(p, fill, l.size()) };
                live.push((p, l, fill));
            }
        }
    }
}
