//! Crashes of the real `cluster-autoscaler` binary between the steps of its work (issue 13,
//! item 5): SIGKILL (nothing flushed, nothing cleaned up) after a scale-up request, after the
//! soft taint, after the `ToBeDeleted` taint and before the first eviction, mid-drain, after the evictions and before
//! `DeleteNodes`, and after `DeleteNodes` took effect; then a fresh process against the same API
//! server and cloud. `simulate_restarts.rs` does the same at every actuation call in the memory
//! cluster; this is the once-through-the-binary check, with real processes and sockets.
//!
//! The cloud is the private-IaaS example: the stand-in IaaS API holds the VMs (so the target
//! sizes) in its own process, served to `cluster-autoscaler --cloud-provider=externalgrpc` by
//! `private-iaas-grpc`, so the state the dead process made survives it as a real cloud's does.
//! (The `memory` provider keeps its instances in the autoscaler's process and the `static`
//! provider its target sizes: a restart of either forgets an IncreaseSize or a DeleteNodes.)
//!
//! Each process is stopped at a known step without timing: an eviction the API server keeps
//! refusing (500) holds a drain; a `delay-deletion.cluster-autoscaler.kubernetes.io/` annotation
//! (upstream's) holds a drained node before `DeleteNodes`; a slow IaaS answer holds `DeleteNodes`
//! after the VM is gone; a VM that is not settled holds a scale-up; a long
//! `--scale-down-unneeded-time` holds an unneeded node soft-tainted. After the restart, as upstream:
//! the fresh process removes the `ToBeDeleted` taint the dead one left and uncordons
//! (`ClusterAutoscalerCleanup`), then decides again and finishes the scale-down from where the
//! cluster is; a VM still building counts as upcoming, so no second VM is asked for.

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use serde_json::json;
use std::collections::BTreeMap;
use tests::eventually;
use tests::fake_apiserver::{Fault, Verb};
use tests::private_iaas::{
    CREATES, Cluster, DELETES, Process, TO_BE_DELETED, Tls, events, has_taint, pending_pod, running_pod,
};

/// Flags of both processes: cordoning is part of what a restart must undo.
const FLAGS: &[&str] = &["--cordon-node-before-terminating=true"];

/// A node group of the IaaS's pool, one autoscaler at a time over externalgrpc.
struct Restarts {
    cluster: Cluster,
    /// Keeps the gRPC server (the provider) up across the autoscaler's restarts.
    _grpc: Process,
    config: std::path::PathBuf,
    /// (VM id, Node name) of a node holding a pod nothing may evict.
    keeper: (String, String),
}

impl Restarts {
    async fn start(test: &str) -> Restarts {
        let cluster = Cluster::start(test).await;
        let keeper = cluster.keeper().await;
        let grpc = cluster.grpc_server("127.0.0.1:0", Tls::Plaintext);
        let config = cluster.externalgrpc_config(&grpc.address, "30s", Tls::Plaintext);
        Restarts { cluster, _grpc: grpc, config, keeper }
    }

    fn autoscaler(&self) -> Process {
        self.autoscaler_with(&[])
    }

    /// With `extra` flags after the common ones (the last of a flag given twice wins).
    fn autoscaler_with(&self, extra: &[&str]) -> Process {
        let flags: Vec<&str> = FLAGS.iter().chain(extra).copied().collect();
        self.cluster.externalgrpc_autoscaler(&self.config, &flags)
    }

    fn is_cordoned(&self, node: &str) -> bool {
        self.cluster.server.get::<Node>(None, node).and_then(|n| n.spec).and_then(|s| s.unschedulable).unwrap_or(false)
    }

    /// Eviction requests for `pod` answered `status` so far (refusals by an injected fault
    /// included: the server's eviction records hold only the evictions it served).
    fn evictions(&self, pod: &str, status: u16) -> usize {
        let path = eviction_path(pod);
        self.cluster.server.requests().iter().filter(|r| r.path == path && r.status == status).count()
    }
}

/// The pod names of ReplicaSet `web` on the drained node.
const REPLICAS: [&str; 2] = ["web-a", "web-b"];

/// A second VM with a Node holding two replicas of `web` (400m each, 20 % of the node): the node
/// is unneeded, its pods fit beside the keeper's. Returns (VM id, Node name).
async fn underused_node(restarts: &Restarts, annotations: &[(&str, &str)]) -> (String, String) {
    let cluster = &restarts.cluster;
    let vm = cluster.iaas.create_vm().await;
    cluster.iaas.settle().await;
    let mut node = tests::private_iaas::node_of(&vm);
    node.metadata.annotations =
        Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>())
            .filter(|a| !a.is_empty());
    let name = cluster.server.seed(&node).metadata.name.expect("a node name");
    let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let replica_set = cluster.server.seed(&ReplicaSet {
        metadata: ObjectMeta { name: Some("web".into()), namespace: Some("default".into()), ..Default::default() },
        spec: Some(ReplicaSetSpec {
            replicas: Some(2),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..Default::default() },
            ..Default::default()
        }),
        ..Default::default()
    });
    for pod in REPLICAS {
        let mut replica = running_pod(pod, 400, &name);
        replica.metadata.labels = Some(labels.clone());
        replica.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            uid: replica_set.metadata.uid.clone().expect("a stored object has a uid"),
            controller: Some(true),
            ..Default::default()
        }]);
        cluster.server.seed(&replica);
    }
    (vm["id"].as_str().expect("a VM id").to_string(), name)
}

fn eviction_path(pod: &str) -> String {
    format!("/api/v1/namespaces/default/pods/{pod}/eviction")
}

/// Where the first process is killed during the scale-down of the underused node.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Crash {
    /// Tainted and cordoned; every eviction refused so far.
    AfterTaintBeforeEviction,
    /// One of the two replicas evicted, the other refused so far.
    MidDrain,
    /// Both evicted; `DeleteNodes` held back by a delay-deletion annotation.
    AfterEvictionsBeforeDeleteNodes,
    /// The IaaS deleted the VM; its answer to `DeleteNodes` has not arrived.
    AfterDeleteNodes,
}

/// Scales the underused node down, killing the autoscaler at `crash` and starting a fresh one;
/// checks that the scale-down ends as it would have without the crash.
async fn scale_down_killed(test: &str, crash: Crash) {
    let restarts = Restarts::start(test).await;
    let cluster = &restarts.cluster;
    let server = &cluster.server;
    const HOLD: &str = "delay-deletion.cluster-autoscaler.kubernetes.io/test";
    let hold: &[(&str, &str)] = if crash == Crash::AfterEvictionsBeforeDeleteNodes { &[(HOLD, "hold")] } else { &[] };
    let (vm, node) = underused_node(&restarts, hold).await;
    let refused: &[&str] = match crash {
        Crash::AfterTaintBeforeEviction => &REPLICAS,
        Crash::MidDrain => &REPLICAS[1..],
        _ => &[],
    };
    for pod in refused {
        server.inject_fault(Fault::new(eviction_path(pod), 500).verb(Verb::Create).times(1_000_000));
    }
    if crash == Crash::AfterDeleteNodes {
        cluster.iaas.arm(json!({"slowRequests": 1, "slowMillis": 600_000, "route": DELETES})).await;
    }

    let mut first = restarts.autoscaler();
    // The step reached, and held there.
    match crash {
        Crash::AfterTaintBeforeEviction => {
            eventually("both evictions refused", || async {
                REPLICAS.iter().all(|p| restarts.evictions(p, 500) >= 1).then_some(())
            })
            .await
        }
        Crash::MidDrain => {
            eventually("web-a evicted, web-b refused", || async {
                (restarts.evictions("web-a", 201) == 1 && restarts.evictions("web-b", 500) >= 1).then_some(())
            })
            .await
        }
        Crash::AfterEvictionsBeforeDeleteNodes => {
            eventually("both replicas evicted", || async {
                REPLICAS.iter().all(|p| restarts.evictions(p, 201) == 1).then_some(())
            })
            .await;
            // The node is drained and held by the annotation: loops go on without DeleteNodes.
            restarts.cluster.loops(2).await;
        }
        Crash::AfterDeleteNodes => {
            eventually("the VM deleted in the IaaS", || async {
                (!cluster.iaas.vms().await.iter().any(|v| v["id"] == vm.as_str())).then_some(())
            })
            .await
        }
    }
    assert!(has_taint(server, &node, TO_BE_DELETED) && restarts.is_cordoned(&node), "{crash:?}: node marked");
    let deletes = if crash == Crash::AfterDeleteNodes { 1 } else { 0 };
    assert_eq!(cluster.iaas.requests(DELETES).await, deletes, "{crash:?}");
    first.kill();

    // What held the process is lifted; a fresh one starts on what the dead one left.
    server.clear_faults();
    cluster.iaas.call("DELETE", "/admin/faults", None).await;
    if crash == Crash::AfterEvictionsBeforeDeleteNodes {
        server.modify::<Node>(None, &node, |n| {
            n.metadata.annotations.get_or_insert_default().remove(HOLD);
        });
    }
    let evicted_before: Vec<&str> = REPLICAS.iter().copied().filter(|p| restarts.evictions(p, 201) == 1).collect();
    let second = restarts.autoscaler();
    eventually("the fresh process's clean-up of the dead one's taint", || async {
        events(server, "Node", &node).iter().any(|(r, _)| r == "ClusterAutoscalerCleanup").then_some(())
    })
    .await;

    // The scale-down ends: the VM goes (once), the cloud node controller removes its Node.
    eventually("the node's VM deleted", || async {
        (!cluster.iaas.vms().await.iter().any(|v| v["id"] == vm.as_str())).then_some(())
    })
    .await;
    let left_on_node: Vec<String> = server
        .list::<Pod>()
        .into_iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node.as_str()))
        .filter_map(|p| p.metadata.name)
        .collect();
    assert!(left_on_node.is_empty(), "{crash:?}: pods still on the node its VM went with: {left_on_node:?}");
    assert!(server.remove::<Node>(None, &node));
    restarts.cluster.loops(3).await;

    // Every replica evicted exactly once, by whichever process; those the dead one evicted were
    // not asked again.
    for pod in REPLICAS {
        assert_eq!(restarts.evictions(pod, 201), 1, "{crash:?}: evictions of {pod}");
        if evicted_before.contains(&pod) {
            let asked = server.requests().iter().filter(|r| r.path == eviction_path(pod)).count();
            assert_eq!(asked, 1, "{crash:?}: {pod} asked to leave again");
        }
    }
    assert!(server.evictions().iter().all(|e| e.name != "keeper"), "{crash:?}: the keeper was evicted");
    assert_eq!(cluster.iaas.requests(DELETES).await, 1, "{crash:?}: one VM deletion");
    assert_eq!(cluster.iaas.requests(CREATES).await, 2, "{crash:?}: no scale-up (the keeper and the node's VM)");
    let group = cluster.group_status().expect("the group in the status");
    assert_eq!(group["health"]["cloudProviderTarget"], 1, "{crash:?}: {group}");
    assert_eq!(group["health"]["nodeCounts"]["registered"]["total"], 1, "{crash:?}: {group}");
    assert!(!restarts.is_cordoned(&restarts.keeper.1), "{crash:?}: the keeper's node cordoned");
    cluster.assert_keeper_kept(&restarts.keeper).await;
    let log = second.log();
    assert_eq!(tests::private_iaas::lines_with(&log, &["autoscaler loop failed"]), 0, "{crash:?}: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_to_be_deleted_taint_and_before_any_eviction() {
    scale_down_killed("restart-after-taint", Crash::AfterTaintBeforeEviction).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_drain_with_one_of_two_pods_evicted() {
    scale_down_killed("restart-mid-drain", Crash::MidDrain).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_evictions_and_before_delete_nodes() {
    scale_down_killed("restart-before-delete", Crash::AfterEvictionsBeforeDeleteNodes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_delete_nodes_took_effect_and_before_it_returned() {
    scale_down_killed("restart-after-delete", Crash::AfterDeleteNodes).await;
}

/// After a restart while a VM builds, a freshly started autoscaler remembers no scale-up but, as
/// upstream (`GetUpcomingNodes` counts what the target size owes beyond the started nodes, whoever
/// asked for it), counts the building VM as upcoming: the pending pod fits on it and no second VM
/// is requested, in any of its loops; the VM boots and takes the pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_a_scale_up_request_the_fresh_process_does_not_ask_again() {
    let restarts = Restarts::start("restart-after-increase").await;
    let cluster = &restarts.cluster;
    let mut first = restarts.autoscaler();
    cluster.server.seed(&pending_pod("web", 3000));
    let vm = cluster.new_vm(&[&restarts.keeper.0]).await;
    assert_eq!(vm["state"], "building", "{vm}");
    first.kill();

    let second = restarts.autoscaler();
    restarts.cluster.loops(4).await;
    let vms = cluster.iaas.vms().await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 2, "a second VM for a pod whose VM builds: {vms:#?}");
    let group = cluster.group_status().expect("the group in the status");
    assert_eq!(group["health"]["cloudProviderTarget"], 2, "the target the dead process set: {group}");

    let node = cluster.boot_and_bind(&vm, "web").await;
    eventually("the group's two nodes ready in the status", || async {
        (cluster.group_status()?["health"]["nodeCounts"]["registered"]["ready"] == 2).then_some(())
    })
    .await;
    restarts.cluster.loops(2).await;
    assert_eq!(cluster.iaas.requests(CREATES).await, 2);
    assert_eq!(cluster.iaas.requests(DELETES).await, 0);
    assert!(!has_taint(&cluster.server, &node, TO_BE_DELETED) && !restarts.is_cordoned(&node));
    cluster.assert_keeper_kept(&restarts.keeper).await;
    let log = second.log();
    assert_eq!(tests::private_iaas::lines_with(&log, &["autoscaler loop failed"]), 0, "{log}");
}

/// Killed with an unneeded node soft-tainted (`DeletionCandidateOfClusterAutoscaler`, before its
/// unneeded time is up): the fresh process keeps no memory of it, and as upstream's reads the
/// soft taints from the nodes: once a pod lands there and the node is needed, the taint the dead
/// process wrote is removed. The node is never tainted for deletion, cordoned or drained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_soft_taint_the_fresh_process_removes_it_once_the_node_is_needed() {
    const SOFT: &str = "DeletionCandidateOfClusterAutoscaler";
    const PATIENT: &[&str] = &["--scale-down-unneeded-time=1h"];
    let restarts = Restarts::start("restart-after-soft-taint").await;
    let cluster = &restarts.cluster;
    let server = &cluster.server;
    let (vm, node) = underused_node(&restarts, &[]).await;
    let mut first = restarts.autoscaler_with(PATIENT);
    eventually("the unneeded node soft-tainted", || async { has_taint(server, &node, SOFT).then_some(()) }).await;
    first.kill();

    let second = restarts.autoscaler_with(PATIENT);
    cluster.loops(2).await;
    assert!(has_taint(server, &node, SOFT), "still unneeded: the soft taint stays");
    // The scheduler places a 3-cpu pod there (a soft taint only makes it prefer other nodes):
    // the node is needed.
    server.seed(&running_pod("api", 3000, &node));
    eventually("the soft taint removed by the fresh process", || async {
        (!has_taint(server, &node, SOFT)).then_some(())
    })
    .await;
    cluster.loops(2).await;
    assert!(!has_taint(server, &node, SOFT) && !has_taint(server, &node, TO_BE_DELETED));
    assert!(!restarts.is_cordoned(&node));
    assert!(server.evictions().is_empty(), "{:?}", server.evictions());
    assert_eq!(cluster.iaas.requests(DELETES).await, 0);
    assert!(cluster.iaas.vms().await.iter().any(|v| v["id"] == vm.as_str()));
    cluster.assert_keeper_kept(&restarts.keeper).await;
    let log = second.log();
    assert_eq!(tests::private_iaas::lines_with(&log, &["autoscaler loop failed"]), 0, "{log}");
}
