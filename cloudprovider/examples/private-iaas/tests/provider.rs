//! The provider against the stand-in IaaS API serving on a real socket: node groups and
//! templates from flavors, scale-up and its VMs' lives, deletions, decreases, refusals, failed
//! VMs, API faults, pricing.

mod support;

use std::sync::Arc;

use cloudprovider::{
    BuildError, CloudProvider, CloudProviderError, InstanceErrorClass, InstanceState, NodeGroup, ProviderContext,
    Purpose,
};
use k8s_openapi::api::core::v1::{Container, Node, NodeSpec, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use private_iaas::iaas::{IaasConfig, RunningIaas};
use serde_json::json;
use support::{arm, requests, settle, temp_dir, vms, write};

/// VMs build until the test settles them (`settle`), never by the clock; deletions are immediate.
const IAAS: &str = "buildSeconds: null
deleteSeconds: 0
flavors:
- {name: m1.xlarge, vcpus: 8, memoryMiB: 16384, pricePerHour: 0.34}
- {name: g1.xlarge, vcpus: 4, memoryMiB: 16384, gpus: 1, gpuType: Tesla-T4, pricePerHour: 0.526}
images: [ubuntu]
pools:
- {name: compute, quota: 4}
- {name: gpu, quota: 2}
";

/// `compute` may grow past its quota (6 > 4), `gpu` keeps one VM.
const CLOUD_CONFIG: &str = "endpoint: ENDPOINT
timeout: TIMEOUT
nodeGroups:
- pool: compute
  maxSize: 6
  flavor: m1.xlarge
  image: ubuntu
  labels: {pool: compute}
- pool: gpu
  minSize: 1
  maxSize: 2
  flavor: g1.xlarge
  image: ubuntu
  labels: {pool: gpu}
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
";

const LISTINGS: &str = "GET /v1/pools/{pool}/vms";
const CREATES: &str = "POST /v1/pools/{pool}/vms";

struct Setup {
    iaas: RunningIaas,
    provider: Arc<dyn CloudProvider>,
}

impl Setup {
    async fn new(test: &str) -> Setup {
        Setup::with_timeout(test, "2s").await
    }

    async fn with_timeout(test: &str, timeout: &str) -> Setup {
        let config = IaasConfig::parse(IAAS, "iaas.yaml").expect("the test IaaS config");
        let iaas = RunningIaas::start(config).await.expect("starting the IaaS API");
        let provider = build(test, &iaas.url, timeout, Purpose::Controller).await.expect("building the provider");
        Setup { iaas, provider }
    }

    async fn group(&self, id: &str) -> Arc<dyn NodeGroup> {
        let groups = self.provider.node_groups().await;
        groups.into_iter().find(|g| g.id() == id).expect("the node group")
    }

    fn url(&self) -> &str {
        &self.iaas.url
    }
}

async fn build(
    test: &str,
    endpoint: &str,
    timeout: &str,
    purpose: Purpose,
) -> Result<Arc<dyn CloudProvider>, BuildError> {
    // Removed when `build` returns: the provider reads its config when built.
    let dir = temp_dir(test);
    let text = CLOUD_CONFIG.replace("ENDPOINT", endpoint).replace("TIMEOUT", timeout);
    let mut context = ProviderContext::new("private-iaas", purpose);
    context.cloud_config = Some(write(dir.path(), "cloud-config.yaml", &text));
    private_iaas::build(context).await
}

fn node(name: &str, provider_id: &str) -> Node {
    Node {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: Some(NodeSpec { provider_id: Some(provider_id.into()), ..Default::default() }),
        status: None,
    }
}

/// The Node the autoscaler makes for an instance without one: name and providerID only.
fn fake_node(instance_id: &str) -> Node {
    node(instance_id, instance_id)
}

async fn states(group: &dyn NodeGroup) -> Vec<InstanceState> {
    group.nodes().await.unwrap().iter().map(|i| i.status.as_ref().unwrap().state).collect()
}

fn cloud_error(error: CloudProviderError) -> (Option<String>, String) {
    match error {
        CloudProviderError::Cloud { code, message } => (code, message),
        other => panic!("expected a Cloud error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_groups_are_the_pools_and_templates_come_from_the_flavors() {
    let setup = Setup::new("groups").await;
    let groups = setup.provider.node_groups().await;
    let bounds: Vec<(&str, usize, usize)> = groups.iter().map(|g| (g.id(), g.min_size(), g.max_size())).collect();
    assert_eq!(bounds, [("compute", 0, 6), ("gpu", 1, 2)]);
    assert_eq!(setup.provider.available_gpu_types(), ["Tesla-T4"]);

    let compute = setup.group("compute").await.template_node_info().await.unwrap().node;
    let labels = compute.metadata.labels.clone().unwrap();
    assert_eq!(labels["node.kubernetes.io/instance-type"], "m1.xlarge");
    assert_eq!(labels["pool"], "compute");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    let allocatable = compute.status.as_ref().unwrap().allocatable.clone().unwrap();
    assert_eq!(allocatable["cpu"], Quantity("8".into()));
    assert_eq!(allocatable["memory"], Quantity("16384Mi".into()));
    assert_eq!(allocatable["pods"], Quantity("110".into()));
    assert!(!allocatable.contains_key("nvidia.com/gpu"));
    assert_eq!(setup.provider.node_gpu_config(&compute), None);

    let gpu = setup.group("gpu").await.template_node_info().await.unwrap().node;
    assert_eq!(gpu.metadata.labels.as_ref().unwrap()["nvidia.com/gpu.product"], "Tesla-T4");
    assert_eq!(gpu.status.as_ref().unwrap().capacity.as_ref().unwrap()["nvidia.com/gpu"], Quantity("1".into()));
    assert_eq!(gpu.spec.as_ref().unwrap().taints.as_ref().unwrap()[0].key, "nvidia.com/gpu");
    assert_eq!(setup.provider.node_gpu_config(&gpu).unwrap().gpu_type, "Tesla-T4");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increase_creates_vms_that_build_then_run() {
    let setup = Setup::new("increase").await;
    setup.provider.refresh().await.unwrap();
    let compute = setup.group("compute").await;
    assert_eq!(compute.target_size().await.unwrap(), 0);

    compute.increase_size(2).await.unwrap();
    // The cache shows the new VMs at once, before the next refresh.
    assert_eq!(compute.target_size().await.unwrap(), 2);
    assert_eq!(states(compute.as_ref()).await, [InstanceState::Creating, InstanceState::Creating]);
    let listed = vms(setup.url(), "compute");
    assert_eq!(listed.len(), 2);
    assert!(
        listed.iter().all(|vm| vm["state"] == "building" && vm["flavor"] == "m1.xlarge" && vm["image"] == "ubuntu")
    );

    settle(setup.url());
    setup.provider.refresh().await.unwrap();
    assert_eq!(states(compute.as_ref()).await, [InstanceState::Running, InstanceState::Running]);
    let instance = &compute.nodes().await.unwrap()[0];
    let vm_id = listed[0]["id"].as_str().unwrap();
    assert_eq!(instance.id, format!("private-iaas://compute/{vm_id}"));

    // Nodes are matched by providerID; others are not ours.
    let ours = node(listed[0]["name"].as_str().unwrap(), &instance.id);
    let group = setup.provider.node_group_for_node(&ours).await.unwrap().expect("our node's group");
    assert_eq!(group.id(), "compute");
    assert!(setup.provider.has_instance(&ours).await.unwrap());
    for other in ["static://compute/compute-01", "private-iaas://elsewhere/vm-000001", ""] {
        assert!(setup.provider.node_group_for_node(&node("n", other)).await.unwrap().is_none(), "{other}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_lists_each_pool_once_and_everything_else_reads_the_cache() {
    let setup = Setup::new("cache").await;
    setup.provider.refresh().await.unwrap();
    assert_eq!(requests(setup.url(), LISTINGS), 2);
    for group in setup.provider.node_groups().await {
        for _ in 0..3 {
            group.target_size().await.unwrap();
            group.nodes().await.unwrap();
            group.template_node_info().await.unwrap();
        }
    }
    setup.provider.node_group_for_node(&node("n", "private-iaas://compute/vm-000009")).await.unwrap();
    assert_eq!(requests(setup.url(), LISTINGS), 2);
    setup.provider.refresh().await.unwrap();
    assert_eq!(requests(setup.url(), LISTINGS), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increase_refuses_zero_and_past_max_without_calling_the_api() {
    let setup = Setup::new("max").await;
    setup.provider.refresh().await.unwrap();
    let gpu = setup.group("gpu").await;
    assert!(matches!(gpu.increase_size(0).await, Err(CloudProviderError::InvalidRequest(_))));
    let Err(CloudProviderError::InvalidRequest(message)) = gpu.increase_size(3).await else { panic!("past max") };
    assert_eq!(message, "size increase too large - desired:3 max:2");
    gpu.increase_size(2).await.unwrap();
    assert!(matches!(gpu.increase_size(1).await, Err(CloudProviderError::InvalidRequest(_))));
    assert_eq!(requests(setup.url(), CREATES), 2);
    assert_eq!(gpu.target_size().await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_nodes_deletes_their_vms_down_to_min_only() {
    let setup = Setup::new("delete").await;
    setup.provider.refresh().await.unwrap();
    let gpu = setup.group("gpu").await;
    gpu.increase_size(2).await.unwrap();
    settle(setup.url());
    setup.provider.refresh().await.unwrap();
    let ids: Vec<String> = gpu.nodes().await.unwrap().into_iter().map(|i| i.id).collect();
    let nodes: Vec<Node> = ids.iter().map(|id| node(id.rsplit('/').next().unwrap(), id)).collect();

    // A node of another group, or of no group, is refused, and nothing is deleted.
    let stranger = node("compute-x", "private-iaas://compute/vm-000099");
    let Err(CloudProviderError::InvalidRequest(message)) = gpu.delete_nodes(&[nodes[0].clone(), stranger]).await else {
        panic!("a node of another group")
    };
    assert!(message.contains("does not belong to node group gpu"), "{message}");
    // Both at once would go below min 1.
    let Err(CloudProviderError::InvalidRequest(message)) = gpu.delete_nodes(&nodes).await else { panic!("below min") };
    assert!(message.starts_with("min size reached"), "{message}");
    assert_eq!(vms(setup.url(), "gpu").len(), 2);

    gpu.delete_nodes(&nodes[..1]).await.unwrap();
    assert_eq!(gpu.target_size().await.unwrap(), 1);
    assert_eq!(states(gpu.as_ref()).await, [InstanceState::Deleting, InstanceState::Running]);
    // Deleting it again changes nothing and asks nothing: it is being deleted already.
    let deletes = requests(setup.url(), "DELETE /v1/pools/{pool}/vms/{id}");
    gpu.delete_nodes(&nodes[..1]).await.unwrap();
    assert_eq!(requests(setup.url(), "DELETE /v1/pools/{pool}/vms/{id}"), deletes);
    // Once gone (deleteSeconds 0), it is skipped too.
    setup.provider.refresh().await.unwrap();
    assert_eq!(gpu.nodes().await.unwrap().len(), 1);
    assert!(!setup.provider.has_instance(&nodes[0]).await.unwrap());
    gpu.delete_nodes(&nodes[..1]).await.unwrap();
    assert_eq!(vms(setup.url(), "gpu").len(), 1);
    // The last one is the min.
    assert!(matches!(gpu.delete_nodes(&nodes[1..]).await, Err(CloudProviderError::InvalidRequest(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decrease_target_size_withdraws_only_building_vms() {
    let setup = Setup::new("decrease").await;
    setup.provider.refresh().await.unwrap();
    let compute = setup.group("compute").await;
    compute.increase_size(1).await.unwrap();
    settle(setup.url());
    setup.provider.refresh().await.unwrap();
    arm(setup.url(), json!({"pool": "compute", "hangBuilds": true}));
    compute.increase_size(2).await.unwrap();
    setup.provider.refresh().await.unwrap();
    assert_eq!(compute.target_size().await.unwrap(), 3);

    assert!(matches!(compute.decrease_target_size(0).await, Err(CloudProviderError::InvalidRequest(_))));
    let Err(CloudProviderError::InvalidRequest(message)) = compute.decrease_target_size(-3).await else {
        panic!("only two are building")
    };
    assert_eq!(message, "attempt to delete existing nodes targetSize:3 delta:-3 existingNodes: 1");
    assert_eq!(requests(setup.url(), "DELETE /v1/pools/{pool}/vms/{id}"), 0);

    compute.decrease_target_size(-2).await.unwrap();
    assert_eq!(compute.target_size().await.unwrap(), 1);
    let listed = vms(setup.url(), "compute");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["state"], "active");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decrease_target_size_never_deletes_a_vm_that_became_active() {
    let setup = Setup::new("decrease-active").await;
    setup.provider.refresh().await.unwrap();
    let compute = setup.group("compute").await;
    compute.increase_size(1).await.unwrap();
    // The cache says building; the VM is active by now.
    settle(setup.url());
    let Err(CloudProviderError::InvalidRequest(message)) = compute.decrease_target_size(-1).await else {
        panic!("the VM is active")
    };
    assert!(message.contains("nothing deleted"), "{message}");
    assert_eq!(vms(setup.url(), "compute")[0]["state"], "active");
    assert_eq!(states(compute.as_ref()).await, [InstanceState::Running]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_vms_are_instances_with_errors_deletable_through_fake_nodes() {
    let setup = Setup::new("errors").await;
    setup.provider.refresh().await.unwrap();
    let compute = setup.group("compute").await;
    arm(setup.url(), json!({"pool": "compute", "failNextCreates": 1}));
    // Quota 4: the first create finds no host (which holds no quota), four build, the sixth
    // exceeds the quota.
    compute.increase_size(6).await.unwrap();
    setup.provider.refresh().await.unwrap();
    assert_eq!(compute.target_size().await.unwrap(), 6);
    let instances = compute.nodes().await.unwrap();
    let errors: Vec<(String, InstanceErrorClass)> = instances
        .iter()
        .filter_map(|i| i.status.as_ref().unwrap().error.as_ref().map(|e| (e.code.clone(), e.class)))
        .collect();
    assert_eq!(
        errors,
        [
            ("NoValidHost".to_string(), InstanceErrorClass::OutOfResources),
            ("QuotaExceeded".to_string(), InstanceErrorClass::OutOfResources),
        ]
    );
    let failed: Vec<&str> = instances
        .iter()
        .filter(|i| i.status.as_ref().unwrap().error.is_some())
        .inspect(|i| assert_eq!(i.status.as_ref().unwrap().state, InstanceState::Creating))
        .map(|i| i.id.as_str())
        .collect();

    // What the autoscaler does next: DeleteNodes with a fake node per failed instance.
    for id in &failed {
        compute.delete_nodes(&[fake_node(id)]).await.unwrap();
    }
    assert_eq!(compute.target_size().await.unwrap(), 4);
    setup.provider.refresh().await.unwrap();
    let left = vms(setup.url(), "compute");
    assert_eq!(left.len(), 4);
    assert!(left.iter().all(|vm| vm["state"] != "error"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_api_gives_clear_cloud_errors_and_nothing_half_done() {
    let setup = Setup::new("faults").await;
    setup.provider.refresh().await.unwrap();
    let compute = setup.group("compute").await;
    compute.increase_size(1).await.unwrap();

    // A refresh that fails keeps the last view.
    arm(setup.url(), json!({"serverErrors": 1}));
    let (code, message) = cloud_error(setup.provider.refresh().await.unwrap_err());
    assert_eq!(code.as_deref(), Some("InternalError"));
    let url = format!("{}/v1/pools/", setup.url());
    assert!(message.starts_with(&format!("GET {url}")), "{message}");
    assert!(message.contains("500 Internal Server Error"), "{message}");
    assert_eq!(compute.target_size().await.unwrap(), 1);

    // The second create of three fails: the first is deleted again.
    arm(setup.url(), json!({"serverErrors": 1, "skipRequests": 1}));
    let (_, message) = cloud_error(compute.increase_size(3).await.unwrap_err());
    assert!(message.starts_with(&format!("POST {}/v1/pools/compute/vms: 500", setup.url())), "{message}");
    assert!(message.ends_with("no VM of this scale-up of compute is left"), "{message}");
    setup.provider.refresh().await.unwrap();
    assert_eq!(compute.target_size().await.unwrap(), 1);
    assert_eq!(vms(setup.url(), "compute").len(), 1);

    // A delete that fails deletes nothing.
    let id = compute.nodes().await.unwrap()[0].id.clone();
    arm(setup.url(), json!({"serverErrors": 1}));
    cloud_error(compute.delete_nodes(&[fake_node(&id)]).await.unwrap_err());
    assert_ne!(vms(setup.url(), "compute")[0]["state"], "deleting");
    assert_eq!(compute.target_size().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_that_times_out_is_found_by_name_and_deleted() {
    // A timeout that a loaded machine's loopback requests keep well within, and answers that
    // come much later than it: the outcome does not depend on how busy the machine is.
    let setup = Setup::with_timeout("timeout", "1s").await;
    setup.provider.refresh().await.unwrap();
    let compute = setup.group("compute").await;
    // The second create happens, but its answer comes after the provider gave up.
    arm(setup.url(), json!({"slowRequests": 1, "slowMillis": 60_000, "skipRequests": 1}));
    let (code, message) = cloud_error(compute.increase_size(2).await.unwrap_err());
    assert_eq!(code.as_deref(), Some("Timeout"));
    assert!(message.starts_with(&format!("POST {}/v1/pools/compute/vms: no answer within 1s", setup.url())));
    assert!(message.ends_with("no VM of this scale-up of compute is left"), "{message}");
    assert_eq!(vms(setup.url(), "compute").len(), 0);
    assert_eq!(compute.target_size().await.unwrap(), 0);

    // A slow listing is a timeout too, and the view stays.
    arm(setup.url(), json!({"slowRequests": 1, "slowMillis": 60_000}));
    let (code, _) = cloud_error(setup.provider.refresh().await.unwrap_err());
    assert_eq!(code.as_deref(), Some("Timeout"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_api_is_a_clear_error_at_build_and_at_run_time() {
    let setup = Setup::new("unreachable").await;
    setup.provider.refresh().await.unwrap();
    let compute = setup.group("compute").await;
    let url = setup.iaas.url.clone();
    setup.iaas.stop().await;

    let (code, message) = cloud_error(setup.provider.refresh().await.unwrap_err());
    assert_eq!(code.as_deref(), Some("Unreachable"));
    assert!(message.starts_with(&format!("GET {url}/v1/pools/")), "{message}");
    assert!(message.to_lowercase().contains("connection refused"), "{message}");
    let (_, message) = cloud_error(compute.increase_size(1).await.unwrap_err());
    assert!(message.contains("no VM of this scale-up of compute is left"), "{message}");
    assert_eq!(compute.target_size().await.unwrap(), 0);

    let Err(BuildError::Unavailable(message)) = build("unreachable-build", &url, "1s", Purpose::Controller).await
    else {
        panic!("building against an unreachable IaaS")
    };
    assert!(message.starts_with("private-iaas: GET "), "{message}");
    // A configuration check does not connect.
    let check = build("unreachable-check", &url, "1s", Purpose::Check).await.expect("a check without I/O");
    assert_eq!(check.node_groups().await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_are_priced_by_flavor_and_pods_by_unit_prices_from_the_flavors() {
    let setup = Setup::new("pricing").await;
    let pricing = setup.provider.pricing().unwrap();
    let start = Timestamp::UNIX_EPOCH;
    let end = start + SignedDuration::from_hours(2);
    let ours = node("compute-abc", "private-iaas://compute/vm-000001");
    assert!((pricing.node_price(&ours, start, end).unwrap() - 0.68).abs() < 1e-9);
    let template = setup.group("gpu").await.template_node_info().await.unwrap().node;
    assert!((pricing.node_price(&template, start, end).unwrap() - 1.052).abs() < 1e-9);

    // A pod asking for the whole non-GPU flavor costs about that flavor.
    let requests = [("cpu", "8"), ("memory", "16Gi")].map(|(k, v)| (k.to_string(), Quantity(v.to_string())));
    let pod = Pod {
        metadata: ObjectMeta { name: Some("p".into()), namespace: Some("default".into()), ..Default::default() },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements { requests: Some(requests.into()), ..Default::default() }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    assert!((pricing.pod_price(&pod, start, end).unwrap() - 0.68).abs() < 1e-9);
    assert!(pricing.node_price(&ours, end, start).is_err());
}
