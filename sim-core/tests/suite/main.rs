//! The crate's integration tests, one binary (one link) for all of them.

mod mmc_model;
mod determinism;
mod distributions;
mod queueing;
