//! `StaticNodeGroup`: one configured group, backed by the provider's shared in-memory state.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;

use super::config::{StaticConfig, StaticNodeGroupConfig};
use super::state::ProviderState;
use cloudprovider::{CloudProviderError, Instance, NodeGroup, NodeGroupAutoscalingOptions, NodeTemplate, Result};

/// What the provider and its groups share: the fixed configuration and the mutable state.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: StaticConfig,
    state: Mutex<ProviderState>,
}

impl Shared {
    pub(crate) fn new(config: StaticConfig, nodes: &[Node]) -> Shared {
        let state = ProviderState::new(&config.node_groups, nodes);
        Shared { config, state: Mutex::new(state) }
    }

    /// The state; a panic elsewhere while it was held cannot leave it half-updated (every
    /// operation validates before it mutates), so a poisoned lock is still usable.
    pub(crate) fn state(&self) -> MutexGuard<'_, ProviderState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub struct StaticNodeGroup {
    shared: Arc<Shared>,
    index: usize,
}

impl StaticNodeGroup {
    pub(crate) fn new(shared: Arc<Shared>, index: usize) -> StaticNodeGroup {
        StaticNodeGroup { shared, index }
    }

    /// This group's configuration.
    pub fn config(&self) -> &StaticNodeGroupConfig {
        &self.shared.config.node_groups[self.index]
    }

    fn delete(&self, nodes: &[Node], respect_min: bool) -> Result<()> {
        self.shared.state().delete(&self.shared.config.node_groups, self.index, nodes, respect_min)
    }
}

impl fmt::Debug for StaticNodeGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = self.config();
        f.debug_struct("StaticNodeGroup")
            .field("id", &config.id)
            .field("min_size", &config.min_size)
            .field("max_size", &config.max_size)
            .finish()
    }
}

#[async_trait]
impl NodeGroup for StaticNodeGroup {
    fn id(&self) -> &str {
        &self.config().id
    }

    fn min_size(&self) -> usize {
        self.config().min_size
    }

    fn max_size(&self) -> usize {
        self.config().max_size
    }

    async fn target_size(&self) -> Result<usize> {
        Ok(self.shared.state().target(self.index))
    }

    async fn increase_size(&self, delta: usize) -> Result<()> {
        self.shared.state().increase(self.config(), self.index, delta)
    }

    /// In memory, every increase is all-or-nothing.
    async fn atomic_increase_size(&self, delta: usize) -> Result<()> {
        self.shared.state().increase(self.config(), self.index, delta)
    }

    async fn delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.delete(nodes, true)
    }

    async fn force_delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.delete(nodes, false)
    }

    async fn decrease_target_size(&self, delta: i64) -> Result<()> {
        self.shared.state().decrease_target(self.index, delta)
    }

    async fn nodes(&self) -> Result<Vec<Instance>> {
        Ok(self.shared.state().instances(self.index))
    }

    /// The file's template; groups without one (only from `--nodes`) answer `NotImplemented`,
    /// and the core builds their template from a live node, as upstream does.
    async fn template_node_info(&self) -> Result<NodeTemplate> {
        match &self.config().template {
            Some(node) => Ok(NodeTemplate { node: node.clone(), pods: Vec::new() }),
            None => Err(CloudProviderError::NotImplemented),
        }
    }

    async fn get_options(&self, defaults: &NodeGroupAutoscalingOptions) -> Result<Option<NodeGroupAutoscalingOptions>> {
        Ok(self.config().options.as_ref().map(|overrides| overrides.merged_over(defaults)))
    }
}
