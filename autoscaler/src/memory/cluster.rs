//! `MemoryCluster`: the object store, the fake controllers and the virtual-time driver entry
//! point (`advance`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cloudprovider_memory::{MemoryCloudProvider, SharedTime};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::jiff::Timestamp;
use rustc_hash::FxHashMap as HashMap;
use simulator::labels::Selector;
use simulator::{NodeInfo, PodInfo};

use super::config::MemoryClusterConfig;
use super::label_index::LabelIndex;
use super::scheduler::SchedulerState;
use super::store::{Kind, ObjectKey};
use crate::control::schedule::UnschedulablePodSignal;
use crate::core::ClusterView;
use crate::ports::Event;

/// An Event as recorded, with the virtual time it was recorded at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedEvent {
    pub at: Timestamp,
    pub event: Event,
}

/// A workload whose controller must look at it again.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Workload {
    Deployment(ObjectKey),
    ReplicaSet(ObjectKey),
    StatefulSet(ObjectKey),
    Job(ObjectKey),
    DaemonSet(ObjectKey),
}

impl Workload {
    /// The workload a controller reference of a pod (or ReplicaSet) in `namespace` points at.
    pub(super) fn from_owner(kind: &str, namespace: &str, name: &str) -> Option<Workload> {
        let key = ObjectKey::new(namespace, name);
        Some(match kind {
            "Deployment" => Workload::Deployment(key),
            "ReplicaSet" => Workload::ReplicaSet(key),
            "StatefulSet" => Workload::StatefulSet(key),
            "Job" => Workload::Job(key),
            "DaemonSet" => Workload::DaemonSet(key),
            _ => return None,
        })
    }
}

/// Something due at a virtual time. Pod timers carry the pod's uid, so a timer of a deleted pod
/// never acts on a newer pod of the same name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Timer {
    NodeReady(String),
    PodStart(ObjectKey, String),
    PodComplete(ObjectKey, String),
    PodGone(ObjectKey, String),
    JobExpire(ObjectKey, String),
}

/// An in-memory Kubernetes cluster: a store of objects plus fake controllers, kubelets and
/// scheduler, all synchronous and deterministic, moved forward by [`MemoryCluster::advance`].
/// See the module documentation for the rules it follows.
pub struct MemoryCluster {
    pub(super) config: MemoryClusterConfig,
    pub(super) time: SharedTime,
    pub(super) cloud: Option<Arc<MemoryCloudProvider>>,

    pub(super) nodes: Kind<Node>,
    /// Node name → the node without pods, for DaemonSet placement checks.
    pub(super) node_infos: BTreeMap<String, Arc<NodeInfo>>,
    // The indexes below are looked up for every pod, every step: a fast hash (the keys are
    // the cluster's own names; no map here is iterated where its order could show).
    pub(super) nodes_by_provider_id: HashMap<String, String>,
    pub(super) pods: Kind<Pod>,
    /// Every pod in its compact form (what the view hands out), converted through `interner`.
    pub(super) pod_infos: Kind<PodInfo>,
    pub(super) interner: simulator::pod::PodInterner,
    pub(super) pods_by_node: HashMap<String, BTreeSet<ObjectKey>>,
    /// Owner uid → its pods (the objects, kept current by every store of a pod, so that a
    /// controller reads its pods without looking each one up).
    pub(super) pods_by_owner: HashMap<String, super::pods::OwnedPods>,
    /// The pods `core::classify::is_unschedulable` holds for, so readers find them without a scan.
    pub(super) unschedulable: BTreeSet<ObjectKey>,
    /// Counts the changes of `unschedulable`: a reader that saw this count has seen the set.
    pub(super) unschedulable_changes: u64,
    /// (namespace, label key, label value) → pods, so PDBs and pod autoscalers find their pods
    /// without a scan.
    pub(super) pods_by_label: LabelIndex,
    /// Counts the stores and removals of pods: `selected` was answered at this count.
    pub(super) pods_version: u64,
    /// The last answer of `selected_pods`: a pod autoscaler's sync asks for its target's pods,
    /// then the metrics source for the same pods (a thousand lookups each, every 15 s).
    pub(super) selected: Option<Selected>,
    pub(super) deployments: Kind<Deployment>,
    pub(super) replicasets: Kind<ReplicaSet>,
    pub(super) statefulsets: Kind<StatefulSet>,
    pub(super) jobs: Kind<Job>,
    pub(super) daemonsets: Kind<DaemonSet>,
    pub(super) replication_controllers: Kind<ReplicationController>,
    pub(super) pdbs: Kind<PodDisruptionBudget>,
    pub(super) config_maps: Kind<ConfigMap>,
    pub(super) namespaces: Kind<Namespace>,
    /// HorizontalPodAutoscalers are stored and listed here; the embedded HPA loop reads them
    /// and acts through the `scale` port, so the cluster runs no HPA controller of its own.
    pub(super) hpas: Kind<HorizontalPodAutoscaler>,
    /// WatermarkPodAutoscalers (a CRD: stored and listed only; their controller is embedded).
    pub(super) wpas: Vec<Arc<crate::hpa::wpa::WatermarkPodAutoscaler>>,
    /// Storage (see `volumes.rs`): claims, volumes, classes and CSINodes.
    pub(super) persistent_volume_claims: Kind<PersistentVolumeClaim>,
    pub(super) persistent_volumes: Kind<PersistentVolume>,
    pub(super) storage_classes: Kind<StorageClass>,
    pub(super) csi_nodes: Kind<CSINode>,
    pub(super) events: Vec<RecordedEvent>,

    pub(super) timers: BTreeSet<(Timestamp, Timer)>,
    pub(super) dirty: BTreeSet<Workload>,
    /// PDBs whose status must be recomputed.
    pub(super) dirty_pdbs: BTreeSet<ObjectKey>,
    /// Every PDB's compiled `spec.selector`, and what its status counts of its pods.
    pub(super) pdb_states: BTreeMap<ObjectKey, super::controllers::pdb::PdbState>,
    pub(super) scheduler: SchedulerState,
    /// Per owner uid, the number of the next pod name (`<owner>-<n>`).
    pub(super) pod_name_counters: HashMap<String, u64>,
    pub(super) next_uid: u64,
    /// Where new unschedulable pods are reported, as the kube adapter's pod watch reports them.
    pub(super) unschedulable_pods: Arc<UnschedulablePodSignal>,
}

/// One answer of `MemoryCluster::selected_pods`, and what it answered.
#[derive(Debug)]
pub(super) struct Selected {
    pods_version: u64,
    namespace: String,
    selector: Selector,
    pods: Vec<Arc<PodInfo>>,
}

impl MemoryCluster {
    /// An empty cluster on the virtual time `time`. With a provider, every [`advance`] registers
    /// the Nodes of instances that became ready and removes those of deleted instances; the
    /// groups' initial instances register on the first advance.
    ///
    /// [`advance`]: MemoryCluster::advance
    pub fn new(config: MemoryClusterConfig, time: SharedTime, cloud: Option<Arc<MemoryCloudProvider>>) -> Self {
        let mut cluster = MemoryCluster {
            config,
            time,
            cloud,
            nodes: Kind::default(),
            node_infos: BTreeMap::new(),
            nodes_by_provider_id: HashMap::default(),
            pods: Kind::default(),
            pod_infos: Kind::keyed_by(|pod: &PodInfo| (pod.namespace(), pod.name())),
            interner: Default::default(),
            pods_by_node: HashMap::default(),
            pods_by_owner: HashMap::default(),
            unschedulable: BTreeSet::new(),
            unschedulable_changes: 0,
            pods_by_label: LabelIndex::default(),
            pods_version: 0,
            selected: None,
            deployments: Kind::default(),
            replicasets: Kind::default(),
            statefulsets: Kind::default(),
            jobs: Kind::default(),
            daemonsets: Kind::default(),
            replication_controllers: Kind::default(),
            pdbs: Kind::default(),
            config_maps: Kind::default(),
            namespaces: Kind::default(),
            hpas: Kind::default(),
            wpas: Vec::new(),
            persistent_volume_claims: Kind::default(),
            persistent_volumes: Kind::default(),
            storage_classes: Kind::default(),
            csi_nodes: Kind::default(),
            events: Vec::new(),
            timers: BTreeSet::new(),
            dirty: BTreeSet::new(),
            dirty_pdbs: BTreeSet::new(),
            pdb_states: BTreeMap::new(),
            scheduler: SchedulerState::default(),
            pod_name_counters: HashMap::default(),
            next_uid: 1,
            unschedulable_pods: Arc::new(UnschedulablePodSignal::new()),
        };
        // Every claim of this cluster is known (none yet): the volume filters are on from the start.
        cluster.refresh_volume_index();
        cluster
    }

    pub fn config(&self) -> &MemoryClusterConfig {
        &self.config
    }

    /// Where the cluster reports pods the scheduler (or anything else) marked unschedulable,
    /// at the virtual time it did (`control::schedule`).
    pub fn unschedulable_pods(&self) -> Arc<UnschedulablePodSignal> {
        self.unschedulable_pods.clone()
    }

    pub fn time(&self) -> &SharedTime {
        &self.time
    }

    pub fn now(&self) -> Timestamp {
        self.time.now()
    }

    /// Moves the shared virtual time to `now` (never backwards) and lets the cluster catch up,
    /// in this order:
    /// 1. the cloud: Nodes of instances that became ready register (NotReady for
    ///    `node_startup_delay`), Nodes of deleted instances go away with their pods;
    /// 2. everything due by `now`, in time order: nodes turning Ready, kubelets starting bound
    ///    pods, pods finishing their run (→ Succeeded), terminating pods disappearing after
    ///    their grace period, finished Jobs expiring (`ttlSecondsAfterFinished`);
    /// 3. the controllers (Deployments, ReplicaSets, StatefulSets, Jobs, DaemonSets), until
    ///    they have nothing left to do;
    /// 4. the scheduler, for pending pods, when something relevant changed;
    /// 5. the controllers and the scheduler once more, for what the first scheduling pass
    ///    changed (workload statuses counting the pods just bound, replacements of preempted
    ///    pods);
    /// 6. PodDisruptionBudget statuses.
    ///
    /// Kubelets run before the controllers so that a pod that finished or went away in this
    /// step is already replaced in this step. A pod bound in this step runs from the next one.
    pub fn advance(&mut self, now: Timestamp) {
        let now = self.time.advance_to(now);
        self.sync_cloud();
        self.fire_timers(now);
        for _ in 0..2 {
            self.run_controllers();
            self.schedule();
        }
        self.sync_pdbs();
    }

    /// One consistent view of every object, as the autoscaler reads it. Cheap: each kind's list
    /// is cached until that kind changes, and handing it out copies pointers only.
    pub fn view(&mut self) -> ClusterView {
        ClusterView {
            nodes: self.nodes.list(),
            pods: self.pod_infos.shared(),
            pdbs: self.pdbs.list(),
            daemonsets: self.daemonsets.list(),
            replicasets: self.replicasets.list(),
            statefulsets: self.statefulsets.list(),
            jobs: self.jobs.list(),
            replication_controllers: self.replication_controllers.list(),
            deployments: self.deployments.list(),
            config_maps: self.config_maps.list(),
            namespaces: self.namespaces.list(),
            hpas: self.hpas.list(),
            wpas: self.wpas.clone(),
            persistent_volume_claims: self.persistent_volume_claims.list(),
            persistent_volumes: self.persistent_volumes.list(),
            storage_classes: self.storage_classes.list(),
            csi_nodes: self.csi_nodes.list(),
            volumes_observed: true,
        }
    }

    /// The workloads a scale target can name (Deployments, StatefulSets, ReplicaSets), without
    /// the rest of the view: enough for `podscaling::ScaleTargets`, and cheap however many pods
    /// there are.
    pub fn workloads_view(&mut self) -> ClusterView {
        ClusterView {
            deployments: self.deployments.list(),
            statefulsets: self.statefulsets.list(),
            replicasets: self.replicasets.list(),
            ..ClusterView::default()
        }
    }

    /// The selector of a scale target's workload, as `podscaling::ScaleTargets` reads it from a
    /// view (`None` when the cluster has no such workload, or it has no spec), found by key: the
    /// simulation's metrics source asks at each pod autoscaler sync.
    pub fn scale_target_selector(&self, target: &crate::ports::ScaleTarget) -> Option<Selector> {
        use crate::podscaling::Workload;
        let key = ObjectKey::new(target.namespace.as_str(), target.name.as_str());
        let workload = match target.kind.as_str() {
            "Deployment" => Workload::Deployment(self.deployments.get(&key)?),
            "StatefulSet" => Workload::StatefulSet(self.statefulsets.get(&key)?),
            "ReplicaSet" => Workload::ReplicaSet(self.replicasets.get(&key)?),
            _ => return None,
        };
        Some(Selector::from_label_selector(Some(workload.label_selector()?)))
    }

    /// The pod autoscalers and the workloads they may target, without the pods (the memory
    /// cluster's `selected_pods` answers for every selector): `ClusterReader::pod_autoscaler_view`.
    pub fn pod_autoscaler_view(&mut self) -> ClusterView {
        ClusterView { hpas: self.hpas.list(), wpas: self.wpas.clone(), ..self.workloads_view() }
    }

    /// Every WatermarkPodAutoscaler, in the order they were added.
    pub fn wpas(&self) -> &[Arc<crate::hpa::wpa::WatermarkPodAutoscaler>] {
        &self.wpas
    }

    /// Adds (or replaces, by namespace and name) a WatermarkPodAutoscaler.
    pub fn apply_wpa(&mut self, wpa: crate::hpa::wpa::WatermarkPodAutoscaler) {
        let same = |w: &Arc<crate::hpa::wpa::WatermarkPodAutoscaler>| {
            w.metadata.namespace == wpa.metadata.namespace && w.metadata.name == wpa.metadata.name
        };
        self.wpas.retain(|w| !same(w));
        self.wpas.push(Arc::new(wpa));
    }

    /// Every Event recorded so far, oldest first.
    pub fn events(&self) -> &[RecordedEvent] {
        &self.events
    }

    /// Appends an Event, stamped with the current virtual time.
    pub fn record_event(&mut self, event: Event) {
        let at = self.now();
        self.events.push(RecordedEvent { at, event });
    }

    pub fn node(&self, name: &str) -> Option<&Arc<Node>> {
        self.nodes.get(&ObjectKey::cluster(name))
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<&Arc<Pod>> {
        self.pods.get(&ObjectKey::new(namespace, name))
    }

    pub fn deployment(&self, namespace: &str, name: &str) -> Option<&Arc<Deployment>> {
        self.deployments.get(&ObjectKey::new(namespace, name))
    }

    pub fn replica_set(&self, namespace: &str, name: &str) -> Option<&Arc<ReplicaSet>> {
        self.replicasets.get(&ObjectKey::new(namespace, name))
    }

    pub fn stateful_set(&self, namespace: &str, name: &str) -> Option<&Arc<StatefulSet>> {
        self.statefulsets.get(&ObjectKey::new(namespace, name))
    }

    pub fn job(&self, namespace: &str, name: &str) -> Option<&Arc<Job>> {
        self.jobs.get(&ObjectKey::new(namespace, name))
    }

    pub fn daemon_set(&self, namespace: &str, name: &str) -> Option<&Arc<DaemonSet>> {
        self.daemonsets.get(&ObjectKey::new(namespace, name))
    }

    pub fn pdb(&self, namespace: &str, name: &str) -> Option<&Arc<PodDisruptionBudget>> {
        self.pdbs.get(&ObjectKey::new(namespace, name))
    }

    pub fn config_map(&self, namespace: &str, name: &str) -> Option<&Arc<ConfigMap>> {
        self.config_maps.get(&ObjectKey::new(namespace, name))
    }

    pub fn persistent_volume_claim(&self, namespace: &str, name: &str) -> Option<&Arc<PersistentVolumeClaim>> {
        self.persistent_volume_claims.get(&ObjectKey::new(namespace, name))
    }

    pub fn persistent_volume(&self, name: &str) -> Option<&Arc<PersistentVolume>> {
        self.persistent_volumes.get(&ObjectKey::cluster(name))
    }

    pub fn hpa(&self, namespace: &str, name: &str) -> Option<&Arc<HorizontalPodAutoscaler>> {
        self.hpas.get(&ObjectKey::new(namespace, name))
    }

    /// Every HorizontalPodAutoscaler, in namespace / name order.
    pub fn hpas(&mut self) -> Vec<Arc<HorizontalPodAutoscaler>> {
        self.hpas.list()
    }

    /// Every node, in name order.
    pub fn nodes(&self) -> impl Iterator<Item = &Arc<Node>> {
        self.nodes.iter().map(|(_, node)| node)
    }

    /// Every pod, in namespace / name order.
    pub fn pods(&self) -> impl Iterator<Item = &Arc<Pod>> {
        self.pods.iter().map(|(_, pod)| pod)
    }

    /// The pods the scheduler left unschedulable (`core::classify::is_unschedulable`), in
    /// namespace / name order.
    pub fn unschedulable_pods_now(&self) -> impl Iterator<Item = (&ObjectKey, &Arc<Pod>)> {
        self.unschedulable.iter().filter_map(|key| self.pods.get(key).map(|pod| (key, pod)))
    }

    /// How many times the set of `unschedulable_pods_now` has changed: the same count means
    /// the same pods.
    pub fn unschedulable_changes(&self) -> u64 {
        self.unschedulable_changes
    }

    /// The pods of a namespace that `selector` selects, in name order (as a scan of
    /// `view().pods` finds them): through the label index when the selector requires a label
    /// value, so a workload's pods are found without reading the others.
    pub fn selected_pods(&mut self, namespace: &str, selector: &Selector) -> Vec<Arc<PodInfo>> {
        if let Some(last) = &self.selected
            && last.pods_version == self.pods_version
            && last.namespace == namespace
            && last.selector == *selector
        {
            return last.pods.clone();
        }
        let pods = self.select_pods(namespace, selector);
        self.selected = Some(Selected {
            pods_version: self.pods_version,
            namespace: namespace.to_string(),
            selector: selector.clone(),
            pods: pods.clone(),
        });
        pods
    }

    fn select_pods(&self, namespace: &str, selector: &Selector) -> Vec<Arc<PodInfo>> {
        let selects = |pod: &&Arc<PodInfo>| selector.matches(pod.labels());
        match selector.required_equality() {
            Some((label, value)) => self
                .pods_by_label
                .get(namespace, label, value)
                .into_iter()
                .flatten()
                .map(|(_, pod)| pod)
                .filter(selects)
                .cloned()
                .collect(),
            None => self.pod_infos.in_namespace(namespace).map(|(_, pod)| pod).filter(selects).cloned().collect(),
        }
    }

    /// The pods of one namespace, in name order (as `view().pods` lists them).
    pub fn pods_in_namespace<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a Arc<Pod>> + 'a {
        self.pods.in_namespace(namespace).map(|(_, pod)| pod)
    }

    /// The pods bound to a node, in namespace / name order.
    pub fn pods_on_node(&self, node: &str) -> Vec<Arc<Pod>> {
        self.pods_by_node.get(node).into_iter().flatten().filter_map(|key| self.pods.get(key).cloned()).collect()
    }

    pub(super) fn new_uid(&mut self) -> String {
        let n = self.next_uid;
        self.next_uid += 1;
        format!("00000000-0000-4000-8000-{n:012x}")
    }

    pub(super) fn add_timer(&mut self, at: Timestamp, timer: Timer) {
        self.timers.insert((at, timer));
    }

    /// Queues a workload for its controller.
    pub(super) fn mark_dirty(&mut self, workload: Workload) {
        self.dirty.insert(workload);
    }

    /// The PDBs that count a workload's replicas must look again (its replica count changed, or
    /// it goes): those selecting one of its pods, the only ones whose expected count reads it
    /// (`controllers::pdb`: a pod's controller, through a ReplicaSet to its Deployment, by
    /// name). A workload without pods counts in no PDB; its pods, once created, mark the PDBs
    /// selecting them. Marking every PDB of the namespace instead made each scale step cost
    /// the pods of all of them: a day's steps grow with its workloads, so that was quadratic.
    pub(super) fn mark_pdbs_of_workload(&mut self, kind: &str, key: &ObjectKey) {
        if self.pdbs.in_namespace(&key.namespace).next().is_none() {
            return;
        }
        let uid_of = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| meta.uid.clone();
        let owners: Vec<String> = match kind {
            "Deployment" => self
                .replicasets
                .in_namespace(&key.namespace)
                .filter(|(_, rs)| {
                    rs.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|o| o.controller == Some(true) && o.kind == "Deployment" && o.name == key.name)
                })
                .filter_map(|(_, rs)| uid_of(&rs.metadata))
                .collect(),
            "ReplicaSet" => self.replicasets.get(key).and_then(|o| uid_of(&o.metadata)).into_iter().collect(),
            "StatefulSet" => self.statefulsets.get(key).and_then(|o| uid_of(&o.metadata)).into_iter().collect(),
            "ReplicationController" => {
                self.replication_controllers.get(key).and_then(|o| uid_of(&o.metadata)).into_iter().collect()
            }
            _ => Vec::new(),
        };
        // Each PDB keeps the controllers of the pods it selects (`PdbState`): no pod is read.
        let start = ObjectKey::new(&key.namespace, "");
        let keys: Vec<ObjectKey> = self
            .pdb_states
            .range(start..)
            .take_while(|(k, _)| k.namespace == key.namespace)
            .filter(|(_, state)| owners.iter().any(|uid| state.pods.counts_pods_of(uid)))
            .map(|(k, _)| k.clone())
            .collect();
        self.dirty_pdbs.extend(keys);
    }

    pub(super) fn mark_all_daemonsets_dirty(&mut self) {
        let keys = self.daemonsets.keys();
        self.dirty.extend(keys.into_iter().map(Workload::DaemonSet));
    }

    fn fire_timers(&mut self, now: Timestamp) {
        while let Some((at, _)) = self.timers.first()
            && *at <= now
        {
            let (at, timer) = self.timers.pop_first().expect("a first timer exists");
            match timer {
                Timer::NodeReady(name) => self.node_becomes_ready(&name, at),
                Timer::PodStart(key, uid) => self.start_pod(&key, &uid, at),
                Timer::PodComplete(key, uid) => self.complete_pod(&key, &uid, at),
                Timer::PodGone(key, uid) => self.pod_grace_period_over(&key, &uid),
                Timer::JobExpire(key, uid) => self.expire_job(&key, &uid),
            }
        }
    }
}
