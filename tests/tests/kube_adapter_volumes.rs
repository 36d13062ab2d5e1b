//! The kube-rs adapter reads what the scheduler's volume filters need (PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses, CSINodes) from the fake API server, and follows changes.

use std::sync::Arc;

use autoscaler::kube_adapter::{KubeClients, KubeCluster};
use autoscaler::ports::ClusterReader;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use serde_json::json;
use tests::eventually;
use tests::fake_apiserver::FakeApiServer;

fn names<T: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>>(
    objects: &[Arc<T>],
) -> Vec<String> {
    let mut names: Vec<String> = objects.iter().map(|o| o.metadata().name.clone().unwrap_or_default()).collect();
    names.sort();
    names
}

fn claim(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "db"},
        "spec": {"storageClassName": "gp3", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "10Gi"}}}
    }))
    .unwrap()
}

#[tokio::test]
async fn view_carries_claims_volumes_classes_and_csi_nodes() {
    let server = FakeApiServer::start().await;
    server.seed(&claim("data-db-0"));
    server.seed::<PersistentVolume>(
        &serde_json::from_value(json!({
            "metadata": {"name": "pv-a"},
            "spec": {"capacity": {"storage": "10Gi"}, "storageClassName": "gp3",
                     "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}]}}}
        }))
        .unwrap(),
    );
    server.seed::<StorageClass>(
        &serde_json::from_value(json!({
            "metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"
        }))
        .unwrap(),
    );
    server.seed::<CSINode>(
        &serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}}]}
        }))
        .unwrap(),
    );
    let clients = KubeClients::from_config(server.kube_config(), -1.0, 0).unwrap();
    let cluster = KubeCluster::start(clients.client, "kube-system");
    let view = cluster.view().await.unwrap();
    assert!(view.volumes_observed, "the controller always knows the cluster's volumes");
    assert_eq!(names(&view.persistent_volume_claims), ["data-db-0"]);
    assert_eq!(names(&view.persistent_volumes), ["pv-a"]);
    assert_eq!(names(&view.storage_classes), ["gp3"]);
    assert_eq!(names(&view.csi_nodes), ["n1"]);
    assert_eq!(view.csi_nodes[0].spec.drivers[0].allocatable.as_ref().and_then(|a| a.count), Some(25));

    // A claim created later (a new StatefulSet replica) reaches the view through the watch.
    server.seed(&claim("data-db-1"));
    eventually("the new claim in the view", || async {
        let view = cluster.view().await.ok()?;
        (names(&view.persistent_volume_claims) == ["data-db-0", "data-db-1"]).then_some(())
    })
    .await;
}
