//! The first step of a decision: each pod of the view sorted into scheduled (by node), pending,
//! waiting for preemption on a nominated node, or ignored — and that sorting kept from one
//! decision to the next while the view's pod list is the same list.
//!
//! The sorting reads a few fields of every pod (phase, conditions, node, priority) and looks
//! its node up by name: at 100,000 pods, a cache miss or two per pod and a quarter of a quiet
//! iteration. Most iterations see the pod list of the one before: the memory cluster and the
//! controller's pod watch hand out the same list until a pod changes. What a pod is sorted into
//! depends only on the pod, the view's node names and three options, so with the same list, the
//! same node names and the same options the kept sorting (positions in the list) is the answer.
//! The list is recognised by identity (a weak handle, so the kept sorting holds no pod alive;
//! a list edited in place after the handle was taken is a new list to it).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use simulator::PodInfo;

use super::view::{ClusterView, ListIdentity};
use crate::config::AutoscalingOptions;

/// The pods of a view, sorted for a decision.
pub struct Classified<'v> {
    /// The scheduled pods of each node that has any, in the view's order. Borrowed from the
    /// view: a pointer copied per pod, where a clone of each `Arc` was an atomic increment (and
    /// its drop a decrement) on a cache line nothing else reads.
    pub pods_by_node: FxHashMap<&'v str, Vec<&'v Arc<PodInfo>>>,
    pub scheduled_count: usize,
    /// Pending pods scale-up looks at (unschedulable, or awaiting a bypassed scheduler).
    pub pending: Vec<Arc<PodInfo>>,
    /// Pending pods the scheduler nominated to an existing node: they wait there for preemption.
    pub nominated: Vec<(Arc<PodInfo>, String)>,
    /// Pods left out, by key, with why.
    pub ignored: BTreeMap<String, String>,
    /// Pods marked unschedulable by the scheduler, and pods awaiting a bypassed scheduler.
    pub pending_count: usize,
    pub unprocessed_count: usize,
}

/// The last sorting, as positions in the pod list it was made from.
#[derive(Default)]
pub struct ClassificationCache {
    kept: Mutex<Option<Kept>>,
}

struct Kept {
    pods: ListIdentity<PodInfo>,
    node_names: Vec<Box<str>>,
    options: SortingOptions,
    scheduled: Vec<Vec<usize>>,
    pending: Vec<usize>,
    nominated: Vec<(usize, String)>,
    ignored: BTreeMap<String, String>,
    pending_count: usize,
    unprocessed_count: usize,
}

/// The options the sorting reads.
#[derive(PartialEq)]
struct SortingOptions {
    expendable_pods_priority_cutoff: i32,
    allowed_scheduler_names: Vec<String>,
    bypassed_scheduler_names: Vec<String>,
}

impl SortingOptions {
    fn of(options: &AutoscalingOptions) -> SortingOptions {
        SortingOptions {
            expendable_pods_priority_cutoff: options.expendable_pods_priority_cutoff,
            allowed_scheduler_names: options.allowed_scheduler_names.clone(),
            bypassed_scheduler_names: options.bypassed_scheduler_names.clone(),
        }
    }
}

impl Clone for ClassificationCache {
    /// An empty cache: a copy of the loop's memory sorts afresh, to the same result.
    fn clone(&self) -> Self {
        ClassificationCache::default()
    }
}

impl std::fmt::Debug for ClassificationCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.kept.lock().is_ok_and(|k| k.is_some());
        write!(f, "ClassificationCache({})", if kept { "kept" } else { "empty" })
    }
}

impl ClassificationCache {
    /// The view's pods sorted, from the kept sorting when it was made from this very list.
    pub fn classify<'v>(&self, view: &'v ClusterView, options: &AutoscalingOptions) -> Classified<'v> {
        let mut node_slots: FxHashMap<&str, usize> =
            FxHashMap::with_capacity_and_hasher(view.nodes.len(), Default::default());
        for name in view.nodes.iter().filter_map(|n| n.metadata.name.as_deref()) {
            let next = node_slots.len();
            node_slots.entry(name).or_insert(next);
        }
        let sorting_options = SortingOptions::of(options);
        let mut guard = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let reusable = guard.as_ref().is_some_and(|k| {
            k.pods.is(&view.pods)
                && k.options == sorting_options
                && k.node_names.len() == view.nodes.len()
                && k.node_names
                    .iter()
                    .zip(&view.nodes)
                    .all(|(kept, n)| **kept == *n.metadata.name.as_deref().unwrap_or(""))
        });
        let kept = match guard.as_mut() {
            Some(kept) if reusable => kept,
            _ => guard.insert(sort(view, &node_slots, options, sorting_options)),
        };
        from_positions(view, node_slots, kept)
    }
}

/// The sorting, as positions in the view's pod list.
fn sort(
    view: &ClusterView,
    node_slots: &FxHashMap<&str, usize>,
    options: &AutoscalingOptions,
    sorting_options: SortingOptions,
) -> Kept {
    let mut kept = Kept {
        pods: view.pods.identity(),
        node_names: view.nodes.iter().map(|n| Box::from(n.metadata.name.as_deref().unwrap_or(""))).collect(),
        options: sorting_options,
        scheduled: vec![Vec::new(); node_slots.len()],
        pending: Vec::new(),
        nominated: Vec::new(),
        ignored: BTreeMap::new(),
        pending_count: 0,
        unprocessed_count: 0,
    };
    // Pods share their node's name (the sources intern it): a node's slot is found by the
    // name's address once, not by hashing the name again for each of its pods.
    let mut slot_by_address: FxHashMap<(*const u8, usize), Option<usize>> = FxHashMap::default();
    for (at, pod) in view.pods.iter().enumerate() {
        let (marked, bypassed) = (is_unschedulable(pod), awaits_bypassed_scheduler(pod, options));
        kept.pending_count += usize::from(marked);
        kept.unprocessed_count += usize::from(bypassed);
        let unschedulable = marked || bypassed;
        let bound_to = pod
            .node_name()
            .and_then(|n| *slot_by_address.entry((n.as_ptr(), n.len())).or_insert_with(|| node_slots.get(n).copied()));
        if bound_to.is_none() && !unschedulable {
            continue;
        }
        if pod.is_terminal() {
            continue;
        }
        if pod.priority < options.expendable_pods_priority_cutoff {
            if unschedulable {
                kept.ignored
                    .insert(pod.key.to_string(), "expendable: priority below --expendable-pods-priority-cutoff".into());
            }
            continue;
        }
        let nominated_to = pod.state.nominated_node_name.as_deref().filter(|n| node_slots.contains_key(n));
        if let Some(slot) = bound_to {
            kept.scheduled[slot].push(at);
        } else if let Some(node) = nominated_to {
            // Upstream ignores such pods for scale-up and counts them on the nominated node as
            // if the preemption were done.
            kept.ignored.insert(pod.key.to_string(), format!("waiting for preemption on its nominated node {node}"));
            kept.nominated.push((at, node.to_string()));
        } else if !scheduler_allowed(pod, options) {
            kept.ignored.insert(pod.key.to_string(), "scheduler not in --allowed-scheduler-names".into());
        } else {
            kept.pending.push(at);
        }
    }
    kept
}

fn from_positions<'v>(view: &'v ClusterView, node_slots: FxHashMap<&'v str, usize>, kept: &Kept) -> Classified<'v> {
    let pod = |at: &usize| &view.pods[*at];
    let mut pods_by_node = FxHashMap::with_capacity_and_hasher(node_slots.len(), Default::default());
    for (name, slot) in node_slots {
        if !kept.scheduled[slot].is_empty() {
            pods_by_node.insert(name, kept.scheduled[slot].iter().map(pod).collect());
        }
    }
    Classified {
        pods_by_node,
        scheduled_count: kept.scheduled.iter().map(Vec::len).sum(),
        pending: kept.pending.iter().map(|at| pod(at).clone()).collect(),
        nominated: kept.nominated.iter().map(|(at, node)| (pod(at).clone(), node.clone())).collect(),
        ignored: kept.ignored.clone(),
        pending_count: kept.pending_count,
        unprocessed_count: kept.unprocessed_count,
    }
}

/// Pending pods the scheduler gave up on: no node, `PodScheduled=False` with reason
/// `Unschedulable`.
pub fn is_unschedulable(pod: &PodInfo) -> bool {
    pod.node_name().is_none()
        && pending_phase(pod)
        && !pod.terminating
        && pod
            .state
            .scheduled
            .as_ref()
            .is_some_and(|c| &*c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
}

/// Phase `Pending`, or no phase yet.
fn pending_phase(pod: &PodInfo) -> bool {
    pod.state.phase.as_deref().is_none_or(|p| p == "Pending")
}

/// `spec.schedulerName`, as the API server defaults it.
fn scheduler_name(pod: &PodInfo) -> &str {
    pod.scheduler_name().unwrap_or("default-scheduler")
}

/// A pending pod of a `--bypassed-scheduler-names` scheduler that has not marked it yet (no
/// PodScheduled condition): upstream treats it as unschedulable at once.
fn awaits_bypassed_scheduler(pod: &PodInfo, options: &AutoscalingOptions) -> bool {
    if options.bypassed_scheduler_names.is_empty() {
        return false;
    }
    let name = scheduler_name(pod);
    options.bypassed_scheduler_names.iter().any(|n| n == name)
        && pod.node_name().is_none()
        && pending_phase(pod)
        && !pod.terminating
        && pod.state.scheduled.is_none()
}

fn scheduler_allowed(pod: &PodInfo, options: &AutoscalingOptions) -> bool {
    if options.allowed_scheduler_names.is_empty() {
        return true;
    }
    let name = scheduler_name(pod);
    options.allowed_scheduler_names.iter().any(|n| n == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fixtures::{node, rs_pod};

    fn view(nodes: &[&str], pods: Vec<k8s_openapi::api::core::v1::Pod>) -> ClusterView {
        ClusterView {
            nodes: nodes.iter().map(|n| Arc::new(node(n, "g", 4000, 16, 110))).collect(),
            pods: pods.iter().map(|p| Arc::new(PodInfo::new(p))).collect(),
            ..ClusterView::default()
        }
    }

    /// (scheduled pods of each of the view's nodes, pending keys, ignored keys)
    fn summary(v: &ClusterView, c: &Classified<'_>) -> (Vec<usize>, Vec<String>, Vec<String>) {
        (
            v.nodes
                .iter()
                .map(|n| c.pods_by_node.get(n.metadata.name.as_deref().unwrap_or("")).map_or(0, Vec::len))
                .collect(),
            c.pending.iter().map(|p| p.key.to_string()).collect(),
            c.ignored.keys().cloned().collect(),
        )
    }

    #[test]
    fn the_same_list_is_sorted_as_before() {
        let v =
            view(&["a", "b"], vec![rs_pod("x", 0, 100, 100, Some("b"), false), rs_pod("x", 1, 100, 100, None, false)]);
        let cache = ClassificationCache::default();
        let options = AutoscalingOptions::default();
        let first = summary(&v, &cache.classify(&v, &options));
        assert_eq!(first, (vec![0, 1], vec!["default/x-1".to_string()], vec![]));
        assert!(cache.kept.lock().unwrap().as_ref().is_some_and(|k| k.pods.is(&v.pods)));
        assert_eq!(summary(&v, &cache.classify(&v, &options)), first);
    }

    #[test]
    fn a_list_edited_in_place_is_sorted_again() {
        let mut v = view(&["a"], vec![rs_pod("x", 0, 100, 100, None, false)]);
        let cache = ClassificationCache::default();
        let options = AutoscalingOptions::default();
        assert_eq!(summary(&v, &cache.classify(&v, &options)).1, vec!["default/x-0".to_string()]);
        // The view is the list's only owner: edited in place, not copied first.
        v.pods[0] = Arc::new(PodInfo::new(&rs_pod("x", 0, 100, 100, Some("a"), false)));
        assert_eq!(summary(&v, &cache.classify(&v, &options)), (vec![1], vec![], vec![]));
    }

    #[test]
    fn other_nodes_or_options_sort_the_same_list_again() {
        let mut v =
            view(&["a"], vec![rs_pod("x", 0, 100, 100, Some("b"), false), rs_pod("x", 1, 100, 100, None, false)]);
        let cache = ClassificationCache::default();
        let mut options = AutoscalingOptions::default();
        // A pod bound to a node the view does not hold is neither scheduled nor pending.
        assert_eq!(summary(&v, &cache.classify(&v, &options)), (vec![0], vec!["default/x-1".to_string()], vec![]));
        v.nodes.push(Arc::new(node("b", "g", 4000, 16, 110)));
        assert_eq!(summary(&v, &cache.classify(&v, &options)), (vec![0, 1], vec!["default/x-1".to_string()], vec![]));
        options.expendable_pods_priority_cutoff = 1;
        assert_eq!(summary(&v, &cache.classify(&v, &options)), (vec![0, 0], vec![], vec!["default/x-1".to_string()]));
    }
}
