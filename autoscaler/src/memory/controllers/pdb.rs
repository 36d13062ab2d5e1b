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

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

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

impl MemoryCluster {
    /// Recomputes the PDBs whose pods or replica counts changed.
    pub(in crate::memory) fn sync_pdbs(&mut self) {
        for key in std::mem::take(&mut self.dirty_pdbs) {
            self.sync_pdb(&key);
        }
    }

    /// The `spec.replicas` of the controller scaling a pod, with that controller's uid; None
    /// when the pod has no controller the disruption controller knows.
    fn pod_scale(&self, pod: &Pod, namespace: &str) -> Option<(String, i32)> {
        let owner = controller_of(pod)?;
        let key = ObjectKey::new(namespace, &owner.name);
        match owner.kind.as_str() {
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
        let Some(selector) = self.pdb_selectors.get(key) else { return };
        // A selector requiring some `k=v` only needs the pods carrying that label.
        let candidates: Vec<&Arc<Pod>> = match selector.required_equality() {
            Some((label, value)) => self
                .pods_by_label
                .get(&(key.namespace.clone(), label.to_string(), value.to_string()))
                .into_iter()
                .flatten()
                .filter_map(|k| self.pods.get(k))
                .collect(),
            None => self.pods.in_namespace(&key.namespace).map(|(_, p)| p).collect(),
        };
        let pods: Vec<&Arc<Pod>> =
            candidates.into_iter().filter(|p| selector.matches(p.metadata.labels.as_ref())).collect();
        let current_healthy =
            i32::try_from(pods.iter().filter(|p| is_ready(p) && !is_terminating(p)).count()).unwrap_or(i32::MAX);
        let pod_count = i32::try_from(pods.len()).unwrap_or(i32::MAX);
        let expected_scale = || -> Option<i32> {
            // Controller uid → its scale; each controller is looked up once.
            let mut owners: BTreeMap<&str, i32> = BTreeMap::new();
            let mut scales: BTreeMap<String, i32> = BTreeMap::new();
            for pod in &pods {
                let owner = controller_of(pod)?;
                if owners.contains_key(owner.uid.as_str()) {
                    continue;
                }
                let (uid, replicas) = self.pod_scale(pod, &key.namespace)?;
                owners.insert(owner.uid.as_str(), replicas);
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
