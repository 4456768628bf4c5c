//! The 14:02 topology built in Rust: 8 pods × 50 connections, 100
//! requests/s, 30 s timeouts, 3 retries at a fixed 1 s, health-check
//! restarts, and an upstream whose latency goes from 5 s to 12 s at
//! 14:02:30. Prints one line per 10 s.
//!
//! ```text
//! cargo run --release -p sim-models --example storm_1402
//! ```

use sim_models::config::WorldConfig;
use sim_models::outcome::Reason;
use sim_models::recorder::{Count, Latency, Level};
use sim_models::world::run;

fn main() {
    let cfg = sim_models::scenarios::storm_1402();
    let clock = cfg.clock.wall_clock();
    let out = run(&cfg, Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{:<9} {:>8} {:>9} {:>9} {:>8} {:>9} {:>11} {:>10} {:>8} {:>9}",
        "time",
        "offered",
        "attempts",
        "success",
        "errors",
        "in pods",
        "pool wait",
        "waiters",
        "pods up",
        "e2e p99"
    );
    for chunk in out.sink.chunks(10) {
        let first = &chunk[0];
        let sum = |f: &dyn Fn(&sim_models::recorder::BucketRow) -> u64| {
            chunk.iter().map(f).sum::<u64>() as f64 / 10.0
        };
        let ok = sum(&|r| r.outcome(Reason::Success));
        let all = sum(&|r| r.finished());
        let wait_p99 = chunk
            .iter()
            .filter_map(|r| r.latency(Latency::PoolWait).p99)
            .max()
            .unwrap_or(0) as f64
            / 1e9;
        let e2e_p99 = chunk
            .iter()
            .filter_map(|r| r.latency(Latency::EndToEnd).p99)
            .max()
            .unwrap_or(0) as f64
            / 1e9;
        println!(
            "{:<9} {:>8.1} {:>9.1} {:>9.1} {:>8.1} {:>9} {:>10.1}s {:>10} {:>8} {:>8.1}s",
            clock.label(first.start),
            sum(&|r| r.count(Count::Offered)),
            sum(&|r| r.attempts()),
            ok,
            all - ok,
            chunk
                .iter()
                .map(|r| r.level(Level::ServiceInFlight).max)
                .max()
                .unwrap_or(0),
            wait_p99,
            chunk
                .iter()
                .map(|r| r.level(Level::PoolWaiters).max)
                .max()
                .unwrap_or(0),
            chunk
                .iter()
                .map(|r| r.level(Level::PodsUp).min)
                .min()
                .unwrap_or(0),
            e2e_p99,
        );
    }
    let t = &out.totals;
    println!(
        "\n{} events; amplification {:.2} (peak {:.2}); wasted upstream work {}; pod restarts {}",
        out.events,
        t.amplification(),
        t.peak_amplification,
        t.count(Count::UpstreamWasted),
        t.count(Count::PodRestarts)
    );
    let _ = WorldConfig::default();
}
