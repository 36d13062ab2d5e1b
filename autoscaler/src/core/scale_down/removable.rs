//! From unneeded nodes to deletions: which unneeded nodes may go now, and which of those this
//! loop starts deleting under the cooldowns and parallelism budgets.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use simulator::NodeInfo;
use simulator::resources::NVIDIA_GPU;

use super::simulation::Removable;
use super::{ScaleDownContext, unremovable};
use crate::core::plan::{Deletions, UnneededNode, UnremovableNode, UtilizationSummary};
use crate::core::plan::{ScaleDownStatus, UnremovableReason};
use crate::core::scale_up::limits::node_delta;

pub struct Decided {
    pub status: ScaleDownStatus,
    pub message: String,
    pub unneeded: Vec<UnneededNode>,
    pub unremovable: Vec<UnremovableNode>,
    pub delete_now: Deletions,
    pub unneeded_since: HashMap<String, Timestamp>,
}

fn keys(pods: &[std::sync::Arc<simulator::PodInfo>]) -> Vec<String> {
    pods.iter().map(|p| p.key.to_string()).collect()
}

fn to_signed(d: std::time::Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

/// Cluster totals in the limiter's units, from every registered node's capacity.
fn cluster_totals(ctx: &ScaleDownContext) -> BTreeMap<String, i64> {
    let mut totals = BTreeMap::new();
    for node in &ctx.view.nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let gpu_type = ctx.cloud.node_gpus.get(name).map(|g| g.gpu_type.clone()).filter(|t| !t.is_empty());
        let info = NodeInfo::new(node.clone());
        for (r, v) in node_delta(&info, gpu_type.as_deref(), NVIDIA_GPU) {
            *totals.entry(r).or_insert(0) += v;
        }
    }
    totals
}

/// Whether `t + d` is still ahead of `now`.
fn within(t: Option<Timestamp>, d: std::time::Duration, now: Timestamp) -> bool {
    t.is_some_and(|t| t + to_signed(d) > now)
}

/// With `--scale-down-delay-type-local`: why a group's nodes are not scale-down candidates now
/// (the delays after add, delete and failure, applied to the group's own events).
pub fn group_in_local_delay(ctx: &ScaleDownContext, group: &str) -> Option<&'static str> {
    let (o, m, now) = (ctx.options, ctx.memory, ctx.now);
    if within(m.group_scale_ups.get(group).copied(), o.scale_down_delay_after_add, now) {
        Some("--scale-down-delay-after-add has not passed since the group's last scale-up")
    } else if within(m.group_scale_down_deletes.get(group).copied(), o.scale_down_delay_after_delete, now) {
        Some("--scale-down-delay-after-delete has not passed since the group's last deletion")
    } else if within(m.group_scale_down_failures.get(group).copied(), o.scale_down_delay_after_failure, now) {
        Some("--scale-down-delay-after-failure has not passed since the group's last failed scale-down")
    } else {
        None
    }
}

fn in_cooldown(ctx: &ScaleDownContext) -> Option<&'static str> {
    let o = ctx.options;
    let m = ctx.memory;
    let after = |t: Option<Timestamp>, d: std::time::Duration| within(t, d, ctx.now);
    if ctx.scale_up_this_loop {
        Some("a scale-up happened in this loop")
    } else if o.scale_down_delay_type_local {
        // The delays apply per group (eligibility leaves out the groups inside theirs).
        None
    } else if after(m.last_scale_up, o.scale_down_delay_after_add) {
        Some("--scale-down-delay-after-add has not passed since the last scale-up")
    } else if after(m.last_scale_down_delete, o.scale_down_delay_after_delete) {
        Some("--scale-down-delay-after-delete has not passed since the last deletion")
    } else if after(m.last_scale_down_failure, o.scale_down_delay_after_failure) {
        Some("--scale-down-delay-after-failure has not passed since the last failed scale-down")
    } else {
        None
    }
}

pub fn decide(ctx: &ScaleDownContext, removable: &[Removable]) -> Decided {
    let mut out = Decided {
        status: ScaleDownStatus::NoCandidates,
        message: String::new(),
        unneeded: Vec::new(),
        unremovable: Vec::new(),
        delete_now: Deletions::default(),
        unneeded_since: HashMap::new(),
    };
    let mut sizes: HashMap<String, usize> = ctx
        .cloud
        .groups
        .iter()
        .map(|g| {
            (g.id.clone(), g.target_size.saturating_sub(ctx.state.group(&g.id).map_or(0, |s| s.deletions_in_progress)))
        })
        .collect();
    // Read off every node's capacity: only once a node has been unneeded long enough (most
    // loops have none).
    let mut totals: Option<BTreeMap<String, i64>> = None;
    let limiter = &ctx.cloud.resource_limiter;
    let mut ready_now: Vec<&Removable> = Vec::new();
    // Upstream checks empty nodes first, then nodes that need a drain.
    let ordered = removable
        .iter()
        .filter(|r| r.pods_to_move.is_empty())
        .chain(removable.iter().filter(|r| !r.pods_to_move.is_empty()));
    for r in ordered {
        let since = ctx.memory.unneeded_since.get(&*r.name).copied().unwrap_or(ctx.now);
        out.unneeded_since.insert(r.name.to_string(), since);
        let group = ctx.cloud.group(&r.group).expect("removable nodes belong to a group");
        let ready = ctx.state.is_ready(&r.name);
        let threshold =
            if ready { group.options.scale_down_unneeded_time } else { group.options.scale_down_unready_time };
        let removable_after = since + to_signed(threshold);
        let fail = |reason| unremovable(&r.name, Some(&r.group), reason, Some(r.utilization.utilization));
        let long_enough = ctx.memory.assume_unneeded_long_enough || removable_after < ctx.now;
        if long_enough {
            let size = sizes.get_mut(&r.group).expect("group size");
            if *size <= group.min_size {
                out.unremovable.push(fail(UnremovableReason::NodeGroupMinSizeReached));
                continue;
            }
            let gpu_type = ctx.cloud.node_gpus.get(&*r.name).map(|g| g.gpu_type.clone()).filter(|t| !t.is_empty());
            let info = NodeInfo::new(r.node.clone());
            let delta = node_delta(&info, gpu_type.as_deref(), NVIDIA_GPU);
            let totals = totals.get_or_insert_with(|| cluster_totals(ctx));
            let exceeds = delta.iter().any(|(res, d)| {
                limiter.min.contains_key(res) && totals.get(res).copied().unwrap_or(0) - d < limiter.min(res)
            });
            if exceeds {
                out.unremovable.push(fail(UnremovableReason::MinimalResourceLimitExceeded));
                continue;
            }
            if r.waits_for_completion {
                out.unremovable.push(fail(UnremovableReason::BlockedByOnCompletionPod));
                continue;
            }
            *size -= 1;
            for (res, d) in &delta {
                *totals.entry(res.clone()).or_insert(0) -= d;
            }
            ready_now.push(r);
        }
        out.unneeded.push(UnneededNode {
            node: r.name.to_string(),
            node_group: r.group.clone(),
            utilization: r.utilization.utilization,
            utilization_detail: UtilizationSummary {
                cpu: r.utilization.cpu,
                memory: r.utilization.memory,
                gpu: r.utilization.gpu,
                resource: r.utilization.resource.clone(),
            },
            pods_to_move: keys(&r.pods_to_move),
            daemon_set_pods: keys(&r.daemonset_pods),
            empty: r.pods_to_move.is_empty(),
            risky: r.risky,
            unneeded_since: since.to_string(),
            removable_after: removable_after.to_string(),
        });
    }
    // Nodes of an atomic group go together or not at all.
    let mut ready_per_group: HashMap<&str, usize> = HashMap::new();
    for r in &ready_now {
        *ready_per_group.entry(r.group.as_str()).or_insert(0) += 1;
    }
    ready_now.retain(|r| {
        let g = ctx.cloud.group(&r.group).expect("known group");
        !g.options.zero_or_max_node_scaling
            || ready_per_group.get(r.group.as_str()).copied().unwrap_or(0) >= g.target_size
    });

    out.status =
        if out.unneeded.is_empty() { ScaleDownStatus::NoCandidates } else { ScaleDownStatus::CandidatesPresent };
    if let Some(why) = in_cooldown(ctx) {
        out.status = ScaleDownStatus::InCooldown;
        out.message = format!("scale-down is in cooldown: {why}");
        return out;
    }
    // Budgets: in-flight deletions count against both.
    let in_progress: usize = ctx.state.groups.values().map(|g| g.deletions_in_progress).sum();
    let mut total_budget = ctx.options.max_scale_down_parallelism.saturating_sub(in_progress);
    let mut drain_budget = ctx.options.max_drain_parallelism.saturating_sub(in_progress).min(total_budget);
    for r in ready_now.iter().filter(|r| r.pods_to_move.is_empty()) {
        if total_budget == 0 {
            break;
        }
        out.delete_now.empty.push(r.name.to_string());
        total_budget -= 1;
    }
    drain_budget = drain_budget.min(total_budget);
    let mut drains: Vec<&&Removable> = ready_now.iter().filter(|r| !r.pods_to_move.is_empty()).collect();
    drains.sort_by_key(|r| r.risky);
    for r in drains.into_iter().take(drain_budget) {
        out.delete_now.drain.push(r.name.to_string());
    }
    let n = out.delete_now.empty.len() + out.delete_now.drain.len();
    out.message = if n > 0 {
        format!("{n} node(s) can be deleted now")
    } else if out.unneeded.is_empty() {
        "no node is unneeded".into()
    } else {
        "unneeded nodes are waiting for --scale-down-unneeded-time".into()
    };
    out
}
