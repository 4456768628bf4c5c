//! Named policies with the libraries' real defaults (`shared/POLICIES.md`
//! has the sources). A preset is a complete client policy, plus pool
//! settings where the library owns the pool; any field can be overridden
//! after applying it.

use sim_core::time::SimDuration;

use super::backoff::{Backoff, BackoffKind, Jitter};
use super::breaker::{BreakerSpec, PollyConfig, R4jConfig, WindowType};
use super::budget::BudgetSpec;
use super::throttle::ThrottleSpec;
use crate::config::{
    ClientConfig, PoolConfig, RetryAfterConfig, RetryAfterMode, RetryConfig, RetryOn, Scope,
    TimeoutStart, WorldConfig,
};

fn ms(v: u64) -> SimDuration {
    SimDuration::from_millis(v)
}
fn secs(v: u64) -> SimDuration {
    SimDuration::from_secs(v)
}

/// A named policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    /// Its name, as written in config.
    pub name: &'static str,
    /// One line on what it models.
    pub summary: &'static str,
    /// The client policy.
    pub client: ClientConfig,
    /// Pool settings the library owns, if it owns the pool.
    pub pool: Option<PoolConfig>,
}

impl Preset {
    /// Puts the preset's client policy (and pool settings, if any) into
    /// `cfg`.
    pub fn apply(&self, cfg: &mut WorldConfig) {
        cfg.client = self.client.clone();
        if let Some(pool) = &self.pool {
            cfg.service.pool = pool.clone();
        }
    }
}

/// Every preset's name, in the order `stormsim list` shows them.
pub const NAMES: [&str; 15] = [
    "grpc-a6",
    "envoy",
    "finagle",
    "resilience4j",
    "polly-v8",
    "aws-standard",
    "aws-adaptive",
    "go-net-http-defaults",
    "apache-httpclient5-defaults",
    "incident-1402-before",
    "incident-1402-after",
    "seed-001-layered",
    "seed-002-llm-api",
    "seed-003-budget",
    "seed-004-httpclient-fix",
];

/// The preset called `name`.
pub fn get(name: &str) -> Option<Preset> {
    let base = ClientConfig::default();
    let (summary, client, pool) = match name {
        "grpc-a6" => (
            "gRFC A6 example: 4 attempts, full-jitter backoff 0.1 s ×2 up to 1 s, retry UNAVAILABLE, \
             throttling 10 / 0.1, pushback honoured; the call deadline spans attempts, no per-attempt timeout",
            ClientConfig {
                attempt_timeout: None,
                retry: RetryConfig {
                    max_retries: 3,
                    backoff: Backoff::exponential(ms(100), 2.0, Some(secs(1)), Jitter::Full),
                    retry_on: vec![RetryOn::Status(503)],
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::Honor,
                        cap: None,
                        counts_as_retry: true,
                        jitter: 0.0,
                    },
                    ..RetryConfig::default()
                },
                budget: Some(BudgetSpec::Grpc {
                    max_tokens: 10,
                    token_ratio: 0.1,
                }),
                ..base.clone()
            },
            None,
        ),
        "envoy" => (
            "Envoy router with retry_on 5xx: 1 retry, fully jittered (2^n−1)·25 ms backoff capped at 250 ms, \
             a 15 s route timeout that includes retries",
            ClientConfig {
                attempt_timeout: None,
                total_deadline: Some(secs(15)),
                retry: RetryConfig {
                    max_retries: 1,
                    backoff: Backoff {
                        kind: BackoffKind::Envoy {
                            base: ms(25),
                            max: ms(250),
                        },
                        jitter: Jitter::Full,
                    },
                    retry_on: vec![RetryOn::ServerError, RetryOn::ConnectFailure],
                    ..RetryConfig::default()
                },
                ..base.clone()
            },
            None,
        ),
        "finagle" => (
            "Finagle: requeue connection failures without backoff, up to 25 per request, \
             within RetryBudget() (10 s ttl, 10 retries/s, 20 %)",
            ClientConfig {
                retry: RetryConfig {
                    max_retries: 25,
                    backoff: Backoff::fixed(SimDuration::ZERO),
                    retry_on: vec![RetryOn::ConnectFailure],
                    ..RetryConfig::default()
                },
                budget: Some(BudgetSpec::Finagle {
                    ttl: secs(10),
                    min_retries_per_sec: 10,
                    percent_can_retry: 0.2,
                }),
                ..base.clone()
            },
            None,
        ),
        "resilience4j" => (
            "Resilience4j defaults: Retry 3 attempts 500 ms apart; CircuitBreaker 50 % over the last 100 calls \
             (minimum 100), 60 s open, 10 half-open calls",
            ClientConfig {
                retry: RetryConfig {
                    max_retries: 2,
                    backoff: Backoff::fixed(ms(500)),
                    retry_on: vec![
                        RetryOn::Timeout,
                        RetryOn::ConnectFailure,
                        RetryOn::ServerError,
                    ],
                    ..RetryConfig::default()
                },
                breaker: Some(BreakerSpec::Resilience4j(R4jConfig::default())),
                ..base.clone()
            },
            None,
        ),
        "polly-v8" => (
            "Polly v8 defaults: 3 retries 2 s apart without jitter; breaker at 10 % failures over 30 s \
             (minimum 100 calls), 5 s break, one probe",
            ClientConfig {
                retry: RetryConfig {
                    max_retries: 3,
                    backoff: Backoff::fixed(secs(2)),
                    retry_on: vec![
                        RetryOn::Timeout,
                        RetryOn::ConnectFailure,
                        RetryOn::ServerError,
                    ],
                    ..RetryConfig::default()
                },
                breaker: Some(BreakerSpec::Polly(PollyConfig::default())),
                ..base.clone()
            },
            None,
        ),
        "aws-standard" | "aws-adaptive" => (
            if name == "aws-standard" {
                "AWS SDK standard mode (v2.0): 3 attempts, full jitter 1 s ×2 up to 20 s, \
                 retry quota 500 (5 per retry, 10 per timeout)"
            } else {
                "AWS SDK adaptive mode: standard mode plus the CUBIC client rate limiter, on after the first throttle"
            },
            ClientConfig {
                retry: RetryConfig {
                    max_retries: 2,
                    backoff: Backoff::exponential(secs(1), 2.0, Some(secs(20)), Jitter::Full),
                    retry_on: vec![
                        RetryOn::Timeout,
                        RetryOn::ConnectFailure,
                        RetryOn::Status(500),
                        RetryOn::Status(502),
                        RetryOn::Status(503),
                        RetryOn::Status(504),
                        RetryOn::RateLimited,
                    ],
                    ..RetryConfig::default()
                },
                budget: Some(BudgetSpec::AwsQuota {
                    capacity: 500,
                    retry_cost: 5,
                    timeout_cost: 10,
                    no_retry_increment: 1,
                }),
                throttle: (name == "aws-adaptive").then_some(ThrottleSpec::AwsAdaptive),
                ..base.clone()
            },
            None,
        ),
        "go-net-http-defaults" => (
            "Go net/http defaults: no client timeout, 30 s dial timeout, no retries, \
             no limit on connections per host, 90 s idle timeout",
            ClientConfig {
                connect_timeout: Some(secs(30)),
                attempt_timeout: None,
                retry: RetryConfig {
                    max_retries: 0,
                    ..RetryConfig::default()
                },
                ..base.clone()
            },
            Some(PoolConfig {
                max_connections: 1_000_000,
                acquire_timeout: None,
                idle_timeout: Some(secs(90)),
                ..PoolConfig::default()
            }),
        ),
        "apache-httpclient5-defaults" => (
            "Apache HttpClient 5 defaults: 5 connections per route, 3 min lease wait, 3 min connect timeout, \
             1 retry after 1 s on 429/503 (Retry-After honoured) and I/O errors of idempotent requests",
            ClientConfig {
                connect_timeout: Some(secs(180)),
                attempt_timeout: None,
                timeout_starts: TimeoutStart::ConnectionAcquired,
                retry: RetryConfig {
                    max_retries: 1,
                    backoff: Backoff::fixed(secs(1)),
                    retry_on: vec![
                        RetryOn::RateLimited,
                        RetryOn::Status(503),
                        RetryOn::ConnectFailure,
                    ],
                    idempotent_only: true,
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::Honor,
                        cap: None,
                        counts_as_retry: true,
                        jitter: 0.0,
                    },
                    ..RetryConfig::default()
                },
                ..base.clone()
            },
            Some(PoolConfig {
                max_connections: 5,
                acquire_timeout: Some(secs(180)),
                idle_timeout: Some(secs(180)),
                ..PoolConfig::default()
            }),
        ),
        "incident-1402-before" => (
            "The 14:02 service before the fix: 30 s connect and read timeouts, the pool wait bounded only by \
             the caller's context; 3 retries at a fixed 1 s on every non-2xx and timeout, no breaker",
            // The write-up: "read timeout set to 30 s through the timeout
            // field", and the fix "added a context timeout to every request
            // so goroutines cannot block without end": before it, a wait
            // for a pool connection was not bounded by the 30 s.
            ClientConfig {
                connect_timeout: Some(secs(30)),
                attempt_timeout: Some(secs(30)),
                timeout_starts: TimeoutStart::ConnectionAcquired,
                retry: RetryConfig {
                    max_retries: 3,
                    backoff: Backoff::fixed(secs(1)),
                    retry_on: vec![
                        RetryOn::Timeout,
                        RetryOn::ConnectFailure,
                        RetryOn::ServerError,
                        RetryOn::ClientError,
                        RetryOn::RateLimited,
                        RetryOn::PoolTimeout,
                    ],
                    ..RetryConfig::default()
                },
                ..base.clone()
            },
            None,
        ),
        "incident-1402-after" => (
            "The 14:02 fix: 5 s connect, 60 s read, 2 retries on 5xx and timeouts with 1-2-4 s backoff \
             (±25 %, cap 16 s) under a global 10 % retry cap; breaker at 50 % over 10 s, 30 s before \
             half-open probes; fallback answers",
            ClientConfig {
                connect_timeout: Some(secs(5)),
                attempt_timeout: Some(secs(60)),
                timeout_starts: TimeoutStart::ConnectionAcquired,
                retry: RetryConfig {
                    max_retries: 2,
                    backoff: Backoff::exponential(
                        secs(1),
                        2.0,
                        Some(secs(16)),
                        Jitter::Proportional(0.25),
                    ),
                    retry_on: vec![RetryOn::Timeout, RetryOn::ServerError],
                    ..RetryConfig::default()
                },
                budget: Some(BudgetSpec::Ratio {
                    ratio: 0.1,
                    window: secs(10),
                }),
                breaker: Some(BreakerSpec::Resilience4j(R4jConfig {
                    failure_rate_threshold: 50.0,
                    sliding_window_type: WindowType::TimeBased,
                    sliding_window_size: 10,
                    minimum_number_of_calls: 20,
                    wait_duration_in_open_state: secs(30),
                    permitted_calls_in_half_open: 3,
                    ..R4jConfig::default()
                })),
                fallback: true,
                scope: Scope::Global,
                ..base.clone()
            },
            None,
        ),
        "seed-001-layered" => (
            "Seed 001's layered retries (payment-core tuning): one immediate retry for 502/503/504 answered \
             within 100 ms, then 2 retries on 502/503/504/509 with 2 s exponential backoff, ±10 % jitter, \
             capped at 8 s, waiting at least what Retry-After says",
            ClientConfig {
                retry: RetryConfig {
                    max_retries: 2,
                    backoff: Backoff::exponential(
                        secs(2),
                        2.0,
                        Some(secs(8)),
                        Jitter::Proportional(0.1),
                    ),
                    retry_on: vec![
                        RetryOn::Status(502),
                        RetryOn::Status(503),
                        RetryOn::Status(504),
                        RetryOn::Status(509),
                        RetryOn::RateLimited,
                    ],
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::AtLeast,
                        cap: Some(secs(30)),
                        counts_as_retry: true,
                        jitter: 0.0,
                    },
                    fast_retry: Some(crate::config::FastRetry {
                        max: 1,
                        statuses: vec![502, 503, 504],
                        within: ms(100),
                    }),
                    ..RetryConfig::default()
                },
                ..base.clone()
            },
            None,
        ),
        "seed-002-llm-api" => (
            "Seed 002's LLM-API client: 30 s per attempt inside a 60 s total deadline, 3 retries on 5xx and \
             timeouts with full-jitter exponential backoff from 1 s, 429 waits Retry-After without counting \
             as a retry, 4xx never retried",
            ClientConfig {
                attempt_timeout: Some(secs(30)),
                total_deadline: Some(secs(60)),
                retry: RetryConfig {
                    max_retries: 3,
                    backoff: Backoff::exponential(secs(1), 2.0, Some(secs(16)), Jitter::Full),
                    retry_on: vec![RetryOn::Timeout, RetryOn::ServerError, RetryOn::RateLimited],
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::Honor,
                        cap: Some(secs(60)),
                        counts_as_retry: false,
                        jitter: 0.0,
                    },
                    ..RetryConfig::default()
                },
                ..base.clone()
            },
            None,
        ),
        "seed-003-budget" => (
            "Seed 003's remedy: a service-wide retry budget (+1 token per success, −10 per retry), full jitter \
             from 50 ms, retries only for connection errors and 503, deadlines propagated",
            ClientConfig {
                propagate_deadline: true,
                retry: RetryConfig {
                    max_retries: 3,
                    backoff: Backoff::exponential(ms(50), 2.0, None, Jitter::Full),
                    retry_on: vec![RetryOn::ConnectFailure, RetryOn::Status(503)],
                    ..RetryConfig::default()
                },
                budget: Some(BudgetSpec::Bucket {
                    max_tokens: 100,
                    per_success: 1,
                    per_retry: 10,
                }),
                scope: Scope::Global,
                ..base.clone()
            },
            None,
        ),
        "seed-004-httpclient-fix" => (
            "Seed 004's fix: at most 2 retries, 2.5 s timeout, 200 ms doubling backoff with jitter, and a \
             breaker (30 % failures over 20 calls, 10 s open, 5 half-open calls)",
            ClientConfig {
                attempt_timeout: Some(ms(2_500)),
                retry: RetryConfig {
                    max_retries: 2,
                    backoff: Backoff::exponential(ms(200), 2.0, None, Jitter::Equal),
                    retry_on: vec![
                        RetryOn::Timeout,
                        RetryOn::ConnectFailure,
                        RetryOn::ServerError,
                    ],
                    ..RetryConfig::default()
                },
                breaker: Some(BreakerSpec::Resilience4j(R4jConfig {
                    failure_rate_threshold: 30.0,
                    sliding_window_size: 20,
                    minimum_number_of_calls: 20,
                    wait_duration_in_open_state: secs(10),
                    permitted_calls_in_half_open: 5,
                    ..R4jConfig::default()
                })),
                ..base.clone()
            },
            None,
        ),
        _ => return None,
    };
    Some(Preset {
        name: NAMES.iter().copied().find(|n| *n == name)?,
        summary,
        client,
        pool,
    })
}

/// The closest preset name to `name`, for "did you mean" messages.
pub fn closest(name: &str) -> Option<&'static str> {
    NAMES
        .iter()
        .copied()
        .map(|n| (strsim_distance(name, n), n))
        .filter(|(d, _)| *d <= 4)
        .min()
        .map(|(_, n)| n)
}

/// Levenshtein distance (small inputs only).
fn strsim_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_preset_exists_and_validates() {
        for name in NAMES {
            let p = get(name).unwrap_or_else(|| panic!("{name}"));
            let mut cfg = WorldConfig::default();
            p.apply(&mut cfg);
            cfg.validate().unwrap_or_else(|e| panic!("{name}: {e:?}"));
        }
        assert!(get("grpc").is_none());
        assert_eq!(closest("grpc-a5"), Some("grpc-a6"));
        assert_eq!(closest("polly"), Some("polly-v8"));
        assert_eq!(closest("istio"), None);
        assert_eq!(closest("resilience4"), Some("resilience4j"));
    }
}
