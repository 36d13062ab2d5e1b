//! What the pod autoscalers read: metric values (through [`MetricsSource`]) and the scale
//! subresource of their target ([`ScaleTarget`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, MetricIdentifier};
use k8s_openapi::jiff::Timestamp;
use simulator::labels::Selector;
use thiserror::Error;

/// A metrics API call that failed (unreachable adapter, unknown metric, …). The message is
/// embedded in the controllers' event and condition texts, as upstream embeds the API error.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct MetricsError {
    pub message: String,
}

impl MetricsError {
    pub fn new(message: impl Into<String>) -> Self {
        MetricsError { message: message.into() }
    }
}

/// One container's usage of the requested resource in a `metrics.k8s.io` `PodMetrics` item.
/// `value` is `None` when the container is listed without that resource: upstream then treats
/// the whole pod as missing a metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerUsage {
    pub name: String,
    /// Milli-units: millicores for cpu, milli-bytes for memory (as `Quantity.MilliValue()`).
    pub value: Option<i64>,
}

/// A `metrics.k8s.io` `PodMetrics` item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodResourceMetric {
    pub containers: Vec<ContainerUsage>,
    /// The end of the sampling window.
    pub timestamp: Timestamp,
    pub window: Duration,
}

impl PodResourceMetric {
    /// A pod with one container named `main` using `value` milli-units.
    pub fn single(value: i64, timestamp: Timestamp, window: Duration) -> Self {
        PodResourceMetric {
            containers: vec![ContainerUsage { name: "main".into(), value: Some(value) }],
            timestamp,
            window,
        }
    }
}

/// Pod name → resource usage, as returned by `metrics.k8s.io` for a selector.
pub type PodResourceMetrics = HashMap<String, PodResourceMetric, FastHash>;

/// One pod's value of a per-pod metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodMetric {
    /// Milli-units.
    pub value: i64,
    pub timestamp: Timestamp,
    /// The custom metrics API reports no window; upstream assumes one minute.
    pub window: Duration,
}

/// Pod name → metric value.
pub type PodMetricsInfo = HashMap<String, PodMetric>;

/// The per-pod values a calculation works on, keyed by names borrowed from the source's answer
/// and the pods (no copies on the hot path).
pub(crate) type Usage<'a> = HashMap<&'a str, PodMetric, FastHash>;

/// A fast non-cryptographic hash (rustc's Fx) for the per-reconcile maps keyed by pod names
/// (a metrics answer, the values a calculation reads): they hold the names of one workload,
/// so SipHash's flooding resistance buys nothing, while hashing is a large share of a
/// reconcile's cost.
pub(crate) type FastHash = rustc_hash::FxBuildHasher;

/// Metric values the controllers read (from the metrics APIs, files, or a load model — other code
/// implements it). Implementations return what the API returned; the controllers apply
/// upstream's client-side rules (empty answers, container selection, summing). Per-pod answers
/// are shared (`Arc`) so that a source caching them per sync period hands them out without
/// copying.
pub trait MetricsSource {
    /// `metrics.k8s.io`: per pod, per container usage of `resource` (`cpu`, `memory`) for the
    /// pods of `namespace` matching `selector`. Pods without metrics are absent.
    fn pod_resource_metrics(
        &self,
        namespace: &str,
        selector: &Selector,
        resource: &str,
    ) -> Result<Arc<PodResourceMetrics>, MetricsError>;

    /// `custom.metrics.k8s.io` pods metric: per pod value of `metric` for the pods matching
    /// `selector` (and `metric.selector` as the metric label selector).
    fn pods_metric(
        &self,
        namespace: &str,
        metric: &MetricIdentifier,
        selector: &Selector,
    ) -> Result<Arc<PodMetricsInfo>, MetricsError>;

    /// `custom.metrics.k8s.io` object metric (milli-units).
    fn object_metric(
        &self,
        namespace: &str,
        metric: &MetricIdentifier,
        object: &CrossVersionObjectReference,
    ) -> Result<i64, MetricsError>;

    /// `external.metrics.k8s.io`: every value (milli-units) matching `metric.selector`; the
    /// controllers sum them as upstream does.
    fn external_metric(&self, namespace: &str, metric: &MetricIdentifier) -> Result<Vec<i64>, MetricsError>;
}

/// The scale subresource (`/scale`) of an autoscaler's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleTarget {
    /// `spec.replicas`: what the HPA calls the current replicas.
    pub spec_replicas: i32,
    /// `status.replicas`: the pods that exist. Per-pod Object/External targets divide by it,
    /// and the WPA uses it as its current replicas.
    pub status_replicas: i32,
    /// `status.selector`, parsed; `None` when the target reports no selector.
    pub selector: Option<Selector>,
}

impl ScaleTarget {
    /// A settled target: `status.replicas == spec.replicas`.
    pub fn new(replicas: i32, selector: Selector) -> Self {
        ScaleTarget { spec_replicas: replicas, status_replicas: replicas, selector: Some(selector) }
    }
}
