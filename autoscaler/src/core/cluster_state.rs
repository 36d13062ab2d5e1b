//! `ClusterState`: readiness of every node and, per node group, how many nodes are ready,
//! unready, upcoming, and whether the group may scale up now.
//!
//! `plan` computes it from one reading of the cluster (`observe`); the control loop's registry
//! fills the same struct from what it remembers (scale-up requests, backoff, unregistered nodes).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use cloudprovider_static::instance_id_for_node;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use rustc_hash::FxHashSet;

use super::cloud::CloudState;
use super::node_positions::{NodePositions, name_of};
use super::readiness::{Readiness, readiness};
use super::view::ClusterView;
use crate::config::AutoscalingOptions;

/// Why a node group is backed off after a failed scale-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub error_code: String,
    pub error_message: String,
    pub until: Timestamp,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupState {
    pub ready: usize,
    pub unready: usize,
    pub not_started: usize,
    /// Cloud instances without a Node yet.
    pub unregistered: usize,
    /// Instances that failed to register within `max-node-provision-time`.
    pub long_unregistered: usize,
    /// Nodes requested but not ready yet; the snapshot gets template copies for them.
    pub upcoming: usize,
    pub healthy: bool,
    pub backoff: Option<Backoff>,
    pub scale_up_in_progress: bool,
    /// Node deletions this autoscaler started and that have not finished.
    pub deletions_in_progress: usize,
}

/// Node name → readiness: by the node's position in the list observed.
#[derive(Clone, Debug, Default)]
pub struct NodeReadiness {
    positions: Arc<NodePositions>,
    by_position: Vec<Readiness>,
}

impl NodeReadiness {
    pub fn get(&self, node: &str) -> Option<Readiness> {
        self.positions.get(node).and_then(|position| self.by_position.get(position).copied())
    }

    /// `get` for `node`, the `position`-th node of a list: read at that position when this
    /// readiness was observed from the very nodes `cloud` was gathered from and `node` is the
    /// one gathered there (the decision's walk of the loop's nodes: no name hashed), looked up
    /// by name otherwise.
    pub fn at(&self, position: usize, node: &Arc<Node>, cloud: &CloudState) -> Option<Readiness> {
        if Arc::ptr_eq(&self.positions, &cloud.node_positions) && cloud.facts_of(position, node).is_some() {
            return self.by_position.get(position).copied();
        }
        self.get(name_of(node))
    }
}

/// The same readiness for the same names, wherever the nodes were in their lists.
impl PartialEq for NodeReadiness {
    fn eq(&self, other: &Self) -> bool {
        self.positions.len() == other.positions.len()
            && self.positions.iter().all(|(name, _)| self.get(name) == other.get(name))
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterState {
    /// Every node's readiness.
    pub readiness: NodeReadiness,
    pub groups: HashMap<String, GroupState>,
    pub ready: usize,
    pub unready: usize,
    pub not_started: usize,
    pub healthy: bool,
}

/// Upstream's health rule: too many unready nodes is more than the tolerated count AND more
/// than the tolerated share.
pub fn within_unready_tolerance(unready: usize, total: usize, options: &AutoscalingOptions) -> bool {
    !(unready > options.ok_total_unready_count
        && (unready as f64) > options.max_total_unready_percentage / 100.0 * total as f64)
}

/// Upstream's upcoming nodes of a group (`GetUpcomingNodes`): what its target size still owes
/// beyond the registered nodes that have started (ready or unready) and the instances unregistered
/// for longer than the provision time. Upstream counts them from the target alone — whoever asked
/// for them (this process, or one before a restart) and whether or not the group is backed off —
/// so a restarted autoscaler does not ask again for nodes that are on their way. Nodes registered
/// but not started are among them; the decision replaces those with template copies, so the count
/// is never below them (upstream leaves them in the snapshot as they are when the target owes
/// nothing, e.g. while a deletion has already lowered the target).
pub fn upcoming_nodes(
    target: usize,
    ready: usize,
    unready: usize,
    long_unregistered: usize,
    not_started: usize,
) -> usize {
    target.saturating_sub(ready.saturating_add(unready).saturating_add(long_unregistered)).max(not_started)
}

/// Nodes' instance ids, borrowed from the nodes where they have a providerID.
pub type InstanceIds<'n> = FxHashSet<Cow<'n, str>>;

/// The instance ids of these nodes (`instance_id_for_node`): what a group's instances are
/// matched with to tell registered from unregistered ones.
pub fn registered_instance_ids(nodes: &[Arc<Node>]) -> InstanceIds<'_> {
    nodes.iter().map(|n| instance_id_for_node(n)).collect()
}

impl ClusterState {
    /// Reads the state from one view of the cluster and the cloud, with nothing remembered: as a
    /// freshly started autoscaler, no missing node of a group is assumed to be on its way.
    pub fn observe(view: &ClusterView, cloud: &CloudState, options: &AutoscalingOptions, now: Timestamp) -> Self {
        Self::observe_registered(view, &registered_instance_ids(&view.nodes), cloud, options, now)
    }

    /// `observe`, given the instance ids of the view's nodes (`registered_instance_ids`), for a
    /// caller that reads them too.
    pub fn observe_registered(
        view: &ClusterView,
        registered_ids: &InstanceIds<'_>,
        cloud: &CloudState,
        options: &AutoscalingOptions,
        now: Timestamp,
    ) -> Self {
        let mut state = ClusterState::default();
        // Per group (as `cloud.groups` lists them): ready, unready, not started. Counted by the
        // group's index, which the cloud state keeps per node: hundreds of nodes a loop.
        let mut counts = vec![[0usize; 3]; cloud.groups.len()];
        let mut totals = [0usize; 3];
        // The loop's cloud state was gathered from these very nodes: the readiness shares its
        // positions. A node's group and facts are read at its position wherever it is the node
        // gathered there, looked up by name otherwise (a cloud state of other nodes).
        let gathered_from_these = cloud.node_facts.len() == view.nodes.len()
            && view.nodes.iter().enumerate().all(|(position, node)| cloud.facts_of(position, node).is_some());
        state.readiness.positions =
            if gathered_from_these { cloud.node_positions.clone() } else { Arc::new(NodePositions::of(&view.nodes)) };
        state.readiness.by_position.reserve(view.nodes.len());
        for (position, node) in view.nodes.iter().enumerate() {
            let index = cloud.group_index_at(position, node);
            let startup = index.map_or(options.node_group_defaults.max_node_startup_time, |i| {
                cloud.groups[i].options.max_node_startup_time
            });
            let r = match cloud.facts_of(position, node) {
                Some(facts) => facts.readiness(now, startup),
                None => readiness(node, now, startup, options, &cloud.gpu_label),
            };
            let slot = match r {
                Readiness::Ready => 0,
                Readiness::Unready => 1,
                Readiness::NotStarted => 2,
            };
            totals[slot] += 1;
            if let Some(i) = index {
                counts[i][slot] += 1;
            }
            state.readiness.by_position.push(r);
        }
        [state.ready, state.unready, state.not_started] = totals;
        for (g, [ready, unready, not_started]) in cloud.groups.iter().zip(counts) {
            let mut gs = GroupState { ready, unready, not_started, ..Default::default() };
            gs.unregistered = g.instances.iter().filter(|i| !registered_ids.contains(i.id.as_str())).count();
            // What a freshly started autoscaler knows: every instance without a Node is seen for
            // the first time, so none is long unregistered and all the target owes is upcoming;
            // no scale-up request of its own is in flight, so every node the target owes beyond
            // the ready ones is unjustified for health. The control loop's registry refines this
            // with what it remembers (unregistered since when, its own requests).
            gs.upcoming = upcoming_nodes(g.target_size, gs.ready, gs.unready, 0, gs.not_started);
            gs.scale_up_in_progress = false;
            let registered = gs.ready + gs.unready + gs.not_started;
            let unjustified_unready = g.target_size.saturating_sub(gs.ready);
            gs.healthy = within_unready_tolerance(unjustified_unready, registered.max(1), options);
            state.groups.insert(g.id.clone(), gs);
        }
        state.healthy = within_unready_tolerance(state.unready, state.ready + state.unready, options);
        state
    }

    pub fn group(&self, id: &str) -> Option<&GroupState> {
        self.groups.get(id)
    }

    pub fn is_ready(&self, node: &str) -> bool {
        self.readiness.get(node) == Some(Readiness::Ready)
    }
}
