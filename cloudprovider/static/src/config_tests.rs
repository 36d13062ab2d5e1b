//! Tests of the cloud-config file and its merge with `--nodes`.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::*;
use cloudprovider::pricing::UnitPrices;
use cloudprovider::{DEFAULT_GPU_LABEL, NodeGroupAutoscalingOptions, NodeGroupOptionOverrides};

const EXAMPLE: &str = r#"
nodeGroups:
- id: general
  minSize: 0
  maxSize: 10
  targetSize: 3
  pricePerHour: 0.096
  nodeSelector: {pool: general}
  providerIDPrefix: "static://general/"
  template:
    metadata: {labels: {pool: general}}
    spec: {taints: []}
    status: {capacity: {cpu: "4", memory: 16Gi, pods: "110"}, allocatable: {cpu: 3900m, memory: 15Gi, pods: "110"}}
  options:
    scaleDownUtilizationThreshold: 0.6
    scaleDownGpuUtilizationThreshold: 0.4
    scaleDownUnneededTime: 5m
    scaleDownUnreadyTime: 10m
    maxNodeProvisionTime: 20m
    zeroOrMaxNodeScaling: false
    ignoreDaemonSetsUtilization: true
gpuLabel: nvidia.com/gpu.product
pricing:
  cpuCorePerHour: 0.033174
  memoryGiBPerHour: 0.004446
  gpuPerHour: 0.7
"#;

fn parse(text: &str) -> Result<StaticConfig, ConfigError> {
    StaticConfig::from_yaml_str(text, "cloud.yaml")
}

fn parse_error(text: &str) -> ConfigError {
    parse(text).expect_err("the config should be refused")
}

fn flags(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| value.to_string()).collect()
}

#[test]
fn config_example_from_the_docs_parses() {
    let config = parse(EXAMPLE).unwrap();
    assert_eq!(config.node_groups.len(), 1);
    let group = &config.node_groups[0];
    assert_eq!((group.id.as_str(), group.min_size, group.max_size, group.target_size), ("general", 0, 10, Some(3)));
    assert_eq!(group.price_per_hour, Some(0.096));
    assert_eq!(group.node_selector["pool"], "general");
    assert_eq!(group.provider_id_prefix.as_deref(), Some("static://general/"));
    let template = group.template.as_ref().unwrap();
    assert_eq!(template.metadata.name.as_deref(), Some("template-node-for-general"));
    let allocatable = template.status.as_ref().unwrap().allocatable.as_ref().unwrap();
    assert_eq!(allocatable["cpu"], Quantity("3900m".into()));
    let options = group.options.as_ref().unwrap();
    assert_eq!(options.scale_down_unneeded_time, Some(Duration::from_secs(300)));
    assert_eq!(options.max_node_startup_time, None);
    assert_eq!(config.gpu_label, "nvidia.com/gpu.product");
    assert_eq!(config.pricing, UnitPrices::default());
}

#[test]
fn config_empty_file_is_an_empty_config() {
    assert_eq!(parse("").unwrap(), StaticConfig::default());
    assert_eq!(parse("# only a comment\n").unwrap(), StaticConfig::default());
}

#[test]
fn config_defaults_for_gpu_label_and_pricing() {
    let config = parse("nodeGroups: []\n").unwrap();
    assert_eq!(config.gpu_label, DEFAULT_GPU_LABEL);
    assert_eq!(config.pricing.cpu_core_per_hour, 0.033174);
    assert_eq!(config.pricing.memory_gib_per_hour, 0.004446);
    assert_eq!(config.pricing.gpu_per_hour, 0.7);
    let config = parse("gpuLabel: cloud.google.com/gke-accelerator\npricing: {gpuPerHour: 2}\n").unwrap();
    assert_eq!(config.gpu_label, "cloud.google.com/gke-accelerator");
    assert_eq!(config.pricing.gpu_per_hour, 2.0);
    assert_eq!(config.pricing.cpu_core_per_hour, 0.033174);
}

#[test]
fn config_unknown_key_is_an_error_naming_the_key_and_line() {
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n- id: b\n  maxSiz: 1\n");
    assert_eq!(error.field(), Some("nodeGroups[1].maxSiz"));
    assert_eq!(error.line(), Some(6));
    let message = error.to_string();
    assert!(message.starts_with("cloud.yaml:6: nodeGroups[1].maxSiz: unknown field `maxSiz`"), "{message}");
}

#[test]
fn config_unknown_top_level_and_option_keys_are_errors() {
    assert_eq!(parse_error("nodeGroup: []\n").field(), Some("nodeGroup"));
    let error =
        parse_error("nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n  options: {scaleDownTime: 5m}\n");
    assert_eq!(error.field(), Some("nodeGroups[0].options.scaleDownTime"));
    assert_eq!(parse_error("pricing: {cpuPerHour: 1}\n").field(), Some("pricing.cpuPerHour"));
}

#[test]
fn config_missing_id_is_an_error() {
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n- maxSize: 1\n");
    assert_eq!(error.field(), Some("nodeGroups[1]"));
    assert_eq!(error.line(), Some(5));
    assert!(error.to_string().contains("missing field `id`"), "{error}");
}

#[test]
fn config_empty_id_is_an_error() {
    let error = parse_error("nodeGroups:\n- id: ''\n  maxSize: 3\n  nodeSelector: {p: a}\n");
    assert_eq!(error.field(), Some("nodeGroups[0].id"));
}

#[test]
fn config_duplicate_id_is_an_error() {
    let text =
        "nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n- id: a\n  maxSize: 4\n  nodeSelector: {p: b}\n";
    let error = parse_error(text);
    assert_eq!(error.field(), Some("nodeGroups[1].id"));
    assert_eq!(error.line(), Some(5));
    assert!(error.to_string().contains(r#"duplicate node group id "a""#), "{error}");
}

#[test]
fn config_min_size_greater_than_max_size_is_an_error() {
    let error = parse_error("nodeGroups:\n- id: a\n  minSize: 5\n  maxSize: 3\n  nodeSelector: {p: a}\n");
    assert_eq!(error.field(), Some("nodeGroups[0].minSize"));
    assert_eq!(error.line(), Some(3));
    assert!(error.to_string().contains("minSize 5 is greater than maxSize 3"), "{error}");
}

#[test]
fn config_target_size_greater_than_max_size_is_an_error() {
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: 3\n  targetSize: 4\n  nodeSelector: {p: a}\n");
    assert_eq!(error.field(), Some("nodeGroups[0].targetSize"));
    assert_eq!(error.line(), Some(4));
}

#[test]
fn config_negative_numbers_are_errors() {
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: -1\n  nodeSelector: {p: a}\n");
    assert_eq!(error.field(), Some("nodeGroups[0].maxSize"));
    assert!(error.to_string().contains("must not be negative, got -1"), "{error}");
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: 1\n  pricePerHour: -0.5\n  nodeSelector: {p: a}\n");
    assert_eq!(error.field(), Some("nodeGroups[0].pricePerHour"));
    assert_eq!(parse_error("pricing: {memoryGiBPerHour: -1}\n").field(), Some("pricing.memoryGiBPerHour"));
    let error = parse_error(
        "nodeGroups:\n- id: a\n  maxSize: 1\n  nodeSelector: {p: a}\n  options: {scaleDownUtilizationThreshold: -0.1}\n",
    );
    assert_eq!(error.field(), Some("nodeGroups[0].options.scaleDownUtilizationThreshold"));
}

#[test]
fn config_wrong_type_names_the_field() {
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: many\n  nodeSelector: {p: a}\n");
    assert_eq!(error.field(), Some("nodeGroups[0].maxSize"));
    assert_eq!(error.line(), Some(3));
    assert_eq!(error.to_string(), "cloud.yaml:3: nodeGroups[0].maxSize: expected an integer");
}

#[test]
fn config_bad_duration_names_the_field() {
    let text = "nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n  options:\n    scaleDownUnneededTime: 5 minutes\n";
    let error = parse_error(text);
    assert_eq!(error.field(), Some("nodeGroups[0].options.scaleDownUnneededTime"));
    assert_eq!(error.line(), Some(6));
    assert!(error.to_string().contains("invalid duration \"5 minutes\""), "{error}");
}

#[test]
fn config_bad_quantity_names_the_field() {
    let text = "nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n  template:\n    status: {capacity: {cpu: 4, memory: 16GB}}\n";
    let error = parse_error(text);
    assert_eq!(error.field(), Some("nodeGroups[0].template.status.capacity.memory"));
    assert!(error.to_string().contains(r#"invalid quantity "16GB""#), "{error}");
    assert!(error.to_string().contains("template starts at line 6"), "{error}");
}

#[test]
fn config_template_type_error_names_the_field_and_line() {
    let text = "nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n  template:\n    status:\n      capacity:\n        cpu: [1]\n";
    let error = parse_error(text);
    assert_eq!(error.field(), Some("nodeGroups[0].template.status.capacity.cpu"));
    assert_eq!(error.line(), Some(8));
}

#[test]
fn config_unquoted_quantities_are_accepted() {
    let text = "nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n  template:\n    status:\n      capacity: {cpu: 4, memory: 1e9, pods: 110, ephemeral-storage: 0.5}\n      allocatable: {cpu: 3.5}\n";
    let config = parse(text).unwrap();
    let status = config.node_groups[0].template.as_ref().unwrap().status.as_ref().unwrap();
    let capacity = status.capacity.as_ref().unwrap();
    assert_eq!(capacity["cpu"], Quantity("4".into()));
    // serde-saphyr may respell a YAML float; the amount is what matters.
    assert_eq!(cloudprovider::quantity::quantity_value(&capacity["memory"].0), Ok(1e9));
    assert_eq!(capacity["pods"], Quantity("110".into()));
    assert_eq!(capacity["ephemeral-storage"], Quantity("0.5".into()));
    assert_eq!(status.allocatable.as_ref().unwrap()["cpu"], Quantity("3.5".into()));
}

#[test]
fn config_group_without_selector_or_prefix_is_an_error() {
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: 3\n");
    assert_eq!(error.field(), Some("nodeGroups[0]"));
    assert!(error.to_string().contains("no way to tell which nodes belong to it"), "{error}");
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {}\n");
    assert_eq!(error.field(), Some("nodeGroups[0].nodeSelector"));
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: 3\n  providerIDPrefix: ''\n");
    assert_eq!(error.field(), Some("nodeGroups[0].providerIDPrefix"));
}

#[test]
fn config_missing_max_size_needs_nodes_flag() {
    let text = "nodeGroups:\n- id: a\n  nodeSelector: {p: a}\n";
    let error = parse_error(text);
    assert_eq!(error.field(), Some("nodeGroups[0].maxSize"));
    let config = StaticConfig::from_yaml_str_with_nodes(text, "cloud.yaml", &flags(&["1:4:a"])).unwrap();
    assert_eq!((config.node_groups[0].min_size, config.node_groups[0].max_size), (1, 4));
}

#[test]
fn nodes_flag_overrides_file_bounds() {
    let text = "nodeGroups:\n- id: a\n  minSize: 0\n  maxSize: 3\n  nodeSelector: {p: a}\n- id: b\n  maxSize: 5\n  nodeSelector: {p: b}\n";
    let config = StaticConfig::from_yaml_str_with_nodes(text, "cloud.yaml", &flags(&["2:20:a"])).unwrap();
    assert_eq!((config.node_groups[0].min_size, config.node_groups[0].max_size), (2, 20));
    assert_eq!((config.node_groups[1].min_size, config.node_groups[1].max_size), (0, 5));
}

#[test]
fn nodes_flag_for_unknown_id_adds_a_group_matched_by_provider_id() {
    let text = "nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n";
    let config = StaticConfig::from_yaml_str_with_nodes(text, "cloud.yaml", &flags(&["1:5:extra"])).unwrap();
    let ids: Vec<&str> = config.node_groups.iter().map(|group| group.id.as_str()).collect();
    assert_eq!(ids, ["a", "extra"]);
    let extra = &config.node_groups[1];
    assert_eq!(extra.provider_id_prefix.as_deref(), Some("static://extra/"));
    assert!(extra.node_selector.is_empty());
    assert!(extra.template.is_none());
}

#[test]
fn nodes_flag_max_below_file_target_is_an_error() {
    let text = "nodeGroups:\n- id: a\n  maxSize: 10\n  targetSize: 8\n  nodeSelector: {p: a}\n";
    let error = StaticConfig::from_yaml_str_with_nodes(text, "cloud.yaml", &flags(&["1:5:a"])).unwrap_err();
    assert_eq!(error.field(), Some("nodeGroups[0].targetSize"));
    assert!(error.to_string().contains("(from --nodes=1:5:a)"), "{error}");
}

#[test]
fn load_without_file_uses_only_nodes_flags() {
    let config = StaticConfig::load(None, &flags(&["0:3:g"])).unwrap();
    assert_eq!(config.node_groups, vec![StaticNodeGroupConfig::from_spec(&parse_node_group_spec("0:3:g").unwrap())]);
    assert!(matches!(StaticConfig::load(None, &flags(&["3:0:g"])), Err(ConfigError::NodesFlag { .. })));
}

#[test]
fn load_reads_the_file_and_names_it_in_errors() {
    let directory = tempfile::Builder::new().prefix("static-provider-test-").tempdir().unwrap();
    let good = directory.path().join("good.yaml");
    std::fs::write(&good, "nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n").unwrap();
    assert_eq!(StaticConfig::load(Some(&good), &[]).unwrap().node_groups[0].max_size, 3);
    let bad = directory.path().join("bad.yaml");
    std::fs::write(&bad, "nodeGroups:\n- id: a\n  maxSize: 3\n").unwrap();
    let error = StaticConfig::load(Some(&bad), &[]).unwrap_err();
    assert!(error.to_string().starts_with(&bad.display().to_string()), "{error}");
    let missing = directory.path().join("missing.yaml");
    assert!(matches!(StaticConfig::load(Some(&missing), &[]), Err(ConfigError::Read { .. })));
}

#[test]
fn options_merged_over_defaults() {
    let overrides = NodeGroupOptionOverrides {
        scale_down_utilization_threshold: Some(0.6),
        scale_down_unneeded_time: Some(Duration::from_secs(300)),
        ignore_daemonsets_utilization: Some(true),
        ..Default::default()
    };
    let defaults = NodeGroupAutoscalingOptions::default();
    let merged = overrides.merged_over(&defaults);
    assert_eq!(merged.scale_down_utilization_threshold, 0.6);
    assert_eq!(merged.scale_down_unneeded_time, Duration::from_secs(300));
    assert!(merged.ignore_daemonsets_utilization);
    assert_eq!(merged.scale_down_gpu_utilization_threshold, defaults.scale_down_gpu_utilization_threshold);
    assert_eq!(merged.max_node_provision_time, defaults.max_node_provision_time);
    assert_eq!(merged.zero_or_max_node_scaling, defaults.zero_or_max_node_scaling);
}

#[test]
fn config_duplicate_key_is_an_error() {
    let error = parse_error("nodeGroups:\n- id: a\n  maxSize: 3\n  nodeSelector: {p: a}\n  maxSize: 4\n");
    assert_eq!(error.field(), Some("nodeGroups[0]"));
    assert_eq!(error.line(), Some(5));
    assert_eq!(error.to_string(), "cloud.yaml:5: nodeGroups[0]: duplicate mapping key: maxSize");
}
