//! Synthetic clusters for benchmarks and tests: upstream's benchmark scenarios, built directly
//! as a `ClusterView` and `CloudState` (no provider calls, no I/O).

use std::collections::HashMap;
use std::sync::Arc;

use cloudprovider::{
    Instance, InstanceState, InstanceStatus, NodeGroupAutoscalingOptions, NodeTemplate, ResourceLimiter,
};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use simulator::pod::{PodInfo, PodInterner};

use super::cloud::{CloudState, NodeGroupState};
use super::view::ClusterView;

pub const CREATED: &str = "2026-01-01T00:00:00Z";

pub fn node(name: &str, group: &str, cpu_milli: i64, mem_gib: i64, max_pods: i64) -> Node {
    let r = json!({"cpu": format!("{cpu_milli}m"), "memory": format!("{mem_gib}Gi"), "pods": max_pods.to_string()});
    serde_json::from_value(json!({
        "metadata": {"name": name, "creationTimestamp": CREATED,
                     "labels": {"kubernetes.io/hostname": name, "group": group}},
        "spec": {"providerID": format!("bench://{group}/{name}")},
        "status": {"capacity": r, "allocatable": r,
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": CREATED}]}
    }))
    .expect("valid node")
}

/// A pod of ReplicaSet `rs`, running on `node` or pending (unschedulable) when `node` is None.
pub fn rs_pod(rs: &str, index: usize, cpu_milli: i64, mem_mib: i64, node: Option<&str>, anti_affinity: bool) -> Pod {
    let mut spec = json!({"containers": [{"name": "c", "resources": {"requests": {
        "cpu": format!("{cpu_milli}m"), "memory": format!("{mem_mib}Mi")}}}]});
    if anti_affinity {
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": rs}}, "topologyKey": "kubernetes.io/hostname"}]}});
    }
    let status = match node {
        Some(n) => {
            spec["nodeName"] = json!(n);
            json!({"phase": "Running"})
        }
        None => json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
    };
    serde_json::from_value(json!({
        "metadata": {"name": format!("{rs}-{index}"), "namespace": "default", "uid": format!("{rs}-{index}-uid"),
                     "creationTimestamp": CREATED, "labels": {"app": rs},
                     "annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                          "uid": format!("{rs}-uid"), "controller": true}]},
        "spec": spec,
        "status": status
    }))
    .expect("valid pod")
}

pub fn replicaset(rs: &str, replicas: i32) -> k8s_openapi::api::apps::v1::ReplicaSet {
    serde_json::from_value(json!({
        "metadata": {"name": rs, "namespace": "default", "uid": format!("{rs}-uid")},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": rs}}}
    }))
    .expect("valid replicaset")
}

/// A node group whose members are the given nodes, with a template like them.
pub fn group(id: &str, min: usize, max: usize, members: &[&Node], template: Node) -> NodeGroupState {
    NodeGroupState {
        id: id.to_string(),
        min_size: min,
        max_size: max,
        target_size: members.len(),
        instances: Arc::new(
            members
                .iter()
                .map(|n| Instance {
                    id: n.spec.as_ref().and_then(|s| s.provider_id.clone()).unwrap_or_default(),
                    status: Some(InstanceStatus { state: InstanceState::Running, error: None }),
                })
                .collect(),
        ),
        template: Some(NodeTemplate { node: template, pods: Vec::new() }),
        template_gpu: None,
        options: NodeGroupAutoscalingOptions::default(),
        exists: true,
        autoprovisioned: false,
        debug: id.to_string(),
    }
}

/// Cloud state for the given groups; nodes map to groups by their `group` label.
pub fn cloud(groups: Vec<NodeGroupState>, nodes: &[Arc<Node>]) -> CloudState {
    let index: HashMap<String, usize> = groups.iter().enumerate().map(|(i, g)| (g.id.clone(), i)).collect();
    let node_group_indexes = nodes
        .iter()
        .map(|n| n.metadata.labels.as_ref().and_then(|l| l.get("group")).and_then(|label| index.get(label)).copied())
        .collect();
    CloudState {
        provider_name: "bench".into(),
        groups,
        node_positions: Arc::new(super::node_positions::NodePositions::of(nodes)),
        node_group_indexes,
        resource_limiter: ResourceLimiter::default(),
        ..Default::default()
    }
}

/// Upstream's `BenchmarkRunOnceScaleUp`: one node group, no nodes yet, 50,000 pending pods of
/// which 50 fit a node → 1,000 nodes.
pub fn scale_up_50k() -> (ClusterView, CloudState) {
    let template = node("template", "ng", 4000, 16, 110);
    let mut view = ClusterView::default();
    let mut interner = PodInterner::new();
    view.replicasets.push(Arc::new(replicaset("burst", 50_000)));
    for i in 0..50_000 {
        view.pods.push(Arc::new(PodInfo::interned(rs_pod("burst", i, 80, 256, None, false), &mut interner)));
    }
    let mut g = group("ng", 0, 2000, &[], template);
    g.target_size = 0;
    let cloud = cloud(vec![g], &view.nodes);
    (view, cloud)
}

/// Upstream's `BenchmarkRunOnceScaleDown`: 2,000 nodes × 40 pods at 40% utilization, all
/// safe to evict; the load fits on 800 of them → 1,200 unneeded.
pub fn scale_down_2000() -> (ClusterView, CloudState) {
    let mut view = ClusterView::default();
    let mut interner = PodInterner::new();
    let nodes: Vec<Node> = (0..2000).map(|i| node(&format!("node-{i:04}"), "ng", 4000, 16, 110)).collect();
    view.replicasets.push(Arc::new(replicaset("load", 80_000)));
    let mut k = 0;
    for n in &nodes {
        for _ in 0..40 {
            view.pods.push(Arc::new(PodInfo::interned(
                rs_pod("load", k, 40, 100, n.metadata.name.as_deref(), false),
                &mut interner,
            )));
            k += 1;
        }
    }
    let members: Vec<&Node> = nodes.iter().collect();
    let g = group("ng", 0, 3000, &members, nodes[0].clone());
    view.nodes = nodes.into_iter().map(Arc::new).collect();
    let cloud = cloud(vec![g], &view.nodes);
    (view, cloud)
}

/// An anti-affinity surge: 5,000 nodes in 50 groups of 100, ten Deployments of 5,000 replicas
/// each spread one per node by hostname anti-affinity (50,000 pods), and 6,000 pending replicas
/// of an eleventh such Deployment: 5,000 fit the existing nodes, 1,000 need new ones.
pub fn anti_affinity_surge() -> (ClusterView, CloudState) {
    let mut view = ClusterView::default();
    let mut interner = PodInterner::new();
    let mut groups = Vec::new();
    let mut all_nodes = Vec::new();
    for g in 0..50 {
        let id = format!("ng-{g:02}");
        let nodes: Vec<Node> = (0..100).map(|i| node(&format!("{id}-{i:03}"), &id, 3900, 16, 110)).collect();
        let members: Vec<&Node> = nodes.iter().collect();
        groups.push(group(&id, 0, 200, &members, nodes[0].clone()));
        all_nodes.extend(nodes);
    }
    for d in 0..10 {
        let rs = format!("svc-{d}");
        view.replicasets.push(Arc::new(replicaset(&rs, 5000)));
        for (i, n) in all_nodes.iter().enumerate() {
            view.pods.push(Arc::new(PodInfo::interned(
                rs_pod(&rs, i, 300, 1024, n.metadata.name.as_deref(), true),
                &mut interner,
            )));
        }
    }
    view.replicasets.push(Arc::new(replicaset("surge", 6000)));
    for i in 0..6000 {
        view.pods.push(Arc::new(PodInfo::interned(rs_pod("surge", i, 300, 1024, None, true), &mut interner)));
    }
    view.nodes = all_nodes.into_iter().map(Arc::new).collect();
    let cloud = cloud(groups, &view.nodes);
    (view, cloud)
}

/// A large running cluster for one control-loop iteration: 5,000 nodes in 10 groups of 500,
/// 140,000 running pods (28 per node, 96% of cpu: no scale-down candidates) and 10,000 pending
/// pods of 10 Deployments that fit no existing node. Returns the view and a cloud-config for
/// the static provider (groups by the `group` label).
pub fn run_once_large() -> (ClusterView, String) {
    let mut view = ClusterView::default();
    let mut interner = PodInterner::new();
    let mut config = String::from("nodeGroups:\n");
    for g in 0..10 {
        let id = format!("ng-{g}");
        config.push_str(&format!(
            "- id: {id}\n  minSize: 0\n  maxSize: 1000\n  nodeSelector: {{group: {id}}}\n  pricePerHour: 0.4\n"
        ));
        for i in 0..500 {
            let mut n = node(&format!("{id}-{i:03}"), &id, 7900, 32, 110);
            n.spec.get_or_insert_with(Default::default).provider_id = None;
            view.nodes.push(Arc::new(n));
        }
    }
    for d in 0..10 {
        let rs = format!("running-{d}");
        view.replicasets.push(Arc::new(replicaset(&rs, 14_000)));
    }
    let mut k = 0;
    for (i, n) in view.nodes.clone().iter().enumerate() {
        for j in 0..28 {
            let rs = format!("running-{}", (i + j) % 10);
            view.pods.push(Arc::new(PodInfo::interned(
                rs_pod(&rs, k, 270, 512, n.metadata.name.as_deref(), false),
                &mut interner,
            )));
            k += 1;
        }
    }
    for d in 0..10 {
        let rs = format!("pending-{d}");
        view.replicasets.push(Arc::new(replicaset(&rs, 1000)));
        for i in 0..1000 {
            view.pods.push(Arc::new(PodInfo::interned(rs_pod(&rs, i, 500, 1024, None, false), &mut interner)));
        }
    }
    (view, config)
}

/// The scale-down profile at a third of its size: 5,000 nodes in one group, 1,000
/// Deployments of 150 replicas each spread by hostname anti-affinity of their own (150,000 pods,
/// 30 per node, each node's from 30 different Deployments), at 30% of cpu so every node is a
/// scale-down candidate. Every Deployment brings a distinct affinity term to the simulation.
pub fn scale_down_anti_affinity_150k() -> (ClusterView, CloudState) {
    let mut view = ClusterView::default();
    let mut interner = PodInterner::new();
    let nodes: Vec<Node> = (0..5000).map(|i| node(&format!("node-{i:04}"), "ng", 4000, 16, 110)).collect();
    for d in 0..1000 {
        let rs = format!("svc-{d:04}");
        view.replicasets.push(Arc::new(replicaset(&rs, 150)));
        for k in 0..150 {
            // Deployment d fills 150 consecutive nodes from d*150 (mod 5,000): the ranges of
            // d and d+100 coincide, so each node holds 30 pods of 30 different Deployments.
            let n = &nodes[(d * 150 + k) % nodes.len()];
            view.pods.push(Arc::new(PodInfo::interned(
                rs_pod(&rs, k, 40, 100, n.metadata.name.as_deref(), true),
                &mut interner,
            )));
        }
    }
    let members: Vec<&Node> = nodes.iter().collect();
    let g = group("ng", 0, 6000, &members, nodes[0].clone());
    view.nodes = nodes.into_iter().map(Arc::new).collect();
    let cloud = cloud(vec![g], &view.nodes);
    (view, cloud)
}
