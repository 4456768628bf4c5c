//! The dependency's side of the world: requests crossing to it, its
//! answers crossing back, other tenants' load, and its levels. The
//! dependency's own state machine (slots, queue, load law, admission) is
//! `upstream.rs`; this part routes its events and answers the attempts
//! that called it.

use crate::config::{ConfigError, Problems, millis, secs};
use crate::context::Ctx;
use crate::graph::{DependencyNode, stream_name};
use crate::timeline::Param;
use crate::upstream::Upstream;
use crate::world::compile;
use serde::{Deserialize, Serialize};
use sim_core::dist::Dist;
use sim_core::dist::DistSpec;
use sim_core::queue::EventId;
use sim_core::rng::{RngStreams, SimRng};
use sim_core::time::{SimDuration, SimTime};

use crate::client::ClientEvent;
use crate::load::exp_gap;
use crate::recorder::{Count, RowSink};
use crate::request::{AttRef, AttemptPhase};
use crate::upstream::{Admission, DependencyEvent, JobRef, Owner, Status};

/// The dependency as the world holds it: its state machine, and the other
/// tenants' load on it.
pub struct Dependency {
    /// Its index among the dependencies.
    pub(crate) index: u32,
    pub(crate) upstream: Upstream,
    /// Its configuration as deployed.
    pub(crate) cfg: UpstreamConfig,
    /// Its name's path in messages (`dependencies.mysql`, `upstream`).
    path: String,
    pub(crate) background_timer: Option<EventId>,
    pub(crate) background_rng: SimRng,
}

impl Dependency {
    /// The dependency as configured, idle.
    pub(crate) fn new(
        index: u32,
        node: &DependencyNode,
        streams: &RngStreams,
    ) -> Result<Self, Vec<ConfigError>> {
        let cfg = &node.cfg;
        let stream = |base: &str| streams.stream(stream_name(base, &node.suffix).as_str());
        Ok(Dependency {
            index,
            upstream: Upstream::new(
                index,
                cfg,
                compile(&cfg.latency, &format!("{}.latency", node.path))?,
                stream("upstream/latency"),
                stream("upstream/errors"),
                stream("upstream/shedding"),
            ),
            cfg: cfg.clone(),
            path: node.path.clone(),
            background_timer: None,
            background_rng: stream("upstream/background"),
        })
    }

    /// Routes the dependency's events to their handlers (the world routes
    /// `Received`, which needs what the attempt's client propagates).
    #[inline]
    pub(crate) fn on_event<S: RowSink>(&mut self, e: DependencyEvent, ctx: &mut Ctx<'_, S>) {
        match e {
            DependencyEvent::Completed { job, .. } => self.on_completed(job, ctx),
            DependencyEvent::BackgroundArrived { .. } => self.on_background_arrived(ctx),
            DependencyEvent::Received { .. } => debug_assert!(false, "routed by the world"),
        }
    }

    /// Attempt `att` on `edge` arrived, carrying its caller's propagated
    /// `deadline`: admitted, queued, answered at the door, or dropped.
    pub(crate) fn on_received<S: RowSink>(
        &mut self,
        att: AttRef,
        edge: u32,
        deadline: Option<SimTime>,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        let retry = ctx.sh.reqs.att(att).is_some_and(|a| a.number > 1);
        ctx.sh.rec.node_dependency_arrived(self.index);
        let up = &mut self.upstream;
        let (job, admission) = up.arrive(Owner::Client(att, edge), retry, deadline, now, ctx.sched);
        if let Admission::Answered(status) = admission {
            up.answered(now, status);
        }
        count_admission(admission, ctx);
        let live = ctx
            .sh
            .reqs
            .att(att)
            .is_some_and(|a| a.phase == AttemptPhase::InFlight);
        match (admission, job) {
            (Admission::Started | Admission::Queued, Some(job)) => {
                if live {
                    if let Some(a) = ctx.sh.reqs.att_mut(att) {
                        a.job = Some(job);
                    }
                } else if self.upstream.abandon(job, ctx.sched) {
                    // The caller gave up while the request was on the wire.
                    ctx.sh.rec.count(Count::UpstreamCancelled, 1);
                }
            }
            (Admission::Answered(status), _) => {
                ctx.sh
                    .rec
                    .node_dependency_answered(self.index, status == Status::Ok);
                let after = self.upstream.answer_delay(status);
                respond_after(att, edge, status, after, ctx)
            }
            _ => {} // dropped: the caller will time out
        }
        self.sync_levels(ctx);
    }

    /// Starts loading `job`'s record, to be read soon (a hint).
    #[inline]
    pub(crate) fn prefetch_job(&self, job: JobRef) {
        self.upstream.prefetch_job(job);
    }

    fn on_completed<S: RowSink>(&mut self, job: JobRef, ctx: &mut Ctx<'_, S>) {
        let up = &mut self.upstream;
        let done = stale!(up.complete(job, ctx.sched));
        up.answered(ctx.now(), done.status);
        self.report_expired(ctx);
        self.sync_levels(ctx);
        match done.owner {
            Owner::Background => ctx.sh.rec.count(Count::BackgroundCompleted, 1),
            Owner::Client(att, edge) => {
                if done.abandoned {
                    // Finished for nobody: the caller had already given up.
                    ctx.sh.rec.count(Count::UpstreamWasted, 1);
                    ctx.sh.rec.count(Count::LateResponses, 1);
                } else {
                    if done.status == Status::Ok {
                        ctx.sh.rec.count(Count::UpstreamGoodput, 1);
                    }
                    ctx.sh
                        .rec
                        .node_dependency_answered(self.index, done.status == Status::Ok);
                    respond_after(att, edge, done.status, SimDuration::ZERO, ctx);
                }
            }
        }
    }

    /// The attempt that sent `job` gave up on it: without cancellation
    /// the dependency keeps working on it (it will count as wasted); with
    /// it, the job stops.
    pub(crate) fn abandon<S: RowSink>(&mut self, job: JobRef, ctx: &mut Ctx<'_, S>) {
        if self.upstream.abandon(job, ctx.sched) {
            ctx.sh.rec.count(Count::UpstreamCancelled, 1);
            self.sync_levels(ctx);
        }
    }

    /// Counts queued work dropped for a passed deadline.
    fn report_expired<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let n = std::mem::take(&mut self.upstream.expired);
        if n > 0 {
            ctx.sh.rec.count(Count::UpstreamExpired, n);
        }
    }

    /// (Re)schedules the next background arrival.
    pub(crate) fn schedule_next_background<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        if let Some(t) = self.background_timer.take() {
            ctx.sched.cancel(t);
        }
        let rate = self.upstream.params.background_rps;
        if rate > 0.0 {
            let gap = exp_gap(&mut self.background_rng, rate);
            self.background_timer = Some(ctx.sched.schedule_in(
                gap,
                DependencyEvent::BackgroundArrived { dep: self.index }.into(),
            ));
        }
    }

    fn on_background_arrived<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        self.background_timer = None;
        self.schedule_next_background(ctx);
        let now = ctx.now();
        if self.upstream.jobs_held() as u64 >= ctx.env.limits.max_in_flight {
            let limit = ctx.env.limits.max_in_flight;
            let name = &self.path;
            ctx.limit_reached(|| {
                format!("{name} holds {limit} jobs, most of them other tenants' ({name}.background_rps): the limit limits.max_in_flight was reached")
            });
            return;
        }
        let (_, admission) = self
            .upstream
            .arrive(Owner::Background, false, None, now, ctx.sched);
        count_admission(admission, ctx);
        self.sync_levels(ctx);
    }

    /// Brings the dependency levels up to date: the sums over every
    /// dependency (one, in the single tier), and this one's own.
    #[inline]
    pub(crate) fn sync_levels<S: RowSink>(&self, ctx: &mut Ctx<'_, S>) {
        let up = &self.upstream;
        let (in_service, queued) = (i64::from(up.in_service()), i64::from(up.queued()));
        ctx.sh
            .rec
            .dependency_levels(self.index, ctx.now(), in_service, queued);
    }

    /// The operator reconfigures the dependency (validated with the rest
    /// of the timeline, so its latency distribution compiles): what it
    /// holds is kept.
    pub(crate) fn deploy<S: RowSink>(&mut self, upstream: UpstreamConfig, ctx: &mut Ctx<'_, S>) {
        let Ok(latency) = Dist::new(&upstream.latency) else {
            debug_assert!(
                false,
                "a deployed latency that was validated does not compile"
            );
            return;
        };
        self.upstream.reconfigure(&upstream, latency, ctx.sched);
        let background_changed = upstream.background_rps != self.cfg.background_rps;
        self.cfg = upstream;
        if background_changed {
            self.schedule_next_background(ctx);
        }
    }

    /// The timeline sets one of the dependency's parameters.
    pub(crate) fn set_param<S: RowSink>(&mut self, param: Param, v: f64, ctx: &mut Ctx<'_, S>) {
        let up = &mut self.upstream;
        let u = &mut up.params;
        match param {
            Param::UpstreamLatencyScale => u.latency_scale = v,
            Param::UpstreamQueueLimit => up.queue_limit = v as u32,
            Param::UpstreamCapacity => {
                u.capacity = v as u32;
                up.fill_slots(ctx.sched);
            }
            Param::UpstreamBackgroundRps => {
                u.background_rps = v;
                self.schedule_next_background(ctx);
            }
            Param::UpstreamErrors500 => u.http_500 = v,
            Param::UpstreamErrors503 => u.http_503 = v,
            Param::UpstreamRateLimitRps => u.rate_limit_rps = Some(v),
            Param::LoadRate | Param::ServicePods => {
                debug_assert!(false, "not a dependency's parameter")
            }
        }
    }
}

/// Counts what admission did with an arrival.
#[inline]
fn count_admission<S: RowSink>(a: Admission, ctx: &mut Ctx<'_, S>) {
    match a {
        Admission::Answered(Status::TooManyRequests(_)) => {
            ctx.sh.rec.count(Count::UpstreamRateLimited, 1)
        }
        Admission::Answered(_) => ctx.sh.rec.count(Count::UpstreamRejected, 1),
        Admission::Dropped => ctx.sh.rec.count(Count::UpstreamDropped, 1),
        Admission::Started | Admission::Queued => {}
    }
}

/// Sends `status` back to the attempt's pod `after` from now, plus the
/// leg's delay.
#[inline(always)]
fn respond_after<S: RowSink>(
    att: AttRef,
    edge: u32,
    status: Status,
    after: SimDuration,
    ctx: &mut Ctx<'_, S>,
) {
    // The attempt is read when the answer reaches its pod: loaded now,
    // from a record last touched when it was sent (in a storm, seconds
    // before), while the events due before that one run.
    ctx.sh.reqs.prefetch_att(att);
    let d = ctx.sh.net.back(edge).saturating_add(after);
    ctx.cross(
        d,
        ClientEvent::ResponseReachedPod { edge, att, status }.into(),
    );
}

// ---------------------------------------------------------------------
// Configuration: what users write for this part, its defaults, and its
// check (run by `WorldConfig::validate` under the section's path).
// ---------------------------------------------------------------------

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
