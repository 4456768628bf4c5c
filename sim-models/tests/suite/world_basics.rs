//! The world end to end: conservation, late answers, restarts, limits,
//! determinism.

use sim_core::dist::DistSpec;
use sim_core::time::SimDuration;
use sim_models::config::{HealthConfig, WorldConfig};
use sim_models::outcome::Reason;
use sim_models::policy::backoff::Backoff;
use sim_models::recorder::{BucketRow, Count, Latency, Level};
use sim_models::timeline::Param;
use sim_models::timeline::{At, PulseAction, TimelineEntry};
use sim_models::world::{RunFailure, WorldError, run};

fn secs(s: u64) -> SimDuration {
    SimDuration::from_secs(s)
}
fn ms(v: u64) -> SimDuration {
    SimDuration::from_millis(v)
}

fn run_rows(cfg: &WorldConfig) -> (Vec<BucketRow>, sim_models::recorder::RunTotals) {
    let out = run(cfg, Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    (out.sink, out.totals)
}

#[test]
fn a_quiet_world_answers_everything_once() {
    let cfg = WorldConfig::default(); // 100 rps for 60 s, 50 ms median upstream
    let (rows, totals) = run_rows(&cfg);
    assert_eq!(rows.len(), 60);
    let offered = totals.count(Count::Offered);
    // Poisson count over 60 s at 100/s: 6,000 ± 77; allow 5 sd.
    assert!((5_600..=6_400).contains(&offered), "offered {offered}");
    // Everything not still in flight at the end succeeded, one attempt each.
    let in_flight = offered - totals.finished();
    assert!(in_flight < 50, "{in_flight} in flight at the end");
    assert_eq!(totals.outcome(Reason::Success), totals.finished());
    assert_eq!(totals.count(Count::AttemptsRetry), 0);
    assert_eq!(totals.count(Count::AttemptsFirst), offered);
    // Connections are reused: few dials, no waiting.
    let wait = totals.latency(Latency::PoolWait);
    assert_eq!(wait.max(), Some(0));
    let e2e = totals.latency(Latency::EndToEnd);
    let p50 = e2e.quantile(0.5).unwrap() as f64 / 1e6;
    assert!((45.0..=55.0).contains(&p50), "median e2e {p50} ms");
}

#[test]
fn late_answers_are_counted_late_never_as_success() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.latency = DistSpec::Constant(ms(200));
    cfg.client.attempt_timeout = Some(ms(100));
    cfg.client.retry.max_retries = 2;
    cfg.client.retry.backoff = Backoff::fixed(ms(10));
    let (_, t) = run_rows(&cfg);
    assert_eq!(t.outcome(Reason::Success), 0);
    assert!(t.outcome(Reason::AttemptTimeout) > 5_000);
    let attempts = t.count(Count::AttemptsFirst) + t.count(Count::AttemptsRetry);
    // Every attempt's answer comes back late (but the last few, still in
    // service when the run ends).
    let late = t.count(Count::LateResponses);
    assert!(
        late + 200 >= attempts && late <= attempts,
        "late {late} of {attempts} attempts"
    );
    assert_eq!(late, t.count(Count::UpstreamWasted));
    assert_eq!(t.count(Count::UpstreamGoodput), 0);
    // Three attempts per request.
    let amp = t.amplification();
    assert!((2.95..=3.0).contains(&amp), "amplification {amp}");
}

/// Readiness takes saturated pods out of rotation without restarting them:
/// while every pod is out, new requests are unavailable at once; once the
/// lines drain, the next passing probe brings each pod back.
#[test]
fn unready_pods_leave_rotation_and_come_back() {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(150);
    cfg.load.rate = 5.0;
    cfg.service.pods = 2;
    cfg.service.pool.max_connections = 5;
    // 10 connections at 100 ms carry 100 rps; ×40 (4 s) only 2.5.
    cfg.upstream.latency = DistSpec::Constant(ms(100));
    cfg.service.health = Some(HealthConfig {
        period: secs(5),
        timeout: secs(1),
        failure_threshold: 1_000,
        readiness_threshold: Some(1),
        ..HealthConfig::default()
    });
    cfg.timeline.push(TimelineEntry {
        at: At::Offset(secs(30)),
        set: None,
        ramp: None,
        pulse: Some(PulseAction {
            param: Param::UpstreamLatencyScale.into(),
            value: 40.0,
            duration: secs(40),
        }),
        kill_pod: None,
        restart_pod: None,
        restart_all: None,
        pod_fault: None,
        service: None,
        deploy: None,
    });
    let (rows, t) = run_rows(&cfg);
    assert_eq!(t.count(Count::PodRestarts), 0, "readiness never restarts");
    let unready_max = rows.iter().map(|r| r.level(Level::PodsUnready).max).max();
    assert_eq!(unready_max, Some(2), "both pods left rotation");
    assert!(
        t.outcome(Reason::Unavailable) > 10,
        "{}",
        t.outcome(Reason::Unavailable)
    );
    // Before the trigger and at the end, both pods are in rotation.
    assert!(rows[..30].iter().all(|r| r.level(Level::PodsUp).min == 2));
    let last = rows.last().unwrap();
    assert_eq!(
        (
            last.level(Level::PodsUp).last,
            last.level(Level::PodsUnready).last
        ),
        (2, 0)
    );
    // A threshold of zero is refused, naming the field.
    let mut bad = cfg.clone();
    if let Some(h) = bad.service.health.as_mut() {
        h.readiness_threshold = Some(0);
    }
    let errors = bad.validate().unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.path == "service.health.readiness_threshold"),
        "{errors:?}"
    );
    // Up + unready + down is always the number of pods.
    for r in &rows {
        let l = |x| r.level(x).last;
        assert_eq!(
            l(Level::PodsUp) + l(Level::PodsUnready) + l(Level::PodsDown),
            2
        );
    }
}

#[test]
fn cancellation_stops_abandoned_work_at_the_upstream() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.latency = DistSpec::Constant(ms(200));
    cfg.upstream.cancellation = true;
    cfg.client.attempt_timeout = Some(ms(100));
    let (_, t) = run_rows(&cfg);
    assert_eq!(t.count(Count::UpstreamWasted), 0);
    assert!(t.count(Count::UpstreamCancelled) > 5_000);
}

#[test]
fn saturated_pods_fail_their_probes_and_restart() {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(120);
    cfg.service.pods = 2;
    cfg.service.pool.max_connections = 5;
    cfg.upstream.latency = DistSpec::Constant(secs(2)); // 10 conns / 2 s = 5 rps capacity
    cfg.service.health = Some(HealthConfig {
        period: secs(5),
        timeout: secs(1),
        failure_threshold: 2,
        restart_time: secs(10),
        ..HealthConfig::default()
    });
    let (rows, t) = run_rows(&cfg);
    assert!(
        t.count(Count::PodRestarts) >= 2,
        "restarts {}",
        t.count(Count::PodRestarts)
    );
    assert!(t.outcome(Reason::PodRestarted) > 100);
    // Some buckets see pods down; while both are down, requests are unavailable.
    assert!(rows.iter().any(|r| r.level(Level::PodsDown).max >= 1));
    assert!(rows.iter().all(|r| r.level(Level::PoolInUse).max <= 10));
}

/// Scaling three pods down to one fails the requests the two others
/// hold (`pod_restarted`), and the gateway sends them again at once: one
/// sent to the second pod before the same step takes that pod down too is
/// sent a third time, to the first, while its second dispatch is still
/// on the wire. It reaches the pod once: it once arrived for each
/// dispatch, queued twice, and the worker line counted more waiters than
/// it held.
#[test]
fn a_request_sent_again_while_an_earlier_dispatch_is_on_the_wire_arrives_once() {
    use sim_models::config::GatewayRetry;
    use sim_models::timeline::SetAction;
    let mut cfg = WorldConfig::default();
    cfg.seed = 3;
    cfg.clock.duration = secs(20);
    cfg.load.rate = 200.0;
    cfg.gateway.retry = Some(GatewayRetry {
        max_retries: 2,
        on: vec![Reason::PodRestarted],
    });
    cfg.service.pods = 3;
    cfg.service.workers = Some(4);
    cfg.upstream.capacity = 10_000;
    cfg.upstream.latency = DistSpec::Constant(ms(100));
    cfg.client.attempt_timeout = Some(secs(5));
    cfg.timeline.push(TimelineEntry {
        set: Some(SetAction {
            param: Param::ServicePods.into(),
            value: 1.0,
        }),
        ..TimelineEntry::at_offset(secs(5))
    });
    // The worker lines' counts are checked at every bucket close here
    // (the test profile) and at the end of every run.
    let (_, t) = run_rows(&cfg);
    assert!(t.outcome(Reason::PodRestarted) == 0, "every one sent again");
    assert!(t.count(Count::Offered) > 3_900);
}

#[test]
fn timeline_pulse_changes_and_reverts_the_load() {
    let mut cfg = WorldConfig::default();
    cfg.timeline.push(TimelineEntry {
        at: At::Offset(secs(20)),
        set: None,
        ramp: None,
        pulse: Some(PulseAction {
            param: Param::LoadRate.into(),
            value: 500.0,
            duration: secs(10),
        }),
        kill_pod: None,
        restart_pod: None,
        restart_all: None,
        pod_fault: None,
        service: None,
        deploy: None,
    });
    let (rows, _) = run_rows(&cfg);
    let offered = |range: std::ops::Range<usize>| {
        rows[range.clone()]
            .iter()
            .map(|r| r.count(Count::Offered))
            .sum::<u64>() as f64
            / range.len() as f64
    };
    let before = offered(5..20);
    let during = offered(20..30);
    let after = offered(35..60);
    assert!((90.0..110.0).contains(&before), "{before}");
    assert!((470.0..530.0).contains(&during), "{during}");
    assert!((90.0..110.0).contains(&after), "{after}");
}

#[test]
fn same_seed_same_rows_other_seed_other_rows() {
    let mut cfg = WorldConfig::default();
    cfg.client.retry.max_retries = 2;
    cfg.upstream.errors.http_500 = 0.2;
    let a = run_rows(&cfg).0;
    let b = std::thread::spawn({
        let cfg = cfg.clone();
        move || run_rows(&cfg).0
    })
    .join()
    .unwrap();
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    cfg.seed = 2;
    assert_ne!(format!("{a:?}"), format!("{:?}", run_rows(&cfg).0));
}

#[test]
fn limits_stop_the_run_with_the_seed_and_the_limit_named() {
    let mut cfg = WorldConfig::default();
    cfg.seed = 77;
    cfg.upstream.latency = DistSpec::Constant(secs(100));
    cfg.limits.max_in_flight = 10;
    let err = run(&cfg, Vec::new()).err().expect("limit hit");
    let msg = err.to_string();
    assert!(matches!(err, WorldError::Run { seed: 77, .. }));
    assert!(
        msg.contains("seed 77") && msg.contains("limits.max_in_flight"),
        "{msg}"
    );
    // A limit to raise, told as one: not as a broken invariant.
    assert!(
        matches!(
            err,
            WorldError::Run {
                failure: RunFailure::Limit(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        !msg.contains("invariant") && msg.contains("raise it under the experiment's `limits:`"),
        "{msg}"
    );

    let mut cfg = WorldConfig::default();
    cfg.limits.max_events = 1_000;
    let err = run(&cfg, Vec::new()).err().expect("limit hit");
    let msg = err.to_string();
    assert!(msg.contains("max_events"), "{msg}");
    // A typed cause chain: the world's error, why the run stopped, and the
    // engine's own error underneath.
    let WorldError::Run { failure, .. } = &err else {
        panic!("a run failure: {err}")
    };
    assert!(matches!(
        failure,
        RunFailure::Engine {
            busiest: Some(_),
            ..
        }
    ));
    let engine = std::error::Error::source(&err)
        .and_then(|f| f.source())
        .expect("the engine's error");
    assert!(
        engine.downcast_ref::<sim_core::sim::RunError>().is_some(),
        "{engine}"
    );
}

#[test]
fn invalid_configs_name_their_fields() {
    let mut cfg = WorldConfig::default();
    cfg.load.rate = -1.0;
    cfg.upstream.errors.http_500 = 1.5;
    cfg.client.total_deadline = Some(secs(10));
    cfg.client.attempt_timeout = Some(secs(30));
    cfg.service.pool.connect_time = DistSpec::Uniform {
        low: secs(2),
        high: secs(1),
    };
    let Err(WorldError::Config(errs)) = run(&cfg, Vec::new()) else {
        panic!("invalid")
    };
    let paths: Vec<_> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "load.rate",
            "service.pool.connect_time.high",
            "upstream.errors.http_500",
            "client.attempt_timeout"
        ]
    );
}

/// The per-group pool figures are a partition of the totals: time-weighted
/// means and wait counts add up, bucket by bucket, through a storm.
#[test]
fn pod_groups_add_up_to_the_pool_totals() {
    use sim_models::recorder::pod_group_spans;
    let mut cfg = sim_models::scenarios::storm_1402();
    cfg.service.pod_groups = Some(3);
    assert_eq!(pod_group_spans(8, 3), vec![(0, 2), (3, 5), (6, 7)]);
    // Two pods added mid-storm report in the last group.
    cfg.timeline.push(TimelineEntry {
        at: At::Offset(secs(200)),
        set: Some(sim_models::timeline::SetAction {
            param: Param::ServicePods.into(),
            value: 10.0,
        }),
        ramp: None,
        pulse: None,
        kill_pod: None,
        restart_pod: None,
        restart_all: None,
        pod_fault: None,
        service: None,
        deploy: None,
    });
    let rows: Vec<BucketRow> = run(&cfg, Vec::new()).unwrap().sink;
    let mut busy = 0;
    for r in &rows {
        assert_eq!(r.groups.len(), 3);
        for (level, part) in [
            (
                Level::PoolInUse,
                r.groups.iter().map(|g| g.in_use).collect::<Vec<_>>(),
            ),
            (
                Level::PoolWaiters,
                r.groups.iter().map(|g| g.waiters).collect(),
            ),
        ] {
            let total = r.level(level);
            let sum: f64 = part.iter().map(|g| g.mean).sum();
            assert!(
                (sum - total.mean).abs() <= 1e-9 * total.mean.max(1.0),
                "bucket {} {level:?}",
                r.index
            );
            assert_eq!(part.iter().map(|g| g.last).sum::<i64>(), total.last);
            assert!(part.iter().all(|g| g.max <= total.max));
        }
        let waits: u64 = r.groups.iter().map(|g| g.wait.count).sum();
        assert_eq!(waits, r.latency(Latency::PoolWait).count);
        busy += usize::from(r.level(Level::PoolWaiters).max > 0);
    }
    assert!(
        busy > 30,
        "the storm queued for connections in {busy} buckets"
    );
    // Groups must fit the pods.
    cfg.service.pod_groups = Some(9);
    let errors = cfg.validate().unwrap_err();
    assert!(
        errors.iter().any(|e| e.path == "service.pod_groups"),
        "{errors:?}"
    );
}

/// `cfg`'s key figures, recovery judged by the defaults.
fn judged(cfg: &WorldConfig) -> sim_models::kpi::Kpis {
    use sim_models::kpi::{RecoveryConfig, kpi_rows, kpis};
    let out = run(cfg, Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    kpis(
        &kpi_rows(&out.sink),
        &out.totals,
        &out.steps,
        &RecoveryConfig::default(),
        cfg.clock.window,
    )
}

#[test]
fn a_pulse_that_outlasts_the_run_leaves_recovery_unjudged() {
    // A healthy world with a harmless pulse (latency ×1.01) from 60 s that
    // would end after the run: nothing to judge, so never "metastable".
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(120);
    cfg.load.rate = 50.0;
    let pulse = |duration| TimelineEntry {
        at: At::Offset(secs(60)),
        set: None,
        ramp: None,
        pulse: Some(PulseAction {
            param: Param::UpstreamLatencyScale.into(),
            value: 1.01,
            duration,
        }),
        kill_pod: None,
        restart_pod: None,
        restart_all: None,
        pod_fault: None,
        service: None,
        deploy: None,
    };
    cfg.timeline.push(pulse(secs(600)));
    let k = judged(&cfg);
    assert!(!k.recovery_judged && !k.metastable, "{k:?}");
    assert_eq!(k.time_to_recover_s, None);
    // The same pulse ending inside the run is judged: recovered at once.
    cfg.clock.duration = secs(300);
    cfg.timeline[0] = pulse(secs(10));
    let k = judged(&cfg);
    assert!(k.recovery_judged && !k.metastable, "{k:?}");
    assert!(k.time_to_recover_s.is_some_and(|t| t < 15.0), "{k:?}");
}

#[test]
fn a_load_the_timeline_leaves_at_another_rate_is_judged_at_that_rate() {
    use sim_models::kpi::Kpis;
    use sim_models::timeline::SetAction;
    // The load set, at 60 s, from 400/s to 100/s for good, or from 100/s
    // to 1,000/s where 40 upstream slots serve about 650/s: judged against
    // what the new rate should give, not the goodput before the change.
    let judge = |seed: u64, from: f64, to: f64| -> Kpis {
        let mut cfg = WorldConfig::default();
        cfg.seed = seed;
        cfg.clock.duration = secs(240);
        cfg.load.rate = from;
        cfg.upstream.capacity = 40;
        cfg.timeline.push(TimelineEntry {
            set: Some(SetAction {
                param: Param::LoadRate.into(),
                value: to,
            }),
            ..TimelineEntry::at_offset(secs(60))
        });
        judged(&cfg)
    };
    for seed in 1..=4 {
        // A fall to a quarter is served at once: recovered, goodput a
        // quarter of what it was. A rise to 400/s within capacity is
        // served too, its backlog four times the one before (Little's
        // law), not a backlog left over.
        for (from, to) in [(400.0, 100.0), (100.0, 400.0)] {
            let k = judge(seed, from, to);
            assert!(k.recovery_judged && !k.metastable, "seed {seed}: {k:?}");
            assert!(
                k.time_to_recover_s.is_some_and(|t| t <= 20.0),
                "seed {seed}, {from} to {to}: {:?}",
                k.time_to_recover_s
            );
        }
        // A rise past capacity never is: goodput stays near 650/s, short
        // of the 950/s expected, though far over the 100/s before it.
        let k = judge(seed, 100.0, 1000.0);
        assert!(k.recovery_judged && k.metastable, "seed {seed}: {k:?}");
        assert_eq!(k.recover_goodput_s, None, "seed {seed}");
    }
}

#[test]
fn every_attempt_started_is_recorded_as_ended_by_its_outcome() {
    // Retries on timeouts and 5xx, a breaker-free storm: at a quiet end
    // every attempt the recorder saw start, it saw end, by outcome.
    let mut cfg = WorldConfig::default();
    cfg.seed = 5;
    cfg.clock.duration = secs(90);
    cfg.load.rate = 200.0;
    cfg.upstream.errors.http_500 = 0.2;
    cfg.client.retry.max_retries = 3;
    cfg.client.attempt_timeout = Some(ms(300));
    cfg.timeline.push(TimelineEntry {
        at: At::Offset(secs(20)),
        set: None,
        ramp: None,
        pulse: Some(PulseAction {
            param: Param::LoadRate.into(),
            value: 0.0,
            duration: secs(70),
        }),
        kill_pod: None,
        restart_pod: None,
        restart_all: None,
        pod_fault: None,
        service: None,
        deploy: None,
    });
    let (rows, t) = run_rows(&cfg);
    let ended: u64 = Count::ENDED.iter().map(|&c| t.count(c)).sum();
    assert_eq!(ended, t.attempts_ended());
    assert_eq!(
        t.attempts(),
        ended,
        "nothing in flight after 70 s of silence"
    );
    assert!(t.count(Count::EndedServerError) > 0 && t.count(Count::EndedSuccess) > 0);
    // Per bucket the columns add up to the totals.
    for c in Count::ENDED {
        assert_eq!(rows.iter().map(|r| r.count(c)).sum::<u64>(), t.count(c));
    }
}

/// One ordering rule: a leg with no delay configured and a leg of
/// `constant: 0s` are the same physics and run in the same order, so they
/// give the same rows, bucket for bucket. The world is built for ties:
/// evenly spaced arrivals, constant service times that collide with the
/// arrival grid and with the attempt timeout, retries on timeout.
#[test]
fn a_leg_of_no_delay_and_a_leg_of_zero_seconds_are_the_same_world() {
    let mut bare = WorldConfig::default();
    bare.clock.duration = secs(20);
    bare.load.rate = 200.0;
    bare.load.arrivals = sim_models::config::ArrivalProcess::Constant;
    bare.upstream.capacity = 4;
    bare.upstream.latency = DistSpec::Constant(ms(25));
    bare.client.attempt_timeout = Some(ms(100));
    bare.client.retry.max_retries = 2;
    bare.client.retry.backoff = Backoff::fixed(ms(25));
    let mut zero = bare.clone();
    let z = Some(DistSpec::Constant(SimDuration::ZERO));
    zero.network.gateway_to_pod = z.clone();
    zero.network.pod_to_gateway = z.clone();
    zero.network.pod_to_upstream = z.clone();
    zero.network.upstream_to_pod = z;
    let (a, ta) = run_rows(&bare);
    let (b, tb) = run_rows(&zero);
    assert!(ta.count(Count::AttemptsRetry) > 100, "a world with retries");
    assert_eq!(a, b);
    assert_eq!(ta.finished(), tb.finished());
}

/// The event limit names the busiest kinds even when it is tiny.
#[test]
fn a_tiny_event_limit_still_names_the_busiest_events() {
    let mut cfg = WorldConfig::default();
    cfg.limits.max_events = 10;
    let msg = run(&cfg, Vec::new()).err().expect("limit hit").to_string();
    let named = msg.split("most events were ").nth(1).unwrap_or("");
    assert!(named.contains('%'), "{msg}");
}

/// A loop of zero delays (a user with no think time refused at once by
/// the gateway's rate limit, and asking again at once) never moves the
/// clock: the run stops at the instant limit, naming it and the kind of
/// event that looped, instead of grinding on to the event limit.
#[test]
fn a_loop_of_zero_delays_stops_at_the_instant_limit() {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(10);
    cfg.load.rate = 0.0;
    cfg.load.closed_loop = Some(sim_models::config::ClosedLoopConfig {
        users: 1,
        think: DistSpec::Constant(SimDuration::ZERO),
    });
    cfg.gateway.rate_limit = Some(sim_models::config::RateLimitConfig {
        rps: 0.001,
        burst: Some(1),
        retry_after: secs(1),
    });
    cfg.limits.max_events_at_instant = 100_000;
    let err = run(&cfg, Vec::new()).err().expect("the limit stops it");
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            WorldError::Run {
                failure: RunFailure::Engine {
                    source: sim_core::sim::RunError::ClockStoodStill { limit: 100_000, .. },
                    ..
                },
                ..
            }
        ),
        "{msg}"
    );
    assert!(
        msg.contains("raise limits.max_events_at_instant") && msg.contains("load/UserReady"),
        "{msg}"
    );
    // The same users thinking for a millisecond run to the end.
    cfg.load.closed_loop.as_mut().unwrap().think = DistSpec::Constant(ms(1));
    assert!(run(&cfg, Vec::new()).is_ok());
}

/// A bucket holds what happened in [start, end), whatever order the
/// events were scheduled in: a restart at a bucket's edge is the next
/// bucket's, with buckets of any width, and one at the run's end is past
/// the run. (When the close was an event, the restart at 2 s fell in
/// the bucket ending at 2 s or the one starting there with the buckets'
/// width, and the one at 10 s was counted with 500 ms buckets and lost
/// with 1 s ones.)
#[test]
fn an_event_at_a_buckets_edge_is_the_next_buckets_and_one_at_the_end_is_past_the_run() {
    let restart = |at: u64| TimelineEntry {
        restart_pod: Some(0),
        ..TimelineEntry::at_offset(secs(at))
    };
    for (bucket, edge) in [(ms(500), 4), (secs(1), 2), (secs(2), 1)] {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(10);
        cfg.clock.bucket = bucket;
        cfg.service.pods = 2;
        cfg.timeline = vec![restart(2), restart(10)];
        let (rows, totals) = run_rows(&cfg);
        let restarts: Vec<u64> = rows.iter().map(|r| r.count(Count::PodRestarts)).collect();
        let at = |i: usize| u64::from(i == edge);
        assert_eq!(
            restarts,
            (0..rows.len()).map(at).collect::<Vec<_>>(),
            "buckets of {bucket}"
        );
        assert_eq!(
            rows[edge].start,
            sim_core::time::SimTime::ZERO.saturating_add(secs(2))
        );
        assert_eq!(
            totals.counts[Count::PodRestarts as usize],
            1,
            "buckets of {bucket}"
        );
    }
}

/// A gateway told to stop the service's work at its deadline does so for
/// users who gave up sooner too: its clock runs on without them. Against
/// a dependency that accepts and never answers, users who give up after
/// 100 ms leave work behind; with `cancel_service_on_deadline` and a 1 s
/// deadline the service holds about a second's requests (100), without
/// it every request of the run (about 2,000). (The deadline was once
/// armed only when it came before the user's patience, so the service's
/// work on every user who gave up went on forever.)
#[test]
fn the_gateway_stops_the_work_of_users_who_gave_up_at_its_deadline() {
    let held = |cancel: bool| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(20);
        cfg.load.rate = 100.0;
        cfg.load.patience = Some(DistSpec::Constant(ms(100)));
        cfg.gateway.deadline = Some(secs(1));
        cfg.gateway.cancel_service_on_deadline = cancel;
        cfg.upstream.capacity = 0;
        cfg.upstream.queue_limit = 100_000;
        cfg.service.pool.max_connections = 10_000;
        let (rows, totals) = run_rows(&cfg);
        // Every user gave up before the deadline.
        let ended: u64 = totals.outcomes.iter().sum();
        assert_eq!(totals.outcomes[Reason::Abandoned.index()], ended);
        let last = rows.last().unwrap();
        last.level(Level::ServiceInFlight).last
    };
    let (with, without) = (held(true), held(false));
    assert!((70..=130).contains(&with), "with the cancel: {with}");
    assert!((1800..=2200).contains(&without), "without: {without}");
}
