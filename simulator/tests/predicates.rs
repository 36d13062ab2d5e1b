//! One test per kube-scheduler filter rule the simulator implements.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Affinity, Pod};
use serde_json::json;
use simulator::resources::Shortfall;
use simulator::testing::*;
use simulator::{ClusterSnapshot, NodeId, PodInfo, Unfit};

fn info(pod: Pod) -> Arc<PodInfo> {
    Arc::new(PodInfo::new(&pod))
}

fn with_spec(mut pod: Pod, patch: serde_json::Value) -> Pod {
    let mut spec = serde_json::to_value(pod.spec.take().unwrap()).unwrap();
    for (k, v) in patch.as_object().unwrap() {
        spec[k] = v.clone();
    }
    pod.spec = Some(serde_json::from_value(spec).unwrap());
    pod
}

fn with_affinity(pod: Pod, affinity: serde_json::Value) -> Pod {
    let _: Affinity = serde_json::from_value(affinity.clone()).expect("valid affinity");
    with_spec(pod, json!({ "affinity": affinity }))
}

fn snapshot_with(nodes: Vec<k8s_openapi::api::core::v1::Node>) -> (ClusterSnapshot, Vec<NodeId>) {
    let mut s = ClusterSnapshot::new();
    let ids = nodes.into_iter().map(|n| s.add_node(Arc::new(n)).unwrap()).collect();
    (s, ids)
}

fn web(name: &str) -> Pod {
    with_labels(pod(name, "100m", "100Mi"), &[("app", "web")])
}

#[test]
fn resources_fit_within_allocatable() {
    let (mut s, ids) = snapshot_with(vec![node("n1", "1", "1Gi")]);
    s.add_pod(info(pod("a", "600m", "100Mi")), ids[0]).unwrap();
    assert_eq!(s.check_pod(&info(pod("b", "400m", "100Mi")), ids[0]), Ok(()));
    assert_eq!(
        s.check_pod(&info(pod("c", "500m", "100Mi")), ids[0]),
        Err(Unfit::Insufficient(Shortfall::from_iter(["cpu"])))
    );
    let err = s.check_pod(&info(pod("d", "500m", "2Gi")), ids[0]).unwrap_err();
    assert_eq!(err.to_string(), "Insufficient cpu, Insufficient memory");
}

#[test]
fn extended_resources_are_checked() {
    let (mut s, ids) = snapshot_with(vec![
        node("cpu-only", "8", "32Gi"),
        with_extended_resource(node("gpu", "8", "32Gi"), "nvidia.com/gpu", "1"),
    ]);
    let gpu_pod = with_spec(
        pod("g", "1", "1Gi"),
        json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}]}),
    );
    let gpu_pod = info(gpu_pod);
    assert_eq!(s.check_pod(&gpu_pod, ids[0]), Err(Unfit::Insufficient(Shortfall::from_iter(["nvidia.com/gpu"]))));
    assert_eq!(s.check_pod(&gpu_pod, ids[1]), Ok(()));
}

#[test]
fn max_pods_limits_pod_count() {
    let mut n = node("n1", "8", "8Gi");
    n.status
        .as_mut()
        .unwrap()
        .allocatable
        .as_mut()
        .unwrap()
        .insert("pods".into(), k8s_openapi::apimachinery::pkg::api::resource::Quantity("1".into()));
    let (mut s, ids) = snapshot_with(vec![n]);
    s.add_pod(info(pod("a", "0", "0")), ids[0]).unwrap();
    assert_eq!(s.check_pod(&info(pod("b", "0", "0")), ids[0]), Err(Unfit::TooManyPods));
}

#[test]
fn unschedulable_node_rejects_pods_without_toleration() {
    let mut n = node("n1", "4", "4Gi");
    n.spec.as_mut().unwrap().unschedulable = Some(true);
    let (mut s, ids) = snapshot_with(vec![n]);
    assert_eq!(s.check_pod(&info(pod("a", "1", "1Gi")), ids[0]), Err(Unfit::Unschedulable));
    let tolerant = with_spec(
        pod("b", "1", "1Gi"),
        json!({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}),
    );
    assert_eq!(s.check_pod(&info(tolerant), ids[0]), Ok(()));
}

#[test]
fn node_selector_must_match_all_labels() {
    let (mut s, ids) = snapshot_with(vec![
        with_node_labels(node("n1", "4", "4Gi"), &[("pool", "general")]),
        with_node_labels(node("n2", "4", "4Gi"), &[("pool", "gpu"), ("zone", "a")]),
    ]);
    let p = info(with_spec(pod("a", "1", "1Gi"), json!({"nodeSelector": {"pool": "gpu", "zone": "a"}})));
    assert_eq!(s.check_pod(&p, ids[0]), Err(Unfit::NodeAffinity));
    assert_eq!(s.check_pod(&p, ids[1]), Ok(()));
}

/// The DaemonSet controller's pin (`matchFields: metadata.name In [node]` in every term) is held
/// apart from the shared spec (`PodInfo::pinned_node`); the pod fits exactly where the whole
/// affinity says: its node, and only if the DaemonSet's own terms match it too.
#[test]
fn a_daemonset_pod_pinned_to_its_node_fits_that_node_only() {
    let (mut s, ids) = snapshot_with(vec![
        with_node_labels(node("n1", "4", "4Gi"), &[("zone", "a")]),
        with_node_labels(node("n2", "4", "4Gi"), &[("zone", "b")]),
    ]);
    let pin = |node: &str| json!([{"key": "metadata.name", "operator": "In", "values": [node]}]);
    let only_pin = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": pin("n2")}
    ]}}});
    let p = info(with_affinity(pod("ds-n2", "1", "1Gi"), only_pin));
    assert_eq!(p.pinned_node(), Some("n2"));
    assert_eq!(s.check_pod(&p, ids[0]), Err(Unfit::NodeAffinity));
    assert_eq!(s.check_pod(&p, ids[1]), Ok(()));
    let with_zone = |node: &str| {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}], "matchFields": pin(node)}
        ]}}})
    };
    let p = info(with_affinity(pod("ds-n1", "1", "1Gi"), with_zone("n1")));
    assert_eq!(s.check_pod(&p, ids[0]), Ok(()));
    assert_eq!(s.check_pod(&p, ids[1]), Err(Unfit::NodeAffinity));
    let p = info(with_affinity(pod("ds-n2", "1", "1Gi"), with_zone("n2")));
    assert_eq!(s.check_pod(&p, ids[1]), Err(Unfit::NodeAffinity), "pinned to n2, which is not in zone a");
}

#[test]
fn required_node_affinity_supports_all_operators_and_match_fields() {
    let (mut s, ids) = snapshot_with(vec![
        with_node_labels(node("n1", "4", "4Gi"), &[("zone", "a"), ("gen", "5")]),
        with_node_labels(node("n2", "4", "4Gi"), &[("zone", "b"), ("gen", "3"), ("spot", "true")]),
        with_node_labels(node("n3", "4", "4Gi"), &[("zone", "c")]),
    ]);
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a", "b"]},
            {"key": "spot", "operator": "DoesNotExist"},
            {"key": "gen", "operator": "Gt", "values": ["4"]}
        ]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]}
    ]}}});
    let p = info(with_affinity(pod("a", "1", "1Gi"), affinity));
    assert_eq!(s.check_pod(&p, ids[0]), Ok(()));
    assert_eq!(s.check_pod(&p, ids[1]), Err(Unfit::NodeAffinity));
    assert_eq!(s.check_pod(&p, ids[2]), Ok(()), "second term matches by metadata.name");
    let not_in = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}, {"key": "gen", "operator": "Lt", "values": ["4"]}]}
    ]}}});
    let p = info(with_affinity(pod("b", "1", "1Gi"), not_in));
    assert_eq!(s.check_pod(&p, ids[0]), Err(Unfit::NodeAffinity));
    assert_eq!(s.check_pod(&p, ids[1]), Ok(()));
    assert_eq!(s.check_pod(&p, ids[2]), Err(Unfit::NodeAffinity), "Lt needs the label");
}

#[test]
fn taints_no_schedule_and_no_execute_need_tolerations() {
    let (mut s, ids) = snapshot_with(vec![
        with_taint(node("n1", "4", "4Gi"), "dedicated", "gpu", "NoSchedule"),
        with_taint(node("n2", "4", "4Gi"), "evict", "", "NoExecute"),
        with_taint(node("n3", "4", "4Gi"), "soft", "x", "PreferNoSchedule"),
    ]);
    let plain = info(pod("a", "1", "1Gi"));
    assert_eq!(s.check_pod(&plain, ids[0]).unwrap_err().to_string(), "node(s) had untolerated taint {dedicated: gpu}");
    assert!(matches!(s.check_pod(&plain, ids[1]), Err(Unfit::UntoleratedTaint { .. })));
    assert_eq!(s.check_pod(&plain, ids[2]), Ok(()), "PreferNoSchedule does not filter");
    let equal = info(with_spec(
        pod("b", "1", "1Gi"),
        json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]}),
    ));
    assert_eq!(s.check_pod(&equal, ids[0]), Ok(()));
    let wrong_value =
        info(with_spec(pod("c", "1", "1Gi"), json!({"tolerations": [{"key": "dedicated", "value": "cpu"}]})));
    assert!(s.check_pod(&wrong_value, ids[0]).is_err());
    let exists_all = info(with_spec(pod("d", "1", "1Gi"), json!({"tolerations": [{"operator": "Exists"}]})));
    assert_eq!(s.check_pod(&exists_all, ids[0]), Ok(()));
    assert_eq!(s.check_pod(&exists_all, ids[1]), Ok(()));
    let wrong_effect = info(with_spec(
        pod("e", "1", "1Gi"),
        json!({"tolerations": [{"key": "evict", "operator": "Exists", "effect": "NoSchedule"}]}),
    ));
    assert!(s.check_pod(&wrong_effect, ids[1]).is_err());
}

#[test]
fn host_ports_conflict_on_same_port_protocol_and_ip() {
    let (mut s, ids) = snapshot_with(vec![node("n1", "4", "4Gi")]);
    let port = |name: &str, port: i32, protocol: &str, ip: &str| {
        info(with_spec(
            pod(name, "100m", "10Mi"),
            json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": port, "protocol": protocol, "hostIP": ip}]}]}),
        ))
    };
    s.add_pod(port("a", 8080, "TCP", "10.0.0.1"), ids[0]).unwrap();
    assert_eq!(s.check_pod(&port("b", 8080, "TCP", "0.0.0.0"), ids[0]), Err(Unfit::HostPorts));
    assert_eq!(s.check_pod(&port("c", 8080, "TCP", "10.0.0.1"), ids[0]), Err(Unfit::HostPorts));
    assert_eq!(s.check_pod(&port("d", 8080, "TCP", "10.0.0.2"), ids[0]), Ok(()));
    assert_eq!(s.check_pod(&port("e", 8080, "UDP", "10.0.0.1"), ids[0]), Ok(()));
    assert_eq!(s.check_pod(&port("f", 8081, "TCP", ""), ids[0]), Ok(()));
}

fn anti_affinity(key: &str) -> serde_json::Value {
    json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key}
    ]}})
}

#[test]
fn pod_anti_affinity_hostname_allows_one_per_node() {
    let (mut s, ids) = snapshot_with(vec![node("n1", "4", "4Gi"), node("n2", "4", "4Gi")]);
    s.add_pod(info(with_affinity(web("w1"), anti_affinity("kubernetes.io/hostname"))), ids[0]).unwrap();
    let w2 = info(with_affinity(web("w2"), anti_affinity("kubernetes.io/hostname")));
    assert_eq!(s.check_pod(&w2, ids[0]), Err(Unfit::ExistingPodsAntiAffinity));
    assert_eq!(s.check_pod(&w2, ids[1]), Ok(()));
}

#[test]
fn pod_anti_affinity_against_existing_matching_pods() {
    let (mut s, ids) = snapshot_with(vec![
        with_node_labels(node("n1", "4", "4Gi"), &[("zone", "a")]),
        with_node_labels(node("n2", "4", "4Gi"), &[("zone", "a")]),
        with_node_labels(node("n3", "4", "4Gi"), &[("zone", "b")]),
    ]);
    // The existing pod has no anti-affinity of its own: only the incoming pod's term applies.
    s.add_pod(info(web("plain")), ids[0]).unwrap();
    let p = info(with_affinity(pod("x", "100m", "10Mi"), anti_affinity("zone")));
    assert_eq!(s.check_pod(&p, ids[1]), Err(Unfit::PodAntiAffinity), "same zone as a web pod");
    assert_eq!(s.check_pod(&p, ids[2]), Ok(()));
}

#[test]
fn symmetric_anti_affinity_of_existing_pods_is_honoured() {
    let (mut s, ids) = snapshot_with(vec![
        with_node_labels(node("n1", "4", "4Gi"), &[("zone", "a")]),
        with_node_labels(node("n2", "4", "4Gi"), &[("zone", "a")]),
        with_node_labels(node("n3", "4", "4Gi"), &[("zone", "b")]),
    ]);
    // The existing pod repels web pods from its zone; the incoming web pod has no affinity at all.
    s.add_pod(info(with_affinity(pod("guard", "100m", "10Mi"), anti_affinity("zone"))), ids[0]).unwrap();
    let w = info(web("w"));
    assert_eq!(s.check_pod(&w, ids[1]), Err(Unfit::ExistingPodsAntiAffinity));
    assert_eq!(s.check_pod(&w, ids[2]), Ok(()));
}

#[test]
fn pod_affinity_requires_a_matching_pod_in_the_domain() {
    let (mut s, ids) = snapshot_with(vec![
        with_node_labels(node("n1", "4", "4Gi"), &[("zone", "a")]),
        with_node_labels(node("n2", "4", "4Gi"), &[("zone", "a")]),
        with_node_labels(node("n3", "4", "4Gi"), &[("zone", "b")]),
        node("n4", "4", "4Gi"),
    ]);
    s.add_pod(info(web("w")), ids[0]).unwrap();
    let affinity = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    ]}});
    let cache = info(with_affinity(with_labels(pod("cache", "100m", "10Mi"), &[("app", "cache")]), affinity));
    assert_eq!(s.check_pod(&cache, ids[1]), Ok(()), "same zone as the web pod");
    assert_eq!(s.check_pod(&cache, ids[2]), Err(Unfit::PodAffinity));
    assert_eq!(s.check_pod(&cache, ids[3]), Err(Unfit::PodAffinity), "node lacks the topology key");
}

#[test]
fn pod_affinity_first_pod_of_self_affine_group_may_schedule() {
    let (mut s, ids) = snapshot_with(vec![with_node_labels(node("n1", "4", "4Gi"), &[("zone", "a")])]);
    let affinity = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    ]}});
    let first = info(with_affinity(web("w1"), affinity.clone()));
    assert_eq!(s.check_pod(&first, ids[0]), Ok(()));
    // A pod that does not match its own term gets no such exception.
    let other = info(with_affinity(pod("o", "100m", "10Mi"), affinity));
    assert_eq!(s.check_pod(&other, ids[0]), Err(Unfit::PodAffinity));
}

#[test]
fn pod_affinity_namespaces_and_namespace_selector() {
    let (mut s, ids) = snapshot_with(vec![with_node_labels(node("n1", "4", "4Gi"), &[("zone", "a")])]);
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "team-a", "labels": {"team": "a"}}})).unwrap();
    s.set_namespaces([&ns]);
    s.add_pod(info(with_namespace(web("w"), "team-a")), ids[0]).unwrap();
    let term = |extra: serde_json::Value| {
        let mut t = json!({"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"});
        for (k, v) in extra.as_object().unwrap() {
            t[k] = v.clone();
        }
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}})
    };
    // Default: only the pod's own namespace ("default") is considered.
    assert_eq!(s.check_pod(&info(with_affinity(pod("a", "1", "1Gi"), term(json!({})))), ids[0]), Ok(()));
    let listed = info(with_affinity(pod("b", "1", "1Gi"), term(json!({"namespaces": ["team-a"]}))));
    assert_eq!(s.check_pod(&listed, ids[0]), Err(Unfit::PodAntiAffinity));
    let by_selector =
        info(with_affinity(pod("c", "1", "1Gi"), term(json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}))));
    assert_eq!(s.check_pod(&by_selector, ids[0]), Err(Unfit::PodAntiAffinity));
    let all = info(with_affinity(pod("d", "1", "1Gi"), term(json!({"namespaceSelector": {}}))));
    assert_eq!(s.check_pod(&all, ids[0]), Err(Unfit::PodAntiAffinity));
    let other_team =
        info(with_affinity(pod("e", "1", "1Gi"), term(json!({"namespaceSelector": {"matchLabels": {"team": "b"}}}))));
    assert_eq!(s.check_pod(&other_team, ids[0]), Ok(()));
}

#[test]
fn affinity_index_follows_fork_and_revert() {
    let (mut s, ids) = snapshot_with(vec![node("n1", "4", "4Gi"), node("n2", "4", "4Gi")]);
    let w = |n: &str| info(with_affinity(web(n), anti_affinity("kubernetes.io/hostname")));
    // Register the term before the fork so the index must be maintained through the revert.
    assert_eq!(s.check_pod(&w("probe"), ids[0]), Ok(()));
    s.fork();
    s.add_pod(w("w1"), ids[0]).unwrap();
    assert!(s.check_pod(&w("w2"), ids[0]).is_err());
    s.revert();
    assert_eq!(s.check_pod(&w("w2"), ids[0]), Ok(()));
}

fn spread(key: &str, max_skew: i32, extra: serde_json::Value) -> serde_json::Value {
    let mut c = json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    json!({ "topologySpreadConstraints": [c] })
}

fn zoned(name: &str, zone: &str) -> k8s_openapi::api::core::v1::Node {
    with_node_labels(node(name, "8", "8Gi"), &[("zone", zone)])
}

#[test]
fn topology_spread_max_skew_do_not_schedule() {
    let (mut s, ids) = snapshot_with(vec![zoned("a1", "a"), zoned("b1", "b"), zoned("c1", "c")]);
    s.add_pod(info(web("w1")), ids[0]).unwrap();
    s.add_pod(info(web("w2")), ids[1]).unwrap();
    let p = info(with_spec(web("w3"), spread("zone", 1, json!({}))));
    assert_eq!(s.check_pod(&p, ids[0]), Err(Unfit::TopologySpread), "a would have 2 vs c 0");
    assert_eq!(s.check_pod(&p, ids[2]), Ok(()));
    let lenient = info(with_spec(web("w4"), spread("zone", 2, json!({}))));
    assert_eq!(s.check_pod(&lenient, ids[0]), Ok(()));
}

#[test]
fn topology_spread_schedule_anyway_is_not_a_filter() {
    let (mut s, ids) = snapshot_with(vec![zoned("a1", "a"), zoned("b1", "b")]);
    s.add_pod(info(web("w1")), ids[0]).unwrap();
    let p = info(with_spec(web("w2"), spread("zone", 1, json!({"whenUnsatisfiable": "ScheduleAnyway"}))));
    assert_eq!(s.check_pod(&p, ids[0]), Ok(()));
}

#[test]
fn topology_spread_node_without_key_is_rejected() {
    let (mut s, ids) = snapshot_with(vec![zoned("a1", "a"), node("bare", "8", "8Gi")]);
    let p = info(with_spec(web("w"), spread("zone", 1, json!({}))));
    assert_eq!(s.check_pod(&p, ids[1]), Err(Unfit::TopologySpreadMissingLabel));
}

#[test]
fn topology_spread_min_domains_counts_missing_domains_as_zero() {
    let (mut s, ids) = snapshot_with(vec![zoned("a1", "a"), zoned("b1", "b")]);
    s.add_pod(info(web("w1")), ids[0]).unwrap();
    s.add_pod(info(web("w2")), ids[1]).unwrap();
    // Two domains, each with one pod: with maxSkew 1 a third pod fits anywhere...
    let p = info(with_spec(web("w3"), spread("zone", 1, json!({}))));
    assert_eq!(s.check_pod(&p, ids[0]), Ok(()));
    // ...but with minDomains 3 the global minimum is 0, so 1 + 1 - 0 > 1.
    let p = info(with_spec(web("w4"), spread("zone", 1, json!({"minDomains": 3}))));
    assert_eq!(s.check_pod(&p, ids[0]), Err(Unfit::TopologySpread));
}

#[test]
fn topology_spread_honours_node_affinity_when_counting_domains() {
    let (mut s, ids) = snapshot_with(vec![
        with_node_labels(zoned("a1", "a"), &[("pool", "x")]),
        with_node_labels(zoned("b1", "b"), &[("pool", "x")]),
        with_node_labels(zoned("c1", "c"), &[("pool", "y")]),
    ]);
    s.add_pod(info(web("w1")), ids[0]).unwrap();
    let mut patch = spread("zone", 1, json!({}));
    patch["nodeSelector"] = json!({"pool": "x"});
    // Zone c is not eligible (pool y), so the minimum is over a (1) and b (0).
    let p = info(with_spec(web("w2"), patch.clone()));
    assert_eq!(s.check_pod(&p, ids[1]), Ok(()));
    assert_eq!(s.check_pod(&p, ids[0]), Err(Unfit::TopologySpread));
    // With nodeAffinityPolicy Ignore the pool-y zone c counts as a domain with 0 pods.
    patch["topologySpreadConstraints"][0]["nodeAffinityPolicy"] = json!("Ignore");
    s.add_pod(info(web("w3")), ids[1]).unwrap();
    let p = info(with_spec(web("w4"), patch));
    assert_eq!(s.check_pod(&p, ids[0]), Err(Unfit::TopologySpread), "a:1 b:1 c:0 → a would be 2");
}

#[test]
fn topology_spread_match_label_keys_narrow_the_selector() {
    let (mut s, ids) = snapshot_with(vec![zoned("a1", "a"), zoned("b1", "b")]);
    s.add_pod(info(with_labels(web("old"), &[("rev", "1")])), ids[0]).unwrap();
    let p = info(with_spec(
        with_labels(web("new"), &[("rev", "2")]),
        spread("zone", 1, json!({"matchLabelKeys": ["rev"]})),
    ));
    // Only rev=2 pods count, so zone a holds none of them.
    assert_eq!(s.check_pod(&p, ids[0]), Ok(()));
}

#[test]
fn nodes_marked_for_deletion_take_no_pods() {
    let (mut s, ids) = snapshot_with(vec![node("n1", "4", "4Gi")]);
    s.mark_to_be_deleted(ids[0]).unwrap();
    assert!(matches!(s.check_pod(&info(pod("a", "1", "1Gi")), ids[0]), Err(Unfit::UntoleratedTaint { .. })));
}

#[test]
fn search_hint_finds_next_fitting_node() {
    let (mut s, ids) = snapshot_with(vec![node("n1", "1", "4Gi"), node("n2", "1", "4Gi"), node("n3", "1", "4Gi")]);
    let mut hint = simulator::scheduling::SearchHint::default();
    let mut placed = Vec::new();
    for i in 0..3 {
        let id = s.schedule_anywhere(info(pod(&format!("p{i}"), "1", "1Gi")), &mut hint, |_, _| true).unwrap();
        placed.push(id.unwrap());
    }
    assert_eq!(placed, ids);
    assert!(s.schedule_anywhere(info(pod("p4", "1", "1Gi")), &mut hint, |_, _| true).unwrap().is_none());
}

/// `fits_no_accepted_node` answers true only when draining the rejected nodes cannot change
/// the answer, and then a drain of the rejected node and a search for its pod fail too.
#[test]
fn a_pod_that_fits_no_other_node_fits_none_after_a_drain() {
    use simulator::scheduling::SearchHint;
    let (mut s, ids) = snapshot_with(vec![node("a", "2", "4Gi"), node("b", "1", "4Gi")]);
    let (a, b) = (ids[0], ids[1]);
    let moved = info(with_labels(pod("moved", "500m", "100Mi"), &[("app", "web")]));
    s.add_pod(moved.clone(), a).unwrap();
    s.add_pod(info(pod("filler", "800m", "100Mi")), b).unwrap();
    let not_a = |id: NodeId, _: &simulator::NodeInfo| id != a;
    let hint = SearchHint::default();
    assert!(s.fits_no_accepted_node(&moved, hint, not_a), "b has 200m free, the pod asks 500m");

    // The search after a drain of `a` agrees.
    s.fork();
    s.remove_pod(&moved.key).unwrap();
    s.mark_to_be_deleted(a).unwrap();
    assert_eq!(s.find_node_for(&moved, &mut hint.clone(), not_a), None);
    s.revert();

    // A pod that fits `b` is not hopeless.
    assert!(!s.fits_no_accepted_node(&info(pod("small", "100m", "100Mi")), hint, not_a));

    // A pod whose fit depends on other pods is never answered from the state before the
    // drain: its own anti-affinity (the drain may take away the pods it avoids)...
    let avoids_web = info(with_affinity(
        pod("avoids-web", "1", "100Mi"),
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}),
    ));
    assert!(!s.fits_no_accepted_node(&avoids_web, hint, not_a));
    // ... or a placed pod's anti-affinity term that matches it (the drain may take it away).
    s.add_pod(avoids_web, a).unwrap();
    let web = info(with_labels(pod("web", "1", "100Mi"), &[("app", "web")]));
    assert!(!s.fits_no_accepted_node(&web, hint, not_a));
    let other = info(with_labels(pod("other", "1", "100Mi"), &[("app", "other")]));
    assert!(s.fits_no_accepted_node(&other, hint, not_a));
    assert!(s.fits_no_accepted_node(&info(pod("small", "100m", "100Mi")), hint, |id, _| id != a && id != b));
}
