//! A bulkhead: a bound on the calls of one client in progress at once.
//!
//! A call that finds every place taken fails at once (`bulkhead_full`),
//! before any attempt; one let in holds its place until it ends, its
//! retries, backoffs and hedges included. That is the outermost layer of
//! .NET's standard resilience handler (`HttpStandardResilienceOptions.
//! RateLimiter`: a `ConcurrencyLimiter` of 1,000 permits and no queue)
//! and Hystrix's isolation (10 concurrent executions, rejected past it);
//! Resilience4j's `Bulkhead` (25, no wait) wraps a single attempt where
//! Spring orders it inside the retry, which a pool of as many connections
//! with no wait models. None of their defaults queue a call for a place,
//! and neither does this one.
//!
//! Without retries, a bulkhead of `c` places before a call of exponential
//! length is Erlang's loss system M/M/c/c: a share `B(c, λ/μ)` of calls is
//! turned away (`sim-models/tests/suite/policies.rs` checks it).

use serde::{Deserialize, Serialize};

/// How many calls of a client may be in progress at once (`bulkhead:
/// { max_concurrent: N }`), on each pod or, with `scope: global`, over
/// the whole calling service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkheadSpec {
    /// Calls in progress at once; the next fails `bulkhead_full`.
    pub max_concurrent: u32,
}

impl BulkheadSpec {
    /// The field and message of what is wrong, if anything.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.max_concurrent == 0 {
            return Err((
                "max_concurrent".into(),
                "must be at least 1 (a bulkhead of no places refuses every call)".into(),
            ));
        }
        Ok(())
    }
}

/// The places of one bulkhead.
#[derive(Clone, Debug)]
pub struct Bulkhead {
    max: u32,
    in_use: u32,
}

impl Bulkhead {
    /// An empty bulkhead as configured.
    pub fn new(spec: &BulkheadSpec) -> Self {
        Bulkhead {
            max: spec.max_concurrent,
            in_use: 0,
        }
    }

    /// Takes a place for a call starting; `false` when every place is
    /// taken (the call is refused).
    #[inline]
    pub fn try_enter(&mut self) -> bool {
        if self.in_use < self.max {
            self.in_use += 1;
            true
        } else {
            false
        }
    }

    /// A call that held a place ended.
    #[inline]
    pub fn leave(&mut self) {
        debug_assert!(self.in_use > 0, "a bulkhead left more often than entered");
        self.in_use = self.in_use.saturating_sub(1);
    }

    /// Places taken.
    pub fn in_use(&self) -> u32 {
        self.in_use
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulkhead_lets_in_up_to_its_places_and_frees_one_per_call_ended() {
        let mut b = Bulkhead::new(&BulkheadSpec { max_concurrent: 2 });
        assert!(b.try_enter());
        assert!(b.try_enter());
        assert!(!b.try_enter(), "the third call of two places is refused");
        assert_eq!(b.in_use(), 2, "a refused call takes no place");
        b.leave();
        assert!(b.try_enter());
        assert!(!b.try_enter());
    }

    #[test]
    fn a_bulkhead_of_no_places_is_refused_with_its_field() {
        let err = BulkheadSpec { max_concurrent: 0 }.validate().unwrap_err();
        assert_eq!(err.0, "max_concurrent");
        assert!(BulkheadSpec { max_concurrent: 1 }.validate().is_ok());
    }
}
