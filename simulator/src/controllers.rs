//! The workload controllers that exist in the cluster, so the drainability rules can check that a
//! pod's owner still exists and how many replicas it asks for (upstream's listers for
//! ReplicationControllers, ReplicaSets, StatefulSets, Jobs and DaemonSets).
//!
//! Controllers are looked up by kind, namespace and name only, as upstream's listers do: a
//! controller recreated under the same name (new UID) still counts as the pod's owner.

use rustc_hash::FxHashMap as HashMap;
use std::borrow::Borrow;

use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ReplicationController;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The controller kinds upstream has listers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControllerKind {
    ReplicationController,
    ReplicaSet,
    StatefulSet,
    Job,
    DaemonSet,
}

/// What the drainability rules need to know about an existing controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KnownController {
    /// `spec.replicas` for ReplicationControllers and ReplicaSets; `None` when unset (no
    /// minimum-replica check then, as upstream) or for kinds without replicas.
    pub replicas: Option<i32>,
}

/// The controllers in the cluster, indexed by kind, namespace and name.
#[derive(Clone, Debug)]
pub struct Controllers {
    by_kind: HashMap<ControllerKind, HashMap<String, HashMap<String, KnownController>>>,
    /// False for [`Controllers::unchecked`]: owners are then assumed to exist.
    checked: bool,
}

impl Default for Controllers {
    fn default() -> Self {
        Controllers::empty()
    }
}

impl Controllers {
    /// Indexes the given controllers.
    pub fn new<RS, RC, SS, J, DS>(rs: &[RS], rc: &[RC], ss: &[SS], jobs: &[J], ds: &[DS]) -> Self
    where
        RS: Borrow<ReplicaSet>,
        RC: Borrow<ReplicationController>,
        SS: Borrow<StatefulSet>,
        J: Borrow<Job>,
        DS: Borrow<DaemonSet>,
    {
        let mut controllers = Controllers::empty();
        for r in rs.iter().map(Borrow::borrow) {
            let replicas = r.spec.as_ref().and_then(|s| s.replicas);
            controllers.insert_meta(ControllerKind::ReplicaSet, &r.metadata, replicas);
        }
        for r in rc.iter().map(Borrow::borrow) {
            let replicas = r.spec.as_ref().and_then(|s| s.replicas);
            controllers.insert_meta(ControllerKind::ReplicationController, &r.metadata, replicas);
        }
        for s in ss.iter().map(Borrow::borrow) {
            controllers.insert_meta(ControllerKind::StatefulSet, &s.metadata, None);
        }
        for j in jobs.iter().map(Borrow::borrow) {
            controllers.insert_meta(ControllerKind::Job, &j.metadata, None);
        }
        for d in ds.iter().map(Borrow::borrow) {
            controllers.insert_meta(ControllerKind::DaemonSet, &d.metadata, None);
        }
        controllers
    }

    /// A cluster without any controllers: every owner the rules check is missing
    /// (`ControllerNotFound`).
    pub fn empty() -> Self {
        Controllers { by_kind: HashMap::default(), checked: true }
    }

    /// No knowledge of controllers at all: the owner-existence and minimum-replica checks are
    /// skipped, as upstream does when it runs the rules without listers (e.g. when it sorts
    /// candidates by emptiness).
    pub fn unchecked() -> Self {
        Controllers { by_kind: HashMap::default(), checked: false }
    }

    /// Whether the owner-existence rule should run against this set.
    pub fn is_checked(&self) -> bool {
        self.checked
    }

    fn insert_meta(&mut self, kind: ControllerKind, meta: &ObjectMeta, replicas: Option<i32>) {
        let namespace = meta.namespace.as_deref().unwrap_or("default");
        self.insert(kind, namespace, meta.name.clone().unwrap_or_default(), replicas);
    }

    /// Adds (or replaces) one controller. The namespace is copied only when it is new: this
    /// runs for every controller of the cluster at every loop.
    pub fn insert(&mut self, kind: ControllerKind, namespace: &str, name: String, replicas: Option<i32>) {
        let namespaces = self.by_kind.entry(kind).or_default();
        let controller = KnownController { replicas };
        if let Some(names) = namespaces.get_mut(namespace) {
            names.insert(name, controller);
        } else {
            namespaces.entry(namespace.to_string()).or_default().insert(name, controller);
        }
    }

    /// The controller of this kind with this name in this namespace, if it exists.
    pub fn get(&self, kind: ControllerKind, namespace: &str, name: &str) -> Option<&KnownController> {
        self.by_kind.get(&kind)?.get(namespace)?.get(name)
    }

    pub fn len(&self) -> usize {
        self.by_kind.values().flat_map(|ns| ns.values()).map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn controllers_are_found_by_kind_namespace_and_name() {
        let rs: ReplicaSet = serde_json::from_value(
            json!({"metadata": {"name": "web-1", "namespace": "shop"}, "spec": {"replicas": 3, "selector": {}}}),
        )
        .unwrap();
        let job: Job = serde_json::from_value(json!({"metadata": {"name": "batch", "namespace": "shop"}})).unwrap();
        let none_rc: &[ReplicationController] = &[];
        let none_ss: &[StatefulSet] = &[];
        let none_ds: &[DaemonSet] = &[];
        let c = Controllers::new(&[rs], none_rc, none_ss, &[job], none_ds);
        assert_eq!(c.get(ControllerKind::ReplicaSet, "shop", "web-1"), Some(&KnownController { replicas: Some(3) }));
        assert!(c.get(ControllerKind::ReplicaSet, "default", "web-1").is_none());
        assert!(c.get(ControllerKind::ReplicationController, "shop", "web-1").is_none());
        assert_eq!(c.get(ControllerKind::Job, "shop", "batch"), Some(&KnownController { replicas: None }));
        assert_eq!(c.len(), 2);
        assert!(c.is_checked());
        assert!(!Controllers::unchecked().is_checked());
    }
}
