//! The global allocator of the wasm build: power-of-two size classes, each
//! a free list, carved from linear memory by a bump pointer.
//!
//! Why not a general allocator: the engine's allocations are few and small
//! and come back in the same sizes (a flow's `Run`, `Execution` and busy
//! machine, a few `Vec`s, message strings), and wasm memory never shrinks,
//! so coalescing buys nothing a long-running process keeps. Measured on
//! the 2-core dev machine (Node 20.20.2, 2026-12-06) against talc, the
//! allocator before it: the module 3.9 KB smaller raw, and a success
//! through `asyncRetry` faster (see the README's performance notes). The
//! price is up to 2x a block's size in rounding, and a freed block is
//! only ever reused for its own class.
//!
//! A block of class k is 2^k bytes (k >= 3) and starts at a multiple of
//! min(2^k, 64 KiB), so it meets any alignment up to its size. A free
//! block holds the address of the next free block of its class in its
//! first word. `realloc` within a class keeps the block.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::null_mut;

/// A wasm page, the unit memory grows by.
pub const PAGE: usize = 64 * 1024;
/// The smallest class: 8 bytes, room for the free list's link.
const MIN_SHIFT: u32 = 3;
/// Classes 2^3 .. 2^31.
const CLASSES: usize = 29;

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

    /// The class of a layout: 2^k >= its size and its alignment, or `None`
    /// above 2^31.
    fn class(layout: &Layout) -> Option<u32> {
        let size = layout.size().max(layout.align()).max(1 << MIN_SHIFT);
        let k = usize::BITS - (size - 1).leading_zeros();
        (k < MIN_SHIFT + CLASSES as u32).then_some(k)
    }

    /// A new block of class `k` from the bump pointer, growing the memory
    /// as needed; 0 when it cannot. (Rare once a process runs: blocks come
    /// back to their lists.)
    #[cold]
    #[inline(never)]
    fn carve(&self, state: &mut State, k: u32) -> usize {
        let block = 1usize << k;
        let align = block.min(PAGE);
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
        let Some(k) = Self::class(&layout) else {
            return null_mut();
        };
        if layout.align() > PAGE {
            return null_mut();
        }
        let state = &mut *self.state.get();
        let list = &mut state.free[(k - MIN_SHIFT) as usize];
        if *list != 0 {
            let block = *list;
            *list = *(block as *const usize);
            return block as *mut u8;
        }
        self.carve(state, k) as *mut u8
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(k) = Self::class(&layout) else {
            return;
        };
        let state = &mut *self.state.get();
        let list = &mut state.free[(k - MIN_SHIFT) as usize];
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
            let class = size.max(align).max(8).next_power_of_two();
            assert_eq!(p % class.min(PAGE), 0, "{size} at {p:#x}");
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
            assert_ne!(small, a, "a 16 B request does not take a 64 B block");
            assert_eq!(h.alloc(layout(60, 4)), a, "the same class takes it");
            assert_ne!(h.alloc(layout(64, 8)), b);
        }
    }

    #[test]
    fn realloc_keeps_the_block_within_its_class_and_moves_the_bytes_otherwise() {
        let mut buffer = Vec::new();
        let h = heap(&mut buffer, 2);
        unsafe {
            let p = h.alloc(layout(20, 4));
            core::ptr::copy_nonoverlapping(b"0123456789abcdefghij".as_ptr(), p, 20);
            assert_eq!(h.realloc(p, layout(20, 4), 32), p);
            let q = h.realloc(p, layout(32, 4), 200);
            assert_ne!(q, p);
            assert_eq!(core::slice::from_raw_parts(q, 20), b"0123456789abcdefghij");
            assert_eq!(
                h.alloc(layout(32, 4)),
                p,
                "the old block went back to its list"
            );
        }
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
