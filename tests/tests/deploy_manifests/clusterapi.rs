//! `deploy/clusterapi/`: `--cloud-provider=clusterapi` in upstream's two layouts, and the chart's
//! `clusterapi.*` values. The overlays' JSON patches are applied to the base manifests here (as
//! kustomize would); the arguments parse with the binary's flags and build the provider; the
//! Cluster API permissions are the same in every layout (one-cluster ClusterRole, the
//! management cluster's Role, the chart) and allow every request the provider makes — recorded
//! against the fake API server serving the Cluster API CRDs — and nothing it does not make.

use std::collections::BTreeSet;
use std::sync::Arc;

use cloudprovider::{CloudProvider, NodeGroup, ProviderContext, Purpose};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use serde_json::{Value, json};
use tests::fake_apiserver::FakeApiServer;

use super::helm::{CLUSTERAPI_MANAGEMENT_MOUNT, rendered_args, template, values};
use super::rbac::{Permission, Scope, allows, expand, request_of};
use super::{MANIFEST_DIR, autoscaler_container, parse_flags, pod_spec, read, strict, yaml_documents, yaml_value};

#[path = "../clusterapi/fixtures.rs"]
mod fixtures;
use fixtures::*;

const ONE_CLUSTER: &str = "deploy/clusterapi/one-cluster/kustomization.yaml";
const WORKLOAD: &str = "deploy/clusterapi/workload/kustomization.yaml";
const MANAGEMENT: &str = "deploy/clusterapi/management/kustomization.yaml";
const MANAGEMENT_RBAC: &str = "deploy/clusterapi/one-cluster/management-rbac.yaml";
const MANAGEMENT_OBJECTS: &str = "deploy/clusterapi/management/management.yaml";
/// The namespace of the example Cluster's objects (the discovery's and the Role's).
const CLUSTER_NAMESPACE: &str = "default";
/// The Secret the workload overlay mounts.
const KUBECONFIG_SECRET: &str = "cluster-autoscaler-management-kubeconfig";
/// Infrastructure template kinds granted for other infrastructure providers than the fake API
/// server's (Docker): their calls are the Docker one's with another resource name.
const OTHER_TEMPLATE_KINDS: &[&str] =
    &["metal3machinetemplates", "openstackmachinetemplates", "proxmoxmachinetemplates", "vspheremachinetemplates"];

/// An overlay's kustomization, checked to build on the base manifests.
fn overlay(path: &str, extra_resources: &[&str]) -> Value {
    let overlay = yaml_value(&read(path), path);
    let mut expected = vec![json!("../../kubernetes")];
    expected.extend(extra_resources.iter().map(|r| json!(r)));
    assert_eq!(overlay["resources"], Value::Array(expected), "{path}: the overlay builds on {MANIFEST_DIR}");
    overlay
}

/// The base Deployment with an overlay's patches applied.
fn patched_deployment(path: &str, extra_resources: &[&str]) -> Deployment {
    let overlay = overlay(path, extra_resources);
    let mut document = yaml_documents(&format!("{MANIFEST_DIR}/deployment.yaml"))
        .into_iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("the base has a Deployment");
    for patch in overlay["patches"].as_array().expect("the overlay has patches") {
        assert_eq!(patch["target"]["kind"], "Deployment", "{path}: only the Deployment is patched");
        assert_eq!(patch["target"]["name"], document["metadata"]["name"]);
        let text = patch["patch"].as_str().expect("an inline patch");
        super::apply_json_patch(&mut document, &yaml_value(text, &format!("{path} patch")), path);
    }
    strict(&document, &format!("{path}'s Deployment"))
}

/// Builds the provider the flags describe, as the controller's configuration check does (no
/// connection; a `--cloud-config` kubeconfig is read, so it is pointed at a readable one).
fn check_provider(mut flags: autoscaler::config::DecisionFlags) {
    // Removed at the end, once the provider has read it.
    let file = tempfile::Builder::new().prefix("deploy-clusterapi-").suffix(".kubeconfig").tempfile().unwrap();
    if !flags.cloud_config.is_empty() {
        std::fs::write(file.path(), "apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster: {server: https://management.example:6443}\ncontexts:\n- name: m\n  context: {cluster: m, user: m}\ncurrent-context: m\nusers:\n- name: m\n  user: {token: t}\n").unwrap();
        flags.cloud_config = file.path().display().to_string();
    }
    let options = autoscaler::config::AutoscalingOptions::from_flags(&flags).unwrap();
    let inputs = autoscaler::compose::ProviderInputs {
        purpose: Purpose::Check,
        nodes: Vec::new(),
        now: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        kube: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let providers = autoscaler::compose::builtin_providers();
    let built = runtime.block_on(autoscaler::compose::compose(&providers, &flags, &options, inputs, None));
    let (provider, _) = built.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(provider.name(), "clusterapi");
}

#[test]
fn the_one_cluster_overlay_discovers_the_clusters_machine_deployments_with_the_in_cluster_client() {
    let deployment = patched_deployment(ONE_CLUSTER, &["management-rbac.yaml"]);
    let args = autoscaler_container(&deployment).args.clone().unwrap_or_default();
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("{ONE_CLUSTER} args {args:?}: {e}"));
    assert_eq!(run.flags.cloud_provider, "clusterapi");
    assert!(run.flags.cloud_config.is_empty(), "one cluster: no --cloud-config, the in-cluster client: {args:?}");
    assert!(run.flags.nodes.is_empty());
    assert_eq!(
        run.flags.node_group_auto_discovery,
        [format!("clusterapi:namespace={CLUSTER_NAMESPACE},clusterName=my-cluster")]
    );
    check_provider(run.flags);

    // The management permissions are bound to the autoscaler's ServiceAccount.
    let documents = yaml_documents(MANAGEMENT_RBAC);
    let binding: ClusterRoleBinding =
        strict(documents.iter().find(|d| d["kind"] == "ClusterRoleBinding").unwrap(), MANAGEMENT_RBAC);
    let role: ClusterRole = strict(documents.iter().find(|d| d["kind"] == "ClusterRole").unwrap(), MANAGEMENT_RBAC);
    assert_eq!(binding.role_ref.name, role.metadata.name.clone().unwrap());
    let account = pod_spec(&deployment).service_account_name.clone().unwrap();
    let subject = &binding.subjects.as_ref().unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str(), subject.namespace.as_deref()),
        ("ServiceAccount", account.as_str(), Some("kube-system"))
    );
}

#[test]
fn the_workload_overlay_passes_the_mounted_management_kubeconfig_as_cloud_config() {
    let deployment = patched_deployment(WORKLOAD, &[]);
    let container = autoscaler_container(&deployment);
    let args = container.args.clone().unwrap_or_default();
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("{WORKLOAD} args {args:?}: {e}"));
    assert_eq!(run.flags.cloud_provider, "clusterapi");
    let (directory, file) = run.flags.cloud_config.rsplit_once('/').expect("--cloud-config is a file path");
    assert_eq!((directory, file), (CLUSTERAPI_MANAGEMENT_MOUNT, "kubeconfig"), "the chart's path too");
    let mount = container
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == directory)
        .unwrap_or_else(|| panic!("nothing is mounted at {directory}"));
    assert_eq!(mount.read_only, Some(true));
    let volume = pod_spec(&deployment).volumes.iter().flatten().find(|v| v.name == mount.name).unwrap();
    let secret = volume.secret.as_ref().expect("a Secret volume");
    assert_eq!(secret.secret_name.as_deref(), Some(KUBECONFIG_SECRET));
    assert_eq!(secret.items, None, "every key is a file: `kubeconfig` is the file --cloud-config names");
    assert!(read(WORKLOAD).contains(&format!("create secret generic {KUBECONFIG_SECRET} -n kube-system")));
    assert!(read(WORKLOAD).contains("--from-file=kubeconfig="));
    check_provider(run.flags);
}

#[test]
fn the_management_side_gives_the_autoscaler_an_account_a_token_and_a_role_in_the_clusters_namespace() {
    let kustomization = yaml_value(&read(MANAGEMENT), MANAGEMENT);
    assert_eq!(kustomization["resources"], json!(["management.yaml"]));
    let documents = yaml_documents(MANAGEMENT_OBJECTS);
    let find = |kind: &str| documents.iter().find(|d| d["kind"] == kind).unwrap_or_else(|| panic!("no {kind}"));
    let account: ServiceAccount = strict(find("ServiceAccount"), MANAGEMENT_OBJECTS);
    let token: Secret = strict(find("Secret"), MANAGEMENT_OBJECTS);
    let role: Role = strict(find("Role"), MANAGEMENT_OBJECTS);
    let binding: RoleBinding = strict(find("RoleBinding"), MANAGEMENT_OBJECTS);
    assert_eq!(documents.len(), 4);
    let name = account.metadata.name.clone().unwrap();
    for namespace in
        [&account.metadata, &token.metadata, &role.metadata, &binding.metadata].map(|m| m.namespace.as_deref())
    {
        assert_eq!(namespace, Some(CLUSTER_NAMESPACE), "everything in the Cluster's namespace");
    }
    assert_eq!(token.type_.as_deref(), Some("kubernetes.io/service-account-token"));
    assert_eq!(token.metadata.annotations.unwrap()["kubernetes.io/service-account.name"], name);
    assert_eq!(
        (binding.role_ref.kind.as_str(), binding.role_ref.name.as_str()),
        ("Role", role.metadata.name.as_deref().unwrap())
    );
    let subject = &binding.subjects.as_ref().unwrap()[0];
    assert_eq!((subject.name.as_str(), subject.namespace.as_deref()), (name.as_str(), Some(CLUSTER_NAMESPACE)));
}

/// The literal rules of the chart's Cluster API role (`templates/rbac.yaml`).
fn chart_clusterapi_rules() -> Vec<PolicyRule> {
    let text = template("rbac.yaml");
    let document = text
        .split("\n---\n")
        .find(|doc| doc.contains("-clusterapi\n") && doc.lines().any(|l| l == "rules:"))
        .expect("templates/rbac.yaml has the Cluster API role");
    let rules: Vec<&str> = document
        .lines()
        .skip_while(|l| *l != "rules:")
        .take_while(|l| !l.trim_start().starts_with("{{") && *l != "---")
        .collect();
    assert!(rules.iter().all(|l| !l.contains("{{")), "the rules are literal YAML");
    strict(&yaml_value(&rules.join("\n"), "templates/rbac.yaml")["rules"], "templates/rbac.yaml Cluster API rules")
}

fn one_cluster_rules() -> Vec<PolicyRule> {
    let documents = yaml_documents(MANAGEMENT_RBAC);
    let role: ClusterRole = strict(documents.iter().find(|d| d["kind"] == "ClusterRole").unwrap(), MANAGEMENT_RBAC);
    role.rules.unwrap_or_default()
}

fn management_rules() -> Vec<PolicyRule> {
    let documents = yaml_documents(MANAGEMENT_OBJECTS);
    let role: Role = strict(documents.iter().find(|d| d["kind"] == "Role").unwrap(), MANAGEMENT_OBJECTS);
    role.rules.unwrap_or_default()
}

#[test]
fn every_layout_grants_the_same_cluster_api_rules() {
    let rules = one_cluster_rules();
    assert_eq!(management_rules(), rules, "{MANAGEMENT_OBJECTS} and {MANAGEMENT_RBAC}");
    assert_eq!(chart_clusterapi_rules(), rules, "templates/rbac.yaml and {MANAGEMENT_RBAC}");
}

/// Every request the provider makes on a management cluster: discovery, the lists of a refresh
/// (the infrastructure templates included), scaling each kind of group, DeleteNodes (the mark
/// and the scale), DecreaseTargetSize, and the Warning Event of a malformed resource.
async fn provider_requests() -> Vec<super::rbac::Request> {
    let server = FakeApiServer::builder().cluster_api(true).start().await;
    let ns = CLUSTER_NAMESPACE;
    let sized = sized(0, 5);
    let notes = pairs(&sized);
    server.seed_value(machine_deployment(ns, "md", "c1", 2, &notes)).unwrap();
    server.seed_value(docker_template(ns, "md-template", Some(json!({"cpu": "4", "memory": "16Gi"})))).unwrap();
    server.seed_value(machine_set_of(ns, "md", "c1", 2)).unwrap();
    for i in 1..=2 {
        server.seed_value(machine(ns, &format!("md-{i}"), "c1", "md-set", Some("md"), Some(&format!("n{i}")))).unwrap();
    }
    server.seed_value(machine_set(ns, "solo", "c1", 1, &notes)).unwrap();
    server
        .seed_value(json!({
            "apiVersion": V1BETA1, "kind": "MachinePool",
            "metadata": {"name": "pool", "namespace": ns, "annotations": annotations(&notes)},
            "spec": {"clusterName": "c1", "replicas": 1, "providerIDList": [provider_id("pool-0")]},
        }))
        .unwrap();
    server.seed_value(machine_deployment(ns, "bad", "c1", 1, &[(MAX, "x")])).unwrap();

    let mut context = ProviderContext::new("clusterapi", Purpose::Controller);
    context.kube = Some(server.client());
    context.node_group_auto_discovery = vec![format!("clusterapi:namespace={ns},clusterName=c1")];
    let provider: Arc<dyn CloudProvider> = cloudprovider_clusterapi::build(context).await.unwrap();
    provider.refresh().await.unwrap();
    let groups = provider.node_groups().await;
    let group = |id: &str| -> Arc<dyn NodeGroup> { groups.iter().find(|g| g.id() == id).unwrap().clone() };
    for id in ["MachineDeployment/default/md", "MachineSet/default/solo", "MachinePool/default/pool"] {
        group(id).increase_size(1).await.unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    // The increase is not backed by a Machine yet: it can be taken back.
    provider.refresh().await.unwrap();
    group("MachineDeployment/default/md").decrease_target_size(-1).await.unwrap();
    let node = kubelet_node("n1", "md-1", ns, "4", "16Gi");
    group("MachineDeployment/default/md").delete_nodes(&[node]).await.unwrap();
    server.requests().iter().filter_map(request_of).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_api_rules_allow_every_request_the_provider_makes_and_each_is_used() {
    let requests = provider_requests().await;
    let rules = one_cluster_rules();
    let layouts = [
        ("one cluster (ClusterRole)", expand(&rules, &Scope::Cluster, MANAGEMENT_RBAC)),
        (
            "separate management cluster (Role)",
            expand(&management_rules(), &Scope::Namespace(CLUSTER_NAMESPACE.into()), MANAGEMENT_OBJECTS),
        ),
    ];
    for (layout, granted) in &layouts {
        for request in &requests {
            assert!(
                granted.iter().any(|p| allows(p, request)),
                "{layout}: the provider made {request:?}, which the Cluster API rules do not allow"
            );
        }
        let unused: Vec<&Permission> = granted
            .iter()
            .filter(|p| !OTHER_TEMPLATE_KINDS.contains(&p.resource.as_str()))
            .filter(|p| !requests.iter().any(|r| allows(p, r)))
            .collect();
        assert!(unused.is_empty(), "{layout}: granted but never used: {unused:#?}");
    }
    let kinds: BTreeSet<&str> = requests.iter().map(|r| r.resource.as_str()).collect();
    for kind in ["machinedeployments/scale", "machinesets/scale", "machinepools/scale", "machines", "events"] {
        assert!(kinds.contains(kind), "the run exercised {kind}: {kinds:?}");
    }
}

/// The chart's default values switched to `cloudProvider: clusterapi`, with a separate
/// management cluster's kubeconfig Secret or not, as deploy/README.md shows.
pub(super) fn chart_values(separate: bool) -> Value {
    let mut values = values();
    values["cloudProvider"] = "clusterapi".into();
    values["cloudConfig"] = "".into();
    values["nodeGroups"] = json!([]);
    values["clusterapi"]["clusterName"] = "prod".into();
    values["clusterapi"]["namespace"] = "capi-prod".into();
    values["clusterapi"]["managementKubeconfigSecret"] = if separate { "management-kubeconfig" } else { "" }.into();
    values
}

#[test]
fn chart_clusterapi_values_make_the_discovery_and_management_flags() {
    let defaults = values();
    assert_eq!(defaults["clusterapi"]["clusterName"], "", "no cluster is assumed");
    assert_eq!(defaults["clusterapi"]["managementKubeconfigSecret"], "", "one cluster by default");
    for separate in [false, true] {
        let args = rendered_args(&chart_values(separate), "kube-system");
        let run = parse_flags(&args).unwrap_or_else(|e| panic!("the chart's clusterapi args {args:?}: {e}"));
        assert_eq!(run.flags.cloud_provider, "clusterapi");
        assert_eq!(run.flags.node_group_auto_discovery, ["clusterapi:clusterName=prod,namespace=capi-prod"]);
        let expected = if separate { format!("{CLUSTERAPI_MANAGEMENT_MOUNT}/kubeconfig") } else { String::new() };
        assert_eq!(run.flags.cloud_config, expected);
        check_provider(run.flags);
    }
    let deployment = template("deployment.yaml");
    assert!(deployment.contains(
        "{{ required \"clusterapi.clusterName is required with cloudProvider: clusterapi\" .Values.clusterapi.clusterName }}{{ with .Values.clusterapi.namespace }},namespace={{ . }}{{ end }}"
    ));
    assert!(deployment.contains(&format!(
        "        - name: management-kubeconfig\n          mountPath: {CLUSTERAPI_MANAGEMENT_MOUNT}\n          readOnly: true\n"
    )));
    assert!(deployment.contains(
        "      - name: management-kubeconfig\n        secret:\n          secretName: {{ .Values.clusterapi.managementKubeconfigSecret }}\n"
    ));
    // Only one cluster gets the Cluster API role from the chart; a separate management
    // cluster gets deploy/clusterapi/management.
    let rbac = template("rbac.yaml");
    assert!(rbac.contains(
        "{{- if and (eq .Values.cloudProvider \"clusterapi\") (not .Values.clusterapi.managementKubeconfigSecret) }}"
    ));
    assert!(rbac.contains("kind: {{ if .Values.clusterapi.namespace }}Role{{ else }}ClusterRole{{ end }}"));
}
