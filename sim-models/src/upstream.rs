//! The overload-sensitive dependency: a finite number of slots with a queue
//! in front, service time that grows with concurrency (linearly, or past a
//! knee where throughput *falls*), an admission limit, an optional 429 rate
//! limit, injected errors, other tenants' load, and no idea that a caller
//! gave up unless cancellation is propagated.

use rand::RngExt;
use sim_core::dist::Dist;
use sim_core::queue::EventId;
use sim_core::rng::SimRng;
use sim_core::sim::Scheduler;
use sim_core::slab::{Ref, Slab};
use sim_core::time::{SimDuration, SimTime};
use sim_core::waitline::{WaitLine, Waiting};

use crate::config::{AppliesAt, LoadLaw, OverflowAction, PushbackConfig, Shedding, UpstreamConfig};
use crate::outcome::Pushback;
use crate::policy::admission::AdmissionThreshold;
use crate::policy::token_bucket::TokenBucket;
use crate::request::AttRef;
use crate::world::Event;

crate::part_events! {
    /// What happens at the dependency.
    pub enum DependencyEvent {
        /// An attempt crossed the network to the upstream.
        Received {
            /// The attempt.
            att: AttRef,
            /// Its edge (the attempt may be gone by now; its request is
            /// not).
            edge: u32,
        },
        /// The dependency finished serving a job.
        Completed {
            /// The dependency.
            dep: u32,
            /// The job.
            job: JobRef,
        },
        /// Another tenant's request reached the dependency.
        BackgroundArrived {
            /// The dependency.
            dep: u32,
        },
    }
}

/// The queue's jobs as its line sees them: live while held and still
/// queued; loaded ahead of their turn (in a storm the queue holds up to
/// its limit of jobs, each last touched when it arrived, seconds before).
struct QueuedJobs<'a>(&'a Slab<Job>);

impl Waiting<JobRef> for QueuedJobs<'_> {
    #[inline]
    fn is_live(&mut self, j: &JobRef) -> bool {
        self.0.get(*j).is_some_and(|job| job.queued)
    }

    #[inline]
    fn prefetch(&self, j: &JobRef) {
        self.0.prefetch(*j);
    }
}

/// A reference to an upstream job: stale once the job is gone.
pub type JobRef = Ref<Job>;

/// Whose request a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// An attempt from one of our pods, on its edge.
    Client(AttRef, u32),
    /// Another tenant's request (background load).
    Background,
}

/// What the upstream answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 200.
    Ok,
    /// An injected error code (500, 503, 401).
    Error(u16),
    /// 503 from admission (overloaded), with its pushback.
    Rejected(Pushback),
    /// 429 with Retry-After, nanoseconds.
    TooManyRequests(u64),
    /// The connection reset before an answer (the admission threshold's
    /// answer to a retry).
    Reset,
}

/// A request the upstream holds, in service or queued.
#[derive(Clone, Debug)]
pub struct Job {
    owner: Owner,
    /// The caller gave up on it.
    abandoned: bool,
    /// Waiting in the queue (not yet in a slot).
    queued: bool,
    /// Completion timer while in service.
    timer: Option<EventId>,
    /// Propagated deadline: past it, queued work is dropped.
    deadline: Option<SimTime>,
    /// Its work in seconds, fixed on admission (`applies_at: admission`):
    /// the latency draw times the scale then. `None`: drawn at start.
    work: Option<f64>,
}

/// What happened to an arriving request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// In a slot now.
    Started,
    /// Waiting for a slot.
    Queued,
    /// Answered at once (429 from the rate limit, 503 past the admission
    /// limit); the job is already gone.
    Answered(Status),
    /// Dropped silently past the admission limit.
    Dropped,
}

/// A finished job, for the world to route.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    /// Whose it was.
    pub owner: Owner,
    /// The caller had given up: this is wasted work.
    pub abandoned: bool,
    /// The answer.
    pub status: Status,
}

/// The upstream's live parameters (the timeline changes them).
#[derive(Clone, Debug)]
pub struct Params {
    /// Slots.
    pub capacity: u32,
    /// Latency multiplier.
    pub latency_scale: f64,
    /// Other tenants' requests per second.
    pub background_rps: f64,
    /// Injected 500 probability.
    pub http_500: f64,
    /// Injected 503 probability.
    pub http_503: f64,
    /// Injected 401 probability.
    pub http_401: f64,
    /// Rate limit (requests per second), if any.
    pub rate_limit_rps: Option<f64>,
}

impl Params {
    /// The live parameters a configuration starts with.
    fn of(cfg: &UpstreamConfig) -> Self {
        Params {
            capacity: cfg.capacity,
            latency_scale: cfg.latency_scale,
            background_rps: cfg.background_rps,
            http_500: cfg.errors.http_500,
            http_503: cfg.errors.http_503,
            http_401: cfg.errors.http_401,
            rate_limit_rps: cfg.rate_limit.as_ref().map(|r| r.rps),
        }
    }
}

fn pushback_of(p: &PushbackConfig) -> Pushback {
    match p {
        PushbackConfig::None => Pushback::None,
        PushbackConfig::After(d) => Pushback::After(d.as_nanos()),
        PushbackConfig::DontRetry => Pushback::DontRetry,
    }
}

/// The upstream.
pub struct Upstream {
    /// Its index among the world's dependencies (its events carry it).
    index: u32,
    /// Live parameters.
    pub params: Params,
    /// Requests queued beyond the slots (the timeline changes it).
    pub queue_limit: u32,
    /// Injected errors decided on arrival and answered this long after it
    /// (none: decided when service ends).
    errors_after: Option<SimDuration>,
    /// How long after arrival a request turned away at the door is answered.
    reject_after: SimDuration,
    /// When a request's work is fixed: on admission, or when it starts.
    applies_at: AppliesAt,
    /// The dynamic admission threshold, if any.
    admission: Option<AdmissionThreshold>,
    overflow: OverflowAction,
    latency: Dist,
    law: LoadLaw,
    cancellation: bool,
    pushback: Pushback,
    honor_deadlines: bool,
    /// Queued jobs dropped because their deadline passed, not yet reported.
    pub expired: u64,
    retry_after: SimDuration,
    bucket: TokenBucket,
    jobs: Slab<Job>,
    queue: WaitLine<JobRef>,
    in_service: u32,
    shedding: Option<Shedding>,
    latency_rng: SimRng,
    error_rng: SimRng,
    shed_rng: SimRng,
}

impl Upstream {
    /// An idle upstream.
    pub fn new(
        index: u32,
        cfg: &UpstreamConfig,
        latency: Dist,
        latency_rng: SimRng,
        error_rng: SimRng,
        shed_rng: SimRng,
    ) -> Self {
        let rl = cfg.rate_limit.as_ref();
        let burst = rl.map_or(0.0, |r| r.burst.map_or(r.rps.max(1.0), f64::from));
        Upstream {
            index,
            params: Params::of(cfg),
            queue_limit: cfg.queue_limit,
            errors_after: cfg.errors.after,
            reject_after: cfg.reject_after,
            applies_at: cfg.applies_at,
            admission: cfg.admission.as_ref().map(AdmissionThreshold::new),
            overflow: cfg.overflow,
            latency,
            law: cfg.load_law.clone(),
            cancellation: cfg.cancellation,
            pushback: pushback_of(&cfg.pushback),
            honor_deadlines: cfg.honor_deadlines,
            expired: 0,
            retry_after: rl.map_or(SimDuration::from_secs(1), |r| r.retry_after),
            bucket: TokenBucket::full(burst),
            jobs: Slab::new(),
            queue: WaitLine::new(),
            in_service: 0,
            shedding: cfg.shedding,
            latency_rng,
            error_rng,
            shed_rng,
        }
    }

    /// Requests in a slot.
    #[inline]
    pub fn in_service(&self) -> u32 {
        self.in_service
    }
    /// Requests waiting for a slot.
    #[inline]
    pub fn queued(&self) -> u32 {
        self.queue.len() as u32
    }
    /// Whether the queue's count is the jobs it holds still queued (see
    /// [`WaitLine::check`]).
    pub fn check_queue(&self) -> Result<(), String> {
        self.queue.check(QueuedJobs(&self.jobs))
    }
    /// Jobs held (in service, queued, or cancelled but not yet swept).
    #[inline]
    pub fn jobs_held(&self) -> usize {
        self.jobs.len()
    }

    #[inline]
    fn alloc(&mut self, owner: Owner, deadline: Option<SimTime>) -> JobRef {
        let work = match self.applies_at {
            AppliesAt::Admission => Some(self.draw_work()),
            AppliesAt::Start => None,
        };
        self.jobs.insert(Job {
            work,
            owner,
            abandoned: false,
            queued: false,
            timer: None,
            deadline,
        })
    }

    /// Starts loading job `j`'s record, to be read soon (a hint: see
    /// `sim_core::prefetch`).
    #[inline]
    pub fn prefetch_job(&self, j: JobRef) {
        self.jobs.prefetch(j);
    }

    #[inline]
    fn job_mut(&mut self, j: JobRef) -> Option<&mut Job> {
        self.jobs.get_mut(j)
    }

    #[inline]
    fn free_job(&mut self, j: JobRef) -> Option<Job> {
        self.jobs.remove(j)
    }

    /// The service time of a request starting now, with `n` in service
    /// (itself included).
    /// The work of a request as the latency law and scale say now.
    fn draw_work(&mut self) -> f64 {
        self.latency.sample_secs(&mut self.latency_rng) * self.params.latency_scale
    }

    /// The service time of a request with `work` (drawn now when none was
    /// fixed on admission) starting with `n` in service.
    fn service_time(&mut self, work: Option<f64>, n: u32) -> SimDuration {
        let base = match work {
            Some(w) => w,
            None => self.draw_work(),
        };
        let n = f64::from(n);
        let secs = match self.law {
            LoadLaw::None => base,
            LoadLaw::Linear { per_request } => base + per_request.as_secs_f64() * n,
            LoadLaw::Usl { sigma, kappa } => {
                base * (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
            }
        };
        SimDuration::from_secs_f64(secs)
    }

    #[inline(always)]
    fn start(&mut self, j: JobRef, sched: &mut Scheduler<Event>) {
        self.in_service += 1;
        let work = self.jobs.get(j).and_then(|job| job.work);
        let d = self.service_time(work, self.in_service);
        let timer = sched.schedule_in(
            d,
            DependencyEvent::Completed {
                dep: self.index,
                job: j,
            }
            .into(),
        );
        if let Some(job) = self.job_mut(j) {
            job.queued = false;
            job.timer = Some(timer);
        }
    }

    /// Refills the rate-limit bucket and takes a token; false if empty.
    #[inline]
    fn take_token(&mut self, now: SimTime) -> bool {
        match self.params.rate_limit_rps {
            Some(rps) => self.bucket.take(now, rps),
            None => true,
        }
    }

    /// A request arrives. Returns the job (when admitted) and what happened.
    #[inline]
    pub fn arrive(
        &mut self,
        owner: Owner,
        retry: bool,
        deadline: Option<SimTime>,
        now: SimTime,
        sched: &mut Scheduler<Event>,
    ) -> (Option<JobRef>, Admission) {
        if !self.take_token(now) {
            return (
                None,
                Admission::Answered(Status::TooManyRequests(self.retry_after.as_nanos())),
            );
        }
        let held = self.in_service + self.queue.len() as u32;
        if let Some(a) = self.admission.as_mut() {
            let retry_after = a.config().retry_after;
            if f64::from(held) >= a.threshold(now) {
                let answer = match retry {
                    true => Status::Reset,
                    false => Status::TooManyRequests(retry_after.as_nanos()),
                };
                return (None, Admission::Answered(answer));
            }
        }
        if self.errors_after.is_some() {
            let status = self.draw_error();
            if status != Status::Ok {
                return (None, Admission::Answered(status));
            }
        }
        if let Some(s) = self.shedding {
            let p = s.probability(self.in_service);
            if p > 0.0 && self.shed_rng.random::<f64>() < p {
                return self.overflow_answer();
            }
        }
        if self.in_service < self.params.capacity && self.queue.is_empty() {
            let j = self.alloc(owner, deadline);
            self.start(j, sched);
            return (Some(j), Admission::Started);
        }
        if (self.queue.len() as u32) < self.queue_limit {
            let j = self.alloc(owner, deadline);
            if let Some(job) = self.job_mut(j) {
                job.queued = true;
            }
            self.queue.push(j, QueuedJobs(&self.jobs));
            return (Some(j), Admission::Queued);
        }
        self.overflow_answer()
    }

    /// What a request the upstream cannot take gets.
    fn overflow_answer(&self) -> (Option<JobRef>, Admission) {
        match self.overflow {
            OverflowAction::Reject => (None, Admission::Answered(Status::Rejected(self.pushback))),
            OverflowAction::Drop => (None, Admission::Dropped),
        }
    }

    /// The admission threshold now (infinite without one).
    #[cfg(test)]
    fn threshold(&mut self, now: SimTime) -> f64 {
        self.admission
            .as_mut()
            .map_or(f64::INFINITY, |a| a.threshold(now))
    }

    /// Remembers an answer for the admission threshold's error rate.
    #[inline]
    pub fn answered(&mut self, now: SimTime, status: Status) {
        let Some(a) = self.admission.as_mut() else {
            return; // no threshold to feed
        };
        let failed = match status {
            Status::Error(code) => code >= 500,
            Status::Rejected(_) => true,
            Status::Ok | Status::TooManyRequests(_) | Status::Reset => false,
        };
        a.record(now, failed);
    }

    /// Takes a new configuration (the timeline's `deploy: { upstream }`):
    /// every setting from now on, with what it holds kept: requests in
    /// service finish at the times they were given, the queue stays (and
    /// is served as the new capacity allows), the rate limit keeps its
    /// tokens and the admission threshold its window.
    pub fn reconfigure(
        &mut self,
        cfg: &UpstreamConfig,
        latency: Dist,
        sched: &mut Scheduler<Event>,
    ) {
        self.params = Params::of(cfg);
        self.queue_limit = cfg.queue_limit;
        self.errors_after = cfg.errors.after;
        self.reject_after = cfg.reject_after;
        self.applies_at = cfg.applies_at;
        self.admission = match (self.admission.take(), &cfg.admission) {
            (Some(mut a), Some(c)) => {
                a.reconfigure(c);
                Some(a)
            }
            (_, c) => c.as_ref().map(AdmissionThreshold::new),
        };
        self.overflow = cfg.overflow;
        self.latency = latency;
        self.law = cfg.load_law.clone();
        self.cancellation = cfg.cancellation;
        self.pushback = pushback_of(&cfg.pushback);
        self.honor_deadlines = cfg.honor_deadlines;
        self.retry_after = cfg
            .rate_limit
            .as_ref()
            .map_or(SimDuration::from_secs(1), |r| r.retry_after);
        self.shedding = cfg.shedding;
        self.fill_slots(sched);
    }

    /// An injected error, or `Ok`, by one draw against the live mix.
    #[inline]
    fn draw_error(&mut self) -> Status {
        let u: f64 = self.error_rng.random();
        let p = &self.params;
        if u < p.http_500 {
            Status::Error(500)
        } else if u < p.http_500 + p.http_503 {
            Status::Error(503)
        } else if u < p.http_500 + p.http_503 + p.http_401 {
            Status::Error(401)
        } else {
            Status::Ok
        }
    }

    /// How long after arrival an answer given at the door goes back: an
    /// injected error decided on arrival after its delay, a refusal (429,
    /// overflow or shedding 503) after `reject_after`.
    #[inline]
    pub fn answer_delay(&self, status: Status) -> SimDuration {
        match status {
            Status::Error(_) => self.errors_after.unwrap_or(SimDuration::ZERO),
            _ => self.reject_after,
        }
    }

    /// Starts queued jobs while slots are free. With deadlines honoured, a
    /// queued job whose propagated deadline has passed is dropped instead
    /// (nobody waits for it any more).
    #[inline(always)]
    pub fn fill_slots(&mut self, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        while self.in_service < self.params.capacity {
            let Some(j) = self.queue.pop(QueuedJobs(&self.jobs)) else {
                return; // nobody waiting
            };
            let honor = self.honor_deadlines;
            let expired = honor
                && self
                    .jobs
                    .get(j)
                    .and_then(|job| job.deadline)
                    .is_some_and(|d| d <= now);
            if expired {
                self.free_job(j);
                self.expired += 1;
            } else {
                self.start(j, sched);
            }
        }
    }

    /// A job's service time is up: frees its slot, starts the next queued
    /// job, and says who gets which answer. Always inlined: with the
    /// queue's hint in it the compiler left it out of line, a call per
    /// completion (+0.7 % of M/M/8's instructions).
    #[inline(always)]
    pub fn complete(&mut self, j: JobRef, sched: &mut Scheduler<Event>) -> Option<Completion> {
        let job = self.free_job(j)?;
        self.in_service -= 1;
        // Errors decided on arrival were answered then; the rest is served.
        let status = match self.errors_after {
            None => self.draw_error(),
            Some(_) => Status::Ok,
        };
        self.fill_slots(sched);
        Some(Completion {
            owner: job.owner,
            abandoned: job.abandoned,
            status,
        })
    }

    /// The caller gave up on `j`. Without cancellation the upstream keeps
    /// working on it (it will count as wasted); with it, a queued job is
    /// dropped and a running one stopped. Returns true if work was cancelled.
    pub fn abandon(&mut self, j: JobRef, sched: &mut Scheduler<Event>) -> bool {
        let cancellation = self.cancellation;
        let Some(job) = self.job_mut(j) else {
            return false;
        };
        job.abandoned = true;
        if !cancellation {
            return false;
        }
        let (queued, timer) = (job.queued, job.timer);
        self.free_job(j);
        if queued {
            self.queue.left();
        } else {
            if let Some(t) = timer {
                sched.cancel(t);
            }
            self.in_service -= 1;
            self.fill_slots(sched);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AdmissionConfig, UpstreamConfig};
    use sim_core::rng::RngStreams;

    #[test]
    fn the_admission_threshold_falls_with_the_square_of_the_error_rate() {
        let cfg = UpstreamConfig {
            admission: Some(AdmissionConfig {
                base_capacity: 100,
                window: SimDuration::from_secs(10),
                retry_after: SimDuration::from_secs(1),
            }),
            ..UpstreamConfig::default()
        };
        let streams = RngStreams::new(1);
        let latency = Dist::new(&cfg.latency).unwrap();
        let mut u = Upstream::new(
            0,
            &cfg,
            latency,
            streams.stream("a"),
            streams.stream("b"),
            streams.stream("c"),
        );
        let t = |s: u64| SimTime::ZERO.saturating_add(SimDuration::from_secs(s));
        assert_eq!(u.threshold(t(0)), 100.0);
        for i in 0..10 {
            let status = if i % 2 == 0 {
                Status::Error(503)
            } else {
                Status::Ok
            };
            u.answered(t(1), status);
        }
        // Half the answers 5xx: 100 × (1 − 0.25).
        assert_eq!(u.threshold(t(2)), 75.0);
        // 429s and resets are the threshold's own answers, not failures.
        u.answered(t(2), Status::TooManyRequests(0));
        assert!((u.threshold(t(3)) - 100.0 * (1.0 - (5.0f64 / 11.0).powi(2))).abs() < 1e-9);
        // Ten seconds on, the window has forgotten.
        assert_eq!(u.threshold(t(13)), 100.0);
    }
}
