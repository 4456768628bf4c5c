//! A token bucket: `rps` tokens a second up to `burst`, one per request
//! admitted. Used at the dependency's door (its 429 rate limit) and at the
//! service's own (`gateway.rate_limit`). The rate is passed on every take,
//! so the timeline can change it without the bucket forgetting its level.

use sim_core::time::SimTime;

/// Tokens, refilled continuously.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    burst: f64,
    tokens: f64,
    at: SimTime,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens.
    pub fn full(burst: f64) -> Self {
        TokenBucket {
            burst,
            tokens: burst,
            at: SimTime::ZERO,
        }
    }

    /// Refills at `rps` since the last take and takes one token if there
    /// is one.
    pub fn take(&mut self, now: SimTime, rps: f64) -> bool {
        let elapsed = now.saturating_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rps).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::time::SimDuration;

    #[test]
    fn a_burst_then_the_rate() {
        let mut b = TokenBucket::full(3.0);
        let t = |ms: u64| SimTime::ZERO.saturating_add(SimDuration::from_millis(ms));
        assert!((0..3).all(|_| b.take(t(0), 10.0)));
        assert!(!b.take(t(0), 10.0), "the burst is spent");
        assert!(!b.take(t(50), 10.0), "half a token");
        assert!(b.take(t(100), 10.0), "one token 100 ms at 10/s");
        assert!(b.take(t(10_000), 10.0) && b.take(t(10_000), 10.0) && b.take(t(10_000), 10.0));
        assert!(!b.take(t(10_000), 10.0), "never more than the burst");
    }
}
