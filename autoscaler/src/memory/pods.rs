//! Pods: the one place where pods are stored, changed and removed (so that every index, the
//! scheduler's snapshot, the controllers and the PDBs hear about it), pod creation from
//! templates, and the kubelet's part: starting pods, finishing them, and letting terminating
//! pods go after their grace period.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cloudprovider::duration::later;
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodSpec, PodStatus, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use simulator::PodInfo;

use super::cluster::{MemoryCluster, Timer, Workload};
use super::config::RUN_DURATION_ANNOTATION;
use super::controllers::{RemovalRank, removal_rank};
use super::store::ObjectKey;
use crate::control::schedule::is_recently_unschedulable;
use cloudprovider::duration::parse_go_duration;

/// What a pod update changed, so that derived data is recomputed only when needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PodChange {
    /// Only `status`.
    Status,
    /// `spec.nodeName` and `status`.
    Bind,
    /// Anything (labels, spec, deletion timestamp): the pod's `PodInfo` is recomputed.
    Spec,
}

pub(super) fn bound_node(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
}

pub(super) fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

pub(super) fn is_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

pub(super) fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Neither finished nor on its way out: what controllers count as one of their replicas.
pub(super) fn is_active(pod: &Pod) -> bool {
    !is_terminal(pod) && !is_terminating(pod)
}

/// One controller's pods (by key), with how many are active and how many of those ready, and
/// the active ones in the order a ReplicaSet removes them, kept as pods are stored and removed:
/// a ReplicaSet's sync follows each status change of its pods, and counting them all again at
/// each (hundreds of pods, each a cache miss) was a twelfth of a simulated day; ranking them all
/// again at each removal, a twentieth.
#[derive(Debug, Default)]
pub(super) struct OwnedPods {
    pods: BTreeMap<ObjectKey, Arc<Pod>>,
    active: usize,
    ready: usize,
    /// The active pods by `removal_rank`, then key (all of one namespace: by name).
    removal_order: BTreeSet<(RemovalRank, ObjectKey)>,
}

impl OwnedPods {
    /// Stores (or replaces) a pod, its old version counted out and the new one in.
    pub(super) fn insert(&mut self, key: ObjectKey, pod: Arc<Pod>) {
        // Out before in: a version ranked as the old one keeps its place.
        if let Some(old) = self.pods.insert(key.clone(), pod.clone()) {
            self.count(&key, &old, false);
        }
        self.count(&key, &pod, true);
    }

    pub(super) fn remove(&mut self, key: &ObjectKey) {
        if let Some(old) = self.pods.remove(key) {
            self.count(key, &old, false);
        }
    }

    fn count(&mut self, key: &ObjectKey, pod: &Pod, add: bool) {
        if !is_active(pod) {
            return;
        }
        let ranked = (removal_rank(pod), key.clone());
        if add {
            self.removal_order.insert(ranked);
        } else {
            self.removal_order.remove(&ranked);
        }
        let ready = usize::from(is_ready(pod));
        // Each pod is counted out only after it was counted in; saturating all the same, as
        // the PDBs' counts: a wrapped count would have its ReplicaSet remove pods.
        if add {
            self.active = self.active.saturating_add(1);
            self.ready = self.ready.saturating_add(ready);
        } else {
            self.active = self.active.saturating_sub(1);
            self.ready = self.ready.saturating_sub(ready);
        }
    }

    /// (active, ready), as `is_active` and `is_ready` count the pods.
    pub(super) fn active_and_ready(&self) -> (usize, usize) {
        debug_assert_eq!(
            (self.active, self.ready),
            self.pods.values().filter(|p| is_active(p)).fold((0, 0), |(a, r), p| (a + 1, r + usize::from(is_ready(p)))),
            "kept counts agree with the pods"
        );
        (self.active, self.ready)
    }

    /// The `count` active pods a ReplicaSet removes first (`controllers::first_to_remove`'s
    /// order), read from the kept order.
    pub(super) fn first_to_remove(&self, count: usize) -> Vec<Arc<Pod>> {
        let first: Vec<Arc<Pod>> =
            self.removal_order.iter().take(count).filter_map(|(_, key)| self.pods.get(key).cloned()).collect();
        debug_assert!(
            first.iter().map(|p| &p.metadata.name).eq(super::controllers::first_to_remove(
                self.pods.values().filter(|p| is_active(p)),
                count
            )
            .iter()
            .map(|p| &p.metadata.name)),
            "the kept removal order agrees with ranking the pods"
        );
        first
    }

    pub(super) fn keys(&self) -> std::collections::btree_map::Keys<'_, ObjectKey, Arc<Pod>> {
        self.pods.keys()
    }

    pub(super) fn values(&self) -> std::collections::btree_map::Values<'_, ObjectKey, Arc<Pod>> {
        self.pods.values()
    }
}

fn condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// Condition `Ready=True`.
pub(super) fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some()
}

/// The pod's `Ready` condition when it is `True` (its transition time: when it last became
/// Ready).
pub(super) fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    condition(pod, "Ready").filter(|c| c.status == "True")
}

pub(super) fn controller_of(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true))
}

pub(super) fn creation(meta: &ObjectMeta) -> Option<Timestamp> {
    meta.creation_timestamp.as_ref().map(|t| t.0)
}

/// Pods the default scheduler is responsible for.
pub(super) fn default_scheduler(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()).is_none_or(|n| n == "default-scheduler")
}

/// Unbound, pending, not terminating and ours to schedule.
pub(super) fn waiting_for_scheduler(pod: &Pod) -> bool {
    bound_node(pod).is_none() && phase(pod) == "Pending" && !is_terminating(pod) && default_scheduler(pod)
}

/// The run duration a pod's annotation asks for; errors name the annotation.
pub(super) fn annotated_run_duration(meta: &ObjectMeta) -> Result<Option<Duration>, String> {
    match meta.annotations.as_ref().and_then(|a| a.get(RUN_DURATION_ANNOTATION)) {
        None => Ok(None),
        Some(text) => parse_go_duration(text)
            .map(Some)
            .map_err(|e| format!("annotation {RUN_DURATION_ANNOTATION}: {text:?} is not a duration: {e}")),
    }
}

/// Sets (or updates) a condition; the transition time moves only when the status changes.
pub(super) fn set_condition(
    status: &mut PodStatus,
    type_: &str,
    value: &str,
    reason: Option<&str>,
    message: Option<String>,
    at: Timestamp,
) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != value {
                c.status = value.to_string();
                c.last_transition_time = Some(Time(at));
            }
            c.reason = reason.map(str::to_string);
            c.message = message;
        }
        None => conditions.push(PodCondition {
            type_: type_.to_string(),
            status: value.to_string(),
            reason: reason.map(str::to_string),
            message,
            last_transition_time: Some(Time(at)),
            ..Default::default()
        }),
    }
}

impl MemoryCluster {
    fn owner_workload(pod: &Pod) -> Option<Workload> {
        let owner = controller_of(pod)?;
        Workload::from_owner(&owner.kind, pod.metadata.namespace.as_deref().unwrap_or("default"), &owner.name)
    }

    /// A pod stored (`new`) over `old`, or removed (`new` None): its controller, and the PDBs
    /// selecting it before or after, look again.
    fn notify_pod_watchers(&mut self, old: Option<&Pod>, new: Option<&Pod>) {
        let Some(pod) = new.or(old) else { return };
        if let Some(workload) = Self::owner_workload(pod) {
            self.mark_dirty(workload);
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        self.pdbs_see_pod(namespace, old, new);
    }

    /// How long a pod runs once started: its annotation, else the Job default for Job pods.
    fn run_duration(&self, pod: &Pod) -> Option<Duration> {
        match annotated_run_duration(&pod.metadata) {
            Ok(Some(duration)) => Some(duration),
            // Admission refuses bad annotations; one slipping through counts as absent.
            Ok(None) | Err(_) => {
                controller_of(pod).filter(|owner| owner.kind == "Job").map(|_| self.config.default_job_run_duration)
            }
        }
    }

    /// Stores a pod (new or changed) and tells everyone who cares.
    pub(super) fn put_pod(&mut self, pod: Pod, change: PodChange) {
        let now = self.now();
        let key = ObjectKey::of(&pod.metadata);
        let old_info = self.pod_infos.get(&key).cloned();
        // A change of binding or status keeps the pod's compiled spec.
        let info = Arc::new(match (change, &old_info) {
            (PodChange::Status | PodChange::Bind, Some(old)) => {
                old.restated(bound_node(&pod), pod.status.as_ref(), &mut self.interner)
            }
            _ => PodInfo::interned_from(&pod, &mut self.interner),
        });
        // What a pod watch would deliver now: the loop's schedule hears of it.
        if is_recently_unschedulable(&info, now) {
            self.unschedulable_pods.record(now, info.created());
        }
        let changed = if crate::core::classify::is_unschedulable(&info) {
            !self.unschedulable.contains(&key) && self.unschedulable.insert(key.clone())
        } else {
            self.unschedulable.remove(&key)
        };
        self.unschedulable_changes += u64::from(changed);
        let pod = Arc::new(pod);
        let old = self.pods.insert(key.clone(), pod.clone());
        self.pod_infos.insert(key.clone(), info.clone());
        self.pods_version = self.pods_version.wrapping_add(1);

        let old_node = old.as_deref().and_then(bound_node);
        let new_node = bound_node(&pod);
        if old_node != new_node {
            if let Some(node) = old_node
                && let Some(keys) = self.pods_by_node.get_mut(node)
            {
                keys.remove(&key);
            }
            if let Some(node) = new_node {
                self.pods_by_node.entry(node.to_string()).or_default().insert(key.clone());
            }
        }
        let old_owner = old.as_deref().and_then(controller_of).map(|o| o.uid.as_str());
        let new_owner = controller_of(&pod).map(|o| o.uid.as_str());
        if old.is_some()
            && old_owner != new_owner
            && let Some(uid) = old_owner
            && let Some(pods) = self.pods_by_owner.get_mut(uid)
        {
            pods.remove(&key);
        }
        if let Some(uid) = new_owner {
            // The index holds the pod itself: replaced at every store.
            if let Some(owned) = self.pods_by_owner.get_mut(uid) {
                owned.insert(key.clone(), pod.clone());
            } else {
                self.pods_by_owner.entry(uid.to_string()).or_default().insert(key.clone(), pod.clone());
            }
        }

        let old_labels = old.as_deref().and_then(|o| o.metadata.labels.as_ref());
        if old_labels != pod.metadata.labels.as_ref() {
            self.pods_by_label.remove(&key, old_labels);
        }
        // The index holds the pod's compact form: replaced at every store.
        self.pods_by_label.store(&key, pod.metadata.labels.as_ref(), &info);

        self.snapshot_pod_changed(&key, old.as_deref(), old_info.as_ref(), &pod, &info, change);

        let uid = || pod.metadata.uid.clone().unwrap_or_default();
        let newly_bound = new_node.is_some() && (old.is_none() || old_node.is_none());
        if newly_bound && phase(&pod) == "Pending" && !is_terminating(&pod) {
            self.add_timer(later(now, self.config.pod_startup_delay), Timer::PodStart(key.clone(), uid()));
        }
        let started = phase(&pod) == "Running" && old.as_deref().is_none_or(|o| phase(o) != "Running");
        if started
            && !is_terminating(&pod)
            && let Some(duration) = self.run_duration(&pod)
        {
            let since = pod.status.as_ref().and_then(|s| s.start_time.as_ref()).map_or(now, |t| t.0);
            self.add_timer(later(since, duration), Timer::PodComplete(key.clone(), uid()));
        }

        let relevant = old.as_deref().is_none_or(|o| {
            phase(o) != phase(&pod)
                || is_ready(o) != is_ready(&pod)
                || is_terminating(o) != is_terminating(&pod)
                || old_node != new_node
                || o.metadata.labels != pod.metadata.labels
                || controller_of(o) != controller_of(&pod)
        });
        if relevant {
            self.notify_pod_watchers(old.as_deref(), Some(&pod));
        }
    }

    /// Removes a pod at once (it is gone from the API).
    pub(super) fn remove_pod(&mut self, key: &ObjectKey) -> Option<Arc<Pod>> {
        let pod = self.pods.remove(key)?;
        self.unschedulable_changes += u64::from(self.unschedulable.remove(key));
        let info = self.pod_infos.remove(key);
        self.pods_version = self.pods_version.wrapping_add(1);
        if let Some(node) = bound_node(&pod)
            && let Some(keys) = self.pods_by_node.get_mut(node)
        {
            keys.remove(key);
        }
        if let Some(owner) = controller_of(&pod)
            && let Some(keys) = self.pods_by_owner.get_mut(&owner.uid)
        {
            keys.remove(key);
        }
        self.pods_by_label.remove(key, pod.metadata.labels.as_ref());
        self.snapshot_pod_removed(key, info.as_ref());
        self.notify_pod_watchers(Some(&pod), None);
        Some(pod)
    }

    /// The pod's own `terminationGracePeriodSeconds`, or the default.
    pub(super) fn grace_of(&self, pod: &Pod) -> Duration {
        pod.spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .map_or(self.config.default_termination_grace, |s| Duration::from_secs(s.max(0) as u64))
    }

    /// Deletes a pod gracefully: unbound or finished pods go at once; a running pod gets its
    /// deletion timestamp (now + grace) and goes when it is reached. A shorter grace shortens
    /// an ongoing termination; a longer one changes nothing.
    pub(super) fn terminate_pod(&mut self, key: &ObjectKey, grace: Duration) {
        let Some(pod) = self.pods.get(key).cloned() else { return };
        if bound_node(&pod).is_none() || is_terminal(&pod) {
            self.remove_pod(key);
            return;
        }
        let gone_at = later(self.now(), grace);
        if let Some(existing) = &pod.metadata.deletion_timestamp
            && existing.0 <= gone_at
        {
            return;
        }
        let mut pod = (*pod).clone();
        pod.metadata.deletion_timestamp = Some(Time(gone_at));
        pod.metadata.deletion_grace_period_seconds = Some(i64::try_from(grace.as_secs()).unwrap_or(i64::MAX));
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        self.put_pod(pod, PodChange::Spec);
        self.add_timer(gone_at, Timer::PodGone(key.clone(), uid));
    }

    /// A free pod name `<base>-<n>`, counting per owner.
    pub(super) fn next_pod_name(&mut self, owner_uid: &str, namespace: &str, base: &str) -> String {
        loop {
            let counter = self.pod_name_counters.entry(owner_uid.to_string()).or_insert(0);
            let name = format!("{base}-{counter}");
            *counter += 1;
            if !self.pods.contains(&ObjectKey::new(namespace, &name)) {
                return name;
            }
        }
    }

    /// Creates the pod `key` from a workload's template, owned by `owner`, Pending.
    pub(super) fn create_pod(
        &mut self,
        key: ObjectKey,
        template: &PodTemplateSpec,
        owner: OwnerReference,
        extra_labels: &[(&str, String)],
        extra_annotations: &[(&str, String)],
        customize: impl FnOnce(&mut PodSpec),
    ) -> ObjectKey {
        let template_meta = template.metadata.clone().unwrap_or_default();
        let mut labels: BTreeMap<String, String> = template_meta.labels.unwrap_or_default();
        labels.extend(extra_labels.iter().map(|(k, v)| (k.to_string(), v.clone())));
        let mut annotations: BTreeMap<String, String> = template_meta.annotations.unwrap_or_default();
        annotations.extend(extra_annotations.iter().map(|(k, v)| (k.to_string(), v.clone())));
        let mut spec = template.spec.clone().unwrap_or_default();
        customize(&mut spec);
        let mut pod = Pod {
            metadata: ObjectMeta {
                name: Some(key.name),
                namespace: Some(key.namespace),
                uid: Some(self.new_uid()),
                creation_timestamp: Some(Time(self.now())),
                labels: Some(labels),
                annotations: (!annotations.is_empty()).then_some(annotations),
                owner_references: Some(vec![owner]),
                ..Default::default()
            },
            spec: Some(spec),
            status: Some(PodStatus { phase: Some("Pending".to_string()), ..Default::default() }),
        };
        // Workload templates were checked on admission; an unknown class leaves the priority unset.
        let _ = self.resolve_priority(&mut pod);
        let key = ObjectKey::of(&pod.metadata);
        self.put_pod(pod, PodChange::Spec);
        key
    }

    /// Admission's priority: `spec.priority` from `priorityClassName` when it is not set.
    pub(super) fn resolve_priority(&self, pod: &mut Pod) -> Result<(), String> {
        let Some(spec) = pod.spec.as_mut() else { return Ok(()) };
        if spec.priority.is_some() {
            return Ok(());
        }
        if let Some(class) = spec.priority_class_name.as_deref().filter(|c| !c.is_empty()) {
            match self.config.priority_classes.get(class) {
                Some(value) => spec.priority = Some(*value),
                None => return Err(format!("no PriorityClass with name {class} was found")),
            }
        }
        Ok(())
    }

    fn pod_with_uid(&self, key: &ObjectKey, uid: &str) -> Option<Arc<Pod>> {
        self.pods.get(key).filter(|p| p.metadata.uid.as_deref().unwrap_or_default() == uid).cloned()
    }

    /// Kubelet: a bound pod starts and becomes Ready.
    pub(super) fn start_pod(&mut self, key: &ObjectKey, uid: &str, at: Timestamp) {
        let Some(pod) = self.pod_with_uid(key, uid) else { return };
        if phase(&pod) != "Pending" || is_terminating(&pod) || bound_node(&pod).is_none() {
            return;
        }
        let mut pod = (*pod).clone();
        let status = pod.status.get_or_insert_with(Default::default);
        status.phase = Some("Running".to_string());
        status.start_time = Some(Time(at));
        for type_ in ["Initialized", "ContainersReady", "Ready"] {
            set_condition(status, type_, "True", None, None, at);
        }
        self.put_pod(pod, PodChange::Status);
    }

    /// Kubelet: a pod with a run duration finished it successfully.
    pub(super) fn complete_pod(&mut self, key: &ObjectKey, uid: &str, at: Timestamp) {
        let Some(pod) = self.pod_with_uid(key, uid) else { return };
        if phase(&pod) != "Running" || is_terminating(&pod) {
            return;
        }
        let mut pod = (*pod).clone();
        let status = pod.status.get_or_insert_with(Default::default);
        status.phase = Some("Succeeded".to_string());
        for type_ in ["ContainersReady", "Ready"] {
            set_condition(status, type_, "False", Some("PodCompleted"), None, at);
        }
        self.put_pod(pod, PodChange::Status);
    }

    /// Kubelet: a terminating pod's grace period is over; it is gone.
    pub(super) fn pod_grace_period_over(&mut self, key: &ObjectKey, uid: &str) {
        if self.pod_with_uid(key, uid).is_some_and(|p| is_terminating(&p)) {
            self.remove_pod(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ready: bool, terminating: bool) -> (ObjectKey, Arc<Pod>) {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.to_string());
        if terminating {
            pod.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        }
        let status = if ready { "True" } else { "False" };
        pod.status = Some(PodStatus {
            phase: Some("Running".to_string()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".to_string(),
                status: status.to_string(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        (ObjectKey::new("default", name), Arc::new(pod))
    }

    #[test]
    fn owned_pods_keep_their_counts_as_pods_change() {
        let mut owned = OwnedPods::default();
        for (name, ready) in [("a", true), ("b", false), ("c", true)] {
            let (key, pod) = pod(name, ready, false);
            owned.insert(key, pod);
        }
        assert_eq!(owned.active_and_ready(), (3, 2));
        // An update replaces the old version's count: b becomes ready, a starts terminating.
        let (key, b) = pod("b", true, false);
        owned.insert(key, b);
        assert_eq!(owned.active_and_ready(), (3, 3));
        let (key, a) = pod("a", true, true);
        owned.insert(key, a);
        assert_eq!(owned.active_and_ready(), (2, 2));
        // Removing a terminating pod changes nothing counted; removing c does; an unknown key nothing.
        owned.remove(&ObjectKey::new("default", "a"));
        owned.remove(&ObjectKey::new("default", "c"));
        owned.remove(&ObjectKey::new("default", "zz"));
        assert_eq!(owned.active_and_ready(), (1, 1));
        assert_eq!(owned.keys().count(), 1);
    }

    /// The kept removal order is the ranking of the active pods, through updates that change a
    /// pod's rank, updates that do not, and removals.
    #[test]
    fn owned_pods_keep_the_order_replicas_are_removed_in() {
        let mut owned = OwnedPods::default();
        for (name, ready) in [("a", true), ("b", false), ("c", true), ("d", false)] {
            let (key, pod) = pod(name, ready, false);
            owned.insert(key, pod);
        }
        let names =
            |pods: Vec<Arc<Pod>>| pods.iter().map(|p| p.metadata.name.clone().unwrap_or_default()).collect::<Vec<_>>();
        // Not Ready first, then by name.
        assert_eq!(names(owned.first_to_remove(3)), ["b", "d", "a"]);
        let (key, b) = pod("b", true, false);
        owned.insert(key.clone(), b.clone());
        owned.insert(key, b);
        assert_eq!(names(owned.first_to_remove(4)), ["d", "a", "b", "c"], "b Ready now, stored twice");
        let (key, a) = pod("a", true, true);
        owned.insert(key, a);
        owned.remove(&ObjectKey::new("default", "d"));
        assert_eq!(names(owned.first_to_remove(10)), ["b", "c"], "a terminating and d gone are not removed again");
        assert!(owned.first_to_remove(0).is_empty());
    }
}
