//! Expanders: given the scale-up options (one per node group), choose one.
//!
//! This is upstream Cluster Autoscaler's `--expander` flag. A spec such as `priority,least-waste`
//! is a chain of filters: each one narrows the options left by the previous one, the chain stops as
//! soon as a single option remains, and whatever is left after the last filter goes to a uniformly
//! random pick.
//!
//! - [`chain`]: [`Expander`] (parses the spec, runs the chain, owns the random source),
//!   [`ExpanderDecision`], [`ExpanderEvent`] and the per-step trace.
//! - [`filters`]: `most-pods`, `least-waste`, `least-nodes`.
//! - [`price`](mod@price): the `price` expander.
//! - [`priority`](mod@priority): the `priority` expander and its ConfigMap format.
//! - [`external`]: the `grpc` step and the [`ExternalExpander`] trait its backend implements
//!   (the gRPC client itself is the `expander-grpc` crate, so this crate needs no gRPC stack).
//!
//! Everything here is synchronous and pure apart from the random tie-break, which is seedable,
//! and the `grpc` step, which asks its backend.

use std::sync::Arc;

use simulator::{NodeInfo, PodInfo};

pub mod chain;
mod context;
mod error;
pub mod external;
pub mod filters;
pub mod price;
pub mod priority;
mod score;

pub use chain::{Expander, ExpanderDecision, ExpanderEvent, ExpanderName, FilterStep};
pub use context::ExpanderContext;
pub use error::ExpanderError;
pub use external::ExternalExpander;
pub use filters::{least_nodes, least_waste, most_pods};
pub use price::price;
pub use priority::{PriorityConfig, priority};
pub use score::{OptionScore, PriceScore};

/// One way to help the pending pods: add `node_count` nodes to `node_group_id`, which would
/// let `pods` schedule.
#[derive(Clone, Debug)]
pub struct ExpansionOption {
    pub node_group_id: String,
    pub node_count: usize,
    pub pods: Vec<Arc<PodInfo>>,
    /// The node group's template node (with its DaemonSet / static pods).
    pub template: Arc<NodeInfo>,
    /// False for a theoretical group that would have to be created first.
    pub exists: bool,
    pub similar_node_groups: Vec<String>,
    pub debug: String,
}
