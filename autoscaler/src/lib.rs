//! The control plane of the cluster autoscaler.
//!
//! - `cli`: the command line (controller, `plan`, `simulate`), the entry point of the binary and
//!   of a platform team's own binary with its own provider.
//! - `compose`: the composition root: the cloud provider and the expander from the flags.
//! - `config`: flags, with upstream's names and defaults, and the typed options.
//! - `control`: the control loop (upstream's RunOnce) and its memory between iterations.
//! - `core`: the decision path (observe → snapshot → decide) shared by `plan` and the loop.
//! - `hpa`: the embedded pod autoscalers.
//! - `json_scan`: large JSON lists cut into items as they are read (dumps, the pod list).
//! - `kube_adapter`: the ports over a real API server (kube-rs).
//! - `leader`: Lease-based leader election (upstream's client-go election on a `Lease`).
//! - `memory`: the in-memory cluster and virtual clock for `simulate` and tests.
//! - `podscaling`: the pod autoscalers at work (reconciling HPAs / WPAs, HPA-aware scale-up).
//! - `plan`: the `plan` subcommand (snapshot loading and reports).
//! - `ports`: the traits the control loop talks to the world through.
//! - `serve`: the `/metrics` and `/health-check` endpoints (upstream's metrics and liveness rule).
//! - `simulate`: the `simulate` subcommand (scenarios, the driver on a virtual clock, reports).

pub mod cli;
pub mod compose;
pub mod config;
pub mod control;
pub mod core;
pub mod hpa;
pub mod json_scan;
pub mod kube_adapter;
pub mod leader;
pub mod memory;
pub mod plan;
pub mod podscaling;
pub mod ports;
pub mod run;
pub mod serve;
pub mod simulate;
