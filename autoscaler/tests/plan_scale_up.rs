//! End-to-end tests of `plan`'s scale-up decisions, one per upstream rule.

mod common;

use common::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Which group

#[test]
fn pending_pod_scales_up_the_group_whose_template_fits() {
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "3", "4Gi"));
    let plan = plan(&objects, &[group("small", 0, 10, "2", "8Gi"), group("large", 0, 10, "8", "32Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "Successful", "{plan:#}");
    assert_eq!(increases(&plan), vec![inc("large", 1)]);
    assert_eq!(pods_triggered(&plan), vec!["default/web-0"]);
}

#[test]
fn pods_fit_existing_nodes_trigger_no_scale_up() {
    let objects =
        with(vec![node("g", "g-1", "4", "16Gi"), replicaset("default", "web", 1)], pending_pods("web", 1, "1", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "NotNeeded", "{plan:#}");
    assert!(increases(&plan).is_empty());
    assert_eq!(pods_fit_existing(&plan), vec!["default/web-0"]);
}

#[test]
fn pods_fit_existing_nodes_consume_the_capacity_they_take() {
    // Room for one 3-cpu pod on the existing node: the second one needs a new node.
    let objects =
        with(vec![node("g", "g-1", "4", "16Gi"), replicaset("default", "web", 2)], pending_pods("web", 2, "3", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(pods_fit_existing(&plan).len(), 1, "{plan:#}");
    assert_eq!(increases(&plan), vec![inc("g", 1)]);
}

#[test]
fn scale_from_zero_uses_the_cloud_config_template() {
    let objects = with(vec![replicaset("default", "web", 3)], pending_pods("web", 3, "1500m", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    // Two 1.5-cpu pods per 4-cpu node.
    assert_eq!(increases(&plan), vec![inc("g", 2)], "{plan:#}");
    let summary = &plan["cluster"]["nodeGroups"][0];
    assert_eq!(summary["template"], "cloud provider");
}

#[test]
fn group_without_template_or_nodes_is_not_ready_for_scale_up() {
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "1", "1Gi"));
    let bare = json!({"id": "bare", "minSize": 0, "maxSize": 5, "nodeSelector": {"pool": "bare"}});
    let plan = plan(&objects, &[bare], &[]);
    assert_eq!(scale_up_result(&plan), "NoOptionsAvailable", "{plan:#}");
    assert_eq!(skipped_reasons(&plan, "bare"), vec!["not ready for scale-up"]);
}

// ---------------------------------------------------------------------------------------------
// Scheduling constraints on templates

#[test]
fn node_selector_picks_the_matching_group() {
    let objects = with(
        vec![replicaset("default", "web", 1)],
        pending_pods("web", 1, "1", "1Gi").into_iter().map(|p| with_node_selector(p, "pool", "b")),
    );
    let plan = plan(&objects, &[group("a", 0, 10, "4", "16Gi"), group("b", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(increases(&plan), vec![inc("b", 1)], "{plan:#}");
}

#[test]
fn node_selector_matching_no_group_leaves_the_pod_pending_with_the_reason() {
    let objects = with(
        vec![replicaset("default", "web", 1)],
        pending_pods("web", 1, "1", "1Gi").into_iter().map(|p| with_node_selector(p, "pool", "nowhere")),
    );
    let plan = plan(&objects, &[group("a", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "NoOptionsAvailable", "{plan:#}");
    let reasons = remain_unschedulable(&plan, "default/web-0").expect("pod stays pending");
    assert_eq!(reasons, vec!["node(s) didn't match Pod's node affinity/selector"]);
}

#[test]
fn tainted_template_needs_a_toleration() {
    let groups = [template_taint(group("ml", 0, 10, "4", "16Gi"), "dedicated", "ml", "NoSchedule")];
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "1", "1Gi"));
    let plan1 = plan(&objects, &groups, &[]);
    assert!(increases(&plan1).is_empty(), "{plan1:#}");
    let reasons = remain_unschedulable(&plan1, "default/web-0").expect("pod stays pending");
    assert!(reasons.iter().any(|r| r.contains("untolerated taint")), "{reasons:?}");

    let objects = with(
        vec![replicaset("default", "web", 1)],
        pending_pods("web", 1, "1", "1Gi").into_iter().map(|p| tolerating(p, "dedicated", "ml", "NoSchedule")),
    );
    let plan2 = plan(&objects, &groups, &[]);
    assert_eq!(increases(&plan2), vec![inc("ml", 1)], "{plan2:#}");
}

#[test]
fn gpu_request_scales_up_the_gpu_group() {
    let gpu = template_resource(group("gpu", 0, 4, "8", "32Gi"), "nvidia.com/gpu", "2");
    let groups = [group("cpu", 0, 10, "8", "32Gi"), gpu];
    let objects = with(
        vec![replicaset("default", "train", 1)],
        pending_pods("train", 1, "1", "1Gi").into_iter().map(|p| with_request(p, "nvidia.com/gpu", "1")),
    );
    let plan = plan(&objects, &groups, &[]);
    assert_eq!(increases(&plan), vec![inc("gpu", 1)], "{plan:#}");
}

#[test]
fn gpu_request_no_template_offers_stays_pending() {
    let objects = with(
        vec![replicaset("default", "train", 1)],
        pending_pods("train", 1, "1", "1Gi").into_iter().map(|p| with_request(p, "nvidia.com/gpu", "1")),
    );
    let plan = plan(&objects, &[group("cpu", 0, 10, "8", "32Gi")], &[]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    let reasons = remain_unschedulable(&plan, "default/train-0").expect("pod stays pending");
    assert_eq!(reasons, vec!["Insufficient nvidia.com/gpu"]);
}

#[test]
fn daemonsets_are_part_of_scale_from_zero_templates() {
    // The DaemonSet takes 3 of the template's 4 cpus: a 2-cpu pod no longer fits a new node.
    let objects = with(
        vec![replicaset("default", "web", 1), daemonset("kube-system", "agent", "3", "1Gi")],
        pending_pods("web", 1, "2", "1Gi"),
    );
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    let reasons = remain_unschedulable(&plan, "default/web-0").expect("pod stays pending");
    assert_eq!(reasons, vec!["Insufficient cpu"]);
}

#[test]
fn daemonset_pods_of_the_template_node_count_against_new_nodes() {
    // The template comes from g-1, whose DaemonSet pod takes 3 of its 4 cpus.
    let objects = vec![
        node("g", "g-1", "4", "16Gi"),
        daemonset("kube-system", "agent", "3", "1Gi"),
        daemonset_pod("kube-system", "agent", "g-1", "3", "1Gi"),
        replicaset("default", "web", 1),
        pending_pods("web", 1, "2", "1Gi").remove(0),
    ];
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    assert_eq!(plan["cluster"]["nodeGroups"][0]["template"], "node g-1");
    let reasons = remain_unschedulable(&plan, "default/web-0").expect("pod stays pending");
    assert_eq!(reasons, vec!["Insufficient cpu"]);
}

// ---------------------------------------------------------------------------------------------
// Pods that never trigger scale-up

#[test]
fn expendable_pods_never_trigger_scale_up() {
    let objects = with(
        vec![replicaset("default", "web", 1)],
        pending_pods("web", 1, "1", "1Gi").into_iter().map(|p| with_priority(p, -20)),
    );
    let groups = [group("g", 0, 10, "4", "16Gi")];
    let plan1 = plan(&objects, &groups, &[]);
    assert_eq!(scale_up_result(&plan1), "NotNeeded", "{plan1:#}");
    assert!(pod_ignored(&plan1, "default/web-0").is_some());
    let plan2 = plan(&objects, &groups, &["--expendable-pods-priority-cutoff=-30"]);
    assert_eq!(increases(&plan2), vec![inc("g", 1)], "{plan2:#}");
}

#[test]
fn pod_at_the_expendable_cutoff_is_not_expendable() {
    let objects = with(
        vec![replicaset("default", "web", 1)],
        pending_pods("web", 1, "1", "1Gi").into_iter().map(|p| with_priority(p, -10)),
    );
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

#[test]
fn daemonset_pods_never_trigger_scale_up() {
    let objects = vec![
        daemonset("kube-system", "agent", "1", "1Gi"),
        unschedulable(owned_by(pod("kube-system", "agent-x", "1", "1Gi").label("app", "agent"), "DaemonSet", "agent")),
    ];
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "NotNeeded", "{plan:#}");
    assert!(pod_ignored(&plan, "kube-system/agent-x").is_some(), "{plan:#}");
}

#[test]
fn pods_not_marked_unschedulable_are_left_to_the_scheduler() {
    // Pending without a PodScheduled=False/Unschedulable condition: the scheduler has not tried yet.
    let mut p = owned_by(pod("default", "web-0", "1", "1Gi"), "ReplicaSet", "web");
    p = p.set("status", json!({"phase": "Pending"}));
    let plan = plan(&[replicaset("default", "web", 1), p], &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "NotNeeded", "{plan:#}");
}

// ---------------------------------------------------------------------------------------------
// Timing

/// Two minutes before NOW minus `secs` seconds... i.e. a pod created `secs` seconds before NOW.
fn created_secs_before_now(secs: u32) -> String {
    let total = 12 * 3600 - secs;
    format!("2026-11-21T{:02}:{:02}:{:02}Z", total / 3600, total % 3600 / 60, total % 60)
}

fn young_pod(age_secs: u32) -> Vec<Value> {
    let p = pending_pods("web", 1, "1", "1Gi").remove(0).created(&created_secs_before_now(age_secs));
    vec![replicaset("default", "web", 1), p]
}

#[test]
fn new_pod_scale_up_delay_ignores_younger_pods() {
    let groups = [group("g", 0, 10, "4", "16Gi")];
    let plan1 = plan(&young_pod(30), &groups, &["--new-pod-scale-up-delay=1m"]);
    assert_eq!(scale_up_result(&plan1), "NotNeeded", "{plan1:#}");
    assert!(pod_ignored(&plan1, "default/web-0").is_some());
    let plan2 = plan(&young_pod(90), &groups, &["--new-pod-scale-up-delay=1m"]);
    assert_eq!(increases(&plan2), vec![inc("g", 1)], "{plan2:#}");
}

#[test]
fn pod_exactly_as_old_as_the_scale_up_delay_still_waits() {
    // Upstream considers a pod only when its age is strictly greater than the delay.
    let plan = plan(&young_pod(60), &[group("g", 0, 10, "4", "16Gi")], &["--new-pod-scale-up-delay=1m"]);
    assert_eq!(scale_up_result(&plan), "NotNeeded", "{plan:#}");
    assert!(pod_ignored(&plan, "default/web-0").is_some(), "{plan:#}");
}

#[test]
fn pod_scale_up_delay_annotation_lengthens_the_delay() {
    let mut objects = young_pod(300);
    objects[1] = objects[1].clone().annotate("cluster-autoscaler.kubernetes.io/pod-scale-up-delay", "600s");
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "NotNeeded", "{plan:#}");
    assert!(pod_ignored(&plan, "default/web-0").is_some(), "{plan:#}");
}

#[test]
fn pod_scale_up_delay_annotation_cannot_shorten_the_delay() {
    let mut objects = young_pod(30);
    objects[1] = objects[1].clone().annotate("cluster-autoscaler.kubernetes.io/pod-scale-up-delay", "10s");
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &["--new-pod-scale-up-delay=1m"]);
    assert_eq!(scale_up_result(&plan), "NotNeeded", "{plan:#}");
    assert!(pod_ignored(&plan, "default/web-0").is_some(), "{plan:#}");
}

#[test]
fn pods_younger_than_two_seconds_put_scale_up_in_cooldown() {
    let plan = plan(&young_pod(1), &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "InCooldown", "{plan:#}");
    assert!(increases(&plan).is_empty());
    // Scale-down is skipped in that loop too.
    assert_eq!(plan["scaleDown"]["status"], "InCooldown", "{plan:#}");
}

#[test]
fn gpu_pods_younger_than_thirty_seconds_put_scale_up_in_cooldown() {
    let gpu = template_resource(group("gpu", 0, 4, "8", "32Gi"), "nvidia.com/gpu", "2");
    let mut objects = young_pod(20);
    objects[1] = with_request(objects[1].clone(), "nvidia.com/gpu", "1");
    let plan1 = plan(&objects, std::slice::from_ref(&gpu), &[]);
    assert_eq!(scale_up_result(&plan1), "InCooldown", "{plan1:#}");
    let mut objects = young_pod(40);
    objects[1] = with_request(objects[1].clone(), "nvidia.com/gpu", "1");
    let plan2 = plan(&objects, &[gpu], &[]);
    assert_eq!(increases(&plan2), vec![inc("gpu", 1)], "{plan2:#}");
}

// ---------------------------------------------------------------------------------------------
// Group sizes

#[test]
fn missing_nodes_of_a_groups_target_are_upcoming_for_a_fresh_autoscaler() {
    // Target 3 with one registered node. Upstream's upcoming nodes are what the target still owes
    // beyond the started nodes, whoever asked for them (`GetUpcomingNodes` reads the target size,
    // not the autoscaler's own scale-up requests): a freshly started autoscaler — one restarted
    // while the nodes build — counts the two missing nodes as on their way, the pending pods fit
    // on them, and no second scale-up is asked for.
    let g = group("g", 0, 10, "4", "16Gi").set("targetSize", json!(3));
    let mut objects = full_node("g", "g-1");
    objects.push(replicaset("default", "web", 2));
    objects.extend(pending_pods("web", 2, "3", "1Gi"));
    let plan = plan(&objects, &[g], &[]);
    assert_eq!(plan["cluster"]["nodeGroups"][0]["upcoming"], 2, "{plan:#}");
    assert_eq!(pods_fit_existing(&plan).len(), 2, "{plan:#}");
    assert!(increases(&plan).is_empty(), "{plan:#}");
}

#[test]
fn zero_or_max_group_scales_straight_to_max() {
    let g = group_option(group("slice", 0, 4, "4", "16Gi"), "zeroOrMaxNodeScaling", json!(true));
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "1", "1Gi"));
    let plan = plan(&objects, &[g], &[]);
    assert_eq!(increases(&plan), vec![inc("slice", 4)], "{plan:#}");
}

// ---------------------------------------------------------------------------------------------
// Pods waiting for preemption

#[test]
fn pods_nominated_to_an_existing_node_wait_for_preemption_and_take_its_room() {
    // `urgent` preempted its way onto g-1 (nominatedNodeName) and waits there for `filler` to go:
    // it does not trigger a scale-up, and the room it will take is not offered to `web-0`.
    let urgent = with_priority(pending_pods("urgent", 1, "3", "1Gi").remove(0), 1000)
        .set("status.nominatedNodeName", json!("g-1"));
    let mut objects = full_node("g", "g-1");
    objects[2] = with_priority(objects[2].clone(), -5);
    objects.extend([
        replicaset("default", "urgent", 1),
        replicaset("default", "web", 1),
        urgent,
        pending_pods("web", 1, "1500m", "1Gi").remove(0),
    ]);
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
    assert_eq!(pods_triggered(&plan), vec!["default/web-0"], "{plan:#}");
}

#[test]
fn pods_nominated_to_an_existing_node_with_room_take_it() {
    let urgent = with_priority(pending_pods("urgent", 1, "3", "1Gi").remove(0), 1000)
        .set("status.nominatedNodeName", json!("g-1"));
    let objects = vec![
        node("g", "g-1", "4", "16Gi"),
        replicaset("default", "urgent", 1),
        replicaset("default", "web", 1),
        urgent,
        pending_pods("web", 1, "1500m", "1Gi").remove(0),
    ];
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
    assert_eq!(pods_triggered(&plan), vec!["default/web-0"], "{plan:#}");
}

#[test]
fn pods_nominated_to_a_missing_node_are_ordinary_pending_pods() {
    let urgent = pending_pods("urgent", 1, "3", "1Gi").remove(0).set("status.nominatedNodeName", json!("gone"));
    let objects = vec![replicaset("default", "urgent", 1), urgent];
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

// ---------------------------------------------------------------------------------------------
// More scheduling constraints

#[test]
fn required_node_affinity_picks_the_matching_group() {
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd", "nvme"]}]}
    ]}}});
    let objects = with(
        vec![replicaset("default", "web", 1)],
        pending_pods("web", 1, "1", "1Gi").into_iter().map(|p| p.set("spec.affinity", affinity.clone())),
    );
    let groups = [
        template_label(group("hdd", 0, 10, "4", "16Gi"), "disk", "hdd"),
        template_label(group("nvme", 0, 10, "8", "32Gi"), "disk", "nvme"),
    ];
    let plan = plan(&objects, &groups, &[]);
    assert_eq!(increases(&plan), vec![inc("nvme", 1)], "{plan:#}");
}

#[test]
fn pod_anti_affinity_on_hostname_needs_one_node_per_pod() {
    let anti = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    ]}});
    let objects = with(
        vec![replicaset("default", "web", 3)],
        pending_pods("web", 3, "100m", "100Mi").into_iter().map(|p| p.set("spec.affinity", anti.clone())),
    );
    let plan = plan(&objects, &[group("g", 0, 10, "16", "64Gi")], &[]);
    assert_eq!(increases(&plan), vec![inc("g", 3)], "{plan:#}");
}

#[test]
fn pods_annotated_as_daemonset_pods_never_trigger_scale_up() {
    let p =
        pending_pods("web", 1, "1", "1Gi").remove(0).annotate("cluster-autoscaler.kubernetes.io/daemonset-pod", "true");
    let plan = plan(&[replicaset("default", "web", 1), p], &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "NotNeeded", "{plan:#}");
    assert!(pod_ignored(&plan, "default/web-0").is_some(), "{plan:#}");
}

#[test]
fn too_many_unready_nodes_stop_all_scaling() {
    // 4 of 5 nodes unready: more than 3 and more than 45%.
    let mut objects = vec![node("g", "g-0", "4", "16Gi")];
    for i in 1..=4 {
        objects.push(not_ready(node("g", &format!("g-{i}"), "4", "16Gi")));
    }
    objects.push(replicaset("default", "web", 1));
    objects.extend(pending_pods("web", 1, "8", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 10, "16", "64Gi")], &[]);
    assert_eq!(plan["cluster"]["healthy"], false, "{plan:#}");
    assert_eq!(scale_up_result(&plan), "NotTried", "{plan:#}");
    assert!(increases(&plan).is_empty());
    assert!(delete_now(&plan).is_empty(), "{plan:#}");
}

#[test]
fn three_unready_nodes_are_tolerated() {
    // 3 of 4 unready: above 45% but not above --ok-total-unready-count.
    let mut objects = vec![node("g", "g-0", "4", "16Gi")];
    for i in 1..=3 {
        objects.push(not_ready(node("g", &format!("g-{i}"), "4", "16Gi")));
    }
    objects.push(replicaset("default", "web", 1));
    objects.extend(pending_pods("web", 1, "8", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 10, "16", "64Gi")], &[]);
    assert_eq!(plan["cluster"]["healthy"], true, "{plan:#}");
}

// ---------------------------------------------------------------------------------------------
// Templates

#[test]
fn unready_node_is_not_the_template_when_the_provider_has_one() {
    // The only node of `g` is unready: the cloud-config template (4 cpu) is used, not the 16-cpu node.
    let objects = vec![
        not_ready(node("g", "g-1", "16", "64Gi")),
        replicaset("default", "web", 1),
        pending_pods("web", 1, "6", "1Gi").remove(0),
    ];
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(plan["cluster"]["nodeGroups"][0]["template"], "cloud provider", "{plan:#}");
    assert!(increases(&plan).is_empty(), "{plan:#}");
}

#[test]
fn ready_node_is_the_template_over_the_cloud_config() {
    // g-1 has 16 cpus although the cloud-config says 4: the real node wins.
    let objects = vec![
        node("g", "g-1", "16", "64Gi"),
        replicaset("default", "big", 1),
        running_on(owned_by(pod("default", "big-0", "15", "1Gi").label("app", "big"), "ReplicaSet", "big"), "g-1"),
        replicaset("default", "web", 1),
        pending_pods("web", 1, "6", "1Gi").remove(0),
    ];
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(plan["cluster"]["nodeGroups"][0]["template"], "node g-1", "{plan:#}");
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

#[test]
fn mirror_pods_of_the_template_node_count_against_new_nodes() {
    let objects = vec![
        node("g", "g-1", "4", "16Gi"),
        running_on(mirror(pod("kube-system", "etcd-g-1", "3", "1Gi")), "g-1"),
        replicaset("default", "web", 1),
        pending_pods("web", 1, "2", "1Gi").remove(0),
    ];
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    assert_eq!(remain_unschedulable(&plan, "default/web-0"), Some(vec!["Insufficient cpu".to_string()]));
}

#[test]
fn daemonsets_that_would_not_run_on_the_template_are_left_out() {
    let ds = daemonset("kube-system", "agent", "3", "1Gi").set_key(
        "spec.template.spec.nodeSelector",
        "pool",
        json!("other"),
    );
    let objects = with(vec![replicaset("default", "web", 1), ds], pending_pods("web", 1, "2", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(increases(&plan), vec![inc("g", 1)], "{plan:#}");
}

#[test]
fn ephemeral_storage_request_needs_a_template_offering_it() {
    let objects = with(
        vec![replicaset("default", "web", 1)],
        pending_pods("web", 1, "1", "1Gi").into_iter().map(|p| with_request(p, "ephemeral-storage", "10Gi")),
    );
    let without = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert!(increases(&without).is_empty(), "{without:#}");
    assert_eq!(
        remain_unschedulable(&without, "default/web-0"),
        Some(vec!["Insufficient ephemeral-storage".to_string()])
    );
    let with_storage = template_resource(group("g", 0, 10, "4", "16Gi"), "ephemeral-storage", "100Gi");
    let plan2 = plan(&objects, &[with_storage], &[]);
    assert_eq!(increases(&plan2), vec![inc("g", 1)], "{plan2:#}");
}

#[test]
fn zero_or_max_group_is_skipped_when_its_max_would_break_max_nodes_total() {
    let g = group_option(group("slice", 0, 4, "4", "16Gi"), "zeroOrMaxNodeScaling", json!(true));
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "1", "1Gi"));
    let plan = plan(&objects, &[g], &["--max-nodes-total=3"]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    assert_eq!(skipped_reasons(&plan, "slice"), vec!["atomic scale-up exceeds cluster node count limit"]);
}

#[test]
fn unhealthy_group_is_not_ready_for_scale_up() {
    // `sick` has 4 of 5 nodes unready (the cluster as a whole is still healthy): it is skipped.
    let mut objects: Vec<Value> =
        full_node("sick", "sick-0").into_iter().filter(|o| o["kind"] != "ReplicaSet").collect();
    for i in 1..=4 {
        objects.push(not_ready(node("sick", &format!("sick-{i}"), "4", "16Gi")));
    }
    for i in 0..6 {
        objects.extend(full_node("fine", &format!("fine-{i}")).into_iter().filter(|o| o["kind"] != "ReplicaSet"));
    }
    objects.push(replicaset("default", "filler", 7));
    objects.push(replicaset("default", "web", 1));
    objects.extend(pending_pods("web", 1, "3", "1Gi"));
    let groups = [group("sick", 0, 10, "4", "16Gi"), group("fine", 0, 10, "4", "16Gi")];
    let plan = plan(&objects, &groups, &[]);
    assert_eq!(plan["cluster"]["healthy"], true, "{plan:#}");
    assert_eq!(skipped_reasons(&plan, "sick"), vec!["not ready for scale-up"], "{plan:#}");
    assert_eq!(increases(&plan), vec![inc("fine", 1)], "{plan:#}");
}

#[test]
fn a_fresh_autoscaler_finds_a_group_far_below_its_target_unhealthy_but_counts_its_missing_nodes() {
    // Upstream's expectation: target 5 with 1 registered node and no scale-up request of its own
    // is 4 unjustified missing nodes (more than 3 and 45 % of 1): the group is unhealthy for
    // scale-up. Its 4 missing nodes are upcoming all the same (the target owes them): 4 of the 5
    // pending pods fit on them, and the fifth goes to the healthy group.
    // Three nodes filled by one ReplicaSet of three replicas (listed once).
    let mut objects = Vec::new();
    for (group, node) in [("short", "short-0"), ("fine", "fine-0"), ("fine", "fine-1")] {
        objects.extend(full_node(group, node).into_iter().filter(|o| o["kind"] != "ReplicaSet"));
    }
    objects.push(replicaset("default", "filler", 3));
    objects.push(replicaset("default", "web", 5));
    objects.extend(pending_pods("web", 5, "3", "1Gi"));
    let short = group("short", 0, 10, "4", "16Gi").set_key("", "targetSize", json!(5));
    let groups = [short, group("fine", 0, 10, "4", "16Gi")];
    let plan = plan(&objects, &groups, &[]);
    let summary = plan["cluster"]["nodeGroups"].as_array().unwrap().iter().find(|g| g["id"] == "short").cloned();
    let summary = summary.unwrap_or_else(|| panic!("short in the summary: {plan:#}"));
    assert_eq!((summary["healthy"].clone(), summary["upcoming"].clone()), (json!(false), json!(4)), "{plan:#}");
    assert_eq!(pods_fit_existing(&plan).len(), 4, "{plan:#}");
    assert_eq!(skipped_reasons(&plan, "short"), vec!["not ready for scale-up"], "{plan:#}");
    assert_eq!(increases(&plan), vec![inc("fine", 1)], "{plan:#}");
}

#[test]
fn expendable_pods_leave_their_room_to_pending_pods() {
    // The node is full of an expendable pod: the autoscaler does not see it, so the pending pod fits.
    let mut objects = full_node("g", "g-1");
    objects[2] = with_priority(objects[2].clone(), -100);
    objects.push(replicaset("default", "web", 1));
    objects.extend(pending_pods("web", 1, "3", "1Gi"));
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(scale_up_result(&plan), "NotNeeded", "{plan:#}");
    assert_eq!(pods_fit_existing(&plan), vec!["default/web-0"]);
}

#[test]
fn pods_of_a_scheduler_outside_allowed_scheduler_names_are_ignored() {
    let p = pending_pods("web", 1, "1", "1Gi").remove(0).set("spec.schedulerName", json!("volcano"));
    let objects = vec![replicaset("default", "web", 1), p];
    let groups = [group("g", 0, 10, "4", "16Gi")];
    let plan1 = plan(&objects, &groups, &[]);
    assert_eq!(increases(&plan1), vec![inc("g", 1)], "{plan1:#}");
    let plan2 = plan(&objects, &groups, &["--allowed-scheduler-names=default-scheduler"]);
    assert_eq!(scale_up_result(&plan2), "NotNeeded", "{plan2:#}");
}

#[test]
fn higher_priority_pending_pods_get_existing_room_first() {
    let low = pending_pods("a-low", 1, "3", "1Gi").remove(0);
    let high = with_priority(pending_pods("z-high", 1, "3", "1Gi").remove(0), 100);
    let objects = vec![
        node("g", "g-1", "4", "16Gi"),
        replicaset("default", "a-low", 1),
        replicaset("default", "z-high", 1),
        low,
        high,
    ];
    let plan = plan(&objects, &[group("g", 0, 10, "4", "16Gi")], &[]);
    assert_eq!(pods_fit_existing(&plan), vec!["default/z-high-0"], "{plan:#}");
    assert_eq!(pods_triggered(&plan), vec!["default/a-low-0"], "{plan:#}");
}

#[test]
fn pod_count_capacity_limits_pods_per_new_node() {
    let g = group("g", 0, 10, "16", "64Gi").set_key("template.status.capacity", "pods", json!("2"));
    let objects = with(vec![replicaset("default", "web", 3)], pending_pods("web", 3, "10m", "10Mi"));
    let plan = plan(&objects, &[g], &[]);
    assert_eq!(increases(&plan), vec![inc("g", 2)], "{plan:#}");
}

// ---------------------------------------------------------------------------------------------
// Upstream flags

#[test]
fn pods_of_bypassed_schedulers_trigger_a_scale_up_before_their_scheduler_marks_them() {
    // A pod of scheduler `batch` that the scheduler has not processed yet: no PodScheduled
    // condition. Only with --bypassed-scheduler-names=batch does it count as unschedulable.
    let mut objects = vec![replicaset("default", "web", 1)];
    let fresh = owned_by(pod("default", "web-0", "1", "1Gi").label("app", "web"), "ReplicaSet", "web")
        .set("spec.schedulerName", json!("batch"))
        .set("status", json!({"phase": "Pending"}));
    objects.push(fresh);
    let g = group("g", 0, 10, "4", "16Gi");
    let without = plan(&objects, std::slice::from_ref(&g), &[]);
    assert!(increases(&without).is_empty(), "{without:#}");
    let with = plan(&objects, std::slice::from_ref(&g), &["--bypassed-scheduler-names=batch"]);
    assert_eq!(increases(&with), vec![inc("g", 1)], "{with:#}");
    assert_eq!(with["cluster"]["schedulerUnprocessedPods"], 1, "{with:#}");
}

#[test]
fn startup_taint_prefixes_make_nodes_not_ready_and_leave_templates() {
    // A node still initializing (`example.com/initializing`, a prefix given by flag) is not ready:
    // with the prefix the cluster counts it unready, without it ready.
    let objects = vec![taint(node("g", "g-0", "4", "16Gi"), "example.com/initializing", "", "NoSchedule")];
    let g = group("g", 0, 10, "4", "16Gi");
    let plain = plan(&objects, std::slice::from_ref(&g), &[]);
    assert_eq!(plain["cluster"]["readyNodes"], 1, "{plain:#}");
    let prefixed = plan(&objects, std::slice::from_ref(&g), &["--startup-taint-prefix=example.com/"]);
    assert_eq!(prefixed["cluster"]["readyNodes"], 0, "{prefixed:#}");
}
