//! The private-IaaS example end to end, as a platform team would run it: the real autoscaler
//! binary against the fake API server, with the example's stand-in IaaS API (`iaas-api`) as a
//! process, and the example's provider either served over upstream's externalgrpc protocol by
//! `private-iaas-grpc` (`--cloud-provider=externalgrpc`, mutual TLS) or linked in through the
//! library entry point (`private-iaas-autoscaler --cloud-provider=private-iaas`).
//!
//! The test plays the rest of the cluster: the kubelet (a VM that is up registers a Node with
//! its providerID, the pool's labels and the flavor's capacity), the scheduler (binds pods), and
//! the cloud node controller (removes the Node of a deleted VM). VMs build until the test
//! settles them (`POST /admin/settle`), so nothing depends on how fast the machine is: every
//! wait is `tests::eventually` on a state, and faults are armed on the IaaS (`/admin/faults`)
//! or made by stopping the gRPC server.
//!
//! Every test ends by checking that what should stay stayed: a "keeper" VM with a Node and a
//! pod that nothing may remove.

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use tests::controller::free_port;
use tests::eventually;
use tests::private_iaas::{
    CREATES, Cluster, DELETES, POOL, Process, TO_BE_DELETED, Tls, events, has_taint, lines_with, node_names,
    pending_pod,
};

/// The whole life of a node, as the issue tells it: a pending pod → IncreaseSize → a VM in
/// the IaaS → its Node registered and the pod bound → the pod goes → the empty node is removed
/// → its VM deleted. The keeper stays throughout.
async fn scale_up_and_down(cluster: &Cluster, keeper: &(String, String)) {
    let server = &cluster.server;
    server.seed(&pending_pod("web", 3000));
    let vm = cluster.new_vm(&[&keeper.0]).await;
    assert_eq!(vm["state"], "building", "{vm}");
    assert_eq!(vm["flavor"], "m1.large", "{vm}");
    eventually("TriggeredScaleUp on the pod", || async { cluster.pod_event("web", "TriggeredScaleUp", POOL) }).await;
    let message = eventually("ScaledUpGroup on the status ConfigMap", || async {
        cluster.status_event("ScaledUpGroup", "setting group size succeeded")
    })
    .await;
    assert!(message.contains("setting group compute size to 2 instead of 1 (max: 3)"), "{message}");

    let node = cluster.boot_and_bind(&vm, "web").await;
    eventually("the group's two nodes ready in the status", || async {
        let group = cluster.group_status()?;
        (group["health"]["nodeCounts"]["registered"]["ready"] == 2).then_some(())
    })
    .await;

    // The pod goes: the node is empty, unneeded, removed.
    assert!(server.remove::<Pod>(Some("default"), "web"));
    let vm_id = vm["id"].as_str().unwrap().to_string();
    eventually("the empty node's VM deleted in the IaaS", || async {
        let vms = cluster.iaas.vms().await;
        (!vms.iter().any(|v| v["id"] == vm_id.as_str())).then_some(())
    })
    .await;
    assert!(has_taint(server, &node, TO_BE_DELETED), "DeleteNodes came before the taint");
    // The cloud node controller removes the Node of a VM that is gone.
    assert!(server.remove::<Node>(None, &node));
    // (One ScaleDown event per node: upstream's spam filter keeps the first of 300 s.)
    eventually("ScaleDown on the node and ScaleDownEmpty on the status ConfigMap", || async {
        let on_node = events(server, "Node", &node).iter().any(|(r, _)| r == "ScaleDown");
        (on_node && cluster.status_event("ScaleDownEmpty", &node).is_some()).then_some(())
    })
    .await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 2, "the keeper and one scale-up");
    assert_eq!(cluster.iaas.requests(DELETES).await, 1, "one scale-down");
    cluster.assert_keeper_kept(keeper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_externalgrpc_with_mutual_tls_a_pending_pod_gets_a_vm_and_the_emptied_node_goes() {
    let cluster = Cluster::start("grpc-e2e").await;
    let keeper = cluster.keeper().await;
    let grpc = cluster.grpc_server("127.0.0.1:0", Tls::Mutual);
    let config = cluster.externalgrpc_config(&grpc.address, "10s", Tls::Mutual);
    let autoscaler = cluster.externalgrpc_autoscaler(&config, &[]);
    scale_up_and_down(&cluster, &keeper).await;
    let log = autoscaler.log();
    assert_eq!(lines_with(&log, &["autoscaler loop failed"]), 0, "{log}");
    drop(grpc);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_through_the_library_entry_point_a_pending_pod_gets_a_vm_and_the_emptied_node_goes() {
    let cluster = Cluster::start("in-process-e2e").await;
    let keeper = cluster.keeper().await;
    let autoscaler = cluster.in_process_autoscaler(&[]);
    scale_up_and_down(&cluster, &keeper).await;
    let log = autoscaler.log();
    assert_eq!(lines_with(&log, &["autoscaler loop failed"]), 0, "{log}");
}

/// Lines of the autoscaler's log saying a loop failed because `address` did not answer.
fn loop_failures(autoscaler: &Process, address: &str) -> usize {
    lines_with(&autoscaler.log(), &["autoscaler loop failed", &format!("externalgrpc Refresh at {address}")])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_server_down_at_start_fails_loops_naming_its_address_until_it_is_up() {
    let cluster = Cluster::start("grpc-down-at-start").await;
    let keeper = cluster.keeper().await;
    let address = format!("127.0.0.1:{}", free_port());
    let config = cluster.externalgrpc_config(&address, "5s", Tls::Plaintext);
    let autoscaler = cluster.externalgrpc_autoscaler(&config, &[]);
    cluster.server.seed(&pending_pod("web", 3000));

    // The controller runs, and every loop says why it cannot act.
    eventually("two loops failing on the unreachable server", || async {
        (loop_failures(&autoscaler, &address) >= 2).then_some(())
    })
    .await;
    let log = autoscaler.log();
    let line = log.lines().find(|l| l.contains("autoscaler loop failed")).unwrap().to_lowercase();
    assert!(line.contains("unavailable") && line.contains("connection refused"), "{line}");
    assert_eq!(cluster.iaas.requests(CREATES).await, 1, "only the keeper's VM");

    // The server comes up on the configured address: the next loops scale up.
    let _grpc = cluster.grpc_server(&address, Tls::Plaintext);
    let vm = cluster.new_vm(&[&keeper.0]).await;
    cluster.boot_and_bind(&vm, "web").await;
    eventually("the group's two nodes ready in the status", || async {
        (cluster.group_status()?["health"]["nodeCounts"]["registered"]["ready"] == 2).then_some(())
    })
    .await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 2, "one scale-up");
    assert_eq!(cluster.iaas.requests(DELETES).await, 0);
    cluster.assert_keeper_kept(&keeper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_server_killed_mid_loop_fails_loops_loses_no_node_and_serves_again_after_a_restart() {
    let cluster = Cluster::start("grpc-killed").await;
    let keeper = cluster.keeper().await;
    let mut grpc = cluster.grpc_server("127.0.0.1:0", Tls::Plaintext);
    let address = grpc.address.clone();
    let config = cluster.externalgrpc_config(&address, "5s", Tls::Plaintext);
    let autoscaler = cluster.externalgrpc_autoscaler(&config, &[]);
    cluster.server.seed(&pending_pod("web", 3000));
    let first = cluster.new_vm(&[&keeper.0]).await;
    let web_node = cluster.boot_and_bind(&first, "web").await;
    eventually("the group's two nodes ready in the status", || async {
        (cluster.group_status()?["health"]["nodeCounts"]["registered"]["ready"] == 2).then_some(())
    })
    .await;

    // The server dies; a pod arrives while it is away.
    grpc.kill();
    let before = loop_failures(&autoscaler, &address);
    cluster.server.seed(&pending_pod("api", 3000));
    eventually("two loops failing on the dead server", || async {
        (loop_failures(&autoscaler, &address) >= before + 2).then_some(())
    })
    .await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 2, "nothing created while the server is down");
    assert_eq!(node_names(&cluster.server).len(), 2);

    // Back on the same address: the pending pod gets its VM; nothing was deleted.
    let _grpc = cluster.grpc_server(&address, Tls::Plaintext);
    let second = cluster.new_vm(&[&keeper.0, first["id"].as_str().unwrap()]).await;
    cluster.boot_and_bind(&second, "api").await;
    eventually("the group's three nodes ready in the status", || async {
        (cluster.group_status()?["health"]["nodeCounts"]["registered"]["ready"] == 3).then_some(())
    })
    .await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 3);
    assert_eq!(cluster.iaas.requests(DELETES).await, 0);
    assert!(node_names(&cluster.server).contains(&web_node));
    assert!(!has_taint(&cluster.server, &web_node, TO_BE_DELETED));
    cluster.assert_keeper_kept(&keeper).await;
}

/// Request faults armed for one route, then waited on until used up (so the test's own `/v1`
/// requests never take them).
async fn used_up(cluster: &Cluster) {
    eventually("the armed request faults used up", || async {
        let faults = cluster.iaas.faults().await;
        (faults["slowRequests"] == 0 && faults["serverErrors"] == 0).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_later_than_grpc_timeout_fail_clearly_and_a_timed_out_increase_is_not_repeated_while_backed_off() {
    let cluster = Cluster::start("grpc-slow").await;
    let keeper = cluster.keeper().await;
    let grpc = cluster.grpc_server("127.0.0.1:0", Tls::Plaintext);
    let config = cluster.externalgrpc_config(&grpc.address, "2s", Tls::Plaintext);
    let autoscaler = cluster.externalgrpc_autoscaler(&config, &[]);
    eventually("a first status", || async { cluster.group_status() }).await;

    // A slow listing: Refresh answers after the deadline, the loop fails and the next one runs.
    let listing = "GET /v1/pools/{pool}/vms";
    cluster.iaas.arm(json!({"slowRequests": 1, "slowMillis": 20_000, "route": listing})).await;
    let address = grpc.address.clone();
    let line = eventually("a loop failing on Refresh's deadline", || async {
        let log = autoscaler.log();
        let line = log.lines().find(|l| {
            l.contains("autoscaler loop failed") && l.contains(&format!("externalgrpc Refresh at {address}"))
        })?;
        Some(line.to_string())
    })
    .await;
    assert!(line.contains("deadline exceeded: no answer within 2s"), "{line}");
    used_up(&cluster).await;

    // A slow create: IncreaseSize answers after the deadline, although the VM was made.
    cluster.iaas.arm(json!({"slowRequests": 1, "slowMillis": 20_000, "route": CREATES})).await;
    cluster.server.seed(&pending_pod("web", 3000));
    let failure = eventually("FailedToScaleUpGroup on the status ConfigMap", || async {
        cluster.status_event("FailedToScaleUpGroup", "NodeGroupIncreaseSize(compute)")
    })
    .await;
    assert!(failure.contains(&format!("at {address}: deadline exceeded")), "{failure}");
    let log = autoscaler.log();
    assert!(lines_with(&log, &["scale-up failed", "NodeGroupIncreaseSize(compute)"]) >= 1, "{log}");
    used_up(&cluster).await;
    let vm = cluster.new_vm(&[&keeper.0]).await;

    // The group is backed off, and the VM the timed-out call made counts as upcoming (upstream's
    // GetUpcomingNodes reads the target size, backed off or not): the pod fits on it, and the
    // loops that follow do not ask again.
    eventually("the group backed off in the status", || async {
        (cluster.group_status()?["scaleUp"]["status"] == "Backoff").then_some(())
    })
    .await;
    cluster.loops(3).await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 2, "one create for the scale-up that timed out");

    // Its VM boots and takes the pod.
    cluster.boot_and_bind(&vm, "web").await;
    eventually("the group's two nodes ready in the status", || async {
        (cluster.group_status()?["health"]["nodeCounts"]["registered"]["ready"] == 2).then_some(())
    })
    .await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 2);
    assert_eq!(cluster.iaas.requests(DELETES).await, 0);
    cluster.assert_keeper_kept(&keeper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_increase_size_is_reported_backed_off_and_retried() {
    let cluster = Cluster::start("grpc-increase-fails").await;
    let keeper = cluster.keeper().await;
    let grpc = cluster.grpc_server("127.0.0.1:0", Tls::Plaintext);
    let config = cluster.externalgrpc_config(&grpc.address, "10s", Tls::Plaintext);
    cluster.iaas.arm(json!({"serverErrors": 1, "route": CREATES})).await;
    let autoscaler = cluster.externalgrpc_autoscaler(&config, &["--initial-node-group-backoff-duration=5s"]);
    cluster.server.seed(&pending_pod("web", 3000));

    let failure = eventually("FailedToScaleUpGroup on the status ConfigMap", || async {
        cluster.status_event("FailedToScaleUpGroup", "NodeGroupIncreaseSize(compute)")
    })
    .await;
    assert!(failure.contains("500"), "the IaaS's answer reaches the event: {failure}");
    let log = autoscaler.log();
    assert!(lines_with(&log, &["scale-up failed", "NodeGroupIncreaseSize(compute)"]) >= 1, "{log}");
    eventually("the pod told the group is backed off", || async {
        cluster.pod_event("web", "NotTriggerScaleUp", "in backoff after failed scale-up")
    })
    .await;

    // After the backoff, the scale-up is made once.
    let vm = cluster.new_vm(&[&keeper.0]).await;
    cluster.boot_and_bind(&vm, "web").await;
    eventually("the group's two nodes ready in the status", || async {
        (cluster.group_status()?["health"]["nodeCounts"]["registered"]["ready"] == 2).then_some(())
    })
    .await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 3, "the keeper, the refused create, the retry");
    assert_eq!(cluster.iaas.vms().await.len(), 2);
    assert_eq!(cluster.iaas.requests(DELETES).await, 0);
    cluster.assert_keeper_kept(&keeper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_delete_nodes_keeps_the_node_and_is_retried_after_the_failure_delay() {
    let cluster = Cluster::start("grpc-delete-fails").await;
    let keeper = cluster.keeper().await;
    // An empty node the autoscaler will want gone.
    let spare = cluster.iaas.create_vm().await;
    cluster.iaas.settle().await;
    let spare_node = cluster.register(&spare);
    cluster.iaas.arm(json!({"serverErrors": 1_000, "route": DELETES})).await;
    let grpc = cluster.grpc_server("127.0.0.1:0", Tls::Plaintext);
    let config = cluster.externalgrpc_config(&grpc.address, "10s", Tls::Plaintext);
    let autoscaler = cluster.externalgrpc_autoscaler(&config, &["--scale-down-delay-after-failure=1s"]);

    // Every DeleteNodes fails: the node is released each time, and kept.
    eventually("two failed deletions of the spare node", || async {
        let failed: Vec<String> = events(&cluster.server, "Node", &spare_node)
            .into_iter()
            .filter(|(r, m)| r == "ScaleDownFailed" && m.contains("NodeGroupDeleteNodes(compute)"))
            .map(|(_, m)| m)
            .collect();
        (cluster.iaas.requests(DELETES).await >= 2 && !failed.is_empty()).then_some(())
    })
    .await;
    let log = autoscaler.log();
    assert!(lines_with(&log, &["scale-down failed", "NodeGroupDeleteNodes(compute)"]) >= 1, "{log}");
    let vms = cluster.iaas.vms().await;
    assert!(vms.iter().any(|v| v["id"] == spare["id"] && v["state"] == "active"), "{vms:?}");
    assert!(node_names(&cluster.server).contains(&spare_node));

    // The IaaS recovers: the next attempt deletes the VM.
    cluster.iaas.call("DELETE", "/admin/faults", None).await;
    let spare_id = spare["id"].as_str().unwrap().to_string();
    eventually("the spare VM deleted", || async {
        (!cluster.iaas.vms().await.iter().any(|v| v["id"] == spare_id.as_str())).then_some(())
    })
    .await;
    assert!(cluster.server.remove::<Node>(None, &spare_node));
    assert_eq!(cluster.iaas.vms().await.len(), 1);
    cluster.assert_keeper_kept(&keeper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vms_in_error_are_instance_errors_that_back_the_group_off_and_are_deleted() {
    let cluster = Cluster::start("grpc-vm-errors").await;
    let keeper = cluster.keeper().await;
    let grpc = cluster.grpc_server("127.0.0.1:0", Tls::Plaintext);
    let config = cluster.externalgrpc_config(&grpc.address, "10s", Tls::Plaintext);
    cluster.iaas.arm(json!({"pool": POOL, "failNextCreates": 1})).await;
    let autoscaler = cluster.externalgrpc_autoscaler(&config, &[]);
    cluster.server.seed(&pending_pod("web", 3000));

    // The create is accepted; the VM is in error (no valid host).
    let failed = eventually("ScaleUpFailed on the status ConfigMap", || async {
        cluster.status_event("ScaleUpFailed", "NoValidHost")
    })
    .await;
    assert!(failed.starts_with("Failed adding a node to group compute: No valid host was found"), "{failed}");
    let group = eventually("the group backed off in the status", || async {
        cluster.group_status().filter(|g| g["scaleUp"]["status"] == "Backoff")
    })
    .await;
    assert_eq!(group["scaleUp"]["backoffInfo"]["errorCode"], "NoValidHost", "{group:#?}");
    // The failed instance is deleted through DeleteNodes.
    let removed = eventually("DeleteUnregistered on the status ConfigMap", || async {
        cluster.status_event("DeleteUnregistered", "create-error")
    })
    .await;
    assert!(removed.contains(&format!("private-iaas://{POOL}/vm-")), "{removed}");
    assert_eq!(cluster.iaas.requests(DELETES).await, 1);
    let vms = cluster.iaas.vms().await;
    assert_eq!(vms.len(), 1, "only the keeper's VM is left: {vms:?}");
    eventually("the pod told the group is backed off", || async {
        cluster.pod_event("web", "NotTriggerScaleUp", "in backoff after failed scale-up")
    })
    .await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 2, "no create while backed off");
    let log = autoscaler.log();
    assert_eq!(lines_with(&log, &["autoscaler loop failed"]), 0, "{log}");
    cluster.assert_keeper_kept(&keeper).await;
}
