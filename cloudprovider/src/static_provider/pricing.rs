//! Prices for the `price` expander: a group's `pricePerHour`, else per-unit prices.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;

use super::config::{GPU_RESOURCE, UnitPrices};
use super::group::Shared;
use super::membership::{group_index_for_node, instance_id_for_node};
use crate::quantity::quantity_value;
use crate::{CloudProviderError, PricingModel, Result};

const GIB: f64 = (1u64 << 30) as f64;

pub struct StaticPricing {
    shared: Arc<Shared>,
}

impl StaticPricing {
    pub(crate) fn new(shared: Arc<Shared>) -> StaticPricing {
        StaticPricing { shared }
    }

    /// The group a node belongs to. Besides the membership rules, template copies the core
    /// makes (named `template-node-for-<id>-…` like upstream) count for their group, so groups
    /// matched by providerID only still price their templates with `pricePerHour`.
    fn group_price_per_hour(&self, node: &Node) -> Option<f64> {
        let groups = &self.shared.config.node_groups;
        let index = self
            .shared
            .state()
            .group_of_instance(&instance_id_for_node(node))
            .or_else(|| group_index_for_node(groups, node))
            .or_else(|| {
                let name = node.metadata.name.as_deref()?;
                groups
                    .iter()
                    .enumerate()
                    .filter(|(_, group)| {
                        let template_name = group.template.as_ref().and_then(|t| t.metadata.name.as_deref());
                        template_name == Some(name) || name.starts_with(&format!("template-node-for-{}-", group.id))
                    })
                    .max_by_key(|(_, group)| group.id.len())
                    .map(|(index, _)| index)
            })?;
        groups[index].price_per_hour
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

/// Value of one resource, 0 when absent; `what` names the object in errors.
fn amount(resources: Option<&BTreeMap<String, Quantity>>, name: &str, what: &str) -> Result<f64> {
    match resources.and_then(|resources| resources.get(name)) {
        Some(quantity) => quantity_value(&quantity.0)
            .map_err(|message| CloudProviderError::InvalidRequest(format!("{what}: resource {name}: {message}"))),
        None => Ok(0.0),
    }
}

/// Hourly price of `cpu` cores, `memory` bytes and `gpus` devices.
fn unit_price(prices: &UnitPrices, cpu: f64, memory: f64, gpus: f64) -> f64 {
    cpu * prices.cpu_core_per_hour + memory / GIB * prices.memory_gib_per_hour + gpus * prices.gpu_per_hour
}

impl PricingModel for StaticPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> Result<f64> {
        let hours = hours_between(start, end)?;
        if let Some(price) = self.group_price_per_hour(node) {
            return Ok(price * hours);
        }
        let what = format!("node {}", node.metadata.name.as_deref().unwrap_or_default());
        let status = node.status.as_ref();
        // Capacity is what the machine is billed for; allocatable only when capacity is absent.
        let resource = |name: &str| {
            let capacity = status.and_then(|status| status.capacity.as_ref());
            if capacity.is_some_and(|capacity| capacity.contains_key(name)) {
                amount(capacity, name, &what)
            } else {
                amount(status.and_then(|status| status.allocatable.as_ref()), name, &what)
            }
        };
        let hourly =
            unit_price(&self.shared.config.pricing, resource("cpu")?, resource("memory")?, resource(GPU_RESOURCE)?);
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
            let requests = container.resources.as_ref().and_then(|resources| resources.requests.as_ref());
            cpu += amount(requests, "cpu", &what)?;
            memory += amount(requests, "memory", &what)?;
            gpus += amount(requests, GPU_RESOURCE, &what)?;
        }
        Ok(unit_price(&self.shared.config.pricing, cpu, memory, gpus) * hours)
    }
}
