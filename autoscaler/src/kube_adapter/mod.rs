//! The kube-rs adapter: `ClusterReader` and `ClusterActions` over a real API server.
//!
//! (Named `kube_adapter`, not `kube`, so that `kube::` keeps meaning the kube-rs crate everywhere.)
//!
//! - [`KubeClients`] ([`KubeClients::connect`] from [`KubeClientOptions`], i.e. `--kubeconfig`,
//!   `--kubernetes`, `--kube-client-qps`, `--kube-client-burst`): a client with kube's default
//!   retry policy for reads and writes, and one without it for evictions (a PDB's 429 must come
//!   back at once, not after kube's retries), sharing a client-go-like token bucket; the
//!   watches, the metrics reads and leader election have a bucket each. Every request is
//!   counted, retried attempts included, in client-go's `rest_client_requests_total`
//!   ([`RestClientRequests`]), which upstream's `/metrics` exposes.
//!   TLS is rustls with aws-lc-rs only.
//! - [`KubeCluster`] (`ClusterReader`): reflectors for every kind in `ClusterView`, resuming
//!   after dropped connections and `410 Gone`; `view()` waits (bounded) for the first sync.
//!   Objects are parsed as [`lean::Lean`] (no managed fields, no last-applied annotation) and
//!   trimmed (`core::compact`) as each is parsed, before a list is complete.
//!   WatermarkPodAutoscalers are watched when discovery finds their CRD ([`wpa_crd_installed`]).
//! - [`KubeActions`] (`ClusterActions`): taints and cordons with conflict retries (750 ms /
//!   5 s like upstream), evictions through the `policy/v1` Eviction subresource, the `scale`
//!   subresource of any kind that has one, the status ConfigMap, and core/v1 Events with
//!   upstream's de-duplication.

mod actions;
mod client;
mod errors;
mod events;
pub(crate) mod lean;
mod metrics;
mod pod_watch;
mod rate_limit;
mod reader;
mod request_metrics;
mod wpa;

pub use actions::{KubeActions, KubeActionsOptions, STATUS_LAST_UPDATED_ANNOTATION};
pub use client::{KubeClientError, KubeClientOptions, KubeClients, load_config};
pub use events::{EVENT_QUEUE_LENGTH, EVENT_SOURCE_COMPONENT, EventRecorder};
pub use metrics::KubeMetrics;
pub use rate_limit::{RateLimitLayer, RateLimited, TokenBucket};
pub use reader::{KubeCluster, KubeClusterOptions};
pub use request_metrics::{CountRequests, CountRequestsLayer, NO_ANSWER_CODE, RestClientRequests};
pub use wpa::{WPA_GROUP, WPA_PLURAL, WPA_VERSION, wpa_crd_installed};
