//! Load: open-loop arrivals at a rate the timeline may change, closed-loop
//! users with think time, other tenants' requests at the upstream, and the
//! user's side of a request (gateway deadline, patience, the outcome seen).

use crate::config::{ConfigError, WorldConfig};
use crate::policy::token_bucket::TokenBucket;
use crate::world::{compile, compile_opt};
use rand::RngExt;
use sim_core::deadlines::DeadlineLine;
use sim_core::dist::Dist;
use sim_core::queue::EventId;
use sim_core::rng::{RngStreams, SimRng};
use sim_core::sim::Scheduler;
use sim_core::time::{SimDuration, SimTime};

use crate::config::ArrivalProcess;
use crate::outcome::Reason;
use crate::pods::ServiceEvent;
use crate::recorder::{Count, Latency, Level, RowSink};
use crate::request::ReqRef;
use crate::world::{Event, World, cross};

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

/// Whether `req`'s user still waits for an outcome (its deadline in the
/// line is live).
#[inline]
fn user_waits(reqs: &crate::request::Requests, req: ReqRef) -> bool {
    reqs.get(req).is_some_and(|q| !q.user_done)
}

/// Exponential gap with mean `1/rate`, drawn as `-ln(1−U)/rate`.
#[inline]
pub(crate) fn exp_gap(rng: &mut sim_core::rng::SimRng, rate: f64) -> SimDuration {
    let u: f64 = rng.random();
    SimDuration::from_secs_f64(-(1.0 - u).ln() / rate)
}

/// The users' side of the world: who sends requests, when, and how long
/// they wait.
pub struct Load {
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
}

impl Load {
    /// The load as configured, its distributions compiled once.
    pub(crate) fn new(cfg: &WorldConfig, streams: &RngStreams) -> Result<Self, Vec<ConfigError>> {
        let think = match &cfg.load.closed_loop {
            Some(c) => Some(compile(&c.think, "load.closed_loop.think")?),
            None => None,
        };
        Ok(Load {
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
        })
    }
}

impl<S: RowSink> World<S> {
    /// Routes the users' side's events to their handlers.
    pub(crate) fn on_load_event(&mut self, e: LoadEvent, sched: &mut Scheduler<Event>) {
        match e {
            LoadEvent::RequestArrived => self.on_request_arrived(sched),
            LoadEvent::UserReady { user } => self.on_user_ready(user, sched),
            LoadEvent::UserDeadlinesDue => self.on_user_deadlines_due(sched),
            LoadEvent::UserGaveUp { req } => self.on_user_gave_up(req, sched),
            LoadEvent::ResponseReachedUser { req, reason } => {
                self.on_response_reached_user(req, reason, sched)
            }
        }
    }

    /// (Re)schedules the next open-loop arrival at the current rate. Poisson
    /// arrivals are memoryless, so a rate change simply redraws the gap
    /// from now; constant spacing restarts its period.
    pub(crate) fn schedule_next_arrival(&mut self, sched: &mut Scheduler<Event>) {
        if let Some(t) = self.load.arrival_timer.take() {
            sched.cancel(t);
        }
        if self.load.rate <= 0.0 {
            return;
        }
        let gap = match self.cfg.load.arrivals {
            ArrivalProcess::Poisson => exp_gap(&mut self.load.arrival_rng, self.load.rate),
            ArrivalProcess::Constant => SimDuration::from_secs_f64(1.0 / self.load.rate),
        };
        self.load.arrival_timer = Some(sched.schedule_in(gap, LoadEvent::RequestArrived.into()));
    }

    pub(crate) fn start_closed_loop(&mut self, sched: &mut Scheduler<Event>) {
        let users = self.cfg.load.closed_loop.as_ref().map_or(0, |c| c.users);
        for user in 0..users {
            // Users start spread over one think time.
            let d = self
                .load
                .think
                .as_ref()
                .expect("closed loop has a think time")
                .sample(&mut self.load.think_rng);
            cross(sched, d, LoadEvent::UserReady { user }.into());
        }
    }

    pub(crate) fn on_request_arrived(&mut self, sched: &mut Scheduler<Event>) {
        self.load.arrival_timer = None;
        self.schedule_next_arrival(sched);
        self.new_request(None, sched);
    }

    pub(crate) fn on_user_ready(&mut self, user: u32, sched: &mut Scheduler<Event>) {
        self.new_request(Some(user), sched);
    }

    /// A user sends a request: it gets its timers and goes to a pod.
    fn new_request(&mut self, user: Option<u32>, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        if self.reqs.live() as u64 >= self.cfg.limits.max_in_flight {
            let limit = self.cfg.limits.max_in_flight;
            self.violated(now, || {
                format!("{limit} requests in flight: the limit limits.max_in_flight was reached")
            });
            return;
        }
        self.rec.count(Count::Offered, 1);
        self.rec.level_add(Level::UsersWaiting, now, 1);
        let fraction = self.cfg.load.idempotent_fraction;
        let idempotent = fraction >= 1.0 || self.load.idempotent_rng.random::<f64>() < fraction;
        let entry = self.topo.entry;
        let req = self
            .reqs
            .create(now, entry, crate::request::Caller::User, user, idempotent);
        // The user's own clock: the gateway deadline or patience, whichever
        // comes first.
        let deadline = self.cfg.gateway.deadline;
        let patience = self
            .load
            .patience
            .as_ref()
            .map(|d| d.sample(&mut self.load.patience_rng));
        let timer = match (deadline, patience) {
            (Some(d), Some(p)) if p < d => {
                Some(sched.schedule_in(p, LoadEvent::UserGaveUp { req }.into()))
            }
            (Some(d), _) => {
                self.arm_user_deadline(req, now.saturating_add(d), sched);
                None
            }
            (None, Some(p)) => Some(sched.schedule_in(p, LoadEvent::UserGaveUp { req }.into())),
            (None, None) => None,
        };
        if let Some(q) = self.reqs.get_mut(req) {
            q.user_timer = timer;
        }
        let rps = self.cfg.gateway.rate_limit.as_ref().map(|r| r.rps);
        if let (Some(rps), Some(door)) = (rps, self.load.door.as_mut())
            && !door.take(now, rps)
        {
            // Answered 429 at the service's door: it never reaches a pod.
            if let Some(q) = self.reqs.get_mut(req) {
                q.service_done = true;
            }
            self.user_outcome(req, Reason::RateLimited, sched);
            return;
        }
        self.dispatch(req, sched);
    }

    /// The gateway sends `req` to a pod the balancer picks (again, for a
    /// gateway retry): a fresh call there, with its own attempts.
    pub(crate) fn dispatch(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let entry = self.topo.entry;
        let Some(pod) = self.services[entry as usize].lb.pick() else {
            if let Some(q) = self.reqs.get_mut(req) {
                q.service_done = true;
                q.phase = crate::request::Phase::Finished;
            }
            self.user_outcome(req, Reason::Unavailable, sched);
            return;
        };
        let epoch = self.services[entry as usize].pods[pod as usize].epoch;
        let q = stale!(self.reqs.get_mut(req));
        q.pod = pod;
        q.pod_epoch = epoch;
        q.dispatches += 1;
        q.service_done = false;
        q.phase = crate::request::Phase::Queued;
        q.step = 0;
        q.degraded = false;
        q.reached = None;
        self.services[entry as usize].lb.outstanding_changed(pod, 1);
        self.rec.level_add(Level::ServiceInFlight, now, 1);
        let d = self.net.delay_to_pod();
        cross(sched, d, ServiceEvent::RequestReachedPod { req }.into());
    }

    /// Puts `req`'s gateway deadline `at` in the line, sweeping the line
    /// when answered requests' deadlines crowd it.
    fn arm_user_deadline(&mut self, req: ReqRef, at: SimTime, sched: &mut Scheduler<Event>) {
        let waiting = self.rec.level_value(Level::UsersWaiting).max(0) as usize;
        let reqs = &self.reqs;
        self.load.deadlines.arm(
            at,
            req,
            waiting,
            |_, &r| user_waits(reqs, r),
            sched,
            LoadEvent::UserDeadlinesDue.into(),
        );
    }

    /// Makes sure a wake-up is due at the earliest live gateway deadline.
    fn wake_for_user_deadlines(&mut self, sched: &mut Scheduler<Event>) {
        let reqs = &self.reqs;
        self.load.deadlines.schedule_wake(
            sched,
            |_, &r| user_waits(reqs, r),
            LoadEvent::UserDeadlinesDue.into(),
        );
    }

    /// The line's wake-up: every request whose gateway deadline is now is
    /// past it, in the order the deadlines were armed.
    fn on_user_deadlines_due(&mut self, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        self.load.deadlines.woken();
        while let Some((_, req)) = self.load.deadlines.pop_due(now) {
            if user_waits(&self.reqs, req) {
                self.on_user_deadline(req, sched);
            }
        }
        self.load.deadlines.delivered();
        self.wake_for_user_deadlines(sched);
    }

    pub(crate) fn on_user_deadline(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let q = stale!(self.reqs.get_mut(req));
        let service_running = !q.service_done;
        self.user_outcome(req, Reason::DeadlineExceeded, sched);
        if service_running && self.cfg.gateway.cancel_service_on_deadline {
            self.complete_request(req, Reason::DeadlineExceeded, sched);
        }
    }

    pub(crate) fn on_user_gave_up(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let q = stale!(self.reqs.get_mut(req));
        q.user_timer = None;
        self.user_outcome(req, Reason::Abandoned, sched);
    }

    pub(crate) fn on_response_reached_user(
        &mut self,
        req: ReqRef,
        reason: Reason,
        sched: &mut Scheduler<Event>,
    ) {
        self.user_outcome(req, reason, sched);
    }

    /// The user sees `reason` now, unless it already saw an outcome.
    pub(crate) fn user_outcome(
        &mut self,
        req: ReqRef,
        reason: Reason,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let q = stale!(self.reqs.get_mut(req));
        if q.user_done {
            return;
        }
        q.user_done = true;
        let timer = q.user_timer.take();
        let (arrived, user) = (q.arrived, q.user);
        if let Some(t) = timer {
            sched.cancel(t);
        }
        self.rec.outcome(reason);
        self.rec.latency(Latency::EndToEnd, now - arrived);
        self.rec.level_add(Level::UsersWaiting, now, -1);
        if let (Some(user), Some(think)) = (user, self.load.think.as_ref()) {
            let d = think.sample(&mut self.load.think_rng);
            cross(sched, d, LoadEvent::UserReady { user }.into());
        }
        self.reqs.release_if_done(req);
    }
}
