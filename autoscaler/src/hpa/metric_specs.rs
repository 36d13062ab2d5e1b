//! One `spec.metrics[]` entry → a replica proposal, its `MetricStatus` and the metric's name;
//! or the failure with upstream's condition reason and error texts.

use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, CrossVersionObjectReference, ExternalMetricStatus, MetricIdentifier, MetricSpec,
    MetricStatus, MetricTarget, MetricValueStatus, ObjectMetricStatus, PodsMetricStatus, ResourceMetricStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use simulator::labels::Selector;
use simulator::quantity::parse_milli;

use super::format::{go_label_selector, milli_quantity};
use super::metrics::MetricsSource;
use super::replica_calculator::{ReplicaCalculator, resource_usage};

pub(crate) struct MetricContext<'a> {
    pub namespace: &'a str,
    pub spec_replicas: i32,
    pub status_replicas: i32,
    pub selector: &'a Selector,
    pub source: &'a dyn MetricsSource,
    pub calculator: ReplicaCalculator<'a>,
}

pub(crate) struct MetricProposal {
    pub replicas: i32,
    /// How upstream names the metric in `ValidMetricFound` and the rescale reason.
    pub name: String,
    pub status: MetricStatus,
}

pub(crate) struct MetricFailure {
    /// The `ScalingActive=False` reason and the warning event's reason.
    pub reason: &'static str,
    /// The error recorded in the warning event and the condition message.
    pub cause: String,
    /// The error as `computeReplicasForMetric` returns it (first error of
    /// `FailedComputeMetricsReplicas`).
    pub error: String,
}

impl MetricFailure {
    fn new(reason: &'static str, cause: String, wrap: impl FnOnce(&str) -> String) -> Self {
        let error = wrap(&cause);
        MetricFailure { reason, cause, error }
    }
}

fn milli(quantity: &Quantity, field: &str) -> Result<i64, String> {
    parse_milli(&quantity.0).map_err(|e| format!("invalid target {field} {:?}: {}", quantity.0, e.reason))
}

pub(crate) fn compute_metric(ctx: &MetricContext<'_>, spec: &MetricSpec) -> Result<MetricProposal, MetricFailure> {
    match spec.type_.as_str() {
        "Object" => match &spec.object {
            Some(object) => object_metric(ctx, &object.metric, &object.described_object, &object.target),
            None => Err(missing_source("Object", "object")),
        },
        "Pods" => match &spec.pods {
            Some(pods) => pods_metric(ctx, &pods.metric, &pods.target),
            None => Err(missing_source("Pods", "pods")),
        },
        "Resource" => match &spec.resource {
            Some(resource) => resource_metric(ctx, &resource.name, "", &resource.target).map_err(|cause| {
                MetricFailure::new("FailedGetResourceMetric", cause, |c| {
                    format!("failed to get {} resource metric value: {c}", resource.name)
                })
            }),
            None => Err(missing_source("Resource", "resource")),
        },
        "ContainerResource" => match &spec.container_resource {
            Some(cr) => resource_metric(ctx, &cr.name, &cr.container, &cr.target).map_err(|cause| {
                MetricFailure::new("FailedGetContainerResourceMetric", cause, |c| {
                    format!("failed to get {} container metric value: {c}", cr.container)
                })
            }),
            None => Err(missing_source("ContainerResource", "containerResource")),
        },
        "External" => match &spec.external {
            Some(external) => external_metric(ctx, &external.metric, &external.target),
            None => Err(missing_source("External", "external")),
        },
        other => {
            let cause = format!("unknown metric source type {other:?}");
            Err(MetricFailure { reason: "InvalidMetricSourceType", error: cause.clone(), cause })
        }
    }
}

/// A metric whose type names a source that is not set; the API server rejects these, upstream
/// would crash on them.
fn missing_source(type_: &str, field: &str) -> MetricFailure {
    let cause = format!("metric source type {type_:?} has no {field:?} source set");
    MetricFailure { reason: "InvalidMetricSourceType", error: cause.clone(), cause }
}

/// Resource and ContainerResource: an AverageValue target (when set) is a plain per-pod
/// metric, otherwise the AverageUtilization target is a percentage of requests.
fn resource_metric(
    ctx: &MetricContext<'_>,
    resource: &str,
    container: &str,
    target: &MetricTarget,
) -> Result<MetricProposal, String> {
    let (type_, is_container) = if container.is_empty() { ("Resource", false) } else { ("ContainerResource", true) };
    let fetch = || -> Result<_, String> {
        let raw = ctx.source.pod_resource_metrics(ctx.namespace, ctx.selector, resource).map_err(|e| {
            format!(
                "unable to get metrics for resource {resource}: unable to fetch metrics from resource metrics API: {e}"
            )
        })?;
        if raw.is_empty() {
            return Err(format!(
                "unable to get metrics for resource {resource}: no metrics returned from resource metrics API"
            ));
        }
        Ok(raw)
    };
    let (replicas, current, name) = if let Some(average_value) = &target.average_value {
        let target_usage = milli(average_value, "averageValue")?;
        let proposal = fetch()
            .and_then(|raw| {
                let m = resource_usage(&raw, container, ctx.namespace);
                ctx.calculator.plain_metric_replicas(ctx.spec_replicas, target_usage, resource, m)
            })
            .map_err(|e| format!("failed to get {resource} usage: {e}"))?;
        let current = MetricValueStatus { average_value: Some(milli_quantity(proposal.usage)), ..Default::default() };
        (proposal.replicas, current, format!("{resource} resource"))
    } else {
        let Some(target_utilization) = target.average_utilization else {
            return Err("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".into());
        };
        let proposal = fetch()
            .and_then(|raw| {
                let m = resource_usage(&raw, container, ctx.namespace);
                ctx.calculator.resource_utilization_replicas(
                    ctx.spec_replicas,
                    target_utilization,
                    resource,
                    m,
                    container,
                )
            })
            .map_err(|e| format!("failed to get {resource} utilization: {e}"))?;
        let current = MetricValueStatus {
            average_utilization: Some(proposal.utilization),
            average_value: Some(milli_quantity(proposal.usage)),
            value: None,
        };
        let kind = if is_container { "container resource" } else { "resource" };
        (proposal.replicas, current, format!("{resource} {kind} utilization (percentage of request)"))
    };
    let status = if is_container {
        MetricStatus {
            type_: type_.into(),
            container_resource: Some(ContainerResourceMetricStatus {
                container: container.into(),
                current,
                name: resource.into(),
            }),
            ..Default::default()
        }
    } else {
        MetricStatus {
            type_: type_.into(),
            resource: Some(ResourceMetricStatus { current, name: resource.into() }),
            ..Default::default()
        }
    };
    Ok(MetricProposal { replicas, name, status })
}

fn pods_metric(
    ctx: &MetricContext<'_>,
    metric: &MetricIdentifier,
    target: &MetricTarget,
) -> Result<MetricProposal, MetricFailure> {
    let wrap = |c: &str| format!("failed to get pods metric value: {c}");
    let compute = || -> Result<_, String> {
        let Some(average_value) = &target.average_value else {
            return Err("invalid pods metric source: the average value target is not set".into());
        };
        let target_usage = milli(average_value, "averageValue")?;
        let raw = ctx.source.pods_metric(ctx.namespace, metric, ctx.selector).map_err(|e| {
            format!("unable to get metric {}: unable to fetch metrics from custom metrics API: {e}", metric.name)
        })?;
        if raw.is_empty() {
            return Err(format!("unable to get metric {}: no metrics returned from custom metrics API", metric.name));
        }
        let usage = raw.iter().map(|(name, metric)| (name.as_str(), *metric)).collect();
        ctx.calculator.plain_metric_replicas(ctx.spec_replicas, target_usage, "", usage)
    };
    let proposal = compute().map_err(|cause| MetricFailure::new("FailedGetPodsMetric", cause, wrap))?;
    let status = MetricStatus {
        type_: "Pods".into(),
        pods: Some(PodsMetricStatus {
            current: MetricValueStatus { average_value: Some(milli_quantity(proposal.usage)), ..Default::default() },
            metric: metric.clone(),
        }),
        ..Default::default()
    };
    Ok(MetricProposal { replicas: proposal.replicas, name: format!("pods metric {}", metric.name), status })
}

fn object_metric(
    ctx: &MetricContext<'_>,
    metric: &MetricIdentifier,
    object: &CrossVersionObjectReference,
    target: &MetricTarget,
) -> Result<MetricProposal, MetricFailure> {
    const REASON: &str = "FailedGetObjectMetric";
    let wrap = |c: &str| format!("failed to get object metric value: {c}");
    let fetch = || {
        ctx.source.object_metric(ctx.namespace, metric, object).map_err(|e| {
            format!(
                "unable to get metric {}: {} on {} {}/unable to fetch metrics from custom metrics API: {e}",
                metric.name, object.kind, ctx.namespace, object.name
            )
        })
    };
    if target.type_ == "Value"
        && let Some(value) = &target.value
    {
        let compute = || -> Result<(i32, i64), String> {
            let target_usage = milli(value, "value")?;
            let usage = fetch()?;
            let ratio = usage as f64 / target_usage as f64;
            Ok((ctx.calculator.usage_ratio_replicas(ctx.spec_replicas, ratio)?, usage))
        };
        let (replicas, usage) = compute().map_err(|cause| MetricFailure::new(REASON, cause, wrap))?;
        let status = MetricStatus {
            type_: "Object".into(),
            object: Some(ObjectMetricStatus {
                current: MetricValueStatus { value: Some(milli_quantity(usage)), ..Default::default() },
                described_object: object.clone(),
                metric: metric.clone(),
            }),
            ..Default::default()
        };
        return Ok(MetricProposal { replicas, name: format!("{} metric {}", object.kind, metric.name), status });
    }
    if target.type_ == "AverageValue"
        && let Some(average_value) = &target.average_value
    {
        let compute = || -> Result<(i32, i64), String> {
            let target_usage = milli(average_value, "averageValue")?;
            let usage = fetch()?;
            Ok(ctx.calculator.per_pod_replicas(ctx.status_replicas, usage, target_usage))
        };
        let (replicas, per_pod) = compute().map_err(|cause| {
            MetricFailure::new(REASON, cause, |c| wrap(&format!("failed to get {} object metric: {c}", metric.name)))
        })?;
        // Upstream leaves describedObject empty in this status.
        let status = MetricStatus {
            type_: "Object".into(),
            object: Some(ObjectMetricStatus {
                current: MetricValueStatus { average_value: Some(milli_quantity(per_pod)), ..Default::default() },
                described_object: CrossVersionObjectReference::default(),
                metric: metric.clone(),
            }),
            ..Default::default()
        };
        let name = format!("external metric {}({})", metric.name, go_label_selector(metric.selector.as_ref()));
        return Ok(MetricProposal { replicas, name, status });
    }
    Err(MetricFailure::new(
        REASON,
        "invalid object metric source: neither a value target nor an average value target was set".into(),
        wrap,
    ))
}

fn external_metric(
    ctx: &MetricContext<'_>,
    metric: &MetricIdentifier,
    target: &MetricTarget,
) -> Result<MetricProposal, MetricFailure> {
    const REASON: &str = "FailedGetExternalMetric";
    let name = &metric.name;
    let outer = |c: &str| format!("failed to get {name} external metric value: {c}");
    let fetch = || -> Result<i64, String> {
        let describe = || {
            format!(
                "unable to get external metric {}/{name}/{}",
                ctx.namespace,
                go_label_selector(metric.selector.as_ref())
            )
        };
        let values = ctx
            .source
            .external_metric(ctx.namespace, metric)
            .map_err(|e| format!("{}: unable to fetch metrics from external metrics API: {e}", describe()))?;
        if values.is_empty() {
            return Err(format!("{}: no metrics returned from external metrics API", describe()));
        }
        Ok(values.iter().fold(0i64, |sum, v| sum.saturating_add(*v)))
    };
    let metric_name = format!("external metric {name}({})", go_label_selector(metric.selector.as_ref()));
    if let Some(average_value) = &target.average_value {
        let compute = || -> Result<(i32, i64), String> {
            let target_usage = milli(average_value, "averageValue")?;
            let usage = fetch()?;
            Ok(ctx.calculator.per_pod_replicas(ctx.status_replicas, usage, target_usage))
        };
        let (replicas, per_pod) = compute().map_err(|cause| {
            MetricFailure::new(REASON, cause, |c| outer(&format!("failed to get {name} external metric: {c}")))
        })?;
        let status = external_status(
            metric,
            MetricValueStatus { average_value: Some(milli_quantity(per_pod)), ..Default::default() },
        );
        return Ok(MetricProposal { replicas, name: metric_name, status });
    }
    if let Some(value) = &target.value {
        let compute = || -> Result<(i32, i64), String> {
            let target_usage = milli(value, "value")?;
            let usage = fetch()?;
            let ratio = usage as f64 / target_usage as f64;
            Ok((ctx.calculator.usage_ratio_replicas(ctx.spec_replicas, ratio)?, usage))
        };
        let (replicas, usage) = compute().map_err(|cause| {
            MetricFailure::new(REASON, cause, |c| outer(&format!("failed to get external metric {name}: {c}")))
        })?;
        let status =
            external_status(metric, MetricValueStatus { value: Some(milli_quantity(usage)), ..Default::default() });
        return Ok(MetricProposal { replicas, name: metric_name, status });
    }
    Err(MetricFailure::new(
        REASON,
        "invalid external metric source: neither a value target nor an average value target was set".into(),
        outer,
    ))
}

fn external_status(metric: &MetricIdentifier, current: MetricValueStatus) -> MetricStatus {
    MetricStatus {
        type_: "External".into(),
        external: Some(ExternalMetricStatus { current, metric: metric.clone() }),
        ..Default::default()
    }
}
