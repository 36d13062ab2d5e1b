//! The ports (`ClusterReader`, `ClusterActions`, `Clock`) over the in-memory cluster.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use cloudprovider_memory::SharedTime;
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::jiff::Timestamp;

use super::cluster::MemoryCluster;
use crate::core::ClusterView;
use crate::ports::{Clock, ClusterActions, ClusterReader, Event, EvictionError, PortError, Scale, ScaleTarget};

/// A shared handle on one in-memory cluster: the driver advances it, the control loop reads
/// and acts through the ports. Every call locks it briefly; nothing awaits while it is held.
#[derive(Clone)]
pub struct MemoryClusterHandle {
    cluster: Arc<Mutex<MemoryCluster>>,
}

impl MemoryClusterHandle {
    pub fn new(cluster: MemoryCluster) -> Self {
        MemoryClusterHandle { cluster: Arc::new(Mutex::new(cluster)) }
    }

    /// The cluster, for the driver (advance, apply, inspect). Every mutation completes before
    /// the lock is released, so a lock poisoned by a panic elsewhere still guards a consistent
    /// cluster.
    pub fn lock(&self) -> MutexGuard<'_, MemoryCluster> {
        self.cluster.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl ClusterReader for MemoryClusterHandle {
    async fn view(&self) -> Result<ClusterView, PortError> {
        Ok(self.lock().view())
    }

    fn selected_pods(
        &self,
        namespace: &str,
        selector: &simulator::labels::Selector,
    ) -> Option<Vec<Arc<simulator::PodInfo>>> {
        Some(self.lock().selected_pods(namespace, selector))
    }

    async fn pod_autoscaler_view(&self) -> Result<ClusterView, PortError> {
        Ok(self.lock().pod_autoscaler_view())
    }
}

#[async_trait]
impl ClusterActions for MemoryClusterHandle {
    async fn taint_node(&self, node: &str, taint: Taint, cordon: bool) -> Result<(), PortError> {
        if self.lock().taint(node, taint, cordon) {
            Ok(())
        } else {
            Err(PortError::NotFound { kind: "Node".to_string(), name: node.to_string() })
        }
    }

    /// A missing node is not an error: it is gone already.
    async fn untaint_node(&self, node: &str, key: &str, uncordon: bool) -> Result<(), PortError> {
        self.lock().untaint(node, key, uncordon);
        Ok(())
    }

    async fn evict_pod(&self, namespace: &str, name: &str, grace_period_seconds: i64) -> Result<(), EvictionError> {
        self.lock().evict(namespace, name, grace_period_seconds)
    }

    async fn get_scale(&self, target: &ScaleTarget) -> Result<Scale, PortError> {
        self.lock().get_scale(target)
    }

    async fn set_scale(&self, target: &ScaleTarget, replicas: i32) -> Result<(), PortError> {
        self.lock().set_scale(target, replicas)
    }

    async fn write_status(
        &self,
        namespace: &str,
        name: &str,
        status_yaml: &str,
        last_updated: &str,
    ) -> Result<(), PortError> {
        self.lock().write_status(namespace, name, status_yaml, last_updated);
        Ok(())
    }

    async fn record_event(&self, event: Event) -> Result<(), PortError> {
        self.lock().record_event(event);
        Ok(())
    }

    async fn update_hpa_status(
        &self,
        namespace: &str,
        name: &str,
        status: k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        self.lock().update_hpa_status(namespace, name, status)
    }

    async fn update_wpa_status(
        &self,
        namespace: &str,
        name: &str,
        status: crate::hpa::wpa::WatermarkPodAutoscalerStatus,
    ) -> Result<(), PortError> {
        self.lock().update_wpa_status(namespace, name, status)
    }
}

/// The virtual clock: reads the shared virtual time. `sleep` returns at once and moves
/// nothing: in a simulation the driver decides when time advances (it advances the cluster
/// between loop iterations), so a loop that sleeps simply hands control back to it.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    time: SharedTime,
}

impl VirtualClock {
    pub fn new(time: SharedTime) -> Self {
        VirtualClock { time }
    }
}

#[async_trait]
impl Clock for VirtualClock {
    fn now(&self) -> Timestamp {
        self.time.now()
    }

    async fn sleep(&self, _duration: Duration) {}
}
