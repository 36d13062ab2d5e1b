//! The deployment artefacts in `deploy/`: the Kubernetes manifests (`deploy/kubernetes/`), the
//! Helm chart (`deploy/helm/cluster-autoscaler/`) and the image (`deploy/Dockerfile`).
//!
//! Manifests are read as the API server would read them: every YAML document is decoded into its
//! k8s-openapi type and must re-serialize to exactly what was written (k8s-openapi ignores
//! unknown fields, so a misspelled field would otherwise pass unnoticed). The container's
//! arguments are parsed with the binary's own flag definitions. The RBAC rules are checked in
//! `deploy_manifests/rbac.rs` (against a permission table and against the requests the
//! controller really makes, recorded by `deploy_manifests/controller_run.rs`), the chart in
//! `deploy_manifests/helm.rs`.

#[path = "deploy_manifests/aws.rs"]
mod aws;
#[path = "deploy_manifests/clusterapi.rs"]
mod clusterapi;
#[path = "deploy_manifests/controller_run.rs"]
mod controller_run;
#[path = "deploy_manifests/externalgrpc.rs"]
mod externalgrpc;
#[path = "deploy_manifests/helm.rs"]
mod helm;
#[path = "deploy_manifests/rbac.rs"]
mod rbac;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use autoscaler::config::AutoscalingOptions;
use autoscaler::leader::LeaseConfig;
use autoscaler::run::RunArgs;
use clap::Parser;
use cloudprovider_static::{StaticCloudProvider, StaticConfig};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The image the manifests deploy (`deploy/kubernetes/deployment.yaml`, the chart's default).
const IMAGE_REPOSITORY: &str = "ghcr.io/rust-cluster-autoscaler/cluster-autoscaler";
/// The distroless `nonroot` user the image runs as.
const NON_ROOT_UID: i64 = 65532;
/// Where the Deployment mounts the cloud-config ConfigMap.
const CLOUD_CONFIG_MOUNT: &str = "/etc/cluster-autoscaler";

// ---------------------------------------------------------------------------------------------
// Reading files.

fn repo_root() -> PathBuf {
    tests::package_dir().parent().expect("the tests crate lives in the workspace").to_path_buf()
}

fn read(relative: &str) -> String {
    let path = repo_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every YAML document of a file, as JSON values (empty documents skipped).
fn yaml_documents(relative: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(&read(relative)).unwrap_or_else(|e| panic!("{relative}: invalid YAML: {e}"))
}

fn yaml_value(text: &str, what: &str) -> Value {
    serde_saphyr::from_str::<Value>(text).unwrap_or_else(|e| panic!("{what}: invalid YAML: {e}"))
}

/// The first place where `written` and `reserialized` differ: a key the type does not know (it
/// disappeared), a key the type added (a required field left out), or a changed value.
fn first_difference(path: &str, written: &Value, reserialized: &Value) -> Option<String> {
    match (written, reserialized) {
        (Value::Object(w), Value::Object(r)) => {
            for (key, value) in w {
                let here = format!("{path}.{key}");
                match r.get(key) {
                    None if value.is_null() => {}
                    None => {
                        return Some(format!("{here}: not a field of the Kubernetes type (misspelled or misplaced?)"));
                    }
                    Some(other) => {
                        if let Some(difference) = first_difference(&here, value, other) {
                            return Some(difference);
                        }
                    }
                }
            }
            r.keys().find(|k| !w.contains_key(*k)).map(|k| format!("{path}.{k}: added on re-serialization"))
        }
        (Value::Array(w), Value::Array(r)) if w.len() == r.len() => {
            w.iter().zip(r).enumerate().find_map(|(i, (a, b))| first_difference(&format!("{path}[{i}]"), a, b))
        }
        _ if written == reserialized => None,
        _ => Some(format!("{path}: written {written} but read as {reserialized}")),
    }
}

/// Decodes `value` as `K` and fails on anything the type would silently drop or change.
fn strict<K: Serialize + DeserializeOwned>(value: &Value, what: &str) -> K {
    let typed: K = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let reserialized = serde_json::to_value(&typed).expect("Kubernetes types serialize");
    if let Some(difference) = first_difference("", value, &reserialized) {
        panic!("{what}: {difference}");
    }
    typed
}

// ---------------------------------------------------------------------------------------------
// The manifests of deploy/kubernetes.

const MANIFEST_DIR: &str = "deploy/kubernetes";

/// Every object of `deploy/kubernetes/`, typed.
#[derive(Default)]
struct Manifests {
    service_accounts: Vec<ServiceAccount>,
    cluster_roles: Vec<ClusterRole>,
    cluster_role_bindings: Vec<ClusterRoleBinding>,
    roles: Vec<Role>,
    role_bindings: Vec<RoleBinding>,
    deployments: Vec<Deployment>,
    config_maps: Vec<ConfigMap>,
    pod_disruption_budgets: Vec<PodDisruptionBudget>,
    services: Vec<Service>,
}

/// The manifest files kustomization.yaml lists, in its order.
fn kustomization_resources() -> Vec<String> {
    let kustomization = yaml_value(&read(&format!("{MANIFEST_DIR}/kustomization.yaml")), "kustomization.yaml");
    kustomization["resources"]
        .as_array()
        .expect("kustomization.yaml lists resources")
        .iter()
        .map(|r| r.as_str().expect("a resource is a file name").to_string())
        .collect()
}

fn load_manifests() -> Manifests {
    let mut manifests = Manifests::default();
    for file in kustomization_resources() {
        let relative = format!("{MANIFEST_DIR}/{file}");
        for (index, document) in yaml_documents(&relative).iter().enumerate() {
            let kind = document["kind"].as_str().unwrap_or_default().to_string();
            let what = format!("{relative} document {index} ({kind})");
            match kind.as_str() {
                "ServiceAccount" => manifests.service_accounts.push(strict(document, &what)),
                "ClusterRole" => manifests.cluster_roles.push(strict(document, &what)),
                "ClusterRoleBinding" => manifests.cluster_role_bindings.push(strict(document, &what)),
                "Role" => manifests.roles.push(strict(document, &what)),
                "RoleBinding" => manifests.role_bindings.push(strict(document, &what)),
                "Deployment" => manifests.deployments.push(strict(document, &what)),
                "ConfigMap" => manifests.config_maps.push(strict(document, &what)),
                "PodDisruptionBudget" => manifests.pod_disruption_budgets.push(strict(document, &what)),
                "Service" => manifests.services.push(strict(document, &what)),
                other => panic!("{what}: unexpected kind {other:?}"),
            }
        }
    }
    manifests
}

fn only<'a, T>(objects: &'a [T], kind: &str) -> &'a T {
    assert_eq!(objects.len(), 1, "exactly one {kind} in {MANIFEST_DIR}");
    &objects[0]
}

fn pod_spec(deployment: &Deployment) -> &PodSpec {
    deployment.spec.as_ref().and_then(|s| s.template.spec.as_ref()).expect("the Deployment has a pod template")
}

fn autoscaler_container(deployment: &Deployment) -> &Container {
    let containers = &pod_spec(deployment).containers;
    assert_eq!(containers.len(), 1, "one container: the autoscaler");
    &containers[0]
}

fn pod_labels(deployment: &Deployment) -> BTreeMap<String, String> {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default()
}

fn matches_labels(match_labels: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    !match_labels.is_empty() && match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
}

// ---------------------------------------------------------------------------------------------
// The binary's flags.

/// The controller's command line: `cluster-autoscaler` with no subcommand parses exactly
/// [`RunArgs`] (the decision flags flattened with the controller's own), so a misspelled or
/// removed flag fails here as it would crash the pod.
#[derive(Parser)]
#[command(name = "cluster-autoscaler", no_binary_name = true)]
struct ControllerCommandLine {
    #[command(flatten)]
    run: RunArgs,
}

/// Parses arguments as the binary's controller would, and checks what it checks before it
/// connects (options, expander, lease durations, `--address`, the lock kind); every argument
/// must be `--name=value`.
fn parse_flags(args: &[String]) -> Result<RunArgs, String> {
    if let Some(bad) = args.iter().find(|a| !a.starts_with("--") || !a.contains('=')) {
        return Err(format!("{bad:?} is not of the form --name=value"));
    }
    let run = ControllerCommandLine::try_parse_from(args).map_err(|e| e.to_string())?.run;
    AutoscalingOptions::from_flags(&run.flags).map_err(|e| e.to_string())?;
    expander::Expander::new(&run.flags.expander).map_err(|e| format!("--expander={}: {e}", run.flags.expander))?;
    let lease = LeaseConfig {
        lease_duration: run.leader_elect_lease_duration,
        renew_deadline: run.leader_elect_renew_deadline,
        retry_period: run.leader_elect_retry_period,
    };
    lease.validate().map_err(|e| e.to_string())?;
    autoscaler::serve::parse_address(&run.address)?;
    if run.leader_elect_resource_lock != "leases" {
        return Err(format!("--leader-elect-resource-lock={}: only leases", run.leader_elect_resource_lock));
    }
    Ok(run)
}

fn deployment_args(deployment: &Deployment) -> Vec<String> {
    let container = autoscaler_container(deployment);
    assert!(container.command.is_none(), "the image's ENTRYPOINT runs the binary; the manifest only passes args");
    container.args.clone().unwrap_or_default()
}

/// The port `--address` serves on (`:8085`, `0.0.0.0:8085`), read as the controller reads it.
fn address_port(address: &str) -> i32 {
    autoscaler::serve::parse_address(address).unwrap_or_else(|e| panic!("{e}")).port().into()
}

// ---------------------------------------------------------------------------------------------
// deploy/kubernetes.

#[test]
fn kustomization_lists_every_manifest_file() {
    let listed: BTreeSet<String> = kustomization_resources().into_iter().collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(repo_root().join(MANIFEST_DIR))
        .expect("deploy/kubernetes exists")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") && name != "kustomization.yaml")
        .collect();
    assert_eq!(listed, on_disk, "kustomization.yaml's resources and the manifest files differ");
    for expected in [
        "serviceaccount.yaml",
        "rbac.yaml",
        "deployment.yaml",
        "configmap.yaml",
        "poddisruptionbudget.yaml",
        "service.yaml",
    ] {
        assert!(listed.contains(expected), "{expected} is missing");
    }

    // `images:` pins the same image the Deployment names, so `kustomize edit set image` works.
    let kustomization = yaml_value(&read(&format!("{MANIFEST_DIR}/kustomization.yaml")), "kustomization.yaml");
    let m = load_manifests();
    let image = autoscaler_container(only(&m.deployments, "Deployment")).image.clone().unwrap();
    let (repository, tag) = image.rsplit_once(':').unwrap();
    let pinned = kustomization["images"].as_array().expect("kustomization.yaml pins the image");
    assert!(
        pinned.iter().any(|i| i["name"] == repository && i["newTag"] == tag),
        "kustomization.yaml's images do not pin {image}"
    );
}

#[test]
fn every_manifest_decodes_into_its_kubernetes_type_without_unknown_fields() {
    let m = load_manifests();
    assert_eq!(m.service_accounts.len(), 1);
    assert_eq!((m.cluster_roles.len(), m.cluster_role_bindings.len()), (1, 1));
    assert_eq!((m.roles.len(), m.role_bindings.len()), (1, 1));
    assert_eq!(m.deployments.len(), 1);
    assert_eq!(m.config_maps.len(), 1);
    assert_eq!(m.pod_disruption_budgets.len(), 1);
    assert_eq!(m.services.len(), 1);
}

#[test]
fn strictness_catches_a_misspelled_field() {
    let document = yaml_value(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x, namespace: kube-system, lables: {a: b}}\n",
        "inline",
    );
    let outcome = std::panic::catch_unwind(|| strict::<ServiceAccount>(&document, "inline"));
    let message = *outcome.expect_err("a misspelled field must fail").downcast::<String>().unwrap();
    assert!(message.contains(".metadata.lables"), "{message}");
}

#[test]
fn namespaced_objects_live_in_kube_system_and_cluster_objects_have_no_namespace() {
    let m = load_manifests();
    let namespaced = m
        .service_accounts
        .iter()
        .map(|o| &o.metadata)
        .chain(m.roles.iter().map(|o| &o.metadata))
        .chain(m.role_bindings.iter().map(|o| &o.metadata))
        .chain(m.deployments.iter().map(|o| &o.metadata))
        .chain(m.config_maps.iter().map(|o| &o.metadata))
        .chain(m.pod_disruption_budgets.iter().map(|o| &o.metadata))
        .chain(m.services.iter().map(|o| &o.metadata));
    for meta in namespaced {
        assert_eq!(meta.namespace.as_deref(), Some("kube-system"), "{:?}", meta.name);
    }
    let cluster_scoped =
        m.cluster_roles.iter().map(|o| &o.metadata).chain(m.cluster_role_bindings.iter().map(|o| &o.metadata));
    for meta in cluster_scoped {
        assert_eq!(meta.namespace, None, "{:?} is cluster-scoped", meta.name);
    }
}

#[test]
fn deployment_args_parse_with_the_binarys_own_flags() {
    let m = load_manifests();
    let deployment = only(&m.deployments, "Deployment");
    let args = deployment_args(deployment);
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("deployment.yaml args: {e}"));
    let flags = &run.flags;
    assert_eq!(flags.cloud_provider, "static");
    assert!(autoscaler::compose::builtin_providers().contains(&flags.cloud_provider));
    assert_eq!(flags.nodes, ["1:10:general"]);
    assert_eq!(flags.expander, "least-waste");
    assert_eq!(flags.cloud_config, format!("{CLOUD_CONFIG_MOUNT}/cloud-config.yaml"));
    assert_eq!(flags.namespace, "kube-system", "the Role, the Lease and the status ConfigMap live there");
    assert!(run.leader_elect);
    assert_eq!(run.address, ":8085");
}

#[test]
fn flag_parsing_rejects_unknown_flags_and_bad_values() {
    let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(parse_flags(&args(&["--scale-down-unneded-time=10m"])).is_err(), "misspelled flag");
    assert!(parse_flags(&args(&["--scale-down-unneeded-time=ten"])).is_err(), "bad duration");
    assert!(parse_flags(&args(&["--expander=cheapest"])).is_err(), "unknown expander");
    assert!(parse_flags(&args(&["--expander", "least-waste"])).is_err(), "not --name=value");
    assert!(parse_flags(&args(&["--leader-elect=false", "--max-nodes-total=5"])).is_ok());
    // The controller's own flags are the binary's too.
    assert!(parse_flags(&args(&["--leader-elect-lease-duraton=15s"])).is_err(), "misspelled controller flag");
    assert!(parse_flags(&args(&["--kube-client-qps=fast"])).is_err(), "bad number");
    assert!(parse_flags(&args(&["--logging-format=xml"])).is_err(), "unknown logging format");
    assert!(parse_flags(&args(&["--leader-elect-renew-deadline=20s"])).is_err(), "renew deadline past the lease");
    assert!(parse_flags(&args(&["--address=8085"])).is_err(), "--address needs host:port");
    assert!(parse_flags(&args(&["--leader-elect-resource-lock=endpoints"])).is_err(), "only leases");
    let run = parse_flags(&args(&[
        "--kube-client-qps=20",
        "--kube-client-burst=40",
        "--leader-elect-resource-name=ca",
        "--record-duplicated-events=true",
        "--max-inactivity=5m",
        "--frequent-loops-enabled=false",
        "--logging-format=json",
        "--v=4",
    ]))
    .unwrap_or_else(|e| panic!("controller flags: {e}"));
    assert_eq!((run.kube_client_qps, run.kube_client_burst), (20.0, 40));
    assert_eq!(run.leader_elect_resource_name, "ca");
    assert!(run.record_duplicated_events && !run.flags.frequent_loops_enabled);
    assert_eq!(run.logging.verbosity, 4);
}

#[test]
fn cloud_config_configmap_builds_the_static_provider_with_the_deployment_flags() {
    let m = load_manifests();
    let deployment = only(&m.deployments, "Deployment");
    let flags = parse_flags(&deployment_args(deployment)).unwrap().flags;
    let spec = pod_spec(deployment);
    let container = autoscaler_container(deployment);

    // --cloud-config names a file of the ConfigMap volume.
    let (directory, file) = flags.cloud_config.rsplit_once('/').unwrap();
    let mount = container
        .volume_mounts
        .iter()
        .flatten()
        .find(|mount| mount.mount_path == directory)
        .unwrap_or_else(|| panic!("nothing is mounted at {directory}"));
    assert_eq!(mount.read_only, Some(true));
    let volume = spec.volumes.iter().flatten().find(|v| v.name == mount.name).expect("the mounted volume exists");
    let config_map_name = volume.config_map.as_ref().expect("a ConfigMap volume").name.clone();
    let config_map = m
        .config_maps
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(config_map_name.as_str()))
        .unwrap_or_else(|| panic!("the ConfigMap {config_map_name} is not in the manifests"));
    let text = config_map.data.as_ref().and_then(|d| d.get(file)).unwrap_or_else(|| panic!("no key {file}"));

    let alone = StaticConfig::from_yaml_str(text, "configmap.yaml").unwrap_or_else(|e| panic!("{e}"));
    let merged =
        StaticConfig::from_yaml_str_with_nodes(text, "configmap.yaml", &flags.nodes).unwrap_or_else(|e| panic!("{e}"));
    let general = merged.node_groups.iter().find(|g| g.id == "general").expect("the group `general`");
    assert_eq!((general.min_size, general.max_size), (1, 10));
    let from_file = alone.node_groups.iter().find(|g| g.id == "general").unwrap();
    assert_eq!((from_file.min_size, from_file.max_size), (1, 10), "the file and --nodes agree on the bounds");
    assert!(general.template.is_some(), "the group has a node template");
    let options = AutoscalingOptions::from_flags(&flags).unwrap();
    StaticCloudProvider::new(merged, &[], options.resource_limiter()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn deployment_runs_as_non_root_with_a_read_only_root_and_no_capabilities() {
    let m = load_manifests();
    let deployment = only(&m.deployments, "Deployment");
    let spec = pod_spec(deployment);
    let pod = spec.security_context.as_ref().expect("a pod securityContext");
    assert_eq!(pod.run_as_non_root, Some(true));
    assert_eq!(pod.run_as_user, Some(NON_ROOT_UID));
    assert_eq!(pod.seccomp_profile.as_ref().map(|p| p.type_.as_str()), Some("RuntimeDefault"));
    let container = autoscaler_container(deployment).security_context.as_ref().expect("a container securityContext");
    assert_eq!(container.run_as_non_root, Some(true));
    assert_eq!(container.read_only_root_filesystem, Some(true));
    assert_eq!(container.allow_privilege_escalation, Some(false));
    assert_eq!(container.privileged, None);
    let capabilities = container.capabilities.as_ref().expect("capabilities");
    assert_eq!(capabilities.drop.as_deref(), Some(&["ALL".to_string()][..]));
    assert_eq!(capabilities.add, None);
    assert_eq!(container.seccomp_profile.as_ref().map(|p| p.type_.as_str()), Some("RuntimeDefault"));
}

#[test]
fn deployment_is_critical_bounded_and_probed_on_the_health_check_port() {
    let m = load_manifests();
    let deployment = only(&m.deployments, "Deployment");
    let spec = pod_spec(deployment);
    assert_eq!(spec.priority_class_name.as_deref(), Some("system-cluster-critical"));
    let container = autoscaler_container(deployment);
    let image = container.image.as_deref().unwrap();
    assert_eq!(image, format!("{IMAGE_REPOSITORY}:0.1.0"), "a pinned image");

    let resources = container.resources.as_ref().expect("resources");
    for (what, list) in [("requests", &resources.requests), ("limits", &resources.limits)] {
        let list = list.as_ref().unwrap_or_else(|| panic!("resources.{what}"));
        assert!(list.contains_key("cpu") && list.contains_key("memory"), "resources.{what} has cpu and memory");
    }

    let run = parse_flags(&deployment_args(deployment)).unwrap();
    let port = container
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some("http-metrics"))
        .expect("a container port named http-metrics");
    assert_eq!(port.container_port, address_port(&run.address), "the metrics port is --address's");
    let probe = container.liveness_probe.as_ref().and_then(|p| p.http_get.as_ref()).expect("an HTTP liveness probe");
    assert_eq!(probe.path.as_deref(), Some("/health-check"));
    assert!(
        probe.port == IntOrString::String("http-metrics".into()) || probe.port == IntOrString::Int(port.container_port),
        "the probe targets the metrics port"
    );

    let replicas = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    assert!(replicas == 1 || run.leader_elect, "more than one replica needs --leader-elect=true");
}

#[test]
fn the_deployment_runs_as_the_service_account_the_roles_are_bound_to() {
    let m = load_manifests();
    let account = only(&m.service_accounts, "ServiceAccount");
    let deployment = only(&m.deployments, "Deployment");
    assert_eq!(pod_spec(deployment).service_account_name, account.metadata.name);
    assert_eq!(account.metadata.name.as_deref(), Some("cluster-autoscaler"));
    assert_eq!(deployment.metadata.namespace, account.metadata.namespace);
    assert_ne!(pod_spec(deployment).automount_service_account_token, Some(false), "the autoscaler needs its token");
}

#[test]
fn pod_disruption_budget_and_service_select_the_deployments_pods() {
    let m = load_manifests();
    let deployment = only(&m.deployments, "Deployment");
    let labels = pod_labels(deployment);
    let selector = deployment.spec.as_ref().unwrap().selector.match_labels.clone().unwrap_or_default();
    assert!(matches_labels(&selector, &labels), "the Deployment selects its own template");

    let pdb = only(&m.pod_disruption_budgets, "PodDisruptionBudget");
    assert_eq!(pdb.metadata.namespace, deployment.metadata.namespace);
    let pdb_spec = pdb.spec.as_ref().expect("a PDB spec");
    let pdb_selector = pdb_spec.selector.as_ref().and_then(|s| s.match_labels.clone()).unwrap_or_default();
    assert!(matches_labels(&pdb_selector, &labels), "the PDB selects the autoscaler's pods");
    assert!(
        pdb_spec.max_unavailable == Some(IntOrString::Int(1)) || pdb_spec.min_available == Some(IntOrString::Int(1)),
        "maxUnavailable 1 or minAvailable 1"
    );
    let replicas = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    if pdb_spec.min_available.is_some() {
        assert!(replicas > 1, "minAvailable 1 with one replica would block every drain of its node");
    }

    let service = only(&m.services, "Service");
    let service_spec = service.spec.as_ref().unwrap();
    assert!(matches_labels(service_spec.selector.as_ref().unwrap(), &labels), "the Service selects the pods");
    let port = service_spec.ports.iter().flatten().find(|p| p.name.as_deref() == Some("http-metrics")).unwrap();
    let container_port_names: Vec<_> =
        autoscaler_container(deployment).ports.iter().flatten().filter_map(|p| p.name.clone()).collect();
    match port.target_port.as_ref().expect("a targetPort") {
        IntOrString::String(name) => assert!(container_port_names.contains(name), "targetPort {name} exists"),
        IntOrString::Int(number) => assert_eq!(*number, 8085),
    }
}

// ---------------------------------------------------------------------------------------------
// deploy/Dockerfile and .dockerignore.

/// One instruction of a Dockerfile: keyword (upper case) and its arguments, continuation lines
/// joined.
fn dockerfile_instructions(text: &str) -> Vec<(String, String)> {
    let mut instructions = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(continued) = trimmed.strip_suffix('\\') {
            pending.push_str(continued);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let (keyword, rest) = pending.split_once(char::is_whitespace).unwrap_or((&pending, ""));
        instructions.push((keyword.to_ascii_uppercase(), rest.trim().to_string()));
        pending.clear();
    }
    instructions
}

/// The stages of a Dockerfile: (base image with global ARG defaults substituted, stage name,
/// instructions after FROM).
type Stage = (String, Option<String>, Vec<(String, String)>);

fn dockerfile_stages() -> Vec<Stage> {
    let mut args: BTreeMap<String, String> = BTreeMap::new();
    let mut stages: Vec<Stage> = Vec::new();
    for (keyword, rest) in dockerfile_instructions(&read("deploy/Dockerfile")) {
        match keyword.as_str() {
            "ARG" if stages.is_empty() => {
                if let Some((name, default)) = rest.split_once('=') {
                    args.insert(name.to_string(), default.to_string());
                }
            }
            "FROM" => {
                let words: Vec<&str> = rest.split_whitespace().filter(|w| !w.starts_with("--")).collect();
                let mut image = words[0].to_string();
                for (name, value) in &args {
                    image = image.replace(&format!("${{{name}}}"), value).replace(&format!("${name}"), value);
                }
                let name = (words.len() == 3 && words[1].eq_ignore_ascii_case("as")).then(|| words[2].to_string());
                stages.push((image, name, Vec::new()));
            }
            _ => {
                if let Some(stage) = stages.last_mut() {
                    stage.2.push((keyword, rest));
                }
            }
        }
    }
    stages
}

#[test]
fn dockerfile_builds_in_a_rust_stage_and_runs_in_a_small_non_root_stage() {
    let stages = dockerfile_stages();
    assert!(stages.len() >= 2, "a builder stage and a runtime stage");
    let (builder_image, builder_name, builder) = &stages[0];
    assert!(builder_image.starts_with("rust:1.95"), "the builder is the project's toolchain: {builder_image}");
    let builder_name = builder_name.as_deref().expect("the builder stage is named");
    let builds = builder.iter().filter(|(k, r)| k == "RUN" && r.contains("cargo build")).collect::<Vec<_>>();
    assert!(!builds.is_empty(), "the builder runs cargo build");
    for (_, run) in &builds {
        for needed in ["--release", "--locked", "-p autoscaler"] {
            assert!(run.contains(needed), "cargo build uses {needed}: {run}");
        }
    }

    let (runtime_image, _, runtime) = stages.last().unwrap();
    assert!(!runtime_image.starts_with("rust:"), "the runtime stage carries no toolchain");
    assert!(
        runtime_image.contains("distroless") || runtime_image.contains("slim"),
        "a small runtime image: {runtime_image}"
    );
    let copy = runtime
        .iter()
        .find(|(k, r)| k == "COPY" && r.starts_with(&format!("--from={builder_name} ")))
        .expect("the runtime stage copies the binary from the builder");
    assert!(copy.1.ends_with(" /cluster-autoscaler"), "{}", copy.1);

    let user = runtime.iter().rev().find(|(k, _)| k == "USER").map(|(_, r)| r.clone()).expect("a USER");
    let uid: i64 = user.split(':').next().unwrap().parse().expect("a numeric uid (runAsNonRoot needs one)");
    assert_ne!(uid, 0, "not root");
    assert_eq!(uid, NON_ROOT_UID, "the uid the manifests run as");
    let entrypoint = runtime.iter().rev().find(|(k, _)| k == "ENTRYPOINT").expect("an ENTRYPOINT");
    let entrypoint: Vec<String> = serde_json::from_str(&entrypoint.1).expect("exec form: a JSON array");
    assert_eq!(entrypoint, ["/cluster-autoscaler"]);
}

#[test]
fn dockerfile_builds_dependencies_from_every_member_manifest_before_copying_the_sources() {
    // Cargo.toml is TOML: read the one-line members list by hand.
    let cargo_toml = read("Cargo.toml");
    let members_line = cargo_toml.lines().find(|l| l.trim_start().starts_with("members")).expect("workspace members");
    let members: Vec<String> = members_line
        .split('[')
        .nth(1)
        .unwrap()
        .trim_end_matches(']')
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect();
    assert!(members.contains(&"autoscaler".to_string()));

    let stages = dockerfile_stages();
    let builder = &stages[0].2;
    let first_build = builder.iter().position(|(k, r)| k == "RUN" && r.contains("cargo build")).unwrap();
    let sources = builder
        .iter()
        .position(|(k, r)| k == "COPY" && r.split_whitespace().next() == Some("."))
        .expect("the builder copies the sources");
    assert!(first_build < sources, "dependencies build before the sources are copied (a cached layer)");
    let copied_before: Vec<&String> =
        builder[..first_build].iter().filter(|(k, _)| k == "COPY").map(|(_, r)| r).collect();
    assert!(copied_before.iter().any(|r| r.contains("Cargo.lock")), "the lock file comes first");
    for member in &members {
        let manifest = format!("{member}/Cargo.toml");
        assert!(
            copied_before.iter().any(|r| r.split_whitespace().any(|w| w == manifest)),
            "the Dockerfile copies {manifest} before the dependency build (a new workspace member?)"
        );
    }
}

/// Whether a `.dockerignore` pattern (the plain forms used there: a path, or `**/<name>`)
/// excludes a repository-relative path.
fn docker_ignores(pattern: &str, path: &str) -> bool {
    match pattern.strip_prefix("**/") {
        Some(name) => path.split('/').any(|component| component == name),
        None => path == pattern || path.starts_with(&format!("{pattern}/")),
    }
}

/// Files a crate embeds with `include_str!` / `include_bytes!`, repository-relative.
fn embedded_files(directory: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(directory).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            embedded_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for marker in ["include_str!(\"", "include_bytes!(\""] {
                for piece in text.split(marker).skip(1) {
                    let relative = piece.split('"').next().unwrap();
                    let target = path.parent().unwrap().join(relative);
                    let target = target.canonicalize().unwrap_or_else(|e| panic!("{}: {e}", target.display()));
                    let root = repo_root().canonicalize().unwrap();
                    found.push(target.strip_prefix(&root).unwrap().to_string_lossy().into_owned());
                }
            }
        }
    }
}

#[test]
fn dockerignore_keeps_the_sources_and_every_file_the_binary_embeds() {
    let patterns: Vec<String> = read(".dockerignore")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    assert!(patterns.iter().any(|p| p == "target"), "the build context leaves out target/");
    for pattern in &patterns {
        assert!(
            !pattern.contains('*') || pattern.starts_with("**/") && !pattern[3..].contains('*'),
            "{pattern}: only plain paths and **/<name> are understood by this check"
        );
        assert!(!pattern.starts_with('!'), "{pattern}: exceptions are not understood by this check");
    }
    let mut needed: Vec<String> = vec!["Cargo.toml".into(), "Cargo.lock".into()];
    for member in ["simulator", "estimator", "expander", "cloudprovider", "autoscaler", "tests"] {
        needed.push(format!("{member}/Cargo.toml"));
        needed.push(format!("{member}/src/lib.rs"));
        embedded_files(&repo_root().join(member).join("src"), &mut needed);
    }
    needed.push("autoscaler/src/main.rs".into());
    for path in &needed {
        if let Some(pattern) = patterns.iter().find(|p| docker_ignores(p, path)) {
            panic!(".dockerignore's {pattern:?} leaves {path} out of the build context, but the build needs it");
        }
    }
}

/// Applies a kustomize overlay's inline JSON patch (RFC 6902 `test` / `add` / `replace` operations, `-` appending to a list) as kustomize would.
pub fn apply_json_patch(document: &mut Value, operations: &Value, what: &str) {
    for operation in operations.as_array().unwrap_or_else(|| panic!("{what}: a list of operations")) {
        let op = operation["op"].as_str().unwrap_or_default();
        let path = operation["path"].as_str().unwrap_or_else(|| panic!("{what}: an operation without a path"));
        let value = operation["value"].clone();
        if op == "test" {
            let found = document.pointer(path).unwrap_or_else(|| panic!("{what}: test of a missing {path}"));
            assert_eq!(*found, value, "{what}: the test of {path} fails: kustomize would refuse the overlay");
            continue;
        }
        assert!(op == "add" || op == "replace", "{what}: unsupported op {op:?}");
        let (parent, last) = path.rsplit_once('/').unwrap_or_else(|| panic!("{what}: bad path {path}"));
        let target = document.pointer_mut(parent).unwrap_or_else(|| panic!("{what}: {parent} does not exist"));
        match target {
            Value::Object(map) => {
                assert!(op == "add" || map.contains_key(last), "{what}: replace of a missing {path}");
                map.insert(last.to_string(), value);
            }
            Value::Array(items) if last == "-" && op == "add" => items.push(value),
            Value::Array(items) => {
                let index: usize = last.parse().unwrap_or_else(|_| panic!("{what}: {path} is not an index"));
                assert!(index < items.len(), "{what}: {path} is out of range");
                items[index] = value;
            }
            _ => panic!("{what}: {parent} is neither an object nor a list"),
        }
    }
}
