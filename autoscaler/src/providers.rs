//! Building the cloud provider named by `--cloud-provider`.

use std::path::Path;
use std::sync::Arc;

use cloudprovider::static_provider::{StaticCloudProvider, StaticConfig};
use cloudprovider::{CloudProvider, ResourceLimiter};
use k8s_openapi::api::core::v1::Node;

use crate::config::DecisionFlags;

/// Providers this binary is built with.
pub const AVAILABLE: &[&str] = &["static"];

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("--cloud-provider={0}: not available in this build (available: {available})", available = AVAILABLE.join(", "))]
    Unknown(String),
    #[error(transparent)]
    Static(#[from] cloudprovider::static_provider::ConfigError),
}

pub fn build(
    flags: &DecisionFlags,
    nodes: &[Node],
    limiter: ResourceLimiter,
) -> Result<Arc<StaticCloudProvider>, ProviderError> {
    match flags.cloud_provider.as_str() {
        "static" => {
            let path = (!flags.cloud_config.is_empty()).then(|| Path::new(&flags.cloud_config));
            let config = StaticConfig::load(path, &flags.nodes)?;
            Ok(Arc::new(StaticCloudProvider::new(config, nodes, limiter)?))
        }
        other => Err(ProviderError::Unknown(other.to_string())),
    }
}

/// The same, as a trait object.
pub fn build_dyn(
    flags: &DecisionFlags,
    nodes: &[Node],
    limiter: ResourceLimiter,
) -> Result<Arc<dyn CloudProvider>, ProviderError> {
    Ok(build(flags, nodes, limiter)?)
}
