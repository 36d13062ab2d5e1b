//! Jobs: keep up to `parallelism` pods running until `completions` pods succeeded (or, without
//! `completions`, until one pod succeeded and none is left running). Pods run for their
//! run-duration annotation (copied from the Job when its template has none), or the cluster's
//! default for Job pods, then succeed. `suspend` stops every pod. A finished Job with
//! `ttlSecondsAfterFinished` is deleted, with its pods, that long after it finished. Pods here
//! never fail, so `backoffLimit` plays no part.

use std::sync::Arc;
use std::time::Duration;

use cloudprovider::duration::later;
use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::super::cluster::{MemoryCluster, Timer};
use super::super::config::RUN_DURATION_ANNOTATION;
use super::super::objects::ObjectKind;
use super::super::pods::{is_active, is_ready, phase};
use super::super::store::ObjectKey;
use super::{controller_ref, first_to_remove};

pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";

fn count(pods: &[Arc<Pod>], f: impl Fn(&Pod) -> bool) -> i32 {
    i32::try_from(pods.iter().filter(|p| f(p)).count()).unwrap_or(i32::MAX)
}

fn is_finished(status: Option<&JobStatus>) -> bool {
    status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

impl MemoryCluster {
    pub(in crate::memory) fn sync_job(&mut self, key: &ObjectKey) {
        let Some(job) = self.jobs.get(key).cloned() else { return };
        let Some(spec) = job.spec.as_ref() else { return };
        if is_finished(job.status.as_ref()) {
            return;
        }
        let now = self.now();
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let parallelism = spec.parallelism.unwrap_or(1).max(0);
        // The API server defaults completions to 1 when neither field is set.
        let completions = match (spec.completions, spec.parallelism) {
            (None, None) => Some(1),
            (completions, _) => completions,
        };
        let suspended = spec.suspend == Some(true);
        let pods = self.owned_pods(&uid);
        let succeeded = count(&pods, |p| phase(p) == "Succeeded");
        let active: Vec<Arc<Pod>> = pods.iter().filter(|p| is_active(p)).cloned().collect();
        let wanted = if suspended {
            0
        } else {
            match completions {
                Some(c) => parallelism.min((c - succeeded).max(0)),
                None if succeeded > 0 => 0,
                None => parallelism,
            }
        };
        let wanted = usize::try_from(wanted).unwrap_or(0);
        if active.len() < wanted {
            let template = spec.template.clone();
            let owner = controller_ref("batch/v1", "Job", &job.metadata);
            let labels = [
                (JOB_NAME_LABEL, key.name.clone()),
                (LEGACY_JOB_NAME_LABEL, key.name.clone()),
                (CONTROLLER_UID_LABEL, uid.clone()),
                (LEGACY_CONTROLLER_UID_LABEL, uid.clone()),
            ];
            let template_has_duration = template
                .metadata
                .as_ref()
                .and_then(|m| m.annotations.as_ref())
                .is_some_and(|a| a.contains_key(RUN_DURATION_ANNOTATION));
            let job_duration = job.metadata.annotations.as_ref().and_then(|a| a.get(RUN_DURATION_ANNOTATION)).cloned();
            let annotations: Vec<(&str, String)> = match job_duration {
                Some(duration) if !template_has_duration => vec![(RUN_DURATION_ANNOTATION, duration)],
                _ => Vec::new(),
            };
            for _ in active.len()..wanted {
                let name = self.next_pod_name(&uid, &key.namespace, &key.name);
                self.create_pod(
                    ObjectKey::new(&key.namespace, name),
                    &template,
                    owner.clone(),
                    &labels,
                    &annotations,
                    |_| {},
                );
            }
        } else if active.len() > wanted {
            let removed = first_to_remove(&active, active.len() - wanted);
            self.terminate_pods(&removed);
        }

        let pods = self.owned_pods(&uid);
        let active = count(&pods, is_active);
        let complete = match completions {
            Some(c) => succeeded >= c,
            None => succeeded > 0 && active == 0,
        };
        let old = job.status.clone().unwrap_or_default();
        let mut status = JobStatus {
            active: (active > 0).then_some(active),
            succeeded: (succeeded > 0).then_some(succeeded),
            failed: Some(count(&pods, |p| phase(p) == "Failed")).filter(|f| *f > 0),
            ready: Some(count(&pods, |p| is_active(p) && is_ready(p))),
            start_time: old.start_time.clone().or_else(|| (!suspended).then_some(Time(now))),
            ..old.clone()
        };
        if complete {
            status.completion_time = Some(Time(now));
            status.conditions = Some(vec![JobCondition {
                type_: "Complete".to_string(),
                status: "True".to_string(),
                last_probe_time: Some(Time(now)),
                last_transition_time: Some(Time(now)),
                ..Default::default()
            }]);
            if let Some(ttl) = spec.ttl_seconds_after_finished {
                let at = later(now, Duration::from_secs(u64::try_from(ttl).unwrap_or(0)));
                self.add_timer(at, Timer::JobExpire(key.clone(), uid));
            }
        }
        if status != old {
            let mut job = (*job).clone();
            job.status = Some(status);
            self.jobs.insert(key.clone(), Arc::new(job));
        }
    }

    /// `ttlSecondsAfterFinished` has passed: the Job and its pods are deleted.
    pub(in crate::memory) fn expire_job(&mut self, key: &ObjectKey, uid: &str) {
        if self.jobs.get(key).is_some_and(|j| j.metadata.uid.as_deref() == Some(uid)) {
            self.delete(ObjectKind::Job, key);
        }
    }
}
