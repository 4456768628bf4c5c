//! How attempts and requests end.

use serde::Serialize;

/// How one attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// A 2xx answer.
    Success,
    /// The per-attempt timeout fired first.
    Timeout,
    /// The connection could not be set up (refused or connect timeout).
    ConnectFailure,
    /// A 5xx answer (500, 503 from overload or injected errors).
    ServerError(u16),
    /// A 429 answer with its Retry-After, in nanoseconds.
    RateLimited(u64),
    /// No connection from the pool within its acquire timeout.
    PoolTimeout,
}

/// How a request ended, as its user saw it. Every arrival ends in exactly
/// one of these or is still in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Answered successfully.
    Success,
    /// The last attempt timed out.
    AttemptTimeout,
    /// A deadline passed: the call's total deadline or the gateway's.
    DeadlineExceeded,
    /// The last attempt got a 5xx.
    ServerError,
    /// The last attempt got a 429.
    RateLimited,
    /// The last attempt could not connect.
    ConnectFailure,
    /// The last attempt got no pool connection in time.
    PoolTimeout,
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
    pub const ALL: [Reason; 11] = [
        Reason::Success,
        Reason::AttemptTimeout,
        Reason::DeadlineExceeded,
        Reason::ServerError,
        Reason::RateLimited,
        Reason::ConnectFailure,
        Reason::PoolTimeout,
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
            Reason::AttemptTimeout => "attempt_timeout",
            Reason::DeadlineExceeded => "deadline_exceeded",
            Reason::ServerError => "server_error",
            Reason::RateLimited => "rate_limited",
            Reason::ConnectFailure => "connect_failure",
            Reason::PoolTimeout => "pool_timeout",
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
}

impl From<AttemptOutcome> for Reason {
    fn from(o: AttemptOutcome) -> Reason {
        match o {
            AttemptOutcome::Success => Reason::Success,
            AttemptOutcome::Timeout => Reason::AttemptTimeout,
            AttemptOutcome::ConnectFailure => Reason::ConnectFailure,
            AttemptOutcome::ServerError(_) => Reason::ServerError,
            AttemptOutcome::RateLimited(_) => Reason::RateLimited,
            AttemptOutcome::PoolTimeout => Reason::PoolTimeout,
        }
    }
}
