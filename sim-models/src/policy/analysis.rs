//! Static analysis of a policy: how long a call can take and how many
//! upstream attempts one user request can cause, in the worst case,
//! without running anything; for a graph, along each path from the entry.

use sim_core::time::SimDuration;

use crate::config::{ClientConfig, PoolConfig, RetryAfterMode, TimeoutStart, WorldConfig};
use crate::graph::Topology;
use crate::outcome::{AttemptOutcome, Pushback};
use crate::policy::budget::BudgetSpec;

/// Worst cases of a configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct WorstCase {
    /// Longest a call can take (`None`: unbounded).
    pub latency: Option<SimDuration>,
    /// Most attempts one call sends to the upstream (`None`: the policy
    /// sets no bound, as when waits the server asks for are not counted
    /// as retries).
    pub attempts_per_call: Option<u64>,
    /// Most upstream attempts per user request, all tiers multiplied
    /// (saturating; `None`: unbounded).
    pub amplification: Option<u64>,
    /// How the figures were reached, one line per term.
    pub derivation: Vec<String>,
}

/// The longest one attempt can take, if bounded: its timeout, plus the
/// pool wait and dial when the timeout only starts with a connection.
fn per_try(c: &ClientConfig, pool: &PoolConfig) -> Option<SimDuration> {
    let t = c.attempt_timeout?;
    match c.timeout_starts {
        TimeoutStart::AttemptStart => Some(t),
        TimeoutStart::ConnectionAcquired => {
            let wait = pool.acquire_timeout?;
            let dial = c.connect_timeout?;
            Some(t.saturating_add(wait).saturating_add(dial))
        }
    }
}

/// Retries whose backoff bound is summed one by one; beyond them each
/// delay is bounded by the last retry's (delays never shrink with the
/// retry number), so the sum is closed-form for any `max_retries`.
const SUMMED_RETRIES: u32 = 64;

/// The most time all `retries` backoff delays can add up to, or `None`
/// when Retry-After is honoured without a cap. Writes a line per retry for
/// the first few, then one line for the rest.
fn backoff_bound(c: &ClientConfig, retries: u32, lines: &mut Vec<String>) -> Option<SimDuration> {
    let r = &c.retry;
    let max_before = |n: u32| -> Option<SimDuration> {
        let throttled = r.throttled_backoff.as_ref().map_or(0.0, |b| b.max_secs(n));
        let max = SimDuration::from_secs_f64(r.backoff.max_secs(n).max(throttled));
        if r.retry_after.mode == RetryAfterMode::Ignore {
            return Some(max);
        }
        // A header over the cap ends the call; `at_least` may bound the
        // wait above the backoff.
        let capped = r.retry_after.cap.map(|cap| max.max(cap));
        let over = r
            .retry_after
            .max_over_backoff
            .map(|o| max.saturating_add(o));
        match (capped, over) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    };
    if max_before(1).is_none() {
        lines.push("Retry-After honoured without a cap: waits unbounded".into());
        return None;
    }
    let mut total = SimDuration::ZERO;
    for n in 1..=retries.min(SUMMED_RETRIES) {
        let max = max_before(n)?;
        if n <= 8 || retries <= 10 {
            lines.push(format!("backoff before retry {n}: at most {max}"));
        }
        total = total.saturating_add(max);
    }
    if retries > SUMMED_RETRIES {
        let rest = u64::from(retries - SUMMED_RETRIES);
        let last = max_before(retries)?;
        lines.push(format!(
            "backoff before retries {}..{retries}: at most {last} each",
            SUMMED_RETRIES + 1
        ));
        total = total.saturating_add(last.saturating_mul(rest));
    } else if retries > 10 {
        lines.push(format!(
            "backoff before retries 9..{retries}: at most {} each",
            max_before(retries)?
        ));
    }
    Some(total)
}

/// Worst-case latency and amplification of `cfg`'s client (and gateway).
///
/// Latency: per-try timeout × attempts + the largest possible backoff
/// before each retry, bounded by the total deadline; with hedging, the
/// last hedge's start plus one per-try timeout. Amplification: attempts
/// per call (1 + retries + fast retries, or hedging's maximum) times the
/// gateway's dispatches.
pub fn worst_case(cfg: &WorldConfig) -> WorstCase {
    let mut w = call_worst_case(&cfg.client, &cfg.service.pool, None);
    let dispatches = 1 + u64::from(cfg.gateway.retry.as_ref().map_or(0, |g| g.max_retries));
    if dispatches > 1 {
        w.derivation.push(format!(
            "gateway dispatches each request up to {dispatches} times"
        ));
    }
    w.amplification = w.attempts_per_call.map(|a| a.saturating_mul(dispatches));
    w
}

/// The worst case of one path of a graph: the edges from the entry down.
#[derive(Clone, Debug, PartialEq)]
pub struct PathWorstCase {
    /// The nodes, entry first: `orders -> payment -> mysql`.
    pub nodes: Vec<String>,
    /// Longest the entry's call down this path can take (`None`:
    /// unbounded).
    pub latency: Option<SimDuration>,
    /// Most attempts one user request puts on the path's last node: each
    /// edge's attempts per call multiplied, and the gateway's dispatches
    /// (`None`: an edge sets no bound).
    pub amplification: Option<u64>,
    /// Each edge's figures, top first.
    pub derivation: Vec<String>,
}

/// Most paths [`paths_worst_case`] analyses.
pub const MAX_PATHS: usize = 100;

/// The worst case of the paths of `topo` from its entry, at most
/// [`MAX_PATHS`] (and whether there are more): latency bottom up (an
/// attempt lasts at most its own bound, or what the service it calls can
/// take), amplification multiplied down.
pub fn paths_worst_case(cfg: &WorldConfig, topo: &Topology) -> (Vec<PathWorstCase>, bool) {
    let dispatches = 1 + u64::from(cfg.gateway.retry.as_ref().map_or(0, |g| g.max_retries));
    let (paths, more) = topo.paths(MAX_PATHS);
    let cases = paths
        .into_iter()
        .map(|path| {
            let mut below: Option<SimDuration> = None;
            let mut bounded_below = false;
            let mut lines = Vec::new();
            let mut amplification = Some(dispatches);
            let mut worst: Vec<WorstCase> = Vec::new();
            for &e in path.iter().rev() {
                let edge = &topo.edges[e as usize];
                let w = call_worst_case(
                    &edge.client,
                    &edge.pool,
                    bounded_below.then_some(below).flatten(),
                );
                below = w.latency;
                bounded_below = w.latency.is_some();
                worst.push(w);
            }
            worst.reverse();
            for (&e, w) in path.iter().zip(&worst) {
                amplification = amplification
                    .zip(w.attempts_per_call)
                    .map(|(a, b)| a.saturating_mul(b));
                lines.push(format!(
                    "{}: {} attempt(s) per call, latency {}",
                    topo.edges[e as usize].name,
                    show_count(w.attempts_per_call),
                    w.latency.map_or("unbounded".to_string(), |l| l.to_string())
                ));
                for line in w.derivation.iter().filter(|l| l.starts_with(UNCOUNTED)) {
                    lines.push(format!("  {line}"));
                }
            }
            if dispatches > 1 {
                lines.push(format!(
                    "gateway dispatches each request up to {dispatches} times"
                ));
            }
            let mut nodes = vec![topo.services[topo.entry as usize].name.clone()];
            for &e in &path {
                nodes.push(topo.name_of(topo.edges[e as usize].to).to_string());
            }
            PathWorstCase {
                nodes,
                latency: worst.first().and_then(|w| w.latency),
                amplification,
                derivation: lines,
            }
        })
        .collect();
    (cases, more)
}

/// A count, or "unbounded".
pub fn show_count(n: Option<u64>) -> String {
    n.map_or("unbounded".to_string(), |n| n.to_string())
}

/// How the line that says a policy's attempts are unbounded starts.
const UNCOUNTED: &str = "waits the server asks for";

/// Whether `c` retries after a wait the server asks for (a 429's
/// Retry-After, a 503's pushback) without counting it against
/// `max_retries`: then nothing in the policy bounds a call's attempts
/// (only its total deadline or the caller's bounds its time), and a limit
/// that holds has every waiting call ask again after each wait.
fn pushback_uncounted(c: &ClientConfig) -> bool {
    let r = &c.retry;
    let asked = [
        AttemptOutcome::RateLimited(0),
        AttemptOutcome::ServerError(503, Pushback::After(0)),
    ];
    r.retry_after.mode != RetryAfterMode::Ignore
        && !r.retry_after.counts_as_retry
        && asked
            .iter()
            .any(|&o| r.retry_on.iter().any(|x| x.matches(o)))
}

/// The share of its budget's balance a call may retry, where the budget
/// sets one (Finagle's requeues).
fn budget_share(c: &ClientConfig) -> Option<f64> {
    match &c.budget {
        Some(BudgetSpec::Finagle {
            per_request_share, ..
        }) => *per_request_share,
        _ => None,
    }
}

/// Worst-case latency and attempts of one call with `c` over `pool`;
/// `callee` bounds one attempt when the far end cannot take longer (a
/// service whose own calls are bounded).
fn call_worst_case(c: &ClientConfig, pool: &PoolConfig, callee: Option<SimDuration>) -> WorstCase {
    let per_try = |c: &ClientConfig, pool: &PoolConfig| match (per_try(c, pool), callee) {
        (Some(t), Some(b)) => Some(t.min(b)),
        (t, b) => t.or(b),
    };
    let r = &c.retry;
    let mut lines = Vec::new();
    let fast = r.fast_retry.as_ref().map_or(0, |f| f.max);
    let (attempts, latency) = match &c.hedging {
        Some(h) => {
            // A server's pushback, heeded, may set the next hedge later
            // than the hedging delay: up to the cap, or without end.
            let gap = match r.retry_after.mode {
                RetryAfterMode::Ignore => Some(h.delay),
                _ => r.retry_after.cap.map(|cap| cap.max(h.delay)),
            };
            let last_start = gap.map(|g| g.saturating_mul(u64::from(h.max_attempts - 1)));
            match last_start {
                Some(at) => lines.push(format!(
                    "hedging: last of {} attempts starts at {at}",
                    h.max_attempts
                )),
                None => lines.push(format!(
                    "hedging: {} attempts, each after the server's pushback if it asks (no cap): \
                     the last may start without bound",
                    h.max_attempts
                )),
            }
            (
                Some(u64::from(h.max_attempts)),
                last_start.and_then(|at| per_try(c, pool).map(|t| at.saturating_add(t))),
            )
        }
        None if pushback_uncounted(c) => {
            lines.push(format!(
                "{UNCOUNTED} (Retry-After, pushback) are not counted as retries: a call asks again after each, as long as the server asks, beyond {} retries",
                r.max_retries
            ));
            (None, None)
        }
        None if r.max_retries == u32::MAX && budget_share(c).is_some() => {
            // Finagle's requeues: no count, a share of the budget's
            // balance, which grows with the traffic.
            lines.push(format!(
                "no count bounds a call's retries, only the budget: at most {} % of its balance at the call's start, rounded up, and the balance grows with the traffic",
                budget_share(c).unwrap_or_default() * 100.0
            ));
            (None, None)
        }
        None => {
            let attempts = 1 + u64::from(r.max_retries) + u64::from(fast);
            let mut total = per_try(c, pool).map(|t| t.saturating_mul(attempts));
            if let Some(t) = per_try(c, pool) {
                lines.push(format!("{attempts} attempts × {t} per try"));
            } else {
                lines.push(
                    "no per-try bound (no attempt timeout, or an unbounded pool wait)".into(),
                );
            }
            if r.max_retries > 0 {
                match backoff_bound(c, r.max_retries, &mut lines) {
                    Some(b) => total = total.map(|t| t.saturating_add(b)),
                    None => total = None,
                }
            }
            (Some(attempts), total)
        }
    };
    // A call waiting for a bulkhead's place waits before its first
    // attempt, its total deadline already running.
    let latency = match c.bulkhead.filter(|b| b.line_bound() > 0) {
        None => latency,
        Some(b) => match b.max_wait {
            Some(w) => {
                lines.push(format!("waiting for a place in the bulkhead: at most {w}"));
                latency.map(|l| l.saturating_add(w))
            }
            None => {
                lines.push(
                    "waiting for a place in the bulkhead: as long as the places stay taken".into(),
                );
                None
            }
        },
    };
    let latency = match (latency, c.total_deadline) {
        (Some(l), Some(d)) if d < l => {
            lines.push(format!("bounded by the total deadline {d}"));
            Some(d)
        }
        (None, Some(d)) => {
            lines.push(format!("bounded by the total deadline {d}"));
            Some(d)
        }
        (l, _) => l,
    };
    let over = match c.scope {
        crate::config::Scope::Pod => "on each pod",
        crate::config::Scope::Global => "over the calling service",
    };
    if let Some(b) = &c.bulkhead {
        let next = match (b.line_bound(), b.max_wait) {
            (0, _) => "the next failing at once".to_string(),
            (u32::MAX, Some(w)) => format!("the next waiting for one at most {w}, then failing"),
            (n, Some(w)) => {
                format!(
                    "the next waiting for one in a line of {n}, at most {w}; past the line failing at once"
                )
            }
            (n, None) => {
                format!("the next waiting for one in a line of {n}; past it failing at once")
            }
        };
        let most = match &b.adaptive {
            None => format!("at most {} calls in progress", b.max_concurrent),
            Some(a) => format!(
                "an adaptive limit of calls in progress (AIMD: from {} within {}..={}, +1 a success with half of it in use, ×{} a call refused{} or slower than {})",
                a.initial_limit,
                a.min_limit,
                b.max_concurrent,
                a.backoff_ratio,
                if a.timeouts_drop { ", timed out" } else { "" },
                a.timeout
            ),
        };
        lines.push(format!("bulkhead: {most} {over}, {next}"));
    }
    // A concurrency budget bounds no one call but every call's retries
    // together: said here, as the bulkhead is.
    if let Some(BudgetSpec::Envoy {
        budget_percent,
        min_retry_concurrency: n,
    }) = &c.budget
    {
        lines.push(if *budget_percent == 0.0 {
            format!(
                "retry budget: at most {n} retries in progress {over} (Envoy's max_retries), each from its decision to its answer; the next not made"
            )
        } else {
            format!(
                "retry budget: at most max({n}, {budget_percent} % of the attempts in progress) retries in progress {over}, each from its decision to its answer; the next not made"
            )
        });
    }
    WorstCase {
        latency,
        attempts_per_call: attempts,
        amplification: attempts,
        derivation: lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GatewayRetry;
    use crate::policy::backoff::{Backoff, Jitter};

    #[test]
    fn envoys_concurrency_budget_is_told_as_its_circuit_breaker() {
        let mut cfg = WorldConfig::default();
        crate::policy::presets::get("envoy")
            .expect("envoy")
            .apply(&mut cfg);
        let w = worst_case(&cfg);
        assert!(
            w.derivation.iter().any(|l| l
                == "retry budget: at most 3 retries in progress on each pod (Envoy's max_retries), each from its decision to its answer; the next not made"),
            "{:?}",
            w.derivation
        );
        assert_eq!(w.attempts_per_call, Some(2), "it bounds no one call");
    }

    #[test]
    fn a_bulkhead_is_told_with_its_scope_and_bounds_nothing_per_call() {
        use crate::policy::bulkhead::BulkheadSpec;
        let mut cfg = WorldConfig::default();
        let plain = worst_case(&cfg);
        cfg.client.bulkhead = Some(BulkheadSpec::places(20));
        let w = worst_case(&cfg);
        assert_eq!(
            (w.latency, w.amplification),
            (plain.latency, plain.amplification)
        );
        assert!(
            w.derivation.iter().any(|l| l
                == "bulkhead: at most 20 calls in progress on each pod, the next failing at once")
        );
        cfg.client.scope = crate::config::Scope::Global;
        let w = worst_case(&cfg);
        assert!(
            w.derivation
                .iter()
                .any(|l| l.contains("over the calling service"))
        );
    }

    /// A bulkhead's line holds a call before its first attempt: a wait
    /// bound adds to the worst latency, a line without one leaves it to
    /// the total deadline.
    #[test]
    fn an_adaptive_bulkhead_is_told_with_its_rule() {
        use crate::policy::bulkhead::{AimdSpec, BulkheadSpec};
        let mut cfg = crate::config::WorldConfig::default();
        cfg.client.bulkhead = Some(BulkheadSpec {
            adaptive: Some(AimdSpec::default()),
            ..BulkheadSpec::places(200)
        });
        let w = worst_case(&cfg);
        assert!(w.derivation.iter().any(|l| l
            == "bulkhead: an adaptive limit of calls in progress (AIMD: from 20 within 20..=200, +1 a success with half of it in use, ×0.9 a call refused, timed out or slower than 5s) on each pod, the next failing at once"), "{:?}", w.derivation);
    }

    #[test]
    fn a_bulkhead_line_adds_its_wait_to_the_worst_latency() {
        use crate::policy::bulkhead::BulkheadSpec;
        let mut cfg = WorldConfig::default();
        cfg.client.attempt_timeout = Some(SimDuration::from_secs(1));
        let plain = worst_case(&cfg).latency.expect("bounded");
        cfg.client.bulkhead = Some(BulkheadSpec {
            max_wait: Some(SimDuration::from_millis(250)),
            ..BulkheadSpec::places(8)
        });
        let w = worst_case(&cfg);
        assert_eq!(w.latency, Some(plain + SimDuration::from_millis(250)));
        assert!(w.derivation.iter().any(|l| l
            == "bulkhead: at most 8 calls in progress on each pod, the next waiting for one at most 250ms, then failing"), "{:?}", w.derivation);
        cfg.client.bulkhead = Some(BulkheadSpec {
            max_queue: Some(100),
            ..BulkheadSpec::places(8)
        });
        assert_eq!(
            worst_case(&cfg).latency,
            None,
            "a line without a wait bound"
        );
        cfg.client.total_deadline = Some(SimDuration::from_secs(2));
        let w = worst_case(&cfg);
        assert_eq!(w.latency, Some(SimDuration::from_secs(2)));
        assert!(w.derivation.iter().any(|l| l
            == "bulkhead: at most 8 calls in progress on each pod, the next waiting for one in a line of 100; past it failing at once"), "{:?}", w.derivation);
        // A wait of zero is no line.
        cfg.client.bulkhead = Some(BulkheadSpec {
            max_queue: Some(100),
            max_wait: Some(SimDuration::ZERO),
            ..BulkheadSpec::places(8)
        });
        cfg.client.total_deadline = None;
        assert_eq!(worst_case(&cfg).latency, Some(plain));
    }

    #[test]
    fn seed_004_worst_case_is_27_seconds() {
        // 5 s timeout, 4 retries, fixed 500 ms: 5 × 5 s + 4 × 0.5 s.
        let mut cfg = WorldConfig::default();
        cfg.client.attempt_timeout = Some(SimDuration::from_secs(5));
        cfg.client.retry.max_retries = 4;
        cfg.client.retry.backoff = Backoff::fixed(SimDuration::from_millis(500));
        let w = worst_case(&cfg);
        assert_eq!(w.latency, Some(SimDuration::from_secs(27)));
        assert_eq!(w.amplification, Some(5));
    }

    /// Finagle's requeues have no count, only their share of the budget,
    /// whose balance grows with the traffic: unbounded, and said so.
    #[test]
    fn finagle_requeues_are_bounded_by_the_budget_alone() {
        let mut cfg = WorldConfig::default();
        crate::policy::presets::get("finagle")
            .unwrap()
            .apply(&mut cfg);
        let w = worst_case(&cfg);
        assert_eq!((w.attempts_per_call, w.amplification), (None, None));
        assert!(
            w.derivation
                .iter()
                .any(|l| l.contains("at most 20 % of its balance")),
            "{:?}",
            w.derivation
        );
    }

    /// Hedges a delay apart: the last of 3 starts at 2 × 1 s and runs one
    /// 5 s try. Heeding the server's pushback, a hedge may wait longer: up
    /// to the cap (each gap at most 4 s), or without bound.
    #[test]
    fn a_heeded_pushback_stretches_the_hedges_up_to_its_cap() {
        let mut cfg = WorldConfig::default();
        cfg.client.attempt_timeout = Some(SimDuration::from_secs(5));
        cfg.client.hedging = Some(crate::config::HedgingConfig {
            max_attempts: 3,
            delay: SimDuration::from_secs(1),
            non_fatal: vec![crate::config::RetryOn::ServerError],
        });
        let latency = |cfg: &WorldConfig| worst_case(cfg).latency;
        assert_eq!(latency(&cfg), Some(SimDuration::from_secs(7)));
        cfg.client.retry.retry_after.mode = RetryAfterMode::Honor;
        assert_eq!(latency(&cfg), None);
        cfg.client.retry.retry_after.cap = Some(SimDuration::from_secs(4));
        assert_eq!(latency(&cfg), Some(SimDuration::from_secs(13)));
        assert_eq!(worst_case(&cfg).attempts_per_call, Some(3));
    }

    /// The LLM-API write-up's client waits out a 429's Retry-After
    /// without counting it as a retry: nothing bounds its attempts, only
    /// its 60 s total deadline its time. Counted (as the write-up's code
    /// does), or with only timeouts retried, it is four attempts.
    #[test]
    fn waits_the_server_asks_for_that_do_not_count_leave_attempts_unbounded() {
        let mut cfg = WorldConfig::default();
        crate::policy::presets::get("llm-api-adaptive")
            .unwrap()
            .apply(&mut cfg);
        let w = worst_case(&cfg);
        assert_eq!((w.attempts_per_call, w.amplification), (None, None));
        assert_eq!(w.latency, Some(SimDuration::from_secs(60)));
        assert!(
            w.derivation[0].contains("not counted as retries"),
            "{:?}",
            w.derivation
        );
        let mut counted = cfg.clone();
        counted.client.retry.retry_after.counts_as_retry = true;
        assert_eq!(worst_case(&counted).attempts_per_call, Some(4));
        // Retrying neither 429 nor 5xx (whose 503 may carry pushback):
        // timeouts only.
        let mut timeouts = cfg.clone();
        timeouts.client.retry.retry_on = vec![crate::client::RetryOn::Timeout];
        assert_eq!(worst_case(&timeouts).attempts_per_call, Some(4));
        // A 503's pushback, honoured and not counted, is the same as a 429.
        let mut pushback = timeouts.clone();
        pushback
            .client
            .retry
            .retry_on
            .push(crate::client::RetryOn::Status(503));
        assert_eq!(worst_case(&pushback).attempts_per_call, None);
    }

    #[test]
    fn jitter_caps_deadlines_and_tiers() {
        let mut cfg = WorldConfig::default();
        cfg.client.attempt_timeout = Some(SimDuration::from_secs(2));
        cfg.client.retry.max_retries = 2;
        // ±25 % on 1 s, 2 s: at most 1.25 + 2.5.
        cfg.client.retry.backoff = Backoff::exponential(
            SimDuration::from_secs(1),
            2.0,
            None,
            Jitter::Proportional(0.25),
        );
        assert_eq!(
            worst_case(&cfg).latency,
            Some(SimDuration::from_millis(6_000 + 3_750))
        );
        cfg.client.total_deadline = Some(SimDuration::from_secs(5));
        assert_eq!(worst_case(&cfg).latency, Some(SimDuration::from_secs(5)));
        // Three gateway tries over three attempts each: 9 at the bottom.
        cfg.gateway.retry = Some(GatewayRetry {
            max_retries: 2,
            on: vec![],
        });
        assert_eq!(worst_case(&cfg).amplification, Some(9));
    }

    #[test]
    fn any_retry_count_is_analysed_in_closed_form_without_overflow() {
        let mut cfg = WorldConfig::default();
        cfg.client.attempt_timeout = Some(SimDuration::from_secs(1));
        cfg.client.retry.backoff = Backoff::exponential(
            SimDuration::from_millis(100),
            2.0,
            Some(SimDuration::from_secs(10)),
            Jitter::None,
        );
        // 100 retries: 0.1 + 0.2 + ... + 6.4, then 10 s each for the other 93.
        cfg.client.retry.max_retries = 100;
        let w = worst_case(&cfg);
        let backoff = 100 + 200 + 400 + 800 + 1_600 + 3_200 + 6_400 + 93 * 10_000;
        assert_eq!(
            w.latency,
            Some(SimDuration::from_millis(101 * 1_000 + backoff))
        );
        assert!(w.derivation.len() < 20, "{:?}", w.derivation);
        for retries in [100_000_000, u32::MAX] {
            cfg.client.retry.max_retries = retries;
            cfg.gateway.retry = Some(GatewayRetry {
                max_retries: u32::MAX,
                on: vec![],
            });
            let w = worst_case(&cfg);
            assert_eq!(w.attempts_per_call, Some(1 + u64::from(retries)));
            assert_eq!(
                w.amplification,
                Some((1 + u64::from(retries)).saturating_mul(1 + u64::from(u32::MAX)))
            );
            assert!(w.latency.is_some());
        }
    }
}
