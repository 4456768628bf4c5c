//! The policy catalogue inside the world.

use crate::common::{go, ms, secs, share};
use sim_core::dist::DistSpec;
use sim_core::time::SimDuration;
use sim_models::config::{
    ArrivalProcess, FastRetry, GatewayRetry, HedgingConfig, PushbackConfig, RateLimitConfig,
    RetryAfterMode, RetryOn, Scope, WorldConfig,
};
use sim_models::outcome::Reason;
use sim_models::policy::backoff::Backoff;
use sim_models::policy::breaker::{BreakerSpec, R4jConfig};
use sim_models::policy::budget::BudgetSpec;
use sim_models::policy::bulkhead::BulkheadSpec;
use sim_models::policy::presets;
use sim_models::policy::throttle::ThrottleSpec;
use sim_models::recorder::{BucketRow, Count, Latency, Level};

fn preset(name: &str) -> WorldConfig {
    let mut cfg = WorldConfig::default();
    presets::get(name).unwrap().apply(&mut cfg);
    cfg
}

#[test]
fn hedging_follows_the_grfc_example() {
    // hedgingDelay 0.5 s, maxAttempts 4: 1, 2, 3, 4 attempts outstanding
    // at 1, 501, 1001, 1501 ms. One request, at 10 s; an upstream taking
    // 3 s; connections set up instantly; 1 ms buckets.
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(14);
    cfg.clock.bucket = ms(1);
    cfg.load.rate = 0.1;
    cfg.load.arrivals = ArrivalProcess::Constant;
    cfg.service.pods = 1;
    cfg.service.pool.connect_time = DistSpec::Constant(SimDuration::ZERO);
    cfg.upstream.latency = DistSpec::Constant(secs(3));
    cfg.client.attempt_timeout = None;
    cfg.client.hedging = Some(HedgingConfig {
        max_attempts: 4,
        delay: ms(500),
        non_fatal: vec![RetryOn::ServerError],
    });
    let (rows, t) = go(&cfg);
    let outstanding = |ms_after: usize| rows[10_000 + ms_after].level(Level::PoolInUse).last;
    assert_eq!(
        [
            outstanding(1),
            outstanding(499),
            outstanding(501),
            outstanding(1001),
            outstanding(1501),
            outstanding(2998)
        ],
        [1, 1, 2, 3, 4, 4]
    );
    // The first answer (at 3 s) wins; the three hedges still out are cancelled.
    assert_eq!(outstanding(3001), 0);
    assert_eq!(t.outcome(Reason::Success), 1);
    assert_eq!(t.count(Count::AttemptsHedge), 3);
    assert_eq!(t.count(Count::HedgesCancelled), 3);
}

#[test]
fn a_non_fatal_answer_sends_the_next_hedge_at_once() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.errors.http_503 = 1.0;
    cfg.upstream.latency = DistSpec::Constant(ms(10));
    cfg.client.hedging = Some(HedgingConfig {
        max_attempts: 3,
        delay: secs(10),
        non_fatal: vec![RetryOn::ServerError],
    });
    let (_, t) = go(&cfg);
    // Each 503 triggers the next hedge at once: three attempts, all failing.
    assert!((t.amplification() - 3.0).abs() < 0.01);
    assert_eq!(share(&t, Reason::ServerError), 1.0);
}

/// One pod hedging 4 attempts 1 s apart against an upstream answering
/// 503 in 1 ms (non-fatal): each answer sends the next hedge at once.
fn hedging_against_503s() -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.service.pods = 1;
    cfg.upstream.errors.http_503 = 1.0;
    cfg.upstream.latency = DistSpec::Constant(ms(1));
    cfg.client.hedging = Some(HedgingConfig {
        max_attempts: 4,
        delay: secs(1),
        non_fatal: vec![RetryOn::ServerError],
    });
    cfg
}

#[test]
fn grpc_throttling_stops_hedges_as_it_stops_retries() {
    // gRFC A6: "subsequent hedged RPCs will only be sent if token_count is
    // greater than the threshold". 10 tokens, every 503 (non-fatal, so a
    // qualified failure) takes one: the first call's answers leave 9, 8,
    // 7 and 6, each above 5, so it sends its 3 hedges; the next call's
    // first answer leaves 5 and its hedge is refused, as is every later
    // call's (no success ever refills). Without the throttle, 3 hedges a
    // call.
    let mut cfg = hedging_against_503s();
    cfg.client.budget = Some(BudgetSpec::Grpc {
        max_tokens: 10,
        token_ratio: 0.1,
    });
    let (_, t) = go(&cfg);
    let calls = t.count(Count::AttemptsFirst);
    assert!(calls > 1_000, "{calls} calls");
    assert_eq!(t.count(Count::AttemptsHedge), 3);
    assert_eq!(t.count(Count::BudgetDenied), calls - 1);
    assert_eq!(t.outcome(Reason::BudgetExhausted), calls - 1);
    cfg.client.budget = None;
    let (_, t) = go(&cfg);
    assert_eq!(
        t.count(Count::AttemptsHedge),
        3 * t.count(Count::AttemptsFirst)
    );
}

#[test]
fn a_pushback_spaces_hedges_or_stops_them() {
    // gRFC A6, hedging: "Pushback: Retry in n ms: send next hedged request
    // in n ms. Subsequent hedged requests will resume at n + hedgingDelay";
    // "Pushback: Don't retry: don't send any more hedged requests". An
    // upstream with one slot, no queue and 10 s of work turns nearly
    // every call away with a 503 (non-fatal) and its pushback; hedges are
    // 30 s apart, so only answers send them. Pushback of 200 ms: a turned
    // away call's 4 attempts go 200 ms apart and it ends 600 ms after it
    // began. Ignored, the hedges go at once.
    let mut cfg = WorldConfig::default();
    cfg.service.pods = 1;
    cfg.load.rate = 10.0;
    cfg.load.arrivals = ArrivalProcess::Constant;
    cfg.upstream.capacity = 1;
    cfg.upstream.queue_limit = 0;
    cfg.upstream.latency = DistSpec::Constant(secs(10));
    cfg.upstream.pushback = PushbackConfig::After(ms(200));
    cfg.client.attempt_timeout = None;
    cfg.client.retry.retry_after.mode = RetryAfterMode::Honor;
    cfg.client.hedging = Some(HedgingConfig {
        max_attempts: 4,
        delay: secs(30),
        non_fatal: vec![RetryOn::ServerError],
    });
    let median = |cfg: &WorldConfig| {
        let (_, t) = go(cfg);
        let took = t.latency(Latency::EndToEnd).quantile(0.5).unwrap();
        (
            took,
            t.count(Count::AttemptsHedge),
            t.count(Count::AttemptsFirst),
        )
    };
    let (took, hedges, calls) = median(&cfg);
    assert!((600_000_000..602_000_000).contains(&took), "{took} ns");
    assert!(hedges > 2 * calls, "{hedges} hedges of {calls} calls");
    cfg.client.retry.retry_after.mode = RetryAfterMode::Ignore;
    let (took, _, _) = median(&cfg);
    assert!(took < 2_000_000, "{took} ns");
    // A pushback over the cap means "do not retry", as for retries: no
    // hedge is ever sent (the calls served finish in 10 s, before their
    // 30 s hedge); nor when told so outright.
    cfg.client.retry.retry_after.mode = RetryAfterMode::Honor;
    cfg.client.retry.retry_after.cap = Some(ms(100));
    let (_, hedges, _) = median(&cfg);
    assert_eq!(hedges, 0);
    cfg.client.retry.retry_after.cap = None;
    cfg.upstream.pushback = PushbackConfig::DontRetry;
    let (_, hedges, _) = median(&cfg);
    assert_eq!(hedges, 0);
}

#[test]
fn grpc_throttling_stops_retries_against_a_failing_upstream() {
    let mut cfg = preset("grpc-a6");
    cfg.upstream.errors.http_503 = 1.0;
    let (rows, t) = go(&cfg);
    // Per pod: 10 tokens, retries only while > 5; every failure takes one,
    // so at most the failures that leave 9, 8, 7 or 6 tokens get a retry:
    // four per pod at the start, then none.
    let retries = t.count(Count::AttemptsRetry);
    assert!((8 * 3..=8 * 4).contains(&retries), "{retries} retries");
    assert!(rows[5..].iter().all(|r| r.count(Count::AttemptsRetry) == 0));
}

#[test]
fn grpc_throttling_never_engages_below_its_fraction() {
    // f = 5 % < r/(1+r) = 9.1 %: three retries as needed, never throttled.
    let mut cfg = preset("grpc-a6");
    cfg.clock.duration = secs(600);
    cfg.upstream.errors.http_503 = 0.05;
    let (_, t) = go(&cfg);
    let expected = (1.0 - 0.05f64.powi(4)) / 0.95;
    assert!(
        (t.amplification() - expected).abs() < 0.01 * expected,
        "{} vs {expected}",
        t.amplification()
    );
}

#[test]
fn a_finagle_request_takes_at_most_its_share_of_the_budget() {
    // Finagle's requeue filter: a request may requeue ceil(0.2 × balance)
    // times. A budget of 10 retries a second and nothing deposited
    // (`percent_can_retry` 0, ttl 1 s), one request every 10 s failing
    // every attempt with a 500, retried at once: 2 retries each (20 % of
    // 10), where the budget alone allows 10.
    let mut cfg = WorldConfig::default();
    cfg.service.pods = 1;
    cfg.load.rate = 0.1;
    cfg.load.arrivals = ArrivalProcess::Constant;
    cfg.upstream.latency = DistSpec::Constant(ms(1));
    cfg.upstream.errors.http_500 = 1.0;
    cfg.client.retry.max_retries = u32::MAX;
    cfg.client.retry.backoff = Backoff::fixed(SimDuration::ZERO);
    let budget = |share| BudgetSpec::Finagle {
        ttl: secs(1),
        min_retries_per_sec: 10,
        percent_can_retry: 0.0,
        per_request_share: share,
    };
    cfg.client.budget = Some(budget(Some(0.2)));
    let retries = |cfg: &WorldConfig| {
        let (_, t) = go(cfg);
        (t.count(Count::AttemptsRetry), t.count(Count::AttemptsFirst))
    };
    let (r, calls) = retries(&cfg);
    assert_eq!(r, 2 * calls, "{calls} calls");
    cfg.client.budget = Some(budget(None));
    let (r, calls) = retries(&cfg);
    assert_eq!(r, 10 * calls, "{calls} calls");
}

#[test]
fn finagle_budget_caps_the_retry_rate() {
    // Every dial refused; 100 requests/s over 8 pods, each pod's budget
    // allows 10 retries/s + 20 % of its 12.5 requests/s: 100 retries/s in
    // all, far below the 25 per request the requeue filter would send.
    let mut cfg = preset("finagle");
    cfg.load.arrivals = ArrivalProcess::Constant;
    cfg.network.connect_failure = 1.0;
    let (rows, _) = go(&cfg);
    let steady: u64 = rows[20..60]
        .iter()
        .map(|r| r.count(Count::AttemptsRetry))
        .sum();
    let per_sec = steady as f64 / 40.0;
    assert!((90.0..=101.0).contains(&per_sec), "retries {per_sec}/s");
}

#[test]
fn the_breaker_opens_serves_fallbacks_and_probes_every_wait() {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(120);
    cfg.upstream.errors.http_500 = 1.0;
    cfg.client.scope = Scope::Global;
    cfg.client.fallback = true;
    // The 14:02 fix's breaker: 50 % over 10 s, 20 calls at least, 30 s
    // open, 3 half-open probes.
    cfg.client.breaker = presets::get("incident-1402-after")
        .expect("preset")
        .client
        .breaker;
    let (rows, t) = go(&cfg);
    // Opens after 20 calls, then every 30 s three probes fail and it opens
    // again: opened at ~0.2 s, ~30 s, ~60 s, ~90 s.
    assert_eq!(t.count(Count::BreakerOpened), 4);
    assert!(share(&t, Reason::Fallback) > 0.99);
    // Failures users saw: the 20 that opened it, the few already in flight
    // then (about 5 at 100/s × 50 ms), and three probes per half-open.
    let failed = t.outcome(Reason::ServerError);
    assert!((29..=40).contains(&failed), "{failed} failures");
    assert!(
        rows[5..29]
            .iter()
            .all(|r| r.level(Level::BreakersOpen).min == 1)
    );
    assert!(
        rows.iter()
            .any(|r| r.level(Level::BreakersHalfOpen).max == 1)
    );
}

/// Resilience4j's `automatic_transition`: the breaker goes half-open by
/// its own timer when the wait is over, calls or none. The load stops at
/// 10 s with the breaker open (since about 0.2 s): with the timer it is
/// half-open from about 30.2 s to the end; without it, open to the end.
#[test]
fn a_refusal_of_the_breaker_is_retried_when_asked() {
    // Resilience4j's Retry takes the breaker's CallNotPermittedException
    // like any exception. An upstream failing every call opens the
    // breaker (50 % of 10, 60 s open); from then on a call is refused,
    // retried 500 ms later, refused, retried, refused: it fails
    // `breaker_open` 1 s after it began, three refusals counted, nothing
    // sent. Not asked, the refusal ends it at once.
    let mut cfg = WorldConfig::default();
    cfg.service.pods = 1;
    cfg.load.rate = 20.0;
    cfg.upstream.latency = DistSpec::Constant(ms(1));
    cfg.upstream.errors.http_500 = 1.0;
    cfg.client.retry.max_retries = 2;
    cfg.client.retry.backoff = Backoff::fixed(ms(500));
    cfg.client.retry.retry_on = vec![RetryOn::ServerError, RetryOn::BreakerOpen];
    cfg.client.breaker = Some(BreakerSpec::Resilience4j(R4jConfig {
        sliding_window_size: 10,
        minimum_number_of_calls: 10,
        ..R4jConfig::default()
    }));
    let (_, t) = go(&cfg);
    let refused = t.outcome(Reason::BreakerOpen);
    assert!(refused > 1_000, "{refused}");
    // Three refusals each; a few more from calls still in their second
    // second at the end, or let through when the breaker half-opens.
    let per_call = t.count(Count::BreakerRejected) as f64 / refused as f64;
    assert!(
        (3.0..3.02).contains(&per_call),
        "{per_call} refusals a call"
    );
    // 1 s of waits, and the request's few milliseconds on its way.
    let took = t.latency(Latency::EndToEnd);
    assert!(
        took.quantile(0.5)
            .is_some_and(|v| (1_000_000_000..1_010_000_000).contains(&v)),
        "{:?}",
        took.quantile(0.5)
    );
    cfg.client.retry.retry_on = vec![RetryOn::ServerError];
    let (_, t) = go(&cfg);
    assert_eq!(
        t.count(Count::BreakerRejected),
        t.outcome(Reason::BreakerOpen)
    );
    assert!(
        t.latency(Latency::EndToEnd)
            .quantile(0.5)
            .is_some_and(|v| v < 10_000_000)
    );
}

#[test]
fn an_automatic_breaker_goes_half_open_without_a_call() {
    use sim_models::timeline::{Param, SetAction, TimelineEntry};
    let run = |automatic: bool| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(60);
        cfg.upstream.errors.http_500 = 1.0;
        cfg.client.scope = Scope::Global;
        cfg.client.fallback = true;
        let mut breaker = presets::get("incident-1402-after")
            .expect("preset")
            .client
            .breaker;
        if let Some(sim_models::policy::breaker::BreakerSpec::Resilience4j(b)) = &mut breaker {
            b.automatic_transition = automatic;
        }
        cfg.client.breaker = breaker;
        cfg.timeline.push(TimelineEntry {
            set: Some(SetAction {
                param: Param::LoadRate.into(),
                value: 0.0,
            }),
            ..TimelineEntry::at_offset(secs(10))
        });
        go(&cfg)
    };
    let (timer, t) = run(true);
    assert_eq!(t.count(Count::BreakerOpened), 1);
    let (open, half) = (Level::BreakersOpen, Level::BreakersHalfOpen);
    assert!(timer[1..30].iter().all(|r| r.level(open).min == 1));
    assert_eq!(
        (timer[30].level(open).last, timer[30].level(half).last),
        (0, 1)
    );
    assert!(timer[31..].iter().all(|r| r.level(half).min == 1));
    let (call, t) = run(false);
    assert_eq!(t.count(Count::BreakerOpened), 1);
    assert!(
        call[1..]
            .iter()
            .all(|r| r.level(open).min == 1 && r.level(half).max == 0)
    );
}

#[test]
fn retry_after_is_honoured_and_need_not_count_as_a_retry() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.rate_limit = Some(RateLimitConfig {
        rps: 50.0,
        burst: Some(1),
        retry_after: secs(2),
    });
    cfg.load.arrivals = ArrivalProcess::Constant;
    cfg.client.retry.max_retries = 0;
    cfg.client.retry.retry_after.mode = RetryAfterMode::Honor;
    cfg.client.retry.retry_after.counts_as_retry = false;
    let (_, t) = go(&cfg);
    // With max_retries 0, 429s are still retried (the wait is not a retry),
    // always exactly 2 s later.
    assert!(t.count(Count::RetryAfterWaits) > 1_000);
    let delays = t.latency(Latency::RetryDelay);
    assert_eq!(
        (delays.min(), delays.max()),
        (Some(2_000_000_000), Some(2_000_000_000))
    );
    // A cap below the header means "do not retry".
    cfg.client.retry.retry_after.cap = Some(secs(1));
    let (_, t) = go(&cfg);
    assert_eq!(t.count(Count::RetryAfterWaits), 0);
}

#[test]
fn only_idempotent_requests_are_retried_when_asked() {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(300);
    cfg.load.idempotent_fraction = 0.5;
    cfg.upstream.errors.http_500 = 0.5;
    cfg.client.retry.max_retries = 1;
    cfg.client.retry.backoff = Backoff::fixed(SimDuration::ZERO);
    cfg.client.retry.idempotent_only = true;
    let (_, t) = go(&cfg);
    // Half the requests fail their first attempt; half of those may retry.
    assert!(
        (t.amplification() - 1.25).abs() < 0.02,
        "{}",
        t.amplification()
    );
}

#[test]
fn fast_retries_are_a_separate_layer() {
    // Seed 001: one immediate retry for quick 503s, not counted against
    // max_retries (0 here).
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(300);
    cfg.upstream.errors.http_503 = 0.5;
    cfg.upstream.latency = DistSpec::Constant(ms(20));
    cfg.client.retry.max_retries = 0;
    cfg.client.retry.fast_retry = Some(FastRetry {
        max: 1,
        statuses: vec![502, 503, 504],
        within: ms(100),
    });
    let (_, t) = go(&cfg);
    assert!(
        (t.amplification() - 1.5).abs() < 0.02,
        "{}",
        t.amplification()
    );
    assert!((share(&t, Reason::ServerError) - 0.25).abs() < 0.02);
}

#[test]
fn retries_at_two_tiers_multiply() {
    // Gateway: 2 retries; service: 3 retries; always failing: 3 × 4 = 12
    // attempts per user request.
    let mut cfg = WorldConfig::default();
    cfg.upstream.errors.http_500 = 1.0;
    cfg.upstream.latency = DistSpec::Constant(ms(1));
    cfg.client.retry.max_retries = 3;
    cfg.client.retry.backoff = Backoff::fixed(SimDuration::ZERO);
    cfg.gateway.retry = Some(GatewayRetry {
        max_retries: 2,
        on: vec![Reason::ServerError],
    });
    let (_, t) = go(&cfg);
    assert!(
        (t.amplification() - 12.0).abs() < 0.01,
        "{}",
        t.amplification()
    );
    assert_eq!(
        sim_models::policy::analysis::worst_case(&cfg).amplification,
        Some(12)
    );
}

#[test]
fn propagated_deadlines_let_the_upstream_drop_dead_work() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.capacity = 5;
    cfg.upstream.latency = DistSpec::Constant(ms(100)); // 50/s capacity for 100/s
    cfg.client.attempt_timeout = Some(ms(500));
    let (rows_without, without) = go(&cfg);
    cfg.client.propagate_deadline = true;
    let (rows_with, with) = go(&cfg);
    assert_eq!(without.count(Count::UpstreamExpired), 0);
    assert!(with.count(Count::UpstreamExpired) > 1_000);
    // Without deadlines the queue fills with work nobody waits for; with
    // them it holds only the last half second of arrivals.
    let peak = |rows: &[BucketRow]| {
        rows.iter()
            .map(|r| r.level(Level::UpstreamQueued).max)
            .max()
            .unwrap()
    };
    assert!(peak(&rows_without) > 2_000, "{}", peak(&rows_without));
    assert!(peak(&rows_with) < 100, "{}", peak(&rows_with));
}

#[test]
fn sre_throttling_sends_about_k_per_accept() {
    // The upstream accepts 20/s (a rate limit with a 1 s burst) of 100/s
    // offered; K = 2 over a window of 120 s (12,000 requests, 2,400
    // accepts): p = (12,000 − 2·2,400)/12,001 ≈ 0.59995, so about 40.0
    // attempts/s reach it, two per accept (drawn parameters:
    // `drawn::random_sre_throttles_send_k_per_accept_into_a_token_bucket`).
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(300);
    cfg.upstream.rate_limit = Some(RateLimitConfig {
        rps: 20.0,
        burst: Some(20),
        retry_after: secs(1),
    });
    cfg.client.scope = Scope::Global;
    cfg.client.throttle = Some(ThrottleSpec::Sre {
        k: 2.0,
        window: secs(120),
    });
    let (rows, t) = go(&cfg);
    let sent: u64 = rows[150..].iter().map(|r| r.attempts()).sum();
    let accepted: u64 = rows[150..].iter().map(|r| r.outcome(Reason::Success)).sum();
    let per_sec = sent as f64 / 150.0;
    assert!(
        (per_sec - 40.0).abs() < 3.0,
        "attempts reaching the upstream {per_sec}/s"
    );
    let per_accept = sent as f64 / accepted as f64;
    assert!(
        (per_accept - 2.0).abs() < 0.2,
        "attempts per accept {per_accept}"
    );
    assert!(t.outcome(Reason::Throttled) > 10_000);
}

#[test]
fn aws_adaptive_slows_sending_after_throttles() {
    let mut cfg = preset("aws-adaptive");
    cfg.upstream.rate_limit = Some(RateLimitConfig {
        rps: 30.0,
        burst: Some(5),
        retry_after: secs(1),
    });
    let (_, adaptive) = go(&cfg);
    let (_, standard) = go(&{
        let mut c = preset("aws-standard");
        c.upstream.rate_limit = cfg.upstream.rate_limit.clone();
        c
    });
    assert!(adaptive.count(Count::RateLimiterWaits) > 0);
    assert!(
        adaptive.count(Count::UpstreamRateLimited) < standard.count(Count::UpstreamRateLimited) / 2
    );
}

#[test]
fn budgets_deny_retries_with_their_own_outcome() {
    let mut cfg = WorldConfig::default();
    cfg.upstream.errors.http_500 = 1.0;
    cfg.client.retry.max_retries = 3;
    cfg.client.retry.backoff = Backoff::fixed(SimDuration::ZERO);
    cfg.client.budget = Some(BudgetSpec::Bucket {
        max_tokens: 100,
        per_success: 1,
        per_retry: 10,
    });
    let (_, t) = go(&cfg);
    // Ten retries per pod's bucket, then every retry is refused.
    assert_eq!(t.count(Count::AttemptsRetry), 8 * 10);
    assert!(share(&t, Reason::BudgetExhausted) > 0.98);
}

/// One request every 10 s, each attempt answered 500 in 1 ms unless the
/// rate limit (one token every 2 s) answers 429 with `retry_after` first.
fn limited_500s(retry_after: SimDuration) -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.load.rate = 0.1;
    cfg.load.arrivals = ArrivalProcess::Constant;
    cfg.upstream.latency = DistSpec::Constant(ms(1));
    cfg.upstream.errors.http_500 = 1.0;
    cfg.upstream.rate_limit = Some(RateLimitConfig {
        rps: 0.5,
        burst: Some(1),
        retry_after,
    });
    cfg
}

#[test]
fn a_honoured_pushback_restarts_the_backoff_schedule() {
    // One request every 10 s; every answer is a 500 unless the rate limit
    // (one token every 2 s) answers 429 with Retry-After 2 s first:
    // attempt 1 → 500, retry after 100 ms → 429, retry after exactly 2 s →
    // 500, and the next backoff starts over at 100 ms (without the reset it
    // would be the third step, 400 ms).
    let mut cfg = limited_500s(secs(2));
    cfg.client.retry.max_retries = 3;
    cfg.client.retry.backoff = Backoff::exponential(
        ms(100),
        2.0,
        None,
        sim_models::policy::backoff::Jitter::None,
    );
    cfg.client.retry.retry_after.mode = RetryAfterMode::Honor;
    let (_, t) = go(&cfg);
    let delays = t.latency(Latency::RetryDelay);
    // One per request (five whole requests fit in the minute).
    assert_eq!(t.count(Count::RetryAfterWaits), 5);
    // 100 ms, 2 s, 100 ms per request: the median is 100 ms, the largest
    // backoff below 2 s is still 100 ms.
    let near_100ms = |q: f64| {
        delays
            .quantile(q)
            .is_some_and(|v| (99_000_000..=101_000_000).contains(&v))
    };
    assert!(
        near_100ms(0.5) && near_100ms(0.66),
        "{:?}",
        delays.quantile(0.66)
    );
    assert_eq!(delays.max(), Some(2_000_000_000));
    // Polly's rule: the schedule carries on, the third delay its third
    // step: 100 ms, 2 s, 400 ms, so the median is 400 ms.
    cfg.client.retry.retry_after.resets_backoff = false;
    let (_, t) = go(&cfg);
    let median = t.latency(Latency::RetryDelay).quantile(0.5);
    assert!(
        median.is_some_and(|v| (399_000_000..=401_000_000).contains(&v)),
        "{median:?}"
    );
}

#[test]
fn a_throttle_takes_its_own_backoff_and_the_header_within_its_bound() {
    // One request every 10 s; every answer is a 500 unless the rate limit
    // (one token every 2 s) answers 429 with Retry-After 3 s first:
    // attempt 1 → 500, retry after the 100 ms backoff → 429, retry after
    // the throttled backoff's 1 s raised to the header's 3 s but held to
    // 1 s + 500 ms → 429 again (the token is back at 2 s), and the call
    // ends after its 2 retries. So every request waits 100 ms, then
    // exactly 1.5 s: the AWS SDKs' 2026 rule with other numbers.
    let mut cfg = limited_500s(secs(3));
    cfg.client.retry.max_retries = 2;
    cfg.client.retry.backoff = Backoff::fixed(ms(100));
    cfg.client.retry.throttled_backoff = Some(Backoff::fixed(secs(1)));
    cfg.client.retry.retry_after.mode = RetryAfterMode::AtLeast;
    cfg.client.retry.retry_after.max_over_backoff = Some(ms(500));
    let waits = |cfg: &WorldConfig| {
        let (_, t) = go(cfg);
        let d = t.latency(Latency::RetryDelay);
        (d.count(), d.min(), d.max())
    };
    assert_eq!(
        waits(&cfg),
        (10, Some(100_000_000), Some(1_500_000_000)),
        "5 requests in the minute, 2 waits each"
    );
    // Unbounded, the header's 3 s; without the throttled backoff, the
    // 100 ms backoff + 500 ms.
    let mut unbounded = cfg.clone();
    unbounded.client.retry.retry_after.max_over_backoff = None;
    assert_eq!(waits(&unbounded).2, Some(3_000_000_000));
    let mut one_backoff = cfg.clone();
    one_backoff.client.retry.throttled_backoff = None;
    assert_eq!(waits(&one_backoff).2, Some(600_000_000));
}

/// Every attempt takes 1 s and fails (503); 100 requests/s from one pod
/// with room for all; up to 3 retries of a 503, 1 ms apart.
fn slow_failures() -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(120);
    cfg.load.rate = 100.0;
    cfg.service.pods = 1;
    cfg.service.pool.max_connections = 10_000;
    cfg.upstream.capacity = 10_000;
    cfg.upstream.latency = DistSpec::Constant(secs(1));
    cfg.upstream.errors.http_503 = 1.0;
    cfg.client.attempt_timeout = None;
    cfg.client.retry.max_retries = 3;
    cfg.client.retry.backoff = Backoff::fixed(ms(1));
    cfg.client.retry.retry_on = vec![RetryOn::ServerError];
    cfg
}

/// Envoy's example budget: 20 % of active requests, at least 3.
fn envoys_example() -> BudgetSpec {
    BudgetSpec::Envoy {
        budget_percent: 20.0,
        min_retry_concurrency: 3,
    }
}

/// Envoy's concurrency budget against its own formula. Every attempt takes
/// 1 s and fails (503); 100 requests/s; up to 3 retries, 1 ms apart. First
/// attempts keep about 100 in progress, so retries in progress settle
/// where R = 20 % × (100 + R), R = 25: a retry rate of 25/s, amplification
/// 1.25 (without a budget it is 4).
#[test]
fn envoys_budget_holds_retries_in_progress_to_its_share_of_active_requests() {
    let mut cfg = slow_failures();
    let (_, unbudgeted) = go(&cfg);
    let plain = unbudgeted.amplification();
    assert!(
        (plain - 4.0).abs() < 0.05,
        "amplification without a budget {plain}"
    );
    cfg.client.budget = Some(envoys_example());
    let (_, t) = go(&cfg);
    let amp = t.amplification();
    assert!((amp - 1.25).abs() < 0.05, "amplification {amp}");
    assert!(t.count(Count::BudgetDenied) > 0);
}

/// The client as configured, deployed again `at` into the run: its
/// policies start fresh there.
fn redeploy_client(cfg: &mut WorldConfig, at: SimDuration) {
    use sim_models::timeline::{Deploy, TimelineEntry};
    cfg.timeline.push(TimelineEntry {
        deploy: Some(Deploy {
            call: None,
            client: Some(cfg.client.clone()),
            dependency: None,
            upstream: None,
        }),
        ..TimelineEntry::at_offset(at)
    });
}

/// A deploy gives the client a fresh budget while about 125 attempts the
/// former one counted are in progress: the fresh one is told of the
/// attempts it saw start only (once each closing one was counted out of
/// it too, below zero: a debug assertion, and in release a count of
/// active requests short by those). The same world as above, the client
/// deployed again at 60 s: the budget holds retries in progress to its
/// share again at once, amplification 1.25 after the deploy as before.
#[test]
fn a_deployed_concurrency_budget_counts_only_the_attempts_it_saw_start() {
    let mut cfg = slow_failures();
    cfg.clock.bucket = secs(10);
    cfg.client.budget = Some(envoys_example());
    redeploy_client(&mut cfg, secs(60));
    let (rows, _) = go(&cfg);
    let amplification = |buckets: std::ops::Range<usize>| {
        let of = |c: Count| {
            rows[buckets.clone()]
                .iter()
                .map(|r| r.count(c))
                .sum::<u64>()
        };
        (of(Count::AttemptsFirst) + of(Count::AttemptsRetry)) as f64
            / of(Count::AttemptsFirst) as f64
    };
    for (what, buckets) in [("before", 1..6), ("after", 6..12)] {
        let amp = amplification(buckets);
        assert!((amp - 1.25).abs() < 0.05, "amplification {what}: {amp}");
    }
}

/// A dependency failing everything, 100 calls/s, up to 3 retries: 4
/// attempts per call without a policy.
fn failing_world() -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(120);
    cfg.load.rate = 100.0;
    cfg.upstream.latency = DistSpec::Constant(ms(20));
    cfg.upstream.errors.http_503 = 1.0;
    cfg.client.retry.max_retries = 3;
    cfg.client.retry.backoff = Backoff::fixed(ms(10));
    cfg.client.retry.retry_on = vec![RetryOn::ServerError];
    cfg
}

/// Brooker's retry-only breaker stops retrying, not calling: every call
/// still makes its first attempt (offered load keeps probing the
/// dependency) while retries stop once the window has judged, so
/// amplification stays near 1 instead of 4.
#[test]
fn the_retry_only_breaker_holds_amplification_near_one_while_calls_continue() {
    let mut cfg = failing_world();
    let (_, plain) = go(&cfg);
    assert!(plain.amplification() > 3.9, "{}", plain.amplification());
    cfg.client.budget = Some(BudgetSpec::RetryBreaker {
        failure_ratio: 0.5,
        window: secs(10),
        min_attempts: 10,
    });
    let (_, t) = go(&cfg);
    let amp = t.amplification();
    assert!(amp < 1.01, "amplification {amp}");
    let (first, offered) = (t.count(Count::AttemptsFirst), t.count(Count::Offered));
    assert!(
        first + 1 >= offered,
        "every call made its first attempt: {first} of {offered}"
    );
    assert!(t.count(Count::BudgetDenied) > 10_000);
}

/// Brooker's retry-only breaker against the retry algebra. Attempts fail
/// independently with probability p, up to 3 retries: a call makes
/// (1 − p⁴)/(1 − p) attempts of which p·(1 − p⁴)/(1 − p) fail, so the
/// share of failed attempts the breaker sees is p whether it lets
/// retries through or not. Below its threshold of 0.5 it never trips and
/// amplification is the closed form (1.2496 at p = 0.2, 1.6240 at 0.4);
/// above it retries stop for good once 100 results are in (fewer than
/// 100 retries in 60,000 calls). One pod, 200 calls/s for 300 s: the window of
/// 10 s judges some 3,000 attempts, p = 0.4 sits 11 standard errors
/// below the threshold and 0.6 nine above (only while the first window
/// fills can a run of failures trip it, for a few retries); the
/// amplification's standard error is 0.23 % at p = 0.4, so 1 % is four
/// of them.
#[test]
fn the_retry_only_breaker_lets_retries_through_below_its_threshold_only() {
    for p in [0.2f64, 0.4, 0.6, 0.8] {
        let mut cfg = failing_world();
        cfg.clock.duration = secs(300);
        cfg.load.rate = 200.0;
        cfg.service.pods = 1;
        cfg.upstream.errors.http_503 = p;
        cfg.client.budget = Some(BudgetSpec::RetryBreaker {
            failure_ratio: 0.5,
            window: secs(10),
            min_attempts: 100,
        });
        let (_, t) = go(&cfg);
        let amp = t.amplification();
        if p < 0.5 {
            let theory = (1.0 - p.powi(4)) / (1.0 - p);
            assert!(
                (amp - theory).abs() < 0.01 * theory,
                "p = {p}: amplification {amp}, closed form {theory:.4}"
            );
            let denied = t.count(Count::BudgetDenied);
            assert!(
                denied * 1000 < t.count(Count::AttemptsRetry),
                "p = {p}: {denied} retries refused"
            );
        } else {
            // Each retry is decided on a failure just recorded: only
            // those before the 100th result can go.
            let retries = t.count(Count::AttemptsRetry);
            assert!(
                retries <= 100,
                "p = {p}: {retries} retries, amplification {amp}"
            );
        }
    }
}

/// A budget refilled by 0.1 token per call allows about one retry per ten
/// calls once its bucket of 10 is spent: amplification 1 + 0.1 (+ 10
/// tokens over 12,000 calls) against 4 without it.
#[test]
fn a_budget_refilled_per_call_bounds_retries_to_its_fraction() {
    let mut cfg = failing_world();
    cfg.client.budget = Some(BudgetSpec::RefillPerCall {
        per_call: 0.1,
        max_tokens: 10,
    });
    let (_, t) = go(&cfg);
    let expected = 1.0 + 0.1 + 10.0 / t.count(Count::Offered) as f64;
    let amp = t.amplification();
    assert!(
        (amp - expected).abs() < 0.01,
        "amplification {amp}, expected {expected:.4}"
    );
}

/// Google SRE's per-client budget (retries at most `ratio` of the
/// requests of the last `window`) in saturation and below it. Every
/// attempt failing, every call wants three retries. One pod (one
/// budget), 100 requests a second evenly spaced, failures falling between
/// arrivals: the window always holds 1,000 requests, so 100 retries, and
/// once a window has passed retries run at exactly ratio × the call rate,
/// 1.1 attempts per call against 4 without it. Under Poisson arrivals the
/// window's allowance is ⌊0.1·N⌋ for the N it holds, E⌊0.1·N⌋ = 99.55 of
/// the mean 100 (0.5 % short: within the 1 % checked). Each pod keeps its
/// own budget, so eight pods sharing 100 requests a second allow about
/// ⌊0.1 × 125⌋ = 12 retries a window each, some 3 % fewer in all. With
/// one attempt in 20 failing,
/// calls want 0.05 + 0.05² + 0.05³ = 0.0526 retries each, under the ratio,
/// and the budget changes nothing but in the first second, when its
/// window holds a handful of requests.
#[test]
fn the_sre_ratio_budget_holds_retries_to_its_share_only_when_demand_exceeds_it() {
    use sim_models::config::ArrivalProcess;
    let mut cfg = failing_world();
    cfg.clock.bucket = secs(10);
    cfg.load.arrivals = ArrivalProcess::Constant;
    cfg.service.pods = 1;
    cfg.upstream.latency = DistSpec::Constant(ms(25));
    cfg.client.budget = Some(BudgetSpec::Ratio {
        ratio: 0.1,
        window: secs(10),
    });
    let after_a_window = |cfg: &WorldConfig| {
        let (rows, _) = go(cfg);
        let of = |c: Count| rows[1..].iter().map(|r| r.count(c)).sum::<u64>();
        (of(Count::AttemptsFirst), of(Count::AttemptsRetry))
    };
    let (first, retries) = after_a_window(&cfg);
    assert_eq!(first, 11_000);
    assert!(retries.abs_diff(1_100) <= 1, "{retries} retries");

    cfg.load.arrivals = ArrivalProcess::Poisson;
    let (first, retries) = after_a_window(&cfg);
    let share = retries as f64 / first as f64;
    assert!((share - 0.1).abs() < 0.001, "retries per call {share}");

    cfg.upstream.errors.http_503 = 0.05;
    let (_, t) = go(&cfg);
    let amp = t.amplification();
    let want = 0.05 + 0.05f64.powi(2) + 0.05f64.powi(3);
    assert!((amp - 1.0 - want).abs() < 0.008, "amplification {amp}");
    assert!(
        t.count(Count::BudgetDenied) < 10,
        "denied {} (only while the window fills)",
        t.count(Count::BudgetDenied)
    );
}

/// Retry-After jitter. One request per millisecond; for 100 ms at 5 s the
/// upstream's rate limit drops to nothing and about 80 requests get a 429
/// with `Retry-After: 1s`. Honoured exactly, they all come back 1 s later
/// in the same 100 ms, doubling the attempts of those 10 ms buckets: the
/// synchronised wave. With jitter 1 (a wait of 1–2 s) the same retries are
/// spread over a second, and the wave is gone.
#[test]
fn retry_after_jitter_removes_the_synchronised_wave() {
    use sim_models::timeline::{Param, PulseAction, TimelineEntry};
    let run_with = |jitter: f64| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(10);
        cfg.clock.bucket = ms(10);
        cfg.load.rate = 1000.0;
        cfg.load.arrivals = ArrivalProcess::Constant;
        cfg.upstream.latency = DistSpec::Constant(ms(5));
        cfg.upstream.rate_limit = Some(RateLimitConfig {
            rps: 10_000.0,
            burst: Some(20),
            retry_after: secs(1),
        });
        cfg.client.retry.max_retries = 3;
        cfg.client.retry.retry_on = vec![RetryOn::RateLimited];
        cfg.client.retry.retry_after.mode = RetryAfterMode::Honor;
        cfg.client.retry.retry_after.jitter = jitter;
        cfg.timeline.push(TimelineEntry {
            pulse: Some(PulseAction {
                param: Param::UpstreamRateLimitRps.into(),
                value: 0.001,
                duration: ms(100),
            }),
            ..TimelineEntry::at_offset(secs(5))
        });
        let (rows, t) = go(&cfg);
        let attempts =
            |r: &BucketRow| r.count(Count::AttemptsFirst) + r.count(Count::AttemptsRetry);
        let peak = rows[550..800].iter().map(attempts).max().unwrap_or(0);
        let delay = t.latency(Latency::RetryDelay);
        (
            peak,
            t.count(Count::UpstreamRateLimited),
            delay.quantile(0.5),
        )
    };
    let (peak_plain, limited_plain, wait_plain) = run_with(0.0);
    let (peak_jitter, limited_jitter, wait_jitter) = run_with(1.0);
    assert!(
        limited_plain > 60 && limited_jitter > 60,
        "{limited_plain} {limited_jitter}"
    );
    assert!(
        peak_plain >= 19,
        "the wave: {peak_plain} attempts in 10 ms against 10"
    );
    assert!(peak_jitter <= 15, "spread: {peak_jitter} attempts in 10 ms");
    let secs_of = |ns: Option<u64>| ns.unwrap_or(0) as f64 / 1e9;
    assert!((secs_of(wait_plain) - 1.0).abs() < 0.01, "{wait_plain:?}");
    assert!((secs_of(wait_jitter) - 1.5).abs() < 0.15, "{wait_jitter:?}");
}

/// Adaptive backoff: with every attempt failing, the window of the last
/// 100 attempts is past 30 % failed from its 100th attempt on, and every
/// delay doubles: 100 ms becomes 200 ms for all but each pod's first
/// hundred attempts (the window is per client, one per pod).
#[test]
fn adaptive_backoff_doubles_delays_while_most_recent_attempts_fail() {
    use sim_models::policy::adaptive_backoff::AdaptiveBackoffSpec;
    let mut cfg = failing_world();
    cfg.client.retry.backoff = Backoff::fixed(ms(100));
    let (_, plain) = go(&cfg);
    cfg.client.retry.adaptive = Some(AdaptiveBackoffSpec::default());
    let (_, adaptive) = go(&cfg);
    let mean = |t: &sim_models::recorder::RunTotals| {
        let h = t.latency(Latency::RetryDelay);
        h.mean().unwrap_or(0.0) / 1e6
    };
    assert!((mean(&plain) - 100.0).abs() < 0.5, "{}", mean(&plain));
    let m = mean(&adaptive);
    assert!(m > 195.0 && m <= 200.0, "{m}");
    let p50 = adaptive
        .latency(Latency::RetryDelay)
        .quantile(0.5)
        .unwrap_or(0) as f64
        / 1e6;
    assert!((p50 - 200.0).abs() < 2.0, "{p50}");
}

/// The server's dynamic admission threshold keeps a collapsing upstream
/// near its peak. The upstream's throughput follows the USL (σ 0.02,
/// κ 0.0005 at 50 ms): it peaks at about 313/s with 44 requests in service
/// and falls to 161/s at 200. 200 requests/s, a ×3 slowdown for 10 s,
/// 3 retries on timeout: without admission control the requests in
/// service climb past the knee, throughput falls below the offered load
/// and the storm never ends. Holding at most 44 × (1 − e²) (e the share of
/// 5xx answers, 0 here), with 429 + Retry-After for new requests and
/// resets for retries, keeps it on the knee, and goodput returns to the
/// offered rate. Plain probabilistic shedding set as a slot limit usually
/// is, past the knee (from 100 to 300 in service), sheds too late and
/// collapses like the open door. (Shedding placed at the knee holds too;
/// what the threshold adds is that it falls with the error rate, which the
/// upstream's unit test checks.)
#[test]
fn the_admission_threshold_keeps_throughput_up_where_late_shedding_collapses() {
    use sim_models::config::{AdmissionConfig, LoadLaw, Shedding};
    use sim_models::timeline::{PulseAction, TimelineEntry};
    let world = |admission: Option<AdmissionConfig>, shedding: Option<Shedding>| {
        let mut cfg = WorldConfig::default();
        cfg.clock.duration = secs(180);
        cfg.upstream.shedding = shedding;
        cfg.load.rate = 200.0;
        cfg.upstream.capacity = 10_000;
        cfg.upstream.latency = DistSpec::Constant(ms(50));
        cfg.upstream.load_law = LoadLaw::Usl {
            sigma: 0.02,
            kappa: 0.0005,
        };
        cfg.upstream.admission = admission;
        cfg.client.attempt_timeout = Some(secs(1));
        cfg.client.retry.max_retries = 3;
        cfg.client.retry.backoff = Backoff::fixed(ms(100));
        cfg.client.retry.retry_after.mode = RetryAfterMode::Honor;
        cfg.service.pool.max_connections = 10_000;
        cfg.timeline.push(TimelineEntry {
            pulse: Some(PulseAction {
                param: sim_models::timeline::Param::UpstreamLatencyScale.into(),
                value: 3.0,
                duration: secs(10),
            }),
            ..TimelineEntry::at_offset(secs(30))
        });
        let (rows, _) = go(&cfg);
        let tail = &rows[120..180];
        tail.iter().map(|r| r.outcome(Reason::Success)).sum::<u64>() as f64 / tail.len() as f64
    };
    let open = world(None, None);
    let shed = world(None, Some(Shedding { from: 100, to: 300 }));
    let guarded = world(
        Some(AdmissionConfig {
            base_capacity: 44,
            window: secs(10),
            retry_after: secs(1),
        }),
        None,
    );
    assert!(
        open < 170.0,
        "without admission control the storm stays: {open}/s"
    );
    assert!(
        shed < 170.0,
        "shedding past the knee does not save it: {shed}/s"
    );
    assert!(guarded > 190.0, "with it, goodput is back: {guarded}/s");
}

/// A deploy gives the client a fresh bulkhead while the calls the former
/// one let in are still running: they end without giving it a place back
/// (given back, each would free a place nobody took, and the fresh one
/// would let in more than its 50). Calls of exactly 1 s, evenly spaced at
/// 100/s: half find the 50 places taken, before the deploy and again once
/// the calls let in before it have ended.
#[test]
fn a_deployed_bulkhead_starts_empty_and_stays_within_its_places() {
    let mut cfg = bulkhead_world(BulkheadSpec::places(50));
    redeploy_client(&mut cfg, ms(60_500));
    let (rows, t) = go(&cfg);
    let refused =
        |r: &BucketRow| r.count(Count::BulkheadRejected) as f64 / r.count(Count::Offered) as f64;
    for (i, r) in rows.iter().enumerate() {
        let share = refused(r);
        let expected = if i == 6 { 0.45 } else { 0.5 };
        assert!(
            (share - expected).abs() < 0.02,
            "bucket {i}: {share} of the calls refused"
        );
    }
    assert!(t.count(Count::BulkheadRejected) > 0);
}

/// Calls of exactly 1 s, evenly spaced at 100/s, each with a total
/// deadline of 1.5 s, into a bulkhead of 50 places: twice what it can
/// take. A bulkhead whose line is bounded only by the calls' deadline
/// (Polly's queue) settles where every call waits 1 s and then times out
/// half-way through its attempt (admitted at 100/s, each holding its
/// place 0.5 s): nothing succeeds. A wait bound under the deadline's
/// slack (Resilience4j's `maxWaitDuration`, 0.4 s) refuses half and
/// serves the other half in time.
fn bulkhead_at_twice_its_capacity(spec: BulkheadSpec) -> Vec<BucketRow> {
    let mut cfg = bulkhead_world(spec);
    cfg.client.total_deadline = Some(ms(1_500));
    go(&cfg).0
}

#[test]
fn a_bulkhead_line_longer_than_the_deadline_serves_only_calls_that_time_out() {
    let rows = bulkhead_at_twice_its_capacity(BulkheadSpec {
        max_queue: Some(10_000),
        ..BulkheadSpec::places(50)
    });
    for (i, r) in rows.iter().enumerate().skip(1) {
        let done = r.finished() as f64;
        let ok = r.outcome(Reason::Success) as f64 / done;
        let late = r.outcome(Reason::DeadlineExceeded) as f64 / done;
        assert!(ok < 0.01, "bucket {i}: {ok} succeeded");
        assert!(late > 0.99, "bucket {i}: {late} timed out");
        assert_eq!(r.count(Count::BulkheadRejected), 0, "the line has room");
        let line = r.level(Level::BulkheadWaiting);
        assert!(
            (95..=105).contains(&line.max),
            "bucket {i}: about a second of calls in line, {}",
            line.max
        );
    }
}

#[test]
fn a_bulkhead_wait_bound_under_the_deadline_serves_what_it_can_take() {
    let rows = bulkhead_at_twice_its_capacity(BulkheadSpec {
        max_wait: Some(ms(400)),
        ..BulkheadSpec::places(50)
    });
    for (i, r) in rows.iter().enumerate().skip(1) {
        let done = r.finished() as f64;
        let ok = r.outcome(Reason::Success) as f64 / done;
        let refused = r.outcome(Reason::BulkheadFull) as f64 / done;
        assert!((ok - 0.5).abs() < 0.02, "bucket {i}: {ok} succeeded");
        assert!(
            (refused - 0.5).abs() < 0.02,
            "bucket {i}: {refused} refused"
        );
        assert_eq!(r.outcome(Reason::DeadlineExceeded), 0);
        assert!(r.level(Level::BulkheadWaiting).max <= 41, "0.4 s of calls");
    }
}

/// A deploy replaces the bulkhead while 40 calls wait in its line: they
/// come to the fresh one first, in order, and take its places (the calls
/// let in by the former one run on without one); for a second the client
/// lets in twice its places, so that bucket refuses about 50 fewer calls.
/// A deploy with no bulkhead lets them go on: the bucket refuses only
/// the 2 whose wait ran out before it (in this evenly spaced world a
/// second's refusals bunch in its second half); a deploy that dropped
/// the line would refuse 40 more. Every call is accounted for (the
/// audit, and the per-event checks of the lines and the level, run here).
#[test]
fn a_deploy_hands_the_calls_in_line_to_the_new_bulkhead() {
    use sim_models::timeline::{Deploy, TimelineEntry};
    let start = BulkheadSpec {
        max_wait: Some(ms(400)),
        ..BulkheadSpec::places(50)
    };
    let refused = |deployed: Option<BulkheadSpec>| -> Vec<u64> {
        let mut cfg = bulkhead_world(start);
        let mut client = cfg.client.clone();
        client.bulkhead = deployed;
        cfg.timeline.push(TimelineEntry {
            deploy: Some(Deploy {
                call: None,
                client: Some(client),
                dependency: None,
                upstream: None,
            }),
            ..TimelineEntry::at_offset(ms(60_505))
        });
        let (rows, t) = go(&cfg);
        assert_eq!(t.outcome(Reason::DeadlineExceeded), 0);
        rows.iter()
            .map(|r| r.outcome(Reason::BulkheadFull))
            .collect()
    };
    let fresh = refused(Some(start));
    assert!(
        (480..=520).contains(&fresh[5]) && (480..=520).contains(&fresh[7]),
        "{fresh:?}"
    );
    assert!((430..=470).contains(&fresh[6]), "{fresh:?}");
    let none = refused(None);
    assert!(none[6] <= 10, "{none:?}");
    assert!(none[7..].iter().all(|n| *n == 0), "{none:?}");
}

/// Calls of exactly 1 s, evenly spaced at 100/s, into `spec`: twice
/// what 50 places take.
fn bulkhead_world(spec: BulkheadSpec) -> WorldConfig {
    let mut cfg = WorldConfig::default();
    cfg.clock.duration = secs(120);
    cfg.clock.bucket = secs(10);
    cfg.load.rate = 100.0;
    cfg.load.arrivals = ArrivalProcess::Constant;
    cfg.service.pods = 1;
    cfg.service.pool.max_connections = 10_000;
    cfg.upstream.capacity = 10_000;
    cfg.upstream.latency = DistSpec::Constant(secs(1));
    cfg.client.attempt_timeout = None;
    cfg.client.bulkhead = Some(spec);
    cfg
}
