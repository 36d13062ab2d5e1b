//! Tests of the in-memory provider: the NodeGroup contract, delays, faults and prices.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;

use super::*;
use cloudprovider::{
    CloudProvider, CloudProviderError, InstanceErrorClass, InstanceState, NodeGroup, NodeGroupAutoscalingOptions,
    NodeTemplate,
};

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).unwrap()
}

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
}

fn template(cpu: &str, memory: &str) -> NodeTemplate {
    let mut node = Node::default();
    node.metadata.labels = Some([("pool".to_string(), "general".to_string())].into());
    node.status =
        Some(NodeStatus { capacity: Some(quantities(&[("cpu", cpu), ("memory", memory)])), ..Default::default() });
    NodeTemplate { node, pods: vec![] }
}

fn spec(id: &str, min: usize, max: usize, initial: usize) -> MemoryGroupSpec {
    let mut spec = MemoryGroupSpec::new(id, min, max, template("4", "16Gi"));
    spec.initial_size = initial;
    spec.provisioning_delay = Duration::from_secs(60);
    spec
}

fn provider(specs: Vec<MemoryGroupSpec>) -> (MemoryCloudProvider, SharedTime) {
    let time = SharedTime::new(t(0));
    let mut config = MemoryProviderConfig::new(specs);
    config.error_report_delay = Duration::from_secs(30);
    (MemoryCloudProvider::new(config, time.clone()).unwrap(), time)
}

fn node_with_provider_id(name: &str, id: &str) -> Node {
    Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(NodeSpec { provider_id: Some(id.to_string()), ..Default::default() }),
        status: None,
    }
}

fn registered(events: &[CloudEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            CloudEvent::NodeRegistered { instance_id, .. } => Some(instance_id.clone()),
            CloudEvent::InstanceDeleted { .. } => None,
        })
        .collect()
}

fn deleted(events: &[CloudEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            CloudEvent::InstanceDeleted { instance_id, .. } => Some(instance_id.clone()),
            CloudEvent::NodeRegistered { .. } => None,
        })
        .collect()
}

fn states(instances: &[cloudprovider::Instance]) -> Vec<(String, InstanceState, Option<String>)> {
    instances
        .iter()
        .map(|i| {
            let status = i.status.clone().unwrap();
            (i.id.clone(), status.state, status.error.map(|e| e.code))
        })
        .collect()
}

#[test]
fn config_errors_name_the_group_and_field() {
    let time = SharedTime::new(t(0));
    let bad = |specs: Vec<MemoryGroupSpec>| {
        MemoryCloudProvider::new(MemoryProviderConfig::new(specs), time.clone()).err().unwrap()
    };
    assert!(
        matches!(bad(vec![spec("g", 3, 2, 0)]), MemoryProviderError::InvalidGroup { index: 0, ref field, .. } if field == "minSize")
    );
    assert!(
        matches!(bad(vec![spec("g", 0, 2, 3)]), MemoryProviderError::InvalidGroup { ref field, .. } if field == "initialSize")
    );
    assert!(
        matches!(bad(vec![spec("Bad_Id", 0, 2, 0)]), MemoryProviderError::InvalidGroup { ref field, .. } if field == "id")
    );
    assert!(
        matches!(bad(vec![spec("g", 0, 2, 0), spec("g", 0, 2, 0)]), MemoryProviderError::InvalidGroup { index: 1, ref field, .. } if field == "id")
    );
    let mut no_resources = spec("g", 0, 2, 0);
    no_resources.template = NodeTemplate::default();
    let error = bad(vec![no_resources]);
    assert!(error.to_string().contains("groups[0].template.node.status.capacity"), "{error}");
}

#[tokio::test]
async fn initial_instances_register_at_start_as_ready_nodes() {
    let (provider, _) = provider(vec![spec("general", 0, 5, 2)]);
    let events = provider.drain_events();
    assert_eq!(registered(&events), ["memory://general/1", "memory://general/2"]);
    let CloudEvent::NodeRegistered { group, node, at, initial, .. } = &events[0] else { panic!("{events:?}") };
    assert_eq!((group.as_str(), *at, *initial), ("general", t(0), true));
    assert_eq!(node.metadata.name.as_deref(), Some("general-1"));
    assert_eq!(node.spec.as_ref().unwrap().provider_id.as_deref(), Some("memory://general/1"));
    assert_eq!(node.metadata.labels.as_ref().unwrap()["kubernetes.io/hostname"], "general-1");
    assert_eq!(node.metadata.labels.as_ref().unwrap()["pool"], "general");
    assert_eq!(node.metadata.creation_timestamp.as_ref().unwrap().0, t(0));
    let ready = node.status.as_ref().unwrap().conditions.as_ref().unwrap().iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(ready.status, "True");
    assert!(provider.drain_events().is_empty(), "each event is reported once");
    assert_eq!(provider.group("general").unwrap().target_size().await.unwrap(), 2);
}

#[tokio::test]
async fn increase_size_refuses_zero_and_growth_above_max() {
    let (provider, _) = provider(vec![spec("general", 0, 3, 2)]);
    let group = provider.group("general").unwrap();
    assert!(group.increase_size(0).await.is_err());
    let error = group.increase_size(2).await.unwrap_err();
    assert_eq!(error, CloudProviderError::InvalidRequest("size increase too large - desired:4 max:3".into()));
    assert_eq!(group.target_size().await.unwrap(), 2);
    group.increase_size(1).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 3);
}

#[tokio::test]
async fn launched_instances_register_after_the_provisioning_delay() {
    let (provider, time) = provider(vec![spec("general", 0, 5, 0)]);
    let group = provider.group("general").unwrap();
    time.advance_to(t(10));
    group.increase_size(2).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 2);
    assert_eq!(
        states(&group.nodes().await.unwrap()),
        [
            ("memory://general/1".to_string(), InstanceState::Creating, None),
            ("memory://general/2".to_string(), InstanceState::Creating, None)
        ]
    );
    time.advance_to(t(69));
    assert!(provider.drain_events().is_empty(), "not before the 60s delay");
    time.advance_to(t(100));
    let events = provider.drain_events();
    assert_eq!(registered(&events), ["memory://general/1", "memory://general/2"]);
    assert!(events.iter().all(|e| e.at() == t(70)), "registered when the delay ended: {events:?}");
    assert!(group.nodes().await.unwrap().iter().all(|i| i.status.as_ref().unwrap().state == InstanceState::Running));
}

#[tokio::test]
async fn delete_nodes_removes_instances_after_the_deletion_delay() {
    let time = SharedTime::new(t(0));
    let mut config = MemoryProviderConfig::new(vec![spec("general", 0, 5, 3)]);
    config.deletion_delay = Duration::from_secs(20);
    let provider = MemoryCloudProvider::new(config, time.clone()).unwrap();
    provider.drain_events();
    let group = provider.group("general").unwrap();
    let doomed = node_with_provider_id("general-2", "memory://general/2");
    group.delete_nodes(std::slice::from_ref(&doomed)).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 2);
    let listed = states(&group.nodes().await.unwrap());
    assert_eq!(listed[1], ("memory://general/2".to_string(), InstanceState::Deleting, None));
    assert_eq!(group.instances_not_deleting(), 2, "the deleting instance is not counted");
    assert!(provider.has_instance(&doomed).await.unwrap(), "still there while deleting");
    group.delete_nodes(std::slice::from_ref(&doomed)).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 2, "deleting a node twice changes nothing");
    time.advance_to(t(20));
    assert_eq!(deleted(&provider.drain_events()), ["memory://general/2"]);
    assert!(!provider.has_instance(&doomed).await.unwrap());
    assert_eq!(group.nodes().await.unwrap().len(), 2);
    assert_eq!(group.instances_not_deleting(), 2);
    group.delete_nodes(std::slice::from_ref(&doomed)).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 2, "deleting a gone instance is a no-op");
}

#[tokio::test]
async fn delete_nodes_refuses_nodes_of_other_groups_and_going_below_min() {
    let (provider, _) = provider(vec![spec("general", 2, 5, 3), spec("batch", 0, 5, 1)]);
    let group = provider.group("general").unwrap();
    let error = group.delete_nodes(&[node_with_provider_id("batch-1", "memory://batch/1")]).await.unwrap_err();
    assert!(error.to_string().contains("does not belong to node group general (it belongs to batch)"), "{error}");
    let mut no_id = node_with_provider_id("x", "");
    no_id.spec = None;
    assert!(group.delete_nodes(&[no_id]).await.is_err());
    let two = [
        node_with_provider_id("general-1", "memory://general/1"),
        node_with_provider_id("general-2", "memory://general/2"),
    ];
    let error = group.delete_nodes(&two).await.unwrap_err();
    assert!(error.to_string().starts_with("min size reached, nodes will not be deleted"), "{error}");
    assert_eq!(group.target_size().await.unwrap(), 3, "nothing deleted");
    group.force_delete_nodes(&two).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 1, "force deletion ignores min");
}

#[tokio::test]
async fn decrease_target_size_only_withdraws_instances_not_yet_running() {
    let (provider, time) = provider(vec![spec("general", 0, 10, 2)]);
    let group = provider.group("general").unwrap();
    group.increase_size(3).await.unwrap();
    assert!(group.decrease_target_size(1).await.is_err(), "delta must be negative");
    let error = group.decrease_target_size(-4).await.unwrap_err();
    assert_eq!(
        error,
        CloudProviderError::InvalidRequest(
            "attempt to delete existing nodes targetSize:5 delta:-4 existingNodes: 2".into()
        )
    );
    group.decrease_target_size(-2).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 3);
    let ids: Vec<String> = group.nodes().await.unwrap().into_iter().map(|i| i.id).collect();
    assert_eq!(
        ids,
        ["memory://general/1", "memory://general/2", "memory://general/3"],
        "newest requests withdrawn first"
    );
    time.advance_to(t(120));
    let events = provider.drain_events();
    assert_eq!(registered(&events), ["memory://general/1", "memory://general/2", "memory://general/3"]);
}

#[tokio::test]
async fn fail_increase_size_fails_the_given_number_of_calls() {
    let (provider, _) = provider(vec![spec("general", 0, 10, 0)]);
    let group = provider.group("general").unwrap();
    let error = CloudProviderError::Cloud { code: Some("QuotaExceeded".into()), message: "quota".into() };
    provider.fail_increase_size("general", FaultCount::Times(1), error.clone()).unwrap();
    assert_eq!(group.increase_size(1).await.unwrap_err(), error);
    assert_eq!(group.target_size().await.unwrap(), 0);
    group.increase_size(1).await.unwrap();
    provider.fail_increase_size("general", FaultCount::Always, error.clone()).unwrap();
    for _ in 0..3 {
        assert_eq!(group.increase_size(1).await.unwrap_err(), error);
    }
    provider.clear_faults("general").unwrap();
    group.increase_size(1).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 2);
    assert!(matches!(
        provider.fail_increase_size("nope", FaultCount::Always, error),
        Err(MemoryProviderError::UnknownGroup(_))
    ));
}

#[tokio::test]
async fn partial_fulfilment_leaves_placeholders_that_report_out_of_resources() {
    let (provider, time) = provider(vec![spec("general", 0, 10, 0)]);
    let group = provider.group("general").unwrap();
    provider.partial_fulfilment("general", Fulfilment::Ratio(0.5)).unwrap();
    group.increase_size(5).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 5, "the request itself succeeds");
    time.advance_to(t(29));
    assert!(
        group.nodes().await.unwrap().iter().all(|i| i.status.as_ref().unwrap().error.is_none()),
        "not reported yet"
    );
    time.advance_to(t(60));
    assert_eq!(registered(&provider.drain_events()), ["memory://general/1", "memory://general/2"]);
    let instances = group.nodes().await.unwrap();
    let failed: Vec<_> = instances.iter().filter(|i| i.status.as_ref().unwrap().error.is_some()).collect();
    assert_eq!(failed.len(), 3);
    for instance in failed {
        let status = instance.status.as_ref().unwrap();
        assert_eq!(status.state, InstanceState::Creating);
        let error = status.error.as_ref().unwrap();
        assert_eq!(
            (error.class, error.code.as_str()),
            (InstanceErrorClass::OutOfResources, PLACEHOLDER_CANNOT_BE_FULFILLED)
        );
    }
    time.advance_to(t(10_000));
    assert!(provider.drain_events().is_empty(), "placeholders never register");
    // Deleting the placeholders (as the core does) lowers the target to what exists.
    let placeholders: Vec<Node> = (3..=5)
        .map(|n| node_with_provider_id(&format!("memory://general/{n}"), &format!("memory://general/{n}")))
        .collect();
    group.delete_nodes(&placeholders).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 2);
    assert!(provider.partial_fulfilment("general", Fulfilment::Ratio(1.5)).is_err());
}

#[tokio::test]
async fn atomic_increase_under_partial_fulfilment_launches_nothing() {
    let (provider, time) = provider(vec![spec("general", 0, 10, 0)]);
    let group = provider.group("general").unwrap();
    provider.partial_fulfilment("general", Fulfilment::Count(2)).unwrap();
    group.atomic_increase_size(3).await.unwrap();
    time.advance_to(t(100));
    assert!(provider.drain_events().is_empty());
    assert!(group.nodes().await.unwrap().iter().all(|i| i.status.as_ref().unwrap().error.is_some()));
}

#[tokio::test]
async fn never_registering_instances_run_but_never_become_nodes() {
    let (provider, time) = provider(vec![spec("general", 0, 10, 0)]);
    let group = provider.group("general").unwrap();
    provider.never_register("general", 1).unwrap();
    group.increase_size(2).await.unwrap();
    time.advance_to(t(3_600));
    assert_eq!(registered(&provider.drain_events()), ["memory://general/2"]);
    let listed = states(&group.nodes().await.unwrap());
    assert_eq!(listed[0], ("memory://general/1".to_string(), InstanceState::Running, None));
    assert_eq!(group.target_size().await.unwrap(), 2);
}

#[tokio::test]
async fn fail_delete_nodes_fails_the_given_number_of_calls() {
    let (provider, _) = provider(vec![spec("general", 0, 10, 2)]);
    let group = provider.group("general").unwrap();
    let error = CloudProviderError::cloud("TerminateInstanceInAutoScalingGroup failed");
    provider.fail_delete_nodes("general", FaultCount::Times(1), error.clone()).unwrap();
    let node = [node_with_provider_id("general-1", "memory://general/1")];
    assert_eq!(group.delete_nodes(&node).await.unwrap_err(), error);
    assert_eq!(group.target_size().await.unwrap(), 2);
    group.delete_nodes(&node).await.unwrap();
    assert_eq!(group.target_size().await.unwrap(), 1);
}

/// A slow call is carried out at once and answered late; dropping it (a cancelled loop) keeps
/// what was done; only the armed number of calls is slow.
#[tokio::test]
async fn slow_calls_are_carried_out_at_once_and_answered_late() {
    let (provider, _) = provider(vec![spec("general", 1, 10, 2)]);
    let group = provider.group("general").unwrap();
    // Far longer than the test may take: the call can only end by being dropped.
    let hour = Duration::from_secs(3_600);
    provider.slow_increase_size("general", FaultCount::Times(1), hour).unwrap();
    let slow = tokio::spawn({
        let group = group.clone();
        async move { group.increase_size(1).await }
    });
    let carried_out = async {
        while group.target_size().await.unwrap() != 3 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), carried_out).await.expect("the increase carried out at once");
    assert!(!slow.is_finished(), "its answer is held back");
    slow.abort();
    assert!(slow.await.unwrap_err().is_cancelled());
    assert_eq!(group.target_size().await.unwrap(), 3, "a dropped call keeps what it did");
    // The fault is spent: the next call answers at once.
    tokio::time::timeout(Duration::from_secs(10), group.increase_size(1)).await.expect("answered at once").unwrap();

    provider.slow_delete_nodes("general", FaultCount::Always, hour).unwrap();
    let node = [node_with_provider_id("general-1", "memory://general/1")];
    let answered = tokio::time::timeout(Duration::from_millis(200), group.delete_nodes(&node)).await;
    assert!(answered.is_err(), "the deletion's answer is held back");
    assert_eq!(group.target_size().await.unwrap(), 3, "but the deletion was carried out");
    provider.clear_faults("general").unwrap();
    assert!(matches!(
        provider.slow_delete_nodes("nope", FaultCount::Always, hour),
        Err(MemoryProviderError::UnknownGroup(_))
    ));
}

#[tokio::test]
async fn stock_out_fails_every_launch_requested_inside_its_window() {
    let (provider, time) = provider(vec![spec("general", 0, 10, 0)]);
    let group = provider.group("general").unwrap();
    provider.stock_out("general", t(100), t(200)).unwrap();
    group.increase_size(1).await.unwrap();
    time.advance_to(t(100));
    group.increase_size(2).await.unwrap();
    time.advance_to(t(200));
    group.increase_size(1).await.unwrap();
    time.advance_to(t(1_000));
    assert_eq!(registered(&provider.drain_events()), ["memory://general/1", "memory://general/4"]);
    let errors: Vec<Option<String>> = states(&group.nodes().await.unwrap()).into_iter().map(|(_, _, e)| e).collect();
    let code = Some(PLACEHOLDER_CANNOT_BE_FULFILLED.to_string());
    assert_eq!(errors, [None, code.clone(), code, None]);
    assert!(provider.stock_out("general", t(5), t(5)).is_err());
}

#[tokio::test]
async fn node_group_for_node_goes_by_provider_id() {
    let (provider, _) = provider(vec![spec("general", 0, 10, 1), spec("gen", 0, 10, 0)]);
    let found = provider.node_group_for_node(&node_with_provider_id("general-1", "memory://general/1")).await.unwrap();
    assert_eq!(found.unwrap().id(), "general");
    let found = provider.node_group_for_node(&node_with_provider_id("gen-7", "memory://gen/7")).await.unwrap();
    assert_eq!(found.unwrap().id(), "gen");
    assert!(provider.node_group_for_node(&node_with_provider_id("x", "aws:///i-1")).await.unwrap().is_none());
    assert!(provider.node_group_for_node(&node_with_provider_id("x", "memory://other/1")).await.unwrap().is_none());
    assert!(
        provider.has_instance(&node_with_provider_id("x", "aws:///i-1")).await.unwrap(),
        "not ours: assumed to exist"
    );
    assert!(!provider.has_instance(&node_with_provider_id("x", "memory://general/9")).await.unwrap());
}

/// The whole list at once answers what each node's own call does, in the nodes' order.
#[tokio::test]
async fn node_groups_for_nodes_answers_each_node_in_order() {
    let (provider, _) = provider(vec![spec("general", 0, 10, 1), spec("gen", 0, 10, 0)]);
    let nodes: Vec<Arc<Node>> = [("gen-7", "memory://gen/7"), ("x", "aws:///i-1"), ("general-1", "memory://general/1")]
        .into_iter()
        .map(|(name, id)| Arc::new(node_with_provider_id(name, id)))
        .collect();
    let ids: Vec<Option<String>> = provider
        .node_groups_for_nodes(&nodes)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.map(|g| g.id().to_string()))
        .collect();
    assert_eq!(ids, [Some("gen".to_string()), None, Some("general".to_string())]);
}

#[tokio::test]
async fn template_and_options_come_from_the_spec() {
    let mut zero_or_max = spec("atomic", 0, 4, 0);
    zero_or_max.zero_or_max = true;
    let mut tuned = spec("tuned", 0, 4, 0);
    tuned.options = Some(NodeGroupAutoscalingOptions { scale_down_utilization_threshold: 0.7, ..Default::default() });
    let (provider, _) = provider(vec![spec("plain", 0, 4, 0), zero_or_max, tuned]);
    let defaults = NodeGroupAutoscalingOptions::default();
    assert_eq!(provider.group("plain").unwrap().get_options(&defaults).await.unwrap(), None);
    assert!(provider.group("atomic").unwrap().get_options(&defaults).await.unwrap().unwrap().zero_or_max_node_scaling);
    let tuned = provider.group("tuned").unwrap().get_options(&defaults).await.unwrap().unwrap();
    assert_eq!(tuned.scale_down_utilization_threshold, 0.7);
    let template = provider.group("plain").unwrap().template_node_info().await.unwrap();
    assert_eq!(template.node.metadata.name.as_deref(), Some("template-node-for-plain"));
    assert_eq!(template.node.status.unwrap().allocatable.unwrap()["cpu"], Quantity("4".into()));
}

#[test]
fn pricing_uses_group_price_else_unit_prices() {
    let mut priced = spec("priced", 0, 4, 1);
    priced.price_per_hour = Some(0.5);
    let (provider, _) = provider(vec![priced, spec("unpriced", 0, 4, 1)]);
    let pricing = provider.pricing().unwrap();
    let two_hours = (t(0), t(7_200));
    let node = node_with_provider_id("priced-1", "memory://priced/1");
    assert!((pricing.node_price(&node, two_hours.0, two_hours.1).unwrap() - 1.0).abs() < 1e-9);
    let mut copy = node_with_provider_id("template-node-for-priced-upcoming-0", "");
    copy.spec = None;
    assert!(
        (pricing.node_price(&copy, two_hours.0, two_hours.1).unwrap() - 1.0).abs() < 1e-9,
        "template copies price as their group"
    );
    let mut unpriced = node_with_provider_id("unpriced-1", "memory://unpriced/1");
    unpriced.status =
        Some(NodeStatus { capacity: Some(quantities(&[("cpu", "4"), ("memory", "16Gi")])), ..Default::default() });
    let expected = (4.0 * 0.033174 + 16.0 * 0.004446) * 2.0;
    assert!((pricing.node_price(&unpriced, two_hours.0, two_hours.1).unwrap() - expected).abs() < 1e-9);
    let pod = Pod {
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(&[("cpu", "500m"), ("memory", "1Gi")])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let expected = (0.5 * 0.033174 + 0.004446) * 2.0;
    assert!((pricing.pod_price(&pod, two_hours.0, two_hours.1).unwrap() - expected).abs() < 1e-9);
    assert!(pricing.node_price(&node, t(10), t(0)).is_err());
}

#[test]
fn gpu_nodes_are_recognised_by_label_or_allocatable() {
    let (provider, _) = provider(vec![spec("general", 0, 4, 0)]);
    let mut labelled = node_with_provider_id("a", "memory://general/1");
    labelled.metadata.labels = Some([(provider.gpu_label().to_string(), "tesla-t4".to_string())].into());
    assert_eq!(provider.node_gpu_config(&labelled).unwrap().gpu_type, "tesla-t4");
    let mut with_gpus = node_with_provider_id("b", "memory://general/2");
    with_gpus.status =
        Some(NodeStatus { allocatable: Some(quantities(&[("nvidia.com/gpu", "1")])), ..Default::default() });
    assert_eq!(provider.node_gpu_config(&with_gpus).unwrap().gpu_type, "");
    assert!(provider.node_gpu_config(&node_with_provider_id("c", "memory://general/3")).is_none());
}
