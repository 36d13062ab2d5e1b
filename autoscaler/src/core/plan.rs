//! The decision as data: what scales up and why, which pods stay pending and why, which nodes
//! are unneeded and which are kept and why. `plan` prints it; the control loop acts on it.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};
use simulator::drainability::BlockingReason;

/// Upstream's `ScaleUpResult` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScaleUpResult {
    Successful,
    Error,
    NoOptionsAvailable,
    NotNeeded,
    NotTried,
    InCooldown,
    LimitedByMaxNodesTotal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupIncrease {
    pub node_group: String,
    pub delta: usize,
    pub current_size: usize,
    pub new_size: usize,
    pub max_size: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPodReasons {
    pub pod: String,
    /// Every distinct reason, across node groups.
    pub reasons: Vec<String>,
    /// The reasons per node group (predicate failures on the template, or why the group was skipped).
    pub by_node_group: BTreeMap<String, Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OptionSummary {
    pub node_group: String,
    pub node_count: usize,
    pub pods: Vec<String>,
    pub similar_node_groups: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpanderEventSummary {
    /// The expander's reason (its priority ConfigMap warnings), as upstream words it.
    pub reason: &'static str,
    pub message: String,
    pub warning: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUpPlan {
    pub result: ScaleUpResult,
    /// Why the result is what it is, in a sentence.
    pub message: String,
    pub increases: Vec<GroupIncrease>,
    pub pods_triggered: Vec<String>,
    pub pods_remain_unschedulable: Vec<PendingPodReasons>,
    pub pods_await_evaluation: Vec<String>,
    /// Pending pods that fit on existing or upcoming nodes: the scheduler will place them.
    pub pods_fit_existing_nodes: Vec<String>,
    /// Pending pods left out: younger than the scale-up delay, expendable, or DaemonSet pods.
    pub pods_ignored: BTreeMap<String, String>,
    pub options: Vec<OptionSummary>,
    pub chosen_option: Option<String>,
    pub skipped_node_groups: BTreeMap<String, Vec<String>>,
    pub expander_events: Vec<ExpanderEventSummary>,
    /// `--max-nodes-total` stopped or capped the scale-up (upstream's `MaxNodesTotalReached`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub max_nodes_total_reached: bool,
}

impl ScaleUpPlan {
    pub fn empty(result: ScaleUpResult, message: impl Into<String>) -> Self {
        ScaleUpPlan {
            result,
            message: message.into(),
            increases: Vec::new(),
            pods_triggered: Vec::new(),
            pods_remain_unschedulable: Vec::new(),
            pods_await_evaluation: Vec::new(),
            pods_fit_existing_nodes: Vec::new(),
            pods_ignored: BTreeMap::new(),
            options: Vec::new(),
            chosen_option: None,
            skipped_node_groups: BTreeMap::new(),
            expander_events: Vec::new(),
            max_nodes_total_reached: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UtilizationSummary {
    pub cpu: f64,
    pub memory: f64,
    pub gpu: f64,
    /// The resource that determined the utilization.
    pub resource: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnneededNode {
    pub node: String,
    pub node_group: String,
    pub utilization: f64,
    pub utilization_detail: UtilizationSummary,
    pub pods_to_move: Vec<String>,
    pub daemon_set_pods: Vec<String>,
    /// No pod needs a new place (only DaemonSet / mirror pods).
    pub empty: bool,
    /// Evicting all its pods at once would exceed a PDB; removed after safer nodes.
    pub risky: bool,
    pub unneeded_since: String,
    /// When it becomes removable if it stays unneeded (`plan` assumes it has been long enough).
    pub removable_after: String,
}

/// Upstream's `UnremovableReason` values.
/// Serialized by name, as upstream prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum UnremovableReason {
    // Upstream's numbers: its metric label is the number (0 is its `NoReason`).
    ScaleDownDisabledAnnotation = 1,
    ScaleDownUnreadyDisabled = 2,
    NotAutoscaled = 3,
    NotUnneededLongEnough = 4,
    NotUnreadyLongEnough = 5,
    NodeGroupMinSizeReached = 6,
    NodeGroupMaxDeletionCountReached = 7,
    AtomicScaleDownFailed = 8,
    MinimalResourceLimitExceeded = 9,
    CurrentlyBeingDeleted = 10,
    NotUnderutilized = 11,
    NotUnneededOtherReason = 12,
    RecentlyUnremovable = 13,
    NoPlaceToMovePods = 14,
    BlockedByPod = 15,
    UnexpectedError = 16,
    NoNodeInfo = 17,
    BlockedByOnCompletionPod = 18,
}

impl UnremovableReason {
    /// Upstream's enum number, the `unremovable_nodes_count{reason}` label value (upstream
    /// prints the number, not the name).
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ScaleDownDisabledAnnotation => "ScaleDownDisabledAnnotation",
            Self::ScaleDownUnreadyDisabled => "ScaleDownUnreadyDisabled",
            Self::NotAutoscaled => "NotAutoscaled",
            Self::NotUnneededLongEnough => "NotUnneededLongEnough",
            Self::NotUnreadyLongEnough => "NotUnreadyLongEnough",
            Self::NodeGroupMinSizeReached => "NodeGroupMinSizeReached",
            Self::NodeGroupMaxDeletionCountReached => "NodeGroupMaxDeletionCountReached",
            Self::AtomicScaleDownFailed => "AtomicScaleDownFailed",
            Self::MinimalResourceLimitExceeded => "MinimalResourceLimitExceeded",
            Self::CurrentlyBeingDeleted => "CurrentlyBeingDeleted",
            Self::NotUnderutilized => "NotUnderutilized",
            Self::NotUnneededOtherReason => "NotUnneededOtherReason",
            Self::RecentlyUnremovable => "RecentlyUnremovable",
            Self::NoPlaceToMovePods => "NoPlaceToMovePods",
            Self::BlockedByPod => "BlockedByPod",
            Self::UnexpectedError => "UnexpectedError",
            Self::NoNodeInfo => "NoNodeInfo",
            Self::BlockedByOnCompletionPod => "BlockedByOnCompletionPod",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnremovableNode {
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_group: Option<String>,
    pub reason: UnremovableReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking_pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "blocking_reason_name")]
    pub blocking_reason: Option<BlockingReason>,
}

/// Upstream's `BlockingPodReason` name (the simulator crate stays free of serde).
fn blocking_reason_name<S: Serializer>(reason: &Option<BlockingReason>, s: S) -> Result<S::Ok, S::Error> {
    reason.map(BlockingReason::as_str).serialize(s)
}

/// Nodes the loop may start deleting now (after the unneeded time, within the budgets).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deletions {
    pub empty: Vec<String>,
    pub drain: Vec<String>,
}

/// The scale-down part of the loop's result: upstream's `ScaleDownStatus` names as the status
/// ConfigMap and `plan` print them (upstream's `ScaleDownResult` for the metrics is derived).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum ScaleDownStatus {
    /// Some nodes are unneeded (they may still wait for their unneeded time).
    CandidatesPresent,
    NoCandidates,
    /// A recent scale-up, deletion or failure holds scale-down (`--scale-down-delay-after-*`).
    InCooldown,
    /// `--scale-down-enabled=false`.
    Disabled,
}

impl ScaleDownStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CandidatesPresent => "CandidatesPresent",
            Self::NoCandidates => "NoCandidates",
            Self::InCooldown => "InCooldown",
            Self::Disabled => "Disabled",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownPlan {
    pub status: ScaleDownStatus,
    pub message: String,
    pub unneeded: Vec<UnneededNode>,
    pub unremovable: Vec<UnremovableNode>,
    pub delete_now: Deletions,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSummary {
    pub nodes: usize,
    pub ready_nodes: usize,
    pub unready_nodes: usize,
    pub not_started_nodes: usize,
    pub pods: usize,
    pub pending_pods: usize,
    /// Pending pods of `--bypassed-scheduler-names` schedulers not marked by them yet.
    pub scheduler_unprocessed_pods: usize,
    pub healthy: bool,
    pub node_groups: Vec<NodeGroupSummary>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroupSummary {
    pub id: String,
    pub min_size: usize,
    pub max_size: usize,
    pub target_size: usize,
    pub ready: usize,
    pub upcoming: usize,
    pub healthy: bool,
    pub template: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub time: String,
    pub cluster: ClusterSummary,
    pub scale_up: ScaleUpPlan,
    pub scale_down: ScaleDownPlan,
}
