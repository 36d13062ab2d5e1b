//! Storage: StatefulSet claims, the PV controller, `WaitForFirstConsumer` binding in the node's
//! zone, and the scheduler's volume filters.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use simulator::testing::{node, with_node_labels};

use super::*;

const ZONE: &str = "topology.kubernetes.io/zone";

fn zonal_node(name: &str, zone: &str) -> Node {
    with_node_labels(node(name, "4", "16Gi"), &[(ZONE, zone)])
}

fn class(name: &str, mode: &str, default: bool) -> StorageClass {
    let mut c = json!({"metadata": {"name": name}, "provisioner": "ebs.csi.aws.com", "volumeBindingMode": mode});
    if default {
        c["metadata"]["annotations"] = json!({DEFAULT_CLASS_ANNOTATION: "true"});
    }
    from_json(c)
}

/// `db`: a StatefulSet whose pods each get a 10Gi `data` claim of the default class.
fn db(replicas: i32) -> StatefulSet {
    let mut set = serde_json::to_value(stateful_set("db", replicas, "Parallel")).unwrap();
    set["spec"]["volumeClaimTemplates"] = json!([{
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}
    }]);
    from_json(set)
}

fn claim_of(c: &MemoryCluster, name: &str) -> PersistentVolumeClaim {
    (**c.persistent_volume_claim("default", name).unwrap_or_else(|| panic!("claim {name}"))).clone()
}

/// The zone a claim's volume is pinned to by its node affinity.
fn volume_zone(c: &MemoryCluster, claim: &str) -> Option<String> {
    let volume = claim_of(c, claim).spec?.volume_name?;
    let pv: &PersistentVolume = c.persistent_volume(&volume)?;
    let terms = &pv.spec.as_ref()?.node_affinity.as_ref()?.required.as_ref()?.node_selector_terms;
    let requirement = terms.first()?.match_expressions.as_ref()?.iter().find(|r| r.key == ZONE)?;
    requirement.values.as_ref()?.first().cloned()
}

fn zone_of_node(c: &MemoryCluster, node: &str) -> Option<String> {
    c.node(node)?.metadata.labels.as_ref()?.get(ZONE).cloned()
}

#[test]
fn stateful_set_pods_get_their_claims_bound_in_the_zone_of_their_node() {
    let mut c = cluster();
    c.apply(class("gp3", "WaitForFirstConsumer", true)).unwrap();
    c.apply(zonal_node("a1", "a")).unwrap();
    c.apply(zonal_node("b1", "b")).unwrap();
    c.apply(db(2)).unwrap();
    c.advance(t(1));
    for ordinal in 0..2 {
        let pod = format!("db-{ordinal}");
        let claim = claim_of(&c, &format!("data-db-{ordinal}"));
        assert_eq!(claim.spec.as_ref().unwrap().storage_class_name.as_deref(), Some("gp3"), "the default class");
        assert_eq!(claim.status.as_ref().unwrap().phase.as_deref(), Some("Bound"));
        let pod_claim = c.pod("default", &pod).unwrap().spec.as_ref().unwrap().volumes.clone().unwrap();
        assert_eq!(pod_claim[0].persistent_volume_claim.as_ref().unwrap().claim_name, format!("data-db-{ordinal}"));
        let node = node_of(&c, "default", &pod).expect("bound");
        assert_eq!(volume_zone(&c, &format!("data-db-{ordinal}")), zone_of_node(&c, &node));
    }
}

#[test]
fn a_recreated_stateful_set_pod_stays_in_the_zone_of_its_volume() {
    let mut c = cluster();
    c.apply(class("gp3", "WaitForFirstConsumer", true)).unwrap();
    c.apply(zonal_node("a1", "a")).unwrap();
    c.apply(db(1)).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "db-0").as_deref(), Some("a1"));
    // The zone-a node goes; a roomy zone-b node remains.
    c.apply(zonal_node("b1", "b")).unwrap();
    c.delete(ObjectKind::Node, &ObjectKey::cluster("a1"));
    c.advance(t(2));
    assert_eq!(node_of(&c, "default", "db-0"), None, "recreated, and held by its zone-a volume");
    let (_, reason, message) = scheduled_condition(&c, "default", "db-0").unwrap();
    assert_eq!(reason, "Unschedulable");
    assert_eq!(message, "0/1 nodes are available: 1 node(s) had volume node affinity conflict.");
    c.apply(zonal_node("a2", "a")).unwrap();
    c.advance(t(3));
    assert_eq!(node_of(&c, "default", "db-0").as_deref(), Some("a2"));
    assert_eq!(volume_zone(&c, "data-db-0").as_deref(), Some("a"), "the same volume");
}

#[test]
fn stateful_set_claims_are_kept_when_replicas_go() {
    let mut c = cluster();
    c.apply(class("gp3", "WaitForFirstConsumer", true)).unwrap();
    c.apply(zonal_node("a1", "a")).unwrap();
    c.apply(db(2)).unwrap();
    c.advance(t(1));
    let mut set = (**c.stateful_set("default", "db").unwrap()).clone();
    set.spec.as_mut().unwrap().replicas = Some(1);
    c.apply(set).unwrap();
    c.advance(t(2));
    c.advance(t(200));
    assert!(c.pod("default", "db-1").is_none(), "gone after its grace period");
    assert_eq!(claim_of(&c, "data-db-1").status.unwrap().phase.as_deref(), Some("Bound"), "Retain");
}

#[test]
fn an_immediate_claim_is_provisioned_at_once_in_the_class_topology() {
    let mut c = cluster();
    let mut immediate = serde_json::to_value(class("fast", "Immediate", false)).unwrap();
    immediate["allowedTopologies"] = json!([{"matchLabelExpressions": [{"key": ZONE, "values": ["b", "c"]}]}]);
    c.apply(from_json::<StorageClass>(immediate)).unwrap();
    let claim: PersistentVolumeClaim = from_json(json!({
        "metadata": {"name": "cache", "namespace": "default"},
        "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}
    }));
    c.apply(claim).unwrap();
    assert_eq!(claim_of(&c, "cache").status.unwrap().phase.as_deref(), Some("Bound"));
    assert_eq!(volume_zone(&c, "cache").as_deref(), Some("b"), "the first allowed zone");
    c.apply(zonal_node("a1", "a")).unwrap();
    c.apply(zonal_node("b1", "b")).unwrap();
    let mut pod = pending_pod("user", "100m", "100Mi");
    pod.spec.as_mut().unwrap().volumes =
        Some(from_json(json!([{"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}}])));
    c.apply(pod).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "user").as_deref(), Some("b1"));
}

#[test]
fn a_pod_whose_claim_does_not_exist_stays_pending_with_the_scheduler_reason() {
    let mut c = cluster();
    c.apply(zonal_node("a1", "a")).unwrap();
    let mut pod: Pod = pending_pod("orphan", "100m", "100Mi");
    pod.spec.as_mut().unwrap().volumes =
        Some(from_json(json!([{"name": "data", "persistentVolumeClaim": {"claimName": "nowhere"}}])));
    c.apply(pod).unwrap();
    c.advance(t(1));
    assert_eq!(node_of(&c, "default", "orphan"), None);
    let (_, _, message) = scheduled_condition(&c, "default", "orphan").unwrap();
    assert_eq!(message, "0/1 nodes are available: persistentvolumeclaim \"nowhere\" not found.");
}

#[test]
fn the_view_carries_the_storage_objects() {
    let mut c = cluster();
    c.apply(class("gp3", "WaitForFirstConsumer", true)).unwrap();
    c.apply(zonal_node("a1", "a")).unwrap();
    c.apply(db(1)).unwrap();
    c.advance(t(1));
    let view = c.view();
    assert!(view.volumes_observed);
    assert_eq!(view.storage_classes.len(), 1);
    assert_eq!(view.persistent_volume_claims.len(), 1);
    assert_eq!(view.persistent_volumes.len(), 1);
}
