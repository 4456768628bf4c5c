//! Every bundled experiment against its golden summary
//! (`experiments/golden/`): a change in figures or ranking fails here with
//! the changed lines, and shows in review as a diff. Regenerate with
//! `STORMSIM_BLESS=1 cargo test -p sim-cli --test suite golden`.

use crate::common;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use stormsim::commands::read_summaries;
use stormsim::load::{InputLimits, load};
use stormsim::runner::{RunOptions, run_cells};

/// The bundled experiments that run (bases that others extend run too).
fn bundled() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![common::root().join("experiments")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

fn golden_path(file: &Path) -> PathBuf {
    let root = common::root().join("experiments");
    let rel = file.strip_prefix(&root).unwrap().with_extension("md");
    root.join("golden").join(rel)
}

fn summary_of(file: &Path) -> String {
    let exp = load(file, &InputLimits::default()).unwrap_or_else(|e| panic!("{e}"));
    let rel = file.strip_prefix(common::root()).unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("golden")
        .join(rel.with_extension(""));
    let _ = std::fs::remove_dir_all(&out);
    let opts = RunOptions {
        out: out.clone(),
        threads: Some(1),
        quiet: true,
        ..RunOptions::default()
    };
    let report = run_cells(&exp, &opts).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(
        report.failures.is_empty(),
        "{}: {:?}",
        file.display(),
        report.failures
    );
    let table = read_summaries(&exp, &out).unwrap();
    stormsim::golden::summary(&exp, &table).unwrap()
}

#[test]
fn every_bundled_experiment_matches_its_golden_summary() {
    let bless = std::env::var_os("STORMSIM_BLESS").is_some();
    let changed: Vec<String> = bundled()
        .par_iter()
        .filter_map(|file| {
            let got = summary_of(file);
            let path = golden_path(file);
            let want = std::fs::read_to_string(&path).unwrap_or_default();
            if got == want {
                return None;
            }
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &got).unwrap();
                return None;
            }
            let mut diff = format!("{}:\n", path.display());
            let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
            for i in 0..w.len().max(g.len()) {
                match (w.get(i), g.get(i)) {
                    (Some(a), Some(b)) if a == b => {}
                    (a, b) => {
                        if let Some(a) = a {
                            diff.push_str(&format!("-{a}\n"));
                        }
                        if let Some(b) = b {
                            diff.push_str(&format!("+{b}\n"));
                        }
                    }
                }
            }
            Some(diff)
        })
        .collect();
    assert!(
        changed.is_empty(),
        "figures changed (regenerate with STORMSIM_BLESS=1 cargo test -p sim-cli --test suite golden if meant):\n{}",
        changed.join("\n")
    );
}
