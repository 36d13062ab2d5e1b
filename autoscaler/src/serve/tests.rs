//! Rule-named tests of the metrics, the health check and the address syntax.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::*;
use crate::config::AutoscalingOptions;
use crate::control::registry::InstanceRemoval;
use crate::control::{DeletedNode, LoopReport, RemovalReason, StopReason};
use crate::core::ClusterState;
use crate::core::cluster_state::GroupState;
use crate::core::plan::*;
use crate::ports::Clock;

fn text(metrics: &Metrics) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, metrics.registry())
        .expect("encoding never fails into a String");
    out
}

/// The value of the sample `name` exactly as written (with its labels), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).map(|v| v.parse().unwrap()))
}

fn t0() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().unwrap()
}

fn plus(t: Timestamp, seconds: i64) -> Timestamp {
    t + SignedDuration::from_secs(seconds)
}

fn plan(
    scale_up: ScaleUpResult,
    scale_down_status: ScaleDownStatus,
    unremovable: &[UnremovableReason],
    unneeded: usize,
) -> Plan {
    let unneeded_node = |i: usize| UnneededNode {
        node: format!("u{i}"),
        node_group: "g1".into(),
        utilization: 0.1,
        utilization_detail: UtilizationSummary { cpu: 0.1, memory: 0.05, gpu: 0.0, resource: "cpu".into() },
        pods_to_move: vec![],
        daemon_set_pods: vec![],
        empty: true,
        risky: false,
        unneeded_since: t0().to_string(),
        removable_after: t0().to_string(),
    };
    Plan {
        time: t0().to_string(),
        cluster: ClusterSummary {
            nodes: 5,
            ready_nodes: 4,
            unready_nodes: 1,
            not_started_nodes: 0,
            pods: 20,
            pending_pods: 3,
            scheduler_unprocessed_pods: 0,
            healthy: true,
            node_groups: ["g1", "g2"]
                .iter()
                .map(|id| NodeGroupSummary {
                    id: id.to_string(),
                    min_size: 0,
                    max_size: 10,
                    target_size: 2,
                    ready: 2,
                    upcoming: 0,
                    healthy: true,
                    template: "t".into(),
                })
                .collect(),
        },
        scale_up: ScaleUpPlan::empty(scale_up, "test"),
        scale_down: ScaleDownPlan {
            status: scale_down_status,
            message: String::new(),
            unneeded: (0..unneeded).map(unneeded_node).collect(),
            unremovable: unremovable
                .iter()
                .enumerate()
                .map(|(i, reason)| UnremovableNode {
                    node: format!("n{i}"),
                    node_group: Some("g1".into()),
                    reason: *reason,
                    utilization: None,
                    blocking_pod: None,
                    blocking_reason: None,
                })
                .collect(),
            delete_now: Deletions::default(),
        },
    }
}

fn state() -> ClusterState {
    let mut groups = HashMap::new();
    groups.insert(
        "g1".to_string(),
        GroupState { unregistered: 3, long_unregistered: 1, deletions_in_progress: 2, ..Default::default() },
    );
    groups.insert("g2".to_string(), GroupState { unregistered: 1, ..Default::default() });
    ClusterState { readiness: Default::default(), groups, ready: 4, unready: 1, not_started: 2, healthy: true }
}

fn deleted(node: &str, reason: RemovalReason) -> DeletedNode {
    DeletedNode { node: node.into(), node_group: "g1".into(), reason }
}

fn report(plan: Option<Plan>) -> LoopReport {
    LoopReport {
        time: t0().to_string(),
        plan,
        scale_ups: vec![GroupIncrease {
            node_group: "g1".into(),
            delta: 3,
            current_size: 2,
            new_size: 5,
            max_size: 10,
        }],
        scale_up_failures: vec![("g2".into(), "quota exceeded".into())],
        timed_out: vec![("g2".into(), 2)],
        failed_instances: vec![
            ("g1".into(), "i-1".into(), "OutOfResource".into()),
            ("g1".into(), "i-2".into(), "OutOfResource".into()),
        ],
        removed_instances: vec![("g1".into(), "i-9".into(), InstanceRemoval::Unregistered)],
        deleted: vec![
            deleted("n1", RemovalReason::Empty),
            deleted("n2", RemovalReason::Underutilized),
            deleted("n3", RemovalReason::Underutilized),
        ],
        evicted: vec!["default/p1".into(), "default/p2".into()],
        ..Default::default()
    }
}

#[test]
fn counters_expose_upstream_names_with_a_single_total_suffix() {
    let metrics = Metrics::new();
    metrics.record_loop(&report(None), &state(), Duration::from_secs(1));
    let out = text(&metrics);
    assert_eq!(sample(&out, "cluster_autoscaler_scaled_up_nodes_total"), Some(3.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_scaled_down_nodes_total{reason="underutilized"}"#), Some(2.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_scaled_down_nodes_total{reason="empty"}"#), Some(1.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_evicted_pods_total{eviction_result="succeeded"}"#), Some(2.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_evicted_pods_total{eviction_result="failed"}"#), Some(0.0));
    assert!(!out.contains("_total_total"), "{out}");
}

#[test]
fn failed_scale_ups_count_provider_errors_timeouts_and_each_error_code_once_per_group() {
    let metrics = Metrics::new();
    metrics.record_loop(&report(None), &state(), Duration::from_secs(1));
    let out = text(&metrics);
    assert_eq!(sample(&out, r#"cluster_autoscaler_failed_scale_ups_total{reason="cloudProviderError"}"#), Some(1.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_failed_scale_ups_total{reason="timeout"}"#), Some(1.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_failed_scale_ups_total{reason="OutOfResource"}"#), Some(1.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_failed_scale_ups_total{reason="apiCallError"}"#), Some(0.0));
    // Per node: both failed instances.
    assert_eq!(sample(&out, r#"cluster_autoscaler_failed_node_creations_total{reason="OutOfResource"}"#), Some(2.0));
}

#[test]
fn a_failed_increase_size_or_delete_nodes_does_not_fail_the_loop() {
    // Upstream's RunOnce logs a failed IncreaseSize and goes on to scale-down, returning no error;
    // a failed DeleteNodes is asynchronous and reported by events. Neither counts in errors_total,
    // and the loop is a successful one.
    let metrics = Metrics::new();
    let failed = LoopReport { deletion_failures: vec![("n1".into(), "failed to delete".into())], ..report(None) };
    assert!(!failed.scale_up_failures.is_empty());
    metrics.record_loop(&failed, &state(), Duration::from_secs(1));
    let out = text(&metrics);
    assert_eq!(sample(&out, r#"cluster_autoscaler_errors_total{type="cloudProviderError"}"#), Some(0.0));
    assert_eq!(
        sample(&out, r#"cluster_autoscaler_function_duration_seconds_count{function="mainSuccessful"}"#),
        Some(1.0)
    );
}

#[test]
fn nodes_count_splits_unregistered_from_long_unregistered() {
    let metrics = Metrics::new();
    metrics.record_loop(&report(None), &state(), Duration::from_secs(1));
    let out = text(&metrics);
    for (state, value) in
        [("ready", 4.0), ("unready", 1.0), ("notStarted", 2.0), ("longUnregistered", 1.0), ("unregistered", 3.0)]
    {
        assert_eq!(
            sample(&out, &format!(r#"cluster_autoscaler_nodes_count{{state="{state}"}}"#)),
            Some(value),
            "{state}"
        );
    }
    assert_eq!(sample(&out, "cluster_autoscaler_cluster_safe_to_autoscale"), Some(1.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_node_groups_count{node_group_type="autoscaled"}"#), Some(2.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_node_groups_count{node_group_type="autoprovisioned"}"#), Some(0.0));
    assert_eq!(sample(&out, "cluster_autoscaler_pending_node_deletions"), Some(2.0));
    assert_eq!(sample(&out, "cluster_autoscaler_old_unregistered_nodes_removed_count"), Some(1.0));
}

#[test]
fn unhealthy_cluster_is_not_safe_to_autoscale() {
    let metrics = Metrics::new();
    let mut unhealthy = state();
    unhealthy.healthy = false;
    let stopped =
        LoopReport { stopped: Some(StopReason::ClusterUnhealthy), time: t0().to_string(), ..Default::default() };
    metrics.record_loop(&stopped, &unhealthy, Duration::from_secs(1));
    let out = text(&metrics);
    assert_eq!(sample(&out, "cluster_autoscaler_cluster_safe_to_autoscale"), Some(0.0));
    // The loop stopped before autoscaling: no autoscaling activity is recorded.
    assert!(!out.contains(r#"activity="autoscaling""#), "{out}");
}

#[test]
fn decision_gauges_come_from_the_plan() {
    let metrics = Metrics::new();
    let options = AutoscalingOptions {
        max_nodes_total: 15,
        cores_total: (2, 640),
        memory_total: (0, 1 << 40),
        ..Default::default()
    };
    metrics.set_limits(&options);
    let p = plan(
        ScaleUpResult::Successful,
        ScaleDownStatus::CandidatesPresent,
        &[UnremovableReason::NotUnderutilized, UnremovableReason::NotUnderutilized, UnremovableReason::BlockedByPod],
        2,
    );
    metrics.record_loop(&report(Some(p)), &state(), Duration::from_secs(1));
    let out = text(&metrics);
    assert_eq!(sample(&out, r#"cluster_autoscaler_unschedulable_pods_count{type="unschedulable"}"#), Some(3.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_unschedulable_pods_count{type="scheduler_unprocessed"}"#), Some(0.0));
    // Two groups of max 10, capped by --max-nodes-total 15.
    assert_eq!(sample(&out, "cluster_autoscaler_max_nodes_count"), Some(15.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_cpu_limits_cores{direction="minimum"}"#), Some(2.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_cpu_limits_cores{direction="maximum"}"#), Some(640.0));
    assert_eq!(
        sample(&out, r#"cluster_autoscaler_memory_limits_bytes{direction="maximum"}"#),
        Some((1u64 << 40) as f64)
    );
    assert_eq!(sample(&out, "cluster_autoscaler_unneeded_nodes_count"), Some(2.0));
    assert_eq!(sample(&out, "cluster_autoscaler_scale_down_in_cooldown"), Some(0.0));
    // Upstream's label is the UnremovableReason enum's number: NotUnderutilized = 11, BlockedByPod = 15.
    assert_eq!(sample(&out, r#"cluster_autoscaler_unremovable_nodes_count{reason="11"}"#), Some(2.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_unremovable_nodes_count{reason="15"}"#), Some(1.0));
    let at = t0().as_second() as f64;
    for activity in ["autoscaling", "scaleUp", "scaleDown"] {
        assert_eq!(sample(&out, &format!(r#"cluster_autoscaler_last_activity{{activity="{activity}"}}"#)), Some(at));
    }
}

#[test]
fn max_nodes_count_without_a_total_limit_is_the_sum_of_group_maximums() {
    let metrics = Metrics::new();
    metrics.set_limits(&AutoscalingOptions::default());
    metrics.record_loop(
        &report(Some(plan(ScaleUpResult::NotNeeded, ScaleDownStatus::NoCandidates, &[], 0))),
        &state(),
        Duration::ZERO,
    );
    assert_eq!(sample(&text(&metrics), "cluster_autoscaler_max_nodes_count"), Some(20.0));
}

#[test]
fn scale_down_in_cooldown_sets_the_gauge_and_records_no_scale_down_activity() {
    let metrics = Metrics::new();
    let p = plan(ScaleUpResult::NotNeeded, ScaleDownStatus::InCooldown, &[UnremovableReason::NotUnderutilized], 1);
    metrics.record_loop(&report(Some(p)), &state(), Duration::ZERO);
    let out = text(&metrics);
    assert_eq!(sample(&out, "cluster_autoscaler_scale_down_in_cooldown"), Some(1.0));
    assert_eq!(sample(&out, "cluster_autoscaler_unneeded_nodes_count"), Some(1.0));
    assert!(!out.contains(r#"activity="scaleDown""#), "{out}");
    // Scale-up was not needed: not attempted, no scaleUp activity either.
    assert!(!out.contains(r#"activity="scaleUp""#), "{out}");
    // Upstream counts unremovable nodes only when scale-down ran.
    assert!(!out.contains("cluster_autoscaler_unremovable_nodes_count{"), "{out}");
}

#[test]
fn an_unremovable_reason_that_disappears_goes_back_to_zero() {
    let metrics = Metrics::new();
    let first = plan(ScaleUpResult::NotNeeded, ScaleDownStatus::NoCandidates, &[UnremovableReason::BlockedByPod], 0);
    metrics.record_loop(&report(Some(first)), &state(), Duration::ZERO);
    let second = plan(ScaleUpResult::NotNeeded, ScaleDownStatus::NoCandidates, &[UnremovableReason::NotAutoscaled], 0);
    metrics.record_loop(&report(Some(second)), &state(), Duration::ZERO);
    let out = text(&metrics);
    assert_eq!(sample(&out, r#"cluster_autoscaler_unremovable_nodes_count{reason="15"}"#), Some(0.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_unremovable_nodes_count{reason="3"}"#), Some(1.0));
}

#[test]
fn unremovable_reason_codes_follow_upstream_enum_order() {
    assert_eq!(UnremovableReason::ScaleDownDisabledAnnotation.code(), 1);
    assert_eq!(UnremovableReason::NotUnneededLongEnough.code(), 4);
    assert_eq!(UnremovableReason::NoPlaceToMovePods.code(), 14);
    assert_eq!(UnremovableReason::NoNodeInfo.code(), 17);
    assert_eq!(UnremovableReason::BlockedByOnCompletionPod.code(), 18);
}

#[test]
fn errors_total_starts_at_zero_for_every_upstream_error_type_and_skips_transient_errors() {
    let metrics = Metrics::new();
    metrics.record_loop_error("cloudProviderError", Duration::from_millis(300));
    metrics.record_loop_error(TRANSIENT_ERROR, Duration::from_millis(300));
    let out = text(&metrics);
    assert_eq!(sample(&out, r#"cluster_autoscaler_errors_total{type="cloudProviderError"}"#), Some(1.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_errors_total{type="transientError"}"#), Some(0.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_errors_total{type="apiCallError"}"#), Some(0.0));
    assert_eq!(sample(&out, r#"cluster_autoscaler_function_duration_seconds_count{function="main"}"#), Some(2.0));
    assert!(!out.contains(r#"function="mainSuccessful""#), "a failed loop is not a successful one: {out}");
}

#[test]
fn function_duration_has_150_exponential_buckets_from_a_tenth_of_a_second_to_1800_seconds() {
    let metrics = Metrics::new();
    metrics.observe_duration(Function::ScaleUp, Duration::from_millis(2500));
    let out = text(&metrics);
    let bounds: Vec<f64> = out
        .lines()
        .filter(|l| l.starts_with("cluster_autoscaler_function_duration_seconds_bucket{"))
        .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next())
        .filter(|le| *le != "+Inf")
        .map(|le| le.parse().unwrap())
        .collect();
    assert_eq!(bounds.len(), 150);
    assert!((bounds[0] - 0.1).abs() < 1e-9);
    assert!((bounds[149] - 1800.0).abs() < 1e-6);
    let factor = bounds[1] / bounds[0];
    assert!((factor - 18000f64.powf(1.0 / 149.0)).abs() < 1e-9, "{factor}");
    assert!(out.contains(r#"cluster_autoscaler_function_duration_seconds_sum{function="scaleUp"} 2.5"#), "{out}");
}

#[test]
fn last_activity_is_in_unix_seconds() {
    let metrics = Metrics::new();
    metrics.set_last_activity(Function::Main, t0());
    assert_eq!(sample(&text(&metrics), r#"cluster_autoscaler_last_activity{activity="main"}"#), Some(1714564800.0));
}

fn node(name: &str, cpu: &str, memory: &str, taint_time: Option<Timestamp>) -> Node {
    let mut capacity = std::collections::BTreeMap::new();
    capacity.insert("cpu".to_string(), Quantity(cpu.into()));
    capacity.insert("memory".to_string(), Quantity(memory.into()));
    Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: taint_time.map(|t| {
                vec![Taint {
                    key: simulator::well_known::TO_BE_DELETED_TAINT.into(),
                    value: Some(t.as_second().to_string()),
                    effect: "NoSchedule".into(),
                    time_added: None,
                }]
            }),
            ..Default::default()
        }),
        status: Some(NodeStatus { capacity: Some(capacity), ..Default::default() }),
    }
}

#[test]
fn cluster_resources_round_cores_up_per_node_and_skip_nodes_being_deleted() {
    let nodes = [
        node("a", "3500m", "4Gi", None),
        node("b", "2", "2Gi", None),
        node("deleting", "8", "32Gi", Some(plus(t0(), -60))),
        // Tainted long ago: upstream counts it again.
        node("stale-taint", "1", "1Gi", Some(plus(t0(), -600))),
    ];
    let (cores, memory) = cluster_resources(&nodes, t0());
    assert_eq!(cores, 4 + 2 + 1);
    assert_eq!(memory, (4 + 2 + 1) << 30);
}

#[test]
fn openmetrics_text_converts_to_prometheus_text_with_total_named_counter_families() {
    let metrics = Metrics::new();
    metrics.record_loop(&report(None), &state(), Duration::ZERO);
    let converted = openmetrics_to_prometheus_text(&text(&metrics));
    assert!(converted.contains("# TYPE cluster_autoscaler_scaled_up_nodes_total counter\n"), "{converted}");
    assert!(converted.contains("# HELP cluster_autoscaler_scaled_up_nodes_total Number of nodes added by CA."));
    assert!(converted.contains("# TYPE cluster_autoscaler_nodes_count gauge\n"));
    assert!(converted.contains("# TYPE cluster_autoscaler_function_duration_seconds histogram\n"));
    assert!(converted.contains("cluster_autoscaler_scaled_up_nodes_total 3\n"));
    assert!(!converted.contains("# EOF"));
}

#[derive(Debug)]
struct ManualClock(Mutex<Timestamp>);

#[async_trait]
impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap()
    }
    async fn sleep(&self, _duration: Duration) {}
}

fn health() -> HealthCheck {
    HealthCheck::new(HealthCheckConfig::default(), Arc::new(ManualClock(Mutex::new(t0()))))
}

#[test]
fn health_check_passes_before_monitoring_starts_however_long_nothing_happens() {
    let health = health();
    assert!(health.check(plus(t0(), 24 * 3600)).is_ok());
}

#[test]
fn health_check_before_the_first_success_uses_the_startup_time() {
    let health = health();
    health.start_monitoring(t0());
    // Past both normal limits (10m, 15m) but within --max-startup-time (20m).
    assert!(health.check(plus(t0(), 19 * 60)).is_ok());
    assert!(health.check(plus(t0(), 20 * 60)).is_ok(), "exactly at the limit still passes");
    assert!(health.check(plus(t0(), 20 * 60 + 1)).is_err());
}

#[test]
fn startup_time_is_raised_to_at_least_the_other_limits() {
    let config = HealthCheckConfig {
        max_inactivity: Duration::from_secs(600),
        max_failing_time: Duration::from_secs(1800),
        max_startup_time: Duration::from_secs(60),
    };
    let health = HealthCheck::new(config, Arc::new(ManualClock(Mutex::new(t0()))));
    health.start_monitoring(t0());
    assert!(health.check(plus(t0(), 1800)).is_ok());
    assert!(health.check(plus(t0(), 1801)).is_err());
}

#[test]
fn health_check_fails_when_the_loop_stalls_past_max_inactivity() {
    let health = health();
    health.start_monitoring(t0());
    health.record_activity(plus(t0(), 10));
    health.record_success(plus(t0(), 20));
    assert!(health.check(plus(t0(), 20 + 600)).is_ok());
    let err = health.check(plus(t0(), 20 + 601)).unwrap_err();
    assert_eq!(err.since_activity, Duration::from_secs(601));
    assert_eq!(err.to_string(), "Error: last activity more than 10m1s ago, last success more than 10m1s ago");
}

#[test]
fn health_check_fails_when_loops_keep_failing_past_max_failing_time() {
    let health = health();
    health.start_monitoring(t0());
    health.record_success(plus(t0(), 10));
    // Loops keep running (activity) but fail: no success after t0+10.
    for minute in 1..=16 {
        health.record_activity(plus(t0(), 10 + minute * 60));
    }
    assert!(health.check(plus(t0(), 10 + 15 * 60)).is_ok());
    let err = health.check(plus(t0(), 10 + 15 * 60 + 1)).unwrap_err();
    assert_eq!(err.since_success, Duration::from_secs(15 * 60 + 1));
}

#[test]
fn health_check_recovers_after_a_successful_loop() {
    let health = health();
    health.start_monitoring(t0());
    health.record_success(plus(t0(), 5));
    assert!(health.check(plus(t0(), 5 + 1000)).is_err());
    health.record_success(plus(t0(), 1000));
    assert!(health.check(plus(t0(), 1005)).is_ok());
}

#[test]
fn health_check_times_never_move_backwards() {
    let health = health();
    health.start_monitoring(plus(t0(), 100));
    health.record_success(plus(t0(), 50));
    // The late report of an older success does not rewind the clock of the check.
    assert!(health.check(plus(t0(), 100 + 600)).is_ok());
}

#[test]
fn address_with_empty_host_listens_on_every_interface() {
    assert_eq!(parse_address(":8085").unwrap(), "0.0.0.0:8085".parse().unwrap());
}

#[test]
fn address_accepts_ip_literals_and_bracketed_ipv6() {
    assert_eq!(parse_address("127.0.0.1:9000").unwrap(), "127.0.0.1:9000".parse().unwrap());
    assert_eq!(parse_address("[::1]:9000").unwrap(), "[::1]:9000".parse().unwrap());
    assert!(parse_address("localhost:9000").unwrap().ip().is_loopback());
}

#[test]
fn address_errors_name_the_flag_and_the_problem() {
    for bad in ["8085", ":http", ":70000", "[nope]:80", "::1:80", ""] {
        let err = parse_address(bad).unwrap_err();
        assert!(err.contains("--address"), "{bad}: {err}");
    }
}

fn pod_autoscaler(name: &str, kind: &'static str, from: i32, to: Option<i32>) -> crate::podscaling::AutoscalerReport {
    use crate::podscaling::{AutoscalerReport, Rescale, TargetState};
    use crate::ports::ScaleTarget;
    AutoscalerReport {
        name: name.into(),
        kind,
        target: "Deployment/web".into(),
        current_replicas: from,
        recommended_replicas: to.unwrap_or(from),
        desired_replicas: to.unwrap_or(from),
        metrics: vec![],
        conditions: vec![],
        events: vec![],
        dry_run: false,
        rescale: to.map(|to| Rescale {
            target: TargetState {
                target: ScaleTarget {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    namespace: "default".into(),
                    name: "web".into(),
                },
                spec_replicas: from,
                status_replicas: from,
                selector: None,
                template: None,
            },
            to,
        }),
        hpa_status: None,
        wpa_status: None,
    }
}

#[test]
fn pod_autoscaler_metrics_count_autoscalers_by_kind_and_rescales_by_direction() {
    let metrics = Metrics::new();
    let report = crate::control::PodScalingReport {
        autoscalers: vec![
            pod_autoscaler("default/web", "HorizontalPodAutoscaler", 2, Some(5)),
            pod_autoscaler("default/api", "HorizontalPodAutoscaler", 4, None),
            pod_autoscaler("default/batch", "WatermarkPodAutoscaler", 6, Some(3)),
        ],
        rescaled: vec![
            ("default/web".into(), "Deployment/web".into(), 2, 5),
            ("default/batch".into(), "Deployment/web".into(), 6, 3),
        ],
        anticipated: 0,
        events: vec![],
    };
    metrics.record_pod_autoscaling(&report);
    let out = text(&metrics);
    let count = |kind: &str| sample(&out, &format!(r#"cluster_autoscaler_pod_autoscalers_count{{kind="{kind}"}}"#));
    assert_eq!(count("HorizontalPodAutoscaler"), Some(2.0));
    assert_eq!(count("WatermarkPodAutoscaler"), Some(1.0));
    let rescales = |kind: &str, direction: &str| {
        sample(
            &out,
            &format!(r#"cluster_autoscaler_pod_autoscaler_rescales_total{{kind="{kind}",direction="{direction}"}}"#),
        )
    };
    assert_eq!(rescales("HorizontalPodAutoscaler", "up"), Some(1.0));
    assert_eq!(rescales("WatermarkPodAutoscaler", "down"), Some(1.0));
    assert_eq!(rescales("HorizontalPodAutoscaler", "down"), None);
}
