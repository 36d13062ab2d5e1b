//! Prices for the `price` expander, like the static provider's: a group's `price_per_hour`,
//! else per-unit prices of the node's capacity.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;

use super::config::PROVIDER_ID_SCHEME;
use super::group::{Inner, provider_id};
use cloudprovider::pricing::{self as unit_pricing, hours_between};
use cloudprovider::{PricingModel, Result};

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

impl PricingModel for MemoryPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> Result<f64> {
        let hours = hours_between(start, end)?;
        if let Some(price) = self.group_of(node).and_then(|index| self.inner.config.groups[index].price_per_hour) {
            return Ok(price * hours);
        }
        unit_pricing::node_price(&self.inner.config.unit_prices, node, hours)
    }

    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> Result<f64> {
        unit_pricing::pod_price(&self.inner.config.unit_prices, pod, hours_between(start, end)?)
    }
}
