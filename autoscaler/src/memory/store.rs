//! Object storage: one sorted map per kind, keyed by namespace and name, with the list the view
//! hands out cached until the kind changes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rustc_hash::FxHashMap;

use crate::core::view::SharedList;

/// Namespace and name of an object; cluster-scoped objects (Nodes, Namespaces) have namespace `""`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> ObjectKey {
        ObjectKey { namespace: namespace.into(), name: name.into() }
    }

    pub fn cluster(name: impl Into<String>) -> ObjectKey {
        ObjectKey { namespace: String::new(), name: name.into() }
    }

    /// The key of an object in its namespace (`default` when it names none).
    pub fn of(meta: &ObjectMeta) -> ObjectKey {
        ObjectKey {
            namespace: meta.namespace.clone().unwrap_or_else(|| "default".to_string()),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// The objects of one kind.
#[derive(Debug)]
pub(crate) struct Kind<T> {
    /// In key order: what lists and namespace ranges read.
    map: BTreeMap<ObjectKey, Arc<T>>,
    /// The same objects by key, for lookups: the controllers, the scheduler and the PDBs look
    /// pods up by key thousands of times a step, and a sorted map of 100,000 pods compares
    /// names at every one of its levels.
    by_key: FxHashMap<ObjectKey, Arc<T>>,
    cache: Option<SharedList<T>>,
}

impl<T> Default for Kind<T> {
    fn default() -> Self {
        Kind { map: BTreeMap::new(), by_key: FxHashMap::default(), cache: None }
    }
}

impl<T> Kind<T> {
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<T>> {
        self.by_key.get(key)
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.by_key.contains_key(key)
    }

    pub fn insert(&mut self, key: ObjectKey, object: Arc<T>) -> Option<Arc<T>> {
        self.cache = None;
        match self.by_key.get_mut(&key) {
            Some(indexed) => *indexed = object.clone(),
            None => {
                self.by_key.insert(key.clone(), object.clone());
            }
        }
        self.map.insert(key, object)
    }

    pub fn remove(&mut self, key: &ObjectKey) -> Option<Arc<T>> {
        let removed = self.map.remove(key);
        if removed.is_some() {
            self.by_key.remove(key);
            self.cache = None;
        }
        removed
    }

    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Arc<T>)> {
        self.map.iter()
    }

    pub fn keys(&self) -> Vec<ObjectKey> {
        self.map.keys().cloned().collect()
    }

    /// The objects of one namespace, in name order.
    pub fn in_namespace<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<T>)> + 'a {
        self.map.range(ObjectKey::new(namespace, "")..).take_while(move |(key, _)| key.namespace == namespace)
    }

    /// Every object, in key order: a copy of the cached list (pointer copies only).
    pub fn list(&mut self) -> Vec<Arc<T>> {
        self.shared().to_vec()
    }

    /// Every object, in key order: the cached list itself (one pointer copied).
    pub fn shared(&mut self) -> SharedList<T> {
        self.cache.get_or_insert_with(|| self.map.values().cloned().collect()).clone()
    }
}
