//! The `clusterapi` cloud provider: node groups are Cluster API resources, scaled through the
//! management cluster's Kubernetes API, as upstream's provider (whose README is the
//! specification; the code is written fresh).
//!
//! - **Groups**: MachineDeployments, MachineSets no MachineDeployment owns, and MachinePools
//!   carrying `cluster.x-k8s.io/cluster-api-autoscaler-node-group-{min,max}-size`, narrowed by
//!   `--node-group-auto-discovery=clusterapi:namespace=…,clusterName=…,<label>=<value>` (keys of
//!   one spec all match, any spec matches; [`discovery`]). Paused resources are left alone; a
//!   resource whose annotations cannot be read gets a Warning Event and is skipped, the others
//!   keep working ([`annotations`]). IDs are upstream's: `MachineDeployment/<ns>/<name>`.
//! - **Clusters**: the management cluster is `--cloud-config` (a kubeconfig), else the workload
//!   cluster's client (`--kubeconfig` or in-cluster): upstream's layouts ([`config`]).
//! - **Nodes ↔ Machines** by providerID, the node's `cluster.x-k8s.io/machine` annotation, or
//!   the Machine's `status.nodeRef` ([`snapshot`]).
//! - **Sizes** through the `scale` subresource; **DeleteNodes** marks each Machine with
//!   `cluster.x-k8s.io/delete-machine`, then lowers the replicas (the mark is removed again when
//!   that fails). Failed Machines are instance errors (`ProvisioningFailed`, `DeletingFailed`);
//!   Machines without a node are instances being created, which the core times out.
//! - **Scale from zero** from the `capacity.cluster-autoscaler.kubernetes.io/*` annotations and
//!   the infrastructure template's `status.capacity` ([`template`]); per-group options from
//!   `cluster.x-k8s.io/autoscaling-options-*`.
//!
//! One list per kind per refresh (see [`api`]); the factory follows the seam's contract:
//! `Purpose::Check` reads flags, the environment and the `--cloud-config` file only,
//! `Purpose::Plan` reads and never writes (Events included).

pub mod annotations;
pub mod api;
pub mod config;
pub mod discovery;
pub mod error;
pub mod keys;
pub mod object;
pub mod provider;
pub mod snapshot;
pub mod template;

use std::sync::Arc;
use std::time::Duration;

use cloudprovider::{BuildError, BuildResult, ProviderContext, Purpose};

pub use config::{ManagementCluster, Settings, management_cluster};
pub use error::ConfigError;
pub use provider::{ClusterApiNodeGroup, ClusterApiProvider, GPU_LABEL, INVALID_REASON, PROVIDER_NAME};

/// How long one call to the management cluster may take (lists included); kube's default read
/// timeout is made for watches, which this provider does not use.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// `--cloud-provider=clusterapi`.
pub async fn build(context: ProviderContext) -> BuildResult {
    let settings = Settings::new(&context.node_group_auto_discovery, context.purpose != Purpose::Controller, |name| {
        std::env::var(name).ok()
    })
    .map_err(|e| BuildError::Config(e.to_string()))?;
    build_with(context, settings).await
}

/// [`build`] with explicit settings (tests set the group and architecture without touching the
/// process environment).
pub async fn build_with(context: ProviderContext, settings: Settings) -> BuildResult {
    if let Some(spec) = context.node_group_specs.first() {
        tracing::warn!(
            nodes = %spec,
            "--nodes is ignored by the clusterapi provider (as upstream): node groups are the resources with the size annotations"
        );
    }
    let management = management_cluster(
        context.cloud_config.as_deref(),
        context.provider_options.clusterapi_cloud_config_authoritative,
    );
    let limiter = context.resource_limiter.clone();
    if context.purpose == Purpose::Check {
        // No I/O but the file: the kubeconfig must be readable and its context must resolve.
        if let ManagementCluster::Kubeconfig(path) = &management {
            config::load_kubeconfig(path).await.map_err(|e| BuildError::Config(e.to_string()))?;
        }
        return Ok(Arc::new(ClusterApiProvider::new(None, settings, limiter, &[])));
    }
    let client = match management {
        ManagementCluster::Kubeconfig(path) => {
            let mut config = config::load_kubeconfig(&path).await.map_err(|e| BuildError::Config(e.to_string()))?;
            config.read_timeout = Some(READ_TIMEOUT);
            kube::Client::try_from(config).map_err(|e| {
                BuildError::Config(format!("--cloud-config {}: cannot build a client: {e}", path.display()))
            })?
        }
        ManagementCluster::WorkloadClient => match &context.kube {
            Some(client) => client.clone(),
            None => {
                return Err(BuildError::Config(
                    "--cloud-provider=clusterapi needs --cloud-config (the management cluster's kubeconfig) when there is no live workload cluster client, as with plan"
                        .to_string(),
                ));
            }
        },
        ManagementCluster::InCluster => {
            let config = kube::Config::incluster()
                .map_err(|e| BuildError::Unavailable(format!("the in-cluster configuration is unavailable: {e}")))?;
            kube::Client::try_from(config).map_err(|e| BuildError::Unavailable(format!("in-cluster client: {e}")))?
        }
    };
    let api = api::ManagementApi::connect(client, &settings.keys.group, settings.version.as_deref())
        .await
        .map_err(BuildError::Unavailable)?;
    Ok(Arc::new(ClusterApiProvider::new(Some(api), settings, limiter, &context.nodes)))
}
