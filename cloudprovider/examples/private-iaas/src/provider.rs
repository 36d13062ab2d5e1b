//! The `CloudProvider`: node groups over the configured pools, the VM cache `refresh()` fills,
//! and the factory `--cloud-provider=private-iaas` calls.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use cloudprovider::quantity::quantity_value;
use cloudprovider::yaml::FileError;
use cloudprovider::{
    BuildError, BuildResult, CloudProvider, CloudProviderError, GPU_RESOURCE, GpuConfig, NodeGroup, PricingModel,
    ProviderContext, Purpose, ResourceLimiter, Result,
};
use k8s_openapi::api::core::v1::Node;

use crate::api::{Flavor, Vm};
use crate::client::IaasClient;
use crate::config::ProviderConfig;
use crate::group::PoolNodeGroup;
use crate::pricing::FlavorPricing;

pub const PROVIDER_NAME: &str = "private-iaas";

/// Node `spec.providerID`s are `private-iaas://<pool>/<vm-id>`; the kubelet of each VM must
/// register with `--provider-id` so (the image reads pool and id from the metadata service).
pub const PROVIDER_ID_SCHEME: &str = "private-iaas://";

pub fn provider_id(pool: &str, vm_id: &str) -> String {
    format!("{PROVIDER_ID_SCHEME}{pool}/{vm_id}")
}

/// `(pool, vm id)` of one of our providerIDs; `None` for anything else.
pub fn parse_provider_id(id: &str) -> Option<(&str, &str)> {
    let (pool, vm) = id.strip_prefix(PROVIDER_ID_SCHEME)?.split_once('/')?;
    (!pool.is_empty() && !vm.is_empty() && !vm.contains('/')).then_some((pool, vm))
}

/// What the groups and the pricing share.
pub(crate) struct Shared {
    pub config: ProviderConfig,
    /// `None` when built for a configuration check: every call that needs the IaaS fails.
    client: Option<IaasClient>,
    /// The IaaS's flavors, read once at start-up (empty for a configuration check).
    pub flavors: BTreeMap<String, Flavor>,
    /// Each pool's VMs as the last `refresh()` listed them, with this provider's own changes
    /// since (created VMs added, deleted ones marked `deleting`).
    cache: Mutex<BTreeMap<String, Vec<Vm>>>,
}

impl Shared {
    pub fn client(&self) -> Result<&IaasClient> {
        self.client.as_ref().ok_or_else(|| {
            CloudProviderError::cloud(format!(
                "{PROVIDER_NAME}: built for a configuration check only, not connected to {}",
                self.config.endpoint
            ))
        })
    }

    /// The VM cache. A poisoned lock still holds a consistent map: every change is one insert
    /// or one field update.
    pub fn cache(&self) -> MutexGuard<'_, BTreeMap<String, Vec<Vm>>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub struct PrivateIaasProvider {
    shared: Arc<Shared>,
    groups: Vec<Arc<PoolNodeGroup>>,
    pricing: Arc<FlavorPricing>,
    limiter: ResourceLimiter,
}

impl PrivateIaasProvider {
    /// A provider over `config`'s pools talking to `client` (`None`: a configuration check),
    /// with the IaaS's `flavors`.
    pub fn new(
        config: ProviderConfig,
        client: Option<IaasClient>,
        flavors: Vec<Flavor>,
        limiter: ResourceLimiter,
    ) -> PrivateIaasProvider {
        let flavors: BTreeMap<String, Flavor> = flavors.into_iter().map(|f| (f.name.clone(), f)).collect();
        let pool_flavors = config.node_groups.iter().map(|g| (g.pool.clone(), g.flavor.clone())).collect();
        let pricing = Arc::new(FlavorPricing::new(&flavors, pool_flavors));
        let shared = Arc::new(Shared { config, client, flavors, cache: Mutex::new(BTreeMap::new()) });
        let groups =
            (0..shared.config.node_groups.len()).map(|i| Arc::new(PoolNodeGroup::new(shared.clone(), i))).collect();
        PrivateIaasProvider { shared, groups, pricing, limiter }
    }

    /// The group of a pool, with its concrete type.
    pub fn group(&self, pool: &str) -> Option<Arc<PoolNodeGroup>> {
        self.groups.iter().find(|g| g.pool() == pool).cloned()
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.shared.config
    }

    fn group_of(&self, node: &Node) -> Option<(&Arc<PoolNodeGroup>, String)> {
        let id = node.spec.as_ref()?.provider_id.as_deref()?;
        let (pool, vm) = parse_provider_id(id)?;
        Some((self.groups.iter().find(|g| g.pool() == pool)?, vm.to_string()))
    }
}

#[async_trait]
impl CloudProvider for PrivateIaasProvider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        self.groups.iter().map(|g| g.clone() as Arc<dyn NodeGroup>).collect()
    }

    /// By providerID: `private-iaas://<pool>/…` of a configured pool. Other nodes (another
    /// provider's, the control plane's, pools not configured) are not ours.
    async fn node_group_for_node(&self, node: &Node) -> Result<Option<Arc<dyn NodeGroup>>> {
        Ok(self.group_of(node).map(|(g, _)| g.clone() as Arc<dyn NodeGroup>))
    }

    /// From the cache: our VM exists unless the last listing (or our own delete) lost it. For
    /// nodes that are not ours there is no answer.
    async fn has_instance(&self, node: &Node) -> Result<bool> {
        let Some((group, vm)) = self.group_of(node) else { return Err(CloudProviderError::NotImplemented) };
        Ok(self.shared.cache().get(group.pool()).is_some_and(|vms| vms.iter().any(|v| v.id == vm)))
    }

    fn pricing(&self) -> Result<Arc<dyn PricingModel>> {
        Ok(self.pricing.clone())
    }

    fn resource_limiter(&self) -> Result<ResourceLimiter> {
        Ok(self.limiter.clone())
    }

    fn gpu_label(&self) -> &str {
        &self.shared.config.gpu_label
    }

    /// The GPU types of the IaaS's flavors.
    fn available_gpu_types(&self) -> Vec<String> {
        let types: BTreeSet<String> =
            self.shared.flavors.values().filter(|f| f.gpus > 0).filter_map(|f| f.gpu_type.clone()).collect();
        types.into_iter().collect()
    }

    /// A node has GPUs when it carries the GPU label or has `nvidia.com/gpu` allocatable.
    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig> {
        let label = self.gpu_label();
        let config = |gpu_type: &str| GpuConfig {
            label: label.to_string(),
            gpu_type: gpu_type.to_string(),
            extended_resource_name: GPU_RESOURCE.to_string(),
        };
        if let Some(gpu_type) = node.metadata.labels.as_ref().and_then(|labels| labels.get(label)) {
            return Some(config(gpu_type));
        }
        let allocatable = node.status.as_ref()?.allocatable.as_ref()?.get(GPU_RESOURCE)?;
        quantity_value(&allocatable.0).is_ok_and(|count| count > 0.0).then(|| config(""))
    }

    async fn cleanup(&self) -> Result<()> {
        Ok(())
    }

    /// Lists every pool's VMs (concurrently, one request each). The cache changes only when
    /// every listing succeeded, so a failed refresh leaves the last consistent view.
    async fn refresh(&self) -> Result<()> {
        let client = self.shared.client()?;
        let listings = self.groups.iter().map(|g| async move { client.vms(g.pool()).await.map(|vms| (g.pool(), vms)) });
        let listed = futures::future::try_join_all(listings).await?;
        let mut cache = self.shared.cache();
        *cache = listed.into_iter().map(|(pool, vms)| (pool.to_string(), vms)).collect();
        Ok(())
    }
}

/// `--cloud-provider=private-iaas`: node groups from `--cloud-config`.
///
/// For a configuration check this reads the file and nothing else. For `plan` and the
/// controller it also reads the IaaS's flavors, images and pools, and checks the file against
/// them: a pool, flavor or image the IaaS does not have is a configuration error (exit 2) naming
/// the line; an IaaS out of reach is `Unavailable` (exit 1, the pod restarts and tries again).
pub async fn build(context: ProviderContext) -> BuildResult {
    context.refuse_auto_discovery()?;
    if let Some(spec) = context.node_group_specs.first() {
        return Err(BuildError::Config(format!(
            "--nodes={spec}: the {PROVIDER_NAME} provider takes its node groups from --cloud-config, not --nodes"
        )));
    }
    let path = context.require_cloud_config()?;
    let config = ProviderConfig::load(path).map_err(|e| BuildError::Config(e.to_string()))?;
    let limiter = context.resource_limiter.clone();
    if context.purpose == Purpose::Check {
        return Ok(Arc::new(PrivateIaasProvider::new(config, None, Vec::new(), limiter)));
    }
    let client = IaasClient::new(&config.endpoint, config.timeout, &config.extra_roots)
        .map_err(|e| BuildError::Unavailable(format!("{PROVIDER_NAME}: {e}")))?;
    let (flavors, images, pools) = futures::try_join!(client.flavors(), client.images(), client.pools())
        .map_err(|e| BuildError::Unavailable(format!("{PROVIDER_NAME}: {e}")))?;
    check_against_iaas(&config, &flavors, &images, &pools.iter().map(|p| p.name.clone()).collect::<Vec<_>>())
        .map_err(|e| BuildError::Config(e.to_string()))?;
    for (group, pool) in config.node_groups.iter().filter_map(|g| Some((g, pools.iter().find(|p| p.name == g.pool)?))) {
        if group.max_size > pool.quota as usize {
            tracing::warn!(
                pool = %group.pool, max_size = group.max_size, quota = pool.quota,
                "maxSize is above the pool's quota: creates past the quota will fail with QuotaExceeded"
            );
        }
    }
    Ok(Arc::new(PrivateIaasProvider::new(config, Some(client), flavors, limiter)))
}

/// Every group's pool, flavor and image must exist in the IaaS.
fn check_against_iaas(
    config: &ProviderConfig,
    flavors: &[Flavor],
    images: &[String],
    pools: &[String],
) -> std::result::Result<(), FileError> {
    let flavor_names: Vec<String> = flavors.iter().map(|f| f.name.clone()).collect();
    for (i, group) in config.node_groups.iter().enumerate() {
        let checks = [
            ("pool", &group.pool, pools, group.lines.pool),
            ("flavor", &group.flavor, &flavor_names[..], group.lines.flavor),
            ("image", &group.image, images, group.lines.image),
        ];
        for (field, value, known, line) in checks {
            if !known.contains(value) {
                return Err(FileError::new(
                    &config.file,
                    format!("nodeGroups[{i}].{field}"),
                    line,
                    format!("{field} {value:?} does not exist in {} (it has: {})", config.endpoint, known.join(", ")),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_ids_name_the_pool_and_the_vm() {
        assert_eq!(provider_id("compute", "vm-000001"), "private-iaas://compute/vm-000001");
        assert_eq!(parse_provider_id("private-iaas://compute/vm-000001"), Some(("compute", "vm-000001")));
        for other in ["static://compute/x", "private-iaas://compute", "private-iaas:///vm-1", "private-iaas://a/b/c"] {
            assert_eq!(parse_provider_id(other), None, "{other}");
        }
    }
}
