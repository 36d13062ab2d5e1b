//! The replica calculator: usage ratio, tolerance, readiness, missing metrics, requests.

use serde_json::json;

use super::test_support::*;
use super::{HpaConfig, HpaOutcome, HpaState, reconcile_hpa};

fn cpu_hpa(target: i32) -> k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler {
    hpa(
        json!({"minReplicas": 1, "maxReplicas": 100, "metrics": [cpu_utilization(target)], "behavior": no_stabilization()}),
    )
}

#[test]
fn desired_is_ceil_of_ratio_times_ready_pods() {
    // Upstream's TestReplicaCalcScaleUp: 1500m used of 3 × 1 cpu = 50 % against 30 %.
    let pods = pods(3, "1");
    let metrics = FakeMetrics::cpu(&[("p0", 300), ("p1", 500), ("p2", 700)], t(0));
    let d = run(&cpu_hpa(30), 3, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 5);
    assert_eq!(d.desired_replicas, 5);
    let resource = d.metrics[0].resource.as_ref().unwrap();
    assert_eq!(resource.current.average_utilization, Some(50));
    assert_eq!(resource.current.average_value.as_ref().unwrap().0, "500m");
    assert_eq!(
        d.events[0].message,
        "New size: 5; reason: cpu resource utilization (percentage of request) above target"
    );
}

#[test]
fn docs_example_doubling_and_halving() {
    // "200m current for 100m desired doubles the replicas; 50m halves them."
    let pods = pods(4, "1");
    let double = FakeMetrics::cpu(&[("p0", 200), ("p1", 200), ("p2", 200), ("p3", 200)], t(0));
    let d = run(&cpu_hpa(10), 4, &pods, &double, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 8);
    let half = FakeMetrics::cpu(&[("p0", 50), ("p1", 50), ("p2", 50), ("p3", 50)], t(0));
    let d = run(&cpu_hpa(10), 4, &pods, &half, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 2);
}

#[test]
fn ratio_within_tolerance_keeps_current_replicas() {
    // 55 % against 50 % is a ratio of exactly 1.1: the band is inclusive.
    let pods = pods(4, "1");
    let metrics = FakeMetrics::cpu(&[("p0", 550), ("p1", 550), ("p2", 550), ("p3", 550)], t(0));
    let d = run(&cpu_hpa(50), 4, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 4);
    assert!(!d.rescale);
    // 56 % is outside: ceil(1.12 × 4) = 5.
    let metrics = FakeMetrics::cpu(&[("p0", 560), ("p1", 560), ("p2", 560), ("p3", 560)], t(0));
    let d = run(&cpu_hpa(50), 4, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 5);
}

#[test]
fn per_direction_tolerances_override_the_flag() {
    // 54 % against 50 %: inside the default 10 %, outside a 5 % scale-up tolerance.
    let pods = pods(10, "1");
    let usages: Vec<(String, i64)> = (0..10).map(|i| (format!("p{i}"), 540)).collect();
    let usages: Vec<(&str, i64)> = usages.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let metrics = FakeMetrics::cpu(&usages, t(0));
    let d = run(&cpu_hpa(50), 10, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 10);
    let tight = hpa(json!({"maxReplicas": 100, "metrics": [cpu_utilization(50)], "behavior": {
        "scaleUp": {"tolerance": "0.05"}, "scaleDown": {"stabilizationWindowSeconds": 0, "tolerance": "0.5"}}}));
    let d = run(&tight, 10, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 11);
    // The scale-down tolerance of 50 % holds 30 % against 50 % (ratio 0.6) in place.
    let low = FakeMetrics::cpu(&usages.iter().map(|(n, _)| (*n, 300)).collect::<Vec<_>>(), t(0));
    let d = run(&tight, 10, &pods, &low, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 10);
    // The controller-wide tolerance applies when the HPA sets none.
    let config = HpaConfig { tolerance: 0.05, ..HpaConfig::default() };
    let d = reconcile_hpa(&cpu_hpa(50), &target(10), &pods, &metrics, &config, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 11);
}

#[test]
fn utilization_is_truncated_to_integer_percent() {
    // 5090m of 10 cpu is 50.9 %, counted as 50 %: 50/25 × 10 = 20 exactly (not 21).
    let pods = pods(10, "1");
    let usages: Vec<(String, i64)> = (0..10).map(|i| (format!("p{i}"), 509)).collect();
    let usages: Vec<(&str, i64)> = usages.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let d = run(&cpu_hpa(25), 10, &pods, &FakeMetrics::cpu(&usages, t(0)), &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 20);
    assert_eq!(d.metrics[0].resource.as_ref().unwrap().current.average_utilization, Some(50));
}

#[test]
fn missing_metrics_count_as_zero_on_scale_up_and_cannot_flip_direction() {
    // Three pods at 53 % against 50 % would scale up, but with the fourth counted at 0 % the
    // ratio drops to 0.8: the direction flips, so nothing changes.
    let pods = pods(4, "1");
    let metrics = FakeMetrics::cpu(&[("p0", 400), ("p1", 500), ("p2", 700)], t(0));
    let d = run(&cpu_hpa(50), 4, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 4);
    // A clear scale-up still happens, with the missing pod at 0 %: 2700/4000 = 67 % → ceil(1.34 × 4).
    let metrics = FakeMetrics::cpu(&[("p0", 900), ("p1", 900), ("p2", 900)], t(0));
    let d = run(&cpu_hpa(50), 4, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 6);
}

#[test]
fn missing_metrics_count_as_full_request_on_scale_down() {
    // 10 % on three pods; the fourth counts as 100 %: 1300/4000 = 32 % → ceil(0.64 × 4) = 3.
    let pods = pods(4, "1");
    let metrics = FakeMetrics::cpu(&[("p0", 100), ("p1", 100), ("p2", 100)], t(0));
    let d = run(&cpu_hpa(50), 4, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 3);
}

#[test]
fn missing_metrics_on_scale_down_use_the_target_when_above_100_percent() {
    // Target 200 %: the missing pod counts at 200 % of its request.
    let pods = pods(4, "1");
    let metrics = FakeMetrics::cpu(&[("p0", 100), ("p1", 100), ("p2", 100)], t(0));
    // (300 + 2000) / 4000 = 57 % → 57/200 × 4 = 1.14 → 2.
    let d = run(&cpu_hpa(200), 4, &pods, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 2);
}

#[test]
fn unready_pods_count_as_zero_on_scale_up() {
    // Upstream's TestReplicaCalcScaleUpUnreadyLessScale: one pod not ready yet.
    let mut list = vec![with_readiness(pod("p0", "1"), t(-60), "False", t(-60))];
    list.extend([pod("p1", "1"), pod("p2", "1")]);
    let metrics = FakeMetrics::cpu(&[("p0", 300), ("p1", 500), ("p2", 700)], t(0));
    let d = run(&cpu_hpa(30), 3, &arcs(list), &metrics, &mut HpaState::new(), t(0));
    // Ready pods: 1200/2000 = 60 %; with the unready one at 0 %: 40 % → ceil(1.33 × 3) = 4.
    assert_eq!(d.recommended_replicas, 4);
    assert_eq!(d.metrics[0].resource.as_ref().unwrap().current.average_utilization, Some(60));
}

#[test]
fn unready_pods_are_ignored_on_scale_down() {
    let mut list = vec![with_readiness(pod("p0", "1"), t(-60), "False", t(-60))];
    list.extend([pod("p1", "1"), pod("p2", "1")]);
    let metrics = FakeMetrics::cpu(&[("p0", 900), ("p1", 100), ("p2", 100)], t(0));
    // Only the ready pods count: 10 % against 50 % → ceil(0.2 × 2) = 1.
    let d = run(&cpu_hpa(50), 3, &arcs(list), &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 1);
}

#[test]
fn cpu_sample_taken_before_a_full_window_after_readiness_is_unready() {
    // Started 1 min ago (inside the 5 min cpu initialization period), ready for 20 s: its 30 s
    // sample still covers the start-up burst and is not used for a scale-down.
    let fresh = with_readiness(pod("p0", "1"), t(-60), "True", t(-20));
    let list = arcs(vec![fresh, pod("p1", "1")]);
    let metrics = FakeMetrics::cpu(&[("p0", 100), ("p1", 100)], t(0));
    let d = run(&cpu_hpa(50), 2, &list, &metrics, &mut HpaState::new(), t(0));
    // Scale-down ignores it: 10 % → ceil(0.2 × 1) = 1.
    assert_eq!(d.recommended_replicas, 1);
    // Ready 40 s ago: a full window has passed, the sample counts.
    let settled = with_readiness(pod("p0", "1"), t(-60), "True", t(-40));
    let list = arcs(vec![settled, pod("p1", "1")]);
    let metrics = FakeMetrics::cpu(&[("p0", 900), ("p1", 900)], t(0));
    let d = run(&cpu_hpa(50), 2, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 4);
}

#[test]
fn pod_past_initialization_is_unready_only_if_never_ready() {
    // Started 10 min ago and unready: if it turned unready within the 30 s initial readiness
    // delay of its start, it has never been ready and is skipped; if it turned unready later,
    // it was ready once and its metric counts.
    let never = with_readiness(pod("p0", "1"), t(-600), "False", t(-590));
    let list = arcs(vec![never, pod("p1", "1")]);
    let metrics = FakeMetrics::cpu(&[("p0", 900), ("p1", 100)], t(0));
    let d = run(&cpu_hpa(50), 2, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 1, "never-ready pod ignored on scale-down");
    let once = with_readiness(pod("p0", "1"), t(-600), "False", t(-100));
    let list = arcs(vec![once, pod("p1", "1")]);
    let d = run(&cpu_hpa(50), 2, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 2, "500m of 2 cpu is exactly on target");
}

#[test]
fn readiness_rules_apply_to_cpu_only() {
    // The same never-ready pod counts for a memory metric.
    let never = with_readiness(pod("p0", "1"), t(-60), "False", t(-60));
    let list = arcs(vec![never, pod("p1", "1")]);
    let mut metrics = FakeMetrics::default();
    metrics.set_resource("memory", &[("p0", 900 * 1024 * 1024 * 1000), ("p1", 100 * 1024 * 1024 * 1000)], t(0));
    let memory = hpa(json!({"maxReplicas": 10, "behavior": no_stabilization(), "metrics": [
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}]}));
    let d = run(&memory, 2, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 2);
    assert_eq!(d.metrics[0].resource.as_ref().unwrap().current.average_value.as_ref().unwrap().0, "524288k");
}

#[test]
fn deleted_and_failed_pods_are_ignored_and_pending_pods_are_unready() {
    let list = arcs(vec![
        deleted(pod("gone", "1")),
        with_phase(pod("crashed", "1"), "Failed"),
        with_phase(pod("starting", "1"), "Pending"),
        pod("p0", "1"),
        pod("p1", "1"),
    ]);
    let metrics = FakeMetrics::cpu(&[("gone", 1000), ("crashed", 1000), ("p0", 100), ("p1", 100)], t(0));
    // Only p0 and p1 count: 10 % against 50 % → 1.
    let d = run(&cpu_hpa(50), 5, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 1);
    // On scale-up the pending pod counts as 0 %: (900+900+0)/3000 = 60 % → ceil(1.2 × 3) = 4.
    let metrics = FakeMetrics::cpu(&[("p0", 900), ("p1", 900)], t(0));
    let d = run(&cpu_hpa(50), 3, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 4);
}

#[test]
fn recount_below_current_on_scale_up_keeps_current_replicas() {
    // Same pods with the target at 5 replicas: the recount proposes 4, fewer than the current
    // 5 although the ratio says "up", so upstream keeps 5.
    let list = arcs(vec![with_phase(pod("starting", "1"), "Pending"), pod("p0", "1"), pod("p1", "1")]);
    let metrics = FakeMetrics::cpu(&[("p0", 900), ("p1", 900)], t(0));
    let d = run(&cpu_hpa(50), 5, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 5);
}

#[test]
fn missing_request_fails_the_utilization_metric() {
    let mut no_request = pod("p1", "1");
    no_request.spec.as_mut().unwrap().containers[0].resources = None;
    let list = arcs(vec![pod("p0", "1"), no_request]);
    let metrics = FakeMetrics::cpu(&[("p0", 100), ("p1", 100)], t(0));
    let d = run(&cpu_hpa(50), 2, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.outcome, HpaOutcome::MetricsFailed);
    assert!(!d.rescale);
    let (status, reason, message) = condition(&d, "ScalingActive");
    assert_eq!((status, reason), ("False", "FailedGetResourceMetric"));
    assert_eq!(
        message,
        "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container main of Pod p1"
    );
    assert_eq!(d.events[0].reason, "FailedGetResourceMetric");
    assert_eq!(d.events[1].reason, "FailedComputeMetricsReplicas");
    assert_eq!(
        d.events[1].message,
        "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: missing request for cpu in container main of Pod p1"
    );
}

#[test]
fn no_metrics_for_ready_pods_is_an_error() {
    let list = arcs(vec![with_phase(pod("p0", "1"), "Pending")]);
    let metrics = FakeMetrics::cpu(&[("p0", 100)], t(0));
    let d = run(&cpu_hpa(50), 1, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.outcome, HpaOutcome::MetricsFailed);
    assert_eq!(
        condition(&d, "ScalingActive").2,
        "the HPA was unable to compute the replica count: failed to get cpu utilization: did not receive metrics for targeted pods (pods might be unready)"
    );
}

#[test]
fn container_resource_uses_one_container_and_its_request() {
    let mut two = pod("p0", "1");
    let mut sidecar = two.spec.as_ref().unwrap().containers[0].clone();
    sidecar.name = "sidecar".into();
    two.spec.as_mut().unwrap().containers.push(sidecar);
    let list = arcs(vec![two]);
    let mut metrics = FakeMetrics::default();
    metrics.resources.insert(
        "cpu".into(),
        [(
            "p0".to_string(),
            super::PodResourceMetric {
                containers: vec![
                    super::ContainerUsage { name: "main".into(), value: Some(900) },
                    super::ContainerUsage { name: "sidecar".into(), value: Some(100) },
                ],
                timestamp: t(0),
                window: std::time::Duration::from_secs(30),
            },
        )]
        .into_iter()
        .collect(),
    );
    let container = hpa(
        json!({"maxReplicas": 10, "behavior": no_stabilization(), "metrics": [{"type": "ContainerResource",
        "containerResource": {"name": "cpu", "container": "main", "target": {"type": "Utilization", "averageUtilization": 45}}}]}),
    );
    // main: 900m of 1 cpu = 90 % against 45 % → 2 (the pod as a whole is at 50 %).
    let d = run(&container, 1, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(d.recommended_replicas, 2);
    let status = d.metrics[0].container_resource.as_ref().unwrap();
    assert_eq!((status.container.as_str(), status.current.average_utilization), ("main", Some(90)));
    assert_eq!(
        condition(&d, "ScalingActive").2,
        "the HPA was able to successfully calculate a replica count from cpu container resource utilization (percentage of request)"
    );
}

#[test]
fn container_resource_skips_pods_whose_metrics_lack_the_container() {
    // As current kube-controller-manager: p1's metrics lack `main` (it restarted), so p1 counts
    // as a pod without metrics instead of failing the whole HPA. p0 alone is at 90 % of 45 %;
    // with p1 assumed idle for a scale-up the average is 45 %: no change.
    let list = arcs(vec![pod("p0", "1"), pod("p1", "1")]);
    let usage = |containers: Vec<super::ContainerUsage>| super::PodResourceMetric {
        containers,
        timestamp: t(0),
        window: std::time::Duration::from_secs(30),
    };
    let mut metrics = FakeMetrics::default();
    metrics.resources.insert(
        "cpu".into(),
        [
            ("p0".to_string(), usage(vec![super::ContainerUsage { name: "main".into(), value: Some(900) }])),
            ("p1".to_string(), usage(vec![super::ContainerUsage { name: "sidecar".into(), value: Some(100) }])),
        ]
        .into_iter()
        .collect(),
    );
    let container = hpa(
        json!({"maxReplicas": 10, "behavior": no_stabilization(), "metrics": [{"type": "ContainerResource",
        "containerResource": {"name": "cpu", "container": "main", "target": {"type": "Utilization", "averageUtilization": 45}}}]}),
    );
    let d = run(&container, 2, &list, &metrics, &mut HpaState::new(), t(0));
    assert_eq!(condition(&d, "ScalingActive").0, "True", "{:?}", condition(&d, "ScalingActive"));
    assert_eq!(d.recommended_replicas, 2);
}
