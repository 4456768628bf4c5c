//! The speed baseline: an M/M/c queue written by hand, about a hundred
//! lines over a `BinaryHeap`, with the same model and request count as
//! the stormsim experiment `worlds/mmc-8.yaml` (8 servers, 10 ms mean
//! service, 720 arrivals/s: ρ = 0.9, 10^6 requests), integer-nanosecond
//! time, (time, sequence) order and ChaCha8 draws, as the engine keeps
//! them. Its time is what "close to a hand-written loop" is measured
//! against. It returns the mean wait in queue, checked against Erlang C,
//! so a fast wrong loop shows. [`run_booked`] is the same loop keeping
//! stormsim's records and figures: what those cost without the world's
//! routing between parts.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim_core::metrics::{Gauge, Histogram};
use sim_core::slab::{Ref, Slab};
use sim_core::theory::mmc_mean_wait;
use sim_core::time::SimTime;

const SERVERS: u32 = 8;
const LAMBDA: f64 = 720.0;
const MU: f64 = 100.0;
/// Requests, as in `worlds/mmc-8.yaml`.
pub const REQUESTS: u64 = 1_000_000;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Arrival,
    Departure,
}

/// Integer nanoseconds, as the engine keeps time.
fn exp_ns(rng: &mut ChaCha8Rng, rate: f64) -> u64 {
    let u: f64 = rng.random();
    (-(1.0 - u).ln() / rate * 1e9).round() as u64
}

/// Runs the queue to the end; the mean wait in queue, in seconds, and
/// Erlang C's.
pub fn run() -> (f64, f64) {
    let mut arrivals = ChaCha8Rng::seed_from_u64(1);
    let mut services = ChaCha8Rng::seed_from_u64(2);
    // (time, sequence, kind): the engine's ordering rule.
    let mut heap: BinaryHeap<Reverse<(u64, u64, Kind)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<_>, t: u64, k: Kind| {
        heap.push(Reverse((t, seq, k)));
        seq += 1;
    };
    push(&mut heap, exp_ns(&mut arrivals, LAMBDA), Kind::Arrival);
    let (mut busy, mut sent, mut served) = (0u32, 1u64, 0u64);
    let mut line: VecDeque<u64> = VecDeque::new();
    let mut waited_ns: u128 = 0;
    while let Some(Reverse((now, _, kind))) = heap.pop() {
        match kind {
            Kind::Arrival => {
                if sent < REQUESTS {
                    push(
                        &mut heap,
                        now + exp_ns(&mut arrivals, LAMBDA),
                        Kind::Arrival,
                    );
                    sent += 1;
                }
                if busy < SERVERS {
                    busy += 1;
                    push(&mut heap, now + exp_ns(&mut services, MU), Kind::Departure);
                } else {
                    line.push_back(now);
                }
            }
            Kind::Departure => {
                served += 1;
                match line.pop_front() {
                    Some(since) => {
                        waited_ns += u128::from(now - since);
                        push(&mut heap, now + exp_ns(&mut services, MU), Kind::Departure);
                    }
                    None => busy -= 1,
                }
            }
        }
    }
    let wq = waited_ns as f64 / 1e9 / served as f64;
    assert_eq!(served, REQUESTS, "the loop serves every request");
    (wq, mmc_mean_wait(SERVERS, LAMBDA, MU))
}

/// A record of the size of each of the world's four (`Request`, `Call`,
/// `Attempt`, the upstream's `Job`): what a request writes and reads.
struct Record<const WORDS: usize> {
    at: u64,
    _rest: [u64; WORDS],
}

impl<const WORDS: usize> Record<WORDS> {
    fn new(at: u64) -> Self {
        Record {
            at,
            _rest: [0; WORDS],
        }
    }
}

/// A request's records while it is served or waits.
#[derive(Clone, Copy)]
struct Held {
    req: Ref<Record<28>>,
    call: Ref<Record<21>>,
    att: Ref<Record<15>>,
    job: Option<Ref<Record<9>>>,
}

/// The levels, histograms and counts the world keeps for this model,
/// with sim-core's own structures.
#[derive(Default)]
struct Figures {
    users_waiting: Gauge,
    workers_busy: Gauge,
    pool_in_use: Gauge,
    pool_waiters: Gauge,
    calls_in_flight: Gauge,
    in_service: Gauge,
    end_to_end: Histogram,
    first_attempt: Histogram,
    pool_wait: Histogram,
    dependency_latency: Histogram,
    counts: [u64; 8],
}

/// The loop and its records and figures.
struct Booked {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    seq: u64,
    services: ChaCha8Rng,
    reqs: Slab<Record<28>>,
    calls: Slab<Record<21>>,
    atts: Slab<Record<15>>,
    jobs: Slab<Record<9>>,
    /// Each request's records, by its request's slot.
    held: Vec<Option<Held>>,
    figures: Figures,
}

/// A departure's third field (an arrival's is `ARRIVAL`): the request's slot.
const ARRIVAL: u32 = u32::MAX;

impl Booked {
    fn push(&mut self, at: u64, what: u32) {
        self.heap.push(Reverse((at, self.seq, what)));
        self.seq += 1;
    }

    /// The request in slot `slot` takes a server: its job at the
    /// dependency, the levels it moves, its departure.
    fn serve(&mut self, now: u64, slot: u32) {
        let t = SimTime::from_nanos(now);
        let job = self.jobs.insert(Record::new(now));
        if let Some(Some(h)) = self.held.get_mut(slot as usize) {
            h.job = Some(job);
        }
        let f = &mut self.figures;
        f.pool_in_use.add(t, 1);
        f.calls_in_flight.add(t, 1);
        f.in_service.add(t, 1);
        f.counts[3] += 1;
        let done = now + exp_ns(&mut self.services, MU);
        self.push(done, slot);
    }
}

/// [`run`] keeping what stormsim keeps for each request of this model,
/// with sim-core's structures: the world's four records at their sizes in
/// slabs (request 232 bytes, call 176, attempt 128, the dependency's job
/// 80), six levels moved about thirteen times a request (users waiting,
/// workers busy, the pool's connections in use and its waiters, calls in
/// flight, the dependency's requests in service), four latency
/// histograms and the counts. Its time over [`run`]'s is what the
/// figures and records cost on their own: what a request path
/// specialised to this world's shape would add to the loop, with the
/// routing between parts and the general engine taken away. The mean
/// wait in queue, and Erlang C's.
pub fn run_booked() -> (f64, f64) {
    let mut arrivals = ChaCha8Rng::seed_from_u64(1);
    let mut b = Booked {
        heap: BinaryHeap::new(),
        seq: 0,
        services: ChaCha8Rng::seed_from_u64(2),
        reqs: Slab::new(),
        calls: Slab::new(),
        atts: Slab::new(),
        jobs: Slab::new(),
        held: Vec::new(),
        figures: Figures::default(),
    };
    let first = exp_ns(&mut arrivals, LAMBDA);
    b.push(first, ARRIVAL);
    let (mut busy, mut sent, mut served) = (0u32, 1u64, 0u64);
    let mut line: VecDeque<(u64, u32)> = VecDeque::new();
    let mut waited_ns: u128 = 0;
    while let Some(Reverse((now, _, what))) = b.heap.pop() {
        let t = SimTime::from_nanos(now);
        if what == ARRIVAL {
            if sent < REQUESTS {
                let next = now + exp_ns(&mut arrivals, LAMBDA);
                b.push(next, ARRIVAL);
                sent += 1;
            }
            let held = Held {
                req: b.reqs.insert(Record::new(now)),
                call: b.calls.insert(Record::new(now)),
                att: b.atts.insert(Record::new(now)),
                job: None,
            };
            let slot = held.req.slot();
            if b.held.len() <= slot as usize {
                b.held.resize(slot as usize + 1, None);
            }
            b.held[slot as usize] = Some(held);
            let f = &mut b.figures;
            f.counts[0] += 1;
            f.counts[1] += 1;
            f.counts[2] += 1;
            f.users_waiting.add(t, 1);
            f.workers_busy.add(t, 1);
            if busy < SERVERS {
                busy += 1;
                f.pool_wait.record(0);
                b.serve(now, slot);
            } else {
                f.pool_waiters.add(t, 1);
                f.calls_in_flight.add(t, 1);
                line.push_back((now, slot));
            }
            continue;
        }
        served += 1;
        let h = b.held[what as usize]
            .take()
            .expect("a departing request is held");
        let started = b.atts.get(h.att).map_or(now, |a| a.at);
        let arrived = b.reqs.get(h.req).map_or(now, |r| r.at);
        if let Some(job) = h.job {
            let since = b.jobs.get(job).map_or(now, |j| j.at);
            b.figures.dependency_latency.record(now - since);
            b.jobs.discard(job);
        }
        b.atts.discard(h.att);
        b.calls.discard(h.call);
        b.reqs.discard(h.req);
        let f = &mut b.figures;
        f.first_attempt.record(now - started);
        f.end_to_end.record(now - arrived);
        f.counts[4] += 1;
        f.counts[5] += 1;
        f.counts[6] += 1;
        f.in_service.add(t, -1);
        f.pool_in_use.add(t, -1);
        f.calls_in_flight.add(t, -1);
        f.users_waiting.add(t, -1);
        f.workers_busy.add(t, -1);
        match line.pop_front() {
            Some((since, slot)) => {
                waited_ns += u128::from(now - since);
                f.pool_waiters.add(t, -1);
                f.calls_in_flight.add(t, -1);
                f.pool_wait.record(now - since);
                b.serve(now, slot);
            }
            None => busy -= 1,
        }
    }
    assert_eq!(served, REQUESTS, "the loop serves every request");
    assert_eq!(b.figures.counts[0], REQUESTS, "every arrival counted");
    assert_eq!(b.figures.users_waiting.value(), 0, "every user answered");
    assert!(b.reqs.is_empty() && b.jobs.is_empty(), "every record freed");
    // Nothing reads most figures here (stormsim writes them out): seen by
    // the compiler as read, so that none of the work is optimised away.
    std::hint::black_box(&b);
    let wq = waited_ns as f64 / 1e9 / served as f64;
    (wq, mmc_mean_wait(SERVERS, LAMBDA, MU))
}
