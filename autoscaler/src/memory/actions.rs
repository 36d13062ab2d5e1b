//! What the autoscaler does to the cluster, as the API server would answer it: evictions
//! checked against PodDisruptionBudgets, the `scale` subresource, the status ConfigMap, Events.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use simulator::labels::Selector;

use super::cluster::{MemoryCluster, Workload};
use super::pods::{is_ready, is_terminating, phase};
use super::store::ObjectKey;
use crate::ports::{EvictionError, PortError, Scale, ScaleTarget};
use simulator::labels::format_label_selector;

/// The annotation on the status ConfigMap holding the time of the last write.
pub const LAST_UPDATED_ANNOTATION: &str = "cluster-autoscaler.kubernetes.io/last-updated";

impl MemoryCluster {
    /// The `policy/v1` Eviction subresource:
    /// - a missing pod → `NotFound`;
    /// - pods that are Pending, finished or already terminating are deleted without asking any
    ///   PDB (the API server's `canIgnorePDB`);
    /// - more than one PDB selecting the pod → `Failed` (the API server's 500);
    /// - a pod that is not Ready may go without using the budget when the PDB's policy is
    ///   `AlwaysAllow`, or (default `IfHealthyBudget`) when the budget is healthy
    ///   (`currentHealthy >= desiredHealthy > 0`);
    /// - otherwise the PDB must have processed its latest spec and allow a disruption, else
    ///   `BlockedByPdb` (the API server's 429); the eviction uses one disruption of it.
    ///
    /// The pod is then deleted with `grace_period_seconds`: it terminates and goes when the
    /// grace period is over on the virtual clock (at once if it is not bound to a node).
    pub fn evict(&mut self, namespace: &str, name: &str, grace_period_seconds: i64) -> Result<(), EvictionError> {
        let key = ObjectKey::new(namespace, name);
        let pod_name = key.to_string();
        let Some(pod) = self.pods.get(&key).cloned() else { return Err(EvictionError::NotFound(pod_name)) };
        let grace = Duration::from_secs(u64::try_from(grace_period_seconds).unwrap_or(0));
        let ignores_pdbs = matches!(phase(&pod), "Pending" | "Succeeded" | "Failed") || is_terminating(&pod);
        if !ignores_pdbs {
            self.sync_pdbs();
            let selecting: Vec<ObjectKey> = self
                .pdbs
                .in_namespace(namespace)
                .filter(|(_, pdb)| {
                    let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
                    Selector::from_label_selector(selector).matches(pod.metadata.labels.as_ref())
                })
                .map(|(k, _)| k.clone())
                .collect();
            if selecting.len() > 1 {
                return Err(EvictionError::Failed {
                    pod: pod_name,
                    message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
                        .to_string(),
                });
            }
            if let Some(pdb_key) = selecting.first() {
                let pdb = self.pdbs.get(pdb_key).cloned().expect("selected PDB exists");
                let status = pdb.status.clone().unwrap_or_default();
                let always_allow =
                    pdb.spec.as_ref().and_then(|s| s.unhealthy_pod_eviction_policy.as_deref()) == Some("AlwaysAllow");
                let unhealthy_may_go = !is_ready(&pod)
                    && (always_allow
                        || (status.desired_healthy > 0 && status.current_healthy >= status.desired_healthy));
                if !unhealthy_may_go {
                    if status.observed_generation.unwrap_or(0) < pdb.metadata.generation.unwrap_or(0) {
                        return Err(EvictionError::BlockedByPdb(pod_name));
                    }
                    if status.disruptions_allowed < 0 {
                        return Err(EvictionError::Failed {
                            pod: pod_name,
                            message: "pdb disruptions allowed is negative".to_string(),
                        });
                    }
                    if status.disruptions_allowed == 0 {
                        return Err(EvictionError::BlockedByPdb(pod_name));
                    }
                    let mut pdb = (*pdb).clone();
                    let status = pdb.status.get_or_insert_with(Default::default);
                    status.disruptions_allowed -= 1;
                    status
                        .disrupted_pods
                        .get_or_insert_with(Default::default)
                        .insert(name.to_string(), Time(self.now()));
                    self.pdbs.insert(pdb_key.clone(), Arc::new(pdb));
                }
            }
        }
        self.terminate_pod(&key, grace);
        Ok(())
    }

    /// The `scale` subresource of a Deployment, ReplicaSet or StatefulSet.
    pub fn get_scale(&self, target: &ScaleTarget) -> Result<Scale, PortError> {
        let key = ObjectKey::new(&target.namespace, &target.name);
        let not_found = || PortError::NotFound { kind: target.kind.clone(), name: key.to_string() };
        let (spec_replicas, status_replicas, selector) = match target.kind.as_str() {
            "Deployment" => {
                let d = self.deployments.get(&key).ok_or_else(not_found)?;
                let spec = d.spec.as_ref().ok_or_else(not_found)?;
                (spec.replicas.unwrap_or(1), d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0), &spec.selector)
            }
            "ReplicaSet" => {
                let rs = self.replicasets.get(&key).ok_or_else(not_found)?;
                let spec = rs.spec.as_ref().ok_or_else(not_found)?;
                (spec.replicas.unwrap_or(1), rs.status.as_ref().map_or(0, |s| s.replicas), &spec.selector)
            }
            "StatefulSet" => {
                let ss = self.statefulsets.get(&key).ok_or_else(not_found)?;
                let spec = ss.spec.as_ref().ok_or_else(not_found)?;
                (spec.replicas.unwrap_or(1), ss.status.as_ref().map_or(0, |s| s.replicas), &spec.selector)
            }
            other => {
                return Err(PortError::Api(format!("{other} {key}: no scale subresource in the in-memory cluster")));
            }
        };
        Ok(Scale { spec_replicas, status_replicas, selector: format_label_selector(selector) })
    }

    /// Sets `spec.replicas` through the `scale` subresource; the controllers act on the next
    /// advance.
    pub fn set_scale(&mut self, target: &ScaleTarget, replicas: i32) -> Result<(), PortError> {
        if replicas < 0 {
            return Err(PortError::Api(format!(
                "spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
            )));
        }
        let key = ObjectKey::new(&target.namespace, &target.name);
        let not_found = || PortError::NotFound { kind: target.kind.clone(), name: key.to_string() };
        let bump = |meta: &mut ObjectMeta| meta.generation = Some(meta.generation.unwrap_or(1) + 1);
        match target.kind.as_str() {
            "Deployment" => {
                let mut d = (**self.deployments.get(&key).ok_or_else(not_found)?).clone();
                d.spec.get_or_insert_with(Default::default).replicas = Some(replicas);
                bump(&mut d.metadata);
                self.deployments.insert(key.clone(), Arc::new(d));
                self.mark_dirty(Workload::Deployment(key));
            }
            "ReplicaSet" => {
                let mut rs = (**self.replicasets.get(&key).ok_or_else(not_found)?).clone();
                rs.spec.get_or_insert_with(Default::default).replicas = Some(replicas);
                bump(&mut rs.metadata);
                self.replicasets.insert(key.clone(), Arc::new(rs));
                self.mark_dirty(Workload::ReplicaSet(key));
            }
            "StatefulSet" => {
                let mut ss = (**self.statefulsets.get(&key).ok_or_else(not_found)?).clone();
                ss.spec.get_or_insert_with(Default::default).replicas = Some(replicas);
                bump(&mut ss.metadata);
                self.statefulsets.insert(key.clone(), Arc::new(ss));
                self.mark_dirty(Workload::StatefulSet(key));
            }
            other => {
                return Err(PortError::Api(format!("{other} {key}: no scale subresource in the in-memory cluster")));
            }
        }
        self.mark_pdbs_of_workload(&target.kind, &ObjectKey::new(&target.namespace, &target.name));
        Ok(())
    }

    /// Replaces an HPA's status (its `status` subresource).
    pub fn update_hpa_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        let key = ObjectKey::new(namespace, name);
        let Some(current) = self.hpas.get(&key) else {
            return Err(PortError::NotFound { kind: "HorizontalPodAutoscaler".into(), name: key.to_string() });
        };
        let mut hpa = (**current).clone();
        hpa.status = Some(status);
        self.hpas.insert(key, Arc::new(hpa));
        Ok(())
    }

    /// Replaces a WPA's status (its `status` subresource).
    pub fn update_wpa_status(
        &mut self,
        namespace: &str,
        name: &str,
        status: crate::hpa::wpa::WatermarkPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        let same = |w: &&mut Arc<crate::hpa::wpa::WatermarkPodAutoscaler>| {
            w.metadata.namespace.as_deref().unwrap_or("default") == namespace
                && w.metadata.name.as_deref() == Some(name)
        };
        let Some(current) = self.wpas.iter_mut().find(same) else {
            return Err(PortError::NotFound {
                kind: "WatermarkPodAutoscaler".into(),
                name: ObjectKey::new(namespace, name).to_string(),
            });
        };
        let mut wpa = (**current).clone();
        wpa.status = Some(status);
        *current = Arc::new(wpa);
        Ok(())
    }

    /// Creates or replaces the status ConfigMap.
    pub fn write_status(&mut self, namespace: &str, name: &str, status_yaml: &str, last_updated: &str) {
        let key = ObjectKey::new(namespace, name);
        let mut config_map = match self.config_maps.get(&key) {
            Some(existing) => (**existing).clone(),
            None => ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    namespace: Some(namespace.to_string()),
                    uid: Some(self.new_uid()),
                    creation_timestamp: Some(Time(self.now())),
                    ..Default::default()
                },
                ..Default::default()
            },
        };
        config_map.data.get_or_insert_with(Default::default).insert("status".to_string(), status_yaml.to_string());
        config_map
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(LAST_UPDATED_ANNOTATION.to_string(), last_updated.to_string());
        self.config_maps.insert(key, Arc::new(config_map));
    }
}
