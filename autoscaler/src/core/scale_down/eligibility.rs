//! Which nodes may be considered for removal at all, with upstream's `UnremovableReason` for the
//! others.

use std::collections::HashMap;
use std::sync::Arc;

use simulator::drainability::{Controllers, DrainContext, PdbTracker, nothing_to_move};
use simulator::utilization::{UtilizationInfo, calculate_utilization};
use simulator::well_known::SCALE_DOWN_DISABLED;
use simulator::{ClusterSnapshot, NodeId};

use super::{ScaleDownContext, registered_nodes, unremovable};
use crate::core::plan::{UnremovableNode, UnremovableReason};
use crate::core::readiness::is_being_deleted;

/// A node that passed eligibility.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub id: NodeId,
    pub name: Arc<str>,
    pub group: String,
    pub utilization: UtilizationInfo,
}

pub struct Eligibility {
    /// In simulation order: empty nodes first, then nodes unneeded in the previous loop.
    pub candidates: Vec<Candidate>,
    pub unremovable: Vec<UnremovableNode>,
}

pub fn check(ctx: &ScaleDownContext, snapshot: &ClusterSnapshot) -> Eligibility {
    let mut candidates = Vec::new();
    let mut out = Vec::new();
    // Each group's deletions in progress, read once (by the group's index) rather than looked up
    // by its id for each of its nodes.
    let deletions_in_progress: Vec<usize> =
        ctx.cloud.groups.iter().map(|g| ctx.state.group(&g.id).map_or(0, |s| s.deletions_in_progress)).collect();
    for (id, name) in registered_nodes(snapshot, ctx.upcoming) {
        let node = snapshot.node(id).expect("listed node");
        let group_index = ctx.cloud.group_index_of_node(&name);
        let group_id = group_index.map(|i| ctx.cloud.groups[i].id.as_str());
        let reason = |r| unremovable(&name, group_id, r, None);
        if ctx.memory.deleting.contains(&*name) || is_being_deleted(&node.node, ctx.now) {
            out.push(reason(UnremovableReason::CurrentlyBeingDeleted));
            continue;
        }
        if node.annotation(SCALE_DOWN_DISABLED) == Some("true") {
            out.push(reason(UnremovableReason::ScaleDownDisabledAnnotation));
            continue;
        }
        let Some(group_index) = group_index else {
            out.push(reason(UnremovableReason::NotAutoscaled));
            continue;
        };
        let group = &ctx.cloud.groups[group_index];
        // Upstream's local delays: a group inside its own delays offers no candidates.
        if ctx.options.scale_down_delay_type_local && super::removable::group_in_local_delay(ctx, &group.id).is_some() {
            continue;
        }
        let in_progress = deletions_in_progress[group_index];
        if group.target_size.saturating_sub(in_progress) <= group.min_size {
            out.push(reason(UnremovableReason::NodeGroupMinSizeReached));
            continue;
        }
        if ctx.memory.unremovable_until.get(&*name).is_some_and(|(until, _)| *until > ctx.now) {
            out.push(reason(UnremovableReason::RecentlyUnremovable));
            continue;
        }
        let gpu = ctx.cloud.node_gpus.get(&*name).map(|g| g.extended_resource_name.as_str());
        let utilization = match calculate_utilization(
            node,
            group.options.ignore_daemonsets_utilization,
            ctx.options.ignore_mirror_pods_utilization,
            gpu,
            ctx.now,
        ) {
            Ok(u) => u,
            Err(_) => {
                out.push(reason(UnremovableReason::UnexpectedError));
                continue;
            }
        };
        if !ctx.options.scale_down_unready_enabled && !ctx.state.is_ready(&name) {
            out.push(reason(UnremovableReason::ScaleDownUnreadyDisabled));
            continue;
        }
        let threshold = if gpu.is_some() {
            group.options.scale_down_gpu_utilization_threshold
        } else {
            group.options.scale_down_utilization_threshold
        };
        if utilization.utilization > threshold {
            out.push(unremovable(&name, group_id, UnremovableReason::NotUnderutilized, Some(utilization.utilization)));
            continue;
        }
        candidates.push(Candidate { id, name: name.clone(), group: group.id.clone(), utilization });
    }
    let candidates = drop_incomplete_atomic_groups(ctx, candidates, &mut out);
    Eligibility { candidates: order_candidates(ctx, snapshot, candidates), unremovable: out }
}

/// A zero-or-max group scales down only as a whole: if some of its nodes are not candidates,
/// none is.
fn drop_incomplete_atomic_groups(
    ctx: &ScaleDownContext,
    candidates: Vec<Candidate>,
    out: &mut Vec<UnremovableNode>,
) -> Vec<Candidate> {
    let mut per_group: HashMap<String, usize> = HashMap::new();
    for c in &candidates {
        *per_group.entry(c.group.clone()).or_insert(0) += 1;
    }
    let incomplete = |group: &str| {
        ctx.cloud.group(group).is_some_and(|g| {
            g.options.zero_or_max_node_scaling && per_group.get(group).copied().unwrap_or(0) < g.target_size
        })
    };
    let (keep, drop): (Vec<_>, Vec<_>) = candidates.into_iter().partition(|c| !incomplete(&c.group));
    for c in drop {
        out.push(unremovable(
            &c.name,
            Some(&c.group),
            UnremovableReason::AtomicScaleDownFailed,
            Some(c.utilization.utilization),
        ));
    }
    keep
}

/// Empty nodes first (nothing to move, judged without controllers or PDBs as upstream's sorting
/// does), then nodes that were unneeded in the previous loop, then the rest; stable otherwise.
fn order_candidates(ctx: &ScaleDownContext, snapshot: &ClusterSnapshot, candidates: Vec<Candidate>) -> Vec<Candidate> {
    let controllers = Controllers::unchecked();
    let pdbs = PdbTracker::new::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(&[]);
    let drain = DrainContext { pdbs: &pdbs, controllers: &controllers, options: &ctx.options.drain, now: ctx.now };
    let mut keyed: Vec<(u8, Candidate)> = candidates
        .into_iter()
        .map(|c| {
            let node = snapshot.node(c.id).expect("candidate node");
            let empty = nothing_to_move(node, &drain);
            let rank = if empty {
                0
            } else if ctx.memory.unneeded_since.contains_key(&*c.name) {
                1
            } else {
                2
            };
            (rank, c)
        })
        .collect();
    keyed.sort_by_key(|(rank, _)| *rank);
    keyed.into_iter().map(|(_, c)| c).collect()
}
