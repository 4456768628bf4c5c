//! A histogram over the last few buckets, the way a dashboard computes
//! `histogram_quantile(0.99, rate(latency_bucket[1m]))`: every value from
//! the trailing window counts once, so a quantile over a minute is not the
//! mean of sixty per-second quantiles.

use std::collections::VecDeque;

use super::Histogram;

/// The union of the last `len` histograms pushed, kept up to date by adding
/// the newest and removing the oldest (exact: counts are integers).
#[derive(Clone, Debug)]
pub struct TrailingHistogram {
    len: usize,
    window: VecDeque<Histogram>,
    union: Histogram,
}

impl TrailingHistogram {
    /// A window of `len` buckets (at least one).
    pub fn new(len: usize) -> Self {
        TrailingHistogram {
            len: len.max(1),
            window: VecDeque::new(),
            union: Histogram::new(),
        }
    }

    /// Adds the newest bucket's histogram, dropping the oldest if the window
    /// is full, and returns the union over the window.
    pub fn push(&mut self, h: &Histogram) -> &Histogram {
        self.union.merge(h);
        self.window.push_back(h.clone());
        if self.window.len() > self.len
            && let Some(old) = self.window.pop_front()
        {
            let present = self.window.iter().filter(|h| !h.is_empty());
            let min = present.clone().filter_map(Histogram::min).min();
            let max = present.filter_map(Histogram::max).max();
            self.union.remove(&old, min.unwrap_or(0), max.unwrap_or(0));
        }
        &self.union
    }

    /// The union over the window.
    pub fn union(&self) -> &Histogram {
        &self.union
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The rolling union equals a histogram rebuilt from the window's raw
    /// values, bucket for bucket and in every quantile, min and max.
    #[test]
    fn equals_a_histogram_of_the_window() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let buckets: Vec<Vec<u64>> = (0..50)
            .map(|i| {
                let n = if i % 7 == 3 {
                    0
                } else {
                    rng.random_range(0..40)
                };
                (0..n)
                    .map(|_| rng.random_range(0..(1u64 << (10 + i % 20))))
                    .collect()
            })
            .collect();
        let mut t = TrailingHistogram::new(6);
        for (i, _) in buckets.iter().enumerate() {
            let mut h = Histogram::new();
            buckets[i].iter().for_each(|&v| h.record(v));
            let got = t.push(&h).clone();
            let mut want = Histogram::new();
            for b in &buckets[i.saturating_sub(5)..=i] {
                b.iter().for_each(|&v| want.record(v));
            }
            assert_eq!(got.count(), want.count(), "bucket {i}");
            assert_eq!(
                (got.min(), got.max()),
                (want.min(), want.max()),
                "bucket {i}"
            );
            for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
                assert_eq!(got.quantile(q), want.quantile(q), "bucket {i} q {q}");
            }
            assert_eq!(got.mean(), want.mean());
        }
    }
}
