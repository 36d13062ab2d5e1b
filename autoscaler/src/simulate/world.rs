//! Building the simulated world from a scenario: the in-memory cloud, the in-memory cluster
//! with the scenario's objects, and the autoscaler wired to them through the ports.

use std::sync::Arc;

use clap::Parser;
use cloudprovider::memory::{MemoryCloudProvider, MemoryGroupSpec, MemoryProviderConfig, SharedTime};
use cloudprovider::static_provider::NodeGroupOptionOverrides;
use cloudprovider::{NodeGroupAutoscalingOptions, NodeTemplate};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::scenario::{GroupSpec, Scenario};
use crate::config::duration::parse_go_duration;
use crate::config::{AutoscalingOptions, DecisionFlags};
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
    let parsed = FlagsOnly::try_parse_from(&args)
        .map_err(|e| WorldError::Flags(format!("flags: {}", e.render().to_string().trim())))?;
    AutoscalingOptions::from_flags(&parsed.flags).map_err(|e| WorldError::Flags(format!("flags: {e}")))
}

fn overrides(options: &Value, field: &str) -> Result<NodeGroupOptionOverrides, WorldError> {
    let bad = |key: &str, message: String| WorldError::Invalid { field: format!("{field}.{key}"), message };
    let Value::Object(map) = options else {
        return Err(WorldError::Invalid { field: field.into(), message: "expected a mapping".into() });
    };
    let mut o = NodeGroupOptionOverrides::default();
    for (key, value) in map {
        let number = || value.as_f64().ok_or_else(|| bad(key, "expected a number".into()));
        let boolean = || value.as_bool().ok_or_else(|| bad(key, "expected true or false".into()));
        let duration = || {
            value
                .as_str()
                .ok_or_else(|| bad(key, "expected a duration such as 10m".into()))
                .and_then(|s| parse_go_duration(s).map_err(|m| bad(key, m)))
        };
        match key.as_str() {
            "scaleDownUtilizationThreshold" => o.scale_down_utilization_threshold = Some(number()?),
            "scaleDownGpuUtilizationThreshold" => o.scale_down_gpu_utilization_threshold = Some(number()?),
            "scaleDownUnneededTime" => o.scale_down_unneeded_time = Some(duration()?),
            "scaleDownUnreadyTime" => o.scale_down_unready_time = Some(duration()?),
            "maxNodeProvisionTime" => o.max_node_provision_time = Some(duration()?),
            "maxNodeStartupTime" => o.max_node_startup_time = Some(duration()?),
            "zeroOrMaxNodeScaling" => o.zero_or_max_node_scaling = Some(boolean()?),
            "allowNonAtomicScaleUpToMax" => o.allow_non_atomic_scale_up_to_max = Some(boolean()?),
            "ignoreDaemonSetsUtilization" => o.ignore_daemonsets_utilization = Some(boolean()?),
            other => return Err(bad(other, "unknown option".into())),
        }
    }
    Ok(o)
}

/// A group's template with the defaults the cloud-config file also applies.
pub fn template(g: &GroupSpec) -> Node {
    let mut node = g.template.clone();
    let name = node.metadata.name.clone().unwrap_or_else(|| format!("template-node-for-{}", g.id));
    node.metadata.name = Some(name);
    if let Some(status) = node.status.as_mut() {
        if status.allocatable.as_ref().is_none_or(|a| a.is_empty()) {
            status.allocatable = status.capacity.clone();
        }
        if status.capacity.as_ref().is_none_or(|c| c.is_empty()) {
            status.capacity = status.allocatable.clone();
        }
        for list in [&mut status.capacity, &mut status.allocatable].into_iter().flatten() {
            list.entry("pods".into())
                .or_insert_with(|| k8s_openapi::apimachinery::pkg::api::resource::Quantity("110".into()));
        }
    }
    node
}

pub fn provider_config(
    groups_in: &[GroupSpec],
    defaults: &NodeGroupAutoscalingOptions,
) -> Result<MemoryProviderConfig, WorldError> {
    let mut groups = Vec::new();
    for (i, g) in groups_in.iter().enumerate() {
        let mut spec = MemoryGroupSpec::new(
            g.id.clone(),
            g.min_size,
            g.max_size,
            NodeTemplate { node: template(g), pods: Vec::new() },
        );
        spec.initial_size = g.initial_size;
        spec.price_per_hour = g.price_per_hour;
        spec.provisioning_delay = g.provisioning_delay;
        spec.zero_or_max = g.zero_or_max;
        if let Some(o) = &g.options {
            spec.options = Some(overrides(o, &format!("nodeGroups[{i}].options"))?.merged_over(defaults));
        }
        groups.push(spec);
    }
    Ok(MemoryProviderConfig::new(groups))
}

fn typed<T: DeserializeOwned>(v: Value, field: &str) -> Result<T, WorldError> {
    serde_path_to_error::deserialize(v)
        .map_err(|e| WorldError::Invalid { field: format!("{field}.{}", e.path()), message: e.inner().to_string() })
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
        other => {
            return Err(WorldError::Invalid {
                field: format!("{field}.kind"),
                message: format!(
                    "{other:?} is not simulated (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, Pod, PodDisruptionBudget, ConfigMap, Namespace, Node, HorizontalPodAutoscaler)"
                ),
            });
        }
    })
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
    let config = provider_config(&scenario.groups, &options.node_group_defaults)?;
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
        if o.get("kind").and_then(Value::as_str) == Some("WatermarkPodAutoscaler") {
            cluster.apply_wpa(typed(o.clone(), &field)?);
            continue;
        }
        let object = cluster_object(o.clone(), &field)?;
        cluster.apply(object).map_err(|e| WorldError::Invalid { field, message: e.to_string() })?;
    }
    let handle = Arc::new(MemoryClusterHandle::new(cluster));
    let clock = Arc::new(VirtualClock::new(time.clone()));
    Ok(World { time, cloud, handle, clock })
}
