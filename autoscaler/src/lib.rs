//! The control plane of the cluster autoscaler.
//!
//! - `config`: flags, with upstream's names and defaults.
//! - `core`: the decision path (observe → snapshot → decide) shared by `plan` and the loop.
//! - `hpa`: the embedded pod autoscalers.
//! - `plan`: the `plan` subcommand.

pub mod hpa;
