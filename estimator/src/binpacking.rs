//! The binpacking estimator: First-Fit-Decreasing of pending pods onto copies of a node group's
//! template, simulated with the real predicates on a fork of the cluster snapshot (reverted at
//! the end, so the caller's snapshot is unchanged).
//!
//! Upstream's order of attempts is kept exactly, because it decides the node count:
//! 1. equivalence groups sorted by the exemplar's share of the template (cpu + memory), largest first;
//! 2. per group, each pod first tries the nodes this estimation already filled (the last one
//!    first), and the group moves on at the first pod that fits none of them;
//! 3. the remaining pods try the last added node; a pod with a hostname topology spread
//!    constraint that fails there for spreading tries every other node; otherwise a new node is
//!    opened, unless the last one is still empty (a new one would not help either) or the
//!    limiter says no.
//!
//! A quirk kept from upstream: in the hostname-spread retry, "every other node" includes the
//! cluster's existing nodes, and a node used that way is counted like a new node.

use std::collections::HashSet;
use std::sync::Arc;

use simulator::equivalence::PodEquivalenceGroup;
use simulator::resources::{CPU, MEMORY};
use simulator::snapshot::SnapshotError;
use simulator::well_known::HOSTNAME_LABEL;
use simulator::{ClusterSnapshot, NodeId, NodeInfo, PodInfo, Unfit};

use crate::limiter::EstimationLimiter;

#[derive(Clone, Debug, Default)]
pub struct Estimate {
    /// Nodes that received at least one pod.
    pub node_count: usize,
    /// Pods the new nodes would take, in placement order.
    pub scheduled_pods: Vec<Arc<PodInfo>>,
    /// A limit (node count or time) cut the estimation short.
    pub limited: bool,
}

struct State {
    new_nodes: Vec<NodeId>,
    with_pods: HashSet<NodeId>,
    last: Option<NodeId>,
    next_index: usize,
    search_start: usize,
    scheduled: Vec<Arc<PodInfo>>,
    /// Nodes the fast path counted without simulating them.
    counted_nodes: usize,
}

impl State {
    fn track(&mut self, snapshot: &mut ClusterSnapshot, pod: &Arc<PodInfo>, node: NodeId) -> Result<(), SnapshotError> {
        snapshot.add_pod(pod.clone(), node)?;
        self.with_pods.insert(node);
        self.scheduled.push(pod.clone());
        Ok(())
    }

    fn last_has_pods(&self) -> bool {
        self.last.is_some_and(|l| self.with_pods.contains(&l))
    }
}

/// The exemplar's share of the template: cpu request / allocatable cpu + memory request /
/// allocatable memory.
fn share_of_template(pod: &PodInfo, template: &NodeInfo) -> f64 {
    let part = |name: &str| {
        let alloc = template.allocatable.get(name);
        if alloc > 0 { pod.requests().get(name) as f64 / alloc as f64 } else { 0.0 }
    };
    part(CPU) + part(MEMORY)
}

/// Groups in the order the estimator processes them (stable, largest share first).
pub fn order_groups<'a>(groups: &'a [PodEquivalenceGroup], template: &NodeInfo) -> Vec<&'a PodEquivalenceGroup> {
    let mut ordered: Vec<&PodEquivalenceGroup> = groups.iter().filter(|g| !g.pods.is_empty()).collect();
    ordered.sort_by(|a, b| {
        share_of_template(b.exemplar(), template).total_cmp(&share_of_template(a.exemplar(), template))
    });
    ordered
}

/// Estimates how many template nodes `groups` need. With `fast_path`, the group that benefits
/// most is packed onto one node and the rest counted arithmetically (`--fastpath-binpacking-enabled`).
pub fn estimate(
    snapshot: &mut ClusterSnapshot,
    groups: &[PodEquivalenceGroup],
    template: &NodeInfo,
    limiter: &mut EstimationLimiter,
    fast_path: bool,
) -> Result<Estimate, SnapshotError> {
    let mut ordered = order_groups(groups, template);
    let mut fast_last = false;
    if fast_path && let Some(best) = best_group_for_fast_path(&ordered, template) {
        let group = ordered.remove(best);
        ordered.push(group);
        fast_last = true;
    }
    snapshot.fork();
    let result = run(snapshot, &ordered, template, limiter, fast_last);
    snapshot.revert();
    let state = result?;
    Ok(Estimate {
        node_count: state.with_pods.len() + state.counted_nodes,
        scheduled_pods: state.scheduled,
        limited: limiter.was_limited(),
    })
}

fn run(
    snapshot: &mut ClusterSnapshot,
    groups: &[&PodEquivalenceGroup],
    template: &NodeInfo,
    limiter: &mut EstimationLimiter,
    fast_last: bool,
) -> Result<State, SnapshotError> {
    let mut state = State {
        new_nodes: Vec::new(),
        with_pods: HashSet::new(),
        last: None,
        next_index: 0,
        search_start: 0,
        scheduled: Vec::new(),
        counted_nodes: 0,
    };
    let mut new_nodes_available = true;
    for (i, group) in groups.iter().enumerate() {
        let mut placed = 0;
        for pod in &group.pods {
            match on_filled_new_nodes(snapshot, &mut state, pod) {
                Some(node) => {
                    state.track(snapshot, pod, node)?;
                    placed += 1;
                }
                None => break,
            }
        }
        if !new_nodes_available {
            continue;
        }
        let remaining = &group.pods[placed..];
        new_nodes_available = if fast_last && i + 1 == groups.len() {
            fast_path_on_new_nodes(snapshot, &mut state, template, limiter, remaining)?
        } else {
            on_new_nodes(snapshot, &mut state, template, limiter, remaining)?
        };
    }
    Ok(state)
}

/// Tries the nodes this estimation added that already hold pods: the last one first (it is the
/// one most likely to have room), then the others from where the previous search stopped.
fn on_filled_new_nodes(snapshot: &mut ClusterSnapshot, state: &mut State, pod: &PodInfo) -> Option<NodeId> {
    let prepared = snapshot.prepare(pod);
    if state.last_has_pods() {
        let last = state.last.expect("last node");
        if snapshot.fits(&prepared, last) {
            return Some(last);
        }
    }
    let n = state.new_nodes.len();
    for offset in 0..n {
        let index = (state.search_start + offset) % n;
        let node = state.new_nodes[index];
        if Some(node) == state.last {
            continue;
        }
        if snapshot.fits(&prepared, node) {
            state.search_start = index;
            return Some(node);
        }
    }
    None
}

fn uses_hostname_spread(pod: &PodInfo) -> bool {
    pod.shape.spread_constraints.iter().any(|c| c.term.topology_key == HOSTNAME_LABEL)
}

fn add_template_node(
    snapshot: &mut ClusterSnapshot,
    state: &mut State,
    template: &NodeInfo,
) -> Result<NodeId, SnapshotError> {
    let copy = template.renamed_copy(&format!("e-{}", state.next_index));
    state.next_index += 1;
    let id = snapshot.add_node_info(copy)?;
    state.new_nodes.push(id);
    state.last = Some(id);
    Ok(id)
}

/// Returns whether opening new nodes is still allowed (false once the limiter said no).
fn on_new_nodes(
    snapshot: &mut ClusterSnapshot,
    state: &mut State,
    template: &NodeInfo,
    limiter: &mut EstimationLimiter,
    pods: &[Arc<PodInfo>],
) -> Result<bool, SnapshotError> {
    for pod in pods {
        let mut found = None;
        if let Some(last) = state.last {
            let prepared = snapshot.prepare(pod);
            match snapshot.check(&prepared, last) {
                Ok(()) => found = Some(last),
                Err(Unfit::TopologySpread) if uses_hostname_spread(pod) => {
                    let mut hint = simulator::scheduling::SearchHint::default();
                    found = snapshot.find_node_for(pod, &mut hint, |id, _| id != last);
                }
                Err(_) => {}
            }
        }
        if let Some(node) = found {
            state.track(snapshot, pod, node)?;
            continue;
        }
        if state.last.is_some() && !state.last_has_pods() {
            // The pod did not fit an empty template node: another one would not help.
            return Ok(true);
        }
        if !limiter.permission_to_add_node() {
            return Ok(false);
        }
        let node = add_template_node(snapshot, state, template)?;
        if snapshot.check_pod(pod, node).is_err() {
            // E.g. zonal spreading: a new node of this template cannot help this group.
            break;
        }
        state.track(snapshot, pod, node)?;
    }
    Ok(true)
}

/// Packs one fresh node with as many pods as fit, then counts ⌈pods / per-node⌉ nodes
/// arithmetically without simulating them.
fn fast_path_on_new_nodes(
    snapshot: &mut ClusterSnapshot,
    state: &mut State,
    template: &NodeInfo,
    limiter: &mut EstimationLimiter,
    pods: &[Arc<PodInfo>],
) -> Result<bool, SnapshotError> {
    if pods.is_empty() {
        return Ok(true);
    }
    if state.last.is_none() || state.last_has_pods() {
        if !limiter.permission_to_add_node() {
            return Ok(false);
        }
        add_template_node(snapshot, state, template)?;
    }
    let node = state.last.expect("a node was added");
    let mut per_node = 0;
    while per_node < pods.len() && snapshot.check_pod(&pods[per_node], node).is_ok() {
        state.track(snapshot, &pods[per_node], node)?;
        per_node += 1;
    }
    if per_node == 0 {
        return Ok(true);
    }
    let nodes_needed = pods.len().div_ceil(per_node);
    let mut next = per_node;
    for _ in 1..nodes_needed {
        if !limiter.permission_to_add_node() {
            return Ok(false);
        }
        let take = per_node.min(pods.len() - next);
        state.scheduled.extend(pods[next..next + take].iter().cloned());
        state.counted_nodes += 1;
        next += take;
    }
    Ok(true)
}

/// Upstream's choice of the group to fast-path: the one saving the most simulations
/// (pods − pods/nodes, nodes estimated from cpu, memory and hostname anti-affinity), never a
/// group with spread constraints or non-hostname anti-affinity; ties go to the later group.
fn best_group_for_fast_path(groups: &[&PodEquivalenceGroup], template: &NodeInfo) -> Option<usize> {
    let capacity = |name: &str| {
        let from_capacity = template
            .node
            .status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .map(|c| simulator::Resources::from_list_lossy(Some(c)).get(name))
            .unwrap_or(0);
        if from_capacity > 0 { from_capacity } else { template.allocatable.get(name) }
    };
    let mut best = None;
    let mut max_saved = 0usize;
    for (i, group) in groups.iter().enumerate() {
        let exemplar = group.exemplar();
        let count = group.pods.len();
        let by_anti_affinity = if exemplar
            .shape
            .anti_affinity_terms
            .iter()
            .any(|t| t.topology_key == HOSTNAME_LABEL && t.selector.matches(exemplar.labels()))
        {
            count
        } else {
            0
        };
        let by = |name: &str| {
            let cap = capacity(name);
            if cap > 0 {
                ((count as f64) * exemplar.requests().get(name) as f64 / cap as f64).ceil() as usize
            } else {
                0
            }
        };
        let nodes = by_anti_affinity.max(by(CPU)).max(by(MEMORY));
        let saved = count.checked_div(nodes).map_or(0, |per_node| count - per_node);
        let eligible = exemplar.shape.spread_constraints.is_empty()
            && exemplar.spec().topology_spread_constraints.is_none()
            && exemplar.shape.anti_affinity_terms.iter().all(|t| t.topology_key == HOSTNAME_LABEL);
        if saved >= max_saved && eligible {
            best = Some(i);
            max_saved = saved;
        }
    }
    best
}
