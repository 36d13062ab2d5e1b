//! `StaticCloudProvider`: the `CloudProvider` over the configured groups.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;

use super::config::StaticConfig;
use super::error::ConfigError;
use super::group::{Shared, StaticNodeGroup};
use super::membership::{group_index_for_node, instance_id_for_node};
use super::pricing::StaticPricing;
use cloudprovider::quantity::quantity_value;
use cloudprovider::{CloudProvider, GPU_RESOURCE, GpuConfig, NodeGroup, PricingModel, ResourceLimiter, Result};

pub const PROVIDER_NAME: &str = "static";

/// Where errors about a programmatically built `StaticConfig` point.
const CONFIG_SOURCE: &str = "static cloud provider config";

pub struct StaticCloudProvider {
    shared: Arc<Shared>,
    groups: Vec<Arc<StaticNodeGroup>>,
    pricing: Arc<StaticPricing>,
    limiter: ResourceLimiter,
}

impl StaticCloudProvider {
    /// A provider over `config`'s groups. `nodes` are the cluster's current nodes: they give each
    /// group its registered instances and, without `targetSize`, its initial target size.
    pub fn new(
        config: StaticConfig,
        nodes: &[Node],
        limiter: ResourceLimiter,
    ) -> std::result::Result<StaticCloudProvider, ConfigError> {
        validate(&config)?;
        let shared = Arc::new(Shared::new(config, nodes));
        let groups = (0..shared.config.node_groups.len())
            .map(|index| Arc::new(StaticNodeGroup::new(shared.clone(), index)))
            .collect();
        let pricing = Arc::new(StaticPricing::new(shared.clone()));
        Ok(StaticCloudProvider { shared, groups, pricing, limiter })
    }

    /// Tells the provider which nodes are registered now (the loop calls this with every fresh
    /// view of the cluster, through `CloudProvider::observe_nodes`): nodes that appeared join
    /// their group (raising its target if needed); nodes that went away — removed by an operator
    /// or another system, or deleted through this provider — leave it, and its target with them.
    pub fn observe_nodes(&self, nodes: &[Node]) {
        self.shared.state().observe(&self.shared.config.node_groups, nodes.iter());
    }

    pub fn config(&self) -> &StaticConfig {
        &self.shared.config
    }

    /// The group with this id, with its concrete type.
    pub fn group(&self, id: &str) -> Option<Arc<StaticNodeGroup>> {
        self.groups.iter().find(|group| group.config().id == id).cloned()
    }

    fn group_of(&self, node: &Node) -> Option<Arc<dyn NodeGroup>> {
        let known = self.shared.state().group_of_instance(&instance_id_for_node(node));
        let index = known.or_else(|| group_index_for_node(&self.shared.config.node_groups, node))?;
        Some(self.groups[index].clone() as Arc<dyn NodeGroup>)
    }
}

/// Re-checks what `StaticConfig::load` guarantees, for configs built in code.
fn validate(config: &StaticConfig) -> std::result::Result<(), ConfigError> {
    for (index, group) in config.node_groups.iter().enumerate() {
        let fail = |field: &str, message: String| {
            ConfigError::invalid(CONFIG_SOURCE, format!("nodeGroups[{index}]{field}"), None, message)
        };
        if group.id.is_empty() {
            return Err(fail(".id", "node group id must not be empty".to_string()));
        }
        if let Some(first) = config.node_groups[..index].iter().position(|other| other.id == group.id) {
            return Err(fail(".id", format!("duplicate node group id {:?} (first at nodeGroups[{first}])", group.id)));
        }
        if group.min_size > group.max_size {
            return Err(fail(
                ".minSize",
                format!("minSize {} is greater than maxSize {}", group.min_size, group.max_size),
            ));
        }
        if let Some(target) = group.target_size
            && target > group.max_size
        {
            return Err(fail(".targetSize", format!("targetSize {target} is greater than maxSize {}", group.max_size)));
        }
        if group.node_selector.is_empty() && group.provider_id_prefix.as_deref().is_none_or(str::is_empty) {
            return Err(fail(
                "",
                format!(
                    "node group {:?} has neither nodeSelector nor providerIDPrefix: no way to tell which nodes belong to it",
                    group.id
                ),
            ));
        }
    }
    Ok(())
}

#[async_trait]
impl CloudProvider for StaticCloudProvider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        self.groups.iter().map(|group| group.clone() as Arc<dyn NodeGroup>).collect()
    }

    async fn node_group_for_node(&self, node: &Node) -> Result<Option<Arc<dyn NodeGroup>>> {
        Ok(self.group_of(node))
    }

    /// Answered from memory: one pass, no future per node.
    async fn node_groups_for_nodes(&self, nodes: &[Arc<Node>]) -> Result<Vec<Option<Arc<dyn NodeGroup>>>> {
        Ok(nodes.iter().map(|node| self.group_of(node)).collect())
    }

    /// There is no cloud to ask: an instance exists unless this provider deleted it.
    async fn has_instance(&self, node: &Node) -> Result<bool> {
        Ok(!self.shared.state().is_deleted(&instance_id_for_node(node)))
    }

    fn pricing(&self) -> Result<Arc<dyn PricingModel>> {
        Ok(self.pricing.clone())
    }

    fn resource_limiter(&self) -> Result<ResourceLimiter> {
        Ok(self.limiter.clone())
    }

    fn gpu_label(&self) -> &str {
        &self.shared.config.gpu_label
    }

    /// The GPU label values of the templates.
    fn available_gpu_types(&self) -> Vec<String> {
        let label = self.gpu_label();
        let types: BTreeSet<String> = self
            .shared
            .config
            .node_groups
            .iter()
            .filter_map(|group| group.template.as_ref()?.metadata.labels.as_ref()?.get(label).cloned())
            .collect();
        types.into_iter().collect()
    }

    /// A node has GPUs when it carries the GPU label or has `nvidia.com/gpu` allocatable.
    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig> {
        let label = self.gpu_label();
        let gpu_config = |gpu_type: &str| GpuConfig {
            label: label.to_string(),
            gpu_type: gpu_type.to_string(),
            extended_resource_name: GPU_RESOURCE.to_string(),
        };
        if let Some(gpu_type) = node.metadata.labels.as_ref().and_then(|labels| labels.get(label)) {
            return Some(gpu_config(gpu_type));
        }
        let allocatable = node.status.as_ref()?.allocatable.as_ref()?.get(GPU_RESOURCE)?;
        let has_gpus = quantity_value(&allocatable.0).is_ok_and(|count| count > 0.0);
        has_gpus.then(|| gpu_config(""))
    }

    async fn cleanup(&self) -> Result<()> {
        Ok(())
    }

    /// The state lives in memory and changes only through this provider and `observe_nodes`.
    fn observe_nodes(&self, nodes: &[Arc<Node>]) {
        self.shared.state().observe(&self.shared.config.node_groups, nodes.iter().map(|n| &**n));
    }

    async fn refresh(&self) -> Result<()> {
        Ok(())
    }
}

/// `--cloud-provider=static`: groups from `--cloud-config` (optional) and `--nodes`, their
/// membership and initial targets from the cluster's nodes at start-up.
pub async fn build(context: cloudprovider::ProviderContext) -> cloudprovider::BuildResult {
    use cloudprovider::BuildError;
    context.refuse_auto_discovery()?;
    let config = StaticConfig::load(context.cloud_config.as_deref(), &context.node_group_specs)
        .map_err(|e| BuildError::Config(e.to_string()))?;
    let provider = StaticCloudProvider::new(config, &context.nodes, context.resource_limiter.clone())
        .map_err(|e| BuildError::Config(e.to_string()))?;
    Ok(Arc::new(provider))
}
