//! The first step of a decision: each pod of the view sorted into scheduled (by node), pending,
//! waiting for preemption on a nominated node, or ignored — and that sorting kept from one
//! decision to the next, brought up to date where the pod list changed.
//!
//! The sorting reads a few fields of every pod (phase, conditions, node, priority) and looks
//! its node up by name: at 100,000 pods, a cache miss or two per pod. From one iteration to the
//! next few pods change: the memory cluster and the controller's pod watch hand out the same
//! `Arc` for a pod that did not change, in the same order. What a pod is sorted into depends
//! only on the pod, the view's node names and three options, so with the same node names and
//! options, a pod that is the very object sorted last time (compared by address) keeps its
//! place, and only the others are read. The two lists are walked side by side; where they part,
//! the pods' keys tell an update from a pod removed or added. A list in another order is still
//! sorted right (each pod either is the kept object or is read again), only slower; one mostly
//! different is sorted afresh. When the node names changed (a node registered or went), the
//! kept sorting is first renumbered to the new nodes: a pod naming no node, or scheduled on
//! (nominated to) a node that stayed, is not read; the other pods naming a node (on a node gone,
//! bound to one not in the view, finished) are.
//!
//! Each node's scheduled pods are a shared list (`NodePods`), made again only for the nodes
//! whose pods changed: the decision's kept snapshot (`base_snapshot`) knows a node whose list is
//! the one it was built from without comparing its pods.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};
use simulator::PodInfo;

use super::name_memo::NameMemo;
use super::view::{ClusterView, SharedList};
use crate::config::AutoscalingOptions;

/// The scheduled pods of one node, in the view's order: the same list (by address) from one
/// decision to the next while they do not change.
pub type NodePods = Arc<Vec<Arc<PodInfo>>>;

/// The pods of a view, sorted for a decision.
pub struct Classified<'v> {
    /// The scheduled pods of each node that has any, in the view's order.
    pub pods_by_node: FxHashMap<&'v str, NodePods>,
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

/// What one pod of the list was sorted into (slots are the view's nodes, in its order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// None of the others: bound to a node the view does not hold, finished, expendable while
    /// not unschedulable, or pending and not yet marked unschedulable.
    Other,
    Scheduled(Slot),
    Pending,
    /// Waiting for preemption on the node of this slot.
    Nominated(Slot),
    /// Unschedulable, with a priority below `--expendable-pods-priority-cutoff`.
    Expendable,
    SchedulerNotAllowed,
}

/// A node slot as a pod's sorting keeps it: four bytes, so that a sorting takes twelve (the
/// whole list of them is copied and walked at every update: 100,000 pods, 2.4 MB at `usize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot(u32);

impl Slot {
    /// A view holds far fewer than 2^32 nodes (each is kilobytes), so none saturates.
    fn of(index: usize) -> Slot {
        Slot(u32::try_from(index).unwrap_or(u32::MAX))
    }

    fn index(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

/// One pod's sorting, with the two flags the counts read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sorted {
    class: Class,
    /// Marked unschedulable by its scheduler.
    marked: bool,
    /// Awaiting a `--bypassed-scheduler-names` scheduler.
    bypassed: bool,
    /// Names a node (bound to one, or nominated to one): its class may change with the
    /// view's nodes.
    names_node: bool,
}

const _: () = assert!(std::mem::size_of::<Sorted>() == 12, "a pod's sorting stays small");

/// The last sorting: the list it was made from and each pod's place, with what a decision
/// reads of it.
#[derive(Default)]
pub struct ClassificationCache {
    kept: Mutex<Option<Kept>>,
}

struct Kept {
    /// The list sorted (held, so that the next list can be compared with it by address).
    pods: SharedList<PodInfo>,
    node_names: Vec<Box<str>>,
    options: SortingOptions,
    /// Per pod of `pods`, in its order.
    sorted: Vec<Sorted>,
    /// Per node slot.
    scheduled: Vec<NodePods>,
    /// Positions in `pods`.
    pending: Vec<usize>,
    nominated: Vec<(usize, usize)>,
    ignored: BTreeMap<String, String>,
    pending_count: usize,
    unprocessed_count: usize,
}

impl Kept {
    /// Whether the sorting was made for these very node names, in this order (the slots).
    fn has_nodes_of(&self, view: &ClusterView) -> bool {
        self.node_names.len() == view.nodes.len()
            && self
                .node_names
                .iter()
                .zip(&view.nodes)
                .all(|(kept, n)| **kept == *n.metadata.name.as_deref().unwrap_or(""))
    }
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

/// How a sorting was obtained (for the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sorting {
    Fresh,
    Same,
    /// Brought up to date: this many pods read again.
    Updated(usize),
}

impl ClassificationCache {
    /// The view's pods sorted: the kept sorting, brought up to date where the list changed.
    pub fn classify<'v>(&self, view: &'v ClusterView, options: &AutoscalingOptions) -> Classified<'v> {
        self.classify_counted(view, options).0
    }

    fn classify_counted<'v>(&self, view: &'v ClusterView, options: &AutoscalingOptions) -> (Classified<'v>, Sorting) {
        let mut node_slots: FxHashMap<&str, usize> =
            FxHashMap::with_capacity_and_hasher(view.nodes.len(), Default::default());
        for name in view.nodes.iter().filter_map(|n| n.metadata.name.as_deref()) {
            let next = node_slots.len();
            node_slots.entry(name).or_insert(next);
        }
        let sorting_options = SortingOptions::of(options);
        let mut guard = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let mut sorter = Sorter { node_slots: &node_slots, options, slots: NameMemo::default() };
        let (kept, sorting) = match guard.take() {
            Some(kept)
                if kept.options == sorting_options && kept.has_nodes_of(view) && kept.pods.same_list(&view.pods) =>
            {
                (kept, Sorting::Same)
            }
            Some(kept) if kept.options == sorting_options => {
                // Nodes came or went (a scale-up registered, a scale-down finished): the pods
                // keep their sorting on the nodes that stayed.
                let (kept, renumbered) =
                    if kept.has_nodes_of(view) { (kept, 0) } else { renumber_nodes(kept, view, &mut sorter) };
                match update(kept, view, sorter) {
                    Ok((kept, read)) => (kept, Sorting::Updated(read + renumbered)),
                    Err(sorter) => (sort(view, sorter, sorting_options), Sorting::Fresh),
                }
            }
            _ => (sort(view, sorter, sorting_options), Sorting::Fresh),
        };
        let classified = from_kept(view, node_slots, &kept);
        *guard = Some(kept);
        (classified, sorting)
    }

    /// The view's pods bound to each of `nodes` (node names, perhaps some not in the view), in
    /// the view's order, from the kept sorting when it is this view's (`None` otherwise: the
    /// caller walks the pods). A pod sorted as scheduled says its node by slot, and a pod naming
    /// no node is on none, both unread; only the few others naming a node (finished,
    /// expendable, nominated) are read. The actuator asks this at each loop with a deletion in flight: a
    /// walk reading every pod's node was a tenth of a simulated evening of scale-downs.
    pub fn pods_on_nodes<'v>(
        &self,
        view: &'v ClusterView,
        nodes: &FxHashSet<&str>,
    ) -> Option<FxHashMap<&'v str, Vec<&'v Arc<PodInfo>>>> {
        let guard = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let kept = guard.as_ref()?;
        if !kept.has_nodes_of(view) || !kept.pods.same_list(&view.pods) {
            return None;
        }
        let wanted: Vec<bool> = kept.node_names.iter().map(|name| nodes.contains(&**name)).collect();
        let mut on_nodes: FxHashMap<&'v str, Vec<&'v Arc<PodInfo>>> = FxHashMap::default();
        for (pod, sorted) in view.pods.iter().zip(&kept.sorted) {
            let on_wanted = match sorted.class {
                Class::Scheduled(slot) => wanted[slot.index()],
                _ => sorted.names_node && pod.node_name().is_some_and(|n| nodes.contains(n)),
            };
            if on_wanted && let Some(node) = pod.node_name() {
                on_nodes.entry(node).or_default().push(pod);
            }
        }
        Some(on_nodes)
    }
}

/// Sorts single pods; remembers the slot of each node name it met, by the name's address
/// (`NameMemo`). It lives for one sorting, while the lists it reads are held.
struct Sorter<'a> {
    node_slots: &'a FxHashMap<&'a str, usize>,
    options: &'a AutoscalingOptions,
    slots: NameMemo<Option<usize>>,
}

impl Sorter<'_> {
    fn sort(&mut self, pod: &PodInfo) -> Sorted {
        let options = self.options;
        let (marked, bypassed) = (is_unschedulable(pod), awaits_bypassed_scheduler(pod, options));
        let names_node = pod.node_name().is_some() || pod.state.nominated_node_name.is_some();
        let sorted = |class| Sorted { class, marked, bypassed, names_node };
        let unschedulable = marked || bypassed;
        let node_slots = self.node_slots;
        let bound_to = pod.node_name().and_then(|n| self.slots.get(n, |n| node_slots.get(n).copied()));
        if (bound_to.is_none() && !unschedulable) || pod.is_terminal() {
            return sorted(Class::Other);
        }
        if pod.priority < options.expendable_pods_priority_cutoff {
            return sorted(if unschedulable { Class::Expendable } else { Class::Other });
        }
        if let Some(slot) = bound_to {
            return sorted(Class::Scheduled(Slot::of(slot)));
        }
        // Upstream ignores pods nominated to an existing node for scale-up and counts them on
        // that node as if the preemption were done.
        if let Some(slot) = pod.state.nominated_node_name.as_deref().and_then(|n| node_slots.get(n)) {
            return sorted(Class::Nominated(Slot::of(*slot)));
        }
        if !scheduler_allowed(pod, options) {
            return sorted(Class::SchedulerNotAllowed);
        }
        sorted(Class::Pending)
    }
}

/// The view's pods sorted afresh.
fn sort(view: &ClusterView, mut sorter: Sorter, options: SortingOptions) -> Kept {
    let sorted: Vec<Sorted> = view.pods.iter().map(|pod| sorter.sort(pod)).collect();
    let scheduled = node_lists(&view.pods, &sorted, view.nodes.len(), |_| true);
    let node_names = view.nodes.iter().map(|n| Box::from(n.metadata.name.as_deref().unwrap_or(""))).collect();
    let scheduled = scheduled.into_iter().map(Arc::new).collect();
    finish(view, node_names, options, sorted, scheduled)
}

/// The scheduled pods of each of `slots` node slots the filter takes, in the list's order
/// (the slots it does not take are left empty).
fn node_lists(
    pods: &SharedList<PodInfo>,
    sorted: &[Sorted],
    slots: usize,
    take: impl Fn(usize) -> bool,
) -> Vec<Vec<Arc<PodInfo>>> {
    let mut lists: Vec<Vec<Arc<PodInfo>>> = vec![Vec::new(); slots];
    for (pod, s) in pods.iter().zip(sorted) {
        if let Class::Scheduled(slot) = s.class
            && take(slot.index())
        {
            lists[slot.index()].push(pod.clone());
        }
    }
    lists
}

/// The kept sorting brought to the view's list: pods that are the kept objects keep their
/// place, the others are sorted; the node lists holding a pod that came, went or changed are
/// made again. The lists share the runs in which no pod changed (`SharedList`): a run of the
/// view's list that is a run of the kept one (by address) keeps its sorting unread, and the
/// pods between two such runs are compared one by one. `Err` (with the sorter back) when most
/// of the list changed: sorting it afresh is cheaper than comparing.
fn update<'a>(kept: Kept, view: &ClusterView, mut sorter: Sorter<'a>) -> Result<(Kept, usize), Sorter<'a>> {
    let (old, new) = (&kept.pods, &view.pods);
    let mut walk = Walk {
        sorted: Vec::with_capacity(new.len()),
        changed_slots: vec![false; kept.scheduled.len()],
        read: 0,
        limit: new.len() / 2 + 64,
    };
    let old_runs: FxHashMap<*const Vec<Arc<PodInfo>>, usize> =
        old.runs().iter().enumerate().map(|(at, run)| (Arc::as_ptr(run), at)).collect();
    // The old runs not matched yet start at `next_old`; the view's pods since the last match.
    let mut next_old = 0;
    let mut between: Vec<&Arc<PodInfo>> = Vec::new();
    let mut compare = |walk: &mut Walk, old_runs: std::ops::Range<usize>, between: &[&Arc<PodInfo>]| {
        let old_pods: Vec<&Arc<PodInfo>> = old.runs()[old_runs.clone()].iter().flat_map(|run| run.iter()).collect();
        let old_sorted = &kept.sorted[old.run_start(old_runs.start)..old.run_start(old_runs.end)];
        walk.compare(&old_pods, old_sorted, between, &mut sorter)
    };
    for run in new.runs() {
        match old_runs.get(&Arc::as_ptr(run)) {
            Some(&at) if at >= next_old => {
                if compare(&mut walk, next_old..at, &between).is_err() {
                    return Err(sorter);
                }
                walk.sorted.extend_from_slice(&kept.sorted[old.run_start(at)..old.run_start(at + 1)]);
                next_old = at + 1;
                between.clear();
            }
            _ => between.extend(run.iter()),
        }
    }
    if compare(&mut walk, next_old..old.runs().len(), &between).is_err() {
        return Err(sorter);
    }
    let Walk { sorted, changed_slots, read, .. } = walk;
    let mut scheduled = kept.scheduled;
    if changed_slots.iter().any(|c| *c) {
        let lists = node_lists(new, &sorted, changed_slots.len(), |slot| changed_slots[slot]);
        for (slot, list) in lists.into_iter().enumerate() {
            if changed_slots[slot] {
                scheduled[slot] = Arc::new(list);
            }
        }
    }
    Ok((finish(view, kept.node_names, kept.options, sorted, scheduled), read))
}

/// The new sorting as `update` makes it, with the node slots whose pods changed.
struct Walk {
    sorted: Vec<Sorted>,
    changed_slots: Vec<bool>,
    /// Pods read (sorted again) so far, and how many before sorting afresh is cheaper.
    read: usize,
    limit: usize,
}

impl Walk {
    fn mark(&mut self, s: &Sorted) {
        if let Class::Scheduled(slot) = s.class {
            self.changed_slots[slot.index()] = true;
        }
    }

    /// One stretch of the view's list (`new`) against the kept pods it replaces (`old`, sorted
    /// as `old_sorted`): walked side by side; where they part, pointers first (one pod
    /// removed or added), then keys tell an update from a pod removed or added. `Err` past
    /// the read limit.
    fn compare(
        &mut self,
        old: &[&Arc<PodInfo>],
        old_sorted: &[Sorted],
        new: &[&Arc<PodInfo>],
        sorter: &mut Sorter,
    ) -> Result<(), ()> {
        let same = |a: Option<&&Arc<PodInfo>>, b: &Arc<PodInfo>| a.is_some_and(|a| Arc::ptr_eq(a, b));
        let mut i = 0;
        for (j, pod) in new.iter().copied().enumerate() {
            // Kept pods before this one that are not it went away (or this one replaces the
            // last of them); or this one is new.
            while let Some(previous) = old.get(i).copied()
                && !Arc::ptr_eq(previous, pod)
            {
                let previous_gone = same(old.get(i + 1), pod);
                let pod_is_new = same(new.get(j + 1), previous);
                if !previous_gone && (pod_is_new || key(previous) > key(pod)) {
                    break;
                }
                self.mark(&old_sorted[i]);
                i += 1;
                if !previous_gone && key(previous) == key(pod) {
                    // Replaced by this one.
                    break;
                }
            }
            if same(old.get(i), pod) {
                self.sorted.push(old_sorted[i]);
                i += 1;
            } else {
                self.read += 1;
                if self.read > self.limit {
                    return Err(());
                }
                let s = sorter.sort(pod);
                self.mark(&s);
                self.sorted.push(s);
            }
        }
        for s in old_sorted.get(i..).unwrap_or_default() {
            self.mark(s);
        }
        Ok(())
    }
}

/// The kept sorting, of the kept list still, brought to the view's nodes: a pod on (or
/// nominated to) a node that stayed moves to that node's slot, unread; a pod naming no node keeps
/// its class, unread; the others (a node gone, or a name that may now be a node) are sorted
/// again. A slot keeps its node's very list (the kept snapshot reuses its node) unless a pod
/// sorted again joined it. Returns how many pods were read.
fn renumber_nodes(kept: Kept, view: &ClusterView, sorter: &mut Sorter) -> (Kept, usize) {
    let slots = view.nodes.len();
    // Old slot → new slot, by name (a name listed twice: its first slot, as `Sorter` finds it).
    let moved: Vec<Option<usize>> = kept.node_names.iter().map(|n| sorter.node_slots.get(&**n).copied()).collect();
    let mut scheduled: Vec<Option<NodePods>> = vec![None; slots];
    for (list, to) in kept.scheduled.iter().zip(&moved) {
        if let Some(to) = *to
            && scheduled[to].is_none()
        {
            scheduled[to] = Some(list.clone());
        }
    }
    let mut joined = vec![false; slots];
    let mut sorted = kept.sorted;
    let mut read = 0;
    for (at, s) in sorted.iter_mut().enumerate() {
        let class = match s.class {
            Class::Scheduled(slot) => moved[slot.index()].map(|to| Class::Scheduled(Slot::of(to))),
            Class::Nominated(slot) => moved[slot.index()].map(|to| Class::Nominated(Slot::of(to))),
            class if !s.names_node => Some(class),
            _ => None,
        };
        match class {
            Some(class) => s.class = class,
            None => {
                read += 1;
                *s = sorter.sort(&kept.pods[at]);
                if let Class::Scheduled(slot) = s.class {
                    joined[slot.index()] = true;
                }
            }
        }
    }
    // Only a pod sorted again can have joined a slot: the others keep their lists (a new
    // node's is empty).
    let remade = if joined.contains(&true) {
        node_lists(&kept.pods, &sorted, slots, |slot| joined[slot])
    } else {
        vec![Vec::new(); slots]
    };
    let scheduled = (scheduled.into_iter().zip(remade).zip(&joined))
        .map(|((list, remade), joined)| match list {
            Some(list) if !joined => list,
            _ => Arc::new(remade),
        })
        .collect();
    let node_names = view.nodes.iter().map(|n| Box::from(n.metadata.name.as_deref().unwrap_or(""))).collect();
    (Kept { node_names, sorted, scheduled, ..kept }, read)
}

/// A pod's key in the order the memory cluster lists pods (namespace, then name).
fn key(pod: &PodInfo) -> (&str, &str) {
    (pod.namespace(), pod.name())
}

/// A sorting with what decisions read of it: the pending and nominated pods' positions, the
/// ignored pods and the counts.
fn finish(
    view: &ClusterView,
    node_names: Vec<Box<str>>,
    options: SortingOptions,
    sorted: Vec<Sorted>,
    scheduled: Vec<NodePods>,
) -> Kept {
    let mut kept = Kept {
        pods: view.pods.clone(),
        node_names,
        options,
        sorted: Vec::new(),
        scheduled,
        pending: Vec::new(),
        nominated: Vec::new(),
        ignored: BTreeMap::new(),
        pending_count: 0,
        unprocessed_count: 0,
    };
    for (at, s) in sorted.iter().enumerate() {
        kept.pending_count += usize::from(s.marked);
        kept.unprocessed_count += usize::from(s.bypassed);
        let key = || view.pods[at].key.to_string();
        match s.class {
            Class::Other | Class::Scheduled(_) => {}
            Class::Pending => kept.pending.push(at),
            Class::Nominated(slot) => {
                let node = &kept.node_names[slot.index()];
                kept.ignored.insert(key(), format!("waiting for preemption on its nominated node {node}"));
                kept.nominated.push((at, slot.index()));
            }
            Class::Expendable => {
                kept.ignored.insert(key(), "expendable: priority below --expendable-pods-priority-cutoff".into());
            }
            Class::SchedulerNotAllowed => {
                kept.ignored.insert(key(), "scheduler not in --allowed-scheduler-names".into());
            }
        }
    }
    kept.sorted = sorted;
    kept
}

fn from_kept<'v>(view: &'v ClusterView, node_slots: FxHashMap<&'v str, usize>, kept: &Kept) -> Classified<'v> {
    let pod = |at: &usize| view.pods[*at].clone();
    let mut pods_by_node = FxHashMap::with_capacity_and_hasher(node_slots.len(), Default::default());
    for (name, slot) in node_slots {
        if !kept.scheduled[slot].is_empty() {
            pods_by_node.insert(name, kept.scheduled[slot].clone());
        }
    }
    Classified {
        pods_by_node,
        scheduled_count: kept.scheduled.iter().map(|l| l.len()).sum(),
        pending: kept.pending.iter().map(pod).collect(),
        nominated: kept.nominated.iter().map(|(at, slot)| (pod(at), kept.node_names[*slot].to_string())).collect(),
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
                .map(|n| c.pods_by_node.get(n.metadata.name.as_deref().unwrap_or("")).map_or(0, |l| l.len()))
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
        assert!(cache.kept.lock().unwrap().as_ref().is_some_and(|k| k.pods.same_list(&v.pods)));
        assert_eq!(summary(&v, &cache.classify(&v, &options)), first);
    }

    #[test]
    fn the_pods_on_nodes_come_from_the_sorting_of_this_very_view_only() {
        let options = AutoscalingOptions::default();
        let v = thousand_pods_on(&["a", "b", "c"]);
        let cache = ClassificationCache::default();
        let asked: FxHashSet<&str> = ["b", "gone"].into_iter().collect();
        assert!(cache.pods_on_nodes(&v, &asked).is_none(), "nothing sorted yet");
        cache.classify(&v, &options);
        let on = cache.pods_on_nodes(&v, &asked).expect("this view's sorting");
        // On b: every pod bound there, expendable ones too; not the ones nominated to it. On
        // "gone", a node the view does not hold: its pods all the same.
        let count = |node: &str| v.pods.iter().filter(|p| p.node_name() == Some(node)).count();
        assert_eq!(on["b"].len(), count("b"));
        assert!(on["b"].iter().any(|p| p.priority < options.expendable_pods_priority_cutoff));
        assert_eq!(on["gone"].len(), count("gone"));
        assert_eq!(on.len(), 2);
        // Another list, or other nodes: not this sorting's view.
        let mut other = thousand_pods_on(&["a", "b", "c"]);
        assert!(cache.pods_on_nodes(&other, &asked).is_none());
        other.pods = v.pods.clone();
        other.nodes.pop();
        assert!(cache.pods_on_nodes(&other, &asked).is_none());
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

    /// A pod of a made-up state: on node `a`/`b`/`c`/a node not in the view, or pending
    /// (unschedulable, nominated to `b`, not yet marked), expendable, or finished.
    fn pod(name: &str, state: u8) -> Arc<PodInfo> {
        let node = match state % 8 {
            0 => Some("a"),
            1 => Some("b"),
            2 => Some("c"),
            3 => Some("gone"),
            _ => None,
        };
        let mut p = rs_pod("x", 0, 100, 100, node, false);
        p.metadata.name = Some(name.to_string());
        let status = p.status.get_or_insert_with(Default::default);
        match state % 8 {
            5 => status.nominated_node_name = Some("b".into()),
            6 => status.conditions = None,
            7 => status.phase = Some("Succeeded".into()),
            _ => {}
        }
        if state >= 8 {
            p.spec.get_or_insert_with(Default::default).priority = Some(-20);
        }
        Arc::new(PodInfo::new(&p))
    }

    /// Everything a decision reads of a sorting, by pod keys.
    fn everything(v: &ClusterView, c: &Classified<'_>) -> String {
        let keys = |pods: &mut dyn Iterator<Item = &Arc<PodInfo>>| pods.map(|p| p.key.to_string()).collect::<Vec<_>>();
        let by_node: Vec<(String, Vec<String>)> = v
            .nodes
            .iter()
            .filter_map(|n| n.metadata.name.as_deref())
            .map(|n| (n.to_string(), c.pods_by_node.get(n).map_or_else(Vec::new, |l| keys(&mut l.iter()))))
            .collect();
        let nominated: Vec<(String, String)> =
            c.nominated.iter().map(|(p, n)| (p.key.to_string(), n.clone())).collect();
        format!(
            "{by_node:?} {} {:?} {nominated:?} {:?} {} {}",
            c.scheduled_count,
            keys(&mut c.pending.iter()),
            c.ignored,
            c.pending_count,
            c.unprocessed_count
        )
    }

    /// A view of these nodes with 1,000 pods of every made-up state (`pod`), in key order.
    fn thousand_pods_on(nodes: &[&str]) -> ClusterView {
        let mut v = view(nodes, vec![]);
        v.pods = (0..1000).map(|i| pod(&format!("p-{i:04}"), (i % 16) as u8)).collect();
        v
    }

    #[test]
    fn a_changed_list_reads_only_the_pods_that_changed() {
        let options = AutoscalingOptions::default();
        let mut v = thousand_pods_on(&["a", "b", "c"]);
        let cache = ClassificationCache::default();
        assert_eq!(cache.classify_counted(&v, &options).1, Sorting::Fresh);
        assert_eq!(cache.classify_counted(&v, &options).1, Sorting::Same);
        // One replaced, one removed, one added: two pods read.
        v.pods[10] = pod("p-0010", 4);
        v.pods.remove(500);
        v.pods.insert(700, pod("p-0700a", 1));
        let (incremental, sorting) = cache.classify_counted(&v, &options);
        assert_eq!(sorting, Sorting::Updated(2));
        let fresh = ClassificationCache::default().classify(&v, &options);
        assert_eq!(everything(&v, &incremental), everything(&v, &fresh));
        // Nodes whose pods did not change keep their very list.
        let kept = cache.classify(&v, &options);
        let c = kept.pods_by_node["c"].clone();
        v.pods[10] = pod("p-0010", 0);
        assert!(Arc::ptr_eq(&cache.classify(&v, &options).pods_by_node["c"], &c));
    }

    #[test]
    fn nodes_that_come_and_go_read_only_pods_not_scheduled_on_a_node_that_stayed() {
        let options = AutoscalingOptions::default();
        // By state: 0–2 on a, b, c; 3 on a node not in the view; 5 nominated to b.
        let mut v = thousand_pods_on(&["a", "b", "c"]);
        let cache = ClassificationCache::default();
        cache.classify(&v, &options);
        let on_a = cache.classify(&v, &options).pods_by_node["a"].clone();
        // b goes, d comes, a moves to another slot: the pods naming a node are read again,
        // but for those scheduled on a node that stayed; a keeps its very list.
        v.nodes = ["c", "d", "a"].iter().map(|n| Arc::new(node(n, "g", 4000, 16, 110))).collect();
        let stayed = |p: &PodInfo| {
            matches!(p.node_name(), Some("a" | "c")) && p.priority >= options.expendable_pods_priority_cutoff
        };
        let names_node = |p: &PodInfo| p.node_name().is_some() || p.state.nominated_node_name.is_some();
        let naming = v.pods.iter().filter(|p| names_node(p) && !stayed(p)).count();
        assert!(naming > 0 && naming < 600, "{naming}");
        let (incremental, sorting) = cache.classify_counted(&v, &options);
        assert_eq!(sorting, Sorting::Updated(naming));
        let fresh = ClassificationCache::default().classify(&v, &options);
        assert_eq!(everything(&v, &incremental), everything(&v, &fresh));
        assert!(Arc::ptr_eq(&incremental.pods_by_node["a"], &on_a));
    }

    #[derive(Clone, Debug)]
    enum Edit {
        Remove(usize),
        Insert(usize, u8),
        Replace(usize, u8),
        Swap(usize, usize),
    }

    fn edit() -> impl proptest::strategy::Strategy<Value = Edit> {
        use proptest::prelude::*;
        prop_oneof![
            any::<usize>().prop_map(Edit::Remove),
            (any::<usize>(), 0u8..16).prop_map(|(i, s)| Edit::Insert(i, s)),
            (any::<usize>(), 0u8..16).prop_map(|(i, s)| Edit::Replace(i, s)),
            (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Edit::Swap(i, j)),
        ]
    }

    proptest::proptest! {
        /// Through any edits of the list (in or out of key order, pods listed twice) and of the
        /// nodes, the kept sorting brought up to date is the sorting made afresh.
        #[test]
        fn an_updated_sorting_is_a_fresh_one(
            initial in proptest::collection::vec(0u8..16, 0..40),
            rounds in proptest::collection::vec((proptest::collection::vec(edit(), 0..6), 0u8..32, 0usize..5), 1..6),
        ) {
            let options = AutoscalingOptions { expendable_pods_priority_cutoff: -10, ..Default::default() };
            let mut v = view(&["a", "b", "c"], vec![]);
            v.pods = initial.iter().enumerate().map(|(i, s)| pod(&format!("p-{i:03}"), *s)).collect();
            let cache = ClassificationCache::default();
            cache.classify(&v, &options);
            let mut next = 1000;
            for (edits, node_mask, rotation) in rounds {
                // Nodes come and go too, and change places ("gone" is named by pods that
                // were bound to a node the view did not hold).
                let mut names: Vec<&str> =
                    ["a", "b", "c", "gone", "d"].into_iter().enumerate().filter(|(i, _)| node_mask & (1 << i) != 0).map(|(_, n)| n).collect();
                let r = rotation % names.len().max(1);
                names.rotate_left(r);
                v.nodes = names.iter().map(|n| Arc::new(node(n, "g", 4000, 16, 110))).collect();
                for e in edits {
                    let n = v.pods.len();
                    match e {
                        Edit::Remove(i) if n > 0 => { v.pods.remove(i % n); }
                        Edit::Insert(i, s) => {
                            next += 1;
                            // Sometimes a name already listed: the same key twice.
                            let name = if next % 5 == 0 && n > 0 { v.pods[i % n].name().to_string() } else { format!("p-{next}") };
                            v.pods.insert(i % (n + 1), pod(&name, s));
                        }
                        Edit::Replace(i, s) if n > 0 => {
                            let name = v.pods[i % n].name().to_string();
                            v.pods[i % n] = pod(&name, s);
                        }
                        Edit::Swap(i, j) if n > 0 => v.pods.swap(i % n, j % n),
                        _ => {}
                    }
                }
                let incremental = everything(&v, &cache.classify(&v, &options));
                let fresh = everything(&v, &ClassificationCache::default().classify(&v, &options));
                proptest::prop_assert_eq!(incremental, fresh);
                // The pods on some nodes (one perhaps not in the view), as a walk finds them.
                let asked: FxHashSet<&str> = ["a", "c", "gone"].into_iter().collect();
                let keys = |by_node: FxHashMap<&str, Vec<&Arc<PodInfo>>>| {
                    let mut keys: Vec<(String, Vec<String>)> = by_node
                        .into_iter()
                        .map(|(n, pods)| (n.to_string(), pods.iter().map(|p| p.key.to_string()).collect()))
                        .collect();
                    keys.sort();
                    keys
                };
                let mut walked: FxHashMap<&str, Vec<&Arc<PodInfo>>> = FxHashMap::default();
                for p in &v.pods {
                    if let Some(n) = p.node_name().filter(|n| asked.contains(n)) {
                        walked.entry(n).or_default().push(p);
                    }
                }
                let from_sorting = cache.pods_on_nodes(&v, &asked);
                proptest::prop_assert!(from_sorting.is_some(), "the kept sorting is this view's");
                proptest::prop_assert_eq!(keys(from_sorting.unwrap_or_default()), keys(walked));
            }
        }
    }
}
