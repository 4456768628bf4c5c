//! Delay distributions, written in config and validated before use.
//!
//! [`DistSpec`] is what a user writes (YAML via serde):
//!
//! ```yaml
//! constant: 5s
//! uniform: { low: 1s, high: 3s }
//! exponential: { mean: 5s }
//! normal: { mean: 5s, std_dev: 1s }        # truncated at zero
//! log_normal: { median: 5s, p99: 12s }      # or { mu: 1.6, sigma: 0.4 } in ln-seconds
//! pareto: { scale: 100ms, shape: 2.5 }
//! empirical: { points: [[0, 1s], [50, 5s], [99, 12s], [100, 20s]] }
//! ```
//!
//! [`Dist::new`] validates a spec into a sampler; an invalid spec (negative
//! spread, p99 below the median, unsorted percentiles) is a [`DistError`]
//! naming the field, never a panic at sampling time. Samples are rounded to
//! whole nanoseconds ([`SimDuration::from_secs_f64`]).

use std::fmt;

use rand::{Rng, RngExt};
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use crate::time::SimDuration;

/// The 0.99 quantile of the standard normal distribution.
pub const Z99: f64 = 2.326_347_874_040_840_8;

/// A distribution of delays, as written in config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DistSpec {
    /// Always the same delay.
    Constant(SimDuration),
    /// Uniform between `low` and `high`, inclusive, to the nanosecond.
    Uniform {
        /// Smallest delay.
        low: SimDuration,
        /// Largest delay.
        high: SimDuration,
    },
    /// Exponential with the given mean (memoryless service, Poisson gaps).
    Exponential {
        /// Mean delay.
        mean: SimDuration,
    },
    /// Normal, truncated at zero by rejection (so the mean shifts up when
    /// `std_dev` is large compared with `mean`).
    Normal {
        /// Mean of the untruncated normal.
        mean: SimDuration,
        /// Standard deviation of the untruncated normal.
        std_dev: SimDuration,
    },
    /// Log-normal, given either `median` and `p99`, or `mu` and `sigma` of
    /// the underlying normal in ln-seconds.
    LogNormal {
        /// Median delay (with `p99`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        median: Option<SimDuration>,
        /// 99th-percentile delay (with `median`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p99: Option<SimDuration>,
        /// Mean of ln(delay in seconds) (with `sigma`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mu: Option<f64>,
        /// Standard deviation of ln(delay in seconds) (with `mu`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sigma: Option<f64>,
    },
    /// Pareto (type I): `scale · U^(−1/shape)`, heavy-tailed.
    Pareto {
        /// Minimum delay.
        scale: SimDuration,
        /// Tail index; the mean is finite only for shape > 1.
        shape: f64,
    },
    /// A percentile table, linearly interpolated between points. Points are
    /// `[percentile, delay]`, percentiles from 0 to 100 inclusive, both
    /// non-decreasing.
    Empirical {
        /// `[percentile, delay]` pairs, first at 0, last at 100.
        points: Vec<(f64, SimDuration)>,
    },
}

/// Why a distribution spec is invalid: the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistError {
    /// The offending field, e.g. `p99` or `points[2]`.
    pub field: String,
    /// What was expected.
    pub message: String,
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
impl std::error::Error for DistError {}

fn err<T>(field: &str, message: impl Into<String>) -> Result<T, DistError> {
    Err(DistError {
        field: field.to_string(),
        message: message.into(),
    })
}

/// A validated distribution, ready to sample. Parameters are in seconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    /// See [`DistSpec::Constant`].
    Constant(SimDuration),
    /// See [`DistSpec::Uniform`]; in nanoseconds.
    Uniform {
        /// Low bound, ns.
        low: u64,
        /// High bound, ns.
        high: u64,
    },
    /// See [`DistSpec::Exponential`].
    Exponential {
        /// Mean, s.
        mean: f64,
    },
    /// See [`DistSpec::Normal`].
    Normal {
        /// Mean, s.
        mean: f64,
        /// Standard deviation, s.
        std_dev: f64,
    },
    /// See [`DistSpec::LogNormal`].
    LogNormal {
        /// Mean of ln(seconds).
        mu: f64,
        /// Standard deviation of ln(seconds).
        sigma: f64,
    },
    /// See [`DistSpec::Pareto`].
    Pareto {
        /// Scale, s.
        scale: f64,
        /// Shape.
        shape: f64,
    },
    /// See [`DistSpec::Empirical`]: (quantile in [0, 1], seconds).
    Empirical(Vec<(f64, f64)>),
}

impl Dist {
    /// Validates `spec`.
    pub fn new(spec: &DistSpec) -> Result<Dist, DistError> {
        Ok(match spec {
            DistSpec::Constant(d) => Dist::Constant(*d),
            DistSpec::Uniform { low, high } => {
                if high < low {
                    return err(
                        "high",
                        format!("must be at least low ({low}), found {high}"),
                    );
                }
                Dist::Uniform {
                    low: low.as_nanos(),
                    high: high.as_nanos(),
                }
            }
            DistSpec::Exponential { mean } => {
                if mean.is_zero() {
                    return err(
                        "mean",
                        "must be greater than 0s (use constant: 0s for no delay)",
                    );
                }
                Dist::Exponential {
                    mean: mean.as_secs_f64(),
                }
            }
            DistSpec::Normal { mean, std_dev } => Dist::Normal {
                mean: mean.as_secs_f64(),
                std_dev: std_dev.as_secs_f64(),
            },
            DistSpec::LogNormal {
                median,
                p99,
                mu,
                sigma,
            } => match (median, p99, mu, sigma) {
                (Some(median), Some(p99), None, None) => {
                    if median.is_zero() {
                        return err("median", "must be greater than 0s");
                    }
                    if p99 < median {
                        return err(
                            "p99",
                            format!("must be at least the median ({median}), found {p99}"),
                        );
                    }
                    let mu = median.as_secs_f64().ln();
                    let sigma = (p99.as_secs_f64() / median.as_secs_f64()).ln() / Z99;
                    Dist::LogNormal { mu, sigma }
                }
                (None, None, Some(mu), Some(sigma)) => {
                    if !mu.is_finite() || mu.abs() >= 50.0 {
                        return err(
                            "mu",
                            format!("must be a finite ln-seconds value within ±50, found {mu}"),
                        );
                    }
                    if !sigma.is_finite() || *sigma < 0.0 || *sigma > 10.0 {
                        return err("sigma", format!("must be between 0 and 10, found {sigma}"));
                    }
                    Dist::LogNormal {
                        mu: *mu,
                        sigma: *sigma,
                    }
                }
                _ => {
                    return err(
                        "log_normal",
                        "give either median and p99, or mu and sigma (not a mix)",
                    );
                }
            },
            DistSpec::Pareto { scale, shape } => {
                if scale.is_zero() {
                    return err("scale", "must be greater than 0s");
                }
                if !shape.is_finite() || *shape <= 0.0 {
                    return err("shape", format!("must be a positive number, found {shape}"));
                }
                Dist::Pareto {
                    scale: scale.as_secs_f64(),
                    shape: *shape,
                }
            }
            DistSpec::Empirical { points } => {
                if points.len() < 2 {
                    return err(
                        "points",
                        "needs at least two points, at percentiles 0 and 100",
                    );
                }
                let mut table = Vec::with_capacity(points.len());
                let mut prev: Option<(f64, SimDuration)> = None;
                for (i, &(p, v)) in points.iter().enumerate() {
                    let field = format!("points[{i}]");
                    if !(0.0..=100.0).contains(&p) {
                        return err(
                            &field,
                            format!("percentile must be within 0..=100, found {p}"),
                        );
                    }
                    if let Some((pp, pv)) = prev {
                        if p <= pp {
                            return err(
                                &field,
                                format!("percentiles must increase; {p} follows {pp}"),
                            );
                        }
                        if v < pv {
                            return err(
                                &field,
                                format!("delays must not decrease; {v} follows {pv}"),
                            );
                        }
                    }
                    prev = Some((p, v));
                    table.push((p / 100.0, v.as_secs_f64()));
                }
                if table[0].0 != 0.0 {
                    return err("points[0]", "the first point must be at percentile 0");
                }
                if table[table.len() - 1].0 != 1.0 {
                    return err(
                        &format!("points[{}]", table.len() - 1),
                        "the last point must be at percentile 100",
                    );
                }
                Dist::Empirical(table)
            }
        })
    }

    /// Draws one delay.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> SimDuration {
        match *self {
            Dist::Constant(d) => d,
            Dist::Uniform { low, high } => SimDuration::from_nanos(rng.random_range(low..=high)),
            _ => SimDuration::from_secs_f64(self.sample_secs(rng)),
        }
    }

    /// Draws one delay in seconds (for models that scale it before
    /// converting to [`SimDuration`]).
    pub fn sample_secs<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match *self {
            Dist::Constant(d) => d.as_secs_f64(),
            Dist::Uniform { low, high } => rng.random_range(low..=high) as f64 * 1e-9,
            Dist::Exponential { mean } => {
                // 1 - U lies in (0, 1], so the logarithm is finite.
                let u: f64 = rng.random();
                -mean * (1.0 - u).ln()
            }
            Dist::Normal { mean, std_dev } => {
                // Rejection keeps the shape of the truncated normal; with a
                // non-negative mean at least half the draws are accepted.
                loop {
                    let z: f64 = rng.sample(StandardNormal);
                    let x = mean + std_dev * z;
                    if x >= 0.0 {
                        return x;
                    }
                }
            }
            Dist::LogNormal { mu, sigma } => {
                let z: f64 = rng.sample(StandardNormal);
                (mu + sigma * z).exp()
            }
            Dist::Pareto { scale, shape } => {
                let u: f64 = rng.random();
                scale * (1.0 - u).powf(-1.0 / shape)
            }
            Dist::Empirical(ref table) => {
                let u: f64 = rng.random();
                interpolate(table, u)
            }
        }
    }

    /// The analytic mean in seconds (infinite for Pareto with shape ≤ 1).
    pub fn mean_secs(&self) -> f64 {
        match *self {
            Dist::Constant(d) => d.as_secs_f64(),
            Dist::Uniform { low, high } => (low as f64 + high as f64) * 0.5e-9,
            Dist::Exponential { mean } => mean,
            Dist::Normal { mean, std_dev } => {
                if std_dev == 0.0 {
                    return mean;
                }
                // Mean of a normal truncated to [0, inf).
                let alpha = -mean / std_dev;
                mean + std_dev * std_normal_pdf(alpha) / (1.0 - std_normal_cdf(alpha))
            }
            Dist::LogNormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            Dist::Pareto { scale, shape } => {
                if shape <= 1.0 {
                    f64::INFINITY
                } else {
                    shape * scale / (shape - 1.0)
                }
            }
            Dist::Empirical(ref t) => t
                .windows(2)
                .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
                .sum(),
        }
    }

    /// The analytic quantile `q` in [0, 1], in seconds, where it has a
    /// closed form (all but the truncated normal).
    pub fn quantile_secs(&self, q: f64) -> Option<f64> {
        let q = q.clamp(0.0, 1.0);
        Some(match *self {
            Dist::Constant(d) => d.as_secs_f64(),
            Dist::Uniform { low, high } => (low as f64 + q * (high - low) as f64) * 1e-9,
            Dist::Exponential { mean } => -mean * (1.0 - q).ln(),
            Dist::Normal { .. } => return None,
            Dist::LogNormal { mu, sigma } => (mu + sigma * std_normal_quantile(q)).exp(),
            Dist::Pareto { scale, shape } => scale * (1.0 - q).powf(-1.0 / shape),
            Dist::Empirical(ref t) => interpolate(t, q),
        })
    }

    /// The largest value a draw can take, in seconds, if bounded.
    pub fn max_secs(&self) -> Option<f64> {
        match *self {
            Dist::Constant(d) => Some(d.as_secs_f64()),
            Dist::Uniform { high, .. } => Some(high as f64 * 1e-9),
            Dist::Empirical(ref t) => t.last().map(|p| p.1),
            _ => None,
        }
    }
}

fn interpolate(table: &[(f64, f64)], u: f64) -> f64 {
    let i = table
        .partition_point(|&(q, _)| q <= u)
        .clamp(1, table.len() - 1);
    let (q0, v0) = table[i - 1];
    let (q1, v1) = table[i];
    if q1 <= q0 {
        return v1;
    }
    v0 + (v1 - v0) * ((u - q0) / (q1 - q0)).clamp(0.0, 1.0)
}

/// Standard normal density.
pub fn std_normal_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Standard normal distribution function, via `erfc` (Numerical Recipes'
/// Chebyshev fit, absolute error below 1.2e-7).
pub fn std_normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Standard normal quantile (Acklam's rational approximation, relative
/// error below 1.2e-9).
pub fn std_normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.024_25 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.024_25 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}
