//! Whole-world benchmark: a steady hour at 10,000 requests/s, no storm,
//! single thread.
//!
//! ```text
//! cargo bench -p sim-models --bench world
//! ```
//!
//! divan's items/s is simulated requests per second of CPU. Peak memory
//! for a duration: `/usr/bin/time -v target/release/examples/steady 3600`
//! after `cargo build --release -p sim-models --example steady`.

use divan::{Bencher, counter::ItemsCount};
use sim_models::recorder::Discard;
use sim_models::scenarios::{steady, steady_with_policies};
use sim_models::world::run;

fn main() {
    divan::main();
}

#[divan::bench(args = [600], sample_count = 3)]
fn steady_10k_rps(bencher: Bencher, seconds: u64) {
    let cfg = steady(seconds);
    let requests = (cfg.load.rate * seconds as f64) as usize;
    bencher.counter(ItemsCount::new(requests)).bench_local(|| {
        let out = run(&cfg, Discard::default()).unwrap();
        assert!(out.totals.finished() > 0);
        out.events
    });
}

/// The same hour with breaker, budget and jittered backoff on: the cost of
/// the policy stack per request.
#[divan::bench(args = [600], sample_count = 3)]
fn steady_10k_rps_with_policies(bencher: Bencher, seconds: u64) {
    let cfg = steady_with_policies(seconds);
    let requests = (cfg.load.rate * seconds as f64) as usize;
    bencher.counter(ItemsCount::new(requests)).bench_local(|| {
        let out = run(&cfg, Discard::default()).unwrap();
        assert!(out.totals.finished() > 0);
        out.events
    });
}
