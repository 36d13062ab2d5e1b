//! The `datadoghq.com/v1alpha1` `WatermarkPodAutoscaler` object, as far as the controller
//! reads and writes it (camelCase keys as in the CRD).
//!
//! Read but not acted on: `spec.recommender` (an external replica recommender reached over
//! HTTP) is kept for round-tripping; a WPA that sets it is reported as unsupported. The
//! `wpa.datadoghq.com/lifecycle-control.enabled` annotation (gating on a DatadogMonitor) and
//! `wpa.datadoghq.com/logs-attributes` are ignored.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerCondition;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use serde::{Deserialize, Serialize};

/// Quantities in the CRD are int-or-string: users write `scaleUpLimitFactor: 50` as often as
/// `tolerance: "0.01"`.
mod int_or_string {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Quantity>, D::Error> {
        match Option::<serde_json::Value>::deserialize(deserializer)? {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(text)) => Ok(Some(Quantity(text))),
            Some(serde_json::Value::Number(number)) => Ok(Some(Quantity(number.to_string()))),
            Some(other) => Err(D::Error::custom(format!("expected a quantity (string or number), got {other}"))),
        }
    }
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatermarkPodAutoscaler {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: WatermarkPodAutoscalerSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WatermarkPodAutoscalerStatus>,
}

/// Go's zero values mean "unset" for the integer and string fields (the controller defaults
/// them), so they are plain values here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatermarkPodAutoscalerSpec {
    /// Seconds after any scaling event during which no downscale happens (default 300).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub downscale_forbidden_window_seconds: i32,
    /// Seconds after any scaling event during which no upscale happens (default 60).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub upscale_forbidden_window_seconds: i32,
    /// Percent of the current replicas one upscale may add (default 50; 0 forbids upscaling).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "int_or_string::deserialize")]
    pub scale_up_limit_factor: Option<Quantity>,
    /// Percent of the current replicas one downscale may remove (default 20; 0 forbids it).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "int_or_string::deserialize")]
    pub scale_down_limit_factor: Option<Quantity>,
    /// The metric must stay above its high watermark this long before an upscale.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub upscale_delay_above_watermark_seconds: i32,
    /// The metric must stay below its low watermark this long before a downscale.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub downscale_delay_below_watermark_seconds: i32,
    /// Replicas change in multiples of this (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_scaling_absolute_modulo: Option<i32>,
    /// `highwatermark` or `lowwatermark`: between the watermarks, step towards one of them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub converge_towards_watermark: String,
    /// A ratio as a quantity, e.g. `"0.01"` for 1 % (default `100m`, 10 %).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "int_or_string::deserialize")]
    pub tolerance: Option<Quantity>,
    /// `absolute` (default) or `average`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub algorithm: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    /// Without it a metric value of exactly 0 is distrusted and holds the replicas.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tolerate_zero: bool,
    pub scale_target_ref: WpaTargetReference,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<WpaMetricSpec>,
    /// Unsupported here (see the module documentation); kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommender: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// No scaling when fewer than this percentage of the pods are ready.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_available_replica_percentage: i32,
    #[serde(default)]
    pub max_replicas: i32,
    /// How recently-changed pods are counted (see [`super::reconcile_wpa`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub readiness_delay_seconds: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WpaTargetReference {
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WpaMetricSpec {
    /// `External` or `Resource`.
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<WpaExternalMetricSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<WpaResourceMetricSource>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WpaExternalMetricSource {
    pub metric_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "int_or_string::deserialize")]
    pub high_watermark: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "int_or_string::deserialize")]
    pub low_watermark: Option<Quantity>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WpaResourceMetricSource {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "int_or_string::deserialize")]
    pub high_watermark: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "int_or_string::deserialize")]
    pub low_watermark: Option<Quantity>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatermarkPodAutoscalerStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_time: Option<Time>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub scaling_events_count: i32,
    #[serde(default)]
    pub current_replicas: i32,
    #[serde(default)]
    pub desired_replicas: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub current_metrics: Vec<WpaMetricStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<HorizontalPodAutoscalerCondition>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_condition_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_condition_state: String,
}

/// The WPA status keeps `autoscaling/v2beta1` metric statuses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WpaMetricStatus {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<WpaExternalMetricStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<WpaResourceMetricStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WpaExternalMetricStatus {
    pub metric_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_selector: Option<LabelSelector>,
    pub current_value: Quantity,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WpaResourceMetricStatus {
    pub name: String,
    pub current_average_value: Quantity,
}
