//! End-to-end tests of `plan`'s choice among node groups: the expanders (least-waste, most-pods,
//! least-nodes, price, priority and chains) and `--balance-similar-node-groups`.

mod common;

use common::*;
use serde_json::{Value, json};

/// Groups `lean` (4 cpu / 16 GiB) and `roomy` (16 cpu / 64 GiB) both fit a 3-cpu / 12-GiB pod;
/// `lean` wastes less.
fn lean_and_roomy() -> (Vec<Value>, Vec<Value>) {
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "3", "12Gi"));
    (objects, vec![group("roomy", 0, 10, "16", "64Gi"), group("lean", 0, 10, "4", "16Gi")])
}

#[test]
fn least_waste_is_the_default_expander() {
    let (objects, groups) = lean_and_roomy();
    let plan = plan(&objects, &groups, &[]);
    assert_eq!(plan["scaleUp"]["chosenOption"], "lean", "{plan:#}");
    assert_eq!(increases(&plan), vec![inc("lean", 1)]);
}

#[test]
fn most_pods_expander_picks_the_option_scheduling_most_pods() {
    // `big` (label disk=ssd) takes all three pods on one node, `small` only the plain one; least-waste
    // would pick `small`.
    let mut objects = vec![replicaset("default", "plain", 1), replicaset("default", "ssd", 2)];
    objects.extend(pending_pods("plain", 1, "1", "1Gi"));
    objects.extend(pending_pods("ssd", 2, "1", "1Gi").into_iter().map(|p| with_node_selector(p, "disk", "ssd")));
    let groups = [template_label(group("big", 0, 10, "16", "64Gi"), "disk", "ssd"), group("small", 0, 10, "2", "8Gi")];
    let least_waste = plan(&objects, &groups, &[]);
    assert_eq!(least_waste["scaleUp"]["chosenOption"], "small", "{least_waste:#}");
    let most_pods = plan(&objects, &groups, &["--expander=most-pods"]);
    assert_eq!(most_pods["scaleUp"]["chosenOption"], "big", "{most_pods:#}");
    assert_eq!(pods_triggered(&most_pods).len(), 3);
}

#[test]
fn least_nodes_expander_picks_the_option_with_fewest_nodes() {
    // Four 2-cpu pods: `two` needs 2 nodes (no waste), `one` needs 1 node but wastes memory.
    let objects = with(vec![replicaset("default", "web", 4)], pending_pods("web", 4, "2", "2Gi"));
    let groups = [group("two", 0, 10, "4", "8Gi"), group("one", 0, 10, "8", "32Gi")];
    let least_waste = plan(&objects, &groups, &[]);
    assert_eq!(increases(&least_waste), vec![inc("two", 2)], "{least_waste:#}");
    let least_nodes = plan(&objects, &groups, &["--expander=least-nodes"]);
    assert_eq!(increases(&least_nodes), vec![inc("one", 1)], "{least_nodes:#}");
}

#[test]
fn price_expander_picks_the_cheaper_group() {
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "1", "1Gi"));
    let dear = group("dear", 0, 10, "2", "8Gi").set("pricePerHour", json!(0.20));
    let cheap = group("cheap", 0, 10, "2", "8Gi").set("pricePerHour", json!(0.10));
    for groups in [[dear.clone(), cheap.clone()], [cheap.clone(), dear.clone()]] {
        let plan = plan(&objects, &groups, &["--expander=price"]);
        assert_eq!(increases(&plan), vec![inc("cheap", 1)], "{plan:#}");
    }
}

#[test]
fn priority_expander_picks_the_highest_priority_group() {
    let (mut objects, groups) = lean_and_roomy();
    objects.push(priority_config_map("10:\n  - lean\n50:\n  - roo.*\n"));
    let plan = plan(&objects, &groups, &["--expander=priority"]);
    assert_eq!(increases(&plan), vec![inc("roomy", 1)], "{plan:#}");
}

#[test]
fn priority_expander_regexes_match_substrings_of_group_ids() {
    let (mut objects, groups) = lean_and_roomy();
    objects.push(priority_config_map("10:\n  - ea\n20:\n  - oom\n"));
    let plan = plan(&objects, &groups, &["--expander=priority"]);
    assert_eq!(increases(&plan), vec![inc("roomy", 1)], "{plan:#}");
}

#[test]
fn priority_expander_with_invalid_config_passes_all_options_on() {
    let (mut objects, groups) = lean_and_roomy();
    objects.push(priority_config_map("this is: [not, a priority map"));
    let plan = plan(&objects, &groups, &["--expander=priority,least-waste"]);
    assert_eq!(increases(&plan), vec![inc("lean", 1)], "{plan:#}");
    let events = plan["scaleUp"]["expanderEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["reason"] == "PriorityConfigMapInvalid"), "{plan:#}");
}

#[test]
fn priority_expander_without_config_map_passes_all_options_on() {
    let (objects, groups) = lean_and_roomy();
    let plan = plan(&objects, &groups, &["--expander=priority,least-waste"]);
    assert_eq!(increases(&plan), vec![inc("lean", 1)], "{plan:#}");
}

#[test]
fn expander_chain_priority_then_least_waste_breaks_priority_ties_by_waste() {
    // `high-roomy` and `high-lean` share the top priority; least-waste picks `high-lean`. `low-lean`
    // wastes as little but has the lower priority.
    let objects = with(
        vec![replicaset("default", "web", 1), priority_config_map("10:\n  - ^low-.*\n50:\n  - ^high-.*\n")],
        pending_pods("web", 1, "3", "12Gi"),
    );
    let groups = [
        group("low-lean", 0, 10, "4", "16Gi"),
        group("high-roomy", 0, 10, "16", "64Gi"),
        group("high-lean", 0, 10, "4", "16Gi"),
    ];
    let plan = plan(&objects, &groups, &["--expander=priority,least-waste"]);
    assert_eq!(increases(&plan), vec![inc("high-lean", 1)], "{plan:#}");
}

/// A group selected by providerID only, so that its template carries just `pool=shared` and a zone.
fn zonal_group(id: &str, zone: &str, cpu: &str) -> Value {
    json!({
        "id": id, "minSize": 0, "maxSize": 10,
        "providerIDPrefix": format!("static://{id}/"),
        "template": {
            "metadata": {"labels": {"pool": "shared", "topology.kubernetes.io/zone": zone}},
            "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
        }
    })
}

#[test]
fn balance_similar_node_groups_splits_the_scale_up() {
    let objects = with(vec![replicaset("default", "web", 4)], pending_pods("web", 4, "3", "1Gi"));
    let groups = [zonal_group("zone-a", "a", "4"), zonal_group("zone-b", "b", "4")];
    let plan = plan(&objects, &groups, &["--balance-similar-node-groups"]);
    let mut got = increases(&plan);
    got.sort();
    assert_eq!(got, vec![inc("zone-a", 2), inc("zone-b", 2)], "{plan:#}");
}

#[test]
fn without_balancing_one_group_takes_the_whole_scale_up() {
    let objects = with(vec![replicaset("default", "web", 4)], pending_pods("web", 4, "3", "1Gi"));
    let groups = [zonal_group("zone-a", "a", "4"), zonal_group("zone-b", "b", "4")];
    let plan = plan(&objects, &groups, &[]);
    let got = increases(&plan);
    assert_eq!(got.len(), 1, "{plan:#}");
    assert_eq!(got[0].1, 4);
}

#[test]
fn balancing_does_not_split_across_dissimilar_groups() {
    let objects = with(vec![replicaset("default", "web", 4)], pending_pods("web", 4, "3", "1Gi"));
    // Different cpu capacity: not similar.
    let groups = [zonal_group("zone-a", "a", "4"), zonal_group("zone-b", "b", "5")];
    let plan = plan(&objects, &groups, &["--balance-similar-node-groups"]);
    let got = increases(&plan);
    assert_eq!(got.len(), 1, "{plan:#}");
    assert_eq!(got[0].1, 4);
}

/// A full node of a zonal group (providerID `static://<group>/<name>`).
fn full_zonal_node(group: &str, name: &str) -> Vec<Value> {
    let n = bare_node(name, "4", "16Gi")
        .label("pool", "shared")
        .set("spec.providerID", json!(format!("static://{group}/{name}")));
    vec![
        n,
        running_on(
            owned_by(
                pod("default", &format!("filler-{name}"), "4", "1Gi").label("app", "filler"),
                "ReplicaSet",
                "filler",
            ),
            name,
        ),
    ]
}

#[test]
fn balancing_fills_the_smaller_group_first() {
    // zone-a has 3 nodes, zone-b 1: four new nodes go 1 to a and 3 to b (both end at 4).
    let mut objects = vec![replicaset("default", "filler", 4), replicaset("default", "web", 4)];
    for i in 1..=3 {
        objects.extend(full_zonal_node("zone-a", &format!("a-{i}")));
    }
    objects.extend(full_zonal_node("zone-b", "b-1"));
    objects.extend(pending_pods("web", 4, "3", "1Gi"));
    let groups = [zonal_group("zone-a", "a", "4"), zonal_group("zone-b", "b", "4")];
    let plan = plan(&objects, &groups, &["--balance-similar-node-groups"]);
    let mut got = increases(&plan);
    got.sort();
    assert_eq!(got, vec![inc("zone-a", 1), inc("zone-b", 3)], "{plan:#}");
}

#[test]
fn balancing_respects_each_group_max_size() {
    let objects = with(vec![replicaset("default", "web", 6)], pending_pods("web", 6, "3", "1Gi"));
    let groups = [zonal_group("zone-a", "a", "4"), zonal_group("zone-b", "b", "4").set("maxSize", json!(2))];
    let plan = plan(&objects, &groups, &["--balance-similar-node-groups"]);
    let mut got = increases(&plan);
    got.sort();
    assert_eq!(got, vec![inc("zone-a", 4), inc("zone-b", 2)], "{plan:#}");
}

#[test]
fn balancing_skips_similar_groups_that_cannot_take_the_pods() {
    // zone-b looks the same (taints are not compared) but its taint keeps the pods out.
    let objects = with(vec![replicaset("default", "web", 4)], pending_pods("web", 4, "3", "1Gi"));
    let groups = [
        zonal_group("zone-a", "a", "4"),
        template_taint(zonal_group("zone-b", "b", "4"), "dedicated", "batch", "NoSchedule"),
    ];
    let plan = plan(&objects, &groups, &["--balance-similar-node-groups"]);
    assert_eq!(increases(&plan), vec![inc("zone-a", 4)], "{plan:#}");
}

#[test]
fn zero_or_max_groups_are_never_balanced() {
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "3", "1Gi"));
    let groups = [
        group_option(zonal_group("zone-a", "a", "4").set("maxSize", json!(2)), "zeroOrMaxNodeScaling", json!(true)),
        group_option(zonal_group("zone-b", "b", "4").set("maxSize", json!(2)), "zeroOrMaxNodeScaling", json!(true)),
    ];
    let plan = plan(&objects, &groups, &["--balance-similar-node-groups"]);
    let got = increases(&plan);
    assert_eq!(got.len(), 1, "{plan:#}");
    assert_eq!(got[0].1, 2);
}

#[test]
fn price_expander_keeps_pods_without_gpus_off_gpu_groups() {
    // The GPU group is cheaper, but GPU templates are heavily penalized for pods that need no GPU.
    let objects = with(vec![replicaset("default", "web", 1)], pending_pods("web", 1, "1", "1Gi"));
    let cpu = group("cpu", 0, 10, "4", "16Gi").set("pricePerHour", json!(0.20));
    let gpu =
        template_resource(group("gpu", 0, 10, "4", "16Gi"), "nvidia.com/gpu", "1").set("pricePerHour", json!(0.10));
    let plan = plan(&objects, &[gpu, cpu], &["--expander=price"]);
    assert_eq!(increases(&plan), vec![inc("cpu", 1)], "{plan:#}");
}

#[test]
fn priority_expander_priorities_below_minus_one_never_win() {
    // Upstream's search starts at -1: a lower priority matches nothing, so all options pass on.
    let (mut objects, groups) = lean_and_roomy();
    objects.push(priority_config_map("-5:\n  - roomy\n"));
    let plan = plan(&objects, &groups, &["--expander=priority,least-waste"]);
    assert_eq!(increases(&plan), vec![inc("lean", 1)], "{plan:#}");
}

#[test]
fn priority_expander_drops_groups_no_regex_matches() {
    // Only `roomy` is listed: `lean` is dropped although least-waste would prefer it.
    let (mut objects, groups) = lean_and_roomy();
    objects.push(priority_config_map("1:\n  - roomy\n"));
    let plan = plan(&objects, &groups, &["--expander=priority,least-waste"]);
    assert_eq!(increases(&plan), vec![inc("roomy", 1)], "{plan:#}");
}
