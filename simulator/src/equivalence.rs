//! Pod equivalence groups: pending pods of one controller with the same scheduling-relevant spec
//! are simulated once, so 50,000 replicas of one Deployment cost about as much as one.
//!
//! Upstream groups pods per controller when their labels are equal and their specs are
//! semantically equal (ignoring env, hostname and projected volumes). We compare exactly the
//! facts the simulator's predicates read (requests, ports, selectors, affinity, tolerations,
//! spread constraints, claims, priority, node name) plus the labels, which gives the same grouping for
//! everything that can change a scheduling answer, without cloning specs.

use std::collections::HashMap;
use std::sync::Arc;

use crate::pod::PodInfo;

/// At most this many distinct groups per controller; further variants become singletons (as
/// upstream does, to bound the cost of comparisons against a pathological controller).
pub const MAX_GROUPS_PER_CONTROLLER: usize = 10;

#[derive(Clone, Debug)]
pub struct PodEquivalenceGroup {
    /// The pods of the group; the first is the exemplar.
    pub pods: Vec<Arc<PodInfo>>,
}

impl PodEquivalenceGroup {
    pub fn exemplar(&self) -> &Arc<PodInfo> {
        &self.pods[0]
    }
}

/// Whether two pods are interchangeable for scheduling.
pub fn scheduling_equivalent(a: &PodInfo, b: &PodInfo) -> bool {
    if Arc::ptr_eq(&a.shape, &b.shape)
        && a.namespace() == b.namespace()
        && a.labels() == b.labels()
        && a.claims == b.claims
        && a.node_name() == b.node_name()
        && a.pinned_node() == b.pinned_node()
    {
        // One compiled spec: everything else below is equal by construction.
        return true;
    }
    a.requests() == b.requests()
        && a.priority == b.priority
        && a.labels() == b.labels()
        && a.namespace() == b.namespace()
        && a.shape.host_ports == b.shape.host_ports
        && a.node_selector() == b.node_selector()
        && a.shape.node_affinity == b.shape.node_affinity
        && a.pinned_node() == b.pinned_node()
        && a.shape.affinity_terms == b.shape.affinity_terms
        && a.shape.anti_affinity_terms == b.shape.anti_affinity_terms
        && a.shape.spread_constraints == b.shape.spread_constraints
        && a.tolerations() == b.tolerations()
        && a.claims == b.claims
        && a.node_name() == b.node_name()
        && a.scheduler_name() == b.scheduler_name()
}

/// Groups pods, keeping the order in which each group's first pod appears.
pub fn build_equivalence_groups(pods: &[Arc<PodInfo>]) -> Vec<PodEquivalenceGroup> {
    let mut groups: Vec<PodEquivalenceGroup> = Vec::new();
    let mut by_controller: HashMap<&str, Vec<usize>> = HashMap::new();
    for pod in pods {
        let controller = pod.controller().filter(|_| !pod.daemonset);
        let Some(controller) = controller else {
            groups.push(PodEquivalenceGroup { pods: vec![pod.clone()] });
            continue;
        };
        let candidates = by_controller.entry(controller.uid.as_str()).or_default();
        if let Some(&g) = candidates.iter().find(|&&g| scheduling_equivalent(groups[g].exemplar(), pod)) {
            groups[g].pods.push(pod.clone());
            continue;
        }
        groups.push(PodEquivalenceGroup { pods: vec![pod.clone()] });
        if candidates.len() < MAX_GROUPS_PER_CONTROLLER {
            candidates.push(groups.len() - 1);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn info(p: k8s_openapi::api::core::v1::Pod) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(&p))
    }

    #[test]
    fn replicas_of_one_controller_share_a_group() {
        let pods: Vec<_> =
            (0..5).map(|i| info(with_owner(pod(&format!("p{i}"), "1", "1Gi"), "ReplicaSet", "rs"))).collect();
        let groups = build_equivalence_groups(&pods);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].pods.len(), 5);
    }

    #[test]
    fn pods_without_controller_are_singletons() {
        let pods: Vec<_> = (0..3).map(|i| info(pod(&format!("p{i}"), "1", "1Gi"))).collect();
        assert_eq!(build_equivalence_groups(&pods).len(), 3);
    }

    #[test]
    fn daemonset_pods_are_singletons() {
        let pods: Vec<_> =
            (0..3).map(|i| info(with_owner(pod(&format!("p{i}"), "1", "1Gi"), "DaemonSet", "ds"))).collect();
        assert_eq!(build_equivalence_groups(&pods).len(), 3);
    }

    #[test]
    fn different_requests_or_labels_split_a_controller() {
        let pods = vec![
            info(with_owner(pod("a", "1", "1Gi"), "ReplicaSet", "rs")),
            info(with_owner(pod("b", "2", "1Gi"), "ReplicaSet", "rs")),
            info(with_owner(with_labels(pod("c", "1", "1Gi"), &[("x", "y")]), "ReplicaSet", "rs")),
            info(with_owner(pod("d", "1", "1Gi"), "ReplicaSet", "rs")),
        ];
        let groups = build_equivalence_groups(&pods);
        assert_eq!(groups.iter().map(|g| g.pods.len()).collect::<Vec<_>>(), vec![2, 1, 1]);
    }

    #[test]
    fn same_spec_different_controllers_are_separate() {
        let pods = vec![
            info(with_owner(pod("a", "1", "1Gi"), "ReplicaSet", "one")),
            info(with_owner(pod("b", "1", "1Gi"), "ReplicaSet", "two")),
        ];
        assert_eq!(build_equivalence_groups(&pods).len(), 2);
    }

    #[test]
    fn at_most_ten_groups_per_controller() {
        let pods: Vec<_> = (0..15)
            .flat_map(|i| {
                (0..2).map(move |j| {
                    info(with_owner(pod(&format!("p{i}-{j}"), &format!("{}m", 100 + i), "1Gi"), "ReplicaSet", "rs"))
                })
            })
            .collect();
        let groups = build_equivalence_groups(&pods);
        // 10 variants grouped in pairs, the other 5 variants as 10 singletons.
        assert_eq!(groups.len(), 10 + 10);
        assert_eq!(groups.iter().filter(|g| g.pods.len() == 2).count(), 10);
    }
}
