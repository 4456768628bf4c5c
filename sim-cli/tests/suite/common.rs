//! Helpers the CLI test binaries share.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
