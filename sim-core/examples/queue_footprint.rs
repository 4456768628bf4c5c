//! Memory footprint of each event queue under the retry-storm timer
//! pattern: 100,000 timeouts of 30 s armed per second of virtual time, 99 %
//! cancelled 10 ms later, for 60 s. Prints the most entries each structure
//! held against the most live timers.
//!
//! ```text
//! cargo run --release -p sim-core --features queue-variants --example queue_footprint
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use sim_core::queue::{EventKey, EventQueue, IndexedHeap, LazyHeap, PqQueue, TimerLanes};
use sim_core::time::{SimDuration, SimTime};

const TIMEOUT: SimDuration = SimDuration::from_secs(30);

fn storm<Q: EventQueue<u32>>(mut q: Q, requests: u64) -> (usize, usize) {
    let gap = SimDuration::from_micros(10);
    let mut now = SimTime::ZERO;
    let mut pending = VecDeque::new();
    let (mut max_stored, mut max_live) = (0, 0);
    for i in 0..requests {
        now += gap;
        while q.peek().is_some_and(|k| k.time <= now) {
            q.pop();
        }
        let id = q.push(
            EventKey {
                time: now + TIMEOUT,
                seq: i,
            },
            TIMEOUT,
            0,
        );
        if i % 100 != 0 {
            pending.push_back(id);
        }
        if pending.len() > 1_000 {
            q.cancel(pending.pop_front().unwrap());
        }
        max_stored = max_stored.max(q.stored());
        max_live = max_live.max(q.len());
    }
    (max_stored, max_live)
}

/// A plain `BinaryHeap` with tombstones that are never swept: cancelled
/// timers stay until their 30 s are up.
fn bare_heap_no_sweep(requests: u64) -> (usize, usize) {
    let gap = 10_000;
    let mut heap = BinaryHeap::new();
    let mut cancelled = vec![false; requests as usize];
    let mut pending = VecDeque::new();
    let (mut max_stored, mut max_live, mut live) = (0, 0, 0usize);
    for i in 0..requests {
        let now = (i + 1) * gap;
        while heap.peek().is_some_and(|Reverse((t, _))| *t <= now) {
            let Reverse((_, s)) = heap.pop().unwrap();
            if !cancelled[s as usize] {
                live -= 1;
            }
        }
        heap.push(Reverse((now + TIMEOUT.as_nanos(), i)));
        live += 1;
        if i % 100 != 0 {
            pending.push_back(i);
        }
        if pending.len() > 1_000 {
            cancelled[pending.pop_front().unwrap() as usize] = true;
            live -= 1;
        }
        max_stored = max_stored.max(heap.len());
        max_live = max_live.max(live);
    }
    (max_stored, max_live)
}

fn main() {
    let n = 6_000_000;
    println!(
        "{:<22} {:>12} {:>12} {:>8}",
        "queue", "max stored", "max live", "ratio"
    );
    let mut lanes = TimerLanes::new();
    lanes.add_lane(TIMEOUT);
    for (name, (stored, live)) in [
        ("lazy_heap (swept)", storm(LazyHeap::new(), n)),
        ("timer_lanes", storm(lanes, n)),
        ("indexed_heap", storm(IndexedHeap::new(), n)),
        ("priority_queue crate", storm(PqQueue::new(), n)),
    ] {
        println!(
            "{name:<22} {stored:>12} {live:>12} {:>8.2}",
            stored as f64 / live as f64
        );
    }
    let (stored, live) = bare_heap_no_sweep(n);
    println!(
        "{:<22} {stored:>12} {live:>12} {:>8.2}",
        "bare heap, no sweep",
        stored as f64 / live as f64
    );
}
