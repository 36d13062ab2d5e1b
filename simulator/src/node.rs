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
        self.used_ports.extend(pod.shape.host_ports.iter().cloned());
        self.pods.push(pod);
    }

    pub(crate) fn insert_pod(&mut self, position: usize, pod: Arc<PodInfo>) {
        self.requested.add(pod.requests());
        self.used_ports.extend(pod.shape.host_ports.iter().cloned());
        self.pods.insert(position, pod);
    }

    pub(crate) fn take_pod(&mut self, position: usize) -> Arc<PodInfo> {
        let pod = self.pods.remove(position);
        self.requested.sub(pod.requests());
        for hp in &pod.shape.host_ports {
            if let Some(i) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.swap_remove(i);
            }
        }
        pod
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
