//! The dependency's side of the world: requests crossing to it, its
//! answers crossing back, other tenants' load, and its levels. The
//! dependency's own state machine (slots, queue, load law, admission) is
//! `upstream.rs`; this file routes its events and connects it to the
//! client that called it.

use crate::config::{ConfigError, WorldConfig};
use crate::upstream::Upstream;
use crate::world::compile;
use sim_core::queue::EventId;
use sim_core::rng::{RngStreams, SimRng};
use sim_core::sim::Scheduler;
use sim_core::time::SimDuration;

use crate::client::ClientEvent;
use crate::load::exp_gap;
use crate::recorder::{Count, Level, RowSink};
use crate::request::{AttRef, AttemptPhase};
use crate::upstream::{Admission, DependencyEvent, JobRef, Owner, Status};
use crate::world::{Event, Leg, World, cross};

/// The dependency as the world holds it: its state machine, and the other
/// tenants' load on it.
pub struct Dependency {
    pub(crate) upstream: Upstream,
    pub(crate) background_timer: Option<EventId>,
    pub(crate) background_rng: SimRng,
}

impl Dependency {
    /// The dependency as configured, idle.
    pub(crate) fn new(cfg: &WorldConfig, streams: &RngStreams) -> Result<Self, Vec<ConfigError>> {
        Ok(Dependency {
            upstream: Upstream::new(
                &cfg.upstream,
                compile(&cfg.upstream.latency, "upstream.latency")?,
                streams.stream("upstream/latency"),
                streams.stream("upstream/errors"),
                streams.stream("upstream/shedding"),
            ),
            background_timer: None,
            background_rng: streams.stream("upstream/background"),
        })
    }
}

impl<S: RowSink> World<S> {
    /// Routes the dependency's events to their handlers.
    pub(crate) fn on_dependency_event(&mut self, e: DependencyEvent, sched: &mut Scheduler<Event>) {
        match e {
            DependencyEvent::Received { att } => self.on_upstream_received(att, sched),
            DependencyEvent::Completed { job } => self.on_upstream_completed(job, sched),
            DependencyEvent::BackgroundArrived => self.on_background_arrived(sched),
        }
    }
    pub(crate) fn on_upstream_received(&mut self, att: AttRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let deadline = self.propagated_deadline(att);
        let retry = self.reqs.att(att).is_some_and(|a| a.number > 1);
        let (job, admission) =
            self.dependency
                .upstream
                .arrive(Owner::Client(att), retry, deadline, now, sched);
        if let Admission::Answered(status) = admission {
            self.dependency.upstream.answered(now, status);
        }
        self.count_admission(admission);
        let live = self.att_is(att, AttemptPhase::InFlight);
        match (admission, job) {
            (Admission::Started | Admission::Queued, Some(job)) => {
                if live {
                    if let Some(a) = self.reqs.att_mut(att) {
                        a.job = Some(job);
                    }
                } else if self.dependency.upstream.abandon(job, sched) {
                    // The caller gave up while the request was on the wire.
                    self.rec.count(Count::UpstreamCancelled, 1);
                }
            }
            (Admission::Answered(status), _) => {
                let after = self.dependency.upstream.answer_delay(status);
                self.respond_to_pod_after(att, status, after, sched)
            }
            _ => {} // dropped: the caller will time out
        }
        self.sync_upstream_levels(now);
    }
    fn respond_to_pod(&mut self, att: AttRef, status: Status, sched: &mut Scheduler<Event>) {
        self.respond_to_pod_after(att, status, SimDuration::ZERO, sched);
    }

    /// Sends `status` back to the attempt's pod `after` from now, plus the
    /// leg's delay.
    fn respond_to_pod_after(
        &mut self,
        att: AttRef,
        status: Status,
        after: SimDuration,
        sched: &mut Scheduler<Event>,
    ) {
        let d = self.net.delay(Leg::UpstreamToPod).saturating_add(after);
        cross(
            sched,
            d,
            ClientEvent::ResponseReachedPod { att, status }.into(),
        );
    }
    pub(crate) fn on_upstream_completed(&mut self, job: JobRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let done = stale!(self.dependency.upstream.complete(job, sched));
        self.dependency.upstream.answered(now, done.status);
        self.report_expired();
        self.sync_upstream_levels(now);
        match done.owner {
            Owner::Background => self.rec.count(Count::BackgroundCompleted, 1),
            Owner::Client(att) => {
                if done.abandoned {
                    // Finished for nobody: the caller had already given up.
                    self.rec.count(Count::UpstreamWasted, 1);
                    self.rec.count(Count::LateResponses, 1);
                } else {
                    if done.status == Status::Ok {
                        self.rec.count(Count::UpstreamGoodput, 1);
                    }
                    self.respond_to_pod(att, done.status, sched);
                }
            }
        }
    }
    /// Counts queued upstream work dropped for a passed deadline.
    pub(crate) fn report_expired(&mut self) {
        let n = std::mem::take(&mut self.dependency.upstream.expired);
        if n > 0 {
            self.rec.count(Count::UpstreamExpired, n);
        }
    }
    /// (Re)schedules the next background arrival at the upstream.
    pub(crate) fn schedule_next_background(&mut self, sched: &mut Scheduler<Event>) {
        if let Some(t) = self.dependency.background_timer.take() {
            sched.cancel(t);
        }
        let rate = self.dependency.upstream.params.background_rps;
        if rate > 0.0 {
            let gap = exp_gap(&mut self.dependency.background_rng, rate);
            self.dependency.background_timer =
                Some(sched.schedule_in(gap, DependencyEvent::BackgroundArrived.into()));
        }
    }
    pub(crate) fn on_background_arrived(&mut self, sched: &mut Scheduler<Event>) {
        self.dependency.background_timer = None;
        self.schedule_next_background(sched);
        let now = sched.now();
        if self.dependency.upstream.jobs_held() as u64 >= self.cfg.limits.max_in_flight {
            let limit = self.cfg.limits.max_in_flight;
            self.violated(now, || {
                format!("the upstream holds {limit} jobs, most of them other tenants' (upstream.background_rps): the limit limits.max_in_flight was reached")
            });
            return;
        }
        let (_, admission) =
            self.dependency
                .upstream
                .arrive(Owner::Background, false, None, now, sched);
        self.count_admission(admission);
        self.sync_upstream_levels(now);
    }
    pub(crate) fn count_admission(&mut self, a: Admission) {
        match a {
            Admission::Answered(crate::upstream::Status::TooManyRequests(_)) => {
                self.rec.count(Count::UpstreamRateLimited, 1)
            }
            Admission::Answered(_) => self.rec.count(Count::UpstreamRejected, 1),
            Admission::Dropped => self.rec.count(Count::UpstreamDropped, 1),
            Admission::Started | Admission::Queued => {}
        }
    }
    pub(crate) fn sync_upstream_levels(&mut self, now: sim_core::time::SimTime) {
        self.rec.level(
            Level::UpstreamInService,
            now,
            i64::from(self.dependency.upstream.in_service()),
        );
        self.rec.level(
            Level::UpstreamQueued,
            now,
            i64::from(self.dependency.upstream.queued()),
        );
    }
}
