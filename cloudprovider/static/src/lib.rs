//! The `static` cloud provider: node groups from `--nodes=<min>:<max>:<id>` (repeatable) and a
//! YAML `--cloud-config` file, with target sizes kept in memory. It never calls a cloud; `plan`
//! and tests use it.
//!
//! # The cloud-config file
//!
//! ```yaml
//! nodeGroups:
//! - id: general                 # required, unique
//!   minSize: 0                  # default 0
//!   maxSize: 10                 # required unless --nodes gives the bounds
//!   targetSize: 3               # default: the number of nodes that belong to the group
//!   pricePerHour: 0.096         # optional; else per-unit prices below
//!   nodeSelector: {pool: general}          # nodes with all these labels belong to the group
//!   providerIDPrefix: "static://general/"  # and/or nodes whose spec.providerID starts so
//!   template:                   # optional: a Node as fresh nodes of the group look
//!     metadata: {labels: {pool: general}}
//!     spec: {taints: []}
//!     status: {capacity: {cpu: 4, memory: 16Gi, pods: 110}, allocatable: {cpu: 3900m, memory: 15Gi}}
//!   options:                    # optional per-group overrides of the autoscaling flags
//!     scaleDownUtilizationThreshold: 0.6
//!     scaleDownGpuUtilizationThreshold: 0.4
//!     scaleDownUnneededTime: 5m # Go durations: 90s, 10m, 1h30m, 1.5h
//!     scaleDownUnreadyTime: 10m
//!     maxNodeProvisionTime: 20m
//!     maxNodeStartupTime: 15m
//!     zeroOrMaxNodeScaling: false
//!     allowNonAtomicScaleUpToMax: false
//!     ignoreDaemonSetsUtilization: true
//! gpuLabel: nvidia.com/gpu.product   # default
//! pricing:                            # per hour; defaults are upstream GCE's
//!   cpuCorePerHour: 0.033174
//!   memoryGiBPerHour: 0.004446
//!   gpuPerHour: 0.7
//! ```
//!
//! Rules:
//! - Unknown keys are errors (the template follows k8s-openapi, which ignores unknown fields).
//!   Every error names the file, the field path (`nodeGroups[1].maxSize`) and the line when known.
//! - A group needs `nodeSelector` or `providerIDPrefix` (non-empty); `minSize <= maxSize`,
//!   `targetSize <= maxSize`, sizes and prices must not be negative.
//! - Template quantities may be unquoted (`cpu: 4`); each must be a valid quantity. The template's
//!   name defaults to `template-node-for-<id>`, `allocatable` and `capacity` default to each
//!   other, `pods` to 110, the `kubernetes.io/hostname` label to the name; the group's
//!   `nodeSelector` labels are added (a contradicting label is an error), and a template without
//!   conditions gets upstream's ready conditions.
//! - `--nodes=<min>:<max>:<id>` overrides the bounds of the file's group `<id>`; an id the file
//!   lacks becomes a group without template whose nodes are those with providerID
//!   `static://<id>/…`. File groups come first (file order), then `--nodes`-only groups.
//!
//! # Membership and state
//!
//! A node belongs to the first group whose `providerIDPrefix` its providerID starts with, else
//! to the first group whose `nodeSelector` labels it carries, else to none (the autoscaler then
//! ignores it). Instance ids are providerIDs, or `static:///<node-name>` for nodes without one
//! ([`instance_id_for_node`]). See `state.rs` for how targets, placeholders for requested but
//! unregistered instances, and deletions are tracked.

mod config;
mod error;
mod group;
mod membership;
mod pricing;
mod provider;
mod raw;
mod spec;
mod state;
mod template;

#[cfg(test)]
mod config_tests;
#[cfg(test)]
mod tests;

pub use config::{StaticConfig, StaticNodeGroupConfig};
pub use error::ConfigError;
pub use group::StaticNodeGroup;
pub use membership::instance_id_for_node;
pub use pricing::StaticPricing;
pub use provider::{PROVIDER_NAME, StaticCloudProvider, build};
pub use spec::{NodeGroupSpec, parse_node_group_spec};
