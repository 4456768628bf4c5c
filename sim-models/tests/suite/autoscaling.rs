//! The autoscaler in a running world, against Kubernetes' rules worked
//! out by hand: from too few pods it doubles each pass it may, holds while
//! the pods it added start (counted idle) and while they have no sample
//! yet, and settles where `λ × work / (cores × target × pods)` is within
//! the tolerance of 1, the cores as busy as Little's law says; it scales down only after
//! the 300 s window, draining pods without failing what they hold when
//! the grace is long enough, and failing it when it is not.

use sim_core::dist::DistSpec;
use sim_core::time::SimDuration;
use sim_models::autoscaler::{
    AutoscalingSpec, Metric, MetricTarget, PolicyKind, ScalingPolicy, ScalingRules, Shutdown,
};
use sim_models::config::{ClientConfig, WorldConfig};
use sim_models::load::{ArrivalProcess, GatewayRetry};
use sim_models::outcome::Reason;
use sim_models::pods::HealthConfig;
use sim_models::recorder::{Count, Discard, Level};
use sim_models::timeline::{Param, RestartAll, SetAction, TimelineEntry};

use crate::common::{ms, secs};
use sim_models::world::{RunFailure, WorldError, run};

use crate::graphs::{Nodes, call, failing, go, hold_at_a, service, ten_minutes_into_a};

/// `a`: `pods` pods of 4 cores, each request 10 ms of its own work and
/// no call, autoscaled on CPU at a 50 % target up to 40 pods; `lambda`
/// requests a second.
fn cpu_bound(seed: u64, pods: u32, lambda: f64) -> WorldConfig {
    let mut cfg = ten_minutes_into_a(seed, lambda);
    cfg.clock.bucket = secs(5);
    let mut a = service(pods, Vec::new());
    a.work = Some(DistSpec::Exponential { mean: ms(10) });
    a.cores = Some(4);
    a.autoscaling = Some(AutoscalingSpec {
        max_replicas: Some(40),
        target: Some(50.0),
        ..AutoscalingSpec::default()
    });
    cfg.services.insert("a".into(), a);
    cfg
}

/// The replicas at each bucket's end (its highest, rising; its lowest,
/// falling — the gauge's max and the next bucket's start agree).
fn replicas(nodes: &Nodes) -> Vec<u32> {
    nodes.of("a").map(|r| r.replicas.max as u32).collect()
}

#[test]
fn from_too_few_pods_it_doubles_waits_for_the_new_ones_and_settles_in_the_tolerance() {
    // 4,000 requests of 10 ms: 40 cores busy; at 50 % of 4 cores a pod,
    // 20 pods, and any count whose ratio is within 0.1 of 1 stays: 19 to
    // 22. From 5 saturated pods: at 15 s the ratio is 2, so 10 (4 pods or
    // 100 %: 100 % is more); at 30 s five are still starting and count as
    // idle, putting the ratio at 1.0: no change; at 45 s they are in
    // rotation without a sample yet (missing, idle on a scale-up): no
    // change; at 60 s all ten are saturated (by then a backlog): 20 (19
    // when a pass's samples catch a core idle now and then).
    // Then the backlog keeps the twenty busy past the target for a pass
    // or two: an overshoot, undone only after the 300 s window.
    for seed in [1, 2, 3] {
        let cfg = cpu_bound(seed, 5, 4_000.0);
        let (nodes, totals) = go(&cfg);
        let r = replicas(&nodes);
        assert!(r[..3].iter().all(|&n| n == 5), "seed {seed}: {r:?}");
        assert!(r[3..12].iter().all(|&n| n == 10), "seed {seed}: {r:?}");
        assert!((19..=20).contains(&r[12]), "seed {seed}: {r:?}");
        let last = r[r.len() - 1];
        assert!((19..=22).contains(&last), "seed {seed}: {r:?}");
        assert!(r[100..].iter().all(|&n| n == last), "seed {seed}: {r:?}");
        let (added, removed) = (
            totals.count(Count::PodsAdded),
            totals.count(Count::PodsRemoved),
        );
        assert!(added >= 15, "seed {seed}: {added} added");
        assert_eq!(added - removed, u64::from(last - 5), "seed {seed}");
        // Settled: 40 cores busy (within 3 %) over the last five minutes.
        let busy: Vec<f64> = nodes.of("a").skip(60).map(|r| r.busy.mean).collect();
        let mean = busy.iter().sum::<f64>() / busy.len() as f64;
        assert!(
            (mean / 40.0 - 1.0).abs() < 0.03,
            "seed {seed}: {mean} requests at a"
        );
    }
}

/// [`cpu_bound`] settled on 20 pods at 4,000 requests a second, the
/// load falling to a quarter at 300 s, for 900 s.
fn falling_to_a_quarter() -> WorldConfig {
    let mut cfg = cpu_bound(4, 20, 4_000.0);
    cfg.clock.duration = secs(900);
    cfg.timeline.push(TimelineEntry {
        set: Some(SetAction {
            param: Param::LoadRate.into(),
            value: 1_000.0,
        }),
        ..TimelineEntry::at_offset(secs(300))
    });
    cfg
}

#[test]
fn scale_down_waits_five_minutes_and_drains_without_failing() {
    // 20 pods settled; at 300 s the load falls to a quarter: 5 pods are
    // enough (6 or 7 by the noise of a pass's samples), but the window
    // keeps the highest recommendation of 300 s: the pass at 300 s saw
    // the busy period (20), so the pods go at 600 s, when that one leaves
    // the window, nearly all at once (100 % a period), each draining its
    // few milliseconds of work: nothing fails.
    let cfg = falling_to_a_quarter();
    let (nodes, totals) = go(&cfg);
    let r = replicas(&nodes);
    let lowest: Vec<u32> = nodes.of("a").map(|r| r.replicas.min as u32).collect();
    assert!(lowest[..120].iter().all(|&n| n == 20), "{lowest:?}");
    assert!((5..=7).contains(&lowest[120]), "{lowest:?}");
    let last = r[r.len() - 1];
    assert!(
        (5..=7).contains(&last) && r[121..].iter().all(|&n| n <= 7),
        "{r:?}"
    );
    assert_eq!(totals.count(Count::PodsRemoved), u64::from(20 - last));
    assert_eq!(totals.outcome(Reason::PodRestarted), 0);
    assert_eq!(totals.count(Count::PodRestarts), 0);
}

/// The same scale-down behind a balancer that hears of it 2 s late
/// (`endpoint_lag`): each removed pod drains its few milliseconds of
/// work, is gone, and refuses its share of the requests the balancer
/// still sends it until the news arrives, at least a twentieth of 1,000
/// a second for the 2 s (the pods it still counts, those removed
/// included) and at most a fifth (as few as five).
#[test]
fn behind_a_lagging_balancer_removed_pods_refuse_their_share_until_it_hears() {
    let mut cfg = falling_to_a_quarter();
    if let Some(a) = cfg.services.get_mut("a") {
        a.endpoint_lag = Some(secs(2));
    }
    let (_, totals) = go(&cfg);
    let removed = totals.count(Count::PodsRemoved);
    assert!((13..=15).contains(&removed), "{removed}");
    let refused = totals.outcome(Reason::PodRestarted) as f64;
    let per_pod = refused / removed as f64;
    assert!((90.0..=400.0).contains(&per_pod), "{refused} for {removed}");
    assert_eq!(totals.count(Count::PodRestarts), 0);
    // A preStop hook longer than the lag (Kubernetes' cure): each removed
    // pod serves what still reaches it for 5 s, then drains; none refused.
    // One shorter than the lag cuts the refusals without ending them.
    let with_hook = |hook: SimDuration| {
        let mut cfg = cfg.clone();
        if let Some(a) = cfg
            .services
            .get_mut("a")
            .and_then(|a| a.autoscaling.as_mut())
        {
            a.pre_stop = Some(hook);
        }
        go(&cfg).1
    };
    let t = with_hook(secs(5));
    assert_eq!(t.count(Count::PodsRemoved), removed);
    assert_eq!(t.outcome(Reason::PodRestarted), 0);
    let t = with_hook(secs(1));
    let short = t.outcome(Reason::PodRestarted) as f64;
    assert!(
        (0.3 * refused..=0.7 * refused).contains(&short),
        "{short} against {refused}"
    );
}

/// `a`: 10 pods, each request 5 s of its own work with no core limit,
/// autoscaled on requests in flight (10 a pod, no scale-down window);
/// 10 requests a second: 50 in flight, so 5 pods.
fn slow_requests(grace: u64) -> WorldConfig {
    let mut cfg = ten_minutes_into_a(5, 10.0);
    cfg.clock.duration = secs(120);
    cfg.clock.bucket = secs(5);
    let mut a = service(10, Vec::new());
    a.work = Some(DistSpec::Constant(secs(5)));
    let mut spec = AutoscalingSpec {
        max_replicas: Some(10),
        metric: Some(Metric::InFlight),
        target: Some(10.0),
        termination_grace: secs(grace),
        ..AutoscalingSpec::default()
    };
    spec.scale_down.stabilization_window = Some(secs(0));
    a.autoscaling = Some(spec);
    cfg.services.insert("a".into(), a);
    cfg
}

#[test]
fn a_short_grace_fails_what_a_removed_pod_still_holds() {
    // At 15 s the 10 pods hold 5 requests each (the first 5 s filled
    // them): half is enough. Each removed pod holds 5 requests of up to
    // 5 s: a 30 s grace lets them finish, a 1 s grace fails those not
    // done within it — 4 of each pod's 5 (one ends in each 1 s).
    let (nodes, totals) = go(&slow_requests(30));
    assert_eq!(totals.count(Count::PodsRemoved), 5);
    assert_eq!(totals.outcome(Reason::PodRestarted), 0);
    assert_eq!(replicas(&nodes)[3], 5);
    let (_, totals) = go(&slow_requests(1));
    assert_eq!(totals.count(Count::PodsRemoved), 5);
    let failed = totals.outcome(Reason::PodRestarted);
    assert!((12..=28).contains(&failed), "{failed} failed");
}

/// What a removed pod's server does on SIGTERM, worked out by hand on
/// [`slow_requests`] with arrivals every 100 ms: the balancer sends each
/// of the 10 pods one request a second, so at the pass at 15.05 s (off
/// the arrivals' grid, so no request is due at its instant) each of the
/// 5 pods removed holds 5 requests, due within 5 s.
#[test]
fn a_removed_pods_server_drains_refuses_or_exits_on_sigterm() {
    let judge = |shutdown: Shutdown, lag: Option<u64>, hook: Option<u64>| {
        let mut cfg = slow_requests(30);
        cfg.load.arrivals = ArrivalProcess::Constant;
        let a = cfg.services.get_mut("a").expect("a");
        a.endpoint_lag = lag.map(secs);
        let spec = a.autoscaling.as_mut().expect("autoscaled");
        spec.shutdown = shutdown;
        spec.pre_stop = hook.map(secs);
        spec.sync_period = ms(15_050);
        let (_, totals) = go(&cfg);
        assert_eq!(totals.count(Count::PodsRemoved), 5);
        totals.outcome(Reason::PodRestarted)
    };
    // Told at once, the balancer sends them nothing more: draining or
    // closing, each finishes its 5; exiting, each fails them.
    assert_eq!(judge(Shutdown::Drain, None, None), 0);
    assert_eq!(judge(Shutdown::Close, None, None), 0);
    assert_eq!(judge(Shutdown::Exit, None, None), 25);
    // Told 2 s late, it still sends each 2: draining, they are served;
    // closed, refused; exiting, refused as well (the pod is gone).
    // Within the grace, what a closed pod holds is done, and it is gone
    // when it is.
    assert_eq!(judge(Shutdown::Drain, Some(2), None), 0);
    assert_eq!(judge(Shutdown::Close, Some(2), None), 10);
    assert_eq!(judge(Shutdown::Exit, Some(2), None), 35);
    // A preStop hook longer than the lag takes those 2 before SIGTERM.
    // At 3 s, each pod exiting still holds 2 of its 5 and both of
    // those 2; at 8 s, longer than the last of them (due 7 s after its
    // removal), nothing.
    assert_eq!(judge(Shutdown::Close, Some(2), Some(3)), 0);
    assert_eq!(judge(Shutdown::Exit, Some(2), Some(3)), 5 * 4);
    assert_eq!(judge(Shutdown::Exit, Some(2), Some(8)), 0);
}

#[test]
fn a_place_reused_while_its_former_pod_was_still_starting_waits_its_own_startup() {
    // 2 pods at the target (100 requests/s of 100 ms: 5 a pod). At 12 s
    // the load doubles: the pass at 15 s adds one pod (one a period),
    // pod 2, in rotation at 27 s. At 16 s it falls to a fifth: the pass at
    // 20 s removes the pod still starting. At 21 s it doubles again: the
    // pass at 25 s adds a pod in pod 2's place, in rotation only at 37 s —
    // the comeback scheduled for the removed one (27 s) is not its own.
    let mut cfg = ten_minutes_into_a(1, 100.0);
    cfg.clock.duration = secs(45);
    cfg.clock.bucket = secs(1);
    cfg.load.arrivals = sim_models::load::ArrivalProcess::Constant;
    let mut a = service(2, Vec::new());
    a.work = Some(DistSpec::Constant(ms(100)));
    let one_a_second = |window| ScalingRules {
        stabilization_window: window,
        select: None,
        policies: Some(vec![ScalingPolicy {
            kind: PolicyKind::Pods,
            value: 1,
            period: secs(1),
        }]),
    };
    a.autoscaling = Some(AutoscalingSpec {
        max_replicas: Some(4),
        metric: Some(Metric::InFlight),
        target: Some(5.0),
        sync_period: secs(5),
        startup: secs(12),
        scale_up: one_a_second(None),
        scale_down: one_a_second(Some(secs(0))),
        ..AutoscalingSpec::default()
    });
    cfg.services.insert("a".into(), a);
    for (at, rate) in [(12, 200.0), (16, 20.0), (21, 200.0)] {
        cfg.timeline.push(TimelineEntry {
            set: Some(SetAction {
                param: Param::LoadRate.into(),
                value: rate,
            }),
            ..TimelineEntry::at_offset(secs(at))
        });
    }
    let (nodes, totals) = go(&cfg);
    let up: Vec<i64> = nodes
        .buckets
        .iter()
        .map(|b| b.level(Level::PodsUp).max)
        .collect();
    assert!(up[..37].iter().all(|&n| n == 2), "{up:?}");
    assert_eq!(up[37], 3, "{up:?}");
    let r = replicas(&nodes);
    assert_eq!((r[15], r[20], r[25], r[30]), (3, 2, 3, 4), "{r:?}");
    assert_eq!(totals.count(Count::PodsRemoved), 1);
}

#[test]
fn restart_all_restarts_the_pods_an_autoscaler_added_too() {
    // From 5 pods to about 20 by 300 s, when the operator restarts them
    // all at once: every one restarts, those the autoscaler added too.
    let mut cfg = cpu_bound(6, 5, 4_000.0);
    cfg.clock.duration = secs(320);
    cfg.timeline.push(TimelineEntry {
        restart_all: Some(RestartAll::default()),
        service: Some("a".into()),
        ..TimelineEntry::at_offset(secs(300))
    });
    let (nodes, totals) = go(&cfg);
    let r = replicas(&nodes);
    assert!(r[59] >= 19, "{r:?}");
    assert_eq!(totals.count(Count::PodRestarts), u64::from(r[59]));
}

/// `a` swinging between 200 requests/s and none every 20 s, each request
/// 1 s of its own work and one in 200 then a 300 s call; autoscaled on
/// requests in flight (50 a pod) between 1 and 4 pods with a grace of
/// 1,000 s, under `max_pods`.
fn swinging(max_pods: u32) -> WorldConfig {
    let mut cfg = ten_minutes_into_a(3, 200.0);
    cfg.clock.duration = secs(200);
    cfg.clock.bucket = secs(5);
    cfg.limits.max_pods = max_pods;
    cfg.load.arrivals = sim_models::load::ArrivalProcess::Constant;
    let mut slow = call(
        "slow",
        ClientConfig {
            attempt_timeout: Some(secs(400)),
            ..ClientConfig::default()
        },
    );
    slow.probability = 0.005;
    let mut a = service(1, vec![slow]);
    a.work = Some(DistSpec::Constant(secs(1)));
    let mut spec = AutoscalingSpec {
        max_replicas: Some(4),
        metric: Some(Metric::InFlight),
        target: Some(50.0),
        sync_period: secs(5),
        startup: secs(0),
        termination_grace: secs(1000),
        ..AutoscalingSpec::default()
    };
    spec.scale_down.stabilization_window = Some(secs(0));
    a.autoscaling = Some(spec);
    cfg.services.insert("a".into(), a);
    let mut db = failing(0.0);
    db.latency = DistSpec::Constant(secs(300));
    cfg.dependencies.insert("slow".into(), db);
    for i in 1..9 {
        cfg.timeline.push(TimelineEntry {
            set: Some(SetAction {
                param: Param::LoadRate.into(),
                value: if i % 2 == 1 { 0.0 } else { 200.0 },
            }),
            ..TimelineEntry::at_offset(secs(20 * i))
        });
    }
    cfg
}

#[test]
fn pods_draining_long_requests_stop_the_run_at_the_pod_limit_it_names() {
    // Each swing up adds 3 pods while the 3 removed at the last swing down
    // still drain their 300 s calls: 4, 7, 10, 13, 16 pods held. Counted
    // as the limit counts them (each once, once more for its pool: twice
    // max_replicas is 16 before the run), 16 allows the first two swings
    // only (14 held, the third wants 20), 40 lets the run end.
    assert!(run(&swinging(40), Discard::default()).is_ok());
    match run(&swinging(16), Discard::default()) {
        Err(WorldError::Run {
            failure: RunFailure::Limit(v),
            ..
        }) => {
            let said = v.to_string();
            assert!(said.contains("raise it with limits.max_pods"), "{said}");
            assert_eq!(v.at.as_nanos(), 85 * 1_000_000_000, "{said}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("ran past the pod limit"),
    }
}

#[test]
fn on_requests_a_second_it_doubles_holds_for_the_starting_pods_and_settles_on_the_rate() {
    // 4,000 requests a second over 5 pods against 200 a pod: a ratio of
    // 4, but 4 pods or 100 % a period: 10 at 15 s. At 30 s the five new
    // pods still start and count as taking none: 4,000 / 10 / 200 = 2,
    // so 20 (the change at 15 s has left the period: 100 % of 10). At
    // 45 s and 60 s the pods that joined have no full sample yet or the
    // newest still start: the ratio over all of them is 1.0, no change;
    // from then on 20 pods take 200 a second each (±0.5 % over a pass):
    // no change for the rest of the run.
    for seed in [1, 2, 3] {
        let mut cfg = ten_minutes_into_a(seed, 4_000.0);
        cfg.clock.duration = secs(300);
        cfg.clock.bucket = secs(5);
        let mut a = service(5, Vec::new());
        a.work = Some(DistSpec::Exponential { mean: ms(10) });
        a.autoscaling = Some(AutoscalingSpec {
            max_replicas: Some(40),
            metric: Some(Metric::Requests),
            target: Some(200.0),
            ..AutoscalingSpec::default()
        });
        cfg.services.insert("a".into(), a);
        let (nodes, totals) = go(&cfg);
        let r = replicas(&nodes);
        assert!(r[..3].iter().all(|&n| n == 5), "seed {seed}: {r:?}");
        assert!(r[3..6].iter().all(|&n| n == 10), "seed {seed}: {r:?}");
        assert!(r[6..].iter().all(|&n| n == 20), "seed {seed}: {r:?}");
        assert_eq!(totals.count(Count::PodsAdded), 15, "seed {seed}");
        assert_eq!(totals.count(Count::PodsRemoved), 0, "seed {seed}");
    }
}

/// `a`: 4 pods of 4 cores, each request 0.4 ms of its own work and then
/// a 250 ms call to `db`, 2,500 requests a second (1 core busy, 626
/// requests held), for 400 s; autoscaled on `metrics`.
fn waiting_on_a_call(seed: u64, metrics: Vec<MetricTarget>) -> WorldConfig {
    let mut cfg = ten_minutes_into_a(seed, 2_500.0);
    cfg.clock.duration = secs(400);
    cfg.clock.bucket = secs(5);
    let mut a = service(4, Vec::new());
    a.cores = Some(4);
    a.autoscaling = Some(AutoscalingSpec {
        max_replicas: Some(40),
        metrics: Some(metrics),
        ..AutoscalingSpec::default()
    });
    let mut cfg_a = a;
    cfg_a.work = Some(DistSpec::Constant(SimDuration::from_nanos(400_000)));
    hold_at_a(&mut cfg, cfg_a, DistSpec::Constant(ms(250)), true);
    cfg
}

#[test]
fn with_several_metrics_the_one_calling_for_most_pods_wins() {
    // Cpu at 50 %: 1 core busy needs one pod of 4 (at half its cores),
    // but a new autoscaler holds its first count for the 300 s window: 4
    // pods, then 1. Add requests held, 50 a pod: 626 held over 4 pods is
    // a ratio of 3.1: 8 at 15 s (4 pods or 100 %), 13 at 30 s (the four
    // starting counted idle: 626 / 8 / 50 = 1.57, ceil(1.57 × 8) — a
    // pass's mean held is within 1 % of 626), then no change: 626 / 13 /
    // 50 = 0.96 is within the tolerance — cpu outvoted all the way.
    let cpu = MetricTarget {
        metric: Metric::Cpu,
        target: Some(50.0),
    };
    let held = MetricTarget {
        metric: Metric::InFlight,
        target: Some(50.0),
    };
    for seed in [1, 2, 3] {
        let (nodes, _) = go(&waiting_on_a_call(seed, vec![cpu]));
        let r = replicas(&nodes);
        assert!(r[..63].iter().all(|&n| n == 4), "seed {seed}: {r:?}");
        assert!(r[63..].iter().all(|&n| n == 1), "seed {seed}: {r:?}");
        let (nodes, _) = go(&waiting_on_a_call(seed, vec![cpu, held]));
        let r = replicas(&nodes);
        assert!(r[3..6].iter().all(|&n| n == 8), "seed {seed}: {r:?}");
        assert!(r[6..].iter().all(|&n| n == 13), "seed {seed}: {r:?}");
        let busy: Vec<f64> = nodes.of("a").skip(60).map(|r| r.busy.mean).collect();
        let mean = busy.iter().sum::<f64>() / busy.len() as f64;
        assert!(
            (mean / 626.0 - 1.0).abs() < 0.02,
            "seed {seed}: {mean} held"
        );
    }
}

#[test]
fn requests_a_second_count_the_gateways_retries() {
    // 2,000 requests a second whose call fails half the time, sent again
    // by the gateway up to 3 times: 2,000 × (1 + 1/2 + 1/4 + 1/8) = 3,750
    // reach the pods each second. At 240 a pod, 10 pods are at a ratio of
    // 1.5625: 16 at 15 s (a pass's rate is within 0.7 % of 3,750), then
    // 3,750 / 16 / 240 = 0.98: no change.
    for seed in [1, 2, 3] {
        let mut cfg = ten_minutes_into_a(seed, 2_000.0);
        cfg.clock.duration = secs(120);
        cfg.clock.bucket = secs(5);
        cfg.gateway.retry = Some(GatewayRetry {
            max_retries: 3,
            on: vec![Reason::ServerError],
        });
        let mut a = service(10, vec![call("db", ClientConfig::default())]);
        a.autoscaling = Some(AutoscalingSpec {
            max_replicas: Some(40),
            metric: Some(Metric::Requests),
            target: Some(240.0),
            ..AutoscalingSpec::default()
        });
        cfg.services.insert("a".into(), a);
        cfg.dependencies.insert("db".into(), failing(0.5));
        let (nodes, totals) = go(&cfg);
        let r = replicas(&nodes);
        assert!(r[..3].iter().all(|&n| n == 10), "seed {seed}: {r:?}");
        assert!(r[3..].iter().all(|&n| n == 16), "seed {seed}: {r:?}");
        let reached: u64 = nodes.of("a").map(|r| r.offered).sum();
        let per_second = reached as f64 / 120.0;
        assert!(
            (per_second / 3_750.0 - 1.0).abs() < 0.01,
            "seed {seed}: {per_second}"
        );
        assert_eq!(totals.count(Count::PodsAdded), 6, "seed {seed}");
    }
}

#[test]
fn pods_failing_readiness_under_overload_still_count() {
    // 2 pods of 4 workers, 10 s a request, 10 requests a second: 0.8 can
    // be served. Within a second or two each pod's line waits past the
    // 200 ms probe timeout and the pod leaves rotation; its line drains
    // only as its workers free, 10 s on, and it is out again a second
    // after it comes back. Kubernetes still reads a pod failing
    // readiness (only `cpu` leaves some out): at the first pass neither
    // pod is in rotation, but each holds 4 requests and more waiting
    // against a target of 2, so it asks for as many as it may, 6 (4
    // pods or 100 %). Were they left out, no pod would have a reading
    // and nothing would change.
    for seed in [1, 2, 3] {
        let mut cfg = ten_minutes_into_a(seed, 10.0);
        cfg.clock.duration = secs(20);
        cfg.clock.bucket = secs(5);
        cfg.load.arrivals = sim_models::load::ArrivalProcess::Constant;
        let mut a = service(2, Vec::new());
        a.workers = Some(4);
        a.worker_queue = 10_000;
        a.work = Some(DistSpec::Constant(secs(10)));
        a.health = Some(HealthConfig {
            period: secs(1),
            timeout: ms(200),
            failure_threshold: 1_000,
            readiness_threshold: Some(1),
            ..HealthConfig::default()
        });
        a.autoscaling = Some(AutoscalingSpec {
            max_replicas: Some(10),
            metric: Some(Metric::InFlight),
            target: Some(2.0),
            ..AutoscalingSpec::default()
        });
        cfg.services.insert("a".into(), a);
        let (nodes, _) = go(&cfg);
        let r = replicas(&nodes);
        let up: Vec<i64> = nodes
            .buckets
            .iter()
            .map(|b| b.level(Level::PodsUp).min)
            .collect();
        assert_eq!(up[2], 0, "seed {seed}: pods in rotation {up:?}");
        assert_eq!(r, [2, 2, 2, 6], "seed {seed}");
    }
}
