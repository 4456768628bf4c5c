//! The dataset as Python sees it: polars, pandas/pyarrow and DuckDB each
//! read every table of a sweep as one table, and agree
//! (`notebooks/check_dataset.py`).
//!
//! The Python used is `$STORMSIM_PYTHON` when set (CI sets it); otherwise
//! this test makes a virtual environment under the build directory and
//! installs `notebooks/requirements.txt` into it, once.

use crate::common::{root, stormsim_ok};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python with the notebooks' requirements (and a `python3` kernel).
pub fn python() -> PathBuf {
    static READY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = READY.lock().unwrap_or_else(|e| e.into_inner());
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
        let ok = Command::new(&py)
            .args([
                "-m",
                "ipykernel",
                "install",
                "--sys-prefix",
                "--name",
                "python3",
            ])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "installing the python3 kernel failed");
        std::fs::write(&marker, wanted).unwrap();
    }
    py
}

/// The output of a finished Python run, which must have succeeded.
fn succeeded(o: std::process::Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
    text
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
    stormsim_ok(&[
        "sweep",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let o = Command::new(python())
        .arg(root().join("notebooks/check_dataset.py"))
        .arg(&out)
        .output()
        .unwrap();
    let text = succeeded(o);
    for table in stormsim::output::TABLES {
        assert!(text.contains(&format!("{table}: ")), "{text}");
    }
}

#[test]
fn every_notebook_executes_headless_on_bundled_experiments() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("notebook-data");
    let _ = std::fs::remove_dir_all(&base);
    let (replay, after, sweep) = (base.join("replay"), base.join("after"), base.join("sweep"));
    stormsim_ok(&[
        "run",
        "experiments/incidents/llm-api-1402.yaml",
        "--quiet",
        "--out",
        replay.to_str().unwrap(),
    ]);
    stormsim_ok(&[
        "run",
        "experiments/incidents/llm-api-1402-after.yaml",
        "--quiet",
        "--out",
        after.to_str().unwrap(),
    ]);
    stormsim_ok(&[
        "sweep",
        "experiments/sweeps/retries-x-timeout.yaml",
        "--quiet",
        "--out",
        sweep.to_str().unwrap(),
    ]);
    // The layered order flow and its fix for the service graph's notebook.
    let (graph, graph_after) = (base.join("graph"), base.join("graph-after"));
    for (file, out) in [
        ("experiments/graphs/layered-order-flow.yaml", &graph),
        (
            "experiments/graphs/layered-order-flow-after.yaml",
            &graph_after,
        ),
    ] {
        stormsim_ok(&["run", file, "--quiet", "--out", out.to_str().unwrap()]);
    }
    // A small boundary and a small calibration for the searches' notebook.
    let (edge, fit) = (base.join("boundary"), base.join("calibration"));
    let edge_file = base.join("edge.yaml");
    std::fs::write(
        &edge_file,
        format!(
            "extends: {}\nboundary:\n  magnitude:\n    path: timeline[0].pulse.value\n    values: [5, 10]\n  duration:\n    path: timeline[0].pulse.for\n    from: 100ms\n    to: 2s\n  seeds: 4\n",
            root().join("experiments/boundary/near-capacity.yaml").display()
        ),
    )
    .unwrap();
    let fit_file = base.join("fit.yaml");
    std::fs::write(
        &fit_file,
        format!(
            "extends: {}\ncalibrate:\n  unknowns:\n    - {{ path: upstream.latency.log_normal.median, range: [20ms, 100ms], scale: log }}\n  observed:\n    - {{ figure: e2e_p99_s, range: [0.1, 0.3] }}\n  seeds: 2\n  budget: {{ evaluations: 12 }}\n",
            root().join("experiments/basics/steady.yaml").display()
        ),
    )
    .unwrap();
    stormsim_ok(&[
        "boundary",
        edge_file.to_str().unwrap(),
        "--quiet",
        "--out",
        edge.to_str().unwrap(),
    ]);
    stormsim_ok(&[
        "calibrate",
        fit_file.to_str().unwrap(),
        "--quiet",
        "--out",
        fit.to_str().unwrap(),
    ]);
    let o = Command::new(python())
        .arg(root().join("notebooks/execute.py"))
        .env("STORMSIM_DATA", &replay)
        .env("STORMSIM_AFTER", &after)
        .env(
            "NOTEBOOK_ENV_02_sweep_analysis",
            format!("STORMSIM_DATA={}", sweep.display()),
        )
        .env("STORMSIM_BOUNDARY", &edge)
        .env("STORMSIM_CALIBRATION", &fit)
        .env("STORMSIM_GRAPH", &graph)
        .env("STORMSIM_GRAPH_AFTER", &graph_after)
        .output()
        .unwrap();
    let text = succeeded(o);
    for nb in [
        "01-incident-replay",
        "02-sweep-analysis",
        "03-parquet-schema",
        "04-searches",
        "05-service-graph",
    ] {
        assert!(text.contains(&format!("{nb}: ")), "{text}");
    }
}

/// The bench's profile by part (`sim-cli/benches/speed/parts.py`, the
/// table of the bench README's "What is left, by where the instructions
/// go") charges a run's instructions to the world's parts: M/M/8 run
/// under callgrind for 20 simulated seconds less the same world for 1,
/// per request, with each part's three heaviest source lines. A
/// callgrind format or an `addr2line` output the script misreads puts
/// everything in "the rest", and a part whose sources moved loses its
/// share. Needs valgrind (CI installs it); skipped, and
/// says so, without it (or without binutils' `addr2line` and `nm`).
#[test]
fn the_profile_by_part_charges_instructions_to_the_parts() {
    for tool in ["valgrind", "addr2line", "nm"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!(
                "SKIPPED: no {tool} on this machine (apt-get install valgrind binutils); CI runs this check"
            );
            return;
        }
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile-by-part");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let world = std::fs::read_to_string(root().join("sim-cli/benches/worlds/mmc-8.yaml")).unwrap();
    let bin = env!("CARGO_BIN_EXE_stormsim");
    for (name, secs) in [("run", 20), ("start", 1)] {
        let yaml = world.replace("duration: 1389s", &format!("duration: {secs}s"));
        assert_ne!(yaml, world, "mmc-8.yaml sets clock.duration to 1389s");
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(&file, yaml).unwrap();
        let o = Command::new("valgrind")
            .args(["--tool=callgrind", "--dump-instr=yes"])
            .arg(format!(
                "--callgrind-out-file={}",
                dir.join(format!("{name}.cg")).display()
            ))
            .args([bin, "run", "--quiet", "--out"])
            .arg(dir.join(name))
            .arg(&file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // 720 requests a second for the 19 s between the runs.
    let o = Command::new(python())
        .arg(root().join("sim-cli/benches/speed/parts.py"))
        .arg(bin)
        .arg(dir.join("run.cg"))
        .arg("--minus")
        .arg(dir.join("start.cg"))
        .args(["--per", "13680", "--lines", "3"])
        .output()
        .unwrap();
    let text = succeeded(o);
    let share = |part: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.contains(part))
            .unwrap_or_else(|| panic!("no line for {part}:\n{text}"));
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields[1].parse().unwrap()
    };
    let per_request: f64 = text
        .lines()
        .find(|l| l.ends_with("total"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no total:\n{text}"));
    // About 4,600 in release, 6,400 in the test profile.
    assert!(
        (2_000.0..20_000.0).contains(&per_request),
        "{per_request} instructions per request:\n{text}"
    );
    assert!(share("the rest") < 10.0, "{text}");
    for part in [
        "routing:",
        "engine: event loop",
        "engine: the heap",
        "records:",
        "figures:",
        "client:",
        "service:",
        "dependency:",
        "draws:",
        "load:",
    ] {
        assert!(share(part) >= 1.0, "{part}:\n{text}");
    }
    // `--lines 3`: each part's heaviest lines follow it, in its sources.
    let lines = text.lines().collect::<Vec<_>>();
    let at = lines.iter().position(|l| l.contains("routing:")).unwrap();
    for line in &lines[at + 1..at + 4] {
        assert!(
            line.contains("sim-models/src/world.rs:")
                || line.contains("sim-models/src/context.rs:"),
            "{line} is not the routing's:\n{text}"
        );
    }
}
