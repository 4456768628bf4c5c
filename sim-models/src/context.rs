//! What a part is handed when it acts: [`Ctx`], a small context instead
//! of the whole world.
//!
//! A part (the load, a service, an edge's client, a dependency) owns its
//! state, its events and its configuration. To act it needs a few shared
//! things besides: the clock and the scheduler, the records of work in
//! flight (requests, calls, attempts: each part works on its own side of
//! them), the pods' connections, the network's legs, the recorder, and
//! the world's fixed facts. For anything another part must do it asks the
//! world, through [`Ctx::ask`]; the world routes each ask once the part's
//! method returns, in the order asked (see `world.rs`).

use rand::RngExt;
use sim_core::dist::Dist;
use sim_core::rng::{RngStreams, SimRng};
use sim_core::sim::Scheduler;
use sim_core::time::{SimDuration, SimTime};

use crate::config::{ConfigError, WorldConfig, WorldLimits};
use crate::graph::{Target, Topology, stream_name};
use crate::outcome::Reason;
use crate::pool::Pool;
use crate::recorder::{Level, RowSink};
use crate::request::{AttRef, CallRef, ReqRef};
use crate::upstream::JobRef;
use crate::world::{Event, Violation, compile_opt};
use serde::{Deserialize, Serialize};
use sim_core::dist::DistSpec;

/// What a part asks of the world: something another part must do. Asks
/// are routed once the asking part's method returns, first asked first,
/// each with whatever it asks in turn before the next (as a call would
/// have been).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ask {
    /// The gateway sends a user's request to the entry service.
    Dispatch {
        /// The request.
        req: ReqRef,
    },
    /// A request's call begins on its edge's client (unless a sibling's
    /// end has already ended it).
    BeginCall {
        /// The call.
        call: CallRef,
    },
    /// The request no longer needs the call: its client cuts it.
    CutCall {
        /// The call.
        call: CallRef,
        /// Why (counted for the edge as neither answer nor failure).
        reason: Reason,
    },
    /// The client ended a call (and closed its record): its request
    /// counts it against its step.
    CallEnded {
        /// The request.
        req: ReqRef,
        /// The call (gone).
        call: CallRef,
        /// Its edge.
        edge: u32,
        /// How it ended.
        reason: Reason,
    },
    /// A service is done with a request: its calls are cut, its pod moves
    /// on, its caller hears `reason`.
    Complete {
        /// The request.
        req: ReqRef,
        /// How it ended.
        reason: Reason,
    },
    /// An attempt holds its connection and is sent to the service its
    /// edge calls, arriving after `delay`.
    SendToService {
        /// The attempt.
        att: AttRef,
        /// Its edge.
        edge: u32,
        /// The leg's delay.
        delay: SimDuration,
    },
    /// An attempt that gave up leaves its job at a dependency (cancelled
    /// there if the dependency honours cancellation).
    Abandon {
        /// The dependency.
        dep: u32,
        /// The job.
        job: JobRef,
    },
    /// An attempt that gave up tells the service it called (that
    /// service's `cancellation`): the request there stops.
    CallerLeft {
        /// The request at the service called.
        req: ReqRef,
    },
    /// An attempt timed out waiting for a request at the service it
    /// called: that service's outlier detection counts it against the pod.
    CallerTimedOut {
        /// The request at the service called.
        req: ReqRef,
    },
}

/// What a part is handed when it acts: the clock, what the parts share
/// and the world's fixed facts. Built by the world for each event, as
/// three pointers; the shared
/// state's fields are separate borrows, so a part may hold a request
/// record and count at the recorder at once (`ctx.sh.reqs`, `ctx.sh.rec`).
pub(crate) struct Ctx<'a, S> {
    /// The clock and the pending events.
    pub(crate) sched: &'a mut Scheduler<Event>,
    /// Requests in flight, the pods' connections, the network, the
    /// recorder, the asks and the first broken invariant.
    pub(crate) sh: &'a mut crate::world::Shared<S>,
    /// The world's fixed facts (topology, seed, limits, streams).
    pub(crate) env: &'a Env,
}

impl<S: RowSink> Ctx<'_, S> {
    /// The simulated time.
    #[inline]
    pub(crate) fn now(&self) -> SimTime {
        self.sched.now()
    }

    /// Asks the world for something another part must do.
    #[inline]
    pub(crate) fn ask(&mut self, a: Ask) {
        self.sh.out.push(a);
    }

    /// Sends `event` across a leg taking `delay`: scheduled like every
    /// other event, at `now + delay` after everything already due then (a
    /// leg with no delay takes the scheduler's O(1) lane for now, in the
    /// same order).
    #[inline]
    pub(crate) fn cross(&mut self, delay: SimDuration, event: Event) {
        if delay.is_zero() {
            self.sched.schedule_now(event);
        } else {
            self.sched.schedule_in(delay, event);
        }
    }

    /// Records a broken invariant (the first problem wins).
    pub(crate) fn violated(&mut self, what: impl FnOnce() -> String) {
        self.record(false, what);
    }

    /// Records that a work limit was reached (the first problem wins): the
    /// run stops at the end of its bucket, told as a limit to raise, not
    /// as a bug.
    pub(crate) fn limit_reached(&mut self, what: impl FnOnce() -> String) {
        self.record(true, what);
    }

    fn record(&mut self, limit: bool, what: impl FnOnce() -> String) {
        if self.sh.violation.is_none() {
            self.sh.violation = Some(Violation {
                at: self.sched.now(),
                what: what(),
                limit,
            });
        }
    }

    /// Brings the pool levels up to date with `service`'s pod `pod`'s
    /// pool for its edge `local` (`edge` overall): O(1), by the change
    /// since that pool's last report.
    #[inline(always)]
    pub(crate) fn sync_pool(&mut self, service: u32, pod: u32, local: u32, edge: u32) {
        let now = self.sched.now();
        let Some(p) = self.sh.links.pod_mut(service, pod) else {
            return; // a pod the timeline removed: nothing to report
        };
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
        let group = (service == self.env.topo.entry).then_some(pod);
        self.sh
            .rec
            .pool_changed(group, edge, now, current.0 - last.0, current.1 - last.1);
        if current.2 != last.2 {
            self.sh
                .rec
                .level_add(Level::PoolLeaked, now, current.2 - last.2);
        }
    }

    /// Brings the pool levels up to date with every pool of `service`'s
    /// pod `pod`.
    pub(crate) fn sync_pools(&mut self, service: u32, pod: u32) {
        let edges = &self.env.topo.services[service as usize].edges;
        for (local, &edge) in edges.iter().enumerate() {
            self.sync_pool(service, pod, local as u32, edge);
        }
    }

    /// `pod`'s name in events: `pod 3`, or `orders pod 3` in a graph.
    pub(crate) fn pod_name(&self, service: u32, pod: u32) -> String {
        self.env.pod_name(service, pod)
    }
}

/// The world's fixed facts, which every part may read: its shape, its
/// seed, its limits and its random streams (for a pod the timeline adds).
pub(crate) struct Env {
    /// Services, edges, dependencies.
    pub(crate) topo: Topology,
    /// The run's seed.
    pub(crate) seed: u64,
    /// The limits every dimension that allocates is checked against.
    pub(crate) limits: WorldLimits,
    /// A graph (names in events are a node's), or the single tier.
    pub(crate) graph: bool,
    /// Every named random stream.
    pub(crate) streams: RngStreams,
}

impl Env {
    /// The facts of `cfg`, its shape resolved.
    pub(crate) fn new(cfg: &WorldConfig, topo: Topology) -> Self {
        Env {
            topo,
            seed: cfg.seed,
            limits: cfg.limits.clone(),
            graph: cfg.is_graph(),
            streams: RngStreams::new(cfg.seed),
        }
    }

    /// `pod`'s name in events: `pod 3`, or `orders pod 3` in a graph.
    pub(crate) fn pod_name(&self, service: u32, pod: u32) -> String {
        match self.graph {
            false => format!("pod {pod}"),
            true => format!("{} pod {pod}", self.topo.services[service as usize].name),
        }
    }

    /// The edge's calling service and its pool among that service's.
    #[inline]
    pub(crate) fn caller(&self, edge: u32) -> (u32, u32) {
        let e = &self.topo.edges[edge as usize];
        (e.from, e.local)
    }
}

/// Each pod's side of its connections: the pod's life, one pool per edge
/// of its service, and its draws for dialling and leaks.
///
/// They sit in the context rather than in one part because three parts
/// meet there: the edge's client dials and uses a pool, the pod's service
/// probes the pools' lines for its health checks and empties them when
/// the pod restarts, and a dependency's connection limit counts the
/// connections every pool holds to it.
pub(crate) struct Links {
    /// By service, by pod.
    pods: Vec<Vec<PodLinks>>,
    /// By dependency: the pools (service, local edge) that call it.
    callers: Vec<Vec<(u32, u32)>>,
    /// By dependency: its limit on open connections (a deploy changes it).
    limits: Vec<Option<u32>>,
    /// The chance a dial is refused by the network (`network.connect_failure`).
    pub(crate) connect_failure: f64,
}

/// One pod's connections.
pub(crate) struct PodLinks {
    /// The pod's incarnation: bumped by every restart, so what an event
    /// from a previous life refers to is recognised as gone.
    pub(crate) epoch: u32,
    /// One pool per edge of its service (the single tier: one).
    pub(crate) pools: Vec<Pool>,
    /// Pool counts (in use, waiters, leaked) last added to the levels.
    reported: Vec<(i64, i64, i64)>,
    /// Draws for dialling (connect time, refusals).
    pub(crate) connect_rng: SimRng,
    /// Draws for connection leaks.
    pub(crate) leak_rng: SimRng,
}

impl PodLinks {
    /// Pod `index` of `service`'s connections, fresh, with random streams
    /// of its own (keyed by its index, so adding pods never shifts
    /// another pod's draws).
    pub(crate) fn new(service: u32, index: u32, env: &Env) -> Self {
        let node = &env.topo.services[service as usize];
        let pools: Vec<Pool> = node
            .edges
            .iter()
            .map(|&e| {
                let p = &env.topo.edges[e as usize].pool;
                Pool::new(p.max_connections, p.idle_timeout)
                    .with_peer_idle_timeout(p.peer_idle_timeout, p.detects_close)
                    .with_max_idle(p.max_idle)
                    .with_streams(p.streams_per_connection)
                    .with_max_pending(p.max_pending)
            })
            .collect();
        let connect = stream_name("pod/connect", &node.suffix);
        let leak = stream_name("pod/leak", &node.suffix);
        PodLinks {
            epoch: 0,
            reported: vec![(0, 0, 0); pools.len()],
            pools,
            connect_rng: env.streams.stream((connect.as_str(), u64::from(index))),
            leak_rng: env.streams.stream((leak.as_str(), u64::from(index))),
        }
    }
}

impl Links {
    /// Every pod's connections as configured, empty.
    pub(crate) fn new(cfg: &WorldConfig, env: &Env) -> Self {
        let topo = &env.topo;
        let pods = (0..topo.services.len() as u32)
            .map(|s| {
                (0..topo.services[s as usize].cfg.pods)
                    .map(|i| PodLinks::new(s, i, env))
                    .collect()
            })
            .collect();
        let mut callers = vec![Vec::new(); topo.dependencies.len()];
        for e in &topo.edges {
            if let Target::Dependency(d) = e.to {
                callers[d as usize].push((e.from, e.local));
            }
        }
        Links {
            pods,
            callers,
            limits: topo
                .dependencies
                .iter()
                .map(|d| d.cfg.max_connections)
                .collect(),
            connect_failure: cfg.network.connect_failure,
        }
    }

    /// `service`'s pod `pod`, if it exists.
    #[inline]
    pub(crate) fn pod_mut(&mut self, service: u32, pod: u32) -> Option<&mut PodLinks> {
        self.pods.get_mut(service as usize)?.get_mut(pod as usize)
    }

    /// `service`'s pod `pod`'s connections.
    #[inline]
    pub(crate) fn pod(&mut self, service: u32, pod: u32) -> &mut PodLinks {
        &mut self.pods[service as usize][pod as usize]
    }

    /// `service`'s pod `pod`'s pool for its edge `local`.
    #[inline]
    pub(crate) fn pool(&mut self, service: u32, pod: u32, local: u32) -> &mut Pool {
        &mut self.pods[service as usize][pod as usize].pools[local as usize]
    }

    /// The life `service`'s pod `pod` is in.
    #[inline]
    pub(crate) fn epoch(&self, service: u32, pod: u32) -> u32 {
        self.pods[service as usize][pod as usize].epoch
    }

    /// Every pod's connections, by service (for the bounds' checks).
    pub(crate) fn all(&self) -> &[Vec<PodLinks>] {
        &self.pods
    }

    /// A pod the timeline adds to `service`.
    pub(crate) fn add_pod(&mut self, service: u32, env: &Env) {
        let pods = &mut self.pods[service as usize];
        let index = pods.len() as u32;
        pods.push(PodLinks::new(service, index, env));
    }

    /// The pod restarts: a new life, every pool empty.
    pub(crate) fn restart(&mut self, service: u32, pod: u32) {
        let p = self.pod(service, pod);
        p.epoch += 1;
        for pool in &mut p.pools {
            pool.reset();
        }
    }

    /// A deploy changed dependency `dep`'s connection limit.
    pub(crate) fn set_limit(&mut self, dep: u32, limit: Option<u32>) {
        self.limits[dep as usize] = limit;
    }

    /// Whether `target`'s connection limit turns a new dial away: the
    /// connections open or being set up to it from every pool (refused
    /// dials left out), the new one included, exceed it.
    pub(crate) fn far_end_full(&mut self, target: Target, now: SimTime) -> bool {
        let Target::Dependency(d) = target else {
            return false;
        };
        let Some(limit) = self.limits[d as usize] else {
            return false;
        };
        let mut open = 0;
        for &(service, local) in &self.callers[d as usize] {
            for p in &mut self.pods[service as usize] {
                let pool = &mut p.pools[local as usize];
                pool.expire_idle(now);
                open += pool.open(now);
            }
        }
        open > limit
    }
}

/// The network's legs: the gateway's to and from the entry's pods, and
/// each edge's there and back; one stream of delay draws.
pub(crate) struct Network {
    gateway_to_pod: Option<Dist>,
    pod_to_gateway: Option<Dist>,
    there: Vec<Option<Dist>>,
    back: Vec<Option<Dist>>,
    rng: SimRng,
}

impl Network {
    /// The legs as configured, each delay compiled once.
    pub(crate) fn new(cfg: &WorldConfig, env: &Env) -> Result<Self, Vec<ConfigError>> {
        let n = &cfg.network;
        let mut there = Vec::new();
        let mut back = Vec::new();
        for edge in &env.topo.edges {
            // Where each leg is configured: the single tier's network
            // section, or the call's own fields.
            let at = |leg: &str| match (&edge.suffix, leg) {
                (None, "there") => "network.pod_to_upstream".to_string(),
                (None, _) => "network.upstream_to_pod".to_string(),
                (Some(_), _) => format!("{}.{leg}", edge.path),
            };
            there.push(compile_opt(&edge.there, &at("there"))?);
            back.push(compile_opt(&edge.back, &at("back"))?);
        }
        Ok(Network {
            gateway_to_pod: compile_opt(&n.gateway_to_pod, "network.gateway_to_pod")?,
            pod_to_gateway: compile_opt(&n.pod_to_gateway, "network.pod_to_gateway")?,
            there,
            back,
            rng: env.streams.stream("network/delay"),
        })
    }

    #[inline]
    fn draw(leg: &Option<Dist>, rng: &mut SimRng) -> SimDuration {
        match leg {
            Some(d) => d.sample(rng),
            None => SimDuration::ZERO,
        }
    }

    /// A delay for `edge`'s leg there; zero (and no draw) when the leg has
    /// no delay configured. The leg is scheduled either way: one ordering
    /// rule.
    #[inline]
    pub(crate) fn there(&mut self, edge: u32) -> SimDuration {
        Self::draw(&self.there[edge as usize], &mut self.rng)
    }

    /// A delay for `edge`'s leg back.
    #[inline]
    pub(crate) fn back(&mut self, edge: u32) -> SimDuration {
        Self::draw(&self.back[edge as usize], &mut self.rng)
    }

    /// The gateway-to-pod leg's delay.
    #[inline]
    pub(crate) fn gateway_to_pod(&mut self) -> SimDuration {
        Self::draw(&self.gateway_to_pod, &mut self.rng)
    }

    /// The pod-to-gateway leg's delay.
    #[inline]
    pub(crate) fn pod_to_gateway(&mut self) -> SimDuration {
        Self::draw(&self.pod_to_gateway, &mut self.rng)
    }
}

/// Whether a dial from a pod's `connect_rng` is refused by the network:
/// drawn only when refusals are configured, so no other draw moves.
#[inline]
pub(crate) fn refused_by_network(p: &mut PodLinks, failure: f64) -> bool {
    failure > 0.0 && p.connect_rng.random::<f64>() < failure
}

// ---------------------------------------------------------------------
// Configuration: what users write for this part, its defaults, and its
// check (run by `WorldConfig::validate` under the section's path).
// ---------------------------------------------------------------------

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
