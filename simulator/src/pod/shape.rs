//! `PodShape`: what a pod's spec decides for scheduling (requests, ports, node affinity,
//! inter-pod terms, spread constraints), compiled once per distinct spec and shared by `Arc`
//! between every pod of that spec: the replicas of one ReplicaSet hold one shape, so a cluster
//! of 450,000 pods holds a few thousand specs, not 450,000 copies.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PodAffinityTerm, PodSpec, TopologySpreadConstraint};

use super::PodInfo;
use crate::labels::{Labels, NodeSelectorMatcher, Selector};
use crate::resources::{Resources, spec_requests};

/// A host port a pod binds on its node. IP `""` or `0.0.0.0` means every address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

impl HostPort {
    pub fn conflicts_with(&self, other: &HostPort) -> bool {
        let wildcard = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.port == other.port
            && self.protocol == other.protocol
            && (wildcard(&self.ip) || wildcard(&other.ip) || self.ip == other.ip)
    }
}

/// Which namespaces a pod term looks at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NamespaceSet {
    /// Namespaces listed by name (or the pod's own namespace when nothing was given).
    pub names: Vec<String>,
    /// `namespaceSelector`; `Selector::everything()` selects all namespaces.
    pub selector: Option<Selector>,
}

impl NamespaceSet {
    pub fn contains(&self, namespace: &str, namespace_labels: Option<&Labels>) -> bool {
        self.names.iter().any(|n| n == namespace) || self.selector.as_ref().is_some_and(|s| s.matches(namespace_labels))
    }
}

/// Why a pod term exists; terms of different kinds are indexed separately because topology
/// spread skips terminating pods while inter-pod affinity counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TermKind {
    Affinity,
    Spread,
}

/// A compiled pod (anti-)affinity term or a topology spread selector: which pods it counts
/// (namespaces and label selector) and over which topology key. Built by [`PodTerm::new`] and
/// never changed after (its fields are public to read): the snapshot's topology index looks its
/// terms up at every pod it places, and hashes the digest taken at construction instead of
/// the selector's strings each time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodTerm {
    pub kind: TermKind,
    pub selector: Selector,
    pub namespaces: NamespaceSet,
    pub topology_key: String,
    /// A hash of the four fields above, taken once.
    digest: u64,
}

impl std::hash::Hash for PodTerm {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        debug_assert_eq!(
            self.digest,
            Self::digest_of(self.kind, &self.selector, &self.namespaces, &self.topology_key),
            "a term changed after it was built"
        );
        state.write_u64(self.digest);
    }
}

impl PodTerm {
    pub fn new(kind: TermKind, selector: Selector, namespaces: NamespaceSet, topology_key: String) -> PodTerm {
        let digest = Self::digest_of(kind, &selector, &namespaces, &topology_key);
        PodTerm { kind, selector, namespaces, topology_key, digest }
    }

    fn digest_of(kind: TermKind, selector: &Selector, namespaces: &NamespaceSet, topology_key: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = rustc_hash::FxHasher::default();
        (kind, selector, namespaces, topology_key).hash(&mut hasher);
        hasher.finish()
    }

    /// Compiles a required (anti-)affinity term of a pod in `pod_namespace` with `pod_labels`.
    /// `matchLabelKeys` / `mismatchLabelKeys` become `key=value` / `key!=value` requirements
    /// taken from the pod's own labels, as the API server does on admission.
    fn from_affinity_term(term: &PodAffinityTerm, pod_namespace: &str, pod_labels: Option<&Labels>) -> PodTerm {
        let mut names: Vec<String> = term.namespaces.clone().unwrap_or_default();
        let namespace_selector = term.namespace_selector.as_ref().map(|s| Selector::from_label_selector(Some(s)));
        if names.is_empty() && namespace_selector.is_none() {
            names.push(pod_namespace.to_string());
        }
        names.sort();
        names.dedup();
        let value_of = |k: &String| pod_labels.and_then(|l| l.get(k)).map(|v| (k.clone(), v.clone()));
        let mut selector = Selector::from_label_selector(term.label_selector.as_ref())
            .with_equalities(term.match_label_keys.iter().flatten().filter_map(value_of).collect::<Vec<_>>());
        if let Selector::All(reqs) = &mut selector {
            for (k, v) in term.mismatch_label_keys.iter().flatten().filter_map(value_of) {
                reqs.push(crate::labels::Requirement::NotIn(k, vec![v]));
            }
            reqs.sort();
            reqs.dedup();
        }
        PodTerm::new(
            TermKind::Affinity,
            selector,
            NamespaceSet { names, selector: namespace_selector },
            term.topology_key.clone(),
        )
    }

    /// Whether `pod` is one of the pods this term counts.
    pub fn matches_pod(&self, pod: &PodInfo, namespace_labels: Option<&Labels>) -> bool {
        self.namespaces.contains(pod.namespace(), namespace_labels) && self.selector.matches(pod.labels())
    }
}

/// A `DoNotSchedule` topology spread constraint.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpreadConstraint {
    pub term: Arc<PodTerm>,
    pub max_skew: i64,
    pub min_domains: i64,
    /// `nodeAffinityPolicy: Honor` (the default): only nodes the pod could select count.
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor`: nodes with taints the pod does not tolerate do not count.
    pub honor_taints: bool,
}

impl SpreadConstraint {
    fn compile(c: &TopologySpreadConstraint, labels: Option<&Labels>, namespace: &str) -> Option<SpreadConstraint> {
        if c.when_unsatisfiable != "DoNotSchedule" {
            return None;
        }
        let mut selector = Selector::from_label_selector(c.label_selector.as_ref());
        if let Some(keys) = c.match_label_keys.as_ref() {
            let extra: Vec<(String, String)> =
                keys.iter().filter_map(|k| labels.and_then(|l| l.get(k)).map(|v| (k.clone(), v.clone()))).collect();
            selector = selector.with_equalities(extra);
        }
        Some(SpreadConstraint {
            term: Arc::new(PodTerm::new(
                TermKind::Spread,
                selector,
                NamespaceSet { names: vec![namespace.to_string()], selector: None },
                c.topology_key.clone(),
            )),
            max_skew: i64::from(c.max_skew.max(1)),
            min_domains: i64::from(c.min_domains.unwrap_or(1).max(1)),
            honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
        })
    }
}

/// A pod spec compiled for the scheduler's filters. The spec itself is kept (without
/// `nodeName`, which each pod holds) for the readers that need more: the drain rules (volumes,
/// grace period, restart policy), the pod autoscalers (containers' requests), and `to_pod`.
#[derive(Clone, Debug, PartialEq)]
pub struct PodShape {
    pub spec: PodSpec,
    /// The namespace and (when a term or constraint takes values from them through
    /// `matchLabelKeys` / `mismatchLabelKeys`) the labels the terms were compiled with: two
    /// pods share a shape only when these are the same too.
    pub namespace: Arc<str>,
    pub compiled_with_labels: Option<Arc<Labels>>,
    pub requests: Resources,
    pub priority: i32,
    pub host_ports: Vec<HostPort>,
    pub node_affinity: Option<NodeSelectorMatcher>,
    pub affinity_terms: Vec<Arc<PodTerm>>,
    pub anti_affinity_terms: Vec<Arc<PodTerm>>,
    pub spread_constraints: Vec<SpreadConstraint>,
}

impl PodShape {
    /// Compiles `spec` (its `nodeName` is not read) for a pod in `namespace` with `labels`.
    pub fn compile(spec: PodSpec, namespace: Arc<str>, labels: Option<&Arc<Labels>>) -> PodShape {
        let requests = spec_requests(Some(&spec));
        let priority = spec.priority.unwrap_or(0);
        let mut host_ports = Vec::new();
        for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
            for p in c.ports.iter().flatten() {
                if let Some(hp) = p.host_port.filter(|hp| *hp > 0) {
                    host_ports.push(HostPort {
                        ip: p.host_ip.clone().unwrap_or_default(),
                        protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                        port: hp,
                    });
                }
            }
        }
        let pod_labels = labels.map(|l| &**l);
        let affinity = spec.affinity.as_ref();
        let node_affinity = affinity
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| na.required_during_scheduling_ignored_during_execution.as_ref())
            .map(NodeSelectorMatcher::new);
        let compile_terms = |terms: Option<&Vec<PodAffinityTerm>>| -> Vec<Arc<PodTerm>> {
            terms
                .into_iter()
                .flatten()
                .map(|t| Arc::new(PodTerm::from_affinity_term(t, &namespace, pod_labels)))
                .collect()
        };
        let affinity_terms = compile_terms(
            affinity
                .and_then(|a| a.pod_affinity.as_ref())
                .and_then(|p| p.required_during_scheduling_ignored_during_execution.as_ref()),
        );
        let anti_affinity_terms = compile_terms(
            affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|p| p.required_during_scheduling_ignored_during_execution.as_ref()),
        );
        let spread_constraints = spec
            .topology_spread_constraints
            .iter()
            .flatten()
            .filter_map(|c| SpreadConstraint::compile(c, pod_labels, &namespace))
            .collect();
        let compiled_with_labels = reads_pod_labels(&spec).then(|| labels.cloned()).flatten();
        PodShape {
            spec,
            namespace,
            compiled_with_labels,
            requests,
            priority,
            host_ports,
            node_affinity,
            affinity_terms,
            anti_affinity_terms,
            spread_constraints,
        }
    }
}

/// Whether compiling `spec` reads the pod's own labels (`matchLabelKeys`, `mismatchLabelKeys`).
pub(crate) fn reads_pod_labels(spec: &PodSpec) -> bool {
    let affinity = spec.affinity.as_ref();
    let terms = affinity
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|p| p.required_during_scheduling_ignored_during_execution.as_ref())
        .into_iter()
        .chain(
            affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|p| p.required_during_scheduling_ignored_during_execution.as_ref()),
        )
        .flatten();
    let mut terms = terms;
    terms.any(|t| {
        t.match_label_keys.as_ref().is_some_and(|k| !k.is_empty())
            || t.mismatch_label_keys.as_ref().is_some_and(|k| !k.is_empty())
    }) || spec
        .topology_spread_constraints
        .iter()
        .flatten()
        .any(|c| c.match_label_keys.as_ref().is_some_and(|k| !k.is_empty()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::labels::Requirement;

    fn term(kind: TermKind, app: &str, namespace: &str, topology_key: &str) -> Arc<PodTerm> {
        Arc::new(PodTerm::new(
            kind,
            Selector::All(vec![Requirement::In("app".into(), vec![app.into()])]),
            NamespaceSet { names: vec![namespace.into()], selector: None },
            topology_key.into(),
        ))
    }

    /// The digest stands in for the fields in `Hash`: a term built again from the same fields
    /// finds the first in a map, and a term differing in any field is another key.
    #[test]
    fn terms_built_alike_are_one_key_and_any_difference_another() {
        let mut ids: HashMap<Arc<PodTerm>, usize> = HashMap::new();
        let variants = [
            term(TermKind::Affinity, "web", "default", "zone"),
            term(TermKind::Spread, "web", "default", "zone"),
            term(TermKind::Affinity, "db", "default", "zone"),
            term(TermKind::Affinity, "web", "prod", "zone"),
            term(TermKind::Affinity, "web", "default", "kubernetes.io/hostname"),
        ];
        for (i, t) in variants.iter().enumerate() {
            assert_eq!(ids.insert(t.clone(), i), None, "{t:?} is a new key");
        }
        assert_eq!(ids.get(&term(TermKind::Affinity, "web", "default", "zone")), Some(&0));
        assert_eq!(ids.get(&term(TermKind::Spread, "web", "default", "zone")), Some(&1));
        assert_eq!(ids.len(), variants.len());
    }
}
