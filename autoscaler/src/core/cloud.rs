//! `CloudState`: what the decision path needs from the cloud provider, gathered once per loop
//! through the async traits (after `refresh()`), so that deciding stays synchronous and pure.

use std::collections::HashMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt, stream};

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
    /// The provider's labels to ignore when comparing groups for balancing.
    pub balancing_ignored_labels: Vec<String>,
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
    /// Groups, and nodes' groups, are asked concurrently (bounded), so a provider behind a
    /// network (gRPC, a cloud API) costs about one round trip per kind of call, not one per group.
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
            balancing_ignored_labels: provider.balancing_ignored_labels(),
            ..Default::default()
        };
        let groups = provider.node_groups().await;
        let states: Vec<NodeGroupState> = stream::iter(groups.iter().map(|g| group_state(provider, g, defaults)))
            .buffered(IN_FLIGHT)
            .try_collect()
            .await?;
        let mut index_of: HashMap<String, usize> = HashMap::new();
        for (group, group_state) in groups.into_iter().zip(states) {
            index_of.insert(group_state.id.clone(), state.groups.len());
            state.handles.insert(group_state.id.clone(), group);
            state.groups.push(group_state);
        }
        let owners: Vec<Option<Arc<dyn NodeGroup>>> =
            stream::iter(nodes.iter().map(|node| provider.node_group_for_node(node)))
                .buffered(IN_FLIGHT)
                .try_collect()
                .await?;
        for (node, owner) in nodes.iter().zip(owners) {
            let name = node.metadata.name.clone().unwrap_or_default();
            if let Some(group) = owner
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

/// Provider calls in flight at once while gathering.
const IN_FLIGHT: usize = 32;

/// One group as the provider reports it now.
async fn group_state(
    provider: &dyn CloudProvider,
    group: &Arc<dyn NodeGroup>,
    defaults: &NodeGroupAutoscalingOptions,
) -> Result<NodeGroupState, CloudProviderError> {
    let (template, options, target_size, instances) = futures::try_join!(
        async {
            match group.template_node_info().await {
                Ok(t) => Ok(Some(t)),
                Err(CloudProviderError::NotImplemented) => Ok(None),
                Err(e) => Err(e),
            }
        },
        async {
            match group.get_options(defaults).await {
                Ok(Some(o)) => Ok(o),
                Ok(None) | Err(CloudProviderError::NotImplemented) => Ok(defaults.clone()),
                Err(e) => Err(e),
            }
        },
        group.target_size(),
        group.nodes(),
    )?;
    Ok(NodeGroupState {
        template_gpu: template.as_ref().and_then(|t: &NodeTemplate| provider.node_gpu_config(&t.node)),
        id: group.id().to_string(),
        min_size: group.min_size(),
        max_size: group.max_size(),
        target_size,
        instances,
        template,
        options,
        exists: group.exist(),
        autoprovisioned: group.autoprovisioned(),
        debug: group.debug(),
    })
}
