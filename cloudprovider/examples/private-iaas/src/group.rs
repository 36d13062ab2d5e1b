//! A pool as a `NodeGroup`. Reads come from the cache `refresh()` fills; changes call the IaaS
//! and then update the cache, so the rest of the loop sees them.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use cloudprovider::{
    CloudProviderError, Instance, InstanceErrorClass, InstanceErrorInfo, InstanceState, InstanceStatus, NodeGroup,
    NodeTemplate, Result,
};
use k8s_openapi::api::core::v1::Node;

use crate::api::{CreateVm, NO_VALID_HOST, QUOTA_EXCEEDED, Vm, VmState};
use crate::client::IaasError;
use crate::config::PoolGroupConfig;
use crate::provider::{Shared, parse_provider_id, provider_id};
use crate::template::template_node;

pub struct PoolNodeGroup {
    shared: Arc<Shared>,
    index: usize,
    /// One change at a time per pool: two concurrent deletions must not both pass the min-size
    /// check against the same cached size.
    changes: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for PoolNodeGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolNodeGroup").field("pool", &self.pool()).finish()
    }
}

impl PoolNodeGroup {
    pub(crate) fn new(shared: Arc<Shared>, index: usize) -> PoolNodeGroup {
        PoolNodeGroup { shared, index, changes: tokio::sync::Mutex::new(()) }
    }

    pub fn config(&self) -> &PoolGroupConfig {
        &self.shared.config.node_groups[self.index]
    }

    pub fn pool(&self) -> &str {
        &self.config().pool
    }

    /// The pool's VMs as cached.
    pub fn cached_vms(&self) -> Vec<Vm> {
        self.shared.cache().get(self.pool()).cloned().unwrap_or_default()
    }

    /// VMs that make up the target size: all but those being deleted (VMs in `error` count until
    /// the autoscaler deletes them, as upstream counts failed instances).
    fn size(&self) -> usize {
        self.cached_vms().iter().filter(|vm| vm.state != VmState::Deleting).count()
    }

    fn update_cache(&self, change: impl FnOnce(&mut Vec<Vm>)) {
        let mut cache = self.shared.cache();
        change(cache.entry(self.pool().to_string()).or_default());
    }

    fn record(&self, vm: Vm) {
        self.update_cache(|vms| match vms.iter_mut().find(|v| v.id == vm.id) {
            Some(known) => *known = vm,
            None => vms.push(vm),
        });
    }

    fn forget(&self, id: &str) {
        self.update_cache(|vms| vms.retain(|v| v.id != id));
    }

    /// The VM ids of `nodes`, which must all be of this pool (by providerID; the fake nodes the
    /// autoscaler makes for failed instances carry the instance id there too).
    fn vm_ids_of(&self, nodes: &[Node]) -> Result<Vec<String>> {
        let mut ids: Vec<String> = Vec::new();
        for node in nodes {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            let provider_id = node.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()).unwrap_or_default();
            match parse_provider_id(provider_id) {
                Some((pool, vm)) if pool == self.pool() => {
                    if !ids.iter().any(|id| id == vm) {
                        ids.push(vm.to_string());
                    }
                }
                _ => {
                    return Err(CloudProviderError::InvalidRequest(format!(
                        "node {name} (providerID {provider_id:?}) does not belong to node group {}",
                        self.pool()
                    )));
                }
            }
        }
        Ok(ids)
    }

    async fn delete_vms(&self, nodes: &[Node], respect_min: bool) -> Result<()> {
        let _one_change = self.changes.lock().await;
        let ids = self.vm_ids_of(nodes)?;
        // VMs already gone or being deleted are skipped: deleting them again changes nothing.
        let cached = self.cached_vms();
        let to_delete: Vec<&Vm> = ids
            .iter()
            .filter_map(|id| cached.iter().find(|vm| vm.id == *id && vm.state != VmState::Deleting))
            .collect();
        let size = self.size();
        if respect_min && size.saturating_sub(to_delete.len()) < self.min_size() {
            return Err(CloudProviderError::InvalidRequest(format!(
                "min size reached, nodes will not be deleted (node group {}: size {size}, min {}, deleting {})",
                self.pool(),
                self.min_size(),
                to_delete.len()
            )));
        }
        let client = self.shared.client()?;
        let mut deleted: Vec<&str> = Vec::new();
        for vm in to_delete {
            match client.delete_vm(self.pool(), &vm.id).await {
                Ok(Some(answer)) => self.record(answer),
                Ok(None) => self.forget(&vm.id),
                Err(error) => return Err(partly_done(error, "deleted", &deleted)),
            }
            deleted.push(&vm.id);
        }
        Ok(())
    }

    /// Deletes VMs this call created, after a failed create. `uncertain` is the name of a VM
    /// whose create failed in a way that may have created it anyway (a timeout): the pool is
    /// listed to find it. Returns the VMs that could not be deleted.
    async fn roll_back(&self, created: &[Vm], uncertain: Option<&str>) -> Vec<String> {
        let Ok(client) = self.shared.client() else { return created.iter().map(|vm| vm.id.clone()).collect() };
        let mut to_delete: Vec<Vm> = created.to_vec();
        let mut left: Vec<String> = Vec::new();
        if let Some(name) = uncertain {
            match client.vms(self.pool()).await {
                Ok(vms) => to_delete.extend(vms.into_iter().filter(|vm| vm.name == name)),
                Err(error) => left.push(format!("{name} (maybe created; cannot list the pool: {error})")),
            }
        }
        for vm in to_delete {
            match client.delete_vm(self.pool(), &vm.id).await {
                Ok(Some(answer)) => self.record(answer),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(pool = %self.pool(), vm = %vm.id, %error, "could not delete a VM of a failed scale-up");
                    left.push(vm.id.clone());
                    // It exists: the target size must show it until the next refresh.
                    self.record(vm);
                }
            }
        }
        left
    }
}

/// An IaaS error after some of a change was made, saying what was.
fn partly_done(error: IaasError, verb: &str, done: &[&str]) -> CloudProviderError {
    let mut error = CloudProviderError::from(error);
    if !done.is_empty()
        && let CloudProviderError::Cloud { message, .. } = &mut error
    {
        message.push_str(&format!(" ({verb} before the failure: {})", done.join(", ")));
    }
    error
}

/// A fresh VM name, `<pool>-<8 characters>`: chosen here, not by the IaaS, so a VM whose create
/// timed out can be found by name. Unique enough: random per process, then a counter.
fn vm_name(pool: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut n = RandomState::new().hash_one((count, nanos));
    let alphabet = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let suffix: String = (0..8)
        .map(|_| {
            let c = alphabet[(n % 36) as usize] as char;
            n /= 36;
            c
        })
        .collect();
    format!("{pool}-{suffix}")
}

/// A VM as an instance of the group.
fn instance(vm: &Vm) -> Instance {
    let (state, error) = match vm.state {
        VmState::Building => (InstanceState::Creating, None),
        VmState::Active => (InstanceState::Running, None),
        VmState::Deleting => (InstanceState::Deleting, None),
        // Upstream reports failed creations as Creating with error info; its core backs the
        // group off (longer for out-of-resources) and deletes the instance.
        VmState::Error => {
            let (code, message) = vm.error.as_ref().map_or(("Unknown", ""), |e| (e.code.as_str(), e.message.as_str()));
            let class = match code {
                NO_VALID_HOST | QUOTA_EXCEEDED => InstanceErrorClass::OutOfResources,
                _ => InstanceErrorClass::Other,
            };
            (
                InstanceState::Creating,
                Some(InstanceErrorInfo { class, code: code.to_string(), message: message.to_string() }),
            )
        }
    };
    Instance { id: provider_id(&vm.pool, &vm.id), status: Some(InstanceStatus { state, error }) }
}

#[async_trait]
impl NodeGroup for PoolNodeGroup {
    fn id(&self) -> &str {
        self.pool()
    }

    fn min_size(&self) -> usize {
        self.config().min_size
    }

    fn max_size(&self) -> usize {
        self.config().max_size
    }

    async fn target_size(&self) -> Result<usize> {
        Ok(self.size())
    }

    /// Creates `delta` VMs, all or none: if a create fails, the VMs this call created are
    /// deleted again (and one whose create timed out is looked up by name and deleted), so the
    /// autoscaler's view of the target stays true. VMs the IaaS creates in `error` (quota, no
    /// host) are created as far as this call goes: they show up as failed instances.
    async fn increase_size(&self, delta: usize) -> Result<()> {
        if delta == 0 {
            return Err(CloudProviderError::InvalidRequest("size increase must be positive".into()));
        }
        let _one_change = self.changes.lock().await;
        let size = self.size();
        if size + delta > self.max_size() {
            return Err(CloudProviderError::InvalidRequest(format!(
                "size increase too large - desired:{} max:{}",
                size + delta,
                self.max_size()
            )));
        }
        let client = self.shared.client()?;
        let config = self.config();
        let mut created: Vec<Vm> = Vec::new();
        for _ in 0..delta {
            let request = CreateVm {
                name: Some(vm_name(self.pool())),
                image: config.image.clone(),
                flavor: config.flavor.clone(),
            };
            match client.create_vm(self.pool(), &request).await {
                Ok(vm) => created.push(vm),
                Err(error) => {
                    let uncertain = error.outcome_unknown().then_some(request.name.as_deref()).flatten();
                    let left = self.roll_back(&created, uncertain).await;
                    let mut error = CloudProviderError::from(error);
                    if let CloudProviderError::Cloud { message, .. } = &mut error {
                        message.push_str(&if left.is_empty() {
                            format!("; no VM of this scale-up of {} is left", self.pool())
                        } else {
                            format!("; VMs of this scale-up left behind: {}", left.join(", "))
                        });
                    }
                    return Err(error);
                }
            }
        }
        for vm in created {
            self.record(vm);
        }
        Ok(())
    }

    async fn delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.delete_vms(nodes, true).await
    }

    async fn force_delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.delete_vms(nodes, false).await
    }

    /// Withdraws requested VMs that are still `building`, newest first; never one that is
    /// `active`. Each is looked up right before deleting, since it may have become active since
    /// the cache was filled; if one has, nothing is deleted.
    async fn decrease_target_size(&self, delta: i64) -> Result<()> {
        if delta >= 0 {
            return Err(CloudProviderError::InvalidRequest("size decrease must be negative".into()));
        }
        let _one_change = self.changes.lock().await;
        let wanted = usize::try_from(delta.unsigned_abs()).unwrap_or(usize::MAX);
        let mut building: Vec<Vm> = self.cached_vms().into_iter().filter(|vm| vm.state == VmState::Building).collect();
        building.sort_by(|a, b| (&b.created, &b.id).cmp(&(&a.created, &a.id)));
        let size = self.size();
        if building.len() < wanted {
            return Err(CloudProviderError::InvalidRequest(format!(
                "attempt to delete existing nodes targetSize:{size} delta:{delta} existingNodes: {}",
                size - building.len()
            )));
        }
        let client = self.shared.client()?;
        let mut checked: Vec<Vm> = Vec::new();
        for vm in building.into_iter().take(wanted) {
            match client.vm(self.pool(), &vm.id).await? {
                Some(now) if now.state == VmState::Building => checked.push(now),
                Some(now) => {
                    let (id, state) = (now.id.clone(), now.state);
                    self.record(now);
                    return Err(CloudProviderError::InvalidRequest(format!(
                        "attempt to delete existing nodes: VM {id} of {} is {state:?} now, not building; nothing deleted",
                        self.pool()
                    )));
                }
                // Gone already: the target went down by itself.
                None => self.forget(&vm.id),
            }
        }
        let mut deleted: Vec<&str> = Vec::new();
        for vm in &checked {
            match client.delete_vm(self.pool(), &vm.id).await {
                Ok(Some(answer)) => self.record(answer),
                Ok(None) => self.forget(&vm.id),
                Err(error) => return Err(partly_done(error, "deleted", &deleted)),
            }
            deleted.push(&vm.id);
        }
        Ok(())
    }

    async fn nodes(&self) -> Result<Vec<Instance>> {
        Ok(self.cached_vms().iter().map(instance).collect())
    }

    /// Built from the pool's flavor: what scaling up from zero needs.
    async fn template_node_info(&self) -> Result<NodeTemplate> {
        let config = self.config();
        let flavor = self.shared.flavors.get(&config.flavor).ok_or_else(|| {
            CloudProviderError::Configuration(format!(
                "node group {}: flavor {:?} is not known (the provider was built without the IaaS's flavors)",
                config.pool, config.flavor
            ))
        })?;
        let node = template_node(config, flavor, &self.shared.config.gpu_label).map_err(|problem| {
            CloudProviderError::Configuration(format!(
                "node group {}: template {}: {}",
                config.pool, problem.field, problem.message
            ))
        })?;
        Ok(NodeTemplate { node, pods: Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_names_are_dns_labels_and_differ() {
        let a = vm_name("compute");
        let b = vm_name("compute");
        assert_ne!(a, b);
        assert!(crate::iaas::is_dns_label(&a) && a.starts_with("compute-") && a.len() == "compute-".len() + 8, "{a}");
    }

    #[test]
    fn failed_vms_are_creating_instances_with_error_info() {
        let vm = Vm {
            id: "vm-000001".into(),
            name: "compute-1".into(),
            pool: "compute".into(),
            flavor: "m1".into(),
            image: "ubuntu".into(),
            state: VmState::Error,
            created: "2026-01-01T00:00:00Z".into(),
            error: Some(crate::api::VmError { code: "Overheated".into(), message: "too hot".into() }),
        };
        let status = instance(&vm).status.unwrap();
        assert_eq!(status.state, InstanceState::Creating);
        assert_eq!(status.error.unwrap().class, InstanceErrorClass::Other);
    }
}
