//! `PodInterner`: one shared copy of each distinct spec, label set, owner list and short string
//! among the pods it converts. A watch, a dump reader or the memory cluster keeps one interner
//! for all its pods; pods converted through one interner share their parts by `Arc`.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rustc_hash::{FxHashMap, FxHasher};

use super::shape::{PodShape, reads_pod_labels};
use super::spec_hash::hash_serialized;
use crate::labels::Labels;

/// Distinct values by hash. Entries nobody else holds any more are dropped once the pool has
/// doubled since the last sweep, so a long-running watch keeps only what its pods use.
struct Pool<T: ?Sized> {
    by_hash: FxHashMap<u64, Vec<Arc<T>>>,
    len: usize,
    sweep_at: usize,
}

impl<T: ?Sized> Default for Pool<T> {
    fn default() -> Self {
        Pool { by_hash: FxHashMap::default(), len: 0, sweep_at: 1024 }
    }
}

impl<T: ?Sized> Pool<T> {
    /// The pooled value with this hash that is `same` as `value`, or `make(value)`, pooled.
    fn get_or_insert<V>(
        &mut self,
        hash: u64,
        value: V,
        same: impl Fn(&T, &V) -> bool,
        make: impl FnOnce(V) -> Arc<T>,
    ) -> Arc<T> {
        let bucket = self.by_hash.entry(hash).or_default();
        if let Some(found) = bucket.iter().find(|v| same(v, &value)) {
            return found.clone();
        }
        let value = make(value);
        bucket.push(value.clone());
        self.len += 1;
        if self.len >= self.sweep_at {
            self.sweep();
        }
        value
    }

    fn sweep(&mut self) {
        self.by_hash.retain(|_, bucket| {
            bucket.retain(|v| Arc::strong_count(v) > 1);
            !bucket.is_empty()
        });
        self.len = self.by_hash.values().map(Vec::len).sum();
        self.sweep_at = (self.len * 2).max(1024);
    }
}

fn hash_of(value: &(impl Hash + ?Sized)) -> u64 {
    let mut hasher = FxHasher::default();
    value.hash(&mut hasher);
    hasher.finish()
}

/// Shares the parts of pods converted through it (see the module comment).
#[derive(Default)]
pub struct PodInterner {
    shapes: Pool<PodShape>,
    labels: Pool<Labels>,
    owners: Pool<[OwnerReference]>,
    strings: Pool<str>,
}

impl std::fmt::Debug for PodInterner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PodInterner({} shapes, {} label sets)", self.shapes.len, self.labels.len)
    }
}

impl PodInterner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The shared compiled shape of `spec` for a pod in `namespace` with `labels` (the spec
    /// copied only when it is new). `spec.node_name` must already be taken out: it is the pod's
    /// own.
    pub fn shape(&mut self, spec: &PodSpec, namespace: &Arc<str>, labels: Option<&Arc<Labels>>) -> Arc<PodShape> {
        let labels = if reads_pod_labels(spec) { labels } else { None };
        let mut hasher = FxHasher::default();
        namespace.hash(&mut hasher);
        labels.map(|l| &**l).hash(&mut hasher);
        // Every field of the spec, through its serialization (no hand-written `Hash` for each
        // Kubernetes type); equality is checked by the pool.
        hash_serialized(spec, &mut hasher);
        let hash = hasher.finish();
        let same = |s: &PodShape, spec: &&PodSpec| {
            *s.namespace == **namespace && s.compiled_with_labels.as_deref() == labels.map(|l| &**l) && s.spec == **spec
        };
        self.shapes.get_or_insert(hash, spec, same, |spec| {
            Arc::new(PodShape::compile(spec.clone(), namespace.clone(), labels))
        })
    }

    /// The shared copy of `labels` (copied only when new).
    pub fn labels(&mut self, labels: &Labels) -> Arc<Labels> {
        let hash = hash_of(labels);
        self.labels.get_or_insert(hash, labels, |a, b| a == *b, |l| Arc::new(l.clone()))
    }

    /// The shared copy of `owners` (copied only when new).
    pub fn owners(&mut self, owners: &[OwnerReference]) -> Arc<[OwnerReference]> {
        let mut hasher = FxHasher::default();
        for o in owners {
            (&o.uid, &o.name, &o.kind).hash(&mut hasher);
        }
        let hash = hasher.finish();
        self.owners.get_or_insert(hash, owners, |a, b| a == *b, Arc::from)
    }

    /// A short string many pods repeat (a node name, a phase, a condition's reason).
    pub fn string(&mut self, text: &str) -> Arc<str> {
        self.strings.get_or_insert(hash_of(text), text, |a, b| a == *b, Arc::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_are_shared_and_different_ones_are_not() {
        let mut interner = PodInterner::new();
        let a = interner.labels(&[("app".to_string(), "web".to_string())].into());
        let b = interner.labels(&[("app".to_string(), "web".to_string())].into());
        let c = interner.labels(&[("app".to_string(), "db".to_string())].into());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        let ns: Arc<str> = Arc::from("default");
        let spec = |priority| PodSpec { priority: Some(priority), ..Default::default() };
        let s1 = interner.shape(&spec(1), &ns, Some(&a));
        let s2 = interner.shape(&spec(1), &ns, Some(&c));
        let s3 = interner.shape(&spec(2), &ns, Some(&a));
        assert!(Arc::ptr_eq(&s1, &s2), "labels do not matter when no term reads them");
        assert!(!Arc::ptr_eq(&s1, &s3));
        let other: Arc<str> = Arc::from("other");
        assert!(!Arc::ptr_eq(&s1, &interner.shape(&spec(1), &other, None)), "terms compile with the namespace");
    }

    #[test]
    fn values_nobody_holds_are_swept() {
        let mut interner = PodInterner::new();
        for i in 0..5000 {
            interner.string(&format!("node-{i}"));
        }
        assert!(interner.strings.len < 1024, "{} strings kept", interner.strings.len);
        let kept = interner.string("kept");
        for i in 0..5000 {
            interner.string(&format!("again-{i}"));
        }
        assert!(Arc::ptr_eq(&kept, &interner.string("kept")));
    }
}
