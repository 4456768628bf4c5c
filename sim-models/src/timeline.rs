//! Incident timelines: actions on the world at given times.
//!
//! ```yaml
//! timeline:
//!   - at: "14:02:30"                 # a wall-clock label, or an offset such as 2m30s
//!     set: { param: upstream.latency_scale, value: 2.4 }
//!   - at: 5m
//!     ramp: { param: load.rate, to: 300, over: 30s }
//!   - at: 6m
//!     pulse: { param: load.rate, value: 500, for: 5s }
//!   - at: 7m
//!     kill_pod: 3
//!   - at: 8m
//!     restart_pod: 3
//!   - at: 9m
//!     pod_fault: { pod: 2, errors: 1.0, for: 5m }
//! ```
//!
//! Actions are data: [`TimelineEntry::resolve`] turns them into
//! [`Step`]s (a parameter set to a value at an instant, or a pod action)
//! before the run. A ramp becomes [`RAMP_STEPS`] equal steps; a pulse
//! becomes a set and a later revert to the value in force before it.

use std::fmt;

use serde::{Deserialize, Serialize};
use sim_core::time::{SimDuration, SimTime, TimeOfDay, WallClock};

use crate::config::{Problems, WorldConfig};

/// A ramp is applied as this many equal steps over its duration.
pub const RAMP_STEPS: u32 = 50;

/// When an action happens: an offset from the start (`2m30s`) or a
/// wall-clock label (`14:02:30`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// Offset from time zero.
    Offset(SimDuration),
    /// Wall-clock label, resolved against the clock's start.
    Label(TimeOfDay),
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Offset(d) => write!(f, "{d}"),
            At::Label(l) => write!(f, "{l}"),
        }
    }
}

impl Serialize for At {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for At {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.contains(':') {
            s.parse().map(At::Label).map_err(serde::de::Error::custom)
        } else {
            s.parse().map(At::Offset).map_err(serde::de::Error::custom)
        }
    }
}

impl At {
    /// The instant this names on `clock`.
    pub fn resolve(&self, clock: &WallClock) -> Result<SimTime, String> {
        match self {
            At::Offset(d) => Ok(SimTime::ZERO.saturating_add(*d)),
            At::Label(l) => clock.at(*l).map_err(|e| e.to_string()),
        }
    }
}

/// Declares the timeline's parameters once: the enum, the field path each
/// is written as (serde reads it from the same list), and `ALL`.
macro_rules! params {
    ($( $(#[$doc:meta])* $name:ident = $path:literal, )*) => {
        /// A numeric parameter of the world that the timeline may change.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Param {
            $( $(#[$doc])* #[serde(rename = $path)] $name, )*
        }

        impl Param {
            /// Every parameter, for messages.
            pub const ALL: &'static [Param] = &[$(Param::$name),*];

            /// The field path, as written in config.
            pub fn path(self) -> &'static str {
                match self {
                    $( Param::$name => $path, )*
                }
            }
        }
    };
}

params! {
    /// Open-loop arrivals per second.
    LoadRate = "load.rate",
    /// Multiplier on upstream service time.
    UpstreamLatencyScale = "upstream.latency_scale",
    /// Upstream concurrent slots (0: the dependency is down; what callers
    /// see then depends on `upstream.queue_limit` and `overflow`).
    UpstreamCapacity = "upstream.capacity",
    /// Requests the upstream queues beyond its slots (0 with a capacity
    /// of 0: a hard-down dependency answering at once; a queue with a
    /// capacity of 0: one that accepts and hangs).
    UpstreamQueueLimit = "upstream.queue_limit",
    /// Other tenants' requests per second.
    UpstreamBackgroundRps = "upstream.background_rps",
    /// Probability of an injected 500.
    UpstreamErrors500 = "upstream.errors.http_500",
    /// Probability of an injected 503.
    UpstreamErrors503 = "upstream.errors.http_503",
    /// The upstream's rate limit, requests per second.
    UpstreamRateLimitRps = "upstream.rate_limit.rps",
    /// Number of pods in service.
    ServicePods = "service.pods",
}

/// What a parameter belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The load.
    Load,
    /// A service.
    Service,
    /// A dependency.
    Dependency,
}

impl Param {
    /// What the parameter belongs to (its path's first part).
    pub fn owner(self) -> Owner {
        match self.path().split('.').next() {
            Some("service") => Owner::Service,
            Some("upstream") => Owner::Dependency,
            _ => Owner::Load,
        }
    }

    /// The field within its owner (`latency_scale`, `errors.http_500`).
    pub fn field(self) -> &'static str {
        self.path().split_once('.').map_or(self.path(), |(_, f)| f)
    }

    /// The value this parameter has for `service` or `upstream` before any
    /// action.
    fn initial_of(
        self,
        cfg: &WorldConfig,
        service: &crate::config::ServiceConfig,
        upstream: &crate::config::UpstreamConfig,
    ) -> f64 {
        match self {
            Param::LoadRate => cfg.load.rate,
            Param::UpstreamLatencyScale => upstream.latency_scale,
            Param::UpstreamCapacity => f64::from(upstream.capacity),
            Param::UpstreamQueueLimit => f64::from(upstream.queue_limit),
            Param::UpstreamBackgroundRps => upstream.background_rps,
            Param::UpstreamErrors500 => upstream.errors.http_500,
            Param::UpstreamErrors503 => upstream.errors.http_503,
            Param::UpstreamRateLimitRps => upstream.rate_limit.as_ref().map_or(0.0, |r| r.rps),
            Param::ServicePods => f64::from(service.pods),
        }
    }

    /// Checks a value for this parameter; `Err` says what is allowed.
    pub fn check(self, v: f64) -> Result<(), String> {
        let ok = match self {
            Param::UpstreamErrors500 | Param::UpstreamErrors503 => (0.0..=1.0).contains(&v),
            Param::ServicePods => (1.0..=1e6).contains(&v) && v.fract() == 0.0,
            Param::UpstreamCapacity | Param::UpstreamQueueLimit => {
                (0.0..=1e7).contains(&v) && v.fract() == 0.0
            }
            Param::UpstreamRateLimitRps => v > 0.0 && v <= crate::config::MAX_RATE,
            Param::LoadRate | Param::UpstreamBackgroundRps => {
                (0.0..=crate::config::MAX_RATE).contains(&v)
            }
            _ => v.is_finite() && v >= 0.0,
        };
        if ok {
            return Ok(());
        }
        Err(match self {
            Param::UpstreamErrors500 | Param::UpstreamErrors503 => {
                format!("must be a probability between 0 and 1, found {v}")
            }
            Param::ServicePods => format!("must be a whole number of at least 1, found {v}"),
            Param::UpstreamCapacity | Param::UpstreamQueueLimit => {
                format!("must be a whole number from 0 to 10^7, found {v}")
            }
            Param::UpstreamRateLimitRps if v > 0.0 => crate::config::rate_problem(v),
            Param::UpstreamRateLimitRps => format!("must be above 0, found {v}"),
            Param::LoadRate | Param::UpstreamBackgroundRps => crate::config::rate_problem(v),
            _ => format!("must be a non-negative number, found {v}"),
        })
    }
}

/// A parameter of one node: `upstream.latency_scale` in the single tier,
/// `dependencies.mysql.latency_scale` or `services.orders.pods` in a
/// graph (`load.rate` in both).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ParamRef {
    /// The kind of parameter.
    pub param: Param,
    /// The node it belongs to, in a graph.
    pub node: Option<String>,
}

impl From<Param> for ParamRef {
    fn from(param: Param) -> Self {
        ParamRef { param, node: None }
    }
}

impl fmt::Display for ParamRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.node, self.param.owner()) {
            (Some(n), Owner::Service) => write!(f, "services.{n}.{}", self.param.field()),
            (Some(n), Owner::Dependency) => write!(f, "dependencies.{n}.{}", self.param.field()),
            _ => f.write_str(self.param.path()),
        }
    }
}

impl std::str::FromStr for ParamRef {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let by_path = |path: &str| Param::ALL.iter().copied().find(|p| p.path() == path);
        let (kind, rest) = s.split_once('.').unwrap_or((s, ""));
        let graph = match kind {
            "services" => Some("service"),
            "dependencies" => Some("upstream"),
            _ => None,
        };
        let found = match graph {
            Some(owner) => rest.split_once('.').and_then(|(node, field)| {
                by_path(&format!("{owner}.{field}")).map(|param| ParamRef {
                    param,
                    node: Some(node.to_string()),
                })
            }),
            None => by_path(s).map(ParamRef::from),
        };
        found.ok_or_else(|| {
            let all: Vec<String> = Param::ALL.iter().map(|p| format!("`{}`", p.path())).collect();
            format!(
                "unknown variant `{s}`, expected one of {} (in a graph: services.<name>.pods, dependencies.<name>.<field>)",
                all.join(", ")
            )
        })
    }
}

impl Serialize for ParamRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ParamRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// Parses the name while the deserializer is at it, so an error
        /// carries the field's own path and place.
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = ParamRef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a parameter name such as upstream.latency_scale")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ParamRef, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Name)
    }
}

impl ParamRef {
    /// The node's index (0 for the load and the single tier's nodes), if
    /// the parameter addresses a node `cfg` has, in the way `cfg` is
    /// written (a graph's by name, the single tier's bare).
    pub fn node_index(&self, cfg: &WorldConfig) -> Result<u32, String> {
        let owner = self.param.owner();
        match (&self.node, cfg.is_graph(), owner) {
            (_, _, Owner::Load) | (None, false, _) => Ok(0),
            (Some(_), false, _) => Err(format!(
                "{self} addresses a graph's node; this world is the single tier: write {}",
                self.param.path()
            )),
            (None, true, Owner::Service) => Err(format!(
                "in a graph, name the service: services.<name>.{}",
                self.param.field()
            )),
            (None, true, _) => Err(format!(
                "in a graph, name the dependency: dependencies.<name>.{}",
                self.param.field()
            )),
            (Some(n), true, Owner::Service) => cfg
                .services
                .keys()
                .position(|k| k == n)
                .map(|i| i as u32)
                .ok_or_else(|| format!("no service is called {n:?}")),
            (Some(n), true, _) => cfg
                .dependencies
                .keys()
                .position(|k| k == n)
                .map(|i| i as u32)
                .ok_or_else(|| format!("no dependency is called {n:?}")),
        }
    }

    /// The value this parameter has in `cfg` before any action.
    pub fn initial(&self, cfg: &WorldConfig) -> f64 {
        let service = match &self.node {
            Some(n) => cfg.services.get(n).unwrap_or(&cfg.service),
            None => &cfg.service,
        };
        let upstream = match &self.node {
            Some(n) => cfg.dependencies.get(n).unwrap_or(&cfg.upstream),
            None => &cfg.upstream,
        };
        self.param.initial_of(cfg, service, upstream)
    }

    /// Whether the dependency it addresses has a rate limit to change.
    fn has_rate_limit(&self, cfg: &WorldConfig) -> bool {
        match &self.node {
            Some(n) => cfg
                .dependencies
                .get(n)
                .is_some_and(|u| u.rate_limit.is_some()),
            None => cfg.upstream.rate_limit.is_some(),
        }
    }
}

/// Set a parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetAction {
    /// Which parameter.
    pub param: ParamRef,
    /// Its new value.
    pub value: f64,
}

/// Move a parameter linearly to a value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RampAction {
    /// Which parameter.
    pub param: ParamRef,
    /// Value at the end of the ramp.
    pub to: f64,
    /// Duration of the ramp.
    pub over: SimDuration,
}

/// Set a parameter for a while, then put back the value it had.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PulseAction {
    /// Which parameter.
    pub param: ParamRef,
    /// Value during the pulse.
    pub value: f64,
    /// How long the pulse lasts.
    #[serde(rename = "for")]
    pub duration: SimDuration,
}

/// One timeline entry: a time and exactly one action.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineEntry {
    /// When.
    pub at: At,
    /// Set a parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<SetAction>,
    /// Ramp a parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<RampAction>,
    /// Pulse a parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulse: Option<PulseAction>,
    /// Take a pod out until a `restart_pod` names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_pod: Option<u32>,
    /// Restart a pod now (its in-flight work fails; back after the
    /// restart time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_pod: Option<u32>,
    /// Restart every pod (the operator's "restart them all"): at once, or
    /// rolling, one pod every `every`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_all: Option<RestartAll>,
    /// One pod goes bad: it answers a share of requests with a 500 at
    /// once (a broken node, disk or configuration), for a while or until
    /// another `pod_fault` on it says otherwise. Restarts keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_fault: Option<PodFault>,
    /// In a graph, the service whose pods `kill_pod`, `restart_pod`,
    /// `restart_all` or `pod_fault` act on (default: the entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Deploy a new client policy (the operator's fix): from this moment
    /// every new attempt, retry and backoff follows it, and the policies'
    /// state (budgets, breakers, throttles) starts fresh, as new processes'
    /// would. The experiment loader merges what is written over the client
    /// as the file and the deploys before this one leave it, so one field
    /// (`deploy: { client: { retry: { max_retries: 0 } } }`) or a whole
    /// block (`deploy: { client: { preset: incident-1402-after } }`) both work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy: Option<Deploy>,
}

/// A change deployed at a moment of the timeline: a client policy, the
/// dependency's configuration, or both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Deploy {
    /// In a graph, the call whose client is deployed, by its path
    /// (`services.orders.calls[0]`, a group's
    /// `services.api.calls[0].parallel[2]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The client from then on, complete.
    pub client: Option<crate::config::ClientConfig>,
    /// In a graph, the dependency reconfigured, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
    /// The dependency from then on, complete (its queue limit, overflow,
    /// latency distribution, load law, errors, admission: any field).
    pub upstream: Option<crate::config::UpstreamConfig>,
}

/// The call configured at `path` in a graph: `services.NAME.calls[i]`,
/// or `services.NAME.calls[i].parallel[j]` for a group's.
pub fn call_at<'a>(cfg: &'a WorldConfig, path: &str) -> Option<&'a crate::config::CallSpec> {
    let rest = path.strip_prefix("services.")?;
    let (name, rest) = rest.split_once(".calls[")?;
    let (i, rest) = rest.split_once(']')?;
    let call = cfg
        .services
        .get(name)?
        .calls
        .get(i.parse::<usize>().ok()?)?;
    if rest.is_empty() {
        return Some(call);
    }
    let j = rest.strip_prefix(".parallel[")?.strip_suffix(']')?;
    call.parallel.get(j.parse::<usize>().ok()?)
}

impl Deploy {
    /// The single tier's deploy: what it deploys is checked alone, as the
    /// world checks its client and upstream (not the whole world again
    /// per deploy).
    fn check_single_tier(&self, at: &str, p: &mut Problems) {
        for (field, given) in [
            ("call", self.call.is_some()),
            ("dependency", self.dependency.is_some()),
        ] {
            if given {
                p.add(
                    &format!("{at}.{field}"),
                    "the single tier has one client and one upstream: leave it out",
                );
            }
        }
        if let Some(c) = &self.client {
            c.check(&format!("{at}.client"), p);
        }
        if let Some(u) = &self.upstream {
            u.check(&format!("{at}.upstream"), p);
        }
    }

    /// A graph's deploy: the call and the dependency it names must exist,
    /// and what it deploys is checked alone, as the graph checks a call's
    /// client and a dependency (not the whole world again per deploy).
    fn check_in_graph(&self, at: &str, cfg: &WorldConfig, p: &mut Problems) {
        if let Some(c) = &self.client {
            match call_at(cfg, self.call.as_deref().unwrap_or_default()) {
                Some(spec) if spec.parallel.is_empty() => c.check(&format!("{at}.client"), p),
                _ => {
                    let field = if self.call.is_some() {
                        "call"
                    } else {
                        "client"
                    };
                    p.add(
                        &format!("{at}.{field}"),
                        format!(
                            "in a graph, name the call whose client is deployed with call: (one of {})",
                            call_paths(cfg).join(", ")
                        ),
                    );
                }
            }
        } else if self.call.is_some() {
            p.add(
                &format!("{at}.call"),
                "names the call of a deployed client; this deploy has none",
            );
        }
        if let Some(u) = &self.upstream {
            match cfg
                .dependencies
                .get(self.dependency.as_deref().unwrap_or_default())
            {
                Some(_) => u.check(&format!("{at}.upstream"), p),
                None => {
                    let field = if self.dependency.is_some() {
                        "dependency"
                    } else {
                        "upstream"
                    };
                    let names: Vec<&str> = cfg.dependencies.keys().map(String::as_str).collect();
                    p.add(
                        &format!("{at}.{field}"),
                        format!(
                            "in a graph, name the dependency reconfigured with dependency: (one of {})",
                            names.join(", ")
                        ),
                    );
                }
            }
        } else if self.dependency.is_some() {
            p.add(
                &format!("{at}.dependency"),
                "names the dependency of a deployed upstream; this deploy has none",
            );
        }
    }
}

/// The calls' paths in a graph, as [`call_at`] reads them, for messages:
/// the first ten, and how many more.
fn call_paths(cfg: &WorldConfig) -> Vec<String> {
    const SHOWN: usize = 10;
    let mut out = Vec::new();
    let mut more = 0usize;
    for (name, s) in &cfg.services {
        for (i, c) in s.calls.iter().enumerate() {
            let at = format!("services.{name}.calls[{i}]");
            let n = c.parallel.len().max(1);
            for j in 0..n {
                if out.len() == SHOWN {
                    more += n - j;
                    break;
                }
                out.push(match c.parallel.is_empty() {
                    true => at.clone(),
                    false => format!("{at}.parallel[{j}]"),
                });
            }
        }
    }
    if more > 0 {
        out.push(format!("and {more} more"));
    }
    out
}

/// A restart of every pod the service has at that moment (with an
/// autoscaler, every place it may fill: those without a pod then are
/// passed over, their turns kept).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RestartAll {
    /// Time between one pod's restart and the next (default 0s: all at
    /// once). Pod `i` restarts `i × every` after the entry's time.
    pub every: SimDuration,
}

/// A pod gone bad (`pod_fault: { pod: 2, errors: 1.0, for: 5m }`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodFault {
    /// The pod.
    pub pod: u32,
    /// Share of its requests answered 500 at once, from 0 (healthy again)
    /// to 1.
    pub errors: f64,
    /// How long it lasts (default: until another `pod_fault` on the pod).
    #[serde(rename = "for", default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<SimDuration>,
}

/// What a resolved step does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepAction {
    /// Set a parameter of a node (by index: a service, a dependency, or 0
    /// for the load) to a value.
    Set(Param, u32, f64),
    /// Take a pod of a service (by index) out of service indefinitely.
    KillPod(u32, u32),
    /// Restart a pod of a service (by index).
    RestartPod(u32, u32),
    /// A pod of a service (by index) answers this share of requests 500.
    PodFault(u32, u32, f64),
    /// Deploy the client policy of timeline entry `n`.
    Deploy(u32),
}

/// One change at one instant; `entry` is the timeline index it came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// When it applies.
    pub at: SimTime,
    /// What it does.
    pub action: StepAction,
    /// The index of the timeline entry it came from.
    pub entry: usize,
    /// True for the last step of its entry (a ramp's end, a pulse's revert).
    pub ends_trigger: bool,
}

impl TimelineEntry {
    /// An entry at `offset` from the start with no action yet: fill in one
    /// (`TimelineEntry { pulse: Some(..), ..TimelineEntry::at_offset(d) }`).
    pub fn at_offset(offset: SimDuration) -> Self {
        TimelineEntry {
            at: At::Offset(offset),
            set: None,
            ramp: None,
            pulse: None,
            kill_pod: None,
            restart_pod: None,
            restart_all: None,
            pod_fault: None,
            service: None,
            deploy: None,
        }
    }

    fn action_count(&self) -> usize {
        usize::from(self.set.is_some())
            + usize::from(self.ramp.is_some())
            + usize::from(self.pulse.is_some())
            + usize::from(self.kill_pod.is_some())
            + usize::from(self.restart_pod.is_some())
            + usize::from(self.restart_all.is_some())
            + usize::from(self.pod_fault.is_some())
            + usize::from(self.deploy.is_some())
    }

    pub(crate) fn validate(
        &self,
        path: &str,
        clock: &WallClock,
        cfg: &WorldConfig,
        p: &mut Problems,
    ) {
        match self.at.resolve(clock) {
            Ok(t) if t.since_start() > cfg.clock.duration => p.add(
                &format!("{path}.at"),
                format!(
                    "{} is after the end of the run ({} from the start)",
                    self.at, cfg.clock.duration
                ),
            ),
            Ok(_) => {}
            Err(e) => p.add(&format!("{path}.at"), e),
        }
        if self.action_count() != 1 {
            p.add(
                path,
                format!(
                    "needs exactly one action of set, ramp, pulse, kill_pod, restart_pod, restart_all, pod_fault, deploy; found {}",
                    self.action_count()
                ),
            );
        }
        let check = |p: &mut Problems, field: &str, param: &ParamRef, v: f64| {
            let param_at = format!("{path}.{}.param", field.split('.').next().unwrap_or(field));
            if let Err(e) = param.node_index(cfg) {
                p.add(&param_at, e);
                return;
            }
            if let Err(e) = param.param.check(v) {
                p.add(&format!("{path}.{field}"), format!("{param}: {e}"));
            } else if param.param == Param::ServicePods
                && service_config(cfg, param.node.as_deref())
                    .autoscaling
                    .is_some()
            {
                p.add(
                    &format!("{path}.{field}"),
                    format!("{param}: the service's autoscaler sets its pods, between its min_replicas and max_replicas"),
                );
            } else if param.param == Param::ServicePods {
                let (pods, limit) = (counted_pods(cfg, param, v), cfg.limits.max_pods);
                if pods > u64::from(limit) {
                    let counted = match cfg.is_graph() {
                        true => " in the graph, each counted once and once more per call it makes",
                        false => "",
                    };
                    p.add(
                        &format!("{path}.{field}"),
                        format!("{param}: {pods} pods{counted}, over the limit of {limit} (raise it with limits.max_pods)"),
                    );
                }
            }
            if param.param == Param::UpstreamRateLimitRps && !param.has_rate_limit(cfg) {
                let at = param.to_string();
                let section = at.trim_end_matches(".rps");
                p.add(
                    &format!("{path}.{field}"),
                    format!("{at} needs a {section} to change"),
                );
            }
        };
        if let Some(s) = &self.set {
            check(p, "set.value", &s.param, s.value);
        }
        if let Some(d) = &self.deploy {
            let at = format!("{path}.deploy");
            if d.client.is_none() && d.upstream.is_none() {
                p.add(&at, "needs a client, an upstream, or both");
            }
            match cfg.is_graph() {
                false => d.check_single_tier(&at, p),
                true => d.check_in_graph(&at, cfg, p),
            }
        }
        if let Some(r) = &self.ramp {
            check(p, "ramp.to", &r.param, r.to);
            if r.over.is_zero() {
                p.add(
                    &format!("{path}.ramp.over"),
                    "must be longer than 0s (use set for a step)",
                );
            }
        }
        if let Some(u) = &self.pulse {
            check(p, "pulse.value", &u.param, u.value);
            if u.duration.is_zero() {
                p.add(&format!("{path}.pulse.for"), "must be longer than 0s");
            }
        }
        if let Some(f) = &self.pod_fault {
            if !(0.0..=1.0).contains(&f.errors) {
                p.add(
                    &format!("{path}.pod_fault.errors"),
                    format!("must be a share between 0 and 1, found {}", f.errors),
                );
            }
            if f.duration.is_some_and(|d| d.is_zero()) {
                p.add(
                    &format!("{path}.pod_fault.for"),
                    "must be longer than 0s (leave it out for a fault that lasts)",
                );
            }
        }
        let pod_action = self.kill_pod.is_some()
            || self.restart_pod.is_some()
            || self.restart_all.is_some()
            || self.pod_fault.is_some();
        if let Some(name) = &self.service {
            let at = format!("{path}.service");
            if !pod_action {
                p.add(&at, "names the service of kill_pod, restart_pod, restart_all or pod_fault; this entry has none");
            } else if !cfg.is_graph() {
                p.add(&at, "the single tier has one service: leave service out");
            } else if !cfg.services.contains_key(name) {
                let names: Vec<&str> = cfg.services.keys().map(String::as_str).collect();
                p.add(
                    &at,
                    format!(
                        "no service is called {name:?} (services: {})",
                        names.join(", ")
                    ),
                );
                return;
            }
        }
        let target = self.pod_service(cfg);
        for (field, pod) in [
            ("kill_pod", self.kill_pod),
            ("restart_pod", self.restart_pod),
            ("pod_fault.pod", self.pod_fault.map(|f| f.pod)),
        ] {
            let Some(pod) = pod else { continue };
            // The most pods the timeline ever gives the service: a scan of
            // the timeline, made only for an entry naming a pod.
            // An autoscaler may fill twice its max_replicas places; a step
            // naming one with no pod then is passed over.
            let service = service_config(cfg, target.as_deref());
            let scaled = service.autoscaling.as_ref().map_or(0, |a| a.places());
            let pods = service
                .pods
                .max(max_pods(cfg, target.as_deref()))
                .max(scaled);
            if pod >= pods {
                p.add(
                    &format!("{path}.{field}"),
                    format!(
                        "pod {pod} does not exist (pods of {} are numbered from 0 to {})",
                        target.as_deref().unwrap_or("the service"),
                        pods.saturating_sub(1)
                    ),
                );
            }
        }
    }
}

impl TimelineEntry {
    /// The service whose pods this entry's pod action names: in a graph,
    /// `service` or the entry; `None` in the single tier.
    fn pod_service(&self, cfg: &WorldConfig) -> Option<String> {
        match cfg.is_graph() {
            true => self.service.clone().or_else(|| cfg.entry.clone()),
            false => None,
        }
    }
}

/// A graph's service by name, or the single tier's.
fn service_config<'a>(
    cfg: &'a WorldConfig,
    name: Option<&str>,
) -> &'a crate::config::ServiceConfig {
    name.and_then(|n| cfg.services.get(n))
        .unwrap_or(&cfg.service)
}

/// A service's pod count as a parameter (`None`: the single tier's).
fn pods_of(name: Option<&str>) -> ParamRef {
    ParamRef {
        param: Param::ServicePods,
        node: name.map(str::to_string),
    }
}

/// The pods `limits.max_pods` counts when the timeline gives the service
/// of `pods` `v` of them: those, or in a graph every service's, each
/// counted once and once more per call it makes (a pool each), as the
/// configured pods are counted.
fn counted_pods(cfg: &WorldConfig, pods: &ParamRef, v: f64) -> u64 {
    let v = v as u64;
    if !cfg.is_graph() {
        return v;
    }
    cfg.services
        .iter()
        .map(|(name, s)| {
            let n = match pods.node.as_deref() == Some(name.as_str()) {
                true => v,
                false => s.pods_held(),
            };
            n.saturating_mul(1 + s.calls.len() as u64)
        })
        .fold(0, u64::saturating_add)
}

/// The most pods the timeline ever asks of a service (pods added by
/// pod-count changes can be killed and restarted too).
fn max_pods(cfg: &WorldConfig, name: Option<&str>) -> u32 {
    let pods = pods_of(name);
    cfg.timeline
        .iter()
        .filter_map(|e| {
            let v = match (&e.set, &e.ramp, &e.pulse) {
                (Some(s), _, _) if s.param == pods => s.value,
                (_, Some(r), _) if r.param == pods => r.to,
                (_, _, Some(u)) if u.param == pods => u.value,
                _ => return None,
            };
            Some(v as u32)
        })
        .max()
        .unwrap_or(0)
}

/// Resolves a validated timeline into steps sorted by time (entries at the
/// same instant keep their written order). Pulses revert to the value the
/// parameter had just before the pulse began, as the steps before it left
/// it.
pub fn resolve(cfg: &WorldConfig) -> Vec<Step> {
    let clock = cfg.clock.wall_clock();
    let mut timed: Vec<(SimTime, usize)> = cfg
        .timeline
        .iter()
        .enumerate()
        .map(|(i, e)| (e.at.resolve(&clock).unwrap_or(SimTime::MAX), i))
        .collect();
    timed.sort();
    let mut steps = Vec::new();
    // Each parameter's value as the steps emitted so far leave it (by
    // entry order, which matches time order since `timed` is sorted).
    let mut current: std::collections::BTreeMap<ParamRef, f64> = Default::default();
    let value_of = |cur: &std::collections::BTreeMap<ParamRef, f64>, p: &ParamRef| {
        cur.get(p).copied().unwrap_or_else(|| p.initial(cfg))
    };
    let set = |cur: &mut std::collections::BTreeMap<ParamRef, f64>, p: &ParamRef, v: f64| {
        cur.insert(p.clone(), v);
    };
    let node = |p: &ParamRef| p.node_index(cfg).unwrap_or(0);
    // The index of the service a pod action names.
    let pod_service = |e: &TimelineEntry| {
        let target = e.pod_service(cfg);
        pods_of(target.as_deref()).node_index(cfg).unwrap_or(0)
    };
    for (at, i) in timed {
        let e = &cfg.timeline[i];
        let step = |at, action, ends_trigger| Step {
            at,
            action,
            entry: i,
            ends_trigger,
        };
        if let Some(s) = &e.set {
            steps.push(step(
                at,
                StepAction::Set(s.param.param, node(&s.param), s.value),
                true,
            ));
            set(&mut current, &s.param, s.value);
        } else if let Some(r) = &e.ramp {
            let from = value_of(&current, &r.param);
            for k in 1..=RAMP_STEPS {
                let frac = f64::from(k) / f64::from(RAMP_STEPS);
                let t = at.saturating_add(r.over.mul_f64(frac));
                let mut v = from + (r.to - from) * frac;
                if matches!(
                    r.param.param,
                    Param::ServicePods | Param::UpstreamCapacity | Param::UpstreamQueueLimit
                ) {
                    v = v.round();
                }
                steps.push(step(
                    t,
                    StepAction::Set(r.param.param, node(&r.param), v),
                    k == RAMP_STEPS,
                ));
            }
            set(&mut current, &r.param, r.to);
        } else if let Some(u) = &e.pulse {
            let before = value_of(&current, &u.param);
            let n = node(&u.param);
            steps.push(step(at, StepAction::Set(u.param.param, n, u.value), false));
            steps.push(step(
                at.saturating_add(u.duration),
                StepAction::Set(u.param.param, n, before),
                true,
            ));
        } else if let Some(pod) = e.kill_pod {
            steps.push(step(at, StepAction::KillPod(pod_service(e), pod), true));
        } else if let Some(pod) = e.restart_pod {
            steps.push(step(at, StepAction::RestartPod(pod_service(e), pod), true));
        } else if let Some(f) = e.pod_fault {
            let service = pod_service(e);
            let fault = StepAction::PodFault(service, f.pod, f.errors);
            steps.push(step(at, fault, f.duration.is_none()));
            if let Some(d) = f.duration {
                let healed = StepAction::PodFault(service, f.pod, 0.0);
                steps.push(step(at.saturating_add(d), healed, true));
            }
        } else if e.deploy.is_some() {
            steps.push(step(at, StepAction::Deploy(i as u32), true));
        } else if let Some(r) = &e.restart_all {
            // The pods the service has then, as the steps before leave it;
            // with an autoscaler, every place it may fill (a place with no
            // pod then, or one it removed, is passed over when its turn
            // comes).
            let target = e.pod_service(cfg);
            let scaled = service_config(cfg, target.as_deref())
                .autoscaling
                .as_ref()
                .map_or(0, |a| a.places());
            let pods = (value_of(&current, &pods_of(target.as_deref()))
                .round()
                .max(0.0) as u32)
                .max(scaled);
            let service = pod_service(e);
            for pod in 0..pods {
                let t = at.saturating_add(r.every.saturating_mul(u64::from(pod)));
                steps.push(step(
                    t,
                    StepAction::RestartPod(service, pod),
                    pod + 1 == pods,
                ));
            }
        }
    }
    // Stable: same-instant steps keep entry order.
    steps.sort_by_key(|s| s.at);
    steps
}

/// What `param` of node `node` adds up to over the run, in value ×
/// seconds (a rate's requests): `initial` until the first of `steps` that
/// sets it, then each step's value until the next, up to the end of the
/// clock. The up-front estimate of a run's work counts a rate the
/// timeline raises as it will be simulated, not as the file starts it.
pub fn integral_over_run(
    cfg: &WorldConfig,
    steps: &[Step],
    param: Param,
    node: u32,
    initial: f64,
) -> f64 {
    let end = SimTime::ZERO.saturating_add(cfg.clock.duration);
    let (mut since, mut value, mut sum) = (SimTime::ZERO, initial, 0.0);
    for s in steps {
        let StepAction::Set(p, n, v) = s.action else {
            continue;
        };
        if p != param || n != node {
            continue;
        }
        let at = s.at.min(end);
        sum += value * at.saturating_since(since).as_secs_f64();
        (since, value) = (at, v);
    }
    sum + value * end.saturating_since(since).as_secs_f64()
}

/// The end of the last trigger: the latest instant at which a timeline
/// step that ends an entry applies (`None` for an empty timeline).
pub fn last_trigger_end(steps: &[Step]) -> Option<SimTime> {
    steps.iter().filter(|s| s.ends_trigger).map(|s| s.at).max()
}
