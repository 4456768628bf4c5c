//! `stormsim`: run, sweep, replay, calibrate, find the edge of, validate
//! and explain experiments.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use stormsim::commands::{self, Failure};
use stormsim::load::InputLimits;
use stormsim::sweep::Shard;

/// A deterministic simulator of retry storms and metastable failures.
///
/// Describe a service, its clients' retry, timeout, budget and breaker
/// settings and an incident timeline in YAML; stormsim replays it and
/// writes the results as Parquet. Same file and seed, same bytes.
#[derive(Parser)]
// The version names the build too: a dataset's manifest records it, and a
// folder written by another build is not resumed.
#[command(
    name = "stormsim",
    version = concat!(env!("CARGO_PKG_VERSION"), " (build ", env!("STORMSIM_BUILD"), ")"),
    propagate_version = true
)]
#[command(after_help = "\
Examples:
  stormsim validate experiments/incidents/llm-api-1402.yaml
  stormsim run experiments/basics/steady.yaml --seed 7 --out out/steady
  stormsim sweep experiments/sweeps/retries-x-timeout.yaml --threads 2
  stormsim sweep FILE --shard 3/8        # one of 8 shards (or set JOB_COMPLETION_INDEX / SLURM_ARRAY_TASK_ID with --shards 8)
  stormsim explain experiments/sweeps/presets-compared.yaml
  stormsim calibrate experiments/incidents/llm-api-1402.calibrate.yaml
  stormsim boundary experiments/boundary/near-capacity.yaml
  stormsim report out/retries-x-timeout --kpi peak_error_rate --x client.retry.max_retries --y client.attempt_timeout
  stormsim list

Exit codes: 0 ok, 1 a run failed (invariant or limit), 2 bad input.")]
struct Cli {
    /// No progress bar.
    #[arg(long, short, global = true)]
    quiet: bool,
    /// Check the world's invariants after every event, not only at every
    /// bucket close and at the end (slower; the test suite turns it on).
    #[arg(long, global = true, env = "STORMSIM_CHECK_INVARIANTS")]
    check_invariants: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct Limits {
    /// Largest experiment file, in bytes.
    #[arg(long, default_value_t = InputLimits::default().max_file_bytes)]
    max_file_size: u64,
    /// Most cells a sweep may have.
    #[arg(long, default_value_t = InputLimits::default().max_cells)]
    max_cells: u64,
    /// Most requests one run may simulate.
    #[arg(long, default_value_t = InputLimits::default().max_requests)]
    max_requests: f64,
}

impl Limits {
    fn get(&self) -> InputLimits {
        InputLimits {
            max_file_bytes: self.max_file_size,
            max_cells: self.max_cells,
            max_requests: self.max_requests,
        }
    }
}

#[derive(Args, Clone)]
struct RunArgs {
    /// The experiment file.
    file: PathBuf,
    /// Master seed (overrides the file's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory (default: out/<file name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Worker threads for sweeps (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Replace the results of a different experiment found in the output
    /// directory (without it, stormsim refuses to mix two experiments).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    limits: Limits,
}

#[derive(Subcommand)]
enum Command {
    /// Run one configuration (the file's base, or one sweep cell with
    /// --cell) and write its tables.
    Run {
        #[command(flatten)]
        args: RunArgs,
        /// Run only this sweep cell (the id failure messages print).
        #[arg(long)]
        cell: Option<String>,
    },
    /// Run every cell of the file's sweep in parallel; resumable.
    Sweep {
        #[command(flatten)]
        args: RunArgs,
        /// Run only shard K of N (K from 0): every N-th cell.
        #[arg(long, conflicts_with = "shards")]
        shard: Option<Shard>,
        /// Shard count, with K taken from JOB_COMPLETION_INDEX
        /// (Kubernetes Indexed Jobs) or SLURM_ARRAY_TASK_ID (Slurm).
        #[arg(long)]
        shards: Option<u64>,
        /// List the cells and exit.
        #[arg(long)]
        dry_run: bool,
    },
    /// Run the experiment (its sweep, if any), print the ranked key figures
    /// of its cells, and write its HTML report.
    Replay {
        #[command(flatten)]
        args: RunArgs,
    },
    /// Fit the file's `calibrate.unknowns` to its `calibrate.observed`
    /// figures: a space-filling start, then an optimiser; every candidate
    /// judged on the same seeds. Resumable; writes the evaluations as
    /// Parquet and a calibrated experiment beside the file.
    Calibrate {
        #[command(flatten)]
        args: RunArgs,
        /// Where to write the calibrated experiment (default: beside the
        /// file, `NAME.calibrated.yaml`).
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// Find where the file's trigger tips the system into a storm: per
    /// `boundary.magnitude`, the `boundary.duration` at which the storm
    /// probability over seeds crosses 50 %, with Wilson intervals.
    /// Resumable; writes the points as Parquet and a report.
    Boundary {
        #[command(flatten)]
        args: RunArgs,
    },
    /// Check a file and exit: 0 when it is valid, 2 with its problems (a
    /// syntax or type error stops the check at that file; the values'
    /// checks report every problem found).
    Validate {
        /// The experiment file.
        file: PathBuf,
        #[command(flatten)]
        limits: Limits,
    },
    /// Print the resolved configuration (defaults filled in, presets
    /// expanded) and the policy's static worst cases.
    Explain {
        /// The experiment file.
        file: PathBuf,
        /// Explain this sweep cell (an id the listing prints) instead of
        /// the base configuration.
        #[arg(long)]
        cell: Option<String>,
        #[command(flatten)]
        limits: Limits,
    },
    /// Write DIR/report.html (and DIR/charts/*.svg) from a dataset's
    /// Parquet: charts, narrative and ranked figures, offline.
    Report {
        /// A dataset directory (the --out of run, sweep or replay).
        dir: PathBuf,
        /// Summary column for a sweep's heatmap (default peak_error_rate).
        #[arg(long)]
        kpi: Option<String>,
        /// Swept path across the heatmap (default: the first axis).
        #[arg(long)]
        x: Option<String>,
        /// Swept path up the heatmap (default: the second axis).
        #[arg(long)]
        y: Option<String>,
    },
    /// List bundled experiments and policy presets.
    List {
        /// Where to look for experiments.
        #[arg(long, default_value = "experiments")]
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let flags = Flags {
        quiet: cli.quiet,
        check_invariants: cli.check_invariants,
    };
    let result = match cli.command {
        Command::Run { args, cell } => commands::run(
            &args.file,
            opts(&args, flags),
            args.seed,
            cell,
            &args.limits.get(),
        ),
        Command::Sweep {
            args,
            shard,
            shards,
            dry_run,
        } => {
            let shard = match (shard, shards) {
                (Some(s), _) => Ok(Some(s)),
                (None, Some(n)) if n > 0 => Shard::from_env(n).map_err(Failure::Input).and_then(|s| {
                    s.map(Some).ok_or_else(|| {
                        Failure::Input("--shards needs JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID in the environment".into())
                    })
                }),
                (None, Some(_)) => Err(Failure::Input("--shards must be at least 1".into())),
                (None, None) => Ok(None),
            };
            shard.and_then(|shard| {
                let mut o = opts(&args, flags);
                o.shard = shard;
                commands::sweep(&args.file, o, args.seed, dry_run, &args.limits.get())
            })
        }
        Command::Replay { args } => commands::replay(
            &args.file,
            opts(&args, flags),
            args.seed,
            &args.limits.get(),
        ),
        Command::Calibrate { args, write } => {
            let o = search_opts(&args, flags, "calibrate");
            commands::calibrate(
                &args.file,
                stormsim::calibrate::Options {
                    out: o.out,
                    threads: o.threads,
                    force: o.force,
                    quiet: o.quiet,
                    checks: sim_models::world::Checks {
                        every_event: o.check_invariants,
                    },
                    write,
                    limits: args.limits.get(),
                },
                args.seed,
                &args.limits.get(),
            )
        }
        Command::Boundary { args } => commands::boundary(
            &args.file,
            search_opts(&args, flags, "boundary"),
            args.seed,
            &args.limits.get(),
        ),
        Command::Validate { file, limits } => commands::validate(&file, &limits.get()),
        Command::Explain { file, cell, limits } => {
            commands::explain(&file, &limits.get(), cell.as_deref())
        }
        Command::Report { dir, kpi, x, y } => {
            commands::report(&dir, stormsim::report::ReportOptions { kpi, x, y })
        }
        Command::List { dir } => commands::list(&dir),
    };
    // Every problem starts `error:`, as every warning starts `warning:`.
    let shout = |message: &str| {
        if message.starts_with("error:") {
            eprintln!("{message}");
        } else {
            eprintln!("error: {message}");
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(message)) => {
            shout(&message);
            ExitCode::from(2)
        }
        Err(Failure::Run(message)) => {
            shout(&message);
            ExitCode::from(1)
        }
    }
}

/// The global flags a run takes.
#[derive(Clone, Copy)]
struct Flags {
    quiet: bool,
    check_invariants: bool,
}

/// A search's options: its default folder is `out/<file name>-<command>`,
/// beside the file's run and sweep datasets.
fn search_opts(args: &RunArgs, flags: Flags, command: &str) -> stormsim::runner::RunOptions {
    let mut o = opts(args, flags);
    if o.default_out {
        // `x.calibrate.yaml` searches into out/x-calibrate, not
        // out/x.calibrate-calibrate.
        let name = o.out.file_name().unwrap_or_default().to_string_lossy();
        let stem = name.strip_suffix(&format!(".{command}")).unwrap_or(&name);
        let name = format!("{stem}-{command}");
        o.out.set_file_name(name);
    }
    o
}

fn opts(args: &RunArgs, flags: Flags) -> stormsim::runner::RunOptions {
    let default_out = args.out.is_none();
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .file
            .file_stem()
            .map_or("experiment".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from("out").join(stem)
    });
    stormsim::runner::RunOptions {
        out,
        threads: args.threads,
        quiet: flags.quiet,
        force: args.force,
        check_invariants: flags.check_invariants,
        default_out,
        ..Default::default()
    }
}
