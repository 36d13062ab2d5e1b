//! The disruption controller: keeps every PodDisruptionBudget's status up to date, like
//! kube-controller-manager does.
//!
//! - The PDB selects the pods of its namespace its selector matches (a missing selector
//!   selects none, an empty one all).
//! - `currentHealthy`: selected pods that are Ready and not terminating.
//! - `minAvailable: n` → desired n, expected = the number of selected pods.
//! - `minAvailable: p%` → expected = the summed scale of the pods' controllers, desired =
//!   ceil(p% of it). `maxUnavailable: n | p%` → desired = expected − n (or − ceil(p%)), at
//!   least 0. Controllers: a ReplicaSet owned by a Deployment counts as the Deployment;
//!   ReplicaSets, StatefulSets and ReplicationControllers count with their `spec.replicas`.
//!   A selected pod without such a controller makes the PDB fail safe: `disruptionsAllowed: 0`.
//! - `disruptionsAllowed` = currentHealthy − desired, 0 when negative or nothing is expected.
//! - `observedGeneration` follows `metadata.generation` (the eviction API refuses PDBs whose
//!   status lags their spec), and the `DisruptionAllowed` condition is kept.
//!
//! What a status counts of the pods (`PdbPods`) is kept with each PDB and brought up to date as
//! each pod changes, so a status is recomputed without reading the PDB's pods again: a day's
//! every scale step changed a few pods of PDBs selecting hundreds. Debug builds count again
//! from the pods at every sync and check that both agree.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use simulator::labels::Selector;

use super::super::cluster::MemoryCluster;
use super::super::pods::{controller_of, is_ready, is_terminating};
use super::super::store::ObjectKey;

/// `GetScaledValueFromIntOrPercent(value, total, roundUp=true)`; None for a malformed percent.
fn scaled(value: &IntOrString, total: i32) -> Option<i32> {
    match value {
        IntOrString::Int(n) => Some(*n),
        IntOrString::String(text) => {
            let percent: i64 = text.strip_suffix('%')?.parse().ok()?;
            let total = i64::from(total);
            Some(i32::try_from((percent * total + 99).div_euclid(100)).unwrap_or(i32::MAX))
        }
    }
}

/// A PDB's compiled selector and what its status counts of the pods it selects.
pub(in crate::memory) struct PdbState {
    pub selector: Selector,
    pub pods: PdbPods,
}

/// What a PDB's status counts of the pods it selects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(in crate::memory) struct PdbPods {
    /// Selected pods.
    count: usize,
    /// Of those, Ready and not terminating.
    healthy: usize,
    /// Of those, without a controller: a PDB that counts replicas then fails safe.
    uncontrolled: usize,
    /// Of those, per controller uid: how many, and the controller's kind and name (of the first
    /// pod counted).
    controllers: BTreeMap<String, Controller>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Controller {
    pods: usize,
    kind: String,
    name: String,
}

impl PdbPods {
    /// Whether some pod this PDB selects has this controller (a controller is kept only while
    /// it has pods counted).
    pub(in crate::memory) fn counts_pods_of(&self, controller_uid: &str) -> bool {
        self.controllers.contains_key(controller_uid)
    }

    /// Counts a pod in (`add`) or out (a pod counted in before, in the state it had then).
    pub(in crate::memory) fn count(&mut self, pod: &Pod, add: bool) {
        let step = |n: &mut usize| *n = if add { n.saturating_add(1) } else { n.saturating_sub(1) };
        step(&mut self.count);
        if is_ready(pod) && !is_terminating(pod) {
            step(&mut self.healthy);
        }
        let Some(owner) = controller_of(pod) else {
            step(&mut self.uncontrolled);
            return;
        };
        match self.controllers.get_mut(owner.uid.as_str()) {
            Some(c) => {
                step(&mut c.pods);
                if c.pods == 0 {
                    self.controllers.remove(owner.uid.as_str());
                }
            }
            None if add => {
                let c = Controller { pods: 1, kind: owner.kind.clone(), name: owner.name.clone() };
                self.controllers.insert(owner.uid.clone(), c);
            }
            None => {}
        }
    }
}

impl MemoryCluster {
    /// What a PDB with `selector` in `namespace` counts of the pods, read from the pods.
    pub(in crate::memory) fn pdb_pods(&self, namespace: &str, selector: &Selector) -> PdbPods {
        // A selector requiring some `k=v` only needs the pods carrying that label.
        let candidates: Vec<&Arc<Pod>> = match selector.required_equality() {
            Some((label, value)) => self
                .pods_by_label
                .get(namespace, label, value)
                .into_iter()
                .flatten()
                .filter_map(|(k, _)| self.pods.get(k))
                .collect(),
            None => self.pods.in_namespace(namespace).map(|(_, p)| p).collect(),
        };
        let mut pods = PdbPods::default();
        for pod in candidates.into_iter().filter(|p| selector.matches(p.metadata.labels.as_ref())) {
            pods.count(pod, true);
        }
        pods
    }

    /// A pod changed from `old` to `new` (None: it is new, or gone): the PDBs of its namespace
    /// that select it before or after count it again and look again.
    pub(in crate::memory) fn pdbs_see_pod(&mut self, namespace: &str, old: Option<&Pod>, new: Option<&Pod>) {
        let start = ObjectKey::new(namespace, "");
        let mut touched = Vec::new();
        for (key, state) in self.pdb_states.range_mut(start..).take_while(|(k, _)| k.namespace == namespace) {
            let was = old.filter(|p| state.selector.matches(p.metadata.labels.as_ref()));
            let is = new.filter(|p| state.selector.matches(p.metadata.labels.as_ref()));
            if let Some(pod) = was {
                state.pods.count(pod, false);
            }
            if let Some(pod) = is {
                state.pods.count(pod, true);
            }
            if was.is_some() || is.is_some() {
                touched.push(key.clone());
            }
        }
        self.dirty_pdbs.extend(touched);
    }

    /// Recomputes the PDBs whose pods or replica counts changed.
    pub(in crate::memory) fn sync_pdbs(&mut self) {
        for key in std::mem::take(&mut self.dirty_pdbs) {
            self.sync_pdb(&key);
        }
    }

    /// The `spec.replicas` of a pod's controller (by kind and name), with the uid of what
    /// scales it: a ReplicaSet owned by a Deployment counts as the Deployment. None when the
    /// disruption controller does not know the controller.
    fn controller_scale(&self, kind: &str, name: &str, namespace: &str) -> Option<(String, i32)> {
        let key = ObjectKey::new(namespace, name);
        match kind {
            "ReplicaSet" => {
                let rs = self.replicasets.get(&key)?;
                let deployment = rs
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.controller == Some(true) && o.kind == "Deployment")
                    .and_then(|o| self.deployments.get(&ObjectKey::new(namespace, &o.name)));
                match deployment {
                    Some(d) => Some((d.metadata.uid.clone()?, d.spec.as_ref()?.replicas.unwrap_or(1))),
                    None => Some((rs.metadata.uid.clone()?, rs.spec.as_ref()?.replicas.unwrap_or(1))),
                }
            }
            "StatefulSet" => {
                let ss = self.statefulsets.get(&key)?;
                Some((ss.metadata.uid.clone()?, ss.spec.as_ref()?.replicas.unwrap_or(1)))
            }
            "ReplicationController" => {
                let rc = self.replication_controllers.get(&key)?;
                Some((rc.metadata.uid.clone()?, rc.spec.as_ref()?.replicas.unwrap_or(1)))
            }
            _ => None,
        }
    }

    fn sync_pdb(&mut self, key: &ObjectKey) {
        let Some(pdb) = self.pdbs.get(key).cloned() else { return };
        let Some(spec) = pdb.spec.as_ref() else { return };
        let Some(state) = self.pdb_states.get(key) else { return };
        let pods = &state.pods;
        debug_assert_eq!(
            *pods,
            self.pdb_pods(&key.namespace, &state.selector),
            "PDB {key}: the kept counts differ from its pods"
        );
        let current_healthy = i32::try_from(pods.healthy).unwrap_or(i32::MAX);
        let pod_count = i32::try_from(pods.count).unwrap_or(i32::MAX);
        let expected_scale = || -> Option<i32> {
            if pods.uncontrolled > 0 {
                return None;
            }
            // What scales each controller, counted once (two ReplicaSets of one Deployment).
            let mut scales: BTreeMap<String, i32> = BTreeMap::new();
            for c in pods.controllers.values() {
                let (uid, replicas) = self.controller_scale(&c.kind, &c.name, &key.namespace)?;
                scales.insert(uid, replicas);
            }
            Some(scales.values().sum())
        };
        let computed: Option<(i32, i32)> = match (&spec.min_available, &spec.max_unavailable) {
            (Some(IntOrString::Int(n)), _) => Some((pod_count, *n)),
            (Some(percent), _) => expected_scale().and_then(|e| Some((e, scaled(percent, e)?))),
            (None, Some(max)) => expected_scale().and_then(|e| Some((e, (e - scaled(max, e)?).max(0)))),
            // Neither set: the API defaults minAvailable to 1.
            (None, None) => Some((pod_count, 1)),
        };
        let old = pdb.status.clone().unwrap_or_default();
        let (expected, desired, allowed) = match computed {
            Some((expected, desired)) => {
                let allowed = current_healthy - desired;
                (expected, desired, if expected <= 0 || allowed <= 0 { 0 } else { allowed })
            }
            None => (old.expected_pods, old.desired_healthy, 0),
        };
        let (condition_status, reason) = match (computed.is_some(), allowed > 0) {
            (false, _) => ("False", "SyncFailed"),
            (true, true) => ("True", "SufficientPods"),
            (true, false) => ("False", "InsufficientPods"),
        };
        let old_condition = old.conditions.iter().flatten().find(|c| c.type_ == "DisruptionAllowed");
        let condition = Condition {
            type_: "DisruptionAllowed".to_string(),
            status: condition_status.to_string(),
            reason: reason.to_string(),
            message: String::new(),
            observed_generation: pdb.metadata.generation,
            last_transition_time: match old_condition {
                Some(c) if c.status == condition_status => c.last_transition_time.clone(),
                _ => Time(self.now()),
            },
        };
        let status = PodDisruptionBudgetStatus {
            current_healthy,
            desired_healthy: desired,
            expected_pods: expected,
            disruptions_allowed: allowed,
            observed_generation: pdb.metadata.generation,
            conditions: Some(vec![condition]),
            disrupted_pods: None,
        };
        if pdb.status.as_ref() != Some(&status) {
            let mut pdb: PodDisruptionBudget = (*pdb).clone();
            pdb.status = Some(status);
            self.pdbs.insert(key.clone(), Arc::new(pdb));
        }
    }
}
