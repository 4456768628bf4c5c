//! Adaptive backoff (the LLM-API write-up's client): when more than
//! `failure_rate` of the client's last `window` attempts failed, every
//! backoff delay is multiplied by `factor`. A client that sees the
//! dependency failing backs off harder, on top of its usual schedule, and
//! returns to it once the window shows the failures are gone.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Adaptive backoff as written in config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdaptiveBackoffSpec {
    /// Attempts remembered (default 100).
    pub window: u32,
    /// Failed share of them past which delays grow (default 0.3).
    pub failure_rate: f64,
    /// Multiplier on every backoff delay meanwhile (default 2).
    pub factor: f64,
}

impl Default for AdaptiveBackoffSpec {
    fn default() -> Self {
        AdaptiveBackoffSpec {
            window: 100,
            failure_rate: 0.3,
            factor: 2.0,
        }
    }
}

impl AdaptiveBackoffSpec {
    /// Checks the parameters: `Err((field, message))`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.window == 0 || self.window > 1_000_000 {
            return Err((
                "window".into(),
                format!("must be in 1..=10^6, found {}", self.window),
            ));
        }
        if !(0.0..=1.0).contains(&self.failure_rate) {
            return Err((
                "failure_rate".into(),
                format!("must be within 0..=1, found {}", self.failure_rate),
            ));
        }
        if !(self.factor.is_finite() && (1.0..=100.0).contains(&self.factor)) {
            return Err((
                "factor".into(),
                format!("must be within 1..=100, found {}", self.factor),
            ));
        }
        Ok(())
    }
}

/// The last attempts' results of one client, and the multiplier they call
/// for.
#[derive(Clone, Debug)]
pub struct AdaptiveBackoff {
    spec: AdaptiveBackoffSpec,
    results: VecDeque<bool>,
    failures: u32,
}

impl AdaptiveBackoff {
    /// An empty window.
    pub fn new(spec: &AdaptiveBackoffSpec) -> Self {
        AdaptiveBackoff {
            spec: spec.clone(),
            // Grows with the attempts seen, never allocated up front: a
            // window of 10^6 on 10^5 pods must not reserve 100 GB.
            results: VecDeque::new(),
            failures: 0,
        }
    }

    /// An attempt ended.
    pub fn record(&mut self, failed: bool) {
        if self.results.len() == self.spec.window as usize
            && let Some(old) = self.results.pop_front()
        {
            self.failures -= u32::from(old);
        }
        self.results.push_back(failed);
        self.failures += u32::from(failed);
    }

    /// The multiplier on a backoff delay now: `factor` while the failed
    /// share of a full window is above the threshold, else 1.
    pub fn multiplier(&self) -> f64 {
        let n = self.results.len();
        let full = n == self.spec.window as usize;
        if full && f64::from(self.failures) > self.spec.failure_rate * n as f64 {
            self.spec.factor
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_past_thirty_percent_of_the_last_hundred_and_recover() {
        let mut a = AdaptiveBackoff::new(&AdaptiveBackoffSpec::default());
        for i in 0..100 {
            a.record(i % 10 < 3); // exactly 30 %: not past it
        }
        assert_eq!(a.multiplier(), 1.0);
        // The oldest (i = 0) was a failure: one more failure keeps 30.
        a.record(true);
        assert_eq!((a.failures, a.multiplier()), (30, 1.0));
        // The next oldest (i = 1) is too; then i = 3 drops a success.
        a.record(true);
        a.record(true);
        a.record(true);
        assert_eq!((a.failures, a.multiplier()), (31, 2.0));
        for _ in 0..40 {
            a.record(true);
        }
        assert_eq!(a.multiplier(), 2.0, "{} of 100", a.failures);
        for _ in 0..100 {
            a.record(false);
        }
        assert_eq!(a.multiplier(), 1.0, "the failures left the window");
    }
}
