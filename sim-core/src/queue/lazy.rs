//! `BinaryHeap` with lazy cancellation and compaction.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::slots::Slots;
use super::{EventId, EventKey, EventQueue};
use crate::time::SimDuration;

/// Tombstones are swept once they outnumber live entries and exceed this
/// floor (so small queues never pay for a sweep).
const COMPACT_FLOOR: usize = 1024;

struct Entry<E> {
    key: EventKey,
    id: EventId,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed: `BinaryHeap` is a max-heap and we want the least key first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A binary heap whose cancelled entries stay behind as tombstones until
/// they surface or until a sweep: O(1) cancel, O(log n) push and pop, and
/// at most `2 × live + 1024` entries in memory.
pub struct LazyHeap<E> {
    heap: BinaryHeap<Entry<E>>,
    slots: Slots,
    tombstones: usize,
}

impl<E> Default for LazyHeap<E> {
    fn default() -> Self {
        LazyHeap {
            heap: BinaryHeap::new(),
            slots: Slots::default(),
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
    fn settle(&mut self) {
        while let Some(top) = self.heap.peek() {
            if self.slots.is_live(top.id) {
                return;
            }
            self.heap.pop();
            self.tombstones -= 1;
        }
    }

    fn maybe_compact(&mut self) {
        let live = self.heap.len() - self.tombstones;
        if self.tombstones > COMPACT_FLOOR && self.tombstones > live {
            let slots = &self.slots;
            self.heap.retain(|e| slots.is_live(e.id));
            self.tombstones = 0;
        }
    }
}

impl<E> EventQueue<E> for LazyHeap<E> {
    fn push(&mut self, key: EventKey, _delay: SimDuration, event: E) -> EventId {
        let id = self.slots.take(key.seq);
        self.heap.push(Entry { key, id, event });
        id
    }

    fn cancel(&mut self, id: EventId) -> bool {
        if !self.slots.release(id) {
            return false;
        }
        self.tombstones += 1;
        self.maybe_compact();
        true
    }

    fn pop(&mut self) -> Option<(EventKey, E)> {
        self.settle();
        let e = self.heap.pop()?;
        self.slots.release(e.id);
        Some((e.key, e.event))
    }

    fn peek(&mut self) -> Option<EventKey> {
        self.settle();
        self.heap.peek().map(|e| e.key)
    }

    fn len(&self) -> usize {
        self.heap.len() - self.tombstones
    }

    fn stored(&self) -> usize {
        self.heap.len()
    }
}
