//! The cluster state registry: what the loop remembers about node groups between iterations
//! (upstream §8) — scale-up requests and their deadlines, backoff, cloud instances that have not
//! registered as nodes (and since when), instances that failed to be created, and node groups
//! whose target and registered nodes disagree for too long. Each loop it turns one reading of
//! the cluster into the `ClusterState` the decision reads, plus the repairs the loop must make.

use cloudprovider::duration::{elapsed, format_go_duration, later};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use cloudprovider::{InstanceErrorInfo, InstanceState};
use k8s_openapi::jiff::Timestamp;
use rustc_hash::FxHashSet;
use serde::Serialize;

use super::backoff::Backoff;
use crate::config::AutoscalingOptions;
use crate::core::cluster_state::{registered_instance_ids, upcoming_nodes, within_unready_tolerance};
use crate::core::{CloudState, ClusterState, ClusterView};

/// A scale-up the loop asked for and is waiting on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleUpRequest {
    pub increase: usize,
    pub time: Timestamp,
    /// When all requested nodes should be ready (`time + max-node-provision-time`).
    pub expected: Timestamp,
}

/// Why an instance is removed outside scale-down. Printed as upstream's fake-node-reason
/// annotation values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstanceRemoval {
    /// Never registered as a node within `--max-node-provision-time`.
    Unregistered,
    /// The cloud reported that it failed to create the instance.
    CreateError,
}

impl InstanceRemoval {
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceRemoval::Unregistered => "unregistered",
            InstanceRemoval::CreateError => "create-error",
        }
    }
}

impl std::fmt::Display for InstanceRemoval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A cloud instance to remove, with why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceToRemove {
    pub group: String,
    pub instance_id: String,
    pub reason: InstanceRemoval,
}

/// A scale-up request whose nodes did not all start within the group's provision time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedOutScaleUp {
    pub group: String,
    pub increase: usize,
    /// From the request to the loop that found it timed out (upstream prints this).
    pub waited: Duration,
}

/// What one registry update found, for the loop to act on and report.
#[derive(Clone, Debug, Default)]
pub struct RegistryUpdate {
    pub state: ClusterState,
    /// Scale-up requests that timed out. The groups are backed off.
    pub timed_out: Vec<TimedOutScaleUp>,
    /// Instances whose creation failed, newly seen: the groups are backed off.
    pub failed_instances: Vec<(String, String, InstanceErrorInfo)>,
    /// Instances to delete: long unregistered, or failed to create.
    pub to_remove: Vec<InstanceToRemove>,
    /// Groups whose target stayed above their registered nodes for too long: (group, delta < 0).
    pub fix_sizes: Vec<(String, i64)>,
}

#[derive(Clone, Debug)]
pub struct Registry {
    scale_up_requests: BTreeMap<String, ScaleUpRequest>,
    backoff: Backoff,
    unregistered_since: BTreeMap<String, Timestamp>,
    failed_seen: BTreeSet<String>,
    incorrect_size: BTreeMap<String, (usize, usize, Timestamp)>,
    /// Nodes whose deletion the actuator started, per group.
    deletions: BTreeMap<String, BTreeSet<String>>,
}

impl Registry {
    pub fn new(options: &AutoscalingOptions) -> Self {
        Registry {
            scale_up_requests: BTreeMap::new(),
            backoff: Backoff::new(
                options.initial_node_group_backoff_duration,
                options.max_node_group_backoff_duration,
                options.node_group_backoff_reset_timeout,
            ),
            unregistered_since: BTreeMap::new(),
            failed_seen: BTreeSet::new(),
            incorrect_size: BTreeMap::new(),
            deletions: BTreeMap::new(),
        }
    }

    /// A scale-up was requested: the group is scaling up until its nodes have started or the wait
    /// times out (the nodes count as upcoming from the target size, request or not). The group's
    /// backoff stays until the scale-up succeeds, as upstream's: a failure of this scale-up after
    /// an earlier backoff expired doubles the next one.
    pub fn register_scale_up(&mut self, group: &str, increase: usize, provision_time: Duration, now: Timestamp) {
        let entry = self.scale_up_requests.entry(group.to_string()).or_insert(ScaleUpRequest {
            increase: 0,
            time: now,
            expected: now,
        });
        entry.increase += increase;
        entry.time = now;
        entry.expected = later(now, provision_time);
    }

    /// A scale-up failed (the cloud refused it): back the group off.
    pub fn register_failed_scale_up(&mut self, group: &str, code: &str, message: &str, now: Timestamp) {
        self.backoff.fail(group, code, message, now);
    }

    pub fn deletion_started(&mut self, group: &str, node: &str) {
        self.deletions.entry(group.to_string()).or_default().insert(node.to_string());
    }

    pub fn deletion_finished(&mut self, group: &str, node: &str) {
        if let Some(set) = self.deletions.get_mut(group) {
            set.remove(node);
        }
    }

    pub fn deletions_in_progress(&self) -> usize {
        self.deletions.values().map(BTreeSet::len).sum()
    }

    pub fn scale_up_request(&self, group: &str) -> Option<&ScaleUpRequest> {
        self.scale_up_requests.get(group)
    }

    pub fn update(
        &mut self,
        view: &ClusterView,
        cloud: &CloudState,
        options: &AutoscalingOptions,
        now: Timestamp,
    ) -> RegistryUpdate {
        self.backoff.forget_old(now);
        let registered = registered_instance_ids(&view.nodes);
        let mut update = RegistryUpdate {
            state: ClusterState::observe_registered(view, &registered, cloud, options, now),
            ..Default::default()
        };
        let mut still_unregistered = BTreeSet::new();
        for group in &cloud.groups {
            let provision = group.options.max_node_provision_time;
            let mut long_unregistered = 0;
            let mut unregistered = 0;
            for instance in group.instances.iter() {
                if registered.contains(instance.id.as_str()) {
                    continue;
                }
                let status = instance.status.as_ref();
                if status.is_some_and(|s| s.state == InstanceState::Deleting) {
                    continue;
                }
                if let Some(error) = status.and_then(|s| s.error.clone()) {
                    // Upstream deletes instances that failed to be created and backs the group off
                    // once per instance.
                    if self.failed_seen.insert(instance.id.clone()) {
                        self.backoff.fail(&group.id, &error.code, &error.message, now);
                        update.failed_instances.push((group.id.clone(), instance.id.clone(), error));
                        // Upstream takes the failed node out of the scale-up it belonged to; a
                        // request with nothing left is over (and did not succeed).
                        if let Some(request) = self.scale_up_requests.get_mut(&group.id) {
                            request.increase = request.increase.saturating_sub(1);
                            if request.increase == 0 {
                                self.scale_up_requests.remove(&group.id);
                            }
                        }
                    }
                    update.to_remove.push(InstanceToRemove {
                        group: group.id.clone(),
                        instance_id: instance.id.clone(),
                        reason: InstanceRemoval::CreateError,
                    });
                    continue;
                }
                unregistered += 1;
                still_unregistered.insert(instance.id.clone());
                let since = *self.unregistered_since.entry(instance.id.clone()).or_insert(now);
                if later(since, provision) < now {
                    long_unregistered += 1;
                    update.to_remove.push(InstanceToRemove {
                        group: group.id.clone(),
                        instance_id: instance.id.clone(),
                        reason: InstanceRemoval::Unregistered,
                    });
                }
            }
            let gs = update.state.groups.get_mut(&group.id).expect("observe lists every group");
            gs.unregistered = unregistered;
            gs.long_unregistered = long_unregistered;
            gs.backoff = self.backoff.status(&group.id, now);
            gs.deletions_in_progress = self.deletions.get(&group.id).map_or(0, BTreeSet::len);

            // A scale-up request of this process decides whether the group is scaling up (status,
            // instance cache), when the wait times out, and how many unready nodes are justified.
            // As upstream's, it lasts while the target is above the registered nodes that have
            // started (ready or unready): nodes still starting and instances that never registered
            // keep it open until it times out. When it ends that way it succeeded, and the group's
            // backoff is forgotten.
            let started = gs.ready + gs.unready;
            let mut pending_increase = 0;
            if let Some(request) = self.scale_up_requests.get(&group.id).cloned() {
                if group.target_size <= started {
                    self.scale_up_requests.remove(&group.id);
                    self.backoff.clear(&group.id);
                    gs.backoff = self.backoff.status(&group.id, now);
                } else if request.expected < now {
                    self.scale_up_requests.remove(&group.id);
                    let waited = elapsed(request.time, now);
                    // Upstream's error info for a timeout, shown as the status's backoffInfo.
                    let message =
                        format!("Scale-up timed out for node group {} after {}", group.id, format_go_duration(waited));
                    self.backoff.fail(&group.id, "timeout", &message, now);
                    gs.backoff = self.backoff.status(&group.id, now);
                    update.timed_out.push(TimedOutScaleUp {
                        group: group.id.clone(),
                        increase: request.increase,
                        waited,
                    });
                } else {
                    pending_increase = request.increase;
                }
            }
            gs.scale_up_in_progress = pending_increase > 0;
            gs.upcoming = upcoming_nodes(group.target_size, gs.ready, gs.unready, long_unregistered, gs.not_started);

            // Health: unready nodes beyond what the pending work explains. Upstream's acceptable
            // range counts all of the request's increase (MinNodes = target − long-unregistered −
            // increase), so nodes of a large scale-up that registered but are not ready yet never
            // make their group unhealthy.
            let min_nodes = group.target_size.saturating_sub(long_unregistered + pending_increase);
            let registered_count = gs.ready + gs.unready + gs.not_started;
            let unjustified = min_nodes.saturating_sub(gs.ready);
            gs.healthy = within_unready_tolerance(unjustified, registered_count.max(1), options);

            // Incorrect size: fewer registered nodes than the target, nothing unregistered to
            // explain it, for longer than the provision time.
            if unregistered == 0 && registered_count < min_nodes {
                let key = (registered_count, group.target_size);
                let since = match self.incorrect_size.get(&group.id) {
                    Some((r, t, since)) if (*r, *t) == key => *since,
                    _ => now,
                };
                self.incorrect_size.insert(group.id.clone(), (key.0, key.1, since));
                if later(since, provision) < now {
                    update.fix_sizes.push((group.id.clone(), registered_count as i64 - group.target_size as i64));
                    self.incorrect_size.remove(&group.id);
                }
            } else {
                self.incorrect_size.remove(&group.id);
            }
        }
        self.unregistered_since.retain(|id, _| still_unregistered.contains(id));
        // Forget deletions of nodes that are gone (the names listed only when there are some:
        // most loops have none, and a set of every node's name was made for nothing).
        if self.deletions.values().any(|set| !set.is_empty()) {
            let names: FxHashSet<&str> = view.nodes.iter().filter_map(|n| n.metadata.name.as_deref()).collect();
            for set in self.deletions.values_mut() {
                set.retain(|n| names.contains(n.as_str()));
            }
        }
        update
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cloudprovider::{Instance, InstanceStatus};

    use super::*;
    use crate::core::fixtures::{cloud, group, node};

    /// Upstream's `updateScaleRequests`: a timed-out scale-up backs its group off with error
    /// code `timeout` and the message "Scale-up timed out for node group G after D", D the time
    /// since the request, which the status ConfigMap shows as the group's backoffInfo.
    #[test]
    fn a_timed_out_scale_up_backs_the_group_off_with_upstreams_error_info() {
        let registered = Arc::new(node("n1", "g", 4000, 16, 110));
        let mut g = group("g", 0, 3, &[&registered], (*registered).clone());
        // The scale-up's instance runs but never registered.
        Arc::make_mut(&mut g.instances).push(Instance {
            id: "bench://g/n2".into(),
            status: Some(InstanceStatus { state: InstanceState::Running, error: None }),
        });
        g.target_size = 2;
        let view = ClusterView { nodes: vec![registered.clone()], ..Default::default() };
        let cloud = cloud(vec![g], &view.nodes);
        let options = AutoscalingOptions::default();
        let requested: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut registry = Registry::new(&options);
        registry.register_scale_up("g", 1, Duration::from_secs(10), requested);

        let before = registry.update(&view, &cloud, &options, later(requested, Duration::from_secs(10)));
        assert!(before.timed_out.is_empty(), "due at the provision time, timed out only after it");
        let now = later(requested, Duration::from_millis(10_500));
        let update = registry.update(&view, &cloud, &options, now);
        assert_eq!(
            update.timed_out,
            vec![TimedOutScaleUp { group: "g".into(), increase: 1, waited: Duration::from_millis(10_500) }]
        );
        let backoff = update.state.groups["g"].backoff.clone().expect("the group is backed off");
        assert_eq!(backoff.error_code, "timeout");
        assert_eq!(backoff.error_message, "Scale-up timed out for node group g after 10.5s");
        assert!(registry.scale_up_request("g").is_none(), "the request is over");
    }
}
