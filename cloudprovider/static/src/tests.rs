//! Tests of the provider and its node groups (upstream's NodeGroup contract).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;

use super::*;
use cloudprovider::{
    CloudProvider, CloudProviderError, DEFAULT_GPU_LABEL, InstanceState, NodeGroup, NodeGroupAutoscalingOptions,
    ResourceLimiter,
};

const CONFIG: &str = r#"
nodeGroups:
- id: general
  minSize: 1
  maxSize: 5
  pricePerHour: 0.5
  nodeSelector: {pool: general}
  template:
    status: {capacity: {cpu: 4, memory: 16Gi}}
  options:
    scaleDownUtilizationThreshold: 0.7
    scaleDownUnneededTime: 2m
- id: gpu
  minSize: 0
  maxSize: 3
  targetSize: 2
  nodeSelector: {pool: gpu}
  template:
    metadata: {labels: {nvidia.com/gpu.product: tesla-t4}}
    status: {capacity: {cpu: 8, memory: 32Gi, nvidia.com/gpu: 1}}
"#;

fn node(name: &str, provider_id: Option<&str>, labels: &[(&str, &str)]) -> Node {
    let mut node = Node::default();
    node.metadata.name = Some(name.to_string());
    node.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    node.spec = Some(NodeSpec { provider_id: provider_id.map(str::to_string), ..Default::default() });
    node
}

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
}

fn with_capacity(mut node: Node, pairs: &[(&str, &str)]) -> Node {
    node.status = Some(NodeStatus { capacity: Some(quantities(pairs)), ..Default::default() });
    node
}

fn general(name: &str) -> Node {
    node(name, Some(&format!("static://general/{name}")), &[("pool", "general")])
}

fn provider(nodes: &[Node], nodes_flags: &[&str]) -> StaticCloudProvider {
    let flags: Vec<String> = nodes_flags.iter().map(|flag| flag.to_string()).collect();
    let config = StaticConfig::from_yaml_str_with_nodes(CONFIG, "cloud.yaml", &flags).unwrap();
    StaticCloudProvider::new(config, nodes, ResourceLimiter::default()).unwrap()
}

fn group(provider: &StaticCloudProvider, id: &str) -> Arc<StaticNodeGroup> {
    provider.group(id).unwrap()
}

async fn instance_states(group: &StaticNodeGroup) -> Vec<(String, InstanceState)> {
    group.nodes().await.unwrap().into_iter().map(|i| (i.id, i.status.unwrap().state)).collect()
}

fn invalid_message(result: cloudprovider::Result<()>) -> String {
    match result {
        Err(CloudProviderError::InvalidRequest(message)) => message,
        other => panic!("expected InvalidRequest, got {other:?}"),
    }
}

fn hours(count: i64) -> (Timestamp, Timestamp) {
    (Timestamp::from_second(0).unwrap(), Timestamp::from_second(count * 3600).unwrap())
}

#[tokio::test]
async fn default_target_is_the_number_of_nodes_that_belong() {
    let nodes = [general("a"), general("b"), node("other", None, &[("pool", "none")])];
    let provider = provider(&nodes, &[]);
    assert_eq!(group(&provider, "general").target_size().await.unwrap(), 2);
    // `gpu` has targetSize 2 and no nodes.
    assert_eq!(group(&provider, "gpu").target_size().await.unwrap(), 2);
}

#[tokio::test]
async fn placeholders_stand_for_unregistered_instances() {
    let provider = provider(&[], &[]);
    let gpu = group(&provider, "gpu");
    let instances = gpu.nodes().await.unwrap();
    assert_eq!(instances.len(), 2);
    assert_eq!(instances[0].id, "static://gpu/placeholder-0");
    assert_eq!(instances[1].id, "static://gpu/placeholder-1");
    for instance in instances {
        let status = instance.status.unwrap();
        assert_eq!(status.state, InstanceState::Creating);
        assert_eq!(status.error, None);
    }
}

#[tokio::test]
async fn registered_nodes_are_running_instances_with_their_provider_id() {
    let nodes = [general("a"), node("plain", None, &[("pool", "general")])];
    let provider = provider(&nodes, &[]);
    let states = instance_states(&group(&provider, "general")).await;
    assert_eq!(
        states,
        [
            ("static:///plain".to_string(), InstanceState::Running),
            ("static://general/a".to_string(), InstanceState::Running)
        ]
    );
}

#[tokio::test]
async fn registering_node_fulfils_the_oldest_placeholder() {
    let provider = provider(&[], &[]);
    let gpu = group(&provider, "gpu");
    provider.observe_nodes(&[node("g1", Some("static://gpu/g1"), &[("pool", "gpu")])]);
    assert_eq!(gpu.target_size().await.unwrap(), 2);
    let states = instance_states(&gpu).await;
    assert_eq!(
        states,
        [
            ("static://gpu/g1".to_string(), InstanceState::Running),
            ("static://gpu/placeholder-1".to_string(), InstanceState::Creating)
        ]
    );
}

#[tokio::test]
async fn node_registering_under_a_placeholder_id_fulfils_that_placeholder() {
    let provider = provider(&[], &[]);
    let gpu = group(&provider, "gpu");
    provider.observe_nodes(&[node("p1", Some("static://gpu/placeholder-1"), &[("pool", "gpu")])]);
    assert_eq!(
        instance_states(&gpu).await,
        [
            ("static://gpu/placeholder-1".to_string(), InstanceState::Running),
            ("static://gpu/placeholder-0".to_string(), InstanceState::Creating)
        ]
    );
}

#[tokio::test]
async fn node_appearing_on_its_own_raises_the_target() {
    let provider = provider(&[general("a")], &[]);
    provider.observe_nodes(&[general("a"), general("b"), general("c")]);
    assert_eq!(group(&provider, "general").target_size().await.unwrap(), 3);
}

#[tokio::test]
async fn a_node_removed_by_an_operator_leaves_its_group_and_frees_its_place() {
    let provider = provider(&[general("a"), general("b"), general("c")], &[]);
    let general_group = group(&provider, "general");
    assert_eq!(general_group.target_size().await.unwrap(), 3);
    // `kubectl delete node b`: the group follows the cluster, no placeholder stands in for b.
    provider.observe_nodes(&[general("a"), general("c")]);
    assert_eq!(general_group.target_size().await.unwrap(), 2);
    let states = instance_states(&general_group).await;
    assert!(states.iter().all(|(_, state)| *state == InstanceState::Running), "{states:?}");
    // Through the trait, as the loop calls it.
    let nodes: Vec<Arc<Node>> = vec![Arc::new(general("a"))];
    CloudProvider::observe_nodes(&provider, &nodes);
    assert_eq!(general_group.target_size().await.unwrap(), 1);
}

#[tokio::test]
async fn increase_size_raises_target_and_adds_placeholders() {
    let provider = provider(&[general("a")], &[]);
    let general = group(&provider, "general");
    general.increase_size(2).await.unwrap();
    assert_eq!(general.target_size().await.unwrap(), 3);
    assert_eq!(general.nodes().await.unwrap().len(), 3);
    general.atomic_increase_size(1).await.unwrap();
    assert_eq!(general.target_size().await.unwrap(), 4);
}

#[tokio::test]
async fn increase_above_max_is_refused() {
    let provider = provider(&[general("a"), general("b")], &[]);
    let general = group(&provider, "general");
    assert_eq!(invalid_message(general.increase_size(4).await), "size increase too large - desired:6 max:5");
    assert_eq!(invalid_message(general.atomic_increase_size(4).await), "size increase too large - desired:6 max:5");
    assert_eq!(general.target_size().await.unwrap(), 2, "a refused increase changes nothing");
    general.increase_size(3).await.unwrap();
    assert_eq!(general.target_size().await.unwrap(), 5);
}

#[tokio::test]
async fn increase_by_zero_is_refused() {
    let provider = provider(&[], &[]);
    assert_eq!(invalid_message(group(&provider, "gpu").increase_size(0).await), "size increase must be positive");
}

#[tokio::test]
async fn delete_nodes_lowers_target_and_marks_instances_deleting() {
    let nodes = [general("a"), general("b")];
    let provider = provider(&nodes, &[]);
    let general = group(&provider, "general");
    general.delete_nodes(&nodes[..1]).await.unwrap();
    assert_eq!(general.target_size().await.unwrap(), 1);
    let states = instance_states(&general).await;
    assert!(states.contains(&("static://general/a".to_string(), InstanceState::Deleting)), "{states:?}");
    assert!(!provider.has_instance(&nodes[0]).await.unwrap());
    assert!(provider.has_instance(&nodes[1]).await.unwrap());
    // The node object is still there: it stays deleting and does not raise the target again.
    provider.observe_nodes(&nodes);
    assert_eq!(general.target_size().await.unwrap(), 1);
    // Once it is gone, it is forgotten.
    provider.observe_nodes(&nodes[1..]);
    assert_eq!(instance_states(&general).await, [("static://general/b".to_string(), InstanceState::Running)]);
}

#[tokio::test]
async fn delete_below_min_is_refused() {
    let nodes = [general("a"), general("b")];
    let provider = provider(&nodes, &[]);
    let general = group(&provider, "general");
    let message = invalid_message(general.delete_nodes(&nodes).await);
    assert!(message.starts_with("min size reached, nodes will not be deleted"), "{message}");
    assert_eq!(general.target_size().await.unwrap(), 2, "a refused deletion changes nothing");
}

#[tokio::test]
async fn force_delete_ignores_min_size() {
    let nodes = [general("a"), general("b")];
    let provider = provider(&nodes, &[]);
    let general = group(&provider, "general");
    general.force_delete_nodes(&nodes).await.unwrap();
    assert_eq!(general.target_size().await.unwrap(), 0);
}

#[tokio::test]
async fn delete_of_a_foreign_node_is_refused() {
    let nodes = [general("a"), general("b"), node("g1", None, &[("pool", "gpu")]), node("stray", None, &[])];
    let provider = provider(&nodes, &[]);
    let general = group(&provider, "general");
    let message = invalid_message(general.delete_nodes(&nodes[2..3]).await);
    assert_eq!(message, "node g1 (instance static:///g1) does not belong to node group general (it belongs to gpu)");
    let message = invalid_message(general.force_delete_nodes(&[nodes[0].clone(), nodes[3].clone()]).await);
    assert!(message.starts_with("node stray (instance static:///stray) does not belong"), "{message}");
    assert_eq!(general.target_size().await.unwrap(), 2, "nothing is deleted when one node is foreign");
}

#[tokio::test]
async fn deleting_an_unregistered_placeholder_lowers_the_target() {
    let provider = provider(&[], &[]);
    let gpu = group(&provider, "gpu");
    // The core deletes long-unregistered instances through fake nodes named after the instance.
    let fake = node("static://gpu/placeholder-0", Some("static://gpu/placeholder-0"), &[]);
    let owner = provider.node_group_for_node(&fake).await.unwrap().unwrap();
    assert_eq!(owner.id(), "gpu");
    gpu.delete_nodes(&[fake]).await.unwrap();
    assert_eq!(gpu.target_size().await.unwrap(), 1);
    assert_eq!(instance_states(&gpu).await, [("static://gpu/placeholder-1".to_string(), InstanceState::Creating)]);
}

#[tokio::test]
async fn decrease_target_size_cannot_remove_registered_nodes() {
    let provider = provider(&[node("g1", Some("static://gpu/g1"), &[("pool", "gpu")])], &[]);
    let gpu = group(&provider, "gpu");
    // Target 2, one registered: only the placeholder can go.
    let message = invalid_message(gpu.decrease_target_size(-2).await);
    assert_eq!(message, "attempt to delete existing nodes targetSize:2 delta:-2 existingNodes: 1");
    gpu.decrease_target_size(-1).await.unwrap();
    assert_eq!(gpu.target_size().await.unwrap(), 1);
    assert_eq!(instance_states(&gpu).await, [("static://gpu/g1".to_string(), InstanceState::Running)]);
}

#[tokio::test]
async fn decrease_target_size_needs_a_negative_delta_and_drops_newest_placeholders() {
    let provider = provider(&[], &[]);
    let gpu = group(&provider, "gpu");
    assert!(invalid_message(gpu.decrease_target_size(0).await).starts_with("size decrease must be negative"));
    gpu.increase_size(1).await.unwrap();
    gpu.decrease_target_size(-1).await.unwrap();
    let ids: Vec<String> = gpu.nodes().await.unwrap().into_iter().map(|instance| instance.id).collect();
    assert_eq!(ids, ["static://gpu/placeholder-0", "static://gpu/placeholder-1"]);
}

#[tokio::test]
async fn node_group_for_node_follows_membership() {
    let provider = provider(&[], &["0:4:flag-only"]);
    let found = |node: Node| {
        let provider = &provider;
        async move { provider.node_group_for_node(&node).await.unwrap().map(|group| group.id().to_string()) }
    };
    assert_eq!(found(general("a")).await.as_deref(), Some("general"));
    assert_eq!(found(node("f", Some("static://flag-only/f"), &[])).await.as_deref(), Some("flag-only"));
    assert_eq!(found(node("n", Some("static://flag-only/n"), &[("pool", "gpu")])).await.as_deref(), Some("flag-only"));
    assert_eq!(found(node("x", Some("aws:///i-1"), &[("pool", "other")])).await, None);
}

/// The whole list at once answers what each node's own call does, in the nodes' order.
#[tokio::test]
async fn node_groups_for_nodes_answers_each_node_in_order() {
    let provider = provider(&[], &["0:4:flag-only"]);
    let nodes: Vec<Arc<Node>> = [
        node("x", Some("aws:///i-1"), &[("pool", "other")]),
        general("a"),
        node("f", Some("static://flag-only/f"), &[]),
    ]
    .into_iter()
    .map(Arc::new)
    .collect();
    let ids = |groups: Vec<Option<Arc<dyn NodeGroup>>>| -> Vec<Option<String>> {
        groups.into_iter().map(|g| g.map(|g| g.id().to_string())).collect()
    };
    let mut one_by_one = Vec::new();
    for node in &nodes {
        one_by_one.push(provider.node_group_for_node(node).await.unwrap());
    }
    assert_eq!(ids(provider.node_groups_for_nodes(&nodes).await.unwrap()), ids(one_by_one));
    assert_eq!(
        ids(provider.node_groups_for_nodes(&nodes).await.unwrap()),
        [None, Some("general".to_string()), Some("flag-only".to_string())]
    );
}

#[tokio::test]
async fn template_comes_from_the_file_or_is_not_implemented() {
    let provider = provider(&[], &["0:4:flag-only"]);
    let template = group(&provider, "gpu").template_node_info().await.unwrap();
    assert!(template.pods.is_empty());
    let labels = template.node.metadata.labels.unwrap();
    assert_eq!(labels["pool"], "gpu");
    assert_eq!(labels["kubernetes.io/hostname"], "template-node-for-gpu");
    let missing = group(&provider, "flag-only").template_node_info().await;
    assert_eq!(missing.unwrap_err(), CloudProviderError::NotImplemented);
}

#[tokio::test]
async fn nodes_flag_overrides_bounds_of_file_group() {
    let provider = provider(&[], &["2:9:general"]);
    let general = group(&provider, "general");
    assert_eq!((general.min_size(), general.max_size()), (2, 9));
    assert_eq!(general.debug(), "general (2:9)");
}

#[tokio::test]
async fn group_basics_follow_upstream() {
    let provider = provider(&[], &[]);
    let gpu = group(&provider, "gpu");
    assert!(gpu.exist());
    assert!(!gpu.autoprovisioned());
    assert_eq!(gpu.create().await.unwrap_err(), CloudProviderError::NotImplemented);
    assert_eq!(gpu.delete().await.unwrap_err(), CloudProviderError::NotImplemented);
    assert_eq!(gpu.debug(), "gpu (0:3)");
    assert_eq!(provider.name(), "static");
    assert_eq!(provider.node_groups().await.len(), 2);
    provider.refresh().await.unwrap();
    provider.cleanup().await.unwrap();
}

#[tokio::test]
async fn options_are_merged_over_defaults_only_for_groups_that_set_them() {
    let provider = provider(&[], &[]);
    let defaults = NodeGroupAutoscalingOptions::default();
    let merged = group(&provider, "general").get_options(&defaults).await.unwrap().unwrap();
    assert_eq!(merged.scale_down_utilization_threshold, 0.7);
    assert_eq!(merged.scale_down_unneeded_time, std::time::Duration::from_secs(120));
    assert_eq!(merged.scale_down_unready_time, defaults.scale_down_unready_time);
    assert_eq!(group(&provider, "gpu").get_options(&defaults).await.unwrap(), None);
}

#[tokio::test]
async fn resource_limiter_is_the_one_given() {
    let limiter = ResourceLimiter {
        min: BTreeMap::from([("cpu".to_string(), 1)]),
        max: BTreeMap::from([("cpu".to_string(), 100)]),
    };
    let config = StaticConfig::from_yaml_str(CONFIG, "cloud.yaml").unwrap();
    let provider = StaticCloudProvider::new(config, &[], limiter.clone()).unwrap();
    assert_eq!(provider.resource_limiter().unwrap(), limiter);
}

#[test]
fn constructor_refuses_inconsistent_config_built_in_code() {
    let mut config = StaticConfig::from_yaml_str(CONFIG, "cloud.yaml").unwrap();
    config.node_groups[1].id = "general".to_string();
    let error = StaticCloudProvider::new(config, &[], ResourceLimiter::default()).err().unwrap();
    assert_eq!(error.field(), Some("nodeGroups[1].id"));
    let mut config = StaticConfig::from_yaml_str(CONFIG, "cloud.yaml").unwrap();
    config.node_groups[0].min_size = 7;
    let error = StaticCloudProvider::new(config, &[], ResourceLimiter::default()).err().unwrap();
    assert_eq!(error.field(), Some("nodeGroups[0].minSize"));
}

#[test]
fn pricing_uses_the_group_price_per_hour() {
    let provider = provider(&[], &[]);
    let pricing = provider.pricing().unwrap();
    let (start, end) = hours(3);
    let node = with_capacity(general("a"), &[("cpu", "64"), ("memory", "256Gi")]);
    assert!((pricing.node_price(&node, start, end).unwrap() - 1.5).abs() < 1e-12);
    // A template copy named by the core after the group counts for the group.
    let copy = with_capacity(node_named("template-node-for-general-1234"), &[("cpu", "4")]);
    assert!((pricing.node_price(&copy, start, end).unwrap() - 1.5).abs() < 1e-12);
}

fn node_named(name: &str) -> Node {
    node(name, None, &[])
}

#[test]
fn pricing_falls_back_to_per_unit_prices() {
    let provider = provider(&[], &[]);
    let pricing = provider.pricing().unwrap();
    let (start, end) = hours(2);
    // The gpu group has no pricePerHour: 8 cores, 32 GiB, 1 GPU at the default unit prices.
    let node = with_capacity(
        node("g", None, &[("pool", "gpu")]),
        &[("cpu", "8"), ("memory", "32Gi"), ("nvidia.com/gpu", "1")],
    );
    let expected = (8.0 * 0.033174 + 32.0 * 0.004446 + 0.7) * 2.0;
    assert!((pricing.node_price(&node, start, end).unwrap() - expected).abs() < 1e-9);
    // Without capacity, allocatable is priced.
    let mut stray = node_named("stray");
    stray.status = Some(NodeStatus { allocatable: Some(quantities(&[("cpu", "2000m")])), ..Default::default() });
    assert!((pricing.node_price(&stray, start, end).unwrap() - 2.0 * 0.033174 * 2.0).abs() < 1e-9);
}

#[test]
fn pod_price_uses_summed_container_requests() {
    let provider = provider(&[], &[]);
    let pricing = provider.pricing().unwrap();
    let container = |cpu: &str, memory: &str| Container {
        resources: Some(ResourceRequirements {
            requests: Some(quantities(&[("cpu", cpu), ("memory", memory)])),
            ..Default::default()
        }),
        ..Default::default()
    };
    let pod = Pod {
        spec: Some(PodSpec {
            containers: vec![container("500m", "1Gi"), container("1500m", "3Gi")],
            ..Default::default()
        }),
        ..Default::default()
    };
    let (start, end) = hours(1);
    let expected = 2.0 * 0.033174 + 4.0 * 0.004446;
    assert!((pricing.pod_price(&pod, start, end).unwrap() - expected).abs() < 1e-9);
    assert!(pricing.pod_price(&pod, end, start).is_err(), "a period ending before it starts is refused");
}

#[test]
fn gpu_node_detected_by_label() {
    let provider = provider(&[], &[]);
    let gpu_node = node("g", None, &[("nvidia.com/gpu.product", "tesla-t4")]);
    let config = provider.node_gpu_config(&gpu_node).unwrap();
    assert_eq!(config.label, "nvidia.com/gpu.product");
    assert_eq!(config.gpu_type, "tesla-t4");
    assert_eq!(config.extended_resource_name, "nvidia.com/gpu");
}

#[test]
fn gpu_node_detected_by_allocatable() {
    let provider = provider(&[], &[]);
    let mut gpu_node = node_named("g");
    gpu_node.status =
        Some(NodeStatus { allocatable: Some(quantities(&[("nvidia.com/gpu", "2")])), ..Default::default() });
    assert_eq!(provider.node_gpu_config(&gpu_node).unwrap().gpu_type, "");
    let mut no_gpus = node_named("n");
    no_gpus.status =
        Some(NodeStatus { allocatable: Some(quantities(&[("nvidia.com/gpu", "0")])), ..Default::default() });
    assert_eq!(provider.node_gpu_config(&no_gpus), None);
    assert_eq!(provider.node_gpu_config(&node_named("plain")), None);
}

#[test]
fn gpu_types_come_from_templates() {
    let provider = provider(&[], &[]);
    assert_eq!(provider.gpu_label(), DEFAULT_GPU_LABEL);
    assert_eq!(provider.available_gpu_types(), ["tesla-t4"]);
}
