//! Deployments (one ReplicaSet each) and ReplicaSets (keep `spec.replicas` pods).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStatus, ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::super::cluster::{MemoryCluster, Workload};
use super::super::store::ObjectKey;
use super::controller_ref;

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

/// The spec of a Deployment's ReplicaSet: its replicas, and its selector and pod template with
/// the template-hash label added.
fn replica_set_spec(spec: &DeploymentSpec, replicas: i32, hash: &str) -> ReplicaSetSpec {
    let mut template = spec.template.clone();
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default)
        .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.to_string());
    let mut selector = spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.to_string());
    ReplicaSetSpec {
        replicas: Some(replicas),
        min_ready_seconds: spec.min_ready_seconds,
        selector,
        template: Some(template),
    }
}

/// Whether a ReplicaSet's spec is `replica_set_spec` of the Deployment's, compared without
/// copying the pod template: a Deployment syncs at every status change of its pods, and
/// copying its template each time to compare was a fortieth of a simulated day.
fn follows_deployment(rs: &ReplicaSetSpec, spec: &DeploymentSpec, replicas: i32, hash: &str) -> bool {
    let Some(template) = rs.template.as_ref() else { return false };
    rs.replicas == Some(replicas)
        && rs.min_ready_seconds == spec.min_ready_seconds
        && rs.selector.match_expressions == spec.selector.match_expressions
        && labels_with_hash(rs.selector.match_labels.as_ref(), spec.selector.match_labels.as_ref(), hash)
        && template.spec == spec.template.spec
        && metadata_with_hash(template.metadata.as_ref(), spec.template.metadata.as_ref(), hash)
}

/// Whether `hashed` is `labels` (none: empty) with the template-hash label set to `hash`.
fn labels_with_hash(
    hashed: Option<&BTreeMap<String, String>>,
    labels: Option<&BTreeMap<String, String>>,
    hash: &str,
) -> bool {
    let Some(hashed) = hashed else { return false };
    let expected_len = labels.map_or(1, |l| l.len() + usize::from(!l.contains_key(POD_TEMPLATE_HASH_LABEL)));
    hashed.len() == expected_len
        && hashed.iter().all(|(key, value)| match key.as_str() {
            POD_TEMPLATE_HASH_LABEL => value == hash,
            _ => labels.and_then(|l| l.get(key)) == Some(value),
        })
}

/// Whether `hashed` is the template's metadata `meta` (none: empty) with the template-hash label
/// added. Beside the labels, copies without labels are compared (metadata is small), so that no
/// field of `ObjectMeta` is left out.
fn metadata_with_hash(hashed: Option<&ObjectMeta>, meta: Option<&ObjectMeta>, hash: &str) -> bool {
    let Some(hashed) = hashed else { return false };
    let without_labels = |m: &ObjectMeta| ObjectMeta { labels: None, ..m.clone() };
    labels_with_hash(hashed.labels.as_ref(), meta.and_then(|m| m.labels.as_ref()), hash)
        && without_labels(hashed) == meta.map(without_labels).unwrap_or_default()
}

impl MemoryCluster {
    pub(in crate::memory) fn sync_deployment(&mut self, key: &ObjectKey) {
        let Some(deployment) = self.deployments.get(key).cloned() else { return };
        let Some(spec) = deployment.spec.as_ref() else { return };
        let replicas = spec.replicas.unwrap_or(1);
        let hash = template_hash(key);
        let rs_key = ObjectKey::new(&key.namespace, format!("{}-{hash}", key.name));

        let follows = |rs: &ReplicaSet| rs.spec.as_ref().is_some_and(|s| follows_deployment(s, spec, replicas, &hash));
        match self.replicasets.get(&rs_key).cloned() {
            None => {
                let desired = replica_set_spec(spec, replicas, &hash);
                let labels = desired.template.as_ref().and_then(|t| t.metadata.as_ref()).and_then(|m| m.labels.clone());
                let rs = ReplicaSet {
                    metadata: ObjectMeta {
                        name: Some(rs_key.name.clone()),
                        namespace: Some(rs_key.namespace.clone()),
                        uid: Some(self.new_uid()),
                        creation_timestamp: Some(Time(self.now())),
                        generation: Some(1),
                        labels,
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
            Some(rs) if !follows(&rs) => {
                let mut rs = (*rs).clone();
                rs.spec = Some(replica_set_spec(spec, replicas, &hash));
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
            // Let go of this reference: the stored object is then edited in place, unless
            // something else holds it.
            drop(deployment);
            self.deployments.update(key, |deployment| deployment.status = Some(status));
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
            // In the order kept where they are stored: only the pods removed are copied out.
            let removed =
                self.pods_by_owner.get(&uid).map(|pods| pods.first_to_remove(count - desired)).unwrap_or_default();
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
            let owner = rs.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true)).cloned();
            // As for a Deployment's status: edited in place when nothing else holds it.
            drop(rs);
            self.replicasets.update(key, |rs| rs.status = Some(status));
            if let Some(owner) = owner
                && let Some(workload) = Workload::from_owner(&owner.kind, &key.namespace, &owner.name)
            {
                self.mark_dirty(workload);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    fn deployment_spec(template_labels: Option<BTreeMap<String, String>>, image: &str) -> DeploymentSpec {
        DeploymentSpec {
            replicas: Some(3),
            selector: LabelSelector { match_labels: labels(&[("app", "web")]), match_expressions: None },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: template_labels, ..Default::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container { name: "c".into(), image: Some(image.into()), ..Default::default() }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }
    }

    /// The comparison without copies answers what comparing with a spec made afresh answers,
    /// for specs that follow and specs that differ in each part.
    #[test]
    fn a_replica_set_follows_its_deployment_exactly_when_its_spec_is_the_one_made_afresh() {
        let hash = "abc123";
        let deployments = [
            deployment_spec(labels(&[("app", "web")]), "nginx:1"),
            deployment_spec(labels(&[("app", "web"), (POD_TEMPLATE_HASH_LABEL, "old")]), "nginx:1"),
            deployment_spec(None, "nginx:1"),
            DeploymentSpec { selector: LabelSelector::default(), ..deployment_spec(labels(&[]), "nginx:1") },
        ];
        for spec in &deployments {
            let made = replica_set_spec(spec, 3, hash);
            let mut variants = vec![made.clone()];
            variants.push(ReplicaSetSpec { replicas: Some(4), ..made.clone() });
            variants.push(ReplicaSetSpec { min_ready_seconds: Some(5), ..made.clone() });
            variants.push(replica_set_spec(&deployment_spec(labels(&[("app", "web")]), "nginx:2"), 3, hash));
            variants.push(replica_set_spec(spec, 3, "other"));
            variants.push(ReplicaSetSpec { template: None, ..made.clone() });
            let mut extra_label = made.clone();
            extra_label.selector.match_labels.get_or_insert_with(Default::default).insert("x".into(), "y".into());
            variants.push(extra_label);
            let mut no_selector_labels = made.clone();
            no_selector_labels.selector.match_labels = None;
            variants.push(no_selector_labels);
            let mut annotated = made.clone();
            if let Some(meta) = annotated.template.as_mut().and_then(|t| t.metadata.as_mut()) {
                meta.annotations = labels(&[("note", "1")]);
            }
            variants.push(annotated);
            let mut unlabelled = made.clone();
            if let Some(meta) = unlabelled.template.as_mut().and_then(|t| t.metadata.as_mut()) {
                meta.labels = None;
            }
            variants.push(unlabelled);
            for (i, rs) in variants.iter().enumerate() {
                assert_eq!(follows_deployment(rs, spec, 3, hash), *rs == made, "variant {i} of {spec:?}");
            }
            assert!(follows_deployment(&made, spec, 3, hash), "the spec made afresh follows");
        }
    }
}
