//! `plan --kubeconfig`: one read-only observation of a live cluster (the fake API server) through
//! the controller's kube adapter, then the same report as for a dump — and not one write.

use std::process::Command;

use serde_json::{Value, json};
use tests::controller::controller_binary;
use tests::fake_apiserver::FakeApiServer;

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
            "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"providerID": format!("static://pool/{name}")},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
}

fn pod(name: &str, cpu: &str, node: Option<&str>) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "uid-web",
                "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
        pod["status"] = json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]});
    }
    pod
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_reads_a_live_cluster_once_and_writes_nothing() {
    let server = FakeApiServer::start().await;
    server.seed_value(node("pool-1")).unwrap();
    server
        .seed_value(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "c"}]}}}}))
        .unwrap();
    server.seed_value(pod("web-0", "3", Some("pool-1"))).unwrap();
    server.seed_value(pod("web-1", "3", None)).unwrap();
    server.seed_value(pod("web-2", "3", None)).unwrap();
    let dir = tempfile::Builder::new().prefix("plan-live-").tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig_yaml()).unwrap();
    let binary = controller_binary().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args([
                "plan",
                &format!("--kubeconfig={}", kubeconfig.display()),
                "--cloud-provider=static",
                "--nodes=0:5:pool",
                "--output=json",
                "--kube-client-qps=-1",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "plan failed: {stderr}");
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    let increases = &plan["scaleUp"]["increases"];
    assert_eq!(increases[0]["nodeGroup"], "pool", "{plan:#}");
    assert_eq!(increases[0]["delta"], 2, "{plan:#}");
    let writes: Vec<String> =
        server.requests().iter().filter(|r| r.method != "GET").map(|r| format!("{} {}", r.method, r.path)).collect();
    assert!(writes.is_empty(), "plan wrote to the cluster: {writes:?}");
}

#[test]
fn plan_without_a_dump_or_a_cluster_says_what_it_needs() {
    let output = Command::new(controller_binary()).args(["plan", "--nodes=0:5:pool"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--snapshot") && stderr.contains("--kubeconfig"), "{stderr}");
}
