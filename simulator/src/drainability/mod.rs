//! Which pods scale-down must move off a node, and which pods stop the node from being removed,
//! following upstream Cluster Autoscaler's drainability rules in upstream's order (the first
//! rule with an answer wins):
//!
//! 1. mirror pod: skipped;
//! 2. terminating for longer than its grace period + 30s: skipped;
//! 3. (`skip_nodes_with_custom_controller_pods`) the owning RC / DaemonSet / Job / ReplicaSet /
//!    StatefulSet must exist (`ControllerNotFound`) and RCs / ReplicaSets must ask for at least
//!    `min_replica_count` replicas (`MinReplicasReached`);
//! 4. DaemonSet pod: drained with the node, not rescheduled;
//! 5. `safe-to-evict: "true"`: moved, skipping every later check including PDBs;
//! 6. terminal pod (Failed; Succeeded with restartPolicy Never / OnFailure): see below;
//! 7. `safe-to-evict: "on-completion"`: the node waits for the pod to finish;
//! 8. no controller (with `skip_nodes_with_custom_controller_pods`: no RC / Job / ReplicaSet /
//!    StatefulSet owner): `NotReplicated`;
//! 9. (`skip_nodes_with_system_pods`) a `kube-system` pod no PDB selects:
//!    `UnmovableKubeSystemPod`, unless it was created more than
//!    `blocking_system_pod_disruption_timeout` ago, in which case it is moved at once (later
//!    checks do not apply to it);
//! 10. `safe-to-evict: "false"`: `NotSafeToEvictAnnotation`;
//! 11. (`skip_nodes_with_local_storage`) an unlisted hostPath / disk-backed emptyDir volume:
//!     `LocalStorageRequested`;
//! 12. a covering PDB with less than one disruption left: `NotEnoughPdb`;
//! 13. otherwise the pod is moved.
//!
//! Terminal pods: upstream marks them drainable and lists them among the pods to move, but its
//! pod lister never returns Succeeded / Failed pods, so they never take part in its simulation.
//! A terminal pod holds no resources and needs no new place, so here it is [`PodDrainOutcome::Skip`]:
//! the node counts as empty and no room is sought for the pod, which is what upstream ends up
//! doing.

mod rules;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::node::NodeInfo;
use crate::pod::PodInfo;

pub use crate::controllers::Controllers;
pub use crate::pdb::PdbTracker;

pub use rules::{
    DEFAULT_TERMINATION_GRACE_PERIOD, KUBE_SYSTEM_NAMESPACE, LONG_TERMINATING_EXTRA_THRESHOLD,
    has_blocking_local_storage, is_long_terminating, is_terminal,
};
use rules::{SafeToEvict, controller_problem, is_replicated, outlived_system_pod_timeout, safe_to_evict};

/// The scale-down flags that shape the rules, with upstream's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainOptions {
    /// `--skip-nodes-with-system-pods` (true).
    pub skip_nodes_with_system_pods: bool,
    /// `--skip-nodes-with-local-storage` (true).
    pub skip_nodes_with_local_storage: bool,
    /// `--skip-nodes-with-custom-controller-pods` (true).
    pub skip_nodes_with_custom_controller_pods: bool,
    /// `--min-replica-count` (0).
    pub min_replica_count: i32,
    /// `--blocking-system-pod-distruption-timeout` (1h).
    pub blocking_system_pod_disruption_timeout: Duration,
}

impl Default for DrainOptions {
    fn default() -> Self {
        DrainOptions {
            skip_nodes_with_system_pods: true,
            skip_nodes_with_local_storage: true,
            skip_nodes_with_custom_controller_pods: true,
            min_replica_count: 0,
            blocking_system_pod_disruption_timeout: Duration::from_secs(3600),
        }
    }
}

/// Everything the rules look at besides the pod.
#[derive(Clone, Copy, Debug)]
pub struct DrainContext<'a> {
    /// Remaining PDB budgets (after the nodes already picked for removal).
    pub pdbs: &'a PdbTracker,
    pub controllers: &'a Controllers,
    pub options: &'a DrainOptions,
    pub now: Timestamp,
}

/// Why a pod blocks its node's removal. `Display` gives upstream's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockingReason {
    ControllerNotFound,
    MinReplicasReached,
    NotReplicated,
    LocalStorageRequested,
    NotSafeToEvictAnnotation,
    UnmovableKubeSystemPod,
    NotEnoughPdb,
    UnexpectedError,
}

impl BlockingReason {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockingReason::ControllerNotFound => "ControllerNotFound",
            BlockingReason::MinReplicasReached => "MinReplicasReached",
            BlockingReason::NotReplicated => "NotReplicated",
            BlockingReason::LocalStorageRequested => "LocalStorageRequested",
            BlockingReason::NotSafeToEvictAnnotation => "NotSafeToEvictAnnotation",
            BlockingReason::UnmovableKubeSystemPod => "UnmovableKubeSystemPod",
            BlockingReason::NotEnoughPdb => "NotEnoughPdb",
            BlockingReason::UnexpectedError => "UnexpectedError",
        }
    }
}

impl fmt::Display for BlockingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What draining a node does with one of its pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodDrainOutcome {
    /// Ignored: neither moved nor blocking (mirror, long-terminating and terminal pods).
    Skip,
    /// A DaemonSet pod: evicted with the node (best effort), never rescheduled elsewhere.
    DaemonSet,
    /// Must be rescheduled on another node.
    Move,
    /// Prevents the node's removal.
    Block(BlockingReason),
    /// `safe-to-evict: "on-completion"`: the node may not be deleted until the pod finishes. The
    /// simulation otherwise treats the node normally (upstream reports it as
    /// `BlockedByOnCompletionPod` only when it would delete it).
    WaitForCompletion,
}

/// The rules' raw verdict before DaemonSet pods are told apart.
enum Verdict {
    Skip,
    Drainable,
    Block(BlockingReason),
    Wait,
}

fn verdict(pod: &PodInfo, ctx: &DrainContext) -> Verdict {
    let options = ctx.options;
    if pod.mirror || is_long_terminating(pod, ctx.now) {
        return Verdict::Skip;
    }
    if options.skip_nodes_with_custom_controller_pods
        && let Some(reason) = controller_problem(pod, ctx)
    {
        return Verdict::Block(reason);
    }
    let safe_to_evict = safe_to_evict(pod);
    if pod.daemonset || safe_to_evict == Some(SafeToEvict::True) {
        return Verdict::Drainable;
    }
    if is_terminal(pod) {
        return Verdict::Skip;
    }
    if safe_to_evict == Some(SafeToEvict::OnCompletion) {
        return Verdict::Wait;
    }
    if !is_replicated(pod, options.skip_nodes_with_custom_controller_pods) {
        return Verdict::Block(BlockingReason::NotReplicated);
    }
    if options.skip_nodes_with_system_pods && pod.namespace() == KUBE_SYSTEM_NAMESPACE && !ctx.pdbs.has_pdb(pod) {
        return if outlived_system_pod_timeout(pod, options.blocking_system_pod_disruption_timeout, ctx.now) {
            Verdict::Drainable
        } else {
            Verdict::Block(BlockingReason::UnmovableKubeSystemPod)
        };
    }
    if safe_to_evict == Some(SafeToEvict::False) {
        return Verdict::Block(BlockingReason::NotSafeToEvictAnnotation);
    }
    if options.skip_nodes_with_local_storage && has_blocking_local_storage(pod) {
        return Verdict::Block(BlockingReason::LocalStorageRequested);
    }
    if ctx.pdbs.matching(pod).any(|pdb| pdb.disruptions_allowed < 1) {
        return Verdict::Block(BlockingReason::NotEnoughPdb);
    }
    Verdict::Drainable
}

/// Applies the rules to one pod.
pub fn pod_drain_outcome(pod: &PodInfo, ctx: &DrainContext) -> PodDrainOutcome {
    match verdict(pod, ctx) {
        Verdict::Skip => PodDrainOutcome::Skip,
        Verdict::Drainable if pod.daemonset => PodDrainOutcome::DaemonSet,
        Verdict::Drainable => PodDrainOutcome::Move,
        Verdict::Block(reason) => PodDrainOutcome::Block(reason),
        Verdict::Wait => PodDrainOutcome::WaitForCompletion,
    }
}

/// The pods of a node that draining it involves.
#[derive(Debug, Clone, Default)]
pub struct PodsToMove {
    /// Pods that need a new place.
    pub pods: Vec<Arc<PodInfo>>,
    /// DaemonSet pods, evicted with the node but not rescheduled.
    pub daemonset_pods: Vec<Arc<PodInfo>>,
    /// `safe-to-evict: "on-completion"` pods still running: the node must not be deleted yet
    /// (`BlockedByOnCompletionPod`), although it may be counted as unneeded.
    pub on_completion_pods: Vec<Arc<PodInfo>>,
}

impl PodsToMove {
    /// Nothing needs a new place (the node is "empty" for scale-down).
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// Running on-completion pods hold the node.
    pub fn waits_for_completion(&self) -> bool {
        !self.on_completion_pods.is_empty()
    }
}

/// The pod that stops a node's removal, and why.
#[derive(Debug, Clone)]
pub struct DrainBlocked {
    pub pod: Arc<PodInfo>,
    pub reason: BlockingReason,
}

impl fmt::Display for DrainBlocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pod {} blocks scale-down: {}", self.pod.key, self.reason)
    }
}

/// Whether draining `node` needs no new place for any pod and nothing blocks it: the same
/// answer as `pods_to_move(..).is_ok_and(|p| p.is_empty())`, but it stops at the first pod that
/// must move, which is what sorting thousands of busy candidates by emptiness needs.
pub fn nothing_to_move(node: &NodeInfo, ctx: &DrainContext) -> bool {
    node.pods
        .iter()
        .all(|pod| !matches!(pod_drain_outcome(pod, ctx), PodDrainOutcome::Move | PodDrainOutcome::Block(_)))
}

/// Upstream's GetPodsToMove: walks the node's pods in order and sorts them into pods to move,
/// DaemonSet pods and on-completion pods; the first blocking pod stops the walk.
pub fn pods_to_move(node: &NodeInfo, ctx: &DrainContext) -> Result<PodsToMove, DrainBlocked> {
    // Most pods move: room for all of them at once rather than a growth at every power of two.
    let mut out = PodsToMove { pods: Vec::with_capacity(node.pods.len()), ..Default::default() };
    for pod in &node.pods {
        match pod_drain_outcome(pod, ctx) {
            PodDrainOutcome::Skip => {}
            PodDrainOutcome::DaemonSet => out.daemonset_pods.push(pod.clone()),
            PodDrainOutcome::Move => out.pods.push(pod.clone()),
            PodDrainOutcome::WaitForCompletion => out.on_completion_pods.push(pod.clone()),
            PodDrainOutcome::Block(reason) => return Err(DrainBlocked { pod: pod.clone(), reason }),
        }
    }
    Ok(out)
}
