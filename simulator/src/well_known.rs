//! Annotation, label and taint keys users see, spelled exactly as upstream spells them.

pub const SAFE_TO_EVICT: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
pub const SAFE_TO_EVICT_LOCAL_VOLUMES: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes";
pub const DAEMONSET_POD: &str = "cluster-autoscaler.kubernetes.io/daemonset-pod";
pub const ENABLE_DS_EVICTION: &str = "cluster-autoscaler.kubernetes.io/enable-ds-eviction";
pub const POD_SCALE_UP_DELAY: &str = "cluster-autoscaler.kubernetes.io/pod-scale-up-delay";
pub const SCALE_DOWN_DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";
pub const DELAY_DELETION_PREFIX: &str = "delay-deletion.cluster-autoscaler.kubernetes.io/";
pub const TEMPLATE_NODE_LABEL: &str = "cluster-autoscaler.kubernetes.io/template-node";
pub const UPCOMING_NODE: &str = "cluster-autoscaler.k8s.io/upcoming-node";
pub const MIRROR_POD: &str = "kubernetes.io/config.mirror";

pub const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";
pub const DELETION_CANDIDATE_TAINT: &str = "DeletionCandidateOfClusterAutoscaler";
pub const STARTUP_TAINT_PREFIX: &str = "startup-taint.cluster-autoscaler.kubernetes.io/";
pub const IGNORE_TAINT_PREFIX: &str = "ignore-taint.cluster-autoscaler.kubernetes.io/";
pub const STATUS_TAINT_PREFIX: &str = "status-taint.cluster-autoscaler.kubernetes.io/";
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// Taints the node lifecycle controller puts on nodes because of their conditions; templates
/// drop them, since a fresh node will not have them.
pub const NODE_CONDITION_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/pid-pressure",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "node.cloudprovider.kubernetes.io/shutdown",
    "cloud.google.com/impending-node-termination",
    "NodeWithImpairedVolumes",
];

pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
pub const REGION_LABEL: &str = "topology.kubernetes.io/region";
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
