//! The server's state: objects by resource, the global resource version, the change history
//! that watches replay, and the test hooks' bookkeeping (faults, request counts, evictions).
//!
//! Objects are kept as their JSON text ([`Stored`]), serialized once per write: gets, lists and
//! watches send those bytes as they are, and only writes, selectors and the test hooks parse
//! them. A parsed `serde_json::Value` of a pod takes several times its JSON size, and the load
//! harness (`src/bin/load-harness.rs`) stores 450,000 pods; serving a list of them from values
//! would also re-serialize every page.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::resources::{Catalog, RESOURCES, ResourceDef};

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type ObjectKey = (String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// A stored object: its JSON text as served, and its namespace (`""` for cluster-scoped
/// objects) so that namespace filters need no parsing.
#[derive(Debug)]
pub struct Stored {
    pub namespace: String,
    pub json: Bytes,
}

impl Stored {
    fn new(namespace: &str, object: &Value) -> Arc<Stored> {
        let json = serde_json::to_vec(object).expect("JSON values serialize");
        Arc::new(Stored { namespace: namespace.to_string(), json: Bytes::from(json) })
    }

    /// The object, parsed.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json).expect("the store holds the JSON it serialized")
    }
}

/// One write, as watches see it.
#[derive(Debug)]
pub struct Change {
    pub resource_version: u64,
    pub resource: usize,
    pub kind: ChangeKind,
    /// The object before the write (for `Modified`: to tell selector entries and exits apart).
    pub old: Option<Arc<Stored>>,
    /// The object after the write; for `Deleted`, its last state with the deletion's version.
    pub new: Arc<Stored>,
}

/// What the store tells every open watch.
#[derive(Debug, Clone)]
pub enum Notice {
    Change(Arc<Change>),
    /// Close the connections (of one resource, or all) without an error: the client resumes
    /// from its last version.
    Drop(Option<usize>),
    /// Send `410 Gone` and close (one resource's watches, or all): the client must list again.
    Gone(Option<usize>),
}

/// The Kubernetes verb of a request, as the API server's audit log would name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

/// An injected failure: the next `times` requests matching `verb` (any when `None`) and `path`
/// (exact, without the query) answer `status` instead of being served — after `delay` when set.
/// A slow answer ([`Fault::slow`]) has no status: it is served normally after the delay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub verb: Option<Verb>,
    pub path: String,
    /// `None`: serve the request normally (after `delay`).
    pub status: Option<u16>,
    pub times: usize,
    pub message: String,
    pub delay: Option<std::time::Duration>,
}

impl Fault {
    /// One failure with `status` for any request to `path`.
    pub fn new(path: impl Into<String>, status: u16) -> Self {
        Fault {
            verb: None,
            path: path.into(),
            status: Some(status),
            times: 1,
            message: format!("injected failure (HTTP {status})"),
            delay: None,
        }
    }

    /// One request to `path` served normally, but only after `delay`.
    pub fn slow(path: impl Into<String>, delay: std::time::Duration) -> Self {
        Fault { verb: None, path: path.into(), status: None, times: 1, message: String::new(), delay: Some(delay) }
    }

    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = Some(verb);
        self
    }

    pub fn times(mut self, times: usize) -> Self {
        self.times = times;
        self
    }
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub verb: Option<Verb>,
    pub path: String,
    pub query: String,
    pub content_type: Option<String>,
    pub status: u16,
}

/// One eviction request the server received, whatever its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct EvictionRecord {
    pub namespace: String,
    pub name: String,
    /// `deleteOptions.gracePeriodSeconds` as received (camelCase, as a real server reads it).
    pub grace_period_seconds: Option<i64>,
    /// The HTTP status answered (201, 404, 429, 500).
    pub status: u16,
    /// The body as received.
    pub body: Value,
}

pub(crate) struct State {
    pub resource_version: u64,
    /// Watches and continue tokens older than this are `410 Gone`.
    pub compacted: u64,
    pub objects: HashMap<usize, BTreeMap<ObjectKey, Arc<Stored>>>,
    pub history: VecDeque<Arc<Change>>,
    pub faults: Vec<Fault>,
    pub requests: Vec<RequestRecord>,
    pub evictions: Vec<EvictionRecord>,
    /// Fixed answers to `GET <path>` (any query), for aggregated APIs the server does not model
    /// (the metrics APIs and their discovery), as JSON text.
    pub documents: HashMap<String, Bytes>,
    uid_counter: u64,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    pub notices: broadcast::Sender<Notice>,
    pub catalog: Catalog,
    pub active_watches: AtomicUsize,
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    NotFound,
    AlreadyExists,
    Conflict,
}

pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second()).expect("the current second is a valid timestamp").to_string()
}

pub fn object_key(def: &ResourceDef, object: &Value) -> ObjectKey {
    let ns = if def.namespaced {
        object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default")
    } else {
        ""
    };
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    (ns.to_string(), name.to_string())
}

impl Shared {
    pub fn new(catalog: Catalog) -> Self {
        let (notices, _) = broadcast::channel(65_536);
        Shared {
            state: Mutex::new(State {
                resource_version: 1,
                compacted: 0,
                objects: HashMap::new(),
                history: VecDeque::new(),
                faults: Vec::new(),
                requests: Vec::new(),
                evictions: Vec::new(),
                documents: HashMap::new(),
                uid_counter: 0,
            }),
            notices,
            catalog,
            active_watches: AtomicUsize::new(0),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not wedge every later request.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn active_watches(&self) -> usize {
        self.active_watches.load(Ordering::SeqCst)
    }
}

impl State {
    pub fn get(&self, resource: usize, key: &ObjectKey) -> Option<Arc<Stored>> {
        self.objects.get(&resource).and_then(|m| m.get(key)).cloned()
    }

    /// The stored object, parsed.
    pub fn value(&self, resource: usize, key: &ObjectKey) -> Option<Value> {
        self.get(resource, key).map(|o| o.value())
    }

    /// Every object of a resource, ordered by namespace and name.
    pub fn all(&self, resource: usize) -> Vec<Arc<Stored>> {
        self.objects.get(&resource).map(|m| m.values().cloned().collect()).unwrap_or_default()
    }

    /// The objects of a resource after `key` (all of them without one), in key order.
    pub fn after<'a>(
        &'a self,
        resource: usize,
        key: Option<&ObjectKey>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<Stored>)> + 'a {
        let lower = key.map_or(Bound::Unbounded, |k| Bound::Excluded(k.clone()));
        self.objects.get(&resource).into_iter().flat_map(move |m| m.range((lower.clone(), Bound::Unbounded)))
    }

    fn next_uid(&mut self) -> String {
        self.uid_counter += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uid_counter)
    }

    fn record(&mut self, notices: &broadcast::Sender<Notice>, change: Change) {
        let change = Arc::new(change);
        self.history.push_back(change.clone());
        // Nobody listening is fine: watches replay from `history`.
        let _ = notices.send(Notice::Change(change));
    }

    /// Stores a new object: fills in apiVersion, kind, uid, creationTimestamp, resourceVersion
    /// (and namespace for namespaced resources).
    pub fn create(
        &mut self,
        notices: &broadcast::Sender<Notice>,
        resource: usize,
        mut object: Value,
    ) -> Result<Arc<Stored>, WriteError> {
        let def = &RESOURCES[resource];
        let key = object_key(def, &object);
        if self.get(resource, &key).is_some() {
            return Err(WriteError::AlreadyExists);
        }
        self.resource_version += 1;
        let uid = self.next_uid();
        let obj = object.as_object_mut().expect("callers pass objects");
        obj.insert("apiVersion".into(), json!(def.api_version()));
        obj.insert("kind".into(), json!(def.kind));
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        if def.namespaced {
            meta["namespace"] = json!(key.0);
        }
        if meta.get("uid").and_then(Value::as_str).is_none_or(str::is_empty) {
            meta["uid"] = json!(uid);
        }
        if meta.get("creationTimestamp").is_none_or(Value::is_null) {
            meta["creationTimestamp"] = json!(now_rfc3339());
        }
        meta["resourceVersion"] = json!(self.resource_version.to_string());
        let object = Stored::new(&key.0, &object);
        self.objects.entry(resource).or_default().insert(key, object.clone());
        let rv = self.resource_version;
        self.record(
            notices,
            Change { resource_version: rv, resource, kind: ChangeKind::Added, old: None, new: object.clone() },
        );
        Ok(object)
    }

    /// Replaces an object. With `expected_version`, refuses (`Conflict`) when it is stale.
    /// Identity fields (uid, creationTimestamp, name, namespace) are kept from the stored object.
    pub fn replace(
        &mut self,
        notices: &broadcast::Sender<Notice>,
        resource: usize,
        key: &ObjectKey,
        mut object: Value,
        expected_version: Option<&str>,
    ) -> Result<Arc<Stored>, WriteError> {
        let def = &RESOURCES[resource];
        let old = self.get(resource, key).ok_or(WriteError::NotFound)?;
        let old_value = old.value();
        let current = old_value.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default();
        if expected_version.is_some_and(|v| !v.is_empty() && v != current) {
            return Err(WriteError::Conflict);
        }
        self.resource_version += 1;
        let obj = object.as_object_mut().expect("callers pass objects");
        obj.insert("apiVersion".into(), json!(def.api_version()));
        obj.insert("kind".into(), json!(def.kind));
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        for field in ["uid", "creationTimestamp"] {
            meta[field] = old_value["metadata"][field].clone();
        }
        meta["name"] = json!(key.1);
        if def.namespaced {
            meta["namespace"] = json!(key.0);
        }
        meta["resourceVersion"] = json!(self.resource_version.to_string());
        let object = Stored::new(&key.0, &object);
        self.objects.entry(resource).or_default().insert(key.clone(), object.clone());
        let rv = self.resource_version;
        self.record(
            notices,
            Change { resource_version: rv, resource, kind: ChangeKind::Modified, old: Some(old), new: object.clone() },
        );
        Ok(object)
    }

    /// Removes an object; returns its last state (with the deletion's resource version).
    pub fn delete(
        &mut self,
        notices: &broadcast::Sender<Notice>,
        resource: usize,
        key: &ObjectKey,
    ) -> Result<Arc<Stored>, WriteError> {
        let old = self.objects.get_mut(&resource).and_then(|m| m.remove(key)).ok_or(WriteError::NotFound)?;
        self.resource_version += 1;
        let mut last = old.value();
        last["metadata"]["resourceVersion"] = json!(self.resource_version.to_string());
        let last = Stored::new(&key.0, &last);
        let rv = self.resource_version;
        self.record(
            notices,
            Change { resource_version: rv, resource, kind: ChangeKind::Deleted, old: Some(old), new: last.clone() },
        );
        Ok(last)
    }

    /// Forgets the history: every watch or continue token from an older version is `410 Gone`.
    /// The version moves on by one so that a client that saw everything is also expired, while
    /// a fresh list (at the new version) can watch again.
    pub fn compact(&mut self) {
        self.resource_version += 1;
        self.compacted = self.resource_version;
        self.history.clear();
    }

    /// Takes the first matching fault, if any.
    pub fn take_fault(&mut self, verb: Option<Verb>, path: &str) -> Option<Fault> {
        let index = self.faults.iter().position(|f| f.path == path && (f.verb.is_none() || f.verb == verb))?;
        let fault = &mut self.faults[index];
        fault.times -= 1;
        let taken = fault.clone();
        if fault.times == 0 {
            self.faults.remove(index);
        }
        Some(taken)
    }
}
