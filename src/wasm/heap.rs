//! A size-class allocator for the single-threaded wasm build.
//!
//! Small blocks (16 B to 64 KiB) come in classes of 2^k and 1.5 * 2^k
//! bytes (so at most a third of a block is wasted), each with its own free
//! list, so allocating and freeing are O(1) however many retryers
//! are alive (a first-fit free list walks every free block, which made
//! creating the 20,000th retryer slow). Larger blocks are whole pages, kept
//! on per-size lists for reuse. Memory is never returned to the host: wasm
//! cannot shrink, so reuse is what keeps it flat.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::UnsafeCell;
use core::ptr;

const PAGE: usize = 65_536;
const MIN_SHIFT: u32 = 4;
/// Alignment of every small block: enough for every type the engine
/// allocates (f64 and u64 are 8-aligned on wasm32). Aligning blocks to their
/// size instead wasted up to a block between neighbours of different classes
/// (a 512-byte retryer slot after a 128-byte queue skipped 384 bytes), about
/// 0.4 KB per retryer under load. Stricter requests take whole pages.
const ALIGN: usize = 8;
const CLASSES: usize = 25; // 16, 24, 32, 48, ... 49152, 65536 B
const LARGE_LISTS: usize = 64;

struct Inner {
    /// Heads of the free lists; a free block stores the next pointer.
    free: [*mut u8; CLASSES],
    /// Free large blocks by page count (1..LARGE_LISTS); bigger ones leak
    /// into the last list and are reused when they fit.
    large: [*mut u8; LARGE_LISTS],
    bump: usize,
    end: usize,
}

/// The global allocator of the wasm build.
pub struct SizeClasses(UnsafeCell<Inner>);

// SAFETY: wasm32-unknown-unknown without the atomics feature has one thread.
unsafe impl Sync for SizeClasses {}

impl SizeClasses {
    /// An empty allocator.
    pub const fn new() -> SizeClasses {
        SizeClasses(UnsafeCell::new(Inner {
            free: [ptr::null_mut(); CLASSES],
            large: [ptr::null_mut(); LARGE_LISTS],
            bump: 0,
            end: 0,
        }))
    }
}

/// The class index and block size for `layout`, or `None` for a large or
/// over-aligned request (served with whole pages).
fn class_of(layout: Layout) -> Option<(usize, usize)> {
    let need = layout.size().max(1 << MIN_SHIFT);
    if need > PAGE || layout.align() > ALIGN {
        return None;
    }
    let shift = usize::BITS - (need - 1).leading_zeros();
    let step = (shift - MIN_SHIFT) as usize;
    // The 1.5 * 2^(k-1) class below 2^k (a multiple of 8 from 24 on).
    let half = 3usize << (shift - 2);
    if shift > MIN_SHIFT && need <= half {
        return Some((2 * step - 1, half));
    }
    Some((2 * step, 1usize << shift))
}

fn pages_for(size: usize) -> usize {
    size.div_ceil(PAGE)
}

/// Grows linear memory by `pages`; returns the start address or `None`.
fn grow(pages: usize) -> Option<usize> {
    let old = wasm32::memory_grow(0, pages);
    if old == usize::MAX {
        None
    } else {
        Some(old * PAGE)
    }
}

impl Inner {
    unsafe fn small(&mut self, class: usize, size: usize) -> *mut u8 {
        let Some(head) = self.free.get_mut(class) else {
            return ptr::null_mut();
        };
        if !head.is_null() {
            let block = *head;
            *head = *(block as *mut *mut u8);
            return block;
        }
        // Carve from the bump region: every block size is a multiple of
        // ALIGN, so the bump pointer always is too.
        let start = (self.bump + ALIGN - 1) & !(ALIGN - 1);
        if start + size > self.end {
            let Some(base) = grow(1) else {
                return ptr::null_mut();
            };
            if base != self.end {
                // Someone else grew memory in between: start a fresh region.
                self.bump = base;
            }
            self.end = base + PAGE;
            return self.small(class, size);
        }
        self.bump = start + size;
        start as *mut u8
    }

    unsafe fn large(&mut self, pages: usize) -> *mut u8 {
        let slot = pages.min(LARGE_LISTS) - 1;
        if pages < LARGE_LISTS {
            if let Some(head) = self.large.get_mut(slot) {
                if !head.is_null() {
                    let block = *head;
                    *head = *(block as *mut *mut u8);
                    return block;
                }
            }
        }
        match grow(pages) {
            Some(base) => base as *mut u8,
            None => ptr::null_mut(),
        }
    }
}

unsafe impl GlobalAlloc for SizeClasses {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let inner = &mut *self.0.get();
        match class_of(layout) {
            Some((class, size)) => inner.small(class, size),
            None if layout.align() <= PAGE => inner.large(pages_for(layout.size().max(1))),
            None => ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        let inner = &mut *self.0.get();
        let head = match class_of(layout) {
            Some((class, _)) => inner.free.get_mut(class),
            None => {
                let pages = pages_for(layout.size().max(1));
                if pages >= LARGE_LISTS {
                    // Rare and huge: keep it out of the lists rather than
                    // hand it to a smaller request that would waste it.
                    return;
                }
                inner.large.get_mut(pages - 1)
            }
        };
        if let Some(head) = head {
            *(block as *mut *mut u8) = *head;
            *head = block;
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Growing within the same class needs no copy.
        if let (Some((a, _)), Ok(next)) = (
            class_of(layout),
            Layout::from_size_align(new_size, layout.align()),
        ) {
            if class_of(next).map(|(b, _)| b) == Some(a) {
                return block;
            }
        }
        let Ok(next) = Layout::from_size_align(new_size, layout.align()) else {
            return ptr::null_mut();
        };
        let fresh = self.alloc(next);
        if !fresh.is_null() {
            ptr::copy_nonoverlapping(block, fresh, layout.size().min(new_size));
            self.dealloc(block, layout);
        }
        fresh
    }
}
