//! # sim-models: the retry-storm world
//!
//! Clients, retry policies, pods with connection pools, a load balancer and
//! an overload-sensitive upstream, built on `sim-core`.
//!
//! Not built yet: this crate is an empty placeholder so the workspace has
//! its final shape.
