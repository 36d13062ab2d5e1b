//! Node readiness as the autoscaler counts it (upstream's cluster state registry, §8).

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use simulator::well_known::TO_BE_DELETED_TAINT;

use crate::config::AutoscalingOptions;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Readiness {
    Ready,
    /// Not ready yet, but registered less than `max-node-startup-time` ago.
    NotStarted,
    Unready,
}

/// Taints the node lifecycle controller sets on nodes that cannot run pods.
const NOT_READY_TAINTS: &[&str] =
    &["node.kubernetes.io/not-ready", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/network-unavailable"];

/// Upstream's readiness of a node: condition `Ready=True`, no `DiskPressure=True` or
/// `NetworkUnavailable=True` condition, and none of the matching not-ready taints.
pub fn reports_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
    let ready = conditions.iter().find(|c| c.type_ == "Ready").is_some_and(|c| c.status == "True");
    let impaired = conditions
        .iter()
        .any(|c| matches!(c.type_.as_str(), "DiskPressure" | "NetworkUnavailable") && c.status == "True");
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
        .iter()
        .any(|t| NOT_READY_TAINTS.contains(&t.key.as_str()));
    ready && !impaired && !tainted
}

/// A startup taint (by prefix, or a key or prefix given with `--startup-taint` /
/// `--startup-taint-prefix`): the node is still being set up and counts as not ready.
pub fn has_startup_taint(node: &Node, options: &AutoscalingOptions) -> bool {
    node.spec.as_ref().and_then(|s| s.taints.as_ref()).into_iter().flatten().any(|t| options.is_startup_taint(&t.key))
}

/// A node that should have GPUs (it carries the GPU label) but reports none allocatable yet:
/// the device plugin has not started, so the node is not ready for GPU pods.
pub fn gpu_not_ready(node: &Node, gpu_label: &str, gpu_resource: &str) -> bool {
    let labelled = node.metadata.labels.as_ref().is_some_and(|l| !gpu_label.is_empty() && l.contains_key(gpu_label));
    if !labelled {
        return false;
    }
    let allocatable = node
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get(gpu_resource))
        .and_then(|q| simulator::quantity::parse_value(&q.0).ok())
        .unwrap_or(0);
    allocatable == 0
}

/// Whether a node counts as ready by what it reports of itself (`reports_ready`, no startup
/// taint, GPUs reported when labelled): all of readiness that the clock does not change.
pub fn ready_for_pods(node: &Node, options: &AutoscalingOptions, gpu_label: &str) -> bool {
    reports_ready(node)
        && !has_startup_taint(node, options)
        && !gpu_not_ready(node, gpu_label, simulator::resources::NVIDIA_GPU)
}

/// A node's readiness at `now`, from `ready_for_pods` and its creation time: a node not ready
/// yet is still starting while it is younger than `max_node_startup_time`.
pub fn readiness_at(
    ready: bool,
    created: Option<Timestamp>,
    now: Timestamp,
    max_node_startup_time: Duration,
) -> Readiness {
    if ready {
        return Readiness::Ready;
    }
    match created {
        Some(created) if now.duration_since(created).unsigned_abs() < max_node_startup_time && created <= now => {
            Readiness::NotStarted
        }
        _ => Readiness::Unready,
    }
}

/// A node's readiness at `now`, read from the node (the loop keeps what it reads of each node
/// version: `NodeFacts`).
pub fn readiness(
    node: &Node,
    now: Timestamp,
    max_node_startup_time: Duration,
    options: &AutoscalingOptions,
    gpu_label: &str,
) -> Readiness {
    let created = node.metadata.creation_timestamp.as_ref().map(|t| t.0);
    readiness_at(ready_for_pods(node, options, gpu_label), created, now, max_node_startup_time)
}

/// The time the `ToBeDeletedByClusterAutoscaler` taint was set, if the node carries it.
pub fn to_be_deleted_since(node: &Node) -> Option<Option<Timestamp>> {
    let taint = node.spec.as_ref()?.taints.as_ref()?.iter().find(|t| t.key == TO_BE_DELETED_TAINT)?;
    Some(taint.value.as_deref().and_then(|v| v.parse::<i64>().ok()).and_then(|s| Timestamp::from_second(s).ok()))
}

/// Upstream's `IsNodeBeingDeleted`: a ToBeDeleted taint set less than 5 minutes ago (or with an
/// unreadable time).
pub fn is_being_deleted(node: &Node, now: Timestamp) -> bool {
    match to_be_deleted_since(node) {
        None => false,
        Some(None) => true,
        Some(Some(since)) => now.duration_since(since).as_secs() < 300,
    }
}
