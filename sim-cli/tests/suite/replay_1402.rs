//! Incident A, replayed: the known configuration plus the calibrated
//! upstream must reproduce the figures the write-up reported, read the way
//! its dashboards read them (see the comments in
//! `experiments/incidents/llm-api-1402.yaml`), for the experiment's own
//! seed and as the median over seven seeds.
//!
//! Seed 1402 and the median of seeds 1-7 meet every figure. Single seeds
//! scatter, because which pods end up holding the API's connections is
//! chance: over seeds 1-12 the P99 spans 27-40 s, the error rate
//! 0.40-0.44, attempts 293-323/s, concurrent calls 820-1,330 and the pools
//! run dry 22-50 s after the trigger; one of the twelve meets every
//! figure.
//!
//! The storm does not hinge on the network between the pods and the API:
//! with none, or with a log-normal 30 ms each way, the medians stay within
//! a tenth of every range.

use sim_core::dist::DistSpec;
use sim_core::time::SimDuration;
use sim_models::config::WorldConfig;
use sim_models::kpi::Kpis;
use stormsim::load::{InputLimits, load};

use crate::common;

/// One reported figure: its name, how to read it from a run, and the
/// accepted range.
struct Figure {
    name: &'static str,
    read: fn(&Kpis) -> Option<f64>,
    low: f64,
    high: f64,
}

const FIGURES: [Figure; 9] = [
    Figure {
        name: "P99 at the peak (s)",
        read: |k| k.peak_e2e_p99_s,
        low: 34.0,
        high: 56.0,
    },
    Figure {
        name: "P99 before (s)",
        read: |k| k.baseline_e2e_p99_s,
        low: 0.0,
        high: 6.0,
    },
    Figure {
        name: "error rate at the peak",
        read: |k| Some(k.peak_error_rate),
        low: 0.26,
        high: 0.44,
    },
    Figure {
        name: "error rate before",
        read: |k| k.baseline_error_rate,
        low: 0.0,
        high: 0.01,
    },
    Figure {
        name: "attempts/s at the peak",
        read: |k| Some(k.peak_attempts_per_s),
        low: 300.0,
        high: 450.0,
    },
    Figure {
        name: "concurrent calls",
        read: |k| Some(k.peak_calls_in_flight),
        low: 900.0,
        high: 1300.0,
    },
    Figure {
        name: "pool wait p99 (s)",
        read: |k| k.peak_pool_wait_p99_s,
        low: 20.0,
        high: f64::INFINITY,
    },
    // Reported: visible by 14:02:40 and exhausted by about 14:03:00, ±15 s.
    Figure {
        name: "storm visible after (s)",
        read: |k| k.storm_visible_s,
        low: 0.0,
        high: 25.0,
    },
    Figure {
        name: "pools exhausted after (s)",
        read: |k| k.pools_exhausted_s,
        low: 15.0,
        high: 45.0,
    },
];

fn figures(seed: u64) -> Vec<Option<f64>> {
    figures_with(seed, |_| {})
}

/// The figures of the replay with `seed`, its configuration changed by
/// `tweak` first.
fn figures_with(seed: u64, tweak: impl Fn(&mut WorldConfig)) -> Vec<Option<f64>> {
    figures_of("experiments/incidents/llm-api-1402.yaml", seed, tweak)
}

/// The figures of the experiment at `file` with `seed`, changed by `tweak`.
fn figures_of(file: &str, seed: u64, tweak: impl Fn(&mut WorldConfig)) -> Vec<Option<f64>> {
    let path = common::root().join(file);
    let exp = load(&path, &InputLimits::default()).expect("the replay loads");
    let mut cfg = exp.world.clone();
    cfg.seed = seed;
    tweak(&mut cfg);
    let (k, _) = common::run_and_judge(&exp, &cfg);
    FIGURES.iter().map(|f| (f.read)(&k)).collect()
}

/// Prints every figure against its range, widened by `slack` (a share of
/// each bound), and fails if any is outside it.
fn check(label: &str, values: &[Option<f64>], slack: f64) {
    let mut table = format!("{label}:\n");
    let mut bad = false;
    for (f, v) in FIGURES.iter().zip(values) {
        let round = |x: f64| (x * 1e6).round() / 1e6;
        let (low, high) = (round(f.low * (1.0 - slack)), round(f.high * (1.0 + slack)));
        let ok = v.is_some_and(|v| (low..=high).contains(&v));
        table += &format!(
            "  {:<28} {:>10}  [{low}, {high}]{}\n",
            f.name,
            v.map_or("none".into(), |v| format!("{v:.3}")),
            if ok { "" } else { "  <- out" }
        );
        bad |= !ok;
    }
    println!("{table}");
    assert!(!bad, "{table}");
}

fn median_of_seven(tweak: impl Fn(&mut WorldConfig)) -> Vec<Option<f64>> {
    let runs: Vec<Vec<Option<f64>>> = (1..=7).map(|s| figures_with(s, &tweak)).collect();
    (0..FIGURES.len())
        .map(|i| {
            let mut xs: Vec<f64> = runs.iter().filter_map(|r| r[i]).collect();
            xs.sort_by(f64::total_cmp);
            (xs.len() == runs.len()).then(|| xs[xs.len() / 2])
        })
        .collect()
}

#[test]
fn the_replay_reproduces_the_reported_figures_for_its_seed() {
    check("seed 1402", &figures(1402), 0.0);
}

#[test]
fn the_median_over_seven_seeds_reproduces_the_reported_figures() {
    check("median of seeds 1-7", &median_of_seven(|_| {}), 0.0);
}

#[test]
fn the_storm_does_not_hinge_on_the_network_delay() {
    let wan = DistSpec::LogNormal {
        median: Some(SimDuration::from_millis(30)),
        p99: Some(SimDuration::from_millis(100)),
        mu: None,
        sigma: None,
    };
    for (label, leg) in [("no network delay", None), ("30 ms each way", Some(wan))] {
        let medians = median_of_seven(|cfg| {
            cfg.network.pod_to_upstream = leg.clone();
            cfg.network.upstream_to_pod = leg.clone();
        });
        // Every range widened by a tenth of its bounds.
        check(&format!("median of seeds 1-7, {label}"), &medians, 0.1);
    }
}

/// Whether every figure of `values` is inside its range.
fn meets_all(values: &[Option<f64>]) -> bool {
    FIGURES
        .iter()
        .zip(values)
        .all(|(f, v)| v.is_some_and(|v| (f.low..=f.high).contains(&v)))
}

/// The calibrated replay (`stormsim calibrate
/// experiments/incidents/llm-api-1402.calibrate.yaml`, which fits the
/// unknowns to these figures on seeds 1-12): its medians meet every
/// figure, and as many single seeds as the fit reported do.
#[test]
fn the_calibrated_replay_meets_the_figures_on_the_median_and_on_its_seeds() {
    let file = "experiments/incidents/llm-api-1402.calibrated.yaml";
    let runs: Vec<Vec<Option<f64>>> = (1..=12).map(|s| figures_of(file, s, |_| {})).collect();
    let medians: Vec<Option<f64>> = (0..FIGURES.len())
        .map(|i| {
            let mut xs: Vec<f64> = runs.iter().filter_map(|r| r[i]).collect();
            xs.sort_by(f64::total_cmp);
            // The calibration's median: the mean of the middle two.
            (xs.len() == runs.len()).then(|| (xs[5] + xs[6]) / 2.0)
        })
        .collect();
    check("calibrated, median of seeds 1-12", &medians, 0.0);
    let met = runs.iter().filter(|r| meets_all(r)).count();
    assert!(
        met >= CALIBRATED_SEEDS_MET,
        "{met} of 12 seeds meet every figure, the fit reported {CALIBRATED_SEEDS_MET}"
    );
}

/// Seeds (of 1-12) on which the calibrated replay meets every figure, as
/// its calibration reported (the comment block of the calibrated file).
const CALIBRATED_SEEDS_MET: usize = 4;
