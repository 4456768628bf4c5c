//! Ready-made worlds used by tests, examples and benchmarks.

use sim_core::dist::DistSpec;
use sim_core::time::SimDuration;

use crate::config::{HealthConfig, LoadLaw, WorldConfig};
use crate::policy::backoff::Backoff;
use crate::timeline::{At, Param, SetAction, TimelineEntry};

/// The 14:02 LLM-API topology, uncalibrated: 100 requests/s; 8 pods × 50
/// connections with no pool acquire timeout (Go); connect and read
/// timeouts of 30 s counted from the attempt's start; 3 retries at a fixed
/// 1 s on every failure; liveness probes that fail when goroutines are
/// stuck waiting for the pool; an upstream with a 5 s p99 (2.5 s median)
/// that grows slower with load (+1 ms per request in service) and answers
/// 503 at once beyond 350 requests in service, whose latency scale steps
/// ×2.4 (5 s → 12 s) at 14:02:30. Runs 14:00:00 to 14:10:00.
pub fn storm_1402() -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.clock.start = "14:00:00".parse().expect("label");
    cfg.clock.duration = SimDuration::from_secs(600);
    cfg.load.rate = 100.0;
    cfg.service.pods = 8;
    cfg.service.pool.max_connections = 50;
    cfg.service.pool.acquire_timeout = None;
    cfg.service.pool.connect_time = DistSpec::Constant(SimDuration::from_millis(50));
    cfg.service.health = Some(HealthConfig {
        period: SimDuration::from_secs(10),
        timeout: SimDuration::from_secs(1),
        failure_threshold: 3,
        restart_time: SimDuration::from_secs(30),
        ..HealthConfig::default()
    });
    cfg.upstream.capacity = 350;
    cfg.upstream.queue_limit = 0;
    cfg.upstream.latency = DistSpec::LogNormal {
        median: Some(SimDuration::from_millis(2_500)),
        p99: Some(SimDuration::from_secs(5)),
        mu: None,
        sigma: None,
    };
    cfg.upstream.load_law = LoadLaw::Linear {
        per_request: SimDuration::from_millis(1),
    };
    cfg.upstream.errors.http_500 = 0.005;
    cfg.client.connect_timeout = Some(SimDuration::from_secs(30));
    cfg.client.attempt_timeout = Some(SimDuration::from_secs(30));
    cfg.client.retry.max_retries = 3;
    cfg.client.retry.backoff = Backoff::fixed(SimDuration::from_secs(1));
    cfg.timeline.push(TimelineEntry {
        at: At::Label("14:02:30".parse().expect("label")),
        set: Some(SetAction {
            param: Param::UpstreamLatencyScale.into(),
            value: 2.4,
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
    cfg
}

/// A steady, healthy service at 10,000 requests/s for `seconds`: 16 pods ×
/// 100 connections, 20 ms median upstream latency (p99 80 ms), 1 s
/// attempt timeouts, 2 retries on failure, 0.1 % injected 500s, a gateway
/// deadline of 5 s. Used by the world benchmark.
pub fn steady(seconds: u64) -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = SimDuration::from_secs(seconds);
    cfg.load.rate = 10_000.0;
    cfg.gateway.deadline = Some(SimDuration::from_secs(5));
    cfg.service.pods = 16;
    cfg.service.pool.max_connections = 100;
    cfg.upstream.capacity = 2_000;
    cfg.upstream.latency = DistSpec::LogNormal {
        median: Some(SimDuration::from_millis(20)),
        p99: Some(SimDuration::from_millis(80)),
        mu: None,
        sigma: None,
    };
    cfg.upstream.errors.http_500 = 0.001;
    cfg.client.attempt_timeout = Some(SimDuration::from_secs(1));
    cfg.client.retry.max_retries = 2;
    cfg.client.retry.backoff = Backoff::fixed(SimDuration::from_millis(100));
    cfg
}

/// [`steady`] with a full policy stack instead of fixed retries:
/// exponential backoff with ±25 % jitter, a Resilience4j breaker and a
/// 10 % retry budget per pod. The benchmark compares the two.
pub fn steady_with_policies(seconds: u64) -> WorldConfig {
    use crate::policy::backoff::Jitter;
    use crate::policy::breaker::{BreakerSpec, R4jConfig};
    use crate::policy::budget::BudgetSpec;
    let mut cfg = steady(seconds);
    cfg.client.retry.backoff = Backoff::exponential(
        SimDuration::from_millis(100),
        2.0,
        Some(SimDuration::from_secs(2)),
        Jitter::Proportional(0.25),
    );
    cfg.client.breaker = Some(BreakerSpec::Resilience4j(R4jConfig::default()));
    cfg.client.budget = Some(BudgetSpec::Ratio {
        ratio: 0.1,
        window: SimDuration::from_secs(10),
    });
    cfg
}
