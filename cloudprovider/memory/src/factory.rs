//! `--cloud-provider=memory`: the factory the binary registers, and the controller's variant
//! that turns the in-memory cloud's instances into Node objects of a real cluster.
//!
//! In the controller the provider runs on the wall clock: every `refresh()` (the start of every
//! loop) advances its time to now, then creates a Node for every instance that registered and
//! deletes the Node of every instance that is gone, like upstream's kwok provider. An autoscaler
//! you can watch at work on any cluster, with fake nodes. `plan` and checks use the provider
//! alone.

use std::sync::Arc;

use async_trait::async_trait;
use cloudprovider::{
    BuildError, BuildResult, CloudProvider, GpuConfig, NodeGroup, PricingModel, ProviderContext, Purpose,
    ResourceLimiter, Result,
};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, PostParams};

use crate::file::{parse_cloud_config, provider_config};
use crate::{CloudEvent, MemoryCloudProvider, SharedTime};

/// Builds the memory provider from `--cloud-config` (a file with the scenario's `nodeGroups`,
/// and `faults` armed at start).
pub async fn build(context: ProviderContext) -> BuildResult {
    context.refuse_auto_discovery()?;
    if let Some(spec) = context.node_group_specs.first() {
        return Err(BuildError::Config(format!(
            "--nodes={spec}: the memory provider takes its node groups from --cloud-config, not --nodes"
        )));
    }
    let path = context.require_cloud_config()?;
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| BuildError::Config(format!("--cloud-config={file}: {e}")))?;
    let cloud_config = parse_cloud_config(&text, &file).map_err(|e| BuildError::Config(e.to_string()))?;
    let mut config = provider_config(&cloud_config.groups, &context.node_group_defaults);
    config.resource_limiter = context.resource_limiter.clone();
    let time = SharedTime::new(context.now);
    let provider = MemoryCloudProvider::new(config, time).map_err(|e| BuildError::Config(format!("{file}: {e}")))?;
    for fault in &cloud_config.faults {
        fault.arm(&provider).map_err(|e| BuildError::Config(format!("{file}: {e}")))?;
    }
    match (context.purpose, context.kube) {
        (Purpose::Controller, Some(client)) => Ok(Arc::new(ClusterNodes { provider, nodes: Api::all(client) })),
        _ => Ok(Arc::new(provider)),
    }
}

/// The memory provider whose instances are Node objects of a real cluster.
struct ClusterNodes {
    provider: MemoryCloudProvider,
    nodes: Api<Node>,
}

impl ClusterNodes {
    /// Moves the cloud to now and mirrors what happened in it onto the cluster's Nodes.
    async fn sync_nodes(&self) {
        self.provider.time().advance_to(Timestamp::now());
        for event in self.provider.drain_events() {
            match event {
                CloudEvent::NodeRegistered { node, .. } => match self.nodes.create(&PostParams::default(), &node).await
                {
                    Ok(_) => {}
                    // A restarted controller finds the Nodes of the instances it started with.
                    Err(kube::Error::Api(status)) if status.code == 409 => {}
                    Err(error) => {
                        tracing::warn!(%error, node = ?node.metadata.name, "could not register the memory provider's node")
                    }
                },
                CloudEvent::InstanceDeleted { group, instance_id, .. } => {
                    // The provider names a node `<group>-<number>` for instance `memory://<group>/<number>`.
                    let number = instance_id.rsplit('/').next().unwrap_or_default();
                    let node_name = format!("{group}-{number}");
                    match self.nodes.delete(&node_name, &DeleteParams::default()).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(status)) if status.code == 404 => {}
                        Err(error) => {
                            tracing::warn!(%error, node = %node_name, "could not delete the memory provider's node")
                        }
                    }
                }
            }
        }
    }
}

#[async_trait]
impl CloudProvider for ClusterNodes {
    fn name(&self) -> &str {
        self.provider.name()
    }

    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        self.provider.node_groups().await
    }

    async fn node_group_for_node(&self, node: &Node) -> Result<Option<Arc<dyn NodeGroup>>> {
        self.provider.node_group_for_node(node).await
    }

    async fn node_groups_for_nodes(&self, nodes: &[Arc<Node>]) -> Result<Vec<Option<Arc<dyn NodeGroup>>>> {
        self.provider.node_groups_for_nodes(nodes).await
    }

    async fn has_instance(&self, node: &Node) -> Result<bool> {
        self.provider.has_instance(node).await
    }

    fn pricing(&self) -> Result<Arc<dyn PricingModel>> {
        self.provider.pricing()
    }

    fn resource_limiter(&self) -> Result<ResourceLimiter> {
        self.provider.resource_limiter()
    }

    fn gpu_label(&self) -> &str {
        self.provider.gpu_label()
    }

    fn available_gpu_types(&self) -> Vec<String> {
        self.provider.available_gpu_types()
    }

    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig> {
        self.provider.node_gpu_config(node)
    }

    async fn cleanup(&self) -> Result<()> {
        self.provider.cleanup().await
    }

    async fn refresh(&self) -> Result<()> {
        self.sync_nodes().await;
        self.provider.refresh().await
    }
}
