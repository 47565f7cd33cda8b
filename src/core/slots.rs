//! A table of values addressed by small numbers, for the host to call back
//! with: a JavaScript handler is bound to an [`Address`], not to a value.
//!
//! A freed slot is reused, and its key changes each time it is filled, so a
//! handler bound to an address that was freed and filled again finds
//! nothing. Pure Rust: no JavaScript reaches it but numbers.

use alloc::vec::Vec;

/// Where a value sits: its slot and the key the slot had when it was
/// filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    pub slot: u32,
    pub key: u32,
}

struct Entry<T> {
    key: u32,
    value: Option<T>,
}

/// Values by [`Address`].
pub struct Slots<T> {
    entries: Vec<Entry<T>>,
    /// Empty slots, the next to fill last.
    free: Vec<u32>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots::new()
    }
}

impl<T> Slots<T> {
    /// An empty table.
    pub const fn new() -> Slots<T> {
        Slots {
            entries: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Puts `value` in an empty slot; `None` only when 2^32 slots are full.
    pub fn insert(&mut self, value: T) -> Option<Address> {
        if let Some(slot) = self.free.pop() {
            if let Some(entry) = self.entries.get_mut(slot as usize) {
                entry.key = entry.key.wrapping_add(1);
                entry.value = Some(value);
                return Some(Address {
                    slot,
                    key: entry.key,
                });
            }
        }
        let slot = u32::try_from(self.entries.len()).ok()?;
        self.entries.push(Entry {
            key: 0,
            value: Some(value),
        });
        Some(Address { slot, key: 0 })
    }

    /// The value at `at`, if it is still there.
    pub fn get(&self, at: Address) -> Option<&T> {
        let entry = self.entries.get(at.slot as usize)?;
        if entry.key == at.key {
            entry.value.as_ref()
        } else {
            None
        }
    }

    /// Takes the value at `at` out, if it is still there; its slot is free
    /// again.
    pub fn remove(&mut self, at: Address) -> Option<T> {
        let entry = self.entries.get_mut(at.slot as usize)?;
        if entry.key != at.key {
            return None;
        }
        let value = entry.value.take()?;
        self.free.push(at.slot);
        Some(value)
    }

    /// How many values the table holds.
    pub fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// Whether the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_found_at_its_address_until_removed() {
        let mut t = Slots::new();
        let a = t.insert("a").unwrap();
        let b = t.insert("b").unwrap();
        assert_eq!((t.get(a), t.get(b), t.len()), (Some(&"a"), Some(&"b"), 2));
        assert_eq!(t.remove(a), Some("a"));
        assert_eq!(t.get(a), None);
        assert_eq!((t.remove(a), t.len()), (None, 1));
    }

    #[test]
    fn a_reused_slot_does_not_answer_its_old_address() {
        let mut t = Slots::new();
        let old = t.insert(1).unwrap();
        t.remove(old);
        let new = t.insert(2).unwrap();
        assert_eq!(new.slot, old.slot, "the slot is reused");
        assert_ne!(new.key, old.key);
        assert_eq!(t.get(old), None);
        assert_eq!(t.get(new), Some(&2));
        assert_eq!(t.remove(old), None, "a stale address frees nothing");
        assert_eq!(t.get(new), Some(&2));
    }

    #[test]
    fn the_table_does_not_grow_with_values_that_come_and_go() {
        let mut t = Slots::new();
        for i in 0..10_000 {
            let a = t.insert(i).unwrap();
            assert_eq!(t.remove(a), Some(i));
        }
        assert!(t.is_empty());
        assert_eq!(t.entries.len(), 1);
    }

    #[test]
    fn an_address_past_the_end_finds_nothing() {
        let mut t: Slots<u8> = Slots::new();
        let far = Address { slot: 99, key: 0 };
        assert_eq!(t.get(far), None);
        assert_eq!(t.remove(far), None);
    }
}
