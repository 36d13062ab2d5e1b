//! The control loop: upstream's `RunOnce`, acting on the plan `core::decide` returns, with the
//! state it keeps between iterations (`registry`, `memory`, the `actuator`'s deletions).
//!
//! One iteration: refresh the cloud → read the cluster → update the registry (scale-up
//! timeouts, backoff, unregistered and failed instances, wrong sizes) → repair what it found →
//! stop if the cluster is unhealthy → decide the scale-up → call `IncreaseSize` (`scale_up_calls`)
//! → plan the scale-down → update soft taints → start deletions → advance deletions in flight →
//! write status and events.

pub mod actuator;
pub mod backoff;
pub mod registry;
mod scale_up_calls;
pub mod schedule;
pub mod soft_taint;
pub mod status;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cloudprovider::{CloudProvider, CloudProviderError, NodeGroup};
use expander::Expander;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use simulator::well_known::{DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT};

use self::actuator::{ActuationReport, Actuator};
pub use self::actuator::{DeletedNode, RemovalReason};
use self::registry::InstanceRemoval;
use self::registry::{InstanceToRemove, Registry};
use self::scale_up_calls::call_scale_up;
use self::soft_taint::update_soft_taints;
use self::status::{StatusWriter, go_time};
use crate::config::AutoscalingOptions;
use crate::core::decide::DecideTimings;
use crate::core::decide::decide_scale_up;
use crate::core::laps::Laps;
use crate::core::plan::{GroupIncrease, Plan, ScaleDownStatus};
use crate::core::{CloudState, ClusterView, DecisionInput, LoopMemory};
use crate::hpa::MetricsSource;
use crate::podscaling::{AutoscalerReport, PodAutoscalerMode, PodScaling, ScaleTargets, TargetState, anticipated_pods};
use crate::ports::{
    Clock, ClusterActions, ClusterReader, Event, EventReason, EventType, ObjectRef, PortError, ScaleTarget,
};

/// Annotation upstream puts on fake nodes it passes to `DeleteNodes` for cloud instances.
pub const FAKE_NODE_REASON: &str = "k8s.io/cluster-autoscaler/fake-node-reason";

#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error("cloud provider: {0}")]
    Cloud(#[from] CloudProviderError),
    #[error("cluster: {0}")]
    Port(#[from] PortError),
}

impl LoopError {
    /// Upstream's `AutoscalerErrorType`, for `errors_total{type}`.
    pub fn error_type(&self) -> &'static str {
        match self {
            LoopError::Cloud(e) => e.error_type(),
            LoopError::Port(e) => e.error_type(),
        }
    }
}

/// Why an iteration ended before deciding, as upstream's loop returns early.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum StopReason {
    /// It corrected node group target sizes that disagreed with the cloud (upstream's
    /// `fixNodeGroupSize`): the next loop decides on the corrected sizes.
    #[serde(rename = "fixed node group sizes")]
    FixedNodeGroupSizes,
    /// Too many nodes are unready (`--max-total-unready-percentage`, `--ok-total-unready-count`).
    #[serde(rename = "cluster is unhealthy")]
    ClusterUnhealthy,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::FixedNodeGroupSizes => "fixed node group sizes",
            StopReason::ClusterUnhealthy => "cluster is unhealthy",
        })
    }
}

/// What one iteration did, for the simulator's timeline, metrics and tests.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopReport {
    pub time: String,
    /// Why the iteration stopped before deciding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StopReason>,
    #[serde(skip)]
    pub plan: Option<Plan>,
    pub scale_ups: Vec<GroupIncrease>,
    pub scale_up_failures: Vec<(String, String)>,
    pub timed_out: Vec<(String, usize)>,
    /// (node group, instance, the cloud's error code).
    pub failed_instances: Vec<(String, String, String)>,
    /// (node group, instance, why).
    pub removed_instances: Vec<(String, String, InstanceRemoval)>,
    pub fixed_sizes: Vec<(String, i64)>,
    pub deletions_started: Vec<String>,
    pub deleted: Vec<DeletedNode>,
    pub deletion_failures: Vec<(String, String)>,
    pub evicted: Vec<String>,
    pub soft_tainted: Vec<String>,
    pub soft_untainted: Vec<String>,
    #[serde(skip)]
    pub events: Vec<Event>,
    /// The cluster state this iteration decided on (for the metrics).
    #[serde(skip)]
    pub cluster_state: Option<crate::core::ClusterState>,
    /// When (the loop's clock) this iteration's `IncreaseSize` calls had returned: the end of
    /// "pending → node group call", which the rest of the iteration (soft taints, deletions,
    /// the status ConfigMap) does not delay.
    #[serde(skip)]
    pub scale_ups_called_at: Option<Timestamp>,
    /// How long its steps took.
    #[serde(skip)]
    pub timings: IterationTimings,
}

/// How long the steps of an iteration took, on the process's monotonic clock (so a virtual
/// clock in `simulate` does not make them zero): the controller logs them per iteration and
/// records them as upstream's `function_duration_seconds`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IterationTimings {
    /// `cloudProviderRefresh`.
    pub cloud_refresh: Duration,
    /// `updateClusterState`: the cluster view, the cloud's state and the registry's update.
    pub update_cluster_state: Duration,
    /// The decision's parts (`filterOutSchedulable`, `scaleUp`'s simulation, `findUnneeded`).
    pub decide: DecideTimings,
    /// The `IncreaseSize` calls.
    pub scale_up_calls: Duration,
    /// `scaleDownSoftTaintUnneeded`.
    pub soft_taint: Duration,
    /// `scaleDown`: deletions started and those in flight followed.
    pub scale_down: Duration,
    /// The status ConfigMap and the events.
    pub status: Duration,
}

impl LoopReport {
    /// Upstream starts the next loop at once after one that scaled up or started a deletion.
    pub fn productive(&self) -> bool {
        !self.scale_ups.is_empty() || !self.deletions_started.is_empty()
    }
}

/// Everything the loop is built from.
pub struct Parts {
    pub options: AutoscalingOptions,
    pub provider: Arc<dyn CloudProvider>,
    pub reader: Arc<dyn ClusterReader>,
    pub actions: Arc<dyn ClusterActions>,
    pub clock: Arc<dyn Clock>,
    pub expander: Expander,
    /// Where the pod autoscalers read metrics; without one they do not run.
    pub metrics: Option<Arc<dyn MetricsSource + Send + Sync>>,
}

/// What one sync of the pod autoscalers did.
#[derive(Clone, Debug, Default)]
pub struct PodScalingReport {
    pub autoscalers: Vec<AutoscalerReport>,
    /// (autoscaler, target, from, to) for every scale change applied.
    pub rescaled: Vec<(String, String, i32, i32)>,
    /// Pods anticipated for the node autoscaler's next decision.
    pub anticipated: usize,
    pub events: Vec<Event>,
}

pub struct Autoscaler {
    options: AutoscalingOptions,
    provider: Arc<dyn CloudProvider>,
    reader: Arc<dyn ClusterReader>,
    actions: Arc<dyn ClusterActions>,
    clock: Arc<dyn Clock>,
    expander: Expander,
    memory: LoopMemory,
    registry: Registry,
    actuator: Actuator,
    status: StatusWriter,
    first_loop: bool,
    metrics: Option<Arc<dyn MetricsSource + Send + Sync>>,
    pod_scaling: PodScaling,
    next_pod_sync: Option<Timestamp>,
    /// Pods anticipated by the last pod autoscaler sync, for the next decision.
    anticipated: Vec<Arc<simulator::PodInfo>>,
}

fn status_ref(options: &AutoscalingOptions) -> ObjectRef {
    ObjectRef::config_map(&options.namespace, &options.status_config_map_name)
}

/// A Node standing for a cloud instance without one, for `DeleteNodes` (upstream's fake nodes).
fn fake_node(instance_id: &str, reason: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(instance_id.to_string()),
            annotations: Some([(FAKE_NODE_REASON.to_string(), reason.to_string())].into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::NodeSpec {
            provider_id: Some(instance_id.to_string()),
            ..Default::default()
        }),
        status: None,
    }
}

/// `view` without the pod autoscalers whose mode is `off` in `options`.
pub fn pod_autoscaler_view(options: &AutoscalingOptions, mut view: ClusterView) -> ClusterView {
    if options.hpa_mode == PodAutoscalerMode::Off {
        view.hpas.clear();
    }
    if options.wpa_mode == PodAutoscalerMode::Off {
        view.wpas.clear();
    }
    view
}

impl Autoscaler {
    pub fn new(parts: Parts) -> Self {
        Autoscaler {
            registry: Registry::new(&parts.options),
            pod_scaling: PodScaling::new(parts.options.hpa.clone()),
            options: parts.options,
            provider: parts.provider,
            reader: parts.reader,
            actions: parts.actions,
            clock: parts.clock,
            expander: parts.expander,
            memory: LoopMemory::default(),
            actuator: Actuator::default(),
            status: StatusWriter::default(),
            first_loop: true,
            metrics: parts.metrics,
            next_pod_sync: None,
            anticipated: Vec::new(),
        }
    }

    /// When the pod autoscalers are next due (`None` without a metrics source).
    pub fn next_pod_autoscaler_sync(&self) -> Option<Timestamp> {
        self.metrics.as_ref().map(|_| self.next_pod_sync.unwrap_or(Timestamp::MIN))
    }

    /// Reconciles every HPA and WPA (kube-controller-manager's and the WPA controller's work):
    /// applies their scale changes through `/scale`, writes HPA status, records their events,
    /// and — with `--hpa-aware-scale-up` — anticipates the pods a scale-up will create for the
    /// node autoscaler's next decision.
    pub async fn sync_pod_autoscalers(&mut self) -> Result<PodScalingReport, LoopError> {
        let now = self.clock.now();
        let mut report = PodScalingReport::default();
        let Some(metrics) = self.metrics.clone() else { return Ok(report) };
        self.next_pod_sync =
            Some(now + k8s_openapi::jiff::SignedDuration::try_from(self.options.hpa.sync_period).unwrap_or_default());
        let view = pod_autoscaler_view(&self.options, self.reader.pod_autoscaler_view().await?);
        self.pod_scaling.retain(&view);
        // Targets the view does not describe are read through their /scale subresource.
        let mut extra: BTreeMap<(String, String, String), TargetState> = BTreeMap::new();
        let wanted = view
            .hpas
            .iter()
            .filter_map(|h| {
                let spec = h.spec.as_ref()?;
                Some((
                    h.metadata.namespace.clone().unwrap_or_default(),
                    spec.scale_target_ref.kind.clone(),
                    spec.scale_target_ref.name.clone(),
                    spec.scale_target_ref.api_version.clone().unwrap_or_default(),
                ))
            })
            .chain(view.wpas.iter().map(|w| {
                (
                    w.metadata.namespace.clone().unwrap_or_default(),
                    w.spec.scale_target_ref.kind.clone(),
                    w.spec.scale_target_ref.name.clone(),
                    w.spec.scale_target_ref.api_version.clone(),
                )
            }));
        let targets = ScaleTargets::of(&view);
        for (namespace, kind, name, api_version) in wanted.collect::<Vec<_>>() {
            let target =
                ScaleTarget { api_version, kind: kind.clone(), namespace: namespace.clone(), name: name.clone() };
            if targets.state(&target).is_some() {
                continue;
            }
            if let Ok(scale) = self.actions.get_scale(&target).await {
                extra.insert(
                    (namespace, kind, name),
                    TargetState {
                        target,
                        spec_replicas: scale.spec_replicas,
                        status_replicas: scale.status_replicas,
                        selector: simulator::labels::Selector::parse(&scale.selector).ok(),
                        template: None,
                    },
                );
            }
        }
        let resolve = |t: &ScaleTarget| {
            targets.state(t).or_else(|| extra.get(&(t.namespace.clone(), t.kind.clone(), t.name.clone())).cloned())
        };
        // Nothing changed the cluster since the view: the reader's index answers for it.
        let reader = self.reader.clone();
        let index = |namespace: &str, selector: &simulator::labels::Selector| reader.selected_pods(namespace, selector);
        let autoscalers = self.pod_scaling.reconcile(&view, &resolve, &index, metrics.as_ref(), now);
        for mut a in autoscalers {
            let (namespace, name) =
                a.name.split_once('/').map(|(n, m)| (n.to_string(), m.to_string())).unwrap_or_default();
            let mode = if a.kind == "HorizontalPodAutoscaler" { self.options.hpa_mode } else { self.options.wpa_mode };
            if !mode.acts() {
                // Recommendations only: another controller (kube-controller-manager) acts on
                // them. The scale-up it will make is still anticipated for the node autoscaler.
                if let Some(rescale) = a.rescale.as_ref().filter(|r| r.to > a.current_replicas)
                    && self.options.hpa_aware_scale_up
                {
                    let pods = anticipated_pods(rescale, now);
                    report.anticipated += pods.len();
                    self.anticipated.extend(pods);
                }
                report.autoscalers.push(a);
                continue;
            }
            if let Some(rescale) = a.rescale.clone() {
                match self.actions.set_scale(&rescale.target.target, rescale.to).await {
                    Ok(()) => {
                        report.rescaled.push((a.name.clone(), a.target.clone(), a.current_replicas, rescale.to));
                        if self.options.hpa_aware_scale_up && rescale.to > a.current_replicas {
                            let pods = anticipated_pods(&rescale, now);
                            report.anticipated += pods.len();
                            self.anticipated.extend(pods);
                        }
                    }
                    Err(e) => self.pod_scaling.rescale_failed(&mut a, &e.to_string(), now),
                }
            }
            if let Some(status) = a.hpa_status.clone() {
                let _ = self.actions.update_hpa_status(&namespace, &name, status).await;
            }
            if let Some(status) = a.wpa_status.clone() {
                let _ = self.actions.update_wpa_status(&namespace, &name, status).await;
            }
            let object = ObjectRef {
                api_version: if a.kind == "HorizontalPodAutoscaler" {
                    "autoscaling/v2".into()
                } else {
                    "datadoghq.com/v1alpha1".into()
                },
                kind: a.kind.into(),
                namespace: Some(namespace.clone()),
                name: name.clone(),
            };
            for e in &a.events {
                let event = Event {
                    object: object.clone(),
                    event_type: e.event_type,
                    reason: EventReason::Passed(e.reason),
                    message: e.message.clone(),
                };
                let _ = self.actions.record_event(event.clone()).await;
                report.events.push(event);
            }
            report.autoscalers.push(a);
        }
        self.pod_scaling.rescales_done();
        Ok(report)
    }

    pub fn options(&self) -> &AutoscalingOptions {
        &self.options
    }

    pub fn memory(&self) -> &LoopMemory {
        &self.memory
    }

    /// One iteration of the loop.
    pub async fn run_once(&mut self) -> Result<LoopReport, LoopError> {
        let now = self.clock.now();
        let mut report = LoopReport { time: now.to_string(), ..Default::default() };
        let mut laps = Laps::start();
        self.provider.refresh().await?;
        report.timings.cloud_refresh = laps.lap();
        let view = self.reader.view().await?;
        self.provider.observe_nodes(&view.nodes);
        if self.first_loop {
            self.clean_stale_taints(&view, &mut report).await;
            self.first_loop = false;
        }
        let registry = &self.registry;
        let cloud = CloudState::gather_for_loop(
            self.provider.as_ref(),
            &view.nodes,
            &self.options,
            now,
            &mut self.memory.instances,
            &mut self.memory.node_facts,
            &|group| registry.scale_up_request(group).is_some(),
        )
        .await?;
        let update = self.registry.update(&view, &cloud, &self.options, now);
        report.timings.update_cluster_state = laps.lap();
        let config_map = status_ref(&self.options);
        for timed_out in &update.timed_out {
            let (group, increase) = (&timed_out.group, &timed_out.increase);
            report.timed_out.push((group.clone(), *increase));
            // As upstream: the time since the request (at least the provision time).
            report.events.push(Event {
                object: config_map.clone(),
                event_type: EventType::Warning,
                reason: EventReason::ScaleUpTimedOut,
                message: format!(
                    "Nodes added to group {group} failed to register within {}",
                    cloudprovider::duration::format_go_duration(timed_out.waited)
                ),
            });
            // Upstream reverts a timed-out scale-up, so the cloud stops trying to provision it.
            if let Some(handle) = cloud.handles.get(group)
                && let Err(e) = handle.decrease_target_size(-i64::try_from(*increase).unwrap_or(i64::MAX)).await
            {
                report.events.push(Event {
                    object: config_map.clone(),
                    event_type: EventType::Warning,
                    reason: EventReason::FailedToRevertScaleUp,
                    message: format!("Failed to decrease target size for group {group} after scale-up timeout: {e}"),
                });
            }
        }
        for (group, instance, error) in &update.failed_instances {
            report.failed_instances.push((group.clone(), instance.clone(), error.code.clone()));
            report.events.push(Event {
                object: config_map.clone(),
                event_type: EventType::Warning,
                reason: EventReason::ScaleUpFailed,
                message: format!("Failed adding a node to group {group}: {} ({})", error.message, error.code),
            });
        }
        self.remove_instances(&update.to_remove, &cloud, &mut report).await;
        let mut fixed = false;
        for (group, delta) in &update.fix_sizes {
            if let Some(handle) = cloud.handles.get(group)
                && handle.decrease_target_size(*delta).await.is_ok()
            {
                report.fixed_sizes.push((group.clone(), *delta));
                fixed = true;
            }
        }
        if fixed {
            report.stopped = Some(StopReason::FixedNodeGroupSizes);
            return self.finish(report, None, update.state, &cloud, now).await;
        }
        if !update.state.healthy {
            self.memory.unneeded_since.clear();
            report.stopped = Some(StopReason::ClusterUnhealthy);
            report.events.push(Event {
                object: config_map.clone(),
                event_type: EventType::Warning,
                reason: EventReason::ClusterUnhealthy,
                message: format!(
                    "Cluster has too many unready nodes: {} unready of {} (tolerated: {} or {}%)",
                    update.state.unready,
                    update.state.ready + update.state.unready,
                    self.options.ok_total_unready_count,
                    self.options.max_total_unready_percentage
                ),
            });
            return self.finish(report, None, update.state, &cloud, now).await;
        }

        self.memory.deleting = self.deleting_nodes();
        let input = DecisionInput {
            view: &view,
            cloud: &cloud,
            state: &update.state,
            options: &self.options,
            memory: &self.memory,
            now,
            anticipated: &self.anticipated,
        };
        // Upstream's order: the scale-up's calls are made before the scale-down is planned, so
        // pending pods wait for no scale-down simulation. The scale-down planning reads the
        // memory as it was before the calls (`scale_up_this_loop` tells it of the scale-up).
        let scale_up_decided = decide_scale_up(&input, &mut self.expander);
        laps.lap();
        let scaled_up = call_scale_up(
            scale_up_decided.scale_up(),
            &cloud,
            &self.options,
            &mut self.registry,
            self.clock.as_ref(),
            now,
            &mut report,
        )
        .await;
        report.timings.scale_up_calls = laps.lap();
        let decision = scale_up_decided.plan_scale_down();
        report.timings.decide = decision.timings;
        // Anticipated pods are looked at once: from the next loop on the real pods exist.
        self.anticipated.clear();
        let plan = decision.plan;
        self.memory.unneeded_since = decision.unneeded_since;
        self.memory.unremovable_until = decision.unremovable_until;
        if scaled_up {
            self.memory.last_scale_up = Some(now);
            for inc in &plan.scale_up.increases {
                self.memory.group_scale_ups.insert(inc.node_group.clone(), now);
            }
        }
        laps.lap();

        let unneeded: BTreeSet<String> =
            plan.scale_down.unneeded.iter().map(|n| n.node.clone()).filter(|n| !self.actuator.is_deleting(n)).collect();
        let (tainted, untainted) = update_soft_taints(
            &view,
            &unneeded,
            self.actions.as_ref(),
            self.options.max_bulk_soft_taint_count,
            self.options.max_bulk_soft_taint_time,
            now,
        )
        .await;
        report.soft_tainted = tainted;
        report.soft_untainted = untainted;
        report.timings.soft_taint = laps.lap();

        if plan.scale_down.status != ScaleDownStatus::InCooldown && report.scale_ups.is_empty() {
            self.start_deletions(&plan, &update.state, now, &mut report).await;
        }
        let groups: BTreeMap<String, Arc<dyn NodeGroup>> =
            cloud.handles.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let progress = self
            .actuator
            .progress(
                &view,
                &self.memory.classified,
                &groups,
                self.actions.as_ref(),
                &mut self.registry,
                &self.options,
                now,
            )
            .await;
        self.absorb(progress, now, &mut report);
        report.timings.scale_down = laps.lap();
        let mut report = self.finish(report, Some(plan), update.state, &cloud, now).await?;
        report.timings.status = laps.lap();
        Ok(report)
    }

    /// Nodes whose deletion is in flight: never candidates again while it lasts.
    fn deleting_nodes(&self) -> std::collections::HashSet<String> {
        self.actuator.names().into_iter().collect()
    }

    /// At start-up: taints a previous run left on nodes it did not finish deleting are removed.
    async fn clean_stale_taints(&mut self, view: &ClusterView, report: &mut LoopReport) {
        for node in &view.nodes {
            let name = node.metadata.name.as_deref().unwrap_or("");
            let taints = node.spec.as_ref().and_then(|s| s.taints.as_ref());
            let has = |key: &str| taints.is_some_and(|t| t.iter().any(|t| t.key == key));
            if has(TO_BE_DELETED_TAINT)
                && self
                    .actions
                    .untaint_node(name, TO_BE_DELETED_TAINT, self.options.cordon_node_before_terminating)
                    .await
                    .is_ok()
            {
                report.events.push(Event {
                    object: ObjectRef::node(name),
                    event_type: EventType::Normal,
                    reason: EventReason::ClusterAutoscalerCleanup,
                    message: "removed the ToBeDeleted taint left by a previous run".into(),
                });
            }
            if self.options.max_bulk_soft_taint_count == 0 && has(DELETION_CANDIDATE_TAINT) {
                let _ = self.actions.untaint_node(name, DELETION_CANDIDATE_TAINT, false).await;
            }
        }
    }

    /// Deletes cloud instances that never registered or failed to be created.
    async fn remove_instances(&mut self, instances: &[InstanceToRemove], cloud: &CloudState, report: &mut LoopReport) {
        let mut by_group: BTreeMap<&str, Vec<&InstanceToRemove>> = BTreeMap::new();
        for i in instances {
            by_group.entry(i.group.as_str()).or_default().push(i);
        }
        let config_map = status_ref(&self.options);
        for (group, list) in by_group {
            let (Some(handle), Some(state)) = (cloud.handles.get(group), cloud.group(group)) else { continue };
            let mut allowed = state.target_size.saturating_sub(state.min_size);
            for i in list {
                // Upstream keeps unregistered nodes at the group's minimum unless forced, and
                // removes failed creations with DeleteNodes, which respects the minimum too,
                // or with ForceDeleteNodes under --force-delete-failed-nodes.
                let force = match i.reason {
                    InstanceRemoval::Unregistered => self.options.force_delete_unregistered_nodes,
                    InstanceRemoval::CreateError => self.options.force_delete_failed_nodes,
                };
                if i.reason == InstanceRemoval::Unregistered && !force {
                    if allowed == 0 {
                        continue;
                    }
                    allowed -= 1;
                }
                let node = fake_node(&i.instance_id, i.reason.as_str());
                let nodes = std::slice::from_ref(&node);
                let result = if force {
                    match handle.force_delete_nodes(nodes).await {
                        Err(CloudProviderError::NotImplemented) => handle.delete_nodes(nodes).await,
                        other => other,
                    }
                } else {
                    handle.delete_nodes(nodes).await
                };
                // Upstream's words for unregistered nodes (`removeOldUnregisteredNodes`, whose
                // fake nodes are named by their instance); upstream records no event for failed
                // creations, so theirs say which removal it was.
                let (event_type, reason, message) = match (&result, i.reason) {
                    (Ok(()), InstanceRemoval::Unregistered) => (
                        EventType::Normal,
                        EventReason::DeleteUnregistered,
                        format!("Removed unregistered node {}", i.instance_id),
                    ),
                    (Ok(()), InstanceRemoval::CreateError) => (
                        EventType::Normal,
                        EventReason::DeleteUnregistered,
                        format!("Removed instance {} ({})", i.instance_id, i.reason),
                    ),
                    (Err(e), InstanceRemoval::Unregistered) => (
                        EventType::Warning,
                        EventReason::DeleteUnregisteredFailed,
                        format!("Failed to remove node {}: {e}", i.instance_id),
                    ),
                    (Err(e), InstanceRemoval::CreateError) => (
                        EventType::Warning,
                        EventReason::DeleteUnregisteredFailed,
                        format!("Failed to remove instance {}: {e}", i.instance_id),
                    ),
                };
                if result.is_ok() {
                    report.removed_instances.push((group.to_string(), i.instance_id.clone(), i.reason));
                }
                report.events.push(Event { object: config_map.clone(), event_type, reason, message });
            }
        }
    }

    async fn start_deletions(
        &mut self,
        plan: &Plan,
        state: &crate::core::ClusterState,
        now: Timestamp,
        report: &mut LoopReport,
    ) {
        let unneeded: BTreeMap<&str, &crate::core::plan::UnneededNode> =
            plan.scale_down.unneeded.iter().map(|n| (n.node.as_str(), n)).collect();
        let mut batch = Vec::new();
        for (names, drain) in [(&plan.scale_down.delete_now.empty, false), (&plan.scale_down.delete_now.drain, true)] {
            for name in names {
                if self.actuator.is_deleting(name) {
                    continue;
                }
                let Some(n) = unneeded.get(name.as_str()) else { continue };
                let reason = if !drain {
                    RemovalReason::Empty
                } else if !state.is_ready(name) {
                    RemovalReason::Unready
                } else {
                    RemovalReason::Underutilized
                };
                batch.push((name.clone(), n.node_group.clone(), drain, reason));
            }
        }
        if batch.is_empty() {
            return;
        }
        let result = self.actuator.start(&batch, self.actions.as_ref(), &mut self.registry, &self.options, now).await;
        match result {
            Ok(r) => {
                self.memory.last_scale_down_delete = Some(now);
                for (_, group, _, _) in &batch {
                    self.memory.group_scale_down_deletes.insert(group.clone(), now);
                }
                report.deletions_started.extend(r.tainted.iter().cloned());
                report.events.extend(r.events);
                let empty: Vec<&str> = batch.iter().filter(|b| !b.2).map(|b| b.0.as_str()).collect();
                let drained: Vec<&str> = batch.iter().filter(|b| b.2).map(|b| b.0.as_str()).collect();
                let config_map = status_ref(&self.options);
                if !empty.is_empty() {
                    report.events.push(Event {
                        object: config_map.clone(),
                        event_type: EventType::Normal,
                        reason: EventReason::ScaleDownEmpty,
                        message: format!("Scale-down: removing empty node(s) {}", empty.join(", ")),
                    });
                }
                if !drained.is_empty() {
                    report.events.push(Event {
                        object: config_map,
                        event_type: EventType::Normal,
                        reason: EventReason::ScaleDown,
                        message: format!("Scale-down: removing node(s) {}, draining their pods", drained.join(", ")),
                    });
                }
            }
            Err(r) => {
                self.memory.last_scale_down_failure = Some(now);
                for (_, group, _, _) in &batch {
                    self.memory.group_scale_down_failures.insert(group.clone(), now);
                }
                report.deletion_failures.extend(r.failed.iter().cloned());
                report.events.extend(r.events);
            }
        }
    }

    fn absorb(&mut self, progress: ActuationReport, now: Timestamp, report: &mut LoopReport) {
        // A deletion that fails after it started (drain, DeleteNodes) delays only its own group,
        // and only with --scale-down-delay-type-local: upstream sets the cluster-wide failure time
        // (--scale-down-delay-after-failure) only when starting a deletion fails (the taint, in
        // `start_deletions`); later failures reach it through the per-group delay processor.
        for group in &progress.failed_groups {
            self.memory.group_scale_down_failures.insert(group.clone(), now);
        }
        report.deleted.extend(progress.deleted.iter().cloned());
        report.deletion_failures.extend(progress.failed);
        report.evicted.extend(progress.evicted);
        report.events.extend(progress.events);
    }

    /// Writes the status ConfigMap and the events, and returns the report.
    async fn finish(
        &mut self,
        mut report: LoopReport,
        plan: Option<Plan>,
        state: crate::core::ClusterState,
        cloud: &CloudState,
        now: Timestamp,
    ) -> Result<LoopReport, LoopError> {
        if self.options.write_status_configmap {
            let deleting: BTreeMap<String, usize> =
                state.groups.iter().map(|(k, g)| (k.clone(), g.deletions_in_progress)).collect();
            let yaml = self.status.render(plan.as_ref(), &state, cloud, &deleting, now);
            // Status and events are best effort: a failed write is retried next loop.
            let _ = self
                .actions
                .write_status(&self.options.namespace, &self.options.status_config_map_name, &yaml, &go_time(now))
                .await;
        }
        for event in &report.events {
            let _ = self.actions.record_event(event.clone()).await;
        }
        report.plan = plan;
        report.cluster_state = Some(state);
        Ok(report)
    }
}
