//! Names this build by what shapes its results: the sources of the engine,
//! the world and the command line (this script too), the workspace's
//! manifests and the locked dependency versions (a new `rand_distr` can
//! change a draw). The name goes into every dataset's manifest, so that a
//! folder written by another build is not resumed as if its cells were
//! this build's.
//!
//! The hash is FNV-1a over each file's path relative to the workspace and
//! its bytes, in sorted order: the same sources give the same name on any
//! machine and in any folder. A change to a comment changes it too; it
//! names sources, not behaviour, and errs on the side of running again.

use std::path::{Path, PathBuf};

fn main() {
    let crate_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = crate_dir
        .parent()
        .expect("sim-cli sits in the workspace")
        .to_path_buf();
    let mut files = Vec::new();
    for dir in ["sim-core/src", "sim-models/src", "sim-cli/src"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
        collect(&root.join(dir), &mut files);
    }
    for file in [
        "sim-cli/build.rs",
        "Cargo.toml",
        "Cargo.lock",
        "sim-core/Cargo.toml",
        "sim-models/Cargo.toml",
        "sim-cli/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
        files.push(root.join(file));
    }
    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap_or(&p);
            let name = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            (name, p)
        })
        .collect();
    named.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, path) in &named {
        // A file that cannot be read (a lock file absent from a packaged
        // crate) is named as absent: the hash still says which.
        let bytes = std::fs::read(path).unwrap_or_default();
        eat(name.as_bytes());
        eat(&[0]);
        eat(&(bytes.len() as u64).to_le_bytes());
        eat(&bytes);
    }
    println!("cargo:rustc-env=STORMSIM_BUILD={h:016x}");
}

/// Every file below `dir`.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}
