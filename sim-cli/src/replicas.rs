//! Figures over replications: a sweep's cells that differ only by their
//! replication (their seed) form one variant, reported as the mean with a
//! t-based 95 % confidence interval per figure and the storm share with
//! Wilson's interval, so that a ranking of variants never rests on one
//! lucky seed.

use polars::prelude::DataFrame;

use crate::report::{optional_floats, strings};
use crate::stats::{mean_ci_at_least_zero, wilson};

/// One variant: its name and its rows in the summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// The name of its first replication (`retry.max_retries = 3`).
    pub name: String,
    /// Summary rows, replication order.
    pub rows: Vec<usize>,
}

/// The summary's rows grouped by their swept values (`axes`), in the
/// order each variant first appears.
pub fn variants(summary: &DataFrame, axes: &[String]) -> Result<Vec<Variant>, String> {
    let n = summary.height();
    let mut keys = vec![String::new(); n];
    for a in axes {
        if summary.column(a).is_ok() {
            for (k, v) in keys.iter_mut().zip(strings(summary, a)?) {
                k.push_str(&v);
                k.push('\u{1f}');
            }
        }
    }
    let names = if summary.column("variant").is_ok() {
        strings(summary, "variant")?
    } else {
        strings(summary, "run_id")?
    };
    let reps = if summary.column("replication").is_ok() {
        optional_floats(summary, "replication")?
    } else {
        vec![Some(0.0); n]
    };
    let mut out: Vec<(String, Variant)> = Vec::new();
    for i in 0..n {
        match out.iter_mut().find(|(k, _)| *k == keys[i]) {
            Some((_, v)) => v.rows.push(i),
            None => out.push((
                keys[i].clone(),
                Variant {
                    name: names[i].clone(),
                    rows: vec![i],
                },
            )),
        }
    }
    for (_, v) in &mut out {
        v.rows
            .sort_by(|&a, &b| reps[a].unwrap_or(0.0).total_cmp(&reps[b].unwrap_or(0.0)));
        if let Some(&first) = v.rows.first() {
            v.name = names[first]
                .rsplit_once(" #")
                .map_or(names[first].clone(), |(n, _)| n.to_string());
        }
    }
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

/// The figures tabulated over replications: column, heading, scale.
const FIGURES: [(&str, &str, f64); 4] = [
    ("slo_violation_s", "SLO breach s", 1.0),
    ("peak_error_rate", "peak err %", 100.0),
    ("amplification_peak", "peak amp", 1.0),
    ("peak_e2e_p99_s", "user p99 s", 1.0),
];

/// Rows of the replications table: variant, n, each figure's mean [CI],
/// and storms/n with Wilson's interval. `None` when no variant has more
/// than one replication.
pub fn rows(summary: &DataFrame, axes: &[String]) -> Result<Option<Vec<Vec<String>>>, String> {
    let groups = variants(summary, axes)?;
    if groups.iter().all(|g| g.rows.len() < 2) {
        return Ok(None);
    }
    let cols: Vec<Vec<Option<f64>>> = FIGURES
        .iter()
        .map(|(c, _, _)| {
            if summary.column(c).is_ok() {
                optional_floats(summary, c)
            } else {
                Ok(vec![None; summary.height()])
            }
        })
        .collect::<Result<_, _>>()?;
    let meta = if summary.column("metastable").is_ok() {
        optional_floats(summary, "metastable")?
    } else {
        vec![None; summary.height()]
    };
    let mut out = Vec::new();
    for g in &groups {
        let mut row = vec![g.name.clone(), g.rows.len().to_string()];
        for ((_, _, scale), col) in FIGURES.iter().zip(&cols) {
            let xs: Vec<f64> = g
                .rows
                .iter()
                .filter_map(|&i| col[i])
                .map(|x| x * scale)
                .collect();
            // Every figure here is ≥ 0: a t interval's lower end is cut there.
            row.push(mean_ci_at_least_zero(&xs).map_or("-".into(), |m| m.show(1)));
        }
        let storms = g
            .rows
            .iter()
            .filter(|&&i| meta[i].is_some_and(|m| m > 0.5))
            .count() as u64;
        let (lo, hi) = wilson(storms, g.rows.len() as u64);
        row.push(format!("{storms}/{} [{lo:.2}, {hi:.2}]", g.rows.len()));
        out.push(row);
    }
    Ok(Some(out))
}

/// The headings of [`rows`].
pub fn headings() -> Vec<&'static str> {
    let mut h = vec!["variant", "n"];
    h.extend(FIGURES.iter().map(|(_, h, _)| *h));
    h.push("metastable (95 % CI)");
    h
}

/// [`rows`] as aligned text, or `None`.
pub fn table(summary: &DataFrame, axes: &[String]) -> Result<Option<String>, String> {
    let Some(rows) = rows(summary, axes)? else {
        return Ok(None);
    };
    let heads = headings();
    let mut widths: Vec<usize> = heads.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut s = format!(
        "over replications (mean [95 % t interval]; metastable: share with Wilson's interval):\n{}\n",
        line(heads.iter().map(|h| h.to_string()).collect())
    );
    for r in rows {
        s += &line(r);
        s.push('\n');
    }
    Ok(Some(s))
}
