//! End-to-end tests of `plan` with zonal persistent volumes: kube-scheduler's VolumeBinding and
//! VolumeZone rules decide which node group can run a pod, in scale-up and in scale-down.

mod common;

use common::*;
use serde_json::{Value, json};

const ZONE: &str = "topology.kubernetes.io/zone";

/// A node group whose nodes are in `zone`.
fn zonal_group(id: &str, zone: &str, max: usize) -> Value {
    template_label(group(id, 0, max, "4", "16Gi"), ZONE, zone)
}

fn zonal_node(group: &str, name: &str, zone: &str) -> Value {
    node(group, name, "4", "16Gi").label(ZONE, zone)
}

/// The StatefulSet `default/db` pod `db-<ordinal>`, its volume `data` on the claim
/// `data-db-<ordinal>`.
fn db_pod(ordinal: usize, cpu: &str) -> Value {
    owned_by(pod("default", &format!("db-{ordinal}"), cpu, "1Gi").label("app", "db"), "StatefulSet", "db").push(
        "spec.volumes",
        json!({"name": "data", "persistentVolumeClaim": {"claimName": format!("data-db-{ordinal}")}}),
    )
}

/// The claim `data-db-<ordinal>`, bound to `volume`.
fn bound_claim(ordinal: usize, volume: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": format!("data-db-{ordinal}"), "namespace": "default",
                     "uid": format!("claim-{ordinal}-uid"),
                     "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {"storageClassName": "gp3", "accessModes": ["ReadWriteOnce"], "volumeName": volume,
                 "resources": {"requests": {"storage": "10Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}}
    })
}

/// An EBS volume in `zone`, as the CSI driver provisions it (required node affinity on the zone).
fn zonal_volume(name: &str, zone: &str, claim: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": format!("vol-{name}")},
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": format!("data-db-{claim}")},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]}}
        },
        "status": {"phase": "Bound"}
    })
}

fn gp3() -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"
    })
}

/// The StatefulSet, one pending pod bound to a zone-a volume, and a zone-b node with room.
fn zone_a_db() -> Vec<Value> {
    vec![
        statefulset("default", "db", 1),
        unschedulable(db_pod(0, "1")),
        bound_claim(0, "pv-a"),
        zonal_volume("pv-a", "a", 0),
        gp3(),
        zonal_node("zone-b", "b-1", "b"),
    ]
}

#[test]
fn zonal_volume_scales_up_the_group_in_its_zone_and_never_another() {
    let groups = [zonal_group("zone-b", "b", 10), zonal_group("zone-a", "a", 10)];
    for expander in ["random", "least-waste", "most-pods"] {
        let flag = format!("--expander={expander}");
        let plan = plan(&zone_a_db(), &groups, &[&flag]);
        assert_eq!(scale_up_result(&plan), "Successful", "{expander}: {plan:#}");
        assert_eq!(increases(&plan), vec![inc("zone-a", 1)], "{expander}");
        assert_eq!(pods_triggered(&plan), vec!["default/db-0"]);
        assert!(pods_fit_existing(&plan).is_empty(), "the zone-b node has room, but not for this pod: {plan:#}");
        let options: Vec<&str> = plan["scaleUp"]["options"]
            .as_array()
            .expect("options")
            .iter()
            .map(|o| o["nodeGroup"].as_str().unwrap())
            .collect();
        assert_eq!(options, vec!["zone-a"], "zone-b is no option for the pod");
    }
}

#[test]
fn zonal_volume_whose_zone_group_is_full_keeps_the_pod_pending_with_the_scheduler_reason() {
    let groups = [zonal_group("zone-b", "b", 10), zonal_group("zone-a", "a", 0)];
    let plan = plan(&zone_a_db(), &groups, &[]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    let pending = plan["scaleUp"]["podsRemainUnschedulable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == "default/db-0")
        .unwrap_or_else(|| panic!("db-0 stays pending: {plan:#}"))
        .clone();
    assert_eq!(pending["byNodeGroup"]["zone-b"], json!(["node(s) had volume node affinity conflict"]), "{plan:#}");
    assert!(pending["reasons"].as_array().unwrap().contains(&json!("node(s) had volume node affinity conflict")));
}

#[test]
fn missing_claim_keeps_the_pod_pending_on_every_group() {
    let objects = vec![statefulset("default", "db", 1), unschedulable(db_pod(0, "1")), gp3()];
    let plan = plan(&objects, &[zonal_group("zone-a", "a", 10), zonal_group("zone-b", "b", 10)], &[]);
    assert!(increases(&plan).is_empty(), "{plan:#}");
    let reasons = remain_unschedulable(&plan, "default/db-0").expect("db-0 stays pending");
    assert_eq!(reasons, vec!["persistentvolumeclaim \"data-db-0\" not found"]);
}

#[test]
fn wait_for_first_consumer_claim_follows_allowed_topologies() {
    let class = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "gp3-b"}, "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": ["b"]}]}]
    });
    let claim = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-db-0", "namespace": "default"},
        "spec": {"storageClassName": "gp3-b", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "10Gi"}}},
        "status": {"phase": "Pending"}
    });
    let objects = vec![statefulset("default", "db", 1), unschedulable(db_pod(0, "1")), class, claim];
    let plan = plan(&objects, &[zonal_group("zone-a", "a", 10), zonal_group("zone-b", "b", 10)], &[]);
    assert_eq!(increases(&plan), vec![inc("zone-b", 1)], "{plan:#}");
}

#[test]
fn scale_down_moves_a_pod_with_a_zonal_volume_only_within_its_zone() {
    // a-1 is underutilized; its pod could fit on b-1 but its volume is in zone a.
    let objects = vec![
        zonal_node("zone-a", "a-1", "a"),
        zonal_node("zone-b", "b-1", "b"),
        statefulset("default", "db", 1),
        running_on(db_pod(0, "500m"), "a-1"),
        bound_claim(0, "pv-a"),
        zonal_volume("pv-a", "a", 0),
        gp3(),
    ];
    let groups = [zonal_group("zone-a", "a", 10), zonal_group("zone-b", "b", 10)];
    let plan1 = plan(&objects, &groups, &[]);
    assert_eq!(unremovable_reason(&plan1, "a-1").as_deref(), Some("NoPlaceToMovePods"), "{plan1:#}");
    // A busy zone-a node (62.5%: never a candidate itself) with room takes it.
    let busy = [
        node("zone-a", "a-2", "8", "32Gi").label(ZONE, "a"),
        replicaset("default", "steady", 1),
        running_on(
            owned_by(pod("default", "steady-0", "5", "1Gi").label("app", "steady"), "ReplicaSet", "steady"),
            "a-2",
        ),
    ];
    let plan2 = plan(&with(objects, busy), &groups, &[]);
    let a1 = unneeded(&plan2, "a-1").unwrap_or_else(|| panic!("a-1 unneeded: {plan2:#}"));
    assert_eq!(a1["podsToMove"], json!(["default/db-0"]));
}

#[test]
fn a_dump_without_storage_objects_leaves_the_volume_filters_off() {
    // `kubectl get nodes,pods,…` without `pvc,pv,storageclass,csinode`: nothing is known about
    // the claim, so it is not reported missing.
    let objects = vec![statefulset("default", "db", 1), unschedulable(db_pod(0, "1"))];
    let plan = plan(&objects, &[zonal_group("zone-a", "a", 10)], &[]);
    assert_eq!(increases(&plan), vec![inc("zone-a", 1)], "{plan:#}");
}

#[test]
fn balancing_similar_groups_never_spreads_zonal_pods_into_another_zone() {
    // zone-a and zone-b differ only in their zone label, which is ignored when comparing groups,
    // and the static provider's `pool` label, ignored by the flag: two pods without volumes are
    // spread over both; two pods with zone-a volumes are not.
    let similar = |id: &str, zone: &str| {
        group(id, 0, 10, "4", "16Gi").set("template.metadata.labels", json!({"kubernetes.io/os": "linux", ZONE: zone}))
    };
    let groups = [similar("zone-a", "a"), similar("zone-b", "b")];
    let flags = ["--balance-similar-node-groups=true", "--balancing-ignore-label=pool"];
    let plain = with(vec![replicaset("default", "web", 2)], pending_pods("web", 2, "3", "1Gi"));
    let spread = plan(&plain, &groups, &flags);
    assert_eq!(increases(&spread), vec![inc("zone-a", 1), inc("zone-b", 1)], "{spread:#}");

    let zonal = vec![
        statefulset("default", "db", 2),
        unschedulable(db_pod(0, "3")),
        unschedulable(db_pod(1, "3")),
        bound_claim(0, "pv-a0"),
        bound_claim(1, "pv-a1"),
        zonal_volume("pv-a0", "a", 0),
        zonal_volume("pv-a1", "a", 1),
        gp3(),
    ];
    let plan = plan(&zonal, &groups, &flags);
    assert_eq!(increases(&plan), vec![inc("zone-a", 2)], "{plan:#}");
}
