//! The aws provider against a real AWS API server: moto in server mode, one per test, started
//! by the test (see `tests::moto`). Static and discovered groups, scaling up and down through
//! the SDK, scale from zero from launch templates with tags, a mixed-instances ASG, min/max
//! enforcement, unknown groups, plan's read-only mode, and the calls one loop makes.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cloudprovider::{CloudProvider, CloudProviderError, InstanceState, NodeGroup, NodeGroupAutoscalingOptions};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use support::*;
use tests::moto::MotoServer;

async fn group(provider: &dyn CloudProvider, id: &str) -> Arc<dyn NodeGroup> {
    let groups = provider.node_groups().await;
    let ids: Vec<String> = groups.iter().map(|g| g.id().to_string()).collect();
    groups.into_iter().find(|g| g.id() == id).unwrap_or_else(|| panic!("no group {id} among {ids:?}"))
}

async fn ids(provider: &dyn CloudProvider) -> Vec<String> {
    provider.node_groups().await.iter().map(|g| g.id().to_string()).collect()
}

fn invalid(result: cloudprovider::Result<()>) -> String {
    match result {
        Err(CloudProviderError::InvalidRequest(message)) => message,
        other => panic!("expected an invalid request, got {other:?}"),
    }
}

#[tokio::test]
async fn static_groups_take_the_flag_bounds_and_unknown_groups_are_not_groups() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.launch_template("nodes", "m5.large").await;
    aws.asg("web", "nodes", "$Default", (0, 10, 2), &[]).await;
    let provider = provider(&moto, &[("web", 1, 5), ("missing", 0, 3)], &[]);
    provider.refresh().await.unwrap();
    assert_eq!(ids(&provider).await, ["web"], "an ASG that does not exist is no group");
    let web = group(&provider, "web").await;
    assert_eq!((web.min_size(), web.max_size()), (1, 5), "--nodes bounds win over the ASG's 0:10");
    assert_eq!(web.target_size().await.unwrap(), 2);
    assert_eq!(web.debug(), "web (1:5)");

    // Nodes map to groups by providerID; other providerIDs are not the provider's.
    let (_, instances) = aws.state("web").await;
    let node = node_for(&instances[0]);
    let owner = provider.node_group_for_node(&node).await.unwrap().expect("the instance's group");
    assert_eq!(owner.id(), "web");
    assert!(provider.has_instance(&node).await.unwrap());
    for foreign in ["gce://project/zone/name", "aws:///us-east-1a/i-unknown", ""] {
        let node = node_with_provider_id("other", foreign);
        assert!(provider.node_group_for_node(&node).await.unwrap().is_none(), "{foreign:?}");
    }
    let instances = web.nodes().await.unwrap();
    assert_eq!(instances.len(), 2);
    assert!(instances.iter().all(|i| i.id.starts_with("aws:///us-east-1a/i-")));
    assert!(instances.iter().all(|i| i.status.as_ref().unwrap().state == InstanceState::Running));

    // The ASG goes away: a static group stays (last known state), a stale handle still answers.
    aws.delete_asg("web").await;
    provider.refresh().await.unwrap();
    assert_eq!(ids(&provider).await, ["web"]);
}

#[tokio::test]
async fn discovery_needs_every_tag_merges_specs_and_drops_vanished_groups() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.launch_template("nodes", "m5.large").await;
    aws.asg("both", "nodes", "$Default", (0, 4, 0), &[(ENABLED_TAG, ""), (CLUSTER_TAG, "owned")]).await;
    aws.asg("enabled-only", "nodes", "$Default", (0, 4, 0), &[(ENABLED_TAG, "")]).await;
    aws.asg("other-team", "nodes", "$Default", (0, 4, 0), &[(ENABLED_TAG, ""), (CLUSTER_TAG, "owned"), ("team", "ml")])
        .await;
    aws.asg(
        "data-team",
        "nodes",
        "$Default",
        (1, 6, 1),
        &[(ENABLED_TAG, ""), (CLUSTER_TAG, "owned"), ("team", "data")],
    )
    .await;
    // Two `asg:tag=` specs, merged: every tag of both must match.
    let specs = [
        "asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/test-cluster".to_string(),
        "asg:tag=team=data".to_string(),
    ];
    let discovery = cloudprovider_aws::config::parse_discovery_specs(&specs).unwrap();
    let merged = provider_with(&moto, &[], &[], |s| s.discovery = discovery);
    merged.refresh().await.unwrap();
    assert_eq!(ids(&merged).await, ["data-team"]);
    let data = group(&merged, "data-team").await;
    assert_eq!((data.min_size(), data.max_size()), (1, 6), "discovered groups keep the ASG's bounds");

    // Key-only discovery finds the ASGs carrying both keys, whatever their values.
    let provider = provider(&moto, &[], &[(ENABLED_TAG, None), (CLUSTER_TAG, None)]);
    provider.refresh().await.unwrap();
    assert_eq!(ids(&provider).await, ["both", "data-team", "other-team"]);
    // A discovered ASG that vanishes is dropped at the next refresh (by name, within the minute).
    aws.delete_asg("other-team").await;
    provider.refresh().await.unwrap();
    assert_eq!(ids(&provider).await, ["both", "data-team"]);
}

#[tokio::test]
async fn scale_up_and_down_through_the_sdk_within_min_and_max() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.launch_template("nodes", "m5.large").await;
    aws.asg("web", "nodes", "$Default", (1, 4, 1), &[(ENABLED_TAG, "")]).await;
    let provider = provider(&moto, &[], &[(ENABLED_TAG, None)]);
    provider.refresh().await.unwrap();
    let web = group(&provider, "web").await;

    // Above max is refused here (moto, unlike AWS, would accept it) and changes nothing.
    assert_eq!(invalid(web.increase_size(4).await), "size increase too large - desired:5 max:4");
    assert_eq!(aws.state("web").await.0, 1);
    assert!(invalid(web.increase_size(0).await).contains("positive"));
    web.increase_size(2).await.unwrap();
    assert_eq!(aws.state("web").await.0, 3, "SetDesiredCapacity reached AWS");
    assert_eq!(web.target_size().await.unwrap(), 3);
    provider.refresh().await.unwrap();
    let (_, instances) = aws.state("web").await;
    assert_eq!(instances.len(), 3);
    assert_eq!(web.nodes().await.unwrap().len(), 3);

    // Only the part no instance backs could go; moto launches at once, so none can.
    let message = invalid(web.decrease_target_size(-1).await);
    assert_eq!(message, "attempt to delete existing nodes targetSize:3 delta:-1 existingNodes: 3");

    // Scale-down: the instance is terminated and the desired capacity lowered.
    web.delete_nodes(&[node_for(&instances[0])]).await.unwrap();
    let (desired, left) = aws.state("web").await;
    assert_eq!(desired, 2);
    assert!(!left.contains(&instances[0]), "{left:?}");
    // All nodes of one call must be this group's.
    let message = invalid(web.delete_nodes(&[node_for("i-0000000000000000")]).await);
    assert!(message.contains("belongs to a different asg than web"), "{message}");
    // Below min is refused: 2 instances, min 1, deleting both.
    provider.refresh().await.unwrap();
    let web = group(&provider, "web").await;
    let nodes: Vec<_> = left.iter().map(|id| node_for(id)).collect();
    assert!(invalid(web.delete_nodes(&nodes).await).starts_with("min size reached"));
    web.delete_nodes(&nodes[..1]).await.unwrap();
    provider.refresh().await.unwrap();
    let web = group(&provider, "web").await;
    assert_eq!(invalid(web.delete_nodes(&nodes[1..]).await), "min size reached, nodes will not be deleted");
    assert_eq!(aws.state("web").await.0, 1);
}

#[tokio::test]
async fn scale_from_zero_uses_the_launch_template_version_and_the_asg_tags() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.launch_template("nodes", "m5.large").await;
    aws.launch_template_version("nodes", "c5.xlarge").await;
    let tags = [
        (ENABLED_TAG, ""),
        ("k8s.io/cluster-autoscaler/node-template/label/pool", "compute"),
        ("k8s.io/cluster-autoscaler/node-template/taint/dedicated", "compute:NoSchedule"),
        ("k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage", "100Gi"),
        ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownunneededtime", "2m"),
        ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownutilizationthreshold", "0.3"),
    ];
    aws.asg("latest", "nodes", "$Latest", (0, 5, 0), &tags).await;
    aws.asg("default", "nodes", "$Default", (0, 5, 0), &[(ENABLED_TAG, "")]).await;
    aws.asg("pinned", "nodes", "2", (0, 5, 0), &[(ENABLED_TAG, "")]).await;
    let provider = provider(&moto, &[], &[(ENABLED_TAG, None)]);
    provider.refresh().await.unwrap();

    let latest = group(&provider, "latest").await.template_node_info().await.unwrap().node;
    let labels = latest.metadata.labels.clone().unwrap();
    assert_eq!(labels["node.kubernetes.io/instance-type"], "c5.xlarge", "$Latest is version 2");
    assert_eq!(labels["kubernetes.io/arch"], "amd64");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["topology.kubernetes.io/region"], REGION);
    assert_eq!(labels["topology.kubernetes.io/zone"], ZONE);
    assert_eq!(labels["topology.ebs.csi.aws.com/zone"], ZONE);
    assert_eq!(labels["pool"], "compute");
    let taints = latest.spec.clone().unwrap().taints.unwrap();
    assert_eq!((taints[0].key.as_str(), taints[0].effect.as_str()), ("dedicated", "NoSchedule"));
    let capacity = latest.status.clone().unwrap().capacity.unwrap();
    assert_eq!(capacity["cpu"], Quantity("4".into()));
    assert_eq!(capacity["memory"], Quantity("8192Mi".into()));
    assert_eq!(capacity["pods"], Quantity("58".into()), "c5.xlarge: 4 ENIs × (15 − 1) + 2");
    assert_eq!(capacity["ephemeral-storage"], Quantity("100Gi".into()));

    let default_type = |node: k8s_openapi::api::core::v1::Node| {
        node.metadata.labels.unwrap()["node.kubernetes.io/instance-type"].clone()
    };
    let default = group(&provider, "default").await.template_node_info().await.unwrap().node;
    assert_eq!(default_type(default), "m5.large", "$Default is version 1");
    let pinned = group(&provider, "pinned").await.template_node_info().await.unwrap().node;
    assert_eq!(default_type(pinned), "c5.xlarge");

    let defaults = NodeGroupAutoscalingOptions::default();
    let options = group(&provider, "latest").await.get_options(&defaults).await.unwrap().unwrap();
    assert_eq!(options.scale_down_unneeded_time, Duration::from_secs(120));
    assert_eq!(options.scale_down_utilization_threshold, 0.3);
    assert_eq!(options.scale_down_unready_time, defaults.scale_down_unready_time);
    assert_eq!(group(&provider, "default").await.get_options(&defaults).await.unwrap(), None);

    // The price expander prices the template by its instance type.
    let pricing = provider.pricing().unwrap();
    let start = k8s_openapi::jiff::Timestamp::UNIX_EPOCH;
    let hour = start + k8s_openapi::jiff::SignedDuration::from_hours(1);
    assert!((pricing.node_price(&latest, start, hour).unwrap() - 0.17).abs() < 1e-9, "c5.xlarge at $0.17/h");
}

#[tokio::test]
async fn a_mixed_instances_asg_uses_its_first_override() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.launch_template("nodes", "m5.large").await;
    aws.mixed_asg("mixed", "nodes", &["c5.2xlarge", "m5.2xlarge"], (0, 3, 0)).await;
    let provider = provider(&moto, &[("mixed", 0, 3)], &[]);
    provider.refresh().await.unwrap();
    let node = group(&provider, "mixed").await.template_node_info().await.unwrap().node;
    assert_eq!(node.metadata.labels.unwrap()["node.kubernetes.io/instance-type"], "c5.2xlarge");
    assert_eq!(node.status.unwrap().capacity.unwrap()["cpu"], Quantity("8".into()));
}

#[tokio::test]
async fn a_launch_configuration_asg_scales_from_zero_too() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.autoscaling
        .create_launch_configuration()
        .launch_configuration_name("legacy")
        .image_id("ami-12c6146b")
        .instance_type("t3.large")
        .send()
        .await
        .expect("CreateLaunchConfiguration");
    aws.autoscaling
        .create_auto_scaling_group()
        .auto_scaling_group_name("legacy")
        .launch_configuration_name("legacy")
        .min_size(0)
        .max_size(2)
        .desired_capacity(0)
        .availability_zones(ZONE)
        .send()
        .await
        .expect("CreateAutoScalingGroup (launch configuration)");
    let provider = provider(&moto, &[("legacy", 0, 2)], &[]);
    provider.refresh().await.unwrap();
    let node = group(&provider, "legacy").await.template_node_info().await.unwrap().node;
    assert_eq!(node.metadata.labels.unwrap()["node.kubernetes.io/instance-type"], "t3.large");
    provider.refresh().await.unwrap();
    assert_eq!(provider.api_stats().count("DescribeLaunchConfigurations"), 1, "a launch configuration is read once");
}

#[tokio::test]
async fn plan_reads_and_never_changes_anything() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.launch_template("nodes", "m5.large").await;
    aws.asg("web", "nodes", "$Default", (0, 4, 1), &[(ENABLED_TAG, "")]).await;
    let provider = provider_with(&moto, &[], &[(ENABLED_TAG, None)], |s| s.read_only = true);
    provider.refresh().await.unwrap();
    let web = group(&provider, "web").await;
    assert!(web.template_node_info().await.is_ok());
    let (_, instances) = aws.state("web").await;
    for refused in [
        web.increase_size(1).await,
        web.delete_nodes(&[node_for(&instances[0])]).await,
        web.decrease_target_size(-1).await,
    ] {
        assert!(invalid(refused).contains("read-only"));
    }
    let calls = provider.api_stats().calls();
    assert!(calls.keys().all(|op| op.starts_with("Describe")), "only Describe calls in plan: {calls:?}");
    assert_eq!(aws.state("web").await, (1, instances));
}

/// One loop over 50 discovered ASGs: what `refresh` and the core's reads cost, and how many
/// calls they make. Prints the median loop time (not asserted: a measurement).
#[tokio::test]
async fn one_loop_over_fifty_discovered_asgs_calls_describe_auto_scaling_groups_once() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.launch_template("nodes", "m5.large").await;
    for i in 0..50 {
        aws.asg(&format!("pool-{i:02}"), "nodes", "$Default", (0, 10, 1), &[(ENABLED_TAG, ""), (CLUSTER_TAG, "")])
            .await;
    }
    let provider = provider(&moto, &[], &[(ENABLED_TAG, None), (CLUSTER_TAG, None)]);
    let stats = provider.api_stats();
    let mut durations = Vec::new();
    let loops = 7;
    for n in 0..loops {
        let before = stats.calls();
        let start = Instant::now();
        provider.refresh().await.unwrap();
        // What the core reads each loop (CloudState::gather), all from the cache.
        for g in provider.node_groups().await {
            g.target_size().await.unwrap();
            g.nodes().await.unwrap();
            g.template_node_info().await.unwrap();
            g.get_options(&NodeGroupAutoscalingOptions::default()).await.unwrap();
        }
        durations.push(start.elapsed());
        let after = stats.calls();
        let delta = |op: &str| after.get(op).copied().unwrap_or(0) - before.get(op).copied().unwrap_or(0);
        assert_eq!(delta("DescribeAutoScalingGroups"), 1, "loop {n}: {after:?}");
        let expected_type_calls = if n == 0 { 1 } else { 0 };
        assert_eq!(
            delta("DescribeInstanceTypes"),
            expected_type_calls,
            "loop {n}: instance types once, never per loop"
        );
        assert_eq!(delta("DescribeLaunchTemplateVersions"), expected_type_calls, "loop {n}: one template, read once");
        assert_eq!(delta("DescribeScalingActivities"), 0, "loop {n}: every desired instance exists");
    }
    assert_eq!(provider.node_groups().await.len(), 50);
    durations.sort();
    eprintln!(
        "one loop over 50 discovered ASGs against moto: median {:?} (min {:?}, max {:?}, {loops} loops, the first with the instance-type look-ups)",
        durations[loops / 2],
        durations[0],
        durations[loops - 1]
    );
}

#[tokio::test]
async fn the_static_instance_list_flag_never_asks_ec2_for_instance_types() {
    let moto = MotoServer::start();
    let aws = Aws::new(&moto);
    aws.launch_template("nodes", "m5.large").await;
    aws.asg("web", "nodes", "$Default", (0, 4, 0), &[]).await;
    let provider = provider_with(&moto, &[("web", 0, 4)], &[], |s| s.use_static_instance_list = true);
    provider.refresh().await.unwrap();
    provider.refresh().await.unwrap();
    let template = group(&provider, "web").await.template_node_info().await.unwrap();
    assert_eq!(template.node.status.unwrap().capacity.unwrap()["memory"], Quantity("8192Mi".into()));
    let stats = provider.api_stats();
    assert_eq!(stats.count("DescribeInstanceTypes"), 0);
    assert_eq!(stats.count("DescribeAutoScalingGroups"), 2, "static groups: one call per loop");
}
