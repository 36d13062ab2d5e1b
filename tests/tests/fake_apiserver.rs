//! Tests of the fake API server itself, through kube-rs's real client and watcher (and kubectl
//! when it is installed).

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Node, NodeSpec, Pod, PodSpec, PodStatus, Taint};
use k8s_openapi::api::policy::v1::{Eviction, PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, LabelSelector, ObjectMeta};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tests::eventually;
use tests::fake_apiserver::{FakeApiServer, Fault, Verb};

fn meta(namespace: Option<&str>, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(Into::into),
        labels: (!labels.is_empty()).then(|| labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..Default::default()
    }
}

fn node(name: &str) -> Node {
    Node { metadata: meta(None, name, &[]), ..Default::default() }
}

fn pod(namespace: &str, name: &str, node: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: meta(Some(namespace), name, labels),
        spec: Some(PodSpec { node_name: Some(node.into()), ..Default::default() }),
        status: Some(PodStatus { phase: Some("Running".into()), ..Default::default() }),
    }
}

fn pdb(namespace: &str, name: &str, app: &str, disruptions_allowed: i32) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: meta(Some(namespace), name, &[]),
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: Some(PodDisruptionBudgetStatus {
            disruptions_allowed,
            current_healthy: 1,
            desired_healthy: 1,
            expected_pods: 1,
            ..Default::default()
        }),
    }
}

fn eviction(namespace: &str, name: &str, grace: i64) -> Eviction {
    Eviction {
        metadata: meta(Some(namespace), name, &[]),
        delete_options: Some(DeleteOptions { grace_period_seconds: Some(grace), ..Default::default() }),
    }
}

fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

#[tokio::test]
async fn list_serves_seeded_objects_with_a_resource_version_and_selectors() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    server.seed(&node("n2"));
    server.seed(&pod("default", "a", "n1", &[("app", "web")]));
    server.seed(&pod("default", "b", "n2", &[("app", "db")]));
    server.seed(&pod("other", "c", "n1", &[("app", "web")]));

    let nodes = Api::<Node>::all(server.client()).list(&ListParams::default()).await.unwrap();
    assert_eq!(nodes.items.len(), 2);
    assert_eq!(nodes.metadata.resource_version, Some(server.resource_version().to_string()));

    let pods: Api<Pod> = Api::all(server.client());
    let on_n1 = pods.list(&ListParams::default().fields("spec.nodeName=n1")).await.unwrap();
    let names: Vec<_> = on_n1.items.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["a", "c"]);
    let web_in_default = Api::<Pod>::namespaced(server.client(), "default")
        .list(&ListParams::default().labels("app in (web)"))
        .await
        .unwrap();
    assert_eq!(web_in_default.items.len(), 1);
    assert_eq!(web_in_default.items[0].metadata.name.as_deref(), Some("a"));
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let server = FakeApiServer::start().await;
    for i in 0..5 {
        server.seed(&node(&format!("n{i}")));
    }
    let api: Api<Node> = Api::all(server.client());
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(first.items.len(), 2);
    let token = first.metadata.continue_.clone().expect("more pages");
    let second = api.list(&ListParams::default().limit(10).continue_token(&token)).await.unwrap();
    assert_eq!(second.items.len(), 3);
    assert!(second.metadata.continue_.is_none());
    assert_eq!(second.metadata.resource_version, first.metadata.resource_version);
}

#[tokio::test]
async fn create_conflicts_on_duplicates_and_replace_on_stale_versions() {
    let server = FakeApiServer::start().await;
    let api: Api<Node> = Api::all(server.client());
    let created = api.create(&PostParams::default(), &node("n1")).await.unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    let duplicate = api.create(&PostParams::default(), &node("n1")).await.unwrap_err();
    assert_eq!(status_code(&duplicate), Some(409));

    let mut fresh = created.clone();
    fresh.spec = Some(NodeSpec { unschedulable: Some(true), ..Default::default() });
    let replaced = api.replace("n1", &PostParams::default(), &fresh).await.unwrap();
    assert_ne!(replaced.metadata.resource_version, created.metadata.resource_version);
    // `fresh` still carries the version it was read at: a second replace is stale.
    let stale = api.replace("n1", &PostParams::default(), &fresh).await.unwrap_err();
    assert_eq!(status_code(&stale), Some(409));
    assert_eq!(server.get::<Node>(None, "n1").unwrap().spec.unwrap().unschedulable, Some(true));
}

#[tokio::test]
async fn get_and_delete_answer_404_for_missing_objects() {
    let server = FakeApiServer::start().await;
    let api: Api<Pod> = Api::namespaced(server.client(), "default");
    assert_eq!(status_code(&api.get("nope").await.unwrap_err()), Some(404));
    server.seed(&pod("default", "p", "n1", &[]));
    api.delete("p", &Default::default()).await.unwrap();
    assert!(server.get::<Pod>(Some("default"), "p").is_none());
    assert_eq!(status_code(&api.delete("p", &Default::default()).await.unwrap_err()), Some(404));
}

#[tokio::test]
async fn merge_and_strategic_patches_change_taints_and_unschedulable() {
    let server = FakeApiServer::start().await;
    server.seed(&Node {
        metadata: meta(None, "n1", &[]),
        spec: Some(NodeSpec {
            taints: Some(vec![Taint { key: "a".into(), effect: "NoSchedule".into(), ..Default::default() }]),
            ..Default::default()
        }),
        ..Default::default()
    });
    let api: Api<Node> = Api::all(server.client());
    let patched = api
        .patch(
            "n1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}})),
        )
        .await
        .unwrap();
    let keys: Vec<_> = patched.spec.as_ref().unwrap().taints.as_ref().unwrap().iter().map(|t| t.key.clone()).collect();
    assert_eq!(keys, ["b"], "taints have no patch strategy: a strategic patch replaces the list");

    let patched = api
        .patch("n1", &PatchParams::default(), &Patch::Merge(json!({"spec": {"unschedulable": true}})))
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().unschedulable, Some(true));
    let stale = api
        .patch(
            "n1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "spec": {"unschedulable": null}})),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&stale), Some(409));
}

#[tokio::test]
async fn json_patch_test_operation_guards_the_resource_version() {
    let server = FakeApiServer::start().await;
    let stored = server.seed(&node("n1"));
    let version = stored.metadata.resource_version.clone().unwrap();
    let client = server.client();
    // kube builds JSON patches only with its `jsonpatch` feature; send the request by hand.
    let send = |v: &str| {
        let body = json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": v},
            {"op": "add", "path": "/spec", "value": {"unschedulable": true}}
        ]);
        let request = http::Request::patch("/api/v1/nodes/n1")
            .header("Content-Type", "application/json-patch+json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap();
        client.request::<Node>(request)
    };
    assert_eq!(status_code(&send("0").await.unwrap_err()), Some(422));
    let ok = send(&version).await.unwrap();
    assert_eq!(ok.spec.unwrap().unschedulable, Some(true));
}

#[tokio::test]
async fn watch_from_a_version_replays_later_changes_then_streams_live_ones() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let api: Api<Node> = Api::all(server.client());
    let version = api.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    server.seed(&node("n2"));
    let mut stream = api.watch(&WatchParams::default(), &version).await.unwrap().boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Added(n)) => assert_eq!(n.metadata.name.as_deref(), Some("n2")),
        other => panic!("expected ADDED n2, got {other:?}"),
    }
    server.remove::<Node>(None, "n1");
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Deleted(n)) => assert_eq!(n.metadata.name.as_deref(), Some("n1")),
        other => panic!("expected DELETED n1, got {other:?}"),
    }
}

#[tokio::test]
async fn watch_from_an_expired_version_answers_410_in_the_stream() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let api: Api<Node> = Api::all(server.client());
    let version = api.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut open = api.watch(&WatchParams::default(), &version).await.unwrap().boxed();
    server.expire_watches();
    match open.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("expected a 410 ERROR event on the open watch, got {other:?}"),
    }
    let mut resumed = api.watch(&WatchParams::default(), &version).await.unwrap().boxed();
    match resumed.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("expected a 410 ERROR event when resuming, got {other:?}"),
    }
    // A fresh list's version can be watched again.
    let fresh = api.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut again = api.watch(&WatchParams::default(), &fresh).await.unwrap().boxed();
    server.seed(&node("n2"));
    assert!(matches!(again.try_next().await.unwrap(), Some(WatchEvent::Added(_))));
}

#[tokio::test]
async fn dropped_watch_connections_end_the_stream_and_resume_without_loss() {
    let server = FakeApiServer::start().await;
    let api: Api<Node> = Api::all(server.client());
    let version = api.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut stream = api.watch(&WatchParams::default(), &version).await.unwrap().boxed();
    eventually("the watch to be open", || async { (server.active_watches() == 1).then_some(()) }).await;
    server.drop_watches();
    assert!(stream.try_next().await.unwrap().is_none(), "the dropped stream ends without an error");
    server.seed(&node("missed"));
    let mut resumed = api.watch(&WatchParams::default(), &version).await.unwrap().boxed();
    match resumed.try_next().await.unwrap() {
        Some(WatchEvent::Added(n)) => assert_eq!(n.metadata.name.as_deref(), Some("missed")),
        other => panic!("expected the missed ADDED, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_watcher_relists_after_410_and_resumes_after_a_drop() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    let api: Api<Node> = Api::all(server.client());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = seen.clone();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff().applied_objects());
        while let Some(item) = stream.next().await {
            if let Ok(n) = item {
                sink.lock().unwrap().push(n.metadata.name.unwrap());
            }
        }
    });
    let has = |name: &'static str| {
        let seen = seen.clone();
        move || {
            let seen = seen.clone();
            async move { seen.lock().unwrap().iter().any(|n| n == name).then_some(()) }
        }
    };
    eventually("n1 from the initial list", has("n1")).await;
    eventually("the watch to be open", || async { (server.active_watches() == 1).then_some(()) }).await;
    server.drop_watches();
    server.seed(&node("after-drop"));
    eventually("after-drop through the resumed watch", has("after-drop")).await;
    assert_eq!(server.request_count(Verb::List, "/api/v1/nodes"), 1, "a dropped watch resumes without listing");
    server.expire_watches();
    server.seed(&node("after-gone"));
    eventually("after-gone through a relist", has("after-gone")).await;
    assert!(server.request_count(Verb::List, "/api/v1/nodes") >= 2, "a 410 makes the watcher list again");
    task.abort();
}

#[tokio::test]
async fn eviction_is_refused_with_429_while_the_pdb_allows_no_disruption() {
    let server = FakeApiServer::start().await;
    server.seed(&pod("default", "web-1", "n1", &[("app", "web")]));
    server.seed(&pdb("default", "web", "web", 0));
    let api: Api<Pod> = Api::namespaced(server.client(), "default");
    // kube's default client retries 429; ask for one attempt with a client without retries.
    let mut config = server.kube_config();
    config.default_retry = false;
    let no_retry: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    let refused = no_retry
        .create_subresource::<_, serde_json::Value>(
            "eviction",
            "web-1",
            &PostParams::default(),
            &eviction("default", "web-1", 7),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&refused), Some(429));
    assert!(server.get::<Pod>(Some("default"), "web-1").is_some());
    assert_eq!(server.evictions()[0].grace_period_seconds, Some(7));
    assert_eq!(server.evictions()[0].status, 429);
    drop(api);
}

#[tokio::test]
async fn allowed_eviction_deletes_the_pod_and_spends_the_budget() {
    let server = FakeApiServer::start().await;
    server.seed(&pod("default", "web-1", "n1", &[("app", "web")]));
    server.seed(&pdb("default", "web", "web", 1));
    let api: Api<Pod> = Api::namespaced(server.client(), "default");
    api.create_subresource::<_, serde_json::Value>(
        "eviction",
        "web-1",
        &PostParams::default(),
        &eviction("default", "web-1", 30),
    )
    .await
    .unwrap();
    assert!(server.get::<Pod>(Some("default"), "web-1").is_none());
    let budget = server.get::<PodDisruptionBudget>(Some("default"), "web").unwrap();
    assert_eq!(budget.status.unwrap().disruptions_allowed, 0);
    let record = &server.evictions()[0];
    assert_eq!((record.status, record.grace_period_seconds), (201, Some(30)));
    let missing = api
        .create_subresource::<_, serde_json::Value>(
            "eviction",
            "web-1",
            &PostParams::default(),
            &eviction("default", "web-1", 30),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&missing), Some(404));
}

/// NOTES-rust.md pitfall 5: kube's `Api::evict` sends `delete_options` (snake_case), which a real
/// server ignores; the fake reads the body the same way, so the grace period is lost.
#[tokio::test]
async fn kube_evict_helper_loses_the_grace_period_like_on_a_real_server() {
    let server = FakeApiServer::start().await;
    server.seed(&pod("default", "web-1", "n1", &[]));
    let api: Api<Pod> = Api::namespaced(server.client(), "default");
    let params = kube::api::EvictParams {
        delete_options: Some(kube::api::DeleteParams { grace_period_seconds: Some(5), ..Default::default() }),
        ..Default::default()
    };
    api.evict("web-1", &params).await.unwrap();
    assert_eq!(server.evictions()[0].grace_period_seconds, None);
}

#[tokio::test]
async fn scale_subresource_reads_and_writes_replicas_with_a_string_selector() {
    let server = FakeApiServer::start().await;
    server.seed(&Deployment {
        metadata: meta(Some("default"), "web", &[]),
        spec: Some(DeploymentSpec {
            replicas: Some(3),
            selector: LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
                ..Default::default()
            },
            ..Default::default()
        }),
        ..Default::default()
    });
    let api: Api<Deployment> = Api::namespaced(server.client(), "default");
    let scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(scale.status.as_ref().unwrap().selector.as_deref(), Some("app=web"));
    api.patch_scale("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 5}}))).await.unwrap();
    assert_eq!(server.get::<Deployment>(Some("default"), "web").unwrap().spec.unwrap().replicas, Some(5));
    let mut stale = scale.clone();
    stale.spec.as_mut().unwrap().replicas = Some(9);
    let conflict = api.replace_scale("web", &PostParams::default(), &stale).await.unwrap_err();
    assert_eq!(status_code(&conflict), Some(409));
    let mut fresh = api.get_scale("web").await.unwrap();
    fresh.spec.as_mut().unwrap().replicas = Some(1);
    api.replace_scale("web", &PostParams::default(), &fresh).await.unwrap();
    assert_eq!(server.get::<Deployment>(Some("default"), "web").unwrap().spec.unwrap().replicas, Some(1));
}

#[tokio::test]
async fn lease_updates_with_a_stale_version_conflict() {
    let server = FakeApiServer::start().await;
    let api: Api<Lease> = Api::namespaced(server.client(), "kube-system");
    let lease = Lease {
        metadata: meta(Some("kube-system"), "cluster-autoscaler", &[]),
        spec: Some(LeaseSpec { holder_identity: Some("a".into()), ..Default::default() }),
    };
    let mut held = api.create(&PostParams::default(), &lease).await.unwrap();
    let mut rival = held.clone();
    held.spec.as_mut().unwrap().holder_identity = Some("a".into());
    api.replace("cluster-autoscaler", &PostParams::default(), &held).await.unwrap();
    rival.spec.as_mut().unwrap().holder_identity = Some("b".into());
    let lost = api.replace("cluster-autoscaler", &PostParams::default(), &rival).await.unwrap_err();
    assert_eq!(status_code(&lost), Some(409));
    assert_eq!(
        server
            .get::<Lease>(Some("kube-system"), "cluster-autoscaler")
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("a")
    );
}

#[tokio::test]
async fn injected_faults_answer_their_status_the_given_number_of_times() {
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    server.inject_fault(Fault::new("/api/v1/nodes/n1", 500).verb(Verb::Get).times(2));
    let api: Api<Node> = Api::all(server.client());
    assert_eq!(status_code(&api.get("n1").await.unwrap_err()), Some(500));
    assert_eq!(status_code(&api.get("n1").await.unwrap_err()), Some(500));
    api.get("n1").await.unwrap();
    assert_eq!(server.request_count(Verb::Get, "/api/v1/nodes/n1"), 3);
    // kube's default client retries 503 by itself: the injected failure is absorbed.
    server.inject_fault(Fault::new("/api/v1/nodes/n1", 503).verb(Verb::Get));
    api.get("n1").await.unwrap();
    assert_eq!(server.request_count(Verb::Get, "/api/v1/nodes/n1"), 5);
}

#[tokio::test]
async fn discovery_lists_groups_and_subresources_and_the_wpa_crd_only_when_enabled() {
    let server = FakeApiServer::start().await;
    let discovery = kube::Discovery::new(server.client()).run().await.unwrap();
    let groups: Vec<String> = discovery.groups().map(|g| g.name().to_string()).collect();
    for expected in ["", "apps", "batch", "policy", "coordination.k8s.io", "autoscaling"] {
        assert!(groups.iter().any(|g| g == expected), "group {expected:?} missing from {groups:?}");
    }
    assert!(!groups.iter().any(|g| g == "datadoghq.com"));
    let apps = discovery.get("apps").unwrap();
    let (deployments, caps) = apps.recommended_resources().into_iter().find(|(r, _)| r.kind == "Deployment").unwrap();
    assert_eq!(deployments.plural, "deployments");
    assert!(caps.subresources.iter().any(|(s, _)| s.plural == "scale"));

    let with_wpa = FakeApiServer::builder().watermark_pod_autoscalers(true).start().await;
    let discovery = kube::Discovery::new(with_wpa.client()).run().await.unwrap();
    assert!(discovery.groups().any(|g| g.name() == "datadoghq.com"));
}

#[tokio::test]
async fn kubectl_lists_and_cordons_against_the_fake_server() {
    let Some(kubectl) =
        ["/usr/bin/kubectl", "/usr/local/bin/kubectl"].into_iter().find(|p| std::path::Path::new(p).exists())
    else {
        println!("note: kubectl is not installed; skipping the kubectl check of the fake API server");
        return;
    };
    let server = FakeApiServer::start().await;
    server.seed(&node("n1"));
    server.seed(&pod("default", "p1", "n1", &[]));
    let dir = tempfile::Builder::new().prefix("fake-apiserver-kubectl-").tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig_yaml()).unwrap();
    let run = |args: &'static [&'static str]| {
        let (kubeconfig, cache) = (kubeconfig.clone(), dir.path().join("cache"));
        tokio::task::spawn_blocking(move || {
            let out = std::process::Command::new(kubectl)
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .arg("--cache-dir")
                .arg(&cache)
                .args(args)
                .output()
                .expect("running kubectl");
            assert!(out.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).to_string()
        })
    };
    assert_eq!(run(&["get", "nodes", "-o", "name"]).await.unwrap().trim(), "node/n1");
    assert_eq!(run(&["get", "pods", "-A", "-o", "name"]).await.unwrap().trim(), "pod/p1");
    assert!(run(&["get", "nodes"]).await.unwrap().contains("n1"), "the default (non-table) printer shows the node");
    let dump: serde_json::Value =
        serde_json::from_str(&run(&["get", "nodes,pods", "-A", "-o", "json"]).await.unwrap()).unwrap();
    assert_eq!(dump["items"].as_array().map(Vec::len), Some(2), "a kubectl dump holds both objects");
    run(&["cordon", "n1"]).await.unwrap();
    assert_eq!(server.get::<Node>(None, "n1").unwrap().spec.unwrap().unschedulable, Some(true));
}

#[tokio::test]
async fn status_subresource_changes_only_the_status() {
    use k8s_openapi::api::autoscaling::v2::{
        CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
        HorizontalPodAutoscalerStatus,
    };
    let server = FakeApiServer::start().await;
    let hpa = HorizontalPodAutoscaler {
        metadata: meta(Some("default"), "web", &[]),
        spec: Some(HorizontalPodAutoscalerSpec {
            max_replicas: 10,
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: "web".into(),
            },
            ..Default::default()
        }),
        status: None,
    };
    server.seed(&hpa);
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(server.client(), "default");
    let patch = json!({"spec": {"maxReplicas": 99}, "status": {"currentReplicas": 3, "desiredReplicas": 4}});
    let patched = api.patch_status("web", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(patched.spec.as_ref().unwrap().max_replicas, 10, "a status write leaves the spec alone");
    assert_eq!(patched.status.as_ref().unwrap().desired_replicas, 4);
    let mut replaced = patched.clone();
    replaced.status = Some(HorizontalPodAutoscalerStatus { desired_replicas: 2, ..Default::default() });
    api.replace_status("web", &PostParams::default(), &replaced).await.unwrap();
    assert_eq!(
        server.get::<HorizontalPodAutoscaler>(Some("default"), "web").unwrap().status.unwrap().desired_replicas,
        2
    );
}

#[tokio::test]
async fn watermark_pod_autoscalers_are_served_only_when_enabled() {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("datadoghq.com", "v1alpha1", "WatermarkPodAutoscaler"));
    let wpa = json!({
        "apiVersion": "datadoghq.com/v1alpha1",
        "kind": "WatermarkPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"maxReplicas": 5},
    });

    let plain = FakeApiServer::start().await;
    assert!(plain.seed_value(wpa.clone()).is_err());
    let api: Api<DynamicObject> = Api::namespaced_with(plain.client(), "default", &resource);
    assert_eq!(status_code(&api.list(&ListParams::default()).await.unwrap_err()), Some(404));

    let server = FakeApiServer::builder().watermark_pod_autoscalers(true).start().await;
    server.seed_value(wpa).unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].data["spec"]["maxReplicas"], 5);
}

#[tokio::test]
async fn watch_with_a_selector_sees_objects_leave_and_enter_it() {
    let server = FakeApiServer::start().await;
    server.seed(&pod("default", "p", "n1", &[("app", "web")]));
    let api: Api<Pod> = Api::namespaced(server.client(), "default");
    let version = api.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut stream = api.watch(&WatchParams::default().labels("app=web"), &version).await.unwrap().boxed();
    server.modify::<Pod>(Some("default"), "p", |p| {
        p.metadata.labels = Some(BTreeMap::from([("app".to_string(), "db".to_string())]));
    });
    assert!(
        matches!(stream.try_next().await.unwrap(), Some(WatchEvent::Deleted(_))),
        "leaving the selector is a DELETED"
    );
    server.modify::<Pod>(Some("default"), "p", |p| {
        p.metadata.labels = Some(BTreeMap::from([("app".to_string(), "web".to_string())]));
    });
    assert!(
        matches!(stream.try_next().await.unwrap(), Some(WatchEvent::Added(_))),
        "entering the selector is an ADDED"
    );
}
