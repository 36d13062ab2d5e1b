//! The composition root: the cloud provider `--cloud-provider` names and the expander
//! `--expander` names, built in one place for the controller (`run`), `plan` and `simulate`.
//!
//! Providers come from a [`ProviderRegistry`]: [`builtin_providers`] holds the ones this
//! repository ships, and a platform team adds its own before handing over to [`crate::cli::main`]
//! (see the README's "Your own provider"). The expander is checked against the provider (the
//! `price` expander needs the provider's pricing, as upstream exits at start-up without it).

use std::path::PathBuf;
use std::sync::Arc;

use cloudprovider::{BuildError, CloudProvider, ProviderContext, ProviderRegistry, Purpose};
use expander::{Expander, ExpanderName};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;

use crate::config::{AutoscalingOptions, DecisionFlags};

/// The providers this repository ships, by `--cloud-provider` name. Adding a provider is one
/// crate under `cloudprovider/` and one line here.
pub fn builtin_providers() -> ProviderRegistry {
    let mut registry = ProviderRegistry::new();
    registry.register(cloudprovider_static::PROVIDER_NAME, cloudprovider_static::build);
    registry.register(cloudprovider_memory::PROVIDER_NAME, cloudprovider_memory::build);
    registry.register(cloudprovider_aws::PROVIDER_NAME, cloudprovider_aws::build);
    registry.register(cloudprovider_externalgrpc::PROVIDER_NAME, cloudprovider_externalgrpc::build);
    registry.register(cloudprovider_clusterapi::PROVIDER_NAME, cloudprovider_clusterapi::build);
    registry
}

#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error(transparent)]
    Provider(#[from] BuildError),
    #[error("--expander={spec}: {message}")]
    Expander { spec: String, message: String },
    #[error("--expander=price needs a cloud provider with pricing, and {0} has none")]
    NoPricing(String),
    /// `--expander=grpc` without a usable `--grpc-expander-url` / `--grpc-expander-cert`
    /// (upstream exits at start-up too: it never talks to an expander without TLS).
    #[error("{0}")]
    GrpcExpander(String),
}

impl ComposeError {
    /// 2 for bad flags and files, 1 when a provider's dependency is out of reach.
    pub fn exit_code(&self) -> u8 {
        match self {
            ComposeError::Provider(e) => e.exit_code(),
            ComposeError::Expander { .. } | ComposeError::NoPricing(_) | ComposeError::GrpcExpander(_) => 2,
        }
    }
}

/// What the provider is built from besides the flags.
pub struct ProviderInputs {
    pub purpose: Purpose,
    /// The cluster's nodes (none for a configuration check).
    pub nodes: Vec<Node>,
    pub now: Timestamp,
    /// A client for the cluster, in the controller.
    pub kube: Option<kube::Client>,
}

/// Builds the provider `--cloud-provider` names, with the flags' provider settings.
pub async fn build_provider(
    registry: &ProviderRegistry,
    flags: &DecisionFlags,
    options: &AutoscalingOptions,
    inputs: ProviderInputs,
) -> Result<Arc<dyn CloudProvider>, BuildError> {
    let mut context = ProviderContext::new(flags.cloud_provider.clone(), inputs.purpose);
    context.cloud_config = (!flags.cloud_config.is_empty()).then(|| PathBuf::from(&flags.cloud_config));
    context.node_group_specs = flags.nodes.clone();
    context.node_group_auto_discovery = flags.node_group_auto_discovery.clone();
    context.node_group_defaults = options.node_group_defaults.clone();
    context.provider_options.aws_use_static_instance_list = flags.aws_use_static_instance_list;
    context.provider_options.cluster_name = flags.cluster_name.clone();
    context.provider_options.clusterapi_cloud_config_authoritative = flags.clusterapi_cloud_config_authoritative;
    context.resource_limiter = options.resource_limiter();
    context.nodes = inputs.nodes;
    context.now = inputs.now;
    context.kube = inputs.kube;
    registry.build(context).await
}

/// Builds the expander chain for `provider` (`seed` fixes the random tie-breaks, for `simulate`
/// and reproducible plans).
pub fn build_expander(
    options: &AutoscalingOptions,
    provider: &dyn CloudProvider,
    seed: Option<u64>,
) -> Result<Expander, ComposeError> {
    let spec = &options.expander;
    let expander = match seed {
        Some(seed) => Expander::with_seed(spec, seed),
        None => Expander::new(spec),
    }
    .map_err(|e| ComposeError::Expander { spec: spec.clone(), message: e.to_string() })?;
    if expander.names().contains(&ExpanderName::Price) && provider.pricing().is_err() {
        return Err(ComposeError::NoPricing(provider.name().to_string()));
    }
    if expander.names().contains(&ExpanderName::Grpc) {
        // Reads the certificate now; connects on the first call (a service that is down only
        // makes the grpc step pass every option, as upstream's).
        let client = expander_grpc::GrpcExpanderClient::new(&options.grpc_expander_url, &options.grpc_expander_cert)
            .map_err(|e| ComposeError::GrpcExpander(e.to_string()))?;
        return Ok(expander.with_external(Arc::new(client)));
    }
    Ok(expander)
}

/// The provider and the expander, for the controller and `plan`.
pub async fn compose(
    registry: &ProviderRegistry,
    flags: &DecisionFlags,
    options: &AutoscalingOptions,
    inputs: ProviderInputs,
    seed: Option<u64>,
) -> Result<(Arc<dyn CloudProvider>, Expander), ComposeError> {
    let provider = build_provider(registry, flags, options, inputs).await?;
    let expander = build_expander(options, provider.as_ref(), seed)?;
    Ok((provider, expander))
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

    fn compose_with(args: &[&str]) -> Result<(Arc<dyn CloudProvider>, Expander), ComposeError> {
        let cli = Cli::try_parse_from(std::iter::once("ca").chain(args.iter().copied())).unwrap();
        let options = AutoscalingOptions::from_flags(&cli.flags).unwrap();
        let inputs =
            ProviderInputs { purpose: Purpose::Plan, nodes: Vec::new(), now: Timestamp::UNIX_EPOCH, kube: None };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(compose(&builtin_providers(), &cli.flags, &options, inputs, Some(1)))
    }

    fn example(file: &str) -> String {
        // Read at run time: a build cached from a clone at another path carries a stale
        // compile-time `CARGO_MANIFEST_DIR`.
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
        format!("{dir}/../deploy/examples/{file}")
    }

    #[test]
    fn the_memory_example_builds_its_groups() {
        let config = format!("--cloud-config={}", example("memory-node-groups.yaml"));
        let (provider, _) = compose_with(&["--cloud-provider=memory", &config]).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let groups = runtime.block_on(provider.node_groups());
        let ids: Vec<String> = groups.iter().map(|g| g.id().to_string()).collect();
        assert_eq!(ids, ["general", "compute"]);
    }

    #[test]
    fn memory_without_cloud_config_and_unknown_providers_are_errors() {
        let err = compose_with(&["--cloud-provider=memory"]).err().unwrap();
        assert!(err.to_string().contains("--cloud-config"), "{err}");
        let err = compose_with(&["--cloud-provider=nimbus"]).err().unwrap();
        assert_eq!(
            err.to_string(),
            "--cloud-provider=nimbus: not available in this build (available: static, memory, aws, externalgrpc, clusterapi)"
        );
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn a_bad_memory_cloud_config_names_the_file_and_field() {
        let dir = tempfile::Builder::new().prefix("compose-test-").tempdir().unwrap();
        let path = dir.path().join("groups.yaml");
        std::fs::write(&path, "nodeGroups:\n  - id: g\n    minSize: 3\n    maxSize: 1\n    template: {}\n").unwrap();
        let err =
            compose_with(&["--cloud-provider=memory", &format!("--cloud-config={}", path.display())]).err().unwrap();
        let text = err.to_string();
        assert!(text.contains("groups.yaml:3") && text.contains("minSize"), "{text}");
    }

    #[test]
    fn the_price_expander_needs_pricing_and_bad_chains_are_refused() {
        let config = format!("--cloud-config={}", example("memory-node-groups.yaml"));
        assert!(compose_with(&["--cloud-provider=memory", &config, "--expander=price"]).is_ok());
        let err = compose_with(&["--expander=most-pods,most-pods"]).err().unwrap();
        assert!(err.to_string().starts_with("--expander=most-pods,most-pods: "), "{err}");
    }

    #[test]
    fn the_grpc_expander_needs_its_certificate_at_start_up() {
        let err = compose_with(&["--expander=grpc"]).err().unwrap();
        assert!(matches!(err, ComposeError::GrpcExpander(_)), "{err:?}");
        assert!(err.to_string().contains("--grpc-expander-cert"), "{err}");
        assert_eq!(err.exit_code(), 2);
        let err = compose_with(&[
            "--expander=priority,grpc",
            "--grpc-expander-url=localhost:7000",
            "--grpc-expander-cert=/nowhere/ca.crt",
        ])
        .err()
        .unwrap();
        assert!(err.to_string().starts_with("--grpc-expander-cert=/nowhere/ca.crt: "), "{err}");
        assert_eq!(err.exit_code(), 2);
    }
}
