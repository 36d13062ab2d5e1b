//! `ClusterView`: one consistent reading of the Kubernetes objects the autoscaler decides on.
//! The `kube` adapter fills it from reflector stores, `memory` from the in-memory cluster, and
//! `plan` from a `kubectl` dump.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

#[derive(Clone, Debug, Default)]
pub struct ClusterView {
    pub nodes: Vec<Arc<Node>>,
    pub pods: Vec<Arc<Pod>>,
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
}

impl ClusterView {
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
