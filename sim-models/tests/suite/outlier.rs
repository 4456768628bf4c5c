//! Outlier detection in a running world, against its rules worked out by
//! hand: a pod answering every request 500 is ejected after exactly five
//! of them, for 30 s, 60 s, 90 s… each ending at the first sweep after its
//! time (so the run's errors and ejections are counted in advance); a
//! multiplier falls back once the pod has been well for whole intervals;
//! Envoy's default 10 % never ejects one of fewer than ten pods; a pod
//! failing 30 % is ejected by the success-rate sweep at the closed-form
//! threshold; and callers' timeouts eject pods that are merely slow, up to
//! the ejection cap (the hazard of outlier detection in a storm).

use sim_core::dist::DistSpec;
use sim_models::config::{ClientConfig, WorldConfig};
use sim_models::outcome::Reason;
use sim_models::outlier::{OutlierRules, OutlierSpec};
use sim_models::recorder::{Count, Level};
use sim_models::timeline::{PodFault, TimelineEntry};

use crate::common::{ms, secs};
use crate::graphs::{call, failing, go, service, ten_minutes_into_a};

/// `a` (pods, round robin, outlier detection as given) calling a database
/// that answers in 1 ms and never fails, for `seconds`.
fn detected(pods: u32, spec: OutlierSpec, lambda: f64, seconds: u64) -> WorldConfig {
    let mut cfg = ten_minutes_into_a(7, lambda);
    cfg.clock.duration = secs(seconds);
    cfg.clock.bucket = secs(10);
    let mut a = service(pods, vec![call("db", ClientConfig::default())]);
    a.outlier_detection = Some(spec);
    cfg.services.insert("a".into(), a);
    cfg.dependencies.insert("db".into(), failing(0.0));
    cfg
}

/// Pod `pod` of the entry answers a share `errors` 500 from `at` seconds.
fn fault(cfg: &mut WorldConfig, at: u64, pod: u32, errors: f64, lasts: Option<u64>) {
    cfg.timeline.push(TimelineEntry {
        pod_fault: Some(PodFault {
            pod,
            errors,
            duration: lasts.map(secs),
        }),
        ..TimelineEntry::at_offset(secs(at))
    });
}

#[test]
fn a_failing_pod_is_ejected_after_five_errors_for_longer_each_time() {
    // From 0 s: ejected at once, back at the 40 s sweep (30 s), again at
    // once until 110 s (60 s), 210 s (90 s), then past the run's 300 s
    // (120 s): four ejections of five errors each.
    let mut cfg = detected(10, OutlierSpec::default(), 1_000.0, 300);
    fault(&mut cfg, 0, 3, 1.0, None);
    let (nodes, totals) = go(&cfg);
    assert_eq!(totals.count(Count::Ejections), 4);
    assert_eq!(totals.outcome(Reason::ServerError), 20);
    assert!(totals.count(Count::Offered) > 290_000);
    let ejected: Vec<u32> = nodes.of("a").map(|r| r.ejected.max as u32).collect();
    assert!(ejected.iter().all(|&m| m == 1), "{ejected:?}");
    // The entry's level says the same, and it is out nearly all the run
    // (a few milliseconds in rotation at each return).
    let level: Vec<_> = nodes
        .buckets
        .iter()
        .map(|b| b.level(Level::PodsEjected))
        .collect();
    assert!(level.iter().all(|l| l.max == 1), "{level:?}");
    let mean = level.iter().map(|l| l.mean).sum::<f64>() / level.len() as f64;
    assert!(mean > 0.999, "{mean}");
    // Healed at 100 s (its 60 s ejection ends at 110 s), well for two
    // sweeps after its return (the multiplier falls 2 → 0 by 130 s), bad
    // again at 150 s: 30 s (back at 190 s), 60 s (260 s), then 90 s past
    // the end. Without the fall the third ejection would be 90 s long and
    // the run would hold four, not five.
    let mut cfg = detected(10, OutlierSpec::default(), 1_000.0, 300);
    fault(&mut cfg, 0, 3, 1.0, Some(100));
    fault(&mut cfg, 150, 3, 1.0, None);
    let (_, totals) = go(&cfg);
    assert_eq!(totals.count(Count::Ejections), 5);
    assert_eq!(totals.outcome(Reason::ServerError), 25);
}

#[test]
fn the_default_ten_per_cent_never_ejects_one_of_eight_pods() {
    let mut cfg = detected(8, OutlierSpec::default(), 1_000.0, 60);
    fault(&mut cfg, 0, 3, 1.0, None);
    let (_, totals) = go(&cfg);
    assert_eq!(totals.count(Count::Ejections), 0);
    // One request in eight fails: 7,500 expected of 60,000, sd 81.
    let errors = totals.outcome(Reason::ServerError) as f64;
    let offered = totals.count(Count::Offered) as f64;
    assert!(
        (errors / offered - 0.125).abs() < 0.003,
        "{errors} of {offered}"
    );
    let mut cfg = detected(
        8,
        OutlierSpec {
            always_eject_one_host: true,
            ..OutlierSpec::default()
        },
        1_000.0,
        60,
    );
    fault(&mut cfg, 0, 3, 1.0, None);
    let (_, totals) = go(&cfg);
    // 30 s then 60 s: ejected at 0 s and 40 s.
    assert_eq!(totals.count(Count::Ejections), 2);
    assert_eq!(totals.outcome(Reason::ServerError), 10);
}

#[test]
fn the_success_rate_sweep_ejects_a_pod_failing_thirty_per_cent() {
    // Nine pods at 100 %, one at 70 %: mean 97, sd 9, threshold 79.9, so
    // the sweep after each whole interval it serves ejects it: at 10 s
    // (back at 40 s), 50 s (back at 110 s), 120 s (210 s), 220 s (past the
    // end). It serves 40 s of the 300, a tenth of 2,000 requests a second,
    // 30 % of them failing: 2,400 errors, sd 49 (Poisson arrivals, binomial
    // failures).
    let spec = OutlierSpec {
        consecutive_5xx: 0,
        ..OutlierSpec::default()
    };
    let mut cfg = detected(10, spec, 2_000.0, 300);
    fault(&mut cfg, 0, 0, 0.3, None);
    let (_, totals) = go(&cfg);
    assert_eq!(totals.count(Count::Ejections), 4);
    let errors = totals.outcome(Reason::ServerError) as f64;
    assert!((errors - 2_400.0).abs() < 250.0, "{errors}");
}

#[test]
fn failure_percentage_ejects_the_odd_pod_out_and_healthy_capacity_when_all_fail_alike() {
    // One pod failing 90 % (the threshold is 85 %): ejected at the sweep
    // after each whole interval it serves, as in the success-rate test
    // above: 40 s served of 300 at 200 requests a second, 7,200 errors,
    // sd 81.
    let spec = OutlierSpec {
        consecutive_5xx: 0,
        enforcing_success_rate: 0,
        enforcing_failure_percentage: 100,
        ..OutlierSpec::default()
    };
    let mut cfg = detected(10, spec.clone(), 2_000.0, 300);
    fault(&mut cfg, 0, 0, 0.9, None);
    let (_, totals) = go(&cfg);
    assert_eq!(totals.count(Count::Ejections), 4);
    let errors = totals.outcome(Reason::ServerError) as f64;
    assert!((errors - 7_200.0).abs() < 400.0, "{errors}");
    // The database failing 90 %: every pod answers 90 % errors, and each
    // sweep that finds the cap free ejects its share (three of ten) of
    // pods that are not at fault: at 10 s (back at 40 s), three others at
    // 40 s (back at 70 s): six in 60 s, and the errors are what they were.
    let capped = OutlierSpec {
        max_ejection_percent: 30,
        ..spec
    };
    let mut cfg = detected(10, capped.clone(), 2_000.0, 60);
    cfg.dependencies.insert("db".into(), failing(0.9));
    let (nodes, totals) = go(&cfg);
    assert_eq!(totals.count(Count::Ejections), 6);
    let most = nodes.of("a").map(|r| r.ejected.max as u32).max();
    assert_eq!(most, Some(3));
    let share = totals.outcome(Reason::ServerError) as f64 / totals.finished() as f64;
    assert!((share - 0.9).abs() < 0.005, "{share}");
    // The success-rate sweep on the same world: every pod fails alike, so
    // none lies 1.9 standard deviations below the others more than chance
    // allows (2.9 % of pod-sweeps, about one in the run).
    let mut cfg = detected(
        10,
        OutlierSpec {
            enforcing_success_rate: 100,
            enforcing_failure_percentage: 0,
            ..capped
        },
        2_000.0,
        60,
    );
    cfg.dependencies.insert("db".into(), failing(0.9));
    let (_, totals) = go(&cfg);
    assert!(
        totals.count(Count::Ejections) <= 4,
        "{}",
        totals.count(Count::Ejections)
    );
}

#[test]
fn grpc_rules_eject_one_pod_of_eight_where_envoy_rules_eject_none() {
    // Pod 3 of 8 answers every request 500 from the start, 1,000 requests
    // a second, for 60 s, the failure-percentage detector on. Envoy's cap
    // (10 % of 8, rounded down) lets no pod out: an eighth of the requests
    // fail, 7,500, sd 81. gRPC's lets one out: the pod is ejected at the
    // 10 s sweep (its first interval's answers), out 30 s, returned at
    // 40 s (judged first, on an interval it was out), ejected again at
    // 50 s for 60 s: it serves 20 s, 2,500 errors, sd 50.
    for (rules, ejections, errors) in [
        (OutlierRules::Envoy, 0, 7_500.0),
        (OutlierRules::Grpc, 2, 2_500.0),
    ] {
        let spec = OutlierSpec {
            rules,
            consecutive_5xx: 0,
            enforcing_failure_percentage: 100,
            healthy_panic_threshold: 0,
            ..OutlierSpec::default()
        };
        let mut cfg = detected(8, spec, 1_000.0, 60);
        fault(&mut cfg, 0, 3, 1.0, None);
        let (_, totals) = go(&cfg);
        assert_eq!(totals.count(Count::Ejections), ejections, "{rules:?}");
        let got = totals.outcome(Reason::ServerError) as f64;
        assert!((got - errors).abs() < 300.0, "{rules:?}: {got}");
    }
}

/// `api` calls `a` with a 100 ms timeout; `a`'s database takes 2 s, so
/// every attempt times out and each of `a`'s pods fails five in a row.
fn timing_out(spec: OutlierSpec) -> WorldConfig {
    let mut cfg = ten_minutes_into_a(3, 200.0);
    cfg.entry = Some("api".into());
    cfg.clock.duration = secs(60);
    cfg.clock.bucket = secs(10);
    let impatient = ClientConfig {
        attempt_timeout: Some(ms(100)),
        ..Default::default()
    };
    cfg.services
        .insert("api".into(), service(2, vec![call("a", impatient)]));
    let mut a = service(10, vec![call("db", ClientConfig::default())]);
    a.outlier_detection = Some(spec);
    cfg.services.insert("a".into(), a);
    let mut db = failing(0.0);
    db.latency = DistSpec::Constant(secs(2));
    cfg.dependencies.insert("db".into(), db);
    cfg
}

#[test]
fn callers_timing_out_eject_slow_pods_up_to_the_cap() {
    // Half the pods may be ejected, no more. Their requests still finish,
    // for nobody: answers no caller waits for are not judged (or the pods
    // would pass).
    let (nodes, totals) = go(&timing_out(OutlierSpec {
        max_ejection_percent: 50,
        ..OutlierSpec::default()
    }));
    let ejected: Vec<u32> = nodes.of("a").map(|r| r.ejected.max as u32).collect();
    assert!(ejected.iter().all(|&m| m == 5), "{ejected:?}");
    assert!(totals.count(Count::Ejections) >= 5);
    assert_eq!(totals.outcome(Reason::Success), 0);
}

#[test]
fn with_most_pods_ejected_the_balancer_panics_to_all_of_them() {
    // No cap: every pod of `a` is ejected within its first second. At
    // Envoy's panic threshold of 50 % the balancer then spreads requests
    // over all ten pods, ejected or not, and every attempt reaches one;
    // with no panic threshold the callers find no pod in rotation until
    // ejections run out (`unavailable`, answered at once).
    let spec = |panic| OutlierSpec {
        max_ejection_percent: 100,
        healthy_panic_threshold: panic,
        ..OutlierSpec::default()
    };
    let reached = |panic| {
        let (nodes, totals) = go(&timing_out(spec(panic)));
        let ejected = nodes.of("a").map(|r| r.ejected.max).max().unwrap_or(0);
        let offered: u64 = nodes.of("a").map(|r| r.offered).sum();
        let attempts: u64 = nodes.of("api->a").map(|r| r.attempts).sum();
        (ejected, offered, attempts, totals.count(Count::Offered))
    };
    let (ejected, offered, attempts, users) = reached(50);
    assert_eq!(ejected, 10);
    assert_eq!(offered, attempts, "every attempt reached a pod");
    assert!(users > 10_000, "{users}");
    let (ejected, offered, attempts, _) = reached(0);
    assert_eq!(ejected, 10);
    assert!(
        offered * 2 < attempts,
        "{offered} of {attempts} reached a pod"
    );
}
