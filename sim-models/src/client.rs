//! A call on one edge (a pod of the calling service to a dependency or a
//! service): attempts, connections, timeouts, retries, hedges, and the
//! policies around them (budget, breaker, throttle, pushback).
//!
//! An attempt passes the client's gates (adaptive throttle, circuit
//! breaker, rate limiter), asks its pod's pool for a connection (reusing
//! an idle one, dialling a new one, or waiting in line), sends, and ends in
//! exactly one way: an answer, its timeout, a failed dial, the pool's
//! acquire timeout, or being cancelled by its call (another hedge won, the
//! deadline passed, the pod restarted). An answer that comes back after its
//! attempt ended is counted as late and never as a success.

use crate::config::{ClientConfig, ConfigError, PoolConfig, Scope};
use crate::graph::{Edge, Target, Topology, stream_name};
use crate::policy::adaptive_backoff::AdaptiveBackoff;
use crate::policy::budget::RetryBudget;
use crate::policy::gate::{Gate, build_gates};
use crate::world::{compile, compile_opt};
use rand::RngExt;
use sim_core::deadlines::DeadlineLine;
use sim_core::dist::Dist;
use sim_core::rng::{RngStreams, SimRng};
use sim_core::sim::Scheduler;
use sim_core::time::{SimDuration, SimTime};

use crate::config::{RetryAfterMode, TimeoutStart};
use crate::load::LoadEvent;
use crate::outcome::{AttemptOutcome, Pushback, Reason};
use crate::pods::{PodState, waiter_is_live};
use crate::policy::breaker::BreakerState;
use crate::policy::budget::{AttemptReport, RetryCause};
use crate::policy::gate::{Admit, AttemptEnd};
use crate::pool::{Acquire, Waiter};
use crate::recorder::{AttemptRecord, Count, Latency, Level, RowSink, WorldEvent};
use crate::request::{AttRef, AttemptPhase, CallPhase, CallRef, Phase, ReqRef};
use crate::upstream::{DependencyEvent, Status};
use crate::world::{Event, World, cross};

crate::part_events! {
    /// What happens to a client's calls and attempts.
    pub enum ClientEvent {
        /// The call's total deadline across attempts passed.
        CallDeadlinePassed {
            /// The call.
            call: CallRef,
        },
        /// A new connection finished setting up.
        ConnectionEstablished {
            /// The edge.
            edge: u32,
            /// The pod.
            pod: u32,
            /// The pod's incarnation when dialling began.
            epoch: u32,
            /// The attempt it was dialled for.
            att: AttRef,
        },
        /// A new connection was refused or its connect timeout passed.
        ConnectionFailed {
            /// The edge.
            edge: u32,
            /// The pod.
            pod: u32,
            /// The pod's incarnation when dialling began.
            epoch: u32,
            /// The attempt it was dialled for.
            att: AttRef,
            /// The far end refused it (else the connect timeout passed).
            refused: bool,
        },
        /// The pool's acquire timeout passed for a waiting attempt.
        PoolWaitTimedOut {
            /// The attempt.
            att: AttRef,
        },
        /// The earliest deadline in the client's timeout line is due: the
        /// attempts whose per-attempt timeout passed time out.
        TimeoutsDue {
            /// The edge whose line is due.
            edge: u32,
        },
        /// An attempt's wait for the client's own rate limiter is over.
        RateLimiterWaited {
            /// The attempt.
            att: AttRef,
        },
        /// The delay before a retry is over.
        RetryDelayElapsed {
            /// The call.
            call: CallRef,
            /// The number of the attempt that just failed.
            attempt: u32,
        },
        /// Time to send the next hedge.
        HedgeDue {
            /// The call.
            call: CallRef,
            /// The number the hedge will have.
            number: u32,
        },
        /// The far end's answer crossed the network back to the pod.
        ResponseReachedPod {
            /// The attempt.
            att: AttRef,
            /// The answer.
            status: Status,
        },
    }
}

fn is_active(phase: AttemptPhase) -> bool {
    phase != AttemptPhase::Done
}

/// Whether the timeout line's deadline `at` for `att` is still wanted: the
/// attempt lives and was armed with it.
#[inline]
fn timeout_is_live(reqs: &crate::request::Requests, at: SimTime, att: AttRef) -> bool {
    reqs.att(att).is_some_and(|a| a.timeout_at == Some(at))
}

/// What an upstream answer means to the client.
#[inline]
fn outcome_of(status: Status) -> AttemptOutcome {
    match status {
        Status::Ok => AttemptOutcome::Success,
        Status::Error(code) if (400..500).contains(&code) => AttemptOutcome::ClientError(code),
        Status::Error(code) => AttemptOutcome::ServerError(code, Pushback::None),
        Status::Rejected(pushback) => AttemptOutcome::ServerError(503, pushback),
        Status::TooManyRequests(after) => AttemptOutcome::RateLimited(after),
        Status::Reset => AttemptOutcome::ConnectFailure,
    }
}

/// Whether request `id`'s attempts are in a sample of `fraction`, decided
/// by a hash of (seed, id) so the same requests are sampled on every run.
fn sampled(id: u64, seed: u64, fraction: f64) -> bool {
    if fraction >= 1.0 {
        return true;
    }
    let mut h = sim_core::rng::Fnv1a::new();
    h.write(&seed.to_le_bytes());
    h.write(&id.to_le_bytes());
    let z = sim_core::rng::splitmix64(&mut h.finish());
    ((z >> 11) as f64 / (1u64 << 53) as f64) < fraction
}

/// What a finished attempt was.
#[derive(Clone, Copy, Debug)]
struct Closed {
    number: u32,
    started: SimTime,
    retry_cost: u32,
}

/// The policies with state of one client (a pod, or the whole service
/// when their scope is global): the retry budget, and the gates every
/// attempt passes (throttle, breaker, rate limiter).
pub(crate) struct PolicySet {
    pub(crate) budget: Option<Box<dyn RetryBudget>>,
    pub(crate) gates: Vec<Box<dyn Gate>>,
    pub(crate) adaptive: Option<AdaptiveBackoff>,
}

impl PolicySet {
    pub(crate) fn new(c: &ClientConfig) -> Self {
        PolicySet {
            budget: c.budget.as_ref().map(|b| b.build()),
            gates: build_gates(c),
            adaptive: c.retry.adaptive.as_ref().map(AdaptiveBackoff::new),
        }
    }
}

/// The policy set of `pod`'s client among `policies` (one in all when
/// their scope is global; one per pod, made when first needed, else).
#[inline]
pub(crate) fn policy_of<'a>(
    policies: &'a mut Vec<PolicySet>,
    client: &ClientConfig,
    pod: u32,
) -> &'a mut PolicySet {
    if client.scope == Scope::Global {
        return &mut policies[0];
    }
    let i = pod as usize;
    while policies.len() <= i {
        policies.push(PolicySet::new(client));
    }
    &mut policies[i]
}

/// An edge's client: the caller's policy for it, the state its policies
/// keep, and its own draws (connections, backoff, throttling).
pub struct Client {
    /// The policy in force (a deploy replaces it).
    pub(crate) cfg: ClientConfig,
    /// The caller's pool settings for this edge.
    pub(crate) pool: PoolConfig,
    /// The calling service, and this edge's pool among its pods' pools.
    pub(crate) from: u32,
    pub(crate) local: u32,
    /// What it calls.
    pub(crate) to: Target,
    pub(crate) connect_time: Dist,
    /// Network delays there and back.
    pub(crate) there: Option<Dist>,
    pub(crate) back: Option<Dist>,
    /// Budgets and gates: one set per pod, or one in all.
    pub(crate) policies: Vec<PolicySet>,
    pub(crate) backoff_rng: SimRng,
    pub(crate) throttle_rng: SimRng,
    /// Attempt timeouts (a fixed delay, so armed in order), delivered by
    /// one wake-up at the earliest instead of a heap entry each.
    pub(crate) timeouts: DeadlineLine<AttRef>,
}

impl Client {
    /// The edge's client as configured, its policies fresh.
    pub(crate) fn new(
        edge: &Edge,
        topo: &Topology,
        streams: &RngStreams,
    ) -> Result<Self, Vec<ConfigError>> {
        let pods = topo.services[edge.from as usize].cfg.pods;
        // Where each leg is configured: the single tier's network section,
        // or the call's own fields.
        let at = |leg: &str| match (&edge.suffix, leg) {
            (None, "there") => "network.pod_to_upstream".to_string(),
            (None, _) => "network.upstream_to_pod".to_string(),
            (Some(_), _) => format!("{}.{leg}", edge.path),
        };
        let connect_at = match edge.suffix {
            None => "service.pool.connect_time".to_string(),
            Some(_) => format!("{}.pool.connect_time", edge.path),
        };
        Ok(Client {
            connect_time: compile(&edge.pool.connect_time, &connect_at)?,
            there: compile_opt(&edge.there, &at("there"))?,
            back: compile_opt(&edge.back, &at("back"))?,
            policies: match edge.client.scope {
                Scope::Global => vec![PolicySet::new(&edge.client)],
                Scope::Pod => (0..pods).map(|_| PolicySet::new(&edge.client)).collect(),
            },
            backoff_rng: streams.stream(stream_name("client/backoff", &edge.suffix).as_str()),
            throttle_rng: streams.stream(stream_name("client/throttle", &edge.suffix).as_str()),
            timeouts: DeadlineLine::new(),
            cfg: edge.client.clone(),
            pool: edge.pool.clone(),
            from: edge.from,
            local: edge.local,
            to: edge.to,
        })
    }
}

impl<S: RowSink> World<S> {
    /// Routes the client's events to their handlers.
    pub(crate) fn on_client_event(&mut self, e: ClientEvent, sched: &mut Scheduler<Event>) {
        match e {
            ClientEvent::CallDeadlinePassed { call } => self.on_call_deadline(call, sched),
            ClientEvent::ConnectionEstablished {
                edge,
                pod,
                epoch,
                att,
            } => self.on_connection_established(edge, pod, epoch, att, sched),
            ClientEvent::ConnectionFailed {
                edge,
                pod,
                epoch,
                att,
                refused,
            } => self.on_connection_failed(edge, pod, epoch, att, refused, sched),
            ClientEvent::PoolWaitTimedOut { att } => self.on_pool_wait_timed_out(att, sched),
            ClientEvent::TimeoutsDue { edge } => self.on_timeouts_due(edge, sched),
            ClientEvent::RateLimiterWaited { att } => self.on_rate_limiter_waited(att, sched),
            ClientEvent::RetryDelayElapsed { call, attempt } => {
                self.on_retry_delay_elapsed(call, attempt, sched)
            }
            ClientEvent::HedgeDue { call, number } => self.on_hedge_due(call, number, sched),
            ClientEvent::ResponseReachedPod { att, status } => {
                self.on_response_reached_pod(att, status, sched)
            }
        }
    }

    /// The pod of `edge`'s caller that `att` runs on, and its pool.
    #[inline]
    fn pool_of(&mut self, edge: u32, pod: u32) -> &mut crate::pool::Pool {
        let c = &self.clients[edge as usize];
        let (from, local) = (c.from as usize, c.local as usize);
        &mut self.services[from].pods[pod as usize].pools[local]
    }

    /// The caller's pod on `edge`.
    #[inline]
    fn caller_pod(&mut self, edge: u32, pod: u32) -> &mut crate::pods::Pod {
        let from = self.clients[edge as usize].from as usize;
        &mut self.services[from].pods[pod as usize]
    }

    /// Brings the levels up to date with `edge`'s pool on `pod`.
    #[inline]
    fn sync_edge_pool(&mut self, edge: u32, pod: u32, now: SimTime) {
        let c = &self.clients[edge as usize];
        let (from, local) = (c.from, c.local);
        self.sync_pool(from, pod, local, edge, now);
    }

    /// A pool wait on `edge`'s pool of `pod`: in the totals, and in the
    /// pod's group when the pod is the entry service's.
    #[inline]
    fn record_pool_wait(&mut self, edge: u32, pod: u32, d: SimDuration) {
        let group = (self.clients[edge as usize].from == self.topo.entry).then_some(pod);
        self.rec.pool_wait(group, d);
    }

    /// The worker starts a call on `edge`: arms the total deadline, tells
    /// the budget, starts the first attempt (and schedules hedges).
    pub(crate) fn begin_call(&mut self, call: CallRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let c = stale!(self.reqs.call(call));
        let (edge, pod) = (c.edge, c.pod);
        let own = self.clients[edge as usize]
            .cfg
            .total_deadline
            .map(|d| now.saturating_add(d));
        // A deadline the request's caller propagated caps the call's own
        // (`new_call` left it in `deadline`).
        let inherited = c.deadline;
        let deadline = match (own, inherited) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let c = stale!(self.reqs.call_mut(call));
        if let Some(at) = deadline {
            c.deadline = Some(at);
            c.deadline_timer = sched
                .schedule_at(at.max(now), ClientEvent::CallDeadlinePassed { call }.into())
                .ok();
        }
        self.rec.node_call_started(edge);
        if let Some(b) = self.policy(edge, pod).budget.as_mut() {
            b.on_request(now);
        }
        self.start_attempt(call, false, sched);
        self.schedule_hedge(call, sched);
    }

    /// Schedules the next hedge of `call`, if hedging and attempts are left.
    fn schedule_hedge(&mut self, call: CallRef, sched: &mut Scheduler<Event>) {
        let Some(c) = self.reqs.call(call) else {
            return; // the call ended while starting
        };
        let Some(h) = self.clients[c.edge as usize].cfg.hedging.clone() else {
            return; // not hedging
        };
        let c = stale!(self.reqs.call_mut(call));
        if c.phase != CallPhase::Calling || c.attempts >= h.max_attempts {
            return;
        }
        if let Some(t) = c.aux_timer.take() {
            sched.cancel(t);
        }
        let number = c.attempts + 1;
        if h.delay.is_zero() {
            self.start_attempt(call, true, sched);
            self.schedule_hedge(call, sched);
        } else {
            c.aux_timer =
                Some(sched.schedule_in(h.delay, ClientEvent::HedgeDue { call, number }.into()));
        }
    }

    pub(crate) fn on_hedge_due(
        &mut self,
        call: CallRef,
        number: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let c = stale!(self.reqs.call_mut(call));
        if c.phase != CallPhase::Calling || c.attempts + 1 != number {
            return;
        }
        c.aux_timer = None;
        self.start_attempt(call, true, sched);
        self.schedule_hedge(call, sched);
    }

    /// Starts the next attempt of `call` if the client's gates let it;
    /// when they refuse the only attempt the call would have, the call
    /// ends.
    fn start_attempt(&mut self, call: CallRef, hedge: bool, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let c = stale!(self.reqs.call(call));
        let (req, edge, number, deadline, live) =
            (c.req, c.edge, c.attempts + 1, c.deadline, c.live_count());
        let (pod, epoch) = (c.pod, c.pod_epoch);
        let min_budget = self.clients[edge as usize].cfg.min_attempt_budget;
        if let Some(d) = deadline
            && !min_budget.is_zero()
            && now.saturating_add(min_budget) >= d
        {
            if live == 0 {
                self.finish_call(call, Reason::DeadlineExceeded, sched);
            }
            return;
        }
        let wait = match self.ask_gates(edge, pod, now) {
            Ok(wait) => wait,
            Err((reason, counter)) => {
                self.rec.count(counter, 1);
                if live == 0 {
                    self.finish_call(call, reason, sched);
                }
                return;
            }
        };
        let att = self
            .reqs
            .new_attempt(call, req, edge, number, hedge, pod, epoch, now);
        let c = stale!(self.reqs.call_mut(call));
        c.attempts = number;
        c.phase = CallPhase::Calling;
        if !c.add_live(att) {
            self.violated(now, || {
                "more than five attempts of one call in progress".into()
            });
            return;
        }
        let cost = std::mem::take(&mut c.pending_retry_cost);
        let counter = match (number, hedge) {
            (1, _) => Count::AttemptsFirst,
            (_, true) => Count::AttemptsHedge,
            _ => Count::AttemptsRetry,
        };
        self.rec.count(counter, 1);
        self.rec.node_attempt_started(edge, number > 1);
        if !hedge && number > 1 {
            let which = match number {
                2 => Count::Retry1,
                3 => Count::Retry2,
                4 => Count::Retry3,
                _ => Count::Retry4Plus,
            };
            self.rec.count(which, 1);
        }
        let client = &self.clients[edge as usize].cfg;
        let timeout = client.attempt_timeout;
        let arm_now = client.timeout_starts == TimeoutStart::AttemptStart;
        if let Some(b) = self.policy(edge, pod).budget.as_mut() {
            b.on_attempt_start(now, cost);
        }
        stale!(self.reqs.att_mut(att)).retry_cost = cost;
        if arm_now && let Some(t) = timeout {
            self.arm_timeout(att, edge, t, sched);
        }
        let a = stale!(self.reqs.att_mut(att));
        if !wait.is_zero() {
            a.phase = AttemptPhase::RateLimited;
            a.aux_timer =
                Some(sched.schedule_in(wait, ClientEvent::RateLimiterWaited { att }.into()));
            self.rec.count(Count::RateLimiterWaits, 1);
            return;
        }
        self.acquire_connection(att, sched);
    }

    /// Asks `pod`'s gates on `edge`, in order, whether an attempt may go:
    /// the longest wait asked for, or the first refusal (its reason and
    /// counter). Breaker moves are shown as they happen.
    fn ask_gates(
        &mut self,
        edge: u32,
        pod: u32,
        now: SimTime,
    ) -> Result<SimDuration, (Reason, Count)> {
        let mut wait = SimDuration::ZERO;
        let mut moves = Vec::new();
        let mut refused = None;
        let client = &mut self.clients[edge as usize];
        let set = policy_of(&mut client.policies, &client.cfg, pod);
        for gate in set.gates.iter_mut() {
            let draw = if gate.draws() {
                client.throttle_rng.random()
            } else {
                0.0
            };
            let before = gate.breaker_state();
            let answer = gate.admit(now, draw);
            if let (Some(from), Some(to)) = (before, gate.breaker_state())
                && from != to
            {
                moves.push((from, to));
            }
            match answer {
                Admit::Go => {}
                Admit::After(d) => wait = wait.max(d),
                Admit::Refuse { reason, counter } => {
                    refused = Some((reason, counter));
                    break;
                }
            }
        }
        for (from, to) in moves {
            self.breaker_moved(edge, pod, from, to, now);
        }
        match refused {
            Some(r) => Err(r),
            None => Ok(wait),
        }
    }

    fn breaker_moved(
        &mut self,
        edge: u32,
        pod: u32,
        from: BreakerState,
        to: BreakerState,
        now: SimTime,
    ) {
        if to == BreakerState::Open {
            self.rec.count(Count::BreakerOpened, 1);
        }
        let mut whose = match self.clients[edge as usize].cfg.scope {
            crate::config::Scope::Global => "global breaker".to_string(),
            crate::config::Scope::Pod => format!("pod {pod} breaker"),
        };
        if self.cfg.is_graph() {
            whose = format!("{} {whose}", self.topo.edges[edge as usize].name);
        }
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "breaker",
            detail: format!("{whose}: {} -> {}", from.name(), to.name()),
        });
        self.sync_breaker_levels(now);
    }

    /// The breaker levels: breakers open and half open on every edge.
    pub(crate) fn sync_breaker_levels(&mut self, now: SimTime) {
        let (mut open, mut half) = (0, 0);
        for state in self.clients.iter().flat_map(|c| {
            c.policies
                .iter()
                .flat_map(|p| p.gates.iter().filter_map(|g| g.breaker_state()))
        }) {
            match state {
                BreakerState::Open => open += 1,
                BreakerState::HalfOpen => half += 1,
                BreakerState::Closed => {}
            }
        }
        self.rec.level(Level::BreakersOpen, now, open);
        self.rec.level(Level::BreakersHalfOpen, now, half);
    }

    pub(crate) fn on_rate_limiter_waited(&mut self, att: AttRef, sched: &mut Scheduler<Event>) {
        let a = stale!(self.reqs.att_mut(att));
        if a.phase != AttemptPhase::RateLimited {
            return;
        }
        a.aux_timer = None;
        self.acquire_connection(att, sched);
    }

    fn acquire_connection(&mut self, att: AttRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let a = stale!(self.reqs.att_mut(att));
        a.wait_started = now;
        let (pod, edge) = (a.pod, a.edge);
        match self.pool_of(edge, pod).acquire(now) {
            Acquire::Reused => {
                self.record_pool_wait(edge, pod, SimDuration::ZERO);
                self.connection_in_hand(att, sched);
            }
            Acquire::Dial => {
                self.record_pool_wait(edge, pod, SimDuration::ZERO);
                self.set_phase(att, AttemptPhase::Connecting);
                self.dial(edge, pod, att, sched);
            }
            Acquire::Wait => {
                self.set_phase(att, AttemptPhase::WaitingPool);
                let c = &self.clients[edge as usize];
                let (from, local) = (c.from as usize, c.local as usize);
                let reqs = &self.reqs;
                let p = &mut self.services[from].pods[pod as usize];
                let epoch = p.epoch;
                p.pools[local].wait(Waiter { att, since: now }, |w| {
                    waiter_is_live(reqs, pod, epoch, w)
                });
                if let Some(t) = self.clients[edge as usize].pool.acquire_timeout {
                    let timer = sched.schedule_in(t, ClientEvent::PoolWaitTimedOut { att }.into());
                    if let Some(a) = self.reqs.att_mut(att) {
                        a.aux_timer = Some(timer);
                    }
                }
            }
        }
        self.sync_edge_pool(edge, pod, now);
    }

    fn set_phase(&mut self, att: AttRef, phase: AttemptPhase) {
        if let Some(a) = self.reqs.att_mut(att) {
            a.phase = phase;
        }
    }

    /// Dials a new connection on `pod` for `att`.
    fn dial(&mut self, edge: u32, pod: u32, att: AttRef, sched: &mut Scheduler<Event>) {
        let c = &self.clients[edge as usize];
        let (from, local) = (c.from as usize, c.local as usize);
        let p = &mut self.services[from].pods[pod as usize];
        let epoch = p.epoch;
        let setup = c.connect_time.sample(&mut p.connect_rng);
        let failure = self.cfg.network.connect_failure;
        let refused = failure > 0.0 && p.connect_rng.random::<f64>() < failure;
        let refused = refused || self.far_end_full(edge, sched.now());
        let timeout = self.clients[edge as usize].cfg.connect_timeout;
        // A refusal comes back when the handshake would have; either way
        // the connect timeout may give up first.
        let failed_at = if refused {
            self.services[from].pods[pod as usize].pools[local].refuse();
            Some(timeout.map_or(setup, |t| setup.min(t)))
        } else {
            timeout.filter(|&t| setup > t)
        };
        let event = match failed_at {
            Some(_) => ClientEvent::ConnectionFailed {
                edge,
                pod,
                epoch,
                att,
                refused,
            }
            .into(),
            None => ClientEvent::ConnectionEstablished {
                edge,
                pod,
                epoch,
                att,
            }
            .into(),
        };
        sched.schedule_in(failed_at.unwrap_or(setup), event);
    }

    /// Whether the far end's connection limit turns a new dial away: the
    /// connections open or being set up to that dependency (refused dials
    /// left out), this one included, exceed it.
    fn far_end_full(&mut self, edge: u32, now: SimTime) -> bool {
        let Target::Dependency(d) = self.clients[edge as usize].to else {
            return false;
        };
        let Some(limit) = self.dependencies[d as usize].cfg.max_connections else {
            return false;
        };
        let mut open = 0;
        for c in &self.clients {
            if c.to != Target::Dependency(d) {
                continue;
            }
            for p in &mut self.services[c.from as usize].pods {
                let pool = &mut p.pools[c.local as usize];
                pool.expire_idle(now);
                open += pool.open();
            }
        }
        open > limit
    }

    pub(crate) fn att_is(&self, att: AttRef, phase: AttemptPhase) -> bool {
        self.reqs.att(att).is_some_and(|a| a.phase == phase)
    }

    pub(crate) fn on_connection_established(
        &mut self,
        edge: u32,
        pod: u32,
        epoch: u32,
        att: AttRef,
        sched: &mut Scheduler<Event>,
    ) {
        if self.caller_pod(edge, pod).epoch != epoch {
            return; // the pod restarted meanwhile; its pool is new
        }
        let now = sched.now();
        self.pool_of(edge, pod).established();
        if self.att_is(att, AttemptPhase::Connecting) {
            self.pool_of(edge, pod).hand_over();
            self.connection_in_hand(att, sched);
        } else {
            // Whoever dialled it gave up: the next in line gets it.
            self.connection_available(edge, pod, now, sched);
        }
        // A multiplexed connection brings more streams: waiters take them.
        while self.pool_of(edge, pod).free_streams() > 0 {
            let Some(w) = self.pop_waiter(edge, pod, now, sched) else {
                break; // nobody waiting
            };
            self.pool_of(edge, pod).hand_over();
            self.connection_in_hand(w.att, sched);
        }
        self.sync_edge_pool(edge, pod, now);
    }

    pub(crate) fn on_connection_failed(
        &mut self,
        edge: u32,
        pod: u32,
        epoch: u32,
        att: AttRef,
        refused: bool,
        sched: &mut Scheduler<Event>,
    ) {
        if self.caller_pod(edge, pod).epoch != epoch {
            return;
        }
        let now = sched.now();
        let pool = self.pool_of(edge, pod);
        if refused {
            pool.refusal_arrived();
        } else {
            pool.dialled();
        }
        if self.att_is(att, AttemptPhase::Connecting) {
            self.end_attempt(att, AttemptOutcome::ConnectFailure, sched);
        }
        self.slot_freed(edge, pod, sched);
        self.sync_edge_pool(edge, pod, now);
    }

    /// A connection is free on `pod`: the next live waiter gets it, or it
    /// goes idle.
    fn connection_available(
        &mut self,
        edge: u32,
        pod: u32,
        now: SimTime,
        sched: &mut Scheduler<Event>,
    ) {
        if let Some(w) = self.pop_waiter(edge, pod, now, sched) {
            self.pool_of(edge, pod).hand_over();
            self.connection_in_hand(w.att, sched);
        } else {
            self.pool_of(edge, pod).put_idle(now);
        }
    }

    /// A connection slot on `pod` opened up (a connection closed or a dial
    /// failed): the next live waiter dials a new one.
    fn slot_freed(&mut self, edge: u32, pod: u32, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let pool = self.pool_of(edge, pod);
        if !pool.has_room() || pool.waiters() == 0 {
            return;
        }
        if let Some(w) = self.pop_waiter(edge, pod, now, sched) {
            self.pool_of(edge, pod).try_dial();
            self.set_phase(w.att, AttemptPhase::Connecting);
            self.dial(edge, pod, w.att, sched);
        }
    }

    /// Takes the next live waiter out of `pod`'s line, ending its wait.
    fn pop_waiter(
        &mut self,
        edge: u32,
        pod: u32,
        now: SimTime,
        sched: &mut Scheduler<Event>,
    ) -> Option<Waiter> {
        let c = &self.clients[edge as usize];
        let (from, local) = (c.from as usize, c.local as usize);
        let p = &mut self.services[from].pods[pod as usize];
        let epoch = p.epoch;
        let reqs = &self.reqs;
        let w = p.pools[local].next_waiter(|w| waiter_is_live(reqs, pod, epoch, w))?;
        if let Some(a) = self.reqs.att_mut(w.att) {
            if let Some(t) = a.aux_timer.take() {
                sched.cancel(t);
            }
            a.pool_wait += now - w.since;
        }
        self.record_pool_wait(edge, pod, now - w.since);
        Some(w)
    }

    /// The attempt holds a connection: send the request, to the
    /// dependency or to the service called.
    fn connection_in_hand(&mut self, att: AttRef, sched: &mut Scheduler<Event>) {
        let a = stale!(self.reqs.att_mut(att));
        a.phase = AttemptPhase::InFlight;
        let edge = a.edge;
        let client = &self.clients[edge as usize];
        let timeout = client.cfg.attempt_timeout;
        let arm_now = client.cfg.timeout_starts == TimeoutStart::ConnectionAcquired;
        if arm_now && let Some(t) = timeout {
            self.arm_timeout(att, edge, t, sched);
        }
        let d = self.net.delay(&self.clients[edge as usize].there);
        match self.clients[edge as usize].to {
            Target::Dependency(_) => {
                cross(sched, d, DependencyEvent::Received { att, edge }.into())
            }
            Target::Service(s) => self.send_to_service(att, s, d, sched),
        }
    }

    /// The deadline an attempt carries to the upstream, when propagated:
    /// the earlier of the call's deadline and the attempt's own timeout.
    pub(crate) fn propagated_deadline(&self, att: AttRef) -> Option<SimTime> {
        let a = self.reqs.att(att)?;
        let client = &self.clients[a.edge as usize].cfg;
        if !client.propagate_deadline {
            return None;
        }
        let call = self.reqs.call(a.call).and_then(|c| c.deadline);
        let own = client.attempt_timeout.map(|t| a.started.saturating_add(t));
        match (call, own) {
            (Some(c), Some(o)) => Some(c.min(o)),
            (c, o) => c.or(o),
        }
    }

    pub(crate) fn on_response_reached_pod(
        &mut self,
        att: AttRef,
        status: Status,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let Some(a) = self.reqs.att_mut(att) else {
            self.rec.count(Count::LateResponses, 1);
            return;
        };
        if a.phase != AttemptPhase::InFlight {
            self.rec.count(Count::LateResponses, 1);
            return;
        }
        a.job = None;
        a.child = None;
        let (pod, edge) = (a.pod, a.edge);
        let leak_fraction = self.clients[edge as usize].pool.leak_fraction;
        let p = self.caller_pod(edge, pod);
        let leak = leak_fraction > 0.0 && p.leak_rng.random::<f64>() < leak_fraction;
        if self.pool_of(edge, pod).release(leak) {
            self.connection_available(edge, pod, now, sched);
        }
        self.end_attempt(att, outcome_of(status), sched);
        self.sync_edge_pool(edge, pod, now);
    }

    /// Arms `att`'s timeout, `t` from now, in its edge's timeout line.
    fn arm_timeout(
        &mut self,
        att: AttRef,
        edge: u32,
        t: SimDuration,
        sched: &mut Scheduler<Event>,
    ) {
        let at = sched.now().saturating_add(t);
        stale!(self.reqs.att_mut(att)).timeout_at = Some(at);
        // Answered attempts' timeouts pile up behind a live one: swept once
        // they outnumber twice the attempts alive (on every edge, a bound
        // on this one's), so memory follows the attempts in flight.
        let live = self.reqs.live_attempts();
        let reqs = &self.reqs;
        self.clients[edge as usize].timeouts.arm(
            at,
            att,
            live,
            |at, &att| timeout_is_live(reqs, at, att),
            sched,
            ClientEvent::TimeoutsDue { edge }.into(),
        );
    }

    /// Makes sure a wake-up is due at the earliest live deadline of the
    /// timeout line.
    fn wake_for_timeouts(&mut self, edge: u32, sched: &mut Scheduler<Event>) {
        let reqs = &self.reqs;
        self.clients[edge as usize].timeouts.schedule_wake(
            sched,
            |at, &att| timeout_is_live(reqs, at, att),
            ClientEvent::TimeoutsDue { edge }.into(),
        );
    }

    /// The timeout line's wake-up: every attempt whose deadline is now
    /// times out, in the order the deadlines were armed.
    fn on_timeouts_due(&mut self, edge: u32, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        self.clients[edge as usize].timeouts.woken();
        while let Some((at, att)) = self.clients[edge as usize].timeouts.pop_due(now) {
            if timeout_is_live(&self.reqs, at, att) {
                self.on_attempt_timed_out(att, sched);
            }
        }
        self.clients[edge as usize].timeouts.delivered();
        self.wake_for_timeouts(edge, sched);
    }

    fn on_attempt_timed_out(&mut self, att: AttRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let a = stale!(self.reqs.att_mut(att));
        if !is_active(a.phase) {
            return;
        }
        a.timeout_at = None;
        self.release_attempt(att, now, sched);
        self.end_attempt(att, AttemptOutcome::Timeout, sched);
    }

    pub(crate) fn on_pool_wait_timed_out(&mut self, att: AttRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        if !self.att_is(att, AttemptPhase::WaitingPool) {
            return;
        }
        if let Some(a) = self.reqs.att_mut(att) {
            a.aux_timer = None;
        }
        self.release_attempt(att, now, sched);
        self.end_attempt(att, AttemptOutcome::PoolTimeout, sched);
    }

    /// Gives back what an attempt being cut short holds: its place in line,
    /// or its connection (closed, and the dependency told if cancellation
    /// propagates). A dial in progress carries on for others. An attempt
    /// from a pod's previous life touches nothing: that pool is gone. A
    /// request it made at another service carries on, for nobody.
    fn release_attempt(&mut self, att: AttRef, now: SimTime, sched: &mut Scheduler<Event>) {
        let a = stale!(self.reqs.att_mut(att));
        let (phase, pod, epoch, job, since, edge) = (
            a.phase,
            a.pod,
            a.pod_epoch,
            a.job.take(),
            a.wait_started,
            a.edge,
        );
        let child = a.child.take();
        match phase {
            AttemptPhase::WaitingPool => a.pool_wait += now - since,
            AttemptPhase::InFlight => a.late = true,
            _ => {}
        }
        if let (Some(job), Target::Dependency(d)) = (job, self.clients[edge as usize].to)
            && self.dependencies[d as usize].upstream.abandon(job, sched)
        {
            self.rec.count(Count::UpstreamCancelled, 1);
            self.sync_upstream_levels(d, now);
        }
        if let (Some(child), Target::Service(s)) = (child, self.clients[edge as usize].to)
            && self.services[s as usize].cfg.cancellation
        {
            // The service learns its caller left (gRPC's cancellation):
            // it stops, and so do its own calls, down the graph.
            if let Some(q) = self.reqs.get_mut(child) {
                q.caller_gone = true;
            }
            self.complete_request(child, Reason::Abandoned, sched);
        }
        let same_life = self.caller_pod(edge, pod).epoch == epoch;
        match phase {
            AttemptPhase::WaitingPool => {
                if same_life {
                    self.pool_of(edge, pod).waiter_left();
                }
                self.record_pool_wait(edge, pod, now - since);
            }
            AttemptPhase::InFlight if same_life => {
                let pool = self.pool_of(edge, pod);
                if pool.multiplexed() {
                    // The stream is reset; its connection carries on.
                    pool.release(false);
                    self.connection_available(edge, pod, now, sched);
                } else {
                    pool.close_in_use();
                    self.slot_freed(edge, pod, sched);
                }
            }
            _ => {}
        }
        if same_life {
            self.sync_edge_pool(edge, pod, now);
        }
    }

    /// Ends an attempt's bookkeeping: timers, the active count, its latency
    /// when it ended with an outcome of its own (not `Cancelled`), its
    /// record for the attempts table; forgets it.
    fn close_attempt(
        &mut self,
        att: AttRef,
        outcome: AttemptOutcome,
        now: SimTime,
        sched: &mut Scheduler<Event>,
    ) -> Option<Closed> {
        let Some(a) = self.reqs.att_mut(att) else {
            self.violated(now, || "an attempt ended twice".into());
            return None;
        };
        // Its timeout, if armed, stays in the line and is stale from now.
        a.timeout_at = None;
        if let Some(t) = a.aux_timer.take() {
            sched.cancel(t);
        }
        a.phase = AttemptPhase::Done;
        let closed = Closed {
            number: a.number,
            started: a.started,
            retry_cost: a.retry_cost,
        };
        let (req, call, edge, hedge, pod, pool_wait, late) =
            (a.req, a.call, a.edge, a.hedge, a.pod, a.pool_wait, a.late);
        self.reqs.remove_attempt(att);
        if let Some(b) = self.policy(edge, pod).budget.as_mut() {
            b.on_attempt_closed(now, closed.retry_cost);
        }
        if let Some(c) = self.reqs.call_mut(call) {
            c.remove_live(att);
        }
        self.rec.count(Count::ended(outcome), 1);
        if outcome != AttemptOutcome::Cancelled {
            let which = if closed.number == 1 {
                Latency::FirstAttempt
            } else {
                Latency::Retry
            };
            self.rec.latency(which, now - closed.started);
        }
        self.rec
            .node_attempt_ended(edge, outcome, now - closed.started);
        let sample = self.rec.sink().attempt_sample();
        let id = || self.reqs.get(req).map_or(u64::MAX, |q| q.id);
        if sample > 0.0 && sampled(id(), self.cfg.seed, sample) {
            self.rec.sink_mut().attempt(AttemptRecord {
                request: id(),
                attempt: closed.number,
                hedge,
                pod,
                start: closed.started,
                end: now,
                pool_wait,
                outcome: outcome.name(),
                late,
            });
        }
        Some(closed)
    }

    /// An attempt ended with `outcome`: tell the policies, then finish the
    /// call, retry, or hedge.
    fn end_attempt(&mut self, att: AttRef, outcome: AttemptOutcome, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let (call, edge, pod) = stale!(self.reqs.att(att).map(|a| (a.call, a.edge, a.pod)));
        let closed = stale!(self.close_attempt(att, outcome, now, sched));
        let success = outcome == AttemptOutcome::Success;
        let retryable = self.clients[edge as usize]
            .cfg
            .retry
            .retry_on
            .iter()
            .any(|r| r.matches(outcome));
        let set = self.policy(edge, pod);
        if let Some(b) = set.budget.as_mut() {
            b.on_result(
                now,
                AttemptReport {
                    success,
                    qualified_failure: !success && retryable,
                    retry_cost: closed.retry_cost,
                },
            );
        }
        if let Some(a) = set.adaptive.as_mut() {
            a.record(!success);
        }
        let end = AttemptEnd {
            outcome,
            duration: now - closed.started,
        };
        let mut moves = Vec::new();
        for gate in set.gates.iter_mut() {
            let before = gate.breaker_state();
            gate.on_attempt_end(now, &end);
            if let (Some(from), Some(to)) = (before, gate.breaker_state())
                && from != to
            {
                moves.push((from, to));
            }
        }
        for (from, to) in moves {
            self.breaker_moved(edge, pod, from, to, now);
        }
        if self.clients[edge as usize].cfg.hedging.is_some() {
            self.after_hedged_attempt(call, outcome, sched);
        } else {
            self.after_attempt(call, outcome, closed, sched);
        }
    }

    /// Hedging: the first success wins and cancels the rest; a non-fatal
    /// failure sends the next hedge at once; a fatal one ends the call.
    fn after_hedged_attempt(
        &mut self,
        call: CallRef,
        outcome: AttemptOutcome,
        sched: &mut Scheduler<Event>,
    ) {
        let c = stale!(self.reqs.call(call));
        let Some(h) = self.clients[c.edge as usize].cfg.hedging.clone() else {
            return; // not hedging
        };
        if c.phase != CallPhase::Calling {
            return;
        }
        let (attempts, live) = (c.attempts, c.live_count());
        if outcome == AttemptOutcome::Success {
            self.finish_call(call, Reason::Success, sched);
        } else if h.non_fatal.iter().any(|r| r.matches(outcome)) {
            if attempts < h.max_attempts {
                self.start_attempt(call, true, sched);
                self.schedule_hedge(call, sched);
            } else if live == 0 {
                self.finish_call(call, Reason::from(outcome), sched);
            }
        } else {
            self.finish_call(call, Reason::from(outcome), sched);
        }
    }

    /// Retries: decide whether, when and at what cost the next attempt
    /// goes, or finish the call.
    fn after_attempt(
        &mut self,
        call: CallRef,
        outcome: AttemptOutcome,
        closed: Closed,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        if outcome == AttemptOutcome::Success {
            self.finish_call(call, Reason::Success, sched);
            return;
        }
        let reason = Reason::from(outcome);
        let c = stale!(self.reqs.call(call));
        if c.phase != CallPhase::Calling {
            return;
        }
        let (edge, idempotent, pod) = (c.edge, c.idempotent, c.pod);
        let client = &self.clients[edge as usize].cfg;
        let r = &client.retry;
        let min_attempt_budget = client.min_attempt_budget;
        let mut retryable =
            r.retry_on.iter().any(|x| x.matches(outcome)) && (!r.idempotent_only || idempotent);
        if let AttemptOutcome::ServerError(_, Pushback::DontRetry) = outcome {
            retryable = false;
        }
        let fast = r.fast_retry.as_ref().is_some_and(|f| {
            matches!(outcome, AttemptOutcome::ServerError(code, _) if f.statuses.contains(&code))
                && now - closed.started < f.within
                && c.fast_retries_used < f.max
        });
        let server_says = match outcome {
            AttemptOutcome::RateLimited(ns)
            | AttemptOutcome::ServerError(_, Pushback::After(ns)) => {
                Some(SimDuration::from_nanos(ns))
            }
            _ => None,
        };
        let mode = r.retry_after.mode;
        let pushback_used = server_says.is_some() && mode != RetryAfterMode::Ignore && !fast;
        let counts = !fast && (!pushback_used || r.retry_after.counts_as_retry);
        if !(retryable || fast) || (counts && c.retries_used >= r.max_retries) {
            self.finish_call(call, reason, sched);
            return;
        }
        if pushback_used
            && let (Some(ra), Some(cap)) = (server_says, r.retry_after.cap)
            && ra > cap
        {
            self.finish_call(call, reason, sched);
            return;
        }
        let delay = if fast {
            SimDuration::ZERO
        } else {
            let backoff = r.backoff.clone();
            let jitter = r.retry_after.jitter;
            let n = c.retries_used - c.backoff_from + 1;
            let c = stale!(self.reqs.call_mut(call));
            let client = &mut self.clients[edge as usize];
            let mut drawn = backoff.delay(n, &mut c.backoff, &mut client.backoff_rng);
            if let Some(a) = policy_of(&mut client.policies, &client.cfg, pod)
                .adaptive
                .as_ref()
            {
                drawn = drawn.mul_f64(a.multiplier());
            }
            // Drawn only when configured, so no other draw moves.
            let asked = server_says.map(|ra| match jitter > 0.0 {
                true => {
                    let u: f64 = client.backoff_rng.random();
                    ra.mul_f64(1.0 + jitter * u)
                }
                false => ra,
            });
            match (asked, mode) {
                (Some(ra), RetryAfterMode::Honor) => ra,
                (Some(ra), RetryAfterMode::AtLeast) => drawn.max(ra),
                _ => drawn,
            }
        };
        let c = stale!(self.reqs.call(call));
        if let Some(d) = c.deadline
            && now.saturating_add(delay).saturating_add(min_attempt_budget) >= d
        {
            self.finish_call(call, reason, sched);
            return;
        }
        let cause = match outcome {
            AttemptOutcome::Timeout => RetryCause::Timeout,
            AttemptOutcome::RateLimited(_) => RetryCause::Throttled,
            _ => RetryCause::Transient,
        };
        let cost = match self.policy(edge, pod).budget.as_mut() {
            None => 0,
            Some(b) => match b.try_retry(now, cause) {
                Some(cost) => cost,
                None => {
                    self.rec.count(Count::BudgetDenied, 1);
                    self.finish_call(call, Reason::BudgetExhausted, sched);
                    return;
                }
            },
        };
        if pushback_used {
            self.rec.count(Count::RetryAfterWaits, 1);
        }
        self.rec.latency(Latency::RetryDelay, delay);
        let c = stale!(self.reqs.call_mut(call));
        c.pending_retry_cost = cost;
        if counts {
            c.retries_used += 1;
        }
        if pushback_used && mode == RetryAfterMode::Honor {
            // gRPC: after a pushback the backoff starts over from its
            // first step.
            c.backoff_from = c.retries_used;
            c.backoff = Default::default();
        }
        if fast {
            c.fast_retries_used += 1;
        }
        if delay.is_zero() {
            self.start_attempt(call, false, sched);
        } else {
            let attempt = c.attempts;
            c.phase = CallPhase::Backoff;
            c.aux_timer = Some(sched.schedule_in(
                delay,
                ClientEvent::RetryDelayElapsed { call, attempt }.into(),
            ));
        }
    }

    pub(crate) fn on_retry_delay_elapsed(
        &mut self,
        call: CallRef,
        attempt: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let c = stale!(self.reqs.call_mut(call));
        if c.phase != CallPhase::Backoff || c.attempts != attempt {
            return;
        }
        c.aux_timer = None;
        c.phase = CallPhase::Calling;
        self.start_attempt(call, false, sched);
    }

    pub(crate) fn on_call_deadline(&mut self, call: CallRef, sched: &mut Scheduler<Event>) {
        if let Some(c) = self.reqs.call_mut(call) {
            c.deadline_timer = None;
        }
        self.finish_call(call, Reason::DeadlineExceeded, sched);
    }

    /// Cuts every attempt of `call` still in progress.
    fn cancel_live_attempts(
        &mut self,
        call: CallRef,
        hedges_lost: bool,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let live: Vec<AttRef> = match self.reqs.call(call) {
            Some(c) => c.live_attempts().collect(),
            None => return,
        };
        for att in live {
            self.release_attempt(att, now, sched);
            self.close_attempt(att, AttemptOutcome::Cancelled, now, sched);
            if hedges_lost {
                self.rec.count(Count::HedgesCancelled, 1);
            }
        }
        if self.reqs.call(call).is_none_or(|c| c.live_count() != 0) {
            self.violated(now, || "attempts left behind by a finished call".into());
        }
    }

    /// Ends `call` without telling its request: what attempts are running
    /// are cut, its timers cancelled, its record forgotten.
    pub(crate) fn close_call(
        &mut self,
        call: CallRef,
        reason: Reason,
        cut: bool,
        sched: &mut Scheduler<Event>,
    ) {
        let c = stale!(self.reqs.call(call));
        let edge = c.edge;
        if c.live.iter().any(Option::is_some) {
            let hedging =
                self.clients[edge as usize].cfg.hedging.is_some() && reason == Reason::Success;
            self.cancel_live_attempts(call, hedging, sched);
        }
        let c = stale!(self.reqs.call_mut(call));
        for t in [c.aux_timer.take(), c.deadline_timer.take()]
            .into_iter()
            .flatten()
        {
            sched.cancel(t);
        }
        self.reqs.remove_call(call);
        self.rec.node_call_ended(edge, reason, cut);
    }

    /// The service is done with `req`: whatever calls are running are
    /// cut, its core and worker move on, and its caller gets `reason`
    /// (across the network if there is a delay): the user, unless the user
    /// already saw an outcome or the gateway retries it; or the attempt
    /// of another service that sent it.
    pub(crate) fn complete_request(
        &mut self,
        req: ReqRef,
        reason: Reason,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let q = stale!(self.reqs.get_mut(req));
        if q.service_done {
            return;
        }
        let calls = std::mem::take(&mut q.calls);
        for call in calls.iter() {
            self.close_call(call, reason, true, sched);
        }
        let q = stale!(self.reqs.get_mut(req));
        for t in [q.work_timer.take(), q.deadline_timer.take()]
            .into_iter()
            .flatten()
        {
            sched.cancel(t);
        }
        let was_in_line = q.phase == Phase::WaitingWorker;
        let was_waiting_core = q.phase == Phase::WaitingCore;
        q.phase = Phase::Finished;
        q.service_done = true;
        let (service, pod, epoch, had_worker, had_core, user_done, dispatches, caller, reached) = (
            q.service,
            q.pod,
            q.pod_epoch,
            q.has_worker,
            q.has_core,
            q.user_done,
            q.dispatches,
            q.caller,
            q.reached,
        );
        q.has_worker = false;
        q.has_core = false;
        let s = &mut self.services[service as usize];
        let same_life = s.pods[pod as usize].epoch == epoch;
        // A request leaving its pod's worker line early (a restart empties
        // the line itself, under a new epoch).
        if was_in_line && same_life {
            s.pods[pod as usize].worker_queue.left();
        }
        if was_waiting_core && same_life {
            s.pods[pod as usize].core_queue.left();
        }
        let up = same_life && s.pods[pod as usize].state == PodState::Up;
        if had_core && up {
            self.free_core(service, pod, sched);
        }
        if had_worker && up {
            self.free_worker(service, pod, sched);
        }
        self.services[service as usize]
            .lb
            .outstanding_changed(pod, -1);
        if service == self.topo.entry && caller == crate::request::Caller::User {
            self.rec.level_add(Level::ServiceInFlight, now, -1);
        }
        self.rec.node_service_done(
            service,
            reason,
            reached.map(|r| now.saturating_since(r)),
            now,
        );
        if let crate::request::Caller::Attempt(att) = caller {
            self.answer_caller(req, att, reason, sched);
            return;
        }
        if user_done {
            self.reqs.release_if_done(req);
            return;
        }
        let gateway_retry = self
            .cfg
            .gateway
            .retry
            .as_ref()
            .is_some_and(|g| dispatches <= g.max_retries && g.on.contains(&reason));
        if gateway_retry {
            self.dispatch(req, sched);
            return;
        }
        // A restarted pod's connections reset: the gateway learns at once.
        let d = match reason {
            Reason::PodRestarted => SimDuration::ZERO,
            _ => self.net.delay_to_gateway(),
        };
        cross(
            sched,
            d,
            LoadEvent::ResponseReachedUser { req, reason }.into(),
        );
    }
}
