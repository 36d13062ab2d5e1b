//! The `memory` cloud provider: node groups that live in memory on a virtual clock, for
//! `simulate` and tests. It owns its instances, moves them through their life as the shared
//! virtual time advances, and can be told to fail the way real clouds fail.
//!
//! # How a simulation uses it
//!
//! ```text
//! let time = SharedTime::new(start);
//! let provider = Arc::new(MemoryCloudProvider::new(MemoryProviderConfig::new(groups), time.clone())?);
//! // each step:
//! time.advance_to(t);
//! for event in provider.drain_events() { /* the cluster adds / removes Nodes */ }
//! // the autoscaler calls the CloudProvider / NodeGroup traits as usual
//! ```
//!
//! The in-memory cluster (`autoscaler::memory`) does the draining itself in its `advance`.
//! `--cloud-provider=memory` builds it from a file ([`file`]) and, in the controller, mirrors its
//! instances onto a real cluster's Nodes ([`build`]).
//!
//! # Semantics
//!
//! - Instances are `memory://<group>/<n>` (n counts from 1 per group, never reused); their Nodes
//!   are named `<group>-<n>` and carry the instance id as `spec.providerID`. A node belongs to
//!   the group its providerID names.
//! - The target size is the number of instances that are Creating or Running.
//! - `increase_size(delta)`: refuses 0 and anything above max (upstream's "size increase too
//!   large"); launches `delta` instances, Creating until `provisioning_delay` has passed, then
//!   Running; their Nodes register at that moment ([`CloudEvent::NodeRegistered`]).
//! - `delete_nodes(nodes)`: every node must be an instance of this group (by providerID) and the
//!   target must stay at or above min (`force_delete_nodes` skips that check). The instances are
//!   Deleting until `deletion_delay` has passed, then gone ([`CloudEvent::InstanceDeleted`]) and
//!   `has_instance` answers false. Nodes already being deleted are skipped.
//! - `decrease_target_size(delta < 0)`: withdraws requested instances that have not started
//!   (Creating, newest first); refuses to go below the number of Running instances, with
//!   upstream's "attempt to delete existing nodes" message.
//! - Faults ([`MemoryCloudProvider::fail_increase_size`], `partial_fulfilment`,
//!   `never_register`, `fail_delete_nodes`, `stock_out`, `clear_faults`) can be armed at any time.
//!   `slow_increase_size` and `slow_delete_nodes` carry a call out, then hold its answer for a
//!   wall-clock delay: they are for the controller (`--cloud-config`), not the virtual clock.
//! - Time comes only from the [`SharedTime`]: every call first applies the transitions due at
//!   its current value. There are no timers and no wall clock (but for the slow faults' delays).
//! - Prices: a group's `price_per_hour`, else per-unit prices of the node's capacity (as the
//!   static provider). Template copies named `template-node-for-<group>[-…]` price as their group.

mod config;
mod factory;
pub mod file;
mod group;
mod pricing;
mod provider;
mod state;
mod template;
mod time;

#[cfg(test)]
mod tests;

pub use config::{
    DEFAULT_ERROR_REPORT_DELAY, DEFAULT_PROVISIONING_DELAY, FaultCount, Fulfilment, MemoryGroupSpec,
    MemoryProviderConfig, MemoryProviderError, PLACEHOLDER_CANNOT_BE_FULFILLED, PROVIDER_ID_SCHEME, provider_id_prefix,
};
pub use factory::build;
pub use group::MemoryNodeGroup;
pub use pricing::MemoryPricing;
pub use provider::{MemoryCloudProvider, PROVIDER_NAME};
pub use state::CloudEvent;
pub use time::SharedTime;
