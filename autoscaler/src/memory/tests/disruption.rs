//! PodDisruptionBudget status and the eviction API.

use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
use simulator::testing::node;

use super::*;
use crate::ports::EvictionError;

/// A node and a Deployment `web` whose replicas all run and are Ready.
fn running_web(replicas: i32) -> MemoryCluster {
    let mut c = cluster();
    c.apply(node("n1", "16", "64Gi")).unwrap();
    c.apply(deployment("web", replicas, "100m", "128Mi")).unwrap();
    c.advance(t(1));
    c.advance(t(2));
    c
}

fn status(c: &MemoryCluster, name: &str) -> PodDisruptionBudgetStatus {
    c.pdb("default", name).unwrap().status.clone().unwrap()
}

fn summary(s: &PodDisruptionBudgetStatus) -> (i32, i32, i32, i32) {
    (s.current_healthy, s.desired_healthy, s.expected_pods, s.disruptions_allowed)
}

#[test]
fn pdb_status_counts_ready_pods_against_min_available() {
    let mut c = running_web(3);
    c.apply(pdb("web", "web", json!({"minAvailable": 2}))).unwrap();
    c.advance(t(3));
    let s = status(&c, "web");
    assert_eq!(summary(&s), (3, 2, 3, 1));
    assert_eq!(s.observed_generation, Some(1));
    let condition = &s.conditions.as_ref().unwrap()[0];
    assert_eq!((condition.type_.as_str(), condition.status.as_str()), ("DisruptionAllowed", "True"));
}

#[test]
fn pdb_percentages_and_max_unavailable_use_the_controllers_scale() {
    let mut c = running_web(3);
    c.apply(pdb("half", "web", json!({"minAvailable": "50%"}))).unwrap();
    c.advance(t(3));
    assert_eq!(summary(&status(&c, "half")), (3, 2, 3, 1), "ceil(50% of 3) = 2");
    c.delete(ObjectKind::PodDisruptionBudget, &ObjectKey::new("default", "half"));
    c.apply(pdb("one", "web", json!({"maxUnavailable": 1}))).unwrap();
    c.advance(t(4));
    assert_eq!(summary(&status(&c, "one")), (3, 2, 3, 1));
    c.delete(ObjectKind::PodDisruptionBudget, &ObjectKey::new("default", "one"));
    c.apply(pdb("third", "web", json!({"maxUnavailable": "34%"}))).unwrap();
    c.advance(t(5));
    assert_eq!(summary(&status(&c, "third")), (3, 1, 3, 2), "ceil(34% of 3) = 2 may be unavailable");
}

#[test]
fn pdb_over_pods_without_controller_fails_safe_for_percentages() {
    let mut c = cluster();
    c.apply(node("n1", "16", "64Gi")).unwrap();
    let mut bare = pending_pod("bare", "100m", "128Mi");
    bare.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    c.apply(bare).unwrap();
    c.apply(pdb("web", "web", json!({"maxUnavailable": "50%"}))).unwrap();
    c.advance(t(1));
    c.advance(t(2));
    assert_eq!(status(&c, "web").disruptions_allowed, 0);
}

#[test]
fn eviction_blocked_by_pdb_returns_blocked_by_pdb_and_leaves_the_pod() {
    let mut c = running_web(2);
    c.apply(pdb("web", "web", json!({"minAvailable": 2}))).unwrap();
    c.advance(t(3));
    let pod = pod_names(&c, "web-")[0].clone();
    assert_eq!(c.evict("default", &pod, 30), Err(EvictionError::BlockedByPdb(format!("default/{pod}"))));
    assert!(c.pod("default", &pod).unwrap().metadata.deletion_timestamp.is_none());
}

#[test]
fn eviction_uses_one_disruption_of_the_budget() {
    let mut c = running_web(3);
    c.apply(pdb("web", "web", json!({"minAvailable": 2}))).unwrap();
    c.advance(t(3));
    let pods = pod_names(&c, "web-");
    c.evict("default", &pods[0], 30).unwrap();
    assert_eq!(c.evict("default", &pods[1], 30), Err(EvictionError::BlockedByPdb(format!("default/{}", pods[1]))));
    assert!(c.pod("default", &pods[0]).unwrap().metadata.deletion_timestamp.is_some());
    assert_eq!(c.evict("default", "missing", 30), Err(EvictionError::NotFound("default/missing".into())));
}

#[test]
fn pending_and_terminating_pods_are_evicted_without_asking_the_budget() {
    let mut c = running_web(2);
    c.apply(pdb("web", "web", json!({"minAvailable": 5}))).unwrap();
    let mut waiting = pending_pod("waiting", "100", "1Gi");
    waiting.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    c.apply(waiting).unwrap();
    c.advance(t(3));
    assert_eq!(status(&c, "web").disruptions_allowed, 0);
    c.evict("default", "waiting", 30).unwrap();
    assert!(c.pod("default", "waiting").is_none(), "an unbound pod goes at once");
}

#[test]
fn unready_pod_may_be_evicted_while_the_budget_is_healthy() {
    let mut c = running_web(3);
    c.apply(pdb("web", "web", json!({"minAvailable": 3}))).unwrap();
    c.advance(t(3));
    // Make one replica unready by hand, as a failing readiness probe would.
    let name = pod_names(&c, "web-")[0].clone();
    let mut pod = (**c.pod("default", &name).unwrap()).clone();
    for condition in pod.status.as_mut().unwrap().conditions.as_mut().unwrap() {
        if condition.type_ == "Ready" {
            condition.status = "False".into();
        }
    }
    c.apply(pod).unwrap();
    c.advance(t(4));
    let s = status(&c, "web");
    assert_eq!(summary(&s), (2, 3, 3, 0));
    assert_eq!(
        c.evict("default", &name, 30),
        Err(EvictionError::BlockedByPdb(format!("default/{name}"))),
        "budget unhealthy"
    );
    c.apply(pdb("web", "web", json!({"minAvailable": 3, "unhealthyPodEvictionPolicy": "AlwaysAllow"}))).unwrap();
    c.evict("default", &name, 30).unwrap();
}

#[test]
fn pod_selected_by_two_pdbs_cannot_be_evicted() {
    let mut c = running_web(2);
    c.apply(pdb("a", "web", json!({"maxUnavailable": 1}))).unwrap();
    c.apply(pdb("b", "web", json!({"maxUnavailable": 1}))).unwrap();
    c.advance(t(3));
    let pod = pod_names(&c, "web-")[0].clone();
    assert!(matches!(c.evict("default", &pod, 30), Err(EvictionError::Failed { .. })));
}
