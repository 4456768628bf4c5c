//! Values per fixed-width bucket of simulated time.

use super::Histogram;
use crate::time::{SimDuration, SimTime};

/// Fixed-width buckets of simulated time: bucket `i` covers
/// `[i·width, (i+1)·width)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buckets {
    width: SimDuration,
}

impl Buckets {
    /// Buckets of `width` (which must not be zero).
    pub fn new(width: SimDuration) -> Self {
        assert!(!width.is_zero(), "bucket width must be positive");
        Buckets { width }
    }
    /// The bucket width.
    pub fn width(&self) -> SimDuration {
        self.width
    }
    /// The bucket holding `t`.
    #[inline]
    pub fn index(&self, t: SimTime) -> usize {
        (t.as_nanos() / self.width.as_nanos()) as usize
    }
    /// The start of bucket `i`.
    pub fn start(&self, i: usize) -> SimTime {
        SimTime::from_nanos((i as u64).saturating_mul(self.width.as_nanos()))
    }
    /// Number of buckets needed to cover `[0, end)`.
    pub fn count_until(&self, end: SimTime) -> usize {
        end.as_nanos().div_ceil(self.width.as_nanos()) as usize
    }
}

impl Default for Buckets {
    /// One-second buckets.
    fn default() -> Self {
        Buckets::new(SimDuration::from_secs(1))
    }
}

/// A count per bucket (arrivals, outcomes by reason, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterSeries {
    counts: Vec<u64>,
}

impl CounterSeries {
    /// An empty series.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds `n` to bucket `i`.
    #[inline]
    pub fn add(&mut self, i: usize, n: u64) {
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += n;
    }
    /// The count of bucket `i` (zero if never touched).
    pub fn get(&self, i: usize) -> u64 {
        self.counts.get(i).copied().unwrap_or(0)
    }
    /// Sum over all buckets.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
    /// Number of buckets touched so far (highest index + 1).
    pub fn len(&self) -> usize {
        self.counts.len()
    }
    /// True if no bucket was touched.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// What a gauge did during one bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GaugeBucket {
    /// Smallest value held during the bucket.
    pub min: i64,
    /// Largest value held during the bucket.
    pub max: i64,
    /// Time-weighted mean over the bucket.
    pub mean: f64,
    /// Value at the end of the bucket.
    pub last: i64,
}

/// A level that changes at instants (pool in use, queue length), summarised
/// per bucket as min, max, time-weighted mean and last value. Only the open
/// bucket is kept: [`Gauge::close`] hands it out and opens the next, so a
/// gauge costs the same memory for a minute as for a day.
///
/// Min and max are over the values *held* for some time in the bucket: a
/// value replaced at the instant it was set (a connection released and
/// taken again in the same event, the level set at time zero) was never a
/// state of the system and does not count.
#[derive(Clone, Debug)]
pub struct Gauge {
    value: i64,
    since: SimTime,
    bucket_start: SimTime,
    /// `i64::MAX` / `i64::MIN` while no value has been held in the bucket.
    min: i64,
    max: i64,
    integral: i128,
}

impl Default for Gauge {
    fn default() -> Self {
        Gauge::new()
    }
}

impl Gauge {
    /// A gauge at zero, its first bucket opening at time zero.
    pub fn new() -> Self {
        Gauge {
            value: 0,
            since: SimTime::ZERO,
            bucket_start: SimTime::ZERO,
            min: i64::MAX,
            max: i64::MIN,
            integral: 0,
        }
    }

    /// The current value.
    #[inline]
    pub fn value(&self) -> i64 {
        self.value
    }

    /// The current value has been held from `self.since` until `t`.
    #[inline]
    fn hold_until(&mut self, t: SimTime) {
        if t > self.since {
            // A span below 2^63 ns (292 years) is an i64: the product is
            // then one widening multiply rather than a full 128-bit one.
            let span = (t - self.since).as_nanos();
            self.integral += match i64::try_from(span) {
                Ok(short) => i128::from(self.value) * i128::from(short),
                Err(_) => i128::from(self.value) * i128::from(span),
            };
            // Branches rather than `min`/`max`: a level seldom sets a new
            // extreme, so the branch is predicted and the store skipped
            // (a compare and a jump each, where `min` loads, compares,
            // moves and stores at every change).
            if self.value < self.min {
                self.min = self.value;
            }
            if self.value > self.max {
                self.max = self.value;
            }
            self.since = t;
        }
    }

    /// Sets the gauge to `value` at `t` (times must not go backwards and
    /// must not pass the end of the open bucket before it is closed).
    #[inline]
    pub fn set(&mut self, t: SimTime, value: i64) {
        // An unchanged value goes on being held: what it adds to the
        // integral and to min/max is counted when it changes or the
        // bucket closes, the same either way.
        if value == self.value {
            return;
        }
        self.hold_until(t);
        self.value = value;
    }

    /// Adds `delta` at `t`.
    #[inline]
    pub fn add(&mut self, t: SimTime, delta: i64) {
        self.set(t, self.value + delta);
    }

    /// Closes the open bucket at `end` and opens the next one at the
    /// current value.
    pub fn close(&mut self, end: SimTime) -> GaugeBucket {
        self.hold_until(end);
        // A bucket of no length holds only its current value.
        let (min, max) = if self.min > self.max {
            (self.value, self.value)
        } else {
            (self.min, self.max)
        };
        let span = end.saturating_since(self.bucket_start).as_nanos().max(1);
        let out = GaugeBucket {
            min,
            max,
            mean: self.integral as f64 / span as f64,
            last: self.value,
        };
        self.bucket_start = end;
        self.min = i64::MAX;
        self.max = i64::MIN;
        self.integral = 0;
        out
    }
}

/// A [`Gauge`] that keeps every closed bucket, for analyses that want the
/// whole series in memory.
#[derive(Clone, Debug)]
pub struct GaugeSeries {
    buckets: Buckets,
    open: Gauge,
    open_index: usize,
    closed: Vec<GaugeBucket>,
}

impl GaugeSeries {
    /// A gauge at zero from time zero.
    pub fn new(buckets: Buckets) -> Self {
        GaugeSeries {
            buckets,
            open: Gauge::new(),
            open_index: 0,
            closed: Vec::new(),
        }
    }

    /// The current value.
    pub fn value(&self) -> i64 {
        self.open.value()
    }

    /// Closes every bucket that ends at or before `t`.
    fn advance(&mut self, t: SimTime) {
        while self.buckets.start(self.open_index + 1) <= t {
            self.open_index += 1;
            let end = self.buckets.start(self.open_index);
            self.closed.push(self.open.close(end));
        }
    }

    /// Sets the gauge to `value` at `t` (times must not go backwards).
    pub fn set(&mut self, t: SimTime, value: i64) {
        self.advance(t);
        self.open.set(t, value);
    }

    /// Adds `delta` to the gauge at `t`.
    pub fn add(&mut self, t: SimTime, delta: i64) {
        self.set(t, self.open.value() + delta);
    }

    /// The buckets covering `[0, end)`, the last one averaged over the part
    /// before `end`. Later calls may pass a later `end`.
    pub fn finish(&mut self, end: SimTime) -> Vec<GaugeBucket> {
        self.advance(end);
        let mut out = self.closed.clone();
        if self.buckets.start(self.open_index) < end {
            out.push(self.open.clone().close(end));
        }
        out
    }
}

/// A histogram per bucket (latency per second, pool wait per second).
#[derive(Clone, Debug, Default)]
pub struct HistogramSeries {
    hists: Vec<Histogram>,
}

impl HistogramSeries {
    /// An empty series.
    pub fn new() -> Self {
        Self::default()
    }
    /// Records `v` in bucket `i`.
    #[inline]
    pub fn record(&mut self, i: usize, v: u64) {
        if self.hists.len() <= i {
            self.hists.resize_with(i + 1, Histogram::new);
        }
        self.hists[i].record(v);
    }
    /// The histogram of bucket `i`, if any value fell in it.
    pub fn get(&self, i: usize) -> Option<&Histogram> {
        self.hists.get(i).filter(|h| !h.is_empty())
    }
    /// All buckets merged.
    pub fn total(&self) -> Histogram {
        let mut all = Histogram::new();
        for h in &self.hists {
            all.merge(h);
        }
        all
    }
    /// Number of buckets touched so far.
    pub fn len(&self) -> usize {
        self.hists.len()
    }
    /// True if no bucket was touched.
    pub fn is_empty(&self) -> bool {
        self.hists.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    #[test]
    fn gauge_keeps_time_weighted_mean_min_max_and_last_per_bucket() {
        let mut g = GaugeSeries::new(Buckets::default());
        g.set(t(250), 4); // 0 for 250 ms, then 4
        g.set(t(750), 2); // 4 for 500 ms, then 2 across the boundary
        g.add(t(2_500), 6); // 2 until 2.5 s, then 8
        let b = g.finish(t(3_000));
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].min, b[0].max, b[0].last), (0, 4, 2));
        assert!((b[0].mean - (0.25 * 0.0 + 0.5 * 4.0 + 0.25 * 2.0)).abs() < 1e-9);
        assert_eq!((b[1].min, b[1].max, b[1].last), (2, 2, 2));
        assert!((b[1].mean - 2.0).abs() < 1e-9);
        assert_eq!((b[2].min, b[2].max, b[2].last), (2, 8, 8));
        assert!((b[2].mean - 5.0).abs() < 1e-9);
        // A partial last bucket averages over the part that elapsed.
        let b = g.finish(t(3_500));
        assert_eq!(b.len(), 4);
        assert!((b[3].mean - 8.0).abs() < 1e-9);
    }

    /// Values replaced at the instant they were set are not levels the
    /// system held: they count in neither min nor max.
    #[test]
    fn gauge_extremes_ignore_values_held_for_no_time() {
        let mut g = Gauge::new();
        g.set(t(0), 8); // the initial 0 is replaced at once
        g.add(t(400), -1); // a connection released...
        g.add(t(400), 1); // ...and taken again in the same instant
        g.set(t(700), 9);
        g.set(t(700), 8);
        let b = g.close(t(1_000));
        assert_eq!((b.min, b.max, b.last), (8, 8, 8));
        assert!((b.mean - 8.0).abs() < 1e-9);
        // A value set exactly at the boundary belongs to the next bucket.
        g.set(t(2_000), 3);
        let b = g.close(t(2_000));
        assert_eq!((b.min, b.max, b.last), (8, 8, 3));
        let b = g.close(t(3_000));
        assert_eq!((b.min, b.max, b.last), (3, 3, 3));
    }

    #[test]
    fn counters_and_histograms_per_bucket() {
        let buckets = Buckets::new(SimDuration::from_millis(100));
        let mut c = CounterSeries::new();
        let mut h = HistogramSeries::new();
        for ms in [5, 50, 150, 399] {
            c.add(buckets.index(t(ms)), 1);
            h.record(buckets.index(t(ms)), ms);
        }
        assert_eq!(
            (c.get(0), c.get(1), c.get(2), c.get(3), c.get(9)),
            (2, 1, 0, 1, 0)
        );
        assert_eq!(c.total(), 4);
        assert_eq!(h.get(0).map(|x| x.count()), Some(2));
        assert!(h.get(2).is_none());
        assert_eq!(h.total().count(), 4);
        assert_eq!(buckets.count_until(t(401)), 5);
    }
}
