//! Embedded pod autoscalers: the pure decision logic of kube-controller-manager's
//! HorizontalPodAutoscaler controller (`autoscaling/v2`) and of Datadog's Watermark Pod
//! Autoscaler ([`wpa`]). No I/O: metric values come through [`MetricsSource`], the target's
//! scale and pods are passed in, and what the controller remembers lives in [`HpaState`].
//!
//! [`reconcile_hpa`] follows upstream's `reconcileAutoscaler` step by step:
//! 1. record the current replicas as a recommendation on first sight of the HPA;
//! 2. target at zero replicas (and `minReplicas > 0`) → scaling disabled; outside
//!    `[minReplicas, maxReplicas]` → back to the bound;
//! 3. otherwise one proposal per metric (the largest wins); when every metric fails, or some
//!    fail and the others would scale down, nothing changes;
//! 4. normalization: with `behavior`, stabilization windows and scaling policies over the scale
//!    events of their periods; without it, the legacy downscale window and
//!    `max(2 × current, 4)` scale-up limit;
//! 5. conditions (`AbleToScale`, `ScalingActive`, `ScalingLimited`) and events with upstream's
//!    reasons and messages.
//!
//! Deliberately out of scope (they need the API server): `FailedGetScale` (the caller reads
//! `/scale`), `AmbiguousSelector` (pods selected by several HPAs), status writes, and the
//! `HPAScaleToZero` gate check (a `minReplicas: 0` HPA is taken as the API server accepted it).

mod behavior;
mod conditions;
mod format;
mod metric_specs;
mod metrics;
mod replica_calculator;
pub mod wpa;

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests_behavior;
#[cfg(test)]
mod tests_metrics;
#[cfg(test)]
mod tests_replicas;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerSpec,
    HorizontalPodAutoscalerStatus, MetricSpec, MetricStatus, MetricTarget, ResourceMetricSource,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use simulator::PodInfo;

pub use behavior::{HpaState, ScaleEvent};
pub use conditions::{EventType, HpaEvent};
pub use format::{format_decimal_milli, go_label_selector};
pub use metrics::{
    ContainerUsage, MetricsError, MetricsSource, PodMetric, PodMetricsInfo, PodResourceMetric, PodResourceMetrics,
    ScaleTarget,
};

use behavior::Behavior;
use conditions::set_condition;
use format::quantity_as_f64;
use metric_specs::{MetricContext, MetricFailure, compute_metric};
use replica_calculator::{ReplicaCalculator, Tolerances};

/// The HPA controller's flags (`--horizontal-pod-autoscaler-*`), with upstream's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct HpaConfig {
    /// `--horizontal-pod-autoscaler-tolerance`.
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`.
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`.
    pub initial_readiness_delay: Duration,
    /// `--horizontal-pod-autoscaler-downscale-stabilization`.
    pub downscale_stabilization: Duration,
    /// `--horizontal-pod-autoscaler-sync-period`: how often the loop calls [`reconcile_hpa`].
    pub sync_period: Duration,
}

impl Default for HpaConfig {
    fn default() -> Self {
        HpaConfig {
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(5 * 60),
            initial_readiness_delay: Duration::from_secs(30),
            downscale_stabilization: Duration::from_secs(5 * 60),
            sync_period: Duration::from_secs(15),
        }
    }
}

/// Which branch of the controller decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HpaOutcome {
    /// The target is at zero replicas and `minReplicas > 0`: autoscaling is off.
    ScalingDisabled,
    /// The target was above `maxReplicas`: back to it, metrics not read.
    AboveMaxReplicas,
    /// The target was below `minReplicas`: up to it, metrics not read.
    BelowMinReplicas,
    /// Metrics were read and a replica count computed.
    Computed,
    /// Every metric failed, or some failed and the others proposed a scale-down: no change.
    MetricsFailed,
    /// The HPA has no `spec`.
    InvalidSpec,
    /// The decision rescaled but the scale update failed ([`HpaDecision::rescale_failed`]).
    RescaleFailed,
}

/// The answer of one reconcile.
#[derive(Debug, Clone, PartialEq)]
pub struct HpaDecision {
    pub outcome: HpaOutcome,
    /// `/scale` `spec.replicas`.
    pub current_replicas: i32,
    /// The metric-driven proposal (the largest over metrics) before bounds, stabilization and
    /// rate limits; for the bound and disabled branches, the replicas those branches set.
    pub recommended_replicas: i32,
    /// What the target should be scaled to (equals `current_replicas` when not rescaling).
    pub desired_replicas: i32,
    /// What `status.currentMetrics` holds: one entry per metric, empty for a failed one.
    pub metrics: Vec<MetricStatus>,
    /// `status.conditions` after this reconcile (`AbleToScale`, `ScalingActive`, `ScalingLimited`).
    pub conditions: Vec<HorizontalPodAutoscalerCondition>,
    /// `desired_replicas != current_replicas`: the target's scale should be updated.
    pub rescale: bool,
    /// The reason in the `SuccessfulRescale` event.
    pub rescale_reason: String,
    pub events: Vec<HpaEvent>,
}

impl HpaDecision {
    /// `status` as upstream writes it after this reconcile. `previous` is the HPA's status
    /// before it (kept: `desiredReplicas` when metrics failed, `lastScaleTime` when not scaling).
    pub fn status(
        &self,
        previous: Option<&HorizontalPodAutoscalerStatus>,
        now: Timestamp,
    ) -> HorizontalPodAutoscalerStatus {
        let previous_desired = previous.map_or(0, |s| s.desired_replicas);
        HorizontalPodAutoscalerStatus {
            conditions: (!self.conditions.is_empty()).then(|| self.conditions.clone()),
            current_metrics: (!self.metrics.is_empty()).then(|| self.metrics.clone()),
            current_replicas: Some(self.current_replicas),
            desired_replicas: match self.outcome {
                HpaOutcome::MetricsFailed | HpaOutcome::RescaleFailed => previous_desired,
                _ => self.desired_replicas,
            },
            last_scale_time: if self.rescale {
                Some(Time(now))
            } else {
                previous.and_then(|s| s.last_scale_time.clone())
            },
            // Upstream rebuilds the status without it.
            observed_generation: None,
        }
    }

    /// The scale update failed: upstream records `FailedRescale` and `AbleToScale=False`
    /// (`FailedUpdateScale`) instead of success, and does not remember the scale event.
    pub fn rescale_failed(&mut self, state: &mut HpaState, error: &str, now: Timestamp) {
        if !self.rescale {
            return;
        }
        state.forget_last_scale_event();
        self.events.retain(|e| e.reason != "SuccessfulRescale");
        self.events.push(HpaEvent::warning(
            "FailedRescale",
            format!("New size: {}; reason: {}; error: {error}", self.desired_replicas, self.rescale_reason),
        ));
        set_condition(
            &mut self.conditions,
            "AbleToScale",
            false,
            "FailedUpdateScale",
            format!("the HPA controller was unable to update the target scale: {error}"),
            now,
        );
        self.outcome = HpaOutcome::RescaleFailed;
        self.rescale = false;
        self.desired_replicas = self.current_replicas;
    }
}

/// The default metric of an HPA without metrics (the API server's defaulting): 80 % cpu.
fn default_metrics() -> Vec<MetricSpec> {
    vec![MetricSpec {
        type_: "Resource".into(),
        resource: Some(ResourceMetricSource {
            name: "cpu".into(),
            target: MetricTarget { type_: "Utilization".into(), average_utilization: Some(80), ..Default::default() },
        }),
        ..Default::default()
    }]
}

/// Per-direction tolerances: `behavior.scaleUp.tolerance` / `scaleDown.tolerance` when set,
/// else the controller's `--horizontal-pod-autoscaler-tolerance`.
fn tolerances(hpa: &HorizontalPodAutoscaler, config: &HpaConfig) -> Tolerances {
    let behavior = hpa.spec.as_ref().and_then(|s| s.behavior.as_ref());
    let pick = |rules: Option<&k8s_openapi::api::autoscaling::v2::HPAScalingRules>| {
        rules.and_then(|r| r.tolerance.as_ref()).and_then(quantity_as_f64).unwrap_or(config.tolerance)
    };
    Tolerances {
        scale_down: pick(behavior.and_then(|b| b.scale_down.as_ref())),
        scale_up: pick(behavior.and_then(|b| b.scale_up.as_ref())),
    }
}

struct Reconcile {
    conditions: Vec<HorizontalPodAutoscalerCondition>,
    events: Vec<HpaEvent>,
    now: Timestamp,
}

impl Reconcile {
    fn set(&mut self, type_: &str, status: bool, reason: &str, message: impl Into<String>) {
        set_condition(&mut self.conditions, type_, status, reason, message, self.now);
    }
}

/// One reconcile of one HPA, with kube-controller-manager's answers. `pods` are the pods
/// matching the target's selector in the HPA's namespace; `state` is updated (recommendations,
/// and the scale event when the decision rescales — see [`HpaDecision::rescale_failed`]).
pub fn reconcile_hpa(
    hpa: &HorizontalPodAutoscaler,
    scale: &ScaleTarget,
    pods: &[Arc<PodInfo>],
    metrics: &dyn MetricsSource,
    config: &HpaConfig,
    state: &mut HpaState,
    now: Timestamp,
) -> HpaDecision {
    let mut r = Reconcile {
        conditions: hpa.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default(),
        events: Vec::new(),
        now,
    };
    r.set("AbleToScale", true, "SucceededGetScale", "the HPA controller was able to get the target's current scale");
    let current = scale.spec_replicas;
    state.clear_last_stored();
    state.record_initial_recommendation(current, now);

    let decision = |r: Reconcile, outcome, recommended, desired: i32, metrics, reason: String| HpaDecision {
        outcome,
        current_replicas: current,
        recommended_replicas: recommended,
        desired_replicas: desired,
        metrics,
        conditions: r.conditions,
        rescale: desired != current,
        rescale_reason: reason,
        events: r.events,
    };

    let Some(spec) = &hpa.spec else {
        r.set("ScalingActive", false, "InvalidSpec", "the HPA has no spec");
        return decision(r, HpaOutcome::InvalidSpec, current, current, Vec::new(), String::new());
    };
    let min_replicas = spec.min_replicas.unwrap_or(1);
    let behavior = spec.behavior.as_ref().map(|b| Behavior::with_defaults(b, config.downscale_stabilization));

    let (outcome, recommended, desired, statuses, reason) = if current == 0 && min_replicas != 0 {
        r.set(
            "ScalingActive",
            false,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        );
        return decision(r, HpaOutcome::ScalingDisabled, 0, current, Vec::new(), String::new());
    } else if current > spec.max_replicas {
        let reason = "Current number of replicas above Spec.MaxReplicas".to_string();
        (HpaOutcome::AboveMaxReplicas, spec.max_replicas, spec.max_replicas, Vec::new(), reason)
    } else if current < min_replicas {
        let reason = "Current number of replicas below Spec.MinReplicas".to_string();
        (HpaOutcome::BelowMinReplicas, min_replicas, min_replicas, Vec::new(), reason)
    } else {
        let computed = compute_replicas_for_metrics(&mut r, hpa, spec, scale, pods, metrics, config);
        let (proposed, metric_name, statuses) = match computed {
            Ok(found) => found,
            Err(statuses) => return decision(r, HpaOutcome::MetricsFailed, current, current, statuses, String::new()),
        };
        // Upstream starts from zero: a proposal of zero or less keeps the desired count at zero.
        let (mut desired, rescale_metric) = if proposed > 0 { (proposed, metric_name) } else { (0, String::new()) };
        let reason = if desired > current {
            format!("{rescale_metric} above target")
        } else if desired < current {
            "All metrics below target".to_string()
        } else {
            String::new()
        };
        let normalized = match &behavior {
            Some(behavior) => {
                state.normalize_with_behavior(behavior, current, desired, min_replicas, spec.max_replicas, now)
            }
            None => state.normalize_legacy(
                current,
                desired,
                min_replicas,
                spec.max_replicas,
                config.downscale_stabilization,
                now,
            ),
        };
        r.set("AbleToScale", true, normalized.able_reason, normalized.able_message);
        r.set("ScalingLimited", normalized.limited, normalized.limited_reason, normalized.limited_message);
        desired = normalized.desired;
        (HpaOutcome::Computed, proposed, desired, statuses, reason)
    };

    if desired != current {
        r.set(
            "AbleToScale",
            true,
            "SucceededRescale",
            format!("the HPA controller was able to update the target scale to {desired}"),
        );
        r.events.push(HpaEvent::normal("SuccessfulRescale", format!("New size: {desired}; reason: {reason}")));
        if let Some(behavior) = &behavior {
            state.store_scale_event(behavior, current, desired, now);
        }
        decision(r, outcome, recommended, desired, statuses, reason)
    } else {
        decision(r, outcome, recommended, current, statuses, reason)
    }
}

/// Upstream's `computeReplicasForMetrics`: the largest proposal over the metrics, its name and
/// the metric statuses; `Err(statuses)` when the controller must not act on the metrics.
fn compute_replicas_for_metrics(
    r: &mut Reconcile,
    hpa: &HorizontalPodAutoscaler,
    spec: &HorizontalPodAutoscalerSpec,
    scale: &ScaleTarget,
    pods: &[Arc<PodInfo>],
    source: &dyn MetricsSource,
    config: &HpaConfig,
) -> Result<(i32, String, Vec<MetricStatus>), Vec<MetricStatus>> {
    let Some(selector) = &scale.selector else {
        r.events.push(HpaEvent::warning("SelectorRequired", "selector is required"));
        r.set("ScalingActive", false, "InvalidSelector", "the HPA target's scale is missing a selector");
        r.events.push(HpaEvent::warning("FailedComputeMetricsReplicas", "selector is required"));
        return Err(Vec::new());
    };
    let defaults;
    let specs: &[MetricSpec] = match spec.metrics.as_deref() {
        Some(specs) if !specs.is_empty() => specs,
        _ => {
            defaults = default_metrics();
            &defaults
        }
    };
    let ctx = MetricContext {
        namespace: hpa.metadata.namespace.as_deref().unwrap_or(""),
        spec_replicas: scale.spec_replicas,
        status_replicas: scale.status_replicas,
        selector,
        source,
        calculator: ReplicaCalculator {
            pods,
            cpu_initialization_period: config.cpu_initialization_period,
            initial_readiness_delay: config.initial_readiness_delay,
            tolerances: tolerances(hpa, config),
            now: r.now,
        },
    };

    let mut statuses = vec![MetricStatus::default(); specs.len()];
    let mut replicas = 0;
    let mut metric_name = String::new();
    let mut invalid = 0usize;
    let mut first_failure: Option<MetricFailure> = None;
    for (i, metric_spec) in specs.iter().enumerate() {
        match compute_metric(&ctx, metric_spec) {
            Ok(proposal) => {
                statuses[i] = proposal.status;
                if replicas == 0 || proposal.replicas > replicas {
                    replicas = proposal.replicas;
                    metric_name = proposal.name;
                }
            }
            Err(failure) => {
                r.events.push(HpaEvent::warning(failure.reason, failure.cause.clone()));
                invalid += 1;
                first_failure.get_or_insert(failure);
            }
        }
    }

    if let Some(failure) = &first_failure
        && (invalid >= specs.len() || replicas < scale.spec_replicas)
    {
        r.set(
            "ScalingActive",
            false,
            failure.reason,
            format!("the HPA was unable to compute the replica count: {}", failure.cause),
        );
        r.events.push(HpaEvent::warning(
            "FailedComputeMetricsReplicas",
            format!("invalid metrics ({invalid} invalid out of {}), first error is: {}", specs.len(), failure.error),
        ));
        return Err(statuses);
    }
    r.set(
        "ScalingActive",
        true,
        "ValidMetricFound",
        format!("the HPA was able to successfully calculate a replica count from {metric_name}"),
    );
    Ok((replicas, metric_name, statuses))
}
