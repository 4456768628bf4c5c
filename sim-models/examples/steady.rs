//! Runs the steady 10,000 requests/s world for N seconds (default 600),
//! keeping no rows, and prints what it simulated; a second argument
//! `policies` adds breaker, budget and jittered backoff. For measuring
//! peak memory against duration:
//!
//! ```text
//! cargo build --release -p sim-models --example steady
//! /usr/bin/time -v target/release/examples/steady 600
//! /usr/bin/time -v target/release/examples/steady 3600
//! ```

use sim_models::recorder::{Count, Discard};
use sim_models::scenarios::{steady, steady_with_policies};
use sim_models::world::run;

fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .map_or(600, |s| s.parse().expect("seconds"));
    let cfg = match std::env::args().nth(2).as_deref() {
        Some("policies") => steady_with_policies(seconds),
        _ => steady(seconds),
    };
    let out = run(&cfg, Discard::default()).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{seconds} s simulated: {} requests, {} events, {} buckets, amplification {:.4}",
        out.totals.count(Count::Offered),
        out.events,
        out.sink.rows,
        out.totals.amplification()
    );
}
