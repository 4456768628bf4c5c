//! How long to wait before retry *n*: a base schedule (fixed, linear,
//! exponential with a cap) and a jitter that randomises it.
//!
//! With `v_n` the base delay before retry `n` (n = 1 is the first retry):
//!
//! | jitter | delay |
//! |---|---|
//! | `none` | `v_n` |
//! | `full` (AWS, Envoy in whole milliseconds) | `U(0, v_n)` |
//! | `equal` | `v_n/2 + U(0, v_n/2)` |
//! | `decorrelated` (Brooker) | `s_n = min(cap, U(base, 3·s_{n−1}))`, `s_0 = base` |
//! | `proportional: r` (Resilience4j, gRPC A6's ±20 %, the 14:02 fix's ±25 %) | `U(v_n(1−r), v_n(1+r))` |
//! | `additive: a` (Google Cloud) | `min(v_n + U(0, a), cap)` |
//! | `polly_v2` (Polly's DecorrelatedJitterBackoffV2) | see [`polly_v2`] |
//!
//! State is per request: decorrelated and Polly jitter remember the
//! previous draw of *this* request only ([`BackoffState`]).

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};
use sim_core::time::SimDuration;

/// The base schedule.
#[derive(Clone, Debug, PartialEq)]
pub enum BackoffKind {
    /// `delay` before every retry.
    Fixed {
        /// The delay.
        delay: SimDuration,
    },
    /// `base × n` before retry `n`, capped.
    Linear {
        /// Delay before the first retry, and the step.
        base: SimDuration,
        /// Largest delay.
        cap: Option<SimDuration>,
    },
    /// `base × multiplier^(n−1)` before retry `n`, capped.
    Exponential {
        /// Delay before the first retry.
        base: SimDuration,
        /// Growth per retry.
        multiplier: f64,
        /// Largest delay.
        cap: Option<SimDuration>,
    },
    /// Envoy's router (`JitteredExponentialBackOffStrategy`): a window
    /// of `base × 2^(n−1)` before retry `n`, capped at `max` (default
    /// 10 × base): 25, 50, 100, 200, 250 ms with Envoy's 25 ms. Envoy's
    /// router documentation gives `(2^n − 1) × base` (25, 75, 175 ms), the
    /// formula of its first implementation; its code and tests have
    /// doubled the window since, and the code is what runs. Fully
    /// jittered, it draws a whole number of milliseconds below the window
    /// (`random() % window`), as Envoy does.
    Envoy {
        /// Envoy's `base_interval` (default 25 ms).
        base: SimDuration,
        /// Envoy's `max_interval`.
        max: SimDuration,
    },
}

/// The config form: the schedule is the key, its jitter a field inside:
///
/// ```yaml
/// backoff: { fixed: { delay: 1s } }
/// backoff: { linear: { base: 500ms, cap: 5s, jitter: full } }
/// backoff: { exponential: { base: 1s, multiplier: 2, cap: 16s, jitter: { proportional: 0.25 } } }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum BackoffSpec {
    Fixed {
        delay: SimDuration,
        #[serde(default = "no_jitter")]
        jitter: Jitter,
    },
    Linear {
        base: SimDuration,
        #[serde(default)]
        cap: Option<SimDuration>,
        #[serde(default = "no_jitter")]
        jitter: Jitter,
    },
    Exponential {
        base: SimDuration,
        #[serde(default = "two")]
        multiplier: f64,
        #[serde(default)]
        cap: Option<SimDuration>,
        #[serde(default = "no_jitter")]
        jitter: Jitter,
    },
    Envoy {
        #[serde(default = "envoy_base")]
        base: SimDuration,
        #[serde(default)]
        max: Option<SimDuration>,
        #[serde(default = "full_jitter")]
        jitter: Jitter,
    },
}

fn envoy_base() -> SimDuration {
    SimDuration::from_millis(25)
}
fn full_jitter() -> Jitter {
    Jitter::Full
}

fn two() -> f64 {
    2.0
}

impl From<BackoffSpec> for Backoff {
    fn from(s: BackoffSpec) -> Backoff {
        match s {
            BackoffSpec::Fixed { delay, jitter } => Backoff {
                kind: BackoffKind::Fixed { delay },
                jitter,
            },
            BackoffSpec::Linear { base, cap, jitter } => Backoff {
                kind: BackoffKind::Linear { base, cap },
                jitter,
            },
            BackoffSpec::Exponential {
                base,
                multiplier,
                cap,
                jitter,
            } => Backoff {
                kind: BackoffKind::Exponential {
                    base,
                    multiplier,
                    cap,
                },
                jitter,
            },
            BackoffSpec::Envoy { base, max, jitter } => Backoff {
                kind: BackoffKind::Envoy {
                    base,
                    max: max.unwrap_or(base.saturating_mul(10)),
                },
                jitter,
            },
        }
    }
}

impl From<Backoff> for BackoffSpec {
    fn from(b: Backoff) -> BackoffSpec {
        let jitter = b.jitter;
        match b.kind {
            BackoffKind::Fixed { delay } => BackoffSpec::Fixed { delay, jitter },
            BackoffKind::Linear { base, cap } => BackoffSpec::Linear { base, cap, jitter },
            BackoffKind::Exponential {
                base,
                multiplier,
                cap,
            } => BackoffSpec::Exponential {
                base,
                multiplier,
                cap,
                jitter,
            },
            BackoffKind::Envoy { base, max } => BackoffSpec::Envoy {
                base,
                max: Some(max),
                jitter,
            },
        }
    }
}

/// How the base delay is randomised.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Jitter {
    /// No randomness.
    None,
    /// `U(0, v)`.
    Full,
    /// `v/2 + U(0, v/2)`.
    Equal,
    /// Brooker's decorrelated jitter, `min(cap, U(base, 3·prev))`.
    Decorrelated,
    /// `U(v(1−r), v(1+r))`, `r` in [0, 1].
    Proportional(f64),
    /// `min(v + U(0, a), cap)`.
    Additive(SimDuration),
    /// Polly v8's DecorrelatedJitterBackoffV2 (retry *times* have medians
    /// near `base·2^(n−1)`).
    PollyV2,
}

/// A complete backoff: schedule plus jitter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "BackoffSpec", into = "BackoffSpec")]
pub struct Backoff {
    /// The base schedule.
    pub kind: BackoffKind,
    /// The jitter.
    pub jitter: Jitter,
}

fn no_jitter() -> Jitter {
    Jitter::None
}

/// Per-request memory of the previous delay (for decorrelated jitters).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BackoffState {
    prev_secs: f64,
}

/// A retry number as a power's exponent: past 4096 every growing backoff
/// has long reached infinity (then its cap), so larger numbers change
/// nothing, and the conversion never wraps.
fn exponent(n: u32) -> i32 {
    n.min(4096) as i32
}

impl Backoff {
    /// A fixed delay without jitter.
    pub fn fixed(delay: SimDuration) -> Self {
        Backoff {
            kind: BackoffKind::Fixed { delay },
            jitter: Jitter::None,
        }
    }

    /// An exponential schedule.
    pub fn exponential(
        base: SimDuration,
        multiplier: f64,
        cap: Option<SimDuration>,
        jitter: Jitter,
    ) -> Self {
        Backoff {
            kind: BackoffKind::Exponential {
                base,
                multiplier,
                cap,
            },
            jitter,
        }
    }

    /// The first delay of the schedule.
    pub fn base(&self) -> SimDuration {
        match self.kind {
            BackoffKind::Fixed { delay } => delay,
            BackoffKind::Linear { base, .. }
            | BackoffKind::Exponential { base, .. }
            | BackoffKind::Envoy { base, .. } => base,
        }
    }

    /// The cap, if any (a fixed schedule is its own cap).
    pub fn cap(&self) -> Option<SimDuration> {
        match self.kind {
            BackoffKind::Fixed { delay } => Some(delay),
            BackoffKind::Linear { cap, .. } | BackoffKind::Exponential { cap, .. } => cap,
            BackoffKind::Envoy { max, .. } => Some(max),
        }
    }

    /// The un-jittered delay before retry `n` (n ≥ 1), in seconds.
    pub fn base_secs(&self, n: u32) -> f64 {
        let n = n.max(1);
        let (v, cap) = match self.kind {
            BackoffKind::Fixed { delay } => (delay.as_secs_f64(), None),
            BackoffKind::Linear { base, cap } => (base.as_secs_f64() * f64::from(n), cap),
            BackoffKind::Exponential {
                base,
                multiplier,
                cap,
            } => (base.as_secs_f64() * multiplier.powi(exponent(n) - 1), cap),
            BackoffKind::Envoy { base, max } => {
                (base.as_secs_f64() * 2f64.powi(exponent(n) - 1), Some(max))
            }
        };
        cap.map_or(v, |c| v.min(c.as_secs_f64()))
    }

    /// The largest delay retry `n` can draw, in seconds (for worst-case
    /// analysis).
    pub fn max_secs(&self, n: u32) -> f64 {
        let v = self.base_secs(n);
        let cap = self.cap().map(SimDuration::as_secs_f64);
        match self.jitter {
            Jitter::None | Jitter::Full | Jitter::Equal => v,
            Jitter::Proportional(r) => v * (1.0 + r),
            Jitter::Additive(a) => {
                let m = v + a.as_secs_f64();
                cap.map_or(m, |c| m.min(c))
            }
            Jitter::Decorrelated => {
                // s_n ≤ base·3^n, and never above the cap.
                let m = self.base().as_secs_f64() * 3f64.powi(exponent(n));
                cap.map_or(m, |c| m.min(c))
            }
            Jitter::PollyV2 => {
                // t ≤ n + 1 gives next − prev ≤ 2^(n+1)·tanh(√(4(n+1))).
                let t = f64::from(n) + 1.0;
                2f64.powf(t) * (4.0 * t).sqrt().tanh() / 1.4 * self.base().as_secs_f64()
            }
        }
    }

    /// Checks the parameters; `Err` names the field.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if let BackoffKind::Exponential { multiplier, .. } = self.kind
            && (!multiplier.is_finite() || multiplier < 1.0)
        {
            return Err((
                "multiplier".into(),
                format!("must be at least 1, found {multiplier}"),
            ));
        }
        if let Jitter::Proportional(r) = self.jitter
            && !(0.0..=1.0).contains(&r)
        {
            return Err((
                "jitter.proportional".into(),
                format!("must be between 0 and 1, found {r}"),
            ));
        }
        // A cap below the first delay makes every delay the cap: a fixed
        // backoff written as another kind, most likely a slip.
        let capped = match self.kind {
            BackoffKind::Linear {
                base,
                cap: Some(cap),
            } => Some(("linear.cap", base, cap)),
            BackoffKind::Exponential {
                base,
                cap: Some(cap),
                ..
            } => Some(("exponential.cap", base, cap)),
            BackoffKind::Envoy { base, max } => Some(("envoy.max", base, max)),
            _ => None,
        };
        if let Some((field, base, cap)) = capped
            && cap < base
        {
            return Err((
                field.into(),
                format!("{cap} is below the base ({base}): every delay would be the cap"),
            ));
        }
        if matches!(self.jitter, Jitter::Decorrelated) && self.base().is_zero() {
            return Err((
                "base".into(),
                "decorrelated jitter needs a base above 0s".into(),
            ));
        }
        Ok(())
    }

    /// The delay before retry `n` (n ≥ 1) of a request whose earlier
    /// delays are remembered in `state`.
    pub fn delay<R: Rng + ?Sized>(
        &self,
        n: u32,
        state: &mut BackoffState,
        rng: &mut R,
    ) -> SimDuration {
        let v = self.base_secs(n);
        if let (BackoffKind::Envoy { .. }, Jitter::Full) = (&self.kind, self.jitter) {
            // `random() % window` over whole milliseconds (a window of at
            // least 1, as Envoy rounds a shorter base up): 0 to window − 1
            // ms, each as likely.
            let window_ms = (v * 1e3).round().max(1.0);
            return SimDuration::from_millis((rng.random::<f64>() * window_ms) as u64);
        }
        let cap = self.cap().map(SimDuration::as_secs_f64);
        let secs = match self.jitter {
            Jitter::None => v,
            Jitter::Full => rng.random::<f64>() * v,
            Jitter::Equal => v / 2.0 + rng.random::<f64>() * v / 2.0,
            Jitter::Proportional(r) => v * (1.0 - r) + rng.random::<f64>() * 2.0 * r * v,
            Jitter::Additive(a) => {
                let d = v + rng.random::<f64>() * a.as_secs_f64();
                cap.map_or(d, |c| d.min(c))
            }
            Jitter::Decorrelated => {
                let base = self.base().as_secs_f64();
                let prev = if n <= 1 || state.prev_secs == 0.0 {
                    base
                } else {
                    state.prev_secs
                };
                let hi = 3.0 * prev;
                let d = base + rng.random::<f64>() * (hi - base).max(0.0);
                let d = cap.map_or(d, |c| d.min(c));
                state.prev_secs = d;
                d
            }
            Jitter::PollyV2 => {
                let (d, prev) = polly_v2(
                    n,
                    state.prev_secs,
                    self.base().as_secs_f64(),
                    rng.random::<f64>(),
                );
                state.prev_secs = prev;
                cap.map_or(d, |c| d.min(c))
            }
        };
        SimDuration::from_secs_f64(secs)
    }
}

/// Polly v8's DecorrelatedJitterBackoffV2 (George Polevoy), as in
/// `Polly.Core/Retry/RetryHelper.cs`: with `t = (n − 1) + u` (Polly counts
/// attempts from 0), `next = 2^t · tanh(√(4t))`, the delay is
/// `(next − prev) / 1.4 · base` and `next` becomes `prev`. Returns the
/// delay in seconds and the new `prev`.
pub fn polly_v2(n: u32, prev: f64, base_secs: f64, u: f64) -> (f64, f64) {
    const P_FACTOR: f64 = 4.0;
    const RP_SCALING: f64 = 1.0 / 1.4;
    let t = f64::from(n.max(1) - 1) + u;
    let next = 2f64.powf(t) * (P_FACTOR * t).sqrt().tanh();
    let d = ((next - prev) * RP_SCALING * base_secs).max(0.0);
    (d, next)
}

#[cfg(test)]
mod tests {
    use sim_core::rng::RngStreams;

    use super::*;

    const N: usize = 100_000;

    fn s(v: f64) -> SimDuration {
        SimDuration::from_secs_f64(v)
    }

    /// Draws N delays for retry `n` (fresh state each, or chained for the
    /// decorrelated recurrence).
    fn draws(b: &Backoff, n: u32) -> Vec<f64> {
        let mut rng = RngStreams::new(5).stream("backoff-test");
        (0..N)
            .map(|_| {
                let mut st = BackoffState::default();
                for k in 1..n {
                    b.delay(k, &mut st, &mut rng);
                }
                b.delay(n, &mut st, &mut rng).as_secs_f64()
            })
            .collect()
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    // Uniform draws over a span w have standard deviation w/√12; over
    // 10^5 draws the mean's standard error is w/1,095: the 1 % tolerance
    // below is at least 10 standard errors for every case.
    fn close(what: &str, got: f64, want: f64) {
        assert!((got - want).abs() <= 0.01 * want, "{what}: {got} vs {want}");
    }

    #[test]
    fn schedules_grow_and_cap() {
        let e = Backoff::exponential(s(1.0), 2.0, Some(s(16.0)), Jitter::None);
        let got: Vec<f64> = (1..=6).map(|n| e.base_secs(n)).collect();
        assert_eq!(got, [1.0, 2.0, 4.0, 8.0, 16.0, 16.0]);
        let l = Backoff {
            kind: BackoffKind::Linear {
                base: s(0.5),
                cap: Some(s(1.2)),
            },
            jitter: Jitter::None,
        };
        assert_eq!(
            (1..=3).map(|n| l.base_secs(n)).collect::<Vec<_>>(),
            [0.5, 1.0, 1.2]
        );
        assert_eq!(Backoff::fixed(s(1.0)).base_secs(7), 1.0);
    }

    #[test]
    fn full_jitter_is_uniform_below_the_schedule() {
        let b = Backoff::exponential(s(0.1), 2.0, Some(s(1.0)), Jitter::Full);
        for (n, v) in [(1, 0.1), (3, 0.4), (6, 1.0)] {
            let d = draws(&b, n);
            close("mean", mean(&d), v / 2.0);
            assert!(d.iter().all(|&x| (0.0..=v).contains(&x)));
        }
    }

    #[test]
    fn envoy_backoff_doubles_its_window_and_draws_whole_milliseconds() {
        // Envoy's `ExponentialBackOffStrategyTest.JitteredBackOffWithMaxInterval`:
        // base 5 ms, max 100 ms, `random()` = 9999 gives 4, 9, 19, 39, 79,
        // 99, 99: 9999 modulo windows of 5, 10, 20, 40, 80, 100, 100 ms.
        let b = Backoff {
            kind: BackoffKind::Envoy {
                base: s(0.005),
                max: s(0.1),
            },
            jitter: Jitter::Full,
        };
        let windows: Vec<f64> = (1..=7).map(|n| b.base_secs(n) * 1e3).collect();
        assert_eq!(windows, [5.0, 10.0, 20.0, 40.0, 80.0, 100.0, 100.0]);
        // Drawn with the 25 ms default: whole milliseconds 0 to 24, 0 to
        // 49, 0 to 99, 0 to 199, then 0 to 249 (max 250 ms); the mean of
        // 0..w−1 ms is (w − 1)/2 ms.
        let b = Backoff {
            kind: BackoffKind::Envoy {
                base: s(0.025),
                max: s(0.25),
            },
            jitter: Jitter::Full,
        };
        for (n, w) in [(1, 25.0), (2, 50.0), (3, 100.0), (4, 200.0), (5, 250.0)] {
            let d = draws(&b, n);
            assert!(d.iter().all(|&x| x * 1e3 <= w - 1.0 + 1e-9), "retry {n}");
            assert!(
                d.iter()
                    .all(|&x| ((x * 1e3).round() - x * 1e3).abs() < 1e-6),
                "retry {n}: whole milliseconds"
            );
            close("mean", mean(&d) * 1e3, (w - 1.0) / 2.0);
        }
    }

    #[test]
    fn equal_jitter_keeps_half() {
        let b = Backoff::exponential(s(1.0), 2.0, None, Jitter::Equal);
        let d = draws(&b, 3); // v = 4
        close("mean", mean(&d), 3.0);
        assert!(d.iter().all(|&x| (2.0..=4.0).contains(&x)));
    }

    #[test]
    fn proportional_jitter_spreads_plus_minus_r() {
        // The 14:02 fix: 1 s, ±25 % → the first retry waits 0.75–1.25 s.
        let b = Backoff::exponential(s(1.0), 2.0, Some(s(16.0)), Jitter::Proportional(0.25));
        let d = draws(&b, 1);
        close("mean", mean(&d), 1.0);
        assert!(d.iter().all(|&x| (0.75..=1.25).contains(&x)));
        let d = draws(&b, 3);
        assert!(d.iter().all(|&x| (3.0..=5.0).contains(&x)));
    }

    #[test]
    fn additive_jitter_adds_up_to_a_and_respects_the_cap() {
        let b = Backoff::exponential(s(1.0), 2.0, Some(s(32.0)), Jitter::Additive(s(1.0)));
        let d = draws(&b, 2); // 2 + U(0, 1)
        close("mean", mean(&d), 2.5);
        assert!(d.iter().all(|&x| (2.0..=3.0).contains(&x)));
        let d = draws(&b, 7); // 64 capped: min(32 + U, 32) = 32
        assert!(d.iter().all(|&x| x == 32.0));
    }

    #[test]
    fn decorrelated_jitter_follows_its_recurrence() {
        // s_1 = U(base, 3·base): mean 2·base; then s_n = U(base, 3·s_{n−1}),
        // so E[s_n] = (base + 3·E[s_{n−1}]) / 2 while under the cap.
        let base = 0.1;
        let b = Backoff::exponential(s(base), 2.0, Some(s(100.0)), Jitter::Decorrelated);
        let mut expected = base;
        for n in 1..=4 {
            expected = (base + 3.0 * expected) / 2.0;
            let d = draws(&b, n);
            close(&format!("E[s_{n}]"), mean(&d), expected);
            assert!(d.iter().all(|&x| x >= base));
        }
        // State is per request: a fresh state restarts from base.
        let mut st = BackoffState::default();
        let mut rng = RngStreams::new(1).stream("x");
        assert!(b.delay(1, &mut st, &mut rng).as_secs_f64() <= 3.0 * base);
        // Near the cap the draw is clipped, never above it.
        let capped = Backoff::exponential(s(1.0), 2.0, Some(s(2.0)), Jitter::Decorrelated);
        assert!(draws(&capped, 5).iter().all(|&x| x <= 2.0));
    }

    #[test]
    fn polly_v2_retry_times_have_medians_near_powers_of_two() {
        // Polly scales the formula so that the *times* of the retries (the
        // sum of the delays so far, next/1.4·base) have medians near 1, 2,
        // 4, 8 × base; the delays themselves are their differences.
        let b = Backoff::exponential(s(1.0), 2.0, None, Jitter::PollyV2);
        let mut rng = RngStreams::new(5).stream("polly");
        for (n, median) in [(1u32, 1.0), (2, 2.0), (3, 4.0), (4, 8.0)] {
            let mut times: Vec<f64> = (0..N / 10)
                .map(|_| {
                    let mut st = BackoffState::default();
                    (1..=n)
                        .map(|k| b.delay(k, &mut st, &mut rng).as_secs_f64())
                        .sum()
                })
                .collect();
            times.sort_by(f64::total_cmp);
            let m = times[times.len() / 2];
            assert!(
                (m - median).abs() < 0.15 * median,
                "retry {n}: median time {m}"
            );
        }
        // The formula itself, at fixed points.
        let (d, prev) = polly_v2(1, 0.0, 1.0, 0.5);
        let t: f64 = 0.5;
        let next = 2f64.powf(t) * (4.0 * t).sqrt().tanh();
        assert!((prev - next).abs() < 1e-12 && (d - next / 1.4).abs() < 1e-12);
    }

    #[test]
    fn worst_case_bounds_every_draw() {
        for jitter in [
            Jitter::None,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::Proportional(0.5),
            Jitter::Additive(s(0.3)),
            Jitter::PollyV2,
        ] {
            let b = Backoff::exponential(s(0.2), 2.0, Some(s(5.0)), jitter);
            for n in 1..=5 {
                let max = b.max_secs(n);
                assert!(
                    draws(&b, n).iter().take(2_000).all(|&x| x <= max + 1e-9),
                    "{jitter:?} retry {n}"
                );
            }
        }
    }
}
