//! `PodInfo`: a pod plus everything the simulator needs from it, computed once.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, Toleration, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::labels::{Labels, NodeSelectorMatcher, Selector};
use crate::resources::{Resources, pod_requests};
use crate::volumes::{PodClaim, pod_claims};
use crate::well_known::{DAEMONSET_POD, MIRROR_POD};

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
/// (namespaces and label selector) and over which topology key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodTerm {
    pub kind: TermKind,
    pub selector: Selector,
    pub namespaces: NamespaceSet,
    pub topology_key: String,
}

impl PodTerm {
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
        PodTerm {
            kind: TermKind::Affinity,
            selector,
            namespaces: NamespaceSet { names, selector: namespace_selector },
            topology_key: term.topology_key.clone(),
        }
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
    fn compile(c: &TopologySpreadConstraint, pod: &Pod, namespace: &str) -> Option<SpreadConstraint> {
        if c.when_unsatisfiable != "DoNotSchedule" {
            return None;
        }
        let mut selector = Selector::from_label_selector(c.label_selector.as_ref());
        if let Some(keys) = c.match_label_keys.as_ref() {
            let labels = pod.metadata.labels.as_ref();
            let extra: Vec<(String, String)> =
                keys.iter().filter_map(|k| labels.and_then(|l| l.get(k)).map(|v| (k.clone(), v.clone()))).collect();
            selector = selector.with_equalities(extra);
        }
        Some(SpreadConstraint {
            term: Arc::new(PodTerm {
                kind: TermKind::Spread,
                selector,
                namespaces: NamespaceSet { names: vec![namespace.to_string()], selector: None },
                topology_key: c.topology_key.clone(),
            }),
            max_skew: i64::from(c.max_skew.max(1)),
            min_domains: i64::from(c.min_domains.unwrap_or(1).max(1)),
            honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
        })
    }
}

/// A pod with its scheduling-relevant facts precomputed. Shared by `Arc` between the
/// snapshot, equivalence groups and plans, so moving a pod around costs a pointer copy.
#[derive(Debug)]
pub struct PodInfo {
    pub pod: Arc<Pod>,
    /// `namespace/name`, the name used in every report.
    pub key: Arc<str>,
    pub requests: Resources,
    pub priority: i32,
    /// Index of the controlling `ownerReference` (the one with `controller: true`).
    controller_index: Option<usize>,
    pub host_ports: Vec<HostPort>,
    pub node_affinity: Option<NodeSelectorMatcher>,
    pub affinity_terms: Vec<Arc<PodTerm>>,
    pub anti_affinity_terms: Vec<Arc<PodTerm>>,
    pub spread_constraints: Vec<SpreadConstraint>,
    /// The PersistentVolumeClaims its volumes use (plain and generic ephemeral), in volume
    /// order; empty for most pods, which then skip the volume filters entirely.
    pub claims: Vec<PodClaim>,
    /// The pod has a deletion timestamp.
    pub terminating: bool,
    pub mirror: bool,
    pub daemonset: bool,
}

impl PodInfo {
    pub fn new(pod: Arc<Pod>) -> PodInfo {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let mut key = String::with_capacity(namespace.len() + 1 + name.len());
        key.push_str(namespace);
        key.push('/');
        key.push_str(name);
        let key: Arc<str> = Arc::from(key);
        let requests = pod_requests(&pod);
        let spec = pod.spec.as_ref();
        let priority = spec.and_then(|s| s.priority).unwrap_or(0);
        let controller_index = pod
            .metadata
            .owner_references
            .as_ref()
            .and_then(|refs| refs.iter().position(|o| o.controller == Some(true)));
        let controller = controller_index.and_then(|i| pod.metadata.owner_references.as_ref().map(|r| &r[i]));
        let mut host_ports = Vec::new();
        for c in spec.into_iter().flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten())) {
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
        let affinity = spec.and_then(|s| s.affinity.as_ref());
        let node_affinity = affinity
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| na.required_during_scheduling_ignored_during_execution.as_ref())
            .map(NodeSelectorMatcher::new);
        let compile_terms = |terms: Option<&Vec<PodAffinityTerm>>| -> Vec<Arc<PodTerm>> {
            terms
                .into_iter()
                .flatten()
                .map(|t| Arc::new(PodTerm::from_affinity_term(t, namespace, pod.metadata.labels.as_ref())))
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
            .and_then(|s| s.topology_spread_constraints.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|c| SpreadConstraint::compile(c, &pod, namespace))
            .collect();
        let claims = pod_claims(&pod, namespace, name);
        let annotations = pod.metadata.annotations.as_ref();
        let mirror = annotations.is_some_and(|a| a.contains_key(MIRROR_POD));
        let daemonset = controller.is_some_and(|c| c.kind == "DaemonSet")
            || annotations.and_then(|a| a.get(DAEMONSET_POD)).is_some_and(|v| v == "true");
        PodInfo {
            terminating: pod.metadata.deletion_timestamp.is_some(),
            pod,
            key,
            requests,
            priority,
            controller_index,
            host_ports,
            node_affinity,
            affinity_terms,
            anti_affinity_terms,
            spread_constraints,
            claims,
            mirror,
            daemonset,
        }
    }

    /// The controlling owner (its `ownerReference` with `controller: true`).
    pub fn controller(&self) -> Option<&OwnerReference> {
        self.controller_index.and_then(|i| self.pod.metadata.owner_references.as_ref().map(|r| &r[i]))
    }

    pub fn namespace(&self) -> &str {
        self.pod.metadata.namespace.as_deref().unwrap_or("default")
    }

    pub fn name(&self) -> &str {
        self.pod.metadata.name.as_deref().unwrap_or("")
    }

    pub fn labels(&self) -> Option<&Labels> {
        self.pod.metadata.labels.as_ref()
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.pod.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
    }

    pub fn node_name(&self) -> Option<&str> {
        self.pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
    }

    pub fn node_selector(&self) -> Option<&Labels> {
        self.pod.spec.as_ref().and_then(|s| s.node_selector.as_ref())
    }

    pub fn tolerations(&self) -> &[Toleration] {
        self.pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or(&[])
    }

    pub fn phase(&self) -> &str {
        self.pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
    }

    /// Succeeded or Failed: the pod no longer holds resources.
    pub fn is_terminal(&self) -> bool {
        matches!(self.phase(), "Succeeded" | "Failed")
    }

    pub fn has_inter_pod_affinity(&self) -> bool {
        !self.affinity_terms.is_empty() || !self.anti_affinity_terms.is_empty()
    }
}
