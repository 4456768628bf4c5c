//! The world's shape: services, the calls between them (edges) and the
//! dependencies they end at, resolved once from the configuration.
//!
//! A graph names its services and dependencies; each service lists the
//! calls it makes per request, in sequence, a `parallel` entry making one
//! step of several calls at once. The single-tier format (`service`,
//! `client`, `upstream`) is exactly the three-node graph `gateway →
//! service → upstream`: [`Topology::of`] builds both, and the world runs
//! only topologies, so one code path runs both.
//!
//! Indices are positions: services and dependencies in name order (the
//! configuration's maps are sorted), edges in the order their services
//! and calls are written. They never depend on anything but the file.

use std::collections::BTreeMap;

use sim_core::dist::DistSpec;

use crate::config::{
    CallSpec, ClientConfig, ConfigError, PoolConfig, Problems, ServiceConfig, UpstreamConfig,
    WorldConfig,
};

/// What an edge calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A service, by index.
    Service(u32),
    /// A dependency, by index.
    Dependency(u32),
}

/// One edge: a service's call to a service or a dependency, with the
/// caller's client policy and pool.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// `orders->payment` (`service->upstream` for the single tier).
    pub name: String,
    /// Where it is configured (`services.orders.calls[0]`, or `client`).
    pub path: String,
    /// The calling service.
    pub from: u32,
    /// Its index among the caller's edges (its pool in each pod).
    pub local: u32,
    /// What it calls.
    pub to: Target,
    /// How the caller's pods call.
    pub client: ClientConfig,
    /// The caller's pool for this edge.
    pub pool: PoolConfig,
    /// Network delay there.
    pub there: Option<DistSpec>,
    /// Network delay back.
    pub back: Option<DistSpec>,
    /// Its failure degrades the answer instead of failing it.
    pub optional: bool,
    /// Share of requests that make it.
    pub probability: f64,
    /// Random streams are named after the edge (graphs), or keep the
    /// single tier's names.
    pub suffix: Option<String>,
}

/// One step of a service's calls: edges called at once, and how many
/// must answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The edges called.
    pub edges: Vec<u32>,
    /// Answers that complete the step (the rest are cancelled).
    pub wait_for: u32,
}

/// One service.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceNode {
    /// Its name (`service` for the single tier).
    pub name: String,
    /// Where it is configured (`services.orders`, or `service`).
    pub path: String,
    /// Its pods, workers, health, work.
    pub cfg: ServiceConfig,
    /// Its calls, step by step.
    pub steps: Vec<Step>,
    /// Its edges, by local index.
    pub edges: Vec<u32>,
    /// Stream-name suffix (graphs).
    pub suffix: Option<String>,
}

/// One dependency.
#[derive(Clone, Debug, PartialEq)]
pub struct DependencyNode {
    /// Its name (`upstream` for the single tier).
    pub name: String,
    /// Where it is configured (`dependencies.mysql`, or `upstream`).
    pub path: String,
    /// Its capacity, queue, load law, admission, errors.
    pub cfg: UpstreamConfig,
    /// Stream-name suffix (graphs).
    pub suffix: Option<String>,
}

/// The resolved shape of a world.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Services, in name order.
    pub services: Vec<ServiceNode>,
    /// Edges, caller by caller, in the order written.
    pub edges: Vec<Edge>,
    /// Dependencies, in name order.
    pub dependencies: Vec<DependencyNode>,
    /// The service load enters at.
    pub entry: u32,
}

/// A random stream's name for a node: the single tier's own names, or
/// `name@node` in a graph.
pub(crate) fn stream_name(base: &str, suffix: &Option<String>) -> String {
    match suffix {
        None => base.to_string(),
        Some(s) => format!("{base}@{s}"),
    }
}

impl Topology {
    /// The topology of `cfg`: its graph, or the single tier as three
    /// nodes. Problems (unknown names, cycles, bad sections) are the
    /// configuration's, with their field paths.
    pub fn of(cfg: &WorldConfig) -> Result<Topology, Vec<ConfigError>> {
        let mut p = Problems::default();
        let t = build(cfg, &mut p);
        if p.0.is_empty() { Ok(t) } else { Err(p.0) }
    }

    /// Attempts per user request when every call is made once and none
    /// is retried or hedged: each edge's share of requests times the
    /// visits its caller gets, summed over the edges (1 for the single
    /// tier; 2.6 for a frontend calling `catalog` and, for 30 % of
    /// requests, `checkout`, each of which queries `db`). It is a run's
    /// amplification without retries, the level against which a graph's
    /// amplification reads as a storm. Services in an order where every
    /// caller comes before its callees (Kahn's), so a long chain costs
    /// linear time and no stack.
    pub fn fan_out(&self) -> f64 {
        let n = self.services.len();
        let mut callers = vec![0u32; n];
        for e in &self.edges {
            if let Target::Service(to) = e.to {
                callers[to as usize] += 1;
            }
        }
        let mut visits = vec![0.0f64; n];
        if let Some(v) = visits.get_mut(self.entry as usize) {
            *v = 1.0;
        }
        let mut ready: Vec<usize> = (0..n).filter(|&s| callers[s] == 0).collect();
        let mut total = 0.0;
        while let Some(s) = ready.pop() {
            for &e in &self.services[s].edges {
                let edge = &self.edges[e as usize];
                let calls = visits[s] * edge.probability;
                total += calls;
                if let Target::Service(to) = edge.to {
                    let to = to as usize;
                    visits[to] += calls;
                    callers[to] -= 1;
                    if callers[to] == 0 {
                        ready.push(to);
                    }
                }
            }
        }
        total
    }

    /// The single-tier chain: `service` calling `upstream` with `client`.
    fn single_tier(cfg: &WorldConfig) -> Topology {
        Topology {
            services: vec![ServiceNode {
                name: "service".into(),
                path: "service".into(),
                cfg: cfg.service.clone(),
                steps: vec![Step {
                    edges: vec![0],
                    wait_for: 1,
                }],
                edges: vec![0],
                suffix: None,
            }],
            edges: vec![Edge {
                name: "service->upstream".into(),
                path: "client".into(),
                from: 0,
                local: 0,
                to: Target::Dependency(0),
                client: cfg.client.clone(),
                pool: cfg.service.pool.clone(),
                there: cfg.network.pod_to_upstream.clone(),
                back: cfg.network.upstream_to_pod.clone(),
                optional: false,
                probability: 1.0,
                suffix: None,
            }],
            dependencies: vec![DependencyNode {
                name: "upstream".into(),
                path: "upstream".into(),
                cfg: cfg.upstream.clone(),
                suffix: None,
            }],
            entry: 0,
        }
    }

    /// The service or dependency called `name`.
    pub fn target(&self, name: &str) -> Option<Target> {
        if let Some(i) = self.services.iter().position(|s| s.name == name) {
            return Some(Target::Service(i as u32));
        }
        self.dependencies
            .iter()
            .position(|d| d.name == name)
            .map(|i| Target::Dependency(i as u32))
    }

    /// A node's name.
    pub fn name_of(&self, t: Target) -> &str {
        match t {
            Target::Service(i) => &self.services[i as usize].name,
            Target::Dependency(i) => &self.dependencies[i as usize].name,
        }
    }

    /// The paths from the entry to a node with no calls of its own, as
    /// the edges taken (for `explain`), at most `limit` of them (a graph's
    /// paths can be exponentially many): the paths, and whether there are
    /// more. Depth first, edges in the order written; iterative, so a long
    /// chain cannot exhaust the stack.
    pub fn paths(&self, limit: usize) -> (Vec<Vec<u32>>, bool) {
        let mut out = Vec::new();
        // The edges taken, and for each service on the way the next of its
        // edges to follow.
        let mut taken: Vec<u32> = Vec::new();
        let mut stack: Vec<(u32, usize)> = vec![(self.entry, 0)];
        while let Some(&mut (service, ref mut next)) = stack.last_mut() {
            let edges = &self.services[service as usize].edges;
            if *next == 0 && edges.is_empty() && !taken.is_empty() {
                out.push(taken.clone());
            }
            let Some(&e) = edges.get(*next) else {
                stack.pop();
                taken.pop();
                continue;
            };
            *next += 1;
            if out.len() >= limit {
                return (out, true);
            }
            taken.push(e);
            match self.edges[e as usize].to {
                Target::Service(s) if !stack.iter().any(|&(x, _)| x == s) => stack.push((s, 0)),
                // A dependency ends the path (a cycle is refused by
                // validation; a service already on the way ends it too).
                _ => {
                    if matches!(self.edges[e as usize].to, Target::Dependency(_)) {
                        out.push(taken.clone());
                    }
                    taken.pop();
                }
            }
        }
        (out, false)
    }
}

/// Checks a graph: each section's own fields, then names and cycles.
pub(crate) fn check(cfg: &WorldConfig, p: &mut Problems) {
    build(cfg, p);
}

fn build(cfg: &WorldConfig, p: &mut Problems) -> Topology {
    if !cfg.is_graph() {
        return Topology::single_tier(cfg);
    }
    let defaults = WorldConfig::default();
    for (path, written) in [
        ("service", cfg.service != defaults.service),
        ("client", cfg.client != defaults.client),
        ("upstream", cfg.upstream != defaults.upstream),
        (
            "network.pod_to_upstream",
            cfg.network.pod_to_upstream.is_some(),
        ),
        (
            "network.upstream_to_pod",
            cfg.network.upstream_to_pod.is_some(),
        ),
    ] {
        if written {
            p.add(
                path,
                "is the single-tier format; in a graph, configure each service under services, each call's client and network delays under its calls, each dependency under dependencies",
            );
        }
    }
    let mut t = Topology {
        services: Vec::new(),
        edges: Vec::new(),
        dependencies: Vec::new(),
        entry: 0,
    };
    for (name, s) in &cfg.services {
        let path = format!("services.{name}");
        check_name(name, &path, p);
        s.check(&path, p);
        t.services.push(ServiceNode {
            name: name.clone(),
            path,
            cfg: s.clone(),
            steps: Vec::new(),
            edges: Vec::new(),
            suffix: Some(name.clone()),
        });
    }
    for (name, d) in &cfg.dependencies {
        let path = format!("dependencies.{name}");
        check_name(name, &path, p);
        d.check(&path, p);
        if cfg.services.contains_key(name) {
            p.add(
                &path,
                format!("{name:?} names a service too: a name calls one node"),
            );
        }
        t.dependencies.push(DependencyNode {
            name: name.clone(),
            path,
            cfg: d.clone(),
            suffix: Some(name.clone()),
        });
    }
    match &cfg.entry {
        None => p.add("entry", "a graph needs the service its load enters at"),
        Some(e) => match t.services.iter().position(|s| &s.name == e) {
            Some(i) => t.entry = i as u32,
            None => p.add("entry", unknown(e, &t, true)),
        },
    }
    // Lookups by name, and each caller-callee pair's calls so far, built
    // once: a graph of thousands of nodes is checked in linear time.
    // (A name both a service and a dependency is refused above; the
    // service is the one meant, as in `Topology::target`.)
    let mut targets: BTreeMap<String, Target> = BTreeMap::new();
    for (i, d) in t.dependencies.iter().enumerate() {
        targets.insert(d.name.clone(), Target::Dependency(i as u32));
    }
    for (i, s) in t.services.iter().enumerate() {
        targets.insert(s.name.clone(), Target::Service(i as u32));
    }
    let mut calls_between: BTreeMap<String, u32> = BTreeMap::new();
    for (si, (name, s)) in cfg.services.iter().enumerate() {
        for (ci, call) in s.calls.iter().enumerate() {
            let at = format!("services.{name}.calls[{ci}]");
            let group: Vec<(String, &CallSpec)> = if call.parallel.is_empty() {
                if let Some(k) = call.wait_for {
                    p.add(
                        &format!("{at}.wait_for"),
                        format!("{k}: only a parallel group waits for some of its calls"),
                    );
                }
                vec![(at.clone(), call)]
            } else {
                if !call.to.is_empty() {
                    p.add(
                        &format!("{at}.to"),
                        "a parallel group names its calls under parallel, not a target of its own",
                    );
                }
                // A group is a step, not a call: what a call carries is
                // written on each of its calls, where it takes effect. A
                // value left on the group would be read by nobody.
                for (field, set) in [
                    ("client", call.client != ClientConfig::default()),
                    ("pool", call.pool.is_some()),
                    ("there", call.there.is_some()),
                    ("back", call.back.is_some()),
                    ("optional", call.optional),
                    ("probability", call.probability != 1.0),
                ] {
                    if set {
                        p.add(
                            &format!("{at}.{field}"),
                            format!(
                                "a parallel group takes only `parallel` and `wait_for`; write `{field}` on each of its calls (under {at}.parallel)"
                            ),
                        );
                    }
                }
                if call.parallel.len() > crate::request::MAX_PARALLEL {
                    p.add(
                        &format!("{at}.parallel"),
                        format!(
                            "{} calls at once; at most {} (write two groups)",
                            call.parallel.len(),
                            crate::request::MAX_PARALLEL
                        ),
                    );
                }
                let n = call.parallel.len() as u32;
                if let Some(k) = call.wait_for
                    && !(1..=n).contains(&k)
                {
                    p.add(
                        &format!("{at}.wait_for"),
                        format!("must be between 1 and the group's {n} calls, found {k}"),
                    );
                }
                call.parallel
                    .iter()
                    .enumerate()
                    .map(|(j, c)| (format!("{at}.parallel[{j}]"), c))
                    .collect()
            };
            let mut step = Step {
                edges: Vec::new(),
                wait_for: call.wait_for.unwrap_or(group.len() as u32).max(1),
            };
            for (at, c) in group {
                if !c.parallel.is_empty() {
                    p.add(
                        &format!("{at}.parallel"),
                        "a parallel group holds calls, not groups",
                    );
                    continue;
                }
                c.client.check(&format!("{at}.client"), p);
                if let Some(pool) = &c.pool {
                    pool.check(&format!("{at}.pool"), p);
                }
                for (leg, d) in [("there", &c.there), ("back", &c.back)] {
                    if let Some(d) = d {
                        p.dist(&format!("{at}.{leg}"), d);
                    }
                }
                p.probability(&format!("{at}.probability"), c.probability);
                let to = if c.to.is_empty() {
                    p.add(
                        &format!("{at}.to"),
                        "a call names the service or dependency it calls (`to:`), or lists the calls of a parallel group under `parallel:` (one at least)",
                    );
                    None
                } else {
                    match targets.get(c.to.as_str()) {
                        Some(&to) => Some(to),
                        None => {
                            p.add(&format!("{at}.to"), unknown(&c.to, &t, false));
                            None
                        }
                    }
                };
                let Some(to) = to else { continue };
                let e = t.edges.len() as u32;
                // The second call between the same two nodes is `a->b#2`.
                let mut edge_name = format!("{name}->{}", c.to);
                let same = calls_between.entry(edge_name.clone()).or_insert(0);
                *same += 1;
                if *same > 1 {
                    edge_name = format!("{edge_name}#{same}");
                }
                let local = t.services[si].edges.len() as u32;
                t.edges.push(Edge {
                    suffix: Some(edge_name.clone()),
                    name: edge_name,
                    path: at.clone(),
                    from: si as u32,
                    local,
                    to,
                    client: c.client.clone(),
                    pool: c.pool.clone().unwrap_or_else(|| s.pool.clone()),
                    there: c.there.clone(),
                    back: c.back.clone(),
                    optional: c.optional,
                    probability: c.probability,
                });
                t.services[si].edges.push(e);
                step.edges.push(e);
            }
            step.wait_for = step.wait_for.min(step.edges.len() as u32).max(1);
            if !step.edges.is_empty() {
                t.services[si].steps.push(step);
            }
        }
    }
    if let Some(cycle) = find_cycle(&t) {
        let (first, rest) = cycle.split_first().expect("a cycle has edges");
        let e = &t.edges[*first as usize];
        let mut names = vec![t.services[e.from as usize].name.clone()];
        for &x in std::iter::once(first).chain(rest) {
            names.push(t.name_of(t.edges[x as usize].to).to_string());
        }
        p.add(
            &format!("{}.to", e.path),
            format!(
                "the calls form a cycle, {}: a request would call itself without end",
                names.join(" -> ")
            ),
        );
    }
    t
}

/// What separates the parts of the names a node's name goes into: field
/// paths (`services.api.pods`, `calls[0]`), edges (`api->db#2`) and
/// random streams (`client/backoff@api->db`).
const NAME_SEPARATORS: [&str; 6] = [".", "[", "]", "->", "#", "@"];

/// A node's name is one part of those names: not empty, no separator
/// (a service `api.v2` could not be addressed as `services.api.v2.pods`,
/// and a service `a->b` calling `c` would make the edge `a->b->c`).
fn check_name(name: &str, path: &str, p: &mut Problems) {
    if name.trim().is_empty() {
        p.add(path, "a name needs a character other than spaces");
    } else if let Some(s) = NAME_SEPARATORS.iter().find(|s| name.contains(**s)) {
        p.add(
            path,
            format!(
                "{name:?} contains {s:?}: a name may not contain {}, which separate the parts of paths, edges and streams (write api-v2, not api.v2)",
                NAME_SEPARATORS.map(|s| format!("{s:?}")).join(", ")
            ),
        );
    }
}

/// A cycle of service calls, as its edges from the first service on it
/// (depth first, services in index order: the same cycle every time).
/// Iterative, so a long chain of services cannot exhaust the stack.
fn find_cycle(t: &Topology) -> Option<Vec<u32>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks = vec![Mark::New; t.services.len()];
    for root in 0..t.services.len() as u32 {
        if marks[root as usize] != Mark::New {
            continue;
        }
        // Services on the way with the next of their edges to follow, and
        // the edges taken to reach each.
        let mut stack: Vec<(u32, usize)> = vec![(root, 0)];
        let mut taken: Vec<u32> = Vec::new();
        marks[root as usize] = Mark::Open;
        while let Some(&mut (s, ref mut next)) = stack.last_mut() {
            let Some(&e) = t.services[s as usize].edges.get(*next) else {
                marks[s as usize] = Mark::Done;
                stack.pop();
                taken.pop();
                continue;
            };
            *next += 1;
            let Target::Service(to) = t.edges[e as usize].to else {
                continue;
            };
            match marks[to as usize] {
                Mark::Open => {
                    taken.push(e);
                    let from = taken
                        .iter()
                        .position(|&x| t.edges[x as usize].from == to)
                        .unwrap_or(0);
                    return Some(taken[from..].to_vec());
                }
                Mark::New => {
                    marks[to as usize] = Mark::Open;
                    taken.push(e);
                    stack.push((to, 0));
                }
                Mark::Done => {}
            }
        }
    }
    None
}

fn unknown(name: &str, t: &Topology, services_only: bool) -> String {
    let mut known: Vec<&str> = t.services.iter().map(|s| s.name.as_str()).collect();
    if !services_only {
        known.extend(t.dependencies.iter().map(|d| d.name.as_str()));
    }
    let what = if services_only {
        "service"
    } else {
        "service or dependency"
    };
    format!(
        "no {what} is called {name:?}; expected one of {}",
        known.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::time::SimDuration;

    fn graph(yaml_calls: &[(&str, Vec<CallSpec>)], deps: &[&str], entry: &str) -> WorldConfig {
        let mut cfg = WorldConfig::default();
        for (name, calls) in yaml_calls {
            let s = ServiceConfig {
                calls: calls.clone(),
                pods: 1,
                ..Default::default()
            };
            cfg.services.insert(name.to_string(), s);
        }
        for d in deps {
            cfg.dependencies
                .insert(d.to_string(), UpstreamConfig::default());
        }
        cfg.entry = Some(entry.into());
        cfg
    }

    fn call(to: &str) -> CallSpec {
        CallSpec {
            to: to.into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_single_tier_is_three_nodes() {
        let t = Topology::of(&WorldConfig::default()).unwrap();
        assert_eq!(t.services.len(), 1);
        assert_eq!(t.edges.len(), 1);
        assert_eq!(t.dependencies.len(), 1);
        assert_eq!(t.edges[0].to, Target::Dependency(0));
        assert_eq!(t.paths(10), (vec![vec![0]], false));
    }

    #[test]
    fn a_graph_resolves_names_steps_and_paths() {
        let par = CallSpec {
            parallel: vec![call("b"), call("db")],
            wait_for: Some(1),
            ..Default::default()
        };
        let cfg = graph(
            &[("a", vec![call("b"), par]), ("b", vec![call("db")])],
            &["db"],
            "a",
        );
        let t = Topology::of(&cfg).unwrap();
        assert_eq!(t.edges.len(), 4);
        assert_eq!(t.edges[0].name, "a->b");
        assert_eq!(t.edges[1].name, "a->b#2");
        assert_eq!(t.services[0].steps.len(), 2);
        assert_eq!(t.services[0].steps[1].wait_for, 1);
        assert_eq!(t.paths(10), (vec![vec![0, 3], vec![1, 3], vec![2]], false));
        assert_eq!(t.paths(2), (vec![vec![0, 3], vec![1, 3]], true));
    }

    #[test]
    fn a_parallel_group_refuses_what_only_its_calls_can_carry() {
        let group = CallSpec {
            parallel: vec![call("b"), call("db")],
            ..Default::default()
        };
        let fields: [(&str, CallSpec); 6] = [
            (
                "client",
                CallSpec {
                    client: ClientConfig {
                        attempt_timeout: Some(SimDuration::from_secs(1)),
                        ..Default::default()
                    },
                    ..group.clone()
                },
            ),
            (
                "pool",
                CallSpec {
                    pool: Some(PoolConfig::default()),
                    ..group.clone()
                },
            ),
            (
                "there",
                CallSpec {
                    there: Some(DistSpec::Constant(SimDuration::from_millis(5))),
                    ..group.clone()
                },
            ),
            (
                "back",
                CallSpec {
                    back: Some(DistSpec::Constant(SimDuration::from_millis(5))),
                    ..group.clone()
                },
            ),
            (
                "optional",
                CallSpec {
                    optional: true,
                    ..group.clone()
                },
            ),
            (
                "probability",
                CallSpec {
                    probability: 0.3,
                    ..group.clone()
                },
            ),
        ];
        for (field, spec) in fields {
            let cfg = graph(&[("a", vec![spec]), ("b", vec![])], &["db"], "a");
            let e = Topology::of(&cfg).unwrap_err();
            assert_eq!(e.len(), 1, "{field}: {e:?}");
            assert_eq!(e[0].path, format!("services.a.calls[0].{field}"));
            assert!(
                e[0].message.contains("write `") && e[0].message.contains("parallel"),
                "{field}: {}",
                e[0].message
            );
        }
        let cfg = graph(&[("a", vec![group]), ("b", vec![])], &["db"], "a");
        Topology::of(&cfg).unwrap();
    }

    #[test]
    fn fan_out_counts_every_call_once_by_its_share_of_requests() {
        assert_eq!(
            Topology::of(&WorldConfig::default()).unwrap().fan_out(),
            1.0
        );
        // a -> b (always), a -> c (30 %), b -> db twice, c -> db, c -> b:
        // b is visited 1 + 0.3 times, so 1 + 0.3 + 2 × 1.3 + 0.3 + 0.3.
        let sometimes = |to: &str, p: f64| CallSpec {
            probability: p,
            ..call(to)
        };
        let cfg = graph(
            &[
                ("a", vec![call("b"), sometimes("c", 0.3)]),
                ("b", vec![call("db"), call("db")]),
                ("c", vec![call("db"), call("b")]),
            ],
            &["db"],
            "a",
        );
        let f = Topology::of(&cfg).unwrap().fan_out();
        assert!((f - 4.5).abs() < 1e-12, "{f}");
    }

    #[test]
    fn a_name_with_a_separator_is_refused() {
        for bad in ["api.v2", "db[0]", "a->b", "x#2", "q@1", " "] {
            let cfg = graph(&[(bad, vec![call("db")])], &["db"], bad);
            let e = Topology::of(&cfg).unwrap_err();
            assert!(
                e.iter()
                    .any(|e| e.path == format!("services.{bad}") && e.message.contains("a name")),
                "{bad}: {e:?}"
            );
            let cfg = graph(&[("api", vec![call(bad)])], &[bad], "api");
            let e = Topology::of(&cfg).unwrap_err();
            assert!(
                e.iter().any(|e| e.path == format!("dependencies.{bad}")),
                "{bad}: {e:?}"
            );
        }
        for good in ["api-v2", "支付 服务", "db/1", "shard_3"] {
            let cfg = graph(&[(good, vec![call("db")])], &["db"], good);
            Topology::of(&cfg).unwrap_or_else(|e| panic!("{good}: {e:?}"));
        }
    }

    #[test]
    fn calls_between_the_same_nodes_are_numbered_in_order() {
        let cfg = graph(
            &[
                ("a", vec![call("b"), call("db"), call("b"), call("b")]),
                ("b", vec![call("db"), call("db")]),
            ],
            &["db"],
            "a",
        );
        let t = Topology::of(&cfg).unwrap();
        let names: Vec<&str> = t.edges.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["a->b", "a->db", "a->b#2", "a->b#3", "b->db", "b->db#2"]
        );
    }

    #[test]
    fn a_cycle_is_refused_with_the_path_that_closes_it() {
        let cfg = graph(
            &[
                ("a", vec![call("b")]),
                ("b", vec![call("c")]),
                ("c", vec![call("a")]),
            ],
            &[],
            "a",
        );
        let e = Topology::of(&cfg).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].path, "services.a.calls[0].to");
        assert!(
            e[0].message.contains("a -> b -> c -> a"),
            "{}",
            e[0].message
        );
    }

    #[test]
    fn unknown_names_and_single_tier_sections_are_located() {
        let mut cfg = graph(&[("a", vec![call("nope")])], &["db"], "zz");
        cfg.client.retry.max_retries = 7;
        let e = Topology::of(&cfg).unwrap_err();
        let paths: Vec<&str> = e.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            ["client", "entry", "services.a.calls[0].to"],
            "{e:?}"
        );
        assert!(
            e[2].message.contains("expected one of a, db"),
            "{}",
            e[2].message
        );
    }
}
