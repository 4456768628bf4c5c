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
    pub attempts_per_call: u32,
    /// Most upstream attempts per user request, all tiers multiplied.
    pub amplification: u32,
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
                h.max_attempts,
                per_try(c, cfg).map(|t| last_start.saturating_add(t)),
            )
        }
        None => {
            let attempts = 1 + r.max_retries + fast;
            let mut total = per_try(c, cfg).map(|t| t.saturating_mul(u64::from(attempts)));
            if let Some(t) = per_try(c, cfg) {
                lines.push(format!("{attempts} attempts × {t} per try"));
            } else {
                lines.push(
                    "no per-try bound (no attempt timeout, or an unbounded pool wait)".into(),
                );
            }
            for n in 1..=r.max_retries {
                let mut max = SimDuration::from_secs_f64(r.backoff.max_secs(n));
                if r.retry_after.mode != RetryAfterMode::Ignore {
                    match r.retry_after.cap {
                        Some(cap) => max = max.max(cap),
                        None => {
                            lines
                                .push("Retry-After honoured without a cap: waits unbounded".into());
                            total = None;
                        }
                    }
                }
                lines.push(format!("backoff before retry {n}: at most {max}"));
                total = total.map(|t| t.saturating_add(max));
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
    let dispatches = 1 + cfg.gateway.retry.as_ref().map_or(0, |g| g.max_retries);
    if dispatches > 1 {
        lines.push(format!(
            "gateway dispatches each request up to {dispatches} times"
        ));
    }
    WorstCase {
        latency,
        attempts_per_call: attempts,
        amplification: attempts * dispatches,
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
}
