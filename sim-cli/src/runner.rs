//! Running an experiment's cells: in parallel across cells (each run stays
//! on one thread), resumable, shardable, with the dataset written as cells
//! finish.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use sim_core::rng::Fnv1a;
use sim_models::kpi::{Kpis, kpis};
use sim_models::recorder::pod_group_spans;
use sim_models::world::run;

use crate::load::Experiment;
use crate::output::{
    CellSink, ParamKind, attempts_frame, events_frame, pod_groups_frame, summary_frame,
    sweep_temporaries, table_path, timeseries_frame, write_parquet, write_text,
};
use crate::sweep::{Cell, Shard, cell_world, cells, describe};

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Output directory.
    pub out: PathBuf,
    /// Worker threads (default: one per core).
    pub threads: Option<usize>,
    /// Only this shard's cells.
    pub shard: Option<Shard>,
    /// Only this cell.
    pub only_cell: Option<String>,
    /// Ignore the sweep: run the base configuration as one cell.
    pub no_sweep: bool,
    /// No progress bar.
    pub quiet: bool,
    /// Replace the results of a different experiment found in `out`.
    pub force: bool,
}

/// A run that stopped.
#[derive(Clone, Debug)]
pub struct CellFailure {
    /// The cell.
    pub cell: Cell,
    /// What happened.
    pub message: String,
}

/// What a call to [`run_cells`] did.
#[derive(Debug, Default)]
pub struct Report {
    /// Cells in the experiment (this shard's, when sharded).
    pub cells: usize,
    /// Cells run now.
    pub ran: usize,
    /// Cells found complete and skipped.
    pub skipped: usize,
    /// Runs that stopped.
    pub failures: Vec<CellFailure>,
    /// Events simulated now.
    pub events: u64,
    /// The key figures of each cell run now, by cell.
    pub kpis: Vec<(Cell, Kpis)>,
}

/// A stable 16-hex hash of a serialisable value's JSON.
pub fn hash_of<T: serde::Serialize>(v: &T) -> String {
    let mut h = Fnv1a::new();
    h.write(serde_json::to_string(v).unwrap_or_default().as_bytes());
    format!("{:016x}", h.finish())
}

/// The experiment's identity: everything that shapes its results.
pub fn experiment_hash(exp: &Experiment) -> String {
    hash_of(&(&exp.world_value, &exp.sweep, &exp.outputs))
}

fn manifest(exp: &Experiment, cells: &[Cell]) -> String {
    let axes: Vec<String> = exp
        .sweep
        .iter()
        .flat_map(|s| s.axes.iter().map(|a| a.path.clone()))
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "stormsim": env!("CARGO_PKG_VERSION"),
        "experiment": exp.name,
        "experiment_hash": experiment_hash(exp),
        "cells": cells.len(),
        "axes": axes,
        "tables": crate::output::TABLES,
    }))
    .expect("manifest serialises")
        + "\n"
}

/// Checks that `out` is empty or holds this experiment's results, and
/// records the manifest.
fn claim_output(exp: &Experiment, all: &[Cell], out: &Path, force: bool) -> Result<(), String> {
    let path = out.join("manifest.json");
    let ours = experiment_hash(exp);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let theirs = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["experiment_hash"].as_str().map(String::from));
        if theirs.as_deref() != Some(ours.as_str()) {
            if !force {
                return Err(format!(
                    "{} holds the results of a different experiment (hash {}); use another --out, or --force to replace them",
                    out.display(),
                    theirs.unwrap_or_else(|| "unknown".into())
                ));
            }
            for table in crate::output::TABLES {
                let dir = out.join(table);
                if dir.exists() {
                    std::fs::remove_dir_all(&dir)
                        .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
                }
            }
        }
    }
    write_text(&path, &manifest(exp, all))
}

/// The column kind of each swept parameter.
pub fn param_kinds(exp: &Experiment) -> Vec<(String, ParamKind)> {
    exp.sweep
        .iter()
        .flat_map(|s| s.axes.iter())
        .map(|a| {
            (
                a.path.clone(),
                ParamKind::of(&a.values().unwrap_or_default()),
            )
        })
        .collect()
}

/// The cells an invocation covers.
pub fn selected_cells(exp: &Experiment, opts: &RunOptions) -> Result<Vec<Cell>, String> {
    let all = if opts.no_sweep {
        let mut base = exp.clone();
        base.sweep = None;
        cells(&base).map_err(|e| e.to_string())?
    } else {
        cells(exp).map_err(|e| e.to_string())?
    };
    let mut chosen: Vec<Cell> = all;
    if let Some(id) = &opts.only_cell {
        chosen.retain(|c| &c.id == id);
        if chosen.is_empty() {
            return Err(format!(
                "no cell {id} in this experiment (`stormsim sweep --dry-run` lists them)"
            ));
        }
    }
    if let Some(shard) = opts.shard {
        chosen.retain(|c| shard.has(c));
    }
    Ok(chosen)
}

/// Runs one cell and writes its tables; the summary last.
fn run_cell(
    exp: &Experiment,
    cell: &Cell,
    kinds: &[(String, ParamKind)],
    out: &Path,
) -> Result<(Kpis, u64), String> {
    let world = cell_world(exp, cell).map_err(|e| e.to_string())?;
    let sink = CellSink {
        sample: exp.outputs.attempts,
        ..CellSink::default()
    };
    let output = run(&world, sink).map_err(|e| e.to_string())?;
    let k = kpis(
        &output.sink.rows,
        &output.totals,
        &output.steps,
        &exp.outputs.recovery,
        world.clock.window,
    );
    let clock = world.clock.wall_clock();
    let config = serde_json::to_string(&world).map_err(|e| e.to_string())?;
    let meta = vec![
        (
            "stormsim.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        ("stormsim.experiment".to_string(), exp.name.clone()),
        ("stormsim.cell".to_string(), cell.id.clone()),
        ("stormsim.seed".to_string(), cell.seed.to_string()),
        ("stormsim.params".to_string(), describe(&cell.params)),
        ("stormsim.config_hash".to_string(), hash_of(&world)),
        ("stormsim.config".to_string(), config),
    ];
    let name = &exp.name;
    let pe = |e: polars::prelude::PolarsError| e.to_string();
    let mut ts = timeseries_frame(cell, name, kinds, &output.sink.rows, &clock).map_err(pe)?;
    write_parquet(&table_path(out, "timeseries", &cell.id), &mut ts, &meta)?;
    let spans = pod_group_spans(world.service.pods, world.service.groups());
    let mut pg =
        pod_groups_frame(cell, name, kinds, &output.sink.rows, &clock, &spans).map_err(pe)?;
    write_parquet(&table_path(out, "pod_groups", &cell.id), &mut pg, &meta)?;
    let mut ev = events_frame(cell, name, &output.sink.events, &clock).map_err(pe)?;
    write_parquet(&table_path(out, "events", &cell.id), &mut ev, &meta)?;
    if exp.outputs.attempts > 0.0 {
        let mut at = attempts_frame(cell, name, &output.sink.attempts).map_err(pe)?;
        write_parquet(&table_path(out, "attempts", &cell.id), &mut at, &meta)?;
    }
    let mut sm = summary_frame(cell, name, kinds, &k, output.events).map_err(pe)?;
    write_parquet(&table_path(out, "summary", &cell.id), &mut sm, &meta)?;
    Ok((k, output.events))
}

/// Runs the selected cells not already complete in `opts.out`.
pub fn run_cells(exp: &Experiment, opts: &RunOptions) -> Result<Report, String> {
    let all = if opts.no_sweep {
        selected_cells(
            exp,
            &RunOptions {
                only_cell: None,
                shard: None,
                ..opts.clone()
            },
        )?
    } else {
        cells(exp).map_err(|e| e.to_string())?
    };
    let chosen = selected_cells(exp, opts)?;
    claim_output(exp, &all, &opts.out, opts.force)?;
    sweep_temporaries(&opts.out);
    let (done, todo): (Vec<Cell>, Vec<Cell>) = chosen
        .iter()
        .cloned()
        .partition(|c| table_path(&opts.out, "summary", &c.id).is_file());
    let kinds = if opts.no_sweep {
        Vec::new()
    } else {
        param_kinds(exp)
    };
    let bar = if opts.quiet {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(todo.len() as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} cells  {elapsed} elapsed, ETA {eta}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    };
    let events = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    let results = Mutex::new(Vec::new());
    let work = || {
        todo.par_iter().for_each(|cell| {
            match run_cell(exp, cell, &kinds, &opts.out) {
                Ok((k, n)) => {
                    let total = events.fetch_add(n, Ordering::Relaxed) + n;
                    let secs = bar.elapsed().as_secs_f64().max(1e-3);
                    bar.set_message(format!("{:.1} M events/s", total as f64 / secs / 1e6));
                    results
                        .lock()
                        .expect("no panics while held")
                        .push((cell.clone(), k));
                }
                Err(message) => failures
                    .lock()
                    .expect("no panics while held")
                    .push(CellFailure {
                        cell: cell.clone(),
                        message,
                    }),
            }
            bar.inc(1);
        })
    };
    match opts.threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| format!("cannot start {n} threads: {e}"))?
            .install(work),
        None => work(),
    }
    bar.finish_and_clear();
    let mut failures = failures.into_inner().expect("no panics while held");
    failures.sort_by_key(|f| f.cell.index);
    let mut kpis = results.into_inner().expect("no panics while held");
    kpis.sort_by_key(|(c, _)| c.index);
    Ok(Report {
        cells: chosen.len(),
        ran: todo.len() - failures.len(),
        skipped: done.len(),
        failures,
        events: events.into_inner(),
        kpis,
    })
}
