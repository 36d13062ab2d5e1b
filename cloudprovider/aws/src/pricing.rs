//! On-demand prices for `--expander=price`, from a built-in table.
//!
//! Source: AWS's published EC2 On-Demand price list, US East (N. Virginia), Linux/UNIX, per
//! hour, transcribed when this table was written (2026-11-24; the build has no network, so it
//! is not refreshed automatically). Other regions and operating systems cost more in absolute
//! terms; the price expander compares groups with each other, which the us-east-1 ratios serve.
//!
//! - GPU types: their own prices (a GPU family's sizes are not proportional).
//! - Other families: the price of one size; the other sizes of the family cost in proportion
//!   to their memory (within a family AWS prices sizes linearly; for burstable `t` families,
//!   whose sizes share vCPUs, memory is what grows with the price).
//! - Anything else: per-unit prices calibrated on m5.large ($0.096 for 2 vCPUs and 8 GiB).

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;

use cloudprovider::pricing::{UnitPrices, hours_between, node_price as unit_node_price, pod_price as unit_pod_price};
use cloudprovider::{PricingModel, Result};

use crate::instance_types::{InstanceType, builtin};

/// GPU instance types: dollars per hour.
#[rustfmt::skip]
const TYPE_PRICES: &[(&str, f64)] = &[
    ("g4dn.xlarge", 0.526), ("g4dn.2xlarge", 0.752), ("g4dn.4xlarge", 1.204), ("g4dn.8xlarge", 2.176),
    ("g4dn.12xlarge", 3.912), ("g4dn.16xlarge", 4.352), ("g4dn.metal", 7.824),
    ("g5.xlarge", 1.006), ("g5.2xlarge", 1.212), ("g5.4xlarge", 1.624), ("g5.8xlarge", 2.448),
    ("g5.12xlarge", 5.672), ("g5.16xlarge", 4.096), ("g5.24xlarge", 8.144), ("g5.48xlarge", 16.288),
    ("g6.xlarge", 0.8048), ("g6.2xlarge", 0.9776), ("g6.4xlarge", 1.3232), ("g6.8xlarge", 2.0144),
    ("g6.12xlarge", 4.6016), ("g6.16xlarge", 3.3968), ("g6.24xlarge", 6.6752), ("g6.48xlarge", 13.3504),
    ("p3.2xlarge", 3.06), ("p3.8xlarge", 12.24), ("p3.16xlarge", 24.48),
    ("p4d.24xlarge", 32.7726),
];

/// Families: (family, reference size, dollars per hour of that size).
#[rustfmt::skip]
const FAMILY_PRICES: &[(&str, &str, f64)] = &[
    ("t2", "medium", 0.0464), ("t3", "medium", 0.0416), ("t3a", "medium", 0.0376), ("t4g", "medium", 0.0336),
    ("m4", "large", 0.10), ("m5", "large", 0.096), ("m5a", "large", 0.086), ("m5d", "large", 0.113),
    ("m5n", "large", 0.119), ("m6i", "large", 0.096), ("m6a", "large", 0.0864), ("m6g", "large", 0.077),
    ("m6id", "large", 0.1187), ("m7i", "large", 0.1008), ("m7a", "large", 0.11592), ("m7g", "large", 0.0816),
    ("c4", "large", 0.10), ("c5", "large", 0.085), ("c5a", "large", 0.077), ("c5d", "large", 0.096),
    ("c5n", "large", 0.108), ("c6i", "large", 0.085), ("c6a", "large", 0.0765), ("c6g", "large", 0.068),
    ("c7i", "large", 0.08925), ("c7a", "large", 0.10264), ("c7g", "large", 0.0725),
    ("r4", "large", 0.133), ("r5", "large", 0.126), ("r5a", "large", 0.113), ("r5d", "large", 0.144),
    ("r6i", "large", 0.126), ("r6a", "large", 0.1134), ("r6g", "large", 0.1008), ("r7i", "large", 0.1323),
    ("r7a", "large", 0.15215), ("r7g", "large", 0.1071),
    ("i3", "large", 0.156), ("i4i", "large", 0.172), ("x1e", "xlarge", 0.834),
];

/// Per-unit prices for types the table does not know: m5.large's $0.096 split between 2 vCPUs
/// and 8 GiB in upstream GCE's cpu:memory ratio; a GPU at g4dn.xlarge's price less its vCPUs
/// and memory.
pub const FALLBACK_UNIT_PRICES: UnitPrices =
    UnitPrices { cpu_core_per_hour: 0.03125, memory_gib_per_hour: 0.0041875, gpu_per_hour: 0.334 };

const INSTANCE_TYPE_LABELS: [&str; 2] = ["node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"];

/// The on-demand price per hour of `name`, when the table knows its type or family.
pub fn hourly_price(name: &str) -> Option<f64> {
    if let Some((_, price)) = TYPE_PRICES.iter().find(|(t, _)| *t == name) {
        return Some(*price);
    }
    let (family, _) = name.split_once('.')?;
    let (_, size, price) = FAMILY_PRICES.iter().find(|(f, _, _)| *f == family)?;
    let reference = builtin(&format!("{family}.{size}"))?;
    let this: InstanceType = builtin(name)?;
    Some(price * this.memory_mib as f64 / reference.memory_mib as f64)
}

/// Prices nodes by their `node.kubernetes.io/instance-type` label (templates carry it), and pods
/// (and nodes of unknown types) by their resources at [`FALLBACK_UNIT_PRICES`].
#[derive(Debug, Default)]
pub struct AwsPricing;

impl PricingModel for AwsPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> Result<f64> {
        let hours = hours_between(start, end)?;
        let labels = node.metadata.labels.as_ref();
        let by_type = INSTANCE_TYPE_LABELS
            .iter()
            .find_map(|l| labels.and_then(|labels| labels.get(*l)))
            .and_then(|t| hourly_price(t));
        match by_type {
            Some(price) => Ok(price * hours),
            None => unit_node_price(&FALLBACK_UNIT_PRICES, node, hours),
        }
    }

    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> Result<f64> {
        unit_pod_price(&FALLBACK_UNIT_PRICES, pod, hours_between(start, end)?)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_openapi::jiff::SignedDuration;

    use super::*;

    #[test]
    fn family_prices_scale_with_memory_and_gpu_types_have_their_own() {
        assert_eq!(hourly_price("m5.large"), Some(0.096));
        assert!((hourly_price("m5.4xlarge").unwrap() - 0.768).abs() < 1e-9);
        assert!((hourly_price("t3.large").unwrap() - 0.0832).abs() < 1e-9);
        assert_eq!(hourly_price("g4dn.2xlarge"), Some(0.752));
        assert_eq!(hourly_price("z9.large"), None);
        assert!(hourly_price("c6g.large").unwrap() < hourly_price("c5.large").unwrap(), "Graviton costs less");
        for (family, size, _) in FAMILY_PRICES {
            assert!(builtin(&format!("{family}.{size}")).is_some(), "{family}.{size} is in the instance-type table");
        }
    }

    #[test]
    fn nodes_are_priced_by_instance_type_label_else_by_resources() {
        let start = Timestamp::UNIX_EPOCH;
        let end = start + SignedDuration::from_hours(2);
        let labelled = Node {
            metadata: ObjectMeta {
                labels: Some(BTreeMap::from([("node.kubernetes.io/instance-type".into(), "c5.xlarge".into())])),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!((AwsPricing.node_price(&labelled, start, end).unwrap() - 0.34).abs() < 1e-9);
        assert_eq!(AwsPricing.node_price(&Node::default(), start, end).unwrap(), 0.0);
        assert!(AwsPricing.node_price(&labelled, end, start).is_err());
    }
}
