//! How the in-memory provider is configured (in code) and how its faults are described.

use std::time::Duration;

use cloudprovider::DEFAULT_GPU_LABEL;
use cloudprovider::pricing::UnitPrices;
use cloudprovider::{CloudProviderError, NodeGroupAutoscalingOptions, NodeTemplate, ResourceLimiter};

/// What instance ids start with: `memory://<group>/<n>`.
pub const PROVIDER_ID_SCHEME: &str = "memory://";

/// The error code upstream's AWS provider gives requested instances that the cloud could not
/// launch (its ASG "placeholders"); the core backs the group off and deletes them.
pub const PLACEHOLDER_CANNOT_BE_FULFILLED: &str = "placeholder-cannot-be-fulfilled";

/// The instance id prefix of a group's instances (`memory://<group>/`).
pub fn provider_id_prefix(group: &str) -> String {
    format!("{PROVIDER_ID_SCHEME}{group}/")
}

/// One node group.
#[derive(Clone, Debug)]
pub struct MemoryGroupSpec {
    /// Unique; also the prefix of node names (`<id>-<n>`), so it must be a valid DNS label.
    pub id: String,
    pub min_size: usize,
    pub max_size: usize,
    /// Instances that exist (and are registered) when the simulation starts. May be below
    /// `min_size` (the core's `--enforce-node-group-min-size` handles that), never above max.
    pub initial_size: usize,
    /// What a new node of the group looks like; also `template_node_info()`.
    pub template: NodeTemplate,
    /// Price of one node per hour; `None` prices nodes by their resources (`unit_prices`).
    pub price_per_hour: Option<f64>,
    /// From `increase_size` until the instance runs and its Node registers.
    pub provisioning_delay: Duration,
    /// Per-group options; `None` means the autoscaler's defaults.
    pub options: Option<NodeGroupAutoscalingOptions>,
    /// Scale only to 0 or to max (sets `zero_or_max_node_scaling` in the group's options).
    pub zero_or_max: bool,
}

/// GCE's node provisioning takes 3–4 minutes (upstream FAQ); the default sits at its low end.
pub const DEFAULT_PROVISIONING_DELAY: Duration = Duration::from_secs(180);

impl MemoryGroupSpec {
    /// A group with no initial nodes, no price, default options and the default provisioning
    /// delay.
    pub fn new(id: impl Into<String>, min_size: usize, max_size: usize, template: NodeTemplate) -> MemoryGroupSpec {
        MemoryGroupSpec {
            id: id.into(),
            min_size,
            max_size,
            initial_size: 0,
            template,
            price_per_hour: None,
            provisioning_delay: DEFAULT_PROVISIONING_DELAY,
            options: None,
            zero_or_max: false,
        }
    }

    /// The options the group reports for `defaults`, or `None` when it keeps the defaults.
    pub fn options_over(&self, defaults: &NodeGroupAutoscalingOptions) -> Option<NodeGroupAutoscalingOptions> {
        if self.options.is_none() && !self.zero_or_max {
            return None;
        }
        let mut options = self.options.clone().unwrap_or_else(|| defaults.clone());
        if self.zero_or_max {
            options.zero_or_max_node_scaling = true;
        }
        Some(options)
    }
}

/// The whole provider.
#[derive(Clone, Debug)]
pub struct MemoryProviderConfig {
    pub groups: Vec<MemoryGroupSpec>,
    /// The node label carrying the GPU type.
    pub gpu_label: String,
    /// Prices per unit for nodes of groups without `price_per_hour` and for pods.
    pub unit_prices: UnitPrices,
    pub resource_limiter: ResourceLimiter,
    /// From `delete_nodes` until the instance is gone (and its Node with it).
    pub deletion_delay: Duration,
    /// From a failed launch until the failure shows in `nodes()` as instance error info (AWS
    /// reports it once the ASG's scaling activity has failed).
    pub error_report_delay: Duration,
}

/// AWS records a failed scaling activity within about a minute of the request.
pub const DEFAULT_ERROR_REPORT_DELAY: Duration = Duration::from_secs(30);

impl MemoryProviderConfig {
    pub fn new(groups: Vec<MemoryGroupSpec>) -> MemoryProviderConfig {
        MemoryProviderConfig {
            groups,
            gpu_label: DEFAULT_GPU_LABEL.to_string(),
            unit_prices: UnitPrices::default(),
            resource_limiter: ResourceLimiter::default(),
            deletion_delay: Duration::ZERO,
            error_report_delay: DEFAULT_ERROR_REPORT_DELAY,
        }
    }
}

/// A bad configuration or a fault aimed at a group that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryProviderError {
    #[error("memory cloud provider: groups[{index}].{field}: {message}")]
    InvalidGroup { index: usize, field: String, message: String },
    #[error("memory cloud provider: no node group {0:?}")]
    UnknownGroup(String),
    #[error("memory cloud provider: {0}")]
    InvalidFault(String),
}

fn is_dns_label(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 63
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
        && !id.ends_with('-')
}

pub(crate) fn validate(config: &MemoryProviderConfig) -> Result<(), MemoryProviderError> {
    for (index, group) in config.groups.iter().enumerate() {
        let fail = |field: &str, message: String| MemoryProviderError::InvalidGroup {
            index,
            field: field.to_string(),
            message,
        };
        if !is_dns_label(&group.id) {
            return Err(fail(
                "id",
                format!("{:?} is not a DNS label (lowercase letters, digits and '-', at most 63)", group.id),
            ));
        }
        if let Some(first) = config.groups[..index].iter().position(|other| other.id == group.id) {
            return Err(fail("id", format!("duplicate node group id {:?} (first at groups[{first}])", group.id)));
        }
        if group.min_size > group.max_size {
            return Err(fail("minSize", format!("{} is greater than maxSize {}", group.min_size, group.max_size)));
        }
        if group.initial_size > group.max_size {
            return Err(fail(
                "initialSize",
                format!("{} is greater than maxSize {}", group.initial_size, group.max_size),
            ));
        }
        if let Some(price) = group.price_per_hour
            && !(price.is_finite() && price >= 0.0)
        {
            return Err(fail("pricePerHour", format!("{price} is not a non-negative number")));
        }
    }
    Ok(())
}

/// How many times a fault fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultCount {
    /// The next `n` calls (or instances) are hit, then the fault is spent.
    Times(usize),
    Always,
}

impl FaultCount {
    /// Uses one shot; true when the fault fires.
    pub(crate) fn take(&mut self) -> bool {
        match self {
            FaultCount::Always => true,
            FaultCount::Times(0) => false,
            FaultCount::Times(n) => {
                *n -= 1;
                true
            }
        }
    }
}

/// How much of each `increase_size` the cloud actually launches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fulfilment {
    /// This share of each request (rounded down), in `[0, 1]`.
    Ratio(f64),
    /// At most this many instances of each request.
    Count(usize),
}

impl Fulfilment {
    /// How many of `requested` instances get launched.
    pub(crate) fn launched(self, requested: usize) -> usize {
        match self {
            Fulfilment::Ratio(ratio) => ((requested as f64) * ratio.clamp(0.0, 1.0)).floor() as usize,
            Fulfilment::Count(count) => count.min(requested),
        }
    }
}

/// The faults armed on one group.
#[derive(Clone, Debug, Default)]
pub(crate) struct GroupFaults {
    pub fail_increase: Option<(FaultCount, CloudProviderError)>,
    pub fail_delete: Option<(FaultCount, CloudProviderError)>,
    pub partial: Option<Fulfilment>,
    /// Launched instances that run but never register a Node.
    pub never_register: usize,
    /// Launches requested within `[from, until)` all fail with a stock-out.
    pub stock_outs: Vec<(k8s_openapi::jiff::Timestamp, k8s_openapi::jiff::Timestamp)>,
    /// Increases carried out, then answered this much later (wall-clock time).
    pub slow_increase: Option<(FaultCount, Duration)>,
    /// Deletions carried out, then answered this much later (wall-clock time).
    pub slow_delete: Option<(FaultCount, Duration)>,
}

impl GroupFaults {
    pub(crate) fn take_increase_failure(&mut self) -> Option<CloudProviderError> {
        take_shot(&mut self.fail_increase)
    }

    pub(crate) fn take_delete_failure(&mut self) -> Option<CloudProviderError> {
        take_shot(&mut self.fail_delete)
    }

    /// How long the answer to this increase is held back, when a slow fault fires.
    pub(crate) fn take_increase_delay(&mut self) -> Option<Duration> {
        take_shot(&mut self.slow_increase)
    }

    /// How long the answer to this deletion is held back, when a slow fault fires.
    pub(crate) fn take_delete_delay(&mut self) -> Option<Duration> {
        take_shot(&mut self.slow_delete)
    }

    pub(crate) fn stocked_out(&self, now: k8s_openapi::jiff::Timestamp) -> bool {
        self.stock_outs.iter().any(|(from, until)| *from <= now && now < *until)
    }
}

/// Fires an armed fault once: its payload when it fires; the slot is emptied once spent.
fn take_shot<T: Clone>(slot: &mut Option<(FaultCount, T)>) -> Option<T> {
    let (count, payload) = slot.as_mut()?;
    if count.take() {
        let payload = payload.clone();
        if *count == FaultCount::Times(0) {
            *slot = None;
        }
        Some(payload)
    } else {
        *slot = None;
        None
    }
}
