//! `deploy/aws/`: the kustomize overlay for `--cloud-provider=aws`. Its JSON patches
//! are applied to the base manifests here (as kustomize would), and the result is checked as
//! the base is: strict Kubernetes types, flags the binary accepts, a provider that builds.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use serde_json::Value;

use super::{MANIFEST_DIR, autoscaler_container, parse_flags, read, strict, yaml_documents, yaml_value};

const OVERLAY: &str = "deploy/aws/kustomization.yaml";

/// The base document of `kind`, with the overlay's patches for it applied.
fn patched(kind: &str) -> Value {
    let overlay = yaml_value(&read(OVERLAY), OVERLAY);
    assert_eq!(overlay["resources"], serde_json::json!(["../kubernetes"]), "the overlay builds on deploy/kubernetes");
    let mut document = ["deployment.yaml", "serviceaccount.yaml"]
        .iter()
        .flat_map(|file| yaml_documents(&format!("{MANIFEST_DIR}/{file}")))
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in the base"));
    for patch in overlay["patches"].as_array().expect("the overlay has patches") {
        let target = &patch["target"];
        if target["kind"] != kind || target["name"] != document["metadata"]["name"] {
            continue;
        }
        let text = patch["patch"].as_str().expect("an inline patch");
        super::apply_json_patch(
            &mut document,
            &yaml_value(text, &format!("{OVERLAY} {kind} patch")),
            &format!("{OVERLAY} {kind}"),
        );
    }
    document
}

#[test]
fn the_aws_overlay_discovers_asgs_sets_the_region_and_the_irsa_role() {
    let deployment: Deployment = strict(&patched("Deployment"), "the aws overlay's Deployment");
    let container = autoscaler_container(&deployment);
    let args = container.args.clone().unwrap_or_default();
    let run = parse_flags(&args).unwrap_or_else(|e| panic!("the overlay's args {args:?}: {e}"));
    assert_eq!(run.flags.cloud_provider, "aws");
    assert!(run.flags.nodes.is_empty() && run.flags.cloud_config.is_empty(), "ASGs come from discovery: {args:?}");
    assert_eq!(
        run.flags.node_group_auto_discovery,
        ["asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/my-cluster"]
    );
    let env = container.env.clone().unwrap_or_default();
    assert!(env.iter().any(|e| e.name == "AWS_REGION" && e.value.as_deref() == Some("us-east-1")), "{env:?}");

    let account: ServiceAccount = strict(&patched("ServiceAccount"), "the aws overlay's ServiceAccount");
    let annotations = account.metadata.annotations.unwrap_or_default();
    assert!(annotations["eks.amazonaws.com/role-arn"].starts_with("arn:aws:iam::"), "{annotations:?}");

    // The flags build the provider (a configuration check: no AWS call).
    let options = autoscaler::config::AutoscalingOptions::from_flags(&run.flags).unwrap();
    let inputs = autoscaler::compose::ProviderInputs {
        purpose: cloudprovider::Purpose::Check,
        nodes: Vec::new(),
        now: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        kube: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let providers = autoscaler::compose::builtin_providers();
    let built = runtime.block_on(autoscaler::compose::compose(&providers, &run.flags, &options, inputs, None));
    let (provider, _) = built.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(provider.name(), "aws");
}
