//! Sweeps: axes over any field path, combined as a grid or zipped, times a
//! number of replications; cells identified and seeded by their parameter
//! values, not their position.
//!
//! ```yaml
//! sweep:
//!   mode: grid              # or zip
//!   replications: 5
//!   axes:
//!     - path: client.retry.max_retries
//!       values: [0, 1, 2, 3]
//!     - path: upstream.latency_scale
//!       log_range: { from: 1, to: 10, count: 5 }
//!     - path: load.rate
//!       range: { from: 50, to: 200, step: 50 }
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};
use sim_core::rng::{Fnv1a, splitmix64};
use sim_core::time::SimDuration;
use sim_models::config::WorldConfig;
use yaml_serde::{Mapping, Value};

use crate::load::{Experiment, InputErrors, InputLimits};

/// How axes combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every combination.
    #[default]
    Grid,
    /// The i-th value of every axis together (axes of equal length).
    Zip,
}

/// Where each cell's seed comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seeds {
    /// From the cell's parameter values and replication: every cell draws
    /// its own randomness.
    #[default]
    PerCell,
    /// From the replication alone (common random numbers): every
    /// combination sees the same arrivals and latencies, so differences
    /// between cells come from the parameters, not from luck; replication 0
    /// uses the experiment's seed, as `stormsim run` does.
    Shared,
}

/// Evenly spaced values `from, from+step, ...` up to `to` inclusive:
/// numbers, or durations (`{ from: 500ms, to: 1s, step: 25ms }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Range {
    /// First value.
    pub from: Bound,
    /// Last value (included when the steps land on it).
    pub to: Bound,
    /// Step, above 0.
    pub step: Bound,
}

/// A range's bound or step: a number, or a duration with its unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Bound {
    /// A number.
    Number(f64),
    /// A duration (`250ms`).
    Duration(SimDuration),
}

/// Read by hand rather than as an untagged enum, whose error names
/// neither form: text is a duration, and says why it is not one
/// (`0.4ns`: finer than one nanosecond).
impl<'de> Deserialize<'de> for Bound {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Bound;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, or a duration with its unit (`250ms`, `1.5s`)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Bound, E> {
                v.parse().map(Bound::Duration).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Bound, E> {
                Ok(Bound::Number(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Bound, E> {
                Ok(Bound::Number(v as f64))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Bound, E> {
                Ok(Bound::Number(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Number(n) => write!(f, "{n}"),
            Bound::Duration(d) => write!(f, "{d}"),
        }
    }
}

impl Range {
    /// The range in numbers (durations in nanoseconds), and whether it is
    /// one of durations; `Err` when it mixes the two.
    fn numbers(&self) -> Result<(f64, f64, f64, bool), String> {
        match (self.from, self.to, self.step) {
            (Bound::Number(a), Bound::Number(b), Bound::Number(c)) => Ok((a, b, c, false)),
            (Bound::Duration(a), Bound::Duration(b), Bound::Duration(c)) => Ok((
                a.as_nanos() as f64,
                b.as_nanos() as f64,
                c.as_nanos() as f64,
                true,
            )),
            _ => Err("range needs from, to and step all numbers or all durations".into()),
        }
    }
}

/// `count` numbers from `from` to `to`, evenly spaced in logarithm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogRange {
    /// First value, above 0.
    pub from: f64,
    /// Last value, above 0.
    pub to: f64,
    /// How many values (at least 2).
    pub count: u32,
}

/// One axis: a field path and its values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// The field path, as in error messages: `client.retry.max_retries`,
    /// `timeline[0].set.value`.
    pub path: String,
    /// The values, as they would be written in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    /// Or a linear range of numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
    /// Or a logarithmic range of numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_range: Option<LogRange>,
}

/// The `sweep:` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Grid or zip (default grid).
    #[serde(default)]
    pub mode: Mode,
    /// Runs per combination, each with its own seed (default 1).
    #[serde(default = "one")]
    pub replications: u32,
    /// Per-cell seeds, or the same seeds for every combination (default
    /// `per_cell`).
    #[serde(default)]
    pub seeds: Seeds,
    /// The axes.
    #[serde(default)]
    pub axes: Vec<Axis>,
}

fn one() -> u32 {
    1
}

fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// Most values one axis may have.
const MAX_AXIS_VALUES: u64 = 1_000_000;

impl Axis {
    /// How many values the axis has, without listing them (0 when its
    /// definition is wrong: [`Axis::values`] says how).
    pub fn len(&self) -> u64 {
        if let Some(v) = &self.values {
            return v.len() as u64;
        }
        if let Some(r) = &self.range {
            let Ok((from, to, step, _)) = r.numbers() else {
                return 0;
            };
            let n = (to - from) / step + 1e-9;
            return if n.is_finite() && n >= 0.0 {
                (n.floor() as u64).saturating_add(1)
            } else {
                0
            };
        }
        self.log_range.as_ref().map_or(0, |l| u64::from(l.count))
    }

    /// Whether the axis has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The axis's values, a value written `{ label: NAME, value: V }`
    /// taken as `V`; `Err` says what is wrong with its definition.
    pub fn values(&self) -> Result<Vec<Value>, String> {
        Ok(self
            .labelled_values()?
            .into_iter()
            .map(|(_, v)| v)
            .collect())
    }

    /// The axis's values with their labels (`{ label: "the fix", value:
    /// {...} }`), for names in tables, legends and messages. A label never
    /// changes a cell's id or seed.
    pub fn labelled_values(&self) -> Result<Vec<(Option<String>, Value)>, String> {
        let raw = self.raw_values()?;
        if self.values.is_some() {
            return raw.iter().map(labelled).collect();
        }
        Ok(raw.into_iter().map(|v| (None, v)).collect())
    }

    fn raw_values(&self) -> Result<Vec<Value>, String> {
        let given = usize::from(self.values.is_some())
            + usize::from(self.range.is_some())
            + usize::from(self.log_range.is_some());
        if given != 1 {
            return Err("give exactly one of values, range, log_range".into());
        }
        if let Some(v) = &self.values {
            if v.is_empty() {
                return Err("values is empty".into());
            }
            return Ok(v.clone());
        }
        if let Some(r) = &self.range {
            let (from, to, step, durations) = r.numbers()?;
            if !(step > 0.0 && from.is_finite() && to.is_finite()) || to < from {
                return Err(format!(
                    "range needs from ≤ to and a step above 0, found from {}, to {}, step {}",
                    r.from, r.to, r.step
                ));
            }
            let n = self.len();
            if n > MAX_AXIS_VALUES {
                return Err(format!(
                    "range has {n} values, over the limit of {MAX_AXIS_VALUES} per axis"
                ));
            }
            return Ok((0..n)
                .map(|i| {
                    let v = from + i as f64 * step;
                    if durations {
                        Value::from(SimDuration::from_nanos(v.round() as u64).to_string())
                    } else {
                        number(v)
                    }
                })
                .collect());
        }
        let l = self.log_range.as_ref().expect("one given");
        if !(l.from > 0.0 && l.to > 0.0 && l.count >= 2 && l.from.is_finite() && l.to.is_finite()) {
            return Err(format!(
                "log_range needs from and to above 0 and count ≥ 2, found from {}, to {}, count {}",
                l.from, l.to, l.count
            ));
        }
        if u64::from(l.count) > MAX_AXIS_VALUES {
            return Err(format!(
                "log_range has {} values, over the limit of {MAX_AXIS_VALUES} per axis",
                l.count
            ));
        }
        let (a, b) = (l.from.ln(), l.to.ln());
        (0..l.count)
            .map(|i| {
                let v = (a + (b - a) * f64::from(i) / f64::from(l.count - 1)).exp();
                // Round to 12 significant digits so 10^k stays exact (where
                // the scale itself is a finite number).
                let digits = 12 - v.abs().log10().floor() as i32;
                let scale = 10f64.powi(digits);
                let rounded = (v * scale).round() / scale;
                let v = if rounded.is_finite() { rounded } else { v };
                if v.is_finite() && v > 0.0 {
                    Ok(number(v))
                } else {
                    Err(format!(
                        "log_range from {} to {} gives a value that is not a finite number above 0 (value {} of {})",
                        l.from,
                        l.to,
                        i + 1,
                        l.count
                    ))
                }
            })
            .collect()
    }
}

/// A value as written on an axis: `V`, or `{ label: NAME, value: V }`.
fn labelled(v: &Value) -> Result<(Option<String>, Value), String> {
    let Value::Mapping(m) = v else {
        return Ok((None, v.clone()));
    };
    let (Some(label), Some(value)) = (m.get("label"), m.get("value")) else {
        return Ok((None, v.clone()));
    };
    if m.len() != 2 {
        return Ok((None, v.clone()));
    }
    match label.as_str() {
        Some(l) if !l.trim().is_empty() => Ok((Some(l.trim().to_string()), value.clone())),
        _ => Err(format!(
            "a labelled value's label must be a non-empty string, found {}",
            canonical(label)
        )),
    }
}

/// One cell of a sweep (a plain run is a sweep of one cell).
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Position in the enumeration (grid order, replications innermost).
    pub index: u64,
    /// Stable id: a hash of the parameters and replication.
    pub id: String,
    /// (path, value) of each axis, in axis order.
    pub params: Vec<(String, Value)>,
    /// Replication number.
    pub replication: u32,
    /// The run's seed.
    pub seed: u64,
    /// Each axis value's label, in axis order (`None`: unlabelled).
    pub labels: Vec<Option<String>>,
}

impl Cell {
    /// The cell's name for people: its labels, or its changed fields in
    /// short readable form (never JSON), with its replication when there
    /// are several; "base" for a run of the base configuration.
    pub fn name(&self) -> String {
        if self.params.is_empty() {
            return "base".into();
        }
        let parts: Vec<String> = self
            .params
            .iter()
            .zip(self.labels.iter().chain(std::iter::repeat(&None)))
            .map(|((path, v), label)| match label {
                Some(l) => l.clone(),
                None => format!("{} = {}", short_path(path), readable(v)),
            })
            .collect();
        let mut name = parts.join(", ");
        if self.replication > 0 {
            name.push_str(&format!(" #{}", self.replication));
        }
        name
    }
}

/// The last two segments of a field path (`retry.max_retries`).
fn short_path(path: &str) -> &str {
    match path.rmatch_indices('.').nth(1) {
        Some((i, _)) => &path[i + 1..],
        None => path,
    }
}

/// A value in short readable form: scalars as written, mappings and lists
/// as their leaf fields (`retry.max_retries=3 attempt_timeout=2s`), cut to
/// a readable length.
pub fn readable(v: &Value) -> String {
    fn leaves(v: &Value, prefix: &str, out: &mut Vec<String>) {
        match v {
            Value::Mapping(m) => {
                for (k, x) in m {
                    let key = canonical(k);
                    let p = if prefix.is_empty() {
                        key
                    } else {
                        format!("{prefix}.{key}")
                    };
                    leaves(x, &p, out);
                }
            }
            Value::Sequence(s) => {
                let items: Vec<String> = s.iter().map(readable).collect();
                out.push(format!("{prefix}=[{}]", items.join(", ")));
            }
            Value::Tagged(t) => leaves(&t.value, prefix, out),
            other if prefix.is_empty() => out.push(canonical(other)),
            other => out.push(format!("{prefix}={}", canonical(other))),
        }
    }
    let mut out = Vec::new();
    leaves(v, "", &mut out);
    let text = out.join(" ");
    const MAX: usize = 60;
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX - 1).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// A value in one canonical text form (for ids, seeds and columns).
pub fn canonical(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The key a cell is identified and seeded by: its parameters sorted by
/// path, and its replication.
fn cell_key(params: &[(String, Value)], replication: u32) -> String {
    let mut sorted: Vec<(&String, String)> =
        params.iter().map(|(p, v)| (p, canonical(v))).collect();
    sorted.sort();
    let mut key = String::new();
    for (p, v) in sorted {
        key.push_str(p);
        key.push('=');
        key.push_str(&v);
        key.push(';');
    }
    key.push_str(&format!("replication={replication}"));
    key
}

fn hash(master_seed: u64, key: &str) -> u64 {
    let mut h = Fnv1a::new();
    h.write(&master_seed.to_le_bytes());
    h.write(key.as_bytes());
    let mut state = h.finish();
    splitmix64(&mut state)
}

impl SweepSpec {
    /// The axes' values, or errors located at their axis.
    fn axis_values(&self, exp: &Experiment) -> Result<Vec<Vec<Value>>, InputErrors> {
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (i, axis) in self.axes.iter().enumerate() {
            if axis.path == "seed" {
                errors.push(exp.error_at(
                    &format!("sweep.axes[{i}].path"),
                    "cells get their own seeds: use sweep.replications to run more of them",
                ));
                continue;
            }
            match axis.values() {
                Ok(v) => out.push(v),
                Err(m) => errors.push(exp.error_at(&format!("sweep.axes[{i}]"), m)),
            }
        }
        if !errors.is_empty() {
            return Err(InputErrors(errors));
        }
        if self.mode == Mode::Zip
            && let Some(first) = out.first()
            && let Some(i) = out.iter().position(|v| v.len() != first.len())
        {
            return Err(InputErrors(vec![exp.error_at(
                &format!("sweep.axes[{i}]"),
                format!(
                    "zip needs axes of equal length: {} values here, {} in the first axis",
                    out[i].len(),
                    first.len()
                ),
            )]));
        }
        Ok(out)
    }

    /// Refuses a value an axis repeats (in a zip, a row of values every
    /// axis repeats): its cells would have one id and seed, run twice and
    /// write one partition twice, and a count of cells would say more
    /// than were simulated. Values are compared as their cells' keys
    /// compare them, so `2` and `2.0` differ and a range whose step
    /// rounds to the same nanosecond repeats.
    fn refuse_repeated_cells(
        &self,
        exp: &Experiment,
        values: &[Vec<Value>],
    ) -> Result<(), InputErrors> {
        let rows: Vec<(usize, Vec<Vec<String>>)> = match self.mode {
            Mode::Grid => values
                .iter()
                .enumerate()
                .map(|(a, v)| (a, v.iter().map(|x| vec![canonical(x)]).collect()))
                .collect(),
            Mode::Zip => {
                let n = values.first().map_or(0, Vec::len);
                let rows = (0..n)
                    .map(|i| values.iter().map(|v| canonical(&v[i])).collect())
                    .collect();
                vec![(0, rows)]
            }
        };
        let mut errors = Vec::new();
        for (a, keys) in rows {
            let mut first = std::collections::BTreeMap::new();
            for (k, key) in keys.iter().enumerate() {
                let &mut j = first.entry(key).or_insert(k);
                if j != k {
                    let what = if self.mode == Mode::Zip {
                        format!("the values at [{k}] of every axis repeat those at [{j}]")
                    } else {
                        format!("{} repeats values[{j}]", key[0])
                    };
                    // A range's values are not written one by one.
                    let at = if self.axes[a].values.is_some() {
                        format!("sweep.axes[{a}].values[{k}]")
                    } else {
                        format!("sweep.axes[{a}]")
                    };
                    errors.push(exp.error_at(
                        &at,
                        format!("{what}: those cells would run twice under one id; remove one"),
                    ));
                }
            }
        }
        let mut paths = std::collections::BTreeMap::new();
        for (i, axis) in self.axes.iter().enumerate() {
            if let Some(j) = paths.insert(axis.path.as_str(), i) {
                errors.push(exp.error_at(
                    &format!("sweep.axes[{i}].path"),
                    format!(
                        "{} is also swept by sweep.axes[{j}]: one cell would set it twice; write its values on one axis",
                        axis.path
                    ),
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(InputErrors(errors))
        }
    }

    /// How many cells, replications included, without listing any value
    /// (saturating: seven axes of a million values are "over the limit",
    /// not an overflow).
    pub fn count(&self) -> u128 {
        let combos: u128 = match self.mode {
            _ if self.axes.is_empty() => 1,
            Mode::Grid => self
                .axes
                .iter()
                .try_fold(1u128, |acc, a| acc.checked_mul(u128::from(a.len())))
                .unwrap_or(u128::MAX),
            Mode::Zip => u128::from(self.axes[0].len()),
        };
        combos.saturating_mul(u128::from(self.replications))
    }

    /// Checks the sweep: axes, size, and every cell's world.
    pub fn check(&self, exp: &Experiment, limits: &InputLimits) -> Result<(), InputErrors> {
        if self.replications == 0 {
            return Err(InputErrors(vec![
                exp.error_at("sweep.replications", "must be at least 1"),
            ]));
        }
        let n = self.count();
        if n > u128::from(limits.max_cells) {
            let shown = if n == u128::MAX {
                "more than 10^38".to_string()
            } else {
                n.to_string()
            };
            return Err(InputErrors(vec![exp.error_at(
                "sweep",
                format!(
                    "{shown} cells, over the cell limit of {} (raise it with --max-cells)",
                    limits.max_cells
                ),
            )]));
        }
        let values = self.axis_values(exp)?;
        self.refuse_repeated_cells(exp, &values)?;
        let mut errors = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        // Every cell's resolved configuration gets the checks the base
        // file gets, work limits included.
        for cell in cells(exp)? {
            let checked = cell_world(exp, &cell).and_then(|w| {
                crate::load::check_work(&w, limits).map_err(|(p, m)| {
                    let at = exp
                        .sweep
                        .as_ref()
                        .and_then(|s| {
                            s.axes
                                .iter()
                                .position(|a| cell.params.iter().any(|(cp, _)| cp == &a.path))
                        })
                        .map_or_else(|| p.clone(), |i| format!("sweep.axes[{i}]"));
                    exp.error_at(&at, format!("with {}: {p}: {m}", describe(&cell.params)))
                })
            });
            if let Err(e) = checked {
                // One message per distinct problem: one that every value
                // of an axis has (a misspelt path) is told once, with the
                // first cell that shows it.
                let with = format!("with {}: ", describe(&cell.params));
                let problem = e.message.strip_prefix(&with).unwrap_or(&e.message);
                if seen.insert((e.path.clone(), problem.to_string())) {
                    errors.push(e);
                }
                if errors.len() >= 10 {
                    break;
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(InputErrors(errors))
        }
    }
}

/// Every cell of `exp`, in enumeration order.
pub fn cells(exp: &Experiment) -> Result<Vec<Cell>, InputErrors> {
    let master = exp.world.seed;
    let Some(sweep) = &exp.sweep else {
        return Ok(vec![Cell {
            index: 0,
            id: format!("{:016x}", hash(master, "")),
            params: Vec::new(),
            replication: 0,
            seed: master,
            labels: Vec::new(),
        }]);
    };
    let values = sweep.axis_values(exp)?;
    let labels: Vec<Vec<Option<String>>> = sweep
        .axes
        .iter()
        .map(|a| {
            a.labelled_values()
                .map(|v| v.into_iter().map(|(l, _)| l).collect())
                .unwrap_or_default()
        })
        .collect();
    let combos: Vec<Vec<usize>> = match sweep.mode {
        _ if values.is_empty() => vec![vec![]],
        Mode::Zip => (0..values[0].len())
            .map(|i| vec![i; values.len()])
            .collect(),
        Mode::Grid => {
            let mut all = vec![vec![]];
            for v in &values {
                all = all
                    .into_iter()
                    .flat_map(|prefix: Vec<usize>| {
                        (0..v.len()).map(move |i| {
                            let mut p = prefix.clone();
                            p.push(i);
                            p
                        })
                    })
                    .collect();
            }
            all
        }
    };
    let mut out = Vec::new();
    for combo in combos {
        let params: Vec<(String, Value)> = combo
            .iter()
            .enumerate()
            .map(|(a, &i)| (sweep.axes[a].path.clone(), values[a][i].clone()))
            .collect();
        let cell_labels: Vec<Option<String>> = combo
            .iter()
            .enumerate()
            .map(|(a, &i)| labels[a].get(i).cloned().flatten())
            .collect();
        for r in 0..sweep.replications {
            let key = cell_key(&params, r);
            let h = hash(master, &key);
            let seed = match sweep.seeds {
                Seeds::PerCell => splitmix64(&mut h.clone()),
                Seeds::Shared => shared_seed(master, r),
            };
            out.push(Cell {
                index: out.len() as u64,
                id: format!("{h:016x}"),
                params: params.clone(),
                replication: r,
                seed,
                labels: cell_labels.clone(),
            });
        }
    }
    Ok(out)
}

/// The seed of replication `r` when every cell shares its seeds (common
/// random numbers): the master seed itself for the first.
pub fn shared_seed(master: u64, r: u32) -> u64 {
    if r == 0 {
        master
    } else {
        splitmix64(&mut hash(master, &format!("replication={r}")))
    }
}

/// Sets the value at a field path (`a.b[2].c`) inside `root`, creating
/// mappings on the way; list items must exist.
pub fn set_path(root: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let mut cur = root;
    let parts: Vec<&str> = path.split('.').collect();
    for (n, part) in parts.iter().enumerate() {
        let last_part = n + 1 == parts.len();
        let (name, idx) = match part.find('[') {
            Some(i) => (&part[..i], Some(&part[i..])),
            None => (*part, None),
        };
        if name.is_empty() {
            return Err(format!("{path:?} has an empty field name"));
        }
        if !matches!(cur, Value::Mapping(_)) {
            *cur = Value::Mapping(Mapping::new());
        }
        let Value::Mapping(m) = cur else {
            unreachable!("just made a mapping")
        };
        let indices: Vec<usize> = match idx {
            Some(s) => s
                .split('[')
                .filter(|x| !x.is_empty())
                .map(|x| {
                    x.trim_end_matches(']')
                        .parse::<usize>()
                        .map_err(|_| format!("{path:?}: bad index in {part:?}"))
                })
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let key = Value::from(name);
        if last_part && indices.is_empty() {
            m.insert(key, value);
            return Ok(());
        }
        cur = m.entry(key).or_insert(Value::Null);
        for (k, i) in indices.iter().enumerate() {
            if cur.is_null() {
                return Err(format!("{path:?}: {name} has 0 entries, no [{i}]"));
            }
            let Value::Sequence(seq) = cur else {
                return Err(format!("{path:?}: {name} is not a list here"));
            };
            let len = seq.len();
            let item = seq
                .get_mut(*i)
                .ok_or_else(|| format!("{path:?}: {name} has {len} entries, no [{i}]"))?;
            if last_part && k + 1 == indices.len() {
                *item = value;
                return Ok(());
            }
            cur = item;
        }
    }
    Ok(())
}

/// The world of one cell: the experiment's with the cell's parameters set
/// and its seed; validated. A problem is placed at the sweep axis of the
/// parameter that causes it.
pub fn cell_world(exp: &Experiment, cell: &Cell) -> Result<WorldConfig, crate::load::InputError> {
    cell_world_at(exp, cell, |path| {
        exp.sweep
            .as_ref()
            .and_then(|s| s.axes.iter().position(|a| a.path == path))
            .map_or("sweep".to_string(), |i| format!("sweep.axes[{i}]"))
    })
}

/// [`cell_world`] for parameters written elsewhere than in sweep axes
/// (a calibration's unknowns, a boundary's axes): `axis_at` names the
/// field path where the parameter at a path is written.
pub fn cell_world_at(
    exp: &Experiment,
    cell: &Cell,
    axis_at: impl Fn(&str) -> String,
) -> Result<WorldConfig, crate::load::InputError> {
    let mut v = exp.world_value.clone();
    for (path, value) in &cell.params {
        set_path(&mut v, path, value.clone())
            .map_err(|m| exp.error_at(&format!("{}.path", axis_at(path)), m))?;
    }
    let mut world: WorldConfig = crate::load::resolve(v).map_err(|(path, m)| {
        let axis = cell
            .params
            .iter()
            .find(|(p, _)| path.starts_with(p.as_str()) || p.starts_with(&path));
        let at = axis.map_or_else(|| "sweep".to_string(), |(p, _)| axis_at(p));
        exp.error_at(&at, format!("with {}: {path}: {m}", describe(&cell.params)))
    })?;
    world.seed = cell.seed;
    world.validate().map_err(|es| {
        let e = &es[0];
        let axis = cell
            .params
            .iter()
            .find(|(p, _)| e.path.starts_with(p.as_str()))
            .map(|(p, _)| axis_at(p));
        let at = axis.unwrap_or_else(|| e.path.clone());
        exp.error_at(
            &at,
            format!("with {}: {}: {}", describe(&cell.params), e.path, e.message),
        )
    })?;
    Ok(world)
}

/// `a = 1, b = 2s` for messages.
pub fn describe(params: &[(String, Value)]) -> String {
    if params.is_empty() {
        return "the base configuration".into();
    }
    params
        .iter()
        .map(|(p, v)| format!("{p} = {}", readable(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `--shard K/N` selection: cells whose index ≡ K (mod N), K from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u64,
    /// Shards in all.
    pub count: u64,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected K/N with 0 ≤ K < N (for example 2/8), found {s:?}");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether `cell` belongs to this shard.
    pub fn has(&self, cell: &Cell) -> bool {
        cell.index % self.count == self.index
    }

    /// The shard given by a job array's environment, with `N` from
    /// `--shards`: Kubernetes Indexed Jobs set `JOB_COMPLETION_INDEX`
    /// (from 0), Slurm arrays `SLURM_ARRAY_TASK_ID` (taken as given, so
    /// launch the array as `--array=0-(N-1)`).
    pub fn from_env(count: u64) -> Result<Option<Shard>, String> {
        for var in ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"] {
            if let Ok(v) = std::env::var(var) {
                let index: u64 = v
                    .trim()
                    .parse()
                    .map_err(|_| format!("{var}={v:?} is not a whole number"))?;
                if index >= count {
                    return Err(format!(
                        "{var}={index} but there are only {count} shards (0 to {})",
                        count - 1
                    ));
                }
                return Ok(Some(Shard { index, count }));
            }
        }
        Ok(None)
    }
}
