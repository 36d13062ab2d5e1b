//! The ports between the control loop and the world (see DESIGN.md): a read side that yields
//! one consistent view of the cluster, an action side for everything the autoscaler changes in
//! Kubernetes, and a clock. Two adapters implement them: `kube` (a real API server) and `memory`
//! (an in-memory cluster on a virtual clock). Node groups are reached through the
//! `cloudprovider` traits, not through these ports.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use simulator::PodInfo;
use simulator::labels::Selector;

use crate::core::ClusterView;

/// Errors of the Kubernetes side, classified like upstream's `apiCallError` / `transientError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    #[error("{kind} {name} not found")]
    NotFound { kind: String, name: String },
    /// An optimistic-concurrency conflict (HTTP 409); the caller may retry on a fresh read.
    #[error("conflict updating {kind} {name}")]
    Conflict { kind: String, name: String },
    /// The API refused or failed the call.
    #[error("API call failed: {0}")]
    Api(String),
    /// The view is not usable yet (caches not synced, connection lost); try again next loop.
    #[error("transient: {0}")]
    Transient(String),
}

impl PortError {
    /// Upstream's `AutoscalerErrorType` string.
    pub fn error_type(&self) -> &'static str {
        match self {
            PortError::Transient(_) => "transientError",
            _ => "apiCallError",
        }
    }
}

/// Why an eviction did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvictionError {
    /// A PodDisruptionBudget forbids it now (HTTP 429): retry later, never blindly.
    #[error("eviction of {0} blocked by a PodDisruptionBudget")]
    BlockedByPdb(String),
    /// The pod is already gone: the eviction's goal is met.
    #[error("pod {0} not found")]
    NotFound(String),
    #[error("eviction of {pod} failed: {message}")]
    Failed { pod: String, message: String },
}

/// A reference to an object an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    pub fn node(name: &str) -> Self {
        ObjectRef { api_version: "v1".into(), kind: "Node".into(), namespace: None, name: name.into() }
    }

    pub fn pod(namespace: &str, name: &str) -> Self {
        ObjectRef { api_version: "v1".into(), kind: "Pod".into(), namespace: Some(namespace.into()), name: name.into() }
    }

    pub fn config_map(namespace: &str, name: &str) -> Self {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// An Event's reason: the cluster autoscaler's own, with upstream's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventReason {
    TriggeredScaleUp,
    NotTriggerScaleUp,
    ScaledUpGroup,
    FailedToScaleUpGroup,
    ScaleUpTimedOut,
    ScaleUpFailed,
    FailedToRevertScaleUp,
    MaxNodesTotalReached,
    ClusterUnhealthy,
    ClusterAutoscalerCleanup,
    DeleteUnregistered,
    DeleteUnregisteredFailed,
    ScaleDown,
    ScaleDownEmpty,
    ScaleDownFailed,
    /// A reason another component names and the autoscaler only passes on: the expanders'
    /// warnings and the pod autoscalers' events, as kube-controller-manager words them.
    Passed(&'static str),
}

impl EventReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TriggeredScaleUp => "TriggeredScaleUp",
            Self::NotTriggerScaleUp => "NotTriggerScaleUp",
            Self::ScaledUpGroup => "ScaledUpGroup",
            Self::FailedToScaleUpGroup => "FailedToScaleUpGroup",
            Self::ScaleUpTimedOut => "ScaleUpTimedOut",
            Self::ScaleUpFailed => "ScaleUpFailed",
            Self::FailedToRevertScaleUp => "FailedToRevertScaleUp",
            Self::MaxNodesTotalReached => "MaxNodesTotalReached",
            Self::ClusterUnhealthy => "ClusterUnhealthy",
            Self::ClusterAutoscalerCleanup => "ClusterAutoscalerCleanup",
            Self::DeleteUnregistered => "DeleteUnregistered",
            Self::DeleteUnregisteredFailed => "DeleteUnregisteredFailed",
            Self::ScaleDown => "ScaleDown",
            Self::ScaleDownEmpty => "ScaleDownEmpty",
            Self::ScaleDownFailed => "ScaleDownFailed",
            Self::Passed(reason) => reason,
        }
    }
}

impl fmt::Display for EventReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Kubernetes Event as the autoscaler records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub object: ObjectRef,
    pub event_type: EventType,
    pub reason: EventReason,
    pub message: String,
}

/// A workload reached through its `scale` subresource (Deployment, StatefulSet, ReplicaSet, or
/// any resource that has one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScaleTarget {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// What the `scale` subresource reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scale {
    /// `spec.replicas`: the desired count.
    pub spec_replicas: i32,
    /// `status.replicas`: the current count.
    pub status_replicas: i32,
    /// `status.selector`: the label selector of the workload's pods, as a string (`app=web,tier in (a,b)`).
    pub selector: String,
}

/// The read side: one consistent view per call.
#[async_trait]
pub trait ClusterReader: Send + Sync {
    async fn view(&self) -> Result<ClusterView, PortError>;

    /// The pods of `namespace` that `selector` selects, as a scan of the last `view`'s pods
    /// finds them (same objects, same order), when the reader keeps an index that finds them
    /// without reading every pod (the memory cluster); `None` when it does not, and then the
    /// caller scans the view. Only for a caller that changed nothing since its `view`.
    fn selected_pods(&self, _namespace: &str, _selector: &Selector) -> Option<Vec<Arc<PodInfo>>> {
        None
    }

    /// What the pod autoscalers' sync reads: at least the HPAs, the WPAs and the workloads a
    /// scale target names (Deployments, StatefulSets, ReplicaSets), and the pods unless
    /// `selected_pods` answers for every selector. By default the whole view; the memory
    /// cluster leaves out its pods, so a sync every 15 s does not copy the list of them.
    async fn pod_autoscaler_view(&self) -> Result<ClusterView, PortError> {
        self.view().await
    }
}

/// The action side: everything the autoscaler changes in Kubernetes.
#[async_trait]
pub trait ClusterActions: Send + Sync {
    /// Adds (or refreshes) a taint on a node; with `cordon`, also sets `spec.unschedulable`.
    /// Retries conflicts internally; idempotent.
    async fn taint_node(&self, node: &str, taint: Taint, cordon: bool) -> Result<(), PortError>;

    /// Removes every taint with this key from a node; with `uncordon`, also clears
    /// `spec.unschedulable`. A missing node is not an error (it is gone already).
    async fn untaint_node(&self, node: &str, key: &str, uncordon: bool) -> Result<(), PortError>;

    /// Evicts a pod through the `policy/v1` Eviction subresource with this grace period.
    async fn evict_pod(&self, namespace: &str, name: &str, grace_period_seconds: i64) -> Result<(), EvictionError>;

    /// Reads a workload's `scale` subresource.
    async fn get_scale(&self, target: &ScaleTarget) -> Result<Scale, PortError>;

    /// Sets a workload's desired replicas through its `scale` subresource.
    async fn set_scale(&self, target: &ScaleTarget, replicas: i32) -> Result<(), PortError>;

    /// Writes (creates or replaces) the status ConfigMap: `data.status` holds `status_yaml`, the
    /// annotation `cluster-autoscaler.kubernetes.io/last-updated` holds `last_updated`.
    async fn write_status(
        &self,
        namespace: &str,
        name: &str,
        status_yaml: &str,
        last_updated: &str,
    ) -> Result<(), PortError>;

    /// Records a Kubernetes Event.
    async fn record_event(&self, event: Event) -> Result<(), PortError>;

    /// Writes a HorizontalPodAutoscaler's status (the `status` subresource).
    async fn update_hpa_status(
        &self,
        namespace: &str,
        name: &str,
        status: HorizontalPodAutoscalerStatus,
    ) -> Result<(), PortError>;

    /// Writes a WatermarkPodAutoscaler's status (the `status` subresource of the CRD).
    async fn update_wpa_status(
        &self,
        namespace: &str,
        name: &str,
        status: crate::hpa::wpa::WatermarkPodAutoscalerStatus,
    ) -> Result<(), PortError>;
}

/// Time, real or virtual.
#[async_trait]
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
    /// Waits `duration` of this clock's time (a virtual clock advances instead of waiting).
    async fn sleep(&self, duration: Duration);
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

#[async_trait]
impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}
