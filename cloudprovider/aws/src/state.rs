//! What the provider knows between two refreshes, and the pure rules that update it: which
//! ASGs are node groups (static and discovered), their bounds, the instance → ASG index
//! (placeholders included), failed scaling activities, and the instance-type caches.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Instant, SystemTime};

use aws_sdk_autoscaling::types::{Activity, ScalingActivityStatusCode};
use aws_smithy_types::DateTime;

use crate::asg::{Asg, LaunchSource, TemplateRef, placeholder_id};
use crate::config::StaticAsg;
use crate::instance_types::{InstanceType, builtin};

/// One node group: the ASG as last described, with the bounds the autoscaler uses.
#[derive(Clone, Debug)]
pub struct Group {
    pub asg: Asg,
    /// `--nodes` bounds for static groups, the ASG's own for discovered ones.
    pub min: usize,
    pub max: usize,
    /// Named by `--nodes`: kept when it vanishes.
    pub explicit: bool,
    /// When this provider last changed the desired capacity: scaling activities older than
    /// this are about an earlier request.
    pub last_size_change: Option<SystemTime>,
    /// The status message of a failed scaling activity newer than the last size change, while
    /// desired capacity is still unfulfilled: the placeholders cannot be fulfilled.
    pub failed_activity: Option<String>,
}

impl Group {
    /// Placeholder instance ids for the desired capacity no instance backs yet.
    pub fn placeholder_ids(&self) -> impl Iterator<Item = String> + '_ {
        (self.asg.instances.len()..self.asg.desired).map(|i| placeholder_id(&self.asg.name, i))
    }
}

#[derive(Default, Debug)]
pub struct State {
    pub groups: BTreeMap<String, Group>,
    /// When discovery by tags last ran.
    pub discovered_at: Option<Instant>,
    /// Instance id (placeholders too) → ASG name.
    pub instance_index: HashMap<String, String>,
    /// Launch template (at a version) → its instance type, and when that was read.
    pub template_types: HashMap<TemplateRef, (Option<String>, Instant)>,
    /// Launch configuration → its instance type.
    pub configuration_types: HashMap<String, Option<String>>,
    /// Instance types read with DescribeInstanceTypes.
    pub instance_types: HashMap<String, InstanceType>,
    /// Types already asked for (found or not): never asked again.
    pub asked_types: HashSet<String>,
    /// Warnings already logged (each is logged once).
    pub warned: HashSet<String>,
}

impl State {
    /// Takes in one refresh's ASGs. `discovery_round`: the tag query ran, so discovered ASGs
    /// not in `found` no longer match and go. Static ASGs are kept when they vanish (with their
    /// last known state); discovered ones known from an earlier round are kept while
    /// `DescribeAutoScalingGroups` still finds them by name. Returns the names dropped.
    pub fn merge(&mut self, found: Vec<Asg>, discovery_round: bool, statics: &[StaticAsg]) -> Vec<String> {
        let mut previous = std::mem::take(&mut self.groups);
        for asg in found {
            if self.groups.contains_key(&asg.name) {
                continue;
            }
            let before = previous.remove(&asg.name);
            let flag = statics.iter().find(|s| s.name == asg.name);
            let (min, max, explicit) = match flag {
                Some(s) => (s.min, s.max, true),
                None if discovery_round || before.is_some() => (asg.min, asg.max, false),
                None => continue,
            };
            // Someone else changed the desired capacity: earlier failures are about another request.
            let keep_failure = before.as_ref().is_some_and(|b| b.asg.desired == asg.desired);
            let group = Group {
                min,
                max,
                explicit,
                last_size_change: before.as_ref().and_then(|b| b.last_size_change),
                failed_activity: before.and_then(|b| b.failed_activity).filter(|_| keep_failure),
                asg,
            };
            self.groups.insert(group.asg.name.clone(), group);
        }
        let mut dropped = Vec::new();
        for (name, group) in previous {
            if group.explicit {
                self.groups.insert(name, group);
            } else {
                dropped.push(name);
            }
        }
        self.reindex();
        dropped
    }

    /// Rebuilds the instance → ASG index (real instances and placeholders).
    pub fn reindex(&mut self) {
        self.instance_index.clear();
        for (name, group) in &self.groups {
            for instance in &group.asg.instances {
                self.instance_index.insert(instance.id.clone(), name.clone());
            }
            for id in group.placeholder_ids() {
                self.instance_index.insert(id, name.clone());
            }
        }
    }

    /// The instance type name of a group, when its launch source is resolved.
    pub fn type_name_of(&self, asg: &Asg) -> Option<String> {
        let from_template = |t: &TemplateRef| self.template_types.get(t).and_then(|(name, _)| name.clone());
        match &asg.launch {
            LaunchSource::Configuration(name) => self.configuration_types.get(name).cloned().flatten(),
            LaunchSource::Template(template) => from_template(template),
            LaunchSource::Mixed { first_override: Some(name), .. } => Some(name.clone()),
            LaunchSource::Mixed { first_override: None, template: Some(template) } => from_template(template),
            LaunchSource::Mixed { first_override: None, template: None } | LaunchSource::Unknown => None,
        }
    }

    /// The instance type of a group: as described by EC2, else from the built-in table.
    pub fn instance_type_of(&self, asg: &Asg) -> Option<InstanceType> {
        let name = self.type_name_of(asg)?;
        self.instance_types.get(&name).cloned().or_else(|| builtin(&name))
    }

    /// Logs `message` the first time only.
    pub fn warn_once(&mut self, message: String) {
        if self.warned.insert(message.clone()) {
            tracing::warn!("{message}");
        }
    }
}

/// The status message of the first failed activity among `activities` (newest first, as AWS
/// lists them) that started at or after `since`. Without a `since` (this provider has not
/// changed the group's size), only the newest activity counts: older failures are history.
pub fn failed_activity(activities: &[Activity], since: Option<SystemTime>) -> Option<String> {
    let since = since.map(DateTime::from);
    for activity in activities {
        let started = activity.start_time();
        if let (Some(since), Some(started)) = (since, started)
            && started.as_nanos() < since.as_nanos()
        {
            return None;
        }
        if activity.status_code() == Some(&ScalingActivityStatusCode::Failed) {
            let message = activity.status_message().or(activity.description()).unwrap_or("scaling activity failed");
            return Some(message.to_string());
        }
        // Without a size change of ours, only the newest activity counts.
        since?;
    }
    None
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::asg::AsgInstance;

    fn asg(name: &str, desired: usize, instances: usize) -> Asg {
        Asg {
            name: name.into(),
            min: 0,
            max: 10,
            desired,
            zones: vec!["us-east-1a".into()],
            tags: BTreeMap::new(),
            instances: (0..instances)
                .map(|i| AsgInstance {
                    id: format!("i-{name}-{i}"),
                    zone: "us-east-1a".into(),
                    lifecycle: "InService".into(),
                })
                .collect(),
            launch: LaunchSource::Unknown,
        }
    }

    fn statics() -> Vec<StaticAsg> {
        vec![StaticAsg { name: "fixed".into(), min: 1, max: 4 }]
    }

    #[test]
    fn flag_bounds_win_and_discovered_groups_use_their_own() {
        let mut state = State::default();
        state.merge(vec![asg("fixed", 2, 2), asg("found", 1, 1)], true, &statics());
        assert_eq!((state.groups["fixed"].min, state.groups["fixed"].max), (1, 4));
        assert_eq!((state.groups["found"].min, state.groups["found"].max), (0, 10));
    }

    #[test]
    fn vanished_discovered_groups_go_and_static_ones_stay() {
        let mut state = State::default();
        state.merge(vec![asg("fixed", 2, 2), asg("found", 1, 1)], true, &statics());
        // A names round that finds neither.
        let dropped = state.merge(Vec::new(), false, &statics());
        assert_eq!(dropped, ["found"]);
        assert!(state.groups.contains_key("fixed"));
        // A names round cannot add an undiscovered group.
        state.merge(vec![asg("stranger", 1, 1)], false, &statics());
        assert!(!state.groups.contains_key("stranger"));
    }

    #[test]
    fn the_index_covers_instances_and_placeholders() {
        let mut state = State::default();
        state.merge(vec![asg("web", 3, 1)], true, &[]);
        assert_eq!(state.instance_index["i-web-0"], "web");
        assert_eq!(state.instance_index["i-placeholder-web-1"], "web");
        assert_eq!(state.instance_index["i-placeholder-web-2"], "web");
        assert_eq!(state.instance_index.len(), 3);
    }

    fn activity(status: ScalingActivityStatusCode, started: SystemTime, message: &str) -> Activity {
        Activity::builder()
            .activity_id("a")
            .auto_scaling_group_name("web")
            .cause("c")
            .start_time(DateTime::from(started))
            .status_code(status)
            .status_message(message)
            .build()
    }

    #[test]
    fn only_failures_after_the_last_size_change_count() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let later = t0 + Duration::from_secs(60);
        let failed = activity(ScalingActivityStatusCode::Failed, later, "InsufficientInstanceCapacity");
        let old_failure = activity(ScalingActivityStatusCode::Failed, t0 - Duration::from_secs(60), "old");
        let ok = activity(ScalingActivityStatusCode::Successful, later, "");
        assert_eq!(
            failed_activity(std::slice::from_ref(&failed), Some(t0)).as_deref(),
            Some("InsufficientInstanceCapacity")
        );
        assert_eq!(failed_activity(std::slice::from_ref(&old_failure), Some(t0)), None);
        assert_eq!(
            failed_activity(&[ok.clone(), failed.clone()], Some(t0)).as_deref(),
            Some("InsufficientInstanceCapacity")
        );
        assert_eq!(failed_activity(&[ok, old_failure.clone()], None), None, "without a change only the newest counts");
        assert_eq!(failed_activity(&[old_failure], None).as_deref(), Some("old"));
    }
}
