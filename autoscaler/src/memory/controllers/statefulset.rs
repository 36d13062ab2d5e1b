//! StatefulSets: pods `<name>-<ordinal>` for ordinals `0..replicas`. With the default
//! `OrderedReady` policy, one pod at a time: the lowest missing ordinal is created once every
//! lower one is Running and Ready, and on scale-down the highest ordinal goes first, one at a
//! time, once the others are Running and Ready. `Parallel` creates and deletes all at once. A
//! pod that is terminating is replaced (same name) only after it is gone. Each pod gets the
//! claims of the `volumeClaimTemplates` for its ordinal, created when missing and kept after it
//! goes, so a recreated pod uses the same volumes.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSetStatus;
use k8s_openapi::api::core::v1::Pod;

use super::super::cluster::MemoryCluster;
use super::super::pods::{is_ready, is_terminal, is_terminating, phase};
use super::super::store::ObjectKey;
use super::controller_ref;

pub const STATEFULSET_POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

fn running_and_ready(pod: &Pod) -> bool {
    phase(pod) == "Running" && is_ready(pod) && !is_terminating(pod)
}

impl MemoryCluster {
    pub(in crate::memory) fn sync_stateful_set(&mut self, key: &ObjectKey) {
        let Some(ss) = self.statefulsets.get(key).cloned() else { return };
        let Some(spec) = ss.spec.as_ref() else { return };
        let replicas = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
        let parallel = spec.pod_management_policy.as_deref() == Some("Parallel");
        let uid = ss.metadata.uid.clone().unwrap_or_default();
        let prefix = format!("{}-", key.name);
        let mut by_ordinal: BTreeMap<usize, Arc<Pod>> = BTreeMap::new();
        for pod in self.owned_pods(&uid) {
            let ordinal =
                pod.metadata.name.as_deref().and_then(|n| n.strip_prefix(&prefix)).and_then(|o| o.parse().ok());
            if let Some(ordinal) = ordinal {
                by_ordinal.insert(ordinal, pod);
            }
        }
        // Finished pods of a StatefulSet are deleted and recreated.
        let finished: Vec<Arc<Pod>> = by_ordinal.values().filter(|p| is_terminal(p)).cloned().collect();
        self.terminate_pods(&finished);
        by_ordinal.retain(|_, p| !is_terminal(p));

        let template = spec.template.clone();
        let owner = controller_ref("apps/v1", "StatefulSet", &ss.metadata);
        let service = spec.service_name.clone();
        let create = |cluster: &mut MemoryCluster, ordinal: usize| {
            let claims = cluster.stateful_set_claims(&ss, ordinal);
            let name = format!("{}-{ordinal}", key.name);
            let labels = [(STATEFULSET_POD_NAME_LABEL, name.clone()), (POD_INDEX_LABEL, ordinal.to_string())];
            let hostname = name.clone();
            let subdomain = service.clone();
            cluster.create_pod(
                ObjectKey::new(&key.namespace, name),
                &template,
                owner.clone(),
                &labels,
                &[],
                move |spec| {
                    spec.hostname = Some(hostname);
                    spec.subdomain = subdomain.filter(|s| !s.is_empty());
                    if !claims.is_empty() {
                        let volumes = spec.volumes.get_or_insert_with(Vec::new);
                        volumes.retain(|v| !claims.iter().any(|c| c.name == v.name));
                        volumes.extend(claims);
                    }
                },
            );
        };
        let condemned: Vec<Arc<Pod>> =
            by_ordinal.range(replicas..).rev().map(|(_, p)| p.clone()).filter(|p| !is_terminating(p)).collect();
        if parallel {
            for ordinal in 0..replicas {
                if !by_ordinal.contains_key(&ordinal) {
                    create(self, ordinal);
                }
            }
            self.terminate_pods(&condemned);
        } else {
            let mut all_ready = true;
            for ordinal in 0..replicas {
                match by_ordinal.get(&ordinal) {
                    None => {
                        create(self, ordinal);
                        all_ready = false;
                        break;
                    }
                    Some(pod) if !running_and_ready(pod) => {
                        all_ready = false;
                        break;
                    }
                    Some(_) => {}
                }
            }
            let any_leaving = by_ordinal.values().any(|p| is_terminating(p));
            if all_ready && !any_leaving {
                // One at a time, highest first. A pod that goes at once (unbound) leaves no
                // later change to wake this controller, so the next one goes now.
                for pod in &condemned {
                    self.terminate_pods(std::slice::from_ref(pod));
                    if self.pods.contains(&ObjectKey::of(&pod.metadata)) {
                        break;
                    }
                }
            }
        }

        let pods: Vec<Arc<Pod>> = self.owned_pods(&uid).into_iter().filter(|p| !is_terminal(p)).collect();
        let count = i32::try_from(pods.iter().filter(|p| !is_terminating(p)).count()).unwrap_or(i32::MAX);
        let ready = i32::try_from(pods.iter().filter(|p| running_and_ready(p)).count()).unwrap_or(i32::MAX);
        let status = StatefulSetStatus {
            observed_generation: ss.metadata.generation,
            replicas: count,
            current_replicas: Some(count),
            updated_replicas: Some(count),
            ready_replicas: Some(ready),
            available_replicas: Some(ready),
            ..Default::default()
        };
        if ss.status.as_ref() != Some(&status) {
            let mut ss = (*ss).clone();
            ss.status = Some(status);
            self.statefulsets.insert(key.clone(), Arc::new(ss));
        }
    }
}
