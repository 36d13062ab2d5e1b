//! The provider's mutable state: per group the target size and the instances.
//!
//! Invariants kept by every operation:
//! - `target >= registered.len()`: a node the provider sees is part of the group's target (a
//!   node that registers on its own raises the target, as it would in a cloud where someone
//!   resized the group by hand);
//! - `placeholders.len() == target - registered.len()`: the unfulfilled part of the target, as
//!   `Creating` instances with stable ids (`static://<id>/placeholder-<n>`) so the core can track
//!   each one; the oldest is considered fulfilled when a node registers;
//! - instances deleted through the provider are `Deleting` and out of the target until their
//!   Node object disappears.

use std::collections::{BTreeSet, VecDeque};

use k8s_openapi::api::core::v1::Node;

use super::config::StaticNodeGroupConfig;
use super::membership::{group_index_for_node, instance_id_for_node};
use cloudprovider::{CloudProviderError, Instance, InstanceState, InstanceStatus, Result};

#[derive(Debug, Default)]
struct GroupState {
    target: usize,
    /// Instance ids of the group's nodes, sorted.
    registered: Vec<String>,
    /// Instance ids deleted through the provider whose nodes are still observed.
    deleting: Vec<String>,
    /// Ids of instances requested but not registered yet, oldest first.
    placeholders: VecDeque<String>,
    next_placeholder: u64,
}

impl GroupState {
    fn missing(&self) -> usize {
        self.target.saturating_sub(self.registered.len())
    }

    /// Adds placeholders for a grown target; drops the oldest ones when nodes registered.
    fn reconcile_placeholders(&mut self, group_id: &str) {
        while self.placeholders.len() > self.missing() {
            self.placeholders.pop_front();
        }
        while self.placeholders.len() < self.missing() {
            self.placeholders.push_back(format!("static://{group_id}/placeholder-{}", self.next_placeholder));
            self.next_placeholder += 1;
        }
    }

    fn owns(&self, instance_id: &str) -> bool {
        // Sorted: a loop asks this for every node, and a scan made that quadratic (at 5,000
        // nodes about 30 ms of every iteration).
        self.registered.binary_search_by(|id| id.as_str().cmp(instance_id)).is_ok()
            || self.deleting.iter().any(|id| id == instance_id)
            || self.placeholders.iter().any(|id| id == instance_id)
    }
}

#[derive(Debug)]
pub(crate) struct ProviderState {
    groups: Vec<GroupState>,
    /// Every instance id in some group's `deleting` list.
    deleted: BTreeSet<String>,
}

fn invalid(message: String) -> CloudProviderError {
    CloudProviderError::InvalidRequest(message)
}

impl ProviderState {
    /// Initial targets: the configured `targetSize`, else the number of nodes in the group.
    pub(crate) fn new(configs: &[StaticNodeGroupConfig], nodes: &[Node]) -> ProviderState {
        let groups = configs
            .iter()
            .map(|config| GroupState { target: config.target_size.unwrap_or(0), ..Default::default() })
            .collect();
        let mut state = ProviderState { groups, deleted: BTreeSet::new() };
        state.observe(configs, nodes.iter());
        state
    }

    /// Replaces the registered instances with the nodes now in the cluster.
    ///
    /// A registered node that is gone left its group: the target goes down with it (there is no
    /// cloud that would replace it), so a node an operator removed frees its place. A deleted
    /// node that is gone is simply finished.
    pub(crate) fn observe<'n>(&mut self, configs: &[StaticNodeGroupConfig], nodes: impl Iterator<Item = &'n Node>) {
        let mut registered: Vec<Vec<String>> = vec![Vec::new(); self.groups.len()];
        let mut deleting: Vec<Vec<String>> = vec![Vec::new(); self.groups.len()];
        for node in nodes {
            let id = instance_id_for_node(node).into_owned();
            if self.deleted.contains(&id) {
                // Keep a deleted node in the group that deleted it, even if its labels changed.
                let owner = self.groups.iter().position(|group| group.deleting.contains(&id));
                if let Some(index) = owner.or_else(|| group_index_for_node(configs, node)) {
                    deleting[index].push(id);
                }
            } else if let Some(index) = group_index_for_node(configs, node) {
                registered[index].push(id);
            }
        }
        self.deleted = deleting.iter().flatten().cloned().collect();
        for ((group, config), (mut registered, mut deleting)) in
            self.groups.iter_mut().zip(configs).zip(registered.into_iter().zip(deleting))
        {
            registered.sort();
            registered.dedup();
            deleting.sort();
            deleting.dedup();
            let gone = group.registered.iter().filter(|id| registered.binary_search(id).is_err()).count();
            group.target = group.target.saturating_sub(gone).max(registered.len());
            // A node may register under a placeholder's id (a harness creating the requested
            // instances does that): that placeholder, not the oldest, is the one fulfilled.
            group.placeholders.retain(|placeholder| registered.binary_search(placeholder).is_err());
            group.registered = registered;
            group.deleting = deleting;
            group.reconcile_placeholders(&config.id);
        }
    }

    pub(crate) fn target(&self, index: usize) -> usize {
        self.groups[index].target
    }

    /// The group that lists this instance (registered, deleting or placeholder).
    pub(crate) fn group_of_instance(&self, instance_id: &str) -> Option<usize> {
        self.groups.iter().position(|group| group.owns(instance_id))
    }

    /// Whether the provider deleted this instance.
    pub(crate) fn is_deleted(&self, instance_id: &str) -> bool {
        self.deleted.contains(instance_id)
    }

    pub(crate) fn increase(&mut self, config: &StaticNodeGroupConfig, index: usize, delta: usize) -> Result<()> {
        if delta == 0 {
            return Err(invalid("size increase must be positive".to_string()));
        }
        let group = &mut self.groups[index];
        let desired = group.target.saturating_add(delta);
        if desired > config.max_size {
            return Err(invalid(format!("size increase too large - desired:{desired} max:{}", config.max_size)));
        }
        group.target = desired;
        group.reconcile_placeholders(&config.id);
        Ok(())
    }

    pub(crate) fn decrease_target(&mut self, index: usize, delta: i64) -> Result<()> {
        if delta >= 0 {
            return Err(invalid(format!("size decrease must be negative, got {delta}")));
        }
        let group = &mut self.groups[index];
        let decrease = usize::try_from(delta.unsigned_abs()).unwrap_or(usize::MAX);
        let existing = group.registered.len();
        match group.target.checked_sub(decrease) {
            Some(new_target) if new_target >= existing => {
                group.target = new_target;
                // The newest requests are withdrawn first.
                while group.placeholders.len() > group.missing() {
                    group.placeholders.pop_back();
                }
                Ok(())
            }
            _ => Err(invalid(format!(
                "attempt to delete existing nodes targetSize:{} delta:{delta} existingNodes: {existing}",
                group.target
            ))),
        }
    }

    /// Deletes nodes of the group at `index`, lowering its target by their number.
    /// With `respect_min`, refuses to take the target below the group's min size.
    pub(crate) fn delete(
        &mut self,
        configs: &[StaticNodeGroupConfig],
        index: usize,
        nodes: &[Node],
        respect_min: bool,
    ) -> Result<()> {
        let config = &configs[index];
        let mut doomed: Vec<String> = Vec::new();
        for node in nodes {
            let id = instance_id_for_node(node).into_owned();
            let name = node.metadata.name.as_deref().unwrap_or_default();
            let group = &self.groups[index];
            if doomed.contains(&id) || group.deleting.contains(&id) {
                continue; // Already being deleted: deleting again changes nothing.
            }
            let known_owner = self.group_of_instance(&id);
            let belongs = match known_owner {
                Some(owner) => owner == index,
                None => group_index_for_node(configs, node) == Some(index),
            };
            if !belongs {
                let other = known_owner
                    .or_else(|| group_index_for_node(configs, node))
                    .map(|owner| format!(" (it belongs to {})", configs[owner].id))
                    .unwrap_or_default();
                return Err(invalid(format!(
                    "node {name} (instance {id}) does not belong to node group {}{other}",
                    config.id
                )));
            }
            doomed.push(id);
        }
        if doomed.is_empty() {
            return Ok(());
        }
        let group = &mut self.groups[index];
        if respect_min && group.target < config.min_size + doomed.len() {
            return Err(invalid(format!(
                "min size reached, nodes will not be deleted: node group {} has target size {}, min size {}, \
                 and {} nodes to delete",
                config.id,
                group.target,
                config.min_size,
                doomed.len()
            )));
        }
        for id in doomed {
            group.target = group.target.saturating_sub(1);
            if let Some(position) = group.placeholders.iter().position(|placeholder| *placeholder == id) {
                // A requested instance that never registered: nothing to keep track of.
                group.placeholders.remove(position);
                continue;
            }
            group.registered.retain(|registered| *registered != id);
            group.deleting.push(id.clone());
            self.deleted.insert(id);
        }
        group.deleting.sort();
        // A deleted node that was not observed yet may leave the target below the registered
        // count; restore the invariants.
        group.target = group.target.max(group.registered.len());
        group.reconcile_placeholders(&config.id);
        Ok(())
    }

    /// Registered instances (`Running`), instances being deleted (`Deleting`) and one `Creating`
    /// placeholder per instance the target asks for but that has not registered.
    pub(crate) fn instances(&self, index: usize) -> Vec<Instance> {
        let group = &self.groups[index];
        let with_state =
            |id: &String, state| Instance { id: id.clone(), status: Some(InstanceStatus { state, error: None }) };
        group
            .registered
            .iter()
            .map(|id| with_state(id, InstanceState::Running))
            .chain(group.deleting.iter().map(|id| with_state(id, InstanceState::Deleting)))
            .chain(group.placeholders.iter().map(|id| with_state(id, InstanceState::Creating)))
            .collect()
    }
}
