//! Runs the M/M/c validation model and prints simulated against
//! theoretical waiting and blocking:
//!
//! ```text
//! cargo run --release -p sim-core --example mmc
//! ```

#[path = "../tests/suite/mmc_model.rs"]
mod mmc_model;

use mmc_model::{MmcParams, run};
use sim_core::theory::{erlang_b, erlang_c, mmc_mean_wait};

fn main() {
    println!("M/M/c on the stormsim engine, 1,000,000 customers per row (after 10,000 warm-up)\n");
    println!(
        "{:<10} {:>3} {:>6} {:>12} {:>12} {:>12} {:>12}",
        "model", "c", "load", "P(wait) sim", "Erlang C", "Wq sim (s)", "Wq theory"
    );
    for (c, lambda) in [(1u32, 0.8), (4, 3.2), (8, 6.0), (50, 45.0)] {
        let p = MmcParams {
            servers: c,
            lambda,
            mu: 1.0,
            waiting_room: None,
            customers: 1_000_000,
            warmup: 10_000,
            seed: 1,
        };
        let (m, _) = run(p);
        println!(
            "{:<10} {:>3} {:>6.2} {:>12.4} {:>12.4} {:>12.4} {:>12.4}",
            "M/M/c",
            c,
            lambda / f64::from(c),
            m.delayed.mean(),
            erlang_c(c, lambda),
            m.wait.mean(),
            mmc_mean_wait(c, lambda, 1.0)
        );
    }
    println!(
        "\n{:<10} {:>3} {:>6} {:>12} {:>12}",
        "model", "c", "load", "lost sim", "Erlang B"
    );
    for (c, lambda) in [(10u32, 8.0), (20, 15.0), (400, 380.0)] {
        let p = MmcParams {
            servers: c,
            lambda,
            mu: 1.0,
            waiting_room: Some(0),
            customers: 1_000_000,
            warmup: 10_000,
            seed: 1,
        };
        let (m, _) = run(p);
        println!(
            "{:<10} {:>3} {:>6.2} {:>12.5} {:>12.5}",
            "M/M/c/c",
            c,
            lambda / f64::from(c),
            m.delayed.mean(),
            erlang_b(c, lambda)
        );
    }
}
