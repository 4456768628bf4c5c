//! The crate's integration tests, one binary (one link) for all of them.

mod autoscaling;
mod common;
mod drawn;
mod fidelity;
mod graphs;
mod outlier;
mod parts;
mod policies;
mod storm_1402;
mod world_basics;
