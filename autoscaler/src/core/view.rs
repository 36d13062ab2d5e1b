//! `ClusterView`: one consistent reading of the Kubernetes objects the autoscaler decides on.
//! The `kube` adapter fills it from reflector stores, `memory` from the in-memory cluster, and
//! `plan` from a `kubectl` dump.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, ReplicationController,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use simulator::PodInfo;
use simulator::volumes::VolumeIndex;

pub use super::shared_list::SharedList;

#[derive(Clone, Debug, Default)]
pub struct ClusterView {
    pub nodes: Vec<Arc<Node>>,
    /// Pods in their compact form (`simulator::pod`), converted once per version by the source.
    pub pods: SharedList<PodInfo>,
    pub pdbs: Vec<Arc<PodDisruptionBudget>>,
    pub daemonsets: Vec<Arc<DaemonSet>>,
    pub replicasets: Vec<Arc<ReplicaSet>>,
    pub statefulsets: Vec<Arc<StatefulSet>>,
    pub jobs: Vec<Arc<Job>>,
    pub replication_controllers: Vec<Arc<ReplicationController>>,
    pub deployments: Vec<Arc<Deployment>>,
    pub config_maps: Vec<Arc<ConfigMap>>,
    pub namespaces: Vec<Arc<Namespace>>,
    pub hpas: Vec<Arc<HorizontalPodAutoscaler>>,
    /// `datadoghq.com/v1alpha1` WatermarkPodAutoscalers (when the CRD exists).
    pub wpas: Vec<Arc<crate::hpa::wpa::WatermarkPodAutoscaler>>,
    /// What the scheduler's volume filters read: pods with claims fit only where their volumes
    /// can follow (zonal disks, `allowedTopologies`, CSI attach limits).
    pub persistent_volume_claims: Vec<Arc<PersistentVolumeClaim>>,
    pub persistent_volumes: Vec<Arc<PersistentVolume>>,
    pub storage_classes: Vec<Arc<StorageClass>>,
    pub csi_nodes: Vec<Arc<CSINode>>,
    /// The source reports the four kinds above (the kube adapter and the memory cluster always
    /// do; a `plan` dump does when it holds any of them). When false the volume filters are
    /// off: a claim missing from a dump taken without `pvc,pv,…` is not a missing claim.
    pub volumes_observed: bool,
}

impl ClusterView {
    /// The view's workload controllers, as drainability rules look pods' owners up.
    pub fn controllers(&self) -> simulator::drainability::Controllers {
        simulator::drainability::Controllers::new(
            &self.replicasets,
            &self.replication_controllers,
            &self.statefulsets,
            &self.jobs,
            &self.daemonsets,
        )
    }

    /// The volume index for the snapshot, when the source reports volumes. CSI volume limits
    /// only with `csi_limits` (upstream's `--enable-csi-node-aware-scheduling`, off by default:
    /// without it upstream's snapshot holds no CSINodes, so no node has a known limit).
    pub fn volume_index(&self, csi_limits: bool) -> Option<VolumeIndex> {
        let csi_nodes = if csi_limits { self.csi_nodes.as_slice() } else { &[] };
        self.volumes_observed.then(|| {
            VolumeIndex::new(
                self.persistent_volume_claims.iter().cloned(),
                self.persistent_volumes.iter().cloned(),
                self.storage_classes.iter().cloned(),
                csi_nodes.iter().cloned(),
            )
        })
    }

    /// The priority expander's ConfigMap in `namespace`, if it exists.
    pub fn priority_expander_config_map(&self, namespace: &str) -> Option<&ConfigMap> {
        self.config_maps
            .iter()
            .find(|c| {
                c.metadata.name.as_deref() == Some(expander::priority::PRIORITY_CONFIG_MAP_NAME)
                    && c.metadata.namespace.as_deref() == Some(namespace)
            })
            .map(|c| &**c)
    }

    /// The `priorities` value of the priority expander's ConfigMap in `namespace`.
    pub fn priority_expander_config(&self, namespace: &str) -> Option<&str> {
        self.priority_expander_config_map(namespace)
            .and_then(|c| c.data.as_ref())
            .and_then(|d| d.get(expander::priority::PRIORITY_CONFIG_MAP_KEY))
            .map(String::as_str)
    }
}
