//! The real `cluster-autoscaler` binary, run as a controller (no subcommand) against the fake API
//! server, with the in-memory cloud provider creating and deleting the Node objects: scale-up of
//! a pending pod, scale-down by taint / evict / DeleteNodes, the status ConfigMap, events and
//! metrics, watches that drop or expire, two replicas under leader election, and the embedded
//! HPA scaling a Deployment through `/scale`.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec, MetricTarget,
    ResourceMetricSource,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use tests::controller::{
    Controller, container, event_reasons, first_node, free_port, has_taint, health, http_get, meta, metrics_text,
    node_names, pending_pod, quick_flags, running_pod, sample,
};
use tests::fake_apiserver::{FakeApiServer, Fault, Verb};
use tests::{TestDir, bind, eventually};

/// The memory provider's node group, in the scenario `nodeGroups` format: 4-cpu nodes, one at
/// start, at most three.
const CLOUD_CONFIG: &str = r#"
nodeGroups:
  - id: pool
    minSize: 1
    maxSize: 3
    initialSize: 1
    provisioningDelay: 1s
    template:
      metadata:
        labels: {pool: pool, kubernetes.io/os: linux}
      status:
        capacity: {cpu: "4", memory: 16Gi, pods: "110"}
        allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
"#;

const STATUS: &str = "cluster-autoscaler-status";
const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cluster-autoscaler";

/// A scratch directory with the kubeconfig and this file's cloud config.
fn workdir(server: &FakeApiServer, test: &str) -> TestDir {
    tests::controller::workdir(server, test, CLOUD_CONFIG)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_pod_scales_up_then_the_empty_node_is_drained_and_removed() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "up-down");
    let port = free_port();
    let mut controller = Controller::start(&dir, "controller", &quick_flags(&dir, port, &[]));
    let first = first_node(&server, &controller).await;

    // The first node is almost full; a 3-cpu pod cannot fit anywhere.
    server.seed(&running_pod("filler", 3000, &first));
    server.seed(&pending_pod("big", 3000));
    let second = eventually("a second node for the pending pod", || async {
        node_names(&server).into_iter().find(|n| *n != first)
    })
    .await;
    eventually("TriggeredScaleUp on the pod", || async {
        event_reasons(&server, "Pod", "big").iter().any(|r| r == "TriggeredScaleUp").then_some(())
    })
    .await;
    // The scheduler binds the pod to the new node.
    server.modify::<Pod>(Some("default"), "big", |pod| bind(pod, &second)).unwrap();
    let status =
        eventually("the status ConfigMap", || async { server.get::<ConfigMap>(Some("kube-system"), STATUS) }).await;
    let annotations = status.metadata.annotations.unwrap_or_default();
    assert!(annotations.contains_key("cluster-autoscaler.kubernetes.io/last-updated"), "{annotations:?}");
    assert!(status.data.unwrap_or_default().get("status").is_some_and(|s| s.contains("Healthy")));
    let text = eventually("scaled_up_nodes_total in /metrics", || async {
        let text = metrics_text(port).await;
        (sample(&text, "cluster_autoscaler_scaled_up_nodes_total") == Some(1.0)).then_some(text)
    })
    .await;
    assert_eq!(sample(&text, "cluster_autoscaler_cluster_safe_to_autoscale"), Some(1.0), "{text}");
    assert_eq!(health(port).await, Some(200));

    // Load drops: the big pod goes; a small replicated pod on the second node fits on the first.
    server.seed(&ReplicaSet {
        metadata: meta("default", "small", &[]),
        spec: Some(ReplicaSetSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), "small".to_string())])),
                ..Default::default()
            },
            ..Default::default()
        }),
        ..Default::default()
    });
    let replica_set_uid = server.get::<ReplicaSet>(Some("default"), "small").unwrap().metadata.uid.unwrap();
    let mut small = running_pod("small-1", 200, &second);
    small.metadata.labels = Some(BTreeMap::from([("app".to_string(), "small".to_string())]));
    small.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: "small".into(),
        uid: replica_set_uid,
        controller: Some(true),
        ..Default::default()
    }]);
    server.seed(&small);
    assert!(server.remove::<Pod>(Some("default"), "big"));

    eventually("the small pod evicted", || async {
        server.evictions().iter().any(|e| e.name == "small-1" && e.status == 201).then_some(())
    })
    .await;
    eventually("the drained node deleted", || async { (!node_names(&server).contains(&second)).then_some(()) }).await;
    assert!(node_names(&server).contains(&first), "the node group's minimum stays");
    assert!(!has_taint(&server, &first, "ToBeDeletedByClusterAutoscaler"));
    eventually("ScaleDown events on the node and the pod", || async {
        let on_node = event_reasons(&server, "Node", &second).iter().any(|r| r == "ScaleDown");
        let on_pod = event_reasons(&server, "Pod", "small-1").iter().any(|r| r == "ScaleDown");
        (on_node && on_pod).then_some(())
    })
    .await;
    eventually("scaled_down_nodes_total in /metrics", || async {
        metrics_text(port)
            .await
            .contains("cluster_autoscaler_scaled_down_nodes_total{reason=\"underutilized\"} 1")
            .then_some(())
    })
    .await;

    // SIGTERM: a clean exit that removes the status ConfigMap.
    controller.terminate();
    let exit = controller.wait_exit(Duration::from_secs(30)).await;
    assert!(exit.success(), "exit status {exit:?}; log:\n{}", controller.log());
    assert!(server.get::<ConfigMap>(Some("kube-system"), STATUS).is_none(), "the status ConfigMap is deleted on exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_and_expired_watches_are_survived() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "watches");
    let controller = Controller::start(&dir, "controller", &quick_flags(&dir, free_port(), &[]));
    let first = first_node(&server, &controller).await;
    eventually("the controller's watches", || async { (server.active_watches() >= 10).then_some(()) }).await;

    server.drop_watches();
    server.expire_watches();
    // Only a resumed (or re-listed) watch can show the controller these pods.
    server.seed(&running_pod("filler", 3000, &first));
    server.seed(&pending_pod("big", 3000));
    eventually("a second node after the watches were cut", || async { (node_names(&server).len() == 2).then_some(()) })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_replica_waits_for_the_lease_and_takes_over_when_the_leader_stops() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "leader");
    let election = [
        "--leader-elect=true",
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=200ms",
        "--cloud-provider=static",
        "--nodes=0:3:pool",
    ];
    let replica_flags = |status: &str, port: u16| {
        let mut args = quick_flags(&dir, port, &election);
        // The static provider (sizes only): the replicas do not fight over fake nodes.
        args.retain(|a| {
            a != "--leader-elect=false" && a != "--cloud-provider=memory" && !a.starts_with("--cloud-config=")
        });
        args.push(format!("--status-config-map-name={status}"));
        args
    };
    let mut first = Controller::start(&dir, "first", &replica_flags("status-first", free_port()));
    eventually("the first replica's status", || async { server.get::<ConfigMap>(Some("kube-system"), "status-first") })
        .await;
    let holder = |server: &FakeApiServer| {
        server
            .get::<Lease>(Some("kube-system"), "cluster-autoscaler")
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .unwrap_or_default()
    };
    let first_identity = holder(&server);
    assert!(!first_identity.is_empty());

    let standby_port = free_port();
    let second = Controller::start(&dir, "second", &replica_flags("status-second", standby_port));
    // The standby campaigns (it reads the Lease every retry period) but never acts.
    let reads = server.request_count(Verb::Get, LEASE_PATH);
    eventually("the standby to try for the Lease several times", || async {
        (server.request_count(Verb::Get, LEASE_PATH) >= reads + 5).then_some(())
    })
    .await;
    assert!(server.get::<ConfigMap>(Some("kube-system"), "status-second").is_none(), "the standby wrote a status");
    assert_eq!(holder(&server), first_identity);
    let standby_health = eventually("the standby's health-check", || async { health(standby_port).await }).await;
    assert_eq!(standby_health, 200, "a standby is healthy");

    // The leader stops: it releases the Lease and the standby takes over.
    first.terminate();
    assert!(first.wait_exit(Duration::from_secs(30)).await.success(), "log:\n{}", first.log());
    eventually("the second replica's status", || async {
        server.get::<ConfigMap>(Some("kube-system"), "status-second")
    })
    .await;
    let second_identity = holder(&server);
    assert!(!second_identity.is_empty() && second_identity != first_identity, "{second_identity}");
    assert!(server.get::<ConfigMap>(Some("kube-system"), "status-first").is_none());
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_unschedulable_pods_reaches_the_node_group_however_slowly_events_are_accepted() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "event-burst");
    let port = free_port();
    let controller = Controller::start(&dir, "controller", &quick_flags(&dir, port, &[]));
    let first = first_node(&server, &controller).await;
    // The API server takes 2 s to accept each Event from now on.
    server.inject_fault(Fault::slow("/api/v1/namespaces/default/events", Duration::from_secs(2)).times(100_000));
    // 1,000 pods turn unschedulable at once: 10 cpu of requests, two more 4-cpu nodes.
    for i in 0..1_000 {
        server.seed(&pending_pod(&format!("burst-{i}"), 10));
    }
    eventually("the node group grown for the burst", || async {
        (node_names(&server).into_iter().filter(|n| *n != first).count() >= 2).then_some(())
    })
    .await;
    // About 1,000 events (TriggeredScaleUp, one per pod) are still being written 2 s apiece:
    // the scale-up did not wait for them.
    let written = server.list::<Event>().len();
    assert!(written < 50, "{written} events were written before the scale-up");
    let text = metrics_text(port).await;
    assert_eq!(sample(&text, "cluster_autoscaler_scaled_up_nodes_total"), Some(2.0), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_unschedulable_pod_starts_a_scale_up_long_before_the_scan_interval() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "pod-trigger");
    let port = free_port();
    // The timer alone would run the second loop 10 minutes after the first.
    let mut args: Vec<String> =
        quick_flags(&dir, port, &[]).into_iter().filter(|f| !f.starts_with("--scan-interval=")).collect();
    args.push("--scan-interval=10m".into());
    let mut controller = Controller::start(&dir, "controller", &args);
    let first = first_node(&server, &controller).await;
    server.seed(&running_pod("filler", 3000, &first));
    // The first loop (at start) is over once it wrote the status: what follows is another one.
    eventually("the first loop's status ConfigMap", || async { server.get::<ConfigMap>(Some("kube-system"), STATUS) })
        .await;

    // The scheduler marks a 3-cpu pod unschedulable, now.
    let mut big = pending_pod("big", 3000);
    if let Some(condition) = big.status.as_mut().and_then(|s| s.conditions.as_mut()).and_then(|c| c.first_mut()) {
        condition.last_transition_time =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()));
    }
    server.seed(&big);
    eventually(&format!("a scale-up for the new pod (log: {})", controller.log()), || async {
        let triggered = event_reasons(&server, "Pod", "big").iter().any(|r| r == "TriggeredScaleUp");
        let scaled = sample(&metrics_text(port).await, "cluster_autoscaler_scaled_up_nodes_total") == Some(1.0);
        (triggered && scaled).then_some(())
    })
    .await;

    controller.terminate();
    let exit = controller.wait_exit(Duration::from_secs(30)).await;
    assert!(exit.success(), "exit status {exit:?}; log:\n{}", controller.log());
}

/// A ready 4-cpu node of the static provider's group `pool`.
fn static_node(name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name},
            "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"providerID": format!("static://pool/{name}")},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
}

/// Static nodes a, b and c: a and b hold one replica each of ReplicaSet `web` (underutilized),
/// c holds `keeper`, a pod that may not be evicted, and has room for both replicas.
fn seed_two_replicas_and_a_keeper(server: &FakeApiServer) {
    for name in ["a", "b", "c"] {
        server.seed_value(static_node(name)).unwrap();
    }
    server.seed(&ReplicaSet {
        metadata: meta("default", "web", &[]),
        spec: Some(ReplicaSetSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
                ..Default::default()
            },
            ..Default::default()
        }),
        ..Default::default()
    });
    for (pod, node) in [("web-a", "a"), ("web-b", "b")] {
        let mut p = running_pod(pod, 100, node);
        p.metadata.labels = Some(BTreeMap::from([("app".to_string(), "web".to_string())]));
        p.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            uid: "uid-web".into(),
            controller: Some(true),
            ..Default::default()
        }]);
        server.seed(&p);
    }
    let mut keeper = running_pod("keeper", 100, "c");
    keeper.metadata.annotations =
        Some(BTreeMap::from([("cluster-autoscaler.kubernetes.io/safe-to-evict".to_string(), "false".to_string())]));
    server.seed(&keeper);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_provider_frees_a_drain_slot_once_delete_nodes_returns() {
    // Two underutilized nodes each hold one replicated pod; a third node keeps a pod that may not
    // be evicted and has room for both. With --max-drain-parallelism=1 the second drain starts once
    // the first node is deleted through the provider — even though nobody deletes its Node object
    // (the static provider has no cloud).
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "static-drains");
    seed_two_replicas_and_a_keeper(&server);
    let mut args = quick_flags(&dir, free_port(), &[]);
    args.retain(|a| a != "--cloud-provider=memory" && !a.starts_with("--cloud-config="));
    args.extend(
        [
            "--cloud-provider=static",
            "--nodes=0:3:pool",
            "--max-drain-parallelism=1",
            "--node-delete-delay-after-taint=0s",
            "--scale-down-delay-after-delete=0s",
        ]
        .map(String::from),
    );
    let controller = Controller::start(&dir, "controller", &args);
    eventually(&format!("both pods evicted, one drain after the other (log: {})", controller.log()), || async {
        let evicted: Vec<String> = server.evictions().into_iter().map(|e| e.name).collect();
        (evicted.contains(&"web-a".to_string()) && evicted.contains(&"web-b".to_string())).then_some(())
    })
    .await;
    // The first node drained is still a Node object: the slot was freed by DeleteNodes, not by
    // the Node going away.
    assert_eq!(node_names(&server).len(), 3);
    assert!(server.get::<Pod>(Some("default"), "keeper").is_some());
}

/// Issue 13, faults under load: the API server fails the initial pod list (503), a node read
/// (500), a taint write (409 conflicts), an eviction (429, as a PDB or priority-and-fairness
/// would) and answers the status ConfigMap slowly. The controller retries each and finishes the
/// same scale-down it would without faults; the node holding an unevictable pod is never tainted
/// for deletion and that pod is never evicted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_errors_conflicts_and_slow_answers_are_retried_without_a_wrong_deletion() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "api-faults");
    seed_two_replicas_and_a_keeper(&server);
    let faults = [
        Fault::new("/api/v1/pods", 503).verb(Verb::List).times(3),
        Fault::new("/api/v1/nodes/a", 500).verb(Verb::Get).times(2),
        Fault::new("/api/v1/nodes/b", 409).verb(Verb::Update).times(2),
        Fault::new("/api/v1/namespaces/default/pods/web-a/eviction", 429).verb(Verb::Create).times(3),
        Fault::slow(format!("/api/v1/namespaces/kube-system/configmaps/{STATUS}"), Duration::from_secs(2)).times(3),
    ];
    for fault in faults {
        server.inject_fault(fault);
    }
    let mut args = quick_flags(&dir, free_port(), &[]);
    args.retain(|a| a != "--cloud-provider=memory" && !a.starts_with("--cloud-config="));
    args.extend(
        ["--cloud-provider=static", "--nodes=0:3:pool", "--node-delete-delay-after-taint=0s"].map(String::from),
    );
    let mut controller = Controller::start(&dir, "controller", &args);
    eventually(&format!("both replicated pods evicted (log: {})", controller.log()), || async {
        let evicted: Vec<String> = server.evictions().into_iter().filter(|e| e.status == 201).map(|e| e.name).collect();
        (evicted.contains(&"web-a".to_string()) && evicted.contains(&"web-b".to_string())).then_some(())
    })
    .await;
    let left: Vec<String> =
        server.pending_faults().iter().filter(|f| f.status.is_some()).map(|f| f.path.clone()).collect();
    assert!(left.is_empty(), "every failure was met and retried past: {left:?}");
    assert!(server.evictions().iter().all(|e| e.name != "keeper"), "the unevictable pod is never evicted");
    assert!(!has_taint(&server, "c", "ToBeDeletedByClusterAutoscaler"), "the keeper's node is not being deleted");
    assert!(server.get::<Pod>(Some("default"), "keeper").is_some());
    assert!(controller.try_exit().is_none(), "the controller kept running; log: {}", controller.log());
}

/// A cordoned node with the `ToBeDeletedByClusterAutoscaler` taint a previous run left: the first
/// iteration reads it, then writes it without the taint.
fn seed_node_left_tainted(server: &FakeApiServer, name: &str) {
    server
        .seed_value(serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"unschedulable": true, "taints": [
                {"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000", "effect": "NoSchedule"}]}}))
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_lease_cancels_the_iteration_before_its_next_write() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "lease-loss");
    // Two nodes with taints a previous run left: the first iteration removes them one node at a
    // time (read, then write), and the API server is slow to answer the first read of each.
    for name in ["a", "b"] {
        seed_node_left_tainted(&server, name);
        server.inject_fault(Fault::slow(format!("/api/v1/nodes/{name}"), Duration::from_secs(8)));
    }
    // The Lease is created, then every renewal fails: leadership ends after the renew deadline,
    // while the iteration waits on node a.
    server.inject_fault(Fault::new(LEASE_PATH, 500).verb(Verb::Update).times(1_000_000));
    let mut args = quick_flags(&dir, free_port(), &[]);
    args.retain(|a| a != "--leader-elect=false" && a != "--cloud-provider=memory" && !a.starts_with("--cloud-config="));
    args.extend(
        [
            "--leader-elect=true",
            "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s",
            "--leader-elect-retry-period=200ms",
            "--cloud-provider=static",
            "--nodes=0:3:pool",
        ]
        .map(String::from),
    );
    let mut controller = Controller::start(&dir, "lease-loss", &args);
    let status = controller.wait_exit(Duration::from_secs(30)).await;
    let log = controller.log();
    assert_eq!(status.code(), Some(1), "log:\n{log}");
    assert!(log.contains("lost the leader Lease"), "log:\n{log}");
    // The iteration was cancelled while it waited on its first node: that read arrived (its slow
    // fault is used up), the second node was never read, and neither was written.
    let slow_left: Vec<String> =
        server.pending_faults().into_iter().filter(|f| f.path.starts_with("/api/v1/nodes/")).map(|f| f.path).collect();
    assert_eq!(slow_left.len(), 1, "exactly one node was read: {slow_left:?}");
    let writes: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/api/v1/nodes/") && r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes.is_empty(), "nodes written after the loss: {writes:?}");
    for name in ["a", "b"] {
        let node = server.get::<Node>(None, name).unwrap();
        assert!(node.spec.unwrap().taints.unwrap().iter().any(|t| t.key == "ToBeDeletedByClusterAutoscaler"));
    }
    assert!(server.get::<ConfigMap>(Some("kube-system"), STATUS).is_none(), "no status after the loss");
}

/// SIGTERM while an iteration waits on a slow API server: the iteration is cancelled at its next
/// await and the process exits cleanly at once, not after the slow answer (Kubernetes kills a pod
/// 30 s after SIGTERM by default). Nothing is written after the signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_slow_iteration_exits_at_once_without_writing() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "sigterm");
    // Leftover taints of a previous run: the first iteration reads each node, then writes it;
    // node a's read is answered slowly.
    for name in ["a", "b"] {
        seed_node_left_tainted(&server, name);
    }
    server.inject_fault(Fault::slow("/api/v1/nodes/a", Duration::from_secs(120)).verb(Verb::Get));
    let mut args = quick_flags(&dir, free_port(), &[]);
    args.retain(|a| a != "--cloud-provider=memory" && !a.starts_with("--cloud-config="));
    args.extend(["--cloud-provider=static", "--nodes=0:3:pool"].map(String::from));
    let mut controller = Controller::start(&dir, "sigterm", &args);
    // The slow answer's fault is used up when the request arrives.
    eventually("the iteration waiting on node a", || async {
        server.pending_faults().iter().all(|f| f.path != "/api/v1/nodes/a").then_some(())
    })
    .await;
    controller.terminate();
    // Well under the slow answer's 120 s: the exit does not wait for it.
    let status = controller.wait_exit(Duration::from_secs(20)).await;
    let log = controller.log();
    assert!(status.success(), "exit status {status:?}; log:\n{log}");
    let writes: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/nodes/a" && r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes.is_empty(), "node a written after SIGTERM: {writes:?}");
    let a = server.get::<Node>(None, "a").unwrap();
    assert!(a.spec.unwrap().taints.unwrap().iter().any(|t| t.key == "ToBeDeletedByClusterAutoscaler"));
}

/// A Deployment `web` of one replica and an HPA on it with minReplicas 3.
fn seed_web_with_hpa(server: &FakeApiServer) {
    let labels = [("app", "web")];
    server.seed(&Deployment {
        metadata: meta("default", "web", &labels),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(meta("default", "", &labels)),
                spec: Some(PodSpec { containers: vec![container(100)], ..Default::default() }),
            },
            ..Default::default()
        }),
        ..Default::default()
    });
    server.seed(&HorizontalPodAutoscaler {
        metadata: meta("default", "web", &[]),
        spec: Some(HorizontalPodAutoscalerSpec {
            min_replicas: Some(3),
            max_replicas: 5,
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: "web".into(),
            },
            metrics: Some(vec![MetricSpec {
                type_: "Resource".into(),
                resource: Some(ResourceMetricSource {
                    name: "cpu".into(),
                    target: MetricTarget {
                        type_: "Utilization".into(),
                        average_utilization: Some(50),
                        ..Default::default()
                    },
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_hpa_scales_its_deployment_through_the_scale_subresource_when_told_to_act() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "hpa");
    seed_web_with_hpa(&server);
    let args = quick_flags(&dir, free_port(), &["--horizontal-pod-autoscaler-mode=act"]);
    let _controller = Controller::start(&dir, "controller", &args);

    // Below minReplicas: the HPA raises the Deployment to 3 without needing metrics.
    eventually("the Deployment scaled to minReplicas", || async {
        let replicas = server.get::<Deployment>(Some("default"), "web").and_then(|d| d.spec).and_then(|s| s.replicas);
        (replicas == Some(3)).then_some(())
    })
    .await;
    assert!(server.request_count(Verb::Patch, "/apis/apps/v1/namespaces/default/deployments/web/scale") >= 1);
    eventually("the HPA's status and its SuccessfulRescale event", || async {
        let hpa = server.get::<HorizontalPodAutoscaler>(Some("default"), "web")?;
        let desired = hpa.status?.desired_replicas;
        let rescaled =
            event_reasons(&server, "HorizontalPodAutoscaler", "web").iter().any(|r| r == "SuccessfulRescale");
        (desired == 3 && rescaled).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_the_embedded_hpa_recommends_and_never_fights_kube_controller_manager() {
    let server = FakeApiServer::start().await;
    let dir = workdir(&server, "hpa-recommend");
    seed_web_with_hpa(&server);
    let port = free_port();
    let _controller = Controller::start(&dir, "controller", &quick_flags(&dir, port, &[]));

    // The HPA is reconciled (its recommendation shows in /metrics) ...
    eventually("the HPA counted in /metrics", || async {
        let (_, body) = http_get(&format!("127.0.0.1:{port}"), "/metrics")?;
        body.contains("cluster_autoscaler_pod_autoscalers_count{kind=\"HorizontalPodAutoscaler\"} 1").then_some(())
    })
    .await;
    // ... for a few more syncs, and nothing is written for it: kube-controller-manager owns it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let hpa_path = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web";
    let writes: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.method != "GET")
        .filter(|r| r.path.contains("/deployments/web") || r.path.starts_with(hpa_path))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes.is_empty(), "the recommending HPA wrote: {writes:?}");
    let replicas = server.get::<Deployment>(Some("default"), "web").and_then(|d| d.spec).and_then(|s| s.replicas);
    assert_eq!(replicas, Some(1));
    assert!(server.get::<HorizontalPodAutoscaler>(Some("default"), "web").unwrap().status.is_none());
    assert!(event_reasons(&server, "HorizontalPodAutoscaler", "web").is_empty());
}
