//! The resilience-policy catalogue: what a client does around each call.
//!
//! Each policy is a small module; budgets, breakers and throttles sit
//! behind small traits with one struct per library:
//!
//! | module | what |
//! |---|---|
//! | `backoff` | fixed, linear, exponential schedules; none, full, equal, decorrelated, proportional, additive and Polly-v2 jitter |
//! | `budget` | `RetryBudget`: gRPC A6 throttling, Finagle, AWS retry quota, SRE ratio, token bucket |
//! | `breaker` | `CircuitBreaker`: Resilience4j, Polly v8 |
//! | `bulkhead` | a bound on the calls in progress at once (.NET's standard handler, Hystrix) |
//! | `throttle` | client-side adaptive throttling: Google SRE, AWS adaptive (CUBIC) |
//! | `presets` | named policies with the libraries' real defaults |
//! | `analysis` | static worst-case latency and amplification |
//!
//! The client in `client.rs` composes them; `config::ClientConfig` is how
//! a user picks them.

pub mod adaptive_backoff;
pub mod admission;
pub mod analysis;
pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod gate;
pub mod presets;
pub mod throttle;
pub mod token_bucket;
