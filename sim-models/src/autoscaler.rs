//! A horizontal pod autoscaler: Kubernetes' `HorizontalPodAutoscaler`
//! (`autoscaling/v2`), as its controller computes it.
//!
//! Every `sync_period` (the controller's 15 s) the autoscaler reads its
//! metrics per pod, averaged over the period (samples taken fifteen times
//! a period, as the metrics pipeline's rate over its window): the busy
//! share of its cores (`cpu`, Kubernetes' CPU utilization against the
//! pod's request), of its workers (`workers`), the requests it holds
//! (`in_flight`) or the requests a second that reach it (`requests`,
//! retries included: the `http_requests_per_second` a Prometheus adapter
//! serves). The rules are the controller's own (`replica_calculator.go`,
//! `horizontal.go`), read in its source:
//!
//! - with several metrics, each proposes a count and the largest wins
//!   (`computeReplicasForMetrics`): a scale-down needs every metric to
//!   call for it;
//! - the usage ratio is the ready pods' usage over their capacity, over
//!   the target; within `tolerance` (0.1) of 1 nothing changes, else the
//!   recommendation is `ceil(ratio × ready pods)`;
//! - pods are grouped as `groupPods` groups them: a pod the autoscaler
//!   added and still starting is unready (Kubernetes' `Pending`); one
//!   without a sample (its container restarting, or just in) is missing;
//!   on `cpu` only, a pod failing readiness since within
//!   `initial_readiness_delay` (30 s) of its creation (never ready), or
//!   within `cpu_initialization_period` (5 min) of its creation one not
//!   ready or ready for less than the sample window, is unready too; any
//!   other pod counts with its samples, ready or not (a pod failing
//!   readiness under overload still reads busy). On a scale-up unready
//!   pods count as idle and the ratio is taken again; missing pods count
//!   as idle on a scale-up and at their capacity (or at the target, for
//!   a per-pod metric) on a scale-down; if that changes the direction,
//!   or lands within the tolerance, nothing changes;
//! - recommendations are stabilized: a scale-up goes only to the lowest
//!   recommendation of its window (`scale_up.stabilization_window`, 0 s),
//!   a scale-down only to the highest of its window (300 s);
//! - the rate is limited by policies over their periods, counting the
//!   changes made within the period: up by at most 4 pods or 100 % each
//!   15 s (the larger: `select: max`), down by at most 100 % each 15 s;
//! - `min_replicas..=max_replicas` bound it all.
//!
//! A pod the autoscaler adds starts out of rotation and joins after
//! `startup` (scheduling, image, the runtime's warm-up and the first
//! readiness probe). A pod it removes leaves rotation at once and drains:
//! it finishes what it holds and is gone when it holds nothing, or after
//! `termination_grace`, when whatever is left fails (`pod_restarted`, as
//! a SIGKILL); with a `pre_stop` hook it first serves what still reaches
//! it for that long (a balancer told late still sends it requests).
//! Its server then gets SIGTERM and, by `shutdown`, goes on serving what
//! reaches it until it holds nothing (`drain`), refuses it (`close`), or
//! exits failing what it holds (`exit`).
//! Removed pods are those out of rotation first, then the newest (the
//! highest index), as a ReplicaSet ranks them; their places are reused
//! by later scale-ups.

use serde::{Deserialize, Serialize};
use sim_core::time::{SimDuration, SimTime};

use crate::config::{Problems, secs};

/// What a removed pod's server does on SIGTERM: at its removal, or when
/// its preStop hook ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shutdown {
    /// Goes on serving whatever reaches it and exits once it holds
    /// nothing: a server whose callers' keep-alive connections stay open
    /// (Node's `server.close()`), or one that waits to be idle.
    #[default]
    Drain,
    /// Closes its listener: refuses whatever reaches it from then on
    /// (`pod_restarted`, the connection refused or reset) and exits once
    /// what it holds is done (Go's `Server.Shutdown`, Spring Boot's
    /// graceful shutdown).
    Close,
    /// Exits at once: what it holds fails (`pod_restarted`), as a server
    /// with no SIGTERM handler does.
    Exit,
}

impl Shutdown {
    /// The default, left out of the resolved configuration.
    fn is_default(&self) -> bool {
        *self == Shutdown::Drain
    }
}

/// What the autoscaler measures on each pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The share of its cores busy with requests' own work (the service
    /// needs `cores` and `work`): Kubernetes' CPU utilization.
    #[default]
    Cpu = 0,
    /// The share of its workers busy (the service needs `workers`).
    Workers = 1,
    /// Requests it holds (on a worker or waiting for one): a per-pod
    /// custom metric with an average-value target.
    InFlight = 2,
    /// Requests a second reaching it, whatever becomes of them (retries
    /// and requests it fails at once count): a per-pod custom metric with
    /// an average-value target.
    Requests = 3,
}

/// How many metrics there are (a pod samples each of them).
pub const METRICS: usize = 4;
const _: () = assert!(
    Metric::Requests as usize + 1 == METRICS,
    "METRICS counts every metric"
);

impl Metric {
    /// Whether its target is a value a pod (an average-value target), not
    /// a share of the pod's capacity.
    pub fn per_pod(self) -> bool {
        matches!(self, Metric::InFlight | Metric::Requests)
    }

    /// Its name as written.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Cpu => "cpu",
            Metric::Workers => "workers",
            Metric::InFlight => "in_flight",
            Metric::Requests => "requests",
        }
    }
}

/// One metric the autoscaler follows and its target (an entry of
/// `metrics:`; `metric:` and `target:` write a single one).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricTarget {
    /// What is measured.
    pub metric: Metric,
    /// Per cent of cores or workers busy (default 80), or the value a
    /// pod for `in_flight` and `requests` (required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
}

impl MetricTarget {
    /// The target in the metric's unit: a share of capacity (0.8), or
    /// requests (a second) a pod.
    pub fn value(&self) -> f64 {
        match (self.metric.per_pod(), self.target) {
            (true, t) => t.unwrap_or(1.0),
            (false, t) => t.unwrap_or(80.0) / 100.0,
        }
    }

    fn describe(&self) -> String {
        let v = self.value();
        match self.metric {
            Metric::Cpu => format!("cpu at {} % of its cores", v * 100.0),
            Metric::Workers => format!("workers at {} % busy", v * 100.0),
            Metric::InFlight => format!("{v} requests in flight a pod"),
            Metric::Requests => format!("{v} requests a second a pod"),
        }
    }

    fn check(&self, at: &str, cores: bool, workers: bool, p: &mut Problems) {
        match self.metric {
            Metric::Cpu if !cores => p.add(
                &format!("{at}.metric"),
                "cpu needs the service's `cores` (and its `work`) to measure",
            ),
            Metric::Workers if !workers => p.add(
                &format!("{at}.metric"),
                "workers needs the service's `workers` to measure",
            ),
            Metric::InFlight if self.target.is_none() => p.add(
                &format!("{at}.target"),
                "must be given for in_flight: the requests a pod should hold on average",
            ),
            Metric::Requests if self.target.is_none() => p.add(
                &format!("{at}.target"),
                "must be given for requests: the requests a second a pod should take on average",
            ),
            _ => {}
        }
        if let Some(t) = self.target
            && !(t.is_finite() && t > 0.0 && t <= 1e9)
        {
            p.add(
                &format!("{at}.target"),
                format!("must be a number above 0 (at most 10^9), found {t}"),
            );
        }
    }
}

/// How one direction of scaling is limited (Kubernetes' `HPAScalingRules`;
/// unset fields take that direction's defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScalingRules {
    /// Recommendations of this long ago still hold the change back
    /// (default: up `0s`, down `300s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stabilization_window: Option<SimDuration>,
    /// Which policy's limit applies (default `max`: the one allowing the
    /// largest change).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub select: Option<Select>,
    /// The limits (default: up 4 pods and 100 % per 15 s; down 100 % per
    /// 15 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<ScalingPolicy>>,
}

/// Which scaling policy applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Select {
    /// The policy allowing the largest change.
    Max,
    /// The policy allowing the smallest change.
    Min,
    /// No scaling in this direction.
    Disabled,
}

/// One limit on the change over a period.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalingPolicy {
    /// `pods` (a count) or `percent` (of the pods at the period's start).
    #[serde(rename = "type")]
    pub kind: PolicyKind,
    /// How many pods, or what per cent.
    pub value: u32,
    /// The period the changes are counted over.
    pub period: SimDuration,
}

/// What a policy's value counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// Pods.
    Pods,
    /// Per cent of the pods at the period's start.
    Percent,
}

/// A service's autoscaler as configured (`autoscaling:` on a service).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AutoscalingSpec {
    /// Fewest pods (default 1).
    pub min_replicas: u32,
    /// Most pods (required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<u32>,
    /// What is measured (default `cpu`), when one metric is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<Metric>,
    /// The target: per cent of cores or workers busy (default 80), or
    /// the value a pod for `in_flight` and `requests` (required there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// Several metrics, each with its target, in place of `metric` and
    /// `target`: the largest count any of them calls for is taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<MetricTarget>>,
    /// No change while the usage ratio is within this of 1 (default 0.1).
    pub tolerance: f64,
    /// Time between the controller's passes (default `15s`).
    pub sync_period: SimDuration,
    /// From a pod's creation to its joining rotation (default `30s`).
    pub startup: SimDuration,
    /// For `cpu`, how long after a pod's creation a reading taken while
    /// it was not ready is left out (the controller's
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`, default
    /// `5m`).
    pub cpu_initialization_period: SimDuration,
    /// For `cpu`, past that period: a pod failing readiness since within
    /// this of its creation has never been ready, and its reading is left
    /// out (the controller's
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`, default
    /// `30s`).
    pub initial_readiness_delay: SimDuration,
    /// Longest a removed pod drains before what it holds fails (default
    /// `30s`, Kubernetes' `terminationGracePeriodSeconds`).
    pub termination_grace: SimDuration,
    /// A removed pod's preStop hook (a `sleep`): for this long it goes on
    /// serving whatever still reaches it, and only then drains and may
    /// terminate, within `termination_grace` counted from its removal
    /// (default: none, it drains at once). The usual cure for a balancer
    /// that hears late (the service's `endpoint_lag`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<SimDuration>,
    /// What a removed pod's server does on SIGTERM, sent at its removal
    /// or when its `pre_stop` hook ends (default `drain`; `close`,
    /// `exit`).
    #[serde(skip_serializing_if = "Shutdown::is_default")]
    pub shutdown: Shutdown,
    /// Scaling up.
    pub scale_up: ScalingRules,
    /// Scaling down.
    pub scale_down: ScalingRules,
}

impl Default for AutoscalingSpec {
    fn default() -> Self {
        AutoscalingSpec {
            min_replicas: 1,
            max_replicas: None,
            metric: None,
            target: None,
            metrics: None,
            tolerance: 0.1,
            sync_period: secs(15),
            startup: secs(30),
            cpu_initialization_period: secs(300),
            initial_readiness_delay: secs(30),
            termination_grace: secs(30),
            pre_stop: None,
            shutdown: Shutdown::Drain,
            scale_up: ScalingRules::default(),
            scale_down: ScalingRules::default(),
        }
    }
}

/// Kubernetes' default policies: up 4 pods or 100 % per 15 s, down 100 %
/// per 15 s.
fn default_policies(up: bool) -> Vec<ScalingPolicy> {
    let percent = ScalingPolicy {
        kind: PolicyKind::Percent,
        value: 100,
        period: secs(15),
    };
    if up {
        vec![
            ScalingPolicy {
                kind: PolicyKind::Pods,
                value: 4,
                period: secs(15),
            },
            percent,
        ]
    } else {
        vec![percent]
    }
}

impl AutoscalingSpec {
    /// The most pods.
    pub fn max(&self) -> u32 {
        self.max_replicas.unwrap_or(self.min_replicas)
    }

    /// The metrics followed, with their targets: `metrics`, or the one
    /// `metric` and `target` write.
    pub fn targets(&self) -> Vec<MetricTarget> {
        match &self.metrics {
            Some(m) => m.clone(),
            None => vec![MetricTarget {
                metric: self.metric.unwrap_or_default(),
                target: self.target,
            }],
        }
    }

    /// The places it may fill: twice `max_replicas` (pods it removes
    /// drain while the ones it adds start).
    pub fn places(&self) -> u32 {
        self.max().saturating_mul(2)
    }

    fn rules(&self, up: bool) -> &ScalingRules {
        if up { &self.scale_up } else { &self.scale_down }
    }

    fn window(&self, up: bool) -> SimDuration {
        self.rules(up).stabilization_window.unwrap_or(if up {
            SimDuration::ZERO
        } else {
            secs(300)
        })
    }

    fn select(&self, up: bool) -> Select {
        self.rules(up).select.unwrap_or(Select::Max)
    }

    /// The direction's policies, as written or Kubernetes' defaults.
    fn policies(&self, up: bool) -> std::borrow::Cow<'_, [ScalingPolicy]> {
        match &self.rules(up).policies {
            Some(p) => std::borrow::Cow::Borrowed(p.as_slice()),
            None => std::borrow::Cow::Owned(default_policies(up)),
        }
    }

    /// The autoscaler in one line, for `explain`.
    pub fn describe(&self) -> String {
        let targets = self.targets();
        let each: Vec<String> = targets.iter().map(MetricTarget::describe).collect();
        let target = match each.len() {
            1 => format!("{} (within {} of it: no change)", each[0], self.tolerance),
            _ => format!(
                "{}, the most pods any calls for (each within {} of its target: no change)",
                each.join(" and "),
                self.tolerance
            ),
        };
        let rules = |up: bool| {
            let select = self.select(up);
            if select == Select::Disabled {
                return "never".to_string();
            }
            let each: Vec<String> = self
                .policies(up)
                .iter()
                .map(|p| match p.kind {
                    PolicyKind::Pods => format!("{} pods per {}", p.value, p.period),
                    PolicyKind::Percent => format!("{} % per {}", p.value, p.period),
                })
                .collect();
            let which = match (select, each.len()) {
                (_, 1) => "",
                (Select::Max, _) => "the larger of ",
                _ => "the smaller of ",
            };
            let window = self.window(up);
            let held = match (window.is_zero(), up) {
                (true, _) => String::new(),
                (false, true) => format!(", to the lowest recommendation of {window}"),
                (false, false) => format!(", to the highest recommendation of {window}"),
            };
            format!("{which}{}{held}", each.join(", "))
        };
        let hook = match self.pre_stop {
            Some(d) => format!("serve for a preStop of {d}, then "),
            None => String::new(),
        };
        let grace = self.termination_grace;
        let removal = match self.shutdown {
            Shutdown::Drain if hook.is_empty() => format!("drain for up to {grace}"),
            Shutdown::Drain => format!("{hook}drain, for up to {grace} in all"),
            Shutdown::Close => {
                format!("{hook}refuse new requests and drain, for up to {grace} in all")
            }
            Shutdown::Exit => format!("{hook}exit, failing what they hold (within {grace})"),
        };
        format!(
            "autoscaled between {} and {} pods on {target}, a pass every {}; added pods join after {}, removed ones {removal}; up {}; down {}",
            self.min_replicas,
            self.max(),
            self.sync_period,
            self.startup,
            rules(true),
            rules(false)
        )
    }

    /// Checks the fields, `at` the section's path; `cores` and `workers`
    /// tell what the service has to measure.
    pub(crate) fn check(&self, at: &str, cores: bool, workers: bool, p: &mut Problems) {
        match self.max_replicas {
            None => p.add(
                &format!("{at}.max_replicas"),
                "must be given: the most pods the autoscaler may run",
            ),
            Some(m) if m < self.min_replicas.max(1) => p.add(
                &format!("{at}.max_replicas"),
                format!(
                    "must be at least min_replicas ({}) and 1, found {m}",
                    self.min_replicas
                ),
            ),
            Some(_) => {}
        }
        if self.min_replicas == 0 {
            p.add(
                &format!("{at}.min_replicas"),
                "must be at least 1 (Kubernetes scales to zero only behind a feature gate)",
            );
        }
        match &self.metrics {
            None => self.targets()[0].check(at, cores, workers, p),
            Some(_) if self.metric.is_some() || self.target.is_some() => p.add(
                &format!("{at}.metrics"),
                "give either `metric` (and `target`) or `metrics`, not both",
            ),
            Some(m) if m.is_empty() => p.add(
                &format!("{at}.metrics"),
                "must hold at least one metric (or leave it out for cpu at 80 %)",
            ),
            Some(m) => {
                for (i, t) in m.iter().enumerate() {
                    let here = format!("{at}.metrics[{i}]");
                    t.check(&here, cores, workers, p);
                    if m[..i].iter().any(|o| o.metric == t.metric) {
                        p.add(
                            &format!("{here}.metric"),
                            format!("{} is listed twice", t.metric.name()),
                        );
                    }
                }
            }
        }
        if !(self.tolerance.is_finite() && (0.0..1.0).contains(&self.tolerance)) {
            p.add(
                &format!("{at}.tolerance"),
                format!("must be at least 0 and below 1, found {}", self.tolerance),
            );
        }
        p.positive(&format!("{at}.sync_period"), self.sync_period);
        if self.sync_period.as_nanos() < 15 {
            p.add(
                &format!("{at}.sync_period"),
                "must be at least 15ns (the metric is sampled fifteen times a period)",
            );
        }
        for (name, r) in [
            ("scale_up", &self.scale_up),
            ("scale_down", &self.scale_down),
        ] {
            if let Some(ps) = &r.policies {
                if ps.is_empty() && r.select != Some(Select::Disabled) {
                    p.add(
                        &format!("{at}.{name}.policies"),
                        "must hold at least one policy (or set select: disabled)",
                    );
                }
                for (i, pol) in ps.iter().enumerate() {
                    p.positive(&format!("{at}.{name}.policies[{i}].period"), pol.period);
                    if pol.value == 0 {
                        p.add(
                            &format!("{at}.{name}.policies[{i}].value"),
                            "must be at least 1",
                        );
                    }
                }
            }
        }
    }
}

/// What the autoscaler knows of one pod at a pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PodReading {
    /// With a sample, counted (in rotation or failing readiness).
    Ready {
        /// Its usage averaged over the period: cores or workers busy, or
        /// requests held.
        usage: f64,
        /// Its cores or workers (1 for `in_flight`).
        capacity: f64,
    },
    /// Without a sample: its container restarting, or just in rotation.
    Missing {
        /// Its cores or workers (1 for `in_flight`).
        capacity: f64,
    },
    /// Still starting; for `cpu`, also not ready (and never been, or
    /// within its initialization period) or only just ready.
    Unready {
        /// Its cores or workers (1 for `in_flight`).
        capacity: f64,
    },
}

/// What the controller's `groupPods` knows of one replica at a pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodStatus {
    /// Added by the autoscaler and not yet started (Kubernetes'
    /// `Pending`).
    pub pending: bool,
    /// Its readiness condition.
    pub ready: bool,
    /// When it was created; `None` before the run (long past any
    /// initialization period or delay).
    pub created: Option<SimTime>,
    /// When its readiness condition last changed.
    pub ready_changed: SimTime,
}

/// A change the autoscaler made, for its rate limits.
#[derive(Clone, Copy, Debug)]
struct ScaleEvent {
    at: SimTime,
    change: u32,
}

/// The controller's memory for one service: its recommendations and the
/// changes it made, each kept only as long as a window or a period needs
/// them (so it holds a bounded number, whatever the run's length).
#[derive(Clone, Debug)]
pub struct Autoscaler {
    spec: AutoscalingSpec,
    targets: Vec<MetricTarget>,
    recommendations: Vec<(SimTime, u32)>,
    ups: Vec<ScaleEvent>,
    downs: Vec<ScaleEvent>,
}

impl Autoscaler {
    /// An autoscaler with no history.
    pub fn new(spec: &AutoscalingSpec) -> Self {
        Autoscaler {
            spec: spec.clone(),
            targets: spec.targets(),
            recommendations: Vec::new(),
            ups: Vec::new(),
            downs: Vec::new(),
        }
    }

    /// Its configuration.
    pub fn spec(&self) -> &AutoscalingSpec {
        &self.spec
    }

    /// The metrics it follows, in the order [`Autoscaler::pass`] takes
    /// their readings.
    pub fn targets(&self) -> &[MetricTarget] {
        &self.targets
    }

    /// How the controller takes a replica's reading of `metric` at `now`
    /// (`groupPods`): `usage`, its mean over the samples since the last
    /// pass, `None` without one (its container restarting, or just in
    /// rotation).
    pub fn reading(
        &self,
        metric: Metric,
        now: SimTime,
        pod: &PodStatus,
        usage: Option<f64>,
        capacity: f64,
    ) -> PodReading {
        if pod.pending {
            return PodReading::Unready { capacity };
        }
        let Some(usage) = usage else {
            return PodReading::Missing { capacity };
        };
        if metric == Metric::Cpu {
            let initializing = pod
                .created
                .is_some_and(|c| now < c.saturating_add(self.spec.cpu_initialization_period));
            let unready = if initializing {
                // Not ready, or ready for less than the sample window (a
                // pass's samples reach back one sync period).
                !pod.ready || now < pod.ready_changed.saturating_add(self.spec.sync_period)
            } else {
                // Not ready, its condition last changed within the delay
                // of its creation: never ready.
                !pod.ready
                    && pod.created.is_some_and(|c| {
                        pod.ready_changed < c.saturating_add(self.spec.initial_readiness_delay)
                    })
            };
            if unready {
                return PodReading::Unready { capacity };
            }
        }
        PodReading::Ready { usage, capacity }
    }

    /// The replica count its `which`th metric calls for
    /// (`replica_calculator.go`'s `GetResourceReplicas` and
    /// `calcPlainMetricReplicas`), or `None` when no pod in rotation has
    /// a reading (the controller then leaves the count alone).
    pub fn metric_replicas(&self, which: usize, current: u32, pods: &[PodReading]) -> Option<u32> {
        let m = self.targets[which];
        let target = m.value();
        let tol = self.spec.tolerance;
        let ratio = |usage: f64, capacity: f64, n: usize| match m.metric.per_pod() {
            true => usage / n as f64 / target,
            false => usage / capacity / target,
        };
        let (mut usage, mut capacity, mut ready) = (0.0, 0.0, 0usize);
        let (mut unready, mut missing) = (0usize, 0usize);
        for r in pods {
            match *r {
                PodReading::Ready {
                    usage: u,
                    capacity: c,
                } => {
                    usage += u;
                    capacity += c;
                    ready += 1;
                }
                PodReading::Missing { .. } => missing += 1,
                PodReading::Unready { .. } => unready += 1,
            }
        }
        if ready == 0 {
            return None;
        }
        let r0 = ratio(usage, capacity, ready);
        let up_with_unready = unready > 0 && r0 > 1.0;
        if !up_with_unready && missing == 0 {
            if (1.0 - r0).abs() <= tol {
                return Some(current);
            }
            return Some(ceil_u32(r0 * ready as f64));
        }
        // Take it again with the missing and unready pods filled in.
        let mut n = ready;
        for r in pods {
            match *r {
                PodReading::Missing { capacity: c } => {
                    n += 1;
                    capacity += c;
                    if r0 < 1.0 {
                        usage += match m.metric.per_pod() {
                            true => target,
                            false => c * target.max(1.0),
                        };
                    }
                }
                PodReading::Unready { capacity: c } if up_with_unready => {
                    n += 1;
                    capacity += c;
                }
                _ => {}
            }
        }
        let r1 = ratio(usage, capacity, n);
        if (1.0 - r1).abs() <= tol || (r0 < 1.0 && r1 > 1.0) || (r0 > 1.0 && r1 < 1.0) {
            return Some(current);
        }
        let proposed = ceil_u32(r1 * n as f64);
        if (r1 < 1.0 && proposed > current) || (r1 > 1.0 && proposed < current) {
            return Some(current);
        }
        Some(proposed)
    }

    /// One pass at `now` over `current` replicas (`reconcileAutoscaler`),
    /// `readings` holding the pods' readings of each metric in the order
    /// of [`Autoscaler::targets`]: the count to scale to, the change
    /// recorded for the rate limits.
    pub fn pass(&mut self, now: SimTime, current: u32, readings: &[Vec<PodReading>]) -> u32 {
        let (min, max) = (self.spec.min_replicas, self.spec.max());
        let desired = if current > max {
            max
        } else if current < min {
            min
        } else {
            // `computeReplicasForMetrics`: the largest proposal.
            let proposals = (0..self.targets.len()).zip(readings);
            let wanted = proposals
                .filter_map(|(i, pods)| self.metric_replicas(i, current, pods))
                .max();
            let Some(wanted) = wanted else {
                return current;
            };
            let stable = self.stabilize(now, current, wanted);
            self.limit_rate(now, current, stable)
        };
        if desired > current {
            self.store(now, true, desired - current);
        } else if desired < current {
            self.store(now, false, current - desired);
        }
        desired
    }

    /// `stabilizeRecommendationWithBehaviors`: the current count brought
    /// within the lowest recommendation of the up window and the highest
    /// of the down window; this one recorded, in place of one older than
    /// both windows if there is one. At the first pass the count found is
    /// recorded first (`recordInitialRecommendation`): a new autoscaler
    /// scales down no sooner than its down window.
    fn stabilize(&mut self, now: SimTime, current: u32, wanted: u32) -> u32 {
        if self.recommendations.is_empty() {
            self.recommendations.push((now, current));
        }
        let up_cut = cutoff(now, self.spec.window(true));
        let down_cut = cutoff(now, self.spec.window(false));
        let (mut up, mut down) = (wanted, wanted);
        let mut old = None;
        for (i, &(at, rec)) in self.recommendations.iter().enumerate() {
            if up_cut.is_none_or(|c| at > c) {
                up = up.min(rec);
            }
            if down_cut.is_none_or(|c| at > c) {
                down = down.max(rec);
            }
            if up_cut.is_some_and(|c| at < c) && down_cut.is_some_and(|c| at < c) {
                old = Some(i);
            }
        }
        match old {
            Some(i) => self.recommendations[i] = (now, wanted),
            None => self.recommendations.push((now, wanted)),
        }
        current.max(up).min(down)
    }

    /// `convertDesiredReplicasWithBehaviorRate`: the policies' limit over
    /// the changes of their periods, and the bounds.
    fn limit_rate(&self, now: SimTime, current: u32, desired: u32) -> u32 {
        let (min, max) = (self.spec.min_replicas, self.spec.max());
        if desired > current {
            let limit = self.limit(now, current, true).max(i64::from(current));
            desired.min(max).min(clamp_u32(limit))
        } else if desired < current {
            let limit = self.limit(now, current, false).min(i64::from(current));
            desired.max(min).max(clamp_u32(limit))
        } else {
            desired
        }
    }

    /// `calculateScale{Up,Down}Limit...`: each policy's count from the
    /// pods at its period's start, the largest change (or the smallest,
    /// or none) selected.
    fn limit(&self, now: SimTime, current: u32, up: bool) -> i64 {
        let select = self.spec.select(up);
        if select == Select::Disabled {
            return i64::from(current);
        }
        let largest = select == Select::Max;
        let mut result: Option<i64> = None;
        for &pol in self.spec.policies(up).iter() {
            let added = changes(&self.ups, now, pol.period);
            let removed = changes(&self.downs, now, pol.period);
            let start = i64::from(current) - added + removed;
            let v = i64::from(pol.value);
            let proposed = match (pol.kind, up) {
                (PolicyKind::Pods, true) => start + v,
                (PolicyKind::Pods, false) => start - v,
                (PolicyKind::Percent, true) => {
                    (start as f64 * (1.0 + v as f64 / 100.0)).ceil() as i64
                }
                (PolicyKind::Percent, false) => (start as f64 * (1.0 - v as f64 / 100.0)) as i64,
            };
            // Up: the largest change is the highest count; down, the lowest.
            result = Some(match result {
                None => proposed,
                Some(r) if largest == up => r.max(proposed),
                Some(r) => r.min(proposed),
            });
        }
        result.unwrap_or(i64::from(current))
    }

    /// `storeScaleEvent`: the change recorded, in place of one older than
    /// the direction's longest policy period if there is one.
    fn store(&mut self, now: SimTime, up: bool, change: u32) {
        let longest = self
            .spec
            .policies(up)
            .iter()
            .map(|p| p.period)
            .max()
            .unwrap_or(SimDuration::ZERO);
        let cut = cutoff(now, longest);
        let events = if up { &mut self.ups } else { &mut self.downs };
        let e = ScaleEvent { at: now, change };
        match events.iter().rposition(|x| cut.is_some_and(|c| x.at < c)) {
            Some(i) => events[i] = e,
            None => events.push(e),
        }
    }

    /// Recommendations and changes held.
    pub fn held(&self) -> usize {
        self.recommendations.len() + self.ups.len() + self.downs.len()
    }

    /// The most [`Autoscaler::held`] may be: a pass records at most one
    /// of each, in place of one past its window or period when there is
    /// one, so each holds at most a window's (a period's) passes and two
    /// (and the first pass's count found).
    pub fn held_bound(&self) -> u64 {
        let s = &self.spec;
        let passes = |w: SimDuration| w.as_nanos() / s.sync_period.as_nanos().max(1) + 2;
        let longest = |up: bool| {
            s.policies(up)
                .iter()
                .map(|p| p.period)
                .max()
                .unwrap_or(SimDuration::ZERO)
        };
        // The first pass's count found is one record more.
        passes(s.window(true).max(s.window(false)))
            + 1
            + passes(longest(true))
            + passes(longest(false))
    }
}

/// `now - window`, or `None` when the window reaches back before the
/// start (everything recorded is within it).
fn cutoff(now: SimTime, window: SimDuration) -> Option<SimTime> {
    now.as_nanos()
        .checked_sub(window.as_nanos())
        .map(SimTime::from_nanos)
}

/// The changes made strictly after `now - period`.
fn changes(events: &[ScaleEvent], now: SimTime, period: SimDuration) -> i64 {
    let cut = cutoff(now, period);
    events
        .iter()
        .filter(|e| cut.is_none_or(|c| e.at > c))
        .map(|e| i64::from(e.change))
        .sum()
}

fn ceil_u32(v: f64) -> u32 {
    if v.is_finite() && v > 0.0 {
        v.ceil().min(f64::from(u32::MAX)) as u32
    } else {
        0
    }
}

fn clamp_u32(v: i64) -> u32 {
    v.clamp(0, i64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At most `max` pods, a target of `target` per cent of cores.
    fn spec(max: u32, target: f64) -> AutoscalingSpec {
        AutoscalingSpec {
            max_replicas: Some(max),
            target: Some(target),
            ..AutoscalingSpec::default()
        }
    }

    fn rules(
        window: Option<u64>,
        select: Option<Select>,
        policy: Option<(PolicyKind, u32, u64)>,
    ) -> ScalingRules {
        ScalingRules {
            stabilization_window: window.map(secs),
            select,
            policies: policy.map(|(kind, value, period)| {
                vec![ScalingPolicy {
                    kind,
                    value,
                    period: secs(period),
                }]
            }),
        }
    }

    fn ready(n: usize, usage: f64, capacity: f64) -> Vec<PodReading> {
        vec![PodReading::Ready { usage, capacity }; n]
    }

    fn t(s: u64) -> SimTime {
        SimTime::from_nanos(s * 1_000_000_000)
    }

    #[test]
    fn ratio_and_tolerance_as_the_controller_takes_them() {
        let a = Autoscaler::new(&spec(100, 50.0));
        // 10 pods at 60 % of a 50 % target: ceil(1.2 × 10) = 12.
        assert_eq!(a.metric_replicas(0, 10, &ready(10, 0.6, 1.0)), Some(12));
        // 54 %: a ratio of 1.08, within the tolerance.
        assert_eq!(a.metric_replicas(0, 10, &ready(10, 0.54, 1.0)), Some(10));
        // 20 %: ceil(0.4 × 10) = 4.
        assert_eq!(a.metric_replicas(0, 10, &ready(10, 0.2, 1.0)), Some(4));
        // Capacities weigh: 2 of 4 cores and 3 of 4 busy is 62.5 %.
        let mixed = [
            PodReading::Ready {
                usage: 2.0,
                capacity: 4.0,
            },
            PodReading::Ready {
                usage: 3.0,
                capacity: 4.0,
            },
        ];
        assert_eq!(a.metric_replicas(0, 2, &mixed), Some(3));
        // Nothing ready: no reading.
        assert_eq!(
            a.metric_replicas(0, 3, &[PodReading::Unready { capacity: 1.0 }]),
            None
        );
    }

    #[test]
    fn unready_and_missing_pods_hold_back_as_the_controller_does() {
        let a = Autoscaler::new(&spec(100, 50.0));
        // 4 ready at 100 % (ratio 2) and 4 starting: counted idle, the
        // ratio is 1.0 over 8 — within the tolerance, no change.
        let mut pods = ready(4, 1.0, 1.0);
        pods.extend([PodReading::Unready { capacity: 1.0 }; 4]);
        assert_eq!(a.metric_replicas(0, 8, &pods), Some(8));
        // 2 starting: 4/6 / 0.5 = 1.33, ceil(1.33 × 6) = 8.
        let mut pods = ready(4, 1.0, 1.0);
        pods.extend([PodReading::Unready { capacity: 1.0 }; 2]);
        assert_eq!(a.metric_replicas(0, 6, &pods), Some(8));
        // Scale-down with unready pods: they are left out (ratio 0.4 over 4).
        let mut pods = ready(4, 0.2, 1.0);
        pods.extend([PodReading::Unready { capacity: 1.0 }; 2]);
        assert_eq!(a.metric_replicas(0, 6, &pods), Some(2));
        // Missing on a scale-down: at full capacity, (0.2 × 4 + 2) / 6 /
        // 0.5 = 0.93, within the tolerance.
        let mut pods = ready(4, 0.2, 1.0);
        pods.extend([PodReading::Missing { capacity: 1.0 }; 2]);
        assert_eq!(a.metric_replicas(0, 6, &pods), Some(6));
        // Missing on a scale-up: idle; 0.6 × 4 / 6 / 0.5 = 0.8 flips the
        // direction: no change.
        let mut pods = ready(4, 0.6, 1.0);
        pods.extend([PodReading::Missing { capacity: 1.0 }; 2]);
        assert_eq!(a.metric_replicas(0, 6, &pods), Some(6));
        // In flight: the target is requests per pod; missing pods on a
        // scale-down hold the target.
        let f = Autoscaler::new(&AutoscalingSpec {
            metric: Some(Metric::InFlight),
            ..spec(100, 10.0)
        });
        assert_eq!(f.metric_replicas(0, 4, &ready(4, 30.0, 1.0)), Some(12));
        let mut pods = ready(3, 2.0, 1.0);
        pods.push(PodReading::Missing { capacity: 1.0 });
        // (6 + 10) / 4 / 10 = 0.4: ceil(1.6) = 2.
        assert_eq!(f.metric_replicas(0, 4, &pods), Some(2));
    }

    #[test]
    fn scale_up_by_four_pods_or_double_each_fifteen_seconds() {
        let mut a = Autoscaler::new(&spec(1000, 50.0));
        // Saturated far past the target: each pass wants 10×.
        let mut n = 1;
        let mut seen = Vec::new();
        for i in 0..6 {
            n = a.pass(t(15 * i + 15), n, &[ready(n as usize, 5.0, 1.0)]);
            seen.push(n);
        }
        // max(1 + 4, 2) = 5, max(9, 10) = 10, then doubling.
        assert_eq!(seen, [5, 10, 20, 40, 80, 160]);
        // Within one period the changes count: a second pass 1 s later
        // adds nothing.
        let mut b = Autoscaler::new(&spec(1000, 50.0));
        assert_eq!(b.pass(t(15), 4, &[ready(4, 5.0, 1.0)]), 8);
        assert_eq!(b.pass(t(16), 8, &[ready(8, 5.0, 1.0)]), 8);
        assert_eq!(b.pass(t(31), 8, &[ready(8, 5.0, 1.0)]), 16);
        // The bound.
        let mut c = Autoscaler::new(&spec(12, 50.0));
        assert_eq!(c.pass(t(15), 10, &[ready(10, 5.0, 1.0)]), 12);
    }

    #[test]
    fn scale_down_waits_for_the_highest_recommendation_of_five_minutes() {
        let mut a = Autoscaler::new(&spec(100, 50.0));
        // A busy pass recommends 10 for 10 pods (no change)...
        assert_eq!(a.pass(t(15), 10, &[ready(10, 0.5, 1.0)]), 10);
        // ...then idle: 2 recommended, but 10 stays for 300 s.
        let mut n = 10;
        let mut at = 30;
        while at < 315 {
            n = a.pass(t(at), n, &[ready(n as usize, 0.1, 1.0)]);
            assert_eq!(n, 10, "at {at} s");
            at += 15;
        }
        // 300 s after the busy pass (a window's edge is not in it), it
        // drops to 2 at once (100 % a period).
        n = a.pass(t(315), n, &[ready(n as usize, 0.1, 1.0)]);
        assert_eq!(n, 2);
        assert!(a.held() <= 23, "history held: {}", a.held());
        // A new autoscaler records the count it finds first: idle from
        // its first pass, it still holds 10 pods for the window.
        let mut b = Autoscaler::new(&spec(100, 50.0));
        for at in (15..315).step_by(15) {
            assert_eq!(b.pass(t(at), 10, &[ready(10, 0.1, 1.0)]), 10, "at {at} s");
        }
        assert_eq!(b.pass(t(315), 10, &[ready(10, 0.1, 1.0)]), 2);
    }

    #[test]
    fn policies_select_and_bounds() {
        // Down by one pod a minute.
        let mut a = Autoscaler::new(&AutoscalingSpec {
            scale_down: rules(Some(0), None, Some((PolicyKind::Pods, 1, 60))),
            ..spec(100, 50.0)
        });
        assert_eq!(a.pass(t(15), 10, &[ready(10, 0.05, 1.0)]), 9);
        assert_eq!(a.pass(t(30), 9, &[ready(9, 0.05, 1.0)]), 9);
        assert_eq!(a.pass(t(74), 9, &[ready(9, 0.05, 1.0)]), 9);
        // A period's start is not in it: the change at 15 s no longer
        // counts at 75 s.
        assert_eq!(a.pass(t(75), 9, &[ready(9, 0.05, 1.0)]), 8);
        // Percent down truncates: 10 × (1 − 0.25) = 7.5 → 7; min bounds.
        let mut b = Autoscaler::new(&AutoscalingSpec {
            min_replicas: 8,
            scale_down: rules(Some(0), None, Some((PolicyKind::Percent, 25, 15))),
            ..spec(100, 50.0)
        });
        assert_eq!(b.pass(t(15), 10, &[ready(10, 0.05, 1.0)]), 8);
        // select: min takes the smaller change; disabled none.
        let mut c = Autoscaler::new(&AutoscalingSpec {
            scale_up: rules(None, Some(Select::Min), None),
            ..spec(100, 50.0)
        });
        assert_eq!(c.pass(t(15), 10, &[ready(10, 5.0, 1.0)]), 14);
        let mut d = Autoscaler::new(&AutoscalingSpec {
            scale_up: rules(None, Some(Select::Disabled), None),
            ..spec(100, 50.0)
        });
        assert_eq!(d.pass(t(15), 10, &[ready(10, 5.0, 1.0)]), 10);
        // Out of bounds: brought in without a reading.
        let mut e = Autoscaler::new(&AutoscalingSpec {
            min_replicas: 3,
            ..spec(5, 80.0)
        });
        assert_eq!(e.pass(t(15), 8, &[]), 5);
        assert_eq!(e.pass(t(30), 1, &[]), 3);
    }

    #[test]
    fn pods_are_grouped_as_group_pods_groups_them() {
        let a = Autoscaler::new(&spec(100, 50.0));
        let old = PodStatus {
            pending: false,
            ready: true,
            created: None,
            ready_changed: t(0),
        };
        let ready = PodReading::Ready {
            usage: 3.0,
            capacity: 4.0,
        };
        let unready = PodReading::Unready { capacity: 4.0 };
        let at = |pod: &PodStatus, metric: Metric, now: u64| {
            a.reading(metric, t(now), pod, Some(3.0), 4.0)
        };
        // Still starting: unready, whatever the metric; no sample: missing.
        let pending = PodStatus {
            pending: true,
            ready: false,
            created: Some(t(100)),
            ..old
        };
        assert_eq!(at(&pending, Metric::InFlight, 110), unready);
        assert_eq!(
            a.reading(Metric::Cpu, t(110), &old, None, 4.0),
            PodReading::Missing { capacity: 4.0 }
        );
        // An old pod failing readiness still counts its samples, on any
        // metric; on cpu, not one failing since within 30 s of its
        // creation (never ready), past its initialization period.
        let failing = PodStatus {
            ready: false,
            ready_changed: t(500),
            ..old
        };
        assert_eq!(at(&failing, Metric::Cpu, 510), ready);
        assert_eq!(at(&failing, Metric::Workers, 510), ready);
        let never = PodStatus {
            created: Some(t(100)),
            ready_changed: t(129),
            ..failing
        };
        assert_eq!(at(&never, Metric::Cpu, 510), unready);
        assert_eq!(at(&never, Metric::InFlight, 510), ready);
        let once = PodStatus {
            ready_changed: t(130),
            ..never
        };
        assert_eq!(at(&once, Metric::Cpu, 510), ready);
        // Within 5 min of its creation, on cpu: not ready is unready, and
        // so is a pod ready for less than a sync period (15 s).
        let young = PodStatus {
            created: Some(t(100)),
            ready_changed: t(130),
            ..old
        };
        assert_eq!(at(&young, Metric::Cpu, 140), unready);
        assert_eq!(at(&young, Metric::Cpu, 145), ready);
        assert_eq!(at(&young, Metric::Requests, 140), ready);
        let young_failing = PodStatus {
            ready: false,
            ready_changed: t(200),
            ..young
        };
        assert_eq!(at(&young_failing, Metric::Cpu, 399), unready);
        // Past the period (its edge excluded, as Go's `After` excludes
        // it), the rule for old pods.
        assert_eq!(at(&young_failing, Metric::Cpu, 400), ready);
    }

    #[test]
    fn several_metrics_take_the_largest_proposal() {
        // Cpu at 50 % and 10 requests in flight a pod, no down window.
        let two = |down_window: u64| AutoscalingSpec {
            metrics: Some(vec![
                MetricTarget {
                    metric: Metric::Cpu,
                    target: Some(50.0),
                },
                MetricTarget {
                    metric: Metric::InFlight,
                    target: Some(10.0),
                },
            ]),
            scale_down: rules(Some(down_window), None, None),
            ..spec(100, 50.0)
        };
        let spec2 = AutoscalingSpec {
            target: None,
            ..two(0)
        };
        let mut a = Autoscaler::new(&spec2);
        // Cpu calls for 12 (60 % of 50 %), requests held for 20 (20 of
        // 10): 20, within the rate's doubling.
        assert_eq!(a.metric_replicas(0, 10, &ready(10, 0.6, 1.0)), Some(12));
        assert_eq!(a.metric_replicas(1, 10, &ready(10, 20.0, 1.0)), Some(20));
        let n = a.pass(t(15), 10, &[ready(10, 0.6, 1.0), ready(10, 20.0, 1.0)]);
        assert_eq!(n, 20);
        // Cpu idle (4 pods) but requests held at the target: no change, a
        // scale-down needs every metric to call for it.
        let n = a.pass(t(30), 20, &[ready(20, 0.1, 1.0), ready(20, 10.0, 1.0)]);
        assert_eq!(n, 20);
        // Both low: the larger of 4 (cpu) and 10 (5 of 10 held).
        let n = a.pass(t(45), 20, &[ready(20, 0.1, 1.0), ready(20, 5.0, 1.0)]);
        assert_eq!(n, 10);
        // Requests a second: 150 a pod against 100 is 15 of 10 pods.
        let r = Autoscaler::new(&AutoscalingSpec {
            metric: Some(Metric::Requests),
            target: Some(100.0),
            ..spec(100, 50.0)
        });
        assert_eq!(r.metric_replicas(0, 10, &ready(10, 150.0, 1.0)), Some(15));
        assert_eq!(r.metric_replicas(0, 10, &ready(10, 95.0, 1.0)), Some(10));
        assert_eq!(
            spec2.describe().split(", a pass").next(),
            Some(
                "autoscaled between 1 and 100 pods on cpu at 50 % of its cores and 10 requests in flight a pod, the most pods any calls for (each within 0.1 of its target: no change)"
            )
        );
    }

    #[test]
    fn bad_values_are_named() {
        let check = |a: AutoscalingSpec, cores: bool, workers: bool| {
            let mut p = Problems::default();
            a.check("service.autoscaling", cores, workers, &mut p);
            p.0.iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let base = AutoscalingSpec {
            max_replicas: Some(4),
            ..AutoscalingSpec::default()
        };
        let found = check(AutoscalingSpec::default(), true, true);
        assert!(
            found.contains("service.autoscaling.max_replicas: must be given"),
            "{found}"
        );
        assert!(check(base.clone(), false, true).contains("cpu needs the service's `cores`"));
        let workers = AutoscalingSpec {
            metric: Some(Metric::Workers),
            ..base.clone()
        };
        assert!(check(workers, true, false).contains("workers needs"));
        let in_flight = AutoscalingSpec {
            metric: Some(Metric::InFlight),
            ..base.clone()
        };
        assert!(check(in_flight, true, true).contains("target: must be given for in_flight"));
        let min = AutoscalingSpec {
            min_replicas: 5,
            ..base.clone()
        };
        assert!(check(min, true, true).contains("must be at least min_replicas (5)"));
        let tol = AutoscalingSpec {
            tolerance: 1.0,
            ..base.clone()
        };
        assert!(check(tol, true, true).contains("service.autoscaling.tolerance"));
        let period = AutoscalingSpec {
            scale_up: rules(None, None, Some((PolicyKind::Pods, 0, 0))),
            ..base.clone()
        };
        let found = check(period, true, true);
        assert!(
            found.contains("scale_up.policies[0].period: must be longer than 0s"),
            "{found}"
        );
        assert!(
            found.contains("scale_up.policies[0].value: must be at least 1"),
            "{found}"
        );
        let both = AutoscalingSpec {
            metric: Some(Metric::Cpu),
            metrics: Some(vec![]),
            ..base.clone()
        };
        assert!(check(both, true, true).contains("metrics: give either `metric`"));
        let empty = AutoscalingSpec {
            metrics: Some(vec![]),
            ..base.clone()
        };
        assert!(check(empty, true, true).contains("metrics: must hold at least one"));
        let m = |metric, target| MetricTarget { metric, target };
        let listed = AutoscalingSpec {
            metrics: Some(vec![
                m(Metric::Requests, None),
                m(Metric::Workers, Some(50.0)),
                m(Metric::Workers, Some(-1.0)),
            ]),
            ..base.clone()
        };
        let found = check(listed, true, false);
        for part in [
            "metrics[0].target: must be given for requests",
            "metrics[1].metric: workers needs",
            "metrics[2].metric: workers is listed twice",
            "metrics[2].target: must be a number above 0",
        ] {
            assert!(found.contains(part), "{part} not in {found}");
        }
        assert_eq!(check(base.clone(), true, true), "");
        assert_eq!(
            base.describe(),
            "autoscaled between 1 and 4 pods on cpu at 80 % of its cores (within 0.1 of it: no change), a pass every 15s; added pods join after 30s, removed ones drain for up to 30s; up the larger of 4 pods per 15s, 100 % per 15s; down 100 % per 15s, to the highest recommendation of 5m"
        );
        // How removed pods stop, as `explain` says it.
        let removal = |pre_stop: Option<u64>, shutdown| {
            let d = AutoscalingSpec {
                pre_stop: pre_stop.map(secs),
                shutdown,
                ..base.clone()
            }
            .describe();
            let from = d.find("removed ones ").expect("removal") + "removed ones ".len();
            d[from..d.find("; up ").expect("rules")].to_string()
        };
        assert_eq!(
            removal(Some(5), Shutdown::Drain),
            "serve for a preStop of 5s, then drain, for up to 30s in all"
        );
        assert_eq!(
            removal(None, Shutdown::Close),
            "refuse new requests and drain, for up to 30s in all"
        );
        assert_eq!(
            removal(Some(5), Shutdown::Exit),
            "serve for a preStop of 5s, then exit, failing what they hold (within 30s)"
        );
    }
}
