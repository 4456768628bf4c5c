//! Sweep throughput: the 64-cell `experiments/sweeps/bench-64.yaml`
//! (10 simulated minutes each), on 1 and 2 threads, dataset written; and
//! one cell alone, which is the time to the first result; and incident A
//! against its 15 candidate policies.
//!
//! ```text
//! cargo bench -p sim-cli --bench sweep
//! ```

use std::path::{Path, PathBuf};

use divan::{Bencher, counter::ItemsCount};
use stormsim::load::{InputLimits, load};
use stormsim::runner::{RunOptions, run_cells};

fn main() {
    divan::main();
}

fn experiment() -> stormsim::load::Experiment {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/sweeps/bench-64.yaml");
    load(&file, &InputLimits::default()).expect("valid benchmark experiment")
}

fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormsim-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[divan::bench(args = [1, 2], sample_count = 3)]
fn sweep_64_cells(bencher: Bencher, threads: usize) {
    let exp = experiment();
    bencher.counter(ItemsCount::new(64usize)).bench_local(|| {
        let out = fresh_dir(&format!("t{threads}"));
        let opts = RunOptions {
            out: out.clone(),
            threads: Some(threads),
            quiet: true,
            ..RunOptions::default()
        };
        let report = run_cells(&exp, &opts).expect("sweep runs");
        assert_eq!(report.ran, 64);
        let _ = std::fs::remove_dir_all(&out);
    });
}

/// One cell: how long until the first result of a sweep lands on disk.
#[divan::bench(sample_count = 5)]
fn first_result(bencher: Bencher) {
    let exp = experiment();
    let first = stormsim::sweep::cells(&exp).expect("cells")[0].id.clone();
    bencher.bench_local(|| {
        let out = fresh_dir("first");
        let opts = RunOptions {
            out: out.clone(),
            threads: Some(1),
            quiet: true,
            only_cell: Some(first.clone()),
            ..RunOptions::default()
        };
        let report = run_cells(&exp, &opts).expect("cell runs");
        assert_eq!(report.ran, 1);
        let _ = std::fs::remove_dir_all(&out);
    });
}

/// Incident A against every candidate policy (15 cells of 10 simulated
/// minutes, on 2 threads, dataset written): the sweep `stormsim
/// replay` runs before it ranks them and writes the report.
#[divan::bench(sample_count = 3)]
fn replay_alternatives(bencher: Bencher) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../experiments/incidents/llm-api-1402-alternatives.yaml");
    let exp = load(&file, &InputLimits::default()).expect("valid replay");
    bencher.counter(ItemsCount::new(15usize)).bench_local(|| {
        let out = fresh_dir("alternatives");
        let opts = RunOptions {
            out: out.clone(),
            threads: Some(2),
            quiet: true,
            ..RunOptions::default()
        };
        let report = run_cells(&exp, &opts).expect("replay runs");
        assert_eq!(report.ran, 15);
        let _ = std::fs::remove_dir_all(&out);
    });
}
