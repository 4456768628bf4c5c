//! How attempts and requests end.

use serde::{Deserialize, Serialize};

/// A server's word on whether and when to retry (gRPC's
/// `grpc-retry-pushback-ms`, HTTP's `Retry-After` on a 503).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushback {
    /// Nothing said.
    None,
    /// Retry after exactly this many nanoseconds.
    After(u64),
    /// Do not retry.
    DontRetry,
}

/// How one attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// A 2xx answer.
    Success,
    /// The per-attempt timeout fired first.
    Timeout,
    /// The connection could not be set up (refused or connect timeout).
    ConnectFailure,
    /// A 5xx answer, with the server's pushback if any.
    ServerError(u16, Pushback),
    /// A 4xx answer other than 429.
    ClientError(u16),
    /// A 429 answer with its Retry-After, in nanoseconds.
    RateLimited(u64),
    /// No connection from the pool within its acquire timeout.
    PoolTimeout,
    /// The attempt was cut short by the call itself (another hedge won,
    /// the deadline passed, the pod restarted).
    Cancelled,
    /// The client's own breaker refused it: nothing went out (a refusal
    /// a retry may follow, as Resilience4j's Retry takes its
    /// `CallNotPermittedException`).
    BreakerRefused,
}

/// How a request ended, as its user saw it. Every arrival ends in exactly
/// one of these or is still in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Answered successfully.
    Success,
    /// Served a fallback while the breaker was open: degraded, neither
    /// success nor error.
    Fallback,
    /// The last attempt timed out.
    AttemptTimeout,
    /// A deadline passed: the call's total deadline or the gateway's.
    DeadlineExceeded,
    /// The last attempt got a 5xx.
    ServerError,
    /// The last attempt got a 4xx other than 429.
    ClientError,
    /// The last attempt got a 429.
    RateLimited,
    /// The last attempt could not connect.
    ConnectFailure,
    /// The last attempt got no pool connection in time.
    PoolTimeout,
    /// The breaker refused the call and there is no fallback.
    BreakerOpen,
    /// A retry was wanted but the retry budget refused it.
    BudgetExhausted,
    /// Client-side adaptive throttling rejected the attempt locally.
    Throttled,
    /// The client's bulkhead had no place for the call.
    BulkheadFull,
    /// The pod serving it restarted or was killed.
    PodRestarted,
    /// No pod was in rotation.
    Unavailable,
    /// The pod's worker queue was full.
    PodOverloaded,
    /// The user gave up (patience).
    Abandoned,
}

impl Reason {
    /// Every reason, in column order.
    pub const ALL: [Reason; 17] = [
        Reason::Success,
        Reason::Fallback,
        Reason::AttemptTimeout,
        Reason::DeadlineExceeded,
        Reason::ServerError,
        Reason::ClientError,
        Reason::RateLimited,
        Reason::ConnectFailure,
        Reason::PoolTimeout,
        Reason::BreakerOpen,
        Reason::BudgetExhausted,
        Reason::Throttled,
        Reason::BulkheadFull,
        Reason::PodRestarted,
        Reason::Unavailable,
        Reason::PodOverloaded,
        Reason::Abandoned,
    ];
    /// Number of reasons.
    pub const COUNT: usize = Reason::ALL.len();

    /// The column name (snake case).
    pub fn name(self) -> &'static str {
        match self {
            Reason::Success => "success",
            Reason::Fallback => "fallback",
            Reason::AttemptTimeout => "attempt_timeout",
            Reason::DeadlineExceeded => "deadline_exceeded",
            Reason::ServerError => "server_error",
            Reason::ClientError => "client_error",
            Reason::RateLimited => "rate_limited",
            Reason::ConnectFailure => "connect_failure",
            Reason::PoolTimeout => "pool_timeout",
            Reason::BreakerOpen => "breaker_open",
            Reason::BudgetExhausted => "budget_exhausted",
            Reason::Throttled => "throttled",
            Reason::BulkheadFull => "bulkhead_full",
            Reason::PodRestarted => "pod_restarted",
            Reason::Unavailable => "unavailable",
            Reason::PodOverloaded => "pod_overloaded",
            Reason::Abandoned => "abandoned",
        }
    }

    /// Index into per-reason arrays.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// True for outcomes that are neither success nor degraded.
    pub fn is_error(self) -> bool {
        !matches!(self, Reason::Success | Reason::Fallback)
    }
}

impl AttemptOutcome {
    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            AttemptOutcome::Success => "success",
            AttemptOutcome::Timeout => "timeout",
            AttemptOutcome::ConnectFailure => "connect_failure",
            AttemptOutcome::ServerError(..) => "server_error",
            AttemptOutcome::ClientError(_) => "client_error",
            AttemptOutcome::RateLimited(_) => "rate_limited",
            AttemptOutcome::PoolTimeout => "pool_timeout",
            AttemptOutcome::Cancelled => "cancelled",
            AttemptOutcome::BreakerRefused => "breaker_refused",
        }
    }
}

impl From<AttemptOutcome> for Reason {
    fn from(o: AttemptOutcome) -> Reason {
        match o {
            AttemptOutcome::Success => Reason::Success,
            AttemptOutcome::Timeout => Reason::AttemptTimeout,
            AttemptOutcome::ConnectFailure => Reason::ConnectFailure,
            AttemptOutcome::ServerError(..) => Reason::ServerError,
            AttemptOutcome::ClientError(_) => Reason::ClientError,
            AttemptOutcome::RateLimited(_) => Reason::RateLimited,
            AttemptOutcome::PoolTimeout => Reason::PoolTimeout,
            AttemptOutcome::Cancelled => Reason::DeadlineExceeded,
            AttemptOutcome::BreakerRefused => Reason::BreakerOpen,
        }
    }
}
