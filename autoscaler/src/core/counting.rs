//! A provider wrapper that counts the calls it passes on, by the externalgrpc rpc each one would
//! be: for the tests that check which provider calls a loop makes, and the externalgrpc bench that
//! prints them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use cloudprovider::{
    CloudProvider, GpuConfig, Instance, NodeGroup, NodeGroupAutoscalingOptions, NodeTemplate, PricingModel,
    ResourceLimiter,
};
use k8s_openapi::api::core::v1::Node;

/// Calls a [`Counting`] provider passed on, by the externalgrpc rpc each one would be
/// (`node_groups()` for the provider's `node_groups`, which our server also uses to look a
/// group up).
#[derive(Default)]
pub struct Calls(Mutex<BTreeMap<&'static str, usize>>);

impl Calls {
    fn add(&self, rpc: &'static str) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()).entry(rpc).or_default() += 1;
    }

    /// The calls since the last `take`, by name.
    pub fn take(&self) -> BTreeMap<&'static str, usize> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A provider counting the calls made of it and of its groups.
pub struct Counting {
    pub inner: Arc<dyn CloudProvider>,
    pub calls: Arc<Calls>,
}

#[async_trait]
impl CloudProvider for Counting {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        self.calls.add("node_groups()");
        let groups = self.inner.node_groups().await;
        groups
            .into_iter()
            .map(|inner| Arc::new(CountingGroup { inner, calls: self.calls.clone() }) as Arc<dyn NodeGroup>)
            .collect()
    }
    async fn node_group_for_node(&self, node: &Node) -> cloudprovider::Result<Option<Arc<dyn NodeGroup>>> {
        self.calls.add("NodeGroupForNode");
        self.inner.node_group_for_node(node).await
    }
    fn pricing(&self) -> cloudprovider::Result<Arc<dyn PricingModel>> {
        self.calls.add("Pricing*");
        self.inner.pricing()
    }
    fn resource_limiter(&self) -> cloudprovider::Result<ResourceLimiter> {
        self.inner.resource_limiter()
    }
    fn gpu_label(&self) -> &str {
        self.calls.add("GPULabel");
        self.inner.gpu_label()
    }
    fn available_gpu_types(&self) -> Vec<String> {
        self.calls.add("GetAvailableGPUTypes");
        self.inner.available_gpu_types()
    }
    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig> {
        self.inner.node_gpu_config(node)
    }
    async fn cleanup(&self) -> cloudprovider::Result<()> {
        self.calls.add("Cleanup");
        self.inner.cleanup().await
    }
    async fn refresh(&self) -> cloudprovider::Result<()> {
        self.calls.add("Refresh");
        self.inner.refresh().await
    }
    async fn has_instance(&self, node: &Node) -> cloudprovider::Result<bool> {
        self.calls.add("HasInstance");
        self.inner.has_instance(node).await
    }
    fn observe_nodes(&self, nodes: &[Arc<Node>]) {
        self.inner.observe_nodes(nodes)
    }
    fn balancing_ignored_labels(&self) -> Vec<String> {
        self.inner.balancing_ignored_labels()
    }
}

#[derive(Debug)]
struct CountingGroup {
    inner: Arc<dyn NodeGroup>,
    calls: Arc<Calls>,
}

impl std::fmt::Debug for Calls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Calls")
    }
}

#[async_trait]
impl NodeGroup for CountingGroup {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn min_size(&self) -> usize {
        self.inner.min_size()
    }
    fn max_size(&self) -> usize {
        self.inner.max_size()
    }
    fn debug(&self) -> String {
        self.inner.debug()
    }
    async fn target_size(&self) -> cloudprovider::Result<usize> {
        self.calls.add("NodeGroupTargetSize");
        self.inner.target_size().await
    }
    async fn increase_size(&self, delta: usize) -> cloudprovider::Result<()> {
        self.calls.add("NodeGroupIncreaseSize");
        self.inner.increase_size(delta).await
    }
    async fn delete_nodes(&self, nodes: &[Node]) -> cloudprovider::Result<()> {
        self.calls.add("NodeGroupDeleteNodes");
        self.inner.delete_nodes(nodes).await
    }
    async fn atomic_increase_size(&self, delta: usize) -> cloudprovider::Result<()> {
        self.calls.add("NodeGroupAtomicIncreaseSize");
        self.inner.atomic_increase_size(delta).await
    }
    async fn force_delete_nodes(&self, nodes: &[Node]) -> cloudprovider::Result<()> {
        self.calls.add("NodeGroupForceDeleteNodes");
        self.inner.force_delete_nodes(nodes).await
    }
    fn exist(&self) -> bool {
        self.inner.exist()
    }
    fn autoprovisioned(&self) -> bool {
        self.inner.autoprovisioned()
    }
    async fn decrease_target_size(&self, delta: i64) -> cloudprovider::Result<()> {
        self.calls.add("NodeGroupDecreaseTargetSize");
        self.inner.decrease_target_size(delta).await
    }
    async fn nodes(&self) -> cloudprovider::Result<Vec<Instance>> {
        self.calls.add("NodeGroupNodes");
        self.inner.nodes().await
    }
    async fn template_node_info(&self) -> cloudprovider::Result<NodeTemplate> {
        self.calls.add("NodeGroupTemplateNodeInfo");
        self.inner.template_node_info().await
    }
    async fn get_options(
        &self,
        defaults: &NodeGroupAutoscalingOptions,
    ) -> cloudprovider::Result<Option<NodeGroupAutoscalingOptions>> {
        self.calls.add("NodeGroupGetOptions");
        self.inner.get_options(defaults).await
    }
}
