//! A slab of values addressed by typed, generation-checked references.
//!
//! Models keep their live records (requests, attempts, jobs) here and put
//! references to them in events. A record's slot is reused once it is
//! removed, but its generation moves on, so an event that still carries
//! an old reference finds nothing instead of someone else's record: stale
//! events are recognised, never misapplied. Memory follows the records
//! alive at once, never the number ever created.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::num::NonZeroU32;

/// A reference to a value of type `T` in a [`Slab`]; valid while the value
/// it was handed out for is there.
///
/// Generations start at 1, so that `Option<Ref<T>>` takes 8 bytes, not 12:
/// records hold several (a call's live attempts, an attempt's job and
/// request at the far end) and take fewer cache lines for it.
pub struct Ref<T> {
    slot: u32,
    generation: NonZeroU32,
    _of: PhantomData<fn() -> T>,
}

impl<T> Ref<T> {
    /// The slot index (for traces and stable ordering).
    pub fn slot(self) -> u32 {
        self.slot
    }
}

// Written out: derives would demand the same traits of `T`.
impl<T> Clone for Ref<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Ref<T> {}
impl<T> PartialEq for Ref<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.slot, self.generation) == (other.slot, other.generation)
    }
}
impl<T> Eq for Ref<T> {}
impl<T> Hash for Ref<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.slot, self.generation).hash(state);
    }
}
impl<T> fmt::Debug for Ref<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}.{}", self.slot, self.generation)
    }
}

struct Slot<T> {
    generation: NonZeroU32,
    value: Option<T>,
}

/// The generation after `g`: 1 follows `u32::MAX` (a slot reused 2^32
/// times; a reference that old is long gone).
#[inline]
fn next_generation(g: NonZeroU32) -> NonZeroU32 {
    g.checked_add(1).unwrap_or(NonZeroU32::MIN)
}

/// Slots from which an insert starts loading the slot the next one will
/// reuse: below it the slab stays in cache (M/M/8 holds dozens of
/// records, the steady world hundreds) and the hint would be work for
/// nothing (measured without this bound: +1.3 % of M/M/8's
/// instructions); a storm's slabs hold tens of thousands.
const PREFETCH_FROM: usize = 2048;

/// Values in reusable slots, each addressed by a [`Ref`].
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> fmt::Debug for Slab<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Slab({} live of {})", self.live, self.slots.len())
    }
}

impl<T> Slab<T> {
    /// An empty slab.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value`, reusing a free slot when there is one. Always
    /// inlined: records are inserted on every request's path, and the
    /// compiler left this out of line for the large ones, a call and an
    /// extra copy of the record each time.
    #[inline(always)]
    pub fn insert(&mut self, value: T) -> Ref<T> {
        let slot = match self.free.pop() {
            Some(slot) => {
                if self.slots.len() >= PREFETCH_FROM {
                    self.load_next_free();
                }
                slot
            }
            None => {
                // Bounded far below by the models' in-flight limits.
                let slot = u32::try_from(self.slots.len()).expect("more than 2^32 live values");
                self.slots.push(Slot {
                    generation: NonZeroU32::MIN,
                    value: None,
                });
                slot
            }
        };
        let s = &mut self.slots[slot as usize];
        debug_assert!(s.value.is_none(), "a free slot holds a value");
        s.value = Some(value);
        self.live += 1;
        Ref {
            slot,
            generation: s.generation,
            _of: PhantomData,
        }
    }

    /// Starts loading the slot the next insert will reuse: the one freed
    /// last, untouched since (in a storm, seconds). Out of line, so that
    /// the insert inlined everywhere stays small for the worlds that do
    /// not need it.
    #[inline(never)]
    fn load_next_free(&self) {
        if let Some(&next) = self.free.last() {
            crate::prefetch::prefetch(&self.slots[next as usize]);
        }
    }

    /// The value behind `r`, if it is still there.
    #[inline]
    pub fn get(&self, r: Ref<T>) -> Option<&T> {
        let s = self.slots.get(r.slot as usize)?;
        if s.generation == r.generation {
            s.value.as_ref()
        } else {
            None
        }
    }

    /// The value behind `r`, mutably, if it is still there.
    #[inline]
    pub fn get_mut(&mut self, r: Ref<T>) -> Option<&mut T> {
        let s = self.slots.get_mut(r.slot as usize)?;
        if s.generation == r.generation {
            s.value.as_mut()
        } else {
            None
        }
    }

    /// Starts loading the slot of `r` into cache, for a caller that will
    /// read it soon (see `prefetch.rs`); a reference past the slab is
    /// ignored, and so is every reference while the slab is below
    /// `PREFETCH_FROM` slots (it stays in cache: the hint would be work
    /// for nothing). Only a hint: nothing is read.
    #[inline(always)]
    pub fn prefetch(&self, r: Ref<T>) {
        if self.slots.len() >= PREFETCH_FROM
            && let Some(s) = self.slots.get(r.slot as usize)
        {
            crate::prefetch::prefetch(s);
        }
    }

    /// Whether `r` still refers to a value.
    #[inline]
    pub fn contains(&self, r: Ref<T>) -> bool {
        self.get(r).is_some()
    }

    /// Removes the value behind `r` and returns it; `None`, harmlessly,
    /// when it is already gone. Every reference to it is stale from now on.
    pub fn remove(&mut self, r: Ref<T>) -> Option<T> {
        let s = self.slots.get_mut(r.slot as usize)?;
        if s.generation != r.generation {
            return None;
        }
        let value = s.value.take()?;
        s.generation = next_generation(s.generation);
        self.free.push(r.slot);
        self.live -= 1;
        Some(value)
    }

    /// Drops the value behind `r` where it lies, if it is still there;
    /// `true` if it was. Cheaper than [`Slab::remove`] for large values
    /// nobody wants back: nothing is moved out.
    #[inline]
    pub fn discard(&mut self, r: Ref<T>) -> bool {
        let Some(s) = self.slots.get_mut(r.slot as usize) else {
            return false;
        };
        if s.generation != r.generation || s.value.is_none() {
            return false;
        }
        s.value = None;
        s.generation = next_generation(s.generation);
        self.free.push(r.slot);
        self.live -= 1;
        true
    }

    /// Values held.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The values held with their references, in slot order (stable for a
    /// given history, so scans are deterministic).
    pub fn iter(&self) -> impl Iterator<Item = (Ref<T>, &T)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.value.as_ref().map(|v| {
                (
                    Ref {
                        slot: i as u32,
                        generation: s.generation,
                        _of: PhantomData,
                    },
                    v,
                )
            })
        })
    }

    /// References to every value held, in slot order.
    pub fn refs(&self) -> Vec<Ref<T>> {
        self.iter().map(|(r, _)| r).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_slot_does_not_answer_to_an_old_reference() {
        let mut slab = Slab::new();
        let a = slab.insert("a");
        assert_eq!(slab.remove(a), Some("a"));
        let b = slab.insert("b");
        assert_eq!(a.slot(), b.slot(), "the slot is reused");
        assert_eq!(slab.get(a), None);
        assert_eq!(slab.remove(a), None, "removing twice is harmless");
        assert_eq!(slab.get(b), Some(&"b"));
        assert_eq!(slab.len(), 1);
    }

    #[test]
    fn a_discarded_value_is_gone_and_its_slot_reused_under_a_new_generation() {
        let mut slab = Slab::new();
        let a = slab.insert(String::from("a"));
        assert!(slab.discard(a));
        assert!(!slab.discard(a), "discarding twice is harmless");
        assert_eq!(slab.len(), 0);
        let b = slab.insert(String::from("b"));
        assert_eq!(a.slot(), b.slot(), "the slot is reused");
        assert_eq!(slab.get(a), None);
        assert!(!slab.discard(a), "an old reference discards nothing");
        assert_eq!(slab.get(b).map(String::as_str), Some("b"));
    }

    #[test]
    fn an_absent_reference_costs_no_room() {
        // The records' layout counts on these (a call holds five).
        assert_eq!(std::mem::size_of::<Option<Ref<u64>>>(), 8);
        assert_eq!(std::mem::size_of::<Option<crate::queue::EventId>>(), 16);
    }

    #[test]
    fn generations_run_on_past_the_largest_without_zero() {
        assert_eq!(next_generation(NonZeroU32::MIN).get(), 2);
        assert_eq!(next_generation(NonZeroU32::MAX), NonZeroU32::MIN);
    }

    #[test]
    fn iteration_is_in_slot_order_and_skips_the_removed() {
        let mut slab = Slab::new();
        let refs: Vec<_> = (0..5).map(|i| slab.insert(i)).collect();
        slab.remove(refs[1]);
        slab.remove(refs[3]);
        let seen: Vec<i32> = slab.iter().map(|(_, v)| *v).collect();
        assert_eq!(seen, [0, 2, 4]);
        assert_eq!(slab.refs(), [refs[0], refs[2], refs[4]]);
    }
}
