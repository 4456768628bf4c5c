//! `stormsim report`: a self-contained HTML report of a dataset, read back
//! from its Parquet, with charts as inline SVG (and as standalone files).
//!
//! What it shows depends on the dataset: one run gets the full set of
//! charts with a narrative; a few runs get their key curves overlaid and a
//! ranked table; a sweep gets a heatmap of a key figure over two axes
//! (mean over replications and the other axes) and the map of which cells
//! stayed collapsed. No JavaScript, no network: it opens offline.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use sim_core::time::{SimDuration, SimTime, TimeOfDay, WallClock};

use crate::charts::{self, Marker, Series};
use crate::dataset::Writer;
use sim_models::kpi::Objective;

/// What to put on a sweep's heatmap.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Summary column to map (default `peak_error_rate`).
    pub kpi: Option<String>,
    /// Axis across (default: the first swept path).
    pub x: Option<String>,
    /// Axis up (default: the second swept path).
    pub y: Option<String>,
}

fn pe(e: PolarsError) -> String {
    e.to_string()
}

fn read_table(dir: &Path, table: &str) -> Result<Option<DataFrame>, String> {
    read_columns(dir, table, |_| true)
}

/// The timeseries columns the report draws or tells from: read alone, a
/// long run's table (155 columns, a row a bucket) costs a fifth of the
/// memory and time to read (a simulated week of 1 s buckets: 2 GB whole).
const TIMESERIES_READ: &[&str] = &[
    "run_id",
    "variant",
    "experiment",
    "replication",
    "t_s",
    "offered",
    "attempts",
    "attempts_first",
    "attempts_retry",
    "attempts_hedge",
    "goodput_per_s",
    "upstream_goodput",
    "upstream_wasted",
    "error_rate",
    "pool_in_use_max",
    "pool_waiters_max",
    "pool_wait_p99_s",
    "calls_in_flight_max",
    "upstream_in_service_max",
    "upstream_queued_max",
    "pods_up_min",
    "pods_down_max",
    "pods_unready_max",
    "breakers_open_mean",
    "breakers_open_max",
    "breakers_half_open_mean",
    "breakers_half_open_max",
    "bulkhead_waiting_max",
    "bulkhead_limit_min",
    "bulkhead_limit_max",
    "pods_ejected_max",
    "e2e_p50_s",
    "e2e_p99_s",
    "first_attempt_p50_s",
    "first_attempt_p99_s",
    "retry_p99_s",
];

/// Whether the report reads the timeseries column `name`.
/// The `nodes` columns the tiers section reads (a graph of a thousand
/// nodes has a row per node and bucket: half its columns, half the
/// memory).
const NODES_READ: &[&str] = &[
    "run_id",
    "node",
    "kind",
    "t_s",
    "offered",
    "attempts",
    "retries",
    "answered",
    "failed",
    "timeouts",
    "calls_retried",
    "calls_rescued",
    "latency_p99_s",
    "per_request",
    "replicas_max",
];

fn report_reads(name: &str) -> bool {
    TIMESERIES_READ.contains(&name) || name.starts_with("outcome_")
}

/// [`read_table`], of each file only the columns `wanted` (in the file's
/// order).
fn read_columns(
    dir: &Path,
    table: &str,
    wanted: impl Fn(&str) -> bool,
) -> Result<Option<DataFrame>, String> {
    let Ok(cells) = fs::read_dir(dir.join(table)) else {
        return Ok(None);
    };
    let mut paths: Vec<PathBuf> = cells
        .flatten()
        .map(|e| e.path().join("part-0.parquet"))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let mut all: Option<DataFrame> = None;
    for p in paths {
        let f = fs::File::open(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let mut reader = ParquetReader::new(f);
        let names: Vec<String> = reader
            .schema()
            .map_err(|e| format!("{}: {e}", p.display()))?
            .iter_names()
            .map(|n| n.to_string())
            .filter(|n| wanted(n))
            .collect();
        let df = reader
            .with_columns(Some(names))
            .finish()
            .map_err(|e| format!("{}: {e}", p.display()))?;
        match &mut all {
            Some(a) => {
                if a.get_column_names() != df.get_column_names() {
                    return Err(format!(
                        "{}: its columns differ from the other cells' of the {table} table: the folder mixes datasets (a plain run and a sweep, or two versions of stormsim); report each from its own folder",
                        p.display()
                    ));
                }
                a.vstack_mut(&df)
                    .map_err(|e| format!("{}: {e}", p.display()))?;
            }
            None => all = Some(df),
        }
    }
    // One chunk per column: a value looked up by row in a table stacked
    // from 10,000 cells would otherwise search 10,000 chunks.
    if let Some(a) = &mut all {
        a.rechunk_mut();
    }
    Ok(all)
}

/// A column as floats, nulls as `None`.
pub(crate) fn optional_floats(df: &DataFrame, name: &str) -> Result<Vec<Option<f64>>, String> {
    let c = df
        .column(name)
        .map_err(pe)?
        .as_materialized_series()
        .cast(&DataType::Float64)
        .map_err(pe)?;
    let ca = c.f64().map_err(pe)?;
    Ok((0..ca.len()).map(|i| ca.get(i)).collect())
}

/// The title of the chart of calls in bulkheads' lines.
const BULKHEAD_TITLE: &str = "Calls waiting for a place in a bulkhead (all pods)";

/// Whether any call waited in a bulkhead's line: its chart is drawn only
/// then (and a dataset from before the column has none).
fn waited_for_bulkheads(ts: &DataFrame) -> Result<bool, String> {
    if ts.column("bulkhead_waiting_max").is_err() {
        return Ok(false);
    }
    Ok(floats(ts, "bulkhead_waiting_max")?.iter().any(|v| *v > 0.0))
}

/// The title of the chart of the places adaptive bulkheads allow.
const LIMIT_TITLE: &str = "Places the adaptive bulkheads allow (all pods, every edge)";

/// Whether any bulkhead's limit adapts: its chart is drawn only then
/// (and a dataset from before the column has none).
fn adaptive_limits(ts: &DataFrame) -> Result<bool, String> {
    if ts.column("bulkhead_limit_max").is_err() {
        return Ok(false);
    }
    Ok(floats(ts, "bulkhead_limit_max")?.iter().any(|v| *v > 0.0))
}

/// Whether outlier detection held any of the entry's pods out: the pods
/// chart shows them only then (and a dataset from before the column has
/// none).
fn ejected_pods(ts: &DataFrame) -> Result<bool, String> {
    if ts.column("pods_ejected_max").is_err() {
        return Ok(false);
    }
    Ok(floats(ts, "pods_ejected_max")?.iter().any(|v| *v > 0.0))
}

/// A column as floats (nulls as NaN).
fn floats(df: &DataFrame, name: &str) -> Result<Vec<f64>, String> {
    Ok(optional_floats(df, name)?
        .into_iter()
        .map(|v| v.unwrap_or(f64::NAN))
        .collect())
}

pub(crate) fn strings(df: &DataFrame, name: &str) -> Result<Vec<String>, String> {
    let c = df
        .column(name)
        .map_err(pe)?
        .as_materialized_series()
        .cast(&DataType::String)
        .map_err(pe)?;
    let ca = c.str().map_err(pe)?;
    Ok((0..ca.len())
        .map(|i| ca.get(i).unwrap_or("").to_string())
        .collect())
}

/// `--kpi` names a numeric or yes/no summary column (`metastable`: the
/// heatmap shows its share); if not, the closest name and the columns it
/// may name.
fn check_kpi(summary: &DataFrame, kpi: &str) -> Result<(), String> {
    let numeric: Vec<&str> = summary
        .columns()
        .iter()
        .filter(|c| c.dtype().is_primitive_numeric() || c.dtype().is_bool())
        .map(|c| c.name().as_str())
        .collect();
    if numeric.contains(&kpi) {
        return Ok(());
    }
    let hint = crate::load::closest(kpi, numeric.iter().copied())
        .map_or(String::new(), |c| format!("; did you mean `{c}`?"));
    Err(format!(
        "--kpi {kpi}: not a numeric or yes/no column of the summary table{hint} (such columns: {})",
        numeric.join(", ")
    ))
}

/// `--x` and `--y` name swept parameters of the dataset (or
/// `replication`), whatever the report then draws: on a single run, or
/// naming a parameter not swept, they would be ignored without a word.
/// (The same axis twice is allowed: it pools the other axes.)
fn check_axes(axes: &[String], opts: &ReportOptions) -> Result<(), String> {
    for (flag, axis) in [("--x", &opts.x), ("--y", &opts.y)] {
        let Some(a) = axis else { continue };
        if axes.is_empty() {
            return Err(format!(
                "{flag} {a}: not a swept parameter: this dataset has no sweep (--x and --y choose the axes of a sweep's heatmap)"
            ));
        }
        if a != "replication" && !axes.contains(a) {
            let hint = crate::load::closest(a, axes.iter().map(String::as_str))
                .map_or(String::new(), |c| format!("; did you mean `{c}`?"));
            return Err(format!(
                "{flag} {a}: not a swept parameter of this dataset ({}){hint}",
                axes.join(", ")
            ));
        }
    }
    Ok(())
}

fn has(df: &DataFrame, name: &str) -> bool {
    df.column(name).is_ok()
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The wall clock of the dataset, from its manifest's first cell config.
fn wall_clock(dir: &Path) -> WallClock {
    let start = fs::read_dir(dir.join("summary"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .and_then(|e| fs::File::open(e.path().join("part-0.parquet")).ok())
        .and_then(|f| {
            let mut r = ParquetReader::new(f);
            let meta = r.get_metadata().ok()?.clone();
            let kv = meta.key_value_metadata().as_ref()?;
            let config = kv
                .iter()
                .find(|k| k.key == "stormsim.config")?
                .value
                .clone()?;
            let v: serde_json::Value = serde_json::from_str(&config).ok()?;
            v["clock"]["start"].as_str()?.parse::<TimeOfDay>().ok()
        });
    start.map(WallClock::new).unwrap_or_default()
}

/// One section of the page.
struct Section {
    title: String,
    text: String,
    charts: Vec<(String, String)>,
    table: Option<String>,
}

fn table_html(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><tr>");
    for h in head {
        s.push_str(&format!("<th>{}</th>", escape(h)));
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            s.push_str(&format!("<td>{}</td>", escape(c)));
        }
        s.push_str("</tr>");
    }
    s + "</table>"
}

fn pct(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{:.1} %", 100.0 * v)
    }
}

fn num(v: f64, digits: usize) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:.digits$}")
    }
}

/// Most runs whose lines a chart overlays (and whose tiers the report
/// draws): past this, a sweep is told by its ranking, figures and maps.
const OVERLAID_RUNS: usize = 12;

/// Builds the report of the dataset in `dir`: `dir/report.html` and
/// `dir/charts/*.svg`. Returns the HTML's path.
pub fn report(dir: &Path, opts: &ReportOptions) -> Result<PathBuf, String> {
    let manifest_path = dir.join("manifest.json");
    let manifest: serde_json::Value = match fs::read_to_string(&manifest_path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not a stormsim dataset: {} is not a valid manifest ({e})",
                dir.display(),
                manifest_path.display()
            )
        })?,
        Err(e) => {
            return Err(format!(
                "{} is not a stormsim dataset (no manifest.json: {e})",
                dir.display()
            ));
        }
    };
    match manifest["dataset"].as_str() {
        Some("boundary") => return crate::boundary::rerender(dir),
        Some("calibrate") => return crate::calibrate::rerender(dir),
        _ => {}
    }
    // Which build wrote the dataset, and which reports it: the same, or
    // both named (a folder another build wrote still reports).
    let provenance = match manifest["build"].as_str() {
        Some(b) if b == crate::runner::BUILD => {
            format!("stormsim {} (build {b})", env!("CARGO_PKG_VERSION"))
        }
        written => format!(
            "written by {}, reported by stormsim {} (build {})",
            written.map_or("a stormsim from before builds were named".into(), |b| {
                format!("stormsim build {b}")
            }),
            env!("CARGO_PKG_VERSION"),
            crate::runner::BUILD
        ),
    };
    let objective: Objective = serde_json::from_value(manifest["objective"].clone())
        .ok()
        .flatten()
        .unwrap_or_default();
    let name = manifest["experiment"]
        .as_str()
        .unwrap_or("experiment")
        .to_string();
    let axes: Vec<String> = manifest["axes"].as_array().map_or(Vec::new(), |a| {
        a.iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect()
    });
    let summary =
        read_table(dir, "summary")?.ok_or("no summary table: run the experiment first")?;
    if let Some(kpi) = &opts.kpi {
        check_kpi(&summary, kpi)?;
    }
    check_axes(&axes, opts)?;
    let runs = strings(&summary, "run_id")?;
    // The bucket tables are drawn for one run or a comparison of a few; a
    // larger sweep's report is drawn from its summary (and its events,
    // for a story's markers), so its other tables (most of a sweep's
    // bytes) are not read.
    let few = runs.len() <= OVERLAID_RUNS;
    let timeseries = if few {
        Some(read_columns(dir, "timeseries", report_reads)?.ok_or("no timeseries table")?)
    } else {
        None
    };
    // A sweep over parameters gets its maps only when two axes have two
    // values or more each; anything else (a before/after, alternatives)
    // is a comparison of variants, told as one story.
    let varied: Vec<String> = axes
        .iter()
        .filter(|a| has(&summary, a))
        .filter(|a| {
            let mut v = strings(&summary, a).unwrap_or_default();
            v.sort();
            v.dedup();
            v.len() >= 2
        })
        .cloned()
        .collect();
    let story = runs.len() > 1 && varied.len() < 2;
    // The timeline's markers, for the charts and the story.
    let events = if few || story {
        read_table(dir, "events")?
    } else {
        None
    };
    let groups = if runs.len() == 1 {
        read_table(dir, "pod_groups")?
    } else {
        None
    };
    let nodes = if few {
        read_columns(dir, "nodes", |c| NODES_READ.contains(&c))?
    } else {
        None
    };
    let clock = wall_clock(dir);
    let label = move |x: f64| {
        let t = SimTime::ZERO.saturating_add(SimDuration::from_secs_f64(x));
        let l = clock.label(t);
        l.split('.').next().unwrap_or(&l).to_string()
    };
    let marks = markers(events.as_ref())?;
    let mut sections = Vec::new();
    if let (1, Some(timeseries)) = (runs.len(), &timeseries) {
        sections.extend(run_sections(
            timeseries,
            events.as_ref(),
            groups.as_ref(),
            &summary,
            &label,
        )?);
    } else {
        if story {
            sections.push(story_section(&summary, &axes, &objective, &marks, &label)?);
        }
        sections.push(ranked_section(&summary, &axes, &objective)?);
        if let Some(rows) = crate::replicas::rows(&summary, &axes)? {
            sections.push(Section {
                title: "Over replications".into(),
                text: "Each variant over its replications (seeds): the mean of each figure with its 95 % t interval, and the share of replications that stayed down (metastable) with Wilson's 95 % interval. A ranking of single runs can rest on one lucky seed; these intervals say how far it can.".into(),
                charts: Vec::new(),
                table: Some(table_html(&crate::replicas::headings(), &rows)),
            });
        }
        sections.push(figures_section(&summary, &axes, &objective)?);
        if let Some(timeseries) = &timeseries {
            sections.push(overlay_section(
                timeseries, &summary, &axes, &marks, &label,
            )?);
        }
        if varied.len() >= 2 || opts.x.is_some() {
            sections.extend(sweep_sections(&summary, &axes, opts)?);
        }
    }
    // A graph's tiers, for a run or a comparison of a few.
    if let (Some(n), Some(timeseries)) = (&nodes, &timeseries) {
        sections.extend(tiers_section(
            n, timeseries, &summary, &axes, &marks, &label,
        )?);
    }
    let charts_dir = dir.join("charts");
    let writer = Writer::register(dir)?;
    let mut body = String::new();
    for s in &sections {
        body.push_str(&format!(
            "<section><h2>{}</h2><p>{}</p>",
            escape(&s.title),
            escape(&s.text)
        ));
        for (file, svg) in &s.charts {
            writer.write_text(&charts_dir.join(file), svg)?;
            body.push_str(&format!("<figure>{svg}</figure>"));
        }
        if let Some(t) = &s.table {
            body.push_str(t);
        }
        body.push_str("</section>");
    }
    let html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}}\
         h1{{font-size:1.6em}} h2{{font-size:1.2em;border-bottom:1px solid #ccc}}\
         figure{{margin:1em 0}} svg{{max-width:100%;height:auto}}\
         table{{border-collapse:collapse;font-size:.85em}} td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}\
         </style></head><body><h1>{t}</h1><p>{n} run(s); {v}. Generated from the Parquet in this directory: \
         <code>stormsim report {d}</code> regenerates it.</p>{body}</body></html>\n",
        t = escape(&name),
        n = runs.len(),
        v = escape(&provenance),
        d = escape(&dir.display().to_string()),
    );
    let path = dir.join("report.html");
    writer.write_text(&path, &html)?;
    Ok(path)
}

/// Timeline markers from the events table.
fn markers(events: Option<&DataFrame>) -> Result<Vec<Marker>, String> {
    let Some(ev) = events else {
        return Ok(Vec::new());
    };
    if ev.height() == 0 {
        return Ok(Vec::new());
    }
    let (t, kind, detail) = (
        floats(ev, "t_s")?,
        strings(ev, "kind")?,
        strings(ev, "detail")?,
    );
    // Several runs carry the same timeline: each action once, in time
    // order, with the timeline entry it comes from (`[2] load.rate = 103`).
    let mut actions: Vec<(f64, String, String)> = (0..t.len())
        .filter(|&i| kind[i] == "timeline")
        .map(|i| match detail[i].split_once("] ") {
            Some((entry, label)) => (t[i], entry.to_string(), label.to_string()),
            None => (t[i], String::new(), detail[i].clone()),
        })
        .collect();
    actions.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
    actions.dedup();
    Ok(ramps_merged(actions))
}

/// One marker per action, except a ramp: its many small steps (one entry,
/// one parameter, more than a pulse's set and revert) are one marker at
/// its start, `load.rate = 103 → 250`.
fn ramps_merged(actions: Vec<(f64, String, String)>) -> Vec<Marker> {
    let param = |label: &str| label.split_once(" = ").map(|(p, _)| p.to_string());
    // Each entry's actions on one parameter, in time order (one pass: a
    // swept ramp over a thousand cells has tens of thousands of steps).
    let mut groups: BTreeMap<(&str, Option<String>), Vec<usize>> = BTreeMap::new();
    for (i, (_, entry, label)) in actions.iter().enumerate() {
        if !entry.is_empty() {
            groups.entry((entry, param(label))).or_default().push(i);
        }
    }
    // A ramp's steps come at many instants; a pulse swept over its value
    // sets several values at one instant and reverts at another. A ramp
    // is told at its first step, with its last value.
    let mut merged: Vec<Option<String>> = vec![None; actions.len()];
    let mut hidden = vec![false; actions.len()];
    for steps in groups.values() {
        let mut instants: Vec<f64> = steps.iter().map(|&j| actions[j].0).collect();
        instants.dedup();
        let (first, last) = (steps[0], steps[steps.len() - 1]);
        if instants.len() > 2
            && let Some((_, to)) = actions[last].2.split_once(" = ")
        {
            merged[first] = Some(format!("{} → {to}", actions[first].2));
            for &j in &steps[1..] {
                hidden[j] = true;
            }
        }
    }
    actions
        .into_iter()
        .zip(merged.into_iter().zip(hidden))
        .filter(|(_, (_, hidden))| !hidden)
        .map(|((x, _, label), (merged, _))| Marker {
            x,
            label: merged.unwrap_or(label),
        })
        .collect()
}

fn series(df: &DataFrame, x: &[f64], col: &str, name: &str) -> Result<Series, String> {
    let y = floats(df, col)?;
    Ok(Series {
        name: name.to_string(),
        points: x.iter().copied().zip(y).collect(),
    })
}

/// One series per pod group of a `pod_groups` column, named by its pods.
fn per_group(pg: &DataFrame, col: &str) -> Result<Vec<Series>, String> {
    let (t, group, pods, y) = (
        floats(pg, "t_s")?,
        floats(pg, "group")?,
        strings(pg, "pods")?,
        floats(pg, col)?,
    );
    let mut out: Vec<Series> = Vec::new();
    for i in 0..t.len() {
        let g = group[i] as usize;
        while out.len() <= g {
            out.push(Series {
                name: String::new(),
                points: Vec::new(),
            });
        }
        if out[g].name.is_empty() {
            out[g].name = format!("pods {}", pods[i]);
        }
        out[g].points.push((t[i], y[i]));
    }
    Ok(out)
}

/// One node's figures over a run, from the `nodes` table.
#[derive(Default)]
struct NodeTotals {
    kind: String,
    offered: f64,
    attempts: f64,
    retries: f64,
    answered: f64,
    failed: f64,
    timeouts: f64,
    calls_retried: f64,
    calls_rescued: f64,
    p99_max: f64,
    /// A service's fewest and most replicas in a bucket.
    pods: Option<(f64, f64)>,
}

/// The service graph's tiers: per node and run, what it was offered, its
/// amplification (its own count per user request), answers, failures,
/// the share of an edge's retried calls its retries rescued and the
/// worst bucket p99; for a single run, each edge's and dependency's
/// amplification over time. `None` for the single tier (its one edge is
/// the run's own figures).
fn tiers_section(
    nodes: &DataFrame,
    ts: &DataFrame,
    summary: &DataFrame,
    axes: &[String],
    marks: &[charts::Marker],
    label: &dyn Fn(f64) -> String,
) -> Result<Option<Section>, String> {
    let node = strings(nodes, "node")?;
    // Nodes in the order the table lists them (services, edges,
    // dependencies), runs in the summary's order; each node's rows, found
    // in one pass (a graph of a thousand nodes has a million rows).
    let mut order: Vec<String> = Vec::new();
    let mut rows_of: Vec<Vec<usize>> = Vec::new();
    let mut index: std::collections::BTreeMap<&str, usize> = Default::default();
    for (i, n) in node.iter().enumerate() {
        let k = *index.entry(n).or_insert_with(|| {
            order.push(n.clone());
            rows_of.push(Vec::new());
            order.len() - 1
        });
        rows_of[k].push(i);
    }
    if order == ["service", "service->upstream", "upstream"] {
        return Ok(None); // the single tier: its figures are the run's own
    }
    let (run, kind) = (strings(nodes, "run_id")?, strings(nodes, "kind")?);
    let num = |c: &str| floats(nodes, c);
    let (offered, attempts, retries, answered, failed, timeouts) = (
        num("offered")?,
        num("attempts")?,
        num("retries")?,
        num("answered")?,
        num("failed")?,
        num("timeouts")?,
    );
    let p99 = optional_floats(nodes, "latency_p99_s")?;
    let (t, per) = (num("t_s")?, optional_floats(nodes, "per_request")?);
    // Written by every run since services have replicas; an older
    // dataset's nodes have none.
    let replicas = match nodes.column("replicas_max") {
        Ok(_) => optional_floats(nodes, "replicas_max")?,
        Err(_) => vec![None; node.len()],
    };
    // Written by every run since edges count what their retries rescued;
    // an older dataset's nodes have neither (its column left blank).
    let rescues = match (nodes.column("calls_retried"), nodes.column("calls_rescued")) {
        (Ok(_), Ok(_)) => Some((num("calls_retried")?, num("calls_rescued")?)),
        _ => None,
    };
    let runs = strings(summary, "run_id")?;
    let names = cell_names(summary, axes)?;
    let users: std::collections::BTreeMap<String, f64> = {
        let (r, o) = (strings(ts, "run_id")?, floats(ts, "offered")?);
        let mut m = std::collections::BTreeMap::new();
        for (r, o) in r.into_iter().zip(o) {
            *m.entry(r).or_insert(0.0) += o;
        }
        m
    };
    let mut totals: std::collections::BTreeMap<(String, String), NodeTotals> = Default::default();
    for i in 0..node.len() {
        let e = totals.entry((run[i].clone(), node[i].clone())).or_default();
        e.kind = kind[i].clone();
        e.offered += offered[i];
        e.attempts += attempts[i];
        e.retries += retries[i];
        e.answered += answered[i];
        e.failed += failed[i];
        e.timeouts += timeouts[i];
        if let Some((retried, rescued)) = &rescues {
            e.calls_retried += retried[i];
            e.calls_rescued += rescued[i];
        }
        e.p99_max = e.p99_max.max(p99[i].unwrap_or(0.0));
        if let (Some(r), "service") = (replicas[i], kind[i].as_str()) {
            let (lo, hi) = e.pods.unwrap_or((r, r));
            e.pods = Some((lo.min(r), hi.max(r)));
        }
    }
    let mut rows = Vec::new();
    for (r, name) in runs.iter().zip(&names) {
        let u = users.get(r).copied().unwrap_or(0.0).max(1.0);
        for n in &order {
            let Some(x) = totals.get(&(r.clone(), n.clone())) else {
                continue;
            };
            let own = if x.kind == "edge" {
                x.attempts
            } else {
                x.offered
            };
            let mut row = Vec::new();
            if runs.len() > 1 {
                row.push(name.clone());
            }
            row.extend([
                x.kind.clone(),
                n.clone(),
                format!("{:.0}", x.offered),
                format!("{:.2}", own / u),
                if x.kind == "edge" {
                    pct(x.retries / x.attempts.max(1.0))
                } else {
                    "".into()
                },
                format!("{:.0}", x.answered),
                format!("{:.0}", x.failed),
                if x.kind == "edge" {
                    format!("{:.0}", x.timeouts)
                } else {
                    "".into()
                },
                // "-" for an edge that retried nothing (0 / 0).
                match (x.kind.as_str(), &rescues) {
                    ("edge", Some(_)) => pct(x.calls_rescued / x.calls_retried),
                    _ => "".into(),
                },
                if x.kind == "dependency" {
                    "".into()
                } else {
                    format!("{:.3}", x.p99_max)
                },
                match x.pods {
                    Some((lo, hi)) if lo == hi => format!("{hi:.0}"),
                    Some((lo, hi)) => format!("{lo:.0}–{hi:.0}"),
                    None => String::new(),
                },
            ]);
            rows.push(row);
        }
    }
    let mut head = vec![
        "kind",
        "node",
        "offered",
        "per user request",
        "retry share",
        "answered",
        "failed",
        "timeouts",
        "retries rescued",
        "worst bucket p99 s",
        "pods",
    ];
    if runs.len() > 1 {
        head.insert(0, "run");
    }
    let mut charts_out = Vec::new();
    if runs.len() == 1 {
        let mut lines = Vec::new();
        for (n, rows) in order.iter().zip(&rows_of) {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|&&i| kind[i] != "service")
                .filter_map(|&i| per[i].map(|v| (t[i], v)))
                .collect();
            if !points.is_empty() {
                lines.push(charts::Series {
                    name: n.clone(),
                    points,
                });
            }
        }
        let all = lines.len();
        let lines = highest_peaks(lines, charts::COLOURS.len() - 1);
        let title = if lines.len() < all {
            format!(
                "Amplification per tier: the {} edges and dependencies of {all} with the highest peaks (the table has all)",
                lines.len()
            )
        } else {
            "Amplification per tier: each edge's attempts and each dependency's arrivals per user request".to_string()
        };
        charts_out.push((
            "tiers.svg".to_string(),
            charts::lines(&title, "per user request", &lines, marks, label)?,
        ));
    }
    // Pods over time where they changed (an autoscaler's, or the
    // timeline's): each such service's for a run; the first such
    // service's, run by run, for a comparison.
    let changed: Vec<&String> = order
        .iter()
        .filter(|n| {
            totals
                .iter()
                .any(|((_, m), x)| m == *n && x.pods.is_some_and(|(lo, hi)| lo != hi))
        })
        .collect();
    if let Some(first) = changed.first() {
        let k = order.iter().position(|n| n == *first).unwrap_or(0);
        let mut lines = Vec::new();
        if runs.len() == 1 {
            for n in &changed {
                let k = order.iter().position(|m| m == *n).unwrap_or(0);
                lines.push(charts::Series {
                    name: (*n).clone(),
                    points: rows_of[k]
                        .iter()
                        .filter_map(|&i| replicas[i].map(|v| (t[i], v)))
                        .collect(),
                });
            }
        } else {
            for (r, name) in runs.iter().zip(&names) {
                lines.push(charts::Series {
                    name: name.clone(),
                    points: rows_of[k]
                        .iter()
                        .filter(|&&i| &run[i] == r)
                        .filter_map(|&i| replicas[i].map(|v| (t[i], v)))
                        .collect(),
                });
            }
        }
        let title = match runs.len() {
            1 => "Pods of each service whose count changed (the most in each bucket)".to_string(),
            _ => format!("Pods of {first}, run by run (the most in each bucket)"),
        };
        charts_out.push((
            "pods_per_service.svg".to_string(),
            charts::lines(&title, "pods", &lines, marks, label)?,
        ));
    }
    Ok(Some(Section {
        title: "Tiers".into(),
        text: "Every service, edge (a service's calls to another node) and dependency of the graph over the run: what reached it, its own count per user request (a service's requests, an edge's attempts, a dependency's arrivals: the amplification at that tier, multiplied along the path), the share of an edge's attempts that were retries, answers, failures and timeouts, the share of an edge's retried calls that its retries rescued (ended in success; `-` when none retried), its worst one-bucket p99 (a service: from reaching a pod to its answer; an edge: per attempt), and a service's pods (the fewest and the most in a bucket: an autoscaler's changes, or the timeline's), drawn over time where they changed. The `nodes` table has them bucket by bucket.".into(),
        charts: charts_out,
        table: Some(table_html(&head, &rows)),
    }))
}

/// The `most` series of `lines` with the highest peaks, in their order: a
/// chart of more lines than it has colours reads as none (a graph of 20
/// services drew 44, their legend cut off).
fn highest_peaks(lines: Vec<charts::Series>, most: usize) -> Vec<charts::Series> {
    if lines.len() <= most {
        return lines;
    }
    let peak = |s: &charts::Series| {
        s.points
            .iter()
            .map(|p| p.1)
            .filter(|y| y.is_finite())
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let mut order: Vec<usize> = (0..lines.len()).collect();
    // Highest first; ties in the table's order.
    order.sort_by(|&a, &b| peak(&lines[b]).total_cmp(&peak(&lines[a])).then(a.cmp(&b)));
    let mut kept = order[..most].to_vec();
    kept.sort_unstable();
    let mut lines: Vec<Option<charts::Series>> = lines.into_iter().map(Some).collect();
    kept.into_iter().filter_map(|i| lines[i].take()).collect()
}

fn run_sections(
    ts: &DataFrame,
    events: Option<&DataFrame>,
    groups: Option<&DataFrame>,
    summary: &DataFrame,
    label: &dyn Fn(f64) -> String,
) -> Result<Vec<Section>, String> {
    let x = floats(ts, "t_s")?;
    let marks = markers(events)?;
    let offered = floats(ts, "offered")?;
    let attempts = floats(ts, "attempts")?;
    let waiters = floats(ts, "pool_waiters_max")?;
    // Narrative figures.
    let (mut peak_amp, mut peak_at) = (0.0, 0.0);
    for i in 0..x.len() {
        if offered[i] > 0.0 && attempts[i] / offered[i] > peak_amp {
            peak_amp = attempts[i] / offered[i];
            peak_at = x[i];
        }
    }
    let exhausted: Vec<f64> = (0..x.len())
        .filter(|&i| waiters[i] > 0.0)
        .map(|i| x[i])
        .collect();
    let recover = floats(summary, "time_to_recover_s")?[0];
    let trigger_end = floats(summary, "trigger_end_s")?[0];
    let mut story = format!(
        "Attempts peaked at {peak_amp:.1}× the offered load at {}.",
        label(peak_at)
    );
    match (exhausted.first(), exhausted.last()) {
        (Some(a), Some(b)) => story.push_str(&format!(
            " Attempts waited for pool connections from {} to {}.",
            label(*a),
            label(*b + 1.0)
        )),
        _ => story.push_str(" No attempt ever waited for a pool connection."),
    }
    if trigger_end.is_nan() {
        story.push_str(" The run had no trigger.");
    } else if recover.is_nan() {
        story.push_str(&format!(
            " The last trigger ended at {}; the run never recovered.",
            label(trigger_end)
        ));
    } else {
        story.push_str(&format!(
            " The last trigger ended at {}; goodput was back {recover:.0} s later.",
            label(trigger_end)
        ));
    }
    let mut charts_out = Vec::new();
    let mut chart = |file: &str, svg: Result<String, String>| -> Result<(), String> {
        charts_out.push((file.to_string(), svg?));
        Ok(())
    };
    // A chart of timeseries columns, each `(column, legend)`.
    let columns = |cols: &[(&str, &str)]| -> Result<Vec<Series>, String> {
        cols.iter()
            .map(|(col, name)| series(ts, &x, col, name))
            .collect()
    };
    let lines = |title: &str, unit: &str, cols: &[(&str, &str)]| {
        charts::lines(title, unit, &columns(cols)?, &marks, label)
    };
    chart(
        "load.svg",
        lines(
            "Offered, attempted and successful requests per second",
            "per second",
            &[
                ("offered", "offered"),
                ("attempts", "attempts"),
                ("goodput_per_s", "successful"),
            ],
        ),
    )?;
    chart(
        "attempts.svg",
        lines(
            "First attempts and retries per second",
            "per second",
            &[
                ("attempts_first", "first attempts"),
                ("attempts_retry", "retries"),
                ("attempts_hedge", "hedges"),
            ],
        ),
    )?;
    chart(
        "latency.svg",
        lines(
            "Latency: end to end and per attempt",
            "seconds",
            &[
                ("e2e_p50_s", "end-to-end p50"),
                ("e2e_p99_s", "end-to-end p99"),
                ("first_attempt_p50_s", "first attempt p50"),
                ("first_attempt_p99_s", "first attempt p99"),
                ("retry_p99_s", "retry p99"),
            ],
        ),
    )?;
    let mut outcomes = Vec::new();
    for reason in sim_models::outcome::Reason::ALL {
        let col = format!("outcome_{}", reason.name());
        if floats(ts, &col)?.iter().any(|v| *v > 0.0) {
            outcomes.push(series(ts, &x, &col, reason.name())?);
        }
    }
    chart(
        "outcomes.svg",
        charts::stacked(
            "Requests ended per second, by outcome",
            "per second",
            &outcomes,
            label,
        ),
    )?;
    chart(
        "pool.svg",
        lines(
            "Connection pools: in use, waiting and calls in flight (all pods)",
            "connections / attempts",
            &[
                ("pool_in_use_max", "in use"),
                ("pool_waiters_max", "waiting"),
                ("calls_in_flight_max", "calls in flight"),
            ],
        ),
    )?;
    chart(
        "pool_wait.svg",
        lines(
            "Pool wait p99",
            "seconds",
            &[("pool_wait_p99_s", "pool wait p99")],
        ),
    )?;
    if let Some(pg) = groups {
        for (file, col, title, unit) in [
            (
                "pool_groups_in_use.svg",
                "pool_in_use_max",
                "Connections in use, per pod group",
                "connections",
            ),
            (
                "pool_groups_waiting.svg",
                "pool_waiters_max",
                "Attempts waiting for a connection, per pod group",
                "attempts",
            ),
            (
                "pool_groups_wait.svg",
                "pool_wait_p99_s",
                "Pool wait p99, per pod group",
                "seconds",
            ),
        ] {
            chart(
                file,
                charts::lines(title, unit, &per_group(pg, col)?, &marks, label),
            )?;
        }
    }
    chart(
        "upstream.svg",
        lines(
            "Upstream: in service, queued, goodput and wasted work",
            "requests",
            &[
                ("upstream_in_service_max", "in service"),
                ("upstream_queued_max", "queued"),
                ("upstream_goodput", "goodput/s"),
                ("upstream_wasted", "wasted/s"),
            ],
        ),
    )?;
    if floats(ts, "breakers_open_max")?
        .iter()
        .chain(floats(ts, "breakers_half_open_max")?.iter())
        .any(|v| *v > 0.0)
    {
        // A band: how many breakers are in each state that refuses or
        // probes, stacked, as time-weighted means over each bucket.
        chart(
            "breakers.svg",
            charts::stacked(
                "Circuit breaker state (open and half-open breakers)",
                "breakers",
                &columns(&[
                    ("breakers_open_mean", "open"),
                    ("breakers_half_open_mean", "half-open"),
                ])?,
                label,
            ),
        )?;
    }
    if waited_for_bulkheads(ts)? {
        chart(
            "bulkhead.svg",
            lines(
                BULKHEAD_TITLE,
                "calls",
                &[("bulkhead_waiting_max", "waiting")],
            ),
        )?;
    }
    if adaptive_limits(ts)? {
        chart(
            "bulkhead_limit.svg",
            lines(
                LIMIT_TITLE,
                "places",
                &[
                    ("bulkhead_limit_min", "lowest in the bucket"),
                    ("bulkhead_limit_max", "highest"),
                ],
            ),
        )?;
    }
    let mut pods = vec![
        ("pods_up_min", "up"),
        ("pods_unready_max", "unready"),
        ("pods_down_max", "down"),
    ];
    let title = match ejected_pods(ts)? {
        true => {
            pods.push(("pods_ejected_max", "ejected (of those up)"));
            "Pods up, out of rotation (unready, or ejected by outlier detection) and restarting"
        }
        false => "Pods in rotation, out of rotation (unready) and restarting",
    };
    chart("pods.svg", lines(title, "pods", &pods))?;
    // A graph's own calls per request (a dataset from before the column:
    // the single tier's 1).
    let fan_out = match summary.column("fan_out") {
        Ok(_) => floats(summary, "fan_out")?[0],
        Err(_) => 1.0,
    };
    let mut kpis = vec![
        ("success rate", pct(floats(summary, "success_rate")?[0])),
        ("degraded rate", pct(floats(summary, "degraded_rate")?[0])),
        ("error rate", pct(floats(summary, "error_rate")?[0])),
        (
            "peak error rate (trailing window)",
            pct(floats(summary, "peak_error_rate")?[0]),
        ),
        (
            "peak attempts per second (10 s mean)",
            num(floats(summary, "peak_attempts_per_s")?[0], 0),
        ),
        (
            "peak end-to-end p99 (trailing window)",
            format!("{} s", num(floats(summary, "peak_e2e_p99_s")?[0], 1)),
        ),
        (
            "peak calls in flight",
            num(floats(summary, "peak_calls_in_flight")?[0], 0),
        ),
        (
            "peak pool wait p99",
            format!("{} s", num(floats(summary, "peak_pool_wait_p99_s")?[0], 1)),
        ),
        (
            "amplification (mean / peak)",
            format!(
                "{} / {}{}",
                num(floats(summary, "amplification_mean")?[0], 2),
                num(floats(summary, "amplification_peak")?[0], 2),
                if fan_out > 1.0 {
                    format!(" ({} without retries)", num(fan_out, 2))
                } else {
                    String::new()
                }
            ),
        ),
        (
            "end-to-end p99",
            format!("{} s", num(floats(summary, "e2e_p99_s")?[0], 2)),
        ),
        (
            "wasted upstream work",
            pct(floats(summary, "wasted_fraction")?[0]),
        ),
        (
            "time to recover",
            if recover.is_nan() {
                "never".into()
            } else {
                format!("{recover:.0} s")
            },
        ),
    ];
    // A dataset from before these columns has no restarts to show.
    if has(summary, "pod_restarts") && has(summary, "probes_failed") {
        kpis.push((
            "pod restarts (health probes failed)",
            format!(
                "{} ({})",
                num(floats(summary, "pod_restarts")?[0], 0),
                num(floats(summary, "probes_failed")?[0], 0)
            ),
        ));
    }
    let rows: Vec<Vec<String>> = kpis
        .iter()
        .map(|(k, v)| vec![k.to_string(), v.clone()])
        .collect();
    Ok(vec![Section {
        title: "The run".into(),
        text: story,
        charts: charts_out,
        table: Some(table_html(&["figure", "value"], &rows)),
    }])
}

fn cell_names(summary: &DataFrame, axes: &[String]) -> Result<Vec<String>, String> {
    if has(summary, "variant") {
        return strings(summary, "variant");
    }
    let runs = strings(summary, "run_id")?;
    let reps = floats(summary, "replication")?;
    let mut cols = Vec::new();
    for a in axes {
        if has(summary, a) {
            cols.push((a.clone(), strings(summary, a)?));
        }
    }
    Ok((0..runs.len())
        .map(|i| {
            if cols.is_empty() {
                runs[i].clone()
            } else {
                let mut s = cols
                    .iter()
                    .map(|(a, v)| format!("{}={}", a.rsplit('.').next().unwrap_or(a), v[i]))
                    .collect::<Vec<_>>()
                    .join(" ");
                if reps.iter().any(|r| *r > 0.0) {
                    s.push_str(&format!(" #{}", reps[i]));
                }
                s
            }
        })
        .collect())
}

/// Rows in ranking order, the order `stormsim replay` prints
/// (`verdict.rs`).
fn rank_order(summary: &DataFrame, objective: &Objective) -> Result<Vec<usize>, String> {
    Ok(crate::verdict::rank(summary, objective)?.order)
}

/// The incident figures of each run side by side, in ranking order.
fn figures_section(
    summary: &DataFrame,
    axes: &[String],
    objective: &Objective,
) -> Result<Section, String> {
    let names = cell_names(summary, axes)?;
    let data: Vec<Vec<f64>> = crate::output::FIGURE_COLUMNS
        .iter()
        .map(|c| {
            if has(summary, c) {
                floats(summary, c)
            } else {
                Ok(vec![f64::NAN; summary.height()])
            }
        })
        .collect::<Result<_, _>>()?;
    let secs = |v: f64, d: usize| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{} s", num(v, d))
        }
    };
    let rows: Vec<Vec<String>> = rank_order(summary, objective)?
        .into_iter()
        .map(|i| {
            vec![
                names[i].clone(),
                secs(data[0][i], 1),
                secs(data[1][i], 1),
                pct(data[2][i]),
                pct(data[3][i]),
                num(data[4][i], 0),
                num(data[5][i], 0),
                secs(data[6][i], 1),
                secs(data[7][i], 0),
                secs(data[8][i], 0),
                num(data[9][i], 0),
                num(data[10][i], 0),
                pct(data[11][i]),
                num(data[12][i], 2),
                pct(data[13][i]),
            ]
        })
        .collect();
    Ok(Section {
        title: "Incident figures".into(),
        text: "The figures an incident write-up reports, for each run: p99 and error rate over \
               the trailing window at their peak and just before the first trigger, the peak \
               attempt rate (10 s mean), calls in flight and pool wait, and how long after the \
               first trigger the storm showed (attempts above 1.5 × offered, times the fan-out \
               in a graph) and the pools ran dry (100 calls queued); the peak backlog (users waiting plus the dependency's \
               queue), the dependency's 429 answers, the share of attempts that were retries or \
               hedges, retries per user request, and the share of the calls that retried that \
               ended in success (what the retries rescued)."
            .into(),
        charts: Vec::new(),
        table: Some(table_html(
            &[
                "run",
                "p99 (peak)",
                "p99 (before)",
                "errors (peak)",
                "errors (before)",
                "attempts/s",
                "calls in flight",
                "pool wait p99",
                "storm visible",
                "pools exhausted",
                "backlog (peak)",
                "429s",
                "retry share",
                "retries per request",
                "rescued",
            ],
            &rows,
        )),
    })
}

fn ranked_section(
    summary: &DataFrame,
    axes: &[String],
    objective: &Objective,
) -> Result<Section, String> {
    let names = cell_names(summary, axes)?;
    let cols = [
        "slo_violation_s",
        "peak_error_rate",
        "degraded_rate",
        "amplification_peak",
        "wasted_fraction",
        "peak_e2e_p99_s",
        "time_to_recover_s",
    ];
    let data: Vec<Vec<f64>> = cols
        .iter()
        .map(|c| {
            if has(summary, c) {
                floats(summary, c)
            } else {
                Ok(vec![f64::NAN; summary.height()])
            }
        })
        .collect::<Result<_, _>>()?;
    let flag = |name: &str| -> Result<Vec<bool>, String> {
        if !has(summary, name) {
            return Ok(vec![true; summary.height()]);
        }
        Ok(floats(summary, name)?.iter().map(|v| *v > 0.5).collect())
    };
    let meta = flag("metastable")?;
    let judged = flag("recovery_judged")?;
    let ranking = crate::verdict::rank(summary, objective)?;
    let rows: Vec<Vec<String>> = ranking
        .order
        .iter()
        .enumerate()
        .map(|(rank, &i)| {
            vec![
                (rank + 1).to_string(),
                names[i].clone(),
                format!("{} s", num(data[0][i], 0)),
                pct(data[1][i]),
                pct(data[2][i]),
                num(data[3][i], 2),
                pct(data[4][i]),
                format!("{} s", num(data[5][i], 1)),
                if meta[i] {
                    "never (metastable)".into()
                } else if !judged[i] {
                    "not judged".into()
                } else if data[6][i].is_nan() {
                    "-".into()
                } else {
                    format!("{:.0} s", data[6][i])
                },
                ranking.decided_by[rank].unwrap_or("-").to_string(),
                ranking.flags[i].join("; "),
            ]
        })
        .collect();
    let best = ranking
        .order
        .first()
        .map(|&i| names[i].clone())
        .unwrap_or_default();
    Ok(Section {
        title: "Ranking".into(),
        text: format!(
            "{} runs {}. Best: {best}. \"Decided by\" names the first criterion on which a run and the next differ; flags say what the ranking must not hide.",
            names.len(),
            crate::verdict::describe(objective)
        ),
        charts: Vec::new(),
        table: Some(table_html(
            &[
                "rank",
                "run",
                "SLO breach",
                "peak errors",
                "degraded",
                "peak amplification",
                "wasted",
                "user p99 (peak)",
                "recovered",
                "decided by",
                "flags",
            ],
            &rows,
        )),
    })
}

/// The story of a comparison (a before/after, a replay against its
/// alternatives): what happened, which variant the objective prefers and
/// by how much, in words.
fn story_section(
    summary: &DataFrame,
    axes: &[String],
    objective: &Objective,
    marks: &[Marker],
    label: &dyn Fn(f64) -> String,
) -> Result<Section, String> {
    let names = cell_names(summary, axes)?;
    let ranking = crate::verdict::rank(summary, objective)?;
    let col = |c: &str| -> Result<Vec<f64>, String> {
        if has(summary, c) {
            floats(summary, c)
        } else {
            Ok(vec![f64::NAN; summary.height()])
        }
    };
    let (err, p99, amp, slo, rec, meta) = (
        col("peak_error_rate")?,
        col("peak_e2e_p99_s")?,
        col("amplification_peak")?,
        col("slo_violation_s")?,
        col("time_to_recover_s")?,
        col("metastable")?,
    );
    let about = |i: usize| {
        let recovery = if meta[i] > 0.5 {
            "never recovered (metastable)".to_string()
        } else if rec[i].is_nan() {
            "recovery not judged".to_string()
        } else {
            format!("recovered {:.0} s after the trigger ended", rec[i])
        };
        format!(
            "{}: peak errors {}, user p99 up to {} s, {:.2} attempts per request at the peak, the SLO broken for {} s, {recovery}{}",
            names[i],
            pct(err[i]),
            num(p99[i], 1),
            amp[i],
            num(slo[i], 0),
            if ranking.flags[i].is_empty() {
                String::new()
            } else {
                format!(" ({})", ranking.flags[i].join("; "))
            }
        )
    };
    let trigger = marks
        .first()
        .map(|m| format!("At {} the timeline {}. ", label(m.x), m.label))
        .unwrap_or_default();
    let mut text = format!(
        "{trigger}{} variants were compared and {}. ",
        names.len(),
        crate::verdict::describe(objective)
    );
    if let (Some(&best), Some(&worst)) = (ranking.order.first(), ranking.order.last()) {
        text.push_str(&format!(
            "Best — {}. Worst — {}.",
            about(best),
            about(worst)
        ));
    }
    Ok(Section {
        title: "The story".into(),
        text,
        charts: Vec::new(),
        table: None,
    })
}

fn overlay_section(
    ts: &DataFrame,
    summary: &DataFrame,
    axes: &[String],
    marks: &[Marker],
    label: &dyn Fn(f64) -> String,
) -> Result<Section, String> {
    let names = cell_names(summary, axes)?;
    let runs = strings(summary, "run_id")?;
    let ts_runs = strings(ts, "run_id")?;
    let x = floats(ts, "t_s")?;
    let mut charts_out = Vec::new();
    let mut curves = vec![
        (
            "compare_attempts.svg",
            "attempts",
            "Attempts per second",
            "per second",
        ),
        (
            "compare_goodput.svg",
            "goodput_per_s",
            "Successful requests per second",
            "per second",
        ),
        ("compare_p99.svg", "e2e_p99_s", "End-to-end p99", "seconds"),
        (
            "compare_waiters.svg",
            "pool_waiters_max",
            "Attempts waiting for a connection",
            "attempts",
        ),
    ];
    if waited_for_bulkheads(ts)? {
        curves.push((
            "compare_bulkhead.svg",
            "bulkhead_waiting_max",
            BULKHEAD_TITLE,
            "calls",
        ));
    }
    if adaptive_limits(ts)? {
        curves.push((
            "compare_bulkhead_limit.svg",
            "bulkhead_limit_min",
            LIMIT_TITLE,
            "places (lowest in the bucket)",
        ));
    }
    for (file, col, title, unit) in curves {
        let y = floats(ts, col)?;
        let mut by_run: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
        for i in 0..x.len() {
            by_run
                .entry(ts_runs[i].as_str())
                .or_default()
                .push((x[i], y[i]));
        }
        let series: Vec<Series> = runs
            .iter()
            .zip(&names)
            .map(|(r, n)| Series {
                name: n.clone(),
                points: by_run.remove(r.as_str()).unwrap_or_default(),
            })
            .collect();
        charts_out.push((
            file.to_string(),
            charts::lines(title, unit, &series, marks, label)?,
        ));
    }
    Ok(Section {
        title: "Runs compared".into(),
        text: "The key curves of every run, overlaid, with the timeline's actions marked.".into(),
        charts: charts_out,
        table: None,
    })
}

fn sweep_sections(
    summary: &DataFrame,
    axes: &[String],
    opts: &ReportOptions,
) -> Result<Vec<Section>, String> {
    let kpi = opts.kpi.clone().unwrap_or_else(|| "peak_error_rate".into());
    check_kpi(summary, &kpi)?;
    let x = opts.x.clone().unwrap_or_else(|| axes[0].clone());
    // Up: the first other axis (`--x` may name the second).
    let y = opts
        .y
        .clone()
        .or_else(|| axes.iter().find(|a| **a != x).cloned())
        .unwrap_or_else(|| "replication".into());
    for a in [&x, &y] {
        if !has(summary, a) {
            return Err(format!(
                "{a}: not a swept parameter of this dataset ({})",
                axes.join(", ")
            ));
        }
    }
    let (xs, ys, vals, meta) = (
        strings(summary, &x)?,
        strings(summary, &y)?,
        floats(summary, &kpi)?,
        floats(summary, "metastable")?,
    );
    let sort_ticks = |v: &[String]| {
        let mut t: Vec<String> = v.to_vec();
        t.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(p), Ok(q)) => p.total_cmp(&q),
            _ => a.cmp(b),
        });
        t.dedup();
        t
    };
    let (x_ticks, y_ticks) = (sort_ticks(&xs), sort_ticks(&ys));
    // Per cell: sum, metastable count, runs, sum of squares.
    let mut acc = vec![vec![(0.0, 0.0, 0usize, 0.0); x_ticks.len()]; y_ticks.len()];
    for i in 0..vals.len() {
        let xi = x_ticks.iter().position(|t| *t == xs[i]).unwrap_or(0);
        let yi = y_ticks.iter().position(|t| *t == ys[i]).unwrap_or(0);
        let a = &mut acc[yi][xi];
        if !vals[i].is_nan() {
            a.0 += vals[i];
            a.3 += vals[i] * vals[i];
        }
        a.1 += meta[i];
        a.2 += 1;
    }
    // 95 % confidence half-width of each cell's mean (normal approximation).
    let half: Vec<Vec<f64>> = acc
        .iter()
        .map(|row| {
            row.iter()
                .map(|a| {
                    if a.2 < 2 {
                        return 0.0;
                    }
                    let n = a.2 as f64;
                    let var = ((a.3 - a.0 * a.0 / n) / (n - 1.0)).max(0.0);
                    1.96 * (var / n).sqrt()
                })
                .collect()
        })
        .collect();
    let with_ci = half.iter().flatten().any(|h| *h > 0.0);
    let mean = |f: fn(&(f64, f64, usize, f64)) -> f64| -> Vec<Vec<Option<f64>>> {
        acc.iter()
            .map(|row| {
                row.iter()
                    .map(|a| (a.2 > 0).then(|| f(a) / a.2 as f64))
                    .collect()
            })
            .collect()
    };
    let means = mean(|a| a.0);
    // Cell labels carry the confidence half-width when there is spread.
    let labels: BTreeMap<String, String> = means
        .iter()
        .zip(&half)
        .flat_map(|(row, hrow)| row.iter().zip(hrow))
        .filter_map(|(m, h)| {
            m.map(|m| {
                (
                    format!("{m:.6}"),
                    if with_ci {
                        format!("{m:.2} ±{h:.2}")
                    } else {
                        format!("{m:.2}")
                    },
                )
            })
        })
        .collect();
    // Whole numbers as written (`3`, not the column's `3.0`).
    let shown = |ticks: &[String]| -> Vec<String> {
        ticks
            .iter()
            .map(|t| t.strip_suffix(".0").unwrap_or(t).to_string())
            .collect()
    };
    let (x_shown, y_shown) = (shown(&x_ticks), shown(&y_ticks));
    let heat = charts::heatmap(
        &format!("{kpi} (mean over replications and other axes)"),
        &x,
        &y,
        &x_shown,
        &y_shown,
        &means,
        &|v| {
            labels
                .get(&format!("{v:.6}"))
                .cloned()
                .unwrap_or_else(|| format!("{v:.2}"))
        },
    )?;
    let map = charts::heatmap(
        "Share of runs that stayed collapsed (metastable)",
        &x,
        &y,
        &x_shown,
        &y_shown,
        &mean(|a| a.1),
        &|v| format!("{:.0}%", 100.0 * v),
    )?;
    let collapsed = meta.iter().filter(|m| **m > 0.5).count();
    Ok(vec![
        Section {
            title: format!("{kpi} over {x} × {y}"),
            text: format!(
                "Each cell is the mean of the runs with those two values ({} runs in all){}.",
                vals.len(),
                if with_ci {
                    "; ± is the 95 % confidence half-width over replications and the other axes"
                } else {
                    ""
                }
            ),
            charts: vec![("heatmap.svg".into(), heat)],
            table: None,
        },
        Section {
            title: "Vulnerable region".into(),
            text: format!(
                "{collapsed} of {} runs never recovered within the horizon after the last trigger.",
                vals.len()
            ),
            charts: vec![("vulnerable.svg".into(), map)],
            table: None,
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_is_one_marker_and_a_pulse_two() {
        let a = |x: f64, entry: &str, label: &str| (x, entry.to_string(), label.to_string());
        let mut actions = vec![a(60.0, "[0", "upstream.latency_scale = 3")];
        for k in 0..50 {
            actions.push(a(
                120.0 + 1.2 * k as f64,
                "[1",
                &format!("load.rate = {}", 103 + 3 * k),
            ));
        }
        actions.push(a(180.0, "[2", "upstream.errors.http_503 = 0.3"));
        actions.push(a(200.0, "[2", "upstream.errors.http_503 = 0"));
        actions.push(a(240.0, "[3", "kill pod 3"));
        let marks: Vec<(f64, String)> = ramps_merged(actions)
            .into_iter()
            .map(|m| (m.x, m.label))
            .collect();
        let want = [
            (60.0, "upstream.latency_scale = 3"),
            (120.0, "load.rate = 103 → 250"),
            (180.0, "upstream.errors.http_503 = 0.3"),
            (200.0, "upstream.errors.http_503 = 0"),
            (240.0, "kill pod 3"),
        ];
        let want: Vec<(f64, String)> = want.iter().map(|(x, l)| (*x, l.to_string())).collect();
        assert_eq!(marks, want);
        // A pulse swept over its value: every value at its start, one revert.
        let swept = vec![
            a(60.0, "[0", "x = 2"),
            a(60.0, "[0", "x = 3"),
            a(60.0, "[0", "x = 4"),
            a(90.0, "[0", "x = 1"),
        ];
        assert_eq!(ramps_merged(swept).len(), 4);
        // A ramp swept over its target across 200 cells: one marker.
        let mut swept = Vec::new();
        for to in 0..200 {
            for k in 0..50 {
                let x = 10.0 + k as f64;
                swept.push(a(x, "[0", &format!("load.rate = {}", 100 + to * k)));
            }
        }
        swept.sort_by(|p, q| p.0.total_cmp(&q.0).then(p.2.cmp(&q.2)));
        let marks = ramps_merged(swept);
        assert_eq!(marks.len(), 1);
        assert_eq!(marks[0].x, 10.0);
    }

    #[test]
    fn a_chart_of_many_tiers_keeps_the_highest_peaks_in_their_order() {
        let line = |name: &str, peak: f64| charts::Series {
            name: name.into(),
            points: vec![(0.0, 1.0), (1.0, peak), (2.0, f64::NAN)],
        };
        let lines = vec![
            line("a", 2.0),
            line("b", 9.0),
            line("c", 1.0),
            line("d", 9.0),
            line("e", 5.0),
        ];
        let names = |l: Vec<charts::Series>| l.into_iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(names(highest_peaks(lines, 3)), ["b", "d", "e"]);
        let few = vec![line("x", 1.0), line("y", 2.0)];
        assert_eq!(names(highest_peaks(few, 3)), ["x", "y"]);
    }

    /// The tiers table gives each edge the share of its retried calls its
    /// retries rescued (`-` for an edge that retried nothing), and leaves
    /// the column blank for a dataset written before edges counted them.
    #[test]
    fn the_tiers_give_each_edges_rescue_rate_when_the_dataset_has_it() {
        let column = |name: &str, v: Vec<f64>| Column::new(name.into(), v);
        let nodes = DataFrame::new(
            4,
            vec![
                Column::new("run_id".into(), vec!["r"; 4]),
                Column::new("node".into(), vec!["a", "a->b", "a->c", "b"]),
                Column::new("kind".into(), vec!["service", "edge", "edge", "dependency"]),
                column("t_s", vec![0.0; 4]),
                column("offered", vec![100.0, 100.0, 100.0, 120.0]),
                column("attempts", vec![0.0, 120.0, 100.0, 0.0]),
                column("retries", vec![0.0, 20.0, 0.0, 0.0]),
                column("answered", vec![90.0, 90.0, 100.0, 90.0]),
                column("failed", vec![10.0, 10.0, 0.0, 30.0]),
                column("timeouts", vec![0.0; 4]),
                column("calls_retried", vec![0.0, 16.0, 0.0, 0.0]),
                column("calls_rescued", vec![0.0, 6.0, 0.0, 0.0]),
                column("latency_p99_s", vec![0.1; 4]),
                column("per_request", vec![1.0, 1.2, 1.0, 1.2]),
            ],
        )
        .unwrap();
        let ts = DataFrame::new(
            1,
            vec![
                Column::new("run_id".into(), vec!["r"]),
                column("offered", vec![100.0]),
            ],
        )
        .unwrap();
        let summary = DataFrame::new(
            1,
            vec![
                Column::new("run_id".into(), vec!["r"]),
                column("replication", vec![0.0]),
            ],
        )
        .unwrap();
        let table = |nodes: &DataFrame| {
            let section = tiers_section(nodes, &ts, &summary, &[], &[], &|t| format!("{t}"));
            section.unwrap().unwrap().table.unwrap()
        };
        let html = table(&nodes);
        assert!(html.contains("<th>retries rescued</th>"), "{html}");
        let row = |html: &str, node: &str| {
            let at = html.find(&format!("<td>{node}</td>")).unwrap();
            html[at..at + html[at..].find("</tr>").unwrap()].to_string()
        };
        // 6 of a → b's 16 retried calls; a → c retried none.
        assert!(
            row(&html, "a-&gt;b").contains("<td>0</td><td>37.5 %</td>"),
            "{html}"
        );
        assert!(
            row(&html, "a-&gt;c").contains("<td>0</td><td>-</td>"),
            "{html}"
        );
        let older = nodes.drop_many(["calls_retried", "calls_rescued"]);
        let html = table(&older);
        assert!(
            row(&html, "a-&gt;b").contains("<td>0</td><td></td>"),
            "{html}"
        );
    }

    /// A cell and a clock to make an empty table of.
    fn a_cell() -> (crate::sweep::Cell, sim_core::time::WallClock) {
        let cell = crate::sweep::Cell {
            index: 0,
            id: "0".into(),
            params: Vec::new(),
            replication: 0,
            seed: 1,
            labels: Vec::new(),
        };
        let clock = sim_models::config::ClockConfig::default().wall_clock();
        (cell, clock)
    }

    /// The columns of `table` that `source` names in quotes.
    fn quoted_columns<'a>(table: &'a DataFrame, source: &str) -> Vec<&'a str> {
        table
            .get_column_names()
            .into_iter()
            .map(|n| n.as_str())
            .filter(|n| source.contains(&format!("\"{n}\"")))
            .collect()
    }

    /// Every timeseries column this file names is one the report reads:
    /// a chart added on a column left out of [`TIMESERIES_READ`] fails
    /// here, not on a user's dataset.
    #[test]
    fn every_timeseries_column_named_here_is_read() {
        let (cell, clock) = a_cell();
        let empty = crate::output::timeseries_frame(&cell, "x", &[], &[], &clock).unwrap();
        let file = include_str!("report.rs");
        let source = &file[..file.find("#[cfg(test)]").unwrap_or(file.len())];
        let named = quoted_columns(&empty, source);
        assert!(named.contains(&"goodput_per_s"), "{named:?}");
        let part = |from: &str, to: &str| {
            let start = source.find(from).unwrap();
            &source[start..start + 1 + source[start + 1..].find(to).unwrap()]
        };
        let (tiers, nodes_read) = (
            part("\nfn tiers_section(", "\nfn "),
            part("NODES_READ", "];"),
        );
        for n in named {
            // A name the summary also has (`pod_restarts`), named only
            // where the summary is read, is not a timeseries read; nor is
            // one the nodes table also has (`calls_retried`), named only
            // in the tiers and among the nodes' reads (the test above).
            let quoted = |text: &str| text.matches(&format!("\"{n}\"")).count();
            let of_summary = source.matches(&format!("summary, \"{n}\"")).count();
            assert!(
                quoted(source) == of_summary + quoted(tiers) + quoted(nodes_read)
                    || report_reads(n),
                "the report names `{n}` but does not read it"
            );
        }
        for reason in sim_models::outcome::Reason::ALL {
            assert!(report_reads(&format!("outcome_{}", reason.name())));
        }
        // Identity columns the charts do not use stay unread.
        assert!(!report_reads("label") && !report_reads("bucket"));
    }

    /// Every `nodes` column the tiers section names is one it reads.
    #[test]
    fn every_nodes_column_the_tiers_name_is_read() {
        let (cell, clock) = a_cell();
        let empty = crate::output::nodes_frame(&cell, "x", &[], &[], &[], &clock).unwrap();
        let file = include_str!("report.rs");
        let start = file.find("\nfn tiers_section(").unwrap();
        let end = start + 1 + file[start + 1..].find("\nfn ").unwrap();
        let source = &file[start..end];
        let named = quoted_columns(&empty, source);
        assert!(named.contains(&"per_request"), "{named:?}");
        for n in named {
            assert!(
                NODES_READ.contains(&n),
                "the tiers name `{n}` but it is not read"
            );
        }
    }
}
