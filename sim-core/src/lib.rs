//! placeholder
pub mod queue;
pub mod rng;
pub mod sim;
pub mod time;
