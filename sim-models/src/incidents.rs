//! The timeline's effects on the running world.

use sim_core::sim::Scheduler;

use crate::pods::{Pod, PodState};
use crate::recorder::{Count, Level, RowSink, WorldEvent};
use crate::timeline::{Param, StepAction};
use crate::world::{Event, World};

impl<S: RowSink> World<S> {
    pub(crate) fn on_timeline_step(&mut self, index: u32, sched: &mut Scheduler<Event>) {
        let Some(step) = self.steps.get(index as usize).copied() else {
            debug_assert!(false, "timeline step {index} was never scheduled");
            return;
        };
        let now = sched.now();
        self.rec.count(Count::TimelineSteps, 1);
        let detail = match step.action {
            StepAction::Set(param, v) => format!("{} = {v}", param.path()),
            StepAction::KillPod(pod) => format!("kill pod {pod}"),
            StepAction::RestartPod(pod) => format!("restart pod {pod}"),
            StepAction::Deploy(entry) => {
                let d = self
                    .cfg
                    .timeline
                    .get(entry as usize)
                    .and_then(|e| e.deploy.as_ref());
                match d.map(|d| (d.client.is_some(), d.upstream.is_some())) {
                    Some((true, true)) => "deploy a new client policy and upstream configuration",
                    Some((false, true)) => "deploy a new upstream configuration",
                    _ => "deploy a new client policy",
                }
                .to_string()
            }
        };
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "timeline",
            detail: format!("[{}] {detail}", step.entry),
        });
        match step.action {
            StepAction::Set(param, v) => self.set_param(param, v, sched),
            StepAction::KillPod(pod) => {
                if (pod as usize) < self.service.pods.len()
                    && self.service.pods[pod as usize].state != PodState::Killed
                {
                    self.take_pod_down(pod, PodState::Killed, sched);
                }
            }
            StepAction::RestartPod(pod) => {
                if (pod as usize) < self.service.pods.len() {
                    self.take_pod_down(pod, PodState::Restarting, sched);
                }
            }
            StepAction::Deploy(entry) => {
                let deployed = self
                    .cfg
                    .timeline
                    .get(entry as usize)
                    .and_then(|e| e.deploy.clone());
                let Some(d) = deployed else {
                    debug_assert!(false, "a deploy step without its entry");
                    return;
                };
                if let Some(client) = d.client {
                    self.deploy(client, now);
                }
                if let Some(upstream) = d.upstream {
                    self.deploy_upstream(upstream, sched);
                }
            }
        }
        self.sync_upstream_levels(now);
    }

    /// The operator deploys `client`: new attempts, retries and backoffs
    /// follow it from now; budgets, breakers and throttles start fresh.
    /// Attempts in progress keep the timeout they were armed with.
    fn deploy(&mut self, client: crate::config::ClientConfig, now: sim_core::time::SimTime) {
        let pods = self.service.pods.len().max(1);
        self.client.policies = match client.scope {
            crate::config::Scope::Global => vec![crate::client::PolicySet::new(&client)],
            crate::config::Scope::Pod => (0..pods)
                .map(|_| crate::client::PolicySet::new(&client))
                .collect(),
        };
        self.cfg.client = client;
        // Fresh breakers are closed.
        self.rec.level(Level::BreakersOpen, now, 0);
        self.rec.level(Level::BreakersHalfOpen, now, 0);
    }

    /// The operator reconfigures the dependency (validated with the rest of
    /// the timeline, so its latency distribution compiles).
    fn deploy_upstream(
        &mut self,
        upstream: crate::config::UpstreamConfig,
        sched: &mut Scheduler<Event>,
    ) {
        let Ok(latency) = sim_core::dist::Dist::new(&upstream.latency) else {
            debug_assert!(
                false,
                "a deployed latency that was validated does not compile"
            );
            return;
        };
        self.dependency
            .upstream
            .reconfigure(&upstream, latency, sched);
        let background_changed = upstream.background_rps != self.cfg.upstream.background_rps;
        self.cfg.upstream = upstream;
        if background_changed {
            self.schedule_next_background(sched);
        }
    }

    fn set_param(&mut self, param: Param, v: f64, sched: &mut Scheduler<Event>) {
        let u = &mut self.dependency.upstream.params;
        match param {
            Param::LoadRate => {
                self.load.rate = v;
                self.schedule_next_arrival(sched);
            }
            Param::UpstreamLatencyScale => u.latency_scale = v,
            Param::UpstreamQueueLimit => self.dependency.upstream.queue_limit = v as u32,
            Param::UpstreamCapacity => {
                u.capacity = v as u32;
                self.dependency.upstream.fill_slots(sched);
            }
            Param::UpstreamBackgroundRps => {
                u.background_rps = v;
                self.schedule_next_background(sched);
            }
            Param::UpstreamErrors500 => u.http_500 = v,
            Param::UpstreamErrors503 => u.http_503 = v,
            Param::UpstreamRateLimitRps => u.rate_limit_rps = Some(v),
            Param::ServicePods => self.set_pod_count(v as u32, sched),
        }
    }

    /// Scales the service to `n` pods: pods past `n` are killed, killed
    /// pods below `n` come back, new pods join with fresh pools.
    fn set_pod_count(&mut self, n: u32, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let have = self.service.pods.len() as u32;
        for pod in 0..n.max(have) {
            if pod >= have {
                self.service
                    .pods
                    .push(Pod::new(pod, &self.cfg.service, &self.streams));
                self.service.lb.add_pod(pod);
                self.rec.level_add(Level::PodsUp, now, 1);
                self.schedule_first_probe(pod, sched);
            } else if pod < n && self.service.pods[pod as usize].state == PodState::Killed {
                self.bring_pod_up(pod, now);
            } else if pod >= n && self.service.pods[pod as usize].state != PodState::Killed {
                self.take_pod_down(pod, PodState::Killed, sched);
            }
        }
    }
}
