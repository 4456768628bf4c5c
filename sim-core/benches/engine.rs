//! Event-queue and engine benchmarks (divan).
//!
//! ```text
//! cargo bench -p sim-core --bench engine
//! ```
//!
//! * `hold::*`: the classic hold model. N events are pending; each
//!   operation pops the least and schedules a new one an exponentially
//!   distributed time later, so N stays constant. 100,000 operations per
//!   sample; divan's items/s is hold operations (events) per second.
//! * `storm::*`: the retry-storm timer pattern. Every request arms a 30 s
//!   timeout; 99 % are cancelled 10 ms later when the response arrives;
//!   100,000 requests per second of virtual time, 4,000,000 requests
//!   (40 s, so the 1 % that are not cancelled expire in steady state).
//!
//! Figures and the choice they led to: `benches/README.md`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use divan::{Bencher, black_box, counter::ItemsCount};
use sim_core::queue::{EventKey, EventQueue, IndexedHeap, LazyHeap, PqQueue, TimerLanes};
use sim_core::sim::{Limits, Model, Scheduler, Simulation};
use sim_core::time::{SimDuration, SimTime};

fn main() {
    divan::main();
}

const OPS: usize = 100_000;
const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];

/// Exponential increments with mean 1 ms, precomputed so the benchmark
/// measures the queue, not the random generator.
fn increments() -> Vec<u64> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            (-(1.0 - u).ln() * 1e6) as u64 + 1
        })
        .collect()
}

mod hold {
    use super::*;

    /// A payload the size of a typical model event.
    type Payload = [u64; 3];

    fn bench_queue<Q: EventQueue<Payload> + Default>(bencher: Bencher, n: usize) {
        let inc = increments();
        bencher
            .counter(ItemsCount::new(OPS))
            .with_inputs(|| {
                let mut q = Q::default();
                for i in 0..n {
                    let t = SimTime::from_nanos(inc[i % inc.len()] * (1 + (i as u64 % 7)));
                    q.push(
                        EventKey {
                            time: t,
                            seq: i as u64,
                        },
                        SimDuration::ZERO,
                        [i as u64; 3],
                    );
                }
                (q, n as u64)
            })
            .bench_local_values(|(mut q, mut seq)| {
                for i in 0..OPS {
                    let (k, p) = q.pop().unwrap();
                    let d = SimDuration::from_nanos(inc[i % inc.len()]);
                    q.push(
                        EventKey {
                            time: k.time + d,
                            seq,
                        },
                        d,
                        black_box(p),
                    );
                    seq += 1;
                }
                q
            });
    }

    #[divan::bench(args = SIZES, sample_count = 20)]
    fn bare_binary_heap(bencher: Bencher, n: usize) {
        let inc = increments();
        bencher
            .counter(ItemsCount::new(OPS))
            .with_inputs(|| {
                let mut h = BinaryHeap::new();
                for i in 0..n {
                    let t = inc[i % inc.len()] * (1 + (i as u64 % 7));
                    h.push(Reverse((t, i as u64, [i as u64; 3])));
                }
                (h, n as u64)
            })
            .bench_local_values(|(mut h, mut seq)| {
                for i in 0..OPS {
                    let Reverse((t, _, p)) = h.pop().unwrap();
                    h.push(Reverse((t + inc[i % inc.len()], seq, black_box(p))));
                    seq += 1;
                }
                h
            });
    }

    #[divan::bench(args = SIZES, sample_count = 20)]
    fn lazy_heap(bencher: Bencher, n: usize) {
        bench_queue::<LazyHeap<Payload>>(bencher, n);
    }

    #[divan::bench(args = SIZES, sample_count = 20)]
    fn timer_lanes_no_lane(bencher: Bencher, n: usize) {
        bench_queue::<TimerLanes<Payload>>(bencher, n);
    }

    #[divan::bench(args = SIZES, sample_count = 20)]
    fn indexed_heap(bencher: Bencher, n: usize) {
        bench_queue::<IndexedHeap<Payload>>(bencher, n);
    }

    #[divan::bench(args = SIZES, sample_count = 20)]
    fn priority_queue_crate(bencher: Bencher, n: usize) {
        bench_queue::<PqQueue<Payload>>(bencher, n);
    }

    /// A model that reschedules itself: the whole engine loop (scheduler,
    /// sequence numbers, handler dispatch, event limit) per hold operation.
    struct Hold {
        inc: Vec<u64>,
        i: usize,
    }
    impl Model for Hold {
        type Event = Payload;
        fn handle(&mut self, p: Payload, sched: &mut Scheduler<Payload>) {
            self.i += 1;
            let d = SimDuration::from_nanos(self.inc[self.i % self.inc.len()]);
            sched.schedule_in(d, black_box(p));
        }
    }

    #[divan::bench(args = SIZES, sample_count = 20)]
    fn engine(bencher: Bencher, n: usize) {
        let limits = Limits {
            max_events: u64::MAX,
            max_events_at_instant: u64::MAX,
            check_every_event: false,
        };
        bencher
            .counter(ItemsCount::new(OPS))
            .with_inputs(|| {
                let inc = increments();
                let mut sim = Simulation::new(
                    Hold {
                        inc: inc.clone(),
                        i: 0,
                    },
                    limits,
                );
                for i in 0..n {
                    let t = SimTime::from_nanos(inc[i % inc.len()] * (1 + (i as u64 % 7)));
                    sim.scheduler().schedule_at(t, [i as u64; 3]).unwrap();
                }
                sim
            })
            .bench_local_values(|mut sim| {
                for _ in 0..OPS {
                    sim.step().unwrap();
                }
                sim
            });
    }
}

mod storm {
    use super::*;

    const REQUESTS: usize = 4_000_000;
    const TIMEOUT: SimDuration = SimDuration::from_secs(30);

    /// Runs the pattern on `q`; returns the largest `stored()` seen.
    fn storm<Q: EventQueue<u32>>(mut q: Q) -> usize {
        let gap = SimDuration::from_micros(10);
        let mut now = SimTime::ZERO;
        let mut pending = VecDeque::with_capacity(1_100);
        let mut max_stored = 0;
        for i in 0..REQUESTS {
            now += gap;
            while q.peek().is_some_and(|k| k.time <= now) {
                black_box(q.pop());
            }
            let id = q.push(
                EventKey {
                    time: now + TIMEOUT,
                    seq: i as u64,
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
        }
        max_stored
    }

    #[divan::bench(sample_count = 5)]
    fn lazy_heap(bencher: Bencher) {
        bencher
            .counter(ItemsCount::new(REQUESTS))
            .bench_local(|| storm(LazyHeap::new()));
    }

    #[divan::bench(sample_count = 5)]
    fn timer_lanes(bencher: Bencher) {
        bencher.counter(ItemsCount::new(REQUESTS)).bench_local(|| {
            let mut q = TimerLanes::new();
            q.add_lane(TIMEOUT);
            storm(q)
        });
    }

    #[divan::bench(sample_count = 5)]
    fn indexed_heap(bencher: Bencher) {
        bencher
            .counter(ItemsCount::new(REQUESTS))
            .bench_local(|| storm(IndexedHeap::new()));
    }

    #[divan::bench(sample_count = 5)]
    fn priority_queue_crate(bencher: Bencher) {
        bencher
            .counter(ItemsCount::new(REQUESTS))
            .bench_local(|| storm(PqQueue::new()));
    }

    /// A bare `BinaryHeap` with tombstones and no sweeping, for the
    /// memory comparison: cancelled timers stay until they expire.
    #[divan::bench(sample_count = 5)]
    fn bare_heap_tombstones(bencher: Bencher) {
        bencher.counter(ItemsCount::new(REQUESTS)).bench_local(|| {
            let gap = 10_000u64;
            let timeout = TIMEOUT.as_nanos();
            let mut h: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
            let mut dead = vec![false; REQUESTS];
            let mut pending = VecDeque::new();
            let mut max_len = 0;
            for i in 0..REQUESTS {
                let now = (i as u64 + 1) * gap;
                while h.peek().is_some_and(|Reverse((t, _))| *t <= now) {
                    let Reverse((_, s)) = h.pop().unwrap();
                    black_box(dead[s as usize]);
                }
                h.push(Reverse((now + timeout, i as u64)));
                if i % 100 != 0 {
                    pending.push_back(i);
                }
                if pending.len() > 1_000 {
                    dead[pending.pop_front().unwrap()] = true;
                }
                max_len = max_len.max(h.len());
            }
            max_len
        });
    }
}
