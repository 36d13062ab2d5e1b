//! What the loop remembers between iterations and the decision reads: since when nodes have
//! been unneeded, which nodes were recently found unremovable, and the scale-down cooldowns;
//! and what it remembers of the cloud (its groups' instances).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use rustc_hash::FxHashMap;
use simulator::PodInfo;

use super::cloud::InstanceCache;
use super::plan::UnremovableReason;

#[derive(Clone, Debug, Default)]
pub struct LoopMemory {
    /// Node name → first time it was found unneeded (kept while it stays unneeded).
    pub unneeded_since: HashMap<String, Timestamp>,
    /// Node name → until when it is not re-simulated (`--unremovable-node-recheck-timeout`).
    pub unremovable_until: HashMap<String, (Timestamp, UnremovableReason)>,
    pub last_scale_up: Option<Timestamp>,
    pub last_scale_down_delete: Option<Timestamp>,
    pub last_scale_down_failure: Option<Timestamp>,
    /// The same per node group, for `--scale-down-delay-type-local`.
    pub group_scale_ups: HashMap<String, Timestamp>,
    pub group_scale_down_deletes: HashMap<String, Timestamp>,
    pub group_scale_down_failures: HashMap<String, Timestamp>,
    /// Nodes whose deletion the loop has started and not finished.
    pub deleting: HashSet<String>,
    /// The groups' cloud instances, read again only when they may have changed (upstream's
    /// instance cache); `plan` does not use it.
    pub instances: InstanceCache,
    /// `plan` has no history: treat every unneeded node as unneeded long enough, so the plan
    /// shows what the loop will do once the unneeded time has passed.
    pub assume_unneeded_long_enough: bool,
    /// The last decision's `PodInfo`s, reused for the pods that did not change since.
    pub pod_infos: PodInfoCache,
    /// The last decision's snapshot of the registered nodes and their pods, updated by deltas.
    pub snapshots: super::base_snapshot::SnapshotCache,
}

impl LoopMemory {
    /// The memory `plan` uses.
    pub fn for_plan() -> Self {
        LoopMemory { assume_unneeded_long_enough: true, ..Default::default() }
    }
}

/// `PodInfo`s by the pod they were built from, kept from one decision to the next: a pod that
/// did not change is the same `Arc<Pod>` in the next view (the reflector stores and the memory
/// cluster hand out the objects they hold), and its `PodInfo` (requests parsed, affinity
/// compiled) is a pure function of it. Only a memo: a cache that misses builds the same value.
///
/// The key is the pod's address; the entry holds the pod (inside the `PodInfo`), so the address
/// cannot be reused while the entry lives, and a hit is checked with `Arc::ptr_eq` besides.
/// Each decision keeps only the entries of the pods it saw: an entry is stamped with the
/// decision that last used it, and [`PodInfoGeneration::finish`] drops the others. One table,
/// one lookup per pod: a decision reads every pod of the cluster, so moving entries from one
/// table to the next was a large share of it.
/// Behind a mutex because the decision reads the loop's memory through a shared reference.
#[derive(Default)]
pub struct PodInfoCache {
    infos: Mutex<PodInfoTable>,
}

#[derive(Default)]
struct PodInfoTable {
    /// Pod address → (the decision that last used the entry, its `PodInfo`).
    entries: FxHashMap<usize, (u64, Arc<PodInfo>)>,
    /// The number of the last decision.
    generation: u64,
}

impl Clone for PodInfoCache {
    /// An empty cache: a copy of the memory needs none of it to decide the same.
    fn clone(&self) -> Self {
        PodInfoCache::default()
    }
}

impl std::fmt::Debug for PodInfoCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.infos.lock().map_or(0, |m| m.entries.len());
        write!(f, "PodInfoCache({len} pods)")
    }
}

impl PodInfoCache {
    /// Starts a decision's use of the cache; [`PodInfoGeneration::finish`] ends it.
    pub fn next_generation(&self) -> PodInfoGeneration<'_> {
        let mut table = self.infos.lock().unwrap_or_else(|e| e.into_inner());
        table.generation += 1;
        PodInfoGeneration { table, used: 0 }
    }
}

/// One decision's `PodInfo`s: those reused from the previous decision and those built now.
pub struct PodInfoGeneration<'a> {
    table: std::sync::MutexGuard<'a, PodInfoTable>,
    /// Entries stamped with this decision so far.
    used: usize,
}

impl PodInfoGeneration<'_> {
    /// The `PodInfo` of `pod`: the previous decision's when the pod is the same object, else
    /// a new one.
    pub fn get(&mut self, pod: &Arc<Pod>) -> Arc<PodInfo> {
        let key = Arc::as_ptr(pod) as usize;
        let table = &mut *self.table;
        let generation = table.generation;
        match table.entries.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let (stamp, info) = e.get_mut();
                if !Arc::ptr_eq(&info.pod, pod) {
                    // Unreachable while the entry holds the pod; kept as the check of a memo.
                    *info = Arc::new(PodInfo::new(pod.clone()));
                }
                if *stamp != generation {
                    *stamp = generation;
                    self.used += 1;
                }
                info.clone()
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                self.used += 1;
                e.insert((generation, Arc::new(PodInfo::new(pod.clone())))).1.clone()
            }
        }
    }

    /// Keeps this decision's entries for the next one (the others are dropped).
    pub fn finish(mut self) {
        let table = &mut *self.table;
        if self.used != table.entries.len() {
            let generation = table.generation;
            table.entries.retain(|_, (stamp, _)| *stamp == generation);
        }
    }
}
