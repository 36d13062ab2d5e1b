//! Object storage: one sorted map per kind, keyed by namespace and name, with the list the view
//! hands out cached until the kind changes (for pods: brought up to date from the changed keys).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rustc_hash::FxHashMap;

use crate::core::shared_list::{RUN_LENGTH, Run, SharedList, cut_run};

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

    /// Namespace and name, as a `KeyOf` gives an object's key.
    fn parts(&self) -> (&str, &str) {
        (&self.namespace, &self.name)
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

/// The key of a run's first object (runs are never empty).
fn first_key<T>(run: &Run<T>, key_of: KeyOf<T>) -> Option<(&str, &str)> {
    run.first().map(|o| key_of(o))
}

/// The objects of one kind.
#[derive(Debug)]
pub(crate) struct Kind<T> {
    /// The keys in order: what lists and namespace ranges walk. Only keys: a changed object is
    /// replaced in `by_key` alone, and most stores change an object already there (a pod is
    /// stored again at each binding and status change: the sorted map's walk down comparing
    /// names at each level was most of a store).
    order: BTreeSet<ObjectKey>,
    /// The objects by key: lookups (the controllers, the scheduler and the PDBs look pods up
    /// by key thousands of times a step) and the objects of the walks of `order`.
    by_key: FxHashMap<ObjectKey, Arc<T>>,
    cache: Option<SharedList<T>>,
    /// Where an object says its own key (pods): the next list is then made from the cached one
    /// and the keys changed since, not by a walk of the whole map. At 100,000 pods that walk
    /// (a pointer chase through the map's nodes) was a tenth of a simulated day; made this
    /// way, the list costs half as much, mostly in the binary searches.
    key_of: Option<KeyOf<T>>,
    /// The keys put, replaced or removed since `cache` was made (kept only with `key_of`).
    changed: BTreeSet<ObjectKey>,
}

/// An object's namespace and name, as its `ObjectKey` has them.
pub(crate) type KeyOf<T> = fn(&T) -> (&str, &str);

impl<T> Default for Kind<T> {
    fn default() -> Self {
        Kind {
            order: BTreeSet::new(),
            by_key: FxHashMap::default(),
            cache: None,
            key_of: None,
            changed: BTreeSet::new(),
        }
    }
}

impl<T> Kind<T> {
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<T>> {
        self.by_key.get(key)
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.by_key.contains_key(key)
    }

    /// A kind whose objects say their own key: its list follows changes without a walk of the map.
    pub fn keyed_by(key_of: KeyOf<T>) -> Self {
        Kind { key_of: Some(key_of), ..Kind::default() }
    }

    pub fn insert(&mut self, key: ObjectKey, object: Arc<T>) -> Option<Arc<T>> {
        self.forget_in_list(&key);
        match self.by_key.get_mut(&key) {
            Some(indexed) => Some(std::mem::replace(indexed, object)),
            None => {
                self.by_key.insert(key.clone(), object);
                self.order.insert(key);
                None
            }
        }
    }

    /// Edits the object of `key` where it is stored (`false`: there is none). The object is
    /// copied first only if something else still holds it (a list handed out, a caller's
    /// reference): a workload's status changes at each change of its pods' states, and copying
    /// the whole object for it copied its pod template every time.
    pub fn update(&mut self, key: &ObjectKey, edit: impl FnOnce(&mut T)) -> bool
    where
        T: Clone,
    {
        if !self.by_key.contains_key(key) {
            return false;
        }
        // First: a list dropped here no longer holds the object.
        self.forget_in_list(key);
        match self.by_key.get_mut(key) {
            Some(object) => {
                edit(Arc::make_mut(object));
                true
            }
            None => false,
        }
    }

    pub fn remove(&mut self, key: &ObjectKey) -> Option<Arc<T>> {
        let removed = self.by_key.remove(key);
        if removed.is_some() {
            self.order.remove(key);
            self.forget_in_list(key);
        }
        removed
    }

    /// The object of a key of `order`.
    fn object(&self, key: &ObjectKey) -> &Arc<T> {
        self.by_key.get(key).expect("every ordered key has its object")
    }

    /// The cached list no longer holds `key`'s object: noted as a change to merge in, or the
    /// list dropped (a kind without `key_of`, or so many changes that a walk is as cheap).
    fn forget_in_list(&mut self, key: &ObjectKey) {
        let Some(cached) = &self.cache else { return };
        if self.key_of.is_some() && self.changed.len() < cached.len() / 8 {
            if !self.changed.contains(key) {
                self.changed.insert(key.clone());
            }
        } else {
            self.cache = None;
            self.changed.clear();
        }
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = (&ObjectKey, &Arc<T>)> + '_> {
        // The cached list, when it is current, holds the objects in the keys' order: read
        // along, without a lookup per key (the simulation's metrics walk the nodes each sample).
        match self.cache.as_ref().filter(|_| self.changed.is_empty()) {
            Some(list) => Box::new(self.order.iter().zip(list.iter())),
            None => Box::new(self.order.iter().map(|key| (key, self.object(key)))),
        }
    }

    pub fn keys(&self) -> Vec<ObjectKey> {
        self.order.iter().cloned().collect()
    }

    /// The objects of one namespace, in name order.
    pub fn in_namespace<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<T>)> + 'a {
        self.order
            .range(ObjectKey::new(namespace, "")..)
            .take_while(move |key| key.namespace == namespace)
            .map(|key| (key, self.object(key)))
    }

    /// Every object, in key order: a copy of the cached list (pointer copies only).
    pub fn list(&mut self) -> Vec<Arc<T>> {
        self.shared().to_vec()
    }

    /// Every object, in key order: the cached list itself (one pointer copied).
    pub fn shared(&mut self) -> SharedList<T> {
        let changed = std::mem::take(&mut self.changed);
        if let Some(cached) = &self.cache
            && changed.is_empty()
        {
            return cached.clone();
        }
        let merged = match (self.cache.take(), self.key_of) {
            (Some(cached), Some(key_of)) => self.merged(&cached, &changed, key_of),
            _ => None,
        };
        let list = merged.unwrap_or_else(|| self.iter().map(|(_, object)| object.clone()).collect());
        debug_assert!(
            list.len() == self.order.len() && list.iter().zip(self.iter()).all(|(a, (_, b))| Arc::ptr_eq(a, b)),
            "a list brought up to date differs from the map"
        );
        self.cache = Some(list.clone());
        list
    }

    /// `cached` with the objects of the `changed` keys put in, replaced or taken out: the runs
    /// no changed key falls in are shared, the others made again, each change found by a
    /// binary search on `key_of`. A key falls in the run before the first run whose first
    /// object comes after it. `None` when the result does not count as many objects as the
    /// map (an object whose key is not its map key), and the map is walked.
    fn merged(&self, cached: &SharedList<T>, changed: &BTreeSet<ObjectKey>, key_of: KeyOf<T>) -> Option<SharedList<T>> {
        let runs = cached.runs();
        let mut merged_runs = Vec::with_capacity(runs.len() + changed.len() / RUN_LENGTH + 1);
        let mut keys = changed.iter().peekable();
        let mut at = 0;
        while at < runs.len() {
            let Some(key) = keys.peek() else {
                // No change left: the rest is shared, no object read.
                merged_runs.extend_from_slice(&runs[at..]);
                break;
            };
            // The run the next key falls in, found by a binary search on the runs' first keys
            // (a few hundred changed pods among 1,500 runs: a walk reading every run's first
            // key was a fiftieth of a simulated day); the runs before it are shared.
            let wanted = key.parts();
            let falls_in =
                at + runs[at + 1..].partition_point(|run| first_key(run, key_of).is_some_and(|f| f <= wanted));
            merged_runs.extend_from_slice(&runs[at..falls_in]);
            let next_first = runs.get(falls_in + 1).and_then(|run| first_key(run, key_of));
            let mut in_run = Vec::new();
            while let Some(key) = keys.next_if(|k| next_first.is_none_or(|f| k.parts() < f)) {
                in_run.push(key);
            }
            cut_run(self.merged_run(&runs[falls_in], &in_run, key_of), &mut merged_runs);
            at = falls_in + 1;
        }
        if runs.is_empty() {
            // Nothing cached to merge into: every changed key is new.
            let all: Vec<&ObjectKey> = keys.collect();
            cut_run(self.merged_run(&[], &all, key_of), &mut merged_runs);
        }
        let mut list = SharedList::from_runs(merged_runs);
        if list.runs().len() > 2 * (list.len() / RUN_LENGTH) + 16 {
            // Runs left short by removals, never joined: cut the list anew (rare, one copy).
            list = SharedList::from(list.to_vec());
        }
        (list.len() == self.order.len()).then_some(list)
    }

    /// One run with the objects of `changed` (in key order, all falling in it) put in,
    /// replaced or taken out.
    fn merged_run(&self, run: &[Arc<T>], changed: &[&ObjectKey], key_of: KeyOf<T>) -> Vec<Arc<T>> {
        let mut merged = Vec::with_capacity(run.len() + changed.len());
        let mut from = 0;
        for key in changed {
            let wanted = key.parts();
            let at = from + run[from..].partition_point(|o| key_of(o) < wanted);
            merged.extend_from_slice(&run[from..at]);
            from = at;
            if run.get(at).is_some_and(|o| key_of(o) == wanted) {
                from += 1;
            }
            if let Some(object) = self.by_key.get(*key) {
                merged.push(object.clone());
            }
        }
        merged.extend_from_slice(&run[from..]);
        merged
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// An object that says its own key (a replacement is told apart by its address).
    #[derive(Clone, Debug)]
    struct Object {
        namespace: String,
        name: String,
        value: u32,
    }

    fn key_of(object: &Object) -> (&str, &str) {
        (&object.namespace, &object.name)
    }

    #[derive(Clone, Debug)]
    enum Edit {
        Put(u8, u16),
        Remove(u8, u16),
        List,
    }

    fn edit() -> impl proptest::strategy::Strategy<Value = Edit> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (0u8..4, 0u16..200).prop_map(|(ns, n)| Edit::Put(ns, n)),
            2 => (0u8..4, 0u16..200).prop_map(|(ns, n)| Edit::Remove(ns, n)),
            1 => Just(Edit::List),
        ]
    }

    /// Namespaces whose order differs between `(namespace, name)` and `namespace/name` (up to
    /// 800 keys: many runs, as unit tests cut lists into runs of a few objects).
    fn key(ns: u8, n: u16) -> ObjectKey {
        ObjectKey::new(["", "a", "a-b", "b"][usize::from(ns % 4)], format!("n{n}"))
    }

    #[derive(Clone, Debug, PartialEq)]
    struct Counter(u32);

    #[test]
    fn an_update_edits_in_place_what_nothing_else_holds_and_copies_what_a_list_holds() {
        let mut kind: Kind<Counter> = Kind::default();
        let key = ObjectKey::new("ns", "a");
        assert!(!kind.update(&key, |c| c.0 += 1), "no object: nothing to edit");
        kind.insert(key.clone(), Arc::new(Counter(0)));
        let address = Arc::as_ptr(kind.get(&key).unwrap());
        assert!(kind.update(&key, |c| c.0 += 1));
        assert_eq!(Arc::as_ptr(kind.get(&key).unwrap()), address, "held by the store alone: edited in place");
        assert_eq!(kind.get(&key).unwrap().0, 1);
        // A list handed out keeps the version it was given; the store's next list has the edit.
        let listed = kind.list();
        assert!(kind.update(&key, |c| c.0 += 1));
        assert_eq!(listed[0].0, 1);
        assert_eq!(kind.get(&key).unwrap().0, 2);
        assert_eq!(kind.list()[0].0, 2);
        // The same through a keyed kind, whose list is brought up to date from the changed keys.
        let mut keyed = Kind::keyed_by(key_of);
        keyed.insert(key.clone(), Arc::new(Object { namespace: "ns".into(), name: "a".into(), value: 0 }));
        let before = keyed.shared();
        assert!(keyed.update(&key, |o| o.value = 7));
        assert_eq!(before.get(0).unwrap().value, 0);
        assert_eq!(keyed.shared().get(0).unwrap().value, 7);
    }

    proptest::proptest! {
        /// Through any puts, replacements and removals, the list brought up to date from the
        /// changed keys holds the very objects of a walk of the map, in key order, and shares
        /// with the last list every run no changed key fell in.
        #[test]
        fn a_list_brought_up_to_date_is_the_map_in_key_order(
            initial in proptest::collection::vec((0u8..4, 0u16..200), 0..400),
            edits in proptest::collection::vec(edit(), 0..300),
        ) {
            let mut kind = Kind::keyed_by(key_of);
            let mut expected: BTreeMap<ObjectKey, Arc<Object>> = BTreeMap::new();
            let put = |kind: &mut Kind<Object>, expected: &mut BTreeMap<_, _>, key: ObjectKey| {
                let object = Arc::new(Object { namespace: key.namespace.clone(), name: key.name.clone(), value: 0 });
                expected.insert(key.clone(), object.clone());
                kind.insert(key, object);
            };
            for (ns, n) in initial {
                put(&mut kind, &mut expected, key(ns, n));
            }
            let mut last = kind.shared();
            let mut edited = 0;
            for e in edits.into_iter().chain([Edit::List]) {
                match e {
                    Edit::Put(ns, n) => {
                        put(&mut kind, &mut expected, key(ns, n));
                        edited += 1;
                    }
                    Edit::Remove(ns, n) => {
                        expected.remove(&key(ns, n));
                        kind.remove(&key(ns, n));
                        edited += 1;
                    }
                    Edit::List => {
                        // Walked in key order before the list is brought up to date (each key
                        // looked up) and after (along the current list): the same objects.
                        let walked = |kind: &Kind<Object>| kind.iter().map(|(k, o)| (k.clone(), o.clone())).collect::<Vec<_>>();
                        let before = walked(&kind);
                        let list = kind.shared();
                        for walked in [before, walked(&kind)] {
                            proptest::prop_assert_eq!(walked.len(), expected.len());
                            for ((key, object), (wanted_key, wanted)) in walked.iter().zip(&expected) {
                                proptest::prop_assert_eq!(key, wanted_key);
                                proptest::prop_assert!(Arc::ptr_eq(object, wanted));
                            }
                        }
                        proptest::prop_assert_eq!(list.len(), expected.len());
                        for (listed, wanted) in list.iter().zip(expected.values()) {
                            proptest::prop_assert!(Arc::ptr_eq(listed, wanted), "{listed:?} listed, {wanted:?} expected");
                        }
                        // Each edit changes at most one run; a list made afresh (too many
                        // edits, or runs re-cut) shares none.
                        let shared = list.runs().iter().filter(|r| last.runs().iter().any(|l| Arc::ptr_eq(l, r))).count();
                        proptest::prop_assert!(
                            shared == 0 || shared >= last.runs().len().saturating_sub(edited),
                            "{shared} of {} runs shared after {edited} edits", last.runs().len()
                        );
                        last = list;
                        edited = 0;
                    }
                }
            }
        }
    }
}
