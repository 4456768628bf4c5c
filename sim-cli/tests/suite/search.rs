//! `stormsim boundary` and `stormsim calibrate`: the bundled boundary's
//! edge is monotone with points well inside and outside it at 0 % and
//! 100 %; a synthetic calibration whose true parameters are known recovers
//! them; both searches give the same bytes on any thread count, and a
//! killed calibration resumes to the same result.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use polars::prelude::*;
use sim_models::world::Checks;
use stormsim::evaluate::{ObservedSpec, evaluate};
use stormsim::load::{InputLimits, load};
use yaml_serde::Value;

use crate::common::{self, root, stormsim};

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("search-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every result file under `dir` (not the folder's locks), with its bytes;
/// the folder's own path, which a report and its about.json name, written
/// as `OUT`.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = common::result_files(dir);
    let me = dir.display().to_string();
    for (name, bytes) in out.iter_mut() {
        if name.ends_with(".html") || name.ends_with(".json") {
            *bytes = String::from_utf8_lossy(bytes)
                .replace(&me, "OUT")
                .into_bytes();
        }
    }
    out
}

fn ok(args: &[&str]) -> String {
    let o = stormsim(args);
    assert!(
        o.status.success(),
        "stormsim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn read(path: &Path) -> DataFrame {
    ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap()
}

fn floats(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    let c = df.column(name).unwrap().cast(&DataType::Float64).unwrap();
    let c = c.f64().unwrap();
    (0..c.len()).map(|i| c.get(i)).collect()
}

#[test]
fn the_bundled_boundary_is_monotone_and_certain_away_from_its_edge() {
    let out = scratch("bundled-boundary");
    let text = ok(&[
        "boundary",
        "experiments/boundary/near-capacity.yaml",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(text.contains("tips at"), "{text}");
    let edges = read(&out.join("boundary/edges.parquet"));
    let mags = floats(&edges, "magnitude");
    let tips = floats(&edges, "boundary_s");
    let found: Vec<(f64, f64)> = mags
        .iter()
        .zip(&tips)
        .filter_map(|(m, t)| Some((m.unwrap(), (*t)?)))
        .collect();
    assert!(found.len() >= 3, "an edge for most magnitudes: {found:?}");
    // Points near the edge were judged on more seeds than the rest.
    let points = read(&out.join("boundary/points.parquet"));
    let seeds = floats(&points, "seeds");
    assert!(
        seeds.iter().any(|s| s.unwrap() > 8.0),
        "refined near the edge: {seeds:?}"
    );
    assert!(seeds.iter().all(|s| (8.0..=32.0).contains(&s.unwrap())));
    // A bigger slowdown tips the system sooner.
    for w in found.windows(2) {
        assert!(w[1].1 <= w[0].1, "the edge is monotone: {found:?}");
    }
    // Points well inside and outside: a tenth and ten times the edge (within the
    // searched range) storm on none and on every seed, judged anew here.
    let path = root().join("experiments/boundary/near-capacity.yaml");
    let exp = load(&path, &InputLimits::default()).unwrap();
    let verdict = ObservedSpec {
        name: None,
        figure: Some("metastable".into()),
        series: None,
        at: None,
        range: None,
        at_least: Some(0.5),
        at_most: None,
        target: None,
        tolerance: None,
    }
    .check(&exp)
    .unwrap();
    let spec = exp.boundary.as_ref().unwrap();
    let seeds: Vec<u64> = spec
        .seeds
        .seeds(exp.world.seed, &InputLimits::default())
        .unwrap();
    for &(m, t) in &found {
        for (d, storms) in [(t / 10.0, false), ((t * 10.0).min(30.0), true)] {
            let params = vec![
                (spec.magnitude.path.clone(), Value::from(m)),
                (
                    spec.duration.path.clone(),
                    Value::from(format!("{}ms", (d * 1e3).round().max(1.0))),
                ),
            ];
            for &s in &seeds {
                let (v, _) = evaluate(
                    &exp,
                    &params,
                    s,
                    std::slice::from_ref(&verdict),
                    Checks::default(),
                )
                .unwrap();
                assert_eq!(
                    v[0] == Some(1.0),
                    storms,
                    "×{m} for {d:.3} s, seed {s}: the edge is at {t:.3} s"
                );
            }
        }
    }
    // The report draws the edge, and `stormsim report` redraws the same
    // page from the folder alone.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("crosses 50 %"));
    ok(&["report", out.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(out.join("report.html")).unwrap(),
        html
    );
}

/// A small boundary (one magnitude, four seeds) beside the bundled one.
fn small_boundary(dir: &Path) -> PathBuf {
    let file = dir.join("small.yaml");
    let base = root().join("experiments/boundary/near-capacity.yaml");
    std::fs::write(
        &file,
        format!(
            "extends: {}\nboundary:\n  magnitude:\n    path: timeline[0].pulse.value\n    values: [5]\n  duration:\n    path: timeline[0].pulse.for\n    from: 100ms\n    to: 2s\n  seeds: 4\n",
            base.display()
        ),
    )
    .unwrap();
    file
}

#[test]
fn a_boundary_is_byte_identical_across_thread_counts_and_resumes() {
    let dir = scratch("boundary-threads");
    let file = small_boundary(&dir);
    let (one, two) = (dir.join("one"), dir.join("two"));
    for (out, threads) in [(&one, "1"), (&two, "2")] {
        ok(&[
            "boundary",
            file.to_str().unwrap(),
            "--quiet",
            "--threads",
            threads,
            "--out",
            out.to_str().unwrap(),
        ]);
    }
    assert!(files(&one) == files(&two), "thread count changed the bytes");
    // Run again: everything is read back, nothing changes.
    ok(&[
        "boundary",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        one.to_str().unwrap(),
    ]);
    assert!(files(&one) == files(&two));
}

/// The synthetic world's true parameters.
const TRUE_MEAN_MS: f64 = 40.0;
const TRUE_SLOWDOWN: f64 = 3.0;

fn truth(dir: &Path) -> PathBuf {
    let file = dir.join("truth.yaml");
    std::fs::write(
        &file,
        format!(
            "name: synthetic truth
seed: 5
clock: {{ duration: 150s, bucket: 1s, window: 10s }}
load: {{ rate: 200 }}
upstream:
  latency: {{ exponential: {{ mean: {TRUE_MEAN_MS}ms }} }}
client:
  attempt_timeout: 5s
  retry: {{ max_retries: 0 }}
outputs:
  recovery: {{ horizon: 30s, sustain: 10s }}
timeline:
  - at: 60s
    pulse: {{ param: upstream.latency_scale, value: {TRUE_SLOWDOWN}, for: 30s }}
"
        ),
    )
    .unwrap();
    file
}

/// A calibration of the truth's two parameters from three figures the
/// truth produced (medians over its seeds): its p99 at rest and at the
/// peak, and a time-stamped reading of its goodput during the slowdown.
fn synthetic(dir: &Path, budget: u32) -> PathBuf {
    let truth = truth(dir);
    let exp = load(&truth, &InputLimits::default()).unwrap();
    let spec = |figure: Option<&str>, series: Option<&str>| {
        let mut text = String::new();
        if let Some(f) = figure {
            text += &format!("figure: {f}\n");
        }
        if let Some(s) = series {
            text += &format!("series: {s}\nat: 75s\n");
        }
        text += "at_least: 0\n";
        yaml_serde::from_str::<ObservedSpec>(&text)
            .unwrap()
            .check(&exp)
            .unwrap()
    };
    let observed = [
        spec(Some("baseline_e2e_p99_s"), None),
        spec(Some("peak_e2e_p99_s"), None),
        spec(None, Some("window_p99_s")),
    ];
    let seeds = [5u64, 6, 7];
    let values: Vec<Vec<f64>> = seeds
        .iter()
        .map(|&s| {
            evaluate(&exp, &[], s, &observed, Checks::default())
                .unwrap()
                .0
                .into_iter()
                .map(Option::unwrap)
                .collect()
        })
        .collect();
    let median = |i: usize| {
        let mut v: Vec<f64> = values.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        v[1]
    };
    let file = dir.join("synthetic.calibrate.yaml");
    std::fs::write(
        &file,
        format!(
            "extends: truth.yaml
name: synthetic calibration
upstream:
  latency: {{ exponential: {{ mean: 100ms }} }}
calibrate:
  unknowns:
    - path: upstream.latency.exponential.mean
      range: [10ms, 200ms]
      scale: log
    - path: timeline[0].pulse.value
      range: [1.2, 6]
  observed:
    - {{ figure: baseline_e2e_p99_s, target: {b}, tolerance: {tb} }}
    - {{ figure: peak_e2e_p99_s, target: {p}, tolerance: {tp} }}
    - {{ series: window_p99_s, at: 75s, target: {w}, tolerance: {tw} }}
  seeds: [5, 6, 7]
  budget: {{ evaluations: {budget} }}
",
            b = median(0),
            tb = median(0) * 0.05,
            p = median(1),
            tp = median(1) * 0.05,
            w = median(2),
            tw = median(2) * 0.05,
        ),
    )
    .unwrap();
    file
}

fn calibrate(file: &Path, out: &Path, threads: &str) -> String {
    ok(&[
        "calibrate",
        file.to_str().unwrap(),
        "--quiet",
        "--threads",
        threads,
        "--out",
        out.to_str().unwrap(),
        "--write",
        out.join("fit.yaml").to_str().unwrap(),
    ])
}

/// The fitted values, read back from the calibrated file.
fn fitted(path: &Path) -> (f64, f64) {
    let v: Value = yaml_serde::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mean = v["upstream"]["latency"]["exponential"]["mean"]
        .as_str()
        .unwrap()
        .parse::<sim_core::time::SimDuration>()
        .unwrap();
    let slowdown = v["timeline"][0]["pulse"]["value"].as_f64().unwrap();
    (mean.as_secs_f64() * 1e3, slowdown)
}

#[test]
fn a_synthetic_calibration_recovers_its_true_parameters_on_any_thread_count() {
    let dir = scratch("synthetic");
    let file = synthetic(&dir, 40);
    let (one, two) = (dir.join("one"), dir.join("two"));
    let text = calibrate(&file, &one, "1");
    calibrate(&file, &two, "2");
    let (mean, slowdown) = fitted(&one.join("fit.yaml"));
    // Within the figures' 5 % tolerance of the truth.
    assert!(
        (mean / TRUE_MEAN_MS - 1.0).abs() < 0.08,
        "mean {mean} ms against {TRUE_MEAN_MS}: {text}"
    );
    assert!(
        (slowdown / TRUE_SLOWDOWN - 1.0).abs() < 0.08,
        "slowdown {slowdown} against {TRUE_SLOWDOWN}: {text}"
    );
    assert!(
        text.contains("meets every figure on 3 of 3 seeds"),
        "{text}"
    );
    // The tables stay in line, their names whole, although a moved
    // unknown's label (`upstream.latency.exponential.mean -10 %`) and a
    // figure's name (`baseline_e2e_p99_s`) are long (the page holds the
    // tables the terminal shows).
    let page = std::fs::read_to_string(one.join("report.html")).unwrap();
    let lines_of = |heading: &str| -> Vec<usize> {
        page.lines()
            .skip_while(|l| !l.starts_with(heading))
            .skip(1)
            .take_while(|l| !l.is_empty() && !l.starts_with('<'))
            .map(|l| l.chars().count())
            .collect()
    };
    assert!(page.contains(" baseline_e2e_p99_s "), "{page}");
    let per_seed = lines_of("per seed");
    assert_eq!(per_seed.len(), 4, "{page}");
    assert!(per_seed.iter().all(|&w| w == per_seed[0]), "{page}");
    let table = lines_of("sensitivity");
    assert_eq!(table.len(), 5, "{page}");
    assert!(table.iter().all(|&w| w == table[0]), "{page}");
    assert!(files(&one) == files(&two), "thread count changed the bytes");
    // `stormsim report` redraws the calibration's page from the folder
    // alone, to the same bytes.
    let page = std::fs::read(one.join("report.html")).unwrap();
    ok(&["report", one.to_str().unwrap()]);
    assert!(std::fs::read(one.join("report.html")).unwrap() == page);
    // The calibrated file runs as it is.
    ok(&["validate", one.join("fit.yaml").to_str().unwrap()]);
}

#[test]
fn a_calibration_whose_figures_never_move_says_the_fit_is_not_informative() {
    // No errors anywhere in the capacity range: every candidate misses the
    // observed error rate by the same amount.
    let dir = scratch("flat");
    let file = dir.join("flat.yaml");
    std::fs::write(
        &file,
        "clock: { duration: 1m, bucket: 1s }\nload: { rate: 50 }\nupstream: { capacity: 20 }\noutputs: { recovery: { horizon: 10s, sustain: 5s } }\ncalibrate:\n  unknowns:\n    - { path: upstream.capacity, range: [10, 40], integer: true }\n  observed:\n    - { figure: peak_error_rate, range: [0.1, 0.3] }\n  seeds: 2\n  budget: { evaluations: 6 }\n",
    )
    .unwrap();
    let text = calibrate(&file, &dir.join("out"), "1");
    assert!(
        text.contains("note: every candidate has the same loss"),
        "{text}"
    );
    // A calibration whose figures do move says nothing of the kind.
    let dir = scratch("not-flat");
    let text = calibrate(&synthetic(&dir, 8), &dir.join("out"), "1");
    assert!(!text.contains("the same loss"), "{text}");
}

#[test]
fn a_killed_calibration_resumes_to_the_same_fit() {
    let dir = scratch("killed");
    let file = synthetic(&dir, 40);
    let whole = dir.join("whole");
    calibrate(&file, &whole, "2");
    let resumed = dir.join("resumed");
    let mut child = common::command()
        .args([
            "calibrate",
            file.to_str().unwrap(),
            "--quiet",
            "--threads",
            "1",
            "--out",
            resumed.to_str().unwrap(),
            "--write",
            resumed.join("fit.yaml").to_str().unwrap(),
        ])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once its first batch is in the table.
    let table = resumed.join("evaluations/part-0.parquet");
    for _ in 0..3000 {
        if table.is_file() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !resumed.join("fit.yaml").exists(),
        "the calibration finished before it could be interrupted"
    );
    let text = calibrate(&file, &resumed, "2");
    assert!(
        !text.contains("(0 read back"),
        "the resumed run read the killed one's evaluations: {text}"
    );
    assert!(files(&whole) == files(&resumed), "the resumed fit differs");
}

#[test]
fn bad_searches_are_refused_with_their_location() {
    let dir = scratch("bad");
    truth(&dir);
    let cases = [
        (
            "calibrate:\n  unknowns:\n    - { path: load.rate, range: [10, 5] }\n  observed:\n    - { figure: peak_error_rate, at_most: 0.1 }\n",
            "calibrate.unknowns[0].range",
        ),
        (
            "calibrate:\n  unknowns:\n    - { path: load.rate, range: [10, 50] }\n  observed:\n    - { figure: peak_eror_rate, at_most: 0.1 }\n",
            "calibrate.observed[0].figure",
        ),
        (
            "calibrate:\n  unknowns:\n    - { path: load.rate, range: [10, 50] }\n  observed:\n    - { series: goodput_per_s, at_most: 0.1 }\n",
            "calibrate.observed[0].at",
        ),
        (
            "boundary:\n  magnitude:\n    path: timeline[0].pulse.value\n    values: [2]\n  duration:\n    path: timeline[0].pulse.for\n    from: 10s\n    to: 5s\n",
            "boundary.duration.to",
        ),
        (
            "calibrate:\n  unknowns:\n    - { path: load.rate, range: [10, 50] }\n  observed:\n    - { figure: peak_error_rate, at_most: 0.1 }\n  seeds: 4294967295\n",
            "--max-cells",
        ),
        (
            "calibrate:\n  unknowns:\n    - { path: load.rate, range: [10, 50] }\n  observed:\n    - { figure: peak_error_rate, at_most: 0.1 }\n  budget: { evaluations: 1000000 }\n",
            "--max-cells",
        ),
        (
            "calibrate:\n  unknowns:\n    - { path: load.rate, range: [10, 1e9] }\n  observed:\n    - { figure: peak_error_rate, at_most: 0.1 }\n",
            "--max-requests",
        ),
        (
            "boundary:\n  magnitude:\n    path: timeline[0].pulse.value\n    values: [2, 2]\n  duration:\n    path: timeline[0].pulse.for\n    from: 1s\n    to: 5s\n",
            "listed twice",
        ),
        (
            "boundary:\n  magnitude:\n    path: timeline[0].pulse.value\n    values: [2]\n  duration:\n    path: timeline[0].pulse.for\n    from: 1s\n    to: 100s\n",
            "clock.duration",
        ),
    ];
    for (i, (section, path)) in cases.iter().enumerate() {
        let file = dir.join(format!("bad-{i}.yaml"));
        std::fs::write(&file, format!("extends: truth.yaml\n{section}")).unwrap();
        let command = if section.starts_with("calibrate") {
            "calibrate"
        } else {
            "boundary"
        };
        let o = stormsim(&[
            command,
            file.to_str().unwrap(),
            "--quiet",
            "--out",
            dir.join(format!("out-{i}")).to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "case {i}: {err}");
        assert!(err.contains(path), "case {i} names {path}: {err}");
        // `validate` finds the same problem before anything runs.
        let v = stormsim(&["validate", file.to_str().unwrap()]);
        let verr = String::from_utf8_lossy(&v.stderr);
        assert_eq!(v.status.code(), Some(2), "validate, case {i}: {verr}");
        assert!(
            verr.contains(path),
            "validate, case {i} names {path}: {verr}"
        );
    }
}

/// A budget spent anywhere (inside the start, or in the optimiser's first
/// simplex) ends the search cleanly with what it judged.
#[test]
fn a_budget_spent_anywhere_ends_the_search_cleanly() {
    let dir = scratch("budgets");
    truth(&dir);
    for (i, (budget, start)) in [(3, 8), (9, 8), (12, 8)].iter().enumerate() {
        let file = dir.join(format!("b{i}.yaml"));
        std::fs::write(
            &file,
            format!(
                "extends: truth.yaml\ncalibrate:\n  unknowns:\n    - {{ path: upstream.latency.exponential.mean, range: [10ms, 200ms], scale: log }}\n  observed:\n    - {{ figure: baseline_e2e_p99_s, range: [0.1, 0.3] }}\n  seeds: 2\n  start: {start}\n  budget: {{ evaluations: {budget} }}\n"
            ),
        )
        .unwrap();
        let out = dir.join(format!("out-{i}"));
        let text = calibrate(&file, &out, "2");
        assert!(
            text.contains(&format!("{budget} candidates on 2 seeds")),
            "budget {budget}: {text}"
        );
    }
}
