//! What moto cannot produce, with `aws-smithy-mocks` answering for AWS: failed scaling
//! activities (placeholders marked out of resources and removed by lowering the desired
//! capacity), a `ValidationError`, throttling retried by the SDK, and the
//! `aws_request_duration_seconds` metric.

use std::time::{Duration, SystemTime};

use aws_config::{BehaviorVersion, Region};
use aws_sdk_autoscaling::Client as Autoscaling;
use aws_sdk_autoscaling::config::{Credentials, SharedCredentialsProvider};
use aws_sdk_autoscaling::error::ErrorMetadata;
use aws_sdk_autoscaling::operation::describe_auto_scaling_groups::{
    DescribeAutoScalingGroupsError, DescribeAutoScalingGroupsOutput,
};
use aws_sdk_autoscaling::operation::describe_scaling_activities::DescribeScalingActivitiesOutput;
use aws_sdk_autoscaling::operation::set_desired_capacity::{SetDesiredCapacityError, SetDesiredCapacityOutput};
use aws_sdk_autoscaling::types::{Activity, AutoScalingGroup, Instance, LifecycleState, ScalingActivityStatusCode};
use aws_smithy_mocks::{MockResponseInterceptor, Rule, RuleMode, create_mock_http_client, mock};
use aws_smithy_types::DateTime;
use aws_smithy_types::retry::RetryConfig;
use cloudprovider::{CloudProvider, CloudProviderError, InstanceErrorClass, InstanceState, ResourceLimiter};
use cloudprovider_aws::config::StaticAsg;
use cloudprovider_aws::{AwsClients, AwsCloudProvider, Settings};
use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const ZONE: &str = "us-east-1a";

/// Clients answered by `rules` (any order, each until exhausted), never reaching a network,
/// with the SDK's standard retry strategy on a millisecond backoff.
fn clients(autoscaling: &[&Rule], ec2: &[&Rule]) -> AwsClients {
    let mut asg_mocks = MockResponseInterceptor::new().rule_mode(RuleMode::MatchAny);
    for rule in autoscaling {
        asg_mocks = asg_mocks.with_rule(rule);
    }
    let mut ec2_mocks = MockResponseInterceptor::new().rule_mode(RuleMode::MatchAny);
    for rule in ec2 {
        ec2_mocks = ec2_mocks.with_rule(rule);
    }
    let credentials = SharedCredentialsProvider::new(Credentials::new("test", "test", None, None, "mock"));
    let retry = RetryConfig::standard().with_initial_backoff(Duration::from_millis(1));
    let asg = aws_sdk_autoscaling::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials.clone())
        .http_client(create_mock_http_client())
        .retry_config(retry.clone())
        .interceptor(asg_mocks);
    let ec2 = aws_sdk_ec2::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials)
        .http_client(create_mock_http_client())
        .retry_config(retry)
        .interceptor(ec2_mocks);
    AwsClients::new(asg, ec2, false)
}

fn provider(clients: AwsClients) -> AwsCloudProvider {
    let settings = Settings {
        static_asgs: vec![StaticAsg { name: "gpu".into(), min: 0, max: 5 }],
        region: "us-east-1".into(),
        use_static_instance_list: true,
        ..Default::default()
    };
    AwsCloudProvider::new(clients, settings, ResourceLimiter::default())
}

/// The ASG `gpu` with `desired` capacity and `instances` instances.
fn asg(desired: i32, instances: usize) -> AutoScalingGroup {
    let mut builder = AutoScalingGroup::builder()
        .auto_scaling_group_name("gpu")
        .min_size(0)
        .max_size(5)
        .desired_capacity(desired)
        .availability_zones(ZONE);
    for i in 0..instances {
        builder = builder.instances(
            Instance::builder()
                .instance_id(format!("i-gpu{i}"))
                .availability_zone(ZONE)
                .lifecycle_state(LifecycleState::InService)
                .build(),
        );
    }
    builder.build()
}

fn described(group: AutoScalingGroup) -> DescribeAutoScalingGroupsOutput {
    DescribeAutoScalingGroupsOutput::builder().auto_scaling_groups(group).build()
}

fn fake_node(instance: &str) -> Node {
    let id = format!("aws:///{ZONE}/{instance}");
    Node {
        metadata: ObjectMeta { name: Some(id.clone()), ..Default::default() },
        spec: Some(NodeSpec { provider_id: Some(id), ..Default::default() }),
        status: None,
    }
}

#[tokio::test]
async fn a_failed_scaling_activity_marks_the_placeholders_and_deleting_them_lowers_the_desired_capacity() {
    // Desired 3, one instance: two placeholders. AWS could not launch (InsufficientInstanceCapacity).
    let describe = mock!(Autoscaling::describe_auto_scaling_groups).then_output(|| described(asg(3, 1)));
    let activities = mock!(Autoscaling::describe_scaling_activities).then_output(|| {
        DescribeScalingActivitiesOutput::builder()
            .activities(
                Activity::builder()
                    .activity_id("a-1")
                    .auto_scaling_group_name("gpu")
                    .cause("a user request update of AutoScalingGroup constraints to min: 0, max: 5, desired: 3")
                    .start_time(DateTime::from(SystemTime::now()))
                    .status_code(ScalingActivityStatusCode::Failed)
                    .status_message(
                        "We currently do not have sufficient g4dn.xlarge capacity (InsufficientInstanceCapacity)",
                    )
                    .build(),
            )
            .build()
    });
    let lowered = mock!(Autoscaling::set_desired_capacity)
        .match_requests(|r| r.auto_scaling_group_name() == Some("gpu") && r.desired_capacity() == Some(1))
        .then_output(|| SetDesiredCapacityOutput::builder().build());
    let provider = provider(clients(&[&describe, &activities, &lowered], &[]));
    provider.refresh().await.unwrap();
    let group = provider.node_groups().await.pop().unwrap();
    let instances = group.nodes().await.unwrap();
    assert_eq!(instances.len(), 3);
    assert_eq!(instances[0].status.as_ref().unwrap().error, None);
    for placeholder in &instances[1..] {
        assert!(placeholder.id.starts_with("aws:///us-east-1a/i-placeholder-gpu-"), "{}", placeholder.id);
        let status = placeholder.status.as_ref().unwrap();
        assert_eq!(status.state, InstanceState::Creating);
        let error = status.error.as_ref().expect("an out-of-resources error");
        assert_eq!(error.class, InstanceErrorClass::OutOfResources);
        assert_eq!(error.code, "placeholder-cannot-be-fulfilled");
        assert!(error.message.contains("InsufficientInstanceCapacity"), "{}", error.message);
    }
    // The core deletes each failed placeholder through a fake node named after it.
    let owner = provider.node_group_for_node(&fake_node("i-placeholder-gpu-1")).await.unwrap().unwrap();
    assert_eq!(owner.id(), "gpu");
    owner.delete_nodes(&[fake_node("i-placeholder-gpu-1")]).await.unwrap();
    assert_eq!(lowered.num_calls(), 1, "desired capacity lowered to the one instance that exists");
    assert_eq!(owner.target_size().await.unwrap(), 1);
    // The second placeholder is gone with the first: nothing more to call.
    owner.delete_nodes(&[fake_node("i-placeholder-gpu-2")]).await.unwrap();
    assert_eq!(lowered.num_calls(), 1);
}

#[tokio::test]
async fn without_a_failed_activity_placeholders_are_just_coming() {
    let describe = mock!(Autoscaling::describe_auto_scaling_groups).then_output(|| described(asg(2, 0)));
    let activities = mock!(Autoscaling::describe_scaling_activities)
        .then_output(|| DescribeScalingActivitiesOutput::builder().build());
    let provider = provider(clients(&[&describe, &activities], &[]));
    provider.refresh().await.unwrap();
    let instances = provider.node_groups().await.pop().unwrap().nodes().await.unwrap();
    assert_eq!(instances.len(), 2);
    assert!(instances.iter().all(|i| i.status.as_ref().unwrap().error.is_none()));
    assert_eq!(activities.num_calls(), 1);
}

#[tokio::test]
async fn a_validation_error_is_reported_with_its_code() {
    let describe = mock!(Autoscaling::describe_auto_scaling_groups).then_output(|| described(asg(1, 1)));
    let refused = mock!(Autoscaling::set_desired_capacity).then_error(|| {
        SetDesiredCapacityError::generic(
            ErrorMetadata::builder()
                .code("ValidationError")
                .message("New SetDesiredCapacity value 3 is above max value 2 for the AutoScalingGroup.")
                .build(),
        )
    });
    let provider = provider(clients(&[&describe, &refused], &[]));
    provider.refresh().await.unwrap();
    let group = provider.node_groups().await.pop().unwrap();
    match group.increase_size(2).await {
        Err(CloudProviderError::Cloud { code, message }) => {
            assert_eq!(code.as_deref(), Some("ValidationError"));
            assert!(message.starts_with("SetDesiredCapacity: ValidationError: New SetDesiredCapacity"), "{message}");
        }
        other => panic!("expected the AWS error, got {other:?}"),
    }
    assert_eq!(group.target_size().await.unwrap(), 1, "a refused change leaves the cache alone");
    assert_eq!(refused.num_calls(), 1, "a validation error is not retried");
}

#[tokio::test]
async fn terminating_instances_are_skipped_and_only_unfulfilled_capacity_is_decreased() {
    // Desired 4: one instance in service, one already terminating, two not launched yet.
    let group = || {
        let mut group = asg(4, 1);
        group.instances.get_or_insert_with(Vec::new).push(
            Instance::builder()
                .instance_id("i-leaving")
                .availability_zone(ZONE)
                .lifecycle_state(LifecycleState::TerminatingWait)
                .build(),
        );
        group
    };
    let describe = mock!(Autoscaling::describe_auto_scaling_groups).then_output(move || described(group()));
    let activities = mock!(Autoscaling::describe_scaling_activities)
        .then_output(|| DescribeScalingActivitiesOutput::builder().build());
    let terminate = mock!(Autoscaling::terminate_instance_in_auto_scaling_group)
        .match_requests(|r| r.instance_id() == Some("i-gpu0") && r.should_decrement_desired_capacity() == Some(true))
        .then_output(|| {
            aws_sdk_autoscaling::operation::terminate_instance_in_auto_scaling_group::TerminateInstanceInAutoScalingGroupOutput::builder().build()
        });
    let decreased = mock!(Autoscaling::set_desired_capacity)
        .match_requests(|r| r.desired_capacity() == Some(2))
        .then_output(|| SetDesiredCapacityOutput::builder().build());
    let provider = provider(clients(&[&describe, &activities, &terminate, &decreased], &[]));
    provider.refresh().await.unwrap();
    let group = provider.node_groups().await.pop().unwrap();
    let states: Vec<InstanceState> =
        group.nodes().await.unwrap().iter().map(|i| i.status.as_ref().unwrap().state).collect();
    assert_eq!(
        states,
        [InstanceState::Running, InstanceState::Deleting, InstanceState::Creating, InstanceState::Creating]
    );

    // Only the two placeholders may go: 4 - 3 would touch an instance.
    let refused = group.decrease_target_size(-3).await.unwrap_err().to_string();
    assert_eq!(refused, "attempt to delete existing nodes targetSize:4 delta:-3 existingNodes: 2");
    group.decrease_target_size(-2).await.unwrap();
    assert_eq!(decreased.num_calls(), 1);
    assert_eq!(group.target_size().await.unwrap(), 2);

    // The terminating instance is skipped; the other is terminated with the desired capacity.
    group.delete_nodes(&[fake_node("i-gpu0"), fake_node("i-leaving")]).await.unwrap();
    assert_eq!(terminate.num_calls(), 1);
    assert_eq!(group.target_size().await.unwrap(), 1);
}

fn throttled() -> DescribeAutoScalingGroupsError {
    DescribeAutoScalingGroupsError::generic(
        ErrorMetadata::builder().code("Throttling").message("Rate exceeded").build(),
    )
}

#[tokio::test]
async fn throttling_is_retried_by_the_sdk_and_timed_in_the_metric() {
    // Two throttled answers, then the groups: the SDK's standard retry (3 attempts) gets there.
    let describe = mock!(Autoscaling::describe_auto_scaling_groups)
        .sequence()
        .error(throttled)
        .times(2)
        .output(|| described(asg(1, 1)))
        .build();
    let provider = provider(clients(&[&describe], &[]));
    provider.refresh().await.unwrap();
    assert_eq!(describe.num_calls(), 3);
    assert_eq!(provider.api_stats().count("DescribeAutoScalingGroups"), 1, "one operation, three attempts");

    // Throttled throughout: the refresh fails with AWS's code after the SDK gives up.
    let always = mock!(Autoscaling::describe_auto_scaling_groups).sequence().error(throttled).times(3).build();
    let failing = provider_with_rules(&[&always]);
    match failing.refresh().await {
        Err(CloudProviderError::Cloud { code, .. }) => assert_eq!(code.as_deref(), Some("Throttling")),
        other => panic!("expected throttling, got {other:?}"),
    }
    assert_eq!(always.num_calls(), 3);

    let text = |provider: &AwsCloudProvider| {
        let mut registry = prometheus_client::registry::Registry::with_prefix("cluster_autoscaler");
        provider.register_metrics(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    };
    let ok = text(&provider);
    assert!(ok.contains("# TYPE cluster_autoscaler_aws_request_duration_seconds histogram"), "{ok}");
    assert!(
        ok.contains(r#"cluster_autoscaler_aws_request_duration_seconds_count{endpoint="DescribeAutoScalingGroups",status="success"} 1"#),
        "{ok}"
    );
    let failed = text(&failing);
    assert!(
        failed.contains(r#"cluster_autoscaler_aws_request_duration_seconds_count{endpoint="DescribeAutoScalingGroups",status="Throttling"} 1"#),
        "{failed}"
    );
}

fn provider_with_rules(rules: &[&Rule]) -> AwsCloudProvider {
    provider(clients(rules, &[]))
}
