//! `AwsCloudProvider` and `AwsNodeGroup`: the seam's traits over Auto Scaling groups.
//!
//! `refresh()` is the only place that reads AWS on the loop's path: one
//! `DescribeAutoScalingGroups` (by name, 100 names a call; or, at most once a minute, by the
//! discovery tags), `DescribeScalingActivities` for groups whose desired capacity is not backed
//! by instances, and the instance-type look-ups of groups seen for the first time. Every other
//! read answers from what it cached; the group operations call AWS and update the cache.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use aws_sdk_autoscaling::types::Filter;
use k8s_openapi::api::core::v1::Node;

use cloudprovider::quantity::quantity_value;
use cloudprovider::{
    CloudProvider, CloudProviderError, GPU_RESOURCE, GpuConfig, Instance, InstanceErrorClass, InstanceErrorInfo,
    InstanceState, InstanceStatus, NodeGroup, NodeGroupAutoscalingOptions, NodeTemplate, PricingModel, ResourceLimiter,
    Result,
};

use crate::asg::{Asg, LaunchSource, PLACEHOLDER_PREFIX, TemplateRef, parse_provider_id, provider_id};
use crate::client::{ApiStats, AwsClients};
use crate::config::{DiscoveryTags, StaticAsg};
use crate::error::api_error;
use crate::instance_types::{GPU_TYPES, InstanceType};
use crate::pricing::AwsPricing;
use crate::state::{Group, State, failed_activity};
use crate::template::{TemplateInput, build_template, options_from_tags};

pub const PROVIDER_NAME: &str = "aws";
/// The node label carrying the GPU type on AWS (upstream's).
pub const GPU_LABEL: &str = "k8s.amazonaws.com/accelerator";
/// How often discovery by tags runs (upstream's `refreshInterval`).
pub const DISCOVERY_INTERVAL: Duration = Duration::from_secs(60);
/// How long a `$Latest` / `$Default` launch template version's instance type is trusted
/// (upstream's instance-type cache lives 20 minutes).
pub const TEMPLATE_TTL: Duration = Duration::from_secs(20 * 60);
/// Upstream's error code for placeholders AWS could not launch.
pub const PLACEHOLDER_UNFULFILLABLE: &str = "placeholder-cannot-be-fulfilled";
/// `DescribeAutoScalingGroups` takes at most 100 names a call.
const NAMES_PER_CALL: usize = 100;
/// Upstream's opt-out annotation for `HasInstance`.
const ENABLED_ANNOTATION: &str = "k8s.io/cluster-autoscaler-enabled";

/// Labels that differ between otherwise identical AWS groups; the core ignores them when it
/// compares groups for `--balance-similar-node-groups` (upstream's AWS comparator).
pub const BALANCING_IGNORED_LABELS: &[&str] = &[
    "alpha.eksctl.io/instance-id",
    "alpha.eksctl.io/nodegroup-name",
    "eks.amazonaws.com/nodegroup",
    "k8s.amazonaws.com/eniConfig",
    "lifecycle",
    "topology.ebs.csi.aws.com/zone",
    "topology.k8s.aws/zone-id",
];

/// What the flags and files configure.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub static_asgs: Vec<StaticAsg>,
    pub discovery: DiscoveryTags,
    /// `--aws-use-static-instance-list`: never call `DescribeInstanceTypes`.
    pub use_static_instance_list: bool,
    /// Refuse every change (`plan`).
    pub read_only: bool,
    /// The region templates are labelled with.
    pub region: String,
}

/// What the provider and its group handles share.
pub(crate) struct Shared {
    clients: AwsClients,
    settings: Settings,
    state: Mutex<State>,
}

impl Shared {
    /// The cache; every update validates before it mutates, so a poisoned lock is still usable.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refuse_if_read_only(&self, what: &str) -> Result<()> {
        if self.settings.read_only {
            return Err(CloudProviderError::InvalidRequest(format!(
                "{what} refused: the aws provider is read-only here (plan)"
            )));
        }
        Ok(())
    }

    /// One refresh; see the module documentation.
    async fn refresh(&self) -> Result<()> {
        let now = Instant::now();
        let (discover, names) = {
            let state = self.state();
            let discover = !self.settings.discovery.is_empty()
                && state.discovered_at.is_none_or(|at| now.duration_since(at) >= DISCOVERY_INTERVAL);
            let mut names: BTreeSet<String> = self.settings.static_asgs.iter().map(|s| s.name.clone()).collect();
            if !discover {
                names.extend(state.groups.keys().cloned());
            }
            (discover, names)
        };
        let mut found = Vec::new();
        if discover {
            found.extend(self.describe_by_tags().await?);
        }
        if !names.is_empty() {
            found.extend(self.describe_by_names(&names.into_iter().collect::<Vec<_>>()).await?);
        }
        {
            let mut state = self.state();
            let dropped = state.merge(found, discover, &self.settings.static_asgs);
            for name in dropped {
                tracing::info!(asg = %name, "ASG no longer exists or no longer matches the discovery tags; dropped");
            }
            for s in &self.settings.static_asgs {
                if !state.groups.contains_key(&s.name) {
                    state.warn_once(format!("ASG {} (from --nodes) not found", s.name));
                }
            }
            if discover {
                state.discovered_at = Some(now);
            }
        }
        self.check_scaling_activities().await;
        self.resolve_instance_types().await;
        Ok(())
    }

    async fn describe_by_tags(&self) -> Result<Vec<Asg>> {
        let filters: Vec<Filter> = self
            .settings
            .discovery
            .iter()
            .map(|(key, value)| match value {
                Some(value) => Filter::builder().name(format!("tag:{key}")).values(value).build(),
                None => Filter::builder().name("tag-key").values(key).build(),
            })
            .collect();
        self.describe_pages(None, Some(filters)).await
    }

    async fn describe_by_names(&self, names: &[String]) -> Result<Vec<Asg>> {
        let mut out = Vec::new();
        for chunk in names.chunks(NAMES_PER_CALL) {
            out.extend(self.describe_pages(Some(chunk.to_vec()), None).await?);
        }
        Ok(out)
    }

    /// `DescribeAutoScalingGroups`, every page.
    async fn describe_pages(&self, names: Option<Vec<String>>, filters: Option<Vec<Filter>>) -> Result<Vec<Asg>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let request = self
                .clients
                .autoscaling
                .describe_auto_scaling_groups()
                .set_auto_scaling_group_names(names.clone())
                .set_filters(filters.clone())
                .max_records(100)
                .set_next_token(token.clone());
            let page = self
                .clients
                .timed("DescribeAutoScalingGroups", request.send())
                .await
                .map_err(|e| api_error("DescribeAutoScalingGroups", e))?;
            out.extend(page.auto_scaling_groups().iter().filter_map(Asg::from_api));
            token = page.next_token().filter(|t| !t.is_empty()).map(str::to_string);
            if token.is_none() {
                return Ok(out);
            }
        }
    }

    /// One ASG, described now (for actions that must not trust the cache).
    async fn describe_one(&self, name: &str) -> Result<Asg> {
        let found = self.describe_pages(Some(vec![name.to_string()]), None).await?;
        found
            .into_iter()
            .find(|asg| asg.name == name)
            .ok_or_else(|| CloudProviderError::NodeGroupDoesNotExist(name.to_string()))
    }

    /// Marks groups whose unfulfilled capacity a failed scaling activity explains.
    async fn check_scaling_activities(&self) {
        let pending: Vec<(String, Option<SystemTime>)> = {
            let mut state = self.state();
            for group in state.groups.values_mut().filter(|g| g.asg.missing() == 0) {
                group.failed_activity = None;
            }
            state
                .groups
                .values()
                .filter(|g| g.asg.missing() > 0 && g.failed_activity.is_none())
                .map(|g| (g.asg.name.clone(), g.last_size_change))
                .collect()
        };
        for (name, since) in pending {
            let request =
                self.clients.autoscaling.describe_scaling_activities().auto_scaling_group_name(&name).max_records(20);
            match self.clients.timed("DescribeScalingActivities", request.send()).await {
                Ok(answer) => {
                    if let Some(message) = failed_activity(answer.activities(), since) {
                        tracing::warn!(asg = %name, %message, "the ASG cannot launch its desired capacity");
                        if let Some(group) = self.state().groups.get_mut(&name) {
                            group.failed_activity = Some(message);
                        }
                    }
                }
                // As upstream: when in doubt, the group is assumed able to launch.
                Err(e) => {
                    tracing::debug!(asg = %name, error = %api_error("DescribeScalingActivities", e), "scaling activities unavailable")
                }
            }
        }
    }

    /// Instance types of groups seen for the first time: their launch configuration or launch
    /// template (version resolved) once, then `DescribeInstanceTypes` once per new type.
    async fn resolve_instance_types(&self) {
        let now = Instant::now();
        let (configurations, templates) = {
            let state = self.state();
            let mut configurations = BTreeSet::new();
            let mut templates: Vec<TemplateRef> = Vec::new();
            for group in state.groups.values() {
                match &group.asg.launch {
                    LaunchSource::Configuration(name) if !state.configuration_types.contains_key(name) => {
                        configurations.insert(name.clone());
                    }
                    LaunchSource::Template(t) | LaunchSource::Mixed { first_override: None, template: Some(t) } => {
                        let fresh = state
                            .template_types
                            .get(t)
                            .is_some_and(|(_, at)| t.is_pinned() || now.duration_since(*at) < TEMPLATE_TTL);
                        if !fresh && !templates.contains(t) {
                            templates.push(t.clone());
                        }
                    }
                    _ => {}
                }
            }
            (configurations.into_iter().collect::<Vec<_>>(), templates)
        };
        for chunk in configurations.chunks(50) {
            let request = self
                .clients
                .autoscaling
                .describe_launch_configurations()
                .set_launch_configuration_names(Some(chunk.to_vec()));
            match self.clients.timed("DescribeLaunchConfigurations", request.send()).await {
                Ok(answer) => {
                    let mut state = self.state();
                    for name in chunk {
                        let found = answer
                            .launch_configurations()
                            .iter()
                            .find(|c| c.launch_configuration_name() == Some(name.as_str()))
                            .and_then(|c| c.instance_type())
                            .map(str::to_string);
                        if found.is_none() {
                            state.warn_once(format!("launch configuration {name}: no instance type"));
                        }
                        state.configuration_types.insert(name.clone(), found);
                    }
                }
                Err(e) => self.state().warn_once(api_error("DescribeLaunchConfigurations", e).to_string()),
            }
        }
        for template in templates {
            let request = self
                .clients
                .ec2
                .describe_launch_template_versions()
                .set_launch_template_id(template.id.clone())
                .set_launch_template_name(if template.id.is_some() { None } else { template.name.clone() })
                .versions(&template.version);
            match self.clients.timed("DescribeLaunchTemplateVersions", request.send()).await {
                Ok(answer) => {
                    let found = answer
                        .launch_template_versions()
                        .first()
                        .and_then(|v| v.launch_template_data())
                        .and_then(|d| d.instance_type())
                        .map(|t| t.as_str().to_string());
                    let mut state = self.state();
                    if found.is_none() {
                        state.warn_once(format!(
                            "launch template {}: no instance type (instance requirements are not supported)",
                            template.describe()
                        ));
                    }
                    state.template_types.insert(template, (found, now));
                }
                Err(e) => self.state().warn_once(api_error("DescribeLaunchTemplateVersions", e).to_string()),
            }
        }
        let wanted: Vec<String> = {
            let state = self.state();
            let names: BTreeSet<String> = state
                .groups
                .values()
                .filter_map(|g| state.type_name_of(&g.asg))
                .filter(|t| !state.asked_types.contains(t))
                .collect();
            names.into_iter().collect()
        };
        if wanted.is_empty() {
            return;
        }
        if self.settings.use_static_instance_list {
            let mut state = self.state();
            state.asked_types.extend(wanted);
            return;
        }
        for chunk in wanted.chunks(100) {
            let types = chunk.iter().map(|t| aws_sdk_ec2::types::InstanceType::from(t.as_str())).collect();
            let request = self.clients.ec2.describe_instance_types().set_instance_types(Some(types));
            let answer = self.clients.timed("DescribeInstanceTypes", request.send()).await;
            let mut state = self.state();
            match answer {
                Ok(answer) => {
                    for info in answer.instance_types().iter().filter_map(InstanceType::from_api) {
                        state.instance_types.insert(info.name.clone(), info);
                    }
                }
                Err(e) => state.warn_once(format!(
                    "{}; using the built-in instance-type table for {}",
                    api_error("DescribeInstanceTypes", e),
                    chunk.join(", ")
                )),
            }
            state.asked_types.extend(chunk.iter().cloned());
        }
    }

    fn group(&self, name: &str) -> Result<Group> {
        self.state()
            .groups
            .get(name)
            .cloned()
            .ok_or_else(|| CloudProviderError::NodeGroupDoesNotExist(name.to_string()))
    }

    /// `SetDesiredCapacity` (never honouring cooldowns, as upstream), then the cache.
    async fn set_desired(&self, name: &str, size: usize) -> Result<()> {
        let capacity = i32::try_from(size)
            .map_err(|_| CloudProviderError::InvalidRequest(format!("desired capacity {size} is too large")))?;
        let request = self
            .clients
            .autoscaling
            .set_desired_capacity()
            .auto_scaling_group_name(name)
            .desired_capacity(capacity)
            .honor_cooldown(false);
        self.clients
            .timed("SetDesiredCapacity", request.send())
            .await
            .map_err(|e| api_error("SetDesiredCapacity", e))?;
        let mut state = self.state();
        if let Some(group) = state.groups.get_mut(name) {
            group.asg.desired = size;
            group.last_size_change = Some(SystemTime::now());
            group.failed_activity = None;
        }
        state.reindex();
        Ok(())
    }

    async fn terminate(&self, name: &str, instance_id: &str) -> Result<()> {
        let request = self
            .clients
            .autoscaling
            .terminate_instance_in_auto_scaling_group()
            .instance_id(instance_id)
            .should_decrement_desired_capacity(true);
        self.clients
            .timed("TerminateInstanceInAutoScalingGroup", request.send())
            .await
            .map_err(|e| api_error("TerminateInstanceInAutoScalingGroup", e))?;
        let mut state = self.state();
        if let Some(group) = state.groups.get_mut(name) {
            group.asg.desired = group.asg.desired.saturating_sub(1);
            group.last_size_change = Some(SystemTime::now());
            if let Some(instance) = group.asg.instances.iter_mut().find(|i| i.id == instance_id) {
                instance.lifecycle = "Terminating".to_string();
            }
        }
        state.reindex();
        Ok(())
    }
}

/// The `aws` cloud provider.
pub struct AwsCloudProvider {
    shared: Arc<Shared>,
    limiter: ResourceLimiter,
    pricing: Arc<AwsPricing>,
}

impl AwsCloudProvider {
    pub fn new(clients: AwsClients, settings: Settings, limiter: ResourceLimiter) -> AwsCloudProvider {
        AwsCloudProvider {
            shared: Arc::new(Shared { clients, settings, state: Mutex::new(State::default()) }),
            limiter,
            pricing: Arc::new(AwsPricing),
        }
    }

    /// What the provider's AWS calls did so far (per-operation counts).
    pub fn api_stats(&self) -> Arc<ApiStats> {
        self.shared.clients.stats().clone()
    }

    /// The group named `name`, with its concrete type.
    pub fn group(&self, name: &str) -> Option<Arc<AwsNodeGroup>> {
        let state = self.shared.state();
        state.groups.get(name).map(|g| Arc::new(AwsNodeGroup::new(self.shared.clone(), g)))
    }
}

#[async_trait]
impl CloudProvider for AwsCloudProvider {
    fn name(&self) -> &str {
        PROVIDER_NAME
    }

    async fn node_groups(&self) -> Vec<Arc<dyn NodeGroup>> {
        let state = self.shared.state();
        state
            .groups
            .values()
            .map(|g| Arc::new(AwsNodeGroup::new(self.shared.clone(), g)) as Arc<dyn NodeGroup>)
            .collect()
    }

    /// By the providerID `aws:///<az>/<instance-id>` and the instances last described; any other
    /// providerID, or an instance of no known ASG, is not the provider's.
    async fn node_group_for_node(&self, node: &Node) -> Result<Option<Arc<dyn NodeGroup>>> {
        let Some((_, instance_id)) =
            node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).and_then(parse_provider_id)
        else {
            return Ok(None);
        };
        let state = self.shared.state();
        let group = state.instance_index.get(instance_id).and_then(|name| state.groups.get(name));
        Ok(group.map(|g| Arc::new(AwsNodeGroup::new(self.shared.clone(), g)) as Arc<dyn NodeGroup>))
    }

    /// As upstream: Fargate nodes are unknown, nodes annotated
    /// `k8s.io/cluster-autoscaler-enabled: "false"` have no instance to look after, and any
    /// other node's instance exists while an ASG lists it.
    async fn has_instance(&self, node: &Node) -> Result<bool> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        if name.starts_with("fargate") {
            return Err(CloudProviderError::NotImplemented);
        }
        if node.metadata.annotations.as_ref().and_then(|a| a.get(ENABLED_ANNOTATION)).is_some_and(|v| v == "false") {
            return Ok(false);
        }
        let provider_id = node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).unwrap_or_default();
        let Some((_, instance_id)) = parse_provider_id(provider_id) else {
            return Err(CloudProviderError::InvalidRequest(format!(
                "node {name}: providerID {provider_id:?} is not aws:///<zone>/<instance-id>"
            )));
        };
        Ok(self.shared.state().instance_index.contains_key(instance_id))
    }

    fn pricing(&self) -> Result<Arc<dyn PricingModel>> {
        Ok(self.pricing.clone())
    }

    fn resource_limiter(&self) -> Result<ResourceLimiter> {
        Ok(self.limiter.clone())
    }

    fn gpu_label(&self) -> &str {
        GPU_LABEL
    }

    fn available_gpu_types(&self) -> Vec<String> {
        GPU_TYPES.iter().map(|t| t.to_string()).collect()
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

    fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.shared.clients.stats().register(registry);
    }

    fn balancing_ignored_labels(&self) -> Vec<String> {
        BALANCING_IGNORED_LABELS.iter().map(|l| l.to_string()).collect()
    }

    async fn cleanup(&self) -> Result<()> {
        Ok(())
    }

    async fn refresh(&self) -> Result<()> {
        self.shared.refresh().await
    }
}

/// One ASG as a node group. Bounds are those of the refresh that made the handle.
pub struct AwsNodeGroup {
    shared: Arc<Shared>,
    name: String,
    min: usize,
    max: usize,
}

impl fmt::Debug for AwsNodeGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsNodeGroup")
            .field("name", &self.name)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

impl AwsNodeGroup {
    fn new(shared: Arc<Shared>, group: &Group) -> AwsNodeGroup {
        AwsNodeGroup { shared, name: group.asg.name.clone(), min: group.min, max: group.max }
    }

    fn invalid(message: String) -> CloudProviderError {
        CloudProviderError::InvalidRequest(message)
    }
}

#[async_trait]
impl NodeGroup for AwsNodeGroup {
    fn id(&self) -> &str {
        &self.name
    }

    fn min_size(&self) -> usize {
        self.min
    }

    fn max_size(&self) -> usize {
        self.max
    }

    async fn target_size(&self) -> Result<usize> {
        Ok(self.shared.group(&self.name)?.asg.desired)
    }

    /// `SetDesiredCapacity(desired + delta)`, refused above max (checked here: AWS would
    /// refuse too, but not every AWS-compatible endpoint does).
    async fn increase_size(&self, delta: usize) -> Result<()> {
        self.shared.refuse_if_read_only("IncreaseSize")?;
        if delta == 0 {
            return Err(Self::invalid("size increase must be positive".into()));
        }
        let group = self.shared.group(&self.name)?;
        let desired = group.asg.desired + delta;
        if desired > group.max {
            return Err(Self::invalid(format!("size increase too large - desired:{desired} max:{}", group.max)));
        }
        self.shared.set_desired(&self.name, desired).await
    }

    /// Terminates the nodes' instances, each lowering the desired capacity
    /// (`TerminateInstanceInAutoScalingGroup` with `ShouldDecrementDesiredCapacity`). Refused
    /// when the group is at or below its minimum, or would go below it; every node must be an
    /// instance of this group. Instances already terminating are skipped; placeholders go by
    /// lowering the desired capacity to the instances that exist.
    async fn delete_nodes(&self, nodes: &[Node]) -> Result<()> {
        self.shared.refuse_if_read_only("DeleteNodes")?;
        let group = self.shared.group(&self.name)?;
        let mut instances = Vec::new();
        let mut placeholders = 0;
        for node in nodes {
            let node_name = node.metadata.name.as_deref().unwrap_or_default();
            let provider_id = node.spec.as_ref().and_then(|s| s.provider_id.as_deref()).unwrap_or_default();
            let Some((_, instance_id)) = parse_provider_id(provider_id) else {
                return Err(Self::invalid(format!("node {node_name} has no AWS providerID ({provider_id:?})")));
            };
            // A placeholder of this group stays this group's after an earlier call removed it.
            let own_placeholder = instance_id
                .strip_prefix(&format!("{PLACEHOLDER_PREFIX}-{}-", self.name))
                .is_some_and(|index| index.parse::<usize>().is_ok());
            let owner = self.shared.state().instance_index.get(instance_id).cloned();
            if owner.as_deref() != Some(self.name.as_str()) && !own_placeholder {
                return Err(Self::invalid(format!("{node_name} belongs to a different asg than {}", self.name)));
            }
            if own_placeholder {
                placeholders += 1;
            } else if let Some(instance) = group.asg.instances.iter().find(|i| i.id == instance_id) {
                instances.push(instance.clone());
            }
        }
        // Placeholders already removed by an earlier call of this loop: nothing left to do.
        if instances.is_empty() && placeholders > 0 && group.asg.missing() == 0 {
            return Ok(());
        }
        if group.asg.desired <= group.min {
            return Err(Self::invalid("min size reached, nodes will not be deleted".into()));
        }
        let to_terminate: Vec<_> = instances.iter().filter(|i| !i.is_terminating()).collect();
        if group.asg.desired.saturating_sub(to_terminate.len()) < group.min && placeholders == 0 {
            return Err(Self::invalid(format!(
                "min size reached, nodes will not be deleted (desired {} - {} < min {})",
                group.asg.desired,
                to_terminate.len(),
                group.min
            )));
        }
        if placeholders > 0 {
            // The cache may be a loop old: count the instances that exist now.
            let fresh = self.shared.describe_one(&self.name).await?;
            let existing = fresh.instances.len().max(group.min);
            if fresh.desired > existing {
                tracing::info!(asg = %self.name, from = fresh.desired, to = existing, "removing placeholders: desired capacity lowered to the instances that exist");
                self.shared.set_desired(&self.name, existing).await?;
            }
        }
        for instance in instances {
            if instance.is_terminating() {
                tracing::debug!(instance = %instance.id, state = %instance.lifecycle, "already terminating; skipped");
                continue;
            }
            self.shared.terminate(&self.name, &instance.id).await?;
        }
        Ok(())
    }

    /// Lowers the desired capacity without touching instances: only the part no instance
    /// backs yet can go.
    async fn decrease_target_size(&self, delta: i64) -> Result<()> {
        self.shared.refuse_if_read_only("DecreaseTargetSize")?;
        if delta >= 0 {
            return Err(Self::invalid("size decrease must be negative".into()));
        }
        let group = self.shared.group(&self.name)?;
        let desired = i64::try_from(group.asg.desired).unwrap_or(i64::MAX);
        let existing = group.asg.instances.len();
        let target = desired + delta;
        if target < i64::try_from(existing).unwrap_or(i64::MAX) {
            return Err(Self::invalid(format!(
                "attempt to delete existing nodes targetSize:{desired} delta:{delta} existingNodes: {existing}"
            )));
        }
        let target = usize::try_from(target).unwrap_or(0);
        if target < group.min {
            return Err(Self::invalid(format!("size decrease too large - desired:{target} min:{}", group.min)));
        }
        self.shared.set_desired(&self.name, target).await
    }

    /// The ASG's instances with their states, then placeholders
    /// (`aws:///<first-az>/i-placeholder-<asg>-<i>`) for desired capacity no instance backs;
    /// when a scaling activity failed since the last size change, placeholders carry
    /// upstream's `placeholder-cannot-be-fulfilled` out-of-resources error, so the core backs
    /// the group off and removes them.
    async fn nodes(&self) -> Result<Vec<Instance>> {
        let group = self.shared.group(&self.name)?;
        let mut out: Vec<Instance> = group
            .asg
            .instances
            .iter()
            .map(|i| Instance {
                id: i.provider_id(),
                status: Some(InstanceStatus {
                    state: if i.is_terminating() {
                        InstanceState::Deleting
                    } else if i.is_pending() {
                        InstanceState::Creating
                    } else {
                        InstanceState::Running
                    },
                    error: None,
                }),
            })
            .collect();
        let error = group.failed_activity.as_ref().map(|message| InstanceErrorInfo {
            class: InstanceErrorClass::OutOfResources,
            code: PLACEHOLDER_UNFULFILLABLE.to_string(),
            message: format!("AWS cannot provision any more instances for this node group: {message}"),
        });
        for id in group.placeholder_ids() {
            out.push(Instance {
                id: provider_id(group.asg.first_zone(), &id),
                status: Some(InstanceStatus { state: InstanceState::Creating, error: error.clone() }),
            });
        }
        Ok(out)
    }

    /// Scale from zero: see `template::build_template`. A group whose instance type is not
    /// known (yet) has no template: the core then uses a live node of the group, if any.
    async fn template_node_info(&self) -> Result<NodeTemplate> {
        let mut state = self.shared.state();
        let group = state
            .groups
            .get(&self.name)
            .cloned()
            .ok_or_else(|| CloudProviderError::NodeGroupDoesNotExist(self.name.clone()))?;
        let Some(instance_type) = state.instance_type_of(&group.asg) else {
            state.warn_once(format!("ASG {}: instance type unknown, no template to scale from zero", self.name));
            return Err(CloudProviderError::NotImplemented);
        };
        let input = TemplateInput {
            asg: &self.name,
            instance_type: &instance_type,
            region: &self.shared.settings.region,
            zone: group.asg.first_zone(),
            tags: &group.asg.tags,
        };
        let (template, warnings) = build_template(&input);
        for warning in warnings {
            state.warn_once(warning);
        }
        Ok(template)
    }

    fn exist(&self) -> bool {
        true
    }

    /// As upstream: an ASG always exists already.
    async fn create(&self) -> Result<Arc<dyn NodeGroup>> {
        Err(CloudProviderError::AlreadyExist)
    }

    async fn get_options(&self, defaults: &NodeGroupAutoscalingOptions) -> Result<Option<NodeGroupAutoscalingOptions>> {
        let group = self.shared.group(&self.name)?;
        let (overrides, warnings) = options_from_tags(&self.name, &group.asg.tags);
        if !warnings.is_empty() {
            let mut state = self.shared.state();
            for warning in warnings {
                state.warn_once(warning);
            }
        }
        Ok(overrides.map(|o| o.merged_over(defaults)))
    }
}
