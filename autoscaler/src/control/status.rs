//! The status ConfigMap (`kube-system/cluster-autoscaler-status`), in upstream's YAML shape:
//! cluster-wide and per-group health, scale-up and scale-down conditions, each with its last
//! probe and last transition time.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use crate::core::CloudState;
use crate::core::cluster_state::ClusterState;
use crate::core::plan::{Plan, ScaleDownStatus, ScaleUpResult};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Unready {
    total: usize,
    resource_unready: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Registered {
    total: usize,
    ready: usize,
    not_started: usize,
    being_deleted: usize,
    unready: Unready,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeCounts {
    registered: Registered,
    long_unregistered: usize,
    unregistered: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Health {
    status: &'static str,
    node_counts: NodeCounts,
    #[serde(skip_serializing_if = "Option::is_none")]
    cloud_provider_target: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_size: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_size: Option<usize>,
    last_probe_time: String,
    last_transition_time: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BackoffInfo {
    error_code: String,
    error_message: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScaleUpCondition {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    backoff_info: Option<BackoffInfo>,
    last_probe_time: String,
    last_transition_time: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScaleDownCondition {
    status: ScaleDownStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    candidates: Option<usize>,
    last_probe_time: String,
    last_transition_time: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClusterWide {
    health: Health,
    scale_up: ScaleUpCondition,
    scale_down: ScaleDownCondition,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupStatus {
    name: String,
    health: Health,
    scale_up: ScaleUpCondition,
    scale_down: ScaleDownCondition,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    time: String,
    autoscaler_status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    cluster_wide: ClusterWide,
    node_groups: Vec<GroupStatus>,
}

/// Go's `time.Time.String()` layout, which upstream uses for `time` and the last-updated
/// annotation: `2006-01-02 15:04:05.999999999 -0700 MST`.
pub fn go_time(t: Timestamp) -> String {
    let nanos = t.subsec_nanosecond();
    let frac = if nanos == 0 {
        String::new()
    } else {
        let s = format!(".{nanos:09}");
        s.trim_end_matches('0').to_string()
    };
    format!("{}{} +0000 UTC", t.strftime("%Y-%m-%d %H:%M:%S"), frac)
}

/// Remembers when each condition last changed, across loops.
#[derive(Debug, Default)]
pub struct StatusWriter {
    transitions: BTreeMap<String, (&'static str, Timestamp)>,
}

impl StatusWriter {
    fn transition(&mut self, key: String, status: &'static str, now: Timestamp) -> String {
        let entry = self.transitions.entry(key).or_insert((status, now));
        if entry.0 != status {
            *entry = (status, now);
        }
        entry.1.to_string()
    }

    /// The YAML for `data.status`.
    pub fn render(
        &mut self,
        plan: Option<&Plan>,
        state: &ClusterState,
        cloud: &CloudState,
        deleting: &BTreeMap<String, usize>,
        now: Timestamp,
    ) -> String {
        let probe = now.to_string();
        let counts =
            |ready: usize, unready: usize, not_started: usize, deleting: usize, long: usize, unregistered: usize| {
                NodeCounts {
                    registered: Registered {
                        total: ready + unready + not_started,
                        ready,
                        not_started,
                        being_deleted: deleting,
                        unready: Unready { total: unready, resource_unready: 0 },
                    },
                    long_unregistered: long,
                    unregistered,
                }
            };
        let total_deleting: usize = deleting.values().sum();
        let (long_total, unregistered_total) =
            state.groups.values().fold((0, 0), |(l, u), g| (l + g.long_unregistered, u + g.unregistered));
        let health_status = if state.healthy { "Healthy" } else { "Unhealthy" };
        let scale_up_status = match plan.map(|p| p.scale_up.result) {
            Some(ScaleUpResult::Successful) => "InProgress",
            _ if state.groups.values().any(|g| g.scale_up_in_progress) => "InProgress",
            _ => "NoActivity",
        };
        let unneeded_by_group: BTreeMap<&str, usize> = plan
            .map(|p| {
                let mut m = BTreeMap::new();
                for n in &p.scale_down.unneeded {
                    *m.entry(n.node_group.as_str()).or_insert(0) += 1;
                }
                m
            })
            .unwrap_or_default();
        let total_candidates: usize = unneeded_by_group.values().sum();
        let scale_down_status = candidates_status(total_candidates);
        let cluster_wide = ClusterWide {
            health: Health {
                status: health_status,
                node_counts: counts(
                    state.ready,
                    state.unready,
                    state.not_started,
                    total_deleting,
                    long_total,
                    unregistered_total,
                ),
                cloud_provider_target: None,
                min_size: None,
                max_size: None,
                last_probe_time: probe.clone(),
                last_transition_time: self.transition("cluster/health".into(), health_status, now),
            },
            scale_up: ScaleUpCondition {
                status: scale_up_status,
                backoff_info: None,
                last_probe_time: probe.clone(),
                last_transition_time: self.transition("cluster/scaleUp".into(), scale_up_status, now),
            },
            scale_down: ScaleDownCondition {
                status: scale_down_status,
                candidates: Some(total_candidates),
                last_probe_time: probe.clone(),
                last_transition_time: self.transition("cluster/scaleDown".into(), scale_down_status.as_str(), now),
            },
        };
        let mut node_groups = Vec::new();
        for g in &cloud.groups {
            let gs = state.group(&g.id).cloned().unwrap_or_default();
            let health = if gs.healthy { "Healthy" } else { "Unhealthy" };
            let (up, backoff_info) = match &gs.backoff {
                Some(b) => (
                    "Backoff",
                    Some(BackoffInfo { error_code: b.error_code.clone(), error_message: b.error_message.clone() }),
                ),
                None if gs.scale_up_in_progress => ("InProgress", None),
                None if !gs.healthy => ("Unhealthy", None),
                None => ("NoActivity", None),
            };
            let candidates = unneeded_by_group.get(g.id.as_str()).copied().unwrap_or(0);
            let down = candidates_status(candidates);
            node_groups.push(GroupStatus {
                name: g.id.clone(),
                health: Health {
                    status: health,
                    node_counts: counts(
                        gs.ready,
                        gs.unready,
                        gs.not_started,
                        deleting.get(&g.id).copied().unwrap_or(0),
                        gs.long_unregistered,
                        gs.unregistered,
                    ),
                    cloud_provider_target: Some(g.target_size),
                    min_size: Some(g.min_size),
                    max_size: Some(g.max_size),
                    last_probe_time: probe.clone(),
                    last_transition_time: self.transition(format!("{}/health", g.id), health, now),
                },
                scale_up: ScaleUpCondition {
                    status: up,
                    backoff_info,
                    last_probe_time: probe.clone(),
                    last_transition_time: self.transition(format!("{}/scaleUp", g.id), up, now),
                },
                scale_down: ScaleDownCondition {
                    status: down,
                    candidates: Some(candidates),
                    last_probe_time: probe.clone(),
                    last_transition_time: self.transition(format!("{}/scaleDown", g.id), down.as_str(), now),
                },
            });
        }
        let status =
            Status { time: go_time(now), autoscaler_status: "Running", message: None, cluster_wide, node_groups };
        serde_saphyr::to_string(&status).unwrap_or_else(|e| format!("autoscalerStatus: Running\nmessage: {e}\n"))
    }
}

/// The status ConfigMap's scale-down condition: upstream writes only whether there are
/// candidates (cooldown and a disabled scale-down show as `NoCandidates` there too).
fn candidates_status(candidates: usize) -> ScaleDownStatus {
    if candidates > 0 { ScaleDownStatus::CandidatesPresent } else { ScaleDownStatus::NoCandidates }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_time_layout() {
        let t: Timestamp = "2026-11-21T12:00:05.120Z".parse().unwrap();
        assert_eq!(go_time(t), "2026-11-21 12:00:05.12 +0000 UTC");
        let t: Timestamp = "2026-11-21T12:00:05Z".parse().unwrap();
        assert_eq!(go_time(t), "2026-11-21 12:00:05 +0000 UTC");
    }
}
