//! Building the cloud provider named by `--cloud-provider`.
//!
//! - `static`: node groups from `--nodes` and a `--cloud-config` YAML file; target sizes in
//!   memory, nodes never created (for `plan`, tests and clusters whose nodes are managed by hand).
//! - `memory`: node groups as in a `simulate` scenario's `nodeGroups` (the `--cloud-config`
//!   file); new instances become Node objects after their provisioning delay and deleted ones
//!   disappear (the controller creates and deletes the Node objects, like upstream's kwok
//!   provider): an autoscaler you can watch at work on any cluster, with fake nodes.

use std::path::Path;
use std::sync::Arc;

use cloudprovider::memory::{MemoryCloudProvider, SharedTime};
use cloudprovider::static_provider::{StaticCloudProvider, StaticConfig};
use cloudprovider::{CloudProvider, ResourceLimiter};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;

use crate::config::{AutoscalingOptions, DecisionFlags};

/// Providers this binary is built with.
pub const AVAILABLE: &[&str] = &["static", "memory"];

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("--cloud-provider={0}: not available in this build (available: {available})", available = AVAILABLE.join(", "))]
    Unknown(String),
    #[error(transparent)]
    Static(#[from] cloudprovider::static_provider::ConfigError),
    #[error("--cloud-config: {0}")]
    Memory(String),
    #[error("--cloud-provider=memory needs --cloud-config with nodeGroups")]
    MemoryWithoutConfig,
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

/// A provider for the controller.
pub enum Built {
    Static(Arc<StaticCloudProvider>),
    /// The memory provider and its clock (advanced by the controller to the wall clock).
    Memory(Arc<MemoryCloudProvider>, SharedTime),
}

impl Built {
    pub fn provider(&self) -> Arc<dyn CloudProvider> {
        match self {
            Built::Static(p) => p.clone(),
            Built::Memory(p, _) => p.clone(),
        }
    }
}

/// Builds the provider for the controller (`static` or `memory`).
pub fn build_for_controller(
    flags: &DecisionFlags,
    options: &AutoscalingOptions,
    nodes: &[Node],
    now: Timestamp,
) -> Result<Built, ProviderError> {
    match flags.cloud_provider.as_str() {
        "memory" => {
            if flags.cloud_config.is_empty() {
                return Err(ProviderError::MemoryWithoutConfig);
            }
            let text = std::fs::read_to_string(&flags.cloud_config)
                .map_err(|e| ProviderError::Memory(format!("{}: {e}", flags.cloud_config)))?;
            let groups = crate::simulate::scenario::parse_node_groups(&text, &flags.cloud_config)
                .map_err(|e| ProviderError::Memory(e.to_string()))?;
            let mut config = crate::simulate::world::provider_config(&groups, &options.node_group_defaults)
                .map_err(|e| ProviderError::Memory(e.to_string()))?;
            config.resource_limiter = options.resource_limiter();
            let time = SharedTime::new(now);
            let provider =
                MemoryCloudProvider::new(config, time.clone()).map_err(|e| ProviderError::Memory(e.to_string()))?;
            Ok(Built::Memory(Arc::new(provider), time))
        }
        _ => Ok(Built::Static(build(flags, nodes, options.resource_limiter())?)),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        flags: DecisionFlags,
    }

    fn build_with(args: &[&str]) -> Result<Built, ProviderError> {
        let cli = Cli::try_parse_from(std::iter::once("ca").chain(args.iter().copied())).unwrap();
        let options = AutoscalingOptions::from_flags(&cli.flags).unwrap();
        build_for_controller(&cli.flags, &options, &[], Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn the_memory_example_builds_its_groups() {
        // Read at run time: a build cached from a clone at another path carries a stale
        // compile-time `CARGO_MANIFEST_DIR`.
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
        let path = format!("{dir}/../deploy/examples/memory-node-groups.yaml");
        let built = build_with(&["--cloud-provider=memory", &format!("--cloud-config={path}")]).unwrap();
        let Built::Memory(provider, _) = built else { panic!("a memory provider") };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let groups = runtime.block_on(provider.node_groups());
        let ids: Vec<String> = groups.iter().map(|g| g.id().to_string()).collect();
        assert_eq!(ids, ["general", "compute"]);
    }

    #[test]
    fn memory_without_cloud_config_and_unknown_providers_are_errors() {
        let err = build_with(&["--cloud-provider=memory"]).err().unwrap();
        assert!(err.to_string().contains("--cloud-config"), "{err}");
        let err = build_with(&["--cloud-provider=aws"]).err().unwrap();
        assert!(err.to_string().contains("--cloud-provider=aws"), "{err}");
    }

    #[test]
    fn a_bad_memory_cloud_config_names_the_file_and_field() {
        let dir = std::env::temp_dir().join(format!("providers-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("groups.yaml");
        std::fs::write(&path, "nodeGroups:\n  - id: g\n    minSize: 3\n    maxSize: 1\n    template: {}\n").unwrap();
        let err =
            build_with(&["--cloud-provider=memory", &format!("--cloud-config={}", path.display())]).err().unwrap();
        let text = err.to_string();
        assert!(text.contains("groups.yaml") && text.contains("minSize"), "{text}");
    }
}
