//! A four-ary heap with lazy cancellation and compaction, and FIFO
//! streams beside it.
//!
//! Four children per node (`quad.rs`: the standard library's
//! `BinaryHeap` generalised, its pop choosing among children without
//! branches) halve the heap's depth: a pop
//! compares more keys per level but touches half the levels, which wins
//! once the heap outgrows the cache (1.9× a bare binary heap at 10^6
//! pending, 1.3× at 10^3, in the hold model; `sim-core/benches/README.md`,
//! "A heap that does not guess"). Keys are unique (time,
//! sequence), so the order of events is the same with any arity.
//!
//! A stream ([`LazyHeap::push_in_stream`]) is a FIFO for events whose
//! times seldom go back: one source's arrivals, the timers of one fixed
//! delay. Such an event costs a push at the back and a pop at the front
//! instead of a sift each way, and leaves the heap smaller for the rest.
//! An event that would go back in its stream joins the heap instead, so
//! a stream is always in key order and the least key is the least of
//! the heap's top and the streams' fronts: the order of events is the
//! same whichever structure holds them.

use super::fifo::Fifo;
use super::quad::{QuadHeap, Ranked};
use super::slots::Slots;
use super::{EventId, EventKey, EventQueue};
use crate::time::SimDuration;

/// Tombstones are swept once they outnumber live entries and exceed this
/// floor (so small queues never pay for a sweep).
const COMPACT_FLOOR: usize = 1024;

/// Streams a queue keeps beside its heap: a pop from a stream looks at
/// each one's front again (to keep the least). A stream number past them
/// schedules in the heap.
pub const MAX_STREAMS: usize = 4;

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
        EventId::new(self.slot, self.seq)
    }

    #[inline]
    fn key(&self) -> EventKey {
        EventKey {
            time: crate::time::SimTime::from_nanos(self.time),
            seq: self.seq,
        }
    }
}

impl Ranked for Entry {
    /// Time then sequence as one integer: one wide comparison instead of
    /// two dependent ones, at every level of every sift.
    #[inline(always)]
    fn rank(&self) -> u128 {
        (u128::from(self.time) << 64) | u128::from(self.seq)
    }
}

/// A four-ary heap of small keys, and up to [`MAX_STREAMS`] FIFO streams
/// beside it, whose cancelled entries stay behind as tombstones until
/// they surface or until a sweep: O(1) cancel, O(log n) push and pop in
/// the heap, O(1) in a stream, and at most `2 × live + 1024` entries
/// held, plus, in each stream, entries already read (no more than the
/// stream holds and 1,024: `Fifo`). Events live in a slab indexed by
/// slot; slots are recycled, so the slab is as large as the most events
/// ever pending at once.
pub struct LazyHeap<E> {
    heap: QuadHeap<Entry>,
    /// Each stream's entries, in ascending key order.
    streams: Vec<Fifo<Entry>>,
    /// The least of the streams' fronts: its rank ([`NONE`] when every
    /// stream is empty) and its stream. Kept up to date as streams change,
    /// so that finding the least entry is one comparison with the heap's
    /// top, not one per stream.
    front: (u128, usize),
    slots: Slots,
    events: Vec<Option<E>>,
    /// Cancelled entries still held, in the heap or in a stream.
    tombstones: usize,
}

impl<E> Default for LazyHeap<E> {
    fn default() -> Self {
        LazyHeap {
            heap: QuadHeap::default(),
            streams: Vec::new(),
            front: (NONE, 0),
            slots: Slots::default(),
            events: Vec::new(),
            tombstones: 0,
        }
    }
}

/// The rank of no entry: no key has both its time and its sequence at
/// `u64::MAX` (sequence numbers count events scheduled).
const NONE: u128 = u128::MAX;

/// Events held (pending or slots to reuse) from which taking an event
/// starts loading the next one ([`LazyHeap::load_heap_top`]): below it
/// the events stay in cache (M/M/8 holds about 10, the steady world about
/// 300: the hint would be work for nothing); a storm holds over 1,000,
/// and its records push them out between an event's scheduling and its
/// turn.
const LOAD_TOP_FROM: usize = 1024;

/// Where the least entry waits.
#[derive(Clone, Copy)]
enum Place {
    Heap,
    Stream(usize),
}

impl<E> LazyHeap<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// The least entry, live or not, and where it waits.
    #[inline(always)]
    fn least_entry(&self) -> Option<(Entry, Place)> {
        let (rank, i) = self.front;
        match self.heap.peek() {
            Some(top) if top.rank() < rank => Some((*top, Place::Heap)),
            _ if rank != NONE => self.streams[i].front().map(|f| (*f, Place::Stream(i))),
            _ => None,
        }
    }

    /// Finds the least of the streams' fronts again.
    fn refresh_front(&mut self) {
        self.front = (NONE, 0);
        for (i, stream) in self.streams.iter().enumerate() {
            if let Some(f) = stream.front()
                && f.rank() < self.front.0
            {
                self.front = (f.rank(), i);
            }
        }
    }

    /// Removes the least entry, found at `place`.
    #[inline(always)]
    fn remove_at(&mut self, place: Place) {
        match place {
            Place::Heap => {
                self.heap.pop();
            }
            Place::Stream(i) => {
                self.streams[i].advance();
                self.refresh_front();
            }
        }
    }

    /// Drops tombstones until the least entry, if any, is live; returns
    /// it and where it waits.
    #[inline(always)]
    fn settle(&mut self) -> Option<(Entry, Place)> {
        loop {
            let (e, place) = self.least_entry()?;
            if self.slots.is_live(e.id()) {
                return Some((e, place));
            }
            self.remove_at(place);
            self.tombstones -= 1;
        }
    }

    /// The least key held, which may be a tombstone's: a lower bound on
    /// the least live key, for free (no liveness check).
    #[inline]
    pub(crate) fn peek_bound(&self) -> Option<EventKey> {
        self.least_entry().map(|(e, _)| e.key())
    }

    /// Entries held, tombstones included.
    fn held(&self) -> usize {
        self.heap.len() + self.streams.iter().map(Fifo::len).sum::<usize>()
    }

    fn maybe_compact(&mut self) {
        let live = self.held() - self.tombstones;
        if self.tombstones > COMPACT_FLOOR && self.tombstones > live {
            let slots = &self.slots;
            self.heap.retain(|e| slots.is_live(e.id()));
            for stream in &mut self.streams {
                stream.retain(|e| slots.is_live(e.id()));
            }
            self.refresh_front();
            self.tombstones = 0;
        }
    }

    /// Takes a slot for `key`'s event and stores the event in it.
    #[inline(always)]
    fn store(&mut self, key: EventKey, event: E) -> Entry {
        let id = self.slots.take(key.seq);
        let slot = id.slot as usize;
        if slot == self.events.len() {
            self.events.push(Some(event));
        } else {
            self.events[slot] = Some(event);
        }
        Entry {
            time: key.time.as_nanos(),
            seq: key.seq,
            slot: id.slot,
        }
    }

    /// Adds `event` under `key` to stream `stream`: at its back when
    /// `key` is later than every key there, in the heap otherwise (and
    /// when `stream` is not below [`MAX_STREAMS`]). Either way it comes
    /// out in key order.
    #[inline(always)]
    pub fn push_in_stream(&mut self, stream: usize, key: EventKey, event: E) -> EventId {
        let entry = self.store(key, event);
        if stream < MAX_STREAMS {
            if self.streams.len() <= stream {
                self.streams.resize_with(stream + 1, Fifo::default);
            }
            let fifo = &mut self.streams[stream];
            if fifo.back().is_none_or(|b| b.rank() < entry.rank()) {
                if fifo.is_empty() && entry.rank() < self.front.0 {
                    self.front = (entry.rank(), stream);
                }
                fifo.push_back(entry);
                return entry.id();
            }
        }
        self.heap.push(entry);
        entry.id()
    }
}

impl<E> LazyHeap<E> {
    /// Takes the least pending event if its time is at or before `end`:
    /// a peek and a pop with the tombstones above it dropped once.
    #[inline(always)]
    pub(crate) fn pop_at_or_before(&mut self, end: crate::time::SimTime) -> Option<(EventKey, E)> {
        let (e, place) = self.settle()?;
        if e.time > end.as_nanos() {
            return None;
        }
        self.take(e, place)
    }

    /// Takes the least entry `e` (settled: live), found at `place`, and
    /// its event.
    #[inline(always)]
    fn take(&mut self, e: Entry, place: Place) -> Option<(EventKey, E)> {
        self.remove_at(place);
        self.slots.release(e.id());
        let event = self.events[e.slot as usize].take()?;
        self.load_heap_top();
        Some((e.key(), event))
    }

    /// Starts loading what taking the heap's new top will read: its
    /// liveness slot and its event. The heap holds the events of random
    /// delay (a dependency's completions), each stored when it was
    /// scheduled; in a storm, by the time it is due, long out of cache.
    /// Loaded now, the load overlaps the handling of the event just taken
    /// (a hint only: the top may change before it is taken).
    #[inline(always)]
    fn load_heap_top(&self) {
        if self.events.len() < LOAD_TOP_FROM {
            return;
        }
        let Some(top) = self.heap.peek() else {
            return;
        };
        if let Some(event) = self.events.get(top.slot as usize) {
            crate::prefetch::prefetch(event);
        }
        self.slots.prefetch(top.slot);
    }
}

impl<E> EventQueue<E> for LazyHeap<E> {
    #[inline]
    fn push(&mut self, key: EventKey, _delay: SimDuration, event: E) -> EventId {
        let entry = self.store(key, event);
        self.heap.push(entry);
        entry.id()
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
        let (e, place) = self.settle()?;
        self.take(e, place)
    }

    #[inline]
    fn peek(&mut self) -> Option<EventKey> {
        self.settle().map(|(e, _)| e.key())
    }

    fn len(&self) -> usize {
        self.held() - self.tombstones
    }

    fn stored(&self) -> usize {
        self.heap.len() + self.streams.iter().map(Fifo::held).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::fifo;
    use crate::time::SimTime;

    fn key(time: u64, seq: u64) -> EventKey {
        EventKey {
            time: SimTime::from_nanos(time),
            seq,
        }
    }

    #[test]
    fn a_stream_that_never_empties_keeps_its_order_and_drops_what_was_read() {
        // A fixed delay's timers: five always pending, 10,000 in all.
        let mut q = LazyHeap::new();
        let mut seq = 0;
        for _ in 0..5 {
            q.push_in_stream(0, key(seq * 10, seq), seq);
            seq += 1;
        }
        let mut most_read_held = 0;
        for expected in 0..10_000u64 {
            let (k, e) = q.pop().expect("pending");
            assert_eq!((k, e), (key(expected * 10, expected), expected));
            q.push_in_stream(0, key(seq * 10, seq), seq);
            seq += 1;
            let fifo = &q.streams[0];
            assert_eq!(fifo.len(), 5, "all in the stream, none in the heap");
            most_read_held = most_read_held.max(fifo.held() - fifo.len());
        }
        assert!(q.heap.is_empty());
        assert!(
            most_read_held <= fifo::COMPACT_FLOOR,
            "{most_read_held} read entries held"
        );
    }
}
