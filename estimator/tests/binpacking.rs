//! The binpacking estimator against upstream's own expectations (same node shapes, pod shapes and
//! expected node / pod counts as upstream's estimator tests and benchmark).

use std::sync::Arc;
use std::time::Duration;

use estimator::{EstimationLimiter, Threshold, estimate};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use simulator::equivalence::PodEquivalenceGroup;
use simulator::{ClusterSnapshot, NodeInfo, PodInfo};

fn make_node(cpu_milli: i64, mem_mib: i64, pods: i64, name: &str, zone: &str) -> Node {
    let resources = json!({"cpu": format!("{cpu_milli}m"), "memory": format!("{mem_mib}Mi"), "pods": pods.to_string()});
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
        "status": {"capacity": resources, "allocatable": resources,
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

struct PodShape {
    cpu_milli: i64,
    mem_bytes: i64,
    host_port: Option<i32>,
    spread: Option<(i32, &'static str, i32)>,
}

fn shape(cpu_milli: i64, mem_bytes: i64) -> PodShape {
    PodShape { cpu_milli, mem_bytes, host_port: None, spread: None }
}

fn group(prefix: &str, s: &PodShape, count: usize) -> PodEquivalenceGroup {
    let pods = (0..count)
        .map(|i| {
            let mut container = json!({"name": "c", "resources": {"requests": {"cpu": format!("{}m", s.cpu_milli), "memory": s.mem_bytes.to_string()}}});
            if let Some(port) = s.host_port {
                container["ports"] = json!([{"containerPort": port, "hostPort": port}]);
            }
            let mut spec = json!({"containers": [container]});
            if let Some((max_skew, key, min_domains)) = s.spread {
                spec["topologySpreadConstraints"] = json!([{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                    "minDomains": min_domains, "labelSelector": {"matchLabels": {"app": "estimatee"}}}]);
            }
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("{prefix}-{i}"), "namespace": "universe", "labels": {"app": "estimatee"}},
                "spec": spec
            }))
            .unwrap();
            Arc::new(PodInfo::new(&pod))
        })
        .collect();
    PodEquivalenceGroup { pods }
}

/// Runs one estimation the way upstream's tests do: a cluster with one small node in another
/// zone (so zonal spreading has a second domain), the template in zone "mars".
fn run(template: Node, groups: &[PodEquivalenceGroup], max_nodes: i64, fast_path: bool) -> estimator::Estimate {
    let mut snapshot = ClusterSnapshot::new();
    snapshot.add_node(Arc::new(make_node(100, 100, 10, "oldnode", "zone-jupiter"))).unwrap();
    let template = NodeInfo::new(Arc::new(template));
    let mut limiter = EstimationLimiter::new(&[Threshold::fixed(max_nodes, Duration::ZERO)]);
    let result = estimate(&mut snapshot, groups, &template, &mut limiter, fast_path).unwrap();
    assert_eq!(snapshot.node_count(), 1, "the estimation must leave the snapshot as it was");
    assert_eq!(snapshot.pod_count(), 0);
    result
}

#[test]
fn simple_resource_based_binpacking() {
    let r =
        run(make_node(350 * 3 - 50, 2000, 10, "template", "zone-mars"), &[group("p", &shape(350, 1000), 10)], 0, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (5, 10));
}

#[test]
fn pods_per_node_bound_binpacking() {
    let r = run(make_node(10000, 20000, 10, "template", "zone-mars"), &[group("p", &shape(10, 100), 20)], 0, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (2, 20));
}

#[test]
fn hostport_conflict_forces_pod_per_node() {
    let s = PodShape { host_port: Some(5555), ..shape(200, 1000) };
    let r = run(make_node(1000, 5000, 10, "template", "zone-mars"), &[group("p", &s, 8)], 0, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (8, 8));
}

#[test]
fn limiter_cuts_binpacking() {
    let r = run(make_node(1000, 5000, 10, "template", "zone-mars"), &[group("p", &shape(500, 1000), 20)], 5, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (5, 10));
    assert!(r.limited);
}

#[test]
fn decreasing_ordered_pods_are_processed_first() {
    let small = group("small", &shape(50, 1000), 10);
    let large = group("large", &shape(500, 1000), 10);
    let r = run(make_node(1000, 5000, 10, "template", "zone-mars"), &[small, large.clone()], 5, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (5, 10));
    let keys: Vec<_> = r.scheduled_pods.iter().map(|p| p.key.clone()).collect();
    let expected: Vec<_> = large.pods.iter().map(|p| p.key.clone()).collect();
    assert_eq!(keys, expected);
}

#[test]
fn hostname_topology_spreading_with_max_skew_2_forces_2_pods_per_node() {
    let s = PodShape { spread: Some((2, "kubernetes.io/hostname", 1)), ..shape(200, 200) };
    let r = run(make_node(1000, 5000, 10, "template", "zone-mars"), &[group("p", &s, 8)], 0, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (4, 8));
}

#[test]
fn zonal_topology_spreading_with_max_skew_2_only_allows_2_pods() {
    let s = PodShape { spread: Some((2, "topology.kubernetes.io/zone", 1)), ..shape(20, 100) };
    let r = run(make_node(1000, 5000, 10, "template", "zone-mars"), &[group("p", &s, 8)], 0, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (1, 2));
}

#[test]
fn hostname_spreading_max_skew_1_large_scale_up_schedules_pods_retroactively() {
    let s = PodShape { spread: Some((1, "kubernetes.io/hostname", 3)), ..shape(20, 100) };
    let r = run(make_node(1000, 5000, 10, "template", "zone-mars"), &[group("p", &s, 12)], 0, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (3, 12));
}

#[test]
fn fast_path_simple_resource_based_binpacking() {
    let r =
        run(make_node(350 * 3 - 50, 2000, 10, "template", "zone-mars"), &[group("p", &shape(350, 1000), 10)], 0, true);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (5, 10));
}

#[test]
fn pods_that_do_not_fit_a_fresh_node_open_no_nodes() {
    let r = run(make_node(1000, 5000, 10, "template", "zone-mars"), &[group("p", &shape(2000, 1000), 3)], 0, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (0, 0));
}

#[test]
fn upstream_benchmark_shape_needs_2595_nodes() {
    let groups = [group("a", &shape(50, 100), 50_000), group("b", &shape(95, 190), 1000)];
    let r = run(make_node(1000, 5000, 100, "template", "zone-mars"), &groups, 3000, false);
    assert_eq!((r.node_count, r.scheduled_pods.len()), (2595, 51_000));
}
