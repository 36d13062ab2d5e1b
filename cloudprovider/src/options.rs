//! Per-node-group autoscaling options (upstream's `NodeGroupAutoscalingOptions`).

use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct NodeGroupAutoscalingOptions {
    pub scale_down_utilization_threshold: f64,
    pub scale_down_gpu_utilization_threshold: f64,
    pub scale_down_unneeded_time: Duration,
    pub scale_down_unready_time: Duration,
    pub max_node_provision_time: Duration,
    pub max_node_startup_time: Duration,
    /// Scale only to 0 or to max, never in between (atomic groups).
    pub zero_or_max_node_scaling: bool,
    pub allow_non_atomic_scale_up_to_max: bool,
    pub ignore_daemonsets_utilization: bool,
}

impl Default for NodeGroupAutoscalingOptions {
    /// Upstream's flag defaults.
    fn default() -> Self {
        NodeGroupAutoscalingOptions {
            scale_down_utilization_threshold: 0.5,
            scale_down_gpu_utilization_threshold: 0.5,
            scale_down_unneeded_time: Duration::from_secs(600),
            scale_down_unready_time: Duration::from_secs(1200),
            max_node_provision_time: Duration::from_secs(900),
            max_node_startup_time: Duration::from_secs(900),
            zero_or_max_node_scaling: false,
            allow_non_atomic_scale_up_to_max: false,
            ignore_daemonsets_utilization: false,
        }
    }
}
