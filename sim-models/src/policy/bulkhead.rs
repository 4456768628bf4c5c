//! A bulkhead: a bound on the calls of one client in progress at once.
//!
//! A call that finds every place taken fails at once (`bulkhead_full`),
//! before any attempt, unless the bulkhead keeps a line: then it waits,
//! first come first served, for a place, as long as the line has room
//! (`max_queue`, Polly's `maxQueuingActions` and .NET's `QueueLimit`)
//! and no longer than `max_wait` (Resilience4j's `maxWaitDuration`),
//! failing `bulkhead_full` when it waited that long. A call let in holds
//! its place until it ends, its retries, backoffs and hedges included.
//! That is the outermost layer of .NET's standard resilience handler
//! (`HttpStandardResilienceOptions.RateLimiter`: a `ConcurrencyLimiter`
//! of 1,000 permits and no queue) and Hystrix's isolation (10 concurrent
//! executions, rejected past it); Resilience4j's `Bulkhead` (25, no wait)
//! wraps a single attempt where Spring orders it inside the retry, which
//! a pool of as many connections with no wait models. None of their
//! defaults queue a call for a place, and neither does this one.
//!
//! With `adaptive`, the number of places is a limit that moves, as
//! Netflix's concurrency-limits library moves it with its `AIMDLimit`
//! (read in its source): each call that held a place is a sample when it
//! ends, its time from taking the place and the calls in progress when it
//! took it; a sample dropped, or slower than `timeout`, multiplies the
//! limit by `backoff_ratio` (rounded down), any other raises it by one if
//! the calls in progress filled half of it or more; the limit stays
//! between `min_limit` and `max_concurrent`. Which endings are samples is
//! the library's `Limiter.Listener` contract: a success is one; a call
//! "rejected by an external limit or hitting a timeout" is dropped (a
//! 5xx, a connection refused or reset, no pod, a pod's full queue, a
//! 429; an attempt's timeout, the call's deadline, no connection in
//! time); any other ending (a 4xx, a refusal by the client's own
//! breaker, budget or throttle, a call cut short) is no sample. With
//! `timeouts_drop: false` a timeout is no sample either, as the
//! library's gRPC client interceptor has it (it drops only on
//! `UNAVAILABLE` and ignores `DEADLINE_EXCEEDED`).
//! Under saturation a share `p` of dropped samples holds the limit near
//! `10(1 − p)/p − 5` (+1 a success, −(0.1·L + ½) a drop, on average).
//!
//! Without retries, a bulkhead of `c` places before a call of exponential
//! length is Erlang's loss system M/M/c/c: a share `B(c, λ/μ)` of calls is
//! turned away; with a line of `k` it is the M/M/c/(c + k) queue, and with
//! a wait bound the M/M/c queue with deterministic patience
//! (`sim-models/tests/suite/fidelity.rs` checks all three).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sim_core::time::{SimDuration, SimTime};
use sim_core::waitline::{WaitLine, Waiting};

use crate::request::CallRef;

/// How many calls of a client may be in progress at once (`bulkhead:
/// { max_concurrent: N }`), on each pod or, with `scope: global`, over
/// the whole calling service, and how the calls past them wait.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkheadSpec {
    /// Calls in progress at once; the next waits or fails `bulkhead_full`
    /// (with `adaptive`, the most the limit reaches).
    pub max_concurrent: u32,
    /// Calls that may wait for a place (Polly's `maxQueuingActions`);
    /// the next fails `bulkhead_full` at once. Unset: none, unless
    /// `max_wait` is set, when the line has no bound (Resilience4j).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queue: Option<u32>,
    /// How long a call waits for a place before it fails `bulkhead_full`
    /// (Resilience4j's `maxWaitDuration`). Unset: until a place frees or
    /// the call's own deadline passes (Polly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait: Option<SimDuration>,
    /// A limit that moves with the calls' outcomes (Netflix's AIMD
    /// limit), up to `max_concurrent`. Unset: `max_concurrent` places.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AimdSpec>,
}

/// Netflix's `AIMDLimit`, its defaults those of its builder.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AimdSpec {
    /// The limit at the start (default 20).
    pub initial_limit: u32,
    /// The lowest limit (default 20).
    pub min_limit: u32,
    /// What a dropped sample multiplies the limit by (default 0.9; from
    /// 0.5 to below 1, as the library's builder requires).
    pub backoff_ratio: f64,
    /// A sample slower than this counts as dropped (default `5s`).
    pub timeout: SimDuration,
    /// A call that timed out (its attempt, its deadline, its wait for a
    /// connection) is a dropped sample, as the library's `Listener`
    /// contract has it (default true); false: no sample, as its gRPC
    /// client interceptor treats `DEADLINE_EXCEEDED`.
    pub timeouts_drop: bool,
}

impl Default for AimdSpec {
    fn default() -> Self {
        AimdSpec {
            initial_limit: 20,
            min_limit: 20,
            backoff_ratio: 0.9,
            timeout: SimDuration::from_secs(5),
            timeouts_drop: true,
        }
    }
}

impl AimdSpec {
    /// The limit after a sample: `rtt` long, `inflight` calls in progress
    /// when it took its place (itself included), `dropped` or not; as
    /// `AIMDLimit._update`.
    pub fn update(
        &self,
        limit: u32,
        max: u32,
        rtt: SimDuration,
        inflight: u32,
        dropped: bool,
    ) -> u32 {
        let next = if dropped || rtt > self.timeout {
            (f64::from(limit) * self.backoff_ratio) as u32
        } else if u64::from(inflight) * 2 >= u64::from(limit) {
            limit.saturating_add(1)
        } else {
            limit
        };
        next.max(self.min_limit).min(max)
    }
}

/// What a call's end tells an adaptive limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    /// A success: the limit may rise.
    Success,
    /// Refused for want of a server: the limit falls.
    Dropped,
    /// Timed out: the limit falls, unless `timeouts_drop` is off.
    TimedOut,
    /// No sample.
    Ignored,
}

impl BulkheadSpec {
    /// A bulkhead of `max_concurrent` places and no line.
    pub fn places(max_concurrent: u32) -> Self {
        BulkheadSpec {
            max_concurrent,
            max_queue: None,
            max_wait: None,
            adaptive: None,
        }
    }

    /// The field and message of what is wrong, if anything.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.max_concurrent == 0 {
            return Err((
                "max_concurrent".into(),
                "must be at least 1 (a bulkhead of no places refuses every call)".into(),
            ));
        }
        let Some(a) = &self.adaptive else {
            return Ok(());
        };
        let r = a.backoff_ratio;
        if !(0.5..1.0).contains(&r) {
            return Err((
                "adaptive.backoff_ratio".into(),
                format!("must be from 0.5 to below 1 (Netflix's AIMDLimit requires it), found {r}"),
            ));
        }
        if a.timeout.is_zero() {
            return Err((
                "adaptive.timeout".into(),
                "must be positive (every success would count as dropped)".into(),
            ));
        }
        if a.min_limit == 0 {
            return Err((
                "adaptive.min_limit".into(),
                "must be at least 1 (a limit of 0 refuses every call for good)".into(),
            ));
        }
        if !(a.min_limit..=self.max_concurrent).contains(&a.initial_limit) {
            return Err((
                "adaptive.initial_limit".into(),
                format!(
                    "must lie from min_limit ({}) to max_concurrent ({}), found {}",
                    a.min_limit, self.max_concurrent, a.initial_limit
                ),
            ));
        }
        Ok(())
    }

    /// The most calls its line holds: none without `max_queue` or
    /// `max_wait`, or with a wait of zero (Resilience4j's default).
    pub fn line_bound(&self) -> u32 {
        if self.max_wait == Some(SimDuration::ZERO) {
            return 0;
        }
        match (self.max_queue, self.max_wait) {
            (Some(q), _) => q,
            (None, Some(_)) => u32::MAX,
            (None, None) => 0,
        }
    }
}

/// The places of one bulkhead and the calls waiting for one (`W` names
/// a waiting call: the world's call reference, a number in the tests).
#[derive(Clone, Debug)]
pub struct Bulkhead<W = CallRef> {
    /// Places now: `max_concurrent`, or the adaptive limit.
    max: u32,
    in_use: u32,
    line: WaitLine<W>,
    line_bound: u32,
    adaptive: Option<Adaptive>,
}

/// An adaptive limit's rule, its bound, and the calls holding a place:
/// when each took it and the places then taken (keyed by the caller's
/// number for the call, unique among calls in progress).
#[derive(Clone, Debug)]
struct Adaptive {
    spec: AimdSpec,
    most: u32,
    started: BTreeMap<u32, (SimTime, u32)>,
}

impl<W> Bulkhead<W> {
    /// An empty bulkhead as configured.
    pub fn new(spec: &BulkheadSpec) -> Self {
        let adaptive = spec.adaptive.map(|a| Adaptive {
            spec: a,
            most: spec.max_concurrent,
            started: BTreeMap::new(),
        });
        Bulkhead {
            max: adaptive
                .as_ref()
                .map_or(spec.max_concurrent, |a| a.spec.initial_limit),
            in_use: 0,
            line: WaitLine::new(),
            line_bound: spec.line_bound(),
            adaptive,
        }
    }

    /// Places now (the adaptive limit, if it has one).
    pub fn limit(&self) -> u32 {
        self.max
    }

    /// Call `key` took a place at `now`: an adaptive limit keeps when,
    /// and the places taken then, for the sample its end makes.
    pub fn took_place(&mut self, key: u32, now: SimTime) {
        let in_use = self.in_use;
        if let Some(a) = self.adaptive.as_mut() {
            a.started.insert(key, (now, in_use));
        }
    }

    /// Call `key`, which held a place, ended at `now` as `sample` says:
    /// an adaptive limit moves (`AIMDLimit`); the place is left with
    /// [`Bulkhead::leave`].
    pub fn sample(&mut self, key: u32, now: SimTime, sample: Sample) {
        let Some(a) = self.adaptive.as_mut() else {
            return;
        };
        let Some((at, inflight)) = a.started.remove(&key) else {
            return;
        };
        let dropped = match sample {
            Sample::Ignored => return,
            Sample::TimedOut if !a.spec.timeouts_drop => return,
            Sample::Dropped | Sample::TimedOut => true,
            Sample::Success => false,
        };
        self.max = a.spec.update(
            self.max,
            a.most,
            now.saturating_since(at),
            inflight,
            dropped,
        );
    }

    /// Takes a place for a call starting; `false` when every place is
    /// taken (the call waits or is refused).
    #[inline]
    pub fn try_enter(&mut self) -> bool {
        if self.in_use < self.max {
            self.in_use += 1;
            true
        } else {
            false
        }
    }

    /// A call that held a place ended.
    #[inline]
    pub fn leave(&mut self) {
        debug_assert!(self.in_use > 0, "a bulkhead left more often than entered");
        self.in_use = self.in_use.saturating_sub(1);
    }

    /// Places taken.
    pub fn in_use(&self) -> u32 {
        self.in_use
    }

    /// Whether every place is taken.
    pub fn is_full(&self) -> bool {
        self.in_use >= self.max
    }

    /// Puts `call`, refused a place, in line; `false` when the line is
    /// full (or the bulkhead keeps none): the call is refused.
    pub fn wait(&mut self, call: W, is_live: impl Waiting<W>) -> bool {
        if self.line.len() >= self.line_bound as usize {
            return false;
        }
        self.line.push(call, is_live);
        true
    }

    /// A waiting call left the line (its wait or its deadline ran out,
    /// its request ended).
    pub fn waiter_left(&mut self) {
        self.line.left();
    }

    /// When a place is free, the first call still waiting, which takes
    /// it.
    pub fn admit_next(&mut self, is_live: impl Waiting<W>) -> Option<W> {
        if self.in_use >= self.max {
            return None;
        }
        let call = self.line.pop(is_live)?;
        self.in_use += 1;
        Some(call)
    }

    /// Every call still waiting, first first, taken out of the line (a
    /// deploy hands them to the bulkhead that replaces this one).
    pub fn drain(&mut self, mut is_live: impl FnMut(&W) -> bool) -> Vec<W> {
        let mut calls = Vec::with_capacity(self.line.len());
        while let Some(c) = self.line.pop(&mut is_live) {
            calls.push(c);
        }
        calls
    }

    /// Calls waiting for a place.
    pub fn waiting(&self) -> usize {
        self.line.len()
    }

    /// The line's own check: its count of waiting calls is exact.
    pub fn check_line(&self, is_live: impl Waiting<W>) -> Result<(), String> {
        self.line.check(is_live)?;
        let Some(a) = &self.adaptive else {
            return Ok(());
        };
        if a.started.len() != self.in_use as usize {
            return Err(format!(
                "the adaptive limit keeps {} calls' starts, {} places are taken",
                a.started.len(),
                self.in_use
            ));
        }
        if !(a.spec.min_limit..=a.most).contains(&self.max) {
            return Err(format!(
                "the adaptive limit is {}, outside {}..={}",
                self.max, a.spec.min_limit, a.most
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls named by number.
    fn calls(n: u32) -> Vec<u32> {
        (0..n).collect()
    }

    #[test]
    fn a_bulkhead_lets_in_up_to_its_places_and_frees_one_per_call_ended() {
        let mut b: Bulkhead<u32> = Bulkhead::new(&BulkheadSpec::places(2));
        assert!(b.try_enter());
        assert!(b.try_enter());
        assert!(!b.try_enter(), "the third call of two places is refused");
        assert_eq!(b.in_use(), 2, "a refused call takes no place");
        b.leave();
        assert!(b.try_enter());
        assert!(!b.try_enter());
    }

    #[test]
    fn a_bulkhead_of_no_places_is_refused_with_its_field() {
        let err = BulkheadSpec::places(0).validate().unwrap_err();
        assert_eq!(err.0, "max_concurrent");
        assert!(BulkheadSpec::places(1).validate().is_ok());
    }

    #[test]
    fn the_line_is_bounded_as_polly_and_resilience4j_bound_it() {
        let spec = |q: Option<u32>, w: Option<u64>| BulkheadSpec {
            max_concurrent: 1,
            max_queue: q,
            max_wait: w.map(SimDuration::from_millis),
            adaptive: None,
        };
        assert_eq!(spec(None, None).line_bound(), 0, "no line unless asked");
        assert_eq!(
            spec(Some(3), None).line_bound(),
            3,
            "Polly: a line, no wait bound"
        );
        assert_eq!(spec(None, Some(500)).line_bound(), u32::MAX, "Resilience4j");
        assert_eq!(spec(Some(3), Some(500)).line_bound(), 3);
        assert_eq!(
            spec(Some(3), Some(0)).line_bound(),
            0,
            "a wait of zero waits not"
        );
        assert_eq!(spec(None, Some(0)).line_bound(), 0);
    }

    #[test]
    fn waiting_calls_take_freed_places_first_come_first_served() {
        let c = calls(4);
        let mut b: Bulkhead<u32> = Bulkhead::new(&BulkheadSpec {
            max_concurrent: 1,
            max_queue: Some(2),
            max_wait: None,
            adaptive: None,
        });
        let live = |_: &u32| true;
        assert!(b.try_enter());
        assert_eq!(b.admit_next(live), None, "no place free");
        assert!(b.wait(c[1], live));
        assert!(b.wait(c[2], live));
        assert!(!b.wait(c[3], live), "the line of two is full");
        assert_eq!(b.waiting(), 2);
        b.leave();
        assert_eq!(b.admit_next(live), Some(c[1]));
        assert_eq!(b.in_use(), 1, "the first in line took the place");
        assert_eq!(b.admit_next(live), None);
        b.leave();
        // The second left the line (its wait ran out): the place stays free.
        b.waiter_left();
        assert_eq!(b.admit_next(|w: &u32| *w != c[2]), None);
        assert_eq!(b.in_use(), 0);
        assert_eq!(b.waiting(), 0);
    }

    #[test]
    fn the_aimd_limit_moves_as_netflixs_does() {
        let a = AimdSpec::default();
        let ms = SimDuration::from_millis;
        // A success with half the limit or more in progress raises it by
        // one; with less it stays; a drop or a sample slower than 5 s
        // takes a tenth off, rounded down, never under the minimum of 20
        // or over the maximum.
        assert_eq!(a.update(40, 200, ms(10), 20, false), 41);
        assert_eq!(a.update(40, 200, ms(10), 19, false), 40);
        assert_eq!(a.update(40, 200, ms(10), 40, true), 36);
        assert_eq!(a.update(39, 200, ms(10), 40, true), 35, "35.1 rounds down");
        assert_eq!(a.update(40, 200, ms(5_001), 40, false), 36, "too slow");
        assert_eq!(a.update(40, 200, ms(5_000), 40, false), 41, "not slower");
        assert_eq!(a.update(21, 200, ms(10), 21, true), 20, "the minimum");
        assert_eq!(a.update(200, 200, ms(10), 200, false), 200, "the maximum");
        let low = AimdSpec {
            min_limit: 1,
            ..AimdSpec::default()
        };
        assert_eq!(low.update(1, 10, ms(10), 1, true), 1);
        assert_eq!(low.update(2, 10, ms(10), 1, true), 1);
    }

    #[test]
    fn an_adaptive_bulkhead_gives_and_takes_places_by_its_samples() {
        let spec = BulkheadSpec {
            adaptive: Some(AimdSpec {
                initial_limit: 2,
                min_limit: 1,
                ..AimdSpec::default()
            }),
            ..BulkheadSpec::places(3)
        };
        let mut b: Bulkhead<u32> = Bulkhead::new(&spec);
        let t = |ms| SimTime::ZERO + SimDuration::from_millis(ms);
        let live = |_: &u32| true;
        assert_eq!(b.limit(), 2);
        for k in 0..2 {
            assert!(b.try_enter());
            b.took_place(k, t(0));
        }
        assert!(!b.try_enter(), "two places");
        assert!(b.check_line(live).is_ok());
        // Call 0 succeeds with two in progress at its start: three places.
        b.sample(0, t(10), Sample::Success);
        b.leave();
        assert_eq!(b.limit(), 3);
        for k in [2, 3] {
            assert!(b.try_enter());
            b.took_place(k, t(10));
        }
        assert!(!b.try_enter());
        // A drop: 3 × 0.9 = 2.7, two places, three still held.
        b.sample(1, t(20), Sample::Dropped);
        b.leave();
        assert_eq!(b.limit(), 2);
        assert!(!b.try_enter(), "two held of two");
        // An ignored end moves nothing.
        b.sample(2, t(30), Sample::Ignored);
        b.leave();
        assert_eq!(b.limit(), 2);
        assert!(b.check_line(live).is_ok());
        assert!(b.try_enter());
        b.took_place(4, t(30));
        assert!(b.check_line(live).is_ok());
        // Call 3 succeeds (two in progress at its start): three places,
        // one held; a place taken with no start kept is caught.
        b.sample(3, t(40), Sample::Success);
        b.leave();
        assert_eq!((b.limit(), b.in_use()), (3, 1));
        assert!(b.try_enter());
        assert!(b.check_line(live).is_err());
    }

    #[test]
    fn a_timeout_drops_the_limit_unless_timeouts_are_not_drops() {
        for (timeouts_drop, after) in [(true, 9), (false, 10)] {
            let mut b: Bulkhead<u32> = Bulkhead::new(&BulkheadSpec {
                adaptive: Some(AimdSpec {
                    initial_limit: 10,
                    min_limit: 1,
                    timeouts_drop,
                    ..AimdSpec::default()
                }),
                ..BulkheadSpec::places(20)
            });
            assert!(b.try_enter());
            b.took_place(0, SimTime::ZERO);
            b.sample(
                0,
                SimTime::ZERO + SimDuration::from_secs(1),
                Sample::TimedOut,
            );
            b.leave();
            assert_eq!(b.limit(), after, "{timeouts_drop}");
        }
    }

    #[test]
    fn adaptive_limits_are_checked_against_their_bounds() {
        let spec = |a: AimdSpec| BulkheadSpec {
            adaptive: Some(a),
            ..BulkheadSpec::places(100)
        };
        let d = AimdSpec::default();
        assert!(spec(d).validate().is_ok());
        for (a, field) in [
            (
                AimdSpec {
                    backoff_ratio: 1.0,
                    ..d
                },
                "adaptive.backoff_ratio",
            ),
            (
                AimdSpec {
                    backoff_ratio: 0.4,
                    ..d
                },
                "adaptive.backoff_ratio",
            ),
            (
                AimdSpec {
                    timeout: SimDuration::ZERO,
                    ..d
                },
                "adaptive.timeout",
            ),
            (
                AimdSpec {
                    min_limit: 0,
                    initial_limit: 0,
                    ..d
                },
                "adaptive.min_limit",
            ),
            (
                AimdSpec {
                    initial_limit: 10,
                    ..d
                },
                "adaptive.initial_limit",
            ),
            (
                AimdSpec {
                    initial_limit: 101,
                    ..d
                },
                "adaptive.initial_limit",
            ),
        ] {
            assert_eq!(spec(a).validate().unwrap_err().0, field, "{a:?}");
        }
    }

    #[test]
    fn a_drained_line_gives_its_live_calls_in_order() {
        let c = calls(3);
        let mut b: Bulkhead<u32> = Bulkhead::new(&BulkheadSpec {
            max_concurrent: 1,
            max_queue: None,
            max_wait: Some(SimDuration::from_secs(1)),
            adaptive: None,
        });
        assert!(b.try_enter());
        for call in &c {
            assert!(b.wait(*call, |_: &u32| true));
        }
        b.waiter_left();
        assert_eq!(b.drain(|w| *w != c[1]), vec![c[0], c[2]]);
        assert_eq!(b.waiting(), 0);
        assert!(b.check_line(|_: &u32| true).is_ok());
    }
}
