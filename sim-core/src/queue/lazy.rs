//! A four-ary heap with lazy cancellation and compaction.
//!
//! Four children per node (`dary_heap`'s `QuaternaryHeap`, the standard
//! library's `BinaryHeap` generalised) halve the heap's depth: a pop
//! compares more keys per level but touches half the levels, which wins
//! once the heap outgrows the cache (2.2× a binary heap at 10^6 pending,
//! 1.35× at 10^3; `sim-core/benches/README.md`). Keys are unique (time,
//! sequence), so the order of events is the same with any arity.

use dary_heap::QuaternaryHeap;
use std::cmp::Ordering;

use super::slots::Slots;
use super::{EventId, EventKey, EventQueue};
use crate::time::SimDuration;

/// Tombstones are swept once they outnumber live entries and exceed this
/// floor (so small queues never pay for a sweep).
const COMPACT_FLOOR: usize = 1024;

/// What the heap orders: 24 bytes whatever the event type, so sifting
/// moves little memory; the event itself waits in a slab.
#[derive(Clone, Copy)]
struct Entry {
    time: u64,
    seq: u64,
    slot: u32,
}

impl Entry {
    #[inline]
    fn id(&self) -> EventId {
        EventId {
            slot: self.slot,
            seq: self.seq,
        }
    }
}

impl Entry {
    /// Time then sequence as one integer: one wide comparison instead of
    /// two dependent ones, at every level of every sift.
    #[inline]
    fn rank(&self) -> u128 {
        (u128::from(self.time) << 64) | u128::from(self.seq)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.rank() == other.rank()
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed: the heap is a max-heap and we want the least key first.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.rank().cmp(&self.rank())
    }
}

/// A four-ary heap of small keys whose cancelled entries stay behind as
/// tombstones until they surface or until a sweep: O(1) cancel, O(log n)
/// push and pop, and at most `2 × live + 1024` entries in memory. Events
/// live in a slab indexed by slot; slots are recycled, so the slab is as
/// large as the most events ever pending at once.
pub struct LazyHeap<E> {
    heap: QuaternaryHeap<Entry>,
    slots: Slots,
    events: Vec<Option<E>>,
    tombstones: usize,
}

impl<E> Default for LazyHeap<E> {
    fn default() -> Self {
        LazyHeap {
            heap: QuaternaryHeap::new(),
            slots: Slots::default(),
            events: Vec::new(),
            tombstones: 0,
        }
    }
}

impl<E> LazyHeap<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops tombstones from the top so that the top, if any, is live.
    #[inline]
    fn settle(&mut self) {
        while let Some(top) = self.heap.peek() {
            if self.slots.is_live(top.id()) {
                return;
            }
            self.heap.pop();
            self.tombstones -= 1;
        }
    }

    /// The key at the top of the heap, which may be a tombstone's: a
    /// lower bound on the least live key, for free (no liveness check).
    #[inline]
    pub(crate) fn peek_bound(&self) -> Option<EventKey> {
        self.heap.peek().map(|e| EventKey {
            time: crate::time::SimTime::from_nanos(e.time),
            seq: e.seq,
        })
    }

    fn maybe_compact(&mut self) {
        let live = self.heap.len() - self.tombstones;
        if self.tombstones > COMPACT_FLOOR && self.tombstones > live {
            let slots = &self.slots;
            self.heap.retain(|e| slots.is_live(e.id()));
            self.tombstones = 0;
        }
    }
}

impl<E> LazyHeap<E> {
    /// Takes the least pending event if its time is at or before `end`:
    /// a peek and a pop with the tombstones above it dropped once.
    #[inline]
    pub(crate) fn pop_at_or_before(&mut self, end: crate::time::SimTime) -> Option<(EventKey, E)> {
        self.settle();
        if self.heap.peek()?.time > end.as_nanos() {
            return None;
        }
        self.take_top()
    }

    /// Takes the top entry (settled: live) and its event.
    #[inline]
    fn take_top(&mut self) -> Option<(EventKey, E)> {
        let e = self.heap.pop()?;
        self.slots.release(e.id());
        let event = self.events[e.slot as usize].take()?;
        let key = EventKey {
            time: crate::time::SimTime::from_nanos(e.time),
            seq: e.seq,
        };
        Some((key, event))
    }
}

impl<E> EventQueue<E> for LazyHeap<E> {
    #[inline]
    fn push(&mut self, key: EventKey, _delay: SimDuration, event: E) -> EventId {
        let id = self.slots.take(key.seq);
        let slot = id.slot as usize;
        if slot == self.events.len() {
            self.events.push(Some(event));
        } else {
            self.events[slot] = Some(event);
        }
        self.heap.push(Entry {
            time: key.time.as_nanos(),
            seq: key.seq,
            slot: id.slot,
        });
        id
    }

    fn cancel(&mut self, id: EventId) -> bool {
        if !self.slots.release(id) {
            return false;
        }
        self.events[id.slot as usize] = None;
        self.tombstones += 1;
        self.maybe_compact();
        true
    }

    #[inline]
    fn pop(&mut self) -> Option<(EventKey, E)> {
        self.settle();
        self.take_top()
    }

    #[inline]
    fn peek(&mut self) -> Option<EventKey> {
        self.settle();
        self.heap.peek().map(|e| EventKey {
            time: crate::time::SimTime::from_nanos(e.time),
            seq: e.seq,
        })
    }

    fn len(&self) -> usize {
        self.heap.len() - self.tombstones
    }

    fn stored(&self) -> usize {
        self.heap.len()
    }
}
