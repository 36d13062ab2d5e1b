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

/// Per-group options as a provider's configuration sets them (a cloud-config file's `options`,
/// tags, annotations); unset keys keep the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeGroupOptionOverrides {
    pub scale_down_utilization_threshold: Option<f64>,
    pub scale_down_gpu_utilization_threshold: Option<f64>,
    pub scale_down_unneeded_time: Option<Duration>,
    pub scale_down_unready_time: Option<Duration>,
    pub max_node_provision_time: Option<Duration>,
    pub max_node_startup_time: Option<Duration>,
    pub zero_or_max_node_scaling: Option<bool>,
    pub allow_non_atomic_scale_up_to_max: Option<bool>,
    pub ignore_daemonsets_utilization: Option<bool>,
}

impl NodeGroupOptionOverrides {
    /// `defaults` with the keys this group sets replaced.
    pub fn merged_over(&self, defaults: &NodeGroupAutoscalingOptions) -> NodeGroupAutoscalingOptions {
        let d = defaults;
        NodeGroupAutoscalingOptions {
            scale_down_utilization_threshold: self
                .scale_down_utilization_threshold
                .unwrap_or(d.scale_down_utilization_threshold),
            scale_down_gpu_utilization_threshold: self
                .scale_down_gpu_utilization_threshold
                .unwrap_or(d.scale_down_gpu_utilization_threshold),
            scale_down_unneeded_time: self.scale_down_unneeded_time.unwrap_or(d.scale_down_unneeded_time),
            scale_down_unready_time: self.scale_down_unready_time.unwrap_or(d.scale_down_unready_time),
            max_node_provision_time: self.max_node_provision_time.unwrap_or(d.max_node_provision_time),
            max_node_startup_time: self.max_node_startup_time.unwrap_or(d.max_node_startup_time),
            zero_or_max_node_scaling: self.zero_or_max_node_scaling.unwrap_or(d.zero_or_max_node_scaling),
            allow_non_atomic_scale_up_to_max: self
                .allow_non_atomic_scale_up_to_max
                .unwrap_or(d.allow_non_atomic_scale_up_to_max),
            ignore_daemonsets_utilization: self
                .ignore_daemonsets_utilization
                .unwrap_or(d.ignore_daemonsets_utilization),
        }
    }
}
