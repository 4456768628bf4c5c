//! A service's pods: workers, cores for the service's own work, one pool
//! per edge of the service, health probes and restarts.
//!
//! A pod runs each request on a worker for the whole of it (its own work,
//! every call, attempt and wait), as a goroutine or a servlet thread does. With bounded
//! workers, requests queue for one. A liveness probe every period fails
//! when the pod is saturated; after enough consecutive failures the pod
//! restarts: every request on it fails with `pod_restarted`, it leaves
//! rotation for the restart time, and comes back with an empty pool.

use crate::config::ConfigError;
use crate::graph::{ServiceNode, Topology, stream_name};
use crate::lb::Balancer;
use crate::world::compile_opt;
use sim_core::dist::Dist;
use sim_core::waitline::WaitLine;

use sim_core::rng::{RngStreams, SimRng};
use sim_core::sim::Scheduler;
use sim_core::time::{SimDuration, SimTime};

use crate::config::ServiceConfig;
use crate::outcome::Reason;
use crate::pool::{Pool, Waiter};
use crate::recorder::{Count, Level, RowSink, WorldEvent};
use crate::request::{AttemptPhase, Phase, ReqRef, Requests};
use crate::world::{Event, World};

crate::part_events! {
    /// What happens to a service's pods.
    pub enum ServiceEvent {
        /// A request crossed the network from the gateway to its pod.
        RequestReachedPod {
            /// The request.
            req: ReqRef,
        },
        /// A request's own work on its core is done.
        WorkDone {
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

/// One pod.
#[derive(Clone, Debug)]
pub struct Pod {
    /// Whether it takes traffic.
    pub state: PodState,
    /// Incarnation: bumped by every restart, so events from a previous
    /// life are recognised as stale.
    pub epoch: u32,
    /// Its connection pools, one per edge of its service (the single tier:
    /// one, to the upstream).
    pub pools: Vec<Pool>,
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
    /// Draws for dialling (connect time, refusals).
    pub connect_rng: SimRng,
    /// Draws for connection leaks.
    pub leak_rng: SimRng,
    /// Pool counts (in use, waiters, leaked) last added to the levels,
    /// per pool.
    reported: Vec<(i64, i64, i64)>,
}

impl Pod {
    /// A fresh pod in rotation, with random streams of its own (keyed by
    /// its index, so adding pods never shifts another pod's draws).
    pub fn new(index: u32, node: &ServiceNode, topo: &Topology, streams: &RngStreams) -> Self {
        let cfg = &node.cfg;
        let pools: Vec<Pool> = node
            .edges
            .iter()
            .map(|&e| {
                let p = &topo.edges[e as usize].pool;
                Pool::new(p.max_connections, p.idle_timeout)
                    .with_max_idle(p.max_idle)
                    .with_streams(p.streams_per_connection)
            })
            .collect();
        let connect = stream_name("pod/connect", &node.suffix);
        let leak = stream_name("pod/leak", &node.suffix);
        Pod {
            state: PodState::Up,
            epoch: 0,
            reported: vec![(0, 0, 0); pools.len()],
            pools,
            workers: cfg.workers,
            worker_queue_limit: cfg.worker_queue,
            cores: cfg.cores,
            busy_cores: 0,
            core_queue: WaitLine::new(),
            busy: 0,
            worker_queue: WaitLine::new(),
            probe_failures: 0,
            ready: true,
            connect_rng: streams.stream((connect.as_str(), u64::from(index))),
            leak_rng: streams.stream((leak.as_str(), u64::from(index))),
        }
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

/// A pool waiter is live while its attempt still waits, on that
/// incarnation of the pod.
pub(crate) fn waiter_is_live(reqs: &Requests, pod: u32, epoch: u32, w: &Waiter) -> bool {
    reqs.att(w.att).is_some_and(|a| {
        a.phase == AttemptPhase::WaitingPool && a.pod == pod && a.pod_epoch == epoch
    })
}

/// A service: its pods and the balancer in front of them.
pub struct Service {
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
    /// The service as configured, every pod up.
    pub(crate) fn new(
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
        Ok(Service {
            steps,
            calls,
            pods: (0..cfg.pods)
                .map(|i| Pod::new(i, node, topo, streams))
                .collect(),
            lb: Balancer::new(
                cfg.balancer,
                cfg.pods,
                streams.stream(stream_name("balancer", &node.suffix).as_str()),
            ),
            work: compile_opt(&cfg.work, &format!("{}.work", node.path))?,
            work_rng: streams.stream(stream_name("service/work", &node.suffix).as_str()),
            call_rng: streams.stream(stream_name("service/calls", &node.suffix).as_str()),
            cfg: cfg.clone(),
        })
    }
}

impl<S: RowSink> World<S> {
    /// Routes the pods' events to their handlers.
    pub(crate) fn on_service_event(&mut self, e: ServiceEvent, sched: &mut Scheduler<Event>) {
        match e {
            ServiceEvent::RequestReachedPod { req } => self.on_request_reached_pod(req, sched),
            ServiceEvent::WorkDone { req } => self.on_work_done(req, sched),
            ServiceEvent::RequestDeadlinePassed { req } => {
                if let Some(q) = self.reqs.get_mut(req) {
                    q.deadline_timer = None;
                }
                self.complete_request(req, Reason::DeadlineExceeded, sched);
            }
            ServiceEvent::HealthProbeDue { service, pod } => {
                self.on_health_probe(service, pod, sched)
            }
            ServiceEvent::PodCameBack {
                service,
                pod,
                epoch,
            } => self.on_pod_came_back(service, pod, epoch, sched),
        }
    }

    /// A request is on its pod: it takes a worker or queues for one.
    pub(crate) fn on_request_reached_pod(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let q = stale!(self.reqs.get_mut(req));
        if q.service_done {
            return;
        }
        q.reached = Some(now);
        let (service, pod, epoch) = (q.service, q.pod, q.pod_epoch);
        self.rec.node_service_arrived(service, now);
        let p = &mut self.services[service as usize].pods[pod as usize];
        if p.epoch != epoch || p.state != PodState::Up {
            // The pod went down while the request was on the wire.
            self.complete_request(req, Reason::PodRestarted, sched);
            return;
        }
        if p.has_free_worker() {
            p.busy += 1;
            self.begin_request(req, sched);
        } else if (p.worker_queue.len() as u32) < p.worker_queue_limit {
            if let Some(q) = self.reqs.get_mut(req) {
                q.phase = Phase::WaitingWorker;
            }
            p.worker_queue
                .push((req, now), worker_waiter_is_live(&self.reqs));
        } else {
            self.complete_request(req, Reason::PodOverloaded, sched);
        }
    }

    /// The request holds a worker: its own work first (on a core, in line
    /// for one if the pod's are busy), then its calls.
    pub(crate) fn begin_request(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let q = stale!(self.reqs.get_mut(req));
        q.has_worker = true;
        let (service, pod) = (q.service, q.pod);
        if self.services[service as usize].work.is_none() {
            self.run_step(req, 0, sched);
            return;
        }
        let p = &mut self.services[service as usize].pods[pod as usize];
        if p.has_free_core() {
            self.start_work(req, sched);
        } else {
            q.phase = Phase::WaitingCore;
            p.core_queue.push(req, core_waiter_is_live(&self.reqs));
        }
    }

    /// The request takes a core for its own work.
    fn start_work(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let q = stale!(self.reqs.get_mut(req));
        let (service, pod) = (q.service, q.pod);
        let s = &mut self.services[service as usize];
        s.pods[pod as usize].busy_cores += 1;
        let d = match &s.work {
            Some(w) => w.sample(&mut s.work_rng),
            None => SimDuration::ZERO,
        };
        q.has_core = true;
        q.phase = Phase::Working;
        q.work_timer = Some(sched.schedule_in(d, ServiceEvent::WorkDone { req }.into()));
    }

    /// The request's own work is done: its core goes to the next in line,
    /// and its calls start.
    fn on_work_done(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let q = stale!(self.reqs.get_mut(req));
        if q.phase != Phase::Working {
            return;
        }
        q.work_timer = None;
        q.has_core = false;
        let (service, pod) = (q.service, q.pod);
        self.free_core(service, pod, sched);
        self.run_step(req, 0, sched);
    }

    /// A core of `pod` is free: the next request in its line takes it.
    pub(crate) fn free_core(&mut self, service: u32, pod: u32, sched: &mut Scheduler<Event>) {
        let p = &mut self.services[service as usize].pods[pod as usize];
        p.busy_cores -= 1;
        if let Some(next) = p.core_queue.pop(core_waiter_is_live(&self.reqs)) {
            self.start_work(next, sched);
        }
    }

    /// A request's call is over on `pod`: its worker takes the next
    /// request in line.
    pub(crate) fn free_worker(&mut self, service: u32, pod: u32, sched: &mut Scheduler<Event>) {
        let p = &mut self.services[service as usize].pods[pod as usize];
        p.busy -= 1;
        if p.state != PodState::Up {
            return;
        }
        let next = p.worker_queue.pop(worker_waiter_is_live(&self.reqs));
        if let Some((next, _)) = next {
            self.services[service as usize].pods[pod as usize].busy += 1;
            self.begin_request(next, sched);
        }
    }

    pub(crate) fn schedule_first_probe(
        &mut self,
        service: u32,
        pod: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let s = &self.services[service as usize];
        if let Some(h) = &s.cfg.health {
            // Stagger probes across pods so they do not all fire at once.
            let n = s.pods.len().max(1) as u64;
            let offset = h.period.as_nanos() / n * (u64::from(pod) % n + 1);
            sched.schedule_in(
                SimDuration::from_nanos(offset),
                ServiceEvent::HealthProbeDue { service, pod }.into(),
            );
        }
    }

    /// A probe fails when the pod's oldest pool waiter or oldest request
    /// queued for a worker has waited longer than the probe timeout.
    pub(crate) fn on_health_probe(&mut self, service: u32, pod: u32, sched: &mut Scheduler<Event>) {
        let Some(h) = self.services[service as usize].cfg.health.clone() else {
            return; // no health checks
        };
        let now = sched.now();
        sched.schedule_in(
            h.period,
            ServiceEvent::HealthProbeDue { service, pod }.into(),
        );
        let p = &mut self.services[service as usize].pods[pod as usize];
        if p.state != PodState::Up {
            return;
        }
        let epoch = p.epoch;
        let reqs = &self.reqs;
        let pool_wait = p
            .pools
            .iter_mut()
            .filter_map(|pool| pool.oldest_wait(now, |w| waiter_is_live(reqs, pod, epoch, w)))
            .max();
        let worker_wait = p
            .worker_queue
            .front(worker_waiter_is_live(reqs))
            .map(|&(_, since)| now.saturating_since(since));
        let saturated =
            pool_wait.is_some_and(|w| w > h.timeout) || worker_wait.is_some_and(|w| w > h.timeout);
        if saturated {
            p.probe_failures += 1;
            let failures = p.probe_failures;
            if failures >= h.failure_threshold {
                self.take_pod_down(service, pod, PodState::Restarting, sched);
            } else if h.readiness_threshold.is_some_and(|t| failures >= t) {
                self.set_ready(service, pod, false, now);
            }
        } else {
            p.probe_failures = 0;
            self.set_ready(service, pod, true, now);
        }
    }

    /// `pod`'s name in events: `pod 3`, or `orders pod 3` in a graph.
    pub(crate) fn pod_name(&self, service: u32, pod: u32) -> String {
        match self.cfg.is_graph() {
            false => format!("pod {pod}"),
            true => format!("{} pod {pod}", self.topo.services[service as usize].name),
        }
    }

    /// Whether `service`'s pods are the ones the pod levels count (the
    /// entry service's: the single tier's only service).
    fn counted(&self, service: u32) -> bool {
        service == self.topo.entry
    }

    /// Readiness: an up pod that fails its readiness probes leaves rotation
    /// but keeps what it holds; the first passing probe brings it back.
    fn set_ready(&mut self, service: u32, pod: u32, ready: bool, now: SimTime) {
        let counted = self.counted(service);
        let s = &mut self.services[service as usize];
        let p = &mut s.pods[pod as usize];
        if p.state != PodState::Up || p.ready == ready {
            return;
        }
        p.ready = ready;
        s.lb.set_up(pod, ready);
        let d = if ready { 1 } else { -1 };
        if counted {
            self.rec.level_add(Level::PodsUp, now, d);
            self.rec.level_add(Level::PodsUnready, now, -d);
        }
        let detail = self.pod_name(service, pod);
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: if ready { "pod_ready" } else { "pod_unready" },
            detail,
        });
    }

    /// Takes a pod out: it leaves rotation, its pools empty, every
    /// request it held fails (`pod_restarted`; the gateway may send it
    /// elsewhere), and a restarting pod is scheduled to come back.
    pub(crate) fn take_pod_down(
        &mut self,
        service: u32,
        pod: u32,
        state: PodState,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let counted = self.counted(service);
        let s = &mut self.services[service as usize];
        let p = &mut s.pods[pod as usize];
        let was_up = p.state == PodState::Up;
        let was_ready = p.ready;
        let old_epoch = p.epoch;
        // A new life first, so nothing failed below touches the old pools
        // or lands back on this pod.
        p.epoch += 1;
        p.state = state;
        p.busy = 0;
        p.busy_cores = 0;
        p.worker_queue.clear();
        p.core_queue.clear();
        p.probe_failures = 0;
        p.ready = true;
        for pool in &mut p.pools {
            pool.reset();
        }
        self.sync_pools(service, pod, now);
        if was_up {
            self.services[service as usize].lb.set_up(pod, false);
            if counted {
                let from = if was_ready {
                    Level::PodsUp
                } else {
                    Level::PodsUnready
                };
                self.rec.level_add(from, now, -1);
                self.rec.level_add(Level::PodsDown, now, 1);
            }
        }
        for r in self.reqs.refs() {
            let on_pod = self.reqs.get(r).is_some_and(|q| {
                q.service == service && q.pod == pod && q.pod_epoch == old_epoch && !q.service_done
            });
            if on_pod {
                self.complete_request(r, Reason::PodRestarted, sched);
            }
        }
        self.rec.count(Count::PodRestarts, 1);
        let why = match state {
            PodState::Killed => "killed",
            _ => "restarting",
        };
        let name = self.pod_name(service, pod);
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_down",
            detail: format!("{name} {why}"),
        });
        if state == PodState::Restarting {
            let t = self.restart_time(service);
            let epoch = self.services[service as usize].pods[pod as usize].epoch;
            sched.schedule_in(
                t,
                ServiceEvent::PodCameBack {
                    service,
                    pod,
                    epoch,
                }
                .into(),
            );
        }
    }

    /// Time out of rotation after a restart (the health config's, or 30 s).
    fn restart_time(&self, service: u32) -> SimDuration {
        self.services[service as usize]
            .cfg
            .health
            .as_ref()
            .map_or(SimDuration::from_secs(30), |h| h.restart_time)
    }

    /// A restarted pod is back in rotation, empty.
    pub(crate) fn on_pod_came_back(
        &mut self,
        service: u32,
        pod: u32,
        epoch: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let s = &mut self.services[service as usize];
        let p = &mut s.pods[pod as usize];
        if p.epoch != epoch || p.state != PodState::Restarting {
            return;
        }
        p.state = PodState::Up;
        s.lb.set_up(pod, true);
        let now = sched.now();
        if self.counted(service) {
            self.rec.level_add(Level::PodsUp, now, 1);
            self.rec.level_add(Level::PodsDown, now, -1);
        }
        let name = self.pod_name(service, pod);
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_up",
            detail: format!("{name} back in rotation"),
        });
    }

    /// Brings a killed or restarting pod back now.
    pub(crate) fn bring_pod_up(&mut self, service: u32, pod: u32, now: SimTime) {
        let s = &mut self.services[service as usize];
        let p = &mut s.pods[pod as usize];
        if p.state == PodState::Up {
            return;
        }
        p.state = PodState::Up;
        s.lb.set_up(pod, true);
        if self.counted(service) {
            self.rec.level_add(Level::PodsUp, now, 1);
            self.rec.level_add(Level::PodsDown, now, -1);
        }
    }

    /// Brings the pool levels up to date with every pool of `pod`.
    pub(crate) fn sync_pools(&mut self, service: u32, pod: u32, now: SimTime) {
        let n = self.services[service as usize].pods[pod as usize]
            .pools
            .len();
        for local in 0..n as u32 {
            let edge = self.topo.services[service as usize].edges[local as usize];
            self.sync_pool(service, pod, local, edge, now);
        }
    }

    /// Brings the pool levels up to date with `pod`'s pool `local`: O(1),
    /// by the change since the pod's last report.
    #[inline]
    pub(crate) fn sync_pool(
        &mut self,
        service: u32,
        pod: u32,
        local: u32,
        edge: u32,
        now: SimTime,
    ) {
        let p = &mut self.services[service as usize].pods[pod as usize];
        let pool = &p.pools[local as usize];
        let current = (
            i64::from(pool.in_use()),
            i64::from(pool.waiters()),
            i64::from(pool.leaked()),
        );
        let last = std::mem::replace(&mut p.reported[local as usize], current);
        if current == last {
            return;
        }
        let group = (service == self.topo.entry).then_some(pod);
        self.rec
            .pool_changed(group, edge, now, current.0 - last.0, current.1 - last.1);
        if current.2 != last.2 {
            self.rec
                .level_add(Level::PoolLeaked, now, current.2 - last.2);
        }
    }
}
