//! The WPA controller's defaulting and validity check, resolved into plain numbers.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use simulator::quantity::{parse_milli, parse_value};

use super::types::{WatermarkPodAutoscaler, WpaMetricSpec};
use crate::hpa::format::{format_decimal_milli, go_string_map};

/// A WPA spec with the controller's defaults applied and quantities parsed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResolvedSpec {
    pub min_replicas: i32,
    pub max_replicas: i32,
    /// Thousandths (`100` = 10 %).
    pub tolerance_milli: i64,
    /// Percent, in thousandths of a percent (`50000` = 50 %).
    pub scale_up_limit_factor_milli: i64,
    /// `Quantity.Value()` of the factor: 0 disables upscaling.
    pub scale_up_limit_factor_value: i64,
    pub scale_down_limit_factor_milli: i64,
    pub scale_down_limit_factor_value: i64,
    pub downscale_forbidden_window_seconds: i32,
    pub upscale_forbidden_window_seconds: i32,
    pub upscale_delay_seconds: i32,
    pub downscale_delay_seconds: i32,
    pub modulo: i32,
    pub average: bool,
    pub converge_towards: String,
    pub readiness_delay_seconds: i32,
    pub min_available_replica_percentage: i32,
    pub tolerate_zero: bool,
    pub dry_run: bool,
    pub metrics: Vec<ResolvedMetric>,
}

/// One metric with both watermarks set (a missing one copies the other, as upstream does).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResolvedMetric {
    pub spec: WpaMetricSpec,
    pub low_milli: i64,
    pub high_milli: i64,
}

fn milli_or(quantity: Option<&Quantity>, default: i64, field: &str) -> Result<i64, String> {
    match quantity {
        None => Ok(default),
        Some(q) => parse_milli(&q.0).map_err(|e| format!("invalid quantity {:?} in {field}: {}", q.0, e.reason)),
    }
}

fn nonzero_or(value: i32, default: i32) -> i32 {
    if value == 0 { default } else { value }
}

/// `DefaultWatermarkPodAutoscaler`, `CheckWPAValidity` and `fillMissingWatermark`, with
/// upstream's error messages.
pub(crate) fn resolve(wpa: &WatermarkPodAutoscaler) -> Result<ResolvedSpec, String> {
    let spec = &wpa.spec;
    if spec.scale_target_ref.kind.is_empty() || spec.scale_target_ref.name.is_empty() {
        return Err(format!(
            "the Spec.ScaleTargetRef should be populated, currently Kind:{} and/or Name:{} are not set properly",
            spec.scale_target_ref.kind, spec.scale_target_ref.name
        ));
    }
    let min_replicas = spec.min_replicas.unwrap_or(1);
    if spec.max_replicas < min_replicas {
        return Err(
            "watermark pod autoscaler requires the minimum number of replicas to be configured and inferior to the maximum"
                .into(),
        );
    }
    // A tolerance of 0 is "unset" for upstream's defaulting: 10 %.
    let tolerance_milli = match milli_or(spec.tolerance.as_ref(), 0, "tolerance")? {
        0 => 100,
        milli => milli,
    };
    if !(0..=1000).contains(&tolerance_milli) {
        return Err(format!(
            "tolerance should be set as a quantity between 0 and 1, currently set to : {}, which is {:.0}%",
            format_decimal_milli(tolerance_milli),
            tolerance_milli as f64 / 10.0
        ));
    }
    let scale_up_limit_factor_milli = milli_or(spec.scale_up_limit_factor.as_ref(), 50_000, "scaleUpLimitFactor")?;
    if scale_up_limit_factor_milli < 0 {
        return Err(format!(
            "scaleuplimitfactor should be set as a positive quantity, currently set to : {}, which could yield a {:.0}% growth",
            format_decimal_milli(scale_up_limit_factor_milli),
            scale_up_limit_factor_milli as f64 / 1000.0
        ));
    }
    let scale_down_limit_factor_milli =
        milli_or(spec.scale_down_limit_factor.as_ref(), 20_000, "scaleDownLimitFactor")?;
    if !(0..100_000).contains(&scale_down_limit_factor_milli) {
        return Err(format!(
            "scaledownlimitfactor should be set as a quantity between 0 and 100 (exc.), currently set to : {}, which could yield a {:.0}% decrease",
            format_decimal_milli(scale_down_limit_factor_milli),
            scale_down_limit_factor_milli as f64 / 1000.0
        ));
    }
    let value =
        |q: Option<&Quantity>, default: i64| q.map_or(Ok(default), |q| parse_value(&q.0).map_err(|e| e.to_string()));
    let metrics = resolve_metrics(wpa)?;
    Ok(ResolvedSpec {
        min_replicas,
        max_replicas: spec.max_replicas,
        tolerance_milli,
        scale_up_limit_factor_milli,
        scale_up_limit_factor_value: value(spec.scale_up_limit_factor.as_ref(), 50)?,
        scale_down_limit_factor_milli,
        scale_down_limit_factor_value: value(spec.scale_down_limit_factor.as_ref(), 20)?,
        downscale_forbidden_window_seconds: nonzero_or(spec.downscale_forbidden_window_seconds, 300),
        upscale_forbidden_window_seconds: nonzero_or(spec.upscale_forbidden_window_seconds, 60),
        upscale_delay_seconds: spec.upscale_delay_above_watermark_seconds,
        downscale_delay_seconds: spec.downscale_delay_below_watermark_seconds,
        modulo: spec.replica_scaling_absolute_modulo.unwrap_or(1),
        average: spec.algorithm == "average",
        converge_towards: spec.converge_towards_watermark.clone(),
        readiness_delay_seconds: spec.readiness_delay_seconds,
        min_available_replica_percentage: spec.min_available_replica_percentage,
        tolerate_zero: spec.tolerate_zero,
        dry_run: spec.dry_run,
        metrics,
    })
}

fn resolve_metrics(wpa: &WatermarkPodAutoscaler) -> Result<Vec<ResolvedMetric>, String> {
    let namespace = wpa.metadata.namespace.as_deref().unwrap_or("");
    let name = wpa.metadata.name.as_deref().unwrap_or("");
    let mut resolved = Vec::with_capacity(wpa.spec.metrics.len());
    for metric in &wpa.spec.metrics {
        let (kind, metric_name, selector, low, high) = match metric.type_.as_str() {
            "External" => {
                let Some(external) = &metric.external else {
                    return Err("metric.External is nil while metric.Type is 'External'".into());
                };
                let (low, high) = (&external.low_watermark, &external.high_watermark);
                ("External", external.metric_name.as_str(), external.metric_selector.as_ref(), low, high)
            }
            "Resource" => {
                let Some(resource) = &metric.resource else {
                    return Err("metric.Resource is nil while metric.Type is 'Resource'".into());
                };
                let (low, high) = (&resource.low_watermark, &resource.high_watermark);
                ("Resource", resource.name.as_str(), resource.metric_selector.as_ref(), low, high)
            }
            other => return Err(format!("incorrect metric.Type: '{other}'")),
        };
        if low.is_none() && high.is_none() {
            return Err(format!(
                "watermarks are not set correctly, removing the WPA {namespace}/{name} from the Reconciler"
            ));
        }
        let Some(selector) = selector else {
            return Err(format!("missing Labels for the {kind} metric {metric_name}"));
        };
        let low_milli = milli_or(low.as_ref().or(high.as_ref()), 0, "lowWatermark")?;
        let high_milli = milli_or(high.as_ref().or(low.as_ref()), 0, "highWatermark")?;
        if high_milli < low_milli {
            return Err(format!(
                "low WaterMark of {kind} metric {metric_name}{{{}}} has to be strictly inferior to the High Watermark",
                go_string_map(selector.match_labels.as_ref())
            ));
        }
        resolved.push(ResolvedMetric { spec: metric.clone(), low_milli, high_milli });
    }
    Ok(resolved)
}
