//! A request's calls: its service's steps run in sequence, each one call
//! or a parallel group; a group is done when enough calls answered, and a
//! call to another service is a request there, answered back as the
//! attempt's status.
//!
//! The attempts of each call (gates, pool, retries, hedges) are the
//! client's (`client.rs`); this file is what a request does with its
//! calls' outcomes.

use rand::RngExt;
use sim_core::sim::Scheduler;
use sim_core::time::SimDuration;

use crate::client::ClientEvent;
use crate::outcome::Reason;
use crate::pods::ServiceEvent;
use crate::recorder::RowSink;
use crate::request::{AttRef, CallList, CallPhase, CallRef, Caller, Phase, ReqRef};
use crate::upstream::Status;
use crate::world::{Event, World, cross};

/// What an attempt's caller sees when the service it called answers
/// `reason`: an answer (a degraded one too) is 200; a timeout 504;
/// refusals for overload (a full worker line, no pod, an open breaker, a
/// budget or throttle) 503; a restart a reset connection; other failures
/// 500.
#[inline]
pub(crate) fn status_of(reason: Reason) -> Status {
    match reason {
        Reason::Success | Reason::Fallback => Status::Ok,
        Reason::AttemptTimeout | Reason::DeadlineExceeded => Status::Error(504),
        Reason::ClientError => Status::Error(400),
        Reason::PodOverloaded
        | Reason::Unavailable
        | Reason::BreakerOpen
        | Reason::BudgetExhausted
        | Reason::Throttled
        | Reason::RateLimited => Status::Error(503),
        Reason::PodRestarted => Status::Reset,
        Reason::ServerError | Reason::ConnectFailure | Reason::PoolTimeout | Reason::Abandoned => {
            Status::Error(500)
        }
    }
}

impl<S: RowSink> World<S> {
    /// Runs step `step` of `req`'s calls (steps whose calls all fall out
    /// of their share are skipped); past the last, the request is
    /// answered: a success, or a fallback if an optional call failed.
    pub(crate) fn run_step(&mut self, req: ReqRef, step: u32, sched: &mut Scheduler<Event>) {
        let q = stale!(self.reqs.get(req));
        let service = q.service as usize;
        let (pod, epoch, idempotent, inherited) = (q.pod, q.pod_epoch, q.idempotent, q.deadline);
        let mut step = step;
        let mut calls = CallList::default();
        let (n, need) = loop {
            let Some(&st) = self.services[service].steps.get(step as usize) else {
                let degraded = stale!(self.reqs.get(req)).degraded;
                let reason = if degraded {
                    Reason::Fallback
                } else {
                    Reason::Success
                };
                self.complete_request(req, reason, sched);
                return;
            };
            let mut n = 0;
            for i in st.from..st.to {
                let s = &mut self.services[service];
                let (e, p) = s.calls[i as usize];
                // Drawn only for a call made on a share of requests, so no
                // other draw moves.
                if p >= 1.0 || s.call_rng.random::<f64>() < p {
                    let call = self
                        .reqs
                        .new_call(req, e, pod, epoch, idempotent, inherited);
                    calls.push(call);
                    n += 1;
                }
            }
            if n > 0 {
                break (n, st.wait_for.min(n));
            }
            step += 1;
        };
        let q = stale!(self.reqs.get_mut(req));
        q.phase = Phase::Calling;
        q.step = step;
        q.step_done = 0;
        q.step_failed = 0;
        q.step_made = n;
        q.step_need = need;
        if n == 1 {
            let only = calls.iter().next();
            q.calls = calls;
            if let Some(call) = only {
                self.begin_call(call, sched);
            }
            return;
        }
        q.calls = calls.clone();
        for call in calls.iter() {
            // A call ended by a sibling (the step failed or completed) is
            // gone before its turn.
            if self
                .reqs
                .call(call)
                .is_some_and(|c| c.phase == CallPhase::Calling && c.attempts == 0)
            {
                self.begin_call(call, sched);
            }
        }
    }

    /// `call` is over with `reason`: the request counts it against its
    /// step, then moves to the next step, waits for its other calls, or
    /// fails.
    pub(crate) fn finish_call(
        &mut self,
        call: CallRef,
        reason: Reason,
        sched: &mut Scheduler<Event>,
    ) {
        let c = stale!(self.reqs.call(call));
        let (req, edge) = (c.req, c.edge);
        self.close_call(call, reason, false, sched);
        let optional = self.topo.edges[edge as usize].optional;
        let q = stale!(self.reqs.get_mut(req));
        if q.service_done {
            return;
        }
        q.calls.remove(call);
        let answered = matches!(reason, Reason::Success | Reason::Fallback);
        if answered || optional {
            q.step_done += 1;
            q.degraded |= !answered || reason == Reason::Fallback;
        } else {
            q.step_failed += 1;
        }
        if q.step_done >= q.step_need {
            // Enough answered: the rest of the group is not waited for.
            let rest = std::mem::take(&mut q.calls);
            let (next, service, degraded) = (q.step + 1, q.service, q.degraded);
            for other in rest.iter() {
                self.close_call(other, Reason::Success, true, sched);
            }
            if next as usize >= self.services[service as usize].steps.len() {
                // The last step: the request is answered (run_step's end,
                // without looking for a step that is not there).
                let reason = match degraded {
                    true => Reason::Fallback,
                    false => Reason::Success,
                };
                self.complete_request(req, reason, sched);
                return;
            }
            self.run_step(req, next, sched);
        } else if q.step_made - q.step_failed < q.step_need {
            self.complete_request(req, reason, sched);
        }
    }

    /// Sends attempt `att` to service `to`, arriving after `delay`: a
    /// request there, which the service's balancer places.
    pub(crate) fn send_to_service(
        &mut self,
        att: AttRef,
        to: u32,
        delay: SimDuration,
        sched: &mut Scheduler<Event>,
    ) {
        let now = sched.now();
        let a = stale!(self.reqs.att(att));
        let idempotent = self.reqs.get(a.req).is_none_or(|q| q.idempotent);
        if self.reqs.live() as u64 >= self.cfg.limits.max_in_flight {
            let limit = self.cfg.limits.max_in_flight;
            self.violated(now, || {
                format!("{limit} requests in flight across the services: the limit limits.max_in_flight was reached")
            });
            return;
        }
        let deadline = self.propagated_deadline(att);
        let child = self
            .reqs
            .create(now, to, Caller::Attempt(att), None, idempotent);
        stale!(self.reqs.att_mut(att)).child = Some(child);
        if let Some(d) = deadline {
            // The caller's deadline travels with the request: the service
            // stops working on it then (gRPC's propagated deadline).
            let timer = sched.schedule_at(
                d.max(now),
                ServiceEvent::RequestDeadlinePassed { req: child }.into(),
            );
            let q = stale!(self.reqs.get_mut(child));
            q.deadline = Some(d);
            q.deadline_timer = timer.ok();
        }
        let s = &mut self.services[to as usize];
        let Some(pod) = s.lb.pick() else {
            if let Some(q) = self.reqs.get_mut(child) {
                q.service_done = true;
                q.phase = Phase::Finished;
            }
            self.rec
                .node_service_done(to, Reason::Unavailable, None, now);
            self.answer_caller(child, att, Reason::Unavailable, sched);
            return;
        };
        let epoch = s.pods[pod as usize].epoch;
        s.lb.outstanding_changed(pod, 1);
        let q = stale!(self.reqs.get_mut(child));
        q.pod = pod;
        q.pod_epoch = epoch;
        q.dispatches = 1;
        cross(
            sched,
            delay,
            ServiceEvent::RequestReachedPod { req: child }.into(),
        );
    }

    /// The service answered request `req`, which attempt `att` sent: the
    /// answer crosses back to the attempt's pod (a gone attempt counts it
    /// late there), and the request is forgotten.
    pub(crate) fn answer_caller(
        &mut self,
        req: ReqRef,
        att: AttRef,
        reason: Reason,
        sched: &mut Scheduler<Event>,
    ) {
        let gone = self.reqs.get(req).is_some_and(|q| q.caller_gone);
        self.reqs.release_if_done(req);
        if gone {
            return; // the caller cancelled it: nobody waits for an answer
        }
        // The attempt's edge gives the way back; an attempt already gone
        // still gets its answer, late, on the leg it would have used.
        let edge = self.reqs.att(att).map(|a| a.edge);
        let d = match edge {
            Some(e) => self.net.delay(&self.clients[e as usize].back),
            None => SimDuration::ZERO,
        };
        let status = status_of(reason);
        cross(
            sched,
            d,
            ClientEvent::ResponseReachedPod { att, status }.into(),
        );
    }
}
