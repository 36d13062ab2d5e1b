//! Upstream's BenchmarkBinpackingEstimate: 51,000 pods in two equivalence groups onto a
//! 1000m / 5000Mi / 100-pod template, limit 3000 nodes → 2595 nodes.

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use estimator::{EstimationLimiter, Threshold, estimate};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use simulator::equivalence::PodEquivalenceGroup;
use simulator::{ClusterSnapshot, NodeInfo, PodInfo};

fn node(cpu_milli: i64, mem_mib: i64, pods: i64, name: &str, zone: &str) -> Node {
    let r = json!({"cpu": format!("{cpu_milli}m"), "memory": format!("{mem_mib}Mi"), "pods": pods.to_string()});
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}},
        "status": {"capacity": r, "allocatable": r}}))
    .unwrap()
}

fn group(prefix: &str, cpu_milli: i64, mem: i64, count: usize) -> PodEquivalenceGroup {
    let pods = (0..count)
        .map(|i| {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("{prefix}-{i}"), "namespace": "universe", "labels": {"app": "estimatee"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": format!("{cpu_milli}m"), "memory": mem.to_string()}}}]}
            }))
            .unwrap();
            Arc::new(PodInfo::new(&pod))
        })
        .collect();
    PodEquivalenceGroup { pods }
}

fn bench(c: &mut Criterion) {
    let groups = [group("a", 50, 100, 50_000), group("b", 95, 190, 1000)];
    let template = NodeInfo::new(Arc::new(node(1000, 5000, 100, "template", "zone-mars")));
    c.bench_function("binpacking_51000_pods_into_templates", |b| {
        b.iter(|| {
            let mut snapshot = ClusterSnapshot::new();
            snapshot.add_node(Arc::new(node(100, 100, 10, "oldnode", "zone-jupiter"))).unwrap();
            let mut limiter = EstimationLimiter::new(&[Threshold::fixed(3000, Duration::ZERO)]);
            let r = estimate(&mut snapshot, &groups, &template, &mut limiter, false).unwrap();
            assert_eq!(r.node_count, 2595);
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
