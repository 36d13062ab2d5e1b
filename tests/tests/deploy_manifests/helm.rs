//! The Helm chart `deploy/helm/cluster-autoscaler/`. Helm is not needed: the templates are plain
//! Go templates, checked structurally (every `.Values` reference exists and every value is
//! used, blocks are balanced, includes are defined), and the default values are checked for
//! what they become (flags the binary accepts, valid Kubernetes fields, the same RBAC and
//! security settings as `deploy/kubernetes/`).

use std::collections::{BTreeMap, BTreeSet};

use cloudprovider_static::StaticConfig;
use k8s_openapi::api::core::v1::{
    Affinity, LocalObjectReference, PodSecurityContext, ResourceRequirements, SecurityContext, Toleration,
};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::{
    CLOUD_CONFIG_MOUNT, IMAGE_REPOSITORY, autoscaler_container, load_manifests, only, parse_flags, pod_spec, read,
    repo_root, strict, yaml_value,
};

const CHART: &str = "deploy/helm/cluster-autoscaler";
/// Where the chart mounts a separate Cluster API management cluster's kubeconfig Secret.
pub(super) const CLUSTERAPI_MANAGEMENT_MOUNT: &str = "/etc/cluster-api-management";

pub(super) fn values() -> Value {
    yaml_value(&read(&format!("{CHART}/values.yaml")), "values.yaml")
}

/// Every file of `templates/`: (file name, text).
fn templates() -> Vec<(String, String)> {
    let directory = repo_root().join(CHART).join("templates");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&directory)
        .unwrap_or_else(|e| panic!("{}: {e}", directory.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

pub(super) fn template(name: &str) -> String {
    read(&format!("{CHART}/templates/{name}"))
}

/// The actions (`{{ … }}`) of a template, without trim markers and surrounding blanks.
fn actions(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let end = after.find("}}").unwrap_or_else(|| panic!("an unclosed action: {}", &rest[start..]));
        let inner = after[..end].trim();
        let inner = inner.strip_prefix('-').unwrap_or(inner).trim();
        let inner = inner.strip_suffix('-').unwrap_or(inner).trim();
        found.push(inner.to_string());
        rest = &after[end + 2..];
    }
    found
}

/// The `.Values.a.b` paths an action refers to, as key lists.
fn values_references(action: &str) -> Vec<Vec<String>> {
    action
        .match_indices(".Values")
        .filter_map(|(at, _)| {
            let path: String = action[at + ".Values".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            let keys: Vec<String> = path.split('.').filter(|k| !k.is_empty()).map(String::from).collect();
            (!keys.is_empty()).then_some(keys)
        })
        .collect()
}

fn all_values_references() -> BTreeSet<Vec<String>> {
    templates().iter().flat_map(|(_, text)| actions(text)).flat_map(|a| values_references(&a)).collect()
}

/// Every path of `values` ending at a leaf (a scalar, a list, or an empty map).
fn leaf_paths(value: &Value, prefix: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                prefix.push(key.clone());
                leaf_paths(child, prefix, found);
                prefix.pop();
            }
        }
        _ => found.push(prefix.clone()),
    }
}

/// A value as Go templates print it (`{{ $value }}`).
fn printed(value: &Value, what: &str) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => {
            let float = n.as_f64().unwrap();
            assert!(float.abs() < 1e6, "{what}: Helm prints large numbers in exponent form; quote it");
            float.to_string()
        }
        other => panic!("{what}: {other} is not a scalar"),
    }
}

/// The container args `templates/deployment.yaml` renders from `values` (release namespace
/// `namespace`). [`chart_template_passes_the_flags_the_test_renders`] keeps this in step with
/// the template.
pub(super) fn rendered_args(values: &Value, namespace: &str) -> Vec<String> {
    let mut args = vec![format!("--cloud-provider={}", printed(&values["cloudProvider"], "cloudProvider"))];
    if values["cloudConfig"].as_str().is_some_and(|c| !c.is_empty()) {
        args.push(format!("--cloud-config={CLOUD_CONFIG_MOUNT}/cloud-config.yaml"));
    }
    for (i, group) in values["nodeGroups"].as_array().expect("nodeGroups is a list").iter().enumerate() {
        let field = |key: &str| printed(&group[key], &format!("nodeGroups[{i}].{key}"));
        args.push(format!("--nodes={}:{}:{}", field("minSize"), field("maxSize"), field("name")));
    }
    if values["cloudProvider"] == "aws" {
        let cluster = printed(&values["aws"]["clusterName"], "aws.clusterName");
        assert!(!cluster.is_empty(), "the template requires aws.clusterName with cloudProvider: aws");
        args.push(format!(
            "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/{cluster}"
        ));
        let static_list = printed(&values["aws"]["useStaticInstanceList"], "aws.useStaticInstanceList");
        args.push(format!("--aws-use-static-instance-list={static_list}"));
    }
    if values["cloudProvider"] == "clusterapi" {
        let cluster = printed(&values["clusterapi"]["clusterName"], "clusterapi.clusterName");
        assert!(!cluster.is_empty(), "the template requires clusterapi.clusterName with cloudProvider: clusterapi");
        let namespace = printed(&values["clusterapi"]["namespace"], "clusterapi.namespace");
        let namespace = if namespace.is_empty() { String::new() } else { format!(",namespace={namespace}") };
        args.push(format!("--node-group-auto-discovery=clusterapi:clusterName={cluster}{namespace}"));
        if values["clusterapi"]["managementKubeconfigSecret"].as_str().is_some_and(|s| !s.is_empty()) {
            args.push(format!("--cloud-config={CLUSTERAPI_MANAGEMENT_MOUNT}/kubeconfig"));
        }
    }
    args.push(format!("--expander={}", printed(&values["expander"], "expander")));
    args.push(format!("--namespace={namespace}"));
    args.push(format!("--address=:{}", printed(&values["service"]["port"], "service.port")));
    args.push(format!("--leader-elect={}", printed(&values["leaderElect"], "leaderElect")));
    args.push(format!(
        "--horizontal-pod-autoscaler-mode={}",
        printed(&values["podAutoscalers"]["horizontal"], "podAutoscalers.horizontal")
    ));
    args.push(format!(
        "--watermark-pod-autoscaler-mode={}",
        printed(&values["podAutoscalers"]["watermark"], "podAutoscalers.watermark")
    ));
    // Go templates range over a map in key order.
    let extra: BTreeMap<String, Value> = serde_json::from_value(values["extraArgs"].clone()).expect("a map");
    for (key, value) in &extra {
        args.push(format!("--{key}={}", printed(value, &format!("extraArgs.{key}"))));
    }
    args
}

/// The flag names a template line passes literally (`- --name=…`); `{{ $key }}` for the
/// extraArgs loop.
fn template_flag_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("- --"))
        .map(|flag| flag.split('=').next().unwrap().to_string())
        .collect()
}

#[test]
fn chart_metadata_is_a_helm_3_application_chart_of_the_manifests_image() {
    let chart = yaml_value(&read(&format!("{CHART}/Chart.yaml")), "Chart.yaml");
    assert_eq!(chart["apiVersion"], "v2", "Helm 3 charts are apiVersion v2");
    assert_eq!(chart["name"], "cluster-autoscaler", "named as its directory");
    assert_eq!(chart["type"], "application");
    let version = chart["version"].as_str().expect("a version string");
    let parts: Vec<&str> = version.split(['-', '+']).next().unwrap().split('.').collect();
    assert!(parts.len() == 3 && parts.iter().all(|p| p.parse::<u64>().is_ok()), "SemVer 2 version: {version}");

    let manifests = load_manifests();
    let image = autoscaler_container(only(&manifests.deployments, "Deployment")).image.clone().unwrap();
    let (repository, tag) = image.rsplit_once(':').unwrap();
    assert_eq!(chart["appVersion"], tag, "the chart deploys the manifests' image version");
    let values = values();
    assert_eq!(values["image"]["repository"], repository);
    assert_eq!(repository, IMAGE_REPOSITORY);
    assert!(values["image"]["tag"] == "" || values["image"]["tag"] == tag, "the tag defaults to appVersion");
}

#[test]
fn every_values_reference_in_the_templates_exists_in_values_yaml() {
    let values = values();
    let references = all_values_references();
    assert!(references.len() > 20, "the templates use the values: {references:?}");
    for keys in references {
        let mut node = &values;
        for (depth, key) in keys.iter().enumerate() {
            node = match node {
                Value::Object(map) => map.get(key).unwrap_or_else(|| {
                    panic!(".Values.{} is used by a template but missing from values.yaml", keys[..=depth].join("."))
                }),
                _ => panic!(".Values.{}: {} is not a map in values.yaml", keys.join("."), keys[..depth].join(".")),
            };
        }
    }
}

#[test]
fn every_value_is_used_by_a_template() {
    let references = all_values_references();
    let mut leaves = Vec::new();
    leaf_paths(&values(), &mut Vec::new(), &mut leaves);
    for leaf in leaves {
        let used = references.iter().any(|reference| leaf.starts_with(reference));
        assert!(used, "values.yaml's {} is used by no template", leaf.join("."));
    }
}

#[test]
fn template_blocks_are_balanced_and_every_include_is_defined() {
    let mut defined = BTreeSet::new();
    let mut included = BTreeSet::new();
    for (name, text) in templates() {
        let mut depth: i32 = 0;
        for action in actions(&text) {
            if action.starts_with("/*") {
                assert!(action.ends_with("*/"), "{name}: a comment must fill its action: {action}");
                continue;
            }
            let keyword = action.split_whitespace().next().unwrap_or_default();
            match keyword {
                "if" | "range" | "with" | "define" | "block" => depth += 1,
                "end" => depth -= 1,
                _ => {}
            }
            assert!(depth >= 0, "{name}: an {{{{ end }}}} without a block");
            if keyword == "define" {
                defined.insert(action.split('"').nth(1).expect("a quoted template name").to_string());
            }
            for word in ["include \"", "template \""] {
                for piece in action.split(word).skip(1) {
                    included.insert(piece.split('"').next().unwrap().to_string());
                }
            }
        }
        assert_eq!(depth, 0, "{name}: unbalanced blocks");
    }
    for name in &included {
        assert!(defined.contains(name), "{name:?} is included but no template defines it");
    }
}

/// The literal `rules:` of the ClusterRole and the Role in `templates/rbac.yaml`: from `rules:`
/// to the first action or the end of the document. No action may sit inside them.
fn chart_rules(kind: &str) -> Vec<PolicyRule> {
    let text = template("rbac.yaml");
    let document = text
        .split("\n---\n")
        .find(|doc| doc.lines().any(|l| l == format!("kind: {kind}")))
        .unwrap_or_else(|| panic!("templates/rbac.yaml has no {kind}"));
    let rules: Vec<&str> =
        document.lines().skip_while(|l| *l != "rules:").take_while(|l| !l.trim_start().starts_with("{{")).collect();
    assert!(!rules.is_empty(), "the {kind} has rules");
    assert!(rules.iter().all(|l| !l.contains("{{")), "the {kind}'s rules are literal YAML");
    let value = yaml_value(&rules.join("\n"), &format!("templates/rbac.yaml {kind} rules"));
    strict(&value["rules"], &format!("templates/rbac.yaml {kind} rules"))
}

#[test]
fn chart_rbac_rules_are_the_manifests_rules() {
    let manifests = load_manifests();
    let cluster_role = only(&manifests.cluster_roles, "ClusterRole");
    let role = only(&manifests.roles, "Role");
    assert_eq!(Some(chart_rules("ClusterRole")), cluster_role.rules, "templates/rbac.yaml ClusterRole");
    assert_eq!(Some(chart_rules("Role")), role.rules, "templates/rbac.yaml Role");
    let rbac = template("rbac.yaml");
    for kind in ["ClusterRoleBinding", "RoleBinding"] {
        assert!(rbac.lines().any(|l| l == format!("kind: {kind}")), "templates/rbac.yaml has a {kind}");
    }
    assert!(rbac.contains(r#"name: {{ include "cluster-autoscaler.serviceAccountName" . }}"#));
    let extra: Vec<PolicyRule> = strict(&values()["rbac"]["extraClusterRoleRules"], "rbac.extraClusterRoleRules");
    assert!(extra.is_empty(), "nothing beyond the table by default");
}

#[test]
fn chart_template_passes_the_flags_the_test_renders() {
    let in_template = template_flag_names(&template("deployment.yaml"));
    // The defaults, and the flags only cloudProvider: aws or clusterapi renders.
    let mut rendered: BTreeSet<String> = rendered_args(&values(), "kube-system")
        .into_iter()
        .chain(rendered_args(&aws_values(), "kube-system"))
        .chain(rendered_args(&super::clusterapi::chart_values(true), "kube-system"))
        .map(|arg| arg.trim_start_matches("--").split('=').next().unwrap().to_string())
        .collect();
    let extra: BTreeMap<String, Value> = serde_json::from_value(values()["extraArgs"].clone()).unwrap();
    rendered.retain(|name| !extra.contains_key(name));
    rendered.insert("{{ $key }}".into());
    assert_eq!(in_template, rendered, "templates/deployment.yaml's args and rendered_args() differ");
}

#[test]
fn chart_default_values_make_flags_the_binary_accepts() {
    let values = values();
    let args = rendered_args(&values, "kube-system");
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("the chart's default args {args:?}: {e}"));
    let flags = &run.flags;
    assert_eq!(flags.cloud_provider, "static");
    assert_eq!(flags.nodes, ["1:10:general"]);
    assert_eq!(flags.expander, "least-waste");
    assert!(run.leader_elect);
    assert_eq!(run.flags.namespace, "kube-system", "--namespace is the release namespace");
    assert!(autoscaler::compose::builtin_providers().contains(&flags.cloud_provider));

    let cloud_config = values["cloudConfig"].as_str().expect("cloudConfig is inline YAML text");
    let config = StaticConfig::from_yaml_str_with_nodes(cloud_config, "values.yaml cloudConfig", &flags.nodes)
        .unwrap_or_else(|e| panic!("{e}"));
    let general = config.node_groups.iter().find(|g| g.id == "general").expect("the group `general`");
    assert_eq!((general.min_size, general.max_size), (1, 10));

    let replicas = values["replicaCount"].as_i64().expect("replicaCount is a number");
    assert!(replicas == 1 || values["leaderElect"] == true, "more than one replica needs leaderElect");

    // The same settings with extraArgs of every value type a user writes.
    let mut custom = values.clone();
    custom["extraArgs"] = serde_json::json!({
        "scale-down-utilization-threshold": 0.6,
        "balance-similar-node-groups": true,
        "max-nodes-total": 100,
        "scale-down-unneeded-time": "5m",
    });
    parse_flags(&rendered_args(&custom, "autoscaling")).unwrap_or_else(|e| panic!("typed extraArgs: {e}"));
    custom["extraArgs"] = serde_json::json!({"scale-down-unneded-time": "5m"});
    assert!(parse_flags(&rendered_args(&custom, "autoscaling")).is_err(), "a misspelled extraArgs key fails");
}

#[test]
fn chart_values_are_valid_kubernetes_fields_matching_the_manifests() {
    let values = values();
    let manifests = load_manifests();
    let deployment = only(&manifests.deployments, "Deployment");
    let spec = pod_spec(deployment);
    let container = autoscaler_container(deployment);

    let pod_security: PodSecurityContext = strict(&values["podSecurityContext"], "podSecurityContext");
    assert_eq!(Some(pod_security), spec.security_context);
    let container_security: SecurityContext = strict(&values["containerSecurityContext"], "containerSecurityContext");
    assert_eq!(Some(container_security), container.security_context);
    let resources: ResourceRequirements = strict(&values["resources"], "resources");
    assert_eq!(Some(resources), container.resources);
    assert_eq!(values["priorityClassName"].as_str(), spec.priority_class_name.as_deref());
    let node_selector: BTreeMap<String, String> = strict(&values["nodeSelector"], "nodeSelector");
    assert_eq!(Some(node_selector), spec.node_selector);
    let _: Vec<Toleration> = strict(&values["tolerations"], "tolerations");
    let _: Affinity = strict(&values["affinity"], "affinity");
    let _: Vec<LocalObjectReference> = strict(&values["imagePullSecrets"], "imagePullSecrets");
    let _: BTreeMap<String, String> = strict(&values["podAnnotations"], "podAnnotations");
    let _: BTreeMap<String, String> = strict(&values["podLabels"], "podLabels");
    let max_unavailable: IntOrString = strict(&values["podDisruptionBudget"]["maxUnavailable"], "maxUnavailable");
    assert_eq!(max_unavailable, IntOrString::Int(1));
    assert_eq!(values["service"]["port"], 8085, "upstream's --address port");

    let probe = container.liveness_probe.as_ref().unwrap();
    for (key, field) in [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("periodSeconds", probe.period_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("failureThreshold", probe.failure_threshold),
    ] {
        assert_eq!(values["livenessProbe"][key].as_i64(), field.map(i64::from), "livenessProbe.{key}");
    }
}

#[test]
fn chart_deployment_mounts_the_cloud_config_and_probes_the_health_check() {
    let deployment = template("deployment.yaml");
    assert!(deployment.contains(&format!("--cloud-config={CLOUD_CONFIG_MOUNT}/cloud-config.yaml")));
    assert!(deployment.contains(&format!("mountPath: {CLOUD_CONFIG_MOUNT}\n")));
    assert!(deployment.contains(r#"name: {{ include "cluster-autoscaler.fullname" . }}-cloud-config"#));
    assert!(deployment.contains("path: /health-check\n            port: http-metrics"));
    assert!(deployment.contains("- name: http-metrics\n          containerPort: {{ .Values.service.port }}"));
    assert!(deployment.contains("serviceAccountName: {{ include \"cluster-autoscaler.serviceAccountName\" . }}"));
    let config_map = template("configmap.yaml");
    assert!(config_map.contains(r#"name: {{ include "cluster-autoscaler.fullname" . }}-cloud-config"#));
    assert!(config_map.contains("  cloud-config.yaml: |\n    {{- .Values.cloudConfig | nindent 4 }}"));
    let pdb = template("poddisruptionbudget.yaml");
    assert!(pdb.contains("apiVersion: policy/v1\n"));
    assert!(pdb.contains(r#"{{- include "cluster-autoscaler.selectorLabels" . | nindent 6 }}"#));
    assert!(deployment.contains(r#"{{- include "cluster-autoscaler.selectorLabels" . | nindent 8 }}"#));
}

/// The default values switched to `cloudProvider: aws`, as deploy/README.md shows.
fn aws_values() -> Value {
    let mut values = values();
    values["cloudProvider"] = "aws".into();
    values["cloudConfig"] = "".into();
    values["nodeGroups"] = serde_json::json!([]);
    values["aws"]["clusterName"] = "prod".into();
    values["aws"]["region"] = "eu-west-1".into();
    values["aws"]["roleArn"] = "arn:aws:iam::111122223333:role/cluster-autoscaler".into();
    values
}

#[test]
fn chart_aws_values_make_the_discovery_flags_the_region_and_the_irsa_annotation() {
    let defaults = values();
    assert_eq!(defaults["aws"]["clusterName"], "", "no cluster is assumed");
    assert_eq!(defaults["aws"]["useStaticInstanceList"], false, "upstream's default");
    let values = aws_values();
    let args = rendered_args(&values, "kube-system");
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("the chart's aws args {args:?}: {e}"));
    assert_eq!(run.flags.cloud_provider, "aws");
    assert!(run.flags.nodes.is_empty() && run.flags.cloud_config.is_empty());
    assert_eq!(
        run.flags.node_group_auto_discovery,
        ["asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod"]
    );
    assert!(!run.flags.aws_use_static_instance_list);
    assert!(autoscaler::compose::builtin_providers().contains("aws"));

    let deployment = template("deployment.yaml");
    assert!(deployment.contains(
        "{{- if and (eq .Values.cloudProvider \"aws\") .Values.aws.region }}\n        env:\n        - name: AWS_REGION\n          value: {{ .Values.aws.region | quote }}"
    ));
    assert!(
        deployment
            .contains("{{ required \"aws.clusterName is required with cloudProvider: aws\" .Values.aws.clusterName }}")
    );
    let service_account = template("serviceaccount.yaml");
    assert!(service_account.contains("eks.amazonaws.com/role-arn: {{ . | quote }}"));
    assert!(service_account.contains("{{- if or .Values.serviceAccount.annotations .Values.aws.roleArn }}"));
}
