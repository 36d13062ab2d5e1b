//! Upstream Cluster Autoscaler's flags that change a decision, with upstream's names and
//! defaults. Booleans take `--flag` or `--flag=false`, durations use Go syntax, lists repeat.

use std::time::Duration;

use clap::{ArgAction, Args};

use cloudprovider::duration::parse_go_duration;

fn duration(s: &str) -> Result<Duration, String> {
    parse_go_duration(s)
}

fn ratio(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("invalid number {s:?}"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{s} is outside [0, 1]"));
    }
    Ok(v)
}

fn non_negative_f64(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("invalid number {s:?}"))?;
    if v.is_nan() || v < 0.0 {
        return Err(format!("{s} must not be negative"));
    }
    Ok(v)
}

/// Every flag that changes what the autoscaler decides, shared by `plan`, `simulate` and the
/// controller.
#[derive(Args, Clone, Debug)]
pub struct DecisionFlags {
    /// Cloud provider, by registered name: `static` (groups from --nodes and --cloud-config; sizes
    /// only), `memory` (groups from --cloud-config in the scenario `nodeGroups` format; fake nodes
    /// appear and go), `aws` (EC2 Auto Scaling groups), `externalgrpc` (a provider served over upstream's gRPC protocol), or one a
    /// custom build registers.
    #[arg(long = "cloud-provider", help_heading = "Cloud provider and node groups", default_value = "static")]
    pub cloud_provider: String,

    /// Path to the cloud provider configuration file.
    #[arg(long = "cloud-config", help_heading = "Cloud provider and node groups", default_value = "")]
    pub cloud_config: String,

    /// Node group `<min>:<max>:<id>`; repeat for several groups.
    #[arg(long = "nodes", help_heading = "Cloud provider and node groups", action = ArgAction::Append)]
    pub nodes: Vec<String>,

    /// Node group discovery for providers that have it, `<discoverer>:<key>=<value>,…`
    /// (e.g. AWS `asg:tag=k8s.io/cluster-autoscaler/enabled`); repeatable.
    #[arg(long = "node-group-auto-discovery", help_heading = "Cloud provider and node groups", action = ArgAction::Append)]
    pub node_group_auto_discovery: Vec<String>,

    /// AWS: instance types from the built-in table only, never from `DescribeInstanceTypes`.
    #[arg(long = "aws-use-static-instance-list", help_heading = "Cloud provider and node groups", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub aws_use_static_instance_list: bool,

    /// Namespace of the status ConfigMap, the priority expander ConfigMap and the leader lease.
    #[arg(long = "namespace", help_heading = "Cloud provider and node groups", default_value = "kube-system")]
    pub namespace: String,

    /// Expanders to choose the node group to scale up, comma-separated and applied in order:
    /// random, most-pods, least-waste, least-nodes, price, priority, grpc.
    #[arg(long = "expander", help_heading = "Scale up", default_value = "least-waste")]
    pub expander: String,

    /// `--expander=grpc`: the expander service, `host:port`.
    #[arg(long = "grpc-expander-url", help_heading = "Scale up", default_value = "")]
    pub grpc_expander_url: String,

    /// `--expander=grpc`: PEM certificate (the CA, or the service's own) the service's TLS
    /// certificate is checked against; required, as upstream never connects without TLS.
    #[arg(long = "grpc-expander-cert", help_heading = "Scale up", default_value = "")]
    pub grpc_expander_cert: String,

    /// Maximum number of nodes in all node groups (0: no limit).
    #[arg(long = "max-nodes-total", help_heading = "Cluster limits", default_value_t = 0)]
    pub max_nodes_total: i64,

    /// Minimum and maximum number of cores in the cluster, `<min>:<max>`.
    #[arg(long = "cores-total", help_heading = "Cluster limits", default_value = "0:320000")]
    pub cores_total: String,

    /// Minimum and maximum GiB of memory in the cluster, `<min>:<max>`.
    #[arg(long = "memory-total", help_heading = "Cluster limits", default_value = "0:6400000")]
    pub memory_total: String,

    /// Minimum and maximum number of GPUs of a type, `<gpu_type>:<min>:<max>`; repeatable.
    #[arg(long = "gpu-total", help_heading = "Cluster limits", action = ArgAction::Append)]
    pub gpu_total: Vec<String>,

    /// Node utilization (max of cpu and memory requests / allocatable) at or below which a
    /// node can be considered for scale-down.
    #[arg(long = "scale-down-utilization-threshold", help_heading = "Scale down", default_value_t = 0.5, value_parser = ratio)]
    pub scale_down_utilization_threshold: f64,

    /// GPU utilization at or below which a GPU node can be considered for scale-down.
    #[arg(long = "scale-down-gpu-utilization-threshold", help_heading = "Scale down", default_value_t = 0.5, value_parser = ratio)]
    pub scale_down_gpu_utilization_threshold: f64,

    /// How long a node should be unneeded before it is eligible for scale-down.
    #[arg(long = "scale-down-unneeded-time", help_heading = "Scale down", default_value = "10m", value_parser = duration)]
    pub scale_down_unneeded_time: Duration,

    /// How long an unready node should be unneeded before it is eligible for scale-down.
    #[arg(long = "scale-down-unready-time", help_heading = "Scale down", default_value = "20m", value_parser = duration)]
    pub scale_down_unready_time: Duration,

    /// Should CA scale down unready nodes of the cluster.
    #[arg(long = "scale-down-unready-enabled", help_heading = "Scale down", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub scale_down_unready_enabled: bool,

    /// Should CA scale down the cluster (deprecated upstream, still honoured).
    #[arg(long = "scale-down-enabled", help_heading = "Scale down", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub scale_down_enabled: bool,

    /// How long after a scale-up scale-down evaluation resumes.
    #[arg(long = "scale-down-delay-after-add", help_heading = "Scale down", default_value = "10m", value_parser = duration)]
    pub scale_down_delay_after_add: Duration,

    /// How long after a node deletion scale-down evaluation resumes.
    #[arg(long = "scale-down-delay-after-delete", help_heading = "Scale down", default_value = "0s", value_parser = duration)]
    pub scale_down_delay_after_delete: Duration,

    /// How long after a scale-down failure scale-down evaluation resumes.
    #[arg(long = "scale-down-delay-after-failure", help_heading = "Scale down", default_value = "3m", value_parser = duration)]
    pub scale_down_delay_after_failure: Duration,

    /// Time budget of the scale-down removal simulation per loop.
    #[arg(long = "scale-down-simulation-timeout", help_heading = "Scale down", default_value = "30s", value_parser = duration)]
    pub scale_down_simulation_timeout: Duration,

    /// How long to wait before re-checking a node found unremovable.
    #[arg(long = "unremovable-node-recheck-timeout", help_heading = "Scale down", default_value = "5m", value_parser = duration)]
    pub unremovable_node_recheck_timeout: Duration,

    /// Maximum number of nodes (empty and drained together) deleted in parallel.
    #[arg(long = "max-scale-down-parallelism", help_heading = "Scale down", default_value_t = 10)]
    pub max_scale_down_parallelism: usize,

    /// Maximum number of non-empty nodes drained in parallel.
    #[arg(long = "max-drain-parallelism", help_heading = "Scale down", default_value_t = 1)]
    pub max_drain_parallelism: usize,

    /// Nodes with kube-system pods (except DaemonSet and mirror pods) without a PDB are not removed.
    #[arg(long = "skip-nodes-with-system-pods", help_heading = "Scale down", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub skip_nodes_with_system_pods: bool,

    /// Nodes with pods using local storage (hostPath, emptyDir) are not removed.
    #[arg(long = "skip-nodes-with-local-storage", help_heading = "Scale down", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub skip_nodes_with_local_storage: bool,

    /// Nodes with pods owned by custom controllers are not removed.
    #[arg(long = "skip-nodes-with-custom-controller-pods", help_heading = "Scale down", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub skip_nodes_with_custom_controller_pods: bool,

    /// Minimum replicas a ReplicaSet or ReplicationController must have for its pods to be moved.
    #[arg(long = "min-replica-count", help_heading = "Scale down", default_value_t = 0)]
    pub min_replica_count: i32,

    /// After this pod age, kube-system pods without a PDB no longer block scale-down.
    #[arg(long = "blocking-system-pod-distruption-timeout", help_heading = "Scale down", default_value = "1h", value_parser = duration)]
    pub blocking_system_pod_disruption_timeout: Duration,

    /// Leave DaemonSet pods out of node utilization.
    #[arg(long = "ignore-daemonsets-utilization", help_heading = "Scale down", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub ignore_daemonsets_utilization: bool,

    /// Leave mirror pods out of node utilization.
    #[arg(long = "ignore-mirror-pods-utilization", help_heading = "Scale down", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub ignore_mirror_pods_utilization: bool,

    /// Evict DaemonSet pods from empty nodes being removed.
    #[arg(long = "daemonset-eviction-for-empty-nodes", help_heading = "Scale down", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub daemonset_eviction_for_empty_nodes: bool,

    /// Evict DaemonSet pods from non-empty nodes being drained.
    #[arg(long = "daemonset-eviction-for-occupied-nodes", help_heading = "Scale down", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub daemonset_eviction_for_occupied_nodes: bool,

    /// Pods with priority below this never trigger scale-up and never block scale-down.
    #[arg(long = "expendable-pods-priority-cutoff", help_heading = "Scale up", default_value_t = -10, allow_hyphen_values = true)]
    pub expendable_pods_priority_cutoff: i32,

    /// Pods younger than this are not considered for scale-up.
    #[arg(long = "new-pod-scale-up-delay", help_heading = "Scale up", default_value = "0s", value_parser = duration)]
    pub new_pod_scale_up_delay: Duration,

    /// Maximum number of nodes one estimation may add.
    #[arg(long = "max-nodes-per-scaleup", help_heading = "Scale up", default_value_t = 1000)]
    pub max_nodes_per_scaleup: i64,

    /// Time limit of the binpacking estimation of one node group.
    #[arg(long = "max-nodegroup-binpacking-duration", help_heading = "Scale up", default_value = "10s", value_parser = duration)]
    pub max_nodegroup_binpacking_duration: Duration,

    /// Total binpacking time per scale-up; node groups left when it runs out are not evaluated.
    #[arg(long = "max-binpacking-time", help_heading = "Scale up", default_value = "5m", value_parser = duration)]
    pub max_binpacking_time: Duration,

    /// Pack one node of the group that benefits most and count the rest arithmetically.
    #[arg(long = "fastpath-binpacking-enabled", help_heading = "Scale up", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub fastpath_binpacking_enabled: bool,

    /// Balance scale-ups across similar node groups.
    #[arg(long = "balance-similar-node-groups", help_heading = "Scale up", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub balance_similar_node_groups: bool,

    /// Labels ignored when comparing node groups for similarity; repeatable.
    #[arg(long = "balancing-ignore-label", help_heading = "Scale up", action = ArgAction::Append)]
    pub balancing_ignore_label: Vec<String>,

    /// Only these labels are compared for similarity; repeatable.
    #[arg(long = "balancing-label", help_heading = "Scale up", action = ArgAction::Append)]
    pub balancing_label: Vec<String>,

    /// Maximum memory capacity difference between similar node groups, as a ratio.
    #[arg(long = "memory-difference-ratio", help_heading = "Scale up", default_value_t = 0.015, value_parser = ratio)]
    pub memory_difference_ratio: f64,

    /// Maximum allocatable difference between similar node groups, as a ratio.
    #[arg(long = "max-allocatable-difference-ratio", help_heading = "Scale up", default_value_t = 0.05, value_parser = ratio)]
    pub max_allocatable_difference_ratio: f64,

    /// Maximum free-resource difference between similar node groups, as a ratio.
    #[arg(long = "max-free-difference-ratio", help_heading = "Scale up", default_value_t = 0.05, value_parser = ratio)]
    pub max_free_difference_ratio: f64,

    /// Unready nodes always tolerated before the cluster counts as unhealthy.
    #[arg(long = "ok-total-unready-count", help_heading = "Node readiness and cluster health", default_value_t = 3)]
    pub ok_total_unready_count: usize,

    /// Percentage of unready nodes above which (and above the count) the autoscaler halts.
    #[arg(long = "max-total-unready-percentage", help_heading = "Node readiness and cluster health", default_value_t = 45.0, value_parser = non_negative_f64)]
    pub max_total_unready_percentage: f64,

    /// Time a requested node has to register.
    #[arg(long = "max-node-provision-time", help_heading = "Scale up", default_value = "15m", value_parser = duration)]
    pub max_node_provision_time: Duration,

    /// Time a registered node has to become ready before it counts as unready.
    #[arg(long = "max-node-startup-time", help_heading = "Node readiness and cluster health", default_value = "15m", value_parser = duration)]
    pub max_node_startup_time: Duration,

    /// Scale up even when no node is ready.
    #[arg(long = "scale-up-from-zero", help_heading = "Scale up", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub scale_up_from_zero: bool,

    /// Startup taints (key): nodes carrying them count as unready and templates drop them; repeatable.
    #[arg(long = "startup-taint", help_heading = "Node readiness and cluster health", action = ArgAction::Append)]
    pub startup_taint: Vec<String>,

    /// Startup taint key prefixes, in addition to upstream's built-in ones; repeatable.
    #[arg(long = "startup-taint-prefix", help_heading = "Node readiness and cluster health", action = ArgAction::Append)]
    pub startup_taint_prefix: Vec<String>,

    /// Deprecated alias of --startup-taint.
    #[arg(long = "ignore-taint", help_heading = "Node readiness and cluster health", action = ArgAction::Append)]
    pub ignore_taint: Vec<String>,

    /// Status taints (key): templates drop them but the node stays ready; repeatable.
    #[arg(long = "status-taint", help_heading = "Node readiness and cluster health", action = ArgAction::Append)]
    pub status_taint: Vec<String>,

    /// Ignore `spec.unschedulable` of the node a template is built from.
    #[arg(long = "scale-from-unschedulable", help_heading = "Scale up", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub scale_from_unschedulable: bool,

    /// Add pending DaemonSet pods to node templates.
    #[arg(long = "force-ds", help_heading = "Scale up", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub force_ds: bool,

    /// Scale node groups below their minimum size up to it.
    #[arg(long = "enforce-node-group-min-size", help_heading = "Scale up", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enforce_node_group_min_size: bool,

    /// Scheduler names whose pods the autoscaler considers (empty: all); repeatable or comma-separated.
    #[arg(long = "allowed-scheduler-names", help_heading = "Scale up", action = ArgAction::Append, value_delimiter = ',')]
    pub allowed_scheduler_names: Vec<String>,

    /// Schedulers whose pods need no PodScheduled condition nor a minimum age to trigger a
    /// scale-up (a subset of --allowed-scheduler-names); repeatable or comma-separated.
    #[arg(long = "bypassed-scheduler-names", help_heading = "Scale up", action = ArgAction::Append, value_delimiter = ',')]
    pub bypassed_scheduler_names: Vec<String>,

    /// Wait between tainting a node and draining or deleting it.
    #[arg(long = "node-delete-delay-after-taint", help_heading = "Scale down", default_value = "5s", value_parser = duration)]
    pub node_delete_delay_after_taint: Duration,

    /// Longest wait for a node's `delay-deletion.cluster-autoscaler.kubernetes.io/` annotations
    /// to go before it is deleted anyway.
    #[arg(long = "node-deletion-delay-timeout", help_heading = "Scale down", default_value = "2m", value_parser = duration)]
    pub node_deletion_delay_timeout: Duration,

    /// Collect a group's nodes to delete for this long, then delete them in one call (0s: at
    /// once).
    #[arg(long = "node-deletion-batcher-interval", help_heading = "Scale down", default_value = "0s", value_parser = duration)]
    pub node_deletion_batcher_interval: Duration,

    /// Delete instances that failed to be created even below the group's minimum size.
    #[arg(long = "force-delete-failed-nodes", help_heading = "Node readiness and cluster health", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub force_delete_failed_nodes: bool,

    /// Apply the scale-down delays after add, delete and failure per node group instead of to
    /// the whole cluster.
    #[arg(long = "scale-down-delay-type-local", help_heading = "Scale down", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub scale_down_delay_type_local: bool,

    /// Increase the sizes of several node groups (balancing) concurrently.
    #[arg(long = "parallel-scale-up", help_heading = "Scale up", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub parallel_scale_up: bool,

    /// Consider the CSI volume limits nodes report (CSINode objects) when simulating scheduling.
    #[arg(long = "enable-csi-node-aware-scheduling", help_heading = "Scale up", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enable_csi_node_aware_scheduling: bool,

    /// The autoscaled cluster's name, for providers that use it (e.g. discovery).
    #[arg(long = "cluster-name", help_heading = "Cloud provider and node groups", default_value = "")]
    pub cluster_name: String,

    /// Cluster API: the management cluster is `--cloud-config` only, never `--kubeconfig`.
    #[arg(long = "clusterapi-cloud-config-authoritative", help_heading = "Cloud provider and node groups", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub clusterapi_cloud_config_authoritative: bool,

    /// Cap on the grace period given to pods evicted during a drain, in seconds.
    #[arg(long = "max-graceful-termination-sec", help_heading = "Scale down", default_value_t = 600)]
    pub max_graceful_termination_sec: i64,

    /// How long to keep retrying one pod's eviction before giving up on the node.
    #[arg(long = "max-pod-eviction-time", help_heading = "Scale down", default_value = "2m", value_parser = duration)]
    pub max_pod_eviction_time: Duration,

    /// Set `spec.unschedulable` alongside the ToBeDeleted taint.
    #[arg(long = "cordon-node-before-terminating", help_heading = "Scale down", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub cordon_node_before_terminating: bool,

    /// Soft-taint API calls per loop (0 disables the DeletionCandidate soft taint).
    #[arg(long = "max-bulk-soft-taint-count", help_heading = "Scale down", default_value_t = 10)]
    pub max_bulk_soft_taint_count: usize,

    /// Time budget per loop for adding and removing soft taints.
    #[arg(long = "max-bulk-soft-taint-time", help_heading = "Scale down", default_value = "3s", value_parser = duration)]
    pub max_bulk_soft_taint_time: Duration,

    /// First backoff of a node group after a failed scale-up.
    #[arg(long = "initial-node-group-backoff-duration", help_heading = "Scale up", default_value = "5m", value_parser = duration)]
    pub initial_node_group_backoff_duration: Duration,

    /// Longest backoff of a node group.
    #[arg(long = "max-node-group-backoff-duration", help_heading = "Scale up", default_value = "30m", value_parser = duration)]
    pub max_node_group_backoff_duration: Duration,

    /// A node group's backoff is forgotten this long after its last failure.
    #[arg(long = "node-group-backoff-reset-timeout", help_heading = "Scale up", default_value = "3h", value_parser = duration)]
    pub node_group_backoff_reset_timeout: Duration,

    /// Maintain the status ConfigMap.
    #[arg(long = "write-status-configmap", help_heading = "Status and loop", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub write_status_configmap: bool,

    /// Name of the status ConfigMap.
    #[arg(
        long = "status-config-map-name",
        help_heading = "Status and loop",
        default_value = "cluster-autoscaler-status"
    )]
    pub status_config_map_name: String,

    /// Delete unregistered nodes even below the group's minimum size.
    #[arg(long = "force-delete-unregistered-nodes", help_heading = "Node readiness and cluster health", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub force_delete_unregistered_nodes: bool,

    /// Account for the pods a pod autoscaler's scale-up will create in the same loop.
    #[arg(long = "hpa-aware-scale-up", help_heading = "Pod autoscalers", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub hpa_aware_scale_up: bool,

    /// How often the embedded pod autoscalers reconcile.
    #[arg(long = "horizontal-pod-autoscaler-sync-period", help_heading = "Pod autoscalers", default_value = "15s", value_parser = duration)]
    pub hpa_sync_period: Duration,

    /// Ratio deviation from the target within which the HPA does not scale.
    #[arg(long = "horizontal-pod-autoscaler-tolerance", help_heading = "Pod autoscalers", default_value_t = 0.1, value_parser = non_negative_f64)]
    pub hpa_tolerance: f64,

    /// After a pod starts, how long its CPU samples may be skipped.
    #[arg(long = "horizontal-pod-autoscaler-cpu-initialization-period", help_heading = "Pod autoscalers", default_value = "5m", value_parser = duration)]
    pub hpa_cpu_initialization_period: Duration,

    /// After a pod starts, how long a readiness change counts as its initial readiness.
    #[arg(long = "horizontal-pod-autoscaler-initial-readiness-delay", help_heading = "Pod autoscalers", default_value = "30s", value_parser = duration)]
    pub hpa_initial_readiness_delay: Duration,

    /// Downscale stabilization window of HPAs without a behavior.
    #[arg(long = "horizontal-pod-autoscaler-downscale-stabilization", help_heading = "Pod autoscalers", default_value = "5m", value_parser = duration)]
    pub hpa_downscale_stabilization: Duration,

    /// Loop period; also the unit of the scale-down candidate limit.
    #[arg(long = "scan-interval", help_heading = "Status and loop", default_value = "10s", value_parser = duration)]
    pub scan_interval: Duration,

    /// Start the next loop at once after one that scaled up or started a deletion, and when
    /// new unschedulable pods appear (after the batching window below).
    #[arg(long = "frequent-loops-enabled", help_heading = "Status and loop", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub frequent_loops_enabled: bool,

    /// Not upstream's: new unschedulable pods start a loop once none arrived for this long
    /// (0: at once, as upstream), so a burst of pods is one decision.
    #[arg(long = "unschedulable-pods-batch-idle", help_heading = "Status and loop", default_value = "1s", value_parser = duration)]
    pub unschedulable_pods_batch_idle: Duration,

    /// Not upstream's: and at the latest this long after the first of them (0: at once).
    #[arg(long = "unschedulable-pods-batch-max", help_heading = "Status and loop", default_value = "10s", value_parser = duration)]
    pub unschedulable_pods_batch_max: Duration,

    /// Upstream flags accepted for compatibility (see `compat`).
    #[command(flatten)]
    pub compat: super::compat::CompatFlags,
}
