//! The call from a pod to the upstream: attempts, connections, timeouts,
//! retries, hedges, and the policies around them (budget, breaker,
//! throttle, pushback).
//!
//! An attempt passes the client's gates (adaptive throttle, circuit
//! breaker, rate limiter), asks its pod's pool for a connection (reusing
//! an idle one, dialling a new one, or waiting in line), sends, and ends in
//! exactly one way: an answer, its timeout, a failed dial, the pool's
//! acquire timeout, or being cancelled by its call (another hedge won, the
//! deadline passed, the pod restarted). An answer that comes back after its
//! attempt ended is counted as late and never as a success.

use crate::config::{ClientConfig, ConfigError, Scope, WorldConfig};
use crate::policy::adaptive_backoff::AdaptiveBackoff;
use crate::policy::budget::RetryBudget;
use crate::policy::gate::{Gate, build_gates};
use crate::world::compile;
use rand::RngExt;
use sim_core::deadlines::DeadlineLine;
use sim_core::dist::Dist;
use sim_core::queue::EventId;
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
use crate::request::{AttRef, AttemptPhase, Phase, ReqRef};
use crate::upstream::{DependencyEvent, Status};
use crate::world::{Event, Leg, World, cross};

crate::part_events! {
    /// What happens to a client's calls and attempts.
    pub enum ClientEvent {
        /// The call's total deadline across attempts passed.
        CallDeadlinePassed {
            /// The request.
            req: ReqRef,
        },
        /// A new connection finished setting up.
        ConnectionEstablished {
            /// The pod.
            pod: u32,
            /// The pod's incarnation when dialling began.
            epoch: u32,
            /// The attempt it was dialled for.
            att: AttRef,
        },
        /// A new connection was refused or its connect timeout passed.
        ConnectionFailed {
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
        TimeoutsDue,
        /// An attempt's wait for the client's own rate limiter is over.
        RateLimiterWaited {
            /// The attempt.
            att: AttRef,
        },
        /// The delay before a retry is over.
        RetryDelayElapsed {
            /// The request.
            req: ReqRef,
            /// The number of the attempt that just failed.
            attempt: u32,
        },
        /// Time to send the next hedge.
        HedgeDue {
            /// The request.
            req: ReqRef,
            /// The number the hedge will have.
            number: u32,
        },
        /// The upstream's answer crossed the network back to the pod.
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

/// What an upstream answer means to the client.
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

/// The service's client of its dependency: the state its policies keep
/// and its own draws (connections, backoff, throttling).
pub struct Client {
    pub(crate) connect_time: Dist,
    /// Budgets and gates: one set per pod, or one in all.
    pub(crate) policies: Vec<PolicySet>,
    pub(crate) backoff_rng: SimRng,
    pub(crate) throttle_rng: SimRng,
    /// Attempt timeouts (a fixed delay, so armed in order), delivered by
    /// one wake-up at the earliest instead of a heap entry each.
    pub(crate) timeouts: DeadlineLine<AttRef>,
    /// The wake-up scheduled for the line, and when.
    pub(crate) timeout_wake: Option<(SimTime, EventId)>,
    /// The line's due deadlines are being delivered (the next wake-up is
    /// set once, after).
    pub(crate) sweeping: bool,
}

impl Client {
    /// The client as configured, its policies fresh.
    pub(crate) fn new(cfg: &WorldConfig, streams: &RngStreams) -> Result<Self, Vec<ConfigError>> {
        Ok(Client {
            connect_time: compile(&cfg.service.pool.connect_time, "service.pool.connect_time")?,
            policies: match cfg.client.scope {
                Scope::Global => vec![PolicySet::new(&cfg.client)],
                Scope::Pod => (0..cfg.service.pods)
                    .map(|_| PolicySet::new(&cfg.client))
                    .collect(),
            },
            backoff_rng: streams.stream("client/backoff"),
            throttle_rng: streams.stream("client/throttle"),
            timeouts: DeadlineLine::new(),
            timeout_wake: None,
            sweeping: false,
        })
    }
}

impl<S: RowSink> World<S> {
    /// Routes the client's events to their handlers.
    pub(crate) fn on_client_event(&mut self, e: ClientEvent, sched: &mut Scheduler<Event>) {
        match e {
            ClientEvent::CallDeadlinePassed { req } => self.on_call_deadline(req, sched),
            ClientEvent::ConnectionEstablished { pod, epoch, att } => {
                self.on_connection_established(pod, epoch, att, sched)
            }
            ClientEvent::ConnectionFailed {
                pod,
                epoch,
                att,
                refused,
            } => self.on_connection_failed(pod, epoch, att, refused, sched),
            ClientEvent::PoolWaitTimedOut { att } => self.on_pool_wait_timed_out(att, sched),
            ClientEvent::TimeoutsDue => self.on_timeouts_due(sched),
            ClientEvent::RateLimiterWaited { att } => self.on_rate_limiter_waited(att, sched),
            ClientEvent::RetryDelayElapsed { req, attempt } => {
                self.on_retry_delay_elapsed(req, attempt, sched)
            }
            ClientEvent::HedgeDue { req, number } => self.on_hedge_due(req, number, sched),
            ClientEvent::ResponseReachedPod { att, status } => {
                self.on_response_reached_pod(att, status, sched)
            }
        }
    }

    /// The worker starts the call: arms the total deadline, tells the
    /// budget, starts the first attempt (and schedules hedges).
    pub(crate) fn begin_call(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let deadline = self.cfg.client.total_deadline;
        let q = stale!(self.reqs.get_mut(req));
        q.has_worker = true;
        q.phase = Phase::Calling;
        if let Some(d) = deadline {
            q.call_deadline = Some(now.saturating_add(d));
            q.call_timer =
                Some(sched.schedule_in(d, ClientEvent::CallDeadlinePassed { req }.into()));
        }
        let pod = q.pod;
        if let Some(b) = self.policy(pod).budget.as_mut() {
            b.on_request(now);
        }
        self.start_attempt(req, false, sched);
        self.schedule_hedge(req, sched);
    }

    /// Schedules the next hedge of `req`, if hedging and attempts are left.
    fn schedule_hedge(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let Some(h) = self.cfg.client.hedging.clone() else {
            return; // not hedging
        };
        let q = stale!(self.reqs.get_mut(req));
        if q.phase != Phase::Calling || q.attempts >= h.max_attempts {
            return;
        }
        if let Some(t) = q.aux_timer.take() {
            sched.cancel(t);
        }
        let number = q.attempts + 1;
        if h.delay.is_zero() {
            self.start_attempt(req, true, sched);
            self.schedule_hedge(req, sched);
        } else {
            q.aux_timer =
                Some(sched.schedule_in(h.delay, ClientEvent::HedgeDue { req, number }.into()));
        }
    }

    pub(crate) fn on_hedge_due(&mut self, req: ReqRef, number: u32, sched: &mut Scheduler<Event>) {
        let q = stale!(self.reqs.get_mut(req));
        if q.phase != Phase::Calling || q.attempts + 1 != number {
            return;
        }
        q.aux_timer = None;
        self.start_attempt(req, true, sched);
        self.schedule_hedge(req, sched);
    }

    /// Starts the next attempt of `req` if the client's gates let it; when
    /// they refuse the only attempt the call would have, the call ends.
    fn start_attempt(&mut self, req: ReqRef, hedge: bool, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let q = stale!(self.reqs.get(req));
        let (pod, epoch, number, deadline, live) = (
            q.pod,
            q.pod_epoch,
            q.attempts + 1,
            q.call_deadline,
            q.live_count(),
        );
        let min_budget = self.cfg.client.min_attempt_budget;
        if let Some(d) = deadline
            && !min_budget.is_zero()
            && now.saturating_add(min_budget) >= d
        {
            if live == 0 {
                self.complete_request(req, Reason::DeadlineExceeded, sched);
            }
            return;
        }
        let wait = match self.ask_gates(pod, now) {
            Ok(wait) => wait,
            Err((reason, counter)) => {
                self.rec.count(counter, 1);
                if live == 0 {
                    self.complete_request(req, reason, sched);
                }
                return;
            }
        };
        let att = self.reqs.new_attempt(req, number, hedge, pod, epoch, now);
        let q = stale!(self.reqs.get_mut(req));
        q.attempts = number;
        q.phase = Phase::Calling;
        if !q.add_live(att) {
            self.violated(now, || {
                "more than five attempts of one call in progress".into()
            });
            return;
        }
        let cost = std::mem::take(&mut q.pending_retry_cost);
        let counter = match (number, hedge) {
            (1, _) => Count::AttemptsFirst,
            (_, true) => Count::AttemptsHedge,
            _ => Count::AttemptsRetry,
        };
        self.rec.count(counter, 1);
        if !hedge && number > 1 {
            let which = match number {
                2 => Count::Retry1,
                3 => Count::Retry2,
                4 => Count::Retry3,
                _ => Count::Retry4Plus,
            };
            self.rec.count(which, 1);
        }
        let timeout = self.cfg.client.attempt_timeout;
        let arm_now = self.cfg.client.timeout_starts == TimeoutStart::AttemptStart;
        if let Some(b) = self.policy(pod).budget.as_mut() {
            b.on_attempt_start(now, cost);
        }
        stale!(self.reqs.att_mut(att)).retry_cost = cost;
        if arm_now && let Some(t) = timeout {
            self.arm_timeout(att, t, sched);
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

    /// Asks `pod`'s gates, in order, whether an attempt may go: the
    /// longest wait asked for, or the first refusal (its reason and
    /// counter). Breaker moves are shown as they happen.
    fn ask_gates(&mut self, pod: u32, now: SimTime) -> Result<SimDuration, (Reason, Count)> {
        let mut wait = SimDuration::ZERO;
        let mut moves = Vec::new();
        let mut refused = None;
        let set = policy_of(&mut self.client.policies, &self.cfg.client, pod);
        for gate in set.gates.iter_mut() {
            let draw = if gate.draws() {
                self.client.throttle_rng.random()
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
            self.breaker_moved(pod, from, to, now);
        }
        match refused {
            Some(r) => Err(r),
            None => Ok(wait),
        }
    }

    fn breaker_moved(&mut self, pod: u32, from: BreakerState, to: BreakerState, now: SimTime) {
        if to == BreakerState::Open {
            self.rec.count(Count::BreakerOpened, 1);
        }
        let whose = match self.cfg.client.scope {
            crate::config::Scope::Global => "global breaker".to_string(),
            crate::config::Scope::Pod => format!("pod {pod} breaker"),
        };
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "breaker",
            detail: format!("{whose}: {} -> {}", from.name(), to.name()),
        });
        let (mut open, mut half) = (0, 0);
        for state in self
            .client
            .policies
            .iter()
            .flat_map(|p| p.gates.iter().filter_map(|g| g.breaker_state()))
        {
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
        let pod = a.pod;
        match self.service.pods[pod as usize].pool.acquire(now) {
            Acquire::Reused => {
                self.rec.pool_wait(pod, SimDuration::ZERO);
                self.connection_in_hand(att, sched);
            }
            Acquire::Dial => {
                self.rec.pool_wait(pod, SimDuration::ZERO);
                self.set_phase(att, AttemptPhase::Connecting);
                self.dial(pod, att, sched);
            }
            Acquire::Wait => {
                self.set_phase(att, AttemptPhase::WaitingPool);
                let reqs = &self.reqs;
                let p = &mut self.service.pods[pod as usize];
                let epoch = p.epoch;
                p.pool.wait(Waiter { att, since: now }, |w| {
                    waiter_is_live(reqs, pod, epoch, w)
                });
                if let Some(t) = self.cfg.service.pool.acquire_timeout {
                    let timer = sched.schedule_in(t, ClientEvent::PoolWaitTimedOut { att }.into());
                    if let Some(a) = self.reqs.att_mut(att) {
                        a.aux_timer = Some(timer);
                    }
                }
            }
        }
        self.sync_pool(pod, now);
    }

    fn set_phase(&mut self, att: AttRef, phase: AttemptPhase) {
        if let Some(a) = self.reqs.att_mut(att) {
            a.phase = phase;
        }
    }

    /// Dials a new connection on `pod` for `att`.
    fn dial(&mut self, pod: u32, att: AttRef, sched: &mut Scheduler<Event>) {
        let p = &mut self.service.pods[pod as usize];
        let epoch = p.epoch;
        let setup = self.client.connect_time.sample(&mut p.connect_rng);
        let failure = self.cfg.network.connect_failure;
        let refused = failure > 0.0 && p.connect_rng.random::<f64>() < failure;
        let refused = refused || self.upstream_full(sched.now());
        let timeout = self.cfg.client.connect_timeout;
        // A refusal comes back when the handshake would have; either way
        // the connect timeout may give up first.
        let failed_at = if refused {
            self.service.pods[pod as usize].pool.refuse();
            Some(timeout.map_or(setup, |t| setup.min(t)))
        } else {
            timeout.filter(|&t| setup > t)
        };
        let event = match failed_at {
            Some(_) => ClientEvent::ConnectionFailed {
                pod,
                epoch,
                att,
                refused,
            }
            .into(),
            None => ClientEvent::ConnectionEstablished { pod, epoch, att }.into(),
        };
        sched.schedule_in(failed_at.unwrap_or(setup), event);
    }

    /// Whether the upstream's connection limit turns a new dial away: the
    /// connections open or being set up (refused dials left out), this
    /// one included, exceed it.
    fn upstream_full(&mut self, now: SimTime) -> bool {
        let Some(limit) = self.cfg.upstream.max_connections else {
            return false;
        };
        let mut open = 0;
        for p in &mut self.service.pods {
            p.pool.expire_idle(now);
            open += p.pool.open();
        }
        open > limit
    }

    pub(crate) fn att_is(&self, att: AttRef, phase: AttemptPhase) -> bool {
        self.reqs.att(att).is_some_and(|a| a.phase == phase)
    }

    pub(crate) fn on_connection_established(
        &mut self,
        pod: u32,
        epoch: u32,
        att: AttRef,
        sched: &mut Scheduler<Event>,
    ) {
        if self.service.pods[pod as usize].epoch != epoch {
            return; // the pod restarted meanwhile; its pool is new
        }
        let now = sched.now();
        self.service.pods[pod as usize].pool.established();
        if self.att_is(att, AttemptPhase::Connecting) {
            self.service.pods[pod as usize].pool.hand_over();
            self.connection_in_hand(att, sched);
        } else {
            // Whoever dialled it gave up: the next in line gets it.
            self.connection_available(pod, now, sched);
        }
        // A multiplexed connection brings more streams: waiters take them.
        while self.service.pods[pod as usize].pool.free_streams() > 0 {
            let Some(w) = self.pop_waiter(pod, now, sched) else {
                break; // nobody waiting
            };
            self.service.pods[pod as usize].pool.hand_over();
            self.connection_in_hand(w.att, sched);
        }
        self.sync_pool(pod, now);
    }

    pub(crate) fn on_connection_failed(
        &mut self,
        pod: u32,
        epoch: u32,
        att: AttRef,
        refused: bool,
        sched: &mut Scheduler<Event>,
    ) {
        if self.service.pods[pod as usize].epoch != epoch {
            return;
        }
        let now = sched.now();
        let pool = &mut self.service.pods[pod as usize].pool;
        if refused {
            pool.refusal_arrived();
        } else {
            pool.dialled();
        }
        if self.att_is(att, AttemptPhase::Connecting) {
            self.end_attempt(att, AttemptOutcome::ConnectFailure, sched);
        }
        self.slot_freed(pod, sched);
        self.sync_pool(pod, now);
    }

    /// A connection is free on `pod`: the next live waiter gets it, or it
    /// goes idle.
    fn connection_available(&mut self, pod: u32, now: SimTime, sched: &mut Scheduler<Event>) {
        if let Some(w) = self.pop_waiter(pod, now, sched) {
            self.service.pods[pod as usize].pool.hand_over();
            self.connection_in_hand(w.att, sched);
        } else {
            self.service.pods[pod as usize].pool.put_idle(now);
        }
    }

    /// A connection slot on `pod` opened up (a connection closed or a dial
    /// failed): the next live waiter dials a new one.
    fn slot_freed(&mut self, pod: u32, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let pool = &self.service.pods[pod as usize].pool;
        if !pool.has_room() || pool.waiters() == 0 {
            return;
        }
        if let Some(w) = self.pop_waiter(pod, now, sched) {
            self.service.pods[pod as usize].pool.try_dial();
            self.set_phase(w.att, AttemptPhase::Connecting);
            self.dial(pod, w.att, sched);
        }
    }

    /// Takes the next live waiter out of `pod`'s line, ending its wait.
    fn pop_waiter(
        &mut self,
        pod: u32,
        now: SimTime,
        sched: &mut Scheduler<Event>,
    ) -> Option<Waiter> {
        let epoch = self.service.pods[pod as usize].epoch;
        let reqs = &self.reqs;
        let w = self.service.pods[pod as usize]
            .pool
            .next_waiter(|w| waiter_is_live(reqs, pod, epoch, w))?;
        if let Some(a) = self.reqs.att_mut(w.att) {
            if let Some(t) = a.aux_timer.take() {
                sched.cancel(t);
            }
            a.pool_wait += now - w.since;
        }
        self.rec.pool_wait(pod, now - w.since);
        Some(w)
    }

    /// The attempt holds a connection: send the request.
    fn connection_in_hand(&mut self, att: AttRef, sched: &mut Scheduler<Event>) {
        let timeout = self.cfg.client.attempt_timeout;
        let arm_now = self.cfg.client.timeout_starts == TimeoutStart::ConnectionAcquired;
        stale!(self.reqs.att_mut(att)).phase = AttemptPhase::InFlight;
        if arm_now && let Some(t) = timeout {
            self.arm_timeout(att, t, sched);
        }
        let d = self.net.delay(Leg::PodToUpstream);
        cross(sched, d, DependencyEvent::Received { att }.into());
    }

    /// The deadline an attempt carries to the upstream, when propagated:
    /// the earlier of the call's deadline and the attempt's own timeout.
    pub(crate) fn propagated_deadline(&self, att: AttRef) -> Option<SimTime> {
        if !self.cfg.client.propagate_deadline {
            return None;
        }
        let a = self.reqs.att(att)?;
        let call = self.reqs.get(a.req).and_then(|q| q.call_deadline);
        let own = self
            .cfg
            .client
            .attempt_timeout
            .map(|t| a.started.saturating_add(t));
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
        let pod = a.pod;
        let leak_fraction = self.cfg.service.pool.leak_fraction;
        let p = &mut self.service.pods[pod as usize];
        let leak = leak_fraction > 0.0 && p.leak_rng.random::<f64>() < leak_fraction;
        if p.pool.release(leak) {
            self.connection_available(pod, now, sched);
        }
        self.end_attempt(att, outcome_of(status), sched);
        self.sync_pool(pod, now);
    }

    /// Arms `att`'s timeout, `t` from now, in the client's timeout line.
    fn arm_timeout(&mut self, att: AttRef, t: SimDuration, sched: &mut Scheduler<Event>) {
        let at = sched.now().saturating_add(t);
        stale!(self.reqs.att_mut(att)).timeout_at = Some(at);
        self.client.timeouts.push(at, att);
        self.wake_for_timeouts(sched);
    }

    /// Makes sure a wake-up is due at the earliest live deadline of the
    /// timeout line (stale ones at the front dropped first).
    fn wake_for_timeouts(&mut self, sched: &mut Scheduler<Event>) {
        if self.client.sweeping {
            return;
        }
        let reqs = &self.reqs;
        self.client
            .timeouts
            .drop_stale(|at, &att| reqs.att(att).is_some_and(|a| a.timeout_at == Some(at)));
        let Some(next) = self.client.timeouts.next() else {
            return; // nothing armed
        };
        match self.client.timeout_wake {
            Some((at, _)) if at <= next => {} // already due in time
            wake => {
                if let Some((_, id)) = wake {
                    sched.cancel(id);
                }
                let at = next.max(sched.now());
                let id = sched.schedule_at(at, ClientEvent::TimeoutsDue.into());
                self.client.timeout_wake = id.ok().map(|id| (at, id));
            }
        }
    }

    /// The timeout line's wake-up: every attempt whose deadline is now
    /// times out, in the order the deadlines were armed.
    fn on_timeouts_due(&mut self, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        self.client.timeout_wake = None;
        self.client.sweeping = true;
        while let Some((at, att)) = self.client.timeouts.pop_due(now) {
            if self.reqs.att(att).is_some_and(|a| a.timeout_at == Some(at)) {
                self.on_attempt_timed_out(att, sched);
            }
        }
        self.client.sweeping = false;
        self.wake_for_timeouts(sched);
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
    /// or its connection (closed, and the upstream told if cancellation
    /// propagates). A dial in progress carries on for others. An attempt
    /// from a pod's previous life touches nothing: that pool is gone.
    fn release_attempt(&mut self, att: AttRef, now: SimTime, sched: &mut Scheduler<Event>) {
        let a = stale!(self.reqs.att_mut(att));
        let (phase, pod, epoch, job, since) =
            (a.phase, a.pod, a.pod_epoch, a.job.take(), a.wait_started);
        match phase {
            AttemptPhase::WaitingPool => a.pool_wait += now - since,
            AttemptPhase::InFlight => a.late = true,
            _ => {}
        }
        if let Some(job) = job
            && self.dependency.upstream.abandon(job, sched)
        {
            self.rec.count(Count::UpstreamCancelled, 1);
            self.sync_upstream_levels(now);
        }
        let same_life = self.service.pods[pod as usize].epoch == epoch;
        match phase {
            AttemptPhase::WaitingPool => {
                if same_life {
                    self.service.pods[pod as usize].pool.waiter_left();
                }
                self.rec.pool_wait(pod, now - since);
            }
            AttemptPhase::InFlight if same_life => {
                let pool = &mut self.service.pods[pod as usize].pool;
                if pool.multiplexed() {
                    // The stream is reset; its connection carries on.
                    pool.release(false);
                    self.connection_available(pod, now, sched);
                } else {
                    pool.close_in_use();
                    self.slot_freed(pod, sched);
                }
            }
            _ => {}
        }
        if same_life {
            self.sync_pool(pod, now);
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
        let (req, hedge, pod, pool_wait, late) = (a.req, a.hedge, a.pod, a.pool_wait, a.late);
        self.reqs.remove_attempt(att);
        if let Some(b) = self.policy(pod).budget.as_mut() {
            b.on_attempt_closed(now, closed.retry_cost);
        }
        let id = match self.reqs.get_mut(req) {
            Some(q) => {
                q.remove_live(att);
                q.id
            }
            None => u64::MAX,
        };
        self.rec.count(Count::ended(outcome), 1);
        if outcome != AttemptOutcome::Cancelled {
            let which = if closed.number == 1 {
                Latency::FirstAttempt
            } else {
                Latency::Retry
            };
            self.rec.latency(which, now - closed.started);
        }
        let sample = self.rec.sink().attempt_sample();
        if sample > 0.0 && sampled(id, self.cfg.seed, sample) {
            self.rec.sink_mut().attempt(AttemptRecord {
                request: id,
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
        let req = stale!(self.reqs.att(att).map(|a| a.req));
        let closed = stale!(self.close_attempt(att, outcome, now, sched));
        let pod = self.reqs.get(req).map_or(0, |q| q.pod);
        let success = outcome == AttemptOutcome::Success;
        let retryable = self
            .cfg
            .client
            .retry
            .retry_on
            .iter()
            .any(|r| r.matches(outcome));
        let set = self.policy(pod);
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
            self.breaker_moved(pod, from, to, now);
        }
        if let Some(q) = self.reqs.get_mut(req) {
            q.last_outcome = Some(outcome);
        }
        if self.cfg.client.hedging.is_some() {
            self.after_hedged_attempt(req, outcome, sched);
        } else {
            self.after_attempt(req, outcome, closed, sched);
        }
    }

    /// Hedging: the first success wins and cancels the rest; a non-fatal
    /// failure sends the next hedge at once; a fatal one ends the call.
    fn after_hedged_attempt(
        &mut self,
        req: ReqRef,
        outcome: AttemptOutcome,
        sched: &mut Scheduler<Event>,
    ) {
        let Some(h) = self.cfg.client.hedging.clone() else {
            return; // not hedging
        };
        let q = stale!(self.reqs.get(req));
        if q.phase != Phase::Calling {
            return;
        }
        let (attempts, live) = (q.attempts, q.live_count());
        if outcome == AttemptOutcome::Success {
            self.complete_request(req, Reason::Success, sched);
        } else if h.non_fatal.iter().any(|r| r.matches(outcome)) {
            if attempts < h.max_attempts {
                self.start_attempt(req, true, sched);
                self.schedule_hedge(req, sched);
            } else if live == 0 {
                self.complete_request(req, Reason::from(outcome), sched);
            }
        } else {
            self.complete_request(req, Reason::from(outcome), sched);
        }
    }

    /// Retries: decide whether, when and at what cost the next attempt
    /// goes, or finish the call.
    fn after_attempt(
        &mut self,
        req: ReqRef,
        outcome: AttemptOutcome,
        closed: Closed,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        if outcome == AttemptOutcome::Success {
            self.complete_request(req, Reason::Success, sched);
            return;
        }
        let reason = Reason::from(outcome);
        let r = &self.cfg.client.retry;
        let q = stale!(self.reqs.get(req));
        if q.phase != Phase::Calling {
            return;
        }
        let mut retryable =
            r.retry_on.iter().any(|x| x.matches(outcome)) && (!r.idempotent_only || q.idempotent);
        if let AttemptOutcome::ServerError(_, Pushback::DontRetry) = outcome {
            retryable = false;
        }
        let fast = r.fast_retry.as_ref().is_some_and(|f| {
            matches!(outcome, AttemptOutcome::ServerError(code, _) if f.statuses.contains(&code))
                && now - closed.started < f.within
                && q.fast_retries_used < f.max
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
        if !(retryable || fast) || (counts && q.retries_used >= r.max_retries) {
            self.complete_request(req, reason, sched);
            return;
        }
        if pushback_used
            && let (Some(ra), Some(cap)) = (server_says, r.retry_after.cap)
            && ra > cap
        {
            self.complete_request(req, reason, sched);
            return;
        }
        let delay = if fast {
            SimDuration::ZERO
        } else {
            let backoff = r.backoff.clone();
            let n = q.retries_used - q.backoff_from + 1;
            let q = self.reqs.get_mut(req).expect("live request");
            let mut drawn = backoff.delay(n, &mut q.backoff, &mut self.client.backoff_rng);
            let pod = q.pod;
            if let Some(a) = policy_of(&mut self.client.policies, &self.cfg.client, pod)
                .adaptive
                .as_ref()
            {
                drawn = drawn.mul_f64(a.multiplier());
            }
            let jitter = r.retry_after.jitter;
            // Drawn only when configured, so no other draw moves.
            let asked = server_says.map(|ra| match jitter > 0.0 {
                true => {
                    let u: f64 = self.client.backoff_rng.random();
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
        let q = stale!(self.reqs.get(req));
        if let Some(d) = q.call_deadline
            && now
                .saturating_add(delay)
                .saturating_add(self.cfg.client.min_attempt_budget)
                >= d
        {
            self.complete_request(req, reason, sched);
            return;
        }
        let pod = q.pod;
        let cause = match outcome {
            AttemptOutcome::Timeout => RetryCause::Timeout,
            AttemptOutcome::RateLimited(_) => RetryCause::Throttled,
            _ => RetryCause::Transient,
        };
        let cost = match self.policy(pod).budget.as_mut() {
            None => 0,
            Some(b) => match b.try_retry(now, cause) {
                Some(cost) => cost,
                None => {
                    self.rec.count(Count::BudgetDenied, 1);
                    self.complete_request(req, Reason::BudgetExhausted, sched);
                    return;
                }
            },
        };
        if pushback_used {
            self.rec.count(Count::RetryAfterWaits, 1);
        }
        self.rec.latency(Latency::RetryDelay, delay);
        let q = stale!(self.reqs.get_mut(req));
        q.pending_retry_cost = cost;
        if counts {
            q.retries_used += 1;
        }
        if pushback_used && mode == RetryAfterMode::Honor {
            // gRPC: after a pushback the backoff starts over from its
            // first step.
            q.backoff_from = q.retries_used;
            q.backoff = Default::default();
        }
        if fast {
            q.fast_retries_used += 1;
        }
        if delay.is_zero() {
            self.start_attempt(req, false, sched);
        } else {
            let attempt = q.attempts;
            q.phase = Phase::Backoff;
            q.aux_timer = Some(sched.schedule_in(
                delay,
                ClientEvent::RetryDelayElapsed { req, attempt }.into(),
            ));
        }
    }

    pub(crate) fn on_retry_delay_elapsed(
        &mut self,
        req: ReqRef,
        attempt: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let q = stale!(self.reqs.get_mut(req));
        if q.phase != Phase::Backoff || q.attempts != attempt {
            return;
        }
        q.aux_timer = None;
        q.phase = Phase::Calling;
        self.start_attempt(req, false, sched);
    }

    pub(crate) fn on_call_deadline(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        if let Some(q) = self.reqs.get_mut(req) {
            q.call_timer = None;
        }
        self.complete_request(req, Reason::DeadlineExceeded, sched);
    }

    /// Cuts every attempt of `req` still in progress.
    fn cancel_live_attempts(
        &mut self,
        req: ReqRef,
        hedges_lost: bool,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let live: Vec<AttRef> = match self.reqs.get(req) {
            Some(q) => q.live_attempts().collect(),
            None => return,
        };
        for att in live {
            self.release_attempt(att, now, sched);
            self.close_attempt(att, AttemptOutcome::Cancelled, now, sched);
            if hedges_lost {
                self.rec.count(Count::HedgesCancelled, 1);
            }
        }
        if self.reqs.get(req).is_none_or(|q| q.live_count() != 0) {
            self.violated(now, || "attempts left behind by a finished call".into());
        }
    }

    /// The service is done with `req`: whatever attempts are running are
    /// cut, the worker moves on, and the user gets `reason` (across the
    /// network if there is a delay) unless the user already saw an outcome
    /// or the gateway retries it.
    pub(crate) fn complete_request(
        &mut self,
        req: ReqRef,
        reason: Reason,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let q = stale!(self.reqs.get(req));
        if q.service_done {
            return;
        }
        if q.live_count() > 0 {
            let hedging = self.cfg.client.hedging.is_some() && reason == Reason::Success;
            self.cancel_live_attempts(req, hedging, sched);
        }
        let q = stale!(self.reqs.get_mut(req));
        for t in [q.aux_timer.take(), q.call_timer.take()]
            .into_iter()
            .flatten()
        {
            sched.cancel(t);
        }
        let was_in_line = q.phase == Phase::WaitingWorker;
        q.phase = Phase::Finished;
        q.service_done = true;
        let (pod, epoch, had_worker, user_done, dispatches) =
            (q.pod, q.pod_epoch, q.has_worker, q.user_done, q.dispatches);
        // A request leaving its pod's worker line early (a restart empties
        // the line itself, under a new epoch).
        if was_in_line && self.service.pods[pod as usize].epoch == epoch {
            self.service.pods[pod as usize].worker_queue.left();
        }
        q.has_worker = false;
        if had_worker
            && self.service.pods[pod as usize].epoch == epoch
            && self.service.pods[pod as usize].state == PodState::Up
        {
            self.free_worker(pod, sched);
        }
        self.service.lb.outstanding_changed(pod, -1);
        self.rec.level_add(Level::ServiceInFlight, now, -1);
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
            _ => self.net.delay(Leg::PodToGateway),
        };
        cross(
            sched,
            d,
            LoadEvent::ResponseReachedUser { req, reason }.into(),
        );
    }
}
