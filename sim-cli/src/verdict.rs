//! The verdict on a set of runs: ranked by the experiment's objective (or
//! the default: SLO-violation time, then user p99, then peak
//! amplification), each with the criterion that decided its place, and
//! flags on runs that meet their errors by amplifying or shedding, or
//! whose retries rescue few of the calls they retry. One
//! definition, for `stormsim replay` and the report alike.

use polars::prelude::{DataFrame, DataType};
use sim_models::kpi::{Criterion, Objective};

use crate::report::optional_floats;

/// Peak amplification above which a run is flagged when the objective
/// declares none, as a multiple of the run's fan-out (its attempts per
/// user request without retries: 1 in the single tier). A graph that
/// calls five services per request amplifies 5× by its shape alone.
const DEFAULT_AMPLIFICATION_FLAG: f64 = 3.0;
/// Share of requests answered by fallbacks above which a run is flagged as
/// shedding.
const SHEDDING_FLAG: f64 = 0.05;
/// A run whose retries number at least this share of its requests (the
/// retry rate the incidents' write-ups hold as the most to tolerate) ...
const RETRYING_FLAG: f64 = 0.05;
/// ... and rescue fewer than this share of the calls they retry is
/// flagged: most of its retries were load.
const RESCUE_FLAG: f64 = 0.5;

/// Runs in ranking order.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    /// Row indices of the summary, best first.
    pub order: Vec<usize>,
    /// Per rank: the criterion on which this run and its neighbour (the
    /// next one; the previous one for the last) differ first.
    pub decided_by: Vec<Option<&'static str>>,
    /// Per row: what the ranking should not hide ("amplifies 10.2×").
    pub flags: Vec<Vec<String>>,
    /// Per row: each criterion's value, in the objective's order.
    pub keys: Vec<Vec<f64>>,
    /// The criteria, in order.
    pub criteria: Vec<Criterion>,
}

/// A summary column as floats, missing values as `None`; a column the
/// summary lacks (an older dataset) as all `None`.
fn column(summary: &DataFrame, name: &str) -> Result<Vec<Option<f64>>, String> {
    if summary.column(name).is_err() {
        return Ok(vec![None; summary.height()]);
    }
    optional_floats(summary, name)
}

/// A summary text column, missing values as `None`; a column the summary
/// lacks (an older dataset) as all `None`.
fn text_column(summary: &DataFrame, name: &str) -> Result<Vec<Option<String>>, String> {
    let Ok(c) = summary.column(name) else {
        return Ok(vec![None; summary.height()]);
    };
    let c = c
        .as_materialized_series()
        .cast(&DataType::String)
        .map_err(|e| e.to_string())?;
    let ca = c.str().map_err(|e| e.to_string())?;
    Ok(ca.iter().map(|v| v.map(String::from)).collect())
}

/// Ranks the runs of `summary` by `objective`.
pub fn rank(summary: &DataFrame, objective: &Objective) -> Result<Ranking, String> {
    let n = summary.height();
    let amp = column(summary, "amplification_peak")?;
    // A dataset written before the fan-out was recorded: the single tier's.
    let fan_out = column(summary, "fan_out")?;
    let slo = column(summary, "slo_violation_s")?;
    let p99 = column(summary, "peak_e2e_p99_s")?;
    let err = column(summary, "peak_error_rate")?;
    let degraded = column(summary, "degraded_rate")?;
    let retrying = column(summary, "retries_per_request")?;
    let rescued = column(summary, "rescue_rate")?;
    let unrescued = text_column(summary, "unrescued_edge")?;
    let unrescued_rate = column(summary, "unrescued_edge_rescue_rate")?;
    let recover = column(summary, "time_to_recover_s")?;
    let meta = column(summary, "metastable")?;
    let judged = column(summary, "recovery_judged")?;
    let worst = f64::INFINITY;
    let recovery_key = |i: usize| -> f64 {
        if meta[i].is_some_and(|m| m > 0.5) {
            worst
        } else if judged[i].is_some_and(|j| j < 0.5) {
            // Not judged: after every judged recovery, before "never".
            f64::MAX
        } else {
            recover[i].unwrap_or(0.0)
        }
    };
    let misses = |i: usize| -> f64 {
        let amp_miss = objective
            .amplification
            .is_some_and(|t| amp[i].unwrap_or(0.0) > t);
        let recovery_miss = objective
            .recovery
            .is_some_and(|t| recovery_key(i) > t.as_secs_f64());
        f64::from(u8::from(amp_miss) + u8::from(recovery_miss))
    };
    let criteria = objective.order();
    let keys: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            criteria
                .iter()
                .map(|c| match c {
                    Criterion::Targets => misses(i),
                    Criterion::SloViolation => slo[i].unwrap_or(worst),
                    Criterion::P99 => p99[i].unwrap_or(worst),
                    Criterion::Amplification => amp[i].unwrap_or(worst),
                    Criterion::Errors => err[i].unwrap_or(worst),
                    Criterion::Recovery => recovery_key(i),
                })
                .collect()
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        keys[a]
            .iter()
            .zip(&keys[b])
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let differs = |a: usize, b: usize| {
        criteria
            .iter()
            .zip(keys[a].iter().zip(&keys[b]))
            .find(|(_, (x, y))| x.total_cmp(y).is_ne())
            .map(|(c, _)| c.name())
    };
    let decided_by = (0..n)
        .map(|r| match (order.get(r + 1), r.checked_sub(1)) {
            (Some(&next), _) => differs(order[r], next),
            (None, Some(prev)) => differs(order[prev], order[r]),
            (None, None) => None,
        })
        .collect();
    let flags = (0..n)
        .map(|i| {
            let mut f = Vec::new();
            let shape = fan_out[i].unwrap_or(1.0);
            let flag = objective
                .amplification
                .unwrap_or(DEFAULT_AMPLIFICATION_FLAG * shape);
            if let Some(a) = amp[i]
                && a > flag
            {
                f.push(if shape > 1.0 {
                    format!("amplifies {a:.1}×, {shape:.1}× without retries")
                } else {
                    format!("amplifies {a:.1}×")
                });
            }
            if let Some(d) = degraded[i]
                && d > SHEDDING_FLAG
            {
                f.push(format!("sheds {:.0} % to fallbacks", 100.0 * d));
            }
            if let (Some(r), Some(rescue)) = (retrying[i], rescued[i])
                && r >= RETRYING_FLAG
                && rescue < RESCUE_FLAG
            {
                let mut flag = format!(
                    "retries rescue {:.0} % of the calls they retry",
                    100.0 * rescue
                );
                // In a graph, where the rest was spent.
                if let (Some(edge), Some(there)) = (&unrescued[i], unrescued_rate[i]) {
                    flag.push_str(&format!(
                        ", most of the rest on {edge} ({:.0} % rescued there)",
                        100.0 * there
                    ));
                }
                f.push(flag);
            }
            f
        })
        .collect();
    Ok(Ranking {
        order,
        decided_by,
        flags,
        keys,
        criteria,
    })
}

/// The ranking's rule in words, for tables and the report.
pub fn describe(objective: &Objective) -> String {
    let mut targets = Vec::new();
    if let Some(s) = objective.success {
        targets.push(format!("success ≥ {:.2} %", 100.0 * s));
    }
    if let Some(p) = objective.p99 {
        targets.push(format!("user p99 ≤ {p}"));
    }
    if let Some(a) = objective.amplification {
        targets.push(format!("amplification ≤ {a}"));
    }
    if let Some(r) = objective.recovery {
        targets.push(format!("recovery ≤ {r}"));
    }
    let slo = if targets.is_empty() {
        "the default SLO (success ≥ 99 %, user p99 ≤ 2 × the run's baseline)".to_string()
    } else {
        targets.join(", ")
    };
    let order: Vec<&str> = objective.order().iter().map(|c| c.name()).collect();
    format!("ranked by {} against {slo}", order.join(", then "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    /// Two runs: an old policy with a long SLO breach, and a "fix" that
    /// meets its errors by sending ten attempts per request.
    fn summary() -> DataFrame {
        df!(
            "run_id" => ["old", "fix"],
            "slo_violation_s" => [120.0, 0.0],
            "peak_e2e_p99_s" => [17.0, 2.0],
            "amplification_peak" => [1.2, 10.0],
            "peak_error_rate" => [0.4, 0.0],
            "degraded_rate" => [0.0, 0.0],
            "time_to_recover_s" => [Some(30.0), Some(5.0)],
            "metastable" => [false, false],
            "recovery_judged" => [true, true],
        )
        .unwrap()
    }

    #[test]
    fn a_fix_that_trades_errors_for_amplification_never_ranks_first_silently() {
        // The default objective ranks it first (no SLO breach), flagged.
        let r = rank(&summary(), &Objective::default()).unwrap();
        assert_eq!(r.order, vec![1, 0]);
        assert_eq!(r.decided_by[0], Some("slo_violation"));
        assert_eq!(r.flags[1], vec!["amplifies 10.0×".to_string()]);
        assert!(r.flags[0].is_empty());
        // An objective that bounds amplification ranks it last.
        let bounded = Objective {
            amplification: Some(1.5),
            ..Objective::default()
        };
        let r = rank(&summary(), &bounded).unwrap();
        assert_eq!(r.order, vec![0, 1]);
        assert_eq!(r.decided_by[0], Some("targets"));
        // A priority order is honoured as written.
        let by_p99 = Objective {
            order: vec![Criterion::Amplification, Criterion::P99],
            ..Objective::default()
        };
        assert_eq!(rank(&summary(), &by_p99).unwrap().order, vec![0, 1]);
    }

    #[test]
    fn a_graph_is_flagged_against_its_fan_out_not_against_one_call() {
        // Five calls per request and no retries: 5× by its shape; 16×
        // with retries; a run without the column (an older dataset) is
        // read as the single tier.
        let s = df!(
            "run_id" => ["calm", "storm"],
            "amplification_peak" => [5.04, 16.0],
            "fan_out" => [5.0, 5.0],
        )
        .unwrap();
        let r = rank(&s, &Objective::default()).unwrap();
        assert!(r.flags[0].is_empty(), "{:?}", r.flags);
        assert_eq!(
            r.flags[1],
            vec!["amplifies 16.0×, 5.0× without retries".to_string()]
        );
        let old = s.drop("fan_out").unwrap();
        let r = rank(&old, &Objective::default()).unwrap();
        assert_eq!(r.flags[0], vec!["amplifies 5.0×".to_string()]);
        // A declared target is the figure itself, as written.
        let bounded = Objective {
            amplification: Some(4.0),
            ..Objective::default()
        };
        let r = rank(&s, &bounded).unwrap();
        assert_eq!(r.flags[0].len(), 1, "{:?}", r.flags);
    }

    #[test]
    fn retries_that_rescue_few_calls_are_flagged_when_they_are_many() {
        // 0.27 retries a request rescuing 48 % of the calls they retry:
        // mostly load. As many rescuing 90 %, or few rescuing 10 %, or a
        // dataset written before the figure: no flag.
        let s = df!(
            "run_id" => ["load", "useful", "rare", "old"],
            "retries_per_request" => [0.27, 0.27, 0.01, 0.27],
            "rescue_rate" => [Some(0.484), Some(0.9), Some(0.1), None],
        )
        .unwrap();
        let r = rank(&s, &Objective::default()).unwrap();
        assert_eq!(
            r.flags[0],
            vec!["retries rescue 48 % of the calls they retry".to_string()]
        );
        assert!(r.flags[1..].iter().all(Vec::is_empty), "{:?}", r.flags);
        let older = s.drop("rescue_rate").unwrap();
        let r = rank(&older, &Objective::default()).unwrap();
        assert!(r.flags.iter().all(Vec::is_empty), "{:?}", r.flags);
        // In a graph, the flag names the edge where most of the retried
        // calls not rescued were (absent from the single tier's row).
        let graph = df!(
            "run_id" => ["graph", "single"],
            "retries_per_request" => [5.95, 0.27],
            "rescue_rate" => [0.008, 0.484],
            "unrescued_edge" => [Some("payment->mysql"), None],
            "unrescued_edge_rescue_rate" => [Some(0.011), None],
        )
        .unwrap();
        let r = rank(&graph, &Objective::default()).unwrap();
        assert_eq!(
            r.flags[0],
            vec![
                "retries rescue 1 % of the calls they retry, most of the rest on payment->mysql (1 % rescued there)"
                    .to_string()
            ]
        );
        assert_eq!(
            r.flags[1],
            vec!["retries rescue 48 % of the calls they retry".to_string()]
        );
    }

    #[test]
    fn never_recovered_ranks_after_not_judged_after_recovered() {
        let s = df!(
            "run_id" => ["never", "unjudged", "quick"],
            "time_to_recover_s" => [None, None, Some(3.0)],
            "metastable" => [true, false, false],
            "recovery_judged" => [true, false, true],
        )
        .unwrap();
        let o = Objective {
            order: vec![Criterion::Recovery],
            ..Objective::default()
        };
        assert_eq!(rank(&s, &o).unwrap().order, vec![2, 1, 0]);
    }
}
