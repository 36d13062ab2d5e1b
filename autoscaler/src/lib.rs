//! The control plane of the cluster autoscaler.
//!
//! - `config`: flags, with upstream's names and defaults, and the typed options.
//! - `core`: the decision path (observe → snapshot → decide) shared by `plan` and the loop.
//! - `hpa`: the embedded pod autoscalers.
//! - `kube_adapter`: the ports over a real API server (kube-rs).
//! - `plan`: the `plan` subcommand (snapshot loading and reports).

pub mod config;
pub mod core;
pub mod hpa;
pub mod kube_adapter;
pub mod plan;
pub mod ports;
pub mod providers;
