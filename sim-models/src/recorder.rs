//! What every run records: one row per time bucket, streamed to a sink as
//! each bucket closes, and run totals. Memory is constant in the run's
//! length: only the open bucket's counters and histograms are held.

use serde::Serialize;
use sim_core::metrics::{Gauge, GaugeBucket, Histogram, TrailingHistogram};
use sim_core::time::{SimDuration, SimTime};

use crate::outcome::Reason;

/// A latency distribution summarised for one bucket (nanoseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<u64>,
    /// 90th percentile.
    pub p90: Option<u64>,
    /// 99th percentile.
    pub p99: Option<u64>,
    /// 99.9th percentile.
    pub p999: Option<u64>,
    /// Largest value.
    pub max: Option<u64>,
}

impl LatencySummary {
    /// Summarises `h`.
    pub fn of(h: &Histogram) -> Self {
        LatencySummary {
            count: h.count(),
            mean: h.mean(),
            p50: h.quantile(0.5),
            p90: h.quantile(0.9),
            p99: h.quantile(0.99),
            p999: h.quantile(0.999),
            max: h.max(),
        }
    }
}

/// One pod group's pools during one bucket: groups of consecutive pods
/// (`service.pod_groups`), so a chart can show whether one pod drained or
/// all of them did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupRow {
    /// Connections carrying a request, the group's pods.
    pub in_use: GaugeBucket,
    /// Attempts waiting for a connection, the group's pods.
    pub waiters: GaugeBucket,
    /// Time attempts spent in the group's pool lines.
    pub wait: LatencySummary,
}

/// The group of pod `pod` when `pods` pods are reported in `groups` groups
/// of consecutive pods.
fn group_of(pod: u32, pods: u32, groups: u32) -> u32 {
    (u64::from(pod) * u64::from(groups) / u64::from(pods.max(1))) as u32
}

/// The first and last pod of each of `groups` groups of `pods` pods.
pub fn pod_group_spans(pods: u32, groups: u32) -> Vec<(u32, u32)> {
    let groups = groups.clamp(1, pods.max(1));
    let mut spans: Vec<(u32, u32)> = Vec::new();
    for pod in 0..pods {
        match spans.get_mut(group_of(pod, pods, groups) as usize) {
            Some(span) => span.1 = pod,
            None => spans.push((pod, pod)),
        }
    }
    spans
}

/// The open bucket of one pod group.
#[derive(Clone, Debug)]
struct GroupOpen {
    in_use: Gauge,
    waiters: Gauge,
    wait: Histogram,
}

/// Levels tracked over time, each summarised per bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Pool connections carrying a request, all pods.
    PoolInUse,
    /// Attempts waiting for a pool connection, all pods.
    PoolWaiters,
    /// Connections lost to leaks, all pods.
    PoolLeaked,
    /// HTTP calls in progress, all pods: holding a connection or waiting
    /// for one (the goroutines blocked in a call).
    CallsInFlight,
    /// Requests inside the service tier (assigned to a pod, not finished).
    ServiceInFlight,
    /// Requests whose user awaits an outcome.
    UsersWaiting,
    /// Upstream requests in a slot.
    UpstreamInService,
    /// Upstream requests waiting for a slot.
    UpstreamQueued,
    /// Pods in rotation.
    PodsUp,
    /// Pods restarting or killed.
    PodsDown,
    /// Pods up but out of rotation: failing their readiness probes.
    PodsUnready,
    /// Circuit breakers open (one per pod, or the global one).
    BreakersOpen,
    /// Circuit breakers half-open.
    BreakersHalfOpen,
    /// Calls waiting for a place in their client's bulkhead.
    BulkheadWaiting,
    /// The entry's pods up and ready but held out of rotation by its
    /// outlier detection (counted in `PodsUp` too).
    PodsEjected,
    /// The places the adaptive bulkheads allow, summed over every edge's
    /// (0 without one).
    BulkheadLimit,
}

impl Level {
    /// Every level, in column order.
    pub const ALL: [Level; 16] = [
        Level::PoolInUse,
        Level::PoolWaiters,
        Level::PoolLeaked,
        Level::CallsInFlight,
        Level::ServiceInFlight,
        Level::UsersWaiting,
        Level::UpstreamInService,
        Level::UpstreamQueued,
        Level::PodsUp,
        Level::PodsDown,
        Level::PodsUnready,
        Level::BreakersOpen,
        Level::BreakersHalfOpen,
        Level::BulkheadWaiting,
        Level::PodsEjected,
        Level::BulkheadLimit,
    ];
    /// Number of levels.
    pub const COUNT: usize = Level::ALL.len();
    /// The column name.
    pub fn name(self) -> &'static str {
        match self {
            Level::PoolInUse => "pool_in_use",
            Level::PoolWaiters => "pool_waiters",
            Level::PoolLeaked => "pool_leaked",
            Level::CallsInFlight => "calls_in_flight",
            Level::ServiceInFlight => "service_in_flight",
            Level::UsersWaiting => "users_waiting",
            Level::UpstreamInService => "upstream_in_service",
            Level::UpstreamQueued => "upstream_queued",
            Level::PodsUp => "pods_up",
            Level::PodsDown => "pods_down",
            Level::PodsUnready => "pods_unready",
            Level::BreakersOpen => "breakers_open",
            Level::BreakersHalfOpen => "breakers_half_open",
            Level::BulkheadWaiting => "bulkhead_waiting",
            Level::PodsEjected => "pods_ejected",
            Level::BulkheadLimit => "bulkhead_limit",
        }
    }
}

/// Declares the counters once: the enum (its order is the column order),
/// each column's name, `ALL` and `COUNT`.
macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident = $column:literal, )*) => {
        /// Events counted per bucket.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        pub enum Count {
            $( $(#[$doc])* $name, )*
        }

        impl Count {
            /// Every counter, in column order.
            pub const ALL: &'static [Count] = &[$(Count::$name),*];
            /// Number of counters.
            pub const COUNT: usize = Count::ALL.len();
            /// The column name.
            pub fn name(self) -> &'static str {
                match self {
                    $( Count::$name => $column, )*
                }
            }
        }
    };
}

counters! {
    /// Requests sent by users.
    Offered = "offered",
    /// First attempts started.
    AttemptsFirst = "attempts_first",
    /// Retries started.
    AttemptsRetry = "attempts_retry",
    /// Upstream completions of live client work (the caller still waits).
    UpstreamGoodput = "upstream_goodput",
    /// Upstream completions of client work whose caller had given up.
    UpstreamWasted = "upstream_wasted",
    /// Upstream work stopped because the caller cancelled it.
    UpstreamCancelled = "upstream_cancelled",
    /// Requests the upstream answered 503 at admission.
    UpstreamRejected = "upstream_rejected",
    /// Requests the upstream dropped at admission.
    UpstreamDropped = "upstream_dropped",
    /// Requests the upstream answered 429.
    UpstreamRateLimited = "upstream_rate_limited",
    /// Other tenants' requests completed.
    BackgroundCompleted = "background_completed",
    /// Responses that reached a pod after their attempt was over.
    LateResponses = "late_responses",
    /// Pod restarts (health checks, timeline).
    PodRestarts = "pod_restarts",
    /// Health probes that found their pod saturated: its oldest pool
    /// waiter, or its oldest request queued for a worker, had waited past
    /// the probe's timeout (each one counts toward a restart or, with a
    /// readiness threshold, toward leaving rotation).
    ProbesFailed = "probes_failed",
    /// Timeline steps applied.
    TimelineSteps = "timeline_steps",
    /// Hedged attempts sent (beyond the first).
    AttemptsHedge = "attempts_hedge",
    /// Retries that were the 2nd attempt of their call.
    Retry1 = "retries_1",
    /// Retries that were the 3rd attempt.
    Retry2 = "retries_2",
    /// Retries that were the 4th attempt.
    Retry3 = "retries_3",
    /// Retries that were the 5th attempt or later.
    Retry4Plus = "retries_4_plus",
    /// Attempts cut short because another hedge answered first.
    HedgesCancelled = "hedges_cancelled",
    /// Calls or retries the circuit breaker refused.
    BreakerRejected = "breaker_rejected",
    /// Breaker transitions to open.
    BreakerOpened = "breaker_opened",
    /// Retries the retry budget refused.
    BudgetDenied = "budget_denied",
    /// Attempts the client-side throttle rejected locally.
    ThrottleRejected = "throttle_rejected",
    /// Calls the client's bulkhead had no place for.
    BulkheadRejected = "bulkhead_rejected",
    /// Attempts turned away by a full pool line (`pool.max_pending`).
    PoolOverflow = "pool_overflow",
    /// Attempts that waited for the client's own rate limiter.
    RateLimiterWaits = "rate_limiter_waits",
    /// Retries whose delay came from Retry-After or pushback.
    RetryAfterWaits = "retry_after_waits",
    /// Queued upstream work dropped because its propagated deadline passed.
    UpstreamExpired = "upstream_expired",
    /// Attempts that ended with a 2xx.
    EndedSuccess = "attempts_ended_success",
    /// Attempts that ended by their own timeout.
    EndedTimeout = "attempts_ended_timeout",
    /// Attempts whose connection could not be set up.
    EndedConnectFailure = "attempts_ended_connect_failure",
    /// Attempts answered 5xx.
    EndedServerError = "attempts_ended_server_error",
    /// Attempts answered 4xx (not 429).
    EndedClientError = "attempts_ended_client_error",
    /// Attempts answered 429.
    EndedRateLimited = "attempts_ended_rate_limited",
    /// Attempts that got no pool connection in time.
    EndedPoolTimeout = "attempts_ended_pool_timeout",
    /// Attempts cut short by their call (a hedge won, a deadline, a restart).
    EndedCancelled = "attempts_ended_cancelled",
    /// Pods a service's outlier detection ejected.
    Ejections = "ejections",
    /// Pods an autoscaler added.
    PodsAdded = "pods_added",
    /// Pods an autoscaler removed.
    PodsRemoved = "pods_removed",
    /// Calls that started at least one retry (hedges aside) and ended:
    /// answered, failed, or cut off by their request's end.
    CallsRetried = "calls_retried",
    /// Of them, those that ended in success: what the retries rescued.
    CallsRescued = "calls_rescued",
}

impl Count {
    /// The counters of attempts ended, one per outcome.
    pub const ENDED: [Count; 8] = [
        Count::EndedSuccess,
        Count::EndedTimeout,
        Count::EndedConnectFailure,
        Count::EndedServerError,
        Count::EndedClientError,
        Count::EndedRateLimited,
        Count::EndedPoolTimeout,
        Count::EndedCancelled,
    ];
    /// The counter of attempts that ended with `o`.
    pub fn ended(o: crate::outcome::AttemptOutcome) -> Count {
        use crate::outcome::AttemptOutcome as O;
        match o {
            O::Success => Count::EndedSuccess,
            O::Timeout => Count::EndedTimeout,
            O::ConnectFailure => Count::EndedConnectFailure,
            O::ServerError(..) => Count::EndedServerError,
            O::ClientError(_) => Count::EndedClientError,
            O::RateLimited(_) => Count::EndedRateLimited,
            O::PoolTimeout => Count::EndedPoolTimeout,
            O::Cancelled => Count::EndedCancelled,
            // Not an attempt: nothing went out. The client counts the
            // refusal where its breaker makes it and never asks here.
            O::BreakerRefused => Count::BreakerRejected,
        }
    }
}

/// Latency distributions recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Latency {
    /// User-perceived, arrival to outcome, every outcome.
    EndToEnd,
    /// First attempts, start to outcome (pool wait included).
    FirstAttempt,
    /// Retries, start to outcome.
    Retry,
    /// Time attempts spent in the pool's line (zero when served at once).
    PoolWait,
    /// Delays actually waited before retries.
    RetryDelay,
}

impl Latency {
    /// Every latency, in column order.
    pub const ALL: [Latency; 5] = [
        Latency::EndToEnd,
        Latency::FirstAttempt,
        Latency::Retry,
        Latency::PoolWait,
        Latency::RetryDelay,
    ];
    /// Number of latencies.
    pub const COUNT: usize = Latency::ALL.len();
    /// The column prefix.
    pub fn name(self) -> &'static str {
        match self {
            Latency::EndToEnd => "e2e",
            Latency::FirstAttempt => "first_attempt",
            Latency::Retry => "retry",
            Latency::PoolWait => "pool_wait",
            Latency::RetryDelay => "retry_delay",
        }
    }
}

/// Attempts sent (first, retries and hedges) in a set of counters.
fn attempts_in(counts: &[u64; Count::COUNT]) -> u64 {
    [
        Count::AttemptsFirst,
        Count::AttemptsRetry,
        Count::AttemptsHedge,
    ]
    .iter()
    .map(|&c| counts[c as usize])
    .sum()
}

/// One bucket of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketRow {
    /// Bucket index.
    pub index: u64,
    /// Bucket start.
    pub start: SimTime,
    /// Bucket width (the last bucket of a run may be cut short: this is
    /// its actual span).
    pub span: SimDuration,
    /// Requests ended per reason, indexed by [`Reason::index`].
    pub outcomes: [u64; Reason::COUNT],
    /// Counters, indexed like [`Count::ALL`].
    pub counts: [u64; Count::COUNT],
    /// Levels, indexed like [`Level::ALL`].
    pub levels: [GaugeBucket; Level::COUNT],
    /// Latencies, indexed like [`Latency::ALL`].
    pub latencies: [LatencySummary; Latency::COUNT],
    /// End-to-end latency over the trailing window ending with this bucket
    /// (`clock.window`): every call finished in the window counts once, as
    /// a dashboard's quantile over `rate(...[1m])` does.
    pub e2e_window: LatencySummary,
    /// Per pod group, in group order.
    pub groups: Vec<GroupRow>,
    /// What the attempts that ended in the bucket cost, and of it what
    /// the attempts that served no answer cost; `None` when no client
    /// prices its attempts (`cost_per_attempt`).
    pub cost: Option<Cost>,
}

/// What attempts cost: all that ended, and those that served no answer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Every attempt that ended.
    pub total: f64,
    /// The attempts that ended without a success.
    pub wasted: f64,
}

/// Attempts priced by their edge's `cost_per_attempt`: per edge, the
/// attempts that ended and of them the successes, counted (and priced
/// only when read, so a run's cost is its count times its price, whatever
/// the order the attempts ended in).
#[derive(Clone, Debug, Default)]
pub struct Costs {
    /// By edge, its price (none: no edge prices its attempts, and nothing
    /// is counted).
    prices: Vec<Option<f64>>,
    /// By edge: attempts ended, and successes among them.
    counts: Vec<(u64, u64)>,
}

impl Costs {
    /// Costs at `prices`, one per edge; empty when none is set.
    pub fn new(prices: Vec<Option<f64>>) -> Self {
        if prices.iter().all(Option::is_none) {
            return Costs::default();
        }
        Costs {
            counts: vec![(0, 0); prices.len()],
            prices,
        }
    }

    /// An attempt on `edge` ended, a success or not.
    #[inline]
    fn ended(&mut self, edge: u32, success: bool) {
        if let Some(c) = self.counts.get_mut(edge as usize) {
            c.0 += 1;
            c.1 += u64::from(success);
        }
    }

    /// Adds `other`'s counts (a bucket's to the run's).
    fn add(&mut self, other: &Costs) {
        for (t, c) in self.counts.iter_mut().zip(&other.counts) {
            t.0 += c.0;
            t.1 += c.1;
        }
    }

    /// Forgets the counts (a new bucket).
    fn clear(&mut self) {
        self.counts.iter_mut().for_each(|c| *c = (0, 0));
    }

    /// What the counted attempts cost, edge by edge summed; `None` when no
    /// edge prices its attempts.
    pub fn priced(&self) -> Option<Cost> {
        if self.counts.is_empty() {
            return None;
        }
        let mut cost = Cost::default();
        for (price, &(ended, served)) in self.prices.iter().zip(&self.counts) {
            if let Some(c) = price {
                cost.total += c * ended as f64;
                cost.wasted += c * (ended - served) as f64;
            }
        }
        Some(cost)
    }
}

impl BucketRow {
    /// A counter's value.
    pub fn count(&self, c: Count) -> u64 {
        self.counts[c as usize]
    }
    /// Requests ended with `r`.
    pub fn outcome(&self, r: Reason) -> u64 {
        self.outcomes[r.index()]
    }
    /// A level's summary.
    pub fn level(&self, l: Level) -> GaugeBucket {
        self.levels[l as usize]
    }
    /// A latency summary.
    pub fn latency(&self, l: Latency) -> LatencySummary {
        self.latencies[l as usize]
    }
    /// Attempts started (first, retries and hedges).
    pub fn attempts(&self) -> u64 {
        attempts_in(&self.counts)
    }
    /// Requests ended, all reasons.
    pub fn finished(&self) -> u64 {
        self.outcomes.iter().sum()
    }
    /// Per-second rate of a counter over this bucket.
    pub fn rate(&self, c: Count) -> f64 {
        self.count(c) as f64 / self.span.as_secs_f64()
    }
    /// Successful requests per second.
    pub fn goodput(&self) -> f64 {
        self.outcome(Reason::Success) as f64 / self.span.as_secs_f64()
    }
}

/// One attempt, for the opt-in attempts table.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptRecord {
    /// The request's id.
    pub request: u64,
    /// The attempt's number in its call (1 is the first).
    pub attempt: u32,
    /// A hedge rather than a retry.
    pub hedge: bool,
    /// The pod that made it.
    pub pod: u32,
    /// When it started.
    pub start: SimTime,
    /// When it ended.
    pub end: SimTime,
    /// Time spent in the pool's line.
    pub pool_wait: SimDuration,
    /// How it ended (`success`, `timeout`, `server_error`, ... or
    /// `cancelled`).
    pub outcome: &'static str,
    /// It ended while the upstream still worked on it: its answer, if any,
    /// will come late and be discarded.
    pub late: bool,
    /// Its edge (the single tier: 0).
    pub edge: u32,
    /// What it cost, when its edge prices its attempts.
    pub cost: Option<f64>,
}

/// Something that happened to the world as a whole: a timeline action, a
/// breaker transition, a pod restart.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldEvent {
    /// When.
    pub at: SimTime,
    /// `timeline`, `breaker`, `pod_down`, `pod_up`.
    pub kind: &'static str,
    /// What, in words.
    pub detail: String,
}

/// Where a run's output goes: closed buckets always; attempts and world
/// events for sinks that want them.
pub trait RowSink {
    /// Takes one closed bucket.
    fn push(&mut self, row: BucketRow);
    /// The fraction of requests whose attempts to record (0: none).
    fn attempt_sample(&self) -> f64 {
        0.0
    }
    /// Takes one attempt record (only for sampled requests).
    fn attempt(&mut self, _record: AttemptRecord) {}
    /// Takes one world event.
    fn event(&mut self, _event: WorldEvent) {}
    /// Whether the sink keeps the nodes' rows.
    fn wants_nodes(&self) -> bool {
        false
    }
    /// Takes one node's bucket; `names` are the nodes' names in the
    /// recorder's order (services, edges, dependencies).
    fn node(&mut self, _row: NodeRow, _names: &[String]) {}
}

impl RowSink for Vec<BucketRow> {
    fn push(&mut self, row: BucketRow) {
        Vec::push(self, row);
    }
}

/// A sink that keeps nothing (benchmarks, totals-only runs).
#[derive(Debug, Default)]
pub struct Discard {
    /// Rows seen.
    pub rows: u64,
}

impl RowSink for Discard {
    fn push(&mut self, _row: BucketRow) {
        self.rows += 1;
    }
}

/// Totals over a whole run.
#[derive(Clone, Debug)]
pub struct RunTotals {
    /// Requests ended per reason.
    pub outcomes: [u64; Reason::COUNT],
    /// Counters.
    pub counts: [u64; Count::COUNT],
    /// Latency histograms, whole run.
    pub latencies: [Histogram; Latency::COUNT],
    /// Highest attempts ÷ offered in any bucket with offered load.
    pub peak_amplification: f64,
    /// What attempts cost over the run.
    pub costs: Costs,
    /// Attempts per user request with every call made once and none
    /// retried ([`crate::graph::Topology::fan_out`]; the world sets it,
    /// 1 by default as in the single tier): the amplification that is
    /// the graph's shape, not a storm.
    pub fan_out: f64,
    /// The open-loop rate the run began at (`load.rate`; the world sets
    /// it, 0 by default): recovery expects goodput to follow the load from
    /// it to where the timeline leaves it ([`crate::kpi`]).
    pub load_rate: f64,
    /// Whether closed-loop users add to the open-loop rate (the world
    /// sets it).
    pub closed_loop: bool,
    /// Per edge, in the topology's order: its calls that retried and
    /// those of them rescued (the world's `CallsRetried` and
    /// `CallsRescued`, edge by edge), with its name.
    pub edge_rescues: Vec<EdgeRescues>,
}

/// One edge's retried calls over the run, and those its retries rescued.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeRescues {
    /// `orders->payment`.
    pub edge: String,
    /// Calls that retried (cut off by their request or not).
    pub retried: u64,
    /// Of them, those that ended in success.
    pub rescued: u64,
}

impl Default for RunTotals {
    fn default() -> Self {
        RunTotals {
            outcomes: [0; Reason::COUNT],
            counts: [0; Count::COUNT],
            latencies: std::array::from_fn(|_| Histogram::new()),
            peak_amplification: 0.0,
            costs: Costs::default(),
            fan_out: 1.0,
            load_rate: 0.0,
            closed_loop: false,
            edge_rescues: Vec::new(),
        }
    }
}

impl RunTotals {
    /// A counter's total.
    pub fn count(&self, c: Count) -> u64 {
        self.counts[c as usize]
    }
    /// Requests ended with `r`.
    pub fn outcome(&self, r: Reason) -> u64 {
        self.outcomes[r.index()]
    }
    /// Attempts ÷ offered requests over the run.
    pub fn amplification(&self) -> f64 {
        let offered = self.count(Count::Offered);
        if offered == 0 {
            return 0.0;
        }
        self.attempts() as f64 / offered as f64
    }
    /// Attempts sent over the run (first, retries and hedges).
    pub fn attempts(&self) -> u64 {
        attempts_in(&self.counts)
    }
    /// Requests ended, all reasons.
    pub fn finished(&self) -> u64 {
        self.outcomes.iter().sum()
    }
    /// Attempts ended over the run, every outcome.
    pub fn attempts_ended(&self) -> u64 {
        Count::ENDED.iter().map(|&c| self.count(c)).sum()
    }
    /// A latency histogram.
    pub fn latency(&self, l: Latency) -> &Histogram {
        &self.latencies[l as usize]
    }
}

/// What kind of node a [`NodeRow`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A service: requests at its pods.
    Service,
    /// An edge: a service's calls to a service or a dependency.
    Edge,
    /// A dependency: attempts arriving at it.
    Dependency,
}

impl NodeKind {
    /// The column value.
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Service => "service",
            NodeKind::Edge => "edge",
            NodeKind::Dependency => "dependency",
        }
    }
}

/// One node's figures during one bucket. Every world has them: the single
/// tier is the service `service`, the edge `service->upstream` and the
/// dependency `upstream`.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRow {
    /// The bucket's index.
    pub bucket: u64,
    /// When the bucket started.
    pub start: SimTime,
    /// What kind of node.
    pub kind: NodeKind,
    /// Its index among its kind.
    pub index: u32,
    /// Its place among all nodes: its name in [`Recorder::node_names`].
    pub slot: u32,
    /// Service: requests that reached a pod. Edge: calls started.
    /// Dependency: attempts that arrived.
    pub offered: u64,
    /// Edge: attempts started, first ones and retries and hedges.
    pub attempts: u64,
    /// Edge: attempts after the first (retries and hedges).
    pub retries: u64,
    /// Service: requests answered (a degraded answer too). Edge: calls
    /// answered. Dependency: our attempts answered 200.
    pub answered: u64,
    /// Service: requests failed. Edge: calls failed (cancelled calls of a
    /// group that was done without them are neither). Dependency: our
    /// attempts answered otherwise (errors, rejections, 429s).
    pub failed: u64,
    /// Edge: attempts that timed out.
    pub timeouts: u64,
    /// Edge: calls that retried (a call cut off by its request counted
    /// too), as [`Count::CallsRetried`] counts them over every edge.
    pub calls_retried: u64,
    /// Edge: those of `calls_retried` that ended in success.
    pub calls_rescued: u64,
    /// Service: time from reaching a pod to the answer. Edge: attempt
    /// latency (cancelled attempts left out).
    pub latency: LatencySummary,
    /// Service: requests at its pods. Edge: pool connections in use.
    /// Dependency: requests in a slot.
    pub busy: GaugeBucket,
    /// Edge: attempts waiting for a pool connection. Dependency: requests
    /// queued for a slot. Service: 0.
    pub waiting: GaugeBucket,
    /// Edge: calls waiting for a place in its client's bulkhead. Others:
    /// 0.
    pub bulkhead_waiting: GaugeBucket,
    /// Service: pods its outlier detection holds ejected. Others: 0.
    pub ejected: GaugeBucket,
    /// Edge: the places its adaptive bulkheads allow, summed over them
    /// (0 without one). Others: 0.
    pub bulkhead_limit: GaugeBucket,
    /// Service: its replicas (pods neither removed nor draining; killed
    /// and restarting ones included). Others: 0.
    pub replicas: GaugeBucket,
}

/// One node's open bucket.
#[derive(Clone, Debug)]
struct NodeOpen {
    kind: NodeKind,
    index: u32,
    slot: u32,
    offered: u64,
    attempts: u64,
    retries: u64,
    answered: u64,
    failed: u64,
    timeouts: u64,
    calls_retried: u64,
    calls_rescued: u64,
    latency: Histogram,
    busy: Gauge,
    waiting: Gauge,
    bulkhead_waiting: Gauge,
    ejected: Gauge,
    bulkhead_limit: Gauge,
    replicas: Gauge,
}

impl NodeOpen {
    fn new(kind: NodeKind, index: u32) -> Self {
        NodeOpen {
            kind,
            index,
            slot: 0,
            offered: 0,
            attempts: 0,
            retries: 0,
            answered: 0,
            failed: 0,
            timeouts: 0,
            calls_retried: 0,
            calls_rescued: 0,
            latency: Histogram::new(),
            busy: Gauge::new(),
            waiting: Gauge::new(),
            bulkhead_waiting: Gauge::new(),
            ejected: Gauge::new(),
            bulkhead_limit: Gauge::new(),
            replicas: Gauge::new(),
        }
    }

    /// Closes the bucket; `mirrored` replaces the latency and levels this
    /// node did not keep because the totals hold the same (see
    /// [`Mirrored`]).
    fn close(
        &mut self,
        bucket: u64,
        start: SimTime,
        end: SimTime,
        mirrored: Option<(LatencySummary, GaugeBucket, GaugeBucket)>,
    ) -> NodeRow {
        let mut row = NodeRow {
            bucket,
            start,
            kind: self.kind,
            index: self.index,
            slot: self.slot,
            offered: std::mem::take(&mut self.offered),
            attempts: std::mem::take(&mut self.attempts),
            retries: std::mem::take(&mut self.retries),
            answered: std::mem::take(&mut self.answered),
            failed: std::mem::take(&mut self.failed),
            timeouts: std::mem::take(&mut self.timeouts),
            calls_retried: std::mem::take(&mut self.calls_retried),
            calls_rescued: std::mem::take(&mut self.calls_rescued),
            latency: LatencySummary::of(&self.latency),
            busy: self.busy.close(end),
            waiting: self.waiting.close(end),
            bulkhead_waiting: self.bulkhead_waiting.close(end),
            ejected: self.ejected.close(end),
            bulkhead_limit: self.bulkhead_limit.close(end),
            replicas: self.replicas.close(end),
        };
        self.latency.clear();
        if let Some((latency, busy, waiting)) = mirrored {
            row.latency = latency;
            row.busy = busy;
            row.waiting = waiting;
        }
        row
    }
}

/// Which nodes' figures are the totals' own, so the recorder keeps them
/// once. With one edge, the edge's pool levels are the world's
/// `PoolInUse` and `PoolWaiters`, and its attempt latencies are the first
/// attempts' and the retries' together; with one dependency, its levels
/// are `UpstreamInService` and `UpstreamQueued`. The single tier and
/// every chain of one call are such worlds: these node figures would be
/// recorded twice per request, identically.
///
/// Likewise with one edge, called by the entry service, the pod groups
/// hold every pool there is: with one group, its levels are `PoolInUse`
/// and `PoolWaiters` and its waits the `PoolWait` histogram; with more,
/// the `PoolWait` histogram is their waits merged (exactly: counts and
/// sums add), so each wait is recorded once, in its group.
#[derive(Clone, Copy, Debug, Default)]
struct Mirrored {
    edge: bool,
    dependency: bool,
    group: bool,
    waits_by_group: bool,
}

/// The open bucket plus run totals.
pub struct Recorder<S> {
    width: SimDuration,
    index: u64,
    outcomes: [u64; Reason::COUNT],
    counts: [u64; Count::COUNT],
    levels: [Gauge; Level::COUNT],
    hists: [Histogram; Latency::COUNT],
    e2e_window: TrailingHistogram,
    groups: Vec<GroupOpen>,
    group_of: Vec<u32>,
    /// Services, then edges, then dependencies.
    nodes: Vec<NodeOpen>,
    /// Where edges and dependencies start in `nodes`.
    first_edge: usize,
    first_dependency: usize,
    /// Each node's name, in `nodes` order.
    node_names: Vec<String>,
    /// Each dependency's last in-service and queued counts.
    dependency_levels: Vec<(i64, i64)>,
    /// Each edge's adaptive bulkhead places, summed over its bulkheads
    /// (kept with or without the nodes table: the world's level is their
    /// sum).
    edge_limits: Vec<i64>,
    /// Node figures taken from the totals at each close.
    mirrored: Mirrored,
    /// The open bucket's priced attempts.
    costs: Costs,
    totals: RunTotals,
    sink: S,
}

impl<S: RowSink> Recorder<S> {
    /// A recorder with buckets of `width`, sending rows to `sink`; the
    /// windowed end-to-end quantiles cover the last `window` (rounded up to
    /// whole buckets).
    pub fn new(width: SimDuration, window: SimDuration, sink: S) -> Self {
        let buckets = window.as_nanos().div_ceil(width.as_nanos().max(1));
        Recorder {
            width,
            e2e_window: TrailingHistogram::new(usize::try_from(buckets).unwrap_or(usize::MAX)),
            groups: Vec::new(),
            group_of: Vec::new(),
            nodes: Vec::new(),
            first_edge: 0,
            first_dependency: 0,
            node_names: Vec::new(),
            dependency_levels: Vec::new(),
            edge_limits: Vec::new(),
            mirrored: Mirrored::default(),
            costs: Costs::default(),
            index: 0,
            outcomes: [0; Reason::COUNT],
            counts: [0; Count::COUNT],
            levels: std::array::from_fn(|_| Gauge::new()),
            hists: std::array::from_fn(|_| Histogram::new()),
            totals: RunTotals::default(),
            sink,
        }
    }

    /// Reports `pods` pods' pools in `groups` groups of consecutive pods
    /// (pod `i` in group `i × groups / pods`). `only_pools` says that the
    /// entry service's pools, which the groups report, are the only pools
    /// in the world (one edge, the entry's): then one group's figures are
    /// the totals', taken from them when a bucket closes.
    pub fn with_pod_groups(mut self, pods: u32, groups: u32, only_pools: bool) -> Self {
        let groups = groups.clamp(1, pods.max(1));
        self.mirrored.group = only_pools && groups == 1;
        self.mirrored.waits_by_group = only_pools && groups > 1;
        self.group_of = (0..pods).map(|i| group_of(i, pods, groups)).collect();
        self.groups = (0..groups)
            .map(|_| GroupOpen {
                in_use: Gauge::new(),
                waiters: Gauge::new(),
                wait: Histogram::new(),
            })
            .collect();
        self
    }

    /// Records each node of `topo` in its own rows, when the sink keeps
    /// them (a sink that does not costs no node recording at all).
    pub fn with_nodes(mut self, topo: &crate::graph::Topology) -> Self {
        let (s, e, d) = (
            topo.services.len(),
            topo.edges.len(),
            topo.dependencies.len(),
        );
        self.dependency_levels = vec![(0, 0); d];
        self.edge_limits = vec![0; e];
        self.totals.edge_rescues = topo
            .edges
            .iter()
            .map(|x| EdgeRescues {
                edge: x.name.clone(),
                ..Default::default()
            })
            .collect();
        self.costs = Costs::new(
            topo.edges
                .iter()
                .map(|e| e.client.cost_per_attempt)
                .collect(),
        );
        self.totals.costs = self.costs.clone();
        if !self.sink.wants_nodes() {
            return self;
        }
        self.nodes = (0..s)
            .map(|i| NodeOpen::new(NodeKind::Service, i as u32))
            .chain((0..e).map(|i| NodeOpen::new(NodeKind::Edge, i as u32)))
            .chain((0..d).map(|i| NodeOpen::new(NodeKind::Dependency, i as u32)))
            .collect();
        for (slot, n) in self.nodes.iter_mut().enumerate() {
            n.slot = slot as u32;
        }
        self.first_edge = s;
        self.first_dependency = s + e;
        self.mirrored.edge = e == 1;
        self.mirrored.dependency = d == 1;
        self.node_names = topo
            .services
            .iter()
            .map(|x| x.name.clone())
            .chain(topo.edges.iter().map(|x| x.name.clone()))
            .chain(topo.dependencies.iter().map(|x| x.name.clone()))
            .collect();
        self
    }

    /// The nodes' names: services, then edges, then dependencies, each in
    /// index order.
    pub fn node_names(&self) -> &[String] {
        &self.node_names
    }

    /// A request reached a pod of `service`.
    #[inline]
    pub fn node_service_arrived(&mut self, service: u32, now: SimTime) {
        if let Some(n) = self.nodes.get_mut(service as usize) {
            n.offered += 1;
            n.busy.add(now, 1);
        }
    }

    /// `service` is done with a request, after `latency` on its pod (a
    /// request that never reached a pod is only counted).
    #[inline]
    pub fn node_service_done(
        &mut self,
        service: u32,
        reason: Reason,
        latency: Option<SimDuration>,
        now: SimTime,
    ) {
        if let Some(n) = self.nodes.get_mut(service as usize) {
            if matches!(reason, Reason::Success | Reason::Fallback) {
                n.answered += 1;
            } else {
                n.failed += 1;
            }
            if let Some(l) = latency {
                n.latency.record(l.as_nanos());
                n.busy.add(now, -1);
            }
        }
    }

    /// A call started on `edge`.
    #[inline]
    pub fn node_call_started(&mut self, edge: u32) {
        if let Some(n) = self.nodes.get_mut(self.first_edge + edge as usize) {
            n.offered += 1;
        }
    }

    /// A call on `edge` ended with `reason`, or was `cut` by its request
    /// (its group was done without it, or the request ended): a cut call
    /// counts as neither answered nor failed. A call that `retried` is
    /// counted as such, and as rescued when it ended in success: the
    /// world's [`Count::CallsRetried`] and [`Count::CallsRescued`], and
    /// the edge's own.
    #[inline]
    pub fn node_call_ended(&mut self, edge: u32, reason: Reason, cut: bool, retried: bool) {
        let rescued = retried && !cut && reason == Reason::Success;
        if retried {
            self.count(Count::CallsRetried, 1);
            self.count(Count::CallsRescued, u64::from(rescued));
            if let Some(r) = self.totals.edge_rescues.get_mut(edge as usize) {
                r.retried += 1;
                r.rescued += u64::from(rescued);
            }
        }
        let Some(n) = self.nodes.get_mut(self.first_edge + edge as usize) else {
            return;
        };
        if retried {
            n.calls_retried += 1;
            n.calls_rescued += u64::from(rescued);
        }
        if cut {
            return;
        }
        if matches!(reason, Reason::Success | Reason::Fallback) {
            n.answered += 1;
        } else {
            n.failed += 1;
        }
    }

    /// An attempt started on `edge`.
    #[inline]
    pub fn node_attempt_started(&mut self, edge: u32, retry: bool) {
        if let Some(n) = self.nodes.get_mut(self.first_edge + edge as usize) {
            n.attempts += 1;
            n.retries += u64::from(retry);
        }
    }

    /// An attempt on `edge` ended with `outcome` after `d`.
    #[inline]
    pub fn node_attempt_ended(
        &mut self,
        edge: u32,
        outcome: crate::outcome::AttemptOutcome,
        d: SimDuration,
    ) {
        use crate::outcome::AttemptOutcome;
        if let Some(n) = self.nodes.get_mut(self.first_edge + edge as usize) {
            match outcome {
                AttemptOutcome::Cancelled | AttemptOutcome::BreakerRefused => return,
                AttemptOutcome::Timeout => n.timeouts += 1,
                _ => {}
            }
            if !self.mirrored.edge {
                n.latency.record(d.as_nanos());
            }
        }
    }

    /// An attempt arrived at dependency `dep`.
    #[inline]
    pub fn node_dependency_arrived(&mut self, dep: u32) {
        if let Some(n) = self.nodes.get_mut(self.first_dependency + dep as usize) {
            n.offered += 1;
        }
    }

    /// Dependency `dep` answered one of our attempts (`ok`: a 200), or
    /// refused it.
    #[inline]
    pub fn node_dependency_answered(&mut self, dep: u32, ok: bool) {
        if let Some(n) = self.nodes.get_mut(self.first_dependency + dep as usize) {
            n.answered += u64::from(ok);
            n.failed += u64::from(!ok);
        }
    }

    /// Dependency `dep` has `in_service` requests in a slot and `queued` in
    /// line: its own levels, and the sums over every dependency.
    #[inline(always)]
    pub fn dependency_levels(&mut self, dep: u32, now: SimTime, in_service: i64, queued: i64) {
        if self.nodes.is_empty() && self.dependency_levels.len() == 1 {
            // The single tier's one dependency, its rows not kept.
            self.level(Level::UpstreamInService, now, in_service);
            self.level(Level::UpstreamQueued, now, queued);
            return;
        }
        let Some(last) = self.dependency_levels.get_mut(dep as usize) else {
            return;
        };
        let (d_busy, d_wait) = (in_service - last.0, queued - last.1);
        *last = (in_service, queued);
        if !self.mirrored.dependency
            && let Some(n) = self.nodes.get_mut(self.first_dependency + dep as usize)
        {
            n.busy.set(now, in_service);
            n.waiting.set(now, queued);
        }
        if self.dependency_levels.len() == 1 {
            self.level(Level::UpstreamInService, now, in_service);
            self.level(Level::UpstreamQueued, now, queued);
        } else {
            self.level_add(Level::UpstreamInService, now, d_busy);
            self.level_add(Level::UpstreamQueued, now, d_wait);
        }
    }

    /// `pod`'s group; pods a timeline adds beyond the configured count
    /// report in the last group.
    fn group_index(&self, pod: u32) -> Option<usize> {
        let last = self.groups.len().checked_sub(1)?;
        Some(
            self.group_of
                .get(pod as usize)
                .map_or(last, |&g| g as usize),
        )
    }

    /// A pool wait at pod `group_pod` when that pod is one the groups
    /// report (the entry service's): counted in the totals and in its
    /// group.
    #[inline(always)]
    pub fn pool_wait(&mut self, group_pod: Option<u32>, d: SimDuration) {
        if self.mirrored.group {
            self.latency(Latency::PoolWait, d);
            return;
        }
        match group_pod.and_then(|pod| self.group_index(pod)) {
            Some(g) if self.mirrored.waits_by_group => self.groups[g].wait.record(d.as_nanos()),
            Some(g) => {
                self.latency(Latency::PoolWait, d);
                self.groups[g].wait.record(d.as_nanos());
            }
            None => self.latency(Latency::PoolWait, d),
        }
    }

    /// Calls waiting in `edge`'s bulkhead lines changed by `delta`: the
    /// world's level and the edge's own (recorded twice in a world of one
    /// edge: only a bulkhead with a line pays for it).
    pub fn bulkhead_waiting(&mut self, edge: u32, now: SimTime, delta: i64) {
        self.level_add(Level::BulkheadWaiting, now, delta);
        if let Some(n) = self.nodes.get_mut(self.first_edge + edge as usize) {
            n.bulkhead_waiting.add(now, delta);
        }
    }

    /// The places `edge`'s adaptive bulkheads allow, summed, are now
    /// `places`: the edge's own level, and the world's by the change.
    pub fn node_bulkhead_limit(&mut self, edge: u32, now: SimTime, places: i64) {
        let Some(last) = self.edge_limits.get_mut(edge as usize) else {
            return;
        };
        let delta = places - std::mem::replace(last, places);
        if let Some(n) = self.nodes.get_mut(self.first_edge + edge as usize) {
            n.bulkhead_limit.set(now, places);
        }
        if delta != 0 {
            self.level_add(Level::BulkheadLimit, now, delta);
        }
    }

    /// The places `edge`'s adaptive bulkheads allow, as last told.
    pub fn edge_limit(&self, edge: u32) -> i64 {
        self.edge_limits.get(edge as usize).copied().unwrap_or(0)
    }

    /// The places `edge`'s adaptive bulkheads allow changed by `delta`.
    pub fn node_bulkhead_limit_by(&mut self, edge: u32, now: SimTime, delta: i64) {
        if let Some(&last) = self.edge_limits.get(edge as usize) {
            self.node_bulkhead_limit(edge, now, last + delta);
        }
    }

    /// The replicas of `service` changed by `delta`.
    pub fn node_replicas(&mut self, service: u32, now: SimTime, delta: i64) {
        if let Some(n) = self.nodes.get_mut(service as usize) {
            n.replicas.add(now, delta);
        }
    }

    /// Pods of `service` ejected by its outlier detection changed by
    /// `delta`.
    pub fn node_ejected(&mut self, service: u32, now: SimTime, delta: i64) {
        if let Some(n) = self.nodes.get_mut(service as usize) {
            n.ejected.add(now, delta);
        }
    }

    /// A pool of `edge` changed by `in_use` connections and `waiters`
    /// waiters, at pod `group_pod` when the groups report it.
    #[inline(always)]
    pub fn pool_changed(
        &mut self,
        group_pod: Option<u32>,
        edge: u32,
        now: SimTime,
        in_use: i64,
        waiters: i64,
    ) {
        if in_use != 0 {
            self.level_add(Level::PoolInUse, now, in_use);
        }
        if waiters != 0 {
            self.level_add(Level::PoolWaiters, now, waiters);
        }
        if in_use + waiters != 0 {
            self.level_add(Level::CallsInFlight, now, in_use + waiters);
        }
        if !self.mirrored.edge
            && let Some(n) = self.nodes.get_mut(self.first_edge + edge as usize)
        {
            if in_use != 0 {
                n.busy.add(now, in_use);
            }
            if waiters != 0 {
                n.waiting.add(now, waiters);
            }
        }
        if !self.mirrored.group
            && let Some(g) = group_pod.and_then(|pod| self.group_index(pod))
        {
            let group = &mut self.groups[g];
            if in_use != 0 {
                group.in_use.add(now, in_use);
            }
            if waiters != 0 {
                group.waiters.add(now, waiters);
            }
        }
    }

    /// An attempt on `edge` ended with `outcome`: counted, and priced if
    /// its edge prices its attempts.
    #[inline]
    pub fn attempt_ended(&mut self, edge: u32, outcome: crate::outcome::AttemptOutcome) {
        self.counts[Count::ended(outcome) as usize] += 1;
        self.costs
            .ended(edge, outcome == crate::outcome::AttemptOutcome::Success);
    }

    /// Counts one event.
    #[inline]
    pub fn count(&mut self, c: Count, n: u64) {
        self.counts[c as usize] += n;
    }
    /// Counts one finished request.
    #[inline]
    pub fn outcome(&mut self, r: Reason) {
        self.outcomes[r.index()] += 1;
    }
    /// Records a latency.
    #[inline]
    pub fn latency(&mut self, l: Latency, d: SimDuration) {
        self.hists[l as usize].record(d.as_nanos());
    }
    /// Sets a level at `now`.
    #[inline]
    pub fn level(&mut self, l: Level, now: SimTime, value: i64) {
        self.levels[l as usize].set(now, value);
    }
    /// Changes a level by `delta` at `now`.
    #[inline]
    pub fn level_add(&mut self, l: Level, now: SimTime, delta: i64) {
        self.levels[l as usize].add(now, delta);
    }
    /// A level's current value.
    pub fn level_value(&self, l: Level) -> i64 {
        self.levels[l as usize].value()
    }
    /// Totals so far, the open bucket not included.
    pub fn totals(&self) -> &RunTotals {
        &self.totals
    }
    /// The open bucket's count of `c`.
    pub fn open_count(&self, c: Count) -> u64 {
        self.counts[c as usize]
    }
    /// Attempts the recorder saw start, closed buckets and the open one.
    pub fn attempts_started_so_far(&self) -> u64 {
        self.totals.attempts() + attempts_in(&self.counts)
    }
    /// Attempts the recorder saw end, closed buckets and the open one.
    pub fn attempts_ended_so_far(&self) -> u64 {
        self.totals.attempts_ended()
            + Count::ENDED
                .iter()
                .map(|&c| self.counts[c as usize])
                .sum::<u64>()
    }
    /// The open bucket's outcomes.
    pub fn open_outcomes(&self) -> u64 {
        self.outcomes.iter().sum()
    }

    /// Closes the open bucket at `end` and sends its row to the sink.
    pub fn close_bucket(&mut self, end: SimTime) {
        let start = SimTime::ZERO.saturating_add(self.width.saturating_mul(self.index));
        if self.mirrored.waits_by_group {
            let waits = &mut self.hists[Latency::PoolWait as usize];
            for g in &self.groups {
                waits.merge(&g.wait);
            }
        }
        let levels: [GaugeBucket; Level::COUNT] =
            std::array::from_fn(|i| self.levels[i].close(end));
        let latencies: [LatencySummary; Latency::COUNT] =
            std::array::from_fn(|i| LatencySummary::of(&self.hists[i]));
        let groups = if self.mirrored.group {
            vec![GroupRow {
                in_use: levels[Level::PoolInUse as usize],
                waiters: levels[Level::PoolWaiters as usize],
                wait: latencies[Latency::PoolWait as usize],
            }]
        } else {
            self.groups
                .iter_mut()
                .map(|g| {
                    let row = GroupRow {
                        in_use: g.in_use.close(end),
                        waiters: g.waiters.close(end),
                        wait: LatencySummary::of(&g.wait),
                    };
                    g.wait.clear();
                    row
                })
                .collect()
        };
        let row = BucketRow {
            index: self.index,
            start,
            span: end.saturating_since(start),
            outcomes: self.outcomes,
            counts: self.counts,
            levels,
            latencies,
            e2e_window: LatencySummary::of(
                self.e2e_window
                    .push(&self.hists[Latency::EndToEnd as usize]),
            ),
            groups,
            cost: self.costs.priced(),
        };
        let edge_latency = (self.mirrored.edge && !self.nodes.is_empty()).then(|| {
            let mut h = self.hists[Latency::FirstAttempt as usize].clone();
            h.merge(&self.hists[Latency::Retry as usize]);
            LatencySummary::of(&h)
        });
        self.totals.costs.add(&self.costs);
        self.costs.clear();
        for (t, c) in self.totals.outcomes.iter_mut().zip(self.outcomes) {
            *t += c;
        }
        for (t, c) in self.totals.counts.iter_mut().zip(self.counts) {
            *t += c;
        }
        for (t, h) in self.totals.latencies.iter_mut().zip(&mut self.hists) {
            t.merge(h);
            h.clear();
        }
        let offered = row.count(Count::Offered);
        if offered > 0 {
            let amp = row.attempts() as f64 / offered as f64;
            self.totals.peak_amplification = self.totals.peak_amplification.max(amp);
        }
        self.outcomes = [0; Reason::COUNT];
        self.counts = [0; Count::COUNT];
        let index = self.index;
        self.index += 1;
        let dependency_mirrored = self.mirrored.dependency;
        let mirrored = |n: &NodeOpen| match n.kind {
            NodeKind::Edge => edge_latency.map(|l| {
                (
                    l,
                    row.level(Level::PoolInUse),
                    row.level(Level::PoolWaiters),
                )
            }),
            NodeKind::Dependency if dependency_mirrored => Some((
                LatencySummary::of(&n.latency),
                row.level(Level::UpstreamInService),
                row.level(Level::UpstreamQueued),
            )),
            _ => None,
        };
        let node_rows: Vec<NodeRow> = self
            .nodes
            .iter_mut()
            .map(|n| {
                let m = mirrored(n);
                n.close(index, start, end, m)
            })
            .collect();
        self.sink.push(row);
        if self.sink.wants_nodes() {
            for r in node_rows {
                self.sink.node(r, &self.node_names);
            }
        }
    }

    /// Ends recording: the sink and the totals.
    pub fn finish(self) -> (S, RunTotals) {
        (self.sink, self.totals)
    }

    /// The sink, for attempt and event records.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Column arrays are indexed by discriminant: each `ALL` must list every
    /// variant in declaration order, and names must be unique.
    #[test]
    fn column_lists_are_complete_and_in_order() {
        fn check<T: Copy>(all: &[T], index: impl Fn(T) -> usize, name: impl Fn(T) -> &'static str) {
            let mut names = std::collections::BTreeSet::new();
            for (i, &x) in all.iter().enumerate() {
                assert_eq!(index(x), i);
                assert!(names.insert(name(x)), "duplicate column {}", name(x));
            }
        }
        check(Count::ALL, |c| c as usize, Count::name);
        check(&Level::ALL, |c| c as usize, Level::name);
        check(&Latency::ALL, |c| c as usize, Latency::name);
        check(&Reason::ALL, |c| c as usize, Reason::name);
        // The last variant of each enum is in its list.
        assert_eq!(Count::CallsRescued as usize, Count::COUNT - 1);
        assert_eq!(Level::BulkheadLimit as usize, Level::COUNT - 1);
        assert_eq!(Latency::RetryDelay as usize, Latency::COUNT - 1);
        assert_eq!(Reason::Abandoned as usize, Reason::COUNT - 1);
    }
}
