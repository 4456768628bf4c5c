//! The world's configuration: what a user writes, with its defaults, and
//! the checks that run before any event does.
//!
//! Every struct rejects unknown fields and fills omitted ones with the
//! defaults documented on each field. [`WorldConfig::validate`] catches
//! impossible values and combinations (negative rates, probabilities
//! outside [0, 1], p99 below median, a per-attempt timeout longer than the
//! total deadline) and names the field path of each problem.

use serde::{Deserialize, Serialize};
use sim_core::dist::{Dist, DistSpec};
use sim_core::time::{SimDuration, TimeOfDay, WallClock};

use crate::outcome::{AttemptOutcome, Reason};
use crate::policy::backoff::Backoff;
use crate::policy::breaker::BreakerSpec;
use crate::policy::budget::BudgetSpec;
use crate::policy::throttle::ThrottleSpec;
use crate::timeline::TimelineEntry;

fn secs(s: u64) -> SimDuration {
    SimDuration::from_secs(s)
}
fn millis(ms: u64) -> SimDuration {
    SimDuration::from_millis(ms)
}

/// A complete world: clock, load, service, network, upstream, client
/// policy and incident timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldConfig {
    /// Simulated time span and labels.
    pub clock: ClockConfig,
    /// Master seed: every random stream derives from it.
    pub seed: u64,
    /// Who sends requests and how often.
    pub load: LoadConfig,
    /// The user-facing edge.
    pub gateway: GatewayConfig,
    /// The pods, their workers, pools and health checks.
    pub service: ServiceConfig,
    /// Delays between tiers and connection failures.
    pub network: NetworkConfig,
    /// The overload-sensitive dependency.
    pub upstream: UpstreamConfig,
    /// How pods call the upstream: timeouts and retries.
    pub client: ClientConfig,
    /// Incident actions at given times.
    pub timeline: Vec<TimelineEntry>,
    /// Safety limits.
    pub limits: WorldLimits,
    /// A service graph: named services, each with the calls it makes
    /// (instead of `service`, `client` and `upstream`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub services: std::collections::BTreeMap<String, ServiceConfig>,
    /// A graph's named dependencies, each configured as `upstream` is.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub dependencies: std::collections::BTreeMap<String, UpstreamConfig>,
    /// The service load enters at (a graph's; required there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            clock: ClockConfig::default(),
            seed: 1,
            load: LoadConfig::default(),
            gateway: GatewayConfig::default(),
            service: ServiceConfig::default(),
            network: NetworkConfig::default(),
            upstream: UpstreamConfig::default(),
            client: ClientConfig::default(),
            timeline: Vec::new(),
            limits: WorldLimits::default(),
            services: Default::default(),
            dependencies: Default::default(),
            entry: None,
        }
    }
}

/// Simulated time span and labels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockConfig {
    /// Wall-clock label of time zero (default `00:00:00`).
    pub start: TimeOfDay,
    /// How long to simulate (default `60s`).
    pub duration: SimDuration,
    /// Width of a metrics bucket (default `1s`).
    pub bucket: SimDuration,
    /// Trailing window of the windowed end-to-end quantiles
    /// (`e2e_window_p99_s`; default `60s`, a dashboard's `[1m]`).
    pub window: SimDuration,
}

impl Default for ClockConfig {
    fn default() -> Self {
        ClockConfig {
            start: "00:00:00".parse().expect("valid label"),
            duration: secs(60),
            bucket: secs(1),
            window: secs(60),
        }
    }
}

impl ClockConfig {
    /// The wall clock of this run.
    pub fn wall_clock(&self) -> WallClock {
        WallClock::new(self.start)
    }
}

/// How arrivals are spaced in the open-loop load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalProcess {
    /// Exponential gaps (independent users).
    Poisson,
    /// Evenly spaced, `1/rate` apart.
    Constant,
}

/// Who sends requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    /// Open-loop arrivals per second (default 100); the timeline can step
    /// or ramp it (`load.rate`). Zero with `closed_loop` for a pure
    /// closed-loop load.
    pub rate: f64,
    /// Spacing of open-loop arrivals (default `poisson`).
    pub arrivals: ArrivalProcess,
    /// Optional closed-loop users on top of the open-loop rate.
    pub closed_loop: Option<ClosedLoopConfig>,
    /// Optional user patience: a user gives up after a draw from this
    /// distribution (outcome `abandoned`); the request keeps consuming
    /// resources downstream, as in life.
    pub patience: Option<DistSpec>,
    /// Fraction of requests that are idempotent, hence safe to retry when
    /// `client.retry.idempotent_only` is set (default 1).
    pub idempotent_fraction: f64,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            rate: 100.0,
            arrivals: ArrivalProcess::Poisson,
            closed_loop: None,
            patience: None,
            idempotent_fraction: 1.0,
        }
    }
}

/// Users who each wait for their answer, think, and ask again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClosedLoopConfig {
    /// Number of users.
    pub users: u32,
    /// Think time between an answer and the next request.
    pub think: DistSpec,
}

/// The user-facing edge.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// End-to-end deadline: past it the user sees a timeout (outcome
    /// `deadline_exceeded`), whatever the service is still doing
    /// (default: none).
    pub deadline: Option<SimDuration>,
    /// Whether the deadline also cancels the work inside the service
    /// (default false: the service finishes, as most do).
    pub cancel_service_on_deadline: bool,
    /// Retries at the gateway: a failed request is sent again, to a pod
    /// the balancer picks, and the pod's own retries start over. Retries
    /// at two tiers multiply (default: none).
    pub retry: Option<GatewayRetry>,
    /// A token bucket at the service's own door: a request over it is
    /// answered 429 at once, never reaching a pod (default: none).
    pub rate_limit: Option<RateLimitConfig>,
}

/// The gateway's own retries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayRetry {
    /// Retries after the first dispatch.
    pub max_retries: u32,
    /// Which request outcomes are retried (default: server_error,
    /// attempt_timeout, connect_failure, pool_timeout, pod_restarted,
    /// unavailable, pod_overloaded).
    #[serde(default = "gateway_retry_on")]
    pub on: Vec<Reason>,
}

fn gateway_retry_on() -> Vec<Reason> {
    vec![
        Reason::ServerError,
        Reason::AttemptTimeout,
        Reason::ConnectFailure,
        Reason::PoolTimeout,
        Reason::PodRestarted,
        Reason::Unavailable,
        Reason::PodOverloaded,
    ]
}

/// How the load balancer picks a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BalancerKind {
    /// Each healthy pod in turn.
    RoundRobin,
    /// A uniformly random healthy pod.
    Random,
    /// The healthy pod with the fewest requests in progress (ties: lowest
    /// index).
    LeastOutstanding,
}

/// The pods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServiceConfig {
    /// Number of pods (default 8).
    pub pods: u32,
    /// Load-balancing rule (default `round_robin`).
    pub balancer: BalancerKind,
    /// Workers per pod; omitted means unbounded (a goroutine per request).
    pub workers: Option<u32>,
    /// Requests that may queue for a worker before the pod refuses more
    /// (outcome `pod_overloaded`); only with `workers` (default 1000).
    pub worker_queue: u32,
    /// Each pod's connection pool to the upstream.
    pub pool: PoolConfig,
    /// Health checks and restarts (default: none).
    pub health: Option<HealthConfig>,
    /// Pools are also reported per group of consecutive pods (the
    /// `pod_groups` table; default one group per pod, up to 8 groups);
    /// pods a timeline adds report in the last group.
    pub pod_groups: Option<u32>,
    /// The service's own work per request, done on its worker before its
    /// calls (default: none). Graphs only: the single-tier service's work
    /// is its call to the upstream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<DistSpec>,
    /// Most requests doing their own work at once per pod (its cores); the
    /// rest wait in line, holding their worker (default: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// The calls the service makes per request, in sequence; a `parallel`
    /// entry runs a group at once (graphs only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallSpec>,
    /// A caller giving up (its attempt timed out or was cancelled) cancels
    /// the request here, and with it its own calls, as gRPC propagates
    /// cancellation (default false: the request carries on for nobody).
    /// Graphs only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cancellation: bool,
}

/// One call a service makes per request (an edge of the graph), or a
/// group of calls made in parallel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CallSpec {
    /// The service or dependency called (empty for a `parallel` group).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub to: String,
    /// How the caller's pods call it: timeouts, retries, budget, breaker,
    /// hedging (default: the client defaults).
    pub client: ClientConfig,
    /// The caller's pool for this call (default: the service's `pool`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolConfig>,
    /// Network delay to the callee (default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub there: Option<DistSpec>,
    /// Network delay back (default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub back: Option<DistSpec>,
    /// Its failure degrades the answer instead of failing it (default
    /// false).
    pub optional: bool,
    /// Share of requests that make this call (default 1).
    pub probability: f64,
    /// Calls made at once, as one step (fan-out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parallel: Vec<CallSpec>,
    /// With `parallel`: the step is done when this many calls answered,
    /// the rest cancelled (default: all of them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<u32>,
}

impl Default for CallSpec {
    fn default() -> Self {
        CallSpec {
            to: String::new(),
            client: ClientConfig::default(),
            pool: None,
            there: None,
            back: None,
            optional: false,
            probability: 1.0,
            parallel: Vec::new(),
            wait_for: None,
        }
    }
}

impl ServiceConfig {
    /// The number of pod groups reported.
    pub fn groups(&self) -> u32 {
        self.pod_groups
            .unwrap_or(self.pods.min(8))
            .clamp(1, self.pods.max(1))
    }
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            pods: 8,
            balancer: BalancerKind::RoundRobin,
            workers: None,
            worker_queue: 1000,
            pool: PoolConfig::default(),
            health: None,
            pod_groups: None,
            work: None,
            cores: None,
            calls: Vec::new(),
            cancellation: false,
        }
    }
}

/// A pod's connection pool to the upstream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PoolConfig {
    /// Most connections open at once, idle, in use and being dialled
    /// (default 50).
    pub max_connections: u32,
    /// How long an attempt may wait for a connection before failing with
    /// `pool_timeout`; omitted means it waits until its own timeout or
    /// deadline, like Go's `MaxConnsPerHost` (default: none).
    pub acquire_timeout: Option<SimDuration>,
    /// Time to set up a new connection, TCP and TLS (default `constant: 5ms`).
    pub connect_time: DistSpec,
    /// An idle connection older than this is closed instead of reused
    /// (default `90s`, Go's `IdleConnTimeout`).
    pub idle_timeout: Option<SimDuration>,
    /// Most idle connections kept; a connection returned when this many
    /// are idle is closed (Go's `MaxIdleConnsPerHost`, 2 unless set;
    /// default: no limit).
    pub max_idle: Option<u32>,
    /// Fraction of responses whose connection is never released (a leak, as
    /// when a response body is not closed); leaked connections count
    /// against `max_connections` until the pod restarts (default 0).
    pub leak_fraction: f64,
    /// Multiplexed connections (HTTP/2, gRPC): each carries up to this many
    /// calls at once as streams, a call takes a free stream on an open
    /// connection before a new one is dialled, and a call that times out
    /// resets its stream, not the connection. Connections of a multiplexed
    /// pool stay open (default: none, one call per connection).
    pub streams_per_connection: Option<u32>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_connections: 50,
            streams_per_connection: None,
            acquire_timeout: None,
            connect_time: DistSpec::Constant(millis(5)),
            idle_timeout: Some(secs(90)),
            max_idle: None,
            leak_fraction: 0.0,
        }
    }
}

/// Liveness probes and restarts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealthConfig {
    /// Time between probes of a pod (default `10s`).
    pub period: SimDuration,
    /// A probe fails when the pod's oldest pool waiter, or its oldest
    /// request queued for a worker, has waited longer than this: the pod
    /// is saturated and cannot answer the probe in time (default `1s`).
    pub timeout: SimDuration,
    /// Consecutive failed probes before a restart (default 3).
    pub failure_threshold: u32,
    /// Time out of rotation while restarting (default `30s`).
    pub restart_time: SimDuration,
    /// Consecutive failed probes before the pod leaves rotation, as a
    /// Kubernetes readiness probe on the same check would take it out: it
    /// keeps working on what it holds but gets no new requests until a
    /// probe passes (default: none, only restarts take pods out).
    pub readiness_threshold: Option<u32>,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            period: secs(10),
            timeout: secs(1),
            failure_threshold: 3,
            restart_time: secs(30),
            readiness_threshold: None,
        }
    }
}

/// Delays between tiers, each way, and connection failures.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// Gateway to pod (default: none, instantaneous).
    pub gateway_to_pod: Option<DistSpec>,
    /// Pod back to gateway (default: none).
    pub pod_to_gateway: Option<DistSpec>,
    /// Pod to upstream (default: none).
    pub pod_to_upstream: Option<DistSpec>,
    /// Upstream back to pod (default: none).
    pub upstream_to_pod: Option<DistSpec>,
    /// Probability that dialling a new connection is refused (default 0).
    pub connect_failure: f64,
}

/// The server's dynamic admission threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmissionConfig {
    /// Requests held (in service and queued) when nothing fails.
    pub base_capacity: u32,
    /// The window the error rate is measured over (default 10 s).
    #[serde(default = "ten_secs")]
    pub window: SimDuration,
    /// The `Retry-After` sent with its 429s (default 1 s).
    #[serde(default = "one_sec")]
    pub retry_after: SimDuration,
}

fn ten_secs() -> SimDuration {
    secs(10)
}

fn one_sec() -> SimDuration {
    secs(1)
}

/// When a latency change applies to a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppliesAt {
    /// When its service starts (a slot takes it).
    #[default]
    Start,
    /// When it is admitted (arrives and is started or queued).
    Admission,
}

/// What the upstream does with a request it cannot admit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverflowAction {
    /// Answer 503 at once.
    Reject,
    /// Drop it silently: the caller only sees its own timeout.
    Drop,
}

/// How service time grows with the number of requests in service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LoadLaw {
    /// Service time does not depend on load.
    None,
    /// `sample + per_request × concurrency`: throughput saturates at
    /// `1 / per_request`.
    Linear {
        /// Extra service time per request in service.
        per_request: SimDuration,
    },
    /// Universal Scalability Law: `sample × (1 + σ(N−1) + κN(N−1))`.
    /// With κ > 0 throughput peaks at `N* = sqrt((1−σ)/κ)` and then
    /// *falls*: the retrograde region where overload feeds itself.
    Usl {
        /// Contention (serialisation) coefficient σ.
        sigma: f64,
        /// Coherency (crosstalk) coefficient κ.
        kappa: f64,
    },
}

/// Errors injected independently of load.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ErrorMix {
    /// Probability that a served request answers 500 (default 0).
    pub http_500: f64,
    /// Probability that a served request answers 503 (default 0).
    pub http_503: f64,
    /// Probability that a served request answers 401, a client error
    /// no retry can fix (default 0).
    pub http_401: f64,
    /// When an injected error is answered. Default (none): after the full
    /// service time, in a slot, as a handler that fails late does (a "slow
    /// 500"). A duration: decided on arrival and answered that long after
    /// it, without taking a slot or a queue place (a "fast 503" from a
    /// front that knows it is failing).
    pub after: Option<SimDuration>,
}

/// What the upstream says when it sheds load with a 503.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PushbackConfig {
    /// Nothing (default).
    #[default]
    None,
    /// "Retry after this long" (`Retry-After`, gRPC pushback ≥ 0).
    After(SimDuration),
    /// "Do not retry" (gRPC negative pushback).
    DontRetry,
}

/// A token-bucket rate limit answering 429.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Sustained requests per second admitted.
    pub rps: f64,
    /// Bucket size: requests admitted in a burst (default: one second's worth).
    #[serde(default)]
    pub burst: Option<u32>,
    /// The `Retry-After` value sent with each 429 (default `1s`).
    #[serde(default = "default_retry_after")]
    pub retry_after: SimDuration,
}

fn default_retry_after() -> SimDuration {
    secs(1)
}

/// The overload-sensitive dependency.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UpstreamConfig {
    /// Requests served at once (default 1000).
    pub capacity: u32,
    /// Requests that may wait for a slot; beyond it `overflow` applies
    /// (default 10000).
    pub queue_limit: u32,
    /// What happens past the queue limit (default `reject`: 503).
    pub overflow: OverflowAction,
    /// How long after arrival a request turned away at the door (a 503
    /// past the queue limit or from shedding, a 429 from the rate limit)
    /// is answered (default 0s: at once).
    pub reject_after: SimDuration,
    /// The server's dynamic admission threshold (the layered-retries
    /// write-up): at most `base_capacity × (1 − error_rate²)` requests held
    /// (in service and queued), `error_rate` its share of 5xx answers over
    /// the window; over it, a first attempt gets 429 with Retry-After and a
    /// retry a connection reset (default: none).
    pub admission: Option<AdmissionConfig>,
    /// When a request's work (its latency draw times `latency_scale`) is
    /// fixed: `start` (default), when a slot takes it, so requests queued
    /// during a slowdown are served at normal speed once it ends; or
    /// `admission`, when it arrives, as in systems where the cost of a
    /// request is decided on arrival. The load law always applies at start.
    pub applies_at: AppliesAt,
    /// Service time at no load (default `log_normal: {median: 50ms, p99: 200ms}`).
    pub latency: DistSpec,
    /// Multiplier on sampled service time; the timeline's usual trigger
    /// (`upstream.latency_scale`, default 1).
    pub latency_scale: f64,
    /// How service time grows with concurrency (default `none`).
    pub load_law: LoadLaw,
    /// Injected errors.
    pub errors: ErrorMix,
    /// Optional rate limit answering 429 with Retry-After.
    pub rate_limit: Option<RateLimitConfig>,
    /// Requests per second from other tenants, sharing capacity (default 0).
    pub background_rps: f64,
    /// Whether a caller giving up cancels the upstream's work on it
    /// (default false: the upstream finishes abandoned work, counted as
    /// wasted).
    pub cancellation: bool,
    /// What a 503 from admission says about retrying (default `none`).
    pub pushback: PushbackConfig,
    /// Whether the upstream drops queued work whose propagated deadline
    /// has passed (needs `client.propagate_deadline`; default true).
    pub honor_deadlines: bool,
    /// Load shedding before the hard capacity: an arriving request is
    /// turned away (as `overflow` says) with a probability that grows with
    /// the requests in service (default: none).
    pub shedding: Option<Shedding>,
    /// Most connections from this service the upstream keeps open (idle
    /// ones included), as a per-client connection limit at its front door
    /// does; a dial past it is refused (`connect_failure`). A connection
    /// once open keeps its place until it closes: on a timeout, an idle
    /// timeout or a pod restart (default: none).
    pub max_connections: Option<u32>,
}

/// Probabilistic load shedding, as overloaded services and their front
/// proxies do it (random early rejection, admission control): nothing
/// below `from` requests in service, then a probability rising linearly to
/// 1 at `to`. Unlike a hard slot limit, who is turned away is random, so
/// it does not depend on which caller happens to arrive first.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shedding {
    /// Requests in service at which shedding starts.
    pub from: u32,
    /// Requests in service at which every arrival is turned away.
    pub to: u32,
}

impl Shedding {
    /// The chance that a request arriving with `n` in service is shed.
    pub fn probability(&self, n: u32) -> f64 {
        if n < self.from {
            0.0
        } else if n >= self.to {
            1.0
        } else {
            f64::from(n - self.from) / f64::from(self.to - self.from)
        }
    }
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            capacity: 1000,
            queue_limit: 10_000,
            reject_after: SimDuration::ZERO,
            applies_at: AppliesAt::Start,
            admission: None,
            overflow: OverflowAction::Reject,
            latency: DistSpec::LogNormal {
                median: Some(millis(50)),
                p99: Some(millis(200)),
                mu: None,
                sigma: None,
            },
            latency_scale: 1.0,
            load_law: LoadLaw::None,
            errors: ErrorMix::default(),
            rate_limit: None,
            background_rps: 0.0,
            cancellation: false,
            pushback: PushbackConfig::None,
            honor_deadlines: true,
            shedding: None,
            max_connections: None,
        }
    }
}

/// Which attempt outcomes a retry follows. Written as names or HTTP
/// status codes: `[timeout, connect_failure, 5xx, 429]`, `[502, 503, 504]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RetryOn {
    /// The attempt timed out.
    Timeout,
    /// The connection could not be set up.
    ConnectFailure,
    /// Any 5xx answer (`5xx`, `server_error`).
    ServerError,
    /// Any 4xx answer but 429 (`4xx`, `client_error`).
    ClientError,
    /// A 429 answer (`429`, `rate_limited`).
    RateLimited,
    /// No pool connection within the acquire timeout.
    PoolTimeout,
    /// One status code.
    Status(u16),
}

impl RetryOn {
    fn name(self) -> String {
        match self {
            RetryOn::Timeout => "timeout".into(),
            RetryOn::ConnectFailure => "connect_failure".into(),
            RetryOn::ServerError => "5xx".into(),
            RetryOn::ClientError => "4xx".into(),
            RetryOn::RateLimited => "429".into(),
            RetryOn::PoolTimeout => "pool_timeout".into(),
            RetryOn::Status(c) => c.to_string(),
        }
    }

    fn parse(s: &str) -> Result<RetryOn, String> {
        Ok(match s {
            "timeout" => RetryOn::Timeout,
            "connect_failure" => RetryOn::ConnectFailure,
            "5xx" | "server_error" => RetryOn::ServerError,
            "4xx" | "client_error" => RetryOn::ClientError,
            "429" | "rate_limited" => RetryOn::RateLimited,
            "pool_timeout" => RetryOn::PoolTimeout,
            code => match code.parse::<u16>() {
                Ok(c) if (100..600).contains(&c) => RetryOn::Status(c),
                _ => {
                    return Err(format!(
                        "unknown retry condition {code:?}; expected timeout, connect_failure, 5xx, 4xx, 429, pool_timeout or a status code"
                    ));
                }
            },
        })
    }

    /// Whether an attempt that ended with `o` matches.
    pub fn matches(self, o: AttemptOutcome) -> bool {
        match (self, o) {
            (RetryOn::Timeout, AttemptOutcome::Timeout) => true,
            (RetryOn::ConnectFailure, AttemptOutcome::ConnectFailure) => true,
            (RetryOn::ServerError, AttemptOutcome::ServerError(..)) => true,
            (RetryOn::ClientError, AttemptOutcome::ClientError(_)) => true,
            (RetryOn::RateLimited, AttemptOutcome::RateLimited(_)) => true,
            (RetryOn::PoolTimeout, AttemptOutcome::PoolTimeout) => true,
            (
                RetryOn::Status(c),
                AttemptOutcome::ServerError(code, _) | AttemptOutcome::ClientError(code),
            ) => c == code,
            (RetryOn::Status(429), AttemptOutcome::RateLimited(_)) => true,
            _ => false,
        }
    }
}

impl Serialize for RetryOn {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RetryOn::Status(c) => s.serialize_u16(*c),
            other => s.serialize_str(&other.name()),
        }
    }
}

impl<'de> Deserialize<'de> for RetryOn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RetryOn;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a retry condition (timeout, connect_failure, 5xx, 4xx, 429, pool_timeout) or a status code")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RetryOn, E> {
                RetryOn::parse(v).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RetryOn, E> {
                RetryOn::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RetryOn, E> {
                RetryOn::parse(&v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// How a 429's `Retry-After` (or a 503's pushback) is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryAfterMode {
    /// Use the backoff; ignore the header.
    Ignore,
    /// Wait exactly what the server says (gRPC pushback, Envoy's
    /// rate-limited backoff); the backoff schedule then starts over from
    /// its first step, as gRPC's does.
    Honor,
    /// Wait the longer of the backoff and the header.
    AtLeast,
}

/// Server pushback handling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryAfterConfig {
    /// How the header is used (default `ignore`).
    pub mode: RetryAfterMode,
    /// A header longer than this means "do not retry" (default: none).
    pub cap: Option<SimDuration>,
    /// Whether a retry after a Retry-After wait counts against
    /// `max_retries` (default true; seed 002 says it should not).
    pub counts_as_retry: bool,
    /// Jitter on the wait the server asked for: the wait is Retry-After ×
    /// U(1, 1 + jitter), never earlier than asked (default 0: every client
    /// told "1s" returns exactly 1 s later, in step with the others).
    pub jitter: f64,
}

impl Default for RetryAfterConfig {
    fn default() -> Self {
        RetryAfterConfig {
            mode: RetryAfterMode::Ignore,
            cap: None,
            counts_as_retry: true,
            jitter: 0.0,
        }
    }
}

/// A fast first layer of retries (seed 001): immediate, only for quick
/// gateway errors, not counted against `max_retries`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FastRetry {
    /// Fast retries per call (default 1).
    #[serde(default = "one_u32")]
    pub max: u32,
    /// Statuses that qualify (default 502, 503, 504).
    #[serde(default = "gateway_errors")]
    pub statuses: Vec<u16>,
    /// Only when the failed attempt took less than this (default 100ms:
    /// a quick error is not real overload).
    #[serde(default = "hundred_ms")]
    pub within: SimDuration,
}

fn one_u32() -> u32 {
    1
}
fn gateway_errors() -> Vec<u16> {
    vec![502, 503, 504]
}
fn hundred_ms() -> SimDuration {
    millis(100)
}

/// Retries of one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Retries after the first attempt (default 0).
    pub max_retries: u32,
    /// Delay before each retry (default `fixed: { delay: 1s }`).
    pub backoff: Backoff,
    /// Outcomes that are retried (default: timeout, connect_failure, 5xx,
    /// 429, pool_timeout).
    pub retry_on: Vec<RetryOn>,
    /// Retry only idempotent requests (default false).
    pub idempotent_only: bool,
    /// Server pushback.
    pub retry_after: RetryAfterConfig,
    /// Optional fast first layer.
    pub fast_retry: Option<FastRetry>,
    /// Backoff that grows while the client's recent attempts fail (default:
    /// none).
    pub adaptive: Option<crate::policy::adaptive_backoff::AdaptiveBackoffSpec>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_retries: 0,
            backoff: Backoff::fixed(secs(1)),
            retry_on: vec![
                RetryOn::Timeout,
                RetryOn::ConnectFailure,
                RetryOn::ServerError,
                RetryOn::RateLimited,
                RetryOn::PoolTimeout,
            ],
            idempotent_only: false,
            retry_after: RetryAfterConfig::default(),
            fast_retry: None,
            adaptive: None,
        }
    }
}

/// Where a budget, breaker or throttle lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One per pod (per client process): the default, as libraries do.
    Pod,
    /// One shared by every pod.
    Global,
}

/// gRPC A6 hedging: another attempt every `delay`, up to `max_attempts`;
/// the first success cancels the rest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HedgingConfig {
    /// Attempts in all, the original included (2..=5; gRPC clamps to 5).
    pub max_attempts: u32,
    /// Time between hedges (`0s` sends all at once).
    pub delay: SimDuration,
    /// Answers that trigger the next hedge at once instead of ending the
    /// call (default: 5xx).
    #[serde(default = "non_fatal")]
    pub non_fatal: Vec<RetryOn>,
}

fn non_fatal() -> Vec<RetryOn> {
    vec![RetryOn::ServerError]
}

/// When the per-attempt timeout starts counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutStart {
    /// When the attempt starts: pool wait and connect included (Go's
    /// `http.Client.Timeout`).
    AttemptStart,
    /// When a connection is in hand (Apache HttpClient's socket timeout,
    /// with the pool wait bounded separately by `acquire_timeout`).
    ConnectionAcquired,
}

/// How a pod calls the upstream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientConfig {
    /// A named policy to start from (`stormsim list` shows them); fields
    /// written beside it override the preset's. The experiment loader
    /// expands it; in Rust use `policy::presets::get(name)?.apply(&mut
    /// cfg)` instead, and a world given an unexpanded preset refuses to
    /// run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Longest a new connection may take to set up (default `30s`).
    pub connect_timeout: Option<SimDuration>,
    /// Per-attempt timeout (default `30s`).
    pub attempt_timeout: Option<SimDuration>,
    /// When the per-attempt timeout starts (default `attempt_start`).
    pub timeout_starts: TimeoutStart,
    /// Deadline across all attempts of one call (default: none).
    pub total_deadline: Option<SimDuration>,
    /// No attempt starts with less than this left before the total
    /// deadline (default 0s).
    pub min_attempt_budget: SimDuration,
    /// Send the deadline with each attempt so the upstream can drop work
    /// nobody waits for (default false).
    pub propagate_deadline: bool,
    /// Retries.
    pub retry: RetryConfig,
    /// A retry budget (default: none).
    pub budget: Option<BudgetSpec>,
    /// A circuit breaker (default: none).
    pub breaker: Option<BreakerSpec>,
    /// Serve a fallback (degraded answer) when the breaker refuses a call
    /// (default false: the call fails `breaker_open`).
    pub fallback: bool,
    /// Client-side adaptive throttling (default: none).
    pub throttle: Option<ThrottleSpec>,
    /// Where the budget, breaker and throttle live (default `pod`).
    pub scope: Scope,
    /// Hedging instead of retries (default: none).
    pub hedging: Option<HedgingConfig>,
    /// What one attempt costs, in any unit (an LLM call's tokens, a paid
    /// API's cents): the dataset then counts the cost of every attempt and
    /// the share wasted on attempts that served no answer (default: none).
    /// In a graph each call's client prices its own attempts; the run's
    /// cost is their sum. A deploy does not reprice attempts.
    pub cost_per_attempt: Option<f64>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            preset: None,
            connect_timeout: Some(secs(30)),
            attempt_timeout: Some(secs(30)),
            timeout_starts: TimeoutStart::AttemptStart,
            total_deadline: None,
            min_attempt_budget: SimDuration::ZERO,
            propagate_deadline: false,
            retry: RetryConfig::default(),
            budget: None,
            breaker: None,
            fallback: false,
            throttle: None,
            scope: Scope::Pod,
            hedging: None,
            cost_per_attempt: None,
        }
    }
}

/// Safety limits: a run that exceeds one stops with an error naming it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldLimits {
    /// Most events in one run (default 2·10^9).
    pub max_events: u64,
    /// Most requests in the system at once, users' and orphaned work, and
    /// most jobs the upstream holds (default 2·10^6: about 1 GB).
    pub max_in_flight: u64,
    /// Most pods, configured or added by the timeline (default 10^5: each
    /// pod holds its pool, workers and policies).
    pub max_pods: u32,
    /// Most metrics buckets in one run, `clock.duration ÷ clock.bucket`
    /// (default 10^6: a run keeps about 100 bytes of key figures a bucket).
    pub max_buckets: u64,
    /// Most buckets in the trailing window, `clock.window ÷ clock.bucket`
    /// (default 10^5: each holds a histogram).
    pub max_window_buckets: u64,
    /// Most services and dependencies in a graph (default 10^4: each holds
    /// its pods, pools and random streams, and `explain` walks its paths).
    pub max_nodes: usize,
}

impl Default for WorldLimits {
    fn default() -> Self {
        WorldLimits {
            max_events: 2_000_000_000,
            max_in_flight: 2_000_000,
            max_pods: 100_000,
            max_buckets: 1_000_000,
            max_window_buckets: 100_000,
            max_nodes: 10_000,
        }
    }
}

impl WorldLimits {
    /// Checks that `cfg` stays within the limits that allocate: pods,
    /// buckets, window buckets, closed-loop users. (Requests in flight and
    /// the upstream's jobs, queued ones included, are checked as the run
    /// goes, against `max_in_flight`.) Each refusal names the field that
    /// raises the limit.
    fn check(&self, cfg: &WorldConfig, p: &mut Problems) {
        if cfg.service.pods > self.max_pods {
            p.add(
                "service.pods",
                format!(
                    "{} pods, over the limit of {} (raise it with limits.max_pods)",
                    cfg.service.pods, self.max_pods
                ),
            );
        }
        // A graph's pods count together: each holds a pool per call.
        let mut pods = 0u64;
        for (name, s) in &cfg.services {
            pods += u64::from(s.pods) * (1 + s.calls.len() as u64);
            if pods > u64::from(self.max_pods) {
                p.add(
                    &format!("services.{name}.pods"),
                    format!(
                        "the graph's pods, each counted once and once more per call it makes, come to {pods} by this service, over the limit of {} (raise it with limits.max_pods)",
                        self.max_pods
                    ),
                );
                break;
            }
        }
        let nodes = cfg.services.len() + cfg.dependencies.len();
        if nodes > self.max_nodes {
            p.add(
                "services",
                format!(
                    "{nodes} services and dependencies, over the limit of {} (raise it with limits.max_nodes)",
                    self.max_nodes
                ),
            );
        }
        let bucket = cfg.clock.bucket.as_nanos().max(1);
        let buckets = cfg.clock.duration.as_nanos().div_ceil(bucket);
        if buckets > self.max_buckets {
            p.add(
                "clock.duration",
                format!(
                    "{} at buckets of {} is {buckets} buckets, over the limit of {} (use a longer clock.bucket, or raise limits.max_buckets)",
                    cfg.clock.duration, cfg.clock.bucket, self.max_buckets
                ),
            );
        }
        let window = cfg.clock.window.as_nanos().div_ceil(bucket);
        if window > self.max_window_buckets {
            p.add(
                "clock.window",
                format!(
                    "{} at buckets of {} is {window} buckets, over the limit of {} (use a longer clock.bucket, or raise limits.max_window_buckets)",
                    cfg.clock.window, cfg.clock.bucket, self.max_window_buckets
                ),
            );
        }
        if let Some(cl) = &cfg.load.closed_loop
            && u64::from(cl.users) > self.max_in_flight
        {
            p.add(
                "load.closed_loop.users",
                format!(
                    "{} users, over the limit of {} requests in flight (raise it with limits.max_in_flight)",
                    cl.users, self.max_in_flight
                ),
            );
        }
        if self.max_in_flight == 0 {
            p.add("limits.max_in_flight", "must be at least 1");
        }
    }
}

/// One problem in a configuration: the field path and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted path of the field, e.g. `upstream.errors.http_500`.
    pub path: String,
    /// What was found and what is allowed.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
impl std::error::Error for ConfigError {}

/// Collects problems while walking a config.
#[derive(Default)]
pub(crate) struct Problems(pub(crate) Vec<ConfigError>);

impl Problems {
    pub(crate) fn add(&mut self, path: &str, message: impl Into<String>) {
        self.0.push(ConfigError {
            path: path.to_string(),
            message: message.into(),
        });
    }
    pub(crate) fn rate(&mut self, path: &str, v: f64) {
        if !v.is_finite() || v < 0.0 {
            self.add(
                path,
                format!("must be a non-negative rate per second, found {v}"),
            );
        }
    }
    pub(crate) fn probability(&mut self, path: &str, p: f64) {
        if !(0.0..=1.0).contains(&p) {
            self.add(
                path,
                format!("must be a probability between 0 and 1, found {p}"),
            );
        }
    }
    pub(crate) fn dist(&mut self, path: &str, spec: &DistSpec) -> Option<Dist> {
        match Dist::new(spec) {
            Ok(d) => Some(d),
            Err(e) => {
                self.add(&format!("{path}.{}", e.field), e.message);
                None
            }
        }
    }
    pub(crate) fn positive(&mut self, path: &str, d: SimDuration) {
        if d.is_zero() {
            self.add(path, "must be longer than 0s");
        }
    }
}

impl WorldConfig {
    /// Whether this is a service graph (`services` written) rather than
    /// the single-tier chain (`service`, `client`, `upstream`).
    pub fn is_graph(&self) -> bool {
        !self.services.is_empty()
    }

    /// The service load enters at: the single tier's, or a graph's entry.
    pub fn entry_service(&self) -> &ServiceConfig {
        self.entry
            .as_ref()
            .and_then(|e| self.services.get(e))
            .unwrap_or(&self.service)
    }

    /// Checks every field and combination; returns every problem found.
    pub fn validate(&self) -> Result<(), Vec<ConfigError>> {
        let mut p = Problems::default();
        p.positive("clock.duration", self.clock.duration);
        p.positive("clock.bucket", self.clock.bucket);
        p.positive("clock.window", self.clock.window);
        p.rate("load.rate", self.load.rate);
        if let Some(cl) = &self.load.closed_loop {
            p.dist("load.closed_loop.think", &cl.think);
        }
        if self.load.rate == 0.0 && self.load.closed_loop.as_ref().is_none_or(|c| c.users == 0) {
            p.add(
                "load.rate",
                "is 0 and there are no closed-loop users: nothing would arrive",
            );
        }
        if let Some(d) = &self.load.patience {
            p.dist("load.patience", d);
        }
        if let Some(d) = self.gateway.deadline {
            p.positive("gateway.deadline", d);
        }
        if self.is_graph() {
            crate::graph::check(self, &mut p);
        } else {
            self.service.check("service", &mut p);
            let n = &self.network;
            for (path, d) in [
                ("network.gateway_to_pod", &n.gateway_to_pod),
                ("network.pod_to_gateway", &n.pod_to_gateway),
                ("network.pod_to_upstream", &n.pod_to_upstream),
                ("network.upstream_to_pod", &n.upstream_to_pod),
            ] {
                if let Some(d) = d {
                    p.dist(path, d);
                }
            }
            p.probability("network.connect_failure", n.connect_failure);
            self.upstream.check("upstream", &mut p);
            self.client.check("client", &mut p);
            for (path, section) in [
                ("dependencies", !self.dependencies.is_empty()),
                ("entry", self.entry.is_some()),
            ] {
                if section {
                    p.add(
                        path,
                        "belongs to a service graph: write its services (and entry) to make one",
                    );
                }
            }
        }
        p.probability("load.idempotent_fraction", self.load.idempotent_fraction);
        if let Some(rl) = &self.gateway.rate_limit {
            p.rate("gateway.rate_limit.rps", rl.rps);
            if rl.rps == 0.0 {
                p.add(
                    "gateway.rate_limit.rps",
                    "must be above 0 (0 would refuse everything)",
                );
            }
        }
        if let Some(g) = &self.gateway.retry
            && g.on.contains(&Reason::Success)
        {
            p.add("gateway.retry.on", "success is not a failure to retry");
        }
        let wall = self.clock.wall_clock();
        for (i, entry) in self.timeline.iter().enumerate() {
            entry.validate(&format!("timeline[{i}]"), &wall, self, &mut p);
        }
        if self.limits.max_events == 0 {
            p.add("limits.max_events", "must be at least 1");
        }
        self.limits.check(self, &mut p);
        if p.0.is_empty() { Ok(()) } else { Err(p.0) }
    }
}

impl ServiceConfig {
    /// Checks the service's own fields, `at` its path (`service`,
    /// `services.orders`).
    pub(crate) fn check(&self, at: &str, p: &mut Problems) {
        if self.pods == 0 {
            p.add(&format!("{at}.pods"), "must be at least 1");
        }
        if let Some(g) = self.pod_groups
            && (g == 0 || g > self.pods)
        {
            p.add(
                &format!("{at}.pod_groups"),
                format!("must be between 1 and the number of pods ({})", self.pods),
            );
        }
        if self.workers == Some(0) {
            p.add(
                &format!("{at}.workers"),
                "must be at least 1 (omit it for unbounded workers)",
            );
        }
        self.pool.check(&format!("{at}.pool"), p);
        if let Some(h) = &self.health {
            p.positive(&format!("{at}.health.period"), h.period);
            p.positive(&format!("{at}.health.timeout"), h.timeout);
            if h.failure_threshold == 0 {
                p.add(
                    &format!("{at}.health.failure_threshold"),
                    "must be at least 1",
                );
            }
            if h.readiness_threshold == Some(0) {
                p.add(
                    &format!("{at}.health.readiness_threshold"),
                    "must be at least 1 (omit it to keep pods in rotation until they restart)",
                );
            }
        }
        if let Some(w) = &self.work {
            p.dist(&format!("{at}.work"), w);
        }
        if self.cores == Some(0) {
            p.add(
                &format!("{at}.cores"),
                "must be at least 1 (omit it for no limit)",
            );
        }
    }
}

impl PoolConfig {
    /// Checks the pool, `at` its path.
    pub(crate) fn check(&self, at: &str, p: &mut Problems) {
        if self.max_connections == 0 {
            p.add(&format!("{at}.max_connections"), "must be at least 1");
        }
        p.dist(&format!("{at}.connect_time"), &self.connect_time);
        p.probability(&format!("{at}.leak_fraction"), self.leak_fraction);
        if let Some(k) = self.streams_per_connection {
            if k == 0 || k > 1_000_000 {
                p.add(
                    &format!("{at}.streams_per_connection"),
                    format!("must be in 1..=10^6, found {k}"),
                );
            }
            if self.leak_fraction > 0.0 {
                p.add(
                    &format!("{at}.leak_fraction"),
                    "a multiplexed pool's streams do not leak: set it to 0 with streams_per_connection",
                );
            }
        }
    }
}

impl UpstreamConfig {
    /// Checks the dependency, `at` its path (`upstream`,
    /// `dependencies.mysql`).
    pub(crate) fn check(&self, at: &str, p: &mut Problems) {
        p.dist(&format!("{at}.latency"), &self.latency);
        if !self.latency_scale.is_finite() || self.latency_scale < 0.0 {
            p.add(
                &format!("{at}.latency_scale"),
                format!(
                    "must be a non-negative factor, found {}",
                    self.latency_scale
                ),
            );
        }
        if let LoadLaw::Usl { sigma, kappa } = self.load_law {
            if !(0.0..=1.0).contains(&sigma) {
                p.add(
                    &format!("{at}.load_law.usl.sigma"),
                    format!("must be between 0 and 1, found {sigma}"),
                );
            }
            if !kappa.is_finite() || kappa < 0.0 {
                p.add(
                    &format!("{at}.load_law.usl.kappa"),
                    format!("must be non-negative, found {kappa}"),
                );
            }
        }
        p.probability(&format!("{at}.errors.http_500"), self.errors.http_500);
        p.probability(&format!("{at}.errors.http_503"), self.errors.http_503);
        let each_ok = (0.0..=1.0).contains(&self.errors.http_500)
            && (0.0..=1.0).contains(&self.errors.http_503);
        if each_ok && self.errors.http_500 + self.errors.http_503 > 1.0 {
            p.add(
                &format!("{at}.errors"),
                "http_500 + http_503 must not exceed 1",
            );
        }
        if let Some(a) = &self.admission {
            if a.base_capacity == 0 {
                p.add(
                    &format!("{at}.admission.base_capacity"),
                    "must be at least 1",
                );
            }
            p.positive(&format!("{at}.admission.window"), a.window);
        }
        if let Some(rl) = &self.rate_limit {
            p.rate(&format!("{at}.rate_limit.rps"), rl.rps);
            if rl.rps == 0.0 {
                p.add(
                    &format!("{at}.rate_limit.rps"),
                    "must be above 0 (omit rate_limit for none)",
                );
            }
        }
        p.rate(&format!("{at}.background_rps"), self.background_rps);
        if self.max_connections == Some(0) {
            p.add(
                &format!("{at}.max_connections"),
                "must be at least 1 (omit it for no limit)",
            );
        }
        if let Some(s) = self.shedding
            && s.to <= s.from
        {
            p.add(
                &format!("{at}.shedding.to"),
                format!("must be above shedding.from ({}), found {}", s.from, s.to),
            );
        }
    }
}

impl ClientConfig {
    /// Checks the client policy, `at` its path (`client`,
    /// `services.orders.calls[0].client`).
    pub(crate) fn check(&self, at: &str, p: &mut Problems) {
        if let (Some(t), Some(d)) = (self.attempt_timeout, self.total_deadline)
            && t > d
        {
            p.add(
                &format!("{at}.attempt_timeout"),
                format!("({t}) is longer than {at}.total_deadline ({d}): the deadline would always cut it"),
            );
        }
        if let Some(c) = self.cost_per_attempt
            && (!c.is_finite() || c < 0.0)
        {
            p.add(
                &format!("{at}.cost_per_attempt"),
                format!("must be a non-negative amount, found {c}"),
            );
        }
        for (path, d) in [
            (&format!("{at}.connect_timeout"), self.connect_timeout),
            (&format!("{at}.attempt_timeout"), self.attempt_timeout),
            (&format!("{at}.total_deadline"), self.total_deadline),
        ] {
            if let Some(d) = d {
                p.positive(path, d);
            }
        }
        let r = &self.retry;
        let jitter = r.retry_after.jitter;
        if !(0.0..=10.0).contains(&jitter) {
            p.add(
                &format!("{at}.retry.retry_after.jitter"),
                format!("must be within 0..=10 (a wait of up to 11 × Retry-After), found {jitter}"),
            );
        }
        if let Err((f, m)) = r.backoff.validate() {
            p.add(&format!("{at}.retry.backoff.{f}"), m);
        }
        if let Some(a) = &r.adaptive
            && let Err((f, m)) = a.validate()
        {
            p.add(&format!("{at}.retry.adaptive.{f}"), m);
        }
        if let Some(fr) = &r.fast_retry
            && fr.statuses.iter().any(|s| !(500..600).contains(s))
        {
            p.add(
                &format!("{at}.retry.fast_retry.statuses"),
                "fast retries are for 5xx statuses only",
            );
        }
        if let Some(b) = &self.budget
            && let Err((f, m)) = b.validate()
        {
            p.add(&format!("{at}.budget.{f}"), m);
        }
        if let Some(b) = &self.breaker
            && let Err((f, m)) = b.validate()
        {
            p.add(&format!("{at}.breaker.{f}"), m);
        }
        if let Some(t) = &self.throttle
            && let Err((f, m)) = t.validate()
        {
            p.add(&format!("{at}.throttle.{f}"), m);
        }
        if let Some(h) = &self.hedging {
            if !(2..=crate::request::MAX_LIVE as u32).contains(&h.max_attempts) {
                p.add(
                    &format!("{at}.hedging.max_attempts"),
                    format!(
                        "must be 2 to 5 (gRPC clamps to 5), found {}",
                        h.max_attempts
                    ),
                );
            }
            if r.max_retries > 0 {
                p.add(&format!("{at}.hedging"), format!("a call uses either retries or hedging, never both: set {at}.retry.max_retries to 0"));
            }
        }
        if let Some(name) = &self.preset {
            let hint = match crate::policy::presets::get(name) {
                Some(_) => "expand it first (the experiment loader does; in Rust, presets::get(name).apply(&mut cfg))".to_string(),
                None => match crate::policy::presets::closest(name) {
                    Some(close) => format!("unknown preset {name:?}; did you mean {close:?}?"),
                    None => format!("unknown preset {name:?}; `stormsim list` shows the presets"),
                },
            };
            p.add(&format!("{at}.preset"), hint);
        }
        if self.total_deadline.is_none() && !self.min_attempt_budget.is_zero() {
            p.add(
                &format!("{at}.min_attempt_budget"),
                format!("needs {at}.total_deadline"),
            );
        }
    }
}
