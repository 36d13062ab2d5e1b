//! Issue 13, faults under load, through the real `cluster-autoscaler` binary against the fake
//! API server, with the memory provider's faults armed in its `--cloud-config`: a failing
//! IncreaseSize, a failing DeleteNodes, and bursts of 5xx / 429 answers and an expiry (410) on
//! the watches and lists while a burst of pods turns unschedulable. Each checks the events and
//! metrics upstream's Cluster Autoscaler emits for the fault, that the controller keeps looping,
//! and that no node is lost or wrongly deleted. (`controller.rs` has the API faults of single
//! requests: a 503 initial list, a 500 read, 409 taint writes, a 429 eviction, slow answers.)

use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod};
use tests::controller::{
    event_reasons, first_node, has_taint, health, memory_cloud_config, memory_group, metrics_text, more_iterations,
    node_names, pending_pod, running_pod, sample, settled_after_one_scale_up, start_on_memory,
};
use tests::fake_apiserver::{FakeApiServer, Fault, Verb};
use tests::private_iaas::status_events;
use tests::{bind, eventually};

const STATUS: &str = "cluster-autoscaler-status";
const TO_BE_DELETED: &str = "ToBeDeletedByClusterAutoscaler";

/// Upstream: a failed IncreaseSize emits `FailedToScaleUpGroup` on the status ConfigMap, counts
/// `failed_scale_ups_total{reason="cloudProviderError"}` and backs the group off; the next loop
/// scales up another group that fits. The loop itself does not fail (upstream's `RunOnce` logs the
/// error and goes on to scale-down): `errors_total` stays 0. Nothing is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_increase_size_backs_the_group_off_and_another_group_scales_up() {
    let server = FakeApiServer::start().await;
    // least-waste prefers the 4-core group for a 3-core pod; its first IncreaseSize fails.
    let cloud_config = memory_cloud_config(
        &[memory_group("small", 4, 1, 3, 1), memory_group("large", 16, 0, 3, 0)],
        &["{group: small, type: failIncreaseSize, times: 1}"],
    );
    let (mut controller, port) = start_on_memory(&server, "increase-fails", &cloud_config, &["--expander=least-waste"]);
    let first = first_node(&server, &controller).await;
    assert_eq!(first, "small-1");
    server.seed(&running_pod("filler", 3000, &first));
    server.seed(&pending_pod("big", 3000));

    let large = eventually(&format!("a node of the other group (log: {})", controller.log()), || async {
        node_names(&server).into_iter().find(|n| n.starts_with("large-"))
    })
    .await;
    let events = eventually("FailedToScaleUpGroup on the status ConfigMap", || async {
        let events = status_events(&server);
        events.iter().any(|(reason, _)| reason == "FailedToScaleUpGroup").then_some(events)
    })
    .await;
    let (_, message) = events.iter().find(|(reason, _)| reason == "FailedToScaleUpGroup").unwrap();
    assert!(message.starts_with("Scale-up failed for group small:"), "{message}");
    let warnings = server
        .list::<Event>()
        .iter()
        .filter(|e| e.reason.as_deref() == Some("FailedToScaleUpGroup"))
        .all(|e| e.type_.as_deref() == Some("Warning"));
    assert!(warnings, "FailedToScaleUpGroup is a warning");
    // The scheduler binds the pod to the new node.
    server.modify::<Pod>(Some("default"), "big", |pod| bind(pod, &large)).unwrap();

    let text = eventually("the failure in /metrics", || async {
        let text = metrics_text(port).await;
        (sample(&text, r#"cluster_autoscaler_failed_scale_ups_total{reason="cloudProviderError"}"#) == Some(1.0))
            .then_some(text)
    })
    .await;
    assert_eq!(sample(&text, r#"cluster_autoscaler_errors_total{type="cloudProviderError"}"#), Some(0.0), "{text}");
    assert_eq!(sample(&text, "cluster_autoscaler_scaled_up_nodes_total"), Some(1.0), "{text}");
    // The group stays backed off (upstream: 5 minutes): the status ConfigMap says so.
    let status = server.get::<ConfigMap>(Some("kube-system"), STATUS).and_then(|c| c.data).unwrap_or_default();
    let status = status.get("status").cloned().unwrap_or_default();
    assert!(status.contains("Backoff") && status.contains("cloudProviderError"), "{status}");

    // The controller keeps looping, healthy, and deletes nothing: the full first node and the new one both stay.
    more_iterations(port, &text, 3.0).await;
    assert_eq!(health(port).await, Some(200));
    let mut nodes = node_names(&server);
    nodes.sort();
    assert_eq!(nodes, vec![large.clone(), first.clone()]);
    assert!(!has_taint(&server, &first, TO_BE_DELETED) && !has_taint(&server, &large, TO_BE_DELETED));
    assert!(controller.try_exit().is_none(), "the controller kept running; log: {}", controller.log());
}

/// A controller on one group of two nodes whose first DeleteNodes fails, cordoning before
/// deleting, with `extra`: once both nodes are up, the first gets a busy pod, so the second,
/// empty one is the node to remove (the group's minimum is 1). A deletion that fails after it
/// started delays only its group, and only with the local delay type, as upstream's (the
/// cluster-wide delay follows a failure to taint): `--scale-down-delay-after-failure` in `extra`
/// sets how long the group waits. Returns the controller, its `/metrics` port, the busy node
/// and the empty one.
async fn start_with_a_failing_delete(
    server: &FakeApiServer,
    test: &str,
    extra: &[&str],
) -> (tests::controller::Controller, u16, String, String) {
    let cloud_config =
        memory_cloud_config(&[memory_group("pool", 4, 1, 3, 2)], &["{group: pool, type: failDeleteNodes, times: 1}"]);
    let mut flags = vec!["--cordon-node-before-terminating=true", "--scale-down-delay-type-local=true"];
    flags.extend_from_slice(extra);
    let (controller, port) = start_on_memory(server, test, &cloud_config, &flags);
    let nodes = eventually(&format!("both initial nodes (log: {})", controller.log()), || async {
        let nodes = node_names(server);
        (nodes.len() == 2).then_some(nodes)
    })
    .await;
    let (busy, empty) = (nodes[0].clone(), nodes[1].clone());
    server.seed(&running_pod("keeper", 3000, &busy));
    (controller, port, busy, empty)
}

/// Waits for `ScaleDownFailed` on `node`, then its taint and cordon undone.
async fn failed_then_untainted_and_uncordoned(server: &FakeApiServer, node: &str) {
    eventually(&format!("ScaleDownFailed on {node}, then its taint and cordon undone"), || async {
        let failed = event_reasons(server, "Node", node).iter().any(|r| r == "ScaleDownFailed");
        let spec = server.get::<Node>(None, node)?.spec;
        let cordoned = spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
        (failed && !has_taint(server, node, TO_BE_DELETED) && !cordoned).then_some(())
    })
    .await;
}

/// A failed DeleteNodes whose untaint fails too (the API answers 500 to the node's update): the
/// node is not left tainted and cordoned until a restart, as upstream leaves it; the removal is
/// retried in the next loop, long before the group's failure delay lets the node be chosen again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_untaint_after_a_failed_delete_nodes_is_retried_in_the_next_loop() {
    let server = FakeApiServer::start().await;
    let extra = [
        // The window between the taint and DeleteNodes in which the untaint's fault is armed.
        "--node-delete-delay-after-taint=3s",
        // Long enough that only the untaint's retry, not a new deletion, can clear the taint.
        "--scale-down-delay-after-failure=10m",
    ];
    let (_controller, port, _busy, empty) = start_with_a_failing_delete(&server, "untaint-fails", &extra).await;
    eventually(&format!("the ToBeDeleted taint on {empty}"), || async {
        has_taint(&server, &empty, TO_BE_DELETED).then_some(())
    })
    .await;
    let node_path = format!("/api/v1/nodes/{empty}");
    server.inject_fault(Fault { verb: Some(Verb::Update), ..Fault::new(&node_path, 500) });

    failed_then_untainted_and_uncordoned(&server, &empty).await;
    assert!(server.pending_faults().is_empty(), "the first untaint was answered 500");
    assert!(server.request_count(Verb::Update, &node_path) >= 3, "the taint, the failed untaint, its retry");
    assert_eq!(node_names(&server).len(), 2, "nothing deleted");
    assert_eq!(health(port).await, Some(200));
}

/// Upstream: a failed DeleteNodes emits `ScaleDownFailed` on the node, removes the
/// `ToBeDeletedByClusterAutoscaler` taint and uncordons the node; it is no loop error
/// (`errors_total` stays 0) and no scale-down (`scaled_down_nodes_total` stays 0) — upstream has
/// no metric of its own for it. Once the failure delay has passed, the retry deletes the node;
/// the other node is never touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_delete_nodes_untaints_and_uncordons_the_node_and_a_later_retry_removes_it() {
    let server = FakeApiServer::start().await;
    // The window in which the rolled-back node is seen before the retry.
    let extra = ["--node-delete-delay-after-taint=0s", "--scale-down-delay-after-failure=8s"];
    let (_controller, port, busy, empty) = start_with_a_failing_delete(&server, "delete-fails", &extra).await;

    failed_then_untainted_and_uncordoned(&server, &empty).await;
    let failed = server
        .list::<Event>()
        .into_iter()
        .find(|e| e.reason.as_deref() == Some("ScaleDownFailed") && e.involved_object.name.as_deref() == Some(&empty))
        .unwrap();
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert!(
        failed.message.as_deref().unwrap_or_default().contains("DeleteNodes of node group pool failed"),
        "{failed:?}"
    );
    let text = metrics_text(port).await;
    assert_eq!(sample(&text, r#"cluster_autoscaler_scaled_down_nodes_total{reason="empty"}"#), Some(0.0), "{text}");
    assert_eq!(sample(&text, r#"cluster_autoscaler_errors_total{type="cloudProviderError"}"#), Some(0.0), "{text}");
    assert!(node_names(&server).contains(&empty), "the node whose deletion failed is still there");

    // After --scale-down-delay-after-failure the retry succeeds.
    eventually("the retry to delete the empty node", || async {
        (!node_names(&server).contains(&empty)).then_some(())
    })
    .await;
    let text = eventually("the scale-down in /metrics", || async {
        let text = metrics_text(port).await;
        (sample(&text, r#"cluster_autoscaler_scaled_down_nodes_total{reason="empty"}"#) == Some(1.0)).then_some(text)
    })
    .await;
    assert_eq!(sample(&text, r#"cluster_autoscaler_errors_total{type="cloudProviderError"}"#), Some(0.0), "{text}");
    assert_eq!(node_names(&server), vec![busy.clone()], "only the empty node went");
    assert!(!has_taint(&server, &busy, TO_BE_DELETED));
    assert!(server.get::<Pod>(Some("default"), "keeper").is_some());
    assert_eq!(health(port).await, Some(200));
}

/// While a burst of pods turns unschedulable, the pod and node watches and lists answer 500 and
/// 429 several times and every watch expires (410): the reflectors retry and list again, the
/// burst reaches the node group as one scale-up of exactly the nodes it needs (never a second
/// one for the same pods), the failed calls show in client-go's `rest_client_requests_total` as
/// upstream exposes it, no loop fails (`errors_total` stays 0: upstream counts failed loops,
/// not retried watches), and `/health-check` stays 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_of_5xx_and_429_on_watches_and_lists_delay_the_burst_but_never_double_it() {
    let server = FakeApiServer::start().await;
    let cloud_config = memory_cloud_config(&[memory_group("pool", 4, 1, 10, 1)], &[]);
    let (mut controller, port) = start_on_memory(&server, "watch-bursts", &cloud_config, &[]);
    let first = first_node(&server, &controller).await;
    server.seed(&running_pod("filler", 4000, &first));
    eventually("the controller's watches", || async { (server.active_watches() >= 10).then_some(()) }).await;
    let before = metrics_text(port).await;
    assert_eq!(sample(&before, "cluster_autoscaler_scaled_up_nodes_total"), Some(0.0), "{before}");

    for (path, verb, status, times) in [
        ("/api/v1/pods", Verb::Watch, 500, 3),
        ("/api/v1/pods", Verb::Watch, 429, 3),
        ("/api/v1/pods", Verb::List, 503, 2),
        ("/api/v1/pods", Verb::List, 429, 2),
        ("/api/v1/nodes", Verb::Watch, 500, 3),
        ("/api/v1/nodes", Verb::List, 500, 2),
    ] {
        server.inject_fault(Fault::new(path, status).verb(verb).times(times));
    }
    // Every open watch gets 410 Gone: the reflectors list again (meeting the list faults),
    // then watch again (meeting the watch faults).
    server.expire_watches();
    // Ten 1-core pods turn unschedulable meanwhile: three more 4-core nodes.
    for i in 0..10 {
        server.seed(&pending_pod(&format!("burst-{i}"), 1000));
    }

    eventually(&format!("the burst's nodes (log: {})", controller.log()), || async {
        (node_names(&server).len() == 4).then_some(())
    })
    .await;
    // The reflectors back off between failed watches: the burst may be acted on before they
    // are all met.
    eventually("the reflectors to retry past every injected failure", || async {
        server.pending_faults().is_empty().then_some(())
    })
    .await;
    let text = metrics_text(port).await;
    // Settled: a few more loops with the pods still pending (no scheduler binds them) and the
    // watches healthy again add nothing.
    let text = settled_after_one_scale_up(&server, port, &text, 4, 3.0, "size to 4 instead of 1").await;

    // client-go's counter has every failed attempt (a real API server is at 127.0.0.1:port).
    let host = server.addr().to_string();
    let failed = |code: &str| {
        sample(&text, &format!(r#"rest_client_requests_total{{code="{code}",method="GET",host="{host}"}}"#))
            .unwrap_or(0.0)
    };
    assert!(failed("500") >= 8.0, "{text}");
    assert!(failed("429") >= 5.0, "{text}");
    assert!(failed("503") >= 2.0, "{text}");
    assert!(failed("200") > 0.0, "{text}");
    for error_type in ["apiCallError", "cloudProviderError", "internalError"] {
        let errors = sample(&text, &format!(r#"cluster_autoscaler_errors_total{{type="{error_type}"}}"#));
        assert_eq!(errors, Some(0.0), "{error_type}: {text}");
    }
    assert_eq!(health(port).await, Some(200));
    assert!(controller.try_exit().is_none(), "the controller kept running; log: {}", controller.log());
    assert!(node_names(&server).contains(&first));
}
