//! Issue 13, faults under load: the cloud timing out, through the real `cluster-autoscaler`
//! binary against the fake API server, with the memory provider's faults armed in its
//! `--cloud-config`. A node group whose new instance never registers (the scale-up times out,
//! the instance is removed, another group takes the pod), an IncreaseSize that answers late
//! (the loop waits, `/health-check` shows it, one scale-up only), and SIGTERM while DeleteNodes
//! hangs. (`controller_faults.rs` has the cloud refusing calls and the API server's faults;
//! `private_iaas.rs` the externalgrpc client's per-call deadline, upstream's `grpc_timeout`.)

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, Pod};
use tests::controller::{
    first_node, has_taint, health, memory_cloud_config, memory_group, metrics_text, more_iterations, node_names,
    pending_pod, running_pod, sample, settled_after_one_scale_up, start_on_memory,
};
use tests::fake_apiserver::FakeApiServer;
use tests::private_iaas::{node_group_status, status_events};
use tests::{bind, eventually};

const TO_BE_DELETED: &str = "ToBeDeletedByClusterAutoscaler";

/// The message of the first event with `reason` on the status ConfigMap whose message contains
/// every one of `parts`.
fn status_event(server: &FakeApiServer, reason: &str, parts: &[&str]) -> Option<String> {
    status_events(server).into_iter().find(|(r, m)| r == reason && parts.iter().all(|p| m.contains(p))).map(|(_, m)| m)
}

/// Whether every event with `reason` is a warning.
fn warnings(server: &FakeApiServer, reason: &str) -> bool {
    server
        .list::<Event>()
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .all(|e| e.type_.as_deref() == Some("Warning"))
}

/// Upstream (`clusterstate.go`, `updateScaleRequests`; `static_autoscaler.go`,
/// `removeOldUnregisteredNodes`): a scale-up whose nodes have not registered within
/// `--max-node-provision-time` times out — event `ScaleUpTimedOut`, `failed_scale_ups_total
/// {reason="timeout"}`, the group backed off with error code `timeout` in the status ConfigMap
/// — and the instance unregistered for longer than that is deleted through DeleteNodes (event
/// `DeleteUnregistered`, `old_unregistered_nodes_removed_count`). The pending pod then gets its
/// node from the other group; no registered node is deleted and the loop never fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_never_registers_times_the_scale_up_out_is_removed_and_another_group_takes_the_pod() {
    let server = FakeApiServer::start().await;
    // least-waste prefers the 4-core group for a 3-core pod; its new instance never registers.
    let cloud_config = memory_cloud_config(
        &[memory_group("small", 4, 1, 3, 1), memory_group("large", 16, 0, 3, 0)],
        &["{group: small, type: neverRegister, count: 1}"],
    );
    let extra = ["--expander=least-waste", "--max-node-provision-time=15s"];
    let (mut controller, port) = start_on_memory(&server, "never-registers", &cloud_config, &extra);
    let first = first_node(&server, &controller).await;
    assert_eq!(first, "small-1");
    server.seed(&running_pod("filler", 3000, &first));
    server.seed(&pending_pod("big", 3000));

    eventually(&format!("the scale-up of small (log: {})", controller.log()), || async {
        status_event(&server, "ScaledUpGroup", &["setting group small size to 2 instead of 1", "succeeded"])
    })
    .await;
    let requested = Instant::now();
    let timed_out = eventually("ScaleUpTimedOut on the status ConfigMap", || async {
        status_event(&server, "ScaleUpTimedOut", &["small"])
    })
    .await;
    let waited = requested.elapsed();
    assert!(timed_out.starts_with("Nodes added to group small failed to register within "), "{timed_out}");
    assert!(warnings(&server, "ScaleUpTimedOut"), "ScaleUpTimedOut is a warning");
    eprintln!("measured: ScaleUpTimedOut {waited:?} after the scale-up's event (--max-node-provision-time=15s)");

    // The long-unregistered instance is deleted through DeleteNodes (a fake node named by it).
    let removed = eventually("DeleteUnregistered on the status ConfigMap", || async {
        status_event(&server, "DeleteUnregistered", &["memory://small/2"])
    })
    .await;
    assert_eq!(removed, "Removed unregistered node memory://small/2");

    // The group backed off, the pod gets its node from the other group.
    let large = eventually(&format!("a node of the other group (log: {})", controller.log()), || async {
        node_names(&server).into_iter().find(|n| n.starts_with("large-"))
    })
    .await;
    server.modify::<Pod>(Some("default"), "big", |pod| bind(pod, &large)).unwrap();

    let text = eventually("the timeout and the removal in /metrics", || async {
        let text = metrics_text(port).await;
        let timeouts = sample(&text, r#"cluster_autoscaler_failed_scale_ups_total{reason="timeout"}"#);
        let removed = sample(&text, "cluster_autoscaler_old_unregistered_nodes_removed_count");
        (timeouts == Some(1.0) && removed == Some(1.0)).then_some(text)
    })
    .await;
    // The scale-up that timed out and the one of the other group; no loop failed.
    assert_eq!(sample(&text, "cluster_autoscaler_scaled_up_nodes_total"), Some(2.0), "{text}");
    for error_type in ["apiCallError", "cloudProviderError", "internalError"] {
        let errors = sample(&text, &format!(r#"cluster_autoscaler_errors_total{{type="{error_type}"}}"#));
        assert_eq!(errors, Some(0.0), "{error_type}: {text}");
    }
    assert_eq!(sample(&text, r#"cluster_autoscaler_failed_scale_ups_total{reason="cloudProviderError"}"#), Some(0.0));

    // The status ConfigMap as upstream writes it: small backed off for the timeout, its target
    // back at its one registered node, nothing unregistered left.
    let small = eventually("small's status with the instance gone", || async {
        node_group_status(&server, "small")
            .filter(|g| g["health"]["cloudProviderTarget"] == 1 && g["health"]["nodeCounts"]["unregistered"] == 0)
    })
    .await;
    assert_eq!(small["scaleUp"]["status"], "Backoff", "{small}");
    assert_eq!(small["scaleUp"]["backoffInfo"]["errorCode"], "timeout", "{small}");
    let message = small["scaleUp"]["backoffInfo"]["errorMessage"].as_str().unwrap_or_default();
    assert!(message.starts_with("Scale-up timed out for node group small after "), "{small}");
    assert_eq!(small["health"]["nodeCounts"]["longUnregistered"], 0, "{small}");
    assert_eq!(small["health"]["nodeCounts"]["registered"]["ready"], 1, "{small}");

    // Settled: the loop goes on, healthy, and no registered node is touched.
    more_iterations(port, &text, 3.0).await;
    assert_eq!(health(port).await, Some(200));
    let mut nodes = node_names(&server);
    nodes.sort();
    assert_eq!(nodes, vec![large.clone(), first.clone()]);
    assert!(!has_taint(&server, &first, TO_BE_DELETED) && !has_taint(&server, &large, TO_BE_DELETED));
    let text = metrics_text(port).await;
    assert_eq!(sample(&text, "cluster_autoscaler_scaled_up_nodes_total"), Some(2.0), "no further scale-up: {text}");
    assert!(controller.try_exit().is_none(), "the controller kept running; log: {}", controller.log());
}

/// An IncreaseSize the cloud carries out at once but answers 10 s late. Upstream's loop has no
/// deadline of its own on a provider call (its in-tree providers' SDKs have theirs; the
/// externalgrpc client has `grpc_timeout`, tested in `private_iaas.rs`): the iteration waits
/// for the answer. Meanwhile `/metrics` answers and, once no iteration has started for
/// `--max-inactivity`, `/health-check` fails, as upstream's does for a wedged loop (so the
/// kubelet's liveness probe would restart it). When the answer comes the loop goes on: the
/// new node serves the pod, no second IncreaseSize is made for it, the target size is the
/// registered count, and the health check passes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_increase_size_answered_late_holds_the_loop_and_scales_up_once() {
    let server = FakeApiServer::start().await;
    let cloud_config = memory_cloud_config(
        &[memory_group("pool", 4, 1, 3, 1)],
        &["{group: pool, type: slowIncreaseSize, delay: 10s, times: 1}"],
    );
    let (controller, port) = start_on_memory(&server, "slow-increase", &cloud_config, &["--max-inactivity=4s"]);
    let first = first_node(&server, &controller).await;
    server.seed(&running_pod("filler", 3000, &first));
    server.seed(&pending_pod("big", 3000));

    eventually(&format!("IncreaseSize held (log: {})", controller.log()), || async {
        controller.log().contains("IncreaseSize carried out; its answer is held back").then_some(())
    })
    .await;
    let held = Instant::now();
    let during = metrics_text(port).await;
    assert!(!during.is_empty(), "/metrics answers while the loop waits");
    // No iteration starts while one waits: past --max-inactivity the health check fails.
    eventually("/health-check failing while the loop waits", || async {
        (health(port).await == Some(500)).then_some(())
    })
    .await;
    let unhealthy_after = held.elapsed();
    let text = metrics_text(port).await;
    assert_eq!(
        sample(&text, r#"cluster_autoscaler_function_duration_seconds_count{function="main"}"#),
        sample(&during, r#"cluster_autoscaler_function_duration_seconds_count{function="main"}"#),
        "no iteration ended while IncreaseSize was unanswered"
    );

    // The answer arrives: the node registers and takes the pod; the loop is healthy again.
    let second = eventually(&format!("the new node (log: {})", controller.log()), || async {
        node_names(&server).into_iter().find(|n| *n != first)
    })
    .await;
    let answered_after = held.elapsed();
    server.modify::<Pod>(Some("default"), "big", |pod| bind(pod, &second)).unwrap();
    eventually("/health-check passing again", || async { (health(port).await == Some(200)).then_some(()) }).await;
    eprintln!(
        "measured: /health-check 500 {unhealthy_after:?} and the node registered {answered_after:?} after the \
         IncreaseSize was held (delay 10s, --max-inactivity=4s)"
    );

    let text = metrics_text(port).await;
    let text =
        settled_after_one_scale_up(&server, port, &text, 2, 1.0, "setting group pool size to 2 instead of 1").await;
    let pool = node_group_status(&server, "pool").expect("the pool's status");
    assert_eq!(pool["health"]["cloudProviderTarget"], 2, "{pool}");
    assert_eq!(pool["health"]["nodeCounts"]["registered"]["ready"], 2, "{pool}");
    assert_eq!(pool["scaleUp"]["status"], "NoActivity", "{pool}");
    // A late answer is no error: nothing failed, nothing backed off.
    assert_eq!(sample(&text, r#"cluster_autoscaler_failed_scale_ups_total{reason="cloudProviderError"}"#), Some(0.0));
    assert_eq!(sample(&text, r#"cluster_autoscaler_errors_total{type="cloudProviderError"}"#), Some(0.0), "{text}");
    assert!(!has_taint(&server, &first, TO_BE_DELETED) && !has_taint(&server, &second, TO_BE_DELETED));
}

/// SIGTERM while DeleteNodes of an empty node hangs (carried out, its answer 10 minutes late):
/// the iteration is cancelled at that await and the process exits cleanly at once (Kubernetes
/// kills a pod 30 s after SIGTERM by default), not when the cloud answers. The busy node and
/// its pod are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_delete_nodes_hangs_exits_at_once_and_touches_no_other_node() {
    let server = FakeApiServer::start().await;
    let cloud_config =
        memory_cloud_config(&[memory_group("pool", 4, 1, 3, 2)], &["{group: pool, type: slowDeleteNodes, delay: 10m}"]);
    let extra = ["--node-delete-delay-after-taint=0s"];
    let (mut controller, port) = start_on_memory(&server, "slow-delete", &cloud_config, &extra);
    let nodes = eventually(&format!("both initial nodes (log: {})", controller.log()), || async {
        let mut nodes = node_names(&server);
        nodes.sort();
        (nodes.len() == 2).then_some(nodes)
    })
    .await;
    // pool-1 is busy; pool-2 is empty and is the one to remove (the group's minimum is 1).
    let (busy, empty) = (nodes[0].clone(), nodes[1].clone());
    server.seed(&running_pod("keeper", 3000, &busy));

    eventually(&format!("DeleteNodes held (log: {})", controller.log()), || async {
        controller.log().contains("DeleteNodes carried out; its answer is held back").then_some(())
    })
    .await;
    assert!(has_taint(&server, &empty, TO_BE_DELETED), "the empty node is marked before DeleteNodes");
    assert_eq!(health(port).await, Some(200), "a call held for less than --max-inactivity is healthy");

    let signalled = Instant::now();
    controller.terminate();
    // Far under the 10 minutes the cloud takes to answer.
    let status = controller.wait_exit(Duration::from_secs(10)).await;
    let exited_after = signalled.elapsed();
    eprintln!("measured: exit {exited_after:?} after SIGTERM, DeleteNodes unanswered");
    assert!(status.success(), "exit status {status:?}; log:\n{}", controller.log());
    assert!(node_names(&server).contains(&busy), "the busy node stays");
    assert!(!has_taint(&server, &busy, TO_BE_DELETED));
    assert!(server.get::<Pod>(Some("default"), "keeper").is_some());
}
