//! Envoy's retry budget (`circuit_breakers.thresholds.retry_budget`): a
//! limit on retries *in progress*, not on a rate. A retry may start while
//!
//! ```text
//! retries < max(min_retry_concurrency, budget_percent % × active requests)
//! ```
//!
//! where active requests are the attempts this client has in progress
//! (waiting for a connection or sent). Envoy's example: 20 % of 25 active
//! requests allows 5 concurrent retries; with 2 active, the floor of 3
//! still applies. At `budget_percent: 0` it is Envoy's plain `max_retries`
//! threshold (default 3), which the budget, when configured, replaces.
//!
//! A retry counts from the moment it is allowed until its attempt ends:
//! Envoy's `RetryStateImpl::shouldRetry` takes the cluster's `retries`
//! resource before it arms the backoff timer and gives it back at the next
//! `shouldRetry` (the retried attempt's answer judged) or when the request
//! ends, so retries waiting out their backoff count. They do not raise
//! the allowance, though: a request in backoff has no upstream request, so
//! it is not among the active ones (the inconsistency envoy#30205 names).
//! The simulation keeps both.

use sim_core::time::SimTime;

use super::{AttemptReport, RetryBudget, RetryCause};

/// Envoy's concurrency retry budget.
#[derive(Clone, Debug)]
pub struct EnvoyBudget {
    budget_percent: f64,
    min_retry_concurrency: u32,
    /// Attempts in progress, first ones and retries.
    active: u32,
    /// Retries in progress.
    active_retries: u32,
    /// Retries allowed and not yet started (in their backoff).
    scheduled: u32,
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
            scheduled: 0,
        }
    }

    /// Concurrent retries allowed now.
    pub fn allowed(&self) -> u32 {
        // Envoy: `budget_percent / 100 * (active + pending)`, truncated.
        let share = (self.budget_percent / 100.0 * f64::from(self.active)) as u32;
        share.max(self.min_retry_concurrency)
    }

    /// Retries holding the budget: in progress or in their backoff.
    pub fn retries(&self) -> u32 {
        self.active_retries.saturating_add(self.scheduled)
    }
}

impl RetryBudget for EnvoyBudget {
    fn on_request(&mut self, _now: SimTime) {}

    fn try_retry(&mut self, _now: SimTime, _cause: RetryCause) -> Option<u32> {
        if self.retries() >= self.allowed() {
            return None;
        }
        self.scheduled += 1;
        // Cost 1 marks the attempt as a retry when it starts and ends.
        Some(1)
    }

    fn on_result(&mut self, _now: SimTime, _report: AttemptReport) {}

    fn on_attempt_start(&mut self, _now: SimTime, retry_cost: u32) {
        self.active += 1;
        if retry_cost > 0 {
            // A retry allowed by the budget a deploy replaced was never
            // scheduled here: it counts from its start.
            self.scheduled = self.scheduled.saturating_sub(1);
            self.active_retries += 1;
        }
    }

    fn on_retry_dropped(&mut self, _now: SimTime, retry_cost: u32) {
        if retry_cost > 0 {
            self.scheduled = self.scheduled.saturating_sub(1);
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
        (allowed - f64::from(self.retries())).max(0.0) / allowed
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

    #[test]
    fn a_retry_holds_the_budget_through_its_backoff_until_dropped_or_ended() {
        // At 0 % it is Envoy's `max_retries` threshold: 3 whatever the load.
        let mut b = EnvoyBudget::new(0.0, 3);
        for _ in 0..1000 {
            b.on_attempt_start(NOW, 0);
        }
        for _ in 0..3 {
            assert_eq!(b.try_retry(NOW, RetryCause::Transient), Some(1));
        }
        // Three in their backoff, none started: the fourth overflows.
        assert_eq!(b.try_retry(NOW, RetryCause::Transient), None);
        assert_eq!(b.level(), 0.0);
        // One starts (still held), one is dropped (its call ended).
        b.on_attempt_start(NOW, 1);
        b.on_retry_dropped(NOW, 1);
        assert_eq!(b.retries(), 2);
        assert_eq!(b.try_retry(NOW, RetryCause::Transient), Some(1));
        assert_eq!(b.try_retry(NOW, RetryCause::Transient), None);
        // The started one's attempt ends: its place is free again.
        b.on_attempt_closed(NOW, 1);
        assert_eq!(b.try_retry(NOW, RetryCause::Transient), Some(1));
    }
}
