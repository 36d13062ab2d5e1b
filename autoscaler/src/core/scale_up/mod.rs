//! Scale-up planning: upstream's orchestrator.
//!
//! Pending pods (already filtered: not fitting existing or upcoming nodes) are grouped into
//! equivalence groups. Every node group that may scale up gets one option: the groups whose
//! exemplar fits the group's template, binpacked by the estimator. The expander picks one
//! option; it is capped by `--max-nodes-total` and the resource limits, then spread over similar
//! groups when balancing.

pub mod balance;
pub mod filter;
pub mod limits;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use estimator::{EstimationLimiter, Threshold};
use expander::{Expander, ExpanderContext, ExpansionOption};
use k8s_openapi::jiff::Timestamp;
use simulator::equivalence::{PodEquivalenceGroup, build_equivalence_groups};
use simulator::resources::NVIDIA_GPU;
use simulator::{ClusterSnapshot, PodInfo};

use self::balance::{BalanceTarget, distribute, similar};
use self::limits::{ResourcesLeft, limit_reached_reason, node_delta};
use super::cloud::{CloudState, NodeGroupState};
use super::cluster_state::ClusterState;
use super::plan::{ExpanderEventSummary, GroupIncrease, OptionSummary, PendingPodReasons, ScaleUpPlan, ScaleUpResult};
use super::templates::Template;
use crate::config::AutoscalingOptions;

/// Upstream's skip reasons for node groups.
pub const NOT_READY_REASON: &str = "not ready for scale-up";
pub const BACKOFF_REASON: &str = "in backoff after failed scale-up";
pub const MAX_LIMIT_REACHED_REASON: &str = "max node group size reached";
pub const ATOMIC_EXCEEDS_MAX_NODES_REASON: &str = "atomic scale-up exceeds cluster node count limit";

pub struct ScaleUpContext<'a> {
    pub cloud: &'a CloudState,
    pub state: &'a ClusterState,
    pub options: &'a AutoscalingOptions,
    pub templates: &'a HashMap<String, Template>,
    pub priority_config: Option<&'a str>,
    pub priority_config_map_exists: bool,
    pub now: Timestamp,
    /// Registered nodes plus upcoming nodes (what `--max-nodes-total` is compared with).
    pub current_node_count: usize,
    /// Registered nodes (the price expander's cluster size).
    pub registered_nodes: usize,
    /// Capacity of nodes no group manages, in limiter units.
    pub unmanaged_capacity: BTreeMap<String, i64>,
}

struct GroupEvaluation {
    /// Indices of the equivalence groups whose exemplar fits the template.
    schedulable: Vec<usize>,
}

fn gpu_type_of(group: &NodeGroupState, template: &Template, cloud: &CloudState) -> Option<String> {
    group.template_gpu.as_ref().map(|g| g.gpu_type.clone()).or_else(|| {
        template
            .node_info
            .label(&cloud.gpu_label)
            .map(str::to_string)
            .or_else(|| (template.node_info.allocatable.get(NVIDIA_GPU) > 0).then(String::new))
    })
}

fn delta_of(ctx: &ScaleUpContext, group: &NodeGroupState) -> Option<BTreeMap<String, i64>> {
    let template = ctx.templates.get(&group.id)?;
    let gpu_type = gpu_type_of(group, template, ctx.cloud).filter(|t| !t.is_empty());
    Some(node_delta(&template.node_info, gpu_type.as_deref(), NVIDIA_GPU))
}

/// Cluster totals the limits are checked against: every group at its target size with its
/// template's capacity, plus unmanaged nodes.
fn resources_left(ctx: &ScaleUpContext) -> ResourcesLeft {
    let mut totals = ctx.unmanaged_capacity.clone();
    for group in &ctx.cloud.groups {
        if let Some(delta) = delta_of(ctx, group) {
            for (r, v) in delta {
                *totals.entry(r).or_insert(0) += v * group.target_size as i64;
            }
        }
    }
    ResourcesLeft::new(&ctx.cloud.resource_limiter, &totals)
}

/// Checks every equivalence group's exemplar on one template node added to the snapshot.
fn check_exemplars(
    snapshot: &mut ClusterSnapshot,
    template: &Template,
    groups: &[PodEquivalenceGroup],
) -> (Vec<usize>, HashMap<usize, Vec<String>>) {
    let mut fits = Vec::new();
    let mut failures = HashMap::new();
    snapshot.fork();
    match snapshot.add_node_info(template.node_info.renamed_copy("check")) {
        Ok(id) => {
            for (i, g) in groups.iter().enumerate() {
                match snapshot.check_pod(g.exemplar(), id) {
                    Ok(()) => fits.push(i),
                    Err(unfit) => {
                        failures.insert(i, unfit.reasons());
                    }
                }
            }
        }
        Err(e) => {
            for i in 0..groups.len() {
                failures.insert(i, vec![format!("template could not be simulated: {e}")]);
            }
        }
    }
    snapshot.revert();
    (fits, failures)
}

pub fn plan_scale_up(
    ctx: &ScaleUpContext,
    snapshot: &mut ClusterSnapshot,
    pods: &[Arc<PodInfo>],
    expander: &mut Expander,
) -> ScaleUpPlan {
    let started = Instant::now();
    let eq_groups = build_equivalence_groups(pods);
    let mut left = resources_left(ctx);
    let mut skipped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut evaluations: BTreeMap<String, GroupEvaluation> = BTreeMap::new();
    let mut failures: Vec<BTreeMap<String, Vec<String>>> = vec![BTreeMap::new(); eq_groups.len()];
    let mut schedulable_somewhere = vec![false; eq_groups.len()];
    let mut schedulable_on: Vec<BTreeSet<String>> = vec![BTreeSet::new(); eq_groups.len()];
    let mut valid: Vec<&NodeGroupState> = Vec::new();

    for group in &ctx.cloud.groups {
        let gs = ctx.state.group(&group.id);
        if gs.is_some_and(|g| g.backoff.is_some()) {
            skipped.insert(group.id.clone(), vec![BACKOFF_REASON.into()]);
            continue;
        }
        if gs.is_none_or(|g| !g.healthy) || !group.exists {
            skipped.insert(group.id.clone(), vec![NOT_READY_REASON.into()]);
            continue;
        }
        if group.target_size >= group.max_size {
            skipped.insert(group.id.clone(), vec![MAX_LIMIT_REACHED_REASON.into()]);
            continue;
        }
        let atomic = group.options.zero_or_max_node_scaling;
        if atomic
            && ctx.options.max_nodes_total > 0
            && ctx.current_node_count + (group.max_size - group.target_size) > ctx.options.max_nodes_total
        {
            skipped.insert(group.id.clone(), vec![ATOMIC_EXCEEDS_MAX_NODES_REASON.into()]);
            continue;
        }
        let Some(delta) = delta_of(ctx, group) else {
            skipped.insert(group.id.clone(), vec![NOT_READY_REASON.into()]);
            continue;
        };
        let count = if atomic { (group.max_size - group.target_size) as i64 } else { 1 };
        let exceeded = left.exceeded(&delta, count);
        if !exceeded.is_empty() {
            skipped.insert(group.id.clone(), vec![limit_reached_reason(&exceeded)]);
            continue;
        }
        valid.push(group);
    }

    for group in &valid {
        let template = &ctx.templates[&group.id];
        let (fits, fails) = check_exemplars(snapshot, template, &eq_groups);
        for (i, reasons) in fails {
            failures[i].insert(group.id.clone(), reasons);
        }
        for &i in &fits {
            schedulable_somewhere[i] = true;
            schedulable_on[i].insert(group.id.clone());
        }
        evaluations.insert(group.id.clone(), GroupEvaluation { schedulable: fits });
    }

    // One option per valid group, until the total binpacking time runs out.
    let mut options: Vec<ExpansionOption> = Vec::new();
    let mut similar_of: HashMap<String, Vec<String>> = HashMap::new();
    let mut evaluated: BTreeSet<String> = BTreeSet::new();
    for group in &valid {
        if started.elapsed() > ctx.options.max_binpacking_time && !evaluated.is_empty() {
            break;
        }
        evaluated.insert(group.id.clone());
        let eval = &evaluations[&group.id];
        if eval.schedulable.is_empty() {
            continue;
        }
        let groups: Vec<PodEquivalenceGroup> = eval.schedulable.iter().map(|&i| eq_groups[i].clone()).collect();
        let similar = similar_groups(ctx, group, &evaluations);
        let free_slots: i64 = std::iter::once(group.id.as_str())
            .chain(similar.iter().map(String::as_str))
            .filter_map(|id| ctx.cloud.group(id))
            .map(|g| g.max_size as i64 - g.target_size as i64)
            .sum();
        let mut limiter = EstimationLimiter::new(&[
            Threshold::fixed(ctx.options.max_nodes_per_scale_up, ctx.options.max_node_group_binpacking_duration),
            Threshold::group_capacity(free_slots),
            Threshold::cluster_capacity(ctx.options.max_nodes_total as i64, ctx.current_node_count as i64),
        ]);
        let template = &ctx.templates[&group.id];
        let estimate = match estimator::estimate(
            snapshot,
            &groups,
            &template.node_info,
            &mut limiter,
            ctx.options.fastpath_binpacking,
        ) {
            Ok(e) => e,
            Err(_) => continue,
        };
        let mut node_count = estimate.node_count;
        if group.options.zero_or_max_node_scaling && node_count > 0 && node_count != group.max_size {
            node_count = group.max_size;
        }
        if node_count == 0 || estimate.scheduled_pods.is_empty() {
            continue;
        }
        similar_of.insert(group.id.clone(), similar.clone());
        options.push(ExpansionOption {
            node_group_id: group.id.clone(),
            node_count,
            pods: estimate.scheduled_pods,
            template: template.node_info.clone(),
            exists: group.exists,
            similar_node_groups: similar,
            debug: String::new(),
        });
    }

    let remaining = remaining_pods(&eq_groups, &schedulable_somewhere, &failures, &skipped);
    let mut plan = ScaleUpPlan::empty(ScaleUpResult::NoOptionsAvailable, "");
    plan.skipped_node_groups = skipped;
    plan.pods_remain_unschedulable = remaining;
    plan.options = options
        .iter()
        .map(|o| OptionSummary {
            node_group: o.node_group_id.clone(),
            node_count: o.node_count,
            pods: o.pods.iter().map(|p| p.key.to_string()).collect(),
            similar_node_groups: o.similar_node_groups.clone(),
        })
        .collect();
    // Pods of groups not evaluated because the binpacking time ran out.
    let not_evaluated: BTreeSet<String> =
        valid.iter().map(|g| g.id.clone()).filter(|id| !evaluated.contains(id)).collect();

    if options.is_empty() {
        plan.message = "no node group can help the pending pods".into();
        plan.pods_await_evaluation = awaiting(&eq_groups, &schedulable_on, None, &not_evaluated);
        return plan;
    }

    let expander_ctx = ExpanderContext {
        pricing: ctx.cloud.pricing.as_deref(),
        cluster_node_count: ctx.registered_nodes,
        now: ctx.now,
        priority_config: ctx.priority_config,
        priority_config_map_exists: ctx.priority_config_map_exists,
        gpu_resource: NVIDIA_GPU,
        gpu_label: &ctx.cloud.gpu_label,
    };
    let decision = expander.best_option(&options, &expander_ctx);
    plan.expander_events = decision
        .events
        .iter()
        .map(|e| ExpanderEventSummary { reason: e.reason, message: e.message.clone(), warning: e.warning })
        .collect();
    let Some(best) = decision.chosen.map(|i| &options[i]) else {
        plan.message = "the expander chose no option".into();
        return plan;
    };
    plan.chosen_option = Some(best.node_group_id.clone());
    plan.pods_triggered = best.pods.iter().map(|p| p.key.to_string()).collect();
    plan.pods_await_evaluation = awaiting(&eq_groups, &schedulable_on, Some(&best.node_group_id), &not_evaluated);

    // Cap to --max-nodes-total.
    let mut new_nodes = best.node_count;
    if ctx.options.max_nodes_total > 0 && ctx.current_node_count + new_nodes > ctx.options.max_nodes_total {
        plan.max_nodes_total_reached = true;
        new_nodes = ctx.options.max_nodes_total.saturating_sub(ctx.current_node_count);
        if new_nodes == 0 {
            plan.result = ScaleUpResult::Error;
            plan.message = "max node total count already reached".into();
            return plan;
        }
    }
    // Cap to the resource limits.
    let chosen = ctx.cloud.group(&best.node_group_id).expect("option of a known group");
    let delta = delta_of(ctx, chosen).unwrap_or_default();
    let capped = left.cap(&delta, new_nodes);
    if capped == 0 {
        plan.result = ScaleUpResult::Error;
        plan.message =
            format!("max resource limit reached: {}", limit_reached_reason(&left.exceeded(&delta, new_nodes as i64)));
        return plan;
    }
    new_nodes = capped;

    // Spread over similar groups.
    let mut targets = vec![BalanceTarget { id: chosen.id.clone(), current: chosen.target_size, max: chosen.max_size }];
    if !chosen.options.zero_or_max_node_scaling {
        for id in similar_of.get(&chosen.id).into_iter().flatten() {
            if let Some(g) = ctx.cloud.group(id) {
                targets.push(BalanceTarget { id: g.id.clone(), current: g.target_size, max: g.max_size });
            }
        }
    }
    targets.sort_by_key(|t| t.current);
    let spread = if chosen.options.zero_or_max_node_scaling {
        vec![(chosen.id.clone(), chosen.max_size - chosen.target_size)]
    } else {
        distribute(&targets, new_nodes)
    };
    for (id, mut delta_nodes) in spread {
        let g = ctx.cloud.group(&id).expect("known group");
        if let Some(d) = delta_of(ctx, g) {
            delta_nodes = left.cap(&d, delta_nodes);
            left.consume(&d, delta_nodes);
        }
        if delta_nodes == 0 {
            continue;
        }
        plan.increases.push(GroupIncrease {
            node_group: id,
            delta: delta_nodes,
            current_size: g.target_size,
            new_size: g.target_size + delta_nodes,
            max_size: g.max_size,
        });
    }
    if plan.increases.is_empty() {
        plan.result = ScaleUpResult::Error;
        plan.message = "the chosen option could not grow any node group".into();
        return plan;
    }
    plan.result = ScaleUpResult::Successful;
    let summary: Vec<String> = plan
        .increases
        .iter()
        .map(|i| format!("{} {}->{} (max: {})", i.node_group, i.current_size, i.new_size, i.max_size))
        .collect();
    plan.message = format!("scale-up: {}", summary.join(", "));
    plan
}

/// `--enforce-node-group-min-size`: raises every group whose target (after `already`, this
/// loop's scale-up) is below its minimum, as upstream's `ScaleUpToNodeGroupMinSize` does. Groups
/// that are unhealthy, backed off, without template, or whose one more node would break a
/// cluster resource limit are skipped. Each group is capped on its own by the resource limits
/// left before this loop's scale-ups, and by `--max-nodes-total` compared with the group's own
/// target size: that is what upstream does here, not the cluster node count.
pub fn plan_min_size_scale_up(ctx: &ScaleUpContext, already: &[GroupIncrease]) -> Vec<GroupIncrease> {
    let left = resources_left(ctx);
    let mut out = Vec::new();
    for group in &ctx.cloud.groups {
        let target = already.iter().find(|i| i.node_group == group.id).map_or(group.target_size, |i| i.new_size);
        if !group.exists || target >= group.min_size {
            continue;
        }
        let gs = ctx.state.group(&group.id);
        if gs.is_none_or(|g| !g.healthy || g.backoff.is_some()) {
            continue;
        }
        let Some(delta) = delta_of(ctx, group) else { continue };
        if !left.exceeded(&delta, 1).is_empty() {
            continue;
        }
        let mut count = left.cap(&delta, group.min_size - target);
        let max_total = ctx.options.max_nodes_total;
        if max_total > 0 && count + target > max_total {
            count = max_total.saturating_sub(target);
        }
        if count == 0 {
            continue;
        }
        out.push(GroupIncrease {
            node_group: group.id.clone(),
            delta: count,
            current_size: target,
            new_size: target + count,
            max_size: group.max_size,
        });
    }
    out
}

/// Valid groups similar to `group` that can take every pod group `group` can.
fn similar_groups(
    ctx: &ScaleUpContext,
    group: &NodeGroupState,
    evaluations: &BTreeMap<String, GroupEvaluation>,
) -> Vec<String> {
    if !ctx.options.balancing.enabled || group.options.zero_or_max_node_scaling {
        return Vec::new();
    }
    let Some(mine) = evaluations.get(&group.id) else { return Vec::new() };
    let template = &ctx.templates[&group.id];
    let mut out = Vec::new();
    for (id, other) in evaluations {
        if *id == group.id {
            continue;
        }
        let Some(g) = ctx.cloud.group(id) else { continue };
        if g.options.zero_or_max_node_scaling || !g.exists {
            continue;
        }
        if !mine.schedulable.iter().all(|i| other.schedulable.contains(i)) {
            continue;
        }
        if similar(
            &template.node_info,
            &ctx.templates[id].node_info,
            &ctx.options.balancing,
            &ctx.cloud.balancing_ignored_labels,
        ) {
            out.push(id.clone());
        }
    }
    out
}

fn remaining_pods(
    eq_groups: &[PodEquivalenceGroup],
    schedulable_somewhere: &[bool],
    failures: &[BTreeMap<String, Vec<String>>],
    skipped: &BTreeMap<String, Vec<String>>,
) -> Vec<PendingPodReasons> {
    let mut out = Vec::new();
    for (i, g) in eq_groups.iter().enumerate() {
        if schedulable_somewhere[i] {
            continue;
        }
        let mut by_group = failures[i].clone();
        for (id, reasons) in skipped {
            by_group.insert(id.clone(), reasons.clone());
        }
        let mut reasons: Vec<String> = Vec::new();
        for r in by_group.values().flatten() {
            if !reasons.contains(r) {
                reasons.push(r.clone());
            }
        }
        if reasons.is_empty() {
            reasons.push("no node group is configured".into());
        }
        for pod in &g.pods {
            out.push(PendingPodReasons {
                pod: pod.key.to_string(),
                reasons: reasons.clone(),
                by_node_group: by_group.clone(),
            });
        }
    }
    out
}

/// Pods some group could take but not the chosen one (or whose groups were not evaluated):
/// they are looked at again in the next loop.
fn awaiting(
    eq_groups: &[PodEquivalenceGroup],
    schedulable_on: &[BTreeSet<String>],
    chosen: Option<&String>,
    not_evaluated: &BTreeSet<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, g) in eq_groups.iter().enumerate() {
        let on = &schedulable_on[i];
        if on.is_empty() {
            continue;
        }
        let chosen_takes = chosen.is_some_and(|c| on.contains(c));
        let only_unevaluated = chosen.is_none() && on.iter().all(|id| not_evaluated.contains(id));
        if chosen.is_some() && !chosen_takes || only_unevaluated {
            out.extend(g.pods.iter().map(|p| p.key.to_string()));
        }
    }
    out
}
