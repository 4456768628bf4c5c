//! `stormsim report` on bundled experiments: every chart is an SVG with
//! data and labelled axes, the page embeds them all, and (where Chromium
//! is installed; always in CI) the page renders with no error and every
//! chart has a size.

use crate::common;

use crate::common::stormsim_ok;
use std::path::{Path, PathBuf};
use std::process::Command;

fn dataset(name: &str, command: &str, file: &str) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("report-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&out);
    stormsim_ok(&[command, file, "--quiet", "--out", out.to_str().unwrap()]);
    stormsim_ok(&["report", out.to_str().unwrap()]);
    out
}

/// [`dataset`] of a file `name.yaml` that extends the policy examples'
/// shared world (`experiments/policies/base.yaml`) with `text`.
fn dataset_on_base(name: &str, command: &str, text: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments/policies/base.yaml");
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &file,
        format!("extends: {}\nname: {name}\n{text}", base.display()),
    )
    .unwrap();
    dataset(name, command, file.to_str().unwrap())
}

/// Checks an SVG chart: well formed at both ends, with drawn data and the
/// axis descriptions given.
fn check_svg(path: &Path, labels: &[&str]) {
    let svg = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{}",
        path.display()
    );
    assert_eq!(svg.matches("<svg").count(), svg.matches("</svg>").count());
    let data = svg.matches("<polyline").count()
        + svg.matches("<polygon").count()
        + svg.matches("<rect").count();
    assert!(data > 3, "{}: no data drawn", path.display());
    let points = svg
        .split("points=\"")
        .skip(1)
        .map(|p| p.split('"').next().unwrap_or("").split(' ').count())
        .max()
        .unwrap_or(0);
    assert!(
        points > 2 || svg.contains("<rect"),
        "{}: empty series",
        path.display()
    );
    for l in labels {
        assert!(
            svg.contains(l),
            "{}: axis label {l:?} missing",
            path.display()
        );
    }
}

#[test]
fn a_run_report_has_every_chart_with_data_and_labels() {
    let out = dataset("replay", "run", "experiments/incidents/llm-api-1402.yaml");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for (chart, labels) in [
        (
            "load.svg",
            vec![
                "time",
                "per second",
                "offered",
                "attempts",
                "14:0",
                "upstream.latency_scale = 2",
            ],
        ),
        ("attempts.svg", vec!["retries", "first attempts"]),
        ("latency.svg", vec!["seconds", "end-to-end p99"]),
        ("outcomes.svg", vec!["success", "server_error"]),
        ("pool.svg", vec!["in use", "waiting", "calls in flight"]),
        ("pool_wait.svg", vec!["pool wait p99"]),
        (
            "pool_groups_in_use.svg",
            vec!["connections", "pods 0", "pods 7"],
        ),
        ("pool_groups_waiting.svg", vec!["attempts", "pods 3"]),
        ("pool_groups_wait.svg", vec!["seconds", "pods 5"]),
        ("upstream.svg", vec!["in service", "wasted/s"]),
        ("pods.svg", vec!["up", "down"]),
    ] {
        check_svg(&out.join("charts").join(chart), &labels);
        let inline = std::fs::read_to_string(out.join("charts").join(chart)).unwrap();
        assert!(html.contains(&inline), "{chart} not inlined");
    }
    assert!(html.contains("Attempts peaked at") && html.contains("<table>"));
    // The replay's pods restart, after probes that failed.
    let restarts = html
        .split("pod restarts (health probes failed)</td><td>")
        .nth(1)
        .and_then(|rest| rest.split("</td>").next())
        .expect("the restarts row");
    let (restarts, probes) = restarts.trim_end_matches(')').split_once(" (").unwrap();
    let (restarts, probes): (u64, u64) = (restarts.parse().unwrap(), probes.parse().unwrap());
    assert!(restarts > 0 && probes >= restarts, "{restarts} ({probes})");
    // Nothing to fetch: no script, no external source or style sheet (the
    // SVG namespace URI is a name, not a fetch).
    for needle in ["<script", "src=\"http", "href=\"http", "<link", "@import"] {
        assert!(
            !html.contains(needle),
            "the page must work offline: found {needle}"
        );
    }
}

#[test]
fn a_run_with_breakers_draws_their_state_as_a_band() {
    let out = dataset(
        "after",
        "run",
        "experiments/incidents/llm-api-1402-after.yaml",
    );
    let path = out.join("charts").join("breakers.svg");
    check_svg(&path, &["breakers", "open", "half-open"]);
    // A band is filled area (stacked polygons), not lines.
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(
        svg.matches("<polygon").count() >= 2,
        "no band in {}",
        path.display()
    );
}

/// A bulkhead's line is drawn where calls waited in it: the sweep's
/// runs compared, the line of 100 and the wait of 200 ms beside the
/// bulkhead that refuses at once; a run whose bulkhead keeps no line has
/// no such chart (it would be a flat line at zero).
#[test]
fn a_bulkhead_line_is_drawn_where_calls_waited() {
    let out = dataset(
        "bulkhead-line",
        "sweep",
        "experiments/policies/bulkhead-line.yaml",
    );
    let path = out.join("charts").join("compare_bulkhead.svg");
    check_svg(&path, &["bulkhead", "calls"]);
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.contains("line of 100") && svg.contains("wait 200 ms"));
    let plain = dataset("bulkhead", "run", "experiments/policies/bulkhead.yaml");
    assert!(plain.join("charts").join("pods.svg").exists());
    assert!(!plain.join("charts").join("bulkhead.svg").exists());
    // One run of a bulkhead with a line gets its own chart.
    let one = dataset_on_base(
        "bulkhead-line-one",
        "run",
        "client:\n  total_deadline: 2s\n  bulkhead: { max_concurrent: 8, max_wait: 200ms }\n",
    );
    check_svg(
        &one.join("charts").join("bulkhead.svg"),
        &["bulkhead", "calls"],
    );
}

/// The places adaptive bulkheads allow are drawn where a bulkhead adapts:
/// one run's lowest and highest in each bucket, a comparison's lowest per
/// run; runs whose bulkheads are fixed have no such chart.
#[test]
fn adaptive_limits_are_drawn_where_a_bulkhead_adapts() {
    let one = dataset_on_base(
        "adaptive-one",
        "run",
        "client:\n  bulkhead: { max_concurrent: 50, adaptive: { min_limit: 1, initial_limit: 2 } }\n",
    );
    check_svg(
        &one.join("charts").join("bulkhead_limit.svg"),
        &["adaptive bulkheads", "places", "lowest in the bucket"],
    );
    let two = dataset_on_base(
        "adaptive-two",
        "sweep",
        "sweep:\n  axes:\n    - path: client.bulkhead\n      values:\n        - { label: fixed, value: { max_concurrent: 8 } }\n        - { label: AIMD, value: { max_concurrent: 50, adaptive: { min_limit: 1, initial_limit: 2 } } }\n",
    );
    let path = two.join("charts").join("compare_bulkhead_limit.svg");
    check_svg(&path, &["adaptive bulkheads", "places"]);
    assert!(std::fs::read_to_string(&path).unwrap().contains("AIMD"));
    let plain = dataset("bulkhead", "run", "experiments/policies/bulkhead.yaml");
    assert!(!plain.join("charts").join("bulkhead_limit.svg").exists());
}

/// Pods held out by outlier detection join the pods chart where there
/// were any: a bad pod ejected at once, and not in a run without
/// outlier detection.
#[test]
fn pods_ejected_by_outlier_detection_join_the_pods_chart() {
    let out = dataset_on_base(
        "outlier-one",
        "run",
        "service:\n  outlier_detection: { max_ejection_percent: 20 }\ntimeline:\n  - at: 30s\n    pod_fault: { pod: 3, errors: 1 }\n",
    );
    let pods = out.join("charts").join("pods.svg");
    check_svg(&pods, &["ejected", "outlier detection"]);
    let plain = dataset("bulkhead", "run", "experiments/policies/bulkhead.yaml");
    let svg = std::fs::read_to_string(plain.join("charts").join("pods.svg")).unwrap();
    assert!(!svg.contains("ejected"));
}

#[test]
fn a_sweep_report_has_a_heatmap_a_vulnerable_map_and_a_ranking() {
    let out = dataset(
        "sweep",
        "sweep",
        "experiments/sweeps/retries-x-timeout.yaml",
    );
    check_svg(
        &out.join("charts/heatmap.svg"),
        &[
            "client.retry.max_retries",
            "client.attempt_timeout",
            "peak_error_rate",
        ],
    );
    check_svg(&out.join("charts/vulnerable.svg"), &["metastable"]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(
        html.matches("<tr>").count(),
        2 * (1 + 16),
        "a ranked row and an incident-figures row per run"
    );
    assert!(html.contains("Incident figures"));
    // The KPI and axes can be chosen.
    stormsim_ok(&[
        "report",
        out.to_str().unwrap(),
        "--kpi",
        "amplification_peak",
        "--x",
        "client.attempt_timeout",
        "--y",
        "client.retry.max_retries",
    ]);
    check_svg(&out.join("charts/heatmap.svg"), &["amplification_peak"]);
    // Cells that pool several runs show a confidence half-width.
    stormsim_ok(&[
        "report",
        out.to_str().unwrap(),
        "--x",
        "client.retry.max_retries",
        "--y",
        "client.retry.max_retries",
    ]);
    let svg = std::fs::read_to_string(out.join("charts/heatmap.svg")).unwrap();
    assert!(svg.contains('±'), "no confidence interval on pooled cells");
    // A report refused as bad input (exit 2): its message.
    let refused = |dir: &Path, flag: &str, value: &str| {
        let bad = common::command()
            .args(["report", dir.to_str().unwrap(), flag, value])
            .output()
            .unwrap();
        assert_eq!(bad.status.code(), Some(2), "{flag} {value}");
        String::from_utf8_lossy(&bad.stderr).into_owned()
    };
    refused(&out, "--kpi", "nope");
    // A misspelt KPI gets the closest column; a yes/no column is a share.
    let err = refused(&out, "--kpi", "peak_eror_rate");
    assert!(err.contains("did you mean `peak_error_rate`?"), "{err}");
    stormsim_ok(&["report", out.to_str().unwrap(), "--kpi", "metastable"]);
    check_svg(&out.join("charts/heatmap.svg"), &["metastable"]);
    // --x naming the second axis: up is the first, not the same one.
    stormsim_ok(&[
        "report",
        out.to_str().unwrap(),
        "--x",
        "client.attempt_timeout",
    ]);
    let svg = std::fs::read_to_string(out.join("charts/heatmap.svg")).unwrap();
    assert!(svg.contains("client.retry.max_retries"), "{svg}");
    // A misspelt axis, or an axis of a dataset that has no sweep.
    let err = refused(&out, "--x", "client.retry.max_retrie");
    assert!(
        err.contains("did you mean `client.retry.max_retries`?"),
        "{err}"
    );
    let run = dataset("axes-of-a-run", "run", "experiments/basics/steady.yaml");
    let err = refused(&run, "--y", "client.attempt_timeout");
    assert!(err.contains("this dataset has no sweep"), "{err}");
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("STORMSIM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let found = Command::new("which").arg(name).output().ok()?;
            found
                .status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&found.stdout).trim()))
        })
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have Chromium (.ci/run installs it)"
        );
        eprintln!(
            "SKIPPED: no Chromium on this machine (apt-get install chromium); CI runs this check"
        );
        return;
    };
    let out = dataset(
        "render",
        "run",
        "experiments/incidents/llm-api-1402-after.yaml",
    );
    // A copy of the page with a probe that records each chart's size and
    // any error into the DOM, which --dump-dom prints.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let probe = "<script>window.onerror=function(m){document.body.setAttribute('data-error',m)};\
        window.addEventListener('load',function(){var s=[];document.querySelectorAll('svg').forEach(function(e){\
        var r=e.getBoundingClientRect();s.push(Math.round(r.width)+'x'+Math.round(r.height))});\
        var p=document.createElement('pre');p.id='sizes';p.textContent=s.join(' ');document.body.appendChild(p)});</script>";
    let probed = out.join("probed.html");
    std::fs::write(&probed, html.replace("</body>", &format!("{probe}</body>"))).unwrap();
    let profile = out.join("chromium-profile");
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", probed.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && !dom.is_empty(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !dom.contains("<body data-error="),
        "the page raised an error"
    );
    let sizes = dom
        .split("<pre id=\"sizes\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .expect("the probe ran");
    let charts: Vec<&str> = sizes.split_whitespace().collect();
    assert!(charts.len() >= 8, "{sizes}");
    for c in charts {
        let (w, h) = c.split_once('x').unwrap();
        assert!(
            w.parse::<u32>().unwrap() > 100 && h.parse::<u32>().unwrap() > 50,
            "a chart rendered at {c}"
        );
    }
}
