//! The speed baseline: an M/M/c queue written by hand, about a hundred
//! lines over a `BinaryHeap`, with the same model and request count as
//! the stormsim experiment `worlds/mmc-8.yaml` (8 servers, 10 ms mean
//! service, 720 arrivals/s: ρ = 0.9, 10^6 requests), integer-nanosecond
//! time, (time, sequence) order and ChaCha8 draws, as the engine keeps
//! them. Its time is what "close to a hand-written loop" is measured
//! against. It returns the mean wait in queue, checked against Erlang C,
//! so a fast wrong loop shows.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim_core::theory::mmc_mean_wait;

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
