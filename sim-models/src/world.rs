//! The world: every part wired together as one `sim_core` model.
//!
//! The parts own their state, their events and their configuration:
//! the load (`load.rs`), each service (`pods.rs`, `calls.rs`), each edge's
//! client (`client.rs`), each dependency (`dependency.rs`). A part acts
//! on a small context (`context.rs`: clock and scheduler, the records of
//! work in flight, the pods' connections, the network, the recorder, the
//! world's fixed facts), never on the world. The world wires the parts
//! and routes: each event to the part it names, and each ask a part
//! leaves in the context (a call to begin or cut, a call's end to tell its
//! request, a request to complete, an attempt to send to a service) to
//! the part that must act, once the asking part returns, first asked
//! first. The flows that span parts (a request dispatched, completed, a
//! pod taken down) are the world's, as sequences of calls into parts.
//!
//! Every event is a fact with its subject: `PoolWaitTimedOut { att }`
//! says which attempt; a handler that finds
//! the subject has moved on (attempt number or phase changed, slot reused)
//! treats the event as stale and does nothing, marked `stale!(…)` where it
//! happens. A broken invariant is a typed [`Violation`]; a run that stops
//! says why as a [`RunFailure`] with its cause chain.

use sim_core::dist::{Dist, DistSpec};
use sim_core::sim::{Limits, Model, RunError, Scheduler, Simulation};
use sim_core::time::SimTime;

use crate::client::{Client, ClientEvent};
use crate::config::{ConfigError, WorldConfig};
use crate::context::{Ask, Ctx, Env, Links, Network};
use crate::dependency::Dependency;
use crate::graph::{Target, Topology};
use crate::load::{Load, LoadEvent};
use crate::outcome::Reason;
use crate::pods::{
    PodState, PoolWaiters, Service, ServiceEvent, core_waiter_is_live, worker_waiter_is_live,
};
use crate::recorder::{Level, Recorder, RowSink, RunTotals};
use crate::request::{CallRef, Caller, ReqRef, Requests};
use crate::timeline::{self, Step};
use crate::upstream::DependencyEvent;

/// Everything that can happen in the world: the world's own events, and
/// each part's, which the part defines next to its code and handles itself
/// (the world only routes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A timeline step applies.
    TimelineStepDue {
        /// Index into the resolved steps.
        index: u32,
    },
    /// The users' side: arrivals, deadlines, patience, answers.
    Load(LoadEvent),
    /// A service's pods: requests reaching them, probes, restarts.
    Service(ServiceEvent),
    /// A client: attempts, connections, timeouts, retries, hedges.
    Client(ClientEvent),
    /// The dependency: requests received and completed, other tenants.
    Dependency(DependencyEvent),
}

macro_rules! event_from {
    ($($part:ident($ty:ty)),*) => {$(
        impl From<$ty> for Event {
            fn from(e: $ty) -> Self {
                Event::$part(e)
            }
        }
    )*};
}
event_from!(
    Load(LoadEvent),
    Service(ServiceEvent),
    Client(ClientEvent),
    Dependency(DependencyEvent)
);

/// Declares a part's event enum and, from the same list, the names of its
/// kinds (`NAMES`, indexed by `kind()`): nothing to keep in step by hand.
#[macro_export]
#[doc(hidden)]
macro_rules! part_events {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident $({
                    $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)?
                })?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                $variant $({ $( $(#[$fmeta])* $field: $ty ),* })?
            ),*
        }

        impl $name {
            /// The name of each kind, by [`Self::kind`].
            pub const NAMES: &'static [&'static str] = &[$(stringify!($variant)),*];

            /// This event's kind, an index into [`Self::NAMES`].
            #[allow(unused_assignments)]
            pub fn kind(&self) -> usize {
                let mut i = 0;
                $(
                    if matches!(self, $name::$variant { .. }) {
                        return i;
                    }
                    i += 1;
                )*
                unreachable!("every variant is listed")
            }
        }
    };
}

impl Event {
    /// How many kinds of event there are, over every part.
    pub const KINDS: usize = 1
        + LoadEvent::NAMES.len()
        + ServiceEvent::NAMES.len()
        + ClientEvent::NAMES.len()
        + DependencyEvent::NAMES.len();

    /// Each part's name and kinds, in the order of [`Event::kind`].
    const PARTS: [(&'static str, &'static [&'static str]); 5] = [
        ("", &["TimelineStepDue"]),
        ("load", LoadEvent::NAMES),
        ("service", ServiceEvent::NAMES),
        ("client", ClientEvent::NAMES),
        ("dependency", DependencyEvent::NAMES),
    ];

    /// This event's kind, an index over every part's kinds (for the event
    /// limit's message: which part generated the events).
    pub fn kind(&self) -> usize {
        let load = 1;
        let service = load + LoadEvent::NAMES.len();
        let client = service + ServiceEvent::NAMES.len();
        let dependency = client + ClientEvent::NAMES.len();
        match self {
            Event::TimelineStepDue { .. } => 0,
            Event::Load(e) => load + e.kind(),
            Event::Service(e) => service + e.kind(),
            Event::Client(e) => client + e.kind(),
            Event::Dependency(e) => dependency + e.kind(),
        }
    }

    /// The name of kind `k`, with its part: `"client/TimeoutsDue"`.
    pub fn name(k: usize) -> String {
        let mut k = k;
        for (part, names) in Event::PARTS {
            if k < names.len() {
                return match part {
                    "" => names[k].to_string(),
                    _ => format!("{part}/{}", names[k]),
                };
            }
            k -= names.len();
        }
        format!("kind {k}")
    }
}

/// The scheduler's FIFO streams ([`Scheduler::schedule_in_stream`]): the
/// sources of events whose times seldom go back, each event then O(1)
/// instead of a heap's push and pop. One that does go back joins the
/// heap, so the order of events never depends on them.
pub(crate) mod stream {
    /// The open-loop arrivals: each scheduled when the one before arrives.
    pub(crate) const ARRIVALS: usize = 0;
    /// Every client's retry delays: in order while backoffs are fixed.
    pub(crate) const RETRY_DELAYS: usize = 1;
    /// Every client's connection set-ups: in order while the connect
    /// time is constant.
    pub(crate) const DIALS: usize = 2;
}

/// Compiles a distribution once, naming its field if it does not compile.
pub(crate) fn compile(spec: &DistSpec, path: &str) -> Result<Dist, Vec<ConfigError>> {
    Dist::new(spec).map_err(|e| {
        vec![ConfigError {
            path: path.to_string(),
            message: e.to_string(),
        }]
    })
}

/// [`compile`] for an optional distribution.
pub(crate) fn compile_opt(
    spec: &Option<DistSpec>,
    path: &str,
) -> Result<Option<Dist>, Vec<ConfigError>> {
    spec.as_ref().map(|s| compile(s, path)).transpose()
}

/// The parts of the world, each owning its state, events and
/// configuration, held by index.
pub(crate) struct Parts {
    /// The users' side: arrivals, closed-loop users, the gateway.
    pub(crate) load: Load,
    /// The services, by index: their pods, workers and balancers.
    pub(crate) services: Vec<Service>,
    /// The edges' clients, by edge: policies, policy state, draws.
    pub(crate) clients: Vec<Client>,
    /// The dependencies, by index, with the other tenants' load on them.
    pub(crate) dependencies: Vec<Dependency>,
}

/// What the parts share and change when they act (borrowed into a
/// [`Ctx`], beside the fixed facts, which the world lends apart and
/// read-only), and the asks the parts leave for it.
pub(crate) struct Shared<S> {
    /// Requests, calls and attempts in flight.
    pub(crate) reqs: Requests,
    /// The pods' connections.
    pub(crate) links: Links,
    /// The network's legs and their draws.
    pub(crate) net: Network,
    /// Rows, totals, levels.
    pub(crate) rec: Recorder<S>,
    /// What the parts ask of others, routed when each returns.
    pub(crate) out: Vec<Ask>,
    /// The first broken invariant, if any: stops the run.
    pub(crate) violation: Option<Violation>,
}

impl<S> Shared<S> {
    /// The context for a call into a part.
    #[inline]
    pub(crate) fn ctx<'a>(
        &'a mut self,
        sched: &'a mut Scheduler<Event>,
        env: &'a Env,
    ) -> Ctx<'a, S> {
        Ctx {
            sched,
            sh: self,
            env,
        }
    }
}

/// The whole world: the parts, what they share, and the run's own
/// bookkeeping. The world wires the parts and routes: each event to the
/// part it belongs to, each ask a part leaves to the part that must act.
pub struct World<S> {
    pub(crate) cfg: WorldConfig,
    pub(crate) parts: Parts,
    pub(crate) sh: Shared<S>,
    /// The world's fixed facts, lent to the parts immutably.
    pub(crate) env: Env,
    pub(crate) steps: Vec<Step>,
    /// Events handled, by kind, one in [`KIND_SAMPLE`]: when a run hits
    /// its event limit, the message names what generated them.
    pub(crate) events_by_kind: [u64; Event::KINDS],
    /// Events to handle until the next one counted by kind.
    pub(crate) until_counted: u32,
    /// Whether each bucket close also checks the wait lines' counts (with
    /// the per-event checks; the end of the run always does).
    pub(crate) lines_each_bucket: bool,
    /// Events counted by kind so far.
    pub(crate) counted: u32,
}

/// One event in this many is counted by kind.
const KIND_SAMPLE: u32 = 64;

impl<S: RowSink> World<S> {
    /// Builds the world for a validated config, sending bucket rows to
    /// `sink`.
    pub fn new(cfg: &WorldConfig, sink: S) -> Result<Self, Vec<ConfigError>> {
        cfg.validate()?;
        let topo = Topology::of(cfg)?;
        let env = Env::new(cfg, topo);
        let (topo, streams) = (&env.topo, &env.streams);
        let mut errors = Vec::new();
        let mut services = Vec::new();
        for (i, node) in topo.services.iter().enumerate() {
            match Service::new(i as u32, node, topo, streams) {
                Ok(s) => services.push(s),
                Err(e) => errors.extend(e),
            }
        }
        let mut clients = Vec::new();
        for (i, edge) in topo.edges.iter().enumerate() {
            match Client::new(i as u32, edge, topo, streams) {
                Ok(c) => clients.push(c),
                Err(e) => errors.extend(e),
            }
        }
        let mut dependencies = Vec::new();
        for (i, node) in topo.dependencies.iter().enumerate() {
            match Dependency::new(i as u32, node, streams) {
                Ok(d) => dependencies.push(d),
                Err(e) => errors.extend(e),
            }
        }
        let (load, net) = match (Load::new(cfg, topo.entry, streams), Network::new(cfg, &env)) {
            (Ok(l), Ok(n)) if errors.is_empty() => (l, n),
            (l, n) => {
                errors.extend(l.err().into_iter().flatten());
                errors.extend(n.err().into_iter().flatten());
                return Err(errors);
            }
        };
        let entry = &topo.services[topo.entry as usize].cfg;
        let only_entry_pools = matches!(&topo.edges[..], [e] if e.from == topo.entry);
        let rec = Recorder::new(cfg.clock.bucket, cfg.clock.window, sink)
            .with_pod_groups(entry.pods, entry.groups(), only_entry_pools)
            .with_nodes(topo);
        Ok(World {
            parts: Parts {
                load,
                services,
                clients,
                dependencies,
            },
            sh: Shared {
                reqs: Requests::default(),
                links: Links::new(cfg, &env),
                net,
                rec,
                out: Vec::new(),
                violation: None,
            },
            env,
            steps: timeline::resolve(cfg),
            events_by_kind: [0; Event::KINDS],
            until_counted: 1,
            lines_each_bucket: false,
            counted: 0,
            cfg: cfg.clone(),
        })
    }

    /// Schedules the first events: arrivals, probes, timeline. (Buckets
    /// are not events: the run closes them, [`World::close_bucket`].)
    pub fn start(&mut self, sched: &mut Scheduler<Event>) {
        let cx = &mut self.sh.ctx(sched, &self.env);
        let parts = &mut self.parts;
        parts.with(cx, |p, cx| p.load.schedule_next_arrival(cx));
        for d in 0..parts.dependencies.len() {
            parts.with(cx, |p, cx| p.dependencies[d].schedule_next_background(cx));
        }
        parts.with(cx, |p, cx| p.load.start_closed_loop(cx));
        let now = cx.now();
        let entry = cx.env.topo.entry as usize;
        let pods = parts.services[entry].pod_count();
        cx.sh.rec.level(Level::PodsUp, now, i64::from(pods));
        for s in 0..parts.services.len() {
            for pod in 0..parts.services[s].pod_count() {
                parts.with(cx, |p, cx| p.services[s].schedule_first_probe(pod, cx));
            }
            parts.with(cx, |p, cx| p.services[s].schedule_outlier_sweep(cx));
            parts.with(cx, |p, cx| p.services[s].schedule_autoscaler(cx));
            let pods = parts.services[s].pod_count();
            cx.sh.rec.node_replicas(s as u32, now, i64::from(pods));
        }
        for e in 0..parts.clients.len() {
            parts.with(cx, |p, cx| p.clients[e].sync_bulkhead_limit(cx));
        }
        for (i, step) in self.steps.iter().enumerate() {
            let _ = cx
                .sched
                .schedule_at(step.at, Event::TimelineStepDue { index: i as u32 });
        }
    }

    /// The world's shape.
    pub fn topology(&self) -> &Topology {
        &self.env.topo
    }

    /// The kinds of event that made up most of the run so far, for the
    /// event limit's message: `"service/HealthProbeDue 99.9 %, TimelineStepDue 0.1 %"`.
    pub fn busiest_events(&self) -> String {
        let total: u64 = self.events_by_kind.iter().sum();
        let mut kinds: Vec<(u64, String)> = self
            .events_by_kind
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, &n)| (n, Event::name(k)))
            .collect();
        kinds.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        kinds
            .iter()
            .take(3)
            .map(|(n, name)| format!("{name} {:.1} %", 100.0 * *n as f64 / total.max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The configuration this world runs.
    pub fn config(&self) -> &WorldConfig {
        &self.cfg
    }

    /// The resolved timeline.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Records a broken invariant (the first one wins).
    pub(crate) fn violated(&mut self, now: SimTime, what: impl FnOnce() -> String) {
        if self.sh.violation.is_none() {
            self.sh.violation = Some(Violation {
                at: now,
                what: what(),
                limit: false,
            });
        }
    }

    /// Whole-world audit: the conservation law and every bound, by a full
    /// scan (run at the end of every run).
    pub fn audit(&self, at: SimTime) -> Result<(), RunFailure> {
        if let Some(v) = &self.sh.violation {
            return Err(RunFailure::of(v));
        }
        let (rec, reqs) = (&self.sh.rec, &self.sh.reqs);
        let unbalanced = |what: String| {
            RunFailure::Audit(Violation {
                at,
                what,
                limit: false,
            })
        };
        let offered = rec.totals().count(crate::recorder::Count::Offered)
            + rec.open_count(crate::recorder::Count::Offered);
        let finished = rec.totals().finished() + rec.open_outcomes();
        let mut waiting = 0u64;
        for r in reqs.refs() {
            waiting += u64::from(reqs.get(r).is_some_and(|q| !q.user_done));
        }
        let active = reqs.live_attempts() as u64;
        if offered != finished + waiting {
            return Err(unbalanced(format!(
                "conservation: {offered} arrivals but {finished} finished + {waiting} in flight"
            )));
        }
        if i64::try_from(waiting).ok() != Some(rec.level_value(Level::UsersWaiting)) {
            return Err(unbalanced(format!(
                "{waiting} users waiting, but the gauge says {}",
                rec.level_value(Level::UsersWaiting)
            )));
        }
        let pools = || {
            self.sh
                .links
                .all()
                .iter()
                .flat_map(|pods| pods.iter().flat_map(|p| p.pools.iter()))
        };
        let in_use: i64 = pools().map(|p| i64::from(p.in_use())).sum();
        let waiters: i64 = pools().map(|p| i64::from(p.waiters())).sum();
        if (in_use, waiters)
            != (
                rec.level_value(Level::PoolInUse),
                rec.level_value(Level::PoolWaiters),
            )
        {
            return Err(unbalanced(format!(
                "pools hold {in_use} connections in use and {waiters} waiters, the levels say {} and {}",
                rec.level_value(Level::PoolInUse),
                rec.level_value(Level::PoolWaiters)
            )));
        }
        let in_line: usize = self
            .parts
            .clients
            .iter()
            .flat_map(|c| c.policies.iter())
            .filter_map(|set| set.bulkhead.as_ref())
            .map(|b| b.waiting())
            .sum();
        if i64::try_from(in_line).ok() != Some(rec.level_value(Level::BulkheadWaiting)) {
            return Err(unbalanced(format!(
                "{in_line} calls in bulkheads' lines, the level says {}",
                rec.level_value(Level::BulkheadWaiting)
            )));
        }
        let entry = &self.parts.services[self.env.topo.entry as usize];
        let ejected = entry.outlier.as_ref().map_or(0, |d| d.ejected());
        if i64::from(ejected) != rec.level_value(Level::PodsEjected) {
            return Err(unbalanced(format!(
                "the entry's outlier detection holds {ejected} pods out, the level says {}",
                rec.level_value(Level::PodsEjected)
            )));
        }
        // The entry's pods, counted one by one, against the levels kept
        // as they moved: in rotation as far as their state and readiness
        // go, up but out of it (unready, or draining), down (restarting,
        // starting, killed); one an autoscaler removed is in none.
        let (mut up, mut unready, mut down) = (0i64, 0i64, 0i64);
        for p in &entry.pods {
            match p.state {
                PodState::Up if p.ready => up += 1,
                PodState::Up => unready += 1,
                PodState::Killed if p.removed => {}
                PodState::Restarting | PodState::Killed => down += 1,
            }
        }
        let levels = (
            rec.level_value(Level::PodsUp),
            rec.level_value(Level::PodsUnready),
            rec.level_value(Level::PodsDown),
        );
        if (up, unready, down) != levels {
            return Err(unbalanced(format!(
                "the entry's pods are {up} up, {unready} unready and {down} down, the levels say {}, {} and {}",
                levels.0, levels.1, levels.2
            )));
        }
        // From what the recorder saw, not from a counter kept beside it:
        // every attempt that started has ended or is still in progress.
        let started = rec.attempts_started_so_far();
        let ended = rec.attempts_ended_so_far();
        if started != ended + active {
            return Err(unbalanced(format!(
                "{started} attempts recorded as started, but {ended} recorded as ended + {active} in progress"
            )));
        }
        self.check_bounds()
            .and_then(|()| self.check_lines())
            .map_err(|what| {
                RunFailure::Invariant(Violation {
                    at,
                    what,
                    limit: false,
                })
            })
    }

    /// The cheap checks run after every event in debug builds.
    fn check_bounds(&self) -> Result<(), String> {
        // A limit reached is told by the run loop at its bucket's end, as
        // a limit; only a broken invariant stops the engine here.
        if let Some(v) = self.sh.violation.as_ref().filter(|v| !v.limit) {
            return Err(v.to_string());
        }
        let topo = &self.env.topo;
        for (s, pods) in self.sh.links.all().iter().enumerate() {
            for (i, p) in pods.iter().enumerate() {
                for (e, pool) in p.pools.iter().enumerate() {
                    pool.check().map_err(|m| match self.env.graph {
                        false => format!("pod {i}: {m}"),
                        true => format!(
                            "{} pod {i}, pool of {}: {m}",
                            topo.services[s].name,
                            topo.edges[topo.services[s].edges[e] as usize].name
                        ),
                    })?;
                }
            }
        }
        for (s, service) in self.parts.services.iter().enumerate() {
            service
                .check_ejections()
                .and_then(|()| service.check_replicas())
                .map_err(|m| format!("{}: {m}", topo.services[s].name))?;
        }
        for (d, dep) in self.parts.dependencies.iter().enumerate() {
            let up = &dep.upstream;
            let cap = up.params.capacity;
            if up.queued() > 0 && up.in_service() < cap {
                return Err(format!(
                    "{} has {} queued while only {} of {cap} slots are busy",
                    topo.dependencies[d].name,
                    up.queued(),
                    up.in_service()
                ));
            }
        }
        Ok(())
    }

    /// Every wait line's count against the waiters it holds: the pods'
    /// worker and core lines, the pools' waiters, the dependencies'
    /// queues. A count off by one admits past a line's limit or, below
    /// zero, refuses everyone after.
    fn check_lines(&self) -> Result<(), String> {
        let topo = &self.env.topo;
        let reqs = &self.sh.reqs;
        for (s, service) in self.parts.services.iter().enumerate() {
            let name = &topo.services[s].name;
            for (i, p) in service.pods.iter().enumerate() {
                p.worker_queue
                    .check(worker_waiter_is_live(reqs))
                    .map_err(|m| format!("{name} pod {i}, worker line: {m}"))?;
                p.core_queue
                    .check(core_waiter_is_live(reqs))
                    .map_err(|m| format!("{name} pod {i}, core line: {m}"))?;
            }
            for (i, p) in self.sh.links.all()[s].iter().enumerate() {
                for (e, pool) in p.pools.iter().enumerate() {
                    let live = PoolWaiters {
                        reqs,
                        pod: i as u32,
                        epoch: p.epoch,
                    };
                    pool.check_waiters(live).map_err(|m| {
                        let edge = &topo.edges[topo.services[s].edges[e] as usize].name;
                        format!("{name} pod {i}, pool of {edge}: {m}")
                    })?;
                }
            }
        }
        for client in &self.parts.clients {
            client
                .check_bulkheads(reqs)
                .and_then(|()| client.check_bulkhead_limit(self.sh.rec.edge_limit(client.index)))
                .map_err(|m| {
                    format!("client of {}: {m}", topo.edges[client.index as usize].name)
                })?;
        }
        for (d, dep) in self.parts.dependencies.iter().enumerate() {
            dep.upstream
                .check_queue()
                .map_err(|m| format!("{}'s queue: {m}", topo.dependencies[d].name))?;
        }
        Ok(())
    }

    /// Closes the bucket that ends at `now` (checks the bounds, hands the
    /// bucket to the recorder). The run calls it when every event before
    /// `now` has run and none at `now` has: a bucket holds what happened
    /// in [start, end), so an event at a bucket's edge belongs to the next
    /// bucket whenever it was scheduled, and one at the run's end is past
    /// the run. (As an event in the queue, the close once ran before or
    /// after the other events at its instant by the order they were
    /// scheduled in: what a probe or a timeline step at a bucket's edge
    /// did fell in one bucket or the other with the buckets' width, and
    /// what ran at the run's end after the last close was lost.)
    pub fn close_bucket(&mut self, now: SimTime) {
        // The cheap bounds at every bucket close, in every build: a broken
        // pool is caught within a bucket even when per-event checks are off.
        // The lines' counts too when per-event checks are on: a count
        // scans its line, and a storm's lines hold thousands (the storm
        // with 10 ms buckets ran 3.8x as long with them in every build).
        let lines = || match self.lines_each_bucket {
            true => self.check_lines(),
            false => Ok(()),
        };
        if let Err(e) = self.check_bounds().and_then(|()| lines()) {
            self.violated(now, || e);
        }
        self.sh.rec.close_bucket(now);
    }
}

/// The world's routing: each event to the part it names, each ask to
/// the part that must act, and the flows that span parts, all on the one
/// context built per event.
impl Parts {
    /// Calls into the parts with a context, then routes what they asked
    /// of others, first asked first, each with what it asks in turn.
    #[inline]
    pub(crate) fn with<R, S: RowSink>(
        &mut self,
        cx: &mut Ctx<'_, S>,
        f: impl FnOnce(&mut Parts, &mut Ctx<'_, S>) -> R,
    ) -> R {
        let start = cx.sh.out.len();
        let r = f(self, cx);
        if cx.sh.out.len() > start {
            self.route_asks(start, cx);
        }
        r
    }

    /// Routes the asks from `start` on (an ask's own asks are routed,
    /// each in turn, before the next ask), then forgets them.
    fn route_asks<S: RowSink>(&mut self, start: usize, cx: &mut Ctx<'_, S>) {
        let mut i = start;
        while i < cx.sh.out.len() {
            let ask = cx.sh.out[i];
            i += 1;
            self.route(ask, cx);
        }
        cx.sh.out.truncate(start);
    }

    /// Hands an ask to the part that must act on it.
    #[inline]
    fn route<S: RowSink>(&mut self, ask: Ask, cx: &mut Ctx<'_, S>) {
        match ask {
            Ask::Dispatch { req } => self.dispatch(req, cx),
            Ask::BeginCall { call } => {
                // A call ended by a sibling before its turn is not begun.
                let live =
                    cx.sh.reqs.call(call).filter(|c| {
                        c.phase == crate::request::CallPhase::Calling && c.attempts == 0
                    });
                let edge = stale!(live).edge as usize;
                self.with(cx, |p, cx| p.clients[edge].begin_call(call, cx));
            }
            Ask::CutCall { call, reason } => self.cut_call(call, reason, cx),
            Ask::CallEnded {
                req,
                call,
                edge,
                reason,
            } => {
                let service = cx.env.caller(edge).0 as usize;
                self.with(cx, |p, cx| {
                    p.services[service].call_ended(req, call, edge, reason, cx)
                });
            }
            Ask::Complete { req, reason } => self.complete_request(req, reason, cx),
            Ask::SendToService { att, edge, delay } => {
                let Target::Service(to) = cx.env.topo.edges[edge as usize].to else {
                    debug_assert!(false, "an attempt to a dependency sent to a service");
                    return;
                };
                let deadline = self.clients[edge as usize].propagated_deadline(att, &cx.sh.reqs);
                self.with(cx, |p, cx| {
                    p.services[to as usize].receive(att, edge, delay, deadline, cx)
                });
            }
            Ask::Abandon { dep, job } => {
                self.with(cx, |p, cx| p.dependencies[dep as usize].abandon(job, cx));
            }
            Ask::CallerTimedOut { req } => {
                let Some(service) = cx.sh.reqs.get(req).map(|q| q.service as usize) else {
                    return;
                };
                self.with(cx, |p, cx| p.services[service].caller_timed_out(req, cx));
            }
            Ask::CallerLeft { req } => {
                if let Some(q) = cx.sh.reqs.get_mut(req) {
                    q.caller_gone = true;
                }
                self.complete_request(req, Reason::Abandoned, cx);
            }
        }
    }

    /// The gateway sends `req` to a pod of the entry service (again, for
    /// a gateway retry); with no pod in rotation the user hears
    /// `unavailable`.
    #[inline]
    pub(crate) fn dispatch<S: RowSink>(&mut self, req: ReqRef, cx: &mut Ctx<'_, S>) {
        let entry = cx.env.topo.entry as usize;
        if self.with(cx, |p, cx| p.services[entry].place(req, cx)) {
            return;
        }
        if let Some(q) = cx.sh.reqs.get_mut(req) {
            q.service_done = true;
            q.phase = crate::request::Phase::Finished;
        }
        self.with(cx, |p, cx| {
            p.load.user_outcome(req, Reason::Unavailable, cx)
        });
    }

    /// The request no longer needs `call`: its client cuts it (counted as
    /// neither answered nor failed).
    #[inline]
    fn cut_call<S: RowSink>(&mut self, call: CallRef, reason: Reason, cx: &mut Ctx<'_, S>) {
        let edge = stale!(cx.sh.reqs.call(call)).edge as usize;
        self.with(cx, |p, cx| {
            p.clients[edge].close_call(call, reason, true, cx)
        });
    }

    /// The service is done with `req`: whatever calls are running are
    /// cut, its core and worker move on to the next in line, and its
    /// caller gets `reason`: the user (across the network), unless the
    /// user already saw an outcome or the gateway retries it; or the
    /// attempt of another service that sent it.
    pub(crate) fn complete_request<S: RowSink>(
        &mut self,
        req: ReqRef,
        reason: Reason,
        cx: &mut Ctx<'_, S>,
    ) {
        let q = stale!(cx.sh.reqs.get_mut(req));
        if q.service_done {
            return;
        }
        let calls = std::mem::take(&mut q.calls);
        let service = q.service as usize;
        calls.for_each(|call| self.cut_call(call, reason, cx));
        let released = self.with(cx, |p, cx| p.services[service].release(req, cx));
        let r = stale!(released);
        let retry = self.with(cx, |p, cx| {
            let s = &mut p.services[service];
            s.released(req, &r, reason, cx);
            match r.caller {
                Caller::Attempt { att, edge } => s.answer_caller(req, att, edge, reason, cx),
                Caller::User if r.user_done => cx.sh.reqs.release_if_done(req),
                Caller::User if p.load.retries(r.dispatches, reason) => return true,
                Caller::User => s.answer_user(req, reason, cx),
            }
            false
        });
        if retry {
            self.dispatch(req, cx);
        }
    }

    /// Takes `service`'s pod `pod` out (a failed probe, the timeline):
    /// every request it held fails with `pod_restarted`.
    pub(crate) fn take_pod_down<S: RowSink>(
        &mut self,
        service: u32,
        pod: u32,
        state: PodState,
        cx: &mut Ctx<'_, S>,
    ) {
        let s = service as usize;
        let held = self.with(cx, |p, cx| p.services[s].go_down(pod, state, cx));
        for req in held {
            self.complete_request(req, Reason::PodRestarted, cx);
        }
        self.with(cx, |p, cx| p.services[s].went_down(pod, state, cx));
    }

    /// A pod the autoscaler removed is done draining: whatever it still
    /// holds fails (`pod_restarted`, as a SIGKILL at the grace's end), and
    /// it is gone.
    #[cold]
    pub(crate) fn terminate_pod<S: RowSink>(
        &mut self,
        service: u32,
        pod: u32,
        cx: &mut Ctx<'_, S>,
    ) {
        let s = service as usize;
        let held = self.with(cx, |p, cx| p.services[s].go_down(pod, PodState::Killed, cx));
        for req in held {
            self.complete_request(req, Reason::PodRestarted, cx);
        }
        self.with(cx, |p, cx| p.services[s].terminated(pod, cx));
    }

    /// Routes a load event; the deadline line's wake-up delivers one
    /// deadline at a time, so what each asks is done before the next.
    #[inline(never)]
    fn on_load_event<S: RowSink>(&mut self, e: LoadEvent, cx: &mut Ctx<'_, S>) {
        if e != LoadEvent::UserDeadlinesDue {
            self.with(cx, |p, cx| p.load.on_event(e, cx));
            return;
        }
        self.load.deadlines_woken();
        while self.with(cx, |p, cx| p.load.deliver_deadline(cx)) {}
        self.with(cx, |p, cx| p.load.deadlines_delivered(cx));
    }

    /// Routes a service event; a propagated deadline and a health probe
    /// reach past the service (the request's calls and caller, the pod's
    /// requests).
    #[inline(never)]
    fn on_service_event<S: RowSink>(&mut self, e: ServiceEvent, cx: &mut Ctx<'_, S>) {
        match e {
            ServiceEvent::RequestDeadlinePassed { req } => {
                if let Some(q) = cx.sh.reqs.get_mut(req) {
                    q.deadline_timer = None;
                }
                self.complete_request(req, Reason::DeadlineExceeded, cx);
            }
            ServiceEvent::HealthProbeDue { service, pod } => {
                let s = service as usize;
                if self.with(cx, |p, cx| p.services[s].on_health_probe(pod, cx)) {
                    self.take_pod_down(service, pod, PodState::Restarting, cx);
                }
            }
            ServiceEvent::PodTerminated {
                service,
                pod,
                epoch,
            } => {
                if self.services[service as usize].terminates(pod, epoch, cx) {
                    self.terminate_pod(service, pod, cx);
                }
            }
            ServiceEvent::RequestReachedPod { service, .. }
            | ServiceEvent::WorkDone { service, .. }
            | ServiceEvent::PodCameBack { service, .. }
            | ServiceEvent::OutlierSweepDue { service }
            | ServiceEvent::AutoscalerSampleDue { service }
            | ServiceEvent::AutoscalerPassDue { service }
            | ServiceEvent::EndpointsUpdated { service, .. }
            | ServiceEvent::PreStopDone { service, .. } => {
                self.with(cx, |p, cx| p.services[service as usize].on_event(e, cx));
            }
        }
    }

    /// Routes a client event; three are delivered in steps, each step's
    /// asks done before the next (a timeout line's due attempts one at a
    /// time; a failed dial's room offered once the attempt's end is done;
    /// an answer's pool levels brought up to date last).
    #[inline(never)]
    fn on_client_event<S: RowSink>(&mut self, e: ClientEvent, cx: &mut Ctx<'_, S>) {
        let edge = e.edge() as usize;
        match e {
            ClientEvent::TimeoutsDue { .. } => {
                self.clients[edge].timeouts_woken();
                while self.with(cx, |p, cx| {
                    let deps = &p.dependencies;
                    p.clients[edge]
                        .deliver_timeout(cx, |dep, job| deps[dep as usize].prefetch_job(job))
                }) {}
                self.with(cx, |p, cx| p.clients[edge].timeouts_delivered(cx));
            }
            ClientEvent::ConnectionFailed {
                pod,
                epoch,
                att,
                refused,
                ..
            } => {
                let failed = self.with(cx, |p, cx| {
                    p.clients[edge].on_connection_failed(pod, epoch, att, refused, cx)
                });
                if failed {
                    self.with(cx, |p, cx| p.clients[edge].after_failed_dial(pod, cx));
                }
            }
            ClientEvent::ResponseReachedPod { att, status, .. } => {
                let answered = self.with(cx, |p, cx| p.clients[edge].on_response(att, status, cx));
                if let Some(pod) = answered {
                    self.with(cx, |p, cx| p.clients[edge].answered(pod, cx));
                }
            }
            _ => self.with(cx, |p, cx| p.clients[edge].on_event(e, cx)),
        }
    }

    /// Routes a dependency event; an arrival carries the deadline its
    /// attempt's client propagates.
    #[inline(never)]
    fn on_dependency_event<S: RowSink>(&mut self, e: DependencyEvent, cx: &mut Ctx<'_, S>) {
        match e {
            DependencyEvent::Received { att, edge } => {
                let Target::Dependency(d) = cx.env.topo.edges[edge as usize].to else {
                    debug_assert!(false, "an attempt to a service reached a dependency");
                    return;
                };
                let deadline = self.clients[edge as usize].propagated_deadline(att, &cx.sh.reqs);
                self.with(cx, |p, cx| {
                    p.dependencies[d as usize].on_received(att, edge, deadline, cx)
                });
            }
            DependencyEvent::Completed { dep, .. } | DependencyEvent::BackgroundArrived { dep } => {
                self.with(cx, |p, cx| p.dependencies[dep as usize].on_event(e, cx));
            }
        }
    }
}

impl<S: RowSink> Model for World<S> {
    type Event = Event;

    /// Kept in the engine's loop (`inline(always)`): left a function of
    /// its own when the world's code grew, it cost 1.6 % more
    /// instructions a request, the event copied in and out of the call.
    #[inline(always)]
    fn handle(&mut self, event: Event, sched: &mut Scheduler<Event>) {
        // The first 64 events, then one in 64, by count (deterministic):
        // enough to name the busiest kinds of a short run or a long one, at
        // a fraction of the cost of counting each (a countdown: one
        // decrement and one test per event).
        self.until_counted -= 1;
        if self.until_counted == 0 {
            self.events_by_kind[event.kind()] += 1;
            self.counted = self.counted.saturating_add(1);
            self.until_counted = if self.counted < KIND_SAMPLE {
                1
            } else {
                KIND_SAMPLE
            };
        }
        // Each part's router is a function of its own (`inline(never)`):
        // every event pays this function's entry and exit, which stay
        // small that way.
        match event {
            Event::TimelineStepDue { index } => self.on_timeline_step(index, sched),
            Event::Load(e) => self
                .parts
                .on_load_event(e, &mut self.sh.ctx(sched, &self.env)),
            Event::Service(e) => self
                .parts
                .on_service_event(e, &mut self.sh.ctx(sched, &self.env)),
            Event::Client(e) => self
                .parts
                .on_client_event(e, &mut self.sh.ctx(sched, &self.env)),
            Event::Dependency(e) => self
                .parts
                .on_dependency_event(e, &mut self.sh.ctx(sched, &self.env)),
        }
    }

    fn check_invariants(&self, _now: SimTime) -> Result<(), String> {
        self.check_bounds()
    }
}

/// Why a run did not produce results.
#[derive(Debug)]
pub enum WorldError {
    /// The configuration is invalid.
    Config(Vec<ConfigError>),
    /// The run stopped before its end.
    Run {
        /// The seed, to reproduce it.
        seed: u64,
        /// Why it stopped.
        failure: RunFailure,
    },
}

/// Why a run stopped before its end.
#[derive(Debug)]
pub enum RunFailure {
    /// The engine stopped it: an event limit, or a failed per-event check.
    Engine {
        /// What the engine reported.
        source: RunError,
        /// For an event limit: the kinds of event that made up most of the
        /// run, so the user sees which part generated them.
        busiest: Option<String>,
    },
    /// A broken invariant found by the world itself (a bug in the model:
    /// never expected in a correct run).
    Invariant(Violation),
    /// A work limit reached (`limits.max_in_flight`): the experiment asks
    /// for more than the limits allow, which the user may raise.
    Limit(Violation),
    /// The end-of-run audit failed: a request or attempt unaccounted for.
    Audit(Violation),
}

/// A broken invariant or a work limit reached: when, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The simulated time it was found.
    pub at: SimTime,
    /// What is wrong.
    pub what: String,
    /// A work limit reached, not a broken invariant.
    pub limit: bool,
}

impl RunFailure {
    /// The failure a recorded problem stands for.
    fn of(v: &Violation) -> RunFailure {
        if v.limit {
            RunFailure::Limit(v.clone())
        } else {
            RunFailure::Invariant(v.clone())
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at {}: {}", self.at, self.what)
    }
}

impl std::fmt::Display for RunFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunFailure::Engine {
                source,
                busiest: Some(b),
            } => {
                let limit = match source {
                    RunError::ClockStoodStill { .. } => "max_events_at_instant",
                    _ => "max_events",
                };
                write!(f, "{source} (raise limits.{limit}); most events were {b}")
            }
            RunFailure::Engine { source, .. } => write!(f, "{source}"),
            RunFailure::Invariant(v) => write!(f, "{v}"),
            RunFailure::Limit(v) => {
                write!(f, "{v} (raise it under the experiment's `limits:`)")
            }
            RunFailure::Audit(v) => write!(f, "{v}"),
        }
    }
}

impl std::error::Error for RunFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunFailure::Engine { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl std::fmt::Display for WorldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorldError::Config(errs) => {
                writeln!(f, "invalid configuration:")?;
                for e in errs {
                    writeln!(f, "  {e}")?;
                }
                Ok(())
            }
            WorldError::Run { seed, failure } => {
                write!(f, "run with seed {seed} stopped: {failure}")
            }
        }
    }
}

impl std::error::Error for WorldError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorldError::Config(errs) => errs.first().map(|e| e as _),
            WorldError::Run { failure, .. } => Some(failure),
        }
    }
}

/// What a run produced.
pub struct RunOutput<S> {
    /// The sink, holding whatever it kept of the bucket rows.
    pub sink: S,
    /// Totals over the run.
    pub totals: RunTotals,
    /// Events processed.
    pub events: u64,
    /// The resolved timeline.
    pub steps: Vec<Step>,
}

/// Runs `cfg` to its end, streaming bucket rows into `sink`; audits the
/// world at the end (conservation, bounds) and fails with the seed and
/// simulated time if anything is off.
pub fn run<S: RowSink>(cfg: &WorldConfig, sink: S) -> Result<RunOutput<S>, WorldError> {
    run_with(cfg, sink, Checks::default())
}

/// How closely a run watches itself. The end-of-run audit and the bounds
/// at every bucket close run always; the bounds after every event only
/// when asked (they cost a scan of every pool per event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checks {
    /// Check the bounds after every event.
    pub every_event: bool,
}

impl Default for Checks {
    /// Per-event checks in debug builds (the test suites), as sim-core's
    /// own default.
    fn default() -> Self {
        Checks {
            every_event: cfg!(debug_assertions),
        }
    }
}

/// [`run`], with the per-event checks chosen by the caller (the CLI's
/// `--check-invariants`).
pub fn run_with<S: RowSink>(
    cfg: &WorldConfig,
    sink: S,
    checks: Checks,
) -> Result<RunOutput<S>, WorldError> {
    let mut world = World::new(cfg, sink).map_err(WorldError::Config)?;
    world.lines_each_bucket = checks.every_event;
    let limits = Limits {
        max_events: cfg.limits.max_events,
        max_events_at_instant: cfg.limits.max_events_at_instant,
        check_every_event: checks.every_event,
    };
    let mut sim = Simulation::new(world, limits);
    {
        let (world, sched) = sim.parts();
        world.start(sched);
    }
    let end = SimTime::ZERO.saturating_add(cfg.clock.duration);
    let fail = |failure: RunFailure| WorldError::Run {
        seed: cfg.seed,
        failure,
    };
    // Bucket by bucket, so a broken invariant found at a bucket close stops
    // the run there, in every build. A bucket longer than the run closes
    // with the run, its span the run's length.
    let mut at = SimTime::ZERO;
    while at < end {
        at = at.saturating_add(cfg.clock.bucket).min(end);
        sim.run_until(just_before(at)).map_err(|source| {
            let busiest = matches!(
                source,
                RunError::EventLimit { .. } | RunError::ClockStoodStill { .. }
            )
            .then(|| sim.model().busiest_events());
            fail(RunFailure::Engine { source, busiest })
        })?;
        sim.model_mut().close_bucket(at);
        if let Some(v) = &sim.model().sh.violation {
            return Err(fail(RunFailure::of(v)));
        }
    }
    sim.model().audit(end).map_err(fail)?;
    let events = sim.events_processed();
    let world = sim.into_model();
    let steps = world.steps.clone();
    let fan_out = world.topology().fan_out();
    let (sink, mut totals) = world.sh.rec.finish();
    totals.fan_out = fan_out;
    totals.load_rate = cfg.load.rate;
    totals.closed_loop = cfg.load.closed_loop.is_some();
    Ok(RunOutput {
        sink,
        totals,
        events,
        steps,
    })
}

/// The last instant before `t` (> 0): events up to it are the ones before
/// `t`, time being whole nanoseconds.
fn just_before(t: SimTime) -> SimTime {
    SimTime::from_nanos(t.as_nanos().saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::Discard;
    use sim_core::time::SimDuration;

    #[test]
    fn every_kind_of_event_has_one_name_generated_from_its_part() {
        let names: Vec<String> = (0..Event::KINDS).map(Event::name).collect();
        let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), Event::KINDS, "{names:?}");
        let e: Event = LoadEvent::RequestArrived.into();
        assert_eq!(Event::name(e.kind()), "load/RequestArrived");
        let e: Event = DependencyEvent::BackgroundArrived { dep: 0 }.into();
        assert_eq!(Event::name(e.kind()), "dependency/BackgroundArrived");
        assert_eq!(
            Event::name(Event::KINDS - 1),
            "dependency/BackgroundArrived"
        );
        let e = Event::TimelineStepDue { index: 0 };
        assert_eq!(Event::name(e.kind()), "TimelineStepDue");
    }

    #[test]
    fn pool_bounds_are_checked_at_every_bucket_close_without_per_event_checks() {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = SimDuration::from_secs(10);
        cfg.load.rate = 20.0;
        let world = World::new(&cfg, Discard::default()).unwrap();
        let limits = Limits {
            max_events: 1_000_000,
            check_every_event: false,
            ..Limits::default()
        };
        let mut sim = Simulation::new(world, limits);
        {
            let (world, sched) = sim.parts();
            world.start(sched);
        }
        sim.run_until(SimTime::from_nanos(1_500_000_000)).unwrap();
        assert!(sim.model().sh.violation.is_none());
        sim.model_mut().sh.links.pool(0, 0, 0).overfill_for_test();
        // Event by event (no per-event checks) up to the bucket's end:
        // nothing found; its close, at 2 s, finds the broken bound.
        let close = SimTime::from_nanos(2_000_000_000);
        while sim.scheduler().peek_time().is_some_and(|t| t < close) {
            sim.step().unwrap();
        }
        assert!(sim.model().sh.violation.is_none());
        sim.model_mut().close_bucket(close);
        let v = sim
            .model()
            .sh
            .violation
            .clone()
            .expect("found at the bucket close")
            .to_string();
        assert!(
            v.starts_with("at t+2s") && v.contains("pod 0: pool holds"),
            "{v}"
        );
    }

    #[test]
    fn deadline_lines_hold_what_is_live_not_what_was_armed() {
        // 2,000 requests/s against a 60 s gateway deadline and a 30 s
        // attempt timeout, most answered in milliseconds but a heavy tail
        // (Pareto, shape 0.5: 0.6 % take over 30 s) always holding an old
        // deadline at the front of each line: without sweeps the lines
        // would hold every deadline armed behind it (up to 120,000).
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = SimDuration::from_secs(90);
        cfg.load.rate = 2000.0;
        cfg.gateway.deadline = Some(SimDuration::from_secs(60));
        cfg.client.attempt_timeout = Some(SimDuration::from_secs(30));
        cfg.client.retry.max_retries = 0;
        cfg.service.pool.max_connections = 100_000;
        cfg.upstream.capacity = 100_000;
        cfg.upstream.latency = sim_core::dist::DistSpec::Pareto {
            scale: SimDuration::from_nanos(1_000_000),
            shape: 0.5,
        };
        let world = World::new(&cfg, Discard::default()).unwrap();
        let mut sim = Simulation::new(world, Limits::default());
        {
            let (world, sched) = sim.parts();
            world.start(sched);
        }
        let (mut held, mut live) = ((0, 0), (0, 0));
        for s in 1..=90 {
            sim.run_until(SimTime::from_nanos(s * 1_000_000_000))
                .unwrap();
            let w = sim.model();
            held.0 = held.0.max(w.parts.load.deadlines.len());
            held.1 = held.1.max(w.parts.clients[0].timeouts.len());
            live.0 = live.0.max(w.sh.reqs.live());
            live.1 = live.1.max(w.sh.reqs.live_attempts());
        }
        assert!(sim.model().sh.reqs.created() > 170_000);
        // About 1,000 live at a time (the tail's); held: at most twice the
        // most live plus the sweep floor of 1,024.
        assert!(live.0 > 500 && live.0 < 3000, "{live:?}");
        assert!(
            held.0 <= 2 * live.0 + 1025,
            "deadlines {held:?}, live {live:?}"
        );
        assert!(
            held.1 <= 2 * live.1 + 1025,
            "timeouts {held:?}, live {live:?}"
        );
    }
}
