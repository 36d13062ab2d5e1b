//! End to end: the real `cluster-autoscaler` binary with `--cloud-provider=aws` against the
//! fake Kubernetes API server and moto. The binary finds moto the AWS SDK's standard way
//! (`AWS_ENDPOINT_URL`, credentials and region from the environment): no test-only code path.
//!
//! A pending pod → the discovered ASG's desired capacity raised → the test registers a Node for
//! the new instance (as the kubelet would) and binds the pod (as the scheduler would) → the pod
//! goes, the node is empty → its instance is terminated and the desired capacity lowered. And
//! `plan` against moto shows the scale-up without changing anything.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use support::*;
use tests::controller::{Controller, controller_binary, free_port, http_get};
use tests::fake_apiserver::FakeApiServer;
use tests::moto::MotoServer;
use tests::{TestDir, eventually};

const ASG: &str = "workers";
const CLUSTER: &str = "k8s.io/cluster-autoscaler/e2e";
const DISCOVERY: &str =
    "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/e2e";

/// The SDK's standard environment, pointed at moto; profiles and instance metadata disabled
/// so nothing of the host's AWS set-up leaks in.
fn aws_env(moto: &MotoServer, dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL", moto.endpoint()),
        ("AWS_REGION", REGION.to_string()),
        ("AWS_ACCESS_KEY_ID", "test".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_string()),
        ("AWS_EC2_METADATA_DISABLED", "true".to_string()),
        ("AWS_CONFIG_FILE", dir.join("no-aws-config").display().to_string()),
        ("AWS_SHARED_CREDENTIALS_FILE", dir.join("no-aws-credentials").display().to_string()),
    ]
}

/// The kubeconfig, the dump and the controller's log; kept if the test fails.
fn workdir(test: &str) -> TestDir {
    TestDir::new(&format!("ca-aws-{test}-"))
}

/// An ASG at zero, discovered by the cluster's tags, on m5.large (2 vCPUs, 8 GiB).
async fn discovered_asg(moto: &MotoServer) -> Aws {
    let aws = Aws::new(moto);
    aws.launch_template("nodes", "m5.large").await;
    aws.asg(ASG, "nodes", "$Default", (0, 3, 0), &[(ENABLED_TAG, ""), (CLUSTER, "owned")]).await;
    aws
}

fn pending_pod(name: &str, millis: u32) -> Pod {
    Pod {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("app".into()),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([("cpu".to_string(), Quantity(format!("{millis}m")))])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some("Pending".into()),
            conditions: Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "False".into(),
                reason: Some("Unschedulable".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

/// What the kubelet registers for an m5.large instance.
fn kubelet_node(instance_id: &str) -> Node {
    let resources: BTreeMap<String, Quantity> = [("cpu", "2"), ("memory", "8Gi"), ("pods", "29")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect();
    let now = Time(Timestamp::now());
    Node {
        metadata: ObjectMeta {
            name: Some(instance_id.to_string()),
            labels: Some(BTreeMap::from([
                ("kubernetes.io/os".to_string(), "linux".to_string()),
                ("kubernetes.io/arch".to_string(), "amd64".to_string()),
                ("node.kubernetes.io/instance-type".to_string(), "m5.large".to_string()),
                ("topology.kubernetes.io/zone".to_string(), ZONE.to_string()),
                ("kubernetes.io/hostname".to_string(), instance_id.to_string()),
            ])),
            creation_timestamp: Some(now.clone()),
            ..Default::default()
        },
        spec: Some(NodeSpec { provider_id: Some(format!("aws:///{ZONE}/{instance_id}")), ..Default::default() }),
        status: Some(NodeStatus {
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_heartbeat_time: Some(now.clone()),
                last_transition_time: Some(now),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

fn bind(pod: &mut Pod, node: &str) {
    pod.spec.get_or_insert_with(Default::default).node_name = Some(node.into());
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_pod_scales_a_discovered_asg_up_and_the_empty_node_is_terminated() {
    let moto = MotoServer::start();
    let aws = discovered_asg(&moto).await;
    let server = FakeApiServer::start().await;
    let dir = workdir("up-down");
    std::fs::write(dir.join("kubeconfig"), server.kubeconfig_yaml()).unwrap();
    let port = free_port();
    let args: Vec<String> = [
        format!("--kubeconfig={}", dir.join("kubeconfig").display()),
        "--cloud-provider=aws".to_string(),
        DISCOVERY.to_string(),
        "--expander=price".to_string(),
        format!("--address=127.0.0.1:{port}"),
        "--scan-interval=1s".to_string(),
        "--scale-down-unneeded-time=1s".to_string(),
        "--scale-down-delay-after-add=0s".to_string(),
        "--leader-elect=false".to_string(),
        "--kube-client-qps=-1".to_string(),
    ]
    .into();
    let controller = Controller::start_with_env(&dir, "controller", &args, &aws_env(&moto, &dir));

    // A pod no node can take: the ASG at zero scales from its launch template's template.
    server.seed(&pending_pod("web", 1500));
    let instance = eventually(&format!("the ASG scaled up (log: {})", controller.log()), || async {
        match aws.state(ASG).await {
            (1, ids) if ids.len() == 1 => Some(ids[0].clone()),
            _ => None,
        }
    })
    .await;

    // The kubelet registers the instance; the scheduler binds the pod to it.
    server.seed(&kubelet_node(&instance));
    server.modify::<Pod>(Some("default"), "web", |pod| bind(pod, &instance)).unwrap();
    // The provider's own metric is served beside the core's.
    eventually("aws_request_duration_seconds in /metrics", || async {
        let body = tokio::task::spawn_blocking(move || http_get(&format!("127.0.0.1:{port}"), "/metrics"))
            .await
            .ok()??
            .1;
        body.contains(r#"cluster_autoscaler_aws_request_duration_seconds_count{endpoint="SetDesiredCapacity",status="success"} 1"#)
            .then_some(())
    })
    .await;

    // The pod goes: the node is empty, unneeded after 1s, and its instance terminated.
    assert!(server.remove::<Pod>(Some("default"), "web"));
    eventually(&format!("the instance terminated and the ASG back at zero (log: {})", controller.log()), || async {
        (aws.state(ASG).await == (0, Vec::new())).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_against_moto_shows_the_scale_up_and_changes_nothing() {
    let moto = MotoServer::start();
    let aws = discovered_asg(&moto).await;
    let dir = workdir("plan");
    let dump = serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [serde_json::to_value(pending_pod("web", 1500)).unwrap()
            .as_object().cloned().map(|mut o| { o.insert("apiVersion".into(), "v1".into()); o.insert("kind".into(), "Pod".into()); o }).unwrap()],
    });
    let snapshot = dir.join("dump.json");
    std::fs::write(&snapshot, dump.to_string()).unwrap();
    let binary = controller_binary().to_path_buf();
    let env = aws_env(&moto, &dir);
    let output = tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args([
                "plan",
                "--snapshot",
                &snapshot.display().to_string(),
                "--cloud-provider=aws",
                DISCOVERY,
                "--output=json",
            ])
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .expect("running plan")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "plan failed: {stderr}\n{stdout}");
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let scale_up = plan["scaleUp"].to_string();
    assert!(scale_up.contains(ASG), "the plan scales {ASG} up: {scale_up}");
    assert_eq!(aws.state(ASG).await, (0, Vec::new()), "plan changed nothing in AWS");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_documented_aws_manifest_starts_the_controller_flags_and_all() {
    // The container command of upstream's `cluster-autoscaler-autodiscover.yaml` example and
    // the extraArgs of upstream's Helm chart, as they are (leader election on); only the
    // kubeconfig and the metrics address are the test's.
    let moto = MotoServer::start();
    let _aws = discovered_asg(&moto).await;
    let server = FakeApiServer::start().await;
    let dir = workdir("upstream-manifest");
    std::fs::write(dir.join("kubeconfig"), server.kubeconfig_yaml()).unwrap();
    let port = free_port();
    let args: Vec<String> = [
        "--v=4",
        "--stderrthreshold=info",
        "--cloud-provider=aws",
        "--skip-nodes-with-local-storage=false",
        "--expander=least-waste",
        DISCOVERY,
        "--logtostderr=true",
        "--namespace=kube-system",
    ]
    .iter()
    .map(|a| a.to_string())
    .chain([format!("--kubeconfig={}", dir.join("kubeconfig").display()), format!("--address=127.0.0.1:{port}")])
    .collect();
    let controller = Controller::start_with_env(&dir, "controller", &args, &aws_env(&moto, &dir));
    eventually(&format!("the status ConfigMap (log: {})", controller.log()), || async {
        server.get::<k8s_openapi::api::core::v1::ConfigMap>(Some("kube-system"), "cluster-autoscaler-status")
    })
    .await;
    let health = http_get(&format!("127.0.0.1:{port}"), "/health-check").map(|(code, _)| code);
    assert_eq!(health, Some(200), "log: {}", controller.log());
}
