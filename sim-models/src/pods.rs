//! A service's pods: workers, cores for the service's own work, health
//! probes and restarts, and the balancer in front of them.
//!
//! A pod runs each request on a worker for the whole of it (its own work,
//! every call, attempt and wait), as a goroutine or a servlet thread does. With bounded
//! workers, requests queue for one. A liveness probe every period fails
//! when the pod is saturated; after enough consecutive failures the pod
//! restarts: every request on it fails with `pod_restarted`, it leaves
//! rotation for the restart time, and comes back with empty pools (its
//! connections are the context's `Links`).
//!
//! What a request does on its pod (its steps of calls, its end) is in
//! `calls.rs`, on the same part.

use crate::autoscaler::{
    Autoscaler, AutoscalingSpec, METRICS, Metric, PodReading, PodStatus, Shutdown,
};
use crate::config::{ClientConfig, ConfigError, PoolConfig, Problems, secs};
use crate::context::{Ask, Ctx};
use crate::graph::{ServiceNode, Topology, stream_name};
use crate::lb::Balancer;
use crate::outlier::{Change, Ejection, OutlierDetector, OutlierSpec};
use crate::world::compile_opt;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use sim_core::dist::Dist;
use sim_core::dist::DistSpec;
use sim_core::waitline::{WaitLine, Waiting};

use sim_core::rng::{RngStreams, SimRng};
use sim_core::time::{SimDuration, SimTime};

use crate::outcome::Reason;
use crate::pool::Waiter;
use crate::recorder::{Count, Level, RowSink, WorldEvent};
use crate::request::{AttemptPhase, Phase, ReqRef, Requests};

crate::part_events! {
    /// What happens to a service's pods.
    pub enum ServiceEvent {
        /// A request crossed the network to its pod.
        RequestReachedPod {
            /// The service.
            service: u32,
            /// The request.
            req: ReqRef,
            /// Which of its dispatches this is: a request the gateway sends
            /// again while an earlier dispatch is still on the wire (its pod
            /// went down in the same instant) must not arrive twice.
            dispatch: u32,
        },
        /// A request's own work on its core is done.
        WorkDone {
            /// The service.
            service: u32,
            /// The request.
            req: ReqRef,
        },
        /// The deadline a request's caller propagated passed.
        RequestDeadlinePassed {
            /// The request.
            req: ReqRef,
        },
        /// Time to probe a pod's health.
        HealthProbeDue {
            /// The service.
            service: u32,
            /// The pod.
            pod: u32,
        },
        /// A restarted pod is back in rotation.
        PodCameBack {
            /// The service.
            service: u32,
            /// The pod.
            pod: u32,
            /// Its incarnation when it went down.
            epoch: u32,
        },
        /// Time for the outlier detector's sweep.
        OutlierSweepDue {
            /// The service.
            service: u32,
        },
        /// Time for the autoscaler to sample its metric on every pod.
        AutoscalerSampleDue {
            /// The service.
            service: u32,
        },
        /// Time for the autoscaler's pass.
        AutoscalerPassDue {
            /// The service.
            service: u32,
        },
        /// A pod the autoscaler removed is done draining (it holds
        /// nothing, or its grace ran out).
        PodTerminated {
            /// The service.
            service: u32,
            /// The pod.
            pod: u32,
            /// Its incarnation when it began draining.
            epoch: u32,
        },
        /// A removed pod's preStop hook is over: it drains now.
        PreStopDone {
            /// The service.
            service: u32,
            /// The pod.
            pod: u32,
            /// Its incarnation when it was removed.
            epoch: u32,
        },
        /// A change to a pod's place in rotation reached the balancer,
        /// `endpoint_lag` after it was made.
        EndpointsUpdated {
            /// The service.
            service: u32,
            /// The pod.
            pod: u32,
            /// Whether it is now in rotation.
            up: bool,
        },
    }
}

/// Whether a pod takes traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodState {
    /// In rotation.
    Up,
    /// Restarting: back after the restart time.
    Restarting,
    /// Killed by the timeline: back only when restarted.
    Killed,
}

/// One pod: what runs on it. (Its connections, and the life they belong
/// to, are the context's `Links`.)
#[derive(Clone, Debug)]
pub struct Pod {
    /// Whether it takes traffic.
    pub state: PodState,
    workers: Option<u32>,
    worker_queue_limit: u32,
    cores: Option<u32>,
    /// Cores busy with requests' own work.
    pub busy_cores: u32,
    /// Requests waiting for a core.
    pub core_queue: WaitLine<ReqRef>,
    /// Workers busy.
    pub busy: u32,
    /// Requests waiting for a worker, with when they started waiting.
    pub worker_queue: WaitLine<(ReqRef, SimTime)>,
    /// Consecutive failed probes.
    pub probe_failures: u32,
    /// In rotation as far as readiness goes (an up pod failing its
    /// readiness probes is not).
    pub ready: bool,
    /// Share of requests it answers 500 at once (the timeline's
    /// `pod_fault`: a pod gone bad on its own, its node, its disk, its
    /// configuration). Outlives restarts: the fault is where it runs.
    pub errors: f64,
    /// Removed by the autoscaler and draining: out of rotation, finishing
    /// what it holds.
    pub draining: bool,
    /// Removed and still in its preStop hook: serving what reaches it,
    /// not yet draining to terminate.
    pub stopping: bool,
    /// Removed, and its server closed its listener on SIGTERM
    /// (`shutdown: close`): it refuses whatever reaches it.
    pub closed: bool,
    /// Removed by the autoscaler and gone: its place waits for a pod the
    /// autoscaler adds.
    pub removed: bool,
    /// Added by the autoscaler and not yet started: Kubernetes'
    /// `Pending`, for the autoscaler.
    pub pending: bool,
    /// When it was created (`None`: before the run).
    pub created: Option<SimTime>,
    /// When it last became ready or stopped being ready (its readiness
    /// condition's last transition, for the autoscaler).
    pub ready_changed: SimTime,
    /// Requests that reached it since the autoscaler's last sample.
    pub arrived: u32,
    /// Whether the autoscaler's last sample was taken on it (so the
    /// requests counted since span a whole sample period).
    pub sampled: bool,
    /// The autoscaler's samples since its last pass.
    pub samples: Samples,
}

/// A pod's samples since the autoscaler's last pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct Samples {
    /// Each metric's sum, indexed by [`Metric`]: the gauges' values at
    /// each sample, the requests that reached the pod over each whole
    /// sample period.
    pub sums: [f64; METRICS],
    /// Samples taken (of the gauges).
    pub taken: u32,
    /// Whole sample periods counted (of `requests`): one a pod joined
    /// or came back within is left out, as it would read low.
    pub periods: u32,
}

impl Pod {
    /// A fresh pod in rotation.
    pub fn new(cfg: &ServiceConfig) -> Self {
        Pod {
            state: PodState::Up,
            workers: cfg.workers,
            worker_queue_limit: cfg.worker_queue,
            cores: cfg.cores,
            busy_cores: 0,
            core_queue: WaitLine::new(),
            busy: 0,
            worker_queue: WaitLine::new(),
            probe_failures: 0,
            ready: true,
            errors: 0.0,
            draining: false,
            stopping: false,
            closed: false,
            removed: false,
            pending: false,
            created: None,
            ready_changed: SimTime::ZERO,
            arrived: 0,
            sampled: true,
            samples: Samples::default(),
        }
    }

    /// A pod created at `now` during the run: its readiness starts then,
    /// and its first sample period is not a whole one.
    fn created_at(cfg: &ServiceConfig, now: SimTime) -> Self {
        Pod {
            created: Some(now),
            ready_changed: now,
            sampled: false,
            ..Pod::new(cfg)
        }
    }

    /// It is up, ready: started at last if it was pending.
    fn came_up(&mut self, now: SimTime) {
        self.pending = false;
        self.ready_changed = now;
    }

    /// What the autoscaler's `groupPods` knows of it.
    fn status(&self) -> PodStatus {
        PodStatus {
            pending: self.pending,
            ready: self.state == PodState::Up && self.ready,
            created: self.created,
            ready_changed: self.ready_changed,
        }
    }

    /// Whether it counts among the service's replicas: neither removed by
    /// the autoscaler nor draining, nor killed (a restarting or starting
    /// pod counts).
    pub fn is_replica(&self) -> bool {
        !self.removed && !self.draining && self.state != PodState::Killed
    }

    fn has_free_core(&self) -> bool {
        self.cores.is_none_or(|n| self.busy_cores < n)
    }

    fn has_free_worker(&self) -> bool {
        self.workers.is_none_or(|n| self.busy < n)
    }
}

/// A request in a worker line is live while it still waits there.
pub(crate) fn worker_waiter_is_live(reqs: &Requests) -> impl Fn(&(ReqRef, SimTime)) -> bool + '_ {
    |&(r, _)| {
        reqs.get(r)
            .is_some_and(|q| !q.service_done && q.phase == Phase::WaitingWorker)
    }
}

/// A request in a core line is live while it still waits there.
pub(crate) fn core_waiter_is_live(reqs: &Requests) -> impl Fn(&ReqRef) -> bool + '_ {
    |&r| {
        reqs.get(r)
            .is_some_and(|q| !q.service_done && q.phase == Phase::WaitingCore)
    }
}

/// A pool's waiters as its line sees them: live while the attempt still
/// waits, on that incarnation of the pod; loaded ahead of their turn (in
/// a storm an attempt waits up to its timeout, long out of cache).
pub(crate) struct PoolWaiters<'a> {
    pub(crate) reqs: &'a Requests,
    pub(crate) pod: u32,
    pub(crate) epoch: u32,
}

impl Waiting<Waiter> for PoolWaiters<'_> {
    #[inline]
    fn is_live(&mut self, w: &Waiter) -> bool {
        self.reqs.att(w.att).is_some_and(|a| {
            a.phase == AttemptPhase::WaitingPool && a.pod == self.pod && a.pod_epoch == self.epoch
        })
    }

    #[inline]
    fn prefetch(&self, w: &Waiter) {
        self.reqs.prefetch_att(w.att);
    }
}

/// The autoscaler samples its metric fifteen times a pass.
fn sample_period(sync: SimDuration) -> SimDuration {
    SimDuration::from_nanos(sync.as_nanos() / 15)
}

/// A service: its pods and the balancer in front of them.
pub struct Service {
    /// Its index among the services.
    pub(crate) index: u32,
    pub(crate) pods: Vec<Pod>,
    pub(crate) lb: Balancer,
    /// Its configuration (the timeline's pod count changes are applied
    /// to the pods, not here).
    pub(crate) cfg: ServiceConfig,
    /// Its own work per request, compiled.
    pub(crate) work: Option<Dist>,
    pub(crate) work_rng: SimRng,
    /// Draws for calls made on a share of requests.
    pub(crate) call_rng: SimRng,
    /// Its calls, step by step: each step's calls in `calls` (from, to)
    /// and the answers it needs; kept flat beside the topology so a
    /// request's steps read a few words, not the edges' configurations.
    pub(crate) steps: Vec<StepPlan>,
    /// Every step's calls: the edge and the share of requests making it.
    pub(crate) calls: Vec<(u32, f64)>,
    /// Whether its pods are the ones the pod levels count (the entry
    /// service's: the single tier's only service).
    counted: bool,
    /// Its outlier detection, if configured.
    pub(crate) outlier: Option<OutlierDetector>,
    /// Draws for pods answering a share of requests with errors.
    fault_rng: SimRng,
    /// Sweeps' changes, kept to reuse the space.
    changes: Vec<Change>,
    /// Its autoscaler, if configured.
    pub(crate) autoscaler: Option<Autoscaler>,
    /// Pods counted as replicas ([`Pod::is_replica`]): the count the
    /// autoscaler scales from, brought up to date after each change
    /// ([`Service::sync_replicas`]).
    replicas: u32,
    /// The autoscaler's readings, one list a metric, kept to reuse the
    /// space.
    readings: Vec<Vec<PodReading>>,
}

/// One step of a service's calls, as [`Service::steps`] holds it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StepPlan {
    /// Its calls in [`Service::calls`].
    pub(crate) from: u32,
    pub(crate) to: u32,
    /// Answers that complete it.
    pub(crate) wait_for: u32,
}

impl Service {
    /// The service `index` as configured, every pod up.
    pub(crate) fn new(
        index: u32,
        node: &ServiceNode,
        topo: &Topology,
        streams: &RngStreams,
    ) -> Result<Self, Vec<ConfigError>> {
        let cfg = &node.cfg;
        let mut calls = Vec::new();
        let mut steps = Vec::new();
        for st in &node.steps {
            let from = calls.len() as u32;
            calls.extend(
                st.edges
                    .iter()
                    .map(|&e| (e, topo.edges[e as usize].probability)),
            );
            steps.push(StepPlan {
                from,
                to: calls.len() as u32,
                wait_for: st.wait_for,
            });
        }
        let mut lb = Balancer::new(
            cfg.balancer,
            cfg.pods,
            streams.stream(stream_name("balancer", &node.suffix).as_str()),
        );
        if let Some(o) = &cfg.outlier_detection {
            lb.set_panic_threshold(o.healthy_panic_threshold);
        }
        Ok(Service {
            index,
            steps,
            calls,
            pods: (0..cfg.pods).map(|_| Pod::new(cfg)).collect(),
            lb,
            work: compile_opt(&cfg.work, &format!("{}.work", node.path))?,
            work_rng: streams.stream(stream_name("service/work", &node.suffix).as_str()),
            call_rng: streams.stream(stream_name("service/calls", &node.suffix).as_str()),
            outlier: cfg.outlier_detection.as_ref().map(|o| {
                OutlierDetector::new(
                    o,
                    cfg.pods,
                    streams.stream(stream_name("service/outlier", &node.suffix).as_str()),
                )
            }),
            fault_rng: streams.stream(stream_name("service/faults", &node.suffix).as_str()),
            changes: Vec::new(),
            autoscaler: cfg.autoscaling.as_ref().map(Autoscaler::new),
            replicas: cfg.pods,
            readings: Vec::new(),
            cfg: cfg.clone(),
            counted: index == topo.entry,
        })
    }

    /// Routes the pods' events to their handlers (the world routes
    /// `RequestDeadlinePassed` and `HealthProbeDue`, which reach past the
    /// service).
    #[inline]
    pub(crate) fn on_event<S: RowSink>(&mut self, e: ServiceEvent, ctx: &mut Ctx<'_, S>) {
        match e {
            ServiceEvent::RequestReachedPod { req, dispatch, .. } => {
                self.on_request_reached_pod(req, dispatch, ctx)
            }
            ServiceEvent::WorkDone { req, .. } => self.on_work_done(req, ctx),
            ServiceEvent::PodCameBack { pod, epoch, .. } => self.on_pod_came_back(pod, epoch, ctx),
            ServiceEvent::OutlierSweepDue { .. } => self.on_outlier_sweep(ctx),
            ServiceEvent::AutoscalerSampleDue { .. } => self.on_autoscaler_sample(ctx),
            ServiceEvent::AutoscalerPassDue { .. } => self.on_autoscaler_pass(ctx),
            ServiceEvent::EndpointsUpdated { pod, up, .. } => self.lb.set_up(pod, up),
            ServiceEvent::PreStopDone { pod, epoch, .. } => self.pre_stop_done(pod, epoch, ctx),
            ServiceEvent::RequestDeadlinePassed { .. }
            | ServiceEvent::HealthProbeDue { .. }
            | ServiceEvent::PodTerminated { .. } => {
                debug_assert!(false, "routed by the world");
            }
        }
    }

    /// The gateway places `req` on a pod the balancer picks (again, for a
    /// gateway retry): a fresh start there. False when no pod is in
    /// rotation.
    pub(crate) fn place<S: RowSink>(&mut self, req: ReqRef, ctx: &mut Ctx<'_, S>) -> bool {
        let now = ctx.now();
        let Some(pod) = self.lb.pick() else {
            return false;
        };
        let epoch = ctx.sh.links.epoch(self.index, pod);
        let Some(q) = ctx.sh.reqs.get_mut(req) else {
            return true; // stale: nothing to place
        };
        q.pod = pod;
        q.pod_epoch = epoch;
        q.dispatches += 1;
        q.service_done = false;
        q.phase = Phase::Queued;
        q.step = 0;
        q.degraded = false;
        q.reached = None;
        self.lb.outstanding_changed(pod, 1);
        ctx.sh.rec.level_add(Level::ServiceInFlight, now, 1);
        let dispatch = q.dispatches;
        let d = ctx.sh.net.gateway_to_pod();
        ctx.cross(
            d,
            ServiceEvent::RequestReachedPod {
                service: self.index,
                req,
                dispatch,
            }
            .into(),
        );
        true
    }

    /// A request is on its pod: it takes a worker or queues for one.
    #[inline]
    pub(crate) fn on_request_reached_pod<S: RowSink>(
        &mut self,
        req: ReqRef,
        dispatch: u32,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        let q = stale!(ctx.sh.reqs.get_mut(req));
        // Done with, or an earlier dispatch overtaken by a later one.
        if q.service_done || q.dispatches != dispatch {
            return;
        }
        q.reached = Some(now);
        let (pod, epoch) = (q.pod, q.pod_epoch);
        ctx.sh.rec.node_service_arrived(self.index, now);
        let p = &mut self.pods[pod as usize];
        let up =
            ctx.sh.links.epoch(self.index, pod) == epoch && p.state == PodState::Up && !p.closed;
        // Counted for the autoscaler's `requests`, answered or not.
        p.arrived = p.arrived.wrapping_add(u32::from(up));
        let refused = if !up {
            // The pod went down while the request was on the wire, or
            // its server no longer listens.
            Reason::PodRestarted
        } else if p.errors > 0.0 && Self::fails_now(p.errors, &mut self.fault_rng) {
            // A pod gone bad answers at once, before any worker.
            Reason::ServerError
        } else if p.has_free_worker() {
            p.busy += 1;
            self.begin_request(req, ctx);
            return;
        } else if (p.worker_queue.len() as u32) < p.worker_queue_limit {
            if let Some(q) = ctx.sh.reqs.get_mut(req) {
                q.phase = Phase::WaitingWorker;
            }
            p.worker_queue
                .push((req, now), worker_waiter_is_live(&ctx.sh.reqs));
            return;
        } else {
            Reason::PodOverloaded
        };
        ctx.ask(Ask::Complete {
            req,
            reason: refused,
        });
    }

    /// The request holds a worker: its own work first (on a core, in line
    /// for one if the pod's are busy), then its calls.
    pub(crate) fn begin_request<S: RowSink>(&mut self, req: ReqRef, ctx: &mut Ctx<'_, S>) {
        let q = stale!(ctx.sh.reqs.get_mut(req));
        q.has_worker = true;
        let pod = q.pod;
        if self.work.is_none() {
            // Out of the worker line whichever way it came: a request whose
            // steps make no call is answered by an ask routed after this,
            // and must not be taken then for one still waiting in line.
            q.phase = Phase::Calling;
            self.run_step(req, 0, ctx);
            return;
        }
        let p = &mut self.pods[pod as usize];
        if p.has_free_core() {
            self.start_work(req, ctx);
        } else {
            q.phase = Phase::WaitingCore;
            p.core_queue.push(req, core_waiter_is_live(&ctx.sh.reqs));
        }
    }

    /// The request takes a core for its own work.
    fn start_work<S: RowSink>(&mut self, req: ReqRef, ctx: &mut Ctx<'_, S>) {
        let q = stale!(ctx.sh.reqs.get_mut(req));
        self.pods[q.pod as usize].busy_cores += 1;
        let d = match &self.work {
            Some(w) => w.sample(&mut self.work_rng),
            None => SimDuration::ZERO,
        };
        q.has_core = true;
        q.phase = Phase::Working;
        q.work_timer = Some(
            ctx.sched.schedule_in(
                d,
                ServiceEvent::WorkDone {
                    service: self.index,
                    req,
                }
                .into(),
            ),
        );
    }

    /// The request's own work is done: its core goes to the next in line,
    /// and its calls start.
    fn on_work_done<S: RowSink>(&mut self, req: ReqRef, ctx: &mut Ctx<'_, S>) {
        let q = stale!(ctx.sh.reqs.get_mut(req));
        if q.phase != Phase::Working {
            return;
        }
        q.work_timer = None;
        q.has_core = false;
        let pod = q.pod;
        self.free_core(pod, ctx);
        self.run_step(req, 0, ctx);
    }

    /// A core of `pod` is free: the next request in its line takes it.
    pub(crate) fn free_core<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        let p = &mut self.pods[pod as usize];
        p.busy_cores -= 1;
        if let Some(next) = p.core_queue.pop(core_waiter_is_live(&ctx.sh.reqs)) {
            self.start_work(next, ctx);
        }
    }

    /// A request's call is over on `pod`: its worker takes the next
    /// request in line.
    #[inline]
    pub(crate) fn free_worker<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        let p = &mut self.pods[pod as usize];
        p.busy -= 1;
        if p.state != PodState::Up {
            return;
        }
        let next = p.worker_queue.pop(worker_waiter_is_live(&ctx.sh.reqs));
        if let Some((next, _)) = next {
            self.pods[pod as usize].busy += 1;
            self.begin_request(next, ctx);
        } else if p.busy == 0 && p.draining && !p.stopping {
            // Tested in this order: the count is at hand, and rarely 0
            // under load.
            self.drained(pod, ctx);
        }
    }

    /// Schedules `pod`'s first health probe, staggered across pods so they
    /// do not all fire at once.
    pub(crate) fn schedule_first_probe<S: RowSink>(&self, pod: u32, ctx: &mut Ctx<'_, S>) {
        if let Some(h) = &self.cfg.health {
            let n = self.pods.len().max(1) as u64;
            let offset = h.period.as_nanos() / n * (u64::from(pod) % n + 1);
            ctx.sched.schedule_in(
                SimDuration::from_nanos(offset),
                ServiceEvent::HealthProbeDue {
                    service: self.index,
                    pod,
                }
                .into(),
            );
        }
    }

    /// A probe fails when the pod's oldest pool waiter or oldest request
    /// queued for a worker has waited longer than the probe timeout. True
    /// when the pod must restart (the world takes it down: the requests
    /// on it reach past the service).
    pub(crate) fn on_health_probe<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) -> bool {
        let Some(h) = self.cfg.health.clone() else {
            return false; // no health checks
        };
        let now = ctx.now();
        ctx.sched.schedule_in(
            h.period,
            ServiceEvent::HealthProbeDue {
                service: self.index,
                pod,
            }
            .into(),
        );
        let p = &mut self.pods[pod as usize];
        if p.state != PodState::Up || p.draining {
            return false;
        }
        let links = ctx.sh.links.pod(self.index, pod);
        let epoch = links.epoch;
        let reqs = &ctx.sh.reqs;
        let pool_wait = links
            .pools
            .iter_mut()
            .filter_map(|pool| pool.oldest_wait(now, PoolWaiters { reqs, pod, epoch }))
            .max();
        let worker_wait = p
            .worker_queue
            .front(worker_waiter_is_live(reqs))
            .map(|&(_, since)| now.saturating_since(since));
        let saturated =
            pool_wait.is_some_and(|w| w > h.timeout) || worker_wait.is_some_and(|w| w > h.timeout);
        if saturated {
            ctx.sh.rec.count(Count::ProbesFailed, 1);
            p.probe_failures += 1;
            let failures = p.probe_failures;
            if failures >= h.failure_threshold {
                return true;
            } else if h.readiness_threshold.is_some_and(|t| failures >= t) {
                self.set_ready(pod, false, ctx);
            }
        } else {
            p.probe_failures = 0;
            self.set_ready(pod, true, ctx);
        }
        false
    }

    /// `pod` enters or leaves rotation as far as the balancer knows: at
    /// once, or `endpoint_lag` later. The lag is one duration for the
    /// service's run, so the changes reach the balancer in the order they
    /// were made.
    fn rotate<S: RowSink>(&mut self, pod: u32, up: bool, ctx: &mut Ctx<'_, S>) {
        match self.cfg.endpoint_lag {
            None => self.lb.set_up(pod, up),
            Some(lag) => {
                ctx.sched.schedule_in(
                    lag,
                    ServiceEvent::EndpointsUpdated {
                        service: self.index,
                        pod,
                        up,
                    }
                    .into(),
                );
            }
        }
    }

    /// Readiness: an up pod that fails its readiness probes leaves rotation
    /// but keeps what it holds; the first passing probe brings it back.
    fn set_ready<S: RowSink>(&mut self, pod: u32, ready: bool, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let p = &mut self.pods[pod as usize];
        if p.state != PodState::Up || p.ready == ready {
            return;
        }
        p.ready = ready;
        p.ready_changed = now;
        self.rotate(pod, ready, ctx);
        let d = if ready { 1 } else { -1 };
        if self.counted {
            ctx.sh.rec.level_add(Level::PodsUp, now, d);
            ctx.sh.rec.level_add(Level::PodsUnready, now, -d);
        }
        let detail = ctx.pod_name(self.index, pod);
        ctx.sh.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: if ready { "pod_ready" } else { "pod_unready" },
            detail,
        });
    }

    /// Takes a pod out, first half: it leaves rotation and starts a new
    /// life (its pools empty); returns the requests it held, which the
    /// world fails (`pod_restarted`; the gateway may send them elsewhere)
    /// before [`Service::went_down`].
    pub(crate) fn go_down<S: RowSink>(
        &mut self,
        pod: u32,
        state: PodState,
        ctx: &mut Ctx<'_, S>,
    ) -> Vec<ReqRef> {
        let now = ctx.now();
        let p = &mut self.pods[pod as usize];
        let was_up = p.state == PodState::Up;
        let was_ready = p.ready;
        let old_epoch = ctx.sh.links.epoch(self.index, pod);
        // A new life first, so nothing failed below touches the old pools
        // or lands back on this pod.
        ctx.sh.links.restart(self.index, pod);
        p.state = state;
        p.busy = 0;
        p.busy_cores = 0;
        p.worker_queue.clear();
        p.core_queue.clear();
        p.probe_failures = 0;
        p.ready = true;
        p.ready_changed = now;
        ctx.sync_pools(self.index, pod);
        if was_up {
            self.rotate(pod, false, ctx);
            if self.counted {
                let from = if was_ready {
                    Level::PodsUp
                } else {
                    Level::PodsUnready
                };
                ctx.sh.rec.level_add(from, now, -1);
                ctx.sh.rec.level_add(Level::PodsDown, now, 1);
            }
        }
        let service = self.index;
        ctx.sh
            .reqs
            .refs()
            .into_iter()
            .filter(|&r| {
                ctx.sh.reqs.get(r).is_some_and(|q| {
                    q.service == service
                        && q.pod == pod
                        && q.pod_epoch == old_epoch
                        && !q.service_done
                })
            })
            .collect()
    }

    /// Takes a pod out, second half: counted, shown, and a restarting pod
    /// scheduled to come back.
    pub(crate) fn went_down<S: RowSink>(
        &mut self,
        pod: u32,
        state: PodState,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        ctx.sh.rec.count(Count::PodRestarts, 1);
        let why = match state {
            PodState::Killed => "killed",
            _ => "restarting",
        };
        let name = ctx.pod_name(self.index, pod);
        ctx.sh.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_down",
            detail: format!("{name} {why}"),
        });
        if state == PodState::Restarting {
            let t = self.restart_time();
            let epoch = ctx.sh.links.epoch(self.index, pod);
            ctx.sched.schedule_in(
                t,
                ServiceEvent::PodCameBack {
                    service: self.index,
                    pod,
                    epoch,
                }
                .into(),
            );
        }
    }

    /// Time out of rotation after a restart (the health config's, or 30 s).
    fn restart_time(&self) -> SimDuration {
        self.cfg
            .health
            .as_ref()
            .map_or(SimDuration::from_secs(30), |h| h.restart_time)
    }

    /// A restarted pod is back in rotation, empty.
    fn on_pod_came_back<S: RowSink>(&mut self, pod: u32, epoch: u32, ctx: &mut Ctx<'_, S>) {
        let p = &mut self.pods[pod as usize];
        if ctx.sh.links.epoch(self.index, pod) != epoch || p.state != PodState::Restarting {
            return;
        }
        let now = ctx.now();
        p.state = PodState::Up;
        p.came_up(now);
        self.rotate(pod, true, ctx);
        if self.counted {
            ctx.sh.rec.level_add(Level::PodsUp, now, 1);
            ctx.sh.rec.level_add(Level::PodsDown, now, -1);
        }
        let name = ctx.pod_name(self.index, pod);
        ctx.sh.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_up",
            detail: format!("{name} back in rotation"),
        });
    }

    /// Brings a killed or restarting pod back now.
    pub(crate) fn bring_pod_up<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        let p = &mut self.pods[pod as usize];
        if p.state == PodState::Up {
            return;
        }
        let now = ctx.now();
        p.state = PodState::Up;
        p.came_up(now);
        self.rotate(pod, true, ctx);
        if self.counted {
            ctx.sh.rec.level_add(Level::PodsUp, now, 1);
            ctx.sh.rec.level_add(Level::PodsDown, now, -1);
        }
    }

    /// A pod the timeline adds, in rotation, with fresh connections and
    /// its first probe scheduled.
    pub(crate) fn add_pod<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let pod = self.pods.len() as u32;
        self.pods.push(Pod::created_at(&self.cfg, ctx.now()));
        ctx.sh.links.add_pod(self.index, ctx.env);
        self.lb.add_pod(pod);
        if self.cfg.endpoint_lag.is_some() {
            // The balancer hears of it a lag later.
            self.lb.set_up(pod, false);
            self.rotate(pod, true, ctx);
        }
        if let Some(d) = self.outlier.as_mut() {
            d.add_pod();
        }
        if self.counted {
            ctx.sh.rec.level_add(Level::PodsUp, ctx.now(), 1);
        }
        self.schedule_first_probe(pod, ctx);
    }

    /// Pods held, down ones included.
    pub(crate) fn pod_count(&self) -> u32 {
        self.pods.len() as u32
    }

    /// Whether `pod` is draining or removed by the autoscaler: the
    /// timeline's pod steps leave it be.
    pub(crate) fn is_leaving(&self, pod: u32) -> bool {
        self.pods
            .get(pod as usize)
            .is_some_and(|p| p.removed || p.draining)
    }

    /// Schedules the autoscaler's first sample and first pass.
    pub(crate) fn schedule_autoscaler<S: RowSink>(&self, ctx: &mut Ctx<'_, S>) {
        if let Some(a) = &self.autoscaler {
            let period = a.spec().sync_period;
            let service = self.index;
            ctx.sched.schedule_in(
                sample_period(period),
                ServiceEvent::AutoscalerSampleDue { service }.into(),
            );
            ctx.sched
                .schedule_in(period, ServiceEvent::AutoscalerPassDue { service }.into());
        }
    }

    /// Samples every metric on every pod running (`cold`: fifteen times
    /// a pass, out of the request's way), ready or not: a pod failing
    /// readiness still reports what it holds; one restarting reports
    /// nothing.
    #[cold]
    fn on_autoscaler_sample<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let Some(a) = &self.autoscaler else {
            return;
        };
        let period = a.spec().sync_period;
        for p in &mut self.pods {
            let arrived = std::mem::take(&mut p.arrived);
            if p.state == PodState::Up && !p.draining {
                let s = &mut p.samples;
                s.sums[Metric::Cpu as usize] += f64::from(p.busy_cores);
                s.sums[Metric::Workers as usize] += f64::from(p.busy);
                s.sums[Metric::InFlight as usize] +=
                    f64::from(p.busy) + p.worker_queue.len() as f64;
                s.taken += 1;
                if p.sampled {
                    s.sums[Metric::Requests as usize] += f64::from(arrived);
                    s.periods += 1;
                }
                p.sampled = true;
            } else {
                p.sampled = false;
            }
        }
        ctx.sched.schedule_in(
            sample_period(period),
            ServiceEvent::AutoscalerSampleDue {
                service: self.index,
            }
            .into(),
        );
    }

    /// The autoscaler's pass: every replica's reading of each metric (its
    /// mean over the samples since the last pass, a rate for `requests`,
    /// grouped as the controller groups pods), the controller's count,
    /// and the pods added or removed to reach it.
    #[cold]
    fn on_autoscaler_pass<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let Some(a) = self.autoscaler.as_mut() else {
            return;
        };
        let (now, period) = (ctx.now(), a.spec().sync_period);
        let sample_secs = sample_period(period).as_secs_f64();
        let mut readings = std::mem::take(&mut self.readings);
        readings.resize_with(a.targets().len(), Vec::new);
        readings.iter_mut().for_each(Vec::clear);
        for p in &mut self.pods {
            let samples = std::mem::take(&mut p.samples);
            if !p.is_replica() {
                continue; // gone, or failed: the controller ignores it
            }
            let status = p.status();
            for (m, of_metric) in a.targets().iter().zip(readings.iter_mut()) {
                let capacity = f64::from(match m.metric {
                    Metric::Cpu => p.cores.unwrap_or(1),
                    Metric::Workers => p.workers.unwrap_or(1),
                    Metric::InFlight | Metric::Requests => 1,
                });
                // A gauge's mean; requests over the whole periods counted,
                // a second.
                let (n, per) = match m.metric {
                    Metric::Requests => (samples.periods, sample_secs),
                    _ => (samples.taken, 1.0),
                };
                // A container restarting has no reading, whatever it had.
                let usage = (p.state == PodState::Up && n > 0)
                    .then(|| samples.sums[m.metric as usize] / f64::from(n) / per);
                of_metric.push(a.reading(m.metric, now, &status, usage, capacity));
            }
        }
        let current = self.replicas;
        let desired = a.pass(now, current, &readings);
        self.readings = readings;
        if desired != current {
            let name = match ctx.env.graph {
                true => format!("{}: ", ctx.env.topo.services[self.index as usize].name),
                false => String::new(),
            };
            ctx.sh.rec.sink_mut().event(WorldEvent {
                at: now,
                kind: "autoscaled",
                detail: format!("{name}{current} → {desired} pods"),
            });
        }
        if desired > current {
            for _ in current..desired {
                self.start_replica(ctx);
            }
        } else {
            for _ in desired..current {
                self.remove_replica(ctx);
            }
        }
        self.sync_replicas(ctx);
        ctx.sched.schedule_in(
            period,
            ServiceEvent::AutoscalerPassDue {
                service: self.index,
            }
            .into(),
        );
    }

    /// A pod the autoscaler adds, in the first place a removed pod left
    /// (or a new one): out of rotation until its startup is over.
    fn start_replica<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let startup = self
            .autoscaler
            .as_ref()
            .map_or(SimDuration::ZERO, |a| a.spec().startup);
        let mut fresh = Pod::created_at(&self.cfg, ctx.now());
        fresh.state = PodState::Restarting;
        fresh.pending = true;
        let pod = match self.pods.iter().position(|p| p.removed) {
            Some(i) => {
                // A new life: a comeback still scheduled for the pod that
                // was here (one removed while it restarted) must not bring
                // this one in early. Its balancer entry is out of rotation
                // since it was removed (or will be once the news of it,
                // an `endpoint_lag` on, arrives: until then requests sent
                // here are refused, as the place starts); its probes
                // still run.
                self.pods[i] = fresh;
                ctx.sh.links.restart(self.index, i as u32);
                ctx.sync_pools(self.index, i as u32);
                i as u32
            }
            None => {
                // Every place is filled or draining: a new one, within
                // `limits.max_pods` (checked before the run against twice
                // `max_replicas`, which pods draining long requests while
                // the load swings can outgrow).
                if let Some(held) = self.over_pod_limit(ctx) {
                    let limit = ctx.env.limits.max_pods;
                    let name = ctx.env.topo.services[self.index as usize].name.clone();
                    ctx.limit_reached(|| {
                        format!("{name}'s autoscaler needs a new pod while {held} are held, counted as limits.max_pods counts them, over the limit of {limit} (pods it removed still drain; raise it with limits.max_pods)")
                    });
                    return;
                }
                let pod = self.pods.len() as u32;
                self.pods.push(fresh);
                ctx.sh.links.add_pod(self.index, ctx.env);
                self.lb.add_pod(pod);
                self.lb.set_up(pod, false);
                if let Some(d) = self.outlier.as_mut() {
                    d.add_pod();
                }
                self.schedule_first_probe(pod, ctx);
                pod
            }
        };
        let now = ctx.now();
        ctx.sh.rec.count(Count::PodsAdded, 1);
        if self.counted {
            ctx.sh.rec.level_add(Level::PodsDown, now, 1);
        }
        let epoch = ctx.sh.links.epoch(self.index, pod);
        ctx.sched.schedule_in(
            startup,
            ServiceEvent::PodCameBack {
                service: self.index,
                pod,
                epoch,
            }
            .into(),
        );
    }

    /// The pods the world holds, counted as `limits.max_pods` counts them
    /// (in a graph, each once and once more per call it makes), if one more
    /// of this service's would pass the limit.
    fn over_pod_limit<S: RowSink>(&self, ctx: &Ctx<'_, S>) -> Option<u64> {
        let topo = &ctx.env.topo;
        let weight = |s: usize| match ctx.env.graph {
            true => 1 + topo.services[s].edges.len() as u64,
            false => 1,
        };
        let held: u64 = (ctx.sh.links.all().iter().enumerate())
            .map(|(s, pods)| pods.len() as u64 * weight(s))
            .sum();
        (held + weight(self.index as usize) > u64::from(ctx.env.limits.max_pods)).then_some(held)
    }

    /// The autoscaler removes a replica: a restarting or starting one
    /// first, then one failing readiness, then one in rotation; the newest
    /// (highest index) first among equals, as a ReplicaSet ranks the pods
    /// it deletes. One not in rotation is gone at once; one in rotation
    /// leaves it and drains.
    fn remove_replica<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let rank = |p: &Pod| match (p.state, p.ready) {
            (PodState::Restarting | PodState::Killed, _) => 0,
            (PodState::Up, false) => 1,
            (PodState::Up, true) => 2,
        };
        let Some(pod) = (0..self.pods.len())
            .rev()
            .filter(|&i| self.pods[i].is_replica())
            .min_by_key(|&i| rank(&self.pods[i]))
        else {
            return;
        };
        let now = ctx.now();
        ctx.sh.rec.count(Count::PodsRemoved, 1);
        let p = &mut self.pods[pod];
        if p.state != PodState::Up {
            // Nothing on it: gone now (a starting pod's arrival finds it
            // no longer restarting).
            p.state = PodState::Killed;
            p.removed = true;
            if self.counted {
                ctx.sh.rec.level_add(Level::PodsDown, now, -1);
            }
            return;
        }
        p.draining = true;
        let was_ready = std::mem::replace(&mut p.ready, false);
        let busy = p.busy;
        if was_ready {
            self.rotate(pod as u32, false, ctx);
            if self.counted {
                ctx.sh.rec.level_add(Level::PodsUp, now, -1);
                ctx.sh.rec.level_add(Level::PodsUnready, now, 1);
            }
        }
        let detail = format!("{} draining", ctx.pod_name(self.index, pod as u32));
        ctx.sh.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_draining",
            detail,
        });
        let (full_grace, pre_stop, shutdown) =
            self.autoscaler
                .as_ref()
                .map_or((SimDuration::ZERO, None, Shutdown::Drain), |a| {
                    let spec = a.spec();
                    (spec.termination_grace, spec.pre_stop, spec.shutdown)
                });
        let epoch = ctx.sh.links.epoch(self.index, pod as u32);
        // With no preStop hook its server gets SIGTERM now: holding
        // nothing, or exiting on it, it is gone now. With a hook it takes
        // what still reaches it, so its grace runs whatever it holds now;
        // the hook's end, within the grace, sends SIGTERM.
        let grace = match (pre_stop, busy, shutdown) {
            (None, 0, _) | (None, _, Shutdown::Exit) => SimDuration::ZERO,
            _ => full_grace,
        };
        self.pods[pod].stopping = pre_stop.is_some();
        self.pods[pod].closed = pre_stop.is_none() && shutdown == Shutdown::Close;
        if let Some(hook) = pre_stop.filter(|&h| h < full_grace) {
            ctx.sched.schedule_in(
                hook,
                ServiceEvent::PreStopDone {
                    service: self.index,
                    pod: pod as u32,
                    epoch,
                }
                .into(),
            );
        }
        ctx.sched.schedule_in(
            grace,
            ServiceEvent::PodTerminated {
                service: self.index,
                pod: pod as u32,
                epoch,
            }
            .into(),
        );
    }

    /// Counts the replicas again after a change (the autoscaler's, or the
    /// timeline's kills, restarts and pod counts), the nodes table's level
    /// with them.
    pub(crate) fn sync_replicas<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let n = self.pods.iter().filter(|p| p.is_replica()).count() as u32;
        if n != self.replicas {
            let delta = i64::from(n) - i64::from(self.replicas);
            ctx.sh.rec.node_replicas(self.index, ctx.now(), delta);
            self.replicas = n;
        }
    }

    /// A draining pod's last request is done, or its server exits on
    /// SIGTERM: it terminates now, what it still holds failing.
    #[cold]
    fn drained<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        let epoch = ctx.sh.links.epoch(self.index, pod);
        ctx.sched.schedule_in(
            SimDuration::ZERO,
            ServiceEvent::PodTerminated {
                service: self.index,
                pod,
                epoch,
            }
            .into(),
        );
    }

    /// A removed pod's preStop hook is over: its server gets SIGTERM and,
    /// by `shutdown`, drains (refusing new requests, for `close`) and
    /// terminates once it holds nothing, or exits now (`exit`).
    fn pre_stop_done<S: RowSink>(&mut self, pod: u32, epoch: u32, ctx: &mut Ctx<'_, S>) {
        let shutdown = self
            .autoscaler
            .as_ref()
            .map_or(Shutdown::Drain, |a| a.spec().shutdown);
        let p = &mut self.pods[pod as usize];
        if !p.draining || ctx.sh.links.epoch(self.index, pod) != epoch {
            return;
        }
        p.stopping = false;
        p.closed = shutdown == Shutdown::Close;
        if p.busy == 0 || shutdown == Shutdown::Exit {
            self.drained(pod, ctx);
        }
    }

    /// Whether `pod` is still the draining pod a termination at `epoch`
    /// was scheduled for.
    pub(crate) fn terminates(&self, pod: u32, epoch: u32, ctx: &Ctx<'_, impl RowSink>) -> bool {
        self.pods.get(pod as usize).is_some_and(|p| p.draining)
            && ctx.sh.links.epoch(self.index, pod) == epoch
    }

    /// A drained pod, taken down by the world ([`Service::go_down`], its
    /// leftovers failed), is gone: it leaves every level.
    pub(crate) fn terminated<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        let p = &mut self.pods[pod as usize];
        p.draining = false;
        p.stopping = false;
        p.closed = false;
        p.removed = true;
        let now = ctx.now();
        if self.counted {
            ctx.sh.rec.level_add(Level::PodsDown, now, -1);
        }
        let detail = format!("{} removed", ctx.pod_name(self.index, pod));
        ctx.sh.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_removed",
            detail,
        });
    }

    /// The per-event check of its replicas: the count kept against the
    /// pods counted one by one, and the autoscaler's history bounded.
    pub(crate) fn check_replicas(&self) -> Result<(), String> {
        let counted = self.pods.iter().filter(|p| p.is_replica()).count() as u32;
        if counted != self.replicas {
            return Err(format!(
                "counts {} replicas but holds {counted}",
                self.replicas
            ));
        }
        match &self.autoscaler {
            Some(a) if a.held() as u64 > a.held_bound() => Err(format!(
                "the autoscaler holds {} records, past its bound of {}",
                a.held(),
                a.held_bound()
            )),
            _ => Ok(()),
        }
    }

    /// The per-event check of its outlier detection: the detector's count
    /// of ejected pods against its pods, and the balancer holding out
    /// exactly those.
    pub(crate) fn check_ejections(&self) -> Result<(), String> {
        let Some(d) = &self.outlier else {
            return Ok(());
        };
        if d.pods() != self.pod_count() {
            return Err(format!(
                "outlier detection knows {} pods of {}",
                d.pods(),
                self.pod_count()
            ));
        }
        let held = (0..d.pods()).filter(|&p| d.is_ejected(p)).count() as u32;
        if held != d.ejected() {
            return Err(format!(
                "outlier detection counts {} pods ejected, holds {held}",
                d.ejected()
            ));
        }
        match (0..d.pods()).find(|&p| d.is_ejected(p) != self.lb.is_ejected(p)) {
            Some(p) => Err(format!(
                "pod {p} is {} by outlier detection but {} at the balancer",
                if d.is_ejected(p) {
                    "ejected"
                } else {
                    "not ejected"
                },
                if self.lb.is_ejected(p) {
                    "ejected"
                } else {
                    "not ejected"
                },
            )),
            None => Ok(()),
        }
    }

    /// Whether a pod answering a share `errors` of requests 500 fails
    /// this one: drawn only for a share strictly between none and all, so
    /// no other draw moves. Out of the request's way (`cold`): most pods
    /// are well.
    #[cold]
    fn fails_now(errors: f64, rng: &mut SimRng) -> bool {
        errors >= 1.0 || rng.random::<f64>() < errors
    }

    /// The timeline's `pod_fault`: `pod` answers a share `errors` of
    /// requests with a 500 at once, from now on.
    pub(crate) fn set_pod_errors(&mut self, pod: u32, errors: f64) {
        if let Some(p) = self.pods.get_mut(pod as usize) {
            p.errors = errors;
        }
    }

    /// Schedules the outlier detector's next sweep, an interval from now.
    pub(crate) fn schedule_outlier_sweep<S: RowSink>(&self, ctx: &mut Ctx<'_, S>) {
        if let Some(d) = &self.outlier {
            ctx.sched.schedule_in(
                d.spec().interval,
                ServiceEvent::OutlierSweepDue {
                    service: self.index,
                }
                .into(),
            );
        }
    }

    /// The detector judges an answer `pod` gave (or a caller's timeout
    /// waiting for it): a failure may eject it.
    #[inline]
    pub(crate) fn judge<S: RowSink>(&mut self, pod: u32, failed: bool, ctx: &mut Ctx<'_, S>) {
        let Some(d) = self.outlier.as_mut() else {
            return;
        };
        if let Some(pod) = d.judge(pod, failed, ctx.now()) {
            self.ejected(pod, Ejection::Consecutive, ctx);
        }
    }

    /// The sweep: ejections over end, success rates and failure
    /// percentages eject. Once an
    /// interval (`cold`: kept out of the service's event router, whose
    /// other arms run for every request).
    #[cold]
    fn on_outlier_sweep<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let Some(d) = self.outlier.as_mut() else {
            return;
        };
        let mut changes = std::mem::take(&mut self.changes);
        d.sweep(ctx.now(), &mut changes);
        for &c in &changes {
            match c {
                Change::Eject(pod, why) => self.ejected(pod, why, ctx),
                Change::Return(pod) => {
                    self.lb.set_ejected(pod, false);
                    ctx.sh.rec.node_ejected(self.index, ctx.now(), -1);
                    if self.counted {
                        ctx.sh.rec.level_add(Level::PodsEjected, ctx.now(), -1);
                    }
                    let detail = format!("{} back from ejection", ctx.pod_name(self.index, pod));
                    let at = ctx.now();
                    ctx.sh.rec.sink_mut().event(WorldEvent {
                        at,
                        kind: "pod_returned",
                        detail,
                    });
                }
            }
        }
        changes.clear();
        self.changes = changes;
        self.schedule_outlier_sweep(ctx);
    }

    /// `pod` is ejected: out of rotation, counted and shown.
    #[cold]
    fn ejected<S: RowSink>(&mut self, pod: u32, why: Ejection, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        self.lb.set_ejected(pod, true);
        ctx.sh.rec.count(Count::Ejections, 1);
        ctx.sh.rec.node_ejected(self.index, now, 1);
        if self.counted {
            ctx.sh.rec.level_add(Level::PodsEjected, now, 1);
        }
        let why = match why {
            Ejection::Consecutive => "failures in a row",
            Ejection::SuccessRate => "success rate below the others'",
            Ejection::FailurePercentage => "failure percentage at the threshold",
        };
        let detail = format!("{} ejected: {why}", ctx.pod_name(self.index, pod));
        ctx.sh.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_ejected",
            detail,
        });
    }
}

// ---------------------------------------------------------------------
// Configuration: what users write for this part, its defaults, and its
// check (run by `WorldConfig::validate` under the section's path).
// ---------------------------------------------------------------------

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
    /// Passive health checking in front of the pods, as Envoy's outlier
    /// detection (`{}` for its defaults; default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outlier_detection: Option<OutlierSpec>,
    /// A horizontal pod autoscaler setting the pod count, as Kubernetes'
    /// (default: none, the pods stay as configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,
    /// How long a change to a pod's place in rotation (down, killed,
    /// unready, draining, back, added) takes to reach the balancer, as
    /// Kubernetes' endpoints reach kube-proxy or a mesh's sidecars a
    /// second or a few after the pod changed: meanwhile the balancer
    /// still sends requests to a pod that is gone, which refuses them
    /// (`pod_restarted`), and none to one that is back (default: none,
    /// the balancer learns at once; `0s` learns in the same instant,
    /// after what is already due then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint_lag: Option<SimDuration>,
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
    /// The most pods the service may hold at once, for `limits.max_pods`:
    /// with an autoscaler, twice its `max_replicas` (pods it removes drain
    /// while the ones it adds start).
    pub fn pods_held(&self) -> u64 {
        let places = self.autoscaling.as_ref().map_or(0, |a| a.places());
        u64::from(self.pods.max(places))
    }

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
            outlier_detection: None,
            autoscaling: None,
            endpoint_lag: None,
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
        if let Some(o) = &self.outlier_detection {
            o.check(&format!("{at}.outlier_detection"), p);
        }
        if let Some(a) = &self.autoscaling {
            let cores = self.cores.is_some() && self.work.is_some();
            a.check(
                &format!("{at}.autoscaling"),
                cores,
                self.workers.is_some(),
                p,
            );
        }
    }
}
