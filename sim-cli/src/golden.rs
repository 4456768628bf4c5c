//! Golden summaries: a small text of each bundled experiment's key figures
//! and ranking, checked into `experiments/golden/`, so that a change in
//! figures shows in review as a diff. `sim-cli/tests/suite/golden.rs`
//! re-runs every bundled experiment and compares; `STORMSIM_BLESS=1 cargo
//! test -p sim-cli --test suite golden` rewrites them.

use polars::prelude::DataFrame;

use crate::load::Experiment;
use crate::report::{optional_floats, strings};

/// A figure rounded to `digits` significant digits, `-` when missing: the
/// runs are deterministic, rounding only keeps the text readable.
fn sig(v: Option<f64>, digits: usize) -> String {
    match v {
        None => "-".into(),
        Some(x) if !x.is_finite() => "-".into(),
        Some(0.0) => "0".into(),
        Some(x) if x.fract() == 0.0 && x.abs() >= 1.0 => format!("{x:.0}"),
        Some(x) => {
            let magnitude = x.abs().log10().floor() as i32;
            let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
            format!("{x:.decimals$}")
        }
    }
}

/// The golden summary of `exp` from its `summary` table: one line per run
/// in ranking order, the figures that tell its story.
pub fn summary(exp: &Experiment, summary: &DataFrame) -> Result<String, String> {
    let objective = exp.objective.clone().unwrap_or_default();
    let ranking = crate::verdict::rank(summary, &objective)?;
    let names = if summary.column("variant").is_ok() {
        strings(summary, "variant")?
    } else {
        strings(summary, "run_id")?
    };
    let columns = [
        ("offered", "offered", 6),
        ("success_rate", "success", 3),
        ("peak_error_rate", "peak err", 3),
        ("peak_e2e_p99_s", "p99 s", 3),
        ("amplification_peak", "peak amp", 3),
        ("slo_violation_s", "SLO breach s", 3),
        ("time_to_recover_s", "recover s", 3),
    ];
    let data: Vec<Vec<Option<f64>>> = columns
        .iter()
        .map(|(c, _, _)| optional_floats(summary, c))
        .collect::<Result<_, _>>()?;
    let flag = |c: &str| -> Result<Vec<bool>, String> {
        Ok(optional_floats(summary, c)?
            .iter()
            .map(|v| v.is_some_and(|v| v > 0.5))
            .collect())
    };
    let (meta, judged) = (flag("metastable")?, flag("recovery_judged")?);
    let mut out = format!(
        "# {}\n\n{}.\n\n| rank | run |",
        exp.name,
        crate::verdict::describe(&objective)
    );
    for (_, title, _) in &columns {
        out.push_str(&format!(" {title} |"));
    }
    out.push_str(" recovery | decided by |\n|---|---|");
    out.push_str(&"---|".repeat(columns.len() + 2));
    out.push('\n');
    for (rank, &i) in ranking.order.iter().enumerate() {
        out.push_str(&format!("| {} | {} |", rank + 1, names[i]));
        for (c, (_, _, digits)) in columns.iter().enumerate() {
            out.push_str(&format!(" {} |", sig(data[c][i], *digits)));
        }
        let recovery = if meta[i] {
            "metastable"
        } else if judged[i] {
            "recovered"
        } else {
            "not judged"
        };
        out.push_str(&format!(
            " {recovery} | {} |\n",
            ranking.decided_by[rank].unwrap_or("-")
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::sig;

    #[test]
    fn figures_keep_their_significant_digits() {
        assert_eq!(sig(Some(0.123456), 3), "0.123");
        assert_eq!(sig(Some(37.345), 3), "37.3");
        assert_eq!(sig(Some(12345.0), 3), "12345");
        assert_eq!(sig(None, 3), "-");
        assert_eq!(sig(Some(0.0), 3), "0");
    }
}
