//! The validated static-provider configuration: the cloud-config file merged with `--nodes`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use serde_saphyr::Spanned;

use super::error::ConfigError;
use super::raw::{RawFile, RawGroup, RawOptions, RawPricing, line_of, parse_raw};
use super::spec::{NodeGroupSpec, parse_node_group_specs};
use super::template::complete_template;
use cloudprovider::DEFAULT_GPU_LABEL;
use cloudprovider::duration::parse_go_duration;
use cloudprovider::options::NodeGroupOptionOverrides;
use cloudprovider::pricing::UnitPrices;

/// One node group, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct StaticNodeGroupConfig {
    pub id: String,
    pub min_size: usize,
    pub max_size: usize,
    /// The initial target; `None` means "the number of nodes that belong to the group".
    pub target_size: Option<usize>,
    pub price_per_hour: Option<f64>,
    /// Nodes carrying all these labels belong to the group (empty: not used).
    pub node_selector: BTreeMap<String, String>,
    /// Nodes whose `spec.providerID` starts with this belong to the group.
    pub provider_id_prefix: Option<String>,
    /// The completed template (see `complete_template`); `None` for groups only from `--nodes`.
    pub template: Option<Node>,
    pub options: Option<NodeGroupOptionOverrides>,
}

impl StaticNodeGroupConfig {
    /// A group known only from `--nodes`: its nodes are those with providerID `static://<id>/…`.
    pub fn from_spec(spec: &NodeGroupSpec) -> Self {
        StaticNodeGroupConfig {
            id: spec.id.clone(),
            min_size: spec.min,
            max_size: spec.max,
            target_size: None,
            price_per_hour: None,
            node_selector: BTreeMap::new(),
            provider_id_prefix: Some(format!("static://{}/", spec.id)),
            template: None,
            options: None,
        }
    }
}

/// The whole configuration: groups in file order, then groups only named by `--nodes`.
#[derive(Clone, Debug, PartialEq)]
pub struct StaticConfig {
    pub node_groups: Vec<StaticNodeGroupConfig>,
    pub gpu_label: String,
    pub pricing: UnitPrices,
}

impl Default for StaticConfig {
    fn default() -> Self {
        StaticConfig {
            node_groups: Vec::new(),
            gpu_label: DEFAULT_GPU_LABEL.to_string(),
            pricing: UnitPrices::default(),
        }
    }
}

impl StaticConfig {
    /// Reads `--cloud-config` (when given) and merges the `--nodes` values into it.
    pub fn load(path: Option<&Path>, nodes_flags: &[String]) -> Result<StaticConfig, ConfigError> {
        let specs = parse_node_group_specs(nodes_flags)?;
        let parsed = match path {
            Some(path) => {
                let source_name = path.display().to_string();
                let text = std::fs::read_to_string(path)
                    .map_err(|source| ConfigError::Read { path: source_name.clone(), source })?;
                ParsedFile::parse(&text, &source_name)?
            }
            None => ParsedFile::default(),
        };
        parsed.merge(&specs)
    }

    /// Parses a cloud-config file's text; `source_name` names it in errors.
    pub fn from_yaml_str(text: &str, source_name: &str) -> Result<StaticConfig, ConfigError> {
        ParsedFile::parse(text, source_name)?.merge(&[])
    }

    /// Parses a cloud-config file's text and merges `--nodes` values into it.
    pub fn from_yaml_str_with_nodes(
        text: &str,
        source_name: &str,
        nodes_flags: &[String],
    ) -> Result<StaticConfig, ConfigError> {
        let specs = parse_node_group_specs(nodes_flags)?;
        ParsedFile::parse(text, source_name)?.merge(&specs)
    }
}

/// The file after validation, before `--nodes` are merged in: `maxSize` may still be missing
/// (when `--nodes` gives it) and checks that involve the bounds wait for the merge.
#[derive(Default)]
struct ParsedFile {
    source_name: String,
    groups: Vec<ParsedGroup>,
    gpu_label: Option<String>,
    pricing: UnitPrices,
}

struct ParsedGroup {
    config: StaticNodeGroupConfig,
    min_size: Option<Spanned<usize>>,
    max_size: Option<Spanned<usize>>,
    target_size: Option<Spanned<usize>>,
    id_line: Option<u64>,
}

/// Builds errors for one file: `fail("nodeGroups[1].maxSize", line, message)`.
struct Reporter<'a> {
    source_name: &'a str,
}

impl Reporter<'_> {
    fn fail(&self, field: impl Into<String>, line: Option<u64>, message: impl Into<String>) -> ConfigError {
        ConfigError::invalid(self.source_name, field, line, message)
    }

    fn size(&self, field: &str, value: Option<Spanned<i64>>) -> Result<Option<Spanned<usize>>, ConfigError> {
        let Some(spanned) = value else { return Ok(None) };
        let size = usize::try_from(spanned.value)
            .map_err(|_| self.fail(field, line_of(&spanned), format!("must not be negative, got {}", spanned.value)))?;
        Ok(Some(Spanned::new(size, spanned.referenced, spanned.defined)))
    }

    fn non_negative(&self, field: &str, value: Option<Spanned<f64>>) -> Result<Option<f64>, ConfigError> {
        let Some(spanned) = value else { return Ok(None) };
        if !spanned.value.is_finite() || spanned.value < 0.0 {
            return Err(self.fail(
                field,
                line_of(&spanned),
                format!("must be a non-negative number, got {}", spanned.value),
            ));
        }
        Ok(Some(spanned.value))
    }

    fn duration(&self, field: &str, value: Option<Spanned<String>>) -> Result<Option<Duration>, ConfigError> {
        let Some(spanned) = value else { return Ok(None) };
        parse_go_duration(&spanned.value).map(Some).map_err(|message| self.fail(field, line_of(&spanned), message))
    }

    fn non_empty(&self, field: &str, value: Option<Spanned<String>>) -> Result<Option<String>, ConfigError> {
        let Some(spanned) = value else { return Ok(None) };
        if spanned.value.is_empty() {
            return Err(self.fail(field, line_of(&spanned), "must not be empty"));
        }
        Ok(Some(spanned.value))
    }
}

impl ParsedFile {
    fn parse(text: &str, source_name: &str) -> Result<ParsedFile, ConfigError> {
        let raw: RawFile = parse_raw(text, source_name)?;
        let report = Reporter { source_name };
        let mut groups: Vec<ParsedGroup> = Vec::with_capacity(raw.node_groups.len());
        for (index, raw_group) in raw.node_groups.into_iter().enumerate() {
            let group = parse_group(&report, index, raw_group)?;
            if let Some(first) = groups.iter().position(|seen| seen.config.id == group.config.id) {
                return Err(report.fail(
                    format!("nodeGroups[{index}].id"),
                    group.id_line,
                    format!("duplicate node group id {:?} (first given at nodeGroups[{first}])", group.config.id),
                ));
            }
            groups.push(group);
        }
        let gpu_label = report.non_empty("gpuLabel", raw.gpu_label)?;
        let pricing = parse_pricing(&report, raw.pricing.unwrap_or_default())?;
        Ok(ParsedFile { source_name: source_name.to_string(), groups, gpu_label, pricing })
    }

    /// Applies `--nodes` (they override the file's bounds), checks the bounds, and appends the
    /// groups only `--nodes` names.
    fn merge(self, specs: &[NodeGroupSpec]) -> Result<StaticConfig, ConfigError> {
        let report = Reporter { source_name: &self.source_name };
        let mut node_groups = Vec::with_capacity(self.groups.len() + specs.len());
        for (index, group) in self.groups.into_iter().enumerate() {
            let field = |name: &str| format!("nodeGroups[{index}].{name}");
            let line = |value: &Option<Spanned<usize>>| value.as_ref().and_then(line_of);
            let mut config = group.config;
            let flag = specs.iter().find(|spec| spec.id == config.id);
            let (min, max, bounds_origin) = match flag {
                Some(spec) => (spec.min, spec.max, format!(" (from --nodes={}:{}:{})", spec.min, spec.max, spec.id)),
                None => {
                    let min = group.min_size.as_ref().map_or(0, |size| size.value);
                    let Some(max) = group.max_size.as_ref().map(|size| size.value) else {
                        return Err(report.fail(
                            field("maxSize"),
                            group.id_line,
                            format!("node group {:?} needs maxSize (here or with --nodes=<min>:<max>:<id>)", config.id),
                        ));
                    };
                    if min > max {
                        return Err(report.fail(
                            field("minSize"),
                            line(&group.min_size),
                            format!("minSize {min} is greater than maxSize {max}"),
                        ));
                    }
                    (min, max, String::new())
                }
            };
            if let Some(target) = &group.target_size
                && target.value > max
            {
                return Err(report.fail(
                    field("targetSize"),
                    line_of(target),
                    format!("targetSize {} is greater than maxSize {max}{bounds_origin}", target.value),
                ));
            }
            config.min_size = min;
            config.max_size = max;
            node_groups.push(config);
        }
        for spec in specs {
            if !node_groups.iter().any(|group| group.id == spec.id) {
                node_groups.push(StaticNodeGroupConfig::from_spec(spec));
            }
        }
        Ok(StaticConfig {
            node_groups,
            gpu_label: self.gpu_label.unwrap_or_else(|| DEFAULT_GPU_LABEL.to_string()),
            pricing: self.pricing,
        })
    }
}

fn parse_group(report: &Reporter<'_>, index: usize, raw: RawGroup) -> Result<ParsedGroup, ConfigError> {
    let field = |name: &str| format!("nodeGroups[{index}].{name}");
    let id_line = line_of(&raw.id);
    let id = raw.id.value;
    if id.is_empty() {
        return Err(report.fail(field("id"), id_line, "node group id must not be empty"));
    }
    let min_size = report.size(&field("minSize"), raw.min_size)?;
    let max_size = report.size(&field("maxSize"), raw.max_size)?;
    let target_size = report.size(&field("targetSize"), raw.target_size)?;
    // Checked here as well as after the merge so a broken file is reported even when `--nodes`
    // would override its bounds.
    if let (Some(min), Some(max)) = (&min_size, &max_size)
        && min.value > max.value
    {
        return Err(report.fail(
            field("minSize"),
            line_of(min),
            format!("minSize {} is greater than maxSize {}", min.value, max.value),
        ));
    }
    let price_per_hour = report.non_negative(&field("pricePerHour"), raw.price_per_hour)?;
    let provider_id_prefix = report.non_empty(&field("providerIDPrefix"), raw.provider_id_prefix)?;
    let node_selector = match raw.node_selector {
        Some(selector) if selector.value.is_empty() => {
            return Err(report.fail(
                field("nodeSelector"),
                line_of(&selector),
                "must not be empty: an empty selector would claim every node",
            ));
        }
        Some(selector) => selector.value,
        None => BTreeMap::new(),
    };
    if node_selector.is_empty() && provider_id_prefix.is_none() {
        return Err(report.fail(
            format!("nodeGroups[{index}]"),
            id_line,
            format!("node group {id:?} has neither nodeSelector nor providerIDPrefix: no way to tell which nodes belong to it"),
        ));
    }
    let template = match raw.template {
        Some(spanned) => {
            let line = line_of(&spanned);
            let node = complete_template(spanned.value, &id, &node_selector).map_err(|problem| {
                let at = line.map(|line| format!(" (template starts at line {line})")).unwrap_or_default();
                report.fail(field(&format!("template.{}", problem.field)), None, format!("{}{at}", problem.message))
            })?;
            Some(node)
        }
        None => None,
    };
    let options = raw.options.map(|options| parse_options(report, index, options)).transpose()?;
    let config = StaticNodeGroupConfig {
        id,
        min_size: 0,
        max_size: 0,
        target_size: target_size.as_ref().map(|size| size.value),
        price_per_hour,
        node_selector,
        provider_id_prefix,
        template,
        options,
    };
    Ok(ParsedGroup { config, min_size, max_size, target_size, id_line })
}

fn parse_options(
    report: &Reporter<'_>,
    index: usize,
    raw: RawOptions,
) -> Result<NodeGroupOptionOverrides, ConfigError> {
    let field = |name: &str| format!("nodeGroups[{index}].options.{name}");
    Ok(NodeGroupOptionOverrides {
        scale_down_utilization_threshold: report
            .non_negative(&field("scaleDownUtilizationThreshold"), raw.scale_down_utilization_threshold)?,
        scale_down_gpu_utilization_threshold: report
            .non_negative(&field("scaleDownGpuUtilizationThreshold"), raw.scale_down_gpu_utilization_threshold)?,
        scale_down_unneeded_time: report.duration(&field("scaleDownUnneededTime"), raw.scale_down_unneeded_time)?,
        scale_down_unready_time: report.duration(&field("scaleDownUnreadyTime"), raw.scale_down_unready_time)?,
        max_node_provision_time: report.duration(&field("maxNodeProvisionTime"), raw.max_node_provision_time)?,
        max_node_startup_time: report.duration(&field("maxNodeStartupTime"), raw.max_node_startup_time)?,
        zero_or_max_node_scaling: raw.zero_or_max_node_scaling,
        allow_non_atomic_scale_up_to_max: raw.allow_non_atomic_scale_up_to_max,
        ignore_daemonsets_utilization: raw.ignore_daemon_sets_utilization,
    })
}

fn parse_pricing(report: &Reporter<'_>, raw: RawPricing) -> Result<UnitPrices, ConfigError> {
    let defaults = UnitPrices::default();
    Ok(UnitPrices {
        cpu_core_per_hour: report
            .non_negative("pricing.cpuCorePerHour", raw.cpu_core_per_hour)?
            .unwrap_or(defaults.cpu_core_per_hour),
        memory_gib_per_hour: report
            .non_negative("pricing.memoryGiBPerHour", raw.memory_gib_per_hour)?
            .unwrap_or(defaults.memory_gib_per_hour),
        gpu_per_hour: report.non_negative("pricing.gpuPerHour", raw.gpu_per_hour)?.unwrap_or(defaults.gpu_per_hour),
    })
}
