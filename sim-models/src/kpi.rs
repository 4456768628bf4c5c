//! Key figures of a run, from its bucket rows: rates, amplification,
//! tail latency, wasted work, and whether (and when) the system recovered
//! after its last trigger.
//!
//! Recovery is measured the way an operator would: goodput (successful
//! requests per second) before the first trigger is the baseline; after
//! the last trigger ends, the system has recovered at the first bucket
//! from which goodput stays within `tolerance` of the baseline for
//! `sustain` (judged as means over `smoothing`-long chunks, so Poisson
//! noise in one second does not count as a relapse). A run that has not recovered within `horizon` of the
//! trigger's end is flagged metastable.

use serde::{Deserialize, Serialize};
use sim_core::metrics::Histogram;
use sim_core::time::{SimDuration, SimTime};

use crate::outcome::Reason;
use crate::recorder::{BucketRow, Count, Latency, RunTotals};
use crate::timeline::{Step, last_trigger_end};

/// How recovery is judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecoveryConfig {
    /// Goodput is averaged over this span before the first trigger
    /// (default 60 s).
    pub baseline: SimDuration,
    /// Goodput must stay near the baseline this long (default 30 s).
    pub sustain: SimDuration,
    /// "Near": within this fraction below the baseline (default 0.05).
    pub tolerance: f64,
    /// Goodput is judged in consecutive chunks of this span (default 10 s),
    /// so that per-second noise does not hide a recovery.
    pub smoothing: SimDuration,
    /// Not recovered this long after the trigger ended: metastable
    /// (default 120 s).
    pub horizon: SimDuration,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            baseline: SimDuration::from_secs(60),
            sustain: SimDuration::from_secs(30),
            tolerance: 0.05,
            smoothing: SimDuration::from_secs(10),
            horizon: SimDuration::from_secs(120),
        }
    }
}

/// The figures a summary row holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Kpis {
    /// Requests sent by users.
    pub offered: u64,
    /// Requests that ended (any reason).
    pub finished: u64,
    /// Successes ÷ finished.
    pub success_rate: f64,
    /// Fallbacks (degraded answers) ÷ finished.
    pub degraded_rate: f64,
    /// Errors ÷ finished.
    pub error_rate: f64,
    /// Highest error rate of any bucket with outcomes.
    pub peak_error_rate: f64,
    /// Attempts ÷ offered over the run.
    pub amplification_mean: f64,
    /// Highest attempts ÷ offered of any bucket.
    pub amplification_peak: f64,
    /// Most attempts started in one second.
    pub peak_attempts_per_s: f64,
    /// End-to-end p99 over the run, seconds.
    pub e2e_p99_s: Option<f64>,
    /// Highest per-bucket end-to-end p99, seconds.
    pub peak_e2e_p99_s: Option<f64>,
    /// Upstream work finished for callers who had left ÷ all client work
    /// it finished.
    pub wasted_fraction: f64,
    /// Retries and hedges ÷ attempts.
    pub retry_share: f64,
    /// When the last trigger ended (seconds from start), if there was one.
    pub trigger_end_s: Option<f64>,
    /// Seconds from the trigger's end to sustained recovery; `None` when it
    /// never recovered within the run.
    pub time_to_recover_s: Option<f64>,
    /// Not recovered within the horizon.
    pub metastable: bool,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Computes the key figures of a run.
pub fn kpis(
    rows: &[BucketRow],
    totals: &RunTotals,
    steps: &[Step],
    recovery: &RecoveryConfig,
) -> Kpis {
    let finished = totals.finished();
    let errors: u64 = Reason::ALL
        .iter()
        .filter(|r| r.is_error())
        .map(|&r| totals.outcome(r))
        .sum();
    let peak_error_rate = rows
        .iter()
        .filter(|r| r.finished() > 0)
        .map(|r| {
            let e: u64 = Reason::ALL
                .iter()
                .filter(|x| x.is_error())
                .map(|&x| r.outcome(x))
                .sum();
            ratio(e, r.finished())
        })
        .fold(0.0, f64::max);
    let peak_attempts = rows
        .iter()
        .map(|r| r.attempts() as f64 / r.span.as_secs_f64().max(1e-9))
        .fold(0.0, f64::max);
    let secs = |ns: Option<u64>| ns.map(|v| v as f64 / 1e9);
    let e2e: &Histogram = totals.latency(Latency::EndToEnd);
    let peak_e2e = rows
        .iter()
        .filter_map(|r| r.latency(Latency::EndToEnd).p99)
        .max();
    let wasted = totals.count(Count::UpstreamWasted);
    let useful = totals.count(Count::UpstreamGoodput);
    let attempts = totals.attempts();
    let retries = totals.count(Count::AttemptsRetry) + totals.count(Count::AttemptsHedge);
    let trigger_end = last_trigger_end(steps);
    let first_trigger = steps.iter().map(|s| s.at).min();
    let recovered = match (first_trigger, trigger_end) {
        (Some(first), Some(end)) => recovery_time(rows, first, end, recovery),
        _ => None,
    };
    let metastable =
        trigger_end.is_some() && recovered.is_none_or(|t| t > recovery.horizon.as_secs_f64());
    Kpis {
        offered: totals.count(Count::Offered),
        finished,
        success_rate: ratio(totals.outcome(Reason::Success), finished),
        degraded_rate: ratio(totals.outcome(Reason::Fallback), finished),
        error_rate: ratio(errors, finished),
        peak_error_rate,
        amplification_mean: totals.amplification(),
        amplification_peak: totals.peak_amplification,
        peak_attempts_per_s: peak_attempts,
        e2e_p99_s: secs(e2e.quantile(0.99)),
        peak_e2e_p99_s: secs(peak_e2e),
        wasted_fraction: ratio(wasted, wasted + useful),
        retry_share: ratio(retries, attempts),
        trigger_end_s: trigger_end.map(SimTime::as_secs_f64),
        time_to_recover_s: recovered,
        metastable,
    }
}

/// Seconds from `end` to the first bucket from which goodput stays within
/// the tolerance of the pre-trigger baseline for the sustain span.
fn recovery_time(
    rows: &[BucketRow],
    first: SimTime,
    end: SimTime,
    c: &RecoveryConfig,
) -> Option<f64> {
    let from = first
        .saturating_since(SimTime::ZERO)
        .saturating_sub(c.baseline);
    let before: Vec<&BucketRow> = rows
        .iter()
        .filter(|r| r.start.since_start() >= from && r.start.saturating_add(r.span) <= first)
        .collect();
    if before.is_empty() {
        return None;
    }
    let baseline = before.iter().map(|r| r.goodput()).sum::<f64>() / before.len() as f64;
    let floor = baseline * (1.0 - c.tolerance);
    let full = |r: &BucketRow| r.span >= rows[0].span;
    let after: Vec<&BucketRow> = rows.iter().filter(|r| r.start >= end && full(r)).collect();
    let width = rows[0].span.as_nanos().max(1);
    let need = c.sustain.as_nanos().div_ceil(width).max(1) as usize;
    let chunk = (c.smoothing.as_nanos() / width).clamp(1, need as u64) as usize;
    let holds = |window: &[&BucketRow]| {
        window.chunks(chunk).all(|part| {
            let mean = part.iter().map(|r| r.goodput()).sum::<f64>() / part.len() as f64;
            mean >= floor
        })
    };
    (0..after.len())
        .find(|&i| after.len() - i >= need && holds(&after[i..i + need]))
        .map(|i| after[i].start.saturating_since(end).as_secs_f64())
}
