//! Per-unit prices, for providers that price nodes and pods by their resources (the static and
//! memory providers for groups without a price per hour, and any provider that wants the same
//! rule): a node costs its capacity's cores, memory and GPUs (what the machine is billed for), a
//! pod its containers' requests.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;

use crate::quantity::quantity_value;
use crate::{CloudProviderError, GPU_RESOURCE, Result};

/// Per-unit prices per hour.
#[derive(Clone, Debug, PartialEq)]
pub struct UnitPrices {
    pub cpu_core_per_hour: f64,
    pub memory_gib_per_hour: f64,
    pub gpu_per_hour: f64,
}

impl Default for UnitPrices {
    /// Upstream GCE's on-demand defaults.
    fn default() -> Self {
        UnitPrices { cpu_core_per_hour: 0.033174, memory_gib_per_hour: 0.004446, gpu_per_hour: 0.7 }
    }
}

const GIB: f64 = (1u64 << 30) as f64;

/// The length of a price period in hours; a period that ends before it starts is an error.
pub fn hours_between(start: Timestamp, end: Timestamp) -> Result<f64> {
    if end < start {
        return Err(CloudProviderError::InvalidRequest(format!(
            "price period ends ({end}) before it starts ({start})"
        )));
    }
    Ok(end.duration_since(start).as_secs_f64() / 3600.0)
}

/// What `node` costs over `hours` at per-unit prices. Capacity counts; allocatable only for a
/// resource capacity does not list.
pub fn node_price(prices: &UnitPrices, node: &Node, hours: f64) -> Result<f64> {
    let what = format!("node {}", node.metadata.name.as_deref().unwrap_or_default());
    let status = node.status.as_ref();
    let resource = |name: &str| {
        let capacity = status.and_then(|status| status.capacity.as_ref());
        if capacity.is_some_and(|capacity| capacity.contains_key(name)) {
            amount(capacity, name, &what)
        } else {
            amount(status.and_then(|status| status.allocatable.as_ref()), name, &what)
        }
    };
    Ok(hourly(prices, resource("cpu")?, resource("memory")?, resource(GPU_RESOURCE)?) * hours)
}

/// What `pod`'s container requests cost over `hours` at per-unit prices.
pub fn pod_price(prices: &UnitPrices, pod: &Pod, hours: f64) -> Result<f64> {
    let what = format!(
        "pod {}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let (mut cpu, mut memory, mut gpus) = (0.0, 0.0, 0.0);
    for container in pod.spec.iter().flat_map(|spec| &spec.containers) {
        let requests = container.resources.as_ref().and_then(|resources| resources.requests.as_ref());
        cpu += amount(requests, "cpu", &what)?;
        memory += amount(requests, "memory", &what)?;
        gpus += amount(requests, GPU_RESOURCE, &what)?;
    }
    Ok(hourly(prices, cpu, memory, gpus) * hours)
}

/// Value of one resource, 0 when absent; `what` names the object in errors.
fn amount(resources: Option<&BTreeMap<String, Quantity>>, name: &str, what: &str) -> Result<f64> {
    match resources.and_then(|resources| resources.get(name)) {
        Some(quantity) => quantity_value(&quantity.0)
            .map_err(|message| CloudProviderError::InvalidRequest(format!("{what}: resource {name}: {message}"))),
        None => Ok(0.0),
    }
}

/// Hourly price of `cpu` cores, `memory` bytes and `gpus` devices.
fn hourly(prices: &UnitPrices, cpu: f64, memory: f64, gpus: f64) -> f64 {
    cpu * prices.cpu_core_per_hour + memory / GIB * prices.memory_gib_per_hour + gpus * prices.gpu_per_hour
}
