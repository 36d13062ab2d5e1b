//! The scheduler: binds pending pods with the simulator's predicates (kube-scheduler's
//! filters), on a `ClusterSnapshot` kept in step with the store instead of rebuilt per pass.
//!
//! - A pass runs only when something could change its outcome: new pending pods (then only they
//!   are tried), or capacity or nodes changed (a pod left a node, a node appeared, changed or
//!   went: then every pending pod is tried again).
//! - Pods go in kube-scheduler's queue order: priority (highest first), then creation time,
//!   then namespace / name.
//! - Among the nodes that pass every filter, the pick is kube-scheduler's default spirit at a
//!   fraction of the cost: fewest untolerated `PreferNoSchedule` taints (TaintToleration
//!   scoring, which is how the autoscaler's soft taints steer pods), then NodeResourcesFit
//!   `LeastAllocated` (the most free cpu and memory share after placing the pod, as kube-scheduler
//!   scores it: integer 0–100 per resource, averaged), then the node name.
//! - A pod that fits nowhere keeps phase Pending and gets `PodScheduled=False`, reason
//!   `Unschedulable`, with kube-scheduler's message (`0/3 nodes are available: 2 Insufficient
//!   cpu, 1 node(s) were unschedulable.`); then preemption is tried (see `preemption.rs`).
//! - Pods with inter-pod affinity or topology spread constraints are retried in the same pass
//!   after other pods were bound, since new pods can make them fit.
//! - Every node's answer for a kind of pod (same compiled spec, labels and node pin; no claims,
//!   inter-pod terms or spread) is kept from pass to pass; the next pod of the kind asks again
//!   only the nodes that changed, joined or whose pods changed since (see `KeptAnswers`), and
//!   the answers are kept summed up (the nodes that fit in order, the reasons counted), so a
//!   pick reads no other node: the same node and message as a full search, which debug builds
//!   check at every pod.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use rustc_hash::FxHashMap;
use simulator::predicates::PreparedPod;
use simulator::predicates::tolerates;
use simulator::{ClusterSnapshot, NodeId, NodeInfo, PodInfo};

use super::cluster::MemoryCluster;
use super::pods::{PodChange, bound_node, is_terminal, set_condition, waiting_for_scheduler};
use super::store::ObjectKey;

#[derive(Debug, Default)]
pub(super) struct SchedulerState {
    pub snapshot: ClusterSnapshot,
    /// Dead node slots the snapshot keeps after node removals and replacements.
    garbage: usize,
    /// Every pod waiting for the scheduler (kept with each store of a pod, so a pass that
    /// retries them all does not read every pod of the cluster).
    pub waiting: BTreeSet<ObjectKey>,
    /// Pending pods created (or changed) since the last pass.
    pub new_pending: BTreeSet<ObjectKey>,
    /// Capacity or nodes changed: every pending pod gets another try.
    pub retry_all: bool,
    /// No pod placed in the snapshot has a lower priority than this (a lower bound: pods that
    /// left are not taken out), so a pending pod at or below it has nothing to preempt and the
    /// search over every node's pods is skipped. Found when first needed, lowered as pods are
    /// placed; `None` when it has to be found again: after a node changed (finding it reads
    /// every placed pod, so it is kept from one pass to the next).
    lowest_priority: Option<i32>,
    /// Every node's answer for the kinds of pods met (see `Alike`), kept from pass to pass.
    kept: KeptAnswers,
}

/// Every node's answer for each kind of pod met, brought up to date from the nodes that
/// changed since (each node's last change is numbered), so a pass asks only those again: a
/// pod created alone (a replaced replica, a scaled-up Deployment's next pod) was a search over
/// every node, a seventh of a simulated day. The kinds bring no inter-pod terms, spread or
/// claims, so a node's answer changes only with the node and its own pods. A node changed,
/// added or replaced (a new node id: the snapshot never reuses one) is asked again; a node
/// removed drops out of the choice. Anything else (namespaces, volumes, a pod with inter-pod
/// terms placed or taken out, the snapshot rebuilt) forgets them all.
///
/// The last changes are also kept in order, so a kind that read recently goes through those
/// alone rather than over every node (after each pod placed, only that node changed).
#[derive(Debug, Default)]
struct KeptAnswers {
    kinds: FxHashMap<Alike, KindAnswers>,
    nodes: NodeChanges,
}

/// The changes of the snapshot's nodes the kinds' answers are brought up to date with.
#[derive(Debug, Default)]
struct NodeChanges {
    /// Per node id: the number of the node's last change (0: none since kept).
    changed: Vec<u64>,
    /// The last changes with their numbers, oldest first (numbers rise).
    log: VecDeque<(u64, NodeEvent)>,
    /// The number of the last change dropped from `log` (0: none): a kind that read before it
    /// walks every node.
    dropped: u64,
    /// The number of the last change.
    count: u64,
    /// The number of the last node removal: choices made before it are made again.
    last_removal: u64,
}

/// A change of the snapshot's nodes, as `NodeChanges::log` keeps it.
#[derive(Clone, Debug)]
enum NodeEvent {
    /// Added, or its pods changed.
    Changed(NodeId),
    /// Taken out (with its name: the snapshot no longer has it).
    Removed(NodeId, Arc<str>),
}

/// Every node's answer for one kind of pod, a pod of that kind to ask again for, the answers
/// summed up, and the choice made of them while they stay the same.
#[derive(Debug)]
struct KindAnswers {
    pod: Arc<PodInfo>,
    answers: Answers,
    choice: Choice,
    /// Asked since the kinds were last thinned out (see `KeptAnswers::make_room`).
    used: bool,
    /// The number of the last change its answers have read.
    seen: u64,
    outcome: Option<Result<String, String>>,
}

impl KeptAnswers {
    /// Answers kept at most (kinds × node ids): 48 bytes each, 24 MiB. Room for every
    /// Deployment's current kind in a cluster of 500 Deployments and 1,000 nodes.
    const MAX_ANSWERS: usize = 1 << 19;

    /// Room for one more kind of `ids` answers: the kinds not asked since the last time are
    /// dropped (kinds of pod templates rolled out or scaled to zero), everything when that is
    /// not enough.
    fn make_room(&mut self, ids: usize) {
        if (self.kinds.len() + 1).saturating_mul(ids) <= Self::MAX_ANSWERS {
            return;
        }
        self.kinds.retain(|_, kind| std::mem::take(&mut kind.used));
        if (self.kinds.len() + 1).saturating_mul(ids) > Self::MAX_ANSWERS {
            self.forget();
        }
    }

    fn forget(&mut self) {
        self.kinds.clear();
        self.nodes.changed.clear();
        self.nodes.log.clear();
    }

    /// The node (new, replaced or changed) or its pods changed: its answers are asked again.
    fn node_changed(&mut self, id: NodeId) {
        let nodes = &mut self.nodes;
        nodes.count += 1;
        if nodes.changed.len() <= id.index() {
            nodes.changed.resize(id.index() + 1, 0);
        }
        nodes.changed[id.index()] = nodes.count;
        nodes.record(NodeEvent::Changed(id));
    }

    fn node_removed(&mut self, id: NodeId, name: Arc<str>) {
        let nodes = &mut self.nodes;
        nodes.count += 1;
        nodes.last_removal = nodes.count;
        nodes.record(NodeEvent::Removed(id, name));
    }
}

impl NodeChanges {
    /// Changes kept in order: a few passes' worth.
    const MAX_LOGGED: usize = 4096;

    fn record(&mut self, event: NodeEvent) {
        self.log.push_back((self.count, event));
        if self.log.len() > Self::MAX_LOGGED
            && let Some((number, _)) = self.log.pop_front()
        {
            self.dropped = number;
        }
    }
}

impl KindAnswers {
    fn new(snapshot: &mut ClusterSnapshot, pod: &Arc<PodInfo>, seen: u64) -> KindAnswers {
        let answers = answers(snapshot, pod);
        let choice = Choice::of(snapshot, &answers);
        KindAnswers { pod: pod.clone(), answers, choice, seen, outcome: None, used: true }
    }

    /// Brings the answers up to date with the changes numbered after `seen`.
    fn catch_up(&mut self, kept: &NodeChanges, snapshot: &mut ClusterSnapshot) {
        let pod = self.pod.clone();
        let prepared = snapshot.prepare(&pod);
        if self.seen >= kept.dropped {
            let from = kept.log.partition_point(|(number, _)| *number <= self.seen);
            for (_, event) in kept.log.range(from..) {
                match event {
                    NodeEvent::Changed(id) => {
                        if let Some(node) = snapshot.node(*id) {
                            self.ask(snapshot, &prepared, *id, node);
                        }
                    }
                    NodeEvent::Removed(id, name) => {
                        if let Some(old) = self.answers.slot(*id).take() {
                            self.choice.remove(name, &old);
                            self.outcome = None;
                        }
                    }
                }
            }
        } else {
            for (id, node) in snapshot.nodes() {
                let changed = kept.changed.get(id.index()).is_some_and(|&at| at > self.seen);
                if changed || self.answers.get(id).is_none() {
                    self.ask(snapshot, &prepared, id, node);
                }
            }
            // Nodes gone since are not in the log any more: the sums are made again. (Their
            // answers stay, never read: a later removal in the log is of a node live now.)
            if self.seen < kept.last_removal {
                self.choice = Choice::of(snapshot, &self.answers);
                self.outcome = None;
            }
        }
        self.seen = kept.count;
    }

    /// Asks `node` again; a different answer replaces the old one in the sums.
    fn ask(&mut self, snapshot: &ClusterSnapshot, prepared: &PreparedPod<'_>, id: NodeId, node: &NodeInfo) {
        let again = answer(snapshot, prepared, id, node);
        let slot = self.answers.slot(id);
        if slot.as_ref() == Some(&again) {
            return;
        }
        if let Some(old) = slot.as_ref() {
            self.choice.remove(&node.name, old);
        }
        self.choice.add(&node.name, &again);
        *slot = Some(again);
        self.outcome = None;
    }
}

/// The answers of a kind's live nodes summed up, so that choosing reads no node: the nodes
/// that fit, best first, and how many fail for each reason.
#[derive(Debug, Default)]
struct Choice {
    /// Fewest untolerated `PreferNoSchedule` taints, then the highest score, then the name.
    fits: BTreeSet<(usize, Reverse<i64>, Arc<str>)>,
    unfits: FxHashMap<simulator::Unfit, usize>,
}

impl Choice {
    /// The sums of the snapshot's live nodes' answers.
    fn of(snapshot: &ClusterSnapshot, answers: &Answers) -> Choice {
        let mut choice = Choice::default();
        for (id, node) in snapshot.nodes() {
            if let Some(answer) = answers.get(id) {
                choice.add(&node.name, answer);
            }
        }
        choice
    }

    fn add(&mut self, name: &Arc<str>, answer: &Answer) {
        match answer {
            Ok(fit) => {
                self.fits.insert((fit.untolerated, Reverse(fit.score), name.clone()));
            }
            Err(unfit) => *self.unfits.entry(unfit.clone()).or_insert(0) += 1,
        }
    }

    fn remove(&mut self, name: &Arc<str>, answer: &Answer) {
        match answer {
            Ok(fit) => {
                self.fits.remove(&(fit.untolerated, Reverse(fit.score), name.clone()));
            }
            Err(unfit) => {
                if let Some(count) = self.unfits.get_mut(unfit) {
                    *count -= 1;
                    if *count == 0 {
                        self.unfits.remove(unfit);
                    }
                }
            }
        }
    }

    /// What [`choose`] finds, from the sums; `None` when a volume PreFilter failure is among
    /// them (its message is the last node's in the snapshot's order: `choose` finds it).
    fn outcome(&self, nodes: usize) -> Option<Result<String, String>> {
        if let Some((_, _, name)) = self.fits.first() {
            return Some(Ok(name.to_string()));
        }
        if self.unfits.keys().any(|u| matches!(u, simulator::Unfit::PodVolumes(_))) {
            return None;
        }
        Some(Err(unschedulable_message(nodes, self.unfits.iter().map(|(u, &count)| (u, count)), None)))
    }
}

/// What the filters read of a pending pod, for pods that need nothing else: no claims (their
/// volumes are their own), no inter-pod terms and no spread constraints (they read the pods
/// placed so far). Two pods alike get the same answer from the same snapshot.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Alike {
    /// The compiled spec (requests, tolerations, node selection, ports, priority, namespace),
    /// by identity: pods of one spec share it. An address stands for one spec while its kind
    /// is kept: the kind holds a pod of it, which keeps its shape and labels alive.
    shape: usize,
    /// The labels existing pods' anti-affinity terms match, by identity.
    labels: usize,
    pinned_node: Option<Arc<str>>,
}

impl Alike {
    fn of(pod: &PodInfo) -> Option<Alike> {
        let independent =
            pod.claims.is_empty() && !pod.has_inter_pod_affinity() && pod.shape.spread_constraints.is_empty();
        independent.then(|| Alike {
            shape: Arc::as_ptr(&pod.shape) as usize,
            labels: pod.shared_labels().map_or(0, |l| Arc::as_ptr(l) as usize),
            pinned_node: pod.pinned_node().map(Arc::from),
        })
    }
}

impl SchedulerState {
    /// Forgets every kept answer (the volumes changed).
    pub(super) fn forget_answers(&mut self) {
        self.kept.forget();
    }

    /// A pod placed on a node or taken out of it: that node's answers may change; a pod with
    /// inter-pod terms may change any node's (its anti-affinity keeps other pods away).
    fn placed_changed(&mut self, pod: &PodInfo, node: NodeId) {
        if pod.has_inter_pod_affinity() {
            self.kept.forget();
        } else {
            self.kept.node_changed(node);
        }
    }

    /// The best node for the pod, or kube-scheduler's message saying why none fits: from the
    /// kept answers of its kind, brought up to date, when it has a kind.
    fn pick_node(&mut self, pod: &Arc<PodInfo>) -> Result<String, String> {
        let Some(alike) = Alike::of(pod) else {
            let searched = answers(&mut self.snapshot, pod);
            return choose(&self.snapshot, &searched);
        };
        let (kept, snapshot) = (&mut self.kept, &mut self.snapshot);
        let new_kind = !kept.kinds.contains_key(&alike);
        if new_kind {
            kept.make_room(snapshot.id_bound());
        }
        let seen = kept.nodes.count;
        let kind = kept.kinds.entry(alike).or_insert_with(|| KindAnswers::new(snapshot, pod, seen));
        kind.used = true;
        if kind.seen < seen {
            kind.catch_up(&kept.nodes, snapshot);
        }
        let nodes = snapshot.node_count();
        let outcome = kind
            .outcome
            .get_or_insert_with(|| kind.choice.outcome(nodes).unwrap_or_else(|| choose(snapshot, &kind.answers)))
            .clone();
        #[cfg(debug_assertions)]
        {
            let searched = answers(snapshot, pod);
            assert_eq!(outcome, choose(snapshot, &searched), "kept answers agree with a search");
        }
        outcome
    }
}

/// A node's answer for a pod: it fits (with what ranks the node for it) or why not.
type Answer = Result<Fit, simulator::Unfit>;

/// Nodes' answers for a pod by node id (`None`: not asked yet). A removed node's answer stays,
/// never read again: the snapshot does not reuse node ids.
#[derive(Debug, Default)]
struct Answers(Vec<Option<Answer>>);

impl Answers {
    fn slot(&mut self, id: NodeId) -> &mut Option<Answer> {
        if self.0.len() <= id.index() {
            self.0.resize_with(id.index() + 1, || None);
        }
        &mut self.0[id.index()]
    }

    fn get(&self, id: NodeId) -> Option<&Answer> {
        self.0.get(id.index()).and_then(Option::as_ref)
    }
}

/// What ranks a node that fits a pod, before its name: fewest untolerated `PreferNoSchedule`
/// taints, then the highest LeastAllocated score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fit {
    untolerated: usize,
    score: i64,
}

fn answer(snapshot: &ClusterSnapshot, prepared: &PreparedPod<'_>, id: NodeId, node: &NodeInfo) -> Answer {
    let pod = prepared.pod;
    snapshot
        .check(prepared, id)
        .map(|()| Fit { untolerated: untolerated_prefer_no_schedule(node, pod), score: least_allocated(node, pod) })
}

/// Every node's answer for the pod.
fn answers(snapshot: &mut ClusterSnapshot, pod: &PodInfo) -> Answers {
    let prepared = snapshot.prepare(pod);
    let mut answers = Answers::default();
    answers.0.resize_with(snapshot.id_bound(), || None);
    for (id, node) in snapshot.nodes() {
        *answers.slot(id) = Some(answer(snapshot, &prepared, id, node));
    }
    answers
}

/// The best node by the answers of the snapshot's nodes, or kube-scheduler's message saying
/// why none fits. Every node of the snapshot must have its answer.
fn choose(snapshot: &ClusterSnapshot, answers: &Answers) -> Result<String, String> {
    // The best name borrowed, not an `Arc` counted up and down for every feasible node.
    let mut best: Option<(usize, Reverse<i64>, &str)> = None;
    // Counted by kind first and spelled out once at the end: hundreds of nodes fail for the
    // same few reasons, and formatting each node's was a good part of a pass.
    let mut unfits = UnfitCounts::default();
    let mut pre_filter: Option<&str> = None;
    let mut total = 0;
    for (id, node) in snapshot.nodes() {
        let Some(answer) = answers.get(id) else {
            debug_assert!(false, "node {} has no answer", node.name);
            continue;
        };
        total += 1;
        match answer {
            Ok(fit) => {
                let rank = (fit.untolerated, Reverse(fit.score), &*node.name);
                if best.as_ref().is_none_or(|b| rank < *b) {
                    best = Some(rank);
                }
            }
            Err(simulator::Unfit::PodVolumes(message)) => pre_filter = Some(message),
            Err(unfit) => unfits.add(unfit),
        }
    }
    best.map(|(_, _, name)| name.to_string())
        .ok_or_else(|| unschedulable_message(total, unfits.few.into_iter().chain(unfits.many), pre_filter))
}

/// kube-scheduler's LeastAllocated score of a node with the pod placed on it.
fn least_allocated(node: &NodeInfo, pod: &PodInfo) -> i64 {
    let score = |allocatable: i64, used: i64| {
        if allocatable <= 0 { 0 } else { allocatable.saturating_sub(used).max(0).saturating_mul(100) / allocatable }
    };
    let cpu = score(node.allocatable.cpu_millis, node.requested.cpu_millis.saturating_add(pod.requests().cpu_millis));
    let memory = score(node.allocatable.memory, node.requested.memory.saturating_add(pod.requests().memory));
    (cpu + memory) / 2
}

fn untolerated_prefer_no_schedule(node: &NodeInfo, pod: &PodInfo) -> usize {
    node.taints()
        .iter()
        .filter(|t| t.effect == "PreferNoSchedule" && !pod.tolerations().iter().any(|tol| tolerates(tol, t)))
        .count()
}

/// kube-scheduler's FitError message. A PreFilter failure (a volume claim missing, …) holds
/// for every node and is printed once, without a count, as kube-scheduler prints it.
/// Nodes counted by why a pod does not fit them. Nodes fail for a few reasons, looked up in a
/// short list (a comparison of two `Unfit`s is cheaper than hashing one, once per node a pod
/// is checked against); the reasons past the first few (nodes with distinct taints) go to a
/// hash map, so many distinct reasons stay linear.
#[derive(Default)]
struct UnfitCounts<'a> {
    few: Vec<(&'a simulator::Unfit, usize)>,
    many: FxHashMap<&'a simulator::Unfit, usize>,
}

impl<'a> UnfitCounts<'a> {
    const FEW: usize = 8;

    fn add(&mut self, unfit: &'a simulator::Unfit) {
        if let Some((_, count)) = self.few.iter_mut().find(|(u, _)| *u == unfit) {
            *count += 1;
        } else if self.few.len() < Self::FEW {
            self.few.push((unfit, 1));
        } else {
            *self.many.entry(unfit).or_insert(0) += 1;
        }
    }
}

/// kube-scheduler's message for `total` nodes none of which fits, from how many nodes fail for
/// each reason (`Insufficient` counted once per resource short).
fn unschedulable_message<'u>(
    total: usize,
    unfits: impl IntoIterator<Item = (&'u simulator::Unfit, usize)>,
    pre_filter: Option<&str>,
) -> String {
    if total == 0 {
        return "no nodes available to schedule pods".to_string();
    }
    if let Some(message) = pre_filter {
        return format!("0/{total} nodes are available: {message}.");
    }
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for (unfit, count) in unfits {
        for reason in unfit.reasons() {
            *reasons.entry(reason).or_insert(0) += count;
        }
    }
    let mut parts: Vec<String> = reasons.iter().map(|(reason, count)| format!("{count} {reason}")).collect();
    parts.sort();
    format!("0/{total} nodes are available: {}.", parts.join(", "))
}

impl MemoryCluster {
    fn in_snapshot(&self, pod: &Pod) -> Option<simulator::NodeId> {
        if is_terminal(pod) {
            return None;
        }
        bound_node(pod).and_then(|node| self.scheduler.snapshot.node_id(node))
    }

    pub(super) fn snapshot_pod_changed(
        &mut self,
        key: &ObjectKey,
        old: Option<&Pod>,
        old_info: Option<&Arc<PodInfo>>,
        new: &Pod,
        info: &Arc<PodInfo>,
        change: PodChange,
    ) {
        let was_in = old.and_then(|_| self.scheduler.snapshot.pod_node(&info.key));
        let now_in = self.in_snapshot(new);
        // The scheduler's snapshot reads only what a `Spec` change can change: after a change of
        // binding or status it keeps the pod's earlier `PodInfo`, and nothing is re-placed.
        let info_changed = change == PodChange::Spec || old_info.is_none();
        if let Some(node) = was_in
            && (was_in != now_in || info_changed)
        {
            if let Ok(placed) = self.scheduler.snapshot.remove_pod(&info.key) {
                self.scheduler.placed_changed(&placed, node);
            }
            self.scheduler.retry_all = true;
        }
        if let Some(node) = now_in
            && (was_in != now_in || info_changed)
        {
            self.scheduler.placed_changed(info, node);
            if let Some(lowest) = &mut self.scheduler.lowest_priority {
                *lowest = (*lowest).min(info.priority);
            }
            if let Err(error) = self.scheduler.snapshot.add_pod(info.clone(), node) {
                tracing::warn!(pod = %key, %error, "pod could not be placed in the scheduler's snapshot");
            }
        }
        if waiting_for_scheduler(new) {
            self.scheduler.waiting.insert(key.clone());
            if old.is_none_or(|o| !waiting_for_scheduler(o)) || change == PodChange::Spec {
                self.scheduler.new_pending.insert(key.clone());
            }
        } else {
            self.scheduler.waiting.remove(key);
            self.scheduler.new_pending.remove(key);
        }
    }

    pub(super) fn snapshot_pod_removed(&mut self, key: &ObjectKey, info: Option<&Arc<PodInfo>>) {
        if let Some(info) = info
            && let Some(node) = self.scheduler.snapshot.pod_node(&info.key)
        {
            if let Ok(placed) = self.scheduler.snapshot.remove_pod(&info.key) {
                self.scheduler.placed_changed(&placed, node);
            }
            self.scheduler.retry_all = true;
        }
        self.scheduler.waiting.remove(key);
        self.scheduler.new_pending.remove(key);
    }

    /// The pods of a node that hold resources on it.
    fn snapshot_pods_of(&self, node: &str) -> Vec<Arc<PodInfo>> {
        self.pods_by_node
            .get(node)
            .into_iter()
            .flatten()
            .filter(|key| self.pods.get(key).is_some_and(|p| !is_terminal(p)))
            .filter_map(|key| self.pod_infos.get(key).cloned())
            .collect()
    }

    pub(super) fn snapshot_node_put(&mut self, name: &str, node: Arc<Node>) {
        let snapshot = &mut self.scheduler.snapshot;
        let pods = match snapshot.node_id(name) {
            Some(id) => {
                let (pods, old_name) = match snapshot.node(id) {
                    Some(n) => (n.pods.clone(), n.name.clone()),
                    None => (Default::default(), Arc::from(name)),
                };
                let _ = snapshot.remove_node(id);
                self.scheduler.garbage += 1;
                self.scheduler.kept.node_removed(id, old_name);
                pods
            }
            None => self.snapshot_pods_of(name),
        };
        self.scheduler.lowest_priority = None;
        let mut info = NodeInfo::new(node);
        info.pods = pods;
        match self.scheduler.snapshot.add_node_info(info) {
            Ok(id) => self.scheduler.kept.node_changed(id),
            Err(error) => tracing::warn!(node = %name, %error, "node could not be placed in the scheduler's snapshot"),
        }
        self.scheduler.retry_all = true;
        self.compact_snapshot();
    }

    pub(super) fn snapshot_node_removed(&mut self, name: &str) {
        if let Some(id) = self.scheduler.snapshot.node_id(name) {
            let _ = self.scheduler.snapshot.remove_node(id);
            self.scheduler.kept.node_removed(id, Arc::from(name));
            self.scheduler.garbage += 1;
            self.scheduler.retry_all = true;
            self.compact_snapshot();
        }
    }

    pub(super) fn snapshot_namespaces_changed(&mut self) {
        let namespaces = self.namespaces.list();
        self.scheduler.snapshot.set_namespaces(namespaces.iter().map(|n| &**n));
        self.scheduler.kept.forget();
    }

    /// Node ids are never reused, so replaced and removed nodes leave dead slots every search
    /// walks over; rebuild once they outnumber the live nodes.
    fn compact_snapshot(&mut self) {
        let live = self.scheduler.snapshot.node_count();
        if self.scheduler.garbage <= 64 || self.scheduler.garbage <= 2 * live {
            return;
        }
        let mut snapshot = ClusterSnapshot::new();
        let namespaces = self.namespaces.list();
        snapshot.set_namespaces(namespaces.iter().map(|n| &**n));
        snapshot.set_volumes(self.volume_index());
        for (key, node) in self.nodes.iter() {
            let mut info = NodeInfo::new(node.clone());
            info.pods = self.snapshot_pods_of(&key.name);
            if let Err(error) = snapshot.add_node_info(info) {
                tracing::warn!(node = %key.name, %error, "node could not be placed in the scheduler's snapshot");
            }
        }
        self.scheduler.snapshot = snapshot;
        self.scheduler.kept.forget();
        self.scheduler.garbage = 0;
        self.scheduler.lowest_priority = None;
    }

    /// What the pods holding resources on each node (bound to it, not finished) request, by
    /// node name: the sums the scheduler's snapshot keeps as pods come and go, so reading them
    /// takes no pass over the pods.
    pub fn requested_by_node(&self) -> impl Iterator<Item = (&str, &simulator::Resources)> {
        self.scheduler.snapshot.nodes().map(|(_, node)| (&*node.name, &node.requested))
    }

    /// One scheduling pass, when something changed since the last one.
    pub(super) fn schedule(&mut self) {
        let state = &mut self.scheduler;
        if !state.retry_all && state.new_pending.is_empty() {
            return;
        }
        let keys: Vec<ObjectKey> = if std::mem::take(&mut state.retry_all) {
            state.new_pending.clear();
            state.waiting.iter().cloned().collect()
        } else {
            std::mem::take(&mut state.new_pending).into_iter().collect()
        };
        let mut queue: Vec<(ObjectKey, Arc<PodInfo>)> = keys
            .into_iter()
            .filter(|key| self.pods.get(key).is_some_and(|p| waiting_for_scheduler(p)))
            .filter_map(|key| self.pod_infos.get(&key).cloned().map(|info| (key, info)))
            .collect();
        queue.sort_by_cached_key(|(key, info)| (Reverse(info.priority), info.created(), key.clone()));
        loop {
            let mut bound_any = false;
            let mut retry = Vec::new();
            for (key, info) in queue {
                if !self.pods.get(&key).is_some_and(|p| waiting_for_scheduler(p)) {
                    continue;
                }
                let outcome = self.scheduler.pick_node(&info);
                match outcome {
                    Ok(node) => {
                        self.bind(&key, node);
                        bound_any = true;
                    }
                    Err(message) => {
                        self.mark_unschedulable(&key, message);
                        self.preempt_for(&key, &info);
                        if info.has_inter_pod_affinity() || !info.shape.spread_constraints.is_empty() {
                            retry.push((key, info));
                        }
                    }
                }
            }
            if !bound_any || retry.is_empty() {
                break;
            }
            queue = retry;
        }
    }

    /// A priority no pod placed in the snapshot is below (see `SchedulerState::lowest_priority`).
    pub(super) fn lowest_placed_priority(&mut self) -> i32 {
        let snapshot = &self.scheduler.snapshot;
        *self.scheduler.lowest_priority.get_or_insert_with(|| {
            snapshot.nodes().flat_map(|(_, node)| &node.pods).map(|p| p.priority).min().unwrap_or(i32::MAX)
        })
    }

    fn bind(&mut self, key: &ObjectKey, node: String) {
        if !self.pods.contains(key) {
            return;
        }
        self.bind_pod_volumes(key, &node);
        let Some(pod) = self.pods.get(key) else { return };
        let now = self.now();
        let mut pod = (**pod).clone();
        pod.spec.get_or_insert_with(Default::default).node_name = Some(node);
        let status = pod.status.get_or_insert_with(Default::default);
        status.nominated_node_name = None;
        set_condition(status, "PodScheduled", "True", None, None, now);
        self.put_pod(pod, PodChange::Bind);
    }

    fn mark_unschedulable(&mut self, key: &ObjectKey, message: String) {
        let Some(pod) = self.pods.get(key) else { return };
        let current = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
        let unchanged = current.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(message.as_str())
        });
        if unchanged {
            return;
        }
        let now = self.now();
        let mut pod = (**pod).clone();
        let status = pod.status.get_or_insert_with(Default::default);
        status.phase = Some("Pending".to_string());
        set_condition(status, "PodScheduled", "False", Some("Unschedulable"), Some(message), now);
        self.put_pod(pod, PodChange::Status);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Alike, Answers, KeptAnswers, KindAnswers, UnfitCounts};
    use simulator::resources::Shortfall;
    use simulator::{PodInfo, Unfit};

    fn kind(used: bool) -> KindAnswers {
        let pod = Arc::new(PodInfo::new(&simulator::testing::pod("p", "100m", "1Mi")));
        KindAnswers { pod, answers: Answers::default(), choice: Default::default(), seen: 0, outcome: None, used }
    }

    fn alike(n: usize) -> Alike {
        Alike { shape: n, labels: 0, pinned_node: None }
    }

    /// Room for a new kind is made by dropping the kinds not asked since the last time, then
    /// everything; below the cap nothing is dropped.
    #[test]
    fn kinds_not_asked_since_the_last_thinning_make_room_first() {
        let ids = KeptAnswers::MAX_ANSWERS / 4;
        let shapes = |kept: &KeptAnswers| {
            let mut shapes: Vec<usize> = kept.kinds.keys().map(|a| a.shape).collect();
            shapes.sort();
            shapes
        };
        let mut kept = KeptAnswers::default();
        for (n, used) in [(1, true), (2, false), (3, true)] {
            kept.kinds.insert(alike(n), kind(used));
        }
        kept.make_room(ids);
        assert_eq!(shapes(&kept), [1, 2, 3], "a fourth kind fits");
        kept.kinds.insert(alike(4), kind(true));
        kept.make_room(ids);
        assert_eq!(shapes(&kept), [1, 3, 4], "the kind not asked is dropped");
        assert!(kept.kinds.values().all(|k| !k.used), "the others start over as not asked");
        kept.kinds.insert(alike(5), kind(true));
        kept.make_room(ids);
        assert_eq!(shapes(&kept), [5], "only the kind asked since is kept");
        kept.make_room(KeptAnswers::MAX_ANSWERS);
        assert!(kept.kinds.is_empty(), "no room even for one more beside it: all go");
    }

    /// Past the first few kinds, reasons are counted in the map: none is lost or counted twice.
    #[test]
    fn unfit_counts_keep_every_node_once() {
        let cpu: Shortfall = ["cpu"].into_iter().collect();
        let mut unfits = Vec::new();
        for i in 0..20 {
            unfits.push(Unfit::UntoleratedTaint { key: format!("t-{}", i % 12), value: String::new() });
            unfits.push(Unfit::Insufficient(cpu.clone()));
        }
        let mut counts = UnfitCounts::default();
        for unfit in &unfits {
            counts.add(unfit);
        }
        assert_eq!(counts.few.len(), UnfitCounts::FEW);
        let all: Vec<(Unfit, usize)> = counts.few.into_iter().chain(counts.many).map(|(u, n)| (u.clone(), n)).collect();
        assert_eq!(all.len(), 13, "12 taints and the cpu shortfall, each once");
        assert_eq!(all.iter().map(|(_, n)| n).sum::<usize>(), 40);
        assert!(all.contains(&(Unfit::Insufficient(cpu), 20)));
        assert!(all.contains(&(Unfit::UntoleratedTaint { key: "t-11".into(), value: String::new() }, 1)));
        assert!(all.contains(&(Unfit::UntoleratedTaint { key: "t-0".into(), value: String::new() }, 2)));
    }
}
