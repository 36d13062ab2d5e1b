//! The client: a [`CloudProvider`] whose every answer comes from a provider service over
//! upstream's protocol.
//!
//! Upstream's caching, exactly:
//! - `NodeGroups`, non-empty `NodeGroupForNode` answers and each group's template are kept until
//!   the next [`CloudProvider::refresh`] (which clears them, then calls `Refresh`);
//! - `GPULabel` and `GetAvailableGPUTypes` are kept for the life of the process;
//! - min, max and debug come from the `NodeGroups` (or `NodeGroupForNode`) answer;
//! - everything else is asked every time, with one deadline (`grpc_timeout`) and no retry.
//!
//! Unlike upstream's client, `NodeGroupForNode` calls for different nodes run concurrently (no
//! lock is held across a call): the core asks for every node at once, 32 in flight.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use cloudprovider::quantity::quantity_value;
use cloudprovider::{
    BuildError, CloudProvider, CloudProviderError, GPU_RESOURCE, GpuConfig, Instance, NodeGroup,
    NodeGroupAutoscalingOptions, NodeTemplate, PricingModel, ResourceLimiter, Result,
};
use grpc_transport::{BlockingBridge, code_name, code_text, request_with_deadline, with_deadline};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use tonic::transport::Channel;
use tonic::{Code, Request, Response, Status};

use crate::config::ExternalGrpcConfig;
use crate::convert::{instance_from_wire, options_from_wire, sizes_from_wire, wire_node, wire_options, wire_timestamp};
use crate::proto;
use crate::proto::cloud_provider_client::CloudProviderClient;

type Client = CloudProviderClient<Channel>;

/// What the provider, its groups and its pricing share: one channel on one bridge.
struct Shared {
    client: Client,
    address: String,
    timeout: Duration,
    bridge: BlockingBridge,
}

/// Why a call failed, before it is worded for the caller.
enum CallError {
    Status(Status),
    /// The answer arrived but cannot be used (negative sizes, undecodable bytes, …).
    Answer(String),
}

impl From<Status> for CallError {
    fn from(status: Status) -> CallError {
        CallError::Status(status)
    }
}

impl Shared {
    /// Runs one rpc on the bridge with the deadline (sent to the server, and enforced here).
    async fn call<Req, Resp, F, Fut>(&self, message: Req, method: F) -> std::result::Result<Resp, Status>
    where
        Req: Send + 'static,
        Resp: Send + 'static,
        F: FnOnce(Client, Request<Req>) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<Response<Resp>, Status>> + Send + 'static,
    {
        let future = self.prepare(message, method);
        self.bridge.run(future).await.unwrap_or_else(|e| Err(Status::internal(e.to_string())))
    }

    /// Same, for synchronous callers (pricing, the GPU label): waits on the bridge.
    fn call_blocking<Req, Resp, F, Fut>(&self, message: Req, method: F) -> std::result::Result<Resp, Status>
    where
        Req: Send + 'static,
        Resp: Send + 'static,
        F: FnOnce(Client, Request<Req>) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<Response<Resp>, Status>> + Send + 'static,
    {
        let future = self.prepare(message, method);
        // The future ends itself at the deadline; the margin only covers a stuck runtime.
        match self.bridge.block_on(self.timeout + Duration::from_secs(1), future) {
            Ok(outcome) => outcome,
            Err(grpc_transport::BridgeError::Timeout(_)) => {
                Err(Status::deadline_exceeded(format!("no answer within {:?}", self.timeout)))
            }
            Err(e) => Err(Status::internal(e.to_string())),
        }
    }

    fn prepare<Req, Resp, F, Fut>(
        &self,
        message: Req,
        method: F,
    ) -> impl Future<Output = std::result::Result<Resp, Status>> + Send + 'static
    where
        Req: Send + 'static,
        Resp: Send + 'static,
        F: FnOnce(Client, Request<Req>) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<Response<Resp>, Status>> + Send + 'static,
    {
        let client = self.client.clone();
        let deadline = self.timeout;
        let request = request_with_deadline(message, deadline);
        with_deadline(deadline, async move { method(client, request).await.map(Response::into_inner) })
    }

    /// `externalgrpc NodeGroupIncreaseSize(pool-a) at 10.0.0.1:8086: unavailable: …`, with the
    /// status code's canonical name as the error code. `optional` rpcs answered UNIMPLEMENTED
    /// are `NotImplemented`, so the core falls back to its defaults.
    fn error(&self, rpc: &str, subject: Option<&str>, optional: bool, error: CallError) -> CloudProviderError {
        let call = match subject {
            Some(subject) => format!("externalgrpc {rpc}({subject}) at {}", self.address),
            None => format!("externalgrpc {rpc} at {}", self.address),
        };
        match error {
            CallError::Status(status) if optional && status.code() == Code::Unimplemented => {
                CloudProviderError::NotImplemented
            }
            CallError::Status(status) => {
                let error = CloudProviderError::Cloud {
                    code: Some(code_name(status.code()).to_string()),
                    message: format!("{call}: {}", code_text(&status)),
                };
                tracing::debug!("{error}");
                error
            }
            CallError::Answer(message) => CloudProviderError::Cloud {
                code: Some("INVALID_ANSWER".to_string()),
                message: format!("{call}: invalid answer: {message}"),
            },
        }
    }
}

/// `--cloud-provider=externalgrpc`: a provider service reached over upstream's protocol.
pub struct ExternalGrpcCloudProvider {
    shared: Arc<Shared>,
    resource_limiter: ResourceLimiter,
    /// `NodeGroups` since the last refresh. An async lock: the first caller of a loop asks and
    /// the others wait for its answer instead of asking too.
    node_groups: tokio::sync::Mutex<Option<Vec<Arc<ExternalGrpcNodeGroup>>>>,
    /// Non-empty `NodeGroupForNode` answers, by node name + providerID (upstream's key).
    node_group_for_node: Mutex<HashMap<String, NodeOwner>>,
    gpu_label: OnceLock<String>,
    gpu_types: OnceLock<Vec<String>>,
    /// One process-lifetime fetch at a time (GPU label and types).
    lifetime_fetch: Mutex<()>,
}

impl fmt::Debug for ExternalGrpcCloudProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalGrpcCloudProvider")
            .field("address", &self.shared.address)
            .field("timeout", &self.shared.timeout)
            .finish()
    }
}

impl ExternalGrpcCloudProvider {
    /// A provider for `config`, connecting on the first call: a service that is down now does
    /// not stop the autoscaler from starting. Fails only when the TLS settings are unusable
    /// (`Config`) or the client's thread cannot start (`Unavailable`).
    pub fn new(
        config: &ExternalGrpcConfig,
        resource_limiter: ResourceLimiter,
    ) -> std::result::Result<ExternalGrpcCloudProvider, BuildError> {
        let bridge = BlockingBridge::start("externalgrpc").map_err(|e| BuildError::Unavailable(e.to_string()))?;
        let channel = {
            let _runtime = bridge.handle().enter();
            grpc_transport::lazy_channel(&config.address, config.tls.as_ref(), config.grpc_timeout)
                .map_err(|e| BuildError::Config(e.to_string()))?
        };
        let client = CloudProviderClient::new(channel)
            // Templates are single nodes; a few MiB is plenty, but match Go's 4 MiB default
            // with room for large label sets.
            .max_decoding_message_size(64 << 20);
        Ok(ExternalGrpcCloudProvider {
            shared: Arc::new(Shared { client, address: config.address.clone(), timeout: config.grpc_timeout, bridge }),
            resource_limiter,
            node_groups: tokio::sync::Mutex::new(None),
            node_group_for_node: Mutex::new(HashMap::new()),
            gpu_label: OnceLock::new(),
            gpu_types: OnceLock::new(),
            lifetime_fetch: Mutex::new(()),
        })
    }

    /// The server's address, as configured.
    pub fn address(&self) -> &str {
        &self.shared.address
    }

    fn group_from_wire(&self, wire: &proto::NodeGroup) -> ExternalGrpcNodeGroup {
        let sizes = sizes_from_wire(wire).map_err(|message| {
            self.shared.error(
                "NodeGroups",
                None,
                false,
                CallError::Answer(format!("node group {:?}: {message}", wire.id)),
            )
        });
        ExternalGrpcNodeGroup {
            shared: self.shared.clone(),
            id: wire.id.clone(),
            sizes,
            debug: wire.debug.clone(),
            template: tokio::sync::Mutex::new(None),
        }
    }

    /// The remembered group of the node with `key`: the group object of this refresh, else the
    /// group of the current `NodeGroups` answer with the remembered id. None when the node must
    /// be asked about (never answered, or its group is no longer listed).
    async fn cached_for_node(&self, key: &str) -> Option<Arc<ExternalGrpcNodeGroup>> {
        let id = {
            let mut cache = self.node_group_for_node.lock().ok()?;
            let owner = cache.get_mut(key)?;
            owner.asked = true;
            if let Some(group) = &owner.group {
                return Some(group.clone());
            }
            owner.id.clone()
        };
        self.node_groups().await;
        let listed = self.node_groups.lock().await.as_ref()?.iter().find(|g| g.id == id).cloned();
        let mut cache = self.node_group_for_node.lock().ok()?;
        match listed {
            Some(group) => {
                if let Some(owner) = cache.get_mut(key) {
                    owner.group = Some(group.clone());
                }
                Some(group)
            }
            None => {
                cache.remove(key);
                None
            }
        }
    }

    fn fetch_gpu_label(&self) -> std::result::Result<String, CloudProviderError> {
        self.shared
            .call_blocking(proto::GpuLabelRequest {}, |mut c, r| async move { c.gpu_label(r).await })
            .map(|answer| answer.label)
            .map_err(|status| self.shared.error("GPULabel", None, false, status.into()))
    }

    fn fetch_gpu_types(&self) -> std::result::Result<Vec<String>, CloudProviderError> {
        let answer = self
            .shared
            .call_blocking(proto::GetAvailableGpuTypesRequest {}, |mut c, r| async move {
                c.get_available_gpu_types(r).await
            })
            .map_err(|status| self.shared.error("GetAvailableGPUTypes", None, false, status.into()))?;
        let mut types: Vec<String> = answer.gpu_types.into_keys().collect();
        types.sort();
        Ok(types)
    }
}

#[async_trait]
impl CloudProvider for ExternalGrpcCloudProvider {
    fn name(&self) -> &str {
        crate::PROVIDER_NAME
    }

    /// The groups of the last `NodeGroups` answer since the refresh. As upstream's, a failed
    /// call is logged and gives no groups (and is asked again on the next call).
    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        let mut cache = self.node_groups.lock().await;
        if cache.is_none() {
            match self.shared.call(proto::NodeGroupsRequest {}, |mut c, r| async move { c.node_groups(r).await }).await
            {
                Ok(answer) => {
                    let groups = answer.node_groups.iter().map(|g| Arc::new(self.group_from_wire(g))).collect();
                    *cache = Some(groups);
                }
                Err(status) => {
                    tracing::error!("{}", self.shared.error("NodeGroups", None, false, status.into()));
                    return Vec::new();
                }
            }
        }
        cache.iter().flatten().map(|g| g.clone() as Arc<dyn NodeGroup>).collect()
    }

    async fn node_group_for_node(&self, node: &Node) -> Result<Option<Arc<dyn NodeGroup>>> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let provider_id = node.spec.as_ref().and_then(|s| s.provider_id.clone()).unwrap_or_default();
        // Upstream's key: the name and the providerID (empty in some edge cases) together.
        let key = format!("{name}{provider_id}");
        if let Some(group) = self.cached_for_node(&key).await {
            return Ok(Some(group));
        }
        let request = proto::NodeGroupForNodeRequest { node: Some(wire_node(node)) };
        let answer = self
            .shared
            .call(request, |mut c, r| async move { c.node_group_for_node(r).await })
            .await
            .map_err(|status| self.shared.error("NodeGroupForNode", Some(&name), false, status.into()))?;
        let Some(wire) = answer.node_group.filter(|g| !g.id.is_empty()) else {
            // Not managed; not cached, as upstream.
            return Ok(None);
        };
        // The group object of the `NodeGroups` answer when there is one (it shares the template
        // cache); else a group made from this answer: a server may name groups it did not list.
        let listed = self
            .node_groups
            .try_lock()
            .ok()
            .and_then(|groups| groups.as_ref().and_then(|groups| groups.iter().find(|g| g.id == wire.id).cloned()));
        let group = match listed {
            Some(group) => group,
            None => {
                sizes_from_wire(&wire).map_err(|message| {
                    self.shared.error(
                        "NodeGroupForNode",
                        Some(&name),
                        false,
                        CallError::Answer(format!("node group {:?}: {message}", wire.id)),
                    )
                })?;
                Arc::new(self.group_from_wire(&wire))
            }
        };
        if let Ok(mut cache) = self.node_group_for_node.lock() {
            cache.insert(key, NodeOwner { id: group.id.clone(), group: Some(group.clone()), asked: true });
        }
        Ok(Some(group))
    }

    /// Always a pricing model, as upstream's: a service without pricing answers UNIMPLEMENTED
    /// to each price, which is `NotImplemented` here.
    fn pricing(&self) -> Result<Arc<dyn PricingModel>> {
        Ok(Arc::new(ExternalGrpcPricing { shared: self.shared.clone() }))
    }

    fn resource_limiter(&self) -> Result<ResourceLimiter> {
        Ok(self.resource_limiter.clone())
    }

    /// Asked once for the process (a synchronous call on the bridge); a failure is logged,
    /// gives `""` and is asked again next time, as upstream's.
    fn gpu_label(&self) -> &str {
        if let Some(label) = self.gpu_label.get() {
            return label;
        }
        let _one_at_a_time = self.lifetime_fetch.lock();
        if let Some(label) = self.gpu_label.get() {
            return label;
        }
        match self.fetch_gpu_label() {
            Ok(label) => {
                let _ = self.gpu_label.set(label);
            }
            Err(error) => tracing::error!("{error}"),
        }
        self.gpu_label.get().map_or("", String::as_str)
    }

    /// Asked once for the process, as [`Self::gpu_label`]; only the answer's keys matter.
    fn available_gpu_types(&self) -> Vec<String> {
        if let Some(types) = self.gpu_types.get() {
            return types.clone();
        }
        let _one_at_a_time = self.lifetime_fetch.lock();
        if let Some(types) = self.gpu_types.get() {
            return types.clone();
        }
        match self.fetch_gpu_types() {
            Ok(types) => {
                let _ = self.gpu_types.set(types.clone());
                types
            }
            Err(error) => {
                tracing::error!("{error}");
                Vec::new()
            }
        }
    }

    /// Upstream's rule: a node has GPUs when it carries the provider's GPU label or has
    /// `nvidia.com/gpu` allocatable.
    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig> {
        let label = self.gpu_label();
        let gpu_type = node.metadata.labels.as_ref().and_then(|labels| labels.get(label)).filter(|_| !label.is_empty());
        let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref()).and_then(|a| a.get(GPU_RESOURCE));
        let has_gpus = allocatable.is_some_and(|q| quantity_value(&q.0).is_ok_and(|count| count > 0.0));
        (gpu_type.is_some() || has_gpus).then(|| GpuConfig {
            label: label.to_string(),
            gpu_type: gpu_type.cloned().unwrap_or_default(),
            extended_resource_name: GPU_RESOURCE.to_string(),
        })
    }

    async fn cleanup(&self) -> Result<()> {
        self.shared
            .call(proto::CleanupRequest {}, |mut c, r| async move { c.cleanup(r).await })
            .await
            .map(|_| ())
            .map_err(|status| self.shared.error("Cleanup", None, false, status.into()))
    }

    /// Forgets the groups and their templates, then calls `Refresh`. Nodes' groups are kept by
    /// id for the nodes asked about since the last refresh (see [`NodeOwner`]).
    async fn refresh(&self) -> Result<()> {
        *self.node_groups.lock().await = None;
        if let Ok(mut cache) = self.node_group_for_node.lock() {
            cache.retain(|_, owner| std::mem::take(&mut owner.asked));
            for owner in cache.values_mut() {
                owner.group = None;
            }
        }
        self.shared
            .call(proto::RefreshRequest {}, |mut c, r| async move { c.refresh(r).await })
            .await
            .map(|_| ())
            .map_err(|status| self.shared.error("Refresh", None, false, status.into()))
    }
}

/// The group a `NodeGroupForNode` answer named for a node.
///
/// Upstream forgets these answers at every `Refresh` and asks again for every node each loop
/// (one rpc per node per loop). We keep the group's id across refreshes: an instance does not
/// move between node groups, so while the group is still listed by `NodeGroups` the answer
/// stands, and a loop over a settled cluster sends no `NodeGroupForNode` at all. A node whose
/// group is no longer listed is asked about again; a node not asked about between two refreshes
/// (gone from the cluster) is forgotten; a node whose providerID changes has a new key. Empty
/// answers (not managed) are never kept, as upstream: a new instance may not be known yet.
struct NodeOwner {
    id: String,
    /// The group object of the current refresh (shares its template cache).
    group: Option<Arc<ExternalGrpcNodeGroup>>,
    /// Asked about since the last refresh.
    asked: bool,
}

/// A node group of the provider service. Made afresh from every `NodeGroups` answer, so its
/// template cache lasts until the next refresh, as upstream's.
pub struct ExternalGrpcNodeGroup {
    shared: Arc<Shared>,
    id: String,
    /// min and max, or why the answer's sizes cannot be used (then every call fails with it).
    sizes: Result<(usize, usize)>,
    debug: String,
    template: tokio::sync::Mutex<Option<NodeTemplate>>,
}

impl fmt::Debug for ExternalGrpcNodeGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalGrpcNodeGroup").field("id", &self.id).field("sizes", &self.sizes).finish()
    }
}

impl ExternalGrpcNodeGroup {
    /// The group's sizes are usable: a group with a refused answer fails every call with it.
    fn checked(&self) -> Result<()> {
        self.sizes.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    fn error(&self, rpc: &str, optional: bool, error: impl Into<CallError>) -> CloudProviderError {
        self.shared.error(rpc, Some(&self.id), optional, error.into())
    }
}

impl From<String> for CallError {
    fn from(message: String) -> CallError {
        CallError::Answer(message)
    }
}

#[async_trait]
impl NodeGroup for ExternalGrpcNodeGroup {
    fn id(&self) -> &str {
        &self.id
    }

    /// 0 for a group whose answer was refused; every call of that group fails, so the core
    /// never acts on it.
    fn min_size(&self) -> usize {
        self.sizes.as_ref().map_or(0, |s| s.0)
    }

    fn max_size(&self) -> usize {
        self.sizes.as_ref().map_or(0, |s| s.1)
    }

    fn debug(&self) -> String {
        self.debug.clone()
    }

    async fn target_size(&self) -> Result<usize> {
        self.checked()?;
        let request = proto::NodeGroupTargetSizeRequest { id: self.id.clone() };
        let answer = self
            .shared
            .call(request, |mut c, r| async move { c.node_group_target_size(r).await })
            .await
            .map_err(|s| self.error("NodeGroupTargetSize", false, s))?;
        usize::try_from(answer.target_size).map_err(|_| {
            self.error("NodeGroupTargetSize", false, format!("targetSize {} is negative", answer.target_size))
        })
    }

    async fn increase_size(&self, delta: usize) -> Result<()> {
        self.checked()?;
        let delta = i32::try_from(delta)
            .map_err(|_| CloudProviderError::InvalidRequest(format!("increase of {delta} nodes is too large")))?;
        let request = proto::NodeGroupIncreaseSizeRequest { delta, id: self.id.clone() };
        self.shared
            .call(request, |mut c, r| async move { c.node_group_increase_size(r).await })
            .await
            .map(|_| ())
            .map_err(|s| self.error("NodeGroupIncreaseSize", false, s))
    }

    async fn delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.checked()?;
        let request =
            proto::NodeGroupDeleteNodesRequest { nodes: nodes.iter().map(wire_node).collect(), id: self.id.clone() };
        self.shared
            .call(request, |mut c, r| async move { c.node_group_delete_nodes(r).await })
            .await
            .map(|_| ())
            .map_err(|s| self.error("NodeGroupDeleteNodes", false, s))
    }

    async fn decrease_target_size(&self, delta: i64) -> Result<()> {
        self.checked()?;
        let delta = i32::try_from(delta)
            .map_err(|_| CloudProviderError::InvalidRequest(format!("decrease of {delta} nodes is too large")))?;
        let request = proto::NodeGroupDecreaseTargetSizeRequest { delta, id: self.id.clone() };
        self.shared
            .call(request, |mut c, r| async move { c.node_group_decrease_target_size(r).await })
            .await
            .map(|_| ())
            .map_err(|s| self.error("NodeGroupDecreaseTargetSize", false, s))
    }

    async fn nodes(&self) -> Result<Vec<Instance>> {
        self.checked()?;
        let request = proto::NodeGroupNodesRequest { id: self.id.clone() };
        let answer = self
            .shared
            .call(request, |mut c, r| async move { c.node_group_nodes(r).await })
            .await
            .map_err(|s| self.error("NodeGroupNodes", false, s))?;
        answer
            .instances
            .iter()
            .map(|i| instance_from_wire(i).map_err(|e| self.error("NodeGroupNodes", false, e)))
            .collect()
    }

    /// Kept until the next refresh. An answer without node bytes (upstream's "no template") is
    /// `NotImplemented`: the core then builds the template from a node of the group.
    async fn template_node_info(&self) -> Result<NodeTemplate> {
        self.checked()?;
        let mut cache = self.template.lock().await;
        if let Some(template) = cache.as_ref() {
            return Ok(template.clone());
        }
        let request = proto::NodeGroupTemplateNodeInfoRequest { id: self.id.clone() };
        let answer = self
            .shared
            .call(request, |mut c, r| async move { c.node_group_template_node_info(r).await })
            .await
            .map_err(|s| self.error("NodeGroupTemplateNodeInfo", true, s))?;
        if answer.node_bytes.is_empty() {
            return Err(CloudProviderError::NotImplemented);
        }
        let node = k8s_protobuf::node_from_bytes(&answer.node_bytes)
            .map_err(|e| self.error("NodeGroupTemplateNodeInfo", false, format!("nodeBytes: {e}")))?;
        let template = NodeTemplate { node, pods: Vec::new() };
        *cache = Some(template.clone());
        Ok(template)
    }

    /// The protocol carries 7 of the 9 options: `max_node_startup_time` and
    /// `allow_non_atomic_scale_up_to_max` keep `defaults`' values, and so do durations the
    /// answer leaves out. (Upstream's client takes an absent duration as zero; a zero
    /// `scaleDownUnneededTime` would make every unneeded node of the group removable at once, so
    /// the default is kept instead.) Thresholds outside [0, 1] and negative durations are
    /// refused. No options in the answer, or UNIMPLEMENTED, mean the defaults.
    async fn get_options(&self, defaults: &NodeGroupAutoscalingOptions) -> Result<Option<NodeGroupAutoscalingOptions>> {
        self.checked()?;
        let request =
            proto::NodeGroupAutoscalingOptionsRequest { id: self.id.clone(), defaults: Some(wire_options(defaults)) };
        let answer = self
            .shared
            .call(request, |mut c, r| async move { c.node_group_get_options(r).await })
            .await
            .map_err(|s| self.error("NodeGroupGetOptions", true, s))?;
        match answer.node_group_autoscaling_options {
            None => Ok(None),
            Some(wire) => {
                options_from_wire(&wire, defaults).map(Some).map_err(|e| self.error("NodeGroupGetOptions", false, e))
            }
        }
    }
}

/// Prices from the provider service. Synchronous, as the expanders are: each price is a call on
/// the bridge, waited for with the deadline.
struct ExternalGrpcPricing {
    shared: Arc<Shared>,
}

impl PricingModel for ExternalGrpcPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> Result<f64> {
        let request = proto::PricingNodePriceRequest {
            node: Some(wire_node(node)),
            start_timestamp: Some(wire_timestamp(start)),
            end_timestamp: Some(wire_timestamp(end)),
        };
        let name = node.metadata.name.clone().unwrap_or_default();
        let answer = self
            .shared
            .call_blocking(request, |mut c, r| async move { c.pricing_node_price(r).await })
            .map_err(|s| self.shared.error("PricingNodePrice", Some(&name), true, s.into()))?;
        checked_price(answer.price).map_err(|e| self.shared.error("PricingNodePrice", Some(&name), false, e.into()))
    }

    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> Result<f64> {
        let request = proto::PricingPodPriceRequest {
            pod_bytes: k8s_protobuf::pod_to_bytes(pod),
            start_timestamp: Some(wire_timestamp(start)),
            end_timestamp: Some(wire_timestamp(end)),
        };
        let name = pod.metadata.name.clone().unwrap_or_default();
        let answer = self
            .shared
            .call_blocking(request, |mut c, r| async move { c.pricing_pod_price(r).await })
            .map_err(|s| self.shared.error("PricingPodPrice", Some(&name), true, s.into()))?;
        checked_price(answer.price).map_err(|e| self.shared.error("PricingPodPrice", Some(&name), false, e.into()))
    }
}

/// A price the expander can compare: finite and not negative.
fn checked_price(price: f64) -> std::result::Result<f64, String> {
    if price.is_finite() && price >= 0.0 {
        Ok(price)
    } else {
        Err(format!("price {price} is negative or not a number"))
    }
}
