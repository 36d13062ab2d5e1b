//! Fixtures against moto: SDK clients for the test's own set-up calls, a launch template, ASGs
//! with tags, and the provider under test built on the same endpoint.

#![allow(dead_code)]

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_autoscaling::config::{Credentials, SharedCredentialsProvider};
use aws_sdk_autoscaling::types::{
    LaunchTemplate, LaunchTemplateOverrides, LaunchTemplateSpecification, MixedInstancesPolicy, Tag,
};
use aws_sdk_ec2::types::{InstanceType, RequestLaunchTemplateData};
use cloudprovider::ResourceLimiter;
use cloudprovider_aws::config::{DiscoveryTags, StaticAsg};
use cloudprovider_aws::{AwsClients, AwsCloudProvider, CloudConfig, Settings};
use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tests::moto::MotoServer;

pub const REGION: &str = "us-east-1";
pub const ZONE: &str = "us-east-1a";
pub const ENABLED_TAG: &str = "k8s.io/cluster-autoscaler/enabled";
pub const CLUSTER_TAG: &str = "k8s.io/cluster-autoscaler/test-cluster";

/// The SDK configuration a test uses for moto: static dummy credentials, the region, the
/// endpoint (what `AWS_ENDPOINT_URL` gives the binary).
pub fn sdk_config(moto: &MotoServer) -> SdkConfig {
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .endpoint_url(moto.endpoint())
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new("test", "test", None, None, "moto")))
        .build()
}

pub struct Aws {
    pub autoscaling: aws_sdk_autoscaling::Client,
    pub ec2: aws_sdk_ec2::Client,
}

impl Aws {
    pub fn new(moto: &MotoServer) -> Aws {
        let config = sdk_config(moto);
        Aws { autoscaling: aws_sdk_autoscaling::Client::new(&config), ec2: aws_sdk_ec2::Client::new(&config) }
    }

    /// A launch template with `instance_type`; returns its name.
    pub async fn launch_template(&self, name: &str, instance_type: &str) -> String {
        self.ec2
            .create_launch_template()
            .launch_template_name(name)
            .launch_template_data(
                RequestLaunchTemplateData::builder()
                    .image_id("ami-12c6146b")
                    .instance_type(InstanceType::from(instance_type))
                    .build(),
            )
            .send()
            .await
            .expect("CreateLaunchTemplate");
        name.to_string()
    }

    /// A new version of the template with another instance type.
    pub async fn launch_template_version(&self, name: &str, instance_type: &str) {
        self.ec2
            .create_launch_template_version()
            .launch_template_name(name)
            .launch_template_data(
                RequestLaunchTemplateData::builder()
                    .image_id("ami-12c6146b")
                    .instance_type(InstanceType::from(instance_type))
                    .build(),
            )
            .send()
            .await
            .expect("CreateLaunchTemplateVersion");
    }

    /// An ASG on `template` at `version` with these sizes and tags.
    pub async fn asg(
        &self,
        name: &str,
        template: &str,
        version: &str,
        (min, max, desired): (i32, i32, i32),
        tags: &[(&str, &str)],
    ) {
        self.autoscaling
            .create_auto_scaling_group()
            .auto_scaling_group_name(name)
            .launch_template(
                LaunchTemplateSpecification::builder().launch_template_name(template).version(version).build(),
            )
            .min_size(min)
            .max_size(max)
            .desired_capacity(desired)
            .availability_zones(ZONE)
            .set_tags(Some(tags.iter().map(|(k, v)| tag(name, k, v)).collect()))
            .send()
            .await
            .expect("CreateAutoScalingGroup");
    }

    /// A mixed-instances ASG with these override types.
    pub async fn mixed_asg(
        &self,
        name: &str,
        template: &str,
        overrides: &[&str],
        (min, max, desired): (i32, i32, i32),
    ) {
        let mut launch = LaunchTemplate::builder().launch_template_specification(
            LaunchTemplateSpecification::builder().launch_template_name(template).version("$Default").build(),
        );
        for t in overrides {
            launch = launch.overrides(LaunchTemplateOverrides::builder().instance_type(*t).build());
        }
        self.autoscaling
            .create_auto_scaling_group()
            .auto_scaling_group_name(name)
            .mixed_instances_policy(MixedInstancesPolicy::builder().launch_template(launch.build()).build())
            .min_size(min)
            .max_size(max)
            .desired_capacity(desired)
            .availability_zones(ZONE)
            .send()
            .await
            .expect("CreateAutoScalingGroup (mixed)");
    }

    /// (desired capacity, instance ids) of an ASG, as AWS has it now.
    pub async fn state(&self, name: &str) -> (i32, Vec<String>) {
        let answer = self
            .autoscaling
            .describe_auto_scaling_groups()
            .auto_scaling_group_names(name)
            .send()
            .await
            .expect("DescribeAutoScalingGroups");
        let group = answer.auto_scaling_groups().first().expect("the ASG exists");
        let ids = group.instances().iter().filter_map(|i| i.instance_id().map(str::to_string)).collect();
        (group.desired_capacity().unwrap_or_default(), ids)
    }

    pub async fn delete_asg(&self, name: &str) {
        self.autoscaling
            .delete_auto_scaling_group()
            .auto_scaling_group_name(name)
            .force_delete(true)
            .send()
            .await
            .expect("DeleteAutoScalingGroup");
    }
}

pub fn tag(asg: &str, key: &str, value: &str) -> Tag {
    Tag::builder()
        .resource_id(asg)
        .resource_type("auto-scaling-group")
        .key(key)
        .value(value)
        .propagate_at_launch(false)
        .build()
}

/// The provider on moto's endpoint, as `build` makes it from the SDK's standard configuration.
pub fn provider(
    moto: &MotoServer,
    statics: &[(&str, usize, usize)],
    discovery: &[(&str, Option<&str>)],
) -> AwsCloudProvider {
    provider_with(moto, statics, discovery, |_| {})
}

pub fn provider_with(
    moto: &MotoServer,
    statics: &[(&str, usize, usize)],
    discovery: &[(&str, Option<&str>)],
    change: impl FnOnce(&mut Settings),
) -> AwsCloudProvider {
    let mut settings = Settings {
        static_asgs: statics
            .iter()
            .map(|(name, min, max)| StaticAsg { name: name.to_string(), min: *min, max: *max })
            .collect(),
        discovery: discovery.iter().map(|(k, v)| (k.to_string(), v.map(str::to_string))).collect::<DiscoveryTags>(),
        region: REGION.to_string(),
        ..Default::default()
    };
    change(&mut settings);
    let clients = AwsClients::from_sdk_config(&sdk_config(moto), &CloudConfig::default(), settings.read_only);
    AwsCloudProvider::new(clients, settings, ResourceLimiter::default())
}

/// A Node registered for an instance, as the kubelet would name it.
pub fn node_for(instance_id: &str) -> Node {
    node_with_provider_id(instance_id, &format!("aws:///{ZONE}/{instance_id}"))
}

pub fn node_with_provider_id(name: &str, provider_id: &str) -> Node {
    Node {
        metadata: ObjectMeta { name: Some(name.to_string()), ..Default::default() },
        spec: Some(NodeSpec { provider_id: Some(provider_id.to_string()), ..Default::default() }),
        status: None,
    }
}
