//! `NodeInfo`: a node with the pods the simulation has placed on it and their summed requests.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Taint};

use crate::labels::Labels;
use crate::pod::{HostPort, PodInfo};
use crate::resources::Resources;
use crate::well_known::HOSTNAME_LABEL;

#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub node: Arc<Node>,
    pub name: Arc<str>,
    pub allocatable: Resources,
    pub requested: Resources,
    pub pods: Vec<Arc<PodInfo>>,
    pub used_ports: Vec<HostPort>,
    /// Marked for removal in a scale-down simulation: behaves as if it carried the
    /// `ToBeDeletedByClusterAutoscaler:NoSchedule` taint, so nothing new lands on it.
    pub to_be_deleted: bool,
    /// Sums kept with the pods placed through the snapshot, so that the node's utilization
    /// (scale-down asks it of every node on every iteration) needs no pass over its pods.
    pub(crate) sums: PodSums,
}

/// What a node's DaemonSet and mirror pods request and how many of its pods are terminating,
/// kept as pods are placed and taken (`push_pod`, `insert_pod`, `take_pod`).
#[derive(Clone, Debug, Default)]
pub(crate) struct PodSums {
    /// How many pods these sums cover: fewer than `pods` when pods were pushed on the list
    /// directly, and then the sums are not used.
    pub pods: usize,
    pub daemonset: Resources,
    pub mirror: Resources,
    /// Pods that are both (their requests are in `daemonset` and in `mirror`).
    pub daemonset_and_mirror: Resources,
    pub terminating: usize,
    /// A pod's request of some resource was outside `0..2^40`: sums of such requests could
    /// saturate and then no longer be exact, so the sums are not used until the node is
    /// accounted afresh.
    pub inexact: bool,
}

/// Requests below this (1 TiB of memory, about 10^12 millicores) summed over up to 2^22 pods
/// stay inside `i64`, so their sums are exact.
const EXACT_REQUEST_LIMIT: i64 = 1 << 40;

impl PodSums {
    fn apply(&mut self, pod: &PodInfo, add: bool) {
        let change = |sum: &mut Resources| if add { sum.add(pod.requests()) } else { sum.sub(pod.requests()) };
        if pod.daemonset {
            change(&mut self.daemonset);
        }
        if pod.mirror {
            change(&mut self.mirror);
        }
        if pod.daemonset && pod.mirror {
            change(&mut self.daemonset_and_mirror);
        }
        let step = |n: usize| if add { n.saturating_add(1) } else { n.saturating_sub(1) };
        if pod.terminating {
            self.terminating = step(self.terminating);
        }
        self.pods = step(self.pods);
        let r = pod.requests();
        let exact = |v: &i64| (0..EXACT_REQUEST_LIMIT).contains(v);
        if ![r.cpu_millis, r.memory, r.ephemeral_storage, r.pods].iter().all(exact) || !r.extended.values().all(exact) {
            self.inexact = true;
        }
    }
}

impl NodeInfo {
    /// A node without pods. Allocatable falls back to capacity when the status has none.
    pub fn new(node: Arc<Node>) -> NodeInfo {
        let name: Arc<str> = Arc::from(node.metadata.name.as_deref().unwrap_or(""));
        let status = node.status.as_ref();
        let allocatable = status
            .and_then(|s| s.allocatable.as_ref().filter(|a| !a.is_empty()).or(s.capacity.as_ref()))
            .map(|l| Resources::from_list_lossy(Some(l)))
            .unwrap_or_default();
        NodeInfo {
            node,
            name,
            allocatable,
            requested: Resources::default(),
            pods: Vec::new(),
            used_ports: Vec::new(),
            to_be_deleted: false,
            sums: PodSums::default(),
        }
    }

    pub fn labels(&self) -> Option<&Labels> {
        self.node.metadata.labels.as_ref()
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().and_then(|l| l.get(key)).map(String::as_str)
    }

    pub fn taints(&self) -> &[Taint] {
        self.node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[])
    }

    pub fn unschedulable(&self) -> bool {
        self.node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.node.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
    }

    pub(crate) fn push_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(pod.requests());
        self.sums.apply(&pod, true);
        self.used_ports.extend(pod.shape.host_ports.iter().cloned());
        self.pods.push(pod);
    }

    pub(crate) fn insert_pod(&mut self, position: usize, pod: Arc<PodInfo>) {
        self.requested.add(pod.requests());
        self.sums.apply(&pod, true);
        self.used_ports.extend(pod.shape.host_ports.iter().cloned());
        self.pods.insert(position, pod);
    }

    pub(crate) fn take_pod(&mut self, position: usize) -> Arc<PodInfo> {
        let pod = self.pods.remove(position);
        self.requested.sub(pod.requests());
        self.sums.apply(&pod, false);
        for hp in &pod.shape.host_ports {
            if let Some(i) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.swap_remove(i);
            }
        }
        pod
    }

    /// Takes the pods out with everything summed over them, to place them again one by one.
    pub(crate) fn take_pods(&mut self) -> Vec<Arc<PodInfo>> {
        self.requested = Resources::default();
        self.used_ports.clear();
        self.sums = PodSums::default();
        std::mem::take(&mut self.pods)
    }

    /// Free resources: allocatable minus what the placed pods request.
    pub fn free(&self) -> Resources {
        let mut free = self.allocatable.clone();
        free.sub(&self.requested);
        free
    }
}

impl NodeInfo {
    /// A copy of this node (and its pods) under a new name `<name>-<suffix>`, with a matching
    /// hostname label, for adding template nodes to a snapshot. Pod names get the same suffix
    /// so that every copy's DaemonSet pods are distinct pods.
    pub fn renamed_copy(&self, suffix: &str) -> NodeInfo {
        let name = format!("{}-{suffix}", self.name);
        let mut node = (*self.node).clone();
        node.metadata.name = Some(name.clone());
        node.metadata.uid = Some(format!("{name}-uid"));
        node.metadata.labels.get_or_insert_with(Default::default).insert(HOSTNAME_LABEL.to_string(), name.clone());
        let mut copy = NodeInfo::new(Arc::new(node));
        for pod in &self.pods {
            copy.push_pod(Arc::new(pod.renamed(&format!("{}-{suffix}", pod.name()), &name)));
        }
        copy
    }
}
