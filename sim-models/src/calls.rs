//! What a request does at its service: its steps of calls (each one call
//! or a parallel group; a group done when enough calls answered), its end
//! on its pod, and its answer to whoever called. A request from another
//! service's attempt starts here too.
//!
//! The attempts of each call (gates, pool, retries, hedges) are the
//! client's (`client.rs`): this file asks the world to begin or cut a
//! call, and hears, through the world, how each call ended.

use rand::RngExt;
use sim_core::time::{SimDuration, SimTime};

use crate::client::ClientEvent;
use crate::context::{Ask, Ctx};
use crate::load::LoadEvent;
use crate::outcome::Reason;
use crate::pods::{PodState, Service, ServiceEvent};
use crate::recorder::{Level, RowSink};
use crate::request::{AttRef, CallList, CallRef, Caller, Phase, ReqRef};
use crate::upstream::Status;

/// What an attempt's caller sees when the service it called answers
/// `reason`: an answer (a degraded one too) is 200; a timeout 504;
/// refusals for overload (a full worker line, no pod, an open breaker, a
/// budget, throttle or bulkhead) 503; a restart a reset connection; other failures
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
        | Reason::BulkheadFull
        | Reason::RateLimited => Status::Error(503),
        Reason::PodRestarted => Status::Reset,
        Reason::ServerError | Reason::ConnectFailure | Reason::PoolTimeout | Reason::Abandoned => {
            Status::Error(500)
        }
    }
}

/// Whether an answer with `reason` counts against its pod: a 5xx or a
/// reset.
fn fails(reason: Reason) -> bool {
    match status_of(reason) {
        Status::Ok | Status::TooManyRequests(_) => false,
        Status::Error(code) => code >= 500,
        Status::Rejected(_) | Status::Reset => true,
    }
}

/// A request the service let go of ([`Service::release`]): what the rest
/// of its end needs once the requests its pod moved on to have started.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Released {
    pub(crate) pod: u32,
    pub(crate) caller: Caller,
    pub(crate) user_done: bool,
    pub(crate) dispatches: u32,
    pub(crate) reached: Option<SimTime>,
}

impl Service {
    /// Runs step `step` of `req`'s calls (steps whose calls all fall out
    /// of their share are skipped): its calls are made and the world asked
    /// to begin them. Past the last step, the request is answered: a
    /// success, or a fallback if an optional call failed.
    pub(crate) fn run_step<S: RowSink>(&mut self, req: ReqRef, step: u32, ctx: &mut Ctx<'_, S>) {
        let q = stale!(ctx.sh.reqs.get(req));
        let (pod, epoch, idempotent, inherited, degraded) =
            (q.pod, q.pod_epoch, q.idempotent, q.deadline, q.degraded);
        let mut step = step;
        let mut calls = CallList::default();
        let (n, need) = loop {
            let Some(&st) = self.steps.get(step as usize) else {
                let reason = match degraded {
                    true => Reason::Fallback,
                    false => Reason::Success,
                };
                ctx.ask(Ask::Complete { req, reason });
                return;
            };
            let mut n = 0;
            for i in st.from..st.to {
                let (e, p) = self.calls[i as usize];
                // Drawn only for a call made on a share of requests, so no
                // other draw moves.
                if p >= 1.0 || self.call_rng.random::<f64>() < p {
                    let call = ctx
                        .sh
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
        let q = stale!(ctx.sh.reqs.get_mut(req));
        q.phase = Phase::Calling;
        q.step = step;
        q.step_done = 0;
        q.step_failed = 0;
        q.step_made = n;
        q.step_need = need;
        // Each call begins in turn; one ended by a sibling before its turn
        // (the step failed or completed) is not begun.
        calls.for_each(|call| ctx.sh.out.push(Ask::BeginCall { call }));
        q.calls = calls;
    }

    /// `call` ended with `reason` (its client closed it): the request
    /// counts it against its step, then moves to the next step, waits for
    /// its other calls, or fails.
    #[inline]
    pub(crate) fn call_ended<S: RowSink>(
        &mut self,
        req: ReqRef,
        call: CallRef,
        edge: u32,
        reason: Reason,
        ctx: &mut Ctx<'_, S>,
    ) {
        let optional = ctx.env.topo.edges[edge as usize].optional;
        let q = stale!(ctx.sh.reqs.get_mut(req));
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
            let (next, degraded) = (q.step + 1, q.degraded);
            for other in rest.iter() {
                ctx.ask(Ask::CutCall {
                    call: other,
                    reason: Reason::Success,
                });
            }
            if next as usize >= self.steps.len() {
                // The last step: the request is answered (run_step's end,
                // without looking for a step that is not there).
                let reason = match degraded {
                    true => Reason::Fallback,
                    false => Reason::Success,
                };
                ctx.ask(Ask::Complete { req, reason });
                return;
            }
            self.run_step(req, next, ctx);
        } else if q.step_made - q.step_failed < q.step_need {
            ctx.ask(Ask::Complete { req, reason });
        }
    }

    /// The service lets go of `req` (its calls already cut): its timers,
    /// its place in a line, its core and its worker (the next in line
    /// takes them). `None` if it had already let go. The world then runs
    /// what the freed core and worker started, and [`Service::released`].
    #[inline]
    pub(crate) fn release<S: RowSink>(
        &mut self,
        req: ReqRef,
        ctx: &mut Ctx<'_, S>,
    ) -> Option<Released> {
        let q = ctx.sh.reqs.get_mut(req)?;
        for t in [q.work_timer.take(), q.deadline_timer.take()]
            .into_iter()
            .flatten()
        {
            ctx.sched.cancel(t);
        }
        let was_in_line = q.phase == Phase::WaitingWorker;
        let was_waiting_core = q.phase == Phase::WaitingCore;
        q.phase = Phase::Finished;
        q.service_done = true;
        let (pod, epoch, had_worker, had_core) = (q.pod, q.pod_epoch, q.has_worker, q.has_core);
        let released = Released {
            pod,
            caller: q.caller,
            user_done: q.user_done,
            dispatches: q.dispatches,
            reached: q.reached,
        };
        q.has_worker = false;
        q.has_core = false;
        let same_life = ctx.sh.links.epoch(self.index, pod) == epoch;
        let p = &mut self.pods[pod as usize];
        // A request leaving its pod's worker line early (a restart empties
        // the line itself, under a new epoch).
        if was_in_line && same_life {
            p.worker_queue.left();
        }
        if was_waiting_core && same_life {
            p.core_queue.left();
        }
        let up = same_life && p.state == PodState::Up;
        if had_core && up {
            self.free_core(pod, ctx);
        }
        if had_worker && up {
            self.free_worker(pod, ctx);
        }
        Some(released)
    }

    /// The rest of letting go of request `req` that ended with `reason`:
    /// the balancer's count, the outlier detector's judgement, the levels,
    /// the node's figures.
    #[inline]
    pub(crate) fn released<S: RowSink>(
        &mut self,
        req: ReqRef,
        r: &Released,
        reason: Reason,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        self.lb.outstanding_changed(r.pod, -1);
        if self.outlier.is_some() {
            self.judge_answer(req, r, reason, ctx);
        }
        if self.index == ctx.env.topo.entry && r.caller == Caller::User {
            ctx.sh.rec.level_add(Level::ServiceInFlight, now, -1);
        }
        ctx.sh.rec.node_service_done(
            self.index,
            reason,
            r.reached.map(|at| now.saturating_since(at)),
            now,
        );
    }

    /// The outlier detector judges the answer a pod gave, as the caller
    /// waiting for it sees it: a 5xx or a reset fails (a gateway that
    /// gave up first saw a 504). An attempt no longer waiting for this
    /// request was judged when it timed out, or not at all when its call
    /// cut it short (Envoy records nothing for a hedge it cancelled).
    #[cold]
    fn judge_answer<S: RowSink>(
        &mut self,
        req: ReqRef,
        r: &Released,
        reason: Reason,
        ctx: &mut Ctx<'_, S>,
    ) {
        let failed = match r.caller {
            Caller::User => r.user_done || fails(reason),
            Caller::Attempt { att, .. } => {
                let waited = ctx.sh.reqs.att(att).is_some_and(|a| a.child == Some(req));
                if !waited {
                    return;
                }
                fails(reason)
            }
        };
        self.judge(r.pod, failed, ctx);
    }

    /// A caller's attempt waiting for `req` timed out: its pod is judged
    /// to have failed it (Envoy's `LocalOriginTimeout`, a 504), unless the
    /// request already left it.
    #[cold]
    pub(crate) fn caller_timed_out<S: RowSink>(&mut self, req: ReqRef, ctx: &mut Ctx<'_, S>) {
        if self.outlier.is_none() {
            return;
        }
        let Some(q) = ctx.sh.reqs.get(req) else {
            return;
        };
        if q.service_done || q.service != self.index {
            return;
        }
        let pod = q.pod;
        self.judge(pod, true, ctx);
    }

    /// Attempt `att` on `edge` arrives at this service after `delay`,
    /// carrying its caller's propagated `deadline`: a request here, which
    /// the balancer places (or answers `unavailable` when no pod is in
    /// rotation).
    pub(crate) fn receive<S: RowSink>(
        &mut self,
        att: AttRef,
        edge: u32,
        delay: SimDuration,
        deadline: Option<SimTime>,
        ctx: &mut Ctx<'_, S>,
    ) {
        let now = ctx.now();
        let a = stale!(ctx.sh.reqs.att(att));
        let idempotent = ctx.sh.reqs.get(a.req).is_none_or(|q| q.idempotent);
        if ctx.sh.reqs.live() as u64 >= ctx.env.limits.max_in_flight {
            let limit = ctx.env.limits.max_in_flight;
            ctx.limit_reached(|| {
                format!("{limit} requests in flight across the services: the limit limits.max_in_flight was reached")
            });
            return;
        }
        let child = ctx.sh.reqs.create(
            now,
            self.index,
            Caller::Attempt { att, edge },
            None,
            idempotent,
        );
        stale!(ctx.sh.reqs.att_mut(att)).child = Some(child);
        if let Some(d) = deadline {
            // The caller's deadline travels with the request: the service
            // stops working on it then (gRPC's propagated deadline).
            let timer = ctx.sched.schedule_at(
                d.max(now),
                ServiceEvent::RequestDeadlinePassed { req: child }.into(),
            );
            let q = stale!(ctx.sh.reqs.get_mut(child));
            q.deadline = Some(d);
            q.deadline_timer = timer.ok();
        }
        let Some(pod) = self.lb.pick() else {
            if let Some(q) = ctx.sh.reqs.get_mut(child) {
                q.service_done = true;
                q.phase = Phase::Finished;
            }
            ctx.sh
                .rec
                .node_service_done(self.index, Reason::Unavailable, None, now);
            self.answer_caller(child, att, edge, Reason::Unavailable, ctx);
            return;
        };
        let epoch = ctx.sh.links.epoch(self.index, pod);
        self.lb.outstanding_changed(pod, 1);
        let q = stale!(ctx.sh.reqs.get_mut(child));
        q.pod = pod;
        q.pod_epoch = epoch;
        q.dispatches = 1;
        ctx.cross(
            delay,
            ServiceEvent::RequestReachedPod {
                service: self.index,
                req: child,
                dispatch: 1,
            }
            .into(),
        );
    }

    /// The service answered request `req`, which attempt `att` on `edge`
    /// sent: the answer crosses back to the attempt's pod (a gone attempt
    /// counts it late there), and the request is forgotten.
    #[inline]
    pub(crate) fn answer_caller<S: RowSink>(
        &mut self,
        req: ReqRef,
        att: AttRef,
        edge: u32,
        reason: Reason,
        ctx: &mut Ctx<'_, S>,
    ) {
        let gone = ctx.sh.reqs.get(req).is_some_and(|q| q.caller_gone);
        ctx.sh.reqs.release_if_done(req);
        if gone {
            return; // the caller cancelled it: nobody waits for an answer
        }
        // An attempt already gone still gets its answer, late, with no
        // delay drawn for it.
        let d = match ctx.sh.reqs.att(att) {
            Some(_) => ctx.sh.net.back(edge),
            None => SimDuration::ZERO,
        };
        let status = status_of(reason);
        ctx.cross(
            d,
            ClientEvent::ResponseReachedPod { edge, att, status }.into(),
        );
    }

    /// The entry service answers the user's request `req` with `reason`,
    /// across the network (a restarted pod's connections reset: the
    /// gateway learns at once).
    #[inline]
    pub(crate) fn answer_user<S: RowSink>(
        &self,
        req: ReqRef,
        reason: Reason,
        ctx: &mut Ctx<'_, S>,
    ) {
        let d = match reason {
            Reason::PodRestarted => SimDuration::ZERO,
            _ => ctx.sh.net.pod_to_gateway(),
        };
        ctx.cross(d, LoadEvent::ResponseReachedUser { req, reason }.into());
    }
}
