//! The scheduling snapshot's base — the registered nodes with the pods bound to them — kept
//! from one decision to the next and brought up to date by deltas instead of built again.
//!
//! Building it pod by pod was most of a decision on a large cluster (a third of `simulate`'s
//! time at 100,000 pods), while from one loop to the next only a few nodes' pods change. A
//! decision works on the base inside a `fork()` and reverts it at the end, so what is kept is
//! exactly the base again. The next decision reuses it when it has nodes of the same names in
//! the same order and the same namespace objects. Objects are compared by address: the
//! reflector stores and the memory cluster hand out the same `Arc` for an object that did not
//! change. A node whose object changed (kubelets report status every few minutes) is replaced
//! in its place; the pods of a node whose pods differ are replaced in the view's order (a node
//! whose pod list is the very list the kept base was made from, as the sorting of the pods
//! hands it out again while they do not change, is not compared pod by pod); a node
//! that left is removed and one that joined is inserted after the node before it in the view
//! (a burst's scale-up brings tens of nodes, and a fresh build at 5,000 nodes / 150,000 pods
//! takes about 120 ms of the iteration that answers the next burst). The result holds the same
//! nodes and pods in the same order as a fresh build, so the decision is the same. Anything
//! else builds the base afresh: the kept nodes in another relative order (the reflector's store
//! grew and rehashed), a namespace's labels, or many removed nodes' places in the order.

use std::borrow::Borrow;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Namespace, Node};
use rustc_hash::FxHashMap;
use simulator::{ClusterSnapshot, NodeId, PodInfo};

use super::classify::NodePods;
use super::node_positions::name_of;

/// The last decision's base, when there is one.
#[derive(Default)]
pub struct SnapshotCache {
    base: Mutex<Option<Base>>,
    /// The pod lists of the base handed out last, kept with it by `keep`.
    lists_in_use: Mutex<PodLists>,
}

/// The pod list each node of a base was made from.
type PodLists = FxHashMap<NodeId, NodePods>;

struct Base {
    snapshot: ClusterSnapshot,
    /// The namespaces whose labels the snapshot holds (affinity terms' `namespaceSelector`).
    namespaces: Vec<Arc<Namespace>>,
    lists: PodLists,
}

impl Clone for SnapshotCache {
    /// An empty cache: a copy of the loop's memory builds its own base, the same one.
    fn clone(&self) -> Self {
        SnapshotCache::default()
    }
}

impl std::fmt::Debug for SnapshotCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes = self.base.lock().map_or(0, |b| b.as_ref().map_or(0, |b| b.snapshot.node_count()));
        write!(f, "SnapshotCache({nodes} nodes)")
    }
}

/// How the base of a decision was obtained (for the timings log and the tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BaseBuild {
    #[default]
    Fresh,
    /// Reused: this many nodes joined and left, and the pods of this many nodes (those that
    /// joined included) were replaced.
    Updated { nodes_added: usize, nodes_removed: usize, nodes_changed: usize },
}

impl std::fmt::Display for BaseBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaseBuild::Fresh => write!(f, "built"),
            BaseBuild::Updated { nodes_added, nodes_removed, nodes_changed } => write!(
                f,
                "kept, {nodes_added} node(s) added, {nodes_removed} removed, pods of {nodes_changed} node(s) replaced"
            ),
        }
    }
}

impl SnapshotCache {
    /// A snapshot holding `nodes` in this order, each with `pods_of(its name)` in that order,
    /// and the labels of `namespaces`, outside any fork.
    pub fn base<'p>(
        &self,
        nodes: &[&Arc<Node>],
        pods_of: impl Fn(&str) -> Option<&'p NodePods>,
        namespaces: &[Arc<Namespace>],
        pod_count: usize,
    ) -> (ClusterSnapshot, BaseBuild) {
        let kept = self.base.lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut lists = PodLists::default();
        if let Some(kept) = kept.filter(|k| same_objects(&k.namespaces, namespaces))
            && let Some((snapshot, build)) = update(kept.snapshot, &kept.lists, &mut lists, nodes, &pods_of)
        {
            *self.lists_in_use.lock().unwrap_or_else(|e| e.into_inner()) = lists;
            return (snapshot, build);
        }
        lists.clear();
        let mut snapshot = ClusterSnapshot::new();
        snapshot.reserve_pods(pod_count);
        snapshot.set_namespaces(namespaces.iter().map(|n| &**n));
        for node in nodes {
            let Ok(id) = snapshot.add_node(Arc::clone(node)) else { continue };
            if let Some(pods) = pods_of(node.metadata.name.as_deref().unwrap_or("")) {
                let mut placed_all = true;
                for pod in pods.iter() {
                    // A pod listed twice (hostile input) is placed once, on the first node.
                    placed_all &= snapshot.add_pod(Arc::clone(pod), id).is_ok();
                }
                // Only a node holding its whole list is known by its list next time.
                if placed_all {
                    lists.insert(id, pods.clone());
                }
            }
        }
        *self.lists_in_use.lock().unwrap_or_else(|e| e.into_inner()) = lists;
        (snapshot, BaseBuild::Fresh)
    }

    /// Keeps `snapshot`, back at its base (every fork reverted), for the next decision.
    pub fn keep(&self, snapshot: ClusterSnapshot, namespaces: &[Arc<Namespace>]) {
        if snapshot.fork_depth() != 0 {
            return;
        }
        let lists = std::mem::take(&mut *self.lists_in_use.lock().unwrap_or_else(|e| e.into_inner()));
        *self.base.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Base { snapshot, namespaces: namespaces.to_vec(), lists });
    }
}

/// Whether `a` and `b` hold the same objects (by address) in the same order; `b`'s items may
/// be borrowed (the view's pods of a node).
fn same_objects<T, B: Borrow<Arc<T>>>(a: &[Arc<T>], b: &[B]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b.borrow()))
}

/// How many pods two lists start with and end with that are the same objects (by address),
/// the two runs never overlapping in either list.
fn common_ends(old: &[Arc<PodInfo>], new: &[Arc<PodInfo>]) -> (usize, usize) {
    let first = old.iter().zip(new).take_while(|(a, b)| Arc::ptr_eq(a, b)).count();
    let last = old[first..].iter().rev().zip(new[first..].iter().rev()).take_while(|(a, b)| Arc::ptr_eq(a, b)).count();
    (first, last)
}

/// `snapshot` brought to `nodes` and their pods, when the nodes it keeps are in the same
/// relative order in `nodes`; `None` when they are not (or a pod could not be placed as a fresh
/// build would). A node object that changed (its status, labels, taints) is replaced in its
/// place; a node no longer in `nodes` is removed; a new one is inserted after its predecessor.
/// `lists` gets the pod list of each node of the result.
fn update<'p>(
    mut snapshot: ClusterSnapshot,
    kept_lists: &PodLists,
    lists: &mut PodLists,
    nodes: &[&Arc<Node>],
    pods_of: &impl Fn(&str) -> Option<&'p NodePods>,
) -> Option<(ClusterSnapshot, BaseBuild)> {
    let pods_in = |list: Option<&'p NodePods>| list.map_or(&[][..], |l| l.as_slice());
    if snapshot.fork_depth() != 0 {
        return None;
    }
    // Most loops: the very names the snapshot holds, in its order (and so none twice, as the
    // snapshot holds a name once): nothing gone, nothing out of order, no map of names needed.
    let same_names = snapshot.node_count() == nodes.len()
        && snapshot.nodes().zip(nodes).all(|((_, info), node)| *info.name == *name_of(node));
    let mut gone = Vec::new();
    if !same_names {
        let place: FxHashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (name_of(n), i)).collect();
        if place.len() != nodes.len() {
            // A name listed twice (a fresh build keeps the first): not worth a special case.
            return None;
        }
        let mut last_place = None;
        for (id, info) in snapshot.nodes() {
            match place.get(&*info.name) {
                None => gone.push(id),
                Some(&p) if last_place.is_some_and(|last| p <= last) => return None,
                Some(&p) => last_place = Some(p),
            }
        }
    }
    // Each removed node keeps a place in the snapshot's order: build afresh once they are many.
    if snapshot.removed_places() + gone.len() > snapshot.node_count() / 8 + 64 {
        return None;
    }
    for id in &gone {
        snapshot.remove_node(*id).ok()?;
    }
    // The nodes whose pods are replaced, with the new node object where the node changed.
    let mut changed: Vec<(NodeId, Arc<str>, Option<Arc<Node>>)> = Vec::new();
    let mut nodes_added = 0;
    let mut previous = None;
    for node in nodes {
        let name = name_of(node);
        let list = pods_of(name);
        let id = match snapshot.node_id(name) {
            None => {
                let id = snapshot.insert_node_after(previous, Arc::clone(node)).ok()?;
                nodes_added += 1;
                if !pods_in(list).is_empty() {
                    changed.push((id, Arc::from(name), None));
                }
                id
            }
            Some(id) => {
                let info = snapshot.node(id)?;
                let same_list = match (kept_lists.get(&id), list) {
                    (Some(kept), Some(list)) => Arc::ptr_eq(kept, list),
                    _ => false,
                };
                if !Arc::ptr_eq(&info.node, node) {
                    changed.push((id, info.name.clone(), Some(Arc::clone(node))));
                } else if !same_list && !same_objects(&info.pods, pods_in(list)) {
                    changed.push((id, info.name.clone(), None));
                }
                id
            }
        };
        if let Some(list) = list {
            lists.insert(id, list.clone());
        }
        previous = Some(id);
    }
    // Every changed node's pods out first, then in again in the view's order: a pod that moved
    // between two changed nodes is never in two places. Of a node whose object is the same,
    // only the pods between those its old and new lists start and end with (by address) are
    // replaced, in place: a pod's status change replaces that pod, not the hundred beside it.
    let mut kept_ends = Vec::with_capacity(changed.len());
    for (id, name, node) in &changed {
        let old = &snapshot.node(*id)?.pods;
        let (first, last) = match node {
            Some(_) => (0, 0),
            None => common_ends(old, pods_in(pods_of(name))),
        };
        let keys: Vec<Arc<str>> = old[first..old.len() - last].iter().rev().map(|p| p.key.clone()).collect();
        for key in keys {
            snapshot.remove_pod(&key).ok()?;
        }
        kept_ends.push((first, last));
    }
    for ((id, name, node), (first, last)) in changed.iter().zip(kept_ends) {
        if let Some(node) = node {
            snapshot.replace_node(*id, node.clone()).ok()?;
        }
        let pods = pods_in(pods_of(name));
        for (at, pod) in pods[first..pods.len() - last].iter().enumerate() {
            // A fresh build would have skipped it (a pod listed twice): build afresh.
            snapshot.insert_pod(Arc::clone(pod), *id, first + at).ok()?;
        }
    }
    let build = BaseBuild::Updated { nodes_added, nodes_removed: gone.len(), nodes_changed: changed.len() };
    Some((snapshot, build))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AutoscalingOptions;
    use crate::core::fixtures::{cloud, group, node, replicaset, rs_pod};
    use crate::core::{ClusterState, ClusterView, DecisionInput, LoopMemory, decide};
    use k8s_openapi::jiff::Timestamp;
    use simulator::PodInfo;

    /// 30 nodes: half full of anti-affinity pods, half lightly used (scale-down candidates).
    fn cluster() -> ClusterView {
        let mut view = ClusterView::default();
        for i in 0..30 {
            view.nodes.push(Arc::new(node(&format!("n-{i:02}"), "ng", 4000, 16, 110)));
        }
        view.replicasets.push(Arc::new(replicaset("spread", 15)));
        view.replicasets.push(Arc::new(replicaset("light", 100)));
        for i in 0..15 {
            let name = format!("n-{i:02}");
            view.pods.push(Arc::new(PodInfo::from(rs_pod("spread", i, 3000, 1024, Some(&name), true))));
        }
        for i in 0..30 {
            let name = format!("n-{:02}", 15 + i % 15);
            view.pods.push(Arc::new(PodInfo::from(rs_pod("light", i, 100, 100, Some(&name), false))));
        }
        view
    }

    /// Decides on `view` with `memory` (which keeps its base) and with a copy of it (which
    /// builds the base afresh): the plans must be the same.
    fn decide_both(view: &ClusterView, memory: &mut LoopMemory, now: Timestamp) -> BaseBuild {
        let options = AutoscalingOptions::default();
        let members: Vec<&k8s_openapi::api::core::v1::Node> = view.nodes.iter().map(|n| &**n).collect();
        let groups = vec![group("ng", 0, 100, &members, (*view.nodes[0]).clone())];
        let cloud = cloud(groups, &view.nodes);
        let state = ClusterState::observe(view, &cloud, &options, now);
        let fresh_memory = memory.clone();
        let run = |memory: &LoopMemory| {
            let mut expander = expander::Expander::with_seed(&options.expander, 1).unwrap();
            let input =
                DecisionInput { view, cloud: &cloud, state: &state, options: &options, memory, now, anticipated: &[] };
            decide(&input, &mut expander)
        };
        let fresh = run(&fresh_memory);
        assert_eq!(fresh.timings.base, BaseBuild::Fresh);
        let kept = run(memory);
        assert_eq!(
            serde_json::to_value(&kept.plan).unwrap(),
            serde_json::to_value(&fresh.plan).unwrap(),
            "the plan on the kept base differs from the plan on a fresh one"
        );
        memory.unneeded_since = kept.unneeded_since;
        kept.timings.base
    }

    fn updated(nodes_changed: usize) -> BaseBuild {
        BaseBuild::Updated { nodes_added: 0, nodes_removed: 0, nodes_changed }
    }

    fn added_removed(nodes_added: usize, nodes_removed: usize, nodes_changed: usize) -> BaseBuild {
        BaseBuild::Updated { nodes_added, nodes_removed, nodes_changed }
    }

    fn without(view: &mut ClusterView, name: &str) {
        view.pods.retain(|p| p.name() != name);
    }

    #[test]
    fn a_kept_base_decides_as_a_fresh_one_through_changes() {
        let mut memory = LoopMemory::default();
        let mut now: Timestamp = "2026-01-02T00:00:00Z".parse().unwrap();
        let mut tick = || {
            now += k8s_openapi::jiff::SignedDuration::from_secs(10);
            now
        };
        let mut view = cluster();
        assert_eq!(decide_both(&view, &mut memory, tick()), BaseBuild::Fresh, "nothing kept yet");
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(0));

        // A pod gone, one added, one changed (a new object with other requests).
        without(&mut view, "light-3");
        view.pods.push(Arc::new(PodInfo::from(rs_pod("light", 40, 200, 100, Some("n-20"), false))));
        let changed = view.pods.iter().position(|p| p.name() == "light-7").unwrap();
        view.pods[changed] = Arc::new(PodInfo::from(rs_pod("light", 7, 900, 100, Some("n-22"), false)));
        let changes = decide_both(&view, &mut memory, tick());
        assert!(
            matches!(changes, BaseBuild::Updated { nodes_added: 0, nodes_removed: 0, nodes_changed: 3.. }),
            "{changes:?}"
        );

        // A pod deleted on one node and created again, same name, on another.
        let moved = view.pods.iter().position(|p| p.name() == "light-5").unwrap();
        view.pods[moved] = Arc::new(PodInfo::from(rs_pod("light", 5, 100, 100, Some("n-29"), false)));
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(2));

        // Pending pods: the scale-up's simulation places them in the fork, not in the base.
        for i in 0..8 {
            view.pods.push(Arc::new(PodInfo::from(rs_pod("spread", 100 + i, 3000, 1024, None, true))));
        }
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(0));
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(0));

        // Emptied nodes (scale-down candidates then), a whole node's pods replaced.
        for i in 0..30 {
            if i % 15 == 3 || i % 15 == 4 {
                without(&mut view, &format!("light-{i}"));
            }
        }
        assert!(matches!(decide_both(&view, &mut memory, tick()), BaseBuild::Updated { .. }));
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(0));

        // A node changed (more cpu: its pods' node is a scale-down candidate no more, or
        // another), replaced in its place; a node tainted.
        view.nodes[16] = Arc::new(node("n-16", "ng", 8000, 16, 110));
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(1));
        let mut tainted = node("n-17", "ng", 4000, 16, 110);
        tainted.spec.get_or_insert_with(Default::default).taints = Some(vec![k8s_openapi::api::core::v1::Taint {
            key: "dedicated".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]);
        view.nodes[17] = Arc::new(tainted);
        without(&mut view, "light-2");
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(1));

        // Nodes added (at the end, between others, one with pods already) and removed (one
        // with pods): kept, in the view's order.
        view.nodes.push(Arc::new(node("n-30", "ng", 4000, 16, 110)));
        assert_eq!(decide_both(&view, &mut memory, tick()), added_removed(1, 0, 0));
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(0));
        view.nodes.insert(0, Arc::new(node("n-00a", "ng", 4000, 16, 110)));
        view.nodes.insert(10, Arc::new(node("n-08a", "ng", 4000, 16, 110)));
        view.pods.push(Arc::new(PodInfo::from(rs_pod("light", 41, 100, 100, Some("n-08a"), false))));
        assert_eq!(decide_both(&view, &mut memory, tick()), added_removed(2, 0, 1));
        let removed = view.nodes.iter().position(|n| n.metadata.name.as_deref() == Some("n-29")).unwrap();
        view.nodes.remove(removed);
        assert_eq!(decide_both(&view, &mut memory, tick()), added_removed(0, 1, 0));
        view.nodes.remove(0);
        view.nodes.push(Arc::new(node("n-31", "ng", 4000, 16, 110)));
        assert_eq!(decide_both(&view, &mut memory, tick()), added_removed(1, 1, 0));

        // The kept nodes in another relative order: built afresh.
        view.nodes.swap(3, 4);
        assert_eq!(decide_both(&view, &mut memory, tick()), BaseBuild::Fresh);
        assert_eq!(decide_both(&view, &mut memory, tick()), updated(0));

        // A namespace's labels (affinity terms' namespaceSelector): built afresh.
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "default"}})).unwrap();
        view.namespaces.push(Arc::new(namespace));
        assert_eq!(decide_both(&view, &mut memory, tick()), BaseBuild::Fresh);
    }

    /// A pod listed on two nodes (hostile input) is placed once, as a fresh build places it.
    #[test]
    fn a_pod_listed_twice_is_placed_once() {
        let mut memory = LoopMemory::default();
        let now: Timestamp = "2026-01-02T00:00:00Z".parse().unwrap();
        let mut view = cluster();
        decide_both(&view, &mut memory, now);
        view.pods.push(Arc::new(PodInfo::from(rs_pod("light", 0, 100, 100, Some("n-25"), false))));
        decide_both(&view, &mut memory, now);
        decide_both(&view, &mut memory, now);
        // The first listing gone: the pod is placed on the node of the second, whose own list
        // did not change.
        let first = view.pods.iter().position(|p| p.name() == "light-0").unwrap();
        view.pods.remove(first);
        decide_both(&view, &mut memory, now);
        without(&mut view, "light-0");
        decide_both(&view, &mut memory, now);
    }

    /// Every node's pods (keys, in order) and what they request, as the snapshot holds them.
    fn contents(snapshot: &ClusterSnapshot) -> Vec<(String, Vec<String>, simulator::Resources)> {
        snapshot
            .nodes()
            .map(|(_, n)| (n.name.to_string(), n.pods.iter().map(|p| p.key.to_string()).collect(), n.requested.clone()))
            .collect()
    }

    #[derive(Clone, Debug)]
    enum PodEdit {
        /// A pod's new version (other requests) in its place.
        Replace(usize, usize),
        Remove(usize, usize),
        /// A new pod at a place in a node's list.
        Insert(usize, usize),
        /// A pod deleted on one node and created again, same name, on another.
        Move(usize, usize, usize),
    }

    fn pod_edit() -> impl proptest::strategy::Strategy<Value = PodEdit> {
        use proptest::prelude::*;
        prop_oneof![
            (0..4usize, any::<usize>()).prop_map(|(n, i)| PodEdit::Replace(n, i)),
            (0..4usize, any::<usize>()).prop_map(|(n, i)| PodEdit::Remove(n, i)),
            (0..4usize, any::<usize>()).prop_map(|(n, i)| PodEdit::Insert(n, i)),
            (0..4usize, any::<usize>(), 0..4usize).prop_map(|(n, i, to)| PodEdit::Move(n, i, to)),
        ]
    }

    proptest::proptest! {
        /// Through any edits of the nodes' pod lists, a kept base brought up to date holds
        /// every node's pods in the order (and with the sums) of a base built afresh.
        #[test]
        fn an_updated_base_holds_what_a_fresh_one_holds(
            sizes in proptest::collection::vec(0..8usize, 4),
            rounds in proptest::collection::vec(proptest::collection::vec(pod_edit(), 0..5), 1..5),
        ) {
            let names = ["n-0", "n-1", "n-2", "n-3"];
            let nodes: Vec<Arc<k8s_openapi::api::core::v1::Node>> =
                names.iter().map(|n| Arc::new(node(n, "ng", 64000, 256, 110))).collect();
            let node_refs: Vec<&Arc<k8s_openapi::api::core::v1::Node>> = nodes.iter().collect();
            let mut next = 0;
            let mut new_pod = |node: usize, cpu: i64| {
                next += 1;
                Arc::new(PodInfo::from(rs_pod("p", next, cpu, 10, Some(names[node]), false)))
            };
            let mut lists: Vec<Vec<Arc<PodInfo>>> =
                sizes.iter().enumerate().map(|(n, size)| (0..*size).map(|_| new_pod(n, 100)).collect()).collect();
            let cache = SnapshotCache::default();
            for edits in std::iter::once(Vec::new()).chain(rounds) {
                for edit in edits {
                    match edit {
                        PodEdit::Replace(n, i) if !lists[n].is_empty() => {
                            let at = i % lists[n].len();
                            let old = lists[n][at].clone();
                            let mut pod = rs_pod("p", 0, 100 + (i % 7) as i64, 10, Some(names[n]), false);
                            pod.metadata.name = Some(old.name().to_string());
                            lists[n][at] = Arc::new(PodInfo::from(pod));
                        }
                        PodEdit::Remove(n, i) if !lists[n].is_empty() => {
                            let at = i % lists[n].len();
                            lists[n].remove(at);
                        }
                        PodEdit::Insert(n, i) => {
                            let at = i % (lists[n].len() + 1);
                            let pod = new_pod(n, 200);
                            lists[n].insert(at, pod);
                        }
                        PodEdit::Move(n, i, to) if !lists[n].is_empty() => {
                            let at = i % lists[n].len();
                            let old = lists[n].remove(at);
                            let mut pod = rs_pod("p", 0, 100, 10, Some(names[to]), false);
                            pod.metadata.name = Some(old.name().to_string());
                            let at = i % (lists[to].len() + 1);
                            lists[to].insert(at, Arc::new(PodInfo::from(pod)));
                        }
                        _ => {}
                    }
                }
                let shared: Vec<NodePods> = lists.iter().map(|l| Arc::new(l.clone())).collect();
                let pods_of = |name: &str| names.iter().position(|n| *n == name).map(|i| &shared[i]);
                let count = lists.iter().map(Vec::len).sum();
                let (kept, _) = cache.base(&node_refs, pods_of, &[], count);
                let (fresh, build) = SnapshotCache::default().base(&node_refs, pods_of, &[], count);
                proptest::prop_assert_eq!(build, BaseBuild::Fresh);
                proptest::prop_assert_eq!(contents(&kept), contents(&fresh));
                for list in &lists {
                    for pod in list {
                        proptest::prop_assert_eq!(kept.pod_node(&pod.key), fresh.pod_node(&pod.key));
                    }
                }
                cache.keep(kept, &[]);
            }
        }
    }
}
