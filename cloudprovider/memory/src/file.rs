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
//! faults:                       # --cloud-config only: faults armed when the provider starts
//! - {group: general, type: failIncreaseSize, times: 1}   # times: default always
//! - {group: general, type: failDeleteNodes, times: 2}
//! - {group: general, type: neverRegister, count: 1}      # count: default 1
//! - {group: general, type: slowIncreaseSize, delay: 30s, times: 1}   # carried out, answered 30s late
//! - {group: general, type: slowDeleteNodes, delay: 10m}
//! ```
//!
//! A slow fault holds the answer of a call the cloud has already carried out (the worst case
//! for a caller that gives up waiting) for `delay`, a Go duration, in wall-clock time.
//!
//! Every error names the file, the line and the field (`nodeGroups[1].template.status…`).
//! (A `simulate` scenario arms faults at chosen times with its `events` instead.)

use std::time::Duration;

use cloudprovider::duration::parse_go_duration;
use cloudprovider::objects::{ObjectError, read_strict, refused_value};
use cloudprovider::yaml::{FileError, line_of, normalize_quantities};
use cloudprovider::{CloudProviderError, NodeGroupAutoscalingOptions, NodeGroupOptionOverrides, NodeTemplate};
use k8s_openapi::api::core::v1::Node;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::config::{FaultCount, MemoryGroupSpec, MemoryProviderConfig, MemoryProviderError};
use crate::provider::MemoryCloudProvider;

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
    #[serde(default)]
    faults: Vec<Spanned<RawStartFault>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawStartFault {
    group: String,
    #[serde(rename = "type")]
    fault_type: String,
    times: Option<usize>,
    count: Option<usize>,
    delay: Option<String>,
}

/// A fault armed when the provider starts (the `faults` list of `--cloud-config`), so that the
/// controller's end-to-end tests can make the cloud fail through the real binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartFault {
    /// The next `times` IncreaseSize calls of `group` fail (every one when `Always`).
    FailIncreaseSize { group: String, times: FaultCount },
    /// The next `times` DeleteNodes calls of `group` fail.
    FailDeleteNodes { group: String, times: FaultCount },
    /// The next `count` instances `group` launches never register a Node.
    NeverRegister { group: String, count: usize },
    /// The next `times` IncreaseSize calls of `group` are carried out, then answered `delay` late.
    SlowIncreaseSize { group: String, times: FaultCount, delay: Duration },
    /// The next `times` DeleteNodes calls of `group` are carried out, then answered `delay` late.
    SlowDeleteNodes { group: String, times: FaultCount, delay: Duration },
}

impl StartFault {
    /// Arms the fault on `provider`. The error a failing call returns names the group, as a
    /// cloud's own message would.
    pub fn arm(&self, provider: &MemoryCloudProvider) -> Result<(), MemoryProviderError> {
        let error = |group: &str, call: &str| {
            CloudProviderError::cloud(format!("{call} of node group {group} failed (armed in the cloud-config)"))
        };
        match self {
            StartFault::FailIncreaseSize { group, times } => {
                provider.fail_increase_size(group, *times, error(group, "IncreaseSize"))
            }
            StartFault::FailDeleteNodes { group, times } => {
                provider.fail_delete_nodes(group, *times, error(group, "DeleteNodes"))
            }
            StartFault::NeverRegister { group, count } => provider.never_register(group, *count),
            StartFault::SlowIncreaseSize { group, times, delay } => provider.slow_increase_size(group, *times, *delay),
            StartFault::SlowDeleteNodes { group, times, delay } => provider.slow_delete_nodes(group, *times, *delay),
        }
    }
}

/// The fault types of the `faults` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FaultType {
    FailIncreaseSize,
    FailDeleteNodes,
    NeverRegister,
    SlowIncreaseSize,
    SlowDeleteNodes,
}

/// The `type` values of the `faults` list, as written.
const FAULT_TYPES: &[(&str, FaultType)] = &[
    ("failIncreaseSize", FaultType::FailIncreaseSize),
    ("failDeleteNodes", FaultType::FailDeleteNodes),
    ("neverRegister", FaultType::NeverRegister),
    ("slowIncreaseSize", FaultType::SlowIncreaseSize),
    ("slowDeleteNodes", FaultType::SlowDeleteNodes),
];

/// The memory provider's `--cloud-config`: its groups and the faults armed at start.
#[derive(Clone, Debug)]
pub struct GroupsFile {
    pub groups: Vec<GroupFileSpec>,
    pub faults: Vec<StartFault>,
}

/// Reads the memory provider's `--cloud-config`: `nodeGroups` and optional `faults`.
pub fn parse_cloud_config(text: &str, file: &str) -> Result<GroupsFile, FileError> {
    let raw: RawGroupsFile = cloudprovider::yaml::from_str(text, file, SPANNED_KEYS)?;
    if raw.node_groups.is_empty() {
        return Err(FileError::new(file, "nodeGroups", None, "needs at least one node group"));
    }
    let groups = parse_groups(file, raw.node_groups)?;
    let mut faults = Vec::new();
    for (i, spanned) in raw.faults.into_iter().enumerate() {
        let line = line_of(&spanned);
        let f = spanned.value;
        let err = |field: &str, message: String| FileError::new(file, format!("faults[{i}].{field}"), line, message);
        if !groups.iter().any(|g| g.id == f.group) {
            return Err(err("group", format!("unknown node group {:?}", f.group)));
        }
        let times = f.times.map_or(FaultCount::Always, FaultCount::Times);
        let group = f.group.clone();
        let kind = f.fault_type.as_str();
        let Some(&(_, fault_type)) = FAULT_TYPES.iter().find(|(name, _)| *name == kind) else {
            let known: Vec<&str> = FAULT_TYPES.iter().map(|(name, _)| *name).collect();
            return Err(err("type", format!("unknown fault {kind:?} ({})", known.join(", "))));
        };
        // neverRegister counts instances; the others count calls.
        let counts_instances = fault_type == FaultType::NeverRegister;
        if counts_instances && f.times.is_some() {
            return Err(err("times", format!("{kind} takes count, not times")));
        }
        if !counts_instances && f.count.is_some() {
            return Err(err("count", format!("{kind} takes times, not count")));
        }
        let slow = matches!(fault_type, FaultType::SlowIncreaseSize | FaultType::SlowDeleteNodes);
        let delay = match (&f.delay, slow) {
            (None, true) => return Err(err("delay", format!("{kind} needs a delay, such as 30s"))),
            (Some(_), false) => return Err(err("delay", format!("{kind} takes no delay"))),
            (None, false) => Duration::ZERO,
            (Some(text), true) => match parse_go_duration(text) {
                Ok(delay) if delay.is_zero() => return Err(err("delay", "must be longer than 0s".into())),
                Ok(delay) => delay,
                Err(message) => return Err(err("delay", message)),
            },
        };
        faults.push(match fault_type {
            FaultType::FailIncreaseSize => StartFault::FailIncreaseSize { group, times },
            FaultType::FailDeleteNodes => StartFault::FailDeleteNodes { group, times },
            FaultType::NeverRegister => StartFault::NeverRegister { group, count: f.count.unwrap_or(1) },
            FaultType::SlowIncreaseSize => StartFault::SlowIncreaseSize { group, times, delay },
            FaultType::SlowDeleteNodes => StartFault::SlowDeleteNodes { group, times, delay },
        });
    }
    Ok(GroupsFile { groups, faults })
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
        let groups = parse_cloud_config(FILE, "groups.yaml").unwrap().groups;
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
        let error = parse_cloud_config(&bad, "groups.yaml").unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("nodeGroups[0].minSize", Some(3)));
        let bad = FILE.replace("scaleDownUnneededTime: 5m", "scaleDownUneededTime: 5m");
        let error = parse_cloud_config(&bad, "groups.yaml").unwrap_err();
        assert_eq!(error.field, "nodeGroups[0].options.scaleDownUneededTime");
        assert!(error.to_string().starts_with("groups.yaml:6: "), "{error}");
        let bad = FILE.replace("maxSize: 5", "maxSise: 5");
        let error = parse_cloud_config(&bad, "groups.yaml").unwrap_err();
        assert!(error.message.contains("maxSise"), "{error}");
    }

    #[test]
    fn faults_in_the_cloud_config_are_read_and_checked() {
        let text = format!(
            "{FILE}faults:\n- {{group: general, type: failIncreaseSize}}\n- {{group: general, type: failDeleteNodes, times: 2}}\n- {{group: general, type: neverRegister}}\n"
        );
        let file = parse_cloud_config(&text, "groups.yaml").unwrap();
        assert_eq!(
            file.faults,
            vec![
                StartFault::FailIncreaseSize { group: "general".into(), times: FaultCount::Always },
                StartFault::FailDeleteNodes { group: "general".into(), times: FaultCount::Times(2) },
                StartFault::NeverRegister { group: "general".into(), count: 1 },
            ]
        );
        let unknown_group = format!("{FILE}faults:\n- {{group: nope, type: failIncreaseSize}}\n");
        let error = parse_cloud_config(&unknown_group, "groups.yaml").unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("faults[0].group", Some(9)), "{error}");
        let unknown_type = format!("{FILE}faults:\n- {{group: general, type: explode}}\n");
        assert_eq!(parse_cloud_config(&unknown_type, "groups.yaml").unwrap_err().field, "faults[0].type");
        let wrong_key = format!("{FILE}faults:\n- {{group: general, type: failDeleteNodes, count: 1}}\n");
        assert_eq!(parse_cloud_config(&wrong_key, "groups.yaml").unwrap_err().field, "faults[0].count");
    }

    #[test]
    fn slow_faults_need_a_positive_delay_and_take_times() {
        let text = format!(
            "{FILE}faults:\n- {{group: general, type: slowIncreaseSize, delay: 30s, times: 1}}\n- {{group: general, type: slowDeleteNodes, delay: 1m30s}}\n"
        );
        let file = parse_cloud_config(&text, "groups.yaml").unwrap();
        assert_eq!(
            file.faults,
            vec![
                StartFault::SlowIncreaseSize {
                    group: "general".into(),
                    times: FaultCount::Times(1),
                    delay: Duration::from_secs(30)
                },
                StartFault::SlowDeleteNodes {
                    group: "general".into(),
                    times: FaultCount::Always,
                    delay: Duration::from_secs(90)
                },
            ]
        );
        let error_of = |fault: &str| {
            let error = parse_cloud_config(&format!("{FILE}faults:\n- {fault}\n"), "groups.yaml").unwrap_err();
            (error.field.clone(), error.line, error.to_string())
        };
        let (field, line, message) = error_of("{group: general, type: slowIncreaseSize}");
        assert_eq!((field.as_str(), line), ("faults[0].delay", Some(9)), "{message}");
        assert!(message.contains("needs a delay"), "{message}");
        let (field, _, message) = error_of("{group: general, type: slowDeleteNodes, delay: soon}");
        assert_eq!(field, "faults[0].delay", "{message}");
        assert!(message.starts_with("groups.yaml:9: "), "{message}");
        let (field, _, message) = error_of("{group: general, type: slowDeleteNodes, delay: 0s}");
        assert_eq!(field, "faults[0].delay");
        assert!(message.contains("longer than 0s"), "{message}");
        assert_eq!(error_of("{group: general, type: failIncreaseSize, delay: 5s}").0, "faults[0].delay");
        assert_eq!(error_of("{group: general, type: slowIncreaseSize, delay: 5s, count: 1}").0, "faults[0].count");
        let (field, _, message) = error_of("{group: general, type: slowCreate, delay: 5s}");
        assert_eq!(field, "faults[0].type");
        assert!(message.contains("slowIncreaseSize, slowDeleteNodes"), "{message}");
    }

    #[test]
    fn an_empty_groups_file_is_an_error() {
        let error = parse_cloud_config("nodeGroups: []\n", "g.yaml").unwrap_err();
        assert_eq!(error.field, "nodeGroups");
    }
}
