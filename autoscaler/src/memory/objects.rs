//! What the driver puts into the cluster and takes out: `apply` (create or update, with the
//! API server's defaulting and the validation a simulation relies on) and `delete` (with
//! cascading deletion of owned objects).

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodStatus, PodTemplateSpec,
    ReplicationController,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use simulator::labels::Selector;

use super::cluster::{MemoryCluster, Workload};
use super::controllers::pdb::PdbState;
use super::pods::{PodChange, annotated_run_duration};
use super::store::ObjectKey;

/// Why the cluster refused an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryClusterError {
    #[error("{kind} without metadata.name")]
    MissingName { kind: &'static str },
    #[error("{kind} {key}: {field}: {message}")]
    Invalid { kind: &'static str, key: String, field: String, message: String },
}

/// Any object the cluster stores.
#[derive(Clone, Debug)]
pub enum ClusterObject {
    Node(Node),
    Pod(Pod),
    Deployment(Deployment),
    ReplicaSet(ReplicaSet),
    StatefulSet(StatefulSet),
    Job(Job),
    DaemonSet(DaemonSet),
    ReplicationController(ReplicationController),
    PodDisruptionBudget(PodDisruptionBudget),
    ConfigMap(ConfigMap),
    Namespace(Namespace),
    HorizontalPodAutoscaler(HorizontalPodAutoscaler),
    PersistentVolumeClaim(PersistentVolumeClaim),
    /// Boxed: far larger than the other kinds (every in-tree volume source).
    PersistentVolume(Box<PersistentVolume>),
    StorageClass(StorageClass),
    CSINode(CSINode),
}

/// The kinds of [`ClusterObject`], for deletion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    Node,
    Pod,
    Deployment,
    ReplicaSet,
    StatefulSet,
    Job,
    DaemonSet,
    ReplicationController,
    PodDisruptionBudget,
    ConfigMap,
    Namespace,
    HorizontalPodAutoscaler,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
}

macro_rules! cluster_object_from {
    ($($kind:ident),*) => {
        $(impl From<$kind> for ClusterObject {
            fn from(object: $kind) -> Self {
                ClusterObject::$kind(object)
            }
        })*
    };
}
cluster_object_from!(
    Node,
    Pod,
    Deployment,
    ReplicaSet,
    StatefulSet,
    Job,
    DaemonSet,
    ReplicationController,
    PodDisruptionBudget,
    ConfigMap,
    Namespace,
    HorizontalPodAutoscaler,
    PersistentVolumeClaim,
    StorageClass,
    CSINode
);

impl From<PersistentVolume> for ClusterObject {
    fn from(object: PersistentVolume) -> Self {
        ClusterObject::PersistentVolume(Box::new(object))
    }
}

fn invalid(kind: &'static str, key: &ObjectKey, field: &str, message: impl Into<String>) -> MemoryClusterError {
    MemoryClusterError::Invalid { kind, key: key.to_string(), field: field.to_string(), message: message.into() }
}

/// apps/v1 rules: a non-empty selector that selects the template's labels.
fn check_workload(
    kind: &'static str,
    key: &ObjectKey,
    selector: Option<&LabelSelector>,
    template: &PodTemplateSpec,
    replicas: Option<i32>,
) -> Result<(), MemoryClusterError> {
    let selector = selector.ok_or_else(|| invalid(kind, key, "spec.selector", "required"))?;
    let compiled = Selector::from_label_selector(Some(selector));
    if compiled.is_everything() {
        return Err(invalid(kind, key, "spec.selector", "empty selector is invalid"));
    }
    if matches!(compiled, Selector::Nothing) {
        return Err(invalid(kind, key, "spec.selector", "invalid label selector"));
    }
    let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    if !compiled.matches(labels) {
        return Err(invalid(kind, key, "spec.template.metadata.labels", "`selector` does not match template `labels`"));
    }
    if replicas.is_some_and(|r| r < 0) {
        return Err(invalid(kind, key, "spec.replicas", "must be greater than or equal to 0"));
    }
    check_template(kind, key, template)
}

fn check_template(kind: &'static str, key: &ObjectKey, template: &PodTemplateSpec) -> Result<(), MemoryClusterError> {
    if template.spec.is_none() {
        return Err(invalid(kind, key, "spec.template.spec", "required"));
    }
    if let Some(meta) = &template.metadata {
        annotated_run_duration(meta).map_err(|m| invalid(kind, key, "spec.template.metadata.annotations", m))?;
    }
    Ok(())
}

impl MemoryCluster {
    /// Defaulting every create / update gets: name required, namespace (`default`) for
    /// namespaced kinds, uid, creation time and generation kept from the stored object or set.
    fn admit_meta(
        &mut self,
        meta: &mut ObjectMeta,
        kind: &'static str,
        namespaced: bool,
        existing: Option<ObjectMeta>,
    ) -> Result<ObjectKey, MemoryClusterError> {
        if meta.name.as_deref().is_none_or(str::is_empty) {
            return Err(MemoryClusterError::MissingName { kind });
        }
        if namespaced {
            meta.namespace.get_or_insert_with(|| "default".to_string());
        } else {
            meta.namespace = None;
        }
        match existing {
            Some(existing) => {
                meta.uid = existing.uid;
                meta.creation_timestamp = existing.creation_timestamp;
                meta.generation = Some(existing.generation.unwrap_or(1) + 1);
            }
            None => {
                if meta.uid.as_deref().is_none_or(str::is_empty) {
                    meta.uid = Some(self.new_uid());
                }
                meta.creation_timestamp.get_or_insert_with(|| Time(self.now()));
                meta.generation.get_or_insert(1);
            }
        }
        Ok(if namespaced { ObjectKey::of(meta) } else { ObjectKey::cluster(meta.name.clone().unwrap_or_default()) })
    }

    fn existing_meta<T: k8s_openapi::Metadata<Ty = ObjectMeta>>(
        kind: &super::store::Kind<T>,
        meta: &ObjectMeta,
        namespaced: bool,
    ) -> Option<ObjectMeta> {
        let name = meta.name.clone().unwrap_or_default();
        let key = if namespaced {
            ObjectKey::new(meta.namespace.clone().unwrap_or_else(|| "default".to_string()), name)
        } else {
            ObjectKey::cluster(name)
        };
        kind.get(&key).map(|o| o.metadata().clone())
    }

    /// Creates or updates an object. Workload updates keep the stored status; the driver
    /// changes specs. Returns the object's key.
    pub fn apply(&mut self, object: impl Into<ClusterObject>) -> Result<ObjectKey, MemoryClusterError> {
        match object.into() {
            ClusterObject::Node(mut node) => {
                let existing = Self::existing_meta(&self.nodes, &node.metadata, false);
                let key = self.admit_meta(&mut node.metadata, "Node", false, existing)?;
                self.put_node(node);
                Ok(key)
            }
            ClusterObject::Pod(mut pod) => {
                let existing = Self::existing_meta(&self.pods, &pod.metadata, true);
                let key = self.admit_meta(&mut pod.metadata, "Pod", true, existing)?;
                if pod.spec.is_none() {
                    return Err(invalid("Pod", &key, "spec", "required"));
                }
                annotated_run_duration(&pod.metadata).map_err(|m| invalid("Pod", &key, "metadata.annotations", m))?;
                self.resolve_priority(&mut pod).map_err(|m| invalid("Pod", &key, "spec.priorityClassName", m))?;
                pod.status
                    .get_or_insert_with(|| PodStatus { phase: Some("Pending".to_string()), ..Default::default() });
                self.put_pod(pod, PodChange::Spec);
                Ok(key)
            }
            ClusterObject::Deployment(mut d) => {
                let existing = Self::existing_meta(&self.deployments, &d.metadata, true);
                let key = self.admit_meta(&mut d.metadata, "Deployment", true, existing)?;
                let spec = d.spec.as_ref().ok_or_else(|| invalid("Deployment", &key, "spec", "required"))?;
                check_workload("Deployment", &key, Some(&spec.selector), &spec.template, spec.replicas)?;
                self.check_priority_class("Deployment", &key, &spec.template)?;
                if let Some(old) = self.deployments.get(&key) {
                    d.status = old.status.clone();
                }
                self.deployments.insert(key.clone(), d.into());
                self.mark_dirty(Workload::Deployment(key.clone()));
                self.mark_pdbs_of_workload("Deployment", &key);
                Ok(key)
            }
            ClusterObject::ReplicaSet(mut rs) => {
                let existing = Self::existing_meta(&self.replicasets, &rs.metadata, true);
                let key = self.admit_meta(&mut rs.metadata, "ReplicaSet", true, existing)?;
                let spec = rs.spec.as_ref().ok_or_else(|| invalid("ReplicaSet", &key, "spec", "required"))?;
                let template = spec.template.clone().unwrap_or_default();
                check_workload("ReplicaSet", &key, Some(&spec.selector), &template, spec.replicas)?;
                self.check_priority_class("ReplicaSet", &key, &template)?;
                if let Some(old) = self.replicasets.get(&key) {
                    rs.status = old.status.clone();
                }
                self.replicasets.insert(key.clone(), rs.into());
                self.mark_dirty(Workload::ReplicaSet(key.clone()));
                self.mark_pdbs_of_workload("ReplicaSet", &key);
                Ok(key)
            }
            ClusterObject::StatefulSet(mut ss) => {
                let existing = Self::existing_meta(&self.statefulsets, &ss.metadata, true);
                let key = self.admit_meta(&mut ss.metadata, "StatefulSet", true, existing)?;
                let spec = ss.spec.as_ref().ok_or_else(|| invalid("StatefulSet", &key, "spec", "required"))?;
                check_workload("StatefulSet", &key, Some(&spec.selector), &spec.template, spec.replicas)?;
                self.check_priority_class("StatefulSet", &key, &spec.template)?;
                if let Some(old) = self.statefulsets.get(&key) {
                    ss.status = old.status.clone();
                }
                self.statefulsets.insert(key.clone(), ss.into());
                self.mark_dirty(Workload::StatefulSet(key.clone()));
                self.mark_pdbs_of_workload("StatefulSet", &key);
                Ok(key)
            }
            ClusterObject::Job(mut job) => {
                let existing = Self::existing_meta(&self.jobs, &job.metadata, true);
                let key = self.admit_meta(&mut job.metadata, "Job", true, existing)?;
                let spec = job.spec.as_ref().ok_or_else(|| invalid("Job", &key, "spec", "required"))?;
                check_template("Job", &key, &spec.template)?;
                self.check_priority_class("Job", &key, &spec.template)?;
                annotated_run_duration(&job.metadata).map_err(|m| invalid("Job", &key, "metadata.annotations", m))?;
                for (field, value) in [("spec.parallelism", spec.parallelism), ("spec.completions", spec.completions)] {
                    if value.is_some_and(|v| v < 0) {
                        return Err(invalid("Job", &key, field, "must be greater than or equal to 0"));
                    }
                }
                if let Some(old) = self.jobs.get(&key) {
                    job.status = old.status.clone();
                }
                self.jobs.insert(key.clone(), job.into());
                self.mark_dirty(Workload::Job(key.clone()));
                Ok(key)
            }
            ClusterObject::DaemonSet(mut ds) => {
                let existing = Self::existing_meta(&self.daemonsets, &ds.metadata, true);
                let key = self.admit_meta(&mut ds.metadata, "DaemonSet", true, existing)?;
                let spec = ds.spec.as_ref().ok_or_else(|| invalid("DaemonSet", &key, "spec", "required"))?;
                check_workload("DaemonSet", &key, Some(&spec.selector), &spec.template, None)?;
                self.check_priority_class("DaemonSet", &key, &spec.template)?;
                if let Some(old) = self.daemonsets.get(&key) {
                    ds.status = old.status.clone();
                }
                self.daemonsets.insert(key.clone(), ds.into());
                self.mark_dirty(Workload::DaemonSet(key.clone()));
                Ok(key)
            }
            ClusterObject::ReplicationController(mut rc) => {
                let existing = Self::existing_meta(&self.replication_controllers, &rc.metadata, true);
                let key = self.admit_meta(&mut rc.metadata, "ReplicationController", true, existing)?;
                self.replication_controllers.insert(key.clone(), rc.into());
                self.mark_pdbs_of_workload("ReplicationController", &key);
                Ok(key)
            }
            ClusterObject::PodDisruptionBudget(mut pdb) => {
                let existing = Self::existing_meta(&self.pdbs, &pdb.metadata, true);
                let key = self.admit_meta(&mut pdb.metadata, "PodDisruptionBudget", true, existing)?;
                let spec = pdb.spec.as_ref().ok_or_else(|| invalid("PodDisruptionBudget", &key, "spec", "required"))?;
                if spec.min_available.is_some() && spec.max_unavailable.is_some() {
                    return Err(invalid(
                        "PodDisruptionBudget",
                        &key,
                        "spec",
                        "minAvailable and maxUnavailable cannot be both set",
                    ));
                }
                if let Some(old) = self.pdbs.get(&key) {
                    pdb.status = old.status.clone();
                }
                let selector = Selector::from_label_selector(spec.selector.as_ref());
                let pods = self.pdb_pods(&key.namespace, &selector);
                self.pdb_states.insert(key.clone(), PdbState { selector, pods });
                self.pdbs.insert(key.clone(), pdb.into());
                self.dirty_pdbs.insert(key.clone());
                self.sync_pdbs();
                Ok(key)
            }
            ClusterObject::ConfigMap(mut cm) => {
                let existing = Self::existing_meta(&self.config_maps, &cm.metadata, true);
                let key = self.admit_meta(&mut cm.metadata, "ConfigMap", true, existing)?;
                self.config_maps.insert(key.clone(), cm.into());
                Ok(key)
            }
            ClusterObject::Namespace(mut ns) => {
                let existing = Self::existing_meta(&self.namespaces, &ns.metadata, false);
                let key = self.admit_meta(&mut ns.metadata, "Namespace", false, existing)?;
                self.namespaces.insert(key.clone(), ns.into());
                self.snapshot_namespaces_changed();
                Ok(key)
            }
            ClusterObject::HorizontalPodAutoscaler(mut hpa) => {
                let existing = Self::existing_meta(&self.hpas, &hpa.metadata, true);
                let key = self.admit_meta(&mut hpa.metadata, "HorizontalPodAutoscaler", true, existing)?;
                if let Some(old) = self.hpas.get(&key) {
                    hpa.status = old.status.clone();
                }
                self.hpas.insert(key.clone(), hpa.into());
                Ok(key)
            }
            ClusterObject::PersistentVolumeClaim(mut claim) => {
                let existing = Self::existing_meta(&self.persistent_volume_claims, &claim.metadata, true);
                let key = self.admit_meta(&mut claim.metadata, "PersistentVolumeClaim", true, existing)?;
                self.default_claim_class(&mut claim);
                if let Some(old) = self.persistent_volume_claims.get(&key)
                    && claim.status.is_none()
                {
                    claim.status = old.status.clone();
                }
                claim.status.get_or_insert_with(|| k8s_openapi::api::core::v1::PersistentVolumeClaimStatus {
                    phase: Some("Pending".into()),
                    ..Default::default()
                });
                self.persistent_volume_claims.insert(key.clone(), claim.into());
                self.volumes_changed();
                Ok(key)
            }
            ClusterObject::PersistentVolume(mut volume) => {
                let existing = Self::existing_meta(&self.persistent_volumes, &volume.metadata, false);
                let key = self.admit_meta(&mut volume.metadata, "PersistentVolume", false, existing)?;
                Self::default_volume_status(&mut volume);
                self.persistent_volumes.insert(key.clone(), volume.into());
                self.volumes_changed();
                Ok(key)
            }
            ClusterObject::StorageClass(mut class) => {
                let existing = Self::existing_meta(&self.storage_classes, &class.metadata, false);
                let key = self.admit_meta(&mut class.metadata, "StorageClass", false, existing)?;
                if class.provisioner.is_empty() {
                    return Err(invalid("StorageClass", &key, "provisioner", "Required value"));
                }
                class.volume_binding_mode.get_or_insert_with(|| "Immediate".to_string());
                self.storage_classes.insert(key.clone(), class.into());
                self.volumes_changed();
                Ok(key)
            }
            ClusterObject::CSINode(mut csi_node) => {
                let existing = Self::existing_meta(&self.csi_nodes, &csi_node.metadata, false);
                let key = self.admit_meta(&mut csi_node.metadata, "CSINode", false, existing)?;
                self.csi_nodes.insert(key.clone(), csi_node.into());
                self.volumes_changed();
                Ok(key)
            }
        }
    }

    fn check_priority_class(
        &self,
        kind: &'static str,
        key: &ObjectKey,
        template: &PodTemplateSpec,
    ) -> Result<(), MemoryClusterError> {
        let mut probe = Pod { spec: template.spec.clone(), ..Default::default() };
        self.resolve_priority(&mut probe).map_err(|m| invalid(kind, key, "spec.template.spec.priorityClassName", m))
    }

    /// Deletes an object; true when it existed. Pods are deleted gracefully (they go after
    /// their grace period); deleting a workload deletes what it owns (a Deployment its
    /// ReplicaSet, a controller its pods); deleting a Node removes its pods at once.
    pub fn delete(&mut self, kind: ObjectKind, key: &ObjectKey) -> bool {
        let workload = match kind {
            ObjectKind::Deployment => Some("Deployment"),
            ObjectKind::ReplicaSet => Some("ReplicaSet"),
            ObjectKind::StatefulSet => Some("StatefulSet"),
            ObjectKind::ReplicationController => Some("ReplicationController"),
            _ => None,
        };
        if let Some(workload) = workload {
            self.mark_pdbs_of_workload(workload, key);
        }
        match kind {
            ObjectKind::Node => self.remove_node(&key.name).is_some(),
            ObjectKind::Pod => {
                let Some(pod) = self.pods.get(key).cloned() else { return false };
                let grace = self.grace_of(&pod);
                self.terminate_pod(key, grace);
                true
            }
            ObjectKind::Deployment => match self.deployments.remove(key) {
                Some(d) => {
                    let uid = d.metadata.uid.clone().unwrap_or_default();
                    let owned: Vec<ObjectKey> = self
                        .replicasets
                        .in_namespace(&key.namespace)
                        .filter(|(_, rs)| rs.metadata.owner_references.iter().flatten().any(|o| o.uid == uid))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for rs in owned {
                        self.delete(ObjectKind::ReplicaSet, &rs);
                    }
                    true
                }
                None => false,
            },
            ObjectKind::ReplicaSet => {
                self.replicasets.remove(key).map(|o| self.delete_owned_pods(&o.metadata)).is_some()
            }
            ObjectKind::StatefulSet => {
                self.statefulsets.remove(key).map(|o| self.delete_owned_pods(&o.metadata)).is_some()
            }
            ObjectKind::Job => self.jobs.remove(key).map(|o| self.delete_owned_pods(&o.metadata)).is_some(),
            ObjectKind::DaemonSet => self.daemonsets.remove(key).map(|o| self.delete_owned_pods(&o.metadata)).is_some(),
            ObjectKind::ReplicationController => self.replication_controllers.remove(key).is_some(),
            ObjectKind::PodDisruptionBudget => {
                self.pdb_states.remove(key);
                self.dirty_pdbs.remove(key);
                self.pdbs.remove(key).is_some()
            }
            ObjectKind::ConfigMap => self.config_maps.remove(key).is_some(),
            ObjectKind::Namespace => self.namespaces.remove(key).is_some(),
            ObjectKind::HorizontalPodAutoscaler => self.hpas.remove(key).is_some(),
            ObjectKind::PersistentVolumeClaim => self.delete_volume_object(|c| c.persistent_volume_claims.remove(key)),
            ObjectKind::PersistentVolume => self.delete_volume_object(|c| c.persistent_volumes.remove(key)),
            ObjectKind::StorageClass => self.delete_volume_object(|c| c.storage_classes.remove(key)),
            ObjectKind::CSINode => self.delete_volume_object(|c| c.csi_nodes.remove(key)),
        }
    }

    /// Removes a storage object; the scheduler sees the change.
    fn delete_volume_object<T>(&mut self, remove: impl FnOnce(&mut Self) -> Option<T>) -> bool {
        let removed = remove(self).is_some();
        if removed {
            self.volumes_changed();
        }
        removed
    }

    fn delete_owned_pods(&mut self, owner: &ObjectMeta) {
        let uid = owner.uid.clone().unwrap_or_default();
        let keys: Vec<ObjectKey> =
            self.pods_by_owner.get(&uid).map(|pods| pods.keys().cloned().collect()).unwrap_or_default();
        for key in keys {
            if let Some(pod) = self.pods.get(&key).cloned() {
                let grace = self.grace_of(&pod);
                self.terminate_pod(&key, grace);
            }
        }
    }
}
