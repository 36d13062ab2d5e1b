//! Storage: PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes as objects,
//! and the parts of the control plane that move them, so that a pod with a zonal volume behaves
//! in `simulate` as on a real cluster (and as the autoscaler's simulation expects):
//!
//! - admission: a claim without `storageClassName` gets the default class (the
//!   `storageclass.kubernetes.io/is-default-class` annotation), as the DefaultStorageClass
//!   admission plugin does; a volume without status is `Available`;
//! - the PV controller: an unbound claim whose class binds `Immediate` is bound at once to an
//!   available volume of its class, or to a new one its class provisions (placed in the class's
//!   first allowed topology); a claim naming its volume is bound to it;
//! - the StatefulSet controller creates the claims of `volumeClaimTemplates`
//!   (`<template>-<set>-<ordinal>`) and keeps them when pods or replicas go (the default
//!   `Retain` policy), so a recreated pod finds its volume again;
//! - the scheduler (and a CSI provisioner): when a pod is bound, each `WaitForFirstConsumer`
//!   claim it uses is bound to the available volume the filters matched on that node, or to a
//!   new volume with node affinity to the node's zone. A pod recreated later stays in that zone.
//!
//! Not modelled: claim protection (a deleted claim goes at once, even in use), volume
//! expansion, reclaim policies (volumes stay after their claim goes), CSI attach limits of the
//! simulated nodes (a scenario may add CSINode objects), generic ephemeral volumes' claims.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus, PersistentVolumeSpec, PersistentVolumeStatus,
    Volume, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use simulator::volumes::{BIND_COMPLETED_ANNOTATION, NO_PROVISIONER, VolumeIndex, WAIT_FOR_FIRST_CONSUMER};
use simulator::well_known::ZONE_LABEL;

use super::cluster::MemoryCluster;
use super::store::ObjectKey;

/// Marks the StorageClass that claims without a class get.
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";

fn storage_request(claim: &PersistentVolumeClaim) -> Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity> {
    claim.spec.as_ref()?.resources.as_ref()?.requests.as_ref()?.get("storage").cloned()
}

fn claim_class(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim.spec.as_ref().and_then(|s| s.storage_class_name.as_deref()).filter(|c| !c.is_empty())
}

fn is_bound(claim: &PersistentVolumeClaim) -> bool {
    claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

fn storage_bytes(q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>) -> i64 {
    q.and_then(|q| simulator::quantity::parse_value(&q.0).ok()).unwrap_or(0)
}

impl MemoryCluster {
    /// Admission for a claim: the default class when none is named.
    pub(super) fn default_claim_class(&self, claim: &mut PersistentVolumeClaim) {
        let spec = claim.spec.get_or_insert_with(Default::default);
        if spec.storage_class_name.is_some() {
            return;
        }
        let default = self.storage_classes.iter().map(|(_, c)| c).find(|c| {
            c.metadata.annotations.as_ref().and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION)).is_some_and(|v| v == "true")
        });
        if let Some(class) = default {
            spec.storage_class_name = class.metadata.name.clone();
        }
    }

    /// Admission for a volume: `Available` until a claim binds it.
    pub(super) fn default_volume_status(volume: &mut PersistentVolume) {
        let bound = volume.spec.as_ref().is_some_and(|s| s.claim_ref.is_some());
        let status = volume.status.get_or_insert_with(PersistentVolumeStatus::default);
        if status.phase.is_none() {
            status.phase = Some(if bound { "Bound" } else { "Available" }.to_string());
        }
    }

    /// A claim, volume or class changed: the PV controller binds what it can, then the
    /// scheduler sees the new state and gives every pending pod another try.
    pub(super) fn volumes_changed(&mut self) {
        self.bind_claims();
        self.refresh_volume_index();
        self.scheduler.retry_all = true;
    }

    /// The scheduler's snapshot reads the current claims, volumes, classes and CSINodes.
    pub(super) fn refresh_volume_index(&mut self) {
        let index = self.volume_index();
        self.scheduler.snapshot.set_volumes(index);
        self.scheduler.forget_answers();
    }

    pub(super) fn volume_index(&mut self) -> VolumeIndex {
        VolumeIndex::new(
            self.persistent_volume_claims.list(),
            self.persistent_volumes.list(),
            self.storage_classes.list(),
            self.csi_nodes.list(),
        )
    }

    /// The PV controller's pass over unbound claims that do not wait for a consumer.
    fn bind_claims(&mut self) {
        let unbound: Vec<Arc<PersistentVolumeClaim>> = self
            .persistent_volume_claims
            .iter()
            .map(|(_, c)| c.clone())
            .filter(|c| !is_bound(c) && c.metadata.deletion_timestamp.is_none())
            .collect();
        for claim in unbound {
            let named = claim.spec.as_ref().and_then(|s| s.volume_name.clone()).filter(|v| !v.is_empty());
            if let Some(volume) = named {
                if self.persistent_volumes.contains(&ObjectKey::cluster(&volume)) {
                    self.bind_claim(&claim, &volume);
                }
                continue;
            }
            let class = claim_class(&claim).and_then(|c| self.storage_classes.get(&ObjectKey::cluster(c))).cloned();
            let Some(class) = class else { continue };
            if class.volume_binding_mode.as_deref() == Some(WAIT_FOR_FIRST_CONSUMER) {
                continue;
            }
            match self.available_volume_for(&claim) {
                Some(volume) => self.bind_claim(&claim, &volume),
                None if class.provisioner != NO_PROVISIONER && !class.provisioner.is_empty() => {
                    let affinity = first_allowed_topology(&class);
                    let volume = self.provision(&claim, &class, affinity);
                    self.bind_claim(&claim, &volume);
                }
                None => {}
            }
        }
    }

    /// An available volume an `Immediate` claim can bind: pre-bound to it, or of its class, big
    /// enough, with its access modes; the smallest first, then by name.
    fn available_volume_for(&self, claim: &PersistentVolumeClaim) -> Option<String> {
        let class = claim_class(claim).unwrap_or("");
        let requested = storage_bytes(storage_request(claim).as_ref());
        let modes = claim.spec.as_ref().and_then(|s| s.access_modes.clone()).unwrap_or_default();
        let mut best: Option<(bool, i64, String)> = None;
        for (key, pv) in self.persistent_volumes.iter() {
            let Some(spec) = pv.spec.as_ref() else { continue };
            let prebound = spec
                .claim_ref
                .as_ref()
                .is_some_and(|r| r.name == claim.metadata.name && r.namespace == claim.metadata.namespace);
            let available = pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available");
            let capacity = storage_bytes(spec.capacity.as_ref().and_then(|c| c.get("storage")));
            let fits = spec.storage_class_name.as_deref().unwrap_or("") == class
                && capacity >= requested
                && modes.iter().all(|m| spec.access_modes.iter().flatten().any(|pm| pm == m));
            if prebound || (available && spec.claim_ref.is_none() && fits) {
                let rank = (!prebound, capacity, key.name.clone());
                if best.as_ref().is_none_or(|b| rank < *b) {
                    best = Some(rank);
                }
            }
        }
        best.map(|(_, _, name)| name)
    }

    /// A new volume for the claim, as its class's provisioner would create it.
    fn provision(
        &mut self,
        claim: &PersistentVolumeClaim,
        class: &StorageClass,
        affinity: Option<Vec<NodeSelectorRequirement>>,
    ) -> String {
        let name = format!("pvc-{}", claim.metadata.uid.as_deref().unwrap_or_default());
        let spec = claim.spec.as_ref();
        let capacity = storage_request(claim).map(|q| BTreeMap::from([("storage".to_string(), q)]));
        let volume = PersistentVolume {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                uid: Some(self.new_uid()),
                creation_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(self.now())),
                annotations: Some(BTreeMap::from([(
                    "pv.kubernetes.io/provisioned-by".to_string(),
                    class.provisioner.clone(),
                )])),
                ..Default::default()
            },
            spec: Some(PersistentVolumeSpec {
                capacity,
                access_modes: spec.and_then(|s| s.access_modes.clone()),
                storage_class_name: class.metadata.name.clone(),
                volume_mode: spec.and_then(|s| s.volume_mode.clone()),
                persistent_volume_reclaim_policy: Some(class.reclaim_policy.clone().unwrap_or_else(|| "Delete".into())),
                csi: Some(CSIPersistentVolumeSource {
                    driver: class.provisioner.clone(),
                    volume_handle: name.clone(),
                    ..Default::default()
                }),
                node_affinity: affinity.map(|requirements| VolumeNodeAffinity {
                    required: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: Some(requirements),
                            ..Default::default()
                        }],
                    }),
                }),
                ..Default::default()
            }),
            status: Some(PersistentVolumeStatus { phase: Some("Available".into()), ..Default::default() }),
        };
        self.persistent_volumes.insert(ObjectKey::cluster(&name), Arc::new(volume));
        name
    }

    /// Binds a claim and a volume to each other, as the PV controller completes a binding.
    fn bind_claim(&mut self, claim: &PersistentVolumeClaim, volume_name: &str) {
        let key = ObjectKey::of(&claim.metadata);
        let Some(volume) = self.persistent_volumes.get(&ObjectKey::cluster(volume_name)).cloned() else { return };
        let mut volume = (*volume).clone();
        let spec = volume.spec.get_or_insert_with(Default::default);
        spec.claim_ref = Some(ObjectReference {
            kind: Some("PersistentVolumeClaim".into()),
            api_version: Some("v1".into()),
            namespace: Some(key.namespace.clone()),
            name: Some(key.name.clone()),
            uid: claim.metadata.uid.clone(),
            ..Default::default()
        });
        let capacity = spec.capacity.clone();
        let access_modes = spec.access_modes.clone();
        volume.status = Some(PersistentVolumeStatus { phase: Some("Bound".into()), ..Default::default() });
        self.persistent_volumes.insert(ObjectKey::cluster(volume_name), Arc::new(volume));

        let mut claim = claim.clone();
        claim.spec.get_or_insert_with(Default::default).volume_name = Some(volume_name.to_string());
        claim
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(BIND_COMPLETED_ANNOTATION.into(), "yes".into());
        claim.status = Some(PersistentVolumeClaimStatus {
            phase: Some("Bound".into()),
            capacity,
            access_modes,
            ..Default::default()
        });
        self.persistent_volume_claims.insert(key, Arc::new(claim));
    }

    /// The scheduler bound a pod to a node: its `WaitForFirstConsumer` claims bind now, each to
    /// the volume the filters matched on the node or to a new one in the node's zone.
    pub(super) fn bind_pod_volumes(&mut self, pod_key: &ObjectKey, node: &str) {
        let Some(info) = self.pod_infos.get(pod_key).cloned() else { return };
        if info.claims.is_empty() {
            return;
        }
        let node_id = self.scheduler.snapshot.node_id(node);
        let zone = self
            .nodes
            .get(&ObjectKey::cluster(node))
            .and_then(|n| n.metadata.labels.as_ref()?.get(ZONE_LABEL).cloned());
        let mut chosen: Vec<String> = Vec::new();
        let mut changed = false;
        for pod_claim in &info.claims {
            let key = ObjectKey::new(info.namespace(), &pod_claim.name);
            let Some(claim) = self.persistent_volume_claims.get(&key).cloned() else { continue };
            let named = claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()).is_some_and(|v| !v.is_empty());
            if is_bound(&claim) || named {
                continue;
            }
            let class = claim_class(&claim).and_then(|c| self.storage_classes.get(&ObjectKey::cluster(c))).cloned();
            let Some(class) = class.filter(|c| c.volume_binding_mode.as_deref() == Some(WAIT_FOR_FIRST_CONSUMER))
            else {
                continue;
            };
            let matched = node_id.and_then(|id| {
                let chosen: Vec<&str> = chosen.iter().map(String::as_str).collect();
                self.scheduler.snapshot.matching_volume(&pod_claim.key, id, &chosen)
            });
            let volume = match matched {
                Some(volume) => volume,
                None => {
                    let affinity = zone.as_ref().map(|z| {
                        vec![NodeSelectorRequirement {
                            key: ZONE_LABEL.into(),
                            operator: "In".into(),
                            values: Some(vec![z.clone()]),
                        }]
                    });
                    self.provision(&claim, &class, affinity)
                }
            };
            self.bind_claim(&claim, &volume);
            chosen.push(volume);
            changed = true;
        }
        if changed {
            self.refresh_volume_index();
        }
    }

    /// The StatefulSet controller's claims for one ordinal, created when missing, and the pod
    /// volumes that use them.
    pub(super) fn stateful_set_claims(&mut self, set: &StatefulSet, ordinal: usize) -> Vec<Volume> {
        let Some(spec) = set.spec.as_ref() else { return Vec::new() };
        let namespace = set.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let set_name = set.metadata.name.clone().unwrap_or_default();
        let mut volumes = Vec::new();
        let mut created = false;
        for template in spec.volume_claim_templates.iter().flatten() {
            let template_name = template.metadata.name.clone().unwrap_or_default();
            let claim_name = format!("{template_name}-{set_name}-{ordinal}");
            let key = ObjectKey::new(&namespace, &claim_name);
            if !self.persistent_volume_claims.contains(&key) {
                let mut labels = template.metadata.labels.clone().unwrap_or_default();
                labels.extend(spec.selector.match_labels.clone().unwrap_or_default());
                let mut claim = PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some(claim_name.clone()),
                        namespace: Some(namespace.clone()),
                        uid: Some(self.new_uid()),
                        creation_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(self.now())),
                        labels: Some(labels),
                        annotations: template.metadata.annotations.clone(),
                        ..Default::default()
                    },
                    spec: template.spec.clone(),
                    status: Some(PersistentVolumeClaimStatus { phase: Some("Pending".into()), ..Default::default() }),
                };
                self.default_claim_class(&mut claim);
                self.persistent_volume_claims.insert(key, Arc::new(claim));
                created = true;
            }
            volumes.push(Volume {
                name: template_name,
                persistent_volume_claim: Some(k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                    claim_name,
                    read_only: None,
                }),
                ..Default::default()
            });
        }
        if created {
            self.bind_claims();
            self.refresh_volume_index();
        }
        volumes
    }
}

/// Where a provisioner puts an `Immediate` volume of a class with `allowedTopologies`: the first
/// value of each expression of the first term (deterministic, as everything here).
fn first_allowed_topology(class: &StorageClass) -> Option<Vec<NodeSelectorRequirement>> {
    let term = class.allowed_topologies.as_ref()?.first()?;
    let requirements: Vec<NodeSelectorRequirement> = term
        .match_label_expressions
        .iter()
        .flatten()
        .filter_map(|e| {
            Some(NodeSelectorRequirement {
                key: e.key.clone(),
                operator: "In".into(),
                values: Some(vec![e.values.first()?.clone()]),
            })
        })
        .collect();
    (!requirements.is_empty()).then_some(requirements)
}
