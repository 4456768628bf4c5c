//! Each distribution against its analytic mean and quantiles, and its
//! draws, rounded to the nanosecond, against a second math library.
//!
//! 200,000 draws per distribution with a fixed seed. The standard error of
//! a sample mean is σ/√n, at most 0.25 % of the mean for every case here
//! (Pareto with shape 2.5 has CV 0.89, so 0.2 %); the tolerances below are
//! 1 % for means and central quantiles and 2–3 % for tails, i.e. at least
//! four standard errors, so a failure means a wrong formula, not bad luck.

use sim_core::dist::{Dist, DistSpec, std_normal_cdf, std_normal_quantile};
use sim_core::metrics::Histogram;
use sim_core::rng::RngStreams;
use sim_core::time::SimDuration;

const N: usize = 200_000;

fn ms(v: u64) -> SimDuration {
    SimDuration::from_millis(v)
}

/// A log-normal law given by its median and p99, in milliseconds.
fn log_normal(median: u64, p99: u64) -> DistSpec {
    DistSpec::LogNormal {
        median: Some(ms(median)),
        p99: Some(ms(p99)),
        mu: None,
        sigma: None,
    }
}

/// Draws N samples; returns them sorted, in seconds.
fn draws(spec: &DistSpec) -> (Dist, Vec<f64>) {
    let dist = Dist::new(spec).expect("valid spec");
    let mut rng = RngStreams::new(2026).stream("dist-test");
    let mut v: Vec<f64> = (0..N)
        .map(|_| dist.sample(&mut rng).as_secs_f64())
        .collect();
    v.sort_by(f64::total_cmp);
    (dist, v)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn close(what: &str, got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs(),
        "{what}: got {got}, want {want} (±{:.1} %)",
        rel * 100.0
    );
}

#[test]
fn constant_is_constant() {
    let (_, v) = draws(&DistSpec::Constant(ms(250)));
    assert!(v.iter().all(|&x| x == 0.25));
}

#[test]
fn uniform_mean_and_bounds() {
    let (d, v) = draws(&DistSpec::Uniform {
        low: ms(1_000),
        high: ms(3_000),
    });
    close("mean", mean(&v), 2.0, 0.01);
    assert!(v[0] >= 1.0 && v[N - 1] <= 3.0);
    close(
        "p90",
        quantile(&v, 0.9),
        d.quantile_secs(0.9).unwrap(),
        0.01,
    );
}

#[test]
fn exponential_mean_and_quantiles() {
    let (d, v) = draws(&DistSpec::Exponential { mean: ms(5_000) });
    close("mean", mean(&v), 5.0, 0.01);
    close("analytic mean", d.mean_secs(), 5.0, 1e-12);
    close("p50", quantile(&v, 0.5), 5.0 * 2f64.ln(), 0.01);
    close("p99", quantile(&v, 0.99), 5.0 * 100f64.ln(), 0.03);
}

#[test]
fn truncated_normal_mean_matches_closed_form() {
    let (d, v) = draws(&DistSpec::Normal {
        mean: ms(1_000),
        std_dev: ms(1_000),
    });
    // E[X | X ≥ 0] = μ + σ φ(α)/(1 − Φ(α)), α = −μ/σ = −1: 1.2876 s.
    close("closed form", d.mean_secs(), 1.287_6, 1e-3);
    close("mean", mean(&v), d.mean_secs(), 0.01);
    assert!(v[0] >= 0.0, "truncated at zero");
    // Median of the truncated law: Φ⁻¹(Φ(−1) + (1 − Φ(−1))/2).
    let p0 = std_normal_cdf(-1.0);
    let median = 1.0 + std_normal_quantile(p0 + (1.0 - p0) / 2.0);
    close("median", quantile(&v, 0.5), median, 0.01);
}

#[test]
fn log_normal_from_median_and_p99() {
    let (d, v) = draws(&log_normal(5_000, 12_000));
    close("p50", quantile(&v, 0.5), 5.0, 0.01);
    close("p99", quantile(&v, 0.99), 12.0, 0.02);
    close("mean", mean(&v), d.mean_secs(), 0.01);
    close("analytic p99", d.quantile_secs(0.99).unwrap(), 12.0, 1e-6);
}

#[test]
fn log_normal_from_mu_sigma() {
    let (d, v) = draws(&DistSpec::LogNormal {
        median: None,
        p99: None,
        mu: Some(0.0),
        sigma: Some(0.5),
    });
    close("mean", mean(&v), (0.125f64).exp(), 0.01);
    close("p50", quantile(&v, 0.5), 1.0, 0.01);
    close(
        "p90",
        quantile(&v, 0.9),
        d.quantile_secs(0.9).unwrap(),
        0.015,
    );
}

#[test]
fn pareto_mean_and_quantiles() {
    let (d, v) = draws(&DistSpec::Pareto {
        scale: ms(100),
        shape: 2.5,
    });
    close("mean", mean(&v), 2.5 * 0.1 / 1.5, 0.02);
    close(
        "p50",
        quantile(&v, 0.5),
        d.quantile_secs(0.5).unwrap(),
        0.01,
    );
    close(
        "p99",
        quantile(&v, 0.99),
        0.1 * 0.01f64.powf(-1.0 / 2.5),
        0.03,
    );
    assert!(v[0] >= 0.1);
}

#[test]
fn empirical_interpolates_its_table() {
    let spec = DistSpec::Empirical {
        points: vec![
            (0.0, ms(1_000)),
            (50.0, ms(5_000)),
            (99.0, ms(12_000)),
            (100.0, ms(20_000)),
        ],
    };
    let (d, v) = draws(&spec);
    close("p50", quantile(&v, 0.5), 5.0, 0.01);
    close("p25", quantile(&v, 0.25), 3.0, 0.01);
    close("p98", quantile(&v, 0.98), 5.0 + 7.0 * 48.0 / 49.0, 0.01);
    // Above p99 the table rises 8 s per percentile, so the sample p99's
    // standard error is about 1.5 %: allow two of them.
    close("p99", quantile(&v, 0.99), 12.0, 0.03);
    close("mean", mean(&v), d.mean_secs(), 0.01);
    assert!(v[0] >= 1.0 && v[N - 1] <= 20.0);
}

#[test]
fn invalid_specs_name_the_field() {
    let cases: Vec<(DistSpec, &str)> = vec![
        (
            DistSpec::Uniform {
                low: ms(3),
                high: ms(1),
            },
            "high",
        ),
        (
            DistSpec::Exponential {
                mean: SimDuration::ZERO,
            },
            "mean",
        ),
        (log_normal(5, 4), "p99"),
        (
            DistSpec::LogNormal {
                median: Some(ms(5)),
                p99: None,
                mu: Some(1.0),
                sigma: None,
            },
            "log_normal",
        ),
        (
            DistSpec::LogNormal {
                median: None,
                p99: None,
                mu: Some(1.0),
                sigma: Some(-1.0),
            },
            "sigma",
        ),
        (
            DistSpec::Pareto {
                scale: ms(1),
                shape: 0.0,
            },
            "shape",
        ),
        (
            DistSpec::Pareto {
                scale: ms(1),
                shape: f64::NAN,
            },
            "shape",
        ),
        (
            DistSpec::Empirical {
                points: vec![(0.0, ms(1))],
            },
            "points",
        ),
        (
            DistSpec::Empirical {
                points: vec![(0.0, ms(2)), (100.0, ms(1))],
            },
            "points[1]",
        ),
        (
            DistSpec::Empirical {
                points: vec![(10.0, ms(1)), (100.0, ms(2))],
            },
            "points[0]",
        ),
        (
            DistSpec::Empirical {
                points: vec![(0.0, ms(1)), (90.0, ms(2))],
            },
            "points[1]",
        ),
        (
            DistSpec::Empirical {
                points: vec![(0.0, ms(1)), (150.0, ms(2))],
            },
            "points[1]",
        ),
    ];
    for (spec, field) in cases {
        let e = Dist::new(&spec).expect_err("invalid");
        assert_eq!(e.field, field, "{spec:?}: {e}");
    }
}

/// The histogram against exact quantiles of a large, wide sample: 10^6
/// log-uniform values from 1 µs to 1 h.
#[test]
fn histogram_quantiles_within_one_percent_of_exact() {
    let spec = DistSpec::LogNormal {
        median: None,
        p99: None,
        mu: (1e-6f64 * 3600.0).sqrt().ln().into(),
        sigma: Some(3.0),
    };
    let dist = Dist::new(&spec).unwrap();
    let mut rng = RngStreams::new(9).stream("hist");
    let mut exact = Vec::with_capacity(1_000_000);
    let (mut a, mut b) = (Histogram::new(), Histogram::new());
    for i in 0..1_000_000 {
        let v = dist
            .sample(&mut rng)
            .as_nanos()
            .clamp(1_000, 3_600_000_000_000);
        exact.push(v);
        // Split across two histograms to exercise merging.
        if i % 3 == 0 { a.record(v) } else { b.record(v) }
    }
    a.merge(&b);
    exact.sort_unstable();
    for q in [
        0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0,
    ] {
        let rank = ((q * exact.len() as f64).ceil() as usize).clamp(1, exact.len());
        let want = exact[rank - 1] as f64;
        let got = a.quantile(q).unwrap() as f64;
        assert!(
            (got - want).abs() <= 0.01 * want,
            "q{q}: {got} vs exact {want}"
        );
    }
    assert_eq!(a.count(), 1_000_000);
    let exact_mean = exact.iter().map(|&v| v as f64).sum::<f64>() / exact.len() as f64;
    assert!((a.mean().unwrap() - exact_mean).abs() < 1e-6 * exact_mean);
}

/// How many of `draws` draws of `dist` come out a different nanosecond
/// when its logarithm, exponential or power is the pure-Rust `libm`
/// crate's rather than the platform's (glibc's on Linux), and how many
/// differ in the float before rounding. Each draw is made by the library
/// (`Dist::sample`) and again by this test from a copy of the stream in
/// both libraries, the platform's version checked against the library's
/// draw so that the two formulas cannot drift apart.
fn nanoseconds_apart(dist: &Dist, draws: usize) -> (usize, usize) {
    use rand::RngExt;
    use rand_distr::StandardNormal;
    let mut rng = RngStreams::new(2026).stream("math-library");
    let (mut floats, mut nanos) = (0, 0);
    for _ in 0..draws {
        let mut twin = rng.clone();
        let drawn = dist.sample(&mut rng);
        let (platform, pure) = match *dist {
            Dist::Exponential { mean } => {
                let u: f64 = twin.random();
                (-mean * (1.0 - u).ln(), -mean * libm::log(1.0 - u))
            }
            Dist::LogNormal { mu, sigma } => {
                let z: f64 = twin.sample(StandardNormal);
                ((mu + sigma * z).exp(), libm::exp(mu + sigma * z))
            }
            Dist::Pareto { scale, shape } => {
                let u: f64 = twin.random();
                (
                    scale * (1.0 - u).powf(-1.0 / shape),
                    scale * libm::pow(1.0 - u, -1.0 / shape),
                )
            }
            _ => unreachable!("only the laws drawn through the math library"),
        };
        assert_eq!(SimDuration::from_secs_f64(platform), drawn);
        let other = SimDuration::from_secs_f64(pure);
        floats += usize::from(platform.to_bits() != pure.to_bits());
        if other != drawn {
            nanos += 1;
            let apart = other.as_nanos().abs_diff(drawn.as_nanos());
            assert_eq!(apart, 1, "{dist:?}: {drawn:?} against {other:?}");
        }
    }
    (floats, nanos)
}

/// Same bytes on another platform: math libraries disagree in the last
/// bit of some results, and a draw rounded to the nanosecond hides it
/// unless the exact value lies within that bit of a half nanosecond, a
/// chance that grows with the duration (about 2^-53 of it in nanoseconds
/// for each draw whose bits differ). 10^6 draws of each law with the
/// fixed seed: none of the millisecond ones moves, and the 14:02 replay's
/// 5 s log-normal moves at most one draw by one nanosecond (its chance is
/// about one draw in ten million: ARCHITECTURE.md, `dist.rs`).
#[test]
fn a_draw_rounded_to_the_nanosecond_hides_the_math_librarys_last_bit() {
    const DRAWS: usize = 1_000_000;
    let laws = [
        (
            "exponential 10 ms",
            DistSpec::Exponential { mean: ms(10) },
            0,
        ),
        ("log-normal 20 ms, p99 80 ms", log_normal(20, 80), 0),
        (
            "Pareto 100 ms, shape 2.5",
            DistSpec::Pareto {
                scale: ms(100),
                shape: 2.5,
            },
            0,
        ),
        ("log-normal 5 s, p99 12 s", log_normal(5_000, 12_000), 1),
    ];
    for (name, spec, most) in laws {
        let (floats, nanos) = nanoseconds_apart(&Dist::new(&spec).unwrap(), DRAWS);
        eprintln!("{name}: {floats} floats and {nanos} nanoseconds apart of {DRAWS}");
        assert!(
            nanos <= most,
            "{name}: {nanos} draws moved, at most {most} allowed"
        );
        // glibc's and the crate's results differ for some inputs (6–10 %
        // of these draws), so the check above compares something.
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(floats >= DRAWS / 100, "{name}: only {floats} floats differ");
        }
    }
}
