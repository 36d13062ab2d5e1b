//! The read side: kube-runtime reflectors for every kind the autoscaler decides on, copied into
//! a `ClusterView` on demand.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::kube::runtime::reflector::{self, Store};
use ::kube::runtime::{WatchStreamExt, watcher};
use ::kube::{Api, Client, Resource};
use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, ReplicationController,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;
use simulator::pod::PodInfo;
use tokio::task::JoinHandle;

use super::lean::Lean;
use super::pod_watch::{PodEvent, PodStore, reflect_pods};
use crate::control::schedule::{UnschedulablePodSignal, is_recently_unschedulable};
use crate::core::ClusterView;
use crate::hpa::wpa::WatermarkPodAutoscaler;
use crate::ports::{ClusterReader, PortError};

/// Options of [`KubeCluster`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeClusterOptions {
    /// `--namespace`: where the priority expander's ConfigMap lives.
    pub namespace: String,
    /// How long `view()` waits for the first sync of every store before answering
    /// `PortError::Transient`.
    pub sync_timeout: Duration,
    /// Watch WatermarkPodAutoscalers (only when the CRD exists: see `wpa_crd_installed`).
    pub watch_wpas: bool,
    /// The API server's URL, named in the log when a watch fails.
    pub server: String,
}

impl KubeClusterOptions {
    pub fn new(namespace: &str) -> Self {
        KubeClusterOptions {
            namespace: namespace.into(),
            sync_timeout: Duration::from_secs(10),
            watch_wpas: false,
            server: String::new(),
        }
    }
}

/// Reflectors over Nodes, Pods, PodDisruptionBudgets, DaemonSets, ReplicaSets, StatefulSets,
/// Deployments, Jobs, ReplicationControllers, Namespaces, HorizontalPodAutoscalers,
/// PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes (for the scheduler's
/// volume filters), WatermarkPodAutoscalers when asked (cluster-wide) and the priority
/// expander's ConfigMap (in `--namespace`).
///
/// Each reflector runs in its own task: kube-runtime's watcher lists (from the watch cache),
/// then watches from the list's version; a dropped connection resumes from the last version seen, a `410 Gone` starts
/// over with a fresh list, and errors back off (800 ms doubling to 30 s, with jitter). Meanwhile
/// its store keeps serving the last complete state. Objects are parsed without `managedFields`
/// (`Lean`) and trimmed (`core::compact`) as each is parsed.
pub struct KubeCluster {
    nodes: Store<Node>,
    pods: Arc<PodStore>,
    pdbs: Store<PodDisruptionBudget>,
    daemonsets: Store<DaemonSet>,
    replicasets: Store<ReplicaSet>,
    statefulsets: Store<StatefulSet>,
    deployments: Store<Deployment>,
    jobs: Store<Job>,
    replication_controllers: Store<ReplicationController>,
    config_maps: Store<ConfigMap>,
    namespaces: Store<Namespace>,
    hpas: Store<HorizontalPodAutoscaler>,
    persistent_volume_claims: Store<PersistentVolumeClaim>,
    persistent_volumes: Store<PersistentVolume>,
    storage_classes: Store<StorageClass>,
    csi_nodes: Store<CSINode>,
    wpas: Option<Store<WatermarkPodAutoscaler>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    sync_timeout: Duration,
    unschedulable_pods: Arc<UnschedulablePodSignal>,
}

/// Spawns a reflector for `api` and returns its store.
fn reflect<K>(api: Api<Lean<K>>, config: watcher::Config, server: &str, tasks: &mut Vec<JoinHandle<()>>) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    reflect_observed(api, config, server, tasks, |_| {})
}

/// `reflect`, with `observe` called on every event once the store holds it.
fn reflect_observed<K>(
    api: Api<Lean<K>>,
    config: watcher::Config,
    server: &str,
    tasks: &mut Vec<JoinHandle<()>>,
    mut observe: impl FnMut(&watcher::Event<K>) + Send + 'static,
) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let kind = K::kind(&()).to_string();
    let server = server.to_string();
    let stream = watcher(api, config).default_backoff().map_ok(unwrap_lean).reflect(writer);
    tasks.push(tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => observe(&event),
                Err(error) => warn_watch_failed(&kind, &server, &error),
            }
        }
    }));
    store
}

pub(super) fn warn_watch_failed(kind: &str, server: &str, error: &dyn std::error::Error) {
    // The whole chain: kube's own message stops at "client error (Connect)", the cause
    // ("Connection refused", a certificate, DNS) is in its sources.
    let mut cause = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        // Wrappers repeat their source's words: each text once.
        let text = s.to_string();
        if !cause.contains(&text) {
            cause.push_str(&format!(": {text}"));
        }
        source = s.source();
    }
    tracing::warn!(kind = %kind, %server, error = %cause, "watch failed; retrying with backoff");
}

/// The object of an event, without the `Lean` wrapper it was parsed in.
fn unwrap_lean<K>(event: watcher::Event<Lean<K>>) -> watcher::Event<K> {
    match event {
        watcher::Event::Apply(Lean(object)) => watcher::Event::Apply(object),
        watcher::Event::Delete(Lean(object)) => watcher::Event::Delete(object),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(Lean(object)) => watcher::Event::InitApply(object),
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

/// The pod watch's observer: new unschedulable pods go to `signal` (only two timestamps, never
/// a copy of a pod). Pods of a (re)list reach the store all at once when the list is complete,
/// so the signal for them waits until then: an iteration started in between would not see them.
fn observe_unschedulable(signal: Arc<UnschedulablePodSignal>) -> impl FnMut(&PodEvent) + Send + 'static {
    // The new unschedulable pods of a (re)list in progress: whether there is one, and the
    // oldest creation time among them (the schedule's window counts from it).
    let mut listed_new: Option<Option<Timestamp>> = None;
    let created = |pod: &PodInfo| pod.created();
    move |event| match event {
        watcher::Event::Apply(pod) => {
            let now = Timestamp::now();
            if is_recently_unschedulable(pod, now) {
                signal.record(now, created(pod));
            }
        }
        watcher::Event::Init => listed_new = None,
        watcher::Event::InitApply(pod) => {
            if is_recently_unschedulable(pod, Timestamp::now()) {
                let oldest = match (listed_new.flatten(), created(pod)) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                listed_new = Some(oldest);
            }
        }
        watcher::Event::InitDone => {
            if let Some(oldest) = listed_new.take() {
                signal.record(Timestamp::now(), oldest);
            }
        }
        watcher::Event::Delete(_) => {}
    }
}

impl KubeCluster {
    /// Where the pod watch reports new unschedulable pods (`control::schedule`).
    pub fn unschedulable_pods(&self) -> Arc<UnschedulablePodSignal> {
        self.unschedulable_pods.clone()
    }

    /// Starts the reflectors (in tasks of the current tokio runtime) with default options.
    pub fn start(client: Client, namespace: &str) -> KubeCluster {
        KubeCluster::start_with(client, KubeClusterOptions::new(namespace))
    }

    pub fn start_with(client: Client, options: KubeClusterOptions) -> KubeCluster {
        let mut tasks = Vec::new();
        // Lists read the API server's watch cache (`resourceVersion=0`), as client-go's
        // informers do: far cheaper for the server on big clusters.
        // Without a page size: kube sends `resourceVersion=0` only on unpaginated lists (with a
        // `limit` it drops it and the list goes to etcd, page after page, each spending the
        // client's rate limit).
        let all = || watcher::Config { page_size: None, ..watcher::Config::default().any_semantic() };
        let priority_config_map =
            all().fields(&format!("metadata.name={}", expander::priority::PRIORITY_CONFIG_MAP_NAME));
        let unschedulable_pods = Arc::new(UnschedulablePodSignal::new());
        KubeCluster {
            nodes: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            pods: {
                let store = Arc::new(PodStore::default());
                let observe = observe_unschedulable(unschedulable_pods.clone());
                tasks.push(tokio::spawn(reflect_pods(client.clone(), store.clone(), options.server.clone(), observe)));
                store
            },
            pdbs: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            daemonsets: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            replicasets: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            statefulsets: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            deployments: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            jobs: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            replication_controllers: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            config_maps: reflect(
                Api::namespaced(client.clone(), &options.namespace),
                priority_config_map,
                &options.server,
                &mut tasks,
            ),
            namespaces: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            hpas: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            persistent_volume_claims: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            persistent_volumes: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            storage_classes: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            csi_nodes: reflect(Api::all(client.clone()), all(), &options.server, &mut tasks),
            wpas: options.watch_wpas.then(|| reflect(Api::all(client), all(), &options.server, &mut tasks)),
            tasks: Mutex::new(tasks),
            sync_timeout: options.sync_timeout,
            unschedulable_pods,
        }
    }

    /// Waits until every store has completed its first list, at most `timeout`.
    pub async fn wait_synced(&self, timeout: Duration) -> Result<(), PortError> {
        let all_ready = async {
            // Any store's writer gone: the watches stopped.
            let stopped = |_| ();
            self.nodes.wait_until_ready().await.map_err(stopped)?;
            self.pods.wait_until_ready().await?;
            self.pdbs.wait_until_ready().await.map_err(stopped)?;
            self.daemonsets.wait_until_ready().await.map_err(stopped)?;
            self.replicasets.wait_until_ready().await.map_err(stopped)?;
            self.statefulsets.wait_until_ready().await.map_err(stopped)?;
            self.deployments.wait_until_ready().await.map_err(stopped)?;
            self.jobs.wait_until_ready().await.map_err(stopped)?;
            self.replication_controllers.wait_until_ready().await.map_err(stopped)?;
            self.config_maps.wait_until_ready().await.map_err(stopped)?;
            self.namespaces.wait_until_ready().await.map_err(stopped)?;
            self.hpas.wait_until_ready().await.map_err(stopped)?;
            self.persistent_volume_claims.wait_until_ready().await.map_err(stopped)?;
            self.persistent_volumes.wait_until_ready().await.map_err(stopped)?;
            self.storage_classes.wait_until_ready().await.map_err(stopped)?;
            self.csi_nodes.wait_until_ready().await.map_err(stopped)?;
            match &self.wpas {
                Some(wpas) => wpas.wait_until_ready().await.map_err(stopped),
                None => Ok(()),
            }
        };
        match tokio::time::timeout(timeout, all_ready).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(PortError::Transient("the watches stopped before the caches synced".into())),
            Err(_) => Err(PortError::Transient(format!("the caches have not synced after {timeout:?}"))),
        }
    }

    /// Stops the reflectors. The stores keep their last state; `view()` keeps answering it.
    pub fn stop(&self) {
        for task in self.tasks.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            task.abort();
        }
    }

    /// Whether the reflector tasks are running (not stopped, none ended).
    pub fn is_running(&self) -> bool {
        let tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        !tasks.is_empty() && tasks.iter().all(|t| !t.is_finished())
    }

    /// The stores' current contents, without waiting for a sync.
    pub fn snapshot(&self) -> ClusterView {
        ClusterView {
            nodes: self.nodes.state(),
            pods: self.pods.state(),
            pdbs: self.pdbs.state(),
            daemonsets: self.daemonsets.state(),
            replicasets: self.replicasets.state(),
            statefulsets: self.statefulsets.state(),
            jobs: self.jobs.state(),
            replication_controllers: self.replication_controllers.state(),
            deployments: self.deployments.state(),
            config_maps: self.config_maps.state(),
            namespaces: self.namespaces.state(),
            hpas: self.hpas.state(),
            wpas: self.wpas.as_ref().map(Store::state).unwrap_or_default(),
            persistent_volume_claims: self.persistent_volume_claims.state(),
            persistent_volumes: self.persistent_volumes.state(),
            storage_classes: self.storage_classes.state(),
            csi_nodes: self.csi_nodes.state(),
            volumes_observed: true,
        }
    }
}

impl Drop for KubeCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

#[async_trait]
impl ClusterReader for KubeCluster {
    /// Waits (up to the sync timeout) until every store has synced, then copies them.
    async fn view(&self) -> Result<ClusterView, PortError> {
        self.wait_synced(self.sync_timeout).await?;
        Ok(self.snapshot())
    }
}
