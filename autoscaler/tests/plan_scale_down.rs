//! End-to-end tests of `plan`'s scale-down decisions, one per upstream rule.

mod common;

use common::*;
use serde_json::{Value, json};

/// The usual group: 4-cpu / 16-GiB nodes, min 0.
fn g() -> Value {
    group("g", 0, 10, "4", "16Gi")
}

/// A ReplicaSet pod of `default/<rs>` running on `node`.
fn rs_pod(rs: &str, name: &str, node: &str, cpu: &str, memory: &str) -> Value {
    running_on(owned_by(pod("default", name, cpu, memory).label("app", rs), "ReplicaSet", rs), node)
}

/// `big`: an 8-cpu node of the group, 5 cpus used (62.5%: never a candidate), room for 3 more cpus.
fn roomy_destination() -> Vec<Value> {
    vec![
        node("g", "big", "8", "32Gi"),
        replicaset("default", "steady", 1),
        rs_pod("steady", "steady-0", "big", "5", "1Gi"),
    ]
}

// ---------------------------------------------------------------------------------------------
// Unneeded and utilization

#[test]
fn empty_node_is_unneeded_and_deleted_as_empty() {
    let objects = with(roomy_destination(), [node("g", "g-1", "4", "16Gi")]);
    let plan = plan(&objects, &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["empty"], true);
    assert_eq!(plan["scaleDown"]["deleteNow"]["empty"], json!(["g-1"]));
    assert_eq!(unremovable_reason(&plan, "big").as_deref(), Some("NotUnderutilized"));
}

#[test]
fn node_at_the_utilization_threshold_is_removable() {
    // 2 of 4 cpus: exactly 0.5, and "at or below" the threshold counts.
    let objects = with(
        roomy_destination(),
        [node("g", "g-1", "4", "16Gi"), replicaset("default", "web", 1), rs_pod("web", "web-0", "g-1", "2", "1Gi")],
    );
    let plan = plan(&objects, &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["podsToMove"], json!(["default/web-0"]));
    assert_eq!(plan["scaleDown"]["deleteNow"]["drain"], json!(["g-1"]));
}

#[test]
fn node_above_the_utilization_threshold_is_not_underutilized() {
    let objects = with(
        roomy_destination(),
        [node("g", "g-1", "4", "16Gi"), replicaset("default", "web", 1), rs_pod("web", "web-0", "g-1", "2100m", "1Gi")],
    );
    let plan = plan(&objects, &[g()], &[]);
    let n = unremovable(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unremovable: {plan:#}"));
    assert_eq!(n["reason"], "NotUnderutilized");
    assert_eq!(n["utilization"], json!(0.525));
}

#[test]
fn utilization_is_the_higher_of_cpu_and_memory() {
    // 10% cpu but 75% memory.
    let objects = with(
        roomy_destination(),
        [node("g", "g-1", "4", "16Gi"), replicaset("default", "web", 1), rs_pod("web", "web-0", "g-1", "400m", "12Gi")],
    );
    let plan = plan(&objects, &[g()], &[]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("NotUnderutilized"), "{plan:#}");
}

#[test]
fn scale_down_utilization_threshold_flag_moves_the_bar() {
    let objects = with(
        roomy_destination(),
        [node("g", "g-1", "4", "16Gi"), replicaset("default", "web", 1), rs_pod("web", "web-0", "g-1", "2100m", "1Gi")],
    );
    let plan = plan(&objects, &[g()], &["--scale-down-utilization-threshold=0.6"]);
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn per_group_scale_down_utilization_threshold_overrides_the_flag() {
    let objects = with(
        roomy_destination(),
        [node("g", "g-1", "4", "16Gi"), replicaset("default", "web", 1), rs_pod("web", "web-0", "g-1", "2100m", "1Gi")],
    );
    let group = group_option(g(), "scaleDownUtilizationThreshold", json!(0.6));
    let plan = plan(&objects, &[group], &[]);
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn ignore_daemonsets_utilization_leaves_daemonset_pods_out() {
    let objects = with(
        roomy_destination(),
        [
            node("g", "g-1", "4", "16Gi"),
            daemonset("kube-system", "agent", "2500m", "1Gi"),
            daemonset_pod("kube-system", "agent", "g-1", "2500m", "1Gi"),
        ],
    );
    let plan1 = plan(&objects, &[g()], &[]);
    assert_eq!(unremovable_reason(&plan1, "g-1").as_deref(), Some("NotUnderutilized"), "{plan1:#}");
    let plan2 = plan(&objects, &[g()], &["--ignore-daemonsets-utilization"]);
    let n = unneeded(&plan2, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan2:#}"));
    assert_eq!(n["empty"], true);
    assert_eq!(n["daemonSetPods"], json!(["kube-system/agent-g-1"]));
}

fn gpu_node(name: &str) -> Value {
    with_node_resource(
        node("gpu", name, "4", "16Gi").label("nvidia.com/gpu.product", "Tesla-T4"),
        "nvidia.com/gpu",
        "2",
    )
}

fn gpu_group() -> Value {
    template_resource(
        template_label(group("gpu", 0, 4, "4", "16Gi"), "nvidia.com/gpu.product", "Tesla-T4"),
        "nvidia.com/gpu",
        "2",
    )
}

#[test]
fn gpu_nodes_are_judged_by_gpu_utilization_only() {
    // 75% cpu but no GPU in use: underutilized.
    let objects = with(
        roomy_destination(),
        [gpu_node("gpu-1"), replicaset("default", "web", 1), rs_pod("web", "web-0", "gpu-1", "2", "1Gi")],
    );
    let objects = with(objects, [rs_pod("web", "web-1", "gpu-1", "1", "1Gi")]);
    let plan = plan(&objects, &[g(), gpu_group()], &[]);
    let n = unneeded(&plan, "gpu-1").unwrap_or_else(|| panic!("gpu-1 unneeded: {plan:#}"));
    assert_eq!(n["utilization"], json!(0.0));
}

#[test]
fn scale_down_gpu_utilization_threshold_applies_to_gpu_nodes() {
    // One of two GPUs in use on each node: 0.5. Either node's pod fits on the other.
    let objects = vec![
        gpu_node("gpu-1"),
        gpu_node("gpu-2"),
        replicaset("default", "train", 2),
        with_request(rs_pod("train", "train-0", "gpu-1", "100m", "1Gi"), "nvidia.com/gpu", "1"),
        with_request(rs_pod("train", "train-1", "gpu-2", "100m", "1Gi"), "nvidia.com/gpu", "1"),
    ];
    let plan1 = plan(&objects, &[gpu_group()], &[]);
    let unneeded = plan1["scaleDown"]["unneeded"].as_array().unwrap();
    assert_eq!(unneeded.len(), 1, "{plan1:#}");
    assert_eq!(unneeded[0]["utilization"], json!(0.5));
    let plan2 = plan(&objects, &[gpu_group()], &["--scale-down-gpu-utilization-threshold=0.4"]);
    for node in ["gpu-1", "gpu-2"] {
        let n = unremovable(&plan2, node).unwrap_or_else(|| panic!("{node} unremovable: {plan2:#}"));
        assert_eq!(n["reason"], "NotUnderutilized");
        assert_eq!(n["utilization"], json!(0.5));
    }
}

// ---------------------------------------------------------------------------------------------
// Eligibility

#[test]
fn scale_down_disabled_annotation_keeps_the_node() {
    let n = node("g", "g-1", "4", "16Gi").annotate("cluster-autoscaler.kubernetes.io/scale-down-disabled", "true");
    let plan = plan(&with(roomy_destination(), [n]), &[g()], &[]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("ScaleDownDisabledAnnotation"), "{plan:#}");
}

#[test]
fn group_at_min_size_keeps_its_nodes() {
    let objects = vec![node("g", "g-1", "4", "16Gi"), node("g", "g-2", "4", "16Gi")];
    let plan = plan(&objects, &[group("g", 2, 10, "4", "16Gi")], &[]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("NodeGroupMinSizeReached"), "{plan:#}");
    assert_eq!(unremovable_reason(&plan, "g-2").as_deref(), Some("NodeGroupMinSizeReached"), "{plan:#}");
    assert!(delete_now(&plan).is_empty());
}

#[test]
fn several_removable_nodes_go_only_down_to_min_size() {
    let objects = vec![node("g", "g-1", "4", "16Gi"), node("g", "g-2", "4", "16Gi"), node("g", "g-3", "4", "16Gi")];
    let plan = plan(&objects, &[group("g", 1, 10, "4", "16Gi")], &[]);
    assert_eq!(delete_now(&plan).len(), 2, "{plan:#}");
    let kept: Vec<_> =
        ["g-1", "g-2", "g-3"].into_iter().filter(|n| !delete_now(&plan).contains(&n.to_string())).collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(unremovable_reason(&plan, kept[0]).as_deref(), Some("NodeGroupMinSizeReached"), "{plan:#}");
}

#[test]
fn nodes_in_no_group_are_not_autoscaled() {
    let plan = plan(&with(roomy_destination(), [bare_node("stray", "4", "16Gi")]), &[g()], &[]);
    assert_eq!(unremovable_reason(&plan, "stray").as_deref(), Some("NotAutoscaled"), "{plan:#}");
}

#[test]
fn nodes_tainted_to_be_deleted_are_currently_being_deleted() {
    let n = taint(
        node("g", "g-1", "4", "16Gi"),
        "ToBeDeletedByClusterAutoscaler",
        &(NOW_UNIX - 60).to_string(),
        "NoSchedule",
    );
    let plan = plan(&with(roomy_destination(), [n]), &[g()], &[]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("CurrentlyBeingDeleted"), "{plan:#}");
}

#[test]
fn unready_nodes_are_kept_with_scale_down_unready_disabled() {
    let objects = with(roomy_destination(), [not_ready(node("g", "g-1", "4", "16Gi"))]);
    let plan1 = plan(&objects, &[g()], &[]);
    assert!(unneeded(&plan1, "g-1").is_some(), "{plan1:#}");
    let plan2 = plan(&objects, &[g()], &["--scale-down-unready-enabled=false"]);
    assert_eq!(unremovable_reason(&plan2, "g-1").as_deref(), Some("ScaleDownUnreadyDisabled"), "{plan2:#}");
}

#[test]
fn scale_down_enabled_false_disables_scale_down() {
    let objects = with(roomy_destination(), [node("g", "g-1", "4", "16Gi")]);
    let plan = plan(&objects, &[g()], &["--scale-down-enabled=false"]);
    assert_eq!(plan["scaleDown"]["status"], "Disabled", "{plan:#}");
    assert!(unneeded_nodes(&plan).is_empty());
    assert!(delete_now(&plan).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Drainability

/// g-1 runs `blocker` (plus nothing else); `big` has room for it.
fn node_running(blocker: Value, extra: &[Value]) -> Vec<Value> {
    let mut objects = with(roomy_destination(), [node("g", "g-1", "4", "16Gi"), running_on(blocker, "g-1")]);
    objects.extend(extra.iter().cloned());
    objects
}

fn assert_blocked(plan: &Value, pod: &str, reason: &str) {
    let n = unremovable(plan, "g-1").unwrap_or_else(|| panic!("g-1 unremovable: {plan:#}"));
    assert_eq!(n["reason"], "BlockedByPod", "{plan:#}");
    assert_eq!(n["blockingPod"], pod, "{plan:#}");
    assert_eq!(n["blockingReason"], reason, "{plan:#}");
}

fn web(name: &str) -> Value {
    owned_by(pod("default", name, "1", "1Gi").label("app", "web"), "ReplicaSet", "web")
}

#[test]
fn pod_without_controller_blocks_with_not_replicated() {
    let plan = plan(&node_running(pod("default", "lonely", "1", "1Gi"), &[]), &[g()], &[]);
    assert_blocked(&plan, "default/lonely", "NotReplicated");
}

#[test]
fn kube_system_pod_without_pdb_blocks_with_unmovable_kube_system_pod() {
    let p = owned_by(pod("kube-system", "dns-0", "1", "1Gi").label("app", "dns"), "ReplicaSet", "dns")
        .created("2026-11-21T11:30:00Z");
    let plan = plan(&node_running(p, &[replicaset("kube-system", "dns", 2)]), &[g()], &[]);
    assert_blocked(&plan, "kube-system/dns-0", "UnmovableKubeSystemPod");
}

#[test]
fn kube_system_pod_with_a_pdb_can_move() {
    let p = owned_by(pod("kube-system", "dns-0", "1", "1Gi").label("app", "dns"), "ReplicaSet", "dns")
        .created("2026-11-21T11:30:00Z");
    let plan = plan(
        &node_running(p, &[replicaset("kube-system", "dns", 2), pdb("kube-system", "dns", "dns", 1)]),
        &[g()],
        &[],
    );
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn kube_system_pod_older_than_the_blocking_timeout_can_move() {
    // Created two hours ago, past --blocking-system-pod-distruption-timeout (1h).
    let p = owned_by(pod("kube-system", "dns-0", "1", "1Gi").label("app", "dns"), "ReplicaSet", "dns");
    let plan = plan(&node_running(p, &[replicaset("kube-system", "dns", 2)]), &[g()], &[]);
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn skip_nodes_with_system_pods_false_lets_kube_system_pods_move() {
    let p = owned_by(pod("kube-system", "dns-0", "1", "1Gi").label("app", "dns"), "ReplicaSet", "dns")
        .created("2026-11-21T11:30:00Z");
    let plan = plan(
        &node_running(p, &[replicaset("kube-system", "dns", 2)]),
        &[g()],
        &["--skip-nodes-with-system-pods=false"],
    );
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn pod_with_local_storage_blocks_with_local_storage_requested() {
    let plan =
        plan(&node_running(with_empty_dir(web("web-0"), "scratch"), &[replicaset("default", "web", 1)]), &[g()], &[]);
    assert_blocked(&plan, "default/web-0", "LocalStorageRequested");
}

#[test]
fn memory_backed_empty_dir_is_not_local_storage() {
    let p = web("web-0").push("spec.volumes", json!({"name": "tmp", "emptyDir": {"medium": "Memory"}}));
    let plan = plan(&node_running(p, &[replicaset("default", "web", 1)]), &[g()], &[]);
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn safe_to_evict_local_volumes_annotation_unblocks_listed_volumes() {
    let p = with_empty_dir(web("web-0"), "scratch")
        .annotate("cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes", "scratch");
    let plan = plan(&node_running(p, &[replicaset("default", "web", 1)]), &[g()], &[]);
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn skip_nodes_with_local_storage_false_lets_such_pods_move() {
    let plan = plan(
        &node_running(with_empty_dir(web("web-0"), "scratch"), &[replicaset("default", "web", 1)]),
        &[g()],
        &["--skip-nodes-with-local-storage=false"],
    );
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn pdb_without_disruptions_allowed_blocks_with_not_enough_pdb() {
    let plan = plan(
        &node_running(web("web-0"), &[replicaset("default", "web", 2), pdb("default", "web", "web", 0)]),
        &[g()],
        &[],
    );
    assert_blocked(&plan, "default/web-0", "NotEnoughPdb");
}

#[test]
fn safe_to_evict_false_blocks_with_not_safe_to_evict_annotation() {
    let p = web("web-0").annotate("cluster-autoscaler.kubernetes.io/safe-to-evict", "false");
    let plan = plan(&node_running(p, &[replicaset("default", "web", 1)]), &[g()], &[]);
    assert_blocked(&plan, "default/web-0", "NotSafeToEvictAnnotation");
}

#[test]
fn pod_of_a_missing_controller_blocks_with_controller_not_found() {
    // No ReplicaSet `web` in the dump.
    let plan = plan(&node_running(web("web-0"), &[]), &[g()], &[]);
    assert_blocked(&plan, "default/web-0", "ControllerNotFound");
}

#[test]
fn replicaset_below_min_replica_count_blocks_with_min_replicas_reached() {
    let objects = node_running(web("web-0"), &[replicaset("default", "web", 2)]);
    let plan1 = plan(&objects, &[g()], &["--min-replica-count=3"]);
    assert_blocked(&plan1, "default/web-0", "MinReplicasReached");
    let plan2 = plan(&objects, &[g()], &["--min-replica-count=2"]);
    assert!(unneeded(&plan2, "g-1").is_some(), "{plan2:#}");
}

#[test]
fn safe_to_evict_true_overrides_not_replicated() {
    let p = pod("default", "lonely", "1", "1Gi").annotate("cluster-autoscaler.kubernetes.io/safe-to-evict", "true");
    let plan = plan(&node_running(p, &[]), &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["podsToMove"], json!(["default/lonely"]));
}

#[test]
fn safe_to_evict_true_overrides_local_storage_and_kube_system() {
    let p = with_empty_dir(pod("kube-system", "agent", "1", "1Gi"), "scratch")
        .annotate("cluster-autoscaler.kubernetes.io/safe-to-evict", "true")
        .created("2026-11-21T11:30:00Z");
    let plan = plan(&node_running(p, &[]), &[g()], &[]);
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn safe_to_evict_on_completion_waits_with_blocked_by_on_completion_pod() {
    let p = owned_by(pod("default", "job-0", "1", "1Gi").label("app", "job"), "Job", "job")
        .annotate("cluster-autoscaler.kubernetes.io/safe-to-evict", "on-completion");
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
                     "metadata": {"name": "job", "namespace": "default", "uid": "default-job-uid"},
                     "spec": {"template": {"spec": {"containers": [], "restartPolicy": "Never"}}}});
    let plan = plan(&node_running(p, &[job]), &[g()], &[]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("BlockedByOnCompletionPod"), "{plan:#}");
    assert!(delete_now(&plan).is_empty() || !delete_now(&plan).contains(&"g-1".to_string()));
}

#[test]
fn mirror_pods_do_not_block_scale_down() {
    let p = mirror(pod("kube-system", "kube-proxy-g-1", "100m", "128Mi")).created("2026-11-21T11:30:00Z");
    let plan = plan(&node_running(p, &[]), &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["empty"], true);
}

#[test]
fn terminal_pods_do_not_block_or_count() {
    // A finished Job pod without a controller left: Succeeded with restartPolicy Never.
    let done = running_on(pod("default", "done", "3", "1Gi"), "g-1")
        .set("spec.restartPolicy", json!("Never"))
        .set("status.phase", json!("Succeeded"));
    let failed = running_on(pod("default", "failed", "3", "1Gi"), "g-1").set("status.phase", json!("Failed"));
    let objects = with(roomy_destination(), [node("g", "g-1", "4", "16Gi"), done, failed]);
    let plan = plan(&objects, &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["empty"], true);
    assert_eq!(n["utilization"], json!(0.0));
}

#[test]
fn expendable_pods_do_not_block_scale_down() {
    let p = with_priority(pod("default", "filler", "1", "1Gi"), -100);
    let plan = plan(&node_running(p, &[]), &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["empty"], true);
}

#[test]
fn daemonset_pods_do_not_need_a_new_place() {
    let objects = node_running(
        daemonset_pod("kube-system", "agent", "g-1", "200m", "128Mi").set("spec.nodeName", json!("g-1")),
        &[daemonset("kube-system", "agent", "200m", "128Mi")],
    );
    let plan = plan(&objects, &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["empty"], true);
}

// ---------------------------------------------------------------------------------------------
// Simulation across candidates

#[test]
fn pods_that_cannot_move_keep_the_node_with_no_place_to_move_pods() {
    // The only other node is full.
    let objects = vec![
        node("g", "g-1", "4", "16Gi"),
        node("g", "g-2", "4", "16Gi"),
        replicaset("default", "web", 1),
        rs_pod("web", "web-0", "g-1", "1", "1Gi"),
        replicaset("default", "full", 1),
        rs_pod("full", "full-0", "g-2", "3500m", "1Gi"),
    ];
    let plan = plan(&objects, &[g()], &[]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("NoPlaceToMovePods"), "{plan:#}");
}

#[test]
fn moves_are_remembered_across_candidates() {
    // Two nodes at 45%: either one's pod fits on the other, but not both.
    let objects = vec![
        node("g", "g-1", "4", "16Gi"),
        node("g", "g-2", "4", "16Gi"),
        replicaset("default", "web", 2),
        rs_pod("web", "web-0", "g-1", "1800m", "1Gi"),
        rs_pod("web", "web-1", "g-2", "1800m", "1Gi"),
    ];
    let plan = plan(&objects, &[g()], &[]);
    assert_eq!(unneeded_nodes(&plan).len(), 1, "{plan:#}");
    let kept = if unneeded(&plan, "g-1").is_some() { "g-2" } else { "g-1" };
    assert_eq!(unremovable_reason(&plan, kept).as_deref(), Some("NoPlaceToMovePods"), "{plan:#}");
}

#[test]
fn pdb_budget_is_consumed_across_nodes() {
    // One disruption allowed for the two `db` pods on g-1 and g-2: only one node can go.
    let objects = with(
        roomy_destination(),
        [
            node("g", "g-1", "4", "16Gi"),
            node("g", "g-2", "4", "16Gi"),
            replicaset("default", "db", 2),
            pdb("default", "db", "db", 1),
            rs_pod("db", "db-0", "g-1", "500m", "1Gi"),
            rs_pod("db", "db-1", "g-2", "500m", "1Gi"),
        ],
    );
    let plan = plan(&objects, &[g()], &[]);
    assert_eq!(unneeded_nodes(&plan).len(), 1, "{plan:#}");
    let kept = if unneeded(&plan, "g-1").is_some() { "g-2" } else { "g-1" };
    let n = unremovable(&plan, kept).unwrap_or_else(|| panic!("{kept} unremovable: {plan:#}"));
    assert_eq!(n["reason"], "BlockedByPod", "{plan:#}");
    assert_eq!(n["blockingReason"], "NotEnoughPdb", "{plan:#}");
}

#[test]
fn only_one_node_is_drained_at_a_time_by_default() {
    // Both nodes can be drained onto `big` (3 free cpus), but --max-drain-parallelism is 1.
    let objects = with(
        roomy_destination(),
        [
            node("g", "g-1", "4", "16Gi"),
            node("g", "g-2", "4", "16Gi"),
            replicaset("default", "web", 2),
            rs_pod("web", "web-0", "g-1", "1", "1Gi"),
            rs_pod("web", "web-1", "g-2", "1", "1Gi"),
        ],
    );
    let plan1 = plan(&objects, &[g()], &[]);
    assert_eq!(unneeded_nodes(&plan1).len(), 2, "{plan1:#}");
    assert_eq!(plan1["scaleDown"]["deleteNow"]["drain"].as_array().unwrap().len(), 1, "{plan1:#}");
    let plan2 = plan(&objects, &[g()], &["--max-drain-parallelism=2"]);
    assert_eq!(plan2["scaleDown"]["deleteNow"]["drain"].as_array().unwrap().len(), 2, "{plan2:#}");
}

#[test]
fn ignore_daemonsets_utilization_divides_by_allocatable_minus_daemonset_requests() {
    // 1.1 cpu of the 2 cpus the DaemonSet leaves: 0.55, above the threshold (not 1.1 / 4).
    let objects = with(
        roomy_destination(),
        [
            node("g", "g-1", "4", "16Gi"),
            daemonset("kube-system", "agent", "2", "1Gi"),
            daemonset_pod("kube-system", "agent", "g-1", "2", "1Gi"),
            replicaset("default", "web", 1),
            rs_pod("web", "web-0", "g-1", "1100m", "1Gi"),
        ],
    );
    let plan = plan(&objects, &[g()], &["--ignore-daemonsets-utilization"]);
    let n = unremovable(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unremovable: {plan:#}"));
    assert_eq!(n["reason"], "NotUnderutilized");
    assert_eq!(n["utilization"], json!(0.55));
}

#[test]
fn succeeded_pods_are_not_seen_whatever_their_restart_policy() {
    // The autoscaler lists only pods that are neither Succeeded nor Failed.
    let done = running_on(pod("default", "done", "3", "1Gi"), "g-1")
        .set("spec.restartPolicy", json!("Always"))
        .set("status.phase", json!("Succeeded"));
    let objects = with(roomy_destination(), [node("g", "g-1", "4", "16Gi"), done]);
    let plan = plan(&objects, &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["empty"], true);
}

#[test]
fn node_with_disk_pressure_is_not_ready() {
    // Ready=True but DiskPressure=True: upstream's readiness says not ready.
    let n = node("g", "g-1", "4", "16Gi")
        .push("status.conditions", json!({"type": "DiskPressure", "status": "True", "lastTransitionTime": LONG_AGO}));
    let plan = plan(&with(roomy_destination(), [n]), &[g()], &["--scale-down-unready-enabled=false"]);
    assert_eq!(plan["cluster"]["readyNodes"], 1, "{plan:#}");
    assert_eq!(plan["cluster"]["unreadyNodes"], 1, "{plan:#}");
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("ScaleDownUnreadyDisabled"), "{plan:#}");
}

#[test]
fn node_with_network_unavailable_taint_is_not_ready() {
    let n = taint(node("g", "g-1", "4", "16Gi"), "node.kubernetes.io/network-unavailable", "", "NoSchedule");
    let plan = plan(&with(roomy_destination(), [n]), &[g()], &["--scale-down-unready-enabled=false"]);
    assert_eq!(plan["cluster"]["unreadyNodes"], 1, "{plan:#}");
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("ScaleDownUnreadyDisabled"), "{plan:#}");
}

#[test]
fn pending_pods_that_fit_a_node_count_on_it_for_scale_down() {
    // The pending pod will land on g-1 (g-0 is full), so g-1 is not empty any more: 75% used.
    let objects = with(
        vec![
            node("g", "g-0", "4", "16Gi"),
            replicaset("default", "full", 1),
            rs_pod("full", "full-0", "g-0", "4", "1Gi"),
        ],
        [
            node("g", "g-1", "4", "16Gi"),
            replicaset("default", "web", 1),
            unschedulable(owned_by(pod("default", "web-0", "3", "1Gi").label("app", "web"), "ReplicaSet", "web")),
        ],
    );
    let plan = plan(&objects, &[g()], &[]);
    assert_eq!(plan["scaleUp"]["result"], "NotNeeded", "{plan:#}");
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("NotUnderutilized"), "{plan:#}");
}

#[test]
fn at_most_max_scale_down_parallelism_empty_nodes_go_at_once() {
    let objects: Vec<Value> = (0..12).map(|i| node("g", &format!("g-{i:02}"), "4", "16Gi")).collect();
    let plan1 = plan(&objects, &[g()], &[]);
    assert_eq!(unneeded_nodes(&plan1).len(), 12, "{plan1:#}");
    assert_eq!(delete_now(&plan1).len(), 10, "{plan1:#}");
    let plan2 = plan(&objects, &[g()], &["--max-scale-down-parallelism=3"]);
    assert_eq!(delete_now(&plan2).len(), 3, "{plan2:#}");
}

#[test]
fn kube_system_pod_with_an_exhausted_pdb_blocks_with_not_enough_pdb() {
    let p = owned_by(pod("kube-system", "dns-0", "1", "1Gi").label("app", "dns"), "ReplicaSet", "dns")
        .created("2026-11-21T11:30:00Z");
    let extra = [replicaset("kube-system", "dns", 2), pdb("kube-system", "dns", "dns", 0)];
    let plan = plan(&node_running(p, &extra), &[g()], &[]);
    assert_blocked(&plan, "kube-system/dns-0", "NotEnoughPdb");
}

#[test]
fn pdbs_only_cover_pods_of_their_namespace() {
    let extra = [replicaset("default", "web", 2), pdb("other", "web", "web", 0)];
    let plan = plan(&node_running(web("web-0"), &extra), &[g()], &[]);
    assert!(unneeded(&plan, "g-1").is_some(), "{plan:#}");
}

#[test]
fn owner_reference_that_is_not_the_controller_does_not_replicate() {
    let mut p = web("web-0");
    p["metadata"]["ownerReferences"][0]["controller"] = json!(false);
    let plan = plan(&node_running(p, &[replicaset("default", "web", 2)]), &[g()], &[]);
    assert_blocked(&plan, "default/web-0", "NotReplicated");
}

#[test]
fn statefulset_pods_can_move() {
    let p = owned_by(pod("default", "db-0", "1", "1Gi").label("app", "db"), "StatefulSet", "db");
    let plan = plan(&node_running(p, &[statefulset("default", "db", 3)]), &[g()], &[]);
    let n = unneeded(&plan, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan:#}"));
    assert_eq!(n["podsToMove"], json!(["default/db-0"]));
}

#[test]
fn pods_of_custom_controllers_block_with_not_replicated() {
    // Only ReplicationController, Job, ReplicaSet and StatefulSet count as replicated by default.
    let p = owned_by(pod("default", "thing-0", "1", "1Gi"), "Rollout", "thing");
    let plan1 = plan(&node_running(p.clone(), &[]), &[g()], &[]);
    assert_blocked(&plan1, "default/thing-0", "NotReplicated");
    let plan2 = plan(&node_running(p, &[]), &[g()], &["--skip-nodes-with-custom-controller-pods=false"]);
    assert!(unneeded(&plan2, "g-1").is_some(), "{plan2:#}");
}

// ---------------------------------------------------------------------------------------------
// Zero-or-max groups

fn slice_group() -> Value {
    group_option(group("slice", 0, 2, "4", "16Gi"), "zeroOrMaxNodeScaling", json!(true))
}

#[test]
fn zero_or_max_group_scales_down_as_a_whole() {
    let objects = with(roomy_destination(), [node("slice", "s-1", "4", "16Gi"), node("slice", "s-2", "4", "16Gi")]);
    let plan = plan(&objects, &[g(), slice_group()], &[]);
    let mut deleted = delete_now(&plan);
    deleted.sort();
    assert_eq!(deleted, vec!["s-1", "s-2"], "{plan:#}");
}

#[test]
fn zero_or_max_group_with_a_busy_node_keeps_all_its_nodes() {
    let objects = with(
        roomy_destination(),
        [
            node("slice", "s-1", "4", "16Gi"),
            node("slice", "s-2", "4", "16Gi"),
            replicaset("default", "busy", 1),
            rs_pod("busy", "busy-0", "s-2", "3", "1Gi"),
        ],
    );
    let plan = plan(&objects, &[g(), slice_group()], &[]);
    assert!(delete_now(&plan).is_empty(), "{plan:#}");
    assert_eq!(unremovable_reason(&plan, "s-1").as_deref(), Some("AtomicScaleDownFailed"), "{plan:#}");
    assert_eq!(unremovable_reason(&plan, "s-2").as_deref(), Some("NotUnderutilized"), "{plan:#}");
}

#[test]
fn empty_nodes_go_first_so_pods_cannot_move_onto_them() {
    // g-1 is empty and simulated first: g-2's pod may not count on g-1's room.
    let objects = vec![
        node("g", "g-1", "4", "16Gi"),
        node("g", "g-2", "4", "16Gi"),
        replicaset("default", "web", 1),
        rs_pod("web", "web-0", "g-2", "1", "1Gi"),
    ];
    let plan = plan(&objects, &[g()], &[]);
    assert_eq!(delete_now(&plan), vec!["g-1"], "{plan:#}");
    assert_eq!(unremovable_reason(&plan, "g-2").as_deref(), Some("NoPlaceToMovePods"), "{plan:#}");
}

#[test]
fn nodes_being_deleted_take_no_moved_pods() {
    let deleting = taint(
        node("g", "g-2", "8", "32Gi"),
        "ToBeDeletedByClusterAutoscaler",
        &(NOW_UNIX - 60).to_string(),
        "NoSchedule",
    );
    let objects = vec![
        node("g", "g-1", "4", "16Gi"),
        deleting,
        replicaset("default", "web", 1),
        rs_pod("web", "web-0", "g-1", "1", "1Gi"),
    ];
    let plan = plan(&objects, &[g()], &[]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("NoPlaceToMovePods"), "{plan:#}");
}

#[test]
fn pods_move_only_where_their_constraints_allow() {
    // `big` has room but not the label web-0 needs.
    let p = with_node_selector(web("web-0"), "disk", "ssd");
    let plan = plan(&node_running(p, &[replicaset("default", "web", 1)]), &[g()], &[]);
    assert_eq!(unremovable_reason(&plan, "g-1").as_deref(), Some("NoPlaceToMovePods"), "{plan:#}");
}

#[test]
fn ignore_mirror_pods_utilization_leaves_mirror_pods_out() {
    let p = mirror(pod("kube-system", "etcd-g-1", "3", "1Gi")).created("2026-11-21T11:30:00Z");
    let objects = node_running(p, &[]);
    let plan1 = plan(&objects, &[g()], &[]);
    assert_eq!(unremovable_reason(&plan1, "g-1").as_deref(), Some("NotUnderutilized"), "{plan1:#}");
    let plan2 = plan(&objects, &[g()], &["--ignore-mirror-pods-utilization"]);
    let n = unneeded(&plan2, "g-1").unwrap_or_else(|| panic!("g-1 unneeded: {plan2:#}"));
    assert_eq!(n["utilization"], json!(0.0));
}
