//! The call from a pod to the upstream: attempts, connections, timeouts
//! and retries.
//!
//! An attempt asks its pod's pool for a connection (reusing an idle one,
//! dialling a new one, or waiting in line), sends, and ends in exactly one
//! way: an answer, its timeout, a failed dial, or the pool's acquire
//! timeout. A call may also be cut from outside (its total deadline, a pod
//! restart). An answer that comes back after its attempt ended is counted
//! as late and never as a success.

use rand::RngExt;
use sim_core::sim::Scheduler;
use sim_core::time::SimTime;

use crate::config::{RetryOn, TimeoutStart};
use crate::outcome::{AttemptOutcome, Reason};
use crate::pods::{PodState, waiter_is_live};
use crate::pool::{Acquire, Waiter};
use crate::recorder::{Count, Latency, Level, RowSink};
use crate::request::{Phase, ReqRef};
use crate::upstream::{Admission, JobRef, Owner, Status};
use crate::world::{Event, World};

fn is_active(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::WaitingPool | Phase::Connecting | Phase::InFlight
    )
}

fn retry_class(o: AttemptOutcome) -> Option<RetryOn> {
    match o {
        AttemptOutcome::Success => None,
        AttemptOutcome::Timeout => Some(RetryOn::Timeout),
        AttemptOutcome::ConnectFailure => Some(RetryOn::ConnectFailure),
        AttemptOutcome::ServerError(_) => Some(RetryOn::ServerError),
        AttemptOutcome::RateLimited(_) => Some(RetryOn::RateLimited),
        AttemptOutcome::PoolTimeout => Some(RetryOn::PoolTimeout),
    }
}

impl<S: RowSink> World<S> {
    /// The worker starts the call: arms the total deadline, starts the
    /// first attempt.
    pub(crate) fn begin_call(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let deadline = self.cfg.client.total_deadline;
        let Some(q) = self.reqs.get_mut(req) else {
            return;
        };
        q.has_worker = true;
        if let Some(d) = deadline {
            q.call_deadline = Some(now.saturating_add(d));
            q.call_timer = Some(sched.schedule_in(d, Event::CallDeadlinePassed { req }));
        }
        self.start_attempt(req, sched);
    }

    fn start_attempt(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let timeout = self.cfg.client.attempt_timeout;
        let arm_now = self.cfg.client.timeout_starts == TimeoutStart::AttemptStart;
        let Some(q) = self.reqs.get_mut(req) else {
            return;
        };
        q.attempts += 1;
        q.attempt_started = now;
        q.wait_started = now;
        let (attempt, pod) = (q.attempts, q.pod);
        if arm_now && let Some(t) = timeout {
            q.attempt_timer = Some(sched.schedule_in(t, Event::AttemptTimedOut { req, attempt }));
        }
        self.attempts_active += 1;
        self.rec.count(
            if attempt == 1 {
                Count::AttemptsFirst
            } else {
                Count::AttemptsRetry
            },
            1,
        );
        match self.pods[pod as usize].pool.acquire(now) {
            Acquire::Reused => {
                self.rec
                    .latency(Latency::PoolWait, sim_core::time::SimDuration::ZERO);
                self.connection_in_hand(req, sched);
            }
            Acquire::Dial => {
                self.rec
                    .latency(Latency::PoolWait, sim_core::time::SimDuration::ZERO);
                self.set_phase(req, Phase::Connecting);
                self.dial(pod, req, attempt, sched);
            }
            Acquire::Wait => {
                self.set_phase(req, Phase::WaitingPool);
                self.pods[pod as usize].pool.wait(Waiter {
                    req,
                    attempt,
                    since: now,
                });
                if let Some(t) = self.cfg.service.pool.acquire_timeout {
                    let timer = sched.schedule_in(t, Event::PoolWaitTimedOut { req, attempt });
                    if let Some(q) = self.reqs.get_mut(req) {
                        q.aux_timer = Some(timer);
                    }
                }
            }
        }
        self.sync_pool_levels(now);
    }

    fn set_phase(&mut self, req: ReqRef, phase: Phase) {
        if let Some(q) = self.reqs.get_mut(req) {
            q.phase = phase;
        }
    }

    /// Dials a new connection on `pod` for `attempt` of `req`.
    fn dial(&mut self, pod: u32, req: ReqRef, attempt: u32, sched: &mut Scheduler<Event>) {
        let p = &mut self.pods[pod as usize];
        let epoch = p.epoch;
        let setup = self.connect_time.sample(&mut p.connect_rng);
        let refused = self.cfg.network.connect_failure > 0.0
            && p.connect_rng.random::<f64>() < self.cfg.network.connect_failure;
        let timeout = self.cfg.client.connect_timeout;
        match timeout {
            Some(t) if setup > t => {
                sched.schedule_in(
                    t,
                    Event::ConnectionFailed {
                        pod,
                        epoch,
                        req,
                        attempt,
                    },
                );
            }
            _ if refused => {
                sched.schedule_in(
                    setup,
                    Event::ConnectionFailed {
                        pod,
                        epoch,
                        req,
                        attempt,
                    },
                );
            }
            _ => {
                sched.schedule_in(
                    setup,
                    Event::ConnectionEstablished {
                        pod,
                        epoch,
                        req,
                        attempt,
                    },
                );
            }
        }
    }

    fn attempt_is(&self, req: ReqRef, attempt: u32, phase: Phase) -> bool {
        self.reqs
            .get(req)
            .is_some_and(|q| q.attempts == attempt && q.phase == phase)
    }

    pub(crate) fn on_connection_established(
        &mut self,
        pod: u32,
        epoch: u32,
        req: ReqRef,
        attempt: u32,
        sched: &mut Scheduler<Event>,
    ) {
        if self.pods[pod as usize].epoch != epoch {
            return; // the pod restarted meanwhile; its pool is new
        }
        let now = sched.now();
        self.pods[pod as usize].pool.dialled();
        if self.attempt_is(req, attempt, Phase::Connecting) {
            self.pods[pod as usize].pool.hand_over();
            self.connection_in_hand(req, sched);
        } else {
            // Whoever dialled it gave up: the next in line gets it.
            self.connection_available(pod, now, sched);
        }
        self.sync_pool_levels(now);
    }

    pub(crate) fn on_connection_failed(
        &mut self,
        pod: u32,
        epoch: u32,
        req: ReqRef,
        attempt: u32,
        sched: &mut Scheduler<Event>,
    ) {
        if self.pods[pod as usize].epoch != epoch {
            return;
        }
        let now = sched.now();
        self.pods[pod as usize].pool.dialled();
        if self.attempt_is(req, attempt, Phase::Connecting) {
            self.close_attempt(req, Some(AttemptOutcome::ConnectFailure), now, sched);
            self.after_attempt(req, AttemptOutcome::ConnectFailure, sched);
        }
        self.slot_freed(pod, sched);
        self.sync_pool_levels(now);
    }

    /// A connection is free on `pod`: the next live waiter gets it, or it
    /// goes idle.
    fn connection_available(&mut self, pod: u32, now: SimTime, sched: &mut Scheduler<Event>) {
        if let Some(w) = self.pop_waiter(pod, now, sched) {
            self.pods[pod as usize].pool.hand_over();
            self.connection_in_hand(w.req, sched);
        } else {
            self.pods[pod as usize].pool.put_idle(now);
        }
    }

    /// A connection slot on `pod` opened up (a connection closed or a dial
    /// failed): the next live waiter dials a new one.
    fn slot_freed(&mut self, pod: u32, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        if !self.pods[pod as usize].pool.has_room() || self.pods[pod as usize].pool.waiters() == 0 {
            return;
        }
        if let Some(w) = self.pop_waiter(pod, now, sched) {
            self.pods[pod as usize].pool.try_dial();
            self.set_phase(w.req, Phase::Connecting);
            self.dial(pod, w.req, w.attempt, sched);
        }
    }

    /// Takes the next live waiter out of `pod`'s line, ending its wait.
    fn pop_waiter(
        &mut self,
        pod: u32,
        now: SimTime,
        sched: &mut Scheduler<Event>,
    ) -> Option<Waiter> {
        let epoch = self.pods[pod as usize].epoch;
        let reqs = &self.reqs;
        let w = self.pods[pod as usize]
            .pool
            .next_waiter(|w| waiter_is_live(reqs, pod, epoch, w))?;
        if let Some(q) = self.reqs.get_mut(w.req)
            && let Some(t) = q.aux_timer.take()
        {
            sched.cancel(t);
        }
        self.rec.latency(Latency::PoolWait, now - w.since);
        Some(w)
    }

    /// The attempt holds a connection: send the request.
    fn connection_in_hand(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        let timeout = self.cfg.client.attempt_timeout;
        let arm_now = self.cfg.client.timeout_starts == TimeoutStart::ConnectionAcquired;
        let Some(q) = self.reqs.get_mut(req) else {
            return;
        };
        q.phase = Phase::InFlight;
        let attempt = q.attempts;
        if arm_now && let Some(t) = timeout {
            q.attempt_timer = Some(sched.schedule_in(t, Event::AttemptTimedOut { req, attempt }));
        }
        match self.net.delay(|n| &n.pod_to_upstream) {
            Some(d) => {
                sched.schedule_in(d, Event::UpstreamReceived { req, attempt });
            }
            None => self.on_upstream_received(req, attempt, sched),
        }
    }

    pub(crate) fn on_upstream_received(
        &mut self,
        req: ReqRef,
        attempt: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let (job, admission) = self
            .upstream
            .arrive(Owner::Client { req, attempt }, now, sched);
        self.count_admission(admission);
        let live = self.attempt_is(req, attempt, Phase::InFlight);
        match (admission, job) {
            (Admission::Started | Admission::Queued, Some(job)) => {
                if live {
                    if let Some(q) = self.reqs.get_mut(req) {
                        q.job = Some(job);
                    }
                } else if self.upstream.abandon(job, sched) {
                    // The caller gave up while the request was on the wire.
                    self.rec.count(Count::UpstreamCancelled, 1);
                }
            }
            (Admission::Answered(status), _) => self.respond_to_pod(req, attempt, status, sched),
            _ => {} // dropped: the caller will time out
        }
        self.sync_upstream_levels(now);
    }

    fn respond_to_pod(
        &mut self,
        req: ReqRef,
        attempt: u32,
        status: Status,
        sched: &mut Scheduler<Event>,
    ) {
        match self.net.delay(|n| &n.upstream_to_pod) {
            Some(d) => {
                sched.schedule_in(
                    d,
                    Event::ResponseReachedPod {
                        req,
                        attempt,
                        status,
                    },
                );
            }
            None => self.on_response_reached_pod(req, attempt, status, sched),
        }
    }

    pub(crate) fn on_upstream_completed(&mut self, job: JobRef, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let Some(done) = self.upstream.complete(job, sched) else {
            return;
        };
        self.sync_upstream_levels(now);
        match done.owner {
            Owner::Background => self.rec.count(Count::BackgroundCompleted, 1),
            Owner::Client { req, attempt } => {
                if done.abandoned {
                    // Finished for nobody: the caller had already given up.
                    self.rec.count(Count::UpstreamWasted, 1);
                    self.rec.count(Count::LateResponses, 1);
                } else {
                    if done.status == Status::Ok {
                        self.rec.count(Count::UpstreamGoodput, 1);
                    }
                    self.respond_to_pod(req, attempt, done.status, sched);
                }
            }
        }
    }

    pub(crate) fn on_response_reached_pod(
        &mut self,
        req: ReqRef,
        attempt: u32,
        status: Status,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        if !self.attempt_is(req, attempt, Phase::InFlight) {
            self.rec.count(Count::LateResponses, 1);
            return;
        }
        let pod = match self.reqs.get_mut(req) {
            Some(q) => {
                q.job = None;
                q.pod
            }
            None => return,
        };
        let leak_fraction = self.cfg.service.pool.leak_fraction;
        let p = &mut self.pods[pod as usize];
        let leak = leak_fraction > 0.0 && p.leak_rng.random::<f64>() < leak_fraction;
        if p.pool.release(leak) {
            self.connection_available(pod, now, sched);
        }
        let outcome = match status {
            Status::Ok => AttemptOutcome::Success,
            Status::Error(code) => AttemptOutcome::ServerError(code),
            Status::TooManyRequests(after) => AttemptOutcome::RateLimited(after),
        };
        self.close_attempt(req, Some(outcome), now, sched);
        self.after_attempt(req, outcome, sched);
        self.sync_pool_levels(now);
    }

    pub(crate) fn on_attempt_timed_out(
        &mut self,
        req: ReqRef,
        attempt: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let Some(q) = self.reqs.get_mut(req) else {
            return;
        };
        if q.attempts != attempt || !is_active(q.phase) {
            return;
        }
        q.attempt_timer = None;
        self.release_attempt(req, now, sched);
        self.close_attempt(req, Some(AttemptOutcome::Timeout), now, sched);
        self.after_attempt(req, AttemptOutcome::Timeout, sched);
        self.sync_pool_levels(now);
    }

    pub(crate) fn on_pool_wait_timed_out(
        &mut self,
        req: ReqRef,
        attempt: u32,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        if !self.attempt_is(req, attempt, Phase::WaitingPool) {
            return;
        }
        if let Some(q) = self.reqs.get_mut(req) {
            q.aux_timer = None;
        }
        self.release_attempt(req, now, sched);
        self.close_attempt(req, Some(AttemptOutcome::PoolTimeout), now, sched);
        self.after_attempt(req, AttemptOutcome::PoolTimeout, sched);
        self.sync_pool_levels(now);
    }

    /// Gives back what an attempt that is being cut short holds: its place
    /// in line, or its connection (closed, and the upstream told if
    /// cancellation propagates). A dial in progress carries on for others.
    fn release_attempt(&mut self, req: ReqRef, now: SimTime, sched: &mut Scheduler<Event>) {
        let Some(q) = self.reqs.get_mut(req) else {
            return;
        };
        let (phase, pod, job, since) = (q.phase, q.pod, q.job.take(), q.wait_started);
        match phase {
            Phase::WaitingPool => {
                self.pods[pod as usize].pool.waiter_left();
                self.rec.latency(Latency::PoolWait, now - since);
            }
            Phase::InFlight => {
                self.pods[pod as usize].pool.close_in_use();
                if let Some(job) = job
                    && self.upstream.abandon(job, sched)
                {
                    self.rec.count(Count::UpstreamCancelled, 1);
                    self.sync_upstream_levels(now);
                }
                self.slot_freed(pod, sched);
            }
            _ => {}
        }
    }

    /// Ends the current attempt's bookkeeping: timers, the active count,
    /// its latency when it ended with an outcome of its own.
    fn close_attempt(
        &mut self,
        req: ReqRef,
        outcome: Option<AttemptOutcome>,
        now: SimTime,
        sched: &mut Scheduler<Event>,
    ) {
        let Some(q) = self.reqs.get_mut(req) else {
            return;
        };
        if !is_active(q.phase) {
            let (phase, attempt) = (q.phase, q.attempts);
            self.violated(now, || {
                format!("attempt {attempt} of a request ended twice (phase {phase:?})")
            });
            return;
        }
        for t in [q.attempt_timer.take(), q.aux_timer.take()]
            .into_iter()
            .flatten()
        {
            sched.cancel(t);
        }
        q.phase = Phase::Backoff;
        if outcome.is_some() {
            q.last_outcome = outcome;
        }
        let (attempt, started) = (q.attempts, q.attempt_started);
        self.attempts_active -= 1;
        if outcome.is_some() {
            let which = if attempt == 1 {
                Latency::FirstAttempt
            } else {
                Latency::Retry
            };
            self.rec.latency(which, now - started);
        }
    }

    /// After an attempt ended with `outcome`: finish, or retry.
    fn after_attempt(
        &mut self,
        req: ReqRef,
        outcome: AttemptOutcome,
        sched: &mut Scheduler<Event>,
    ) {
        let Some(class) = retry_class(outcome) else {
            self.complete_request(req, Reason::Success, sched);
            return;
        };
        let now = sched.now();
        let retry = &self.cfg.client.retry;
        let Some(q) = self.reqs.get_mut(req) else {
            return;
        };
        let delay = retry.delay;
        let may_retry = retry.retry_on.contains(&class)
            && q.attempts <= retry.max_retries
            && q.call_deadline
                .is_none_or(|d| now.saturating_add(delay) < d);
        if !may_retry {
            self.complete_request(req, Reason::from(outcome), sched);
        } else if delay.is_zero() {
            self.start_attempt(req, sched);
        } else {
            let attempt = q.attempts;
            q.phase = Phase::Backoff;
            q.aux_timer = Some(sched.schedule_in(delay, Event::RetryDelayElapsed { req, attempt }));
        }
    }

    pub(crate) fn on_retry_delay_elapsed(
        &mut self,
        req: ReqRef,
        attempt: u32,
        sched: &mut Scheduler<Event>,
    ) {
        if !self.attempt_is(req, attempt, Phase::Backoff) {
            return;
        }
        if let Some(q) = self.reqs.get_mut(req) {
            q.aux_timer = None;
        }
        self.start_attempt(req, sched);
    }

    pub(crate) fn on_call_deadline(&mut self, req: ReqRef, sched: &mut Scheduler<Event>) {
        if let Some(q) = self.reqs.get_mut(req) {
            q.call_timer = None;
        }
        self.complete_request(req, Reason::DeadlineExceeded, sched);
    }

    /// The service is done with `req`: whatever attempt is running is cut,
    /// the worker moves on, and the user gets `reason` (across the network
    /// if there is a delay), unless the user already saw an outcome.
    pub(crate) fn complete_request(
        &mut self,
        req: ReqRef,
        reason: Reason,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let Some(q) = self.reqs.get(req) else { return };
        if q.service_done {
            return;
        }
        if is_active(q.phase) {
            self.release_attempt(req, now, sched);
            self.close_attempt(req, None, now, sched);
            self.sync_pool_levels(now);
        }
        let Some(q) = self.reqs.get_mut(req) else {
            return;
        };
        for t in [
            q.aux_timer.take(),
            q.call_timer.take(),
            q.attempt_timer.take(),
        ]
        .into_iter()
        .flatten()
        {
            sched.cancel(t);
        }
        q.phase = Phase::Finished;
        q.service_done = true;
        let (pod, epoch, had_worker, user_done) = (q.pod, q.pod_epoch, q.has_worker, q.user_done);
        q.has_worker = false;
        if had_worker
            && self.pods[pod as usize].epoch == epoch
            && self.pods[pod as usize].state == PodState::Up
        {
            self.free_worker(pod, sched);
        }
        self.lb.outstanding_changed(pod, -1);
        self.rec.level_add(Level::ServiceInFlight, now, -1);
        if user_done {
            self.reqs.release_if_done(req);
            return;
        }
        match self.net.delay(|n| &n.pod_to_gateway) {
            Some(d) if reason != Reason::PodRestarted => {
                sched.schedule_in(d, Event::ResponseReachedUser { req, reason });
            }
            _ => self.user_outcome(req, reason, sched),
        }
    }
}
