//! Prices for the `price` expander, from the flavors' `pricePerHour`.
//!
//! - A node costs its flavor's price per hour: the flavor of its pool (by providerID), else the
//!   flavor its `node.kubernetes.io/instance-type` label names (template nodes carry it, so
//!   scale-up options are priced by their pool's flavor), else per-unit prices of its capacity.
//! - A pod costs its requests at per-unit prices derived from the flavors ([`unit_prices`]), so
//!   that a pod asking for a whole flavor costs about that flavor.

use std::collections::BTreeMap;

use cloudprovider::pricing::{self as unit_pricing, UnitPrices, hours_between};
use cloudprovider::{PricingModel, Result};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;

use crate::api::Flavor;
use crate::config::INSTANCE_TYPE_LABEL;
use crate::provider::parse_provider_id;

const MIB_PER_GIB: f64 = 1024.0;

/// Per-unit prices that reproduce the flavors' prices on average:
///
/// 1. cpu and memory keep upstream's default ratio (GCE's on-demand prices, 0.033174 per core
///    and 0.004446 per GiB), scaled by one factor so that the flavors without GPUs cost in total
///    what their prices say;
/// 2. a GPU costs what the GPU flavors charge above their cpu and memory at those prices,
///    averaged over their GPUs (never below 0);
/// 3. without flavors of a kind, the defaults stand for it (scaled by the factor, for GPUs).
///
/// A least-squares fit of all three prices would match the flavors more closely, but can give
/// negative or absurd prices with few flavors; this rule cannot.
pub fn unit_prices(flavors: &[Flavor]) -> UnitPrices {
    let base = UnitPrices::default();
    let at_base = |f: &Flavor| {
        f64::from(f.vcpus) * base.cpu_core_per_hour + f.memory_mib as f64 / MIB_PER_GIB * base.memory_gib_per_hour
    };
    let (priced, at_base_total) = flavors
        .iter()
        .filter(|f| f.gpus == 0)
        .fold((0.0, 0.0), |(priced, at), f| (priced + f.price_per_hour, at + at_base(f)));
    let factor = if priced > 0.0 && at_base_total > 0.0 { priced / at_base_total } else { 1.0 };
    let cpu_core_per_hour = base.cpu_core_per_hour * factor;
    let memory_gib_per_hour = base.memory_gib_per_hour * factor;
    let (gpu_extra, gpus) = flavors.iter().filter(|f| f.gpus > 0).fold((0.0, 0.0), |(extra, gpus), f| {
        let rest = f64::from(f.vcpus) * cpu_core_per_hour + f.memory_mib as f64 / MIB_PER_GIB * memory_gib_per_hour;
        (extra + (f.price_per_hour - rest), gpus + f64::from(f.gpus))
    });
    let gpu_per_hour = if gpus > 0.0 { (gpu_extra / gpus).max(0.0) } else { base.gpu_per_hour * factor };
    UnitPrices { cpu_core_per_hour, memory_gib_per_hour, gpu_per_hour }
}

pub struct FlavorPricing {
    flavors: BTreeMap<String, Flavor>,
    /// Pool → its flavor's name.
    pool_flavors: BTreeMap<String, String>,
    units: UnitPrices,
}

impl FlavorPricing {
    pub fn new(flavors: &BTreeMap<String, Flavor>, pool_flavors: BTreeMap<String, String>) -> FlavorPricing {
        let list: Vec<Flavor> = flavors.values().cloned().collect();
        FlavorPricing { flavors: flavors.clone(), pool_flavors, units: unit_prices(&list) }
    }

    pub fn units(&self) -> &UnitPrices {
        &self.units
    }

    fn flavor_of(&self, node: &Node) -> Option<&Flavor> {
        let by_pool = node
            .spec
            .as_ref()
            .and_then(|spec| spec.provider_id.as_deref())
            .and_then(parse_provider_id)
            .and_then(|(pool, _)| self.pool_flavors.get(pool));
        let by_label = || node.metadata.labels.as_ref()?.get(INSTANCE_TYPE_LABEL);
        self.flavors.get(by_pool.or_else(by_label)?)
    }
}

impl PricingModel for FlavorPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> Result<f64> {
        let hours = hours_between(start, end)?;
        match self.flavor_of(node) {
            Some(flavor) => Ok(flavor.price_per_hour * hours),
            None => unit_pricing::node_price(&self.units, node, hours),
        }
    }

    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> Result<f64> {
        unit_pricing::pod_price(&self.units, pod, hours_between(start, end)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flavor(name: &str, vcpus: u32, memory_gib: u64, gpus: u32, price: f64) -> Flavor {
        Flavor {
            name: name.into(),
            vcpus,
            memory_mib: memory_gib * 1024,
            gpus,
            gpu_type: (gpus > 0).then(|| "Tesla-T4".into()),
            price_per_hour: price,
        }
    }

    #[test]
    fn unit_prices_reproduce_the_flavors_on_average() {
        let flavors = [flavor("m1.large", 4, 16, 0, 0.2), flavor("m1.xlarge", 8, 32, 0, 0.4)];
        let units = unit_prices(&flavors);
        let cost = |f: &Flavor| {
            f64::from(f.vcpus) * units.cpu_core_per_hour + (f.memory_mib / 1024) as f64 * units.memory_gib_per_hour
        };
        assert!((cost(&flavors[0]) - 0.2).abs() < 1e-9, "{units:?}");
        assert!((cost(&flavors[1]) - 0.4).abs() < 1e-9, "{units:?}");
        let default = UnitPrices::default();
        let ratio = units.cpu_core_per_hour / units.memory_gib_per_hour;
        assert!((ratio - default.cpu_core_per_hour / default.memory_gib_per_hour).abs() < 1e-9);
    }

    #[test]
    fn a_gpu_costs_what_gpu_flavors_charge_above_cpu_and_memory() {
        let flavors = [flavor("m1.large", 4, 16, 0, 0.2), flavor("g1.large", 4, 16, 1, 0.7)];
        let units = unit_prices(&flavors);
        assert!((units.gpu_per_hour - 0.5).abs() < 1e-9, "{units:?}");
        let cheap_gpu = [flavor("m1.large", 4, 16, 0, 0.2), flavor("g1.large", 4, 16, 1, 0.1)];
        assert_eq!(unit_prices(&cheap_gpu).gpu_per_hour, 0.0);
        assert_eq!(unit_prices(&[]), UnitPrices::default());
    }
}
