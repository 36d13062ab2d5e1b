//! Option builders and a small pricing model for the tests.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cloudprovider::{CloudProviderError, PricingModel};
use expander::{ExpanderContext, ExpansionOption};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;
use simulator::resources::pod_requests;
use simulator::testing;
use simulator::{NodeInfo, PodInfo};

pub fn now() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

/// An option adding `node_count` copies of `template` for `pods`.
pub fn option(id: &str, template: Node, node_count: usize, pods: Vec<Pod>) -> ExpansionOption {
    ExpansionOption {
        node_group_id: id.to_string(),
        node_count,
        pods: pods.into_iter().map(|p| Arc::new(PodInfo::new(&p))).collect(),
        template: Arc::new(NodeInfo::new(Arc::new(template))),
        exists: true,
        similar_node_groups: Vec::new(),
        debug: String::new(),
    }
}

/// An option with a plain 4-CPU / 16 GiB template, for expanders that ignore the template.
pub fn simple_option(id: &str, node_count: usize, pod_count: usize) -> ExpansionOption {
    option(id, testing::node(&format!("{id}-template"), "4", "16Gi"), node_count, pods(id, pod_count, "100m", "100Mi"))
}

/// `count` pods named `<prefix>-<i>` requesting `cpu` / `memory` each.
pub fn pods(prefix: &str, count: usize, cpu: &str, memory: &str) -> Vec<Pod> {
    (0..count).map(|i| testing::pod(&format!("{prefix}-{i}"), cpu, memory)).collect()
}

/// A node whose capacity and allocatable differ.
pub fn node_with_capacity(name: &str, capacity: (&str, &str), allocatable: (&str, &str)) -> Node {
    let mut node = testing::node(name, allocatable.0, allocatable.1);
    let status = node.status.as_mut().unwrap();
    let list = |cpu: &str, memory: &str| -> BTreeMap<String, Quantity> {
        [("cpu", cpu), ("memory", memory), ("pods", "110")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    };
    status.capacity = Some(list(capacity.0, capacity.1));
    status.allocatable = Some(list(allocatable.0, allocatable.1));
    node
}

pub fn ctx<'a>(pricing: Option<&'a dyn PricingModel>, cluster_node_count: usize) -> ExpanderContext<'a> {
    ExpanderContext {
        pricing,
        cluster_node_count,
        now: now(),
        gpu_resource: "nvidia.com/gpu",
        gpu_label: "cloud.google.com/gke-accelerator",
        ..Default::default()
    }
}

/// Prices resources linearly: `per_cpu_hour` per CPU and `per_gib_hour` per GiB, of a node's
/// capacity or a pod's requests, times `pod_markup` for pods. Node prices can be overridden by
/// node name, and prices can be made to fail.
#[derive(Clone, Debug)]
pub struct TestPricing {
    pub per_cpu_hour: f64,
    pub per_gib_hour: f64,
    pub pod_markup: f64,
    pub node_prices: BTreeMap<String, f64>,
    pub failing_nodes: BTreeSet<String>,
    pub failing_pods: BTreeSet<String>,
}

impl Default for TestPricing {
    fn default() -> Self {
        TestPricing {
            per_cpu_hour: 1.0,
            per_gib_hour: 0.125,
            pod_markup: 1.0,
            node_prices: BTreeMap::new(),
            failing_nodes: BTreeSet::new(),
            failing_pods: BTreeSet::new(),
        }
    }
}

const GIB: f64 = (1u64 << 30) as f64;

fn hours(start: Timestamp, end: Timestamp) -> f64 {
    end.duration_since(start).as_secs_f64() / 3600.0
}

impl PricingModel for TestPricing {
    fn node_price(&self, node: &Node, start: Timestamp, end: Timestamp) -> cloudprovider::Result<f64> {
        let name = node.metadata.name.clone().unwrap_or_default();
        if self.failing_nodes.contains(&name) {
            return Err(CloudProviderError::cloud(format!("no price for {name}")));
        }
        if let Some(price) = self.node_prices.get(&name) {
            return Ok(price * hours(start, end));
        }
        let info = NodeInfo::new(Arc::new(node.clone()));
        let (cpu, memory) = (info.allocatable.cpu_millis as f64 / 1000.0, info.allocatable.memory as f64 / GIB);
        Ok((cpu * self.per_cpu_hour + memory * self.per_gib_hour) * hours(start, end))
    }

    fn pod_price(&self, pod: &Pod, start: Timestamp, end: Timestamp) -> cloudprovider::Result<f64> {
        let name = pod.metadata.name.clone().unwrap_or_default();
        if self.failing_pods.contains(&name) {
            return Err(CloudProviderError::cloud(format!("no price for {name}")));
        }
        let requests = pod_requests(pod);
        let (cpu, memory) = (requests.cpu_millis as f64 / 1000.0, requests.memory as f64 / GIB);
        Ok((cpu * self.per_cpu_hour + memory * self.per_gib_hour) * self.pod_markup * hours(start, end))
    }
}
