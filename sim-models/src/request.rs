//! Requests and their attempts: a slab of live requests addressed by
//! generation-checked references, so an event about a request that is gone
//! (or whose slot was reused) is recognised as stale.

use sim_core::queue::EventId;
use sim_core::time::SimTime;

use crate::outcome::AttemptOutcome;

/// A reference to a request slot, valid while the generation matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReqRef {
    slot: u32,
    generation: u32,
}

/// Where the current attempt of a request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// On its way to a pod, or waiting for a worker there.
    Queued,
    /// Waiting in the pool's line for a connection.
    WaitingPool,
    /// A new connection is being dialled for it.
    Connecting,
    /// Sent; the connection is held until the answer or a timeout.
    InFlight,
    /// Waiting out the delay before the next attempt.
    Backoff,
    /// The service is done with it (answered or failed).
    Finished,
}

/// One request from one user.
#[derive(Clone, Debug)]
pub struct Request {
    generation: u32,
    /// Sequential id, for traces and the attempts table.
    pub id: u64,
    /// When the user sent it.
    pub arrived: SimTime,
    /// The pod serving it, once chosen.
    pub pod: u32,
    /// The pod's incarnation when it was assigned (a restart bumps it).
    pub pod_epoch: u32,
    /// Closed-loop user who sent it, if any.
    pub user: Option<u32>,
    /// The user has seen an outcome (answer, deadline, patience).
    pub user_done: bool,
    /// The service has finished with it (its worker is free).
    pub service_done: bool,
    /// It holds one of its pod's workers.
    pub has_worker: bool,
    /// The gateway deadline or patience timer.
    pub user_timer: Option<EventId>,
    /// The call's total deadline, if any, and its timer.
    pub call_deadline: Option<SimTime>,
    /// Timer of the call's total deadline.
    pub call_timer: Option<EventId>,
    /// Attempts started so far (the current attempt's number, from 1).
    pub attempts: u32,
    /// Where the current attempt stands.
    pub phase: Phase,
    /// When the current attempt started.
    pub attempt_started: SimTime,
    /// When the current attempt began waiting for the pool.
    pub wait_started: SimTime,
    /// The current attempt's timeout timer.
    pub attempt_timer: Option<EventId>,
    /// Pool-wait timeout or retry-delay timer.
    pub aux_timer: Option<EventId>,
    /// The upstream job of the current attempt, once sent.
    pub job: Option<crate::upstream::JobRef>,
    /// How the last finished attempt ended.
    pub last_outcome: Option<AttemptOutcome>,
}

/// The live requests.
#[derive(Debug, Default)]
pub struct Requests {
    slots: Vec<Option<Request>>,
    generations: Vec<u32>,
    free: Vec<u32>,
    live: usize,
    next_id: u64,
}

impl Requests {
    /// Creates a request arriving at `now`.
    pub fn create(&mut self, now: SimTime, user: Option<u32>) -> ReqRef {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.generations.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        let generation = self.generations[slot as usize];
        self.slots[slot as usize] = Some(Request {
            generation,
            id: self.next_id,
            arrived: now,
            pod: 0,
            pod_epoch: 0,
            user,
            user_done: false,
            service_done: false,
            has_worker: false,
            user_timer: None,
            call_deadline: None,
            call_timer: None,
            attempts: 0,
            phase: Phase::Queued,
            attempt_started: now,
            wait_started: now,
            attempt_timer: None,
            aux_timer: None,
            job: None,
            last_outcome: None,
        });
        self.next_id += 1;
        self.live += 1;
        ReqRef { slot, generation }
    }

    /// The request, if `r` still refers to it.
    #[inline]
    pub fn get(&self, r: ReqRef) -> Option<&Request> {
        self.slots
            .get(r.slot as usize)?
            .as_ref()
            .filter(|q| q.generation == r.generation)
    }

    /// The request, mutably, if `r` still refers to it.
    #[inline]
    pub fn get_mut(&mut self, r: ReqRef) -> Option<&mut Request> {
        self.slots
            .get_mut(r.slot as usize)?
            .as_mut()
            .filter(|q| q.generation == r.generation)
    }

    /// Frees the request's slot once both the user and the service are
    /// done with it.
    pub fn release_if_done(&mut self, r: ReqRef) {
        let done = self.get(r).is_some_and(|q| q.user_done && q.service_done);
        if done {
            self.slots[r.slot as usize] = None;
            self.generations[r.slot as usize] = self.generations[r.slot as usize].wrapping_add(1);
            self.free.push(r.slot);
            self.live -= 1;
        }
    }

    /// Requests held (users' and orphaned work).
    pub fn live(&self) -> usize {
        self.live
    }

    /// References to every live request (for restarts and audits).
    pub fn refs(&self) -> Vec<ReqRef> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.as_ref().map(|q| ReqRef {
                    slot: i as u32,
                    generation: q.generation,
                })
            })
            .collect()
    }

    /// Requests created so far.
    pub fn created(&self) -> u64 {
        self.next_id
    }
}
