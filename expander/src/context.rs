//! What the expanders need to know about the cluster besides the options themselves.

use std::fmt;

use cloudprovider::PricingModel;
use k8s_openapi::jiff::Timestamp;

/// Inputs of one expander call that come from outside the options.
#[derive(Clone, Copy, Default)]
pub struct ExpanderContext<'a> {
    /// The cloud provider's pricing, if it has one (the `price` expander needs it).
    pub pricing: Option<&'a dyn PricingModel>,
    /// Number of nodes in the cluster now (the `price` expander's preferred node size depends on it).
    pub cluster_node_count: usize,
    /// Start of the hour the `price` expander prices.
    pub now: Timestamp,
    /// The `priorities` value of the `cluster-autoscaler-priority-expander` ConfigMap;
    /// `None` when the ConfigMap does not exist or has no `priorities` key.
    pub priority_config: Option<&'a str>,
    /// Whether the `cluster-autoscaler-priority-expander` ConfigMap exists. Only read when
    /// `priority_config` is `None`: upstream reports an existing ConfigMap without a `priorities`
    /// key as `PriorityConfigMapInvalid`, and a missing ConfigMap silently.
    pub priority_config_map_exists: bool,
    /// For the GPU check of the price expander: the extended resource that marks a GPU node
    /// (e.g. `nvidia.com/gpu`); empty disables the resource check.
    pub gpu_resource: &'a str,
    /// The provider's GPU node label; empty disables the label check.
    pub gpu_label: &'a str,
}

impl fmt::Debug for ExpanderContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpanderContext")
            .field("pricing", &self.pricing.map(|_| "<pricing model>"))
            .field("cluster_node_count", &self.cluster_node_count)
            .field("now", &self.now)
            .field("priority_config", &self.priority_config)
            .field("priority_config_map_exists", &self.priority_config_map_exists)
            .field("gpu_resource", &self.gpu_resource)
            .field("gpu_label", &self.gpu_label)
            .finish()
    }
}
