//! The cloud-config file as written, before validation: serde structs and the YAML reader.
//!
//! Values that later checks talk about are `Spanned` so those checks can name the line too.
//! serde-saphyr reports lines but not field paths; `serde_path_to_error` adds the path.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use serde::Deserialize;
use serde_path_to_error::Segment;
use serde_saphyr::{DefaultMessageFormatter, MessageFormatter, Spanned};

use super::error::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawFile {
    #[serde(default)]
    pub node_groups: Vec<RawGroup>,
    pub gpu_label: Option<Spanned<String>>,
    pub pricing: Option<RawPricing>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawGroup {
    pub id: Spanned<String>,
    pub min_size: Option<Spanned<i64>>,
    pub max_size: Option<Spanned<i64>>,
    pub target_size: Option<Spanned<i64>>,
    pub price_per_hour: Option<Spanned<f64>>,
    pub node_selector: Option<Spanned<BTreeMap<String, String>>>,
    #[serde(rename = "providerIDPrefix")]
    pub provider_id_prefix: Option<Spanned<String>>,
    pub template: Option<Spanned<Node>>,
    pub options: Option<RawOptions>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawOptions {
    pub scale_down_utilization_threshold: Option<Spanned<f64>>,
    pub scale_down_gpu_utilization_threshold: Option<Spanned<f64>>,
    pub scale_down_unneeded_time: Option<Spanned<String>>,
    pub scale_down_unready_time: Option<Spanned<String>>,
    pub max_node_provision_time: Option<Spanned<String>>,
    pub max_node_startup_time: Option<Spanned<String>>,
    pub zero_or_max_node_scaling: Option<bool>,
    pub allow_non_atomic_scale_up_to_max: Option<bool>,
    pub ignore_daemon_sets_utilization: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawPricing {
    pub cpu_core_per_hour: Option<Spanned<f64>>,
    #[serde(rename = "memoryGiBPerHour")]
    pub memory_gib_per_hour: Option<Spanned<f64>>,
    pub gpu_per_hour: Option<Spanned<f64>>,
}

/// The YAML keys whose values are `Spanned`: `Spanned` shows up in error paths as an extra
/// `value` key right after them, which users never wrote and we drop.
const SPANNED_KEYS: &[&str] = &[
    "gpuLabel",
    "id",
    "minSize",
    "maxSize",
    "targetSize",
    "pricePerHour",
    "nodeSelector",
    "providerIDPrefix",
    "template",
    "scaleDownUtilizationThreshold",
    "scaleDownGpuUtilizationThreshold",
    "scaleDownUnneededTime",
    "scaleDownUnreadyTime",
    "maxNodeProvisionTime",
    "maxNodeStartupTime",
    "cpuCorePerHour",
    "memoryGiBPerHour",
    "gpuPerHour",
];

/// Reads the file's YAML. An empty document (or one with only comments) is an empty config.
pub(super) fn parse_raw(text: &str, source_name: &str) -> Result<RawFile, ConfigError> {
    let mut path = None;
    let parsed = serde_saphyr::with_deserializer_from_str(text, |deserializer| {
        serde_path_to_error::deserialize::<_, Option<RawFile>>(deserializer).map_err(|error| {
            path = Some(render_path(error.path()));
            error.into_inner()
        })
    });
    match parsed {
        Ok(file) => Ok(file.unwrap_or_default()),
        Err(error) => {
            let message = DefaultMessageFormatter.format_message(error.without_snippet());
            // serde-saphyr names Rust types; users wrote YAML.
            let message = match message.as_ref() {
                "invalid i64" => "expected an integer".to_string(),
                "invalid f64" => "expected a number".to_string(),
                other => match other.split_once(", set DuplicateKeyPolicy") {
                    Some((message, _developer_hint)) => message.to_string(),
                    None => other.to_string(),
                },
            };
            let line = error.location().map(|location| location.line()).filter(|line| *line > 0);
            Err(ConfigError::invalid(source_name, path.unwrap_or_default(), line, message))
        }
    }
}

fn render_path(path: &serde_path_to_error::Path) -> String {
    let mut rendered = String::new();
    let mut previous_key: Option<String> = None;
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => {
                rendered.push_str(&format!("[{index}]"));
                previous_key = None;
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if key == "value" && previous_key.as_deref().is_some_and(|previous| SPANNED_KEYS.contains(&previous)) {
                    previous_key = None;
                    continue;
                }
                if !rendered.is_empty() {
                    rendered.push('.');
                }
                rendered.push_str(key);
                previous_key = Some(key.clone());
            }
            // A key serde could not name (e.g. a duplicate key); the message names it.
            Segment::Unknown => previous_key = None,
        }
    }
    rendered
}

/// The 1-based line of a spanned value, `None` when serde-saphyr did not record one.
pub(super) fn line_of<T>(spanned: &Spanned<T>) -> Option<u64> {
    Some(spanned.referenced.line()).filter(|line| *line > 0)
}
