//! Static analysis of a policy: how long a call can take and how many
//! upstream attempts one user request can cause, in the worst case,
//! without running anything.

use sim_core::time::SimDuration;

use crate::config::{ClientConfig, RetryAfterMode, TimeoutStart, WorldConfig};

/// Worst cases of a configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct WorstCase {
    /// Longest a call can take (`None`: unbounded).
    pub latency: Option<SimDuration>,
    /// Most attempts one call sends to the upstream.
    pub attempts_per_call: u64,
    /// Most upstream attempts per user request, all tiers multiplied
    /// (saturating).
    pub amplification: u64,
    /// How the figures were reached, one line per term.
    pub derivation: Vec<String>,
}

/// The longest one attempt can take, if bounded: its timeout, plus the
/// pool wait and dial when the timeout only starts with a connection.
fn per_try(c: &ClientConfig, cfg: &WorldConfig) -> Option<SimDuration> {
    let t = c.attempt_timeout?;
    match c.timeout_starts {
        TimeoutStart::AttemptStart => Some(t),
        TimeoutStart::ConnectionAcquired => {
            let wait = cfg.service.pool.acquire_timeout?;
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
        let max = SimDuration::from_secs_f64(r.backoff.max_secs(n));
        if r.retry_after.mode == RetryAfterMode::Ignore {
            return Some(max);
        }
        r.retry_after.cap.map(|cap| max.max(cap))
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
    let c = &cfg.client;
    let r = &c.retry;
    let mut lines = Vec::new();
    let fast = r.fast_retry.as_ref().map_or(0, |f| f.max);
    let (attempts, latency) = match &c.hedging {
        Some(h) => {
            let last_start = h.delay.saturating_mul(u64::from(h.max_attempts - 1));
            lines.push(format!(
                "hedging: last of {} attempts starts at {last_start}",
                h.max_attempts
            ));
            (
                u64::from(h.max_attempts),
                per_try(c, cfg).map(|t| last_start.saturating_add(t)),
            )
        }
        None => {
            let attempts = 1 + u64::from(r.max_retries) + u64::from(fast);
            let mut total = per_try(c, cfg).map(|t| t.saturating_mul(attempts));
            if let Some(t) = per_try(c, cfg) {
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
            (attempts, total)
        }
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
    let dispatches = 1 + u64::from(cfg.gateway.retry.as_ref().map_or(0, |g| g.max_retries));
    if dispatches > 1 {
        lines.push(format!(
            "gateway dispatches each request up to {dispatches} times"
        ));
    }
    WorstCase {
        latency,
        attempts_per_call: attempts,
        amplification: attempts.saturating_mul(dispatches),
        derivation: lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GatewayRetry;
    use crate::policy::backoff::{Backoff, Jitter};

    #[test]
    fn seed_004_worst_case_is_27_seconds() {
        // 5 s timeout, 4 retries, fixed 500 ms: 5 × 5 s + 4 × 0.5 s.
        let mut cfg = WorldConfig::default();
        cfg.client.attempt_timeout = Some(SimDuration::from_secs(5));
        cfg.client.retry.max_retries = 4;
        cfg.client.retry.backoff = Backoff::fixed(SimDuration::from_millis(500));
        let w = worst_case(&cfg);
        assert_eq!(w.latency, Some(SimDuration::from_secs(27)));
        assert_eq!(w.amplification, 5);
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
        assert_eq!(worst_case(&cfg).amplification, 9);
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
            assert_eq!(w.attempts_per_call, 1 + u64::from(retries));
            assert_eq!(
                w.amplification,
                (1 + u64::from(retries)).saturating_mul(1 + u64::from(u32::MAX))
            );
            assert!(w.latency.is_some());
        }
    }
}
