//! The timeline's effects on the running world.

use sim_core::sim::Scheduler;

use crate::pods::{Pod, PodState};
use crate::recorder::{Count, Level, RowSink, WorldEvent};
use crate::timeline::{Owner, Param, StepAction};
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
            StepAction::Set(param, node, v) => format!("{} = {v}", self.param_name(param, node)),
            StepAction::KillPod(service, pod) => format!("kill {}", self.pod_name(service, pod)),
            StepAction::RestartPod(service, pod) => {
                format!("restart {}", self.pod_name(service, pod))
            }
            StepAction::Deploy(entry) => {
                let d = self
                    .cfg
                    .timeline
                    .get(entry as usize)
                    .and_then(|e| e.deploy.as_ref());
                let what = match d.map(|d| (d.client.is_some(), d.upstream.is_some())) {
                    Some((true, true)) => "deploy a new client policy and upstream configuration",
                    Some((false, true)) => "deploy a new upstream configuration",
                    _ => "deploy a new client policy",
                };
                // In a graph, where: the call's edge and the dependency.
                let edge = d
                    .and_then(|d| d.call.as_ref())
                    .and_then(|p| self.topo.edges.iter().find(|e| &e.path == p))
                    .map(|e| e.name.clone());
                let dep = d.and_then(|d| d.dependency.clone());
                let wheres: Vec<String> = edge.into_iter().chain(dep).collect();
                match wheres.is_empty() {
                    true => what.to_string(),
                    false => format!("{what} ({})", wheres.join(", ")),
                }
            }
        };
        self.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "timeline",
            detail: format!("[{}] {detail}", step.entry),
        });
        match step.action {
            StepAction::Set(param, node, v) => self.set_param(param, node, v, sched),
            StepAction::KillPod(service, pod) => {
                let pods = &self.services[service as usize].pods;
                if (pod as usize) < pods.len() && pods[pod as usize].state != PodState::Killed {
                    self.take_pod_down(service, pod, PodState::Killed, sched);
                }
            }
            StepAction::RestartPod(service, pod) => {
                if (pod as usize) < self.services[service as usize].pods.len() {
                    self.take_pod_down(service, pod, PodState::Restarting, sched);
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
                // The single tier's one edge and dependency, or the ones
                // the deploy names (checked when the timeline was).
                let edge = match &d.call {
                    Some(path) => self.topo.edges.iter().position(|e| &e.path == path),
                    None => Some(0),
                };
                let dep = match &d.dependency {
                    Some(name) => self.topo.dependencies.iter().position(|n| &n.name == name),
                    None => Some(0),
                };
                if let (Some(client), Some(edge)) = (d.client, edge) {
                    self.deploy(edge as u32, client, now);
                }
                if let (Some(upstream), Some(dep)) = (d.upstream, dep) {
                    self.deploy_upstream(dep as u32, upstream, sched);
                }
            }
        }
        for d in 0..self.dependencies.len() as u32 {
            self.sync_upstream_levels(d, now);
        }
    }

    /// A parameter's name as the timeline writes it.
    fn param_name(&self, param: Param, node: u32) -> String {
        if !self.cfg.is_graph() {
            return param.path().to_string();
        }
        match param.owner() {
            Owner::Service => format!(
                "services.{}.{}",
                self.topo.services[node as usize].name,
                param.field()
            ),
            Owner::Dependency => format!(
                "dependencies.{}.{}",
                self.topo.dependencies[node as usize].name,
                param.field()
            ),
            Owner::Load => param.path().to_string(),
        }
    }

    /// The operator deploys `client`: new attempts, retries and backoffs
    /// follow it from now; budgets, breakers and throttles start fresh.
    /// Attempts in progress keep the timeout they were armed with.
    fn deploy(
        &mut self,
        edge: u32,
        client: crate::config::ClientConfig,
        now: sim_core::time::SimTime,
    ) {
        let c = &mut self.clients[edge as usize];
        let pods = self.services[c.from as usize].pods.len().max(1);
        c.policies = match client.scope {
            crate::config::Scope::Global => vec![crate::client::PolicySet::new(&client)],
            crate::config::Scope::Pod => (0..pods)
                .map(|_| crate::client::PolicySet::new(&client))
                .collect(),
        };
        c.cfg = client;
        // Fresh breakers are closed (other edges' keep their state).
        self.sync_breaker_levels(now);
    }

    /// The operator reconfigures the dependency (validated with the rest of
    /// the timeline, so its latency distribution compiles).
    fn deploy_upstream(
        &mut self,
        dep: u32,
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
        let d = &mut self.dependencies[dep as usize];
        d.upstream.reconfigure(&upstream, latency, sched);
        let background_changed = upstream.background_rps != d.cfg.background_rps;
        d.cfg = upstream;
        if background_changed {
            self.schedule_next_background(dep, sched);
        }
    }

    fn set_param(&mut self, param: Param, node: u32, v: f64, sched: &mut Scheduler<Event>) {
        if param == Param::LoadRate {
            self.load.rate = v;
            self.schedule_next_arrival(sched);
            return;
        }
        if param == Param::ServicePods {
            self.set_pod_count(node, v as u32, sched);
            return;
        }
        let up = &mut self.dependencies[node as usize].upstream;
        let u = &mut up.params;
        match param {
            Param::UpstreamLatencyScale => u.latency_scale = v,
            Param::UpstreamQueueLimit => up.queue_limit = v as u32,
            Param::UpstreamCapacity => {
                u.capacity = v as u32;
                up.fill_slots(sched);
            }
            Param::UpstreamBackgroundRps => {
                u.background_rps = v;
                self.schedule_next_background(node, sched);
            }
            Param::UpstreamErrors500 => u.http_500 = v,
            Param::UpstreamErrors503 => u.http_503 = v,
            Param::UpstreamRateLimitRps => u.rate_limit_rps = Some(v),
            Param::LoadRate | Param::ServicePods => {}
        }
    }

    /// Scales the service to `n` pods: pods past `n` are killed, killed
    /// pods below `n` come back, new pods join with fresh pools.
    fn set_pod_count(&mut self, service: u32, n: u32, sched: &mut Scheduler<Event>) {
        let now = sched.now();
        let s = service as usize;
        let have = self.services[s].pods.len() as u32;
        for pod in 0..n.max(have) {
            if pod >= have {
                let new = Pod::new(pod, &self.topo.services[s], &self.topo, &self.streams);
                self.services[s].pods.push(new);
                self.services[s].lb.add_pod(pod);
                if service == self.topo.entry {
                    self.rec.level_add(Level::PodsUp, now, 1);
                }
                self.schedule_first_probe(service, pod, sched);
            } else if pod < n && self.services[s].pods[pod as usize].state == PodState::Killed {
                self.bring_pod_up(service, pod, now);
            } else if pod >= n && self.services[s].pods[pod as usize].state != PodState::Killed {
                self.take_pod_down(service, pod, PodState::Killed, sched);
            }
        }
    }
}
