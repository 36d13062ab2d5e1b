//! The provider itself against the fake API server serving the Cluster API CRDs, through the
//! real kube-rs client: discovery, sizes under min/max, DeleteNodes' mark-then-scale order and
//! its rollback, instance states, malformed resources, scale from zero, v1beta2, and `plan`'s
//! read-only build.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use cloudprovider::{
    CloudProvider, CloudProviderError, InstanceErrorClass, InstanceState, NodeGroup, NodeGroupAutoscalingOptions,
    ProviderContext, Purpose,
};
use cloudprovider_clusterapi::INVALID_REASON;
use k8s_openapi::api::core::v1::{Event, Node};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Value, json};
use tests::fake_apiserver::{FakeApiServer, Fault, RequestRecord, Verb};

use super::fixtures::*;

const NS: &str = "capi";
const MD_PATH: &str = "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machinedeployments";

async fn server() -> FakeApiServer {
    FakeApiServer::builder().cluster_api(true).start().await
}

fn context(server: &FakeApiServer, purpose: Purpose, discovery: &[&str]) -> ProviderContext {
    let mut context = ProviderContext::new("clusterapi", purpose);
    context.kube = Some(server.client());
    context.node_group_auto_discovery = discovery.iter().map(|s| s.to_string()).collect();
    context
}

async fn provider(server: &FakeApiServer, discovery: &[&str]) -> Arc<dyn CloudProvider> {
    let provider = cloudprovider_clusterapi::build(context(server, Purpose::Controller, discovery))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    provider.refresh().await.unwrap_or_else(|e| panic!("{e}"));
    provider
}

async fn group_ids(provider: &dyn CloudProvider) -> Vec<String> {
    let mut ids: Vec<String> = provider.node_groups().await.iter().map(|g| g.id().to_string()).collect();
    ids.sort();
    ids
}

async fn group(provider: &dyn CloudProvider, id: &str) -> Arc<dyn NodeGroup> {
    let groups = provider.node_groups().await;
    groups.into_iter().find(|g| g.id() == id).unwrap_or_else(|| panic!("no node group {id}"))
}

fn replicas(server: &FakeApiServer, kind: &str, name: &str) -> u64 {
    let object = server.get_value(V1BETA1, kind, Some(NS), name).unwrap_or_else(|| panic!("no {kind} {name}"));
    object.pointer("/spec/replicas").and_then(Value::as_u64).unwrap()
}

/// The writes (anything but GET) after the first `from` requests.
fn writes_since(server: &FakeApiServer, from: usize) -> Vec<RequestRecord> {
    server.requests().into_iter().skip(from).filter(|r| r.method != "GET").collect()
}

/// A MachineDeployment `md` with `n` running Machines and their nodes (`md-<i>-node`).
fn seed_running(server: &FakeApiServer, md: &str, n: usize, notes: &[(&str, &str)]) -> Vec<Node> {
    server.seed_value(machine_deployment(NS, md, "c1", n, notes)).unwrap();
    server.seed_value(machine_set_of(NS, md, "c1", n)).unwrap();
    (1..=n)
        .map(|i| {
            let name = format!("{md}-{i}");
            let node = format!("{name}-node");
            server.seed_value(machine(NS, &name, "c1", &format!("{md}-set"), Some(md), Some(&node))).unwrap();
            kubelet_node(&node, &name, NS, "4", "16Gi")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_by_namespace_cluster_name_and_labels() {
    let server = server().await;
    let sized = sized(0, 3);
    let notes = pairs(&sized);
    let mut green = machine_deployment("blue", "md-a", "c1", 1, &notes);
    green["metadata"]["labels"]["color"] = json!("green");
    server.seed_value(green).unwrap();
    server.seed_value(machine_deployment("blue", "md-b", "c2", 1, &notes)).unwrap();
    let mut red = machine_deployment("red", "md-c", "c1", 1, &notes);
    red["metadata"]["labels"]["color"] = json!("green");
    server.seed_value(red).unwrap();
    server.seed_value(machine_set("blue", "solo", "c1", 1, &notes)).unwrap();
    // A MachineSet of a MachineDeployment is never a group of its own, annotated or not.
    let mut owned = machine_set_of("blue", "md-a", "c1", 1);
    owned["metadata"]["annotations"] = annotations(&notes);
    server.seed_value(owned).unwrap();
    server
        .seed_value(json!({
            "apiVersion": V1BETA1, "kind": "MachinePool",
            "metadata": {"name": "pool", "namespace": "blue", "annotations": annotations(&notes)},
            "spec": {"clusterName": "c1", "replicas": 1, "providerIDList": ["docker:///pool-0"]},
        }))
        .unwrap();
    // Not autoscaled: no size annotations.
    server.seed_value(machine_deployment("blue", "plain", "c1", 1, &[])).unwrap();

    let cases: [(&[&str], &[&str]); 5] = [
        (
            &[],
            &[
                "MachineDeployment/blue/md-a",
                "MachineDeployment/blue/md-b",
                "MachineDeployment/red/md-c",
                "MachinePool/blue/pool",
                "MachineSet/blue/solo",
            ],
        ),
        (
            &["clusterapi:namespace=blue"],
            &[
                "MachineDeployment/blue/md-a",
                "MachineDeployment/blue/md-b",
                "MachinePool/blue/pool",
                "MachineSet/blue/solo",
            ],
        ),
        (
            &["clusterapi:clusterName=c1"],
            &[
                "MachineDeployment/blue/md-a",
                "MachineDeployment/red/md-c",
                "MachinePool/blue/pool",
                "MachineSet/blue/solo",
            ],
        ),
        (&["clusterapi:color=green"], &["MachineDeployment/blue/md-a", "MachineDeployment/red/md-c"]),
        // Keys of one spec AND'ed, specs OR'ed.
        (
            &["clusterapi:namespace=blue,clusterName=c2", "clusterapi:namespace=red,color=green"],
            &["MachineDeployment/blue/md-b", "MachineDeployment/red/md-c"],
        ),
    ];
    for (discovery, expected) in cases {
        let provider = provider(&server, discovery).await;
        assert_eq!(group_ids(provider.as_ref()).await, expected, "discovery {discovery:?}");
    }

    // Specs that all name a namespace list in those namespaces only (a Role per namespace
    // suffices); one list per kind per refresh.
    let before = server.requests().len();
    let provider = provider(&server, &["clusterapi:namespace=blue", "clusterapi:namespace=red,color=green"]).await;
    provider.refresh().await.unwrap();
    let lists: Vec<String> =
        server.requests()[before..].iter().filter(|r| r.verb == Some(Verb::List)).map(|r| r.path.clone()).collect();
    let distinct: BTreeSet<&String> = lists.iter().collect();
    assert!(distinct.iter().all(|p| p.contains("/namespaces/blue/") || p.contains("/namespaces/red/")), "{lists:#?}");
    for kind in ["machinedeployments", "machinesets", "machinepools", "machines"] {
        let count = lists.iter().filter(|p| p.ends_with(&format!("/namespaces/blue/{kind}"))).count();
        assert_eq!(count, 2, "one list of {kind} in blue per refresh: {lists:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increase_size_goes_through_the_scale_subresource_and_stops_at_max() {
    let server = server().await;
    let sized = sized(1, 3);
    seed_running(&server, "md", 1, &pairs(&sized));
    let provider = provider(&server, &[]).await;
    let md = group(provider.as_ref(), "MachineDeployment/capi/md").await;
    assert_eq!((md.min_size(), md.max_size(), md.target_size().await.unwrap()), (1, 3, 1));

    let before = server.requests().len();
    md.increase_size(2).await.unwrap();
    assert_eq!(replicas(&server, "MachineDeployment", "md"), 3);
    assert_eq!(md.target_size().await.unwrap(), 3, "the cache follows the write");
    let writes = writes_since(&server, before);
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!((writes[0].method.as_str(), writes[0].path.as_str()), ("PATCH", &*format!("{MD_PATH}/md/scale")));
    assert_eq!(writes[0].content_type.as_deref(), Some("application/merge-patch+json"));

    // Above max: refused before anything is written.
    let before = server.requests().len();
    let error = md.increase_size(1).await.unwrap_err();
    assert!(error.to_string().contains("size increase too large - desired:4 max:3"), "{error}");
    assert!(writes_since(&server, before).is_empty());
    assert!(md.increase_size(0).await.is_err());
    assert_eq!(replicas(&server, "MachineDeployment", "md"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_nodes_marks_the_machine_before_lowering_the_replicas_and_stops_at_min() {
    let server = server().await;
    let sized = sized(1, 3);
    let nodes = seed_running(&server, "md", 3, &pairs(&sized));
    let other = seed_running(&server, "other", 1, &pairs(&sized));
    let provider = provider(&server, &[]).await;
    let md = group(provider.as_ref(), "MachineDeployment/capi/md").await;
    for node in &nodes {
        let owner = provider.node_group_for_node(node).await.unwrap().map(|g| g.id().to_string());
        assert_eq!(owner.as_deref(), Some("MachineDeployment/capi/md"));
    }

    let before = server.requests().len();
    md.delete_nodes(std::slice::from_ref(&nodes[1])).await.unwrap();
    let writes: Vec<(String, String)> = writes_since(&server, before).into_iter().map(|r| (r.method, r.path)).collect();
    assert_eq!(
        writes,
        [
            ("PATCH".to_string(), "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machines/md-2".to_string()),
            ("PATCH".to_string(), format!("{MD_PATH}/md/scale")),
        ],
        "the Machine is marked first, then the replicas lowered"
    );
    let marked = server.get_value(V1BETA1, "Machine", Some(NS), "md-2").unwrap();
    assert!(marked.pointer("/metadata/annotations").and_then(|a| a.get(DELETE_MACHINE)).is_some(), "{marked}");
    for untouched in ["md-1", "md-3"] {
        let machine = server.get_value(V1BETA1, "Machine", Some(NS), untouched).unwrap();
        assert!(machine.pointer("/metadata/annotations").is_none(), "{machine}");
    }
    assert_eq!(replicas(&server, "MachineDeployment", "md"), 2);

    // A node of another group is refused, and nothing is written.
    let before = server.requests().len();
    let error = md.delete_nodes(&other).await.unwrap_err();
    assert!(error.to_string().contains("doesn't belong to node group"), "{error}");
    // Two nodes from 2 replicas would go below min 1.
    let error = md.delete_nodes(&[nodes[0].clone(), nodes[2].clone()]).await.unwrap_err();
    assert!(error.to_string().contains("minSize is 1"), "{error}");
    assert!(writes_since(&server, before).is_empty());

    // At min: refused.
    server.modify_value(V1BETA1, "MachineDeployment", Some(NS), "md", |md| md["spec"]["replicas"] = json!(1));
    let error = md.delete_nodes(std::slice::from_ref(&nodes[0])).await.unwrap_err();
    assert!(error.to_string().contains("min size reached"), "{error}");
    assert!(writes_since(&server, before).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_replica_change_removes_the_mark_again() {
    let server = server().await;
    let sized = sized(0, 3);
    let nodes = seed_running(&server, "md", 2, &pairs(&sized));
    let provider = provider(&server, &[]).await;
    let md = group(provider.as_ref(), "MachineDeployment/capi/md").await;
    // A 500 is not retried by kube's client: the scale-down fails.
    server.inject_fault(Fault::new(format!("{MD_PATH}/md/scale"), 500).verb(Verb::Patch));
    let before = server.requests().len();
    let error = md.delete_nodes(std::slice::from_ref(&nodes[0])).await.unwrap_err();
    assert!(error.to_string().contains("scaling MachineDeployment capi/md"), "{error}");
    let writes: Vec<(String, u16)> = writes_since(&server, before).into_iter().map(|r| (r.path, r.status)).collect();
    let machine_path = "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machines/md-1".to_string();
    assert_eq!(writes, [(machine_path.clone(), 200), (format!("{MD_PATH}/md/scale"), 500), (machine_path, 200)]);
    let machine = server.get_value(V1BETA1, "Machine", Some(NS), "md-1").unwrap();
    let annotations = machine.pointer("/metadata/annotations").cloned().unwrap_or(json!({}));
    assert!(annotations.get(DELETE_MACHINE).is_none(), "the mark is gone again: {machine}");
    assert_eq!(replicas(&server, "MachineDeployment", "md"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_pending_machines_are_instances_the_core_backs_off_and_removes() {
    let server = server().await;
    let sized = sized(0, 5);
    seed_running(&server, "md", 1, &pairs(&sized));
    server.modify_value(V1BETA1, "MachineDeployment", Some(NS), "md", |md| md["spec"]["replicas"] = json!(3));
    server.seed_value(machine(NS, "md-pending", "c1", "md-set", Some("md"), None)).unwrap();
    let mut failed = machine(NS, "md-failed", "c1", "md-set", Some("md"), None);
    failed["status"] = json!({"phase": "Failed", "failureReason": "CreateError", "failureMessage": "quota exceeded"});
    server.seed_value(failed).unwrap();
    let provider = provider(&server, &[]).await;
    let md = group(provider.as_ref(), "MachineDeployment/capi/md").await;
    let instances = md.nodes().await.unwrap();
    type Seen<'a> = (&'a str, InstanceState, Option<(&'a str, InstanceErrorClass)>);
    let view: Vec<Seen> = instances
        .iter()
        .map(|i| {
            let status = i.status.as_ref().unwrap();
            (i.id.as_str(), status.state, status.error.as_ref().map(|e| (e.code.as_str(), e.class)))
        })
        .collect();
    assert_eq!(
        view,
        [
            ("docker:///md-1-node", InstanceState::Running, None),
            (
                "failed-machine-capi_md-failed",
                InstanceState::Creating,
                Some(("ProvisioningFailed", InstanceErrorClass::Other))
            ),
            ("pending-machine-capi_md-pending", InstanceState::Creating, None),
        ]
    );

    // The core removes such instances with DeleteNodes on a node named after the instance.
    let fake = Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("failed-machine-capi_md-failed".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::NodeSpec {
            provider_id: Some("failed-machine-capi_md-failed".into()),
            ..Default::default()
        }),
        status: None,
    };
    md.delete_nodes(&[fake]).await.unwrap();
    let failed = server.get_value(V1BETA1, "Machine", Some(NS), "md-failed").unwrap();
    assert!(failed.pointer("/metadata/annotations").and_then(|a| a.get(DELETE_MACHINE)).is_some());
    assert_eq!(replicas(&server, "MachineDeployment", "md"), 2);

    // Only replicas no running Machine backs can go without a DeleteNodes.
    provider.refresh().await.unwrap();
    let error = md.decrease_target_size(-2).await.unwrap_err();
    assert!(error.to_string().contains("attempt to delete existing nodes"), "{error}");
    md.decrease_target_size(-1).await.unwrap();
    assert_eq!(replicas(&server, "MachineDeployment", "md"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_machine_deployment_gets_one_warning_event_and_the_others_still_work() {
    let server = server().await;
    let good = sized(0, 3);
    seed_running(&server, "good", 1, &pairs(&good));
    server.seed_value(machine_deployment(NS, "bad", "c1", 1, &[(MIN, "1"), (MAX, "lots")])).unwrap();
    let provider = provider(&server, &[]).await;
    assert_eq!(group_ids(provider.as_ref()).await, ["MachineDeployment/capi/good"]);
    provider.refresh().await.unwrap();

    let events: Vec<Event> = server.list::<Event>();
    assert_eq!(events.len(), 1, "one Event, not one per loop: {events:#?}");
    let event = &events[0];
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.reason.as_deref(), Some(INVALID_REASON));
    assert_eq!(event.involved_object.kind.as_deref(), Some("MachineDeployment"));
    assert_eq!(event.involved_object.name.as_deref(), Some("bad"));
    assert_eq!(event.involved_object.api_version.as_deref(), Some(V1BETA1));
    assert_eq!(event.metadata.namespace.as_deref(), Some(NS));
    let message = event.message.as_deref().unwrap_or_default();
    assert_eq!(
        message,
        format!(
            "MachineDeployment capi/bad is not autoscaled: metadata.annotations[\"{MAX}\"]: \"lots\" is not an integer"
        )
    );

    // Fixed: it becomes a group.
    server.modify_value(V1BETA1, "MachineDeployment", Some(NS), "bad", |md| {
        md["metadata"]["annotations"][MAX] = json!("4");
    });
    provider.refresh().await.unwrap();
    assert_eq!(group_ids(provider.as_ref()).await, ["MachineDeployment/capi/bad", "MachineDeployment/capi/good"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_from_zero_uses_the_annotations_over_the_infrastructure_templates_capacity() {
    let server = server().await;
    let gpu = json!({"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"});
    server.seed_value(docker_template(NS, "gpu-template", Some(gpu))).unwrap();
    server.seed_value(machine_deployment(NS, "gpu", "c1", 0, &[(MIN, "0"), (MAX, "2"), (CPU, "16")])).unwrap();
    server.seed_value(docker_template(NS, "bare-template", None)).unwrap();
    server.seed_value(machine_deployment(NS, "bare", "c1", 0, &[(MIN, "0"), (MAX, "2")])).unwrap();
    let options_key = "cluster.x-k8s.io/autoscaling-options-scaledownunneededtime";
    let annotated = sized(0, 2);
    let mut notes = pairs(&annotated);
    notes.push((options_key, "1m"));
    notes.push(("capacity.cluster-autoscaler.kubernetes.io/taints", "dedicated=ml:NoSchedule"));
    server.seed_value(machine_deployment(NS, "annotated", "c1", 0, &notes)).unwrap();
    let provider = provider(&server, &[]).await;
    // `bare` has no CPU or memory anywhere: it could never grow, so it is no group (upstream).
    assert_eq!(group_ids(provider.as_ref()).await, ["MachineDeployment/capi/annotated", "MachineDeployment/capi/gpu"]);

    let gpu = group(provider.as_ref(), "MachineDeployment/capi/gpu").await;
    let template = gpu.template_node_info().await.unwrap().node;
    let capacity = template.status.as_ref().unwrap().capacity.clone().unwrap();
    let q = |s: &str| Quantity(s.to_string());
    assert_eq!(capacity["cpu"], q("16"), "the annotation wins");
    assert_eq!(capacity["memory"], q("32Gi"), "from the template's status.capacity");
    assert_eq!(capacity["nvidia.com/gpu"], q("1"));
    assert_eq!(capacity["pods"], q("110"), "upstream's default");
    let labels = template.metadata.labels.unwrap();
    assert_eq!((labels["kubernetes.io/arch"].as_str(), labels["kubernetes.io/os"].as_str()), ("amd64", "linux"));
    assert!(provider.node_gpu_config(&template_node_of(&gpu).await).is_some(), "a GPU template");

    let annotated = group(provider.as_ref(), "MachineDeployment/capi/annotated").await;
    let template = annotated.template_node_info().await.unwrap().node;
    assert_eq!(template.spec.unwrap().taints.unwrap()[0].key, "dedicated");
    let defaults = NodeGroupAutoscalingOptions::default();
    let options = annotated.get_options(&defaults).await.unwrap().unwrap();
    assert_eq!(options.scale_down_unneeded_time, std::time::Duration::from_secs(60));
    assert_eq!(options.max_node_provision_time, defaults.max_node_provision_time);
    assert_eq!(gpu.get_options(&defaults).await.unwrap(), None, "no option annotations: the defaults");
}

async fn template_node_of(group: &Arc<dyn NodeGroup>) -> Node {
    group.template_node_info().await.unwrap().node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1beta2_infrastructure_references_name_only_the_group() {
    let server = FakeApiServer::builder().cluster_api(true).cluster_api_v1beta2(true).start().await;
    server
        .seed_value(docker_template(NS, "md-template", Some(json!({"cpu": "2", "memory": "8Gi", "pods": "64"}))))
        .unwrap();
    let mut md = machine_deployment(NS, "md", "c1", 0, &[(MIN, "0"), (MAX, "2")]);
    md["apiVersion"] = json!(V1BETA2);
    md["spec"]["template"]["spec"]["infrastructureRef"] =
        json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "md-template"});
    server.seed_value(md).unwrap();
    let provider = provider(&server, &[]).await;
    let md = group(provider.as_ref(), "MachineDeployment/capi/md").await;
    let capacity = md.template_node_info().await.unwrap().node.status.unwrap().capacity.unwrap();
    assert_eq!(capacity["pods"], Quantity("64".into()), "the template's pods");
    md.increase_size(1).await.unwrap();
    let object = server.get_value(V1BETA2, "MachineDeployment", Some(NS), "md").unwrap();
    assert_eq!(object.pointer("/spec/replicas"), Some(&json!(1)), "v1beta2, the preferred version, is scaled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_pool_node_without_a_machine_lowers_the_replicas_only() {
    let server = server().await;
    let sized = sized(0, 3);
    server
        .seed_value(json!({
            "apiVersion": V1BETA1, "kind": "MachinePool",
            "metadata": {"name": "pool", "namespace": NS, "annotations": annotations(&pairs(&sized))},
            "spec": {"clusterName": "c1", "replicas": 2, "providerIDList": [provider_id("pool-0"), provider_id("pool-1")]},
        }))
        .unwrap();
    let provider = provider(&server, &[]).await;
    let node = kubelet_node("pool-1", "none", NS, "4", "16Gi");
    let pool = provider.node_group_for_node(&node).await.unwrap().expect("the pool's node");
    assert_eq!(pool.id(), "MachinePool/capi/pool");
    let before = server.requests().len();
    pool.delete_nodes(&[node]).await.unwrap();
    let writes: Vec<String> = writes_since(&server, before).into_iter().map(|r| r.path).collect();
    assert_eq!(writes, ["/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machinepools/pool/scale"]);
    assert_eq!(replicas(&server, "MachinePool", "pool"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_reads_the_management_cluster_and_writes_nothing() {
    let server = server().await;
    let sized = sized(1, 3);
    let nodes = seed_running(&server, "md", 2, &pairs(&sized));
    server.seed_value(machine_deployment(NS, "bad", "c1", 1, &[(MAX, "-1")])).unwrap();
    let dir = tempfile::Builder::new().prefix("capi-plan-").tempdir().unwrap();
    let kubeconfig: PathBuf = dir.path().join("management.kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig_yaml()).unwrap();

    // plan has no live workload client: without --cloud-config there is no management cluster.
    let without = ProviderContext::new("clusterapi", Purpose::Plan);
    let error = cloudprovider_clusterapi::build(without).await.err().expect("refused");
    assert!(error.to_string().contains("--cloud-config"), "{error}");
    assert_eq!(error.exit_code(), 2);

    let mut context = ProviderContext::new("clusterapi", Purpose::Plan);
    context.cloud_config = Some(kubeconfig);
    let provider = cloudprovider_clusterapi::build(context).await.unwrap_or_else(|e| panic!("{e}"));
    provider.refresh().await.unwrap();
    let md = group(provider.as_ref(), "MachineDeployment/capi/md").await;
    assert_eq!(md.target_size().await.unwrap(), 2);
    for result in [
        md.increase_size(1).await,
        md.delete_nodes(std::slice::from_ref(&nodes[0])).await,
        md.decrease_target_size(-1).await,
    ] {
        assert!(
            matches!(result, Err(CloudProviderError::InvalidRequest(ref m)) if m.contains("read-only")),
            "{result:?}"
        );
    }
    // Seeding writes to the store directly: every request recorded is the provider's.
    assert_eq!(writes_since(&server, 0), [], "plan only reads");
    assert!(server.list::<Event>().is_empty(), "plan records no Event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_check_connects_to_nothing_and_reads_the_kubeconfig() {
    let dir = tempfile::Builder::new().prefix("capi-check-").tempdir().unwrap();
    let mut context = ProviderContext::new("clusterapi", Purpose::Check);
    context.cloud_config = Some(dir.path().join("absent.kubeconfig"));
    let error = cloudprovider_clusterapi::build(context.clone()).await.err().expect("an unreadable kubeconfig");
    assert!(error.to_string().starts_with("--cloud-config "), "{error}");
    assert_eq!(error.exit_code(), 2);
    context.cloud_config = None;
    context.node_group_auto_discovery = vec!["clusterapi:namespace=a,bad".into()];
    let error = cloudprovider_clusterapi::build(context.clone()).await.err().expect("a bad spec");
    assert!(error.to_string().contains("--node-group-auto-discovery"), "{error}");
    context.node_group_auto_discovery = vec!["clusterapi:namespace=a".into()];
    assert!(cloudprovider_clusterapi::build(context).await.is_ok(), "no server needed for a check");
}
