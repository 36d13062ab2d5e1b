//! Upstream Cluster Autoscaler's external gRPC cloud provider protocol
//! (`clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider`), both sides:
//!
//! - the client, `--cloud-provider=externalgrpc` ([`build`], [`ExternalGrpcCloudProvider`]): node
//!   groups served by any upstream-compatible provider service, with upstream's cloud-config
//!   ([`config`]) and caching rules;
//! - the server ([`server`]): any [`cloudprovider::CloudProvider`] served over the protocol, for
//!   upstream's Go autoscaler or this project's client.
//!
//! Nodes and pods that the protocol carries as bytes (`nodeBytes`, `pod_bytes`) use the Kubernetes
//! protobuf encoding ([`k8s_protobuf`]), as Go's `Marshal()` writes it. The protocol's
//! definition is `proto/externalgrpc.proto`; code for both sides is generated at build time.

mod client;
pub mod config;
mod convert;
pub mod server;

use std::sync::Arc;

use cloudprovider::{BuildError, BuildResult, ProviderContext};

pub use client::{ExternalGrpcCloudProvider, ExternalGrpcNodeGroup};
pub use config::ExternalGrpcConfig;
pub use convert::{ERROR_CLASS_OTHER, ERROR_CLASS_OUT_OF_RESOURCES};

/// The generated messages, client and server.
pub mod proto {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("clusterautoscaler.cloudprovider.v1.externalgrpc");
}

/// The `--cloud-provider` name, upstream's.
pub const PROVIDER_NAME: &str = "externalgrpc";

/// `--cloud-provider=externalgrpc`: the provider service named by `--cloud-config`.
///
/// Only reads the configuration and its certificate files; the connection is made on the first
/// call, so a service that is down at start-up does not stop the autoscaler (each loop reports
/// the failure and tries again). Node groups come from the service: `--nodes` and
/// `--node-group-auto-discovery` are refused.
pub async fn build(context: ProviderContext) -> BuildResult {
    context.refuse_auto_discovery()?;
    if let Some(spec) = context.node_group_specs.first() {
        return Err(BuildError::Config(format!(
            "--nodes={spec}: the externalgrpc provider's node groups come from the provider service, not --nodes"
        )));
    }
    let path = context.require_cloud_config()?;
    let config = ExternalGrpcConfig::from_file(path).map_err(|e| BuildError::Config(e.to_string()))?;
    let provider = ExternalGrpcCloudProvider::new(&config, context.resource_limiter.clone()).map_err(|e| match e {
        BuildError::Config(message) => BuildError::Config(format!("{}: {message}", path.display())),
        other => other,
    })?;
    Ok(Arc::new(provider))
}
