//! Estimation limits, as upstream's threshold-based limiter: each threshold gives a node limit
//! and a time limit; the estimation uses the smallest positive node limit (a negative one forbids
//! any node, 0 means "no limit") and the smallest positive duration.

use std::time::{Duration, Instant};

/// One source of limits for a node group's estimation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    /// Nodes the estimation may add: > 0 a limit, 0 no limit, < 0 none at all.
    pub node_limit: i64,
    /// Wall time the estimation may take; zero means no limit.
    pub duration_limit: Duration,
}

impl Threshold {
    /// `--max-nodes-per-scaleup` and `--max-nodegroup-binpacking-duration`.
    pub fn fixed(max_nodes_per_scale_up: i64, max_duration: Duration) -> Self {
        Threshold { node_limit: max_nodes_per_scale_up, duration_limit: max_duration }
    }

    /// Free capacity of the node group and its similar groups: Σ(max − target), or "none" when
    /// there is no room.
    pub fn group_capacity(free_slots: i64) -> Self {
        Threshold { node_limit: if free_slots > 0 { free_slots } else { -1 }, duration_limit: Duration::ZERO }
    }

    /// `--max-nodes-total` minus the current node count (0 max means unlimited).
    pub fn cluster_capacity(max_nodes_total: i64, current_nodes: i64) -> Self {
        let node_limit = if max_nodes_total <= 0 {
            0
        } else if max_nodes_total > current_nodes {
            max_nodes_total - current_nodes
        } else {
            -1
        };
        Threshold { node_limit, duration_limit: Duration::ZERO }
    }
}

/// Grants permission to add nodes during one estimation.
#[derive(Debug)]
pub struct EstimationLimiter {
    max_nodes: Option<i64>,
    max_duration: Option<Duration>,
    started: Instant,
    nodes_added: i64,
    limited: bool,
}

impl EstimationLimiter {
    pub fn new(thresholds: &[Threshold]) -> Self {
        let mut max_nodes: Option<i64> = None;
        for t in thresholds {
            if t.node_limit < 0 {
                max_nodes = Some(0);
                break;
            }
            if t.node_limit > 0 {
                max_nodes = Some(max_nodes.map_or(t.node_limit, |m| m.min(t.node_limit)));
            }
        }
        let max_duration = thresholds.iter().map(|t| t.duration_limit).filter(|d| !d.is_zero()).min();
        EstimationLimiter { max_nodes, max_duration, started: Instant::now(), nodes_added: 0, limited: false }
    }

    pub fn unlimited() -> Self {
        Self::new(&[])
    }

    /// Whether one more node may be added; each `true` counts one node.
    pub fn permission_to_add_node(&mut self) -> bool {
        if self.max_nodes.is_some_and(|m| self.nodes_added >= m) {
            self.limited = true;
            return false;
        }
        if self.max_duration.is_some_and(|d| self.started.elapsed() > d) {
            self.limited = true;
            return false;
        }
        self.nodes_added += 1;
        true
    }

    /// Whether a limit stopped the estimation.
    pub fn was_limited(&self) -> bool {
        self.limited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_positive_node_limit_wins() {
        let mut l = EstimationLimiter::new(&[Threshold::fixed(1000, Duration::ZERO), Threshold::group_capacity(2)]);
        assert!(l.permission_to_add_node());
        assert!(l.permission_to_add_node());
        assert!(!l.permission_to_add_node());
        assert!(l.was_limited());
    }

    #[test]
    fn zero_means_no_limit() {
        let mut l = EstimationLimiter::new(&[Threshold::fixed(0, Duration::ZERO), Threshold::cluster_capacity(0, 50)]);
        for _ in 0..10_000 {
            assert!(l.permission_to_add_node());
        }
    }

    #[test]
    fn negative_limit_forbids_all_nodes() {
        let mut l =
            EstimationLimiter::new(&[Threshold::fixed(1000, Duration::ZERO), Threshold::cluster_capacity(10, 10)]);
        assert!(!l.permission_to_add_node());
        let mut l = EstimationLimiter::new(&[Threshold::group_capacity(0)]);
        assert!(!l.permission_to_add_node());
    }
}
