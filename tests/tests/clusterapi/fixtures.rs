//! Cluster API objects as a management cluster holds them (`cluster.x-k8s.io/v1beta1` unless
//! said), the nodes their kubelets register, and [`MiniCapi`]: just enough of Cluster API's
//! MachineDeployment and MachineSet controllers (and of the kubelet) to let the real binary
//! scale against the fake API server.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};
use tests::fake_apiserver::FakeApiServer;

pub const V1BETA1: &str = "cluster.x-k8s.io/v1beta1";
pub const V1BETA2: &str = "cluster.x-k8s.io/v1beta2";
pub const INFRA: &str = "infrastructure.cluster.x-k8s.io/v1beta1";
pub const MIN: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
pub const MAX: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
pub const CPU: &str = "capacity.cluster-autoscaler.kubernetes.io/cpu";
pub const MEMORY: &str = "capacity.cluster-autoscaler.kubernetes.io/memory";
pub const DELETE_MACHINE: &str = "cluster.x-k8s.io/delete-machine";
pub const DEPLOYMENT_LABEL: &str = "cluster.x-k8s.io/deployment-name";
pub const SET_LABEL: &str = "cluster.x-k8s.io/set-name";
pub const CLUSTER_LABEL: &str = "cluster.x-k8s.io/cluster-name";

pub fn annotations(pairs: &[(&str, &str)]) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

/// Size annotations plus capacity annotations for 4-CPU, 16 GiB nodes.
pub fn sized(min: usize, max: usize) -> Vec<(&'static str, String)> {
    vec![(MIN, min.to_string()), (MAX, max.to_string()), (CPU, "4".into()), (MEMORY, "16Gi".into())]
}

pub fn pairs<'a>(list: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    list.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A MachineDeployment of Cluster `cluster` whose Machines carry its deployment-name label and
/// whose infrastructure template is the DockerMachineTemplate `<name>-template`.
pub fn machine_deployment(
    namespace: &str,
    name: &str,
    cluster: &str,
    replicas: usize,
    notes: &[(&str, &str)],
) -> Value {
    json!({
        "apiVersion": V1BETA1, "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {CLUSTER_LABEL: cluster}, "annotations": annotations(notes)},
        "spec": {
            "clusterName": cluster,
            "replicas": replicas,
            "selector": {"matchLabels": {CLUSTER_LABEL: cluster, DEPLOYMENT_LABEL: name}},
            "template": {
                "metadata": {"labels": {CLUSTER_LABEL: cluster, DEPLOYMENT_LABEL: name}},
                "spec": {
                    "clusterName": cluster,
                    "bootstrap": {"configRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "KubeadmConfigTemplate", "name": name}},
                    "infrastructureRef": {"apiVersion": INFRA, "kind": "DockerMachineTemplate", "name": format!("{name}-template")},
                },
            },
        },
    })
}

/// The MachineSet a MachineDeployment rolls out (`<md>-set`).
pub fn machine_set_of(namespace: &str, md: &str, cluster: &str, replicas: usize) -> Value {
    json!({
        "apiVersion": V1BETA1, "kind": "MachineSet",
        "metadata": {
            "name": format!("{md}-set"), "namespace": namespace,
            "labels": {CLUSTER_LABEL: cluster, DEPLOYMENT_LABEL: md},
            "ownerReferences": [{"apiVersion": V1BETA1, "kind": "MachineDeployment", "name": md, "uid": format!("uid-{md}"), "controller": true}],
        },
        "spec": {
            "clusterName": cluster, "replicas": replicas,
            "selector": {"matchLabels": {CLUSTER_LABEL: cluster, DEPLOYMENT_LABEL: md}},
        },
    })
}

/// A MachineSet no MachineDeployment owns.
pub fn machine_set(namespace: &str, name: &str, cluster: &str, replicas: usize, notes: &[(&str, &str)]) -> Value {
    json!({
        "apiVersion": V1BETA1, "kind": "MachineSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {CLUSTER_LABEL: cluster}, "annotations": annotations(notes)},
        "spec": {"clusterName": cluster, "replicas": replicas, "selector": {"matchLabels": {SET_LABEL: name}}},
    })
}

/// A Machine of MachineSet `set` (of MachineDeployment `md` when given): with a providerID and
/// a node reference when `node` is given, pending otherwise.
pub fn machine(namespace: &str, name: &str, cluster: &str, set: &str, md: Option<&str>, node: Option<&str>) -> Value {
    let mut labels = json!({CLUSTER_LABEL: cluster, SET_LABEL: set});
    if let Some(md) = md {
        labels[DEPLOYMENT_LABEL] = json!(md);
    }
    let mut machine = json!({
        "apiVersion": V1BETA1, "kind": "Machine",
        "metadata": {
            "name": name, "namespace": namespace, "labels": labels,
            "ownerReferences": [{"apiVersion": V1BETA1, "kind": "MachineSet", "name": set, "uid": format!("uid-{set}"), "controller": true}],
        },
        "spec": {"clusterName": cluster},
        "status": {"phase": "Provisioning"},
    });
    if let Some(node) = node {
        machine["spec"]["providerID"] = json!(provider_id(node));
        machine["status"] = json!({"phase": "Running", "nodeRef": {"kind": "Node", "name": node}});
    }
    machine
}

pub fn provider_id(node: &str) -> String {
    format!("docker:///{node}")
}

/// The infrastructure template, reporting `capacity` in `status.capacity` (Cluster API's opt-in
/// scale-from-zero contract) when given.
pub fn docker_template(namespace: &str, name: &str, capacity: Option<Value>) -> Value {
    let mut template = json!({
        "apiVersion": INFRA, "kind": "DockerMachineTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": {"spec": {}}},
    });
    if let Some(capacity) = capacity {
        template["status"] = json!({"capacity": capacity});
    }
    template
}

/// What a kubelet registers: a ready node with a providerID, annotated with its Machine as
/// Cluster API does.
pub fn kubelet_node(name: &str, machine: &str, namespace: &str, cpu: &str, memory: &str) -> Node {
    let resources: BTreeMap<String, Quantity> = [("cpu", cpu), ("memory", memory), ("pods", "110")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect();
    let now = Time(Timestamp::now());
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([
                ("kubernetes.io/os".to_string(), "linux".to_string()),
                ("kubernetes.io/arch".to_string(), "amd64".to_string()),
                ("kubernetes.io/hostname".to_string(), name.to_string()),
            ])),
            annotations: Some(BTreeMap::from([
                ("cluster.x-k8s.io/machine".to_string(), machine.to_string()),
                ("cluster.x-k8s.io/cluster-namespace".to_string(), namespace.to_string()),
            ])),
            creation_timestamp: Some(now.clone()),
            ..Default::default()
        },
        spec: Some(NodeSpec { provider_id: Some(provider_id(name)), ..Default::default() }),
        status: Some(NodeStatus {
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_heartbeat_time: Some(now.clone()),
                last_transition_time: Some(now),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

pub fn pending_pod(name: &str, cpu: &str) -> Pod {
    Pod {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("app".into()),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([("cpu".to_string(), Quantity(cpu.to_string()))])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(tests::unschedulable_status(None)),
    }
}

/// What becomes of the Machines a MachineSet creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The infrastructure comes up and the kubelet registers a node.
    Node,
    /// The Machine stays Provisioning forever (no node ever registers).
    Stuck,
    /// The Machine fails (`phase: Failed`, `failureMessage`), as on a quota error.
    Fail,
}

/// Cluster API's MachineDeployment → MachineSet → Machine reconciliation and the kubelet, for
/// one MachineDeployment, every 50 ms: the MachineSet follows the MachineDeployment's replicas;
/// missing Machines are created (with their node on the workload server, per [`Outcome`]);
/// extra Machines go, those with the delete-machine annotation first (the MachineSet
/// controller's order), their nodes with them.
pub struct MiniCapi {
    pub outcome: Arc<Mutex<Outcome>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MiniCapi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MiniCapi {
    pub fn start(
        management: Arc<FakeApiServer>,
        workload: Arc<FakeApiServer>,
        namespace: &str,
        md: &str,
        cluster: &str,
        outcome: Outcome,
    ) -> MiniCapi {
        let outcome = Arc::new(Mutex::new(outcome));
        let shared = outcome.clone();
        let (namespace, md, cluster) = (namespace.to_string(), md.to_string(), cluster.to_string());
        let task = tokio::spawn(async move {
            let mut created = 0;
            loop {
                let outcome = *shared.lock().unwrap();
                reconcile(&management, &workload, &namespace, &md, &cluster, outcome, &mut created);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        MiniCapi { outcome, task }
    }
}

fn reconcile(
    management: &FakeApiServer,
    workload: &FakeApiServer,
    namespace: &str,
    md: &str,
    cluster: &str,
    outcome: Outcome,
    created: &mut usize,
) {
    let Some(deployment) = management.get_value(V1BETA1, "MachineDeployment", Some(namespace), md) else { return };
    let replicas = deployment.pointer("/spec/replicas").and_then(Value::as_u64).unwrap_or(0) as usize;
    let set = format!("{md}-set");
    if management.get_value(V1BETA1, "MachineSet", Some(namespace), &set).is_none() {
        management.seed_value(machine_set_of(namespace, md, cluster, replicas)).unwrap();
    }
    management
        .modify_value(V1BETA1, "MachineSet", Some(namespace), &set, |ms| ms["spec"]["replicas"] = json!(replicas));
    let mut machines: Vec<Value> = management
        .list_values(V1BETA1, "Machine")
        .into_iter()
        .filter(|m| m.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace))
        .filter(|m| {
            m.pointer(&format!("/metadata/labels/{}", DEPLOYMENT_LABEL.replace('/', "~1"))).and_then(Value::as_str)
                == Some(md)
        })
        .collect();
    while machines.len() < replicas {
        *created += 1;
        let name = format!("{md}-{created}");
        let node = format!("{name}-node");
        let mut object = machine(namespace, &name, cluster, &set, Some(md), None);
        match outcome {
            Outcome::Node => {
                object = machine(namespace, &name, cluster, &set, Some(md), Some(&node));
                workload.seed(&kubelet_node(&node, &name, namespace, "4", "16Gi"));
            }
            Outcome::Stuck => {}
            Outcome::Fail => {
                object["status"] =
                    json!({"phase": "Failed", "failureReason": "CreateError", "failureMessage": "quota exceeded"});
            }
        }
        machines.push(management.seed_value(object).unwrap());
    }
    if machines.len() > replicas {
        // The MachineSet controller's deletion order: marked Machines first, then the newest.
        machines.sort_by_key(|m| {
            let marked = m.pointer(&format!("/metadata/annotations/{}", DELETE_MACHINE.replace('/', "~1"))).is_some();
            let version =
                m.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse::<u64>().ok());
            (!marked, std::cmp::Reverse(version))
        });
        for doomed in &machines[..machines.len() - replicas] {
            let name = doomed.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            management.remove_value(V1BETA1, "Machine", Some(namespace), name);
            if let Some(node) = doomed.pointer("/status/nodeRef/name").and_then(Value::as_str) {
                workload.remove::<Node>(None, node);
            }
        }
    }
}
