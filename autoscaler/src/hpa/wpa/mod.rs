//! Datadog's Watermark Pod Autoscaler (`datadoghq.com/v1alpha1`), decided as the WPA
//! controller (DataDog/watermarkpodautoscaler) decides:
//!
//! - no action while every metric is inside `[low − low×tol, high + high×tol]`;
//! - `absolute` (default): replicas = ready × value / watermark; `average`: value / watermark;
//!   `Floor` below the low watermark (at least 1), `Ceil` above the high one;
//! - velocity limits `scaleUpLimitFactor` / `scaleDownLimitFactor` (percent of the current
//!   replicas, at least one replica, rounded conservatively), then `[minReplicas, maxReplicas]`;
//! - forbidden windows after *any* scaling event (`lastScaleTime`); delays above / below the
//!   watermarks, ORed across metrics, measured from the `AboveHighWatermark` /
//!   `BelowLowWatermark` condition transitions;
//! - `minAvailableReplicaPercentage`: no recommendation when too few pods are ready;
//! - `dryRun`: the decision and status are computed (including `lastScaleTime`) but the
//!   target is not scaled.
//!
//! `readinessDelaySeconds` follows the controller's code rather than the README's wording: for
//! External metrics, Pending pods whose readiness changed less than that long ago count as
//! ready; for cpu Resource metrics, pods that became ready within that delay of their start are
//! ignored.
//!
//! The WPA controller keeps its memory in the object's status; [`WpaState`] holds that status
//! between reconciles. Unsupported: `spec.recommender`, the DatadogMonitor lifecycle control
//! annotation, and the controller's Prometheus metrics.

mod calculator;
mod spec;
#[cfg(test)]
mod tests;
mod types;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::MetricIdentifier;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use simulator::PodInfo;
use simulator::labels::Selector;

pub use types::*;

use super::conditions::{HpaEvent, find, set_condition};
use super::format::{go_label_selector, go_string_map, go_time, milli_quantity, selector_string};
use super::metrics::{MetricsSource, ScaleTarget};
use super::replica_calculator::{add, resource_usage};
use calculator::{Calculation, Calculator, group_pods, normalize, ready_pods_count};
use spec::{ResolvedMetric, ResolvedSpec, resolve};

/// What the WPA controller remembers between reconciles: the status it last wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WpaState {
    pub status: WatermarkPodAutoscalerStatus,
}

impl WpaState {
    /// Nothing known: no scale has happened yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Continue from the status found on the object (written by an earlier controller).
    pub fn from_object(wpa: &WatermarkPodAutoscaler) -> Self {
        WpaState { status: wpa.status.clone().unwrap_or_default() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WpaOutcome {
    /// The spec failed the controller's validity check (`FailedSpecCheck`).
    InvalidSpec,
    /// The spec uses a feature the embedded controller does not implement (`spec.recommender`).
    Unsupported,
    /// A metric could not be read or the pods were not ready enough: nothing changes.
    MetricsFailed,
    Computed,
    /// `/scale` `spec.replicas` is zero.
    ScalingDisabled,
    AboveMaxReplicas,
    BelowMinReplicas,
    /// No replica exists: the target goes to one.
    ZeroReplicas,
    /// The decision rescaled but the scale update failed ([`WpaDecision::rescale_failed`]).
    RescaleFailed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WpaDecision {
    pub outcome: WpaOutcome,
    /// `/scale` `status.replicas`.
    pub current_replicas: i32,
    /// The largest proposal over the metrics, before velocity limits and bounds.
    pub proposed_replicas: i32,
    /// The replicas decided (`current_replicas` when not rescaling).
    pub desired_replicas: i32,
    /// The controller decided to scale. In dry-run mode it still decides (and records
    /// `lastScaleTime`) but must not apply it: see [`WpaDecision::applies`].
    pub rescale: bool,
    pub dry_run: bool,
    pub rescale_reason: String,
    /// The object's status after this reconcile (also kept in [`WpaState`]).
    pub status: WatermarkPodAutoscalerStatus,
    pub events: Vec<HpaEvent>,
    /// The status as it was just before the rescale was recorded, for [`Self::rescale_failed`].
    status_before_rescale: Option<WatermarkPodAutoscalerStatus>,
}

impl WpaDecision {
    /// Whether the target's scale should actually be updated.
    pub fn applies(&self) -> bool {
        self.rescale && !self.dry_run
    }

    /// The scale update failed: upstream records `FailedScale`, sets `AbleToScale=False` and
    /// only refreshes `currentReplicas` (no `lastScaleTime`, no event count).
    pub fn rescale_failed(&mut self, state: &mut WpaState, error: &str, now: Timestamp) {
        let Some(before) = self.status_before_rescale.take().filter(|_| self.applies()) else { return };
        let mut c = Conditions { status: before, now };
        self.events.retain(|e| e.reason != "Scaling");
        self.events.push(HpaEvent::warning(
            "FailedScale",
            format!("New size: {}; reason: {}; error: {error}", self.desired_replicas, self.rescale_reason),
        ));
        c.set(
            "AbleToScale",
            false,
            "FailedScale",
            format!("the WPA controller was unable to update the target scale: {error}"),
        );
        c.status.current_replicas = self.current_replicas;
        self.outcome = WpaOutcome::RescaleFailed;
        self.rescale = false;
        self.desired_replicas = self.current_replicas;
        self.status = c.status;
        state.status = self.status.clone();
    }
}

/// The WPA's `setCondition`: HPA semantics, plus `lastConditionType` / `lastConditionState`
/// and the list sorted by transition time, newest first.
struct Conditions {
    status: WatermarkPodAutoscalerStatus,
    now: Timestamp,
}

impl Conditions {
    fn set(&mut self, type_: &str, status: bool, reason: &str, message: impl Into<String>) {
        set_condition(&mut self.status.conditions, type_, status, reason, message, self.now);
        self.status.last_condition_state = if status { "True" } else { "False" }.into();
        self.status.last_condition_type = type_.into();
        self.status.conditions.sort_by(|a, b| {
            let time = |c: &k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerCondition| {
                c.last_transition_time.as_ref().map_or(Timestamp::MIN, |t| t.0)
            };
            time(b).cmp(&time(a))
        });
    }
}

struct Computed {
    replicas: i32,
    metric: String,
    statuses: Vec<WpaMetricStatus>,
    ready: i32,
    above: bool,
    below: bool,
}

/// One reconcile of one WPA. `pods` are the pods matching the target's selector; `state`
/// holds the status between reconciles and is updated.
pub fn reconcile_wpa(
    wpa: &WatermarkPodAutoscaler,
    scale: &ScaleTarget,
    pods: &[Arc<PodInfo>],
    metrics: &dyn MetricsSource,
    state: &mut WpaState,
    now: Timestamp,
) -> WpaDecision {
    let original_metrics = state.status.current_metrics.clone();
    let mut c = Conditions { status: state.status.clone(), now };
    let mut events = Vec::new();
    let current = scale.status_replicas;
    let finish =
        |c: Conditions, state: &mut WpaState, events, outcome, proposed, desired: i32, rescale, reason, dry_run| {
            state.status = c.status.clone();
            WpaDecision {
                outcome,
                current_replicas: current,
                proposed_replicas: proposed,
                desired_replicas: desired,
                rescale,
                dry_run,
                rescale_reason: reason,
                status: c.status,
                events,
                status_before_rescale: None,
            }
        };

    c.set("ScalingActive", false, "FailedProcessWPA", "Error happened while processing the WPA");
    let spec = match resolve(wpa) {
        Ok(spec) => spec,
        Err(error) => {
            events.push(HpaEvent::warning("FailedSpecCheck", error.clone()));
            c.set("AbleToScale", false, "FailedSpecCheck", format!("Invalid WPA specification: {error}"));
            return finish(c, state, events, WpaOutcome::InvalidSpec, current, current, false, String::new(), false);
        }
    };
    if wpa.spec.recommender.is_some() {
        events.push(HpaEvent::warning(
            "FailedProcessWPA",
            "spec.recommender is not supported by the embedded WPA controller",
        ));
        c.set("AbleToScale", false, "FailedProcessWPA", "Error happened while processing the WPA");
        return finish(c, state, events, WpaOutcome::Unsupported, current, current, false, String::new(), spec.dry_run);
    }

    if spec.dry_run {
        c.set("DryRun", true, "DryRun mode enabled", "Scaling changes won't be applied");
    } else {
        c.set("DryRun", false, "DryRun mode disabled", "Scaling changes can be applied");
    }
    c.set("AbleToScale", true, "SucceededGetScale", "the WPA controller was able to get the target's current scale");
    let namespace = wpa.metadata.namespace.as_deref().unwrap_or("");
    let target = &wpa.spec.scale_target_ref;
    let reference = format!("{}/{namespace}/{}", target.kind, target.name);

    let computed = compute_replicas(&mut c, &mut events, &spec, wpa, scale, pods, metrics, now);
    let Computed { replicas: proposed, metric, mut statuses, ready, above, below } = match computed {
        Ok(computed) => computed,
        Err(error) => {
            c.status.current_replicas = current;
            events.push(HpaEvent::warning("FailedComputeMetricsReplicas", error));
            return finish(
                c,
                state,
                events,
                WpaOutcome::MetricsFailed,
                current,
                current,
                false,
                String::new(),
                spec.dry_run,
            );
        }
    };
    let stable = !above && !below;

    let (mut desired, rescale_metric) = if proposed > 0 { (proposed, metric) } else { (0, String::new()) };
    let mut reason = if desired > current {
        format!("{rescale_metric} above target")
    } else if desired < current {
        "All metrics below target".to_string()
    } else {
        String::new()
    };
    let (normalized, limit_reason, limit_message) = normalize(&spec, current, desired, ready);
    c.set("ScalingLimited", normalized != desired, limit_reason, limit_message);
    desired = normalized;
    if stable && desired != current {
        reason = "Metric within watermarks, attempting to scale to converge towards watermark".into();
    }
    let mut rescale = should_scale(&mut c, &spec, current, desired, stable, now);

    let mut outcome = WpaOutcome::Computed;
    if scale.spec_replicas == 0 {
        desired = 0;
        rescale = false;
        outcome = WpaOutcome::ScalingDisabled;
        c.set(
            "ScalingActive",
            false,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        );
    } else if current > spec.max_replicas {
        (outcome, reason, desired, rescale) = (
            WpaOutcome::AboveMaxReplicas,
            "Current number of replicas above Spec.MaxReplicas".into(),
            spec.max_replicas,
            true,
        );
        statuses = original_metrics.clone();
    } else if current < spec.min_replicas {
        (outcome, reason, desired, rescale) = (
            WpaOutcome::BelowMinReplicas,
            "Current number of replicas below Spec.MinReplicas".into(),
            spec.min_replicas,
            true,
        );
        statuses = original_metrics.clone();
    } else if current == 0 {
        (outcome, reason, desired, rescale) =
            (WpaOutcome::ZeroReplicas, "Current number of replicas must be greater than 0".into(), 1, true);
        statuses = original_metrics;
    }

    let mut status_before_rescale = None;
    if rescale {
        c.set(
            "AbleToScale",
            true,
            "ReadyForScale",
            "the last scaling time was sufficiently old as to warrant a new scale",
        );
        if !spec.dry_run {
            status_before_rescale = Some(c.status.clone());
            c.set(
                "AbleToScale",
                true,
                "SuccessfulScale",
                format!("the WPA controller was able to update the target scale to {desired}"),
            );
            events.push(HpaEvent::normal("Scaling", format!("New size: {desired}; reason: {reason}")));
        }
        c.status.last_scale_time = Some(Time(now));
        c.status.scaling_events_count += 1;
    } else {
        events.push(HpaEvent::normal(
            "NotScaling",
            format!(
                "Decided not to scale {reference} to {desired} (last scale time was {} )",
                go_time(c.status.last_scale_time.as_ref().map(|t| t.0))
            ),
        ));
        desired = current;
    }
    c.status.current_replicas = current;
    c.status.desired_replicas = desired;
    c.status.current_metrics = statuses;
    let mut decision = finish(c, state, events, outcome, proposed, desired, rescale, reason, spec.dry_run);
    decision.status_before_rescale = status_before_rescale;
    decision
}

/// `shouldScale`: forbidden windows after the last scale, then the delays out of bounds.
fn should_scale(
    c: &mut Conditions,
    spec: &ResolvedSpec,
    current: i32,
    desired: i32,
    stable: bool,
    now: Timestamp,
) -> bool {
    let Some(last_scale) = c.status.last_scale_time.as_ref().map(|t| t.0) else { return true };
    let window = |seconds: i32| Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    let backoff_down = add(last_scale, window(spec.downscale_forbidden_window_seconds)) > now;
    if backoff_down {
        c.set(
            "AbleToScale",
            false,
            "BackoffDownscale",
            "the time since the previous scale is still within the downscale forbidden window",
        );
    }
    let backoff_up = add(last_scale, window(spec.upscale_forbidden_window_seconds)) > now;
    if backoff_up {
        if backoff_down {
            c.set(
                "AbleToScale",
                false,
                "BackoffBoth",
                "the time since the previous scale is still within both the downscale and upscale forbidden windows",
            );
        } else {
            c.set(
                "AbleToScale",
                false,
                "BackoffUpscale",
                "the time since the previous scale is still within the upscale forbidden window",
            );
        }
    }
    let after_delay = |type_: &str, backoff: bool, delay: i32| -> bool {
        if delay == 0 || stable {
            return !backoff;
        }
        let Some(condition) = find(&c.status.conditions, type_) else { return false };
        let since = condition.last_transition_time.as_ref().map_or(Timestamp::MIN, |t| t.0);
        let elapsed = now.duration_since(since).as_secs_f64() as i32;
        if delay.saturating_sub(elapsed) > 0 || condition.status != "True" {
            return false;
        }
        !backoff
    };
    if desired > current {
        return after_delay("AboveHighWatermark", backoff_up, spec.upscale_delay_seconds);
    }
    if desired < current {
        return after_delay("BelowLowWatermark", backoff_down, spec.downscale_delay_seconds);
    }
    false
}

/// `computeReplicasForMetrics`: the largest proposal over the metrics; any failing metric
/// fails the whole computation.
#[allow(clippy::too_many_arguments)]
fn compute_replicas(
    c: &mut Conditions,
    events: &mut Vec<HpaEvent>,
    spec: &ResolvedSpec,
    wpa: &WatermarkPodAutoscaler,
    scale: &ScaleTarget,
    pods: &[Arc<PodInfo>],
    source: &dyn MetricsSource,
    now: Timestamp,
) -> Result<Computed, String> {
    let mut calculator = Calculator { spec, current: scale.status_replicas, converge_condition: None };
    let mut result = Computed {
        replicas: 0,
        metric: String::new(),
        statuses: vec![WpaMetricStatus::default(); spec.metrics.len()],
        ready: 0,
        above: false,
        below: false,
    };
    for (i, metric) in spec.metrics.iter().enumerate() {
        let (calculation, name) = match (metric.spec.type_.as_str(), &metric.spec.external, &metric.spec.resource) {
            ("External", Some(external), _) => {
                let name = format!(
                    "{}{{{}}}",
                    external.metric_name,
                    go_string_map(external.metric_selector.as_ref().and_then(|s| s.match_labels.as_ref()))
                );
                let calculation =
                    external_replicas(&mut calculator, wpa, scale, pods, source, metric, now).map_err(|error| {
                        events.push(HpaEvent::warning("FailedGetExternalMetric", error.clone()));
                        c.set(
                            "ScalingActive",
                            false,
                            "FailedGetExternalMetric",
                            format!("the WPA was unable to compute the replica count: {error}"),
                        );
                        format!("failed to compute replicas based on external metric {}: {error}", external.metric_name)
                    })?;
                result.statuses[i] = WpaMetricStatus {
                    type_: "External".into(),
                    external: Some(WpaExternalMetricStatus {
                        metric_name: external.metric_name.clone(),
                        metric_selector: external.metric_selector.clone(),
                        current_value: milli_quantity(calculation.utilization),
                    }),
                    resource: None,
                };
                (calculation, name)
            }
            ("Resource", _, Some(resource)) => {
                let name = format!(
                    "{}{{{}}}",
                    resource.name,
                    go_string_map(resource.metric_selector.as_ref().and_then(|s| s.match_labels.as_ref()))
                );
                let calculation = resource_replicas(&mut calculator, wpa, pods, source, metric).map_err(|error| {
                    events.push(HpaEvent::warning("FailedGetResourceMetric", error.clone()));
                    c.set(
                        "ScalingActive",
                        false,
                        "FailedGetResourceMetric",
                        format!("the WPA was unable to compute the replica count: {error}"),
                    );
                    format!("failed to get resource metric {}: {error}", resource.name)
                })?;
                result.statuses[i] = WpaMetricStatus {
                    type_: "Resource".into(),
                    external: None,
                    resource: Some(WpaResourceMetricStatus {
                        name: resource.name.clone(),
                        current_average_value: milli_quantity(calculation.utilization),
                    }),
                };
                (calculation, name)
            }
            // The validity check guarantees the source matching the type.
            _ => continue,
        };
        if let Some((status, reason, message)) = calculator.converge_condition.take() {
            c.set("ConvergeToWatermark", status, reason, message);
        }
        result.above |= calculation.above;
        result.below |= calculation.below;
        if result.replicas == 0 || calculation.replicas > result.replicas {
            result.replicas = calculation.replicas;
            result.metric = name;
            result.ready = calculation.ready_replicas;
        }
    }
    c.set(
        "AboveHighWatermark",
        result.above,
        "Value above High Watermark",
        "Allow upscaling if the value stays over the Watermark",
    );
    // Upstream's reason text says "above" for the low watermark too.
    c.set(
        "BelowLowWatermark",
        result.below,
        "Value above Low Watermark",
        "Allow downscaling if the value stays under the Watermark",
    );
    c.set(
        "ScalingActive",
        true,
        "ValidMetricFound",
        format!("the WPA was able to successfully calculate a replica count from {}", result.metric),
    );
    Ok(result)
}

fn readiness_delay(spec: &ResolvedSpec) -> Duration {
    Duration::from_secs(u64::try_from(spec.readiness_delay_seconds).unwrap_or(0))
}

/// `GetExternalMetricReplicas`.
fn external_replicas(
    calculator: &mut Calculator<'_>,
    wpa: &WatermarkPodAutoscaler,
    scale: &ScaleTarget,
    pods: &[Arc<PodInfo>],
    source: &dyn MetricsSource,
    metric: &ResolvedMetric,
    now: Timestamp,
) -> Result<Calculation, String> {
    let spec = calculator.spec;
    let external = metric.spec.external.as_ref().ok_or("external metric source is not set")?;
    let namespace = wpa.metadata.namespace.as_deref().unwrap_or("");
    let target = &wpa.spec.scale_target_ref.name;
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let (mut ready, incorrect) = ready_pods_count(pods, target, readiness_delay(spec), now).map_err(|e| {
        let selector = scale.selector.as_ref().map(selector_string).unwrap_or_default();
        format!("unable to get the number of ready pods across all namespaces for {selector}: {e}")
    })?;
    // More ready pods than replicas means another workload shares the selector.
    ready = ready.min(scale.status_replicas);
    let considered = i32::try_from(pods.len()).unwrap_or(i32::MAX) - incorrect;
    let ratio = if considered > 0 { 100 * ready / considered } else { 0 };
    if ratio < spec.min_available_replica_percentage {
        return Err(format!("{ratio} % of the pods are unready, will not autoscale {namespace}/{target}"));
    }
    let identifier =
        MetricIdentifier { name: external.metric_name.clone(), selector: external.metric_selector.clone() };
    let describe = || {
        format!(
            "unable to get external metric {namespace}/{}/{}",
            external.metric_name,
            go_label_selector(external.metric_selector.as_ref())
        )
    };
    let values = source
        .external_metric(namespace, &identifier)
        .map_err(|e| format!("{}: unable to fetch metrics from external metrics API: {e}", describe()))?;
    if values.is_empty() {
        return Err(format!("{}: no metrics returned from external metrics API", describe()));
    }
    let sum = values.iter().fold(0i64, |s, v| s.saturating_add(*v));
    if sum == 0 && !spec.tolerate_zero {
        // A zero is distrusted: hold the value between the watermarks.
        return Ok(Calculation { replicas: ready, utilization: 0, ready_replicas: ready, above: false, below: false });
    }
    let averaged = if spec.average { f64::from(ready) } else { 1.0 };
    Ok(calculator.replica_count(ready, sum as f64 / averaged, metric.low_milli, metric.high_milli))
}

/// `GetResourceReplicas`.
fn resource_replicas(
    calculator: &mut Calculator<'_>,
    wpa: &WatermarkPodAutoscaler,
    pods: &[Arc<PodInfo>],
    source: &dyn MetricsSource,
    metric: &ResolvedMetric,
) -> Result<Calculation, String> {
    let spec = calculator.spec;
    let resource = metric.spec.resource.as_ref().ok_or("resource metric source is not set")?;
    let namespace = wpa.metadata.namespace.as_deref().unwrap_or("");
    let target = &wpa.spec.scale_target_ref.name;
    let describe = || {
        format!(
            "unable to get resource metric {namespace}/{}/{}",
            resource.name,
            go_label_selector(resource.metric_selector.as_ref())
        )
    };
    let selector = Selector::from_label_selector(resource.metric_selector.as_ref());
    let raw = source
        .pod_resource_metrics(namespace, &selector, &resource.name)
        .map_err(|e| format!("{}: unable to fetch metrics from resource metrics API: {e}", describe()))?;
    if raw.is_empty() {
        return Err(format!("{}: no metrics returned from resource metrics API", describe()));
    }
    let mut metrics = resource_usage(&raw, "", namespace);
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let (ready_pods, ignored) = group_pods(pods, target, &metrics, &resource.name, readiness_delay(spec));
    let ready = i32::try_from(ready_pods.len()).unwrap_or(i32::MAX);
    let considered = pods.len() - ignored.len();
    if considered == 0 {
        return Err(format!("among the {} pods, none is ready. Skipping recommendation", pods.len()));
    }
    let ratio = (100 * ready_pods.len() / considered) as i32;
    if ratio < spec.min_available_replica_percentage {
        return Err(format!("{ratio} % of the pods are unready, will not autoscale {namespace}/{target}"));
    }
    for name in &ignored {
        metrics.remove(name);
    }
    if metrics.is_empty() || (spec.average && ready == 0) {
        return Err("did not receive metrics for any ready pods".into());
    }
    let sum = metrics.values().fold(0i64, |s, m| s.saturating_add(m.value));
    let averaged = if spec.average { f64::from(ready) } else { 1.0 };
    Ok(calculator.replica_count(ready, sum as f64 / averaged, metric.low_milli, metric.high_milli))
}
