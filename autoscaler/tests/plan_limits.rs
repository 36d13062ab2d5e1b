//! End-to-end tests of `plan` against node group and cluster-wide limits: group max and min
//! sizes, `--max-nodes-total`, `--cores-total`, `--memory-total`, `--max-nodes-per-scaleup`.

mod common;

use common::*;
use serde_json::Value;

fn g() -> Value {
    group("g", 0, 10, "4", "16Gi")
}

/// `big`: an 8-cpu node of the group, 5 cpus used (62.5%: never a candidate), room for 3 more cpus.
fn roomy_destination() -> Vec<Value> {
    vec![
        node("g", "big", "8", "32Gi"),
        replicaset("default", "steady", 1),
        running_on(
            owned_by(pod("default", "steady-0", "5", "1Gi").label("app", "steady"), "ReplicaSet", "steady"),
            "big",
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// Scale-up

#[test]
fn group_at_max_size_is_skipped_with_max_node_group_size_reached() {
    let objects = with(full_node("g", "g-1"), pending_pods("web", 1, "1", "1Gi"));
    let objects = with(objects, [replicaset("default", "web", 1)]);
    let plan = plan(&objects, &[group("g", 0, 1, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "NoOptionsAvailable", "{plan:#}");
    assert_eq!(skipped_reasons(&plan, "g"), vec!["max node group size reached"]);
    let reasons = remain_unschedulable(&plan, "default/web-0").expect("pod stays pending");
    assert!(reasons.contains(&"max node group size reached".to_string()), "{reasons:?}");
}

#[test]
fn scale_up_is_capped_at_the_group_max_size() {
    let objects = with(vec![replicaset("default", "web", 5)], pending_pods("web", 5, "3", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 3, "4", "16Gi")], &[]);
    assert_eq!(increases(&plan), vec![inc("g", 3)], "{plan:#}");
}

#[test]
fn max_nodes_total_caps_the_increase() {
    let objects = with(full_node("g", "g-1"), pending_pods("web", 5, "3", "1Gi"));
    let objects = with(objects, [replicaset("default", "web", 5)]);
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &["--max-nodes-total=3"]);
    assert_eq!(increases(&plan), vec![inc("g", 2)], "{plan:#}");
}

#[test]
fn max_nodes_total_reached_by_ready_nodes_limits_scale_up() {
    let mut objects = full_node("g", "g-1");
    objects.extend(full_node("g", "g-2").into_iter().filter(|o| o["kind"] != "ReplicaSet"));
    objects.push(replicaset("default", "web", 1));
    objects.extend(pending_pods("web", 1, "1", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &["--max-nodes-total=2"]);
    assert_eq!(scale_up_result(&plan), "LimitedByMaxNodesTotal", "{plan:#}");
    assert!(increases(&plan).is_empty());
}

#[test]
fn cores_total_caps_the_increase() {
    // 4 cores now; 12 allowed: two more 4-core nodes.
    let objects = with(full_node("g", "g-1"), pending_pods("web", 5, "3", "1Gi"));
    let objects = with(objects, [replicaset("default", "web", 5)]);
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &["--cores-total=0:12"]);
    assert_eq!(increases(&plan), vec![inc("g", 2)], "{plan:#}");
}

#[test]
fn cores_total_reached_skips_the_group_with_max_cluster_cpu_limit_reached() {
    let objects = with(full_node("g", "g-1"), pending_pods("web", 1, "3", "1Gi"));
    let objects = with(objects, [replicaset("default", "web", 1)]);
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &["--cores-total=0:6"]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    assert_eq!(skipped_reasons(&plan, "g"), vec!["max cluster cpu limit reached"]);
    let reasons = remain_unschedulable(&plan, "default/web-0").expect("pod stays pending");
    assert!(reasons.contains(&"max cluster cpu limit reached".to_string()), "{reasons:?}");
}

#[test]
fn memory_total_reached_skips_the_group_with_max_cluster_memory_limit_reached() {
    let objects = with(full_node("g", "g-1"), pending_pods("web", 1, "3", "1Gi"));
    let objects = with(objects, [replicaset("default", "web", 1)]);
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &["--memory-total=0:20"]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    assert_eq!(skipped_reasons(&plan, "g"), vec!["max cluster memory limit reached"]);
}

#[test]
fn max_nodes_per_scaleup_caps_one_estimation() {
    let objects = with(vec![replicaset("default", "web", 10)], pending_pods("web", 10, "3", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 20, "4", "16Gi")], &["--max-nodes-per-scaleup=3"]);
    assert_eq!(increases(&plan), vec![inc("g", 3)], "{plan:#}");
}

#[test]
fn enforce_node_group_min_size_raises_groups_below_min() {
    let groups = [group("g", 3, 10, "4", "16Gi")];
    let objects = vec![node("g", "g-1", "4", "16Gi")];
    let without = plan(&objects, &groups, &[]);
    assert!(increases(&without).is_empty(), "{without:#}");
    let with_flag = plan(&objects, &groups, &["--enforce-node-group-min-size"]);
    assert_eq!(increases(&with_flag), vec![inc("g", 2)], "{with_flag:#}");
}

// ---------------------------------------------------------------------------------------------
// Scale-down

#[test]
fn cores_total_minimum_keeps_nodes_with_minimal_resource_limit_exceeded() {
    // 8 + 4 = 12 cores; removing g-1 would leave 8.
    let objects = with(roomy_destination(), [node("g", "g-1", "4", "16Gi")]);
    let plan1 = plan(&objects, &[g()], &["--cores-total=10:100"]);
    assert_eq!(unremovable_reason(&plan1, "g-1").as_deref(), Some("MinimalResourceLimitExceeded"), "{plan1:#}");
    let plan2 = plan(&objects, &[g()], &["--cores-total=8:100"]);
    assert_eq!(delete_now(&plan2), vec!["g-1"], "{plan2:#}");
}

#[test]
fn memory_total_minimum_keeps_nodes_with_minimal_resource_limit_exceeded() {
    // 32 + 16 GiB; removing g-1 would leave 32 GiB.
    let objects = with(roomy_destination(), [node("g", "g-1", "4", "16Gi")]);
    let plan = plan(&objects, &[g()], &["--memory-total=40:1000"]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("MinimalResourceLimitExceeded"), "{plan:#}");
}

#[test]
fn max_nodes_total_counts_a_starting_node_once() {
    // g-2 registered 5 minutes ago and is not ready yet: it is an upcoming node, counted once.
    // 2 nodes now, 4 allowed: two more.
    let starting = not_ready(node("g", "g-2", "4", "16Gi")).created("2026-11-21T11:55:00Z");
    let mut objects = full_node("g", "g-1");
    objects.push(starting);
    objects.push(replicaset("default", "web", 3));
    objects.extend(pending_pods("web", 3, "3", "1Gi"));
    let plan = plan(&objects, &[g()], &["--max-nodes-total=4"]);
    assert_eq!(plan["cluster"]["nodeGroups"][0]["upcoming"], 1, "{plan:#}");
    assert_eq!(pods_fit_existing(&plan).len(), 1, "{plan:#}");
    assert_eq!(increases(&plan), vec![inc("g", 2)], "{plan:#}");
}

#[test]
fn enforce_node_group_min_size_also_runs_after_a_scale_up() {
    // `b` scales up for the pending pod; `a`, below its minimum, is raised in the same loop.
    let mut objects = full_node("a", "a-1");
    objects.push(replicaset("default", "web", 1));
    objects.extend(pending_pods("web", 1, "1", "1Gi").into_iter().map(|p| with_node_selector(p, "pool", "b")));
    let groups = [group("a", 2, 10, "4", "16Gi"), group("b", 0, 10, "4", "16Gi")];
    let plan = plan(&objects, &groups, &["--enforce-node-group-min-size"]);
    let mut got = increases(&plan);
    got.sort();
    assert_eq!(got, vec![inc("a", 1), inc("b", 1)], "{plan:#}");
}

#[test]
fn enforce_node_group_min_size_respects_cores_total() {
    // One 4-core node, min 3, at most 8 cores: one more node.
    let objects = vec![node("g", "g-1", "4", "16Gi")];
    let plan =
        plan(&objects, &[group("g", 3, 10, "4", "16Gi")], &["--enforce-node-group-min-size", "--cores-total=0:8"]);
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

#[test]
fn enforce_node_group_min_size_skips_groups_without_template() {
    let bare = serde_json::json!({"id": "bare", "minSize": 2, "maxSize": 5, "nodeSelector": {"pool": "bare"}});
    let plan = plan(&[], &[bare], &["--enforce-node-group-min-size", "--allow-empty-snapshot"]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
}

#[test]
fn enforce_node_group_min_size_caps_max_nodes_total_against_the_group_size() {
    // Upstream compares --max-nodes-total with the group's own target size here, not with the
    // cluster's node count: `a` goes from 1 to its minimum 3 although the cluster ends at 6 > 5.
    let mut objects = full_node("a", "a-1");
    for i in 1..=3 {
        objects.push(node("b", &format!("b-{i}"), "4", "16Gi"));
    }
    let groups = [group("a", 3, 10, "4", "16Gi"), group("b", 3, 10, "4", "16Gi")];
    let plan = plan(&objects, &groups, &["--enforce-node-group-min-size", "--max-nodes-total=5"]);
    assert_eq!(increases(&plan), vec![inc("a", 2)], "{plan:#}");
}

#[test]
fn enforce_node_group_min_size_does_not_put_scale_down_in_cooldown() {
    // Upstream raises groups to their minimum after scale-down: the empty b-1 still goes now.
    let objects = vec![node("a", "a-1", "4", "16Gi"), node("b", "b-1", "4", "16Gi"), node("b", "b-2", "4", "16Gi")];
    let groups = [group("a", 2, 10, "4", "16Gi"), group("b", 1, 10, "4", "16Gi")];
    let plan = plan(&objects, &groups, &["--enforce-node-group-min-size"]);
    assert_eq!(increases(&plan), vec![inc("a", 1)], "{plan:#}");
    assert_eq!(delete_now(&plan).len(), 1, "{plan:#}");
}

#[test]
fn max_nodes_total_reached_counts_only_ready_schedulable_nodes_before_capping() {
    // g-2 is cordoned: one ready schedulable node is below the limit of 2, so scale-up is tried,
    // but the estimator may add no node to a cluster of 2: no option.
    let mut objects = full_node("g", "g-1");
    objects.push(node("g", "g-2", "4", "16Gi").set("spec.unschedulable", serde_json::json!(true)));
    objects.push(replicaset("default", "web", 1));
    objects.extend(pending_pods("web", 1, "1", "1Gi"));
    let plan = plan(&objects, &[g()], &["--max-nodes-total=2"]);
    assert_eq!(scale_up_result(&plan), "NoOptionsAvailable", "{plan:#}");
    assert!(increases(&plan).is_empty());
}
