//! The decision as data: what scales up and why, which pods stay pending and why, which nodes
//! are unneeded and which are kept and why. `plan` prints it; the control loop acts on it.

use std::collections::BTreeMap;

use serde::Serialize;

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
    pub reason: String,
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

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnremovableNode {
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_group: Option<String>,
    /// Upstream's `UnremovableReason` name.
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking_pod: Option<String>,
    /// Upstream's `BlockingPodReason` name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking_reason: Option<String>,
}

/// Nodes the loop may start deleting now (after the unneeded time, within the budgets).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deletions {
    pub empty: Vec<String>,
    pub drain: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownPlan {
    /// `CandidatesPresent`, `NoCandidates`, `InCooldown` or `Disabled`.
    pub status: String,
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
