use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::time::{SimDuration, SimTime};

#[derive(Clone, Debug)]
enum Op {
    /// Schedule `delay` after now, where delay is one of a few fixed
    /// timeouts (lane candidates) or arbitrary.
    Push(u64),
    Cancel(usize),
    Pop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop_oneof![Just(0u64), Just(5), Just(30), Just(1_000), 0u64..2_000].prop_map(Op::Push),
        2 => any::<usize>().prop_map(Op::Cancel),
        3 => Just(Op::Pop),
    ]
}

/// Drives `q` and a sorted reference model with the same operations and
/// checks that every answer agrees.
fn check_against_reference<Q: EventQueue<u64>>(q: Q, ops: &[Op]) {
    let ops: Vec<(Op, usize)> = ops.iter().map(|op| (op.clone(), 0)).collect();
    drive_against_reference(q, &ops, |q, key, delay, _| q.push(key, delay, key.seq * 7));
}

/// Drives `q` with `ops`, each push through `push` (given the key, the
/// delay and the op's lane number, which `push` may ignore), and a sorted
/// reference model with the same operations; every answer must agree.
fn drive_against_reference<Q: EventQueue<u64>>(
    mut q: Q,
    ops: &[(Op, usize)],
    push: impl Fn(&mut Q, EventKey, SimDuration, usize) -> EventId,
) {
    let mut reference: BTreeMap<EventKey, u64> = BTreeMap::new();
    let mut ids: Vec<(EventId, EventKey)> = Vec::new();
    let mut now = SimTime::ZERO;
    let mut seq = 0u64;
    for (op, lane) in ops {
        match *op {
            Op::Push(delay) => {
                let delay = SimDuration::from_nanos(delay);
                let key = EventKey {
                    time: now + delay,
                    seq,
                };
                seq += 1;
                let id = push(&mut q, key, delay, *lane);
                reference.insert(key, key.seq * 7);
                ids.push((id, key));
            }
            Op::Cancel(i) if !ids.is_empty() => {
                let (id, key) = ids[i % ids.len()];
                assert_eq!(
                    q.cancel(id),
                    reference.remove(&key).is_some(),
                    "cancel {key:?}"
                );
            }
            Op::Cancel(_) => {}
            Op::Pop => {
                let expected = reference.pop_first();
                assert_eq!(q.peek(), expected.map(|(k, _)| k));
                let got = q.pop();
                assert_eq!(got, expected);
                if let Some((k, _)) = got {
                    now = k.time;
                }
            }
        }
        assert_eq!(q.len(), reference.len());
    }
    while let Some(expected) = reference.pop_first() {
        assert_eq!(q.pop(), Some(expected));
    }
    assert_eq!(q.pop(), None);
    assert!(q.is_empty());
}

/// [`LazyHeap`] with its streams: each push goes to the heap (lane 0) or
/// to stream `lane - 1` (one past [`MAX_STREAMS`] included), with fixed or
/// arbitrary delays so that pushes go back in their stream too; every
/// answer must agree with a sorted reference.
fn check_streams_against_reference(ops: &[(Op, usize)]) {
    drive_against_reference(LazyHeap::new(), ops, |q, key, delay, lane| match lane {
        0 => q.push(key, delay, key.seq * 7),
        s => q.push_in_stream(s - 1, key, key.seq * 7),
    });
}

#[test]
fn a_stream_holds_in_order_events_and_sends_the_rest_to_the_heap() {
    let mut q = LazyHeap::new();
    let key = |time, seq| EventKey {
        time: SimTime::from_nanos(time),
        seq,
    };
    q.push_in_stream(0, key(10, 0), 'a');
    q.push_in_stream(0, key(20, 1), 'b');
    q.push_in_stream(0, key(15, 2), 'c'); // goes back: the heap
    q.push(key(12, 3), SimDuration::ZERO, 'd');
    q.push_in_stream(MAX_STREAMS, key(11, 4), 'e'); // no such stream: the heap
    assert_eq!(q.stored(), 5);
    let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
    assert_eq!(order, ['a', 'e', 'd', 'c', 'b']);
}

#[test]
fn cancelled_stream_entries_are_swept_like_the_heap_s() {
    let (stored, live) = {
        let mut q = LazyHeap::new();
        let mut max = (0, 0);
        let mut ids = std::collections::VecDeque::new();
        for seq in 0..100_000u64 {
            let key = EventKey {
                time: SimTime::from_nanos(1_000_000 + seq),
                seq,
            };
            ids.push_back(q.push_in_stream(1, key, ()));
            if ids.len() > 10 {
                assert!(q.cancel(ids.pop_front().unwrap()));
            }
            max = (max.0.max(q.stored()), max.1.max(q.len()));
        }
        max
    };
    assert_eq!(live, 10);
    assert!(
        stored <= 2 * live + 1024 + 1,
        "{stored} held for {live} live"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn lazy_heap_with_streams_matches_sorted_reference(
        ops in proptest::collection::vec((op(), 0..=MAX_STREAMS + 1), 0..400)
    ) {
        check_streams_against_reference(&ops);
    }

    #[test]
    fn lazy_heap_matches_sorted_reference(ops in proptest::collection::vec(op(), 0..400)) {
        check_against_reference(LazyHeap::new(), &ops);
    }

    #[test]
    fn timer_lanes_match_sorted_reference(ops in proptest::collection::vec(op(), 0..400)) {
        let mut q = TimerLanes::new();
        for d in [5, 30, 1_000] {
            assert!(q.add_lane(SimDuration::from_nanos(d)));
        }
        check_against_reference(q, &ops);
    }

    #[test]
    fn indexed_heap_matches_sorted_reference(ops in proptest::collection::vec(op(), 0..400)) {
        check_against_reference(IndexedHeap::new(), &ops);
    }

    #[test]
    fn pq_queue_matches_sorted_reference(ops in proptest::collection::vec(op(), 0..400)) {
        check_against_reference(PqQueue::new(), &ops);
    }
}

/// The retry-storm timer pattern: every "request" arms a 30 s timeout and
/// 99 % of them are cancelled when the response comes back 10 ms later.
/// Returns the largest `stored()` seen and the largest live count.
fn storm_footprint<Q: EventQueue<u32>>(mut q: Q, requests: u64) -> (usize, usize) {
    let timeout = SimDuration::from_secs(30);
    let gap = SimDuration::from_micros(10); // 100k timers armed per second
    let mut now = SimTime::ZERO;
    let mut to_cancel = std::collections::VecDeque::new();
    let (mut max_stored, mut max_live) = (0, 0);
    for seq in 0..requests {
        now += gap;
        // Fire everything due by now.
        while q.peek().is_some_and(|k| k.time <= now) {
            q.pop();
        }
        let id = q.push(
            EventKey {
                time: now + timeout,
                seq,
            },
            timeout,
            0,
        );
        if seq % 100 != 0 {
            to_cancel.push_back(id);
        }
        // Responses arrive 1,000 requests (10 ms) later and cancel.
        if to_cancel.len() > 1_000 {
            assert!(q.cancel(to_cancel.pop_front().unwrap()));
        }
        max_stored = max_stored.max(q.stored());
        max_live = max_live.max(q.len());
    }
    (max_stored, max_live)
}

#[test]
fn cancel_heavy_storm_keeps_memory_bounded_by_live_timers() {
    // 600k timers over 6 s of virtual time: live timers are ~1 % of those
    // armed in the last 30 s plus the 1,000 awaiting responses.
    let n = 600_000;
    let (stored, live) = storm_footprint(LazyHeap::new(), n);
    assert!(
        stored <= 2 * live + 1024 + 1,
        "lazy heap stored {stored} for {live} live"
    );
    let mut lanes = TimerLanes::new();
    lanes.add_lane(SimDuration::from_secs(30));
    let (stored, live) = storm_footprint(lanes, n);
    assert!(
        stored <= 2 * live + 1024 + 1,
        "lanes stored {stored} for {live} live"
    );
    let (stored, live) = storm_footprint(IndexedHeap::new(), n);
    assert_eq!(stored, live);
    // Without sweeping, tombstones would be ~100x the live timers here.
    assert!(live < 8_000, "live {live}");
}

#[test]
fn stale_ids_are_harmless() {
    let mut q = TimerLanes::new();
    q.add_lane(SimDuration::from_nanos(10));
    let k = |t, s| EventKey {
        time: SimTime::from_nanos(t),
        seq: s,
    };
    let a = q.push(k(10, 0), SimDuration::from_nanos(10), 'a');
    assert_eq!(q.pop(), Some((k(10, 0), 'a')));
    assert!(!q.cancel(a), "fired events cannot be cancelled");
    // The slot is reused by a new event; the old id must not cancel it.
    let b = q.push(k(20, 1), SimDuration::from_nanos(10), 'b');
    assert!(!q.cancel(a));
    assert!(q.cancel(b));
    assert!(!q.cancel(b), "double cancel");
    assert_eq!(q.pop(), None);
}

#[test]
fn an_event_id_gives_back_its_sequence_from_zero_on() {
    for seq in [0, 1, 41, u64::MAX / 2] {
        assert_eq!(EventId::new(7, seq).seq(), seq);
    }
    assert_ne!(EventId::new(7, 0), EventId::new(7, 1));
}
