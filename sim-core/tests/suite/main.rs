//! The crate's integration tests, one binary (one link) for all of them.

mod determinism;
mod distributions;
mod mmc_model;
mod queueing;
