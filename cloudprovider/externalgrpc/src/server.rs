//! The server: any [`CloudProvider`] served over upstream's protocol, so a provider written in
//! Rust plugs into upstream's Go autoscaler (`--cloud-provider=externalgrpc`) unchanged, or into
//! this project's own client.
//!
//! ```ignore
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:8086").await?;
//! cloudprovider_externalgrpc::server::serve(provider, listener, Some(tls), shutdown_signal).await?;
//! ```
//!
//! Semantics follow upstream's example service:
//! - a node the provider does not manage gets a `NodeGroup` with an empty id;
//! - an unknown group id is NOT_FOUND, naming the id;
//! - `NotImplemented` is UNIMPLEMENTED (the client falls back to its defaults); other provider
//!   errors keep their text with a fitting code: INVALID_ARGUMENT for a refused request,
//!   NOT_FOUND for a group that does not exist, UNAVAILABLE for a failing cloud (or the code a
//!   chained gRPC provider reported);
//! - `GetOptions` answering "defaults" (`None`) gives a response without options, which Go's
//!   client, like ours, reads as "use the defaults";
//! - instance states and error classes use upstream's numbers (running 1, creating 2,
//!   deleting 3; OutOfResources 1, Other 99); an instance without status is sent as
//!   `unspecified` with an empty error, as upstream's wrapper does.
//!
//! Group lookups ask the provider's `node_groups()` on every call, so a provider's own caching
//! rules apply. Pricing and the GPU calls are synchronous in the provider trait; they run on
//! tokio's blocking pool so they may block (e.g. a provider that is itself a gRPC client).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use cloudprovider::{CloudProvider, CloudProviderError, NodeGroup, NodeGroupAutoscalingOptions};
pub use grpc_transport::ServerTls;
use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Code, Request, Response, Status};

use crate::convert::{node_from_wire, options_from_wire, timestamp_from_wire, wire_instance, wire_options};
use crate::proto;
use crate::proto::cloud_provider_server::{CloudProvider as CloudProviderService, CloudProviderServer};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("TLS settings of the externalgrpc server: {0}")]
    Tls(String),
    #[error("externalgrpc server on {address}: {message}")]
    Transport { address: String, message: String },
}

/// The service for `provider`, to add to a tonic router of your own.
pub fn service(provider: Arc<dyn CloudProvider>) -> CloudProviderServer<ProviderService> {
    CloudProviderServer::new(ProviderService { provider })
        // Matches the client: templates and large deletions fit.
        .max_decoding_message_size(64 << 20)
}

/// Serves `provider` on `listener` until `shutdown` completes (in-flight calls then finish).
/// With `tls`, clients must use TLS, and present a certificate signed by `client_ca_pem` when
/// it is set.
pub async fn serve(
    provider: Arc<dyn CloudProvider>,
    listener: TcpListener,
    tls: Option<ServerTls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let address = listener.local_addr().map_or_else(|_| "?".to_string(), |a: SocketAddr| a.to_string());
    let mut builder = Server::builder();
    if let Some(tls) = tls {
        tls.check().map_err(|e| ServeError::Tls(e.to_string()))?;
        builder = builder.tls_config(tls.to_tonic()).map_err(|e| ServeError::Tls(grpc_transport::error_chain(&e)))?;
    }
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    builder
        .add_service(service(provider))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| ServeError::Transport { address, message: grpc_transport::error_chain(&e) })
}

/// The generated service's implementation over a provider.
pub struct ProviderService {
    provider: Arc<dyn CloudProvider>,
}

impl ProviderService {
    async fn group(&self, id: &str) -> Result<Arc<dyn NodeGroup>, Status> {
        self.provider
            .node_groups()
            .await
            .into_iter()
            .find(|g| g.id() == id)
            .ok_or_else(|| Status::not_found(format!("node group {id:?} not found")))
    }

    fn pricing(&self) -> Result<Arc<dyn cloudprovider::PricingModel>, Status> {
        self.provider.pricing().map_err(status_of)
    }
}

/// A provider error as a status the Go client reads the same way.
fn status_of(error: CloudProviderError) -> Status {
    let message = error.to_string();
    match error {
        CloudProviderError::NotImplemented => Status::unimplemented(message),
        CloudProviderError::NodeGroupDoesNotExist(_) => Status::not_found(message),
        CloudProviderError::InvalidRequest(_) => Status::invalid_argument(message),
        CloudProviderError::AlreadyExist => Status::already_exists(message),
        CloudProviderError::IllegalConfiguration | CloudProviderError::Configuration(_) => {
            Status::failed_precondition(message)
        }
        CloudProviderError::Cloud { code, .. } => {
            let code = code.as_deref().and_then(code_from_name).unwrap_or(Code::Unavailable);
            Status::new(code, message)
        }
    }
}

/// The code a chained gRPC provider reported (`UNAVAILABLE`, …), when it is one.
fn code_from_name(name: &str) -> Option<Code> {
    (1..=16).map(Code::from_i32).find(|code| grpc_transport::code_name(*code) == name)
}

fn size_to_wire(size: usize, what: &str) -> Result<i32, Status> {
    i32::try_from(size).map_err(|_| Status::internal(format!("{what} {size} does not fit the protocol's int32")))
}

fn group_to_wire(group: &dyn NodeGroup) -> Result<proto::NodeGroup, Status> {
    Ok(proto::NodeGroup {
        id: group.id().to_string(),
        min_size: size_to_wire(group.min_size(), "minSize")?,
        max_size: size_to_wire(group.max_size(), "maxSize")?,
        debug: group.debug(),
    })
}

/// Runs a synchronous provider call off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Status> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Status::internal(format!("provider call failed: {e}")))
}

type Answer<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl CloudProviderService for ProviderService {
    async fn node_groups(&self, _: Request<proto::NodeGroupsRequest>) -> Answer<proto::NodeGroupsResponse> {
        let groups = self.provider.node_groups().await;
        let node_groups = groups.iter().map(|g| group_to_wire(g.as_ref())).collect::<Result<_, _>>()?;
        Ok(Response::new(proto::NodeGroupsResponse { node_groups }))
    }

    async fn node_group_for_node(
        &self,
        request: Request<proto::NodeGroupForNodeRequest>,
    ) -> Answer<proto::NodeGroupForNodeResponse> {
        let wire = request.into_inner().node.ok_or_else(|| Status::invalid_argument("the request has no node"))?;
        let node_group = match self.provider.node_group_for_node(&node_from_wire(&wire)).await.map_err(status_of)? {
            Some(group) => group_to_wire(group.as_ref())?,
            // An empty id: the autoscaler must ignore the node.
            None => proto::NodeGroup::default(),
        };
        Ok(Response::new(proto::NodeGroupForNodeResponse { node_group: Some(node_group) }))
    }

    async fn pricing_node_price(
        &self,
        request: Request<proto::PricingNodePriceRequest>,
    ) -> Answer<proto::PricingNodePriceResponse> {
        let pricing = self.pricing()?;
        let request = request.into_inner();
        let node = request.node.as_ref().ok_or_else(|| Status::invalid_argument("the request has no node"))?;
        let (start, end) = span(&request.start_timestamp, &request.end_timestamp)?;
        let node = node_from_wire(node);
        let price = blocking(move || pricing.node_price(&node, start, end)).await?.map_err(status_of)?;
        Ok(Response::new(proto::PricingNodePriceResponse { price }))
    }

    async fn pricing_pod_price(
        &self,
        request: Request<proto::PricingPodPriceRequest>,
    ) -> Answer<proto::PricingPodPriceResponse> {
        let pricing = self.pricing()?;
        let request = request.into_inner();
        if request.pod_bytes.is_empty() {
            return Err(Status::invalid_argument("the request has no pod_bytes"));
        }
        let pod = k8s_protobuf::pod_from_bytes(&request.pod_bytes)
            .map_err(|e| Status::invalid_argument(format!("pod_bytes: {e}")))?;
        let (start, end) = span(&request.start_timestamp, &request.end_timestamp)?;
        let price = blocking(move || pricing.pod_price(&pod, start, end)).await?.map_err(status_of)?;
        Ok(Response::new(proto::PricingPodPriceResponse { price }))
    }

    async fn gpu_label(&self, _: Request<proto::GpuLabelRequest>) -> Answer<proto::GpuLabelResponse> {
        let provider = self.provider.clone();
        let label = blocking(move || provider.gpu_label().to_string()).await?;
        Ok(Response::new(proto::GpuLabelResponse { label }))
    }

    async fn get_available_gpu_types(
        &self,
        _: Request<proto::GetAvailableGpuTypesRequest>,
    ) -> Answer<proto::GetAvailableGpuTypesResponse> {
        let provider = self.provider.clone();
        let types = blocking(move || provider.available_gpu_types()).await?;
        // Only the keys carry meaning; upstream's wrapper leaves the values empty too.
        let gpu_types = types.into_iter().map(|t| (t, prost_types::Any::default())).collect();
        Ok(Response::new(proto::GetAvailableGpuTypesResponse { gpu_types }))
    }

    async fn cleanup(&self, _: Request<proto::CleanupRequest>) -> Answer<proto::CleanupResponse> {
        self.provider.cleanup().await.map_err(status_of)?;
        Ok(Response::new(proto::CleanupResponse {}))
    }

    async fn refresh(&self, _: Request<proto::RefreshRequest>) -> Answer<proto::RefreshResponse> {
        self.provider.refresh().await.map_err(status_of)?;
        Ok(Response::new(proto::RefreshResponse {}))
    }

    async fn node_group_target_size(
        &self,
        request: Request<proto::NodeGroupTargetSizeRequest>,
    ) -> Answer<proto::NodeGroupTargetSizeResponse> {
        let group = self.group(&request.get_ref().id).await?;
        let size = group.target_size().await.map_err(status_of)?;
        Ok(Response::new(proto::NodeGroupTargetSizeResponse { target_size: size_to_wire(size, "targetSize")? }))
    }

    async fn node_group_increase_size(
        &self,
        request: Request<proto::NodeGroupIncreaseSizeRequest>,
    ) -> Answer<proto::NodeGroupIncreaseSizeResponse> {
        let request = request.into_inner();
        let group = self.group(&request.id).await?;
        let delta = usize::try_from(request.delta).ok().filter(|d| *d > 0).ok_or_else(|| {
            Status::invalid_argument(format!("size increase must be positive, got {}", request.delta))
        })?;
        group.increase_size(delta).await.map_err(status_of)?;
        Ok(Response::new(proto::NodeGroupIncreaseSizeResponse {}))
    }

    async fn node_group_delete_nodes(
        &self,
        request: Request<proto::NodeGroupDeleteNodesRequest>,
    ) -> Answer<proto::NodeGroupDeleteNodesResponse> {
        let request = request.into_inner();
        let group = self.group(&request.id).await?;
        let nodes: Vec<_> = request.nodes.iter().map(node_from_wire).collect();
        group.delete_nodes(&nodes).await.map_err(status_of)?;
        Ok(Response::new(proto::NodeGroupDeleteNodesResponse {}))
    }

    async fn node_group_decrease_target_size(
        &self,
        request: Request<proto::NodeGroupDecreaseTargetSizeRequest>,
    ) -> Answer<proto::NodeGroupDecreaseTargetSizeResponse> {
        let request = request.into_inner();
        let group = self.group(&request.id).await?;
        group.decrease_target_size(i64::from(request.delta)).await.map_err(status_of)?;
        Ok(Response::new(proto::NodeGroupDecreaseTargetSizeResponse {}))
    }

    async fn node_group_nodes(
        &self,
        request: Request<proto::NodeGroupNodesRequest>,
    ) -> Answer<proto::NodeGroupNodesResponse> {
        let group = self.group(&request.get_ref().id).await?;
        let instances = group.nodes().await.map_err(status_of)?;
        Ok(Response::new(proto::NodeGroupNodesResponse { instances: instances.iter().map(wire_instance).collect() }))
    }

    /// The template's Node only: the protocol has no room for its pods.
    async fn node_group_template_node_info(
        &self,
        request: Request<proto::NodeGroupTemplateNodeInfoRequest>,
    ) -> Answer<proto::NodeGroupTemplateNodeInfoResponse> {
        let group = self.group(&request.get_ref().id).await?;
        let template = group.template_node_info().await.map_err(status_of)?;
        Ok(Response::new(proto::NodeGroupTemplateNodeInfoResponse {
            node_bytes: k8s_protobuf::node_to_bytes(&template.node),
        }))
    }

    /// The request's defaults over this crate's own for what the protocol lacks.
    async fn node_group_get_options(
        &self,
        request: Request<proto::NodeGroupAutoscalingOptionsRequest>,
    ) -> Answer<proto::NodeGroupAutoscalingOptionsResponse> {
        let request = request.into_inner();
        let group = self.group(&request.id).await?;
        let wire_defaults = request.defaults.ok_or_else(|| Status::invalid_argument("the request has no defaults"))?;
        let defaults = options_from_wire(&wire_defaults, &NodeGroupAutoscalingOptions::default())
            .map_err(|e| Status::invalid_argument(format!("defaults: {e}")))?;
        let options = group.get_options(&defaults).await.map_err(status_of)?;
        Ok(Response::new(proto::NodeGroupAutoscalingOptionsResponse {
            node_group_autoscaling_options: options.as_ref().map(wire_options),
        }))
    }
}

fn span(
    start: &Option<prost_types::Timestamp>,
    end: &Option<prost_types::Timestamp>,
) -> Result<(k8s_openapi::jiff::Timestamp, k8s_openapi::jiff::Timestamp), Status> {
    let read = |t: &Option<prost_types::Timestamp>, field: &str| {
        let t = t.as_ref().ok_or_else(|| Status::invalid_argument(format!("the request has no {field}")))?;
        timestamp_from_wire(t).map_err(|e| Status::invalid_argument(format!("{field}: {e}")))
    };
    Ok((read(start, "startTimestamp")?, read(end, "endTimestamp")?))
}
