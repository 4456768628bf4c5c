//! # stormsim: experiments, sweeps and Parquet output
//!
//! The layer users touch: YAML experiment files (with `extends`, presets
//! and sweeps) are loaded and checked with file, line and field-path
//! errors; cells run in parallel; results land in a hive-partitioned
//! Parquet dataset that notebooks and query engines read as one table.

pub mod boundary;
pub mod calibrate;
pub mod charts;
pub mod columns;
pub mod commands;
pub mod dataset;
pub mod error;
pub mod evaluate;
pub mod golden;
pub mod load;
pub mod locate;
pub mod output;
pub mod replicas;
pub mod report;
pub mod runner;
pub mod stats;
pub mod sweep;
pub mod verdict;
