//! Prices for the `price` expander, like the static provider's: a group's `price_per_hour`,
//! else per-unit prices of the node's capacity.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;

use super::config::PROVIDER_ID_SCHEME;
use super::group::{Inner, provider_id};
use super::template::resource_value;
use crate::static_provider::{GPU_RESOURCE, UnitPrices};
use crate::{CloudProviderError, PricingModel, Result};

const GIB: f64 = (1u64 << 30) as f64;

pub struct MemoryPricing {
    inner: Arc<Inner>,
}

impl MemoryPricing {
    pub(crate) fn new(inner: Arc<Inner>) -> MemoryPricing {
        MemoryPricing { inner }
    }

    /// The group of a node: by providerID, or, for the template copies the core makes
    /// (`template-node-for-<id>` and `template-node-for-<id>-<suffix>`), by name.
    fn group_of(&self, node: &Node) -> Option<usize> {
        if let Some(group) = provider_id(node)
            .and_then(|id| id.strip_prefix(PROVIDER_ID_SCHEME))
            .and_then(|rest| rest.split_once('/'))
            .map(|(group, _)| group)
        {
            return self.inner.group_index(group);
        }
        let name = node.metadata.name.as_deref()?;
        self.inner
            .config
            .groups
            .iter()
            .enumerate()
            .filter(|(_, group)| {
                let template_name = group.template.node.metadata.name.as_deref();
                let prefix = format!("template-node-for-{}", group.id);
                template_name == Some(name) || name == prefix || name.starts_with(&format!("{prefix}-"))
            })
            .max_by_key(|(_, group)| group.id.len())
            .map(|(index, _)| index)
    }
}

fn hours_between(start: Timestamp, end: Timestamp) -> Result<f64> {
    if end < start {
        return Err(CloudProviderError::InvalidRequest(format!(
            "price period ends ({end}) before it starts ({start})"
        )));
    }
    Ok(end.duration_since(start).as_secs_f64() / 3600.0)
}

fn unit_price(prices: &UnitPrices, cpu: f64, memory: f64, gpus: f64) -> f64 {
    cpu * prices.cpu_core_per_hour + memory / GIB * prices.memory_gib_per_hour + gpus * prices.gpu_per_hour
}

impl PricingModel for MemoryPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> Result<f64> {
        let hours = hours_between(start, end)?;
        if let Some(price) = self.group_of(node).and_then(|index| self.inner.config.groups[index].price_per_hour) {
            return Ok(price * hours);
        }
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let status = node.status.as_ref();
        // Capacity is what the machine is billed for; allocatable only when capacity lacks it.
        let resource = |resource: &str| {
            let capacity = status.and_then(|s| s.capacity.as_ref());
            let list = if capacity.is_some_and(|c| c.contains_key(resource)) {
                capacity
            } else {
                status.and_then(|s| s.allocatable.as_ref())
            };
            resource_value(list, resource).map_err(|m| CloudProviderError::InvalidRequest(format!("node {name}: {m}")))
        };
        let hourly =
            unit_price(&self.inner.config.unit_prices, resource("cpu")?, resource("memory")?, resource(GPU_RESOURCE)?);
        Ok(hourly * hours)
    }

    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> Result<f64> {
        let hours = hours_between(start, end)?;
        let what = format!(
            "pod {}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        let (mut cpu, mut memory, mut gpus) = (0.0, 0.0, 0.0);
        for container in pod.spec.iter().flat_map(|spec| &spec.containers) {
            let requests = container.resources.as_ref().and_then(|r| r.requests.as_ref());
            let value = |resource: &str| {
                resource_value(requests, resource)
                    .map_err(|m| CloudProviderError::InvalidRequest(format!("{what}: {m}")))
            };
            cpu += value("cpu")?;
            memory += value("memory")?;
            gpus += value(GPU_RESOURCE)?;
        }
        Ok(unit_price(&self.inner.config.unit_prices, cpu, memory, gpus) * hours)
    }
}
