//! Upstream's Prometheus metrics (`cluster_autoscaler_*`), fed from what one loop iteration
//! reports.
//!
//! Names, label names and label values follow upstream's `metrics/metrics.go`. Where our loop
//! does not have a piece of data upstream attaches, the label is left out rather than filled
//! with a guess (an absent label and an empty one select the same series in PromQL):
//!
//! - `scaled_up_nodes_total`, `scaled_down_nodes_total{reason}` and
//!   `failed_scale_ups_total{reason}`: upstream's `gpu_resource_name`, `gpu_name` and
//!   `dra_drivers` labels are not exposed (the loop's report does not say which GPU a group has).
//! - `unremovable_nodes_count{reason}`: upstream formats its `UnremovableReason` enum with `%v`,
//!   which prints the enum's number; we expose the same numbers ([`UnremovableReason::code`]).
//! - `old_unregistered_nodes_removed_count` has no `_total` suffix upstream; an OpenMetrics
//!   counter must have one, so it is exposed as a gauge that only ever grows, under the exact
//!   upstream name.
//! - `function_duration_quantile_seconds` (a Summary) is not exposed: prometheus-client has no
//!   summaries; the histogram carries the same observations.
//!
//! Besides upstream's own, client-go's `rest_client_requests_total{code,method,host}` (upstream
//! registers client-go's metrics): every request of the Kubernetes clients by answer.
//!
//! Our own metrics, for the embedded pod autoscalers (no upstream counterpart):
//! `cluster_autoscaler_pod_autoscalers_count{kind}` and
//! `cluster_autoscaler_pod_autoscaler_rescales_total{kind,direction}`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use cloudprovider::CloudProvider;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets_range};
use prometheus_client::registry::Registry;

use crate::config::AutoscalingOptions;
use crate::control::registry::InstanceRemoval;
use crate::control::{LoopReport, PodScalingReport};
use crate::core::ClusterState;
use crate::core::plan::{ScaleDownStatus, ScaleUpResult, UnremovableReason};
use crate::core::readiness::is_being_deleted;
use crate::kube_adapter::RestClientRequests;

type OneLabel = [(&'static str, String); 1];
type TwoLabels = [(&'static str, String); 2];

fn one(key: &'static str, value: &str) -> OneLabel {
    [(key, value.to_string())]
}

/// Upstream's `FunctionLabel` values: the parts of the loop whose duration
/// (`function_duration_seconds{function}`) or start time (`last_activity{activity}`) is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Function {
    /// A whole loop iteration.
    Main,
    /// A whole loop iteration that ended without an error.
    MainSuccessful,
    /// The cluster state was updated and the autoscaling logic started.
    Autoscaling,
    /// The wait between two iterations.
    LoopWait,
    UpdateClusterState,
    CloudProviderRefresh,
    FilterOutSchedulable,
    ScaleUp,
    FindUnneeded,
    ScaleDown,
    ScaleDownNodeDeletion,
    ScaleDownSoftTaintUnneeded,
    Poll,
    Reconfigure,
}

impl Function {
    pub fn as_str(self) -> &'static str {
        match self {
            Function::Main => "main",
            Function::MainSuccessful => "mainSuccessful",
            Function::Autoscaling => "autoscaling",
            Function::LoopWait => "loopWait",
            Function::UpdateClusterState => "updateClusterState",
            Function::CloudProviderRefresh => "cloudProviderRefresh",
            Function::FilterOutSchedulable => "filterOutSchedulable",
            Function::ScaleUp => "scaleUp",
            Function::FindUnneeded => "findUnneeded",
            Function::ScaleDown => "scaleDown",
            Function::ScaleDownNodeDeletion => "scaleDown:nodeDeletion",
            Function::ScaleDownSoftTaintUnneeded => "scaleDown:softTaintUnneeded",
            Function::Poll => "poll",
            Function::Reconfigure => "reconfigure",
        }
    }
}

/// Upstream's `AutoscalerErrorType` values, pre-set to 0 in `errors_total` as upstream does.
pub const ERROR_TYPES: [&str; 7] = [
    "cloudProviderError",
    "apiCallError",
    "internalError",
    "transientError",
    "configurationError",
    "nodeGroupDoesNotExistError",
    "unexpectedScaleDownStateError",
];

/// The error type upstream does not count in `errors_total` and treats as a successful loop for
/// the health check.
pub const TRANSIENT_ERROR: &str = "transientError";

/// `failed_scale_ups_total{reason}` for a failed `IncreaseSize`: upstream wraps the provider's
/// error as a cloud provider error.
const CLOUD_PROVIDER_ERROR: &str = "cloudProviderError";

/// Upstream's cluster size for `cluster_cpu_current_cores` / `cluster_memory_current_bytes`:
/// the capacity of every node not being deleted (a `ToBeDeletedByClusterAutoscaler` taint set
/// less than 5 minutes ago), cpu rounded up to whole cores per node. Returns (cores, bytes).
pub fn cluster_resources<'a>(nodes: impl IntoIterator<Item = &'a Node>, now: Timestamp) -> (i64, i64) {
    let mut cores = 0i64;
    let mut memory = 0i64;
    for node in nodes.into_iter().filter(|n| !is_being_deleted(n, now)) {
        let capacity = node.status.as_ref().and_then(|s| s.capacity.as_ref());
        let value = |name: &str| {
            capacity
                .and_then(|c| c.get(name))
                .and_then(|q| simulator::quantity::parse_value(&q.0).ok())
                .unwrap_or(0)
                .max(0)
        };
        cores = cores.saturating_add(value("cpu"));
        memory = memory.saturating_add(value("memory"));
    }
    (cores, memory)
}

/// The registry and every metric in it. Cheap to update from any thread.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    cluster_safe_to_autoscale: Gauge,
    nodes_count: Family<OneLabel, Gauge>,
    node_groups_count: Family<OneLabel, Gauge>,
    unschedulable_pods_count: Family<OneLabel, Gauge>,
    max_nodes_count: Gauge,
    cluster_cpu_current_cores: Gauge,
    cpu_limits_cores: Family<OneLabel, Gauge>,
    cluster_memory_current_bytes: Gauge,
    memory_limits_bytes: Family<OneLabel, Gauge>,
    unneeded_nodes_count: Gauge,
    unremovable_nodes_count: Family<OneLabel, Gauge>,
    scale_down_in_cooldown: Gauge,
    last_activity: Family<OneLabel, Gauge>,
    pending_node_deletions: Gauge,
    old_unregistered_nodes_removed_count: Gauge,
    errors: Family<OneLabel, Counter>,
    scaled_up_nodes: Counter,
    scaled_down_nodes: Family<OneLabel, Counter>,
    failed_scale_ups: Family<OneLabel, Counter>,
    failed_node_creations: Family<OneLabel, Counter>,
    evicted_pods: Family<OneLabel, Counter>,
    function_duration_seconds: Family<OneLabel, Histogram, fn() -> Histogram>,
    pod_autoscalers_count: Family<OneLabel, Gauge>,
    pod_autoscaler_rescales: Family<TwoLabels, Counter>,
    /// `--max-nodes-total` (0: none), for `max_nodes_count`.
    max_nodes_total: Mutex<usize>,
    /// Every `unremovable_nodes_count` reason ever set, so a reason that disappears goes to 0.
    unremovable_reasons_seen: Mutex<BTreeSet<String>>,
    /// The cloud provider's own metrics (`CloudProvider::register_metrics`), registered once the
    /// provider is built, after serving started.
    provider_registry: Mutex<Registry>,
    /// Metrics under other components' names (client-go's `rest_client_requests_total`).
    client_registry: Mutex<Registry>,
    /// `--emit-per-nodegroup-metrics`.
    per_group: Option<PerGroupMetrics>,
    /// Events dropped because the event queue was full (`record_events_dropped`).
    events_dropped: Counter,
    events_dropped_seen: Mutex<u64>,
}

/// Upstream's per-node-group gauges, registered only with `--emit-per-nodegroup-metrics`.
#[derive(Debug, Default)]
struct PerGroupMetrics {
    min_count: Family<OneLabel, Gauge>,
    max_count: Family<OneLabel, Gauge>,
    target_count: Family<OneLabel, Gauge>,
    healthiness: Family<OneLabel, Gauge>,
    backoff_status: Family<TwoLabels, Gauge>,
    /// Groups seen, so a group that goes away is set to 0 rather than left behind.
    seen: Mutex<BTreeSet<String>>,
}

impl PerGroupMetrics {
    fn register(&self, r: &mut Registry) {
        r.register("node_group_min_count", "Minimum number of nodes in the node group", self.min_count.clone());
        r.register("node_group_max_count", "Maximum number of nodes in the node group", self.max_count.clone());
        r.register(
            "node_group_target_count",
            "Target number of nodes in the node group by CA",
            self.target_count.clone(),
        );
        r.register(
            "node_group_healthiness",
            "Whether or not node group is healthy enough for autoscaling. 1 if it is, 0 otherwise",
            self.healthiness.clone(),
        );
        r.register(
            "node_group_backoff_status",
            "Whether or not node group is backed off from autoscaling. 1 if it is, 0 otherwise",
            self.backoff_status.clone(),
        );
    }

    fn record(&self, groups: &[crate::core::plan::NodeGroupSummary], state: &ClusterState) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        for gone in seen.iter().filter(|id| !groups.iter().any(|g| &g.id == *id)) {
            let group = one("node_group", gone);
            self.target_count.get_or_create(&group).set(0);
            self.healthiness.get_or_create(&group).set(0);
        }
        seen.clear();
        for g in groups {
            let group = one("node_group", &g.id);
            self.min_count.get_or_create(&group).set(g.min_size as i64);
            self.max_count.get_or_create(&group).set(g.max_size as i64);
            self.target_count.get_or_create(&group).set(g.target_size as i64);
            self.healthiness.get_or_create(&group).set(i64::from(g.healthy));
            let backoff = state.group(&g.id).and_then(|s| s.backoff.as_ref());
            let reason = backoff.map_or_else(String::new, |b| b.error_code.clone());
            self.backoff_status
                .get_or_create(&[("node_group", g.id.clone()), ("reason", reason)])
                .set(i64::from(backoff.is_some()));
            seen.insert(g.id.clone());
        }
    }
}

/// Upstream's `function_duration_seconds` buckets: 150 exponential buckets from 0.1 s to
/// 1800 s (factor 18000^(1/149) ≈ 1.068).
fn function_duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets_range(0.1, 1800.0, 150))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// With upstream's per-node-group gauges (`--emit-per-nodegroup-metrics`).
    pub fn with_per_node_group_metrics() -> Metrics {
        let mut m = Metrics::new();
        let per_group = PerGroupMetrics::default();
        per_group.register(&mut m.registry);
        m.per_group = Some(per_group);
        m
    }

    /// The event recorder's drop count so far (`record_events_dropped` takes the running total).
    pub fn record_events_dropped(&self, total: u64) {
        let mut seen = self.events_dropped_seen.lock().unwrap_or_else(|e| e.into_inner());
        if total > *seen {
            self.events_dropped.inc_by(total - *seen);
            *seen = total;
        }
    }
}

impl Metrics {
    /// Registers every metric, with upstream's initial values: the error types, the failed
    /// scale-up reasons, the eviction results and the scale-down reasons start at 0.
    pub fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("cluster_autoscaler"),
            cluster_safe_to_autoscale: Gauge::default(),
            nodes_count: Family::default(),
            node_groups_count: Family::default(),
            unschedulable_pods_count: Family::default(),
            max_nodes_count: Gauge::default(),
            cluster_cpu_current_cores: Gauge::default(),
            cpu_limits_cores: Family::default(),
            cluster_memory_current_bytes: Gauge::default(),
            memory_limits_bytes: Family::default(),
            unneeded_nodes_count: Gauge::default(),
            unremovable_nodes_count: Family::default(),
            scale_down_in_cooldown: Gauge::default(),
            last_activity: Family::default(),
            pending_node_deletions: Gauge::default(),
            old_unregistered_nodes_removed_count: Gauge::default(),
            errors: Family::default(),
            scaled_up_nodes: Counter::default(),
            scaled_down_nodes: Family::default(),
            failed_scale_ups: Family::default(),
            failed_node_creations: Family::default(),
            evicted_pods: Family::default(),
            function_duration_seconds: Family::new_with_constructor(function_duration_histogram),
            pod_autoscalers_count: Family::default(),
            pod_autoscaler_rescales: Family::default(),
            max_nodes_total: Mutex::new(0),
            unremovable_reasons_seen: Mutex::new(BTreeSet::new()),
            provider_registry: Mutex::new(Registry::with_prefix("cluster_autoscaler")),
            client_registry: Mutex::new(Registry::default()),
            per_group: None,
            events_dropped: Counter::default(),
            events_dropped_seen: Mutex::new(0),
        };
        let r = &mut m.registry;
        r.register(
            "cluster_safe_to_autoscale",
            "Whether or not cluster is healthy enough for autoscaling. 1 if it is, 0 otherwise",
            m.cluster_safe_to_autoscale.clone(),
        );
        r.register("nodes_count", "Number of nodes in cluster", m.nodes_count.clone());
        r.register(
            "events_dropped",
            "Events not recorded because the event queue was full (not an upstream metric)",
            m.events_dropped.clone(),
        );
        r.register("node_groups_count", "Number of node groups managed by CA", m.node_groups_count.clone());
        r.register(
            "unschedulable_pods_count",
            "Number of unschedulable pods in the cluster",
            m.unschedulable_pods_count.clone(),
        );
        r.register("max_nodes_count", "Maximum number of nodes in all node groups", m.max_nodes_count.clone());
        r.register(
            "cluster_cpu_current_cores",
            "Current number of cores in the cluster, minus deleting nodes",
            m.cluster_cpu_current_cores.clone(),
        );
        r.register(
            "cpu_limits_cores",
            "Minimum and maximum number of cores in the cluster",
            m.cpu_limits_cores.clone(),
        );
        r.register(
            "cluster_memory_current_bytes",
            "Current number of bytes of memory in the cluster, minus deleting nodes",
            m.cluster_memory_current_bytes.clone(),
        );
        r.register(
            "memory_limits_bytes",
            "Minimum and maximum number of bytes of memory in cluster",
            m.memory_limits_bytes.clone(),
        );
        r.register(
            "unneeded_nodes_count",
            "Number of nodes currently considered unneeded by CA",
            m.unneeded_nodes_count.clone(),
        );
        r.register(
            "unremovable_nodes_count",
            "Number of nodes currently considered unremovable by CA",
            m.unremovable_nodes_count.clone(),
        );
        r.register(
            "scale_down_in_cooldown",
            "Whether or not the scale down is in cooldown. 1 if its, 0 otherwise",
            m.scale_down_in_cooldown.clone(),
        );
        r.register("last_activity", "Last time certain part of CA logic executed", m.last_activity.clone());
        r.register(
            "pending_node_deletions",
            "Number of nodes that haven't been removed or aborted after finished scale-down phase",
            m.pending_node_deletions.clone(),
        );
        r.register(
            "old_unregistered_nodes_removed_count",
            "Number of unregistered nodes removed by CA",
            m.old_unregistered_nodes_removed_count.clone(),
        );
        // Counters are registered without `_total`: the encoder appends it to the samples.
        r.register("errors", "The number of CA loops failed due to an error", m.errors.clone());
        r.register("scaled_up_nodes", "Number of nodes added by CA", m.scaled_up_nodes.clone());
        r.register("scaled_down_nodes", "Number of nodes removed by CA", m.scaled_down_nodes.clone());
        r.register("failed_scale_ups", "Number of times scale-up operation has failed", m.failed_scale_ups.clone());
        r.register("failed_node_creations", "Number of nodes that CA failed to add", m.failed_node_creations.clone());
        r.register("evicted_pods", "Number of pods evicted by CA", m.evicted_pods.clone());
        r.register(
            "function_duration_seconds",
            "Time taken by various parts of CA main loop",
            m.function_duration_seconds.clone(),
        );
        r.register(
            "pod_autoscalers_count",
            "Number of pod autoscalers (HPA, WPA) reconciled by the embedded pod autoscaler in its last sync",
            m.pod_autoscalers_count.clone(),
        );
        r.register(
            "pod_autoscaler_rescales",
            "Number of scale changes the embedded pod autoscaler applied to its targets",
            m.pod_autoscaler_rescales.clone(),
        );
        for error_type in ERROR_TYPES {
            let _ = m.errors.get_or_create(&one("type", error_type));
        }
        for reason in [CLOUD_PROVIDER_ERROR, "apiCallError", "timeout"] {
            let _ = m.failed_scale_ups.get_or_create(&one("reason", reason));
        }
        // Upstream pre-sets its failed-scale-up reasons here too (an oversight); the real
        // scale-down reasons are more useful at 0.
        for reason in ["empty", "underutilized", "unready"] {
            let _ = m.scaled_down_nodes.get_or_create(&one("reason", reason));
        }
        for result in ["succeeded", "failed"] {
            let _ = m.evicted_pods.get_or_create(&one("eviction_result", result));
        }
        m
    }

    /// The registry, for encoding.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Adds the provider's own metrics (e.g. AWS's `aws_request_duration_seconds`).
    pub fn register_provider(&self, provider: &dyn CloudProvider) {
        provider.register_metrics(&mut self.provider_registry.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Adds client-go's `rest_client_requests_total` of the Kubernetes clients, as upstream's
    /// `/metrics` has it: failed API calls (5xx, 429) show there even when the loop goes on.
    pub fn register_kube_client(&self, requests: &RestClientRequests) {
        requests.register(&mut self.client_registry.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Every metric, ours, the provider's, then the Kubernetes clients', in the OpenMetrics
    /// text format.
    pub fn encode(&self, out: &mut String) -> std::fmt::Result {
        prometheus_client::encoding::text::encode_registry(out, &self.registry)?;
        let provider = self.provider_registry.lock().unwrap_or_else(PoisonError::into_inner);
        prometheus_client::encoding::text::encode_registry(out, &provider)?;
        let client = self.client_registry.lock().unwrap_or_else(PoisonError::into_inner);
        prometheus_client::encoding::text::encode_registry(out, &client)?;
        prometheus_client::encoding::text::encode_eof(out)
    }

    /// The static limits from the options: `cpu_limits_cores`, `memory_limits_bytes`, and the
    /// `--max-nodes-total` cap of `max_nodes_count`.
    pub fn set_limits(&self, options: &AutoscalingOptions) {
        self.cpu_limits_cores.get_or_create(&one("direction", "minimum")).set(options.cores_total.0);
        self.cpu_limits_cores.get_or_create(&one("direction", "maximum")).set(options.cores_total.1);
        self.memory_limits_bytes.get_or_create(&one("direction", "minimum")).set(options.memory_total.0);
        self.memory_limits_bytes.get_or_create(&one("direction", "maximum")).set(options.memory_total.1);
        *self.max_nodes_total.lock().unwrap_or_else(|e| e.into_inner()) = options.max_nodes_total;
    }

    /// `cluster_cpu_current_cores` and `cluster_memory_current_bytes` (see [`cluster_resources`]).
    pub fn set_cluster_resources(&self, cores: i64, memory_bytes: i64) {
        self.cluster_cpu_current_cores.set(cores);
        self.cluster_memory_current_bytes.set(memory_bytes);
    }

    /// `last_activity{activity}`: when a part of the loop last started, in Unix seconds.
    pub fn set_last_activity(&self, activity: Function, at: Timestamp) {
        self.last_activity.get_or_create(&one("activity", activity.as_str())).set(at.as_second());
    }

    /// One observation of `function_duration_seconds{function}`.
    pub fn observe_duration(&self, function: Function, duration: Duration) {
        self.function_duration_seconds
            .get_or_create(&one("function", function.as_str()))
            .observe(duration.as_secs_f64());
    }

    /// `errors_total{type}` + 1.
    pub fn record_error(&self, error_type: &str) {
        self.errors.get_or_create(&one("type", error_type)).inc();
    }

    /// A loop iteration that returned an error: counted in `errors_total` unless transient (as
    /// upstream), and its duration observed as `main`.
    pub fn record_loop_error(&self, error_type: &str, duration: Duration) {
        if error_type != TRANSIENT_ERROR {
            self.record_error(error_type);
        }
        self.observe_duration(Function::Main, duration);
    }

    /// A loop iteration that returned a report: the cluster-state gauges from `state`, the
    /// decision gauges from the report's plan (when the loop got that far), the counters of
    /// what it did, and its duration as `main` and `mainSuccessful`. `last_activity` for
    /// `autoscaling`, `scaleUp` and `scaleDown` is set to the report's time when the loop
    /// reached that part as upstream's would.
    /// A failed IncreaseSize does not fail the iteration (upstream's `RunOnce` logs it and goes
    /// on to scale-down): it counts in `failed_scale_ups_total`, not in `errors_total`.
    pub fn record_loop(&self, report: &LoopReport, state: &ClusterState, duration: Duration) {
        self.observe_duration(Function::Main, duration);
        self.observe_duration(Function::MainSuccessful, duration);
        // Upstream's steps, as far as the iteration got (one that stopped before deciding has
        // only the first two).
        let t = &report.timings;
        self.observe_duration(Function::CloudProviderRefresh, t.cloud_refresh);
        self.observe_duration(Function::UpdateClusterState, t.update_cluster_state);
        if report.plan.is_some() && report.stopped.is_none() {
            for (function, took) in [
                (Function::FilterOutSchedulable, t.decide.filter_out_schedulable),
                (Function::ScaleUp, t.decide.scale_up + t.scale_up_calls),
                (Function::FindUnneeded, t.decide.find_unneeded),
                (Function::ScaleDownSoftTaintUnneeded, t.soft_taint),
                (Function::ScaleDown, t.scale_down),
            ] {
                self.observe_duration(function, took);
            }
        }
        self.record_cluster_state(state);
        let time = report.time.parse::<Timestamp>().ok();
        if let Some(plan) = report.plan.as_ref().filter(|_| report.stopped.is_none()) {
            if let Some(time) = time {
                self.set_last_activity(Function::Autoscaling, time);
            }
            self.unschedulable_pods_count
                .get_or_create(&one("type", "unschedulable"))
                .set(plan.cluster.pending_pods as i64);
            self.unschedulable_pods_count
                .get_or_create(&one("type", "scheduler_unprocessed"))
                .set(plan.cluster.scheduler_unprocessed_pods as i64);
            if let Some(per_group) = &self.per_group {
                per_group.record(&plan.cluster.node_groups, state);
            }
            let group_max: usize = plan.cluster.node_groups.iter().map(|g| g.max_size).sum();
            let cap = *self.max_nodes_total.lock().unwrap_or_else(|e| e.into_inner());
            self.max_nodes_count.set(if cap > 0 { cap.min(group_max) } else { group_max } as i64);
            let scale_up_attempted = matches!(
                plan.scale_up.result,
                ScaleUpResult::Successful | ScaleUpResult::Error | ScaleUpResult::NoOptionsAvailable
            );
            if scale_up_attempted && let Some(time) = time {
                self.set_last_activity(Function::ScaleUp, time);
            }
            let scale_down = &plan.scale_down;
            if scale_down.status != ScaleDownStatus::Disabled {
                self.unneeded_nodes_count.set(scale_down.unneeded.len() as i64);
                let in_cooldown = scale_down.status == ScaleDownStatus::InCooldown;
                self.scale_down_in_cooldown.set(i64::from(in_cooldown));
                if !in_cooldown {
                    if let Some(time) = time {
                        self.set_last_activity(Function::ScaleDown, time);
                    }
                    self.set_unremovable(scale_down.unremovable.iter().map(|n| n.reason));
                }
            }
        }
        self.record_actions(report);
    }

    fn record_cluster_state(&self, state: &ClusterState) {
        self.cluster_safe_to_autoscale.set(i64::from(state.healthy));
        let long_unregistered: usize = state.groups.values().map(|g| g.long_unregistered).sum();
        // A group's `unregistered` includes its long-unregistered instances; upstream's two
        // states do not overlap.
        let unregistered: usize =
            state.groups.values().map(|g| g.unregistered.saturating_sub(g.long_unregistered)).sum();
        for (label, count) in [
            ("ready", state.ready),
            ("unready", state.unready),
            ("notStarted", state.not_started),
            ("longUnregistered", long_unregistered),
            ("unregistered", unregistered),
        ] {
            self.nodes_count.get_or_create(&one("state", label)).set(count as i64);
        }
        self.node_groups_count.get_or_create(&one("node_group_type", "autoscaled")).set(state.groups.len() as i64);
        // No node auto-provisioning: every group is one the user configured.
        self.node_groups_count.get_or_create(&one("node_group_type", "autoprovisioned")).set(0);
        let pending: usize = state.groups.values().map(|g| g.deletions_in_progress).sum();
        self.pending_node_deletions.set(pending as i64);
    }

    fn set_unremovable(&self, reasons: impl Iterator<Item = UnremovableReason>) {
        let mut counts: BTreeMap<String, i64> = BTreeMap::new();
        for reason in reasons {
            *counts.entry(reason.code().to_string()).or_default() += 1;
        }
        let mut seen = self.unremovable_reasons_seen.lock().unwrap_or_else(|e| e.into_inner());
        // Upstream leaves a reason's last value in place when no node has it any more; a stale
        // count misleads, so it goes back to 0.
        for reason in seen.iter() {
            if !counts.contains_key(reason) {
                self.unremovable_nodes_count.get_or_create(&one("reason", reason)).set(0);
            }
        }
        for (reason, count) in counts {
            self.unremovable_nodes_count.get_or_create(&one("reason", &reason)).set(count);
            seen.insert(reason);
        }
    }

    fn record_actions(&self, report: &LoopReport) {
        let added: usize = report.scale_ups.iter().map(|s| s.delta).sum();
        self.scaled_up_nodes.inc_by(added as u64);
        for _ in &report.scale_up_failures {
            self.failed_scale_ups.get_or_create(&one("reason", CLOUD_PROVIDER_ERROR)).inc();
        }
        for _ in &report.timed_out {
            self.failed_scale_ups.get_or_create(&one("reason", "timeout")).inc();
        }
        // Upstream backs a group off once per error code and loop, and counts every instance
        // in `failed_node_creations_total`.
        let mut codes: BTreeSet<(&str, &str)> = BTreeSet::new();
        for (group, _instance, code) in &report.failed_instances {
            codes.insert((group, code));
            self.failed_node_creations.get_or_create(&one("reason", code)).inc();
        }
        for (_, code) in codes {
            self.failed_scale_ups.get_or_create(&one("reason", code)).inc();
        }
        for deleted in &report.deleted {
            self.scaled_down_nodes.get_or_create(&one("reason", deleted.reason.as_str())).inc();
        }
        let evicted = report.evicted.len() as u64;
        self.evicted_pods.get_or_create(&one("eviction_result", "succeeded")).inc_by(evicted);
        let old_unregistered =
            report.removed_instances.iter().filter(|(_, _, reason)| *reason == InstanceRemoval::Unregistered).count();
        self.old_unregistered_nodes_removed_count.inc_by(old_unregistered as i64);
    }

    /// The embedded pod autoscalers' sync: how many of each kind it reconciled and the scale
    /// changes it applied.
    pub fn record_pod_autoscaling(&self, report: &PodScalingReport) {
        let mut per_kind: BTreeMap<&str, i64> =
            ["HorizontalPodAutoscaler", "WatermarkPodAutoscaler"].into_iter().map(|k| (k, 0)).collect();
        for a in &report.autoscalers {
            *per_kind.entry(a.kind).or_default() += 1;
        }
        for (kind, count) in per_kind {
            self.pod_autoscalers_count.get_or_create(&one("kind", kind)).set(count);
        }
        for (name, _target, from, to) in &report.rescaled {
            // The kind of the autoscaler that made this change: the one with this name that
            // asked for this size.
            let kind = report
                .autoscalers
                .iter()
                .find(|a| &a.name == name && a.rescale.as_ref().is_some_and(|r| r.to == *to))
                .map_or("unknown", |a| a.kind);
            let direction = if to > from { "up" } else { "down" };
            self.pod_autoscaler_rescales
                .get_or_create(&[("kind", kind.to_string()), ("direction", direction.to_string())])
                .inc();
        }
    }
}
