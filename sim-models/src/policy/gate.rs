//! The client's gates: the policies every attempt passes before it may use
//! a connection (adaptive throttles, circuit breakers, the client's own
//! rate limiter), behind one small trait.
//!
//! A gate sees three moments of a client's life: an attempt asks to go
//! ([`Gate::admit`]), an attempt it let through ends
//! ([`Gate::on_attempt_end`]), and it may report a state the world shows
//! as a level ([`Gate::breaker_state`]). The client asks its gates in
//! order; the first refusal ends the question, and the longest wait asked
//! for is the attempt's. The retry decision's own policy, the retry
//! budget, is [`RetryBudget`](super::budget::RetryBudget).
//!
//! A new gate is one file with a type implementing [`Gate`], plus its line
//! in [`build_gates`].

use sim_core::time::{SimDuration, SimTime};

use super::breaker::{BreakerState, CircuitBreaker};
use super::throttle::{AwsAdaptive, SreThrottle, ThrottleSpec};
use crate::config::ClientConfig;
use crate::outcome::{AttemptOutcome, Reason};
use crate::recorder::Count;

/// A gate's answer to an attempt that asks to go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Admit {
    /// Go now.
    Go,
    /// Go after waiting this long (a client-side rate limiter).
    After(SimDuration),
    /// Do not go. The call fails with `reason` if no other attempt of it
    /// is in progress; `counter` counts the refusal.
    Refuse {
        /// How the call ends, if this was its only hope.
        reason: Reason,
        /// What the refusal is counted as.
        counter: Count,
    },
}

/// How an attempt a gate let through ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttemptEnd {
    /// Its outcome.
    pub outcome: AttemptOutcome,
    /// How long it took, from start to end.
    pub duration: SimDuration,
}

impl AttemptEnd {
    /// The far end answered (anything but a timeout, a failed connection
    /// or a cancellation).
    pub fn answered(&self) -> bool {
        matches!(
            self.outcome,
            AttemptOutcome::Success
                | AttemptOutcome::ServerError(..)
                | AttemptOutcome::ClientError(_)
                | AttemptOutcome::RateLimited(_)
        )
    }

    /// The answer said the far end is overloaded (429, 503).
    pub fn overloaded(&self) -> bool {
        matches!(
            self.outcome,
            AttemptOutcome::RateLimited(_) | AttemptOutcome::ServerError(503, _)
        )
    }
}

/// A policy that stands between an attempt and the connection pool.
pub trait Gate {
    /// May an attempt go now? `draw` is a uniform draw in [0, 1) from the
    /// client's throttle stream, made for every attempt that reaches this
    /// gate (probabilistic gates use it; the others ignore it).
    fn admit(&mut self, now: SimTime, draw: f64) -> Admit;

    /// An attempt this gate let through ended.
    fn on_attempt_end(&mut self, now: SimTime, end: &AttemptEnd);

    /// Whether `admit` uses its draw (so the stream is only drawn from
    /// when a gate needs it, and adding a gate never shifts another's).
    fn draws(&self) -> bool {
        false
    }

    /// A breaker's state, shown as the breaker levels and events.
    fn breaker_state(&self) -> Option<BreakerState> {
        None
    }

    /// For a breaker that just opened and moves on by its own timer, how
    /// long until [`Gate::wait_over`] should be called.
    fn open_wait(&self) -> Option<SimDuration> {
        None
    }

    /// The timer [`Gate::open_wait`] asked for is due.
    fn wait_over(&mut self, _now: SimTime) {}
}

/// The gates of one client, in the order they are asked: throttle,
/// breaker, rate limiter (a refused attempt never waits for a token);
/// `now` starts the clocks of those that keep one from their creation.
pub fn build_gates(c: &ClientConfig, now: SimTime) -> Vec<Box<dyn Gate>> {
    let mut gates: Vec<Box<dyn Gate>> = Vec::new();
    if let Some(ThrottleSpec::Sre { k, window }) = c.throttle {
        gates.push(Box::new(SreThrottle::new(k, window)));
    }
    if let Some(b) = &c.breaker {
        gates.push(Box::new(BreakerGate {
            breaker: b.build(now),
            fallback: c.fallback,
        }));
    }
    if matches!(c.throttle, Some(ThrottleSpec::AwsAdaptive)) {
        gates.push(Box::new(AwsAdaptive::new(now)));
    }
    gates
}

/// Google SRE adaptive throttling: refuses with probability
/// `max(0, (requests − K·accepts) / (requests + 1))` over its window; an
/// answer that is not an overload signal counts as an accept.
impl Gate for SreThrottle {
    fn admit(&mut self, now: SimTime, draw: f64) -> Admit {
        if SreThrottle::admit(self, now, draw) {
            Admit::Go
        } else {
            Admit::Refuse {
                reason: Reason::Throttled,
                counter: Count::ThrottleRejected,
            }
        }
    }

    fn on_attempt_end(&mut self, now: SimTime, end: &AttemptEnd) {
        if end.answered() && !end.overloaded() {
            self.accepted(now);
        }
    }

    fn draws(&self) -> bool {
        true
    }
}

/// A circuit breaker as a gate: refuses while open (or out of half-open
/// permits); the call then falls back or fails `breaker_open`.
pub struct BreakerGate {
    breaker: Box<dyn CircuitBreaker>,
    fallback: bool,
}

impl Gate for BreakerGate {
    fn admit(&mut self, now: SimTime, _draw: f64) -> Admit {
        if self.breaker.try_acquire(now) {
            return Admit::Go;
        }
        Admit::Refuse {
            reason: if self.fallback {
                Reason::Fallback
            } else {
                Reason::BreakerOpen
            },
            counter: Count::BreakerRejected,
        }
    }

    fn on_attempt_end(&mut self, now: SimTime, end: &AttemptEnd) {
        let failure = end.outcome != AttemptOutcome::Success;
        self.breaker.on_result(now, failure, end.duration);
    }

    fn breaker_state(&self) -> Option<BreakerState> {
        Some(self.breaker.state())
    }

    fn open_wait(&self) -> Option<SimDuration> {
        self.breaker.open_wait()
    }

    fn wait_over(&mut self, now: SimTime) {
        self.breaker.wait_over(now);
    }
}

/// The AWS SDK's adaptive retry mode: a CUBIC-paced token bucket that
/// makes attempts wait for a token once the service has throttled.
impl Gate for AwsAdaptive {
    fn admit(&mut self, now: SimTime, _draw: f64) -> Admit {
        match self.acquire(now) {
            wait if wait.is_zero() => Admit::Go,
            wait => Admit::After(wait),
        }
    }

    /// Every attempt's end but a cancellation: botocore hears each
    /// attempt on `needs-retry`, a timeout or a failed connection (its
    /// exceptions) as much as an answer, and takes all but a throttle
    /// for a success.
    fn on_attempt_end(&mut self, now: SimTime, end: &AttemptEnd) {
        if end.outcome != AttemptOutcome::Cancelled {
            self.on_response(now, matches!(end.outcome, AttemptOutcome::RateLimited(_)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::breaker::{BreakerSpec, R4jConfig};

    fn t(ms: u64) -> SimTime {
        SimTime::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn an_open_breaker_refuses_with_its_reason_and_counter() {
        let spec = BreakerSpec::Resilience4j(R4jConfig {
            minimum_number_of_calls: 2,
            sliding_window_size: 2,
            ..R4jConfig::default()
        });
        let mut g = BreakerGate {
            breaker: spec.build(SimTime::ZERO),
            fallback: false,
        };
        let failed = AttemptEnd {
            outcome: AttemptOutcome::Timeout,
            duration: SimDuration::from_millis(100),
        };
        for i in 0..2 {
            assert_eq!(g.admit(t(i), 0.0), Admit::Go);
            g.on_attempt_end(t(i), &failed);
        }
        assert_eq!(g.breaker_state(), Some(BreakerState::Open));
        assert_eq!(
            g.admit(t(3), 0.0),
            Admit::Refuse {
                reason: Reason::BreakerOpen,
                counter: Count::BreakerRejected
            }
        );
    }

    #[test]
    fn the_aws_limiter_hears_every_attempt_but_a_cancelled_one() {
        // After a throttle, 2 s of attempts at 100 a second that time out
        // or fail to connect: botocore hears them on `needs-retry` as
        // successes, so the CUBIC curve climbs back from the cut (67 a
        // second) towards the 96 measured before it (92 by then); cancelled
        // ones leave the limiter where the throttle put it.
        let end = |outcome| AttemptEnd {
            outcome,
            duration: SimDuration::from_millis(5),
        };
        let mut rates = vec![];
        for outcome in [
            AttemptOutcome::Timeout,
            AttemptOutcome::ConnectFailure,
            AttemptOutcome::Cancelled,
        ] {
            let mut g = AwsAdaptive::new(t(0));
            for i in 0..100 {
                g.on_attempt_end(t(i * 10), &end(AttemptOutcome::Success));
            }
            g.on_attempt_end(t(1_000), &end(AttemptOutcome::RateLimited(0)));
            let cut = g.rate();
            for i in 1..=200 {
                g.on_attempt_end(t(1_000 + i * 10), &end(outcome));
            }
            rates.push((cut, g.rate()));
        }
        assert!(rates[0].1 > 1.3 * rates[0].0, "{rates:?}");
        assert!(rates[1].1 > 1.3 * rates[1].0, "{rates:?}");
        assert_eq!(rates[2].1, rates[2].0, "{rates:?}");
    }

    #[test]
    fn the_sre_throttle_counts_overload_answers_as_rejections() {
        let mut g = SreThrottle::new(2.0, SimDuration::from_secs(60));
        let overload = AttemptEnd {
            outcome: AttemptOutcome::RateLimited(0),
            duration: SimDuration::from_millis(5),
        };
        // Every answer an overload: accepts stay 0, so the refusal
        // probability climbs to (n − 0) / (n + 1).
        let mut refused = 0;
        for i in 0..1000 {
            match Gate::admit(&mut g, t(i), 0.5) {
                Admit::Go => g.on_attempt_end(t(i), &overload),
                Admit::Refuse { reason, .. } => {
                    assert_eq!(reason, Reason::Throttled);
                    refused += 1;
                }
                Admit::After(_) => unreachable!(),
            }
        }
        assert!(refused > 900, "{refused}");
    }
}
