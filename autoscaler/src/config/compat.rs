//! Upstream flags this autoscaler accepts so that upstream's manifests and Helm values start it
//! unchanged, but that do not change what it does:
//!
//! - flags with no effect here, as in upstream (`--scale-down-non-empty-candidates-count` and the
//!   candidates pool: upstream's current planner parses and ignores them), or tuning knobs of
//!   upstream's internals and other providers (`--predicate-parallelism`, `--gce-*`,
//!   `--kube-api-content-type`: this client always speaks JSON);
//! - flags of features this autoscaler does not have (ProvisioningRequests, capacity buffers and
//!   quotas, asynchronous node groups, proactive and salvo scale-up, graceful degradation, the
//!   debugging snapshot, drain priorities, …): accepted at their default, and a clear start-up
//!   error naming the flag when set to switch the feature on ([`CompatFlags::refuse_unbuilt`]).

use std::time::Duration;

use clap::{ArgAction, Args};
use cloudprovider::duration::parse_go_duration;

use super::ConfigError;

fn duration(s: &str) -> Result<Duration, String> {
    parse_go_duration(s)
}

fn positive(s: &str) -> Result<i64, String> {
    match s.parse::<i64>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!("{s:?} is not a positive integer")),
    }
}

/// Accepted for compatibility; see the module documentation.
#[derive(Args, Clone, Debug, PartialEq)]
#[command(next_help_heading = "Accepted for compatibility (no effect here, as documented)")]
pub struct CompatFlags {
    /// As upstream's current planner: parsed, no effect.
    #[arg(long = "scale-down-non-empty-candidates-count", default_value_t = 30)]
    pub scale_down_non_empty_candidates_count: i64,
    /// As upstream's current planner: parsed, no effect.
    #[arg(long = "scale-down-candidates-pool-ratio", default_value_t = 0.1)]
    pub scale_down_candidates_pool_ratio: f64,
    /// As upstream's current planner: parsed, no effect.
    #[arg(long = "scale-down-candidates-pool-min-count", default_value_t = 50)]
    pub scale_down_candidates_pool_min_count: i64,
    /// Upstream's scheduler-plugin parallelism; the simulation here is not parallel. Must be positive.
    #[arg(long = "predicate-parallelism", default_value_t = 4, value_parser = positive)]
    pub predicate_parallelism: i64,
    /// Deprecated upstream (use --predicate-parallelism); no effect.
    #[arg(long = "cluster-snapshot-parallelism", default_value_t = 16)]
    pub cluster_snapshot_parallelism: i64,
    /// Verbosity of upstream's scheduler framework logs; no scheduler framework here.
    #[arg(long = "scheduler-verbosity", default_value_t = 0)]
    pub scheduler_verbosity: i64,
    /// Content type of API requests; this client always uses JSON.
    #[arg(long = "kube-api-content-type", default_value = "application/vnd.kubernetes.protobuf")]
    pub kube_api_content_type: String,
    /// The HTTP user agent of upstream's clients; kube-rs sends its own.
    #[arg(long = "user-agent", default_value = "cluster-autoscaler")]
    pub user_agent: String,
    /// Templates here come from a real node of the group when there is one, else from the
    /// provider each loop; no template cache to expire.
    #[arg(long = "node-info-cache-expire-time", default_value = "87600h", value_parser = duration)]
    pub node_info_cache_expire_time: Duration,
    /// GCE only (no GCE provider here).
    #[arg(long = "regional", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub regional: bool,
    /// GCE only.
    #[arg(long = "gce-concurrent-refreshes", default_value_t = 1)]
    pub gce_concurrent_refreshes: i64,
    /// GCE only.
    #[arg(long = "gce-mig-instances-min-refresh-wait-time", default_value = "5s", value_parser = duration)]
    pub gce_mig_instances_min_refresh_wait_time: Duration,
    /// GCE only.
    #[arg(long = "bulk-mig-instances-listing-enabled", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub bulk_mig_instances_listing_enabled: bool,
    /// Only with --enable-provisioning-requests (not built).
    #[arg(long = "check-capacity-batch-processing", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub check_capacity_batch_processing: bool,
    /// Only with --enable-provisioning-requests (not built).
    #[arg(long = "check-capacity-provisioning-request-max-batch-size", default_value_t = 10)]
    pub check_capacity_provisioning_request_max_batch_size: i64,
    /// Only with --enable-provisioning-requests (not built).
    #[arg(long = "check-capacity-provisioning-request-batch-timebox", default_value = "10s", value_parser = duration)]
    pub check_capacity_provisioning_request_batch_timebox: Duration,
    /// Only with --enable-provisioning-requests (not built).
    #[arg(long = "check-capacity-processor-instance", default_value = "")]
    pub check_capacity_processor_instance: String,
    /// Only with --enable-provisioning-requests (not built).
    #[arg(long = "provisioning-request-initial-backoff-time", default_value = "1m", value_parser = duration)]
    pub provisioning_request_initial_backoff_time: Duration,
    /// Only with --enable-provisioning-requests (not built).
    #[arg(long = "provisioning-request-max-backoff-time", default_value = "10m", value_parser = duration)]
    pub provisioning_request_max_backoff_time: Duration,
    /// Only with --enable-provisioning-requests (not built).
    #[arg(long = "provisioning-request-max-backoff-cache-size", default_value_t = 1000)]
    pub provisioning_request_max_backoff_cache_size: i64,
    /// Only with --enable-proactive-scaleup (not built).
    #[arg(long = "pod-injection-limit", default_value_t = 5000)]
    pub pod_injection_limit: i64,
    /// Only with --capacity-buffer-controller-enabled (not built).
    #[arg(long = "capacity-buffer-pod-dry-run-enabled", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub capacity_buffer_pod_dry_run_enabled: bool,
    /// Only with --enable-graceful-degradation (not built).
    #[arg(long = "pending-pods-batching-timeout", default_value = "4m", value_parser = duration)]
    pub pending_pods_batching_timeout: Duration,
    /// Only with --salvo-scale-up (not built).
    #[arg(long = "salvo-scale-up-budget", default_value = "1m", value_parser = duration)]
    pub salvo_scale_up_budget: Duration,

    // Features not built: accepted at their defaults only (see `refuse_unbuilt`).
    /// Not built: ProvisioningRequest CRs. Refused when true.
    #[arg(long = "enable-provisioning-requests", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enable_provisioning_requests: bool,
    /// Not built: asynchronous node group creation. Refused when true.
    #[arg(long = "async-node-groups", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub async_node_groups: bool,
    /// Not built: CapacityBuffer controller. Refused when true.
    #[arg(long = "capacity-buffer-controller-enabled", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub capacity_buffer_controller_enabled: bool,
    /// Not built: CapacityBuffer pod injection. Refused when true.
    #[arg(long = "capacity-buffer-pod-injection-enabled", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub capacity_buffer_pod_injection_enabled: bool,
    /// Not built: CapacityQuota CRDs. Refused when true.
    #[arg(long = "capacity-quotas-enabled", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub capacity_quotas_enabled: bool,
    /// Not built: proactive scale-up for controllers below their replica count. Refused when true.
    #[arg(long = "enable-proactive-scaleup", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enable_proactive_scaleup: bool,
    /// Not built: several scale-ups in one loop. Refused when true.
    #[arg(long = "salvo-scale-up", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub salvo_scale_up: bool,
    /// Not built: a taint delay from measured API latency. Refused when true.
    #[arg(long = "dynamic-node-delete-delay-after-taint-enabled", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub dynamic_node_delete_delay_after_taint_enabled: bool,
    /// Not built: time-boxed pending-pod simulation. Refused when true.
    #[arg(long = "enable-graceful-degradation", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enable_graceful_degradation: bool,
    /// Dynamic Resource Allocation objects are not simulated here; upstream locks this to true
    /// and refuses false. Accepted at true.
    #[arg(long = "enable-dynamic-resource-allocation", help_heading = "Not built (refused unless at their default)", default_value_t = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enable_dynamic_resource_allocation: bool,
    /// The only estimator is `binpacking`, as upstream.
    #[arg(
        long = "estimator",
        help_heading = "Not built (refused unless at their default)",
        default_value = "binpacking"
    )]
    pub estimator: String,
    /// Not built: eviction in priority bands. Refused when set.
    #[arg(
        long = "drain-priority-config",
        help_heading = "Not built (refused unless at their default)",
        default_value = ""
    )]
    pub drain_priority_config: String,
    /// Not built: /debug/pprof. Refused when true.
    #[arg(long = "profiling", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub profiling: bool,
    /// Not built: /snapshotz. Refused when true.
    #[arg(long = "debugging-snapshot-enabled", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub debugging_snapshot_enabled: bool,
    /// Not built: node removal latency metrics. Refused when true.
    #[arg(long = "node-removal-latency-tracking-enabled", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub node_removal_latency_tracking_enabled: bool,
    /// Not built: the skipped-node evaluation time metric. Refused when true.
    #[arg(long = "max-node-skip-eval-time-tracker-enabled", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub max_node_skip_eval_time_tracker_enabled: bool,
    /// Not built: scale-up simulation for skipped node groups. Refused when true.
    #[arg(long = "scaleup-simulation-for-skipped-node-groups-enabled", help_heading = "Not built (refused unless at their default)", default_value_t = false, action = ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub scaleup_simulation_for_skipped_node_groups_enabled: bool,
    /// Not built: unneeded times rebuilt from soft taints after a restart. Refused when not 0s.
    #[arg(long = "node-deletion-candidate-ttl", help_heading = "Not built (refused unless at their default)", default_value = "0s", value_parser = duration)]
    pub node_deletion_candidate_ttl: Duration,
}

impl Default for CompatFlags {
    /// Every flag at upstream's default.
    fn default() -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            flags: CompatFlags,
        }
        Only::parse_from(["defaults"]).flags
    }
}

impl CompatFlags {
    /// A clear error for the first flag that would switch on a feature this autoscaler does
    /// not have.
    pub fn refuse_unbuilt(&self) -> Result<(), ConfigError> {
        let refuse = |flag: &'static str, value: String, feature: &str| {
            Err(ConfigError { flag, value, reason: format!("{feature} is not built in this autoscaler") })
        };
        let switches = [
            ("enable-provisioning-requests", self.enable_provisioning_requests, "ProvisioningRequest support"),
            ("async-node-groups", self.async_node_groups, "asynchronous node group creation"),
            (
                "capacity-buffer-controller-enabled",
                self.capacity_buffer_controller_enabled,
                "the CapacityBuffer controller",
            ),
            (
                "capacity-buffer-pod-injection-enabled",
                self.capacity_buffer_pod_injection_enabled,
                "CapacityBuffer pod injection",
            ),
            ("capacity-quotas-enabled", self.capacity_quotas_enabled, "CapacityQuota support"),
            ("enable-proactive-scaleup", self.enable_proactive_scaleup, "proactive scale-up"),
            ("salvo-scale-up", self.salvo_scale_up, "salvo scale-up"),
            (
                "dynamic-node-delete-delay-after-taint-enabled",
                self.dynamic_node_delete_delay_after_taint_enabled,
                "the dynamic node delete delay",
            ),
            ("enable-graceful-degradation", self.enable_graceful_degradation, "graceful degradation"),
            ("profiling", self.profiling, "the /debug/pprof endpoint"),
            ("debugging-snapshot-enabled", self.debugging_snapshot_enabled, "the debugging snapshot"),
            (
                "node-removal-latency-tracking-enabled",
                self.node_removal_latency_tracking_enabled,
                "node removal latency tracking",
            ),
            (
                "max-node-skip-eval-time-tracker-enabled",
                self.max_node_skip_eval_time_tracker_enabled,
                "the skipped-node evaluation time tracker",
            ),
            (
                "scaleup-simulation-for-skipped-node-groups-enabled",
                self.scaleup_simulation_for_skipped_node_groups_enabled,
                "scale-up simulation for skipped node groups",
            ),
        ];
        if let Some((flag, _, feature)) = switches.into_iter().find(|(_, on, _)| *on) {
            return refuse(flag, "true".into(), feature);
        }
        if !self.enable_dynamic_resource_allocation {
            // Upstream refuses it too: DRA handling is locked on there.
            return Err(ConfigError {
                flag: "enable-dynamic-resource-allocation",
                value: "false".into(),
                reason: "must be true, as upstream (and Dynamic Resource Allocation objects are not simulated here)"
                    .into(),
            });
        }
        if self.estimator != "binpacking" {
            return Err(ConfigError {
                flag: "estimator",
                value: self.estimator.clone(),
                reason: "the only estimator is binpacking, as upstream".into(),
            });
        }
        if !self.drain_priority_config.is_empty() {
            return refuse("drain-priority-config", self.drain_priority_config.clone(), "eviction in priority bands");
        }
        if !self.node_deletion_candidate_ttl.is_zero() {
            return refuse(
                "node-deletion-candidate-ttl",
                cloudprovider::duration::format_go_duration(self.node_deletion_candidate_ttl),
                "rebuilding unneeded times from soft taints after a restart",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        flags: CompatFlags,
    }

    fn parse(args: &[&str]) -> CompatFlags {
        Cli::try_parse_from(std::iter::once("ca").chain(args.iter().copied())).unwrap().flags
    }

    #[test]
    fn upstream_defaults_are_accepted() {
        assert_eq!(parse(&[]).refuse_unbuilt(), Ok(()));
        let explicit = parse(&[
            "--enable-provisioning-requests=false",
            "--enable-dynamic-resource-allocation=true",
            "--estimator=binpacking",
            "--scale-down-non-empty-candidates-count=10",
            "--kube-api-content-type=application/json",
            "--node-deletion-candidate-ttl=0s",
            "--predicate-parallelism=8",
        ]);
        assert_eq!(explicit.refuse_unbuilt(), Ok(()));
    }

    #[test]
    fn unbuilt_features_switched_on_are_refused_naming_the_flag() {
        for (flag, named) in [
            ("--enable-provisioning-requests", "enable-provisioning-requests"),
            ("--enable-provisioning-requests=true", "enable-provisioning-requests"),
            ("--async-node-groups=true", "async-node-groups"),
            ("--enable-dynamic-resource-allocation=false", "enable-dynamic-resource-allocation"),
            ("--estimator=fancy", "estimator"),
            ("--drain-priority-config=10000:20,0:60", "drain-priority-config"),
            ("--node-deletion-candidate-ttl=5m", "node-deletion-candidate-ttl"),
            ("--profiling", "profiling"),
        ] {
            let error = parse(&[flag]).refuse_unbuilt().unwrap_err();
            assert_eq!(error.flag, named, "{flag}");
            assert!(error.to_string().contains(named), "{error}");
        }
    }

    #[test]
    fn predicate_parallelism_must_be_positive_as_upstream() {
        assert!(Cli::try_parse_from(["ca", "--predicate-parallelism=0"]).is_err());
    }
}
