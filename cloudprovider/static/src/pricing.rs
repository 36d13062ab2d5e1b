//! Prices for the `price` expander: a group's `pricePerHour`, else per-unit prices.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;

use super::group::Shared;
use super::membership::{group_index_for_node, instance_id_for_node};
use cloudprovider::pricing::{self as unit_pricing, hours_between};
use cloudprovider::{PricingModel, Result};

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

impl PricingModel for StaticPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> Result<f64> {
        let hours = hours_between(start, end)?;
        if let Some(price) = self.group_price_per_hour(node) {
            return Ok(price * hours);
        }
        unit_pricing::node_price(&self.shared.config.pricing, node, hours)
    }

    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> Result<f64> {
        unit_pricing::pod_price(&self.shared.config.pricing, pod, hours_between(start, end)?)
    }
}
