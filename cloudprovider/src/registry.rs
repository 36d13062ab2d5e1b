//! Providers by name: what `--cloud-provider` chooses from.
//!
//! Each provider crate offers an async factory, `async fn build(ProviderContext) ->
//! Result<Arc<dyn CloudProvider>, BuildError>`, and the binary registers it under a name:
//!
//! ```ignore
//! let mut providers = ProviderRegistry::new();
//! providers.register("static", cloudprovider_static::build);
//! providers.register("my-iaas", my_iaas::build);
//! ```
//!
//! Factory contract:
//! - with [`Purpose::Check`] the factory only validates its configuration (flags, files) and
//!   must not do I/O: the controller checks the configuration before it connects to anything;
//! - with [`Purpose::Plan`] the provider is only read (`refresh`, node groups, sizes,
//!   templates): `plan` never changes anything;
//! - with [`Purpose::Controller`] the provider acts. A factory may be called more than once (a
//!   check, then the real build) and must not change anything in the cloud itself.
//! - Bad configuration is [`BuildError::Config`] (exit 2, the message names the flag, file and
//!   field); an unreachable dependency at start-up is [`BuildError::Unavailable`] (exit 1).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;

use crate::{CloudProvider, NodeGroupAutoscalingOptions, ResourceLimiter};

/// What the provider is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Validate the configuration only; no I/O.
    Check,
    /// `plan`: read, never act.
    Plan,
    /// The control loop: read and act.
    Controller,
}

/// Upstream's flags that only some providers read, typed (each named after its flag).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderOptions {
    /// `--aws-use-static-instance-list`: instance types from the built-in table only, never
    /// from the EC2 API.
    pub aws_use_static_instance_list: bool,
    /// `--cluster-name`: the autoscaled cluster's name, when given.
    pub cluster_name: String,
    /// `--clusterapi-cloud-config-authoritative`: the Cluster API management cluster is reached
    /// through `--cloud-config` only, never through the workload cluster's client.
    pub clusterapi_cloud_config_authoritative: bool,
}

/// Everything a factory may use, from upstream's flags and the running process.
#[derive(Clone)]
pub struct ProviderContext {
    /// The name the provider was chosen by (`--cloud-provider`).
    pub name: String,
    /// `--cloud-config`: the provider's configuration file, if given.
    pub cloud_config: Option<PathBuf>,
    /// `--nodes`, as written (`<min>:<max>:<id>`), repeatable.
    pub node_group_specs: Vec<String>,
    /// `--node-group-auto-discovery`, as written (`<discoverer>:<key>=<value>,…`), repeatable.
    pub node_group_auto_discovery: Vec<String>,
    /// The per-group options from the flags (`--scale-down-unneeded-time`, …).
    pub node_group_defaults: NodeGroupAutoscalingOptions,
    /// Provider-specific flags.
    pub provider_options: ProviderOptions,
    /// Cluster-wide limits from the flags (`--cores-total`, `--memory-total`, `--gpu-total`).
    pub resource_limiter: ResourceLimiter,
    /// The cluster's nodes when the provider is built (none with [`Purpose::Check`]).
    pub nodes: Vec<Node>,
    pub purpose: Purpose,
    /// Now, as the caller sees it (the wall clock, or `plan --now`).
    pub now: Timestamp,
    /// A client for the cluster the autoscaler runs against, when there is one (the controller;
    /// not `plan` of a dump). Rate-limited like every other client of the process.
    #[cfg(feature = "kube")]
    pub kube: Option<kube::Client>,
}

impl ProviderContext {
    /// A context with the flags' defaults, for tests and embedders.
    pub fn new(name: impl Into<String>, purpose: Purpose) -> ProviderContext {
        ProviderContext {
            name: name.into(),
            cloud_config: None,
            node_group_specs: Vec::new(),
            node_group_auto_discovery: Vec::new(),
            node_group_defaults: NodeGroupAutoscalingOptions::default(),
            provider_options: ProviderOptions::default(),
            resource_limiter: ResourceLimiter::default(),
            nodes: Vec::new(),
            purpose,
            now: Timestamp::now(),
            #[cfg(feature = "kube")]
            kube: None,
        }
    }

    /// `--cloud-config`, or a configuration error naming what needs it.
    pub fn require_cloud_config(&self) -> Result<&PathBuf, BuildError> {
        self.cloud_config
            .as_ref()
            .ok_or_else(|| BuildError::Config(format!("--cloud-provider={} needs --cloud-config", self.name)))
    }

    /// Refuses `--node-group-auto-discovery` for providers that have no discovery.
    pub fn refuse_auto_discovery(&self) -> Result<(), BuildError> {
        match self.node_group_auto_discovery.first() {
            Some(spec) => Err(BuildError::Config(format!(
                "--node-group-auto-discovery={spec}: the {} provider has no node group discovery",
                self.name
            ))),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Bad flags or files (exit 2). The message names the flag, the file and the field.
    #[error("{0}")]
    Config(String),
    /// Something the provider needs at start-up is out of reach (exit 1).
    #[error("{0}")]
    Unavailable(String),
}

impl BuildError {
    /// The process exit code for this error: 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            BuildError::Config(_) => 2,
            BuildError::Unavailable(_) => 1,
        }
    }
}

pub type BuildResult = Result<Arc<dyn CloudProvider>, BuildError>;

/// A provider factory: any `Fn(ProviderContext) -> impl Future<Output = BuildResult>`, such as
/// an `async fn build(ctx: ProviderContext) -> BuildResult`.
pub trait ProviderFactory: Send + Sync {
    fn build(&self, context: ProviderContext) -> Pin<Box<dyn Future<Output = BuildResult> + Send>>;
}

impl<F, Fut> ProviderFactory for F
where
    F: Fn(ProviderContext) -> Fut + Send + Sync,
    Fut: Future<Output = BuildResult> + Send + 'static,
{
    fn build(&self, context: ProviderContext) -> Pin<Box<dyn Future<Output = BuildResult> + Send>> {
        Box::pin(self(context))
    }
}

/// The providers a binary is built with, in registration order.
#[derive(Clone, Default)]
pub struct ProviderRegistry {
    entries: Vec<(String, Arc<dyn ProviderFactory>)>,
}

impl ProviderRegistry {
    pub fn new() -> ProviderRegistry {
        ProviderRegistry::default()
    }

    /// Registers `factory` under `name`; a later registration of the same name replaces it (so a
    /// platform team can swap a built-in provider for its own).
    pub fn register(&mut self, name: &str, factory: impl ProviderFactory + 'static) -> &mut ProviderRegistry {
        let factory: Arc<dyn ProviderFactory> = Arc::new(factory);
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = factory,
            None => self.entries.push((name.to_string(), factory)),
        }
        self
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|(n, _)| n.as_str()).collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.entries.iter().any(|(n, _)| n == name)
    }

    /// Builds the provider registered as `context.name`; an unknown name is a configuration
    /// error that lists what is registered.
    pub async fn build(&self, context: ProviderContext) -> BuildResult {
        let Some((_, factory)) = self.entries.iter().find(|(n, _)| *n == context.name) else {
            return Err(BuildError::Config(format!(
                "--cloud-provider={}: not available in this build (available: {})",
                context.name,
                self.names().join(", ")
            )));
        };
        factory.build(context).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn refuses(context: ProviderContext) -> BuildResult {
        Err(BuildError::Config(format!("{} refuses", context.name)))
    }

    #[test]
    fn unknown_names_list_what_is_registered() {
        let mut registry = ProviderRegistry::new();
        registry.register("alpha", refuses).register("beta", refuses);
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let error = runtime.block_on(registry.build(ProviderContext::new("gamma", Purpose::Check))).err().unwrap();
        assert_eq!(error.to_string(), "--cloud-provider=gamma: not available in this build (available: alpha, beta)");
        assert_eq!(error.exit_code(), 2);
        let error = runtime.block_on(registry.build(ProviderContext::new("beta", Purpose::Check))).err().unwrap();
        assert_eq!(error.to_string(), "beta refuses");
    }

    #[test]
    fn a_second_registration_replaces_the_first() {
        let mut registry = ProviderRegistry::new();
        registry.register("alpha", refuses).register("beta", refuses).register("alpha", refuses);
        assert_eq!(registry.names(), ["alpha", "beta"]);
    }
}
