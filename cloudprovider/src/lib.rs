//! The provider seam: how the autoscaler reaches the infrastructure. The `CloudProvider`,
//! `NodeGroup` and `PricingModel` traits (upstream's interface, method for method), their types
//! and errors, the helpers every provider shares (Go durations, quantities, templates, per-unit
//! prices) and the registry `--cloud-provider` chooses from. No provider lives here and no
//! provider SDK is a dependency: each provider is its own crate beside this one
//! (`cloudprovider/static`, `cloudprovider/memory`, `cloudprovider/externalgrpc`, …).
//!
//! The traits are async because real providers do I/O. The core calls `refresh()` once at the
//! start of every loop; every other call is expected to read state cached by it.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;

pub mod duration;
pub mod errors;
pub mod instance;
pub mod limits;
pub mod objects;
pub mod options;
pub mod pricing;
pub mod quantity;
pub mod registry;
pub mod template;
pub mod yaml;

pub use errors::{CloudProviderError, Result};
pub use instance::{Instance, InstanceErrorClass, InstanceErrorInfo, InstanceState, InstanceStatus};
pub use limits::ResourceLimiter;
pub use options::{NodeGroupAutoscalingOptions, NodeGroupOptionOverrides};
pub use registry::{
    BuildError, BuildResult, ProviderContext, ProviderFactory, ProviderOptions, ProviderRegistry, Purpose,
};

/// The GPU label when a provider names none (NVIDIA's GPU feature discovery).
pub const DEFAULT_GPU_LABEL: &str = "nvidia.com/gpu.product";
/// The extended resource GPUs are requested as.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// `node_group_for_node` calls in flight at once in the default `node_groups_for_nodes`.
pub const NODE_LOOKUPS_IN_FLIGHT: usize = 32;

/// What a fresh node of a group looks like: the Node object and the pods every new node runs
/// from the start (DaemonSet and static pods).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeTemplate {
    pub node: Node,
    pub pods: Vec<Pod>,
}

/// How a node exposes GPUs (upstream's `GpuConfig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuConfig {
    /// The node label naming the GPU type.
    pub label: String,
    /// The GPU type (the label's value), `""` when unknown.
    pub gpu_type: String,
    /// The extended resource the GPUs are requested as (`nvidia.com/gpu`).
    pub extended_resource_name: String,
}

#[async_trait]
pub trait CloudProvider: Send + Sync {
    fn name(&self) -> &str;

    /// All node groups this provider manages.
    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>>;

    /// The node group of a node; `None` when the autoscaler must ignore the node.
    async fn node_group_for_node(&self, node: &Node) -> Result<Option<Arc<dyn NodeGroup>>>;

    /// The node groups of `nodes`, in their order: what `node_group_for_node` answers for
    /// each (the autoscaler asks for every node at every loop). By default the calls go out
    /// concurrently, at most [`NODE_LOOKUPS_IN_FLIGHT`] at once, so that a provider behind a
    /// network costs about one round trip per batch, not one per node. A provider that answers
    /// from memory overrides it with a plain loop: a boxed future per node, polled through a
    /// stream, costs more than its lookup.
    async fn node_groups_for_nodes(&self, nodes: &[Arc<Node>]) -> Result<Vec<Option<Arc<dyn NodeGroup>>>> {
        // The calls are made up front (a future does nothing until polled): a stream over a
        // closure that borrows the nodes is not `Send` for every lifetime, as the trait needs.
        let lookups: Vec<_> = nodes.iter().map(|node| self.node_group_for_node(node)).collect();
        stream::iter(lookups).buffered(NODE_LOOKUPS_IN_FLIGHT).try_collect().await
    }

    /// Whether the cloud instance behind a node still exists. Optional.
    async fn has_instance(&self, _node: &Node) -> Result<bool> {
        Err(CloudProviderError::NotImplemented)
    }

    /// Prices of nodes and pods. Optional; the `price` expander needs it.
    fn pricing(&self) -> Result<Arc<dyn PricingModel>> {
        Err(CloudProviderError::NotImplemented)
    }

    /// Machine types node groups could be auto-provisioned with. Optional.
    async fn available_machine_types(&self) -> Result<Vec<String>> {
        Err(CloudProviderError::NotImplemented)
    }

    /// A theoretical node group for auto-provisioning. Optional.
    async fn new_node_group(
        &self,
        _machine_type: &str,
        _labels: &BTreeMap<String, String>,
        _system_labels: &BTreeMap<String, String>,
        _taints: &[Taint],
        _extra_resources: &BTreeMap<String, Quantity>,
    ) -> Result<Arc<dyn NodeGroup>> {
        Err(CloudProviderError::NotImplemented)
    }

    /// Cluster-wide resource limits, usually built from the flags.
    fn resource_limiter(&self) -> Result<ResourceLimiter>;

    /// The node label that carries the GPU type.
    fn gpu_label(&self) -> &str;

    /// GPU types this provider knows.
    fn available_gpu_types(&self) -> Vec<String>;

    /// The GPU configuration of a node, `None` for nodes without GPUs.
    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig>;

    /// Stops background work.
    async fn cleanup(&self) -> Result<()>;

    /// Called once at the start of every loop, before any other call of that loop.
    async fn refresh(&self) -> Result<()>;

    /// The cluster's nodes as the loop sees them now (right after `refresh()`). Providers that
    /// learn their groups' membership from the cluster rather than from a cloud (the static
    /// provider) follow it here; others ignore it.
    fn observe_nodes(&self, _nodes: &[Arc<Node>]) {}

    /// Registers the provider's own metrics (e.g. AWS's `aws_request_duration_seconds`) in the
    /// process's registry, which carries the `cluster_autoscaler` prefix. Called once by the
    /// controller; optional. The registry type is the light prometheus-client's, so the seam
    /// stays free of provider SDKs.
    fn register_metrics(&self, _registry: &mut prometheus_client::registry::Registry) {}

    /// Node labels, besides upstream's always-ignored ones and `--balancing-ignore-label`, that
    /// differ between otherwise identical groups of this provider (zone ids, node group names):
    /// ignored when `--balance-similar-node-groups` compares groups. Optional.
    fn balancing_ignored_labels(&self) -> Vec<String> {
        Vec::new()
    }
}

#[async_trait]
pub trait NodeGroup: Send + Sync + Debug {
    fn id(&self) -> &str;
    fn min_size(&self) -> usize;
    fn max_size(&self) -> usize;

    /// The desired size, which may differ from the number of registered nodes.
    async fn target_size(&self) -> Result<usize>;

    /// Raises the target size by `delta` (> 0); refuses to go above max.
    async fn increase_size(&self, delta: usize) -> Result<()>;

    /// All-or-nothing increase. Optional; the core falls back to `increase_size`.
    async fn atomic_increase_size(&self, _delta: usize) -> Result<()> {
        Err(CloudProviderError::NotImplemented)
    }

    /// Deletes these nodes and lowers the target size accordingly. Fails if a node is not in
    /// this group or the group would go below min.
    async fn delete_nodes(&self, nodes: &[Node]) -> Result<()>;

    /// Like `delete_nodes` without the min-size check. Optional.
    async fn force_delete_nodes(&self, _nodes: &[Node]) -> Result<()> {
        Err(CloudProviderError::NotImplemented)
    }

    /// Lowers the target size by `-delta` (delta < 0) without deleting existing nodes: only the
    /// part of the target not yet fulfilled can go.
    async fn decrease_target_size(&self, delta: i64) -> Result<()>;

    fn debug(&self) -> String {
        format!("{} ({}:{})", self.id(), self.min_size(), self.max_size())
    }

    /// Instances of the group, including ones not registered as nodes yet.
    async fn nodes(&self) -> Result<Vec<Instance>>;

    /// A template for a new node of this group. Optional, but needed to scale from zero.
    async fn template_node_info(&self) -> Result<NodeTemplate> {
        Err(CloudProviderError::NotImplemented)
    }

    /// Whether the group exists in the cloud (or is only theoretical).
    fn exist(&self) -> bool {
        true
    }

    /// Creates a theoretical group. Optional.
    async fn create(&self) -> Result<Arc<dyn NodeGroup>> {
        Err(CloudProviderError::NotImplemented)
    }

    /// Deletes an auto-provisioned group. Optional.
    async fn delete(&self) -> Result<()> {
        Err(CloudProviderError::NotImplemented)
    }

    fn autoprovisioned(&self) -> bool {
        false
    }

    /// Per-group options overriding `defaults`. Optional; `Ok(None)` also means "defaults".
    async fn get_options(
        &self,
        _defaults: &NodeGroupAutoscalingOptions,
    ) -> Result<Option<NodeGroupAutoscalingOptions>> {
        Err(CloudProviderError::NotImplemented)
    }
}

/// Prices, in any consistent currency, of running a node or a pod over a time span.
pub trait PricingModel: Send + Sync {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> Result<f64>;
    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> Result<f64>;
}
