//! The individual facts the drainability rules test, one function per upstream rule.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::controllers::ControllerKind;
use crate::pod::PodInfo;
use crate::well_known::{SAFE_TO_EVICT, SAFE_TO_EVICT_LOCAL_VOLUMES};

use super::{BlockingReason, DrainContext};

/// The namespace whose pods block scale-down unless a PDB covers them.
pub const KUBE_SYSTEM_NAMESPACE: &str = "kube-system";

/// Kubernetes' default `terminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATION_GRACE_PERIOD: Duration = Duration::from_secs(30);

/// How long past its grace period a terminating pod is still taken into account; after that it
/// is treated as gone (upstream's PodLongTerminatingExtraThreshold).
pub const LONG_TERMINATING_EXTRA_THRESHOLD: Duration = Duration::from_secs(30);

/// The three values of the `safe-to-evict` annotation that mean something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SafeToEvict {
    True,
    False,
    OnCompletion,
}

pub(super) fn safe_to_evict(pod: &PodInfo) -> Option<SafeToEvict> {
    match pod.annotation(SAFE_TO_EVICT)? {
        "true" => Some(SafeToEvict::True),
        "false" => Some(SafeToEvict::False),
        "on-completion" => Some(SafeToEvict::OnCompletion),
        _ => None,
    }
}

/// The pod was deleted and has outlived its grace period plus 30s: it is as good as gone.
/// Strictly after, as upstream compares. Utilization ignores such pods too.
pub fn is_long_terminating(pod: &PodInfo, now: Timestamp) -> bool {
    let Some(deleted) = pod.deletion_timestamp() else { return false };
    let grace = pod
        .spec()
        .termination_grace_period_seconds
        .map_or(SignedDuration::try_from(DEFAULT_TERMINATION_GRACE_PERIOD).unwrap_or(SignedDuration::ZERO), |s| {
            SignedDuration::from_secs(s)
        });
    let extra = SignedDuration::try_from(LONG_TERMINATING_EXTRA_THRESHOLD).unwrap_or(SignedDuration::ZERO);
    match grace.checked_add(extra).and_then(|d| deleted.checked_add(d).ok()) {
        Some(deadline) => deadline < now,
        // A grace period beyond the representable time range never runs out.
        None => false,
    }
}

/// A pod that will never run again: Failed (whatever its restart policy), or Succeeded with
/// restartPolicy Never or OnFailure. A Succeeded pod with policy Always (or unset) is not
/// terminal, as upstream reads it.
pub fn is_terminal(pod: &PodInfo) -> bool {
    let restart_policy = pod.spec().restart_policy.as_deref().unwrap_or("");
    match pod.phase() {
        "Failed" => true,
        "Succeeded" => matches!(restart_policy, "Never" | "OnFailure"),
        _ => false,
    }
}

/// The API group of an ownerReference's `apiVersion`, or `None` when it cannot be parsed (more
/// than one `/`), in which case upstream does not check the owner at all.
fn api_group(api_version: &str) -> Option<&str> {
    if api_version.is_empty() || api_version == "/" {
        return Some("");
    }
    match api_version.split_once('/') {
        None => Some(""),
        Some((group, version)) if !version.contains('/') => Some(group),
        Some(_) => None,
    }
}

/// Rule 3: the pod's controller must still exist, and RCs / ReplicaSets must ask for at least
/// `min_replica_count` replicas. Only the kinds upstream has listers for are checked, in
/// upstream's order: a pod marked as a DaemonSet pod is checked as one (and only when its owner
/// is an `apps` DaemonSet) before Job, ReplicaSet and StatefulSet owners are looked at.
pub(super) fn controller_problem(pod: &PodInfo, ctx: &DrainContext) -> Option<BlockingReason> {
    if !ctx.controllers.is_checked() {
        return None;
    }
    let owner = pod.controller()?;
    let group = api_group(&owner.api_version)?;
    let namespace = pod.namespace();
    let min = ctx.options.min_replica_count;
    let exists_with_replicas = |kind: ControllerKind| match ctx.controllers.get(kind, namespace, &owner.name) {
        None => Some(BlockingReason::ControllerNotFound),
        Some(c) if c.replicas.is_some_and(|r| r < min) => Some(BlockingReason::MinReplicasReached),
        Some(_) => None,
    };
    let exists = |kind: ControllerKind| {
        ctx.controllers.get(kind, namespace, &owner.name).is_none().then_some(BlockingReason::ControllerNotFound)
    };
    match owner.kind.as_str() {
        "ReplicationController" => exists_with_replicas(ControllerKind::ReplicationController),
        kind if pod.daemonset => {
            // Other DaemonSet-like owners (another group, or an annotated pod owned by
            // something else) cannot be looked up, so they pass.
            if group == "apps" && kind == "DaemonSet" { exists(ControllerKind::DaemonSet) } else { None }
        }
        "Job" => exists(ControllerKind::Job),
        "ReplicaSet" => exists_with_replicas(ControllerKind::ReplicaSet),
        "StatefulSet" if group == "apps" => exists(ControllerKind::StatefulSet),
        _ => None,
    }
}

/// The owner kinds that count as replicated when custom controllers are not trusted.
const REPLICATED_KINDS: &[&str] = &["ReplicationController", "Job", "ReplicaSet", "StatefulSet"];

/// Rule 8: the pod has a controller that will recreate it elsewhere.
pub(super) fn is_replicated(pod: &PodInfo, skip_nodes_with_custom_controller_pods: bool) -> bool {
    match pod.controller() {
        None => false,
        Some(owner) => !skip_nodes_with_custom_controller_pods || REPLICATED_KINDS.contains(&owner.kind.as_str()),
    }
}

/// Rule 9's exception: a kube-system pod created more than the timeout ago may be disrupted.
/// Pods without a creation timestamp never qualify.
pub(super) fn outlived_system_pod_timeout(pod: &PodInfo, timeout: Duration, now: Timestamp) -> bool {
    let Some(created) = pod.created() else { return false };
    match SignedDuration::try_from(timeout).ok().and_then(|t| created.checked_add(t).ok()) {
        Some(deadline) => now > deadline,
        None => false,
    }
}

/// Rule 11: a hostPath volume, or an emptyDir not backed by memory, that the pod does not list
/// in `safe-to-evict-local-volumes` (comma-separated names, taken verbatim). Names in the
/// annotation that are not local volumes are ignored, as upstream does.
pub fn has_blocking_local_storage(pod: &PodInfo) -> bool {
    let allowed: Vec<&str> = match pod.annotation(SAFE_TO_EVICT_LOCAL_VOLUMES) {
        Some(v) if !v.is_empty() => v.split(',').collect(),
        _ => Vec::new(),
    };
    let volumes = pod.spec().volumes.as_deref().unwrap_or(&[]);
    volumes.iter().any(|v| {
        let local =
            v.host_path.is_some() || v.empty_dir.as_ref().is_some_and(|e| e.medium.as_deref() != Some("Memory"));
        local && !allowed.contains(&v.name.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_group_parses_like_kubernetes() {
        assert_eq!(api_group("apps/v1"), Some("apps"));
        assert_eq!(api_group("v1"), Some(""));
        assert_eq!(api_group(""), Some(""));
        assert_eq!(api_group("a/b/c"), None);
    }
}
