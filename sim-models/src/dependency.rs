//! The dependency's side of the world: requests crossing to it, its
//! answers crossing back, other tenants' load, and its levels. The
//! dependency's own state machine (slots, queue, load law, admission) is
//! `upstream.rs`; this file routes its events and connects it to the
//! client that called it.

use crate::config::{ConfigError, UpstreamConfig};
use crate::graph::{DependencyNode, Target, stream_name};
use crate::upstream::Upstream;
use crate::world::compile;
use sim_core::queue::EventId;
use sim_core::rng::{RngStreams, SimRng};
use sim_core::sim::Scheduler;
use sim_core::time::SimDuration;

use crate::client::ClientEvent;
use crate::load::exp_gap;
use crate::recorder::{Count, RowSink};
use crate::request::{AttRef, AttemptPhase};
use crate::upstream::{Admission, DependencyEvent, JobRef, Owner, Status};
use crate::world::{Event, World, cross};

/// The dependency as the world holds it: its state machine, and the other
/// tenants' load on it.
pub struct Dependency {
    pub(crate) upstream: Upstream,
    /// Its configuration as deployed.
    pub(crate) cfg: UpstreamConfig,
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
            upstream: Upstream::new(
                index,
                cfg,
                compile(&cfg.latency, &format!("{}.latency", node.path))?,
                stream("upstream/latency"),
                stream("upstream/errors"),
                stream("upstream/shedding"),
            ),
            cfg: cfg.clone(),
            background_timer: None,
            background_rng: stream("upstream/background"),
        })
    }
}

impl<S: RowSink> World<S> {
    /// Routes the dependency's events to their handlers.
    pub(crate) fn on_dependency_event(&mut self, e: DependencyEvent, sched: &mut Scheduler<Event>) {
        match e {
            DependencyEvent::Received { att, edge } => self.on_upstream_received(att, edge, sched),
            DependencyEvent::Completed { dep, job } => self.on_upstream_completed(dep, job, sched),
            DependencyEvent::BackgroundArrived { dep } => self.on_background_arrived(dep, sched),
        }
    }

    pub(crate) fn on_upstream_received(
        &mut self,
        att: AttRef,
        edge: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let deadline = self.propagated_deadline(att);
        let retry = self.reqs.att(att).is_some_and(|a| a.number > 1);
        let Target::Dependency(d) = self.clients[edge as usize].to else {
            debug_assert!(false, "an attempt to a service reached a dependency");
            return;
        };
        self.rec.node_dependency_arrived(d);
        let up = &mut self.dependencies[d as usize].upstream;
        let (job, admission) = up.arrive(Owner::Client(att, edge), retry, deadline, now, sched);
        if let Admission::Answered(status) = admission {
            up.answered(now, status);
        }
        self.count_admission(admission);
        let live = self.att_is(att, AttemptPhase::InFlight);
        match (admission, job) {
            (Admission::Started | Admission::Queued, Some(job)) => {
                if live {
                    if let Some(a) = self.reqs.att_mut(att) {
                        a.job = Some(job);
                    }
                } else if self.dependencies[d as usize].upstream.abandon(job, sched) {
                    // The caller gave up while the request was on the wire.
                    self.rec.count(Count::UpstreamCancelled, 1);
                }
            }
            (Admission::Answered(status), _) => {
                self.rec.node_dependency_answered(d, status == Status::Ok);
                let after = self.dependencies[d as usize].upstream.answer_delay(status);
                self.respond_to_pod_after(att, edge, status, after, sched)
            }
            _ => {} // dropped: the caller will time out
        }
        self.sync_upstream_levels(d, now);
    }

    /// Sends `status` back to the attempt's pod `after` from now, plus the
    /// leg's delay.
    fn respond_to_pod_after(
        &mut self,
        att: AttRef,
        edge: u32,
        status: Status,
        after: SimDuration,
        sched: &mut Scheduler<Event>,
    ) {
        let d = self
            .net
            .delay(&self.clients[edge as usize].back)
            .saturating_add(after);
        cross(
            sched,
            d,
            ClientEvent::ResponseReachedPod { att, status }.into(),
        );
    }

    pub(crate) fn on_upstream_completed(
        &mut self,
        dep: u32,
        job: JobRef,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let up = &mut self.dependencies[dep as usize].upstream;
        let done = stale!(up.complete(job, sched));
        up.answered(now, done.status);
        self.report_expired(dep);
        self.sync_upstream_levels(dep, now);
        match done.owner {
            Owner::Background => self.rec.count(Count::BackgroundCompleted, 1),
            Owner::Client(att, edge) => {
                if done.abandoned {
                    // Finished for nobody: the caller had already given up.
                    self.rec.count(Count::UpstreamWasted, 1);
                    self.rec.count(Count::LateResponses, 1);
                } else {
                    if done.status == Status::Ok {
                        self.rec.count(Count::UpstreamGoodput, 1);
                    }
                    self.rec
                        .node_dependency_answered(dep, done.status == Status::Ok);
                    self.respond_to_pod_after(att, edge, done.status, SimDuration::ZERO, sched);
                }
            }
        }
    }

    /// Counts queued dependency work dropped for a passed deadline.
    pub(crate) fn report_expired(&mut self, dep: u32) {
        let n = std::mem::take(&mut self.dependencies[dep as usize].upstream.expired);
        if n > 0 {
            self.rec.count(Count::UpstreamExpired, n);
        }
    }

    /// (Re)schedules the next background arrival at dependency `dep`.
    pub(crate) fn schedule_next_background(&mut self, dep: u32, sched: &mut Scheduler<Event>) {
        let d = &mut self.dependencies[dep as usize];
        if let Some(t) = d.background_timer.take() {
            sched.cancel(t);
        }
        let rate = d.upstream.params.background_rps;
        if rate > 0.0 {
            let gap = exp_gap(&mut d.background_rng, rate);
            d.background_timer =
                Some(sched.schedule_in(gap, DependencyEvent::BackgroundArrived { dep }.into()));
        }
    }

    pub(crate) fn on_background_arrived(&mut self, dep: u32, sched: &mut Scheduler<Event>) {
        self.dependencies[dep as usize].background_timer = None;
        self.schedule_next_background(dep, sched);
        let now = sched.now();
        if self.dependencies[dep as usize].upstream.jobs_held() as u64
            >= self.cfg.limits.max_in_flight
        {
            let limit = self.cfg.limits.max_in_flight;
            let name = self.topo.dependencies[dep as usize].path.clone();
            self.violated(now, || {
                format!("{name} holds {limit} jobs, most of them other tenants' ({name}.background_rps): the limit limits.max_in_flight was reached")
            });
            return;
        }
        let (_, admission) = self.dependencies[dep as usize].upstream.arrive(
            Owner::Background,
            false,
            None,
            now,
            sched,
        );
        self.count_admission(admission);
        self.sync_upstream_levels(dep, now);
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

    /// Brings the dependency levels up to date: the sums over every
    /// dependency (one, in the single tier), and `dep`'s own.
    pub(crate) fn sync_upstream_levels(&mut self, dep: u32, now: sim_core::time::SimTime) {
        let up = &self.dependencies[dep as usize].upstream;
        let (in_service, queued) = (i64::from(up.in_service()), i64::from(up.queued()));
        self.rec.dependency_levels(dep, now, in_service, queued);
    }
}
