//! Helpers the world test binaries share.

use sim_core::time::SimDuration;
use sim_models::config::WorldConfig;
use sim_models::outcome::Reason;
use sim_models::recorder::{BucketRow, RunTotals};
use sim_models::world::run;

/// `v` milliseconds.
pub fn ms(v: u64) -> SimDuration {
    SimDuration::from_millis(v)
}

/// `s` seconds.
pub fn secs(s: u64) -> SimDuration {
    SimDuration::from_secs(s)
}

/// Runs `cfg`, keeping its rows; any error fails the test.
pub fn go(cfg: &WorldConfig) -> (Vec<BucketRow>, RunTotals) {
    let out = run(cfg, Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    (out.sink, out.totals)
}

/// The share of finished requests that ended with `r`.
pub fn share(t: &RunTotals, r: Reason) -> f64 {
    t.outcome(r) as f64 / t.finished() as f64
}
