//! Soft taints (upstream `softtaint.go`): unneeded nodes get
//! `DeletionCandidateOfClusterAutoscaler=<unix seconds>:PreferNoSchedule`, so the scheduler
//! prefers other nodes for new pods; nodes needed again lose it. At most
//! `--max-bulk-soft-taint-count` API calls per loop (0 disables soft tainting), and no new call
//! once `--max-bulk-soft-taint-time` of wall-clock time has passed in this step.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::jiff::Timestamp;
use simulator::well_known::{DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT};

use crate::core::ClusterView;
use crate::ports::ClusterActions;

fn has_taint(node: &Node, key: &str) -> bool {
    node.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some_and(|t| t.iter().any(|t| t.key == key))
}

/// Returns (tainted, untainted) node names.
pub async fn update_soft_taints(
    view: &ClusterView,
    unneeded: &BTreeSet<String>,
    actions: &dyn ClusterActions,
    budget: usize,
    time_budget: std::time::Duration,
    now: Timestamp,
) -> (Vec<String>, Vec<String>) {
    let mut tainted = Vec::new();
    let mut untainted = Vec::new();
    let mut calls = 0;
    let deadline = std::time::Instant::now().checked_add(time_budget);
    for node in &view.nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        if has_taint(node, TO_BE_DELETED_TAINT) {
            continue;
        }
        let candidate = has_taint(node, DELETION_CANDIDATE_TAINT);
        let wanted = unneeded.contains(name);
        if wanted == candidate {
            continue;
        }
        // The budgets bound the calls: checked before each one, not at every node (reading the
        // clock at each of thousands of nodes in every loop was a hundredth of `simulate`).
        if calls >= budget || deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        calls += 1;
        if wanted {
            let taint = Taint {
                key: DELETION_CANDIDATE_TAINT.into(),
                value: Some(now.as_second().to_string()),
                effect: "PreferNoSchedule".into(),
                time_added: None,
            };
            if actions.taint_node(name, taint, false).await.is_ok() {
                tainted.push(name.to_string());
            }
        } else if actions.untaint_node(name, DELETION_CANDIDATE_TAINT, false).await.is_ok() {
            untainted.push(name.to_string());
        }
    }
    (tainted, untainted)
}
