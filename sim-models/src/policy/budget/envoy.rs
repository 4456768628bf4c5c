//! Envoy's retry budget (`circuit_breakers.thresholds.retry_budget`): a
//! limit on retries *in progress*, not on a rate. A retry may start while
//!
//! ```text
//! active retries < max(min_retry_concurrency, budget_percent % × active requests)
//! ```
//!
//! where active requests are the attempts this client has in progress
//! (waiting for a connection or sent) and active retries those of them
//! that are retries. Envoy's example: 20 % of 25 active requests allows 5
//! concurrent retries; with 2 active, the floor of 3 still applies.
//! Retries waiting out their backoff are not active (envoy#30205), so a
//! burst of failures can approve more retries than the limit before any of
//! them starts: the simulation keeps that quirk.

use sim_core::time::SimTime;

use super::{AttemptReport, RetryBudget, RetryCause};

/// Envoy's concurrency retry budget.
#[derive(Clone, Debug)]
pub struct EnvoyBudget {
    budget_percent: f64,
    min_retry_concurrency: u32,
    active: u32,
    active_retries: u32,
}

impl EnvoyBudget {
    /// A budget allowing `budget_percent` % of active requests as
    /// concurrent retries, and at least `min_retry_concurrency`.
    pub fn new(budget_percent: f64, min_retry_concurrency: u32) -> Self {
        EnvoyBudget {
            budget_percent,
            min_retry_concurrency,
            active: 0,
            active_retries: 0,
        }
    }

    /// Concurrent retries allowed now.
    pub fn allowed(&self) -> u32 {
        // Envoy: `budget_percent / 100 * (active + pending)`, truncated.
        let share = (self.budget_percent / 100.0 * f64::from(self.active)) as u32;
        share.max(self.min_retry_concurrency)
    }
}

impl RetryBudget for EnvoyBudget {
    fn on_request(&mut self, _now: SimTime) {}

    fn try_retry(&mut self, _now: SimTime, _cause: RetryCause) -> Option<u32> {
        // Cost 1 marks the attempt as a retry when it starts and ends.
        (self.active_retries < self.allowed()).then_some(1)
    }

    fn on_result(&mut self, _now: SimTime, _report: AttemptReport) {}

    fn on_attempt_start(&mut self, _now: SimTime, retry_cost: u32) {
        self.active += 1;
        if retry_cost > 0 {
            self.active_retries += 1;
        }
    }

    fn on_attempt_closed(&mut self, _now: SimTime, retry_cost: u32) {
        debug_assert!(self.active > 0, "an attempt closed that never started");
        self.active = self.active.saturating_sub(1);
        if retry_cost > 0 {
            self.active_retries = self.active_retries.saturating_sub(1);
        }
    }

    fn level(&self) -> f64 {
        let allowed = f64::from(self.allowed());
        (allowed - f64::from(self.active_retries)).max(0.0) / allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: SimTime = SimTime::ZERO;

    #[test]
    fn envoys_own_examples_20_percent_of_25_is_5_and_the_floor_is_3() {
        let mut b = EnvoyBudget::new(20.0, 3);
        for _ in 0..25 {
            b.on_attempt_start(NOW, 0);
        }
        assert_eq!(b.allowed(), 5);
        let mut b = EnvoyBudget::new(20.0, 3);
        b.on_attempt_start(NOW, 0);
        b.on_attempt_start(NOW, 0);
        assert_eq!(b.allowed(), 3);
    }

    #[test]
    fn retries_in_progress_hold_the_budget_until_they_close() {
        let mut b = EnvoyBudget::new(20.0, 3);
        for _ in 0..10 {
            b.on_attempt_start(NOW, 0);
        }
        // 20 % of 10 is 2, below the floor of 3.
        for _ in 0..3 {
            let cost = b.try_retry(NOW, RetryCause::Timeout).expect("allowed");
            b.on_attempt_start(NOW, cost);
        }
        assert_eq!(b.try_retry(NOW, RetryCause::Timeout), None, "3 of 3 active");
        b.on_attempt_closed(NOW, 1);
        assert_eq!(b.try_retry(NOW, RetryCause::Timeout), Some(1));
        // First attempts closing free no retry place.
        b.on_attempt_closed(NOW, 0);
        assert_eq!(b.active_retries, 2);
    }
}
