//! Deployments, ReplicaSets, StatefulSets, Jobs and DaemonSets.

use simulator::testing::{node, with_node_labels, with_taint};

use super::*;

fn owner_kind(c: &MemoryCluster, namespace: &str, name: &str) -> String {
    let pod = c.pod(namespace, name).unwrap();
    pod.metadata.owner_references.as_ref().unwrap()[0].kind.clone()
}

#[test]
fn deployment_gets_one_replica_set_that_keeps_its_replicas() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(deployment("web", 3, "100m", "128Mi")).unwrap();
    c.advance(t(1));
    let view = c.view();
    assert_eq!(view.replicasets.len(), 1);
    let rs = &view.replicasets[0];
    let rs_name = rs.metadata.name.clone().unwrap();
    assert!(rs_name.starts_with("web-"));
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("Deployment", Some(true)));
    assert_eq!(owner.uid, c.deployment("default", "web").unwrap().metadata.uid.clone().unwrap());
    let pods = pod_names(&c, "web-");
    assert_eq!(pods, [format!("{rs_name}-0"), format!("{rs_name}-1"), format!("{rs_name}-2")]);
    assert_eq!(owner_kind(&c, "default", &pods[0]), "ReplicaSet");
    c.advance(t(2));
    c.advance(t(3));
    let status = c.deployment("default", "web").unwrap().status.clone().unwrap();
    assert_eq!((status.replicas, status.ready_replicas, status.available_replicas), (Some(3), Some(3), Some(3)));
}

#[test]
fn replica_set_recreates_an_evicted_pod_as_a_new_pending_pod() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(deployment("web", 2, "100m", "128Mi")).unwrap();
    c.advance(t(1));
    c.advance(t(2));
    let victim = pod_names(&c, "web-")[0].clone();
    c.evict("default", &victim, 30).unwrap();
    let evicted = c.pod("default", &victim).unwrap();
    assert!(evicted.metadata.deletion_timestamp.is_some(), "terminating during its grace period");
    c.advance(t(3));
    let pods = pod_names(&c, "web-");
    assert_eq!(pods.len(), 3, "a replacement exists while the evicted pod terminates: {pods:?}");
    let replacement = pods
        .iter()
        .find(|n| **n != victim && c.pod("default", n).unwrap().metadata.creation_timestamp.as_ref().unwrap().0 == t(3))
        .unwrap()
        .clone();
    assert_eq!(phase_of(&c, "default", &replacement), "Pending");
    c.advance(t(40));
    assert!(c.pod("default", &victim).is_none(), "gone after the grace period");
    assert_eq!(pod_names(&c, "web-").len(), 2);
}

#[test]
fn scaling_a_replica_set_down_removes_the_newest_pods_first() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(deployment("web", 2, "100m", "128Mi")).unwrap();
    c.advance(t(1));
    c.advance(t(2));
    let target = crate::ports::ScaleTarget {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: "default".into(),
        name: "web".into(),
    };
    c.set_scale(&target, 3).unwrap();
    c.advance(t(10));
    c.advance(t(11));
    let newest = pod_names(&c, "web-")
        .into_iter()
        .max_by_key(|n| c.pod("default", n).unwrap().metadata.creation_timestamp.clone().map(|t| t.0))
        .unwrap();
    c.set_scale(&target, 2).unwrap();
    c.advance(t(12));
    assert!(c.pod("default", &newest).unwrap().metadata.deletion_timestamp.is_some(), "{newest} goes first");
    let terminating = c.pods().filter(|p| p.metadata.deletion_timestamp.is_some()).count();
    assert_eq!(terminating, 1);
}

#[test]
fn stateful_set_creates_ordinals_one_at_a_time_when_ordered() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(stateful_set("db", 3, "OrderedReady")).unwrap();
    c.advance(t(1));
    assert_eq!(pod_names(&c, "db-"), ["db-0"]);
    c.advance(t(2)); // db-0 runs and is Ready: db-1 is created
    assert_eq!(pod_names(&c, "db-"), ["db-0", "db-1"]);
    c.advance(t(3));
    assert_eq!(pod_names(&c, "db-"), ["db-0", "db-1", "db-2"]);
    let pod = c.pod("default", "db-1").unwrap();
    assert_eq!(pod.metadata.labels.as_ref().unwrap()["statefulset.kubernetes.io/pod-name"], "db-1");
    assert_eq!(pod.spec.as_ref().unwrap().hostname.as_deref(), Some("db-1"));
}

#[test]
fn stateful_set_replaces_an_evicted_pod_under_the_same_name_after_it_is_gone() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(stateful_set("db", 2, "Parallel")).unwrap();
    c.advance(t(1));
    assert_eq!(pod_names(&c, "db-"), ["db-0", "db-1"], "Parallel creates all at once");
    c.advance(t(2));
    let old_uid = c.pod("default", "db-0").unwrap().metadata.uid.clone();
    c.evict("default", "db-0", 10).unwrap();
    c.advance(t(5));
    assert_eq!(c.pod("default", "db-0").unwrap().metadata.uid, old_uid, "still terminating");
    c.advance(t(12));
    c.advance(t(13));
    let pod = c.pod("default", "db-0").unwrap();
    assert_ne!(pod.metadata.uid, old_uid, "recreated as a new pod");
    assert!(pod.metadata.deletion_timestamp.is_none());
}

#[test]
fn stateful_set_scale_down_removes_the_highest_ordinal_first() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(stateful_set("db", 3, "OrderedReady")).unwrap();
    for s in 1..10 {
        c.advance(t(s));
    }
    let target = crate::ports::ScaleTarget {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        namespace: "default".into(),
        name: "db".into(),
    };
    c.set_scale(&target, 1).unwrap();
    c.advance(t(10));
    assert!(c.pod("default", "db-2").unwrap().metadata.deletion_timestamp.is_some());
    assert!(c.pod("default", "db-1").unwrap().metadata.deletion_timestamp.is_none(), "one at a time");
    c.advance(t(45));
    c.advance(t(46));
    assert!(c.pod("default", "db-2").is_none());
    assert!(c.pod("default", "db-1").unwrap().metadata.deletion_timestamp.is_some());
}

#[test]
fn stateful_set_scale_down_goes_on_after_a_pending_pod_is_removed() {
    // Room for two of the three pods: db-2 stays Pending. Scaled to 0, db-2 goes at once (it
    // is unbound), and that must not stop the scale-down: db-1 is next, then db-0.
    let mut c = cluster();
    c.apply(node("n1", "250m", "16Gi")).unwrap();
    c.apply(stateful_set("db", 3, "OrderedReady")).unwrap();
    for s in 1..10 {
        c.advance(t(s));
    }
    assert_eq!(phase_of(&c, "default", "db-2"), "Pending");
    let target = crate::ports::ScaleTarget {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        namespace: "default".into(),
        name: "db".into(),
    };
    c.set_scale(&target, 0).unwrap();
    c.advance(t(10));
    assert!(c.pod("default", "db-2").is_none());
    assert!(c.pod("default", "db-1").unwrap().metadata.deletion_timestamp.is_some(), "db-1 is next");
    for s in [45, 46, 80, 81] {
        c.advance(t(s));
    }
    assert_eq!(pod_names(&c, "db-"), Vec::<String>::new());
}

#[test]
fn job_pods_complete_after_their_run_duration_until_completions_are_reached() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    c.apply(job("batch", 2, 3, "60s")).unwrap();
    c.advance(t(1));
    assert_eq!(pod_names(&c, "batch-").len(), 2, "parallelism 2");
    c.advance(t(2)); // running since they were bound at t(1)
    c.advance(t(60));
    assert!(pod_names(&c, "batch-").iter().all(|n| phase_of(&c, "default", n) == "Running"));
    c.advance(t(61)); // two succeed, the third is created
    let succeeded = pod_names(&c, "batch-").iter().filter(|n| phase_of(&c, "default", n) == "Succeeded").count();
    assert_eq!(succeeded, 2);
    let status = c.job("default", "batch").unwrap().status.clone().unwrap();
    assert_eq!(status.active, Some(1));
    for s in [62, 200] {
        c.advance(t(s));
    }
    let status = c.job("default", "batch").unwrap().status.clone().unwrap();
    assert_eq!(status.succeeded, Some(3));
    assert!(status.conditions.unwrap().iter().any(|c| c.type_ == "Complete" && c.status == "True"));
    assert_eq!(pod_names(&c, "batch-").len(), 3, "finished pods stay until the Job goes");
    let pod = c.pod("default", &pod_names(&c, "batch-")[0]).unwrap();
    assert_eq!(pod.metadata.labels.as_ref().unwrap()["job-name"], "batch");
}

#[test]
fn finished_job_with_ttl_is_deleted_with_its_pods() {
    let mut c = cluster();
    c.apply(node("n1", "8", "16Gi")).unwrap();
    let mut j = job("once", 1, 1, "10s");
    j.spec.as_mut().unwrap().ttl_seconds_after_finished = Some(100);
    c.apply(j).unwrap();
    for s in [1, 2, 12, 13] {
        c.advance(t(s));
    }
    assert!(c.job("default", "once").unwrap().status.as_ref().unwrap().completion_time.is_some());
    c.advance(t(120));
    assert!(c.job("default", "once").is_none());
    assert!(pod_names(&c, "once-").is_empty());
}

#[test]
fn daemon_set_puts_a_pod_on_every_matching_node_including_new_ones() {
    let mut c = cluster();
    c.apply(with_node_labels(node("a", "4", "8Gi"), &[("pool", "web")])).unwrap();
    c.apply(with_node_labels(node("b", "4", "8Gi"), &[("pool", "batch")])).unwrap();
    c.apply(daemon_set("agent", Some(json!({"pool": "web"})))).unwrap();
    c.apply(daemon_set("logs", None)).unwrap();
    c.advance(t(1));
    let on = |c: &MemoryCluster, node: &str| -> Vec<String> {
        let mut names: Vec<String> =
            c.pods_on_node(node).iter().map(|p| p.metadata.labels.as_ref().unwrap()["app"].clone()).collect();
        names.sort();
        names
    };
    assert_eq!(on(&c, "a"), ["agent", "logs"]);
    assert_eq!(on(&c, "b"), ["logs"]);
    c.apply(with_node_labels(node("c", "4", "8Gi"), &[("pool", "web")])).unwrap();
    c.advance(t(2));
    assert_eq!(on(&c, "c"), ["agent", "logs"]);
    let status = c.daemon_set("kube-system", "agent").unwrap().status.clone().unwrap();
    assert_eq!((status.desired_number_scheduled, status.current_number_scheduled), (2, 2));
    let pod = &c.pods_on_node("c")[0];
    assert_eq!(pod.metadata.owner_references.as_ref().unwrap()[0].kind, "DaemonSet");
}

#[tokio::test]
async fn daemon_set_skips_nodes_with_untolerated_taints_and_waits_for_ready_nodes() {
    use cloudprovider::NodeGroup;
    let startup = MemoryClusterConfig { node_startup_delay: Duration::from_secs(30), ..Default::default() };
    let (mut c, cloud) = cloud_cluster(startup, vec![group("general", 0, Duration::from_secs(10))]);
    c.apply(with_taint(node("gpu", "4", "8Gi"), "nvidia.com/gpu", "present", "NoSchedule")).unwrap();
    c.apply(daemon_set("logs", None)).unwrap();
    c.advance(t(1));
    assert!(c.pods_on_node("gpu").is_empty());
    cloud.group("general").unwrap().increase_size(1).await.unwrap();
    c.advance(t(20));
    assert!(pod_names(&c, "logs-").is_empty(), "the new node is NotReady (not-ready taint)");
    c.advance(t(50));
    assert_eq!(c.pods_on_node("general-1").len(), 1);
}
