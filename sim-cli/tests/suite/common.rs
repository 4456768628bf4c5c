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
