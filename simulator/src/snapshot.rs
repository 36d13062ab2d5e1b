//! `ClusterSnapshot`: the simulated cluster (nodes and the pods placed on them) with cheap
//! what-ifs.
//!
//! Every mutation is applied in place and recorded in an undo log. `fork()` marks the log,
//! `revert()` undoes back to the mark, `commit()` drops the mark; all three cost O(change),
//! never O(cluster), and reads never look through layers.
//!
//! The snapshot also keeps a topology index (see `index.rs`) so that inter-pod affinity and
//! topology spread are answered from counters instead of scans over every pod.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Node};

use crate::index::TopologyIndex;
use crate::labels::Labels;
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::volumes::VolumeIndex;
use crate::well_known::NAMESPACE_NAME_LABEL;

/// Stable handle of a node in one snapshot. Ids are never reused within a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A set of node ids, as a bitmap: membership tests in node searches must be cheap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSet {
    bits: Vec<bool>,
    len: usize,
}

impl NodeSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, id: NodeId) {
        let i = id.index();
        if i >= self.bits.len() {
            self.bits.resize(i + 1, false);
        }
        if !self.bits[i] {
            self.bits[i] = true;
            self.len += 1;
        }
    }

    pub fn contains(&self, id: NodeId) -> bool {
        self.bits.get(id.index()).copied().unwrap_or(false)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SnapshotError {
    #[error("node {0} already exists in the snapshot")]
    DuplicateNode(String),
    #[error("node {0} not found in the snapshot")]
    NodeNotFound(String),
    #[error("pod {0} already exists in the snapshot")]
    DuplicatePod(String),
    #[error("pod {0} not found in the snapshot")]
    PodNotFound(String),
    #[error("node {0} cannot be replaced here (another name, pods on it, or inside a what-if)")]
    NodeNotReplaceable(String),
    #[error("node {0} cannot be inserted between others inside a what-if")]
    NodeNotInsertable(String),
    #[error("pod {0} cannot be inserted between others inside a what-if")]
    PodNotInsertable(String),
    #[error("the snapshot holds as many nodes as a node id can number")]
    TooManyNodes,
}

#[derive(Debug)]
enum Undo {
    PodAdded { node: NodeId },
    PodRemoved { node: NodeId, position: usize, pod: Arc<PodInfo> },
    NodeAdded { node: NodeId },
    NodeRemoved { node: NodeId, info: Box<NodeInfo> },
    MarkedToBeDeleted { node: NodeId, before: bool },
}

#[derive(Debug, Default)]
pub struct ClusterSnapshot {
    /// By id; `None` where a node was removed.
    nodes: Vec<Option<NodeInfo>>,
    /// The nodes' order (searches, `nodes()`): every id once, removed ones included (skipped).
    /// Ids are given in insertion order; a node inserted between others (`insert_node_after`)
    /// takes a new id and its place here.
    order: Vec<NodeId>,
    by_name: HashMap<Arc<str>, NodeId>,
    pod_location: HashMap<Arc<str>, NodeId>,
    namespace_labels: HashMap<String, Labels>,
    pub(crate) index: TopologyIndex,
    /// The cluster's claims, volumes, classes and CSI limits; `None` when the source of the
    /// snapshot does not report them, and then the volume filters are off.
    pub(crate) volumes: Option<Box<VolumeIndex>>,
    undo: Vec<Undo>,
    marks: Vec<usize>,
    live_nodes: usize,
}

impl ClusterSnapshot {
    pub fn new() -> Self {
        Self::default()
    }

    /// Namespace labels, for `namespaceSelector` in pod affinity terms. Namespaces without an
    /// object still carry their automatic `kubernetes.io/metadata.name` label.
    pub fn set_namespaces<'a>(&mut self, namespaces: impl IntoIterator<Item = &'a Namespace>) {
        for ns in namespaces {
            let name = ns.metadata.name.clone().unwrap_or_default();
            let mut labels = ns.metadata.labels.clone().unwrap_or_default();
            labels.entry(NAMESPACE_NAME_LABEL.to_string()).or_insert_with(|| name.clone());
            self.namespace_labels.insert(name, labels);
        }
    }

    /// The cluster's PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes
    /// (see `volumes.rs`): from now on pods with claims go through the volume filters. Replaces
    /// any earlier index (a claim or volume changed).
    pub fn set_volumes(&mut self, index: VolumeIndex) {
        self.volumes = Some(Box::new(index));
    }

    /// Turns the volume filters off again (the source of the next decision reports no volumes).
    pub fn clear_volumes(&mut self) {
        self.volumes = None;
    }

    /// The volume a `WaitForFirstConsumer` claim would bind to on this node (see
    /// `VolumeIndex::matching_volume`).
    pub fn matching_volume(&mut self, claim_key: &Arc<str>, node: NodeId, chosen: &[&str]) -> Option<String> {
        let info = self.nodes.get(node.index())?.as_ref()?;
        self.volumes.as_deref_mut()?.matching_volume(claim_key, info, chosen)
    }

    /// Whether the volume filters are on.
    pub fn knows_volumes(&self) -> bool {
        self.volumes.is_some()
    }

    pub(crate) fn namespace_labels(&self) -> &HashMap<String, Labels> {
        &self.namespace_labels
    }

    /// Room for `additional` more pods, so that building a snapshot of a large cluster does
    /// not rehash its pod index again and again.
    pub fn reserve_pods(&mut self, additional: usize) {
        self.pod_location.reserve(additional);
    }

    // ----- reads -----

    pub fn node_count(&self) -> usize {
        self.live_nodes
    }

    /// Upper bound (exclusive) of the positions in the nodes' order, for iteration with
    /// `node_at`.
    pub fn position_bound(&self) -> usize {
        self.order.len()
    }

    /// Upper bound (exclusive) of the ids of the nodes added, live or removed: for tables
    /// indexed by `NodeId::index` (ids are never reused).
    pub fn id_bound(&self) -> usize {
        self.nodes.len()
    }

    /// The node at `position` in the order; `None` where a node was removed.
    pub fn node_at(&self, position: usize) -> Option<(NodeId, &NodeInfo)> {
        let id = *self.order.get(position)?;
        self.node(id).map(|n| (id, n))
    }

    /// How many removed nodes the order still holds a place for.
    pub fn removed_places(&self) -> usize {
        self.order.len() - self.live_nodes
    }

    pub fn node(&self, id: NodeId) -> Option<&NodeInfo> {
        self.nodes.get(id.index()).and_then(Option::as_ref)
    }

    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    pub fn node_by_name(&self, name: &str) -> Option<&NodeInfo> {
        self.node_id(name).and_then(|id| self.node(id))
    }

    /// Live nodes in order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &NodeInfo)> {
        self.order.iter().filter_map(|id| self.node(*id).map(|n| (*id, n)))
    }

    pub fn pod_node(&self, pod_key: &str) -> Option<NodeId> {
        self.pod_location.get(pod_key).copied()
    }

    pub fn pod_count(&self) -> usize {
        self.pod_location.len()
    }

    // ----- what-ifs -----

    /// Starts a what-if; nest freely.
    pub fn fork(&mut self) {
        self.marks.push(self.undo.len());
    }

    /// Undoes everything since the matching `fork()`.
    pub fn revert(&mut self) {
        let mark = self.marks.pop().expect("revert without fork");
        while self.undo.len() > mark {
            let entry = self.undo.pop().expect("undo entry");
            self.apply_undo(entry);
        }
    }

    /// Keeps everything since the matching `fork()` (it becomes part of the outer what-if).
    pub fn commit(&mut self) {
        self.marks.pop().expect("commit without fork");
        if self.marks.is_empty() {
            self.undo.clear();
        }
    }

    pub fn fork_depth(&self) -> usize {
        self.marks.len()
    }

    fn record(&mut self, entry: Undo) {
        if !self.marks.is_empty() {
            self.undo.push(entry);
        }
    }

    fn apply_undo(&mut self, entry: Undo) {
        match entry {
            Undo::PodAdded { node } => {
                let info = self.nodes[node.index()].as_mut().expect("live node");
                let position = info.pods.len() - 1;
                let pod = info.take_pod(position);
                self.pod_location.remove(&pod.key);
                let info = self.nodes[node.index()].as_ref().expect("live node");
                self.index.pod_removed(&pod, node, info, &self.namespace_labels);
            }
            Undo::PodRemoved { node, position, pod } => {
                self.pod_location.insert(pod.key.clone(), node);
                let info = self.nodes[node.index()].as_mut().expect("live node");
                info.insert_pod(position, pod.clone());
                let info = self.nodes[node.index()].as_ref().expect("live node");
                self.index.pod_added(&pod, node, info, &self.namespace_labels);
            }
            Undo::NodeAdded { node } => {
                let info = self.nodes[node.index()].take().expect("live node");
                debug_assert!(info.pods.is_empty());
                self.by_name.remove(&info.name);
                self.index.node_removed(&info);
                self.live_nodes -= 1;
                // Added inside the what-if, so last by id and in the order.
                if node.index() + 1 == self.nodes.len() {
                    self.nodes.pop();
                }
                if self.order.last() == Some(&node) {
                    self.order.pop();
                }
            }
            Undo::NodeRemoved { node, info } => {
                self.restore_node(node, *info);
            }
            Undo::MarkedToBeDeleted { node, before } => {
                if let Some(n) = self.nodes[node.index()].as_mut() {
                    n.to_be_deleted = before;
                }
            }
        }
    }

    // ----- mutations -----

    /// Adds a node without pods.
    pub fn add_node(&mut self, node: Arc<Node>) -> Result<NodeId, SnapshotError> {
        self.add_node_info(NodeInfo::new(node))
    }

    /// Adds a node together with the pods already in its `NodeInfo` (e.g. a template's
    /// DaemonSet pods).
    pub fn add_node_info(&mut self, info: NodeInfo) -> Result<NodeId, SnapshotError> {
        let position = self.order.len();
        self.put_node(info, position)
    }

    /// Adds a node without pods right after `after` in the order (first with `None`), outside
    /// any what-if: a kept snapshot takes in a node that joined the cluster in the place a
    /// fresh build would give it.
    pub fn insert_node_after(&mut self, after: Option<NodeId>, node: Arc<Node>) -> Result<NodeId, SnapshotError> {
        let info = NodeInfo::new(node);
        if !self.marks.is_empty() {
            return Err(SnapshotError::NodeNotInsertable(info.name.to_string()));
        }
        let position = match after {
            None => 0,
            Some(after) => match self.order.iter().position(|id| *id == after) {
                Some(p) if self.node(after).is_some() => p + 1,
                _ => return Err(SnapshotError::NodeNotFound(format!("#{}", after.0))),
            },
        };
        self.put_node(info, position)
    }

    fn put_node(&mut self, mut info: NodeInfo, position: usize) -> Result<NodeId, SnapshotError> {
        if self.by_name.contains_key(&info.name) {
            return Err(SnapshotError::DuplicateNode(info.name.to_string()));
        }
        let pods = info.take_pods();
        let id = NodeId(u32::try_from(self.nodes.len()).map_err(|_| SnapshotError::TooManyNodes)?);
        self.by_name.insert(info.name.clone(), id);
        self.index.node_added(&info);
        self.nodes.push(Some(info));
        self.order.insert(position, id);
        self.live_nodes += 1;
        self.record(Undo::NodeAdded { node: id });
        for pod in pods {
            self.add_pod(pod, id)?;
        }
        Ok(id)
    }

    fn restore_node(&mut self, id: NodeId, mut info: NodeInfo) {
        let pods = info.take_pods();
        self.by_name.insert(info.name.clone(), id);
        self.index.node_added(&info);
        self.nodes[id.index()] = Some(info);
        self.live_nodes += 1;
        for pod in pods {
            self.pod_location.insert(pod.key.clone(), id);
            let info = self.nodes[id.index()].as_mut().expect("live node");
            info.push_pod(pod.clone());
            let info = self.nodes[id.index()].as_ref().expect("live node");
            self.index.pod_added(&pod, id, info, &self.namespace_labels);
        }
    }

    /// Puts a new version of a node (same name) in its place, keeping its id and its place in
    /// the order, outside any what-if. The node must hold no pods: take them out first and
    /// place them again after.
    pub fn replace_node(&mut self, id: NodeId, node: Arc<Node>) -> Result<(), SnapshotError> {
        let fresh = NodeInfo::new(node);
        let Some(info) = self.nodes.get_mut(id.index()).and_then(Option::as_mut) else {
            return Err(SnapshotError::NodeNotFound(format!("#{}", id.0)));
        };
        if info.name != fresh.name || !info.pods.is_empty() || !self.marks.is_empty() {
            return Err(SnapshotError::NodeNotReplaceable(info.name.to_string()));
        }
        let old = std::mem::replace(info, fresh);
        self.index.node_removed(&old);
        let info = self.nodes[id.index()].as_ref().expect("live node");
        self.index.node_added(info);
        Ok(())
    }

    /// Removes a node and its pods.
    pub fn remove_node(&mut self, id: NodeId) -> Result<(), SnapshotError> {
        let Some(info) = self.nodes.get_mut(id.index()).and_then(Option::take) else {
            return Err(SnapshotError::NodeNotFound(format!("#{}", id.0)));
        };
        for pod in &info.pods {
            self.pod_location.remove(&pod.key);
            self.index.pod_removed(pod, id, &info, &self.namespace_labels);
        }
        self.index.node_removed(&info);
        self.by_name.remove(&info.name);
        self.live_nodes -= 1;
        self.record(Undo::NodeRemoved { node: id, info: Box::new(info) });
        Ok(())
    }

    /// Places a pod on a node. No predicate is checked here: callers decide that.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>, node: NodeId) -> Result<(), SnapshotError> {
        self.place_pod(pod, node, usize::MAX)?;
        self.record(Undo::PodAdded { node });
        Ok(())
    }

    /// Places a pod on a node at `position` in its list of pods (at the end when past it),
    /// outside any what-if: bringing a kept base up to date keeps the pods of a node in the
    /// order a fresh build would place them, without taking out the ones that did not change.
    pub fn insert_pod(&mut self, pod: Arc<PodInfo>, node: NodeId, position: usize) -> Result<(), SnapshotError> {
        if !self.marks.is_empty() {
            return Err(SnapshotError::PodNotInsertable(pod.key.to_string()));
        }
        self.place_pod(pod, node, position)
    }

    /// A pod placed at `position` in a node's list (at the end when past it), located and
    /// indexed; nothing recorded for a what-if.
    fn place_pod(&mut self, pod: Arc<PodInfo>, node: NodeId, position: usize) -> Result<(), SnapshotError> {
        // One hash of the key for the check and the insertion: a snapshot is built pod by pod.
        let location = match self.pod_location.entry(pod.key.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => {
                return Err(SnapshotError::DuplicatePod(pod.key.to_string()));
            }
            std::collections::hash_map::Entry::Vacant(v) => v,
        };
        let Some(info) = self.nodes.get_mut(node.index()).and_then(Option::as_mut) else {
            return Err(SnapshotError::NodeNotFound(format!("#{}", node.0)));
        };
        let position = position.min(info.pods.len());
        info.insert_pod(position, pod.clone());
        location.insert(node);
        let info = self.nodes[node.index()].as_ref().expect("live node");
        self.index.pod_added(&pod, node, info, &self.namespace_labels);
        Ok(())
    }

    /// Removes a pod from wherever it is placed and returns it.
    pub fn remove_pod(&mut self, pod_key: &str) -> Result<Arc<PodInfo>, SnapshotError> {
        // One look-up in the (large, rarely cached) location table instead of a `get` and a
        // `remove`: scale-down removes every pod of every candidate it tries.
        let node = self.pod_location.remove(pod_key).ok_or_else(|| SnapshotError::PodNotFound(pod_key.to_string()))?;
        let info = self.nodes[node.index()].as_mut().expect("live node");
        // Callers usually pass the key of the very PodInfo they took from the node: try the
        // pointer before comparing strings that mostly share a long prefix.
        let position = info
            .pods
            .iter()
            .position(|p| std::ptr::eq(&*p.key, pod_key))
            .or_else(|| info.pods.iter().position(|p| &*p.key == pod_key))
            .expect("pod location is consistent");
        let pod = info.take_pod(position);
        let info = self.nodes[node.index()].as_ref().expect("live node");
        self.index.pod_removed(&pod, node, info, &self.namespace_labels);
        if !self.marks.is_empty() {
            // A removal undone inside a fork must restore the same order of pods.
            self.undo.push(Undo::PodRemoved { node, position, pod: pod.clone() });
        }
        Ok(pod)
    }

    /// Marks a node as being deleted: it keeps its place (and its topology domain) but accepts
    /// no new pods, like a node carrying the ToBeDeleted taint.
    pub fn mark_to_be_deleted(&mut self, id: NodeId) -> Result<(), SnapshotError> {
        let Some(info) = self.nodes.get_mut(id.index()).and_then(Option::as_mut) else {
            return Err(SnapshotError::NodeNotFound(format!("#{}", id.0)));
        };
        let before = info.to_be_deleted;
        info.to_be_deleted = true;
        self.record(Undo::MarkedToBeDeleted { node: id, before });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{node, pod};

    #[test]
    fn fork_revert_restores_nodes_and_pods() {
        let mut s = ClusterSnapshot::new();
        let a = s.add_node(Arc::new(node("a", "4", "8Gi"))).unwrap();
        s.add_pod(Arc::new(PodInfo::new(&pod("p1", "1", "1Gi"))), a).unwrap();
        s.fork();
        let b = s.add_node(Arc::new(node("b", "4", "8Gi"))).unwrap();
        s.add_pod(Arc::new(PodInfo::new(&pod("p2", "1", "1Gi"))), b).unwrap();
        s.remove_pod("default/p1").unwrap();
        s.remove_node(a).unwrap();
        assert_eq!(s.node_count(), 1);
        s.revert();
        assert_eq!(s.node_count(), 1, "only `a` remains after revert");
        assert!(s.node_by_name("b").is_none());
        let a_info = s.node_by_name("a").unwrap();
        assert_eq!(a_info.pods.len(), 1);
        assert_eq!(a_info.requested.cpu_millis, 1000);
        assert_eq!(s.pod_node("default/p1"), Some(a));
        assert_eq!(s.pod_node("default/p2"), None);
    }

    #[test]
    fn commit_keeps_changes_and_nested_revert_only_undoes_inner() {
        let mut s = ClusterSnapshot::new();
        s.fork();
        let a = s.add_node(Arc::new(node("a", "4", "8Gi"))).unwrap();
        s.fork();
        s.add_pod(Arc::new(PodInfo::new(&pod("p1", "1", "1Gi"))), a).unwrap();
        s.commit();
        s.fork();
        s.add_pod(Arc::new(PodInfo::new(&pod("p2", "1", "1Gi"))), a).unwrap();
        s.revert();
        assert_eq!(s.node_by_name("a").unwrap().pods.len(), 1);
        s.revert();
        assert_eq!(s.node_count(), 0);
        assert_eq!(s.pod_count(), 0);
    }

    #[test]
    fn removal_revert_preserves_pod_order() {
        let mut s = ClusterSnapshot::new();
        let a = s.add_node(Arc::new(node("a", "4", "8Gi"))).unwrap();
        for name in ["p1", "p2", "p3"] {
            s.add_pod(Arc::new(PodInfo::new(&pod(name, "100m", "1Mi"))), a).unwrap();
        }
        s.fork();
        s.remove_pod("default/p2").unwrap();
        s.revert();
        let order: Vec<_> = s.node(a).unwrap().pods.iter().map(|p| p.key.to_string()).collect();
        assert_eq!(order, ["default/p1", "default/p2", "default/p3"]);
    }

    /// A node replaced with other labels moves to another topology domain: the index answers
    /// for the new one, the node keeps its id and place.
    #[test]
    fn a_replaced_node_counts_in_its_new_topology_domain() {
        use crate::testing::{on_node, with_labels, with_node_labels};
        let zoned = |name: &str, zone: &str| Arc::new(with_node_labels(node(name, "4", "8Gi"), &[("zone", zone)]));
        let mut s = ClusterSnapshot::new();
        let a = s.add_node(zoned("a", "z1")).unwrap();
        let b = s.add_node(zoned("b", "z2")).unwrap();
        let running = with_labels(on_node(pod("p", "1", "1Gi"), "a"), &[("app", "x")]);
        s.add_pod(Arc::new(PodInfo::new(&running)), a).unwrap();
        let mut spec: k8s_openapi::api::core::v1::Pod = pod("q", "1", "1Gi");
        spec.spec.as_mut().unwrap().affinity = Some(
            serde_json::from_value(serde_json::json!({
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}]}
            }))
            .unwrap(),
        );
        let pending = PodInfo::new(&spec);
        assert!(s.check_pod(&pending, b).is_ok(), "b is in another zone than p");

        s.replace_node(b, zoned("b", "z1")).unwrap();
        assert!(matches!(s.check_pod(&pending, b), Err(crate::Unfit::PodAntiAffinity)), "b is in p's zone now");
        assert_eq!(s.node_id("b"), Some(b));
        assert_eq!(s.nodes().map(|(_, n)| n.name.to_string()).collect::<Vec<_>>(), ["a", "b"]);

        // A node with pods, or another name, or inside a what-if, is not replaced.
        assert!(matches!(s.replace_node(a, zoned("a", "z3")), Err(SnapshotError::NodeNotReplaceable(_))));
        assert!(matches!(s.replace_node(b, zoned("c", "z3")), Err(SnapshotError::NodeNotReplaceable(_))));
        s.fork();
        assert!(matches!(s.replace_node(b, zoned("b", "z3")), Err(SnapshotError::NodeNotReplaceable(_))));
        s.revert();

        // `p` out, `a` moved to a third zone, `p` back: `b` is free of it again.
        let p = s.remove_pod("default/p").unwrap();
        s.replace_node(a, zoned("a", "z3")).unwrap();
        s.add_pod(p, a).unwrap();
        assert!(s.check_pod(&pending, b).is_ok(), "p's zone is z3 now");
        assert_eq!(s.node(a).unwrap().requested.cpu_millis, 1000);
    }

    /// A node inserted between others is searched in its place; a node added inside a
    /// what-if and reverted leaves the order as it was; a removed node's place is skipped.
    #[test]
    fn an_inserted_node_takes_its_place_in_the_order() {
        let names = |s: &ClusterSnapshot| s.nodes().map(|(_, n)| n.name.to_string()).collect::<Vec<_>>();
        let mut s = ClusterSnapshot::new();
        let a = s.add_node(Arc::new(node("a", "4", "8Gi"))).unwrap();
        let c = s.add_node(Arc::new(node("c", "4", "8Gi"))).unwrap();
        let b = s.insert_node_after(Some(a), Arc::new(node("b", "1", "8Gi"))).unwrap();
        s.insert_node_after(None, Arc::new(node("0", "1", "8Gi"))).unwrap();
        assert_eq!(names(&s), ["0", "a", "b", "c"]);
        assert_eq!(s.node_id("b"), Some(b));

        // Searches go in the order: after `a`, `b` (too small for 2 cpus), then `c`.
        let mut hint = crate::scheduling::SearchHint::default();
        let big = PodInfo::new(&pod("big", "2", "1Gi"));
        let positions: Vec<_> = (0..s.position_bound()).filter_map(|p| s.node_at(p).map(|(id, _)| id)).collect();
        assert_eq!(positions, [NodeId(3), a, b, c]);
        s.find_node_for(&big, &mut hint, |id, _| id != NodeId(3) && id != a);
        assert_eq!(s.find_node_for(&big, &mut hint, |id, _| id != NodeId(3) && id != a), Some(c));

        s.fork();
        s.add_node(Arc::new(node("d", "4", "8Gi"))).unwrap();
        assert!(matches!(
            s.insert_node_after(Some(a), Arc::new(node("e", "4", "8Gi"))),
            Err(SnapshotError::NodeNotInsertable(_))
        ));
        s.revert();
        assert_eq!(names(&s), ["0", "a", "b", "c"]);

        s.remove_node(b).unwrap();
        assert_eq!(names(&s), ["0", "a", "c"]);
        assert_eq!(s.removed_places(), 1);
        assert!(matches!(
            s.insert_node_after(Some(b), Arc::new(node("f", "4", "8Gi"))),
            Err(SnapshotError::NodeNotFound(_))
        ));
        s.insert_node_after(Some(c), Arc::new(node("g", "4", "8Gi"))).unwrap();
        assert_eq!(names(&s), ["0", "a", "c", "g"]);
    }

    #[test]
    fn duplicates_are_rejected() {
        let mut s = ClusterSnapshot::new();
        let a = s.add_node(Arc::new(node("a", "4", "8Gi"))).unwrap();
        assert!(matches!(s.add_node(Arc::new(node("a", "4", "8Gi"))), Err(SnapshotError::DuplicateNode(_))));
        let p = Arc::new(PodInfo::new(&pod("p1", "1", "1Gi")));
        s.add_pod(p.clone(), a).unwrap();
        assert!(matches!(s.add_pod(p, a), Err(SnapshotError::DuplicatePod(_))));
    }
}
