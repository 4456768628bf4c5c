//! A binary heap with a position index: true removal on cancel.

use super::slots::Slots;
use super::{EventId, EventKey, EventQueue};
use crate::time::SimDuration;

const NOWHERE: u32 = u32::MAX;

/// A binary heap of `(key, slot)` whose slots remember their position, so a
/// cancelled entry is removed at once (O(log n)) and memory is exactly the
/// live events.
pub struct IndexedHeap<E> {
    heap: Vec<(EventKey, u32)>,
    slots: Slots,
    /// Per slot: its position in `heap` and its event.
    pos: Vec<u32>,
    events: Vec<Option<E>>,
}

impl<E> Default for IndexedHeap<E> {
    fn default() -> Self {
        IndexedHeap {
            heap: Vec::new(),
            slots: Slots::default(),
            pos: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl<E> IndexedHeap<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn place(&mut self, i: usize) {
        self.pos[self.heap[i].1 as usize] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i].0 >= self.heap[parent].0 {
                break;
            }
            self.heap.swap(i, parent);
            self.place(i);
            i = parent;
        }
        self.place(i);
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.heap[r].0 < self.heap[l].0 {
                r
            } else {
                l
            };
            if self.heap[i].0 <= self.heap[c].0 {
                break;
            }
            self.heap.swap(i, c);
            self.place(i);
            i = c;
        }
        self.place(i);
    }

    /// Removes the entry at heap position `i`, returning its slot.
    fn remove_at(&mut self, i: usize) -> u32 {
        let slot = self.heap[i].1;
        let last = self.heap.len() - 1;
        self.heap.swap(i, last);
        self.heap.pop();
        self.pos[slot as usize] = NOWHERE;
        if i < self.heap.len() {
            self.place(i);
            self.sift_down(i);
            self.sift_up(i);
        }
        slot
    }
}

impl<E> EventQueue<E> for IndexedHeap<E> {
    fn push(&mut self, key: EventKey, _delay: SimDuration, event: E) -> EventId {
        let id = self.slots.take(key.seq);
        let slot = id.slot as usize;
        if slot >= self.pos.len() {
            self.pos.resize(slot + 1, NOWHERE);
            self.events.resize_with(slot + 1, || None);
        }
        self.events[slot] = Some(event);
        self.heap.push((key, id.slot));
        let i = self.heap.len() - 1;
        self.sift_up(i);
        id
    }

    fn cancel(&mut self, id: EventId) -> bool {
        if !self.slots.release(id) {
            return false;
        }
        let i = self.pos[id.slot as usize] as usize;
        self.remove_at(i);
        self.events[id.slot as usize] = None;
        true
    }

    fn pop(&mut self) -> Option<(EventKey, E)> {
        let (key, _) = *self.heap.first()?;
        let slot = self.remove_at(0);
        self.slots.release(EventId::new(slot, key.seq));
        let event = self.events[slot as usize]
            .take()
            .expect("live slot holds its event");
        Some((key, event))
    }

    fn peek(&mut self) -> Option<EventKey> {
        self.heap.first().map(|(k, _)| *k)
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn stored(&self) -> usize {
        self.heap.len()
    }
}
