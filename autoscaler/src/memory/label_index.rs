//! The pods carrying each label, per namespace: how PodDisruptionBudgets and pod autoscalers find
//! the pods a selector requiring `key=value` picks without a scan of every pod. Each entry holds
//! the pod's current compact form, so a reader walks it without looking pods up one by one (a pod
//! autoscaler's target has thousands of pods, read at every sync).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use indexmap::{Equivalent, IndexMap};
use rustc_hash::FxBuildHasher;
use simulator::PodInfo;

use super::store::ObjectKey;

/// Namespace, label key, label value.
type Owned = (String, String, String);

/// An index key borrowed from a pod (hashed as the owned key is), so a store finds its entries
/// without copying the three strings.
#[derive(PartialEq, Eq)]
struct Borrowed<'a>(&'a str, &'a str, &'a str);

impl Hash for Borrowed<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `(String, String, String)` hashes: each part in turn, as its `str`.
        (self.0, self.1, self.2).hash(state);
    }
}

impl Equivalent<Owned> for Borrowed<'_> {
    fn equivalent(&self, key: &Owned) -> bool {
        self.0 == key.0 && self.1 == key.1 && self.2 == key.2
    }
}

/// The pods selected by one `key=value` in one namespace, in key order.
pub(super) type Labelled = BTreeMap<ObjectKey, Arc<PodInfo>>;

#[derive(Default)]
pub(super) struct LabelIndex {
    entries: IndexMap<Owned, Labelled, FxBuildHasher>,
}

impl LabelIndex {
    /// Stores the pod `key` (in its current form `info`) under each of its labels.
    pub(super) fn store(&mut self, key: &ObjectKey, labels: Option<&BTreeMap<String, String>>, info: &Arc<PodInfo>) {
        for (label, value) in labels.into_iter().flatten() {
            let pods = match self.entries.get_mut(&Borrowed(&key.namespace, label, value)) {
                Some(pods) => pods,
                None => self.entries.entry((key.namespace.clone(), label.clone(), value.clone())).or_default(),
            };
            match pods.get_mut(key) {
                Some(stored) => *stored = info.clone(),
                None => {
                    pods.insert(key.clone(), info.clone());
                }
            }
        }
    }

    /// Forgets the pod `key` under each of `labels` (the labels it was stored with).
    pub(super) fn remove(&mut self, key: &ObjectKey, labels: Option<&BTreeMap<String, String>>) {
        for (label, value) in labels.into_iter().flatten() {
            let borrowed = Borrowed(&key.namespace, label, value);
            if let Some(pods) = self.entries.get_mut(&borrowed) {
                pods.remove(key);
                if pods.is_empty() {
                    self.entries.swap_remove(&borrowed);
                }
            }
        }
    }

    /// The pods of `namespace` labelled `label=value`.
    pub(super) fn get(&self, namespace: &str, label: &str, value: &str) -> Option<&Labelled> {
        self.entries.get(&Borrowed(namespace, label, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn info(namespace: &str, name: &str) -> Arc<PodInfo> {
        let mut pod = Pod::default();
        pod.metadata.namespace = Some(namespace.to_string());
        pod.metadata.name = Some(name.to_string());
        Arc::new(PodInfo::new(&pod))
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn stores_replace_a_pods_form_and_removal_forgets_it() {
        let mut index = LabelIndex::default();
        let (a, b) = (ObjectKey::new("ns", "a"), ObjectKey::new("ns", "b"));
        let app = labels(&[("app", "web"), ("tier", "front")]);
        index.store(&b, Some(&app), &info("ns", "b"));
        index.store(&a, Some(&app), &info("ns", "a"));
        let names = |index: &LabelIndex, l: &str, v: &str| -> Vec<String> {
            index.get("ns", l, v).into_iter().flatten().map(|(k, _)| k.name.clone()).collect()
        };
        assert_eq!(names(&index, "app", "web"), ["a", "b"], "in key order");
        assert!(index.get("other", "app", "web").is_none(), "per namespace");

        // A new form of `a` replaces the old one under every label.
        let newer = info("ns", "a");
        index.store(&a, Some(&app), &newer);
        assert!(Arc::ptr_eq(&index.get("ns", "tier", "front").unwrap()[&a], &newer));
        assert_eq!(index.get("ns", "app", "web").unwrap().len(), 2);

        index.remove(&a, Some(&app));
        index.remove(&b, Some(&labels(&[("app", "web")])));
        assert!(index.get("ns", "app", "web").is_none(), "an empty entry is dropped");
        assert_eq!(names(&index, "tier", "front"), ["b"]);
    }
}
