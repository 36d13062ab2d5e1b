//! Cluster-wide resource limits (`--cores-total`, `--memory-total`, `--gpu-total`).

use std::collections::BTreeMap;

pub const RESOURCE_CPU: &str = "cpu";
pub const RESOURCE_MEMORY: &str = "memory";

/// Minimum and maximum per resource: `cpu` in cores, `memory` in bytes, and any other key a
/// GPU type counted in GPUs. A resource without an entry is unlimited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceLimiter {
    pub min: BTreeMap<String, i64>,
    pub max: BTreeMap<String, i64>,
}

impl ResourceLimiter {
    pub fn min(&self, resource: &str) -> i64 {
        self.min.get(resource).copied().unwrap_or(0)
    }

    pub fn max(&self, resource: &str) -> i64 {
        self.max.get(resource).copied().unwrap_or(i64::MAX)
    }

    pub fn resources(&self) -> impl Iterator<Item = &String> {
        let mut keys: Vec<&String> = self.min.keys().chain(self.max.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
    }
}
