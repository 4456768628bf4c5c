//! The `priority-queue` crate as an event queue.

use std::cmp::Reverse;

use priority_queue::PriorityQueue;

use super::slots::Slots;
use super::{EventId, EventKey, EventQueue};
use crate::time::SimDuration;

/// `priority_queue::PriorityQueue` keyed by slot, prioritised by the
/// reversed key: an indexed heap from a crate, with true removal. Kept as a
/// measured alternative; the crate's natural use is re-prioritisable
/// queues (least-loaded selection), where keys change in place.
pub struct PqQueue<E> {
    pq: PriorityQueue<u32, Reverse<EventKey>>,
    slots: Slots,
    events: Vec<Option<E>>,
}

impl<E> Default for PqQueue<E> {
    fn default() -> Self {
        PqQueue {
            pq: PriorityQueue::new(),
            slots: Slots::default(),
            events: Vec::new(),
        }
    }
}

impl<E> PqQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<E> EventQueue<E> for PqQueue<E> {
    fn push(&mut self, key: EventKey, _delay: SimDuration, event: E) -> EventId {
        let id = self.slots.take(key.seq);
        let slot = id.slot as usize;
        if slot >= self.events.len() {
            self.events.resize_with(slot + 1, || None);
        }
        self.events[slot] = Some(event);
        self.pq.push(id.slot, Reverse(key));
        id
    }

    fn cancel(&mut self, id: EventId) -> bool {
        if !self.slots.release(id) {
            return false;
        }
        self.pq.remove(&id.slot);
        self.events[id.slot as usize] = None;
        true
    }

    fn pop(&mut self) -> Option<(EventKey, E)> {
        let (slot, Reverse(key)) = self.pq.pop()?;
        self.slots.release(EventId::new(slot, key.seq));
        let event = self.events[slot as usize]
            .take()
            .expect("live slot holds its event");
        Some((key, event))
    }

    fn peek(&mut self) -> Option<EventKey> {
        self.pq.peek().map(|(_, Reverse(k))| *k)
    }

    fn len(&self) -> usize {
        self.pq.len()
    }

    fn stored(&self) -> usize {
        self.pq.len()
    }
}
