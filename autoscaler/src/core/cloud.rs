//! `CloudState`: what the decision path needs from the cloud provider, gathered once per loop
//! through the async traits (after `refresh()`), so that deciding stays synchronous and pure.

use std::collections::HashMap;
use std::sync::Arc;

use cloudprovider::{
    CloudProvider, CloudProviderError, GpuConfig, Instance, NodeGroup, NodeGroupAutoscalingOptions, NodeTemplate,
    PricingModel, ResourceLimiter,
};
use k8s_openapi::api::core::v1::Node;

/// One node group as the cloud reports it at the start of a loop.
#[derive(Clone, Debug)]
pub struct NodeGroupState {
    pub id: String,
    pub min_size: usize,
    pub max_size: usize,
    pub target_size: usize,
    pub instances: Vec<Instance>,
    /// The provider's template (`TemplateNodeInfo`), when it has one.
    pub template: Option<NodeTemplate>,
    pub template_gpu: Option<GpuConfig>,
    pub options: NodeGroupAutoscalingOptions,
    pub exists: bool,
    pub autoprovisioned: bool,
    pub debug: String,
}

#[derive(Clone, Default)]
pub struct CloudState {
    pub provider_name: String,
    pub groups: Vec<NodeGroupState>,
    /// Node name → index into `groups`, for nodes the provider manages.
    pub node_groups: HashMap<String, usize>,
    /// Node name → GPU configuration, for GPU nodes.
    pub node_gpus: HashMap<String, GpuConfig>,
    pub gpu_label: String,
    pub resource_limiter: ResourceLimiter,
    pub pricing: Option<Arc<dyn PricingModel>>,
    /// The provider's group handles, for actuation (not used by `decide`).
    pub handles: HashMap<String, Arc<dyn NodeGroup>>,
}

impl std::fmt::Debug for CloudState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudState")
            .field("provider_name", &self.provider_name)
            .field("groups", &self.groups)
            .field("node_groups", &self.node_groups)
            .finish_non_exhaustive()
    }
}

impl CloudState {
    /// Reads everything the decision needs from the provider. `refresh()` must have been called.
    pub async fn gather(
        provider: &dyn CloudProvider,
        nodes: &[Arc<Node>],
        defaults: &NodeGroupAutoscalingOptions,
    ) -> Result<CloudState, CloudProviderError> {
        let mut state = CloudState {
            provider_name: provider.name().to_string(),
            gpu_label: provider.gpu_label().to_string(),
            resource_limiter: provider.resource_limiter()?,
            pricing: provider.pricing().ok(),
            ..Default::default()
        };
        let mut index_of: HashMap<String, usize> = HashMap::new();
        for group in provider.node_groups().await {
            let template = match group.template_node_info().await {
                Ok(t) => Some(t),
                Err(CloudProviderError::NotImplemented) => None,
                Err(e) => return Err(e),
            };
            let options = match group.get_options(defaults) {
                Ok(Some(o)) => o,
                Ok(None) | Err(CloudProviderError::NotImplemented) => defaults.clone(),
                Err(e) => return Err(e),
            };
            let id = group.id().to_string();
            index_of.insert(id.clone(), state.groups.len());
            state.groups.push(NodeGroupState {
                template_gpu: template.as_ref().and_then(|t| provider.node_gpu_config(&t.node)),
                id: id.clone(),
                min_size: group.min_size(),
                max_size: group.max_size(),
                target_size: group.target_size().await?,
                instances: group.nodes().await?,
                template,
                options,
                exists: group.exist(),
                autoprovisioned: group.autoprovisioned(),
                debug: group.debug(),
            });
            state.handles.insert(id, group);
        }
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            if let Some(group) = provider.node_group_for_node(node).await?
                && let Some(&i) = index_of.get(group.id())
            {
                state.node_groups.insert(name.clone(), i);
            }
            if let Some(gpu) = provider.node_gpu_config(node) {
                state.node_gpus.insert(name, gpu);
            }
        }
        Ok(state)
    }

    pub fn group(&self, id: &str) -> Option<&NodeGroupState> {
        self.groups.iter().find(|g| g.id == id)
    }

    pub fn group_of_node(&self, node: &str) -> Option<&NodeGroupState> {
        self.node_groups.get(node).map(|&i| &self.groups[i])
    }
}
