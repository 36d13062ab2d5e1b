//! What the loop remembers between iterations and the decision reads: since when nodes have
//! been unneeded, which nodes were recently found unremovable, and the scale-down cooldowns;
//! and what it remembers of the cloud (its groups' instances).

use std::collections::{HashMap, HashSet};

use k8s_openapi::jiff::Timestamp;

use super::cloud::InstanceCache;
use super::node_facts::NodeFactsMemo;
use super::plan::UnremovableReason;

#[derive(Clone, Debug, Default)]
pub struct LoopMemory {
    /// Node name → first time it was found unneeded (kept while it stays unneeded).
    pub unneeded_since: HashMap<String, Timestamp>,
    /// Node name → until when it is not re-simulated (`--unremovable-node-recheck-timeout`).
    pub unremovable_until: HashMap<String, (Timestamp, UnremovableReason)>,
    pub last_scale_up: Option<Timestamp>,
    pub last_scale_down_delete: Option<Timestamp>,
    pub last_scale_down_failure: Option<Timestamp>,
    /// The same per node group, for `--scale-down-delay-type-local`.
    pub group_scale_ups: HashMap<String, Timestamp>,
    pub group_scale_down_deletes: HashMap<String, Timestamp>,
    pub group_scale_down_failures: HashMap<String, Timestamp>,
    /// Nodes whose deletion the loop has started and not finished.
    pub deleting: HashSet<String>,
    /// The groups' cloud instances, read again only when they may have changed (upstream's
    /// instance cache); `plan` does not use it.
    pub instances: InstanceCache,
    /// What each node version listed last reads to (readiness, GPUs): read again only for
    /// nodes that changed.
    pub node_facts: NodeFactsMemo,
    /// `plan` has no history: treat every unneeded node as unneeded long enough, so the plan
    /// shows what the loop will do once the unneeded time has passed.
    pub assume_unneeded_long_enough: bool,
    /// The last decision's snapshot of the registered nodes and their pods, updated by deltas.
    pub snapshots: super::base_snapshot::SnapshotCache,
    /// The last decision's sorting of the pods, reused while the pod list is the same.
    pub classified: super::classify::ClassificationCache,
}

impl LoopMemory {
    /// The memory `plan` uses.
    pub fn for_plan() -> Self {
        LoopMemory { assume_unneeded_long_enough: true, ..Default::default() }
    }
}
