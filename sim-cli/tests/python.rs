//! The dataset as Python sees it: polars, pandas/pyarrow and DuckDB each
//! read every table of a sweep as one table, and agree
//! (`notebooks/check_dataset.py`).
//!
//! The Python used is `$STORMSIM_PYTHON` when set (CI sets it); otherwise
//! this test makes a virtual environment under the build directory and
//! installs `notebooks/requirements.txt` into it, once.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A Python with the notebooks' requirements.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("STORMSIM_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("stormsim-venv");
    let py = venv.join("bin").join("python");
    let requirements = root().join("notebooks/requirements.txt");
    let marker = venv.join("requirements.installed");
    let wanted = std::fs::read_to_string(&requirements).unwrap();
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "python3 -m venv failed: install Python 3 with venv, or set STORMSIM_PYTHON"
        );
        let ok = Command::new(&py)
            .args(["-m", "pip", "install", "-q", "-r"])
            .arg(&requirements)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "pip install -r notebooks/requirements.txt failed");
        std::fs::write(&marker, wanted).unwrap();
    }
    py
}

#[test]
fn polars_pandas_and_duckdb_read_each_table_as_one() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-dataset");
    let _ = std::fs::remove_dir_all(&out);
    let file = out.with_extension("yaml");
    std::fs::write(
        &file,
        "name: python check\nclock: { duration: 20s }\nload: { rate: 50 }\n\
         client: { retry: { max_retries: 1 } }\nupstream: { errors: { http_500: 0.1 } }\n\
         timeline:\n  - at: 5s\n    set: { param: upstream.latency_scale, value: 2 }\n\
         outputs: { attempts: 0.5 }\n\
         sweep:\n  replications: 2\n  axes:\n    - { path: client.attempt_timeout, values: [100ms, 1s] }\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_stormsim"))
        .args([
            "sweep",
            file.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(python())
        .arg(root().join("notebooks/check_dataset.py"))
        .arg(&out)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
    for table in ["summary", "timeseries", "events", "attempts"] {
        assert!(text.contains(&format!("{table}: ")), "{text}");
    }
}
