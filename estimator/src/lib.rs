//! How many nodes of one node group's template a set of pending pods needs.
//!
//! - `binpacking`: upstream's First-Fit-Decreasing estimator on a forked snapshot, with the
//!   optional fast path.
//! - `limiter`: the thresholds that stop an estimation (nodes per scale-up, group and cluster
//!   capacity, time per node group).

pub mod binpacking;
pub mod limiter;

pub use binpacking::{Estimate, estimate};
pub use limiter::{EstimationLimiter, Threshold};
