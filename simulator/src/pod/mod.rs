//! `PodInfo`: a pod reduced to what the autoscaler reads, converted once per version of the
//! pod. It is the only form in which observed pods are kept (the controller's watch, `plan`'s
//! dumps, the memory cluster's view): about half a kilobyte of its own, with the compiled spec
//! (`PodShape`), labels and owners shared between the replicas of a workload (`PodInterner`).
//!
//! What is kept: identity (namespace, name, uid), labels, the annotations the autoscaler reads
//! (its own `*cluster-autoscaler*` keys and the kubelet's `kubernetes.io/config.*`), owner
//! references, creation and deletion times, the node it is bound to, the spec (shared), and of
//! the status the phase, the `Ready` and `PodScheduled` conditions (without their messages), the
//! start time and the nominated node. `to_pod` gives the Kubernetes object back with those.

mod intern;
mod shape;
mod spec_hash;

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, Pod, PodCondition, PodSpec, PodStatus, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;

pub use self::intern::PodInterner;
pub use self::shape::{HostPort, NamespaceSet, PodShape, PodTerm, SpreadConstraint, TermKind};
use crate::labels::Labels;
use crate::resources::Resources;
use crate::volumes::{PodClaim, pod_claims};
use crate::well_known::{DAEMONSET_POD, MIRROR_POD};

/// Whether the autoscaler reads this pod annotation: its own keys (`safe-to-evict`,
/// `daemonset-pod`, `pod-scale-up-delay`, `enable-ds-eviction`, ...) and the kubelet's static-pod
/// keys. Other annotations (a CNI's per-pod addresses, tracing ids) are dropped: they would
/// make every pod's set distinct.
pub fn read_annotation(key: &str) -> bool {
    key.contains("cluster-autoscaler") || key.starts_with("kubernetes.io/config.")
}

/// A pod condition as decisions read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// `True`, `False` or `Unknown`.
    pub status: Arc<str>,
    pub reason: Option<Arc<str>>,
    last_transition_time: PackedTime,
}

impl Condition {
    pub fn is_true(&self) -> bool {
        &*self.status == "True"
    }

    pub fn last_transition_time(&self) -> Option<Timestamp> {
        self.last_transition_time.get()
    }
}

/// An optional time in 8 bytes rather than `Option<Timestamp>`'s 24: nanoseconds since the
/// epoch, `i64::MIN` for none. Kept five times per pod. Times beyond 1678–2262 (which no API
/// server writes) are held at the nearest end of that range: as far in the past or the future
/// for every comparison the autoscaler makes.
#[derive(Clone, Copy, PartialEq, Eq)]
struct PackedTime(i64);

impl PackedTime {
    const NONE: PackedTime = PackedTime(i64::MIN);

    fn new(time: Option<Timestamp>) -> PackedTime {
        match time {
            None => PackedTime::NONE,
            Some(t) => PackedTime(t.as_nanosecond().clamp(i128::from(i64::MIN) + 1, i128::from(i64::MAX)) as i64),
        }
    }

    fn get(self) -> Option<Timestamp> {
        (self != PackedTime::NONE).then(|| Timestamp::from_nanosecond(i128::from(self.0)).unwrap_or(Timestamp::MAX))
    }
}

impl Default for PackedTime {
    fn default() -> Self {
        PackedTime::NONE
    }
}

impl std::fmt::Debug for PackedTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// A uid: a canonical UUID (what the API server assigns) in 16 bytes, anything else as text.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Uid {
    Uuid([u8; 16]),
    Text(Box<str>),
}

impl Uid {
    fn new(text: String) -> Uid {
        Uid::parse_uuid(&text).map_or_else(|| Uid::Text(text.into_boxed_str()), Uid::Uuid)
    }

    /// The 16 bytes of `8-4-4-4-12` lowercase hex digits (only that form, so that the text
    /// given back is the same).
    fn parse_uuid(text: &str) -> Option<[u8; 16]> {
        let bytes = text.as_bytes();
        if bytes.len() != 36 || [8, 13, 18, 23].iter().any(|&i| bytes[i] != b'-') {
            return None;
        }
        let digit = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        let mut digits = bytes.iter().filter(|&&b| b != b'-').map(|&b| digit(b));
        let mut out = [0u8; 16];
        for byte in &mut out {
            *byte = (digits.next()?? << 4) | digits.next()??;
        }
        Some(out)
    }

    fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Uid::Text(text) => std::borrow::Cow::Borrowed(text),
            Uid::Uuid(bytes) => {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                let parts = [&hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]];
                std::borrow::Cow::Owned(parts.join("-"))
            }
        }
    }
}

/// The parts of a pod's status decisions read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodState {
    pub phase: Option<Arc<str>>,
    /// The `Ready` condition.
    pub ready: Option<Condition>,
    /// The `PodScheduled` condition.
    pub scheduled: Option<Condition>,
    start_time: PackedTime,
    pub nominated_node_name: Option<Arc<str>>,
}

/// A pod with its scheduling-relevant facts precomputed. Shared by `Arc` between the views,
/// the snapshot, equivalence groups and plans, so moving a pod around costs a pointer copy.
#[derive(Clone, Debug)]
pub struct PodInfo {
    /// `namespace/name`, the name used in every report.
    pub key: Arc<str>,
    /// Where the name starts in `key`.
    name_start: u32,
    uid: Option<Uid>,
    labels: Option<Arc<Labels>>,
    /// Only the annotations the autoscaler reads ([`read_annotation`]).
    annotations: Option<Arc<Labels>>,
    owners: Option<Arc<[OwnerReference]>>,
    /// Index of the controlling `ownerReference` (the one with `controller: true`).
    controller_index: Option<u16>,
    created: PackedTime,
    deletion_timestamp: PackedTime,
    node_name: Option<Arc<str>>,
    /// The node a DaemonSet pod is pinned to ([`node_pin`]); the rest of its required
    /// node affinity is in the shape.
    pinned_node: Option<Arc<str>>,
    pub state: PodState,
    /// The compiled spec, shared with every pod of the same spec.
    pub shape: Arc<PodShape>,
    /// The shape's priority, copied: every sort by priority reads it.
    pub priority: i32,
    /// The PersistentVolumeClaims its volumes use (plain and generic ephemeral), in volume
    /// order; empty for most pods, which then skip the volume filters entirely.
    pub claims: Vec<PodClaim>,
    /// The pod has a deletion timestamp.
    pub terminating: bool,
    pub mirror: bool,
    pub daemonset: bool,
}

impl PodInfo {
    /// Converts a pod on its own (tests, one-off pods). Pods of a watch or a dump go through
    /// [`PodInfo::interned`], which shares their common parts.
    pub fn new(pod: &Pod) -> PodInfo {
        PodInfo::interned_from(pod, &mut PodInterner::new())
    }

    /// Converts `pod`, sharing its spec, labels, owners and short strings through `interner`.
    pub fn interned(pod: Pod, interner: &mut PodInterner) -> PodInfo {
        let Pod { metadata, spec, status } = pod;
        PodInfo::from_parts(&metadata, spec.map(Cow::Owned), status.as_ref(), interner)
    }

    /// [`PodInfo::interned`] of a pod the caller keeps (the memory cluster stores its pods
    /// whole): only what the interner has not seen is copied, and the spec not even then unless
    /// it names its node or is pinned to one (those are taken out of the shape).
    pub fn interned_from(pod: &Pod, interner: &mut PodInterner) -> PodInfo {
        PodInfo::from_parts(&pod.metadata, pod.spec.as_ref().map(Cow::Borrowed), pod.status.as_ref(), interner)
    }

    fn from_parts(
        metadata: &ObjectMeta,
        spec: Option<Cow<'_, PodSpec>>,
        status: Option<&PodStatus>,
        interner: &mut PodInterner,
    ) -> PodInfo {
        let namespace = metadata.namespace.as_deref().unwrap_or("default");
        let name = metadata.name.as_deref().unwrap_or_default();
        let key: Arc<str> = Arc::from(format!("{namespace}/{name}"));
        // A namespace is at most 63 characters (a DNS label); a longer one (hostile input) is
        // still a valid key, its name found after the first `/` instead.
        let name_start = u32::try_from(namespace.len() + 1).unwrap_or(u32::MAX);
        let namespace_shared = interner.string(namespace);
        let labels = metadata.labels.as_ref().map(|l| interner.labels(l));
        let annotations: Option<Labels> = metadata
            .annotations
            .as_ref()
            .map(|a| a.iter().filter(|(k, _)| read_annotation(k)).map(|(k, v)| (k.clone(), v.clone())).collect());
        let annotations = annotations.filter(|a| !a.is_empty()).map(|a| interner.labels(&a));
        let owners = metadata.owner_references.as_deref().filter(|o| !o.is_empty()).map(|o| interner.owners(o));
        let controller_index = owners
            .as_ref()
            .and_then(|o| o.iter().position(|o| o.controller == Some(true)))
            .and_then(|i| u16::try_from(i).ok());
        let mut spec = spec.unwrap_or_default();
        let node_name = spec.node_name.as_deref().filter(|n| !n.is_empty()).map(|n| interner.string(n));
        if spec.node_name.is_some() {
            spec.to_mut().node_name = None;
        }
        let pinned_node = node_pin(&spec).map(|n| interner.string(n));
        if pinned_node.is_some() {
            remove_node_pin(spec.to_mut());
        }
        let claims = pod_claims(&spec, namespace, name);
        let shape = interner.shape(&spec, &namespace_shared, labels.as_ref());
        let state = status.map(|s| PodState::interned(s, interner)).unwrap_or_default();
        let mirror = annotations.as_ref().is_some_and(|a| a.contains_key(MIRROR_POD));
        let controller = controller_index.and_then(|i| owners.as_ref().map(|o| &o[usize::from(i)]));
        let daemonset = controller.is_some_and(|c| c.kind == "DaemonSet")
            || annotations.as_ref().and_then(|a| a.get(DAEMONSET_POD)).is_some_and(|v| v == "true");
        PodInfo {
            key,
            name_start,
            uid: metadata.uid.clone().map(Uid::new),
            labels,
            annotations,
            owners,
            controller_index,
            created: PackedTime::new(metadata.creation_timestamp.as_ref().map(|t| t.0)),
            terminating: metadata.deletion_timestamp.is_some(),
            deletion_timestamp: PackedTime::new(metadata.deletion_timestamp.as_ref().map(|t| t.0)),
            node_name,
            pinned_node,
            state,
            priority: shape.priority,
            shape,
            claims,
            mirror,
            daemonset,
        }
    }

    /// A copy of this pod named `name` (its uid `<name>-uid`) on `node`: the pods of a node
    /// copied onto a template or a node group's new node.
    pub fn renamed(&self, name: &str, node: &str) -> PodInfo {
        let namespace = self.namespace();
        PodInfo {
            key: Arc::from(format!("{namespace}/{name}")),
            name_start: self.name_start,
            uid: Some(Uid::Text(format!("{name}-uid").into_boxed_str())),
            node_name: Some(Arc::from(node)),
            claims: pod_claims(&self.shape.spec, namespace, name),
            ..self.clone()
        }
    }

    /// This pod after a change of its binding or status only (spec, labels and owners as they
    /// were): the memory cluster's scheduler and kubelets make such changes at every step.
    pub fn restated(&self, node_name: Option<&str>, status: Option<&PodStatus>, interner: &mut PodInterner) -> PodInfo {
        PodInfo {
            node_name: node_name.filter(|n| !n.is_empty()).map(|n| interner.string(n)),
            state: status.map(|s| PodState::interned(s, interner)).unwrap_or_default(),
            ..self.clone()
        }
    }

    /// The pod as a Kubernetes object, with what this form keeps (see the module comment):
    /// for callers that hand pods on (the gRPC expander, pricing).
    pub fn to_pod(&self) -> Pod {
        let condition = |type_: &str, c: &Condition| PodCondition {
            type_: type_.to_string(),
            status: c.status.to_string(),
            reason: c.reason.as_deref().map(str::to_string),
            last_transition_time: c.last_transition_time().map(Time),
            ..Default::default()
        };
        let conditions: Vec<PodCondition> = [("Ready", &self.state.ready), ("PodScheduled", &self.state.scheduled)]
            .into_iter()
            .filter_map(|(t, c)| c.as_ref().map(|c| condition(t, c)))
            .collect();
        let mut spec: PodSpec = self.shape.spec.clone();
        spec.node_name = self.node_name.as_deref().map(str::to_string);
        if let Some(node) = self.pinned_node() {
            restore_node_pin(&mut spec, node);
        }
        Pod {
            metadata: ObjectMeta {
                namespace: Some(self.namespace().to_string()),
                name: Some(self.name().to_string()),
                uid: self.uid.as_ref().map(|u| u.text().into_owned()),
                labels: self.labels().cloned(),
                annotations: self.annotations.as_deref().cloned(),
                owner_references: self.owners.as_deref().map(<[OwnerReference]>::to_vec),
                creation_timestamp: self.created().map(Time),
                deletion_timestamp: self.deletion_timestamp().map(Time),
                ..Default::default()
            },
            spec: Some(spec),
            status: Some(PodStatus {
                phase: self.state.phase.as_deref().map(str::to_string),
                conditions: (!conditions.is_empty()).then_some(conditions),
                start_time: self.state.start_time().map(Time),
                nominated_node_name: self.state.nominated_node_name.as_deref().map(str::to_string),
                ..Default::default()
            }),
        }
    }

    /// The controlling owner (its `ownerReference` with `controller: true`).
    pub fn controller(&self) -> Option<&OwnerReference> {
        self.controller_index.map(|i| &self.owners()[usize::from(i)])
    }

    /// The requests the scheduler counts (the shape's).
    pub fn requests(&self) -> &Resources {
        &self.shape.requests
    }

    pub fn created(&self) -> Option<Timestamp> {
        self.created.get()
    }

    pub fn deletion_timestamp(&self) -> Option<Timestamp> {
        self.deletion_timestamp.get()
    }

    pub fn owners(&self) -> &[OwnerReference] {
        self.owners.as_deref().unwrap_or(&[])
    }

    pub fn namespace(&self) -> &str {
        self.key.split_at(self.name_start()).0.strip_suffix('/').unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.key.split_at(self.name_start()).1
    }

    fn name_start(&self) -> usize {
        match usize::try_from(self.name_start) {
            Ok(at) if at <= self.key.len() && self.key.is_char_boundary(at) => at,
            _ => self.key.find('/').map_or(0, |i| i + 1),
        }
    }

    /// The uid, as the API server wrote it.
    pub fn uid(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.uid.as_ref().map(Uid::text)
    }

    pub fn labels(&self) -> Option<&Labels> {
        self.labels.as_deref()
    }

    /// The labels as shared with the other pods of the same set (compare with `Arc::ptr_eq`).
    pub fn shared_labels(&self) -> Option<&Arc<Labels>> {
        self.labels.as_ref()
    }

    /// An annotation the autoscaler reads ([`read_annotation`]); others are not kept.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
    }

    pub fn spec(&self) -> &PodSpec {
        &self.shape.spec
    }

    pub fn node_name(&self) -> Option<&str> {
        self.node_name.as_deref()
    }

    /// The node a DaemonSet pod is pinned to by its required node affinity (`matchFields:
    /// metadata.name In [node]`), which the shape's node affinity does not hold.
    pub fn pinned_node(&self) -> Option<&str> {
        self.pinned_node.as_deref()
    }

    /// Whether the pod has a required node affinity (its shape's or a pin to a node).
    pub fn has_required_node_affinity(&self) -> bool {
        self.shape.node_affinity.is_some() || self.pinned_node.is_some()
    }

    pub fn node_selector(&self) -> Option<&Labels> {
        self.shape.spec.node_selector.as_ref()
    }

    pub fn tolerations(&self) -> &[Toleration] {
        self.shape.spec.tolerations.as_deref().unwrap_or(&[])
    }

    /// `spec.schedulerName` (the API server defaults it to `default-scheduler`).
    pub fn scheduler_name(&self) -> Option<&str> {
        self.shape.spec.scheduler_name.as_deref()
    }

    pub fn phase(&self) -> &str {
        self.state.phase.as_deref().unwrap_or("")
    }

    /// Succeeded or Failed: the pod no longer holds resources.
    pub fn is_terminal(&self) -> bool {
        matches!(self.phase(), "Succeeded" | "Failed")
    }

    pub fn is_ready(&self) -> bool {
        self.state.ready.as_ref().is_some_and(Condition::is_true)
    }

    pub fn has_inter_pod_affinity(&self) -> bool {
        !self.shape.affinity_terms.is_empty() || !self.shape.anti_affinity_terms.is_empty()
    }
}

/// The DaemonSet controller pins each of its pods to its node: every term of the required node
/// affinity gets `matchFields: [metadata.name In [<node>]]` (one term with only that when the
/// template has none). So every pod of a DaemonSet has a spec of its own. The pin is taken out
/// here (and held by the pod) when every term has exactly that field requirement with the same
/// node, so that the pods of a DaemonSet share one shape; a term left without requirements was
/// the controller's alone, and the affinity goes when all are. What remains means the same:
/// (the other terms, ORed) AND the node's name.
fn node_pin(spec: &PodSpec) -> Option<&str> {
    let required =
        spec.affinity.as_ref()?.node_affinity.as_ref()?.required_during_scheduling_ignored_during_execution.as_ref()?;
    fn pin_of(term: &NodeSelectorTerm) -> Option<&str> {
        match term.match_fields.as_deref() {
            Some([field]) if field.key == "metadata.name" && field.operator == "In" => match field.values.as_deref() {
                Some([node]) => Some(node.as_str()),
                _ => None,
            },
            _ => None,
        }
    }
    let first = pin_of(required.node_selector_terms.first()?)?;
    required.node_selector_terms.iter().all(|t| pin_of(t) == Some(first)).then_some(first)
}

/// Takes out the pin [`node_pin`] found.
fn remove_node_pin(spec: &mut PodSpec) {
    let Some(node_affinity) = spec.affinity.as_mut().and_then(|a| a.node_affinity.as_mut()) else { return };
    let Some(required) = node_affinity.required_during_scheduling_ignored_during_execution.as_mut() else { return };
    for term in &mut required.node_selector_terms {
        term.match_fields = None;
    }
    if required.node_selector_terms.iter().all(|t| t.match_expressions.as_ref().is_none_or(Vec::is_empty)) {
        node_affinity.required_during_scheduling_ignored_during_execution = None;
    }
}

/// Puts back what [`remove_node_pin`] took out.
fn restore_node_pin(spec: &mut PodSpec, node: &str) {
    let pin = NodeSelectorRequirement {
        key: "metadata.name".to_string(),
        operator: "In".to_string(),
        values: Some(vec![node.to_string()]),
    };
    let required = spec
        .affinity
        .get_or_insert_with(Default::default)
        .node_affinity
        .get_or_insert_with(Default::default)
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(Default::default);
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_fields = Some(vec![pin.clone()]);
    }
}

impl From<Pod> for PodInfo {
    fn from(pod: Pod) -> PodInfo {
        PodInfo::interned(pod, &mut PodInterner::new())
    }
}

impl PodState {
    pub fn start_time(&self) -> Option<Timestamp> {
        self.start_time.get()
    }

    fn interned(status: &PodStatus, interner: &mut PodInterner) -> PodState {
        let mut state = PodState {
            phase: status.phase.as_deref().map(|p| interner.string(p)),
            start_time: PackedTime::new(status.start_time.as_ref().map(|t| t.0)),
            nominated_node_name: status
                .nominated_node_name
                .as_deref()
                .filter(|n| !n.is_empty())
                .map(|n| interner.string(n)),
            ..Default::default()
        };
        for c in status.conditions.iter().flatten() {
            let slot = match c.type_.as_str() {
                "Ready" => &mut state.ready,
                "PodScheduled" => &mut state.scheduled,
                _ => continue,
            };
            // The first of a type counts, as a lookup by type finds it.
            if slot.is_none() {
                *slot = Some(Condition {
                    status: interner.string(&c.status),
                    reason: c.reason.as_deref().map(|r| interner.string(r)),
                    last_transition_time: PackedTime::new(c.last_transition_time.as_ref().map(|t| t.0)),
                });
            }
        }
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;

    #[test]
    fn a_pod_round_trips_through_its_compact_form() {
        let mut p: Pod = pod("web-1", "500m", "1Gi");
        p.metadata.namespace = Some("shop".into());
        p.metadata.annotations = Some(
            [
                ("cluster-autoscaler.kubernetes.io/safe-to-evict".to_string(), "true".to_string()),
                ("cni.example.com/ip".to_string(), "10.0.0.7".to_string()),
            ]
            .into(),
        );
        p.spec.as_mut().unwrap().node_name = Some("n1".into());
        let info = PodInfo::new(&p);
        assert_eq!((info.namespace(), info.name(), &*info.key), ("shop", "web-1", "shop/web-1"));
        assert_eq!(info.node_name(), Some("n1"));
        assert_eq!(info.spec().node_name, None, "the shared spec holds no node");
        assert_eq!(info.annotation("cluster-autoscaler.kubernetes.io/safe-to-evict"), Some("true"));
        assert_eq!(info.annotation("cni.example.com/ip"), None, "annotations nothing reads are dropped");
        let back = info.to_pod();
        assert_eq!(back.spec.as_ref().unwrap().node_name.as_deref(), Some("n1"));
        assert_eq!(PodInfo::new(&back).requests(), info.requests());
        assert_eq!(PodInfo::new(&back).to_pod(), back, "a second round changes nothing");
    }

    #[test]
    fn uids_and_times_are_given_back_as_written() {
        let mut p: Pod = pod("a", "1", "1Gi");
        for uid in ["0b6f1c2e-9d3a-4c5b-8e7f-1a2b3c4d5e6f", "0B6F1C2E-9D3A-4C5B-8E7F-1A2B3C4D5E6F", "not-a-uuid", ""] {
            p.metadata.uid = Some(uid.to_string());
            assert_eq!(PodInfo::new(&p).uid().as_deref(), Some(uid));
        }
        for time in ["2026-11-28T10:00:00Z", "2026-11-28T10:00:00.5Z", "1970-01-01T00:00:00Z"] {
            let t: Timestamp = time.parse().unwrap();
            p.metadata.creation_timestamp = Some(Time(t));
            assert_eq!(PodInfo::new(&p).created(), Some(t));
        }
        let far: Timestamp = "9000-01-01T00:00:00Z".parse().unwrap();
        p.metadata.creation_timestamp = Some(Time(far));
        let now: Timestamp = "2026-11-28T10:00:00Z".parse().unwrap();
        assert!(PodInfo::new(&p).created().is_some_and(|t| t > now), "a time beyond 2262 stays in the future");
        p.metadata.creation_timestamp = None;
        assert_eq!(PodInfo::new(&p).created(), None);
    }

    #[test]
    fn daemonset_pods_pinned_to_their_nodes_share_one_shape() {
        let mut interner = PodInterner::new();
        let pinned = |node: &str, expressions: serde_json::Value| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("ds-{node}"), "namespace": "kube-system"},
                "spec": {"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": expressions,
                        "matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}},
            }))
            .unwrap()
        };
        let none = serde_json::json!([]);
        let (a, b) = (
            PodInfo::interned(pinned("n1", none.clone()), &mut interner),
            PodInfo::interned(pinned("n2", none), &mut interner),
        );
        assert!(Arc::ptr_eq(&a.shape, &b.shape));
        assert_eq!((a.pinned_node(), b.pinned_node()), (Some("n1"), Some("n2")));
        assert!(a.shape.node_affinity.is_none() && a.has_required_node_affinity());
        let back = a.to_pod();
        assert_eq!(PodInfo::new(&back).pinned_node(), Some("n1"), "to_pod puts the pin back");
        let zone = serde_json::json!([{"key": "zone", "operator": "In", "values": ["a"]}]);
        let c = PodInfo::interned(pinned("n3", zone), &mut interner);
        assert_eq!(c.pinned_node(), Some("n3"));
        assert!(c.shape.node_affinity.is_some(), "the DaemonSet's own affinity stays in the shape");
    }

    #[test]
    fn replicas_share_their_spec_and_labels() {
        let mut interner = PodInterner::new();
        let mut a: Pod = pod("a", "1", "1Gi");
        a.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
        let mut b = a.clone();
        b.metadata.name = Some("b".into());
        b.spec.as_mut().unwrap().node_name = Some("n2".into());
        let (a, b) = (PodInfo::interned(a, &mut interner), PodInfo::interned(b, &mut interner));
        assert!(Arc::ptr_eq(&a.shape, &b.shape));
        assert!(Arc::ptr_eq(a.shared_labels().unwrap(), b.shared_labels().unwrap()));
        let renamed = a.renamed("a-copy", "template-1");
        assert_eq!(
            (renamed.name(), renamed.uid().as_deref(), renamed.node_name()),
            ("a-copy", Some("a-copy-uid"), Some("template-1"))
        );
    }
}
