//! Metrics: latency histograms and time-bucketed series.
//!
//! [`Histogram`] is log-linear (HdrHistogram-style) with a relative error of
//! at most 0.79 % from 128 ns up to the full `u64` range (so well within 1 %
//! over 1 µs to 1 h), and merges exactly. [`Buckets`] cuts simulated time
//! into fixed-width buckets (1 s by default); [`CounterSeries`],
//! [`GaugeSeries`] and [`HistogramSeries`] keep one value per bucket, and
//! [`TrailingHistogram`] the union of the last few.

mod histogram;
mod series;
mod trailing;

pub use histogram::Histogram;
pub use series::{Buckets, CounterSeries, Gauge, GaugeBucket, GaugeSeries, HistogramSeries};
pub use trailing::TrailingHistogram;
