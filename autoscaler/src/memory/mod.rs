//! The in-memory cluster for `simulate` and tests: a store of Kubernetes objects with fake
//! controllers, kubelets and scheduler, all synchronous and deterministic, moved forward on a
//! virtual clock by a driver, and reached by the control loop through the ports
//! (`ClusterReader`, `ClusterActions`, `Clock`).
//!
//! # How a driver uses it
//!
//! ```text
//! let time = SharedTime::new(start);
//! let cloud = Arc::new(MemoryCloudProvider::new(MemoryProviderConfig::new(groups), time.clone())?);
//! let handle = MemoryClusterHandle::new(MemoryCluster::new(MemoryClusterConfig::default(), time.clone(), Some(cloud.clone())));
//! handle.lock().apply(deployment)?;                 // scenario objects
//! let clock = VirtualClock::new(time.clone());
//! for step in 0..8_640 {                            // a day in 10 s steps
//!     handle.lock().advance(start + step * 10s);    // cloud → nodes, kubelets, controllers, scheduler, PDBs
//!     // one autoscaler loop: cloud.refresh(), handle.view(), decide, act through handle / cloud
//! }
//! handle.lock().events();                           // what the autoscaler recorded
//! ```
//!
//! # What it models
//!
//! - Nodes come from the in-memory cloud provider (registered when an instance is ready,
//!   NotReady with the `node.kubernetes.io/not-ready:NoSchedule` taint for
//!   `node_startup_delay`, removed with their pods when the instance is gone) or from the driver.
//! - Kubelets: bound pods run (and are Ready) after `pod_startup_delay`; pods with a run
//!   duration (Job pods, or the [`RUN_DURATION_ANNOTATION`]) succeed after it; terminating pods
//!   go after their grace period.
//! - Controllers: Deployments (one ReplicaSet each), ReplicaSets, StatefulSets, Jobs,
//!   DaemonSets, the disruption controller (PDB status). See `controllers/`.
//! - The scheduler: kube-scheduler's filters from `simulator`, a cheap version of its default
//!   scoring, preemption; see `scheduler.rs` and `preemption.rs`.
//! - The API server's eviction rules for PodDisruptionBudgets, the `scale` subresource, the
//!   status ConfigMap and an Event log; see `actions.rs`.
//! - Storage: claims (StatefulSets create theirs), volumes, classes, the PV controller, and
//!   `WaitForFirstConsumer` binding in the node's zone when a pod is bound; see `volumes.rs`.
//! - Not modelled: rolling updates (a changed template updates the ReplicaSet in place), pod
//!   failures and restarts, ReplicationController replicas (stored and listed only),
//!   HorizontalPodAutoscalers (stored and listed; the embedded HPA loop acts through `scale`),
//!   API conflicts and latency.
//!
//! Everything iterates in sorted order (object keys, node names, timers), so a run is a pure
//! function of its inputs.

mod actions;
mod cluster;
mod config;
mod controllers;
mod label_index;
mod nodes;
mod objects;
mod pods;
mod ports;
mod preemption;
mod scheduler;
mod store;
mod volumes;

#[cfg(test)]
mod tests;

pub use actions::LAST_UPDATED_ANNOTATION;
pub use cluster::{MemoryCluster, RecordedEvent};
pub use config::{MemoryClusterConfig, RUN_DURATION_ANNOTATION, SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL};
pub use nodes::NOT_READY_TAINT;
pub use objects::{ClusterObject, MemoryClusterError, ObjectKind};
pub use ports::{MemoryClusterHandle, VirtualClock};
pub use simulator::labels::format_label_selector;
pub use store::ObjectKey;
pub use volumes::DEFAULT_CLASS_ANNOTATION;
