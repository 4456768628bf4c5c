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
    /// Open, and moving on by its own timer: how long from now until
    /// [`CircuitBreaker::wait_over`] should be called.
    fn open_wait(&self) -> Option<SimDuration> {
        None
    }
    /// The timer [`CircuitBreaker::open_wait`] asked for is due: an open
    /// breaker whose wait is over moves on.
    fn wait_over(&mut self, _now: SimTime) {}
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
    /// A fresh, closed breaker made `now`.
    pub fn build(&self, now: SimTime) -> Box<dyn CircuitBreaker> {
        match self {
            BreakerSpec::Resilience4j(c) => Box::new(R4jBreaker::new(c.clone())),
            BreakerSpec::Polly(c) => Box::new(PollyBreaker::new(c.clone(), now)),
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
    /// Go half-open when the wait is over, by a timer, even without a call
    /// (default false: on the next call after it).
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
                    self.pop_oldest();
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

    /// Open → half-open: a fresh count of the permitted calls.
    fn half_open(&mut self) {
        self.state = BreakerState::HalfOpen;
        self.half_open_admitted = 0;
        self.half_open_results.clear();
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
            self.half_open();
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

    fn open_wait(&self) -> Option<SimDuration> {
        (self.cfg.automatic_transition && self.state == BreakerState::Open)
            .then_some(self.cfg.wait_duration_in_open_state)
    }

    fn wait_over(&mut self, now: SimTime) {
        if self.state == BreakerState::Open
            && now.saturating_since(self.opened_at) >= self.cfg.wait_duration_in_open_state
        {
            self.half_open();
        }
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

/// Polly v8's circuit breaker (`CircuitStateController`,
/// `AdvancedCircuitBehavior` and its health metrics). Closed, a failure
/// is counted and breaks the circuit when the sampling window holds at
/// least `minimum_throughput` results and the failed share is at least
/// `failure_ratio`; a success is counted and never breaks it. Open, late
/// results are counted and nothing else happens; the first call after
/// `break_duration` goes as the one probe (half-open; every other call is
/// refused), whose success closes the circuit and empties the window, and
/// whose failure (or any failure heard meanwhile) opens it again.
///
/// The window is Polly's: ten windows of a tenth of the sampling
/// duration each (in .NET's 100 ns ticks), each begun by the first
/// result after the one before it ended, and dropped once it began a
/// whole sampling duration ago, so a result counts for between nine and
/// ten tenths of it. Under 200 ms, one window from the breaker's making
/// (or its last reset) that starts over once that old.
#[derive(Clone, Debug)]
pub struct PollyBreaker {
    cfg: PollyConfig,
    state: BreakerState,
    blocked_until: SimTime,
    /// The windows, the newest last (one, always there, when `single`).
    windows: VecDeque<Health>,
    single: bool,
    window: SimDuration,
}

/// One of Polly's health windows.
#[derive(Clone, Copy, Debug)]
struct Health {
    started: SimTime,
    successes: u64,
    failures: u64,
}

impl Health {
    fn at(started: SimTime) -> Self {
        Health {
            started,
            successes: 0,
            failures: 0,
        }
    }
}

impl PollyBreaker {
    /// A closed breaker made `now`.
    pub fn new(cfg: PollyConfig, now: SimTime) -> Self {
        const TICK: u64 = 100;
        let single = cfg.sampling_duration < SimDuration::from_millis(200);
        let window = SimDuration::from_nanos(cfg.sampling_duration.as_nanos() / TICK / 10 * TICK);
        let windows = if single {
            VecDeque::from([Health::at(now)])
        } else {
            VecDeque::new()
        };
        PollyBreaker {
            cfg,
            state: BreakerState::Closed,
            blocked_until: SimTime::ZERO,
            windows,
            single,
            window,
        }
    }

    /// The window a result now counts in, the expired ones dropped.
    fn current(&mut self, now: SimTime) -> &mut Health {
        let sampling = self.cfg.sampling_duration;
        if self.single {
            let w = &mut self.windows[0];
            if now.saturating_since(w.started) >= sampling {
                *w = Health::at(now);
            }
            return w;
        }
        if self
            .windows
            .back()
            .is_none_or(|w| now.saturating_since(w.started) >= self.window)
        {
            self.windows.push_back(Health::at(now));
        }
        while self
            .windows
            .front()
            .is_some_and(|w| now.saturating_since(w.started) >= sampling)
        {
            self.windows.pop_front();
        }
        let newest = self.windows.len() - 1;
        &mut self.windows[newest]
    }

    /// Results in the window now and the failed among them.
    fn health(&mut self, now: SimTime) -> (u64, u64) {
        self.current(now);
        self.windows.iter().fold((0, 0), |(n, f), w| {
            (n + w.successes + w.failures, f + w.failures)
        })
    }

    fn open(&mut self, now: SimTime) {
        self.state = BreakerState::Open;
        self.blocked_until = now.saturating_add(self.cfg.break_duration);
    }
}

impl CircuitBreaker for PollyBreaker {
    fn try_acquire(&mut self, now: SimTime) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open if now >= self.blocked_until => {
                self.blocked_until = now.saturating_add(self.cfg.break_duration);
                self.state = BreakerState::HalfOpen;
                true
            }
            BreakerState::Open | BreakerState::HalfOpen => false,
        }
    }

    fn on_result(&mut self, now: SimTime, failure: bool, _duration: SimDuration) {
        match (self.state, failure) {
            (BreakerState::Closed, true) => {
                self.current(now).failures += 1;
                let (n, failed) = self.health(now);
                if n >= u64::from(self.cfg.minimum_throughput)
                    && failed as f64 / n as f64 >= self.cfg.failure_ratio
                {
                    self.open(now);
                }
            }
            (BreakerState::HalfOpen, true) => self.open(now),
            (BreakerState::Open, true) => self.current(now).failures += 1,
            (BreakerState::HalfOpen, false) => {
                self.state = BreakerState::Closed;
                if self.single {
                    self.windows[0] = Health::at(now);
                } else {
                    self.windows.clear();
                }
            }
            (_, false) => self.current(now).successes += 1,
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
        let mut b = PollyBreaker::new(
            PollyConfig {
                failure_ratio: 0.5,
                minimum_throughput: 4,
                sampling_duration: SimDuration::from_secs(10),
                break_duration: SimDuration::from_secs(5),
            },
            t(0),
        );
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

    fn polly(ratio: f64, min: u32, sampling: SimDuration) -> PollyBreaker {
        PollyBreaker::new(
            PollyConfig {
                failure_ratio: ratio,
                minimum_throughput: min,
                sampling_duration: sampling,
                break_duration: SimDuration::from_secs(5),
            },
            t(0),
        )
    }

    fn ms(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    #[test]
    fn polly_breaks_on_a_failure_only() {
        // Two failures, then two successes: 2 of 4 failed meets the ratio
        // of 0.5 at the minimum throughput of 4, but Polly judges only on a
        // failure (`AdvancedCircuitBehavior.OnActionFailure`): closed until
        // the next one (3 of 5).
        let mut b = polly(0.5, 4, SimDuration::from_secs(10));
        for fail in [true, true, false, false] {
            assert!(b.try_acquire(t(1)));
            b.on_result(t(1), fail, FAST);
        }
        assert_eq!(b.state(), BreakerState::Closed);
        b.on_result(t(1), true, FAST);
        assert_eq!(b.state(), BreakerState::Open);
        // Results that come back while open change nothing but the counts.
        b.on_result(t(2), false, FAST);
        b.on_result(t(3), true, FAST);
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.try_acquire(t(5)));
        assert!(b.try_acquire(t(6)), "the break ran from the failure at 1 s");
    }

    #[test]
    fn polly_forgets_a_tenth_of_its_window_at_a_time() {
        // Sampling 10 s: windows of 1 s, each begun by the first result
        // after the last one ended. Results at 0 s and 0.9 s share the
        // window begun at 0 s and leave with it at 10 s, the second after
        // 9.1 s; one at 1.0 s begins the next window.
        let mut b = polly(1.0, 1_000, SimDuration::from_secs(10));
        b.on_result(ms(0), true, FAST);
        b.on_result(ms(900), true, FAST);
        b.on_result(ms(1_000), false, FAST);
        assert_eq!(b.health(ms(9_999)), (3, 2));
        assert_eq!(b.health(ms(10_000)), (1, 0));
        assert_eq!(b.health(ms(10_999)), (1, 0));
        assert_eq!(b.health(ms(11_000)), (0, 0));
    }

    #[test]
    fn polly_under_200_ms_keeps_one_window_from_its_making() {
        // Sampling 100 ms: Polly's single window, begun when the breaker
        // was made (0 s here) and begun again once 100 ms old, so a result
        // at 50 ms is gone at 100 ms.
        let mut b = polly(1.0, 1_000, SimDuration::from_millis(100));
        b.on_result(ms(50), true, FAST);
        assert_eq!(b.health(ms(99)), (1, 1));
        assert_eq!(b.health(ms(100)), (0, 0));
    }

    #[test]
    fn r4j_time_based_window_forgets_the_failures_it_drops() {
        // 10 one-second buckets, 50 %, at least 10 calls. Second 0: 4
        // failures in 10 (40 %). Second 20, those long gone: 2 failures
        // in 10 (20 %) must not open it, as 4 stale failures counted
        // with them (60 %) would.
        let mut b = R4jBreaker::new(R4jConfig {
            minimum_number_of_calls: 10,
            sliding_window_size: 10,
            sliding_window_type: WindowType::TimeBased,
            ..R4jConfig::default()
        });
        for (s, failures) in [(0, 4), (20, 2)] {
            for i in 0..10 {
                assert!(b.try_acquire(t(s)));
                b.on_result(t(s), i < failures, FAST);
            }
            assert_eq!(b.state(), BreakerState::Closed, "second {s}");
        }
        // Nor do 5 failures in the next 10 calls (7 of 20); it opens at the
        // sixth failure after them (13 of 26), not the fifth (12 of 25).
        for i in 0..10 {
            b.on_result(t(21), i < 5, FAST);
        }
        for k in 1..=6 {
            assert_eq!(b.state(), BreakerState::Closed, "{k}");
            b.on_result(t(22), true, FAST);
        }
        assert_eq!(b.state(), BreakerState::Open);
    }
}
