//! `ClusterApiProvider` and `ClusterApiNodeGroup`: the seam's traits over Cluster API.
//!
//! `refresh()` is the only place that reads the management cluster on the loop's path: one list
//! per kind (MachineDeployments, MachineSets, MachinePools, Machines, and each infrastructure
//! template kind the groups use), built into a [`Snapshot`]. Every other read answers from it.
//! The writes read the `scale` subresource again first and are serialized, as upstream's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;

use cloudprovider::quantity::quantity_value;
use cloudprovider::{
    CloudProvider, CloudProviderError, GPU_RESOURCE, GpuConfig, Instance, NodeGroup, NodeGroupAutoscalingOptions,
    NodeTemplate, ResourceLimiter, Result,
};

use crate::api::{ManagementApi, change_scale, refuse};
use crate::config::Settings;
use crate::object::normalized_provider_id;
use crate::snapshot::{BuildInputs, Group, Kind, Machine, Snapshot, is_real_instance_id};
use crate::template::{copied_labels, template_node};

pub const PROVIDER_NAME: &str = "clusterapi";
/// The node label naming a node's GPU type (upstream's, set by kubelet's `--node-labels`).
pub const GPU_LABEL: &str = "cluster-api/accelerator";
/// The reason of the Warning Event on a resource that cannot be a node group.
pub const INVALID_REASON: &str = "InvalidNodeGroupConfig";
/// How often a resource that stays malformed is told again (Events expire after an hour).
const REPORT_AGAIN: Duration = Duration::from_secs(30 * 60);
/// How long a node not seen by `node_group_for_node` is remembered.
const NODE_MEMORY: Duration = Duration::from_secs(15 * 60);

/// What the provider remembers of a node: its providerID (the instance ID of a Machine without
/// one of its own) and the labels a template copies from a group's node.
#[derive(Clone, Debug)]
struct NodeEntry {
    provider_id: String,
    labels: BTreeMap<String, String>,
    seen: Instant,
}

#[derive(Default)]
struct State {
    snapshot: Snapshot,
    /// Node name → entry, from the nodes the core asks about each loop (and the nodes the
    /// provider was built with): the workload cluster is never read for it.
    nodes: HashMap<String, NodeEntry>,
    /// Object → (message, when) of the Warning Events sent, so a malformed resource is told
    /// once (and again while it stays malformed), not every loop.
    reported: HashMap<String, (String, Instant)>,
    /// Log lines already written (once per message).
    logged: HashSet<String>,
}

impl State {
    fn log_once(&mut self, message: String, warn: bool) {
        if self.logged.insert(message.clone()) {
            if warn {
                tracing::warn!("{message}");
            } else {
                tracing::info!("{message}");
            }
        }
    }

    fn record_node(&mut self, node: &Node) {
        let Some(name) = node.metadata.name.clone() else { return };
        let provider_id = node.spec.as_ref().and_then(|s| s.provider_id.clone()).unwrap_or_default();
        let labels = node.metadata.labels.as_ref().map(copied_labels).unwrap_or_default();
        self.nodes.insert(name, NodeEntry { provider_id, labels, seen: Instant::now() });
    }

    fn node_labels_for(&self, instance_id: &str) -> Option<BTreeMap<String, String>> {
        let wanted = normalized_provider_id(instance_id);
        self.nodes
            .values()
            .find(|n| !n.provider_id.is_empty() && normalized_provider_id(&n.provider_id) == wanted)
            .map(|n| n.labels.clone())
    }
}

/// What the provider and its group handles share.
pub(crate) struct Shared {
    /// `None` for a configuration check, which connects to nothing.
    api: Option<ManagementApi>,
    settings: Settings,
    state: Mutex<State>,
    /// Upstream holds one lock around every change; so does this provider.
    writes: tokio::sync::Mutex<()>,
}

impl Shared {
    /// The cache; every update replaces whole values, so a poisoned lock is still usable.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn api(&self) -> Result<&ManagementApi> {
        self.api.as_ref().ok_or_else(|| refuse("the clusterapi provider is not connected (configuration check)".into()))
    }

    fn refuse_if_read_only(&self, what: &str) -> Result<()> {
        if self.settings.read_only {
            return Err(refuse(format!("{what} refused: the clusterapi provider is read-only here (plan)")));
        }
        Ok(())
    }

    fn group(&self, id: &str) -> Result<Group> {
        self.state()
            .snapshot
            .groups
            .get(id)
            .cloned()
            .ok_or_else(|| CloudProviderError::NodeGroupDoesNotExist(id.to_string()))
    }

    async fn refresh(&self) -> Result<()> {
        let api = self.api()?;
        let namespaces = self.settings.discovery.namespaces();
        let listing = api.list_all(namespaces.as_ref()).await?;
        let node_provider_ids: HashMap<String, String> = {
            let mut state = self.state();
            state.nodes.retain(|_, n| n.seen.elapsed() < NODE_MEMORY);
            state.nodes.iter().map(|(name, n)| (name.clone(), n.provider_id.clone())).collect()
        };
        let inputs = BuildInputs {
            keys: &self.settings.keys,
            discovery: &self.settings.discovery,
            node_provider_ids: &node_provider_ids,
        };
        let mut snapshot = Snapshot::build(&listing, &inputs);
        let (templates, warnings) = api.infra_templates(&snapshot.infra_refs(), namespaces.as_ref()).await;
        snapshot.attach_infra(&templates);

        let to_report: Vec<_> = {
            let mut state = self.state();
            for warning in warnings {
                state.log_once(format!("{warning}; scale from zero uses the capacity annotations only"), true);
            }
            for (id, why) in &snapshot.skipped {
                state.log_once(format!("{id} is not a node group: {why}"), false);
            }
            for group in snapshot.groups.values() {
                for key in &group.config.unknown_options {
                    state.log_once(format!("{}: unknown option annotation {key} ignored", group.id), true);
                }
            }
            let rejected_ids: HashSet<String> =
                snapshot.rejected.iter().map(|r| format!("{}/{}/{}", r.kind.as_str(), r.namespace, r.name)).collect();
            state.reported.retain(|id, _| rejected_ids.contains(id));
            let mut due = Vec::new();
            for rejected in &snapshot.rejected {
                let id = format!("{}/{}/{}", rejected.kind.as_str(), rejected.namespace, rejected.name);
                let message = rejected.describe();
                let fresh =
                    state.reported.get(&id).is_some_and(|(last, at)| *last == message && at.elapsed() < REPORT_AGAIN);
                if !fresh {
                    tracing::warn!(resource = %id, "{message}");
                    state.reported.insert(id, (message.clone(), Instant::now()));
                    due.push((rejected.clone(), message));
                }
            }
            state.snapshot = snapshot;
            due
        };
        // `plan` writes nothing, Events included: the log says it.
        if !self.settings.read_only {
            for (rejected, message) in to_report {
                if let Err(error) = api.warn(&rejected, INVALID_REASON, &message).await {
                    tracing::warn!(%error, "the Event could not be recorded");
                }
            }
        }
        Ok(())
    }

    /// The group and Machine of a node, from the snapshot.
    fn resolve(&self, node: &Node) -> (Option<String>, Option<Machine>) {
        let state = self.state();
        let (provider_id, name, annotations) = node_identity(node);
        let keys = &self.settings.keys;
        let group = state.snapshot.group_for(provider_id, name, annotations, keys).map(|g| g.id.clone());
        let machine = state.snapshot.machine_for(provider_id, name, annotations, keys).cloned();
        (group, machine)
    }
}

fn node_identity(node: &Node) -> (&str, &str, &BTreeMap<String, String>) {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    (
        node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).unwrap_or_default(),
        node.metadata.name.as_deref().unwrap_or_default(),
        node.metadata.annotations.as_ref().unwrap_or(&EMPTY),
    )
}

/// The `clusterapi` cloud provider.
pub struct ClusterApiProvider {
    shared: Arc<Shared>,
    limiter: ResourceLimiter,
}

impl ClusterApiProvider {
    /// A provider over `api` (`None`: a configuration check that never connects). `nodes`: the
    /// cluster's nodes at start, so Machines without a providerID resolve from the first loop.
    pub(crate) fn new(
        api: Option<ManagementApi>,
        settings: Settings,
        limiter: ResourceLimiter,
        nodes: &[Node],
    ) -> ClusterApiProvider {
        let mut state = State::default();
        for node in nodes {
            state.record_node(node);
        }
        ClusterApiProvider {
            shared: Arc::new(Shared { api, settings, state: Mutex::new(state), writes: tokio::sync::Mutex::new(()) }),
            limiter,
        }
    }

    /// The Cluster API version in use, once connected.
    pub fn version(&self) -> Option<String> {
        self.shared.api.as_ref().map(|a| a.served().version.clone())
    }

    fn handle(&self, group: &Group) -> Arc<dyn NodeGroup> {
        Arc::new(ClusterApiNodeGroup::new(self.shared.clone(), group))
    }
}

#[async_trait]
impl CloudProvider for ClusterApiProvider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        let state = self.shared.state();
        state.snapshot.groups.values().map(|g| self.handle(g)).collect()
    }

    /// By providerID (a Machine's, or a MachinePool's list), the node's machine annotations, or
    /// a Machine's `status.nodeRef`; nodes of paused, undiscovered or malformed resources are
    /// nobody's.
    async fn node_group_for_node(&self, node: &Node) -> Result<Option<Arc<dyn NodeGroup>>> {
        let mut state = self.shared.state();
        state.record_node(node);
        let (provider_id, name, annotations) = node_identity(node);
        let group = state.snapshot.group_for(provider_id, name, annotations, &self.shared.settings.keys);
        Ok(group.map(|g| self.handle(g)))
    }

    /// Whether the node's Machine exists (upstream finds it by the node's machine annotation;
    /// here any way a node maps to its Machine counts).
    async fn has_instance(&self, node: &Node) -> Result<bool> {
        Ok(self.shared.resolve(node).1.is_some())
    }

    fn resource_limiter(&self) -> Result<ResourceLimiter> {
        Ok(self.limiter.clone())
    }

    fn gpu_label(&self) -> &str {
        GPU_LABEL
    }

    /// Upstream lists none.
    fn available_gpu_types(&self) -> Vec<String> {
        Vec::new()
    }

    /// A node has GPUs when it carries the GPU label or has `nvidia.com/gpu` allocatable.
    fn node_gpu_config(&self, node: &Node) -> Option<GpuConfig> {
        let config = |gpu_type: &str| GpuConfig {
            label: GPU_LABEL.to_string(),
            gpu_type: gpu_type.to_string(),
            extended_resource_name: GPU_RESOURCE.to_string(),
        };
        if let Some(gpu_type) = node.metadata.labels.as_ref().and_then(|l| l.get(GPU_LABEL)) {
            return Some(config(gpu_type));
        }
        let allocatable = node.status.as_ref()?.allocatable.as_ref()?.get(GPU_RESOURCE)?;
        quantity_value(&allocatable.0).is_ok_and(|n| n > 0.0).then(|| config(""))
    }

    async fn cleanup(&self) -> Result<()> {
        Ok(())
    }

    async fn refresh(&self) -> Result<()> {
        self.shared.refresh().await
    }
}

/// One scalable resource as a node group. Bounds are those of the refresh that made the handle.
pub struct ClusterApiNodeGroup {
    shared: Arc<Shared>,
    id: String,
    kind: Kind,
    namespace: String,
    name: String,
    min: usize,
    max: usize,
}

impl fmt::Debug for ClusterApiNodeGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterApiNodeGroup")
            .field("id", &self.id)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

impl ClusterApiNodeGroup {
    fn new(shared: Arc<Shared>, group: &Group) -> ClusterApiNodeGroup {
        ClusterApiNodeGroup {
            shared,
            id: group.id.clone(),
            kind: group.kind,
            namespace: group.namespace.clone(),
            name: group.name.clone(),
            min: group.config.min,
            max: group.config.max,
        }
    }

    /// Sets the replicas from their current value (read now) with `decide`, within the bounds,
    /// and records the new target in the snapshot.
    async fn scale(&self, decide: impl Fn(usize) -> Result<usize>) -> Result<usize> {
        let (min, max) = (self.min, self.max);
        let bounded = |current: usize| {
            let target = decide(current)?;
            if target > max {
                return Err(refuse(format!("size increase too large - desired:{target} max:{max}")));
            }
            if target < min {
                return Err(refuse(format!("size decrease too large - desired:{target} min:{min}")));
            }
            Ok(target)
        };
        let written = change_scale(self.shared.api()?, self.kind, &self.namespace, &self.name, bounded).await?;
        if let Some(group) = self.shared.state().snapshot.groups.get_mut(&self.id) {
            group.replicas = written;
        }
        Ok(written)
    }

    fn node_name(node: &Node) -> String {
        node.spec
            .as_ref()
            .and_then(|s| s.provider_id.clone())
            .filter(|p| !p.is_empty())
            .or_else(|| node.metadata.name.clone())
            .unwrap_or_default()
    }
}

#[async_trait]
impl NodeGroup for ClusterApiNodeGroup {
    fn id(&self) -> &str {
        &self.id
    }

    fn min_size(&self) -> usize {
        self.min
    }

    fn max_size(&self) -> usize {
        self.max
    }

    async fn target_size(&self) -> Result<usize> {
        Ok(self.shared.group(&self.id)?.replicas)
    }

    /// The scale subresource's replicas + `delta`, refused above max.
    async fn increase_size(&self, delta: usize) -> Result<()> {
        self.shared.refuse_if_read_only("IncreaseSize")?;
        if delta == 0 {
            return Err(refuse("size increase must be positive".into()));
        }
        let _write = self.shared.writes.lock().await;
        self.scale(|current| Ok(current + delta)).await.map(|_| ())
    }

    /// Upstream's way: each node's Machine gets the delete-machine annotation, then the replicas
    /// go down by one, so Cluster API removes exactly that Machine. When lowering the replicas
    /// fails, the annotation is removed again (a marked Machine would be the next one removed
    /// by any later scale-down, of anyone). Refused at or below min, or below it after the
    /// deletion, and when a node is not this group's. Machines already being deleted are
    /// skipped; a MachinePool node without a Machine lowers the replicas only.
    async fn delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.shared.refuse_if_read_only("DeleteNodes")?;
        let _write = self.shared.writes.lock().await;
        let api = self.shared.api()?;
        let group = self.shared.group(&self.id)?;
        let (replicas, _) = api.get_scale(self.kind, &self.namespace, &self.name).await?;
        if replicas <= self.min {
            return Err(refuse("min size reached, nodes will not be deleted".into()));
        }
        let mut machines = Vec::new();
        for node in nodes {
            let node_name = Self::node_name(node);
            let (owner, machine) = self.shared.resolve(node);
            match owner {
                None => return Err(refuse(format!("no node group found for node {node_name:?}"))),
                Some(owner) if owner != self.id => {
                    return Err(refuse(format!("node {node_name:?} doesn't belong to node group {:?}", self.id)));
                }
                Some(_) => machines.push((node_name, node, machine)),
            }
        }
        if replicas.saturating_sub(nodes.len()) < self.min {
            return Err(refuse(format!(
                "unable to delete {} machines in {:?}, machine replicas are {replicas}, minSize is {}",
                nodes.len(),
                self.id,
                self.min
            )));
        }
        let delete_key = self.shared.settings.keys.delete_machine.clone();
        for (node_name, node, machine) in machines {
            let Some(machine) = machine else {
                let provider_id = node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).unwrap_or_default();
                let in_pool = self.kind == Kind::MachinePool
                    && group.pool_provider_ids.iter().any(|p| p == normalized_provider_id(provider_id));
                if !in_pool {
                    return Err(refuse(format!("unknown machine for node {node_name:?}")));
                }
                tracing::warn!(node = %node_name, group = %self.id, "no Machine for this MachinePool node: lowering the replicas only");
                self.scale(|current| Ok(current.saturating_sub(1))).await?;
                continue;
            };
            if machine.deleting {
                tracing::debug!(machine = ?machine.key, "already being deleted");
                continue;
            }
            let (namespace, name) = &machine.key;
            let stamp = k8s_openapi::jiff::Timestamp::now().to_string();
            api.annotate_machine(namespace, name, &delete_key, Some(&stamp)).await?;
            if let Err(error) = self.scale(|current| Ok(current.saturating_sub(1))).await {
                // Never leave the Machine marked: a later scale-down would remove it instead
                // of the Machine it chooses.
                if let Err(undo) = api.annotate_machine(namespace, name, &delete_key, None).await {
                    tracing::error!(machine = %format!("{namespace}/{name}"), annotation = %delete_key, error = %undo, "the delete-machine annotation could not be removed after a failed scale-down; remove it by hand");
                    return Err(CloudProviderError::Cloud {
                        code: None,
                        message: format!(
                            "{error}; and removing {delete_key} from Machine {namespace}/{name} failed: {undo}"
                        ),
                    });
                }
                return Err(error);
            }
            tracing::info!(machine = %format!("{namespace}/{name}"), node = %node_name, group = %self.id, "Machine marked for deletion and replicas lowered");
        }
        Ok(())
    }

    /// Lowers the replicas without touching running Machines: only Machines that are not nodes
    /// yet (pending, failed) can go, as upstream.
    async fn decrease_target_size(&self, delta: i64) -> Result<()> {
        self.shared.refuse_if_read_only("DecreaseTargetSize")?;
        if delta >= 0 {
            return Err(refuse("size decrease must be negative".into()));
        }
        let _write = self.shared.writes.lock().await;
        let group = self.shared.group(&self.id)?;
        let existing = group.instances.iter().filter(|i| is_real_instance_id(&i.id)).count();
        let id = self.id.clone();
        let by = usize::try_from(delta.unsigned_abs()).unwrap_or(usize::MAX);
        self.scale(move |current| {
            if current < by || current - by < existing {
                return Err(refuse(format!(
                    "node group {id}: attempt to delete existing nodes currentReplicas:{current} delta:{delta} existingNodes: {existing}"
                )));
            }
            Ok(current - by)
        })
        .await
        .map(|_| ())
    }

    /// The group's Machines as instances (see [`crate::snapshot`] for the states and IDs).
    async fn nodes(&self) -> Result<Vec<Instance>> {
        Ok(self.shared.group(&self.id)?.instances)
    }

    /// Scale from zero, see [`crate::template`]. A group without CPU and memory from its
    /// annotations or its infrastructure template has no template (the core then uses one of
    /// its nodes, if any).
    async fn template_node_info(&self) -> Result<NodeTemplate> {
        let mut state = self.shared.state();
        let group = state
            .snapshot
            .groups
            .get(&self.id)
            .cloned()
            .ok_or_else(|| CloudProviderError::NodeGroupDoesNotExist(self.id.clone()))?;
        let node_labels = group.instances.first().and_then(|i| state.node_labels_for(&i.id));
        match template_node(&group, &self.shared.settings.default_arch, node_labels.as_ref()) {
            None => Err(CloudProviderError::NotImplemented),
            Some(Ok(node)) => Ok(NodeTemplate { node, pods: Vec::new() }),
            Some(Err(problem)) => {
                state.log_once(
                    format!("{}: no template to scale from zero: {}: {}", self.id, problem.field, problem.message),
                    true,
                );
                Err(CloudProviderError::NotImplemented)
            }
        }
    }

    fn exist(&self) -> bool {
        true
    }

    /// As upstream: a scalable resource always exists already.
    async fn create(&self) -> Result<Arc<dyn NodeGroup>> {
        Err(CloudProviderError::AlreadyExist)
    }

    /// The `autoscaling-options-*` annotations over the flags' defaults.
    async fn get_options(&self, defaults: &NodeGroupAutoscalingOptions) -> Result<Option<NodeGroupAutoscalingOptions>> {
        let group = self.shared.group(&self.id)?;
        Ok(group.config.options.map(|o| o.merged_over(defaults)))
    }

    fn debug(&self) -> String {
        let replicas = self.shared.group(&self.id).map(|g| g.replicas.to_string()).unwrap_or_else(|e| e.to_string());
        format!("{} (min: {}, max: {}, replicas: {replicas})", self.id, self.min, self.max)
    }
}
