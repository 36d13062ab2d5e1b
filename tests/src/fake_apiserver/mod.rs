//! An in-process fake Kubernetes API server for tests: plain HTTP on `127.0.0.1:<random port>`,
//! good enough for kube-rs's real client, watcher, reflector, patch, eviction, scale and Lease
//! code, and for `kubectl`.
//!
//! # Starting it
//!
//! ```no_run
//! # async fn demo() {
//! use tests::fake_apiserver::FakeApiServer;
//! let server = FakeApiServer::start().await;            // or FakeApiServer::builder()…start()
//! let client = server.client();                         // a kube::Client (default retry policy)
//! let config = server.kube_config();                    // a kube::Config to build your own
//! let yaml = server.kubeconfig_yaml();                  // for kubectl --kubeconfig
//! # }
//! ```
//! `FakeApiServer::builder().watermark_pod_autoscalers(true).start()` also serves (and makes
//! discoverable) `datadoghq.com/v1alpha1 watermarkpodautoscalers`; `.cluster_api(true)` serves
//! Cluster API's `cluster.x-k8s.io/v1beta1` machinedeployments, machinesets and machinepools
//! (with `status` and `scale`) and machines, and an infrastructure template kind,
//! `infrastructure.cluster.x-k8s.io/v1beta1 dockermachinetemplates`; `.cluster_api_v1beta2(true)`
//! the same at `v1beta2` (preferred when both are on; each version stores its own objects, there
//! is no conversion). Dropping the server closes its watches and stops it.
//!
//! # What it serves
//!
//! - Discovery: `/version`, `/api`, `/apis`, `/api/v1`, `/apis/{group}`, `/apis/{group}/{version}`
//!   (with subresources listed as `pods/eviction`, `deployments/scale`, …), `/healthz`, `/readyz`.
//! - Resources ([`resources::RESOURCES`]): core/v1 nodes, pods, configmaps, events, namespaces,
//!   replicationcontrollers; apps/v1 deployments, replicasets, statefulsets, daemonsets; batch/v1
//!   jobs; policy/v1 poddisruptionbudgets; coordination.k8s.io/v1 leases; events.k8s.io/v1
//!   events; autoscaling/v2 horizontalpodautoscalers; core/v1 persistentvolumeclaims and
//!   persistentvolumes, storage.k8s.io/v1 storageclasses and csinodes (what the scheduler's volume
//!   filters read); optionally the WPA CRD and the Cluster API CRDs.
//! - Paths: cluster-scoped (`/api/v1/nodes/n1`), namespaced (`/apis/apps/v1/namespaces/ns/deployments/d`)
//!   and all-namespaces lists (`/api/v1/pods`).
//! - Verbs: get; list with `labelSelector` (`=`, `==`, `!=`, `in`, `notin`, exists, `!`),
//!   `fieldSelector` (any dotted field path, `=`/`==`/`!=`, missing fields read as `""`), `limit`
//!   and `continue`; watch (`?watch=true`, below); create (`201`, `409 AlreadyExists`,
//!   `generateName`); update (`409 Conflict` when `metadata.resourceVersion` is stale; an
//!   empty one is unconditional); patch with `application/merge-patch+json`,
//!   `application/strategic-merge-patch+json` (keyed merging of the usual lists; taints are
//!   replaced whole, as upstream) and `application/json-patch+json` (a failed `test` is `422`);
//!   a merge or strategic patch naming `metadata.resourceVersion` is a precondition (`409`);
//!   server-side apply is `415`; delete (immediate, answers the last state); deletecollection.
//!   Every write bumps one global resource version.
//! - Subresources: `status` (get/update/patch touch only `.status`); `scale` on deployments,
//!   replicasets, statefulsets, replicationcontrollers and Cluster API's machinedeployments,
//!   machinesets and machinepools (an `autoscaling/v1 Scale` with
//!   `status.selector` as a string; update with a stale `metadata.resourceVersion` is `409`);
//!   `pods/{name}/eviction`: `201` and the pod deleted when allowed; `429 TooManyRequests` when the
//!   one PDB selecting the pod has `status.disruptionsAllowed < 1`; `500` when several do; `404`
//!   for a missing pod; an allowed eviction decrements the PDB's `disruptionsAllowed`; Pending,
//!   Succeeded, Failed and terminating pods skip the budget. Every eviction is recorded with the
//!   `deleteOptions.gracePeriodSeconds` it carried ([`FakeApiServer::evictions`]).
//! - Watches: newline-delimited JSON events (`ADDED`, `MODIFIED`, `DELETED`, `ERROR`). Without a
//!   `resourceVersion` (or `"0"`) every current object comes first as `ADDED`; from a version,
//!   the changes after it are replayed and then live ones follow. A version older than the last
//!   compaction answers an in-stream `ERROR` with a `410 Expired` Status, as a real server does.
//!   Objects entering or leaving a watch's selectors arrive as `ADDED` / `DELETED`.
//!   `timeoutSeconds` closes the stream. `sendInitialEvents=true` ends the initial objects
//!   with an `initial-events-end` bookmark; no other bookmarks are sent.
//!
//! Lists always answer the current state at the current version (a `resourceVersion` or
//! `resourceVersionMatch` parameter is accepted and ignored; `limit` is honoured even with
//! `resourceVersion=0`, where a real server's watch cache may answer everything at once). A
//! `continue` token names the last object of its page, as a real server's does: the next page
//! starts after it, so paging through N objects costs O(N), and objects created meanwhile
//! appear in their place.
//!
//! Objects are stored as their JSON text and sent as stored, so the server holds and serves
//! hundreds of thousands of pods (the load harness, `src/bin/load-harness/`): a list without
//! selectors copies bytes and parses nothing.
//!
//! Not served: authentication (any token is accepted), admission, defaulting, validation,
//! finalizers and graceful deletion, garbage collection, server-side apply, protobuf, tables
//! (kubectl gets plain lists), OpenAPI documents.
//!
//! # Test hooks
//!
//! - Objects: [`FakeApiServer::seed`] (typed, create or replace), [`FakeApiServer::seed_value`]
//!   (JSON with `apiVersion` and `kind`), [`FakeApiServer::seed_values`] (many at once),
//!   [`FakeApiServer::get`], [`FakeApiServer::list`],
//!   [`FakeApiServer::modify`] (an out-of-band write, as another client would make),
//!   [`FakeApiServer::remove`], and their JSON forms for custom resources
//!   ([`FakeApiServer::get_value`], [`FakeApiServer::list_values`],
//!   [`FakeApiServer::modify_value`], [`FakeApiServer::remove_value`]); each notifies watches like
//!   an API write.
//! - Aggregated APIs: [`FakeApiServer::serve_document`] (a fixed JSON answer to `GET <path>`).
//! - Faults: [`FakeApiServer::inject_fault`] with a [`Fault`] (the next N requests of a verb to an
//!   exact path answer a status, e.g. `500`, `503`, `409`); [`FakeApiServer::clear_faults`].
//! - Watches: [`FakeApiServer::expire_watches`] (compaction: open watches get `410 Gone` and
//!   any resume from an older version too, so clients must list again);
//!   [`FakeApiServer::drop_watches`] (open watch connections end without an error, so clients
//!   resume from their last version); [`FakeApiServer::active_watches`].
//! - Observation: [`FakeApiServer::request_count`] per verb and path,
//!   [`FakeApiServer::requests`] (method, verb, path, query, content type, status),
//!   [`FakeApiServer::evictions`], [`FakeApiServer::resource_version`].

mod handlers;
mod patch;
pub mod resources;
mod selectors;
mod store;
mod watch;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;

use resources::{Catalog, RESOURCES};
pub use store::{EvictionRecord, Fault, RequestRecord, Verb, now_rfc3339};
use store::{Notice, Shared, Stored, WriteError, object_key};

/// Options of a fake API server.
#[derive(Debug, Clone, Default)]
pub struct FakeApiServerBuilder {
    catalog: Catalog,
}

impl FakeApiServerBuilder {
    /// Serve the `datadoghq.com/v1alpha1` WatermarkPodAutoscaler CRD (off by default).
    pub fn watermark_pod_autoscalers(mut self, enabled: bool) -> Self {
        self.catalog.watermark_pod_autoscalers = enabled;
        self
    }

    /// Serve the Cluster API CRDs at `cluster.x-k8s.io/v1beta1` and the infrastructure template
    /// kind `infrastructure.cluster.x-k8s.io/v1beta1 DockerMachineTemplate` (off by default).
    pub fn cluster_api(mut self, enabled: bool) -> Self {
        self.catalog.cluster_api = enabled;
        self
    }

    /// Serve the Cluster API CRDs at `cluster.x-k8s.io/v1beta2` (and the template kind).
    pub fn cluster_api_v1beta2(mut self, enabled: bool) -> Self {
        self.catalog.cluster_api_v1beta2 = enabled;
        self
    }

    /// Binds `127.0.0.1:0` and serves in a background task of the current runtime.
    pub async fn start(self) -> FakeApiServer {
        let shared = Arc::new(Shared::new(self.catalog));
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binding 127.0.0.1:0 for the fake API server");
        let addr = listener.local_addr().expect("a bound listener has an address");
        let app = Router::new().fallback(handlers::handle).with_state((shared.clone(), addr.to_string()));
        let (shutdown, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        FakeApiServer { shared, addr, shutdown: Some(shutdown) }
    }
}

/// A running fake API server; see the module documentation.
pub struct FakeApiServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        let _ = self.shared.notices.send(Notice::Drop(None));
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

fn resource_of<K: k8s_openapi::Resource>(catalog: &Catalog) -> usize {
    catalog.find_kind(K::API_VERSION, K::KIND).unwrap_or_else(|| {
        panic!(
            "the fake API server does not serve {}/{} (enable it in the builder, or add it to RESOURCES)",
            K::API_VERSION,
            K::KIND
        )
    })
}

fn key_of(resource: usize, namespace: Option<&str>, name: &str) -> (String, String) {
    let ns = if RESOURCES[resource].namespaced { namespace.unwrap_or("default") } else { "" };
    (ns.to_string(), name.to_string())
}

fn decode<K: DeserializeOwned>(object: &Stored) -> K {
    serde_json::from_slice(&object.json)
        .unwrap_or_else(|e| panic!("stored object does not decode as the requested type: {e}"))
}

impl FakeApiServer {
    pub fn builder() -> FakeApiServerBuilder {
        FakeApiServerBuilder::default()
    }

    /// A server with the default options.
    pub async fn start() -> FakeApiServer {
        Self::builder().start().await
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kube config for this server (default namespace `default`, kube's default retry policy).
    pub fn kube_config(&self) -> kube::Config {
        kube::Config::new(self.url().parse().expect("the server URL is a valid URI"))
    }

    /// A kube client with kube's defaults.
    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.kube_config()).expect("a plain-HTTP kube client builds")
    }

    /// A kubeconfig file's content pointing at this server (for `kubectl --kubeconfig` or
    /// `--kubeconfig` flags).
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: fake-token\n",
            self.url()
        )
    }

    /// The current global resource version.
    pub fn resource_version(&self) -> u64 {
        self.shared.lock().resource_version
    }

    /// Stores an object (creating or replacing it) as an API write would, and returns it as
    /// stored (with uid, creationTimestamp and resourceVersion).
    pub fn seed<K>(&self, object: &K) -> K
    where
        K: k8s_openapi::Resource + Serialize + DeserializeOwned,
    {
        resource_of::<K>(&self.shared.catalog);
        let value = serde_json::to_value(object).expect("Kubernetes objects serialize");
        let stored = self.seed_value(value).unwrap_or_else(|e| panic!("seeding failed: {e}"));
        serde_json::from_value(stored).unwrap_or_else(|e| panic!("the seeded object does not decode: {e}"))
    }

    /// Stores a JSON object (it must carry `apiVersion`, `kind` and `metadata.name`), creating or
    /// replacing it.
    pub fn seed_value(&self, object: Value) -> Result<Value, String> {
        self.store_value(&mut self.shared.lock(), object).map(|stored| stored.value())
    }

    /// [`FakeApiServer::seed_value`] for many objects at once, under one lock (watches see the
    /// writes in order), without reading them back: how the load harness fills a big cluster.
    /// Stops at the first object refused.
    pub fn seed_values(&self, objects: impl IntoIterator<Item = Value>) -> Result<(), String> {
        let mut state = self.shared.lock();
        objects.into_iter().try_for_each(|object| self.store_value(&mut state, object).map(drop))
    }

    fn store_value(&self, state: &mut store::State, object: Value) -> Result<Arc<Stored>, String> {
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        let resource = self
            .shared
            .catalog
            .find_kind(&api_version, &kind)
            .ok_or_else(|| format!("the fake API server does not serve {api_version:?} {kind:?}"))?;
        if object.pointer("/metadata/name").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(format!("a seeded {kind} needs metadata.name"));
        }
        let key = object_key(&RESOURCES[resource], &object);
        let stored = if state.get(resource, &key).is_some() {
            state.replace(&self.shared.notices, resource, &key, object, None)
        } else {
            state.create(&self.shared.notices, resource, object)
        };
        stored.map_err(|e| format!("seeding {kind} {}/{} failed: {e:?}", key.0, key.1))
    }

    /// The stored object, if any. `namespace` is ignored for cluster-scoped kinds.
    pub fn get<K>(&self, namespace: Option<&str>, name: &str) -> Option<K>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        let resource = resource_of::<K>(&self.shared.catalog);
        self.shared.lock().get(resource, &key_of(resource, namespace, name)).map(|v| decode(&v))
    }

    /// Every stored object of a kind, ordered by namespace and name.
    pub fn list<K>(&self) -> Vec<K>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        let resource = resource_of::<K>(&self.shared.catalog);
        self.shared.lock().all(resource).iter().map(|v| decode(v)).collect()
    }

    /// Changes a stored object out of band (as another client would), bumping its version.
    /// Returns the new state, or `None` when the object does not exist.
    pub fn modify<K>(&self, namespace: Option<&str>, name: &str, change: impl FnOnce(&mut K)) -> Option<K>
    where
        K: k8s_openapi::Resource + Serialize + DeserializeOwned,
    {
        let resource = resource_of::<K>(&self.shared.catalog);
        let key = key_of(resource, namespace, name);
        let mut state = self.shared.lock();
        let mut object: K = decode(&*state.get(resource, &key)?);
        change(&mut object);
        let value = serde_json::to_value(&object).expect("Kubernetes objects serialize");
        let stored = state.replace(&self.shared.notices, resource, &key, value, None).ok()?;
        Some(decode(&stored))
    }

    /// Deletes a stored object as an API delete would; `false` when it did not exist.
    pub fn remove<K>(&self, namespace: Option<&str>, name: &str) -> bool
    where
        K: k8s_openapi::Resource,
    {
        let resource = resource_of::<K>(&self.shared.catalog);
        let key = key_of(resource, namespace, name);
        !matches!(self.shared.lock().delete(&self.shared.notices, resource, &key), Err(WriteError::NotFound))
    }

    /// The stored object of a kind without a Rust type (a custom resource), by `apiVersion` and
    /// `kind`, as JSON. `namespace` is ignored for cluster-scoped kinds.
    pub fn get_value(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let resource = self.shared.catalog.find_kind(api_version, kind)?;
        self.shared.lock().value(resource, &key_of(resource, namespace, name))
    }

    /// Every stored object of a kind, as JSON, ordered by namespace and name.
    pub fn list_values(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let Some(resource) = self.shared.catalog.find_kind(api_version, kind) else { return Vec::new() };
        self.shared.lock().all(resource).iter().map(|v| v.value()).collect()
    }

    /// [`FakeApiServer::modify`] for a kind without a Rust type: changes the JSON out of band.
    pub fn modify_value(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> Option<Value> {
        let resource = self.shared.catalog.find_kind(api_version, kind)?;
        let key = key_of(resource, namespace, name);
        let mut state = self.shared.lock();
        let mut object = state.value(resource, &key)?;
        change(&mut object);
        state.replace(&self.shared.notices, resource, &key, object, None).ok().map(|v| v.value())
    }

    /// [`FakeApiServer::remove`] for a kind without a Rust type.
    pub fn remove_value(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> bool {
        let Some(resource) = self.shared.catalog.find_kind(api_version, kind) else { return false };
        let key = key_of(resource, namespace, name);
        !matches!(self.shared.lock().delete(&self.shared.notices, resource, &key), Err(WriteError::NotFound))
    }

    /// Makes the next `fault.times` matching requests fail with `fault.status`.
    pub fn inject_fault(&self, fault: Fault) {
        if fault.times > 0 {
            self.shared.lock().faults.push(fault);
        }
    }

    /// Answers `GET path` (whatever the query) with `document` from now on: an aggregated API the
    /// server does not model, such as `/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods` or the
    /// discovery document `/apis/custom.metrics.k8s.io`.
    pub fn serve_document(&self, path: &str, document: Value) {
        let json = serde_json::to_vec(&document).expect("JSON values serialize");
        self.shared.lock().documents.insert(path.to_string(), json.into());
    }

    /// The injected faults not used up yet (a fault is taken when its request arrives, even if
    /// the client gives up before the answer).
    pub fn pending_faults(&self) -> Vec<Fault> {
        self.shared.lock().faults.clone()
    }

    pub fn clear_faults(&self) {
        self.shared.lock().faults.clear();
    }

    /// Compacts the history: every open watch gets an in-stream `410 Gone` and closes, and any
    /// watch or continue token from an older version is `410` too, so clients list again.
    pub fn expire_watches(&self) {
        let mut state = self.shared.lock();
        state.compact();
        let _ = self.shared.notices.send(Notice::Gone(None));
    }

    /// Ends every open watch connection without an error; clients resume from their last
    /// version and get the changes they missed.
    pub fn drop_watches(&self) {
        let _state = self.shared.lock();
        let _ = self.shared.notices.send(Notice::Drop(None));
    }

    /// How many watch streams are open now.
    pub fn active_watches(&self) -> usize {
        self.shared.active_watches()
    }

    /// How many requests of this verb reached this exact path (without the query), faults
    /// included.
    pub fn request_count(&self, verb: Verb, path: &str) -> usize {
        self.shared.lock().requests.iter().filter(|r| r.verb == Some(verb) && r.path == path).count()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.lock().requests.clone()
    }

    /// Every eviction request received so far, in order, whatever its outcome.
    pub fn evictions(&self) -> Vec<EvictionRecord> {
        self.shared.lock().evictions.clone()
    }
}
