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
//!
//! The client is one part: its state (policy, policy sets, timeout line,
//! draws) and its events are its own; it works on the calls and attempts
//! in the context's records and on its caller's pools in the context's
//! links. What reaches past it (a call's end told to its request, an
//! attempt sent to a service, work left at the far end) it asks of the
//! world.

use crate::config::{ConfigError, PoolConfig, Problems, millis, secs};
use crate::context::{Ask, Ctx, refused_by_network};
use crate::graph::{Edge, Target, Topology, stream_name};
use crate::policy::adaptive_backoff::AdaptiveBackoff;
use crate::policy::backoff::Backoff;
use crate::policy::breaker::BreakerSpec;
use crate::policy::budget::BudgetSpec;
use crate::policy::budget::RetryBudget;
use crate::policy::bulkhead::{Bulkhead, BulkheadSpec, Sample};
use crate::policy::gate::{Gate, build_gates};
use crate::policy::throttle::ThrottleSpec;
use crate::world::{compile, stream};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use sim_core::deadlines::{DeadlineLine, Subjects};
use sim_core::dist::Dist;
use sim_core::prefetch::{LOAD_AHEAD, prefetch_storage};
use sim_core::rng::{RngStreams, SimRng};
use sim_core::time::{SimDuration, SimTime};

use crate::outcome::{AttemptOutcome, Pushback, Reason};
use crate::pods::PoolWaiters;
use crate::policy::breaker::BreakerState;
use crate::policy::budget::{AttemptReport, RetryCause};
use crate::policy::gate::{Admit, AttemptEnd};
use crate::pool::{Acquire, Pool, Waiter};
use crate::recorder::{AttemptRecord, Count, Latency, Level, RowSink, WorldEvent};
use crate::request::{AttRef, AttemptPhase, CallPhase, CallRef, Requests};
use crate::upstream::{DependencyEvent, JobRef, Status};

crate::part_events! {
    /// What happens to a client's calls and attempts.
    pub enum ClientEvent {
        /// The call's total deadline across attempts passed.
        CallDeadlinePassed {
            /// The edge.
            edge: u32,
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
            /// The edge.
            edge: u32,
            /// The attempt.
            att: AttRef,
        },
        /// An attempt the pool's full line turned away fails.
        PoolLineFull {
            /// The edge.
            edge: u32,
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
            /// The edge.
            edge: u32,
            /// The attempt.
            att: AttRef,
        },
        /// The delay before a retry is over.
        RetryDelayElapsed {
            /// The edge.
            edge: u32,
            /// The call.
            call: CallRef,
            /// The number of the attempt that just failed.
            attempt: u32,
        },
        /// Time to send the next hedge.
        HedgeDue {
            /// The edge.
            edge: u32,
            /// The call.
            call: CallRef,
            /// The number the hedge will have.
            number: u32,
        },
        /// A breaker that moves on by its own timer (Resilience4j's
        /// `automatic_transition`) reached the end of its wait while open.
        BreakerWaitOver {
            /// The edge.
            edge: u32,
            /// The pod whose policy set holds it.
            pod: u32,
        },
        /// The far end's answer crossed the network back to the pod.
        ResponseReachedPod {
            /// The edge.
            edge: u32,
            /// The attempt.
            att: AttRef,
            /// The answer.
            status: Status,
        },
        /// A call that waited for a place in its client's bulkhead was
        /// given one: it goes on at the next step.
        BulkheadPlaceGiven {
            /// The edge.
            edge: u32,
            /// The call.
            call: CallRef,
        },
        /// A call waited for a place in its client's bulkhead as long as
        /// `max_wait` allows: it fails `bulkhead_full`.
        BulkheadWaitOver {
            /// The edge.
            edge: u32,
            /// The call.
            call: CallRef,
        },
    }
}

impl ClientEvent {
    /// The edge whose client handles the event.
    #[inline]
    pub fn edge(&self) -> u32 {
        match *self {
            ClientEvent::CallDeadlinePassed { edge, .. }
            | ClientEvent::ConnectionEstablished { edge, .. }
            | ClientEvent::ConnectionFailed { edge, .. }
            | ClientEvent::PoolWaitTimedOut { edge, .. }
            | ClientEvent::PoolLineFull { edge, .. }
            | ClientEvent::TimeoutsDue { edge }
            | ClientEvent::RateLimiterWaited { edge, .. }
            | ClientEvent::RetryDelayElapsed { edge, .. }
            | ClientEvent::HedgeDue { edge, .. }
            | ClientEvent::BreakerWaitOver { edge, .. }
            | ClientEvent::ResponseReachedPod { edge, .. }
            | ClientEvent::BulkheadPlaceGiven { edge, .. }
            | ClientEvent::BulkheadWaitOver { edge, .. } => edge,
        }
    }
}

/// A breaker's move as the client shows it: from, to, and, for one that
/// just opened and moves on by its own timer, the wait before it does.
type BreakerMove = (BreakerState, BreakerState, Option<SimDuration>);

/// Does `act` to `gate`, noting in `moves` the breaker move it made.
#[inline]
fn watching<R>(
    gate: &mut dyn Gate,
    moves: &mut Vec<BreakerMove>,
    act: impl FnOnce(&mut dyn Gate) -> R,
) -> R {
    let before = gate.breaker_state();
    let r = act(gate);
    if let (Some(from), Some(to)) = (before, gate.breaker_state())
        && from != to
    {
        moves.push((from, to, gate.open_wait()));
    }
    r
}

fn is_active(phase: AttemptPhase) -> bool {
    phase != AttemptPhase::Done
}

/// Whether the timeout line's deadline `at` for `att` is still wanted: the
/// attempt lives and was armed with it.
#[inline]
fn timeout_is_live(reqs: &Requests, at: SimTime, att: AttRef) -> bool {
    reqs.att(att).is_some_and(|a| a.timeout_at == Some(at))
}

/// The attempts in a timeout line, as the line sees them: live while
/// their armed deadline is the one held, and loaded ahead of their turn
/// (in a storm they were last touched a timeout ago, long out of cache).
struct TimedAttempts<'a>(&'a Requests);

impl Subjects<AttRef> for TimedAttempts<'_> {
    #[inline]
    fn is_live(&mut self, at: SimTime, att: &AttRef) -> bool {
        timeout_is_live(self.0, at, *att)
    }

    #[inline]
    fn prefetch(&self, att: &AttRef) {
        self.0.prefetch_att(*att);
    }
}

/// Whether `att` lives and stands at `phase`.
#[inline]
fn att_is(reqs: &Requests, att: AttRef, phase: AttemptPhase) -> bool {
    reqs.att(att).is_some_and(|a| a.phase == phase)
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
    /// What the budget in place charged for it (0 for one started before
    /// a deploy: that charge was another budget's).
    retry_cost: u32,
    /// Whether the budget in place saw it start.
    seen_by_budget: bool,
}

/// The policies with state of one client (a pod, or the whole service
/// when their scope is global): the retry budget, and the gates every
/// attempt passes (throttle, breaker, rate limiter).
pub(crate) struct PolicySet {
    pub(crate) budget: Option<Box<dyn RetryBudget>>,
    pub(crate) gates: Vec<Box<dyn Gate>>,
    pub(crate) adaptive: Option<AdaptiveBackoff>,
    pub(crate) bulkhead: Option<Bulkhead>,
}

impl PolicySet {
    /// A fresh set, its clocks starting `now`.
    pub(crate) fn new(c: &ClientConfig, now: SimTime) -> Self {
        PolicySet {
            budget: c.budget.as_ref().map(|b| b.build()),
            gates: build_gates(c, now),
            adaptive: c.retry.adaptive.as_ref().map(AdaptiveBackoff::new),
            bulkhead: c.bulkhead.as_ref().map(Bulkhead::new),
        }
    }

    /// Breakers of this set open and half open.
    fn breakers(&self) -> (i64, i64) {
        let (mut open, mut half) = (0, 0);
        for state in self.gates.iter().filter_map(|g| g.breaker_state()) {
            match state {
                BreakerState::Open => open += 1,
                BreakerState::HalfOpen => half += 1,
                BreakerState::Closed => {}
            }
        }
        (open, half)
    }
}

/// The policy set of `pod`'s client among `policies` (one in all when
/// their scope is global; one per pod, made when first needed, else).
#[inline]
fn policy_of<'a>(
    policies: &'a mut Vec<PolicySet>,
    client: &ClientConfig,
    pod: u32,
    now: SimTime,
) -> &'a mut PolicySet {
    if client.scope == Scope::Global {
        return &mut policies[0];
    }
    let i = pod as usize;
    while policies.len() <= i {
        policies.push(PolicySet::new(client, now));
    }
    &mut policies[i]
}

/// The policy sets of a client as configured, fresh: one in all when
/// their scope is global, one for each of `pods` pods of the caller else
/// (a pod added later gets its set when it first calls).
fn policy_sets(client: &ClientConfig, pods: u32, now: SimTime) -> Vec<PolicySet> {
    match client.scope {
        Scope::Global => vec![PolicySet::new(client, now)],
        Scope::Pod => (0..pods).map(|_| PolicySet::new(client, now)).collect(),
    }
}

/// An edge's client: the caller's policy for it, the state its policies
/// keep, and its own draws (connections, backoff, throttling).
pub struct Client {
    /// The edge's index.
    pub(crate) index: u32,
    /// The policy in force (a deploy replaces it).
    pub(crate) cfg: ClientConfig,
    /// The caller's pool settings for this edge.
    pub(crate) pool: PoolConfig,
    /// The calling service, and this edge's pool among its pods' pools.
    pub(crate) from: u32,
    pub(crate) local: u32,
    /// Whether the caller is the entry service (its pools report by pod
    /// group).
    entry: bool,
    /// What it calls.
    pub(crate) to: Target,
    /// The service it calls stops when its caller gives up (that
    /// service's `cancellation`).
    cancels: bool,
    /// The service it calls judges its pods by their answers (that
    /// service's `outlier_detection`): a timeout is told to it.
    judged: bool,
    pub(crate) connect_time: Dist,
    /// Budgets and gates: one set per pod, or one in all.
    pub(crate) policies: Vec<PolicySet>,
    pub(crate) backoff_rng: SimRng,
    pub(crate) throttle_rng: SimRng,
    /// Attempt timeouts (a fixed delay, so armed in order), delivered by
    /// one wake-up at the earliest instead of a heap entry each.
    pub(crate) timeouts: DeadlineLine<AttRef>,
    /// Whether the policies keep state (a budget, a gate, adaptive
    /// backoff): without any, an attempt does not look its set up.
    stateful: bool,
    /// Policy sets whose adaptive bulkhead limits the edge's level last
    /// summed: while no set is added, a limit's change is told as that
    /// change alone, not by summing every pod's again.
    limit_sets: usize,
}

/// Whether `client`'s policies keep state: a budget, a gate (throttle,
/// breaker, rate limiter), adaptive backoff or a bulkhead.
fn keeps_policy_state(client: &ClientConfig) -> bool {
    let set = PolicySet::new(client, SimTime::ZERO);
    set.budget.is_some()
        || !set.gates.is_empty()
        || set.adaptive.is_some()
        || set.bulkhead.is_some()
}

impl Client {
    /// The client of edge `index` as configured, its policies fresh.
    pub(crate) fn new(
        index: u32,
        edge: &Edge,
        topo: &Topology,
        streams: &RngStreams,
    ) -> Result<Self, Vec<ConfigError>> {
        let pods = topo.services[edge.from as usize].cfg.pods;
        let connect_at = match edge.suffix {
            None => "service.pool.connect_time".to_string(),
            Some(_) => format!("{}.pool.connect_time", edge.path),
        };
        Ok(Client {
            index,
            connect_time: compile(&edge.pool.connect_time, &connect_at)?,
            policies: policy_sets(&edge.client, pods, SimTime::ZERO),
            backoff_rng: streams.stream(stream_name("client/backoff", &edge.suffix).as_str()),
            throttle_rng: streams.stream(stream_name("client/throttle", &edge.suffix).as_str()),
            timeouts: DeadlineLine::new(),
            stateful: keeps_policy_state(&edge.client),
            limit_sets: 0,
            cfg: edge.client.clone(),
            pool: edge.pool.clone(),
            from: edge.from,
            local: edge.local,
            entry: edge.from == topo.entry,
            to: edge.to,
            cancels: match edge.to {
                Target::Service(s) => topo.services[s as usize].cfg.cancellation,
                Target::Dependency(_) => false,
            },
            judged: match edge.to {
                Target::Service(s) => topo.services[s as usize].cfg.outlier_detection.is_some(),
                Target::Dependency(_) => false,
            },
        })
    }

    /// Routes the client's events to their handlers (the world drives
    /// the three whose handling reaches past the client between steps:
    /// `TimeoutsDue`, `ConnectionFailed`, `ResponseReachedPod`).
    #[inline]
    pub(crate) fn on_event<S: RowSink>(&mut self, e: ClientEvent, ctx: &mut Ctx<'_, S>) {
        match e {
            ClientEvent::CallDeadlinePassed { call, .. } => self.on_call_deadline(call, ctx),
            ClientEvent::ConnectionEstablished {
                pod, epoch, att, ..
            } => self.on_connection_established(pod, epoch, att, ctx),
            ClientEvent::PoolWaitTimedOut { att, .. } => self.on_pool_wait_timed_out(att, ctx),
            ClientEvent::PoolLineFull { att, .. } => self.on_pool_line_full(att, ctx),
            ClientEvent::RateLimiterWaited { att, .. } => self.on_rate_limiter_waited(att, ctx),
            ClientEvent::RetryDelayElapsed { call, attempt, .. } => {
                self.on_retry_delay_elapsed(call, attempt, ctx)
            }
            ClientEvent::HedgeDue { call, number, .. } => self.on_hedge_due(call, number, ctx),
            ClientEvent::BreakerWaitOver { pod, .. } => self.on_breaker_wait_over(pod, ctx),
            ClientEvent::BulkheadPlaceGiven { call, .. } => self.on_place_given(call, ctx),
            ClientEvent::BulkheadWaitOver { call, .. } => self.on_place_wait_over(call, ctx),
            ClientEvent::TimeoutsDue { .. }
            | ClientEvent::ConnectionFailed { .. }
            | ClientEvent::ResponseReachedPod { .. } => {
                debug_assert!(false, "driven by the world");
            }
        }
    }

    /// The policy set of the client on `pod`; `None` when the policies
    /// keep no state.
    #[inline]
    fn policy(&mut self, pod: u32, now: SimTime) -> Option<&mut PolicySet> {
        if !self.stateful {
            return None;
        }
        Some(policy_of(&mut self.policies, &self.cfg, pod, now))
    }

    /// The caller's pool for this edge on `pod`.
    #[inline]
    fn pool<'c, S>(&self, pod: u32, ctx: &'c mut Ctx<'_, S>) -> &'c mut Pool {
        ctx.sh.links.pool(self.from, pod, self.local)
    }

    /// Brings the levels up to date with the pool on `pod`.
    #[inline]
    fn sync_pool<S: RowSink>(&self, pod: u32, ctx: &mut Ctx<'_, S>) {
        ctx.sync_pool(self.from, pod, self.local, self.index);
    }

    /// A pool wait on `pod`: in the totals, and in the pod's group when
    /// the pod is the entry service's.
    #[inline]
    fn record_pool_wait<S: RowSink>(&self, pod: u32, d: SimDuration, ctx: &mut Ctx<'_, S>) {
        ctx.sh.rec.pool_wait(self.entry.then_some(pod), d);
    }

    /// The operator deploys `client`: new attempts, retries and backoffs
    /// follow it from now; budgets, breakers and throttles start fresh
    /// (this edge's breakers leave the breaker levels). Attempts in
    /// progress keep the timeout they were armed with.
    pub(crate) fn deploy<S: RowSink>(
        &mut self,
        client: ClientConfig,
        pods: u32,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        let (open, half) = self
            .policies
            .iter()
            .map(PolicySet::breakers)
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let was_bulkheaded = self.cfg.bulkhead.is_some();
        let waiting = if was_bulkheaded {
            self.drain_bulkhead_lines(ctx)
        } else {
            Vec::new()
        };
        self.policies = policy_sets(&client, pods, now);
        self.stateful = keeps_policy_state(&client);
        self.cfg = client;
        // The fresh bulkheads gave no place to this edge's calls in
        // progress: they end without giving one back.
        if was_bulkheaded {
            for call in ctx.sh.reqs.all_calls() {
                if let Some(c) = ctx.sh.reqs.call_mut(call)
                    && c.edge == self.index
                {
                    c.holds_place = false;
                }
            }
        }
        // The calls that waited for a place in the former bulkheads come
        // to the new ones in the order they came to the old (their wait
        // starting again), as calls starting now would.
        for call in waiting {
            self.rejoin_bulkhead(call, ctx);
        }
        self.sync_bulkhead_limit(ctx);
        // The fresh budgets never saw this edge's attempts in progress
        // start (a budget on concurrency would count them out twice).
        for att in ctx.sh.reqs.all_attempts() {
            if let Some(a) = ctx.sh.reqs.att_mut(att)
                && a.edge == self.index
            {
                a.before_deploy = true;
            }
        }
        ctx.sh.rec.level_add(Level::BreakersOpen, now, -open);
        ctx.sh.rec.level_add(Level::BreakersHalfOpen, now, -half);
    }

    /// The deadline an attempt carries to what it calls, when propagated:
    /// the earlier of the call's deadline and the attempt's own timeout.
    #[inline]
    pub(crate) fn propagated_deadline(&self, att: AttRef, reqs: &Requests) -> Option<SimTime> {
        if !self.cfg.propagate_deadline {
            return None;
        }
        let a = reqs.att(att)?;
        let call = reqs.call(a.call).and_then(|c| c.deadline);
        let own = self
            .cfg
            .attempt_timeout
            .map(|t| a.started.saturating_add(t));
        match (call, own) {
            (Some(c), Some(o)) => Some(c.min(o)),
            (c, o) => c.or(o),
        }
    }

    /// The worker starts a call: arms the total deadline, tells the
    /// budget, starts the first attempt (and schedules hedges).
    pub(crate) fn begin_call<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let c = stale!(ctx.sh.reqs.call_mut(call));
        let pod = c.pod;
        let own = self.cfg.total_deadline.map(|d| now.saturating_add(d));
        // A deadline the request's caller propagated caps the call's own
        // (`new_call` left it in `deadline`).
        let deadline = match (own, c.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = deadline {
            c.deadline = Some(at);
            c.deadline_timer = ctx
                .sched
                .schedule_at(
                    at.max(now),
                    ClientEvent::CallDeadlinePassed {
                        edge: self.index,
                        call,
                    }
                    .into(),
                )
                .ok();
        }
        ctx.sh.rec.node_call_started(self.index);
        // Asked only of a client whose policies keep state, so that one
        // without pays one test per call.
        if self.stateful && self.cfg.bulkhead.is_some() && !self.enter_bulkhead(call, ctx) {
            return; // waiting for a place, or refused one
        }
        self.go_on(call, pod, ctx);
    }

    /// `call`, on `pod`, past its bulkhead if any: the budget hears of
    /// it, its first attempt starts and its first hedge is set.
    #[inline(always)]
    fn go_on<S: RowSink>(&mut self, call: CallRef, pod: u32, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        if self.stateful
            && let Some(b) = self.policy(pod, now).and_then(|set| set.budget.as_mut())
        {
            b.on_request(now);
            if let Some(cap) = b.call_cap()
                && let Some(c) = ctx.sh.reqs.call_mut(call)
            {
                c.retry_cap = cap;
            }
        }
        self.start_attempt(call, false, ctx);
        self.schedule_hedge(call, ctx);
    }

    /// Takes a place in the bulkhead of `call`'s client (its pod's, or the
    /// service's with `scope: global`) before any other policy sees the
    /// call: the outermost layer, as in .NET's standard handler. Without
    /// one the call waits in the bulkhead's line, if it keeps one with
    /// room, or fails `bulkhead_full` at once (its deadline, just armed,
    /// cancelled), nothing sent and no budget told. True when the call
    /// goes on now. Out of line: only a client with a bulkhead calls it.
    #[inline(never)]
    fn enter_bulkhead<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) -> bool {
        let now = ctx.now();
        let pod = match ctx.sh.reqs.call(call) {
            Some(c) => c.pod,
            None => return false, // the call ended while starting
        };
        let reqs = &ctx.sh.reqs;
        let Some(b) = self.policy(pod, now).and_then(|set| set.bulkhead.as_mut()) else {
            return true; // no bulkhead: nothing to enter
        };
        if b.try_enter() {
            b.took_place(call.slot(), now);
            if let Some(c) = ctx.sh.reqs.call_mut(call) {
                c.holds_place = true;
            }
            return true;
        }
        if b.wait(call, |w: &CallRef| waits_for_place(reqs, *w)) {
            self.wait_for_place(call, ctx);
            return false;
        }
        ctx.sh.rec.count(Count::BulkheadRejected, 1);
        self.finish_call(call, Reason::BulkheadFull, ctx);
        false
    }

    /// `call`, just put in its bulkhead's line, waits: at most `max_wait`
    /// when the bulkhead sets one.
    fn wait_for_place<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let max_wait = self.cfg.bulkhead.and_then(|b| b.max_wait);
        let c = stale!(ctx.sh.reqs.call_mut(call));
        c.phase = CallPhase::WaitingPlace;
        if let Some(w) = max_wait {
            c.aux_timer = Some(
                ctx.sched.schedule_in(
                    w,
                    ClientEvent::BulkheadWaitOver {
                        edge: self.index,
                        call,
                    }
                    .into(),
                ),
            );
        }
        ctx.sh.rec.bulkhead_waiting(self.index, now, 1);
    }

    /// A call waiting for a place was given one: it goes on.
    fn on_place_given<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        let c = stale!(ctx.sh.reqs.call(call));
        if c.phase != CallPhase::Calling || c.attempts != 0 {
            return; // stale: it ended, and its reference was used again
        }
        let pod = c.pod;
        self.go_on(call, pod, ctx);
    }

    /// A call waited for a place as long as it may: it fails
    /// `bulkhead_full`, counted as refused.
    fn on_place_wait_over<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        let c = stale!(ctx.sh.reqs.call_mut(call));
        if c.phase != CallPhase::WaitingPlace {
            return; // stale: it was given a place, or ended
        }
        c.aux_timer = None;
        ctx.sh.rec.count(Count::BulkheadRejected, 1);
        self.finish_call(call, Reason::BulkheadFull, ctx);
    }

    /// Schedules the next hedge of `call`, if hedging and attempts are
    /// left. Inlined where called, so that a client that does not hedge
    /// pays one test per call, not a call.
    #[inline]
    fn schedule_hedge<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        if self.cfg.hedging.is_some() {
            self.schedule_next_hedge(call, ctx);
        }
    }

    /// [`Client::schedule_hedge`] for a client that hedges: the next
    /// hedge after the hedging delay.
    fn schedule_next_hedge<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        let Some(h) = self.cfg.hedging.as_ref() else {
            return; // not hedging
        };
        let delay = h.delay;
        self.schedule_hedge_after(call, delay, ctx);
    }

    /// Sets the next hedge of `call` `delay` from now (sent at once for
    /// none), replacing the one set before: after the hedging delay, or
    /// after a server's pushback. Nothing when hedging is frozen or no
    /// attempt is left.
    fn schedule_hedge_after<S: RowSink>(
        &mut self,
        call: CallRef,
        delay: SimDuration,
        ctx: &mut Ctx<'_, S>,
    ) {
        let Some(h) = self.cfg.hedging.as_ref() else {
            return; // not hedging
        };
        let max_attempts = h.max_attempts;
        let Some(c) = ctx.sh.reqs.call_mut(call) else {
            return; // the call ended while starting
        };
        if c.phase != CallPhase::Calling || c.attempts >= max_attempts || c.hedging_frozen {
            return;
        }
        if let Some(t) = c.aux_timer.take() {
            ctx.sched.cancel(t);
        }
        let number = c.attempts + 1;
        if delay.is_zero() {
            self.send_hedge(call, RetryCause::Transient, ctx);
        } else {
            c.aux_timer = Some(
                ctx.sched.schedule_in(
                    delay,
                    ClientEvent::HedgeDue {
                        edge: self.index,
                        call,
                        number,
                    }
                    .into(),
                ),
            );
        }
    }

    fn on_hedge_due<S: RowSink>(&mut self, call: CallRef, number: u32, ctx: &mut Ctx<'_, S>) {
        let c = stale!(ctx.sh.reqs.call_mut(call));
        if c.phase != CallPhase::Calling || c.attempts + 1 != number {
            return;
        }
        c.aux_timer = None;
        self.send_hedge(call, RetryCause::Transient, ctx);
    }

    /// Sends the next hedge of `call` if its budget allows (gRPC's
    /// throttling: "subsequent hedged RPCs will only be sent if
    /// `token_count` is greater than the threshold"), then sets the one
    /// after. A refused hedge freezes hedging for the call, as gRPC's
    /// Java client does; a call with nothing left in flight then ends.
    fn send_hedge<S: RowSink>(&mut self, call: CallRef, cause: RetryCause, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let pod = stale!(ctx.sh.reqs.call(call)).pod;
        let cost = match self.policy(pod, now).and_then(|set| set.budget.as_mut()) {
            None => Some(0),
            Some(b) => b.try_retry(now, cause),
        };
        let c = stale!(ctx.sh.reqs.call_mut(call));
        let Some(cost) = cost else {
            c.hedging_frozen = true;
            let live = c.live_count();
            ctx.sh.rec.count(Count::BudgetDenied, 1);
            if live == 0 {
                self.finish_call(call, Reason::BudgetExhausted, ctx);
            }
            return;
        };
        c.pending_retry_cost = cost;
        self.start_attempt(call, true, ctx);
        self.schedule_hedge(call, ctx);
    }

    /// Starts the next attempt of `call` if the client's gates let it;
    /// when they refuse the only attempt the call would have, the call
    /// ends.
    fn start_attempt<S: RowSink>(&mut self, call: CallRef, hedge: bool, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let c = stale!(ctx.sh.reqs.call(call));
        let (req, number, deadline, live) = (c.req, c.attempts + 1, c.deadline, c.live_count());
        let (pod, epoch) = (c.pod, c.pod_epoch);
        let min_budget = self.cfg.min_attempt_budget;
        if let Some(d) = deadline
            && !min_budget.is_zero()
            && now.saturating_add(min_budget) >= d
        {
            self.drop_pending_retry(call, ctx);
            if live == 0 {
                self.finish_call(call, Reason::DeadlineExceeded, ctx);
            }
            return;
        }
        let wait = match self.ask_gates(pod, ctx) {
            Ok(wait) => wait,
            Err((reason, counter)) => {
                self.drop_pending_retry(call, ctx);
                ctx.sh.rec.count(counter, 1);
                let refused = AttemptOutcome::BreakerRefused;
                if live == 0
                    && !hedge
                    && reason == Reason::from(refused)
                    && self.cfg.retry.retry_on.contains(&RetryOn::BreakerOpen)
                {
                    self.retry_refusal(call, number, ctx);
                } else if live == 0 {
                    self.finish_call(call, reason, ctx);
                }
                return;
            }
        };
        let att = ctx
            .sh
            .reqs
            .new_attempt(call, req, self.index, number, hedge, pod, epoch, now);
        let c = stale!(ctx.sh.reqs.call_mut(call));
        c.attempts = number;
        c.phase = CallPhase::Calling;
        if !c.add_live(att) {
            ctx.violated(|| "more than five attempts of one call in progress".into());
            return;
        }
        let cost = std::mem::take(&mut c.pending_retry_cost);
        let counter = match (number, hedge) {
            (1, _) => Count::AttemptsFirst,
            (_, true) => Count::AttemptsHedge,
            _ => Count::AttemptsRetry,
        };
        ctx.sh.rec.count(counter, 1);
        ctx.sh.rec.node_attempt_started(self.index, number > 1);
        if !hedge && number > 1 {
            c.retried = true;
            let which = match number {
                2 => Count::Retry1,
                3 => Count::Retry2,
                4 => Count::Retry3,
                _ => Count::Retry4Plus,
            };
            ctx.sh.rec.count(which, 1);
        }
        let timeout = self.cfg.attempt_timeout;
        let arm_now = self.cfg.timeout_starts == TimeoutStart::AttemptStart;
        if let Some(b) = self
            .policy(pod, ctx.now())
            .and_then(|set| set.budget.as_mut())
        {
            b.on_attempt_start(now, cost);
        }
        if arm_now && let Some(t) = timeout {
            self.arm_timeout(att, t, ctx);
        }
        let a = stale!(ctx.sh.reqs.att_mut(att));
        a.retry_cost = cost;
        if !wait.is_zero() {
            a.phase = AttemptPhase::RateLimited;
            a.aux_timer = Some(
                ctx.sched.schedule_in(
                    wait,
                    ClientEvent::RateLimiterWaited {
                        edge: self.index,
                        att,
                    }
                    .into(),
                ),
            );
            ctx.sh.rec.count(Count::RateLimiterWaits, 1);
            return;
        }
        self.acquire_connection(att, ctx);
    }

    /// A refusal of the breaker the retry policy retries: nothing went
    /// out, so nothing is charged or heard but the retry. Kept out of
    /// line: it is rare, and `start_attempt` is on every attempt's path.
    #[cold]
    #[inline(never)]
    fn retry_refusal<S: RowSink>(&mut self, call: CallRef, number: u32, ctx: &mut Ctx<'_, S>) {
        let closed = Closed {
            number,
            started: ctx.now(),
            retry_cost: 0,
            seen_by_budget: false,
        };
        self.after_attempt(call, AttemptOutcome::BreakerRefused, closed, ctx);
    }

    /// Asks `pod`'s gates, in order, whether an attempt may go: the
    /// longest wait asked for, or the first refusal (its reason and
    /// counter). Breaker moves are shown as they happen.
    fn ask_gates<S: RowSink>(
        &mut self,
        pod: u32,
        ctx: &mut Ctx<'_, S>,
    ) -> Result<SimDuration, (Reason, Count)> {
        if !self.stateful {
            return Ok(SimDuration::ZERO);
        }
        let now = ctx.now();
        let mut wait = SimDuration::ZERO;
        let mut moves = Vec::new();
        let mut refused = None;
        let rng = &mut self.throttle_rng;
        let set = policy_of(&mut self.policies, &self.cfg, pod, now);
        for gate in set.gates.iter_mut() {
            let draw = if gate.draws() { rng.random() } else { 0.0 };
            let answer = watching(gate.as_mut(), &mut moves, |g| g.admit(now, draw));
            match answer {
                Admit::Go => {}
                Admit::After(d) => wait = wait.max(d),
                Admit::Refuse { reason, counter } => {
                    refused = Some((reason, counter));
                    break;
                }
            }
        }
        for m in moves {
            self.breaker_moved(pod, m, ctx);
        }
        match refused {
            Some(r) => Err(r),
            None => Ok(wait),
        }
    }

    /// A breaker of `pod`'s set moved: counted, shown, and the breaker
    /// levels (open and half-open breakers over every edge) moved with it;
    /// one that opened and moves on by its own timer (`wait`) gets it.
    fn breaker_moved<S: RowSink>(
        &mut self,
        pod: u32,
        (from, to, wait): BreakerMove,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        if to == BreakerState::Open {
            ctx.sh.rec.count(Count::BreakerOpened, 1);
            if let Some(wait) = wait {
                let edge = self.index;
                ctx.sched
                    .schedule_in(wait, ClientEvent::BreakerWaitOver { edge, pod }.into());
            }
        }
        let mut whose = match self.cfg.scope {
            Scope::Global => "global breaker".to_string(),
            Scope::Pod => format!("pod {pod} breaker"),
        };
        if ctx.env.graph {
            whose = format!("{} {whose}", ctx.env.topo.edges[self.index as usize].name);
        }
        ctx.sh.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "breaker",
            detail: format!("{whose}: {} -> {}", from.name(), to.name()),
        });
        for (state, delta) in [(from, -1), (to, 1)] {
            match state {
                BreakerState::Open => ctx.sh.rec.level_add(Level::BreakersOpen, now, delta),
                BreakerState::HalfOpen => ctx.sh.rec.level_add(Level::BreakersHalfOpen, now, delta),
                BreakerState::Closed => {}
            }
        }
    }

    /// A breaker's own timer: each breaker of `pod`'s set that is still
    /// open with its wait over moves on (one that closed, opened again
    /// since, or was replaced by a deploy stays as it is).
    fn on_breaker_wait_over<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let Some(set) = self.policy(pod, now) else {
            return;
        };
        let mut moves = Vec::new();
        for gate in set.gates.iter_mut() {
            watching(gate.as_mut(), &mut moves, |g| g.wait_over(now));
        }
        for m in moves {
            self.breaker_moved(pod, m, ctx);
        }
    }

    fn on_rate_limiter_waited<S: RowSink>(&mut self, att: AttRef, ctx: &mut Ctx<'_, S>) {
        let a = stale!(ctx.sh.reqs.att_mut(att));
        if a.phase != AttemptPhase::RateLimited {
            return;
        }
        a.aux_timer = None;
        self.acquire_connection(att, ctx);
    }

    fn acquire_connection<S: RowSink>(&mut self, att: AttRef, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let a = stale!(ctx.sh.reqs.att_mut(att));
        a.wait_started = now;
        let pod = a.pod;
        match self.pool(pod, ctx).acquire(now) {
            Acquire::Reused => {
                self.record_pool_wait(pod, SimDuration::ZERO, ctx);
                self.connection_in_hand(att, ctx);
            }
            Acquire::Dial => {
                self.record_pool_wait(pod, SimDuration::ZERO, ctx);
                set_phase(&mut ctx.sh.reqs, att, AttemptPhase::Connecting);
                self.dial(pod, att, ctx);
            }
            Acquire::Stale => {
                // Sent on a connection the far end closed: reset at once,
                // a failed dial as far as the pool goes.
                self.record_pool_wait(pod, SimDuration::ZERO, ctx);
                set_phase(&mut ctx.sh.reqs, att, AttemptPhase::Connecting);
                let epoch = ctx.sh.links.epoch(self.from, pod);
                ctx.sched.schedule_in_stream(
                    stream::DIALS,
                    SimDuration::ZERO,
                    ClientEvent::ConnectionFailed {
                        edge: self.index,
                        pod,
                        epoch,
                        att,
                        refused: false,
                    }
                    .into(),
                );
            }
            Acquire::LineFull => self.turn_away(att, ctx),
            Acquire::Wait => {
                set_phase(&mut ctx.sh.reqs, att, AttemptPhase::WaitingPool);
                let p = ctx.sh.links.pod(self.from, pod);
                let epoch = p.epoch;
                let reqs = &ctx.sh.reqs;
                p.pools[self.local as usize]
                    .wait(Waiter { att, since: now }, PoolWaiters { reqs, pod, epoch });
                if let Some(t) = self.pool.acquire_timeout {
                    let timer = ctx.sched.schedule_in(
                        t,
                        ClientEvent::PoolWaitTimedOut {
                            edge: self.index,
                            att,
                        }
                        .into(),
                    );
                    if let Some(a) = ctx.sh.reqs.att_mut(att) {
                        a.aux_timer = Some(timer);
                    }
                }
            }
        }
        self.sync_pool(pod, ctx);
    }

    /// Dials a new connection on `pod` for `att`.
    fn dial<S: RowSink>(&mut self, pod: u32, att: AttRef, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let failure = ctx.sh.links.connect_failure;
        let p = ctx.sh.links.pod(self.from, pod);
        let epoch = p.epoch;
        let setup = self.connect_time.sample(&mut p.connect_rng);
        let refused = refused_by_network(p, failure);
        let refused = refused || ctx.sh.links.far_end_full(self.to, now);
        let timeout = self.cfg.connect_timeout;
        // A refusal comes back when the handshake would have; either way
        // the connect timeout may give up first.
        let failed_at = if refused {
            self.pool(pod, ctx).refuse();
            Some(timeout.map_or(setup, |t| setup.min(t)))
        } else {
            timeout.filter(|&t| setup > t)
        };
        let edge = self.index;
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
        ctx.sched
            .schedule_in_stream(stream::DIALS, failed_at.unwrap_or(setup), event);
    }

    fn on_connection_established<S: RowSink>(
        &mut self,
        pod: u32,
        epoch: u32,
        att: AttRef,
        ctx: &mut Ctx<'_, S>,
    ) {
        if ctx.sh.links.epoch(self.from, pod) != epoch {
            return; // the pod restarted meanwhile; its pool is new
        }
        self.pool(pod, ctx).established();
        if att_is(&ctx.sh.reqs, att, AttemptPhase::Connecting) {
            self.pool(pod, ctx).hand_over();
            self.connection_in_hand(att, ctx);
        } else {
            // Whoever dialled it gave up: the next in line gets it.
            self.connection_available(pod, ctx);
        }
        // A multiplexed connection brings more streams: waiters take them.
        while self.pool(pod, ctx).free_streams() > 0 {
            let Some(w) = self.pop_waiter(pod, ctx) else {
                break; // nobody waiting
            };
            self.pool(pod, ctx).hand_over();
            self.connection_in_hand(w.att, ctx);
        }
        self.sync_pool(pod, ctx);
    }

    /// A dial for `att` on `pod` failed (refused, or its connect timeout
    /// passed): the pool counts it and the attempt, if it still waits for
    /// it, fails. True when the world must then call
    /// [`Client::after_failed_dial`] (once what the attempt's end asked is
    /// done: a request that moved on may dial into the room first).
    pub(crate) fn on_connection_failed<S: RowSink>(
        &mut self,
        pod: u32,
        epoch: u32,
        att: AttRef,
        refused: bool,
        ctx: &mut Ctx<'_, S>,
    ) -> bool {
        if ctx.sh.links.epoch(self.from, pod) != epoch {
            return false;
        }
        let pool = self.pool(pod, ctx);
        if refused {
            pool.refusal_arrived();
        } else {
            pool.dialled();
        }
        if att_is(&ctx.sh.reqs, att, AttemptPhase::Connecting) {
            self.end_attempt(att, AttemptOutcome::ConnectFailure, ctx);
        }
        true
    }

    /// After a failed dial on `pod`: the room it left goes to the next in
    /// line.
    pub(crate) fn after_failed_dial<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        self.slot_freed(pod, ctx);
        self.sync_pool(pod, ctx);
    }

    /// A connection is free on `pod`: the next live waiter gets it, or it
    /// goes idle.
    #[inline(always)]
    fn connection_available<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        if let Some(w) = self.pop_waiter(pod, ctx) {
            self.pool(pod, ctx).hand_over();
            self.connection_in_hand(w.att, ctx);
        } else {
            self.pool(pod, ctx).put_idle(now);
        }
    }

    /// A connection slot on `pod` opened up (a connection closed or a dial
    /// failed): the next live waiter dials a new one.
    fn slot_freed<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        let pool = self.pool(pod, ctx);
        if !pool.has_room() || pool.waiters() == 0 {
            return;
        }
        if let Some(w) = self.pop_waiter(pod, ctx) {
            self.pool(pod, ctx).try_dial();
            set_phase(&mut ctx.sh.reqs, w.att, AttemptPhase::Connecting);
            self.dial(pod, w.att, ctx);
        }
    }

    /// Takes the next live waiter out of `pod`'s line, ending its wait.
    #[inline(always)]
    fn pop_waiter<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) -> Option<Waiter> {
        let now = ctx.now();
        let p = ctx.sh.links.pod(self.from, pod);
        let epoch = p.epoch;
        let reqs = &ctx.sh.reqs;
        let w = p.pools[self.local as usize].next_waiter(PoolWaiters { reqs, pod, epoch })?;
        if let Some(a) = ctx.sh.reqs.att_mut(w.att) {
            if let Some(t) = a.aux_timer.take() {
                ctx.sched.cancel(t);
            }
            a.pool_wait += now - w.since;
        }
        self.record_pool_wait(pod, now - w.since, ctx);
        Some(w)
    }

    /// The attempt holds a connection: send the request, to the
    /// dependency or (through the world) to the service called.
    #[inline(always)]
    fn connection_in_hand<S: RowSink>(&mut self, att: AttRef, ctx: &mut Ctx<'_, S>) {
        let a = stale!(ctx.sh.reqs.att_mut(att));
        a.phase = AttemptPhase::InFlight;
        let timeout = self.cfg.attempt_timeout;
        let arm_now = self.cfg.timeout_starts == TimeoutStart::ConnectionAcquired;
        if arm_now && let Some(t) = timeout {
            self.arm_timeout(att, t, ctx);
        }
        let edge = self.index;
        let delay = ctx.sh.net.there(edge);
        match self.to {
            Target::Dependency(_) => {
                ctx.cross(delay, DependencyEvent::Received { att, edge }.into())
            }
            Target::Service(_) => ctx.ask(Ask::SendToService { att, edge, delay }),
        }
    }

    /// The far end's answer reached `att`'s pod: the connection goes back
    /// (or to the next in line) and the attempt ends. The pod whose pool
    /// levels the world brings up to date once what the end asked is
    /// done; `None` for a late answer.
    pub(crate) fn on_response<S: RowSink>(
        &mut self,
        att: AttRef,
        status: Status,
        ctx: &mut Ctx<'_, S>,
    ) -> Option<u32> {
        let Some(a) = ctx.sh.reqs.att_mut(att) else {
            ctx.sh.rec.count(Count::LateResponses, 1);
            return None;
        };
        if a.phase != AttemptPhase::InFlight {
            ctx.sh.rec.count(Count::LateResponses, 1);
            return None;
        }
        a.job = None;
        a.child = None;
        let (pod, call, req) = (a.pod, a.call, a.req);
        // The call and the request are read next (closing the attempt,
        // then the call's end); in a storm both were last touched when
        // the attempt was sent, seconds before. Loaded now, their loads
        // overlap each other and the connection's release.
        ctx.sh.reqs.prefetch_call(call);
        ctx.sh.reqs.prefetch_req(req);
        let leak_fraction = self.pool.leak_fraction;
        let p = ctx.sh.links.pod(self.from, pod);
        let leak = leak_fraction > 0.0 && p.leak_rng.random::<f64>() < leak_fraction;
        if p.pools[self.local as usize].release(leak) {
            self.connection_available(pod, ctx);
        }
        self.end_attempt(att, outcome_of(status), ctx);
        Some(pod)
    }

    /// Brings the pool levels of `pod` up to date (after an answer).
    #[inline]
    pub(crate) fn answered<S: RowSink>(&mut self, pod: u32, ctx: &mut Ctx<'_, S>) {
        self.sync_pool(pod, ctx);
    }

    /// Arms `att`'s timeout, `t` from now, in the timeout line.
    fn arm_timeout<S: RowSink>(&mut self, att: AttRef, t: SimDuration, ctx: &mut Ctx<'_, S>) {
        let at = ctx.now().saturating_add(t);
        stale!(ctx.sh.reqs.att_mut(att)).timeout_at = Some(at);
        // Answered attempts' timeouts pile up behind a live one: swept once
        // they outnumber twice the attempts alive (on every edge, a bound
        // on this one's), so memory follows the attempts in flight.
        let live = ctx.sh.reqs.live_attempts();
        let reqs = &ctx.sh.reqs;
        self.timeouts.arm(
            at,
            att,
            live,
            TimedAttempts(reqs),
            ctx.sched,
            ClientEvent::TimeoutsDue { edge: self.index }.into(),
        );
    }

    /// The timeout line's wake-up ran: the deadlines due now are
    /// delivered one by one ([`Client::deliver_timeout`]), then
    /// [`Client::timeouts_delivered`].
    pub(crate) fn timeouts_woken(&mut self) {
        self.timeouts.woken();
    }

    /// Times out the next attempt whose deadline is now, in the order the
    /// deadlines were armed; false when none is left.
    /// `load_job` starts loading a job at a dependency (the far end of
    /// this edge), which the timeout of an attempt sent there abandons.
    pub(crate) fn deliver_timeout<S: RowSink>(
        &mut self,
        ctx: &mut Ctx<'_, S>,
        load_job: impl Fn(u32, JobRef),
    ) -> bool {
        let reqs = &ctx.sh.reqs;
        // Loads ahead in two steps: the attempt of the timeout
        // `LOAD_AHEAD` places on; then, for one half as far (whose attempt
        // has arrived by now), its call, its request and its job at the
        // far end. In a storm all were last touched a timeout ago, long
        // out of cache; loaded ahead, their loads overlap the timeouts
        // before them instead of stalling each in turn.
        if let Some(far) = self.timeouts.ahead(LOAD_AHEAD) {
            // The line's own buffer further on, too: a storm's timeouts
            // line stalled on reading this entry (`prefetch_storage`).
            prefetch_storage(far);
            reqs.prefetch_att(*far);
        }
        if let Some(near) = self
            .timeouts
            .ahead(LOAD_AHEAD / 2)
            .and_then(|&a| reqs.att(a))
        {
            reqs.prefetch_call(near.call);
            reqs.prefetch_req(near.req);
            if let (Some(job), Target::Dependency(dep)) = (near.job, self.to) {
                load_job(dep, job);
            }
        }
        let due = self.timeouts.pop_live_due(ctx.now(), TimedAttempts(reqs));
        let Some((_, att)) = due else {
            return false;
        };
        self.on_attempt_timed_out(att, ctx);
        true
    }

    /// Every due timeout was delivered: a wake-up for the earliest live
    /// one left.
    pub(crate) fn timeouts_delivered<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let reqs = &ctx.sh.reqs;
        self.timeouts.delivered(
            ctx.sched,
            TimedAttempts(reqs),
            ClientEvent::TimeoutsDue { edge: self.index }.into(),
        );
    }

    fn on_attempt_timed_out<S: RowSink>(&mut self, att: AttRef, ctx: &mut Ctx<'_, S>) {
        let a = stale!(ctx.sh.reqs.att_mut(att));
        if !is_active(a.phase) {
            return;
        }
        a.timeout_at = None;
        if self.judged
            && let Some(req) = a.child
        {
            ctx.ask(Ask::CallerTimedOut { req });
        }
        self.release_attempt(att, ctx);
        self.end_attempt(att, AttemptOutcome::Timeout, ctx);
    }

    /// `att` found the pool's line full: it fails `pool_timeout` at the
    /// next step (through the scheduler, as every leg does), having
    /// waited for nothing. Rare, and kept out of the acquire's line.
    #[cold]
    #[inline(never)]
    fn turn_away<S: RowSink>(&mut self, att: AttRef, ctx: &mut Ctx<'_, S>) {
        ctx.sh.rec.count(Count::PoolOverflow, 1);
        let edge = self.index;
        let timer = ctx.sched.schedule_in(
            SimDuration::ZERO,
            ClientEvent::PoolLineFull { edge, att }.into(),
        );
        let a = stale!(ctx.sh.reqs.att_mut(att));
        a.phase = AttemptPhase::TurnedAway;
        a.aux_timer = Some(timer);
    }

    fn on_pool_line_full<S: RowSink>(&mut self, att: AttRef, ctx: &mut Ctx<'_, S>) {
        let a = stale!(ctx.sh.reqs.att_mut(att));
        if a.phase != AttemptPhase::TurnedAway {
            return;
        }
        a.aux_timer = None;
        self.end_attempt(att, AttemptOutcome::PoolTimeout, ctx);
    }

    fn on_pool_wait_timed_out<S: RowSink>(&mut self, att: AttRef, ctx: &mut Ctx<'_, S>) {
        if !att_is(&ctx.sh.reqs, att, AttemptPhase::WaitingPool) {
            return;
        }
        if let Some(a) = ctx.sh.reqs.att_mut(att) {
            a.aux_timer = None;
        }
        self.release_attempt(att, ctx);
        self.end_attempt(att, AttemptOutcome::PoolTimeout, ctx);
    }

    /// Gives back what an attempt being cut short holds: its place in line,
    /// or its connection (closed, and the far end told if cancellation
    /// propagates). A dial in progress carries on for others. An attempt
    /// from a pod's previous life touches nothing: that pool is gone. A
    /// request it made at another service carries on, for nobody.
    fn release_attempt<S: RowSink>(&mut self, att: AttRef, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let a = stale!(ctx.sh.reqs.att_mut(att));
        let (phase, pod, epoch, job, since) =
            (a.phase, a.pod, a.pod_epoch, a.job.take(), a.wait_started);
        let child = a.child.take();
        match phase {
            AttemptPhase::WaitingPool => a.pool_wait += now - since,
            AttemptPhase::InFlight => a.late = true,
            _ => {}
        }
        if let (Some(job), Target::Dependency(dep)) = (job, self.to) {
            ctx.ask(Ask::Abandon { dep, job });
        }
        if let Some(child) = child
            && self.cancels
        {
            // The service learns its caller left (gRPC's cancellation):
            // it stops, and so do its own calls, down the graph.
            ctx.ask(Ask::CallerLeft { req: child });
        }
        let same_life = ctx.sh.links.epoch(self.from, pod) == epoch;
        match phase {
            AttemptPhase::WaitingPool => {
                if same_life {
                    self.pool(pod, ctx).waiter_left();
                }
                self.record_pool_wait(pod, now - since, ctx);
            }
            AttemptPhase::InFlight if same_life => {
                let pool = self.pool(pod, ctx);
                if pool.multiplexed() {
                    // The stream is reset; its connection carries on.
                    pool.release(false);
                    self.connection_available(pod, ctx);
                } else {
                    pool.close_in_use();
                    self.slot_freed(pod, ctx);
                }
            }
            _ => {}
        }
        if same_life {
            self.sync_pool(pod, ctx);
        }
    }

    /// Ends an attempt's bookkeeping: timers, the active count, its latency
    /// when it ended with an outcome of its own (not `Cancelled`), its
    /// record for the attempts table; forgets it.
    #[inline(always)]
    fn close_attempt<S: RowSink>(
        &mut self,
        att: AttRef,
        outcome: AttemptOutcome,
        ctx: &mut Ctx<'_, S>,
    ) -> Option<Closed> {
        let now = ctx.now();
        let Some(a) = ctx.sh.reqs.att_mut(att) else {
            ctx.violated(|| "an attempt ended twice".into());
            return None;
        };
        // Its timeout, if armed, stays in the line and is stale from now.
        a.timeout_at = None;
        if let Some(t) = a.aux_timer.take() {
            ctx.sched.cancel(t);
        }
        a.phase = AttemptPhase::Done;
        let closed = Closed {
            number: a.number,
            started: a.started,
            retry_cost: if a.before_deploy { 0 } else { a.retry_cost },
            seen_by_budget: !a.before_deploy,
        };
        let (req, call, hedge, pod, pool_wait, late) =
            (a.req, a.call, a.hedge, a.pod, a.pool_wait, a.late);
        ctx.sh.reqs.remove_attempt(att);
        if closed.seen_by_budget
            && let Some(b) = self
                .policy(pod, ctx.now())
                .and_then(|set| set.budget.as_mut())
        {
            b.on_attempt_closed(now, closed.retry_cost);
        }
        if let Some(c) = ctx.sh.reqs.call_mut(call) {
            c.remove_live(att);
        }
        ctx.sh.rec.attempt_ended(self.index, outcome);
        if outcome != AttemptOutcome::Cancelled {
            let which = if closed.number == 1 {
                Latency::FirstAttempt
            } else {
                Latency::Retry
            };
            ctx.sh.rec.latency(which, now - closed.started);
        }
        ctx.sh
            .rec
            .node_attempt_ended(self.index, outcome, now - closed.started);
        let sample = ctx.sh.rec.sink().attempt_sample();
        let id = |reqs: &Requests| reqs.get(req).map_or(u64::MAX, |q| q.id);
        if sample > 0.0 && sampled(id(&ctx.sh.reqs), ctx.env.seed, sample) {
            ctx.sh.rec.sink_mut().attempt(AttemptRecord {
                request: id(&ctx.sh.reqs),
                attempt: closed.number,
                hedge,
                pod,
                start: closed.started,
                end: now,
                pool_wait,
                outcome: outcome.name(),
                late,
                edge: self.index,
                cost: self.cfg.cost_per_attempt,
            });
        }
        Some(closed)
    }

    /// An attempt ended with `outcome`: tell the policies, then finish the
    /// call, retry, or hedge.
    #[inline(always)]
    fn end_attempt<S: RowSink>(
        &mut self,
        att: AttRef,
        outcome: AttemptOutcome,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        let (call, pod) = stale!(ctx.sh.reqs.att(att).map(|a| (a.call, a.pod)));
        let closed = stale!(self.close_attempt(att, outcome, ctx));
        let success = outcome == AttemptOutcome::Success;
        // For a budget's report only: gRPC's qualified failure, an answer
        // the client would retry (or, hedging, a non-fatal one) or a
        // pushback saying not to.
        let retryable = self.stateful
            && (match &self.cfg.hedging {
                Some(h) => h.non_fatal.iter().any(|r| r.matches(outcome)),
                None => self.cfg.retry.retry_on.iter().any(|r| r.matches(outcome)),
            } || matches!(outcome, AttemptOutcome::ServerError(_, Pushback::DontRetry)));
        let mut moves = Vec::new();
        if let Some(set) = self.policy(pod, ctx.now()) {
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
            for gate in set.gates.iter_mut() {
                watching(gate.as_mut(), &mut moves, |g| g.on_attempt_end(now, &end));
            }
        }
        for m in moves {
            self.breaker_moved(pod, m, ctx);
        }
        if self.cfg.hedging.is_some() {
            self.after_hedged_attempt(call, outcome, ctx);
        } else {
            self.after_attempt(call, outcome, closed, ctx);
        }
    }

    /// Hedging: the first success wins and cancels the rest; a non-fatal
    /// failure sends the next hedge at once (or when the server's pushback
    /// says, the ones after it a hedging delay apart); a pushback saying
    /// not to retry sends no more; a fatal failure ends the call (gRFC
    /// A6's summary of hedging logic).
    fn after_hedged_attempt<S: RowSink>(
        &mut self,
        call: CallRef,
        outcome: AttemptOutcome,
        ctx: &mut Ctx<'_, S>,
    ) {
        let Some(h) = self.cfg.hedging.as_ref() else {
            return; // not hedging
        };
        let non_fatal = h.non_fatal.iter().any(|r| r.matches(outcome));
        let max_attempts = h.max_attempts;
        let honour = self.cfg.retry.retry_after.mode != RetryAfterMode::Ignore;
        let cap = self.cfg.retry.retry_after.cap;
        let c = stale!(ctx.sh.reqs.call_mut(call));
        if c.phase != CallPhase::Calling {
            return;
        }
        let pushback = match outcome {
            AttemptOutcome::ServerError(_, Pushback::DontRetry) => {
                c.hedging_frozen = true;
                None
            }
            AttemptOutcome::ServerError(_, Pushback::After(ns))
            | AttemptOutcome::RateLimited(ns)
                if honour =>
            {
                // A wait over the cap means "do not retry", as for retries.
                let wait = SimDuration::from_nanos(ns);
                c.hedging_frozen |= cap.is_some_and(|cap| wait > cap);
                Some(wait)
            }
            _ => None,
        };
        let (attempts, live, frozen) = (c.attempts, c.live_count(), c.hedging_frozen);
        if outcome == AttemptOutcome::Success {
            self.finish_call(call, Reason::Success, ctx);
        } else if !non_fatal {
            self.finish_call(call, Reason::from(outcome), ctx);
        } else if attempts < max_attempts && !frozen {
            match pushback {
                Some(wait) => self.schedule_hedge_after(call, wait, ctx),
                None => {
                    let cause = match outcome {
                        AttemptOutcome::Timeout => RetryCause::Timeout,
                        AttemptOutcome::RateLimited(_) => RetryCause::Throttled,
                        _ => RetryCause::Transient,
                    };
                    self.send_hedge(call, cause, ctx);
                }
            }
        } else if live == 0 {
            self.finish_call(call, Reason::from(outcome), ctx);
        }
    }

    /// Retries: decide whether, when and at what cost the next attempt
    /// goes, or finish the call.
    #[inline(always)]
    fn after_attempt<S: RowSink>(
        &mut self,
        call: CallRef,
        outcome: AttemptOutcome,
        closed: Closed,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        if outcome == AttemptOutcome::Success {
            self.finish_call(call, Reason::Success, ctx);
            return;
        }
        let reason = Reason::from(outcome);
        let c = stale!(ctx.sh.reqs.call(call));
        if c.phase != CallPhase::Calling {
            return;
        }
        let (idempotent, pod) = (c.idempotent, c.pod);
        let r = &self.cfg.retry;
        let min_attempt_budget = self.cfg.min_attempt_budget;
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
        let resets = r.retry_after.resets_backoff;
        let pushback_used = server_says.is_some() && mode != RetryAfterMode::Ignore && !fast;
        let counts = !fast && (!pushback_used || r.retry_after.counts_as_retry);
        if !(retryable || fast) || (counts && c.retries_used >= r.max_retries.min(c.retry_cap)) {
            self.finish_call(call, reason, ctx);
            return;
        }
        if pushback_used
            && let (Some(ra), Some(cap)) = (server_says, r.retry_after.cap)
            && ra > cap
        {
            self.finish_call(call, reason, ctx);
            return;
        }
        let delay = if fast {
            SimDuration::ZERO
        } else {
            let backoff = match (&r.throttled_backoff, outcome) {
                (Some(b), AttemptOutcome::RateLimited(_)) => b.clone(),
                _ => r.backoff.clone(),
            };
            let jitter = r.retry_after.jitter;
            let max_over = r.retry_after.max_over_backoff;
            let n = c.retries_used - c.backoff_from + 1;
            let c = stale!(ctx.sh.reqs.call_mut(call));
            let mut drawn = backoff.delay(n, &mut c.backoff, &mut self.backoff_rng);
            if let Some(a) = self
                .policy(pod, ctx.now())
                .and_then(|set| set.adaptive.as_ref())
            {
                drawn = drawn.mul_f64(a.multiplier());
            }
            // Drawn only when configured, so no other draw moves.
            let asked = server_says.map(|ra| match jitter > 0.0 {
                true => {
                    let u: f64 = self.backoff_rng.random();
                    ra.mul_f64(1.0 + jitter * u)
                }
                false => ra,
            });
            match (asked, mode) {
                (Some(ra), RetryAfterMode::Honor) => ra,
                (Some(ra), RetryAfterMode::AtLeast) => {
                    let wait = drawn.max(ra);
                    max_over.map_or(wait, |over| wait.min(drawn.saturating_add(over)))
                }
                _ => drawn,
            }
        };
        let c = stale!(ctx.sh.reqs.call(call));
        if let Some(d) = c.deadline
            && now.saturating_add(delay).saturating_add(min_attempt_budget) >= d
        {
            self.finish_call(call, reason, ctx);
            return;
        }
        let cause = match outcome {
            AttemptOutcome::Timeout => RetryCause::Timeout,
            AttemptOutcome::RateLimited(_) => RetryCause::Throttled,
            _ => RetryCause::Transient,
        };
        let cost = match self
            .policy(pod, ctx.now())
            .and_then(|set| set.budget.as_mut())
        {
            None => 0,
            Some(b) => match b.try_retry(now, cause) {
                Some(cost) => cost,
                None => {
                    ctx.sh.rec.count(Count::BudgetDenied, 1);
                    self.finish_call(call, Reason::BudgetExhausted, ctx);
                    return;
                }
            },
        };
        if pushback_used {
            ctx.sh.rec.count(Count::RetryAfterWaits, 1);
        }
        ctx.sh.rec.latency(Latency::RetryDelay, delay);
        let c = stale!(ctx.sh.reqs.call_mut(call));
        c.pending_retry_cost = cost;
        if counts {
            c.retries_used += 1;
        }
        if pushback_used && mode == RetryAfterMode::Honor && resets {
            // gRPC: after a pushback the backoff starts over from its
            // first step.
            c.backoff_from = c.retries_used;
            c.backoff = Default::default();
        }
        if fast {
            c.fast_retries_used += 1;
        }
        if delay.is_zero() && outcome != AttemptOutcome::BreakerRefused {
            self.start_attempt(call, false, ctx);
        } else {
            // A refusal's retry goes through the scheduler even after no
            // delay, so a run of refusals is a run of events, not of calls.
            let attempt = c.attempts;
            c.phase = CallPhase::Backoff;
            c.aux_timer = Some(
                ctx.sched.schedule_in_stream(
                    stream::RETRY_DELAYS,
                    delay,
                    ClientEvent::RetryDelayElapsed {
                        edge: self.index,
                        call,
                        attempt,
                    }
                    .into(),
                ),
            );
        }
    }

    fn on_retry_delay_elapsed<S: RowSink>(
        &mut self,
        call: CallRef,
        attempt: u32,
        ctx: &mut Ctx<'_, S>,
    ) {
        let c = stale!(ctx.sh.reqs.call_mut(call));
        if c.phase != CallPhase::Backoff || c.attempts != attempt {
            return;
        }
        c.aux_timer = None;
        c.phase = CallPhase::Calling;
        self.start_attempt(call, false, ctx);
    }

    fn on_call_deadline<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        if let Some(c) = ctx.sh.reqs.call_mut(call) {
            c.deadline_timer = None;
        }
        self.finish_call(call, Reason::DeadlineExceeded, ctx);
    }

    /// `call` is over with `reason`: the client closes it, and asks the
    /// world to tell its request.
    #[inline(always)]
    fn finish_call<S: RowSink>(&mut self, call: CallRef, reason: Reason, ctx: &mut Ctx<'_, S>) {
        let req = stale!(ctx.sh.reqs.call(call)).req;
        self.close_call(call, reason, false, ctx);
        ctx.ask(Ask::CallEnded {
            req,
            call,
            edge: self.index,
            reason,
        });
    }

    /// Cuts every attempt of `call` still in progress.
    fn cancel_live_attempts<S: RowSink>(
        &mut self,
        call: CallRef,
        hedges_lost: bool,
        ctx: &mut Ctx<'_, S>,
    ) {
        let live: Vec<AttRef> = match ctx.sh.reqs.call(call) {
            Some(c) => c.live_attempts().collect(),
            None => return,
        };
        for att in live {
            self.release_attempt(att, ctx);
            self.close_attempt(att, AttemptOutcome::Cancelled, ctx);
            if hedges_lost {
                ctx.sh.rec.count(Count::HedgesCancelled, 1);
            }
        }
        if ctx.sh.reqs.call(call).is_none_or(|c| c.live_count() != 0) {
            ctx.violated(|| "attempts left behind by a finished call".into());
        }
    }

    /// Ends `call` without telling its request (its request ended it, or
    /// [`Client::finish_call`] tells it): what attempts are running are
    /// cut, its timers cancelled, its record forgotten. A `cut` call
    /// counts as neither answered nor failed.
    #[inline(always)]
    pub(crate) fn close_call<S: RowSink>(
        &mut self,
        call: CallRef,
        reason: Reason,
        cut: bool,
        ctx: &mut Ctx<'_, S>,
    ) {
        let c = stale!(ctx.sh.reqs.call(call));
        if c.live.iter().any(Option::is_some) {
            let hedging = self.cfg.hedging.is_some() && reason == Reason::Success;
            self.cancel_live_attempts(call, hedging, ctx);
        }
        let c = stale!(ctx.sh.reqs.call_mut(call));
        let retried = c.retried;
        for t in [c.aux_timer.take(), c.deadline_timer.take()]
            .into_iter()
            .flatten()
        {
            ctx.sched.cancel(t);
        }
        if c.holds_place || c.phase == CallPhase::WaitingPlace {
            self.leave_bulkhead(call, sample_of(reason, cut), ctx);
        }
        if self.stateful {
            self.drop_pending_retry(call, ctx);
        }
        ctx.sh.reqs.remove_call(call);
        ctx.sh.rec.node_call_ended(self.index, reason, cut, retried);
    }
}

impl Client {
    /// Each bulkhead's places taken against the calls that hold one, and
    /// its line against the calls waiting: a place not given back would
    /// refuse calls for the rest of the run, a call lost from its line
    /// would wait for ever. A place free while calls wait is a wake-up
    /// missed.
    /// The edge's adaptive places as its level last told them (`told`)
    /// against its bulkheads' limits summed, while no pod's bulkhead was
    /// made since the last full sum.
    pub(crate) fn check_bulkhead_limit(&self, told: i64) -> Result<(), String> {
        let adaptive = self.cfg.bulkhead.is_some_and(|b| b.adaptive.is_some());
        if !adaptive || self.policies.len() != self.limit_sets {
            return Ok(());
        }
        let sum: i64 = self
            .policies
            .iter()
            .filter_map(|set| set.bulkhead.as_ref())
            .map(|b| i64::from(b.limit()))
            .sum();
        match sum == told {
            true => Ok(()),
            false => Err(format!(
                "its adaptive bulkheads allow {sum} places, its level says {told}"
            )),
        }
    }

    pub(crate) fn check_bulkheads(&self, reqs: &Requests) -> Result<(), String> {
        if self.cfg.bulkhead.is_none() {
            return Ok(());
        }
        let mut held = vec![0u32; self.policies.len()];
        let mut waiting = vec![0usize; self.policies.len()];
        for call in reqs.all_calls() {
            let Some(c) = reqs.call(call).filter(|c| c.edge == self.index) else {
                continue;
            };
            let waits = c.phase == CallPhase::WaitingPlace;
            if !c.holds_place && !waits {
                continue;
            }
            if c.holds_place && waits {
                return Err("a call both holds a place in its bulkhead and waits for one".into());
            }
            let set = match self.cfg.scope {
                Scope::Global => 0,
                Scope::Pod => c.pod as usize,
            };
            let (Some(h), Some(w)) = (held.get_mut(set), waiting.get_mut(set)) else {
                return Err(format!(
                    "a call is in pod {set}'s bulkhead, which was never made"
                ));
            };
            if waits {
                *w += 1;
            } else {
                *h += 1;
            }
        }
        let sets = self.policies.iter().zip(held).zip(waiting);
        for (set, ((policies, held), waiting)) in sets.enumerate() {
            let Some(b) = policies.bulkhead.as_ref() else {
                if held > 0 || waiting > 0 {
                    return Err(format!(
                        "bulkhead {set} is missing, {held} calls holding a place and {waiting} waiting"
                    ));
                }
                continue;
            };
            let taken = b.in_use();
            if taken != held {
                return Err(format!(
                    "bulkhead {set}: {taken} places taken, {held} calls holding one"
                ));
            }
            if b.waiting() != waiting {
                return Err(format!(
                    "bulkhead {set}: {} calls in line, {waiting} calls waiting",
                    b.waiting()
                ));
            }
            if waiting > 0 && !b.is_full() {
                return Err(format!(
                    "bulkhead {set}: {waiting} calls wait while a place is free"
                ));
            }
            b.check_line(|w: &CallRef| waits_for_place(reqs, *w))
                .map_err(|e| format!("bulkhead {set}: {e}"))?;
        }
        Ok(())
    }

    /// The retry `call`'s budget allowed and that will not start now (its
    /// call ends in the backoff, or a gate refused it) gives back what it
    /// holds: a budget on concurrency counts a retry from its approval.
    fn drop_pending_retry<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let c = stale!(ctx.sh.reqs.call_mut(call));
        let cost = std::mem::take(&mut c.pending_retry_cost);
        if cost == 0 {
            return;
        }
        let pod = c.pod;
        if let Some(b) = self.policy(pod, now).and_then(|set| set.budget.as_mut()) {
            b.on_retry_dropped(now, cost);
        }
    }

    /// `call`, ending, leaves its bulkhead: its place, given to the first
    /// call still waiting (which goes on at the next step), or its place
    /// in line. An adaptive limit takes the call's `sample` first, and
    /// when it rises gives the new place too.
    #[inline(never)]
    fn leave_bulkhead<S: RowSink>(&mut self, call: CallRef, sample: Sample, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let c = stale!(ctx.sh.reqs.call(call));
        let (pod, held) = (c.pod, c.holds_place);
        let Some(b) = self.policy(pod, now).and_then(|set| set.bulkhead.as_mut()) else {
            return;
        };
        if !held {
            b.waiter_left();
            ctx.sh.rec.bulkhead_waiting(self.index, now, -1);
            return;
        }
        let before = b.limit();
        b.sample(call.slot(), now, sample);
        b.leave();
        let after = b.limit();
        if after != before {
            if self.policies.len() == self.limit_sets {
                let change = i64::from(after) - i64::from(before);
                ctx.sh.rec.node_bulkhead_limit_by(self.index, now, change);
            } else {
                self.sync_bulkhead_limit(ctx);
            }
        }
        loop {
            let reqs = &ctx.sh.reqs;
            let Some(b) = self.policy(pod, now).and_then(|set| set.bulkhead.as_mut()) else {
                return;
            };
            let Some(next) = b.admit_next(|w: &CallRef| waits_for_place(reqs, *w)) else {
                return;
            };
            b.took_place(next.slot(), now);
            self.give_place(next, ctx);
        }
    }

    /// The places this edge's adaptive bulkheads allow, summed, into its
    /// node's level (at the start, at a deploy, and at the first change
    /// after a pod's bulkhead was made, which then joins the sum; other
    /// changes are told by themselves).
    pub(crate) fn sync_bulkhead_limit<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        self.limit_sets = self.policies.len();
        let adaptive = self.cfg.bulkhead.is_some_and(|b| b.adaptive.is_some());
        let places: u64 = match adaptive {
            true => self
                .policies
                .iter()
                .filter_map(|set| set.bulkhead.as_ref())
                .map(|b| u64::from(b.limit()))
                .sum(),
            false => 0,
        };
        let now = ctx.now();
        ctx.sh
            .rec
            .node_bulkhead_limit(self.index, now, i64::try_from(places).unwrap_or(i64::MAX));
    }

    /// `call`, out of its bulkhead's line, holds a place: it goes on at
    /// the next step (an event of no delay, as every leg), its wait's
    /// timer cancelled.
    fn give_place<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let c = stale!(ctx.sh.reqs.call_mut(call));
        c.phase = CallPhase::Calling;
        c.holds_place = true;
        if let Some(t) = c.aux_timer.take() {
            ctx.sched.cancel(t);
        }
        ctx.sh.rec.bulkhead_waiting(self.index, now, -1);
        self.schedule_go_on(call, ctx);
    }

    /// Takes every call waiting in this client's bulkheads out of line,
    /// first come first, pod by pod: a deploy is replacing them.
    fn drain_bulkhead_lines<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) -> Vec<CallRef> {
        let reqs = &ctx.sh.reqs;
        let mut calls = Vec::new();
        for set in &mut self.policies {
            if let Some(b) = set.bulkhead.as_mut() {
                calls.extend(b.drain(|w: &CallRef| waits_for_place(reqs, *w)));
            }
        }
        calls
    }

    /// `call` waited in a bulkhead a deploy replaced: it takes a place in
    /// the new one, or waits in its line (its wait starting again), or is
    /// refused; with no bulkhead now it goes on.
    fn rejoin_bulkhead<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        let c = stale!(ctx.sh.reqs.call_mut(call));
        let pod = c.pod;
        c.phase = CallPhase::Calling;
        if let Some(t) = c.aux_timer.take() {
            ctx.sched.cancel(t);
        }
        ctx.sh.rec.bulkhead_waiting(self.index, now, -1);
        let reqs = &ctx.sh.reqs;
        let bulkhead = if self.stateful {
            self.policy(pod, now).and_then(|set| set.bulkhead.as_mut())
        } else {
            None
        };
        let Some(b) = bulkhead else {
            return self.schedule_go_on(call, ctx);
        };
        if b.try_enter() {
            b.took_place(call.slot(), now);
            stale!(ctx.sh.reqs.call_mut(call)).holds_place = true;
            return self.schedule_go_on(call, ctx);
        }
        if b.wait(call, |w: &CallRef| waits_for_place(reqs, *w)) {
            return self.wait_for_place(call, ctx);
        }
        // Refused, as a call starting now would be.
        ctx.sh.rec.count(Count::BulkheadRejected, 1);
        self.finish_call(call, Reason::BulkheadFull, ctx);
    }

    /// `call`, given a place (or needing none), goes on at the next step.
    fn schedule_go_on<S: RowSink>(&mut self, call: CallRef, ctx: &mut Ctx<'_, S>) {
        ctx.sched.schedule_now(
            ClientEvent::BulkheadPlaceGiven {
                edge: self.index,
                call,
            }
            .into(),
        );
    }
}

/// What a call's end tells an adaptive bulkhead limit, by the
/// `Limiter.Listener` contract of Netflix's library: a success is a
/// sample; a call rejected by a limit outside the client (a 5xx: the
/// call's end keeps no status code, so a 500 counts with the 503s; a
/// connection refused; a pod restarted under it; no pod in rotation; a
/// pod's full queue; a 429) is dropped; a timeout (an attempt's, the
/// call's deadline, no connection in time) is dropped unless the limit
/// says otherwise; anything else (a 4xx, the client's own breaker,
/// budget or throttle, a call cut short) is no sample.
fn sample_of(reason: Reason, cut: bool) -> Sample {
    if cut {
        return Sample::Ignored;
    }
    match reason {
        Reason::Success => Sample::Success,
        Reason::ServerError
        | Reason::ConnectFailure
        | Reason::PodRestarted
        | Reason::Unavailable
        | Reason::PodOverloaded
        | Reason::RateLimited => Sample::Dropped,
        Reason::AttemptTimeout | Reason::DeadlineExceeded | Reason::PoolTimeout => Sample::TimedOut,
        _ => Sample::Ignored,
    }
}

/// Whether `call` still waits in a bulkhead's line.
#[inline]
fn waits_for_place(reqs: &Requests, call: CallRef) -> bool {
    reqs.call(call)
        .is_some_and(|c| c.phase == CallPhase::WaitingPlace)
}

/// Sets `att`'s phase, if it lives.
#[inline]
fn set_phase(reqs: &mut Requests, att: AttRef, phase: AttemptPhase) {
    if let Some(a) = reqs.att_mut(att) {
        a.phase = phase;
    }
}

// ---------------------------------------------------------------------
// Configuration: what users write for this part, its defaults, and its
// check (run by `WorldConfig::validate` under the section's path).
// ---------------------------------------------------------------------

/// Which attempt outcomes a retry follows. Written as names or HTTP
/// status codes: `[timeout, connect_failure, 5xx, 429]`, `[502, 503, 504]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RetryOn {
    /// The attempt timed out.
    Timeout,
    /// The connection could not be set up.
    ConnectFailure,
    /// Any 5xx answer (`5xx`, `server_error`).
    ServerError,
    /// Any 4xx answer but 429 (`4xx`, `client_error`).
    ClientError,
    /// A 429 answer (`429`, `rate_limited`).
    RateLimited,
    /// No pool connection within the acquire timeout.
    PoolTimeout,
    /// The client's own breaker refused the call (`breaker_open`):
    /// Resilience4j's Retry takes its `CallNotPermittedException` like any
    /// other. Needs a backoff that waits (a refusal retried at once is
    /// refused again).
    BreakerOpen,
    /// One status code.
    Status(u16),
}

impl RetryOn {
    fn name(self) -> String {
        match self {
            RetryOn::Timeout => "timeout".into(),
            RetryOn::ConnectFailure => "connect_failure".into(),
            RetryOn::ServerError => "5xx".into(),
            RetryOn::ClientError => "4xx".into(),
            RetryOn::RateLimited => "429".into(),
            RetryOn::PoolTimeout => "pool_timeout".into(),
            RetryOn::BreakerOpen => "breaker_open".into(),
            RetryOn::Status(c) => c.to_string(),
        }
    }

    fn parse(s: &str) -> Result<RetryOn, String> {
        Ok(match s {
            "timeout" => RetryOn::Timeout,
            "connect_failure" => RetryOn::ConnectFailure,
            "5xx" | "server_error" => RetryOn::ServerError,
            "4xx" | "client_error" => RetryOn::ClientError,
            "429" | "rate_limited" => RetryOn::RateLimited,
            "pool_timeout" => RetryOn::PoolTimeout,
            "breaker_open" => RetryOn::BreakerOpen,
            code => match code.parse::<u16>() {
                Ok(c) if (100..600).contains(&c) => RetryOn::Status(c),
                _ => {
                    return Err(format!(
                        "unknown retry condition {code:?}; expected timeout, connect_failure, 5xx, 4xx, 429, pool_timeout, breaker_open or a status code"
                    ));
                }
            },
        })
    }

    /// Whether an attempt that ended with `o` matches.
    pub fn matches(self, o: AttemptOutcome) -> bool {
        match (self, o) {
            (RetryOn::Timeout, AttemptOutcome::Timeout) => true,
            (RetryOn::ConnectFailure, AttemptOutcome::ConnectFailure) => true,
            (RetryOn::ServerError, AttemptOutcome::ServerError(..)) => true,
            (RetryOn::ClientError, AttemptOutcome::ClientError(_)) => true,
            (RetryOn::RateLimited, AttemptOutcome::RateLimited(_)) => true,
            (RetryOn::PoolTimeout, AttemptOutcome::PoolTimeout) => true,
            (RetryOn::BreakerOpen, AttemptOutcome::BreakerRefused) => true,
            (
                RetryOn::Status(c),
                AttemptOutcome::ServerError(code, _) | AttemptOutcome::ClientError(code),
            ) => c == code,
            (RetryOn::Status(429), AttemptOutcome::RateLimited(_)) => true,
            _ => false,
        }
    }
}

impl Serialize for RetryOn {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RetryOn::Status(c) => s.serialize_u16(*c),
            other => s.serialize_str(&other.name()),
        }
    }
}

impl<'de> Deserialize<'de> for RetryOn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RetryOn;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a retry condition (timeout, connect_failure, 5xx, 4xx, 429, pool_timeout, breaker_open) or a status code")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RetryOn, E> {
                RetryOn::parse(v).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RetryOn, E> {
                RetryOn::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RetryOn, E> {
                RetryOn::parse(&v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// How a 429's `Retry-After` (or a 503's pushback) is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryAfterMode {
    /// Use the backoff; ignore the header.
    Ignore,
    /// Wait exactly what the server says (gRPC pushback, Envoy's
    /// rate-limited backoff); the backoff schedule then starts over from
    /// its first step, as gRPC's does.
    Honor,
    /// Wait the longer of the backoff and the header.
    AtLeast,
}

impl RetryAfterMode {
    /// The name as written in config.
    pub fn name(self) -> &'static str {
        match self {
            RetryAfterMode::Ignore => "ignore",
            RetryAfterMode::Honor => "honor",
            RetryAfterMode::AtLeast => "at_least",
        }
    }
}

/// Server pushback handling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryAfterConfig {
    /// How the header is used (default `ignore`).
    pub mode: RetryAfterMode,
    /// A header longer than this means "do not retry" (default: none).
    pub cap: Option<SimDuration>,
    /// Whether a retry after a Retry-After wait counts against
    /// `max_retries` (default true; seed 002 says it should not).
    pub counts_as_retry: bool,
    /// Jitter on the wait the server asked for: the wait is Retry-After ×
    /// U(1, 1 + jitter), never earlier than asked (default 0: every client
    /// told "1s" returns exactly 1 s later, in step with the others).
    pub jitter: f64,
    /// With `at_least`, the most the wait may exceed the drawn backoff by:
    /// the AWS SDKs' 2026 standard mode waits `x-amz-retry-after` clamped
    /// to [backoff, backoff + 5 s] (default: no bound).
    pub max_over_backoff: Option<SimDuration>,
    /// With `honor`, whether the backoff starts over from its first step
    /// after a wait the server set (default true, gRPC's rule; Polly's
    /// schedule carries on).
    pub resets_backoff: bool,
}

impl Default for RetryAfterConfig {
    fn default() -> Self {
        RetryAfterConfig {
            mode: RetryAfterMode::Ignore,
            cap: None,
            counts_as_retry: true,
            jitter: 0.0,
            max_over_backoff: None,
            resets_backoff: true,
        }
    }
}

/// A fast first layer of retries (seed 001): immediate, only for quick
/// gateway errors, not counted against `max_retries`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FastRetry {
    /// Fast retries per call (default 1).
    #[serde(default = "one_u32")]
    pub max: u32,
    /// Statuses that qualify (default 502, 503, 504).
    #[serde(default = "gateway_errors")]
    pub statuses: Vec<u16>,
    /// Only when the failed attempt took less than this (default 100ms:
    /// a quick error is not real overload).
    #[serde(default = "hundred_ms")]
    pub within: SimDuration,
}

fn one_u32() -> u32 {
    1
}
fn gateway_errors() -> Vec<u16> {
    vec![502, 503, 504]
}
fn hundred_ms() -> SimDuration {
    millis(100)
}

/// Retries of one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Retries after the first attempt (default 0).
    pub max_retries: u32,
    /// Delay before each retry (default `fixed: { delay: 1s }`).
    pub backoff: Backoff,
    /// Delay before a retry of a throttling answer (429), where it differs
    /// from `backoff` (the AWS SDKs' 2026 standard mode: 1 s where other
    /// errors start at 50 ms); default: `backoff`. Both count the same
    /// retries and share the request's memory of its last delay.
    pub throttled_backoff: Option<Backoff>,
    /// Outcomes that are retried (default: timeout, connect_failure, 5xx,
    /// 429, pool_timeout).
    pub retry_on: Vec<RetryOn>,
    /// Retry only idempotent requests (default false).
    pub idempotent_only: bool,
    /// Server pushback.
    pub retry_after: RetryAfterConfig,
    /// Optional fast first layer.
    pub fast_retry: Option<FastRetry>,
    /// Backoff that grows while the client's recent attempts fail (default:
    /// none).
    pub adaptive: Option<crate::policy::adaptive_backoff::AdaptiveBackoffSpec>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_retries: 0,
            backoff: Backoff::fixed(secs(1)),
            throttled_backoff: None,
            retry_on: vec![
                RetryOn::Timeout,
                RetryOn::ConnectFailure,
                RetryOn::ServerError,
                RetryOn::RateLimited,
                RetryOn::PoolTimeout,
            ],
            idempotent_only: false,
            retry_after: RetryAfterConfig::default(),
            fast_retry: None,
            adaptive: None,
        }
    }
}

/// Where a budget, breaker or throttle lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One per pod (per client process): the default, as libraries do.
    Pod,
    /// One shared by every pod.
    Global,
}

/// gRPC A6 hedging: another attempt every `delay`, up to `max_attempts`;
/// the first success cancels the rest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HedgingConfig {
    /// Attempts in all, the original included (2..=5; gRPC clamps to 5).
    pub max_attempts: u32,
    /// Time between hedges (`0s` sends all at once).
    pub delay: SimDuration,
    /// Answers that trigger the next hedge at once instead of ending the
    /// call (default: 5xx).
    #[serde(default = "non_fatal")]
    pub non_fatal: Vec<RetryOn>,
}

fn non_fatal() -> Vec<RetryOn> {
    vec![RetryOn::ServerError]
}

/// When the per-attempt timeout starts counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutStart {
    /// When the attempt starts: pool wait and connect included (Go's
    /// `http.Client.Timeout`).
    AttemptStart,
    /// When a connection is in hand (Apache HttpClient's socket timeout,
    /// with the pool wait bounded separately by `acquire_timeout`).
    ConnectionAcquired,
}

/// How a pod calls the upstream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientConfig {
    /// A named policy to start from (`stormsim list` shows them); fields
    /// written beside it override the preset's. The experiment loader
    /// expands it; in Rust use `policy::presets::get(name)?.apply(&mut
    /// cfg)` instead, and a world given an unexpanded preset refuses to
    /// run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Longest a new connection may take to set up (default `30s`).
    pub connect_timeout: Option<SimDuration>,
    /// Per-attempt timeout (default `30s`).
    pub attempt_timeout: Option<SimDuration>,
    /// When the per-attempt timeout starts (default `attempt_start`).
    pub timeout_starts: TimeoutStart,
    /// Deadline across all attempts of one call (default: none).
    pub total_deadline: Option<SimDuration>,
    /// No attempt starts with less than this left before the total
    /// deadline (default 0s).
    pub min_attempt_budget: SimDuration,
    /// Send the deadline with each attempt so the upstream can drop work
    /// nobody waits for (default false).
    pub propagate_deadline: bool,
    /// Retries.
    pub retry: RetryConfig,
    /// A retry budget (default: none).
    pub budget: Option<BudgetSpec>,
    /// A circuit breaker (default: none).
    pub breaker: Option<BreakerSpec>,
    /// A bound on this client's calls in progress at once, the call past
    /// it failing `bulkhead_full` (default: none).
    pub bulkhead: Option<BulkheadSpec>,
    /// Serve a fallback (degraded answer) when the breaker refuses a call
    /// (default false: the call fails `breaker_open`).
    pub fallback: bool,
    /// Client-side adaptive throttling (default: none).
    pub throttle: Option<ThrottleSpec>,
    /// Where the budget, breaker and throttle live (default `pod`).
    pub scope: Scope,
    /// Hedging instead of retries (default: none).
    pub hedging: Option<HedgingConfig>,
    /// What one attempt costs, in any unit (an LLM call's tokens, a paid
    /// API's cents): the dataset then counts the cost of every attempt and
    /// the share wasted on attempts that served no answer (default: none).
    /// In a graph each call's client prices its own attempts; the run's
    /// cost is their sum. A deploy does not reprice attempts.
    pub cost_per_attempt: Option<f64>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            preset: None,
            connect_timeout: Some(secs(30)),
            attempt_timeout: Some(secs(30)),
            timeout_starts: TimeoutStart::AttemptStart,
            total_deadline: None,
            min_attempt_budget: SimDuration::ZERO,
            propagate_deadline: false,
            retry: RetryConfig::default(),
            budget: None,
            breaker: None,
            bulkhead: None,
            fallback: false,
            throttle: None,
            scope: Scope::Pod,
            hedging: None,
            cost_per_attempt: None,
        }
    }
}

impl ClientConfig {
    /// Checks the client policy, `at` its path (`client`,
    /// `services.orders.calls[0].client`).
    pub(crate) fn check(&self, at: &str, p: &mut Problems) {
        if let (Some(t), Some(d)) = (self.attempt_timeout, self.total_deadline)
            && t > d
        {
            p.add(
                &format!("{at}.attempt_timeout"),
                format!("{t} is longer than {at}.total_deadline ({d}): the deadline would always cut it first"),
            );
        }
        if let Some(c) = self.cost_per_attempt
            && (!c.is_finite() || c < 0.0)
        {
            p.add(
                &format!("{at}.cost_per_attempt"),
                format!("must be a non-negative amount, found {c}"),
            );
        }
        for (path, d) in [
            (&format!("{at}.connect_timeout"), self.connect_timeout),
            (&format!("{at}.attempt_timeout"), self.attempt_timeout),
            (&format!("{at}.total_deadline"), self.total_deadline),
        ] {
            if let Some(d) = d {
                p.positive(path, d);
            }
        }
        let r = &self.retry;
        let jitter = r.retry_after.jitter;
        if !(0.0..=10.0).contains(&jitter) {
            p.add(
                &format!("{at}.retry.retry_after.jitter"),
                format!("must be within 0..=10 (a wait of up to 11 × Retry-After), found {jitter}"),
            );
        }
        if let Err((f, m)) = r.backoff.validate() {
            p.add(&format!("{at}.retry.backoff.{f}"), m);
        }
        if r.retry_on.contains(&RetryOn::BreakerOpen) && r.backoff.max_secs(1) == 0.0 {
            p.add(
                &format!("{at}.retry.retry_on"),
                "breaker_open needs a backoff that waits: a refusal retried at once is refused again",
            );
        }
        if let Some(b) = &r.throttled_backoff
            && let Err((f, m)) = b.validate()
        {
            p.add(&format!("{at}.retry.throttled_backoff.{f}"), m);
        }
        if let Some(over) = r.retry_after.max_over_backoff {
            if r.retry_after.mode != RetryAfterMode::AtLeast {
                p.add(
                    &format!("{at}.retry.retry_after.max_over_backoff"),
                    format!(
                        "bounds the wait of mode at_least only, found mode {}",
                        r.retry_after.mode.name()
                    ),
                );
            }
            p.positive(&format!("{at}.retry.retry_after.max_over_backoff"), over);
        }
        if !r.retry_after.resets_backoff && r.retry_after.mode != RetryAfterMode::Honor {
            p.add(
                &format!("{at}.retry.retry_after.resets_backoff"),
                format!(
                    "says what follows a wait of mode honor only, found mode {}",
                    r.retry_after.mode.name()
                ),
            );
        }
        if let Some(a) = &r.adaptive
            && let Err((f, m)) = a.validate()
        {
            p.add(&format!("{at}.retry.adaptive.{f}"), m);
        }
        if let Some(fr) = &r.fast_retry
            && fr.statuses.iter().any(|s| !(500..600).contains(s))
        {
            p.add(
                &format!("{at}.retry.fast_retry.statuses"),
                "fast retries are for 5xx statuses only",
            );
        }
        if let Some(b) = &self.budget
            && let Err((f, m)) = b.validate()
        {
            p.add(&format!("{at}.budget.{f}"), m);
        }
        if let Some(b) = &self.breaker
            && let Err((f, m)) = b.validate()
        {
            p.add(&format!("{at}.breaker.{f}"), m);
        }
        if let Some(b) = &self.bulkhead
            && let Err((f, m)) = b.validate()
        {
            p.add(&format!("{at}.bulkhead.{f}"), m);
        }
        if let Some(t) = &self.throttle
            && let Err((f, m)) = t.validate()
        {
            p.add(&format!("{at}.throttle.{f}"), m);
        }
        if let Some(h) = &self.hedging {
            if !(2..=crate::request::MAX_LIVE as u32).contains(&h.max_attempts) {
                p.add(
                    &format!("{at}.hedging.max_attempts"),
                    format!(
                        "must be 2 to 5 (gRPC clamps to 5), found {}",
                        h.max_attempts
                    ),
                );
            }
            if r.max_retries > 0 {
                p.add(&format!("{at}.hedging"), format!("a call uses either retries or hedging, never both: set {at}.retry.max_retries to 0"));
            }
        }
        if let Some(name) = &self.preset {
            let hint = match crate::policy::presets::get(name) {
                Some(_) => "expand it first (the experiment loader does; in Rust, presets::get(name).apply(&mut cfg))".to_string(),
                None => match crate::policy::presets::closest(name) {
                    Some(close) => format!("unknown preset {name:?}; did you mean {close:?}?"),
                    None => format!("unknown preset {name:?}; `stormsim list` shows the presets"),
                },
            };
            p.add(&format!("{at}.preset"), hint);
        }
        if self.total_deadline.is_none() && !self.min_attempt_budget.is_zero() {
            p.add(
                &format!("{at}.min_attempt_budget"),
                format!("needs {at}.total_deadline"),
            );
        }
    }
}
