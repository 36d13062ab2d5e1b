//! A server that is down, slow, or answering nonsense: clear errors, never a panic or a wrong
//! number, and recovery once the server is back.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cloudprovider::{CloudProvider, CloudProviderError, NodeGroupAutoscalingOptions};
use cloudprovider_externalgrpc::proto;
use cloudprovider_externalgrpc::proto::cloud_provider_server::{CloudProvider as Service, CloudProviderServer};
use k8s_openapi::api::core::v1::{Node, NodeSpec};
use tonic::{Request, Response, Status};

use crate::common::*;

fn cloud_error(error: CloudProviderError) -> (String, String) {
    match error {
        CloudProviderError::Cloud { code: Some(code), message } => (code, message),
        other => panic!("expected a Cloud error, got {other:?}"),
    }
}

fn free_address() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

#[test]
fn a_server_down_at_start_is_an_error_per_call_and_works_once_it_is_up() {
    let address = free_address();
    // Nothing listens yet: building still succeeds (no connection is made).
    let client = plaintext_client(address, "2s");
    let rt = runtime();
    let (code, message) = cloud_error(rt.block_on(client.refresh()).unwrap_err());
    assert_eq!(code, "UNAVAILABLE");
    assert!(message.starts_with(&format!("externalgrpc Refresh at {address}: unavailable")), "{message}");
    assert!(rt.block_on(client.node_groups()).is_empty(), "a failed NodeGroups gives no groups, as upstream");

    let (memory, _) = memory_provider();
    let server = TestServer::start_on(address, memory.clone(), None);
    rt.block_on(async {
        client.refresh().await.unwrap();
        assert_eq!(client.node_groups().await.len(), 3);
    });

    // Down in the middle of a session: errors, then success once it is back.
    let group = rt.block_on(client.node_groups())[0].clone();
    server.stop();
    let (code, message) = cloud_error(rt.block_on(group.target_size()).unwrap_err());
    assert_eq!(code, "UNAVAILABLE", "{message}");
    assert!(message.starts_with(&format!("externalgrpc NodeGroupTargetSize(general) at {address}: ")), "{message}");
    let _server = TestServer::start_on(address, memory, None);
    rt.block_on(async {
        let mut answer = group.target_size().await;
        // The channel reconnects on its own; give it a moment after a refused attempt.
        for _ in 0..50 {
            if answer.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            answer = group.target_size().await;
        }
        assert_eq!(answer, Ok(2));
        client.refresh().await.unwrap();
    });
}

/// Answers what it is told to, after `delay`; UNIMPLEMENTED for anything it is not told.
#[derive(Clone, Default)]
struct Scripted {
    delay: Duration,
    groups: Vec<proto::NodeGroup>,
    target_size: i32,
    instances: Vec<proto::Instance>,
    node_bytes: Vec<u8>,
    options: Option<proto::NodeGroupAutoscalingOptions>,
    group_for_node: Option<proto::NodeGroup>,
}

type Answer<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl Service for Scripted {
    async fn node_groups(&self, _: Request<proto::NodeGroupsRequest>) -> Answer<proto::NodeGroupsResponse> {
        tokio::time::sleep(self.delay).await;
        Ok(Response::new(proto::NodeGroupsResponse { node_groups: self.groups.clone() }))
    }
    async fn node_group_for_node(
        &self,
        _: Request<proto::NodeGroupForNodeRequest>,
    ) -> Answer<proto::NodeGroupForNodeResponse> {
        Ok(Response::new(proto::NodeGroupForNodeResponse { node_group: self.group_for_node.clone() }))
    }
    async fn pricing_node_price(
        &self,
        _: Request<proto::PricingNodePriceRequest>,
    ) -> Answer<proto::PricingNodePriceResponse> {
        Err(Status::unimplemented("no pricing"))
    }
    async fn pricing_pod_price(
        &self,
        _: Request<proto::PricingPodPriceRequest>,
    ) -> Answer<proto::PricingPodPriceResponse> {
        Err(Status::unimplemented("no pricing"))
    }
    async fn gpu_label(&self, _: Request<proto::GpuLabelRequest>) -> Answer<proto::GpuLabelResponse> {
        Ok(Response::new(proto::GpuLabelResponse { label: "example.com/gpu".into() }))
    }
    async fn get_available_gpu_types(
        &self,
        _: Request<proto::GetAvailableGpuTypesRequest>,
    ) -> Answer<proto::GetAvailableGpuTypesResponse> {
        Ok(Response::new(proto::GetAvailableGpuTypesResponse::default()))
    }
    async fn cleanup(&self, _: Request<proto::CleanupRequest>) -> Answer<proto::CleanupResponse> {
        Ok(Response::new(proto::CleanupResponse {}))
    }
    async fn refresh(&self, _: Request<proto::RefreshRequest>) -> Answer<proto::RefreshResponse> {
        tokio::time::sleep(self.delay).await;
        Ok(Response::new(proto::RefreshResponse {}))
    }
    async fn node_group_target_size(
        &self,
        _: Request<proto::NodeGroupTargetSizeRequest>,
    ) -> Answer<proto::NodeGroupTargetSizeResponse> {
        Ok(Response::new(proto::NodeGroupTargetSizeResponse { target_size: self.target_size }))
    }
    async fn node_group_increase_size(
        &self,
        _: Request<proto::NodeGroupIncreaseSizeRequest>,
    ) -> Answer<proto::NodeGroupIncreaseSizeResponse> {
        Err(Status::unavailable("connection refused"))
    }
    async fn node_group_delete_nodes(
        &self,
        _: Request<proto::NodeGroupDeleteNodesRequest>,
    ) -> Answer<proto::NodeGroupDeleteNodesResponse> {
        Err(Status::unimplemented("nope"))
    }
    async fn node_group_decrease_target_size(
        &self,
        _: Request<proto::NodeGroupDecreaseTargetSizeRequest>,
    ) -> Answer<proto::NodeGroupDecreaseTargetSizeResponse> {
        Err(Status::unimplemented("nope"))
    }
    async fn node_group_nodes(
        &self,
        _: Request<proto::NodeGroupNodesRequest>,
    ) -> Answer<proto::NodeGroupNodesResponse> {
        Ok(Response::new(proto::NodeGroupNodesResponse { instances: self.instances.clone() }))
    }
    async fn node_group_template_node_info(
        &self,
        _: Request<proto::NodeGroupTemplateNodeInfoRequest>,
    ) -> Answer<proto::NodeGroupTemplateNodeInfoResponse> {
        Ok(Response::new(proto::NodeGroupTemplateNodeInfoResponse { node_bytes: self.node_bytes.clone() }))
    }
    async fn node_group_get_options(
        &self,
        _: Request<proto::NodeGroupAutoscalingOptionsRequest>,
    ) -> Answer<proto::NodeGroupAutoscalingOptionsResponse> {
        match &self.options {
            Some(options) => Ok(Response::new(proto::NodeGroupAutoscalingOptionsResponse {
                node_group_autoscaling_options: Some(*options),
            })),
            None => Err(Status::unimplemented("no options")),
        }
    }
}

/// `service` on a loopback port of its own runtime; dropped with the returned guard.
struct Running {
    address: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

fn run(service: Scripted) -> Running {
    let runtime = runtime();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let address = listener.local_addr().unwrap();
    runtime.spawn(async move {
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let _ = tonic::transport::Server::builder()
            .add_service(CloudProviderServer::new(service))
            .serve_with_incoming(incoming)
            .await;
    });
    Running { address, _runtime: runtime }
}

fn group(id: &str, min: i32, max: i32) -> proto::NodeGroup {
    proto::NodeGroup { id: id.into(), min_size: min, max_size: max, debug: format!("{id} debug") }
}

#[test]
fn answers_slower_than_grpc_timeout_are_deadline_exceeded_after_about_the_timeout() {
    let server = run(Scripted { delay: Duration::from_secs(3), ..Scripted::default() });
    let client = plaintext_client(server.address, "300ms");
    let rt = runtime();
    let started = Instant::now();
    let (code, message) = cloud_error(rt.block_on(client.refresh()).unwrap_err());
    let elapsed = started.elapsed();
    assert_eq!(code, "DEADLINE_EXCEEDED", "{message}");
    assert!(message.contains("externalgrpc Refresh at"), "{message}");
    assert!(elapsed >= Duration::from_millis(290) && elapsed < Duration::from_millis(1500), "{elapsed:?}");
}

#[test]
fn impossible_sizes_are_clear_errors_not_numbers() {
    let server = run(Scripted {
        groups: vec![group("ok", 0, 3), group("negative", -1, 3), group("inverted", 5, 2)],
        target_size: -4,
        ..Scripted::default()
    });
    let client = plaintext_client(server.address, "2s");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let groups = client.node_groups().await;
        assert_eq!(groups.len(), 3);
        let (code, message) = cloud_error(groups[0].target_size().await.unwrap_err());
        assert_eq!(code, "INVALID_ANSWER");
        assert!(
            message.contains("NodeGroupTargetSize(ok)") && message.contains("targetSize -4 is negative"),
            "{message}"
        );
        let (_, message) = cloud_error(groups[1].target_size().await.unwrap_err());
        assert!(message.contains("\"negative\": minSize -1 is negative"), "{message}");
        let (_, message) = cloud_error(groups[2].increase_size(1).await.unwrap_err());
        assert!(message.contains("minSize 5 is greater than maxSize 2"), "{message}");
    });
}

#[test]
fn undecodable_node_bytes_and_unknown_states_are_clear_errors() {
    let instance = |state| proto::Instance {
        id: "i-1".into(),
        status: Some(proto::InstanceStatus { instance_state: state, error_info: None }),
    };
    let server = run(Scripted {
        groups: vec![group("g", 0, 3)],
        node_bytes: vec![0xff, 0xff, 0xff, 0x01],
        instances: vec![instance(1), instance(9)],
        ..Scripted::default()
    });
    let client = plaintext_client(server.address, "2s");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let group = client.node_groups().await[0].clone();
        let (_, message) = cloud_error(group.template_node_info().await.unwrap_err());
        assert!(message.contains("NodeGroupTemplateNodeInfo(g)") && message.contains("nodeBytes"), "{message}");
        let (_, message) = cloud_error(group.nodes().await.unwrap_err());
        assert!(message.contains("unknown instanceState 9"), "{message}");
    });
}

#[test]
fn unimplemented_optional_rpcs_fall_back_and_others_are_errors_with_the_code() {
    let server = run(Scripted { groups: vec![group("g", 0, 3)], ..Scripted::default() });
    let client = plaintext_client(server.address, "2s");
    let rt = runtime();
    rt.block_on(async {
        client.refresh().await.unwrap();
        let group = client.node_groups().await[0].clone();
        // Empty node bytes: upstream's "no template".
        assert_eq!(group.template_node_info().await, Err(CloudProviderError::NotImplemented));
        assert_eq!(
            group.get_options(&NodeGroupAutoscalingOptions::default()).await,
            Err(CloudProviderError::NotImplemented)
        );
        // Not optional: UNIMPLEMENTED stays an error.
        let (code, _) = cloud_error(group.delete_nodes(&[]).await.unwrap_err());
        assert_eq!(code, "UNIMPLEMENTED");
        let (code, message) = cloud_error(group.increase_size(1).await.unwrap_err());
        assert_eq!(code, "UNAVAILABLE");
        assert_eq!(
            message,
            format!("externalgrpc NodeGroupIncreaseSize(g) at {}: unavailable: connection refused", server.address)
        );
    });
    let pricing = client.pricing().unwrap();
    let node = Node::default();
    let now = "2026-01-01T00:00:00Z".parse().unwrap();
    assert_eq!(pricing.node_price(&node, now, now), Err(CloudProviderError::NotImplemented));
    assert_eq!(pricing.pod_price(&Default::default(), now, now), Err(CloudProviderError::NotImplemented));
}

#[test]
fn answers_with_out_of_range_options_are_refused() {
    let mut options =
        proto::NodeGroupAutoscalingOptions { scale_down_utilization_threshold: 1.5, ..Default::default() };
    let server = run(Scripted { groups: vec![group("g", 0, 3)], options: Some(options), ..Scripted::default() });
    let client = plaintext_client(server.address, "2s");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let group = client.node_groups().await[0].clone();
        let (_, message) = cloud_error(group.get_options(&NodeGroupAutoscalingOptions::default()).await.unwrap_err());
        assert!(message.contains("scaleDownUtilizationThreshold 1.5"), "{message}");
    });
    // Without durations, the defaults' durations stay (upstream would use zero).
    options.scale_down_utilization_threshold = 0.3;
    let server = run(Scripted { groups: vec![group("g", 0, 3)], options: Some(options), ..Scripted::default() });
    let client = plaintext_client(server.address, "2s");
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let group = client.node_groups().await[0].clone();
        let defaults = NodeGroupAutoscalingOptions::default();
        let got = group.get_options(&defaults).await.unwrap().unwrap();
        assert_eq!(got.scale_down_utilization_threshold, 0.3);
        assert_eq!(got.scale_down_unneeded_time, defaults.scale_down_unneeded_time);
        assert_eq!(got.max_node_startup_time, defaults.max_node_startup_time);
    });
}

#[test]
fn a_group_for_a_node_that_node_groups_did_not_list_is_usable_and_checked() {
    let server = run(Scripted {
        groups: vec![group("listed", 0, 3)],
        group_for_node: Some(group("unlisted", 1, 4)),
        target_size: 2,
        ..Scripted::default()
    });
    let client: Arc<dyn CloudProvider> = plaintext_client(server.address, "2s");
    let mut node = Node::default();
    node.metadata.name = Some("n1".into());
    node.spec = Some(NodeSpec { provider_id: Some("x://n1".into()), ..NodeSpec::default() });
    runtime().block_on(async {
        client.refresh().await.unwrap();
        let _ = client.node_groups().await;
        let group = client.node_group_for_node(&node).await.unwrap().unwrap();
        assert_eq!((group.id(), group.min_size(), group.max_size()), ("unlisted", 1, 4));
        assert_eq!(group.target_size().await, Ok(2));
    });
    let server = run(Scripted { group_for_node: Some(group("bad", 3, 1)), ..Scripted::default() });
    let client = plaintext_client(server.address, "2s");
    let (_, message) = cloud_error(runtime().block_on(client.node_group_for_node(&node)).unwrap_err());
    assert!(message.contains("NodeGroupForNode(n1)") && message.contains("greater"), "{message}");
}
