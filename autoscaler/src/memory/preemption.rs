//! Preemption, after kube-scheduler's DefaultPreemption, simplified: a pending pod that fits
//! nowhere may evict pods of lower priority from one node to make room.
//!
//! - Pods with `preemptionPolicy: Never` never preempt, and neither does a pod whose priority
//!   no placed pod is below (nothing to preempt; the search over every node is skipped).
//! - Per node: if the pod fits once every lower-priority pod (not already terminating) is gone,
//!   those pods are added back highest priority first (then oldest) while the pod still fits;
//!   the ones that cannot come back are the victims.
//! - The node chosen has the lowest highest-victim priority, then the lowest sum of victim
//!   priorities, then the fewest victims, then the smallest name. (kube-scheduler first
//!   minimizes PodDisruptionBudget violations; this model does not look at PDBs here.)
//! - The victims are deleted with their grace period and the pod is nominated to the node
//!   (`status.nominatedNodeName`). It stays Pending, and does not preempt again while victims
//!   on its nominated node are still terminating; when they are gone, the capacity freed
//!   triggers a new scheduling pass in which it goes first (it has the higher priority).

use std::cmp::Reverse;
use std::sync::Arc;

use simulator::{NodeId, PodInfo};

use super::cluster::MemoryCluster;
use super::pods::{PodChange, is_terminating};
use super::store::ObjectKey;

impl MemoryCluster {
    /// Terminates lower-priority pods for the pod and nominates it to their node, when that
    /// lets it fit somewhere.
    pub(super) fn preempt_for(&mut self, key: &ObjectKey, pod: &Arc<PodInfo>) {
        let Some(stored) = self.pods.get(key).cloned() else { return };
        let spec = stored.spec.as_ref();
        if spec.and_then(|s| s.preemption_policy.as_deref()) == Some("Never") {
            return;
        }
        // No placed pod has a lower priority: no node has a victim (most clusters run every
        // pod at one priority, and this spares reading every pod for each pending one).
        if pod.priority <= self.lowest_placed_priority() {
            return;
        }
        let nominated = stored.status.as_ref().and_then(|s| s.nominated_node_name.clone());
        if let Some(node) = &nominated {
            let victims_leaving = self.pods_by_node.get(node).into_iter().flatten().any(|k| {
                self.pods.get(k).is_some_and(|p| is_terminating(p))
                    && self.pod_infos.get(k).is_some_and(|i| i.priority < pod.priority)
            });
            if victims_leaving {
                return;
            }
        }
        let Some((node, victims)) = self.choose_victims(pod) else { return };
        for victim in &victims {
            let victim_key = ObjectKey::new(victim.namespace(), victim.name());
            let grace = self.pods.get(&victim_key).map_or(self.config.default_termination_grace, |p| self.grace_of(p));
            self.terminate_pod(&victim_key, grace);
        }
        if let Some(stored) = self.pods.get(key) {
            let mut nominated_pod = (**stored).clone();
            nominated_pod.status.get_or_insert_with(Default::default).nominated_node_name = Some(node);
            self.put_pod(nominated_pod, PodChange::Status);
        }
    }

    /// The node to preempt on and its victims, if preemption can help anywhere.
    fn choose_victims(&mut self, pod: &PodInfo) -> Option<(String, Vec<Arc<PodInfo>>)> {
        let snapshot = &mut self.scheduler.snapshot;
        let ids: Vec<NodeId> = snapshot.nodes().map(|(id, _)| id).collect();
        // Highest victim priority, sum of victim priorities, victim count, node name.
        type Rank = (i32, i64, usize, String);
        let mut best: Option<(Rank, Vec<Arc<PodInfo>>)> = None;
        for id in ids {
            let Some(node) = snapshot.node(id) else { continue };
            let name = node.name.to_string();
            let mut candidates: Vec<Arc<PodInfo>> =
                node.pods.iter().filter(|p| p.priority < pod.priority && !p.terminating).cloned().collect();
            if candidates.is_empty() {
                continue;
            }
            snapshot.fork();
            for candidate in &candidates {
                let _ = snapshot.remove_pod(&candidate.key);
            }
            if snapshot.check_pod(pod, id).is_err() {
                snapshot.revert();
                continue;
            }
            candidates.sort_by_cached_key(|p| (Reverse(p.priority), p.created(), p.key.clone()));
            let mut victims = Vec::new();
            for candidate in candidates {
                if snapshot.add_pod(candidate.clone(), id).is_err() {
                    continue;
                }
                if snapshot.check_pod(pod, id).is_err() {
                    let _ = snapshot.remove_pod(&candidate.key);
                    victims.push(candidate);
                }
            }
            snapshot.revert();
            if victims.is_empty() {
                // The pod fits as is: not a preemption case (another filter changed meanwhile).
                continue;
            }
            let highest = victims.iter().map(|v| v.priority).max().unwrap_or(i32::MIN);
            let sum: i64 = victims.iter().map(|v| i64::from(v.priority)).sum();
            let rank = (highest, sum, victims.len(), name);
            if best.as_ref().is_none_or(|(b, _)| rank < *b) {
                best = Some((rank, victims));
            }
        }
        best.map(|((_, _, _, name), victims)| (name, victims))
    }
}
