//! Deployments (one ReplicaSet each) and ReplicaSets (keep `spec.replicas` pods).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DeploymentStatus, ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::super::cluster::{MemoryCluster, Workload};
use super::super::pods::is_active;
use super::super::store::ObjectKey;
use super::{controller_ref, first_to_remove};

pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// A stable stand-in for the Deployment controller's pod-template hash: FNV-1a of the
/// Deployment's namespace and name in the controller's "safe" alphabet. The template itself
/// does not go into it: a changed template updates the one ReplicaSet in place (no rollouts).
fn template_hash(key: &ObjectKey) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.namespace.bytes().chain([b'/']).chain(key.name.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (0..10)
        .map(|_| {
            let c = ALPHABET[(hash % ALPHABET.len() as u64) as usize] as char;
            hash /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

impl MemoryCluster {
    pub(in crate::memory) fn sync_deployment(&mut self, key: &ObjectKey) {
        let Some(deployment) = self.deployments.get(key).cloned() else { return };
        let Some(spec) = deployment.spec.as_ref() else { return };
        let replicas = spec.replicas.unwrap_or(1);
        let hash = template_hash(key);
        let rs_key = ObjectKey::new(&key.namespace, format!("{}-{hash}", key.name));

        let mut template = spec.template.clone();
        template
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.clone());
        let mut selector = spec.selector.clone();
        selector.match_labels.get_or_insert_with(Default::default).insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash);
        let desired = ReplicaSetSpec {
            replicas: Some(replicas),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(template.clone()),
        };
        match self.replicasets.get(&rs_key).cloned() {
            None => {
                let rs = ReplicaSet {
                    metadata: ObjectMeta {
                        name: Some(rs_key.name.clone()),
                        namespace: Some(rs_key.namespace.clone()),
                        uid: Some(self.new_uid()),
                        creation_timestamp: Some(Time(self.now())),
                        generation: Some(1),
                        labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
                        annotations: Some([("deployment.kubernetes.io/revision".to_string(), "1".to_string())].into()),
                        owner_references: Some(vec![controller_ref("apps/v1", "Deployment", &deployment.metadata)]),
                        ..Default::default()
                    },
                    spec: Some(desired),
                    status: None,
                };
                self.replicasets.insert(rs_key.clone(), Arc::new(rs));
                self.mark_dirty(Workload::ReplicaSet(rs_key.clone()));
            }
            Some(rs) if rs.spec.as_ref() != Some(&desired) => {
                let mut rs = (*rs).clone();
                rs.spec = Some(desired);
                rs.metadata.generation = Some(rs.metadata.generation.unwrap_or(1) + 1);
                self.replicasets.insert(rs_key.clone(), Arc::new(rs));
                self.mark_dirty(Workload::ReplicaSet(rs_key.clone()));
            }
            Some(_) => {}
        }

        let rs_status = self.replicasets.get(&rs_key).and_then(|rs| rs.status.clone()).unwrap_or_default();
        let available = rs_status.available_replicas.unwrap_or(0);
        let status = DeploymentStatus {
            observed_generation: deployment.metadata.generation,
            replicas: Some(rs_status.replicas),
            updated_replicas: Some(rs_status.replicas),
            ready_replicas: rs_status.ready_replicas,
            available_replicas: Some(available),
            unavailable_replicas: Some((replicas - available).max(0)),
            ..Default::default()
        };
        if deployment.status.as_ref() != Some(&status) {
            let mut deployment = (*deployment).clone();
            deployment.status = Some(status);
            self.deployments.insert(key.clone(), Arc::new(deployment));
        }
    }

    /// How many of an owner's pods are active (neither finished nor terminating), and how
    /// many of those are ready.
    fn active_and_ready(&self, owner_uid: &str) -> (usize, usize) {
        self.pods_by_owner.get(owner_uid).map_or((0, 0), |pods| pods.active_and_ready())
    }

    pub(in crate::memory) fn sync_replica_set(&mut self, key: &ObjectKey) {
        let Some(rs) = self.replicasets.get(key).cloned() else { return };
        let Some(spec) = rs.spec.as_ref() else { return };
        let desired = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
        let uid = rs.metadata.uid.clone().unwrap_or_default();
        // Most syncs follow a pod's status: the pods are counted where they are stored, and
        // copied out only when some are to be removed.
        let (mut count, mut ready) = self.active_and_ready(&uid);
        if count < desired {
            let template = spec.template.clone().unwrap_or_default();
            let owner = controller_ref("apps/v1", "ReplicaSet", &rs.metadata);
            for _ in count..desired {
                let name = self.next_pod_name(&uid, &key.namespace, &key.name);
                self.create_pod(ObjectKey::new(&key.namespace, name), &template, owner.clone(), &[], &[], |_| {});
            }
        } else if count > desired {
            let active: Vec<Arc<Pod>> = self.owned_pods(&uid).into_iter().filter(|p| is_active(p)).collect();
            let removed = first_to_remove(&active, active.len() - desired);
            self.terminate_pods(&removed);
        }
        // Counted again only when this sync created or removed pods.
        if count != desired {
            (count, ready) = self.active_and_ready(&uid);
        }
        let count = i32::try_from(count).unwrap_or(i32::MAX);
        let ready = i32::try_from(ready).unwrap_or(i32::MAX);
        let status = ReplicaSetStatus {
            replicas: count,
            fully_labeled_replicas: Some(count),
            ready_replicas: Some(ready),
            available_replicas: Some(ready),
            observed_generation: rs.metadata.generation,
            ..Default::default()
        };
        if rs.status.as_ref() != Some(&status) {
            let mut rs = (*rs).clone();
            rs.status = Some(status);
            let owner = rs.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true)).cloned();
            self.replicasets.insert(key.clone(), Arc::new(rs));
            if let Some(owner) = owner
                && let Some(workload) = Workload::from_owner(&owner.kind, &key.namespace, &owner.name)
            {
                self.mark_dirty(workload);
            }
        }
    }
}
