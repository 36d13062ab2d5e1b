//! The kube-rs adapter (`autoscaler::kube_adapter`) against the fake API server.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use autoscaler::kube_adapter::{
    KubeActions, KubeActionsOptions, KubeClientOptions, KubeClients, KubeCluster, KubeClusterOptions,
    STATUS_LAST_UPDATED_ANNOTATION,
};
use autoscaler::ports::{
    ClusterActions, ClusterReader, Event, EventReason, EventType, EvictionError, ObjectRef, PortError, ScaleTarget,
};
use k8s_openapi::api::apps::v1::{
    DaemonSet, Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec, StatefulSetStatus,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Event as CoreEvent, Namespace, Node, NodeSpec, Pod, PodSpec, PodStatus, ReplicationController,
    ReplicationControllerSpec, Taint,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use tests::eventually;
use tests::fake_apiserver::{FakeApiServer, Fault, Verb};

const PRIORITY_CONFIG_MAP: &str = "cluster-autoscaler-priority-expander";

/// The reflectors `KubeCluster` runs without the WPA CRD: one watch each.
const REFLECTORS: usize = 16;

fn meta(namespace: Option<&str>, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(Into::into),
        labels: (!labels.is_empty()).then(|| labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..Default::default()
    }
}

fn selector(app: &str) -> LabelSelector {
    LabelSelector { match_labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])), ..Default::default() }
}

fn node(name: &str) -> Node {
    Node { metadata: meta(None, name, &[]), ..Default::default() }
}

fn pod(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: meta(Some(namespace), name, labels),
        spec: Some(PodSpec { node_name: Some("n1".into()), ..Default::default() }),
        status: Some(PodStatus { phase: Some("Running".into()), ..Default::default() }),
    }
}

fn pdb(name: &str, app: &str, disruptions_allowed: i32) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: meta(Some("default"), name, &[]),
        spec: Some(PodDisruptionBudgetSpec { selector: Some(selector(app)), ..Default::default() }),
        status: Some(PodDisruptionBudgetStatus { disruptions_allowed, ..Default::default() }),
    }
}

fn config_map(namespace: &str, name: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(Some(namespace), name, &[]),
        data: Some(BTreeMap::from([("priorities".to_string(), "10:\n- .*\n".to_string())])),
        ..Default::default()
    }
}

fn to_be_deleted_taint() -> Taint {
    Taint {
        key: "ToBeDeletedByClusterAutoscaler".into(),
        value: Some("1700000000".into()),
        effect: "NoSchedule".into(),
        time_added: None,
    }
}

fn clients(server: &FakeApiServer) -> KubeClients {
    // No client-side rate limit: the tests issue bursts of requests.
    KubeClients::from_config(server.kube_config(), -1.0, 0).unwrap()
}

fn actions(server: &FakeApiServer) -> KubeActions {
    KubeActions::with_options(
        clients(server),
        KubeActionsOptions { conflict_retry_interval: Duration::from_millis(10), ..Default::default() },
    )
}

fn cluster(server: &FakeApiServer) -> KubeCluster {
    KubeCluster::start(clients(server).client, "kube-system")
}

fn names<T: k8s_openapi::Metadata<Ty = ObjectMeta>>(objects: &[std::sync::Arc<T>]) -> Vec<String> {
    let mut names: Vec<String> = objects.iter().map(|o| o.metadata().name.clone().unwrap_or_default()).collect();
    names.sort();
    names
}

fn pod_names<'p>(pods: impl IntoIterator<Item = &'p std::sync::Arc<simulator::PodInfo>>) -> Vec<String> {
    let mut names: Vec<String> = pods.into_iter().map(|p| p.name().to_string()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn view_contains_every_seeded_kind_after_sync() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    server.seed(&node("n2"));
    server.seed(&pod("default", "p1", &[]));
    server.seed(&pod("other", "p2", &[]));
    server.seed(&pdb("web", "web", 1));
    server.seed(&DaemonSet { metadata: meta(Some("kube-system"), "ds", &[]), ..Default::default() });
    server.seed(&ReplicaSet { metadata: meta(Some("default"), "rs", &[]), ..Default::default() });
    server.seed(&StatefulSet { metadata: meta(Some("default"), "sts", &[]), ..Default::default() });
    server.seed(&Deployment { metadata: meta(Some("default"), "deploy", &[]), ..Default::default() });
    server.seed(&Job { metadata: meta(Some("default"), "job", &[]), ..Default::default() });
    server.seed(&ReplicationController { metadata: meta(Some("default"), "rc", &[]), ..Default::default() });
    server.seed(&Namespace { metadata: meta(None, "default", &[]), ..Default::default() });
    server.seed(&config_map("kube-system", PRIORITY_CONFIG_MAP));
    server.seed(&config_map("kube-system", "unrelated"));
    server.seed(&config_map("default", PRIORITY_CONFIG_MAP));

    let cluster = cluster(&server);
    let view = cluster.view().await.unwrap();
    assert_eq!(names(&view.nodes), ["n1", "n2"]);
    assert_eq!(pod_names(&view.pods), ["p1", "p2"]);
    assert_eq!(names(&view.pdbs), ["web"]);
    assert_eq!(names(&view.daemonsets), ["ds"]);
    assert_eq!(names(&view.replicasets), ["rs"]);
    assert_eq!(names(&view.statefulsets), ["sts"]);
    assert_eq!(names(&view.deployments), ["deploy"]);
    assert_eq!(names(&view.jobs), ["job"]);
    assert_eq!(names(&view.replication_controllers), ["rc"]);
    assert_eq!(names(&view.namespaces), ["default"]);
    assert_eq!(view.config_maps.len(), 1, "only the priority expander's ConfigMap in --namespace is watched");
    assert_eq!(view.priority_expander_config("kube-system"), Some("10:\n- .*\n"));
}

#[tokio::test]
async fn initial_lists_read_the_watch_cache_unpaginated_as_informers_do() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    server.seed(&pod("default", "p1", &[]));
    let cluster = cluster(&server);
    cluster.view().await.unwrap();
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && (r.path == "/api/v1/pods" || r.path == "/api/v1/nodes"))
        .filter(|r| !r.query.contains("watch=true") && !r.query.contains("watch=1"))
        .collect();
    assert!(lists.len() >= 2, "{lists:?}");
    for list in &lists {
        assert!(list.query.contains("resourceVersion=0"), "{list:?}");
        assert!(!list.query.contains("limit="), "{list:?}");
    }
}

#[tokio::test]
async fn view_is_transient_until_the_caches_sync() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    server.inject_fault(Fault::new("/api/v1/nodes", 500).verb(Verb::List).times(usize::MAX));
    let cluster = KubeCluster::start_with(
        clients(&server).client,
        KubeClusterOptions { sync_timeout: Duration::from_millis(200), ..KubeClusterOptions::new("kube-system") },
    );
    assert!(matches!(cluster.view().await, Err(PortError::Transient(_))));
    server.clear_faults();
    let view = eventually("the view once nodes can be listed", || async { cluster.view().await.ok() }).await;
    assert_eq!(names(&view.nodes), ["n1"]);
}

#[tokio::test]
async fn view_survives_dropped_watches_by_resuming() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let cluster = cluster(&server);
    cluster.view().await.unwrap();
    eventually("every reflector to watch", || async { (server.active_watches() == REFLECTORS).then_some(()) }).await;
    server.drop_watches();
    server.seed(&node("n2"));
    eventually("n2 after the watches were dropped", || async {
        let view = cluster.view().await.ok()?;
        (names(&view.nodes) == ["n1", "n2"]).then_some(())
    })
    .await;
    assert_eq!(
        server.request_count(Verb::List, "/api/v1/nodes"),
        1,
        "a dropped watch resumes from its version, without a list"
    );
}

#[tokio::test]
async fn view_survives_410_gone_and_keeps_serving_the_last_state_while_relisting() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let cluster = cluster(&server);
    cluster.view().await.unwrap();
    eventually("every reflector to watch", || async { (server.active_watches() == REFLECTORS).then_some(()) }).await;
    // Relists of nodes fail until the fault is cleared.
    server.inject_fault(Fault::new("/api/v1/nodes", 500).verb(Verb::List).times(usize::MAX));
    server.expire_watches();
    eventually("a failed relist of nodes", || async {
        (server.request_count(Verb::List, "/api/v1/nodes") >= 2).then_some(())
    })
    .await;
    let meanwhile = cluster.view().await.unwrap();
    assert_eq!(names(&meanwhile.nodes), ["n1"], "the store serves its last state while the relist fails");
    server.clear_faults();
    server.seed(&node("n2"));
    eventually("n2 after the relist", || async {
        let view = cluster.view().await.ok()?;
        (names(&view.nodes) == ["n1", "n2"]).then_some(())
    })
    .await;
}

#[tokio::test]
async fn stopped_cluster_keeps_its_last_view() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let cluster = cluster(&server);
    cluster.view().await.unwrap();
    assert!(cluster.is_running());
    cluster.stop();
    assert!(!cluster.is_running());
    assert_eq!(names(&cluster.view().await.unwrap().nodes), ["n1"]);
}

/// A pending pod as kube-scheduler marks it, its PodScheduled condition changed at `changed`.
fn unschedulable_pod(name: &str, changed: Timestamp) -> Pod {
    Pod {
        metadata: meta(Some("default"), name, &[]),
        spec: Some(PodSpec::default()),
        status: Some(tests::unschedulable_status(Some(changed))),
    }
}

#[tokio::test]
async fn the_pod_watch_signals_new_unschedulable_pods_only() {
    let server = FakeApiServer::start().await;
    server.seed(&unschedulable_pod("listed", Timestamp::now()));
    let cluster = cluster(&server);
    let signal = cluster.unschedulable_pods();
    cluster.view().await.unwrap();
    // In the initial list: signalled once the list is in the store.
    tokio::time::timeout(Duration::from_secs(10), signal.notified()).await.expect("the listed pod signalled");
    assert!(signal.take().is_some());

    // An old one (its condition changed a minute ago: an unrelated update, not new) and a bound
    // one, in the store before the new one comes.
    let minute_ago = Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_secs(60);
    server.seed(&unschedulable_pod("old", minute_ago));
    server.seed(&pod("default", "bound", &[]));
    eventually("the old and the bound pod in the store", || async {
        (pod_names(&cluster.snapshot().pods) == ["bound", "listed", "old"]).then_some(())
    })
    .await;
    let new_at = Timestamp::now();
    server.seed(&unschedulable_pod("new", new_at));
    tokio::time::timeout(Duration::from_secs(10), signal.notified()).await.expect("the new pod signalled");
    let seen = signal.take().expect("a signal");
    assert!(seen.first >= new_at, "only the new pod was signalled: {seen:?}, new at {new_at}");
}

#[tokio::test]
async fn taint_and_cordon_then_untaint_and_uncordon_round_trip() {
    let server = FakeApiServer::start().await;
    let soft = Taint {
        key: "DeletionCandidateOfClusterAutoscaler".into(),
        value: Some("1".into()),
        effect: "PreferNoSchedule".into(),
        time_added: None,
    };
    server.seed(&Node {
        metadata: meta(None, "n1", &[]),
        spec: Some(NodeSpec { taints: Some(vec![soft.clone()]), ..Default::default() }),
        ..Default::default()
    });
    let actions = actions(&server);

    actions.taint_node("n1", to_be_deleted_taint(), true).await.unwrap();
    let spec = server.get::<Node>(None, "n1").unwrap().spec.unwrap();
    assert_eq!(spec.taints.unwrap(), [soft.clone(), to_be_deleted_taint()]);
    assert_eq!(spec.unschedulable, Some(true));

    // Tainting again with the same taint writes nothing.
    actions.taint_node("n1", to_be_deleted_taint(), true).await.unwrap();
    assert_eq!(server.request_count(Verb::Update, "/api/v1/nodes/n1"), 1);

    actions.untaint_node("n1", "ToBeDeletedByClusterAutoscaler", true).await.unwrap();
    let spec = server.get::<Node>(None, "n1").unwrap().spec.unwrap();
    assert_eq!(spec.taints.unwrap(), [soft]);
    assert_eq!(spec.unschedulable, None);
}

#[tokio::test]
async fn taint_refreshes_an_existing_taint_with_the_same_key() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let actions = actions(&server);
    actions.taint_node("n1", to_be_deleted_taint(), false).await.unwrap();
    let newer = Taint { value: Some("1700000100".into()), ..to_be_deleted_taint() };
    actions.taint_node("n1", newer.clone(), false).await.unwrap();
    let spec = server.get::<Node>(None, "n1").unwrap().spec.unwrap();
    assert_eq!(spec.taints.unwrap(), [newer]);
    assert_eq!(spec.unschedulable, None, "no cordon was asked for");
}

#[tokio::test]
async fn taint_retries_after_a_conflict_on_a_fresh_read() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    server.inject_fault(Fault::new("/api/v1/nodes/n1", 409).verb(Verb::Update));
    actions(&server).taint_node("n1", to_be_deleted_taint(), true).await.unwrap();
    assert_eq!(server.request_count(Verb::Update, "/api/v1/nodes/n1"), 2);
    assert_eq!(server.request_count(Verb::Get, "/api/v1/nodes/n1"), 2, "each attempt reads the node again");
    assert_eq!(server.get::<Node>(None, "n1").unwrap().spec.unwrap().taints.unwrap(), [to_be_deleted_taint()]);
}

#[tokio::test]
async fn taint_gives_up_with_conflict_after_the_deadline() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    server.inject_fault(Fault::new("/api/v1/nodes/n1", 409).verb(Verb::Update).times(usize::MAX));
    let actions = KubeActions::with_options(
        clients(&server),
        KubeActionsOptions {
            conflict_retry_interval: Duration::from_millis(10),
            conflict_retry_deadline: Duration::from_millis(100),
            ..Default::default()
        },
    );
    let result = actions.taint_node("n1", to_be_deleted_taint(), true).await;
    assert_eq!(result, Err(PortError::Conflict { kind: "Node".into(), name: "n1".into() }));
}

#[tokio::test]
async fn taint_of_a_missing_node_is_not_found_and_untaint_is_ok() {
    let server = FakeApiServer::start().await;
    let actions = actions(&server);
    assert_eq!(
        actions.taint_node("gone", to_be_deleted_taint(), true).await,
        Err(PortError::NotFound { kind: "Node".into(), name: "gone".into() })
    );
    assert_eq!(actions.untaint_node("gone", "ToBeDeletedByClusterAutoscaler", true).await, Ok(()));
}

#[tokio::test]
async fn eviction_delivers_the_grace_period_to_the_server() {
    let server = FakeApiServer::start().await;
    server.seed(&pod("default", "web-1", &[("app", "web")]));
    actions(&server).evict_pod("default", "web-1", 17).await.unwrap();
    let evictions = server.evictions();
    assert_eq!(evictions.len(), 1);
    assert_eq!(evictions[0].grace_period_seconds, Some(17));
    assert_eq!(evictions[0].body["deleteOptions"]["gracePeriodSeconds"], 17);
    assert!(server.get::<Pod>(Some("default"), "web-1").is_none());
}

#[tokio::test]
async fn eviction_blocked_by_a_pdb_returns_at_once_without_retrying() {
    let server = FakeApiServer::start().await;
    server.seed(&pod("default", "web-1", &[("app", "web")]));
    server.seed(&pdb("web", "web", 0));
    let started = Instant::now();
    let result = actions(&server).evict_pod("default", "web-1", 30).await;
    assert_eq!(result, Err(EvictionError::BlockedByPdb("default/web-1".into())));
    // A correctness bound, not a benchmark: kube's default client would still be retrying.
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert_eq!(server.evictions().len(), 1, "a 429 is not retried by the client");
    assert!(server.get::<Pod>(Some("default"), "web-1").is_some());
}

#[tokio::test]
async fn eviction_of_a_missing_pod_is_not_found() {
    let server = FakeApiServer::start().await;
    assert_eq!(
        actions(&server).evict_pod("default", "gone", 30).await,
        Err(EvictionError::NotFound("default/gone".into()))
    );
}

#[tokio::test]
async fn eviction_server_errors_are_failures() {
    let server = FakeApiServer::start().await;
    server.seed(&pod("default", "web-1", &[]));
    server.inject_fault(Fault::new("/api/v1/namespaces/default/pods/web-1/eviction", 500));
    let result = actions(&server).evict_pod("default", "web-1", 30).await;
    assert!(matches!(result, Err(EvictionError::Failed { ref pod, .. }) if pod == "default/web-1"), "{result:?}");
}

fn target(api_version: &str, kind: &str, name: &str) -> ScaleTarget {
    ScaleTarget { api_version: api_version.into(), kind: kind.into(), namespace: "default".into(), name: name.into() }
}

#[tokio::test]
async fn scale_is_read_and_written_through_the_subresource_of_each_workload_kind() {
    let server = FakeApiServer::start().await;
    server.seed(&Deployment {
        metadata: meta(Some("default"), "web", &[]),
        spec: Some(DeploymentSpec { replicas: Some(3), selector: selector("web"), ..Default::default() }),
        ..Default::default()
    });
    server.seed(&StatefulSet {
        metadata: meta(Some("default"), "db", &[]),
        spec: Some(StatefulSetSpec { replicas: Some(2), selector: selector("db"), ..Default::default() }),
        status: Some(StatefulSetStatus { replicas: 2, ..Default::default() }),
    });
    server.seed(&ReplicaSet {
        metadata: meta(Some("default"), "rs", &[]),
        spec: Some(ReplicaSetSpec { replicas: Some(1), selector: selector("rs"), ..Default::default() }),
        ..Default::default()
    });
    server.seed(&ReplicationController {
        metadata: meta(Some("default"), "rc", &[]),
        spec: Some(ReplicationControllerSpec {
            replicas: Some(4),
            selector: Some(BTreeMap::from([("app".to_string(), "rc".to_string())])),
            ..Default::default()
        }),
        ..Default::default()
    });
    let actions = actions(&server);

    let web = target("apps/v1", "Deployment", "web");
    let scale = actions.get_scale(&web).await.unwrap();
    assert_eq!((scale.spec_replicas, scale.status_replicas, scale.selector.as_str()), (3, 0, "app=web"));
    actions.set_scale(&web, 5).await.unwrap();
    assert_eq!(server.get::<Deployment>(Some("default"), "web").unwrap().spec.unwrap().replicas, Some(5));

    let db = actions.get_scale(&target("apps/v1", "StatefulSet", "db")).await.unwrap();
    assert_eq!((db.spec_replicas, db.status_replicas, db.selector.as_str()), (2, 2, "app=db"));
    actions.set_scale(&target("apps/v1", "ReplicaSet", "rs"), 0).await.unwrap();
    assert_eq!(server.get::<ReplicaSet>(Some("default"), "rs").unwrap().spec.unwrap().replicas, Some(0));
    // Any kind with a scale subresource, reached generically.
    let rc = actions.get_scale(&target("v1", "ReplicationController", "rc")).await.unwrap();
    assert_eq!((rc.spec_replicas, rc.selector.as_str()), (4, "app=rc"));

    assert_eq!(
        actions.get_scale(&target("apps/v1", "Deployment", "missing")).await,
        Err(PortError::NotFound { kind: "Deployment".into(), name: "missing".into() })
    );
    assert!(matches!(actions.get_scale(&target("", "Deployment", "web")).await, Err(PortError::Api(_))));
}

#[tokio::test]
async fn status_config_map_is_created_then_replaced_with_the_last_updated_annotation() {
    let server = FakeApiServer::start().await;
    let actions = actions(&server);
    let name = "cluster-autoscaler-status";
    actions
        .write_status("kube-system", name, "autoscalerStatus: Initializing\n", "2025-01-01 00:00:00 +0000 UTC")
        .await
        .unwrap();
    let created = server.get::<ConfigMap>(Some("kube-system"), name).unwrap();
    assert_eq!(created.data.unwrap()["status"], "autoscalerStatus: Initializing\n");
    assert_eq!(created.metadata.annotations.unwrap()[STATUS_LAST_UPDATED_ANNOTATION], "2025-01-01 00:00:00 +0000 UTC");

    actions
        .write_status("kube-system", name, "autoscalerStatus: Running\n", "2025-01-01 00:00:10 +0000 UTC")
        .await
        .unwrap();
    let replaced = server.get::<ConfigMap>(Some("kube-system"), name).unwrap();
    assert_eq!(replaced.metadata.uid, created.metadata.uid, "the same object is replaced, not recreated");
    assert_eq!(replaced.data.unwrap()["status"], "autoscalerStatus: Running\n");
    assert_eq!(replaced.metadata.annotations.unwrap()[STATUS_LAST_UPDATED_ANNOTATION], "2025-01-01 00:00:10 +0000 UTC");
    assert_eq!(server.list::<ConfigMap>().len(), 1);
}

#[tokio::test]
async fn status_write_retries_when_a_concurrent_writer_wins() {
    let server = FakeApiServer::start().await;
    server.seed(&config_map("kube-system", "cluster-autoscaler-status"));
    server.inject_fault(
        Fault::new("/api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status", 409).verb(Verb::Update),
    );
    actions(&server).write_status("kube-system", "cluster-autoscaler-status", "s", "t").await.unwrap();
    let written = server.get::<ConfigMap>(Some("kube-system"), "cluster-autoscaler-status").unwrap();
    assert_eq!(written.data.unwrap()["status"], "s");
}

fn scale_down_event(message: &str) -> Event {
    Event {
        object: ObjectRef::node("n1"),
        event_type: EventType::Normal,
        reason: EventReason::ScaleDown,
        message: message.into(),
    }
}

#[tokio::test]
async fn events_are_core_v1_events_with_source_timestamps_and_count() {
    let server = FakeApiServer::start().await;
    let actions = actions(&server);
    actions.record_event(scale_down_event("marked the node as toBeDeleted/unschedulable")).await.unwrap();
    actions
        .record_event(Event {
            object: ObjectRef::pod("apps", "web-1"),
            event_type: EventType::Warning,
            reason: EventReason::NotTriggerScaleUp,
            message: "pod didn't trigger scale-up: 1 max node group size reached".into(),
        })
        .await
        .unwrap();
    actions.events().flush(Duration::from_secs(10)).await;
    let events = server.list::<CoreEvent>();
    assert_eq!(events.len(), 2);
    let on_node = events.iter().find(|e| e.involved_object.kind.as_deref() == Some("Node")).unwrap();
    assert_eq!(on_node.metadata.namespace.as_deref(), Some("default"), "cluster-scoped objects' events go to default");
    assert_eq!(on_node.involved_object.name.as_deref(), Some("n1"));
    assert_eq!(on_node.involved_object.api_version.as_deref(), Some("v1"));
    assert_eq!(on_node.reason.as_deref(), Some("ScaleDown"));
    assert_eq!(on_node.message.as_deref(), Some("marked the node as toBeDeleted/unschedulable"));
    assert_eq!(on_node.type_.as_deref(), Some("Normal"));
    assert_eq!(on_node.source.as_ref().unwrap().component.as_deref(), Some("cluster-autoscaler"));
    assert_eq!(on_node.count, Some(1));
    assert!(on_node.first_timestamp.is_some() && on_node.last_timestamp.is_some());
    assert!(on_node.metadata.name.as_deref().unwrap().starts_with("n1."));
    let on_pod = events.iter().find(|e| e.involved_object.kind.as_deref() == Some("Pod")).unwrap();
    assert_eq!(on_pod.metadata.namespace.as_deref(), Some("apps"));
    assert_eq!(on_pod.involved_object.namespace.as_deref(), Some("apps"));
    assert_eq!(on_pod.type_.as_deref(), Some("Warning"));
}

#[tokio::test]
async fn upstream_spam_filter_keeps_one_event_per_reason_and_object() {
    let server = FakeApiServer::start().await;
    let actions = actions(&server);
    actions.record_event(scale_down_event("m")).await.unwrap();
    actions.record_event(scale_down_event("m")).await.unwrap();
    actions.record_event(scale_down_event("other message")).await.unwrap();
    actions.events().flush(Duration::from_secs(10)).await;
    let counts: Vec<(String, i32)> =
        server.list::<CoreEvent>().into_iter().map(|e| (e.message.unwrap(), e.count.unwrap())).collect();
    assert_eq!(counts, [("m".to_string(), 1)]);
}

#[tokio::test]
async fn record_duplicated_events_counts_repeats_on_one_event() {
    let server = FakeApiServer::start().await;
    let actions = KubeActions::with_options(
        clients(&server),
        KubeActionsOptions { record_duplicated_events: true, ..Default::default() },
    );
    actions.record_event(scale_down_event("m")).await.unwrap();
    actions.record_event(scale_down_event("m")).await.unwrap();
    actions.events().flush(Duration::from_secs(10)).await;
    let events = server.list::<CoreEvent>();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].count, Some(2));
    // The Event expired on the server: the next repeat creates a new one.
    server.remove::<CoreEvent>(events[0].metadata.namespace.as_deref(), events[0].metadata.name.as_deref().unwrap());
    actions.record_event(scale_down_event("m")).await.unwrap();
    actions.events().flush(Duration::from_secs(10)).await;
    let events = server.list::<CoreEvent>();
    assert_eq!((events.len(), events[0].count), (1, Some(1)));
}

#[tokio::test]
async fn a_slow_api_server_never_holds_the_caller_and_a_full_queue_drops_events() {
    // The API server takes 2 s to accept the first Event: recording 1,000 more returns at once,
    // and what does not fit in the queue is counted as dropped.
    let server = FakeApiServer::start().await;
    server.inject_fault(Fault::slow("/api/v1/namespaces/default/events", Duration::from_secs(2)));
    let actions = actions(&server);
    let started = Instant::now();
    for i in 0..1_200 {
        let event = Event {
            object: ObjectRef::pod("default", &format!("web-{i}")),
            event_type: EventType::Normal,
            reason: EventReason::NotTriggerScaleUp,
            message: "pod didn't trigger scale-up".into(),
        };
        actions.record_event(event).await.unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(1), "recording waited on the API server: {:?}", started.elapsed());
    assert!(actions.events().dropped() >= 1_200 - autoscaler::kube_adapter::EVENT_QUEUE_LENGTH as u64 - 1);
    actions.events().flush(Duration::from_secs(30)).await;
    assert!(server.list::<CoreEvent>().len() >= autoscaler::kube_adapter::EVENT_QUEUE_LENGTH - 1);
}

#[tokio::test]
async fn clients_connect_from_a_kubeconfig_file_with_rate_limits() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let file = tempfile::Builder::new().prefix("kube-adapter-").suffix(".kubeconfig").tempfile().unwrap();
    std::fs::write(file.path(), server.kubeconfig_yaml()).unwrap();
    let options = KubeClientOptions { kubeconfig: Some(file.path().to_path_buf()), ..Default::default() };
    let clients = KubeClients::connect(&options).await.unwrap();
    drop(file);
    let nodes: kube::Api<Node> = kube::Api::all(clients.client.clone());
    assert_eq!(nodes.list(&Default::default()).await.unwrap().items.len(), 1);
    let cluster = KubeCluster::start(clients.client, "kube-system");
    assert_eq!(names(&cluster.view().await.unwrap().nodes), ["n1"]);
}

#[tokio::test]
async fn a_missing_kubeconfig_is_an_error_naming_the_file() {
    let options = KubeClientOptions { kubeconfig: Some("/nonexistent/kubeconfig".into()), ..Default::default() };
    let error = KubeClients::connect(&options).await.unwrap_err().to_string();
    assert!(error.contains("/nonexistent/kubeconfig"), "{error}");
}

#[tokio::test]
async fn the_kubernetes_flag_overrides_the_server_url() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let options = KubeClientOptions { master_url: Some(server.url()), qps: -1.0, ..Default::default() };
    let clients = KubeClients::connect(&options).await.unwrap();
    let nodes: kube::Api<Node> = kube::Api::all(clients.client);
    assert_eq!(nodes.list(&Default::default()).await.unwrap().items.len(), 1);
    let bad = KubeClientOptions { master_url: Some("not a url".into()), ..Default::default() };
    assert!(KubeClients::connect(&bad).await.unwrap_err().to_string().contains("--kubernetes"));
}

fn wpa_json(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "datadoghq.com/v1alpha1",
        "kind": "WatermarkPodAutoscaler",
        "metadata": {"namespace": "default", "name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [{"type": "External", "external": {
                "metricName": "requests", "metricSelector": {"matchLabels": {"app": "web"}},
                "highWatermark": "100", "lowWatermark": "50"
            }}]
        }
    })
}

#[tokio::test]
async fn wpas_are_watched_only_when_discovery_finds_the_crd_and_their_status_is_patched() {
    let without = FakeApiServer::start().await;
    assert!(!autoscaler::kube_adapter::wpa_crd_installed(&clients(&without).client).await);

    let server = FakeApiServer::builder().watermark_pod_autoscalers(true).start().await;
    server.seed_value(wpa_json("web")).unwrap();
    let client = clients(&server).client;
    assert!(autoscaler::kube_adapter::wpa_crd_installed(&client).await);
    let options = KubeClusterOptions { watch_wpas: true, ..KubeClusterOptions::new("kube-system") };
    let cluster = KubeCluster::start_with(client, options);
    let view = cluster.view().await.unwrap();
    assert_eq!(view.wpas.len(), 1);
    assert_eq!(view.wpas[0].metadata.name.as_deref(), Some("web"));
    assert_eq!(view.wpas[0].spec.max_replicas, 5);

    let status = autoscaler::hpa::wpa::WatermarkPodAutoscalerStatus {
        current_replicas: 2,
        desired_replicas: 3,
        ..Default::default()
    };
    actions(&server).update_wpa_status("default", "web", status).await.unwrap();
    let path = "/apis/datadoghq.com/v1alpha1/namespaces/default/watermarkpodautoscalers/web/status";
    assert_eq!(server.request_count(Verb::Patch, path), 1);
    eventually("the reflector sees the WPA's new status", || {
        let view = cluster.snapshot();
        let seen = view.wpas.first().and_then(|w| w.status.as_ref()).is_some_and(|s| s.desired_replicas == 3);
        async move { seen.then_some(()) }
    })
    .await;
    // The spec is untouched by a status write.
    assert_eq!(cluster.snapshot().wpas[0].spec.max_replicas, 5);
}

#[tokio::test]
async fn custom_metrics_are_read_in_the_v1beta2_shape_when_the_server_serves_it() {
    use autoscaler::core::ClusterView;
    use autoscaler::hpa::MetricsSource;
    use autoscaler::kube_adapter::KubeMetrics;
    use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, HorizontalPodAutoscaler, MetricIdentifier};

    let server = FakeApiServer::start().await;
    server.serve_document(
        "/apis/custom.metrics.k8s.io",
        serde_json::json!({"kind": "APIGroup", "apiVersion": "v1", "name": "custom.metrics.k8s.io",
            "versions": [{"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"},
                         {"groupVersion": "custom.metrics.k8s.io/v1beta1", "version": "v1beta1"}],
            "preferredVersion": {"groupVersion": "custom.metrics.k8s.io/v1beta2", "version": "v1beta2"}}),
    );
    server.serve_document(
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/web/services/front/requests",
        serde_json::json!({"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2", "items": [{
            "describedObject": {"kind": "Service", "namespace": "web", "name": "front", "apiVersion": "/v1"},
            "metric": {"name": "requests"}, "timestamp": "2026-11-21T12:00:00Z", "windowSeconds": 60,
            "value": "250"}]}),
    );
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": "web", "name": "front"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "front"}, "maxReplicas": 5,
            "metrics": [{"type": "Object", "object": {"metric": {"name": "requests"},
                "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "front"},
                "target": {"type": "Value", "value": "100"}}}]}}))
    .unwrap();
    let view = ClusterView { hpas: vec![std::sync::Arc::new(hpa)], ..Default::default() };
    let metrics = KubeMetrics::new(server.client());
    metrics.refresh(&view).await;
    let identifier = MetricIdentifier { name: "requests".into(), selector: None };
    let object =
        CrossVersionObjectReference { api_version: Some("v1".into()), kind: "Service".into(), name: "front".into() };
    assert_eq!(metrics.object_metric("web", &identifier, &object).unwrap(), 250_000);
}
