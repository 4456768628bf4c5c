//! Running an experiment's cells: in parallel across cells (each run stays
//! on one thread), resumable, shardable, with the dataset written as cells
//! finish.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use sim_core::rng::Fnv1a;
use sim_models::graph::Topology;
use sim_models::kpi::{Kpis, kpis_for};
use sim_models::recorder::pod_group_spans;
use sim_models::world::{Checks, run_with};

use crate::dataset::{ClaimLock, Writer, create_dir, io_error, remove_stale_temporaries};
use crate::error::Failure;
use crate::load::Experiment;
use crate::output::{CellContext, CellSink, ParamKind, summary_frame, table_path, write_parquet};
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
    /// Check the world's bounds after every event (the end-of-run audit
    /// and the checks at every bucket close run always).
    pub check_invariants: bool,
    /// `out` is the default (`out/<file name>`), not one the user named: a
    /// plain run of a file with a sweep then writes beside it.
    pub default_out: bool,
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
    hash_text(&serde_json::to_string(v).unwrap_or_default())
}

/// The hash [`hash_of`] gives a value serialised as `json`: a run's
/// `stormsim.config_hash` is this of its summary's `stormsim.config`.
pub fn hash_text(json: &str) -> String {
    let mut h = Fnv1a::new();
    h.write(json.as_bytes());
    format!("{:016x}", h.finish())
}

/// This build's name: a hash of the sources, manifests and locked
/// dependencies that shape its results (`build.rs`). A dataset's manifest
/// records it; a folder written by another build is not resumed.
pub const BUILD: &str = env!("STORMSIM_BUILD");

/// The experiment's identity: everything that shapes its results.
pub fn experiment_hash(exp: &Experiment) -> String {
    match &exp.objective {
        None => hash_of(&(&exp.world_value, &exp.sweep, &exp.outputs)),
        Some(o) => hash_of(&(&exp.world_value, &exp.sweep, &exp.outputs, o)),
    }
}

/// What a dataset folder holds: the base configuration run alone (`run`,
/// or any command on a file without a sweep), or the cells of a sweep.
/// The two never share a folder: their tables have different columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetKind {
    /// One run of the base configuration.
    Base,
    /// The cells of the file's sweep.
    Sweep,
    /// A calibration's evaluations and fit (`stormsim calibrate`).
    Calibrate,
    /// A tipping boundary's points (`stormsim boundary`).
    Boundary,
}

impl DatasetKind {
    /// What `opts` runs of `exp`.
    pub fn of(exp: &Experiment, opts: &RunOptions) -> DatasetKind {
        if opts.no_sweep || exp.sweep.is_none() {
            DatasetKind::Base
        } else {
            DatasetKind::Sweep
        }
    }

    fn name(self) -> &'static str {
        match self {
            DatasetKind::Base => "base",
            DatasetKind::Sweep => "sweep",
            DatasetKind::Calibrate => "calibrate",
            DatasetKind::Boundary => "boundary",
        }
    }
}

fn manifest(exp: &Experiment, cells: &[Cell], kind: DatasetKind, hash: &str) -> String {
    let axes: Vec<String> = exp
        .sweep
        .iter()
        .flat_map(|s| s.axes.iter().map(|a| a.path.clone()))
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "stormsim": env!("CARGO_PKG_VERSION"),
        "build": BUILD,
        "experiment": exp.name,
        "experiment_hash": hash,
        "dataset": kind.name(),
        "cells": cells.len(),
        "axes": if kind == DatasetKind::Sweep { axes } else { Vec::new() },
        "tables": crate::output::TABLES,
        "objective": exp.objective,
    }))
    .expect("manifest serialises")
        + "\n"
}

/// The tables a search writes (removed with the rest by `--force`).
pub const SEARCH_TABLES: [&str; 3] = ["evaluations", "calibrate", "boundary"];

/// Whose results a manifest says a folder holds.
enum Holder {
    /// Nobody's yet.
    Nobody,
    /// These results (same experiment, same kind).
    Us,
    /// Something else, in words.
    Other(String),
}

fn holder(kind: DatasetKind, hash: &str, path: &Path) -> Result<Holder, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Holder::Nobody),
        Err(e) => return Err(Failure::Run(io_error("read", path, e))),
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Failure::Input(format!(
            "{} is not a valid stormsim manifest ({e}): the folder holds something else or was damaged; use another --out, or --force to replace its results",
            path.display()
        ))
    })?;
    let their_hash = v["experiment_hash"].as_str().unwrap_or("unknown");
    // Manifests written before datasets had kinds: judged by hash alone.
    let their_kind = v["dataset"].as_str().unwrap_or(kind.name());
    let name = v["experiment"].as_str().unwrap_or("?");
    // Manifests written before builds were named: another build's.
    let their_build = v["build"].as_str().unwrap_or("unnamed");
    if their_hash == hash && their_kind == kind.name() && their_build == BUILD {
        return Ok(Holder::Us);
    }
    Ok(Holder::Other(
        if their_hash == hash && their_kind == kind.name() {
            format!(
                "this experiment's results written by another build of stormsim (build {their_build}; this one is {BUILD}): its model or its tables may differ, so its cells are not resumed as this build's (`stormsim report` reads them as they are)"
            )
        } else if their_hash == hash {
            let (theirs, ours) = match kind {
                DatasetKind::Base => (
                    "the cells of this experiment's sweep",
                    "a plain run of its base configuration (whose default folder is out/<file name>-base)",
                ),
                DatasetKind::Sweep => (
                    "a plain run of this experiment's base configuration",
                    "the cells of its sweep (`stormsim run --cell ID` runs one of them)",
                ),
                DatasetKind::Calibrate | DatasetKind::Boundary => (
                    "another kind of results of this experiment",
                    "a search's evaluations (its default folder is out/<file name>-calibrate or -boundary)",
                ),
            };
            format!("{theirs}, and this command writes {ours}")
        } else {
            format!(
                "the results of a different experiment, or of a different search of it ({name:?}, hash {their_hash})"
            )
        },
    ))
}

/// Checks that `out` is empty or holds these results, and records the
/// manifest: atomically, under the folder's claim lock, so that of two
/// different experiments started at once exactly one wins. An unchanged
/// manifest is not rewritten (a complete dataset in a read-only folder
/// still reads).
pub(crate) fn claim_output(
    exp: &Experiment,
    all: &[Cell],
    kind: DatasetKind,
    hash: &str,
    out: &Path,
    force: bool,
) -> Result<(), Failure> {
    if let Some(outer) = enclosing_dataset(out) {
        return Err(Failure::Input(format!(
            "{} is inside the stormsim dataset {}, whose folders are its tables (readers take every Parquet file below them); use an --out outside it",
            out.display(),
            outer.display()
        )));
    }
    let path = out.join("manifest.json");
    if let Holder::Us = holder(kind, hash, &path)? {
        return Ok(());
    }
    let _lock = ClaimLock::acquire(out).map_err(Failure::Input)?;
    match holder(kind, hash, &path)? {
        Holder::Us => return Ok(()),
        Holder::Nobody => {}
        Holder::Other(what) if !force => {
            return Err(Failure::Input(format!(
                "{} holds {what}; use another --out, or --force to replace them",
                out.display()
            )));
        }
        Holder::Other(_) => {
            for table in crate::output::TABLES.iter().chain(&SEARCH_TABLES) {
                let dir = out.join(table);
                if dir.exists() {
                    std::fs::remove_dir_all(&dir)
                        .map_err(|e| Failure::Run(io_error("remove", &dir, e)))?;
                }
            }
        }
    }
    let writer = Writer::register(out).map_err(Failure::Run)?;
    writer
        .write_text(&path, &manifest(exp, all, kind, hash))
        .map_err(Failure::Run)
}

/// The stormsim dataset a folder would sit inside: the nearest folder
/// above `out` holding a stormsim manifest (one with an experiment hash;
/// a web project's `manifest.json` is not one).
fn enclosing_dataset(out: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(out).ok()?;
    abs.ancestors()
        .skip(1)
        .find(|dir| {
            std::fs::read_to_string(dir.join("manifest.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .is_some_and(|v| v.get("experiment_hash").is_some())
        })
        .map(Path::to_path_buf)
}

/// Whether `path` holds a whole Parquet file (its magic at both ends), or
/// `None` when there is no file. A cell is complete when its summary, the
/// table written last, is in place; one damaged since (truncated by a full
/// disk's copy, say) would otherwise pass for complete and fail only when
/// read.
fn whole_parquet(path: &Path) -> Option<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let long_enough = f.metadata().is_ok_and(|m| m.len() >= 12);
    let mut magic = |from: SeekFrom| {
        let mut b = [0u8; 4];
        f.seek(from).and_then(|_| f.read_exact(&mut b)).is_ok() && &b == b"PAR1"
    };
    Some(long_enough && magic(SeekFrom::Start(0)) && magic(SeekFrom::End(-4)))
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

/// Most worker threads per core `--threads` accepts: more only adds
/// memory and contention (each cell runs on one thread).
pub const MAX_THREADS_PER_CORE: usize = 8;

/// Checks a `--threads` value against the machine's cores.
pub fn check_threads(n: usize) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let max = MAX_THREADS_PER_CORE * cores;
    if n == 0 {
        return Err("--threads must be at least 1".into());
    }
    if n > max {
        return Err(format!(
            "--threads {n} is more than {MAX_THREADS_PER_CORE} per core on this machine's {cores} core(s) (at most {max}); each cell runs on one thread, so {cores} is usually fastest"
        ));
    }
    Ok(n)
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

/// Runs one cell and writes its tables as it goes; the summary last.
fn run_cell(
    exp: &Experiment,
    cell: &Cell,
    kinds: &[(String, ParamKind)],
    out: &Path,
    writer: &Writer,
    checks: Checks,
) -> Result<(Kpis, u64), String> {
    let world = cell_world(exp, cell).map_err(|e| e.to_string())?;
    let config = serde_json::to_string(&world).map_err(|e| e.to_string())?;
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
        ("stormsim.cell".to_string(), cell.id.clone()),
        ("stormsim.seed".to_string(), cell.seed.to_string()),
        ("stormsim.params".to_string(), describe(&cell.params)),
        ("stormsim.config_hash".to_string(), hash_text(&config)),
    ];
    // The resolved configuration goes in the summary alone, the run's
    // record: a graph of 500 services resolves to about 450 KB of JSON,
    // which every table of every cell repeated. The other tables name
    // it by its hash.
    let mut summary_meta = meta.clone();
    summary_meta.push(("stormsim.config".to_string(), config));
    let ctx = CellContext {
        cell: cell.clone(),
        experiment: exp.name.clone(),
        kinds: kinds.to_vec(),
        clock: world.clock.wall_clock(),
        spans: pod_group_spans(world.entry_service().pods, world.entry_service().groups()),
        meta,
        buckets: world.clock.buckets(),
        edges: Topology::of(&world)
            .map(|t| t.edges.into_iter().map(|e| e.name).collect())
            .unwrap_or_default(),
    };
    let sink = CellSink::new(out, ctx, exp.outputs.attempts, writer);
    let output = run_with(&world, sink, checks).map_err(|e| e.to_string())?;
    let rows = output.sink.finish()?;
    let k = kpis_for(
        &rows,
        &output.totals,
        &output.steps,
        &exp.outputs.recovery,
        world.clock.window,
        &exp.objective.clone().unwrap_or_default(),
    )
    .with_cost(&output.totals);
    let pe = |e: polars::prelude::PolarsError| e.to_string();
    let mut sm = summary_frame(cell, &exp.name, kinds, &k, output.events).map_err(pe)?;
    write_parquet(
        &table_path(out, "summary", &cell.id),
        &mut sm,
        &summary_meta,
        writer,
    )?;
    Ok((k, output.events))
}

/// Runs the selected cells not already complete in `opts.out`.
pub fn run_cells(exp: &Experiment, opts: &RunOptions) -> Result<Report, Failure> {
    let all = if opts.no_sweep {
        selected_cells(
            exp,
            &RunOptions {
                only_cell: None,
                shard: None,
                ..opts.clone()
            },
        )
        .map_err(Failure::Input)?
    } else {
        cells(exp).map_err(|e| Failure::Input(e.to_string()))?
    };
    let chosen = selected_cells(exp, opts).map_err(Failure::Input)?;
    let threads = match opts.threads {
        Some(n) => Some(check_threads(n).map_err(Failure::Input)?),
        None => None,
    };
    create_dir(&opts.out).map_err(Failure::Input)?;
    claim_output(
        exp,
        &all,
        DatasetKind::of(exp, opts),
        &experiment_hash(exp),
        &opts.out,
        opts.force,
    )?;
    let (done, todo): (Vec<Cell>, Vec<Cell>) = chosen.iter().cloned().partition(|c| {
        let summary = table_path(&opts.out, "summary", &c.id);
        match whole_parquet(&summary) {
            Some(whole) => {
                if !whole {
                    eprintln!(
                        "warning: {} is not a whole Parquet file (damaged after it was written): cell {} runs again",
                        summary.display(),
                        c.id
                    );
                }
                whole
            }
            None => false,
        }
    });
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
    // Nothing to write, nothing written: a complete dataset in a read-only
    // folder reads as complete.
    let writer = if todo.is_empty() {
        None
    } else {
        let w = Writer::register(&opts.out).map_err(Failure::Run)?;
        remove_stale_temporaries(&opts.out);
        Some(w)
    };
    let events = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    let results = Mutex::new(Vec::new());
    let work = || {
        todo.par_iter().for_each(|cell| {
            let Some(writer) = writer.as_ref() else {
                return;
            };
            let checks = Checks {
                every_event: opts.check_invariants,
            };
            match run_cell(exp, cell, &kinds, &opts.out, writer, checks) {
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
    match threads {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map_err(|e| Failure::Run(format!("cannot start {n} threads: {e}")))?
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
