//! `CloudState`: what the decision path needs from the cloud provider, gathered once per loop
//! through the async traits (after `refresh()`), so that deciding stays synchronous and pure.
//!
//! Two kinds of provider call are made only when their answer can matter, as upstream makes them:
//! - a group's template (`TemplateNodeInfo`) is asked for only when no real node of the group can
//!   stand as its template (§6.5: such a node comes first), decided by the very test the
//!   templates use (`templates::qualifies_as_template`);
//! - the control loop reads a group's instances (`Nodes`) through its [`InstanceCache`], upstream's
//!   `CloudProviderNodeInstancesCache` (§8 item 9); `plan`, which remembers nothing, reads them
//!   fresh.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt, stream};

use cloudprovider::{
    CloudProvider, CloudProviderError, GpuConfig, Instance, InstanceState, NodeGroup, NodeGroupAutoscalingOptions,
    NodeTemplate, PricingModel, ResourceLimiter,
};
use cloudprovider_static::instance_id_for_node;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rustc_hash::{FxHashMap, FxHashSet};

use super::cluster_state::InstanceIds;
use super::node_facts::{NodeFacts, NodeFactsMemo};
use super::node_positions::{NodePositions, name_of};
use super::templates::qualifies_as_template;
use crate::config::AutoscalingOptions;

/// One node group as the cloud reports it at the start of a loop.
#[derive(Clone, Debug)]
pub struct NodeGroupState {
    pub id: String,
    pub min_size: usize,
    pub max_size: usize,
    pub target_size: usize,
    /// The group's instances: read this loop, or, in the control loop, remembered from an
    /// earlier one while nothing suggests they changed ([`InstanceCache`]). Shared with that
    /// cache, which would otherwise copy every settled group's list every loop.
    pub instances: Arc<Vec<Instance>>,
    /// The provider's template (`TemplateNodeInfo`), when it has one. Asked for only when no
    /// node of the group qualifies as its template: `None` also when a real node will serve.
    pub template: Option<NodeTemplate>,
    /// The GPU configuration of what the group's template is made from (upstream asks
    /// `GetNodeGpuConfig` of the template node): the first qualifying real node, else the
    /// provider's template.
    pub template_gpu: Option<GpuConfig>,
    pub options: NodeGroupAutoscalingOptions,
    pub exists: bool,
    pub autoprovisioned: bool,
    pub debug: String,
}

#[derive(Clone, Default)]
pub struct CloudState {
    pub provider_name: String,
    pub groups: Vec<NodeGroupState>,
    /// Where each node gathered is in the list, by name.
    pub node_positions: Arc<NodePositions>,
    /// By position in the nodes gathered: the index into `groups` of the node's group, for
    /// nodes the provider manages.
    pub node_group_indexes: Vec<Option<usize>>,
    /// Node name → GPU configuration, for GPU nodes.
    pub node_gpus: FxHashMap<String, GpuConfig>,
    /// The facts of the nodes gathered, in their order (see [`CloudState::facts_of`]).
    pub node_facts: Vec<NodeFacts>,
    pub gpu_label: String,
    pub resource_limiter: ResourceLimiter,
    pub pricing: Option<Arc<dyn PricingModel>>,
    /// The provider's labels to ignore when comparing groups for balancing.
    pub balancing_ignored_labels: Vec<String>,
    /// The provider's group handles, for actuation (not used by `decide`). Gathered with an
    /// [`InstanceCache`], they tell it which groups the loop changes.
    pub handles: HashMap<String, Arc<dyn NodeGroup>>,
}

impl std::fmt::Debug for CloudState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudState")
            .field("provider_name", &self.provider_name)
            .field("groups", &self.groups)
            .field("node_group_indexes", &self.node_group_indexes)
            .finish_non_exhaustive()
    }
}

/// Whether a group has a scale-up request in flight (the loop's registry knows).
type ScalingUp<'a> = &'a (dyn Fn(&str) -> bool + Sync);

impl CloudState {
    /// Reads everything the decision needs from the provider, instances included: what `plan`
    /// (which remembers nothing) sees. `refresh()` must have been called. `now` is the time the
    /// decision is made for (a template node must have been ready for a minute by then).
    pub async fn gather(
        provider: &dyn CloudProvider,
        nodes: &[Arc<Node>],
        options: &AutoscalingOptions,
        now: Timestamp,
    ) -> Result<CloudState, CloudProviderError> {
        let facts = nodes.iter().map(|node| NodeFacts::read(node, options, provider)).collect();
        Self::read(provider, nodes, (facts, Arc::new(NodePositions::of(nodes))), options, now, None).await
    }

    /// The control loop's read: as [`CloudState::gather`], with each group's instances taken
    /// from `cache` when they can be trusted (see [`InstanceCache`]). `scaling_up` tells which
    /// groups have a scale-up request in flight; `now` is the loop's clock, so `simulate` on its
    /// virtual clock keeps the cache as the controller does. The nodes' facts come from `facts`,
    /// read again only for nodes that changed.
    pub async fn gather_for_loop(
        provider: &dyn CloudProvider,
        nodes: &[Arc<Node>],
        options: &AutoscalingOptions,
        now: Timestamp,
        cache: &mut InstanceCache,
        facts: &mut NodeFactsMemo,
        scaling_up: ScalingUp<'_>,
    ) -> Result<CloudState, CloudProviderError> {
        let facts = facts.facts(nodes, options, provider);
        Self::read(provider, nodes, facts, options, now, Some((cache, scaling_up))).await
    }

    /// The facts of `node`, the `index`-th of the nodes gathered, when that is the very version
    /// gathered (a cloud state may be read with another list of nodes).
    pub fn facts_of(&self, index: usize, node: &Arc<Node>) -> Option<&NodeFacts> {
        self.node_facts.get(index).filter(|facts| facts.are_of(node))
    }

    /// Groups, and nodes' groups, are asked concurrently (bounded), so a provider behind a
    /// network (gRPC, a cloud API) costs about one round trip per kind of call, not one per
    /// group. Nodes' groups come first: they decide which templates and instances are needed.
    async fn read(
        provider: &dyn CloudProvider,
        nodes: &[Arc<Node>],
        (node_facts, node_positions): (Vec<NodeFacts>, Arc<NodePositions>),
        options: &AutoscalingOptions,
        now: Timestamp,
        mut cache: Option<(&mut InstanceCache, ScalingUp<'_>)>,
    ) -> Result<CloudState, CloudProviderError> {
        let mut state = CloudState {
            provider_name: provider.name().to_string(),
            gpu_label: provider.gpu_label().to_string(),
            resource_limiter: provider.resource_limiter()?,
            pricing: provider.pricing().ok(),
            balancing_ignored_labels: provider.balancing_ignored_labels(),
            ..Default::default()
        };
        let groups = provider.node_groups().await;
        let index_of: FxHashMap<&str, usize> = groups.iter().enumerate().map(|(i, g)| (g.id(), i)).collect();
        let owners = provider.node_groups_for_nodes(nodes).await?;
        // Each node's group (by index), and how many nodes each group has: its set of
        // instance ids is made that large at once.
        let owner_index: Vec<Option<usize>> =
            owners.iter().map(|owner| owner.as_ref().and_then(|group| index_of.get(group.id()).copied())).collect();
        let mut per_group = vec![0usize; groups.len()];
        for &i in owner_index.iter().flatten() {
            per_group[i] += 1;
        }
        // Per group: its nodes' instance ids, and the first node that can be its template (the
        // one `build_templates` will take, as it walks the nodes in the same order).
        let mut members: Vec<InstanceIds<'_>> =
            per_group.iter().map(|&n| FxHashSet::with_capacity_and_hasher(n, Default::default())).collect();
        let mut template_node: Vec<Option<&Node>> = vec![None; groups.len()];
        let mut registered: InstanceIds<'_> = FxHashSet::default();
        registered.reserve(nodes.len());
        for ((node, &owner), facts) in nodes.iter().zip(&owner_index).zip(&node_facts) {
            let instance_id = instance_id_for_node(node);
            if let Some(i) = owner {
                members[i].insert(instance_id.clone());
                // Ready is all that matters here (the startup time only tells not-started from
                // unready nodes). Read only until the group has its template node.
                if template_node[i].is_none() && qualifies_as_template(node, facts.ready, now) {
                    template_node[i] = Some(node);
                }
            }
            registered.insert(instance_id);
            if let Some(gpu) = &facts.gpu {
                state.node_gpus.insert(name_of(node).to_string(), gpu.clone());
            }
        }
        state.node_facts = node_facts;
        state.node_positions = node_positions;
        state.node_group_indexes = owner_index;
        if let Some((cache, _)) = cache.as_mut() {
            cache.begin();
        }
        let plans: Vec<Option<Cached>> = groups
            .iter()
            .zip(&members)
            .map(|(group, members)| {
                let (cache, scaling_up) = cache.as_ref()?;
                cache.usable(group.id(), members, &registered, scaling_up, now)
            })
            .collect();
        let defaults = &options.node_group_defaults;
        let reads = groups
            .iter()
            .zip(plans)
            .zip(&template_node)
            .map(|((group, cached), node)| group_state(provider, group, defaults, *node, cached));
        let read: Vec<(NodeGroupState, bool)> = stream::iter(reads).buffered(IN_FLIGHT).try_collect().await?;
        let changed = match cache {
            Some((cache, _)) => {
                cache.store(read.iter().filter(|(_, fresh)| *fresh).map(|(g, _)| g), &groups, now);
                Some(cache.changed.clone())
            }
            None => None,
        };
        for (group, (group_state, _)) in groups.into_iter().zip(read) {
            let handle = match &changed {
                Some(changed) => Arc::new(Tracked { inner: group, changed: changed.clone() }) as Arc<dyn NodeGroup>,
                None => group,
            };
            state.handles.insert(group_state.id.clone(), handle);
            state.groups.push(group_state);
        }
        Ok(state)
    }

    pub fn group(&self, id: &str) -> Option<&NodeGroupState> {
        self.groups.iter().find(|g| g.id == id)
    }

    pub fn group_of_node(&self, node: &str) -> Option<&NodeGroupState> {
        self.group_index_of_node(node).map(|i| &self.groups[i])
    }

    /// The index into `groups` of the node's group, for a node the provider manages.
    pub fn group_index_of_node(&self, node: &str) -> Option<usize> {
        self.node_positions.get(node).and_then(|position| self.node_group_indexes.get(position).copied().flatten())
    }

    /// The group of `node`, the `position`-th of a list of nodes: read at that position when
    /// it is where this very node was gathered (the loop's walks of its view's nodes: no name
    /// hashed), looked up by name otherwise.
    pub fn group_at(&self, position: usize, node: &Arc<Node>) -> Option<&NodeGroupState> {
        self.group_index_at(position, node).map(|i| &self.groups[i])
    }

    /// `group_at`'s index into `groups`.
    pub fn group_index_at(&self, position: usize, node: &Arc<Node>) -> Option<usize> {
        match self.facts_of(position, node) {
            Some(_) => self.node_group_indexes.get(position).copied().flatten(),
            None => self.group_index_of_node(name_of(node)),
        }
    }
}

/// Provider calls in flight at once while gathering.
const IN_FLIGHT: usize = 32;

/// One group as the provider reports it now, its instances from `cached` when that is given
/// and still agrees with the target size; and whether the instances were read this loop.
async fn group_state(
    provider: &dyn CloudProvider,
    group: &Arc<dyn NodeGroup>,
    defaults: &NodeGroupAutoscalingOptions,
    template_node: Option<&Node>,
    cached: Option<Cached>,
) -> Result<(NodeGroupState, bool), CloudProviderError> {
    let (template, options, target_size, read) = futures::try_join!(
        async {
            if template_node.is_some() {
                return Ok(None);
            }
            match group.template_node_info().await {
                Ok(t) => Ok(Some(t)),
                Err(CloudProviderError::NotImplemented) => Ok(None),
                Err(e) => Err(e),
            }
        },
        async {
            match group.get_options(defaults).await {
                Ok(Some(o)) => Ok(o),
                Ok(None) | Err(CloudProviderError::NotImplemented) => Ok(defaults.clone()),
                Err(e) => Err(e),
            }
        },
        group.target_size(),
        // Instances that must be read are read alongside the rest.
        async { if cached.is_none() { group.nodes().await.map(Some) } else { Ok(None) } },
    )?;
    let (instances, fresh) = match (read, cached) {
        (Some(instances), _) => (Arc::new(instances), true),
        (None, Some(cached)) => cached.resolve(group.as_ref(), target_size).await?,
        (None, None) => (Arc::new(group.nodes().await?), true),
    };
    let template_gpu = match template_node {
        Some(node) => provider.node_gpu_config(node),
        None => template.as_ref().and_then(|t: &NodeTemplate| provider.node_gpu_config(&t.node)),
    };
    let state = NodeGroupState {
        template_gpu,
        id: group.id().to_string(),
        min_size: group.min_size(),
        max_size: group.max_size(),
        target_size,
        instances,
        template,
        options,
        exists: group.exist(),
        autoprovisioned: group.autoprovisioned(),
        debug: group.debug(),
    };
    Ok((state, fresh))
}

/// How often the loop reads a settled group's instances (upstream's
/// `CloudProviderNodeInstancesCacheRefreshInterval`).
pub const INSTANCES_REFRESH_INTERVAL: Duration = Duration::from_secs(120);

/// How old remembered instances may be when a refresh fails (upstream's
/// `CloudProviderNodeInstancesCacheEntryFreshnessThreshold`).
pub const INSTANCES_STALE_AFTER: Duration = Duration::from_secs(300);

/// How many gathers read a group's instances afresh after the loop changed the group: the next
/// one, and the one after, for providers whose instance lists lag their size changes.
const READS_AFTER_CHANGE: u8 = 2;

/// A group's remembered instances that may stand for this loop's.
#[derive(Debug)]
struct Cached {
    instances: Arc<Vec<Instance>>,
    /// The refresh interval has passed: read them again.
    due: bool,
    /// Young enough to stand in when the periodic read fails.
    fallback: bool,
}

impl Cached {
    /// The instances to use, and whether they were read now. A target size that no longer
    /// matches them (a scale-up or scale-down, ours or someone else's) means they did or will
    /// change: they are read again, and cannot stand in when that fails.
    async fn resolve(
        self,
        group: &dyn NodeGroup,
        target_size: usize,
    ) -> cloudprovider::Result<(Arc<Vec<Instance>>, bool)> {
        let matches = self.instances.len() == target_size;
        if matches && !self.due {
            return Ok((self.instances, false));
        }
        match group.nodes().await {
            Ok(instances) => Ok((Arc::new(instances), true)),
            Err(e) if matches && self.fallback => {
                // As upstream's background refresh: the failure is logged, the entry kept.
                tracing::warn!("node group {}: instances not refreshed, using the last read: {e}", group.id());
                Ok((self.instances, false))
            }
            Err(e) => Err(e),
        }
    }
}

#[derive(Clone, Debug)]
struct CachedInstances {
    instances: Arc<Vec<Instance>>,
    read_at: Timestamp,
}

/// The control loop's memory of its groups' instances: upstream's
/// `CloudProviderNodeInstancesCache` (§8 item 9), kept by the loop rather than a provider so it
/// runs on the loop's clock.
///
/// A group's instances are read at most every [`INSTANCES_REFRESH_INTERVAL`], and every loop
/// while anything says they may have changed:
/// - it has a scale-up request in flight (upstream invalidates these entries every loop);
/// - the loop called `IncreaseSize`, `DeleteNodes` or `DecreaseTargetSize` on it (through the
///   handles of [`CloudState::handles`]) in the last or the previous iteration;
/// - its target size differs from the number of remembered instances;
/// - a remembered instance is not registered as a node, is creating or deleting, or has an error
///   (failed creations, unregistered and long-unregistered nodes are only ever judged on fresh
///   reads);
/// - a node of the group is not among the remembered instances.
///
/// So a settled group (every instance a registered, running node and nothing more) is what is
/// remembered; what the cloud changes without the cluster or the target showing it (an instance
/// replaced under a node that has not gone yet) is seen within the interval, as upstream sees it.
/// A periodic read that fails keeps the remembered instances until they are
/// [`INSTANCES_STALE_AFTER`] old; any other failed read fails the loop, as before.
#[derive(Debug, Default)]
pub struct InstanceCache {
    entries: HashMap<String, CachedInstances>,
    /// Groups the loop changed through a handle since the last gather (shared with the handles).
    changed: Arc<Mutex<BTreeSet<String>>>,
    /// Groups changed recently, with the number of gathers that still read them afresh.
    recently_changed: HashMap<String, u8>,
}

/// A copy is a snapshot: it does not see the changes the original's handles record later.
impl Clone for InstanceCache {
    fn clone(&self) -> Self {
        let changed = self.changed.lock().map(|c| c.clone()).unwrap_or_default();
        InstanceCache {
            entries: self.entries.clone(),
            changed: Arc::new(Mutex::new(changed)),
            recently_changed: self.recently_changed.clone(),
        }
    }
}

impl InstanceCache {
    /// Starts a gather: the groups changed since the last one are read afresh for the next
    /// [`READS_AFTER_CHANGE`] gathers.
    fn begin(&mut self) {
        let changed = self.changed.lock().map(|mut c| std::mem::take(&mut *c)).unwrap_or_default();
        for group in changed {
            self.recently_changed.insert(group, READS_AFTER_CHANGE);
        }
    }

    /// Group `id`'s remembered instances, unless they must be read now. `members` are the
    /// instance ids of the group's nodes, `registered` those of every node.
    fn usable(
        &self,
        id: &str,
        members: &InstanceIds<'_>,
        registered: &InstanceIds<'_>,
        scaling_up: ScalingUp<'_>,
        now: Timestamp,
    ) -> Option<Cached> {
        let entry = self.entries.get(id)?;
        if scaling_up(id) || self.recently_changed.contains_key(id) || !settled(&entry.instances, members, registered) {
            return None;
        }
        let age = now.duration_since(entry.read_at);
        let older_than = |d: Duration| age >= SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
        Some(Cached {
            instances: entry.instances.clone(),
            due: older_than(INSTANCES_REFRESH_INTERVAL),
            fallback: !older_than(INSTANCES_STALE_AFTER),
        })
    }

    /// Remembers the instances read this loop, and counts the gather for recently changed
    /// groups; forgets groups the provider no longer lists.
    fn store<'a>(
        &mut self,
        read: impl Iterator<Item = &'a NodeGroupState>,
        listed: &[Arc<dyn NodeGroup>],
        now: Timestamp,
    ) {
        for group in read {
            self.entries.insert(group.id.clone(), CachedInstances { instances: group.instances.clone(), read_at: now });
        }
        self.recently_changed.retain(|_, left| {
            *left = left.saturating_sub(1);
            *left > 0
        });
        let listed: HashSet<&str> = listed.iter().map(|g| g.id()).collect();
        self.entries.retain(|id, _| listed.contains(id.as_str()));
        self.recently_changed.retain(|id, _| listed.contains(id.as_str()));
    }
}

/// Every remembered instance is a registered, running node without errors, and every node of
/// the group is one of them.
fn settled(instances: &[Instance], members: &InstanceIds<'_>, registered: &InstanceIds<'_>) -> bool {
    let running =
        |i: &Instance| i.status.as_ref().is_none_or(|s| s.state == InstanceState::Running && s.error.is_none());
    let known: FxHashSet<&str> = instances.iter().map(|i| i.id.as_str()).collect();
    instances.iter().all(|i| running(i) && registered.contains(i.id.as_str()))
        && members.iter().all(|m| known.contains(m.as_ref()))
}

/// A group handle that records, for the [`InstanceCache`], that the loop changed the group.
/// Recorded on every call, failed ones included: a failure may have changed part of it.
#[derive(Debug)]
struct Tracked {
    inner: Arc<dyn NodeGroup>,
    changed: Arc<Mutex<BTreeSet<String>>>,
}

impl Tracked {
    fn record(&self) {
        if let Ok(mut changed) = self.changed.lock() {
            changed.insert(self.inner.id().to_string());
        }
    }
}

#[async_trait]
impl NodeGroup for Tracked {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn min_size(&self) -> usize {
        self.inner.min_size()
    }

    fn max_size(&self) -> usize {
        self.inner.max_size()
    }

    async fn target_size(&self) -> cloudprovider::Result<usize> {
        self.inner.target_size().await
    }

    async fn increase_size(&self, delta: usize) -> cloudprovider::Result<()> {
        self.record();
        self.inner.increase_size(delta).await
    }

    async fn atomic_increase_size(&self, delta: usize) -> cloudprovider::Result<()> {
        self.record();
        self.inner.atomic_increase_size(delta).await
    }

    async fn delete_nodes(&self, nodes: &[Node]) -> cloudprovider::Result<()> {
        self.record();
        self.inner.delete_nodes(nodes).await
    }

    async fn force_delete_nodes(&self, nodes: &[Node]) -> cloudprovider::Result<()> {
        self.record();
        self.inner.force_delete_nodes(nodes).await
    }

    async fn decrease_target_size(&self, delta: i64) -> cloudprovider::Result<()> {
        self.record();
        self.inner.decrease_target_size(delta).await
    }

    fn debug(&self) -> String {
        self.inner.debug()
    }

    async fn nodes(&self) -> cloudprovider::Result<Vec<Instance>> {
        self.inner.nodes().await
    }

    async fn template_node_info(&self) -> cloudprovider::Result<NodeTemplate> {
        self.inner.template_node_info().await
    }

    fn exist(&self) -> bool {
        self.inner.exist()
    }

    async fn create(&self) -> cloudprovider::Result<Arc<dyn NodeGroup>> {
        self.record();
        self.inner.create().await
    }

    async fn delete(&self) -> cloudprovider::Result<()> {
        self.record();
        self.inner.delete().await
    }

    fn autoprovisioned(&self) -> bool {
        self.inner.autoprovisioned()
    }

    async fn get_options(
        &self,
        defaults: &NodeGroupAutoscalingOptions,
    ) -> cloudprovider::Result<Option<NodeGroupAutoscalingOptions>> {
        self.inner.get_options(defaults).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::counting::{Calls, Counting};
    use crate::core::fixtures;
    use cloudprovider_static::{StaticCloudProvider, StaticConfig};

    const START: &str = "2026-01-02T00:00:00Z";

    /// Groups a (two Ready nodes) and b (none: only its template can stand for it), through a
    /// counting provider.
    fn setup() -> (Arc<dyn CloudProvider>, Arc<Calls>, Vec<Arc<Node>>) {
        let mut config = String::from("nodeGroups:\n");
        for id in ["a", "b"] {
            config.push_str(&format!(
                "- id: {id}\n  minSize: 0\n  maxSize: 5\n  nodeSelector: {{group: {id}}}\n  \
                 template:\n    metadata: {{labels: {{group: {id}}}}}\n    \
                 status: {{capacity: {{cpu: 4, memory: 16Gi, pods: 110}}}}\n"
            ));
        }
        let nodes: Vec<Node> = (0..2).map(|i| fixtures::node(&format!("a-{i}"), "a", 4000, 16, 110)).collect();
        let config = StaticConfig::from_yaml_str(&config, "test").unwrap();
        let limiter = AutoscalingOptions::default().resource_limiter();
        let inner = Arc::new(StaticCloudProvider::new(config, &nodes, limiter).unwrap());
        let calls = Arc::new(Calls::default());
        let provider = Arc::new(Counting { inner, calls: calls.clone() });
        (provider, calls, nodes.into_iter().map(Arc::new).collect())
    }

    fn at(seconds: i64) -> Timestamp {
        START.parse::<Timestamp>().unwrap() + SignedDuration::from_secs(seconds)
    }

    fn count(calls: &Calls, rpc: &str) -> usize {
        calls.take().get(rpc).copied().unwrap_or(0)
    }

    #[tokio::test]
    async fn templates_are_asked_for_only_for_groups_without_a_node_that_can_stand_as_one() {
        let (provider, calls, nodes) = setup();
        let options = AutoscalingOptions::default();
        let state = CloudState::gather(provider.as_ref(), &nodes, &options, at(0)).await.unwrap();
        assert_eq!(count(&calls, "NodeGroupTemplateNodeInfo"), 1, "b's only");
        assert!(state.group("a").unwrap().template.is_none() && state.group("b").unwrap().template.is_some());
        // A node Ready for less than a minute cannot stand as the template: a's is asked for too.
        let fresh = [Arc::new(fixtures::node("a-new", "a", 4000, 16, 110))];
        let just_ready = CREATED_PLUS_30S.parse::<Timestamp>().unwrap();
        CloudState::gather(provider.as_ref(), &fresh, &options, just_ready).await.unwrap();
        assert_eq!(count(&calls, "NodeGroupTemplateNodeInfo"), 2);
    }

    /// 30 s after the fixtures' nodes became Ready.
    const CREATED_PLUS_30S: &str = "2026-01-01T00:00:30Z";

    /// What the loop keeps from one gather to the next.
    #[derive(Default)]
    struct LoopCaches {
        instances: InstanceCache,
        facts: NodeFactsMemo,
    }

    impl LoopCaches {
        async fn gather(
            &mut self,
            provider: &dyn CloudProvider,
            nodes: &[Arc<Node>],
            now: Timestamp,
            scaling_up: ScalingUp<'_>,
        ) -> CloudState {
            let options = AutoscalingOptions::default();
            let (instances, facts) = (&mut self.instances, &mut self.facts);
            CloudState::gather_for_loop(provider, nodes, &options, now, instances, facts, scaling_up).await.unwrap()
        }
    }

    #[tokio::test]
    async fn the_loop_reads_settled_instances_every_two_minutes_and_plan_every_time() {
        let (provider, calls, nodes) = setup();
        let options = AutoscalingOptions::default();
        let mut caches = LoopCaches::default();
        let no_scale_up = |_: &str| false;
        for (seconds, reads) in [(0, 2), (10, 0), (119, 0), (120, 2), (130, 0)] {
            caches.gather(provider.as_ref(), &nodes, at(seconds), &no_scale_up).await;
            assert_eq!(count(&calls, "NodeGroupNodes"), reads, "at {seconds}s");
        }
        // A group with a scale-up in flight is read every loop, as upstream invalidates it.
        let a_scales_up = |id: &str| id == "a";
        caches.gather(provider.as_ref(), &nodes, at(140), &a_scales_up).await;
        assert_eq!(count(&calls, "NodeGroupNodes"), 1);
        // plan remembers nothing.
        CloudState::gather(provider.as_ref(), &nodes, &options, at(150)).await.unwrap();
        assert_eq!(count(&calls, "NodeGroupNodes"), 2);
    }

    #[tokio::test]
    async fn a_group_the_loop_changes_is_read_again_the_next_two_loops() {
        let (provider, calls, nodes) = setup();
        let mut caches = LoopCaches::default();
        let no_scale_up = |_: &str| false;
        let state = caches.gather(provider.as_ref(), &nodes, at(0), &no_scale_up).await;
        calls.take();
        // Deleting a's first node through the loop's handle (the static provider lowers the
        // target and keeps listing the instance until the node goes).
        state.handles["a"].delete_nodes(&[(*nodes[0]).clone()]).await.unwrap();
        calls.take();
        let mut reads = Vec::new();
        for seconds in [10, 20, 30] {
            let state = caches.gather(provider.as_ref(), &nodes, at(seconds), &no_scale_up).await;
            reads.push(count(&calls, "NodeGroupNodes"));
            assert_eq!(state.group("a").unwrap().instances.len(), 2, "the instance is listed until the node goes");
        }
        // Read after the change, and once more; then the target (1) still differs from the two
        // instances remembered, so a keeps being read until they agree.
        assert_eq!(reads, [1, 1, 1]);
        let remaining = vec![nodes[1].clone()];
        provider.observe_nodes(&remaining);
        for seconds in [40, 50] {
            caches.gather(provider.as_ref(), &remaining, at(seconds), &no_scale_up).await;
        }
        assert_eq!(count(&calls, "NodeGroupNodes"), 1, "read once the node went, then settled");
    }

    /// The loop's cluster state reads the cloud state's positions and groups (gathered from the
    /// same node versions); one of a cloud state gathered from the nodes in another order looks
    /// them up by name. Both come to the same.
    #[tokio::test]
    async fn the_cluster_state_is_the_same_from_the_loops_cloud_state_and_from_one_of_the_nodes_reordered() {
        use crate::core::ClusterState;
        use crate::core::readiness::Readiness;
        let (provider, _, mut nodes) = setup();
        let mut unready = fixtures::node("a-2", "a", 4000, 16, 110);
        if let Some(condition) = unready.status.as_mut().and_then(|s| s.conditions.as_mut()).and_then(|c| c.first_mut())
        {
            condition.status = "False".to_string();
        }
        nodes.push(Arc::new(unready));
        nodes.push(Arc::new(fixtures::node("x-0", "x", 4000, 16, 110)));
        let options = AutoscalingOptions::default();
        let view = crate::core::ClusterView { nodes: nodes.clone(), ..Default::default() };
        let mut caches = LoopCaches::default();
        let looped = caches.gather(provider.as_ref(), &nodes, at(0), &|_: &str| false).await;
        let reordered: Vec<Arc<Node>> = nodes.iter().rev().cloned().collect();
        let other = CloudState::gather(provider.as_ref(), &reordered, &options, at(0)).await.unwrap();
        for cloud in [&looped, &other] {
            let groups: Vec<Option<&str>> = ["a-0", "a-2", "x-0", "nowhere"]
                .iter()
                .map(|n| cloud.group_of_node(n).map(|g| g.id.as_str()))
                .collect();
            assert_eq!(groups, [Some("a"), Some("a"), None, None]);
            // By position, for the view's nodes in their order: read where the cloud state
            // gathered this very node (`looped`), by name where it did not (`other`).
            let at_positions: Vec<Option<&str>> =
                nodes.iter().enumerate().map(|(p, n)| cloud.group_at(p, n).map(|g| g.id.as_str())).collect();
            let by_name: Vec<Option<&str>> =
                nodes.iter().map(|n| cloud.group_of_node(name_of(n)).map(|g| g.id.as_str())).collect();
            assert_eq!(at_positions, by_name);
        }
        // A node at a position where another was gathered: found by its name, not the position.
        assert_eq!(looped.group_at(0, nodes.last().unwrap()).map(|g| g.id.as_str()), None, "x-0 is in no group");
        assert_eq!(looped.group_at(nodes.len() - 1, &nodes[0]).map(|g| g.id.as_str()), Some("a"));
        let from_loop = ClusterState::observe(&view, &looped, &options, at(0));
        let from_other = ClusterState::observe(&view, &other, &options, at(0));
        assert_eq!(from_loop, from_other);
        let readiness: Vec<Option<Readiness>> =
            ["a-0", "a-2", "x-0", "nowhere"].iter().map(|n| from_loop.readiness.get(n)).collect();
        assert_eq!(readiness, [Some(Readiness::Ready), Some(Readiness::Unready), Some(Readiness::Ready), None]);
        assert_eq!((from_loop.ready, from_loop.unready), (3, 1));
        assert_eq!(from_loop.group("a").map(|g| (g.ready, g.unready)), Some((2, 1)));
        // Readiness at a position: as by name, whether the state was observed with the loop's
        // cloud state (read at the position) or the other (by name), and for a node at a
        // position where another was gathered.
        for (state, cloud) in [(&from_loop, &looped), (&from_other, &other), (&from_loop, &other)] {
            let at_positions: Vec<Option<Readiness>> =
                nodes.iter().enumerate().map(|(p, n)| state.readiness.at(p, n, cloud)).collect();
            let by_name: Vec<Option<Readiness>> = nodes.iter().map(|n| state.readiness.get(name_of(n))).collect();
            assert_eq!(at_positions, by_name);
        }
        let unready_node = &nodes[nodes.len() - 2];
        assert_eq!(from_loop.readiness.at(0, unready_node, &looped), Some(Readiness::Unready));
        assert_eq!(from_loop.readiness.at(nodes.len() - 2, &nodes[0], &looped), Some(Readiness::Ready));
    }

    #[tokio::test]
    async fn the_loop_keeps_node_facts_per_version_and_they_stand_only_for_that_version() {
        let (provider, _, nodes) = setup();
        let options = AutoscalingOptions::default();
        let mut caches = LoopCaches::default();
        let no_scale_up = |_: &str| false;
        let first = caches.gather(provider.as_ref(), &nodes, at(0), &no_scale_up).await;
        let plan = CloudState::gather(provider.as_ref(), &nodes, &options, at(0)).await.unwrap();
        assert_eq!(first.node_facts, plan.node_facts, "the loop and plan read the same facts");
        assert!(first.node_facts.iter().all(|f| f.ready));
        // A node read again (a new version with the same content) is not the version gathered.
        let copy = Arc::new((*nodes[0]).clone());
        assert!(first.facts_of(0, &nodes[0]).is_some());
        assert!(first.facts_of(0, &copy).is_none() && first.facts_of(1, &nodes[0]).is_none());
        let mut changed = nodes.clone();
        changed[0] = copy.clone();
        let second = caches.gather(provider.as_ref(), &changed, at(0), &no_scale_up).await;
        assert!(second.facts_of(0, &copy).is_some() && second.facts_of(1, &nodes[1]).is_some());
    }
}
