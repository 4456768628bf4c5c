//! What each `stormsim` command does. Output for people goes to stdout,
//! problems to stderr; a [`Failure`] says which exit code applies.

use std::fs;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use sim_models::policy::{analysis, presets};

use crate::load::{Experiment, InputLimits, load};
use crate::output::table_path;
use crate::report::optional_floats as float_column;
use crate::runner::{Report, RunOptions, run_cells, selected_cells};
use crate::sweep::{cells, describe, readable};

pub use crate::error::Failure;

fn load_with_seed(
    file: &Path,
    seed: Option<u64>,
    limits: &InputLimits,
) -> Result<Experiment, Failure> {
    let mut exp = load(file, limits).map_err(|e| Failure::Input(e.to_string()))?;
    exp.print_warnings();
    if let Some(s) = seed {
        exp.world.seed = s;
        for doc in [&mut exp.world_value, &mut exp.document] {
            if let yaml_serde::Value::Mapping(m) = doc {
                m.insert("seed".into(), s.into());
            }
        }
    }
    Ok(exp)
}

/// This process's peak resident memory in MiB, where the system tells it
/// (Linux): what a job's memory request must cover.
pub fn peak_memory() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.div_ceil(1024))
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// How a run's recovery reads: recovered after some time, not within the
/// horizon (metastable), or not judged (no trigger, or the run ended too
/// soon after it).
fn recovery_words(k: &sim_models::kpi::Kpis) -> String {
    match (k.trigger_end_s, k.recovery_judged, k.time_to_recover_s) {
        (None, _, _) => "no trigger".into(),
        (Some(_), false, _) => {
            "recovery not judged (the run ends too soon after the trigger)".into()
        }
        (Some(_), true, _) if k.metastable => format!(
            "not recovered within the horizon ({} last)  METASTABLE",
            k.recovery_held_by.unwrap_or("?")
        ),
        (Some(_), true, t) => format!(
            "recovered after {} s ({} last)",
            fmt_opt(t, 0),
            k.recovery_held_by.unwrap_or("?")
        ),
    }
}

fn print_report(
    exp: &Experiment,
    file: &Path,
    report: &Report,
    out: &Path,
    plain_run: bool,
    quiet: bool,
) -> Result<(), Failure> {
    for (cell, k) in report.kpis.iter().filter(|_| !quiet) {
        crate::say!(
            "{}  {}\n  success {:.1} %  degraded {:.1} %  errors {:.1} % (peak {:.1} %)  amplification {:.2} (peak {:.2})  \
             e2e p99 {} s  wasted {:.1} %  {}",
            cell.id,
            cell.name(),
            100.0 * k.success_rate,
            100.0 * k.degraded_rate,
            100.0 * k.error_rate,
            100.0 * k.peak_error_rate,
            k.amplification_mean,
            k.amplification_peak,
            fmt_opt(k.e2e_p99_s, 2),
            100.0 * k.wasted_fraction,
            recovery_words(k),
        );
    }
    crate::say!(
        "{}: {} cell(s): {} run, {} already complete, {} failed; {} events; dataset in {}{}",
        exp.name,
        report.cells,
        report.ran,
        report.skipped,
        report.failures.len(),
        report.events,
        out.display(),
        peak_memory().map_or(String::new(), |m| format!("; peak memory {m} MiB"))
    );
    if report.failures.is_empty() {
        return Ok(());
    }
    let mut msg = String::new();
    for f in &report.failures {
        let repro = if plain_run {
            format!("stormsim run {} --seed {}", file.display(), f.cell.seed)
        } else {
            format!("stormsim run {} --cell {}", file.display(), f.cell.id)
        };
        msg.push_str(&format!(
            "error: cell {} ({}) failed: {}\n  reproduce with: {repro}\n",
            f.cell.id,
            f.cell.name(),
            f.message
        ));
    }
    Err(Failure::Run(msg.trim_end().to_string()))
}

/// `stormsim run`.
pub fn run(
    file: &Path,
    mut opts: RunOptions,
    seed: Option<u64>,
    cell: Option<String>,
    limits: &InputLimits,
) -> Result<(), Failure> {
    let exp = load_with_seed(file, seed, limits)?;
    let plain = cell.is_none();
    if plain {
        opts.no_sweep = true;
        if exp.sweep.is_some() {
            eprintln!("note: running the base configuration; `stormsim sweep` runs the sweep");
            // Its own folder, beside the sweep's (out/<file name>-base).
            if opts.default_out {
                let mut name = opts.out.file_name().unwrap_or_default().to_os_string();
                name.push("-base");
                opts.out.set_file_name(name);
            }
        }
    }
    opts.only_cell = cell;
    let report = run_cells(&exp, &opts)?;
    print_report(&exp, file, &report, &opts.out, plain, opts.quiet)
}

/// `stormsim sweep`.
pub fn sweep(
    file: &Path,
    opts: RunOptions,
    seed: Option<u64>,
    dry_run: bool,
    limits: &InputLimits,
) -> Result<(), Failure> {
    let exp = load_with_seed(file, seed, limits)?;
    if dry_run {
        for c in selected_cells(&exp, &opts).map_err(Failure::Input)? {
            crate::say!(
                "{}  seed {:>20}  replication {}  {}",
                c.id,
                c.seed,
                c.replication,
                c.name()
            );
        }
        return Ok(());
    }
    let report = run_cells(&exp, &opts)?;
    let outcome = print_report(
        &exp,
        file,
        &report,
        &opts.out,
        exp.sweep.is_none(),
        opts.quiet,
    );
    if exp.sweep.as_ref().is_some_and(|s| s.replications > 1)
        && opts.shard.is_none()
        && !opts.quiet
        && let Ok(table) = read_summaries(&exp, &opts.out)
        && let Some(t) = crate::replicas::table(&table, &axes_of(&exp)).map_err(Failure::Run)?
    {
        let whole = format!(
            "`stormsim report {}` tabulates them all",
            opts.out.display()
        );
        crate::say!("\n{}", capped(&t, 2, "variants", &whole));
    }
    outcome
}

/// Most rows of a table printed on the terminal: a sweep of a thousand
/// cells would print thousands of lines; the report and the summary table
/// have every row.
const TERMINAL_ROWS: usize = 30;

/// `table` (its first `head` lines its heading) cut after
/// [`TERMINAL_ROWS`] rows, with a line saying how many `noun` more there
/// are and where they all are (`whole`).
fn capped(table: &str, head: usize, noun: &str, whole: &str) -> String {
    let lines: Vec<&str> = table.trim_end().lines().collect();
    let rows = lines.len().saturating_sub(head);
    if rows <= TERMINAL_ROWS {
        return lines.join("\n");
    }
    let mut out = lines[..head + TERMINAL_ROWS].join("\n");
    out.push_str(&format!(
        "\n… and {} more {noun}: {whole}",
        rows - TERMINAL_ROWS
    ));
    out
}

/// Reads the `summary` rows of every cell of `exp` present in `out`.
pub fn read_summaries(exp: &Experiment, out: &Path) -> Result<DataFrame, String> {
    let mut frames = Vec::new();
    for c in cells(exp).map_err(|e| e.to_string())? {
        let path = table_path(out, "summary", &c.id);
        if let Ok(f) = fs::File::open(&path) {
            frames.push(
                ParquetReader::new(f)
                    .finish()
                    .map_err(|e| format!("{}: {e}", path.display()))?,
            );
        }
    }
    let mut iter = frames.into_iter();
    let mut all = iter.next().ok_or("no results yet")?;
    for f in iter {
        all.vstack_mut(&f).map_err(|e| e.to_string())?;
    }
    Ok(all)
}

/// `stormsim calibrate`: fit the file's unknowns to its observed figures.
pub fn calibrate(
    file: &Path,
    opts: crate::calibrate::Options,
    seed: Option<u64>,
    limits: &InputLimits,
) -> Result<(), Failure> {
    let exp = load_with_seed(file, seed, limits)?;
    let fit = crate::calibrate::calibrate(&exp, &opts)?;
    let secs = fit.elapsed.as_secs_f64();
    if !opts.quiet {
        crate::say!("{}", crate::calibrate::tables(&fit));
    }
    crate::say!(
        "{}: {} candidates on {} seeds{}; {} runs now ({} read back from an earlier run), {} events, {:.0} s; the best fit meets every figure on {} of {} seeds{}\ncalibrated experiment: {}  (stormsim replay {})\nevaluations: {}",
        exp.name,
        fit.candidates.len(),
        fit.seeds.len(),
        match fit.stop {
            crate::calibrate::Stop::Budget => "",
            crate::calibrate::Stop::Time => " (stopped by the time budget)",
            crate::calibrate::Stop::Converged => " (the optimiser converged before the budget)",
        },
        fit.ran,
        fit.read_back,
        fit.events,
        secs,
        fit.best.seeds_met,
        fit.seeds.len(),
        if fit.best.median_met {
            ", its medians every figure"
        } else {
            "; its medians miss some"
        },
        fit.written.display(),
        fit.written.display(),
        opts.out.join("evaluations").display(),
    );
    if let Some(flat) = crate::calibrate::flat_loss(&fit) {
        crate::say!(
            "note: every candidate has the same loss ({flat:.3}): no figure moved within the unknowns' ranges, so the fit is not informative; widen the ranges, or check that this world can produce the observed figures"
        );
    }
    Ok(())
}

/// `stormsim boundary`: find where the file's trigger tips the system.
pub fn boundary(
    file: &Path,
    opts: RunOptions,
    seed: Option<u64>,
    limits: &InputLimits,
) -> Result<(), Failure> {
    let exp = load_with_seed(file, seed, limits)?;
    let b = crate::boundary::boundary(
        &exp,
        &opts.out,
        opts.threads,
        opts.force,
        opts.quiet,
        sim_models::world::Checks {
            every_event: opts.check_invariants,
        },
        limits,
    )?;
    if !opts.quiet {
        crate::say!("points judged:\n{}", crate::boundary::points_table(&b));
    }
    crate::say!(
        "{}: the edge (where the storm probability crosses 50 %; band: the 95 % Wilson intervals' edge):\n{}\nreport: {}",
        exp.name,
        crate::boundary::table(&b),
        opts.out.join("report.html").display()
    );
    Ok(())
}

/// The swept paths of `exp`.
fn axes_of(exp: &Experiment) -> Vec<String> {
    exp.sweep
        .iter()
        .flat_map(|s| s.axes.iter().map(|a| a.path.clone()))
        .collect()
}

/// `stormsim replay`: run everything, then rank the cells.
pub fn replay(
    file: &Path,
    opts: RunOptions,
    seed: Option<u64>,
    limits: &InputLimits,
) -> Result<(), Failure> {
    let exp = load_with_seed(file, seed, limits)?;
    let report = run_cells(&exp, &opts)?;
    let outcome = print_report(
        &exp,
        file,
        &report,
        &opts.out,
        exp.sweep.is_none(),
        opts.quiet,
    );
    let table = read_summaries(&exp, &opts.out).map_err(Failure::Run)?;
    let whole = format!("every one in {}", opts.out.join("report.html").display());
    let ranked = ranked_table(&exp, &table).map_err(Failure::Run)?;
    crate::say!("\n{}", capped(&ranked, 2, "cells", &whole));
    if let Some(t) = crate::replicas::table(&table, &axes_of(&exp)).map_err(Failure::Run)? {
        crate::say!("\n{}", capped(&t, 2, "variants", &whole));
    }
    let figures = figures_table(&exp, &table).map_err(Failure::Run)?;
    crate::say!(
        "\nincident figures (trailing-window peaks, times after the first trigger):\n{}",
        capped(&figures, 1, "cells", &whole)
    );
    let html = crate::report::report(&opts.out, &crate::report::ReportOptions::default())
        .map_err(Failure::Run)?;
    crate::say!("\nreport: {}", html.display());
    outcome
}

/// The summary in ranking order (the experiment's objective, see
/// `verdict.rs`), with each row's name, the criterion that decided its
/// place and its flags.
fn ranked(
    exp: &Experiment,
    summary: &DataFrame,
) -> Result<(DataFrame, Vec<String>, crate::verdict::Ranking), String> {
    let objective = exp.objective.clone().unwrap_or_default();
    let ranking = crate::verdict::rank(summary, &objective)?;
    let idx = IdxCa::from_vec(
        "order".into(),
        ranking.order.iter().map(|&i| i as IdxSize).collect(),
    );
    let sorted = summary.take(&idx).map_err(|e| e.to_string())?;
    let labels = if sorted.column("variant").is_ok() {
        crate::report::strings(&sorted, "variant")?
    } else {
        crate::report::strings(&sorted, "run_id")?
    };
    Ok((sorted, labels, ranking))
}

/// The cells ranked by the objective: the SLO-violation time that scores
/// them, the figures beside it, the criterion that decided each place and
/// what the ranking must not hide.
pub fn ranked_table(exp: &Experiment, summary: &DataFrame) -> Result<String, String> {
    let (sorted, labels, ranking) = ranked(exp, summary)?;
    let col = |name: &str| float_column(&sorted, name);
    let (slo, peak_err, degraded, amp, p99) = (
        col("slo_violation_s")?,
        col("peak_error_rate")?,
        col("degraded_rate")?,
        col("amplification_peak")?,
        col("peak_e2e_p99_s")?,
    );
    let objective = exp.objective.clone().unwrap_or_default();
    let mut lines = vec![
        format!("{}:", crate::verdict::describe(&objective)),
        format!(
            "{:<4} {:>10} {:>9} {:>9} {:>9} {:>10} {:>28}  {:<15} cell",
            "rank",
            "SLO breach",
            "peak err",
            "degraded",
            "peak amp",
            "user p99",
            "recovery",
            "decided by"
        ),
    ];
    let (trigger, judged, recover, meta) = (
        col("trigger_end_s")?,
        col("recovery_judged")?,
        col("time_to_recover_s")?,
        col("metastable")?,
    );
    let yes = |v: Option<f64>| v.is_some_and(|v| v > 0.5);
    for (rank, label) in labels.iter().enumerate() {
        let i = ranking.order[rank];
        let pct = |v: &[Option<f64>]| 100.0 * v[rank].unwrap_or(0.0);
        let recovery = if trigger[rank].is_none() {
            "no trigger".to_string()
        } else if !yes(judged[rank]) {
            "not judged".to_string()
        } else if yes(meta[rank]) {
            "never (metastable)".to_string()
        } else {
            format!("{} s", fmt_opt(recover[rank], 0))
        };
        let flags = &ranking.flags[i];
        lines.push(format!(
            "{:<4} {:>9}s {:>8.1}% {:>8.1}% {:>9.2} {:>9}s {:>28}  {:<15} {}{}",
            rank + 1,
            fmt_opt(slo[rank], 0),
            pct(&peak_err),
            pct(&degraded),
            amp[rank].unwrap_or(0.0),
            fmt_opt(p99[rank], 1),
            recovery,
            ranking.decided_by[rank].unwrap_or("-"),
            label,
            if flags.is_empty() {
                String::new()
            } else {
                format!("  [{}]", flags.join("; "))
            }
        ));
    }
    Ok(lines.join("\n"))
}

/// The incident figures of each cell, in ranking order, read the way an
/// incident write-up reads its dashboards (see `sim_models::kpi`): p99 and
/// error rate over the trailing window at their peak and just before the
/// first trigger, the peak attempt rate, calls in flight and pool wait, how
/// long after the first trigger the storm showed and the pools ran dry, the
/// peak backlog, 429s, retry share, retries per request and the share of
/// retried calls rescued.
pub fn figures_table(exp: &Experiment, summary: &DataFrame) -> Result<String, String> {
    let (sorted, labels, _) = ranked(exp, summary)?;
    let cols = crate::output::FIGURE_COLUMNS.map(|c| float_column(&sorted, c));
    let mut lines = vec![format!(
        "{:>9} {:>8} {:>9} {:>8} {:>10} {:>8} {:>10} {:>8} {:>9} {:>8} {:>7} {:>7} {:>8} {:>8}  {}",
        "p99 peak",
        "before",
        "err peak",
        "before",
        "attempts/s",
        "calls",
        "pool wait",
        "visible",
        "exhausted",
        "backlog",
        "429s",
        "retry %",
        "retry/req",
        "rescued",
        "cell"
    )];
    let cols: Vec<Vec<Option<f64>>> = cols.into_iter().collect::<Result<_, _>>()?;
    for (i, label) in labels.iter().enumerate() {
        let v = |c: usize| cols[c][i];
        let pct = |c: usize| v(c).map_or("-".into(), |x| format!("{:.1}%", 100.0 * x));
        let secs = |c: usize, d: usize| v(c).map_or("-".into(), |x| format!("{x:.d$}s"));
        lines.push(format!(
            "{:>9} {:>8} {:>9} {:>8} {:>10} {:>8} {:>10} {:>8} {:>9} {:>8} {:>7} {:>7} {:>8} {:>8}  {}",
            secs(0, 1),
            secs(1, 1),
            pct(2),
            pct(3),
            fmt_opt(v(4), 0),
            fmt_opt(v(5), 0),
            secs(6, 1),
            secs(7, 0),
            secs(8, 0),
            fmt_opt(v(9), 0),
            fmt_opt(v(10), 0),
            pct(11),
            fmt_opt(v(12), 2),
            pct(13),
            label
        ));
    }
    Ok(lines.join("\n"))
}

/// `stormsim validate`.
pub fn validate(file: &Path, limits: &InputLimits) -> Result<(), Failure> {
    let exp = load(file, limits).map_err(|e| Failure::Input(e.to_string()))?;
    exp.print_warnings();
    let n = cells(&exp)
        .map_err(|e| Failure::Input(e.to_string()))?
        .len();
    search_plans(&exp, limits)?;
    crate::say!(
        "{}: valid ({} cell{}{})",
        file.display(),
        n,
        if n == 1 { "" } else { "s" },
        match (exp.calibrate.is_some(), exp.boundary.is_some()) {
            (true, true) => ", a calibration and a boundary",
            (true, false) => ", a calibration",
            (false, true) => ", a boundary",
            (false, false) => "",
        }
    );
    Ok(())
}

/// The file's searches, checked and described (`calibrate:`, `boundary:`).
fn search_plans(exp: &Experiment, limits: &InputLimits) -> Result<Vec<String>, Failure> {
    let mut lines =
        crate::calibrate::plan(exp, limits).map_err(|e| Failure::Input(e.to_string()))?;
    lines.extend(crate::boundary::plan(exp, limits).map_err(|e| Failure::Input(e.to_string()))?);
    Ok(lines)
}

/// `explain`'s view of a graph: each service with its calls, step by
/// step, and each path from the entry with its static worst case.
fn explain_graph(world: &sim_models::config::WorldConfig, what: &str) -> Result<(), Failure> {
    let topo = sim_models::graph::Topology::of(world).map_err(|e| {
        Failure::Input(
            e.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    crate::say!(
        "\n# Service graph, {what}: load enters at {}",
        topo.services[topo.entry as usize].name
    );
    for s in &topo.services {
        let c = &s.cfg;
        let plural = |n: u32, one: &str| match n {
            1 => format!("1 {one}"),
            n => format!("{n} {one}s"),
        };
        let mut about = vec![plural(c.pods, "pod")];
        if let Some(w) = c.workers {
            about.push(plural(w, "worker"));
        }
        if let Some(k) = c.cores {
            about.push(plural(k, "core"));
        }
        if c.work.is_some() {
            about.push("own work".into());
        }
        if let Some(o) = &c.outlier_detection {
            about.push(o.describe(c.pods));
        }
        if let Some(lag) = c.endpoint_lag {
            about.push(format!(
                "its balancer hears of pods leaving and joining {lag} late"
            ));
        }
        if let Some(a) = &c.autoscaling {
            about.push(a.describe());
        }
        crate::say!("#   {} ({})", s.name, about.join(", "));
        for (i, step) in s.steps.iter().enumerate() {
            let calls: Vec<String> = step
                .edges
                .iter()
                .map(|&e| {
                    let edge = &topo.edges[e as usize];
                    let mut c = topo.name_of(edge.to).to_string();
                    if edge.optional {
                        c.push_str(" (optional)");
                    }
                    if edge.probability < 1.0 {
                        c.push_str(&format!(" ({:.0} % of requests)", edge.probability * 100.0));
                    }
                    c
                })
                .collect();
            let how = match step.edges.len() {
                1 => String::new(),
                n if step.wait_for as usize == n => format!(", in parallel, waiting for all {n}"),
                n if step.wait_for == 1 => format!(", in parallel, waiting for the first of {n}"),
                n => format!(
                    ", in parallel, waiting for the first {} of {n}",
                    step.wait_for
                ),
            };
            crate::say!("#     step {}: calls {}{how}", i + 1, calls.join(", "));
        }
    }
    for d in &topo.dependencies {
        crate::say!(
            "#   {} (dependency: {} slots, queue {})",
            d.name,
            d.cfg.capacity,
            d.cfg.queue_limit
        );
    }
    crate::say!(
        "#   fan-out: {} attempts per user request, every call made once and none retried: a run's amplification with no retry (replay flags runs above 3 × this, or above the objective's amplification)",
        show_fan_out(topo.fan_out())
    );
    crate::say!(
        "\n# Static worst case per path (latency bottom up: an attempt lasts at most its own bound or what the service it calls can take; amplification multiplied down)"
    );
    let (paths, more) = analysis::paths_worst_case(world, &topo);
    for p in paths {
        crate::say!(
            "#   {}: latency {}, {} attempt(s) at {} per user request",
            p.nodes.join(" -> "),
            p.latency.map_or("unbounded".to_string(), |l| l.to_string()),
            analysis::show_count(p.amplification),
            p.nodes.last().map_or("", String::as_str)
        );
        for line in &p.derivation {
            crate::say!("#     {line}");
        }
    }
    if more {
        crate::say!(
            "#   … more paths, not shown (the first {} above)",
            analysis::MAX_PATHS
        );
    }
    Ok(())
}

/// A fan-out to two places, without trailing zeros (`2.6`, `5`).
fn show_fan_out(f: f64) -> String {
    let s = format!("{f:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Most cells `explain` lists one by one.
const EXPLAIN_CELLS: usize = 50;

/// `stormsim explain`: the resolved configuration (of the base, or of one
/// sweep cell with `cell`), its static worst case, and for a sweep its
/// axes, cell count and each cell's changed fields; the `sweep` and
/// `outputs` sections as resolved.
pub fn explain(file: &Path, limits: &InputLimits, cell: Option<&str>) -> Result<(), Failure> {
    let exp = load(file, limits).map_err(|e| Failure::Input(e.to_string()))?;
    exp.print_warnings();
    let all = cells(&exp).map_err(|e| Failure::Input(e.to_string()))?;
    let (world, what) = match cell {
        None => (exp.world.clone(), "the base configuration".to_string()),
        Some(id) => {
            let c = all.iter().find(|c| c.id == id).ok_or_else(|| {
                Failure::Input(format!(
                    "no cell {id} in this experiment (`stormsim explain FILE` or `stormsim sweep --dry-run` lists them)"
                ))
            })?;
            let w = crate::sweep::cell_world(&exp, c).map_err(|e| Failure::Input(e.to_string()))?;
            (w, format!("cell {id} ({})", c.name()))
        }
    };
    crate::say!("# {} ({})", exp.name, file.display());
    if let Some(d) = &exp.description {
        crate::say!("# {}", d.trim().replace('\n', "\n# "));
    }
    if world.is_graph() {
        explain_graph(&world, &what)?;
    } else {
        let w = analysis::worst_case(&world);
        crate::say!("\n# Static worst case of the client policy, {what}");
        crate::say!(
            "#   latency of one call: {}",
            w.latency.map_or("unbounded".to_string(), |l| l.to_string())
        );
        crate::say!(
            "#   attempts per call: {}; upstream attempts per user request: {}",
            analysis::show_count(w.attempts_per_call),
            analysis::show_count(w.amplification)
        );
        for line in &w.derivation {
            crate::say!("#     {line}");
        }
        if let Some(o) = &world.service.outlier_detection {
            crate::say!("#   {}", o.describe(world.service.pods));
        }
        if let Some(a) = &world.service.autoscaling {
            crate::say!("#   {}", a.describe());
        }
    }
    crate::say!("#   cells: {}", all.len());
    if let Some(sweep) = &exp.sweep {
        crate::say!("\n# Sweep: {} cell(s)", all.len());
        for a in &sweep.axes {
            let values = a.labelled_values().unwrap_or_default();
            let shown: Vec<String> = values
                .iter()
                .take(12)
                .map(|(l, v)| match l {
                    Some(l) => format!("{l:?} ({})", readable(v)),
                    None => readable(v),
                })
                .collect();
            let more = values.len().saturating_sub(shown.len());
            crate::say!(
                "#   {}: {} value(s): {}{}",
                a.path,
                values.len(),
                shown.join(", "),
                if more > 0 {
                    format!(", … {more} more")
                } else {
                    String::new()
                }
            );
        }
        for c in all.iter().take(EXPLAIN_CELLS) {
            if c.labels.iter().any(Option::is_some) {
                crate::say!("#   {}  {}  ({})", c.id, c.name(), describe(&c.params));
            } else {
                crate::say!("#   {}  {}", c.id, c.name());
            }
        }
        if all.len() > EXPLAIN_CELLS {
            crate::say!(
                "#   … {} more (`stormsim sweep FILE --dry-run` lists all)",
                all.len() - EXPLAIN_CELLS
            );
        }
        crate::say!("#   `stormsim explain FILE --cell ID` prints one cell's whole configuration");
    }
    let searches = search_plans(&exp, limits)?;
    if !searches.is_empty() {
        crate::say!("\n# Searches (`stormsim calibrate`, `stormsim boundary`)");
        for line in searches {
            crate::say!("#   {line}");
        }
    }
    crate::say!("\n# Resolved configuration of {what} (defaults filled in, presets expanded)");
    crate::say!(
        "{}",
        crate::load::to_string(&resolved_sections(&world))
            .map_err(|e| Failure::Run(e.to_string()))?
            .trim_end()
    );
    #[derive(serde::Serialize)]
    struct Rest<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        sweep: Option<&'a crate::sweep::SweepSpec>,
        outputs: &'a crate::load::OutputSpec,
    }
    crate::say!(
        "{}",
        crate::load::to_string(&Rest {
            sweep: exp.sweep.as_ref(),
            outputs: &exp.outputs,
        })
        .map_err(|e| Failure::Run(e.to_string()))?
        .trim_end()
    );
    Ok(())
}

/// `world` as `explain` shows it: a graph without the single-tier
/// sections (`service`, `client`, `upstream` and the network's legs to the
/// upstream), which a graph refuses when written and so never reads; their
/// defaults would read as if they applied to the graph's nodes.
fn resolved_sections(world: &sim_models::config::WorldConfig) -> yaml_serde::Value {
    let mut v = crate::load::to_value(world);
    if world.is_graph()
        && let yaml_serde::Value::Mapping(m) = &mut v
    {
        for key in ["service", "client", "upstream"] {
            m.remove(key);
        }
        if let Some(yaml_serde::Value::Mapping(n)) = m.get_mut("network") {
            n.remove("pod_to_upstream");
            n.remove("upstream_to_pod");
        }
    }
    v
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(p);
        }
    }
}

/// `stormsim list`.
pub fn list(dir: &Path) -> Result<(), Failure> {
    let mut files = Vec::new();
    yaml_files(dir, &mut files);
    crate::say!("Experiments in {}:", dir.display());
    if files.is_empty() {
        crate::say!("  (none found; give --dir)");
    }
    for f in files {
        // Loaded whole, so a name or sweep inherited through `extends`
        // shows, and a file that would not run says so.
        let about = match crate::load::load(&f, &crate::load::InputLimits::default()) {
            Ok(exp) => {
                let what = if exp.calibrate.is_some() {
                    " (calibrate)".to_string()
                } else if exp.boundary.is_some() {
                    " (boundary)".to_string()
                } else {
                    match exp.sweep.as_ref().map(|s| s.count()) {
                        Some(1) => " (sweep, 1 cell)".to_string(),
                        Some(n) => format!(" (sweep, {n} cells)"),
                        None => String::new(),
                    }
                };
                format!("{}{what}", exp.name)
            }
            Err(e) => format!(
                "(invalid: {})",
                e.0.first().map_or(String::new(), |e| e.message.clone())
            ),
        };
        crate::say!("  {:<52} {about}", f.display());
    }
    crate::say!("\nPolicy presets (client: {{ preset: NAME }}):");
    for name in presets::NAMES {
        let p = presets::get(name).expect("listed presets exist");
        crate::say!("  {name:<28} {}", p.summary);
    }
    Ok(())
}

/// `stormsim report`.
pub fn report(dir: &Path, opts: crate::report::ReportOptions) -> Result<(), Failure> {
    let html = crate::report::report(dir, &opts).map_err(|e| {
        if e.contains("not a stormsim dataset")
            || e.contains("--kpi")
            || e.contains("not a swept parameter")
        {
            Failure::Input(e)
        } else {
            Failure::Run(e)
        }
    })?;
    crate::say!("{}", html.display());
    Ok(())
}
