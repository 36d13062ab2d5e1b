//! The typed options the decision path reads, built from the flags and validated once.

use std::time::Duration;

use cloudprovider::{NodeGroupAutoscalingOptions, ResourceLimiter};
use simulator::drainability::DrainOptions;

use super::flags::DecisionFlags;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid --{flag} value {value:?}: {reason}")]
pub struct ConfigError {
    pub flag: &'static str,
    pub value: String,
    pub reason: String,
}

/// `--gpu-total=<type>:<min>:<max>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuLimit {
    pub gpu_type: String,
    pub min: i64,
    pub max: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BalancingOptions {
    pub enabled: bool,
    pub ignore_labels: Vec<String>,
    pub labels: Vec<String>,
    pub memory_difference_ratio: f64,
    pub max_allocatable_difference_ratio: f64,
    pub max_free_difference_ratio: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AutoscalingOptions {
    pub node_group_defaults: NodeGroupAutoscalingOptions,
    pub namespace: String,
    pub expander: String,
    /// `--grpc-expander-url` / `--grpc-expander-cert`, for a chain with `grpc`.
    pub grpc_expander_url: String,
    pub grpc_expander_cert: String,
    /// 0: no limit.
    pub max_nodes_total: usize,
    /// Cores, min and max.
    pub cores_total: (i64, i64),
    /// Bytes, min and max.
    pub memory_total: (i64, i64),
    pub gpu_total: Vec<GpuLimit>,
    pub scale_down_enabled: bool,
    pub scale_down_unready_enabled: bool,
    pub scale_down_delay_after_add: Duration,
    pub scale_down_delay_after_delete: Duration,
    pub scale_down_delay_after_failure: Duration,
    pub scale_down_simulation_timeout: Duration,
    pub unremovable_node_recheck_timeout: Duration,
    pub max_scale_down_parallelism: usize,
    pub max_drain_parallelism: usize,
    pub drain: DrainOptions,
    pub ignore_mirror_pods_utilization: bool,
    pub daemonset_eviction_for_empty_nodes: bool,
    pub daemonset_eviction_for_occupied_nodes: bool,
    pub expendable_pods_priority_cutoff: i32,
    pub new_pod_scale_up_delay: Duration,
    pub max_nodes_per_scale_up: i64,
    pub max_node_group_binpacking_duration: Duration,
    pub max_binpacking_time: Duration,
    pub fastpath_binpacking: bool,
    pub balancing: BalancingOptions,
    pub ok_total_unready_count: usize,
    pub max_total_unready_percentage: f64,
    pub scale_up_from_zero: bool,
    pub startup_taints: Vec<String>,
    /// `--startup-taint-prefix`, besides upstream's built-in prefixes.
    pub startup_taint_prefixes: Vec<String>,
    pub status_taints: Vec<String>,
    pub scale_from_unschedulable: bool,
    pub force_ds: bool,
    pub enforce_node_group_min_size: bool,
    pub allowed_scheduler_names: Vec<String>,
    /// Their pods trigger scale-ups without a PodScheduled condition and without waiting.
    pub bypassed_scheduler_names: Vec<String>,
    pub scan_interval: Duration,
    /// `--frequent-loops-enabled`, `--unschedulable-pods-batch-idle`,
    /// `--unschedulable-pods-batch-max`: see `control::schedule`.
    pub frequent_loops_enabled: bool,
    pub unschedulable_pods_batch_idle: Duration,
    pub unschedulable_pods_batch_max: Duration,
    pub node_delete_delay_after_taint: Duration,
    pub max_graceful_termination_sec: i64,
    pub max_pod_eviction_time: Duration,
    pub cordon_node_before_terminating: bool,
    pub max_bulk_soft_taint_count: usize,
    pub max_bulk_soft_taint_time: Duration,
    /// How long a node's `delay-deletion.cluster-autoscaler.kubernetes.io/` annotations may hold
    /// its deletion.
    pub node_deletion_delay_timeout: Duration,
    /// How long deletions of one group are collected into one `DeleteNodes` call.
    pub node_deletion_batcher_interval: Duration,
    pub force_delete_failed_nodes: bool,
    /// The scale-down delays apply per node group.
    pub scale_down_delay_type_local: bool,
    pub parallel_scale_up: bool,
    pub csi_node_aware_scheduling: bool,
    pub initial_node_group_backoff_duration: Duration,
    pub max_node_group_backoff_duration: Duration,
    pub node_group_backoff_reset_timeout: Duration,
    pub write_status_configmap: bool,
    pub status_config_map_name: String,
    pub force_delete_unregistered_nodes: bool,
    pub hpa: crate::hpa::HpaConfig,
    pub hpa_aware_scale_up: bool,
    /// What the loop does with HorizontalPodAutoscalers and WatermarkPodAutoscalers (the
    /// controller's flags; `simulate` acts, as the only controller of its world).
    pub hpa_mode: crate::podscaling::PodAutoscalerMode,
    pub wpa_mode: crate::podscaling::PodAutoscalerMode,
}

impl Default for AutoscalingOptions {
    /// Upstream's defaults.
    fn default() -> Self {
        AutoscalingOptions {
            node_group_defaults: NodeGroupAutoscalingOptions::default(),
            namespace: "kube-system".into(),
            expander: "least-waste".into(),
            grpc_expander_url: String::new(),
            grpc_expander_cert: String::new(),
            max_nodes_total: 0,
            cores_total: (0, 320_000),
            memory_total: (0, 6_400_000 * (1 << 30)),
            gpu_total: Vec::new(),
            scale_down_enabled: true,
            scale_down_unready_enabled: true,
            scale_down_delay_after_add: Duration::from_secs(600),
            scale_down_delay_after_delete: Duration::ZERO,
            scale_down_delay_after_failure: Duration::from_secs(180),
            scale_down_simulation_timeout: Duration::from_secs(30),
            unremovable_node_recheck_timeout: Duration::from_secs(300),
            max_scale_down_parallelism: 10,
            max_drain_parallelism: 1,
            drain: DrainOptions::default(),
            ignore_mirror_pods_utilization: false,
            daemonset_eviction_for_empty_nodes: false,
            daemonset_eviction_for_occupied_nodes: true,
            expendable_pods_priority_cutoff: -10,
            new_pod_scale_up_delay: Duration::ZERO,
            max_nodes_per_scale_up: 1000,
            max_node_group_binpacking_duration: Duration::from_secs(10),
            max_binpacking_time: Duration::from_secs(300),
            fastpath_binpacking: false,
            balancing: BalancingOptions {
                enabled: false,
                ignore_labels: Vec::new(),
                labels: Vec::new(),
                memory_difference_ratio: 0.015,
                max_allocatable_difference_ratio: 0.05,
                max_free_difference_ratio: 0.05,
            },
            ok_total_unready_count: 3,
            max_total_unready_percentage: 45.0,
            scale_up_from_zero: true,
            startup_taints: Vec::new(),
            startup_taint_prefixes: Vec::new(),
            status_taints: Vec::new(),
            scale_from_unschedulable: false,
            force_ds: false,
            enforce_node_group_min_size: false,
            allowed_scheduler_names: Vec::new(),
            bypassed_scheduler_names: Vec::new(),
            scan_interval: Duration::from_secs(10),
            frequent_loops_enabled: true,
            unschedulable_pods_batch_idle: Duration::from_secs(1),
            unschedulable_pods_batch_max: Duration::from_secs(10),
            node_delete_delay_after_taint: Duration::from_secs(5),
            max_graceful_termination_sec: 600,
            max_pod_eviction_time: Duration::from_secs(120),
            cordon_node_before_terminating: true,
            max_bulk_soft_taint_count: 10,
            max_bulk_soft_taint_time: Duration::from_secs(3),
            node_deletion_delay_timeout: Duration::from_secs(120),
            node_deletion_batcher_interval: Duration::ZERO,
            force_delete_failed_nodes: false,
            scale_down_delay_type_local: false,
            parallel_scale_up: false,
            csi_node_aware_scheduling: false,
            initial_node_group_backoff_duration: Duration::from_secs(300),
            max_node_group_backoff_duration: Duration::from_secs(1800),
            node_group_backoff_reset_timeout: Duration::from_secs(3 * 3600),
            write_status_configmap: true,
            status_config_map_name: "cluster-autoscaler-status".into(),
            force_delete_unregistered_nodes: false,
            hpa: crate::hpa::HpaConfig::default(),
            hpa_aware_scale_up: true,
            hpa_mode: crate::podscaling::PodAutoscalerMode::Act,
            wpa_mode: crate::podscaling::PodAutoscalerMode::Act,
        }
    }
}

fn min_max(flag: &'static str, value: &str) -> Result<(i64, i64), ConfigError> {
    let err = |reason: &str| ConfigError { flag, value: value.to_string(), reason: reason.to_string() };
    let (min, max) = value.split_once(':').ok_or_else(|| err("expected <min>:<max>"))?;
    let min: i64 = min.trim().parse().map_err(|_| err("min is not an integer"))?;
    let max: i64 = max.trim().parse().map_err(|_| err("max is not an integer"))?;
    if min < 0 || max < 0 {
        return Err(err("limits must not be negative"));
    }
    if min > max {
        return Err(err(&format!("min {min} is greater than max {max}")));
    }
    Ok((min, max))
}

fn gpu_limit(value: &str) -> Result<GpuLimit, ConfigError> {
    let err = |reason: &str| ConfigError { flag: "gpu-total", value: value.to_string(), reason: reason.to_string() };
    let parts: Vec<&str> = value.split(':').collect();
    let [gpu_type, min, max] = parts.as_slice() else { return Err(err("expected <gpu_type>:<min>:<max>")) };
    if gpu_type.is_empty() {
        return Err(err("empty GPU type"));
    }
    let (min, max) = min_max("gpu-total", &format!("{min}:{max}")).map_err(|e| err(&e.reason))?;
    Ok(GpuLimit { gpu_type: gpu_type.to_string(), min, max })
}

impl AutoscalingOptions {
    pub fn from_flags(f: &DecisionFlags) -> Result<Self, ConfigError> {
        let memory_gib = min_max("memory-total", &f.memory_total)?;
        let gpu_total = f.gpu_total.iter().map(|g| gpu_limit(g)).collect::<Result<Vec<_>, _>>()?;
        if f.max_nodes_total < 0 {
            return Err(ConfigError {
                flag: "max-nodes-total",
                value: f.max_nodes_total.to_string(),
                reason: "must not be negative".into(),
            });
        }
        if f.max_scale_down_parallelism == 0 {
            return Err(ConfigError {
                flag: "max-scale-down-parallelism",
                value: "0".into(),
                reason: "must be at least 1".into(),
            });
        }
        if f.max_drain_parallelism == 0 {
            return Err(ConfigError {
                flag: "max-drain-parallelism",
                value: "0".into(),
                reason: "must be at least 1".into(),
            });
        }
        if f.scan_interval.is_zero() {
            return Err(ConfigError { flag: "scan-interval", value: "0s".into(), reason: "must be positive".into() });
        }
        if f.hpa_sync_period.is_zero() {
            return Err(ConfigError {
                flag: "horizontal-pod-autoscaler-sync-period",
                value: "0s".into(),
                reason: "must be positive".into(),
            });
        }
        if !f.balancing_label.is_empty() && !f.balancing_ignore_label.is_empty() {
            return Err(ConfigError {
                flag: "balancing-label",
                value: f.balancing_label.join(","),
                reason: "cannot be combined with --balancing-ignore-label".into(),
            });
        }
        let defaults = NodeGroupAutoscalingOptions {
            scale_down_utilization_threshold: f.scale_down_utilization_threshold,
            scale_down_gpu_utilization_threshold: f.scale_down_gpu_utilization_threshold,
            scale_down_unneeded_time: f.scale_down_unneeded_time,
            scale_down_unready_time: f.scale_down_unready_time,
            max_node_provision_time: f.max_node_provision_time,
            max_node_startup_time: f.max_node_startup_time,
            zero_or_max_node_scaling: false,
            allow_non_atomic_scale_up_to_max: false,
            ignore_daemonsets_utilization: f.ignore_daemonsets_utilization,
        };
        f.compat.refuse_unbuilt()?;
        // Upstream: bypassed schedulers must be allowed ones (when a list of allowed ones is set).
        if !f.allowed_scheduler_names.is_empty()
            && let Some(name) = f.bypassed_scheduler_names.iter().find(|n| !f.allowed_scheduler_names.contains(n))
        {
            return Err(ConfigError {
                flag: "bypassed-scheduler-names",
                value: f.bypassed_scheduler_names.join(","),
                reason: format!("{name} is not in --allowed-scheduler-names"),
            });
        }
        let mut startup_taints = f.startup_taint.clone();
        startup_taints.extend(f.ignore_taint.iter().cloned());
        Ok(AutoscalingOptions {
            node_group_defaults: defaults,
            namespace: f.namespace.clone(),
            expander: f.expander.clone(),
            grpc_expander_url: f.grpc_expander_url.clone(),
            grpc_expander_cert: f.grpc_expander_cert.clone(),
            max_nodes_total: f.max_nodes_total as usize,
            cores_total: min_max("cores-total", &f.cores_total)?,
            memory_total: (memory_gib.0.saturating_mul(1 << 30), memory_gib.1.saturating_mul(1 << 30)),
            gpu_total,
            scale_down_enabled: f.scale_down_enabled,
            scale_down_unready_enabled: f.scale_down_unready_enabled,
            scale_down_delay_after_add: f.scale_down_delay_after_add,
            scale_down_delay_after_delete: f.scale_down_delay_after_delete,
            scale_down_delay_after_failure: f.scale_down_delay_after_failure,
            scale_down_simulation_timeout: f.scale_down_simulation_timeout,
            unremovable_node_recheck_timeout: f.unremovable_node_recheck_timeout,
            max_scale_down_parallelism: f.max_scale_down_parallelism,
            max_drain_parallelism: f.max_drain_parallelism,
            drain: DrainOptions {
                skip_nodes_with_system_pods: f.skip_nodes_with_system_pods,
                skip_nodes_with_local_storage: f.skip_nodes_with_local_storage,
                skip_nodes_with_custom_controller_pods: f.skip_nodes_with_custom_controller_pods,
                min_replica_count: f.min_replica_count,
                blocking_system_pod_disruption_timeout: f.blocking_system_pod_disruption_timeout,
            },
            ignore_mirror_pods_utilization: f.ignore_mirror_pods_utilization,
            daemonset_eviction_for_empty_nodes: f.daemonset_eviction_for_empty_nodes,
            daemonset_eviction_for_occupied_nodes: f.daemonset_eviction_for_occupied_nodes,
            expendable_pods_priority_cutoff: f.expendable_pods_priority_cutoff,
            new_pod_scale_up_delay: f.new_pod_scale_up_delay,
            max_nodes_per_scale_up: f.max_nodes_per_scaleup,
            max_node_group_binpacking_duration: f.max_nodegroup_binpacking_duration,
            max_binpacking_time: f.max_binpacking_time,
            fastpath_binpacking: f.fastpath_binpacking_enabled,
            balancing: BalancingOptions {
                enabled: f.balance_similar_node_groups,
                ignore_labels: f.balancing_ignore_label.clone(),
                labels: f.balancing_label.clone(),
                memory_difference_ratio: f.memory_difference_ratio,
                max_allocatable_difference_ratio: f.max_allocatable_difference_ratio,
                max_free_difference_ratio: f.max_free_difference_ratio,
            },
            ok_total_unready_count: f.ok_total_unready_count,
            max_total_unready_percentage: f.max_total_unready_percentage,
            scale_up_from_zero: f.scale_up_from_zero,
            startup_taints,
            startup_taint_prefixes: f.startup_taint_prefix.clone(),
            status_taints: f.status_taint.clone(),
            scale_from_unschedulable: f.scale_from_unschedulable,
            force_ds: f.force_ds,
            enforce_node_group_min_size: f.enforce_node_group_min_size,
            allowed_scheduler_names: f.allowed_scheduler_names.clone(),
            bypassed_scheduler_names: f.bypassed_scheduler_names.clone(),
            scan_interval: f.scan_interval,
            frequent_loops_enabled: f.frequent_loops_enabled,
            unschedulable_pods_batch_idle: f.unschedulable_pods_batch_idle,
            unschedulable_pods_batch_max: f.unschedulable_pods_batch_max,
            node_delete_delay_after_taint: f.node_delete_delay_after_taint,
            max_graceful_termination_sec: f.max_graceful_termination_sec.max(0),
            max_pod_eviction_time: f.max_pod_eviction_time,
            cordon_node_before_terminating: f.cordon_node_before_terminating,
            max_bulk_soft_taint_count: f.max_bulk_soft_taint_count,
            max_bulk_soft_taint_time: f.max_bulk_soft_taint_time,
            node_deletion_delay_timeout: f.node_deletion_delay_timeout,
            node_deletion_batcher_interval: f.node_deletion_batcher_interval,
            force_delete_failed_nodes: f.force_delete_failed_nodes,
            scale_down_delay_type_local: f.scale_down_delay_type_local,
            parallel_scale_up: f.parallel_scale_up,
            csi_node_aware_scheduling: f.enable_csi_node_aware_scheduling,
            initial_node_group_backoff_duration: f.initial_node_group_backoff_duration,
            max_node_group_backoff_duration: f.max_node_group_backoff_duration,
            node_group_backoff_reset_timeout: f.node_group_backoff_reset_timeout,
            write_status_configmap: f.write_status_configmap,
            status_config_map_name: f.status_config_map_name.clone(),
            force_delete_unregistered_nodes: f.force_delete_unregistered_nodes,
            hpa: crate::hpa::HpaConfig {
                tolerance: f.hpa_tolerance,
                cpu_initialization_period: f.hpa_cpu_initialization_period,
                initial_readiness_delay: f.hpa_initial_readiness_delay,
                downscale_stabilization: f.hpa_downscale_stabilization,
                sync_period: f.hpa_sync_period,
            },
            hpa_aware_scale_up: f.hpa_aware_scale_up,
            ..AutoscalingOptions::default()
        })
    }

    /// A startup taint: upstream's built-in prefixes, `--startup-taint-prefix`, and the keys of
    /// `--startup-taint` / `--ignore-taint`.
    pub fn is_startup_taint(&self, key: &str) -> bool {
        use simulator::well_known::{IGNORE_TAINT_PREFIX, STARTUP_TAINT_PREFIX};
        key.starts_with(STARTUP_TAINT_PREFIX)
            || key.starts_with(IGNORE_TAINT_PREFIX)
            || self.startup_taint_prefixes.iter().any(|p| !p.is_empty() && key.starts_with(p.as_str()))
            || self.startup_taints.iter().any(|t| t == key)
    }

    /// A status taint: upstream's built-in prefix and the keys of `--status-taint`.
    pub fn is_status_taint(&self, key: &str) -> bool {
        key.starts_with(simulator::well_known::STATUS_TAINT_PREFIX) || self.status_taints.iter().any(|t| t == key)
    }

    /// Cluster-wide limits as the cloud provider's resource limiter expresses them.
    pub fn resource_limiter(&self) -> ResourceLimiter {
        let mut l = ResourceLimiter::default();
        l.min.insert("cpu".into(), self.cores_total.0);
        l.max.insert("cpu".into(), self.cores_total.1);
        l.min.insert("memory".into(), self.memory_total.0);
        l.max.insert("memory".into(), self.memory_total.1);
        for g in &self.gpu_total {
            l.min.insert(g.gpu_type.clone(), g.min);
            l.max.insert(g.gpu_type.clone(), g.max);
        }
        l
    }
}
