//! The annotation and label keys the provider reads and writes. Most carry the Cluster API group
//! as their prefix, which upstream lets `CAPI_GROUP` change (a test or prototype group moves the
//! min/max annotations, the delete-machine annotation, the node's machine annotation and the
//! cluster-name label with it); the capacity keys and the pause annotation never move.

/// The Cluster API group when `CAPI_GROUP` is not set.
pub const DEFAULT_GROUP: &str = "cluster.x-k8s.io";

/// Scale-from-zero capacity: CPU (a quantity).
pub const CPU: &str = "capacity.cluster-autoscaler.kubernetes.io/cpu";
/// Scale-from-zero capacity: memory (a quantity).
pub const MEMORY: &str = "capacity.cluster-autoscaler.kubernetes.io/memory";
/// Scale-from-zero capacity: ephemeral storage (a quantity).
pub const EPHEMERAL_DISK: &str = "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk";
/// Scale-from-zero capacity: pods (an integer; 110 when absent, as upstream).
pub const MAX_PODS: &str = "capacity.cluster-autoscaler.kubernetes.io/maxPods";
/// Scale-from-zero capacity: the GPU's extended resource name (e.g. `nvidia.com/gpu`).
pub const GPU_TYPE: &str = "capacity.cluster-autoscaler.kubernetes.io/gpu-type";
/// Scale-from-zero capacity: how many GPUs (an integer).
pub const GPU_COUNT: &str = "capacity.cluster-autoscaler.kubernetes.io/gpu-count";
/// Scale-from-zero labels: `key1=value1,key2=value2`.
pub const LABELS: &str = "capacity.cluster-autoscaler.kubernetes.io/labels";
/// Scale-from-zero taints: `key1=value1:NoSchedule,key2:NoExecute`.
pub const TAINTS: &str = "capacity.cluster-autoscaler.kubernetes.io/taints";
/// A scalable resource Cluster API does not reconcile; upstream leaves it alone too.
pub const PAUSED: &str = "cluster.x-k8s.io/paused";

/// The keys that depend on the Cluster API group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    /// The API group of MachineDeployments, MachineSets, MachinePools and Machines.
    pub group: String,
    /// `<group>/cluster-api-autoscaler-node-group-min-size`.
    pub min_size: String,
    /// `<group>/cluster-api-autoscaler-node-group-max-size`.
    pub max_size: String,
    /// `<group>/autoscaling-options-`: the prefix of the per-group option annotations.
    pub options_prefix: String,
    /// `<group>/delete-machine`: Cluster API removes machines carrying it first when it scales
    /// a MachineSet (or MachinePool) down.
    pub delete_machine: String,
    /// `<group>/machine`: the node annotation naming its Machine.
    pub machine: String,
    /// `<group>/cluster-namespace`: the node annotation naming its Machine's namespace.
    pub cluster_namespace: String,
    /// `<group>/cluster-name`: the label naming the Cluster an object belongs to.
    pub cluster_name: String,
}

impl Keys {
    pub fn new(group: &str) -> Keys {
        Keys {
            group: group.to_string(),
            min_size: format!("{group}/cluster-api-autoscaler-node-group-min-size"),
            max_size: format!("{group}/cluster-api-autoscaler-node-group-max-size"),
            options_prefix: format!("{group}/autoscaling-options-"),
            delete_machine: format!("{group}/delete-machine"),
            machine: format!("{group}/machine"),
            cluster_namespace: format!("{group}/cluster-namespace"),
            cluster_name: format!("{group}/cluster-name"),
        }
    }
}

impl Default for Keys {
    fn default() -> Keys {
        Keys::new(DEFAULT_GROUP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_group() {
        let keys = Keys::new("test.k8s.io");
        assert_eq!(keys.min_size, "test.k8s.io/cluster-api-autoscaler-node-group-min-size");
        assert_eq!(keys.delete_machine, "test.k8s.io/delete-machine");
        assert_eq!(keys.machine, "test.k8s.io/machine");
        assert_eq!(keys.cluster_name, "test.k8s.io/cluster-name");
        assert_eq!(Keys::default().max_size, "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size");
    }
}
