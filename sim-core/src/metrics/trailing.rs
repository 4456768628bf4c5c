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
    /// The non-empty histograms of the last `len` pushes, with the number
    /// of the push that brought each: empty buckets (most of them, with
    /// millisecond buckets and light load) cost nothing.
    window: VecDeque<(u64, Histogram)>,
    pushed: u64,
    union: Histogram,
}

impl TrailingHistogram {
    /// A window over the last `len` histograms pushed (at least 1).
    pub fn new(len: usize) -> Self {
        TrailingHistogram {
            len: len.max(1),
            window: VecDeque::new(),
            pushed: 0,
            union: Histogram::new(),
        }
    }

    /// Adds the newest histogram, drops the one `len` pushes old, and
    /// returns the union of the window.
    pub fn push(&mut self, h: &Histogram) -> &Histogram {
        self.pushed += 1;
        if !h.is_empty() {
            self.union.merge(h);
            self.window.push_back((self.pushed, h.clone()));
        }
        let oldest_kept = self.pushed.saturating_sub(self.len as u64 - 1);
        while self.window.front().is_some_and(|(n, _)| *n < oldest_kept) {
            let Some((_, old)) = self.window.pop_front() else {
                break;
            };
            let min = self.window.iter().filter_map(|(_, h)| h.min()).min();
            let max = self.window.iter().filter_map(|(_, h)| h.max()).max();
            self.union.remove(&old, min.unwrap_or(0), max.unwrap_or(0));
        }
        &self.union
    }

    /// The union of the window.
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
