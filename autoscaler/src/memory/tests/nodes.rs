//! The cloud → nodes bridge and node startup.

use cloudprovider::NodeGroup;
use cloudprovider_memory::FaultCount;

use super::*;
use crate::core::readiness::reports_ready;

fn has_not_ready_taint(c: &MemoryCluster, name: &str) -> bool {
    c.node(name).unwrap().spec.as_ref().unwrap().taints.iter().flatten().any(|t| t.key == NOT_READY_TAINT)
}

#[tokio::test]
async fn initial_instances_are_ready_nodes_after_the_first_advance() {
    let startup = MemoryClusterConfig { node_startup_delay: Duration::from_secs(30), ..Default::default() };
    let (mut c, _) = cloud_cluster(startup, vec![group("general", 2, Duration::from_secs(60))]);
    assert_eq!(c.nodes().count(), 0);
    c.advance(t(0));
    let names: Vec<String> = c.nodes().filter_map(|n| n.metadata.name.clone()).collect();
    assert_eq!(names, ["general-1", "general-2"]);
    assert!(c.nodes().all(|n| reports_ready(n)));
    assert_eq!(c.node("general-1").unwrap().spec.as_ref().unwrap().provider_id.as_deref(), Some("memory://general/1"));
}

#[tokio::test]
async fn node_registers_after_provisioning_delay_and_becomes_ready_after_startup_delay() {
    let startup = MemoryClusterConfig { node_startup_delay: Duration::from_secs(30), ..Default::default() };
    let (mut c, cloud) = cloud_cluster(startup, vec![group("general", 0, Duration::from_secs(60))]);
    c.advance(t(0));
    cloud.group("general").unwrap().increase_size(1).await.unwrap();
    c.advance(t(59));
    assert!(c.node("general-1").is_none(), "still provisioning");
    c.advance(t(60));
    let node = c.node("general-1").expect("registered when the provisioning delay ended");
    assert!(!reports_ready(node));
    assert_eq!(node.metadata.creation_timestamp.as_ref().unwrap().0, t(60));
    assert!(has_not_ready_taint(&c, "general-1"));
    c.apply(pending_pod("p", "1", "1Gi")).unwrap();
    c.advance(t(89));
    assert_eq!(node_of(&c, "default", "p"), None, "a NotReady node takes no pods");
    c.advance(t(90));
    let node = c.node("general-1").unwrap();
    assert!(reports_ready(node));
    let ready = node.status.as_ref().unwrap().conditions.as_ref().unwrap().iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(ready.last_transition_time.as_ref().unwrap().0, t(90));
    assert!(!has_not_ready_taint(&c, "general-1"));
    assert_eq!(node_of(&c, "default", "p").as_deref(), Some("general-1"));
}

#[tokio::test]
async fn never_registering_instance_never_shows_up_as_a_node() {
    let (mut c, cloud) = cloud_cluster(config(), vec![group("general", 0, Duration::from_secs(60))]);
    cloud.never_register("general", 1).unwrap();
    cloud.group("general").unwrap().increase_size(2).await.unwrap();
    c.advance(t(3_600));
    let names: Vec<String> = c.nodes().filter_map(|n| n.metadata.name.clone()).collect();
    assert_eq!(names, ["general-2"]);
    assert_eq!(cloud.group("general").unwrap().nodes().await.unwrap().len(), 2, "the cloud still has both");
}

#[tokio::test]
async fn deleted_instance_takes_its_node_and_pods_and_controllers_replace_them() {
    let (mut c, cloud) = cloud_cluster(config(), vec![group("general", 2, Duration::from_secs(60))]);
    c.advance(t(0));
    c.apply(deployment("web", 2, "1", "1Gi")).unwrap();
    c.advance(t(1));
    c.advance(t(2));
    let doomed = c.node("general-1").unwrap().clone();
    let pods_before = c.pods_on_node("general-1").len();
    assert!(pods_before > 0, "least-allocated spreads the replicas");
    cloud.group("general").unwrap().delete_nodes(&[(*doomed).clone()]).await.unwrap();
    c.advance(t(3));
    assert!(c.node("general-1").is_none());
    assert!(c.pods_on_node("general-1").is_empty());
    let running: Vec<String> = c
        .pods()
        .filter(|p| p.spec.as_ref().unwrap().node_name.as_deref() == Some("general-2"))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(running.len(), 2, "the replacement went to the remaining node: {running:?}");
}

#[tokio::test]
async fn failed_cloud_deletion_keeps_the_node() {
    let (mut c, cloud) = cloud_cluster(config(), vec![group("general", 1, Duration::from_secs(60))]);
    c.advance(t(0));
    cloud.fail_delete_nodes("general", FaultCount::Times(1), cloudprovider::CloudProviderError::cloud("boom")).unwrap();
    let node = (**c.node("general-1").unwrap()).clone();
    assert!(cloud.group("general").unwrap().delete_nodes(&[node]).await.is_err());
    c.advance(t(10));
    assert!(c.node("general-1").is_some());
}
