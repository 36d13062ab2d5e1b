//! The scheduling model of the autoscaler: pure, synchronous, no I/O.
//!
//! - `quantity`, `resources`: Kubernetes quantities and pod requests as the scheduler counts them.
//! - `labels`: label and node selectors.
//! - `pod`, `node`: `PodInfo` and `NodeInfo`, computed once per object.
//! - `snapshot`, `index`: the `ClusterSnapshot` with fork / revert / commit and its topology index.
//! - `predicates`, `scheduling`: kube-scheduler's filters and node search.
//! - `equivalence`: pod equivalence groups.
//! - `drainability`, `utilization`: what scale-down may move and how busy a node is.
//! - `volumes`: claims, volumes and classes for the volume filters.

pub mod controllers;
pub mod drainability;
pub mod equivalence;
mod index;
pub mod labels;
pub mod node;
pub mod pdb;
pub mod pod;
pub mod predicates;
pub mod quantity;
pub mod resources;
pub mod scheduling;
pub mod snapshot;
pub mod testing;
pub mod utilization;
pub mod volumes;
pub mod well_known;

pub use node::NodeInfo;
pub use pod::PodInfo;
pub use predicates::Unfit;
pub use resources::Resources;
pub use snapshot::{ClusterSnapshot, NodeId, NodeSet};
