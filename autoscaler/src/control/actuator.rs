//! Scale-down actuation (upstream §7.3), as a state machine the loop advances every iteration
//! instead of goroutines that sleep: it never blocks a loop, and on a virtual clock it moves
//! exactly as time does.
//!
//! A node goes Tainted (`ToBeDeletedByClusterAutoscaler`, cordoned) → after
//! `--node-delete-delay-after-taint` its pods are re-read: an "empty" node that gained pods, or
//! a node whose pods may now not be evicted, is released → Draining (evictions through the
//! Eviction API, which enforces PDBs; a refused eviction is retried until
//! `--max-pod-eviction-time`) → WaitingForPods (until they are gone, at most the longest grace
//! period + 30 s) → Deleting: while the node carries `delay-deletion.cluster-autoscaler.kubernetes.io/`
//! annotations it waits for them to go, at most `--node-deletion-delay-timeout`; then it is ready
//! for `NodeGroup::delete_nodes`, one call per node, or with `--node-deletion-batcher-interval`
//! one call per group for the nodes that became ready within the interval. Once `delete_nodes`
//! returns the deletion no longer counts against the parallelism budgets (upstream ends it
//! there); the node is kept out of scale-down until its Node object goes. Any failure removes
//! the taint again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cloudprovider::NodeGroup;
use cloudprovider::duration::later;
use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::jiff::Timestamp;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use simulator::drainability::{DrainContext, PdbTracker, pods_to_move};
use simulator::well_known::{DELAY_DELETION_PREFIX, ENABLE_DS_EVICTION, TO_BE_DELETED_TAINT};
use simulator::{NodeInfo, PodInfo};

use super::registry::Registry;
use crate::config::AutoscalingOptions;
use crate::core::ClusterView;
use crate::core::classify::ClassificationCache;
use crate::core::name_memo::NameMemo;
use crate::ports::{ClusterActions, Event, EventReason, EventType, EvictionError, ObjectRef, PortError};

/// Why a node is removed (the `reason` label of `scaled_down_nodes_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RemovalReason {
    Empty,
    Underutilized,
    Unready,
}

impl RemovalReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RemovalReason::Empty => "empty",
            RemovalReason::Underutilized => "underutilized",
            RemovalReason::Unready => "unready",
        }
    }
}

/// A node the cloud removed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletedNode {
    pub node: String,
    pub node_group: String,
    pub reason: RemovalReason,
}

#[derive(Clone, Debug)]
enum Phase {
    Tainted {
        since: Timestamp,
    },
    Draining {
        first_attempt: Timestamp,
        remaining: Vec<PodToEvict>,
        evicted: Vec<String>,
    },
    WaitingForPods {
        since: Timestamp,
        timeout: Duration,
        pods: Vec<String>,
    },
    /// Drained (or empty): waiting for `delay-deletion` annotations to go, since `since`.
    Deleting {
        since: Timestamp,
    },
    /// Ready for `delete_nodes` since `since` (the batcher groups nodes ready within its interval).
    ReadyToDelete {
        since: Timestamp,
    },
    /// `delete_nodes` succeeded; waiting for the Node object to go away.
    Deleted,
}

#[derive(Clone, Debug)]
struct PodToEvict {
    namespace: String,
    name: String,
    grace: i64,
    daemonset: bool,
}

#[derive(Clone, Debug)]
struct Deletion {
    group: String,
    drain: bool,
    reason: RemovalReason,
    phase: Phase,
}

/// What one `start` or `progress` call did.
#[derive(Clone, Debug, Default)]
pub struct ActuationReport {
    pub tainted: Vec<String>,
    pub deleted: Vec<DeletedNode>,
    pub failed: Vec<(String, String)>,
    /// The node groups of the deletions in `failed` that were in flight.
    pub failed_groups: Vec<String>,
    pub evicted: Vec<String>,
    pub events: Vec<Event>,
}

#[derive(Debug, Default)]
pub struct Actuator {
    in_flight: BTreeMap<String, Deletion>,
    /// Nodes whose `ToBeDeleted` taint could not be removed when their deletion was given up.
    /// The removal is retried every loop until it succeeds or the node is gone, rather than
    /// leaving the node tainted and cordoned until the next restart's clean-up (upstream's).
    untaint_pending: BTreeSet<String>,
}

fn to_be_deleted_taint(now: Timestamp) -> Taint {
    Taint {
        key: TO_BE_DELETED_TAINT.into(),
        value: Some(now.as_second().to_string()),
        effect: "NoSchedule".into(),
        time_added: None,
    }
}

fn node_event(node: &str, event_type: EventType, reason: EventReason, message: String) -> Event {
    Event { object: ObjectRef::node(node), event_type, reason, message }
}

impl Actuator {
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn in_flight_drains(&self) -> usize {
        self.in_flight.values().filter(|d| d.drain).count()
    }

    pub fn names(&self) -> Vec<String> {
        self.in_flight.keys().cloned().collect()
    }

    pub fn is_deleting(&self, node: &str) -> bool {
        self.in_flight.contains_key(node)
    }

    /// Taints the chosen nodes. If any taint fails, every taint of this batch is rolled back and
    /// nothing starts (upstream's all-or-nothing tainting).
    pub async fn start(
        &mut self,
        nodes: &[(String, String, bool, RemovalReason)],
        actions: &dyn ClusterActions,
        registry: &mut Registry,
        options: &AutoscalingOptions,
        now: Timestamp,
    ) -> Result<ActuationReport, ActuationReport> {
        let mut report = ActuationReport::default();
        let mut done: Vec<&str> = Vec::new();
        for (node, _, _, _) in nodes {
            if let Err(e) =
                actions.taint_node(node, to_be_deleted_taint(now), options.cordon_node_before_terminating).await
            {
                for tainted in done {
                    self.untaint(tainted, actions, options).await;
                }
                report.failed.push((node.clone(), format!("failed to taint: {e}")));
                report.events.push(node_event(
                    node,
                    EventType::Warning,
                    EventReason::ScaleDownFailed,
                    format!("failed to mark the node as toBeDeleted/unschedulable: {e}"),
                ));
                return Err(report);
            }
            done.push(node);
        }
        for (node, group, drain, reason) in nodes {
            self.untaint_pending.remove(node);
            self.in_flight.insert(
                node.clone(),
                Deletion { group: group.clone(), drain: *drain, reason: *reason, phase: Phase::Tainted { since: now } },
            );
            registry.deletion_started(group, node);
            report.tainted.push(node.clone());
            report.events.push(node_event(
                node,
                EventType::Normal,
                EventReason::ScaleDown,
                "marked the node as toBeDeleted/unschedulable".into(),
            ));
        }
        Ok(report)
    }

    async fn release(
        &mut self,
        node: &str,
        why: String,
        actions: &dyn ClusterActions,
        registry: &mut Registry,
        options: &AutoscalingOptions,
        report: &mut ActuationReport,
    ) {
        if let Some(d) = self.in_flight.remove(node) {
            registry.deletion_finished(&d.group, node);
            report.failed_groups.push(d.group);
        }
        self.untaint(node, actions, options).await;
        report.events.push(node_event(node, EventType::Warning, EventReason::ScaleDownFailed, why.clone()));
        report.failed.push((node.to_string(), why));
    }

    /// Removes the `ToBeDeleted` taint (and the cordon, when we set it) from a node whose
    /// deletion is not going ahead; a failure leaves it for the next loop to retry.
    async fn untaint(&mut self, node: &str, actions: &dyn ClusterActions, options: &AutoscalingOptions) {
        match actions.untaint_node(node, TO_BE_DELETED_TAINT, options.cordon_node_before_terminating).await {
            Ok(()) | Err(PortError::NotFound { .. }) => {
                self.untaint_pending.remove(node);
            }
            Err(error) => {
                tracing::warn!(node, %error, "could not remove the ToBeDeleted taint; retrying in the next loop");
                self.untaint_pending.insert(node.to_string());
            }
        }
    }

    /// Advances every deletion in flight as far as `now` allows.
    #[allow(clippy::too_many_arguments)]
    pub async fn progress(
        &mut self,
        view: &ClusterView,
        classified: &ClassificationCache,
        groups: &BTreeMap<String, Arc<dyn NodeGroup>>,
        actions: &dyn ClusterActions,
        registry: &mut Registry,
        options: &AutoscalingOptions,
        now: Timestamp,
    ) -> ActuationReport {
        let mut report = ActuationReport::default();
        if self.in_flight.is_empty() && self.untaint_pending.is_empty() {
            return report;
        }
        let nodes: BTreeMap<&str, &Arc<Node>> =
            view.nodes.iter().filter_map(|n| n.metadata.name.as_deref().map(|name| (name, n))).collect();
        for node in std::mem::take(&mut self.untaint_pending) {
            // A node that is gone, or taken again by a new deletion, needs nothing more.
            if nodes.contains_key(node.as_str()) && !self.in_flight.contains_key(&node) {
                self.untaint(&node, actions, options).await;
            }
        }
        let names: Vec<String> = self.in_flight.keys().cloned().collect();
        // The pods of the nodes in flight, the first time a node's pods are needed: from this
        // loop's sorting of the pods, or else in one walk over the view's pods (each node name
        // looked up once, by its address).
        let mut pods_by_node: Option<FxHashMap<&str, Vec<&Arc<PodInfo>>>> = None;
        let in_flight: FxHashSet<&str> = names.iter().map(String::as_str).collect();
        let mut pods_on = |name: &str| -> Vec<&Arc<PodInfo>> {
            let by_node = pods_by_node.get_or_insert_with(|| {
                if let Some(by_node) = classified.pods_on_nodes(view, &in_flight) {
                    return by_node;
                }
                let mut by_node: FxHashMap<&str, Vec<&Arc<PodInfo>>> = FxHashMap::default();
                let mut is_in_flight = NameMemo::default();
                for p in &view.pods {
                    if let Some(node) = p.node_name()
                        && is_in_flight.get(node, |node| in_flight.contains(node))
                    {
                        by_node.entry(node).or_default().push(p);
                    }
                }
                by_node
            });
            by_node.get(name).cloned().unwrap_or_default()
        };
        for name in &names {
            let Some(node) = nodes.get(name.as_str()) else {
                // The node is gone: its deletion is complete.
                if let Some(d) = self.in_flight.remove(name) {
                    registry.deletion_finished(&d.group, name);
                }
                continue;
            };
            let deletion = self.in_flight[name].clone();
            let mut phase = deletion.phase.clone();
            if let Phase::Tainted { since } = phase {
                if now < later(since, options.node_delete_delay_after_taint) {
                    continue;
                }
                let pods = pods_on(name);
                phase = match self.pods_to_evict(view, node, &pods, &deletion, options, now) {
                    Ok(pods) if deletion.drain => {
                        Phase::Draining { first_attempt: now, remaining: pods, evicted: Vec::new() }
                    }
                    Ok(pods) if pods.iter().all(|p| p.daemonset) => {
                        // Empty node: DaemonSet pods are evicted best effort, without waiting.
                        for p in pods {
                            let _ = actions.evict_pod(&p.namespace, &p.name, p.grace).await;
                        }
                        Phase::Deleting { since: now }
                    }
                    Ok(_) => {
                        let why = "the node was empty when chosen but now has pods to move".to_string();
                        self.release(name, why, actions, registry, options, &mut report).await;
                        continue;
                    }
                    Err(why) => {
                        self.release(name, why, actions, registry, options, &mut report).await;
                        continue;
                    }
                };
            }
            if let Phase::Draining { first_attempt, remaining, mut evicted } = phase {
                let mut still = Vec::new();
                let mut longest_grace = 0;
                for p in remaining {
                    match actions.evict_pod(&p.namespace, &p.name, p.grace).await {
                        Ok(()) | Err(EvictionError::NotFound(_)) => {
                            let key = format!("{}/{}", p.namespace, p.name);
                            report.evicted.push(key.clone());
                            report.events.push(Event {
                                object: ObjectRef::pod(&p.namespace, &p.name),
                                event_type: EventType::Normal,
                                reason: EventReason::ScaleDown,
                                message: "deleting pod for node scale down".into(),
                            });
                            longest_grace = longest_grace.max(p.grace);
                            if !p.daemonset {
                                evicted.push(key);
                            }
                        }
                        // DaemonSet pods are evicted best effort: a refusal does not hold the node.
                        Err(_) if p.daemonset => {}
                        Err(_) => still.push(p),
                    }
                }
                phase = if still.is_empty() {
                    let timeout = Duration::from_secs(longest_grace.max(0) as u64 + 30);
                    Phase::WaitingForPods { since: now, timeout, pods: evicted }
                } else if now > later(first_attempt, options.max_pod_eviction_time) {
                    let why = format!(
                        "failed to drain the node: eviction of {}/{} did not succeed within --max-pod-eviction-time",
                        still[0].namespace, still[0].name
                    );
                    self.release(name, why, actions, registry, options, &mut report).await;
                    continue;
                } else {
                    Phase::Draining { first_attempt, remaining: still, evicted }
                };
            }
            if let Phase::WaitingForPods { since, timeout, ref pods } = phase {
                let on_node: Vec<String> = pods_on(name).iter().map(|p| p.key.to_string()).collect();
                if !pods.iter().any(|k| on_node.contains(k)) {
                    phase = Phase::Deleting { since: now };
                } else if now > later(since, timeout) {
                    let why = "failed to drain the node: evicted pods did not leave in time".to_string();
                    self.release(name, why, actions, registry, options, &mut report).await;
                    continue;
                }
            }
            if let Phase::Deleting { since } = phase {
                let held =
                    node.metadata.annotations.iter().flatten().any(|(key, _)| key.starts_with(DELAY_DELETION_PREFIX));
                if held && now <= later(since, options.node_deletion_delay_timeout) {
                    if let Some(d) = self.in_flight.get_mut(name) {
                        d.phase = phase;
                    }
                    continue;
                }
                if held {
                    tracing::warn!(node = %name, "delay-deletion annotations still present after --node-deletion-delay-timeout; deleting the node anyway");
                }
                phase = Phase::ReadyToDelete { since: now };
            }
            if let Some(d) = self.in_flight.get_mut(name) {
                d.phase = phase;
            }
        }
        self.delete_ready(&nodes, groups, actions, registry, options, now, &mut report).await;
        report
    }

    /// Calls `delete_nodes` for the nodes ready to go: one call per node, or with
    /// `--node-deletion-batcher-interval` one call per group once its oldest ready node has
    /// waited the interval (a failed call fails the whole batch, as upstream's batcher).
    #[allow(clippy::too_many_arguments)]
    async fn delete_ready(
        &mut self,
        nodes: &BTreeMap<&str, &Arc<Node>>,
        groups: &BTreeMap<String, Arc<dyn NodeGroup>>,
        actions: &dyn ClusterActions,
        registry: &mut Registry,
        options: &AutoscalingOptions,
        now: Timestamp,
        report: &mut ActuationReport,
    ) {
        let mut ready: BTreeMap<String, Vec<(String, Timestamp)>> = BTreeMap::new();
        for (name, d) in &self.in_flight {
            if let Phase::ReadyToDelete { since } = d.phase {
                ready.entry(d.group.clone()).or_default().push((name.clone(), since));
            }
        }
        let interval = options.node_deletion_batcher_interval;
        for (group_id, members) in ready {
            let batches: Vec<Vec<String>> = if interval.is_zero() {
                members.into_iter().map(|(name, _)| vec![name]).collect()
            } else {
                let oldest = members.iter().map(|(_, since)| *since).min().unwrap_or(now);
                if now < later(oldest, interval) {
                    continue;
                }
                vec![members.into_iter().map(|(name, _)| name).collect()]
            };
            for batch in batches {
                let doomed: Vec<Node> =
                    batch.iter().filter_map(|name| nodes.get(name.as_str())).map(|n| (***n).clone()).collect();
                let result = match groups.get(&group_id) {
                    Some(group) => group.delete_nodes(&doomed).await.map_err(|e| e.to_string()),
                    None => Err(format!("node group {group_id} not found")),
                };
                for name in batch {
                    match &result {
                        Ok(()) => {
                            let Some(d) = self.in_flight.get_mut(&name) else { continue };
                            report.deleted.push(DeletedNode {
                                node: name.clone(),
                                node_group: d.group.clone(),
                                reason: d.reason,
                            });
                            report.events.push(node_event(
                                &name,
                                EventType::Normal,
                                EventReason::ScaleDown,
                                "nodes removed by cluster autoscaler".into(),
                            ));
                            d.phase = Phase::Deleted;
                            // The cloud has the node: the deletion stops counting against the
                            // budgets (upstream), though the Node object may stay a while.
                            registry.deletion_finished(&group_id, &name);
                        }
                        Err(e) => {
                            let why = format!("failed to delete the node: {e}");
                            self.release(&name, why, actions, registry, options, report).await;
                        }
                    }
                }
            }
        }
    }

    /// Pods to evict from a node now, with their grace periods, or why the node must be kept.
    fn pods_to_evict(
        &self,
        view: &ClusterView,
        node: &Arc<Node>,
        pods: &[&Arc<PodInfo>],
        deletion: &Deletion,
        options: &AutoscalingOptions,
        now: Timestamp,
    ) -> Result<Vec<PodToEvict>, String> {
        let mut info = NodeInfo::new(node.clone());
        // `pods`: the view's pods bound to the node, in view order.
        for p in pods {
            if !p.is_terminal() && p.priority >= options.expendable_pods_priority_cutoff {
                info.pods.push(Arc::clone(p));
            }
        }
        let controllers = view.controllers();
        // PDBs are enforced by the Eviction API at drain time; the rules here catch pods that
        // may not be evicted at all.
        let pdbs = PdbTracker::new::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(&[]);
        let ctx = DrainContext { pdbs: &pdbs, controllers: &controllers, options: &options.drain, now };
        let pods = pods_to_move(&info, &ctx)
            .map_err(|blocked| format!("pod {} blocks the removal: {}", blocked.pod.key, blocked.reason))?;
        if pods.waits_for_completion() {
            return Err("a safe-to-evict: on-completion pod is still running".into());
        }
        let grace = |p: &PodInfo| {
            let own = p.spec().termination_grace_period_seconds.unwrap_or(30);
            own.min(options.max_graceful_termination_sec)
        };
        let evict = |p: &PodInfo| PodToEvict {
            namespace: p.namespace().to_string(),
            name: p.name().to_string(),
            grace: grace(p),
            daemonset: p.daemonset,
        };
        let mut out: Vec<PodToEvict> = pods.pods.iter().map(|p| evict(p)).collect();
        let ds_default = if deletion.drain {
            options.daemonset_eviction_for_occupied_nodes
        } else {
            options.daemonset_eviction_for_empty_nodes
        };
        for p in &pods.daemonset_pods {
            let wanted = match p.annotation(ENABLE_DS_EVICTION) {
                Some("true") => true,
                Some("false") => false,
                _ => ds_default,
            };
            if wanted {
                out.push(evict(p));
            }
        }
        Ok(out)
    }
}
