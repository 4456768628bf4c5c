//! Confidence intervals over replications: Student's t for a mean (statrs
//! gives the quantile), Wilson's score interval for a proportion (storms
//! out of seeds), and the median. Each figure reported over several seeds
//! is reported with one of these.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence every interval is given at.
pub const CONFIDENCE: f64 = 0.95;

/// A mean with its two-sided 95 % confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanCi {
    /// The sample mean.
    pub mean: f64,
    /// Lower bound (the mean itself with one sample).
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Samples.
    pub n: usize,
}

impl MeanCi {
    /// `12.3 [11.9, 12.8]`, or the mean alone when there is one sample.
    pub fn show(&self, digits: usize) -> String {
        if self.n < 2 {
            format!("{:.*}", digits, self.mean)
        } else {
            format!(
                "{:.*} [{:.*}, {:.*}]",
                digits, self.mean, digits, self.low, digits, self.high
            )
        }
    }
}

/// The mean of `xs` with a t-based 95 % interval (none for no samples; a
/// zero-width one for a single sample).
pub fn mean_ci(xs: &[f64]) -> Option<MeanCi> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some(MeanCi {
            mean,
            low: mean,
            high: mean,
            n,
        });
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .map(|d| d.inverse_cdf(0.5 + CONFIDENCE / 2.0))
        .unwrap_or(f64::NAN);
    let half = t * (var / n as f64).sqrt();
    Some(MeanCi {
        mean,
        low: mean - half,
        high: mean + half,
        n,
    })
}

/// [`mean_ci`] of a figure that cannot be negative (a rate, a count, a
/// time): when every sample is at least 0, the interval's lower end is
/// cut at 0, where a t interval over a few seeds often reaches below it
/// (an error rate of 0.175 [-0.101, 0.452] over two seeds).
pub fn mean_ci_at_least_zero(xs: &[f64]) -> Option<MeanCi> {
    let mut m = mean_ci(xs)?;
    if xs.iter().all(|&x| x >= 0.0) {
        m.low = m.low.max(0.0);
    }
    Some(m)
}

/// Wilson's 95 % score interval for `k` successes in `n` trials: unlike
/// the normal approximation it stays inside [0, 1] and is not empty at 0
/// or n, which is where a storm probability over a few seeds usually is.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    // The standard normal's 97.5 % quantile.
    let z = 1.959_963_984_540_054_f64;
    let n_f = n as f64;
    let p = k as f64 / n_f;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n_f)) / (1.0 + z2 / n_f);
    let half = z / (1.0 + z2 / n_f) * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The median of `xs` (the mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_matches_the_textbook() {
        // n = 5, mean 3, s = sqrt(2.5); t(0.975, 4) = 2.776.
        let ci = mean_ci(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(ci.mean, 3.0);
        let half = 2.776_445 * (2.5f64 / 5.0).sqrt();
        assert!((ci.high - 3.0 - half).abs() < 1e-4, "{ci:?}");
        assert!((3.0 - ci.low - half).abs() < 1e-4, "{ci:?}");
        assert_eq!(mean_ci(&[]), None);
        assert_eq!(mean_ci(&[7.0]).unwrap().low, 7.0);
    }

    #[test]
    fn a_figure_that_cannot_be_negative_is_cut_at_zero() {
        let wide = mean_ci_at_least_zero(&[0.154, 0.197]).unwrap();
        assert_eq!(wide.low, 0.0);
        assert_eq!(wide.high, mean_ci(&[0.154, 0.197]).unwrap().high);
        // Samples below zero keep the t interval as it is.
        let signed = [-1.0, 2.0, 0.5];
        assert_eq!(mean_ci_at_least_zero(&signed), mean_ci(&signed));
        // A narrow interval above zero is untouched.
        let narrow = [3.0, 3.1, 2.9];
        assert_eq!(mean_ci_at_least_zero(&narrow), mean_ci(&narrow));
    }

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe (1998), table I: 0/10 -> [0, 0.2775]; 1/10 -> [0.0179,
        // 0.4042]; 81/263 -> [0.2553, 0.3662].
        let close =
            |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < 5e-4 && (a.1 - b.1).abs() < 5e-4;
        assert!(close(wilson(0, 10), (0.0, 0.2775)), "{:?}", wilson(0, 10));
        assert!(
            close(wilson(1, 10), (0.0179, 0.4042)),
            "{:?}",
            wilson(1, 10)
        );
        assert!(
            close(wilson(81, 263), (0.2553, 0.3662)),
            "{:?}",
            wilson(81, 263)
        );
        let (lo, hi) = wilson(10, 10);
        assert!(
            (lo - 0.7225).abs() < 5e-4 && (hi - 1.0).abs() < 1e-12,
            "{lo} {hi}"
        );
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
