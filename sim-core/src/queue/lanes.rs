//! Per-delay FIFO lanes for fixed-delay timers.

use std::collections::VecDeque;

use super::lazy::LazyHeap;
use super::slots::Slots;
use super::{EventId, EventKey, EventQueue};
use crate::time::SimDuration;

/// Lanes are swept once their dead entries outnumber live ones and exceed
/// this floor.
const COMPACT_FLOOR: usize = 1024;

/// At most this many lanes: each costs a comparison at every pop.
pub const MAX_LANES: usize = 8;

struct Lane<E> {
    delay: SimDuration,
    entries: VecDeque<(EventKey, EventId, E)>,
    dead: usize,
}

/// Timers with a registered fixed delay `d` scheduled at non-decreasing times arrive in
/// key order, so each delay gets a FIFO lane: O(1) push, O(1) cancel (a
/// tombstone swept when dead entries outnumber live ones), and pop takes
/// the least of the lane fronts and the fallback heap. Built for the
/// dominant pattern of a retry storm: every attempt arms the same timeout
/// and nearly all are cancelled when the response comes back.
pub struct TimerLanes<E> {
    lanes: Vec<Lane<E>>,
    slots: Slots,
    /// Which lane each slot's entry sits in.
    lane_of_slot: Vec<u8>,
    heap: LazyHeap<E>,
    live_in_lanes: usize,
}

impl<E> Default for TimerLanes<E> {
    fn default() -> Self {
        TimerLanes {
            lanes: Vec::new(),
            slots: Slots::default(),
            lane_of_slot: Vec::new(),
            heap: LazyHeap::new(),
            live_in_lanes: 0,
        }
    }
}

enum Source {
    Heap,
    Lane(usize),
}

impl<E> TimerLanes<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives `delay` a lane of its own; `false` if it already has one, if
    /// it is zero, or if [`MAX_LANES`] are taken. Register only delays that
    /// recur (a fixed timeout, a fixed backoff): every lane costs one
    /// comparison at each pop.
    pub fn add_lane(&mut self, delay: SimDuration) -> bool {
        if delay.is_zero()
            || self.lanes.len() >= MAX_LANES
            || self.lanes.iter().any(|l| l.delay == delay)
        {
            return false;
        }
        self.lanes.push(Lane {
            delay,
            entries: VecDeque::new(),
            dead: 0,
        });
        true
    }

    /// The delays that have lanes.
    pub fn lane_delays(&self) -> impl Iterator<Item = SimDuration> + '_ {
        self.lanes.iter().map(|l| l.delay)
    }

    /// The lane for `delay`, if it has one and `key` keeps it in order
    /// (it does whenever "now" never goes backwards).
    fn lane_for(&self, delay: SimDuration, key: EventKey) -> Option<usize> {
        let i = self.lanes.iter().position(|l| l.delay == delay)?;
        let in_order = self.lanes[i]
            .entries
            .back()
            .is_none_or(|(last, _, _)| *last < key);
        in_order.then_some(i)
    }

    /// Drops dead entries from the front of every lane.
    fn settle_lanes(&mut self) {
        for lane in &mut self.lanes {
            while let Some((_, id, _)) = lane.entries.front() {
                if self.slots.is_live(*id) {
                    break;
                }
                lane.entries.pop_front();
                lane.dead -= 1;
            }
        }
    }

    fn least(&mut self) -> Option<(EventKey, Source)> {
        self.settle_lanes();
        let mut best = self.heap.peek().map(|k| (k, Source::Heap));
        for (i, lane) in self.lanes.iter().enumerate() {
            if let Some((key, _, _)) = lane.entries.front()
                && best.as_ref().is_none_or(|(b, _)| key < b)
            {
                best = Some((*key, Source::Lane(i)));
            }
        }
        best
    }
}

impl<E> EventQueue<E> for TimerLanes<E> {
    #[inline]
    fn push(&mut self, key: EventKey, delay: SimDuration, event: E) -> EventId {
        if self.lanes.is_empty() {
            return self.heap.push(key, delay, event);
        }
        match self.lane_for(delay, key) {
            Some(i) => {
                let id = self.slots.take(key.seq);
                let slot = id.slot as usize;
                if slot >= self.lane_of_slot.len() {
                    self.lane_of_slot.resize(slot + 1, 0);
                }
                self.lane_of_slot[slot] = i as u8;
                self.lanes[i].entries.push_back((key, id, event));
                self.live_in_lanes += 1;
                id
            }
            None => self.heap.push(key, delay, event),
        }
    }

    #[inline]
    fn cancel(&mut self, id: EventId) -> bool {
        if !self.slots.release(id) {
            return self.heap.cancel(id);
        }
        self.live_in_lanes -= 1;
        let slots = &self.slots;
        let lane = &mut self.lanes[usize::from(self.lane_of_slot[id.slot as usize])];
        lane.dead += 1;
        let live = lane.entries.len() - lane.dead;
        if lane.dead > COMPACT_FLOOR && lane.dead > live {
            lane.entries.retain(|(_, eid, _)| slots.is_live(*eid));
            lane.dead = 0;
        }
        true
    }

    #[inline]
    fn pop(&mut self) -> Option<(EventKey, E)> {
        if self.live_in_lanes == 0 {
            return self.heap.pop();
        }
        match self.least()? {
            (_, Source::Heap) => self.heap.pop(),
            (_, Source::Lane(i)) => {
                let (key, id, event) = self.lanes[i].entries.pop_front()?;
                self.slots.release(id);
                self.live_in_lanes -= 1;
                Some((key, event))
            }
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<EventKey> {
        if self.live_in_lanes == 0 {
            return self.heap.peek();
        }
        self.least().map(|(k, _)| k)
    }

    fn len(&self) -> usize {
        self.heap.len() + self.live_in_lanes
    }

    fn stored(&self) -> usize {
        self.heap.stored() + self.lanes.iter().map(|l| l.entries.len()).sum::<usize>()
    }
}
