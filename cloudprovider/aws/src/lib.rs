//! The `aws` cloud provider: node groups are EC2 Auto Scaling groups (ASGs), as upstream's.
//!
//! - **Groups**: `--nodes=<min>:<max>:<asg-name>` (the flag's bounds win over the ASG's) and
//!   `--node-group-auto-discovery=asg:tag=<key>[=<value>],…` (an ASG must carry every tag; the
//!   tags of several specs are merged into one set, as upstream). Discovery runs at most once a
//!   minute; between two, the known ASGs are described by name every loop. Discovered ASGs that
//!   vanish or stop matching are dropped; ASGs named with `--nodes` are kept.
//! - **Nodes ↔ instances**: by providerID `aws:///<zone>/<instance-id>`; other providerIDs
//!   are not this provider's.
//! - **Sizes**: target = DesiredCapacity; `IncreaseSize` → `SetDesiredCapacity`,
//!   `DeleteNodes` → `TerminateInstanceInAutoScalingGroup(ShouldDecrementDesiredCapacity)`,
//!   `DecreaseTargetSize` only over the capacity no instance backs. Bounds are checked here.
//! - **Placeholders** (`i-placeholder-<asg>-<i>`) stand for desired capacity without instances;
//!   a failed scaling activity since the last size change (e.g. `InsufficientInstanceCapacity`)
//!   marks them out of resources so the core backs the group off and removes them.
//! - **Scale from zero**: templates from the launch template (version resolved), launch
//!   configuration or mixed-instances policy (its first override's type, as upstream), the
//!   instance type's capacity, upstream's labels and the `k8s.io/cluster-autoscaler/node-template/…`
//!   tags ([`template`]).
//! - **Configuration**: the AWS SDK's standard chain (see [`client`]) plus upstream's gcfg
//!   cloud-config endpoint overrides ([`config`]).
//!
//! The factory follows the seam's contract: `Purpose::Check` parses flags and files only,
//! `Purpose::Plan` builds clients that refuse anything but `Describe…` calls.

pub mod asg;
pub mod client;
pub mod config;
pub mod error;
pub mod instance_types;
pub mod pricing;
pub mod provider;
pub mod state;
pub mod template;

use std::sync::Arc;

use aws_config::BehaviorVersion;
use cloudprovider::{BuildError, BuildResult, ProviderContext, Purpose};

pub use client::{ApiStats, AwsClients};
pub use config::{CloudConfig, StaticAsg};
pub use error::ConfigError;
pub use provider::{AwsCloudProvider, AwsNodeGroup, GPU_LABEL, PROVIDER_NAME, Settings};

/// The flags' and files' settings, checked (no I/O but reading `--cloud-config`).
pub fn settings_from_context(context: &ProviderContext) -> Result<(Settings, CloudConfig), ConfigError> {
    let static_asgs = config::parse_static_asgs(&context.node_group_specs)?;
    let discovery = config::parse_discovery_specs(&context.node_group_auto_discovery)?;
    if static_asgs.is_empty() && discovery.is_empty() {
        return Err(ConfigError::NoGroups);
    }
    let cloud_config = match &context.cloud_config {
        Some(path) => config::load_cloud_config(path)?,
        None => CloudConfig::default(),
    };
    let settings = Settings {
        static_asgs,
        discovery,
        use_static_instance_list: context.provider_options.aws_use_static_instance_list,
        read_only: context.purpose != Purpose::Controller,
        region: String::new(),
    };
    Ok((settings, cloud_config))
}

/// `--cloud-provider=aws`.
pub async fn build(context: ProviderContext) -> BuildResult {
    let (mut settings, cloud_config) =
        settings_from_context(&context).map_err(|e| BuildError::Config(e.to_string()))?;
    for key in &cloud_config.ignored_keys {
        tracing::info!(key = %key, "cloud-config key accepted for compatibility; it has no effect on the aws provider");
    }
    let clients = if context.purpose == Purpose::Check {
        // No I/O: clients that are never used (and would refuse any change).
        let latest = BehaviorVersion::latest();
        AwsClients::new(
            aws_sdk_autoscaling::config::Builder::new().behavior_version(latest),
            aws_sdk_ec2::config::Builder::new().behavior_version(latest),
            true,
        )
    } else {
        let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
        let Some(region) = sdk.region() else {
            return Err(BuildError::Config(
                "--cloud-provider=aws: no AWS region (set AWS_REGION, a profile's region, or run on EC2 with instance metadata)"
                    .to_string(),
            ));
        };
        settings.region = region.to_string();
        AwsClients::from_sdk_config(&sdk, &cloud_config, settings.read_only)
    };
    Ok(Arc::new(AwsCloudProvider::new(clients, settings, context.resource_limiter.clone())))
}
