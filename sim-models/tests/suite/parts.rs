//! Each part of the world doing what its documentation says.

use crate::common::{go, ms, secs, share};
use sim_core::dist::DistSpec;
use sim_core::time::SimDuration;
use sim_models::config::{ClosedLoopConfig, LoadLaw, OverflowAction, RateLimitConfig, WorldConfig};
use sim_models::outcome::Reason;
use sim_models::policy::backoff::Backoff;
use sim_models::recorder::{BucketRow, Count, Latency, Level};
use sim_models::timeline::{Param, RampAction, SetAction, TimelineEntry};

fn entry(at: u64) -> TimelineEntry {
    TimelineEntry::at_offset(secs(at))
}

fn per_second(
    rows: &[BucketRow],
    range: std::ops::Range<usize>,
    f: impl Fn(&BucketRow) -> u64,
) -> f64 {
    rows[range.clone()].iter().map(f).sum::<u64>() as f64 / range.len() as f64
}

#[test]
fn a_ramp_moves_the_rate_linearly() {
    let mut cfg = WorldConfig::default();
    cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
    cfg.timeline.push(TimelineEntry {
        ramp: Some(RampAction {
            param: Param::LoadRate.into(),
            to: 300.0,
            over: secs(20),
        }),
        ..entry(20)
    });
    let (rows, _) = go(&cfg);
    // Constant spacing: 100/s before; the middle of the ramp averages 200;
    // 300/s after.
    assert!((per_second(&rows, 10..20, |r| r.count(Count::Offered)) - 100.0).abs() <= 1.0);
    assert!((per_second(&rows, 28..32, |r| r.count(Count::Offered)) - 200.0).abs() <= 12.0);
    assert!((per_second(&rows, 45..60, |r| r.count(Count::Offered)) - 300.0).abs() <= 1.0);
}

#[test]
fn closed_loop_users_follow_the_response_time_law() {
    // N users, think Z, response R: throughput X = N / (Z + R).
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(600);
    cfg.load.rate = 0.0;
    cfg.load.closed_loop = Some(ClosedLoopConfig {
        users: 50,
        think: DistSpec::Exponential { mean: secs(1) },
    });
    cfg.upstream.latency = DistSpec::Constant(ms(250));
    let (_, t) = go(&cfg);
    let x = t.finished() as f64 / 600.0;
    let law = 50.0 / (1.0 + 0.25);
    assert!(
        (x - law).abs() < 0.02 * law,
        "throughput {x}/s, law {law}/s"
    );
}

#[test]
fn impatient_users_leave_but_their_work_goes_on() {
    let mut cfg = WorldConfig::default();
    cfg.load.patience = Some(DistSpec::Constant(ms(100)));
    cfg.upstream.latency = DistSpec::Constant(ms(200));
    let (_, t) = go(&cfg);
    assert_eq!(share(&t, Reason::Abandoned), 1.0);
    // The service did not know: its calls completed upstream as goodput.
    assert!(t.count(Count::UpstreamGoodput) as f64 > 0.99 * t.finished() as f64);
    let p99 = t.latency(Latency::EndToEnd).quantile(0.99).unwrap();
    assert!((99_000_000..=101_000_000).contains(&p99));
}

#[test]
fn the_gateway_deadline_answers_the_user_on_time() {
    let mut cfg = WorldConfig::default();
    cfg.gateway.deadline = Some(ms(100));
    cfg.upstream.latency = DistSpec::Uniform {
        low: ms(50),
        high: ms(150),
    };
    let (_, t) = go(&cfg);
    let late = share(&t, Reason::DeadlineExceeded);
    assert!((late - 0.5).abs() < 0.03, "deadline share {late}");
    assert!(t.latency(Latency::EndToEnd).max().unwrap() <= 100_000_000);
}

#[test]
fn a_retried_call_cut_off_by_the_users_deadline_was_not_rescued() {
    // Every try takes 1 s against a 300 ms timeout: each call retries at
    // 300 ms and none is rescued, whether its retries run out (4 tries)
    // or the gateway's 500 ms deadline cuts it off first (cancelling the
    // service's work).
    let mut cfg = WorldConfig::default();
    cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
    cfg.clock.duration = secs(20);
    cfg.upstream.latency = DistSpec::Constant(secs(1));
    cfg.client.attempt_timeout = Some(ms(300));
    cfg.client.retry.max_retries = 3;
    cfg.client.retry.backoff = Backoff::fixed(SimDuration::ZERO);
    cfg.gateway.cancel_service_on_deadline = true;
    for deadline in [None, Some(ms(500))] {
        cfg.gateway.deadline = deadline;
        let (_, t) = go(&cfg);
        assert!(t.finished() > 1_800, "{deadline:?}");
        assert_eq!(
            t.count(Count::CallsRetried),
            t.finished(),
            "{deadline:?}: every call ended retried"
        );
        assert_eq!(t.count(Count::CallsRescued), 0, "{deadline:?}");
    }
}

#[test]
fn bounded_workers_queue_then_refuse() {
    let mut cfg = WorldConfig::default();
    cfg.load.rate = 10.0;
    cfg.service.pods = 1;
    cfg.service.workers = Some(2);
    cfg.service.worker_queue = 5;
    cfg.upstream.latency = DistSpec::Constant(secs(1));
    let (_, t) = go(&cfg);
    // Two workers serve 2/s of the 10/s offered; the rest overflow.
    let served = t.outcome(Reason::Success) as f64 / 60.0;
    assert!((served - 2.0).abs() < 0.1, "served {served}/s");
    assert!(share(&t, Reason::PodOverloaded) > 0.75);
}

#[test]
fn leaked_connections_drain_the_pool() {
    let mut cfg = WorldConfig::default();
    cfg.service.pods = 1;
    cfg.service.pool.max_connections = 10;
    cfg.service.pool.leak_fraction = 0.5;
    cfg.service.pool.acquire_timeout = Some(ms(500));
    let (rows, t) = go(&cfg);
    assert_eq!(rows.last().unwrap().level(Level::PoolLeaked).last, 10);
    assert!(share(&t, Reason::PoolTimeout) > 0.9);
}

#[test]
fn network_delays_add_up_along_the_path() {
    let mut cfg = WorldConfig::default();
    let d = Some(DistSpec::Constant(ms(10)));
    cfg.network.gateway_to_pod = d.clone();
    cfg.network.pod_to_gateway = d.clone();
    cfg.network.pod_to_upstream = d.clone();
    cfg.network.upstream_to_pod = d;
    cfg.upstream.latency = DistSpec::Constant(ms(50));
    let (_, t) = go(&cfg);
    let e2e = t.latency(Latency::EndToEnd);
    // Four 10 ms legs plus 50 ms service (new connections add 5 ms).
    assert_eq!(e2e.quantile(0.5), Some(90_000_000));
    assert!(e2e.max().unwrap() <= 95_000_000);
}

/// One pod sending 10 requests a second, evenly, each holding its
/// connection 250 ms (5 ms to dial): three connections take turns. The
/// load stops from 30 s to 100 s, and the far end closes connections
/// idle for 60 s, the pool's own idle timeout being HttpClient's 5 min.
fn after_a_lull(detects_close: bool, retries: u32) -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(130);
    cfg.load.rate = 10.0;
    cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
    cfg.service.pods = 1;
    cfg.service.pool.idle_timeout = Some(secs(300));
    cfg.service.pool.peer_idle_timeout = Some(secs(60));
    cfg.service.pool.detects_close = detects_close;
    cfg.upstream.latency = DistSpec::Constant(ms(250));
    cfg.client.retry.max_retries = retries;
    cfg.client.retry.backoff = Backoff::fixed(ms(1));
    for (at, rate) in [(30, 0.0), (100, 10.0)] {
        cfg.timeline.push(TimelineEntry {
            set: Some(SetAction {
                param: Param::LoadRate.into(),
                value: rate,
            }),
            ..entry(at)
        });
    }
    cfg
}

#[test]
fn connections_the_far_end_closed_while_idle_fail_the_first_tries_unless_noticed() {
    // Noticed (Go, urllib3): dropped at 60 s idle, new ones dialled.
    let (_, t) = go(&after_a_lull(true, 0));
    assert_eq!(t.outcome(Reason::ConnectFailure), 0);
    assert_eq!(t.outcome(Reason::Success), t.finished());
    // Unnoticed: the first three requests after the lull are each sent on
    // one of the three closed connections and fail at once.
    let (_, t) = go(&after_a_lull(false, 0));
    assert_eq!(t.outcome(Reason::ConnectFailure), 3);
    assert_eq!(t.count(Count::AttemptsRetry), 0);
    // One retry 1 ms later: the first request's retry takes the second
    // closed connection and fails as well; the second request's first try
    // takes the third, and its retry dials a new one. One request lost,
    // three tries.
    let (_, t) = go(&after_a_lull(false, 1));
    assert_eq!(t.outcome(Reason::ConnectFailure), 1);
    assert_eq!(t.count(Count::AttemptsRetry), 2);
    // Two calls retried, the second rescued.
    assert_eq!(t.count(Count::CallsRetried), 2);
    assert_eq!(t.count(Count::CallsRescued), 1);
}

#[test]
fn refused_connections_fail_attempts() {
    let mut cfg = WorldConfig::default();
    cfg.network.connect_failure = 1.0;
    let (_, t) = go(&cfg);
    assert_eq!(share(&t, Reason::ConnectFailure), 1.0);
}

#[test]
fn the_rate_limit_answers_429_with_retry_after() {
    let mut cfg = WorldConfig::default();
    cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
    cfg.upstream.rate_limit = Some(RateLimitConfig {
        rps: 50.0,
        burst: Some(1),
        retry_after: secs(2),
    });
    let (_, t) = go(&cfg);
    let limited = share(&t, Reason::RateLimited);
    assert!((limited - 0.5).abs() < 0.02, "429 share {limited}");
    assert_eq!(
        t.count(Count::UpstreamRateLimited),
        t.outcome(Reason::RateLimited)
    );
}

#[test]
fn other_tenants_share_the_upstream() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.capacity = 100;
    cfg.upstream.latency = DistSpec::Constant(ms(100));
    cfg.upstream.background_rps = 900.0; // with our 100/s: 1,000/s = full capacity
    cfg.timeline.push(TimelineEntry {
        set: Some(SetAction {
            param: Param::UpstreamBackgroundRps.into(),
            value: 1_200.0,
        }),
        ..entry(30)
    });
    let (rows, t) = go(&cfg);
    assert!(per_second(&rows, 5..30, |r| r.count(Count::BackgroundCompleted)) > 850.0);
    // Over capacity from 30 s: a queue builds and our latency with it.
    assert!(rows[59].level(Level::UpstreamQueued).max > 1_000);
    assert!(t.latency(Latency::EndToEnd).quantile(0.99).unwrap() > 1_000_000_000);
}

#[test]
fn usl_throughput_falls_past_the_knee() {
    // Closed loop with no think time holds N requests in service; with
    // κ = 0.001 throughput N/S(N) peaks near N* = sqrt(1/κ) ≈ 32.
    let throughput = |users| {
        let mut cfg = WorldConfig::default();
        cfg.load.rate = 0.0;
        cfg.load.closed_loop = Some(ClosedLoopConfig {
            users,
            think: DistSpec::Constant(SimDuration::ZERO),
        });
        cfg.service.pool.max_connections = 1_000;
        cfg.upstream.latency = DistSpec::Constant(ms(100));
        cfg.upstream.load_law = LoadLaw::Usl {
            sigma: 0.0,
            kappa: 0.001,
        };
        let (_, t) = go(&cfg);
        t.finished() as f64 / 60.0
    };
    let (low, knee, high) = (throughput(8), throughput(32), throughput(256));
    assert!(
        knee > 1.5 * low && knee > 2.0 * high,
        "X(8)={low} X(32)={knee} X(256)={high}"
    );
}

#[test]
fn dropped_requests_surface_as_timeouts() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.capacity = 2;
    cfg.upstream.queue_limit = 0;
    cfg.upstream.overflow = OverflowAction::Drop;
    cfg.upstream.latency = DistSpec::Constant(ms(100));
    cfg.client.attempt_timeout = Some(ms(500));
    let (_, t) = go(&cfg);
    let (dropped, timed_out) = (
        t.count(Count::UpstreamDropped),
        t.outcome(Reason::AttemptTimeout),
    );
    assert!(dropped > 3_000);
    // Every drop ends as a timeout 500 ms later, except drops in the last
    // 500 ms of the run (about 50 at 100/s).
    assert!(
        dropped >= timed_out && dropped - timed_out <= 60,
        "{dropped} dropped, {timed_out} timed out"
    );
}

#[test]
fn the_total_deadline_cuts_retries() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.latency = DistSpec::Constant(secs(1));
    cfg.client.attempt_timeout = Some(ms(100));
    cfg.client.total_deadline = Some(ms(320));
    cfg.client.retry.max_retries = 5;
    cfg.client.retry.backoff = Backoff::fixed(ms(50));
    let (_, t) = go(&cfg);
    // Attempts at 0, 150 and 300 ms; the third is cut by the deadline at 320 ms.
    assert_eq!(share(&t, Reason::DeadlineExceeded), 1.0);
    assert!(
        (t.amplification() - 3.0).abs() < 0.01,
        "{}",
        t.amplification()
    );
}

#[test]
fn the_timeline_kills_restarts_and_scales_pods() {
    let mut cfg = WorldConfig::default();
    cfg.service.pods = 2;
    cfg.timeline.push(TimelineEntry {
        kill_pod: Some(0),
        ..entry(10)
    });
    cfg.timeline.push(TimelineEntry {
        kill_pod: Some(1),
        ..entry(20)
    });
    cfg.timeline.push(TimelineEntry {
        restart_pod: Some(1),
        ..entry(30)
    });
    cfg.timeline.push(TimelineEntry {
        set: Some(SetAction {
            param: Param::ServicePods.into(),
            value: 4.0,
        }),
        ..entry(40)
    });
    let (rows, t) = go(&cfg);
    let up = |i: usize| rows[i].level(Level::PodsUp).last;
    assert_eq!((up(5), up(15), up(25), up(45)), (2, 1, 0, 3)); // pod 1 restarting until 60 s
    // Nothing in rotation from 20 s to 40 s: unavailable.
    assert!(per_second(&rows, 21..39, |r| r.outcome(Reason::Unavailable)) > 90.0);
    assert!(t.outcome(Reason::PodRestarted) > 0);
}

/// The operator's restart of every pod: at once, every pod goes down in
/// the same instant (and its in-flight work fails `pod_restarted`); rolling,
/// one pod every 10 s, so at most one is down at a time when the restart
/// takes less than the interval.
#[test]
fn restart_all_restarts_every_pod_at_once_or_one_by_one() {
    use sim_models::config::HealthConfig;
    use sim_models::timeline::RestartAll;
    let world = |every: SimDuration| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(90);
        cfg.service.pods = 4;
        cfg.upstream.latency = DistSpec::Constant(ms(200));
        cfg.service.health = Some(HealthConfig {
            restart_time: secs(5),
            failure_threshold: 1_000,
            ..HealthConfig::default()
        });
        cfg.timeline.push(TimelineEntry {
            restart_all: Some(RestartAll { every }),
            ..entry(20)
        });
        go(&cfg)
    };
    let (rows, t) = world(SimDuration::ZERO);
    assert_eq!(t.count(Count::PodRestarts), 4);
    assert_eq!(rows[20].level(Level::PodsDown).max, 4, "all four at once");
    assert!(t.outcome(Reason::PodRestarted) > 0);
    let (rows, t) = world(secs(10));
    assert_eq!(t.count(Count::PodRestarts), 4);
    let down_max = rows.iter().map(|r| r.level(Level::PodsDown).max).max();
    assert_eq!(down_max, Some(1), "one at a time");
    // A step at exactly 20 s closes the bucket that ends then.
    let restarts_at =
        |s: usize| rows[s - 1].count(Count::PodRestarts) + rows[s].count(Count::PodRestarts);
    for (k, second) in [20usize, 30, 40, 50].into_iter().enumerate() {
        assert_eq!(restarts_at(second), 1, "pod {k} at {second} s");
    }
}

/// A dependency taken hard down (capacity 0) for 10 s and brought back.
/// With no queue it answers everything 503 at once (fail fast); with its
/// queue it accepts and hangs, so callers time out, and the queue drains
/// when it comes back.
#[test]
fn a_dependency_goes_hard_down_failing_fast_or_hanging_and_comes_back() {
    let world = |queue_during: f64| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(60);
        cfg.load.rate = 100.0;
        cfg.upstream.latency = DistSpec::Constant(ms(50));
        cfg.client.attempt_timeout = Some(secs(2));
        cfg.client.retry.max_retries = 0;
        let set = |at, param: Param, value| TimelineEntry {
            set: Some(SetAction {
                param: Param::into(param),
                value,
            }),
            ..entry(at)
        };
        cfg.timeline.push(set(20, Param::UpstreamCapacity, 0.0));
        cfg.timeline
            .push(set(20, Param::UpstreamQueueLimit, queue_during));
        cfg.timeline.push(set(30, Param::UpstreamCapacity, 1000.0));
        cfg.timeline
            .push(set(30, Param::UpstreamQueueLimit, 10_000.0));
        go(&cfg)
    };
    let (rows, t) = world(0.0);
    let down = 21..29;
    assert!(per_second(&rows, down.clone(), |r| r.outcome(Reason::ServerError)) > 95.0);
    assert_eq!(
        t.outcome(Reason::AttemptTimeout),
        0,
        "nobody waits for a dependency that says no"
    );
    assert!(
        per_second(&rows, 35..55, |r| r.outcome(Reason::Success)) > 95.0,
        "back"
    );

    let (rows, t) = world(10_000.0);
    assert_eq!(t.outcome(Reason::ServerError), 0);
    assert!(
        per_second(&rows, 23..29, |r| r.outcome(Reason::AttemptTimeout)) > 95.0,
        "hanging"
    );
    assert!(
        per_second(&rows, 35..55, |r| r.outcome(Reason::Success)) > 95.0,
        "back"
    );
    assert_eq!(
        rows[40].level(Level::UpstreamQueued).last,
        0,
        "the queue drained"
    );
}

/// Error timing. Half the requests fail 503 and service takes 2 s. By
/// default an injected error is a slow one, answered after its service
/// time and holding a slot meanwhile; `errors.after: 10ms` makes it fast:
/// decided on arrival, answered 10 ms later, no slot taken, so the
/// upstream holds half the work. A refusal at the door is answered at once
/// by default and after `reject_after` when set.
#[test]
fn injected_errors_are_slow_or_fast_and_refusals_take_reject_after() {
    let world = |after: Option<SimDuration>| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(60);
        cfg.load.rate = 100.0;
        cfg.upstream.latency = DistSpec::Constant(secs(2));
        cfg.upstream.errors.http_503 = 0.5;
        cfg.upstream.errors.after = after;
        cfg.client.attempt_timeout = Some(secs(10));
        cfg.client.retry.max_retries = 0;
        go(&cfg)
    };
    let in_service = |rows: &[BucketRow]| {
        rows[10..50]
            .iter()
            .map(|r| r.level(Level::UpstreamInService).mean)
            .sum::<f64>()
            / 40.0
    };
    let (slow, t_slow) = world(None);
    let (fast, t_fast) = world(Some(ms(10)));
    let share_slow = share(&t_slow, Reason::ServerError);
    let share_fast = share(&t_fast, Reason::ServerError);
    assert!((share_slow - 0.5).abs() < 0.03 && (share_fast - 0.5).abs() < 0.03);
    let (held_slow, held_fast) = (in_service(&slow), in_service(&fast));
    assert!(
        (held_slow - 200.0).abs() < 15.0,
        "slow errors hold slots: {held_slow}"
    );
    assert!(
        (held_fast - 100.0).abs() < 12.0,
        "fast errors take none: {held_fast}"
    );
    let attempt_p10 =
        |t: &sim_models::recorder::RunTotals| t.latency(Latency::FirstAttempt).quantile(0.1);
    let slow_p10 = attempt_p10(&t_slow).unwrap_or(0) as f64 / 1e6;
    assert!(
        (slow_p10 - 2000.0).abs() < 20.0,
        "slow errors after 2 s: {slow_p10} ms"
    );
    let fast_p10 = attempt_p10(&t_fast).unwrap_or(0) as f64 / 1e6;
    assert!(
        (fast_p10 - 10.0).abs() < 0.2,
        "fast errors in 10 ms: {fast_p10} ms"
    );

    // Refusals: 10 slots, no queue, most requests turned away.
    let refused = |reject_after: SimDuration| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(30);
        cfg.load.rate = 100.0;
        cfg.upstream.capacity = 10;
        cfg.upstream.queue_limit = 0;
        cfg.upstream.latency = DistSpec::Constant(secs(1));
        cfg.upstream.reject_after = reject_after;
        cfg.client.retry.max_retries = 0;
        let (_, t) = go(&cfg);
        assert!(share(&t, Reason::ServerError) > 0.85);
        t.latency(Latency::FirstAttempt).quantile(0.5).unwrap_or(0) as f64 / 1e6
    };
    assert!(refused(SimDuration::ZERO) < 0.1, "at once by default");
    assert!((refused(ms(300)) - 300.0).abs() < 3.0);
}

/// When a slowdown applies. 10 slots at 100 ms serve 100 requests/s
/// against 80 offered; for 10 s the latency is tripled (33/s), so about
/// 470 requests queue. Applied at start (the default), the queued ones
/// are served at normal speed once the trigger ends and the queue drains
/// at 20/s: about 23 s. Fixed on admission, the ones admitted during the
/// trigger keep their tripled work: about 14 s to serve them at 33/s while
/// 1,100 more queue behind, then 20/s: about 70 s.
#[test]
fn a_slowdown_applies_at_start_or_on_admission() {
    use sim_models::config::AppliesAt;
    use sim_models::timeline::PulseAction;
    let drained_after = |applies_at: AppliesAt| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(200);
        cfg.load.rate = 80.0;
        cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
        cfg.upstream.capacity = 10;
        cfg.upstream.latency = DistSpec::Constant(ms(100));
        cfg.upstream.applies_at = applies_at;
        cfg.client.attempt_timeout = None;
        cfg.client.retry.max_retries = 0;
        cfg.gateway.deadline = None;
        cfg.service.pool.max_connections = 10_000;
        cfg.timeline.push(TimelineEntry {
            pulse: Some(PulseAction {
                param: Param::UpstreamLatencyScale.into(),
                value: 3.0,
                duration: secs(10),
            }),
            ..entry(20)
        });
        let (rows, _) = go(&cfg);
        let peak = rows
            .iter()
            .map(|r| r.level(Level::UpstreamQueued).max)
            .max()
            .unwrap_or(0);
        let empty = rows[31..]
            .iter()
            .position(|r| r.level(Level::UpstreamQueued).last == 0)
            .expect("the queue drains") as f64
            + 1.0;
        (peak, empty)
    };
    let (peak_start, drain_start) = drained_after(AppliesAt::Start);
    let (peak_admission, drain_admission) = drained_after(AppliesAt::Admission);
    assert!((peak_start - 467).abs() < 20, "{peak_start}");
    assert!((drain_start - 23.5).abs() < 2.0, "{drain_start}");
    assert!(peak_admission > peak_start);
    assert!((drain_admission - 70.0).abs() < 5.0, "{drain_admission}");
}

/// The operator deploys a fix at 30 s: a client without retries against a
/// dependency failing everything. Before it, 3 retries make 4 attempts a
/// request; after it, one. The policies start fresh with the new client.
#[test]
fn a_deployed_client_applies_to_every_attempt_from_then_on() {
    use sim_models::timeline::Deploy;
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(60);
    cfg.load.rate = 100.0;
    cfg.upstream.latency = DistSpec::Constant(ms(10));
    cfg.upstream.errors.http_503 = 1.0;
    cfg.client.retry.max_retries = 3;
    cfg.client.retry.backoff = Backoff::fixed(ms(10));
    let mut fixed = cfg.client.clone();
    fixed.retry.max_retries = 0;
    cfg.timeline.push(TimelineEntry {
        deploy: Some(Deploy {
            client: Some(fixed),
            ..Default::default()
        }),
        ..entry(30)
    });
    let (rows, t) = go(&cfg);
    let amplification = |range: std::ops::Range<usize>| {
        let attempts: u64 = rows[range.clone()].iter().map(|r| r.attempts()).sum();
        let offered: u64 = rows[range].iter().map(|r| r.count(Count::Offered)).sum();
        attempts as f64 / offered as f64
    };
    assert!(
        (amplification(5..29) - 4.0).abs() < 0.05,
        "{}",
        amplification(5..29)
    );
    assert!(
        (amplification(31..59) - 1.0).abs() < 0.01,
        "{}",
        amplification(31..59)
    );
    assert_eq!(t.count(Count::TimelineSteps), 1);
}

/// The service's own rate limit: 200 requests/s at a door of 100/s. About
/// half are answered 429 at once and never reach a pod; the upstream sees
/// the other half.
#[test]
fn the_services_door_answers_429_past_its_rate() {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(60);
    cfg.load.rate = 200.0;
    cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
    cfg.gateway.rate_limit = Some(RateLimitConfig {
        rps: 100.0,
        burst: Some(10),
        retry_after: secs(1),
    });
    let (_, t) = go(&cfg);
    let limited = share(&t, Reason::RateLimited);
    assert!((limited - 0.5).abs() < 0.01, "{limited}");
    let reached = t.count(Count::AttemptsFirst) as f64 / 60.0;
    assert!(
        (reached - 100.0).abs() < 1.0,
        "{reached} a second reached the upstream"
    );
}

/// The operator reconfigures the dependency at 20 s: a slower latency
/// distribution, no queue and `drop` for what does not fit. Before, all
/// requests are served in 50 ms; after, in 200 ms, and with 10 slots the
/// ones over 50/s are dropped silently (callers time out, no 503s).
#[test]
fn a_deployed_upstream_changes_its_latency_queue_and_overflow() {
    use sim_models::timeline::Deploy;
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(40);
    cfg.load.rate = 100.0;
    cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
    cfg.upstream.capacity = 10;
    cfg.upstream.latency = DistSpec::Constant(ms(50));
    cfg.client.attempt_timeout = Some(secs(1));
    cfg.client.retry.max_retries = 0;
    let mut upstream = cfg.upstream.clone();
    upstream.latency = DistSpec::Constant(ms(200));
    upstream.queue_limit = 0;
    upstream.overflow = OverflowAction::Drop;
    cfg.timeline.push(TimelineEntry {
        deploy: Some(Deploy {
            upstream: Some(upstream),
            ..Default::default()
        }),
        ..entry(20)
    });
    let (rows, t) = go(&cfg);
    let p50 = |r: &BucketRow| r.latency(Latency::FirstAttempt).p50.unwrap_or(0) as f64 / 1e6;
    assert!((p50(&rows[10]) - 50.0).abs() < 1.0, "{}", p50(&rows[10]));
    assert!(per_second(&rows, 22..39, |r| r.count(Count::UpstreamDropped)) > 45.0);
    assert!(per_second(&rows, 22..39, |r| r.outcome(Reason::Success)) > 48.0);
    assert_eq!(t.outcome(Reason::ServerError), 0, "dropped, not rejected");
    let served_after = rows[25].latency(Latency::FirstAttempt).p50.unwrap_or(0) as f64 / 1e6;
    assert!(served_after >= 199.0, "{served_after}");
}

/// A deploy that raises the dependency's connection limit applies to the
/// dials from then on: every call dials its own connection (none kept
/// idle) and holds it 1 s, 40 calls a second against a limit of 5, so
/// nearly every dial is refused; after the deploy to 1,000 none is.
#[test]
fn a_deployed_connection_limit_applies_to_dials_from_then_on() {
    use sim_models::timeline::Deploy;
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(40);
    cfg.load.rate = 40.0;
    cfg.service.pods = 1;
    cfg.service.pool.max_idle = Some(0);
    cfg.service.pool.connect_time = DistSpec::Constant(ms(1));
    cfg.upstream.max_connections = Some(5);
    cfg.upstream.latency = DistSpec::Constant(secs(1));
    cfg.client.attempt_timeout = Some(secs(5));
    cfg.client.retry.max_retries = 0;
    let mut upstream = cfg.upstream.clone();
    upstream.max_connections = Some(1_000);
    cfg.timeline.push(TimelineEntry {
        deploy: Some(Deploy {
            upstream: Some(upstream),
            ..Default::default()
        }),
        ..entry(20)
    });
    let (rows, _) = go(&cfg);
    let refused = |r: &BucketRow| r.outcome(Reason::ConnectFailure);
    let served = |r: &BucketRow| r.outcome(Reason::Success);
    assert!(per_second(&rows, 5..19, refused) > 30.0);
    assert!(per_second(&rows, 5..19, served) < 6.0);
    assert_eq!(per_second(&rows, 22..39, refused), 0.0);
    let offered = per_second(&rows, 22..39, |r| r.count(Count::Offered));
    assert!(per_second(&rows, 22..39, served) > 0.95 * offered);
}

/// A multiplexed pool: 2 connections of 100 streams carry 125 calls at
/// once (100 a second for 1.25 s on average) with no wait, where 2 one-call connections make everyone queue;
/// and attempts that time out reset their streams, so the pool never
/// dials past its 2 connections.
#[test]
fn a_multiplexed_pool_carries_many_calls_on_few_connections() {
    let world = |streams: Option<u32>| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(30);
        cfg.load.rate = 100.0;
        cfg.service.pods = 1;
        cfg.service.pool.max_connections = 2;
        cfg.service.pool.streams_per_connection = streams;
        // Half the calls take 1 s, the others time out at 1.5 s.
        cfg.upstream.latency = DistSpec::Uniform {
            low: ms(500),
            high: ms(2_500),
        };
        cfg.client.attempt_timeout = Some(ms(1_500));
        cfg.client.retry.max_retries = 0;
        go(&cfg)
    };
    let (rows, t) = world(Some(100));
    let waits = t.latency(Latency::PoolWait);
    assert_eq!(waits.quantile(0.99), Some(0), "nobody waits for a stream");
    let in_use = rows[10..29]
        .iter()
        .map(|r| r.level(Level::PoolInUse).mean)
        .sum::<f64>()
        / 19.0;
    assert!((in_use - 125.0).abs() < 12.0, "{in_use} calls at once");
    assert!(share(&t, Reason::AttemptTimeout) > 0.4);
    let (_, plain) = world(None);
    assert!(
        share(&plain, Reason::Success) < 0.05,
        "two one-call connections serve almost nobody"
    );
}

/// A balancer told late (`endpoint_lag`) keeps sending a killed pod its
/// share until the news arrives, and the pod refuses each: with constant
/// arrivals at 400 a second over four pods in turn, a lag of 2 s sends
/// the killed pod exactly 200 more (plus the two it held, 20 ms each at
/// 100 a second). Told at once, or in the same instant (`0s`), only what
/// it held fails.
#[test]
fn a_balancer_told_late_sends_a_killed_pod_its_share_for_the_lag() {
    let world = |lag: Option<SimDuration>| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(40);
        cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
        cfg.load.rate = 400.0;
        cfg.service.pods = 4;
        cfg.service.endpoint_lag = lag;
        cfg.upstream.latency = DistSpec::Constant(ms(20));
        cfg.timeline.push(TimelineEntry {
            kill_pod: Some(0),
            ..entry(20)
        });
        go(&cfg)
    };
    let (rows, t) = world(None);
    let held = t.outcome(Reason::PodRestarted);
    assert!((1..=4).contains(&held), "{held}");
    // The pod's own level falls at once, whatever the balancer knows.
    assert_eq!(rows[20].level(Level::PodsUp).last, 3);
    assert_eq!(
        world(Some(SimDuration::ZERO))
            .1
            .outcome(Reason::PodRestarted),
        held
    );
    let (rows, t) = world(Some(secs(2)));
    assert_eq!(t.outcome(Reason::PodRestarted), held + 200);
    assert_eq!(rows[20].level(Level::PodsUp).last, 3);
    // None after the news: the other three carry the load.
    let refused = |r: &BucketRow| r.outcome(Reason::PodRestarted);
    assert_eq!(per_second(&rows, 23..40, refused), 0.0);
    assert_eq!(
        per_second(&rows, 23..40, |r| r.outcome(Reason::Success)),
        400.0
    );
}

/// The lag holds for both news, in the order they happen: a pod that
/// restarts in 1 s with a lag of 3 s is back before the balancer hears it
/// left, so only the requests of its second down are refused (100), and
/// the balancer then takes it out and puts it back a second later; with
/// a lag of 500 ms, half a second's share (50).
#[test]
fn a_lagging_balancer_hears_of_a_restart_in_order() {
    use sim_models::config::HealthConfig;
    let world = |lag: SimDuration| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(40);
        cfg.load.arrivals = sim_models::config::ArrivalProcess::Constant;
        cfg.load.rate = 400.0;
        cfg.service.pods = 4;
        cfg.service.endpoint_lag = Some(lag);
        cfg.service.health = Some(HealthConfig {
            restart_time: secs(1),
            failure_threshold: 1_000,
            ..HealthConfig::default()
        });
        cfg.upstream.latency = DistSpec::Constant(ms(20));
        cfg.timeline.push(TimelineEntry {
            restart_pod: Some(0),
            ..entry(20)
        });
        go(&cfg)
    };
    let held = world(SimDuration::ZERO).1.outcome(Reason::PodRestarted);
    assert!((1..=4).contains(&held), "{held}");
    let (rows, t) = world(secs(3));
    assert_eq!(t.outcome(Reason::PodRestarted), held + 100);
    // Pod 0 (its own group) serves from 21 s, gets nothing from 23 s
    // (the news that it left) and serves again from 24 s (that it is
    // back): its connections in use, two on average when it serves.
    let in_use = |s: usize| rows[s].groups[0].in_use.mean;
    assert!(
        in_use(22) > 1.5 && in_use(25) > 1.5,
        "{} {}",
        in_use(22),
        in_use(25)
    );
    assert!(in_use(23) < 0.1, "{}", in_use(23));
    assert_eq!(world(ms(500)).1.outcome(Reason::PodRestarted), held + 50);
}
