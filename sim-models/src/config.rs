//! The world's configuration: what a user writes, with its defaults, and
//! the checks that run before any event does.
//!
//! Each part's section is written next to its code and checks itself
//! under its own path: the load's and the gateway's in `load.rs`
//! (`LoadConfig`, `GatewayConfig`), a service's in `pods.rs`
//! (`ServiceConfig`, its `CallSpec`s, `HealthConfig`), a pool's in
//! `pool.rs`, a dependency's in `dependency.rs` (`UpstreamConfig`), a
//! client's in `client.rs` (`ClientConfig`: retries, hedging, budgets,
//! breakers, throttles), the network's in `context.rs`. This file
//! composes them into [`WorldConfig`] (with the clock, the limits and the
//! timeline), re-exports every section, and runs
//! [`WorldConfig::validate`].
//!
//! Every struct rejects unknown fields and fills omitted ones with the
//! defaults documented on each field. [`WorldConfig::validate`] catches
//! impossible values and combinations (negative rates, probabilities
//! outside [0, 1], p99 below median, a per-attempt timeout longer than the
//! total deadline) and names the field path of each problem.

use serde::{Deserialize, Serialize};
use sim_core::dist::{Dist, DistSpec};
use sim_core::time::{SimDuration, TimeOfDay, WallClock};

use crate::outcome::Reason;
use crate::timeline::TimelineEntry;

// Each part's configuration is written next to its code (the part owns
// its section and its check); the world's configuration composes them,
// and every section is reachable here as before.
pub use crate::client::{
    ClientConfig, FastRetry, HedgingConfig, RetryAfterConfig, RetryAfterMode, RetryConfig, RetryOn,
    Scope, TimeoutStart,
};
pub use crate::context::NetworkConfig;
pub use crate::dependency::{
    AdmissionConfig, AppliesAt, ErrorMix, LoadLaw, OverflowAction, PushbackConfig, RateLimitConfig,
    Shedding, UpstreamConfig,
};
pub use crate::load::{ArrivalProcess, ClosedLoopConfig, GatewayConfig, GatewayRetry, LoadConfig};
pub use crate::pods::{BalancerKind, CallSpec, HealthConfig, ServiceConfig};
pub use crate::pool::PoolConfig;

pub(crate) fn secs(s: u64) -> SimDuration {
    SimDuration::from_secs(s)
}
pub(crate) fn millis(ms: u64) -> SimDuration {
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

    /// How many buckets the run closes (the last one may be short); 0 for
    /// a bucket of no length, an error of its own.
    pub fn buckets(&self) -> u64 {
        match self.bucket.as_nanos() {
            0 => 0,
            b => self.duration.as_nanos().div_ceil(b),
        }
    }
}

/// Safety limits: a run that exceeds one stops with an error naming it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorldLimits {
    /// Most events in one run (default 2·10^9).
    pub max_events: u64,
    /// Most events at one instant of simulated time (default 10^8): a
    /// loop of zero delays, such as users with no think time answered at
    /// once, stops here in seconds instead of grinding to `max_events`.
    /// The most a real instant holds is about ten events per request in
    /// flight (a pod restart failing all it holds), within it by default.
    pub max_events_at_instant: u64,
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
            max_events_at_instant: 100_000_000,
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
        if cfg.service.pods_held() > u64::from(self.max_pods) {
            p.add(
                "service.pods",
                format!(
                    "{} pods{}, over the limit of {} (raise it with limits.max_pods)",
                    cfg.service.pods_held(),
                    match cfg.service.autoscaling.is_some() {
                        true => " (twice the autoscaler's max_replicas: removed pods drain while added ones start)",
                        false => "",
                    },
                    self.max_pods
                ),
            );
        }
        // A graph's pods count together: each holds a pool per call.
        let mut pods = 0u64;
        for (name, s) in &cfg.services {
            pods += s.pods_held() * (1 + s.calls.len() as u64);
            if pods > u64::from(self.max_pods) {
                p.add(
                    &format!("services.{name}.pods"),
                    format!(
                        "the graph's pods, each counted once and once more per call it makes (with an autoscaler, twice its max_replicas), come to {pods} by this service, over the limit of {} (raise it with limits.max_pods)",
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
        // A bucket of no length is already an error of its own
        // (`clock.bucket`); counting buckets of it would only add two
        // more, with figures that mean nothing.
        let bucket = cfg.clock.bucket.as_nanos();
        let count = |span: SimDuration| span.as_nanos().div_ceil(bucket.max(1));
        let buckets = cfg.clock.buckets();
        if bucket > 0 && buckets > self.max_buckets {
            p.add(
                "clock.duration",
                format!(
                    "{} at buckets of {} is {buckets} buckets, over the limit of {} (use a longer clock.bucket, or raise limits.max_buckets)",
                    cfg.clock.duration, cfg.clock.bucket, self.max_buckets
                ),
            );
        }
        let window = count(cfg.clock.window);
        if bucket > 0 && window > self.max_window_buckets {
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

/// The most a rate may be, per second: one event a nanosecond, the
/// clock's resolution. Above it, gaps between arrivals round to zero and
/// the clock would stand still.
pub const MAX_RATE: f64 = 1e9;

/// What is wrong with a rate outside `0..=MAX_RATE`.
pub(crate) fn rate_problem(v: f64) -> String {
    let found = if v.abs() >= 1e9 {
        format!("{v:.3e}")
    } else {
        v.to_string()
    };
    format!(
        "must be a non-negative rate per second, at most 10^9 (one per ns, the clock's resolution), found {found}"
    )
}

impl Problems {
    pub(crate) fn add(&mut self, path: &str, message: impl Into<String>) {
        self.0.push(ConfigError {
            path: path.to_string(),
            message: message.into(),
        });
    }
    pub(crate) fn rate(&mut self, path: &str, v: f64) {
        if !(0.0..=MAX_RATE).contains(&v) {
            self.add(path, rate_problem(v));
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
        if self.limits.max_events_at_instant == 0 {
            p.add("limits.max_events_at_instant", "must be at least 1");
        }
        self.limits.check(self, &mut p);
        if p.0.is_empty() { Ok(()) } else { Err(p.0) }
    }
}
