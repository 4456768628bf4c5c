//! Requests and their attempts, in slabs addressed by generation-checked
//! references: an event about a request or attempt that is gone (or whose
//! slot was reused) is recognised as stale.
//!
//! A request is one unit of work at one service: what a user sent, at the
//! entry service, or an attempt of another service's call. It makes the
//! calls its service lists, in steps (one call, or a parallel group); each
//! call is made of attempts. Usually one attempt of a call is live at a
//! time (retries follow each other); with hedging several run at once.

use sim_core::queue::EventId;
use sim_core::slab::{Ref, Slab};
use sim_core::time::SimTime;

use crate::policy::backoff::BackoffState;

/// A reference to a request: stale once the request is gone.
pub type ReqRef = Ref<Request>;

/// A reference to an attempt: stale once the attempt is over.
pub type AttRef = Ref<Attempt>;

/// A reference to a call: stale once the call is over.
pub type CallRef = Ref<Call>;

/// Most calls of one step running at once (a parallel group).
pub const MAX_PARALLEL: usize = 16;

/// Most attempts of one call in progress at once (gRPC clamps hedging's
/// `maxAttempts` to 5).
pub const MAX_LIVE: usize = 5;

/// The calls of a request's current step: the first inline (a single
/// call, the common case, costs no allocation), the others of a parallel
/// group in a list, in the order they were made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallList {
    first: Option<CallRef>,
    rest: Vec<CallRef>,
}

impl CallList {
    /// Adds a call.
    #[inline]
    pub fn push(&mut self, c: CallRef) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(c);
        } else {
            self.rest.push(c);
        }
    }

    /// Forgets a call, if listed.
    #[inline]
    pub fn remove(&mut self, c: CallRef) {
        if self.first == Some(c) {
            self.first = None;
        } else if let Some(i) = self.rest.iter().position(|&x| x == c) {
            self.rest.remove(i);
        }
    }

    /// The calls, in the order they were made.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = CallRef> + '_ {
        self.first.iter().chain(self.rest.iter()).copied()
    }

    /// Runs `f` on each call, the first and then the rest: two plain
    /// loops, kept in the caller (`inline(always)`), where a chained
    /// iterator's fold was left a function of its own and called per
    /// request.
    #[inline(always)]
    pub fn for_each(&self, mut f: impl FnMut(CallRef)) {
        if let Some(c) = self.first {
            f(c);
        }
        for &c in &self.rest {
            f(c);
        }
    }

    /// Whether no call is listed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }
}

impl Call {
    /// Attempts in progress.
    #[inline]
    pub fn live_count(&self) -> u32 {
        self.live.iter().flatten().count() as u32
    }
    /// The attempts in progress.
    #[inline]
    pub fn live_attempts(&self) -> impl Iterator<Item = AttRef> + '_ {
        self.live.iter().flatten().copied()
    }
    /// Records a new live attempt; false if all places are taken.
    #[inline]
    pub fn add_live(&mut self, a: AttRef) -> bool {
        match self.live.iter_mut().find(|x| x.is_none()) {
            Some(place) => {
                *place = Some(a);
                true
            }
            None => false,
        }
    }
    /// Forgets a live attempt.
    #[inline]
    pub fn remove_live(&mut self, a: AttRef) {
        // An attempt holds one place at most.
        if let Some(place) = self.live.iter_mut().find(|x| **x == Some(a)) {
            *place = None;
        }
    }
}

/// Where a request stands in its service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// On its way to a pod.
    Queued,
    /// On its pod, in line for a worker.
    WaitingWorker,
    /// Holding a worker, in line for a core to do its own work.
    WaitingCore,
    /// Doing its own work on a core.
    Working,
    /// Past its own work: its calls are running (the current step of the
    /// service's calls), or it made none and is being answered.
    Calling,
    /// The service is done with it (answered or failed).
    Finished,
}

/// Where a call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallPhase {
    /// At least one attempt is live (or about to start).
    Calling,
    /// Waiting out the delay before the next attempt.
    Backoff,
    /// Waiting in its client's bulkhead's line for a place, before any
    /// attempt.
    WaitingPlace,
}

/// Where an attempt stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptPhase {
    /// Waiting for the client's own rate limiter (AWS adaptive).
    RateLimited,
    /// Waiting in the pool's line for a connection.
    WaitingPool,
    /// Turned away by a full line (`pool.max_pending`): it fails at the
    /// next step, an event of no delay, holding nothing meanwhile.
    TurnedAway,
    /// A new connection is being dialled for it.
    Connecting,
    /// Sent; the connection is held until the answer or a timeout.
    InFlight,
    /// Over.
    Done,
}

/// Who waits for a request's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A user, through the gateway.
    User,
    /// An attempt of a call from another service (the request is that
    /// attempt's work at the service called), on its edge.
    Attempt {
        /// The attempt.
        att: AttRef,
        /// Its edge: the answer's way back.
        edge: u32,
    },
}

/// One request at one service: a user's, at the entry service, or an
/// attempt of another service's call.
#[derive(Clone, Debug)]
pub struct Request {
    /// Sequential id, for traces.
    pub id: u64,
    /// When the user sent it (or the calling attempt was sent).
    pub arrived: SimTime,
    /// The service serving it.
    pub service: u32,
    /// Who waits for its answer.
    pub caller: Caller,
    /// The pod serving it, once chosen.
    pub pod: u32,
    /// The pod's incarnation when it was assigned (a restart bumps it).
    pub pod_epoch: u32,
    /// Closed-loop user who sent it, if any.
    pub user: Option<u32>,
    /// Whether the call may be retried safely.
    pub idempotent: bool,
    /// The user has seen an outcome (answer, deadline, patience); always
    /// true for a request from another service.
    pub user_done: bool,
    /// The service has finished with it (its worker is free).
    pub service_done: bool,
    /// It holds one of its pod's workers.
    pub has_worker: bool,
    /// It holds one of its pod's cores.
    pub has_core: bool,
    /// The patience timer (the gateway deadline waits in the load's
    /// line instead).
    pub user_timer: Option<EventId>,
    /// Its own work's end.
    pub work_timer: Option<EventId>,
    /// The deadline its caller propagated (a request from another
    /// service's attempt with `propagate_deadline`): its calls' deadlines
    /// are capped by it, and it is cut when it passes.
    pub deadline: Option<SimTime>,
    /// Timer of that deadline.
    pub deadline_timer: Option<EventId>,
    /// The attempt that sent it gave up and told this service (its
    /// `cancellation`): no answer goes back.
    pub caller_gone: bool,
    /// Times the gateway sent it to a pod (1 + gateway retries).
    pub dispatches: u32,
    /// When it reached its pod (for its service's latency), once it has.
    pub reached: Option<SimTime>,
    /// Where it stands.
    pub phase: Phase,
    /// The step of its service's calls running (calls in sequence, a
    /// parallel group one step).
    pub step: u32,
    /// Calls of the current step still running.
    pub calls: CallList,
    /// Calls of the current step that answered (or, optional, failed).
    pub step_done: u32,
    /// Calls of the current step that failed (not optional).
    pub step_failed: u32,
    /// Calls the current step made.
    pub step_made: u32,
    /// Answers the current step needs.
    pub step_need: u32,
    /// An optional call failed: the answer is degraded.
    pub degraded: bool,
}

/// One call of a request to one edge: its attempts, retries or hedges.
#[derive(Clone, Debug)]
pub struct Call {
    /// Its request.
    pub req: ReqRef,
    /// The edge it goes out on.
    pub edge: u32,
    /// Its request's pod, and the pod's incarnation (copied: every
    /// attempt needs them).
    pub pod: u32,
    /// The pod's incarnation.
    pub pod_epoch: u32,
    /// Whether its request may be retried safely.
    pub idempotent: bool,
    /// The call's total deadline, if any.
    pub deadline: Option<SimTime>,
    /// Timer of the call's total deadline.
    pub deadline_timer: Option<EventId>,
    /// Where it stands.
    pub phase: CallPhase,
    /// Attempts started (first attempt is 1).
    pub attempts: u32,
    /// Retries charged against `max_retries` (Retry-After waits and fast
    /// retries may not count).
    pub retries_used: u32,
    /// The most retries its budget lets it take, set as it starts
    /// (Finagle's share of the balance; `u32::MAX` for none).
    pub retry_cap: u32,
    /// Fast (layered) retries used.
    pub fast_retries_used: u32,
    /// `retries_used` when the backoff schedule last started over (after a
    /// honoured pushback).
    pub backoff_from: u32,
    /// What the retry budget charged for the retry about to start.
    pub pending_retry_cost: u32,
    /// No more hedges for this call: the budget refused one, or a server
    /// said not to retry (gRPC freezes hedging so).
    pub hedging_frozen: bool,
    /// It started a retry (not a hedge): its end counts toward the
    /// retries' rescue rate.
    pub retried: bool,
    /// It holds a place in its client's bulkhead, to give back when it
    /// ends (not one taken from a bulkhead a deploy has since replaced).
    /// A call waiting for one is `CallPhase::WaitingPlace`.
    pub holds_place: bool,
    /// Attempts in progress (hedging runs up to five at once, like gRPC).
    pub live: [Option<AttRef>; MAX_LIVE],
    /// Retry-delay or next-hedge timer.
    pub aux_timer: Option<EventId>,
    /// Per-call backoff memory (decorrelated jitters).
    pub backoff: BackoffState,
}

/// One attempt of a call.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// Its call.
    pub call: CallRef,
    /// Its request.
    pub req: ReqRef,
    /// The edge it goes out on.
    pub edge: u32,
    /// Its number within the call (1 is the first attempt).
    pub number: u32,
    /// A hedge (sent while another attempt was still live).
    pub hedge: bool,
    /// Where it stands.
    pub phase: AttemptPhase,
    /// The pod it runs on, and the pod's incarnation.
    pub pod: u32,
    /// The pod's incarnation.
    pub pod_epoch: u32,
    /// When it started.
    pub started: SimTime,
    /// When its current wait began (pool line, rate limiter).
    pub wait_started: SimTime,
    /// When its timeout fires, once armed (the client's timeout line holds
    /// the deadline; a line entry that does not match is stale).
    pub timeout_at: Option<SimTime>,
    /// Pool-wait timeout or rate-limiter timer.
    pub aux_timer: Option<EventId>,
    /// Its work at the far end, once there: a dependency's job.
    pub job: Option<crate::upstream::JobRef>,
    /// Its request at the service called, once sent there.
    pub child: Option<ReqRef>,
    /// What the retry budget charged for it.
    pub retry_cost: u32,
    /// Time it spent in the pool's line so far.
    pub pool_wait: sim_core::time::SimDuration,
    /// It was cut while sent: the far end may still answer, late.
    pub late: bool,
    /// It started under policies a deploy has since replaced: the budget
    /// in place never saw it start, so it is not told it closed, nor of
    /// a charge it never made.
    pub before_deploy: bool,
}

/// The live requests, calls and attempts.
#[derive(Debug, Default)]
pub struct Requests {
    reqs: Slab<Request>,
    calls: Slab<Call>,
    atts: Slab<Attempt>,
    next_id: u64,
}

impl Requests {
    /// Creates a request arriving at `service` at `now`.
    #[inline]
    pub fn create(
        &mut self,
        now: SimTime,
        service: u32,
        caller: Caller,
        user: Option<u32>,
        idempotent: bool,
    ) -> ReqRef {
        let id = self.next_id;
        self.next_id += 1;
        self.reqs.insert(Request {
            id,
            arrived: now,
            service,
            caller,
            pod: 0,
            pod_epoch: 0,
            user,
            idempotent,
            user_done: caller != Caller::User,
            service_done: false,
            has_worker: false,
            has_core: false,
            user_timer: None,
            work_timer: None,
            deadline: None,
            deadline_timer: None,
            caller_gone: false,
            dispatches: 0,
            reached: None,
            phase: Phase::Queued,
            step: 0,
            calls: CallList::default(),
            step_done: 0,
            step_failed: 0,
            step_made: 0,
            step_need: 0,
            degraded: false,
        })
    }

    /// The request, if `r` still refers to it.
    #[inline]
    pub fn get(&self, r: ReqRef) -> Option<&Request> {
        self.reqs.get(r)
    }

    /// The request, mutably, if `r` still refers to it.
    #[inline]
    pub fn get_mut(&mut self, r: ReqRef) -> Option<&mut Request> {
        self.reqs.get_mut(r)
    }

    /// Frees the request's slot once both the user and the service are
    /// done with it.
    #[inline]
    pub fn release_if_done(&mut self, r: ReqRef) {
        if self.get(r).is_some_and(|q| q.user_done && q.service_done) {
            self.reqs.discard(r);
        }
    }

    /// Starts a call of `req` (on `pod` in its incarnation `pod_epoch`) on
    /// `edge`, its deadline the one its request inherited, if any (the
    /// call's own total deadline is set when it begins).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn new_call(
        &mut self,
        req: ReqRef,
        edge: u32,
        pod: u32,
        pod_epoch: u32,
        idempotent: bool,
        inherited: Option<SimTime>,
    ) -> CallRef {
        self.calls.insert(Call {
            req,
            edge,
            pod,
            pod_epoch,
            idempotent,
            deadline: inherited,
            deadline_timer: None,
            phase: CallPhase::Calling,
            attempts: 0,
            retries_used: 0,
            retry_cap: u32::MAX,
            fast_retries_used: 0,
            backoff_from: 0,
            pending_retry_cost: 0,
            hedging_frozen: false,
            retried: false,
            holds_place: false,
            live: [None; MAX_LIVE],
            aux_timer: None,
            backoff: BackoffState::default(),
        })
    }

    /// The call, if `c` still refers to it.
    #[inline]
    pub fn call(&self, c: CallRef) -> Option<&Call> {
        self.calls.get(c)
    }

    /// The call, mutably, if `c` still refers to it.
    #[inline]
    pub fn call_mut(&mut self, c: CallRef) -> Option<&mut Call> {
        self.calls.get_mut(c)
    }

    /// Forgets a finished call.
    #[inline]
    pub fn remove_call(&mut self, c: CallRef) {
        self.calls.discard(c);
    }

    /// Calls held.
    #[inline]
    pub fn live_calls(&self) -> usize {
        self.calls.len()
    }

    /// Starts an attempt record.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn new_attempt(
        &mut self,
        call: CallRef,
        req: ReqRef,
        edge: u32,
        number: u32,
        hedge: bool,
        pod: u32,
        pod_epoch: u32,
        now: SimTime,
    ) -> AttRef {
        self.atts.insert(Attempt {
            call,
            req,
            edge,
            number,
            hedge,
            phase: AttemptPhase::WaitingPool,
            pod,
            pod_epoch,
            started: now,
            wait_started: now,
            timeout_at: None,
            aux_timer: None,
            job: None,
            child: None,
            retry_cost: 0,
            pool_wait: sim_core::time::SimDuration::ZERO,
            late: false,
            before_deploy: false,
        })
    }

    /// Starts loading attempt `a`'s record, to be read soon (a hint:
    /// nothing is read; see `sim_core::prefetch`).
    #[inline]
    pub fn prefetch_att(&self, a: AttRef) {
        self.atts.prefetch(a)
    }

    /// Starts loading call `c`'s record, to be read soon.
    #[inline]
    pub fn prefetch_call(&self, c: CallRef) {
        self.calls.prefetch(c)
    }

    /// Starts loading request `r`'s record, to be read soon.
    #[inline]
    pub fn prefetch_req(&self, r: ReqRef) {
        self.reqs.prefetch(r)
    }

    /// The attempt, if `a` still refers to it.
    #[inline]
    pub fn att(&self, a: AttRef) -> Option<&Attempt> {
        self.atts.get(a)
    }

    /// The attempt, mutably, if `a` still refers to it.
    #[inline]
    pub fn att_mut(&mut self, a: AttRef) -> Option<&mut Attempt> {
        self.atts.get_mut(a)
    }

    /// Forgets a finished attempt.
    #[inline]
    pub fn remove_attempt(&mut self, a: AttRef) {
        self.atts.discard(a);
    }

    /// Requests held (users' and orphaned work).
    #[inline]
    pub fn live(&self) -> usize {
        self.reqs.len()
    }

    /// Attempts held.
    #[inline]
    pub fn live_attempts(&self) -> usize {
        self.atts.len()
    }

    /// References to every live request (for restarts and audits), in
    /// slot order.
    pub fn refs(&self) -> Vec<ReqRef> {
        self.reqs.refs()
    }

    /// References to every live attempt, in slot order.
    pub fn all_attempts(&self) -> Vec<AttRef> {
        self.atts.refs()
    }

    /// Every call held, in slot order.
    pub fn all_calls(&self) -> Vec<CallRef> {
        self.calls.refs()
    }

    /// Requests created so far.
    pub fn created(&self) -> u64 {
        self.next_id
    }
}
