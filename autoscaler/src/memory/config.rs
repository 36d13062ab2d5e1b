//! Settings of the in-memory cluster.

use std::collections::BTreeMap;
use std::time::Duration;

/// A pod annotation (copied from a Job's pod template, or from the Job itself) saying how long
/// the pod runs before it succeeds, as a Go duration (`90s`, `5m`). Pods without it run until
/// deleted, except Job pods, which use [`MemoryClusterConfig::default_job_run_duration`].
pub const RUN_DURATION_ANNOTATION: &str = "simulation.cluster-autoscaler.rs/run-duration";

/// The built-in PriorityClasses every cluster has.
pub const SYSTEM_CLUSTER_CRITICAL: (&str, i32) = ("system-cluster-critical", 2_000_000_000);
pub const SYSTEM_NODE_CRITICAL: (&str, i32) = ("system-node-critical", 2_000_001_000);

#[derive(Clone, Debug, PartialEq)]
pub struct MemoryClusterConfig {
    /// From a Node's registration until it reports Ready. Meanwhile it is NotReady and carries
    /// the `node.kubernetes.io/not-ready:NoSchedule` taint, as a real new node does.
    pub node_startup_delay: Duration,
    /// From a pod's binding until it runs (and is Ready).
    pub pod_startup_delay: Duration,
    /// How long Job pods without a [`RUN_DURATION_ANNOTATION`] run.
    pub default_job_run_duration: Duration,
    /// `terminationGracePeriodSeconds` of pods that do not set it (the API default, 30s).
    pub default_termination_grace: Duration,
    /// PriorityClass name → value, for pods that name a class instead of setting
    /// `spec.priority`. Holds the two built-in classes by default.
    pub priority_classes: BTreeMap<String, i32>,
}

impl Default for MemoryClusterConfig {
    fn default() -> Self {
        MemoryClusterConfig {
            node_startup_delay: Duration::from_secs(30),
            pod_startup_delay: Duration::ZERO,
            default_job_run_duration: Duration::from_secs(60),
            default_termination_grace: Duration::from_secs(30),
            priority_classes: [SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL]
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect(),
        }
    }
}
