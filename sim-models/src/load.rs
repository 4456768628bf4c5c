//! Load: open-loop arrivals at a rate the timeline may change, closed-loop
//! users with think time, and the user's side of a request at the
//! gateway (its deadline, patience, the service's door, gateway retries,
//! the outcome seen). Other tenants' requests at a dependency are the
//! dependency's (`dependency.rs`).

use crate::config::{ConfigError, RateLimitConfig, WorldConfig};
use crate::context::{Ask, Ctx};
use crate::policy::token_bucket::TokenBucket;
use crate::world::{compile, compile_opt, stream};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use sim_core::deadlines::DeadlineLine;
use sim_core::dist::Dist;
use sim_core::dist::DistSpec;
use sim_core::queue::EventId;
use sim_core::rng::{RngStreams, SimRng};
use sim_core::time::{SimDuration, SimTime};

use crate::outcome::Reason;
use crate::recorder::{Count, Latency, Level, RowSink};
use crate::request::{ReqRef, Requests};

crate::part_events! {
    /// What happens on the users' side.
    pub enum LoadEvent {
        /// An open-loop user sent a request.
        RequestArrived,
        /// A closed-loop user finished thinking and sends a request.
        UserReady {
            /// Which user.
            user: u32,
        },
        /// The earliest gateway deadline in the line is due: every
        /// request whose deadline is now is past it.
        UserDeadlinesDue,
        /// The user's patience ran out.
        UserGaveUp {
            /// The request.
            req: ReqRef,
        },
        /// The service's answer crossed the network back to the gateway.
        ResponseReachedUser {
            /// The request.
            req: ReqRef,
            /// How it ended.
            reason: Reason,
        },
    }
}

/// Whether `req`'s gateway deadline still matters (is live in the line):
/// its user waits for an answer, or, when the gateway stops the service's
/// work at the deadline (`cancels`), the service still works on it.
#[inline]
fn deadline_matters(reqs: &Requests, req: ReqRef, cancels: bool) -> bool {
    reqs.get(req)
        .is_some_and(|q| !q.user_done || (cancels && !q.service_done))
}

/// Exponential gap with mean `1/rate`, drawn as `-ln(1−U)/rate`.
#[inline]
pub(crate) fn exp_gap(rng: &mut SimRng, rate: f64) -> SimDuration {
    let u: f64 = rng.random();
    SimDuration::from_secs_f64(-(1.0 - u).ln() / rate)
}

/// The users' side of the world: who sends requests, when, and how long
/// they wait.
pub struct Load {
    /// What users do (`load`).
    cfg: LoadConfig,
    /// The gateway in front of the entry service (`gateway`).
    gateway: GatewayConfig,
    /// Live open-loop arrival rate (the timeline changes it).
    pub(crate) rate: f64,
    pub(crate) arrival_timer: Option<EventId>,
    pub(crate) arrival_rng: SimRng,
    pub(crate) idempotent_rng: SimRng,
    pub(crate) patience: Option<Dist>,
    pub(crate) patience_rng: SimRng,
    pub(crate) think: Option<Dist>,
    pub(crate) think_rng: SimRng,
    /// The service's own rate limit (`gateway.rate_limit`), if any.
    pub(crate) door: Option<TokenBucket>,
    /// Gateway deadlines (one fixed delay, so armed in order), delivered
    /// by one wake-up at the earliest: no heap entry per request and no
    /// cancellation when it is answered in time (an entry whose request
    /// has its outcome is stale).
    pub(crate) deadlines: DeadlineLine<ReqRef>,
    /// The entry service, where requests enter.
    entry: u32,
}

impl Load {
    /// The load as configured, its distributions compiled once.
    pub(crate) fn new(
        cfg: &WorldConfig,
        entry: u32,
        streams: &RngStreams,
    ) -> Result<Self, Vec<ConfigError>> {
        let think = match &cfg.load.closed_loop {
            Some(c) => Some(compile(&c.think, "load.closed_loop.think")?),
            None => None,
        };
        Ok(Load {
            cfg: cfg.load.clone(),
            gateway: cfg.gateway.clone(),
            rate: cfg.load.rate,
            arrival_timer: None,
            arrival_rng: streams.stream("load/arrivals"),
            idempotent_rng: streams.stream("load/idempotent"),
            patience: compile_opt(&cfg.load.patience, "load.patience")?,
            patience_rng: streams.stream("load/patience"),
            think,
            think_rng: streams.stream("load/think"),
            door: cfg
                .gateway
                .rate_limit
                .as_ref()
                .map(|r| TokenBucket::full(r.burst.map_or(r.rps.max(1.0), f64::from))),
            deadlines: DeadlineLine::new(),
            entry,
        })
    }

    /// Routes the users' side's events to their handlers (the world drives
    /// `UserDeadlinesDue`, one deadline at a time).
    #[inline]
    pub(crate) fn on_event<S: RowSink>(&mut self, e: LoadEvent, ctx: &mut Ctx<'_, S>) {
        match e {
            LoadEvent::RequestArrived => self.on_request_arrived(ctx),
            LoadEvent::UserReady { user } => self.new_request(Some(user), ctx),
            LoadEvent::UserGaveUp { req } => self.on_user_gave_up(req, ctx),
            LoadEvent::ResponseReachedUser { req, reason } => self.user_outcome(req, reason, ctx),
            LoadEvent::UserDeadlinesDue => debug_assert!(false, "driven by the world"),
        }
    }

    /// Every closed-loop user's first request, spread over one think
    /// time.
    pub(crate) fn start_closed_loop<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let users = self.cfg.closed_loop.as_ref().map_or(0, |c| c.users);
        if let Some(think) = &self.think {
            for user in 0..users {
                let d = think.sample(&mut self.think_rng);
                ctx.cross(d, LoadEvent::UserReady { user }.into());
            }
        }
    }

    /// (Re)schedules the next open-loop arrival at the current rate. Poisson
    /// arrivals are memoryless, so a rate change simply redraws the gap
    /// from now; constant spacing restarts its period.
    #[inline(always)]
    pub(crate) fn schedule_next_arrival<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        if let Some(t) = self.arrival_timer.take() {
            ctx.sched.cancel(t);
        }
        if self.rate <= 0.0 {
            return;
        }
        let gap = match self.cfg.arrivals {
            ArrivalProcess::Poisson => exp_gap(&mut self.arrival_rng, self.rate),
            ArrivalProcess::Constant => SimDuration::from_secs_f64(1.0 / self.rate),
        };
        self.arrival_timer = Some(ctx.sched.schedule_in_stream(
            stream::ARRIVALS,
            gap,
            LoadEvent::RequestArrived.into(),
        ));
    }

    /// The timeline sets the open-loop rate.
    pub(crate) fn set_rate<S: RowSink>(&mut self, rate: f64, ctx: &mut Ctx<'_, S>) {
        self.rate = rate;
        self.schedule_next_arrival(ctx);
    }

    fn on_request_arrived<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        self.arrival_timer = None;
        self.schedule_next_arrival(ctx);
        self.new_request(None, ctx);
    }

    /// A user sends a request: it gets its timers and the gateway asks for
    /// it to be dispatched (or answers 429 at the service's door).
    fn new_request<S: RowSink>(&mut self, user: Option<u32>, ctx: &mut Ctx<'_, S>) {
        let now = ctx.now();
        if ctx.sh.reqs.live() as u64 >= ctx.env.limits.max_in_flight {
            let limit = ctx.env.limits.max_in_flight;
            ctx.limit_reached(|| {
                format!("{limit} requests in flight: the limit limits.max_in_flight was reached")
            });
            return;
        }
        ctx.sh.rec.count(Count::Offered, 1);
        ctx.sh.rec.level_add(Level::UsersWaiting, now, 1);
        let fraction = self.cfg.idempotent_fraction;
        let idempotent = fraction >= 1.0 || self.idempotent_rng.random::<f64>() < fraction;
        let req = ctx.sh.reqs.create(
            now,
            self.entry,
            crate::request::Caller::User,
            user,
            idempotent,
        );
        // The user's own clock: the gateway deadline or patience, whichever
        // comes first.
        let deadline = self.gateway.deadline;
        let patience = self
            .patience
            .as_ref()
            .map(|d| d.sample(&mut self.patience_rng));
        let timer = match (deadline, patience) {
            (Some(d), Some(p)) if p < d => {
                // A user who gave up does not stop the gateway's own
                // clock: at the deadline it still stops the service's
                // work, when it is told to.
                if self.gateway.cancel_service_on_deadline {
                    self.arm_user_deadline(req, now.saturating_add(d), ctx);
                }
                Some(
                    ctx.sched
                        .schedule_in(p, LoadEvent::UserGaveUp { req }.into()),
                )
            }
            (Some(d), _) => {
                self.arm_user_deadline(req, now.saturating_add(d), ctx);
                None
            }
            (None, Some(p)) => Some(
                ctx.sched
                    .schedule_in(p, LoadEvent::UserGaveUp { req }.into()),
            ),
            (None, None) => None,
        };
        if let Some(q) = ctx.sh.reqs.get_mut(req) {
            q.user_timer = timer;
        }
        let rps = self.gateway.rate_limit.as_ref().map(|r| r.rps);
        if let (Some(rps), Some(door)) = (rps, self.door.as_mut())
            && !door.take(now, rps)
        {
            // Answered 429 at the service's door: it never reaches a pod.
            if let Some(q) = ctx.sh.reqs.get_mut(req) {
                q.service_done = true;
            }
            self.user_outcome(req, Reason::RateLimited, ctx);
            return;
        }
        ctx.ask(Ask::Dispatch { req });
    }

    /// Whether the gateway sends a request that ended with `reason` after
    /// `dispatches` dispatches to a pod again.
    #[inline]
    pub(crate) fn retries(&self, dispatches: u32, reason: Reason) -> bool {
        self.gateway
            .retry
            .as_ref()
            .is_some_and(|g| dispatches <= g.max_retries && g.on.contains(&reason))
    }

    /// Puts `req`'s gateway deadline `at` in the line, sweeping the line
    /// when answered requests' deadlines crowd it.
    fn arm_user_deadline<S: RowSink>(&mut self, req: ReqRef, at: SimTime, ctx: &mut Ctx<'_, S>) {
        let cancels = self.gateway.cancel_service_on_deadline;
        // How many deadlines may be live, for the sweep: the users
        // waiting, or, when the service's work matters too, every
        // request (an upper bound: the line stays within twice the work
        // in flight).
        let live = match cancels {
            false => ctx.sh.rec.level_value(Level::UsersWaiting).max(0) as usize,
            true => ctx.sh.reqs.live(),
        };
        let reqs = &ctx.sh.reqs;
        self.deadlines.arm(
            at,
            req,
            live,
            |_: SimTime, r: &ReqRef| deadline_matters(reqs, *r, cancels),
            ctx.sched,
            LoadEvent::UserDeadlinesDue.into(),
        );
    }

    /// The deadline line's wake-up ran: the deadlines due now are
    /// delivered one by one ([`Load::deliver_deadline`]), then
    /// [`Load::deadlines_delivered`].
    pub(crate) fn deadlines_woken(&mut self) {
        self.deadlines.woken();
    }

    /// The next request whose gateway deadline is now is past it, in the
    /// order the deadlines were armed; false when none is left. The user
    /// sees `deadline_exceeded` (unless it gave up before); with
    /// `cancel_service_on_deadline`, the service is asked to stop.
    pub(crate) fn deliver_deadline<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) -> bool {
        let cancels = self.gateway.cancel_service_on_deadline;
        let reqs = &ctx.sh.reqs;
        let due = self
            .deadlines
            .pop_live_due(ctx.now(), |_: SimTime, r: &ReqRef| {
                deadline_matters(reqs, *r, cancels)
            });
        let Some((_, req)) = due else {
            return false;
        };
        let service_running = ctx.sh.reqs.get(req).is_some_and(|q| !q.service_done);
        self.user_outcome(req, Reason::DeadlineExceeded, ctx);
        if service_running && cancels {
            ctx.ask(Ask::Complete {
                req,
                reason: Reason::DeadlineExceeded,
            });
        }
        true
    }

    /// Every due deadline was delivered: a wake-up for the earliest live
    /// one left.
    pub(crate) fn deadlines_delivered<S: RowSink>(&mut self, ctx: &mut Ctx<'_, S>) {
        let cancels = self.gateway.cancel_service_on_deadline;
        let reqs = &ctx.sh.reqs;
        self.deadlines.delivered(
            ctx.sched,
            |_: SimTime, r: &ReqRef| deadline_matters(reqs, *r, cancels),
            LoadEvent::UserDeadlinesDue.into(),
        );
    }

    fn on_user_gave_up<S: RowSink>(&mut self, req: ReqRef, ctx: &mut Ctx<'_, S>) {
        let q = stale!(ctx.sh.reqs.get_mut(req));
        q.user_timer = None;
        self.user_outcome(req, Reason::Abandoned, ctx);
    }

    /// The user sees `reason` now, unless it already saw an outcome.
    #[inline(always)]
    pub(crate) fn user_outcome<S: RowSink>(
        &mut self,
        req: ReqRef,
        reason: Reason,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        let q = stale!(ctx.sh.reqs.get_mut(req));
        if q.user_done {
            return;
        }
        q.user_done = true;
        let timer = q.user_timer.take();
        let (arrived, user) = (q.arrived, q.user);
        if let Some(t) = timer {
            ctx.sched.cancel(t);
        }
        ctx.sh.rec.outcome(reason);
        ctx.sh.rec.latency(Latency::EndToEnd, now - arrived);
        ctx.sh.rec.level_add(Level::UsersWaiting, now, -1);
        if let (Some(user), Some(think)) = (user, self.think.as_ref()) {
            let d = think.sample(&mut self.think_rng);
            ctx.cross(d, LoadEvent::UserReady { user }.into());
        }
        ctx.sh.reqs.release_if_done(req);
    }
}

// ---------------------------------------------------------------------
// Configuration: what users write for this part, its defaults, and its
// check (run by `WorldConfig::validate` under the section's path).
// ---------------------------------------------------------------------

/// How arrivals are spaced in the open-loop load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalProcess {
    /// Exponential gaps (independent users).
    Poisson,
    /// Evenly spaced, `1/rate` apart.
    Constant,
}

/// Who sends requests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    /// Open-loop arrivals per second (default 100); the timeline can step
    /// or ramp it (`load.rate`). Zero with `closed_loop` for a pure
    /// closed-loop load.
    pub rate: f64,
    /// Spacing of open-loop arrivals (default `poisson`).
    pub arrivals: ArrivalProcess,
    /// Optional closed-loop users on top of the open-loop rate.
    pub closed_loop: Option<ClosedLoopConfig>,
    /// Optional user patience: a user gives up after a draw from this
    /// distribution (outcome `abandoned`); the request keeps consuming
    /// resources downstream, as in life (until the gateway's deadline,
    /// with `gateway.cancel_service_on_deadline`).
    pub patience: Option<DistSpec>,
    /// Fraction of requests that are idempotent, hence safe to retry when
    /// `client.retry.idempotent_only` is set (default 1).
    pub idempotent_fraction: f64,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            rate: 100.0,
            arrivals: ArrivalProcess::Poisson,
            closed_loop: None,
            patience: None,
            idempotent_fraction: 1.0,
        }
    }
}

/// Users who each wait for their answer, think, and ask again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClosedLoopConfig {
    /// Number of users.
    pub users: u32,
    /// Think time between an answer and the next request.
    pub think: DistSpec,
}

/// The user-facing edge.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// End-to-end deadline: past it the user sees a timeout (outcome
    /// `deadline_exceeded`), whatever the service is still doing
    /// (default: none).
    pub deadline: Option<SimDuration>,
    /// Whether the deadline also cancels the work inside the service
    /// (default false: the service finishes, as most do). The work of a
    /// user who gave up sooner (`load.patience`) is cancelled at the
    /// deadline too: the gateway's clock runs on without the user.
    pub cancel_service_on_deadline: bool,
    /// Retries at the gateway: a failed request is sent again, to a pod
    /// the balancer picks, and the pod's own retries start over. Retries
    /// at two tiers multiply (default: none).
    pub retry: Option<GatewayRetry>,
    /// A token bucket at the service's own door: a request over it is
    /// answered 429 at once, never reaching a pod (default: none).
    pub rate_limit: Option<RateLimitConfig>,
}

/// The gateway's own retries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayRetry {
    /// Retries after the first dispatch.
    pub max_retries: u32,
    /// Which request outcomes are retried (default: server_error,
    /// attempt_timeout, connect_failure, pool_timeout, pod_restarted,
    /// unavailable, pod_overloaded).
    #[serde(default = "gateway_retry_on")]
    pub on: Vec<Reason>,
}

fn gateway_retry_on() -> Vec<Reason> {
    vec![
        Reason::ServerError,
        Reason::AttemptTimeout,
        Reason::ConnectFailure,
        Reason::PoolTimeout,
        Reason::PodRestarted,
        Reason::Unavailable,
        Reason::PodOverloaded,
    ]
}
