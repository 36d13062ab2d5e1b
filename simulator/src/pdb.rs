//! PodDisruptionBudgets as scale-down simulation sees them: a label selector in the PDB's
//! namespace and the number of disruptions still allowed. The budget is consumed as the
//! simulation picks nodes for removal, so a later candidate sees what earlier ones left
//! (upstream's "remaining PDB tracker").

use std::borrow::Borrow;
use std::sync::Arc;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use rustc_hash::FxHashMap;

use crate::labels::Selector;
use crate::pod::PodInfo;

/// A PDB whose selector cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdbError {
    #[error("PodDisruptionBudget {namespace}/{name}: invalid spec.selector: {reason}")]
    InvalidSelector { namespace: String, name: String, reason: String },
}

/// One PDB with its remaining budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackedPdb {
    pub namespace: String,
    pub name: String,
    /// `spec.selector`; a missing selector selects no pod (policy/v1), an empty one selects
    /// every pod of the namespace.
    pub selector: Selector,
    /// `status.disruptionsAllowed` minus the pods the simulation already removed. Can go
    /// negative when a removal is accepted without checking (as upstream allows).
    pub disruptions_allowed: i32,
}

impl TrackedPdb {
    /// Whether this PDB covers the pod: same namespace and the selector matches its labels.
    pub fn selects(&self, pod: &PodInfo) -> bool {
        pod.namespace() == self.namespace && self.selector.matches(pod.labels())
    }
}

/// What evicting a set of pods does to the PDBs that cover them.
#[derive(Clone, Debug)]
pub enum PdbCheck {
    /// Every covering PDB has room for all of its pods at once.
    InParallel,
    /// Every covering PDB allows at least one disruption, but some has fewer than the number of
    /// its pods in the set: the pods can only be evicted one after another. Upstream marks such
    /// nodes "risky" and sorts them last. `pod` is the last pod found over budget.
    Sequential { pod: Arc<PodInfo> },
    /// A covering PDB allows no disruption at all; `pod` is the first pod it covers.
    Blocked { pod: Arc<PodInfo> },
}

/// The remaining disruption budgets of the cluster's PDBs.
#[derive(Clone, Debug, Default)]
pub struct PdbTracker {
    pdbs: Vec<TrackedPdb>,
    /// The positions in `pdbs` of each namespace's PDBs, in order. A PDB only covers pods of
    /// its own namespace, and clusters commonly have one PDB per workload: asking every PDB
    /// about every pod of every candidate node was a tenth of a scale-down simulation with
    /// 370 of them.
    by_namespace: FxHashMap<String, Vec<usize>>,
}

fn selector_problem(pdb: &PodDisruptionBudget) -> Option<String> {
    let selector = pdb.spec.as_ref()?.selector.as_ref()?;
    for e in selector.match_expressions.iter().flatten() {
        let n = e.values.as_ref().map_or(0, Vec::len);
        let ok = match e.operator.as_str() {
            "In" | "NotIn" => n > 0,
            "Exists" | "DoesNotExist" => n == 0,
            _ => false,
        };
        if !ok {
            return Some(format!("key {:?}: operator {:?} with {n} value(s)", e.key, e.operator));
        }
    }
    None
}

fn track(pdb: &PodDisruptionBudget) -> TrackedPdb {
    TrackedPdb {
        namespace: pdb.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
        name: pdb.metadata.name.clone().unwrap_or_default(),
        selector: Selector::from_label_selector(pdb.spec.as_ref().and_then(|s| s.selector.as_ref())),
        disruptions_allowed: pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed),
    }
}

impl PdbTracker {
    /// Tracks the given PDBs. A PDB with an invalid selector selects nothing; use
    /// [`PdbTracker::try_new`] to reject such input instead.
    pub fn new<P: Borrow<PodDisruptionBudget>>(pdbs: &[P]) -> Self {
        let pdbs: Vec<TrackedPdb> = pdbs.iter().map(|p| track(p.borrow())).collect();
        let mut by_namespace: FxHashMap<String, Vec<usize>> = FxHashMap::default();
        for (at, pdb) in pdbs.iter().enumerate() {
            by_namespace.entry(pdb.namespace.clone()).or_default().push(at);
        }
        PdbTracker { pdbs, by_namespace }
    }

    /// Tracks the given PDBs, failing on the first PDB whose selector is invalid (upstream
    /// refuses to run the scale-down simulation with such a PDB).
    pub fn try_new<P: Borrow<PodDisruptionBudget>>(pdbs: &[P]) -> Result<Self, PdbError> {
        for pdb in pdbs.iter().map(Borrow::borrow) {
            if let Some(reason) = selector_problem(pdb) {
                return Err(PdbError::InvalidSelector {
                    namespace: pdb.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
                    name: pdb.metadata.name.clone().unwrap_or_default(),
                    reason,
                });
            }
        }
        Ok(PdbTracker::new(pdbs))
    }

    /// All tracked PDBs with their remaining budgets.
    pub fn pdbs(&self) -> &[TrackedPdb] {
        &self.pdbs
    }

    /// The PDBs that cover this pod, in order.
    pub fn matching<'a>(&'a self, pod: &'a PodInfo) -> impl Iterator<Item = &'a TrackedPdb> + 'a {
        self.covering(pod).map(|at| &self.pdbs[at])
    }

    /// The positions of the PDBs that cover this pod, in order: its namespace's PDBs whose
    /// selector matches (what `TrackedPdb::selects` answers).
    fn covering<'a>(&'a self, pod: &'a PodInfo) -> impl Iterator<Item = usize> + 'a {
        let in_namespace = self.by_namespace.get(pod.namespace()).map_or(&[][..], Vec::as_slice);
        let labels = pod.labels();
        in_namespace.iter().copied().filter(move |&at| self.pdbs[at].selector.matches(labels))
    }

    /// A pod "has a PDB" when any PDB selects it, whatever budget that PDB has left; this is what
    /// the kube-system rule asks.
    pub fn has_pdb(&self, pod: &PodInfo) -> bool {
        self.matching(pod).next().is_some()
    }

    /// Checks evicting all these pods against the remaining budgets (upstream's CanRemovePods).
    pub fn check(&self, pods: &[Arc<PodInfo>]) -> PdbCheck {
        // Each PDB with the pods it covers, PDBs in order and each one's pods in order: the
        // first pod of the first exhausted PDB blocks, the last pod over a budget is reported.
        let mut covered: Vec<(usize, usize)> =
            pods.iter().enumerate().flat_map(|(p, pod)| self.covering(pod).map(move |at| (at, p))).collect();
        covered.sort_unstable();
        let mut sequential = None;
        let mut count = 0i32;
        let mut counting = None;
        for (at, p) in covered {
            if counting != Some(at) {
                counting = Some(at);
                count = 0;
            }
            count = count.saturating_add(1);
            let pdb = &self.pdbs[at];
            if pdb.disruptions_allowed < 1 {
                return PdbCheck::Blocked { pod: pods[p].clone() };
            }
            if pdb.disruptions_allowed < count {
                sequential = Some(pods[p].clone());
            }
        }
        match sequential {
            Some(pod) => PdbCheck::Sequential { pod },
            None => PdbCheck::InParallel,
        }
    }

    /// Whether these pods can be evicted at all: `Err` with the first pod covered by a PDB that
    /// allows no disruption. Pods that can only go one at a time still pass (see
    /// [`PdbTracker::can_remove_in_parallel`]).
    pub fn can_remove_pods(&self, pods: &[Arc<PodInfo>]) -> Result<(), Arc<PodInfo>> {
        match self.check(pods) {
            PdbCheck::Blocked { pod } => Err(pod),
            PdbCheck::InParallel | PdbCheck::Sequential { .. } => Ok(()),
        }
    }

    /// Whether all these pods can be evicted at the same time without exceeding any budget.
    pub fn can_remove_in_parallel(&self, pods: &[Arc<PodInfo>]) -> bool {
        matches!(self.check(pods), PdbCheck::InParallel)
    }

    /// Consumes one disruption of every covering PDB per removed pod.
    pub fn remove_pods(&mut self, pods: &[Arc<PodInfo>]) {
        let covered: Vec<usize> = pods.iter().flat_map(|pod| self.covering(pod)).collect();
        for at in covered {
            let pdb = &mut self.pdbs[at];
            pdb.disruptions_allowed = pdb.disruptions_allowed.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{pod, with_labels, with_namespace};
    use serde_json::json;

    fn pdb(namespace: &str, name: &str, selector: serde_json::Value, allowed: i32) -> PodDisruptionBudget {
        let mut spec = json!({});
        if !selector.is_null() {
            spec["selector"] = selector;
        }
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
            "status": {"disruptionsAllowed": allowed, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
        }))
        .unwrap()
    }

    fn web(name: &str) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(&with_labels(pod(name, "100m", "100Mi"), &[("app", "web")])))
    }

    #[test]
    fn pdb_matches_only_its_namespace_and_selector() {
        let t = PdbTracker::new(&[pdb("default", "web", json!({"matchLabels": {"app": "web"}}), 1)]);
        assert!(t.has_pdb(&web("a")));
        let other_ns = PodInfo::new(&with_namespace(with_labels(pod("b", "1", "1"), &[("app", "web")]), "x"));
        assert!(!t.has_pdb(&other_ns));
        let other_label = PodInfo::new(&with_labels(pod("c", "1", "1"), &[("app", "db")]));
        assert!(!t.has_pdb(&other_label));
    }

    #[test]
    fn empty_selector_matches_whole_namespace_and_missing_selector_matches_nothing() {
        let everything = PdbTracker::new(&[pdb("default", "all", json!({}), 1)]);
        let missing = PdbTracker::new(&[pdb("default", "none", serde_json::Value::Null, 1)]);
        let p = PodInfo::new(&pod("a", "1", "1"));
        assert!(everything.has_pdb(&p));
        assert!(!missing.has_pdb(&p));
    }

    #[test]
    fn can_remove_pods_blocks_only_on_exhausted_budget_and_reports_sequential_eviction() {
        let pods = vec![web("a"), web("b")];
        let one = PdbTracker::new(&[pdb("default", "web", json!({"matchLabels": {"app": "web"}}), 1)]);
        assert!(one.can_remove_pods(&pods).is_ok());
        assert!(!one.can_remove_in_parallel(&pods));
        assert!(matches!(one.check(&pods), PdbCheck::Sequential { pod } if pod.name() == "b"));
        let two = PdbTracker::new(&[pdb("default", "web", json!({"matchLabels": {"app": "web"}}), 2)]);
        assert!(two.can_remove_in_parallel(&pods));
        let zero = PdbTracker::new(&[pdb("default", "web", json!({"matchLabels": {"app": "web"}}), 0)]);
        assert_eq!(zero.can_remove_pods(&pods).unwrap_err().name(), "a");
    }

    #[test]
    fn remove_pods_consumes_budget() {
        let mut t = PdbTracker::new(&[pdb("default", "web", json!({"matchLabels": {"app": "web"}}), 2)]);
        t.remove_pods(&[web("a")]);
        assert_eq!(t.pdbs()[0].disruptions_allowed, 1);
        t.remove_pods(&[web("b"), web("c")]);
        assert_eq!(t.pdbs()[0].disruptions_allowed, -1);
        assert!(t.can_remove_pods(&[web("d")]).is_err());
    }

    /// The answers of every PDB asked about every pod, in order (what the tracker answered
    /// before it kept its PDBs by namespace).
    fn naive_check(t: &PdbTracker, pods: &[Arc<PodInfo>]) -> PdbCheck {
        let mut sequential = None;
        for pdb in t.pdbs() {
            let mut count = 0;
            for pod in pods.iter().filter(|p| pdb.selects(p)) {
                count += 1;
                if pdb.disruptions_allowed < 1 {
                    return PdbCheck::Blocked { pod: pod.clone() };
                }
                if pdb.disruptions_allowed < count {
                    sequential = Some(pod.clone());
                }
            }
        }
        sequential.map_or(PdbCheck::InParallel, |pod| PdbCheck::Sequential { pod })
    }

    fn same_check(a: &PdbCheck, b: &PdbCheck) -> bool {
        match (a, b) {
            (PdbCheck::InParallel, PdbCheck::InParallel) => true,
            (PdbCheck::Sequential { pod: x }, PdbCheck::Sequential { pod: y })
            | (PdbCheck::Blocked { pod: x }, PdbCheck::Blocked { pod: y }) => Arc::ptr_eq(x, y),
            _ => false,
        }
    }

    proptest::proptest! {
        /// Kept by namespace, the tracker answers as asking every PDB would: the same covering
        /// PDBs in the same order, the same verdict naming the same pod, the same budgets left.
        #[test]
        fn pdbs_kept_by_namespace_answer_as_every_pdb_asked(
            pdbs in proptest::collection::vec((0u8..3, 0u8..4, -1i32..3), 0..12),
            pods in proptest::collection::vec((0u8..3, 0u8..4), 0..12),
        ) {
            let namespaces = ["default", "shop", "kube-system"];
            let selector = |app: u8| if app == 3 { json!({}) } else { json!({"matchLabels": {"app": format!("a{app}")}}) };
            let pdbs: Vec<PodDisruptionBudget> = pdbs
                .iter()
                .enumerate()
                .map(|(i, (ns, app, allowed))| pdb(namespaces[usize::from(*ns)], &format!("p{i}"), selector(*app), *allowed))
                .collect();
            let pods: Vec<Arc<PodInfo>> = pods
                .iter()
                .enumerate()
                .map(|(i, (ns, app))| {
                    let labelled = with_labels(pod(&format!("pod{i}"), "1", "1"), &[("app", &format!("a{app}"))]);
                    Arc::new(PodInfo::new(&with_namespace(labelled, namespaces[usize::from(*ns)])))
                })
                .collect();
            let mut tracker = PdbTracker::new(&pdbs);
            for pod in &pods {
                let naive: Vec<&str> = tracker.pdbs().iter().filter(|p| p.selects(pod)).map(|p| p.name.as_str()).collect();
                let indexed: Vec<&str> = tracker.matching(pod).map(|p| p.name.as_str()).collect();
                proptest::prop_assert_eq!(indexed, naive);
            }
            for end in 0..=pods.len() {
                let (indexed, naive) = (tracker.check(&pods[..end]), naive_check(&tracker, &pods[..end]));
                proptest::prop_assert!(same_check(&indexed, &naive), "{indexed:?} against {naive:?}");
            }
            let mut expected: Vec<i32> = tracker.pdbs().iter().map(|p| p.disruptions_allowed).collect();
            for (budget, pdb) in expected.iter_mut().zip(tracker.pdbs()) {
                *budget -= i32::try_from(pods.iter().filter(|p| pdb.selects(p)).count()).unwrap();
            }
            tracker.remove_pods(&pods);
            proptest::prop_assert_eq!(tracker.pdbs().iter().map(|p| p.disruptions_allowed).collect::<Vec<_>>(), expected);
        }
    }

    #[test]
    fn invalid_selector_is_rejected_by_try_new_and_selects_nothing_in_new() {
        let bad =
            pdb("default", "bad", json!({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}), 1);
        let err = PdbTracker::try_new(std::slice::from_ref(&bad)).unwrap_err();
        assert!(err.to_string().contains("default/bad"), "{err}");
        assert!(!PdbTracker::new(&[bad]).has_pdb(&web("a")));
    }
}
