//! Named policies with the libraries' real defaults (`shared/POLICIES.md`
//! has the sources). A preset is a complete client policy, plus pool
//! settings where the library owns the pool; any field can be overridden
//! after applying it.

use sim_core::time::SimDuration;

use super::backoff::{Backoff, BackoffKind, Jitter};
use super::breaker::{BreakerSpec, PollyConfig, R4jConfig, WindowType};
use super::budget::BudgetSpec;
use super::bulkhead::BulkheadSpec;
use super::throttle::ThrottleSpec;
use crate::config::{
    ClientConfig, HedgingConfig, PoolConfig, RetryAfterConfig, RetryAfterMode, RetryConfig,
    RetryOn, Scope, TimeoutStart, WorldConfig,
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
pub const NAMES: [&str; 20] = [
    "grpc-a6",
    "grpc-a6-hedging",
    "envoy",
    "istio",
    "finagle",
    "resilience4j",
    "polly-v8",
    "dotnet-standard-resilience",
    "aws-standard",
    "aws-adaptive",
    "aws-standard-2026",
    "aws-adaptive-2026",
    "go-net-http-defaults",
    "apache-httpclient5-defaults",
    "incident-1402-before",
    "incident-1402-after",
    "layered-payment-core",
    "llm-api-adaptive",
    "go-db-retry-budget",
    "httpclient-fix",
];

/// Names the write-ups' presets had before they were named for what they
/// model: still accepted, with a warning naming the new one.
pub const RENAMED: [(&str, &str); 4] = [
    ("seed-001-layered", "layered-payment-core"),
    ("seed-002-llm-api", "llm-api-adaptive"),
    ("seed-003-budget", "go-db-retry-budget"),
    ("seed-004-httpclient-fix", "httpclient-fix"),
];

/// The current name of a preset once called `old`, if it was renamed.
pub fn renamed(old: &str) -> Option<&'static str> {
    RENAMED.iter().find(|(o, _)| *o == old).map(|(_, n)| *n)
}

/// The preset called `name`.
pub fn get(name: &str) -> Option<Preset> {
    let name = renamed(name).unwrap_or(name);
    let base = ClientConfig::default();
    let (summary, client, pool) = match name {
        "grpc-a6" => (
            "gRFC A6 example: 4 attempts, backoff 0.1 s ×2 up to 1 s times U(0.8, 1.2), retry UNAVAILABLE (503, failed connects), \
             throttling 10 / 0.1, pushback honoured; the call deadline spans attempts, no per-attempt timeout",
            // The gRFC's backoff since its 2024 revision (grpc/proposal
            // #452), as grpc-go and grpc-java draw it: the capped schedule
            // times U(0.8, 1.2), so a retry may wait 20 % past
            // `maxBackoff`. It read U(0, schedule) before.
            ClientConfig {
                attempt_timeout: None,
                retry: RetryConfig {
                    max_retries: 3,
                    backoff: Backoff::exponential(
                        ms(100),
                        2.0,
                        Some(secs(1)),
                        Jitter::Proportional(0.2),
                    ),
                    // UNAVAILABLE: a 503, and what gRPC reports for a
                    // connection it could not make.
                    retry_on: vec![RetryOn::Status(503), RetryOn::ConnectFailure],
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::Honor,
                        cap: None,
                        counts_as_retry: true,
                        jitter: 0.0,
                        max_over_backoff: None,
                        resets_backoff: true,
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
        "grpc-a6-hedging" => (
            "gRFC A6's hedging example: 4 attempts 0.5 s apart, UNAVAILABLE, INTERNAL and ABORTED \
             non-fatal (the next hedge at once), throttling 10 / 0.1 stopping hedges, pushback honoured; \
             the call deadline spans attempts",
            ClientConfig {
                attempt_timeout: None,
                retry: RetryConfig {
                    max_retries: 0,
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::Honor,
                        ..RetryAfterConfig::default()
                    },
                    ..RetryConfig::default()
                },
                hedging: Some(HedgingConfig {
                    max_attempts: 4,
                    delay: ms(500),
                    // UNAVAILABLE (a 503 or a failed connect), INTERNAL
                    // (500), ABORTED (409).
                    non_fatal: vec![
                        RetryOn::Status(503),
                        RetryOn::ConnectFailure,
                        RetryOn::Status(500),
                        RetryOn::Status(409),
                    ],
                }),
                budget: Some(BudgetSpec::Grpc {
                    max_tokens: 10,
                    token_ratio: 0.1,
                }),
                ..base.clone()
            },
            None,
        ),
        "envoy" => (
            "Envoy router with retry_on 5xx: 1 retry, fully jittered backoff in whole ms below 25 ms × 2^(n−1) capped at 250 ms, \
             a 15 s route timeout that includes retries, at most 3 retries in progress per Envoy (the cluster's default \
             max_retries circuit breaker)",
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
                // Every cluster's default circuit breakers: `max_retries`
                // 3 retries in progress at once, each held from the
                // decision to retry (its backoff included) to its answer;
                // the one past it is not made (`upstream_rq_retry_overflow`)
                // and the failure goes back. That is the concurrency budget
                // at 0 % with a floor of 3. (Envoy's 1,024 connections,
                // pending and active requests are the pool's to set.)
                budget: Some(BudgetSpec::Envoy {
                    budget_percent: 0.0,
                    min_retry_concurrency: 3,
                }),
                ..base.clone()
            },
            None,
        ),
        "istio" => (
            "Istio's default route retries (Envoy underneath): 2 retries on a failed connect, a refused stream or a 503, \
             Envoy's jittered backoff (25 ms base, 250 ms cap), no route or per-try timeout, and circuit breakers \
             raised to 2^32 − 1 (no bound on retries in progress)",
            // Istio's `retry.DefaultPolicy()`: `num_retries: 2`, `retry_on:
            // connect-failure,refused-stream,unavailable,cancelled,
            // retriable-status-codes` with 503, another host for each retry
            // (`previous_hosts`; the balancer here may pick the same pod
            // again). HTTP routes have no timeout unless one is set, and
            // `getDefaultCircuitBreakerThresholds` lifts Envoy's
            // `max_retries` of 3 to `MaxUint32` (pod churn tripped it).
            ClientConfig {
                attempt_timeout: None,
                total_deadline: None,
                retry: RetryConfig {
                    max_retries: 2,
                    backoff: Backoff {
                        kind: BackoffKind::Envoy {
                            base: ms(25),
                            max: ms(250),
                        },
                        jitter: Jitter::Full,
                    },
                    retry_on: vec![RetryOn::ConnectFailure, RetryOn::Status(503)],
                    ..RetryConfig::default()
                },
                ..base.clone()
            },
            None,
        ),
        "finagle" => (
            "Finagle: requeue connection failures without backoff within RetryBudget() (10 s ttl, \
             10 retries/s, 20 %), a request taking at most 20 % of the budget's balance at its start",
            // `RequeueFilter`: `maxRetries = ceil(0.2 × balance)` after the
            // request's deposit, and no count besides (the 25 of
            // `Retries.Effort` bounds a `newClient`'s session acquisition,
            // not a request).
            ClientConfig {
                retry: RetryConfig {
                    max_retries: u32::MAX,
                    backoff: Backoff::fixed(SimDuration::ZERO),
                    retry_on: vec![RetryOn::ConnectFailure],
                    ..RetryConfig::default()
                },
                budget: Some(BudgetSpec::Finagle {
                    ttl: secs(10),
                    min_retries_per_sec: 10,
                    percent_can_retry: 0.2,
                    per_request_share: Some(0.2),
                }),
                ..base.clone()
            },
            None,
        ),
        "resilience4j" => (
            "Resilience4j defaults: Retry 3 attempts 500 ms apart on every failure, the breaker's refusals too; CircuitBreaker 50 % over \
             the last 100 calls (minimum 100), 60 s open, 10 half-open calls",
            // `RetryConfig`'s predicate is `throwable -> true`, and the
            // clients it wraps (RestTemplate, WebClient, Feign) throw for
            // every status at or above 400: every failure is retried, 4xx
            // and 429 with the rest, and so is the breaker's own
            // `CallNotPermittedException` (Retry outside CircuitBreaker,
            // the Spring Boot order).
            ClientConfig {
                retry: RetryConfig {
                    max_retries: 2,
                    backoff: Backoff::fixed(ms(500)),
                    retry_on: vec![
                        RetryOn::Timeout,
                        RetryOn::ConnectFailure,
                        RetryOn::ServerError,
                        RetryOn::ClientError,
                        RetryOn::RateLimited,
                        RetryOn::PoolTimeout,
                        RetryOn::BreakerOpen,
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
        "dotnet-standard-resilience" => (
            ".NET's AddStandardResilienceHandler (Microsoft.Extensions.Http.Resilience): 1,000 calls at once \
             (no queue); 30 s total timeout; 3 retries of transient answers (5xx, 408, 429, failed connects, \
             attempt timeouts), exponential from 2 s with Polly's jitter, Retry-After honoured; Polly's breaker \
             (10 % over 30 s, minimum 100, 5 s break); 10 s per attempt",
            // `HttpStandardResilienceOptions`: bulkhead → total timeout →
            // retry → breaker → attempt timeout, outermost first; the
            // retry's `HttpRetryStrategyOptions` (`ExponentialWithJitter`,
            // `ShouldRetryAfterHeader`, `IsTransient`); the breaker's
            // Polly defaults. The bulkhead is Polly's concurrency limiter
            // at its defaults (`RateLimiterConstants`: 1,000 permits, a
            // queue of 0), one per pipeline, so per pod.
            ClientConfig {
                bulkhead: Some(BulkheadSpec::places(1_000)),
                attempt_timeout: Some(secs(10)),
                total_deadline: Some(secs(30)),
                retry: RetryConfig {
                    max_retries: 3,
                    backoff: Backoff::exponential(secs(2), 2.0, None, Jitter::PollyV2),
                    retry_on: vec![
                        RetryOn::Timeout,
                        RetryOn::ConnectFailure,
                        RetryOn::ServerError,
                        RetryOn::Status(408),
                        RetryOn::RateLimited,
                    ],
                    // Polly keeps its schedule (and its jitter's state)
                    // across a Retry-After wait.
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::Honor,
                        resets_backoff: false,
                        ..RetryAfterConfig::default()
                    },
                    ..RetryConfig::default()
                },
                breaker: Some(BreakerSpec::Polly(PollyConfig::default())),
                ..base.clone()
            },
            None,
        ),
        "aws-standard" | "aws-adaptive" | "aws-standard-2026" | "aws-adaptive-2026" => {
            let revised = name.ends_with("-2026");
            let summary = match name {
                "aws-standard" => {
                    "AWS SDK standard mode (v2.0): 3 attempts, full jitter 1 s ×2 up to 20 s, \
                     retry quota 500 (5 per retry, 10 per timeout)"
                }
                "aws-adaptive" => {
                    "AWS SDK adaptive mode (v2.0): standard mode plus the CUBIC client rate limiter, \
                     on after the first throttle"
                }
                "aws-standard-2026" => {
                    "AWS SDK standard mode as revised in 2026 (v2.1): 3 attempts, full jitter 50 ms ×2 \
                     (1 s ×2 after a throttle) up to 20 s, x-amz-retry-after within [backoff, backoff + 5 s], \
                     retry quota 500 (14 per retry, 5 per throttled retry)"
                }
                _ => {
                    "AWS SDK adaptive mode as revised in 2026 (v2.1): the 2026 standard mode plus the \
                     CUBIC client rate limiter, on after the first throttle"
                }
            };
            // The 2026 revision (the SDKs' `AWS_NEW_RETRIES_2026`, the
            // SDKs and Tools reference guide's retry behaviour page):
            // `random(0, 1) × min(20 s, base × 2^retry)` with a base of
            // 50 ms, or 1 s after a throttling error; a server's
            // `x-amz-retry-after` taken within [backoff, backoff + 5 s];
            // timeouts cost what other transient errors do.
            let (first, throttled_backoff, retry_after, quota) = if revised {
                (
                    ms(50),
                    Some(Backoff::exponential(
                        secs(1),
                        2.0,
                        Some(secs(20)),
                        Jitter::Full,
                    )),
                    RetryAfterConfig {
                        mode: RetryAfterMode::AtLeast,
                        max_over_backoff: Some(secs(5)),
                        ..RetryAfterConfig::default()
                    },
                    BudgetSpec::AwsQuota {
                        capacity: 500,
                        retry_cost: 14,
                        timeout_cost: 14,
                        throttled_cost: Some(5),
                        no_retry_increment: 1,
                    },
                )
            } else {
                (
                    secs(1),
                    None,
                    RetryAfterConfig::default(),
                    BudgetSpec::AwsQuota {
                        capacity: 500,
                        retry_cost: 5,
                        timeout_cost: 10,
                        throttled_cost: None,
                        no_retry_increment: 1,
                    },
                )
            };
            (
                summary,
                ClientConfig {
                    retry: RetryConfig {
                        max_retries: 2,
                        backoff: Backoff::exponential(first, 2.0, Some(secs(20)), Jitter::Full),
                        throttled_backoff,
                        retry_on: vec![
                            RetryOn::Timeout,
                            RetryOn::ConnectFailure,
                            RetryOn::Status(500),
                            RetryOn::Status(502),
                            RetryOn::Status(503),
                            RetryOn::Status(504),
                            RetryOn::RateLimited,
                        ],
                        retry_after,
                        ..RetryConfig::default()
                    },
                    budget: Some(quota),
                    throttle: name
                        .starts_with("aws-adaptive")
                        .then_some(ThrottleSpec::AwsAdaptive),
                    ..base.clone()
                },
                None,
            )
        }
        "go-net-http-defaults" => (
            "Go net/http defaults: no client timeout, 30 s dial timeout, no retries, \
             no limit on connections per host, 2 idle ones kept (the rest closed after use), \
             90 s idle timeout",
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
                // `MaxIdleConnsPerHost` 0 means `DefaultMaxIdleConnsPerHost`.
                max_idle: Some(2),
                ..PoolConfig::default()
            }),
        ),
        "apache-httpclient5-defaults" => (
            "Apache HttpClient 5 defaults: 5 connections per route, 3 min lease wait, 3 min connect timeout, \
             1 retry after 1 s on 429/503 whatever the method (Retry-After honoured); no timeout or failed \
             connect is retried",
            // `DefaultHttpRequestRetryStrategy`: a 429 or 503 is retried
            // whatever the method; I/O errors only for idempotent requests
            // and never of the classes it lists, which hold every one this
            // model has (a read or connect timeout and a lease timeout are
            // `InterruptedIOException`s, a refused connect a
            // `ConnectException`).
            ClientConfig {
                connect_timeout: Some(secs(180)),
                attempt_timeout: None,
                timeout_starts: TimeoutStart::ConnectionAcquired,
                retry: RetryConfig {
                    max_retries: 1,
                    backoff: Backoff::fixed(secs(1)),
                    retry_on: vec![RetryOn::RateLimited, RetryOn::Status(503)],
                    idempotent_only: false,
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::Honor,
                        cap: None,
                        counts_as_retry: true,
                        jitter: 0.0,
                        max_over_backoff: None,
                        resets_backoff: true,
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
        "layered-payment-core" => (
            "The layered-retries write-up's payment core (its tuning matrix: 2 s / 8 s / 2): one immediate \
             retry of an idempotent request for 502/503/504 answered within 100 ms, then 2 retries on \
             502/503/504/509 or a Retry-After, exponential from 2 s, ±10 % jitter, capped at 8 s, waiting at \
             least what Retry-After says",
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
                    // "only for idempotent GET/HEAD": the fast layer, and
                    // with it every retry, only for idempotent requests.
                    idempotent_only: true,
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::AtLeast,
                        cap: Some(secs(30)),
                        counts_as_retry: true,
                        jitter: 0.0,
                        max_over_backoff: None,
                        resets_backoff: true,
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
        "llm-api-adaptive" => (
            "The LLM-API write-up's AdaptiveRetryClient: 30 s per attempt inside a 60 s total deadline, 3 \
             retries on 5xx and timeouts, backoff 1 s × 2^n at 0.5–1.0 × the delay, capped at 30 s, doubled \
             while more than 30 % of the last 100 attempts failed; 429 waits Retry-After without counting as \
             a retry; 4xx never retried",
            ClientConfig {
                attempt_timeout: Some(secs(30)),
                total_deadline: Some(secs(60)),
                retry: RetryConfig {
                    max_retries: 3,
                    // `delay * (0.5 + Math.random() * 0.5)`: equal jitter;
                    // `maxDelayMs: 30000`.
                    backoff: Backoff::exponential(secs(1), 2.0, Some(secs(30)), Jitter::Equal),
                    retry_on: vec![RetryOn::Timeout, RetryOn::ServerError, RetryOn::RateLimited],
                    retry_after: RetryAfterConfig {
                        mode: RetryAfterMode::Honor,
                        cap: Some(secs(60)),
                        counts_as_retry: false,
                        jitter: 0.0,
                        max_over_backoff: None,
                        resets_backoff: true,
                    },
                    adaptive: Some(crate::policy::adaptive_backoff::AdaptiveBackoffSpec {
                        window: 100,
                        failure_rate: 0.3,
                        factor: 2.0,
                    }),
                    ..RetryConfig::default()
                },
                ..base.clone()
            },
            None,
        ),
        "go-db-retry-budget" => (
            "The Go write-up's remedy: a 500 ms request context and a 200 ms dial timeout, 3 retries of \
             timeouts, connection errors and 503 under a service-wide token budget (+1 per success, −10 per \
             retry), full jitter from 50 ms, deadlines propagated",
            ClientConfig {
                // `context.WithTimeout(parentCtx, 500*time.Millisecond)`,
                // `net.Dialer{Timeout: 200 * time.Millisecond}`.
                attempt_timeout: Some(ms(500)),
                connect_timeout: Some(ms(200)),
                propagate_deadline: true,
                retry: RetryConfig {
                    max_retries: 3,
                    backoff: Backoff::exponential(ms(50), 2.0, None, Jitter::Full),
                    retry_on: vec![
                        RetryOn::Timeout,
                        RetryOn::ConnectFailure,
                        RetryOn::Status(503),
                    ],
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
        "httpclient-fix" => (
            "The HttpClient write-up's fix: at most 2 retries, a 2.5 s socket timeout from the moment a \
             connection is leased, backoff 200 → 400 → 800 ms plus 0–100 ms of random jitter, and a breaker \
             (30 % failures over 20 calls, 10 s open, 5 half-open calls)",
            ClientConfig {
                attempt_timeout: Some(ms(2_500)),
                // HttpClient's response (socket) timeout runs on the leased
                // connection, not while waiting for one.
                timeout_starts: TimeoutStart::ConnectionAcquired,
                retry: RetryConfig {
                    max_retries: 2,
                    // `baseDelayMillis * (1L << (attempt - 1))` plus 0–100 ms.
                    backoff: Backoff::exponential(ms(200), 2.0, None, Jitter::Additive(ms(100))),
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
        .chain(RENAMED.iter().map(|(old, _)| old))
        .copied()
        .map(|n| (strsim_distance(name, n), renamed(n).unwrap_or(n)))
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
        assert_eq!(closest("istio-1.2"), Some("istio"));
        assert_eq!(closest("linkerd"), None);
        assert_eq!(closest("resilience4"), Some("resilience4j"));
    }
    fn client(name: &str) -> ClientConfig {
        get(name).unwrap_or_else(|| panic!("{name}")).client
    }

    fn exponential(b: &Backoff) -> (SimDuration, f64, Option<SimDuration>) {
        match b.kind {
            BackoffKind::Exponential {
                base,
                multiplier,
                cap,
            } => (base, multiplier, cap),
            ref k => panic!("not exponential: {k:?}"),
        }
    }

    #[test]
    fn old_names_resolve_to_the_presets_now_named_for_what_they_model() {
        for (old, new) in RENAMED {
            assert_eq!(get(old).map(|p| p.name), Some(new));
            assert!(!NAMES.contains(&old));
        }
        assert_eq!(closest("seed-002-llm"), Some("llm-api-adaptive"));
    }

    /// POLICIES.md §1, gRFC A6's example config.
    #[test]
    fn grpc_a6_is_the_grfc_example() {
        let c = client("grpc-a6");
        assert_eq!(c.retry.max_retries, 3, "maxAttempts 4");
        assert_eq!(exponential(&c.retry.backoff), (ms(100), 2.0, Some(secs(1))));
        // The revised gRFC (2024): `min(initialBackoff·multiplier^(n−1),
        // maxBackoff) · random(0.8, 1.2)`.
        assert_eq!(c.retry.backoff.jitter, Jitter::Proportional(0.2));
        assert_eq!(
            c.budget,
            Some(BudgetSpec::Grpc {
                max_tokens: 10,
                token_ratio: 0.1
            })
        );
        assert_eq!(c.retry.retry_after.mode, RetryAfterMode::Honor, "pushback");
        assert_eq!(c.attempt_timeout, None, "the deadline spans attempts");
        // retryableStatusCodes [UNAVAILABLE]: a 503 or a failed connect.
        assert_eq!(
            c.retry.retry_on,
            vec![RetryOn::Status(503), RetryOn::ConnectFailure]
        );
    }

    /// gRFC A6's hedging example: maxAttempts 4, hedgingDelay 0.5 s,
    /// nonFatalStatusCodes [UNAVAILABLE, INTERNAL, ABORTED], with the
    /// throttling example; a call hedges or retries, never both.
    #[test]
    fn grpc_a6_hedging_is_the_grfc_example() {
        let c = client("grpc-a6-hedging");
        let h = c.hedging.as_ref().expect("hedging");
        assert_eq!((h.max_attempts, h.delay), (4, ms(500)));
        use crate::outcome::{AttemptOutcome, Pushback};
        let non_fatal = |o| h.non_fatal.iter().any(|r| r.matches(o));
        assert!(non_fatal(AttemptOutcome::ServerError(503, Pushback::None)));
        assert!(non_fatal(AttemptOutcome::ConnectFailure));
        assert!(non_fatal(AttemptOutcome::ServerError(500, Pushback::None)));
        assert!(non_fatal(AttemptOutcome::ClientError(409)));
        assert!(!non_fatal(AttemptOutcome::ClientError(400)));
        assert_eq!(c.retry.max_retries, 0);
        assert_eq!(
            c.budget,
            Some(BudgetSpec::Grpc {
                max_tokens: 10,
                token_ratio: 0.1
            })
        );
    }

    /// POLICIES.md §2: 1 retry, 25 ms base, 10× cap, 15 s route timeout,
    /// the cluster's `max_retries` circuit breaker of 3.
    #[test]
    fn envoy_is_envoys_router_default() {
        let c = client("envoy");
        assert_eq!(c.retry.max_retries, 1);
        assert_eq!(c.total_deadline, Some(secs(15)));
        assert!(
            matches!(c.retry.backoff.kind, BackoffKind::Envoy { base, max } if base == ms(25) && max == ms(250))
        );
        assert_eq!(
            c.budget,
            Some(BudgetSpec::Envoy {
                budget_percent: 0.0,
                min_retry_concurrency: 3
            })
        );
        assert_eq!(c.scope, Scope::Pod, "one Envoy per pod");
    }

    /// Istio's default retry policy: 2 retries on a failed connect or a
    /// 503 (not on other 5xx, nor on a timeout, there being none), no
    /// timeouts, Envoy's backoff, and no bound on retries in progress.
    #[test]
    fn istio_is_istios_default_route() {
        let c = client("istio");
        assert_eq!(c.retry.max_retries, 2);
        assert_eq!(c.attempt_timeout, None);
        assert_eq!(c.total_deadline, None);
        assert_eq!(c.budget, None);
        assert!(
            matches!(c.retry.backoff.kind, BackoffKind::Envoy { base, max } if base == ms(25) && max == ms(250))
        );
        use crate::outcome::{AttemptOutcome, Pushback};
        let retried = |o: AttemptOutcome| c.retry.retry_on.iter().any(|r| r.matches(o));
        assert!(retried(AttemptOutcome::ServerError(503, Pushback::None)));
        assert!(retried(AttemptOutcome::ConnectFailure));
        assert!(!retried(AttemptOutcome::ServerError(500, Pushback::None)));
        assert!(!retried(AttemptOutcome::Timeout));
    }

    /// POLICIES.md: Finagle's RetryBudget() defaults.
    #[test]
    fn finagle_is_its_default_budget() {
        let c = client("finagle");
        assert_eq!(
            c.budget,
            Some(BudgetSpec::Finagle {
                ttl: secs(10),
                min_retries_per_sec: 10,
                percent_can_retry: 0.2,
                per_request_share: Some(0.2),
            })
        );
        assert_eq!(
            c.retry.max_retries,
            u32::MAX,
            "no count, the budget's share"
        );
        assert_eq!(
            c.retry.retry_on,
            vec![RetryOn::ConnectFailure],
            "requeues only"
        );
    }

    /// POLICIES.md §3: maxAttempts 3, waitDuration 500 ms; breaker defaults.
    #[test]
    fn resilience4j_is_its_defaults() {
        let c = client("resilience4j");
        assert_eq!(c.retry.max_retries, 2);
        assert_eq!(c.retry.backoff, Backoff::fixed(ms(500)));
        // Every exception retried: every failure an attempt can end with.
        use crate::outcome::{AttemptOutcome, Pushback};
        for o in [
            AttemptOutcome::Timeout,
            AttemptOutcome::ConnectFailure,
            AttemptOutcome::ServerError(503, Pushback::None),
            AttemptOutcome::ClientError(404),
            AttemptOutcome::RateLimited(0),
            AttemptOutcome::PoolTimeout,
            AttemptOutcome::BreakerRefused,
        ] {
            assert!(c.retry.retry_on.iter().any(|r| r.matches(o)), "{o:?}");
        }
        assert_eq!(
            c.breaker,
            Some(BreakerSpec::Resilience4j(R4jConfig::default()))
        );
        let d = R4jConfig::default();
        assert_eq!(
            (
                d.failure_rate_threshold,
                d.sliding_window_size,
                d.minimum_number_of_calls
            ),
            (50.0, 100, 100)
        );
        assert_eq!(
            (
                d.wait_duration_in_open_state,
                d.permitted_calls_in_half_open
            ),
            (secs(60), 10)
        );
    }

    /// POLICIES.md §4: 3 retries, 2 s constant, no jitter; breaker defaults.
    #[test]
    fn polly_v8_is_its_defaults() {
        let c = client("polly-v8");
        assert_eq!(c.retry.max_retries, 3);
        assert_eq!(c.retry.backoff, Backoff::fixed(secs(2)));
        assert_eq!(c.breaker, Some(BreakerSpec::Polly(PollyConfig::default())));
    }

    /// POLICIES.md §6: standard mode v2.0, 3 attempts, 1 s × 2 up to 20 s.
    #[test]
    fn aws_standard_and_adaptive_are_the_sdk_modes() {
        for name in ["aws-standard", "aws-adaptive"] {
            let c = client(name);
            assert_eq!(c.retry.max_retries, 2);
            assert_eq!(
                exponential(&c.retry.backoff),
                (secs(1), 2.0, Some(secs(20)))
            );
            assert_eq!(
                c.budget,
                Some(BudgetSpec::AwsQuota {
                    capacity: 500,
                    retry_cost: 5,
                    timeout_cost: 10,
                    throttled_cost: None,
                    no_retry_increment: 1
                })
            );
            assert_eq!(c.retry.throttled_backoff, None);
            assert_eq!(c.retry.retry_after.mode, RetryAfterMode::Ignore);
        }
        assert_eq!(client("aws-standard").throttle, None);
        assert_eq!(
            client("aws-adaptive").throttle,
            Some(ThrottleSpec::AwsAdaptive)
        );
    }

    /// `HttpStandardResilienceOptions`' defaults: Polly's concurrency
    /// limiter (1,000, no queue), 30 s in all, 10 s an attempt,
    /// `HttpRetryStrategyOptions` (3, 2 s, exponential with Polly's
    /// jitter, Retry-After, transient answers), Polly's breaker.
    #[test]
    fn dotnet_standard_resilience_is_the_handlers_defaults() {
        let c = client("dotnet-standard-resilience");
        assert_eq!(c.bulkhead, Some(BulkheadSpec::places(1_000)));
        assert_eq!(c.scope, Scope::Pod, "a limiter per pipeline");
        assert_eq!(c.total_deadline, Some(secs(30)));
        assert_eq!(c.attempt_timeout, Some(secs(10)));
        assert_eq!(c.retry.max_retries, 3);
        assert_eq!(exponential(&c.retry.backoff), (secs(2), 2.0, None));
        assert_eq!(c.retry.backoff.jitter, Jitter::PollyV2);
        assert_eq!(c.retry.retry_after.mode, RetryAfterMode::Honor);
        assert!(c.retry.retry_after.counts_as_retry);
        assert!(
            !c.retry.retry_after.resets_backoff,
            "Polly's schedule carries on"
        );
        assert_eq!(c.breaker, Some(BreakerSpec::Polly(PollyConfig::default())));
        // `IsTransient`: 5xx, 408, 429, HttpRequestException (a failed
        // connect), TimeoutRejectedException (the attempt timeout); not
        // other 4xx.
        use crate::outcome::{AttemptOutcome, Pushback};
        let retried = |o: AttemptOutcome| c.retry.retry_on.iter().any(|r| r.matches(o));
        assert!(retried(AttemptOutcome::ServerError(500, Pushback::None)));
        assert!(retried(AttemptOutcome::RateLimited(0)));
        assert!(retried(AttemptOutcome::Timeout));
        assert!(retried(AttemptOutcome::ConnectFailure));
        assert!(!retried(AttemptOutcome::ClientError(404)));
    }

    /// The SDKs' 2026 revision (the reference guide's retry behaviour
    /// page): bases 50 ms and 1 s (throttling), MAX_BACKOFF before the
    /// jitter, x-amz-retry-after within [backoff, backoff + 5 s], costs 14
    /// and 5 (timeouts no longer apart).
    #[test]
    fn aws_2026_modes_are_the_revised_defaults() {
        for name in ["aws-standard-2026", "aws-adaptive-2026"] {
            let c = client(name);
            assert_eq!(c.retry.max_retries, 2, "3 attempts");
            assert_eq!(exponential(&c.retry.backoff), (ms(50), 2.0, Some(secs(20))));
            assert_eq!(c.retry.backoff.jitter, Jitter::Full);
            let throttled = c.retry.throttled_backoff.as_ref().expect(name);
            assert_eq!(exponential(throttled), (secs(1), 2.0, Some(secs(20))));
            assert_eq!(throttled.jitter, Jitter::Full);
            assert_eq!(c.retry.retry_after.mode, RetryAfterMode::AtLeast);
            assert_eq!(c.retry.retry_after.max_over_backoff, Some(secs(5)));
            assert_eq!(
                c.budget,
                Some(BudgetSpec::AwsQuota {
                    capacity: 500,
                    retry_cost: 14,
                    timeout_cost: 14,
                    throttled_cost: Some(5),
                    no_retry_increment: 1
                })
            );
        }
        assert_eq!(client("aws-standard-2026").throttle, None);
        assert_eq!(
            client("aws-adaptive-2026").throttle,
            Some(ThrottleSpec::AwsAdaptive)
        );
    }

    /// Go's net/http: no client timeout, 30 s dial, 90 s idle, no retries.
    #[test]
    fn go_net_http_is_its_defaults() {
        let p = get("go-net-http-defaults").unwrap();
        assert_eq!(
            (p.client.attempt_timeout, p.client.connect_timeout),
            (None, Some(secs(30)))
        );
        assert_eq!(p.client.retry.max_retries, 0);
        let pool = p.pool.unwrap();
        assert_eq!(
            (pool.idle_timeout, pool.max_idle),
            (Some(secs(90)), Some(2))
        );
    }

    /// Apache HttpClient 5: 5 per route, 3 min timeouts, 1 retry after 1 s
    /// of a 429 or 503 only (`DefaultHttpRequestRetryStrategy`).
    #[test]
    fn apache_httpclient5_is_its_defaults() {
        let p = get("apache-httpclient5-defaults").unwrap();
        assert_eq!(p.client.connect_timeout, Some(secs(180)));
        assert_eq!(p.client.retry.max_retries, 1);
        assert_eq!(p.client.retry.backoff, Backoff::fixed(secs(1)));
        assert_eq!(
            p.client.retry.retry_on,
            vec![RetryOn::RateLimited, RetryOn::Status(503)]
        );
        assert!(!p.client.retry.idempotent_only);
        assert_eq!(p.pool.map(|p| p.max_connections), Some(5));
    }

    /// INCIDENTS.md A: the deployed fix, line by line.
    #[test]
    fn incident_1402_after_is_the_deployed_fix() {
        let c = client("incident-1402-after");
        assert_eq!(
            (c.connect_timeout, c.attempt_timeout),
            (Some(secs(5)), Some(secs(60)))
        );
        assert_eq!(
            exponential(&c.retry.backoff),
            (secs(1), 2.0, Some(secs(16)))
        );
        assert_eq!(
            c.retry.backoff.jitter,
            Jitter::Proportional(0.25),
            "0.75–1.25 s"
        );
        assert_eq!(c.retry.max_retries, 2);
        assert_eq!(
            c.retry.retry_on,
            vec![RetryOn::Timeout, RetryOn::ServerError]
        );
        let Some(BreakerSpec::Resilience4j(b)) = &c.breaker else {
            panic!("a breaker")
        };
        assert_eq!(
            (b.failure_rate_threshold, b.sliding_window_size),
            (50.0, 10)
        );
        assert_eq!(b.wait_duration_in_open_state, secs(30));
        assert!(c.fallback && c.budget.is_some());
    }

    /// INCIDENTS.md A: 3 retries, fixed 1 s, no jitter, every non-2xx.
    #[test]
    fn incident_1402_before_is_the_old_policy() {
        let c = client("incident-1402-before");
        assert_eq!(c.retry.max_retries, 3);
        assert_eq!(c.retry.backoff, Backoff::fixed(secs(1)));
    }

    /// INCIDENTS.md B, the payment core row of the tuning matrix.
    #[test]
    fn layered_payment_core_is_the_write_ups_tuning() {
        let c = client("layered-payment-core");
        assert_eq!(
            exponential(&c.retry.backoff),
            (secs(2), 2.0, Some(secs(8))),
            "2 s / 8 s"
        );
        assert_eq!(c.retry.max_retries, 2);
        assert_eq!(c.retry.backoff.jitter, Jitter::Proportional(0.1), "±10 %");
        let fast = c.retry.fast_retry.expect("the fast layer");
        assert_eq!((fast.statuses, fast.within), (vec![502, 503, 504], ms(100)));
        assert!(c.retry.idempotent_only, "only idempotent GET/HEAD");
        assert!(c.retry.retry_on.contains(&RetryOn::Status(509)));
    }

    /// INCIDENTS.md C and the write-up's AdaptiveRetryClient code.
    #[test]
    fn llm_api_adaptive_is_the_write_ups_client() {
        let c = client("llm-api-adaptive");
        assert_eq!(
            (c.attempt_timeout, c.total_deadline),
            (Some(secs(30)), Some(secs(60)))
        );
        assert_eq!(c.retry.max_retries, 3);
        assert_eq!(
            exponential(&c.retry.backoff),
            (secs(1), 2.0, Some(secs(30))),
            "maxDelayMs 30000"
        );
        assert_eq!(
            c.retry.backoff.jitter,
            Jitter::Equal,
            "delay × (0.5 + random × 0.5)"
        );
        assert!(
            !c.retry.retry_after.counts_as_retry,
            "429 waits are not retries"
        );
        let a = c.retry.adaptive.expect("adaptive backoff");
        assert_eq!((a.window, a.failure_rate, a.factor), (100, 0.3, 2.0));
        assert!(
            !c.retry.retry_on.contains(&RetryOn::ClientError),
            "4xx never"
        );
    }

    /// INCIDENTS.md D and the write-up's Go code.
    #[test]
    fn go_db_retry_budget_is_the_write_ups_remedy() {
        let c = client("go-db-retry-budget");
        assert_eq!(
            c.attempt_timeout,
            Some(ms(500)),
            "context.WithTimeout 500 ms"
        );
        assert_eq!(c.connect_timeout, Some(ms(200)), "Dialer Timeout 200 ms");
        assert!(
            c.retry.retry_on.contains(&RetryOn::Timeout),
            "it retries timeouts"
        );
        assert_eq!(exponential(&c.retry.backoff).0, ms(50));
        assert_eq!(
            c.retry.backoff.jitter,
            Jitter::Full,
            "rand × base × 2^attempt"
        );
        assert_eq!(
            c.budget,
            Some(BudgetSpec::Bucket {
                max_tokens: 100,
                per_success: 1,
                per_retry: 10
            })
        );
        assert!(c.propagate_deadline && c.scope == Scope::Global);
    }

    /// INCIDENTS.md E and the write-up's Java code.
    #[test]
    fn httpclient_fix_is_the_write_ups_fix() {
        let c = client("httpclient-fix");
        assert_eq!(c.retry.max_retries, 2);
        assert_eq!(c.attempt_timeout, Some(ms(2_500)), "5 s → 2.5 s");
        assert_eq!(
            c.timeout_starts,
            TimeoutStart::ConnectionAcquired,
            "a socket timeout"
        );
        assert_eq!(
            exponential(&c.retry.backoff),
            (ms(200), 2.0, None),
            "200 → 400 → 800"
        );
        assert_eq!(
            c.retry.backoff.jitter,
            Jitter::Additive(ms(100)),
            "plus 0–100 ms"
        );
        let Some(BreakerSpec::Resilience4j(b)) = &c.breaker else {
            panic!("a breaker")
        };
        assert_eq!(
            (b.failure_rate_threshold, b.sliding_window_size),
            (30.0, 20)
        );
        assert_eq!(
            (
                b.wait_duration_in_open_state,
                b.permitted_calls_in_half_open
            ),
            (secs(10), 5)
        );
    }
}
