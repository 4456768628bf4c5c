//! The world against closed forms on parameters drawn from a seed:
//! Jackson's theorem on drawn networks, the M/M/c/K queue for a pod's
//! worker line and a dependency's slots and queue, Erlang C for a call's
//! pool (and the health probes that fail on the age of either's oldest
//! waiter), the closed form of retries down a chain, the order statistics
//! of exponentials for hedged calls and fan-outs, timeouts retried as a
//! race against the clock (with the work left behind by callers who gave
//! up), closed-loop users as the machine-repairman model, a round-robin
//! balancer's pods as GI/M/1 queues (Poisson or evenly spaced arrivals;
//! their probes too), the work in flight through a timeline's step as the
//! M/M/∞ queue's transient, retries into a queue as a Jackson network with
//! feedback, a count-based breaker as a renewal process, one worker under
//! drawn service laws as M/G/1 (Pollaczek–Khinchine), a dependency's load
//! law (the Universal Scalability Law or the linear one) under a closed
//! loop as its throughput curve X(N), a pool whose waiters give up as
//! M/M/c+D, token retry budgets (gRPC, AWS, Brooker, a plain bucket) as the
//! Markov chains their write-ups define, Envoy's concurrency budget as
//! Erlang's loss system, a rate limit's token bucket as an M/D/1 queue
//! of work that balks, and Google SRE's adaptive throttle before such a
//! bucket as the fixed point of its refusal rule.
//!
//! Each test draws its own parameters ([`on_draws`]: 8 draws in the
//! suite, more with its variable), runs each draw on a few seeds, and
//! compares each figure with its closed form within 4.5 standard errors
//! from minute batches ([`off_theory`]). Each doc comment gives what its
//! errors over their standard errors did over hundreds of draws, and a
//! wrong theory the test fails.

use sim_core::dist::DistSpec;
use sim_core::theory::{erlang_c, mmc_mean_wait, mmc_patience, mmck};
use sim_core::time::SimDuration;
use sim_models::config::{CallSpec, ClientConfig, PoolConfig, ServiceConfig, UpstreamConfig};
use sim_models::policy::backoff::Backoff;
use sim_models::recorder::{Count, LatencySummary, Level, NodeRow};
use sim_models::timeline::{Param, ParamRef, SetAction, TimelineEntry};

use crate::common::{ms, secs};
use crate::graphs::{
    call, exp, failing, go, hold_at_a, retrying_every_failure, service, ten_minutes_into_a,
};

/// Jackson's theorem on networks drawn from a seed: two to five services
/// in a line of callers (each calls services after it, each call made
/// with its own probability, so flows split and merge, and a service may
/// call the same one twice), each service doing exponential work on a
/// few cores, on one pod or on several a random balancer picks among (a
/// Poisson flow split at random stays Poisson). Each pod is then an
/// M/M/c queue at its share of the service's rate, and a service's mean
/// time from a request reaching a pod to its answer is its own sojourn
/// plus, for each call, the call's probability times the mean time of the
/// service called (an arrival sees a node as it is on average, whichever
/// caller it comes from). Every service's mean, and the users'
/// end-to-end mean, must match.
///
/// Each network runs on 4 seeds of its own for 10 minutes, utilisations
/// drawn from 0.3 to 0.7. The means' noise differs a lot from node to
/// node (a slow node near 0.7 relaxes in seconds), so each check allows
/// 4.5 standard errors, estimated from the minute buckets as batch means
/// (36 of them, each much longer than any node's relaxation time; the
/// first minute of each run is left out, as the network starts empty).
/// Over 1,000 networks (`STORMSIM_JACKSON_NETWORKS`; 8 here) the 3,043
/// errors divided by their standard errors had a mean of −0.01 and a
/// standard deviation of 0.99, none beyond ±3.5: the model has no bias
/// this finds, and its means are as noisy as the batches say.
#[test]
fn random_open_networks_of_exponential_services_match_jackson() {
    use sim_models::pods::BalancerKind;

    on_draws("STORMSIM_JACKSON_NETWORKS", 0x9e37_79b9, |net, draw| {
        let lambda = 40.0 + 20.0 * draw(6) as f64;
        let n = 2 + draw(4) as usize;
        // Who calls whom, with what chance; each service's rate.
        let mut calls: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
        let mut rate = vec![0.0; n];
        rate[0] = lambda;
        for i in 0..n - 1 {
            for _ in 0..draw(3) {
                let to = i + 1 + draw((n - i - 1) as u64) as usize;
                let p = [1.0, 0.5, 0.3][draw(3) as usize];
                calls[i].push((to, p));
                rate[to] += p * rate[i];
            }
        }
        // Each service's pods, cores and work (whole microseconds, so the
        // work's mean is the one the theory uses), and its own sojourn.
        let mut own = vec![0.0; n];
        let mut shapes = Vec::new();
        for i in 0..n {
            let pods = if draw(3) == 0 { 1 + draw(3) as u32 } else { 1 };
            let cores = 1 + draw(4) as u32;
            let rho = 0.3 + 0.1 * draw(5) as f64;
            let per_pod = rate[i] / f64::from(pods);
            let mean_us = if per_pod > 0.0 {
                (rho * f64::from(cores) / per_pod * 1e6).round()
            } else {
                1000.0
            };
            let mu = 1e6 / mean_us;
            if per_pod > 0.0 {
                own[i] = mmc_mean_wait(cores, per_pod, mu) + 1.0 / mu;
            }
            shapes.push((pods, cores, mean_us as u64));
        }
        // A service's mean time: its own, then its calls' (the services
        // after it are done first).
        let mut want = own;
        for i in (0..n).rev() {
            want[i] += calls[i].iter().map(|&(to, p)| p * want[to]).sum::<f64>();
        }
        // Per service, and end to end last: each minute's (count, sum).
        let mut batches: Vec<Vec<(f64, f64)>> = vec![Vec::new(); n + 1];
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(net * 4 + seed, lambda);
            for (i, &(pods, cores, mean_us)) in shapes.iter().enumerate() {
                let spec = calls[i]
                    .iter()
                    .map(|&(to, p)| CallSpec {
                        probability: p,
                        ..call(&name(to), ClientConfig::default())
                    })
                    .collect();
                cfg.services.insert(
                    name(i),
                    ServiceConfig {
                        balancer: BalancerKind::Random,
                        cores: Some(cores),
                        work: Some(exp(SimDuration::from_micros(mean_us))),
                        ..service(pods, spec)
                    },
                );
            }
            let (nodes, _) = go(&cfg);
            for (i, b) in batches.iter_mut().take(n).enumerate() {
                b.extend(nodes.of(&name(i)).skip(1).map(|r| seconds(&r.latency)));
            }
            batches[n].extend(nodes.e2e.iter().skip(1).map(seconds));
        }
        want.push(want[0]);
        let names: Vec<String> = (0..n).map(name).chain(["end to end".into()]).collect();
        let checks: Vec<Check<'_>> = (0..=n)
            .filter(|&i| i == n || rate[i] > 0.0)
            .map(|i| (names[i].as_str(), &batches[i][..], want[i], None))
            .collect();
        let what = format!(
            "network {net} ({n} services, {lambda}/s, calls {calls:?}, \
             pods/cores/work µs {shapes:?}), seconds"
        );
        off_theory(&what, "Jackson", &checks)
    });

    /// The `i`th service's name, `a` the entry.
    fn name(i: usize) -> String {
        char::from(b'a' + i as u8).to_string()
    }
}

/// The share of health probes that fail on a pod whose line is the
/// M/M/c/K queue with state probabilities `p` (a probe, at a time set
/// by the clock alone, sees them as they are on average): the oldest in
/// line has waited past the timeout τ when one of the (n − c)⁺ in line
/// τ ago is still in line, so when fewer than (n − c)⁺ of the c busy
/// servers' completions came since (a Poisson count N of mean
/// `c_mu_tau` = cμτ: they stay busy while anyone waits). Σ over n of
/// p_n·P(N ≤ n − c − 1).
fn probes_failing(p: &[f64], c: u32, c_mu_tau: f64) -> f64 {
    let mut below = 0.0; // P(N ≤ q − 1), q in line
    let mut term = (-c_mu_tau).exp(); // P(N = q − 1)
    let mut fails = 0.0;
    for (j, p_n) in p.iter().skip(c as usize + 1).enumerate() {
        if j > 0 {
            term *= c_mu_tau / j as f64;
        }
        below += term;
        fails += p_n * below;
    }
    fails
}

/// How often the checks' pods are probed.
const PROBE_PERIOD: SimDuration = SimDuration::from_millis(50);

/// Health probes every [`PROBE_PERIOD`] that fail past `timeout_us` and
/// never restart a pod or take it out of rotation: only counted.
fn probing(timeout_us: u64) -> sim_models::pods::HealthConfig {
    sim_models::pods::HealthConfig {
        period: PROBE_PERIOD,
        timeout: SimDuration::from_micros(timeout_us),
        failure_threshold: u32::MAX,
        ..Default::default()
    }
}

/// Each bucket past the first as a batch of (probes, probes failed): a
/// pod's probes, one a period from a fixed offset, fall exactly span ÷
/// period times in any bucket whose span the period divides.
fn probes_per_bucket(nodes: &crate::graphs::Nodes, pods: u32) -> Vec<(f64, f64)> {
    let period = PROBE_PERIOD.as_nanos();
    let past_first = nodes.buckets.iter().skip(1);
    past_first
        .map(|b| {
            assert_eq!(b.span.as_nanos() % period, 0, "a bucket the period divides");
            let probes = b.span.as_nanos() / period * u64::from(pods);
            (probes as f64, b.count(Count::ProbesFailed) as f64)
        })
        .collect()
}

/// Runs `check` on each draw `var` asks for (8 unless set): its index,
/// and whole numbers below `n` drawn from it (seeded by the index and
/// `salt`, so each test draws its own); fails naming whatever any draw
/// found off.
fn on_draws(var: &str, salt: u64, check: impl Fn(u64, &mut dyn FnMut(u64) -> u64) -> Vec<String>) {
    let draws = std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8u64);
    let mut failures = Vec::new();
    for d in 1..=draws {
        let mut state = d.wrapping_mul(salt);
        failures.extend(check(d, &mut |n| sim_core::rng::splitmix64(&mut state) % n));
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// One figure against its closed form: its name, its batches (count,
/// sum), the closed form's value, and, for a figure made of events that
/// can be rare (refusals, waits), how many of them a batch should see.
type Check<'a> = (&'a str, &'a [(f64, f64)], f64, Option<f64>);

/// What is off the closed form `theory` names: each check whose batches'
/// mean is more than 4.5 standard errors (and a thousandth) from its
/// value. A figure made of rare events is checked only when at least ten
/// a batch are expected: rarer ones come in a few bursts (a line fills,
/// or every connection is taken, once in a while, and many are refused
/// or wait then), too few for the batches to show how noisy they are.
fn off_theory(what: &str, theory: &str, checks: &[Check<'_>]) -> Vec<String> {
    let mut off = Vec::new();
    for &(name, batches, want, rare) in checks {
        if rare.is_some_and(|per_batch| per_batch < 10.0) {
            continue;
        }
        let (got, se) = ratio_mean(batches);
        if (got - want).abs() > 4.5 * se + 1e-3 * want {
            off.push(format!(
                "{what}: {name} {got:.6} (± {se:.6}), {theory}'s {want:.6}"
            ));
        }
    }
    off
}

/// A bucket's latencies as a batch of (count, sum in seconds).
fn seconds(l: &LatencySummary) -> (f64, f64) {
    let n = l.count as f64;
    (n, l.mean.unwrap_or(0.0) * n / 1e9)
}

/// The mean count of batches of (count, sum).
fn per_batch(batches: &[(f64, f64)]) -> f64 {
    batches.iter().map(|b| b.0).sum::<f64>() / batches.len() as f64
}

/// The mean of batches of (count, sum), and its standard error (the ratio
/// estimator's, from the batches' spread).
fn ratio_mean(batches: &[(f64, f64)]) -> (f64, f64) {
    let b = batches.len() as f64;
    let (n, sum) = batches
        .iter()
        .fold((0.0, 0.0), |(n, s), &(bn, bs)| (n + bn, s + bs));
    let mean = sum / n;
    let spread: f64 = batches
        .iter()
        .map(|&(bn, bs)| (bs - mean * bn).powi(2))
        .sum();
    (mean, (b / (b - 1.0) * spread).sqrt() / n)
}

/// The worker line as the M/M/c/K queue, on parameters drawn from a seed:
/// `c` workers per pod (1 to 8) and room for `K − c` more in line (0 to
/// 20), each request holding its worker for an exponential time (its
/// own work, or its call to a dependency that never makes it wait),
/// Poisson arrivals at half to one and a half times what the workers can
/// serve, on one pod or on several a random balancer picks among. A pod
/// with all K places taken refuses the request (`pod_overloaded`): the
/// share refused is the chance that all K are taken, p_K, and the mean
/// number of requests at the pods is Σ n·p_n per pod, with p_n ∝ aⁿ/n!
/// up to c and aⁿ/(c!·c^(n−c)) beyond, a the offered load per pod.
/// Health probes every 50 ms (counted, never restarting a pod) fail when
/// the oldest request in line has waited past a timeout τ of a quarter
/// to four times the mean hold over c: a share Σ p_n·P(N ≤ n − c − 1),
/// N the completions in τ, Poisson of mean cμτ ([`probes_failing`]).
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means, the
/// share refused and the probes failed only where they are not rare
/// ([`off_theory`]). Over 600 draws (`STORMSIM_MMCK_DRAWS`; 8 here) the
/// errors over their standard errors had means of 0.04 (refused, 518
/// checked) and 0.02 (held) and standard deviations of 1.02 and 1.00,
/// none beyond ±3.7: what a model with no bias and honest errors gives.
/// With the probes, 300 draws: probes failed −0.00 (278 checked), sd
/// 1.00, none beyond ±3.0 (refused 0.07, held −0.00). Taking a probe to
/// fail when a request arriving then would wait past τ (Σ from n = c)
/// fails 7 of the suite's 8 probe checks; τ 10 % longer in theory, 3.
#[test]
fn random_worker_lines_refuse_and_hold_as_mmck() {
    use sim_models::outcome::Reason;
    use sim_models::pods::BalancerKind;

    on_draws("STORMSIM_MMCK_DRAWS", 0x5851_f42d, |d, draw| {
        let mut failures = Vec::new();
        let c = 1 + draw(8) as u32;
        let k = c + draw(21) as u32;
        let pods = if draw(3) == 0 { 2 + draw(3) as u32 } else { 1 };
        let load = [0.5, 0.8, 1.0, 1.2, 1.5][draw(5) as usize];
        let hold_us = [5_000, 20_000, 50_000][draw(3) as usize];
        let by_call = draw(2) == 0;
        let hold = hold_us as f64 / 1e6;
        let a = load * f64::from(c);
        let lambda = a / hold * f64::from(pods);
        let p = mmck(c, k, a);
        let refused = p[k as usize];
        let held = p.iter().enumerate().map(|(n, p)| n as f64 * p).sum::<f64>() * f64::from(pods);
        let timeout_us = hold_us / u64::from(c) * [1, 2, 4, 8, 16][draw(5) as usize] / 4;
        let probe_fails = probes_failing(&p, c, f64::from(c) * timeout_us as f64 / hold_us as f64);

        let (mut shares, mut levels, mut probes) = (Vec::new(), Vec::new(), Vec::new());
        let mut unanswered = 0;
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, lambda);
            let hold = exp(SimDuration::from_micros(hold_us));
            let a = ServiceConfig {
                balancer: BalancerKind::Random,
                workers: Some(c),
                worker_queue: k - c,
                health: Some(probing(timeout_us)),
                ..service(pods, vec![])
            };
            hold_at_a(&mut cfg, a, hold, by_call);
            let (nodes, totals) = go(&cfg);
            probes.extend(probes_per_bucket(&nodes, pods));
            unanswered += totals.finished()
                - totals.outcome(Reason::Success)
                - totals.outcome(Reason::PodOverloaded);
            for r in nodes.of("a").skip(1) {
                shares.push((r.offered as f64, r.failed as f64));
                levels.push((1.0, r.busy.mean));
            }
        }
        let what = format!(
            "draw {d} (c {c}, K {k}, {pods} pods, load {load}, hold {hold_us} µs {}, probe timeout {timeout_us} µs)",
            if by_call { "in a call" } else { "as work" }
        );
        if unanswered > 0 {
            failures.push(format!("{what}: {unanswered} requests ended otherwise"));
        }
        let checks = [
            (
                "refused",
                &shares[..],
                refused,
                Some(refused * per_batch(&shares)),
            ),
            ("held", &levels, held, None),
            (
                "probes failed",
                &probes,
                probe_fails,
                Some(probe_fails * per_batch(&probes)),
            ),
        ];
        failures.extend(off_theory(&what, "M/M/c/K", &checks));
        failures
    });
}

/// A dependency's slots and queue as the M/M/c/K queue, on parameters
/// drawn from a seed: `c` slots (1 to 16), room for `K − c` more in its
/// queue (0 to 30), exponential service times, our Poisson attempts (one
/// each, no retries) and maybe other tenants' at a third of the rate, the
/// whole at half to one and a half times what the slots can serve.
/// Turned away at the door past the queue (503 at once, or dropped), our
/// share refused is p_K (Poisson arrivals see the queue as it is on
/// average), and the mean requests in a slot and in the queue are
/// Σ min(n, c)·p_n and Σ (n − c)⁺·p_n.
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means, the
/// share refused and the slots' level only where refusals and free slots
/// are not rare ([`off_theory`]). Over 500 draws (`STORMSIM_MMCK_DRAWS`;
/// 8 here) the errors over their standard errors had means of 0.06
/// (refused, 378 checked), 0.05 (in a slot, 455) and 0.07 (queued, 487
/// with a queue) and standard deviations of 1.00, 1.01 and 1.03, none
/// beyond ±3.4.
#[test]
fn random_dependency_queues_refuse_and_hold_as_mmck() {
    use sim_models::config::RetryConfig;
    use sim_models::dependency::OverflowAction;

    on_draws("STORMSIM_MMCK_DRAWS", 0x2545_f491, |d, draw| {
        let c = 1 + draw(16) as u32;
        let k = c + draw(31) as u32;
        let load = [0.5, 0.8, 1.0, 1.2, 1.5][draw(5) as usize];
        let hold_us = [5_000, 20_000, 50_000][draw(3) as usize];
        // Our attempts turned away are those answered otherwise, or, when
        // dropped (answered never), those the recorder counts dropped:
        // other tenants' too, so there are none then.
        let drop = draw(2) == 0;
        let tenants = !drop && draw(2) == 0;
        let a = load * f64::from(c);
        let lambda = a / (hold_us as f64 / 1e6);
        let ours = if tenants { lambda * 0.75 } else { lambda };
        let p = mmck(c, k, a);
        let refused = p[k as usize];
        // Slots short of full are what moves the first level: arrivals
        // that find one free are its events.
        let free: f64 = p[..c as usize].iter().sum();
        let (mut slots, mut queued) = (0.0, 0.0);
        for (n, p) in p.iter().enumerate() {
            slots += n.min(c as usize) as f64 * p;
            queued += n.saturating_sub(c as usize) as f64 * p;
        }

        let (mut shares, mut busy, mut waiting) = (Vec::new(), Vec::new(), Vec::new());
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, ours);
            // An attempt the dependency dropped holds its connection
            // until it times out: 2 s keeps the pool far from full.
            let once = ClientConfig {
                attempt_timeout: Some(secs(2)),
                retry: RetryConfig {
                    max_retries: 0,
                    ..Default::default()
                },
                ..Default::default()
            };
            cfg.services
                .insert("a".into(), service(1, vec![call("db", once)]));
            cfg.dependencies.insert(
                "db".into(),
                UpstreamConfig {
                    capacity: c,
                    queue_limit: k - c,
                    overflow: if drop {
                        OverflowAction::Drop
                    } else {
                        OverflowAction::Reject
                    },
                    latency: exp(SimDuration::from_micros(hold_us)),
                    background_rps: lambda - ours,
                    ..Default::default()
                },
            );
            let (nodes, _) = go(&cfg);
            for r in nodes.of("db").skip(1) {
                let away = if drop {
                    nodes.dropped[r.bucket as usize]
                } else {
                    r.failed
                };
                shares.push((r.offered as f64, away as f64));
                busy.push((1.0, r.busy.mean));
                waiting.push((1.0, r.waiting.mean));
            }
        }
        let what = format!(
            "draw {d} (c {c}, K {k}, load {load}, hold {hold_us} µs{}{})",
            if tenants { ", other tenants" } else { "" },
            if drop { ", dropped" } else { "" }
        );
        let checks = [
            (
                "refused",
                &shares[..],
                refused,
                Some(refused * per_batch(&shares)),
            ),
            ("in a slot", &busy, slots, Some(free * per_batch(&shares))),
            ("queued", &waiting, queued, None),
        ];
        off_theory(&what, "M/M/c/K", &checks)
    });
}

/// A call's connection pool as the M/M/c queue (Erlang C), on parameters
/// drawn from a seed: `c` connections per pod (1 to 12), or as many
/// multiplexed connections carrying 2 to 4 streams each (c·s servers:
/// connections of such a pool stay open), set up at once; calls
/// holding their connection for an exponential time at a dependency that
/// never makes them wait; Poisson arrivals at 0.3 to 0.9 of what the
/// connections can carry, on one pod or on several a random balancer
/// picks among. The mean wait for a connection is Erlang C's, the mean
/// number waiting λ times it (Little), and the connections in use the
/// offered load (one call per connection only). Health probes every
/// 50 ms (counted only) fail when the pod's oldest waiter has waited past
/// τ, a quarter to four times the mean hold over the s servers: a
/// share C·ρ·e^(−(sμ − λ)τ), from the waiters in line τ ago (Erlang C's
/// geometric line) not all reached by the Poisson completions since.
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means, the
/// waits and the probes failed only where they are not rare
/// ([`off_theory`]). Over 300 draws (`STORMSIM_MMC_DRAWS`; 8 here) the
/// errors over their standard errors had means of −0.03 (the wait, 288
/// checked), −0.03 (waiting) and 0.10 (in use, 214 pools of one stream a
/// connection), standard deviations of 1.04, 1.04 and 0.95, none beyond
/// ±3.4. With the probes, 300 draws: probes failed 0.03 (214 checked), sd
/// 1.00, one at −4.5 (a draw of 8 connections whose 20 other sets of 4
/// seeds gave 0.18, sd 1.19, none beyond ±2.7, and 40 seeds 0.06 %
/// from the formula). Taking a probe to fail when an attempt arriving then
/// would wait past τ (C·e^(−(sμ − λ)τ)) fails 7 of the suite's 7 probe
/// checks; τ 10 % longer in theory, 2.
#[test]
fn random_pools_wait_as_erlang_c() {
    use sim_models::pods::BalancerKind;

    on_draws("STORMSIM_MMC_DRAWS", 0x6a09_e667, |d, draw| {
        let c = 1 + draw(12) as u32;
        let streams = if draw(3) == 0 {
            Some(2 + draw(3) as u32)
        } else {
            None
        };
        let servers = c * streams.unwrap_or(1);
        let pods = if draw(3) == 0 { 2 + draw(3) as u32 } else { 1 };
        let rho = 0.3 + 0.1 * draw(7) as f64;
        let hold_us = [5_000, 20_000, 50_000][draw(3) as usize];
        let mu = 1e6 / hold_us as f64;
        let per_pod = rho * f64::from(servers) * mu;
        let wait = mmc_mean_wait(servers, per_pod, mu);
        let timeout_us = hold_us / u64::from(servers) * [1, 2, 4, 8, 16][draw(5) as usize] / 4;
        // The oldest waiter has waited past τ when one of those in line
        // τ ago is still in line: C·ρ·e^(−(sμ − λ)τ) (`probes_failing`
        // summed in closed form over Erlang C's geometric line).
        let probe_fails = erlang_c(servers, per_pod / mu)
            * rho
            * (-(f64::from(servers) * mu - per_pod) * timeout_us as f64 / 1e6).exp();

        let (mut waits, mut waiting, mut in_use, mut probes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, per_pod * f64::from(pods));
            let pool = PoolConfig {
                max_connections: c,
                connect_time: DistSpec::Constant(SimDuration::ZERO),
                idle_timeout: None,
                streams_per_connection: streams,
                ..Default::default()
            };
            let to_db = CallSpec {
                pool: Some(pool),
                ..call("db", ClientConfig::default())
            };
            cfg.services.insert(
                "a".into(),
                ServiceConfig {
                    balancer: BalancerKind::Random,
                    health: Some(probing(timeout_us)),
                    ..service(pods, vec![to_db])
                },
            );
            cfg.dependencies.insert(
                "db".into(),
                UpstreamConfig {
                    capacity: 100_000,
                    latency: exp(SimDuration::from_micros(hold_us)),
                    ..Default::default()
                },
            );
            let (nodes, _) = go(&cfg);
            probes.extend(probes_per_bucket(&nodes, pods));
            waits.extend(nodes.waits.iter().skip(1).map(seconds));
            for r in nodes.of("a->db").skip(1) {
                waiting.push((1.0, r.waiting.mean / f64::from(pods)));
                in_use.push((1.0, r.busy.mean / f64::from(pods)));
            }
        }
        let what = format!(
            "draw {d} ({c} connections{}, {pods} pods, ρ {rho:.1}, hold {hold_us} µs, probe timeout {timeout_us} µs)",
            streams.map_or(String::new(), |s| format!(" of {s} streams"))
        );
        // Attempts that wait, a batch.
        let waiting_ones = erlang_c(servers, per_pod / mu) * per_batch(&waits);
        let mut checks: Vec<Check<'_>> = vec![
            ("wait", &waits, wait, Some(waiting_ones)),
            ("waiting", &waiting, per_pod * wait, Some(waiting_ones)),
        ];
        if streams.is_none() {
            checks.push(("in use", &in_use, per_pod / mu, None));
        }
        let failing = probe_fails * per_batch(&probes);
        checks.push(("probes failed", &probes, probe_fails, Some(failing)));
        off_theory(&what, "Erlang C", &checks)
    });
}

/// Retries multiplied across tiers, on chains drawn from a seed: one to
/// four services in a line above a dependency that fails each attempt
/// with probability `p` (0.1 to 0.7, independently), each call retrying
/// every failure 0 to 4 times (at most 64 attempts in all), with a fixed,
/// zero or jittered exponential backoff. A call that makes `n + 1`
/// attempts, each failing with chance `q`, fails with chance `qⁿ⁺¹` and
/// makes `(1 − qⁿ⁺¹)/(1 − q)` attempts on average; a service fails when
/// its call does, so each tier's `q` is the failure chance of the call
/// below it. A user's request then puts the product of the tiers' means
/// on the dependency, and succeeds with chance `1 − q_top^(n_top + 1)`.
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets (past the first) as batch means. Over
/// 300 draws (`STORMSIM_RETRY_DRAWS`; 8 here) the errors over their
/// standard errors had means of −0.03 (attempts, 284 draws that retry)
/// and 0.04 (answered, 181 draws where some fail), standard deviations of
/// 1.01 and 1.07, none beyond ±3.3.
#[test]
fn random_retry_chains_multiply_attempts_as_the_closed_form() {
    use sim_models::policy::backoff::Jitter;

    on_draws("STORMSIM_RETRY_DRAWS", 0xbb67_ae85, |d, draw| {
        let tiers = 1 + draw(4) as usize;
        let p: f64 = [0.1, 0.3, 0.5, 0.7][draw(4) as usize];
        let mut retries = Vec::new();
        while retries.len() < tiers {
            let n = draw(5) as u32;
            let product: u32 = retries.iter().map(|r| r + 1).product();
            retries.push(if product * (n + 1) <= 64 { n } else { 0 });
        }
        let backoff = [
            Backoff::fixed(ms(1)),
            Backoff::fixed(SimDuration::ZERO),
            Backoff::exponential(ms(1), 2.0, Some(ms(20)), Jitter::Full),
        ][draw(3) as usize]
            .clone();
        // From the bottom up: each call's attempts and failure chance.
        let (mut q, mut attempts) = (p, 1.0);
        for &n in retries.iter().rev() {
            let fails = q.powi(n as i32 + 1);
            attempts *= (1.0 - fails) / (1.0 - q);
            q = fails;
        }
        let succeeds = 1.0 - q;

        let (mut at_db, mut answered) = (Vec::new(), Vec::new());
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, 50.0);
            for (i, &n) in retries.iter().enumerate() {
                let client = retrying_every_failure(n, backoff.clone());
                let below = if i + 1 < tiers {
                    tier(i + 1)
                } else {
                    "db".into()
                };
                cfg.services
                    .insert(tier(i), service(1, vec![call(&below, client)]));
            }
            cfg.dependencies.insert("db".into(), failing(p));
            let (nodes, _) = go(&cfg);
            let users: Vec<&NodeRow> = nodes.of("a").skip(1).collect();
            for (u, r) in users.iter().zip(nodes.of("db").skip(1)) {
                at_db.push((u.offered as f64, r.offered as f64));
                answered.push((u.offered as f64, (u.offered - u.failed) as f64));
            }
        }
        let what = format!("draw {d} (p {p}, retries {retries:?}, {backoff:?})");
        let checks: [Check<'_>; 2] = [
            (
                "attempts at the dependency per request",
                &at_db,
                attempts,
                None,
            ),
            ("share answered", &answered, succeeds, None),
        ];
        off_theory(&what, "the closed form", &checks)
    });

    /// The `i`th tier's name, `a` the top.
    fn tier(i: usize) -> String {
        char::from(b'a' + i as u8).to_string()
    }
}

/// The first answers of several exponentials, on calls drawn from a
/// seed: a call hedged (2 to 4 attempts, the i-th sent at i·d unless one
/// answered, d from 0 to twice the mean) to a dependency that never makes
/// anyone wait, whose answer comes at the minimum of the attempts' ends:
/// its mean is the integral of the product of their survivals,
/// `∫ Π exp(−(t − i·d)⁺/m) dt`, in closed form piece by piece; or a
/// fan-out of k calls (2 to 6) to a service with no limit on its work,
/// waiting for the first j of them: the j-th of k exponentials, whose
/// mean is `m · Σ 1/i` for i from k − j + 1 to k.
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means. Over
/// 300 draws (`STORMSIM_FIRST_DRAWS`; 8 here) the errors over their
/// standard errors had means of −0.04 (169 hedged calls) and 0.05 (131
/// fan-outs), standard deviations of 1.00 and 1.05, none beyond ±3.6.
#[test]
fn random_hedges_and_fan_outs_answer_as_order_statistics() {
    use sim_models::config::HedgingConfig;

    on_draws("STORMSIM_FIRST_DRAWS", 0x3c6e_f372, |d, draw| {
        let m = [0.005, 0.020][draw(2) as usize];
        let mean = SimDuration::from_secs_f64(m);
        let hedged = draw(2) == 0;
        let (what, want, top) = if hedged {
            let h = 2 + draw(3) as u32;
            let delay = m * [0.0, 0.25, 0.5, 1.0, 2.0][draw(5) as usize];
            // On [j·d, (j + 1)·d) the first j + 1 attempts are out: the
            // survival there is exp(−((j + 1)·t − d·j(j + 1)/2)/m).
            let mut want = 0.0;
            for j in 0..h {
                let r = f64::from(j + 1) / m;
                let c = delay * f64::from(j * (j + 1)) / 2.0 / m;
                let a = delay * f64::from(j);
                let b = if j + 1 < h {
                    delay * f64::from(j + 1)
                } else {
                    f64::INFINITY
                };
                want += c.exp() * ((-r * a).exp() - (-r * b).exp()) / r;
            }
            let client = ClientConfig {
                hedging: Some(HedgingConfig {
                    max_attempts: h,
                    delay: SimDuration::from_secs_f64(delay),
                    non_fatal: Vec::new(),
                }),
                ..Default::default()
            };
            let top = service(1, vec![call("db", client)]);
            (format!("{h} attempts {delay} s apart"), want, top)
        } else {
            let k = 2 + draw(5) as u32;
            let j = 1 + draw(u64::from(k)) as u32;
            let want = m * (k - j + 1..=k).map(|i| 1.0 / f64::from(i)).sum::<f64>();
            let group = CallSpec {
                parallel: (0..k)
                    .map(|_| call("leaf", ClientConfig::default()))
                    .collect(),
                wait_for: Some(j),
                ..Default::default()
            };
            (
                format!("the first {j} of {k}"),
                want,
                service(1, vec![group]),
            )
        };
        let mut e2e = Vec::new();
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, 50.0);
            cfg.services.insert("a".into(), top.clone());
            cfg.services.insert(
                "leaf".into(),
                ServiceConfig {
                    pods: 1,
                    work: Some(exp(mean)),
                    ..Default::default()
                },
            );
            cfg.dependencies.insert(
                "db".into(),
                UpstreamConfig {
                    capacity: 100_000,
                    latency: exp(mean),
                    ..Default::default()
                },
            );
            let (nodes, _) = go(&cfg);
            e2e.extend(nodes.e2e.iter().skip(1).map(seconds));
        }
        let what = format!("draw {d} ({what}, mean {m} s)");
        off_theory(
            &what,
            "the order statistics",
            &[("mean time", &e2e, want, None)],
        )
    });
}

/// Retries on timeouts as a race, on clients drawn from a seed: each
/// attempt to a dependency that never makes anyone wait takes an
/// exponential time X of mean m and times out at T, so it times out with
/// probability q = exp(−T/m), independently of the others. With n
/// retries a call makes A = (1 − qⁿ⁺¹)/(1 − q) attempts, is answered with
/// probability 1 − qⁿ⁺¹, and an attempt lasts E[min(X, T)] = m(1 − q)
/// on average. A request answered at attempt k + 1 took k·T, the first k
/// backoffs (the schedule's means, jitter included) and E[X | X < T] =
/// m − T·q/(1 − q); one failed took (n + 1)·T and n backoffs. The
/// dependency goes on working for callers who gave up unless it honours
/// cancellation: its mean work in progress is λ·A·m, or λ·A·m(1 − q) when
/// a timed-out attempt's work stops, and the q·A timeouts a request are
/// wasted work, or cancelled. A total deadline D (drawn for schedules
/// without jitter, whose attempts start at fixed times s_k) gives the
/// attempt starting at s_k only min(T, D − s_k), is not started unless
/// s_k and the least budget an attempt must have fall before D, and
/// cuts the call at D: the same sums, attempt by attempt, with an
/// attempt cut at D measured only if answered before (a cut attempt is
/// cancelled, neither timed out nor timed).
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means. Over
/// 400 draws (`STORMSIM_TIMEOUT_DRAWS`; 8 here), the 332 without a
/// deadline gave errors over their standard errors with means from −0.08
/// to 0.06 over the seven figures and standard deviations from 0.91 (the
/// share answered: failures are rare where q is small) to 1.02, none
/// beyond ±3.1; 400 draws all with a deadline gave means from −0.10 to
/// 0.10 and standard deviations from 1.00 to 1.04, none beyond ±3.4.
/// (Timeouts fire exactly: `an_attempt_times_out_exactly_at_its_timeout`
/// in `graphs.rs`.) A theory whose timeout is 5 % longer fails 37 of
/// the suite's 56 checks; full jitter taken as no jitter fails the mean
/// time of every draw it changes; a theory without the deadline fails
/// 12 of the 100 draws' 17 or so with one.
#[test]
fn random_timeouts_retry_as_a_race_against_the_clock() {
    use sim_models::policy::backoff::{BackoffKind, Jitter};
    use sim_models::recorder::NodeKind;

    on_draws("STORMSIM_TIMEOUT_DRAWS", 0xa54f_f53a, |d, draw| {
        let m = [0.005, 0.020][draw(2) as usize];
        let t = m * [0.25, 0.5, 1.0, 2.0, 3.0][draw(5) as usize];
        let n = draw(5) as u32;
        let cancels = draw(2) == 0;
        let b = SimDuration::from_secs_f64(m);
        let kind = match draw(5) {
            0 => BackoffKind::Fixed {
                delay: [SimDuration::ZERO, ms(1)][draw(2) as usize],
            },
            1 => BackoffKind::Linear {
                base: b,
                cap: Some(b * 3),
            },
            2 | 3 => BackoffKind::Exponential {
                base: b,
                multiplier: 2.0,
                cap: Some(b * 4),
            },
            _ => BackoffKind::Envoy {
                base: b,
                max: b * 5,
            },
        };
        let (jitter, share) = [
            (Jitter::None, 1.0),
            (Jitter::Full, 0.5),
            (Jitter::Equal, 0.75),
        ][draw(3) as usize];
        // The schedule's mean wait before retry k (the first is 1), as
        // `policy/backoff.rs` states it.
        let wait = |k: u32| -> f64 {
            let v = match kind {
                BackoffKind::Fixed { delay } => delay.as_secs_f64(),
                BackoffKind::Linear { base, cap } => {
                    (base.as_secs_f64() * f64::from(k)).min(cap.unwrap().as_secs_f64())
                }
                BackoffKind::Exponential { base, cap, .. } => {
                    (base.as_secs_f64() * 2f64.powi(k as i32 - 1)).min(cap.unwrap().as_secs_f64())
                }
                BackoffKind::Envoy { base, max } => {
                    (base.as_secs_f64() * (2f64.powi(k as i32) - 1.0)).min(max.as_secs_f64())
                }
            };
            v * share
        };
        // A total deadline D (and maybe a least budget an attempt must
        // have), drawn only for schedules without jitter, whose attempts
        // then start at fixed times; D never falls where an attempt times
        // out.
        let (deadline, budget) = match jitter == Jitter::None && draw(2) == 0 {
            true => {
                let at = t * [1.3, 2.6, 3.9][draw(3) as usize];
                (Some(at), [0.0, t / 4.0][draw(2) as usize])
            }
            false => (None, 0.0),
        };
        let lambda = 50.0;
        let d_end = deadline.unwrap_or(f64::INFINITY);
        // E[X; X < w]: the part of the mean from answers within w.
        let within = |w: f64| m * (1.0 - (-w / m).exp()) - w * (-w / m).exp();
        // Attempt k (0 the first) starts at s_k once the k before it timed
        // out, if s_k plus the budget is before D, and runs for
        // w_k = min(T, D − s_k); past D the call is over.
        let (mut reach, mut start) = (1.0, 0.0);
        let (mut attempts, mut answered, mut e2e_want, mut timeouts) = (0.0, 0.0, 0.0, 0.0);
        let (mut lat_n, mut lat_sum, mut held, mut gone_want) = (0.0, 0.0, 0.0, 0.0);
        for k in 0..=n {
            let w = t.min(d_end - start);
            let fails = (-w / m).exp();
            attempts += reach;
            answered += reach * (1.0 - fails);
            e2e_want += reach * ((1.0 - fails) * start + within(w));
            held += reach * if cancels { m * (1.0 - fails) } else { m };
            gone_want += reach * fails;
            if w == t {
                // Timed out, or answered: either way its time is measured.
                timeouts += reach * fails;
                lat_n += reach;
                lat_sum += reach * m * (1.0 - fails);
            } else {
                // Cut at D unless answered before: only answers measured.
                lat_n += reach * (1.0 - fails);
                lat_sum += reach * within(w);
            }
            let next = start + t + if k < n { wait(k + 1) } else { 0.0 };
            if k == n || w < t || next + budget >= d_end {
                // The last attempt: failed, the call ends with it.
                e2e_want += reach * fails * (start + w);
                break;
            }
            reach *= fails;
            start = next;
        }
        let busy_want = lambda * held;

        let client = ClientConfig {
            attempt_timeout: Some(SimDuration::from_secs_f64(t)),
            total_deadline: deadline.map(SimDuration::from_secs_f64),
            min_attempt_budget: SimDuration::from_secs_f64(budget),
            retry: sim_models::config::RetryConfig {
                max_retries: n,
                backoff: Backoff {
                    kind: kind.clone(),
                    jitter,
                },
                ..Default::default()
            },
            ..Default::default()
        };
        // Batches of (count, sum) of each figure.
        let (mut per_req, mut ok, mut lasts, mut outs) = (vec![], vec![], vec![], vec![]);
        let (mut e2e, mut busy, mut gone) = (vec![], vec![], vec![]);
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, lambda);
            cfg.services
                .insert("a".into(), service(1, vec![call("db", client.clone())]));
            cfg.dependencies.insert(
                "db".into(),
                UpstreamConfig {
                    capacity: 100_000,
                    latency: exp(SimDuration::from_secs_f64(m)),
                    cancellation: cancels,
                    ..Default::default()
                },
            );
            let (nodes, _) = go(&cfg);
            let users: Vec<&NodeRow> = nodes.of("a").skip(1).collect();
            let edges = nodes
                .rows
                .iter()
                .filter(|r| r.kind == NodeKind::Edge)
                .skip(1);
            let ends: Vec<u64> = nodes
                .buckets
                .iter()
                .map(|b| match cancels {
                    true => b.count(Count::UpstreamCancelled),
                    false => b.count(Count::UpstreamWasted),
                })
                .collect();
            for (((u, r), l), gone_now) in users
                .iter()
                .zip(edges)
                .zip(nodes.e2e.iter().skip(1))
                .zip(ends.iter().skip(1))
            {
                let (calls, made) = (u.offered as f64, r.attempts as f64);
                per_req.push((calls, made));
                ok.push((calls, u.answered as f64));
                lasts.push(seconds(&r.latency));
                outs.push((made, r.timeouts as f64));
                e2e.push(seconds(l));
                gone.push((calls, *gone_now as f64));
            }
            busy.extend(nodes.of("db").skip(1).map(|r| (1.0, r.busy.mean)));
        }
        let what = format!(
            "draw {d} (T {t} s, mean {m} s, {n} retries, {kind:?} {jitter:?}{}{})",
            match deadline {
                Some(d) => format!(", deadline {d} s less {budget} s"),
                None => String::new(),
            },
            if cancels { ", cancelled" } else { "" }
        );
        let checks: [Check<'_>; 7] = [
            ("attempts per request", &per_req, attempts, None),
            ("share answered", &ok, answered, None),
            ("mean attempt", &lasts, lat_sum / lat_n, None),
            ("timeouts per attempt", &outs, timeouts / attempts, None),
            ("mean time", &e2e, e2e_want, None),
            ("work in progress at the dependency", &busy, busy_want, None),
            (
                if cancels {
                    "work cancelled per request"
                } else {
                    "work wasted per request"
                },
                &gone,
                gone_want,
                None,
            ),
        ];
        off_theory(&what, "the race", &checks)
    });
}

/// The laws [`of_mean`] draws from, by name.
const LAWS_OF_A_MEAN: [&str; 3] = ["exponential", "constant", "uniform"];

/// A law of the given mean: exponential (`kind` 0), constant (1) or
/// uniform from 0 to twice the mean (2).
fn of_mean(kind: u64, mean: SimDuration) -> DistSpec {
    match kind {
        0 => exp(mean),
        1 => DistSpec::Constant(mean),
        _ => DistSpec::Uniform {
            low: SimDuration::ZERO,
            high: SimDuration::from_nanos(2 * mean.as_nanos()),
        },
    }
}

/// Closed-loop users as the machine-repairman model (M/M/c//N), on
/// parameters drawn from a seed: N users (2 to 60), each thinking for a
/// time of mean Z, then waiting for an answer from a pod whose c workers
/// (1 to 8; a line long enough for every user) each hold a request for an
/// exponential time of mean s (its own work, or a call to a dependency
/// that never makes it wait). The number n of users at the pod is the
/// birth–death chain with births (N − n)/Z and deaths min(n, c)/s:
/// p_n ∝ N!/(N − n)! · (s/Z)ⁿ / (n! up to c, c!·c^(n−c) beyond). The
/// users thinking are an infinite-server station, whose distribution the
/// closed network's product form does not depend on (BCMP), so the think
/// time is drawn exponential, constant or uniform. Throughput X =
/// Σ min(n, c)·p_n / s, the users waiting L = Σ n·p_n, and their mean
/// time R = L / X (Little).
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means. Over
/// 300 draws (`STORMSIM_CLOSED_DRAWS`; 8 here) the errors over their
/// standard errors had means from −0.04 to 0.03 and standard deviations
/// from 0.99 to 1.05, none beyond ±3.0, and the same by the think time's
/// law (means −0.09 to 0.07 for each of the three): the product form's
/// insensitivity, met. A theory with one worker more fails 23 of the
/// suite's 32 checks.
#[test]
fn random_closed_loops_wait_as_the_machine_repairman() {
    use sim_models::load::ClosedLoopConfig;

    on_draws("STORMSIM_CLOSED_DRAWS", 0x510e_527f, |d, draw| {
        let users = 2 + draw(59) as u32;
        let c = 1 + draw(8) as u32;
        let s = [0.005, 0.020][draw(2) as usize];
        // Think times putting the pod at a third to one and a half times
        // what its workers can serve, were nobody ever waiting.
        let load = [0.33, 0.7, 1.0, 1.5][draw(4) as usize];
        let z = f64::from(users) * s / (load * f64::from(c));
        let by_call = draw(2) == 0;
        let think_kind = draw(3);
        let think = of_mean(think_kind, SimDuration::from_secs_f64(z));
        let weights: Vec<f64> = (0..=users)
            .scan(1.0, |w, n| {
                if n > 0 {
                    *w *= f64::from(users - n + 1) * s / z / f64::from(n.min(c));
                }
                Some(*w)
            })
            .collect();
        let total: f64 = weights.iter().sum();
        let p: Vec<f64> = weights.iter().map(|w| w / total).collect();
        let x: f64 = (0..=users)
            .map(|n| f64::from(n.min(c)) * p[n as usize])
            .sum::<f64>()
            / s;
        let l: f64 = (0..=users).map(|n| f64::from(n) * p[n as usize]).sum();

        let (mut answered, mut at_pod, mut waiting, mut times) = (vec![], vec![], vec![], vec![]);
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, 0.0);
            cfg.load.closed_loop = Some(ClosedLoopConfig {
                users,
                think: think.clone(),
            });
            let hold = exp(SimDuration::from_secs_f64(s));
            let a = ServiceConfig {
                workers: Some(c),
                worker_queue: users,
                ..service(1, vec![])
            };
            hold_at_a(&mut cfg, a, hold, by_call);
            let (nodes, _) = go(&cfg);
            for r in nodes.of("a").skip(1) {
                answered.push((60.0, r.answered as f64));
                at_pod.push((1.0, r.busy.mean));
            }
            times.extend(nodes.e2e.iter().skip(1).map(seconds));
            waiting.extend(
                (nodes.buckets.iter().skip(1)).map(|b| (1.0, b.level(Level::UsersWaiting).mean)),
            );
        }
        let what = format!(
            "draw {d} ({users} users, think {} {z:.4} s, c {c}, mean {s} s {})",
            LAWS_OF_A_MEAN[think_kind as usize],
            if by_call { "in a call" } else { "as work" }
        );
        let checks: [Check<'_>; 4] = [
            ("throughput", &answered, x, None),
            ("requests at the pod", &at_pod, l, None),
            ("users waiting", &waiting, l, None),
            ("mean time", &times, l / x, None),
        ];
        off_theory(&what, "the machine-repairman model", &checks)
    });
}

/// A round-robin balancer as the GI/M/1 queue, on parameters drawn from
/// a seed: arrivals, Poisson or evenly spaced, dealt in turn to k pods
/// (2 to 6) each with one worker (and a line long enough for everyone)
/// holding a request for an exponential time of mean 1/μ. Every k-th
/// arrival reaches a pod: its gaps are Erlang-k of rate λ per pod, whose
/// transform is (kλ/(kλ + s))^k, or exactly 1/λ, whose transform is
/// e^(−s/λ); the GI/M/1 queue's arrivals find the pod busy with
/// probability σ, the root in (0, 1) of σ = A*(μ(1 − σ)). A request then
/// spends 1/(μ(1 − σ)) at its pod on average, and each pod holds
/// λ/(μ(1 − σ)) (Little): less than the M/M/1 queue's, since the turns
/// space the arrivals out. Health probes every 50 ms (counted only) fail
/// when the request in line has waited past τ, a quarter to four times
/// 1/μ: a pod holds n ≥ 1 with chance ρ(1 − σ)σⁿ⁻¹ at a time the clock
/// sets, so the share is ρσ·e^(−μ(1 − σ)τ) ([`probes_failing`]'s sum),
/// checked under Poisson arrivals (evenly spaced ones keep one phase
/// with the probes for the whole run).
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means. Over
/// 300 draws (`STORMSIM_ROUND_ROBIN_DRAWS`; 8 here; 108 evenly spaced)
/// the errors over their standard errors had means of −0.04 (time) and
/// −0.02 (requests held), standard deviations of 1.06, none beyond ±3.6;
/// evenly spaced, means of 0.04 and standard deviations of 1.13. The
/// M/M/1 queue's figures (σ = ρ, as a random balancer gives) fail all 16
/// of the suite's checks; Erlang-k gaps taken for evenly spaced arrivals
/// fail 22 of the checks of the 40 first draws, none of the Poisson ones.
/// With the probes, 300 draws: probes failed −0.03 (183 checked), sd
/// 1.00, none beyond ±2.9; the M/M/1 queue's share for them (σ = ρ)
/// fails all 5 of the suite's probe checks (27 of 27 in 40 draws).
#[test]
fn random_round_robins_queue_as_gi_m_1() {
    use sim_models::load::ArrivalProcess;
    use sim_models::pods::BalancerKind;

    on_draws("STORMSIM_ROUND_ROBIN_DRAWS", 0x9b05_688c, |d, draw| {
        let k = 2 + draw(5) as u32;
        let rho = [0.3, 0.5, 0.7, 0.85, 0.95][draw(5) as usize];
        let s = [0.005, 0.020][draw(2) as usize];
        let by_call = draw(2) == 0;
        let constant = draw(3) == 0;
        let (mu, per_pod) = (1.0 / s, rho / s);
        let kf = f64::from(k);
        // The gaps' transform: Erlang-k, or every k-th of evenly spaced
        // arrivals, one gap of 1/λ per pod.
        let transform = |x: f64| match constant {
            true => (-x / per_pod).exp(),
            false => (kf * per_pod / (kf * per_pod + x)).powf(kf),
        };
        // The fixed point from below converges to the root in (0, 1).
        let mut sigma = 0.0;
        for _ in 0..10_000 {
            sigma = transform(mu * (1.0 - sigma));
        }
        let time = 1.0 / (mu * (1.0 - sigma));
        let held = kf * per_pod * time;
        // Probes: a pod holds n ≥ 1 with chance ρ(1 − σ)σⁿ⁻¹ at a time set
        // by the clock (not at an arrival), so `probes_failing`'s sum over
        // the n − 1 in line comes to ρ·σ·e^(−μ(1 − σ)τ).
        let timeout_us = (s * 1e6) as u64 * [1, 2, 4, 8, 16][draw(5) as usize] / 4;
        let probe_fails = rho * sigma * (-mu * (1.0 - sigma) * timeout_us as f64 / 1e6).exp();

        let (mut times, mut at_pods, mut probes) = (vec![], vec![], vec![]);
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, per_pod * kf);
            if constant {
                cfg.load.arrivals = ArrivalProcess::Constant;
            }
            let hold = exp(SimDuration::from_secs_f64(s));
            let a = ServiceConfig {
                balancer: BalancerKind::RoundRobin,
                workers: Some(1),
                worker_queue: 100_000,
                health: Some(probing(timeout_us)),
                ..service(k, vec![])
            };
            hold_at_a(&mut cfg, a, hold, by_call);
            let (nodes, _) = go(&cfg);
            probes.extend(probes_per_bucket(&nodes, k));
            for r in nodes.of("a").skip(1) {
                times.push(seconds(&r.latency));
                at_pods.push((1.0, r.busy.mean));
            }
        }
        let what = format!(
            "draw {d} ({k} pods, {} arrivals, ρ {rho}, mean {s} s {}, probe timeout {timeout_us} µs)",
            if constant { "evenly spaced" } else { "Poisson" },
            if by_call { "in a call" } else { "as work" }
        );
        let mut checks: Vec<Check<'_>> = vec![
            ("time at a pod", &times, time, None),
            ("requests at the pods", &at_pods, held, None),
        ];
        // Evenly spaced arrivals and probes 50 ms apart keep one phase
        // for the whole run: the probes would see one instant of the
        // arrivals' cycle, not the time average.
        if !constant {
            let failing = probe_fails * per_batch(&probes);
            checks.push(("probes failed", &probes, probe_fails, Some(failing)));
        }
        off_theory(&what, "GI/M/1", &checks)
    });
}

/// A dependency whose service time grows with its load, under a closed
/// loop of N users who never think, as the law's own throughput curve: a
/// request's service time is fixed when it starts, from the n in service
/// then (itself included), and with every user always in service each
/// starts with n = N. So each user cycles through requests of mean
/// s·f(N), and throughput is X(N) = N / (s·f(N)): Gunther's Universal
/// Scalability Law, f(N) = 1 + σ(N − 1) + κN(N − 1), or the linear law's
/// f(N)·s = s + N·d. Drawn: N from 1 to 200, a base law (exponential,
/// constant or uniform) of mean s 20 or 50 ms, the USL's σ (0 to 0.2) and
/// κ (0 to 0.002: past its knee √((1 − σ)/κ) for the larger N) or the
/// linear law's d (10 µs to 1 ms). The mean attempt time s·f(N) and
/// the throughput must match (tied by Little's law, N = X·s·f(N): two
/// views of one fact, the second from the answers counted).
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means (the
/// first minute holds the start, where requests begin with 1 … N in
/// service). Over 200 draws (`STORMSIM_LAW_DRAWS`; 8 here) the 134 with
/// a random base law gave errors over their standard errors of mean
/// −0.09 (throughput) and 0.10 (time), sd 0.96 and 0.97, none beyond
/// ±2.5 (USL −0.14, linear −0.04 for the throughput); in the 66 constant
/// ones the mean attempt time was s·f(N) to 10⁻¹⁵ s. The law taken at
/// the others in service (itself left out), or at one more, fails 12 of
/// the suite's 14 checks (62 of 71 in 40 draws; what passes is where the
/// law hardly grows, as σ = κ = 0).
#[test]
fn random_load_laws_serve_a_closed_loop_as_their_throughput_curve() {
    use sim_models::config::LoadLaw;
    use sim_models::load::ClosedLoopConfig;

    on_draws("STORMSIM_LAW_DRAWS", 0x8f1b_bcdc, |d, draw| {
        let users = 1 + draw(200) as u32;
        let s_us = [20_000u64, 50_000][draw(2) as usize];
        let s = s_us as f64 / 1e6;
        let base_kind = draw(3);
        let base = of_mean(base_kind, SimDuration::from_micros(s_us));
        let n = f64::from(users);
        let (law, time) = if draw(2) == 0 {
            let sigma = [0.0, 0.01, 0.05, 0.2][draw(4) as usize];
            let kappa = [0.0, 1e-4, 5e-4, 2e-3][draw(4) as usize];
            let f = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
            (LoadLaw::Usl { sigma, kappa }, s * f)
        } else {
            let d_us = [10, 100, 1_000][draw(3) as usize];
            let per_request = SimDuration::from_micros(d_us);
            (LoadLaw::Linear { per_request }, s + n * d_us as f64 / 1e6)
        };
        let throughput = n / time;

        let (mut answered, mut times) = (Vec::new(), Vec::new());
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, 0.0);
            cfg.load.closed_loop = Some(ClosedLoopConfig {
                users,
                think: DistSpec::Constant(SimDuration::ZERO),
            });
            cfg.services.insert(
                "a".into(),
                service(1, vec![call("db", ClientConfig::default())]),
            );
            cfg.dependencies.insert(
                "db".into(),
                UpstreamConfig {
                    capacity: 100_000,
                    latency: base.clone(),
                    load_law: law.clone(),
                    ..Default::default()
                },
            );
            let (nodes, _) = go(&cfg);
            for r in nodes.of("a").skip(1) {
                answered.push((60.0, r.answered as f64));
            }
            times.extend(nodes.of("a->db").skip(1).map(|r| seconds(&r.latency)));
        }
        let what = format!(
            "draw {d} ({users} users, {} base of mean {s} s, {law:?})",
            LAWS_OF_A_MEAN[base_kind as usize],
        );
        let mut checks: Vec<Check<'_>> = vec![("attempt time", &times, time, None)];
        // A constant base makes every user's cycle the same length: each
        // minute's count then hangs on where the cycles cut it, the same
        // on every seed, which no batch shows (its time is exact instead).
        if base_kind != 1 {
            checks.push(("throughput", &answered, throughput, None));
        }
        off_theory(&what, "the law's curve", &checks)
    });
}

/// The work in flight at a dependency through a step, as the M/M/∞
/// queue's transient, on parameters drawn from a seed: Poisson calls at
/// λ₁ to a dependency that never makes anyone wait, each taking an
/// exponential time of mean m₁, from an empty start; at t₀ the timeline
/// scales its latency (m₂ = m₁ × 0.5 to 5) and changes the load (λ₂ =
/// λ₁ × 0.5 to 2) at once, as an incident does. Calls started before t₀
/// keep their times, so the mean work in flight is λ₁m₁(1 − e^(−t/m₁))
/// before t₀ and R·e^(−u/m₁) + λ₂m₂(1 − e^(−u/m₂)) at u past it, R the
/// work at t₀: the old calls draining at their own pace while the new
/// ones build up at theirs.
///
/// Each draw runs 80 seeds of 30 s in 1 s buckets; the work's mean over
/// each of five windows (before the step, then 0–1 s, 1–3 s, 3–7 s and
/// 7–20 s past it) is checked against the integral of the closed form
/// over the window within 4.5 standard errors of the 80 runs' spread
/// (with 40, small counts' skew gave the errors a standard deviation of
/// 1.1). Over 300 draws (`STORMSIM_STEP_DRAWS`; 8 here) the errors over
/// their standard errors had means from −0.09 to 0.00 by window,
/// standard deviations from 0.95 to 1.05, none beyond ±3.5. A theory in
/// which the calls in flight at the step take the new latency fails 16
/// of the suite's 32 checks past it.
#[test]
fn random_steps_move_the_work_in_flight_as_the_mm_inf_transient() {
    on_draws("STORMSIM_STEP_DRAWS", 0x1f83_d9ab, |d, draw| {
        let m1 = [0.5, 1.0, 2.0][draw(3) as usize];
        let scale = [0.5, 2.0, 3.0, 5.0][draw(4) as usize];
        let l1 = [20.0, 50.0][draw(2) as usize];
        let l2 = l1 * [0.5, 1.0, 2.0][draw(3) as usize];
        let (m2, t0): (f64, f64) = (m1 * scale, 10.0);
        // The closed form's integral over [a, b), a and b on one side of
        // the step.
        let drain = |m: f64, a: f64, b: f64| m * ((-a / m).exp() - (-b / m).exp());
        let at_t0 = l1 * m1 * (1.0 - (-t0 / m1).exp());
        let integral = |a: f64, b: f64| {
            if b <= t0 {
                l1 * m1 * ((b - a) - drain(m1, a, b))
            } else {
                let (a, b) = (a - t0, b - t0);
                at_t0 * drain(m1, a, b) + l2 * m2 * ((b - a) - drain(m2, a, b))
            }
        };
        let windows: [(u64, u64); 5] = [(0, 10), (10, 11), (11, 13), (13, 17), (17, 30)];

        let mut batches = vec![Vec::new(); windows.len()];
        for seed in 1..=80 {
            let mut cfg = ten_minutes_into_a(d * 80 + seed, l1);
            cfg.clock.duration = secs(30);
            cfg.clock.bucket = secs(1);
            let client = ClientConfig {
                attempt_timeout: None,
                ..Default::default()
            };
            cfg.services
                .insert("a".into(), service(1, vec![call("db", client)]));
            cfg.dependencies.insert(
                "db".into(),
                UpstreamConfig {
                    capacity: 100_000,
                    latency: exp(SimDuration::from_secs_f64(m1)),
                    ..Default::default()
                },
            );
            for (param, node, value) in [
                (Param::UpstreamLatencyScale, Some("db".to_string()), scale),
                (Param::LoadRate, None, l2),
            ] {
                cfg.timeline.push(TimelineEntry {
                    set: Some(SetAction {
                        param: ParamRef { param, node },
                        value,
                    }),
                    ..TimelineEntry::at_offset(secs(10))
                });
            }
            let (nodes, _) = go(&cfg);
            let busy: Vec<f64> = nodes.of("db").map(|r| r.busy.mean).collect();
            for (w, &(a, b)) in batches.iter_mut().zip(&windows) {
                let sum: f64 = busy[a as usize..b as usize].iter().sum();
                w.push((1.0, sum / (b - a) as f64));
            }
        }
        let names: Vec<String> = windows
            .iter()
            .map(|(a, b)| format!("work in flight over {a}–{b} s"))
            .collect();
        let checks: Vec<Check<'_>> = windows
            .iter()
            .zip(&names)
            .zip(&batches)
            .map(|((&(a, b), name), w)| {
                let want = integral(a as f64, b as f64) / (b - a) as f64;
                (name.as_str(), &w[..], want, None)
            })
            .collect();
        let what = format!("draw {d} (m₁ {m1} s × {scale}, λ {l1} → {l2}/s)");
        off_theory(&what, "the M/M/∞ transient", &checks)
    });
}

/// Retries into a queue as a Jackson network with feedback, on
/// parameters drawn from a seed: a dependency with c slots (1 to 8) and
/// a queue that never fills, exponential service of mean m, answering
/// 500 with probability p (0.1 to 0.5) whatever the time taken, and a
/// client retrying every 500 at once, n times (0 to 4). The retries go
/// back into the queue: the arrivals are no longer Poisson, but the
/// network of one first-come-first-served exponential station with
/// routing by the attempt's number keeps its product form (BCMP), so the
/// station holds what an M/M/c queue does at the total rate Λ = λ·A,
/// A = (1 − pⁿ⁺¹)/(1 − p) attempts a request, and a request spends A
/// sojourns W = Wq(Λ) + m there (Little).
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means. Over
/// 300 draws (`STORMSIM_FEEDBACK_DRAWS`; 8 here) the errors over their
/// standard errors had means of 0.02 (attempts, 221 draws that retry),
/// 0.09 (requests held) and 0.08 (time), standard deviations of 0.96,
/// 0.99 and 1.03, none beyond ±3.3. The M/M/c queue at the rate of first
/// attempts alone fails 11 of the suite's 24 checks.
#[test]
fn random_retries_into_a_queue_are_jackson_feedback() {
    on_draws("STORMSIM_FEEDBACK_DRAWS", 0x5be0_cd19, |d, draw| {
        let c = 1 + draw(8) as u32;
        let p: f64 = [0.1, 0.3, 0.5][draw(3) as usize];
        let n = draw(5) as u32;
        let rho = [0.3, 0.5, 0.7, 0.85][draw(4) as usize];
        let m = [0.005, 0.020][draw(2) as usize];
        let attempts = (1.0 - p.powi(n as i32 + 1)) / (1.0 - p);
        let total = rho * f64::from(c) / m;
        let lambda = total / attempts;
        let sojourn = mmc_mean_wait(c, total, 1.0 / m) + m;
        let held = total * sojourn;

        let (mut per_req, mut times, mut at_db) = (vec![], vec![], vec![]);
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, lambda);
            let client = retrying_every_failure(n, Backoff::fixed(SimDuration::ZERO));
            cfg.services
                .insert("a".into(), service(1, vec![call("db", client)]));
            let mut db = UpstreamConfig {
                capacity: c,
                queue_limit: 1_000_000,
                latency: exp(SimDuration::from_secs_f64(m)),
                ..Default::default()
            };
            db.errors.http_500 = p;
            cfg.dependencies.insert("db".into(), db);
            let (nodes, _) = go(&cfg);
            for (u, r) in nodes.of("a").skip(1).zip(nodes.of("db").skip(1)) {
                per_req.push((u.offered as f64, r.offered as f64));
                at_db.push((1.0, r.busy.mean + r.waiting.mean));
            }
            times.extend(nodes.e2e.iter().skip(1).map(seconds));
        }
        let what = format!("draw {d} (c {c}, p {p}, {n} retries, ρ {rho}, mean {m} s)");
        let checks: [Check<'_>; 3] = [
            ("attempts per request", &per_req, attempts, None),
            ("requests at the dependency", &at_db, held, None),
            ("mean time", &times, attempts * sojourn, None),
        ];
        off_theory(&what, "the network with feedback", &checks)
    });
}

/// Resilience4j's count-based breaker as a renewal process, on
/// parameters drawn from a seed: calls at λ = 50/s to a dependency
/// answering in 1 µs (so no call overlaps another, but for one in 20,000)
/// and failing each with probability p (0.2 to 0.7); a window of the last
/// W calls (2 to 6, all needed before it judges) opens the breaker when
/// its share of failures reaches the threshold (30, 50 or 70 %); open
/// for D (0.1 to 2 s), refusing every call; then half-open for the next
/// k calls (1 to 3), which close it (its window empty) unless their own
/// share of failures reaches the threshold, when it opens again. From an
/// empty window it takes E calls to open, found from the chain of the
/// window's last W results; each opening lasts D and the wait for the
/// next call (1/λ), then k calls decide it, again with probability
/// P = P(Binomial(k, p) reaches the threshold). A cycle from one closing
/// to the next thus holds E + (λD + k)/(1 − P) calls, of which λD/(1 − P)
/// are refused, 1/(1 − P) openings, and (D + 1/λ)/(1 − P) open time.
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means. Over
/// 400 draws (`STORMSIM_BREAKER_DRAWS`; 8 here) the errors over their
/// standard errors had means of 0.09 (refused), −0.05 (openings) and
/// 0.06 (time open), standard deviations of 0.98, 1.00 and 1.00, none
/// beyond ±3.6. A threshold taken as strict (a share above it, not at
/// it) fails 6 of the suite's 24 checks; open time without the wait for
/// the call that half-opens it, 6 of its 8 draws.
#[test]
fn random_breakers_open_and_close_as_their_renewal_process() {
    use sim_models::policy::breaker::{BreakerSpec, R4jConfig};

    on_draws("STORMSIM_BREAKER_DRAWS", 0x6a09_e667, |d, draw| {
        let p: f64 = [0.2, 0.35, 0.5, 0.7][draw(4) as usize];
        let window = 2 + draw(5) as u32;
        let threshold = [30.0, 50.0, 70.0][draw(3) as usize];
        let wait = [0.1, 0.5, 2.0][draw(3) as usize];
        let k = 1 + draw(3) as u32;
        let lambda = 50.0;
        // Failures among n that reach the threshold.
        let reach = |n: u32| (0..=n).find(|&f| 100.0 * f64::from(f) / f64::from(n) >= threshold);
        let opens_at = reach(window).unwrap();
        // Calls to open from an empty window: E[s] = 1 + Σ P(o)·E[s'] over
        // the window's states (its length, its last results as bits),
        // solved by iterating from zero (it converges from below).
        let full = 1usize << window;
        let index = |len: u32, bits: usize| (len as usize) * full + bits;
        let mut calls = vec![0.0f64; (window as usize + 1) * full];
        loop {
            let mut change = 0.0f64;
            for len in 0..=window {
                for bits in 0..(1usize << len.min(window)) {
                    let mut e = 1.0;
                    for (fail, prob) in [(1usize, p), (0, 1.0 - p)] {
                        let next = ((bits << 1) | fail) & (full - 1);
                        let next_len = (len + 1).min(window);
                        let opened = next_len == window && next.count_ones() >= opens_at;
                        if !opened {
                            e += prob * calls[index(next_len, next)];
                        }
                    }
                    let i = index(len, bits);
                    change = change.max((e - calls[i]).abs() / e);
                    calls[i] = e;
                }
            }
            if change < 1e-13 {
                break;
            }
        }
        let to_open = calls[index(0, 0)];
        let f_half = reach(k).unwrap();
        let binomial = |n: u32, f: u32| {
            let choose = (0..f).fold(1.0, |c, i| c * f64::from(n - i) / f64::from(i + 1));
            choose * p.powi(f as i32) * (1.0 - p).powi((n - f) as i32)
        };
        let reopen: f64 = (f_half..=k).map(|f| binomial(k, f)).sum();
        let openings = 1.0 / (1.0 - reopen);
        let per_cycle = to_open + (lambda * wait + f64::from(k)) * openings;
        let refused = lambda * wait * openings / per_cycle;
        let opened = openings / per_cycle;
        let open_time = (wait + 1.0 / lambda) * openings / (per_cycle / lambda);

        let client = ClientConfig {
            breaker: Some(BreakerSpec::Resilience4j(R4jConfig {
                failure_rate_threshold: threshold,
                wait_duration_in_open_state: SimDuration::from_secs_f64(wait),
                permitted_calls_in_half_open: k,
                minimum_number_of_calls: window,
                sliding_window_size: window,
                ..Default::default()
            })),
            ..Default::default()
        };
        let (mut refusals, mut openings_seen, mut open) = (vec![], vec![], vec![]);
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, lambda);
            cfg.services
                .insert("a".into(), service(1, vec![call("db", client.clone())]));
            let mut db = failing(p);
            db.latency = DistSpec::Constant(SimDuration::from_micros(1));
            cfg.dependencies.insert("db".into(), db);
            let (nodes, _) = go(&cfg);
            for (u, b) in nodes.of("a").skip(1).zip(nodes.buckets.iter().skip(1)) {
                let calls = u.offered as f64;
                refusals.push((calls, b.count(Count::BreakerRejected) as f64));
                openings_seen.push((calls, b.count(Count::BreakerOpened) as f64));
                open.push((1.0, b.level(Level::BreakersOpen).mean));
            }
        }
        let what = format!(
            "draw {d} (p {p}, window {window}, {threshold} %, open {wait} s, {k} in half-open)"
        );
        let checks: [Check<'_>; 3] = [
            ("share refused", &refusals, refused, None),
            ("openings per call", &openings_seen, opened, None),
            ("time open", &open, open_time, None),
        ];
        off_theory(&what, "the renewal process", &checks)
    });
}

/// One worker as the M/G/1 queue, on service-time laws drawn from a
/// seed: constant, uniform (from 0 or around the mean), exponential,
/// normal (its standard deviation a quarter of its mean: truncation at
/// zero changes its moments by parts in 10⁵), log-normal (σ 0.5 or 1) or
/// Pareto (shape 5), each of mean s, held as the pod's own work or as a
/// call to a dependency that never makes anyone wait, at ρ 0.3 to 0.85.
/// Pollaczek–Khinchine: a request waits Wq = λ·E[S²] / (2(1 − ρ)) for
/// the worker, spends Wq + s at the pod, and the pod holds λ(Wq + s)
/// (Little). E[S²] is each law's own: s² (constant), (a² + ab + b²)/3
/// (uniform on [a, b]), 2s² (exponential), s² + σ² (normal), s²·e^(σ²)
/// (log-normal), s²·(α − 1)²/(α(α − 2)) (Pareto of shape α).
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means. Over
/// 420 draws (`STORMSIM_MG1_DRAWS`; 8 here) the errors over their
/// standard errors had means of 0.07 (time and requests held) and
/// standard deviations of 1.03, the largest 4.43; by law, means from
/// −0.16 to 0.35 over about 60 draws each. The largest, the normal's,
/// was looked at apart: 200 draws all normal gave 0.09, and 64 hours at
/// ρ = 0.85 put the normal, the uniform and the exponential within
/// 0.13 % (z 1.0, −0.2, −0.4) of the closed form. The M/M/1 queue's
/// E[S²] = 2s² for every law fails all 16 of the suite's checks (none
/// of its 8 draws is exponential).
#[test]
fn random_service_laws_queue_as_pollaczek_khinchine() {
    on_draws("STORMSIM_MG1_DRAWS", 0x2545_f491, |d, draw| {
        let s = [0.005, 0.020][draw(2) as usize];
        let rho = [0.3, 0.5, 0.7, 0.85][draw(4) as usize];
        let by_call = draw(2) == 0;
        let at = SimDuration::from_secs_f64;
        let (law, hold, second) = match draw(7) {
            0 => ("constant", DistSpec::Constant(at(s)), s * s),
            1 => {
                let (a, b) = (0.0, 2.0 * s);
                let hold = DistSpec::Uniform {
                    low: at(a),
                    high: at(b),
                };
                ("uniform from 0", hold, (a * a + a * b + b * b) / 3.0)
            }
            2 => {
                let (a, b) = (0.5 * s, 1.5 * s);
                let hold = DistSpec::Uniform {
                    low: at(a),
                    high: at(b),
                };
                ("uniform about s", hold, (a * a + a * b + b * b) / 3.0)
            }
            3 => ("exponential", exp(at(s)), 2.0 * s * s),
            4 => {
                let sd = s / 4.0;
                let hold = DistSpec::Normal {
                    mean: at(s),
                    std_dev: at(sd),
                };
                ("normal", hold, s * s + sd * sd)
            }
            5 => {
                let sigma: f64 = [0.5, 1.0][draw(2) as usize];
                let hold = DistSpec::LogNormal {
                    median: None,
                    p99: None,
                    mu: Some(s.ln() - sigma * sigma / 2.0),
                    sigma: Some(sigma),
                };
                ("log-normal", hold, s * s * (sigma * sigma).exp())
            }
            _ => {
                let shape = 5.0;
                let hold = DistSpec::Pareto {
                    scale: at(s * (shape - 1.0) / shape),
                    shape,
                };
                let second = s * s * (shape - 1.0) * (shape - 1.0) / (shape * (shape - 2.0));
                ("Pareto", hold, second)
            }
        };
        let lambda = rho / s;
        let time = lambda * second / (2.0 * (1.0 - rho)) + s;

        let (mut times, mut held) = (vec![], vec![]);
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, lambda);
            let a = ServiceConfig {
                workers: Some(1),
                worker_queue: 100_000,
                ..service(1, vec![])
            };
            hold_at_a(&mut cfg, a, hold.clone(), by_call);
            let (nodes, _) = go(&cfg);
            for r in nodes.of("a").skip(1) {
                times.push(seconds(&r.latency));
                held.push((1.0, r.busy.mean));
            }
        }
        let what = format!(
            "draw {d} ({law}, mean {s} s, ρ {rho} {})",
            if by_call { "in a call" } else { "as work" }
        );
        let checks: [Check<'_>; 2] = [
            ("time at the pod", &times, time, None),
            ("requests at the pod", &held, lambda * time, None),
        ];
        off_theory(&what, "Pollaczek–Khinchine", &checks)
    });
}

/// A pool whose waiters give up, as the M/M/c+D queue, on parameters
/// drawn from a seed: Poisson calls at half to one and a half times what
/// c connections (1 to 6) can carry, each holding one for an exponential
/// time of mean 1/μ, and a line whose waiters fail `pool_timeout` after τ
/// (0.5 to 5 mean holds): the share giving up, connections in use and
/// calls in line of Baccelli and Hebuterne's M/M/c+D
/// (`sim_core::theory::mmc_patience` derives them).
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means, the
/// share given up only where ten a batch are expected, and connections
/// in use only where ten idle spells a batch are (under heavy load it is
/// made of those few moments). Over 400 draws (`STORMSIM_IMPATIENT_DRAWS`;
/// 8 here) the errors over their standard errors had means of 0.01
/// (given up), 0.03 (in use) and 0.02 (in line), standard deviations of
/// 0.97, 1.05 and 1.03, none beyond ±3.9. Subgroups that looked high in
/// earlier runs (one connection at load 1.5, +0.3 over 64 draws) were
/// run apart: 200 draws there gave 0.09, 0.00 and 0.07 (relative errors
/// 0.04 % ± 0.02 %), and four draws of 32 hours came within 0.12 % of the
/// closed form, with both signs. A patience 20 % longer in theory fails
/// 16 of the suite's checks.
#[test]
fn random_impatient_pool_lines_give_up_as_mmc_plus_d() {
    use sim_models::outcome::Reason;
    use sim_models::recorder::NodeKind;

    on_draws("STORMSIM_IMPATIENT_DRAWS", 0x1b87_3593, |d, draw| {
        let load = [0.5, 0.8, 1.2, 1.5][draw(4) as usize];
        let hold: f64 = [0.005, 0.020][draw(2) as usize];
        let tau = hold * [0.5, 1.0, 2.0, 5.0][draw(4) as usize];
        let c = 1 + draw(6) as u32;
        let mu = 1.0 / hold;
        let lambda = load * f64::from(c) * mu;
        let theory = mmc_patience(c, lambda, mu, tau);
        let (gives_up, in_use, waiting) = (theory.gives_up, theory.busy, theory.waiting);

        let (mut shares, mut busy, mut line) = (vec![], vec![], vec![]);
        let mut unexplained = 0;
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, lambda);
            let client = ClientConfig {
                attempt_timeout: None,
                ..Default::default()
            };
            let mut to_db = call("db", client);
            to_db.pool = Some(PoolConfig {
                max_connections: c,
                acquire_timeout: Some(SimDuration::from_secs_f64(tau)),
                connect_time: DistSpec::Constant(SimDuration::ZERO),
                idle_timeout: None,
                ..Default::default()
            });
            cfg.services.insert("a".into(), service(1, vec![to_db]));
            cfg.dependencies.insert(
                "db".into(),
                UpstreamConfig {
                    capacity: 100_000,
                    latency: exp(SimDuration::from_secs_f64(hold)),
                    ..Default::default()
                },
            );
            let (nodes, totals) = go(&cfg);
            unexplained += totals.finished()
                - totals.outcome(Reason::Success)
                - totals.outcome(Reason::PoolTimeout);
            let edges = nodes.rows.iter().filter(|r| r.kind == NodeKind::Edge);
            for (b, r) in nodes.buckets.iter().zip(edges).skip(1) {
                let calls = r.offered as f64;
                shares.push((calls, b.outcome(Reason::PoolTimeout) as f64));
                busy.push((1.0, r.busy.mean));
                line.push((1.0, r.waiting.mean));
            }
        }
        let what = format!("draw {d} ({c} connections, load {load}, hold {hold} s, τ {tau} s)");
        let mut off = off_theory(
            &what,
            "M/M/c+D",
            &[
                (
                    "share given up",
                    &shares,
                    gives_up,
                    Some(gives_up * per_batch(&shares)),
                ),
                // In use is made of the rare moments a connection is idle
                // when the load is heavy: all c are taken again after each.
                (
                    "connection in use",
                    &busy,
                    in_use,
                    Some(60.0 * lambda * theory.one_free),
                ),
                ("calls in line", &line, waiting, None),
            ],
        );
        if unexplained > 0 {
            off.push(format!("{what}: {unexplained} calls ended otherwise"));
        }
        off
    });
}

/// A retry budget of whole tokens, as its library's write-up gives it
/// (gRFC A6, botocore's standard quota, Brooker's adaptive retry, the
/// bucket of seed 003): what a call's start, an attempt's result and a
/// retry do to the tokens.
#[derive(Clone, Copy, Debug)]
enum Tokens {
    /// gRPC's throttling, in milli-tokens: a failure takes 1000 (not
    /// below 0), a success returns `ratio` (not above `max`); retries go
    /// while the tokens are more than half of `max`.
    Grpc { max: u64, ratio: u64 },
    /// AWS's quota: a retry takes `cost` if there is as much; a success
    /// refunds the cost of the retry it was, or 1 if it was a first
    /// attempt (not above `capacity`).
    Aws { capacity: u64, cost: u64 },
    /// Brooker's: a call adds `per_call` milli-tokens (not above `max`),
    /// a retry takes 1000 if there is as much.
    Refill { max: u64, per_call: u64 },
    /// A success adds `per_success` (not above `max`), a retry takes
    /// `per_retry` if there is as much.
    Bucket {
        max: u64,
        per_success: u64,
        per_retry: u64,
    },
}

impl Tokens {
    fn full(self) -> u64 {
        match self {
            Tokens::Grpc { max, .. } | Tokens::Refill { max, .. } | Tokens::Bucket { max, .. } => {
                max
            }
            Tokens::Aws { capacity, .. } => capacity,
        }
    }

    fn on_call(self, t: u64) -> u64 {
        match self {
            Tokens::Refill { max, per_call } => (t + per_call).min(max),
            _ => t,
        }
    }

    /// The tokens after an attempt's result; `cost` is what the attempt
    /// cost as a retry (0 for a first attempt).
    fn on_result(self, t: u64, success: bool, cost: u64) -> u64 {
        match (self, success) {
            (Tokens::Grpc { max, ratio }, true) => (t + ratio).min(max),
            (Tokens::Grpc { .. }, false) => t.saturating_sub(1000),
            (Tokens::Aws { capacity, .. }, true) => (t + cost.max(1)).min(capacity),
            (
                Tokens::Bucket {
                    max, per_success, ..
                },
                true,
            ) => (t + per_success).min(max),
            _ => t,
        }
    }

    /// A retry: the tokens after it and what it cost, or `None` if denied.
    fn retry(self, t: u64) -> Option<(u64, u64)> {
        let (allowed, cost) = match self {
            Tokens::Grpc { max, .. } => (2 * t > max, 0),
            Tokens::Aws { cost, .. } => (t >= cost, cost),
            Tokens::Refill { .. } => (t >= 1000, 1000),
            Tokens::Bucket { per_retry, .. } => (t >= per_retry, per_retry),
        };
        allowed.then(|| (t - cost, cost))
    }

    fn spec(self) -> sim_models::policy::budget::BudgetSpec {
        use sim_models::policy::budget::BudgetSpec;
        match self {
            Tokens::Grpc { max, ratio } => BudgetSpec::Grpc {
                max_tokens: (max / 1000) as u32,
                token_ratio: ratio as f64 / 1000.0,
            },
            Tokens::Aws { capacity, cost } => BudgetSpec::AwsQuota {
                capacity: capacity as u32,
                retry_cost: cost as u32,
                timeout_cost: 10,
                throttled_cost: None,
                no_retry_increment: 1,
            },
            Tokens::Refill { max, per_call } => BudgetSpec::RefillPerCall {
                per_call: per_call as f64 / 1000.0,
                max_tokens: (max / 1000) as u32,
            },
            Tokens::Bucket {
                max,
                per_success,
                per_retry,
            } => BudgetSpec::Bucket {
                max_tokens: max as u32,
                per_success: per_success as u32,
                per_retry: per_retry as u32,
            },
        }
    }
}

/// One way a call can go: its chance, the tokens it leaves, its
/// attempts, whether it failed and whether a retry was denied.
struct Way {
    chance: f64,
    tokens: u64,
    attempts: u32,
    failed: bool,
    denied: bool,
}

/// How a call that starts with `t` tokens can go, each attempt failing
/// with probability `p`, at most `n` retries.
fn ways_of_a_call(b: Tokens, t: u64, p: f64, n: u32) -> Vec<Way> {
    let mut ways = Vec::new();
    // (chance so far, tokens, retries so far, the attempt's cost)
    let mut open = vec![(1.0, b.on_call(t), 0u32, 0u64)];
    while let Some((chance, t, retries, cost)) = open.pop() {
        let way = |chance, tokens, failed, denied| Way {
            chance,
            tokens,
            attempts: retries + 1,
            failed,
            denied,
        };
        ways.push(way(
            chance * (1.0 - p),
            b.on_result(t, true, cost),
            false,
            false,
        ));
        let t = b.on_result(t, false, cost);
        match (retries < n).then(|| b.retry(t)) {
            None => ways.push(way(chance * p, t, true, false)),
            Some(None) => ways.push(way(chance * p, t, true, true)),
            Some(Some((left, cost))) => open.push((chance * p, left, retries + 1, cost)),
        }
    }
    ways
}

/// The stationary law of the chain `step` (rows sum to 1), by Grassmann,
/// Taksar and Heyman's state reduction: no subtraction, so no
/// cancellation, however slowly the chain mixes.
fn stationary(mut step: Vec<Vec<f64>>) -> Vec<f64> {
    let n = step.len();
    for k in (1..n).rev() {
        let (above, rest) = step.split_at_mut(k);
        let last = &rest[0];
        let down: f64 = last[..k].iter().sum();
        for row in above {
            row[k] /= down;
            let through = row[k];
            for (to, via) in row[..k].iter_mut().zip(last) {
                *to += through * via;
            }
        }
    }
    let mut pi = vec![1.0; n];
    for j in 1..n {
        pi[j] = (0..j).map(|i| pi[i] * step[i][j]).sum();
    }
    let total: f64 = pi.iter().sum();
    pi.iter().map(|x| x / total).collect()
}

/// The stationary means of a budget's chain (the tokens at each call's
/// start): attempts per call, the share of calls failed and the share
/// whose retry was denied; `None` when the chain still remembers its
/// start after `forgets` calls, from full or from its lowest state.
fn token_chain(b: Tokens, p: f64, n: u32, forgets: usize) -> Option<(f64, f64, f64)> {
    // The states a full budget reaches, each call's ways from each.
    let mut states = std::collections::BTreeMap::new();
    let mut queue = vec![b.full()];
    while let Some(t) = queue.pop() {
        if states.contains_key(&t) {
            continue;
        }
        let ways = ways_of_a_call(b, t, p, n);
        queue.extend(ways.iter().map(|w| w.tokens));
        states.insert(t, ways);
    }
    let index: std::collections::BTreeMap<u64, usize> =
        states.keys().enumerate().map(|(i, &t)| (t, i)).collect();
    let mut step = vec![vec![0.0; states.len()]; states.len()];
    for (i, ways) in states.values().enumerate() {
        for w in ways {
            step[i][index[&w.tokens]] += w.chance;
        }
    }
    let moves: Vec<Vec<(usize, f64)>> = step
        .iter()
        .map(|row| {
            row.iter()
                .copied()
                .enumerate()
                .filter(|m| m.1 > 0.0)
                .collect()
        })
        .collect();
    let pi = stationary(step);
    for from in [0, pi.len() - 1] {
        let mut law = vec![0.0; pi.len()];
        law[from] = 1.0;
        for _ in 0..forgets {
            let mut next = vec![0.0; pi.len()];
            for (i, m) in moves.iter().enumerate() {
                for &(j, q) in m {
                    next[j] += law[i] * q;
                }
            }
            law = next;
        }
        let apart: f64 = law.iter().zip(&pi).map(|(a, b)| (a - b).abs()).sum();
        if apart > 0.02 {
            return None;
        }
    }
    let mean = |f: &dyn Fn(&Way) -> f64| -> f64 {
        states
            .values()
            .zip(&pi)
            .map(|(ways, pi)| pi * ways.iter().map(|w| w.chance * f(w)).sum::<f64>())
            .sum()
    };
    Some((
        mean(&|w| f64::from(w.attempts)),
        mean(&|w| f64::from(u8::from(w.failed))),
        mean(&|w| f64::from(u8::from(w.denied))),
    ))
}

/// Token budgets as the Markov chains their write-ups define, on
/// parameters drawn from a seed: gRPC's retry throttling (2 to 20
/// tokens, 0.1 to 1 returned per success), AWS's standard retry quota
/// (capacity 20 to 500, retries costing 2 or 5), Brooker's budget
/// refilled per call (1 to 10 tokens, 0.1 to 0.5 a call) and seed 003's
/// bucket (10 to 100 tokens, 1 to 3 per success, 3 to 10 a retry), each
/// on one pod calling a dependency that fails each attempt with
/// probability p (0.05 to 0.9), retried at once up to n times (1 to 4).
/// Calls come 200 a second and last nanoseconds, so they never overlap:
/// the tokens at each call's start are a Markov chain, its steps every
/// way a call can go (at most 2(n + 1)), solved exactly in the test
/// ([`token_chain`]). Attempts per call, the share of calls failed and
/// the share whose retry was denied must be its stationary means.
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means, the
/// shares only where they are not rare. Minute batches are honest only
/// for a chain that forgets its start well within a minute, so a draw
/// whose chain is still more than 1 % (in total variation) from its law
/// after a tenth of a minute's calls, from full or from empty, is drawn
/// again: a budget whose spending and refilling balance (AWS's quota of
/// 500 at p = 0.5, a retry of cost 2 refunded on success: no drift)
/// wanders for many minutes, and its minutes are not independent. Over
/// 720 draws in two sets (`STORMSIM_BUDGET_DRAWS`; 8 here; about one
/// draw in eight drawn again, most of them Brooker's larger buckets) the
/// errors over their standard errors had means of −0.02 (attempts, 652
/// checked; denied, 510; failed, 624) and standard deviations of 1.04,
/// 1.08 and 1.09, none beyond ±3.7; 240 draws all gRPC gave 0.04, −0.11
/// and −0.07, standard deviations 1.01, 0.98 and 1.01. A threshold taken
/// as inclusive (gRPC's tokens at half allowing a retry) fails 14 checks
/// of 40 draws; a success after a retry refunding 1 (AWS), 7; the last
/// attempt's failure not taking a token (gRPC), 6; a refill bucket a
/// token larger, 12; a bucket's retry needing more than its cost, 4. The
/// suite's 8 draws catch the first, second and fourth.
#[test]
fn random_token_budgets_spend_and_refill_as_their_markov_chain() {
    on_draws("STORMSIM_BUDGET_DRAWS", 0xcbbb_9d5d, |d, draw| {
        let lambda = 200.0;
        let (budget, p, n, (attempts, failed, denied)) = loop {
            let budget = match draw(4) {
                0 => Tokens::Grpc {
                    max: [2, 4, 10, 20][draw(4) as usize] * 1000,
                    ratio: [100, 200, 250, 500, 1000][draw(5) as usize],
                },
                1 => Tokens::Aws {
                    capacity: [20, 50, 100, 500][draw(4) as usize],
                    cost: [2, 5][draw(2) as usize],
                },
                2 => Tokens::Refill {
                    max: [1, 2, 5, 10][draw(4) as usize] * 1000,
                    per_call: [100, 200, 250, 500][draw(4) as usize],
                },
                _ => Tokens::Bucket {
                    max: [10, 20, 50, 100][draw(4) as usize],
                    per_success: 1 + draw(3),
                    per_retry: [3, 5, 10][draw(3) as usize],
                },
            };
            let p = match budget {
                // gRPC's throttling engages where the share failed passes
                // r/(1 + r): well above it no retry goes, well below none
                // is denied.
                Tokens::Grpc { ratio, .. } => {
                    let engages = ratio as f64 / (1000.0 + ratio as f64);
                    engages * [0.3, 0.6, 0.9, 1.2, 1.8][draw(5) as usize]
                }
                _ => [0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9][draw(7) as usize],
            };
            let n = 1 + draw(4) as u32;
            if let Some(means) = token_chain(budget, p, n, (lambda * 6.0) as usize) {
                break (budget, p, n, means);
            }
        };

        let what = format!("draw {d} ({budget:?}, p {p}, {n} retries)");
        let latency = DistSpec::Constant(SimDuration::from_nanos(1));
        let run = Budgeted {
            d,
            lambda,
            budget: budget.spec(),
            n,
            p,
            latency,
            backoff: SimDuration::from_nanos(1),
        };
        run.off("the token chain", &what, attempts, failed, denied)
    });
}

/// A budget's draw: 4 seeds of 10 minutes of calls at `lambda` from one
/// pod, each retried after `backoff` up to `n` times under `budget`, to a
/// dependency answering after `latency` with a 500 with probability `p`.
struct Budgeted {
    d: u64,
    lambda: f64,
    budget: sim_models::policy::budget::BudgetSpec,
    n: u32,
    p: f64,
    latency: DistSpec,
    backoff: SimDuration,
}

impl Budgeted {
    /// What is off `theory`'s attempts per call, share of calls failed and
    /// share denied, from the minute buckets past the first.
    fn off(
        &self,
        theory: &str,
        what: &str,
        attempts: f64,
        failed: f64,
        denied: f64,
    ) -> Vec<String> {
        let mut client = retrying_every_failure(self.n, Backoff::fixed(self.backoff));
        client.budget = Some(self.budget.clone());
        let (mut tries, mut fails, mut denials) = (vec![], vec![], vec![]);
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(self.d * 4 + seed, self.lambda);
            cfg.services
                .insert("a".into(), service(1, vec![call("db", client.clone())]));
            let mut db = failing(self.p);
            db.latency = self.latency.clone();
            cfg.dependencies.insert("db".into(), db);
            let (nodes, _) = go(&cfg);
            for (e, b) in nodes.of("a->db").skip(1).zip(nodes.buckets.iter().skip(1)) {
                let calls = e.offered as f64;
                tries.push((calls, e.attempts as f64));
                fails.push((calls, e.failed as f64));
                denials.push((calls, b.count(Count::BudgetDenied) as f64));
            }
        }
        off_theory(
            what,
            theory,
            &[
                ("attempts per call", &tries, attempts, None),
                (
                    "share failed",
                    &fails,
                    failed,
                    Some(failed * per_batch(&fails)),
                ),
                (
                    "share denied",
                    &denials,
                    denied,
                    Some(denied * per_batch(&denials)),
                ),
            ],
        )
    }
}

/// Envoy's retry budget as Erlang's loss system, on parameters drawn
/// from a seed: a retry may start only while fewer than
/// `min_retry_concurrency` = k retries (1 to 6) hold the budget
/// (`budget_percent` 0, so the floor is the limit: Envoy's `max_retries`
/// circuit breaker), in front of a dependency with no limit whose answers
/// take exponential times of mean m and fail with probability p (0.2 to
/// 0.8), each call retried after a fixed backoff w (0, m/2 or 2m) up to n
/// times (1 to 4). The first attempts' answers leave an M/M/∞ station as
/// a Poisson stream, so the failed ones ask for retries as Poisson at λp;
/// a call let through holds its place from the decision to make its
/// first retry to its last answer, backoffs included, as Envoy's
/// `retries` resource is held (each retry that fails frees its place and
/// takes it again at once), H = (w + m)·(1 + p + … + pⁿ⁻¹) on average; a
/// call refused fails there. That is the M/G/k/k queue, and Erlang's loss
/// formula holds whatever the law of H: a share B(k, λp·E[H]) of the asks
/// is refused. The share of calls denied is p·B, attempts per call
/// 1 + p(1 − B)·(1 + p + … + pⁿ⁻¹), the share failed p·B + p(1 − B)·pⁿ.
///
/// Each draw runs 4 seeds of 10 minutes at an offered load λp·E[H] of
/// 0.3k to 1.5k; each check allows 4.5 standard errors from the minute
/// buckets past the first as batch means, the shares only where they are
/// not rare. 300 draws (`STORMSIM_ENVOY_DRAWS`; 8 here) pass. Before the
/// backoff was drawn (w = 0 throughout), 300 draws gave errors over their
/// standard errors of mean −0.01 (attempts), −0.13 (denied) and −0.15
/// (failed), standard deviations 0.96, 1.10 and 1.08, none beyond ±3.6.
/// A retry counted only from its attempt's start (not through its
/// backoff) fails 58 checks in 20 of 40 draws, none of them one without a
/// backoff; allowing k + 1 retries at once fails 23 of the suite's 24
/// checks; a retry holding its place for one answer's time (m) rather
/// than the chain's, 21; a share refused 5 % higher, 14 (1 % higher fails
/// none: the check's reach).
#[test]
fn random_envoy_budgets_refuse_retries_as_erlang_loss() {
    use sim_core::theory::erlang_b;
    use sim_models::policy::budget::BudgetSpec;

    on_draws("STORMSIM_ENVOY_DRAWS", 0x9159_015a, |d, draw| {
        let k = 1 + draw(6) as u32;
        let m = [0.05, 0.2][draw(2) as usize];
        let p: f64 = [0.2, 0.35, 0.5, 0.65, 0.8][draw(5) as usize];
        let n = 1 + draw(4) as u32;
        let load = f64::from(k) * [0.3, 0.6, 1.0, 1.5][draw(4) as usize];
        // Drawn last, so the draws before keep their values.
        let w = m * [0.0, 0.5, 2.0][draw(3) as usize];
        let chain = (0..n).map(|i| p.powi(i as i32)).sum::<f64>();
        let held = (w + m) * chain;
        let lambda = load / (p * held);
        let b = erlang_b(k, load);
        let denied = p * b;
        let attempts = 1.0 + p * (1.0 - b) * chain;
        let failed = p * b + p * (1.0 - b) * p.powi(n as i32);

        let budget = BudgetSpec::Envoy {
            budget_percent: 0.0,
            min_retry_concurrency: k,
        };
        let what = format!(
            "draw {d} ({k} retries at once, m {m} s, backoff {w} s, p {p}, {n} retries, load {load:.2})"
        );
        let latency = exp(SimDuration::from_secs_f64(m));
        let run = Budgeted {
            d,
            lambda,
            budget,
            n,
            p,
            latency,
            backoff: SimDuration::from_secs_f64(w).max(SimDuration::from_nanos(1)),
        };
        run.off("Erlang's loss formula", &what, attempts, failed, denied)
    });
}

/// A token bucket's share refused, on parameters drawn from a seed: the
/// service's own door (`gateway.rate_limit`) or the dependency's (a 429),
/// refilled at r tokens a second up to a burst of b (1 to 20), one token
/// per request let in, in front of Poisson arrivals at 200 a second with
/// r at 0.5 to 2 times that. The tokens missing from a full bucket, in
/// seconds of refill (W = (b − tokens)/r), fall at rate 1 down to 0 and
/// rise by 1/r at each request let in, and a request is let in only
/// while a token is left (W ≤ (b − 1)/r): W is the work in an M/D/1 queue
/// whose customers balk when they would wait more than (b − 1)/r, and
/// the share refused is P(W > (b − 1)/r) (arrivals see time averages).
/// Its density solves the level-crossing equation
/// f(x) = λ·(π₀·1{x < D} + ∫ f(y) dy over max(0, x − D) < y ≤ min(x, τ)),
/// D = 1/r, τ = (b − 1)/r ([`bucket_refusals`]); with b = 1 the bucket
/// lets a request in only when full, and the share is ρ/(1 + ρ), Erlang's
/// loss with one server.
///
/// Each draw runs 4 seeds of 10 minutes; each check allows 4.5 standard
/// errors from the minute buckets past the first as batch means, where
/// refusals are not rare. Over 700 draws in two sets
/// (`STORMSIM_BUCKET_DRAWS`; 8 here) the errors over their standard
/// errors had means of 0.11 (280 checked) and 0.01 (374), standard
/// deviations 1.04 and 0.99, none beyond ±3.2; by door 0.16 (the
/// service's) and 0.05 (the dependency's) in the first set, by burst and
/// by ρ from −0.23 to 0.32 over 30 to 50 draws each, both signs. A
/// bucket taking its last token fractionally (τ = b/r: one token more)
/// fails 5 of the suite's 7 checks (24 of 33 in 40 draws); a refill taken
/// as exponential (the M/M/1/b loss formula), 6 of 7.
#[test]
fn random_token_buckets_refuse_as_a_queue_of_balking_work() {
    use sim_models::config::RateLimitConfig;
    use sim_models::outcome::Reason;

    on_draws("STORMSIM_BUCKET_DRAWS", 0x7a3f_1c2d, |d, draw| {
        let lambda = 200.0;
        let rho: f64 = [0.5, 0.8, 0.95, 1.0, 1.05, 1.25, 2.0][draw(7) as usize];
        let burst = [1, 2, 3, 5, 8, 13, 20][draw(7) as usize];
        let at_gateway = draw(2) == 0;
        let refused = bucket_refusals(rho, burst);
        let limit = RateLimitConfig {
            rps: lambda / rho,
            burst: Some(burst),
            retry_after: secs(1),
        };
        let mut refusals = vec![];
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, lambda);
            let mut db = failing(0.0);
            if at_gateway {
                cfg.gateway.rate_limit = Some(limit.clone());
            } else {
                db.rate_limit = Some(limit.clone());
            }
            let client = retrying_every_failure(0, Backoff::fixed(ms(1)));
            cfg.services
                .insert("a".into(), service(1, vec![call("db", client)]));
            cfg.dependencies.insert("db".into(), db);
            let (nodes, _) = go(&cfg);
            for (e, b) in nodes.of("a->db").skip(1).zip(nodes.buckets.iter().skip(1)) {
                refusals.push(if at_gateway {
                    let offered = b.count(Count::Offered) as f64;
                    (offered, b.outcome(Reason::RateLimited) as f64)
                } else {
                    (e.offered as f64, b.count(Count::UpstreamRateLimited) as f64)
                });
            }
        }
        let door = if at_gateway {
            "the service's door"
        } else {
            "the dependency's"
        };
        let what = format!("draw {d} (at {door}, burst {burst}, ρ {rho})");
        off_theory(
            &what,
            "the balking queue",
            &[(
                "share refused",
                &refusals,
                refused,
                Some(refused * per_batch(&refusals)),
            )],
        )
    });
}

/// The share of Poisson arrivals (ρ = λ/r) a token bucket of `burst`
/// refuses: P(W > τ) for the work W of
/// [`random_token_buckets_refuse_as_a_queue_of_balking_work`], in units
/// of D = 1/r (τ = burst − 1). The density, divided by π₀, is
/// solved cell by cell (1,000 a unit, each at its midpoint, where the
/// equation's jumps and kinks fall on cells' edges: second order,
/// converged to seven places) from the left, each cell's value depending
/// on the cells before it and on itself through the integral up to its
/// midpoint.
fn bucket_refusals(rho: f64, burst: u32) -> f64 {
    const N: usize = 1000;
    let h = 1.0 / N as f64;
    let tau = (burst as usize - 1) * N;
    let cells = tau + N;
    let mut g = vec![0.0; cells];
    // up[j]: the integral of g over the cells before j.
    let mut up = vec![0.0; cells + 1];
    for j in 0..cells {
        let fresh = if j < N { 1.0 } else { 0.0 };
        let below = if j >= N {
            up[j - N] + h / 2.0 * g[j - N]
        } else {
            0.0
        };
        g[j] = if j < tau {
            rho * (fresh + up[j] - below) / (1.0 - rho * h / 2.0)
        } else {
            rho * (fresh + up[tau] - below)
        };
        up[j + 1] = up[j] + h * g[j];
    }
    (up[cells] - up[tau]) / (1.0 + up[cells])
}

/// The balking queue's solution where it has a closed form: a bucket of
/// one token lets a request in only when full, so it is Erlang's loss
/// system with one server (insensitive to the refill's fixed time):
/// ρ/(1 + ρ) refused.
#[test]
fn a_bucket_of_one_token_refuses_as_erlangs_loss_with_one_server() {
    for rho in [0.1, 0.5, 1.0, 1.7, 4.0] {
        let got = bucket_refusals(rho, 1);
        assert!((got - rho / (1.0 + rho)).abs() < 1e-9, "ρ {rho}: {got}");
    }
}

/// Google SRE's adaptive throttle (the SRE book, "Handling Overload")
/// before a rate limit's token bucket, on parameters drawn from a seed.
/// Over its window W the client counts `requests` (every attempt it
/// tries, those it refuses itself included) and `accepts` (answers that
/// are not an overload signal), and refuses an attempt itself with
/// chance max(0, (requests − K·accepts)/(requests + 1)). With Poisson
/// requests at λ and accepts at a, both counted over W at an arrival
/// (PASTA), it sends s = λ·(1 + K·a·W)/(λ·W + 1) while that chance stays
/// above 0 (here λ ≥ 1.5·K times the bucket's rate r, and a ≤ r). What it
/// sends is Poisson thinned by a chance that moves slowly, so the bucket
/// (rate r, `burst` tokens) lets through a(s) = s·(1 − q(s/r)) of it
/// ([`accepted`]), and s is where the two meet ([`throttled_send_rate`]).
/// Checked: the share of requests the client refuses itself, 1 − s/λ,
/// and the share of those it sends that the bucket refuses, q(s/r).
///
/// That fixed point takes the window's counts at their means. Their
/// spread comes back through the throttle with gain g = K·a′(s) (more
/// accepts, fewer refusals, more sent, more accepts), so it grows as
/// 1/(1 − g), and the accepts' curvature in s then moves the means: with
/// K = 1.1 and a bucket of 1 or 2 tokens (g near 0.9) the client sent up
/// to 28 % more than the fixed point says. Parameters are drawn again
/// until g ≤ 0.4, where 600 checks over 300 draws showed no bias
/// (between 0.4 and 0.7 their spread was 1.1–1.4 standard errors).
///
/// λ is 300 or 600 a second, so the window's counts (6,000 and more) are
/// large enough for the chance's curvature in them to stay below the
/// checks' 0.1 % floor. Each draw runs 4 seeds of 10 minutes; the
/// minutes before three windows have passed are left out (the client
/// starts with empty counts). Over 300 draws (`STORMSIM_SRE_DRAWS`; 8
/// here) the errors over their standard errors had means of 0.06
/// (refused by the client) and 0.00 (by the bucket), standard deviations
/// 1.06 and 0.90, none beyond ±3.9. Counting as requests only the
/// attempts sent (s² = λ·K·a) fails all 16 of the suite's checks (80 of
/// 80 in 40 draws); taking the bucket to waste no token (a = min(s, r))
/// fails 2 (14 of 80): where g ≤ 0.4 the bucket is mostly past its rate.
#[test]
fn random_sre_throttles_send_k_per_accept_into_a_token_bucket() {
    use sim_models::config::RateLimitConfig;
    use sim_models::outcome::Reason;
    use sim_models::policy::throttle::ThrottleSpec;

    on_draws("STORMSIM_SRE_DRAWS", 0xa409_3822, |d, draw| {
        // Drawn again until the throttle's loop gain is at most 0.4.
        let (lambda, k, rate, burst, window, s) = loop {
            let lambda = [300.0, 600.0][draw(2) as usize];
            let k = [1.1, 1.5, 2.0, 3.0][draw(4) as usize];
            let over = [1.5, 2.0, 3.0][draw(3) as usize];
            let rate = lambda / (over * k);
            let burst = [1, 2, 5, 10, 20][draw(5) as usize];
            let window: u64 = [20, 30, 60][draw(3) as usize];
            let s = throttled_send_rate(lambda, k, window as f64, rate, burst);
            let gain = k * (accepted(s * 1.001, rate, burst) - accepted(s * 0.999, rate, burst))
                / (0.002 * s);
            if gain <= 0.4 {
                break (lambda, k, rate, burst, window, s);
            }
        };
        let skip = (3 * window).div_ceil(60) as usize;
        let (mut by_client, mut by_bucket) = (vec![], vec![]);
        for seed in 1..=4 {
            let mut cfg = ten_minutes_into_a(d * 4 + seed, lambda);
            let mut db = failing(0.0);
            db.rate_limit = Some(RateLimitConfig {
                rps: rate,
                burst: Some(burst),
                retry_after: secs(1),
            });
            let mut client = retrying_every_failure(0, Backoff::fixed(ms(1)));
            client.throttle = Some(ThrottleSpec::Sre {
                k,
                window: secs(window),
            });
            cfg.services
                .insert("a".into(), service(1, vec![call("db", client)]));
            cfg.dependencies.insert("db".into(), db);
            let (nodes, _) = go(&cfg);
            for b in nodes.buckets.iter().skip(skip) {
                let tried = b.count(Count::Offered) as f64;
                let refused = b.count(Count::ThrottleRejected) as f64;
                by_client.push((tried, refused));
                by_bucket.push((tried - refused, b.count(Count::UpstreamRateLimited) as f64));
                assert_eq!(
                    b.count(Count::ThrottleRejected),
                    b.outcome(Reason::Throttled)
                );
            }
        }
        let q = 1.0 - accepted(s, rate, burst) / s;
        let what =
            format!("draw {d} (λ {lambda}, K {k}, r {rate:.1}, burst {burst}, W {window} s)");
        off_theory(
            &what,
            "the throttle's fixed point",
            &[
                (
                    "share refused by the client",
                    &by_client,
                    1.0 - s / lambda,
                    None,
                ),
                (
                    "share of those sent refused by the bucket",
                    &by_bucket,
                    q,
                    None,
                ),
            ],
        )
    });
}

/// The rate an SRE throttle sends at, before a token bucket of rate
/// `rate` and `burst` tokens, with Poisson requests at `lambda` and the
/// throttle's `k` and window `w` (seconds): the s in (0, λ] where
/// s = λ·(1 + k·a(s)·w)/(λ·w + 1), a(s) the accepts ([`accepted`]). The right side less s is above 0 at s = 0,
/// below it at λ (the throttle refuses some), and concave (the accepts
/// grow ever slower as the bucket runs dry), so it crosses 0 once: the
/// root is bisected.
fn throttled_send_rate(lambda: f64, k: f64, w: f64, rate: f64, burst: u32) -> f64 {
    let gap = |s: f64| lambda * (1.0 + k * accepted(s, rate, burst) * w) / (lambda * w + 1.0) - s;
    let (mut lo, mut hi) = (0.0, lambda);
    assert!(gap(hi) < 0.0, "the throttle refuses nothing at λ {lambda}");
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if gap(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// What a token bucket of rate `rate` and `burst` tokens lets through of
/// Poisson arrivals at `s` a second: s·(1 − q(s/r)) ([`bucket_refusals`]).
fn accepted(s: f64, rate: f64, burst: u32) -> f64 {
    s * (1.0 - bucket_refusals(s / rate, burst))
}
