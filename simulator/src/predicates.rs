//! Scheduling predicates: kube-scheduler's filter plugins, in kube-scheduler's order, answering
//! "can this pod go on this node?" with the scheduler's own failure messages.
//!
//! A pod is first *prepared* against the snapshot (like the scheduler's PreFilter): its terms are
//! looked up in the topology index and topology spread minimums are computed. The prepared pod
//! can then be checked against any number of nodes until the snapshot changes.

use rustc_hash::FxHashMap as HashMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::index::{LabelIndex, TermCounts, TermId, term_matches_pod};
use crate::node::NodeInfo;
use crate::pod::{PodInfo, PodTerm, SpreadConstraint};
use crate::resources::Shortfall;
use crate::snapshot::{ClusterSnapshot, NodeId};
use crate::volumes::PreparedVolumes;
use crate::well_known::{TO_BE_DELETED_TAINT, UNSCHEDULABLE_TAINT};

/// Why a pod does not fit a node. `Display` gives kube-scheduler's message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Unfit {
    NodeNotFound,
    Unschedulable,
    UntoleratedTaint {
        key: String,
        value: String,
    },
    NodeAffinity,
    HostPorts,
    TooManyPods,
    Insufficient(Shortfall),
    TopologySpreadMissingLabel,
    TopologySpread,
    PodAffinity,
    PodAntiAffinity,
    ExistingPodsAntiAffinity,
    /// A volume PreFilter failure (a claim missing, being deleted or unbound with `Immediate`
    /// binding, …): the pod fits no node, and the text is kube-scheduler's.
    PodVolumes(String),
    /// VolumeRestrictions: another pod uses one of the pod's `ReadWriteOncePod` claims.
    ReadWriteOncePodConflict,
    /// NodeVolumeLimits: the node's CSI attach limit would be exceeded.
    MaxVolumeCount,
    /// VolumeBinding: a bound volume's node affinity rejects the node, a delayed claim finds no
    /// volume to bind or provision there, or a bound volume does not exist.
    VolumeBinding {
        node_conflict: bool,
        bind_conflict: bool,
        missing_volume: bool,
    },
    /// VolumeZone: the bound volume's zone / region labels do not name the node's.
    VolumeZone,
}

impl Unfit {
    /// The individual reasons, one per failing resource for `Insufficient`.
    pub fn reasons(&self) -> Vec<String> {
        match self {
            Unfit::Insufficient(resources) => resources.names().map(|r| format!("Insufficient {r}")).collect(),
            Unfit::VolumeBinding { node_conflict, bind_conflict, missing_volume } => {
                volume_binding_reasons(*node_conflict, *bind_conflict, *missing_volume).map(str::to_string).collect()
            }
            other => vec![other.to_string()],
        }
    }
}

impl fmt::Display for Unfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfit::NodeNotFound => write!(f, "node not found"),
            Unfit::Unschedulable => write!(f, "node(s) were unschedulable"),
            Unfit::UntoleratedTaint { key, value } => write!(f, "node(s) had untolerated taint {{{key}: {value}}}"),
            Unfit::NodeAffinity => write!(f, "node(s) didn't match Pod's node affinity/selector"),
            Unfit::HostPorts => write!(f, "node(s) didn't have free ports for the requested pod ports"),
            Unfit::TooManyPods => write!(f, "Too many pods"),
            Unfit::Insufficient(_) | Unfit::VolumeBinding { .. } => write!(f, "{}", self.reasons().join(", ")),
            Unfit::TopologySpreadMissingLabel => {
                write!(f, "node(s) didn't match pod topology spread constraints (missing required label)")
            }
            Unfit::TopologySpread => write!(f, "node(s) didn't match pod topology spread constraints"),
            Unfit::PodAffinity => write!(f, "node(s) didn't match pod affinity rules"),
            Unfit::PodAntiAffinity => write!(f, "node(s) didn't match pod anti-affinity rules"),
            Unfit::ExistingPodsAntiAffinity => write!(f, "node(s) didn't satisfy existing pods anti-affinity rules"),
            Unfit::PodVolumes(text) => write!(f, "{text}"),
            Unfit::ReadWriteOncePodConflict => write!(
                f,
                "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
            ),
            Unfit::MaxVolumeCount => write!(f, "node(s) exceed max volume count"),
            Unfit::VolumeZone => write!(f, "node(s) had no available volume zone"),
        }
    }
}

/// VolumeBinding's reasons, in the order its `FindPodVolumes` appends them.
fn volume_binding_reasons(
    node_conflict: bool,
    bind_conflict: bool,
    missing_volume: bool,
) -> impl Iterator<Item = &'static str> {
    [
        (node_conflict, "node(s) had volume node affinity conflict"),
        (bind_conflict, "node(s) didn't find available persistent volumes to bind"),
        (missing_volume, "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, reason)| reason)
}

/// Whether a toleration tolerates a taint (same key or empty key with `Exists`; same value
/// with `Equal`; same effect or empty effect).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    let operator = toleration.operator.as_deref().unwrap_or("Equal");
    if key.is_empty() {
        return operator == "Exists";
    }
    if key != taint.key {
        return false;
    }
    match operator {
        "Exists" => true,
        "Equal" | "" => toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

/// The first `NoSchedule` / `NoExecute` taint the tolerations do not tolerate.
pub fn untolerated_taint<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
}

/// nodeSelector and required node affinity.
pub fn matches_node_selection(pod: &PodInfo, node: &NodeInfo) -> bool {
    if let Some(selector) = pod.node_selector() {
        let labels = node.labels();
        if !selector.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v)) {
            return false;
        }
    }
    pod.pinned_node().is_none_or(|pinned| *node.name == *pinned)
        && pod.shape.node_affinity.as_ref().is_none_or(|m| m.matches(&node.node))
}

fn to_be_deleted_taint() -> Taint {
    Taint { key: TO_BE_DELETED_TAINT.to_string(), effect: "NoSchedule".to_string(), ..Default::default() }
}

enum SpreadCounts {
    /// Counts straight from the index (every node with the key is a domain).
    Index(TermId),
    /// Counts over the nodes eligible for this pod.
    Computed(HashMap<String, u32>),
}

struct PreparedSpread {
    topology_key: String,
    max_skew: i64,
    self_match: i64,
    min_match: i64,
    counts: SpreadCounts,
}

/// A pod prepared for filtering against the current state of one snapshot.
pub struct PreparedPod<'p> {
    pub pod: &'p PodInfo,
    affinity: Vec<TermId>,
    /// Pod counts per topology pair of pods matching *all* affinity terms, when there are
    /// several terms (a single term is read from the index directly).
    affinity_multi: Option<HashMap<(String, String), u32>>,
    /// No pod anywhere matches the affinity terms, and the pod matches them itself: the first
    /// pod of a self-affine group may go anywhere its other constraints allow.
    affinity_first_of_group: bool,
    anti_affinity: Vec<TermId>,
    blocking_carriers: Vec<usize>,
    spread: Vec<PreparedSpread>,
    /// Resolved claims, for pods with claims when the snapshot knows the cluster's volumes.
    volumes: Option<Box<PreparedVolumes>>,
}

impl ClusterSnapshot {
    /// Registers a term in the index, counting its matches among the pods the label index
    /// names as candidates (one scan of every pod for selectors without a positive requirement).
    fn ensure_term(&mut self, term: &std::sync::Arc<PodTerm>) -> TermId {
        if let Some(id) = self.index.term_id(term) {
            return id;
        }
        if self.index.labels.is_none() {
            let mut labels = LabelIndex::default();
            for (id, node) in self.nodes() {
                for pod in &node.pods {
                    labels.add(pod, id);
                }
            }
            self.index.labels = Some(labels);
        }
        let ns_labels = self.namespace_labels();
        let mut per_node: HashMap<NodeId, u32> = HashMap::default();
        let nodes: Box<dyn Iterator<Item = (NodeId, &crate::node::NodeInfo)>> =
            match self.index.labels.as_ref().and_then(|l| l.candidate_nodes(term, ns_labels)) {
                Some(candidates) => Box::new(candidates.into_iter().filter_map(|id| Some((id, self.node(id)?)))),
                None => Box::new(self.nodes()),
            };
        for (id, node) in nodes {
            let matching = node.pods.iter().filter(|p| term_matches_pod(term, p, ns_labels)).count() as u32;
            if matching > 0 {
                per_node.insert(id, matching);
            }
        }
        let counts = self.term_counts(term, per_node);
        self.index.insert_term(counts)
    }

    /// A term's counts per domain from its counts per node.
    fn term_counts(&self, term: &std::sync::Arc<PodTerm>, per_node: HashMap<NodeId, u32>) -> TermCounts {
        let mut per_domain: HashMap<String, u32> = HashMap::default();
        let mut total_in_domains = 0u32;
        for (id, matching) in &per_node {
            if let Some(value) = self.node(*id).and_then(|n| n.label(&term.topology_key)) {
                *per_domain.entry(value.to_string()).or_insert(0) += matching;
                total_in_domains += matching;
            }
        }
        TermCounts { term: term.clone(), per_domain, per_node, total_in_domains }
    }

    fn ensure_domain_key(&mut self, key: &str) {
        if self.index.domains.contains_key(key) {
            return;
        }
        let mut counts: HashMap<String, u32> = HashMap::default();
        for (_, node) in self.nodes() {
            if let Some(v) = node.label(key) {
                *counts.entry(v.to_string()).or_insert(0) += 1;
            }
        }
        self.index.insert_domain_key(key.to_string(), counts);
    }

    /// Prepares a pod for filtering (kube-scheduler's PreFilter). Cheap when the pod has no
    /// inter-pod affinity or spread constraints; otherwise O(terms), plus O(nodes) for spread
    /// constraints restricted by node affinity or taints.
    pub fn prepare<'p>(&mut self, pod: &'p PodInfo) -> PreparedPod<'p> {
        let mut prepared = PreparedPod {
            pod,
            affinity: Vec::new(),
            affinity_multi: None,
            affinity_first_of_group: false,
            anti_affinity: Vec::new(),
            blocking_carriers: Vec::new(),
            spread: Vec::new(),
            volumes: None,
        };
        if !pod.claims.is_empty() {
            let placed = self.pod_node(&pod.key).is_some();
            if let Some(index) = self.volumes.as_deref_mut() {
                prepared.volumes = Some(Box::new(index.prepare(pod, &self.index.claim_users, placed)));
            }
        }
        if !pod.shape.affinity_terms.is_empty() {
            prepared.affinity = pod.shape.affinity_terms.iter().map(|t| self.ensure_term(t)).collect();
            let ns_labels = self.namespace_labels();
            let self_match = pod.shape.affinity_terms.iter().all(|t| term_matches_pod(t, pod, ns_labels));
            if prepared.affinity.len() == 1 {
                let counts = &self.index.terms[prepared.affinity[0]];
                prepared.affinity_first_of_group = counts.total_in_domains == 0 && self_match;
            } else {
                let multi = self.count_pods_matching_all(&pod.shape.affinity_terms, prepared.affinity[0]);
                prepared.affinity_first_of_group = multi.is_empty() && self_match;
                prepared.affinity_multi = Some(multi);
            }
        }
        prepared.anti_affinity = pod.shape.anti_affinity_terms.iter().map(|t| self.ensure_term(t)).collect();
        prepared.blocking_carriers = self.blocking_carriers(pod);
        if !pod.shape.spread_constraints.is_empty() {
            prepared.spread = self.prepare_spread(pod);
        }
        prepared
    }

    /// The required anti-affinity terms of placed pods that match `pod` (InterPodAffinity's
    /// symmetric check), in ascending order.
    fn blocking_carriers(&self, pod: &PodInfo) -> Vec<usize> {
        let ns_labels = self.namespace_labels();
        let mut blocking = self.index.candidate_carriers(pod);
        blocking.retain(|i| {
            let c = &self.index.carriers[*i];
            c.total > 0 && term_matches_pod(&c.term, pod, ns_labels)
        });
        blocking
    }

    /// Whether a placed pod's required anti-affinity term matches `pod`.
    pub(crate) fn has_blocking_carriers(&self, pod: &PodInfo) -> bool {
        !self.blocking_carriers(pod).is_empty()
    }

    /// For several affinity terms: counts per topology pair of pods matching all of them.
    fn count_pods_matching_all(
        &self,
        terms: &[std::sync::Arc<PodTerm>],
        first: TermId,
    ) -> HashMap<(String, String), u32> {
        let mut out = HashMap::default();
        let ns_labels = self.namespace_labels();
        for node_id in self.index.terms[first].per_node.keys() {
            let Some(node) = self.node(*node_id) else { continue };
            for p in &node.pods {
                if terms.iter().all(|t| term_matches_pod(t, p, ns_labels)) {
                    for t in terms {
                        if let Some(v) = node.label(&t.topology_key) {
                            *out.entry((t.topology_key.clone(), v.to_string())).or_insert(0) += 1;
                        }
                    }
                }
            }
        }
        out
    }

    fn prepare_spread(&mut self, pod: &PodInfo) -> Vec<PreparedSpread> {
        let constraints = &pod.shape.spread_constraints;
        let ids: Vec<TermId> = constraints.iter().map(|c| self.ensure_term(&c.term)).collect();
        let same_key = constraints.iter().all(|c| c.term.topology_key == constraints[0].term.topology_key);
        let restricted = |c: &SpreadConstraint| {
            c.honor_taints
                || (c.honor_node_affinity && (pod.node_selector().is_some() || pod.has_required_node_affinity()))
        };
        let fast = same_key && !constraints.iter().any(restricted);
        if fast {
            self.ensure_domain_key(&constraints[0].term.topology_key);
        }
        let this = &*self;
        let ns_labels = this.namespace_labels();
        let self_match = |c: &SpreadConstraint| i64::from(term_matches_pod(&c.term, pod, ns_labels));
        if fast {
            let domains = &this.index.domains[&constraints[0].term.topology_key];
            return constraints
                .iter()
                .zip(&ids)
                .map(|(c, id)| {
                    let counts = &this.index.terms[*id].per_domain;
                    // Every node with the key is a domain; one without matching pods has count 0.
                    let min_match = if (domains.len() as i64) < c.min_domains || counts.len() < domains.len() {
                        0
                    } else {
                        counts.values().copied().min().unwrap_or(0) as i64
                    };
                    PreparedSpread {
                        topology_key: c.term.topology_key.clone(),
                        max_skew: c.max_skew,
                        self_match: self_match(c),
                        min_match,
                        counts: SpreadCounts::Index(*id),
                    }
                })
                .collect();
        }
        // Eligible nodes: they pass the pod's node affinity / taints (per policy) and carry every
        // constraint's topology key.
        let mut per_constraint: Vec<HashMap<String, u32>> = vec![HashMap::default(); constraints.len()];
        for (node_id, node) in this.nodes() {
            if !constraints.iter().all(|c| node.label(&c.term.topology_key).is_some()) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.honor_node_affinity && !matches_node_selection(pod, node) {
                    continue;
                }
                if c.honor_taints && !taints_tolerated(pod, node) {
                    continue;
                }
                let value = node.label(&c.term.topology_key).expect("checked above");
                let matching = this.index.terms[ids[i]].per_node.get(&node_id).copied().unwrap_or(0);
                *per_constraint[i].entry(value.to_string()).or_insert(0) += matching;
            }
        }
        constraints
            .iter()
            .zip(per_constraint)
            .map(|(c, counts)| {
                let min_match = if (counts.len() as i64) < c.min_domains {
                    0
                } else {
                    counts.values().copied().min().unwrap_or(0) as i64
                };
                PreparedSpread {
                    topology_key: c.term.topology_key.clone(),
                    max_skew: c.max_skew,
                    self_match: self_match(c),
                    min_match,
                    counts: SpreadCounts::Computed(counts),
                }
            })
            .collect()
    }

    /// Whether the prepared pod passes every filter on one node; cheaper than `check` because it
    /// builds no failure reason.
    pub fn fits(&self, prepared: &PreparedPod<'_>, node_id: NodeId) -> bool {
        self.evaluate(prepared, node_id, false).is_ok()
    }

    /// Runs every filter for a prepared pod on one node, stopping at the first failure like
    /// kube-scheduler does. `spec.nodeName` is not a filter here: pods the simulation moves still
    /// carry their old node's name, and pending pods never have one (the autoscaler, like
    /// upstream, clears it before simulating).
    pub fn check(&self, prepared: &PreparedPod<'_>, node_id: NodeId) -> Result<(), Unfit> {
        self.evaluate(prepared, node_id, true)
    }

    /// The filters; with `detailed` false, `Insufficient` carries no resource names.
    fn evaluate(&self, prepared: &PreparedPod<'_>, node_id: NodeId, detailed: bool) -> Result<(), Unfit> {
        let node = self.node(node_id).ok_or(Unfit::NodeNotFound)?;
        let pod = prepared.pod;
        // Volume PreFilter failures hold for every node, before any filter runs.
        if let Some(failure) = prepared.volumes.as_ref().and_then(|v| v.failure()) {
            return Err(failure.clone());
        }
        // NodeUnschedulable
        if node.unschedulable() {
            let taint = Taint { key: UNSCHEDULABLE_TAINT.into(), effect: "NoSchedule".into(), ..Default::default() };
            if !pod.tolerations().iter().any(|t| tolerates(t, &taint)) {
                return Err(Unfit::Unschedulable);
            }
        }
        // TaintToleration
        if let Some(t) = untolerated_taint(node.taints(), pod.tolerations()) {
            return Err(Unfit::UntoleratedTaint { key: t.key.clone(), value: t.value.clone().unwrap_or_default() });
        }
        if node.to_be_deleted && !pod.tolerations().iter().any(|t| tolerates(t, &to_be_deleted_taint())) {
            return Err(Unfit::UntoleratedTaint { key: TO_BE_DELETED_TAINT.into(), value: String::new() });
        }
        // NodeAffinity
        if !matches_node_selection(pod, node) {
            return Err(Unfit::NodeAffinity);
        }
        // NodePorts
        if pod.shape.host_ports.iter().any(|hp| node.used_ports.iter().any(|u| u.conflicts_with(hp))) {
            return Err(Unfit::HostPorts);
        }
        // NodeResourcesFit
        if node.requested.pods.saturating_add(1) > node.allocatable.pods {
            return Err(Unfit::TooManyPods);
        }
        if !pod.requests().fits(&node.requested, &node.allocatable) {
            let shortfall = if detailed {
                pod.requests().insufficient(&node.requested, &node.allocatable)
            } else {
                Shortfall::default()
            };
            return Err(Unfit::Insufficient(shortfall));
        }
        // VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone
        if let (Some(volumes), Some(index)) = (prepared.volumes.as_deref(), self.volumes.as_deref()) {
            index.check(volumes, node)?;
        }
        // PodTopologySpread
        for s in &prepared.spread {
            let Some(value) = node.label(&s.topology_key) else {
                return Err(Unfit::TopologySpreadMissingLabel);
            };
            let matching = match &s.counts {
                SpreadCounts::Index(id) => self.index.terms[*id].per_domain.get(value).copied().unwrap_or(0),
                SpreadCounts::Computed(counts) => counts.get(value).copied().unwrap_or(0),
            } as i64;
            if matching + s.self_match - s.min_match > s.max_skew {
                return Err(Unfit::TopologySpread);
            }
        }
        // InterPodAffinity: existing pods' anti-affinity, then the pod's affinity and anti-affinity.
        for c in &prepared.blocking_carriers {
            let carrier = &self.index.carriers[*c];
            if let Some(value) = node.label(&carrier.term.topology_key)
                && carrier.per_domain.get(value).copied().unwrap_or(0) > 0
            {
                return Err(Unfit::ExistingPodsAntiAffinity);
            }
        }
        if !prepared.affinity.is_empty() {
            let mut pods_exist = true;
            for (term, id) in pod.shape.affinity_terms.iter().zip(&prepared.affinity) {
                let Some(value) = node.label(&term.topology_key) else {
                    return Err(Unfit::PodAffinity);
                };
                let count = match &prepared.affinity_multi {
                    None => self.index.terms[*id].per_domain.get(value).copied().unwrap_or(0),
                    Some(multi) => multi.get(&(term.topology_key.clone(), value.to_string())).copied().unwrap_or(0),
                };
                if count == 0 {
                    pods_exist = false;
                }
            }
            if !pods_exist && !prepared.affinity_first_of_group {
                return Err(Unfit::PodAffinity);
            }
        }
        for (term, id) in pod.shape.anti_affinity_terms.iter().zip(&prepared.anti_affinity) {
            if let Some(value) = node.label(&term.topology_key)
                && self.index.terms[*id].per_domain.get(value).copied().unwrap_or(0) > 0
            {
                return Err(Unfit::PodAntiAffinity);
            }
        }
        Ok(())
    }

    /// Prepares and checks one pod on one node.
    pub fn check_pod(&mut self, pod: &PodInfo, node_id: NodeId) -> Result<(), Unfit> {
        let prepared = self.prepare(pod);
        self.check(&prepared, node_id)
    }
}

fn taints_tolerated(pod: &PodInfo, node: &NodeInfo) -> bool {
    untolerated_taint(node.taints(), pod.tolerations()).is_none()
        && (!node.to_be_deleted || pod.tolerations().iter().any(|t| tolerates(t, &to_be_deleted_taint())))
}

#[cfg(test)]
#[path = "index_props.rs"]
mod index_props;
