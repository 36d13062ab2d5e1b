//! The provider's mutable state: every group's instances, the faults armed on it, and the queue
//! of events for the in-memory cluster.
//!
//! An instance's life:
//!
//! ```text
//! increase_size ──► Creating ──(provisioning delay)──► Running ──delete_nodes──► Deleting ──(deletion delay)──► gone
//!                      │                                 (registers a Node unless never_register)
//!                      └─ launch failed: stays Creating, error info reported after the error delay
//! ```
//!
//! The group's target size is the number of instances that are Creating or Running, so it
//! moves with every increase, deletion and target decrease. Transitions that depend only on
//! time happen in [`ProviderState::settle`], which every operation runs first with the shared
//! virtual now; registrations and deletions it observes are queued as [`CloudEvent`]s.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;

use super::config::{GroupFaults, MemoryGroupSpec, PLACEHOLDER_CANNOT_BE_FULFILLED, provider_id_prefix};
use super::template::node_for_instance;
use cloudprovider::duration::later;
use cloudprovider::{
    CloudProviderError, Instance, InstanceErrorClass, InstanceErrorInfo, InstanceState, InstanceStatus, Result,
};

/// What the cloud tells the cluster, in the order it happened.
#[derive(Clone, Debug, PartialEq)]
pub enum CloudEvent {
    /// An instance is running and its kubelet registered this Node at `at`. `initial` marks the
    /// instances a group starts with (they exist before the simulation begins).
    NodeRegistered { group: String, instance_id: String, node: Box<Node>, at: Timestamp, initial: bool },
    /// An instance is gone (deleted, or a request withdrawn); its Node, if any, goes with it.
    InstanceDeleted { group: String, instance_id: String, at: Timestamp },
}

impl CloudEvent {
    pub fn at(&self) -> Timestamp {
        match self {
            CloudEvent::NodeRegistered { at, .. } | CloudEvent::InstanceDeleted { at, .. } => *at,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Fate {
    Registers,
    /// Runs in the cloud, but no Node ever appears.
    NeverRegisters,
    /// The cloud could not launch it: it stays Creating and reports `error` from `report_at`.
    Fails {
        report_at: Timestamp,
        error: InstanceErrorInfo,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Creating,
    Running,
    Deleting { gone_at: Timestamp },
}

#[derive(Clone, Debug)]
struct InstanceRecord {
    id: String,
    name: String,
    ready_at: Timestamp,
    fate: Fate,
    phase: Phase,
    initial: bool,
}

impl InstanceRecord {
    fn counts_in_target(&self) -> bool {
        matches!(self.phase, Phase::Creating | Phase::Running)
    }
}

#[derive(Debug, Default)]
pub(crate) struct GroupState {
    /// Oldest first.
    instances: Vec<InstanceRecord>,
    next_number: u64,
    pub faults: GroupFaults,
}

impl GroupState {
    fn target(&self) -> usize {
        self.instances.iter().filter(|i| i.counts_in_target()).count()
    }
}

#[derive(Debug)]
pub(crate) struct ProviderState {
    groups: Vec<GroupState>,
    /// Instance id → group index, for instances not gone.
    live: BTreeMap<String, usize>,
    events: Vec<CloudEvent>,
    /// No instance changes phase before this moment, so `settle` (run before every read of the
    /// cloud, many times a simulated step) has nothing to do until then: set by `settle`,
    /// lowered to the earliest by every launch, deletion and withdrawal.
    quiet_until: Timestamp,
}

fn invalid(message: String) -> CloudProviderError {
    CloudProviderError::InvalidRequest(message)
}

/// What `delete` does with the nodes' instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MinSizeCheck {
    Respect,
    Ignore,
}

impl ProviderState {
    /// The groups with their initial instances, running and registered at `now`.
    pub(crate) fn new(specs: &[MemoryGroupSpec], now: Timestamp) -> ProviderState {
        let mut state = ProviderState {
            groups: specs.iter().map(|_| GroupState { next_number: 1, ..Default::default() }).collect(),
            live: BTreeMap::new(),
            events: Vec::new(),
            quiet_until: Timestamp::MIN,
        };
        for (index, spec) in specs.iter().enumerate() {
            for _ in 0..spec.initial_size {
                let record = state.new_instance(specs, index, now, Fate::Registers, true);
                state.groups[index].instances.push(record);
            }
        }
        state.settle(specs, now);
        state
    }

    fn new_instance(
        &mut self,
        specs: &[MemoryGroupSpec],
        index: usize,
        ready_at: Timestamp,
        fate: Fate,
        initial: bool,
    ) -> InstanceRecord {
        let spec = &specs[index];
        let group = &mut self.groups[index];
        let number = group.next_number;
        group.next_number += 1;
        self.quiet_until = Timestamp::MIN;
        let id = format!("{}{number}", provider_id_prefix(&spec.id));
        self.live.insert(id.clone(), index);
        InstanceRecord { id, name: format!("{}-{number}", spec.id), ready_at, fate, phase: Phase::Creating, initial }
    }

    pub(crate) fn group_mut(&mut self, index: usize) -> &mut GroupState {
        &mut self.groups[index]
    }

    /// Applies every transition due at `now` and queues the events, in time order.
    pub(crate) fn settle(&mut self, specs: &[MemoryGroupSpec], now: Timestamp) {
        if now < self.quiet_until {
            return;
        }
        let mut due: Vec<CloudEvent> = Vec::new();
        for (index, group) in self.groups.iter_mut().enumerate() {
            let spec = &specs[index];
            for instance in &mut group.instances {
                if instance.phase == Phase::Creating && instance.ready_at <= now {
                    match instance.fate {
                        Fate::Fails { .. } => {}
                        Fate::NeverRegisters => instance.phase = Phase::Running,
                        Fate::Registers => {
                            instance.phase = Phase::Running;
                            let node =
                                node_for_instance(&spec.template.node, &instance.name, &instance.id, instance.ready_at);
                            due.push(CloudEvent::NodeRegistered {
                                group: spec.id.clone(),
                                instance_id: instance.id.clone(),
                                node: Box::new(node),
                                at: instance.ready_at,
                                initial: instance.initial,
                            });
                        }
                    }
                }
            }
            // Settled at every read of the cloud: only the instances that go are taken out, the
            // others stay where they are.
            let gone = |i: &mut InstanceRecord| matches!(i.phase, Phase::Deleting { gone_at } if gone_at <= now);
            for instance in group.instances.extract_if(.., gone) {
                if let Phase::Deleting { gone_at } = instance.phase {
                    self.live.remove(&instance.id);
                    due.push(CloudEvent::InstanceDeleted {
                        group: spec.id.clone(),
                        instance_id: instance.id,
                        at: gone_at,
                    });
                }
            }
        }
        // Stable: events of the same moment keep group and instance order.
        due.sort_by_key(CloudEvent::at);
        self.events.extend(due);
        self.quiet_until = self.next_transition();
    }

    /// When the next instance changes phase: the first launch to come up (failed launches stay
    /// Creating for good) or deletion to finish; `Timestamp::MAX` when none is under way.
    fn next_transition(&self) -> Timestamp {
        let due = |i: &InstanceRecord| match (i.phase, &i.fate) {
            (Phase::Creating, Fate::Fails { .. }) | (Phase::Running, _) => None,
            (Phase::Creating, _) => Some(i.ready_at),
            (Phase::Deleting { gone_at }, _) => Some(gone_at),
        };
        self.groups.iter().flat_map(|g| &g.instances).filter_map(due).min().unwrap_or(Timestamp::MAX)
    }

    pub(crate) fn drain_events(&mut self) -> Vec<CloudEvent> {
        std::mem::take(&mut self.events)
    }

    pub(crate) fn target(&self, index: usize) -> usize {
        self.groups[index].target()
    }

    pub(crate) fn is_live(&self, instance_id: &str) -> bool {
        self.live.contains_key(instance_id)
    }

    /// Raises the target by `delta` and launches that many instances. With `atomic`, a request
    /// the cloud can only partly fulfil launches nothing (every instance fails).
    pub(crate) fn increase(
        &mut self,
        specs: &[MemoryGroupSpec],
        index: usize,
        delta: usize,
        now: Timestamp,
        error_report_delay: Duration,
        atomic: bool,
    ) -> Result<()> {
        let spec = &specs[index];
        if delta == 0 {
            return Err(invalid("size increase must be positive".to_string()));
        }
        let desired = self.groups[index].target().saturating_add(delta);
        if desired > spec.max_size {
            return Err(invalid(format!("size increase too large - desired:{desired} max:{}", spec.max_size)));
        }
        if let Some(error) = self.groups[index].faults.take_increase_failure() {
            return Err(error);
        }
        let faults = &self.groups[index].faults;
        let stocked_out = faults.stocked_out(now);
        let mut launched = match (stocked_out, faults.partial) {
            (true, _) => 0,
            (false, Some(fulfilment)) => fulfilment.launched(delta),
            (false, None) => delta,
        };
        if atomic && launched < delta {
            launched = 0;
        }
        let error = InstanceErrorInfo {
            class: InstanceErrorClass::OutOfResources,
            code: PLACEHOLDER_CANNOT_BE_FULFILLED.to_string(),
            message: if stocked_out {
                format!("Could not launch instances for node group {}: insufficient capacity (stock-out)", spec.id)
            } else {
                format!(
                    "Could not launch {} of {delta} requested instances for node group {}: insufficient capacity",
                    delta - launched,
                    spec.id
                )
            },
        };
        let ready_at = later(now, spec.provisioning_delay);
        for position in 0..delta {
            let fate = if position >= launched {
                Fate::Fails { report_at: later(now, error_report_delay), error: error.clone() }
            } else if self.groups[index].faults.never_register > 0 {
                self.groups[index].faults.never_register -= 1;
                Fate::NeverRegisters
            } else {
                Fate::Registers
            };
            let record = self.new_instance(specs, index, ready_at, fate, false);
            self.groups[index].instances.push(record);
        }
        Ok(())
    }

    /// Deletes the instances behind `nodes` (given as `(node name, instance id)`), lowering the
    /// target by their number.
    pub(crate) fn delete(
        &mut self,
        specs: &[MemoryGroupSpec],
        index: usize,
        nodes: &[(String, String)],
        check: MinSizeCheck,
        now: Timestamp,
        deletion_delay: Duration,
    ) -> Result<()> {
        let spec = &specs[index];
        let group = &self.groups[index];
        let mut doomed: Vec<usize> = Vec::new();
        for (name, id) in nodes {
            let position = group.instances.iter().position(|i| i.id == *id);
            match position {
                Some(position) => {
                    let instance = &group.instances[position];
                    if instance.counts_in_target() && !doomed.contains(&position) {
                        doomed.push(position);
                    }
                    // Already being deleted: deleting again changes nothing.
                }
                None if id.starts_with(&provider_id_prefix(&spec.id)) && !self.live.contains_key(id) => {
                    // Gone already (or withdrawn): the deletion's goal is met.
                }
                None => {
                    let owner = self.live.get(id).map(|&other| format!(" (it belongs to {})", specs[other].id));
                    return Err(invalid(format!(
                        "node {name} (instance {id}) does not belong to node group {}{}",
                        spec.id,
                        owner.unwrap_or_default()
                    )));
                }
            }
        }
        if doomed.is_empty() {
            return Ok(());
        }
        let target = group.target();
        if check == MinSizeCheck::Respect && target < spec.min_size + doomed.len() {
            return Err(invalid(format!(
                "min size reached, nodes will not be deleted: node group {} has target size {target}, min size {}, \
                 and {} nodes to delete",
                spec.id,
                spec.min_size,
                doomed.len()
            )));
        }
        if let Some(error) = self.groups[index].faults.take_delete_failure() {
            return Err(error);
        }
        let gone_at = later(now, deletion_delay);
        self.quiet_until = Timestamp::MIN;
        for position in doomed {
            self.groups[index].instances[position].phase = Phase::Deleting { gone_at };
        }
        Ok(())
    }

    /// Withdraws `-delta` requested instances that have not started (newest first); refuses to
    /// touch instances that run.
    pub(crate) fn decrease_target(&mut self, index: usize, delta: i64, now: Timestamp) -> Result<()> {
        if delta >= 0 {
            return Err(invalid(format!("size decrease must be negative, got {delta}")));
        }
        let group = &mut self.groups[index];
        let decrease = usize::try_from(delta.unsigned_abs()).unwrap_or(usize::MAX);
        let target = group.target();
        let existing = group.instances.iter().filter(|i| i.phase == Phase::Running).count();
        if target.checked_sub(decrease).is_none_or(|new_target| new_target < existing) {
            return Err(invalid(format!(
                "attempt to delete existing nodes targetSize:{target} delta:{delta} existingNodes: {existing}"
            )));
        }
        let mut withdrawn = 0;
        for instance in group.instances.iter_mut().rev() {
            if withdrawn == decrease {
                break;
            }
            if instance.phase == Phase::Creating {
                instance.phase = Phase::Deleting { gone_at: now };
                withdrawn += 1;
            }
        }
        self.quiet_until = Timestamp::MIN;
        Ok(())
    }

    /// How many of the group's instances are not being deleted (`instances` without the
    /// copies: what the simulation's metrics read every step).
    pub(crate) fn not_deleting(&self, index: usize) -> usize {
        self.groups[index].instances.iter().filter(|i| !matches!(i.phase, Phase::Deleting { .. })).count()
    }

    /// The group's instances with their status as the cloud reports them at `now`.
    pub(crate) fn instances(&self, index: usize, now: Timestamp) -> Vec<Instance> {
        self.groups[index]
            .instances
            .iter()
            .map(|instance| {
                let (state, error) = match (&instance.phase, &instance.fate) {
                    (Phase::Creating, Fate::Fails { report_at, error }) if *report_at <= now => {
                        (InstanceState::Creating, Some(error.clone()))
                    }
                    (Phase::Creating, _) => (InstanceState::Creating, None),
                    (Phase::Running, _) => (InstanceState::Running, None),
                    (Phase::Deleting { .. }, _) => (InstanceState::Deleting, None),
                };
                Instance { id: instance.id.clone(), status: Some(InstanceStatus { state, error }) }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cloudprovider::NodeTemplate;
    use proptest::prelude::*;

    fn t(seconds: u64) -> Timestamp {
        later(Timestamp::from_second(1_700_000_000).unwrap(), Duration::from_secs(seconds))
    }

    #[derive(Clone, Debug)]
    enum Op {
        Wait(u64),
        Increase(usize, usize),
        Delete(usize, usize),
        Decrease(usize, i64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..150).prop_map(Op::Wait),
            (0usize..2, 1usize..4).prop_map(|(g, n)| Op::Increase(g, n)),
            (0usize..2, 0usize..8).prop_map(|(g, i)| Op::Delete(g, i)),
            (0usize..2, 1i64..3).prop_map(|(g, n)| Op::Decrease(g, -n)),
        ]
    }

    proptest! {
        /// `settle` skipping the moments before the next transition changes nothing: after
        /// every operation, the same events, instances and targets as a state that walks every
        /// instance at every settle.
        #[test]
        fn settling_only_when_a_transition_is_due_changes_nothing(ops in proptest::collection::vec(op(), 1..60)) {
            let mut specs = vec![MemoryGroupSpec::new("a", 0, 10, NodeTemplate::default()); 2];
            specs[1].id = "b".into();
            specs[0].initial_size = 2;
            specs[1].provisioning_delay = Duration::from_secs(90);
            let mut now = t(0);
            let mut fast = ProviderState::new(&specs, now);
            let mut full = ProviderState::new(&specs, now);
            for state in [&mut fast, &mut full] {
                // Failed launches (stay Creating for good) and instances that never register.
                state.groups[1].faults.stock_outs.push((t(300), t(600)));
                state.groups[0].faults.never_register = 1;
            }
            for op in ops {
                if let Op::Wait(seconds) = op {
                    now = later(now, Duration::from_secs(seconds));
                }
                full.quiet_until = Timestamp::MIN;
                fast.settle(&specs, now);
                full.settle(&specs, now);
                let mut results = Vec::new();
                for state in [&mut fast, &mut full] {
                    let ids = |g: usize| {
                        state.groups[g].instances.iter().map(|i| (format!("n{}", i.id), i.id.clone())).collect::<Vec<_>>()
                    };
                    let result = match &op {
                        Op::Wait(_) => Ok(()),
                        Op::Increase(g, n) => state.increase(&specs, *g, *n, now, Duration::from_secs(30), false),
                        Op::Delete(g, i) => {
                            let nodes: Vec<_> = ids(*g).into_iter().skip(*i).take(2).collect();
                            state.delete(&specs, *g, &nodes, MinSizeCheck::Respect, now, Duration::from_secs(40))
                        }
                        Op::Decrease(g, n) => state.decrease_target(*g, *n, now),
                    };
                    results.push(format!("{result:?}"));
                }
                prop_assert_eq!(&results[0], &results[1]);
                fast.settle(&specs, now);
                full.quiet_until = Timestamp::MIN;
                full.settle(&specs, now);
                prop_assert_eq!(fast.drain_events(), full.drain_events());
                for g in 0..2 {
                    prop_assert_eq!(fast.target(g), full.target(g));
                    prop_assert_eq!(fast.not_deleting(g), full.not_deleting(g));
                    prop_assert_eq!(format!("{:?}", fast.instances(g, now)), format!("{:?}", full.instances(g, now)));
                }
            }
        }
    }
}
