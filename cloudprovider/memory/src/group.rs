//! `MemoryNodeGroup`: one configured group, backed by the provider's shared state.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;

use super::config::{MemoryGroupSpec, MemoryProviderConfig};
use super::state::{MinSizeCheck, ProviderState};
use super::time::SharedTime;
use cloudprovider::duration::format_go_duration;
use cloudprovider::{CloudProviderError, Instance, NodeGroup, NodeGroupAutoscalingOptions, NodeTemplate, Result};

/// What the provider, its groups and its pricing share.
#[derive(Debug)]
pub(crate) struct Inner {
    /// Validated, with completed templates.
    pub config: MemoryProviderConfig,
    pub time: SharedTime,
    state: Mutex<ProviderState>,
}

impl Inner {
    pub(crate) fn new(config: MemoryProviderConfig, time: SharedTime) -> Inner {
        let state = ProviderState::new(&config.groups, time.now());
        Inner { config, time, state: Mutex::new(state) }
    }

    /// The state with every transition due at the shared now applied, and that now. Every
    /// operation validates before it mutates, so a poisoned lock still holds consistent state.
    pub(crate) fn settled(&self) -> (MutexGuard<'_, ProviderState>, Timestamp) {
        let now = self.time.now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.settle(&self.config.groups, now);
        (state, now)
    }

    pub(crate) fn group_index(&self, id: &str) -> Option<usize> {
        self.config.groups.iter().position(|group| group.id == id)
    }
}

/// The instance id of a node: its `spec.providerID`.
pub(crate) fn provider_id(node: &Node) -> Option<&str> {
    node.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()).filter(|id| !id.is_empty())
}

pub struct MemoryNodeGroup {
    inner: Arc<Inner>,
    index: usize,
}

impl MemoryNodeGroup {
    pub(crate) fn new(inner: Arc<Inner>, index: usize) -> MemoryNodeGroup {
        MemoryNodeGroup { inner, index }
    }

    pub fn spec(&self) -> &MemoryGroupSpec {
        &self.inner.config.groups[self.index]
    }

    /// How many of the group's instances are not being deleted now, as `nodes()` would list
    /// them, without listing them (the simulation counts them at every step).
    pub fn instances_not_deleting(&self) -> usize {
        let (state, _) = self.inner.settled();
        state.not_deleting(self.index)
    }

    async fn increase(&self, delta: usize, atomic: bool) -> Result<()> {
        let (result, delay) = {
            let (mut state, now) = self.inner.settled();
            let delay = state.group_mut(self.index).faults.take_increase_delay();
            let config = &self.inner.config;
            (state.increase(&config.groups, self.index, delta, now, config.error_report_delay, atomic), delay)
        };
        self.answer_late("IncreaseSize", delay).await;
        result
    }

    /// Holds the answer of a call already carried out for `delay` (a slow fault), with the
    /// state unlocked so other calls go on meanwhile.
    async fn answer_late(&self, call: &str, delay: Option<Duration>) {
        if let Some(delay) = delay {
            tracing::info!(
                group = %self.spec().id,
                delay = %format_go_duration(delay),
                "{call} carried out; its answer is held back (a slow fault armed on the memory provider)"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn delete(&self, nodes: &[Node], check: MinSizeCheck) -> Result<()> {
        let mut pairs = Vec::with_capacity(nodes.len());
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let Some(id) = provider_id(node) else {
                return Err(CloudProviderError::InvalidRequest(format!(
                    "node {name} has no providerID: it does not belong to node group {}",
                    self.spec().id
                )));
            };
            pairs.push((name, id.to_string()));
        }
        let (result, delay) = {
            let (mut state, now) = self.inner.settled();
            let delay = state.group_mut(self.index).faults.take_delete_delay();
            let config = &self.inner.config;
            (state.delete(&config.groups, self.index, &pairs, check, now, config.deletion_delay), delay)
        };
        self.answer_late("DeleteNodes", delay).await;
        result
    }
}

impl fmt::Debug for MemoryNodeGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = self.spec();
        f.debug_struct("MemoryNodeGroup")
            .field("id", &spec.id)
            .field("min_size", &spec.min_size)
            .field("max_size", &spec.max_size)
            .finish()
    }
}

#[async_trait]
impl NodeGroup for MemoryNodeGroup {
    fn id(&self) -> &str {
        &self.spec().id
    }

    fn min_size(&self) -> usize {
        self.spec().min_size
    }

    fn max_size(&self) -> usize {
        self.spec().max_size
    }

    /// The instances that are Creating or Running (requested and not deleted).
    async fn target_size(&self) -> Result<usize> {
        Ok(self.inner.settled().0.target(self.index))
    }

    async fn increase_size(&self, delta: usize) -> Result<()> {
        self.increase(delta, false).await
    }

    /// All-or-nothing: when the cloud can fulfil only part of the request, no instance launches.
    async fn atomic_increase_size(&self, delta: usize) -> Result<()> {
        self.increase(delta, true).await
    }

    async fn delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.delete(nodes, MinSizeCheck::Respect).await
    }

    async fn force_delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.delete(nodes, MinSizeCheck::Ignore).await
    }

    async fn decrease_target_size(&self, delta: i64) -> Result<()> {
        let (mut state, now) = self.inner.settled();
        state.decrease_target(self.index, delta, now)
    }

    async fn nodes(&self) -> Result<Vec<Instance>> {
        let (state, now) = self.inner.settled();
        Ok(state.instances(self.index, now))
    }

    async fn template_node_info(&self) -> Result<NodeTemplate> {
        Ok(self.spec().template.clone())
    }

    async fn get_options(&self, defaults: &NodeGroupAutoscalingOptions) -> Result<Option<NodeGroupAutoscalingOptions>> {
        Ok(self.spec().options_over(defaults))
    }
}
