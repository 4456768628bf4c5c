//! A retry-only circuit breaker (Marc Brooker, "Fixing retries with token
//! buckets and circuit breakers"): when the share of this client's recent
//! attempts that failed passes a threshold, stop *retrying*, not calling.
//! First attempts always go, so the client keeps probing and the breaker
//! closes by itself once attempts succeed again; retries, which only add
//! load to a dependency that is already failing, are refused meanwhile.
//! (The AWS SDK's legacy retry strategy carries the same idea: a
//! retry-disabling breaker that never blocks a first attempt.)

use std::collections::VecDeque;

use sim_core::time::{SimDuration, SimTime};

use super::{AttemptReport, RetryBudget, RetryCause};

/// Refuses retries while the failure ratio over the window is above the
/// threshold.
#[derive(Clone, Debug)]
pub struct RetryBreaker {
    failure_ratio: f64,
    window: SimDuration,
    min_attempts: u32,
    /// Attempt results in the window, oldest first: (when, failed).
    results: VecDeque<(SimTime, bool)>,
    failures: u32,
}

impl RetryBreaker {
    /// A closed breaker.
    pub fn new(failure_ratio: f64, window: SimDuration, min_attempts: u32) -> Self {
        RetryBreaker {
            failure_ratio,
            window,
            min_attempts,
            results: VecDeque::new(),
            failures: 0,
        }
    }

    fn expire(&mut self, now: SimTime) {
        while let Some(&(t, failed)) = self.results.front() {
            if now.saturating_since(t) < self.window {
                break;
            }
            self.results.pop_front();
            self.failures -= u32::from(failed);
        }
    }

    /// Whether retries are refused now.
    pub fn open(&mut self, now: SimTime) -> bool {
        self.expire(now);
        let n = self.results.len();
        n >= self.min_attempts as usize && f64::from(self.failures) > self.failure_ratio * n as f64
    }
}

impl RetryBudget for RetryBreaker {
    fn on_request(&mut self, _now: SimTime) {}

    fn try_retry(&mut self, now: SimTime, _cause: RetryCause) -> Option<u32> {
        (!self.open(now)).then_some(0)
    }

    fn on_result(&mut self, now: SimTime, report: AttemptReport) {
        self.expire(now);
        self.results.push_back((now, !report.success));
        self.failures += u32::from(!report.success);
    }

    fn level(&self) -> f64 {
        let n = self.results.len().max(1) as f64;
        1.0 - f64::from(self.failures) / n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SimTime {
        SimTime::from_nanos(ms * 1_000_000)
    }

    fn report(success: bool) -> AttemptReport {
        AttemptReport {
            success,
            qualified_failure: !success,
            retry_cost: 0,
        }
    }

    #[test]
    fn retries_stop_past_the_failure_ratio_and_resume_when_the_window_forgets() {
        let mut b = RetryBreaker::new(0.5, SimDuration::from_secs(10), 4);
        for i in 0..3 {
            b.on_result(at(i), report(false));
        }
        assert!(
            b.try_retry(at(3), RetryCause::Timeout).is_some(),
            "too few attempts to judge"
        );
        b.on_result(at(4), report(false));
        assert_eq!(
            b.try_retry(at(5), RetryCause::Timeout),
            None,
            "4 of 4 failed"
        );
        for i in 0..3 {
            b.on_result(at(10 + i), report(true));
        }
        assert!(
            b.try_retry(at(20), RetryCause::Timeout).is_none(),
            "4 of 7 is past 0.5"
        );
        b.on_result(at(30), report(true));
        assert!(
            b.try_retry(at(31), RetryCause::Timeout).is_some(),
            "4 of 8 is not past it"
        );
        // Ten seconds on, the failures have left the window.
        assert!(b.try_retry(at(10_005), RetryCause::Timeout).is_some());
        assert_eq!(b.results.len(), 4);
    }
}
