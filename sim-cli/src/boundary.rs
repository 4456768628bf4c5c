//! `stormsim boundary`: where a system tips into a storm.
//!
//! For each magnitude of a trigger, the duration at which the storm
//! probability over seeds crosses 50 %: found by bisection on the
//! duration, every point judged on the same seeds (common random numbers,
//! so neighbouring points differ by the trigger alone), each with its
//! Wilson interval. Midpoints are geometric (trigger lengths span orders
//! of magnitude), in whole milliseconds. Bisection spends its runs near the edge; the band
//! reported around the edge runs from the longest duration that surely
//! does not storm (the interval's upper end below 50 %) to the shortest
//! that surely does (its lower end above 50 %).

use std::path::Path;

use polars::prelude::*;
use serde::{Deserialize, Serialize};
use sim_core::time::SimDuration;
use sim_models::world::Checks;
use yaml_serde::Value;

use crate::dataset::{SearchLock, Writer};
use crate::error::Failure;
use crate::evaluate::{Observed, ObservedSpec, Running, SeedsSpec, Store};
use crate::load::{Experiment, InputErrors, InputLimits};
use crate::output::write_parquet;
use crate::runner::{DatasetKind, claim_output, hash_of};
use crate::stats::wilson;
use crate::sweep::{Cell, cell_world_at};

/// The magnitudes to try.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MagnitudeAxis {
    /// The field path of the trigger's size (`timeline[0].pulse.value`).
    pub path: String,
    /// The sizes, each a boundary point.
    pub values: Vec<f64>,
}

/// The durations searched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurationAxis {
    /// The field path of the trigger's length (`timeline[0].pulse.for`).
    pub path: String,
    /// Shortest duration tried.
    pub from: SimDuration,
    /// Longest duration tried.
    pub to: SimDuration,
}

/// What counts as a storm: a summary figure above (or below) a threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictSpec {
    /// The summary figure (default `metastable`: not recovered within
    /// `outputs.recovery.horizon` of the trigger's end).
    #[serde(default = "metastable")]
    pub figure: String,
    /// A storm when the figure is above this (default 0.5, for a flag).
    #[serde(default)]
    pub above: Option<f64>,
    /// A storm when the figure is below this.
    #[serde(default)]
    pub below: Option<f64>,
}

fn metastable() -> String {
    "metastable".into()
}

impl Default for VerdictSpec {
    fn default() -> Self {
        VerdictSpec {
            figure: metastable(),
            above: None,
            below: None,
        }
    }
}

/// `boundary:` in an experiment file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundarySpec {
    /// The trigger's size, one boundary point per value.
    pub magnitude: MagnitudeAxis,
    /// The trigger's length, searched.
    pub duration: DurationAxis,
    /// What counts as a storm.
    #[serde(default)]
    pub verdict: VerdictSpec,
    /// Seeds each point is judged on (a count, or a list).
    #[serde(default = "default_seeds")]
    pub seeds: SeedsSpec,
    /// Bisection stops when the bracket is this narrow (default: a 32nd
    /// of the duration range).
    #[serde(default)]
    pub resolution: Option<SimDuration>,
    /// A point whose interval still holds 50 % is judged again on twice
    /// its seeds, up to this many (default: `seeds`, no refinement).
    #[serde(default)]
    pub max_seeds: Option<u32>,
}

fn default_seeds() -> SeedsSpec {
    SeedsSpec::Count(8)
}

/// A magnitude's bracket, (shorter, its storm probability, longer, its
/// probability), or why there is none.
type Bracket = Result<(SimDuration, f64, SimDuration, f64), &'static str>;

/// Most bisection steps per magnitude, whatever the resolution.
const MAX_STEPS: u32 = 24;

/// Bisection steps per magnitude from `from..to` down to `resolution`
/// (at most; geometric steps may need fewer).
fn steps(from: SimDuration, to: SimDuration, resolution: SimDuration) -> u32 {
    let span = to.as_nanos().saturating_sub(from.as_nanos()) as f64;
    (span / resolution.as_nanos().max(1) as f64)
        .log2()
        .ceil()
        .clamp(0.0, f64::from(MAX_STEPS)) as u32
}

/// A boundary spec, checked.
struct Checked {
    spec: BoundarySpec,
    /// Every seed a point may be judged on (`max_seeds` of them).
    seeds: Vec<u64>,
    /// How many of them every point is judged on (`seeds`).
    first: usize,
    verdict: Observed,
    above: bool,
    threshold: f64,
    resolution: SimDuration,
}

fn check(
    exp: &Experiment,
    spec: &BoundarySpec,
    limits: &InputLimits,
) -> Result<Checked, InputErrors> {
    let err = |path: &str, m: String| InputErrors(vec![exp.error_at(path, m)]);
    if spec.magnitude.values.is_empty() {
        return Err(err(
            "boundary.magnitude.values",
            "give at least one magnitude".into(),
        ));
    }
    if let Some(v) = spec.magnitude.values.iter().find(|v| !v.is_finite()) {
        return Err(err(
            "boundary.magnitude.values",
            format!("magnitudes are finite numbers, found {v}"),
        ));
    }
    if spec.duration.from >= spec.duration.to {
        return Err(err(
            "boundary.duration.to",
            format!(
                "must be longer than from ({} ≥ {})",
                spec.duration.from, spec.duration.to
            ),
        ));
    }
    let mut seeds = spec
        .seeds
        .seeds(exp.world.seed, limits)
        .map_err(|m| err("boundary.seeds", m))?;
    let first = seeds.len();
    if let Some(max) = spec.max_seeds {
        let max = u64::from(max);
        if max < first as u64 {
            return Err(err(
                "boundary.max_seeds",
                format!("must be at least `seeds` ({first}), found {max}"),
            ));
        }
        if max > limits.max_cells {
            return Err(err(
                "boundary.max_seeds",
                format!(
                    "{max} seeds is more runs per point than --max-cells allows ({}; raise it with --max-cells)",
                    limits.max_cells
                ),
            ));
        }
        // The seeds beyond the list: the shared replications' seeds, in
        // order, skipping any already listed.
        let mut r = 0u32;
        while (seeds.len() as u64) < max {
            let s = crate::sweep::shared_seed(exp.world.seed, r);
            if !seeds.contains(&s) {
                seeds.push(s);
            }
            r += 1;
        }
    }
    let v = &spec.verdict;
    let (above, threshold) = match (v.above, v.below) {
        (Some(_), Some(_)) => {
            return Err(err(
                "boundary.verdict.below",
                "give `above` or `below`, not both".into(),
            ));
        }
        (None, Some(b)) => (false, b),
        (a, None) => (true, a.unwrap_or(0.5)),
    };
    let verdict = ObservedSpec {
        name: Some(v.figure.clone()),
        figure: Some(v.figure.clone()),
        series: None,
        at: None,
        range: None,
        at_least: None,
        at_most: None,
        target: None,
        tolerance: None,
    };
    // The range is unused: the verdict compares with the threshold.
    let verdict = ObservedSpec {
        at_least: Some(f64::NEG_INFINITY),
        ..verdict
    }
    .check(exp)
    .map_err(|(f, m)| err(&format!("boundary.verdict.{f}"), m))?;
    let resolution = spec.resolution.unwrap_or_else(|| {
        SimDuration::from_nanos((spec.duration.to.as_nanos() - spec.duration.from.as_nanos()) / 32)
    });
    if resolution.is_zero() {
        return Err(err("boundary.resolution", "must be longer than 0s".into()));
    }
    let mut sorted = spec.magnitude.values.clone();
    sorted.sort_by(f64::total_cmp);
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(err(
            "boundary.magnitude.values",
            format!("{} is listed twice", w[0]),
        ));
    }
    let runs = (spec.magnitude.values.len() as u64)
        .saturating_mul(2 + u64::from(steps(spec.duration.from, spec.duration.to, resolution)))
        .saturating_mul(seeds.len() as u64);
    crate::evaluate::check_runs(exp, runs, limits, "boundary.seeds")
        .map_err(|e| InputErrors(vec![e]))?;
    // Every corner of the search must be a valid world, and a metastable
    // verdict needs the run to last past the longest trigger by the
    // recovery horizon and sustain, or no run could be judged a storm.
    for (m, d) in [
        (sorted[0], spec.duration.from),
        (*sorted.last().unwrap_or(&0.0), spec.duration.to),
    ] {
        let cell = Cell {
            index: 0,
            id: String::new(),
            params: params(spec, m, d),
            replication: 0,
            seed: exp.world.seed,
            labels: Vec::new(),
        };
        let world = cell_world_at(exp, &cell, |path| {
            if path == spec.magnitude.path {
                "boundary.magnitude".to_string()
            } else {
                "boundary.duration".to_string()
            }
        })
        .map_err(|e| InputErrors(vec![e]))?;
        crate::load::check_work(&world, limits).map_err(|(p, msg)| {
            err(
                "boundary.magnitude.values",
                format!("with magnitude {m} and duration {d}: {p}: {msg}"),
            )
        })?;
        let steps = sim_models::timeline::resolve(&world);
        let Some(end) = sim_models::timeline::last_trigger_end(&steps) else {
            return Err(err(
                "boundary.duration.path",
                format!(
                    "with {} = {d} the timeline has no trigger that ends: point the duration at a pulse's `for` or a ramp's length",
                    spec.duration.path
                ),
            ));
        };
        let r = &exp.outputs.recovery;
        let needed = end.saturating_add(r.horizon).saturating_add(r.sustain);
        let run_end = sim_core::time::SimTime::ZERO.saturating_add(world.clock.duration);
        if v.figure == "metastable" && needed > run_end {
            return Err(err(
                "clock.duration",
                format!(
                    "with the longest trigger ({d}) the run must last until {} to judge recovery (trigger end + outputs.recovery.horizon {} + sustain {}), but it ends at {}: lengthen clock.duration or shorten boundary.duration.to",
                    SimDuration::from_nanos(needed.as_nanos()),
                    r.horizon,
                    r.sustain,
                    world.clock.duration
                ),
            ));
        }
    }
    Ok(Checked {
        spec: spec.clone(),
        seeds,
        first,
        verdict,
        above,
        threshold,
        resolution,
    })
}

/// Checks the file's `boundary:` section (for `validate`) and describes
/// the search it asks for (for `explain`): one line each.
pub fn plan(exp: &Experiment, limits: &InputLimits) -> Result<Vec<String>, InputErrors> {
    let Some(spec) = &exp.boundary else {
        return Ok(Vec::new());
    };
    let c = check(exp, spec, limits)?;
    let steps = steps(spec.duration.from, spec.duration.to, c.resolution);
    Ok(vec![
        format!(
            "boundary: a storm is {}; {} magnitude(s) of {}, {} from {} to {} (bisected to {}), each point on {} seeds{}: at most {} runs",
            verdict_text(&c),
            spec.magnitude.values.len(),
            spec.magnitude.path,
            spec.duration.path,
            spec.duration.from,
            spec.duration.to,
            c.resolution,
            c.first,
            if c.seeds.len() > c.first {
                format!(" (up to {} where its interval holds 50 %)", c.seeds.len())
            } else {
                String::new()
            },
            spec.magnitude.values.len() as u64 * (2 + u64::from(steps)) * c.seeds.len() as u64,
        ),
        format!(
            "  magnitudes: {}",
            spec.magnitude
                .values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ])
}

/// The field values of one point.
fn params(spec: &BoundarySpec, magnitude: f64, duration: SimDuration) -> Vec<(String, Value)> {
    vec![
        (spec.magnitude.path.clone(), Value::from(magnitude)),
        (spec.duration.path.clone(), duration_value(duration)),
    ]
}

/// A duration as the YAML string that reads back as it (whole ms when it
/// is one).
fn duration_value(d: SimDuration) -> Value {
    let ns = d.as_nanos();
    if ns.is_multiple_of(1_000_000) {
        Value::from(format!("{}ms", ns / 1_000_000))
    } else {
        Value::from(format!("{ns}ns"))
    }
}

/// One judged point.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The trigger's size.
    pub magnitude: f64,
    /// The trigger's length.
    pub duration: SimDuration,
    /// Seeds that stormed.
    pub storms: u64,
    /// Seeds judged.
    pub seeds: u64,
}

impl Point {
    /// Storms / seeds.
    pub fn probability(&self) -> f64 {
        self.storms as f64 / self.seeds.max(1) as f64
    }
    /// The Wilson 95 % interval of the probability.
    pub fn ci(&self) -> (f64, f64) {
        wilson(self.storms, self.seeds)
    }
}

/// Where the edge lies for one magnitude.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// The trigger's size.
    pub magnitude: f64,
    /// The duration where the storm probability crosses 50 % (linear
    /// between the final bracket's ends), if inside the range.
    pub duration: Option<SimDuration>,
    /// Longest duration that surely does not storm (interval below 50 %).
    pub band_low: Option<SimDuration>,
    /// Shortest duration that surely storms (interval above 50 %).
    pub band_high: Option<SimDuration>,
    /// `found`, `below range` (storms already at `from`) or `beyond range`
    /// (no storm even at `to`).
    pub status: &'static str,
}

/// What a boundary search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Boundary {
    /// Every point judged, by magnitude then duration.
    pub points: Vec<Point>,
    /// One edge per magnitude, in the order given.
    pub edges: Vec<Edge>,
}

/// Runs the search (resuming from `out`'s evaluations) and writes its
/// tables and report.
pub fn boundary(
    exp: &Experiment,
    out: &Path,
    threads: Option<usize>,
    force: bool,
    quiet: bool,
    checks: Checks,
    limits: &InputLimits,
) -> Result<Boundary, Failure> {
    let spec = exp.boundary.as_ref().ok_or_else(|| {
        Failure::Input(format!(
            "{} has no `boundary:` section (see experiments/README.md, \"Finding the edge\")",
            exp.path.display()
        ))
    })?;
    let c = check(exp, spec, limits).map_err(|e| Failure::Input(e.to_string()))?;
    crate::dataset::create_dir(out).map_err(Failure::Input)?;
    let _lock = SearchLock::try_acquire(out, "boundary").map_err(Failure::Input)?;
    let identity = hash_of(&(
        &exp.world_value,
        &exp.outputs,
        &exp.objective,
        &c.spec.magnitude.path,
        &c.spec.duration.path,
        &c.spec.verdict.figure,
    ));
    claim_output(exp, &[], DatasetKind::Boundary, &identity, out, force)?;
    let paths = vec![c.spec.magnitude.path.clone(), c.spec.duration.path.clone()];
    let mut store = Store::open(
        exp,
        out,
        paths,
        vec![c.verdict.clone()],
        Running {
            threads,
            checks,
            quiet,
            force,
        },
    )?;
    let mags = &c.spec.magnitude.values;
    let steps = u64::from(steps(
        c.spec.duration.from,
        c.spec.duration.to,
        c.resolution,
    ));
    store.expect_runs(mags.len() as u64 * (2 + steps) * c.first as u64);
    let mut points: Vec<Point> = Vec::new();
    let stormy = |f: &Option<f64>| {
        f.is_some_and(|v| {
            if c.above {
                v > c.threshold
            } else {
                v < c.threshold
            }
        })
    };
    let first_seeds = c.seeds.len().min(c.first);
    // Judges each (magnitude, duration) on the first seeds, then, while a
    // point's interval still holds 50 % and it has fewer than the most
    // seeds, on twice as many: more runs only where the edge is unclear.
    let mut judge =
        |store: &mut Store, asks: &[(f64, SimDuration)]| -> Result<Vec<Point>, Failure> {
            let mut found: Vec<Point> = asks
                .iter()
                .map(|&(m, d)| Point {
                    magnitude: m,
                    duration: d,
                    storms: 0,
                    seeds: 0,
                })
                .collect();
            let mut want: Vec<usize> = vec![first_seeds; asks.len()];
            loop {
                let grow: Vec<(usize, std::ops::Range<usize>)> = found
                    .iter()
                    .enumerate()
                    .filter(|(i, p)| (p.seeds as usize) < want[*i])
                    .map(|(i, p)| (i, p.seeds as usize..want[i]))
                    .collect();
                if grow.is_empty() {
                    break;
                }
                let jobs: Vec<(Vec<Value>, u64)> = grow
                    .iter()
                    .flat_map(|(i, range)| {
                        let (m, d) = asks[*i];
                        c.seeds[range.clone()]
                            .iter()
                            .map(move |&s| (vec![Value::from(m), duration_value(d)], s))
                    })
                    .collect();
                let figures = store.batch(&jobs)?;
                let mut at = 0;
                for (i, range) in &grow {
                    let n = range.len();
                    let p = &mut found[*i];
                    p.storms += figures[at..at + n].iter().filter(|f| stormy(&f[0])).count() as u64;
                    p.seeds += n as u64;
                    at += n;
                    let (lo, hi) = p.ci();
                    if lo <= 0.5 && 0.5 <= hi {
                        want[*i] = (2 * p.seeds as usize).min(c.seeds.len());
                    }
                }
            }
            points.extend(found.iter().cloned());
            Ok(found)
        };
    // Both ends of the range for every magnitude, then bisection rounds,
    // each one batch across magnitudes (the runs of a round in parallel).
    let (from, to) = (c.spec.duration.from, c.spec.duration.to);
    let ends: Vec<(f64, SimDuration)> = mags.iter().flat_map(|&m| [(m, from), (m, to)]).collect();
    let first = judge(&mut store, &ends)?;
    // Per magnitude: the bracket (lo, p(lo), hi, p(hi)), or its status.
    let mut brackets: Vec<Bracket> = mags
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let (lo, hi) = (&first[2 * i], &first[2 * i + 1]);
            if lo.probability() >= 0.5 {
                Err("below range")
            } else if hi.probability() < 0.5 {
                Err("beyond range")
            } else {
                Ok((from, lo.probability(), to, hi.probability()))
            }
        })
        .collect();
    for _ in 0..MAX_STEPS {
        let asks: Vec<(usize, f64, SimDuration)> = brackets
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b {
                Ok((lo, _, hi, _)) if hi.as_nanos() - lo.as_nanos() > c.resolution.as_nanos() => {
                    // Geometric midpoints: trigger lengths span orders of
                    // magnitude, and the edge is found in as many steps
                    // at 100 ms as at a minute.
                    let (l, h) = (lo.as_nanos() as f64, hi.as_nanos() as f64);
                    let mid = if l > 0.0 {
                        (l * h).sqrt() as u64
                    } else {
                        lo.as_nanos() + (hi.as_nanos() - lo.as_nanos()) / 2
                    };
                    // Whole milliseconds, as a user would write them.
                    let mid = (mid / 1_000_000).max(lo.as_nanos() / 1_000_000 + 1) * 1_000_000;
                    (mid < hi.as_nanos()).then(|| (i, mags[i], SimDuration::from_nanos(mid)))
                }
                _ => None,
            })
            .collect();
        if asks.is_empty() {
            break;
        }
        let judged = judge(
            &mut store,
            &asks.iter().map(|&(_, m, d)| (m, d)).collect::<Vec<_>>(),
        )?;
        for ((i, _, d), p) in asks.iter().zip(judged) {
            if let Ok((lo, plo, hi, phi)) = brackets[*i] {
                brackets[*i] = Ok(if p.probability() >= 0.5 {
                    (lo, plo, *d, p.probability())
                } else {
                    (*d, p.probability(), hi, phi)
                });
            }
        }
    }
    store.finish();
    points.sort_by(|a, b| {
        a.magnitude
            .total_cmp(&b.magnitude)
            .then(a.duration.cmp(&b.duration))
    });
    points.dedup();
    let edges = mags
        .iter()
        .zip(&brackets)
        .map(|(&m, b)| {
            let mine: Vec<&Point> = points.iter().filter(|p| p.magnitude == m).collect();
            let band_low = mine
                .iter()
                .filter(|p| p.ci().1 < 0.5)
                .map(|p| p.duration)
                .max();
            let band_high = mine
                .iter()
                .filter(|p| p.ci().0 > 0.5)
                .map(|p| p.duration)
                .min();
            let (duration, status) = match b {
                Ok((lo, plo, hi, phi)) => {
                    let f = if phi > plo {
                        (0.5 - plo) / (phi - plo)
                    } else {
                        0.5
                    };
                    let ns = lo.as_nanos() as f64
                        + f.clamp(0.0, 1.0) * (hi.as_nanos() - lo.as_nanos()) as f64;
                    (Some(SimDuration::from_nanos(ns.round() as u64)), "found")
                }
                Err(s) => (None, *s),
            };
            Edge {
                magnitude: m,
                duration,
                band_low,
                band_high,
                status,
            }
        })
        .collect();
    let result = Boundary { points, edges };
    write_tables(exp, out, &result, &c)?;
    Ok(result)
}

fn secs(d: Option<SimDuration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64())
}

fn write_tables(exp: &Experiment, out: &Path, b: &Boundary, c: &Checked) -> Result<(), Failure> {
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
        (
            "stormsim.magnitude".to_string(),
            c.spec.magnitude.path.clone(),
        ),
        (
            "stormsim.duration".to_string(),
            c.spec.duration.path.clone(),
        ),
        ("stormsim.verdict".to_string(), verdict_text(c)),
    ];
    let pe = |e: PolarsError| Failure::Run(e.to_string());
    let p = &b.points;
    let mut points = DataFrame::new(
        p.len(),
        vec![
            Column::new(
                "magnitude".into(),
                p.iter().map(|x| x.magnitude).collect::<Vec<_>>(),
            ),
            Column::new(
                "duration_s".into(),
                p.iter()
                    .map(|x| x.duration.as_secs_f64())
                    .collect::<Vec<_>>(),
            ),
            Column::new(
                "storms".into(),
                p.iter().map(|x| x.storms).collect::<Vec<_>>(),
            ),
            Column::new(
                "seeds".into(),
                p.iter().map(|x| x.seeds).collect::<Vec<_>>(),
            ),
            Column::new(
                "storm_probability".into(),
                p.iter().map(Point::probability).collect::<Vec<_>>(),
            ),
            Column::new(
                "ci_low".into(),
                p.iter().map(|x| x.ci().0).collect::<Vec<_>>(),
            ),
            Column::new(
                "ci_high".into(),
                p.iter().map(|x| x.ci().1).collect::<Vec<_>>(),
            ),
        ],
    )
    .map_err(pe)?;
    write_parquet(
        &out.join("boundary").join("points.parquet"),
        &mut points,
        &meta,
        &writer,
    )
    .map_err(Failure::Run)?;
    let e = &b.edges;
    let mut edges = DataFrame::new(
        e.len(),
        vec![
            Column::new(
                "magnitude".into(),
                e.iter().map(|x| x.magnitude).collect::<Vec<_>>(),
            ),
            Column::new(
                "boundary_s".into(),
                e.iter().map(|x| secs(x.duration)).collect::<Vec<_>>(),
            ),
            Column::new(
                "band_low_s".into(),
                e.iter().map(|x| secs(x.band_low)).collect::<Vec<_>>(),
            ),
            Column::new(
                "band_high_s".into(),
                e.iter().map(|x| secs(x.band_high)).collect::<Vec<_>>(),
            ),
            Column::new(
                "status".into(),
                e.iter().map(|x| x.status.to_string()).collect::<Vec<_>>(),
            ),
        ],
    )
    .map_err(pe)?;
    write_parquet(
        &out.join("boundary").join("edges.parquet"),
        &mut edges,
        &meta,
        &writer,
    )
    .map_err(Failure::Run)?;
    let about = About {
        title: exp.name.clone(),
        magnitude: c.spec.magnitude.path.clone(),
        duration: c.spec.duration.path.clone(),
        verdict: verdict_text(c),
        seeds: c.first,
        max_seeds: c.seeds.len(),
    };
    let json = serde_json::to_string_pretty(&about).map_err(|e| Failure::Run(e.to_string()))?;
    writer
        .write_text(&out.join("boundary").join("about.json"), &(json + "\n"))
        .map_err(Failure::Run)?;
    let html = report_html(&about, b).map_err(Failure::Run)?;
    writer
        .write_text(&out.join("report.html"), &html)
        .map_err(Failure::Run)
}

fn verdict_text(c: &Checked) -> String {
    if c.verdict.name == "metastable" && c.above && c.threshold == 0.5 {
        "metastable (not recovered within the recovery horizon)".into()
    } else {
        format!(
            "{} {} {}",
            c.verdict.name,
            if c.above { ">" } else { "<" },
            c.threshold
        )
    }
}

fn show(d: Option<SimDuration>) -> String {
    d.map_or("-".into(), |d| {
        let s = d.as_secs_f64();
        if s < 10.0 {
            format!("{s:.2}s")
        } else {
            format!("{s:.1}s")
        }
    })
}

/// The edge as a table, one row per magnitude.
pub fn table(b: &Boundary) -> String {
    let mut s = format!(
        "{:>10}  {:>10}  {:>21}  {:>6}  {}\n",
        "magnitude", "tips at", "band (95 %)", "points", "status"
    );
    for e in &b.edges {
        let n = b
            .points
            .iter()
            .filter(|p| p.magnitude == e.magnitude)
            .count();
        s += &format!(
            "{:>10}  {:>10}  {:>21}  {:>6}  {}\n",
            e.magnitude,
            show(e.duration),
            format!("{} .. {}", show(e.band_low), show(e.band_high)),
            n,
            e.status
        );
    }
    s
}

/// The points judged, as a table (magnitude, duration, storms/seeds, CI).
pub fn points_table(b: &Boundary) -> String {
    let mut s = format!(
        "{:>10}  {:>10}  {:>8}  {:>16}\n",
        "magnitude", "duration", "storms", "95 % CI"
    );
    for p in &b.points {
        let (lo, hi) = p.ci();
        s += &format!(
            "{:>10}  {:>10}  {:>8}  {:>16}\n",
            p.magnitude,
            show(Some(p.duration)),
            format!("{}/{}", p.storms, p.seeds),
            format!("[{lo:.2}, {hi:.2}]")
        );
    }
    s
}

/// What the report says besides the points: written beside them as
/// `boundary/about.json`, so `stormsim report DIR` redraws it from the
/// folder alone.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct About {
    title: String,
    magnitude: String,
    duration: String,
    verdict: String,
    seeds: usize,
    max_seeds: usize,
}

fn report_html(a: &About, b: &Boundary) -> Result<String, String> {
    let chart = crate::charts::boundary(
        &format!("Tipping boundary: {}", a.title),
        &a.magnitude,
        &a.duration,
        b,
    )?;
    let esc = crate::report::escape;
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}: boundary</title>\n<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}}pre{{background:#f6f6f6;padding:1em}}svg{{max-width:100%;height:auto}}</style></head><body>\n<h1>{title}: where it tips</h1>\n<p>Storm: {verdict}. Each point judged on {n} seeds (the same seeds at every point){more}; the band is the 95 % Wilson interval's edge: below it no storm, above it a storm, with 95 % confidence. Generated from the Parquet in this directory: <code>stormsim report DIR</code> redraws it.</p>\n<figure>{chart}</figure>\n<h2>Edge</h2>\n<pre>{edges}</pre>\n<h2>Points</h2>\n<pre>{points}</pre>\n</body></html>\n",
        title = esc(&a.title),
        verdict = esc(&a.verdict),
        n = a.seeds,
        more = if a.max_seeds > a.seeds {
            format!(
                ", and on up to {} where its interval still held 50 %",
                a.max_seeds
            )
        } else {
            String::new()
        },
        chart = chart,
        edges = esc(&table(b)),
        points = esc(&points_table(b)),
    ))
}

/// Redraws `dir/report.html` from a boundary dataset's tables.
pub fn rerender(dir: &Path) -> Result<std::path::PathBuf, String> {
    let about_path = dir.join("boundary").join("about.json");
    let about: About = serde_json::from_str(
        &std::fs::read_to_string(&about_path)
            .map_err(|e| crate::dataset::io_error("read", &about_path, e))?,
    )
    .map_err(|e| format!("{}: {e}", about_path.display()))?;
    let read = |name: &str| -> Result<DataFrame, String> {
        let p = dir.join("boundary").join(name);
        let f = std::fs::File::open(&p).map_err(|e| crate::dataset::io_error("open", &p, e))?;
        ParquetReader::new(f)
            .finish()
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let (points, edges) = (read("points.parquet")?, read("edges.parquet")?);
    let f = |df: &DataFrame, c: &str| crate::report::optional_floats(df, c);
    let dur = |x: Option<f64>| x.map(SimDuration::from_secs_f64);
    let (m, d, k, n) = (
        f(&points, "magnitude")?,
        f(&points, "duration_s")?,
        f(&points, "storms")?,
        f(&points, "seeds")?,
    );
    let points: Vec<Point> = (0..m.len())
        .map(|i| Point {
            magnitude: m[i].unwrap_or(0.0),
            duration: dur(d[i]).unwrap_or(SimDuration::ZERO),
            storms: k[i].unwrap_or(0.0) as u64,
            seeds: n[i].unwrap_or(0.0) as u64,
        })
        .collect();
    let status = crate::report::strings(&edges, "status")?;
    let (em, eb, lo, hi) = (
        f(&edges, "magnitude")?,
        f(&edges, "boundary_s")?,
        f(&edges, "band_low_s")?,
        f(&edges, "band_high_s")?,
    );
    let edges: Vec<Edge> = (0..em.len())
        .map(|i| Edge {
            magnitude: em[i].unwrap_or(0.0),
            duration: dur(eb[i]),
            band_low: dur(lo[i]),
            band_high: dur(hi[i]),
            status: match status[i].as_str() {
                "below range" => "below range",
                "beyond range" => "beyond range",
                _ => "found",
            },
        })
        .collect();
    let html = report_html(&about, &Boundary { points, edges })?;
    let writer = Writer::register(dir)?;
    let path = dir.join("report.html");
    writer.write_text(&path, &html)?;
    Ok(path)
}
