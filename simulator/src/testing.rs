//! Small builders for nodes and pods, for tests and benchmarks across the workspace.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::well_known::HOSTNAME_LABEL;

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
}

/// A ready node with the given cpu / memory allocatable (and capacity), 110 pods and a
/// hostname label.
pub fn node(name: &str, cpu: &str, memory: &str) -> Node {
    let resources = quantities(&[("cpu", cpu), ("memory", memory), ("pods", "110")]);
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([(HOSTNAME_LABEL.to_string(), name.to_string())].into()),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            conditions: Some(vec![k8s_openapi::api::core::v1::NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

pub fn with_node_labels(mut node: Node, labels: &[(&str, &str)]) -> Node {
    let l = node.metadata.labels.get_or_insert_with(Default::default);
    for (k, v) in labels {
        l.insert(k.to_string(), v.to_string());
    }
    node
}

pub fn with_taint(mut node: Node, key: &str, value: &str, effect: &str) -> Node {
    let spec = node.spec.get_or_insert_with(Default::default);
    spec.taints.get_or_insert_with(Vec::new).push(Taint {
        key: key.into(),
        value: Some(value.into()).filter(|v: &String| !v.is_empty()),
        effect: effect.into(),
        ..Default::default()
    });
    node
}

pub fn with_extended_resource(mut node: Node, name: &str, amount: &str) -> Node {
    let status = node.status.get_or_insert_with(Default::default);
    for list in [&mut status.capacity, &mut status.allocatable] {
        list.get_or_insert_with(Default::default).insert(name.to_string(), Quantity(amount.to_string()));
    }
    node
}

/// A pod in namespace `default` with one container requesting cpu / memory.
pub fn pod(name: &str, cpu: &str, memory: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some("default".to_string()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(&[("cpu", cpu), ("memory", memory)])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus { phase: Some("Running".into()), ..Default::default() }),
    }
}

pub fn with_labels(mut pod: Pod, labels: &[(&str, &str)]) -> Pod {
    let l = pod.metadata.labels.get_or_insert_with(Default::default);
    for (k, v) in labels {
        l.insert(k.to_string(), v.to_string());
    }
    pod
}

pub fn with_namespace(mut pod: Pod, namespace: &str) -> Pod {
    pod.metadata.namespace = Some(namespace.to_string());
    pod
}

pub fn with_owner(mut pod: Pod, kind: &str, name: &str) -> Pod {
    pod.metadata.owner_references = Some(vec![OwnerReference {
        api_version: if kind == "Job" { "batch/v1".into() } else { "apps/v1".into() },
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{kind}-{name}"),
        controller: Some(true),
        ..Default::default()
    }]);
    pod
}

pub fn with_annotation(mut pod: Pod, key: &str, value: &str) -> Pod {
    pod.metadata.annotations.get_or_insert_with(Default::default).insert(key.to_string(), value.to_string());
    pod
}

pub fn on_node(mut pod: Pod, node: &str) -> Pod {
    pod.spec.get_or_insert_with(Default::default).node_name = Some(node.to_string());
    pod
}

/// Marks the pod Pending and unschedulable, as kube-scheduler does when nothing fits.
pub fn unschedulable(mut pod: Pod) -> Pod {
    pod.status = Some(PodStatus {
        phase: Some("Pending".into()),
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("Unschedulable".into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    pod
}
