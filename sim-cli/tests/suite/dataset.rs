//! The dataset end to end through the `stormsim` binary: byte-identical
//! across thread counts and shards, resumable after a kill, failures exit
//! 1 with a command that reproduces them.

use crate::common;

use crate::common::{root, stormsim, stormsim_ok};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
    common::result_files(dir)
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
    // 16 cells × (summary, timeseries, pod_groups, events, nodes) + the
    // manifest.
    assert_eq!(a.len(), 16 * 5 + 1, "{:?}", a.keys().collect::<Vec<_>>());
    assert!(a == b, "--threads 1 and --threads 2 differ");
    assert!(a == c, "three shards merged differ from one run");
}

#[test]
fn an_interrupted_sweep_resumes_to_the_same_dataset() {
    let whole = scratch("uninterrupted");
    sweep_into(&whole, &["--threads", "1"]);
    let resumed = scratch("interrupted");
    let mut child = common::command()
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

/// The trained build (`sim-cli/build-pgo.sh`) learns from the commands
/// `sim-cli/pgo-training.txt` lists: each must name a command the
/// script runs that way and a file that validates, so a renamed world
/// or experiment stops the test suite rather than the training. The
/// script itself must parse (`bash -n`, where bash is found).
#[test]
fn the_trained_build_trains_on_files_that_validate() {
    let list = std::fs::read_to_string(root().join("sim-cli/pgo-training.txt")).unwrap();
    let mut n = 0;
    for line in list.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (command, file) = line.split_once(' ').expect("a command and a file");
        assert!(matches!(command, "run" | "replay"), "{line}");
        let o = stormsim(&["validate", file.trim()]);
        assert!(
            o.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        n += 1;
    }
    assert!(n >= 4, "the bench worlds at least");
    match std::process::Command::new("bash")
        .arg("-n")
        .arg(root().join("sim-cli/build-pgo.sh"))
        .output()
    {
        Ok(o) => assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => eprintln!("bash not found ({e}): build-pgo.sh not parsed"),
    }
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

/// The `summary` row count, `offered` and the timeseries rows of a dataset,
/// read back with polars.
fn read_back(out: &Path) -> (usize, u64, Vec<f64>) {
    use polars::prelude::*;
    let read = |table: &str| {
        let mut frames = Vec::new();
        for cell in std::fs::read_dir(out.join(table)).unwrap().flatten() {
            let f = std::fs::File::open(cell.path().join("part-0.parquet")).unwrap();
            frames.push(ParquetReader::new(f).finish().unwrap());
        }
        frames
    };
    let summaries = read("summary");
    let offered = summaries
        .iter()
        .map(|s| s.column("offered").unwrap().u64().unwrap().get(0).unwrap())
        .sum();
    let spans = read("timeseries")
        .iter()
        .flat_map(|t| {
            let c = t.column("span_s").unwrap().f64().unwrap();
            (0..c.len()).filter_map(|i| c.get(i)).collect::<Vec<_>>()
        })
        .collect();
    (summaries.len(), offered, spans)
}

#[test]
fn a_bucket_longer_than_the_run_is_flushed_with_its_true_span() {
    let dir = scratch("long-bucket");
    let file = dir.join("long-bucket.yaml");
    std::fs::write(
        &file,
        "clock: { duration: 10s, bucket: 11s }\nload: { rate: 50 }\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = stormsim(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (runs, offered, spans) = read_back(&out);
    assert_eq!(runs, 1);
    // 50 requests/s for 10 s: about 500 (Poisson), never 0.
    assert!((400..=600).contains(&offered), "offered {offered}");
    assert_eq!(spans, vec![10.0], "one partial bucket spanning the run");
}

#[test]
fn a_plain_run_and_a_sweep_of_one_file_never_share_a_dataset() {
    let dir = scratch("run-then-sweep");
    let file = root().join("experiments/incidents/llm-api-1402.yaml");
    let file = file.to_str().unwrap();
    // The defaults: a plain run of a file with a sweep goes beside the
    // sweep's folder, so run then replay both succeed and read back.
    let o = common::command()
        .args(["run", file, "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = common::command()
        .args(["replay", file, "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read_back(&dir.join("out/llm-api-1402-base")).0, 1);
    assert_eq!(read_back(&dir.join("out/llm-api-1402")).0, 2);
    let o = common::command()
        .args(["report", "out/llm-api-1402-base"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // One folder named for both: the second command refuses, exit 2,
    // naming the folder and what it holds; the dataset still reads.
    let out = dir.join("shared");
    let out = out.to_str().unwrap();
    stormsim_ok(&["sweep", file, "--quiet", "--out", out]);
    let o = stormsim(&["run", file, "--quiet", "--out", out]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(out) && err.contains("the cells of this experiment's sweep"),
        "{err}"
    );
    stormsim_ok(&["report", out]);
    assert_eq!(read_back(Path::new(out)).0, 2);
}

/// A folder written by another build of stormsim (its manifest names
/// another build, or none) is not resumed: its cells' figures may differ
/// from this build's, and mixing them would make one table of two models.
/// The command refuses, exit 2, naming both builds and `--force`; the
/// folder still reports; `--force` runs every cell again with this build.
#[test]
fn a_dataset_written_by_another_build_is_not_resumed() {
    let (dir, file) = common::extending(
        "dataset-tests/another-build",
        "experiments/graphs/fan-out.yaml",
        "clock: { duration: 10s }\ntimeline: []\n",
    );
    let (file, out) = (file.to_str().unwrap(), dir.join("out"));
    let out_s = out.to_str().unwrap();
    stormsim_ok(&["sweep", file, "--quiet", "--out", out_s]);
    let manifest = out.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let ours = format!("\"build\": \"{}\"", stormsim::runner::BUILD);
    assert!(text.contains(&ours), "{text}");
    // `--version` names it.
    let o = stormsim(&["--version"]);
    let version = String::from_utf8_lossy(&o.stdout);
    assert!(
        version.contains(&format!("(build {})", stormsim::runner::BUILD)),
        "{version}"
    );
    // The sweep stopped half-way under another build: one cell's files
    // gone, the manifest naming that build (or, older, none).
    let summary = out.join("summary");
    let cell = std::fs::read_dir(&summary)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    std::fs::remove_dir_all(&cell).unwrap();
    for (theirs, named) in [
        (
            text.replace(&ours, "\"build\": \"0123456789abcdef\""),
            "0123456789abcdef",
        ),
        (text.replace(&format!("{ours},"), ""), "unnamed"),
    ] {
        assert!(!theirs.contains(stormsim::runner::BUILD), "{theirs}");
        std::fs::write(&manifest, &theirs).unwrap();
        let o = stormsim(&["sweep", file, "--quiet", "--out", out_s]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(out_s)
                && err.contains(&format!("another build of stormsim (build {named}"))
                && err.contains(stormsim::runner::BUILD)
                && err.contains("--force"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&manifest).unwrap(), theirs);
        assert_eq!(read_back(&out).0, 1, "the other build's cell is kept");
    }
    // Its results still read, the report naming both builds.
    stormsim_ok(&["report", out_s]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let both = format!(
        "written by a stormsim from before builds were named, reported by stormsim {} (build {})",
        env!("CARGO_PKG_VERSION"),
        stormsim::runner::BUILD
    );
    assert!(html.contains(&both), "{}", &html[..html.len().min(2000)]);
    stormsim_ok(&["sweep", file, "--quiet", "--out", out_s, "--force"]);
    assert!(std::fs::read_to_string(&manifest).unwrap().contains(&ours));
    assert_eq!(read_back(&out).0, 2);
    stormsim_ok(&["report", out_s]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains(&format!(
            "run(s); stormsim {} (build {})",
            env!("CARGO_PKG_VERSION"),
            stormsim::runner::BUILD
        )),
        "{}",
        &html[..html.len().min(2000)]
    );
}

/// Starts `stormsim ARGS` without waiting.
fn spawn(args: &[&str]) -> std::process::Child {
    common::command()
        .args(args)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn concurrent_shards_into_one_folder_make_the_unsharded_dataset() {
    // The documented Indexed Job / Slurm array recipe: N shards started at
    // once into one folder. Each trial must lose nothing.
    let file = root().join("experiments/sweeps/bench-64.yaml");
    let file = file.to_str().unwrap();
    let whole = scratch("shards-whole");
    stormsim_ok(&["sweep", file, "--quiet", "--out", whole.to_str().unwrap()]);
    let expected = files(&whole);
    assert_eq!(expected.len(), 64 * 5 + 1);
    for trial in 0..3 {
        let out = scratch(&format!("shards-concurrent-{trial}"));
        let out_s = out.to_str().unwrap().to_string();
        let children: Vec<_> = (0..8)
            .map(|k| {
                let shard = format!("{k}/8");
                spawn(&[
                    "sweep",
                    file,
                    "--quiet",
                    "--threads",
                    "1",
                    "--shard",
                    &shard,
                    "--out",
                    &out_s,
                ])
            })
            .collect();
        for child in children {
            let o = child.wait_with_output().unwrap();
            assert!(
                o.status.success(),
                "trial {trial}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let got = files(&out);
        let missing: Vec<_> = expected.keys().filter(|k| !got.contains_key(*k)).collect();
        assert!(missing.is_empty(), "trial {trial} lost {missing:?}");
        assert!(
            got == expected,
            "trial {trial}: the union differs from the unsharded dataset"
        );
    }
}

#[test]
fn of_two_experiments_started_at_once_into_one_folder_exactly_one_wins() {
    let dir = scratch("two-at-once");
    let a = dir.join("a.yaml");
    let b = dir.join("b.yaml");
    std::fs::write(&a, "clock: { duration: 20s }\nload: { rate: 200 }\n").unwrap();
    std::fs::write(&b, "clock: { duration: 21s }\nload: { rate: 200 }\n").unwrap();
    for trial in 0..10 {
        let out = dir.join(format!("out-{trial}"));
        let out = out.to_str().unwrap();
        let ca = spawn(&["run", a.to_str().unwrap(), "--quiet", "--out", out]);
        let cb = spawn(&["run", b.to_str().unwrap(), "--quiet", "--out", out]);
        let (oa, ob) = (
            ca.wait_with_output().unwrap(),
            cb.wait_with_output().unwrap(),
        );
        let codes = [oa.status.code(), ob.status.code()];
        assert!(
            codes == [Some(0), Some(2)] || codes == [Some(2), Some(0)],
            "trial {trial}: exit codes {codes:?}"
        );
        let loser = if codes[0] == Some(2) { &oa } else { &ob };
        let err = String::from_utf8_lossy(&loser.stderr);
        assert!(
            err.contains(out) && err.contains("different experiment"),
            "{err}"
        );
        let manifest = std::fs::read_to_string(Path::new(out).join("manifest.json")).unwrap();
        let winner = if codes[0] == Some(0) {
            "\"a\""
        } else {
            "\"b\""
        };
        assert!(manifest.contains(winner), "{manifest}");
        assert_eq!(read_back(Path::new(out)).0, 1, "one run, not a mix");
    }
}

#[test]
fn a_complete_dataset_in_a_read_only_folder_still_reads_as_complete() {
    let dir = scratch("read-only");
    let file = dir.join("ro.yaml");
    std::fs::write(&file, "clock: { duration: 5s }\n").unwrap();
    let out = dir.join("out");
    let args = [
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    stormsim_ok(&args);
    let before = files(&out);
    // Read-only by a mount would refuse root too; a changed manifest or a
    // new writer's lock would show here as a changed file.
    let o = stormsim(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 already complete"));
    assert!(files(&out) == before, "a complete dataset was rewritten");
    let writers = std::fs::read_dir(out.join(".stormsim/writers"))
        .unwrap()
        .count();
    assert_eq!(writers, 0, "a finished writer left its registration");
    // Truly read-only, where this machine lets the test mount (root): a
    // read-only bind mount of the dataset.
    let ro = dir.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let mount = |args: &[&str]| {
        Command::new("mount")
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let (src, dst) = (out.to_str().unwrap(), ro.to_str().unwrap());
    if mount(&["--bind", src, dst]) {
        let mounted_ro = mount(&["-o", "remount,bind,ro", dst]);
        let o = stormsim(&["run", file.to_str().unwrap(), "--quiet", "--out", dst]);
        let _ = Command::new("umount").arg(dst).output();
        assert!(mounted_ro, "could not remount read-only");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).contains("1 already complete"));
    } else {
        eprintln!("note: cannot bind-mount here; checked that nothing is written instead");
    }
}

#[test]
fn an_output_that_is_not_a_folder_or_holds_a_broken_manifest_is_named() {
    let dir = scratch("odd-out");
    let file = dir.join("x.yaml");
    std::fs::write(&file, "clock: { duration: 5s }\n").unwrap();
    let o = stormsim(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        "/dev/null",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/dev/null is not a directory"), "{err}");
    let out = dir.join("broken");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("manifest.json"), "{ not json").unwrap();
    let o = stormsim(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("manifest.json is not a valid stormsim manifest"),
        "{err}"
    );
    let o = stormsim(&["report", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a valid manifest"), "{err}");
}

#[test]
fn a_summary_damaged_after_it_was_written_makes_its_cell_run_again() {
    let dir = scratch("damaged-summary");
    let file = dir.join("x.yaml");
    std::fs::write(
        &file,
        "clock: { duration: 5s }\nsweep:\n  axes:\n    - path: load.rate\n      values: [10, 20]\n",
    )
    .unwrap();
    let out = dir.join("out");
    let sweep = || {
        stormsim(&[
            "sweep",
            file.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    assert!(sweep().status.success());
    let whole = common::result_files(&out);
    // Truncate one cell's summary, as a copy to a full disk would.
    let summary = whole
        .keys()
        .find(|k| k.starts_with("summary/"))
        .map(|k| out.join(k))
        .unwrap();
    let bytes = std::fs::read(&summary).unwrap();
    std::fs::write(&summary, &bytes[..bytes.len() / 2]).unwrap();
    let o = sweep();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not a whole Parquet file"), "{err}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 run, 1 already complete"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(common::result_files(&out), whole);
}

#[test]
fn list_shows_each_files_resolved_name_and_kind() {
    let o = stormsim(&["list"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let line = |file: &str| {
        text.lines()
            .find(|l| l.contains(file))
            .unwrap_or_else(|| panic!("{file} not listed:\n{text}"))
            .to_string()
    };
    // A name inherited through `extends`, and what the file runs.
    assert!(
        line("llm-api-1402.calibrate.yaml").ends_with("(before the fix) (calibrate)"),
        "{text}"
    );
    assert!(
        line("retries-x-timeout.yaml").ends_with("(sweep, 16 cells)"),
        "{text}"
    );
    assert!(line("near-capacity.yaml").ends_with("(boundary)"), "{text}");
    assert!(
        line("basics/steady.yaml").ends_with("steady service"),
        "{text}"
    );
    // A file that would not run says so.
    let dir = scratch("list");
    std::fs::write(dir.join("bad.yaml"), "load: { rate: -1 }\n").unwrap();
    let o = stormsim(&["list", "--dir", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("(invalid: must be a non-negative rate"),
        "{text}"
    );
}

#[test]
fn a_dataset_is_not_written_inside_another() {
    let dir = scratch("nested-out");
    let file = dir.join("x.yaml");
    std::fs::write(&file, "clock: { duration: 5s }\n").unwrap();
    let outer = dir.join("outer");
    let run = |out: &Path| {
        stormsim(&[
            "run",
            file.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    assert!(run(&outer).status.success());
    let before = common::result_files(&outer);
    // Into one of its tables: refused, the outer dataset untouched.
    let inner = outer.join("summary");
    let o = run(&inner);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is inside the stormsim dataset") && err.contains("outer"),
        "{err}"
    );
    assert_eq!(common::result_files(&outer), before);
    // A folder under some other project's manifest.json is fine.
    let project = dir.join("web-project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("manifest.json"), r#"{ "name": "app" }"#).unwrap();
    assert!(run(&project.join("sim-out")).status.success());
}

/// The peak memory a run reports, in MiB.
fn peak_mib(text: &str) -> u64 {
    let at = text
        .find("peak memory ")
        .expect("the run reports its peak memory")
        + 12;
    text[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn memory_follows_work_in_flight_not_simulated_duration() {
    let dir = scratch("memory");
    let run = |name: &str, text: &str| {
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(&file, text).unwrap();
        let out = dir.join(name);
        let o = stormsim(&[
            "run",
            file.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        peak_mib(&String::from_utf8_lossy(&o.stdout))
    };
    // The same steady world for 10 and for 60 simulated minutes: 0.6 M
    // and 3.6 M requests. What a run keeps per bucket (each bucket's key
    // figures, for the verdict over the whole series, and the Parquet
    // footers' metadata: about 0.3 KiB) grows with the 3,000 buckets more,
    // and so do the bucket rows gathered for the next row group (about
    // 1.2 KiB each, up to 8,192 rows: at most 10 MiB however long the
    // run); nothing grows with the requests (kept, 3 M more would take
    // hundreds of MiB).
    let short = run("ten", "clock: { duration: 10m }\nload: { rate: 1000 }\n");
    let long = run("sixty", "clock: { duration: 60m }\nload: { rate: 1000 }\n");
    let per_bucket_mib = 3_000.0 * (0.5 + 1.2) / 1024.0;
    assert!(
        long as f64 <= 1.05 * short as f64 + per_bucket_mib,
        "60 min took {long} MiB, 10 min {short} MiB"
    );
    // Millisecond buckets at 1 request/s for 1 and 2 minutes (867 MB for
    // 2 minutes when every row was kept): the 60,000 buckets more cost
    // under half a KiB each (1.15 KiB when the bucket tables were written
    // in row groups of 1,024 rows, whose metadata the writer keeps).
    let fine_1m = run(
        "fine-1m",
        "clock: { duration: 1m, bucket: 1ms }\nload: { rate: 1 }\n",
    );
    let fine = run(
        "fine",
        "clock: { duration: 2m, bucket: 1ms }\nload: { rate: 1 }\n",
    );
    assert!(fine < 250, "1 ms buckets took {fine} MiB");
    let per_bucket_kib = (fine as f64 - fine_1m as f64) * 1024.0 / 60_000.0;
    assert!(
        per_bucket_kib < 0.5,
        "{per_bucket_kib:.2} KiB a bucket ({fine_1m} MiB for 1 minute, {fine} MiB for 2)"
    );
}

#[test]
fn labelled_values_name_cells_everywhere_without_changing_their_ids() {
    use polars::prelude::*;
    let dir = scratch("labels");
    let write = |name: &str, values: &str| {
        let f = dir.join(name);
        std::fs::write(
            &f,
            format!(
                "clock: {{ duration: 5s }}\nsweep:\n  axes:\n    - path: client\n      values: {values}\n    - path: client.attempt_timeout\n      range: {{ from: 500ms, to: 1s, step: 250ms }}\n"
            ),
        )
        .unwrap();
        f
    };
    let plain = write(
        "plain.yaml",
        "[{ retry: { max_retries: 3 } }, { retry: { max_retries: 0 } }]",
    );
    let labelled = write(
        "labelled.yaml",
        "[{ label: \"three retries\", value: { retry: { max_retries: 3 } } }, { label: none, value: { retry: { max_retries: 0 } } }]",
    );
    let ids = |f: &Path| {
        let o = stormsim(&["sweep", f.to_str().unwrap(), "--dry-run"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (a, b) = (ids(&plain), ids(&labelled));
    let first = |t: &str| t.lines().map(|l| l[..16].to_string()).collect::<Vec<_>>();
    assert_eq!(first(&a), first(&b), "labels changed cell ids");
    assert_eq!(
        a.lines().count(),
        6,
        "2 clients × 3 timeouts (500ms, 750ms, 1s)"
    );
    assert!(
        b.contains("three retries, client.attempt_timeout = 750ms"),
        "{b}"
    );
    // Unlabelled mappings read as their fields, never as JSON.
    assert!(
        a.contains("client = retry.max_retries=3") && !a.contains('{'),
        "{a}"
    );
    // --quiet: one summary line for the whole sweep.
    let out = dir.join("out");
    let o = stormsim(&[
        "sweep",
        labelled.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
    // The variant column in every table.
    for table in ["summary", "timeseries", "events", "pod_groups"] {
        let mut names = Vec::new();
        for cell in std::fs::read_dir(out.join(table)).unwrap().flatten() {
            let f = std::fs::File::open(cell.path().join("part-0.parquet")).unwrap();
            let df = ParquetReader::new(f).finish().unwrap();
            let c = df.column("variant").unwrap().str().unwrap().clone();
            names.extend((0..c.len()).filter_map(|i| c.get(i).map(String::from)));
        }
        names.sort();
        names.dedup();
        if table == "events" {
            // No timeline, no events: the column is there all the same.
            assert!(names.is_empty());
            continue;
        }
        assert_eq!(names.len(), 6, "{table}: {names:?}");
        assert!(
            names.contains(&"none, client.attempt_timeout = 1s".to_string()),
            "{table}: {names:?}"
        );
    }
}

#[test]
fn explain_shows_a_sweep_its_cells_and_one_cells_configuration() {
    let file = root().join("experiments/incidents/llm-api-1402.yaml");
    let file = file.to_str().unwrap();
    let o = stormsim(&["explain", file]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("# Sweep: 2 cell(s)") && text.contains("client.preset: 2 value(s)"),
        "{text}"
    );
    assert!(
        text.contains("the fix  (client.preset = incident-1402-after)"),
        "{text}"
    );
    assert!(
        text.contains("\nsweep:\n") && text.contains("\noutputs:\n"),
        "{text}"
    );
    let id = text
        .lines()
        .find(|l| l.contains("the fix  ("))
        .and_then(|l| l.trim_start_matches("#").split_whitespace().next())
        .unwrap()
        .to_string();
    let o = stormsim(&["explain", file, "--cell", &id]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cell = String::from_utf8_lossy(&o.stdout);
    assert!(cell.contains(&format!("cell {id} (the fix)")), "{cell}");
    assert_ne!(text, cell, "the cell's configuration is its own");
    // A reader that stops reading ends the command quietly.
    let mut child = common::command()
        .args(["explain", file])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// `stormsim run FILE --out OUT`, which must succeed.
fn run_into(file: &Path, out: &Path) {
    stormsim_ok(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
}

/// Column `name` of `df`'s first row, as a float.
fn f64_at(df: &polars::prelude::DataFrame, name: &str) -> f64 {
    use polars::prelude::*;
    let c = df.column(name).unwrap().cast(&DataType::Float64).unwrap();
    c.f64().unwrap().get(0).unwrap()
}

/// The file of `table` of the one cell in `out`.
fn one_file(out: &Path, table: &str) -> PathBuf {
    let cell = std::fs::read_dir(out.join(table))
        .unwrap()
        .flatten()
        .next()
        .unwrap();
    cell.path().join("part-0.parquet")
}

/// `table` of the one cell in `out`.
fn read_one(out: &Path, table: &str) -> polars::prelude::DataFrame {
    use polars::prelude::*;
    let f = std::fs::File::open(one_file(out, table)).unwrap();
    ParquetReader::new(f).finish().unwrap()
}

/// The cost columns: with `client.cost_per_attempt`, the run's cost is
/// every attempt that ended at that price, the wasted part those that
/// served no answer, and the timeseries adds up to the summary; without
/// it the columns are there and null.
#[test]
fn attempt_costs_add_up_and_are_null_without_a_price() {
    let dir = scratch("cost");
    let file = dir.join("cost.yaml");
    std::fs::write(
        &file,
        "clock: { duration: 60s, bucket: 10s }\nload: { rate: 50 }\nupstream: { errors: { http_503: 0.5 }, latency: { constant: 20ms } }\nclient: { cost_per_attempt: 1500, retry: { max_retries: 2, backoff: { fixed: { delay: 10ms } } } }\n",
    )
    .unwrap();
    let out = dir.join("out");
    run_into(&file, &out);
    let summary = read_one(&out, "summary");
    let total = f64_at(&summary, "cost_total");
    let wasted = f64_at(&summary, "cost_wasted");
    let attempts = f64_at(&summary, "amplification_mean") * f64_at(&summary, "offered");
    assert!(
        (total / 1500.0 - attempts).abs() / attempts < 0.01,
        "{total} for {attempts} attempts"
    );
    // Half of all attempts fail: 1 + 0.5 + 0.25 attempts per request, of
    // which 0.875 fail, so 0.875 / 1.75 = half the cost is wasted.
    assert!((wasted / total - 0.5).abs() < 0.03, "{wasted} of {total}");
    let ts = read_one(&out, "timeseries");
    let col = ts.column("cost_total").unwrap().f64().unwrap().clone();
    let sum: f64 = (0..col.len()).filter_map(|i| col.get(i)).sum();
    assert!((sum - total).abs() < 1e-6, "{sum} against {total}");

    std::fs::write(&file, "clock: { duration: 10s }\nload: { rate: 10 }\n").unwrap();
    let out = dir.join("plain");
    run_into(&file, &out);
    let summary = read_one(&out, "summary");
    assert_eq!(summary.column("cost_total").unwrap().null_count(), 1);
}

/// A graph prices each call's attempts at its own client's
/// `cost_per_attempt`: the run's cost is the sum over edges, its wasted
/// part the attempts that served no answer, and each attempt record names
/// its edge and carries its price.
#[test]
fn a_graph_prices_each_calls_attempts_at_its_own_client() {
    let dir = scratch("graph-cost");
    let file = dir.join("graph-cost.yaml");
    std::fs::write(
        &file,
        "clock: { duration: 60s, bucket: 10s }
load: { rate: 50 }
outputs: { attempts: 1.0 }
entry: api
services:
  api:
    calls:
      - to: cache
        client: { cost_per_attempt: 1 }
      - to: llm
        client: { cost_per_attempt: 1000, retry: { max_retries: 2, backoff: { fixed: { delay: 10ms } } } }
      - to: log
dependencies:
  cache: { latency: { constant: 1ms } }
  llm: { errors: { http_503: 0.5 }, latency: { constant: 20ms } }
  log: { latency: { constant: 1ms } }
",
    )
    .unwrap();
    let out = dir.join("out");
    run_into(&file, &out);
    let summary = read_one(&out, "summary");
    let (total, wasted) = (
        f64_at(&summary, "cost_total"),
        f64_at(&summary, "cost_wasted"),
    );
    // Every attempt is recorded: priced by its edge, and none on the
    // unpriced edge.
    let attempts = read_one(&out, "attempts");
    let edges = attempts.column("edge").unwrap().str().unwrap().clone();
    let costs = attempts.column("cost").unwrap().f64().unwrap().clone();
    let outcomes = attempts.column("outcome").unwrap().str().unwrap().clone();
    let (mut cache, mut llm, mut llm_failed, mut log) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..attempts.height() {
        match (edges.get(i).unwrap(), costs.get(i)) {
            ("api->cache", Some(1.0)) => cache += 1,
            ("api->llm", Some(1000.0)) => {
                llm += 1;
                llm_failed += u64::from(outcomes.get(i) != Some("success"));
            }
            ("api->log", None) => log += 1,
            other => panic!("attempt {i}: {other:?}"),
        }
    }
    assert!(
        cache > 2500 && llm > cache && log > 0,
        "{cache} {llm} {log}"
    );
    assert_eq!(total, cache as f64 + 1000.0 * llm as f64);
    assert_eq!(wasted, 1000.0 * llm_failed as f64);
    // Half the llm's attempts fail: 1.75 attempts a call, 0.875 failed.
    let per_call = llm as f64 / cache as f64;
    assert!((per_call - 1.75).abs() < 0.05, "{per_call}");
    let ts = read_one(&out, "timeseries");
    let col = ts.column("cost_wasted").unwrap().f64().unwrap().clone();
    let sum: f64 = (0..col.len()).filter_map(|i| col.get(i)).sum();
    assert_eq!(sum, wasted);
}

/// The attempts table, written column by column with its own encodings,
/// names its run as the summary does (the same id columns, types and
/// values: the tables join), holds every attempt across row groups, and
/// keeps each attempt's request, number and times.
#[test]
fn the_attempts_table_spans_row_groups_and_names_its_run_as_the_summary_does() {
    use polars::prelude::*;
    let dir = scratch("attempts-row-groups");
    let file = dir.join("attempts.yaml");
    // 180,000 requests, 10 % failing once or twice: more attempts than
    // one row group (131,072) holds.
    std::fs::write(
        &file,
        "name: attempts-row-groups
clock: { duration: 60s, bucket: 10s }
load: { rate: 3000 }
service: { pods: 4, pool: { max_connections: 200 } }
upstream: { errors: { http_503: 0.1 }, latency: { constant: 5ms } }
client: { retry: { max_retries: 2, backoff: { fixed: { delay: 1ms } } } }
outputs: { attempts: 1.0 }
",
    )
    .unwrap();
    let out = dir.join("out");
    run_into(&file, &out);
    let summary = read_one(&out, "summary");
    let attempts = read_one(&out, "attempts");
    for id in ["run_id", "variant", "experiment", "seed", "replication"] {
        let (s, a) = (summary.column(id).unwrap(), attempts.column(id).unwrap());
        assert_eq!(s.dtype(), a.dtype(), "{id}");
        let first = s.get(0).unwrap();
        assert_eq!(a.n_unique().unwrap(), 1, "{id}");
        assert_eq!(a.get(0).unwrap(), first, "{id}");
    }
    // Every attempt that ended, by outcome, as the timeseries counts them.
    let ts = read_one(&out, "timeseries");
    let outcomes = attempts.column("outcome").unwrap().str().unwrap().clone();
    let mut rows = BTreeMap::<String, u64>::new();
    for i in 0..outcomes.len() {
        *rows
            .entry(outcomes.get(i).unwrap().to_string())
            .or_default() += 1;
    }
    let mut ended = BTreeMap::<String, u64>::new();
    for c in ts.get_column_names() {
        if let Some(o) = c.strip_prefix("attempts_ended_") {
            let col = ts.column(c).unwrap().cast(&DataType::UInt64).unwrap();
            let col = col.u64().unwrap();
            let n: u64 = (0..col.len()).filter_map(|i| col.get(i)).sum();
            if n > 0 {
                ended.insert(o.to_string(), n);
            }
        }
    }
    assert_eq!(rows, ended);
    assert!(attempts.height() > 131_072, "{}", attempts.height());
    assert!(rows.contains_key("server_error"), "{rows:?}");
    // Each request's attempts are numbered 1, 2, ... and follow in time.
    let sorted = attempts
        .sort(["request", "attempt"], Default::default())
        .unwrap();
    let request = sorted.column("request").unwrap().u64().unwrap().clone();
    let number = sorted.column("attempt").unwrap().u32().unwrap().clone();
    let start = sorted.column("start_s").unwrap().f64().unwrap().clone();
    let end = sorted.column("end_s").unwrap().f64().unwrap().clone();
    let outcome = sorted.column("outcome").unwrap().str().unwrap().clone();
    let mut retried = 0;
    for i in 0..sorted.height() {
        let (s, e) = (start.get(i).unwrap(), end.get(i).unwrap());
        assert!(s <= e && e <= 60.0, "row {i}: {s} {e}");
        if i > 0 && request.get(i) == request.get(i - 1) {
            assert_eq!(number.get(i), number.get(i - 1).map(|n| n + 1), "row {i}");
            assert!(s >= end.get(i - 1).unwrap(), "row {i}");
            assert_ne!(outcome.get(i - 1), Some("success"), "row {i}");
            retried += 1;
        } else {
            assert_eq!(number.get(i), Some(1), "row {i}");
        }
    }
    // About 10 % of the first attempts fail and are retried.
    let share = retried as f64 / 180_000.0;
    assert!((share - 0.111).abs() < 0.01, "{share}");
}

/// A large sweep's tables on the terminal stop after 30 rows and say how
/// many more there are and where; `sweep --quiet` prints its one line
/// even with replications.
#[test]
fn a_large_sweeps_terminal_tables_are_cut_and_say_where_the_rest_is() {
    let dir = scratch("large-sweep");
    let file = dir.join("large.yaml");
    std::fs::write(
        &file,
        "clock: { duration: 2s }\nload: { rate: 20 }\nsweep:\n  axes:\n    - path: client.attempt_timeout\n      range: { from: 100ms, to: 1.9s, step: 50ms }\n  replications: 2\n",
    )
    .unwrap();
    let (file, out) = (file.to_str().unwrap(), dir.join("out"));
    let out = out.to_str().unwrap();
    let o = stormsim(&["sweep", file, "--quiet", "--out", out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("74 cell(s)"), "{text}");
    // 37 variants over replications: 30 shown.
    let o = stormsim(&["sweep", file, "--out", out]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!(
            "… and 7 more variants: `stormsim report {out}` tabulates them all"
        )),
        "{text}"
    );
    let o = stormsim(&["replay", file, "--quiet", "--out", out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let rest = format!("every one in {out}/report.html");
    assert_eq!(
        text.matches(&format!("… and 44 more cells: {rest}"))
            .count(),
        2,
        "the ranking and the figures: {text}"
    );
    assert!(
        text.contains(&format!("… and 7 more variants: {rest}")),
        "{text}"
    );
    let ranked = text.lines().filter(|l| l.starts_with("30 ")).count();
    assert_eq!(ranked, 1, "{text}");
    assert!(!text.lines().any(|l| l.starts_with("31 ")), "{text}");
    assert!(text.lines().count() < 150, "{} lines", text.lines().count());
}

/// Key-value metadata of `table`'s one file in `out`.
fn metadata_of(out: &Path, table: &str) -> BTreeMap<String, String> {
    use polars::prelude::*;
    let f = std::fs::File::open(one_file(out, table)).unwrap();
    let meta = ParquetReader::new(f).get_metadata().unwrap().clone();
    meta.key_value_metadata()
        .as_ref()
        .unwrap()
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
        .collect()
}

/// The resolved configuration is written once per run, in its summary:
/// a chain of 200 services resolves to over 100 KB of JSON, which every
/// table of every cell used to repeat. Every table names the run and its
/// configuration's hash, which is the hash of the summary's JSON.
#[test]
fn the_resolved_configuration_is_written_once_per_run_and_named_by_its_hash_elsewhere() {
    let dir = scratch("config-once");
    let file = dir.join("chain.yaml");
    let mut text = String::from(
        "clock: { duration: 2s, bucket: 1s }\nload: { rate: 20 }\noutputs: { attempts: 1.0 }\nentry: s0\nservices:\n",
    );
    for i in 0..200 {
        let to = if i == 199 {
            "db".to_string()
        } else {
            format!("s{}", i + 1)
        };
        text.push_str(&format!("  s{i}:\n    calls:\n      - to: {to}\n"));
    }
    text.push_str("dependencies:\n  db: { latency: { constant: 1ms } }\n");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    run_into(&file, &out);
    let summary = metadata_of(&out, "summary");
    let config = &summary["stormsim.config"];
    assert!(config.len() > 100_000, "{} bytes", config.len());
    let world: serde_json::Value = serde_json::from_str(config).unwrap();
    assert_eq!(world["services"].as_object().unwrap().len(), 200);
    let hash = &summary["stormsim.config_hash"];
    assert_eq!(*hash, stormsim::runner::hash_text(config));
    assert_eq!(summary["stormsim.build"], stormsim::runner::BUILD);
    for table in ["timeseries", "pod_groups", "events", "attempts", "nodes"] {
        let meta = metadata_of(&out, table);
        assert!(!meta.contains_key("stormsim.config"), "{table}");
        for key in [
            "stormsim.version",
            "stormsim.build",
            "stormsim.experiment",
            "stormsim.cell",
            "stormsim.seed",
            "stormsim.params",
        ] {
            assert_eq!(meta[key], summary[key], "{table}: {key}");
        }
        assert_eq!(meta["stormsim.config_hash"], *hash, "{table}");
        let size = std::fs::metadata(one_file(&out, table)).unwrap().len();
        assert!(size < config.len() as u64, "{table}: {size} bytes");
    }
}
