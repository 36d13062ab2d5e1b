//! The real `cluster-autoscaler` binary with `--cloud-provider=clusterapi` against the fake API
//! server serving the Cluster API CRDs, and [`MiniCapi`] playing Cluster API's controllers and
//! the kubelets. Both of upstream's layouts: one cluster that is management and workload cluster
//! at once (no `--cloud-config`), and a separate management cluster (`--cloud-config`).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use serde_json::{Value, json};
use tests::controller::{Controller, controller_binary, free_port, http_get};
use tests::fake_apiserver::{FakeApiServer, RequestRecord};
use tests::{TestDir, bind, eventually};

use super::fixtures::*;

const NS: &str = "capi";
const CLUSTER: &str = "c1";
const DISCOVERY: &str = "--node-group-auto-discovery=clusterapi:namespace=capi,clusterName=c1";
const STATUS: &str = "cluster-autoscaler-status";

/// Kubeconfigs and the controller's log; kept if the test fails.
fn workdir(test: &str) -> TestDir {
    TestDir::new(&format!("ca-clusterapi-{test}-"))
}

fn kubeconfig(dir: &Path, name: &str, server: &FakeApiServer) -> String {
    let path = dir.join(name);
    std::fs::write(&path, server.kubeconfig_yaml()).unwrap();
    path.display().to_string()
}

/// A quick controller: one-second loops, no scale-down delays, no leader election.
fn flags(workload_kubeconfig: &str, port: u16, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        format!("--kubeconfig={workload_kubeconfig}"),
        "--cloud-provider=clusterapi".to_string(),
        DISCOVERY.to_string(),
        format!("--address=127.0.0.1:{port}"),
        "--scan-interval=1s".into(),
        "--scale-down-unneeded-time=1s".into(),
        "--scale-down-delay-after-add=0s".into(),
        "--scale-down-delay-after-failure=0s".into(),
        "--leader-elect=false".into(),
        "--kube-client-qps=-1".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn replicas(management: &FakeApiServer, md: &str) -> u64 {
    let object = management.get_value(V1BETA1, "MachineDeployment", Some(NS), md).unwrap();
    object.pointer("/spec/replicas").and_then(Value::as_u64).unwrap()
}

fn machine_names(management: &FakeApiServer) -> Vec<String> {
    management
        .list_values(V1BETA1, "Machine")
        .iter()
        .filter_map(|m| m.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn reasons(server: &FakeApiServer) -> Vec<(String, String)> {
    server.list::<Event>().into_iter().map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default())).collect()
}

fn status_text(workload: &FakeApiServer) -> String {
    workload
        .get::<ConfigMap>(Some("kube-system"), STATUS)
        .and_then(|c| c.data)
        .and_then(|d| d.get("status").cloned())
        .unwrap_or_default()
}

/// A MachineDeployment at zero of Cluster `c1`, sized from its capacity annotations
/// (4 CPUs, 16 GiB), with its DockerMachineTemplate.
fn seed_deployment(management: &FakeApiServer, name: &str, max: usize) {
    let sized = sized(0, max);
    management.seed_value(machine_deployment(NS, name, CLUSTER, 0, &pairs(&sized))).unwrap();
    management.seed_value(docker_template(NS, &format!("{name}-template"), None)).unwrap();
}

fn index_of(requests: &[RequestRecord], from: usize, what: impl Fn(&RequestRecord) -> bool) -> Option<usize> {
    requests.iter().enumerate().skip(from).find(|(_, r)| what(r)).map(|(i, _)| i)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_cluster_scales_a_machine_deployment_from_zero_to_max_and_deletes_the_emptied_nodes_machine() {
    let server = Arc::new(FakeApiServer::builder().cluster_api(true).start().await);
    seed_deployment(&server, "workers", 3);
    let _capi = MiniCapi::start(server.clone(), server.clone(), NS, "workers", CLUSTER, Outcome::Node);
    let port = free_port();
    let dir = workdir("one-cluster");
    let config = kubeconfig(&dir, "kubeconfig", &server);
    let controller = Controller::start(&dir, "controller", &flags(&config, port, &[]));

    // Four pods of 3 CPUs: one per 4-CPU node, but the group stops at its max of 3.
    for i in 1..=4 {
        server.seed(&pending_pod(&format!("p{i}"), "3"));
    }
    eventually(&format!("the MachineDeployment scaled from zero (log: {})", controller.log()), || async {
        (replicas(&server, "workers") == 3 && machine_names(&server).len() == 3).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(replicas(&server, "workers"), 3, "never above max-size");
    let scale_path = "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machinedeployments/workers/scale";
    assert!(server.requests().iter().any(|r| r.method == "PATCH" && r.path == scale_path), "through /scale");

    // The scheduler places three pods; the fourth goes. Then one node empties.
    for i in 1..=3 {
        let node = format!("workers-{i}-node");
        server.modify::<Pod>(Some("default"), &format!("p{i}"), |pod| bind(pod, &node)).unwrap();
    }
    assert!(server.remove::<Pod>(Some("default"), "p4"));
    let before = server.requests().len();
    assert!(server.remove::<Pod>(Some("default"), "p2"));
    eventually(&format!("the emptied node's Machine deleted (log: {})", controller.log()), || async {
        (replicas(&server, "workers") == 2 && machine_names(&server) == ["workers-1", "workers-3"]).then_some(())
    })
    .await;
    let requests = server.requests();
    let machine_path = "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machines/workers-2";
    let marked = index_of(&requests, before, |r| r.method == "PATCH" && r.path == machine_path)
        .expect("the Machine was marked for deletion");
    let lowered = index_of(&requests, before, |r| r.method == "PATCH" && r.path == scale_path)
        .expect("the replicas were lowered");
    assert!(marked < lowered, "the Machine is marked before the replicas go down");
    let other_machines = requests[before..]
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.contains("/machines/") && r.path != machine_path)
        .count();
    assert_eq!(other_machines, 0, "only the emptied node's Machine is touched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_separate_management_cluster_backs_off_a_machine_that_never_gets_a_node() {
    let workload = Arc::new(FakeApiServer::start().await);
    let management = Arc::new(FakeApiServer::builder().cluster_api(true).start().await);
    seed_deployment(&management, "stuck", 3);
    let _capi = MiniCapi::start(management.clone(), workload.clone(), NS, "stuck", CLUSTER, Outcome::Stuck);
    let port = free_port();
    let dir = workdir("separate");
    let workload_config = kubeconfig(&dir, "workload.kubeconfig", &workload);
    let management_config = format!("--cloud-config={}", kubeconfig(&dir, "management.kubeconfig", &management));
    let extra = [management_config.as_str(), "--max-node-provision-time=3s"];
    let controller = Controller::start(&dir, "controller", &flags(&workload_config, port, &extra));

    workload.seed(&pending_pod("web", "1"));
    eventually(&format!("a Machine created for the pod (log: {})", controller.log()), || async {
        (replicas(&management, "stuck") == 1 && machine_names(&management) == ["stuck-1"]).then_some(())
    })
    .await;
    // The Machine stays Provisioning: after --max-node-provision-time the scale-up times out,
    // the group backs off and the request is taken back.
    eventually(&format!("the scale-up timed out (log: {})", controller.log()), || async {
        reasons(&workload).iter().any(|(reason, _)| reason == "ScaleUpTimedOut").then_some(())
    })
    .await;
    eventually("the backoff in the status ConfigMap", || async {
        let status = status_text(&workload);
        (status.contains("Backoff") && status.contains("MachineDeployment/capi/stuck")).then_some(())
    })
    .await;
    eventually(&format!("the scale-up reverted (log: {})", controller.log()), || async {
        (replicas(&management, "stuck") == 0).then_some(())
    })
    .await;
    // Backed off: the pod is still pending, but the group is not asked again for now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(replicas(&management, "stuck"), 0, "backed off");

    // Each cluster got only its own calls.
    assert!(workload.requests().iter().all(|r| !r.path.contains("cluster.x-k8s.io")));
    assert!(management.requests().iter().all(|r| r.path.contains("cluster.x-k8s.io") || r.path == "/apis"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_machine_is_an_instance_error_the_group_backs_off_from() {
    let server = Arc::new(FakeApiServer::builder().cluster_api(true).start().await);
    seed_deployment(&server, "quota", 3);
    let capi = MiniCapi::start(server.clone(), server.clone(), NS, "quota", CLUSTER, Outcome::Fail);
    let port = free_port();
    let dir = workdir("failed");
    let config = kubeconfig(&dir, "kubeconfig", &server);
    let controller = Controller::start(&dir, "controller", &flags(&config, port, &[]));

    server.seed(&pending_pod("web", "1"));
    eventually(&format!("the failure reported (log: {})", controller.log()), || async {
        reasons(&server)
            .iter()
            .any(|(reason, message)| reason == "ScaleUpFailed" && message.contains("ProvisioningFailed"))
            .then_some(())
    })
    .await;
    eventually("the backoff in the status ConfigMap", || async {
        let status = status_text(&server);
        (status.contains("Backoff") && status.contains("ProvisioningFailed")).then_some(())
    })
    .await;
    // The failed Machine is removed the upstream way: marked, then the replicas lowered.
    eventually(&format!("the failed Machine removed (log: {})", controller.log()), || async {
        (replicas(&server, "quota") == 0 && machine_names(&server).is_empty()).then_some(())
    })
    .await;
    let marked = server.requests().iter().any(|r| r.method == "PATCH" && r.path.ends_with("/machines/quota-1"));
    assert!(marked, "the failed Machine was marked for deletion");
    // Even if the infrastructure recovered now, the group stays backed off for a while.
    *capi.outcome.lock().unwrap() = Outcome::Node;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(replicas(&server, "quota"), 0, "backed off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_machine_deployment_gets_a_warning_event_and_the_others_scale() {
    let server = Arc::new(FakeApiServer::builder().cluster_api(true).start().await);
    seed_deployment(&server, "good", 2);
    server.seed_value(machine_deployment(NS, "bad", CLUSTER, 0, &[(MIN, "0"), (MAX, "lots"), (CPU, "64")])).unwrap();
    let _capi = MiniCapi::start(server.clone(), server.clone(), NS, "good", CLUSTER, Outcome::Node);
    let port = free_port();
    let dir = workdir("malformed");
    let config = kubeconfig(&dir, "kubeconfig", &server);
    let mut controller = Controller::start(&dir, "controller", &flags(&config, port, &[]));

    server.seed(&pending_pod("web", "1"));
    eventually(&format!("the good MachineDeployment scaled (log: {})", controller.log()), || async {
        (replicas(&server, "good") == 1).then_some(())
    })
    .await;
    let events: Vec<Event> = server
        .list::<Event>()
        .into_iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some("MachineDeployment"))
        .collect();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].involved_object.name.as_deref(), Some("bad"));
    assert_eq!(events[0].type_.as_deref(), Some("Warning"));
    assert_eq!(events[0].reason.as_deref(), Some(cloudprovider_clusterapi::INVALID_REASON));
    let message = events[0].message.clone().unwrap_or_default();
    assert!(message.contains(MAX) && message.contains("\"lots\" is not an integer"), "{message}");
    assert_eq!(replicas(&server, "bad"), 0);
    assert!(controller.try_exit().is_none(), "not fatal");
    let address = format!("127.0.0.1:{port}");
    let health =
        tokio::task::spawn_blocking(move || http_get(&address, "/health-check").map(|(s, _)| s)).await.unwrap();
    assert_eq!(health, Some(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_against_the_management_cluster_shows_the_scale_up_and_writes_nothing() {
    let management = FakeApiServer::builder().cluster_api(true).start().await;
    seed_deployment(&management, "workers", 3);
    let dir = workdir("plan");
    let config = kubeconfig(&dir, "management.kubeconfig", &management);
    let mut pod = serde_json::to_value(pending_pod("web", "3")).unwrap();
    pod["apiVersion"] = json!("v1");
    pod["kind"] = json!("Pod");
    let snapshot = dir.join("dump.json");
    std::fs::write(&snapshot, json!({"apiVersion": "v1", "kind": "List", "items": [pod]}).to_string()).unwrap();
    let binary = controller_binary().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args([
                "plan",
                "--snapshot",
                &snapshot.display().to_string(),
                "--cloud-provider=clusterapi",
                &format!("--cloud-config={config}"),
                DISCOVERY,
                "--output=json",
            ])
            .output()
            .expect("running plan")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "plan failed: {stderr}\n{stdout}");
    let plan: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let scale_up = plan["scaleUp"].to_string();
    assert!(scale_up.contains("MachineDeployment/capi/workers"), "the plan scales the group up: {scale_up}");
    let writes: Vec<RequestRecord> = management.requests().into_iter().filter(|r| r.method != "GET").collect();
    assert_eq!(writes, [], "plan writes nothing to the management cluster");
    assert_eq!(replicas(&management, "workers"), 0);
}
