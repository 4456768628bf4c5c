//! Key figures of a run, from its bucket rows: rates, amplification,
//! tail latency, wasted work, and whether (and when) the system recovered
//! after its last trigger.
//!
//! Peaks are read the way an incident write-up reads its dashboards, not
//! from single noisy seconds: error rate and end-to-end p99 over the
//! trailing window (`clock.window`, a dashboard's `[1m]`), attempt rate as
//! a 10 s mean. The onset figures time the storm from the first trigger.
//!
//! Recovery is measured the way an operator would: goodput (successful
//! requests per second) before the first trigger is the baseline; after
//! the last trigger ends, the system has recovered at the first bucket
//! from which goodput stays within `tolerance` of the baseline for
//! `sustain` (judged as means over `smoothing`-long chunks, so Poisson
//! noise in one second does not count as a relapse). A run that has not
//! recovered within `horizon` of the trigger's end is flagged metastable,
//! but only when it lasted long enough to tell (see `judge_recovery`):
//! otherwise recovery is "not judged".

use serde::{Deserialize, Serialize};
use sim_core::metrics::Histogram;
use sim_core::time::{SimDuration, SimTime};

use crate::outcome::Reason;
use crate::recorder::{BucketRow, Count, Latency, Level, RunTotals};
use crate::timeline::{Step, last_trigger_end};

/// Attempt rates are read as means over this span (a rate graph's usual
/// resolution).
const RATE_WINDOW: SimDuration = SimDuration::from_secs(10);
/// The storm is visible once attempts exceed this multiple of offered load.
const VISIBLE_AMPLIFICATION: f64 = 1.5;
/// Pools count as exhausted once this many calls queue for a connection:
/// every connection busy, new requests only queue.
const EXHAUSTED_QUEUE: i64 = 100;

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

impl RecoveryConfig {
    /// Checks the settings; each problem as (field, message).
    pub fn validate(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if !(0.0..1.0).contains(&self.tolerance) {
            out.push((
                "tolerance",
                format!(
                    "must be a fraction from 0 up to (not including) 1, found {}",
                    self.tolerance
                ),
            ));
        }
        for (field, d) in [
            ("baseline", self.baseline),
            ("sustain", self.sustain),
            ("smoothing", self.smoothing),
            ("horizon", self.horizon),
        ] {
            if d.is_zero() {
                out.push((field, "must be longer than 0s".to_string()));
            }
        }
        out
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
    /// Highest error rate over any trailing window (`clock.window`).
    pub peak_error_rate: f64,
    /// Error rate over the baseline span before the first trigger.
    pub baseline_error_rate: Option<f64>,
    /// Attempts ÷ offered over the run.
    pub amplification_mean: f64,
    /// Highest attempts ÷ offered of any bucket.
    pub amplification_peak: f64,
    /// Highest attempts per second, as a 10 s mean.
    pub peak_attempts_per_s: f64,
    /// End-to-end p99 over the run, seconds.
    pub e2e_p99_s: Option<f64>,
    /// Highest end-to-end p99 over any trailing window, seconds.
    pub peak_e2e_p99_s: Option<f64>,
    /// End-to-end p99 over the trailing window that ends at the first
    /// trigger.
    pub baseline_e2e_p99_s: Option<f64>,
    /// Most HTTP calls in progress (holding or awaiting a connection), as
    /// a scraped gauge shows it: the highest per-bucket time-weighted mean.
    pub peak_calls_in_flight: f64,
    /// Highest per-bucket p99 of the wait for a pool connection, seconds.
    pub peak_pool_wait_p99_s: Option<f64>,
    /// Seconds from the first trigger to the first bucket where attempts
    /// exceed 1.5 × offered requests.
    pub storm_visible_s: Option<f64>,
    /// Seconds from the first trigger to the first bucket in which at least
    /// 100 calls queued for pool connections.
    pub pools_exhausted_s: Option<f64>,
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
    /// Whether recovery could be judged: there was a trigger and it ended
    /// inside the run. When false, `time_to_recover_s` is `None` and the run
    /// is never called metastable.
    pub recovery_judged: bool,
    /// Not recovered within the horizon.
    pub metastable: bool,
}

/// What the key figures need of one bucket: a few numbers, so a run keeps
/// them for every bucket while the full rows stream out to disk (about 100
/// bytes a bucket, against kilobytes for a [`BucketRow`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KpiRow {
    /// Bucket start.
    pub start: SimTime,
    /// Bucket span.
    pub span: SimDuration,
    /// Requests offered.
    pub offered: u64,
    /// Requests finished, any reason.
    pub finished: u64,
    /// Requests finished with an error.
    pub errors: u64,
    /// Successful requests.
    pub successes: u64,
    /// Attempts sent.
    pub attempts: u64,
    /// End-to-end p99 over the trailing window, ns.
    pub e2e_window_p99: Option<u64>,
    /// Pool wait p99 in the bucket, ns.
    pub pool_wait_p99: Option<u64>,
    /// Most calls queued for a pool connection.
    pub pool_waiters_max: i64,
    /// Time-weighted mean of calls in flight.
    pub calls_in_flight_mean: f64,
}

impl KpiRow {
    /// The figures of `r` the key figures read.
    pub fn of(r: &BucketRow) -> KpiRow {
        KpiRow {
            start: r.start,
            span: r.span,
            offered: r.count(Count::Offered),
            finished: r.finished(),
            errors: errors_in(r) as u64,
            successes: r.outcome(Reason::Success),
            attempts: r.attempts(),
            e2e_window_p99: r.e2e_window.p99,
            pool_wait_p99: r.latency(Latency::PoolWait).p99,
            pool_waiters_max: r.level(Level::PoolWaiters).max,
            calls_in_flight_mean: r.level(Level::CallsInFlight).mean,
        }
    }

    /// Successful requests per second.
    pub fn goodput(&self) -> f64 {
        self.successes as f64 / self.span.as_secs_f64()
    }
}

/// The key-figure rows of full bucket rows.
pub fn kpi_rows(rows: &[BucketRow]) -> Vec<KpiRow> {
    rows.iter().map(KpiRow::of).collect()
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Computes the key figures of a run.
///
/// `window` is the trailing window of the peak error rate (the rows carry
/// their own windowed p99).
pub fn kpis(
    rows: &[KpiRow],
    totals: &RunTotals,
    steps: &[Step],
    recovery: &RecoveryConfig,
    window: SimDuration,
) -> Kpis {
    let finished = totals.finished();
    let errors: u64 = Reason::ALL
        .iter()
        .filter(|r| r.is_error())
        .map(|&r| totals.outcome(r))
        .sum();
    let width = rows.first().map_or(1, |r| r.span.as_nanos().max(1));
    let buckets = |d: SimDuration| (d.as_nanos().div_ceil(width) as usize).max(1);
    let peak_error_rate = trailing_peak(
        rows,
        buckets(window),
        |r| r.errors as f64,
        |r| r.finished as f64,
    );
    let peak_attempts = trailing_peak(
        rows,
        buckets(RATE_WINDOW),
        |r| r.attempts as f64,
        |r| r.span.as_secs_f64(),
    );
    let first_trigger = steps.iter().map(|s| s.at).min();
    let baseline = first_trigger.map(|first| baseline_rows(rows, first, recovery.baseline));
    let baseline_errors = baseline.as_ref().and_then(|b| {
        let finished: u64 = b.iter().map(|r| r.finished).sum();
        let errors: u64 = b.iter().map(|r| r.errors).sum();
        (finished > 0).then(|| errors as f64 / finished as f64)
    });
    // The trailing window of the last bucket before the trigger.
    let baseline_p99 = baseline
        .as_ref()
        .and_then(|b| b.last())
        .and_then(|r| r.e2e_window_p99);
    let after_trigger = |first: SimTime| rows.iter().filter(move |r| r.start >= first);
    let onset = |pred: &dyn Fn(&KpiRow) -> bool| {
        let first = first_trigger?;
        after_trigger(first)
            .find(|r| pred(r))
            .map(|r| r.start.saturating_since(first).as_secs_f64())
    };
    let storm_visible = onset(&|r| r.attempts as f64 > VISIBLE_AMPLIFICATION * r.offered as f64);
    let pools_exhausted = onset(&|r| r.pool_waiters_max >= EXHAUSTED_QUEUE);
    let secs = |ns: Option<u64>| ns.map(|v| v as f64 / 1e9);
    let e2e: &Histogram = totals.latency(Latency::EndToEnd);
    let peak_e2e = rows.iter().filter_map(|r| r.e2e_window_p99).max();
    let peak_wait = rows.iter().filter_map(|r| r.pool_wait_p99).max();
    let wasted = totals.count(Count::UpstreamWasted);
    let useful = totals.count(Count::UpstreamGoodput);
    let attempts = totals.attempts();
    let retries = totals.count(Count::AttemptsRetry) + totals.count(Count::AttemptsHedge);
    let trigger_end = last_trigger_end(steps);
    let run_end = rows
        .last()
        .map_or(SimTime::ZERO, |r| r.start.saturating_add(r.span));
    let (recovered, judged) = match (first_trigger, trigger_end) {
        (Some(first), Some(end)) => judge_recovery(rows, first, end, run_end, recovery),
        _ => (None, false),
    };
    let metastable = judged && recovered.is_none_or(|t| t > recovery.horizon.as_secs_f64());
    Kpis {
        offered: totals.count(Count::Offered),
        finished,
        success_rate: ratio(totals.outcome(Reason::Success), finished),
        degraded_rate: ratio(totals.outcome(Reason::Fallback), finished),
        error_rate: ratio(errors, finished),
        peak_error_rate,
        baseline_error_rate: baseline_errors,
        amplification_mean: totals.amplification(),
        amplification_peak: totals.peak_amplification,
        peak_attempts_per_s: peak_attempts,
        e2e_p99_s: secs(e2e.quantile(0.99)),
        peak_e2e_p99_s: secs(peak_e2e),
        baseline_e2e_p99_s: secs(baseline_p99),
        peak_calls_in_flight: rows
            .iter()
            .map(|r| r.calls_in_flight_mean)
            .fold(0.0, f64::max),
        peak_pool_wait_p99_s: secs(peak_wait),
        storm_visible_s: storm_visible,
        pools_exhausted_s: pools_exhausted,
        wasted_fraction: ratio(wasted, wasted + useful),
        retry_share: ratio(retries, attempts),
        trigger_end_s: trigger_end.map(SimTime::as_secs_f64),
        time_to_recover_s: recovered,
        recovery_judged: judged,
        metastable,
    }
}

/// Errors (every reason that is not a success or fallback) in a bucket.
fn errors_in(r: &BucketRow) -> f64 {
    Reason::ALL
        .iter()
        .filter(|x| x.is_error())
        .map(|&x| r.outcome(x))
        .sum::<u64>() as f64
}

/// The highest ratio of sums of `num` to `den` over any `n` consecutive
/// rows (windows whose `den` sums to zero are skipped).
fn trailing_peak(
    rows: &[KpiRow],
    n: usize,
    num: impl Fn(&KpiRow) -> f64,
    den: impl Fn(&KpiRow) -> f64,
) -> f64 {
    let (mut top, mut bottom, mut peak) = (0.0, 0.0, 0.0f64);
    for (i, r) in rows.iter().enumerate() {
        top += num(r);
        bottom += den(r);
        if i >= n {
            top -= num(&rows[i - n]);
            bottom -= den(&rows[i - n]);
        }
        if bottom > 0.0 {
            peak = peak.max(top / bottom);
        }
    }
    peak
}

/// The full buckets within `span` before `first`.
fn baseline_rows(rows: &[KpiRow], first: SimTime, span: SimDuration) -> Vec<&KpiRow> {
    let from = first.saturating_since(SimTime::ZERO).saturating_sub(span);
    rows.iter()
        .filter(|r| r.start.since_start() >= from && r.start.saturating_add(r.span) <= first)
        .collect()
}

/// Recovery after a trigger that ends at `end`, in a run that ends at
/// `run_end`: (seconds to recover, whether the run could judge it).
///
/// The run judges only what it saw. A recovery it found is judged (late or
/// not). No recovery is judged, as metastable, only when the run lasted
/// `horizon + sustain` past the trigger's end, long enough for a recovery
/// starting within the horizon to have shown; otherwise, and when the
/// trigger outlasts the run, recovery is not judged (never "metastable").
fn judge_recovery(
    rows: &[KpiRow],
    first: SimTime,
    end: SimTime,
    run_end: SimTime,
    c: &RecoveryConfig,
) -> (Option<f64>, bool) {
    if end >= run_end {
        return (None, false);
    }
    match recovery_time(rows, first, end, c) {
        Some(t) => (Some(t), true),
        None => {
            let seen = end.saturating_add(c.horizon).saturating_add(c.sustain);
            (None, seen <= run_end)
        }
    }
}

/// Seconds from `end` to the first bucket from which goodput stays within
/// the tolerance of the pre-trigger baseline for the sustain span.
fn recovery_time(rows: &[KpiRow], first: SimTime, end: SimTime, c: &RecoveryConfig) -> Option<f64> {
    let before = baseline_rows(rows, first, c.baseline);
    if before.is_empty() {
        return None;
    }
    let baseline = before.iter().map(|r| r.goodput()).sum::<f64>() / before.len() as f64;
    let floor = baseline * (1.0 - c.tolerance);
    let full = |r: &KpiRow| r.span >= rows[0].span;
    let after: Vec<&KpiRow> = rows.iter().filter(|r| r.start >= end && full(r)).collect();
    let width = rows[0].span.as_nanos().max(1);
    let need = c.sustain.as_nanos().div_ceil(width).max(1) as usize;
    let chunk = (c.smoothing.as_nanos() / width).clamp(1, need as u64) as usize;
    let holds = |window: &[&KpiRow]| {
        window.chunks(chunk).all(|part| {
            let mean = part.iter().map(|r| r.goodput()).sum::<f64>() / part.len() as f64;
            mean >= floor
        })
    };
    (0..after.len())
        .find(|&i| after.len() - i >= need && holds(&after[i..i + need]))
        .map(|i| after[i].start.saturating_since(end).as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A constructed run: 1 s buckets of `goodput` successes each.
    fn rows(goodput: &[u64]) -> Vec<KpiRow> {
        goodput
            .iter()
            .enumerate()
            .map(|(i, &g)| KpiRow {
                start: SimTime::ZERO.saturating_add(SimDuration::from_secs(i as u64)),
                span: SimDuration::from_secs(1),
                offered: g,
                finished: g,
                errors: 0,
                successes: g,
                attempts: g,
                e2e_window_p99: None,
                pool_wait_p99: None,
                pool_waiters_max: 0,
                calls_in_flight_mean: 0.0,
            })
            .collect()
    }

    fn judge(goodput: &[u64]) -> (Option<f64>, bool) {
        let c = RecoveryConfig {
            baseline: SimDuration::from_secs(10),
            sustain: SimDuration::from_secs(10),
            tolerance: 0.05,
            smoothing: SimDuration::from_secs(5),
            horizon: SimDuration::from_secs(20),
        };
        let r = rows(goodput);
        let end = r.last().map(|r| r.start.saturating_add(r.span)).unwrap();
        let at = |s| SimTime::ZERO.saturating_add(SimDuration::from_secs(s));
        judge_recovery(&r, at(10), at(15), end, &c)
    }

    #[test]
    fn recovery_is_judged_only_on_what_the_run_saw() {
        // 10 s at 100/s, a 5 s collapse, then back at once.
        let mut g = vec![100; 10];
        g.extend([0; 5]);
        g.extend([100; 40]);
        assert_eq!(judge(&g), (Some(0.0), true));
        // Still down 40 s after the trigger, horizon 20 s + sustain 10 s
        // seen: judged, not recovered (metastable).
        let mut down = vec![100; 10];
        down.extend([0; 45]);
        assert_eq!(judge(&down), (None, true));
        // Down, but the run ends 20 s after the trigger: not judged.
        let mut short = vec![100; 10];
        short.extend([0; 25]);
        assert_eq!(judge(&short), (None, false));
        // The trigger outlasts the run: not judged.
        assert_eq!(judge(&[100; 14]), (None, false));
    }
}
