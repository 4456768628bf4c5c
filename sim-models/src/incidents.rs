//! The timeline's effects on the running world: each step routed to the
//! part it changes (the load's rate, a service's pods, a client's policy,
//! a dependency's parameters or configuration).

use sim_core::sim::Scheduler;

use crate::context::Ctx;
use crate::pods::PodState;
use crate::recorder::{Count, RowSink, WorldEvent};
use crate::timeline::{Deploy, Owner, Param, StepAction};
use crate::world::{Event, Parts, World};

impl<S: RowSink> World<S> {
    pub(crate) fn on_timeline_step(&mut self, index: u32, sched: &mut Scheduler<Event>) {
        let Some(step) = self.steps.get(index as usize).copied() else {
            debug_assert!(false, "timeline step {index} was never scheduled");
            return;
        };
        let now = sched.now();
        self.sh.rec.count(Count::TimelineSteps, 1);
        let detail = self.describe(step.action);
        self.sh.rec.sink_mut().event(WorldEvent {
            at: now,
            kind: "timeline",
            detail: format!("[{}] {detail}", step.entry),
        });
        let cx = &mut self.sh.ctx(sched, &self.env);
        let parts = &mut self.parts;
        match step.action {
            StepAction::Set(param, node, v) => parts.set_param(param, node, v, cx),
            // A pod the autoscaler removed, or is draining, is no longer
            // the timeline's to act on.
            StepAction::KillPod(service, pod)
            | StepAction::RestartPod(service, pod)
            | StepAction::PodFault(service, pod, _)
                if parts.services[service as usize].is_leaving(pod) => {}
            StepAction::KillPod(service, pod) => {
                let pods = &parts.services[service as usize].pods;
                if (pod as usize) < pods.len() && pods[pod as usize].state != PodState::Killed {
                    parts.take_pod_down(service, pod, PodState::Killed, cx);
                }
            }
            StepAction::RestartPod(service, pod) => {
                if pod < parts.services[service as usize].pod_count() {
                    parts.take_pod_down(service, pod, PodState::Restarting, cx);
                }
            }
            StepAction::PodFault(service, pod, errors) => {
                parts.services[service as usize].set_pod_errors(pod, errors);
            }
            StepAction::Deploy(entry) => {
                let deployed = self
                    .cfg
                    .timeline
                    .get(entry as usize)
                    .and_then(|e| e.deploy.clone());
                match deployed {
                    Some(d) => parts.deploy(d, cx),
                    None => debug_assert!(false, "a deploy step without its entry"),
                }
            }
        }
        for d in 0..parts.dependencies.len() {
            parts.with(cx, |p, cx| p.dependencies[d].sync_levels(cx));
        }
        for s in 0..parts.services.len() {
            parts.with(cx, |p, cx| p.services[s].sync_replicas(cx));
        }
    }

    /// What a step does, in the events table's words.
    fn describe(&self, action: StepAction) -> String {
        let topo = &self.env.topo;
        match action {
            StepAction::Set(param, node, v) => format!("{} = {v}", self.param_name(param, node)),
            StepAction::KillPod(service, pod) => {
                format!("kill {}", self.env.pod_name(service, pod))
            }
            StepAction::RestartPod(service, pod) => {
                format!("restart {}", self.env.pod_name(service, pod))
            }
            StepAction::PodFault(service, pod, errors) => {
                let pod = self.env.pod_name(service, pod);
                if errors == 0.0 {
                    return format!("{pod} is healthy again");
                }
                // Whole tenths of a per cent: 0.3 is 30 %, not 30.000000000000004.
                let share = (errors * 1000.0).round() / 10.0;
                format!("{pod} answers {share} % of requests 500")
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
                    .and_then(|p| topo.edges.iter().find(|e| &e.path == p))
                    .map(|e| e.name.clone());
                let dep = d.and_then(|d| d.dependency.clone());
                let wheres: Vec<String> = edge.into_iter().chain(dep).collect();
                match wheres.is_empty() {
                    true => what.to_string(),
                    false => format!("{what} ({})", wheres.join(", ")),
                }
            }
        }
    }

    /// A parameter's name as the timeline writes it.
    fn param_name(&self, param: Param, node: u32) -> String {
        if !self.env.graph {
            return param.path().to_string();
        }
        let topo = &self.env.topo;
        match param.owner() {
            Owner::Service => format!(
                "services.{}.{}",
                topo.services[node as usize].name,
                param.field()
            ),
            Owner::Dependency => format!(
                "dependencies.{}.{}",
                topo.dependencies[node as usize].name,
                param.field()
            ),
            Owner::Load => param.path().to_string(),
        }
    }
}

/// The timeline's changes, routed to the parts they change.
impl Parts {
    /// The operator deploys the timeline entry's client policy (to its
    /// call's edge: the single tier's one) and upstream configuration (to
    /// its dependency: the single tier's one).
    fn deploy<S: RowSink>(&mut self, d: Deploy, cx: &mut Ctx<'_, S>) {
        // The ones the deploy names (checked when the timeline was).
        let topo = &cx.env.topo;
        let edge = match &d.call {
            Some(path) => topo.edges.iter().position(|e| &e.path == path),
            None => Some(0),
        };
        let dep = match &d.dependency {
            Some(name) => topo.dependencies.iter().position(|n| &n.name == name),
            None => Some(0),
        };
        if let (Some(client), Some(e)) = (d.client, edge) {
            let from = self.clients[e].from as usize;
            let pods = self.services[from].pod_count().max(1);
            self.with(cx, |p, cx| p.clients[e].deploy(client, pods, cx));
        }
        if let (Some(upstream), Some(dep)) = (d.upstream, dep) {
            cx.sh.links.set_limit(dep as u32, upstream.max_connections);
            self.with(cx, |p, cx| p.dependencies[dep].deploy(upstream, cx));
        }
    }

    fn set_param<S: RowSink>(&mut self, param: Param, node: u32, v: f64, cx: &mut Ctx<'_, S>) {
        match param {
            Param::LoadRate => self.with(cx, |p, cx| p.load.set_rate(v, cx)),
            Param::ServicePods => self.set_pod_count(node, v as u32, cx),
            _ => self.with(cx, |p, cx| {
                p.dependencies[node as usize].set_param(param, v, cx)
            }),
        }
    }

    /// Scales the service to `n` pods: pods past `n` are killed, killed
    /// pods below `n` come back, new pods join with fresh pools.
    fn set_pod_count<S: RowSink>(&mut self, service: u32, n: u32, cx: &mut Ctx<'_, S>) {
        let s = service as usize;
        let have = self.services[s].pod_count();
        for pod in 0..n.max(have) {
            let state = self.services[s].pods.get(pod as usize).map(|p| p.state);
            match state {
                None => self.with(cx, |p, cx| p.services[s].add_pod(cx)),
                Some(PodState::Killed) if pod < n => {
                    self.with(cx, |p, cx| p.services[s].bring_pod_up(pod, cx))
                }
                Some(st) if pod >= n && st != PodState::Killed => {
                    self.take_pod_down(service, pod, PodState::Killed, cx)
                }
                Some(_) => {}
            }
        }
    }
}
