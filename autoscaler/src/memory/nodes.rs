//! Nodes: the bridge from the in-memory cloud (instances that registered or went away), node
//! startup (NotReady → Ready), and the taint / cordon changes the autoscaler makes.

use std::sync::Arc;

use cloudprovider::duration::later;
use cloudprovider_memory::CloudEvent;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use simulator::NodeInfo;

use super::cluster::{MemoryCluster, Timer};
use super::store::ObjectKey;

/// The taint a node carries until it reports Ready (the node lifecycle controller's
/// `TaintNodesByCondition`).
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

fn ready_condition(node: &mut Node) -> Option<&mut NodeCondition> {
    node.status.as_mut()?.conditions.as_mut()?.iter_mut().find(|c| c.type_ == "Ready")
}

impl MemoryCluster {
    /// Registers and removes Nodes after what happened in the cloud.
    pub(super) fn sync_cloud(&mut self) {
        let Some(cloud) = self.cloud.clone() else { return };
        for event in cloud.drain_events() {
            match event {
                CloudEvent::NodeRegistered { node, at, initial, .. } => self.register_node(*node, at, initial),
                CloudEvent::InstanceDeleted { instance_id, .. } => {
                    if let Some(name) = self.nodes_by_provider_id.get(&instance_id).cloned() {
                        self.remove_node(&name);
                    }
                }
            }
        }
    }

    /// A kubelet registers its Node at `at`. Nodes of a group's initial instances, and every
    /// node when `node_startup_delay` is zero, are Ready at once; others start NotReady, with
    /// the not-ready taint, and turn Ready after the delay.
    fn register_node(&mut self, mut node: Node, at: Timestamp, initial: bool) {
        let name = node.metadata.name.clone().unwrap_or_default();
        if self.nodes.contains(&ObjectKey::cluster(&name)) {
            tracing::warn!(node = %name, "a cloud instance registered a node name that already exists; ignored");
            return;
        }
        let delay = self.config.node_startup_delay;
        if !initial && !delay.is_zero() {
            if let Some(ready) = ready_condition(&mut node) {
                ready.status = "False".to_string();
                ready.reason = Some("KubeletNotReady".to_string());
                ready.message = Some("container runtime network not ready".to_string());
                ready.last_transition_time = Some(Time(at));
            }
            let taints = node.spec.get_or_insert_with(Default::default).taints.get_or_insert_with(Vec::new);
            taints.push(Taint {
                key: NOT_READY_TAINT.to_string(),
                effect: "NoSchedule".to_string(),
                time_added: Some(Time(at)),
                ..Default::default()
            });
            self.add_timer(later(at, delay), Timer::NodeReady(name));
        }
        self.put_node(node);
    }

    /// The node's kubelet reports Ready from `at` on.
    pub(super) fn node_becomes_ready(&mut self, name: &str, at: Timestamp) {
        let Some(node) = self.node(name) else { return };
        let mut node = (**node).clone();
        if let Some(ready) = ready_condition(&mut node) {
            ready.status = "True".to_string();
            ready.reason = Some("KubeletReady".to_string());
            ready.message = Some("kubelet is posting ready status".to_string());
            ready.last_transition_time = Some(Time(at));
            ready.last_heartbeat_time = Some(Time(at));
        }
        if let Some(taints) = node.spec.as_mut().and_then(|s| s.taints.as_mut()) {
            taints.retain(|t| t.key != NOT_READY_TAINT);
        }
        self.put_node(node);
    }

    /// Stores a node (new or changed).
    pub(super) fn put_node(&mut self, node: Node) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let node = Arc::new(node);
        let old = self.nodes.insert(ObjectKey::cluster(&name), node.clone());
        if let Some(old_id) = old.as_ref().and_then(|o| o.spec.as_ref()?.provider_id.clone()) {
            self.nodes_by_provider_id.remove(&old_id);
        }
        if let Some(id) = node.spec.as_ref().and_then(|s| s.provider_id.clone()).filter(|id| !id.is_empty()) {
            self.nodes_by_provider_id.insert(id, name.clone());
        }
        self.node_infos.insert(name.clone(), Arc::new(NodeInfo::new(node.clone())));
        self.snapshot_node_put(&name, node);
        self.mark_all_daemonsets_dirty();
    }

    /// Removes a node; the pods bound to it go at once (the pod garbage collector force-deletes
    /// pods of nodes that no longer exist) and their controllers replace them.
    pub(super) fn remove_node(&mut self, name: &str) -> Option<Arc<Node>> {
        let node = self.nodes.remove(&ObjectKey::cluster(name))?;
        if let Some(id) = node.spec.as_ref().and_then(|s| s.provider_id.as_deref()) {
            self.nodes_by_provider_id.remove(id);
        }
        self.node_infos.remove(name);
        self.snapshot_node_removed(name);
        for key in self.pods_by_node.remove(name).unwrap_or_default() {
            self.remove_pod(&key);
        }
        self.mark_all_daemonsets_dirty();
        Some(node)
    }

    /// Adds `taint` (replacing a taint with the same key and effect); with `cordon`, also
    /// marks the node unschedulable. False when the node does not exist.
    pub(super) fn taint(&mut self, name: &str, taint: Taint, cordon: bool) -> bool {
        let Some(node) = self.node(name) else { return false };
        let mut node = (**node).clone();
        let spec = node.spec.get_or_insert_with(Default::default);
        let taints = spec.taints.get_or_insert_with(Vec::new);
        match taints.iter_mut().find(|t| t.key == taint.key && t.effect == taint.effect) {
            Some(existing) => *existing = taint,
            None => taints.push(taint),
        }
        if cordon {
            spec.unschedulable = Some(true);
        }
        if self.node(name).is_some_and(|old| old.spec == node.spec) {
            return true; // Refreshing an identical taint changes nothing.
        }
        self.put_node(node);
        true
    }

    /// Removes every taint with `key`; with `uncordon`, clears `spec.unschedulable`. False when
    /// the node does not exist.
    pub(super) fn untaint(&mut self, name: &str, key: &str, uncordon: bool) -> bool {
        let Some(node) = self.node(name) else { return false };
        let mut node = (**node).clone();
        let spec = node.spec.get_or_insert_with(Default::default);
        let had_taint = spec.taints.as_ref().is_some_and(|t| t.iter().any(|t| t.key == key));
        let cordoned = spec.unschedulable == Some(true);
        let uncordons = uncordon && cordoned;
        if !had_taint && !uncordons {
            return true;
        }
        if let Some(taints) = spec.taints.as_mut() {
            taints.retain(|t| t.key != key);
        }
        if uncordon {
            spec.unschedulable = None;
        }
        self.put_node(node);
        true
    }
}
