//! The dataset end to end through the `stormsim` binary: byte-identical
//! across thread counts and shards, resumable after a kill, failures exit
//! 1 with a command that reproduces them.

mod common;

use common::{root, stormsim};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_stormsim");

fn sweep_file() -> PathBuf {
    root().join("experiments/sweeps/retries-x-timeout.yaml")
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("dataset-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every file under `dir`, by relative path, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                // The folder's locks, not results.
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

fn sweep_into(out: &Path, extra: &[&str]) {
    let file = sweep_file();
    let mut args = vec![
        "sweep",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = stormsim(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn sweeps_are_byte_identical_across_threads_and_shards() {
    let one = scratch("threads-1");
    let two = scratch("threads-2");
    let sharded = scratch("shards-3");
    sweep_into(&one, &["--threads", "1"]);
    sweep_into(&two, &["--threads", "2"]);
    for k in 0..3 {
        sweep_into(&sharded, &["--threads", "1", "--shard", &format!("{k}/3")]);
    }
    let (a, b, c) = (files(&one), files(&two), files(&sharded));
    // 16 cells × (summary, timeseries, pod_groups, events) + the manifest.
    assert_eq!(a.len(), 16 * 4 + 1, "{:?}", a.keys().collect::<Vec<_>>());
    assert!(a == b, "--threads 1 and --threads 2 differ");
    assert!(a == c, "three shards merged differ from one run");
}

#[test]
fn an_interrupted_sweep_resumes_to_the_same_dataset() {
    let whole = scratch("uninterrupted");
    sweep_into(&whole, &["--threads", "1"]);
    let resumed = scratch("interrupted");
    let mut child = Command::new(BIN)
        .args([
            "sweep",
            sweep_file().to_str().unwrap(),
            "--quiet",
            "--threads",
            "1",
            "--out",
            resumed.to_str().unwrap(),
        ])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once a few cells are complete (or give up waiting and kill
    // it anyway: the point is an interruption mid-way).
    let summaries = resumed.join("summary");
    for _ in 0..600 {
        let done = std::fs::read_dir(&summaries)
            .map(|d| d.count())
            .unwrap_or(0);
        if done >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = files(&resumed)
        .keys()
        .filter(|k| k.starts_with("summary/") && k.ends_with("/part-0.parquet"))
        .count();
    assert!(
        partial < 16,
        "the sweep finished before it could be interrupted"
    );
    // A half-written file never has a final name: only temporaries (which
    // the next run removes) can be incomplete.
    assert!(
        files(&resumed)
            .keys()
            .all(|k| k.ends_with("/part-0.parquet") || k.contains(".tmp~") || k == "manifest.json")
    );
    let o = stormsim(&[
        "sweep",
        sweep_file().to_str().unwrap(),
        "--quiet",
        "--out",
        resumed.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("{} already complete", partial)),
        "{text}"
    );
    assert!(files(&whole) == files(&resumed), "resumed dataset differs");
}

#[test]
fn a_failed_run_exits_1_and_says_how_to_reproduce_it() {
    let dir = scratch("failing");
    let file = dir.join("tiny-limit.yaml");
    // Within the up-front estimate (2 events a request), over the real
    // count (every request retries three times).
    std::fs::write(
        &file,
        "seed: 99\nclock: { duration: 10s }\nload: { rate: 100 }\nupstream: { errors: { http_500: 1.0 } }\nclient: { retry: { max_retries: 3 } }\nlimits: { max_events: 3000 }\n",
    )
    .unwrap();
    let o = stormsim(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("max_events")
            && err.contains("most events were")
            && err.contains(&format!(
                "reproduce with: stormsim run {} --seed 99",
                file.display()
            )),
        "{err}"
    );
}

#[test]
fn bad_input_exits_2_and_an_output_directory_is_not_mixed_up() {
    let dir = scratch("bad");
    let file = dir.join("bad.yaml");
    std::fs::write(&file, "clock: { duration: 10 }\n").unwrap();
    let o = stormsim(&["validate", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.yaml:1:20: clock.duration"));
    // Two different experiments into one directory: refused without --force.
    let out = dir.join("out");
    let a = dir.join("a.yaml");
    let b = dir.join("b.yaml");
    std::fs::write(&a, "clock: { duration: 5s }\n").unwrap();
    std::fs::write(&b, "clock: { duration: 6s }\n").unwrap();
    assert!(
        stormsim(&[
            "run",
            a.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap()
        ])
        .status
        .success()
    );
    let o = stormsim(&[
        "run",
        b.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("different experiment"));
}

#[test]
fn every_bundled_experiment_validates() {
    let mut stack = vec![root().join("experiments")];
    let mut n = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                // The folder's locks, not results.
                if !p.ends_with(".stormsim") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "yaml") {
                let o = stormsim(&["validate", p.to_str().unwrap()]);
                assert!(
                    o.status.success(),
                    "{}: {}",
                    p.display(),
                    String::from_utf8_lossy(&o.stderr)
                );
                n += 1;
            }
        }
    }
    assert!(n >= 10);
}

/// `seeds: shared` gives every combination the same seed per replication
/// (replication 0 the experiment's own), while ids stay distinct; the
/// default gives every cell its own.
#[test]
fn shared_seeds_are_common_random_numbers() {
    use stormsim::load::{InputLimits, load};
    use stormsim::sweep::cells;
    let dir = scratch("shared-seeds");
    let write = |name: &str, seeds: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "seed: 42\nsweep:\n  replications: 2\n{seeds}  axes:\n    - {{ path: load.rate, values: [10, 20, 30] }}\n"
            ),
        )
        .unwrap();
        cells(&load(&path, &InputLimits::default()).unwrap()).unwrap()
    };
    let shared = write("shared.yaml", "  seeds: shared\n");
    let own = write("own.yaml", "");
    for c in &shared {
        let first = shared
            .iter()
            .find(|d| d.replication == c.replication)
            .unwrap();
        assert_eq!(c.seed, first.seed);
    }
    assert!(
        shared
            .iter()
            .filter(|c| c.replication == 0)
            .all(|c| c.seed == 42)
    );
    assert_ne!(shared[0].seed, shared[1].seed, "replications differ");
    let ids: std::collections::BTreeSet<_> = shared.iter().map(|c| &c.id).collect();
    assert_eq!(ids.len(), shared.len());
    let seeds: std::collections::BTreeSet<_> = own.iter().map(|c| c.seed).collect();
    assert_eq!(seeds.len(), own.len(), "per-cell seeds are distinct");
    // Ids do not depend on the seed mode: a dataset can be resumed either way.
    assert_eq!(
        shared.iter().map(|c| &c.id).collect::<Vec<_>>(),
        own.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
}
