//! Expanders: given the scale-up options (one per node group), choose one.

use std::sync::Arc;

use simulator::{NodeInfo, PodInfo};

/// One way to help the pending pods: add `node_count` nodes to `node_group_id`, which would
/// let `pods` schedule.
#[derive(Clone, Debug)]
pub struct ExpansionOption {
    pub node_group_id: String,
    pub node_count: usize,
    pub pods: Vec<Arc<PodInfo>>,
    /// The node group's template node (with its DaemonSet / static pods).
    pub template: Arc<NodeInfo>,
    /// False for a theoretical group that would have to be created first.
    pub exists: bool,
    pub similar_node_groups: Vec<String>,
    pub debug: String,
}
