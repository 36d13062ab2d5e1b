//! Node groups as files write them: the `nodeGroups` list of a `simulate` scenario, and the
//! `--cloud-config` file of `--cloud-provider=memory` (a file with only that list).
//!
//! ```yaml
//! nodeGroups:
//! - id: general                 # a DNS label; nodes are named general-1, general-2, …
//!   minSize: 1
//!   maxSize: 10
//!   initialSize: 2              # default minSize
//!   pricePerHour: 0.192         # default: per-unit prices of the template's capacity
//!   provisioningDelay: 2m       # default 2m
//!   zeroOrMax: false            # scale only to 0 or to maxSize
//!   options: {scaleDownUnneededTime: 5m}   # the static provider's per-group options
//!   template: {metadata: {labels: {pool: general}}, status: {capacity: {cpu: "4", memory: 16Gi}}}
//! ```
//!
//! Every error names the file, the line and the field (`nodeGroups[1].template.status…`).

use std::time::Duration;

use cloudprovider::duration::parse_go_duration;
use cloudprovider::objects::{ObjectError, read_strict, refused_value};
use cloudprovider::yaml::{FileError, line_of, normalize_quantities};
use cloudprovider::{NodeGroupAutoscalingOptions, NodeGroupOptionOverrides, NodeTemplate};
use k8s_openapi::api::core::v1::Node;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::config::{MemoryGroupSpec, MemoryProviderConfig};

/// The provisioning delay of a group that does not set one.
pub const DEFAULT_FILE_PROVISIONING_DELAY: Duration = Duration::from_secs(120);

/// The keys of [`RawGroup`] whose values are spanned (for `cloudprovider::yaml::from_str`).
pub const SPANNED_KEYS: &[&str] =
    &["id", "minSize", "maxSize", "initialSize", "pricePerHour", "provisioningDelay", "options", "template"];

/// One group as written; embed `Vec<RawGroup>` in a larger file format and pass it to
/// [`parse_groups`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawGroup {
    id: Spanned<String>,
    min_size: Spanned<usize>,
    max_size: Spanned<usize>,
    initial_size: Option<Spanned<usize>>,
    price_per_hour: Option<Spanned<f64>>,
    provisioning_delay: Option<Spanned<String>>,
    #[serde(default)]
    zero_or_max: bool,
    options: Option<Spanned<Value>>,
    template: Spanned<Value>,
}

/// A group read from a file; its options are merged over the autoscaler's defaults only when the
/// provider is built (the flags may still change them).
#[derive(Clone, Debug)]
pub struct GroupFileSpec {
    pub id: String,
    pub min_size: usize,
    pub max_size: usize,
    pub initial_size: usize,
    pub price_per_hour: Option<f64>,
    pub provisioning_delay: Duration,
    pub zero_or_max: bool,
    pub options: Option<NodeGroupOptionOverrides>,
    pub template: Node,
}

impl GroupFileSpec {
    /// The provider's view of the group, with `defaults` for the options it does not set.
    pub fn to_spec(&self, defaults: &NodeGroupAutoscalingOptions) -> MemoryGroupSpec {
        let mut spec = MemoryGroupSpec::new(
            self.id.clone(),
            self.min_size,
            self.max_size,
            NodeTemplate { node: self.template.clone(), pods: Vec::new() },
        );
        spec.initial_size = self.initial_size;
        spec.price_per_hour = self.price_per_hour;
        spec.provisioning_delay = self.provisioning_delay;
        spec.zero_or_max = self.zero_or_max;
        spec.options = self.options.as_ref().map(|o| o.merged_over(defaults));
        spec
    }
}

/// The provider configuration for `groups` with `defaults` for their options.
pub fn provider_config(groups: &[GroupFileSpec], defaults: &NodeGroupAutoscalingOptions) -> MemoryProviderConfig {
    MemoryProviderConfig::new(groups.iter().map(|g| g.to_spec(defaults)).collect())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawGroupsFile {
    #[serde(default)]
    node_groups: Vec<RawGroup>,
}

/// Reads a file that has only `nodeGroups` (the memory provider's `--cloud-config`).
pub fn parse_groups_file(text: &str, file: &str) -> Result<Vec<GroupFileSpec>, FileError> {
    let raw: RawGroupsFile = cloudprovider::yaml::from_str(text, file, SPANNED_KEYS)?;
    if raw.node_groups.is_empty() {
        return Err(FileError::new(file, "nodeGroups", None, "needs at least one node group"));
    }
    parse_groups(file, raw.node_groups)
}

/// Validates groups as written in `file`.
pub fn parse_groups(file: &str, raw_groups: Vec<RawGroup>) -> Result<Vec<GroupFileSpec>, FileError> {
    let err = |field: String, line: Option<u64>, message: String| FileError::new(file, field, line, message);
    let mut groups: Vec<GroupFileSpec> = Vec::new();
    for (i, g) in raw_groups.into_iter().enumerate() {
        let field = |f: &str| format!("nodeGroups[{i}].{f}");
        if g.id.value.is_empty() {
            return Err(err(field("id"), line_of(&g.id), "must not be empty".into()));
        }
        if groups.iter().any(|other| other.id == g.id.value) {
            return Err(err(field("id"), line_of(&g.id), format!("duplicate node group id {:?}", g.id.value)));
        }
        if g.min_size.value > g.max_size.value {
            return Err(err(
                field("minSize"),
                line_of(&g.min_size),
                format!("min size {} is greater than max size {}", g.min_size.value, g.max_size.value),
            ));
        }
        let initial = g.initial_size.as_ref().map_or(g.min_size.value, |s| s.value);
        if let Some(s) = &g.initial_size
            && (s.value > g.max_size.value || s.value < g.min_size.value)
        {
            return Err(err(
                field("initialSize"),
                line_of(s),
                format!("{} is outside [{}, {}]", s.value, g.min_size.value, g.max_size.value),
            ));
        }
        if let Some(p) = &g.price_per_hour
            && (!p.value.is_finite() || p.value < 0.0)
        {
            return Err(err(field("pricePerHour"), line_of(p), "must be a non-negative number".into()));
        }
        // Hand-written: a field the Node type does not know is a typo, and a quantity the API
        // server would refuse is refused here, where the line is known.
        let template_value = normalize_quantities(g.template.value.clone());
        let at = |e: ObjectError| err(format!("{}.{}", field("template"), e.path), line_of(&g.template), e.message);
        if let Some(e) = refused_value("Node", &template_value) {
            return Err(at(e));
        }
        let template: Node = read_strict(template_value).map_err(at)?;
        let provisioning_delay = match &g.provisioning_delay {
            Some(d) => parse_go_duration(&d.value).map_err(|m| err(field("provisioningDelay"), line_of(d), m))?,
            None => DEFAULT_FILE_PROVISIONING_DELAY,
        };
        let options = match &g.options {
            Some(o) => Some(overrides(&o.value).map_err(|(key, m)| {
                let at = if key.is_empty() { field("options") } else { format!("{}.{key}", field("options")) };
                err(at, line_of(o), m)
            })?),
            None => None,
        };
        groups.push(GroupFileSpec {
            id: g.id.value.clone(),
            min_size: g.min_size.value,
            max_size: g.max_size.value,
            initial_size: initial,
            price_per_hour: g.price_per_hour.map(|p| p.value),
            provisioning_delay,
            zero_or_max: g.zero_or_max,
            options,
            template,
        });
    }
    Ok(groups)
}

/// A group's `options` mapping (the static provider's cloud-config keys); errors name the key.
fn overrides(options: &Value) -> Result<NodeGroupOptionOverrides, (String, String)> {
    let Value::Object(map) = options else {
        return Err((String::new(), "expected a mapping".into()));
    };
    let mut o = NodeGroupOptionOverrides::default();
    for (key, value) in map {
        let bad = |message: &str| (key.clone(), message.to_string());
        let number = || {
            value.as_f64().filter(|n| n.is_finite() && *n >= 0.0).ok_or_else(|| bad("expected a non-negative number"))
        };
        let boolean = || value.as_bool().ok_or_else(|| bad("expected true or false"));
        let duration = || {
            value
                .as_str()
                .ok_or_else(|| bad("expected a duration such as 10m"))
                .and_then(|s| parse_go_duration(s).map_err(|m| (key.clone(), m)))
        };
        match key.as_str() {
            "scaleDownUtilizationThreshold" => o.scale_down_utilization_threshold = Some(number()?),
            "scaleDownGpuUtilizationThreshold" => o.scale_down_gpu_utilization_threshold = Some(number()?),
            "scaleDownUnneededTime" => o.scale_down_unneeded_time = Some(duration()?),
            "scaleDownUnreadyTime" => o.scale_down_unready_time = Some(duration()?),
            "maxNodeProvisionTime" => o.max_node_provision_time = Some(duration()?),
            "maxNodeStartupTime" => o.max_node_startup_time = Some(duration()?),
            "zeroOrMaxNodeScaling" => o.zero_or_max_node_scaling = Some(boolean()?),
            "allowNonAtomicScaleUpToMax" => o.allow_non_atomic_scale_up_to_max = Some(boolean()?),
            "ignoreDaemonSetsUtilization" => o.ignore_daemonsets_utilization = Some(boolean()?),
            _ => return Err(bad("unknown option")),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "nodeGroups:
- id: general
  minSize: 1
  maxSize: 5
  pricePerHour: 0.2
  options: {scaleDownUnneededTime: 5m}
  template: {status: {capacity: {cpu: 4, memory: 16Gi}}}
";

    #[test]
    fn a_groups_file_reads_its_groups_and_options() {
        let groups = parse_groups_file(FILE, "groups.yaml").unwrap();
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!((g.id.as_str(), g.min_size, g.max_size, g.initial_size), ("general", 1, 5, 1));
        assert_eq!(g.provisioning_delay, DEFAULT_FILE_PROVISIONING_DELAY);
        let spec = g.to_spec(&NodeGroupAutoscalingOptions::default());
        assert_eq!(spec.options.unwrap().scale_down_unneeded_time, Duration::from_secs(300));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let bad = FILE.replace("minSize: 1", "minSize: 9");
        let error = parse_groups_file(&bad, "groups.yaml").unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("nodeGroups[0].minSize", Some(3)));
        let bad = FILE.replace("scaleDownUnneededTime: 5m", "scaleDownUneededTime: 5m");
        let error = parse_groups_file(&bad, "groups.yaml").unwrap_err();
        assert_eq!(error.field, "nodeGroups[0].options.scaleDownUneededTime");
        assert!(error.to_string().starts_with("groups.yaml:6: "), "{error}");
        let bad = FILE.replace("maxSize: 5", "maxSise: 5");
        let error = parse_groups_file(&bad, "groups.yaml").unwrap_err();
        assert!(error.message.contains("maxSise"), "{error}");
    }

    #[test]
    fn an_empty_groups_file_is_an_error() {
        let error = parse_groups_file("nodeGroups: []\n", "g.yaml").unwrap_err();
        assert_eq!(error.field, "nodeGroups");
    }
}
