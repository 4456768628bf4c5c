//! `stormsim calibrate`: fits an experiment's unknown parameters to the
//! figures an incident reported.
//!
//! The search: a Latin hypercube over the unknowns' ranges (the space
//! filled evenly, every range cut into as many strata as points), then a
//! derivative-free optimiser from argmin (Nelder–Mead, restarted with a
//! smaller simplex from the best point so far whenever it converges, or a
//! particle swarm) over the unit cube the unknowns are mapped to. Each
//! candidate is judged on the same seeds (common random numbers: two
//! candidates differ by their parameters alone), its seeds run in
//! parallel. The loss a candidate scores:
//!
//! ```text
//! loss = Σ_figures outside(median over seeds)        the medians must fit
//!      + mean over seeds of Σ_figures outside(value)  and each seed, as far as it can
//!      + 1 − share of seeds meeting every figure       and as many seeds as can,
//!      + 1 − mean over seeds of Π_figures σ(margin / 0.05)   with room to spare
//! ```
//!
//! where `outside` is the distance outside the accepted range in units of
//! its width, `margin` the distance inside it from the nearer end
//! (`evaluate.rs`) and σ the logistic: the last term is a smooth share of
//! the seeds that meet every figure, which gives the optimiser a slope
//! where the share itself is a step. Candidates are ranked by: medians inside
//! every range, then seeds meeting every figure, then loss.
//!
//! Everything is a function of the file and its seed: the start, the
//! optimiser's steps and its generator; the evaluations are kept as a
//! dataset, so a killed search resumes by replaying its steps against the
//! table and runs only what is missing. A `budget.time` is the one
//! exception: where it stops depends on the machine, so a result cut by
//! time says so.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use argmin::core::{CostFunction, Error as ArgminError, Executor};
use argmin::solver::neldermead::NelderMead;
use argmin::solver::particleswarm::ParticleSwarm;
use polars::prelude::*;
use rand_core::Rng;
use serde::{Deserialize, Serialize};
use sim_core::rng::RngStreams;
use sim_core::time::SimDuration;
use sim_models::world::Checks;
use yaml_serde::Value;

use crate::dataset::{SearchLock, Writer};
use crate::error::Failure;
use crate::evaluate::{Observed, ObservedSpec, Running, SeedsSpec, Store, numeric};
use crate::load::{Experiment, InputError, InputErrors, InputLimits};
use crate::output::write_parquet;
use crate::runner::{DatasetKind, claim_output, hash_of};
use crate::stats::{mean_ci_at_least_zero, median};
use crate::sweep::{Cell, canonical, cell_world_at, readable, set_path};

/// How an unknown's range is spread over the search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Evenly.
    #[default]
    Linear,
    /// Evenly in the logarithm (ranges over orders of magnitude).
    Log,
}

/// One unknown as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnknownSpec {
    /// Its field path (`upstream.max_connections`, `timeline[0].pulse.for`).
    pub path: String,
    /// Its range, both ends included: numbers, or durations (`30s`).
    #[serde(default)]
    pub range: Option<[Value; 2]>,
    /// Linear or log.
    #[serde(default)]
    pub scale: Scale,
    /// Whole numbers only.
    #[serde(default)]
    pub integer: bool,
    /// Instead of a range: the values it may take (mechanism choices).
    #[serde(default)]
    pub choices: Option<Vec<Value>>,
}

/// The search's optimiser.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimiser {
    /// argmin's Nelder–Mead, restarted from the best point when it
    /// converges.
    #[default]
    NelderMead,
    /// argmin's particle swarm.
    ParticleSwarm,
}

/// When the search stops.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Candidates judged at most (each on every seed).
    #[serde(default = "default_evaluations")]
    pub evaluations: u32,
    /// Wall-clock time at most (the result then depends on the machine).
    #[serde(default)]
    pub time: Option<SimDuration>,
}

fn default_evaluations() -> u32 {
    200
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            evaluations: default_evaluations(),
            time: None,
        }
    }
}

/// `calibrate:` in an experiment file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrateSpec {
    /// The parameters to fit.
    pub unknowns: Vec<UnknownSpec>,
    /// What the incident showed.
    pub observed: Vec<ObservedSpec>,
    /// Seeds each candidate is judged on (a count, or a list).
    #[serde(default = "default_seeds")]
    pub seeds: SeedsSpec,
    /// When to stop.
    #[serde(default)]
    pub budget: Budget,
    /// The optimiser after the space-filling start.
    #[serde(default)]
    pub optimiser: Optimiser,
    /// Points of the space-filling start (default: 4 per unknown, at
    /// least 8).
    #[serde(default)]
    pub start: Option<u32>,
}

fn default_seeds() -> SeedsSpec {
    SeedsSpec::Count(5)
}

/// An unknown, checked.
#[derive(Clone, Debug, PartialEq)]
enum Unknown {
    /// A number or duration in a range.
    Range {
        path: String,
        low: f64,
        high: f64,
        log: bool,
        integer: bool,
        /// Written as durations (values in seconds here).
        duration: bool,
    },
    /// One of these values.
    Choice { path: String, values: Vec<Value> },
}

impl Unknown {
    fn path(&self) -> &str {
        match self {
            Unknown::Range { path, .. } | Unknown::Choice { path, .. } => path,
        }
    }

    /// The value at `u` in [0, 1].
    fn value(&self, u: f64) -> Value {
        let u = u.clamp(0.0, 1.0);
        match self {
            Unknown::Choice { values, .. } => {
                let i = ((u * values.len() as f64) as usize).min(values.len() - 1);
                values[i].clone()
            }
            Unknown::Range {
                low,
                high,
                log,
                integer,
                duration,
                ..
            } => {
                let x = if *log {
                    (low.ln() + u * (high.ln() - low.ln())).exp()
                } else {
                    low + u * (high - low)
                };
                self.number(x.clamp(*low, *high), *integer, *duration)
            }
        }
    }

    /// `x` as this unknown writes it: a whole number, a duration with 4
    /// significant digits (whole seconds when `integer`), or a number with
    /// 6 significant digits (so a fitted
    /// file reads cleanly and the same candidate has one key).
    fn number(&self, x: f64, integer: bool, duration: bool) -> Value {
        if duration {
            let ns = if integer {
                x.round().max(0.0) * 1e9
            } else {
                let ns = (x * 1e9).max(0.0);
                let p = 10f64.powi((ns.max(1.0).log10().floor() as i32 - 3).max(0));
                (ns / p).round() * p
            };
            return Value::from(SimDuration::from_nanos(ns as u64).to_string());
        }
        if integer {
            return Value::from(x.round() as i64);
        }
        let digits = 6 - (x.abs().max(1e-300).log10().floor() as i32 + 1);
        let p = 10f64.powi(digits.clamp(-12, 15));
        Value::from((x * p).round() / p)
    }

    /// `value` moved by `factor` (sensitivity), kept inside the range.
    fn scaled(&self, value: &Value, factor: f64) -> Option<Value> {
        let Unknown::Range {
            low,
            high,
            integer,
            duration,
            ..
        } = self
        else {
            return None;
        };
        let x = numeric(value)?;
        let mut y = (x * factor).clamp(*low, *high);
        if *integer && !*duration && y.round() == x.round() {
            // At least one whole step, up or down with the factor.
            let step = if factor > 1.0 { 1.0 } else { -1.0 };
            y = (x + step).clamp(*low, *high);
        }
        let v = self.number(y, *integer, *duration);
        (v != *value).then_some(v)
    }

    fn describe(&self) -> String {
        match self {
            Unknown::Choice { values, .. } => format!(
                "one of {}",
                values.iter().map(readable).collect::<Vec<_>>().join(" | ")
            ),
            Unknown::Range {
                low,
                high,
                log,
                integer,
                duration,
                ..
            } => {
                let show = |x: f64| {
                    if *duration {
                        SimDuration::from_secs_f64(x).to_string()
                    } else {
                        format!("{x}")
                    }
                };
                format!(
                    "[{}, {}]{}{}",
                    show(*low),
                    show(*high),
                    if *log { " log" } else { "" },
                    if *integer { " integer" } else { "" }
                )
            }
        }
    }
}

/// A calibrate spec, checked.
struct Checked {
    spec: CalibrateSpec,
    unknowns: Vec<Unknown>,
    observed: Vec<Observed>,
    seeds: Vec<u64>,
    start: usize,
}

fn check(
    exp: &Experiment,
    spec: &CalibrateSpec,
    limits: &InputLimits,
) -> Result<Checked, InputErrors> {
    let mut errors: Vec<InputError> = Vec::new();
    let mut err = |path: String, m: String| errors.push(exp.error_at(&path, m));
    if spec.unknowns.is_empty() {
        err(
            "calibrate.unknowns".into(),
            "list at least one unknown".into(),
        );
    }
    if spec.observed.is_empty() {
        err(
            "calibrate.observed".into(),
            "list at least one observed figure".into(),
        );
    }
    let mut unknowns = Vec::new();
    for (i, u) in spec.unknowns.iter().enumerate() {
        let at = |f: &str| format!("calibrate.unknowns[{i}].{f}");
        if spec.unknowns[..i].iter().any(|o| o.path == u.path) {
            err(at("path"), format!("{:?} is listed twice", u.path));
            continue;
        }
        match (&u.range, &u.choices) {
            (Some([lo, hi]), None) => {
                let duration = matches!(lo, Value::String(_));
                let (Some(low), Some(high)) = (numeric(lo), numeric(hi)) else {
                    err(
                        at("range"),
                        "a range is two numbers, or two durations with units (`30s`)".into(),
                    );
                    continue;
                };
                if duration != matches!(hi, Value::String(_)) {
                    err(
                        at("range"),
                        "both ends are numbers, or both durations".into(),
                    );
                    continue;
                }
                if !(low.is_finite() && high.is_finite() && low < high) {
                    err(
                        at("range"),
                        format!("the range [{low}, {high}] must have low < high, both finite"),
                    );
                    continue;
                }
                if u.scale == Scale::Log && low <= 0.0 {
                    err(
                        at("scale"),
                        format!("a log scale needs a range above 0, found low = {low}"),
                    );
                    continue;
                }
                unknowns.push(Unknown::Range {
                    path: u.path.clone(),
                    low,
                    high,
                    log: u.scale == Scale::Log,
                    integer: u.integer,
                    duration,
                });
            }
            (None, Some(values)) if values.len() >= 2 => {
                if u.integer || u.scale == Scale::Log {
                    err(
                        at("choices"),
                        "choices take neither `integer` nor `scale`".into(),
                    );
                    continue;
                }
                unknowns.push(Unknown::Choice {
                    path: u.path.clone(),
                    values: values.clone(),
                });
            }
            (None, Some(_)) => err(at("choices"), "give at least two choices".into()),
            _ => err(
                at("range"),
                "give either `range: [low, high]` or `choices: [...]`".into(),
            ),
        }
    }
    let mut observed = Vec::new();
    for (i, o) in spec.observed.iter().enumerate() {
        match o.check(exp) {
            Ok(o) => {
                if observed.iter().any(|x: &Observed| x.name == o.name) {
                    err(
                        format!("calibrate.observed[{i}].name"),
                        format!("{:?} is observed twice: give one a `name`", o.name),
                    );
                }
                observed.push(o);
            }
            Err((f, m)) => err(format!("calibrate.observed[{i}].{f}"), m),
        }
    }
    let seeds = match spec.seeds.seeds(exp.world.seed, limits) {
        Ok(s) => s,
        Err(m) => {
            err("calibrate.seeds".into(), m);
            Vec::new()
        }
    };
    if spec.budget.evaluations == 0 {
        err(
            "calibrate.budget.evaluations".into(),
            "must be at least 1".into(),
        );
    }
    if spec.budget.time.is_some_and(|t| t.is_zero()) {
        err(
            "calibrate.budget.time".into(),
            "must be longer than 0s (or left out: no time limit)".into(),
        );
    }
    let start = spec
        .start
        .map_or((4 * unknowns.len()).max(8), |s| s as usize);
    if start == 0 {
        err("calibrate.start".into(), "must be at least 1".into());
    }
    if !errors.is_empty() {
        return Err(InputErrors(errors));
    }
    // The budget and the sensitivity runs, on every seed.
    let runs = (u64::from(spec.budget.evaluations) + 2 * unknowns.len() as u64)
        .saturating_mul(seeds.len() as u64);
    crate::evaluate::check_runs(exp, runs, limits, "calibrate.budget.evaluations")
        .map_err(|e| InputErrors(vec![e]))?;
    // Both corners of the box must be valid worlds, within the work limits.
    for u in [0.0, 1.0] {
        let cell = Cell {
            index: 0,
            id: String::new(),
            params: unknowns
                .iter()
                .map(|k| (k.path().to_string(), k.value(u)))
                .collect(),
            replication: 0,
            seed: exp.world.seed,
            labels: Vec::new(),
        };
        let world = cell_world_at(exp, &cell, |path| {
            unknowns
                .iter()
                .position(|k| k.path() == path)
                .map_or("calibrate.unknowns".to_string(), |i| {
                    format!("calibrate.unknowns[{i}]")
                })
        })
        .map_err(|e| InputErrors(vec![e]))?;
        crate::load::check_work(&world, limits).map_err(|(p, m)| {
            InputErrors(vec![exp.error_at(
                "calibrate.unknowns",
                format!(
                    "with every unknown at the {} end of its range: {p}: {m}",
                    if u == 0.0 { "low" } else { "high" }
                ),
            )])
        })?;
    }
    Ok(Checked {
        spec: spec.clone(),
        unknowns,
        observed,
        seeds,
        start,
    })
}

/// The width, in range units, of the logistic that counts a seed inside
/// a range smoothly (module docs).
const SOFT_WIDTH: f64 = 0.05;

/// Checks the file's `calibrate:` section (for `validate`) and describes
/// the search it asks for (for `explain`): one line each.
pub fn plan(exp: &Experiment, limits: &InputLimits) -> Result<Vec<String>, InputErrors> {
    let Some(spec) = &exp.calibrate else {
        return Ok(Vec::new());
    };
    let c = check(exp, spec, limits)?;
    let mut lines = vec![format!(
        "calibrate: {} unknowns against {} observed figures; {} candidates at most ({} from a Latin hypercube, then {}), each on {} seeds: {} runs, plus {} for the sensitivity",
        c.unknowns.len(),
        c.observed.len(),
        c.spec.budget.evaluations,
        c.start,
        match c.spec.optimiser {
            Optimiser::NelderMead => "Nelder–Mead",
            Optimiser::ParticleSwarm => "a particle swarm",
        },
        c.seeds.len(),
        u64::from(c.spec.budget.evaluations) * c.seeds.len() as u64,
        2 * c.unknowns.len() * c.seeds.len(),
    )];
    for u in &c.unknowns {
        lines.push(format!("  unknown {}: {}", u.path(), u.describe()));
    }
    for o in &c.observed {
        lines.push(format!("  observed {}: {}", o.name, o.range_text()));
    }
    Ok(lines)
}

/// A candidate judged on every seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Its order of evaluation.
    pub index: usize,
    /// Its point in the unit cube.
    pub x: Vec<f64>,
    /// The unknowns' values, in order.
    pub values: Vec<Value>,
    /// Each seed's figures, seed by seed.
    pub per_seed: Vec<Vec<Option<f64>>>,
    /// Each figure's median over seeds.
    pub medians: Vec<Option<f64>>,
    /// The medians are inside every range.
    pub median_met: bool,
    /// Seeds whose every figure is inside its range.
    pub seeds_met: usize,
    /// The loss (module docs).
    pub loss: f64,
}

fn judge(
    observed: &[Observed],
    per_seed: Vec<Vec<Option<f64>>>,
) -> (Vec<Option<f64>>, bool, usize, f64) {
    let n = per_seed.len().max(1) as f64;
    let medians: Vec<Option<f64>> = (0..observed.len())
        .map(|i| {
            let xs: Vec<f64> = per_seed.iter().filter_map(|s| s[i]).collect();
            // A figure missing on most seeds has no median.
            if xs.len() * 2 > per_seed.len() {
                median(&xs)
            } else {
                None
            }
        })
        .collect();
    let median_loss: f64 = observed
        .iter()
        .zip(&medians)
        .map(|(o, m)| o.outside(*m))
        .sum();
    let median_met = observed.iter().zip(&medians).all(|(o, m)| o.met(*m));
    let seed_losses: Vec<f64> = per_seed
        .iter()
        .map(|s| observed.iter().zip(s).map(|(o, v)| o.outside(*v)).sum())
        .collect();
    let seeds_met = per_seed
        .iter()
        .filter(|s| observed.iter().zip(s.iter()).all(|(o, v)| o.met(*v)))
        .count();
    // A smooth count of the seeds inside every range: each figure's margin
    // through a logistic of width SOFT_WIDTH, multiplied over figures, so a
    // seed on a bound counts half and one well inside counts one (the
    // optimiser needs a slope, not a step).
    let soft_met: f64 = per_seed
        .iter()
        .map(|s| {
            observed
                .iter()
                .zip(s)
                .map(|(o, v)| 1.0 / (1.0 + (-o.margin(*v) / SOFT_WIDTH).exp()))
                .product::<f64>()
        })
        .sum::<f64>()
        / n;
    let loss = median_loss
        + seed_losses.iter().sum::<f64>() / n
        + (1.0 - seeds_met as f64 / n)
        + (1.0 - soft_met);
    (medians, median_met, seeds_met, loss)
}

/// The ranking's order: medians inside, then seeds meeting everything,
/// then loss, then the earlier candidate.
/// The loss every candidate shares, when they all share one (and there
/// are several): the figures did not move anywhere in the box, and the
/// optimiser's "converged" means only that.
pub fn flat_loss(fit: &Fit) -> Option<f64> {
    let first = fit.candidates.first()?.loss;
    (fit.candidates.len() > 1 && fit.candidates.iter().all(|c| c.loss == first)).then_some(first)
}

fn better(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.median_met
        .cmp(&a.median_met)
        .then(b.seeds_met.cmp(&a.seeds_met))
        .then(a.loss.total_cmp(&b.loss))
        .then(a.index.cmp(&b.index))
}

/// Why the search stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Every candidate of the budget was judged.
    Budget,
    /// The time budget ran out (machine-dependent).
    Time,
    /// The optimiser converged before the budget was spent.
    Converged,
}

/// The search's state, shared with the optimiser through `&self`.
struct Search<'s, 'a> {
    store: Mutex<&'s mut Store<'a>>,
    c: &'s Checked,
    candidates: Mutex<Vec<Candidate>>,
    stop: Mutex<Option<Stop>>,
    failure: Mutex<Option<Failure>>,
    started: Stopwatch,
}

/// The user's wall clock, for the time budget and the time a search took:
/// never read by a simulation, and never written to a result.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::disallowed_types)]
pub struct Stopwatch(std::time::Instant);

impl Stopwatch {
    /// Starts now.
    #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
    pub fn start() -> Stopwatch {
        Stopwatch(std::time::Instant::now())
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> SimDuration {
        SimDuration::from_nanos(self.0.elapsed().as_nanos() as u64)
    }
}

/// What `ask` found for one point.
enum Answer {
    Loss(f64),
    OverBudget,
}

impl Search<'_, '_> {
    fn values(&self, x: &[f64]) -> Vec<Value> {
        self.c
            .unknowns
            .iter()
            .zip(x)
            .map(|(u, &v)| u.value(v))
            .collect()
    }

    fn out_of_time(&self) -> bool {
        self.c
            .spec
            .budget
            .time
            .is_some_and(|t| self.started.elapsed() >= t)
    }

    /// Judges the points `xs` (clamped into the cube) as one batch: a
    /// point whose values were judged before is not run again; new ones
    /// beyond the budget are not run at all.
    fn ask(&self, xs: &[Vec<f64>]) -> Result<Vec<Answer>, Failure> {
        let budget = self.c.spec.budget.evaluations as usize;
        let clamped: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| x.iter().map(|v| v.clamp(0.0, 1.0)).collect())
            .collect();
        let values: Vec<Vec<Value>> = clamped.iter().map(|x| self.values(x)).collect();
        let mut cands = self.candidates.lock().expect("no panics while held");
        let mut fresh: Vec<usize> = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let known =
                cands.iter().any(|c| &c.values == v) || fresh.iter().any(|&j| &values[j] == v);
            if !known && cands.len() + fresh.len() < budget {
                fresh.push(i);
            }
        }
        // After a failed run, nothing more runs (the failure is reported).
        if self.failure.lock().expect("no panics while held").is_some() {
            fresh.clear();
        }
        if !fresh.is_empty() && self.out_of_time() {
            *self.stop.lock().expect("no panics while held") = Some(Stop::Time);
            fresh.clear();
        }
        let jobs: Vec<(Vec<Value>, u64)> = fresh
            .iter()
            .flat_map(|&i| {
                let v = &values[i];
                self.c.seeds.iter().map(move |&s| (v.clone(), s))
            })
            .collect();
        let figures = {
            let mut store = self.store.lock().expect("no panics while held");
            let f = store.batch(&jobs)?;
            if let Some(best) = cands.iter().min_by(|a, b| better(a, b)) {
                store.say(format!(
                    "best: {}/{} seeds, loss {:.3}",
                    best.seeds_met,
                    self.c.seeds.len(),
                    best.loss
                ));
            }
            f
        };
        let per = self.c.seeds.len();
        for (k, &i) in fresh.iter().enumerate() {
            let per_seed = figures[k * per..(k + 1) * per].to_vec();
            let (medians, median_met, seeds_met, loss) = judge(&self.c.observed, per_seed.clone());
            let index = cands.len();
            cands.push(Candidate {
                index,
                x: clamped[i].clone(),
                values: values[i].clone(),
                per_seed,
                medians,
                median_met,
                seeds_met,
                loss,
            });
        }
        Ok(xs
            .iter()
            .zip(&values)
            .map(|(x, v)| match cands.iter().find(|c| &c.values == v) {
                Some(c) => {
                    // Outside the cube: the clamped point's loss, plus the
                    // distance, so the optimiser turns back.
                    let out: f64 = x.iter().map(|v| (v - v.clamp(0.0, 1.0)).abs()).sum();
                    Answer::Loss(c.loss + out)
                }
                None => Answer::OverBudget,
            })
            .collect())
    }

    fn best(&self) -> Option<Candidate> {
        self.candidates
            .lock()
            .expect("no panics while held")
            .iter()
            .min_by(|a, b| better(a, b))
            .cloned()
    }

    fn spent(&self) -> bool {
        self.stop.lock().expect("no panics while held").is_some()
    }
}

/// The problem argmin holds: the search, borrowed.
struct Problem<'x, 's, 'a>(&'x Search<'s, 'a>);

/// The cost argmin minimises: one batch per call (a swarm's generation
/// at once).
impl CostFunction for Problem<'_, '_, '_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, x: &Vec<f64>) -> Result<f64, ArgminError> {
        self.bulk_cost(std::slice::from_ref(x))
            .map(|v| v.first().copied().unwrap_or(f64::INFINITY))
    }

    fn bulk_cost<P>(&self, params: &[P]) -> Result<Vec<f64>, ArgminError>
    where
        P: std::borrow::Borrow<Vec<f64>> + argmin::core::SyncAlias,
        f64: argmin::core::SendAlias,
        Self: argmin::core::SyncAlias,
    {
        // argmin unwraps some cost calls (Nelder–Mead's first simplex), so
        // the cost never fails: a point the search will not run (the
        // budget is spent, or a run failed) costs infinity, and the
        // executor winds down on answers it already has.
        let search = self.0;
        let xs: Vec<Vec<f64>> = params.iter().map(|p| p.borrow().clone()).collect();
        match search.ask(&xs) {
            Ok(answers) => Ok(answers
                .into_iter()
                .map(|a| match a {
                    Answer::Loss(l) => l,
                    Answer::OverBudget => {
                        let mut stop = search.stop.lock().expect("no panics while held");
                        stop.get_or_insert(Stop::Budget);
                        f64::INFINITY
                    }
                })
                .collect()),
            Err(f) => {
                *search.failure.lock().expect("no panics while held") = Some(f);
                Ok(vec![f64::INFINITY; xs.len()])
            }
        }
    }
}

/// A Latin hypercube of `n` points in `d` dimensions: each dimension cut
/// into `n` strata, one point in each, strata paired at random.
fn latin_hypercube(n: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = RngStreams::new(seed).stream("calibrate/start");
    let unit =
        |rng: &mut sim_core::rng::SimRng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut points = vec![vec![0.0; d]; n];
    for j in 0..d {
        let mut strata: Vec<usize> = (0..n).collect();
        // Fisher–Yates.
        for i in (1..n).rev() {
            let k = (rng.next_u64() % (i as u64 + 1)) as usize;
            strata.swap(i, k);
        }
        for (i, p) in points.iter_mut().enumerate() {
            p[j] = (strata[i] as f64 + unit(&mut rng)) / n as f64;
        }
    }
    points
}

/// What a calibration found.
#[derive(Clone, Debug)]
pub struct Fit {
    /// Every candidate, in order of evaluation.
    pub candidates: Vec<Candidate>,
    /// The best, by the ranking's order.
    pub best: Candidate,
    /// Why it stopped.
    pub stop: Stop,
    /// Each unknown's path.
    pub paths: Vec<String>,
    /// Each observed figure.
    pub observed: Vec<Observed>,
    /// The seeds.
    pub seeds: Vec<u64>,
    /// Sensitivity: (unknown, factor, medians), the best's values with one
    /// unknown moved.
    pub sensitivity: Vec<(usize, f64, Vec<Option<f64>>)>,
    /// Where the calibrated file was written.
    pub written: PathBuf,
    /// Runs made by this process, and events simulated.
    pub ran: u64,
    /// Events simulated by this process.
    pub events: u64,
    /// Evaluations found in the table from an earlier run of the search.
    pub read_back: usize,
    /// Wall-clock time the search took (for people; in no result).
    pub elapsed: SimDuration,
}

/// How `calibrate` runs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The dataset folder.
    pub out: PathBuf,
    /// Worker threads.
    pub threads: Option<usize>,
    /// Replace another experiment's results in `out`.
    pub force: bool,
    /// No progress bar.
    pub quiet: bool,
    /// Per-event invariant checks.
    pub checks: Checks,
    /// Where to write the calibrated file (default: beside the input).
    pub write: Option<PathBuf>,
    /// The input limits (`--max-cells` bounds the runs, `--max-requests`
    /// each run).
    pub limits: InputLimits,
}

/// The calibrated file's default path: `x.calibrate.yaml` →
/// `x.calibrated.yaml`, `x.yaml` → `x.calibrated.yaml`.
pub fn calibrated_path(input: &Path) -> PathBuf {
    let stem = input
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "experiment".into());
    let stem = stem.strip_suffix(".calibrate").unwrap_or(&stem).to_string();
    input.with_file_name(format!("{stem}.calibrated.yaml"))
}

/// Runs the calibration (resuming from `opts.out`) and writes its tables
/// and the calibrated file.
pub fn calibrate(exp: &Experiment, opts: &Options) -> Result<Fit, Failure> {
    let spec = exp.calibrate.as_ref().ok_or_else(|| {
        Failure::Input(format!(
            "{} has no `calibrate:` section (see experiments/README.md, \"Fitting an incident\")",
            exp.path.display()
        ))
    })?;
    let c = check(exp, spec, &opts.limits).map_err(|e| Failure::Input(e.to_string()))?;
    let out = &opts.out;
    crate::dataset::create_dir(out).map_err(Failure::Input)?;
    let _lock = SearchLock::try_acquire(out, "calibrate").map_err(Failure::Input)?;
    // The evaluations stay valid while the world, the figures and the
    // seeds do: a larger budget or another optimiser resumes on them.
    let paths: Vec<String> = c.unknowns.iter().map(|u| u.path().to_string()).collect();
    let identity = hash_of(&(
        &exp.world_value,
        &exp.outputs,
        &exp.objective,
        &paths,
        &c.spec.observed,
    ));
    claim_output(exp, &[], DatasetKind::Calibrate, &identity, out, opts.force)?;
    let mut store = Store::open(
        exp,
        out,
        paths.clone(),
        c.observed.clone(),
        Running {
            threads: opts.threads,
            checks: opts.checks,
            quiet: opts.quiet,
            force: opts.force,
        },
    )?;
    let budget = c.spec.budget.evaluations as u64;
    let sens_runs = 2 * c.unknowns.len() as u64;
    store.expect_runs((budget + sens_runs) * c.seeds.len() as u64);
    let search = Search {
        store: Mutex::new(&mut store),
        c: &c,
        candidates: Mutex::new(Vec::new()),
        stop: Mutex::new(None),
        failure: Mutex::new(None),
        started: Stopwatch::start(),
    };
    let d = c.unknowns.len();
    let start = latin_hypercube(c.start, d, exp.world.seed);
    search.ask(&start)?;
    if !search.spent()
        && search
            .candidates
            .lock()
            .expect("no panics while held")
            .len()
            < budget as usize
    {
        match c.spec.optimiser {
            Optimiser::NelderMead => nelder_mead(&search, d)?,
            Optimiser::ParticleSwarm => particle_swarm(&search, d, exp.world.seed)?,
        }
    }
    if let Some(f) = search.failure.lock().expect("no panics while held").take() {
        return Err(f);
    }
    let stop = search
        .stop
        .lock()
        .expect("no panics while held")
        .unwrap_or(Stop::Converged);
    let best = search
        .best()
        .ok_or_else(|| Failure::Run("no candidate was judged".into()))?;
    let started = search.started;
    let candidates = search
        .candidates
        .into_inner()
        .expect("no panics while held");
    // Sensitivity: each range unknown ±10 % from the best, same seeds.
    let mut asks: Vec<(usize, f64, Vec<Value>)> = Vec::new();
    for (j, u) in c.unknowns.iter().enumerate() {
        for f in [0.9, 1.1] {
            if let Some(v) = u.scaled(&best.values[j], f) {
                let mut values = best.values.clone();
                values[j] = v;
                asks.push((j, f, values));
            }
        }
    }
    let jobs: Vec<(Vec<Value>, u64)> = asks
        .iter()
        .flat_map(|(_, _, v)| c.seeds.iter().map(move |&s| (v.clone(), s)))
        .collect();
    let figures = store.batch(&jobs)?;
    store.finish();
    let per = c.seeds.len();
    let sensitivity = asks
        .iter()
        .enumerate()
        .map(|(k, (j, f, _))| {
            let (medians, ..) = judge(&c.observed, figures[k * per..(k + 1) * per].to_vec());
            (*j, *f, medians)
        })
        .collect();
    let search_time = started.elapsed();
    let written = opts
        .write
        .clone()
        .unwrap_or_else(|| calibrated_path(&exp.path));
    let fit = Fit {
        candidates,
        best,
        stop,
        paths,
        observed: c.observed.clone(),
        seeds: c.seeds.clone(),
        sensitivity,
        written,
        ran: store.ran,
        events: store.events,
        read_back: store.read_back,
        elapsed: search_time,
    };
    write_tables(exp, out, &fit, &c)?;
    write_calibrated(exp, &fit, &c, out)?;
    write_report(&exp.name, out, &fit)?;
    Ok(fit)
}

/// Nelder–Mead from the best point so far; when it converges, again from
/// the best point of the same basin with half the simplex; when the
/// simplex is tiny, from the best candidate far from every start so far
/// (another basin the space-filling start found). Until the budget is
/// spent or no basin is left.
fn nelder_mead(search: &Search, d: usize) -> Result<(), Failure> {
    // Max-norm distance in the cube.
    let far = |a: &[f64], b: &[f64]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
    };
    let ranked = || {
        let mut c = search
            .candidates
            .lock()
            .expect("no panics while held")
            .clone();
        c.sort_by(better);
        c
    };
    let Some(first) = search.best() else {
        return Ok(());
    };
    let mut starts = vec![first.x.clone()];
    let mut origin = first.x;
    let mut step = 0.25;
    let mut last_loss = f64::INFINITY;
    while !search.spent() {
        if step <= 0.004 {
            let next = ranked()
                .into_iter()
                .find(|c| starts.iter().all(|s| far(&c.x, s) > BASIN));
            let Some(next) = next else {
                break;
            };
            origin = next.x.clone();
            starts.push(next.x);
            step = 0.25;
            last_loss = f64::INFINITY;
        }
        let Some(from) = ranked().into_iter().find(|c| far(&c.x, &origin) <= BASIN) else {
            break;
        };
        let mut simplex = vec![from.x.clone()];
        for j in 0..d {
            let mut p = from.x.clone();
            p[j] = if p[j] + step <= 1.0 {
                p[j] + step
            } else {
                p[j] - step
            };
            simplex.push(p);
        }
        let solver = NelderMead::new(simplex)
            .with_sd_tolerance(1e-3)
            .map_err(|e| Failure::Run(e.to_string()))?;
        let result = Executor::new(Problem(search), solver)
            .configure(|s| s.max_iters(50 * (d as u64 + 1)))
            .run();
        if search
            .failure
            .lock()
            .expect("no panics while held")
            .is_some()
        {
            return Ok(());
        }
        if let Err(e) = result
            && !search.spent()
        {
            return Err(Failure::Run(format!("the optimiser stopped: {e}")));
        }
        let now = ranked()
            .into_iter()
            .find(|c| far(&c.x, &origin) <= BASIN)
            .map_or(f64::INFINITY, |b| b.loss);
        if now < last_loss - 1e-9 {
            last_loss = now;
        } else {
            step /= 2.0;
        }
    }
    Ok(())
}

/// How far apart (max-norm, in the unit cube) two Nelder–Mead starts must
/// be to count as different basins.
const BASIN: f64 = 0.25;

/// argmin's particle swarm over the cube, seeded from the file's seed.
fn particle_swarm(search: &Search, d: usize, seed: u64) -> Result<(), Failure> {
    use rand_chacha09::ChaCha8Rng;
    use rand_chacha09::rand_core::SeedableRng;
    let particles = (4 * d).max(8);
    let solver = ParticleSwarm::new((vec![0.0; d], vec![1.0; d]), particles)
        .with_rng_generator(ChaCha8Rng::seed_from_u64(seed ^ 0x5053_4f00));
    let budget = search.c.spec.budget.evaluations as u64;
    let result = Executor::new(Problem(search), solver)
        .configure(|s| s.max_iters(budget))
        .run();
    if let Err(e) = result
        && !search.spent()
        && search
            .failure
            .lock()
            .expect("no panics while held")
            .is_none()
    {
        return Err(Failure::Run(format!("the optimiser stopped: {e}")));
    }
    Ok(())
}

fn show(v: Option<f64>) -> String {
    match v {
        None => "none".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// The ranked candidates, the best's figures (median, mean with its 95 %
/// interval, seeds inside, per seed), and the sensitivity table.
pub fn tables(fit: &Fit) -> String {
    let n = fit.seeds.len();
    let mut ranked: Vec<&Candidate> = fit.candidates.iter().collect();
    ranked.sort_by(|a, b| better(a, b));
    let mut s = String::from("best candidates:\n");
    s += &format!(
        "  {:>4}  {:>8}  {:>7}  {:>6}  {}\n",
        "rank", "loss", "seeds", "median", "values"
    );
    for (r, c) in ranked.iter().take(5).enumerate() {
        let values: Vec<String> = fit
            .paths
            .iter()
            .zip(&c.values)
            .map(|(p, v)| format!("{p} = {}", readable(v)))
            .collect();
        s += &format!(
            "  {:>4}  {:>8.3}  {:>7}  {:>6}  {}\n",
            r + 1,
            c.loss,
            format!("{}/{n}", c.seeds_met),
            if c.median_met { "meets" } else { "misses" },
            values.join(", ")
        );
    }
    let b = &fit.best;
    s += &format!(
        "\nthe best fit's figures ({} of {n} seeds meet every one):\n",
        b.seeds_met
    );
    // Columns as wide as their longest entry, so that long names and
    // paths do not push the figures out of line.
    let name_w = fit
        .observed
        .iter()
        .map(|o| o.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(28);
    s += &format!(
        "  {:<name_w$} {:>14} {:>10} {:>24} {:>7}  {}\n",
        "figure", "accepted", "median", "mean [95 % CI]", "seeds", "status"
    );
    for (i, o) in fit.observed.iter().enumerate() {
        let xs: Vec<f64> = b.per_seed.iter().filter_map(|p| p[i]).collect();
        let inside = b.per_seed.iter().filter(|p| o.met(p[i])).count();
        s += &format!(
            "  {:<name_w$} {:>14} {:>10} {:>24} {:>7}  {}\n",
            o.name,
            o.range_text(),
            show(b.medians[i]),
            mean_ci_at_least_zero(&xs).map_or("-".into(), |m| m.show(3)),
            format!("{inside}/{n}"),
            if o.met(b.medians[i]) { "ok" } else { "OUT" }
        );
    }
    // Each figure's column is as wide as its name (its values are short).
    let widths: Vec<usize> = fit
        .observed
        .iter()
        .map(|o| o.name.chars().count())
        .collect();
    s += "\nper seed (figure values; * outside its range):\n";
    s += &format!("  {:>20}", "seed");
    for (o, w) in fit.observed.iter().zip(&widths) {
        s += &format!(" {:>w$}", o.name, w = (*w).max(12));
    }
    s += "\n";
    for (k, seed) in fit.seeds.iter().enumerate() {
        s += &format!("  {seed:>20}");
        for ((i, o), w) in fit.observed.iter().enumerate().zip(&widths) {
            let v = b.per_seed[k][i];
            let mark = if o.met(v) { " " } else { "*" };
            s += &format!(" {:>w$}{mark}", show(v), w = (*w).max(12) - 1);
        }
        s += "\n";
    }
    if !fit.sensitivity.is_empty() {
        s += "\nsensitivity (medians with one unknown moved ±10 %, clamped to its range; change against the best):\n";
        let moved = |j: usize, f: f64| {
            let by = if f < 1.0 { "-10 %" } else { "+10 %" };
            format!("{} {by}", fit.paths[j])
        };
        let moved_w = fit
            .sensitivity
            .iter()
            .map(|(j, f, _)| moved(*j, *f).chars().count())
            .max()
            .unwrap_or(0)
            .max(36);
        s += &format!("  {:<moved_w$}", "moved");
        for (o, w) in fit.observed.iter().zip(&widths) {
            s += &format!(" {:>w$}", o.name, w = (*w).max(14));
        }
        s += "\n";
        for (j, f, medians) in &fit.sensitivity {
            s += &format!("  {:<moved_w$}", moved(*j, *f));
            for (i, m) in medians.iter().enumerate() {
                let cell = match (m, b.medians[i]) {
                    (Some(v), Some(base)) if base.abs() > 1e-12 => {
                        format!("{:+.0} %", (v / base - 1.0) * 100.0)
                    }
                    (Some(v), _) => show(Some(*v)),
                    (None, _) => "none".into(),
                };
                s += &format!(" {cell:>w$}", w = widths[i].max(14));
            }
            s += "\n";
        }
    }
    s
}

/// `OUT/report.html`: how the search converged (the best loss and the
/// most seeds meeting every figure, after each candidate) and the tables.
fn write_report(title: &str, out: &Path, fit: &Fit) -> Result<(), Failure> {
    let mut best_loss = Vec::new();
    let mut most_met = Vec::new();
    let (mut l, mut m) = (f64::INFINITY, 0usize);
    for c in &fit.candidates {
        l = l.min(c.loss);
        m = m.max(c.seeds_met);
        best_loss.push((c.index as f64 + 1.0, l));
        most_met.push((c.index as f64 + 1.0, m as f64));
    }
    let whole = |x: f64| format!("{x:.0}");
    let loss = crate::charts::lines_over(
        "Best loss so far",
        "candidates judged",
        "loss",
        &[crate::charts::Series {
            name: "best loss".into(),
            points: best_loss,
        }],
        &[],
        &whole,
    )
    .map_err(Failure::Run)?;
    let met = crate::charts::lines_over(
        &format!("Most seeds (of {}) meeting every figure", fit.seeds.len()),
        "candidates judged",
        "seeds",
        &[crate::charts::Series {
            name: "seeds meeting every figure".into(),
            points: most_met,
        }],
        &[],
        &whole,
    )
    .map_err(Failure::Run)?;
    let esc = crate::report::escape;
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}: calibration</title>\n<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}}pre{{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:.8em}}svg{{max-width:100%;height:auto}}</style></head><body>\n<h1>{t}: calibration</h1>\n<p>{n} candidates, each judged on {s} seeds; x axes: candidates in the order they were judged. The calibrated experiment: <code>{w}</code>.</p>\n<figure>{loss}</figure>\n<figure>{met}</figure>\n<pre>{tables}</pre>\n</body></html>\n",
        t = esc(title),
        n = fit.candidates.len(),
        s = fit.seeds.len(),
        w = esc(&fit.written.display().to_string()),
        tables = esc(&tables(fit)),
    );
    let writer = Writer::register(out).map_err(Failure::Run)?;
    writer
        .write_text(&out.join("report.html"), &html)
        .map_err(Failure::Run)
}

fn write_tables(exp: &Experiment, out: &Path, fit: &Fit, c: &Checked) -> Result<(), Failure> {
    let writer = Writer::register(out).map_err(Failure::Run)?;
    let meta = vec![
        (
            "stormsim.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        (
            "stormsim.build".to_string(),
            crate::runner::BUILD.to_string(),
        ),
        ("stormsim.experiment".to_string(), exp.name.clone()),
        ("stormsim.seeds".to_string(), format!("{:?}", c.seeds)),
    ];
    let pe = |e: PolarsError| Failure::Run(e.to_string());
    let cs = &fit.candidates;
    let mut cols = vec![
        Column::new(
            "candidate".into(),
            cs.iter().map(|x| x.index as u32).collect::<Vec<_>>(),
        ),
        Column::new(
            "key".into(),
            cs.iter()
                .map(|x| canonical(&Value::Sequence(x.values.clone())))
                .collect::<Vec<_>>(),
        ),
    ];
    for (j, p) in fit.paths.iter().enumerate() {
        let nums: Vec<Option<f64>> = cs.iter().map(|x| numeric(&x.values[j])).collect();
        if nums.iter().all(Option::is_some) {
            cols.push(Column::new(p.as_str().into(), nums));
        } else {
            cols.push(Column::new(
                p.as_str().into(),
                cs.iter()
                    .map(|x| canonical(&x.values[j]))
                    .collect::<Vec<_>>(),
            ));
        }
    }
    cols.push(Column::new(
        "loss".into(),
        cs.iter().map(|x| x.loss).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "seeds_met".into(),
        cs.iter().map(|x| x.seeds_met as u32).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "median_met".into(),
        cs.iter().map(|x| x.median_met).collect::<Vec<_>>(),
    ));
    for (i, o) in fit.observed.iter().enumerate() {
        cols.push(Column::new(
            format!("median:{}", o.name).as_str().into(),
            cs.iter().map(|x| x.medians[i]).collect::<Vec<_>>(),
        ));
    }
    let mut df = DataFrame::new(cs.len(), cols).map_err(pe)?;
    write_parquet(
        &out.join("calibrate").join("candidates.parquet"),
        &mut df,
        &meta,
        &writer,
    )
    .map_err(Failure::Run)?;
    let sn = &fit.sensitivity;
    let mut cols = vec![
        Column::new(
            "unknown".into(),
            sn.iter()
                .map(|(j, ..)| fit.paths[*j].clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "factor".into(),
            sn.iter().map(|(_, f, _)| *f).collect::<Vec<_>>(),
        ),
    ];
    for (i, o) in fit.observed.iter().enumerate() {
        cols.push(Column::new(
            format!("median:{}", o.name).as_str().into(),
            sn.iter().map(|(.., m)| m[i]).collect::<Vec<_>>(),
        ));
    }
    let mut df = DataFrame::new(sn.len(), cols).map_err(pe)?;
    write_parquet(
        &out.join("calibrate").join("sensitivity.parquet"),
        &mut df,
        &meta,
        &writer,
    )
    .map_err(Failure::Run)?;
    let about = About {
        title: exp.name.clone(),
        paths: fit.paths.clone(),
        observed: fit
            .observed
            .iter()
            .map(|o| {
                (
                    o.name.clone(),
                    o.low.is_finite().then_some(o.low),
                    o.high.is_finite().then_some(o.high),
                )
            })
            .collect(),
        seeds: fit.seeds.clone(),
        written: fit.written.clone(),
        stop: fit.stop,
    };
    let json = serde_json::to_string_pretty(&about).map_err(|e| Failure::Run(e.to_string()))?;
    writer
        .write_text(&out.join("calibrate").join("about.json"), &(json + "\n"))
        .map_err(Failure::Run)
}

/// What the report needs besides the tables, written beside them as
/// `calibrate/about.json` so `stormsim report DIR` redraws it from the
/// folder alone.
#[derive(Debug, Serialize, Deserialize)]
struct About {
    title: String,
    paths: Vec<String>,
    /// Each observed figure: name, low and high ends (none: unbounded).
    observed: Vec<(String, Option<f64>, Option<f64>)>,
    seeds: Vec<u64>,
    written: PathBuf,
    stop: Stop,
}

/// Redraws `dir/report.html` from a calibration's tables: every candidate
/// judged again from the evaluations table, exactly as the search did.
pub fn rerender(dir: &Path) -> Result<PathBuf, String> {
    let about_path = dir.join("calibrate").join("about.json");
    let about: About = serde_json::from_str(
        &std::fs::read_to_string(&about_path)
            .map_err(|e| crate::dataset::io_error("read", &about_path, e))?,
    )
    .map_err(|e| format!("{}: {e}", about_path.display()))?;
    let read = |path: PathBuf| -> Result<DataFrame, String> {
        let f =
            std::fs::File::open(&path).map_err(|e| crate::dataset::io_error("open", &path, e))?;
        ParquetReader::new(f)
            .finish()
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    let observed: Vec<Observed> = about
        .observed
        .iter()
        .map(|(name, low, high)| Observed {
            name: name.clone(),
            reading: crate::evaluate::Reading::Figure(name.clone()),
            low: low.unwrap_or(f64::NEG_INFINITY),
            high: high.unwrap_or(f64::INFINITY),
        })
        .collect();
    let evals = read(dir.join("evaluations").join("part-0.parquet"))?;
    let ekeys = crate::report::strings(&evals, "key")?;
    let eseeds = crate::evaluate::u64s(&evals, "seed")?;
    let figures: Vec<Vec<Option<f64>>> = observed
        .iter()
        .map(|o| crate::report::optional_floats(&evals, &format!("figure:{}", o.name)))
        .collect::<Result<_, _>>()?;
    let mut runs: std::collections::BTreeMap<(String, u64), Vec<Option<f64>>> =
        std::collections::BTreeMap::new();
    for (i, k) in ekeys.iter().enumerate() {
        runs.insert(
            (k.clone(), eseeds[i]),
            figures.iter().map(|c| c[i]).collect(),
        );
    }
    let cands = read(dir.join("calibrate").join("candidates.parquet"))?;
    let keys = crate::report::strings(&cands, "key")?;
    let mut candidates = Vec::new();
    for (index, k) in keys.iter().enumerate() {
        let values = match yaml_serde::from_str::<Value>(k) {
            Ok(Value::Sequence(v)) => v,
            _ => {
                return Err(format!(
                    "{}: a candidate key that is not a list",
                    dir.display()
                ));
            }
        };
        let per_seed: Vec<Vec<Option<f64>>> = about
            .seeds
            .iter()
            .map(|&s| {
                runs.get(&(k.clone(), s)).cloned().ok_or_else(|| {
                    format!(
                        "{}: candidate {index} has no run for seed {s}",
                        dir.display()
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let (medians, median_met, seeds_met, loss) = judge(&observed, per_seed.clone());
        candidates.push(Candidate {
            index,
            x: Vec::new(),
            values,
            per_seed,
            medians,
            median_met,
            seeds_met,
            loss,
        });
    }
    let best = candidates
        .iter()
        .min_by(|a, b| better(a, b))
        .cloned()
        .ok_or_else(|| format!("{}: no candidates", dir.display()))?;
    let sens = read(dir.join("calibrate").join("sensitivity.parquet"))?;
    let unknown = crate::report::strings(&sens, "unknown")?;
    let factor = crate::report::optional_floats(&sens, "factor")?;
    let medians: Vec<Vec<Option<f64>>> = observed
        .iter()
        .map(|o| crate::report::optional_floats(&sens, &format!("median:{}", o.name)))
        .collect::<Result<_, _>>()?;
    let sensitivity = (0..unknown.len())
        .map(|r| {
            let j = about
                .paths
                .iter()
                .position(|p| *p == unknown[r])
                .unwrap_or(0);
            (
                j,
                factor[r].unwrap_or(1.0),
                medians.iter().map(|c| c[r]).collect(),
            )
        })
        .collect();
    let fit = Fit {
        candidates,
        best,
        stop: about.stop,
        paths: about.paths,
        observed,
        seeds: about.seeds,
        sensitivity,
        written: about.written,
        ran: 0,
        events: 0,
        read_back: 0,
        elapsed: SimDuration::ZERO,
    };
    write_report(&about.title, dir, &fit).map_err(|f| match f {
        Failure::Input(m) | Failure::Run(m) => m,
    })?;
    Ok(dir.join("report.html"))
}

/// The calibrated experiment: the input's merged document with every
/// unknown set to its fitted value and the `calibrate:` section dropped,
/// behind a comment block that records the fit. Deterministic: the same
/// fit writes the same bytes.
fn calibrated_text(exp: &Experiment, fit: &Fit, c: &Checked) -> Result<String, String> {
    let mut doc = exp.document.clone();
    if let Value::Mapping(m) = &mut doc {
        m.remove("calibrate");
        m.remove("extends");
        m.insert(
            Value::from("name"),
            Value::from(format!("{} (calibrated)", exp.name)),
        );
    }
    for (p, v) in fit.paths.iter().zip(&fit.best.values) {
        set_path(&mut doc, p, v.clone())?;
    }
    let n = fit.seeds.len();
    let mut head = format!(
        "# Calibrated by `stormsim calibrate {}`: {} candidates judged on {n} seeds each ({}).\n",
        exp.path.display(),
        fit.candidates.len(),
        match fit.stop {
            Stop::Budget => "the evaluation budget",
            Stop::Time => "stopped by the time budget: another machine may stop elsewhere",
            Stop::Converged => "the optimiser converged",
        }
    );
    head += &format!(
        "# The best fit: loss {:.3}; medians {} every figure; {} of {n} seeds meet every figure.\n#\n# Unknowns (range searched -> fitted):\n",
        fit.best.loss,
        if fit.best.median_met {
            "meet"
        } else {
            "do not meet"
        },
        fit.best.seeds_met
    );
    for (u, v) in c.unknowns.iter().zip(&fit.best.values) {
        head += &format!("# - {}: {} -> {}\n", u.path(), u.describe(), readable(v));
    }
    head += "#\n# Figures (accepted range: median over the seeds):\n";
    for (i, o) in fit.observed.iter().enumerate() {
        head += &format!(
            "# - {}: {}: {}{}\n",
            o.name,
            o.range_text(),
            show(fit.best.medians[i]),
            if o.met(fit.best.medians[i]) {
                ""
            } else {
                "  (outside)"
            }
        );
    }
    head += &format!("# Seeds: {:?}\n\n", fit.seeds);
    let body = crate::load::to_string(&doc).map_err(|e| e.to_string())?;
    Ok(head + &body)
}

fn write_calibrated(exp: &Experiment, fit: &Fit, c: &Checked, out: &Path) -> Result<(), Failure> {
    let text = calibrated_text(exp, fit, c).map_err(Failure::Run)?;
    let writer = Writer::register(out).map_err(Failure::Run)?;
    writer
        .write_text(&out.join("calibrated.yaml"), &text)
        .map_err(Failure::Run)?;
    let dir = fit
        .written
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::dataset::create_dir(dir).map_err(Failure::Run)?;
    crate::dataset::write_file(&fit.written, &text).map_err(Failure::Run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_hypercube_puts_one_point_in_every_stratum() {
        let pts = latin_hypercube(10, 3, 7);
        for j in 0..3 {
            let mut strata: Vec<usize> = pts.iter().map(|p| (p[j] * 10.0) as usize).collect();
            strata.sort_unstable();
            assert_eq!(strata, (0..10).collect::<Vec<_>>());
        }
        assert_eq!(pts, latin_hypercube(10, 3, 7));
        assert_ne!(pts, latin_hypercube(10, 3, 8));
    }

    #[test]
    fn unknowns_map_the_cube_onto_their_ranges() {
        let log = Unknown::Range {
            path: "a".into(),
            low: 1.0,
            high: 100.0,
            log: true,
            integer: false,
            duration: false,
        };
        assert_eq!(log.value(0.5), Value::from(10.0));
        let dur = Unknown::Range {
            path: "b".into(),
            low: 30.0,
            high: 90.0,
            log: false,
            integer: false,
            duration: true,
        };
        assert_eq!(dur.value(0.5), Value::from("1m"));
        assert_eq!(dur.value(0.123_456), Value::from("37.41s"));
        let int = Unknown::Range {
            path: "c".into(),
            low: 200.0,
            high: 500.0,
            log: false,
            integer: true,
            duration: false,
        };
        assert_eq!(int.value(0.0), Value::from(200));
        assert_eq!(int.value(1.0), Value::from(500));
        assert_eq!(int.scaled(&Value::from(300), 1.1), Some(Value::from(330)));
        let choice = Unknown::Choice {
            path: "d".into(),
            values: vec![Value::from("x"), Value::from("y")],
        };
        assert_eq!(choice.value(0.49), Value::from("x"));
        assert_eq!(choice.value(1.0), Value::from("y"));
    }

    #[test]
    fn the_loss_is_zero_only_inside_every_range() {
        let o = Observed {
            name: "f".into(),
            reading: crate::evaluate::Reading::Figure("f".into()),
            low: 1.0,
            high: 2.0,
        };
        let inside = judge(
            std::slice::from_ref(&o),
            vec![vec![Some(1.5)], vec![Some(1.4)]],
        );
        // Well inside (margins of half and 0.4 of the range): no loss to speak of.
        assert!(inside.3 < 1e-3, "{inside:?}");
        assert!(inside.1 && inside.2 == 2);
        let edge = judge(
            std::slice::from_ref(&o),
            vec![vec![Some(1.0)], vec![Some(1.0)]],
        );
        // On the bound: met, but counted half.
        assert!(
            edge.1 && edge.2 == 2 && (edge.3 - 0.5).abs() < 1e-12,
            "{edge:?}"
        );
        let half = judge(
            std::slice::from_ref(&o),
            vec![vec![Some(1.5)], vec![Some(3.0)]],
        );
        // Median 2.25 is 0.25 ranges out; the seeds 0 and 1 range out; one
        // seed of two meets the figure, and counts (almost) one smoothly.
        assert!((half.3 - (0.25 + 0.5 + 0.5 + 0.5)).abs() < 1e-3, "{half:?}");
    }
}
