//! A log-linear histogram of non-negative integers (nanoseconds).

/// Linear sub-buckets per power of two. 64 gives a bucket width of at most
/// 1/64 of its lower bound; reporting the midpoint halves that, so any
/// quantile is within 1/128 = 0.78 % of a value in its bucket.
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Values below this are counted exactly, one bucket each.
const EXACT: u64 = 2 * SUB;
/// Buckets in one octave chunk (storage is allocated a chunk at a time).
const CHUNK: usize = SUB as usize;
const CHUNKS: usize = (EXACT as usize / CHUNK) + (64 - SUB_BITS as usize - 1);

/// Bucket index of `v`.
#[inline]
fn index_of(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let shift = exp - SUB_BITS;
    let mantissa = v >> shift; // in [SUB, 2*SUB)
    (EXACT + u64::from(exp - SUB_BITS - 1) * SUB + (mantissa - SUB)) as usize
}

/// Lowest value and width of bucket `i`.
#[inline]
fn bounds_of(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < EXACT {
        return (i, 1);
    }
    let octave = (i - EXACT) / SUB;
    let mantissa = (i - EXACT) % SUB + SUB;
    let shift = octave + 1;
    (mantissa << shift, 1 << shift)
}

/// Counts of values in log-linear buckets, plus exact count, sum, min and
/// max. Storage grows one octave (64 counters) at a time, only for octaves
/// that see values, so a histogram of latencies around a few seconds costs
/// a few hundred bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    chunks: Vec<Option<Box<[u64; CHUNK]>>>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    /// Adds `n` to bucket `i`, whose octave is not stored yet.
    #[cold]
    fn add_to_new_chunk(&mut self, i: usize, n: u64) {
        let (c, o) = (i / CHUNK, i % CHUNK);
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || None);
        }
        self.chunks[c].get_or_insert_with(|| Box::new([0; CHUNK]))[o] += n;
    }

    /// Records `n` copies of `v`.
    #[inline]
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        let i = index_of(v);
        match self.chunks.get_mut(i / CHUNK) {
            Some(Some(chunk)) => chunk[i % CHUNK] += n,
            _ => self.add_to_new_chunk(i, n),
        }
        if self.count == 0 {
            self.min = v;
            self.max = v;
        } else {
            // Branches, as in a gauge: a new extreme gets rarer with every
            // value recorded, so the branch is predicted and the store
            // skipped.
            if v < self.min {
                self.min = v;
            }
            if v > self.max {
                self.max = v;
            }
        }
        self.count += n;
        self.sum += u128::from(v) * u128::from(n);
    }

    /// Adds every value of `other` (exact: merging then querying equals
    /// querying one histogram that saw both streams).
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        if self.chunks.len() < other.chunks.len() {
            self.chunks.resize_with(other.chunks.len(), || None);
        }
        for (mine, theirs) in self.chunks.iter_mut().zip(&other.chunks) {
            if let Some(theirs) = theirs {
                let mine = mine.get_or_insert_with(|| Box::new([0; CHUNK]));
                for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                    *a += b;
                }
            }
        }
        if self.count == 0 {
            self.min = other.min;
            self.max = other.max;
        } else {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
        self.count += other.count;
        self.sum += other.sum;
    }

    /// Removes the values of `other`, which must all have been recorded
    /// here (a trailing window drops its oldest bucket this way). Min and
    /// max cannot be recovered from counts, so the caller supplies those of
    /// what remains.
    pub(crate) fn remove(&mut self, other: &Histogram, min: u64, max: u64) {
        for (mine, theirs) in self.chunks.iter_mut().zip(&other.chunks) {
            if let (Some(mine), Some(theirs)) = (mine, theirs) {
                for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                    *a -= b;
                }
            }
        }
        self.count -= other.count;
        self.sum -= other.sum;
        (self.min, self.max) = if self.count == 0 { (0, 0) } else { (min, max) };
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// True if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Smallest value recorded (exact), if any.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }
    /// Largest value recorded (exact), if any.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }
    /// Exact mean of the values recorded, if any.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The `q`-quantile (q in [0, 1]) by the nearest-rank rule: the value
    /// of rank `ceil(q · count)`, reported as the midpoint of its bucket and
    /// clamped to the exact min and max;
    /// the top rank is the exact max.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return Some(self.max);
        }
        let mut seen = 0;
        for (c, chunk) in self.chunks.iter().enumerate() {
            let Some(chunk) = chunk else { continue };
            for (o, &n) in chunk.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    let (low, width) = bounds_of(c * CHUNK + o);
                    let mid = low + (width - 1) / 2;
                    return Some(mid.clamp(self.min, self.max));
                }
            }
        }
        Some(self.max)
    }

    /// Removes every value, keeping allocated storage.
    pub fn clear(&mut self) {
        for c in self.chunks.iter_mut().flatten() {
            c.fill(0);
        }
        self.count = 0;
        self.sum = 0;
        self.min = 0;
        self.max = 0;
    }
}

const _: () = assert!(CHUNKS >= 2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_range_without_gaps() {
        let mut next = 0u64;
        for i in 0..index_of(u64::MAX) + 1 {
            let (low, width) = bounds_of(i);
            assert_eq!(low, next, "bucket {i}");
            assert_eq!(index_of(low), i);
            assert_eq!(index_of(low + (width - 1)), i);
            assert!(width == 1 || (width as f64) / (low as f64) <= 1.0 / 64.0 + 1e-12);
            next = low.wrapping_add(width);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
    }

    #[test]
    fn small_values_are_exact_and_extremes_are_kept() {
        let mut h = Histogram::new();
        for v in [0, 1, 7, 127] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.0), Some(0));
        assert_eq!(h.quantile(0.5), Some(1));
        assert_eq!(h.quantile(0.75), Some(7));
        assert_eq!(h.quantile(1.0), Some(127));
        h.record(u64::MAX);
        assert_eq!(h.max(), Some(u64::MAX));
        assert_eq!(h.quantile(1.0), Some(u64::MAX));
        assert_eq!(Histogram::new().quantile(0.5), None);
    }

    /// Values recorded one at a time or in runs leave the same state,
    /// octaves first seen included (the stored octave is the fast path;
    /// a new one is allocated apart).
    #[test]
    fn record_is_record_n_of_one() {
        let (mut one, mut n) = (Histogram::new(), Histogram::new());
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..20_000u64 {
            // Values over the whole range, small ones often.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = if i % 3 == 0 { x % 300 } else { x >> (x % 64) };
            one.record(v);
            n.record_n(v, 1);
            if i % 997 == 0 {
                assert_eq!(one, n, "after {i} values");
            }
        }
        assert_eq!(one, n);
        assert!(
            one.chunks.iter().flatten().count() > 40,
            "many octaves seen"
        );
    }
}
