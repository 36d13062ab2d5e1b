//! Cluster-wide resource limits at scale-up (`--cores-total`, `--memory-total`, `--gpu-total`):
//! totals count every node group at its target size with its template's capacity, plus nodes
//! no group manages; a group is skipped when one more node would exceed a limit, and the chosen
//! option is capped to what is left.

use std::collections::BTreeMap;

use cloudprovider::ResourceLimiter;
use simulator::NodeInfo;
use simulator::resources::{CPU, MEMORY, Resources};

/// Capacity a node adds, in the limiter's units: cores (rounded up), bytes, GPUs per type.
pub fn node_delta(node: &NodeInfo, gpu_type: Option<&str>, gpu_resource: &str) -> BTreeMap<String, i64> {
    let capacity = node
        .node
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref().filter(|c| !c.is_empty()))
        .map(|c| Resources::from_list_lossy(Some(c)))
        .unwrap_or_else(|| node.allocatable.clone());
    let mut delta = BTreeMap::new();
    delta.insert(CPU.to_string(), capacity.cpu_millis.saturating_add(999) / 1000);
    delta.insert(MEMORY.to_string(), capacity.memory);
    if let Some(t) = gpu_type {
        let gpus = capacity.get(gpu_resource);
        if gpus > 0 {
            delta.insert(t.to_string(), gpus);
        }
    }
    delta
}

/// What is left under each maximum.
#[derive(Clone, Debug, Default)]
pub struct ResourcesLeft {
    pub left: BTreeMap<String, i64>,
}

impl ResourcesLeft {
    pub fn new(limiter: &ResourceLimiter, totals: &BTreeMap<String, i64>) -> Self {
        let mut left = BTreeMap::new();
        for resource in limiter.max.keys() {
            let total = totals.get(resource).copied().unwrap_or(0);
            left.insert(resource.clone(), (limiter.max(resource) - total).max(0));
        }
        ResourcesLeft { left }
    }

    /// Resources `count` nodes of `delta` would exceed.
    pub fn exceeded(&self, delta: &BTreeMap<String, i64>, count: i64) -> Vec<String> {
        self.left
            .iter()
            .filter(|(r, left)| delta.get(*r).is_some_and(|d| d.saturating_mul(count) > **left))
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// How many nodes of `delta` fit, capped at `wanted`.
    pub fn cap(&self, delta: &BTreeMap<String, i64>, wanted: usize) -> usize {
        let mut n = wanted as i64;
        for (r, left) in &self.left {
            if let Some(d) = delta.get(r).filter(|d| **d > 0) {
                n = n.min(left / d);
            }
        }
        n.max(0) as usize
    }

    pub fn consume(&mut self, delta: &BTreeMap<String, i64>, count: usize) {
        for (r, left) in self.left.iter_mut() {
            if let Some(d) = delta.get(r) {
                *left = (*left - d * count as i64).max(0);
            }
        }
    }
}

/// Upstream's skip reason for a group one node of which would exceed a limit.
pub fn limit_reached_reason(resources: &[String]) -> String {
    format!("max cluster {} limit reached", resources.join(", "))
}
