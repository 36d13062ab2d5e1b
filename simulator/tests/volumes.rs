//! One test per volume rule of kube-scheduler the simulator follows (VolumeRestrictions,
//! NodeVolumeLimits, VolumeBinding, VolumeZone), with the scheduler's reasons.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use serde_json::{Value, json};
use simulator::equivalence::scheduling_equivalent;
use simulator::scheduling::SearchHint;
use simulator::testing::*;
use simulator::volumes::VolumeIndex;
use simulator::{ClusterSnapshot, NodeId, PodInfo, Unfit};

const ZONE: &str = "topology.kubernetes.io/zone";

fn info(pod: Pod) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(&pod))
}

fn zonal_node(name: &str, zone: &str) -> Node {
    with_node_labels(node(name, "4", "8Gi"), &[(ZONE, zone)])
}

/// A pod with one volume per claim name (`persistentVolumeClaim`).
fn with_claims(mut pod: Pod, claims: &[&str]) -> Pod {
    let volumes: Vec<Value> = claims
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"name": format!("v{i}"), "persistentVolumeClaim": {"claimName": c}}))
        .collect();
    pod.spec.as_mut().unwrap().volumes = Some(serde_json::from_value(json!(volumes)).unwrap());
    pod
}

fn claim(name: &str, class: &str, volume: Option<&str>) -> Arc<PersistentVolumeClaim> {
    let mut c = json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "10Gi"}}},
        "status": {"phase": "Pending"}
    });
    if let Some(v) = volume {
        c["spec"]["volumeName"] = json!(v);
        c["status"]["phase"] = json!("Bound");
        c["metadata"]["annotations"] = json!({"pv.kubernetes.io/bind-completed": "yes"});
    }
    Arc::new(serde_json::from_value(c).unwrap())
}

fn patched(object: &PersistentVolumeClaim, patch: Value) -> Arc<PersistentVolumeClaim> {
    let mut v = serde_json::to_value(object).unwrap();
    merge(&mut v, patch);
    Arc::new(serde_json::from_value(v).unwrap())
}

fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p,
    }
}

/// A zonal disk (an EBS / PD volume): required node affinity on the zone.
fn zonal_volume(name: &str, zone: &str, claim: Option<&str>) -> Arc<PersistentVolume> {
    let mut pv = json!({
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "ssd",
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": format!("vol-{name}")},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
            ]}}
        },
        "status": {"phase": "Available"}
    });
    if let Some(c) = claim {
        pv["spec"]["claimRef"] = json!({"name": c, "namespace": "default"});
        pv["status"]["phase"] = json!("Bound");
    }
    Arc::new(serde_json::from_value(pv).unwrap())
}

fn class(name: &str, mode: &str, provisioner: &str, zones: &[&str]) -> Arc<StorageClass> {
    let mut c = json!({"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode});
    if !zones.is_empty() {
        c["allowedTopologies"] = json!([{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]);
    }
    Arc::new(serde_json::from_value(c).unwrap())
}

fn csi_node(name: &str, driver: &str, count: i32) -> Arc<CSINode> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"drivers": [{"name": driver, "nodeID": name, "allocatable": {"count": count}}]}
        }))
        .unwrap(),
    )
}

struct Cluster {
    claims: Vec<Arc<PersistentVolumeClaim>>,
    volumes: Vec<Arc<PersistentVolume>>,
    classes: Vec<Arc<StorageClass>>,
    csi_nodes: Vec<Arc<CSINode>>,
}

impl Cluster {
    fn new() -> Cluster {
        Cluster {
            claims: Vec::new(),
            volumes: Vec::new(),
            classes: vec![
                class("ssd", "WaitForFirstConsumer", "ebs.csi.aws.com", &[]),
                class("immediate", "Immediate", "ebs.csi.aws.com", &[]),
            ],
            csi_nodes: Vec::new(),
        }
    }

    fn index(&self) -> VolumeIndex {
        VolumeIndex::new(
            self.claims.iter().cloned(),
            self.volumes.iter().cloned(),
            self.classes.iter().cloned(),
            self.csi_nodes.iter().cloned(),
        )
    }

    /// A snapshot with these nodes, knowing this cluster's volumes.
    fn snapshot(&self, nodes: Vec<Node>) -> (ClusterSnapshot, Vec<NodeId>) {
        let mut s = ClusterSnapshot::new();
        s.set_volumes(self.index());
        let ids = nodes.into_iter().map(|n| s.add_node(Arc::new(n)).unwrap()).collect();
        (s, ids)
    }
}

fn reason(s: &mut ClusterSnapshot, pod: &PodInfo, node: NodeId) -> Result<(), String> {
    s.check_pod(pod, node).map_err(|u| u.to_string())
}

#[test]
fn a_bound_volume_fits_only_nodes_its_node_affinity_accepts() {
    let mut c = Cluster::new();
    c.claims.push(claim("data-db-0", "ssd", Some("pv-a")));
    c.volumes.push(zonal_volume("pv-a", "a", Some("data-db-0")));
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a"), zonal_node("in-b", "b"), node("no-zone", "4", "8Gi")]);
    let db = info(with_claims(pod("db-0", "1", "1Gi"), &["data-db-0"]));
    assert_eq!(s.check_pod(&db, ids[0]), Ok(()));
    assert_eq!(reason(&mut s, &db, ids[1]), Err("node(s) had volume node affinity conflict".into()));
    assert_eq!(
        s.check_pod(&db, ids[2]),
        Err(Unfit::VolumeBinding { node_conflict: true, bind_conflict: false, missing_volume: false }),
        "a node without the zone label does not match `In`"
    );
}

#[test]
fn a_template_copy_in_another_zone_is_unfit_like_a_real_node() {
    let mut c = Cluster::new();
    c.claims.push(claim("data-db-0", "ssd", Some("pv-a")));
    c.volumes.push(zonal_volume("pv-a", "a", Some("data-db-0")));
    let (mut s, _) = c.snapshot(vec![]);
    let template_b = simulator::NodeInfo::new(Arc::new(zonal_node("template-b", "b")));
    let template_a = simulator::NodeInfo::new(Arc::new(zonal_node("template-a", "a")));
    let b = s.add_node_info(template_b.renamed_copy("upcoming-0")).unwrap();
    let a = s.add_node_info(template_a.renamed_copy("upcoming-0")).unwrap();
    let db = info(with_claims(pod("db-0", "1", "1Gi"), &["data-db-0"]));
    assert_eq!(reason(&mut s, &db, b), Err("node(s) had volume node affinity conflict".into()));
    assert_eq!(s.check_pod(&db, a), Ok(()));
}

#[test]
fn legacy_zone_labels_on_a_volume_must_name_the_node_zone() {
    let mut c = Cluster::new();
    c.claims.push(claim("old", "ssd", Some("pv-old")));
    c.claims.push(claim("multi", "ssd", Some("pv-multi")));
    let legacy = |name: &str, labels: Value| -> Arc<PersistentVolume> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels},
                "spec": {"capacity": {"storage": "10Gi"}, "storageClassName": "ssd",
                         "awsElasticBlockStore": {"volumeID": format!("vol-{name}")}}
            }))
            .unwrap(),
        )
    };
    c.volumes.push(legacy("pv-old", json!({"failure-domain.beta.kubernetes.io/zone": "a"})));
    c.volumes.push(legacy("pv-multi", json!({ZONE: "a__c"})));
    let (mut s, ids) = c.snapshot(vec![
        zonal_node("in-a", "a"),
        zonal_node("in-b", "b"),
        zonal_node("in-c", "c"),
        node("unlabelled", "4", "8Gi"),
    ]);
    let old = info(with_claims(pod("old", "1", "1Gi"), &["old"]));
    assert_eq!(s.check_pod(&old, ids[0]), Ok(()), "the beta label on the volume reads the node's GA label");
    assert_eq!(reason(&mut s, &old, ids[1]), Err("node(s) had no available volume zone".into()));
    assert_eq!(s.check_pod(&old, ids[3]), Ok(()), "a node without zone labels has no zone constraint");
    let multi = info(with_claims(pod("multi", "1", "1Gi"), &["multi"]));
    assert_eq!(s.check_pod(&multi, ids[0]), Ok(()));
    assert_eq!(s.check_pod(&multi, ids[2]), Ok(()), "`a__c` names two zones");
    assert_eq!(s.check_pod(&multi, ids[1]), Err(Unfit::VolumeZone));
}

#[test]
fn a_missing_claim_keeps_the_pod_off_every_node_with_the_scheduler_reason() {
    let c = Cluster::new();
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a"), zonal_node("in-b", "b")]);
    let p = info(with_claims(pod("p", "1", "1Gi"), &["gone"]));
    for id in ids {
        assert_eq!(reason(&mut s, &p, id), Err("persistentvolumeclaim \"gone\" not found".into()));
    }
}

#[test]
fn a_claim_being_deleted_or_lost_keeps_the_pod_pending() {
    let mut c = Cluster::new();
    c.claims.push(patched(
        &claim("going", "ssd", Some("pv-a")),
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
    ));
    c.claims.push(patched(&claim("lost", "ssd", Some("pv-x")), json!({"status": {"phase": "Lost"}})));
    c.volumes.push(zonal_volume("pv-a", "a", Some("going")));
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a")]);
    let going = info(with_claims(pod("p", "1", "1Gi"), &["going"]));
    assert_eq!(reason(&mut s, &going, ids[0]), Err("persistentvolumeclaim \"going\" is being deleted".into()));
    let lost = info(with_claims(pod("q", "1", "1Gi"), &["lost"]));
    assert_eq!(
        reason(&mut s, &lost, ids[0]),
        Err("persistentvolumeclaim \"lost\" bound to non-existent persistentvolume \"pv-x\"".into())
    );
}

#[test]
fn a_claim_bound_to_a_missing_volume_names_the_volume() {
    let mut c = Cluster::new();
    c.claims.push(claim("data", "ssd", Some("pv-gone")));
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a")]);
    let p = info(with_claims(pod("p", "1", "1Gi"), &["data"]));
    assert_eq!(reason(&mut s, &p, ids[0]), Err("persistentvolume \"pv-gone\" not found".into()));
}

#[test]
fn an_unbound_immediate_claim_is_unschedulable() {
    let mut c = Cluster::new();
    c.claims.push(claim("fast", "immediate", None));
    c.claims.push(claim("classless", "no-such-class", None));
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a")]);
    for name in ["fast", "classless"] {
        let p = info(with_claims(pod(name, "1", "1Gi"), &[name]));
        assert_eq!(
            reason(&mut s, &p, ids[0]),
            Err("pod has unbound immediate PersistentVolumeClaims".into()),
            "{name}: a missing class binds immediately"
        );
    }
}

#[test]
fn a_wait_for_first_consumer_claim_follows_the_class_allowed_topologies() {
    let mut c = Cluster::new();
    c.classes.push(class("ssd-a", "WaitForFirstConsumer", "ebs.csi.aws.com", &["a"]));
    c.claims.push(claim("anywhere", "ssd", None));
    c.claims.push(claim("only-a", "ssd-a", None));
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a"), zonal_node("in-b", "b")]);
    let anywhere = info(with_claims(pod("p", "1", "1Gi"), &["anywhere"]));
    assert_eq!(s.check_pod(&anywhere, ids[0]), Ok(()));
    assert_eq!(s.check_pod(&anywhere, ids[1]), Ok(()), "no allowedTopologies: provisioned wherever the pod goes");
    let only_a = info(with_claims(pod("q", "1", "1Gi"), &["only-a"]));
    assert_eq!(s.check_pod(&only_a, ids[0]), Ok(()));
    assert_eq!(reason(&mut s, &only_a, ids[1]), Err("node(s) didn't find available persistent volumes to bind".into()));
}

#[test]
fn a_wait_for_first_consumer_claim_without_provisioner_needs_an_available_volume_on_the_node() {
    let mut c = Cluster::new();
    c.classes.push(class("local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner", &[]));
    c.claims.push(claim("scratch", "local", None));
    // A local volume on node n2 (hostname affinity), and one too small on n1.
    let local = |name: &str, host: &str, size: &str| {
        Arc::new(
            serde_json::from_value::<PersistentVolume>(json!({
                "metadata": {"name": name},
                "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                         "local": {"path": "/mnt/disk"},
                         "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                             {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}},
                "status": {"phase": "Available"}
            }))
            .unwrap(),
        )
    };
    c.volumes.push(local("small-n1", "n1", "1Gi"));
    c.volumes.push(local("disk-n2", "n2", "100Gi"));
    let (mut s, ids) = c.snapshot(vec![node("n1", "4", "8Gi"), node("n2", "4", "8Gi")]);
    let p = info(with_claims(pod("p", "1", "1Gi"), &["scratch"]));
    assert_eq!(
        reason(&mut s, &p, ids[0]),
        Err("node(s) didn't find available persistent volumes to bind".into()),
        "too small, and the class cannot provision"
    );
    assert_eq!(s.check_pod(&p, ids[1]), Ok(()));
}

#[test]
fn a_claim_with_a_selected_node_fits_only_that_node() {
    let mut c = Cluster::new();
    c.claims.push(patched(
        &claim("data", "ssd", None),
        json!({"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "in-b"}}}),
    ));
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a"), zonal_node("in-b", "b")]);
    let p = info(with_claims(pod("p", "1", "1Gi"), &["data"]));
    assert!(s.check_pod(&p, ids[0]).is_err());
    assert_eq!(s.check_pod(&p, ids[1]), Ok(()));
}

#[test]
fn a_generic_ephemeral_volume_waits_for_its_claim_created_for_the_pod() {
    let mut c = Cluster::new();
    let ephemeral = |mut p: Pod| {
        p.spec.as_mut().unwrap().volumes = Some(
            serde_json::from_value(json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "spec": {"storageClassName": "ssd", "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}}}]))
            .unwrap(),
        );
        p
    };
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a")]);
    let p = info(ephemeral(pod("p", "1", "1Gi")));
    assert_eq!(
        reason(&mut s, &p, ids[0]),
        Err("waiting for ephemeral volume controller to create the persistentvolumeclaim \"p-scratch\"".into())
    );
    let owned_by = |uid: &str| {
        patched(
            &claim("p-scratch", "ssd", None),
            json!({"metadata": {"ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid, "controller": true}]}}),
        )
    };
    c.claims.push(owned_by("someone-else"));
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a")]);
    assert_eq!(
        reason(&mut s, &p, ids[0]),
        Err("PVC default/p-scratch was not created for pod default/p (pod is not owner)".into())
    );
    c.claims[0] = owned_by("uid-p");
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-a", "a")]);
    assert_eq!(s.check_pod(&p, ids[0]), Ok(()));
}

#[test]
fn csi_attach_limits_count_distinct_volumes_where_the_node_reports_a_limit() {
    let mut c = Cluster::new();
    for i in 0..3 {
        c.claims.push(claim(&format!("c{i}"), "ssd", Some(&format!("pv{i}"))));
        c.volumes.push(zonal_volume(&format!("pv{i}"), "a", Some(&format!("c{i}"))));
    }
    c.csi_nodes.push(csi_node("limited", "ebs.csi.aws.com", 2));
    c.csi_nodes.push(csi_node("other-driver", "pd.csi.storage.gke.io", 0));
    let (mut s, ids) =
        c.snapshot(vec![zonal_node("limited", "a"), zonal_node("other-driver", "a"), zonal_node("no-csinode", "a")]);
    for id in &ids {
        s.add_pod(info(on_node(with_claims(pod(&format!("a-{}", id.index()), "100m", "1Mi"), &["c0"]), "x")), *id)
            .unwrap();
        s.add_pod(info(on_node(with_claims(pod(&format!("b-{}", id.index()), "100m", "1Mi"), &["c1"]), "x")), *id)
            .unwrap();
    }
    let shares = info(with_claims(pod("shares", "100m", "1Mi"), &["c0", "c1"]));
    assert_eq!(s.check_pod(&shares, ids[0]), Ok(()), "volumes already attached count once");
    let third = info(with_claims(pod("third", "100m", "1Mi"), &["c2"]));
    assert_eq!(reason(&mut s, &third, ids[0]), Err("node(s) exceed max volume count".into()));
    assert_eq!(s.check_pod(&third, ids[1]), Ok(()), "another driver's limit");
    assert_eq!(s.check_pod(&third, ids[2]), Ok(()), "no CSINode (a template, a new node): no known limit");
}

#[test]
fn a_read_write_once_pod_claim_in_use_conflicts_until_its_pod_leaves() {
    let mut c = Cluster::new();
    c.claims.push(patched(&claim("solo", "ssd", Some("pv-a")), json!({"spec": {"accessModes": ["ReadWriteOncePod"]}})));
    c.claims.push(claim("shared", "ssd", Some("pv-b")));
    c.volumes.push(zonal_volume("pv-a", "a", Some("solo")));
    c.volumes.push(zonal_volume("pv-b", "a", Some("shared")));
    let (mut s, ids) = c.snapshot(vec![zonal_node("n1", "a"), zonal_node("n2", "a")]);
    s.add_pod(info(on_node(with_claims(pod("holder", "100m", "1Mi"), &["solo", "shared"]), "n1")), ids[0]).unwrap();
    let wants_solo = info(with_claims(pod("p", "100m", "1Mi"), &["solo"]));
    for id in &ids {
        assert_eq!(
            reason(&mut s, &wants_solo, *id),
            Err("node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode".into())
        );
    }
    let wants_shared = info(with_claims(pod("q", "100m", "1Mi"), &["shared"]));
    assert_eq!(s.check_pod(&wants_shared, ids[1]), Ok(()), "ReadWriteOnce is not exclusive to one pod");
    s.fork();
    s.remove_pod("default/holder").unwrap();
    assert_eq!(s.check_pod(&wants_solo, ids[1]), Ok(()));
    s.revert();
    assert!(s.check_pod(&wants_solo, ids[1]).is_err(), "revert restores the claim's user");
}

#[test]
fn moving_a_pod_in_a_simulation_respects_its_volume_zone() {
    let mut c = Cluster::new();
    c.claims.push(claim("data-db-0", "ssd", Some("pv-a")));
    c.volumes.push(zonal_volume("pv-a", "a", Some("data-db-0")));
    let (mut s, ids) =
        c.snapshot(vec![zonal_node("b1", "b"), zonal_node("b2", "b"), zonal_node("a1", "a"), zonal_node("a2", "a")]);
    let db = info(on_node(with_claims(pod("db-0", "1", "1Gi"), &["data-db-0"]), "a1"));
    s.add_pod(db.clone(), ids[2]).unwrap();
    s.fork();
    let moved = s.remove_pod("default/db-0").unwrap();
    s.mark_to_be_deleted(ids[2]).unwrap();
    let target = s.find_node_for(&moved, &mut SearchHint::default(), |_, _| true);
    assert_eq!(target, Some(ids[3]), "only the other zone-a node");
    s.revert();
}

#[test]
fn without_volume_objects_or_without_claims_the_filters_are_off() {
    let mut s = ClusterSnapshot::new();
    let id = s.add_node(Arc::new(zonal_node("in-b", "b"))).unwrap();
    assert!(!s.knows_volumes());
    let p = info(with_claims(pod("p", "1", "1Gi"), &["unknown"]));
    assert_eq!(s.check_pod(&p, id), Ok(()), "a source that does not report claims says nothing about them");
    let c = Cluster::new();
    let (mut s, ids) = c.snapshot(vec![zonal_node("in-b", "b")]);
    assert_eq!(s.check_pod(&info(pod("plain", "1", "1Gi")), ids[0]), Ok(()));
}

#[test]
fn pods_using_different_claims_are_not_equivalent() {
    let owned =
        |name: &str, claims: &[&str]| info(with_owner(with_claims(pod(name, "1", "1Gi"), claims), "StatefulSet", "db"));
    assert!(!scheduling_equivalent(&owned("a", &["data-a"]), &owned("b", &["data-b"])));
    assert!(scheduling_equivalent(&owned("a", &["shared"]), &owned("b", &["shared"])));
}
