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
//! Without retries, a bulkhead of `c` places before a call of exponential
//! length is Erlang's loss system M/M/c/c: a share `B(c, λ/μ)` of calls is
//! turned away; with a line of `k` it is the M/M/c/(c + k) queue, and with
//! a wait bound the M/M/c queue with deterministic patience
//! (`sim-models/tests/suite/fidelity.rs` checks all three).

use serde::{Deserialize, Serialize};
use sim_core::time::SimDuration;
use sim_core::waitline::{WaitLine, Waiting};

use crate::request::CallRef;

/// How many calls of a client may be in progress at once (`bulkhead:
/// { max_concurrent: N }`), on each pod or, with `scope: global`, over
/// the whole calling service, and how the calls past them wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkheadSpec {
    /// Calls in progress at once; the next waits or fails `bulkhead_full`.
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
}

impl BulkheadSpec {
    /// A bulkhead of `max_concurrent` places and no line.
    pub fn places(max_concurrent: u32) -> Self {
        BulkheadSpec {
            max_concurrent,
            max_queue: None,
            max_wait: None,
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
    max: u32,
    in_use: u32,
    line: WaitLine<W>,
    line_bound: u32,
}

impl<W> Bulkhead<W> {
    /// An empty bulkhead as configured.
    pub fn new(spec: &BulkheadSpec) -> Self {
        Bulkhead {
            max: spec.max_concurrent,
            in_use: 0,
            line: WaitLine::new(),
            line_bound: spec.line_bound(),
        }
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
        self.line.check(is_live)
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
    fn a_drained_line_gives_its_live_calls_in_order() {
        let c = calls(3);
        let mut b: Bulkhead<u32> = Bulkhead::new(&BulkheadSpec {
            max_concurrent: 1,
            max_queue: None,
            max_wait: Some(SimDuration::from_secs(1)),
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
