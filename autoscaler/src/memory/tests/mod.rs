//! Tests of the in-memory cluster, named after the rules they check.

mod controllers;
mod day;
mod disruption;
mod nodes;
mod scale;
mod scheduling;
mod volumes;
mod with_core;

use std::sync::Arc;
use std::time::Duration;

use cloudprovider::NodeTemplate;
use cloudprovider_memory::{MemoryCloudProvider, MemoryGroupSpec, MemoryProviderConfig, SharedTime};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;

pub(super) fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).unwrap()
}

pub(super) fn config() -> MemoryClusterConfig {
    MemoryClusterConfig { node_startup_delay: Duration::ZERO, ..Default::default() }
}

/// A cluster without cloud, at t(0).
pub(super) fn cluster() -> MemoryCluster {
    MemoryCluster::new(config(), SharedTime::new(t(0)), None)
}

pub(super) fn template(cpu: &str, memory: &str) -> NodeTemplate {
    NodeTemplate { node: simulator::testing::node("template", cpu, memory), pods: vec![] }
}

pub(super) fn group(id: &str, initial: usize, provisioning_delay: Duration) -> MemoryGroupSpec {
    let mut spec = MemoryGroupSpec::new(id, 0, 10, template("4", "16Gi"));
    spec.initial_size = initial;
    spec.provisioning_delay = provisioning_delay;
    spec
}

/// A cluster with an in-memory cloud of these groups, at t(0).
pub(super) fn cloud_cluster(
    config: MemoryClusterConfig,
    groups: Vec<MemoryGroupSpec>,
) -> (MemoryCluster, Arc<MemoryCloudProvider>) {
    let time = SharedTime::new(t(0));
    let cloud = Arc::new(MemoryCloudProvider::new(MemoryProviderConfig::new(groups), time.clone()).unwrap());
    (MemoryCluster::new(config, time, Some(cloud.clone())), cloud)
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn container(cpu: &str, memory: &str) -> Value {
    json!({"name": "main", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}})
}

pub(super) fn pending_pod(name: &str, cpu: &str, memory: &str) -> Pod {
    from_json(json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"containers": [container(cpu, memory)]}
    }))
}

pub(super) fn deployment(name: &str, replicas: i32, cpu: &str, memory: &str) -> Deployment {
    from_json(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container(cpu, memory)]}}
        }
    }))
}

pub(super) fn stateful_set(name: &str, replicas: i32, policy: &str) -> StatefulSet {
    from_json(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container("100m", "100Mi")]}}
        }
    }))
}

pub(super) fn job(name: &str, parallelism: i32, completions: i32, run: &str) -> Job {
    from_json(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parallelism": parallelism,
            "completions": completions,
            "template": {
                "metadata": {"annotations": {RUN_DURATION_ANNOTATION: run}},
                "spec": {"restartPolicy": "Never", "containers": [container("500m", "256Mi")]}
            }
        }
    }))
}

pub(super) fn daemon_set(name: &str, node_selector: Option<Value>) -> DaemonSet {
    let mut spec = json!({"containers": [container("100m", "64Mi")]});
    if let Some(selector) = node_selector {
        spec["nodeSelector"] = selector;
    }
    from_json(json!({
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec}
        }
    }))
}

pub(super) fn pdb(name: &str, app: &str, budget: Value) -> PodDisruptionBudget {
    let mut spec = budget;
    spec["selector"] = json!({"matchLabels": {"app": app}});
    from_json(json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}))
}

pub(super) fn phase_of(cluster: &MemoryCluster, namespace: &str, name: &str) -> String {
    cluster.pod(namespace, name).and_then(|p| p.status.as_ref()?.phase.clone()).unwrap_or_default()
}

pub(super) fn node_of(cluster: &MemoryCluster, namespace: &str, name: &str) -> Option<String> {
    cluster.pod(namespace, name).and_then(|p| p.spec.as_ref()?.node_name.clone())
}

/// The pod's `PodScheduled` condition as (status, reason, message).
pub(super) fn scheduled_condition(
    cluster: &MemoryCluster,
    namespace: &str,
    name: &str,
) -> Option<(String, String, String)> {
    let pod = cluster.pod(namespace, name)?;
    let c = pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "PodScheduled")?;
    Some((c.status.clone(), c.reason.clone().unwrap_or_default(), c.message.clone().unwrap_or_default()))
}

/// Names of the pods whose name starts with `prefix`, sorted.
pub(super) fn pod_names(cluster: &MemoryCluster, prefix: &str) -> Vec<String> {
    cluster.pods().filter_map(|p| p.metadata.name.clone()).filter(|n| n.starts_with(prefix)).collect()
}
