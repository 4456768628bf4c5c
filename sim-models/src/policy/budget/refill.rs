//! A retry budget refilled by a fraction of a token per call (Marc
//! Brooker's "adaptive retry", the shape of the AWS SDKs' retry quota and
//! of Finagle's budget without the expiry): every call that starts adds
//! `per_call` tokens, up to `max_tokens`; a retry spends one. Over any long
//! stretch, retries are at most `per_call` × calls (plus the bucket), so a
//! dependency that fails everything sees at most `1 + per_call` attempts
//! per call, whatever the retry policy says. Kept in milli-tokens, exact.

use sim_core::time::SimTime;

use super::{AttemptReport, RetryBudget, RetryCause};

/// Tokens added per call, spent per retry.
#[derive(Clone, Debug)]
pub struct RefillPerCall {
    per_call: i64,
    max: i64,
    tokens: i64,
}

impl RefillPerCall {
    /// A full bucket of `max_tokens`, refilled by `per_call` (3 decimals).
    pub fn new(per_call: f64, max_tokens: u32) -> Self {
        let max = i64::from(max_tokens) * 1000;
        RefillPerCall {
            per_call: (per_call * 1000.0).round() as i64,
            max,
            tokens: max,
        }
    }
}

impl RetryBudget for RefillPerCall {
    fn on_request(&mut self, _now: SimTime) {
        self.tokens = (self.tokens + self.per_call).min(self.max);
    }

    fn try_retry(&mut self, _now: SimTime, _cause: RetryCause) -> Option<u32> {
        if self.tokens >= 1000 {
            self.tokens -= 1000;
            Some(1)
        } else {
            None
        }
    }

    fn on_result(&mut self, _now: SimTime, _report: AttemptReport) {}

    fn level(&self) -> f64 {
        self.tokens as f64 / self.max.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_calls_at_a_tenth_buy_one_retry_once_the_bucket_is_empty() {
        let now = SimTime::ZERO;
        let mut b = RefillPerCall::new(0.1, 2);
        assert!(b.try_retry(now, RetryCause::Transient).is_some());
        assert!(b.try_retry(now, RetryCause::Transient).is_some());
        assert!(
            b.try_retry(now, RetryCause::Transient).is_none(),
            "the bucket is empty"
        );
        for _ in 0..9 {
            b.on_request(now);
        }
        assert!(
            b.try_retry(now, RetryCause::Transient).is_none(),
            "0.9 of a token"
        );
        b.on_request(now);
        assert!(
            b.try_retry(now, RetryCause::Transient).is_some(),
            "ten calls, one token"
        );
        for _ in 0..1000 {
            b.on_request(now);
        }
        assert_eq!(b.level(), 1.0, "never above the bucket");
    }
}
