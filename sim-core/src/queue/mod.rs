//! Pending-event queues: the structure behind the scheduler.
//!
//! Every queue here pops events in ascending [`EventKey`] order, that is by
//! time and, among equal times, by the sequence number the scheduler handed
//! out when the event was scheduled (FIFO). Every queue cancels through an
//! [`EventId`] in O(1) or O(log n), and a stale id (already fired or already
//! cancelled) is a harmless no-op that returns `false`.
//!
//! Several structures are kept side by side because the right one was chosen
//! by measurement (`sim-core/benches/README.md` has the figures). Only
//! [`LazyHeap`] is part of the library; the others exist for the crate's
//! tests and, with the `queue-variants` feature, its benchmarks
//! (`cargo bench -p sim-core --features queue-variants`):
//!
//! * [`LazyHeap`]: a four-ary heap (`quad.rs`) with lazy cancellation
//!   (a cancelled entry stays as a tombstone until it surfaces) and
//!   compaction once tombstones outnumber live entries, so memory stays
//!   within twice the live events. The heap orders 24-byte keys; events
//!   wait in a slab. Beside the heap, a few FIFO streams for sources
//!   whose events seldom go back in time (arrivals, fixed delays): O(1)
//!   each way. **The scheduler's queue**: fastest in both the hold
//!   model and the cancel-heavy timeout pattern.
//! * [`TimerLanes`]: one FIFO per fixed delay (an attempt timeout, a fixed
//!   backoff). Events pushed `d` after a non-decreasing "now" arrive in key
//!   order, so a lane is a `VecDeque` with O(1) push, pop and cancel.
//!   Delays without a lane fall through to a [`LazyHeap`]. Measured
//!   slower than the swept lazy heap on the timeout pattern (pop scans the
//!   lane fronts; pushes at ever-later times are already O(1) in a heap).
//! * [`IndexedHeap`]: a binary heap that tracks each entry's position and
//!   removes cancelled entries at once (true removal).
//! * [`PqQueue`]: the `priority-queue` crate's indexed priority queue.

// The measured alternatives are not part of the library: only the crate's
// own tests and, with the `queue-variants` feature, its benchmarks see them.
pub(crate) mod fifo;
#[cfg(any(test, feature = "queue-variants"))]
mod indexed;
#[cfg(any(test, feature = "queue-variants"))]
mod lanes;
mod lazy;
#[cfg(any(test, feature = "queue-variants"))]
mod pq;
mod quad;
mod slots;

#[cfg(any(test, feature = "queue-variants"))]
pub use indexed::IndexedHeap;
#[cfg(any(test, feature = "queue-variants"))]
pub use lanes::TimerLanes;
pub use lazy::{LazyHeap, MAX_STREAMS};
#[cfg(any(test, feature = "queue-variants"))]
pub use pq::PqQueue;

use crate::time::{SimDuration, SimTime};

/// The total order of events: by time, then by scheduling sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventKey {
    /// When the event fires.
    pub time: SimTime,
    /// Tie-breaker: the order in which events were scheduled.
    pub seq: u64,
}

/// A handle to a scheduled event, used to cancel it.
///
/// Ids are never reused: the sequence number inside makes a stale id
/// (fired or cancelled already) recognisable, even if its storage slot now
/// holds another event.
///
/// The sequence number is kept plus one, in a `NonZeroU64`: an
/// `Option<EventId>` (a record's timer) then takes 16 bytes, not 24, and
/// the records that hold two or three of them (a request, a call) take
/// fewer cache lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventId {
    pub(crate) slot: u32,
    seq_plus_one: std::num::NonZeroU64,
}

impl EventId {
    /// The id of the event with sequence `seq` stored in `slot`.
    #[inline]
    pub(crate) fn new(slot: u32, seq: u64) -> Self {
        // Saturates rather than branches: a sequence of u64::MAX would
        // take centuries of events to reach.
        let seq_plus_one = std::num::NonZeroU64::MIN.saturating_add(seq);
        EventId { slot, seq_plus_one }
    }

    /// The sequence number of the event (its position in scheduling order).
    #[inline]
    pub fn seq(self) -> u64 {
        self.seq_plus_one.get() - 1
    }
}

/// The interface the scheduler and the benchmarks drive every queue through.
pub trait EventQueue<E> {
    /// Adds `event` under `key`. `delay` is how far after the current time
    /// the event was scheduled; structures that specialise in fixed delays
    /// ([`TimerLanes`]) use it, the others ignore it.
    fn push(&mut self, key: EventKey, delay: SimDuration, event: E) -> EventId;
    /// Cancels a pending event; `false` if it already fired or was cancelled.
    fn cancel(&mut self, id: EventId) -> bool;
    /// Removes and returns the least pending event.
    fn pop(&mut self) -> Option<(EventKey, E)>;
    /// The key of the least pending event.
    fn peek(&mut self) -> Option<EventKey>;
    /// Number of live (not cancelled) pending events.
    fn len(&self) -> usize;
    /// True when no live event is pending.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entries held in memory, tombstones included: what memory scales with.
    fn stored(&self) -> usize;
}

#[cfg(test)]
mod tests;
