//! The scale subresource, status ConfigMap, events, the view, and the ports over a handle.

use k8s_openapi::api::core::v1::Taint;
use simulator::testing::node;

use super::*;
use crate::ports::{
    Clock, ClusterActions, ClusterReader, Event, EventReason, EventType, ObjectRef, PortError, Scale, ScaleTarget,
};

fn target(kind: &str, name: &str) -> ScaleTarget {
    ScaleTarget { api_version: "apps/v1".into(), kind: kind.into(), namespace: "default".into(), name: name.into() }
}

#[test]
fn scale_subresource_reports_replicas_and_selector_and_sets_replicas() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(deployment("web", 2, "100m", "128Mi")).unwrap();
    c.advance(t(1));
    assert_eq!(
        c.get_scale(&target("Deployment", "web")).unwrap(),
        Scale { spec_replicas: 2, status_replicas: 2, selector: "app=web".into() }
    );
    c.set_scale(&target("Deployment", "web"), 4).unwrap();
    c.advance(t(2));
    assert_eq!(c.get_scale(&target("Deployment", "web")).unwrap().status_replicas, 4);
    assert_eq!(pod_names(&c, "web-").len(), 4);
    let rs = c.view().replicasets[0].metadata.name.clone().unwrap();
    assert_eq!(c.get_scale(&target("ReplicaSet", &rs)).unwrap().spec_replicas, 4);
}

#[test]
fn scale_subresource_errors_name_the_problem() {
    let mut c = cluster();
    c.apply(deployment("web", 1, "100m", "128Mi")).unwrap();
    assert!(matches!(c.get_scale(&target("Deployment", "nope")), Err(PortError::NotFound { .. })));
    assert!(
        matches!(c.set_scale(&target("Deployment", "web"), -1), Err(PortError::Api(m)) if m.contains("spec.replicas"))
    );
    assert!(matches!(c.get_scale(&target("CronJob", "web")), Err(PortError::Api(_))));
}

/// The pods a selector selects, as a scan of the view finds them.
fn scanned(c: &mut MemoryCluster, selector: &simulator::labels::Selector) -> Vec<String> {
    c.view().pods.iter().filter(|p| selector.matches(p.labels())).map(|p| p.name().to_string()).collect()
}

#[test]
fn selected_pods_follow_every_change_of_the_pods_though_the_last_answer_is_kept() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(deployment("web", 2, "100m", "128Mi")).unwrap();
    c.advance(t(1));
    let web = simulator::labels::Selector::parse("app=web").unwrap();
    let names = |pods: Vec<Arc<simulator::PodInfo>>| pods.iter().map(|p| p.name().to_string()).collect::<Vec<_>>();
    let first = names(c.selected_pods("default", &web));
    assert_eq!(first.len(), 2);
    assert_eq!(first, scanned(&mut c, &web));
    // Asked again with nothing changed: the same answer.
    assert_eq!(names(c.selected_pods("default", &web)), first);
    // Another selector, another namespace: not the kept answer.
    let bare = simulator::labels::Selector::parse("app=bare").unwrap();
    assert!(c.selected_pods("default", &bare).is_empty());
    assert!(c.selected_pods("other", &web).is_empty());
    // A pod added, then the Deployment scaled up: each answer has them.
    c.apply(pending_pod("bare", "100m", "128Mi")).unwrap();
    assert_eq!(names(c.selected_pods("default", &bare)), vec!["bare".to_string()]);
    c.set_scale(&target("Deployment", "web"), 3).unwrap();
    c.advance(t(2));
    let scaled = names(c.selected_pods("default", &web));
    assert_eq!(scaled.len(), 3);
    assert_eq!(scaled, scanned(&mut c, &web));
    // An eviction: the pod goes, its ReplicaSet makes another; the answer holds the pods'
    // current versions.
    c.evict("default", &scaled[0], 0).unwrap();
    c.advance(t(60));
    let after = c.selected_pods("default", &web);
    assert!(!names(after.clone()).contains(&scaled[0]));
    assert_eq!(names(after.clone()), scanned(&mut c, &web));
    let current: Vec<_> = c.view().pods.iter().filter(|p| web.matches(p.labels())).cloned().collect();
    assert!(after.iter().zip(&current).all(|(a, b)| Arc::ptr_eq(a, b)), "the answer holds the pods' current versions");
}

#[test]
fn status_config_map_is_created_then_replaced() {
    let mut c = cluster();
    c.write_status("kube-system", "cluster-autoscaler-status", "autoscalerStatus: Initializing\n", "then");
    c.write_status("kube-system", "cluster-autoscaler-status", "autoscalerStatus: Running\n", "now");
    let cm = c.config_map("kube-system", "cluster-autoscaler-status").unwrap();
    assert_eq!(cm.data.as_ref().unwrap()["status"], "autoscalerStatus: Running\n");
    assert_eq!(cm.metadata.annotations.as_ref().unwrap()[LAST_UPDATED_ANNOTATION], "now");
    assert_eq!(c.view().config_maps.len(), 1);
}

#[test]
fn view_is_cached_until_a_kind_changes() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(deployment("web", 2, "100m", "128Mi")).unwrap();
    c.advance(t(1));
    c.advance(t(2));
    let first = c.view();
    c.advance(t(3));
    let second = c.view();
    assert!(Arc::ptr_eq(&first.pods[0], &second.pods[0]), "nothing changed: the same objects");
    assert_eq!(first.pods.len(), 2);
    c.apply(pending_pod("extra", "1", "1Gi")).unwrap();
    assert_eq!(c.view().pods.len(), 3);
}

#[test]
fn objects_without_names_or_with_bad_specs_are_refused_with_the_field() {
    let mut c = cluster();
    let mut nameless = pending_pod("x", "1", "1Gi");
    nameless.metadata.name = None;
    assert_eq!(c.apply(nameless), Err(MemoryClusterError::MissingName { kind: "Pod" }));
    let mut mismatched = deployment("web", 1, "1", "1Gi");
    mismatched.spec.as_mut().unwrap().selector = from_json(json!({"matchLabels": {"app": "other"}}));
    let error = c.apply(mismatched).unwrap_err().to_string();
    assert!(error.contains("Deployment default/web: spec.template.metadata.labels"), "{error}");
    let mut bad_duration = job("j", 1, 1, "soon");
    bad_duration.metadata.name = Some("j".into());
    let error = c.apply(bad_duration).unwrap_err().to_string();
    assert!(error.contains(RUN_DURATION_ANNOTATION), "{error}");
}

#[tokio::test]
async fn ports_over_a_handle_read_and_act_on_the_cluster() {
    let time = SharedTime::new(t(0));
    let handle = MemoryClusterHandle::new(MemoryCluster::new(config(), time.clone(), None));
    handle.lock().apply(node("n1", "8", "16Gi")).unwrap();
    handle.lock().advance(t(10));
    let clock = VirtualClock::new(time.clone());
    assert_eq!(clock.now(), t(10));
    clock.sleep(Duration::from_secs(10)).await;
    assert_eq!(clock.now(), t(10), "sleeping moves no virtual time; the driver does");
    assert_eq!(handle.view().await.unwrap().nodes.len(), 1);

    let taint = Taint {
        key: "ToBeDeletedByClusterAutoscaler".into(),
        value: Some("10".into()),
        effect: "NoSchedule".into(),
        ..Default::default()
    };
    handle.taint_node("n1", taint.clone(), true).await.unwrap();
    handle.taint_node("n1", taint.clone(), true).await.unwrap();
    let node = handle.lock().node("n1").unwrap().clone();
    assert_eq!(node.spec.as_ref().unwrap().taints.as_ref().unwrap().len(), 1, "refreshing does not duplicate");
    assert_eq!(node.spec.as_ref().unwrap().unschedulable, Some(true));
    assert!(matches!(handle.taint_node("gone", taint, false).await, Err(PortError::NotFound { .. })));
    handle.untaint_node("n1", "ToBeDeletedByClusterAutoscaler", true).await.unwrap();
    handle.untaint_node("gone", "ToBeDeletedByClusterAutoscaler", true).await.unwrap();
    let node = handle.lock().node("n1").unwrap().clone();
    assert!(node.spec.as_ref().unwrap().taints.as_ref().unwrap().is_empty());
    assert_eq!(node.spec.as_ref().unwrap().unschedulable, None);

    let event = Event {
        object: ObjectRef::node("n1"),
        event_type: EventType::Normal,
        reason: EventReason::ScaleDown,
        message: "node removed by cluster autoscaler".into(),
    };
    handle.record_event(event.clone()).await.unwrap();
    handle.write_status("kube-system", "cluster-autoscaler-status", "x", "y").await.unwrap();
    let cluster = handle.lock();
    assert_eq!(cluster.events(), [RecordedEvent { at: t(10), event }]);
}

/// The soft taints follow the unneeded nodes, at most `budget` calls a loop: nodes already as
/// wanted cost nothing, so the next loop goes on where the budget stopped.
#[tokio::test]
async fn soft_taints_follow_the_unneeded_nodes_within_the_call_budget() {
    use crate::control::soft_taint::update_soft_taints;
    let time = SharedTime::new(t(0));
    let handle = MemoryClusterHandle::new(MemoryCluster::new(config(), time.clone(), None));
    for name in ["n1", "n2", "n3", "n4"] {
        handle.lock().apply(node(name, "8", "16Gi")).unwrap();
    }
    handle.lock().advance(t(10));
    let candidate = Taint {
        key: simulator::well_known::DELETION_CANDIDATE_TAINT.into(),
        value: Some("1".into()),
        effect: "PreferNoSchedule".into(),
        ..Default::default()
    };
    // n4 was unneeded in an earlier loop and is not any more.
    handle.taint_node("n4", candidate, false).await.unwrap();
    let unneeded: std::collections::BTreeSet<String> = ["n1", "n2", "n3"].map(String::from).into();
    let budget = Duration::from_secs(3);
    let view = handle.view().await.unwrap();
    let none = update_soft_taints(&view, &unneeded, &handle, 0, budget, t(10)).await;
    assert_eq!(none, (vec![], vec![]), "a budget of no calls makes none");
    let first = update_soft_taints(&view, &unneeded, &handle, 2, budget, t(10)).await;
    assert_eq!(first, (vec!["n1".to_string(), "n2".to_string()], vec![]));
    let view = handle.view().await.unwrap();
    let second = update_soft_taints(&view, &unneeded, &handle, 2, budget, t(20)).await;
    assert_eq!(second, (vec!["n3".to_string()], vec!["n4".to_string()]));
    let view = handle.view().await.unwrap();
    assert_eq!(update_soft_taints(&view, &unneeded, &handle, 2, budget, t(30)).await, (vec![], vec![]));
}
