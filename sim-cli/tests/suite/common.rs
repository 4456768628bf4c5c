//! Helpers the CLI test binaries share.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rayon::prelude::*;
use sim_models::recorder::BucketRow;

/// Writes, in a fresh folder `name` under the test's temporary folder, an
/// experiment that extends the bundled `bundled` with `body`: the folder
/// and the file.
pub fn extending(name: &str, bundled: &str, body: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("experiment.yaml");
    let base = root().join(bundled);
    std::fs::write(&file, format!("extends: {}\n{body}", base.display())).unwrap();
    (dir, file)
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `stormsim` binary as the tests run it: with every invariant
/// checked after every event (`--check-invariants`).
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stormsim"));
    c.env("STORMSIM_CHECK_INVARIANTS", "true");
    c
}

/// Runs `stormsim ARGS` from the repository root.
pub fn stormsim(args: &[&str]) -> Output {
    command()
        .args(args)
        .current_dir(root())
        .output()
        .expect("stormsim runs")
}

/// Runs `stormsim ARGS` and insists it succeeds.
pub fn stormsim_ok(args: &[&str]) {
    let o = stormsim(args);
    assert!(
        o.status.success(),
        "stormsim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every result file under `dir` (not the folder's locks in `.stormsim`),
/// by relative path, with its bytes.
pub fn result_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with(".stormsim") {
                    stack.push(p);
                }
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Runs `world` in process (no dataset) and judges it by `exp`'s
/// recovery settings, as `stormsim run` does: its key figures and its
/// bucket rows.
pub fn run_and_judge(
    exp: &stormsim::load::Experiment,
    world: &sim_models::config::WorldConfig,
) -> (sim_models::kpi::Kpis, Vec<sim_models::recorder::BucketRow>) {
    use sim_models::kpi::{kpi_rows, kpis};
    let out = sim_models::world::run(world, Vec::new()).expect("the world runs");
    let k = kpis(
        &kpi_rows(&out.sink),
        &out.totals,
        &out.steps,
        &exp.outputs.recovery,
        world.clock.window,
    );
    (k, out.sink)
}

/// Every cell of the bundled `file` on each of `seeds`: the cell's name,
/// the seed, its key figures and its bucket rows.
pub fn replay(
    file: &str,
    seeds: &[u64],
) -> Vec<(String, u64, sim_models::kpi::Kpis, Vec<BucketRow>)> {
    let path = root().join(file);
    let exp = stormsim::load::load(&path, &stormsim::load::InputLimits::default())
        .expect("the experiment loads");
    let cells = stormsim::sweep::cells(&exp).expect("cells");
    cells
        .par_iter()
        .flat_map(|cell| seeds.par_iter().map(move |&seed| (cell, seed)))
        .map(|(cell, seed)| {
            let mut world = stormsim::sweep::cell_world(&exp, cell).expect("cell world");
            world.seed = seed;
            let (k, rows) = run_and_judge(&exp, &world);
            (cell.name(), seed, k, rows)
        })
        .collect()
}

/// Successes ÷ requests finished in the last `n` buckets.
pub fn tail_success(rows: &[BucketRow], n: usize) -> f64 {
    let (ok, all) = rows[rows.len() - n..]
        .iter()
        .fold((0u64, 0u64), |(ok, all), r| {
            (
                ok + r.outcome(sim_models::outcome::Reason::Success),
                all + r.finished(),
            )
        });
    ok as f64 / all.max(1) as f64
}

/// Generated inputs per property (`bad_input.rs`) and random graphs
/// (`random_graphs.rs`): 300 in the test suite; set `STORMSIM_FUZZ_CASES`
/// for a long fuzz run (`STORMSIM_FUZZ_CASES=100000 cargo test -p sim-cli
/// --test suite never_panic`).
pub fn fuzz_cases() -> u32 {
    std::env::var("STORMSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// The first seed of the random graphs (`random_graphs.rs`): 1 in the
/// test suite; set `STORMSIM_FUZZ_FIRST` to go on past the seeds a long
/// run has already drawn (`STORMSIM_FUZZ_FIRST=6001
/// STORMSIM_FUZZ_CASES=10000`).
pub fn fuzz_first_seed() -> u64 {
    std::env::var("STORMSIM_FUZZ_FIRST")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}
