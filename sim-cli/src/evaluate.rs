//! Judging runs outside a sweep: what to read from a run (any summary
//! figure, or one bucket's value at a stated time), the range it must
//! fall in, and the evaluations table that `calibrate` and `boundary`
//! keep, so that a search killed half way resumes where it stopped.
//!
//! An evaluation is one run: a set of field values on top of the
//! experiment, and a seed. It is identified by both, never by when it
//! ran, so a resumed search that asks for it again finds it in the table
//! and does not run it twice; the searches themselves are deterministic,
//! so a resumed one asks exactly what the first asked.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use polars::prelude::*;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sim_core::time::SimTime;
use sim_models::kpi::{KpiRow, Kpis, kpis_for};
use sim_models::recorder::{BucketRow, RowSink};
use sim_models::timeline::At;
use sim_models::world::{Checks, run_with};
use yaml_serde::Value;

use crate::dataset::Writer;
use crate::error::Failure;
use crate::load::{Experiment, InputLimits};
use crate::output::{summary_frame, write_parquet};
use crate::sweep::{Cell, canonical, cell_world, describe};

/// A sink that keeps only what the key figures and the series need.
#[derive(Debug, Default)]
struct KpiOnly(Vec<KpiRow>);

impl RowSink for KpiOnly {
    fn push(&mut self, row: BucketRow) {
        self.0.push(KpiRow::of(&row));
    }
}

/// A per-bucket value, read at a stated time (`series:` in an observed
/// figure): what a dashboard showed then.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Series {
    /// Requests offered per second in the bucket.
    OfferedPerS,
    /// Attempts sent per second.
    AttemptsPerS,
    /// Successful requests per second.
    GoodputPerS,
    /// Errors / finished requests in the bucket.
    ErrorRate,
    /// End-to-end p99 over the trailing `clock.window`, seconds.
    WindowP99S,
    /// End-to-end p99 of the bucket alone, seconds.
    P99S,
    /// Pool-wait p99 of the bucket, seconds.
    PoolWaitP99S,
    /// Most calls queued for a pool connection.
    PoolWaitersMax,
    /// Time-weighted mean of calls in flight.
    CallsInFlight,
    /// Requests whose users wait plus work queued at the dependency.
    Backlog,
}

impl Series {
    /// Every series, for messages.
    pub const ALL: [Series; 10] = [
        Series::OfferedPerS,
        Series::AttemptsPerS,
        Series::GoodputPerS,
        Series::ErrorRate,
        Series::WindowP99S,
        Series::P99S,
        Series::PoolWaitP99S,
        Series::PoolWaitersMax,
        Series::CallsInFlight,
        Series::Backlog,
    ];

    /// Its name as written.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }

    fn read(self, r: &KpiRow) -> Option<f64> {
        let per_s = |n: u64| n as f64 / r.span.as_secs_f64();
        let secs = |ns: Option<u64>| ns.map(|v| v as f64 / 1e9);
        match self {
            Series::OfferedPerS => Some(per_s(r.offered)),
            Series::AttemptsPerS => Some(per_s(r.attempts)),
            Series::GoodputPerS => Some(r.goodput()),
            Series::ErrorRate => (r.finished > 0).then(|| r.errors as f64 / r.finished as f64),
            Series::WindowP99S => secs(r.e2e_window_p99),
            Series::P99S => secs(r.e2e_p99),
            Series::PoolWaitP99S => secs(r.pool_wait_p99),
            Series::PoolWaitersMax => Some(r.pool_waiters_max as f64),
            Series::CallsInFlight => Some(r.calls_in_flight_mean),
            Series::Backlog => Some(r.backlog),
        }
    }
}

/// One observed figure as written: what to read, and what was seen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservedSpec {
    /// A name for tables (default: the figure, or `series@time`).
    #[serde(default)]
    pub name: Option<String>,
    /// A summary figure (any numeric column of the summary table).
    #[serde(default)]
    pub figure: Option<String>,
    /// A per-bucket series, read at `at`.
    #[serde(default)]
    pub series: Option<Series>,
    /// When to read the series: `"14:02:35"` or an offset (`150s`).
    #[serde(default)]
    pub at: Option<At>,
    /// Accepted range, both ends included (`.inf` for no upper end).
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    /// Accepted: at least this.
    #[serde(default)]
    pub at_least: Option<f64>,
    /// Accepted: at most this.
    #[serde(default)]
    pub at_most: Option<f64>,
    /// Accepted: this, within `tolerance`.
    #[serde(default)]
    pub target: Option<f64>,
    /// The tolerance around `target` (absolute).
    #[serde(default)]
    pub tolerance: Option<f64>,
}

/// What to read from a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Reading {
    /// A summary figure, by column name.
    Figure(String),
    /// A series' value in the bucket holding `at`.
    Series {
        /// The series.
        series: Series,
        /// The instant.
        at: SimTime,
    },
}

/// An observed figure, checked: what to read and the accepted range.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// Its name in tables and columns.
    pub name: String,
    /// What to read.
    pub reading: Reading,
    /// Lowest accepted value.
    pub low: f64,
    /// Highest accepted value.
    pub high: f64,
}

/// The numeric columns of the summary table: the figures a run can be
/// judged on.
pub fn figure_names() -> Vec<String> {
    let cell = base_cell(0);
    let Ok(df) = summary_frame(&cell, "", &[], &Kpis::default(), 0) else {
        return Vec::new();
    };
    df.columns()
        .iter()
        .filter(|c| c.dtype().is_primitive_numeric() || c.dtype().is_bool())
        .map(|c| c.name().to_string())
        .filter(|n| !matches!(n.as_str(), "seed" | "replication"))
        .collect()
}

impl ObservedSpec {
    /// Checks the figure against the experiment; problems as (field, message).
    pub fn check(&self, exp: &Experiment) -> Result<Observed, (String, String)> {
        let reading = match (&self.figure, self.series, &self.at) {
            (Some(f), None, None) => {
                let names = figure_names();
                if !names.iter().any(|n| n == f) {
                    return Err((
                        "figure".into(),
                        format!(
                            "no summary figure {f:?}; expected one of: {}",
                            names.join(", ")
                        ),
                    ));
                }
                Reading::Figure(f.clone())
            }
            (None, Some(series), Some(at)) => {
                let t = at
                    .resolve(&exp.world.clock.wall_clock())
                    .map_err(|m| ("at".to_string(), m))?;
                let end = SimTime::ZERO.saturating_add(exp.world.clock.duration);
                if t >= end {
                    return Err((
                        "at".into(),
                        format!(
                            "{at} is at or after the run's end ({})",
                            exp.world.clock.duration
                        ),
                    ));
                }
                Reading::Series { series, at: t }
            }
            (None, Some(_), None) => {
                return Err(("at".into(), "a series is read at a time: add `at`".into()));
            }
            (Some(_), Some(_), _) => {
                return Err((
                    "series".into(),
                    "give either `figure` (a summary figure) or `series` with `at`, not both"
                        .into(),
                ));
            }
            _ => {
                return Err((
                    "figure".into(),
                    format!(
                        "say what was observed: `figure` (a summary figure) or `series` ({}) with `at`",
                        Series::ALL.map(Series::name).join(", ")
                    ),
                ));
            }
        };
        let forms = [
            self.range.is_some(),
            self.at_least.is_some() || self.at_most.is_some(),
            self.target.is_some(),
        ];
        if forms.iter().filter(|&&b| b).count() != 1 {
            return Err((
                "range".into(),
                "give exactly one accepted range: `range: [low, high]`, `at_least`/`at_most`, or `target` with `tolerance`".into(),
            ));
        }
        let (low, high) = if let Some([lo, hi]) = self.range {
            (lo, hi)
        } else if let Some(t) = self.target {
            let tol = self.tolerance.ok_or_else(|| {
                (
                    "tolerance".to_string(),
                    "a target needs a tolerance".to_string(),
                )
            })?;
            if !(tol >= 0.0 && tol.is_finite()) {
                return Err((
                    "tolerance".into(),
                    format!("must be a finite number ≥ 0, found {tol}"),
                ));
            }
            (t - tol, t + tol)
        } else {
            (
                self.at_least.unwrap_or(f64::NEG_INFINITY),
                self.at_most.unwrap_or(f64::INFINITY),
            )
        };
        if self.tolerance.is_some() && self.target.is_none() {
            return Err((
                "tolerance".into(),
                "a tolerance goes with a `target`".into(),
            ));
        }
        if low.is_nan() || high.is_nan() || low > high {
            return Err((
                "range".into(),
                format!("the accepted range [{low}, {high}] is empty"),
            ));
        }
        let name = match (&self.name, &reading) {
            (Some(n), _) => n.clone(),
            (None, Reading::Figure(f)) => f.clone(),
            (None, Reading::Series { series, .. }) => format!(
                "{}@{}",
                series.name(),
                self.at.map(|a| a.to_string()).unwrap_or_default()
            ),
        };
        Ok(Observed {
            name,
            reading,
            low,
            high,
        })
    }
}

impl Observed {
    /// How far outside its range `v` is, in units of the range's width
    /// (or of its finite end, for a one-sided range), capped at 5; a
    /// figure the run did not produce counts as 1.
    pub fn outside(&self, v: Option<f64>) -> f64 {
        let Some(v) = v.filter(|v| !v.is_nan()) else {
            return 1.0;
        };
        if (self.low..=self.high).contains(&v) {
            return 0.0;
        }
        let scale = self.scale();
        let d = if v < self.low {
            self.low - v
        } else {
            v - self.high
        };
        (d / scale).min(5.0)
    }

    /// The unit distances are measured in: the range's width, or its
    /// finite end for a one-sided range.
    fn scale(&self) -> f64 {
        if self.low.is_finite() && self.high.is_finite() && self.high > self.low {
            self.high - self.low
        } else {
            let end = if self.low.is_finite() {
                self.low
            } else {
                self.high
            };
            end.abs().max(1e-9)
        }
    }

    /// How far inside its range `v` is, from the nearer end, in the units
    /// of [`Observed::outside`] (capped at 5); negative outside (minus the
    /// distance outside), -1 for a figure the run did not produce.
    pub fn margin(&self, v: Option<f64>) -> f64 {
        let Some(x) = v.filter(|v| !v.is_nan()) else {
            return -1.0;
        };
        if !self.met(Some(x)) {
            return -self.outside(Some(x));
        }
        ((x - self.low).min(self.high - x) / self.scale()).min(5.0)
    }

    /// Whether `v` is inside the range.
    pub fn met(&self, v: Option<f64>) -> bool {
        v.is_some_and(|v| (self.low..=self.high).contains(&v))
    }

    /// `[34, 56]`, `≥ 20`, `≤ 0.01`.
    pub fn range_text(&self) -> String {
        // A target ± tolerance leaves float dust (0.16899999999999998).
        let n = |x: f64| (x * 1e9).round() / 1e9;
        match (self.low.is_finite(), self.high.is_finite()) {
            (true, true) => format!("[{}, {}]", n(self.low), n(self.high)),
            (true, false) => format!("≥ {}", n(self.low)),
            (false, true) => format!("≤ {}", n(self.high)),
            (false, false) => "any".into(),
        }
    }
}

/// The cell of a plain run with `seed` (no parameters).
fn base_cell(seed: u64) -> Cell {
    Cell {
        index: 0,
        id: String::new(),
        params: Vec::new(),
        replication: 0,
        seed,
        labels: Vec::new(),
    }
}

/// Runs the experiment with `params` set and `seed`, and reads each
/// observed figure; also returns the events simulated.
pub fn evaluate(
    exp: &Experiment,
    params: &[(String, Value)],
    seed: u64,
    observed: &[Observed],
    checks: Checks,
) -> Result<(Vec<Option<f64>>, u64), String> {
    let cell = Cell {
        params: params.to_vec(),
        ..base_cell(seed)
    };
    let world = cell_world(exp, &cell).map_err(|e| e.to_string())?;
    let out = run_with(&world, KpiOnly::default(), checks).map_err(|e| {
        format!(
            "the run with {} and seed {seed} stopped: {e}",
            describe(params)
        )
    })?;
    let rows = out.sink.0;
    let k = kpis_for(
        &rows,
        &out.totals,
        &out.steps,
        &exp.outputs.recovery,
        world.clock.window,
        &exp.objective.clone().unwrap_or_default(),
    )
    .with_cost(&out.totals);
    let summary =
        summary_frame(&cell, &exp.name, &[], &k, out.events).map_err(|e| e.to_string())?;
    let values = observed
        .iter()
        .map(|o| match &o.reading {
            Reading::Figure(name) => summary
                .column(name)
                .ok()
                .and_then(|c| c.cast(&DataType::Float64).ok())
                .and_then(|c| c.f64().ok().and_then(|v| v.get(0))),
            Reading::Series { series, at } => rows
                .iter()
                .find(|r| r.start <= *at && *at < r.start.saturating_add(r.span))
                .and_then(|r| series.read(r)),
        })
        .collect();
    Ok((values, out.events))
}

/// What one run gives: its figures and events, or why it stopped.
type Outcome = Result<(Vec<Option<f64>>, u64), String>;

/// How a search runs its evaluations.
#[derive(Clone, Copy, Debug, Default)]
pub struct Running {
    /// Worker threads (default: one per core).
    pub threads: Option<usize>,
    /// Per-event invariant checks.
    pub checks: Checks,
    /// No progress bar.
    pub quiet: bool,
    /// Start over a table that is not this search's.
    pub force: bool,
}

/// One evaluation: field values, seed, and the figures read.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The field values set, in the search's order of paths.
    pub values: Vec<Value>,
    /// The seed.
    pub seed: u64,
    /// Each observed figure, in order.
    pub figures: Vec<Option<f64>>,
    /// Events simulated.
    pub events: u64,
}

/// The evaluations of one search: held in memory in the order they were
/// first asked for, and written to `OUT/evaluations/part-0.parquet` after
/// every batch (atomically: a kill loses at most the batch in progress).
pub struct Store<'a> {
    exp: &'a Experiment,
    paths: Vec<String>,
    observed: Vec<Observed>,
    rows: Vec<Evaluation>,
    index: BTreeMap<(String, u64), usize>,
    file: PathBuf,
    writer: Writer,
    checks: Checks,
    meta: Vec<(String, String)>,
    pool: rayon::ThreadPool,
    bar: ProgressBar,
    /// Evaluations run by this process (not found in the table).
    pub ran: u64,
    /// Events simulated by this process.
    pub events: u64,
    /// Evaluations found in the table when it was opened.
    pub read_back: usize,
}

fn key(values: &[Value]) -> String {
    canonical(&Value::Sequence(values.to_vec()))
}

impl<'a> Store<'a> {
    /// Opens the store of `out`, reading the evaluations a previous run of
    /// the same search left there (a table that is not this search's is
    /// an error, or, with `force`, started over).
    pub fn open(
        exp: &'a Experiment,
        out: &Path,
        paths: Vec<String>,
        observed: Vec<Observed>,
        how: Running,
    ) -> Result<Store<'a>, Failure> {
        let Running {
            threads,
            checks,
            quiet,
            force,
        } = how;
        let writer = Writer::register(out).map_err(Failure::Run)?;
        crate::dataset::remove_stale_temporaries(out);
        let file = out.join("evaluations").join("part-0.parquet");
        let mut builder = rayon::ThreadPoolBuilder::new();
        if let Some(n) = threads {
            builder = builder.num_threads(n);
        }
        let pool = builder
            .build()
            .map_err(|e| Failure::Run(format!("cannot start the worker threads: {e}")))?;
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::new(0);
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} runs  {elapsed} elapsed, ETA {eta}  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        };
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
            ("stormsim.paths".to_string(), paths.join(",")),
        ];
        let mut store = Store {
            exp,
            paths,
            observed,
            rows: Vec::new(),
            index: BTreeMap::new(),
            file,
            writer,
            checks,
            meta,
            pool,
            bar,
            ran: 0,
            events: 0,
            read_back: 0,
        };
        if let Err(e) = store.read_back() {
            if !force {
                return Err(Failure::Input(e));
            }
            // --force: start the table over.
            store.rows.clear();
            store.index.clear();
            let _ = fs::remove_file(&store.file);
        }
        store.read_back = store.rows.len();
        Ok(store)
    }

    /// The observed figures, in column order.
    pub fn observed(&self) -> &[Observed] {
        &self.observed
    }

    /// Evaluations held (read back and run).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Tells the progress bar how many runs the search may make in all.
    pub fn expect_runs(&self, n: u64) {
        self.bar.set_length(n);
    }

    /// Moves the progress bar's message.
    pub fn say(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// Clears the progress bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn read_back(&mut self) -> Result<(), String> {
        let Ok(f) = fs::File::open(&self.file) else {
            return Ok(());
        };
        let df = ParquetReader::new(f)
            .finish()
            .map_err(|e| format!("{}: {e}", self.file.display()))?;
        let bad = |what: &str| {
            format!(
                "{} is not this search's evaluations table ({what}); use another --out, or --force to start over",
                self.file.display()
            )
        };
        let keys = crate::report::strings(&df, "key").map_err(|_| bad("no key column"))?;
        let seeds = u64s(&df, "seed").map_err(|_| bad("no seed column"))?;
        let events = df
            .column("events")
            .and_then(|c| c.cast(&DataType::UInt64))
            .map_err(|_| bad("no events column"))?;
        let events = events.u64().map_err(|_| bad("events column"))?;
        let events: Vec<u64> = (0..events.len())
            .map(|i| events.get(i).unwrap_or(0))
            .collect();
        let mut figures = Vec::new();
        for o in &self.observed {
            let c = df
                .column(&format!("figure:{}", o.name))
                .and_then(|c| c.cast(&DataType::Float64))
                .map_err(|_| bad(&format!("no column for {}", o.name)))?;
            let c = c.f64().map_err(|_| bad("figure column"))?;
            figures.push((0..c.len()).map(|i| c.get(i)).collect::<Vec<_>>());
        }
        for (i, k) in keys.iter().enumerate() {
            let values: Vec<Value> = match yaml_serde::from_str::<Value>(k) {
                Ok(Value::Sequence(v)) if v.len() == self.paths.len() => v,
                _ => return Err(bad("a key that is not this search's")),
            };
            let row = Evaluation {
                values,
                seed: seeds[i],
                figures: figures.iter().map(|col| col[i]).collect(),
                events: events[i],
            };
            self.index.insert((k.clone(), row.seed), self.rows.len());
            self.rows.push(row);
        }
        Ok(())
    }

    fn write(&self) -> Result<(), String> {
        let n = self.rows.len();
        let mut cols = vec![
            Column::new(
                "key".into(),
                self.rows.iter().map(|r| key(&r.values)).collect::<Vec<_>>(),
            ),
            Column::new(
                "seed".into(),
                self.rows.iter().map(|r| r.seed).collect::<Vec<_>>(),
            ),
        ];
        for (j, p) in self.paths.iter().enumerate() {
            let numeric: Vec<Option<f64>> =
                self.rows.iter().map(|r| numeric(&r.values[j])).collect();
            if numeric.iter().all(Option::is_some) {
                cols.push(Column::new(p.as_str().into(), numeric));
            } else {
                cols.push(Column::new(
                    p.as_str().into(),
                    self.rows
                        .iter()
                        .map(|r| canonical(&r.values[j]))
                        .collect::<Vec<_>>(),
                ));
            }
        }
        for (i, o) in self.observed.iter().enumerate() {
            cols.push(Column::new(
                format!("figure:{}", o.name).as_str().into(),
                self.rows.iter().map(|r| r.figures[i]).collect::<Vec<_>>(),
            ));
        }
        cols.push(Column::new(
            "events".into(),
            self.rows.iter().map(|r| r.events).collect::<Vec<_>>(),
        ));
        let mut df = DataFrame::new(n, cols).map_err(|e| e.to_string())?;
        write_parquet(&self.file, &mut df, &self.meta, &self.writer)
    }

    /// The figures of each (values, seed) asked for, in order: those not
    /// held run now, in parallel (each on one thread), and the table is
    /// rewritten once they are in.
    pub fn batch(&mut self, jobs: &[(Vec<Value>, u64)]) -> Result<Vec<Vec<Option<f64>>>, Failure> {
        let mut todo: Vec<(Vec<Value>, u64)> = Vec::new();
        for (values, seed) in jobs {
            let k = (key(values), *seed);
            if !self.index.contains_key(&k) && !todo.iter().any(|(v, s)| s == seed && v == values) {
                todo.push((values.clone(), *seed));
            }
        }
        if !todo.is_empty() {
            let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
            let exp = self.exp;
            let paths = &self.paths;
            let observed = &self.observed;
            let checks = self.checks;
            let bar = &self.bar;
            self.pool.install(|| {
                todo.par_iter().enumerate().for_each(|(i, (values, seed))| {
                    let params: Vec<(String, Value)> =
                        paths.iter().cloned().zip(values.iter().cloned()).collect();
                    let r = evaluate(exp, &params, *seed, observed, checks);
                    bar.inc(1);
                    results.lock().expect("no panics while held").push((i, r));
                })
            });
            let mut results = results.into_inner().expect("no panics while held");
            results.sort_by_key(|(i, _)| *i);
            for ((values, seed), (_, r)) in todo.into_iter().zip(results) {
                let (figures, events) = r.map_err(Failure::Run)?;
                self.ran += 1;
                self.events += events;
                self.index.insert((key(&values), seed), self.rows.len());
                self.rows.push(Evaluation {
                    values,
                    seed,
                    figures,
                    events,
                });
            }
            self.write().map_err(Failure::Run)?;
        }
        Ok(jobs
            .iter()
            .map(|(values, seed)| {
                let i = self.index[&(key(values), *seed)];
                self.rows[i].figures.clone()
            })
            .collect())
    }
}

/// A whole-number column exactly (seeds above 2^53 do not survive a
/// float).
pub fn u64s(df: &DataFrame, name: &str) -> Result<Vec<u64>, String> {
    let c = df
        .column(name)
        .and_then(|c| c.cast(&DataType::UInt64))
        .map_err(|e| format!("{name}: {e}"))?;
    let c = c.u64().map_err(|e| format!("{name}: {e}"))?;
    Ok((0..c.len()).map(|i| c.get(i).unwrap_or(0)).collect())
}

/// A value as a number, when it is one (durations in seconds).
pub fn numeric(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s
            .parse::<sim_core::time::SimDuration>()
            .ok()
            .map(|d| d.as_secs_f64()),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// The seeds a search judges on: a count (derived from the master seed
/// the way a sweep's shared replications are, the first being the master
/// seed itself) or an explicit list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SeedsSpec {
    /// How many.
    Count(u32),
    /// These.
    List(Vec<u64>),
}

impl SeedsSpec {
    /// The seeds, or why not: at least one, distinct, and no more than
    /// `limits.max_cells` (the runs a search may make at most).
    pub fn seeds(&self, master: u64, limits: &InputLimits) -> Result<Vec<u64>, String> {
        let n = match self {
            SeedsSpec::Count(n) => u64::from(*n),
            SeedsSpec::List(v) => v.len() as u64,
        };
        if n == 0 {
            return Err("give at least one seed".into());
        }
        if n > limits.max_cells {
            return Err(format!(
                "{n} seeds is more runs per point than --max-cells allows ({}; raise it with --max-cells)",
                limits.max_cells
            ));
        }
        let seeds: Vec<u64> = match self {
            SeedsSpec::Count(n) => (0..*n)
                .map(|r| crate::sweep::shared_seed(master, r))
                .collect(),
            SeedsSpec::List(v) => v.clone(),
        };
        let mut sorted = seeds.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("seed {} is listed twice", w[0]));
        }
        Ok(seeds)
    }
}

/// Checks a search's total runs against `--max-cells`, and the work of
/// one of its worlds against `--max-requests` (and the events limit).
pub fn check_runs(
    exp: &Experiment,
    runs: u64,
    limits: &InputLimits,
    at: &str,
) -> Result<(), crate::load::InputError> {
    if runs > limits.max_cells {
        return Err(exp.error_at(
            at,
            format!(
                "the search may make {runs} runs, more than --max-cells allows ({}; raise it with --max-cells)",
                limits.max_cells
            ),
        ));
    }
    Ok(())
}
