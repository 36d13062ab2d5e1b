//! The pod reflector. Pods are nearly all of a large cluster's objects (450,000 at 15,000 nodes,
//! about 5 KB of JSON each), so they are not kept by a kube-runtime reflector as the other
//! kinds are: each pod is converted once per version into its compact form
//! (`simulator::PodInfo`, its spec, labels and owners shared with the other replicas of its
//! workload through one `PodInterner`), and the initial list is read as it arrives — its text
//! cut into items by `json_scan`, each parsed lean (`Lean`: no `managedFields`) and converted at
//! once on a blocking thread — so neither the list's text nor its full objects are ever held
//! whole.
//!
//! The protocol is client-go's informer's, as kube-runtime's watcher follows it: a list from the
//! API server's watch cache (`resourceVersion=0`, unpaginated), then a watch from the list's
//! version with bookmarks; a watch that ends is started again from the last version seen, a
//! `410 Gone` (the version is too old) starts over with a list, and failures back off (800 ms
//! doubling to 30 s, with jitter, reset after two minutes of success). Meanwhile the store keeps
//! serving the last complete state; a relist replaces it at once when the list is complete.

use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use ::kube::api::{ListParams, WatchEvent, WatchParams};
use ::kube::runtime::utils::Backoff;
use ::kube::runtime::watcher::{self, DefaultBackoff};
use ::kube::{Api, Client};
use futures::{AsyncRead, AsyncReadExt, StreamExt};
use indexmap::IndexMap;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use rustc_hash::FxBuildHasher;
use simulator::pod::{PodInfo, PodInterner};
use tokio::sync::watch;

use super::lean::Lean;
use crate::core::view::SharedList;
use crate::json_scan::{ScanError, Scanner};

/// How long one watch request lasts before the server ends it (client-go picks 5–10 min).
const WATCH_TIMEOUT_SECONDS: u32 = 290;

/// The pods the reflector holds: by `namespace/name`, and the list `view()` hands out, made
/// again only after a change.
#[derive(Default)]
struct Pods {
    /// In the order of the list, then of arrival; a deleted pod's place is taken by the last
    /// one. The order survives the table's growth: the decision's kept snapshot compares each
    /// node's pods in order (`core::base_snapshot`), and a hash map's order, changed whenever
    /// it grew or rehashed, made it replace every node's pods (at 15,000 nodes, half a second).
    by_key: IndexMap<Arc<str>, Arc<PodInfo>, FxBuildHasher>,
    list: Option<SharedList<PodInfo>>,
}

/// The reflector's store: read by `KubeCluster::view`, written by the reflector's task.
pub(crate) struct PodStore {
    pods: RwLock<Pods>,
    /// True once the first list is complete.
    ready: watch::Sender<bool>,
}

impl Default for PodStore {
    fn default() -> Self {
        PodStore { pods: RwLock::default(), ready: watch::Sender::new(false) }
    }
}

impl PodStore {
    /// Every pod, in no particular order: the cached list itself, shared (one pointer copied).
    pub fn state(&self) -> SharedList<PodInfo> {
        if let Some(list) = &self.pods.read().unwrap_or_else(PoisonError::into_inner).list {
            return list.clone();
        }
        let mut pods = self.pods.write().unwrap_or_else(PoisonError::into_inner);
        let Pods { by_key, list } = &mut *pods;
        list.get_or_insert_with(|| by_key.values().cloned().collect()).clone()
    }

    /// Waits until the first list is complete; an error when the reflector has stopped first.
    pub async fn wait_until_ready(&self) -> Result<(), ()> {
        let mut ready = self.ready.subscribe();
        ready.wait_for(|ready| *ready).await.map(|_| ()).map_err(|_| ())
    }

    fn replace(&self, listed: Vec<Arc<PodInfo>>) {
        let by_key = listed.into_iter().map(|p| (p.key.clone(), p)).collect();
        *self.pods.write().unwrap_or_else(PoisonError::into_inner) = Pods { by_key, list: None };
        self.ready.send_replace(true);
    }

    fn apply(&self, pod: Arc<PodInfo>) {
        let mut pods = self.pods.write().unwrap_or_else(PoisonError::into_inner);
        pods.by_key.insert(pod.key.clone(), pod);
        pods.list = None;
    }

    fn delete(&self, key: &str) {
        let mut pods = self.pods.write().unwrap_or_else(PoisonError::into_inner);
        if pods.by_key.swap_remove(key).is_some() {
            pods.list = None;
        }
    }
}

/// What the reflector tells its observer, as kube-runtime's watcher events: `Init`, an
/// `InitApply` per listed pod and `InitDone` once the store holds the list; `Apply` and
/// `Delete` for the watch's changes, after the store has them.
pub(crate) type PodEvent = watcher::Event<Arc<PodInfo>>;

/// Why a list or a watch failed.
#[derive(Debug, thiserror::Error)]
enum WatchFailure {
    #[error("{0}")]
    Api(#[from] ::kube::Error),
    /// The version is too old to watch from: list again.
    #[error("the watch's resource version is too old (410 Gone)")]
    Gone,
    #[error("reading the pod list: {0}")]
    List(String),
}

/// Runs the reflector until the task is aborted: lists, watches, relists, backs off.
pub(crate) async fn reflect_pods(
    client: Client,
    store: Arc<PodStore>,
    server: String,
    mut observe: impl FnMut(&PodEvent) + Send + 'static,
) {
    let interner = Arc::new(Mutex::new(PodInterner::new()));
    let mut backoff = DefaultBackoff::default();
    let mut version: Option<String> = None;
    loop {
        let outcome = match version.clone() {
            None => list(&client, &interner, &store, &mut observe).await.map(|listed| version = Some(listed)),
            Some(from) => watch_from(&client, &from, &interner, &store, &mut observe, &mut version).await,
        };
        match outcome {
            Ok(()) => backoff.reset(),
            Err(WatchFailure::Gone) => {
                tracing::debug!(%server, "pod watch expired (410 Gone); listing again");
                version = None;
            }
            Err(error) => {
                super::reader::warn_watch_failed("Pod", &server, &error);
                tokio::time::sleep(backoff.next().unwrap_or(Duration::from_secs(30))).await;
            }
        }
    }
}

fn is_gone(error: &::kube::Error) -> bool {
    matches!(error, ::kube::Error::Api(status) if status.code == 410)
}

/// Lists every pod into the store; returns the list's resource version.
async fn list(
    client: &Client,
    interner: &Arc<Mutex<PodInterner>>,
    store: &PodStore,
    observe: &mut (impl FnMut(&PodEvent) + Send),
) -> Result<String, WatchFailure> {
    // From the watch cache, unpaginated, as client-go's informers list.
    let params = ListParams::default().match_any();
    let request = Api::<Pod>::all(client.clone()).resource_url().to_string();
    let request = ::kube::core::Request::new(request).list(&params).map_err(::kube::Error::BuildRequest)?;
    let body = client.request_stream(request).await?;
    let runtime = tokio::runtime::Handle::current();
    let interner = interner.clone();
    let read = tokio::task::spawn_blocking(move || {
        let input = BlockingRead { inner: Box::pin(body), runtime };
        let mut interner = interner.lock().unwrap_or_else(PoisonError::into_inner);
        read_pod_list(input, &mut interner)
    });
    let (pods, version) = match read.await {
        Ok(read) => read.map_err(WatchFailure::List)?,
        Err(join) => return Err(WatchFailure::List(format!("the list reader stopped: {join}"))),
    };
    observe(&PodEvent::Init);
    for pod in &pods {
        observe(&PodEvent::InitApply(pod.clone()));
    }
    store.replace(pods);
    observe(&PodEvent::InitDone);
    Ok(version)
}

/// Watches from `from` until the server ends the watch (`Ok`) or it fails; `version` follows
/// the last version seen.
async fn watch_from(
    client: &Client,
    from: &str,
    interner: &Mutex<PodInterner>,
    store: &PodStore,
    observe: &mut (impl FnMut(&PodEvent) + Send),
    version: &mut Option<String>,
) -> Result<(), WatchFailure> {
    let api: Api<Lean<Pod>> = Api::all(client.clone());
    let params = WatchParams::default().timeout(WATCH_TIMEOUT_SECONDS);
    let events = api.watch(&params, from).await.map_err(|e| if is_gone(&e) { WatchFailure::Gone } else { e.into() })?;
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| if is_gone(&e) { WatchFailure::Gone } else { e.into() })?;
        let (Lean(pod), deleted) = match event {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => (pod, false),
            WatchEvent::Deleted(pod) => (pod, true),
            WatchEvent::Bookmark(bookmark) => {
                *version = Some(bookmark.metadata.resource_version);
                continue;
            }
            WatchEvent::Error(status) if status.code == 410 => return Err(WatchFailure::Gone),
            WatchEvent::Error(status) => return Err(::kube::Error::Api(status).into()),
        };
        if let Some(seen) = pod.metadata.resource_version.clone() {
            *version = Some(seen);
        }
        let pod = Arc::new(PodInfo::interned(pod, &mut interner.lock().unwrap_or_else(PoisonError::into_inner)));
        if deleted {
            store.delete(&pod.key);
            observe(&PodEvent::Delete(pod));
        } else {
            store.apply(pod.clone());
            observe(&PodEvent::Apply(pod));
        }
    }
    Ok(())
}

/// The response body, read from a blocking thread: each read waits on the runtime for the next
/// bytes the connection delivers.
struct BlockingRead<R> {
    inner: std::pin::Pin<Box<R>>,
    runtime: tokio::runtime::Handle,
}

impl<R: AsyncRead> Read for BlockingRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.runtime.block_on(self.inner.read(buf))
    }
}

fn scan_error(error: ScanError) -> String {
    match error {
        ScanError::Io(e) => format!("the connection failed: {e}"),
        ScanError::Syntax { message, at } => format!("{message} at line {} column {}", at.line, at.column),
    }
}

/// Reads a `PodList` answer item by item: each pod parsed lean, converted through `interner`
/// and its text let go before the next is read. Returns the pods and the list's version.
fn read_pod_list(input: impl Read, interner: &mut PodInterner) -> Result<(Vec<Arc<PodInfo>>, String), String> {
    // Items are only cut from the answer, never compared: nothing is fingerprinted.
    let mut scanner = Scanner::locating(input, 0);
    scanner.expect(b'{', "expected a PodList object").map_err(scan_error)?;
    let mut pods = Vec::new();
    let mut version = None;
    let text_of =
        |scanner: &Scanner<_>, len: usize| -> String { String::from_utf8_lossy(&scanner.unread()[..len]).into_owned() };
    if scanner.peek().map_err(scan_error)? == Some(b'}') {
        return Err("the PodList has no resource version".into());
    }
    loop {
        let key = scanner.value().map_err(scan_error)?;
        let name: String = serde_json::from_str(&text_of(&scanner, key.len)).map_err(|e| format!("a key: {e}"))?;
        scanner.consume(key.len);
        scanner.expect(b':', "expected `:`").map_err(scan_error)?;
        match name.as_str() {
            "items" if scanner.peek().map_err(scan_error)? == Some(b'[') => {
                scanner.consume(1);
                read_items(&mut scanner, &mut pods, interner)?;
            }
            "metadata" => {
                let found = scanner.value().map_err(scan_error)?;
                let text = std::str::from_utf8(&scanner.unread()[..found.len]).map_err(|e| e.to_string())?;
                let meta: ListMeta = serde_json::from_str(text).map_err(|e| format!("the list's metadata: {e}"))?;
                version = meta.resource_version;
                scanner.consume(found.len);
            }
            _ => {
                let found = scanner.value().map_err(scan_error)?;
                scanner.consume(found.len);
            }
        }
        match scanner.peek().map_err(scan_error)? {
            Some(b',') => scanner.consume(1),
            Some(b'}') => break,
            _ => return Err(scan_error(scanner.error(0, "expected `,` or `}`"))),
        }
    }
    let version = version.filter(|v| !v.is_empty()).ok_or("the PodList has no resource version")?;
    Ok((pods, version))
}

/// The items of a list whose `[` was read, up to its `]`.
fn read_items(
    scanner: &mut Scanner<impl Read>,
    pods: &mut Vec<Arc<PodInfo>>,
    interner: &mut PodInterner,
) -> Result<(), String> {
    if scanner.peek().map_err(scan_error)? == Some(b']') {
        scanner.consume(1);
        return Ok(());
    }
    loop {
        let found = scanner.value().map_err(scan_error)?;
        let text = std::str::from_utf8(&scanner.unread()[..found.len]).map_err(|e| e.to_string())?;
        let Lean(pod): Lean<Pod> =
            serde_json::from_str(text).map_err(|e| format!("item {} of the PodList: {e}", pods.len()))?;
        pods.push(Arc::new(PodInfo::interned(pod, interner)));
        scanner.consume(found.len);
        match scanner.peek().map_err(scan_error)? {
            Some(b',') => scanner.consume(1),
            Some(b']') => {
                scanner.consume(1);
                return Ok(());
            }
            _ => return Err(scan_error(scanner.error(0, "expected `,` or `]`"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_json(name: &str) -> serde_json::Value {
        serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "7",
                "managedFields": [{"manager": "kubectl"}], "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        })
    }

    #[test]
    fn a_pod_list_is_read_item_by_item_into_shared_compact_pods() {
        let list = serde_json::json!({
            "kind": "PodList", "apiVersion": "v1",
            "items": [pod_json("a"), pod_json("b")],
            "metadata": {"resourceVersion": "42"},
        });
        let text = serde_json::to_string_pretty(&list).unwrap();
        let (pods, version) = read_pod_list(text.as_bytes(), &mut PodInterner::new()).unwrap();
        assert_eq!(version, "42", "the version may come after the items");
        let names: Vec<&str> = pods.iter().map(|p| p.name()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(pods[0].requests().cpu_millis, 100);
        assert!(Arc::ptr_eq(&pods[0].shape, &pods[1].shape), "replicas share their spec");
    }

    /// The store's order is the list's, then arrival's, whatever the table's growth: a
    /// change moves no other pod (a deletion moves the last one into its place).
    #[test]
    fn the_store_keeps_its_order_through_growth_and_deletions() {
        let pod = |name: &str| Arc::new(PodInfo::from(serde_json::from_value::<Pod>(pod_json(name)).unwrap()));
        let names = |store: &PodStore| store.state().iter().map(|p| p.name().to_string()).collect::<Vec<_>>();
        let store = PodStore::default();
        store.replace(vec![pod("b"), pod("a"), pod("c")]);
        assert_eq!(names(&store), ["b", "a", "c"]);
        for i in 0..5000 {
            store.apply(pod(&format!("new-{i}")));
        }
        store.apply(pod("a"));
        assert_eq!(names(&store)[..4], ["b", "a", "c", "new-0"], "a pod changed keeps its place");
        store.delete("default/b");
        assert_eq!(names(&store)[..4], ["new-4999", "a", "c", "new-0"]);
        assert_eq!(names(&store).len(), 5002);
    }

    #[test]
    fn bad_lists_are_refused_with_where() {
        let refused = |text: &str| read_pod_list(text.as_bytes(), &mut PodInterner::new()).unwrap_err();
        assert!(refused(r#"{"items": []}"#).contains("no resource version"));
        assert!(refused(r#"{"metadata": {"resourceVersion": "1"}, "items": [{"metadata": 5}]}"#).contains("item 0"));
        assert!(refused(r#"{"metadata": {"resourceVersion": "1"}, "items": [{}"#).contains("expected `,` or `]`"));
        assert!(refused("[]").contains("expected a PodList"));
        let empty = read_pod_list(
            r#"{"metadata": {"resourceVersion": "3"}, "items": null}"#.as_bytes(),
            &mut PodInterner::new(),
        );
        assert_eq!(empty.map(|(p, v)| (p.len(), v)), Ok((0, "3".to_string())));
    }
}
