//! The decision path shared by `plan`, `simulate` and the controller:
//! observe (`view`, `cloud`, `cluster_state`) → snapshot (`templates`) → decide (`decide`,
//! `scale_up`, `scale_down`) → a `Plan`.

pub mod base_snapshot;
pub mod classify;
pub mod cloud;
pub mod cluster_state;
pub mod compact;
pub mod counting;
pub mod decide;
pub mod fixtures;
pub mod laps;
pub mod memory;
pub mod name_memo;
pub mod node_facts;
pub mod node_positions;
pub mod plan;
pub mod readiness;
pub mod scale_down;
pub mod scale_up;
pub mod shared_list;
pub mod templates;
pub mod view;

pub use cloud::{CloudState, NodeGroupState};
pub use cluster_state::ClusterState;
pub use decide::{Decision, DecisionInput, decide};
pub use memory::LoopMemory;
pub use plan::Plan;
pub use view::ClusterView;
