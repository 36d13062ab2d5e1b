//! `--balance-similar-node-groups`: which node groups are similar (upstream's comparator) and
//! how a scale-up is spread across them.

use std::collections::{BTreeMap, BTreeSet};

use simulator::NodeInfo;
use simulator::resources::{MEMORY, Resources};

use crate::config::BalancingOptions;

/// Labels that differ between otherwise identical groups (zones, hostnames, provider ids). A
/// provider adds its own through `CloudProvider::balancing_ignored_labels` (AWS's are in the
/// `aws` provider, as upstream's AWS comparator adds them).
const ALWAYS_IGNORED_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "beta.kubernetes.io/fluentd-ds-ready",
    "kops.k8s.io/instancegroup",
    // GCE
    "topology.gke.io/zone",
    // Azure
    "agentpool",
    "kubernetes.azure.com/agentpool",
    "topology.disk.csi.azure.com/zone",
    "aksEngineVersion",
    "creationSource",
    "poolName",
    "resourceNameSuffix",
    "kubernetes.azure.com/node-image-version",
    "kubernetes.azure.com/consolidated-additional-properties",
    // Ours: every template carries it.
    simulator::well_known::TEMPLATE_NODE_LABEL,
];

fn capacity(node: &NodeInfo) -> Resources {
    node.node
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .map(|c| Resources::from_list_lossy(Some(c)))
        .unwrap_or_else(|| node.allocatable.clone())
}

fn names(r: &Resources) -> BTreeSet<String> {
    let mut n: BTreeSet<String> = ["cpu", "memory", "ephemeral-storage", "pods"]
        .iter()
        .filter(|k| r.get(k) != 0)
        .map(|k| k.to_string())
        .collect();
    n.extend(r.extended.keys().cloned());
    n
}

fn within(a: i64, b: i64, ratio: f64) -> bool {
    let larger = a.max(b) as f64;
    ((a - b).abs() as f64) <= ratio * larger
}

/// Upstream's node-group comparator on two templates; `provider_ignored` are the cloud
/// provider's extra ignored labels.
pub fn similar(a: &NodeInfo, b: &NodeInfo, options: &BalancingOptions, provider_ignored: &[String]) -> bool {
    let labels = |n: &NodeInfo| -> BTreeMap<String, String> { n.labels().cloned().unwrap_or_default() };
    let (la, lb) = (labels(a), labels(b));
    if !options.labels.is_empty() {
        return options.labels.iter().all(|k| la.contains_key(k) && la.get(k) == lb.get(k));
    }
    let (ca, cb) = (capacity(a), capacity(b));
    if names(&ca) != names(&cb) {
        return false;
    }
    for name in names(&ca) {
        let (x, y) = (ca.get(&name), cb.get(&name));
        let ok = if name == MEMORY { within(x, y, options.memory_difference_ratio) } else { x == y };
        if !ok {
            return false;
        }
    }
    for name in names(&a.allocatable).union(&names(&b.allocatable)) {
        if !within(a.allocatable.get(name), b.allocatable.get(name), options.max_allocatable_difference_ratio) {
            return false;
        }
    }
    let (fa, fb) = (a.free(), b.free());
    for name in names(&a.allocatable).union(&names(&b.allocatable)) {
        if !within(fa.get(name), fb.get(name), options.max_free_difference_ratio) {
            return false;
        }
    }
    let ignored = |k: &String| {
        ALWAYS_IGNORED_LABELS.contains(&k.as_str()) || options.ignore_labels.contains(k) || provider_ignored.contains(k)
    };
    let fa: BTreeMap<_, _> = la.iter().filter(|(k, _)| !ignored(k)).collect();
    let fb: BTreeMap<_, _> = lb.iter().filter(|(k, _)| !ignored(k)).collect();
    fa == fb
}

/// A group taking part in a balanced scale-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalanceTarget {
    pub id: String,
    pub current: usize,
    pub max: usize,
}

/// Spreads `new_nodes` over the groups as evenly as possible: capped at their total free room,
/// each node goes to the currently smallest group that still has room (ties by the given order).
/// Returns (group id, delta) for groups that grow.
pub fn distribute(groups: &[BalanceTarget], new_nodes: usize) -> Vec<(String, usize)> {
    let room: usize = groups.iter().map(|g| g.max.saturating_sub(g.current)).sum();
    let mut remaining = new_nodes.min(room);
    let mut sizes: Vec<usize> = groups.iter().map(|g| g.current).collect();
    while remaining > 0 {
        let Some(i) = (0..groups.len()).filter(|&i| sizes[i] < groups[i].max).min_by_key(|&i| (sizes[i], i)) else {
            break;
        };
        sizes[i] += 1;
        remaining -= 1;
    }
    groups.iter().zip(sizes).filter(|(g, s)| *s > g.current).map(|(g, s)| (g.id.clone(), s - g.current)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn target(id: &str, current: usize, max: usize) -> BalanceTarget {
        BalanceTarget { id: id.into(), current, max }
    }

    #[test]
    fn balance_splits_evenly_starting_with_smallest_groups() {
        let out = distribute(&[target("a", 3, 10), target("b", 1, 10), target("c", 1, 10)], 5);
        assert_eq!(out, vec![("a".into(), 1), ("b".into(), 2), ("c".into(), 2)]);
    }

    #[test]
    fn balance_skips_full_groups_and_caps_at_free_room() {
        let out = distribute(&[target("a", 2, 3), target("b", 0, 2)], 10);
        assert_eq!(out, vec![("a".into(), 1), ("b".into(), 2)]);
    }

    fn template(labels: &[(&str, &str)], cpu: &str, mem: &str) -> NodeInfo {
        let node = simulator::testing::with_node_labels(simulator::testing::node("t", cpu, mem), labels);
        NodeInfo::new(Arc::new(node))
    }

    fn opts() -> BalancingOptions {
        crate::config::AutoscalingOptions::default().balancing
    }

    #[test]
    fn similar_groups_ignore_zone_labels_but_not_others() {
        let a = template(&[("pool", "x"), ("topology.kubernetes.io/zone", "a")], "4", "16Gi");
        let b = template(&[("pool", "x"), ("topology.kubernetes.io/zone", "b")], "4", "16Gi");
        let c = template(&[("pool", "y"), ("topology.kubernetes.io/zone", "b")], "4", "16Gi");
        assert!(similar(&a, &b, &opts(), &[]));
        assert!(!similar(&a, &c, &opts(), &[]));
        let mut o = opts();
        o.ignore_labels.push("pool".into());
        assert!(similar(&a, &c, &o, &[]));
    }

    #[test]
    fn similar_groups_need_equal_cpu_and_close_memory() {
        let a = template(&[], "4", "16000Mi");
        assert!(similar(&a, &template(&[], "4", "16200Mi"), &opts(), &[]), "1.2% memory difference is within 1.5%");
        assert!(!similar(&a, &template(&[], "4", "17000Mi"), &opts(), &[]));
        assert!(!similar(&a, &template(&[], "8", "16000Mi"), &opts(), &[]));
    }

    #[test]
    fn provider_labels_are_ignored_only_when_the_provider_names_them() {
        let a = template(&[("pool", "x"), ("topology.k8s.aws/zone-id", "use1-az1")], "4", "16Gi");
        let b = template(&[("pool", "x"), ("topology.k8s.aws/zone-id", "use1-az2")], "4", "16Gi");
        assert!(!similar(&a, &b, &opts(), &[]));
        assert!(similar(&a, &b, &opts(), &["topology.k8s.aws/zone-id".to_string()]));
    }

    #[test]
    fn balancing_label_compares_only_those_labels() {
        let mut o = opts();
        o.labels = vec!["pool".into()];
        let a = template(&[("pool", "x"), ("other", "1")], "4", "16Gi");
        let b = template(&[("pool", "x"), ("other", "2")], "8", "32Gi");
        assert!(similar(&a, &b, &o, &[]));
    }
}
