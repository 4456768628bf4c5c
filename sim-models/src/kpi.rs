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
//! requests per second) before the first trigger is the baseline, moved
//! by whatever change of the open-loop rate the timeline leaves behind;
//! after the last trigger ends, the system has recovered at the first
//! bucket from which goodput stays within `tolerance` of it for
//! `sustain` (judged as means over `smoothing`-long chunks, so Poisson
//! noise in one second does not count as a relapse). A run that has not
//! recovered within `horizon` of the trigger's end is flagged metastable,
//! but only when it lasted long enough to tell (see `judge_recovery`):
//! otherwise recovery is "not judged".

use serde::{Deserialize, Serialize};
use sim_core::metrics::Histogram;
use sim_core::time::{SimDuration, SimTime};

use crate::outcome::Reason;
use crate::recorder::{BucketRow, Count, EdgeRescues, Latency, Level, RunTotals};
use crate::timeline::{Param, Step, StepAction, last_trigger_end};

/// Attempt rates are read as means over this span (a rate graph's usual
/// resolution).
const RATE_WINDOW: SimDuration = SimDuration::from_secs(10);
/// The storm is visible once attempts exceed this multiple of offered load
/// (times the graph's fan-out: a graph makes more than one attempt per
/// user request without any retry).
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
    /// "Near" for goodput: within this fraction below the baseline
    /// (default 0.05).
    pub tolerance: f64,
    /// "Near" for the p99: at most this fraction above its baseline
    /// (default 0.25).
    pub p99_tolerance: f64,
    /// "Near" for the backlog: at most this fraction above its baseline
    /// mean, plus one request (default 0.5).
    pub backlog_tolerance: f64,
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
            p99_tolerance: 0.25,
            backlog_tolerance: 0.5,
            smoothing: SimDuration::from_secs(10),
            horizon: SimDuration::from_secs(120),
        }
    }
}

impl RecoveryConfig {
    /// Checks the settings; each problem as (field, message).
    pub fn validate(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (field, t) in [
            ("p99_tolerance", self.p99_tolerance),
            ("backlog_tolerance", self.backlog_tolerance),
        ] {
            if !(t.is_finite() && t >= 0.0) {
                out.push((field, format!("must be a fraction of 0 or more, found {t}")));
            }
        }
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

/// What good means for an experiment (`objective:`): SLO targets, and the
/// order in which they rank cells. Absent, the SLO is the baseline's own
/// (see [`Slo::of`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Objective {
    /// Success rate over the trailing window at least this (for example
    /// 0.99).
    pub success: Option<f64>,
    /// Windowed end-to-end p99 at most this.
    pub p99: Option<SimDuration>,
    /// Peak amplification (attempts ÷ offered) at most this.
    pub amplification: Option<f64>,
    /// Time to recover at most this.
    pub recovery: Option<SimDuration>,
    /// The ranking's priority order; default `[targets, slo_violation,
    /// p99, amplification]` (targets: how many declared amplification and
    /// recovery targets a cell misses).
    pub order: Vec<Criterion>,
}

/// A ranking criterion, lower is better for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Criterion {
    /// Declared amplification and recovery targets missed.
    Targets,
    /// Seconds in which the trailing error rate or the windowed p99 broke
    /// the SLO.
    SloViolation,
    /// Peak windowed user p99.
    P99,
    /// Peak amplification.
    Amplification,
    /// Peak error rate.
    Errors,
    /// Time to recover (never recovered last).
    Recovery,
}

impl Criterion {
    /// The criterion's name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Criterion::Targets => "targets",
            Criterion::SloViolation => "slo_violation",
            Criterion::P99 => "p99",
            Criterion::Amplification => "amplification",
            Criterion::Errors => "errors",
            Criterion::Recovery => "recovery",
        }
    }
}

impl Objective {
    /// The ranking order in force.
    pub fn order(&self) -> Vec<Criterion> {
        if self.order.is_empty() {
            vec![
                Criterion::Targets,
                Criterion::SloViolation,
                Criterion::P99,
                Criterion::Amplification,
            ]
        } else {
            self.order.clone()
        }
    }

    /// Checks the targets; each problem as (field, message).
    pub fn validate(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(s) = self.success
            && !(0.0..=1.0).contains(&s)
        {
            out.push((
                "success",
                format!("must be a fraction between 0 and 1, found {s}"),
            ));
        }
        if let Some(a) = self.amplification
            && !(a.is_finite() && a >= 1.0)
        {
            out.push(("amplification", format!("must be at least 1, found {a}")));
        }
        if self.p99.is_some_and(|d| d.is_zero()) {
            out.push(("p99", "must be longer than 0s".into()));
        }
        out
    }
}

/// The error rate the default SLO allows.
const DEFAULT_ERROR_SLO: f64 = 0.01;

/// The SLO a run is judged against: the declared one, or else success at
/// least 99 % (the same for every run, so a policy failing from the start
/// is not excused by its own baseline) and p99 at most twice the run's
/// baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slo {
    /// Highest trailing error rate that meets it.
    pub error_rate: f64,
    /// Highest windowed p99 that meets it, seconds (`None`: no p99 target).
    pub p99_s: Option<f64>,
}

impl Slo {
    /// The SLO for a run whose baseline p99 is `baseline_p99` seconds.
    pub fn of(objective: &Objective, baseline_p99: Option<f64>) -> Slo {
        Slo {
            error_rate: objective.success.map_or(DEFAULT_ERROR_SLO, |s| 1.0 - s),
            p99_s: objective
                .p99
                .map(|d| d.as_secs_f64())
                .or(baseline_p99.map(|p| 2.0 * p)),
        }
    }
}

/// Seconds of the run in which the trailing error rate (over `n` buckets)
/// or the windowed p99 broke `slo`.
fn slo_violation(rows: &[KpiRow], n: usize, slo: &Slo) -> f64 {
    let (mut errors, mut finished, mut total) = (0u64, 0u64, 0.0);
    for (i, r) in rows.iter().enumerate() {
        errors += r.errors;
        finished += r.finished;
        if i >= n {
            errors -= rows[i - n].errors;
            finished -= rows[i - n].finished;
        }
        let error_broken = finished > 0 && errors as f64 / finished as f64 > slo.error_rate;
        let p99_broken = slo
            .p99_s
            .zip(r.e2e_window_p99)
            .is_some_and(|(t, p)| p as f64 / 1e9 > t);
        if error_broken || p99_broken {
            total += r.span.as_secs_f64();
        }
    }
    total
}

/// The figures a summary row holds (`Default`: a run that saw nothing,
/// for listing the figures' names).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    /// Attempts per user request with every call made once and none
    /// retried: 1 in the single tier, a graph's calls per request (the
    /// amplification of a run without retries).
    pub fan_out: f64,
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
    /// exceed 1.5 × offered requests (× the fan-out, in a graph).
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
    /// Seconds from the trigger's end until goodput alone held near what
    /// is expected of it (its baseline, moved with the open-loop rate the
    /// timeline leaves) for the sustain span.
    pub recover_goodput_s: Option<f64>,
    /// Likewise for the backlog.
    pub recover_backlog_s: Option<f64>,
    /// Likewise for the end-to-end p99.
    pub recover_p99_s: Option<f64>,
    /// The criterion that recovered last (or never): `goodput`, `backlog`
    /// or `p99`; `None` when recovery was not judged.
    pub recovery_held_by: Option<&'static str>,
    /// Whether recovery could be judged: there was a trigger and it ended
    /// inside the run. When false, `time_to_recover_s` is `None` and the run
    /// is never called metastable.
    pub recovery_judged: bool,
    /// Not recovered within the horizon.
    pub metastable: bool,
    /// Highest backlog (users waiting plus the dependency's queue, a
    /// bucket's time-weighted mean).
    pub peak_backlog: f64,
    /// Requests the dependency answered 429 over the run.
    pub rate_limited: u64,
    /// Pod restarts over the run (failed health checks and the
    /// timeline's), which an incident often reports.
    pub pod_restarts: u64,
    /// Health probes that found their pod saturated, over the run.
    pub probes_failed: u64,
    /// Retries (not hedges) per user request.
    pub retries_per_request: f64,
    /// Of the calls that retried, the share that ended in success: what
    /// the retries rescued (`None`: no call retried). Low, the retries
    /// were load and little else.
    pub rescue_rate: Option<f64>,
    /// In a graph of more than one edge, the edge with the most retried
    /// calls its retries did not rescue: where the retries that were only
    /// load were spent (`None`: one edge, or every retried call rescued).
    pub unrescued_edge: Option<String>,
    /// That edge's own rescue rate.
    pub unrescued_edge_rescue_rate: Option<f64>,
    /// Seconds in which the trailing error rate or the windowed p99 broke
    /// the SLO (the objective's, or the default).
    pub slo_violation_s: f64,
    /// The SLO's error-rate bound.
    pub slo_error_rate: f64,
    /// The SLO's p99 bound, seconds.
    pub slo_p99_s: Option<f64>,
    /// The cost of every attempt that ended, when a client sets
    /// `cost_per_attempt` ([`Kpis::with_cost`]).
    pub cost_total: Option<f64>,
    /// Of it, the attempts that served no answer: failed, timed out,
    /// cancelled (a lost hedge). Work the dependency may well have done.
    pub cost_wasted: Option<f64>,
    /// `cost_total` per request offered.
    pub cost_per_request: Option<f64>,
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
    /// End-to-end p99 of the bucket alone, ns.
    pub e2e_p99: Option<u64>,
    /// Pool wait p99 in the bucket, ns.
    pub pool_wait_p99: Option<u64>,
    /// Most calls queued for a pool connection.
    pub pool_waiters_max: i64,
    /// Time-weighted mean of calls in flight.
    pub calls_in_flight_mean: f64,
    /// The backlog: requests whose users wait (queued for connections or
    /// workers, or in service) plus work queued at the dependency, as
    /// time-weighted means.
    pub backlog: f64,
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
            e2e_p99: r.latency(Latency::EndToEnd).p99,
            pool_wait_p99: r.latency(Latency::PoolWait).p99,
            pool_waiters_max: r.level(Level::PoolWaiters).max,
            calls_in_flight_mean: r.level(Level::CallsInFlight).mean,
            backlog: r.level(Level::UsersWaiting).mean + r.level(Level::UpstreamQueued).mean,
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

/// Of more than one edge, the one with the most retried calls its retries
/// did not rescue (the first of equals, in the topology's order); `None`
/// with one edge (the run's own figures) or none unrescued.
fn unrescued_edge(edges: &[EdgeRescues]) -> Option<&EdgeRescues> {
    if edges.len() < 2 {
        return None;
    }
    let lost = |e: &EdgeRescues| e.retried - e.rescued;
    edges
        .iter()
        .filter(|e| lost(e) > 0)
        .reduce(|best, e| if lost(e) > lost(best) { e } else { best })
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
    kpis_for(rows, totals, steps, recovery, window, &Objective::default())
}

/// [`kpis`], with the SLO of a declared objective.
pub fn kpis_for(
    rows: &[KpiRow],
    totals: &RunTotals,
    steps: &[Step],
    recovery: &RecoveryConfig,
    window: SimDuration,
    objective: &Objective,
) -> Kpis {
    let finished = totals.finished();
    let unrescued = unrescued_edge(&totals.edge_rescues);
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
    let visible = VISIBLE_AMPLIFICATION * totals.fan_out;
    let storm_visible = onset(&|r| r.attempts as f64 > visible * r.offered as f64);
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
    let rates = Rates {
        began: totals.load_rate,
        ends: final_load_rate(steps).unwrap_or(totals.load_rate),
        closed_loop: totals.closed_loop,
    };
    let criteria = match (first_trigger, trigger_end) {
        (Some(first), Some(end)) => recover(rows, first, end, rates, recovery),
        _ => Recovery::default(),
    };
    let (recovered, judged) = match trigger_end {
        Some(end) => judge_recovery(criteria.all, end, run_end, recovery),
        None => (None, false),
    };
    let held_by = judged.then(|| criteria.held_by()).flatten();
    let metastable = judged && recovered.is_none_or(|t| t > recovery.horizon.as_secs_f64());
    let slo = Slo::of(objective, secs(baseline_p99));
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
        fan_out: totals.fan_out,
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
        recover_goodput_s: criteria.goodput,
        recover_backlog_s: criteria.backlog,
        recover_p99_s: criteria.p99,
        recovery_held_by: held_by,
        recovery_judged: judged,
        metastable,
        peak_backlog: rows.iter().map(|r| r.backlog).fold(0.0, f64::max),
        rate_limited: totals.count(Count::UpstreamRateLimited),
        pod_restarts: totals.count(Count::PodRestarts),
        probes_failed: totals.count(Count::ProbesFailed),
        retries_per_request: ratio(
            totals.count(Count::AttemptsRetry),
            totals.count(Count::Offered),
        ),
        rescue_rate: {
            let retried = totals.count(Count::CallsRetried);
            (retried > 0).then(|| ratio(totals.count(Count::CallsRescued), retried))
        },
        unrescued_edge: unrescued.map(|e| e.edge.clone()),
        unrescued_edge_rescue_rate: unrescued.map(|e| ratio(e.rescued, e.retried)),
        slo_violation_s: slo_violation(rows, buckets(window), &slo),
        slo_error_rate: slo.error_rate,
        slo_p99_s: slo.p99_s,
        cost_total: None,
        cost_wasted: None,
        cost_per_request: None,
    }
}

impl Kpis {
    /// The run's cost: every attempt that ended, priced by its edge's
    /// `cost_per_attempt`, and of it what the attempts that served no
    /// answer cost (none when no edge prices its attempts).
    pub fn with_cost(mut self, totals: &RunTotals) -> Kpis {
        if let Some(c) = totals.costs.priced() {
            self.cost_total = Some(c.total);
            self.cost_wasted = Some(c.wasted);
            self.cost_per_request = (self.offered > 0).then(|| c.total / self.offered as f64);
        }
        self
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

/// Whether a run that recovered after `recovered` seconds (or not) from a
/// trigger ending at `end`, in a run ending at `run_end`, can be judged.
///
/// The run judges only what it saw. A recovery it found is judged (late or
/// not). No recovery is judged, as metastable, only when the run lasted
/// `horizon + sustain` past the trigger's end, long enough for a recovery
/// starting within the horizon to have shown; otherwise, and when the
/// trigger outlasts the run, recovery is not judged (never "metastable").
fn judge_recovery(
    recovered: Option<f64>,
    end: SimTime,
    run_end: SimTime,
    c: &RecoveryConfig,
) -> (Option<f64>, bool) {
    if end >= run_end {
        return (None, false);
    }
    match recovered {
        Some(t) => (Some(t), true),
        None => {
            let seen = end.saturating_add(c.horizon).saturating_add(c.sustain);
            (None, seen <= run_end)
        }
    }
}

/// Seconds from the trigger's end to recovery, per criterion and all
/// together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Recovery {
    goodput: Option<f64>,
    backlog: Option<f64>,
    p99: Option<f64>,
    all: Option<f64>,
}

impl Recovery {
    /// The criterion that recovered last, or one that never did.
    fn held_by(&self) -> Option<&'static str> {
        let each = [
            ("goodput", self.goodput),
            ("backlog", self.backlog),
            ("p99", self.p99),
        ];
        if let Some((name, _)) = each.iter().find(|(_, t)| t.is_none()) {
            return Some(name);
        }
        // The latest; on a tie, the first listed.
        let mut last: Option<(&'static str, f64)> = None;
        for (name, t) in each {
            let t = t.unwrap_or(0.0);
            if last.is_none_or(|(_, l)| t > l) {
                last = Some((name, t));
            }
        }
        last.map(|(name, _)| name)
    }
}

/// The open-loop rate a run began at and the one its timeline leaves it
/// at, requests per second, and whether closed-loop users add to it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rates {
    began: f64,
    ends: f64,
    closed_loop: bool,
}

impl Rates {
    /// The goodput expected once the load is where the timeline leaves
    /// it, of a baseline goodput `goodput` out of `offered` requests that
    /// `successes` succeeded. An open load alone scales it by the rates
    /// (so the Poisson noise in the count of arrivals does not shift the
    /// target); with closed-loop users, only the open part moves, by the
    /// share of offered requests that succeeded.
    fn expected(&self, goodput: f64, offered: u64, successes: u64) -> f64 {
        if self.began == self.ends {
            goodput
        } else if !self.closed_loop && self.began > 0.0 {
            goodput * self.ends / self.began
        } else {
            let share = ratio(successes, offered).min(1.0);
            (goodput + (self.ends - self.began) * share).max(0.0)
        }
    }
}

/// The last `load.rate` the timeline sets, if it sets one.
fn final_load_rate(steps: &[Step]) -> Option<f64> {
    steps
        .iter()
        .filter(|s| matches!(s.action, StepAction::Set(Param::LoadRate, ..)))
        .max_by_key(|s| s.at)
        .and_then(|s| match s.action {
            StepAction::Set(_, _, v) => Some(v),
            _ => None,
        })
}

/// When the system recovered from a trigger that ended at `end`: the first
/// bucket from which what users feel is back near the pre-trigger baseline
/// and stays there for `sustain`, judged on `smoothing`-long chunks so one
/// noisy second is no relapse. Three criteria, each against its own
/// baseline over `baseline` before the first trigger:
/// - goodput (successes per second) at least `1 − tolerance` of what is
///   expected of it: its mean, moved as the open-loop rate moved from
///   where the run began to where the timeline leaves it
///   ([`Rates::expected`]: a load that ends at a quarter is not a goodput
///   lost, nor one that ends higher a goodput regained while part of it
///   fails; closed-loop users, whose load a storm itself lowers, are held
///   to their baseline);
/// - backlog (users waiting, dependency queue) at most `1 +
///   backlog_tolerance` of its mean scaled as the expected goodput is
///   (Little's law, at the baseline's latency), plus one request;
/// - p99 (end to end, each chunk's mean of its buckets' p99, so the
///   dashboard window's lag is not counted against a recovery) at most
///   `1 + p99_tolerance` of its baseline mean, whatever the load: a load
///   that leaves the p99 higher leaves users worse off.
///
/// A draining backlog or a p99 still high is not a recovery; a relapse
/// inside the sustain span restarts the count.
fn recover(
    rows: &[KpiRow],
    first: SimTime,
    end: SimTime,
    rates: Rates,
    c: &RecoveryConfig,
) -> Recovery {
    let before = baseline_rows(rows, first, c.baseline);
    if before.is_empty() {
        return Recovery::default();
    }
    let n = before.len() as f64;
    let base_goodput = before.iter().map(|r| r.goodput()).sum::<f64>() / n;
    let expected = rates.expected(
        base_goodput,
        before.iter().map(|r| r.offered).sum(),
        before.iter().map(|r| r.successes).sum(),
    );
    let scale = if base_goodput > 0.0 {
        expected / base_goodput
    } else {
        1.0
    };
    let goodput_floor = expected * (1.0 - c.tolerance);
    let backlog_ceiling =
        before.iter().map(|r| r.backlog).sum::<f64>() / n * scale * (1.0 + c.backlog_tolerance)
            + 1.0;
    let p99s: Vec<f64> = before
        .iter()
        .filter_map(|r| r.e2e_p99)
        .map(|p| p as f64)
        .collect();
    let p99_ceiling = (!p99s.is_empty())
        .then(|| p99s.iter().sum::<f64>() / p99s.len() as f64 * (1.0 + c.p99_tolerance));
    let full = |r: &KpiRow| r.span >= rows[0].span;
    let after: Vec<&KpiRow> = rows.iter().filter(|r| r.start >= end && full(r)).collect();
    let width = rows[0].span.as_nanos().max(1);
    let need = c.sustain.as_nanos().div_ceil(width).max(1) as usize;
    let chunk = (c.smoothing.as_nanos() / width).clamp(1, need as u64) as usize;
    let mean = |part: &[&KpiRow], f: &dyn Fn(&KpiRow) -> Option<f64>| {
        let v: Vec<f64> = part.iter().filter_map(|r| f(r)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let goodput =
        |part: &[&KpiRow]| mean(part, &|r| Some(r.goodput())).is_some_and(|m| m >= goodput_floor);
    let backlog =
        |part: &[&KpiRow]| mean(part, &|r| Some(r.backlog)).is_some_and(|m| m <= backlog_ceiling);
    // No p99 before the trigger (no answers yet): nothing to hold it to.
    let p99 = |part: &[&KpiRow]| match p99_ceiling {
        Some(ceiling) => mean(part, &|r| r.e2e_p99.map(|p| p as f64)).is_none_or(|m| m <= ceiling),
        None => true,
    };
    let first_holding = |holds: &dyn Fn(&[&KpiRow]) -> bool| {
        (0..after.len())
            .find(|&i| after.len() - i >= need && after[i..i + need].chunks(chunk).all(holds))
            .map(|i| after[i].start.saturating_since(end).as_secs_f64())
    };
    Recovery {
        goodput: first_holding(&goodput),
        backlog: first_holding(&backlog),
        p99: first_holding(&p99),
        all: first_holding(&|part| goodput(part) && backlog(part) && p99(part)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of several edges, the one with the most retried calls not rescued
    /// (the first of equals); none with one edge, or none unrescued.
    #[test]
    fn the_unrescued_edge_is_where_most_retried_calls_were_not_rescued() {
        let e = |edge: &str, retried: u64, rescued: u64| EdgeRescues {
            edge: edge.into(),
            retried,
            rescued,
        };
        let name = |edges: &[EdgeRescues]| unrescued_edge(edges).map(|x| x.edge.clone());
        // a→b loses 10 of 100 (a 90 % rescue), b→db 30 of 40 (25 %).
        let graph = [e("a->b", 100, 90), e("b->db", 40, 10), e("a->c", 0, 0)];
        assert_eq!(name(&graph).as_deref(), Some("b->db"));
        let tied = [e("a->b", 50, 20), e("b->db", 30, 0)];
        assert_eq!(name(&tied).as_deref(), Some("a->b"));
        assert_eq!(name(&[e("a->b", 9, 9), e("b->db", 3, 3)]), None);
        assert_eq!(name(&[e("service->upstream", 50, 0)]), None);
    }

    /// One constructed 1 s bucket: goodput, backlog, windowed p99 (s).
    fn row(i: usize, goodput: u64, backlog: f64, p99: f64) -> KpiRow {
        KpiRow {
            start: SimTime::ZERO.saturating_add(SimDuration::from_secs(i as u64)),
            span: SimDuration::from_secs(1),
            offered: goodput,
            finished: goodput,
            errors: 0,
            successes: goodput,
            attempts: goodput,
            e2e_window_p99: Some(SimDuration::from_secs_f64(p99).as_nanos()),
            e2e_p99: Some(SimDuration::from_secs_f64(p99).as_nanos()),
            pool_wait_p99: None,
            pool_waiters_max: 0,
            calls_in_flight_mean: 0.0,
            backlog,
        }
    }

    /// A timeline: 10 s healthy (100/s, backlog 20, p99 1 s), a trigger
    /// from 10 s to 15 s, then `after(t)` for each second after it.
    fn timeline(len: usize, after: impl Fn(usize) -> (u64, f64, f64)) -> Vec<KpiRow> {
        (0..len)
            .map(|i| match i {
                0..10 => row(i, 100, 20.0, 1.0),
                10..15 => row(i, 0, 500.0, 10.0),
                _ => {
                    let (g, b, p) = after(i - 15);
                    row(i, g, b, p)
                }
            })
            .collect()
    }

    fn config() -> RecoveryConfig {
        RecoveryConfig {
            baseline: SimDuration::from_secs(10),
            sustain: SimDuration::from_secs(10),
            smoothing: SimDuration::from_secs(5),
            horizon: SimDuration::from_secs(20),
            ..RecoveryConfig::default()
        }
    }

    fn at(s: u64) -> SimTime {
        SimTime::ZERO.saturating_add(SimDuration::from_secs(s))
    }

    /// The timelines' open-loop rate: 100/s throughout.
    fn steady() -> Rates {
        Rates {
            began: 100.0,
            ends: 100.0,
            closed_loop: false,
        }
    }

    /// (time to recover, judged, criterion that held it back last).
    fn judge(rows: &[KpiRow]) -> (Option<f64>, bool, Option<&'static str>) {
        judge_at(rows, steady())
    }

    /// [`judge`], the open-loop rate going from `rates.began` to
    /// `rates.ends` over the trigger.
    fn judge_at(rows: &[KpiRow], rates: Rates) -> (Option<f64>, bool, Option<&'static str>) {
        let c = config();
        let r = recover(rows, at(10), at(15), rates, &c);
        let end = rows.last().map(|r| r.start.saturating_add(r.span)).unwrap();
        let (t, judged) = judge_recovery(r.all, at(15), end, &c);
        (t, judged, judged.then(|| r.held_by()).flatten())
    }

    #[test]
    fn a_true_recovery_is_judged_at_once() {
        let rows = timeline(60, |_| (100, 20.0, 1.0));
        assert_eq!(judge(&rows), (Some(0.0), true, Some("goodput")));
    }

    #[test]
    fn a_draining_backlog_is_not_a_recovery() {
        // Goodput back at once, the backlog drains 20 per second from 500.
        let rows = timeline(70, |t| (100, (500.0 - 20.0 * t as f64).max(20.0), 1.0));
        let (t, judged, held) = judge(&rows);
        // Backlog at most 31 (20 × 1.5 + 1) from about 24 s on.
        assert!(
            judged && t.is_some_and(|t| (20.0..=25.0).contains(&t)),
            "{t:?}"
        );
        assert_eq!(held, Some("backlog"));
    }

    #[test]
    fn a_p99_still_high_is_not_a_recovery() {
        // The p99 stays at 10 s for 30 s after the trigger.
        let rows = timeline(80, |t| (100, 20.0, if t < 30 { 10.0 } else { 1.0 }));
        let (t, judged, held) = judge(&rows);
        assert!(
            judged && t.is_some_and(|t| (25.0..=30.0).contains(&t)),
            "{t:?}"
        );
        assert_eq!(held, Some("p99"));
    }

    #[test]
    fn a_relapse_restarts_the_count() {
        // Back for 8 s, down again for 6 s, then back for good.
        let rows = timeline(70, |t| match t {
            0..8 => (100, 20.0, 1.0),
            8..14 => (10, 300.0, 8.0),
            _ => (100, 20.0, 1.0),
        });
        let (t, judged, _) = judge(&rows);
        assert!(judged && t.is_some_and(|t| t >= 10.0), "{t:?}");
    }

    #[test]
    fn recovery_is_judged_only_on_what_the_run_saw() {
        // Still down 40 s after the trigger, horizon 20 s + sustain 10 s
        // seen: judged, not recovered (metastable).
        let down = timeline(55, |_| (0, 500.0, 10.0));
        assert_eq!(judge(&down), (None, true, Some("goodput")));
        // Down, but the run ends 20 s after the trigger: not judged.
        let short = timeline(35, |_| (0, 500.0, 10.0));
        assert_eq!(judge(&short), (None, false, None));
        // The trigger outlasts the run: not judged.
        assert_eq!(
            judge(&timeline(14, |_| (100, 20.0, 1.0))),
            (None, false, None)
        );
    }

    #[test]
    fn goodput_is_expected_to_follow_the_load_the_timeline_leaves() {
        let quarter = Rates {
            ends: 25.0,
            ..steady()
        };
        let more = Rates {
            ends: 250.0,
            ..steady()
        };
        // The load ends at a quarter and is served: 25/s, backlog 5.
        let served = timeline(60, |_| (25, 5.0, 1.0));
        assert_eq!(
            judge_at(&served, quarter),
            (Some(0.0), true, Some("goodput"))
        );
        // Held to the rate it began at, that reads as goodput lost for good.
        assert_eq!(judge(&served), (None, true, Some("goodput")));
        // The floor is 23.75/s (25 × 0.95): 23/s is short of it.
        let short = timeline(60, |_| (23, 5.0, 1.0));
        assert_eq!(judge_at(&short, quarter), (None, true, Some("goodput")));
        // The load ends at 250/s: 100/s served is not a recovery, though
        // it is the goodput before the trigger.
        let capped = timeline(60, |_| (100, 20.0, 1.0));
        assert_eq!(judge_at(&capped, more), (None, true, Some("goodput")));
        // 250/s served, its backlog 2.5 times the baseline's (Little's
        // law at the same latency), is; a backlog beyond 2.5 × 20 × 1.5 + 1
        // is not.
        let served = timeline(60, |_| (250, 50.0, 1.0));
        assert_eq!(judge_at(&served, more), (Some(0.0), true, Some("goodput")));
        let queued = timeline(60, |_| (250, 77.0, 1.0));
        assert_eq!(judge_at(&queued, more), (None, true, Some("backlog")));
    }

    #[test]
    fn with_closed_loop_users_only_the_succeeding_share_of_the_open_change_is_expected() {
        // Before the trigger 125 offered a second (users among them), 100
        // succeed; the open load then goes from 125 to 250/s: 100 + 125 ×
        // 0.8 = 200/s expected, 190 near enough.
        let mut rows = timeline(60, |_| (190, 20.0, 1.0));
        for r in &mut rows[..10] {
            r.offered = 125;
            r.finished = 125;
        }
        let rates = Rates {
            began: 125.0,
            ends: 250.0,
            closed_loop: true,
        };
        assert_eq!(judge_at(&rows, rates), (Some(0.0), true, Some("goodput")));
        for r in &mut rows[15..] {
            r.successes = 189;
        }
        assert_eq!(judge_at(&rows, rates), (None, true, Some("goodput")));
    }

    #[test]
    fn an_open_load_alone_scales_its_goodput_by_the_rates() {
        // 100 succeed a second at 100/s while 104 arrive (Poisson noise):
        // at 25/s, 25 are expected, not 100 − 75 × 100/104 = 27.9.
        let open = Rates {
            ends: 25.0,
            ..steady()
        };
        assert_eq!(open.expected(100.0, 1040, 1000), 25.0);
        let users = Rates {
            closed_loop: true,
            ..open
        };
        assert!((users.expected(100.0, 1040, 1000) - 27.88).abs() < 0.01);
        // No open load to begin with: only the share of offered.
        let from_none = Rates {
            began: 0.0,
            ends: 50.0,
            closed_loop: false,
        };
        assert_eq!(from_none.expected(40.0, 500, 400), 80.0);
        // A load that does not move keeps the baseline as it was.
        assert_eq!(steady().expected(97.0, 1040, 1000), 97.0);
    }

    #[test]
    fn the_last_load_rate_the_timeline_sets_is_the_one_it_leaves() {
        let set = |at_s: u64, param: Param, v: f64| Step {
            at: at(at_s),
            action: StepAction::Set(param, 0, v),
            entry: 0,
            ends_trigger: true,
        };
        assert_eq!(final_load_rate(&[]), None);
        let steps = [
            set(30, Param::LoadRate, 80.0),
            set(10, Param::LoadRate, 300.0),
            set(40, Param::UpstreamLatencyScale, 2.0),
        ];
        assert_eq!(final_load_rate(&steps), Some(80.0));
        assert_eq!(final_load_rate(&steps[1..]), Some(300.0));
        assert_eq!(final_load_rate(&steps[2..]), None);
    }
}
