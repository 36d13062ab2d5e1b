//! Every rpc through our client and our server over loopback TCP, with the memory provider
//! behind the server: the client must answer what the provider answers when called directly.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use cloudprovider::{
    CloudProvider, CloudProviderError, InstanceErrorClass, InstanceState, NodeGroup, NodeGroupAutoscalingOptions,
};
use cloudprovider_externalgrpc::proto;
use cloudprovider_externalgrpc::proto::cloud_provider_client::CloudProviderClient;
use cloudprovider_static::{StaticCloudProvider, StaticConfig};
use k8s_openapi::api::core::v1::{Container, Node, NodeSpec, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::jiff::Timestamp;

use crate::common::*;

fn node(name: &str, provider_id: &str, labels: &[(&str, &str)]) -> Node {
    let mut node = Node::default();
    node.metadata.name = Some(name.to_string());
    node.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    node.spec = Some(NodeSpec { provider_id: Some(provider_id.to_string()), ..NodeSpec::default() });
    node
}

fn by_id(groups: &[Arc<dyn NodeGroup>]) -> BTreeMap<String, Arc<dyn NodeGroup>> {
    groups.iter().map(|g| (g.id().to_string(), g.clone())).collect()
}

fn pod() -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some("web-1".into());
    pod.metadata.namespace = Some("shop".into());
    pod.spec = Some(PodSpec {
        containers: vec![Container {
            name: "web".into(),
            resources: Some(ResourceRequirements {
                requests: Some(quantities(&[("cpu", "500m"), ("memory", "1Gi")])),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        }],
        ..PodSpec::default()
    });
    pod
}

#[test]
fn every_read_rpc_answers_what_the_provider_answers() {
    let (memory, _time) = memory_provider();
    let direct: Arc<dyn CloudProvider> = memory.clone();
    let server = TestServer::start(direct.clone(), None);
    let client = plaintext_client(server.address, "5s");
    let rt = runtime();
    rt.block_on(async {
        client.refresh().await.unwrap();
        assert_eq!(client.name(), "externalgrpc");

        let theirs = by_id(&direct.node_groups().await);
        let ours = by_id(&client.node_groups().await);
        assert_eq!(ours.keys().collect::<Vec<_>>(), ["general", "gpu", "spare"]);
        assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
        let defaults = defaults();
        for (id, group) in &ours {
            let direct_group = &theirs[id];
            assert_eq!(group.min_size(), direct_group.min_size(), "{id}");
            assert_eq!(group.max_size(), direct_group.max_size(), "{id}");
            assert_eq!(group.debug(), direct_group.debug(), "{id}");
            assert!(group.exist() && !group.autoprovisioned());
            assert_eq!(group.target_size().await.unwrap(), direct_group.target_size().await.unwrap(), "{id}");
            assert_eq!(group.nodes().await.unwrap(), direct_group.nodes().await.unwrap(), "{id}");
            assert_eq!(
                group.template_node_info().await.unwrap().node,
                direct_group.template_node_info().await.unwrap().node,
                "{id}"
            );
            assert_eq!(group.get_options(&defaults).await.unwrap(), direct_group.get_options(&defaults).await.unwrap());
        }
        // The general group has its own options; the others keep the defaults.
        let options = ours["general"].get_options(&defaults).await.unwrap().unwrap();
        assert_eq!(options.scale_down_utilization_threshold, 0.65);
        assert_eq!(options.scale_down_unready_time, Duration::from_secs(450));
        assert!(options.ignore_daemonsets_utilization);
        assert_eq!(ours["gpu"].get_options(&defaults).await.unwrap(), None);

        for n in [
            node("general-1", "memory://general/1", &[("pool", "general")]),
            node("gpu-1", "memory://gpu/1", &[("pool", "gpu")]),
            node("stray", "other://x", &[]),
        ] {
            let ours = client.node_group_for_node(&n).await.unwrap().map(|g| g.id().to_string());
            let theirs = direct.node_group_for_node(&n).await.unwrap().map(|g| g.id().to_string());
            assert_eq!(ours, theirs, "{:?}", n.metadata.name);
        }
        assert_eq!(
            client.node_group_for_node(&node("general-1", "memory://general/1", &[])).await.unwrap().unwrap().id(),
            "general"
        );

        assert_eq!(client.gpu_label(), direct.gpu_label());
        assert_eq!(client.available_gpu_types(), direct.available_gpu_types());
        let gpu_node = node("gpu-1", "memory://gpu/1", &[("nvidia.com/gpu.product", "tesla-t4")]);
        assert_eq!(client.node_gpu_config(&gpu_node), direct.node_gpu_config(&gpu_node));
        assert_eq!(client.resource_limiter().unwrap(), cloudprovider::ResourceLimiter::default());

        client.cleanup().await.unwrap();
    });

    // Pricing is synchronous: called from inside the client's runtime, as the expander does.
    let start: Timestamp = START.parse().unwrap();
    let end: Timestamp = "2026-01-02T02:30:00Z".parse().unwrap();
    let general = node("general-1", "memory://general/1", &[("pool", "general")]);
    let (ours, theirs) = rt.block_on(async {
        let ours = client.pricing().unwrap();
        let theirs = direct.pricing().unwrap();
        (
            (ours.node_price(&general, start, end).unwrap(), ours.pod_price(&pod(), start, end).unwrap()),
            (theirs.node_price(&general, start, end).unwrap(), theirs.pod_price(&pod(), start, end).unwrap()),
        )
    });
    assert_eq!(ours, theirs);
    assert!((ours.0 - 0.192 * 2.5).abs() < 1e-9, "{ours:?}");
}

#[test]
fn every_write_rpc_changes_the_provider_as_a_direct_call_would() {
    let (memory, time) = memory_provider();
    let direct: Arc<dyn CloudProvider> = memory.clone();
    let server = TestServer::start(direct.clone(), None);
    let client = plaintext_client(server.address, "5s");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let general = by_id(&client.node_groups().await)["general"].clone();
        let direct_general = memory.group("general").unwrap();

        general.increase_size(3).await.unwrap();
        assert_eq!(direct_general.target_size().await.unwrap(), 5);
        assert_eq!(general.target_size().await.unwrap(), 5);
        let creating = general.nodes().await.unwrap();
        assert_eq!(creating.iter().filter(|i| i.status.as_ref().unwrap().state == InstanceState::Creating).count(), 3);

        general.decrease_target_size(-1).await.unwrap();
        assert_eq!(direct_general.target_size().await.unwrap(), 4);

        time.advance_by(Duration::from_secs(600));
        let running = general.nodes().await.unwrap();
        assert!(running.iter().all(|i| i.status.as_ref().unwrap().state == InstanceState::Running), "{running:?}");

        general.delete_nodes(&[node("general-1", "memory://general/1", &[])]).await.unwrap();
        assert_eq!(direct_general.target_size().await.unwrap(), 3);
        let deleting = general.nodes().await.unwrap();
        // Gone, or on its way out (the memory cloud's deletion delay).
        let first = deleting.iter().find(|i| i.id == "memory://general/1");
        assert!(first.is_none_or(|i| i.status.as_ref().unwrap().state == InstanceState::Deleting), "{deleting:?}");
        assert_eq!(deleting, direct_general.nodes().await.unwrap());

        // A refusal keeps the provider's words and becomes a Cloud error with the gRPC code.
        let error = general.increase_size(100).await.unwrap_err();
        let CloudProviderError::Cloud { code, message } = &error else { panic!("{error:?}") };
        assert_eq!(code.as_deref(), Some("INVALID_ARGUMENT"), "{message}");
        assert!(message.starts_with(&format!("externalgrpc NodeGroupIncreaseSize(general) at {}: ", server.address)));
        let direct_error = direct_general.increase_size(100).await.unwrap_err().to_string();
        assert!(message.ends_with(&direct_error), "{message} / {direct_error}");

        let error = general.delete_nodes(&[node("gpu-1", "memory://gpu/1", &[])]).await.unwrap_err();
        assert!(
            matches!(&error, CloudProviderError::Cloud { code: Some(c), .. } if c == "INVALID_ARGUMENT"),
            "{error:?}"
        );
    });
}

#[test]
fn instance_errors_cross_with_upstreams_classes() {
    let (memory, time) = memory_provider();
    let start: Timestamp = START.parse().unwrap();
    memory.stock_out("spare", start, "2026-01-03T00:00:00Z".parse().unwrap()).unwrap();
    let server = TestServer::start(memory.clone(), None);
    let client = plaintext_client(server.address, "5s");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let spare = by_id(&client.node_groups().await)["spare"].clone();
        spare.increase_size(2).await.unwrap();
        time.advance_by(Duration::from_secs(3600));
        let instances = spare.nodes().await.unwrap();
        assert_eq!(instances, memory.group("spare").unwrap().nodes().await.unwrap());
        let error = instances[0].status.as_ref().unwrap().error.as_ref().expect("a stock-out error");
        assert_eq!(error.class, InstanceErrorClass::OutOfResources);
        assert!(!error.code.is_empty());
    });
}

#[test]
fn calls_outside_the_protocol_are_not_implemented_without_a_call() {
    let (memory, _time) = memory_provider();
    let server = TestServer::start(memory, None);
    let client = plaintext_client(server.address, "5s");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let group = client.node_groups().await[0].clone();
        let before: usize = ["NodeGroups", "Refresh", "NodeGroupIncreaseSize", "NodeGroupDeleteNodes"]
            .iter()
            .map(|r| server.counts.of(r))
            .sum();
        let n = node("general-1", "memory://general/1", &[]);
        assert_eq!(client.has_instance(&n).await, Err(CloudProviderError::NotImplemented));
        assert_eq!(client.available_machine_types().await, Err(CloudProviderError::NotImplemented));
        let none = BTreeMap::new();
        assert!(matches!(
            client.new_node_group("m5.large", &none, &none, &[], &BTreeMap::new()).await,
            Err(CloudProviderError::NotImplemented)
        ));
        assert_eq!(group.atomic_increase_size(1).await, Err(CloudProviderError::NotImplemented));
        assert_eq!(group.force_delete_nodes(&[n]).await, Err(CloudProviderError::NotImplemented));
        assert!(matches!(group.create().await, Err(CloudProviderError::NotImplemented)));
        assert_eq!(group.delete().await, Err(CloudProviderError::NotImplemented));
        let after: usize = ["NodeGroups", "Refresh", "NodeGroupIncreaseSize", "NodeGroupDeleteNodes"]
            .iter()
            .map(|r| server.counts.of(r))
            .sum();
        assert_eq!(before, after);
    });
}

const STATIC_CONFIG: &str = r#"
nodeGroups:
- id: bare
  minSize: 0
  maxSize: 3
  nodeSelector: {pool: bare}
"#;

/// A provider without templates and options: the server answers UNIMPLEMENTED / no options,
/// and the client falls back to the defaults, as upstream's.
#[test]
fn optional_rpcs_the_provider_lacks_fall_back_to_defaults() {
    let config = StaticConfig::from_yaml_str(STATIC_CONFIG, "static.yaml").unwrap();
    let provider = Arc::new(StaticCloudProvider::new(config, &[], Default::default()).unwrap());
    let server = TestServer::start(provider.clone(), None);
    let client = plaintext_client(server.address, "5s");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let group = client.node_groups().await[0].clone();
        assert_eq!(group.template_node_info().await, Err(CloudProviderError::NotImplemented));
        let direct_options = provider.group("bare").unwrap().get_options(&NodeGroupAutoscalingOptions::default()).await;
        let options = group.get_options(&NodeGroupAutoscalingOptions::default()).await;
        assert_eq!(options, Ok(None));
        assert_eq!(direct_options, Ok(None));
    });
}

/// Upstream's wrapper semantics, seen by a raw client: unknown ids are NOT_FOUND naming the id,
/// an unmanaged node gets an empty-id group, instances always carry a status.
#[test]
fn the_server_answers_unknown_groups_and_unmanaged_nodes_as_upstream() {
    let (memory, _time) = memory_provider();
    let server = TestServer::start(memory, None);
    runtime().block_on(async {
        let mut raw = CloudProviderClient::connect(format!("http://{}", server.address)).await.unwrap();
        let status =
            raw.node_group_target_size(proto::NodeGroupTargetSizeRequest { id: "nope".into() }).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::NotFound);
        assert!(status.message().contains("\"nope\""), "{}", status.message());

        let answer = raw
            .node_group_for_node(proto::NodeGroupForNodeRequest {
                node: Some(proto::ExternalGrpcNode { name: "stray".into(), ..Default::default() }),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answer.node_group.unwrap().id, "");

        let nodes = raw.node_group_nodes(proto::NodeGroupNodesRequest { id: "general".into() }).await.unwrap();
        for instance in nodes.into_inner().instances {
            let status = instance.status.unwrap();
            assert_eq!(status.instance_state, 1, "running is upstream's 1");
            assert_eq!(status.error_info.unwrap().error_code, "");
        }

        let status = raw
            .node_group_increase_size(proto::NodeGroupIncreaseSizeRequest { id: "general".into(), delta: -1 })
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);

        let status = raw
            .node_group_get_options(proto::NodeGroupAutoscalingOptionsRequest { id: "gpu".into(), defaults: None })
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        let options = raw
            .node_group_get_options(proto::NodeGroupAutoscalingOptionsRequest {
                id: "gpu".into(),
                defaults: Some(proto::NodeGroupAutoscalingOptions::default()),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(options.node_group_autoscaling_options, None, "no options: Go's client keeps its defaults");
    });
}
