//! `BinaryHeap` with lazy cancellation and compaction.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

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

/// Where the next event waits.
#[derive(Clone, Copy)]
enum Source {
    Heap,
    Lane,
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

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed: `BinaryHeap` is a max-heap and we want the least key first.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A binary heap of small keys whose cancelled entries stay behind as
/// tombstones until they surface or until a sweep: O(1) cancel, O(log n)
/// push and pop, and at most `2 × live + 1024` entries in memory. Events
/// live in a slab indexed by slot; slots are recycled, so the slab is as
/// large as the most events ever pending at once.
///
/// Events scheduled with no delay skip the heap: they wait in a FIFO lane
/// (pushed at a non-decreasing "now" with rising sequence numbers, the lane
/// is already in key order), and `pop` takes the lesser of the lane's front
/// and the heap's top. The order is exactly the heap's would be; the cost
/// of a zero-delay hop is O(1), so a model can send every leg through the
/// scheduler at no measurable price.
pub struct LazyHeap<E> {
    heap: BinaryHeap<Entry>,
    lane: VecDeque<Entry>,
    slots: Slots,
    events: Vec<Option<E>>,
    tombstones: usize,
}

impl<E> Default for LazyHeap<E> {
    fn default() -> Self {
        LazyHeap {
            heap: BinaryHeap::new(),
            lane: VecDeque::new(),
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

    /// Drops tombstones from the top of the heap and the front of the lane
    /// so that both, if any, are live; returns the lesser key's source.
    #[inline]
    fn settle(&mut self) -> Option<Source> {
        while let Some(top) = self.heap.peek() {
            if self.slots.is_live(top.id()) {
                break;
            }
            self.heap.pop();
            self.tombstones -= 1;
        }
        while let Some(front) = self.lane.front() {
            if self.slots.is_live(front.id()) {
                break;
            }
            self.lane.pop_front();
            self.tombstones -= 1;
        }
        match (self.heap.peek(), self.lane.front()) {
            (None, None) => None,
            (Some(_), None) => Some(Source::Heap),
            (None, Some(_)) => Some(Source::Lane),
            // `Entry`'s order is reversed: the greater entry is the earlier.
            (Some(h), Some(l)) => Some(if h > l { Source::Heap } else { Source::Lane }),
        }
    }

    fn maybe_compact(&mut self) {
        let live = self.heap.len() + self.lane.len() - self.tombstones;
        if self.tombstones > COMPACT_FLOOR && self.tombstones > live {
            let slots = &self.slots;
            self.heap.retain(|e| slots.is_live(e.id()));
            self.lane.retain(|e| slots.is_live(e.id()));
            self.tombstones = 0;
        }
    }
}

impl<E> EventQueue<E> for LazyHeap<E> {
    #[inline]
    fn push(&mut self, key: EventKey, delay: SimDuration, event: E) -> EventId {
        let id = self.slots.take(key.seq);
        let slot = id.slot as usize;
        if slot == self.events.len() {
            self.events.push(Some(event));
        } else {
            self.events[slot] = Some(event);
        }
        let entry = Entry {
            time: key.time.as_nanos(),
            seq: key.seq,
            slot: id.slot,
        };
        if delay.is_zero() {
            debug_assert!(self.lane.back().is_none_or(|b| b.cmp(&entry).is_gt()));
            self.lane.push_back(entry);
        } else {
            self.heap.push(entry);
        }
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
        let e = match self.settle()? {
            Source::Heap => self.heap.pop()?,
            Source::Lane => self.lane.pop_front()?,
        };
        self.slots.release(e.id());
        let event = self.events[e.slot as usize].take()?;
        let key = EventKey {
            time: crate::time::SimTime::from_nanos(e.time),
            seq: e.seq,
        };
        Some((key, event))
    }

    #[inline]
    fn peek(&mut self) -> Option<EventKey> {
        let e = match self.settle()? {
            Source::Heap => self.heap.peek(),
            Source::Lane => self.lane.front(),
        };
        e.map(|e| EventKey {
            time: crate::time::SimTime::from_nanos(e.time),
            seq: e.seq,
        })
    }

    fn len(&self) -> usize {
        self.heap.len() + self.lane.len() - self.tombstones
    }

    fn stored(&self) -> usize {
        self.heap.len() + self.lane.len()
    }
}
