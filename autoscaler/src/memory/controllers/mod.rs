//! The workload controllers: each syncs one workload when something about it changed (its
//! spec, or one of its pods), and they run until none has anything left to do.

mod daemonset;
mod job;
pub(super) mod pdb;
mod replicas;
mod statefulset;

use std::cmp::Reverse;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;

use super::cluster::{MemoryCluster, Workload};
use super::pods::{bound_node, creation, phase, ready_condition};
use super::store::ObjectKey;

/// Enough rounds for a Deployment → ReplicaSet → pods → ReplicaSet status → Deployment status
/// chain; anything left waits for the next advance.
const MAX_ROUNDS: usize = 6;

pub(super) fn controller_ref(api_version: &str, kind: &str, meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Where a pod stands in kube-controller-manager's order for removing replicas
/// (`ActivePodsWithRanks`), first removed first: unbound before bound, Pending before Running,
/// not Ready before Ready, Ready for less time before longer, newer before older. Pods that
/// rank the same are taken by name, for determinism.
pub(super) type RemovalRank = (bool, u8, bool, Reverse<Option<Timestamp>>, Reverse<Option<Timestamp>>);

pub(super) fn removal_rank(p: &Pod) -> RemovalRank {
    let phase_rank = match phase(p) {
        "Pending" => 0,
        "Running" => 2,
        _ => 1,
    };
    // The Ready condition found once.
    let ready = ready_condition(p);
    (
        bound_node(p).is_some(),
        phase_rank,
        ready.is_some(),
        Reverse(ready.and_then(|c| c.last_transition_time.as_ref()).map(|t| t.0)),
        Reverse(creation(&p.metadata)),
    )
}

/// The `count` pods to remove first (`removal_rank`, then name). Only the pods removed are put
/// in order: a ramp removes a few of hundreds.
pub(super) fn first_to_remove<'p>(pods: impl IntoIterator<Item = &'p Arc<Pod>>, count: usize) -> Vec<Arc<Pod>> {
    if count == 0 {
        return Vec::new();
    }
    let rank = |p: &'p Arc<Pod>| (removal_rank(p), p.metadata.name.as_deref().unwrap_or(""));
    let mut ranked: Vec<_> = pods.into_iter().map(|p| (rank(p), p)).collect();
    let count = count.min(ranked.len());
    // Names are unique among a controller's pods: the ranks are distinct, unstable is exact.
    if count < ranked.len() {
        ranked.select_nth_unstable_by(count - 1, |a, b| a.0.cmp(&b.0));
        ranked.truncate(count);
    }
    ranked.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    ranked.into_iter().map(|(_, p)| p.clone()).collect()
}

impl MemoryCluster {
    pub(super) fn run_controllers(&mut self) {
        for _ in 0..MAX_ROUNDS {
            if self.dirty.is_empty() {
                break;
            }
            for workload in std::mem::take(&mut self.dirty) {
                match &workload {
                    Workload::Deployment(key) => self.sync_deployment(key),
                    Workload::ReplicaSet(key) => self.sync_replica_set(key),
                    Workload::StatefulSet(key) => self.sync_stateful_set(key),
                    Workload::Job(key) => self.sync_job(key),
                    Workload::DaemonSet(key) => self.sync_daemon_set(key),
                }
                // The sync saw the changes it made to its own pods.
                self.dirty.remove(&workload);
            }
        }
    }

    /// The pods a controller owns (by uid), in namespace / name order.
    pub(super) fn owned_pods(&self, owner_uid: &str) -> Vec<Arc<Pod>> {
        self.pods_by_owner.get(owner_uid).into_iter().flat_map(|pods| pods.values().cloned()).collect()
    }

    pub(super) fn terminate_pods(&mut self, pods: &[Arc<Pod>]) {
        for pod in pods {
            let grace = self.grace_of(pod);
            self.terminate_pod(&ObjectKey::of(&pod.metadata), grace);
        }
    }
}
