//! Client-side throttling: the client sheds its own attempts when the
//! backend is rejecting them.
//!
//! * [`SreThrottle`]: Google SRE's adaptive throttling. Over a trailing
//!   window the client counts `requests` (attempts, locally rejected ones
//!   included) and `accepts`; it rejects an attempt locally with
//!   probability `max(0, (requests − K·accepts) / (requests + 1))`.
//! * [`AwsAdaptive`]: the AWS SDKs' adaptive mode. A token bucket, off
//!   until the first throttling answer, whose rate follows CUBIC: cut to
//!   β = 0.7 of the current rate on a throttle, then grow as
//!   `C·(t − t_throttle − K)³ + W_max` (C = 0.4), capped at twice the
//!   measured send rate. A send waits for a token. Every attempt's end
//!   but a cancellation is heard (botocore's `needs-retry`), and the
//!   SDKs' shared specification's cases are its tests.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use sim_core::time::{SimDuration, SimTime};

/// Which throttle, as written in config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ThrottleSpec {
    /// Google SRE adaptive throttling.
    Sre {
        /// Multiplier K on accepts (default 2; lower is more aggressive).
        #[serde(default = "two")]
        k: f64,
        /// Trailing window (default 2 min).
        #[serde(default = "two_minutes")]
        window: SimDuration,
    },
    /// AWS SDK adaptive retry mode's client rate limiter.
    AwsAdaptive,
}

fn two() -> f64 {
    2.0
}
fn two_minutes() -> SimDuration {
    SimDuration::from_secs(120)
}

impl ThrottleSpec {
    /// Checks the parameters: `Err((field, message))`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if let ThrottleSpec::Sre { k, window } = self {
            if !(*k >= 1.0 && k.is_finite()) {
                return Err(("sre.k".into(), format!("must be at least 1, found {k}")));
            }
            if window.is_zero() {
                return Err(("sre.window".into(), "must be longer than 0s".into()));
            }
        }
        Ok(())
    }
}

/// Google SRE client-side adaptive throttling.
#[derive(Clone, Debug)]
pub struct SreThrottle {
    k: f64,
    window: SimDuration,
    requests: VecDeque<SimTime>,
    accepts: VecDeque<SimTime>,
}

impl SreThrottle {
    /// An idle throttle.
    pub fn new(k: f64, window: SimDuration) -> Self {
        SreThrottle {
            k,
            window,
            requests: VecDeque::new(),
            accepts: VecDeque::new(),
        }
    }

    fn expire(&mut self, now: SimTime) {
        for q in [&mut self.requests, &mut self.accepts] {
            while q
                .front()
                .is_some_and(|&t| now.saturating_since(t) >= self.window)
            {
                q.pop_front();
            }
        }
    }

    /// The local rejection probability now.
    pub fn reject_probability(&mut self, now: SimTime) -> f64 {
        self.expire(now);
        let r = self.requests.len() as f64;
        let a = self.accepts.len() as f64;
        ((r - self.k * a) / (r + 1.0)).max(0.0)
    }

    /// An attempt is about to go; `u` is a uniform draw. Returns false if
    /// it is rejected locally. Either way it counts as a request.
    pub fn admit(&mut self, now: SimTime, u: f64) -> bool {
        let p = self.reject_probability(now);
        self.requests.push_back(now);
        u >= p
    }

    /// The backend accepted an attempt (answered anything but overload).
    pub fn accepted(&mut self, now: SimTime) {
        self.expire(now);
        self.accepts.push_back(now);
    }
}

const BETA: f64 = 0.7;
const SCALE_C: f64 = 0.4;
const SMOOTH: f64 = 0.8;
const MIN_FILL_RATE: f64 = 0.5;
const MIN_CAPACITY: f64 = 1.0;
const MEASURE_BUCKET_SECS: f64 = 0.5;

/// The AWS adaptive-mode rate limiter (botocore `adaptive.py`,
/// `bucket.py`, `throttling.py`), from its creation: the send rate is
/// measured in half-second buckets from the whole second it was made in,
/// the CUBIC curve starts then (`W_max` 0), and the token bucket starts
/// empty at a rate of 1. Every answer sets the bucket's rate, on or off
/// (the bucket first filled at its old rate, its tokens then cut to the
/// new capacity), so the first throttle finds what the bucket gathered
/// while off, as botocore's does.
#[derive(Clone, Debug)]
pub struct AwsAdaptive {
    enabled: bool,
    // Token bucket.
    max_rate: f64,
    tokens: f64,
    last_refill: SimTime,
    // CUBIC.
    w_max: f64,
    last_throttle: SimTime,
    // Send-rate measurement: EWMA over 0.5 s buckets.
    measured: f64,
    bucket_start: f64,
    bucket_count: f64,
}

impl AwsAdaptive {
    /// A limiter made `now`, off until its first throttle.
    pub fn new(now: SimTime) -> Self {
        AwsAdaptive {
            enabled: false,
            max_rate: 1.0,
            tokens: 0.0,
            last_refill: now,
            w_max: 0.0,
            last_throttle: now,
            measured: 0.0,
            bucket_start: now.as_secs_f64().floor(),
            bucket_count: 0.0,
        }
    }

    /// The bucket's rate now (requests per second); 0 while disabled.
    pub fn rate(&self) -> f64 {
        if self.enabled { self.max_rate } else { 0.0 }
    }

    /// The rate the bucket fills at (botocore's `_fill_rate`).
    fn fill_rate(&self) -> f64 {
        self.max_rate.max(MIN_FILL_RATE)
    }

    /// The tokens the bucket holds at most.
    fn capacity(&self) -> f64 {
        self.max_rate.max(MIN_CAPACITY)
    }

    fn refill(&mut self, now: SimTime) {
        let dt = now.saturating_since(self.last_refill).as_secs_f64();
        self.tokens = (self.tokens + dt * self.fill_rate()).min(self.capacity());
        self.last_refill = now;
    }

    /// A send wants to go now: how long it must wait for a token (zero
    /// when the limiter is off or a token is there). The token is taken.
    pub fn acquire(&mut self, now: SimTime) -> SimDuration {
        if !self.enabled {
            return SimDuration::ZERO;
        }
        self.refill(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            SimDuration::ZERO
        } else {
            SimDuration::from_secs_f64(-self.tokens / self.fill_rate())
        }
    }

    fn measure(&mut self, now: SimTime) -> f64 {
        let t = now.as_secs_f64();
        let bucket = (t / MEASURE_BUCKET_SECS).floor() * MEASURE_BUCKET_SECS;
        self.bucket_count += 1.0;
        if bucket > self.bucket_start {
            let rate = self.bucket_count / (bucket - self.bucket_start);
            self.measured = rate * SMOOTH + self.measured * (1.0 - SMOOTH);
            self.bucket_count = 0.0;
            self.bucket_start = bucket;
        }
        self.measured
    }

    /// An answer came back; `throttled` for a throttling error (429).
    pub fn on_response(&mut self, now: SimTime, throttled: bool) {
        let measured = self.measure(now);
        let new_rate = if throttled {
            let rate_to_use = if self.enabled {
                measured.min(self.max_rate)
            } else {
                measured
            };
            self.w_max = rate_to_use;
            self.last_throttle = now;
            self.enabled = true;
            rate_to_use * BETA
        } else {
            let k = (self.w_max * (1.0 - BETA) / SCALE_C).cbrt();
            let dt = now.saturating_since(self.last_throttle).as_secs_f64();
            SCALE_C * (dt - k).powi(3) + self.w_max
        };
        self.refill(now);
        self.max_rate = new_rate.min(2.0 * measured);
        self.tokens = self.tokens.min(self.capacity());
    }
}

#[cfg(test)]
mod tests {
    use rand::RngExt;
    use sim_core::rng::RngStreams;

    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    #[test]
    fn sre_throttle_lets_about_k_attempts_reach_the_backend_per_accept() {
        // Clients try 100 attempts/s; the backend accepts 20 per second and
        // rejects the rest. With K = 2 the throttle settles where its
        // window of 120 s holds 12,000 requests and 2,400 accepts:
        // p = (12,000 − 2·2,400)/12,001 ≈ 0.59995, so about 40.0
        // attempts/s reach the backend, two per accept ("one rejected per
        // accepted"); this run's 300 s, 12,125 of them (1.5 standard
        // errors over).
        let mut th = SreThrottle::new(2.0, SimDuration::from_secs(120));
        let mut rng = RngStreams::new(8).stream("sre");
        let (mut sent, mut accepted) = (0u32, 0u32);
        let mut capacity_left = 0;
        for i in 0..60_000u64 {
            let now = t(i * 10);
            if i % 100 == 0 {
                capacity_left = 20;
            }
            if th.admit(now, rng.random()) {
                let ok = capacity_left > 0;
                capacity_left -= u32::from(ok);
                if i >= 30_000 {
                    sent += 1;
                    accepted += u32::from(ok);
                }
                if ok {
                    th.accepted(now);
                }
            }
        }
        let per_sec = f64::from(sent) / 300.0;
        assert!(
            (per_sec - 40.0).abs() < 1.0,
            "attempts reaching the backend {per_sec}/s"
        );
        assert!((f64::from(accepted) / 300.0 - 20.0).abs() < 0.5);
    }

    #[test]
    fn sre_throttle_stays_open_when_all_is_accepted() {
        let mut th = SreThrottle::new(2.0, SimDuration::from_secs(120));
        for i in 0..1_000 {
            assert!(th.admit(t(i), 0.0));
            th.accepted(t(i));
        }
        assert_eq!(th.reject_probability(t(1_000)), 0.0);
    }

    #[test]
    fn aws_adaptive_is_off_until_throttled_then_cuts_and_recovers_cubically() {
        let mut a = AwsAdaptive::new(SimTime::ZERO);
        // 100 sends/s, no throttling: no waiting, no rate.
        for i in 0..200 {
            assert_eq!(a.acquire(t(i * 10)), SimDuration::ZERO);
            a.on_response(t(i * 10), false);
        }
        assert_eq!(a.rate(), 0.0);
        // A throttle at 2 s: rate = 0.7 × measured (~100/s).
        a.on_response(t(2_000), true);
        let cut = a.rate();
        assert!((60.0..80.0).contains(&cut), "rate after throttle {cut}");
        // Sending faster than the bucket now makes sends wait.
        let waits: u64 = (0..100).map(|i| a.acquire(t(2_000 + i)).as_nanos()).sum();
        assert!(waits > 0);
        // CUBIC: back at W_max after K = cbrt(W_max·0.3/0.4) seconds.
        let w_max = cut / BETA;
        let k = (w_max * 0.3 / 0.4).cbrt();
        let at = 2_000 + (k * 1000.0) as u64;
        a.on_response(t(at), false);
        assert!(
            (a.rate() - w_max).abs() < 0.05 * w_max || a.rate() <= 2.0 * a.measured,
            "rate at K {}",
            a.rate()
        );
    }

    fn at(secs: f64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs_f64(secs)
    }

    /// The CUBIC cases of the AWS SDKs' shared retry specification (as
    /// the SDKs' own tests carry them): from a throttle at 5 s with the
    /// rate at 10, the rate after each answer, to the specification's
    /// tolerance of 5·10⁻⁷. The send rate is measured far above these
    /// rates, so neither twice it nor it caps the rate a throttle cuts
    /// (the specification's calculator takes the rate it last gave).
    #[test]
    fn aws_adaptive_follows_the_specifications_cubic_cases() {
        let success_1 = [
            (5.0, false, 7.0),
            (6.0, false, 9.64893600966),
            (7.0, false, 10.000030849917364),
            (8.0, false, 10.453284520772092),
            (9.0, false, 13.408697022224185),
            (10.0, false, 21.26626835427364),
            (11.0, false, 36.425998516920465),
        ];
        let success_2 = [
            (5.0, false, 7.0),
            (6.0, false, 9.64893600966),
            (7.0, true, 6.754255206761999),
            (8.0, true, 4.727978644733399),
            (9.0, false, 6.606547753887045),
            (10.0, false, 6.763279816944947),
            (11.0, false, 7.598174833907107),
            (12.0, false, 11.511232804773524),
        ];
        for (name, cases) in [("success #1", &success_1[..]), ("success #2", &success_2)] {
            let mut a = AwsAdaptive::new(at(0.0));
            a.enabled = true;
            a.max_rate = 10.0;
            a.w_max = 10.0;
            a.last_throttle = at(5.0);
            a.measured = 1e12;
            a.bucket_start = 4.0;
            for (i, &(time, throttle, want)) in cases.iter().enumerate() {
                a.on_response(at(time), throttle);
                assert!(
                    (a.rate() - want).abs() < 5e-7,
                    "{name}, case {i}: rate {} where the specification has {want}",
                    a.rate()
                );
            }
        }
    }

    /// The specification's end-to-end case: a limiter made at 0 hears an
    /// answer every 0.2 s (throttles at 2.0 and 3.2 s); after each, its
    /// measured send rate and its bucket's fill rate, to 5·10⁻⁷.
    #[test]
    fn aws_adaptive_follows_the_specifications_end_to_end_case() {
        let cases = [
            (0.2, false, 0.0, 0.5),
            (0.4, false, 0.0, 0.5),
            (0.6, false, 4.8, 0.5),
            (0.8, false, 4.8, 0.5),
            (1.0, false, 4.16, 0.5),
            (1.2, false, 4.16, 0.6912),
            (1.4, false, 4.16, 1.0976),
            (1.6, false, 5.632, 1.6384),
            (1.8, false, 5.632, 2.3328),
            (2.0, true, 4.3264, 3.02848),
            (2.2, false, 4.3264, 3.486639),
            (2.4, false, 4.3264, 3.821874),
            (2.6, false, 5.66528, 4.053386),
            (2.8, false, 5.66528, 4.200373),
            (3.0, false, 4.333056, 4.282037),
            (3.2, true, 4.333056, 2.997426),
            (3.4, false, 4.333056, 3.452226),
        ];
        let mut a = AwsAdaptive::new(at(0.0));
        for (i, &(time, throttle, measured, fill)) in cases.iter().enumerate() {
            a.on_response(at(time), throttle);
            assert!(
                (a.measured - measured).abs() < 5e-7 && (a.fill_rate() - fill).abs() < 5e-7,
                "case {i} at {time} s: measured {}, fill rate {}; the specification has {measured}, {fill}",
                a.measured,
                a.fill_rate()
            );
            assert_eq!(a.enabled, time >= 2.0, "case {i}");
        }
    }

    /// A limiter made late measures from the second it was made in: one
    /// made at 100 s that hears 10 answers a second has measured 8 a
    /// second (0.8 of the first half second's 10) at 100.5 s, not a
    /// rate spread back to 0 s, and a throttle then cuts to 0.7 of that.
    #[test]
    fn aws_adaptive_made_late_measures_from_when_it_was_made() {
        let mut a = AwsAdaptive::new(at(100.0));
        for i in 1..=4 {
            a.on_response(at(100.0 + f64::from(i) * 0.1), false);
        }
        a.on_response(at(100.5), true);
        assert!((a.measured - 8.0).abs() < 1e-9, "measured {}", a.measured);
        assert!((a.rate() - 5.6).abs() < 1e-9, "rate {}", a.rate());
    }

    /// The bucket fills while the limiter is off, so a first throttle
    /// after 3 s at 10 answers a second finds it full to its new
    /// capacity (0.7 of the measured rate, about 7): the next 6 sends go
    /// at once, and only then do sends wait, as in botocore.
    #[test]
    fn aws_adaptive_lets_a_first_throttle_find_the_tokens_gathered_while_off() {
        let mut a = AwsAdaptive::new(at(100.0));
        for i in 1..=30 {
            a.on_response(at(100.0 + f64::from(i) * 0.1), false);
        }
        a.on_response(at(103.05), true);
        assert!((6.0..8.0).contains(&a.rate()), "rate {}", a.rate());
        for i in 0..6 {
            assert_eq!(a.acquire(at(103.05)), SimDuration::ZERO, "send {i}");
        }
        let waits = (0..3).filter(|_| !a.acquire(at(103.05)).is_zero()).count();
        assert!(waits >= 2, "{waits}");
    }
}
