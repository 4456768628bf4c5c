//! The crate's integration tests, one binary (one link) for all of them.

mod bad_input;
mod common;
mod dataset;
mod golden;
mod graphs;
mod incidents;
mod maps;
mod operator;
mod python;
mod random_graphs;
mod replay_1402;
mod report;
mod search;
