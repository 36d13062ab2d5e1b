//! `MemoryCloudProvider`: the `CloudProvider` over in-memory groups, plus the driver's side:
//! fault injection and the events the in-memory cluster turns into Node objects.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;

use super::config::{FaultCount, Fulfilment, MemoryProviderConfig, MemoryProviderError, PROVIDER_ID_SCHEME, validate};
use super::group::{Inner, MemoryNodeGroup, provider_id};
use super::pricing::MemoryPricing;
use super::state::{CloudEvent, GroupState};
use super::template::complete_template;
use super::time::SharedTime;
use cloudprovider::template::resource_value;

use cloudprovider::{
    CloudProvider, CloudProviderError, GPU_RESOURCE, GpuConfig, NodeGroup, PricingModel, ResourceLimiter, Result,
};

pub const PROVIDER_NAME: &str = "memory";

pub struct MemoryCloudProvider {
    inner: Arc<Inner>,
    groups: Vec<Arc<MemoryNodeGroup>>,
    pricing: Arc<MemoryPricing>,
}

impl MemoryCloudProvider {
    /// A provider over `config`'s groups on the virtual time `time`. Each group starts with
    /// `initial_size` running instances whose Nodes register at the current time (the first
    /// [`MemoryCloudProvider::drain_events`] reports them, marked `initial`).
    pub fn new(mut config: MemoryProviderConfig, time: SharedTime) -> Result<MemoryCloudProvider, MemoryProviderError> {
        validate(&config)?;
        for (index, group) in config.groups.iter_mut().enumerate() {
            let template = std::mem::take(&mut group.template);
            group.template = complete_template(template, &group.id).map_err(|(field, message)| {
                MemoryProviderError::InvalidGroup { index, field: format!("template.{field}"), message }
            })?;
        }
        let inner = Arc::new(Inner::new(config, time));
        let groups =
            (0..inner.config.groups.len()).map(|index| Arc::new(MemoryNodeGroup::new(inner.clone(), index))).collect();
        let pricing = Arc::new(MemoryPricing::new(inner.clone()));
        Ok(MemoryCloudProvider { inner, groups, pricing })
    }

    /// The configuration, with templates completed.
    pub fn config(&self) -> &MemoryProviderConfig {
        &self.inner.config
    }

    pub fn time(&self) -> &SharedTime {
        &self.inner.time
    }

    /// The group with this id, with its concrete type.
    pub fn group(&self, id: &str) -> Option<Arc<MemoryNodeGroup>> {
        self.inner.group_index(id).map(|index| self.groups[index].clone())
    }

    /// Everything that happened in the cloud since the last call, up to the shared now, in time
    /// order: Nodes that registered and instances that are gone. The in-memory cluster calls
    /// this on every advance and adds or removes Node objects accordingly; each event is
    /// reported exactly once.
    pub fn drain_events(&self) -> Vec<CloudEvent> {
        self.inner.settled().0.drain_events()
    }

    fn with_group<T>(&self, group: &str, f: impl FnOnce(&mut GroupState) -> T) -> Result<T, MemoryProviderError> {
        let index =
            self.inner.group_index(group).ok_or_else(|| MemoryProviderError::UnknownGroup(group.to_string()))?;
        let (mut state, _) = self.inner.settled();
        Ok(f(state.group_mut(index)))
    }

    /// The next `times` calls of `increase_size` (and `atomic_increase_size`) on `group` fail
    /// with `error` and change nothing.
    pub fn fail_increase_size(
        &self,
        group: &str,
        times: FaultCount,
        error: CloudProviderError,
    ) -> Result<(), MemoryProviderError> {
        self.with_group(group, |g| g.faults.fail_increase = Some((times, error)))
    }

    /// From now on, every increase of `group` launches only part of the requested instances;
    /// the rest stay Creating and, after the provider's `error_report_delay`, report an
    /// `OutOfResources` error with code `placeholder-cannot-be-fulfilled` (what upstream's AWS
    /// provider reports for ASG capacity it could not launch). `clear_faults` ends it.
    pub fn partial_fulfilment(&self, group: &str, fulfilment: Fulfilment) -> Result<(), MemoryProviderError> {
        if let Fulfilment::Ratio(ratio) = fulfilment
            && !(0.0..=1.0).contains(&ratio)
        {
            return Err(MemoryProviderError::InvalidFault(format!(
                "partial fulfilment ratio {ratio} of group {group} is not within [0, 1]"
            )));
        }
        self.with_group(group, |g| g.faults.partial = Some(fulfilment))
    }

    /// The next `count` instances `group` launches run in the cloud (state Running) but never
    /// register a Node.
    pub fn never_register(&self, group: &str, count: usize) -> Result<(), MemoryProviderError> {
        self.with_group(group, |g| g.faults.never_register = count)
    }

    /// The next `times` calls of `delete_nodes` (and `force_delete_nodes`) on `group` that pass
    /// validation fail with `error` and delete nothing.
    pub fn fail_delete_nodes(
        &self,
        group: &str,
        times: FaultCount,
        error: CloudProviderError,
    ) -> Result<(), MemoryProviderError> {
        self.with_group(group, |g| g.faults.fail_delete = Some((times, error)))
    }

    /// The next `times` calls of `increase_size` (and `atomic_increase_size`) on `group` are
    /// carried out at once, then answered `delay` later: a cloud API that is slow to answer,
    /// the worst case for a caller that gives up waiting. The delay is wall-clock time (a
    /// tokio timer), for the controller; `simulate`'s virtual clock does not wait on it.
    /// Dropping the call's future (a cancelled loop) ends the wait; what was done stays done.
    pub fn slow_increase_size(
        &self,
        group: &str,
        times: FaultCount,
        delay: Duration,
    ) -> Result<(), MemoryProviderError> {
        self.with_group(group, |g| g.faults.slow_increase = Some((times, delay)))
    }

    /// The same for `delete_nodes` (and `force_delete_nodes`) on `group`.
    pub fn slow_delete_nodes(
        &self,
        group: &str,
        times: FaultCount,
        delay: Duration,
    ) -> Result<(), MemoryProviderError> {
        self.with_group(group, |g| g.faults.slow_delete = Some((times, delay)))
    }

    /// Increases of `group` requested within `[from, until)` succeed, but none of their
    /// instances launches: each reports an `OutOfResources` error after the error delay, and
    /// the core backs the group off.
    pub fn stock_out(&self, group: &str, from: Timestamp, until: Timestamp) -> Result<(), MemoryProviderError> {
        if until <= from {
            return Err(MemoryProviderError::InvalidFault(format!(
                "stock-out of group {group} ends ({until}) before it starts ({from})"
            )));
        }
        self.with_group(group, |g| g.faults.stock_outs.push((from, until)))
    }

    /// Disarms every fault of `group`. Instances already affected stay as they are.
    pub fn clear_faults(&self, group: &str) -> Result<(), MemoryProviderError> {
        self.with_group(group, |g| g.faults = Default::default())
    }

    fn group_for_node(&self, node: &Node) -> Option<Arc<dyn NodeGroup>> {
        let rest = provider_id(node)?.strip_prefix(PROVIDER_ID_SCHEME)?;
        let (group, _) = rest.split_once('/')?;
        let index = self.inner.group_index(group)?;
        Some(self.groups[index].clone() as Arc<dyn NodeGroup>)
    }
}

#[async_trait]
impl CloudProvider for MemoryCloudProvider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        self.groups.iter().map(|group| group.clone() as Arc<dyn NodeGroup>).collect()
    }

    /// By providerID: `memory://<group>/…` belongs to `<group>`.
    async fn node_group_for_node(&self, node: &Node) -> Result<Option<Arc<dyn NodeGroup>>> {
        Ok(self.group_for_node(node))
    }

    /// Answered from memory: one pass, no future per node.
    async fn node_groups_for_nodes(&self, nodes: &[Arc<Node>]) -> Result<Vec<Option<Arc<dyn NodeGroup>>>> {
        Ok(nodes.iter().map(|node| self.group_for_node(node)).collect())
    }

    /// False once this provider deleted the instance (or never had it); nodes of other
    /// providers are assumed to exist, since this cloud cannot tell.
    async fn has_instance(&self, node: &Node) -> Result<bool> {
        match provider_id(node) {
            Some(id) if id.starts_with(PROVIDER_ID_SCHEME) => Ok(self.inner.settled().0.is_live(id)),
            _ => Ok(true),
        }
    }

    fn pricing(&self) -> Result<Arc<dyn PricingModel>> {
        Ok(self.pricing.clone())
    }

    fn resource_limiter(&self) -> Result<ResourceLimiter> {
        Ok(self.inner.config.resource_limiter.clone())
    }

    fn gpu_label(&self) -> &str {
        &self.inner.config.gpu_label
    }

    /// The GPU label values of the templates.
    fn available_gpu_types(&self) -> Vec<String> {
        let label = self.gpu_label();
        let types: BTreeSet<String> = self
            .inner
            .config
            .groups
            .iter()
            .filter_map(|group| group.template.node.metadata.labels.as_ref()?.get(label).cloned())
            .collect();
        types.into_iter().collect()
    }

    /// A node has GPUs when it carries the GPU label or has `nvidia.com/gpu` allocatable.
    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig> {
        let label = self.gpu_label();
        let config = |gpu_type: &str| GpuConfig {
            label: label.to_string(),
            gpu_type: gpu_type.to_string(),
            extended_resource_name: GPU_RESOURCE.to_string(),
        };
        if let Some(gpu_type) = node.metadata.labels.as_ref().and_then(|labels| labels.get(label)) {
            return Some(config(gpu_type));
        }
        let allocatable = node.status.as_ref()?.allocatable.as_ref();
        resource_value(allocatable, GPU_RESOURCE).is_ok_and(|count| count > 0.0).then(|| config(""))
    }

    async fn cleanup(&self) -> Result<()> {
        Ok(())
    }

    /// Applies the transitions due at the shared now (launches finishing, deletions completing).
    async fn refresh(&self) -> Result<()> {
        drop(self.inner.settled());
        Ok(())
    }
}
