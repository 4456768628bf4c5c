//! Retry budgets: limits on retries that hold across calls.
//!
//! Each kind is its own struct behind [`RetryBudget`]. A budget hears of
//! every call ([`RetryBudget::on_request`]), every attempt's start and
//! close ([`RetryBudget::on_attempt_start`],
//! [`RetryBudget::on_attempt_closed`]: budgets on concurrency), every
//! allowed retry that never starts ([`RetryBudget::on_retry_dropped`]), every
//! attempt result ([`RetryBudget::on_result`]), and decides every retry
//! ([`RetryBudget::try_retry`]). A new budget is one file (`envoy.rs` is
//! an example) plus its variant in [`BudgetSpec`]. Integer tokens where the library uses them
//! (gRPC's milli-tokens, Finagle's ×1000 scale), so runs are exact.

use std::collections::VecDeque;

mod envoy;
mod refill;
mod retry_breaker;
pub use envoy::EnvoyBudget;
pub use refill::RefillPerCall;
pub use retry_breaker::RetryBreaker;

use serde::{Deserialize, Serialize};
use sim_core::time::{SimDuration, SimTime};

/// Why a retry is wanted (some budgets charge by cause).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryCause {
    /// The attempt timed out.
    Timeout,
    /// A throttling answer (429).
    Throttled,
    /// Any other transient failure (5xx, connection errors).
    Transient,
}

/// What an attempt's end tells a budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptReport {
    /// The attempt succeeded.
    pub success: bool,
    /// A failure the policy would retry (gRPC's "qualified" failure).
    pub qualified_failure: bool,
    /// What was charged for this attempt if it was a retry (0 for first
    /// attempts).
    pub retry_cost: u32,
}

/// A retry budget.
pub trait RetryBudget {
    /// A call starts (its first attempt; never blocked by a budget).
    fn on_request(&mut self, now: SimTime);
    /// May one retry go now? `Some(cost)` allows it and charges `cost`
    /// (remember it for [`AttemptReport::retry_cost`]); `None` denies.
    fn try_retry(&mut self, now: SimTime, cause: RetryCause) -> Option<u32>;
    /// An attempt ended with an outcome (not when it was cancelled).
    fn on_result(&mut self, now: SimTime, report: AttemptReport);
    /// An attempt started; `retry_cost` is what [`RetryBudget::try_retry`]
    /// charged for it (0 for a first attempt or a hedge).
    fn on_attempt_start(&mut self, _now: SimTime, _retry_cost: u32) {}
    /// An attempt is over, however it ended (cancellations included).
    fn on_attempt_closed(&mut self, _now: SimTime, _retry_cost: u32) {}
    /// A retry this budget allowed (charged `retry_cost`) will not start:
    /// its call ended in its backoff, or a gate refused it. Budgets that
    /// hold a retry from its approval (Envoy's) let it go here.
    fn on_retry_dropped(&mut self, _now: SimTime, _retry_cost: u32) {}
    /// The most retries the call that has just started (its
    /// [`RetryBudget::on_request`] heard) may take, where the budget sets
    /// one (Finagle's requeue filter: a share of the balance); `None`
    /// leaves `max_retries` alone.
    fn call_cap(&self) -> Option<u32> {
        None
    }
    /// Remaining budget as a fraction of its maximum (for metrics).
    fn level(&self) -> f64;
}

/// Which budget, as written in config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BudgetSpec {
    /// gRPC A6 retry throttling.
    Grpc {
        /// Token bucket size (gRFC example 10).
        max_tokens: u32,
        /// Tokens returned per success (gRFC example 0.1; 3 decimals).
        token_ratio: f64,
    },
    /// Finagle / Tower / Linkerd-1 `RetryBudget`.
    Finagle {
        /// Deposits expire after this (default 10 s; 1–60 s).
        #[serde(default = "ten_secs")]
        ttl: SimDuration,
        /// Retries always allowed per second (default 10).
        #[serde(default = "ten")]
        min_retries_per_sec: u32,
        /// Fraction of requests that may be retried (default 0.2).
        #[serde(default = "point_two")]
        percent_can_retry: f64,
        /// The most retries one request may take, as a share of the
        /// budget's balance (in retries) when it starts, rounded up:
        /// Finagle's requeue filter takes 0.2, so no request drains the
        /// budget alone (default: none, as its retry filter, Tower and
        /// Linkerd take none).
        #[serde(default)]
        per_request_share: Option<f64>,
    },
    /// AWS SDK standard-mode retry quota (v2.0 costs by default; the 2026
    /// revision's are 14 for any transient error, timeouts included, and 5
    /// for a throttling one).
    AwsQuota {
        /// Initial and maximum capacity (default 500).
        #[serde(default = "five_hundred")]
        capacity: u32,
        /// Cost of retrying a transient error (default 5).
        #[serde(default = "five")]
        retry_cost: u32,
        /// Cost of retrying a timeout (default 10).
        #[serde(default = "ten")]
        timeout_cost: u32,
        /// Cost of retrying a throttling answer, a 429 (default: the
        /// `retry_cost`, as v2.0 charges it).
        #[serde(default)]
        throttled_cost: Option<u32>,
        /// Refund for a success without retries (default 1).
        #[serde(default = "one")]
        no_retry_increment: u32,
    },
    /// Google SRE per-client budget: retries at most `ratio` of requests
    /// over a sliding window.
    Ratio {
        /// Retries ÷ requests allowed (default 0.1).
        #[serde(default = "point_one")]
        ratio: f64,
        /// The window (default 60 s).
        #[serde(default = "sixty_secs")]
        window: SimDuration,
    },
    /// Envoy's retry budget: concurrent retries at most
    /// `max(min_retry_concurrency, budget_percent % × active requests)`.
    Envoy {
        /// Percent of active requests that may be retries (default 20).
        #[serde(default = "twenty")]
        budget_percent: f64,
        /// Concurrent retries always allowed (default 3).
        #[serde(default = "three")]
        min_retry_concurrency: u32,
    },
    /// A retry-only circuit breaker (Brooker): retries refused while more
    /// than `failure_ratio` of the attempts in the window failed; first
    /// attempts always go.
    RetryBreaker {
        /// Failed share of attempts past which retries stop (default 0.5).
        #[serde(default = "point_five")]
        failure_ratio: f64,
        /// The window (default 10 s).
        #[serde(default = "ten_secs")]
        window: SimDuration,
        /// Attempts in the window before it judges (default 10).
        #[serde(default = "ten")]
        min_attempts: u32,
    },
    /// Brooker's adaptive retry: each call adds `per_call` tokens (up to
    /// `max_tokens`), each retry spends one.
    RefillPerCall {
        /// Tokens per call started (default 0.1; 3 decimals).
        #[serde(default = "point_one")]
        per_call: f64,
        /// Bucket size, and its start (default 10).
        #[serde(default = "ten")]
        max_tokens: u32,
    },
    /// A token bucket: each success adds `per_success`, each retry costs
    /// `per_retry` (seed 003: +1 / −10).
    Bucket {
        /// Bucket size, and its start (default 100).
        #[serde(default = "hundred")]
        max_tokens: u32,
        /// Tokens per success (default 1).
        #[serde(default = "one")]
        per_success: u32,
        /// Tokens per retry (default 10).
        #[serde(default = "ten")]
        per_retry: u32,
    },
}

fn ten_secs() -> SimDuration {
    SimDuration::from_secs(10)
}
fn sixty_secs() -> SimDuration {
    SimDuration::from_secs(60)
}
fn point_five() -> f64 {
    0.5
}
fn twenty() -> f64 {
    20.0
}
fn three() -> u32 {
    3
}
fn ten() -> u32 {
    10
}
fn five() -> u32 {
    5
}
fn one() -> u32 {
    1
}
fn hundred() -> u32 {
    100
}
fn five_hundred() -> u32 {
    500
}
fn point_two() -> f64 {
    0.2
}
fn point_one() -> f64 {
    0.1
}

impl BudgetSpec {
    /// Checks the parameters: `Err((field, message))`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, m: String| Err((f.to_string(), m));
        match self {
            BudgetSpec::Grpc {
                max_tokens,
                token_ratio,
            } => {
                if *max_tokens == 0 || *max_tokens > 1000 {
                    return bad(
                        "grpc.max_tokens",
                        format!("must be in 1..=1000 (gRFC A6), found {max_tokens}"),
                    );
                }
                if !(*token_ratio > 0.0 && *token_ratio <= f64::from(*max_tokens)) {
                    return bad(
                        "grpc.token_ratio",
                        format!("must be above 0, found {token_ratio}"),
                    );
                }
            }
            BudgetSpec::Finagle {
                ttl,
                percent_can_retry,
                per_request_share,
                ..
            } => {
                if let Some(share) = per_request_share
                    && !(0.0..=1000.0).contains(share)
                {
                    return bad(
                        "finagle.per_request_share",
                        format!("must be within 0..=1000, found {share}"),
                    );
                }
                if *ttl < SimDuration::from_secs(1) || *ttl > SimDuration::from_secs(60) {
                    return bad(
                        "finagle.ttl",
                        format!("must be between 1s and 60s (Finagle's bounds), found {ttl}"),
                    );
                }
                if !(0.0..=1000.0).contains(percent_can_retry) {
                    return bad(
                        "finagle.percent_can_retry",
                        format!("must be within 0..=1000, found {percent_can_retry}"),
                    );
                }
            }
            BudgetSpec::AwsQuota { capacity, .. } => {
                if *capacity == 0 {
                    return bad("aws_quota.capacity", "must be at least 1".into());
                }
            }
            BudgetSpec::Ratio { ratio, window } => {
                if !(0.0..=10.0).contains(ratio) {
                    return bad(
                        "ratio.ratio",
                        format!("must be within 0..=10, found {ratio}"),
                    );
                }
                if window.is_zero() {
                    return bad("ratio.window", "must be longer than 0s".into());
                }
            }
            BudgetSpec::RetryBreaker {
                failure_ratio,
                window,
                ..
            } => {
                if !(0.0..=1.0).contains(failure_ratio) {
                    return bad(
                        "retry_breaker.failure_ratio",
                        format!("must be within 0..=1, found {failure_ratio}"),
                    );
                }
                if window.is_zero() {
                    return bad("retry_breaker.window", "must be longer than 0s".into());
                }
            }
            BudgetSpec::RefillPerCall {
                per_call,
                max_tokens,
            } => {
                if !(*per_call > 0.0 && *per_call <= 1000.0) {
                    return bad(
                        "refill_per_call.per_call",
                        format!("must be above 0 and at most 1000, found {per_call}"),
                    );
                }
                if *max_tokens == 0 {
                    return bad("refill_per_call.max_tokens", "must be at least 1".into());
                }
            }
            BudgetSpec::Envoy { budget_percent, .. } => {
                if !(0.0..=100.0).contains(budget_percent) {
                    return bad(
                        "envoy.budget_percent",
                        format!("must be within 0..=100, found {budget_percent}"),
                    );
                }
            }
            BudgetSpec::Bucket {
                max_tokens,
                per_retry,
                ..
            } => {
                if *max_tokens == 0 || *per_retry == 0 {
                    return bad(
                        "bucket",
                        "max_tokens and per_retry must be at least 1".into(),
                    );
                }
            }
        }
        Ok(())
    }

    /// A fresh budget.
    pub fn build(&self) -> Box<dyn RetryBudget> {
        match *self {
            BudgetSpec::Grpc {
                max_tokens,
                token_ratio,
            } => Box::new(GrpcThrottle::new(max_tokens, token_ratio)),
            BudgetSpec::Finagle {
                ttl,
                min_retries_per_sec,
                percent_can_retry,
                per_request_share,
            } => Box::new(FinagleBudget {
                per_request_share,
                ..FinagleBudget::new(ttl, min_retries_per_sec, percent_can_retry)
            }),
            BudgetSpec::AwsQuota {
                capacity,
                retry_cost,
                timeout_cost,
                throttled_cost,
                no_retry_increment,
            } => Box::new(AwsQuota {
                capacity,
                available: capacity,
                retry_cost,
                timeout_cost,
                throttled_cost: throttled_cost.unwrap_or(retry_cost),
                no_retry_increment,
            }),
            BudgetSpec::Ratio { ratio, window } => Box::new(RatioBudget {
                ratio,
                window,
                requests: VecDeque::new(),
                retries: VecDeque::new(),
            }),
            BudgetSpec::Envoy {
                budget_percent,
                min_retry_concurrency,
            } => Box::new(EnvoyBudget::new(budget_percent, min_retry_concurrency)),
            BudgetSpec::RetryBreaker {
                failure_ratio,
                window,
                min_attempts,
            } => Box::new(RetryBreaker::new(failure_ratio, window, min_attempts)),
            BudgetSpec::RefillPerCall {
                per_call,
                max_tokens,
            } => Box::new(RefillPerCall::new(per_call, max_tokens)),
            BudgetSpec::Bucket {
                max_tokens,
                per_success,
                per_retry,
            } => Box::new(TokenBucket {
                max: max_tokens,
                tokens: max_tokens,
                per_success,
                per_retry,
            }),
        }
    }
}

/// gRPC A6 throttling: `token_count` starts at `max_tokens`; each qualified
/// failure takes 1, each success returns `token_ratio`; retries only while
/// `token_count > max_tokens / 2`. Kept in milli-tokens, as the
/// implementations do.
#[derive(Clone, Debug)]
pub struct GrpcThrottle {
    max: i64,
    ratio: i64,
    tokens: i64,
}

impl GrpcThrottle {
    /// A full bucket.
    pub fn new(max_tokens: u32, token_ratio: f64) -> Self {
        let max = i64::from(max_tokens) * 1000;
        GrpcThrottle {
            max,
            ratio: (token_ratio * 1000.0).round() as i64,
            tokens: max,
        }
    }
    /// Tokens now, in milli-tokens.
    pub fn milli_tokens(&self) -> i64 {
        self.tokens
    }
}

impl RetryBudget for GrpcThrottle {
    fn on_request(&mut self, _now: SimTime) {}
    fn try_retry(&mut self, _now: SimTime, _cause: RetryCause) -> Option<u32> {
        (self.tokens * 2 > self.max).then_some(0)
    }
    fn on_result(&mut self, _now: SimTime, r: AttemptReport) {
        if r.success {
            self.tokens = (self.tokens + self.ratio).min(self.max);
        } else if r.qualified_failure {
            self.tokens = (self.tokens - 1000).max(0);
        }
    }
    fn level(&self) -> f64 {
        self.tokens as f64 / self.max as f64
    }
}

/// Finagle's `RetryBudget`: a bucket whose deposits (1000 per request) and
/// withdrawals (`1000 / percent_can_retry` per retry, truncated) expire
/// after `ttl`, plus a standing reserve of `min_retries_per_sec × ttl`
/// retries (whole seconds of `ttl`). So in the trailing `ttl` at any
/// retry, retries ≤ `min_retries_per_sec·ttl + percent_can_retry·requests`.
/// With `percent_can_retry` 0 requests deposit nothing and a retry costs
/// 1 (the reserve alone), as in Finagle; with both 0 it never allows one.
#[derive(Clone, Debug)]
pub struct FinagleBudget {
    ttl: SimDuration,
    deposit: i64,
    withdrawal: i64,
    reserve: i64,
    entries: VecDeque<(SimTime, i64)>,
    balance: i64,
    per_request_share: Option<f64>,
}

impl FinagleBudget {
    /// A budget with Finagle's parameters (`RetryBudget.apply`).
    pub fn new(ttl: SimDuration, min_retries_per_sec: u32, percent_can_retry: f64) -> Self {
        const SCALE: f64 = 1000.0;
        let (deposit, withdrawal) = if percent_can_retry == 0.0 {
            (0, 1)
        } else {
            // Scala's `toInt` truncates (and saturates, as `as` does).
            (SCALE as i64, ((SCALE / percent_can_retry) as i64).max(1))
        };
        let ttl_secs = (ttl.as_nanos() / 1_000_000_000) as i64;
        FinagleBudget {
            ttl,
            deposit,
            withdrawal,
            reserve: i64::from(min_retries_per_sec)
                .saturating_mul(ttl_secs)
                .saturating_mul(withdrawal),
            entries: VecDeque::new(),
            balance: 0,
            per_request_share: None,
        }
    }

    /// Retries it would allow now (Finagle's `balance`).
    pub fn balance(&self) -> i64 {
        (self.balance.saturating_add(self.reserve) / self.withdrawal).max(0)
    }

    fn expire(&mut self, now: SimTime) {
        while let Some(&(t, v)) = self.entries.front() {
            if now.saturating_since(t) < self.ttl {
                break;
            }
            self.balance -= v;
            self.entries.pop_front();
        }
    }
}

impl RetryBudget for FinagleBudget {
    fn on_request(&mut self, now: SimTime) {
        self.expire(now);
        if self.deposit > 0 {
            self.entries.push_back((now, self.deposit));
            self.balance += self.deposit;
        }
    }
    fn try_retry(&mut self, now: SimTime, _cause: RetryCause) -> Option<u32> {
        self.expire(now);
        if self.balance.saturating_add(self.reserve) >= self.withdrawal {
            self.entries.push_back((now, -self.withdrawal));
            self.balance -= self.withdrawal;
            Some(0)
        } else {
            None
        }
    }
    fn on_result(&mut self, _now: SimTime, _r: AttemptReport) {}
    fn call_cap(&self) -> Option<u32> {
        // `Math.ceil(maxRetriesPerReq * retryBudget.balance).toInt`.
        self.per_request_share
            .map(|share| (share * self.balance() as f64).ceil() as u32)
    }
    fn level(&self) -> f64 {
        let full = (self.reserve + 1).max(1) as f64;
        ((self.balance + self.reserve) as f64 / full).clamp(0.0, 1.0)
    }
}

/// AWS standard retry quota: each retry takes its cause's cost from a
/// capacity of 500 (botocore v2.0: 5, 10 for a timeout; the 2026
/// revision: 14, 5 for a throttling answer); a success refunds the cost
/// of its retry, or 1 when it needed none; no retry without capacity.
#[derive(Clone, Debug)]
pub struct AwsQuota {
    capacity: u32,
    available: u32,
    retry_cost: u32,
    timeout_cost: u32,
    throttled_cost: u32,
    no_retry_increment: u32,
}

impl RetryBudget for AwsQuota {
    fn on_request(&mut self, _now: SimTime) {}
    fn try_retry(&mut self, _now: SimTime, cause: RetryCause) -> Option<u32> {
        let cost = match cause {
            RetryCause::Timeout => self.timeout_cost,
            RetryCause::Throttled => self.throttled_cost,
            RetryCause::Transient => self.retry_cost,
        };
        if self.available >= cost {
            self.available -= cost;
            Some(cost)
        } else {
            None
        }
    }
    fn on_result(&mut self, _now: SimTime, r: AttemptReport) {
        if r.success {
            let refund = if r.retry_cost > 0 {
                r.retry_cost
            } else {
                self.no_retry_increment
            };
            self.available = (self.available + refund).min(self.capacity);
        }
    }
    fn level(&self) -> f64 {
        f64::from(self.available) / f64::from(self.capacity)
    }
}

/// Retries at most `ratio` × requests in the trailing window (Google SRE's
/// per-client budget).
#[derive(Clone, Debug)]
pub struct RatioBudget {
    ratio: f64,
    window: SimDuration,
    requests: VecDeque<SimTime>,
    retries: VecDeque<SimTime>,
}

impl RatioBudget {
    fn expire(&mut self, now: SimTime) {
        for q in [&mut self.requests, &mut self.retries] {
            while q
                .front()
                .is_some_and(|&t| now.saturating_since(t) >= self.window)
            {
                q.pop_front();
            }
        }
    }
}

impl RetryBudget for RatioBudget {
    fn on_request(&mut self, now: SimTime) {
        self.expire(now);
        self.requests.push_back(now);
    }
    fn try_retry(&mut self, now: SimTime, _cause: RetryCause) -> Option<u32> {
        self.expire(now);
        let allowed = (self.retries.len() + 1) as f64 <= self.ratio * self.requests.len() as f64;
        if allowed {
            self.retries.push_back(now);
            Some(0)
        } else {
            None
        }
    }
    fn on_result(&mut self, _now: SimTime, _r: AttemptReport) {}
    fn level(&self) -> f64 {
        let cap = self.ratio * self.requests.len() as f64;
        if cap <= 0.0 {
            0.0
        } else {
            (1.0 - self.retries.len() as f64 / cap).clamp(0.0, 1.0)
        }
    }
}

/// A token bucket: successes refill, retries spend (seed 003).
#[derive(Clone, Debug)]
pub struct TokenBucket {
    max: u32,
    tokens: u32,
    per_success: u32,
    per_retry: u32,
}

impl RetryBudget for TokenBucket {
    fn on_request(&mut self, _now: SimTime) {}
    fn try_retry(&mut self, _now: SimTime, _cause: RetryCause) -> Option<u32> {
        if self.tokens >= self.per_retry {
            self.tokens -= self.per_retry;
            Some(0)
        } else {
            None
        }
    }
    fn on_result(&mut self, _now: SimTime, r: AttemptReport) {
        if r.success {
            self.tokens = (self.tokens + self.per_success).min(self.max);
        }
    }
    fn level(&self) -> f64 {
        f64::from(self.tokens) / f64::from(self.max)
    }
}

#[cfg(test)]
mod tests {
    use rand::RngExt;
    use sim_core::rng::RngStreams;

    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    /// A success whose retry was charged `retry_cost` (0: a first try).
    fn success_after(retry_cost: u32) -> AttemptReport {
        AttemptReport {
            success: true,
            qualified_failure: false,
            retry_cost,
        }
    }

    fn report(success: bool) -> AttemptReport {
        AttemptReport {
            success,
            qualified_failure: !success,
            retry_cost: 0,
        }
    }

    /// Calls against an upstream failing with probability `f`, each failed
    /// attempt retried once if the budget allows: returns (first attempts,
    /// retries allowed) over the last half of `calls` (after warm-up).
    fn grpc_run(f: f64, calls: u32) -> (u32, u32) {
        let mut b = GrpcThrottle::new(10, 0.1);
        let mut rng = RngStreams::new(3).stream("grpc");
        let (mut firsts, mut retries) = (0, 0);
        for i in 0..calls {
            let counted = i >= calls / 2;
            let ok = rng.random::<f64>() >= f;
            b.on_result(t(0), report(ok));
            firsts += u32::from(counted);
            if !ok && b.try_retry(t(0), RetryCause::Transient).is_some() {
                retries += u32::from(counted);
                let ok2 = rng.random::<f64>() >= f;
                b.on_result(t(0), report(ok2));
            }
        }
        (firsts, retries)
    }

    #[test]
    fn grpc_throttle_stops_retries_when_everything_fails() {
        // Every call fails: tokens fall from 10 by one per failure; retries
        // are allowed while tokens > 5, then never again (no successes
        // refill).
        let mut b = GrpcThrottle::new(10, 0.1);
        let mut allowed = 0;
        for _ in 0..100 {
            b.on_result(t(0), report(false));
            if b.try_retry(t(0), RetryCause::Transient).is_some() {
                allowed += 1;
                b.on_result(t(0), report(false));
            }
        }
        // Failures: first (10 → 9, retry ok) retry (→ 8); 8 → 7 ok → 6;
        // 6 → 5: not > 5. Two retries, then the bound: zero.
        assert_eq!(allowed, 2);
        assert_eq!(b.milli_tokens(), 0);
    }

    #[test]
    fn grpc_throttle_starves_retries_above_the_qualified_fraction() {
        // Per first attempt tokens drift by (1−f)·r − f: negative above
        // f* = r/(1+r) = 0.0909, so tokens sink below max/2 and stay there;
        // retries happen only on the rare excursions above it. At f = 0.5
        // (drift −0.45 per call) fewer than 1 % of calls get a retry.
        let (firsts, retries) = grpc_run(0.5, 400_000);
        let share = f64::from(retries) / f64::from(firsts);
        assert!(share < 0.01, "retries per first attempt {share}");
    }

    #[test]
    fn grpc_throttle_never_engages_below_the_qualified_fraction() {
        // f = 0.05 < 0.0909: tokens drift up and stay full; every failed
        // first attempt gets its retry.
        let (firsts, retries) = grpc_run(0.05, 200_000);
        let share = f64::from(retries) / f64::from(firsts);
        // Expected 0.05 ± 0.0007 (binomial sd over 100,000): allow 4 sd.
        assert!(
            (share - 0.05).abs() < 0.003,
            "retries per first attempt {share}"
        );
    }

    #[test]
    fn finagle_budget_bounds_retries_in_every_trailing_ttl() {
        // Defaults: ttl 10 s, 10 retries/s reserve, 20 % of requests.
        let ttl = SimDuration::from_secs(10);
        let mut b = FinagleBudget::new(ttl, 10, 0.2);
        let mut rng = RngStreams::new(4).stream("finagle");
        let mut requests: Vec<SimTime> = Vec::new();
        let mut retries: Vec<SimTime> = Vec::new();
        // 60 s at 50 requests/s, each asking for up to 3 retries.
        let mut now = t(0);
        for _ in 0..3_000 {
            now += SimDuration::from_micros(rng.random_range(0..40_000));
            b.on_request(now);
            requests.push(now);
            for _ in 0..3 {
                if b.try_retry(now, RetryCause::Transient).is_some() {
                    retries.push(now);
                }
            }
        }
        assert!(
            retries.len() > 1_000,
            "the budget allowed {} retries",
            retries.len()
        );
        // At every retry, the trailing ttl holds at most 100 + 0.2·requests.
        for &at in &retries {
            let in_window = |v: &Vec<SimTime>| {
                v.iter()
                    .filter(|&&x| x <= at && at.saturating_since(x) < ttl)
                    .count()
            };
            let (n_req, n_ret) = (in_window(&requests), in_window(&retries));
            assert!(
                n_ret as f64 <= 100.0 + 0.2 * n_req as f64 + 1e-9,
                "{n_ret} retries, {n_req} requests in the ttl before {at}"
            );
        }
        // And the bound is reached: in steady state retries use it fully.
        let last = *retries.last().unwrap();
        let in_window = |v: &Vec<SimTime>| {
            v.iter()
                .filter(|&&x| last.saturating_since(x) < ttl)
                .count()
        };
        assert!(in_window(&retries) as f64 >= 100.0 + 0.2 * in_window(&requests) as f64 - 2.0);
    }

    /// Finagle's own `RetryBudgetTest` cases, time frozen: the reserve
    /// alone at first (`ttl × min_retries_per_sec` retries, none when 0);
    /// then 10,000 requests, each asking for one retry, get
    /// ⌊10,000 × percent_can_retry⌋ + the reserve of them (± 1, Finagle's
    /// margin for its scale), and a refused one leaves a balance of 0.
    #[test]
    fn finagle_budget_passes_finagles_own_cases() {
        let cases: [(u64, u32, f64); 14] = [
            (60, 0, 0.1),
            (60, 0, 0.5),
            (60, 0, 0.25),
            (60, 0, 0.75),
            (60, 0, 0.99),
            (60, 0, 0.999),
            (60, 0, 0.9999),
            (60, 0, 0.01),
            (60, 0, 0.001),
            (60, 0, 0.0001),
            (1, 10, 0.0),
            (2, 5, 0.0),
            (1, 10, 0.1),
            (2, 5, 0.5),
        ];
        for (ttl, min, percent) in cases {
            let mut b = FinagleBudget::new(SimDuration::from_secs(ttl), min, percent);
            let balance = |b: &FinagleBudget| b.balance();
            let reserve = ttl as i64 * i64::from(min);
            assert_eq!(balance(&b), reserve, "{percent}: the reserve");
            if reserve == 0 {
                assert!(b.try_retry(t(0), RetryCause::Transient).is_none());
            }
            let mut retried = 0;
            for i in 0..10_000 {
                b.on_request(t(0));
                if b.try_retry(t(0), RetryCause::Transient).is_some() {
                    retried += 1;
                } else {
                    assert_eq!(balance(&b), 0, "{percent}: request {i}");
                }
            }
            let want = (10_000.0 * percent) as i64 + reserve;
            assert!(
                (retried - want).abs() <= 1,
                "{percent}: {retried} retries, Finagle {want}"
            );
        }
        // 200 % of requests: 10,000 deposits are 20,000 retries.
        let mut b = FinagleBudget::new(SimDuration::from_secs(60), 0, 2.0);
        (0..10_000).for_each(|_| b.on_request(t(0)));
        assert_eq!((b.balance + b.reserve) / b.withdrawal, 20_000);
    }

    /// Finagle's `RequeueFilterTest`: a budget of 10 retries a second
    /// (`RetryBudget(1.second, 10, 0.0)`, so requests deposit nothing),
    /// requests requeued while under `ceil(share × balance)` at their
    /// start and the budget allows. Returns each request's requeues.
    fn requeues(share: f64, fails: &[u32]) -> Vec<u32> {
        let mut b = FinagleBudget {
            per_request_share: Some(share),
            ..FinagleBudget::new(SimDuration::from_secs(1), 10, 0.0)
        };
        fails
            .iter()
            .map(|&fails| {
                b.on_request(t(0));
                let cap = b.call_cap().unwrap();
                let mut n = 0;
                while n < fails && n < cap && b.try_retry(t(0), RetryCause::Transient).is_some() {
                    n += 1;
                }
                n
            })
            .collect()
    }

    #[test]
    fn finagle_requeues_take_at_most_their_share_of_the_balance() {
        // "respects maxRetriesPerReq": 50 % of 10, 5 requeues.
        assert_eq!(requeues(0.5, &[u32::MAX]), [5]);
        // "exhausts budget": 200 % of 10 is 20, but the budget has 10.
        assert_eq!(requeues(2.0, &[u32::MAX]), [10]);
        // "tracks requeues_per_request": a success (0), a request failing
        // once (1, the balance 10 → 9), one failing always: 50 % of 9
        // rounded up, 5.
        assert_eq!(requeues(0.5, &[0, 1, u32::MAX]), [0, 1, 5]);
        // No share, no cap of the budget's own.
        let b = FinagleBudget::new(SimDuration::from_secs(1), 10, 0.0);
        assert_eq!(b.call_cap(), None);
    }

    #[test]
    fn aws_quota_charges_by_cause_and_refunds_on_success() {
        let quota = || {
            BudgetSpec::AwsQuota {
                capacity: 500,
                retry_cost: 5,
                timeout_cost: 10,
                throttled_cost: None,
                no_retry_increment: 1,
            }
            .build()
        };
        let mut q = quota();
        // A cold-start outage: 100 transient retries, or 50 timeout retries.
        let n = (0..1_000)
            .filter(|_| q.try_retry(t(0), RetryCause::Transient).is_some())
            .count();
        assert_eq!(n, 100);
        let mut q = quota();
        let n = (0..1_000)
            .filter(|_| q.try_retry(t(0), RetryCause::Timeout).is_some())
            .count();
        assert_eq!(n, 50);
        // A retry that succeeds gets its 10 back; a plain success adds 1.
        q.on_result(t(0), success_after(10));
        assert_eq!(q.try_retry(t(0), RetryCause::Timeout), Some(10));
        assert!(q.try_retry(t(0), RetryCause::Transient).is_none());
        for _ in 0..5 {
            q.on_result(t(0), report(true));
        }
        assert_eq!(q.try_retry(t(0), RetryCause::Transient), Some(5));
    }

    /// The retry-quota cases of the AWS SDKs' shared retry specification
    /// (as the SDKs' own tests carry them), in the client's order: a
    /// success refunds its attempt's cost (1 for a first attempt); a
    /// failure at the last attempt asks the quota nothing; else a retry
    /// costs 5 or is refused. The quota after each answer, and what the
    /// client does.
    #[test]
    fn aws_quota_follows_the_specifications_standard_mode_cases() {
        #[derive(Debug, PartialEq)]
        enum Then {
            Retry,
            Success,
            MaxAttempts,
            QuotaExceeded,
        }
        use Then::*;
        // Each answer: a success?, what the client then does, the quota.
        type Answers<'a> = &'a [(bool, Then, u32)];
        let cases: [(&str, u32, u32, Answers); 5] = [
            (
                "retry eventually succeeds",
                3,
                500,
                &[
                    (false, Retry, 495),
                    (false, Retry, 490),
                    (true, Success, 495),
                ],
            ),
            (
                "fail due to max attempts reached",
                3,
                500,
                &[
                    (false, Retry, 495),
                    (false, Retry, 490),
                    (false, MaxAttempts, 490),
                ],
            ),
            (
                "retry quota reached after a single retry",
                3,
                5,
                &[(false, Retry, 0), (false, QuotaExceeded, 0)],
            ),
            (
                "verifying exponential backoff timing",
                5,
                500,
                &[
                    (false, Retry, 495),
                    (false, Retry, 490),
                    (false, Retry, 485),
                    (false, Retry, 480),
                    (false, MaxAttempts, 480),
                ],
            ),
            (
                "(not the specification's) a first attempt that succeeds adds 1",
                3,
                495,
                &[(true, Success, 496)],
            ),
        ];
        for (name, max_attempts, tokens, answers) in cases {
            let mut q = AwsQuota {
                capacity: 500,
                available: tokens,
                retry_cost: 5,
                timeout_cost: 10,
                throttled_cost: 5,
                no_retry_increment: 1,
            };
            let mut cost = 0;
            for (i, (ok, want, quota)) in answers.iter().enumerate() {
                let attempt = i as u32 + 1;
                let then = if *ok {
                    q.on_result(t(0), success_after(cost));
                    Success
                } else if attempt == max_attempts {
                    MaxAttempts
                } else {
                    match q.try_retry(t(0), RetryCause::Transient) {
                        Some(c) => {
                            cost = c;
                            Retry
                        }
                        None => QuotaExceeded,
                    }
                };
                assert_eq!((&then, q.available), (want, *quota), "{name}, answer {i}");
            }
        }
    }

    fn aws_2026() -> AwsQuota {
        AwsQuota {
            capacity: 500,
            available: 500,
            retry_cost: 14,
            timeout_cost: 14,
            throttled_cost: 5,
            no_retry_increment: 1,
        }
    }

    #[test]
    fn aws_2026_quota_charges_fourteen_and_five_for_a_throttle() {
        // A cold-start outage: 35 transient retries (timeouts alike), or
        // 100 throttled ones; a successful throttled retry refunds its 5.
        for (cause, want) in [
            (RetryCause::Transient, 35),
            (RetryCause::Timeout, 35),
            (RetryCause::Throttled, 100),
        ] {
            let mut q = aws_2026();
            let n = (0..1_000)
                .filter(|_| q.try_retry(t(0), cause).is_some())
                .count();
            assert_eq!(n, want, "{cause:?}");
        }
        let mut q = aws_2026();
        assert_eq!(q.try_retry(t(0), RetryCause::Throttled), Some(5));
        q.on_result(t(0), success_after(5));
        assert_eq!(q.available, 500);
    }

    /// Requests of up to 3 attempts, each failing with probability `f`,
    /// against the 2026 quota; every retry of `cause`. Returns the quota's
    /// mean level over the last half of `n` requests.
    fn aws_2026_after(f: f64, cause: RetryCause, n: u32) -> f64 {
        let mut q = aws_2026();
        let mut rng = RngStreams::new(11).stream("aws-2026");
        let mut sum = 0.0;
        for i in 0..n {
            if i >= n / 2 {
                sum += q.level();
            }
            let mut cost = 0;
            for attempt in 1..=3 {
                if rng.random::<f64>() >= f {
                    q.on_result(t(0), success_after(cost));
                    break;
                }
                if attempt == 3 {
                    break;
                }
                match q.try_retry(t(0), cause) {
                    Some(c) => cost = c,
                    None => break,
                }
            }
        }
        sum / f64::from(n - n / 2)
    }

    #[test]
    fn aws_2026_quota_drains_past_the_guides_failure_shares() {
        // The reference guide: with 3 attempts the quota "begins to drain
        // when more than ~22 % of requests result in sustained transient
        // failures, or more than ~32 % for throttling errors". A request
        // moves the quota by +1 (first try succeeds), 0 (the retry does),
        // −c (the second retry does) or −2c (all three fail): the drift
        // (1 − f) − c·f²(1 − f) − 2c·f³ crosses 0 at f = 0.215 for c = 14
        // and 0.321 for c = 5.
        let drift = |f: f64, c: f64| (1.0 - f) - c * f * f * (1.0 - f) - 2.0 * c * f.powi(3);
        let root = |c: f64| {
            let (mut lo, mut hi) = (0.0, 1.0);
            for _ in 0..60 {
                let mid = (lo + hi) / 2.0;
                if drift(mid, c) > 0.0 {
                    lo = mid
                } else {
                    hi = mid
                }
            }
            lo
        };
        let (transient, throttled) = (root(14.0), root(5.0));
        assert!((transient - 0.22).abs() < 0.01, "{transient}");
        assert!((throttled - 0.32).abs() < 0.01, "{throttled}");
        // The quota itself, 20,000 requests 3 points either side, its mean
        // level over the last 10,000: the drift, +0.25 and −0.29 tokens a
        // request for transient errors (+0.16 and −0.18 throttled), holds
        // it within a few tens of tokens of full or of empty (its one-off
        // drops of 14 or 28 keep it off the very top).
        for (cause, f_star) in [
            (RetryCause::Transient, transient),
            (RetryCause::Throttled, throttled),
        ] {
            let below = aws_2026_after(f_star - 0.03, cause, 20_000);
            let above = aws_2026_after(f_star + 0.03, cause, 20_000);
            assert!(below > 0.85, "{cause:?} at {:.3}: {below}", f_star - 0.03);
            assert!(above < 0.15, "{cause:?} at {:.3}: {above}", f_star + 0.03);
        }
    }

    #[test]
    fn ratio_budget_keeps_retries_to_a_tenth_of_requests() {
        let mut b = BudgetSpec::Ratio {
            ratio: 0.1,
            window: SimDuration::from_secs(60),
        }
        .build();
        let mut allowed = 0;
        for i in 0..10_000u64 {
            let now = t(i);
            b.on_request(now);
            if b.try_retry(now, RetryCause::Transient).is_some() {
                allowed += 1;
            }
        }
        assert_eq!(allowed, 1_000);
    }

    #[test]
    fn bucket_spends_ten_per_retry_and_earns_one_per_success() {
        let mut b = BudgetSpec::Bucket {
            max_tokens: 100,
            per_success: 1,
            per_retry: 10,
        }
        .build();
        let n = (0..100)
            .filter(|_| b.try_retry(t(0), RetryCause::Transient).is_some())
            .count();
        assert_eq!(n, 10);
        for _ in 0..25 {
            b.on_result(t(0), report(true));
        }
        let n = (0..100)
            .filter(|_| b.try_retry(t(0), RetryCause::Transient).is_some())
            .count();
        assert_eq!(n, 2);
    }
}
