//! The control plane of the cluster autoscaler.
//!
//! - `config`: flags, with upstream's names and defaults, and the typed options.
//! - `core`: the decision path (observe → snapshot → decide) shared by `plan` and the loop.
//! - `hpa`: the embedded pod autoscalers.
//! - `memory`: the in-memory cluster and virtual clock for `simulate` and tests.
//! - `plan`: the `plan` subcommand (snapshot loading and reports).

pub mod config;
pub mod core;
pub mod hpa;
pub mod memory;
pub mod plan;
pub mod ports;
pub mod providers;
