//! The dependency's side of the world: requests crossing to it, its
//! answers crossing back, other tenants' load, and its levels. The
//! dependency's own state machine (slots, queue, load law, admission) is
//! `upstream.rs`; this part routes its events and answers the attempts
//! that called it.

use crate::config::{ConfigError, UpstreamConfig};
use crate::context::Ctx;
use crate::graph::{DependencyNode, stream_name};
use crate::timeline::Param;
use crate::upstream::Upstream;
use crate::world::compile;
use sim_core::dist::Dist;
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
        let retry = ctx.reqs.att(att).is_some_and(|a| a.number > 1);
        ctx.rec.node_dependency_arrived(self.index);
        let up = &mut self.upstream;
        let (job, admission) = up.arrive(Owner::Client(att, edge), retry, deadline, now, ctx.sched);
        if let Admission::Answered(status) = admission {
            up.answered(now, status);
        }
        count_admission(admission, ctx);
        let live = ctx
            .reqs
            .att(att)
            .is_some_and(|a| a.phase == AttemptPhase::InFlight);
        match (admission, job) {
            (Admission::Started | Admission::Queued, Some(job)) => {
                if live {
                    if let Some(a) = ctx.reqs.att_mut(att) {
                        a.job = Some(job);
                    }
                } else if self.upstream.abandon(job, ctx.sched) {
                    // The caller gave up while the request was on the wire.
                    ctx.rec.count(Count::UpstreamCancelled, 1);
                }
            }
            (Admission::Answered(status), _) => {
                ctx.rec
                    .node_dependency_answered(self.index, status == Status::Ok);
                let after = self.upstream.answer_delay(status);
                respond_after(att, edge, status, after, ctx)
            }
            _ => {} // dropped: the caller will time out
        }
        self.sync_levels(ctx);
    }

    fn on_completed<S: RowSink>(&mut self, job: JobRef, ctx: &mut Ctx<'_, S>) {
        let up = &mut self.upstream;
        let done = stale!(up.complete(job, ctx.sched));
        up.answered(ctx.now(), done.status);
        self.report_expired(ctx);
        self.sync_levels(ctx);
        match done.owner {
            Owner::Background => ctx.rec.count(Count::BackgroundCompleted, 1),
            Owner::Client(att, edge) => {
                if done.abandoned {
                    // Finished for nobody: the caller had already given up.
                    ctx.rec.count(Count::UpstreamWasted, 1);
                    ctx.rec.count(Count::LateResponses, 1);
                } else {
                    if done.status == Status::Ok {
                        ctx.rec.count(Count::UpstreamGoodput, 1);
                    }
                    ctx.rec
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
            ctx.rec.count(Count::UpstreamCancelled, 1);
            self.sync_levels(ctx);
        }
    }

    /// Counts queued work dropped for a passed deadline.
    fn report_expired<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let n = std::mem::take(&mut self.upstream.expired);
        if n > 0 {
            ctx.rec.count(Count::UpstreamExpired, n);
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
            ctx.violated(|| {
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
        ctx.rec
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
            ctx.rec.count(Count::UpstreamRateLimited, 1)
        }
        Admission::Answered(_) => ctx.rec.count(Count::UpstreamRejected, 1),
        Admission::Dropped => ctx.rec.count(Count::UpstreamDropped, 1),
        Admission::Started | Admission::Queued => {}
    }
}

/// Sends `status` back to the attempt's pod `after` from now, plus the
/// leg's delay.
#[inline]
fn respond_after<S: RowSink>(
    att: AttRef,
    edge: u32,
    status: Status,
    after: SimDuration,
    ctx: &mut Ctx<'_, S>,
) {
    let d = ctx.net.back(edge).saturating_add(after);
    ctx.cross(
        d,
        ClientEvent::ResponseReachedPod { edge, att, status }.into(),
    );
}
