//! Pods: workers, the pool they share, health probes and restarts.
//!
//! A pod runs each request on a worker for the whole call (every attempt
//! and every wait), as a goroutine or a servlet thread does. With bounded
//! workers, requests queue for one. A liveness probe every period fails
//! when the pod is saturated; after enough consecutive failures the pod
//! restarts: every request on it fails with `pod_restarted`, it leaves
//! rotation for the restart time, and comes back with an empty pool.

use crate::config::WorldConfig;
use crate::lb::Balancer;
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
        /// Time to probe a pod's health.
        HealthProbeDue {
            /// The pod.
            pod: u32,
        },
        /// A restarted pod is back in rotation.
        PodCameBack {
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
    /// Its connection pool to the upstream.
    pub pool: Pool,
    workers: Option<u32>,
    worker_queue_limit: u32,
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
    /// Pool counts (in use, waiters, leaked) last added to the levels.
    reported: (i64, i64, i64),
}

impl Pod {
    /// A fresh pod in rotation, with random streams of its own (keyed by
    /// its index, so adding pods never shifts another pod's draws).
    pub fn new(index: u32, cfg: &ServiceConfig, streams: &RngStreams) -> Self {
        Pod {
            state: PodState::Up,
            epoch: 0,
            pool: Pool::new(cfg.pool.max_connections, cfg.pool.idle_timeout)
                .with_max_idle(cfg.pool.max_idle)
                .with_streams(cfg.pool.streams_per_connection),
            workers: cfg.workers,
            worker_queue_limit: cfg.worker_queue,
            busy: 0,
            worker_queue: WaitLine::new(),
            probe_failures: 0,
            ready: true,
            connect_rng: streams.stream(("pod/connect", u64::from(index))),
            leak_rng: streams.stream(("pod/leak", u64::from(index))),
            reported: (0, 0, 0),
        }
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
}

impl Service {
    /// The service as configured, every pod up.
    pub(crate) fn new(cfg: &WorldConfig, streams: &RngStreams) -> Self {
        Service {
            pods: (0..cfg.service.pods)
                .map(|i| Pod::new(i, &cfg.service, streams))
                .collect(),
            lb: Balancer::new(
                cfg.service.balancer,
                cfg.service.pods,
                streams.stream("balancer"),
            ),
        }
    }
}

impl<S: RowSink> World<S> {
    /// Routes the pods' events to their handlers.
    pub(crate) fn on_service_event(&mut self, e: ServiceEvent, sched: &mut Scheduler<Event>) {
        match e {
            ServiceEvent::RequestReachedPod { req } => self.on_request_reached_pod(req, sched),
            ServiceEvent::HealthProbeDue { pod } => self.on_health_probe(pod, sched),
            ServiceEvent::PodCameBack { pod, epoch } => self.on_pod_came_back(pod, epoch, sched),
        }
    }

    /// A request is on its pod: it takes a worker or queues for one.
    pub(crate) fn on_request_reached_pod(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let q = stale!(self.reqs.get(req));
        if q.service_done {
            return;
        }
        let (pod, epoch) = (q.pod, q.pod_epoch);
        let p = &mut self.service.pods[pod as usize];
        if p.epoch != epoch || p.state != PodState::Up {
            // The pod went down while the request was on the wire.
            self.complete_request(req, Reason::PodRestarted, sched);
            return;
        }
        if p.has_free_worker() {
            p.busy += 1;
            self.begin_call(req, sched);
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

    /// A request's call is over on `pod`: its worker takes the next
    /// request in line.
    pub(crate) fn free_worker(&mut self, pod: u32, sched: &mut Scheduler<Event>) {
        let p = &mut self.service.pods[pod as usize];
        p.busy -= 1;
        if p.state != PodState::Up {
            return;
        }
        let next = self.service.pods[pod as usize]
            .worker_queue
            .pop(worker_waiter_is_live(&self.reqs));
        if let Some((next, _)) = next {
            self.service.pods[pod as usize].busy += 1;
            self.begin_call(next, sched);
        }
    }

    pub(crate) fn schedule_first_probe(&mut self, pod: u32, sched: &mut Scheduler<Event>) {
        if let Some(h) = &self.cfg.service.health {
            // Stagger probes across pods so they do not all fire at once.
            let n = self.service.pods.len().max(1) as u64;
            let offset = h.period.as_nanos() / n * (u64::from(pod) % n + 1);
            sched.schedule_in(
                SimDuration::from_nanos(offset),
                ServiceEvent::HealthProbeDue { pod }.into(),
            );
        }
    }

    /// A probe fails when the pod's oldest pool waiter or oldest request
    /// queued for a worker has waited longer than the probe timeout.
    pub(crate) fn on_health_probe(&mut self, pod: u32, sched: &mut Scheduler<Event>) {
        let Some(h) = self.cfg.service.health.clone() else {
            return; // no health checks
        };
        let now = sched.now();
        sched.schedule_in(h.period, ServiceEvent::HealthProbeDue { pod }.into());
        if self.service.pods[pod as usize].state != PodState::Up {
            return;
        }
        let epoch = self.service.pods[pod as usize].epoch;
        let reqs = &self.reqs;
        let pool_wait = self.service.pods[pod as usize]
            .pool
            .oldest_wait(now, |w| waiter_is_live(reqs, pod, epoch, w));
        let p = &mut self.service.pods[pod as usize];
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
                self.take_pod_down(pod, PodState::Restarting, sched);
            } else if h.readiness_threshold.is_some_and(|t| failures >= t) {
                self.set_ready(pod, false, now);
            }
        } else {
            p.probe_failures = 0;
            self.set_ready(pod, true, now);
        }
    }

    /// Readiness: an up pod that fails its readiness probes leaves rotation
    /// but keeps what it holds; the first passing probe brings it back.
    fn set_ready(&mut self, pod: u32, ready: bool, now: SimTime) {
        let p = &mut self.service.pods[pod as usize];
        if p.state != PodState::Up || p.ready == ready {
            return;
        }
        p.ready = ready;
        self.service.lb.set_up(pod, ready);
        let d = if ready { 1 } else { -1 };
        self.rec.level_add(Level::PodsUp, now, d);
        self.rec.level_add(Level::PodsUnready, now, -d);
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: if ready { "pod_ready" } else { "pod_unready" },
            detail: format!("pod {pod}"),
        });
    }

    /// Takes a pod out: it leaves rotation, its pool empties, every
    /// request it held fails (`pod_restarted`; the gateway may send it
    /// elsewhere), and a restarting pod is scheduled to come back.
    pub(crate) fn take_pod_down(
        &mut self,
        pod: u32,
        state: PodState,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let p = &mut self.service.pods[pod as usize];
        let was_up = p.state == PodState::Up;
        let was_ready = p.ready;
        let old_epoch = p.epoch;
        // A new life first, so nothing failed below touches the old pool
        // or lands back on this pod.
        p.epoch += 1;
        p.state = state;
        p.busy = 0;
        p.worker_queue.clear();
        p.probe_failures = 0;
        p.ready = true;
        p.pool.reset();
        self.sync_pool(pod, now);
        if was_up {
            self.service.lb.set_up(pod, false);
            let from = if was_ready {
                Level::PodsUp
            } else {
                Level::PodsUnready
            };
            self.rec.level_add(from, now, -1);
            self.rec.level_add(Level::PodsDown, now, 1);
        }
        for r in self.reqs.refs() {
            let on_pod = self
                .reqs
                .get(r)
                .is_some_and(|q| q.pod == pod && q.pod_epoch == old_epoch && !q.service_done);
            if on_pod {
                self.complete_request(r, Reason::PodRestarted, sched);
            }
        }
        self.rec.count(Count::PodRestarts, 1);
        let why = match state {
            PodState::Killed => "killed",
            _ => "restarting",
        };
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_down",
            detail: format!("pod {pod} {why}"),
        });
        if state == PodState::Restarting {
            let t = self.restart_time();
            let epoch = self.service.pods[pod as usize].epoch;
            sched.schedule_in(t, ServiceEvent::PodCameBack { pod, epoch }.into());
        }
    }

    /// Time out of rotation after a restart (the health config's, or 30 s).
    fn restart_time(&self) -> SimDuration {
        self.cfg
            .service
            .health
            .as_ref()
            .map_or(SimDuration::from_secs(30), |h| h.restart_time)
    }

    /// A restarted pod is back in rotation, empty.
    pub(crate) fn on_pod_came_back(&mut self, pod: u32, epoch: u32, sched: &mut Scheduler<Event>) {
        let p = &mut self.service.pods[pod as usize];
        if p.epoch != epoch || p.state != PodState::Restarting {
            return;
        }
        p.state = PodState::Up;
        self.service.lb.set_up(pod, true);
        let now = sched.now();
        self.rec.level_add(Level::PodsUp, now, 1);
        self.rec.level_add(Level::PodsDown, now, -1);
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "pod_up",
            detail: format!("pod {pod} back in rotation"),
        });
    }

    /// Brings a killed or restarting pod back now.
    pub(crate) fn bring_pod_up(&mut self, pod: u32, now: SimTime) {
        let p = &mut self.service.pods[pod as usize];
        if p.state == PodState::Up {
            return;
        }
        p.state = PodState::Up;
        self.service.lb.set_up(pod, true);
        self.rec.level_add(Level::PodsUp, now, 1);
        self.rec.level_add(Level::PodsDown, now, -1);
    }

    /// Brings the pool levels up to date with `pod`'s pool: O(1), by the
    /// change since the pod's last report.
    pub(crate) fn sync_pool(&mut self, pod: u32, now: SimTime) {
        let p = &mut self.service.pods[pod as usize];
        let current = (
            i64::from(p.pool.in_use()),
            i64::from(p.pool.waiters()),
            i64::from(p.pool.leaked()),
        );
        let last = std::mem::replace(&mut p.reported, current);
        self.rec
            .pool_changed(pod, now, current.0 - last.0, current.1 - last.1);
        if current.2 != last.2 {
            self.rec
                .level_add(Level::PoolLeaked, now, current.2 - last.2);
        }
    }
}
