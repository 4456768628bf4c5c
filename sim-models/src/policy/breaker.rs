//! Circuit breakers: stop calling an upstream that keeps failing.
//!
//! Each kind is its own struct behind [`CircuitBreaker`]. The client asks
//! [`CircuitBreaker::try_acquire`] before every attempt and reports every
//! result; a refused call is served a fallback (degraded) or fails
//! `breaker_open`.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use sim_core::time::{SimDuration, SimTime};

/// A breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls flow; results are recorded.
    Closed,
    /// Calls are refused.
    Open,
    /// A few probe calls are let through.
    HalfOpen,
}

impl BreakerState {
    /// The state's name.
    pub fn name(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }
    /// A number for time series: 0 closed, 1 half-open, 2 open.
    pub fn level(self) -> i64 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::HalfOpen => 1,
            BreakerState::Open => 2,
        }
    }
}

/// A circuit breaker.
pub trait CircuitBreaker {
    /// May a call go now? Moves Open → HalfOpen when the wait is over.
    fn try_acquire(&mut self, now: SimTime) -> bool;
    /// A permitted call finished (`failure` as the breaker records it).
    fn on_result(&mut self, now: SimTime, failure: bool, duration: SimDuration);
    /// The state now.
    fn state(&self) -> BreakerState;
}

/// Which breaker, as written in config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BreakerSpec {
    /// Resilience4j `CircuitBreaker`.
    Resilience4j(R4jConfig),
    /// Polly v8 circuit breaker.
    Polly(PollyConfig),
}

impl BreakerSpec {
    /// A fresh, closed breaker.
    pub fn build(&self) -> Box<dyn CircuitBreaker> {
        match self {
            BreakerSpec::Resilience4j(c) => Box::new(R4jBreaker::new(c.clone())),
            BreakerSpec::Polly(c) => Box::new(PollyBreaker::new(c.clone())),
        }
    }

    /// Checks the parameters: `Err((field, message))`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, m: String| Err((f.to_string(), m));
        match self {
            BreakerSpec::Resilience4j(c) => {
                for (f, v) in [
                    ("failure_rate_threshold", c.failure_rate_threshold),
                    ("slow_call_rate_threshold", c.slow_call_rate_threshold),
                ] {
                    if !(v > 0.0 && v <= 100.0) {
                        return bad(
                            &format!("resilience4j.{f}"),
                            format!("must be in (0, 100], found {v}"),
                        );
                    }
                }
                if c.sliding_window_size == 0
                    || c.minimum_number_of_calls == 0
                    || c.permitted_calls_in_half_open == 0
                {
                    return bad(
                        "resilience4j",
                        "window size, minimum calls and half-open calls must be at least 1".into(),
                    );
                }
            }
            BreakerSpec::Polly(c) => {
                if !(c.failure_ratio > 0.0 && c.failure_ratio <= 1.0) {
                    return bad(
                        "polly.failure_ratio",
                        format!("must be in (0, 1], found {}", c.failure_ratio),
                    );
                }
                if c.minimum_throughput < 2 {
                    return bad(
                        "polly.minimum_throughput",
                        format!("must be at least 2, found {}", c.minimum_throughput),
                    );
                }
                if c.sampling_duration.is_zero() {
                    return bad("polly.sampling_duration", "must be longer than 0s".into());
                }
            }
        }
        Ok(())
    }
}

/// Resilience4j's sliding window kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowType {
    /// The last N calls.
    CountBased,
    /// The calls of the last N seconds.
    TimeBased,
}

/// Resilience4j `CircuitBreakerConfig`, with its defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct R4jConfig {
    /// Percent of failures that opens the breaker (default 50).
    pub failure_rate_threshold: f64,
    /// Percent of slow calls that opens the breaker (default 100).
    pub slow_call_rate_threshold: f64,
    /// A call slower than this is slow (default 60 s).
    pub slow_call_duration_threshold: SimDuration,
    /// Time open before half-open (default 60 s).
    pub wait_duration_in_open_state: SimDuration,
    /// Calls let through when half-open (default 10).
    pub permitted_calls_in_half_open: u32,
    /// Calls recorded before rates count (default 100; capped at the window
    /// size for count-based windows).
    pub minimum_number_of_calls: u32,
    /// Window size: calls, or seconds (default 100).
    pub sliding_window_size: u32,
    /// Window kind (default count-based).
    pub sliding_window_type: WindowType,
    /// Go half-open when the wait is over even without a call (default
    /// false: on the next call).
    pub automatic_transition: bool,
}

impl Default for R4jConfig {
    fn default() -> Self {
        R4jConfig {
            failure_rate_threshold: 50.0,
            slow_call_rate_threshold: 100.0,
            slow_call_duration_threshold: SimDuration::from_secs(60),
            wait_duration_in_open_state: SimDuration::from_secs(60),
            permitted_calls_in_half_open: 10,
            minimum_number_of_calls: 100,
            sliding_window_size: 100,
            sliding_window_type: WindowType::CountBased,
            automatic_transition: false,
        }
    }
}

/// Resilience4j's state machine.
#[derive(Clone, Debug)]
pub struct R4jBreaker {
    cfg: R4jConfig,
    state: BreakerState,
    opened_at: SimTime,
    /// Closed: recorded calls (time, failed, slow), with running counts
    /// so each result costs O(1).
    window: VecDeque<(SimTime, bool, bool)>,
    failed: usize,
    slow: usize,
    half_open_admitted: u32,
    half_open_results: Vec<(bool, bool)>,
}

impl R4jBreaker {
    /// A closed breaker.
    pub fn new(cfg: R4jConfig) -> Self {
        R4jBreaker {
            cfg,
            state: BreakerState::Closed,
            opened_at: SimTime::ZERO,
            window: VecDeque::new(),
            failed: 0,
            slow: 0,
            half_open_admitted: 0,
            half_open_results: Vec::new(),
        }
    }

    fn pop_oldest(&mut self) {
        if let Some((_, f, s)) = self.window.pop_front() {
            self.failed -= usize::from(f);
            self.slow -= usize::from(s);
        }
    }

    fn trim(&mut self, now: SimTime) {
        match self.cfg.sliding_window_type {
            WindowType::CountBased => {
                while self.window.len() > self.cfg.sliding_window_size as usize {
                    self.pop_oldest();
                }
            }
            WindowType::TimeBased => {
                // N one-second buckets: calls in the current second and
                // the N−1 before it.
                let span = SimDuration::from_secs(u64::from(self.cfg.sliding_window_size));
                let bucket = |t: SimTime| t.as_nanos() / 1_000_000_000;
                while self.window.front().is_some_and(|&(t, _, _)| {
                    bucket(now) - bucket(t) >= span.as_nanos() / 1_000_000_000
                }) {
                    self.window.pop_front();
                }
            }
        }
    }

    fn rates_exceeded(&self, n: usize, failed: usize, slow: usize, min_calls: usize) -> bool {
        if n < min_calls || n == 0 {
            return false;
        }
        let pct = |k: usize| 100.0 * k as f64 / n as f64;
        pct(failed) >= self.cfg.failure_rate_threshold
            || pct(slow) >= self.cfg.slow_call_rate_threshold
    }

    fn open(&mut self, now: SimTime) {
        self.state = BreakerState::Open;
        self.opened_at = now;
        self.clear_window();
    }

    fn clear_window(&mut self) {
        self.window.clear();
        self.failed = 0;
        self.slow = 0;
    }
}

impl CircuitBreaker for R4jBreaker {
    fn try_acquire(&mut self, now: SimTime) -> bool {
        if self.state == BreakerState::Open {
            if now.saturating_since(self.opened_at) < self.cfg.wait_duration_in_open_state {
                return false;
            }
            self.state = BreakerState::HalfOpen;
            self.half_open_admitted = 0;
            self.half_open_results.clear();
        }
        if self.state == BreakerState::HalfOpen {
            if self.half_open_admitted >= self.cfg.permitted_calls_in_half_open {
                return false;
            }
            self.half_open_admitted += 1;
        }
        true
    }

    fn on_result(&mut self, now: SimTime, failure: bool, duration: SimDuration) {
        let slow = duration >= self.cfg.slow_call_duration_threshold;
        match self.state {
            BreakerState::Closed => {
                self.window.push_back((now, failure, slow));
                self.failed += usize::from(failure);
                self.slow += usize::from(slow);
                self.trim(now);
                let min = match self.cfg.sliding_window_type {
                    WindowType::CountBased => self
                        .cfg
                        .minimum_number_of_calls
                        .min(self.cfg.sliding_window_size),
                    WindowType::TimeBased => self.cfg.minimum_number_of_calls,
                } as usize;
                if self.rates_exceeded(self.window.len(), self.failed, self.slow, min) {
                    self.open(now);
                }
            }
            BreakerState::HalfOpen => {
                self.half_open_results.push((failure, slow));
                let permitted = self.cfg.permitted_calls_in_half_open as usize;
                if self.half_open_results.len() >= permitted {
                    let failed = self.half_open_results.iter().filter(|r| r.0).count();
                    let slow = self.half_open_results.iter().filter(|r| r.1).count();
                    if self.rates_exceeded(self.half_open_results.len(), failed, slow, permitted) {
                        self.open(now);
                    } else {
                        self.state = BreakerState::Closed;
                        self.clear_window();
                    }
                }
            }
            // A call admitted before the breaker opened: Resilience4j
            // ignores its result.
            BreakerState::Open => {}
        }
    }

    fn state(&self) -> BreakerState {
        self.state
    }
}

/// Polly v8's circuit breaker options, with its defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PollyConfig {
    /// Failure ratio that breaks (default 0.1).
    pub failure_ratio: f64,
    /// Calls in the sampling window before it may break (default 100).
    pub minimum_throughput: u32,
    /// The sampling window (default 30 s).
    pub sampling_duration: SimDuration,
    /// Time broken before one probe (default 5 s).
    pub break_duration: SimDuration,
}

impl Default for PollyConfig {
    fn default() -> Self {
        PollyConfig {
            failure_ratio: 0.1,
            minimum_throughput: 100,
            sampling_duration: SimDuration::from_secs(30),
            break_duration: SimDuration::from_secs(5),
        }
    }
}

/// Polly's state machine: break on ratio over the sampling window; after
/// the break, one probe decides.
#[derive(Clone, Debug)]
pub struct PollyBreaker {
    cfg: PollyConfig,
    state: BreakerState,
    opened_at: SimTime,
    probe_out: bool,
    window: VecDeque<(SimTime, bool)>,
    failed: usize,
}

impl PollyBreaker {
    /// A closed breaker.
    pub fn new(cfg: PollyConfig) -> Self {
        PollyBreaker {
            cfg,
            state: BreakerState::Closed,
            opened_at: SimTime::ZERO,
            probe_out: false,
            window: VecDeque::new(),
            failed: 0,
        }
    }
}

impl CircuitBreaker for PollyBreaker {
    fn try_acquire(&mut self, now: SimTime) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open => {
                if now.saturating_since(self.opened_at) < self.cfg.break_duration {
                    return false;
                }
                self.state = BreakerState::HalfOpen;
                self.probe_out = true;
                true
            }
            BreakerState::HalfOpen => {
                if self.probe_out {
                    false
                } else {
                    self.probe_out = true;
                    true
                }
            }
        }
    }

    fn on_result(&mut self, now: SimTime, failure: bool, _duration: SimDuration) {
        match self.state {
            BreakerState::Closed => {
                self.window.push_back((now, failure));
                self.failed += usize::from(failure);
                while let Some(&(t, f)) = self.window.front() {
                    if now.saturating_since(t) < self.cfg.sampling_duration {
                        break;
                    }
                    self.window.pop_front();
                    self.failed -= usize::from(f);
                }
                let n = self.window.len();
                if n >= self.cfg.minimum_throughput as usize
                    && self.failed as f64 / n as f64 >= self.cfg.failure_ratio
                {
                    self.state = BreakerState::Open;
                    self.opened_at = now;
                    self.window.clear();
                    self.failed = 0;
                }
            }
            BreakerState::HalfOpen => {
                self.probe_out = false;
                if failure {
                    self.state = BreakerState::Open;
                    self.opened_at = now;
                } else {
                    self.state = BreakerState::Closed;
                    self.window.clear();
                    self.failed = 0;
                }
            }
            BreakerState::Open => {}
        }
    }

    fn state(&self) -> BreakerState {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_secs(s)
    }
    const FAST: SimDuration = SimDuration::from_millis(10);

    fn small_r4j() -> R4jBreaker {
        R4jBreaker::new(R4jConfig {
            failure_rate_threshold: 50.0,
            minimum_number_of_calls: 4,
            sliding_window_size: 10,
            permitted_calls_in_half_open: 3,
            wait_duration_in_open_state: SimDuration::from_secs(30),
            ..R4jConfig::default()
        })
    }

    #[test]
    fn r4j_opens_exactly_when_the_rate_crosses_after_minimum_calls() {
        let mut b = small_r4j();
        // Three failures: 100 % but below minimum calls: still closed.
        for _ in 0..3 {
            assert!(b.try_acquire(t(0)));
            b.on_result(t(0), true, FAST);
        }
        assert_eq!(b.state(), BreakerState::Closed);
        // Fourth call is a success: 3/4 = 75 % ≥ 50 % with 4 calls: open.
        assert!(b.try_acquire(t(0)));
        b.on_result(t(0), false, FAST);
        assert_eq!(b.state(), BreakerState::Open);

        // Below threshold never opens: 4 successes then alternating 1 in 3.
        let mut b = small_r4j();
        for i in 0..30 {
            b.try_acquire(t(0));
            b.on_result(t(0), i % 3 == 0 && i >= 4, FAST);
            assert_eq!(b.state(), BreakerState::Closed, "call {i}");
        }
    }

    #[test]
    fn r4j_admits_exactly_the_permitted_half_open_calls() {
        let mut b = small_r4j();
        for _ in 0..4 {
            b.try_acquire(t(0));
            b.on_result(t(0), true, FAST);
        }
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.try_acquire(t(29)), "still waiting in open");
        // At 30 s: half-open, three calls admitted, the fourth refused.
        let admitted = (0..5).filter(|_| b.try_acquire(t(30))).count();
        assert_eq!(admitted, 3);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        // Two of three succeed: 33 % < 50 %: closed.
        b.on_result(t(31), false, FAST);
        b.on_result(t(31), true, FAST);
        assert_eq!(b.state(), BreakerState::HalfOpen, "decides after all three");
        b.on_result(t(31), false, FAST);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn r4j_hand_computed_scenario() {
        // Window of 10 calls, min 4, 50 %, wait 30 s, 3 half-open calls.
        // t=0..3: S F F F  → after F#3 (3/4 = 75 %) at t=3: OPEN
        // t=10: refused; t=33: HALF_OPEN, 3 admitted: F S F (67 %) → OPEN at 35
        // t=64: refused (29 s); t=65: HALF_OPEN: S S S → CLOSED at 67
        // then the window is fresh: F F F S (75 % at 4 calls) → OPEN at 71
        let mut b = small_r4j();
        let mut log = Vec::new();
        let mut call = |b: &mut R4jBreaker, at: u64, fail: bool| {
            let ok = b.try_acquire(t(at));
            if ok {
                b.on_result(t(at), fail, FAST);
            }
            log.push((at, ok, b.state()));
        };
        for (at, fail) in [(0, false), (1, true), (2, true), (3, true)] {
            call(&mut b, at, fail);
        }
        call(&mut b, 10, false);
        for (at, fail) in [(33, true), (34, false), (35, true)] {
            call(&mut b, at, fail);
        }
        call(&mut b, 64, false);
        for at in [65, 66, 67] {
            call(&mut b, at, false);
        }
        for (at, fail) in [(68, true), (69, true), (70, true), (71, false)] {
            call(&mut b, at, fail);
        }
        use BreakerState::*;
        assert_eq!(
            log,
            [
                (0, true, Closed),
                (1, true, Closed),
                (2, true, Closed),
                (3, true, Open),
                (10, false, Open),
                (33, true, HalfOpen),
                (34, true, HalfOpen),
                (35, true, Open),
                (64, false, Open),
                (65, true, HalfOpen),
                (66, true, HalfOpen),
                (67, true, Closed),
                (68, true, Closed),
                (69, true, Closed),
                (70, true, Closed),
                (71, true, Open),
            ]
        );
    }

    #[test]
    fn r4j_slow_calls_open_too() {
        let mut b = R4jBreaker::new(R4jConfig {
            slow_call_rate_threshold: 50.0,
            slow_call_duration_threshold: SimDuration::from_secs(5),
            minimum_number_of_calls: 2,
            sliding_window_size: 2,
            ..R4jConfig::default()
        });
        b.try_acquire(t(0));
        b.on_result(t(0), false, SimDuration::from_secs(6));
        b.try_acquire(t(0));
        b.on_result(t(0), false, FAST);
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn polly_breaks_on_ratio_and_probes_once() {
        let mut b = PollyBreaker::new(PollyConfig {
            failure_ratio: 0.5,
            minimum_throughput: 4,
            sampling_duration: SimDuration::from_secs(10),
            break_duration: SimDuration::from_secs(5),
        });
        for fail in [false, true, false, true] {
            assert!(b.try_acquire(t(0)));
            b.on_result(t(0), fail, FAST);
        }
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.try_acquire(t(4)));
        assert!(b.try_acquire(t(5)), "one probe after the break");
        assert!(!b.try_acquire(t(5)), "only one");
        b.on_result(t(6), true, FAST);
        assert_eq!(b.state(), BreakerState::Open);
        assert!(b.try_acquire(t(11)));
        b.on_result(t(11), false, FAST);
        assert_eq!(b.state(), BreakerState::Closed);
        // Old failures leave the sampling window.
        for s in [20, 21] {
            b.try_acquire(t(s));
            b.on_result(t(s), true, FAST);
        }
        for s in [40, 41] {
            b.try_acquire(t(s));
            b.on_result(t(s), false, FAST);
        }
        assert_eq!(b.state(), BreakerState::Closed);
    }
}
