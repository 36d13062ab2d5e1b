//! Scale-down planning: upstream's planner.
//!
//! 1. Eligibility: every registered node either gets an `UnremovableReason` or becomes a
//!    candidate (managed, above its group's minimum, no scale-down-disabled annotation,
//!    utilization at or below the threshold).
//! 2. Removal simulation, candidates in order (empty nodes first, then nodes unneeded in the
//!    previous loop): the drainability rules give the pods to move, which must all fit on other
//!    nodes; moves that succeed stay in the snapshot for the next candidate, and PDB budgets are
//!    consumed.
//! 3. Removable now: unneeded long enough, group above minimum and cluster-wide minimums kept,
//!    node by node; then the cooldowns and parallelism budgets pick what to delete in this loop.

mod eligibility;
mod removable;
mod simulation;

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use simulator::drainability::{Controllers, PdbTracker};
use simulator::{ClusterSnapshot, NodeId, NodeSet};

use super::cloud::CloudState;
use super::cluster_state::ClusterState;
use super::memory::LoopMemory;
use super::plan::{ScaleDownPlan, UnremovableNode};
use super::view::ClusterView;
use crate::config::AutoscalingOptions;

pub use crate::core::plan::UnremovableReason;

pub struct ScaleDownContext<'a> {
    pub view: &'a ClusterView,
    pub cloud: &'a CloudState,
    pub state: &'a ClusterState,
    pub options: &'a AutoscalingOptions,
    pub memory: &'a LoopMemory,
    pub now: Timestamp,
    pub controllers: &'a Controllers,
    pub pdbs: PdbTracker,
    /// Template copies standing in for upcoming nodes: never candidates, never destinations.
    pub upcoming: &'a NodeSet,
    /// This loop scaled up (or pending pods are too new): no deletion this loop.
    pub scale_up_this_loop: bool,
}

/// The planner's output plus what the loop must remember.
pub struct ScaleDownOutcome {
    pub plan: ScaleDownPlan,
    pub unneeded_since: HashMap<String, Timestamp>,
    pub unremovable_until: HashMap<String, (Timestamp, UnremovableReason)>,
}

fn unremovable(
    node: &str,
    group: Option<&str>,
    reason: UnremovableReason,
    utilization: Option<f64>,
) -> UnremovableNode {
    UnremovableNode {
        node: node.to_string(),
        node_group: group.map(str::to_string),
        reason,
        utilization,
        blocking_pod: None,
        blocking_reason: None,
    }
}

/// Plans scale-down on `snapshot`. The simulated moves stay in it: the caller reverts its fork.
pub fn plan_scale_down(ctx: ScaleDownContext, snapshot: &mut ClusterSnapshot) -> ScaleDownOutcome {
    let mut ctx = ctx;
    let eligible = eligibility::check(&ctx, snapshot);
    let mut unremovable_nodes = eligible.unremovable;
    let simulated = simulation::simulate(&mut ctx, snapshot, &eligible.candidates);
    unremovable_nodes.extend(simulated.unremovable.iter().cloned());

    let mut unremovable_until = HashMap::new();
    for node in &simulated.unremovable {
        let until = ctx.now + ctx.options.unremovable_node_recheck_timeout;
        unremovable_until.insert(node.node.clone(), (until, node.reason));
    }
    // Keep earlier recheck deadlines for nodes skipped as recently unremovable.
    for node in &unremovable_nodes {
        if node.reason == UnremovableReason::RecentlyUnremovable
            && let Some(entry) = ctx.memory.unremovable_until.get(&node.node)
        {
            unremovable_until.insert(node.node.clone(), *entry);
        }
    }

    let decided = removable::decide(&ctx, &simulated.removable);
    unremovable_nodes.extend(decided.unremovable);
    let plan = ScaleDownPlan {
        status: decided.status,
        message: decided.message,
        unneeded: decided.unneeded,
        unremovable: unremovable_nodes,
        delete_now: decided.delete_now,
    };
    ScaleDownOutcome { plan, unneeded_since: decided.unneeded_since, unremovable_until }
}

/// Node names of the snapshot's registered nodes, in snapshot order.
fn registered_nodes<'a>(
    snapshot: &'a ClusterSnapshot,
    upcoming: &'a NodeSet,
) -> impl Iterator<Item = (NodeId, Arc<str>)> + 'a {
    snapshot.nodes().filter(|(id, _)| !upcoming.contains(*id)).map(|(id, n)| (id, n.name.clone()))
}
