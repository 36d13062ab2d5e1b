//! Building the simulated world from a scenario: the in-memory cloud, the in-memory cluster
//! with the scenario's objects, and the autoscaler wired to them through the ports.

use std::sync::Arc;

use clap::Parser;
use cloudprovider::objects::{ObjectError, read_strict, refused_value};
use cloudprovider_memory::file::provider_config;
use cloudprovider_memory::{MemoryCloudProvider, SharedTime};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::scenario::Scenario;
use crate::config::{AutoscalingOptions, DecisionFlags};
use crate::hpa::wpa::WatermarkPodAutoscaler;
use crate::memory::{ClusterObject, MemoryCluster, MemoryClusterConfig, MemoryClusterHandle, VirtualClock};

#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("{0}")]
    Flags(String),
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

#[derive(Parser)]
#[command(name = "flags", no_binary_name = true)]
struct FlagsOnly {
    #[command(flatten)]
    flags: DecisionFlags,
}

/// The autoscaler flags of a scenario, with `extra` (command-line) flags taking precedence over
/// the scenario's flags of the same name.
pub fn options(scenario_flags: &[String], extra: &[String]) -> Result<AutoscalingOptions, WorldError> {
    let name = |f: &str| f.split('=').next().unwrap_or(f).to_string();
    let overridden: Vec<String> = extra.iter().map(|f| name(f)).collect();
    let mut args: Vec<String> = scenario_flags.iter().filter(|f| !overridden.contains(&name(f))).cloned().collect();
    args.extend(extra.iter().cloned());
    // clap's own rendering starts with `error: ` and ends with a hint about --help: the caller
    // says where the flag was written, so only the sentence in between is kept.
    let parsed = FlagsOnly::try_parse_from(&args).map_err(|e| {
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or_default();
        WorldError::Flags(first.strip_prefix("error: ").unwrap_or(first).trim().to_string())
    })?;
    AutoscalingOptions::from_flags(&parsed.flags).map_err(|e| WorldError::Flags(e.to_string()))
}

/// A scenario is written by hand: a field the object's type does not know is a typo, and a value
/// the API server would refuse (a negative request or replica count) is refused.
fn typed<T: DeserializeOwned>(v: Value, field: &str) -> Result<T, WorldError> {
    let invalid = |e: ObjectError| WorldError::Invalid { field: format!("{field}.{}", e.path), message: e.message };
    if let Some(e) = refused_value(v.get("kind").and_then(Value::as_str).unwrap_or(""), &v) {
        return Err(invalid(e));
    }
    read_strict(v).map_err(invalid)
}

/// A Kubernetes object of a scenario, by kind.
pub fn cluster_object(v: Value, field: &str) -> Result<ClusterObject, WorldError> {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    Ok(match kind.as_str() {
        "Deployment" => ClusterObject::Deployment(typed::<Deployment>(v, field)?),
        "ReplicaSet" => ClusterObject::ReplicaSet(typed::<ReplicaSet>(v, field)?),
        "StatefulSet" => ClusterObject::StatefulSet(typed::<StatefulSet>(v, field)?),
        "DaemonSet" => ClusterObject::DaemonSet(typed::<DaemonSet>(v, field)?),
        "Job" => ClusterObject::Job(typed::<Job>(v, field)?),
        "Pod" => ClusterObject::Pod(typed::<Pod>(v, field)?),
        "PodDisruptionBudget" => ClusterObject::PodDisruptionBudget(typed::<PodDisruptionBudget>(v, field)?),
        "ConfigMap" => ClusterObject::ConfigMap(typed::<ConfigMap>(v, field)?),
        "Namespace" => ClusterObject::Namespace(typed::<Namespace>(v, field)?),
        "Node" => ClusterObject::Node(typed::<Node>(v, field)?),
        "HorizontalPodAutoscaler" => {
            ClusterObject::HorizontalPodAutoscaler(typed::<HorizontalPodAutoscaler>(v, field)?)
        }
        "PersistentVolumeClaim" => ClusterObject::PersistentVolumeClaim(typed::<PersistentVolumeClaim>(v, field)?),
        "PersistentVolume" => typed::<PersistentVolume>(v, field)?.into(),
        "StorageClass" => ClusterObject::StorageClass(typed::<StorageClass>(v, field)?),
        "CSINode" => ClusterObject::CSINode(typed::<CSINode>(v, field)?),
        other => {
            return Err(WorldError::Invalid {
                field: format!("{field}.kind"),
                message: format!(
                    "{other:?} is not simulated (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, Pod, PodDisruptionBudget, ConfigMap, Namespace, Node, HorizontalPodAutoscaler, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode)"
                ),
            });
        }
    })
}

/// An object of a scenario's `objects` (or `create` events).
pub enum ScenarioObject {
    Cluster(Box<ClusterObject>),
    /// WatermarkPodAutoscalers are the pod autoscalers' own objects, not the cluster's.
    Wpa(Box<WatermarkPodAutoscaler>),
}

/// Reads (and so validates) an object of a scenario.
pub fn scenario_object(v: Value, field: &str) -> Result<ScenarioObject, WorldError> {
    if v.get("kind").and_then(Value::as_str) == Some("WatermarkPodAutoscaler") {
        return Ok(ScenarioObject::Wpa(Box::new(typed(v, field)?)));
    }
    Ok(ScenarioObject::Cluster(Box::new(cluster_object(v, field)?)))
}

/// The cloud, the cluster and the ports the autoscaler uses.
pub struct World {
    pub time: SharedTime,
    pub cloud: Arc<MemoryCloudProvider>,
    pub handle: Arc<MemoryClusterHandle>,
    pub clock: Arc<VirtualClock>,
}

pub fn build(scenario: &Scenario, options: &AutoscalingOptions) -> Result<World, WorldError> {
    let time = SharedTime::new(scenario.start);
    let config = provider_config(&scenario.groups, &options.node_group_defaults);
    let cloud = Arc::new(
        MemoryCloudProvider::new(config, time.clone())
            .map_err(|e| WorldError::Invalid { field: "nodeGroups".into(), message: e.to_string() })?,
    );
    let mut cluster_config = MemoryClusterConfig::default();
    if let Some(d) = scenario.timing.node_startup_delay {
        cluster_config.node_startup_delay = d;
    }
    if let Some(d) = scenario.timing.pod_startup_delay {
        cluster_config.pod_startup_delay = d;
    }
    if let Some(d) = scenario.timing.job_run_duration {
        cluster_config.default_job_run_duration = d;
    }
    let mut cluster = MemoryCluster::new(cluster_config, time.clone(), Some(cloud.clone()));
    for (i, o) in scenario.objects.iter().enumerate() {
        let field = format!("objects[{i}]");
        match scenario_object(o.clone(), &field)? {
            ScenarioObject::Wpa(wpa) => cluster.apply_wpa(*wpa),
            ScenarioObject::Cluster(object) => {
                cluster.apply(*object).map_err(|e| WorldError::Invalid { field, message: e.to_string() })?;
            }
        }
    }
    let handle = Arc::new(MemoryClusterHandle::new(cluster));
    let clock = Arc::new(VirtualClock::new(time.clone()));
    Ok(World { time, cloud, handle, clock })
}
