//! Metric source types, several metrics, and metric failures.

use serde_json::{Value, json};

use super::test_support::*;
use super::{HpaConfig, HpaOutcome, HpaState, ScaleTarget, reconcile_hpa};

fn with_metrics(metrics: Value) -> k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler {
    hpa(json!({"minReplicas": 1, "maxReplicas": 20, "metrics": metrics, "behavior": no_stabilization()}))
}

fn external(name: &str, target: Value) -> Value {
    json!({"type": "External", "external": {"metric": {"name": name}, "target": target}})
}

#[test]
fn pods_metric_average_value() {
    let mut metrics = FakeMetrics::default();
    metrics.set_pods_metric("packets-per-second", &[("p0", 2_000_000), ("p1", 2_000_000), ("p2", 2_000_000)], t(0));
    let hpa = with_metrics(json!([{"type": "Pods", "pods": {"metric": {"name": "packets-per-second"},
        "target": {"type": "AverageValue", "averageValue": "1k"}}}]));
    let d = run(&hpa, 3, &pods(3, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 6);
    let status = d.metrics[0].pods.as_ref().unwrap();
    assert_eq!(status.current.average_value.as_ref().unwrap().0, "2k");
    assert_eq!(d.rescale_reason, "pods metric packets-per-second above target");
}

#[test]
fn object_metric_value_scales_by_ready_pods() {
    let mut metrics = FakeMetrics::default();
    metrics.objects.insert("requests-per-second".into(), 20_000_000);
    let hpa = with_metrics(json!([{"type": "Object", "object": {"metric": {"name": "requests-per-second"},
        "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main-route"},
        "target": {"type": "Value", "value": "10k"}}}]));
    let mut list = pods(3, "1").iter().map(|p| p.to_pod()).collect::<Vec<_>>();
    list.push(with_readiness(pod("p3", "1"), t(-60), "False", t(-60)));
    // Ratio 2 over the 3 ready pods (the unready fourth does not count): 6.
    let d = run(&hpa, 4, &arcs(list), &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 6);
    let status = d.metrics[0].object.as_ref().unwrap();
    assert_eq!(status.current.value.as_ref().unwrap().0, "20k");
    assert_eq!(status.described_object.name, "main-route");
    assert_eq!(d.rescale_reason, "Ingress metric requests-per-second above target");
}

#[test]
fn object_metric_average_value_divides_the_total() {
    let mut metrics = FakeMetrics::default();
    metrics.objects.insert("requests-per-second".into(), 9_500_000);
    let hpa = with_metrics(json!([{"type": "Object", "object": {"metric": {"name": "requests-per-second"},
        "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main-route"},
        "target": {"type": "AverageValue", "averageValue": "1k"}}}]));
    let d = run(&hpa, 3, &pods(3, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 10);
    let status = d.metrics[0].object.as_ref().unwrap();
    assert_eq!(status.current.average_value.as_ref().unwrap().0, "3166667m");
    assert_eq!(d.rescale_reason, "external metric requests-per-second(nil) above target");
}

#[test]
fn external_metric_value_sums_all_series() {
    let mut metrics = FakeMetrics::default();
    metrics.external.insert("queue_messages_ready".into(), vec![40_000, 50_000]);
    let hpa = with_metrics(json!([{"type": "External", "external": {
        "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": "worker_tasks"}}},
        "target": {"type": "Value", "value": "30"}}}]));
    let d = run(&hpa, 2, &pods(2, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 6);
    assert_eq!(d.metrics[0].external.as_ref().unwrap().current.value.as_ref().unwrap().0, "90");
    assert_eq!(
        d.rescale_reason,
        "external metric queue_messages_ready(&LabelSelector{MatchLabels:map[string]string{queue: worker_tasks,},\
         MatchExpressions:[]LabelSelectorRequirement{},}) above target"
    );
}

#[test]
fn external_metric_average_value_is_total_over_target() {
    // 95 queued messages, 10 per pod → 10 replicas, whatever the current count.
    let mut metrics = FakeMetrics::default();
    metrics.external.insert("queue".into(), vec![95_000]);
    let hpa = with_metrics(json!([external("queue", json!({"type": "AverageValue", "averageValue": "10"}))]));
    let d = run(&hpa, 4, &pods(4, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 10);
    assert_eq!(d.metrics[0].external.as_ref().unwrap().current.average_value.as_ref().unwrap().0, "23750m");
    // Within tolerance of the per-pod target nothing changes: 41 over 4 pods of 10.
    metrics.external.insert("queue".into(), vec![41_000]);
    let d = run(&hpa, 4, &pods(4, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 4);
}

#[test]
fn external_value_scales_from_zero_when_min_replicas_is_zero() {
    let mut metrics = FakeMetrics::default();
    metrics.external.insert("queue".into(), vec![45_000]);
    let hpa = hpa(json!({"minReplicas": 0, "maxReplicas": 20, "behavior": no_stabilization(),
        "metrics": [external("queue", json!({"type": "Value", "value": "30"}))]}));
    let d = run(&hpa, 0, &[], &metrics, &mut HpaState::new(), t(0));
    assert_eq!((d.outcome, d.desired_replicas), (HpaOutcome::Computed, 2));
}

#[test]
fn several_metrics_take_the_largest_proposal() {
    let mut metrics = FakeMetrics::cpu(&[("p0", 300), ("p1", 500), ("p2", 700)], t(0));
    metrics.external.insert("queue".into(), vec![70_000]);
    let hpa = with_metrics(json!([
        cpu_utilization(30),
        external("queue", json!({"type": "AverageValue", "averageValue": "10"}))
    ]));
    let d = run(&hpa, 3, &pods(3, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!((d.recommended_replicas, d.desired_replicas), (7, 7));
    assert_eq!(d.metrics.len(), 2);
    assert_eq!(
        condition(&d, "ScalingActive").2,
        "the HPA was able to successfully calculate a replica count from external metric queue(nil)"
    );
}

#[test]
fn invalid_metric_source_type_disables_scaling() {
    let hpa = with_metrics(json!([{"type": "Foo"}]));
    let d = run(&hpa, 3, &pods(3, "1"), &FakeMetrics::default(), &mut HpaState::new(), t(0));
    assert_eq!((d.outcome, d.desired_replicas, d.rescale), (HpaOutcome::MetricsFailed, 3, false));
    assert_eq!(
        condition(&d, "ScalingActive"),
        (
            "False",
            "InvalidMetricSourceType",
            "the HPA was unable to compute the replica count: unknown metric source type \"Foo\""
        )
    );
    assert_eq!(
        d.events[1].message,
        "invalid metrics (1 invalid out of 1), first error is: unknown metric source type \"Foo\""
    );
}

#[test]
fn failed_external_metric_reports_upstream_errors() {
    let hpa = with_metrics(json!([external("queue", json!({"type": "Value", "value": "30"}))]));
    let d = run(&hpa, 3, &pods(3, "1"), &FakeMetrics::default(), &mut HpaState::new(), t(0));
    let cause = "unable to get external metric default/queue/nil: unable to fetch metrics from external metrics API: the server could not find the metric queue";
    assert_eq!(condition(&d, "ScalingActive").1, "FailedGetExternalMetric");
    assert_eq!((d.events[0].reason, d.events[0].message.as_str()), ("FailedGetExternalMetric", cause));
    assert_eq!(
        d.events[1].message,
        format!(
            "invalid metrics (1 invalid out of 1), first error is: failed to get queue external metric value: failed to get external metric queue: {cause}"
        )
    );
}

#[test]
fn partial_metric_failure_blocks_scale_down() {
    // cpu alone would scale 3 → 1, but the external metric failed: upstream refuses.
    let metrics = FakeMetrics::cpu(&[("p0", 100), ("p1", 100), ("p2", 100)], t(0));
    let hpa = with_metrics(json!([cpu_utilization(50), external("queue", json!({"type": "Value", "value": "30"}))]));
    let d = run(&hpa, 3, &pods(3, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!((d.outcome, d.desired_replicas), (HpaOutcome::MetricsFailed, 3));
    assert_eq!(condition(&d, "ScalingActive").1, "FailedGetExternalMetric");
    assert!(d.events.iter().any(|e| e.reason == "FailedComputeMetricsReplicas"
        && e.message.starts_with(
            "invalid metrics (1 invalid out of 2), first error is: failed to get queue external metric value"
        )));
    // The cpu status is still reported, the failed metric's entry is empty.
    assert_eq!(d.metrics[0].type_, "Resource");
    assert_eq!(d.metrics[1].type_, "");
}

#[test]
fn partial_metric_failure_still_allows_scale_up() {
    let metrics = FakeMetrics::cpu(&[("p0", 900), ("p1", 900), ("p2", 900)], t(0));
    let hpa = with_metrics(json!([external("queue", json!({"type": "Value", "value": "30"})), cpu_utilization(50)]));
    let d = run(&hpa, 3, &pods(3, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!((d.outcome, d.desired_replicas), (HpaOutcome::Computed, 6));
    assert_eq!(condition(&d, "ScalingActive").1, "ValidMetricFound");
    // The failed metric still gets its warning event, but no FailedComputeMetricsReplicas.
    assert_eq!(d.events[0].reason, "FailedGetExternalMetric");
    assert!(!d.events.iter().any(|e| e.reason == "FailedComputeMetricsReplicas"));
}

#[test]
fn missing_selector_is_invalid_selector() {
    let scale = ScaleTarget { spec_replicas: 3, status_replicas: 3, selector: None };
    let hpa = with_metrics(json!([cpu_utilization(50)]));
    let d = reconcile_hpa(
        &hpa,
        &scale,
        &pods(3, "1"),
        &FakeMetrics::default(),
        &HpaConfig::default(),
        &mut HpaState::new(),
        t(0),
    );
    assert_eq!(
        condition(&d, "ScalingActive"),
        ("False", "InvalidSelector", "the HPA target's scale is missing a selector")
    );
    assert_eq!(d.events[0].reason, "SelectorRequired");
}

#[test]
fn hpa_without_metrics_defaults_to_80_percent_cpu() {
    let metrics = FakeMetrics::cpu(&[("p0", 900), ("p1", 900)], t(0));
    let hpa = hpa(json!({"maxReplicas": 10, "behavior": no_stabilization()}));
    // 90 % against 80 %: ratio 1.125 → ceil(2.25) = 3.
    let d = run(&hpa, 2, &pods(2, "1"), &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.desired_replicas, 3);
}
