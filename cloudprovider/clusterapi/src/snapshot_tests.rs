use serde_json::json;

use super::*;

const MIN: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const MAX: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

fn md(name: &str, replicas: u64, annotations: Value) -> DynamicObject {
    object(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "annotations": annotations},
        "spec": {
            "clusterName": "c1", "replicas": replicas,
            "selector": {"matchLabels": {"cluster.x-k8s.io/deployment-name": name}},
            "template": {"spec": {"infrastructureRef": {
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": format!("{name}-tmpl"),
            }}},
        },
    }))
}

fn ms(name: &str, md: Option<&str>, annotations: Value) -> DynamicObject {
    let owners = md.map(
        |m| json!([{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment", "name": m, "uid": "x"}]),
    );
    let selector = match md {
        Some(m) => json!({"matchLabels": {"cluster.x-k8s.io/deployment-name": m}}),
        None => json!({"matchLabels": {"cluster.x-k8s.io/set-name": name}}),
    };
    object(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet",
        "metadata": {"name": name, "namespace": "ns", "annotations": annotations, "ownerReferences": owners},
        "spec": {"clusterName": "c1", "replicas": 1, "selector": selector},
    }))
}

/// A Machine of MachineSet `ms` (which belongs to MachineDeployment `md` when given).
fn machine(name: &str, ms: &str, md: Option<&str>, provider_id: Option<&str>, status: Value) -> DynamicObject {
    let mut labels = json!({"cluster.x-k8s.io/set-name": ms, "cluster.x-k8s.io/cluster-name": "c1"});
    if let Some(md) = md {
        labels["cluster.x-k8s.io/deployment-name"] = json!(md);
    }
    object(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
        "metadata": {"name": name, "namespace": "ns", "labels": labels,
            "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet", "name": ms, "uid": "y"}]},
        "spec": {"clusterName": "c1", "providerID": provider_id},
        "status": status,
    }))
}

fn sized(min: &str, max: &str) -> Value {
    json!({MIN: min, MAX: max, "capacity.cluster-autoscaler.kubernetes.io/cpu": "2", "capacity.cluster-autoscaler.kubernetes.io/memory": "4Gi"})
}

fn build(listing: &Listing, discovery: &[&str], nodes: &[(&str, &str)]) -> Snapshot {
    let keys = Keys::default();
    let discovery = Discovery::parse(&discovery.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let node_provider_ids = nodes.iter().map(|(n, p)| (n.to_string(), p.to_string())).collect();
    Snapshot::build(listing, &BuildInputs { keys: &keys, discovery: &discovery, node_provider_ids: &node_provider_ids })
}

fn ids(snapshot: &Snapshot) -> Vec<&str> {
    snapshot.groups.keys().map(String::as_str).collect()
}

#[test]
fn groups_are_machine_deployments_unowned_machine_sets_and_machine_pools() {
    let pool = object(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachinePool",
        "metadata": {"name": "mp", "namespace": "ns", "annotations": sized("0", "4")},
        "spec": {"clusterName": "c1", "replicas": 2, "providerIDList": ["aws:///z/i-1", "aws:///z/i-2"]},
    }));
    let listing = Listing {
        machine_deployments: vec![md("md", 1, sized("1", "3")), md("plain", 1, json!({}))],
        machine_sets: vec![ms("md-abc", Some("md"), sized("1", "3")), ms("alone", None, sized("0", "2"))],
        machine_pools: vec![pool],
        machines: vec![],
    };
    let snapshot = build(&listing, &[], &[]);
    assert_eq!(ids(&snapshot), ["MachineDeployment/ns/md", "MachinePool/ns/mp", "MachineSet/ns/alone"]);
    let pool = &snapshot.groups["MachinePool/ns/mp"];
    assert_eq!(pool.instances.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), ["aws:///z/i-1", "aws:///z/i-2"]);
    let keys = Keys::default();
    let group = snapshot.group_for("aws:///z/i-2", "n2", &BTreeMap::new(), &keys).map(|g| g.id.as_str());
    assert_eq!(group, Some("MachinePool/ns/mp"));
    let md = &snapshot.groups["MachineDeployment/ns/md"];
    assert_eq!((md.config.min, md.config.max, md.replicas), (1, 3, 1));
    assert_eq!(
        md.infra_ref,
        Some(InfraRef {
            group: "infrastructure.cluster.x-k8s.io".into(),
            version: Some("v1beta1".into()),
            kind: "DockerMachineTemplate".into(),
            namespace: "ns".into(),
            name: "md-tmpl".into(),
        })
    );
}

#[test]
fn discovery_filters_and_paused_resources_are_left_out() {
    let mut paused = sized("0", "3");
    paused["cluster.x-k8s.io/paused"] = json!("true");
    let listing =
        Listing { machine_deployments: vec![md("a", 1, sized("0", "3")), md("b", 1, paused)], ..Default::default() };
    assert_eq!(ids(&build(&listing, &["clusterapi:namespace=other"], &[])), Vec::<&str>::new());
    assert_eq!(ids(&build(&listing, &["clusterapi:clusterName=c1"], &[])), ["MachineDeployment/ns/a"]);
    let snapshot = build(&listing, &[], &[]);
    assert!(snapshot.skipped.iter().any(|(id, why)| id == "MachineDeployment/ns/b" && why.contains("paused")));
}

#[test]
fn machines_become_instances_by_state() {
    let listing = Listing {
        machine_deployments: vec![md("md", 5, sized("0", "6"))],
        machine_sets: vec![ms("md-1", Some("md"), json!({}))],
        machines: vec![
            machine(
                "run",
                "md-1",
                Some("md"),
                Some("aws:///z/i-run"),
                json!({"nodeRef": {"kind": "Node", "name": "n-run"}}),
            ),
            machine("pend", "md-1", Some("md"), None, json!({"phase": "Provisioning"})),
            machine(
                "fail",
                "md-1",
                Some("md"),
                Some("aws:///z/i-fail"),
                json!({"phase": "Failed", "failureMessage": "quota"}),
            ),
            machine("noid", "md-1", Some("md"), None, json!({"nodeRef": {"name": "n-noid"}})),
            {
                let mut m = machine(
                    "gone",
                    "md-1",
                    Some("md"),
                    Some("aws:///z/i-gone"),
                    json!({"nodeRef": {"name": "n-gone"}}),
                );
                m.metadata.deletion_timestamp =
                    Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH));
                m
            },
            machine("other", "x-1", None, Some("aws:///z/i-other"), json!({"nodeRef": {"name": "n-other"}})),
        ],
        ..Default::default()
    };
    let snapshot = build(&listing, &[], &[("n-noid", "openstack:///uuid-noid")]);
    let group = &snapshot.groups["MachineDeployment/ns/md"];
    let view: Vec<(&str, Option<InstanceState>, Option<&str>)> = group
        .instances
        .iter()
        .map(|i| {
            let status = i.status.as_ref();
            (i.id.as_str(), status.map(|s| s.state), status.and_then(|s| s.error.as_ref()).map(|e| e.code.as_str()))
        })
        .collect();
    assert_eq!(
        view,
        [
            ("aws:///z/i-run", Some(InstanceState::Running), None),
            ("pending-machine-ns_pend", Some(InstanceState::Creating), None),
            ("failed-machine-ns_fail", Some(InstanceState::Creating), Some(PROVISIONING_FAILED)),
            ("openstack:///uuid-noid", Some(InstanceState::Running), None),
            ("deleting-machine-ns_gone", Some(InstanceState::Deleting), None),
        ]
    );

    // Node → Machine → group, by each path.
    let keys = Keys::default();
    let none = BTreeMap::new();
    let group_of = |pid: &str, node: &str, annotations: &BTreeMap<String, String>| {
        snapshot.group_for(pid, node, annotations, &keys).map(|g| g.id.clone())
    };
    assert_eq!(group_of("aws:///z/i-run", "n-run", &none).as_deref(), Some("MachineDeployment/ns/md"));
    assert_eq!(group_of("pending-machine-ns_pend", "x", &none).as_deref(), Some("MachineDeployment/ns/md"));
    assert_eq!(group_of("openstack:///uuid-noid", "n-noid", &none).as_deref(), Some("MachineDeployment/ns/md"));
    let annotated: BTreeMap<String, String> = [
        ("cluster.x-k8s.io/machine".to_string(), "noid".to_string()),
        ("cluster.x-k8s.io/cluster-namespace".to_string(), "ns".to_string()),
    ]
    .into();
    assert_eq!(group_of("openstack:///elsewhere", "renamed", &annotated).as_deref(), Some("MachineDeployment/ns/md"));
    assert_eq!(group_of("", "n-run", &none), None, "a node without a providerID is nobody's");
    assert_eq!(group_of("aws:///z/i-other", "n-other", &none), None, "a MachineSet that is not a node group");
    let machine = snapshot.machine_for("aws:///z/i-fail", "", &none, &keys).unwrap();
    assert_eq!(machine.key, ("ns".to_string(), "fail".to_string()));
}

#[test]
fn malformed_resources_are_rejected_with_their_problems() {
    let mut no_selector = md("nosel", 1, sized("0", "3"));
    no_selector.data["spec"].as_object_mut().unwrap().remove("selector");
    let mut no_replicas = md("norep", 1, sized("0", "3"));
    no_replicas.data["spec"].as_object_mut().unwrap().remove("replicas");
    let listing = Listing {
        machine_deployments: vec![
            md("bad", 1, json!({MIN: "1", MAX: "lots"})),
            no_selector,
            no_replicas,
            md("ok", 1, sized("0", "3")),
        ],
        ..Default::default()
    };
    let snapshot = build(&listing, &[], &[]);
    assert_eq!(ids(&snapshot), ["MachineDeployment/ns/ok"]);
    let described: Vec<String> = snapshot.rejected.iter().map(Rejected::describe).collect();
    assert_eq!(
        described,
        [
            format!("MachineDeployment ns/bad is not autoscaled: metadata.annotations[\"{MAX}\"]: \"lots\" is not an integer"),
            "MachineDeployment ns/nosel is not autoscaled: spec.selector: is missing".to_string(),
            "MachineDeployment ns/norep is not autoscaled: spec.replicas: is not set (Cluster API's defaulting webhook sets it)"
                .to_string(),
        ]
    );
    assert_eq!(snapshot.rejected[0].uid.as_deref(), Some("uid-bad"));
}

#[test]
fn groups_at_zero_need_cpu_and_memory_from_annotations_or_the_template() {
    let listing = Listing {
        machine_deployments: vec![
            md("annotated", 0, sized("0", "3")),
            md("bare", 0, json!({MIN: "0", MAX: "3"})),
            md("templated", 0, json!({MIN: "0", MAX: "3"})),
            md("running", 1, json!({MIN: "0", MAX: "3"})),
        ],
        ..Default::default()
    };
    let mut snapshot = build(&listing, &[], &[]);
    let templated = snapshot.groups["MachineDeployment/ns/templated"].infra_ref.clone().unwrap();
    let info = InfraInfo::from_object(&object(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate",
        "metadata": {"name": "templated-tmpl", "namespace": "ns"},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "64", "nvidia.com/gpu": "x"}, "nodeInfo": {"architecture": "arm64"}},
    })));
    assert_eq!(info.architecture.as_deref(), Some("arm64"));
    assert!(!info.capacity.contains_key("nvidia.com/gpu"), "not a quantity: left out");
    snapshot.attach_infra(&HashMap::from([(templated, info)]));
    assert_eq!(
        ids(&snapshot),
        ["MachineDeployment/ns/annotated", "MachineDeployment/ns/running", "MachineDeployment/ns/templated"]
    );
    assert!(snapshot.skipped.iter().any(|(id, _)| id == "MachineDeployment/ns/bare"));
    let templated = &snapshot.groups["MachineDeployment/ns/templated"];
    assert_eq!(templated.capacity()["pods"], Quantity("64".into()), "the template's pods, not the default");
    assert_eq!(snapshot.groups["MachineDeployment/ns/annotated"].capacity()["pods"], Quantity("110".into()));
}

#[test]
fn fake_ids_name_their_machine_and_are_not_real() {
    assert_eq!(machine_key_of_fake_id("pending-machine-ns_m-1"), Some(("ns".into(), "m-1".into())));
    assert_eq!(machine_key_of_fake_id("failed-machine-a_b_c"), Some(("a".into(), "b_c".into())));
    assert_eq!(machine_key_of_fake_id("aws:///z/i-1"), None);
    assert!(is_real_instance_id("aws:///z/i-1"));
    assert!(!is_real_instance_id("deleting-machine-ns_m"));
}
