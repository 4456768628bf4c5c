//! Service graphs against things we did not write, at hand-picked
//! points: the closed form of retries multiplied across tiers, Jackson's
//! theorem for an open network of exponential services, Pollaczek–
//! Khinchine for a worker whose requests sometimes call nothing, the
//! maximum (and minimum) of k exponentials for a parallel fan-out; and
//! the graph mechanisms (propagated deadlines, cancellation, restarts
//! and deploys below the entry, node rows). `drawn.rs` checks the same
//! kind of closed forms on parameters drawn from a seed, with the
//! helpers kept here.

use sim_core::dist::DistSpec;
use sim_core::theory::mmc_mean_wait;
use sim_core::time::SimDuration;
use sim_models::config::{
    CallSpec, ClientConfig, PoolConfig, ServiceConfig, UpstreamConfig, WorldConfig,
};
use sim_models::graph::Topology;
use sim_models::policy::analysis::paths_worst_case;
use sim_models::policy::backoff::Backoff;
use sim_models::recorder::{
    BucketRow, Count, GroupRow, Latency, LatencySummary, NodeRow, RowSink, RunTotals,
};
use sim_models::timeline::{Param, ParamRef, SetAction, TimelineEntry};
use sim_models::world::run;

use crate::common::{ms, secs};

/// Keeps the nodes' rows with their names, and each bucket's row, with
/// its pod groups, pool waits, end-to-end latencies and drops at hand.
#[derive(Default)]
pub(crate) struct Nodes {
    pub(crate) rows: Vec<NodeRow>,
    pub(crate) names: Vec<String>,
    pub(crate) groups: Vec<Vec<GroupRow>>,
    /// Each bucket's pool waits, over every pool.
    pub(crate) waits: Vec<LatencySummary>,
    /// Each bucket's end-to-end latencies.
    pub(crate) e2e: Vec<LatencySummary>,
    /// Each bucket's arrivals the dependencies dropped at the door.
    pub(crate) dropped: Vec<u64>,
    /// Each bucket's row, its pod groups taken out.
    pub(crate) buckets: Vec<BucketRow>,
}

impl RowSink for Nodes {
    fn push(&mut self, mut row: BucketRow) {
        self.waits.push(row.latency(Latency::PoolWait));
        self.e2e.push(row.latency(Latency::EndToEnd));
        self.dropped.push(row.count(Count::UpstreamDropped));
        self.groups.push(std::mem::take(&mut row.groups));
        self.buckets.push(row);
    }
    fn wants_nodes(&self) -> bool {
        true
    }
    fn node(&mut self, row: NodeRow, names: &[String]) {
        if self.names.is_empty() {
            self.names = names.to_vec();
        }
        self.rows.push(row);
    }
}

impl Nodes {
    /// The rows of the node called `name`.
    pub(crate) fn of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a NodeRow> + 'a {
        self.rows
            .iter()
            .filter(move |r| self.names[r.slot as usize] == name)
    }

    /// A count summed over the run.
    fn total(&self, name: &str, f: fn(&NodeRow) -> u64) -> u64 {
        self.of(name).map(f).sum()
    }

    /// The mean latency over the run, from each bucket's mean.
    fn mean_latency(&self, name: &str) -> f64 {
        let (mut n, mut sum) = (0u64, 0.0);
        for r in self.of(name) {
            if let Some(m) = r.latency.mean {
                n += r.latency.count;
                sum += m * r.latency.count as f64;
            }
        }
        sum / n as f64 / 1e9
    }
}

pub(crate) fn go(cfg: &WorldConfig) -> (Nodes, RunTotals) {
    let out = run(cfg, Nodes::default()).unwrap_or_else(|e| panic!("{e}"));
    (out.sink, out.totals)
}

/// A pool that never makes anyone wait: connections set up at once.
fn free_pool() -> PoolConfig {
    PoolConfig {
        max_connections: 100_000,
        connect_time: DistSpec::Constant(SimDuration::ZERO),
        ..Default::default()
    }
}

pub(crate) fn call(to: &str, client: ClientConfig) -> CallSpec {
    CallSpec {
        to: to.into(),
        client,
        pool: Some(free_pool()),
        ..Default::default()
    }
}

pub(crate) fn service(pods: u32, calls: Vec<CallSpec>) -> ServiceConfig {
    ServiceConfig {
        pods,
        calls,
        ..Default::default()
    }
}

/// A client with a 10 s attempt timeout and `n` retries 1 ms apart.
fn retrying(n: u32) -> ClientConfig {
    ClientConfig {
        attempt_timeout: Some(secs(10)),
        retry: sim_models::config::RetryConfig {
            max_retries: n,
            backoff: Backoff::fixed(ms(1)),
            ..Default::default()
        },
        ..Default::default()
    }
}

pub(crate) fn exp(mean: SimDuration) -> DistSpec {
    DistSpec::Exponential { mean }
}

/// Stops arrivals at `at`, so every request finishes before the end.
fn stop_load_at(cfg: &mut WorldConfig, at: SimDuration) {
    cfg.timeline.push(TimelineEntry {
        set: Some(SetAction {
            param: Param::LoadRate.into(),
            value: 0.0,
        }),
        ..TimelineEntry::at_offset(at)
    });
}

/// Three tiers (a → b → c → db), 4 attempts at each: a user request puts
/// `4 × 4 × 4` attempts on a database that always fails when every
/// failure is retried, and `E_a · E_b · E_c` in expectation when it fails
/// independently with probability `p` (each `E = (1 − q⁴)/(1 − q)` with
/// `q` the chance a call below fails).
fn three_tiers(p: f64) -> WorldConfig {
    let retry = retrying_every_failure(3, Backoff::fixed(ms(1)));
    let mut cfg = WorldConfig::default();
    cfg.seed = 5;
    cfg.clock.duration = secs(40);
    cfg.load.rate = 200.0;
    cfg.entry = Some("a".into());
    cfg.services
        .insert("a".into(), service(2, vec![call("b", retry.clone())]));
    cfg.services
        .insert("b".into(), service(2, vec![call("c", retry.clone())]));
    cfg.services
        .insert("c".into(), service(2, vec![call("db", retry)]));
    cfg.dependencies.insert("db".into(), failing(p));
    stop_load_at(&mut cfg, secs(30));
    cfg
}

/// A client retrying every failure `n` times, waiting `backoff`, with an
/// attempt timeout (60 s) no answer comes near.
pub(crate) fn retrying_every_failure(n: u32, backoff: Backoff) -> ClientConfig {
    ClientConfig {
        attempt_timeout: Some(secs(60)),
        retry: sim_models::config::RetryConfig {
            max_retries: n,
            backoff,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A dependency answering in 1 ms, never making anyone wait, each answer
/// a 500 with probability `p`.
pub(crate) fn failing(p: f64) -> UpstreamConfig {
    let mut db = UpstreamConfig {
        capacity: 100_000,
        latency: DistSpec::Constant(ms(1)),
        ..Default::default()
    };
    db.errors.http_500 = p;
    db
}

#[test]
fn retries_multiply_across_tiers_exactly_when_the_bottom_always_fails() {
    let cfg = three_tiers(1.0);
    let (nodes, totals) = go(&cfg);
    let users = totals.count(sim_models::recorder::Count::Offered);
    assert!(users > 5_000, "{users}");
    assert_eq!(totals.finished(), users, "every request finished");
    assert_eq!(nodes.total("a->b", |r| r.attempts), 4 * users);
    assert_eq!(nodes.total("b->c", |r| r.attempts), 16 * users);
    assert_eq!(nodes.total("c->db", |r| r.attempts), 64 * users);
    assert_eq!(nodes.total("db", |r| r.offered), 64 * users);
    // Every call retried, on every edge, and none rescued.
    for (edge, calls) in [("a->b", users), ("b->c", 4 * users), ("c->db", 16 * users)] {
        assert_eq!(nodes.total(edge, |r| r.offered), calls, "{edge}");
        assert_eq!(nodes.total(edge, |r| r.calls_retried), calls, "{edge}");
        assert_eq!(nodes.total(edge, |r| r.calls_rescued), 0, "{edge}");
    }
    assert_eq!(totals.count(Count::CallsRetried), 21 * users);
    // The static analysis says the same.
    let topo = Topology::of(&cfg).unwrap();
    let (paths, more) = paths_worst_case(&cfg, &topo);
    assert!(!more);
    assert_eq!(paths.len(), 1);
    assert_eq!(paths[0].nodes, ["a", "b", "c", "db"]);
    assert_eq!(paths[0].amplification, Some(64));
}

#[test]
fn retries_multiply_across_tiers_in_expectation_with_independent_failures() {
    let p: f64 = 0.7;
    let e = |q: f64| (1.0 - q.powi(4)) / (1.0 - q);
    let (q1, q2) = (p.powi(4), p.powi(16));
    let expected = e(p) * e(q1) * e(q2);
    let mut measured = Vec::new();
    // Per edge, calls retried and rescued, summed over the seeds.
    let mut rescues = [(0u64, 0u64, 0u64); 2];
    for seed in [1, 2, 3] {
        let mut cfg = three_tiers(p);
        cfg.seed = seed;
        let (nodes, totals) = go(&cfg);
        let users = totals.count(Count::Offered) as f64;
        measured.push(nodes.total("db", |r| r.offered) as f64 / users);
        let edges = ["a->b", "b->c", "c->db"];
        let sum = |f: fn(&NodeRow) -> u64| edges.iter().map(|e| nodes.total(e, f)).sum::<u64>();
        assert_eq!(sum(|r| r.calls_retried), totals.count(Count::CallsRetried));
        assert_eq!(sum(|r| r.calls_rescued), totals.count(Count::CallsRescued));
        // The totals keep the same per edge, for the summary's figures.
        let kept: Vec<(&str, u64, u64)> = totals
            .edge_rescues
            .iter()
            .map(|e| (e.edge.as_str(), e.retried, e.rescued))
            .collect();
        let counted: Vec<(&str, u64, u64)> = edges
            .iter()
            .map(|&e| {
                let n = |f: fn(&NodeRow) -> u64| nodes.total(e, f);
                (e, n(|r| r.calls_retried), n(|r| r.calls_rescued))
            })
            .collect();
        assert_eq!(kept, counted);
        for (k, edge) in ["b->c", "c->db"].into_iter().enumerate() {
            rescues[k].0 += nodes.total(edge, |r| r.offered);
            rescues[k].1 += nodes.total(edge, |r| r.calls_retried);
            rescues[k].2 += nodes.total(edge, |r| r.calls_rescued);
        }
    }
    let mean = measured.iter().sum::<f64>() / 3.0;
    // About 17,000 requests: the mean's standard error is under 0.5 %.
    assert!(
        (mean / expected - 1.0).abs() < 0.02,
        "{mean:.4} attempts at the database per request, expected {expected:.4} ({measured:?})"
    );
    // Each edge's own rescue rate: a call on it retries when its first
    // try fails (q, the chance a call below fails: p at the database,
    // p⁴ at c), and its 3 retries rescue it unless all fail: 1 − q³.
    // Each call is a Bernoulli trial, so both shares are held to four
    // binomial standard errors (about 24,000 calls at c → db over the
    // seeds, 18,000 at b → c: from 0.2 % to 1.3 % of the share).
    let within = |edge: &str, what: &str, k: u64, n: u64, want: f64| {
        let (got, sd) = (k as f64 / n as f64, (want * (1.0 - want) / n as f64).sqrt());
        assert!(
            (got - want).abs() < 4.0 * sd,
            "{edge}: {what} {got:.4} of {n}, expected {want:.4} ± {:.4}",
            4.0 * sd
        );
    };
    for ((edge, q), (calls, retried, rescued)) in
        [("b->c", p.powi(4)), ("c->db", p)].into_iter().zip(rescues)
    {
        within(edge, "retried", retried, calls, q);
        within(edge, "rescued", rescued, retried, 1.0 - q.powi(3));
    }
}

/// An open network of exponential servers: `a` (2 cores, 15 ms) does its
/// work and calls `b` (1 core, 6 ms), then on half the requests `c`
/// (1 core, 10 ms). Departures of an M/M/c queue are Poisson (Burke), so
/// each node is an M/M/c queue at its own rate and the end-to-end mean is
/// the sum of the mean sojourns along the visits (Jackson).
#[test]
fn an_open_network_of_exponential_services_matches_jackson() {
    let node = |cores, mean_ms, calls| ServiceConfig {
        pods: 1,
        cores: Some(cores),
        work: Some(exp(ms(mean_ms))),
        calls,
        ..Default::default()
    };
    let lambda = 100.0;
    let sojourn = |c: u32, lambda: f64, mean_ms: f64| {
        let mu = 1000.0 / mean_ms;
        mmc_mean_wait(c, lambda, mu) + 1.0 / mu
    };
    let (wa, wb, wc) = (
        sojourn(2, lambda, 15.0),
        sojourn(1, lambda, 6.0),
        sojourn(1, lambda / 2.0, 10.0),
    );
    let (mut b, mut c, mut e2e) = (Vec::new(), Vec::new(), Vec::new());
    for seed in [1, 2, 3, 4] {
        let mut cfg = ten_minutes_into_a(seed, lambda);
        let half = CallSpec {
            probability: 0.5,
            ..call("c", ClientConfig::default())
        };
        cfg.services.insert(
            "a".into(),
            node(2, 15, vec![call("b", ClientConfig::default()), half]),
        );
        cfg.services.insert("b".into(), node(1, 6, vec![]));
        cfg.services.insert("c".into(), node(1, 10, vec![]));
        let (nodes, totals) = go(&cfg);
        b.push(nodes.mean_latency("b"));
        c.push(nodes.mean_latency("c"));
        e2e.push(totals.latency(Latency::EndToEnd).mean().unwrap() / 1e9);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    for (what, got, want) in [
        ("b", mean(&b), wb),
        ("c", mean(&c), wc),
        ("end to end", mean(&e2e), wa + wb + 0.5 * wc),
    ] {
        within(
            got,
            want,
            0.02,
            &format!("{what}'s mean sojourn against Jackson's"),
        );
    }
}

/// A service whose one worker makes its call on half its requests and
/// answers the other half at once is an M/G/1 queue: service time 0 or an
/// exponential 10 ms, E[S] = 5 ms, E[S²] = ½ · 2 · (10 ms)². At λ = 100/s
/// (ρ = ½) Pollaczek–Khinchine's mean wait is λE[S²] / 2(1 − ρ) = 10 ms,
/// so a request spends 15 ms on average. The requests that make no call
/// leave the worker line as the others do, so the line keeps its count.
#[test]
fn a_worker_whose_requests_sometimes_call_nothing_is_pollaczek_khinchine() {
    let (lambda, mean_s) = (100.0, 0.010);
    let mut e2e = Vec::new();
    for seed in [1, 2, 3, 4] {
        let mut cfg = ten_minutes_into_a(seed, lambda);
        let half = CallSpec {
            probability: 0.5,
            ..call("db", ClientConfig::default())
        };
        cfg.services.insert(
            "a".into(),
            ServiceConfig {
                workers: Some(1),
                worker_queue: 1_000_000,
                ..service(1, vec![half])
            },
        );
        cfg.dependencies.insert(
            "db".into(),
            UpstreamConfig {
                capacity: 100_000,
                latency: exp(ms(10)),
                ..Default::default()
            },
        );
        stop_load_at(&mut cfg, secs(590));
        let (_, totals) = go(&cfg);
        assert_eq!(
            totals.outcome(sim_models::outcome::Reason::Success),
            totals.count(sim_models::recorder::Count::Offered),
            "seed {seed}: every request answered"
        );
        e2e.push(totals.latency(Latency::EndToEnd).mean().unwrap() / 1e9);
    }
    let (es, es2) = (0.5 * mean_s, 0.5 * 2.0 * mean_s * mean_s);
    let rho = lambda * es;
    let wait = lambda * es2 / (2.0 * (1.0 - rho));
    let got = e2e.iter().sum::<f64>() / e2e.len() as f64;
    within(got, wait + es, 0.03, "the mean time in system against P-K");
}

/// Ten minutes of `lambda` Poisson arrivals into the service `a`.
pub(crate) fn ten_minutes_into_a(seed: u64, lambda: f64) -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.seed = seed;
    cfg.clock.duration = secs(600);
    cfg.clock.bucket = secs(60);
    cfg.load.rate = lambda;
    cfg.entry = Some("a".into());
    cfg
}

/// Fails unless `got` is within `tolerance` (a share) of `want`.
fn within(got: f64, want: f64, tolerance: f64, what: &str) {
    assert!(
        (got / want - 1.0).abs() < tolerance,
        "{what}: {:.3} ms, the closed form says {:.3} ms",
        got * 1e3,
        want * 1e3
    );
}

/// Puts `a` in `cfg`, each of its requests holding its worker for
/// `hold`: its own work, or (`by_call`) a call to a dependency `db` that
/// never makes anyone wait.
pub(crate) fn hold_at_a(
    cfg: &mut WorldConfig,
    mut a: ServiceConfig,
    hold: DistSpec,
    by_call: bool,
) {
    if by_call {
        a.calls.push(call("db", ClientConfig::default()));
        cfg.dependencies.insert(
            "db".into(),
            UpstreamConfig {
                capacity: 100_000,
                latency: hold,
                ..Default::default()
            },
        );
    } else {
        a.work = Some(hold);
    }
    cfg.services.insert("a".into(), a);
}

/// An attempt times out exactly at its timeout, to the nanosecond: behind
/// T = 12,345,678 ns, a dependency of mean 1,000 s answers nobody in time,
/// so every call's attempt, and every user's request, takes exactly T.
#[test]
fn an_attempt_times_out_exactly_at_its_timeout() {
    let t = SimDuration::from_nanos(12_345_678);
    let mut cfg = ten_minutes_into_a(3, 50.0);
    cfg.clock.duration = secs(60);
    let client = ClientConfig {
        attempt_timeout: Some(t),
        ..Default::default()
    };
    cfg.services
        .insert("a".into(), service(1, vec![call("db", client)]));
    cfg.dependencies.insert(
        "db".into(),
        UpstreamConfig {
            capacity: 100_000,
            latency: exp(secs(1000)),
            ..Default::default()
        },
    );
    let (nodes, totals) = go(&cfg);
    let e2e = totals.latency(Latency::EndToEnd);
    assert!(e2e.count() > 2_500, "{} requests", e2e.count());
    assert_eq!(
        (e2e.min(), e2e.max()),
        (Some(t.as_nanos()), Some(t.as_nanos()))
    );
    let edge = nodes.of("a->db").map(|r| r.latency);
    for l in edge.filter(|l| l.count > 0) {
        assert_eq!(l.mean, Some(t.as_nanos() as f64));
    }
}

/// A request fanning out to k = 4 calls at once, each an exponential
/// 20 ms (a service with unbounded workers and cores: M/M/∞): waiting for
/// all takes the maximum of 4 exponentials, `20 ms × H₄`; waiting for the
/// first takes the minimum, `20 ms / 4`.
#[test]
fn a_fan_out_waits_for_the_maximum_or_the_first_of_k_exponentials() {
    let k = 4u32;
    let m = 0.020;
    for (wait_for, want) in [
        (k, m * (1..=k).map(|i| 1.0 / f64::from(i)).sum::<f64>()),
        (1, m / f64::from(k)),
    ] {
        let mut got = Vec::new();
        for seed in [1, 2, 3] {
            let mut cfg = WorldConfig::default();
            cfg.seed = seed;
            cfg.clock.duration = secs(200);
            cfg.clock.bucket = secs(20);
            cfg.load.rate = 200.0;
            cfg.entry = Some("api".into());
            let group = CallSpec {
                parallel: (0..k)
                    .map(|_| call("leaf", ClientConfig::default()))
                    .collect(),
                wait_for: Some(wait_for),
                ..Default::default()
            };
            cfg.services.insert("api".into(), service(1, vec![group]));
            cfg.services.insert(
                "leaf".into(),
                ServiceConfig {
                    pods: 4,
                    work: Some(exp(ms(20))),
                    ..Default::default()
                },
            );
            let (nodes, totals) = go(&cfg);
            got.push(totals.latency(Latency::EndToEnd).mean().unwrap() / 1e9);
            if wait_for == k {
                // Every call of every request reached the leaf.
                let offered = nodes.total("api", |r| r.offered);
                assert_eq!(nodes.total("leaf", |r| r.offered), u64::from(k) * offered);
            }
        }
        let mean = got.iter().sum::<f64>() / got.len() as f64;
        within(
            mean,
            want,
            0.02,
            &format!("wait for {wait_for} of {k} ({got:?})"),
        );
    }
}

/// `a → b → db`, the database answering in 2 s, `a`'s attempts timing
/// out at 300 ms (`to_b`'s other fields as given), `b` calling with
/// `to_db` and listening for cancellation when `b_cancels`.
fn slow_chain(to_b: ClientConfig, to_db: ClientConfig, b_cancels: bool) -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(30);
    cfg.clock.bucket = secs(10);
    cfg.load.rate = 50.0;
    cfg.entry = Some("a".into());
    let to_b = ClientConfig {
        attempt_timeout: Some(ms(300)),
        ..to_b
    };
    cfg.services
        .insert("a".into(), service(1, vec![call("b", to_b)]));
    let mut b = service(1, vec![call("db", to_db)]);
    b.cancellation = b_cancels;
    cfg.services.insert("b".into(), b);
    cfg.dependencies.insert(
        "db".into(),
        UpstreamConfig {
            capacity: 10_000,
            latency: DistSpec::Constant(secs(2)),
            cancellation: true,
            ..Default::default()
        },
    );
    cfg
}

/// A deadline propagated to a service travels with the request: `b`
/// stops working on it when its caller's attempt would have timed out
/// (its worker freed at 300 ms), and its own call to the slow database
/// is capped by it; without propagation, `b` works on for nobody until
/// the database answers, 2 s later.
#[test]
fn a_propagated_deadline_cuts_the_work_of_the_service_called() {
    let b_latency = |propagate: bool| {
        let client = ClientConfig {
            attempt_timeout: Some(secs(10)),
            propagate_deadline: propagate,
            ..Default::default()
        };
        let (nodes, _) = go(&slow_chain(client.clone(), client, false));
        (nodes.mean_latency("b"), nodes.total("b", |r| r.failed))
    };
    let (cut, cut_calls) = b_latency(true);
    let (orphaned, _) = b_latency(false);
    assert!(
        (cut - 0.3).abs() < 0.001,
        "b's requests took {cut:.3} s with the deadline"
    );
    assert!(
        (orphaned - 2.0).abs() < 0.01,
        "b's requests took {orphaned:.3} s without it"
    );
    // 50 requests/s for 30 s, each cut at its deadline.
    assert!(
        cut_calls > 1_000,
        "b failed {cut_calls} requests at their deadline"
    );
}

/// A service with `cancellation` stops when its caller gives up: `b`'s
/// requests end when `a`'s attempts time out (300 ms), its own calls are
/// cut with them, and the database (with its own `cancellation`) drops
/// the work; without it, `b` works on for nobody until the database
/// answers, 2 s later.
#[test]
fn a_cancelled_caller_cancels_the_work_below_it_when_the_service_listens() {
    let run_with = |cancellation: bool| {
        let client = ClientConfig::default();
        let (nodes, totals) = go(&slow_chain(client.clone(), client, cancellation));
        (
            nodes.mean_latency("b"),
            totals.count(sim_models::recorder::Count::UpstreamCancelled),
            totals.count(sim_models::recorder::Count::LateResponses),
        )
    };
    let (cut, cancelled, late) = run_with(true);
    let (orphaned, none, late_orphans) = run_with(false);
    assert!(
        (cut - 0.3).abs() < 0.001,
        "b's requests took {cut:.3} s when cancelled"
    );
    assert!(
        (orphaned - 2.0).abs() < 0.01,
        "b's requests took {orphaned:.3} s without"
    );
    assert!(
        cancelled > 1_000 && none == 0,
        "database work cancelled: {cancelled} and {none}"
    );
    // A cancelled request sends no answer; an orphaned one answers late.
    assert!(
        late < late_orphans / 10,
        "late answers {late} against {late_orphans}"
    );
}

/// A timeline's pod actions reach any service of a graph: restarting
/// `b`'s only pod fails the requests it holds (`a`'s attempts see a reset
/// connection, and `a`, which does not retry, fails them), and nothing is
/// served until it is back (a restart takes 30 s by default).
#[test]
fn a_pod_below_the_entry_restarts_when_the_timeline_names_its_service() {
    let chain = |restart: Option<&str>| {
        let client = retrying(0);
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(60);
        cfg.clock.bucket = secs(10);
        cfg.load.rate = 100.0;
        cfg.entry = Some("a".into());
        cfg.services
            .insert("a".into(), service(2, vec![call("b", client.clone())]));
        cfg.services
            .insert("b".into(), service(1, vec![call("db", client)]));
        cfg.dependencies.insert(
            "db".into(),
            UpstreamConfig {
                capacity: 10_000,
                latency: DistSpec::Constant(ms(200)),
                ..Default::default()
            },
        );
        if let Some(name) = restart {
            cfg.timeline.push(TimelineEntry {
                restart_pod: Some(0),
                service: Some(name.into()),
                ..TimelineEntry::at_offset(secs(12))
            });
        }
        go(&cfg)
    };
    let (nodes, totals) = chain(Some("b"));
    let (calm, calm_totals) = chain(None);
    use sim_models::outcome::Reason;
    use sim_models::recorder::Count;
    assert_eq!(totals.count(Count::PodRestarts), 1);
    assert_eq!(calm_totals.count(Count::PodRestarts), 0);
    // b held about 100/s × 200 ms = 20 requests, each failed by the
    // restart, and for the 30 s it is down a's calls find no pod there
    // (about 3,000 more).
    let failed = nodes.total("b", |r| r.failed);
    assert!(
        (2_800..3_200).contains(&failed),
        "b failed {failed} requests"
    );
    assert_eq!(calm.total("b", |r| r.failed), 0);
    let (served, calm_served) = (
        totals.outcome(Reason::Success) as f64,
        calm_totals.outcome(Reason::Success) as f64,
    );
    // Down for 30 s of 60: about half served, against all of them.
    assert!(calm_served > 5_800.0, "calm: {calm_served}");
    let share = served / calm_served;
    assert!((0.45..0.55).contains(&share), "served {share:.3} of calm");
}

/// A deploy in a graph changes the call and the dependency it names, and
/// only them: at 10 s `a`'s (optional) call to `db` stops retrying and
/// `db` starts failing every request; `b`'s call to `db`, which the deploy
/// does not name, keeps its 3 retries (4 attempts per call).
#[test]
fn a_graph_deploy_changes_the_call_and_the_dependency_it_names() {
    use sim_models::timeline::Deploy;
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(20);
    cfg.clock.bucket = secs(10);
    cfg.load.rate = 100.0;
    cfg.entry = Some("a".into());
    let mut first = call("db", retrying(3));
    first.optional = true;
    cfg.services
        .insert("a".into(), service(1, vec![first, call("b", retrying(0))]));
    cfg.services
        .insert("b".into(), service(1, vec![call("db", retrying(3))]));
    let db = UpstreamConfig {
        capacity: 10_000,
        latency: DistSpec::Constant(ms(1)),
        ..Default::default()
    };
    cfg.dependencies.insert("db".into(), db.clone());
    let mut failing = db;
    failing.errors.http_500 = 1.0;
    cfg.timeline.push(TimelineEntry {
        deploy: Some(Deploy {
            call: Some("services.a.calls[0]".into()),
            client: Some(retrying(0)),
            dependency: Some("db".into()),
            upstream: Some(failing),
        }),
        ..TimelineEntry::at_offset(secs(10))
    });
    let (nodes, _) = go(&cfg);
    let in_bucket = |name: &str, bucket: u64, f: fn(&NodeRow) -> u64| {
        nodes
            .of(name)
            .filter(|r| r.bucket == bucket)
            .map(f)
            .sum::<u64>()
    };
    // Before: every call answered at once, one attempt each.
    for edge in ["a->db", "a->b", "b->db"] {
        assert_eq!(in_bucket(edge, 0, |r| r.retries), 0, "{edge}");
    }
    // After: every attempt at db fails; a's call to it is not retried,
    // b's is, three times.
    let calls = in_bucket("a->db", 1, |r| r.offered);
    assert!(calls > 900, "a->db calls {calls}");
    assert_eq!(in_bucket("a->db", 1, |r| r.attempts), calls);
    assert_eq!(in_bucket("a->db", 1, |r| r.failed), calls);
    let b_calls = in_bucket("b->db", 1, |r| r.offered);
    assert!(b_calls + 5 >= calls, "b->db calls {b_calls} of {calls}");
    let b_attempts = in_bucket("b->db", 1, |r| r.attempts);
    assert!(
        b_attempts + 20 >= 4 * b_calls && b_attempts <= 4 * b_calls,
        "b->db: {b_attempts} attempts for {b_calls} calls"
    );
}

/// With one call and one dependency, the recorder takes that call's pool
/// levels and attempt latencies, and the dependency's levels, from the
/// run's totals instead of recording them a second time per request;
/// with one pod group too, that group's levels and pool waits. A
/// second call that is never made (probability 0), to a second
/// dependency, makes it record the nodes and the group on their own: the
/// rows must be the same, bucket by bucket (the figures recorded on their
/// own are the reference).
#[test]
fn one_call_node_rows_taken_from_the_totals_equal_those_recorded_per_node() {
    one_call_rows_equal_with_pod_groups(1);
    one_call_rows_equal_with_pod_groups(2);
}

/// [`one_call_node_rows_taken_from_the_totals_equal_those_recorded_per_node`]
/// with the entry's pods in `groups` groups: with one, the group's rows
/// are the totals'; with more, the totals' pool waits are the groups'.
fn one_call_rows_equal_with_pod_groups(groups: u32) {
    let world = |second_call: bool| {
        let mut cfg = WorldConfig::default();
        cfg.seed = 11;
        cfg.clock.duration = secs(60);
        cfg.clock.bucket = secs(5);
        cfg.load.rate = 400.0;
        cfg.entry = Some("app".into());
        // A small pool and a slow, failing dependency: waits, retries,
        // queueing and a latency pulse, so every mirrored figure moves.
        let mut db_call = call("db", retrying(2));
        db_call.pool = Some(PoolConfig {
            max_connections: 5,
            connect_time: DistSpec::Constant(SimDuration::ZERO),
            ..Default::default()
        });
        let mut calls = vec![db_call];
        if second_call {
            let mut never = call("cache", retrying(0));
            never.probability = 0.0;
            calls.push(never);
        }
        let mut app = service(2, calls);
        app.pod_groups = Some(groups);
        cfg.services.insert("app".into(), app);
        let mut db = UpstreamConfig {
            capacity: 6,
            latency: exp(ms(4)),
            ..Default::default()
        };
        db.errors.http_500 = 0.05;
        cfg.dependencies.insert("db".into(), db);
        if second_call {
            cfg.dependencies
                .insert("cache".into(), UpstreamConfig::default());
        }
        // The db three times slower from 20 s to 30 s.
        for (at, scale) in [(20, 3.0), (30, 1.0)] {
            cfg.timeline.push(TimelineEntry {
                set: Some(SetAction {
                    param: ParamRef {
                        param: Param::UpstreamLatencyScale,
                        node: Some("db".into()),
                    },
                    value: scale,
                }),
                ..TimelineEntry::at_offset(secs(at))
            });
        }
        run(&cfg, Nodes::default()).unwrap_or_else(|e| panic!("{e}"))
    };
    let (mirrored_run, per_node_run) = (world(false), world(true));
    let pool_wait = |t: &RunTotals| LatencySummary::of(t.latency(Latency::PoolWait));
    assert_eq!(
        pool_wait(&mirrored_run.totals),
        pool_wait(&per_node_run.totals)
    );
    assert!(pool_wait(&mirrored_run.totals).count > 0);
    let (mirrored, per_node) = (mirrored_run.sink, per_node_run.sink);
    assert_eq!(per_node.total("app->cache", |r| r.offered), 0);
    // The node's place among all nodes and among its kind differ: the
    // second world has two more nodes, `cache` sorting before `db`.
    let rows = |nodes: &Nodes, name: &str| -> Vec<NodeRow> {
        nodes
            .of(name)
            .map(|r| NodeRow {
                slot: 0,
                index: 0,
                ..r.clone()
            })
            .collect()
    };
    for name in ["app->db", "db"] {
        let (a, b) = (rows(&mirrored, name), rows(&per_node, name));
        assert_eq!(a.len(), 12, "{name}: one row per bucket");
        assert_eq!(a, b, "{name}");
    }
    // The figures taken from the totals did move.
    let edge = rows(&mirrored, "app->db");
    assert!(edge.iter().any(|r| r.waiting.max > 0), "attempts waited");
    assert!(edge.iter().all(|r| r.latency.count > 0 && r.busy.max > 0));
    assert!(mirrored.total("app->db", |r| r.retries) > 0);
    assert!(rows(&mirrored, "db").iter().any(|r| r.waiting.max > 0));
    // The one pod group's rows, taken from the totals, against the rows
    // recorded for the group on its own.
    assert_eq!(mirrored.groups.len(), 12);
    assert!(mirrored.groups.iter().all(|g| g.len() == groups as usize));
    assert_eq!(mirrored.groups, per_node.groups);
    assert_eq!(mirrored.waits, per_node.waits);
    let group = mirrored.groups.iter().map(|g| &g[0]);
    assert!(group.clone().any(|g| g.waiters.max > 0 && g.wait.count > 0));
    assert!(group.clone().all(|g| g.in_use.max > 0));
}

/// Each edge keeps its own count of calls waiting in its bulkheads'
/// lines, and the world's level is their sum. Service `a` calls `db1`
/// with a bulkhead of 2 places and a line bounded by a 50 ms wait, then
/// `db2` with one of 2 places that keeps no line, at 20 calls/s of 100 ms
/// each (2 places hold 20 calls/s at most: both are full often).
#[test]
fn each_edge_counts_the_calls_in_its_bulkheads_line() {
    use sim_models::outcome::Reason;
    use sim_models::policy::bulkhead::BulkheadSpec;
    use sim_models::recorder::{Level, NodeKind};
    let mut cfg = ten_minutes_into_a(3, 20.0);
    cfg.clock.duration = secs(120);
    cfg.clock.bucket = secs(10);
    let bulkhead = |spec| ClientConfig {
        attempt_timeout: None,
        bulkhead: Some(spec),
        ..Default::default()
    };
    let waits = BulkheadSpec {
        max_wait: Some(ms(50)),
        ..BulkheadSpec::places(2)
    };
    cfg.services.insert(
        "a".into(),
        service(
            1,
            vec![
                call("db1", bulkhead(waits)),
                call("db2", bulkhead(BulkheadSpec::places(2))),
            ],
        ),
    );
    for db in ["db1", "db2"] {
        let mut up = failing(0.0);
        up.latency = exp(ms(100));
        cfg.dependencies.insert(db.into(), up);
    }
    let (nodes, totals) = go(&cfg);
    assert!(totals.outcome(Reason::BulkheadFull) > 0);
    let line =
        |name: &str| -> Vec<f64> { nodes.of(name).map(|r| r.bulkhead_waiting.mean).collect() };
    let (db1, db2) = (line("a->db1"), line("a->db2"));
    assert!(
        db1.iter().all(|m| *m > 0.0),
        "calls waited at a->db1: {db1:?}"
    );
    assert!(db2.iter().all(|m| *m == 0.0), "none at a->db2: {db2:?}");
    for (b, row) in nodes.buckets.iter().enumerate() {
        let world = row.level(Level::BulkheadWaiting);
        assert!((world.mean - db1[b]).abs() < 1e-9, "bucket {b}");
    }
    assert!(
        nodes
            .rows
            .iter()
            .filter(|r| r.kind != NodeKind::Edge)
            .all(|r| r.bulkhead_waiting.max == 0)
    );
}
